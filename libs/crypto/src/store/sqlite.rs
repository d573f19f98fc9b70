use std::fmt;
use std::sync::Arc;

use mnemo_domain::{SubjectId, TenantId};
use sqlx::SqlitePool;

use super::SubjectKeyStore;
use crate::data_key::new_key_id;
use crate::{CryptoError, DataKey, KeyRef, MasterKey};

/// Data keys in the `subject_keys` table (migration
/// `migrations/sqlite/0002_subject_keys.sql`), wrapped by the master key;
/// destroyed keys leave a row in `subject_key_tombstones` (migration
/// `0007_subject_key_generations.sql`) with their id and generation only.
///
/// The pool must be opened with `PRAGMA secure_delete = ON` on every
/// connection (SQLite otherwise leaves deleted and moved cell bytes in free
/// page space), and the WAL must be checkpointed (`PRAGMA
/// wal_checkpoint(TRUNCATE)`) after an erasure so the old page images leave
/// the `-wal` file. See the crate documentation.
pub struct SqliteSubjectKeyStore {
    pool: SqlitePool,
    master: Arc<MasterKey>,
}

impl SqliteSubjectKeyStore {
    pub fn new(pool: SqlitePool, master: Arc<MasterKey>) -> Self {
        Self { pool, master }
    }

    async fn live(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<Option<KeyRef>, CryptoError> {
        let row: Option<(String, Vec<u8>, String, i64)> = sqlx::query_as(
            "SELECT key_id, wrapped_key, master_key_id, generation FROM subject_keys \
             WHERE tenant_id = ?1 AND subject_id = ?2",
        )
        .bind(tenant.as_str())
        .bind(subject.as_str())
        .fetch_optional(&self.pool)
        .await?;
        row.map(|(key_id, wrapped, master_key_id, generation)| {
            let key =
                self.master
                    .unwrap_stored(tenant, subject, &key_id, &wrapped, &master_key_id)?;
            Ok(KeyRef {
                key_id,
                key: Arc::new(key),
                generation: generation_of(generation)?,
            })
        })
        .transpose()
    }
}

/// A stored generation as the `u32` it was written from.
fn generation_of(stored: i64) -> Result<u32, CryptoError> {
    u32::try_from(stored)
        .map_err(|_| CryptoError::Store("stored key generation is out of range".into()))
}

impl fmt::Debug for SqliteSubjectKeyStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteSubjectKeyStore")
            .field("master_key_id", &self.master.id())
            .finish_non_exhaustive()
    }
}

#[async_trait::async_trait]
impl SubjectKeyStore for SqliteSubjectKeyStore {
    async fn get_or_create(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<KeyRef, CryptoError> {
        // Read first: after the first use this is the only statement, and it
        // does not take the database's write lock.
        if let Some(existing) = self.live(tenant, subject).await? {
            return Ok(existing);
        }
        let key_id = new_key_id();
        let key = DataKey::generate();
        let wrapped = self.master.wrap_data_key(tenant, subject, &key_id, &key)?;
        // A concurrent first use (another task or process) may insert between
        // our read and this insert; OR IGNORE keeps whichever row came first
        // and the read below returns that one to everybody. The generation is
        // computed inside the insert, so it sees the tombstone of a destroy
        // that committed before it (SQLite has one writer at a time).
        sqlx::query(
            "INSERT OR IGNORE INTO subject_keys \
             (tenant_id, subject_id, key_id, wrapped_key, master_key_id, created_at, generation) \
             VALUES (?1, ?2, ?3, ?4, ?5, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), \
               (SELECT COALESCE(MAX(generation) + 1, 1) FROM subject_key_tombstones \
                WHERE tenant_id = ?1 AND subject_id = ?2))",
        )
        .bind(tenant.as_str())
        .bind(subject.as_str())
        .bind(&key_id)
        .bind(&wrapped)
        .bind(self.master.id())
        .execute(&self.pool)
        .await?;
        self.live(tenant, subject).await?.ok_or_else(|| {
            // Only reachable if the row was destroyed in between, or a
            // random key id collided (the insert was then ignored).
            CryptoError::Store("subject key vanished right after creation".into())
        })
    }

    async fn get(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
        key_id: &str,
    ) -> Result<Option<Arc<DataKey>>, CryptoError> {
        let row: Option<(Vec<u8>, String)> = sqlx::query_as(
            "SELECT wrapped_key, master_key_id FROM subject_keys \
             WHERE tenant_id = ?1 AND subject_id = ?2 AND key_id = ?3",
        )
        .bind(tenant.as_str())
        .bind(subject.as_str())
        .bind(key_id)
        .fetch_optional(&self.pool)
        .await?;
        row.map(|(wrapped, master_key_id)| {
            self.master
                .unwrap_stored(tenant, subject, key_id, &wrapped, &master_key_id)
                .map(Arc::new)
        })
        .transpose()
    }

    async fn destroy(&self, tenant: &TenantId, subject: &SubjectId) -> Result<u32, CryptoError> {
        let mut conn = self.pool.acquire().await?;
        // Belt and braces for a pool opened without it: secure_delete is a
        // per-connection setting, and on this connection the DELETE below then
        // overwrites the row's bytes with zeros instead of leaving them in
        // the page's free space.
        sqlx::query("PRAGMA secure_delete = ON")
            .execute(&mut *conn)
            .await?;
        // The tombstone and the delete commit together: a key is never gone
        // without its generation being remembered, or the next key would
        // reuse the generation (and the ids derived from it).
        let mut tx = sqlx::Connection::begin(&mut *conn).await?;
        sqlx::query(
            "INSERT OR IGNORE INTO subject_key_tombstones \
             (tenant_id, subject_id, key_id, generation, destroyed_at) \
             SELECT tenant_id, subject_id, key_id, generation, strftime('%Y-%m-%dT%H:%M:%fZ', 'now') \
             FROM subject_keys WHERE tenant_id = ?1 AND subject_id = ?2",
        )
        .bind(tenant.as_str())
        .bind(subject.as_str())
        .execute(&mut *tx)
        .await?;
        let done = sqlx::query("DELETE FROM subject_keys WHERE tenant_id = ?1 AND subject_id = ?2")
            .bind(tenant.as_str())
            .bind(subject.as_str())
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(u32::try_from(done.rows_affected()).unwrap_or(u32::MAX))
    }

    async fn live_generation(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<Option<u32>, CryptoError> {
        let stored: Option<i64> = sqlx::query_scalar(
            "SELECT generation FROM subject_keys WHERE tenant_id = ?1 AND subject_id = ?2",
        )
        .bind(tenant.as_str())
        .bind(subject.as_str())
        .fetch_optional(&self.pool)
        .await?;
        stored.map(generation_of).transpose()
    }
}
