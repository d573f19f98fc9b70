//! The erasure canary scan through the scale-out deployment (the embedded
//! one is `tests/api/canary.rs`): canaries in content, a given tag, a tag
//! derived from content, a session id, a message id (an e-mail address)
//! and `X-Request-Id` go through ingest, the consolidator process (the
//! rules, or an LLM), a direct write, the retriever's filtered search and
//! an erasure carried out by the forgetter. Then, with no regard to ASCII
//! case:
//!
//! - (a) every relation file of the test database, after `CHECKPOINT`,
//! - (b) every record of every topic on the Kafka mock cluster, from the
//!   beginning: its key, payload and header bytes,
//! - (c) `mnemo verify-erasure` run against the cluster's stores,
//!
//! find nothing. Then each proves it finds what is there: a canary planted
//! in a table of the test database and in a record's key, payload and
//! header is found by (a) and (b) where it was planted, and (c) reports it.

use std::collections::BTreeMap;
use std::time::Duration;

use mnemo_llm::testsupport::MockLlmServer;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Headers;
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};

use super::*;

const SUBJECT: &str = "canary-subject";

/// Distinct strings none of which the rules, the tokenizers or the
/// services could produce by themselves (and none a name id would refuse:
/// tags and sessions are ids). The message id is an e-mail address, which
/// a name id refuses; `X-Request-Id` is not a UUID, so the services must
/// not keep it.
struct Canaries {
    content: &'static str,
    tag: &'static str,
    session: &'static str,
    message_id: &'static str,
    request_id: &'static str,
    llm_tag: &'static str,
}

const CANARIES: Canaries = Canaries {
    content: "Zsocontentdrug",
    tag: "zso-tag-8841",
    session: "zso-session-2267",
    message_id: "Zso.Jane.Roe@example.com",
    request_id: "zso-request-5093",
    llm_tag: "zso-llmtag-1178",
};

/// Planted where no subject data is, to prove the scans find a canary.
const PLANTED: &str = "zso-planted-6612";

impl Canaries {
    fn all(&self) -> Vec<&'static str> {
        vec![
            self.content,
            self.tag,
            self.session,
            self.message_id,
            self.request_id,
            self.llm_tag,
        ]
    }
}

// ------------------------------------------------------------ the scans

/// Per canary (in the order given), how often it occurs in `bytes`,
/// ASCII letters in any case; only the canaries that occur.
fn find(bytes: &[u8], canaries: &[&str]) -> Vec<(String, usize)> {
    let bytes = bytes.to_ascii_lowercase();
    canaries
        .iter()
        .filter_map(|canary| {
            let needle = canary.to_ascii_lowercase();
            let n = memchr::memmem::find_iter(&bytes, needle.as_bytes()).count();
            (n > 0).then(|| ((*canary).to_owned(), n))
        })
        .collect()
}

/// PostgreSQL's data directory and the test database's directory in it
/// (`base/<oid>`), when this process can read them (a local server, tests
/// run as its owner or root); else None, as `tests/api/verify_erasure.rs`
/// decides.
async fn database_directory(admin: &PgPool) -> Option<(PathBuf, PathBuf)> {
    let data: String = sqlx::query_scalar("SHOW data_directory")
        .fetch_one(admin)
        .await
        .ok()?;
    let oid: i64 = sqlx::query_scalar(
        "SELECT oid::bigint FROM pg_database WHERE datname = current_database()",
    )
    .fetch_one(admin)
    .await
    .unwrap();
    let data = PathBuf::from(data);
    let dir = data.join("base").join(oid.to_string());
    std::fs::read_dir(&dir).ok().map(|_| (data, dir))
}

/// What (a) read: every file of the test database's directory.
struct FileScan {
    files: Vec<PathBuf>,
    bytes: u64,
    /// (file relative to the data directory, canary, occurrences).
    hits: Vec<(String, String, usize)>,
}

