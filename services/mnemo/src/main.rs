//! `mnemo`: the command line. Thin on purpose: parse the
//! command line, set up telemetry, load settings, run. Errors exit 1,
//! except for `verify-erasure`, whose 1 means "found": its errors exit 2.

mod model;
mod status;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use mnemo_auth::{MintRequest, Minter, Scope};
use mnemo_config::{Overrides, Settings};
use mnemo_domain::{SubjectId, TenantId};
use mnemo_telemetry::TelemetryConfig;
use secrecy::{ExposeSecret, SecretString};

/// See [`mnemo_app::allocator`].
#[global_allocator]
static ALLOCATOR: mnemo_app::Allocator = mnemo_app::Allocator;

#[derive(Parser)]
#[command(name = "mnemo", version, about = "Long-term memory for LLM agents")]
struct Cli {
    /// A TOML config file (default: mnemo.toml in the data dir, when present).
    #[arg(long, env = "MNEMO_CONFIG", global = true)]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the embedded server: ingest, consolidator, retriever and forgetter in one process.
    Serve {
        /// Where the database and keys live [env: MNEMO_DATA_DIR] [default: ./mnemo-data]
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// HOST:PORT to listen on [env: MNEMO_LISTEN] [default: 127.0.0.1:8080]
        #[arg(long)]
        listen: Option<String>,
    },
    /// Mint a development token signed with the data dir's dev secret; prints only the token.
    Token {
        #[arg(long)]
        data_dir: Option<PathBuf>,
        #[arg(long)]
        tenant: String,
        /// Bind the token to one subject.
        #[arg(long)]
        subject: Option<String>,
        /// Scopes (repeat or space-separate), or `all`.
        #[arg(long = "scope", num_args = 1.., required = true)]
        scopes: Vec<String>,
        /// The actor recorded on every event the token causes.
        #[arg(long, default_value = "dev")]
        actor: String,
        /// Lifetime in seconds.
        #[arg(long, default_value_t = 86_400)]
        ttl_seconds: u64,
    },
    /// Measure performance and print figures.
    Bench {
        #[command(subcommand)]
        what: BenchCommand,
    },
    /// Evaluate retrieval (against a running server) or consolidation (in process).
    Eval {
        #[command(subcommand)]
        what: EvalCommand,
    },
    /// Score every memory by its tenant's forgetting policy; archive and
    /// expire what fell below the thresholds (or only list it).
    Forget {
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// List the decisions and why, change nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Give the embedded database's free pages back to the file system,
    /// with the server stopped: deletes the bus records every consumer
    /// group has committed, then rewrites mnemo.db without its free pages
    /// (needs free disk for a copy of the live pages).
    Compact {
        #[arg(long)]
        data_dir: Option<PathBuf>,
    },
    /// Build the vector collection of the configured embedder by replaying
    /// the event log (after a model change, or to compact); a running server
    /// keeps serving its collection and switches at its next start.
    Reindex {
        #[arg(long)]
        data_dir: Option<PathBuf>,
    },
    /// Check that a data subject left nothing readable at rest: a live data
    /// key, events or bus records that still open, projection rows, vector
    /// points and, with --canary, plaintext bytes in the data dir and in
    /// PostgreSQL. Exit 0: nothing found; 1: something found; 2: a usage or
    /// configuration error, or a check that could not run.
    VerifyErasure {
        #[arg(long)]
        data_dir: Option<PathBuf>,
        #[arg(long)]
        subject: String,
        /// Only this tenant [default: every tenant the subject is found in].
        #[arg(long)]
        tenant: Option<String>,
        /// A text known to be in the subject's content (repeat; at least 4
        /// bytes). Matched ignoring ASCII case; reported by index, never printed.
        #[arg(long = "canary")]
        canaries: Vec<String>,
        /// PostgreSQL's data directory, when the server is local and
        /// readable: its files are byte-scanned for the canaries too.
        #[arg(long)]
        pg_data_dir: Option<PathBuf>,
        /// The report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// The local embedding model.
    Model {
        #[command(subcommand)]
        what: model::ModelCommand,
    },
    /// Development helpers.
    Dev {
        #[command(subcommand)]
        what: DevCommand,
    },
    /// Serve mnemo's tools to an MCP client over stdio (Claude Desktop,
    /// Claude Code, Cursor, ...; the client starts this command). Every tool
    /// calls the mnemo server at --url with the token in MNEMO_TOKEN
    /// (required), so that token's tenant, subject and scopes apply. stdout
    /// carries the protocol; logs go to stderr. See docs/mcp.md.
    Mcp {
        /// The mnemo server's base URL.
        #[arg(long, env = "MNEMO_URL", default_value = "http://127.0.0.1:8080")]
        url: String,
    },
    /// What a running process's /readyz says, for an operator: ready or
    /// degraded (and why), the embedder, relay and consumer lag, and the
    /// consolidation backlog. Exit 0: ready; 1: degraded; 2: no answer.
    Status {
        /// The process's base URL.
        #[arg(long, env = "MNEMO_URL", default_value = "http://127.0.0.1:8080")]
        url: String,
    },
    /// Create or upgrade the database schema (SQLite in the data dir, or
    /// PostgreSQL as MNEMO_DATABASE_OWNER_URL when MNEMO_DATABASE_URL is set), then exit.
    Migrate {
        #[arg(long)]
        data_dir: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
enum EvalCommand {
    /// LoCoMo recall@k: ingest each turn, query each question, score provenance.
    Locomo {
        /// `memories`: one memory per turn (POST …/memories), the retrieval
        /// engine alone. `messages`: the conversation path users take
        /// (POST …/messages, consolidation, episodes), with time to
        /// searchable and recall within a 1000-token context.
        #[arg(long, default_value = "memories", value_parser = ["memories", "messages"])]
        via: String,
        /// locomo JSON (e.g. ../shared/data/locomo-dev/locomo-dev.json).
        file: PathBuf,
        #[arg(long, default_value = "http://127.0.0.1:8080")]
        url: String,
        /// A token with memories:write and memories:read.
        #[arg(long, env = "MNEMO_TOKEN")]
        token: String,
        /// hybrid, semantic, keyword (repeat), or all.
        #[arg(long = "mode", num_args = 1.., default_values_t = [String::from("all")])]
        modes: Vec<String>,
        #[arg(long, default_value = "locomo")]
        subject_prefix: String,
        /// Reuse the subjects of an earlier run instead of ingesting again.
        #[arg(long)]
        skip_ingest: bool,
    },
    /// Replay conversations through consolidation in process (the LLM of
    /// MNEMO_LLM_*, or the rules): memories, cost, routing, duplicates and
    /// recall@k over the consolidated memories.
    Consolidation {
        /// locomo JSON (e.g. ../shared/data/locomo-dev/locomo-dev.json).
        file: PathBuf,
        /// Where to keep the run's data [default: a temporary dir, removed after].
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// Only the first N conversations.
        #[arg(long)]
        limit: Option<usize>,
        #[arg(long, default_value = "locomo")]
        subject_prefix: String,
    },
}

#[derive(Subcommand)]
enum DevCommand {
    /// Host a Kafka (librdkafka's in-memory mock cluster) on a fixed local
    /// port with mnemo's topics, for the scale-out services in development.
    Kafka {
        #[arg(long, default_value_t = 9092)]
        port: u16,
        #[arg(long, default_value_t = 6)]
        partitions: i32,
    },
    /// Serve a deterministic OpenAI-compatible chat-completions mock on a
    /// local port, answering the consolidator's prompts (no model needed).
    Llm {
        #[arg(long, default_value_t = 18099)]
        port: u16,
    },
}

#[derive(Subcommand)]
enum BenchCommand {
    /// Messages/s through POST /v1/subjects/{subject}/messages over HTTP.
    Ingest {
        /// A running server; default: an embedded one on a temporary data dir.
        #[arg(long, requires = "token")]
        url: Option<String>,
        /// A token with memories:write for --url.
        #[arg(long)]
        token: Option<String>,
        #[arg(long, default_value_t = 20_000)]
        messages: usize,
        /// Batch sizes to measure, one round each.
        #[arg(long = "batch", num_args = 1.., default_values_t = [1usize, 10, 100])]
        batches: Vec<usize>,
        #[arg(long, default_value_t = 8)]
        concurrency: usize,
        #[arg(long, default_value_t = 16)]
        subjects: usize,
    },
    /// A load test of the whole pipeline, rerunnable: writer clients post
    /// conversations for --seconds while search clients query and a probe
    /// times how long a posted message takes to be searchable; /readyz is
    /// sampled every second. Prints accepted and consolidated msg/s, the
    /// searchable lag, search p50/p99 under load, errors, RSS and, after
    /// the load, the time until the backlog is zero. See docs/performance.md.
    Pipeline {
        /// A running server; default: an embedded one on a temporary data
        /// dir, with the settings of the environment (embedder, LLM,
        /// policies) except the shared stores.
        #[arg(long, requires = "token")]
        url: Option<String>,
        /// A token with memories:write and memories:read for --url.
        #[arg(long, env = "MNEMO_TOKEN", hide_env_values = true)]
        token: Option<String>,
        /// With --url: the server's process id, to read its RSS from /proc.
        #[arg(long, requires = "url")]
        pid: Option<u32>,
        /// Writer clients, each posting to its own subjects.
        #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..=256))]
        clients: u64,
        /// How long the load runs.
        #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=3600))]
        seconds: u64,
        /// Messages per request (a session's last request may hold fewer).
        #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=100))]
        batch: u64,
        /// Subjects per writer client.
        #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=1000))]
        subjects: u64,
        /// Clients searching continuously during the load (0: none).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(0..=64))]
        search_concurrency: u64,
        /// Memories posted to one subject before the load (POST …/memories),
        /// which every other search then queries.
        #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
        memories: u64,
        /// Seconds to wait after the load for the backlog to be zero (and,
        /// with --memories, for the preload to be searchable).
        #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..=3600))]
        drain_timeout: u64,
    },
    /// How long until what a client wrote is found by search: --memories
    /// written one request at a time (the last one searched from its
    /// acknowledgement until found), and --messages posted in batches by
    /// --clients (until every episode and consolidated memory is
    /// searchable), on an embedded server whose embedder is an
    /// OpenAI-compatible server on loopback (feature hashing, so the model
    /// costs nothing), the in-process lexical one or the local model. See
    /// docs/performance.md.
    Searchable {
        /// Memories written sequentially to one subject (0: skip).
        #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
        memories: u64,
        /// Messages posted in batches (0: skip).
        #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(0..=10_000_000))]
        messages: u64,
        /// Writer clients for the messages, each with its own subject.
        #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..=256))]
        clients: u64,
        /// Messages per request.
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=100))]
        batch: u64,
        /// `loopback` (an OpenAI-compatible server started by the run),
        /// `lexical` (in process) or `local` (the local model in process,
        /// found as `mnemo serve` finds it: `MNEMO_EMBED_MODEL_DIR`, the
        /// model cache).
        #[arg(long, default_value = "loopback", value_parser = ["loopback", "lexical", "local"])]
        embedder: String,
        /// The posted messages' text: `repeated` (six sentences in turn, the
        /// figures of docs/performance.md) or `varied` (words drawn from a
        /// 5,000-word vocabulary with the frequencies of natural text).
        #[arg(long, default_value = "repeated", value_parser = ["repeated", "varied"])]
        text: String,
        /// First measure the parts' ceiling on the same messages (`bench
        /// parts`, in this process, on a data dir of its own), then print
        /// the pipeline's rate and CPU per message as a share of it.
        /// Needs `--embedder lexical`, the embedder the parts use.
        #[arg(long)]
        ceiling: bool,
    },
    /// Search latency p50/p99 at several memory counts, with and without the
    /// embedder, against the raw qdrant-edge query time on the same data.
    ///
    /// With --episodes N: also one subject with a conversation of N
    /// messages (episodes, sealed in the log and in the index) beside
    /// --memories memories, and the ratio of its p50s over those of the
    /// memory-only subject with N memories, in the same run, e.g.
    /// `mnemo bench search --episodes 10000 --memories 1000`.
    Search {
        /// Memory counts to measure, memories only [default: 10000 100000;
        /// with --episodes N: N]
        #[arg(long = "size", num_args = 1..)]
        sizes: Vec<usize>,
        #[arg(long, default_value_t = 200)]
        queries: usize,
        /// Messages of one subject's conversation, each an episode.
        #[arg(long)]
        episodes: Option<usize>,
        /// Memories of that subject beside its episodes [default: 1000].
        #[arg(long, requires = "episodes")]
        memories: Option<usize>,
    },
    /// Texts/s through the local embedding model for each way of running it
    /// (exact or tanh GELU, one or several workers), on a LoCoMo file's
    /// turns sent as the episode projection sends them, and how far each
    /// moves the vectors from the first, e.g.
    /// `mnemo bench embed --file locomo-dev.json --model-dir DIR`.
    Embed {
        /// A LoCoMo-format JSON file whose turns are embedded.
        #[arg(long)]
        file: PathBuf,
        /// A sentence-transformers model directory (`mnemo model fetch`
        /// prints where the default one is).
        #[arg(long)]
        model_dir: PathBuf,
        /// The model's name (names the embedding space only).
        #[arg(long, default_value = mnemo_embed::DEFAULT_LOCAL_MODEL)]
        model: String,
        #[arg(long, default_value_t = 640)]
        texts: usize,
        #[arg(long, default_value_t = 3)]
        rounds: usize,
    },
    /// What the work every posted message causes costs, stage by stage
    /// (the sealed log's append, the episode projection's indexing, rules
    /// consolidation, the memory projection), one after the other with
    /// nothing else running: the ceiling of `bench searchable`.
    Parts {
        #[arg(long, default_value_t = 100_000)]
        messages: usize,
        /// Messages per append.
        #[arg(long, default_value_t = 100)]
        batch: usize,
        /// Conversations the messages are spread over.
        #[arg(long, default_value_t = 8)]
        subjects: usize,
        /// The appended messages' text, as `bench searchable --text`.
        #[arg(long, default_value = "varied", value_parser = ["repeated", "varied"])]
        text: String,
    },
    /// What finding and resolving a message's date phrases costs (the
    /// scan every episode and every message the rules read goes through).
    Dates {
        #[arg(long, default_value_t = 10_000)]
        texts: usize,
        #[arg(long, default_value_t = 7)]
        rounds: usize,
    },
    /// Median latency of the as-of reads and the changes read for one
    /// subject with many memory events (creates, revisions, archives).
    Asof {
        #[arg(long, default_value_t = 10_000)]
        events: usize,
        /// Timed requests per read.
        #[arg(long, default_value_t = 20)]
        queries: usize,
    },
}

fn settings(
    config: &Option<PathBuf>,
    data_dir: Option<PathBuf>,
    listen: Option<String>,
) -> anyhow::Result<Settings> {
    mnemo_config::load(&Overrides {
        config_file: config.clone(),
        data_dir,
        listen,
    })
    .context("invalid configuration")
}

fn parse_scopes(raw: &[String]) -> anyhow::Result<Vec<Scope>> {
    let mut scopes = Vec::new();
    for name in raw.iter().flat_map(|r| r.split_whitespace()) {
        if name == "all" {
            scopes.extend(Scope::ALL);
            continue;
        }
        let scope = Scope::parse(name).with_context(|| {
            let known: Vec<_> = Scope::ALL.iter().map(|s| s.as_str()).collect();
            format!("unknown scope {name}; known: {} or all", known.join(", "))
        })?;
        scopes.push(scope);
    }
    Ok(scopes)
}

fn init_telemetry(settings: &Settings) -> anyhow::Result<mnemo_telemetry::TelemetryGuard> {
    mnemo_telemetry::init(&TelemetryConfig {
        service_name: "mnemo".to_owned(),
        log_format: settings.telemetry.log_format,
        log_filter: settings.telemetry.log_filter.clone(),
        otlp_endpoint: settings.telemetry.otlp_endpoint.clone(),
    })
    .context("cannot set up telemetry")
}

fn main() -> ExitCode {
    mnemo_app::allocator::configure();
    let cli = Cli::parse();
    if let Command::Status { url } = &cli.command {
        let runtime = match tokio::runtime::Runtime::new() {
            Ok(runtime) => runtime,
            Err(error) => {
                eprintln!("Error: {error}");
                return ExitCode::from(2);
            }
        };
        return match runtime.block_on(status::run(url)) {
            Ok(code) => ExitCode::from(code),
            Err(error) => {
                eprintln!("Error: {error:?}");
                ExitCode::from(2)
            }
        };
    }
    if let Command::VerifyErasure { .. } = cli.command {
        // Its own exit codes: 1 is "found", so every error is 2.
        return match verify_erasure(cli) {
            Ok(code) => ExitCode::from(code),
            Err(error) => {
                eprintln!("Error: {error:?}");
                ExitCode::from(2)
            }
        };
    }
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("Error: {error:?}");
            ExitCode::FAILURE
        }
    }
}

