//! The message buffer in PostgreSQL (table `consolidation_buffer`,
//! `migrations/postgres/0004_consumer_state.sql`). Tenant calls run in
//! tenant-scoped transactions of the application role; the idle scan,
//! which spans tenants, reads through the system role, which sees which
//! conversations wait and since when, never which messages.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use mnemo_domain::{EventId, SubjectId, TenantId};
use mnemo_pg::{PgError, SystemPool, TenantPool};

use super::{
    earliest_of_each, Arrival, BufferError, BufferStats, Conversation, MessageBuffer, SubjectClaim,
};

pub struct PostgresMessageBuffer {
    tenant: TenantPool,
    system: SystemPool,
}

impl PostgresMessageBuffer {
    pub fn new(tenant: TenantPool, system: SystemPool) -> Self {
        PostgresMessageBuffer { tenant, system }
    }
}

fn failed(error: sqlx::Error) -> BufferError {
    BufferError(error.to_string())
}

fn pg(error: PgError) -> BufferError {
    BufferError(error.to_string())
}

fn conversation(
    tenant: String,
    subject: String,
    session: String,
) -> Result<Conversation, BufferError> {
    Ok(Conversation {
        tenant: TenantId::parse(tenant).map_err(|e| BufferError(e.to_string()))?,
        subject: SubjectId::parse(subject).map_err(|e| BufferError(e.to_string()))?,
        session,
    })
}

#[async_trait]
impl MessageBuffer for PostgresMessageBuffer {
    /// Through the system role, like the idle scan: counts, never ids.
    async fn stats(&self) -> Result<BufferStats, BufferError> {
        let (messages, conversations, oldest): (i64, i64, Option<DateTime<Utc>>) = sqlx::query_as(
            "SELECT COUNT(*), COUNT(DISTINCT (tenant_id, subject_id, session_id)), MIN(buffered_at) \
             FROM consolidation_buffer WHERE NOT done",
        )
        .fetch_one(self.system.pool())
        .await
        .map_err(failed)?;
        Ok(BufferStats {
            messages: messages as u64,
            conversations: conversations as u64,
            oldest,
        })
    }

    /// A transaction-scoped advisory lock on the conversation, held by an
    /// open transaction of the system role until the claim is dropped (the
    /// rollback releases it; so does the server when a killed process's
    /// connection goes away). Found by the cross-process scale-out test:
    /// without it two consolidators' drains of one conversation created
    /// its memories twice.
    async fn claim(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<SubjectClaim, BufferError> {
        let mut tx = self.system.pool().begin().await.map_err(failed)?;
        // Debug quotes each part: no two subjects share a key text.
        let key = format!("consolidation {:?}", (tenant.as_str(), subject.as_str()));
        sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
            .bind(key)
            .execute(&mut *tx)
            .await
            .map_err(failed)?;
        Ok(SubjectClaim::holding(tx))
    }

    /// One transaction per tenant of the run (each under its tenant's
    /// role, as every buffer write), its rows in one statement and one
    /// read per conversation: a run of a Kafka partition's records costs a
    /// transaction per tenant, not one per message.
    async fn add_many(
        &self,
        messages: &[(Conversation, EventId, i64)],
    ) -> Result<Vec<Arrival>, BufferError> {
        let conversations = earliest_of_each(messages);
        let mut tenants: Vec<&TenantId> = Vec::new();
        for (conversation, _) in &conversations {
            if !tenants.contains(&&conversation.tenant) {
                tenants.push(&conversation.tenant);
            }
        }
        let now = Utc::now();
        let mut arrivals: Vec<Arrival> = Vec::with_capacity(conversations.len());
        for tenant in tenants {
            let rows: Vec<&(Conversation, EventId, i64)> = messages
                .iter()
                .filter(|(c, _, _)| &c.tenant == tenant)
                .collect();
            let mut tx = self.tenant.begin(tenant).await.map_err(pg)?;
            sqlx::query(
                "INSERT INTO consolidation_buffer (tenant_id, subject_id, session_id, event_id, position, buffered_at) \
                 SELECT $1, subject_id, session_id, event_id, position, $2 \
                 FROM UNNEST($3::text[], $4::text[], $5::text[], $6::bigint[]) \
                 AS m(subject_id, session_id, event_id, position) \
                 ON CONFLICT DO NOTHING",
            )
            .bind(tenant.as_str())
            .bind(now)
            .bind(rows.iter().map(|(c, _, _)| c.subject.as_str().to_owned()).collect::<Vec<_>>())
            .bind(rows.iter().map(|(c, _, _)| c.session.clone()).collect::<Vec<_>>())
            .bind(rows.iter().map(|(_, id, _)| id.to_string()).collect::<Vec<_>>())
            .bind(rows.iter().map(|(_, _, position)| *position).collect::<Vec<_>>())
            .execute(&mut *tx)
            .await
            .map_err(failed)?;
            for (conversation, earliest) in
                conversations.iter().filter(|(c, _)| &c.tenant == tenant)
            {
                // Both through the (tenant, subject, session, done,
                // position) index.
                let (count, earlier): (i64, bool) = sqlx::query_as(
                    "SELECT (SELECT COUNT(*) FROM consolidation_buffer \
                     WHERE tenant_id = $1 AND subject_id = $2 AND session_id = $3 AND NOT done), \
                     EXISTS (SELECT 1 FROM consolidation_buffer WHERE tenant_id = $1 AND subject_id = $2 \
                     AND session_id = $3 AND done IN (false, true) AND position < $4)",
                )
                .bind(tenant.as_str())
                .bind(conversation.subject.as_str())
                .bind(&conversation.session)
                .bind(*earliest)
                .fetch_one(&mut *tx)
                .await
                .map_err(failed)?;
                arrivals.push(Arrival {
                    conversation: (*conversation).clone(),
                    waiting: count as usize,
                    began: !earlier,
                });
            }
            tx.commit().await.map_err(failed)?;
        }
        // In order of first appearance, as the port promises.
        Ok(conversations
            .into_iter()
            .filter_map(|(c, _)| arrivals.iter().find(|a| &a.conversation == c).cloned())
            .collect())
    }

    async fn batch(
        &self,
        conversation: &Conversation,
        limit: usize,
    ) -> Result<Vec<EventId>, BufferError> {
        let mut tx = self.tenant.begin(&conversation.tenant).await.map_err(pg)?;
        let rows: Vec<String> = sqlx::query_scalar(
            "SELECT event_id FROM consolidation_buffer \
             WHERE tenant_id = $1 AND subject_id = $2 AND session_id = $3 AND NOT done \
             ORDER BY position LIMIT $4",
        )
        .bind(conversation.tenant.as_str())
        .bind(conversation.subject.as_str())
        .bind(&conversation.session)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&mut *tx)
        .await
        .map_err(failed)?;
        tx.commit().await.map_err(failed)?;
        rows.iter()
            .map(|id| EventId::parse(id).map_err(|e| BufferError(e.to_string())))
            .collect()
    }

