use std::fmt;
use std::sync::Arc;

use mnemo_domain::{SubjectId, TenantId};
use mnemo_pg::{PgError, TenantPool};

use super::SubjectKeyStore;
use crate::data_key::new_key_id;
use crate::{CryptoError, DataKey, KeyRef, MasterKey};

/// Data keys in the `subject_keys` table (migration
/// `migrations/postgres/0002_subject_keys.sql`), wrapped by the master key,
/// read and written only in tenant-scoped transactions of the application
/// role, so row-level security keeps each tenant to its own keys.
///
/// `destroy` deletes the row, and leaves the key's id and generation in
/// `subject_key_tombstones` (migration `0007_subject_key_generations.sql`)
/// for the numbering of the next key. PostgreSQL keeps the dead tuple's bytes in the
/// table file until vacuum reuses the space, and in WAL and backups for
/// their retention: the wrapped key stays unreadable without the master key,
/// and `docs/postgres.md` says how to shorten that window.
pub struct PostgresSubjectKeyStore {
    pool: TenantPool,
    master: Arc<MasterKey>,
}

fn store_error(error: PgError) -> CryptoError {
    CryptoError::Store(Box::new(error))
}

impl PostgresSubjectKeyStore {
    pub fn new(pool: TenantPool, master: Arc<MasterKey>) -> Self {
        Self { pool, master }
    }

    fn key_ref(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
        row: LiveRow,
    ) -> Result<KeyRef, CryptoError> {
        let (key_id, wrapped, master_key_id, generation) = row;
        let key = self
            .master
            .unwrap_stored(tenant, subject, &key_id, &wrapped, &master_key_id)?;
        Ok(KeyRef {
            key_id,
            key: Arc::new(key),
            generation: generation_of(generation)?,
        })
    }
}

/// key_id, wrapped_key, master_key_id, generation.
type LiveRow = (String, Vec<u8>, String, i32);

/// A stored generation as the `u32` it was written from.
fn generation_of(stored: i32) -> Result<u32, CryptoError> {
    u32::try_from(stored)
        .map_err(|_| CryptoError::Store("stored key generation is out of range".into()))
}

impl fmt::Debug for PostgresSubjectKeyStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresSubjectKeyStore")
            .field("master_key_id", &self.master.id())
            .finish_non_exhaustive()
    }
}

const LIVE: &str = "SELECT key_id, wrapped_key, master_key_id, generation FROM subject_keys \
                    WHERE tenant_id = $1 AND subject_id = $2";

#[async_trait::async_trait]
impl SubjectKeyStore for PostgresSubjectKeyStore {
    async fn get_or_create(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<KeyRef, CryptoError> {
        let mut tx = self.pool.begin(tenant).await.map_err(store_error)?;
        let live: Option<LiveRow> = sqlx::query_as(LIVE)
            .bind(tenant.as_str())
            .bind(subject.as_str())
            .fetch_optional(&mut *tx)
            .await?;
        if let Some(row) = live {
            tx.commit().await?;
            return self.key_ref(tenant, subject, row);
        }
        let key_id = new_key_id();
        let key = DataKey::generate();
        let wrapped = self.master.wrap_data_key(tenant, subject, &key_id, &key)?;
        // A concurrent first use inserts the same primary key: this insert
        // waits for it, then does nothing, and the read below (a new
        // statement, so a new snapshot under READ COMMITTED) returns the
        // row that won to everybody. The generation is read in the same
        // statement: a destroy commits its tombstone with its delete, so a
        // key created after it counts on from there.
        sqlx::query(
            "INSERT INTO subject_keys \
             (tenant_id, subject_id, key_id, wrapped_key, master_key_id, generation) \
             VALUES ($1, $2, $3, $4, $5, \
               (SELECT COALESCE(MAX(generation) + 1, 1) FROM subject_key_tombstones \
                WHERE tenant_id = $1 AND subject_id = $2)) \
             ON CONFLICT DO NOTHING",
        )
        .bind(tenant.as_str())
        .bind(subject.as_str())
        .bind(&key_id)
        .bind(&wrapped)
        .bind(self.master.id())
        .execute(&mut *tx)
        .await?;
        let row: Option<LiveRow> = sqlx::query_as(LIVE)
            .bind(tenant.as_str())
            .bind(subject.as_str())
            .fetch_optional(&mut *tx)
            .await?;
        tx.commit().await?;
        let row = row.ok_or_else(|| {
            // Only reachable if the row was destroyed in between, or a
            // random key id collided (the insert was then skipped).
            CryptoError::Store("subject key vanished right after creation".into())
        })?;
        self.key_ref(tenant, subject, row)
    }

    async fn get(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
        key_id: &str,
    ) -> Result<Option<Arc<DataKey>>, CryptoError> {
        let mut tx = self.pool.begin(tenant).await.map_err(store_error)?;
        let row: Option<(Vec<u8>, String)> = sqlx::query_as(
            "SELECT wrapped_key, master_key_id FROM subject_keys \
             WHERE tenant_id = $1 AND subject_id = $2 AND key_id = $3",
        )
        .bind(tenant.as_str())
        .bind(subject.as_str())
        .bind(key_id)
        .fetch_optional(&mut *tx)
        .await?;
        tx.commit().await?;
        row.map(|(wrapped, master_key_id)| {
            self.master
                .unwrap_stored(tenant, subject, key_id, &wrapped, &master_key_id)
                .map(Arc::new)
        })
        .transpose()
    }

    async fn destroy(&self, tenant: &TenantId, subject: &SubjectId) -> Result<u32, CryptoError> {
        let mut tx = self.pool.begin(tenant).await.map_err(store_error)?;
        // One statement: the rows deleted are exactly the ones remembered, so
        // a key is never gone without its generation (the next key would
        // reuse it, and the ids derived from it).
        let destroyed: i64 = sqlx::query_scalar(
            "WITH gone AS (DELETE FROM subject_keys WHERE tenant_id = $1 AND subject_id = $2 \
               RETURNING tenant_id, subject_id, key_id, generation), \
             remembered AS (INSERT INTO subject_key_tombstones \
               (tenant_id, subject_id, key_id, generation) \
               SELECT tenant_id, subject_id, key_id, generation FROM gone \
               ON CONFLICT DO NOTHING) \
             SELECT count(*) FROM gone",
        )
        .bind(tenant.as_str())
        .bind(subject.as_str())
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(u32::try_from(destroyed).unwrap_or(u32::MAX))
    }

    async fn live_generation(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<Option<u32>, CryptoError> {
        let mut tx = self.pool.begin(tenant).await.map_err(store_error)?;
        let stored: Option<i32> = sqlx::query_scalar(
            "SELECT generation FROM subject_keys WHERE tenant_id = $1 AND subject_id = $2",
        )
        .bind(tenant.as_str())
        .bind(subject.as_str())
        .fetch_optional(&mut *tx)
        .await?;
        tx.commit().await?;
        stored.map(generation_of).transpose()
    }
}