fn verify_erasure(cli: Cli) -> anyhow::Result<u8> {
    let Command::VerifyErasure {
        data_dir,
        subject,
        tenant,
        canaries,
        pg_data_dir,
        json,
    } = cli.command
    else {
        unreachable!("called for verify-erasure only");
    };
    let settings = settings(&cli.config, data_dir, None)?;
    let _telemetry = init_telemetry(&settings)?;
    let options = mnemo_app::verify_erasure::VerifyOptions {
        subject: SubjectId::parse(subject).context("invalid --subject")?,
        tenant: tenant
            .map(TenantId::parse)
            .transpose()
            .context("invalid --tenant")?,
        canaries,
        pg_data_dir,
    };
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(mnemo_app::verify_erasure::run(&settings, &options, json))
}

fn run(cli: Cli) -> anyhow::Result<()> {
    // Built by the command that needs one: `serve` builds its own (see
    // mnemo_app::runtime) and `token` none.
    let runtime = || {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
    };
    let config = cli.config;
    match cli.command {
        Command::Serve { data_dir, listen } => {
            let settings = settings(&config, data_dir, listen)?.keep_models_in_data_dir();
            let _telemetry = init_telemetry(&settings)?;
            // Its threads run the background work below the request threads.
            mnemo_app::runtime::build(settings.background_nice)?.block_on(serve(settings))
        }
        Command::Token {
            data_dir,
            tenant,
            subject,
            scopes,
            actor,
            ttl_seconds,
        } => {
            let settings = settings(&config, data_dir, None)?;
            let token = mint_token(&settings, tenant, subject, &scopes, actor, ttl_seconds)?;
            println!("{token}");
            Ok(())
        }
        Command::Bench { what } => runtime()?.block_on(bench(what)),
        Command::Eval { what } => runtime()?.block_on(eval(config, what)),
        Command::Forget { data_dir, dry_run } => {
            let settings = settings(&config, data_dir, None)?;
            let _telemetry = init_telemetry(&settings)?;
            runtime()?.block_on(mnemo_app::forget::run(&settings, dry_run))
        }
        Command::Compact { data_dir } => {
            let settings = settings(&config, data_dir, None)?;
            let compacted = runtime()?.block_on(mnemo_app::compact::run(&settings))?;
            println!("{compacted}");
            Ok(())
        }
        Command::Reindex { data_dir } => {
            let settings = settings(&config, data_dir, None)?.keep_models_in_data_dir();
            let _telemetry = init_telemetry(&settings)?;
            runtime()?.block_on(mnemo_app::reindex::run(&settings))
        }
        Command::Model { what } => runtime()?.block_on(model::run(&config, what)),
        Command::Dev {
            what: DevCommand::Kafka { port, partitions },
        } => runtime()?.block_on(mnemo_lab::dev_kafka::run(port, partitions)),
        Command::Dev {
            what: DevCommand::Llm { port },
        } => runtime()?.block_on(mnemo_lab::dev_llm::run(port)),
        Command::Mcp { url } => {
            let _telemetry = mnemo_telemetry::init(&TelemetryConfig {
                service_name: "mnemo-mcp".to_owned(),
                // A client keeps a stdio server's stderr as its log: the
                // SDK's line per message would drown what matters.
                log_filter: "warn,mnemo_mcp=info".to_owned(),
                ..TelemetryConfig::default()
            })
            .context("cannot set up telemetry")?;
            let api = mnemo_mcp::ApiClient::new(&url)?;
            runtime()?.block_on(mnemo_mcp::serve_stdio(api, mcp_token()?))?;
            Ok(())
        }
        Command::Migrate { data_dir } => {
            let settings = settings(&config, data_dir, None)?;
            let _telemetry = init_telemetry(&settings)?;
            runtime()?.block_on(migrate(&settings))
        }
        Command::VerifyErasure { .. } => unreachable!("main runs verify-erasure itself"),
        Command::Status { .. } => unreachable!("main runs status itself"),
    }
}

