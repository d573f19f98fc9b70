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
