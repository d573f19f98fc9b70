//! The memory projection: memory events in, read-model rows and vector
//! points out. For each event it re-reads and folds the memory's whole
//! stream, which makes the handler idempotent and indifferent to redelivery
//! or reordering: the row and the point always become the stream's latest
//! state. Content is embedded only when it changed; a state change (archive,
//! restore) only rewrites the point's payload.
//!
//! Key decision: the read-model row of a memory is written only after its
//! point is durable (in [`EventHandler::flush`], which the consumer calls
//! before it commits a run of records). The row's version is what tells a
//! redelivery it has nothing to do; a row ahead of an index that lost its
//! unflushed writes in a crash would leave the point missing for good.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use mnemo_bus::{EventHandler, HandlerError};
use mnemo_crypto::{CryptoError, SubjectCipher, TokenPurpose};
use mnemo_domain::{Memory, MemoryId, MemoryState, RecordedEvent, TenantId};
use mnemo_embed::Embedder;
use mnemo_event_store::sealed::SealedLog;
use mnemo_read_model::MemoryReadModel;
use mnemo_vector_index::{Point, PointPayload, PointType, VectorIndex};

pub struct MemoryProjection {
    log: SealedLog,
    read_model: Arc<dyn MemoryReadModel>,
    embedder: Arc<dyn Embedder>,
    index: Arc<dyn VectorIndex>,
    /// Rows projected since the last flush, newest state per memory; they
    /// also answer "what was projected before" for the next event of the
    /// same memory in the run.
    pending: Mutex<HashMap<(TenantId, MemoryId), Pending>>,
}

/// A row waiting for its point to be durable.
#[derive(Clone)]
struct Pending {
    memory: Memory,
    /// The generation of the subject's key the memory was read under: if
    /// an erasure destroyed it since, the row must not be written (sealing
    /// would create a new key and revive the memory) and the point goes.
    generation: u32,
}

