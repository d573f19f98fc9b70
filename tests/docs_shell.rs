//! The operator docs' recipes work as printed: every ```bash / ```sh block
//! of `docs/scale-out.md`, `docs/postgres.md` and `docs/kafka.md` is run by
//! this test, or is marked in the markdown with why it is not, on the line
//! just before the block:
//!
//! - `<!-- not run: REASON -->`: needs what this machine lacks (Docker, a
//!   Kubernetes cluster), or is run elsewhere (the test suite itself, CI's
//!   `deploy/check`). Skipped, the reason printed.
//! - `<!-- with a Qdrant server -->` / `<!-- without a Qdrant server -->`:
//!   two variants of one step. The test of each variant runs its block and
//!   skips the other; the one with a server runs when `TEST_QDRANT_URL`
//!   names one (`scripts/test` starts one where it can), its URL in place of
//!   the printed `http://127.0.0.1:6334`.
//! - `<!-- runs until stopped -->`: a foreground server, run in the
//!   background.
//!
//! Any other marker, or a fence without a language, fails the test: no
//! shell block can escape by not being recognised.
//!
//! The runnable blocks of one document are one bash script, in order
//! (`set -euo pipefail`, so a failing command fails it; which block failed
//! is reported), run in a temporary directory as the working directory, in
//! a process group of its own that is killed at the end, with whatever the
//! blocks left running in the background. After it, the test checks what
//! the document promises: for the scale-out recipe, every process it
//! started answers `/readyz` with 200, the tables are `mnemo_owner`'s, and
//! the message the recipe posts through ingest becomes a memory that the
//! retriever's search finds; for `mnemo dev kafka`, the five topics with six
//! partitions each.
//!
//! What the test changes in the printed text, and why (each substitution
//! must still find its text in the document, so the docs cannot drift away
//! from it unnoticed):
//! - `cargo build --release --bins` becomes `true`, and `target/release/`
//!   the directory of the binaries this test build produced (debug; built
//!   first by `mnemo_tests::binary`, a no-op under `cargo test --workspace`),
//!   which is also put first on `PATH` for a bare `mnemo`: a release build
//!   would take most of an hour on this machine.
//! - The database `mnemo` becomes `mnemo_test_<unix time>_<random>`: runs
//!   in parallel (other worktrees, CI reruns) never meet, and one killed
//!   midway is dropped by a later run (`mnemo_pg::testsupport`).
//! - Every fixed local port (`127.0.0.1:NNNN`, `--port NNNN`) becomes a free
//!   one, for the same reason.
//!
//! Besides, the test's environment has no `MNEMO_*` setting of the
//! developer's, and sets two the recipe leaves to its reader:
//! `MNEMO_EMBEDDER=lexical` (no model to load: the recipe is about the
//! processes and stores, not about embeddings) and, with a Qdrant server, a
//! collection prefix of its own, so runs sharing that server never see each
//! other's points. The PostgreSQL server is the recipe's own, `postgres` on
//! 127.0.0.1:5432 trusting local logins; with `TEST_DATABASE_URL` naming
//! another server the recipe cannot run as printed, and the scale-out tests
//! say so and stop.

use std::collections::{BTreeMap, HashMap};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mnemo_auth::{MintRequest, Minter, Scope};
use mnemo_domain::TenantId;
use reqwest::StatusCode;
use serde_json::{json, Value};

/// How long a recipe (or what it promises) may take on a loaded machine
/// before the test fails; it normally takes seconds.
const PATIENCE: Duration = Duration::from_secs(180);
/// The server the scale-out recipe logs in to, as printed.
const RECIPE_SERVER: &str = "postgres://postgres@127.0.0.1:5432/postgres";
const QDRANT_IN_DOCS: &str = "http://127.0.0.1:6334";

/// The recipes' processes share two cores: one recipe at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

// ------------------------------------------------------------ the blocks

#[derive(Debug, Clone)]
struct Block {
    doc: &'static str,
    /// 1-based line of the opening fence.
    line: usize,
    text: String,
    marker: Option<String>,
}

impl Block {
    fn place(&self) -> String {
        format!("{}:{}", self.doc, self.line)
    }
}

