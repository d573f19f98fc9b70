//! The memory projection: memory events in, read-model rows and vector
//! points out. For each event it re-reads and folds the memory's whole
//! stream, which makes the handler idempotent and indifferent to redelivery
//! or reordering: the row and the point always become the stream's latest
//! state. Content is embedded only when it changed; a state change (archive,
//! restore) only rewrites the point's payload.

use std::sync::Arc;

use async_trait::async_trait;
use mnemo_bus::{EventHandler, HandlerError};
use mnemo_crypto::{CryptoError, SubjectCipher, TokenPurpose};
use mnemo_domain::{Memory, MemoryState, RecordedEvent, TenantId};
use mnemo_embed::Embedder;
use mnemo_event_store::sealed::SealedLog;
use mnemo_read_model::MemoryReadModel;
use mnemo_vector_index::{Point, PointPayload, PointType, VectorIndex};

pub struct MemoryProjection {
    log: SealedLog,
    read_model: Arc<dyn MemoryReadModel>,
    embedder: Arc<dyn Embedder>,
    index: Arc<dyn VectorIndex>,
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
        }
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

/// Writes one memory's projections (used by the consumer and by reindex).
pub async fn project(
    tenant: &TenantId,
    memory: &Memory,
    previous_content: Option<&str>,
    cipher: &SubjectCipher,
    read_model: &dyn MemoryReadModel,
    embedder: &dyn Embedder,
    index: &dyn VectorIndex,
) -> Result<(), HandlerError> {
    let Some(content) = memory.content.as_text() else {
        // The subject was erased: never bring its row or point back.
        read_model
            .remove(tenant, &memory.id)
            .await
            .map_err(retryable)?;
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
    read_model.upsert(tenant, memory).await.map_err(retryable)
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
        let previous = self
            .read_model
            .get(&event.tenant, &memory.id)
            .await
            .map_err(retryable)?;
        // Already projected at this version or later: a redelivery.
        if previous
            .as_ref()
            .is_some_and(|p| p.version >= memory.version)
            && !memory.content.is_erased()
        {
            return Ok(());
        }
        let previous_content = previous.as_ref().and_then(|p| p.content.as_text());
        project(
            &event.tenant,
            &memory,
            previous_content,
            self.log.cipher(),
            self.read_model.as_ref(),
            self.embedder.as_ref(),
            self.index.as_ref(),
        )
        .await
    }
}