impl MemoryProjection {
    pub fn new(
        log: SealedLog,
        read_model: Arc<dyn MemoryReadModel>,
        embedder: Arc<dyn Embedder>,
        index: Arc<dyn VectorIndex>,
    ) -> Self {
        MemoryProjection {
            log,
            read_model,
            embedder,
            index,
            pending: Mutex::default(),
        }
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<(TenantId, MemoryId), Pending>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn retryable(error: impl std::fmt::Display) -> HandlerError {
    HandlerError::Retryable(error.to_string())
}

/// The keyed tokens a memory's point carries instead of its tags and
/// session: a vector index keeps the bytes of what it was given in its
/// write-ahead log and segments, so it is given nothing it could leak.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PointTokens {
    pub tags: Vec<String>,
    pub session: Option<String>,
}

impl PointTokens {
    /// The tokens of `memory`'s tags and session under its subject's key
    /// (which exists: the memory's content was readable).
    pub async fn of(
        cipher: &SubjectCipher,
        tenant: &TenantId,
        memory: &Memory,
    ) -> Result<Self, CryptoError> {
        let subject = &memory.subject;
        let tags = cipher
            .tokens(tenant, subject, TokenPurpose::Tag, &memory.tags)
            .await?;
        let session = match &memory.session {
            Some(s) => Some(
                cipher
                    .token(tenant, subject, TokenPurpose::Session, s.as_str())
                    .await?,
            ),
            None => None,
        };
        Ok(PointTokens { tags, session })
    }
}

/// The point payload of a memory: what search filters on, with its tags
/// and session as `tokens`.
pub fn payload_of(tenant: &TenantId, memory: &Memory, tokens: PointTokens) -> PointPayload {
    PointPayload {
        tenant: tenant.clone(),
        subject: memory.subject.clone(),
        point_type: PointType::Memory,
        kind: memory.kind,
        tags: tokens.tags,
        state: memory.state,
        session: tokens.session,
        agent: memory.agent.as_ref().map(ToString::to_string),
        created_at: memory.created_at.timestamp(),
        updated_at: memory.updated_at.timestamp(),
        importance: memory.importance,
    }
}

/// Writes one memory's point (or deletes it); the caller writes its
/// read-model row once the point is durable.
pub async fn project_point(
    tenant: &TenantId,
    memory: &Memory,
    previous_content: Option<&str>,
    cipher: &SubjectCipher,
    embedder: &dyn Embedder,
    index: &dyn VectorIndex,
) -> Result<(), HandlerError> {
    let Some(content) = memory.content.as_text() else {
        // The subject was erased: never bring its point back.
        index
            .delete(tenant, &[memory.id])
            .await
            .map_err(retryable)?;
        return Ok(());
    };
    if memory.state == MemoryState::Deleted {
        index
            .delete(tenant, &[memory.id])
            .await
            .map_err(retryable)?;
    } else if previous_content == Some(content) {
        let tokens = PointTokens::of(cipher, tenant, memory)
            .await
            .map_err(retryable)?;
        index
            .update_payload(tenant, &memory.id, payload_of(tenant, memory, tokens))
            .await
            .map_err(retryable)?;
    } else {
        let vector = embedder
            .embed(&[content.to_owned()])
            .await
            .map_err(retryable)?
            .pop()
            .ok_or_else(|| retryable("the embedder returned no vector"))?;
        let tokens = PointTokens::of(cipher, tenant, memory)
            .await
            .map_err(retryable)?;
        index
            .upsert(
                tenant,
                vec![Point {
                    id: memory.id,
                    dense: vector,
                    text: content.to_owned(),
                    payload: payload_of(tenant, memory, tokens),
                }],
            )
            .await
            .map_err(retryable)?;
    }
    Ok(())
}

#[async_trait]
impl EventHandler for MemoryProjection {
    async fn handle(&self, event: &RecordedEvent) -> Result<(), HandlerError> {
        if !event.stream_id.starts_with("memory-") {
            return Ok(());
        }
        let Some(subject) = &event.subject else {
            return Err(HandlerError::Permanent(
                "memory event without subject".into(),
            ));
        };
        let stream = self
            .log
            .read_stream(&event.tenant, &event.stream_id)
            .await
            .map_err(retryable)?;
        let Some(memory) = Memory::fold(
            subject,
            stream
                .iter()
                .map(|d| (&d.event, d.recorded.stream_version, d.recorded.recorded_at)),
        ) else {
            return Ok(());
        };
        let key = (event.tenant.clone(), memory.id);
        let pending = self.pending().get(&key).cloned();
        let previous = match pending {
            Some(projected) => Some(projected.memory),
            None => self
                .read_model
                .get(&event.tenant, &memory.id)
                .await
                .map_err(retryable)?,
        };
        // Already projected at this version or later: a redelivery.
        if previous
            .as_ref()
            .is_some_and(|p| p.version >= memory.version)
            && !memory.content.is_erased()
        {
            return Ok(());
        }
        let previous_content = previous.as_ref().and_then(|p| p.content.as_text());
        if memory.content.is_erased() {
            // The subject was erased: never bring its row back.
            self.pending().remove(&key);
            self.read_model
                .remove(&event.tenant, &memory.id)
                .await
                .map_err(retryable)?;
        }
        project_point(
            &event.tenant,
            &memory,
            previous_content,
            self.log.cipher(),
            self.embedder.as_ref(),
            self.index.as_ref(),
        )
        .await?;
        if memory.content.is_erased() {
            return Ok(());
        }
        let generation = self
            .log
            .cipher()
            .live_generation(&event.tenant, subject)
            .await
            .map_err(retryable)?;
        match generation {
            Some(generation) => {
                self.pending().insert(key, Pending { memory, generation });
            }
            // Erased since the stream was read: take the point back.
            None => self
                .index
                .delete(&event.tenant, &[memory.id])
                .await
                .map_err(retryable)?,
        }
        Ok(())
    }

    async fn flush(&self) -> Result<(), HandlerError> {
        let rows: Vec<_> = self.pending().drain().collect();
        let mut live = Vec::with_capacity(rows.len());
        let mut outcome = Ok(());
        for (key, row) in rows {
            if outcome.is_err() {
                live.push((key, row));
                continue;
            }
            let (tenant, id) = &key;
            match self
                .log
                .cipher()
                .live_generation(tenant, &row.memory.subject)
                .await
            {
                Ok(Some(generation)) if generation == row.generation => live.push((key, row)),
                Ok(_) => {
                    // Erased meanwhile: the erasure removed the row; the
                    // point written before it must not outlive it.
                    if let Err(error) = self.index.delete(tenant, &[*id]).await {
                        outcome = Err(retryable(error));
                        live.push((key, row));
                    }
                }
                Err(error) => {
                    outcome = Err(retryable(error));
                    live.push((key, row));
                }
            }
        }
        if outcome.is_ok() {
            outcome = self.index.flush().await.map_err(retryable);
        }
        let mut rows = live.into_iter();
        if outcome.is_ok() {
            for (key, row) in rows.by_ref() {
                if let Err(error) = self.read_model.upsert(&key.0, &row.memory).await {
                    outcome = Err(retryable(error));
                    self.keep(key, row);
                    break;
                }
            }
        }
        for (key, row) in rows {
            self.keep(key, row);
        }
        outcome
    }
}

impl MemoryProjection {
    /// Puts a row back for the next flush; a newer state projected
    /// meanwhile wins.
    fn keep(&self, key: (TenantId, MemoryId), row: Pending) {
        self.pending().entry(key).or_insert(row);
    }
}