const SHELLS: [&str; 3] = ["bash", "sh", "shell"];

/// The shell blocks of `doc`, with the HTML comment on the line before
/// each (blank lines skipped). Fences may be indented (inside a list); the
/// indent is removed from the block's lines. A fence without a language
/// fails: it could be a shell block no one runs.
fn shell_blocks(doc: &'static str) -> Vec<Block> {
    let text = std::fs::read_to_string(root().join(doc)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut blocks = Vec::new();
    let mut n = 0;
    while n < lines.len() {
        let trimmed = lines[n].trim_start();
        let Some(language) = trimmed.strip_prefix("```") else {
            n += 1;
            continue;
        };
        let indent = lines[n].len() - trimmed.len();
        let language = language.trim();
        assert!(
            !language.is_empty(),
            "{doc}:{}: a fence without a language; name it (```bash, ```sql, ```text…) \
             so this test knows whether to run it",
            n + 1
        );
        let opening = n;
        let mut body = Vec::new();
        n += 1;
        while n < lines.len() && lines[n].trim_start() != "```" {
            let line = lines[n];
            let cut = line.len() - line.trim_start().len();
            body.push(&line[cut.min(indent)..]);
            n += 1;
        }
        assert!(n < lines.len(), "{doc}:{}: unclosed fence", opening + 1);
        n += 1;
        if !SHELLS.contains(&language) {
            continue;
        }
        let marker = lines[..opening]
            .iter()
            .rev()
            .map(|line| line.trim())
            .find(|line| !line.is_empty())
            .and_then(|line| line.strip_prefix("<!--")?.strip_suffix("-->"))
            .map(|marker| marker.trim().to_owned());
        blocks.push(Block {
            doc,
            line: opening + 1,
            text: body.join("\n"),
            marker,
        });
    }
    blocks
}

/// What the test does with a block.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Plan {
    Run,
    /// A server that runs until stopped: in the background.
    Background,
    Skip(String),
}

/// Which variant of the Qdrant step a test runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Variant {
    WithQdrant,
    WithoutQdrant,
}

fn plan(block: &Block, variant: Variant) -> Plan {
    let Some(marker) = &block.marker else {
        return Plan::Run;
    };
    if let Some(reason) = marker.strip_prefix("not run:") {
        return Plan::Skip(reason.trim().to_owned());
    }
    match (marker.as_str(), variant) {
        ("with a Qdrant server", Variant::WithQdrant)
        | ("without a Qdrant server", Variant::WithoutQdrant) => Plan::Run,
        ("with a Qdrant server", Variant::WithoutQdrant) => {
            Plan::Skip("the variant with a Qdrant server is another test's".into())
        }
        ("without a Qdrant server", Variant::WithQdrant) => {
            Plan::Skip("the variant without a Qdrant server is another test's".into())
        }
        ("runs until stopped", _) => Plan::Background,
        (other, _) => panic!(
            "{}: unknown marker <!-- {other} -->: use `not run: REASON`, \
             `with a Qdrant server`, `without a Qdrant server` or `runs until stopped`",
            block.place()
        ),
    }
}

// ------------------------------------------------------------ substitutions

/// A text of the printed recipe the test replaces, and with what.
struct Substitution {
    printed: &'static str,
    run: String,
}

/// Applies the substitutions to the runnable blocks, after checking that
/// each still finds its text in the document's shell blocks.
fn substitute(doc: &str, blocks: &mut [(Block, Plan)], substitutions: &[Substitution]) {
    for substitution in substitutions {
        assert!(
            blocks
                .iter()
                .any(|(block, _)| block.text.contains(substitution.printed)),
            "{doc} no longer prints {:?}: update tests/docs_shell.rs",
            substitution.printed
        );
        for (block, plan) in blocks.iter_mut() {
            if *plan != Plan::Run && *plan != Plan::Background {
                continue;
            }
            block.text = block.text.replace(substitution.printed, &substitution.run);
        }
    }
}

