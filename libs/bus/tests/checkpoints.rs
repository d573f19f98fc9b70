//! The checkpoint store cases, run on every adapter, and the relay over the
//! PostgreSQL log and checkpoints.

use std::sync::Arc;

use mnemo_bus::CheckpointStore;

async fn starts_at_zero_and_keeps_what_was_saved(store: &dyn CheckpointStore) {
    assert_eq!(store.load("relay").await.unwrap(), 0);
    store.save("relay", 42).await.unwrap();
    assert_eq!(store.load("relay").await.unwrap(), 42);
    store.save("relay", 43).await.unwrap();
    assert_eq!(store.load("relay").await.unwrap(), 43);
}

async fn never_moves_back(store: &dyn CheckpointStore) {
    store.save("relay", 100).await.unwrap();
    store.save("relay", 7).await.unwrap();
    assert_eq!(store.load("relay").await.unwrap(), 100);
}

async fn names_are_independent(store: &dyn CheckpointStore) {
    store.save("relay", 5).await.unwrap();
    store.save("rebuild", 9).await.unwrap();
    assert_eq!(store.load("relay").await.unwrap(), 5);
    assert_eq!(store.load("rebuild").await.unwrap(), 9);
    assert_eq!(store.load("other").await.unwrap(), 0);
}

macro_rules! checkpoint_cases {
    ($module:ident, $fixture:path) => {
        mod $module {
            #[tokio::test]
            async fn starts_at_zero_and_keeps_what_was_saved() {
                let (_guard, store) = $fixture().await;
                super::starts_at_zero_and_keeps_what_was_saved(store.as_ref()).await;
            }
            #[tokio::test]
            async fn never_moves_back() {
                let (_guard, store) = $fixture().await;
                super::never_moves_back(store.as_ref()).await;
            }
            #[tokio::test]
            async fn names_are_independent() {
                let (_guard, store) = $fixture().await;
                super::names_are_independent(store.as_ref()).await;
            }
        }
    };
}

#[cfg(feature = "sqlite")]
async fn sqlite_store() -> (tempfile::TempDir, Arc<dyn CheckpointStore>) {
    let dir = tempfile::tempdir().unwrap();
    let pool = mnemo_event_store::sqlite::connect(&dir.path().join("mnemo.db"))
        .await
        .unwrap();
    (
        dir,
        Arc::new(mnemo_bus::relay::SqliteCheckpointStore::new(pool)),
    )
}

#[cfg(feature = "sqlite")]
checkpoint_cases!(sqlite, super::sqlite_store);

#[cfg(feature = "postgres")]
async fn postgres_store() -> (
    mnemo_pg::testsupport::TestDatabase,
    Arc<dyn CheckpointStore>,
) {
    let db = mnemo_pg::testsupport::TestDatabase::new().await;
    let store = mnemo_bus::postgres::PostgresCheckpointStore::new(db.system_pool());
    (db, Arc::new(store))
}

#[cfg(feature = "postgres")]
checkpoint_cases!(postgres, super::postgres_store);

/// The application role cannot read or move the relay's checkpoints.
#[cfg(feature = "postgres")]
#[tokio::test]
async fn the_app_role_has_no_access_to_checkpoints() {
    use sqlx::Connection;
    let db = mnemo_pg::testsupport::TestDatabase::new().await;
    let mut app = sqlx::PgConnection::connect_with(&db.options_as(mnemo_pg::APP_ROLE))
        .await
        .unwrap();
    for sql in [
        "SELECT position FROM relay_checkpoints",
        "INSERT INTO relay_checkpoints (name, position) VALUES ('relay', 1)",
    ] {
        let error = sqlx::query(sql).execute(&mut app).await.unwrap_err();
        assert!(error.to_string().contains("permission denied"), "{error}");
    }
}

/// The relay over the PostgreSQL log and checkpoints: every event once, in
/// position order, and nothing again after a restart from the checkpoint.
#[cfg(all(feature = "postgres", feature = "sqlite"))]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_relay_publishes_the_postgres_log_once_from_its_checkpoint() {
    use std::time::Duration;

    use mnemo_bus::in_process::InProcessBus;
    use mnemo_bus::postgres::PostgresCheckpointStore;
    use mnemo_bus::{topics, Bus, Relay};
    use mnemo_event_store::postgres::PostgresEventStore;
    use mnemo_event_store::testsuite::{event, subject, tenant, wait_for_head};
    use mnemo_event_store::{EventStore, ExpectedVersion};

    let db = mnemo_pg::testsupport::TestDatabase::new().await;
    let store = Arc::new(PostgresEventStore::new(db.tenant_pool(), db.system_pool()));
    let dir = tempfile::tempdir().unwrap();
    let bus_pool = mnemo_event_store::sqlite::connect(&dir.path().join("bus.db"))
        .await
        .unwrap();
    let bus = Arc::new(InProcessBus::new(bus_pool, 1));
    let mut ids = Vec::new();
    let mut last = 0;
    for i in 0..5 {
        let e = event("MessageReceived", Some(&subject("s1")), "a");
        ids.push(e.event_id.to_string());
        let t = tenant(if i % 2 == 0 { "t1" } else { "t2" });
        last = store
            .append(&t, "conversation", ExpectedVersion::Any, vec![e])
            .await
            .unwrap()
            .events[0]
            .global_position;
    }
    wait_for_head(store.as_ref(), last).await;
    let checkpoints = Arc::new(PostgresCheckpointStore::new(db.system_pool()));
    let relay = Relay::new(store.clone(), bus.clone(), checkpoints.clone());
    assert_eq!(relay.run_once().await.unwrap(), 5);
    assert_eq!(checkpoints.load("relay").await.unwrap(), last);
    // A new relay (a restart) resumes from the checkpoint: nothing again.
    let restarted = Relay::new(store.clone(), bus.clone(), checkpoints);
    assert_eq!(restarted.run_once().await.unwrap(), 0);

    let mut subscription = bus.subscribe("test", &[topics::MESSAGES]).await.unwrap();
    let mut published = Vec::new();
    while let Some(delivery) = subscription.poll(Duration::from_millis(200)).await.unwrap() {
        published.push(delivery.header("event_id").unwrap().to_owned());
    }
    assert_eq!(published, ids);
}

/// Two processes on one database: only one runs the relay; when it stops,
/// the other takes over.
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_relay_leads_at_a_time_and_another_takes_over() {
    use std::time::Duration;
    let db = mnemo_pg::testsupport::TestDatabase::new().await;
    let first = mnemo_bus::postgres::PostgresCheckpointStore::new(db.system_pool());
    // A second pool: another process, as far as PostgreSQL can tell.
    let other_pool = mnemo_pg::SystemPool::connect_with(db.options_as(mnemo_pg::SYSTEM_ROLE), 2)
        .await
        .unwrap();
    let second = mnemo_bus::postgres::PostgresCheckpointStore::new(other_pool);

    let leader = first.lead("relay").await.unwrap();
    let waiting = tokio::spawn(async move { second.lead("relay").await.map(|_| ()) });
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(!waiting.is_finished(), "two relays led at once");
    // Another name is another relay: not blocked.
    let _other = tokio::time::timeout(Duration::from_secs(10), first.lead("other"))
        .await
        .expect("an independent relay name waited")
        .unwrap();
    drop(leader);
    tokio::time::timeout(Duration::from_secs(20), waiting)
        .await
        .expect("the waiting relay never took over")
        .unwrap()
        .unwrap();
}
