//! The scale-out deployment across processes: the four service binaries
//! (`mnemo-ingest`, `mnemo-consolidator`, `mnemo-retriever`,
//! `mnemo-forgetter`) run as child processes of the test and share only
//! what the deployment shares:
//!
//! - PostgreSQL: a fresh, migrated test database per test (see
//!   `mnemo_pg::testsupport`; `TEST_DATABASE_URL` names the server), which
//!   the services reach as the application role;
//! - Kafka's wire protocol: librdkafka's mock cluster hosted by the test on
//!   a local port (`DevKafka`, what `mnemo dev kafka` runs);
//! - a Qdrant gRPC endpoint. **No Qdrant server runs where these tests
//!   usually run**, so by default the endpoint is
//!   `mnemo_vector_index::qdrant_standin`, a stand-in gRPC server over
//!   qdrant-edge shards hosted by the test. It proves the services' side of
//!   the wire, not a real server's behaviour: set `TEST_QDRANT_URL` (e.g.
//!   `http://127.0.0.1:6334`) to run against a real Qdrant instead (every
//!   test uses collections of its own prefix there).
//!
//! The binaries are built by the test itself before it starts them
//! (`mnemo_tests::binary`: a no-op when they are current).
//!
//! Every child is killed when its test ends, however it ends; on failure the
//! services' logs are printed. The tests run one at a time: each starts six
//! processes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use mnemo_auth::{MintRequest, Minter, Scope};
use mnemo_bus::kafka::dev::DevKafka;
use mnemo_domain::TenantId;
use mnemo_pg::testsupport::TestDatabase;
use reqwest::{Client, Method, StatusCode};
use serde_json::{json, Value};
use sqlx::PgPool;

const TENANT: &str = "acme";
const PARTITIONS: i32 = 4;
const SERVICES: [&str; 4] = [
    "mnemo-ingest",
    "mnemo-consolidator",
    "mnemo-retriever",
    "mnemo-forgetter",
];
use mnemo_tests::FACTS;
/// Batches of ten consolidate as the tenth message arrives, quiet
/// conversations after a second; a strict similarity threshold keeps the
/// ten facts apart (the lexical embedder sees "I love" in all of them).
const BATCHING: &str =
    "[consolidation.default]\nbatch_size = 10\nidle_timeout = 1\nsimilarity_threshold = 0.97\n";
/// How long anything may take on a loaded machine before the test fails.
const PATIENCE: Duration = Duration::from_secs(180);

/// The tests share the machine's two cores; one cluster at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

// ------------------------------------------------------------ binaries

/// The directory holding the four service binaries, built first.
fn service_binaries() -> PathBuf {
    let mut dir = None;
    for name in SERVICES {
        dir = mnemo_tests::binary(name).parent().map(Path::to_owned);
    }
    dir.expect("four services")
}

use mnemo_tests::free_port;

// ------------------------------------------------------------ qdrant

