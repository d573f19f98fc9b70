//! The durable message buffer: which message events wait for consolidation,
//! per conversation (tenant, subject, session).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use mnemo_domain::{EventId, SubjectId, TenantId};
use sqlx::{Row, SqlitePool};

#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "postgres")]
pub use postgres::PostgresMessageBuffer;

/// One conversation: a session of a subject.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Conversation {
    pub tenant: TenantId,
    pub subject: SubjectId,
    /// The keyed token of the session id (`TokenPurpose::Session` under the
    /// subject's key), "" when the messages have none: the buffer's tables
    /// outlive nothing of the subject, but a session id is a value a client
    /// chose, so it is not stored in the clear even here.
    pub session: String,
}

#[derive(Debug, thiserror::Error)]
#[error("message buffer failed: {0}")]
pub struct BufferError(pub String);

/// A subject claimed for consolidation ([`MessageBuffer::claim`]);
/// the claim ends when this is dropped.
#[derive(Default)]
pub struct SubjectClaim {
    _held: Option<Box<dyn std::any::Any + Send>>,
}

impl SubjectClaim {
    pub fn holding(held: impl std::any::Any + Send) -> Self {
        SubjectClaim {
            _held: Some(Box::new(held)),
        }
    }
}

/// What waits for consolidation, across every tenant: the backlog an
/// operator watches (`/readyz`, `/metrics`, `mnemo status`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BufferStats {
    pub messages: u64,
    pub conversations: u64,
    /// When the longest-waiting message was buffered.
    pub oldest: Option<DateTime<Utc>>,
}

#[async_trait]
pub trait MessageBuffer: Send + Sync + 'static {
    /// The backlog in every tenant (a system read: counts only, no ids).
    async fn stats(&self) -> Result<BufferStats, BufferError>;
    /// Adds a message (idempotent on the event id); returns how many wait in
    /// its conversation now. A run of one.
    async fn add(
        &self,
        conversation: &Conversation,
        event_id: EventId,
        position: i64,
    ) -> Result<usize, BufferError> {
        let arrivals = self
            .add_many(&[(conversation.clone(), event_id, position)])
            .await?;
        Ok(arrivals.first().map_or(0, |arrival| arrival.waiting))
    }
    /// Adds messages (each idempotent on its event id), as one write where
    /// the backend allows; returns each conversation that received some,
    /// in order of first appearance, with how many wait in it now and
    /// whether the run began it.
    async fn add_many(
        &self,
        messages: &[(Conversation, EventId, i64)],
    ) -> Result<Vec<Arrival>, BufferError>;
    /// The oldest `limit` waiting messages of a conversation, in log order.
    async fn batch(
        &self,
        conversation: &Conversation,
        limit: usize,
    ) -> Result<Vec<EventId>, BufferError>;
    /// Marks messages consolidated: they leave the batch, and adding them
    /// again (a replay) does nothing.
    async fn remove(&self, tenant: &TenantId, event_ids: &[EventId]) -> Result<(), BufferError>;
    /// Conversations whose newest message arrived before `quiet_since`, with
    /// when that was.
    async fn idle(
        &self,
        quiet_since: DateTime<Utc>,
    ) -> Result<Vec<(Conversation, DateTime<Utc>)>, BufferError>;
    /// A subject's conversations with waiting messages.
    async fn conversations(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<Vec<Conversation>, BufferError>;
    /// Deletes up to `limit` consolidated rows buffered before `before`,
    /// in every tenant, keeping each conversation's newest row (what tells
    /// a later message that the conversation had begun); returns how many.
    /// A message redelivered after its row is gone would be consolidated
    /// again, so `before` must lie further back than any redelivery can
    /// reach (the bus's retention, a rewound consumer group).
    async fn prune_consolidated(
        &self,
        before: DateTime<Utc>,
        limit: usize,
    ) -> Result<u64, BufferError>;
    /// Forgets a subject's waiting messages (erasure).
    async fn delete_subject(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<u64, BufferError>;
    /// Waits until no other process consolidates the subject, and keeps it
    /// that way until the claim is dropped. Processes sharing a buffer
    /// (scale-out: every consolidator's idle sweeper sees every
    /// conversation) would otherwise drain one conversation at once, batch
    /// its waiting messages differently, and create the same memories
    /// twice; or drain two of the subject's conversations at once, whose
    /// candidates are compared with the same memories, and create twice
    /// what one should have reinforced (what the in-process worker pool
    /// prevents with one worker per subject). The default claims nothing:
    /// a buffer only one process uses is serialised by that process
    /// (`Consolidator::drain`).
    async fn claim(
        &self,
        _tenant: &TenantId,
        _subject: &SubjectId,
    ) -> Result<SubjectClaim, BufferError> {
        Ok(SubjectClaim::default())
    }
}

pub struct SqliteMessageBuffer {
    pool: SqlitePool,
}

impl SqliteMessageBuffer {
    pub fn new(pool: SqlitePool) -> Self {
        SqliteMessageBuffer { pool }
    }
}

/// A conversation that received messages in [`MessageBuffer::add_many`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arrival {
    pub conversation: Conversation,
    /// Its messages waiting now.
    pub waiting: usize,
    /// Nothing of the conversation was buffered before the run's earliest
    /// message of it (waiting or consolidated): the run began it, so the
    /// subject's other sessions are over (`end_earlier_sessions`). A
    /// redelivered run begins it again, which ends nothing more.
    pub began: bool,
}

