//! Shared fixtures: ids, and a store of each kind behind the trait.
#![allow(dead_code)]

use std::sync::Arc;

use mnemo_crypto::{MemorySubjectKeyStore, SubjectKeyStore};
use mnemo_domain::{SubjectId, TenantId};

pub fn tenant(raw: &str) -> TenantId {
    TenantId::parse(raw).unwrap()
}

pub fn subject(raw: &str) -> SubjectId {
    SubjectId::parse(raw).unwrap()
}

/// A store plus whatever must outlive it (the temp dir of a database file,
/// a test database).
pub struct Fixture {
    pub store: Arc<dyn SubjectKeyStore>,
    _keep: Option<Box<dyn std::any::Any + Send + Sync>>,
}

pub async fn memory() -> Fixture {
    Fixture {
        store: Arc::new(MemorySubjectKeyStore::new()),
        _keep: None,
    }
}

#[cfg(feature = "sqlite")]
#[allow(unused_imports)]
pub use sqlite::*;

#[cfg(feature = "sqlite")]
mod sqlite {
    use std::path::Path;
    use std::sync::Arc;

    use mnemo_crypto::{MasterKey, SqliteSubjectKeyStore};
    use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions};
    use sqlx::SqlitePool;

    use super::Fixture;

    /// Only this crate's migrations: the others in the folder belong to
    /// other crates.
    const MIGRATIONS: [&str; 2] = [
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../migrations/sqlite/0002_subject_keys.sql"
        )),
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../migrations/sqlite/0007_subject_key_generations.sql"
        )),
    ];

    /// A pool as production must open it: WAL, secure_delete on every
    /// connection. Creates the table when `migrate` is set.
    pub async fn open_pool(path: &Path, migrate: bool) -> SqlitePool {
        let opts = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .pragma("secure_delete", "ON");
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(opts)
            .await
            .unwrap();
        if migrate {
            for migration in MIGRATIONS {
                sqlx::raw_sql(migration).execute(&pool).await.unwrap();
            }
        }
        pool
    }

    pub async fn sqlite() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let pool = open_pool(&dir.path().join("keys.db"), true).await;
        Fixture {
            store: Arc::new(SqliteSubjectKeyStore::new(
                pool,
                Arc::new(MasterKey::generate()),
            )),
            _keep: Some(Box::new(dir)),
        }
    }
}

#[cfg(feature = "postgres")]
#[allow(unused_imports)]
pub use postgres::*;

#[cfg(feature = "postgres")]
mod postgres {
    use std::sync::Arc;

    use mnemo_crypto::{MasterKey, PostgresSubjectKeyStore};
    use mnemo_pg::testsupport::TestDatabase;

    use super::Fixture;

    pub async fn postgres() -> Fixture {
        let db = TestDatabase::new().await;
        Fixture {
            store: Arc::new(PostgresSubjectKeyStore::new(
                db.tenant_pool(),
                Arc::new(MasterKey::generate()),
            )),
            _keep: Some(Box::new(db)),
        }
    }
}
