//! SQLite adapter of the memory read model (tables in
//! `migrations/sqlite/0004_read_model.sql`, the sealed blob from
//! `0008_sealed_read_model.sql`).
//!
//! `memory_tags.tag` holds the tag's keyed token for a sealed row and the
//! tag itself for a row written before (`sealed` NULL); a tag filter
//! compares each row with the form it was written in.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{TimeZone, Utc};
use mnemo_crypto::SubjectCipher;
use mnemo_domain::{
    AgentId, Memory, MemoryId, MemoryKind, MemoryState, Provenance, SessionId, SubjectId,
    SubjectText, TenantId,
};
use sqlx::{Row, SqlitePool};

use crate::sealed::{self, StoredRow};
use crate::{
    in_order_of, summarise, unique_in_order, MemoryFilter, MemoryReadModel, ReadModelError,
    SubjectFilter, SubjectSummary,
};

/// Ids bound in one `get_many` statement. SQLite refuses a statement with
/// more bound parameters than `SQLITE_MAX_VARIABLE_NUMBER`: 32 766 in the
/// SQLite sqlx bundles, but 999 in builds before 3.32, which a system
/// library may still be. One parameter is the tenant, so 998 ids stay under
/// either limit; a search asks for at most a few hundred.
const GET_MANY_CHUNK: usize = 998;

#[derive(Clone)]
pub struct SqliteMemoryReadModel {
    pool: SqlitePool,
    cipher: Arc<SubjectCipher>,
}

impl SqliteMemoryReadModel {
    /// `cipher` seals and opens the rows' subject fields: pass the one the
    /// process's log uses, so erasures evict its cache and its cached keys
    /// serve every read.
    pub fn new(pool: SqlitePool, cipher: Arc<SubjectCipher>) -> Self {
        SqliteMemoryReadModel { pool, cipher }
    }

    /// [`MemoryReadModel::get_many`] with `chunk` ids per statement, so the
    /// tests can cross a chunk boundary without writing a thousand rows.
    async fn get_many_in_chunks(
        &self,
        tenant: &TenantId,
        ids: &[MemoryId],
        chunk: usize,
    ) -> Result<Vec<Memory>, ReadModelError> {
        let wanted = unique_in_order(ids);
        if wanted.is_empty() {
            return Ok(Vec::new());
        }
        let mut rows = Vec::with_capacity(wanted.len());
        for part in wanted.chunks(chunk) {
            let mut builder = sqlx::QueryBuilder::new("SELECT * FROM memories WHERE tenant_id = ");
            builder.push_bind(tenant.as_str());
            builder.push(" AND memory_id IN (");
            let mut list = builder.separated(", ");
            for id in part {
                list.push_bind(id.to_string());
            }
            builder.push(")");
            let found = builder
                .build()
                .fetch_all(&self.pool)
                .await
                .map_err(backend)?;
            for row in &found {
                rows.push(decode(row)?);
            }
        }
        let memories = sealed::reveal(&self.cipher, tenant, rows).await?;
        Ok(in_order_of(&wanted, memories))
    }

    /// One query of `list`: up to `filter.limit` rows before `before`, as
    /// stored. `tags` pairs each tag asked for with its token.
    async fn list_page(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
        filter: &MemoryFilter,
        tags: &[(&str, &str)],
        before: Option<MemoryId>,
    ) -> Result<Vec<StoredRow>, ReadModelError> {
        let mut builder = sqlx::QueryBuilder::new("SELECT * FROM memories m WHERE m.tenant_id = ");
        builder.push_bind(tenant.as_str());
        builder
            .push(" AND m.subject_id = ")
            .push_bind(subject.as_str());
        if !filter.kinds.is_empty() {
            builder.push(" AND m.kind IN (");
            let mut list = builder.separated(", ");
            for kind in &filter.kinds {
                list.push_bind(kind.as_str());
            }
            builder.push(")");
        }
        if filter.states.is_empty() {
            builder.push(" AND m.state <> 'deleted'");
        } else {
            builder.push(" AND m.state IN (");
            let mut list = builder.separated(", ");
            for state in &filter.states {
                list.push_bind(state.as_str());
            }
            builder.push(")");
        }
        for (tag, token) in tags {
            // A legacy row's tags are in clear, a sealed row's are tokens.
            builder.push(
                " AND EXISTS (SELECT 1 FROM memory_tags t WHERE t.tenant_id = m.tenant_id \
                 AND t.memory_id = m.memory_id AND t.tag = CASE WHEN m.sealed IS NULL THEN ",
            );
            builder
                .push_bind(tag.to_string())
                .push(" ELSE ")
                .push_bind(token.to_string())
                .push(" END)");
        }
        if let Some(before) = before {
            builder
                .push(" AND m.memory_id < ")
                .push_bind(before.to_string());
        }
        builder
            .push(" ORDER BY m.memory_id DESC LIMIT ")
            .push_bind(i64::from(filter.limit.max(1)));
        let rows = builder
            .build()
            .fetch_all(&self.pool)
            .await
            .map_err(backend)?;
        rows.iter().map(decode).collect()
    }
}

