use serde_json::json;

use crate::helpers::spawn_app;

#[tokio::test]
async fn messages_are_accepted_with_their_event_ids() {
    let app = spawn_app().await;
    let token = app.admin("acme");
    let response = app
        .post_messages(
            &token,
            "user-1",
            json!([
                {"role": "user", "content": "I live in Lyon", "id": "m1", "session": "s-1", "agent": "bot"},
                {"role": "assistant", "content": "Nice city!", "timestamp": "2024-05-08T13:56:00Z"}
            ]),
        )
        .await;
    assert_eq!(response.status(), 202);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["accepted"], 2);
    assert_eq!(body["events"][0]["id"], "m1");
    let events = app.all_events("acme").await;
    assert_eq!(events.len(), 2);
    assert_eq!(events[0]["type"], "MessageReceived");
    assert_eq!(events[0]["actor"], "acme-admin");
    assert_eq!(events[0]["payload"]["session"], "s-1");
    assert_eq!(events[1]["payload"]["timestamp"], "2024-05-08T13:56:00Z");
    assert_eq!(events[0]["event_id"], body["events"][0]["event_id"]);
}

#[tokio::test]
async fn a_retried_batch_appends_nothing_twice() {
    let app = spawn_app().await;
    let token = app.admin("acme");
    let batch = json!([
        {"role": "user", "content": "first", "id": "a"},
        {"role": "user", "content": "second", "id": "b"}
    ]);
    let first: serde_json::Value = app
        .post_messages(&token, "u", batch.clone())
        .await
        .json()
        .await
        .unwrap();
    let again = app.post_messages(&token, "u", batch).await;
    assert_eq!(again.status(), 202);
    let again: serde_json::Value = again.json().await.unwrap();
    assert_eq!(again["accepted"], 0);
    assert_eq!(again["duplicates"], 2);
    assert_eq!(
        again["events"][0]["event_id"],
        first["events"][0]["event_id"]
    );
    // A batch mixing a known id with a new one appends only the new one.
    let mixed: serde_json::Value = app
        .post_messages(&token, "u", json!([{"role": "user", "content": "first", "id": "a"}, {"role": "user", "content": "third", "id": "c"}]))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(mixed["accepted"], 1);
    assert_eq!(app.all_events("acme").await.len(), 3);
}

#[tokio::test]
async fn message_ids_are_per_subject() {
    let app = spawn_app().await;
    let token = app.admin("acme");
    for subject in ["u1", "u2"] {
        let body: serde_json::Value = app
            .post_messages(
                &token,
                subject,
                json!([{"role": "user", "content": "hello there", "id": "same"}]),
            )
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(body["accepted"], 1, "{subject}");
    }
}

#[tokio::test]
async fn pii_is_scrubbed_before_it_is_stored_and_only_counts_are_recorded() {
    let app = spawn_app().await;
    let token = app.admin("acme");
    let response = app
        .post_messages(
            &token,
            "u1",
            json!([{"role": "user", "content": "Mail me at jane.doe@example.com or call +44 20 7946 0958", "id": "p1"}]),
        )
        .await;
    assert_eq!(response.status(), 202);
    let events = app.all_events("acme").await;
    let payload = &events[0]["payload"];
    let content = payload["content"].as_str().unwrap();
    assert!(!content.contains("jane.doe"), "{content}");
    assert!(!content.contains("7946"), "{content}");
    assert!(content.contains("[EMAIL]"), "{content}");
    assert_eq!(payload["pii"]["email"], 1);
    assert_eq!(payload["pii"]["phone"], 1);
    // Nowhere in the database, even encrypted-at-rest aside.
    let db = std::fs::read(app.dir.path().join("mnemo.db")).unwrap();
    let wal = std::fs::read(app.dir.path().join("mnemo.db-wal")).unwrap_or_default();
    for bytes in [&db, &wal] {
        assert!(!contains(bytes, b"jane.doe"));
    }
}

#[tokio::test]
async fn message_content_is_encrypted_in_the_log() {
    let app = spawn_app().await;
    let token = app.admin("acme");
    app.post_messages(
        &token,
        "u1",
        json!([{"role": "user", "content": "my favourite colour is vermilion-xyzzy"}]),
    )
    .await;
    let db = std::fs::read(app.dir.path().join("mnemo.db")).unwrap();
    let wal = std::fs::read(app.dir.path().join("mnemo.db-wal")).unwrap_or_default();
    assert!(!contains(&db, b"vermilion-xyzzy") && !contains(&wal, b"vermilion-xyzzy"));
    // ...and readable through the API.
    let events = app.all_events("acme").await;
    assert_eq!(
        events[0]["payload"]["content"],
        "my favourite colour is vermilion-xyzzy"
    );
}

pub fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}