async fn serve(settings: Settings) -> anyhow::Result<()> {
    let app = mnemo_app::Application::build(settings.clone()).await?;
    tracing::info!(data_dir = %settings.data_dir.display(), port = app.port(), "mnemo is listening on {}:{}", settings.listen.ip(), app.port());
    app.run().await
}

/// A development token signed with the configured HS256 secret, or the
/// data dir's dev secret when none is configured.
fn mint_token(
    settings: &Settings,
    tenant: String,
    subject: Option<String>,
    scopes: &[String],
    actor: String,
    ttl_seconds: u64,
) -> anyhow::Result<String> {
    let secret = match &settings.auth.hs256_secret {
        Some(secret) => secret.expose_secret().as_bytes().to_vec(),
        None => mnemo_app::secrets::load_or_create_dev_secret(&settings.dev_secret_file())?.0,
    };
    let minter = Minter::hs256(&secret, &settings.auth.issuer, &settings.auth.audience);
    Ok(minter.mint(&MintRequest {
        tenant: TenantId::parse(tenant).context("invalid --tenant")?,
        actor,
        scopes: parse_scopes(scopes)?,
        subject: subject
            .map(SubjectId::parse)
            .transpose()
            .context("invalid --subject")?,
        ttl: Duration::from_secs(ttl_seconds),
    })?)
}