fn backend(error: sqlx::Error) -> ReadModelError {
    ReadModelError::Backend(error.to_string())
}

/// The row's columns; a sealed row's subject fields are opened by
/// [`sealed::reveal`].
fn decode(row: &sqlx::sqlite::SqliteRow) -> Result<StoredRow, ReadModelError> {
    let corrupt = |what: &str| ReadModelError::Corrupt(what.to_owned());
    let id: String = row.get("memory_id");
    let subject: String = row.get("subject_id");
    let kind: String = row.get("kind");
    let state: String = row.get("state");
    let tags: String = row.get("tags");
    let provenance: String = row.get("provenance");
    let relations: String = row.get("relations");
    let session: Option<String> = row.get("session_id");
    let agent: Option<String> = row.get("agent_id");
    let superseded_by: Option<String> = row.get("superseded_by");
    let created_at: i64 = row.get("created_at");
    let updated_at: i64 = row.get("updated_at");
    let version: i64 = row.get("version");
    let reinforcements: i64 = row.get("reinforcements");
    let sealed: Option<String> = row.get("sealed");
    let time = |micros: i64| {
        Utc.timestamp_micros(micros)
            .single()
            .ok_or_else(|| corrupt("timestamp"))
    };
    let memory = Memory {
        id: MemoryId::parse(&id).map_err(|_| corrupt("memory_id"))?,
        subject: SubjectId::parse(subject).map_err(|_| corrupt("subject_id"))?,
        kind: MemoryKind::parse(&kind).ok_or_else(|| corrupt("kind"))?,
        content: SubjectText::Text(row.get("content")),
        tags: serde_json::from_str(&tags).map_err(|_| corrupt("tags"))?,
        confidence: row.get::<f64, _>("confidence") as f32,
        importance: row.get::<f64, _>("importance") as f32,
        state: MemoryState::parse(&state).ok_or_else(|| corrupt("state"))?,
        version: version as u64,
        provenance: serde_json::from_str::<Provenance>(&provenance)
            .map_err(|_| corrupt("provenance"))?,
        session: session
            .map(SessionId::parse)
            .transpose()
            .map_err(|_| corrupt("session_id"))?,
        agent: agent
            .map(AgentId::parse)
            .transpose()
            .map_err(|_| corrupt("agent_id"))?,
        reinforcements: reinforcements as u32,
        superseded_by: superseded_by
            .map(|id| MemoryId::parse(&id))
            .transpose()
            .map_err(|_| corrupt("superseded_by"))?,
        relations: serde_json::from_str(&relations).map_err(|_| corrupt("relations"))?,
        created_at: time(created_at)?,
        updated_at: time(updated_at)?,
    };
    Ok(StoredRow { memory, sealed })
}

