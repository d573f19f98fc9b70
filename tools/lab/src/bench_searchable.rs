//! `mnemo bench searchable`: how long until what a client wrote is found by
//! search, on an embedded server (a temporary data dir in this process),
//! the way a client sees it.
//!
//! Two parts, each optional, and a comparison:
//! 1. **Memories, one request at a time** (`--memories N`): N memories are
//!    written sequentially to one subject through `POST …/memories`; the
//!    last carries a word no other has, and the run searches for it (hybrid,
//!    the API's defaults) from its acknowledgement until it is found.
//!    Prints the write rate and how long after its acknowledgement the last
//!    memory was found.
//! 2. **Messages in batches** (`--messages M`): `--clients` writers post M
//!    messages in batches of `--batch` to subjects of their own, then ask
//!    for consolidation; the run waits until `/readyz` shows nothing behind
//!    (relay, every consumer group, the consolidation buffer), so every
//!    message is a searchable episode and every memory consolidated from
//!    them is projected. Prints the accept rate and the items (messages plus
//!    the memories consolidation stored) made searchable per second, from
//!    the first post, and the process's CPU time per item over the same
//!    span: the figure to compare builds by on a shared machine, where the
//!    rate moves with what else runs and the CPU an item costs moves less;
//!    and how many cores that CPU kept busy, which falls below the core
//!    count when the run waits on the disk instead. The end of that span
//!    is when the marked last message was found and a backlog reading
//!    taken after the last post showed nothing behind, timed when the
//!    server took the reading (`/readyz`'s `age_ms`), not when the run
//!    asked: the server reuses a reading for up to a second.
//! 3. **Against the ceiling** (`--ceiling`, with `--embedder lexical`):
//!    before the server starts, the four stages of `mnemo bench parts`
//!    run alone on the same messages ([`bench_parts::measure`]); after
//!    the messages part, the pipeline's messages searchable per second
//!    and CPU per message are printed beside the stages' ceiling on this
//!    machine's cores, measured minutes apart in one process: a share
//!    that a busy machine moves less than either figure alone.
//!
//! The embedder is, by default, an OpenAI-compatible embedding server on
//! loopback started by the run (`--embedder loopback`) that answers with
//! the lexical embedder's feature-hashing vectors, so the model costs
//! nothing and what is measured is mnemo's own path: the HTTP calls, their
//! batching, the projections. `--embedder lexical` embeds in process. The
//! loopback server counts its requests and inputs, which shows how the
//! projections batch.
//!
//! Prints figures; asserts nothing (speed is measured here, not in tests).

use std::collections::HashMap;
use std::net::TcpListener;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix_web::{web, App, HttpResponse, HttpServer};
use anyhow::{bail, Context};
use mnemo_auth::Scope;
use mnemo_embed::{Embedder, LexicalEmbedder};
use serde_json::{json, Value};

use crate::bench::{cores, message_text, percentile, process_cpu, varied_text, EmbeddedServer};
use crate::bench_parts::{self, PartsBenchArgs, PartsReport};

/// The vector size of the loopback server (all-MiniLM-L6-v2's).
pub const DIMENSION: usize = 384;
/// How long the run looks for the last memory, or waits for the backlog.
const GIVE_UP: Duration = Duration::from_secs(600);
/// How often the wait prints where the backlog is.
const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// Where the embedded server's vectors come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BenchEmbedder {
    /// An OpenAI-compatible server on loopback, started by the run.
    Loopback,
    /// The lexical embedder, in process.
    Lexical,
    /// The local model, in process (the environment's
    /// [`LOCAL_MODEL_VARIABLES`] say where it is): what a default
    /// deployment runs, so the figures say where the model caps the rate.
    Local,
}

/// The environment variables that locate the local model, passed on to
/// the embedded server (which otherwise sees only the bench's settings).
pub const LOCAL_MODEL_VARIABLES: [&str; 5] = [
    "MNEMO_EMBED_MODEL_DIR",
    "MNEMO_EMBED_MODEL",
    "MNEMO_MODEL_CACHE",
    "MNEMO_HF_ENDPOINT",
    "MNEMO_PYPI_ENDPOINT",
];

