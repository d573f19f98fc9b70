//! The memory pipeline end to end, with the real all-MiniLM-L6-v2 model:
//! conversations become memories with provenance, small talk becomes
//! nothing, a repeated fact reinforces, search and context find them, the
//! forgetter archives, and erasure leaves no vector behind.

use std::collections::BTreeSet;
use std::time::Duration;

use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{spawn_app_with, spawn_app_with_model, TestApp};

/// Only explicit requests consolidate, so each test decides when.
const MANUAL: &str =
    "[consolidation.default]\nbatch_size = 50\nidle_timeout = 3600\nend_earlier_sessions = false\n";

fn contents(memories: &[Value]) -> Vec<String> {
    memories
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

async fn post(
    app: &TestApp,
    token: &str,
    subject: &str,
    session: &str,
    lines: &[&str],
) -> Vec<String> {
    let messages: Vec<Value> = lines
        .iter()
        .enumerate()
        .map(|(i, text)| json!({"role": if i % 2 == 0 { "user" } else { "assistant" }, "content": text, "session": session}))
        .collect();
    // Only user lines are mined; make every line a user line here.
    let messages: Vec<Value> = messages
        .into_iter()
        .map(|mut m| {
            m["role"] = json!("user");
            m
        })
        .collect();
    let body = app
        .post_json(
            &format!("/v1/subjects/{subject}/messages"),
            token,
            json!({ "messages": messages }),
        )
        .await;
    body["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event_id"].as_str().unwrap().to_owned())
        .collect()
}

async fn consolidate(app: &TestApp, token: &str, subject: &str) {
    let response = app
        .call(
            Method::POST,
            &format!("/v1/subjects/{subject}/consolidate"),
            token,
            None,
        )
        .await;
    assert_eq!(response.status(), 202);
}

/// Posts one line to ana's "trip" session, then one to her "work"
/// session; their event ids.
async fn post_trip_then_work(app: &TestApp, token: &str) -> (Vec<String>, Vec<String>) {
    let trip = post(
        app,
        token,
        "ana",
        "trip",
        &["I am vegetarian and I never eat fish."],
    )
    .await;
    let work = post(
        app,
        token,
        "ana",
        "work",
        &["I work as a nurse at the night shift in Porto."],
    )
    .await;
    (trip, work)
}

async fn consolidate_session(app: &TestApp, token: &str, subject: &str, session: &str) {
    let response = app
        .call(
            Method::POST,
            &format!("/v1/subjects/{subject}/consolidate"),
            token,
            Some(json!({ "session": session })),
        )
        .await;
    assert_eq!(response.status(), 202);
}

async fn memories_when(
    app: &TestApp,
    token: &str,
    subject: &str,
    what: &str,
    predicate: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let body = app
        .wait_for(
            &format!("/v1/subjects/{subject}/memories?limit=100"),
            token,
            what,
            |b| predicate(b["memories"].as_array().unwrap()),
        )
        .await;
    body["memories"].as_array().unwrap().clone()
}

/// Waits for the subject's first memories and asserts that each comes
/// from exactly the messages `sources` (event ids).
async fn memories_only_from(
    app: &TestApp,
    token: &str,
    subject: &str,
    what: &str,
    sources: &[String],
) {
    let memories = memories_when(app, token, subject, what, |m| !m.is_empty()).await;
    assert!(
        memories
            .iter()
            .all(|m| m["provenance"]["source_event_ids"] == json!(sources)),
        "{what}: memories from other messages too: {memories:?}"
    );
}

