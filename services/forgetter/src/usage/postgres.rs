//! Memory usage in PostgreSQL (table `memory_usage`,
//! `migrations/postgres/0004_consumer_state.sql`), read and written in
//! tenant-scoped transactions of the application role.

use std::collections::HashMap;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use mnemo_domain::{MemoryId, SubjectId, TenantId};
use mnemo_pg::{PgError, TenantPool};

use super::{Usage, UsageError, UsageStore};

pub struct PostgresUsageStore {
    pool: TenantPool,
}

impl PostgresUsageStore {
    pub fn new(pool: TenantPool) -> Self {
        PostgresUsageStore { pool }
    }
}

fn failed(error: sqlx::Error) -> UsageError {
    UsageError(error.to_string())
}

fn pg(error: PgError) -> UsageError {
    UsageError(error.to_string())
}

#[async_trait]
impl UsageStore for PostgresUsageStore {
    async fn record(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
        ids: &[MemoryId],
        at: DateTime<Utc>,
    ) -> Result<(), UsageError> {
        let counted = super::count_each(ids);
        if counted.is_empty() {
            return Ok(());
        }
        let (ids, accesses): (Vec<String>, Vec<i64>) = counted
            .into_iter()
            .map(|(id, count)| (id.to_string(), count))
            .unzip();
        let mut tx = self.pool.begin(tenant).await.map_err(pg)?;
        // One statement for the whole signal, each memory once with its count.
        sqlx::query(
            "INSERT INTO memory_usage (tenant_id, memory_id, subject_id, accesses, last_accessed_at) \
             SELECT $1, id, $3, n, $4 FROM UNNEST($2::text[], $5::bigint[]) AS hit(id, n) \
             ON CONFLICT (tenant_id, memory_id) DO UPDATE SET \
             accesses = memory_usage.accesses + excluded.accesses, \
             last_accessed_at = GREATEST(memory_usage.last_accessed_at, excluded.last_accessed_at)",
        )
        .bind(tenant.as_str())
        .bind(&ids)
        .bind(subject.as_str())
        .bind(at)
        .bind(&accesses)
        .execute(&mut *tx)
        .await
        .map_err(failed)?;
        tx.commit().await.map_err(failed)
    }

    async fn get(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<HashMap<MemoryId, Usage>, UsageError> {
        let mut tx = self.pool.begin(tenant).await.map_err(pg)?;
        let rows: Vec<(String, i64, DateTime<Utc>)> = sqlx::query_as(
            "SELECT memory_id, accesses, last_accessed_at FROM memory_usage \
             WHERE tenant_id = $1 AND subject_id = $2",
        )
        .bind(tenant.as_str())
        .bind(subject.as_str())
        .fetch_all(&mut *tx)
        .await
        .map_err(failed)?;
        tx.commit().await.map_err(failed)?;
        Ok(rows
            .into_iter()
            .filter_map(|(id, accesses, last)| {
                // As in SQLite: a row with a foreign id shape is skipped,
                // not fatal to the whole pass.
                let id = MemoryId::parse(&id).ok()?;
                Some((
                    id,
                    Usage {
                        accesses: accesses.max(0) as u64,
                        last_accessed_at: last,
                    },
                ))
            })
            .collect())
    }

    async fn delete_subject(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<u64, UsageError> {
        let mut tx = self.pool.begin(tenant).await.map_err(pg)?;
        let deleted =
            sqlx::query("DELETE FROM memory_usage WHERE tenant_id = $1 AND subject_id = $2")
                .bind(tenant.as_str())
                .bind(subject.as_str())
                .execute(&mut *tx)
                .await
                .map_err(failed)?;
        tx.commit().await.map_err(failed)?;
        Ok(deleted.rows_affected())
    }
}
