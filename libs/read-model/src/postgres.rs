//! PostgreSQL adapter of the memory read model (table in
//! `migrations/postgres/0003_read_model.sql`, the sealed blob and the tag
//! tokens from `0008_sealed_read_model.sql`).
//!
//! A sealed row keeps its tags' keyed tokens in `tag_tokens` and leaves
//! `content`, `tags` and `session_id` empty; a row written before
//! (`sealed` NULL) has them in clear, and a tag filter compares each row
//! with the form it was written in.
//!
//! Tenant calls run in tenant-scoped transactions of the application role,
//! so row-level security filters every statement a second time.
//! [`MemoryReadModel::subjects`], the forgetter's pass over all tenants,
//! reads through the system role, which may see the `tenant_id` and
//! `subject_id` columns of every row and nothing else.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use mnemo_crypto::SubjectCipher;
use mnemo_domain::{
    AgentId, Memory, MemoryId, MemoryKind, MemoryRelation, MemoryState, Provenance, SessionId,
    SubjectId, SubjectText, TenantId,
};
use mnemo_pg::{PgError, SystemPool, TenantPool};
use sqlx::postgres::PgRow;
use sqlx::types::Json;
use sqlx::Row;

use crate::sealed::{self, StoredRow};
use crate::{
    in_order_of, summarise, unique_in_order, MemoryFilter, MemoryReadModel, ReadModelError,
    SubjectFilter, SubjectSummary,
};

#[derive(Clone)]
pub struct PostgresMemoryReadModel {
    tenant: TenantPool,
    system: SystemPool,
    cipher: Arc<SubjectCipher>,
}

impl PostgresMemoryReadModel {
    /// `tenant` logs in as the application role, `system` as the system
    /// role (see `mnemo_pg`); the schema must be migrated. `cipher` seals
    /// and opens the rows' subject fields: pass the one the process's log
    /// uses, so erasures evict its cache and its cached keys serve every
    /// read.
    pub fn new(tenant: TenantPool, system: SystemPool, cipher: Arc<SubjectCipher>) -> Self {
        PostgresMemoryReadModel {
            tenant,
            system,
            cipher,
        }
    }

    /// One query of `list`: up to `filter.limit` rows before `before`, as
    /// stored. `tokens` are the tokens of `filter.tags`, in order.
    async fn list_page(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
        filter: &MemoryFilter,
        tokens: &[String],
        before: Option<MemoryId>,
    ) -> Result<Vec<StoredRow>, ReadModelError> {
        let mut builder =
            sqlx::QueryBuilder::new(format!("SELECT {COLUMNS} FROM memories WHERE tenant_id = "));
        builder.push_bind(tenant.as_str());
        builder
            .push(" AND subject_id = ")
            .push_bind(subject.as_str());
        if !filter.kinds.is_empty() {
            let kinds: Vec<&str> = filter.kinds.iter().map(|k| k.as_str()).collect();
            builder.push(" AND kind = ANY(").push_bind(kinds).push(")");
        }
        if filter.states.is_empty() {
            builder.push(" AND state <> 'deleted'");
        } else {
            let states: Vec<&str> = filter.states.iter().map(|s| s.as_str()).collect();
            builder
                .push(" AND state = ANY(")
                .push_bind(states)
                .push(")");
        }
        if !filter.tags.is_empty() {
            // A legacy row's tags are in clear, a sealed row's are tokens;
            // each side can use its GIN index.
            builder
                .push(" AND ((sealed IS NULL AND tags @> ")
                .push_bind(filter.tags.clone())
                .push(") OR (sealed IS NOT NULL AND tag_tokens @> ")
                .push_bind(tokens.to_vec())
                .push("))");
        }
        if let Some(before) = before {
            builder
                .push(" AND memory_id < ")
                .push_bind(before.to_string());
        }
        builder
            .push(" ORDER BY memory_id DESC LIMIT ")
            .push_bind(i64::from(filter.limit.max(1)));
        let mut tx = self.tenant.begin(tenant).await.map_err(pg)?;
        let rows = builder.build().fetch_all(&mut *tx).await.map_err(backend)?;
        tx.commit().await.map_err(backend)?;
        rows.iter().map(decode).collect()
    }
}