#[tokio::test]
async fn conversations_become_memories_with_provenance_and_small_talk_becomes_nothing() {
    let app = spawn_app_with_model(MANUAL).await;
    let token = app.admin("acme");

    // Small talk first: consolidated before the others (one partition, in order).
    post(
        &app,
        &token,
        "chatty",
        "s0",
        &[
            "Hi there!",
            "ok thanks",
            "haha that's funny",
            "我今天去公园玩得很开心",
            "哈哈哈太好笑了",
        ],
    )
    .await;
    consolidate(&app, &token, "chatty").await;

    let english = post(
        &app,
        &token,
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
    consolidate(&app, &token, "alice").await;
    let chinese = post(
        &app,
        &token,
        "wang",
        "s2",
        &[
            "你好",
            "我住在上海",
            "我喜欢喝绿茶",
            "以后别给我推荐咖啡",
            "哈哈",
        ],
    )
    .await;
    consolidate(&app, &token, "wang").await;

    let alice = memories_when(&app, &token, "alice", "English memories", |m| m.len() >= 3).await;
    let texts = contents(&alice).join(" | ");
    for expected in ["Lyon", "green tea", "launch"] {
        assert!(texts.contains(expected), "{expected} missing from {texts}");
    }
    let posted: BTreeSet<String> = english.into_iter().collect();
    for memory in &alice {
        assert_eq!(memory["provenance"]["producer"]["strategy"], "rules");
        let sources = memory["provenance"]["source_event_ids"].as_array().unwrap();
        assert!(!sources.is_empty(), "{memory}");
        assert!(
            sources.iter().all(|s| posted.contains(s.as_str().unwrap())),
            "provenance points at the posted messages: {memory}"
        );
        assert_eq!(memory["session"], "s1");
    }
    let lyon = alice
        .iter()
        .find(|m| m["content"].as_str().unwrap().contains("Lyon"))
        .unwrap();
    assert_eq!(lyon["kind"], "fact");
    let tea = alice
        .iter()
        .find(|m| m["content"].as_str().unwrap().contains("green tea"))
        .unwrap();
    assert_eq!(tea["kind"], "preference");

    let wang = memories_when(&app, &token, "wang", "Chinese memories", |m| m.len() >= 3).await;
    let texts = contents(&wang).join(" | ");
    for expected in ["上海", "绿茶", "咖啡"] {
        assert!(texts.contains(expected), "{expected} missing from {texts}");
    }
    let posted: BTreeSet<String> = chinese.into_iter().collect();
    assert!(wang.iter().all(|m| m["provenance"]["source_event_ids"]
        .as_array()
        .unwrap()
        .iter()
        .all(|s| posted.contains(s.as_str().unwrap()))));
    let rule = wang
        .iter()
        .find(|m| m["content"].as_str().unwrap().contains("咖啡"))
        .unwrap();
    assert_eq!(rule["kind"], "rule");

    // Consolidated before alice and wang, in log order: nothing came of it.
    let chatty = app.get_json("/v1/subjects/chatty/memories", &token).await;
    assert!(
        chatty["memories"].as_array().unwrap().is_empty(),
        "{chatty}"
    );
}

#[tokio::test]
async fn a_repeated_fact_reinforces_instead_of_duplicating_and_replays_create_nothing() {
    let app = spawn_app_with_model(MANUAL).await;
    let token = app.admin("acme");
    post(&app, &token, "bob", "s1", &["I live in Lyon."]).await;
    consolidate(&app, &token, "bob").await;
    memories_when(&app, &token, "bob", "first memory", |m| m.len() == 1).await;

    post(&app, &token, "bob", "s2", &["I live in Lyon."]).await;
    consolidate(&app, &token, "bob").await;
    let memories = memories_when(&app, &token, "bob", "reinforcement", |m| {
        m.len() == 1 && m[0]["reinforcements"] == 1
    })
    .await;
    assert_eq!(
        memories[0]["provenance"]["source_event_ids"]
            .as_array()
            .unwrap()
            .len(),
        2,
        "both messages are its sources"
    );

    // Re-posting the same messages (same ids) and asking again creates nothing.
    let again = app
        .post_json("/v1/subjects/bob/messages", &token, json!({"messages": [{"role": "user", "content": "I love jazz.", "id": "fixed-1", "session": "s3"}]}))
        .await;
    assert_eq!(again["accepted"], 1);
    consolidate(&app, &token, "bob").await;
    memories_when(&app, &token, "bob", "jazz memory", |m| m.len() == 2).await;
    let retry = app
        .post_json("/v1/subjects/bob/messages", &token, json!({"messages": [{"role": "user", "content": "I love jazz.", "id": "fixed-1", "session": "s3"}]}))
        .await;
    assert_eq!(retry["duplicates"], 1);
    consolidate(&app, &token, "bob").await;
    post(
        &app,
        &token,
        "bob",
        "s4",
        &["I work at the harbour office."],
    )
    .await;
    consolidate(&app, &token, "bob").await;
    let memories = memories_when(&app, &token, "bob", "harbour memory", |m| m.len() >= 3).await;
    assert_eq!(memories.len(), 3, "{:?}", contents(&memories));
    let jazz: Vec<_> = memories
        .iter()
        .filter(|m| m["content"].as_str().unwrap().contains("jazz"))
        .collect();
    assert_eq!(jazz.len(), 1);
    assert_eq!(jazz[0]["reinforcements"], 0);
}

#[tokio::test]
async fn search_and_context_return_memories_in_relevance_order() {
    let app = spawn_app_with_model(MANUAL).await;
    let token = app.admin("acme");
    for (content, kind) in [
        ("Lives in Lyon, France", "fact"),
        ("Loves green tea in the morning", "preference"),
        ("Has two cats named Miso and Tofu", "fact"),
        ("Decided to learn the piano this year", "decision"),
        ("住在上海浦东", "fact"),
    ] {
        app.post_json(
            "/v1/subjects/carol/memories",
            &token,
            json!({"content": content, "kind": kind}),
        )
        .await;
    }
    memories_when(&app, &token, "carol", "projection", |m| m.len() == 5).await;

    let search = |query: &'static str, mode: &'static str| {
        let app = &app;
        let token = &token;
        async move {
            let body = app
                .post_json(
                    "/v1/subjects/carol/search",
                    token,
                    json!({"query": query, "k": 3, "mode": mode}),
                )
                .await;
            body["results"].as_array().unwrap().clone()
        }
    };
    for mode in ["hybrid", "semantic"] {
        let results = search("which city does she live in?", mode).await;
        assert!(
            results[0]["memory"]["content"]
                .as_str()
                .unwrap()
                .contains("Lyon"),
            "{mode}: {results:?}"
        );
        let scores: Vec<f64> = results
            .iter()
            .map(|r| r["score"].as_f64().unwrap())
            .collect();
        assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
        assert!(results[0]["components"]["relevance"].as_f64().is_some());
        assert!(results[0]["memory"]["provenance"]["producer"].is_object());
    }
    let pets = search("what pets do they have", "hybrid").await;
    assert!(
        pets[0]["memory"]["content"]
            .as_str()
            .unwrap()
            .contains("cats"),
        "{pets:?}"
    );
    let keyword = search("piano", "keyword").await;
    assert!(keyword[0]["memory"]["content"]
        .as_str()
        .unwrap()
        .contains("piano"));
    assert!(keyword[0]["components"]["sparse_rank"].is_number());
    let chinese = search("住在哪里 上海", "hybrid").await;
    assert!(
        chinese[0]["memory"]["content"]
            .as_str()
            .unwrap()
            .contains("上海"),
        "{chinese:?}"
    );

    let context = app
        .post_json(
            "/v1/subjects/carol/context",
            &token,
            json!({"messages": [
                {"role": "user", "content": "Can you recommend something to drink?"},
                {"role": "assistant", "content": "Sure, what do you like?"},
                {"role": "user", "content": "Something warm for the morning"}
            ], "max_memories": 2, "token_budget": 200}),
        )
        .await;
    let block = context["block"].as_str().unwrap();
    assert!(block.contains("[preference] Loves green tea"), "{block}");
    assert!(block.contains("importance"), "{block}");
    assert!(context["memories"].as_array().unwrap().len() <= 2);
    assert!(context["tokens"].as_u64().unwrap() <= 200);

    let filtered = app
        .post_json(
            "/v1/subjects/carol/search",
            &token,
            json!({"query": "cats", "filters": {"kinds": ["preference"]}}),
        )
        .await;
    assert!(filtered["results"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["memory"]["kind"] == "preference"));
}

#[tokio::test]
async fn the_forgetter_archives_an_old_unimportant_memory() {
    let app = spawn_app_with_model(
        "[forgetting]\ninterval_seconds = 0.3\n[forgetting.default]\nhalf_life = 4\nmin_age = 0\narchive_below = 0.1\nexpire_below = 0.0\nttl = {}\n",
    )
    .await;
    let token = app.admin("acme");
    let faint = app
        .post_json("/v1/subjects/dave/memories", &token, json!({"content": "Once mentioned a blue umbrella", "kind": "fact", "importance": 0.15}))
        .await;
    let strong = app
        .post_json(
            "/v1/subjects/dave/memories",
            &token,
            json!({"content": "Is allergic to peanuts", "kind": "fact", "importance": 1.0}),
        )
        .await;
    let faint_id = faint["id"].as_str().unwrap().to_owned();
    let archived = app
        .wait_for(
            &format!("/v1/memories/{faint_id}"),
            &token,
            "archiving",
            |m| m["state"] == "archived",
        )
        .await;
    assert_eq!(archived["state"], "archived");
    let history = app
        .get_json(&format!("/v1/memories/{faint_id}/history"), &token)
        .await;
    let last = history["versions"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["event_type"], "MemoryArchived");
    assert_eq!(last["actor"], "mnemo-forgetter");
    assert!(last["reason"]
        .as_str()
        .unwrap()
        .contains("archive threshold"));
    let strong_now = app
        .get_json(
            &format!("/v1/memories/{}", strong["id"].as_str().unwrap()),
            &token,
        )
        .await;
    assert_eq!(strong_now["state"], "active");

    // Archived: out of default search, still findable with include_archived.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let default = app
        .post_json(
            "/v1/subjects/dave/search",
            &token,
            json!({"query": "blue umbrella"}),
        )
        .await;
    assert!(default["results"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["memory"]["id"] != faint_id.as_str()));
    let archived_too = app
        .post_json(
            "/v1/subjects/dave/search",
            &token,
            json!({"query": "blue umbrella", "filters": {"include_archived": true}}),
        )
        .await;
    assert_eq!(
        archived_too["results"][0]["memory"]["id"],
        faint_id.as_str()
    );
}

#[tokio::test]
async fn after_erasure_search_finds_nothing_and_no_vector_is_left() {
    let app = spawn_app_with_model(MANUAL).await;
    let token = app.admin("acme");
    post(
        &app,
        &token,
        "erin",
        "s1",
        &["I live in Lyon.", "I love green tea."],
    )
    .await;
    consolidate(&app, &token, "erin").await;
    app.post_json(
        "/v1/subjects/frank/memories",
        &token,
        json!({"content": "Lives in Lyon too", "kind": "fact"}),
    )
    .await;
    memories_when(&app, &token, "erin", "memories", |m| m.len() == 2).await;
    memories_when(&app, &token, "frank", "memories", |m| m.len() == 1).await;
    let tenant = mnemo_domain::TenantId::parse("acme").unwrap();
    let erin = mnemo_domain::SubjectId::parse("erin").unwrap();
    // Two memories and the two messages' episodes.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while app.index.count(&tenant, Some(&erin)).await.unwrap() < 4 {
        assert!(
            std::time::Instant::now() < deadline,
            "episodes never indexed"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(app.index.count(&tenant, Some(&erin)).await.unwrap(), 4);

    let status = app.erase(&token, "erin").await;
    let steps = status["receipt"]["steps"].as_array().unwrap();
    let vectors = steps
        .iter()
        .find(|s| s["store"] == "vector_index")
        .expect("vector step");
    assert_eq!(vectors["count"], 4);
    assert_eq!(app.index.count(&tenant, Some(&erin)).await.unwrap(), 0);
    let results = app
        .post_json("/v1/subjects/erin/search", &token, json!({"query": "Lyon"}))
        .await;
    assert!(results["results"].as_array().unwrap().is_empty());
    let frank = app
        .post_json(
            "/v1/subjects/frank/search",
            &token,
            json!({"query": "Lyon"}),
        )
        .await;
    assert_eq!(
        frank["results"].as_array().unwrap().len(),
        1,
        "other subjects keep theirs"
    );
}

/// Gives every span in this test binary an OpenTelemetry context (nothing is
/// exported), as a server with `MNEMO_OTLP_ENDPOINT` has. Global: tracing
/// caches per call site whether anyone listens.
fn trace_spans() {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        use tracing_subscriber::layer::SubscriberExt;
        let subscriber =
            tracing_subscriber::registry().with(mnemo_telemetry::otel_layer_for_tests());
        // Another test binary's subscriber cannot be here; one of this
        // binary's may: either way spans then carry a context.
        let _ = tracing::subscriber::set_global_default(subscriber);
    });
}