/// (a): `CHECKPOINT` (every changed page to its relation file), then every
/// file of the test database: each relation's main fork, its segments and
/// other forks, TOAST tables and indexes alike. Checks that the scan
/// covered the main fork of every relation of the database
/// (`pg_relation_filepath`), so a file that moved elsewhere fails the test.
async fn scan_database_files(
    admin: &PgPool,
    data: &Path,
    dir: &Path,
    canaries: &[&str],
) -> FileScan {
    sqlx::query("CHECKPOINT").execute(admin).await.unwrap();
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    let relations: Vec<(String, String)> = sqlx::query_as(
        "SELECT c.relname::text, pg_relation_filepath(c.oid) FROM pg_class c \
         WHERE pg_relation_filepath(c.oid) IS NOT NULL AND c.reltablespace = 0 \
         AND c.relpersistence <> 't'",
    )
    .fetch_all(admin)
    .await
    .unwrap();
    assert!(
        relations.iter().any(|(name, _)| name == "events"),
        "the log is one of the relations: {relations:?}"
    );
    for (name, path) in &relations {
        let path = data.join(path);
        assert!(
            files.contains(&path),
            "{name}'s file {} is not among the scanned files",
            path.display()
        );
    }
    let mut scan = FileScan {
        files: files.clone(),
        bytes: 0,
        hits: Vec::new(),
    };
    for file in &files {
        // A relation dropped meanwhile (the services' own temporary
        // tables) takes its file with it.
        let Ok(bytes) = std::fs::read(file) else {
            continue;
        };
        scan.bytes += bytes.len() as u64;
        let name = file.strip_prefix(data).unwrap().display().to_string();
        for (canary, n) in find(&bytes, canaries) {
            scan.hits.push((name.clone(), canary, n));
        }
    }
    scan
}

/// One record of the bus, as the broker holds it.
struct RawRecord {
    topic: String,
    partition: i32,
    offset: i64,
    key: Vec<u8>,
    payload: Vec<u8>,
    headers: Vec<(Vec<u8>, Vec<u8>)>,
}