fn backend(error: sqlx::Error) -> ReadModelError {
    ReadModelError::Backend(error.to_string())
}

fn pg(error: PgError) -> ReadModelError {
    ReadModelError::Backend(error.to_string())
}

const COLUMNS: &str = "memory_id, subject_id, kind, content, tags, confidence, importance, \
     state, version, provenance, session_id, agent_id, reinforcements, superseded_by, \
     created_at, updated_at, relations, sealed";

/// The row's columns; a sealed row's subject fields are opened by
/// [`sealed::reveal`].
fn decode(row: &PgRow) -> Result<StoredRow, ReadModelError> {
    let corrupt = |what: &str| ReadModelError::Corrupt(what.to_owned());
    let id: String = row.get("memory_id");
    let subject: String = row.get("subject_id");
    let kind: String = row.get("kind");
    let state: String = row.get("state");
    let session: Option<String> = row.get("session_id");
    let agent: Option<String> = row.get("agent_id");
    let superseded_by: Option<String> = row.get("superseded_by");
    let version: i64 = row.get("version");
    let reinforcements: i64 = row.get("reinforcements");
    let Json(provenance): Json<Provenance> = row
        .try_get("provenance")
        .map_err(|_| corrupt("provenance"))?;
    let Json(relations): Json<Vec<MemoryRelation>> =
        row.try_get("relations").map_err(|_| corrupt("relations"))?;
    let sealed: Option<String> = row.get("sealed");
    let memory = Memory {
        id: MemoryId::parse(&id).map_err(|_| corrupt("memory_id"))?,
        subject: SubjectId::parse(subject).map_err(|_| corrupt("subject_id"))?,
        kind: MemoryKind::parse(&kind).ok_or_else(|| corrupt("kind"))?,
        content: SubjectText::Text(row.get("content")),
        tags: row.get("tags"),
        confidence: row.get("confidence"),
        importance: row.get("importance"),
        state: MemoryState::parse(&state).ok_or_else(|| corrupt("state"))?,
        version: u64::try_from(version).map_err(|_| corrupt("version"))?,
        provenance,
        session: session
            .map(SessionId::parse)
            .transpose()
            .map_err(|_| corrupt("session_id"))?,
        agent: agent
            .map(AgentId::parse)
            .transpose()
            .map_err(|_| corrupt("agent_id"))?,
        reinforcements: u32::try_from(reinforcements).map_err(|_| corrupt("reinforcements"))?,
        superseded_by: superseded_by
            .map(|id| MemoryId::parse(&id))
            .transpose()
            .map_err(|_| corrupt("superseded_by"))?,
        relations,
        created_at: row.get::<DateTime<Utc>, _>("created_at"),
        updated_at: row.get::<DateTime<Utc>, _>("updated_at"),
    };
    Ok(StoredRow { memory, sealed })
}