/// The token `mnemo mcp` calls the API with. Only from the environment
/// (the client's config sets it), so it stays out of process listings and
/// shell history.
fn mcp_token() -> anyhow::Result<SecretString> {
    match std::env::var("MNEMO_TOKEN") {
        Ok(token) if !token.trim().is_empty() => Ok(SecretString::from(token.trim().to_owned())),
        _ => anyhow::bail!(
            "MNEMO_TOKEN is not set: set it to a mnemo token for the tenant, e.g. \
             the output of `mnemo token --tenant acme --scope memories:read memories:write`"
        ),
    }
}

async fn bench(what: BenchCommand) -> anyhow::Result<()> {
    match what {
        BenchCommand::Ingest {
            url,
            token,
            messages,
            batches,
            concurrency,
            subjects,
        } => {
            anyhow::ensure!(
                messages > 0 && concurrency > 0 && subjects > 0 && batches.iter().all(|b| *b > 0),
                "counts must be positive"
            );
            mnemo_lab::bench::ingest(
                mnemo_lab::bench::IngestBench {
                    url,
                    token,
                    messages,
                    batch: 1,
                    concurrency,
                    subjects,
                    round: 0,
                },
                &batches,
            )
            .await
        }
        BenchCommand::Pipeline {
            url,
            token,
            pid,
            clients,
            seconds,
            batch,
            subjects,
            search_concurrency,
            memories,
            drain_timeout,
        } => {
            // The ranges are clap's; these fit a usize on any target mnemo builds for.
            let count = |value: u64| usize::try_from(value).context("count too large");
            mnemo_lab::bench_pipeline::pipeline(mnemo_lab::bench_pipeline::PipelineBench {
                url,
                token,
                pid,
                clients: count(clients)?,
                seconds,
                batch: count(batch)?,
                subjects: count(subjects)?,
                search_concurrency: count(search_concurrency)?,
                memories: count(memories)?,
                drain_timeout: Duration::from_secs(drain_timeout),
            })
            .await
        }
        BenchCommand::Searchable {
            memories,
            messages,
            clients,
            batch,
            embedder,
            text,
            ceiling,
        } => {
            let count = |value: u64| usize::try_from(value).context("count too large");
            mnemo_lab::bench_searchable::searchable(mnemo_lab::bench_searchable::SearchableBench {
                varied_text: text == "varied",
                ceiling,
                memories: count(memories)?,
                messages: count(messages)?,
                clients: count(clients)?,
                batch: count(batch)?,
                embedder: match embedder.as_str() {
                    "lexical" => mnemo_lab::bench_searchable::BenchEmbedder::Lexical,
                    "local" => mnemo_lab::bench_searchable::BenchEmbedder::Local,
                    _ => mnemo_lab::bench_searchable::BenchEmbedder::Loopback,
                },
            })
            .await
        }
        BenchCommand::Search {
            sizes,
            queries,
            episodes,
            memories,
        } => {
            let mix = episodes.map(|episodes| mnemo_lab::bench_search::Mix {
                episodes,
                memories: memories.unwrap_or(1_000),
            });
            let sizes = match (sizes.is_empty(), episodes) {
                (false, _) => sizes,
                // The memory-only subject the episodes are compared with.
                (true, Some(episodes)) => vec![episodes],
                (true, None) => vec![10_000, 100_000],
            };
            mnemo_lab::bench_search::search(mnemo_lab::bench_search::SearchBenchArgs {
                sizes,
                queries,
                mix,
            })
            .await
        }
        BenchCommand::Embed {
            file,
            model_dir,
            model,
            texts,
            rounds,
        } => tokio::task::spawn_blocking(move || {
            mnemo_lab::bench_embed::embed(mnemo_lab::bench_embed::EmbedBenchArgs {
                model_dir,
                model_id: model,
                file,
                texts,
                rounds,
            })
        })
        .await
        .context("the embed bench panicked")?,
        BenchCommand::Parts {
            messages,
            batch,
            subjects,
            text,
        } => {
            mnemo_lab::bench_parts::parts(mnemo_lab::bench_parts::PartsBenchArgs {
                messages,
                batch,
                subjects,
                varied_text: text == "varied",
            })
            .await
        }
        BenchCommand::Dates { texts, rounds } => {
            mnemo_lab::bench_dates::dates(mnemo_lab::bench_dates::DatesBenchArgs { texts, rounds })
        }
        BenchCommand::Asof { events, queries } => {
            mnemo_lab::bench_asof::asof(mnemo_lab::bench_asof::AsOfBenchArgs { events, queries })
                .await
        }
    }
}

