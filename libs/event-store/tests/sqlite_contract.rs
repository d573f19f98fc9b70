//! The EventStore contract on SQLite, plus what only SQLite can show: the
//! database itself refuses UPDATE and DELETE on the log.

use std::sync::Arc;

use mnemo_event_store::sqlite::{self, SqliteEventStore};
use mnemo_event_store::testsuite::{event, tenant};
use mnemo_event_store::{event_store_contract_tests, EventStore, ExpectedVersion};

async fn fresh_dir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

async fn open_in(dir: Arc<tempfile::TempDir>) -> Arc<dyn EventStore> {
    Arc::new(sqlite::open(&dir.path().join("mnemo.db")).await.unwrap())
}

event_store_contract_tests!(setup: fresh_dir(), open: open_in);

#[tokio::test]
async fn the_database_refuses_update_and_delete() {
    let dir = tempfile::tempdir().unwrap();
    let store = sqlite::open(&dir.path().join("mnemo.db")).await.unwrap();
    store
        .append(
            &tenant("t1"),
            "memory-x",
            ExpectedVersion::Any,
            vec![event("MemoryCreated", None, "a")],
        )
        .await
        .unwrap();
    let update = sqlx::query("UPDATE events SET actor = 'mallory'")
        .execute(store.pool())
        .await;
    assert!(update.unwrap_err().to_string().contains("append-only"));
    let delete = sqlx::query("DELETE FROM events")
        .execute(store.pool())
        .await;
    assert!(delete.unwrap_err().to_string().contains("append-only"));
    let stream = store.read_stream(&tenant("t1"), "memory-x").await.unwrap();
    assert_eq!(stream.len(), 1);
    assert_eq!(stream[0].metadata.actor, "a");
}

#[tokio::test]
async fn wait_for_append_wakes_on_a_new_event() {
    let dir = tempfile::tempdir().unwrap();
    let store: SqliteEventStore = sqlite::open(&dir.path().join("mnemo.db")).await.unwrap();
    let waiter = {
        let store = store.clone();
        tokio::spawn(async move {
            let started = std::time::Instant::now();
            store
                .wait_for_append(0, std::time::Duration::from_secs(30))
                .await;
            started.elapsed()
        })
    };
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    store
        .append(
            &tenant("t1"),
            "s",
            ExpectedVersion::Any,
            vec![event("MessageReceived", None, "a")],
        )
        .await
        .unwrap();
    let waited = waiter.await.unwrap();
    assert!(waited < std::time::Duration::from_secs(10));
}

/// An event as it was stored before tags, session ids and message ids were
/// sealed, written past the adapter (which now refuses the plain form).
async fn insert_legacy(store: &SqliteEventStore, subject: &str, event_type: &str, payload: &str) {
    sqlx::query(
        "INSERT INTO events (event_id, tenant_id, stream_id, stream_version, subject_id, \
         event_type, schema_version, actor, payload, metadata, recorded_at) \
         VALUES (?, 't1', ?, 1, ?, ?, 1, 'a', ?, ?, 0)",
    )
    .bind(mnemo_domain::EventId::new().to_string())
    .bind(format!("legacy-{}", mnemo_domain::EventId::new()))
    .bind(subject)
    .bind(event_type)
    .bind(payload)
    .bind(format!(
        r#"{{"actor":"a","correlation_id":"req-{subject}@example.com"}}"#
    ))
    .execute(store.pool())
    .await
    .unwrap();
}

#[tokio::test]
async fn an_erasure_redacts_the_plain_fields_of_legacy_events_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let store = sqlite::open(&dir.path().join("mnemo.db")).await.unwrap();
    let canary = "legacy-canary-tag-5521";
    insert_legacy(
        &store,
        "erased",
        "MemoryCreated",
        &format!(
            r#"{{"tags":["{canary}"],"session":"sess-canary-77","content":{{"$erased":true}}}}"#
        ),
    )
    .await;
    insert_legacy(
        &store,
        "erased",
        "MessageReceived",
        r#"{"message_id":"jane.doe@example.com","role":"user","content":{"$erased":true}}"#,
    )
    .await;
    insert_legacy(
        &store,
        "kept",
        "MemoryCreated",
        r#"{"tags":["kept-tag-9"]}"#,
    )
    .await;
    let bytes = || {
        ["mnemo.db", "mnemo.db-wal"]
            .iter()
            .filter_map(|f| std::fs::read(dir.path().join(f)).ok())
            .collect::<Vec<_>>()
    };
    let found = |needle: &str| {
        bytes()
            .iter()
            .any(|b| b.windows(needle.len()).any(|w| w == needle.as_bytes()))
    };
    assert!(found(canary), "the scan sees the plain tag before");

    let t = tenant("t1");
    let erased = mnemo_domain::SubjectId::parse("erased").unwrap();
    assert_eq!(store.redact_legacy(&t, &erased).await.unwrap(), 2);
    let events = store.read_subject(&t, &erased).await.unwrap();
    for e in &events {
        for field in ["tags", "session", "message_id"] {
            if let Some(v) = e.payload.get(field) {
                assert_eq!(*v, serde_json::json!({"$erased": true}), "{field}");
            }
        }
        assert_eq!(e.metadata.correlation_id, None);
        assert_eq!(e.metadata.actor, "a", "the rest of the event stays");
        assert_eq!(e.payload["content"], serde_json::json!({"$erased": true}));
    }
    // Idempotent, and the other subject is untouched.
    assert_eq!(store.redact_legacy(&t, &erased).await.unwrap(), 2);
    let kept = mnemo_domain::SubjectId::parse("kept").unwrap();
    let other = store.read_subject(&t, &kept).await.unwrap();
    assert_eq!(other[0].payload["tags"], serde_json::json!(["kept-tag-9"]));

    mnemo_event_store::sqlite::checkpoint_truncate(store.pool())
        .await
        .unwrap();
    for needle in [
        canary,
        "sess-canary-77",
        "jane.doe@example.com",
        "req-erased@example.com",
    ] {
        assert!(!found(needle), "{needle} survived the redaction");
    }
    assert!(found("kept-tag-9") && found("req-kept@example.com"));

    // Any other change is still refused, the same redaction included when
    // it touches another column.
    for sql in [
        "UPDATE events SET payload = '{}'",
        "UPDATE events SET payload = json_replace(payload, '$.content', 'x')",
        "UPDATE events SET actor = 'mallory', payload = json_replace(payload, \
         '$.tags', json('{\"$erased\":true}'), '$.session', json('{\"$erased\":true}'), \
         '$.message_id', json('{\"$erased\":true}'))",
    ] {
        let error = sqlx::query(sql).execute(store.pool()).await.unwrap_err();
        assert!(error.to_string().contains("append-only"), "{sql}: {error}");
    }
}
