//! The erasure canary scan (issue 11): canaries in content, a tag (given and
//! derived from content), a session id, a message id and `X-Request-Id`
//! go through posting, consolidation (the rules and an LLM), a direct
//! write, search and an erasure; then the server stops and every byte of
//! every file under the data dir is scanned, case-insensitively. Nothing
//! of them may be left.
//!
//! The scan proves itself twice: it finds a canary planted in a data-dir
//! file, and it finds a canary where the stores held subject data in the
//! clear before tags and ids were sealed (a legacy event, inserted as such
//! events were stored) until the erasure redacts it.

use std::path::{Path, PathBuf};

use mnemo_llm::testsupport::MockLlmServer;
use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{spawn_app_with, TestApp};

const SUBJECT: &str = "canary-subject";

/// Distinct, lowercase-insensitive strings; none is a word the rules or
/// the tokenizers could produce by themselves.
struct Canaries {
    content: &'static str,
    tag: &'static str,
    session: &'static str,
    message_id: &'static str,
    request_id: &'static str,
    llm_tag: &'static str,
    legacy_tag: &'static str,
}

const CANARIES: Canaries = Canaries {
    content: "Zqxcontentdrug",
    tag: "zqx-tag-5523",
    session: "zqx-session-3390",
    message_id: "Zqx.Jane.Doe@example.com",
    request_id: "zqx-request-7719",
    llm_tag: "zqx-llmtag-6631",
    legacy_tag: "zqx-legacytag-4404",
};

impl Canaries {
    fn all(&self) -> [&'static str; 7] {
        [
            self.content,
            self.tag,
            self.session,
            self.message_id,
            self.request_id,
            self.llm_tag,
            self.legacy_tag,
        ]
    }
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out
}

/// Every (file, canary) where the file's bytes hold the canary, ignoring
/// ASCII case.
fn scan(dir: &Path, canaries: &[&str]) -> Vec<(PathBuf, String)> {
    scan_files(&files_under(dir), canaries)
}

fn scan_files(files: &[PathBuf], canaries: &[&str]) -> Vec<(PathBuf, String)> {
    let finders: Vec<(String, memchr::memmem::Finder<'static>)> = canaries
        .iter()
        .map(|c| {
            let needle = c.to_ascii_lowercase().into_bytes();
            (
                (*c).to_owned(),
                memchr::memmem::Finder::new(&needle).into_owned(),
            )
        })
        .collect();
    let mut hits = Vec::new();
    for file in files {
        let Ok(bytes) = std::fs::read(file) else {
            continue;
        };
        let bytes = bytes.to_ascii_lowercase();
        for (canary, finder) in &finders {
            if finder.find(&bytes).is_some() {
                hits.push((file.clone(), canary.clone()));
            }
        }
    }
    hits
}

async fn app(llm: Option<&MockLlmServer>) -> TestApp {
    let config = tempfile::tempdir().unwrap();
    let file = config.path().join("mnemo.toml");
    // Only explicit requests consolidate, so the test decides when.
    std::fs::write(
        &file,
        "[consolidation.default]\nbatch_size = 50\nidle_timeout = 3600\nend_earlier_sessions = false\n",
    )
    .unwrap();
    let uri = llm.map(MockLlmServer::uri);
    let mut env = vec![("MNEMO_CONFIG", file.to_str().unwrap())];
    if let Some(uri) = &uri {
        env.extend([
            ("MNEMO_LLM_BASE_URL", uri.as_str()),
            ("MNEMO_LLM_MODEL", "mock-model"),
            ("MNEMO_LLM_API_KEY", "sk-test"),
        ]);
    }
    spawn_app_with(&env).await
}

/// Posts the canaries every way a client can, consolidates, writes a
/// memory directly and searches with the tag and session filters.
async fn use_the_canaries(app: &TestApp, token: &str) {
    let c = &CANARIES;
    let posted = app
        .client
        .post(format!("{}/v1/subjects/{SUBJECT}/messages", app.address))
        .bearer_auth(token)
        .header("x-request-id", c.request_id)
        .json(&json!({"messages": [
            {"role": "user", "content": format!("I am allergic to {}", c.content),
             "id": c.message_id, "session": c.session},
            {"role": "user", "content": "I work as a carpenter in Lisbon", "session": c.session},
        ]}))
        .send()
        .await
        .unwrap();
    assert_eq!(posted.status(), 202);
    let consolidate = app
        .call(
            Method::POST,
            &format!("/v1/subjects/{SUBJECT}/consolidate"),
            token,
            None,
        )
        .await;
    assert_eq!(consolidate.status(), 202);
    let direct = app
        .create_memory(
            token,
            SUBJECT,
            json!({"content": format!("Takes {} daily", c.content), "kind": "fact",
                   "tags": [c.tag], "session": c.session, "sources": [c.message_id]}),
        )
        .await;
    assert_eq!(direct.status(), 201, "{}", direct.text().await.unwrap());
    let consolidated = app
        .wait_for(
            &format!("/v1/subjects/{SUBJECT}/memories"),
            token,
            "consolidation",
            |body| body["memories"].as_array().is_some_and(|m| m.len() >= 2),
        )
        .await;
    let tags: Vec<String> = consolidated["memories"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["tags"].as_array().cloned().unwrap_or_default())
        .filter_map(|t| t.as_str().map(str::to_lowercase))
        .collect();
    assert!(
        tags.iter()
            .any(|t| t.contains(&c.content.to_lowercase()) || t == c.llm_tag),
        "a tag derived from the content (else the scan misses that case): {tags:?}"
    );
    // The filters work on tokens: the direct memory is found by its tag
    // and session, and a wrong tag finds nothing.
    let found = app
        .post_json(
            &format!("/v1/subjects/{SUBJECT}/search"),
            token,
            json!({"query": "daily", "filters": {"tags": [c.tag], "session": c.session}}),
        )
        .await;
    let results = found["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{found}");
    assert!(results[0]["memory"]["content"]
        .as_str()
        .unwrap()
        .contains(c.content));
    let none = app
        .post_json(
            &format!("/v1/subjects/{SUBJECT}/search"),
            token,
            json!({"query": "daily", "filters": {"tags": ["other"]}}),
        )
        .await;
    assert!(none["results"].as_array().unwrap().is_empty());
}

/// An event as stored before tags were sealed (the stores now refuse the
/// plain form, so it is written past them), in a stream no consumer
/// projects.
async fn insert_legacy_event(dir: &Path) {
    let pool = mnemo_event_store::sqlite::connect(&dir.join("mnemo.db"))
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO events (event_id, tenant_id, stream_id, stream_version, subject_id, \
         event_type, schema_version, actor, payload, metadata, recorded_at) \
         VALUES (?, 'acme', 'legacy-canary', 1, ?, 'MemoryCreated', 1, 'acme-admin', ?, \
         '{\"actor\":\"acme-admin\"}', 0)",
    )
    .bind(mnemo_domain::EventId::new().to_string())
    .bind(SUBJECT)
    .bind(format!(
        r#"{{"tags":["{}"],"content":{{"$erased":true}}}}"#,
        CANARIES.legacy_tag
    ))
    .execute(&pool)
    .await
    .unwrap();
    pool.close().await;
}