/// Each conversation of a run with the position of its earliest message
/// in it, in order of first appearance: what [`Arrival`]s are read for.
fn earliest_of_each(messages: &[(Conversation, EventId, i64)]) -> Vec<(&Conversation, i64)> {
    let mut conversations: Vec<(&Conversation, i64)> = Vec::new();
    for (conversation, _, position) in messages {
        match conversations.iter_mut().find(|(c, _)| *c == conversation) {
            Some((_, earliest)) => *earliest = (*earliest).min(*position),
            None => conversations.push((conversation, *position)),
        }
    }
    conversations
}

/// Rows one statement writes at most: 6 parameters a row stays far below
/// SQLite's 32,766.
const ROWS_PER_STATEMENT: usize = 500;

/// The conversations of a subject with messages waiting (through the
/// partial index of waiting rows, migration 0011).
const SUBJECT_CONVERSATIONS: &str =
    "SELECT DISTINCT tenant_id, subject_id, session_id FROM consolidation_buffer \
     WHERE tenant_id = ? AND subject_id = ? AND done = 0";

/// How many conversations have messages waiting (the same index).
const WAITING_CONVERSATIONS: &str =
    "SELECT COUNT(*) FROM (SELECT DISTINCT tenant_id, subject_id, session_id \
     FROM consolidation_buffer WHERE done = 0)";

fn failed(error: sqlx::Error) -> BufferError {
    BufferError(error.to_string())
}

fn conversation_of(row: &sqlx::sqlite::SqliteRow) -> Result<Conversation, BufferError> {
    let tenant: String = row.get("tenant_id");
    let subject: String = row.get("subject_id");
    Ok(Conversation {
        tenant: TenantId::parse(tenant).map_err(|e| BufferError(e.to_string()))?,
        subject: SubjectId::parse(subject).map_err(|e| BufferError(e.to_string()))?,
        session: row.get("session_id"),
    })
}

#[async_trait]
impl MessageBuffer for SqliteMessageBuffer {
    async fn stats(&self) -> Result<BufferStats, BufferError> {
        // Served by the partial index on waiting rows (migration 0010):
        // consolidated rows stay as `done`, and there are many more of them.
        let (messages, oldest): (i64, Option<i64>) = sqlx::query_as(
            "SELECT COUNT(*), MIN(buffered_at) FROM consolidation_buffer WHERE done = 0",
        )
        .fetch_one(&self.pool)
        .await
        .map_err(failed)?;
        let conversations: i64 = sqlx::query_scalar(WAITING_CONVERSATIONS)
            .fetch_one(&self.pool)
            .await
            .map_err(failed)?;
        Ok(BufferStats {
            messages: messages as u64,
            conversations: conversations as u64,
            oldest: oldest.and_then(DateTime::<Utc>::from_timestamp_micros),
        })
    }

