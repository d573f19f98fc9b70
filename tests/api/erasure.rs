//! Erasure: the raw database never holds plaintext of what was posted
//! (before the erasure everything is sealed, afterwards the keys are gone
//! and the rows deleted), no file of the vector index holds the subject's
//! points (not even their tag tokens), export
//! returns nothing of the subject, other subjects are untouched, and the
//! receipt says what was destroyed where, one step per store. Erased stays
//! erased: the subject's memories and reviews are gone (410) for reads and
//! writes alike, and a later post for the same subject id starts afresh.

use mnemo_domain::events::{streams, ReviewRequested};
use mnemo_domain::{
    DomainEvent, EventId, EventMetadata, MemoryId, MemoryKind, SubjectId, SubjectText, TenantId,
};
use mnemo_event_store::sealed::Pending;
use mnemo_event_store::ExpectedVersion;
use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{assert_error, spawn_app, TestApp};
use crate::messages::contains;

fn database_bytes(dir: &std::path::Path) -> Vec<Vec<u8>> {
    ["mnemo.db", "mnemo.db-wal"]
        .iter()
        .filter_map(|name| std::fs::read(dir.join(name)).ok())
        .collect()
}

/// How many files under `dir` (recursively) hold `needle`.
fn files_holding(dir: &std::path::Path, needle: &str) -> usize {
    let mut found = 0;
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if std::fs::read(&path)
                .is_ok_and(|bytes| memchr::memmem::find(&bytes, needle.as_bytes()).is_some())
            {
                found += 1;
            }
        }
    }
    found
}

