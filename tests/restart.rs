//! `mnemo serve` as a child process. A killed server loses and duplicates
//! nothing: it gets a burst of conversations, is killed with SIGKILL in the
//! middle of consolidating them, and is started again on the same data
//! dir; every expected memory then exists exactly once. And its background
//! work runs below its request threads (the threads' nice values, read
//! from `/proc`).

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const SUBJECTS: usize = 30;
use mnemo_tests::FACTS;

struct Server {
    child: Child,
    port: u16,
}

use mnemo_tests::free_port;

fn start(dir: &std::path::Path, config: &std::path::Path, port: u16) -> Server {
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

async fn wait_healthy(client: &reqwest::Client, port: u16) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(response) = client
            .get(format!("http://127.0.0.1:{port}/healthz"))
            .send()
            .await
        {
            if response.status() == 200 {
                return;
            }
        }
        assert!(Instant::now() < deadline, "server never became healthy");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn token(dir: &std::path::Path) -> String {
    let output = Command::new(mnemo_tests::binary("mnemo"))
        .args([
            "token",
            "--data-dir",
            dir.to_str().unwrap(),
            "--tenant",
            "acme",
            "--scope",
            "all",
        ])
        .output()
        .expect("mnemo token runs");
    assert!(output.status.success());
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

async fn memories(client: &reqwest::Client, port: u16, token: &str, subject: &str) -> Vec<Value> {
    let body: Value = client
        .get(format!("http://127.0.0.1:{port}/v1/subjects/{subject}/memories?limit=500&state=active,archived,superseded,pending_review"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    body["memories"].as_array().unwrap().clone()
}

/// Posts the burst to a server on a fresh data dir and kills it with
/// SIGKILL as soon as the first memory is in the log. Returns the data dir,
/// its config and a token when the kill came before consolidation
/// finished, None when the server was quicker than the watcher (all
/// memories already stored at the kill), so the caller can try again.
async fn kill_mid_consolidation(
    client: &reqwest::Client,
) -> Option<(tempfile::TempDir, std::path::PathBuf, String)> {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("test.toml");
    // Batches of 10 trigger consolidation as messages arrive; a strict
    // similarity threshold keeps the ten different facts apart.
    std::fs::write(
        &config,
        "[consolidation.default]\nbatch_size = 10\nidle_timeout = 1\nsimilarity_threshold = 0.97\n",
    )
    .unwrap();
    let port = free_port();
    let mut server = start(dir.path(), &config, port);
    wait_healthy(client, port).await;
    let token = token(dir.path());

    for subject in 0..SUBJECTS {
        let messages: Vec<Value> = FACTS
            .iter()
            .enumerate()
            .map(|(i, fact)| json!({"role": "user", "content": format!("{fact}."), "id": format!("m{i}"), "session": "s1"}))
            .collect();
        let response = client
            .post(format!(
                "http://127.0.0.1:{port}/v1/subjects/subject-{subject}/messages"
            ))
            .bearer_auth(&token)
            .json(&json!({ "messages": messages }))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 202);
    }
    // Kill as soon as the first memory is in the log, long before all are:
    // watch the database file directly (WAL allows a reader beside the server).
    let deadline = Instant::now() + Duration::from_secs(60);
    while created(dir.path()).await == 0 {
        assert!(Instant::now() < deadline, "consolidation never started");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    let at_kill = created(dir.path()).await;
    (at_kill < SUBJECTS * FACTS.len()).then_some((dir, config, token))
}

/// The `MemoryCreated` events in the data dir's log, read beside the server.
async fn created(dir: &std::path::Path) -> usize {
    // As the stores' `connect` does before SQLite's first open.
    mnemo_event_store::sqlite::configure_heap();
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(dir.join("mnemo.db"))
        .read_only(true);
    let mut connection = <sqlx::SqliteConnection as sqlx::Connection>::connect_with(&options)
        .await
        .unwrap();
    let count: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM events WHERE event_type = 'MemoryCreated'")
            .fetch_one(&mut connection)
            .await
            .unwrap();
    count as usize
}

/// Attempts at a kill before consolidation finished: a loaded machine can
/// delay the watcher past the last memory (the server drains a subject's
/// ten messages in one commit), and such an attempt tests nothing.
const ATTEMPTS: usize = 3;

#[tokio::test]
async fn sigkill_mid_consolidation_loses_and_duplicates_nothing() {
    let client = reqwest::Client::new();
    let mut killed = None;
    for _ in 0..ATTEMPTS {
        killed = kill_mid_consolidation(&client).await;
        if killed.is_some() {
            break;
        }
    }
    let Some((dir, config, token)) = killed else {
        panic!(
            "in {ATTEMPTS} attempts the kill came after consolidation finished: nothing was tested"
        );
    };

    let port = free_port();
    let mut server = start(dir.path(), &config, port);
    wait_healthy(&client, port).await;

    // After the restart every subject converges to exactly its ten memories.
    let deadline = Instant::now() + Duration::from_secs(120);
    for subject in 0..SUBJECTS {
        let name = format!("subject-{subject}");
        loop {
            let found = memories(&client, server.port, &token, &name).await;
            if found.len() >= FACTS.len() {
                tokio::time::sleep(Duration::from_millis(500)).await;
                let found = memories(&client, server.port, &token, &name).await;
                let mut texts: Vec<String> = found
                    .iter()
                    .map(|m| m["content"].as_str().unwrap().to_lowercase())
                    .collect();
                texts.sort();
                texts.dedup();
                assert_eq!(
                    found.len(),
                    FACTS.len(),
                    "{name}: duplicated memories: {texts:?}"
                );
                assert_eq!(texts.len(), FACTS.len(), "{name}: {texts:?}");
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{name} never got all its memories: {}",
                found.len()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    assert_eq!(
        created(dir.path()).await,
        SUBJECTS * FACTS.len(),
        "one MemoryCreated per fact in the log"
    );
    server.child.kill().unwrap();
    server.child.wait().unwrap();
}

/// Each thread of process `pid`: its name and nice value, from `/proc`.
fn threads(pid: u32) -> Vec<(String, i32)> {
    let mut threads = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let task = task.unwrap().path();
        let (Ok(name), Ok(stat)) = (
            std::fs::read_to_string(task.join("comm")),
            std::fs::read_to_string(task.join("stat")),
        ) else {
            continue; // the thread ended meanwhile
        };
        // After the name's closing parenthesis: state (field 3) first, so
        // the nice value (field 19) is the 17th.
        let nice = stat.rsplit_once(')').unwrap().1.split_whitespace().nth(16);
        threads.push((name.trim().to_owned(), nice.unwrap().parse().unwrap()));
    }
    threads
}

#[tokio::test]
async fn the_background_work_runs_below_the_request_threads() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mnemo.toml");
    std::fs::write(&config, "[runtime]\nbackground_nice = 6\n").unwrap();
    let data = dir.path();
    let client = reqwest::Client::new();
    let port = free_port();
    let mut server = start(data, &config, port);
    wait_healthy(&client, port).await;
    // Work for every part, so the threads that start on demand (the
    // blocking pools) have started: messages to index and consolidate,
    // then a search.
    let token = token(data);
    let url = format!("http://127.0.0.1:{port}/v1/subjects/alice");
    let messages: Vec<Value> = FACTS
        .iter()
        .enumerate()
        .map(|(i, fact)| json!({"role": "user", "content": format!("{fact}."), "id": format!("m{i}")}))
        .collect();
    let posted = client
        .post(format!("{url}/messages"))
        .bearer_auth(&token)
        .json(&json!({ "messages": messages }))
        .send()
        .await
        .unwrap();
    assert_eq!(posted.status(), 202);
    let deadline = Instant::now() + Duration::from_secs(60);
    while memories(&client, port, &token, "alice").await.is_empty() {
        assert!(Instant::now() < deadline, "nothing was consolidated");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let searched = client
        .post(format!("{url}/search"))
        .bearer_auth(&token)
        .json(&json!({"query": FACTS[0], "include": ["memories", "episodes"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(searched.status(), 200);

    let pid = server.child.id();
    let threads = threads(pid);
    let base = threads
        .iter()
        .find(|(name, _)| name == "mnemo")
        .expect("the main thread")
        .1;
    let of = |prefix: &str| -> Vec<i32> {
        threads
            .iter()
            .filter(|(name, _)| name.starts_with(prefix))
            .map(|(_, nice)| *nice)
            .collect()
    };
    let requests = of("actix-server");
    let background = of("mnemo-pipeline");
    assert!(!requests.is_empty(), "no request thread in {threads:?}");
    assert!(
        background.len() >= 2,
        "no background threads in {threads:?}"
    );
    assert!(
        requests.iter().all(|nice| *nice == base),
        "request threads must keep the process's priority ({base}): {threads:?}"
    );
    assert!(
        background.iter().all(|nice| *nice == (base + 6).min(19)),
        "background threads must run 6 lower than {base}: {threads:?}"
    );
    // The database's connection threads: the ones kept for the requests
    // (a search's statements, a post's) at the request threads' priority,
    // the pipeline's at the background's; all opened at the start, so
    // none took its priority from whichever task happened to open it.
    let database = of("sqlx-sqlite-wor");
    let at = |nice: i32| database.iter().filter(|n| **n == nice).count();
    assert_eq!(
        (at(base), at((base + 6).min(19)), database.len()),
        (
            mnemo_app::stores::REQUEST_CONNECTIONS as usize,
            mnemo_event_store::sqlite::POOL_SIZE as usize,
            (mnemo_app::stores::REQUEST_CONNECTIONS + mnemo_event_store::sqlite::POOL_SIZE)
                as usize
        ),
        "the database's threads (at {base}, 6 lower, all): {threads:?}"
    );
    server.child.kill().unwrap();
    server.child.wait().unwrap();
}