    /// One transaction for the run: a write lock taken once, not once per
    /// message (the single SQLite writer is what ingest, the relay and the
    /// projections contend for).
    async fn add_many(
        &self,
        messages: &[(Conversation, EventId, i64)],
    ) -> Result<Vec<Arrival>, BufferError> {
        if messages.is_empty() {
            return Ok(Vec::new());
        }
        let now = Utc::now().timestamp_micros();
        let mut tx = self
            .pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(failed)?;
        // Multi-row statements: each statement is a round trip to the
        // connection's thread made while holding the write lock.
        for chunk in messages.chunks(ROWS_PER_STATEMENT) {
            let mut insert = sqlx::QueryBuilder::new(
                "INSERT OR IGNORE INTO consolidation_buffer (tenant_id, subject_id, session_id, event_id, position, buffered_at) ",
            );
            insert.push_values(chunk, |mut row, (conversation, event_id, position)| {
                row.push_bind(conversation.tenant.as_str())
                    .push_bind(conversation.subject.as_str())
                    .push_bind(&conversation.session)
                    .push_bind(event_id.to_string())
                    .push_bind(*position)
                    .push_bind(now);
            });
            insert.build().execute(&mut *tx).await.map_err(failed)?;
        }
        let conversations = earliest_of_each(messages);
        let mut waiting = Vec::with_capacity(conversations.len());
        for (conversation, earliest) in conversations {
            // Both through the (tenant, subject, session, done, position)
            // index: a count of the waiting, and one look for an earlier
            // message in each state.
            let (count, earlier): (i64, bool) = sqlx::query_as(
                "SELECT (SELECT COUNT(*) FROM consolidation_buffer WHERE tenant_id = ?1 AND subject_id = ?2 \
                 AND session_id = ?3 AND done = 0), \
                 EXISTS (SELECT 1 FROM consolidation_buffer WHERE tenant_id = ?1 AND subject_id = ?2 \
                 AND session_id = ?3 AND done IN (0, 1) AND position < ?4)",
            )
            .bind(conversation.tenant.as_str())
            .bind(conversation.subject.as_str())
            .bind(&conversation.session)
            .bind(earliest)
            .fetch_one(&mut *tx)
            .await
            .map_err(failed)?;
            waiting.push(Arrival {
                conversation: conversation.clone(),
                waiting: count as usize,
                began: !earlier,
            });
        }
        tx.commit().await.map_err(failed)?;
        Ok(waiting)
    }

    async fn batch(
        &self,
        conversation: &Conversation,
        limit: usize,
    ) -> Result<Vec<EventId>, BufferError> {
        let rows: Vec<String> = sqlx::query_scalar(
            "SELECT event_id FROM consolidation_buffer WHERE tenant_id = ? AND subject_id = ? AND session_id = ? \
             AND done = 0 ORDER BY position LIMIT ?",
        )
        .bind(conversation.tenant.as_str())
        .bind(conversation.subject.as_str())
        .bind(&conversation.session)
        .bind(limit as i64)
        .fetch_all(&self.pool)
        .await
        .map_err(failed)?;
        rows.iter()
            .map(|id| EventId::parse(id).map_err(|e| BufferError(e.to_string())))
            .collect()
    }

    async fn remove(&self, tenant: &TenantId, event_ids: &[EventId]) -> Result<(), BufferError> {
        let mut tx = self
            .pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(failed)?;
        for chunk in event_ids.chunks(ROWS_PER_STATEMENT) {
            let mut update = sqlx::QueryBuilder::new(
                "UPDATE consolidation_buffer SET done = 1 WHERE tenant_id = ",
            );
            update.push_bind(tenant.as_str()).push(" AND event_id IN (");
            let mut ids = update.separated(", ");
            for id in chunk {
                ids.push_bind(id.to_string());
            }
            update.push(")");
            update.build().execute(&mut *tx).await.map_err(failed)?;
        }
        tx.commit().await.map_err(failed)
    }