impl SqliteMemoryReadModel {
    /// The rows in one transaction, sealed before it.
    async fn write(
        &self,
        tenant: &TenantId,
        rows: &[sealed::Row<'_>],
    ) -> Result<(), ReadModelError> {
        if rows.is_empty() {
            return Ok(());
        }
        // Sealed before the write transaction: the key store may live in
        // this very database, and creating a key writes to it.
        let sealed_rows = sealed::seal_all(&self.cipher, tenant, rows).await?;
        let mut tx = self
            .pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(backend)?;
        let pairs: Vec<(&Memory, &sealed::SealedRow)> = rows
            .iter()
            .map(|row| row.memory)
            .zip(&sealed_rows)
            .collect();
        upsert_all_in(&mut tx, tenant, &pairs).await?;
        tx.commit().await.map_err(backend)
    }
}

#[async_trait]
impl MemoryReadModel for SqliteMemoryReadModel {
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
        let mut tx = self
            .pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(backend)?;
        for table in ["memories", "memory_tags"] {
            sqlx::query(&format!(
                "DELETE FROM {table} WHERE tenant_id = ? AND memory_id = ?"
            ))
            .bind(tenant.as_str())
            .bind(id.to_string())
            .execute(&mut *tx)
            .await
            .map_err(backend)?;
        }
        tx.commit().await.map_err(backend)
    }

    async fn get(
        &self,
        tenant: &TenantId,
        id: &MemoryId,
    ) -> Result<Option<Memory>, ReadModelError> {
        let row = sqlx::query("SELECT * FROM memories WHERE tenant_id = ? AND memory_id = ?")
            .bind(tenant.as_str())
            .bind(id.to_string())
            .fetch_optional(&self.pool)
            .await
            .map_err(backend)?;
        let rows = row.as_ref().map(decode).transpose()?.into_iter().collect();
        Ok(sealed::reveal(&self.cipher, tenant, rows).await?.pop())
    }