#[derive(Debug, Clone)]
pub struct SearchableBench {
    pub memories: usize,
    pub messages: usize,
    pub clients: usize,
    pub batch: usize,
    pub embedder: BenchEmbedder,
    /// Post [`varied_text`] instead of [`message_text`]'s six sentences.
    pub varied_text: bool,
    /// Measure the parts' ceiling on the same messages first
    /// ([`bench_parts::measure`]) and set the messages' figures against it.
    pub ceiling: bool,
}

/// What the loopback embedding server was asked.
#[derive(Debug, Default)]
pub struct EmbeddingCounts {
    pub requests: AtomicU64,
    pub inputs: AtomicU64,
}

/// An OpenAI-compatible `POST /v1/embeddings` answering with the lexical
/// embedder's vectors (unit length, `dimension` wide), counting what it is
/// asked in `counts`.
pub fn embedding_server(
    listener: TcpListener,
    dimension: usize,
    counts: Arc<EmbeddingCounts>,
) -> anyhow::Result<actix_web::dev::Server> {
    let embedder = web::Data::new(LexicalEmbedder::new(dimension));
    let counts = web::Data::from(counts);
    Ok(HttpServer::new(move || {
        App::new()
            .app_data(embedder.clone())
            .app_data(counts.clone())
            .app_data(web::JsonConfig::default().limit(64 << 20))
            .route("/v1/embeddings", web::post().to(embeddings))
    })
    .workers(2)
    .listen(listener)?
    .run())
}