/// (b): every record of every topic of the cluster, from the low
/// watermark of each partition to its high watermark as they were when
/// the read began: the partitions are assigned directly (no group, no
/// committed offset), so nothing is skipped and the read ends when every
/// partition is read to its end.
fn read_every_record(brokers: &str) -> Vec<RawRecord> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("group.id", format!("canary-scan-{}", uuid::Uuid::new_v4()))
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "false")
        .create()
        .expect("a consumer of the mock cluster");
    let timeout = Duration::from_secs(10);
    let metadata = consumer
        .fetch_metadata(None, timeout)
        .expect("the cluster's metadata");
    let mut assignment = TopicPartitionList::new();
    let mut ends: BTreeMap<(String, i32), i64> = BTreeMap::new();
    for topic in metadata.topics() {
        for partition in topic.partitions() {
            let (low, high) = consumer
                .fetch_watermarks(topic.name(), partition.id(), timeout)
                .expect("a partition's watermarks");
            if high > low {
                assignment
                    .add_partition_offset(topic.name(), partition.id(), Offset::Offset(low))
                    .unwrap();
                ends.insert((topic.name().to_owned(), partition.id()), high);
            }
        }
    }
    assert!(
        metadata
            .topics()
            .iter()
            .any(|t| t.name() == mnemo_bus::topics::MESSAGES),
        "the mnemo topics are there"
    );
    consumer.assign(&assignment).unwrap();
    let mut records = Vec::new();
    let deadline = Instant::now() + PATIENCE;
    let mut left = ends.clone();
    while !left.is_empty() {
        assert!(
            Instant::now() < deadline,
            "partitions never read to their end: {left:?}"
        );
        let Some(message) = consumer.poll(Duration::from_millis(500)) else {
            continue;
        };
        let message = message.expect("a record");
        let at = (message.topic().to_owned(), message.partition());
        let Some(end) = ends.get(&at) else {
            continue;
        };
        if message.offset() >= *end {
            continue;
        }
        if message.offset() + 1 >= *end {
            left.remove(&at);
        }
        records.push(RawRecord {
            topic: at.0,
            partition: at.1,
            offset: message.offset(),
            key: message.key().unwrap_or_default().to_vec(),
            payload: message.payload().unwrap_or_default().to_vec(),
            headers: message
                .headers()
                .map(|headers| {
                    headers
                        .iter()
                        .map(|h| {
                            (
                                h.key.as_bytes().to_vec(),
                                h.value.unwrap_or_default().to_vec(),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default(),
        });
    }
    records
}

/// Every (record, part, canary) where the part's bytes hold the canary:
/// `topic/partition@offset`, `key`, `payload` or `header <name>`.
fn scan_records(records: &[RawRecord], canaries: &[&str]) -> Vec<(String, String, String)> {
    let mut hits = Vec::new();
    for record in records {
        let at = format!("{}/{}@{}", record.topic, record.partition, record.offset);
        let mut parts: Vec<(String, &[u8])> = vec![
            ("key".to_owned(), &record.key),
            ("payload".to_owned(), &record.payload),
        ];
        for (name, value) in &record.headers {
            let label = format!("header {}", String::from_utf8_lossy(name));
            parts.push((label.clone() + " (name)", name));
            parts.push((label, value));
        }
        for (part, bytes) in parts {
            for (canary, _) in find(bytes, canaries) {
                hits.push((at.clone(), part.clone(), canary));
            }
        }
    }
    hits
}

/// (c): `mnemo verify-erasure --json` with the services' settings; returns
/// its exit code and report.
fn verify_erasure(cluster: &Cluster, canaries: &[&str], pg_data: Option<&Path>) -> (i32, Value) {
    let mut command = Command::new(mnemo_tests::binary("mnemo"));
    for (key, _) in std::env::vars() {
        if key.starts_with("MNEMO_") {
            command.env_remove(key);
        }
    }
    command
        .envs(cluster.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        // The superuser as the owner's login: it may CHECKPOINT first.
        .env("MNEMO_DATABASE_OWNER_URL", cluster.db.url_as("postgres"))
        .env("MNEMO_LOG", "warn")
        .args([
            "verify-erasure",
            "--json",
            "--tenant",
            TENANT,
            "--subject",
            SUBJECT,
        ])
        // The services' data dirs, logs and settings: scanned too.
        .arg("--data-dir")
        .arg(cluster.dir.path());
    for canary in canaries {
        command.args(["--canary", canary]);
    }
    if let Some(dir) = pg_data {
        command.arg("--pg-data-dir").arg(dir);
    }
    let output = command.output().expect("mnemo verify-erasure runs");
    let stdout = String::from_utf8(output.stdout).unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    for printed in [&stdout, &stderr] {
        for canary in canaries {
            assert!(
                !printed.to_lowercase().contains(&canary.to_lowercase()),
                "verify-erasure printed a canary:\n{printed}"
            );
        }
    }
    let report: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("{e}: stdout:\n{stdout}\nstderr:\n{stderr}"));
    (output.status.code().expect("an exit code"), report)
}

fn report_check<'a>(report: &'a Value, store: &str, check: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["store"] == store && c["check"] == check)
        .unwrap_or_else(|| panic!("no check {store} / {check}: {report:#}"))
}

// ------------------------------------------------------------ the run

/// Posts the canaries every way a client can, consolidates, writes a
/// memory directly and searches with the tag and session filters.
async fn use_the_canaries(cluster: &Cluster) {
    let c = &CANARIES;
    let posted = cluster
        .client
        .post(
            cluster
                .service("ingest")
                .url(&format!("/v1/subjects/{SUBJECT}/messages")),
        )
        .bearer_auth(cluster.token())
        .header("x-request-id", c.request_id)
        .json(&json!({"messages": [
            {"role": "user", "content": format!("I am allergic to {}", c.content),
             "id": c.message_id, "session": c.session},
            {"role": "user", "content": "I work as a carpenter in Lisbon", "session": c.session},
        ]}))
        .send()
        .await
        .unwrap();
    assert_eq!(posted.status(), StatusCode::ACCEPTED);
    let posted: Value = posted.json().await.unwrap();
    assert_eq!(posted["accepted"], 2, "{posted}");
    let (status, body) = cluster
        .call(
            "ingest",
            Method::POST,
            &format!("/v1/subjects/{SUBJECT}/consolidate"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    // The message id names a source: ingest finds the message by its token.
    let (status, body) = cluster
        .call(
            "ingest",
            Method::POST,
            &format!("/v1/subjects/{SUBJECT}/memories"),
            Some(
                json!({"content": format!("Takes {} daily", c.content), "kind": "fact",
                        "tags": [c.tag], "session": c.session, "sources": [c.message_id]}),
            ),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");

    // The direct memory and at least one the consolidator made.
    let memories = poll("the subject's memories in the retriever", async || {
        let memories = cluster.memories(SUBJECT).await;
        (memories.len() >= 2).then_some(memories)
    })
    .await;
    let tags: Vec<String> = memories
        .iter()
        .flat_map(|m| m["tags"].as_array().cloned().unwrap_or_default())
        .filter_map(|t| t.as_str().map(str::to_lowercase))
        .collect();
    assert!(
        tags.iter()
            .any(|t| t.contains(&c.content.to_lowercase()) || t == c.llm_tag),
        "a tag derived from the content (else the scan misses that case): {tags:?}"
    );

    // The filters work on tokens, through Qdrant: the direct memory is found
    // by its tag and session, and a wrong tag finds nothing.
    let filtered = json!({"query": "daily", "filters": {"tags": [c.tag], "session": c.session}});
    let found = poll(
        "the direct memory found by its tag and session",
        async || {
            let (status, found) = cluster
                .call(
                    "retriever",
                    Method::POST,
                    &format!("/v1/subjects/{SUBJECT}/search"),
                    Some(filtered.clone()),
                )
                .await;
            assert_eq!(status, StatusCode::OK, "{found}");
            (!found["results"].as_array().unwrap().is_empty()).then_some(found)
        },
    )
    .await;
    let results = found["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{found}");
    assert!(results[0]["memory"]["content"]
        .as_str()
        .unwrap()
        .contains(c.content));
    let (status, none) = cluster
        .call(
            "retriever",
            Method::POST,
            &format!("/v1/subjects/{SUBJECT}/search"),
            Some(json!({"query": "daily", "filters": {"tags": ["other"]}})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{none}");
    assert!(none["results"].as_array().unwrap().is_empty(), "{none}");

    // The search's access signal (the one search that found something) is
    // counted by the forgetter before the erasure is asked for: the
    // signals and the erasure travel on different topics, and a signal
    // handled after the erasure writes the subject's usage row again (no
    // content in it, but verify-erasure rightly finds it). That race is not
    // what this test is about.
    poll("the search's access signal counted", async || {
        let rows: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM memory_usage WHERE subject_id = $1")
                .bind(SUBJECT)
                .fetch_one(&cluster.admin)
                .await
                .unwrap();
        (rows > 0).then_some(())
    })
    .await;
}

async fn erase_and_scan(cluster: &Cluster) {
    let started = Instant::now();
    let receipt = cluster.erase(SUBJECT).await;
    let stores: Vec<&str> = receipt["receipt"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["store"].as_str().unwrap())
        .collect();
    assert!(
        stores.contains(&"vector_index") && stores.contains(&"memory_read_model"),
        "{receipt}"
    );
    let canaries = CANARIES.all();
    let brokers = cluster
        .env
        .iter()
        .find(|(k, _)| k == "MNEMO_KAFKA_BROKERS")
        .map(|(_, v)| v.clone())
        .unwrap();

    // (a) The test database's files.
    let directories = database_directory(&cluster.admin).await;
    match &directories {
        Some((data, dir)) => {
            let scan = scan_database_files(&cluster.admin, data, dir, &canaries).await;
            eprintln!(
                "(a) {} file(s), {} byte(s) of {}",
                scan.files.len(),
                scan.bytes,
                dir.display()
            );
            assert!(
                scan.hits.is_empty(),
                "left in PostgreSQL's files: {:?}",
                scan.hits
            );
        }
        None => eprintln!(
            "(a) skipped: PostgreSQL's data directory cannot be read by this user \
             (run the tests as its owner or root)"
        ),
    }

    // (b) Every record on the bus.
    let read = brokers.clone();
    let records = tokio::task::spawn_blocking(move || read_every_record(&read))
        .await
        .unwrap();
    let key = format!("{TENANT}/{SUBJECT}");
    let topics: BTreeSet<&str> = records
        .iter()
        .filter(|r| r.key == key.as_bytes())
        .map(|r| r.topic.as_str())
        .collect();
    for topic in [
        mnemo_bus::topics::MESSAGES,
        mnemo_bus::topics::MEMORY_EVENTS,
        mnemo_bus::topics::SUBJECT_EVENTS,
    ] {
        assert!(
            topics.contains(topic),
            "the subject's records on {topic} are among those read: {topics:?}"
        );
    }
    eprintln!(
        "(b) {} record(s) of {} topic(s)",
        records.len(),
        records
            .iter()
            .map(|r| &r.topic)
            .collect::<BTreeSet<_>>()
            .len()
    );
    let hits = scan_records(&records, &canaries);
    assert!(hits.is_empty(), "left on the bus: {hits:?}");

    // (c) verify-erasure.
    let pg_data = directories.as_ref().map(|(data, _)| data.as_path());
    let (code, report) = verify_erasure(cluster, &canaries, pg_data);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["result"], "clear", "{report:#}");
    let raw = report_check(&report, "bus", "canary bytes in every record");
    assert_eq!(raw["outcome"], "clear", "{report:#}");
    if pg_data.is_some() {
        let files = report_check(
            &report,
            "postgres_files",
            "canary bytes in PostgreSQL's files",
        );
        assert_eq!(files["outcome"], "clear", "{report:#}");
    }
    eprintln!(
        "erasure and the three scans took {:.1} s",
        started.elapsed().as_secs_f64()
    );

    // Each scan finds what is there: a canary planted (in upper case) in a
    // table of the test database, and in a record's key, payload and header.
    let upper = PLANTED.to_uppercase();
    let mut all = canaries.clone();
    all.push(PLANTED);
    sqlx::query("CREATE TABLE canary_planted (note text)")
        .execute(&cluster.admin)
        .await
        .unwrap();
    sqlx::query("INSERT INTO canary_planted VALUES ($1)")
        .bind(format!("..{upper}.."))
        .execute(&cluster.admin)
        .await
        .unwrap();
    if let Some((data, dir)) = &directories {
        let file: String = sqlx::query_scalar("SELECT pg_relation_filepath('canary_planted')")
            .fetch_one(&cluster.admin)
            .await
            .unwrap();
        let scan = scan_database_files(&cluster.admin, data, dir, &all).await;
        assert_eq!(
            scan.hits,
            [(file, PLANTED.to_owned(), 1)],
            "the planted canary, and nothing else"
        );
    }
    let bus = mnemo_bus::kafka::KafkaBus::new(mnemo_bus::kafka::KafkaConfig::new(brokers.clone()))
        .unwrap();
    let record = |key: String, payload: String, header: String| mnemo_bus::OutgoingRecord {
        key,
        payload: payload.into_bytes(),
        headers: vec![("note".to_owned(), header)],
    };
    use mnemo_bus::Bus as _;
    bus.publish(
        mnemo_bus::topics::DEAD_LETTERS,
        vec![
            record(format!("{TENANT}/{upper}"), "{}".into(), "-".into()),
            record(
                "planted".into(),
                format!("{{\"error\": \"{upper}\"}}"),
                "-".into(),
            ),
            record("planted".into(), "{}".into(), format!("x{upper}x")),
        ],
    )
    .await
    .unwrap();
    drop(bus);
    let records = tokio::task::spawn_blocking(move || read_every_record(&brokers))
        .await
        .unwrap();
    let mut parts: Vec<(String, String)> = scan_records(&records, &all)
        .into_iter()
        .map(|(at, part, canary)| {
            assert!(at.starts_with("mnemo.dead-letters/"), "{at}");
            (part, canary)
        })
        .collect();
    parts.sort();
    let planted = |part: &str| (part.to_owned(), PLANTED.to_owned());
    assert_eq!(
        parts,
        [planted("header note"), planted("key"), planted("payload")]
    );
    let (code, report) = verify_erasure(cluster, &all, pg_data);
    assert_eq!(code, 1, "{report:#}");
    let raw = report_check(&report, "bus", "canary bytes in every record");
    assert_eq!(raw["found"], 3, "{report:#}");
    if pg_data.is_some() {
        let files = report_check(
            &report,
            "postgres_files",
            "canary bytes in PostgreSQL's files",
        );
        assert_eq!(files["outcome"], "found", "{report:#}");
    }
}

/// With the rules: the consolidator derives a tag from the content.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_of_an_erased_subject_is_left_in_postgresql_or_on_the_bus_with_the_rules() {
    let _serial = SERIAL.lock().await;
    let started = Instant::now();
    // Only explicit requests consolidate, so the test decides when.
    let cluster = Cluster::start(
        "[consolidation.default]\nbatch_size = 50\nidle_timeout = 3600\nend_earlier_sessions = false\n",
        1,
    )
    .await;
    use_the_canaries(&cluster).await;
    erase_and_scan(&cluster).await;
    eprintln!(
        "the whole test took {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// With an LLM (the mock server): its memory carries a tag of its own and
/// one from the content.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_of_an_erased_subject_is_left_in_postgresql_or_on_the_bus_with_an_llm() {
    let _serial = SERIAL.lock().await;
    let started = Instant::now();
    let llm = MockLlmServer::start().await;
    let extraction = json!({"memories": [{
        "content": format!("Is allergic to {}", CANARIES.content),
        "kind": "fact",
        "tags": [CANARIES.llm_tag, CANARIES.content],
        "confidence": 0.95,
    }]})
    .to_string();
    llm.respond_with(move |request| {
        let system = request["messages"][0]["content"].as_str().unwrap_or("");
        if system.starts_with("You extract") {
            extraction.clone()
        } else if system.starts_with("You maintain") {
            r#"{"decisions": []}"#.to_owned()
        } else {
            format!("The user takes {} and works in Lisbon.", CANARIES.content)
        }
    });
    let uri = llm.uri();
    let cluster = Cluster::start_with(
        "[consolidation.default]\nbatch_size = 50\nidle_timeout = 3600\nend_earlier_sessions = false\n",
        1,
        &[
            ("MNEMO_LLM_BASE_URL", uri.as_str()),
            ("MNEMO_LLM_MODEL", "mock-model"),
            ("MNEMO_LLM_API_KEY", "sk-test"),
        ],
    )
    .await;
    use_the_canaries(&cluster).await;
    let memories = cluster.memories(SUBJECT).await;
    assert!(
        memories
            .iter()
            .any(|m| m["provenance"]["producer"]["strategy"] == "llm"),
        "the LLM's memory is there: {memories:?}"
    );
    assert!(!llm.requests().is_empty(), "the consolidator asked the LLM");
    erase_and_scan(&cluster).await;
    eprintln!(
        "the whole test took {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