#[tokio::test]
async fn memories_carry_the_trace_of_the_request_that_asked_for_them() {
    trace_spans();
    let app = spawn_app_with_model(MANUAL).await;
    let token = app.admin("acme");
    post(&app, &token, "tracy", "s1", &["I love hiking in the Alps"]).await;
    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let response = app
        .client
        .post(format!("{}/v1/subjects/tracy/consolidate", app.address))
        .bearer_auth(&token)
        .header("traceparent", format!("00-{trace_id}-00f067aa0ba902b7-01"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 202);
    memories_when(&app, &token, "tracy", "a memory", |m| !m.is_empty()).await;
    let created: Vec<Value> = app
        .all_events("acme")
        .await
        .into_iter()
        .filter(|e| e["type"] == "MemoryCreated")
        .collect();
    assert_eq!(created.len(), 1, "{created:?}");
    let traceparent = created[0]["traceparent"]
        .as_str()
        .unwrap_or_else(|| panic!("no traceparent on {}", created[0]));
    // ingest → relay → consolidator: the request's trace, a span of its own.
    assert_eq!(
        traceparent.split('-').nth(1),
        Some(trace_id),
        "{traceparent}"
    );
}

/// A request for one session consolidates that session's messages and
/// leaves the others waiting. The session travels sealed; the consolidator
/// must open it with the subject's key, not read it as plain JSON (it once
/// did, and dead-lettered every session request).
#[tokio::test]
async fn consolidating_one_session_leaves_the_others_waiting() {
    let app = spawn_app_with_model(MANUAL).await;
    let token = app.admin("acme");
    let (trip, _) = post_trip_then_work(&app, &token).await;
    consolidate_session(&app, &token, "ana", "trip").await;
    // The whole-subject request that follows makes the work session's
    // memory; until then only the trip session had one.
    memories_only_from(&app, &token, "ana", "the trip session's memory", &trip).await;
    consolidate(&app, &token, "ana").await;
    let all = memories_when(&app, &token, "ana", "the work session's memory", |m| {
        m.iter()
            .any(|m| m["provenance"]["source_event_ids"] != json!(trip))
    })
    .await;
    assert!(
        contents(&all).iter().any(|c| c.contains("nurse")),
        "{all:?}"
    );
}

/// A subject's new session ends its earlier one: the first message of
/// "work" consolidates what waited in "trip" at once, neither a whole
/// batch nor idle for its timeout, and nothing asked. The new session
/// itself waits; a tenant that turns the rule off keeps both waiting.
#[tokio::test]
async fn a_new_session_consolidates_the_subjects_earlier_one() {
    let config = "[consolidation.default]\nbatch_size = 50\nidle_timeout = 3600\n\
                  [consolidation.tenants.beta]\nbatch_size = 50\nidle_timeout = 3600\n\
                  end_earlier_sessions = false\n";
    let app = spawn_app_with_model(config).await;
    let token = app.admin("acme");
    let (trip, _) = post_trip_then_work(&app, &token).await;
    // Only the ended session is consolidated.
    memories_only_from(&app, &token, "ana", "the trip session's memory", &trip).await;

    // The same two sessions in a tenant with the rule off, then a request
    // for the new session alone: it is handled after both messages (one
    // subject, one partition), and the subject's drains run in the order
    // they were scheduled, so had "work" ended "trip", trip's memory
    // would be visible by the time work's is.
    let beta = app.admin("beta");
    let (_, work) = post_trip_then_work(&app, &beta).await;
    consolidate_session(&app, &beta, "ana", "work").await;
    // With the rule off the trip session still waits.
    memories_only_from(&app, &beta, "ana", "the work session's memory", &work).await;
}

/// An OpenAI-compatible embeddings endpoint on loopback that records every
/// text it is sent and answers each with a vector of its bytes; its base
/// URL and the record.
async fn recording_embedder() -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use actix_web::{web, App, HttpResponse, HttpServer};
    let sent = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let uri = format!("http://{}/v1", listener.local_addr().unwrap());
    let record = sent.clone();
    let server = HttpServer::new(move || {
        let record = record.clone();
        App::new().route(
            "/v1/embeddings",
            web::post().to(move |body: web::Json<Value>| {
                let record = record.clone();
                async move {
                    let texts: Vec<String> = body["input"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|t| t.as_str().unwrap().to_owned())
                        .collect();
                    record.lock().unwrap().extend(texts.iter().cloned());
                    let data: Vec<Value> = texts
                        .iter()
                        .enumerate()
                        .map(|(i, text)| {
                            let vector: Vec<f32> = (0..8u32)
                                .map(|d| {
                                    let sum: u32 = text.bytes().map(u32::from).sum();
                                    (sum.wrapping_mul(d + 1) % 101) as f32 + 1.0
                                })
                                .collect();
                            json!({"object": "embedding", "index": i, "embedding": vector})
                        })
                        .collect();
                    HttpResponse::Ok().json(json!({"object": "list", "data": data}))
                }
            }),
        )
    })
    .workers(1)
    .listen(listener)
    .unwrap()
    .run();
    tokio::spawn(server);
    (uri, sent)
}

