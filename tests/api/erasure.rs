//! Erasure: afterwards the raw database holds no plaintext of what was
//! posted, export returns nothing of the subject, other subjects are
//! untouched, and the receipt says what was destroyed where.

use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{assert_error, spawn_app};
use crate::messages::contains;

fn database_bytes(dir: &std::path::Path) -> Vec<Vec<u8>> {
    ["mnemo.db", "mnemo.db-wal"]
        .iter()
        .filter_map(|name| std::fs::read(dir.join(name)).ok())
        .collect()
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
    let id = app
        .memory(&token, "erase-me", &format!("note {}", secrets[1]))
        .await;
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
    let memory_text = format!("note {}", secrets[2]);
    assert!(
        database_bytes(app.dir.path())
            .iter()
            .any(|b| contains(b, memory_text.as_bytes())),
        "the read model holds the plaintext before erasure (else this test proves nothing)"
    );

    let status = app.erase(&token, "erase-me").await;
    let receipt = &status["receipt"];
    assert_eq!(receipt["subject"], "erase-me");
    let steps: Vec<&Value> = receipt["steps"].as_array().unwrap().iter().collect();
    assert!(steps
        .iter()
        .any(|s| s["store"] == "subject_keys" && s["count"] == 1));
    assert!(steps
        .iter()
        .any(|s| s["store"] == "memory_read_model" && s["count"] == 1));
    assert_eq!(
        receipt["events_shredded"], 3,
        "one message, a creation and a revision"
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
    let memory = app.get_json(&format!("/v1/memories/{id}"), &token).await;
    assert!(
        memory["content"].is_null(),
        "content reads as erased: {memory}"
    );
    let history = app
        .get_json(&format!("/v1/memories/{id}/history"), &token)
        .await;
    for version in history["versions"].as_array().unwrap() {
        assert!(version["memory"]["content"].is_null());
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