#[tokio::test]
async fn erasure_shreds_the_subject_everywhere_and_leaves_others_alone() {
    let app = spawn_app().await;
    let token = app.admin("acme");
    let secrets = [
        "plaintext-canary-message-7731",
        "plaintext-canary-memory-9902",
        "canary-correction-4417",
    ];
    app.post_messages(
        &token,
        "erase-me",
        json!([{"role": "user", "content": format!("remember {}", secrets[0]), "id": "m1"}]),
    )
    .await;
    // The vector index stores a tag as its keyed token in the point's
    // payload (and so in its WAL and segments): the token's bytes are what
    // the purge must remove.
    let vector_canary = "vector-tag-canary-5521";
    let created = app
        .create_memory(
            &token,
            "erase-me",
            json!({"content": format!("note {}", secrets[1]), "kind": "fact", "tags": [vector_canary]}),
        )
        .await;
    assert_eq!(created.status(), 201);
    let id = created.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    app.call(
        Method::PATCH,
        &format!("/v1/memories/{id}"),
        &token,
        Some(json!({"content": format!("note {}", secrets[2])})),
    )
    .await;
    let kept = app.memory(&token, "keep-me", "kept-memory-content").await;
    app.post_messages(
        &token,
        "keep-me",
        json!([{"role": "user", "content": "kept message content"}]),
    )
    .await;
    app.wait_for_list(&token, "erase-me", |m| m.len() == 1 && m[0]["version"] == 2)
        .await;
    app.wait_for_list(&token, "keep-me", |m| m.len() == 1).await;
    // Nothing of the subject's content is in the database files in clear,
    // not even before the erasure: the log and the bus hold it sealed, the
    // read model as sealed blobs and tag tokens. The scan does read the
    // rows SQLite wrote: the subject's pseudonymous id is there in clear.
    let before = database_bytes(app.dir.path());
    assert!(
        before.iter().any(|b| contains(b, b"erase-me")),
        "the scan reads the database files (else this test proves nothing)"
    );
    for bytes in &before {
        for secret in secrets.iter().chain([&vector_canary]) {
            assert!(
                !contains(bytes, secret.as_bytes()),
                "{secret} in clear before erasure"
            );
        }
    }
    let tag_token = app
        .log
        .cipher()
        .live_token(
            &TenantId::parse("acme").unwrap(),
            &SubjectId::parse("erase-me").unwrap(),
            mnemo_crypto::TokenPurpose::Tag,
            vector_canary,
        )
        .await
        .unwrap()
        .expect("the subject has a key");
    let vectors = app.dir.path().join("vectors");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    assert_eq!(files_holding(&vectors, vector_canary), 0, "only its token");
    while files_holding(&vectors, &tag_token) == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the vector index holds the tag's token before erasure (else this test proves nothing)"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }

    // The memory's point and the message's episode point.
    let erase_me = (
        TenantId::parse("acme").unwrap(),
        SubjectId::parse("erase-me").unwrap(),
    );
    while app
        .index
        .count(&erase_me.0, Some(&erase_me.1))
        .await
        .unwrap()
        < 2
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the episode was never indexed"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }

    let status = app.erase(&token, "erase-me").await;
    let receipt = &status["receipt"];
    assert_eq!(receipt["subject"], "erase-me");
    let steps: Vec<&Value> = receipt["steps"].as_array().unwrap().iter().collect();
    let stores: Vec<&str> = steps.iter().map(|s| s["store"].as_str().unwrap()).collect();
    assert_eq!(
        stores,
        [
            "subject_keys",
            "event_log",
            "bus",
            "event_log_legacy",
            "vector_index",
            "pipeline_state",
            "memory_read_model"
        ],
        "one step per store, the key first and the read model last"
    );
    let step = |store: &str| *steps.iter().find(|s| s["store"] == store).unwrap();
    assert_eq!(step("subject_keys")["count"], 1);
    assert_eq!(step("memory_read_model")["count"], 1);
    assert_eq!(
        receipt["events_shredded"], 3,
        "one message, a creation and a revision"
    );
    assert_eq!(step("event_log")["count"], 3);
    assert_eq!(step("bus")["count"], 3);
    assert!(step("bus")["note"]
        .as_str()
        .unwrap()
        .contains("in-process bus"));
    assert_eq!(step("vector_index")["action"], "points_purged");
    assert_eq!(
        step("vector_index")["count"],
        2,
        "the memory and the episode"
    );
    assert!(step("vector_index")["note"].is_null(), "nothing remains");
    assert_eq!(
        files_holding(&vectors, &tag_token),
        0,
        "no file of the vector index holds the erased point"
    );

    // No plaintext of the subject anywhere in the database files.
    for bytes in database_bytes(app.dir.path()) {
        for secret in secrets {
            assert!(
                !contains(&bytes, secret.as_bytes()),
                "{secret} survived erasure"
            );
        }
    }
    // The API has nothing of the subject left.
    let export = app.get_json("/v1/subjects/erase-me/export", &token).await;
    assert!(export["messages"].as_array().unwrap().is_empty());
    assert!(export["memories"].as_array().unwrap().is_empty());
    assert_eq!(export["erasures"][0]["erasure_id"], receipt["erasure_id"]);
    let list = app.get_json("/v1/subjects/erase-me/memories", &token).await;
    assert!(list["memories"].as_array().unwrap().is_empty());
    assert_error(
        app.get(&format!("/v1/memories/{id}"), &token).await,
        410,
        "subject_erased",
    )
    .await;
    let history = app
        .get_json(&format!("/v1/memories/{id}/history"), &token)
        .await;
    for version in history["versions"].as_array().unwrap() {
        assert!(version["memory"]["content"].is_null());
        assert_eq!(version["memory"]["state"], "erased");
        assert!(version["changes"]["content"].is_null());
        assert_eq!(
            version["actor"], "acme-admin",
            "the rest of each event stays readable"
        );
    }

    // The other subject is untouched.
    assert_eq!(
        app.get_json(&format!("/v1/memories/{kept}"), &token).await["content"],
        "kept-memory-content"
    );
    let other = app.get_json("/v1/subjects/keep-me/export", &token).await;
    assert_eq!(other["messages"][0]["content"], "kept message content");

    // The log still holds every event (append-only), with the receipt.
    let events = app.all_events("acme").await;
    assert!(events.iter().any(|e| e["type"] == "SubjectErased"));
    assert!(events.iter().any(|e| e["type"] == "MessageReceived"
        && e["subject"] == "erase-me"
        && e["payload"]["content"].is_null()));
}