impl PostgresMemoryReadModel {
    /// The rows in one transaction, sealed before it.
    async fn write(
        &self,
        tenant: &TenantId,
        rows: &[sealed::Row<'_>],
    ) -> Result<(), ReadModelError> {
        if rows.is_empty() {
            return Ok(());
        }
        // Sealed before the transaction: no row lock is held while the key
        // store is asked.
        let sealed_rows = sealed::seal_all(&self.cipher, tenant, rows).await?;
        let mut tx = self.tenant.begin(tenant).await.map_err(pg)?;
        for (row, sealed) in rows.iter().zip(&sealed_rows) {
            let memory = row.memory;
            // Only a newer version replaces the row, so a redelivered or
            // reordered event cannot move a memory back in time.
            sqlx::query(
            "INSERT INTO memories (tenant_id, memory_id, subject_id, kind, content, tags, confidence, \
             importance, state, version, provenance, session_id, agent_id, reinforcements, superseded_by, \
             created_at, updated_at, relations, sealed, tag_tokens) \
             VALUES ($1, $2, $3, $4, '', '{}', $5, $6, $7, $8, $9, NULL, $10, $11, $12, $13, $14, $15, \
             $16, $17) \
             ON CONFLICT (tenant_id, memory_id) DO UPDATE SET kind = excluded.kind, \
             content = excluded.content, tags = excluded.tags, confidence = excluded.confidence, \
             importance = excluded.importance, state = excluded.state, version = excluded.version, \
             provenance = excluded.provenance, session_id = excluded.session_id, \
             reinforcements = excluded.reinforcements, superseded_by = excluded.superseded_by, \
             updated_at = excluded.updated_at, relations = excluded.relations, \
             sealed = excluded.sealed, tag_tokens = excluded.tag_tokens \
             WHERE excluded.version > memories.version",
        )
        .bind(tenant.as_str())
        .bind(memory.id.to_string())
        .bind(memory.subject.as_str())
        .bind(memory.kind.as_str())
        .bind(memory.confidence)
        .bind(memory.importance)
        .bind(memory.state.as_str())
        .bind(memory.version as i64)
        .bind(Json(&memory.provenance))
        .bind(memory.agent.as_ref().map(AgentId::as_str))
        .bind(i64::from(memory.reinforcements))
        .bind(memory.superseded_by.map(|id| id.to_string()))
        .bind(memory.created_at)
        .bind(memory.updated_at)
        .bind(Json(&memory.relations))
        .bind(&sealed.sealed)
        .bind(&sealed.tag_tokens)
        .execute(&mut *tx)
        .await
        .map_err(backend)?;
        }
        tx.commit().await.map_err(backend)
    }
}

#[async_trait]
impl MemoryReadModel for PostgresMemoryReadModel {
    async fn upsert(&self, tenant: &TenantId, memory: &Memory) -> Result<(), ReadModelError> {
        self.write(tenant, &[sealed::Row::under_live_key(memory)])
            .await
    }

    async fn upsert_many(
        &self,
        tenant: &TenantId,
        memories: &[(Memory, u32)],
    ) -> Result<(), ReadModelError> {
        self.write(tenant, &sealed::Row::under_generations(memories))
            .await
    }

    async fn remove(&self, tenant: &TenantId, id: &MemoryId) -> Result<(), ReadModelError> {
        let mut tx = self.tenant.begin(tenant).await.map_err(pg)?;
        sqlx::query("DELETE FROM memories WHERE tenant_id = $1 AND memory_id = $2")
            .bind(tenant.as_str())
            .bind(id.to_string())
            .execute(&mut *tx)
            .await
            .map_err(backend)?;
        tx.commit().await.map_err(backend)
    }