async fn eval(config: Option<PathBuf>, what: EvalCommand) -> anyhow::Result<()> {
    match what {
        EvalCommand::Locomo {
            via,
            file,
            url,
            token,
            subject_prefix,
            skip_ingest,
            ..
        } if via == "messages" => {
            mnemo_lab::eval_messages::via_messages(mnemo_lab::eval_messages::ViaMessagesArgs {
                file,
                url,
                token,
                subject_prefix,
                skip_ingest,
            })
            .await
        }
        EvalCommand::Locomo {
            file,
            url,
            token,
            modes,
            subject_prefix,
            skip_ingest,
            ..
        } => {
            mnemo_lab::eval::locomo(mnemo_lab::eval::LocomoArgs {
                file,
                url,
                token,
                modes,
                subject_prefix,
                skip_ingest,
            })
            .await
        }
        EvalCommand::Consolidation {
            file,
            data_dir,
            limit,
            subject_prefix,
        } => {
            mnemo_lab::eval_consolidation::consolidation(
                config,
                mnemo_lab::eval_consolidation::ConsolidationArgs {
                    file,
                    data_dir,
                    limit,
                    subject_prefix,
                },
            )
            .await
        }
    }
}

/// The schema: PostgreSQL as the schema owner when a database is
/// configured, else the data dir's SQLite file.
async fn migrate(settings: &Settings) -> anyhow::Result<()> {
    match &settings.database {
        Some(database) => {
            let owner = database.owner_url.as_ref().context(
                "set MNEMO_DATABASE_OWNER_URL: migrations run as the schema owner, \
                 not as the application role",
            )?;
            mnemo_pg::migrate(owner.expose_secret())
                .await
                .context("PostgreSQL migration failed")?;
            tracing::info!("PostgreSQL schema is up to date");
        }
        None => {
            std::fs::create_dir_all(&settings.data_dir)?;
            mnemo_event_store::sqlite::connect(&settings.database_file()).await?;
            tracing::info!(database = %settings.database_file().display(), "database is up to date");
        }
    }
    Ok(())
}
