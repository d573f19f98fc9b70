//! The read model cases on SQLite.
#![cfg(feature = "sqlite")]

mod cases;

use mnemo_read_model::sqlite::SqliteMemoryReadModel;

async fn model() -> (tempfile::TempDir, SqliteMemoryReadModel) {
    let dir = tempfile::tempdir().unwrap();
    let pool = mnemo_event_store::sqlite::connect(&dir.path().join("m.db"))
        .await
        .unwrap();
    (dir, SqliteMemoryReadModel::new(pool))
}

read_model_cases!(model);