    async fn get(
        &self,
        tenant: &TenantId,
        id: &MemoryId,
    ) -> Result<Option<Memory>, ReadModelError> {
        let mut tx = self.tenant.begin(tenant).await.map_err(pg)?;
        let row = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM memories WHERE tenant_id = $1 AND memory_id = $2"
        ))
        .bind(tenant.as_str())
        .bind(id.to_string())
        .fetch_optional(&mut *tx)
        .await
        .map_err(backend)?;
        tx.commit().await.map_err(backend)?;
        let rows = row.as_ref().map(decode).transpose()?.into_iter().collect();
        Ok(sealed::reveal(&self.cipher, tenant, rows).await?.pop())
    }

    async fn get_many(
        &self,
        tenant: &TenantId,
        ids: &[MemoryId],
    ) -> Result<Vec<Memory>, ReadModelError> {
        let wanted = unique_in_order(ids);
        if wanted.is_empty() {
            return Ok(Vec::new());
        }
        // One array parameter, whatever the count: no bound-parameter limit
        // to chunk around, and one statement plan for every batch size.
        let keys: Vec<String> = wanted.iter().map(ToString::to_string).collect();
        let mut tx = self.tenant.begin(tenant).await.map_err(pg)?;
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM memories WHERE tenant_id = $1 AND memory_id = ANY($2)"
        ))
        .bind(tenant.as_str())
        .bind(&keys)
        .fetch_all(&mut *tx)
        .await
        .map_err(backend)?;
        tx.commit().await.map_err(backend)?;
        let rows = rows.iter().map(decode).collect::<Result<Vec<_>, _>>()?;
        let memories = sealed::reveal(&self.cipher, tenant, rows).await?;
        Ok(in_order_of(&wanted, memories))
    }

    async fn list(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
        filter: &MemoryFilter,
    ) -> Result<Vec<Memory>, ReadModelError> {
        let Some(tokens) =
            sealed::query_tokens(&self.cipher, tenant, subject, &filter.tags).await?
        else {
            return Ok(Vec::new());
        };
        sealed::fill_page(
            &self.cipher,
            tenant,
            filter.limit.max(1),
            filter.before,
            |before| self.list_page(tenant, subject, filter, &tokens, before),
        )
        .await
    }

    async fn subjects(
        &self,
        after: Option<(TenantId, SubjectId)>,
        limit: u32,
    ) -> Result<Vec<(TenantId, SubjectId)>, ReadModelError> {
        let (tenant, subject) = after
            .map(|(t, s)| (t.to_string(), s.to_string()))
            .unwrap_or_default();
        let rows: Vec<(String, String)> = sqlx::query_as(
            "SELECT DISTINCT tenant_id, subject_id FROM memories \
             WHERE (tenant_id, subject_id) > ($1, $2) \
             ORDER BY tenant_id, subject_id LIMIT $3",
        )
        .bind(tenant)
        .bind(subject)
        .bind(i64::from(limit.max(1)))
        .fetch_all(self.system.pool())
        .await
        .map_err(backend)?;
        rows.into_iter()
            .map(|(tenant, subject)| {
                Ok((
                    TenantId::parse(tenant)
                        .map_err(|_| ReadModelError::Corrupt("tenant_id".into()))?,
                    SubjectId::parse(subject)
                        .map_err(|_| ReadModelError::Corrupt("subject_id".into()))?,
                ))
            })
            .collect()
    }

    async fn list_subjects(
        &self,
        tenant: &TenantId,
        filter: &SubjectFilter,
    ) -> Result<Vec<SubjectSummary>, ReadModelError> {
        // The page of subjects first (`subject_id` is `COLLATE "C"`: byte
        // order, as on SQLite), then their counts: one statement, in the
        // tenant's transaction, so row-level security applies.
        let mut builder = sqlx::QueryBuilder::new(
            "SELECT subject_id, state, COUNT(*) AS n, MAX(updated_at) AS last FROM memories \
             WHERE tenant_id = ",
        );
        builder.push_bind(tenant.as_str());
        builder.push(
            " AND subject_id IN (SELECT DISTINCT subject_id FROM memories WHERE tenant_id = ",
        );
        builder.push_bind(tenant.as_str());
        if let Some(only) = &filter.only {
            builder.push(" AND subject_id = ").push_bind(only.as_str());
        }
        if let Some(prefix) = &filter.prefix {
            // A comparison, not LIKE: `_` and `%` in a prefix mean themselves.
            builder
                .push(" AND starts_with(subject_id, ")
                .push_bind(prefix.clone())
                .push(")");
        }
        if let Some(after) = &filter.after {
            builder.push(" AND subject_id > ").push_bind(after.as_str());
        }
        builder
            .push(" ORDER BY subject_id LIMIT ")
            .push_bind(i64::from(filter.limit.max(1)))
            .push(") GROUP BY subject_id, state ORDER BY subject_id, state");
        let mut tx = self.tenant.begin(tenant).await.map_err(pg)?;
        let rows: Vec<(String, String, i64, Option<DateTime<Utc>>)> = builder
            .build_query_as()
            .fetch_all(&mut *tx)
            .await
            .map_err(backend)?;
        tx.commit().await.map_err(backend)?;
        summarise(rows)
    }

    async fn delete_subject(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<u64, ReadModelError> {
        let mut tx = self.tenant.begin(tenant).await.map_err(pg)?;
        let deleted = sqlx::query("DELETE FROM memories WHERE tenant_id = $1 AND subject_id = $2")
            .bind(tenant.as_str())
            .bind(subject.as_str())
            .execute(&mut *tx)
            .await
            .map_err(backend)?;
        tx.commit().await.map_err(backend)?;
        Ok(deleted.rows_affected())
    }
}