/// Replaces each fixed port after `127.0.0.1:` or `--port ` in the runnable
/// blocks by a free one (the same port by the same one everywhere);
/// returns the mapping, printed port to the one used.
fn remap_ports(blocks: &mut [(Block, Plan)]) -> BTreeMap<u16, u16> {
    let mut ports = BTreeMap::new();
    for (block, plan) in blocks.iter_mut() {
        if *plan != Plan::Run && *plan != Plan::Background {
            continue;
        }
        let mut out = String::new();
        let mut rest = block.text.as_str();
        loop {
            let next = ["127.0.0.1:", "--port "]
                .iter()
                .filter_map(|prefix| rest.find(prefix).map(|at| (at, prefix.len())))
                .min();
            let Some((at, len)) = next else {
                out.push_str(rest);
                break;
            };
            out.push_str(&rest[..at + len]);
            rest = &rest[at + len..];
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            if let Ok(printed) = digits.parse::<u16>() {
                let used = *ports.entry(printed).or_insert_with(mnemo_tests::free_port);
                out.push_str(&used.to_string());
                rest = &rest[digits.len()..];
            }
        }
        block.text = out;
    }
    ports
}

// ------------------------------------------------------------ the run

/// The directory of the workspace's binaries, built first.
fn binaries() -> PathBuf {
    for name in [
        "mnemo",
        "mnemo-ingest",
        "mnemo-retriever",
        "mnemo-consolidator",
        "mnemo-forgetter",
    ] {
        mnemo_tests::binary(name);
    }
    mnemo_tests::binary("mnemo")
        .parent()
        .expect("a directory")
        .to_owned()
}

/// A document's runnable blocks running as one script, in a process group
/// of their own, killed with everything in it when dropped.
struct Script {
    dir: tempfile::TempDir,
    child: Child,
    blocks: Vec<Block>,
}

impl Script {
    fn start(blocks: &[(Block, Plan)], env: &[(String, String)]) -> Script {
        let dir = tempfile::tempdir().unwrap();
        let mut script = String::from("set -euo pipefail\n");
        let mut runnable = Vec::new();
        for (n, (block, plan)) in blocks.iter().enumerate() {
            match plan {
                Plan::Skip(reason) => {
                    eprintln!("skipped {}: {reason}", block.place());
                    continue;
                }
                Plan::Run => {
                    script += &format!("echo '@@ block {n}' >&2\n{}\n", block.text);
                }
                Plan::Background => {
                    script += &format!("echo '@@ block {n}' >&2\n{{\n{}\n}} &\n", block.text);
                }
            }
            eprintln!("running {}", block.place());
            runnable.push(n);
        }
        // What the blocks exported (the secrets they made), for the checks.
        script += "echo '@@ done' >&2\nenv -0 > \"$DOCS_SHELL_ENV_FILE\"\n";
        let path = dir.path().join("recipe.sh");
        std::fs::write(&path, &script).unwrap();
        let work = dir.path().join("work");
        std::fs::create_dir(&work).unwrap();
        let mut command = Command::new("bash");
        for (key, _) in std::env::vars() {
            if key.starts_with("MNEMO_") {
                command.env_remove(key);
            }
        }
        let child = command
            .arg(&path)
            .current_dir(&work)
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .env("DOCS_SHELL_ENV_FILE", dir.path().join("env"))
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(dir.path().join("stdout")).unwrap())
            .stderr(std::fs::File::create(dir.path().join("stderr")).unwrap())
            // Its own group: background jobs of a script stay in it, so one
            // kill reaches all of them, even after bash has exited.
            .process_group(0)
            .spawn()
            .expect("bash runs");
        Script {
            dir,
            child,
            blocks: blocks.iter().map(|(block, _)| block.clone()).collect(),
        }
    }

    fn output(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(name)).unwrap_or_default()
    }

    /// The tail of what the script and its processes printed.
    fn report(&self) -> String {
        let tail = |text: String| {
            let lines: Vec<&str> = text.lines().collect();
            lines[lines.len().saturating_sub(80)..].join("\n")
        };
        format!(
            "----- stdout -----\n{}\n----- stderr -----\n{}",
            tail(self.output("stdout")),
            tail(self.output("stderr"))
        )
    }

    /// Waits for the script to end; fails naming the block that failed.
    fn finish(&mut self) {
        let deadline = Instant::now() + PATIENCE;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "the recipe did not finish in {PATIENCE:?}\n{}",
                self.report()
            );
            std::thread::sleep(Duration::from_millis(100));
        };
        if status.success() {
            return;
        }
        let stderr = self.output("stderr");
        let failed = stderr
            .lines()
            .filter_map(|line| line.strip_prefix("@@ block "))
            .next_back()
            .and_then(|n| n.trim().parse::<usize>().ok())
            .map(|n| &self.blocks[n]);
        match failed {
            Some(block) => panic!(
                "the block at {} failed ({status}):\n{}\n{}",
                block.place(),
                block.text,
                self.report()
            ),
            None => panic!("the recipe failed ({status})\n{}", self.report()),
        }
    }

    /// The environment the blocks left (their exports).
    fn exported(&self) -> HashMap<String, String> {
        let bytes = std::fs::read(self.dir.path().join("env")).unwrap_or_default();
        String::from_utf8_lossy(&bytes)
            .split('\0')
            .filter_map(|pair| pair.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }
}