async fn erase_and_scan(app: TestApp, token: &str) {
    insert_legacy_event(app.dir.path()).await;
    // Only the database here: the erasure request must follow at once (a
    // pooled connection idle for seconds is closed by the server).
    let database = [
        app.dir.path().join("mnemo.db"),
        app.dir.path().join("mnemo.db-wal"),
    ];
    let before = scan_files(&database, &[CANARIES.legacy_tag]);
    assert!(
        !before.is_empty(),
        "the scan finds a canary the stores held in the clear"
    );
    let status = app.erase(token, SUBJECT).await;
    let steps = status["receipt"]["steps"].as_array().unwrap();
    assert!(
        steps
            .iter()
            .any(|s| s["store"] == "event_log_legacy" && s["count"].as_u64() >= Some(1)),
        "the legacy event was redacted: {steps:?}"
    );
    let dir = app.stop().await;

    let hits = scan(dir.path(), &CANARIES.all());
    assert!(hits.is_empty(), "left after erasure: {hits:?}");

    // The scan finds what is there.
    std::fs::write(dir.path().join("planted.bin"), b"..ZQX-TAG-5523..").unwrap();
    assert_eq!(scan(dir.path(), &CANARIES.all()).len(), 1);
}

#[tokio::test]
async fn nothing_of_an_erased_subject_is_left_in_any_file_with_the_rules() {
    let app = app(None).await;
    let token = app.admin("acme");
    use_the_canaries(&app, &token).await;
    erase_and_scan(app, &token).await;
}

#[tokio::test]
async fn nothing_of_an_erased_subject_is_left_in_any_file_with_an_llm() {
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
    let app = app(Some(&llm)).await;
    let token = app.admin("acme");
    use_the_canaries(&app, &token).await;
    let list: Value = app
        .get_json(&format!("/v1/subjects/{SUBJECT}/memories"), &token)
        .await;
    assert!(
        list.to_string().contains(CANARIES.llm_tag),
        "the LLM's memory is there"
    );
    erase_and_scan(app, &token).await;
}