async fn embeddings(
    body: web::Json<Value>,
    embedder: web::Data<LexicalEmbedder>,
    counts: web::Data<EmbeddingCounts>,
) -> HttpResponse {
    let inputs: Vec<String> = match &body["input"] {
        Value::String(text) => vec![text.clone()],
        Value::Array(items) => items
            .iter()
            .filter_map(|item| item.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    };
    if inputs.is_empty() {
        return HttpResponse::BadRequest()
            .json(json!({"error": {"message": "input must be a string or a list of strings"}}));
    }
    counts.requests.fetch_add(1, Ordering::Relaxed);
    counts
        .inputs
        .fetch_add(inputs.len() as u64, Ordering::Relaxed);
    let vectors = match embedder.embed(&inputs).await {
        Ok(vectors) => vectors,
        Err(error) => {
            return HttpResponse::InternalServerError()
                .json(json!({"error": {"message": error.to_string()}}))
        }
    };
    let tokens: usize = inputs.iter().map(|text| text.len().div_ceil(4)).sum();
    HttpResponse::Ok().json(json!({
        "object": "list",
        "model": body["model"],
        "data": vectors.into_iter().enumerate().map(|(index, embedding)| json!({
            "object": "embedding", "index": index, "embedding": embedding,
        })).collect::<Vec<_>>(),
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }))
}

/// A word no text of the run contains but the one it marks.
fn marker(n: usize) -> String {
    let mut word = String::from("zqx");
    let mut rest = n;
    for _ in 0..6 {
        word.push((b'a' + (rest % 26) as u8) as char);
        rest /= 26;
    }
    word
}

struct Client {
    http: reqwest::Client,
    url: String,
    token: String,
    /// When the backlog was last printed.
    progress: std::sync::Mutex<Option<Instant>>,
}

impl Client {
    async fn post(&self, path: &str, body: &Value) -> anyhow::Result<Value> {
        let request = self.http.post(format!("{}{path}", self.url)).json(body);
        self.send(request, &format!("POST {path}")).await
    }

    async fn get(&self, path: &str) -> anyhow::Result<Value> {
        let request = self.http.get(format!("{}{path}", self.url));
        self.send(request, &format!("GET {path}")).await
    }

    /// The answer's JSON, or an error naming `what` and the status.
    async fn send(&self, request: reqwest::RequestBuilder, what: &str) -> anyhow::Result<Value> {
        let response = request
            .bearer_auth(&self.token)
            .send()
            .await
            .with_context(|| what.to_owned())?;
        let status = response.status();
        let answer: Value = response.json().await.unwrap_or(Value::Null);
        if !status.is_success() {
            bail!("{what}: {status} {answer}");
        }
        Ok(answer)
    }

    /// Whether a search of `subject` for `word` returns the text holding it.
    async fn finds(&self, subject: &str, word: &str, include: &str) -> anyhow::Result<bool> {
        let found = self
            .post(
                &format!("/v1/subjects/{subject}/search"),
                &json!({"query": word, "k": 5, "include": [include]}),
            )
            .await?;
        let key = if include == "memories" {
            "memory"
        } else {
            "episode"
        };
        Ok(found["results"].as_array().is_some_and(|results| {
            results.iter().any(|result| {
                result[key]["content"]
                    .as_str()
                    .is_some_and(|content| content.contains(word))
            })
        }))
    }

    /// Nothing behind: relay, every consumer group and the buffer at zero.
    /// How long ago the server's backlog reading was taken, when it shows
    /// nothing behind; `None` while something is.
    async fn caught_up(&self) -> anyhow::Result<Option<Duration>> {
        let ready = self.get("/readyz").await?;
        let now = Instant::now();
        let mut last = self.progress.lock().unwrap_or_else(|p| p.into_inner());
        if last.is_none_or(|at| now.duration_since(at) >= PROGRESS_EVERY) {
            *last = Some(now);
            // Where the backlog is, while the run waits: which stage trails.
            eprintln!(
                "  backlog: relay {}, consumer groups {}, consolidation buffer {}",
                ready["relay_lag"],
                ready["consumer_lag"],
                ready["backlog"]["consolidation"]["messages"]
            );
        }
        let groups_done = ready["consumer_lag"]
            .as_object()
            .is_some_and(|groups| groups.values().all(|lag| lag.as_u64() == Some(0)));
        let done = ready["relay_lag"].as_u64() == Some(0)
            && groups_done
            && ready["backlog"]["consolidation"]["messages"].as_u64() == Some(0);
        // The server reuses a reading for up to a second (`age_ms`).
        let age = Duration::from_millis(ready["age_ms"].as_u64().unwrap_or(0));
        Ok(done.then_some(age))
    }
}

pub async fn searchable(bench: SearchableBench) -> anyhow::Result<()> {
    // Before the server starts, so nothing else runs in the process while
    // the stages are timed.
    let ceiling = if bench.ceiling {
        anyhow::ensure!(
            bench.embedder == BenchEmbedder::Lexical && bench.messages > 0,
            "--ceiling sets posted messages against the parts' ceiling, which embeds with \
             the lexical embedder: it needs --embedder lexical and --messages above 0"
        );
        let parts = bench_parts::measure(PartsBenchArgs {
            messages: bench.messages,
            batch: bench.batch,
            subjects: bench.clients,
            varied_text: bench.varied_text,
        })
        .await?;
        parts.print();
        Some(parts)
    } else {
        None
    };
    let counts = Arc::new(EmbeddingCounts::default());
    let mut env: HashMap<String, String> = HashMap::new();
    let mut _embedding_server = None;
    match bench.embedder {
        BenchEmbedder::Loopback => {
            let listener = TcpListener::bind("127.0.0.1:0")?;
            let port = listener.local_addr()?.port();
            let server = embedding_server(listener, DIMENSION, counts.clone())?;
            _embedding_server = Some(server.handle());
            tokio::spawn(server);
            env.insert("MNEMO_EMBEDDER".into(), "openai".into());
            env.insert(
                "MNEMO_EMBED_BASE_URL".into(),
                format!("http://127.0.0.1:{port}/v1"),
            );
            env.insert("MNEMO_EMBED_MODEL".into(), "feature-hash".into());
            env.insert("MNEMO_EMBED_DIMENSION".into(), DIMENSION.to_string());
        }
        BenchEmbedder::Lexical => {
            env.insert("MNEMO_EMBEDDER".into(), "lexical".into());
        }
        BenchEmbedder::Local => {
            env.insert("MNEMO_EMBEDDER".into(), "local".into());
            for variable in LOCAL_MODEL_VARIABLES {
                if let Ok(value) = std::env::var(variable) {
                    env.insert(variable.into(), value);
                }
            }
        }
    }
    let server = EmbeddedServer::start(
        &env,
        vec![Scope::MemoriesRead, Scope::MemoriesWrite, Scope::AuditRead],
    )
    .await?;
    let client = Arc::new(Client {
        http: reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .pool_max_idle_per_host(bench.clients.max(1) * 2)
            .build()?,
        url: server.url.clone(),
        token: server.token.clone(),
        progress: Default::default(),
    });
    println!(
        "## Time to searchable (embedded server, {} embedder)\n",
        match bench.embedder {
            BenchEmbedder::Loopback => "an OpenAI-compatible loopback",
            BenchEmbedder::Lexical => "the in-process lexical",
            BenchEmbedder::Local => "the in-process local model",
        }
    );
    if bench.memories > 0 {
        memories(&client, bench.memories).await?;
        print_embedding_counts(&counts, bench.embedder);
        // The messages part counts its own calls.
        counts.requests.store(0, Ordering::Relaxed);
        counts.inputs.store(0, Ordering::Relaxed);
    }
    if bench.messages > 0 {
        let run = messages(&client, &bench).await?;
        print_embedding_counts(&counts, bench.embedder);
        if let Some(parts) = &ceiling {
            print_against_the_ceiling(&run, parts);
        }
    }
    server.stop().await
}

/// What the messages part measured, for [`print_against_the_ceiling`].
struct MessagesRun {
    messages: usize,
    /// From the first post until everything was searchable.
    searchable: Duration,
    /// The process's CPU time over that span.
    cpu: Duration,
}

/// The pipeline's messages a second and CPU per message beside what the
/// four stages alone cost per message on the same messages.
#[derive(Debug, PartialEq)]
struct AgainstTheCeiling {
    /// Messages searchable per second, the pipeline's.
    rate: f64,
    /// Messages per second the cores would make searchable doing nothing
    /// but the stages.
    ceiling: f64,
    pipeline_cpu: Duration,
    stages_cpu: Duration,
}

impl AgainstTheCeiling {
    fn new(run: &MessagesRun, stages_cpu: Duration, cores: usize) -> Self {
        AgainstTheCeiling {
            rate: run.messages as f64 / run.searchable.as_secs_f64(),
            ceiling: bench_parts::ceiling(cores, stages_cpu),
            pipeline_cpu: run.cpu / run.messages.max(1) as u32,
            stages_cpu,
        }
    }

    /// The pipeline's rate as a share of the ceiling.
    fn share(&self) -> f64 {
        self.rate / self.ceiling
    }

    /// The pipeline's CPU per message over the stages'.
    fn cpu_ratio(&self) -> f64 {
        self.pipeline_cpu.as_secs_f64() / self.stages_cpu.as_secs_f64().max(f64::EPSILON)
    }
}

fn print_against_the_ceiling(run: &MessagesRun, parts: &PartsReport) {
    let cores = cores();
    let against = AgainstTheCeiling::new(run, parts.cpu_per_message(), cores);
    println!("### Against the parts' ceiling, same messages, same run\n");
    println!("| | pipeline | the four stages alone | pipeline ÷ stages |");
    println!("|---|---:|---:|---:|");
    println!(
        "| messages searchable per second | {:.0} | {:.0} (ceiling on {cores} cores) | {:.0} % |",
        against.rate,
        against.ceiling,
        100.0 * against.share()
    );
    println!(
        "| CPU per message | {:.0} µs | {:.0} µs | {:.2}× |\n",
        against.pipeline_cpu.as_secs_f64() * 1e6,
        against.stages_cpu.as_secs_f64() * 1e6,
        against.cpu_ratio()
    );
}

fn print_embedding_counts(counts: &EmbeddingCounts, embedder: BenchEmbedder) {
    if embedder != BenchEmbedder::Loopback {
        return;
    }
    let (requests, inputs) = (
        counts.requests.load(Ordering::Relaxed),
        counts.inputs.load(Ordering::Relaxed),
    );
    println!(
        "embedding server: {requests} requests, {inputs} texts ({:.1} per request)\n",
        inputs as f64 / requests.max(1) as f64
    );
}

async fn memories(client: &Client, count: usize) -> anyhow::Result<()> {
    eprintln!("writing {count} memories, one request at a time");
    let subject = "searchable-memories";
    let path = format!("/v1/subjects/{subject}/memories");
    let last_word = marker(count);
    let mut latencies = Vec::with_capacity(count);
    let started = Instant::now();
    for n in 0..count {
        let content = if n + 1 == count {
            format!("The locker code word is {last_word} (note {n})")
        } else {
            format!("{} (note {n})", message_text(n))
        };
        let sent = Instant::now();
        client
            .post(&path, &json!({"content": content, "kind": "fact"}))
            .await?;
        latencies.push(sent.elapsed());
    }
    let acknowledged = Instant::now();
    let writing = acknowledged - started;
    let mut searches = 0;
    let found_after = loop {
        searches += 1;
        if client.finds(subject, &last_word, "memories").await? {
            break acknowledged.elapsed();
        }
        if acknowledged.elapsed() > GIVE_UP {
            bail!("the last memory was not found {GIVE_UP:?} after its acknowledgement");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    latencies.sort();
    println!("### {count} memories written one request at a time, one subject\n");
    println!("| measure | value |\n|---|---:|");
    println!(
        "| writes/s (acknowledged) | {:.0} |",
        count as f64 / writing.as_secs_f64()
    );
    println!(
        "| write p50 / p99 | {:.2} ms / {:.2} ms |",
        ms(percentile(&latencies, 0.5)),
        ms(percentile(&latencies, 0.99))
    );
    println!("| writing took | {:.2} s |", writing.as_secs_f64());
    println!(
        "| **the last memory found after its acknowledgement** | **{:.0} ms** ({searches} searches) |",
        ms(found_after)
    );
    println!(
        "| first write to the last one searchable | {:.2} s |\n",
        (writing + found_after).as_secs_f64()
    );
    Ok(())
}

async fn messages(client: &Arc<Client>, bench: &SearchableBench) -> anyhow::Result<MessagesRun> {
    let clients = bench.clients.max(1);
    let batch = bench.batch.max(1);
    eprintln!(
        "posting {} messages from {clients} clients in batches of {batch}",
        bench.messages
    );
    let per_client = bench.messages.div_ceil(clients);
    let next_id = Arc::new(AtomicU64::new(0));
    let cpu_before = process_cpu()?;
    let started = Instant::now();
    let mut writers = Vec::new();
    for writer in 0..clients {
        let (client, next_id) = (client.clone(), next_id.clone());
        let (total, varied) = (bench.messages, bench.varied_text);
        writers.push(tokio::spawn(async move {
            let subject = format!("searchable-{writer}");
            let path = format!("/v1/subjects/{subject}/messages");
            let mut sent = 0;
            let mut latencies = Vec::new();
            while sent < per_client {
                let take = batch.min(per_client - sent);
                let messages: Vec<Value> = (0..take)
                    .map_while(|i| {
                        let n = next_id.fetch_add(1, Ordering::Relaxed) as usize;
                        (n < total).then(|| {
                            json!({
                                "role": if (sent + i) % 2 == 0 { "user" } else { "assistant" },
                                "content": if varied { varied_text(n) } else { message_text(n) },
                                "id": format!("m{n}"),
                                "session": format!("s{}", (sent + i) / 24),
                            })
                        })
                    })
                    .collect();
                if messages.is_empty() {
                    break;
                }
                let at = Instant::now();
                client.post(&path, &json!({ "messages": messages })).await?;
                latencies.push(at.elapsed());
                sent += take;
            }
            client
                .post(&format!("/v1/subjects/{subject}/consolidate"), &json!({}))
                .await?;
            anyhow::Ok(latencies)
        }));
    }
    let mut latencies = Vec::new();
    for writer in writers {
        latencies.extend(writer.await??);
    }
    let accepting = started.elapsed();
    // One more message, with a word of its own, that the search must find.
    let word = marker(usize::MAX / 2);
    client
        .post(
            "/v1/subjects/searchable-0/messages",
            &json!({"messages": [{"role": "user", "content": format!("The locker code word is {word}")}]}),
        )
        .await?;
    client
        .post("/v1/subjects/searchable-0/consolidate", &json!({}))
        .await?;
    let last_acknowledged = started.elapsed();
    // Everything is searchable once the marked message is found and a
    // backlog reading taken after the last acknowledgement shows nothing
    // behind; each is timed when it became true as far as the run can
    // tell (the reading when it was taken, not when the run asked).
    let (mut found, mut drained) = (None, None);
    let searchable = loop {
        if found.is_none() && client.finds("searchable-0", &word, "episodes").await? {
            found = Some(started.elapsed());
        }
        if drained.is_none() {
            if let Some(age) = client.caught_up().await? {
                let taken = started.elapsed().saturating_sub(age);
                drained = (taken >= last_acknowledged).then_some(taken);
            }
        }
        if let (Some(found), Some(drained)) = (found, drained) {
            break found.max(drained);
        }
        if started.elapsed() > GIVE_UP + accepting {
            bail!("the backlog did not reach zero within {GIVE_UP:?} after the load");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let cpu = process_cpu()?.saturating_sub(cpu_before);
    let report = client.get("/v1/consolidation/report?days=1").await?;
    let stored = report["report"]["candidates"]["memory"]
        .as_u64()
        .unwrap_or(0);
    let items = bench.messages as u64 + 1 + stored;
    latencies.sort();
    println!(
        "### {} messages posted by {clients} clients in batches of {batch}\n",
        bench.messages
    );
    println!("| measure | value |\n|---|---:|");
    println!(
        "| accepted msg/s | {:.0} (in {:.2} s) |",
        bench.messages as f64 / accepting.as_secs_f64(),
        accepting.as_secs_f64()
    );
    println!(
        "| request p50 / p99 | {:.1} ms / {:.1} ms |",
        ms(percentile(&latencies, 0.5)),
        ms(percentile(&latencies, 0.99))
    );
    println!("| memories consolidation stored | {stored} |");
    println!(
        "| first post to everything searchable | {:.2} s |",
        searchable.as_secs_f64()
    );
    println!(
        "| after the last acknowledgement | {:.2} s |",
        (searchable - accepting).as_secs_f64()
    );
    println!(
        "| **items searchable per second** (messages + memories) | **{:.0}** |",
        items as f64 / searchable.as_secs_f64()
    );
    println!(
        "| process CPU per item (server and clients, user + system) | {:.0} µs |",
        cpu.as_secs_f64() * 1e6 / items as f64
    );
    // Below the core count, the run waited on something other than CPU
    // (the disk, a lock, a timer): a cheaper item would not make it faster.
    let cores = cores();
    println!(
        "| cores busy (that CPU over the time to searchable) | {:.2} of {cores} |\n",
        cpu.as_secs_f64() / searchable.as_secs_f64()
    );
    Ok(MessagesRun {
        messages: bench.messages + 1,
        searchable,
        cpu,
    })
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pipeline_is_set_against_the_stages_per_message() {
        // 1,000 messages searchable 2 s after the first post, for 1 s of
        // CPU; the stages cost 250 µs a message, 8,000 a second on 2 cores.
        let run = MessagesRun {
            messages: 1000,
            searchable: Duration::from_secs(2),
            cpu: Duration::from_secs(1),
        };
        let against = AgainstTheCeiling::new(&run, Duration::from_micros(250), 2);
        assert_eq!(against.rate, 500.0);
        assert_eq!(against.ceiling, 8000.0);
        assert_eq!(against.share(), 0.0625);
        assert_eq!(against.pipeline_cpu, Duration::from_millis(1));
        assert_eq!(against.cpu_ratio(), 4.0);
    }

    #[tokio::test]
    async fn the_ceiling_is_refused_for_what_the_stages_do_not_embed_with() {
        for (embedder, messages) in [
            (BenchEmbedder::Loopback, 10),
            (BenchEmbedder::Local, 10),
            (BenchEmbedder::Lexical, 0),
        ] {
            let refused = searchable(SearchableBench {
                memories: 0,
                messages,
                clients: 1,
                batch: 10,
                embedder,
                varied_text: false,
                ceiling: true,
            })
            .await
            .expect_err("refused before anything runs");
            assert!(
                refused.to_string().contains("--embedder lexical"),
                "{refused}"
            );
        }
    }

    #[tokio::test]
    async fn the_loopback_server_speaks_what_the_openai_adapter_expects() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let counts = Arc::new(EmbeddingCounts::default());
        let server = embedding_server(listener, 64, counts.clone()).unwrap();
        let handle = server.handle();
        tokio::spawn(server);
        let mut config =
            mnemo_embed::OpenAiConfig::new(format!("http://127.0.0.1:{port}/v1"), "feature-hash");
        config.dimension = Some(64);
        let adapter = mnemo_embed::OpenAiEmbedder::new(config).await.unwrap();
        let texts = vec!["green tea".to_owned(), "answer in French".to_owned()];
        let vectors = adapter.embed(&texts).await.unwrap();
        assert_eq!(
            vectors,
            LexicalEmbedder::new(64).embed(&texts).await.unwrap()
        );
        assert_eq!(counts.inputs.load(Ordering::Relaxed), 2);
        assert_eq!(counts.requests.load(Ordering::Relaxed), 1);
        handle.stop(true).await;
    }

    #[test]
    fn markers_are_distinct_words() {
        assert_ne!(marker(1), marker(2));
        assert!(marker(7).chars().all(|c| c.is_ascii_lowercase()));
    }
}