    async fn remove(&self, tenant: &TenantId, event_ids: &[EventId]) -> Result<(), BufferError> {
        let ids: Vec<String> = event_ids.iter().map(ToString::to_string).collect();
        let mut tx = self.tenant.begin(tenant).await.map_err(pg)?;
        sqlx::query(
            "UPDATE consolidation_buffer SET done = true WHERE tenant_id = $1 AND event_id = ANY($2)",
        )
        .bind(tenant.as_str())
        .bind(ids)
        .execute(&mut *tx)
        .await
        .map_err(failed)?;
        tx.commit().await.map_err(failed)
    }

    async fn idle(
        &self,
        quiet_since: DateTime<Utc>,
    ) -> Result<Vec<(Conversation, DateTime<Utc>)>, BufferError> {
        let rows: Vec<(String, String, String, DateTime<Utc>)> = sqlx::query_as(
            "SELECT tenant_id, subject_id, session_id, MAX(buffered_at) AS last \
             FROM consolidation_buffer WHERE NOT done \
             GROUP BY tenant_id, subject_id, session_id HAVING MAX(buffered_at) < $1",
        )
        .bind(quiet_since)
        .fetch_all(self.system.pool())
        .await
        .map_err(failed)?;
        rows.into_iter()
            .map(|(tenant, subject, session, last)| {
                Ok((conversation(tenant, subject, session)?, last))
            })
            .collect()
    }

    async fn conversations(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<Vec<Conversation>, BufferError> {
        let mut tx = self.tenant.begin(tenant).await.map_err(pg)?;
        let rows: Vec<(String, String, String)> = sqlx::query_as(
            "SELECT DISTINCT tenant_id, subject_id, session_id FROM consolidation_buffer \
             WHERE tenant_id = $1 AND subject_id = $2 AND NOT done",
        )
        .bind(tenant.as_str())
        .bind(subject.as_str())
        .fetch_all(&mut *tx)
        .await
        .map_err(failed)?;
        tx.commit().await.map_err(failed)?;
        rows.into_iter()
            .map(|(tenant, subject, session)| conversation(tenant, subject, session))
            .collect()
    }

    async fn prune_consolidated(
        &self,
        before: DateTime<Utc>,
        limit: usize,
    ) -> Result<u64, BufferError> {
        // The system role only reads: it finds the tenants, and each
        // tenant's own session deletes its rows (row-level security).
        let tenants: Vec<String> = sqlx::query_scalar(
            "SELECT DISTINCT tenant_id FROM consolidation_buffer WHERE done AND buffered_at < $1",
        )
        .bind(before)
        .fetch_all(self.system.pool())
        .await
        .map_err(failed)?;
        let mut deleted = 0u64;
        for tenant in tenants {
            let left = (limit as u64).saturating_sub(deleted);
            if left == 0 {
                break;
            }
            let tenant = TenantId::parse(tenant).map_err(|e| BufferError(e.to_string()))?;
            let mut tx = self.tenant.begin(&tenant).await.map_err(pg)?;
            let done = sqlx::query(
                "DELETE FROM consolidation_buffer WHERE ctid IN (SELECT b.ctid FROM consolidation_buffer AS b \
                 WHERE b.tenant_id = $1 AND b.done AND b.buffered_at < $2 AND EXISTS (SELECT 1 \
                 FROM consolidation_buffer AS n WHERE n.tenant_id = b.tenant_id AND n.subject_id = b.subject_id \
                 AND n.session_id = b.session_id AND n.position > b.position) LIMIT $3)",
            )
            .bind(tenant.as_str())
            .bind(before)
            .bind(i64::try_from(left).unwrap_or(i64::MAX))
            .execute(&mut *tx)
            .await
            .map_err(failed)?;
            tx.commit().await.map_err(failed)?;
            deleted += done.rows_affected();
        }
        Ok(deleted)
    }

    async fn delete_subject(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<u64, BufferError> {
        let mut tx = self.tenant.begin(tenant).await.map_err(pg)?;
        let deleted = sqlx::query(
            "DELETE FROM consolidation_buffer WHERE tenant_id = $1 AND subject_id = $2",
        )
        .bind(tenant.as_str())
        .bind(subject.as_str())
        .execute(&mut *tx)
        .await
        .map_err(failed)?;
        tx.commit().await.map_err(failed)?;
        Ok(deleted.rows_affected())
    }
}