    async fn idle(
        &self,
        quiet_since: DateTime<Utc>,
    ) -> Result<Vec<(Conversation, DateTime<Utc>)>, BufferError> {
        let rows = sqlx::query(
            "SELECT tenant_id, subject_id, session_id, MAX(buffered_at) AS last FROM consolidation_buffer \
             WHERE done = 0 GROUP BY tenant_id, subject_id, session_id HAVING MAX(buffered_at) < ?",
        )
        .bind(quiet_since.timestamp_micros())
        .fetch_all(&self.pool)
        .await
        .map_err(failed)?;
        rows.iter()
            .map(|row| {
                let last: i64 = row.get("last");
                let at = DateTime::<Utc>::from_timestamp_micros(last).unwrap_or_default();
                Ok((conversation_of(row)?, at))
            })
            .collect()
    }

    async fn conversations(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<Vec<Conversation>, BufferError> {
        let rows = sqlx::query(SUBJECT_CONVERSATIONS)
            .bind(tenant.as_str())
            .bind(subject.as_str())
            .fetch_all(&self.pool)
            .await
            .map_err(failed)?;
        rows.iter().map(conversation_of).collect()
    }

    async fn prune_consolidated(
        &self,
        before: DateTime<Utc>,
        limit: usize,
    ) -> Result<u64, BufferError> {
        // A later row of the same conversation (through the conversation
        // index) is what makes a row not the newest.
        let deleted = sqlx::query(
            "DELETE FROM consolidation_buffer WHERE rowid IN (SELECT b.rowid FROM consolidation_buffer AS b \
             WHERE b.done = 1 AND b.buffered_at < ?1 AND EXISTS (SELECT 1 FROM consolidation_buffer AS n \
             WHERE n.tenant_id = b.tenant_id AND n.subject_id = b.subject_id AND n.session_id = b.session_id \
             AND n.done IN (0, 1) AND n.position > b.position) LIMIT ?2)",
        )
        .bind(before.timestamp_micros())
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .execute(&self.pool)
        .await
        .map_err(failed)?;
        Ok(deleted.rows_affected())
    }

    async fn delete_subject(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<u64, BufferError> {
        let deleted =
            sqlx::query("DELETE FROM consolidation_buffer WHERE tenant_id = ? AND subject_id = ?")
                .bind(tenant.as_str())
                .bind(subject.as_str())
                .execute(&self.pool)
                .await
                .map_err(failed)?;
        Ok(deleted.rows_affected())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What SQLite plans for `sql`, one detail line per step.
    async fn plan(pool: &SqlitePool, sql: &str, binds: usize) -> Vec<String> {
        let explain = format!("EXPLAIN QUERY PLAN {sql}");
        let mut query = sqlx::query(&explain);
        for _ in 0..binds {
            query = query.bind("x");
        }
        query
            .fetch_all(pool)
            .await
            .unwrap()
            .iter()
            .map(|row| row.get::<String, _>("detail"))
            .collect()
    }

    /// Listing and counting the conversations with messages waiting read
    /// the waiting rows alone, never the consolidated ones a subject keeps
    /// for 30 days.
    #[tokio::test]
    async fn waiting_conversations_are_read_through_the_index_of_waiting_rows() {
        let dir = tempfile::tempdir().unwrap();
        let pool = mnemo_event_store::sqlite::connect(&dir.path().join("mnemo.db"))
            .await
            .unwrap();
        for (sql, binds) in [(SUBJECT_CONVERSATIONS, 2), (WAITING_CONVERSATIONS, 0)] {
            let plan = plan(&pool, sql, binds).await;
            assert!(
                plan.iter().any(|d| d
                    .contains("USING COVERING INDEX consolidation_buffer_waiting_conversations")),
                "{sql}: {plan:?}"
            );
            assert!(
                !plan.iter().any(|d| d.contains("TEMP B-TREE")),
                "{sql}: {plan:?}"
            );
        }
    }
}