#[tokio::test]
async fn the_pipeline_sends_each_text_to_the_model_once_and_search_each_query() {
    // The consolidator embeds a memory's text and the memory projection
    // embeds it again, with its source message, which the episode
    // projection embedded already: the pipeline's memo sends each of them
    // once. Search embeds every query it is asked.
    let (uri, sent) = recording_embedder().await;
    let config = tempfile::tempdir().unwrap();
    let file = config.path().join("mnemo.toml");
    std::fs::write(&file, MANUAL).unwrap();
    let app = spawn_app_with(&[
        ("MNEMO_EMBEDDER", "openai"),
        ("MNEMO_EMBED_BASE_URL", uri.as_str()),
        ("MNEMO_EMBED_MODEL", "recorder"),
        ("MNEMO_EMBED_DIMENSION", "8"),
        ("MNEMO_CONFIG", file.to_str().unwrap()),
    ])
    .await;
    let token = app.admin("acme");
    let lines = [
        "I love green tea in the morning.",
        "I live in Lyon with my two cats.",
    ];
    post(&app, &token, "alice", "s1", &lines).await;
    // Every message embedded as an episode before the consolidation.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !lines
        .iter()
        .all(|line| sent.lock().unwrap().iter().any(|t| t == line))
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "episodes never embedded"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    consolidate(&app, &token, "alice").await;
    let memories = memories_when(&app, &token, "alice", "a memory", |m| !m.is_empty()).await;
    // The memory's row is written with its point, after its key is embedded.
    let sent_now = sent.lock().unwrap().clone();
    for memory in &memories {
        let content = memory["content"].as_str().unwrap();
        assert!(
            sent_now.iter().any(|t| t == content),
            "{content} never embedded"
        );
    }
    let mut distinct = sent_now.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(
        distinct.len(),
        sent_now.len(),
        "a text sent twice: {sent_now:?}"
    );

    for _ in 0..2 {
        app.post_json(
            "/v1/subjects/alice/search",
            &token,
            json!({"query": "what does she drink?"}),
        )
        .await;
    }
    let queries = sent
        .lock()
        .unwrap()
        .iter()
        .filter(|t| *t == "what does she drink?")
        .count();
    assert_eq!(queries, 2, "search embeds each query it is asked");
    app.stop().await;
}