#[tokio::test]
async fn a_subject_can_come_back_after_erasure_with_a_new_key() {
    let app = spawn_app().await;
    let token = app.admin("acme");
    app.post_messages(
        &token,
        "u",
        json!([{"role": "user", "content": "before erasure"}]),
    )
    .await;
    app.erase(&token, "u").await;
    app.post_messages(
        &token,
        "u",
        json!([{"role": "user", "content": "after erasure"}]),
    )
    .await;
    let export = app.get_json("/v1/subjects/u/export", &token).await;
    let messages = export["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0]["content"], "after erasure");
}

#[tokio::test]
async fn unknown_erasures_are_not_found() {
    let app = spawn_app().await;
    let token = app.admin("acme");
    let id = uuid::Uuid::now_v7();
    assert_error(
        app.get(&format!("/v1/erasures/{id}"), &token).await,
        404,
        "erasure_not_found",
    )
    .await;
}

/// How many events the tenant's log holds, through the audit API.
async fn event_count(app: &TestApp, tenant: &str) -> usize {
    app.all_events(tenant).await.len()
}

async fn consolidate(app: &TestApp, token: &str, subject: &str) -> reqwest::Response {
    app.call(
        Method::POST,
        &format!("/v1/subjects/{subject}/consolidate"),
        token,
        None,
    )
    .await
}

#[tokio::test]
async fn an_erased_memory_is_gone_and_its_history_shows_content_null_and_state_erased() {
    let app = spawn_app().await;
    let token = app.admin("acme");
    let id = app.memory(&token, "u", "likes green tea").await;
    app.call(
        Method::PATCH,
        &format!("/v1/memories/{id}"),
        &token,
        Some(json!({"content": "likes oolong tea"})),
    )
    .await;
    app.erase(&token, "u").await;

    assert_error(
        app.get(&format!("/v1/memories/{id}"), &token).await,
        410,
        "subject_erased",
    )
    .await;
    let history = app
        .get_json(&format!("/v1/memories/{id}/history"), &token)
        .await;
    let versions = history["versions"].as_array().unwrap();
    assert_eq!(
        versions.len(),
        2,
        "what happened stays on record: {history}"
    );
    for version in versions {
        assert!(version["memory"]["content"].is_null(), "{version}");
        assert_eq!(version["memory"]["state"], "erased");
        assert!(version["changes"]["content"].is_null(), "{version}");
    }
    assert_eq!(versions[1]["event_type"], "MemoryRevised");
    // A memory that never existed is still not found, not gone.
    let unknown = uuid::Uuid::now_v7();
    assert_error(
        app.get(&format!("/v1/memories/{unknown}"), &token).await,
        404,
        "memory_not_found",
    )
    .await;
}

#[tokio::test]
async fn an_erased_memory_cannot_be_revived_changed_or_deleted_and_nothing_is_appended() {
    let app = spawn_app().await;
    let token = app.admin("acme");
    let id = app.memory(&token, "u", "lives in Lyon").await;
    app.erase(&token, "u").await;
    let before = event_count(&app, "acme").await;

    let revive = app
        .call(
            Method::PATCH,
            &format!("/v1/memories/{id}"),
            &token,
            Some(json!({"content": "new"})),
        )
        .await;
    assert_error(revive, 410, "subject_erased").await;
    let retag = app
        .call(
            Method::PATCH,
            &format!("/v1/memories/{id}"),
            &token,
            Some(json!({"tags": ["x"], "expected_version": 1})),
        )
        .await;
    assert_error(retag, 410, "subject_erased").await;
    let delete = app
        .call(Method::DELETE, &format!("/v1/memories/{id}"), &token, None)
        .await;
    assert_error(delete, 410, "subject_erased").await;

    assert_eq!(event_count(&app, "acme").await, before, "nothing appended");
    assert_error(
        app.get(&format!("/v1/memories/{id}"), &token).await,
        410,
        "subject_erased",
    )
    .await;
    let list = app.get_json("/v1/subjects/u/memories", &token).await;
    assert!(list["memories"].as_array().unwrap().is_empty(), "{list}");
}

/// A review request as the consolidator appends it.
async fn request_review(app: &TestApp, subject: &str, proposed: &str) -> String {
    let review_id = MemoryId::new();
    app.log
        .append_one(
            &TenantId::parse("acme").unwrap(),
            &streams::review(&review_id),
            ExpectedVersion::NoStream,
            Pending {
                event_id: EventId::new(),
                subject: Some(SubjectId::parse(subject).unwrap()),
                event: DomainEvent::ReviewRequested(ReviewRequested {
                    review_id,
                    proposed: SubjectText::new(proposed),
                    kind: MemoryKind::Preference,
                    confidence: 0.7,
                    source_event_ids: vec![],
                    tags: vec![],
                    action: Default::default(),
                    target: None,
                    reason: None,
                    reason_code: None,
                    signals: vec![],
                    excerpt: None,
                    producer: None,
                    session: None,
                    pii: Default::default(),
                }),
                metadata: EventMetadata {
                    actor: "consolidator".to_owned(),
                    ..Default::default()
                },
            },
        )
        .await
        .unwrap();
    review_id.to_string()
}

#[tokio::test]
async fn a_decision_on_an_erased_subjects_review_is_gone_and_appends_nothing() {
    let app = spawn_app().await;
    let token = app.admin("acme");
    let gone = request_review(&app, "u", "likes matcha").await;
    let kept = request_review(&app, "other", "likes oolong").await;
    app.erase(&token, "u").await;
    let before = event_count(&app, "acme").await;

    for body in [
        json!({"decision": "approve"}),
        json!({"decision": "reject"}),
        json!({"decision": "edit", "content": "likes sencha"}),
    ] {
        let response = app
            .call(
                Method::POST,
                &format!("/v1/review/{gone}"),
                &token,
                Some(body),
            )
            .await;
        assert_error(response, 410, "subject_erased").await;
    }
    assert_eq!(event_count(&app, "acme").await, before, "nothing appended");
    // The queue does not show it; another subject's review is decided as usual.
    let queue = app.get_json("/v1/review", &token).await;
    let ids: Vec<&str> = queue["reviews"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [kept.as_str()]);
    let decided = app
        .call(
            Method::POST,
            &format!("/v1/review/{kept}"),
            &token,
            Some(json!({"decision": "approve"})),
        )
        .await;
    assert_eq!(decided.status(), 200);
}

#[tokio::test]
async fn consolidating_an_erased_subject_with_nothing_posted_since_is_gone() {
    let app = spawn_app().await;
    let token = app.admin("acme");
    app.post_messages(
        &token,
        "u",
        json!([{"role": "user", "content": "I live in Lyon.", "id": "m1"}]),
    )
    .await;
    app.erase(&token, "u").await;
    let before = event_count(&app, "acme").await;
    assert_error(consolidate(&app, &token, "u").await, 410, "subject_erased").await;
    assert_eq!(event_count(&app, "acme").await, before);
    // A memory citing a message from before the erasure is refused too.
    let from_before = app
        .create_memory(
            &token,
            "u",
            json!({"content": "lives in Lyon", "kind": "fact", "sources": ["m1"]}),
        )
        .await;
    // Its id's token was made with the destroyed key: as unknown as one
    // never posted (by design). The refusal makes no key, so consolidating
    // is still gone afterwards.
    assert_error(from_before, 422, "unknown_source").await;
    assert_eq!(event_count(&app, "acme").await, before);
    assert_error(consolidate(&app, &token, "u").await, 410, "subject_erased").await;
}

/// Polls until the subject's memories mention each of `topics`.
async fn wait_for_topics(app: &TestApp, token: &str, subject: &str, topics: &[&str]) -> Vec<Value> {
    let body = app
        .wait_for(
            &format!("/v1/subjects/{subject}/memories"),
            token,
            "consolidation",
            |body| {
                let texts: Vec<&str> = body["memories"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(|m| m["content"].as_str())
                    .collect();
                topics
                    .iter()
                    .all(|t| texts.iter().any(|text| text.contains(t)))
            },
        )
        .await;
    body["memories"].as_array().unwrap().clone()
}

fn event_ids(posted: &Value) -> Vec<String> {
    posted["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event_id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn the_same_message_ids_after_erasure_are_accepted_and_consolidated_afresh() {
    let app = spawn_app().await;
    let token = app.admin("acme");
    let topics = ["Lyon", "green tea", "launch"];
    let messages = json!([
        {"role": "user", "content": "I live in Lyon with my two cats.", "id": "m1"},
        {"role": "user", "content": "I love green tea in the morning.", "id": "m2"},
        {"role": "user", "content": "We decided to move the launch to March.", "id": "m3"},
    ]);
    let first = app.post_messages(&token, "u", messages.clone()).await;
    assert_eq!(first.status(), 202);
    let first: Value = first.json().await.unwrap();
    assert_eq!(consolidate(&app, &token, "u").await.status(), 202);
    let old = wait_for_topics(&app, &token, "u", &topics).await;
    let old_ids: Vec<String> = old
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_owned())
        .collect();

    app.erase(&token, "u").await;
    let again = app.post_messages(&token, "u", messages.clone()).await;
    assert_eq!(again.status(), 202);
    let again: Value = again.json().await.unwrap();
    assert_eq!(again["accepted"], 3, "{again}");
    assert_eq!(again["duplicates"], 0, "{again}");
    let (old_events, new_events) = (event_ids(&first), event_ids(&again));
    assert!(
        new_events.iter().all(|e| !old_events.contains(e)),
        "new event ids"
    );
    // Within the new generation, a retry is a duplicate as always.
    let retry: Value = app
        .post_messages(&token, "u", messages)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(retry["accepted"], 0, "{retry}");
    assert_eq!(retry["duplicates"], 3, "{retry}");

    assert_eq!(consolidate(&app, &token, "u").await.status(), 202);
    let new = wait_for_topics(&app, &token, "u", &topics).await;
    for memory in &new {
        let id = memory["id"].as_str().unwrap();
        assert!(
            !old_ids.iter().any(|old| old == id),
            "a new memory, not a revived one"
        );
        assert_eq!(memory["state"], "active");
        let sources = memory["provenance"]["source_event_ids"].as_array().unwrap();
        assert!(
            sources
                .iter()
                .all(|s| new_events.iter().any(|e| s == e.as_str())),
            "made of the new messages: {memory}"
        );
    }
    let found = app
        .post_json("/v1/subjects/u/search", &token, json!({"query": "Lyon"}))
        .await;
    let results = found["results"].as_array().unwrap();
    assert!(!results.is_empty(), "{found}");
    for result in results {
        // Memories and episodes alike stand only for the new messages.
        let id = result["memory"]["id"]
            .as_str()
            .or_else(|| result["episode"]["id"].as_str())
            .unwrap();
        assert!(!old_ids.iter().any(|old| old == id), "{found}");
        for source in result["provenance"]["source_event_ids"].as_array().unwrap() {
            assert!(new_events.iter().any(|e| source == e.as_str()), "{found}");
        }
    }
    for id in &old_ids {
        assert_error(
            app.get(&format!("/v1/memories/{id}"), &token).await,
            410,
            "subject_erased",
        )
        .await;
    }
    let export = app.get_json("/v1/subjects/u/export", &token).await;
    assert_eq!(export["messages"].as_array().unwrap().len(), 3);
    assert_eq!(export["memories"].as_array().unwrap().len(), new.len());
}

#[tokio::test]
async fn a_message_from_before_the_erasure_that_reaches_the_buffer_late_is_ignored() {
    let app = spawn_app().await;
    let token = app.admin("acme");
    let posted: Value = app
        .post_messages(
            &token,
            "u",
            json!([{"role": "user", "content": "I live in Lyon with my two cats.", "id": "m1"}]),
        )
        .await
        .json()
        .await
        .unwrap();
    app.erase(&token, "u").await;
    // The bus delivers the old message after the forgetter emptied the
    // subject's buffer (a redelivery, a lagging consumer).
    let conversation = mnemo_consolidator::buffer::Conversation {
        tenant: TenantId::parse("acme").unwrap(),
        subject: SubjectId::parse("u").unwrap(),
        session: String::new(),
    };
    let event = &posted["events"][0];
    let pipeline = app.consolidator.pipeline();
    pipeline
        .buffer
        .add(
            &conversation,
            EventId::parse(event["event_id"].as_str().unwrap()).unwrap(),
            event["position"].as_i64().unwrap(),
        )
        .await
        .unwrap();
    let outcome = app.consolidator.drain(&conversation).await.unwrap();
    assert_eq!(
        outcome.messages, 0,
        "its content reads as erased: {outcome:?}"
    );
    assert_eq!(outcome.created + outcome.reviews + outcome.reinforced, 0);
    assert!(pipeline
        .buffer
        .batch(&conversation, 10)
        .await
        .unwrap()
        .is_empty());
    let list = app.get_json("/v1/subjects/u/memories", &token).await;
    assert!(list["memories"].as_array().unwrap().is_empty(), "{list}");
}
