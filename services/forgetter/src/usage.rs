//! Retrieval use per memory, fed by access signals: how often and how
//! recently each memory was returned. The forgetter's score grows with it.

use std::collections::HashMap;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use mnemo_bus::{Delivery, HandlerError, RecordHandler};
use mnemo_domain::signals::AccessSignal;
use mnemo_domain::{MemoryId, SubjectId, TenantId};
use sqlx::{Row, SqlitePool};

#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "postgres")]
pub use postgres::PostgresUsageStore;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    pub accesses: u64,
    pub last_accessed_at: DateTime<Utc>,
}

#[derive(Debug, thiserror::Error)]
#[error("usage store failed: {0}")]
pub struct UsageError(pub String);

#[async_trait]
pub trait UsageStore: Send + Sync + 'static {
    async fn record(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
        ids: &[MemoryId],
        at: DateTime<Utc>,
    ) -> Result<(), UsageError>;
    async fn get(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<HashMap<MemoryId, Usage>, UsageError>;
    async fn delete_subject(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<u64, UsageError>;
}

pub struct SqliteUsageStore {
    pool: SqlitePool,
}

impl SqliteUsageStore {
    pub fn new(pool: SqlitePool) -> Self {
        SqliteUsageStore { pool }
    }
}

/// Rows per insert: 5 parameters each, under the 999 of older SQLite builds.
const ROWS_PER_INSERT: usize = 150;

/// Each id once with how many times `ids` names it, in first-seen order:
/// one row per memory in a statement (PostgreSQL refuses to update a row
/// twice in one `ON CONFLICT` insert).
pub(crate) fn count_each(ids: &[MemoryId]) -> Vec<(MemoryId, i64)> {
    let mut counted: Vec<(MemoryId, i64)> = Vec::with_capacity(ids.len());
    for id in ids {
        match counted.iter_mut().find(|(seen, _)| seen == id) {
            Some((_, count)) => *count += 1,
            None => counted.push((*id, 1)),
        }
    }
    counted
}

fn failed(error: sqlx::Error) -> UsageError {
    UsageError(error.to_string())
}

#[async_trait]
impl UsageStore for SqliteUsageStore {
    async fn record(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
        ids: &[MemoryId],
        at: DateTime<Utc>,
    ) -> Result<(), UsageError> {
        let counted = count_each(ids);
        if counted.is_empty() {
            return Ok(());
        }
        // One statement for the whole signal: a write per hit took the
        // write lock's time for as many round trips.
        let mut builder = sqlx::QueryBuilder::new(
            "INSERT INTO memory_usage (tenant_id, memory_id, subject_id, accesses, \
             last_accessed_at) ",
        );
        for part in counted.chunks(ROWS_PER_INSERT) {
            builder.reset();
            builder.push_values(part, |mut row, (id, accesses)| {
                row.push_bind(tenant.as_str())
                    .push_bind(id.to_string())
                    .push_bind(subject.as_str())
                    .push_bind(*accesses)
                    .push_bind(at.timestamp_micros());
            });
            builder.push(
                " ON CONFLICT (tenant_id, memory_id) DO UPDATE SET \
                 accesses = accesses + excluded.accesses, \
                 last_accessed_at = MAX(last_accessed_at, excluded.last_accessed_at)",
            );
            builder.build().execute(&self.pool).await.map_err(failed)?;
        }
        Ok(())
    }

    async fn get(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<HashMap<MemoryId, Usage>, UsageError> {
        let rows = sqlx::query(
            "SELECT memory_id, accesses, last_accessed_at FROM memory_usage WHERE tenant_id = ? AND subject_id = ?",
        )
        .bind(tenant.as_str())
        .bind(subject.as_str())
        .fetch_all(&self.pool)
        .await
        .map_err(failed)?;
        let mut usage = HashMap::with_capacity(rows.len());
        for row in rows {
            let id: String = row.get("memory_id");
            let accesses: i64 = row.get("accesses");
            let last: i64 = row.get("last_accessed_at");
            let Ok(id) = MemoryId::parse(&id) else {
                continue;
            };
            usage.insert(
                id,
                Usage {
                    accesses: accesses.max(0) as u64,
                    last_accessed_at: DateTime::<Utc>::from_timestamp_micros(last)
                        .unwrap_or_default(),
                },
            );
        }
        Ok(usage)
    }

    async fn delete_subject(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<u64, UsageError> {
        let deleted =
            sqlx::query("DELETE FROM memory_usage WHERE tenant_id = ? AND subject_id = ?")
                .bind(tenant.as_str())
                .bind(subject.as_str())
                .execute(&self.pool)
                .await
                .map_err(failed)?;
        Ok(deleted.rows_affected())
    }
}

/// Consumes access signals into the usage store. A redelivered signal counts
/// an access twice; that is accepted (signals are a usage estimate, not a
/// ledger), and documented.
/// Counts access signals into the usage store.
///
/// Key decision: a signal about a subject with no live key is dropped.
/// Signals travel on their own topic, so one sent by a search just before
/// an erasure can be handled after it; its row would name the erased
/// subject again. The key is checked before the write and after it: an
/// erasure that destroyed the key in between may have deleted the rows
/// before this write landed, so the subject's rows are deleted again.
pub struct AccessSignals {
    pub usage: std::sync::Arc<dyn UsageStore>,
    pub cipher: std::sync::Arc<mnemo_crypto::SubjectCipher>,
}

impl AccessSignals {
    async fn is_live(&self, tenant: &TenantId, subject: &SubjectId) -> Result<bool, HandlerError> {
        self.cipher
            .live_generation(tenant, subject)
            .await
            .map(|generation| generation.is_some())
            .map_err(|e| HandlerError::Retryable(e.to_string()))
    }
}

#[async_trait]
impl RecordHandler for AccessSignals {
    async fn handle_record(&self, delivery: &Delivery) -> Result<(), HandlerError> {
        let signal = AccessSignal::decode(&delivery.payload)
            .map_err(|e| HandlerError::Permanent(e.to_string()))?;
        let (tenant, subject) = (&signal.tenant, &signal.subject);
        if !self.is_live(tenant, subject).await? {
            return Ok(());
        }
        self.usage
            .record(tenant, subject, &signal.memory_ids, signal.at)
            .await
            .map_err(|e| HandlerError::Retryable(e.to_string()))?;
        if !self.is_live(tenant, subject).await? {
            self.usage
                .delete_subject(tenant, subject)
                .await
                .map_err(|e| HandlerError::Retryable(e.to_string()))?;
        }
        Ok(())
    }
}
