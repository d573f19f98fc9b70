//! The read model cases on SQLite.
#![cfg(feature = "sqlite")]

mod cases;

use mnemo_domain::{MemoryId, TenantId};
use mnemo_read_model::sqlite::SqliteMemoryReadModel;
use mnemo_read_model::MemoryReadModel;

async fn model() -> (tempfile::TempDir, SqliteMemoryReadModel) {
    let dir = tempfile::tempdir().unwrap();
    let pool = mnemo_event_store::sqlite::connect(&dir.path().join("m.db"))
        .await
        .unwrap();
    (dir, SqliteMemoryReadModel::new(pool))
}

read_model_cases!(model);

/// No ids, no query: a closed pool would fail any statement.
#[tokio::test]
async fn get_many_of_no_ids_does_not_touch_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let pool = mnemo_event_store::sqlite::connect(&dir.path().join("m.db"))
        .await
        .unwrap();
    let model = SqliteMemoryReadModel::new(pool.clone());
    pool.close().await;
    let t = TenantId::parse("t1").unwrap();
    assert!(model.get_many(&t, &[MemoryId::new()]).await.is_err());
    assert!(model.get_many(&t, &[]).await.unwrap().is_empty());
}