/// The Qdrant endpoint: `TEST_QDRANT_URL`, or the stand-in on a thread
/// (and runtime) of its own, so it keeps answering whatever the test's
/// runtime is doing. Dropping it stops the stand-in and removes its files.
struct Qdrant {
    url: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Qdrant {
    fn start() -> Qdrant {
        if let Ok(url) = std::env::var("TEST_QDRANT_URL") {
            return Qdrant {
                url,
                stop: None,
                thread: None,
            };
        }
        let (address_tx, address_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async move {
                let address = mnemo_vector_index::qdrant_standin::start().await;
                address_tx.send(address).unwrap();
                let _ = stopped.await;
            });
        });
        let address = address_rx.recv().expect("the stand-in starts");
        Qdrant {
            url: format!("http://{address}"),
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for Qdrant {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

// ------------------------------------------------------------ the cluster

/// One service process. Killed (SIGKILL) and reaped when dropped.
struct Service {
    name: String,
    port: u16,
    log: PathBuf,
    child: Child,
}

impl Service {
    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        self.kill();
    }
}

struct Cluster {
    // Field order is drop order: the processes go before what they use.
    services: Vec<Service>,
    /// Logs of services stopped during the test, for the failure report.
    past_logs: Vec<(String, PathBuf)>,
    env: Vec<(String, String)>,
    secret: String,
    client: Client,
    db: TestDatabase,
    admin: PgPool,
    _kafka: DevKafka,
    _qdrant: Qdrant,
    dir: tempfile::TempDir,
}

impl Cluster {
    /// PostgreSQL, Kafka and Qdrant, and the four services with
    /// `consolidators` consolidator processes, all ready.
    async fn start(config: &str, consolidators: usize) -> Cluster {
        Self::start_with(config, consolidators, &[]).await
    }

    /// [`Cluster::start`] with more settings for every service (e.g. an
    /// LLM for the consolidators).
    async fn start_with(config: &str, consolidators: usize, more: &[(&str, &str)]) -> Cluster {
        // Built (if need be) before anything else starts.
        service_binaries();
        let dir = tempfile::tempdir().unwrap();
        let config_file = dir.path().join("mnemo.toml");
        std::fs::write(&config_file, config).unwrap();
        let db = TestDatabase::new().await;
        let admin = db.raw_pool("postgres").await;
        let kafka = DevKafka::start(0, PARTITIONS).expect("the development kafka starts");
        let qdrant = Qdrant::start();
        let secret = uuid::Uuid::new_v4().simple().to_string() + "-scale-out-secret";
        let master_key = base64::engine::general_purpose::STANDARD.encode(rand_bytes());
        let prefix = format!("t{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
        let mut env = vec![
            (
                "MNEMO_DATABASE_URL".to_owned(),
                db.url_as(mnemo_pg::APP_ROLE),
            ),
            ("MNEMO_KAFKA_BROKERS".into(), kafka.bootstrap_servers()),
            ("MNEMO_KAFKA_PARTITIONS".into(), PARTITIONS.to_string()),
            ("MNEMO_QDRANT_URL".into(), qdrant.url.clone()),
            ("MNEMO_QDRANT_COLLECTION_PREFIX".into(), prefix),
            ("MNEMO_MASTER_KEY".into(), master_key),
            ("MNEMO_JWT_SECRET".into(), secret.clone()),
            ("MNEMO_EMBEDDER".into(), "lexical".into()),
            (
                "MNEMO_CONFIG".into(),
                config_file.to_str().unwrap().to_owned(),
            ),
            ("MNEMO_LOG".into(), "info".into()),
            ("MNEMO_LOG_FORMAT".into(), "text".into()),
        ];
        env.extend(more.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let mut cluster = Cluster {
            services: Vec::new(),
            past_logs: Vec::new(),
            env,
            secret,
            client: Client::builder()
                .timeout(Duration::from_secs(60))
                .build()
                .unwrap(),
            db,
            admin,
            _kafka: kafka,
            _qdrant: qdrant,
            dir,
        };
        cluster.spawn("mnemo-ingest", "ingest");
        cluster.spawn("mnemo-retriever", "retriever");
        cluster.spawn("mnemo-forgetter", "forgetter");
        for n in 1..=consolidators {
            cluster.spawn("mnemo-consolidator", &format!("consolidator-{n}"));
        }
        for n in 0..cluster.services.len() {
            cluster.wait_ready(n).await;
        }
        cluster
    }

    /// Starts `binary` as service `name` (not waiting for it).
    fn spawn(&mut self, binary: &str, name: &str) {
        let port = free_port();
        let data_dir = self.dir.path().join(name);
        let attempt = self
            .past_logs
            .iter()
            .filter(|(past, _)| past == name)
            .count();
        let log = self.dir.path().join(format!("{name}.{attempt}.log"));
        let mut command = Command::new(service_binaries().join(binary));
        // Nothing of the developer's own MNEMO_* settings leaks in.
        for (key, _) in std::env::vars() {
            if key.starts_with("MNEMO_") {
                command.env_remove(key);
            }
        }
        command
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .env("MNEMO_LISTEN", format!("127.0.0.1:{port}"))
            .env("MNEMO_DATA_DIR", &data_dir)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(
                std::fs::File::create(self.dir.path().join(format!("{name}.{attempt}.out")))
                    .unwrap(),
            )
            .stderr(std::fs::File::create(&log).unwrap());
        let child = command
            .spawn()
            .unwrap_or_else(|e| panic!("{binary} starts: {e}"));
        self.services.push(Service {
            name: name.to_owned(),
            port,
            log,
            child,
        });
    }

    fn index(&self, name: &str) -> usize {
        self.services
            .iter()
            .position(|s| s.name == name)
            .unwrap_or_else(|| panic!("no service {name}"))
    }

    fn service(&self, name: &str) -> &Service {
        &self.services[self.index(name)]
    }

    async fn wait_ready(&mut self, n: usize) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let service = &mut self.services[n];
            if let Some(status) = service.child.try_wait().unwrap() {
                panic!("{} exited before it was ready: {status}", service.name);
            }
            if let Ok(response) = self.client.get(service.url("/readyz")).send().await {
                if response.status() == StatusCode::OK {
                    return;
                }
            }
            assert!(
                Instant::now() < deadline,
                "{} never became ready",
                service.name
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// SIGKILL: no shutdown, no last commit.
    fn kill(&mut self, name: &str) {
        let n = self.index(name);
        let mut service = self.services.remove(n);
        service.kill();
        self.past_logs
            .push((service.name.clone(), service.log.clone()));
    }

    async fn restart(&mut self, binary: &str, name: &str) {
        self.spawn(binary, name);
        let n = self.index(name);
        self.wait_ready(n).await;
    }

    fn token(&self) -> String {
        Minter::hs256(self.secret.as_bytes(), "mnemo", "mnemo")
            .mint(&MintRequest {
                tenant: TenantId::parse(TENANT).unwrap(),
                actor: "scale-out-test".into(),
                scopes: Scope::ALL.to_vec(),
                subject: None,
                ttl: Duration::from_secs(3600),
            })
            .unwrap()
    }

    async fn call(
        &self,
        service: &str,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut request = self
            .client
            .request(method, self.service(service).url(path))
            .bearer_auth(self.token());
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request
            .send()
            .await
            .unwrap_or_else(|e| panic!("{service} {path}: {e}"));
        let status = response.status();
        let text = response.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    /// Posts user messages to ingest; returns their event ids.
    async fn post_messages(&self, subject: &str, session: &str, lines: &[&str]) -> Vec<String> {
        self.post_messages_from(subject, session, lines, 0).await
    }

    /// Posts user messages numbered from `first` (the number makes the
    /// client's message id, which ingest deduplicates on).
    async fn post_messages_from(
        &self,
        subject: &str,
        session: &str,
        lines: &[&str],
        first: usize,
    ) -> Vec<String> {
        let messages: Vec<Value> = lines
            .iter()
            .enumerate()
            .map(|(i, line)| json!({"role": "user", "content": line, "id": format!("{session}-m{}", first + i), "session": session}))
            .collect();
        let (status, body) = self
            .call(
                "ingest",
                Method::POST,
                &format!("/v1/subjects/{subject}/messages"),
                Some(json!({ "messages": messages })),
            )
            .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
        body["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["event_id"].as_str().unwrap().to_owned())
            .collect()
    }

    /// Erases a subject: asked of ingest, carried out by the forgetter, the
    /// completed receipt read from the retriever.
    async fn erase(&self, subject: &str) -> Value {
        let (status, accepted) = self
            .call(
                "ingest",
                Method::DELETE,
                &format!("/v1/subjects/{subject}"),
                None,
            )
            .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{accepted}");
        let id = accepted["erasure_id"].as_str().unwrap().to_owned();
        poll("the erasure receipt", async || {
            let (status, body) = self
                .call(
                    "retriever",
                    Method::GET,
                    &format!("/v1/erasures/{id}"),
                    None,
                )
                .await;
            assert_eq!(status, StatusCode::OK, "{body}");
            (body["status"] == "completed").then_some(body)
        })
        .await
    }

    /// A subject's memories in every state, through the retriever.
    async fn memories(&self, subject: &str) -> Vec<Value> {
        let (status, body) = self
            .call(
                "retriever",
                Method::GET,
                &format!("/v1/subjects/{subject}/memories?limit=500&state=active,archived,superseded,pending_review"),
                None,
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body["memories"].as_array().unwrap().clone()
    }

    /// `MemoryCreated` events per subject in the log, read as the
    /// superuser (row-level security hides rows from every other role
    /// without a tenant).
    async fn created_per_subject(&self) -> BTreeMap<String, i64> {
        sqlx::query_as::<_, (String, i64)>(
            "SELECT subject_id, COUNT(*) FROM events WHERE event_type = 'MemoryCreated' \
             GROUP BY subject_id",
        )
        .fetch_all(&self.admin)
        .await
        .unwrap()
        .into_iter()
        .collect()
    }

    /// Messages the consolidators have buffered and not consolidated yet.
    async fn waiting_messages(&self) -> i64 {
        sqlx::query_scalar("SELECT COUNT(*) FROM consolidation_buffer WHERE NOT done")
            .fetch_one(&self.admin)
            .await
            .unwrap()
    }

    /// The Kafka partitions of `mnemo.messages` a consolidator process
    /// consolidated conversations from, read from its log: the consumer's
    /// span names the record's partition, and the sweeper (which is not a
    /// consumer) logs outside any such span.
    fn consolidated_partitions(log: &str) -> BTreeSet<u32> {
        log.lines()
            .filter(|line| line.contains("conversation consolidated") && line.contains("consume{"))
            .filter_map(|line| {
                let rest = &line[line.find("partition=")? + "partition=".len()..];
                let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                digits.parse().ok()
            })
            .collect()
    }

    fn partitions_of(&self, name: &str) -> BTreeSet<u32> {
        let mut text = String::new();
        for (past, log) in &self.past_logs {
            if past == name {
                text += &std::fs::read_to_string(log).unwrap_or_default();
            }
        }
        if let Some(service) = self.services.iter().find(|s| s.name == name) {
            text += &service.log_text();
        }
        Self::consolidated_partitions(&text)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Stop every process first, then tell what they said if the test failed.
        for service in &mut self.services {
            service.kill();
        }
        if std::thread::panicking() {
            let mut logs: Vec<(String, PathBuf)> = self.past_logs.clone();
            logs.extend(
                self.services
                    .iter()
                    .map(|s| (s.name.clone(), s.log.clone())),
            );
            for (name, log) in logs {
                let text = std::fs::read_to_string(&log).unwrap_or_default();
                let lines: Vec<&str> = text.lines().collect();
                let tail = &lines[lines.len().saturating_sub(150)..];
                eprintln!(
                    "----- {name} ({}; last {} of {} lines) -----\n{}",
                    log.display(),
                    tail.len(),
                    lines.len(),
                    tail.join("\n")
                );
            }
            eprintln!("----- database {} -----", self.db.name());
        }
    }
}

fn rand_bytes() -> [u8; 32] {
    let mut key = [0u8; 32];
    key[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    key[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    key
}

async fn poll<T>(what: &str, mut probe: impl AsyncFnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(value) = probe().await {
            return value;
        }
        assert!(Instant::now() < deadline, "{what} never happened");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn contents(memories: &[Value]) -> Vec<String> {
    let mut texts: Vec<String> = memories
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default().to_lowercase())
        .collect();
    texts.sort();
    texts
}

/// Posts every subject's ten facts in one request each.
async fn post_facts(cluster: &Cluster, subjects: &[String]) {
    let lines: Vec<String> = FACTS.iter().map(|f| format!("{f}.")).collect();
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    for subject in subjects {
        cluster.post_messages(subject, "s1", &lines).await;
    }
}

/// Waits until nothing waits to be consolidated and every subject has its
/// ten memories, then asserts each exists exactly once: one `MemoryCreated`
/// per fact in the log, ten different memories through the retriever.
async fn assert_each_fact_exactly_once(cluster: &Cluster, subjects: &[String]) {
    let expected = FACTS.len() as i64;
    poll("consolidation of every subject", async || {
        let created = cluster.created_per_subject().await;
        let done = cluster.waiting_messages().await == 0
            && subjects
                .iter()
                .all(|s| created.get(s).copied().unwrap_or(0) >= expected);
        done.then_some(())
    })
    .await;
    let created = cluster.created_per_subject().await;
    for subject in subjects {
        assert_eq!(
            created.get(subject).copied(),
            Some(expected),
            "{subject}: one MemoryCreated per fact in the log ({created:?})"
        );
    }
    assert_eq!(
        created.values().sum::<i64>(),
        expected * subjects.len() as i64,
        "no memory of any other subject: {created:?}"
    );
    for subject in subjects {
        // The retriever's projection follows the log over Kafka.
        let memories = poll(
            &format!("{subject}'s ten memories in the retriever"),
            async || {
                let memories = cluster.memories(subject).await;
                (memories.len() >= FACTS.len()).then_some(memories)
            },
        )
        .await;
        let mut texts = contents(&memories);
        assert_eq!(memories.len(), FACTS.len(), "{subject}: {texts:?}");
        texts.dedup();
        assert_eq!(
            texts.len(),
            FACTS.len(),
            "{subject}: duplicated memories {texts:?}"
        );
        for fact in FACTS {
            let wanted = fact.trim_start_matches("I love ").to_lowercase();
            assert!(
                texts.iter().any(|t| t.contains(&wanted)),
                "{subject}: {wanted} missing from {texts:?}"
            );
        }
    }
}

// ------------------------------------------------------------ tests

/// The erasure canary scan: PostgreSQL's files and every bus record.
#[path = "scale_out/canary.rs"]
mod canary;

/// A conversation posted to ingest becomes memories the retriever serves,
/// with provenance, through Kafka, PostgreSQL and Qdrant; erasure asked of
/// ingest completes through the forgetter and its receipt is read from the
/// retriever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_becomes_searchable_memories_across_the_services_and_erasure_completes() {
    let _serial = SERIAL.lock().await;
    // No batch fills up and no conversation goes idle within the test:
    // memories appear only through the consolidation request.
    let cluster = Cluster::start(
        "[consolidation.default]\nbatch_size = 50\nidle_timeout = 3600\nend_earlier_sessions = false\n",
        1,
    )
    .await;
    let posted = cluster
        .post_messages(
            "alice",
            "s1",
            &[
                "Hello!",
                "I live in Lyon with my two cats.",
                "I love green tea in the morning.",
                "ok, thanks",
                "We decided to move the launch to March.",
            ],
        )
        .await;
    let posted: BTreeSet<String> = posted.into_iter().collect();
    let (status, body) = cluster
        .call(
            "ingest",
            Method::POST,
            "/v1/subjects/alice/consolidate",
            None,
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");

    let memories = poll("alice's memories in the retriever", async || {
        let memories = cluster.memories("alice").await;
        (memories.len() >= 3).then_some(memories)
    })
    .await;
    let texts = contents(&memories).join(" | ");
    for expected in ["lyon", "green tea", "launch"] {
        assert!(texts.contains(expected), "{expected} missing from {texts}");
    }
    for memory in &memories {
        assert_eq!(
            memory["provenance"]["producer"]["strategy"], "rules",
            "{memory}"
        );
        let sources = memory["provenance"]["source_event_ids"].as_array().unwrap();
        assert!(!sources.is_empty(), "{memory}");
        assert!(
            sources.iter().all(|s| posted.contains(s.as_str().unwrap())),
            "provenance points at the posted messages: {memory}"
        );
    }

    // Search goes through the Qdrant endpoint.
    let (status, found) = cluster
        .call(
            "retriever",
            Method::POST,
            "/v1/subjects/alice/search",
            Some(json!({"query": "green tea", "k": 3})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{found}");
    let top = &found["results"][0]["memory"];
    assert!(
        top["content"]
            .as_str()
            .unwrap()
            .to_lowercase()
            .contains("green tea"),
        "{found}"
    );
    assert!(top["provenance"]["source_event_ids"]
        .as_array()
        .is_some_and(|s| !s.is_empty()));

    // The log in PostgreSQL holds them, sealed.
    let created = cluster.created_per_subject().await;
    assert_eq!(
        created.get("alice").copied(),
        Some(memories.len() as i64),
        "{created:?}"
    );
    let payloads: Vec<String> =
        sqlx::query_scalar("SELECT payload::text FROM events WHERE event_type = 'MemoryCreated'")
            .fetch_all(&cluster.admin)
            .await
            .unwrap();
    assert!(payloads.iter().all(|p| !p.contains("Lyon")), "{payloads:?}");

    // Erasure: asked of ingest, carried out by the forgetter, the receipt
    // read from the retriever.
    let receipt = cluster.erase("alice").await;
    let receipt_text = receipt.to_string();
    for store in ["vector_index", "memory_read_model", "pipeline_state"] {
        assert!(
            receipt_text.contains(store),
            "{store} missing from {receipt}"
        );
    }
    let left = poll("alice's memories gone from the retriever", async || {
        let memories = cluster.memories("alice").await;
        memories.is_empty().then_some(memories)
    })
    .await;
    assert!(left.is_empty());
    let (status, found) = cluster
        .call(
            "retriever",
            Method::POST,
            "/v1/subjects/alice/search",
            Some(json!({"query": "green tea", "k": 3})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{found}");
    assert_eq!(
        found["results"].as_array().map(Vec::len),
        Some(0),
        "{found}"
    );
    let keys: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM subject_keys")
        .fetch_one(&cluster.admin)
        .await
        .unwrap();
    assert_eq!(keys, 0, "the subject's key is destroyed");
}

/// Two consolidator processes in one consumer group share the partitions
/// of `mnemo.messages`; every fact of every subject becomes exactly one
/// memory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_consolidators_share_the_partitions_and_create_each_memory_once() {
    let _serial = SERIAL.lock().await;
    let cluster = Cluster::start(BATCHING, 2).await;
    let mut subjects: Vec<String> = (0..12).map(|n| format!("subject-{n}")).collect();
    post_facts(&cluster, &subjects).await;
    assert_each_fact_exactly_once(&cluster, &subjects).await;

    // Both processes consolidated records of the partitions they were
    // assigned. A consolidator that joins the group late may find the
    // first load handled already: more conversations then, until both
    // have had a share (with twelve subjects over four partitions this
    // rarely takes another round).
    let mut round = 0;
    loop {
        let one = cluster.partitions_of("consolidator-1");
        let two = cluster.partitions_of("consolidator-2");
        if !one.is_empty() && !two.is_empty() {
            eprintln!("consolidator-1 handled partitions {one:?}, consolidator-2 {two:?}");
            break;
        }
        round += 1;
        assert!(
            round <= 5,
            "one consolidator never got a partition's work: {one:?} / {two:?}"
        );
        let more: Vec<String> = (0..8).map(|n| format!("more-{round}-{n}")).collect();
        post_facts(&cluster, &more).await;
        subjects.extend(more);
        assert_each_fact_exactly_once(&cluster, &subjects).await;
    }
}

/// A consolidator killed with SIGKILL in the middle of the backlog and
/// started again loses and duplicates nothing: its uncommitted records are
/// redelivered (to the other member, then to it), and consolidation is
/// idempotent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consolidator_killed_mid_backlog_loses_and_duplicates_nothing() {
    let _serial = SERIAL.lock().await;
    let mut cluster = Cluster::start(BATCHING, 2).await;
    let subjects: Vec<String> = (0..30).map(|n| format!("subject-{n}")).collect();
    post_facts(&cluster, &subjects).await;

    // Kill a consolidator that is demonstrably at work (it has logged a
    // consolidation from its partitions) while most of the backlog waits.
    let total = (subjects.len() * FACTS.len()) as i64;
    let victim = poll("a consolidator at work", async || {
        ["consolidator-1", "consolidator-2"]
            .into_iter()
            .find(|name| !cluster.partitions_of(name).is_empty())
    })
    .await;
    cluster.kill(victim);
    let at_kill: i64 = cluster.created_per_subject().await.values().sum();
    eprintln!("killed {victim} with {at_kill} of {total} memories created");
    assert!(
        at_kill < total,
        "the kill came after consolidation finished ({at_kill} memories): nothing was tested"
    );

    cluster.restart("mnemo-consolidator", victim).await;
    assert_each_fact_exactly_once(&cluster, &subjects).await;
}

/// Two consolidators never consolidate one conversation at once. Every
/// consolidator's idle sweeper sees every conversation in the shared
/// buffer; here each conversation goes quiet after five messages and gets
/// its other five about when a sweeper takes it up, so a consumer in the
/// other process may drain it at the same moment. Drained twice, with the
/// waiting messages batched differently, its memories were created twice.
/// A race, so a probabilistic guard: without the cross-process claim on the
/// conversation (`MessageBuffer::claim`) it failed in about half of the runs
/// on a two-core machine, not in every one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_swept_and_filled_at_once_is_consolidated_once() {
    let _serial = SERIAL.lock().await;
    let cluster = Cluster::start(BATCHING, 2).await;
    let subjects: Vec<String> = (0..40).map(|n| format!("subject-{n}")).collect();
    let halves: Vec<Vec<String>> = [&FACTS[..5], &FACTS[5..]]
        .iter()
        .map(|half| half.iter().map(|f| format!("{f}.")).collect())
        .collect();
    let lines = |half: usize| -> Vec<&str> { halves[half].iter().map(String::as_str).collect() };
    let mut first_posted = Vec::new();
    for subject in &subjects {
        cluster.post_messages(subject, "s1", &lines(0)).await;
        first_posted.push(Instant::now());
    }
    // A conversation is idle one second after its last message, and the
    // sweepers look every quarter second (and take the idle ones one after
    // another): the second halves arrive spread over that time (the sleeps shape the load; nothing waits on them).
    let mut schedule: Vec<(Instant, &String)> = subjects
        .iter()
        .zip(&first_posted)
        .enumerate()
        .map(|(n, (subject, at))| {
            (
                *at + Duration::from_millis(950 + 50 * (n as u64 % 8)),
                subject,
            )
        })
        .collect();
    schedule.sort();
    for (at, subject) in schedule {
        tokio::time::sleep_until(at.into()).await;
        cluster
            .post_messages_from(subject, "s1", &lines(1), halves[0].len())
            .await;
    }
    assert_each_fact_exactly_once(&cluster, &subjects).await;
}

/// Without a Qdrant server each vector service keeps a qdrant-edge
/// collection in its data dir, which one process at a time may open: a
/// second one on the same data dir is refused, and the refusal names
/// itself, the holder and what to do. Ingest opens no collection, so over
/// PostgreSQL and Kafka it keeps nothing there and starts beside them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_qdrant_a_second_vector_service_on_a_data_dir_is_refused_naming_both() {
    let _serial = SERIAL.lock().await;
    let binaries = service_binaries();
    let db = TestDatabase::new().await;
    let kafka = DevKafka::start(0, 1).expect("the development kafka starts");
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("shared-data");
    let env = [
        ("MNEMO_DATABASE_URL", db.url_as(mnemo_pg::APP_ROLE)),
        ("MNEMO_KAFKA_BROKERS", kafka.bootstrap_servers()),
        ("MNEMO_KAFKA_PARTITIONS", "1".to_owned()),
        (
            "MNEMO_MASTER_KEY",
            base64::engine::general_purpose::STANDARD.encode(rand_bytes()),
        ),
        (
            "MNEMO_JWT_SECRET",
            "a-secret-of-at-least-32-bytes-for-the-refusal-test".to_owned(),
        ),
        ("MNEMO_EMBEDDER", "lexical".to_owned()),
        ("MNEMO_DATA_DIR", data_dir.to_str().unwrap().to_owned()),
        ("NO_COLOR", "1".to_owned()),
    ];
    let start = |binary: &str| {
        let port = free_port();
        let log = dir.path().join(format!("{binary}.log"));
        let mut command = Command::new(binaries.join(binary));
        for (key, _) in std::env::vars() {
            if key.starts_with("MNEMO_") {
                command.env_remove(key);
            }
        }
        let child = command
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .env("MNEMO_LISTEN", format!("127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        Service {
            name: binary.to_owned(),
            port,
            log,
            child,
        }
    };
    let client = Client::new();
    let ready = async |service: &mut Service| {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = service.child.try_wait().unwrap() {
                panic!("{} exited: {status}\n{}", service.name, service.log_text());
            }
            if let Ok(response) = client.get(service.url("/readyz")).send().await {
                if response.status() == StatusCode::OK {
                    return;
                }
            }
            assert!(
                Instant::now() < deadline,
                "{} never became ready",
                service.name
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };

    let mut consolidator = start("mnemo-consolidator");
    ready(&mut consolidator).await;
    let mut retriever = start("mnemo-retriever");
    let deadline = Instant::now() + PATIENCE;
    let status = loop {
        if let Some(status) = retriever.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "mnemo-retriever runs beside mnemo-consolidator on one data dir without Qdrant"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(!status.success());
    let error = retriever.log_text();
    for expected in [
        format!(
            "mnemo-retriever cannot use the data dir {}",
            data_dir.display()
        ),
        format!(
            "mnemo-consolidator (pid {}) is running on it",
            consolidator.child.id()
        ),
        "its qdrant-edge vector index".to_owned(),
        "Set MNEMO_QDRANT_URL".to_owned(),
        "`mnemo serve`".to_owned(),
    ] {
        assert!(
            error.contains(&expected),
            "{expected:?} missing from:\n{error}"
        );
    }

    let mut ingest = start("mnemo-ingest");
    ready(&mut ingest).await;
    // The consolidator still holds the data dir, unharmed.
    assert!(consolidator.child.try_wait().unwrap().is_none());
}
