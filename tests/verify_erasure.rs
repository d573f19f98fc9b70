//! `mnemo verify-erasure` against what a real `mnemo serve` left in its data
//! dir: before an erasure it finds the subject in every place it looks (so
//! it looks in the right places), after the erasure nothing readable is
//! left, and a canary planted in a file of the data dir is found by the
//! byte scan. Its output never holds a canary.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use mnemo_tests::free_port;
use serde_json::{json, Value};

const SUBJECT: &str = "verify-me";
/// Only in content (a message and a memory): tags, ids and sessions of
/// other subjects' data are not what this test is about.
const MESSAGE_CANARY: &str = "zq-canary-message-5521";
const MEMORY_CANARY: &str = "zq-canary-memory-8813";
const PLANTED_CANARY: &str = "zq-planted-canary-4471";

struct Server {
    child: Child,
    port: u16,
}

impl Server {
    fn start(dir: &Path, config: &Path) -> Server {
        let port = free_port();
        let child = Command::new(mnemo_tests::binary("mnemo"))
            .args([
                "serve",
                "--data-dir",
                dir.to_str().unwrap(),
                "--listen",
                &format!("127.0.0.1:{port}"),
            ])
            .env("MNEMO_CONFIG", config)
            .env("MNEMO_EMBEDDER", "lexical")
            .env("MNEMO_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("mnemo starts");
        Server { child, port }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    async fn wait_healthy(&self, client: &reqwest::Client) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(response) = client.get(self.url("/healthz")).send().await {
                if response.status() == 200 {
                    return;
                }
            }
            assert!(Instant::now() < deadline, "server never became healthy");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// SIGTERM, as an operator stops it: the server flushes and exits.
    fn stop(mut self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.child.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                self.child.kill().unwrap();
                panic!("the server did not stop on SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn token(dir: &Path) -> String {
    let output = Command::new(mnemo_tests::binary("mnemo"))
        .args(["token", "--data-dir", dir.to_str().unwrap()])
        .args(["--tenant", "acme", "--scope", "all"])
        .output()
        .expect("mnemo token runs");
    assert!(output.status.success());
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

fn verify(dir: &Path, config: &Path, args: &[&str]) -> Output {
    Command::new(mnemo_tests::binary("mnemo"))
        .args(["verify-erasure", "--data-dir", dir.to_str().unwrap()])
        .args(args)
        .env("MNEMO_CONFIG", config)
        .env("MNEMO_EMBEDDER", "lexical")
        .env("MNEMO_LOG", "warn")
        .output()
        .expect("mnemo verify-erasure runs")
}

/// The JSON report of a run, after checking its exit code and that
/// nothing it printed holds a canary.
fn report(output: &Output, code: i32) -> Value {
    let stdout = String::from_utf8(output.stdout.clone()).unwrap();
    let stderr = String::from_utf8(output.stderr.clone()).unwrap();
    assert_eq!(
        output.status.code(),
        Some(code),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    for canary in [MESSAGE_CANARY, MEMORY_CANARY, PLANTED_CANARY] {
        for printed in [&stdout, &stderr] {
            assert!(
                !printed.to_lowercase().contains(canary),
                "the output names a canary:\n{printed}"
            );
        }
    }
    serde_json::from_str(&stdout).unwrap_or(Value::Null)
}

/// The check `store` / `check` of the report (of the only tenant).
fn check<'a>(report: &'a Value, store: &str, check: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["store"] == store && c["check"] == check)
        .unwrap_or_else(|| panic!("no check {store} / {check} in {report:#}"))
}

fn found(report: &Value, store: &str, name: &str) -> u64 {
    let check = check(report, store, name);
    assert_ne!(check["outcome"], "failed", "{check}");
    check["found"].as_u64().unwrap()
}

#[tokio::test]
async fn verify_erasure_finds_the_subject_before_and_nothing_readable_after() {
    let dir = tempfile::tempdir().unwrap();
    let config_dir = tempfile::tempdir().unwrap();
    let config = config_dir.path().join("mnemo.toml");
    // No consolidation during the test: the message waits in the buffer
    // (a row the scan must find), and no memory is made from it.
    std::fs::write(
        &config,
        "[consolidation.default]\nbatch_size = 100\nidle_timeout = 3600\nend_earlier_sessions = false\n",
    )
    .unwrap();
    let client = reqwest::Client::new();
    let server = Server::start(dir.path(), &config);
    server.wait_healthy(&client).await;
    let token = token(dir.path());

    let posted = client
        .post(server.url(&format!("/v1/subjects/{SUBJECT}/messages")))
        .bearer_auth(&token)
        .json(
            &json!({"messages": [{"role": "user", "id": "m1", "session": "s1",
            "content": format!("please remember {MESSAGE_CANARY} for me")}]}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(posted.status(), 202);
    let created = client
        .post(server.url(&format!("/v1/subjects/{SUBJECT}/memories")))
        .bearer_auth(&token)
        .json(
            &json!({"content": format!("Keeps the note {}", MEMORY_CANARY.to_uppercase()),
            "kind": "fact"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let listed: Value = client
            .get(server.url(&format!("/v1/subjects/{SUBJECT}/memories")))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if listed["memories"].as_array().is_some_and(|m| !m.is_empty()) {
            break;
        }
        assert!(Instant::now() < deadline, "the memory was never listed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // And the message is searchable as an episode (a second point).
    loop {
        let found: Value = client
            .post(server.url(&format!("/v1/subjects/{SUBJECT}/search")))
            .bearer_auth(&token)
            .json(&json!({"query": "please remember", "include": ["episodes"], "mode": "keyword"}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if found["results"].as_array().is_some_and(|r| !r.is_empty()) {
            break;
        }
        assert!(Instant::now() < deadline, "the episode was never indexed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    server.stop();

    // Before the erasure: the subject is found through its key, in the
    // log, the projections, the vector index, on the bus and in the bytes.
    let canaries = ["--canary", MESSAGE_CANARY, "--canary", MEMORY_CANARY];
    let before = verify(
        dir.path(),
        &config,
        &[&["--subject", SUBJECT, "--json"][..], &canaries].concat(),
    );
    let before = report(&before, 1);
    assert_eq!(before["tenants"], json!(["acme"]), "found without --tenant");
    assert_eq!(before["result"], "found");
    assert_eq!(found(&before, "subject_keys", "live data key"), 1);
    assert_eq!(
        found(&before, "event_log", "events that open to readable text"),
        2,
        "the message and the memory's creation: {before:#}"
    );
    let in_text = check(&before, "event_log", "canary in opened event text");
    assert_eq!(in_text["found"], 2, "both canaries, one event each");
    assert_eq!(
        in_text["where"],
        json!(["canary #1 in 1", "canary #2 in 1"])
    );
    assert_eq!(
        found(&before, "memory_read_model", "rows of the subject"),
        1
    );
    assert_eq!(
        found(&before, "consolidation_buffer", "rows of the subject"),
        1
    );
    assert_eq!(
        found(&before, "vector_index", "points of the subject"),
        2,
        "the memory and the message's episode"
    );
    assert!(found(&before, "bus", "records that open to readable text") >= 2);
    assert!(found(&before, "bus", "canary in opened record text") >= 2);
    let bytes = check(&before, "files", "canary bytes in the data dir");
    // Everything is sealed or tokenised, the read model too: no canary in
    // the data dir's bytes even before the erasure (the planted copy below
    // shows the scan finds one).
    assert_eq!(bytes["outcome"], "clear", "{bytes}");

    // The table names the same findings.
    let table = verify(
        dir.path(),
        &config,
        &[&["--subject", SUBJECT, "--tenant", "acme"][..], &canaries].concat(),
    );
    report(&table, 1);
    let table = String::from_utf8(table.stdout).unwrap();
    assert!(table.contains("FOUND"), "{table}");
    assert!(table.contains("live data key"), "{table}");
    assert!(table.contains("canary #1"), "{table}");

    // The erasure, through the API.
    let server = Server::start(dir.path(), &config);
    server.wait_healthy(&client).await;
    let accepted: Value = client
        .delete(server.url(&format!("/v1/subjects/{SUBJECT}")))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let erasure = accepted["erasure_id"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let status: Value = client
            .get(server.url(&format!("/v1/erasures/{erasure}")))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if status["status"] == "completed" {
            break;
        }
        assert!(Instant::now() < deadline, "the erasure never completed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    server.stop();

    // After: nothing of the subject opens, no projection holds it, and the
    // content's canaries are in no byte of the data dir.
    let after = verify(
        dir.path(),
        &config,
        &[&["--subject", SUBJECT, "--json"][..], &canaries].concat(),
    );
    let after = report(&after, 0);
    assert_eq!(after["result"], "clear", "{after:#}");
    assert_eq!(found(&after, "subject_keys", "live data key"), 0);
    assert_eq!(
        found(&after, "event_log", "events that open to readable text"),
        0
    );
    assert_eq!(found(&after, "event_log", "canary in opened event text"), 0);
    assert_eq!(found(&after, "memory_read_model", "rows of the subject"), 0);
    assert_eq!(
        found(&after, "consolidation_buffer", "rows of the subject"),
        0
    );
    assert_eq!(found(&after, "vector_index", "points of the subject"), 0);
    assert_eq!(
        found(&after, "bus", "records that open to readable text"),
        0
    );
    assert_eq!(found(&after, "files", "canary bytes in the data dir"), 0);
    let events = check(&after, "event_log", "events of the subject");
    assert!(
        events["found"].as_u64().unwrap() >= 2,
        "the log keeps its events: {events}"
    );

    // The byte scan finds what is there: a canary planted in a file.
    std::fs::create_dir_all(dir.path().join("planted")).unwrap();
    std::fs::write(
        dir.path().join("planted/copy.bin"),
        format!("\0\0{}\0", PLANTED_CANARY.to_uppercase()),
    )
    .unwrap();
    let planted = verify(
        dir.path(),
        &config,
        &[
            &["--subject", SUBJECT, "--tenant", "acme", "--json"][..],
            &canaries,
            &["--canary", PLANTED_CANARY],
        ]
        .concat(),
    );
    let planted = report(&planted, 1);
    let bytes = check(&planted, "files", "canary bytes in the data dir");
    assert_eq!(bytes["found"], 1);
    assert_eq!(bytes["where"], json!(["planted/copy.bin: canary #3 ×1"]));
    let findings: Vec<&Value> = planted["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["outcome"] == "found")
        .collect();
    assert_eq!(findings.len(), 1, "only the planted file: {findings:#?}");
}

#[test]
fn verify_erasure_exits_2_when_it_cannot_start() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("none.toml");
    std::fs::write(&config, "").unwrap();
    let empty = verify(dir.path(), &config, &["--subject", SUBJECT]);
    assert_eq!(empty.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&empty.stderr).contains("no database"));
    let short = verify(
        dir.path(),
        &config,
        &["--subject", SUBJECT, "--canary", "abc"],
    );
    assert_eq!(short.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&short.stderr).contains("canary #1 is shorter"));
    let usage = verify(dir.path(), &config, &[]);
    assert_eq!(usage.status.code(), Some(2), "clap's usage error");
}