impl Drop for Script {
    fn drop(&mut self) {
        // SIGKILL to the whole group: the servers the recipe backgrounded.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .stderr(Stdio::null())
            .status();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("{}", self.report());
        }
    }
}

// ------------------------------------------------------------ postgres

/// A database name no other run uses, in the form `TestDatabase` drops when
/// a killed run left it behind.
fn fresh_database_name() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let suffix = uuid::Uuid::new_v4().simple().to_string();
    format!("mnemo_test_{secs}_{}", &suffix[..12])
}

/// Drops the recipe's database when dropped (after its processes).
struct DropDatabase(String);

impl Drop for DropDatabase {
    fn drop(&mut self) {
        let _ = Command::new("dropdb")
            .args([
                "-h",
                "127.0.0.1",
                "-U",
                "postgres",
                "--if-exists",
                "--force",
            ])
            .arg(&self.0)
            .status();
    }
}

/// Whether the recipe's server is the one the tests use; the recipe
/// cannot run as printed against another.
fn recipe_server_is_the_test_server() -> bool {
    match std::env::var("TEST_DATABASE_URL") {
        Ok(url) => url == RECIPE_SERVER || url == "postgres://postgres@127.0.0.1/postgres",
        Err(_) => true,
    }
}

// ------------------------------------------------------------ the tests

const SCALE_OUT: &str = "docs/scale-out.md";

fn token(secret: &str) -> String {
    Minter::hs256(secret.as_bytes(), "mnemo", "mnemo")
        .mint(&MintRequest {
            tenant: TenantId::parse("acme").unwrap(),
            actor: "docs-shell-test".into(),
            scopes: Scope::ALL.to_vec(),
            subject: None,
            ttl: Duration::from_secs(3600),
        })
        .unwrap()
}