    async fn get_many(
        &self,
        tenant: &TenantId,
        ids: &[MemoryId],
    ) -> Result<Vec<Memory>, ReadModelError> {
        self.get_many_in_chunks(tenant, ids, GET_MANY_CHUNK).await
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
        let tags: Vec<(&str, &str)> = filter
            .tags
            .iter()
            .map(String::as_str)
            .zip(tokens.iter().map(String::as_str))
            .collect();
        sealed::fill_page(
            &self.cipher,
            tenant,
            filter.limit.max(1),
            filter.before,
            |before| self.list_page(tenant, subject, filter, &tags, before),
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
        let rows = sqlx::query(
            "SELECT DISTINCT tenant_id, subject_id FROM memories WHERE (tenant_id, subject_id) > (?, ?) \
             ORDER BY tenant_id, subject_id LIMIT ?",
        )
        .bind(tenant)
        .bind(subject)
        .bind(i64::from(limit.max(1)))
        .fetch_all(&self.pool)
        .await
        .map_err(backend)?;
        rows.iter()
            .map(|row| {
                let tenant: String = row.get("tenant_id");
                let subject: String = row.get("subject_id");
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
        // The page of subjects first (the index on tenant and subject keeps
        // it a range scan), then their counts: one statement.
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
                .push(" AND substr(subject_id, 1, length(")
                .push_bind(prefix.clone())
                .push(")) = ")
                .push_bind(prefix.clone());
        }
        if let Some(after) = &filter.after {
            builder.push(" AND subject_id > ").push_bind(after.as_str());
        }
        builder
            .push(" ORDER BY subject_id LIMIT ")
            .push_bind(i64::from(filter.limit.max(1)))
            .push(") GROUP BY subject_id, state ORDER BY subject_id, state");
        let rows = builder
            .build()
            .fetch_all(&self.pool)
            .await
            .map_err(backend)?;
        let rows = rows
            .iter()
            .map(|row| {
                let last: Option<i64> = row.get("last");
                let last = match last {
                    Some(micros) => Some(
                        Utc.timestamp_micros(micros)
                            .single()
                            .ok_or_else(|| ReadModelError::Corrupt("updated_at".into()))?,
                    ),
                    None => None,
                };
                Ok((row.get("subject_id"), row.get("state"), row.get("n"), last))
            })
            .collect::<Result<Vec<_>, ReadModelError>>()?;
        summarise(rows)
    }

    async fn delete_subject(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<u64, ReadModelError> {
        let mut tx = self
            .pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(backend)?;
        sqlx::query(
            "DELETE FROM memory_tags WHERE tenant_id = ?1 AND memory_id IN \
             (SELECT memory_id FROM memories WHERE tenant_id = ?1 AND subject_id = ?2)",
        )
        .bind(tenant.as_str())
        .bind(subject.as_str())
        .execute(&mut *tx)
        .await
        .map_err(backend)?;
        let deleted = sqlx::query("DELETE FROM memories WHERE tenant_id = ? AND subject_id = ?")
            .bind(tenant.as_str())
            .bind(subject.as_str())
            .execute(&mut *tx)
            .await
            .map_err(backend)?;
        tx.commit().await.map_err(backend)?;
        Ok(deleted.rows_affected())
    }
}

/// One row (and its tag tokens) inside the caller's transaction, when the
/// memory is newer than what is stored.
/// Rows per multi-row upsert: 17 parameters each, under the 999 that SQLite
/// builds before 3.32 allow (see [`GET_MANY_CHUNK`]).
const ROWS_PER_UPSERT: usize = 50;

/// Tag rows per multi-row insert: 3 parameters each, under 999 as above.
const TAGS_PER_INSERT: usize = 300;

/// Upserts `rows` (each with its sealed fields) with a statement per
/// [`ROWS_PER_UPSERT`] rows, then replaces the tags of the memories a row
/// was written for (a row older than the stored version writes nothing):
/// a handful of statements whatever the number of rows, each a round trip
/// to the connection's thread made while the write lock is held.
async fn upsert_all_in(
    tx: &mut sqlx::SqliteConnection,
    tenant: &TenantId,
    rows: &[(&Memory, &sealed::SealedRow)],
) -> Result<(), ReadModelError> {
    // The ids whose stored row is now one of `rows`; with one id twice in
    // `rows`, the higher version is the one kept, as it would be row by row.
    let mut written: std::collections::HashMap<String, (&Memory, &sealed::SealedRow)> =
        std::collections::HashMap::new();
    for part in rows.chunks(ROWS_PER_UPSERT) {
        let ids: Vec<String> = part
            .iter()
            .map(|(memory, _)| memory.id.to_string())
            .collect();
        let mut builder = sqlx::QueryBuilder::new(
            "INSERT INTO memories (tenant_id, memory_id, subject_id, kind, content, tags, \
             confidence, importance, state, version, provenance, session_id, agent_id, \
             reinforcements, superseded_by, created_at, updated_at, relations, sealed) ",
        );
        builder.push_values(
            part.iter().zip(&ids),
            |mut values, ((memory, sealed), id)| {
                let provenance =
                    serde_json::to_string(&memory.provenance).expect("provenance serializes");
                let relations =
                    serde_json::to_string(&memory.relations).expect("relations serialize");
                values
                    .push_bind(tenant.as_str())
                    .push_bind(id.as_str())
                    .push_bind(memory.subject.as_str())
                    .push_bind(memory.kind.as_str())
                    .push("''")
                    .push("'[]'")
                    .push_bind(f64::from(memory.confidence))
                    .push_bind(f64::from(memory.importance))
                    .push_bind(memory.state.as_str())
                    .push_bind(memory.version as i64)
                    .push_bind(provenance)
                    .push("NULL")
                    .push_bind(memory.agent.as_ref().map(|agent| agent.as_str().to_owned()))
                    .push_bind(i64::from(memory.reinforcements))
                    .push_bind(memory.superseded_by.map(|id| id.to_string()))
                    .push_bind(memory.created_at.timestamp_micros())
                    .push_bind(memory.updated_at.timestamp_micros())
                    .push_bind(relations)
                    .push_bind(sealed.sealed.as_str());
            },
        );
        builder.push(
            " ON CONFLICT (tenant_id, memory_id) DO UPDATE SET kind = excluded.kind, \
             content = excluded.content, tags = excluded.tags, confidence = excluded.confidence, \
             importance = excluded.importance, state = excluded.state, version = excluded.version, \
             provenance = excluded.provenance, session_id = excluded.session_id, \
             reinforcements = excluded.reinforcements, superseded_by = excluded.superseded_by, \
             updated_at = excluded.updated_at, relations = excluded.relations, \
             sealed = excluded.sealed WHERE excluded.version > memories.version \
             RETURNING memory_id, version",
        );
        let returned = builder.build().fetch_all(&mut *tx).await.map_err(backend)?;
        for returned in returned {
            let id: String = returned.try_get("memory_id").map_err(backend)?;
            let version: i64 = returned.try_get("version").map_err(backend)?;
            let row = part
                .iter()
                .zip(&ids)
                .find(|((memory, _), written)| memory.version as i64 == version && **written == id)
                .map(|(row, _)| *row)
                .ok_or_else(|| {
                    ReadModelError::Corrupt(format!("upsert returned {id} v{version}, not written"))
                })?;
            written.insert(id, row);
        }
    }
    if written.is_empty() {
        return Ok(());
    }
    let ids: Vec<&String> = written.keys().collect();
    for part in ids.chunks(GET_MANY_CHUNK) {
        let mut builder = sqlx::QueryBuilder::new("DELETE FROM memory_tags WHERE tenant_id = ");
        builder
            .push_bind(tenant.as_str())
            .push(" AND memory_id IN (");
        let mut separated = builder.separated(", ");
        for id in part {
            separated.push_bind(id.as_str());
        }
        separated.push_unseparated(")");
        builder.build().execute(&mut *tx).await.map_err(backend)?;
    }
    let tags: Vec<(&str, &str)> = written
        .iter()
        .flat_map(|(id, (_, sealed))| {
            sealed
                .tag_tokens
                .iter()
                .map(move |token| (id.as_str(), token.as_str()))
        })
        .collect();
    for part in tags.chunks(TAGS_PER_INSERT) {
        let mut builder = sqlx::QueryBuilder::new(
            "INSERT OR IGNORE INTO memory_tags (tenant_id, memory_id, tag) ",
        );
        builder.push_values(part, |mut values, (id, token)| {
            values
                .push_bind(tenant.as_str())
                .push_bind(*id)
                .push_bind(*token);
        });
        builder.build().execute(&mut *tx).await.map_err(backend)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Chunks of two over five ids (one missing, one repeated): the chunks'
    /// rows come back merged and in the order asked.
    #[tokio::test]
    async fn get_many_merges_chunks_in_the_order_asked() {
        let dir = tempfile::tempdir().unwrap();
        let pool = mnemo_event_store::sqlite::connect(&dir.path().join("m.db"))
            .await
            .unwrap();
        let cipher =
            mnemo_crypto::SubjectCipher::new(Arc::new(mnemo_crypto::MemorySubjectKeyStore::new()));
        let model = SqliteMemoryReadModel::new(pool, Arc::new(cipher));
        let tenant = TenantId::parse("t1").unwrap();
        let mut written = Vec::new();
        for content in ["one", "two", "three", "four"] {
            let memory = Memory {
                id: MemoryId::new(),
                subject: SubjectId::parse("s1").unwrap(),
                kind: MemoryKind::Fact,
                content: SubjectText::new(content),
                tags: Vec::new(),
                confidence: 0.9,
                importance: 0.5,
                state: MemoryState::Active,
                version: 1,
                provenance: Provenance {
                    source_event_ids: Vec::new(),
                    producer: mnemo_domain::Producer::api(),
                },
                session: None,
                agent: None,
                reinforcements: 0,
                superseded_by: None,
                relations: Vec::new(),
                created_at: Utc::now(),
                updated_at: Utc::now(),
            };
            model.upsert(&tenant, &memory).await.unwrap();
            written.push(memory.id);
        }
        let ids = [
            written[3],
            MemoryId::new(),
            written[0],
            written[3],
            written[2],
            written[1],
        ];
        let got: Vec<MemoryId> = model
            .get_many_in_chunks(&tenant, &ids, 2)
            .await
            .unwrap()
            .into_iter()
            .map(|m| m.id)
            .collect();
        assert_eq!(got, [written[3], written[0], written[2], written[1]]);
    }
}