/// Polls `probe` until it returns something or the patience runs out.
async fn poll<T>(what: &str, mut probe: impl AsyncFnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(value) = probe().await {
            return value;
        }
        assert!(Instant::now() < deadline, "{what} never happened");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// "Without Docker" in `docs/scale-out.md`, as printed, in `variant`; then
/// what it promises.
async fn scale_out_recipe(variant: Variant, qdrant_url: Option<String>) {
    let _serial = SERIAL.lock().await;
    let bin = binaries();
    let database = fresh_database_name();
    let _drop_database = DropDatabase(database.clone());
    let mut blocks: Vec<(Block, Plan)> = shell_blocks(SCALE_OUT)
        .into_iter()
        .map(|block| {
            let plan = plan(&block, variant);
            (block, plan)
        })
        .collect();
    let mut substitutions = vec![
        Substitution {
            printed: "cargo build --release --bins",
            run: "true".into(),
        },
        Substitution {
            printed: "target/release/",
            run: format!("{}/", bin.display()),
        },
        Substitution {
            printed: "@127.0.0.1/mnemo",
            run: format!("@127.0.0.1/{database}"),
        },
        Substitution {
            printed: "-O postgres mnemo ",
            run: format!("-O postgres {database} "),
        },
    ];
    // Before the ports: the server's own port is not the recipe's to remap.
    substitutions.push(Substitution {
        printed: QDRANT_IN_DOCS,
        run: "@@QDRANT@@".into(),
    });
    substitute(SCALE_OUT, &mut blocks, &substitutions);
    let ports = remap_ports(&mut blocks);
    let qdrant_url = qdrant_url.unwrap_or_default();
    for (block, _) in &mut blocks {
        block.text = block.text.replace("@@QDRANT@@", &qdrant_url);
    }
    // The processes the recipe starts, by the port each listens on.
    let listeners: Vec<(String, u16)> = blocks
        .iter()
        .filter(|(_, plan)| *plan == Plan::Run)
        .flat_map(|(block, _)| block.text.lines())
        .filter_map(|line| {
            let rest = line.split("MNEMO_LISTEN=127.0.0.1:").nth(1)?;
            let port: String = rest.chars().take_while(char::is_ascii_digit).collect();
            let program = rest.split_whitespace().nth(1)?.rsplit('/').next()?;
            Some((program.to_owned(), port.parse().ok()?))
        })
        .collect();
    let expected: &[&str] = match variant {
        Variant::WithQdrant => &[
            "mnemo-ingest",
            "mnemo-retriever",
            "mnemo-consolidator",
            "mnemo-forgetter",
        ],
        Variant::WithoutQdrant => &["mnemo-ingest", "mnemo"],
    };
    let programs: Vec<&str> = listeners.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(programs, expected, "the processes the recipe starts");

    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let prefix = format!("docs-{}-", &uuid::Uuid::new_v4().simple().to_string()[..12]);
    let env = vec![
        ("PATH".to_owned(), path),
        ("MNEMO_EMBEDDER".to_owned(), "lexical".to_owned()),
        ("MNEMO_QDRANT_COLLECTION_PREFIX".to_owned(), prefix),
    ];
    let started = Instant::now();
    let mut script = Script::start(&blocks, &env);
    script.finish();
    let exported = script.exported();

    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    for (program, port) in &listeners {
        poll(&format!("{program} ready on {port}"), async || {
            let response = client
                .get(format!("http://127.0.0.1:{port}/readyz"))
                .send()
                .await
                .ok()?;
            (response.status() == StatusCode::OK).then_some(())
        })
        .await;
    }

    // Migrated as printed: the tables are the owner role's, not the login's.
    let owner = Command::new("psql")
        .args(["-h", "127.0.0.1", "-U", "postgres", "-Atc"])
        .arg("SELECT tableowner FROM pg_tables WHERE tablename = 'events'")
        .arg(&database)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&owner.stdout).trim(),
        mnemo_pg::OWNER_ROLE,
        "{}",
        String::from_utf8_lossy(&owner.stderr)
    );

    // The recipe's message, posted to ingest with `mnemo token`'s token,
    // becomes a memory the reading process finds.
    let secret = exported
        .get("MNEMO_JWT_SECRET")
        .expect("the recipe exports MNEMO_JWT_SECRET");
    let reader = ports[&8082];
    let token = token(secret);
    let found = poll("the posted message found by search", async || {
        let response = client
            .post(format!(
                "http://127.0.0.1:{reader}/v1/subjects/user-42/search"
            ))
            .bearer_auth(&token)
            .json(&json!({"query": "green tea", "k": 3}))
            .send()
            .await
            .ok()?;
        let body: Value = response.json().await.ok()?;
        let content = body["results"][0]["memory"]["content"].as_str()?;
        content
            .to_lowercase()
            .contains("green tea")
            .then(|| content.to_owned())
    })
    .await;
    eprintln!(
        "{variant:?}: ready and searchable ({found:?}) {:.1} s after the start",
        started.elapsed().as_secs_f64()
    );
    drop(script);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scale_out_recipe_without_a_qdrant_server_works_as_printed() {
    if !recipe_server_is_the_test_server() {
        eprintln!(
            "skipped: TEST_DATABASE_URL names another server than the recipe's ({RECIPE_SERVER})"
        );
        return;
    }
    scale_out_recipe(Variant::WithoutQdrant, None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scale_out_recipe_with_a_qdrant_server_works_as_printed() {
    let Ok(url) = std::env::var("TEST_QDRANT_URL") else {
        eprintln!(
            "skipped: no Qdrant server (set TEST_QDRANT_URL; scripts/test starts one where it can)"
        );
        return;
    };
    if !recipe_server_is_the_test_server() {
        eprintln!(
            "skipped: TEST_DATABASE_URL names another server than the recipe's ({RECIPE_SERVER})"
        );
        return;
    }
    scale_out_recipe(Variant::WithQdrant, Some(url)).await;
}

/// `mnemo dev kafka --port 9092`, as printed (a bare `mnemo`: the
/// binaries' directory is first on `PATH`): it serves mnemo's five topics
/// with six partitions each, as the page says.
#[test]
fn kafka_md_dev_kafka_serves_the_topics_as_described() {
    let doc = "docs/kafka.md";
    let bin = binaries();
    let mut blocks: Vec<(Block, Plan)> = shell_blocks(doc)
        .into_iter()
        .map(|block| {
            let plan = plan(&block, Variant::WithoutQdrant);
            (block, plan)
        })
        .collect();
    let ports = remap_ports(&mut blocks);
    let port = ports[&9092];
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut script = Script::start(&blocks, &[("PATH".to_owned(), path)]);
    script.finish();

    use rdkafka::consumer::{BaseConsumer, Consumer as _};
    let consumer: BaseConsumer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", format!("127.0.0.1:{port}"))
        .create()
        .unwrap();
    let deadline = Instant::now() + PATIENCE;
    let partitions: BTreeMap<String, usize> = loop {
        let listed = consumer
            .fetch_metadata(None, Duration::from_secs(5))
            .map(|metadata| {
                metadata
                    .topics()
                    .iter()
                    .map(|t| (t.name().to_owned(), t.partitions().len()))
                    .collect::<BTreeMap<_, _>>()
            });
        match listed {
            Ok(topics)
                if mnemo_bus::topics::ALL
                    .iter()
                    .all(|t| topics.contains_key(*t)) =>
            {
                break topics
            }
            _ => {
                assert!(
                    Instant::now() < deadline,
                    "mnemo dev kafka never listed the topics: {listed:?}\n{}",
                    script.report()
                );
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    };
    for topic in mnemo_bus::topics::ALL {
        assert_eq!(partitions.get(topic), Some(&6), "{topic}: {partitions:?}");
    }
    drop(script);
}

/// `docs/postgres.md` prints no command this machine can run as printed
/// (its SQL needs passwords chosen, its test commands are the suite
/// itself): every shell block is marked, and would run here the moment
/// one is not.
#[test]
fn postgres_md_shell_blocks_run_or_say_why_not() {
    let doc = "docs/postgres.md";
    let blocks: Vec<(Block, Plan)> = shell_blocks(doc)
        .into_iter()
        .map(|block| {
            let plan = plan(&block, Variant::WithoutQdrant);
            (block, plan)
        })
        .collect();
    assert!(!blocks.is_empty(), "{doc} has shell blocks");
    if blocks.iter().all(|(_, plan)| matches!(plan, Plan::Skip(_))) {
        for (block, plan) in &blocks {
            eprintln!("skipped {}: {plan:?}", block.place());
        }
        return;
    }
    let mut script = Script::start(&blocks, &[]);
    script.finish();
}

/// The markers themselves: every shell block of the three documents has a
/// plan, and what each test skips it says why (printed with `--nocapture`).
#[test]
fn every_shell_block_of_the_recipes_is_run_or_marked_with_a_reason() {
    let mut counted = 0;
    for doc in [SCALE_OUT, "docs/postgres.md", "docs/kafka.md"] {
        for block in shell_blocks(doc) {
            counted += 1;
            for variant in [Variant::WithQdrant, Variant::WithoutQdrant] {
                if let Plan::Skip(reason) = plan(&block, variant) {
                    assert!(
                        !reason.is_empty(),
                        "{}: a skip needs a reason",
                        block.place()
                    );
                }
            }
        }
    }
    assert!(counted >= 15, "{counted} shell blocks found");
}
