//! The consolidation pipeline (seed 000): messages → extract → threshold →
//! dedupe against the subject's memories by vector → merge → memory events.
//!
//! Idempotent by construction: every candidate of a batch has an event id
//! derived from the batch's message ids and its index, whatever it becomes
//! (a new memory or a reinforcement), and a new memory's id is derived the
//! same way. A batch replayed after a crash finds its events already in the
//! log and skips them, so nothing is created twice; the buffer rows are
//! removed only after every event is appended, so nothing is lost.

use std::collections::BTreeSet;
use std::sync::Arc;

use mnemo_config::Policies;
use mnemo_domain::consolidation::ConsolidationPolicy;
use mnemo_domain::events::{streams, MemoryCreated, MemoryReinforced, MemorySuperseded};
use mnemo_domain::{
    importance_for, DomainEvent, EventId, EventMetadata, MemoryId, MemoryState, Producer,
    Provenance, SessionId, SubjectText, TenantId,
};
use mnemo_embed::Embedder;
use mnemo_event_store::sealed::{Pending, SealedLog};
use mnemo_event_store::ExpectedVersion;
use mnemo_read_model::MemoryReadModel;
use mnemo_vector_index::{SearchFilter, SearchMode, SearchRequest, VectorIndex};
use uuid::Uuid;

use crate::buffer::{Conversation, MessageBuffer};
use crate::strategy::{
    Candidate, ConsolidationStrategy, ConversationMessage, ExistingMemory, MergeAction,
};

/// How many existing memories each candidate is compared with.
const NEIGHBOURS: usize = 5;

#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error("buffer: {0}")]
    Buffer(#[from] crate::buffer::BufferError),
    #[error("log: {0}")]
    Log(#[from] mnemo_event_store::sealed::LogError),
    #[error("strategy: {0}")]
    Strategy(#[from] crate::strategy::StrategyError),
    #[error("embedding: {0}")]
    Embed(String),
    #[error("vector index: {0}")]
    Index(String),
}

/// What one consolidation did, for logs, metrics and tests.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub messages: usize,
    pub candidates: usize,
    pub below_threshold: usize,
    pub created: usize,
    pub reinforced: usize,
    pub superseded: usize,
    pub already_done: usize,
}

pub struct Pipeline {
    pub log: SealedLog,
    pub buffer: Arc<dyn MessageBuffer>,
    pub strategy: Arc<dyn ConsolidationStrategy>,
    pub embedder: Arc<dyn Embedder>,
    pub index: Arc<dyn VectorIndex>,
    pub read_model: Arc<dyn MemoryReadModel>,
    pub policies: Arc<Policies<ConsolidationPolicy>>,
}

fn batch_key(event_ids: &[EventId]) -> String {
    let sorted: BTreeSet<String> = event_ids.iter().map(ToString::to_string).collect();
    sorted.into_iter().collect::<Vec<_>>().join(",")
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Dice overlap of the two texts' character bigrams (lowercased, letters and
/// digits only). A second opinion on "the same memory": a small English
/// model puts most Chinese sentences close together, so vector similarity
/// alone would merge unrelated ones.
pub fn text_overlap(a: &str, b: &str) -> f32 {
    fn bigrams(text: &str) -> std::collections::HashSet<(char, char)> {
        let chars: Vec<char> = text
            .chars()
            .filter(|c| c.is_alphanumeric())
            .flat_map(char::to_lowercase)
            .collect();
        chars.windows(2).map(|w| (w[0], w[1])).collect()
    }
    let (a, b) = (bigrams(a), bigrams(b));
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    2.0 * a.intersection(&b).count() as f32 / (a.len() + b.len()) as f32
}

/// Below this bigram overlap two texts are never the same memory.
const MIN_TEXT_OVERLAP: f32 = 0.3;

impl Pipeline {
    pub fn policy(&self, tenant: &TenantId) -> &ConsolidationPolicy {
        self.policies.for_tenant(tenant.as_str())
    }

    /// Consolidates every waiting message of a conversation, a batch at a time.
    pub async fn drain(&self, conversation: &Conversation) -> Result<Outcome, PipelineError> {
        let mut total = Outcome::default();
        let batch_size = self.policy(&conversation.tenant).batch_size;
        loop {
            let ids = self.buffer.batch(conversation, batch_size).await?;
            if ids.is_empty() {
                return Ok(total);
            }
            let outcome = self.consolidate(conversation, &ids).await?;
            self.buffer.remove(&conversation.tenant, &ids).await?;
            total.messages += outcome.messages;
            total.candidates += outcome.candidates;
            total.below_threshold += outcome.below_threshold;
            total.created += outcome.created;
            total.reinforced += outcome.reinforced;
            total.superseded += outcome.superseded;
            total.already_done += outcome.already_done;
        }
    }

    async fn messages(
        &self,
        tenant: &TenantId,
        ids: &[EventId],
    ) -> Result<Vec<ConversationMessage>, PipelineError> {
        let mut messages = Vec::with_capacity(ids.len());
        for id in ids {
            let Some(recorded) = self
                .log
                .store()
                .get_event(tenant, id)
                .await
                .map_err(mnemo_event_store::sealed::LogError::from)?
            else {
                continue;
            };
            let decoded = self.log.decode(recorded).await?;
            if let DomainEvent::MessageReceived(message) = decoded.event {
                // An erased subject's messages have nothing left to learn from.
                if let Some(content) = message.content.as_text() {
                    messages.push(ConversationMessage {
                        event_id: *id,
                        role: message.role,
                        content: content.to_owned(),
                        timestamp: message.timestamp,
                        session: message.session.map(|s| s.to_string()),
                    });
                }
            }
        }
        Ok(messages)
    }

    /// One batch: the buffer rows are the caller's to remove afterwards.
    pub async fn consolidate(
        &self,
        conversation: &Conversation,
        ids: &[EventId],
    ) -> Result<Outcome, PipelineError> {
        let tenant = &conversation.tenant;
        let subject = &conversation.subject;
        let policy = self.policy(tenant).clone();
        let messages = self.messages(tenant, ids).await?;
        let mut outcome = Outcome {
            messages: messages.len(),
            ..Default::default()
        };
        if messages.is_empty() {
            return Ok(outcome);
        }
        let extracted = self.strategy.extract(&messages).await?;
        outcome.candidates = extracted.len();
        let candidates: Vec<Candidate> = extracted
            .into_iter()
            .filter(|c| c.confidence >= policy.min_confidence)
            .collect();
        outcome.below_threshold = outcome.candidates - candidates.len();
        if candidates.is_empty() {
            return Ok(outcome);
        }

        let key = batch_key(ids);
        let event_ids: Vec<EventId> = (0..candidates.len())
            .map(|i| {
                EventId::derived(&[
                    "consolidation",
                    tenant.as_str(),
                    subject.as_str(),
                    &key,
                    &i.to_string(),
                ])
            })
            .collect();
        let texts: Vec<String> = candidates.iter().map(|c| c.content.clone()).collect();
        let vectors = self
            .embedder
            .embed(&texts)
            .await
            .map_err(|e| PipelineError::Embed(e.to_string()))?;

        // Each candidate's nearest existing memories of the subject.
        let mut neighbours: Vec<Vec<ExistingMemory>> = Vec::with_capacity(candidates.len());
        for vector in &vectors {
            let hits = self
                .index
                .search(
                    tenant,
                    &SearchRequest {
                        filter: SearchFilter {
                            subject: Some(subject.clone()),
                            ..Default::default()
                        },
                        dense: Some(vector.clone()),
                        text: None,
                        mode: SearchMode::Semantic,
                        limit: NEIGHBOURS,
                        prefetch: NEIGHBOURS,
                        // Semantic mode fuses nothing: the constant is unused.
                        rrf_k: mnemo_vector_index::DEFAULT_RRF_K,
                        with_vectors: false,
                    },
                )
                .await
                .map_err(|e| PipelineError::Index(e.to_string()))?;
            let mut existing = Vec::with_capacity(hits.len());
            for hit in hits {
                let Some(memory) = self
                    .read_model
                    .get(tenant, &hit.id)
                    .await
                    .map_err(|e| PipelineError::Index(e.to_string()))?
                else {
                    continue;
                };
                let Some(content) = memory.content.as_text() else {
                    continue;
                };
                existing.push(ExistingMemory {
                    id: memory.id,
                    content: content.to_owned(),
                    kind: memory.kind,
                    similarity: hit.dense_score.unwrap_or(hit.score),
                });
            }
            neighbours.push(existing);
        }
        let decisions = self.strategy.merge(&candidates, &neighbours).await?;

        let producer = Producer {
            strategy: self.strategy.name().to_owned(),
            version: self.strategy.version().to_owned(),
            model: None,
            prompt_version: None,
        };
        let metadata = EventMetadata {
            actor: format!("mnemo-consolidator/{}", self.strategy.name()),
            correlation_id: Some(format!("consolidation:{}", event_ids[0])),
            causation_id: ids.last().copied(),
            // Inside a consumed record's span this is the trace the message
            // was posted in, so one trace runs ingest → consolidator →
            // retriever (the idle sweeper starts a trace of its own).
            traceparent: mnemo_telemetry::current_traceparent(),
        };
        // Memories created earlier in this same batch: a later candidate
        // that repeats one reinforces it (the index has not seen it yet).
        let mut created_here: Vec<(MemoryId, mnemo_domain::MemoryKind, String, Vec<f32>)> =
            Vec::new();
        for (index, candidate) in candidates.iter().enumerate() {
            let event_id = event_ids[index];
            let vector = &vectors[index];
            let memory_id = MemoryId::from_uuid(Uuid::new_v5(
                &Uuid::NAMESPACE_OID,
                event_id.to_string().as_bytes(),
            ));
            let done = self
                .log
                .store()
                .get_event(tenant, &event_id)
                .await
                .map_err(mnemo_event_store::sealed::LogError::from)?;
            if let Some(done) = done {
                // A replay after a crash: this candidate's event is in the
                // log already. Remember a memory it created, so a later
                // candidate repeating it still reinforces instead of duplicating.
                if done.event_type == "MemoryCreated" {
                    created_here.push((
                        memory_id,
                        candidate.kind,
                        candidate.content.clone(),
                        vector.clone(),
                    ));
                }
                outcome.already_done += 1;
                continue;
            }
            // The same memory seen again: same kind, close in meaning, and
            // sharing enough of its wording.
            let nearest_existing = neighbours[index]
                .iter()
                .filter(|m| {
                    m.kind == candidate.kind
                        && m.similarity >= policy.similarity_threshold
                        && text_overlap(&m.content, &candidate.content) >= MIN_TEXT_OVERLAP
                })
                .max_by(|a, b| a.similarity.total_cmp(&b.similarity))
                .map(|m| m.id);
            let nearest_here = created_here
                .iter()
                .filter(|(_, kind, content, _)| {
                    *kind == candidate.kind
                        && text_overlap(content, &candidate.content) >= MIN_TEXT_OVERLAP
                })
                .map(|(id, _, _, v)| (*id, cosine(v, vector)))
                .filter(|(_, s)| *s >= policy.similarity_threshold)
                .max_by(|a, b| a.1.total_cmp(&b.1))
                .map(|(id, _)| id);
            let decision = decisions
                .iter()
                .find(|d| d.candidate == index)
                .map(|d| d.action.clone())
                .unwrap_or(MergeAction::Keep);
            let reinforce = nearest_existing.or(nearest_here).or(match &decision {
                MergeAction::Skip => neighbours[index].first().map(|m| m.id),
                _ => None,
            });
            if let Some(target) = reinforce {
                let similarity = neighbours[index]
                    .iter()
                    .find(|m| m.id == target)
                    .map_or(1.0, |m| m.similarity);
                self.log
                    .append(
                        tenant,
                        &streams::memory(&target),
                        ExpectedVersion::Any,
                        vec![Pending {
                            event_id,
                            subject: Some(subject.clone()),
                            event: DomainEvent::MemoryReinforced(MemoryReinforced {
                                source_event_ids: candidate.source_event_ids.clone(),
                                similarity,
                            }),
                            metadata: metadata.clone(),
                        }],
                    )
                    .await?;
                outcome.reinforced += 1;
                continue;
            }

            let session = if conversation.session.is_empty() {
                None
            } else {
                SessionId::parse(conversation.session.clone()).ok()
            };
            self.log
                .append(
                    tenant,
                    &streams::memory(&memory_id),
                    ExpectedVersion::Any,
                    vec![Pending {
                        event_id,
                        subject: Some(subject.clone()),
                        event: DomainEvent::MemoryCreated(MemoryCreated {
                            memory_id,
                            kind: candidate.kind,
                            content: SubjectText::new(candidate.content.clone()),
                            tags: candidate.tags.clone(),
                            confidence: candidate.confidence,
                            importance: importance_for(candidate.confidence, candidate.kind),
                            state: MemoryState::Active,
                            provenance: Provenance {
                                source_event_ids: candidate.source_event_ids.clone(),
                                producer: producer.clone(),
                            },
                            session,
                            agent: None,
                            pii: Default::default(),
                        }),
                        metadata: metadata.clone(),
                    }],
                )
                .await?;
            outcome.created += 1;
            created_here.push((
                memory_id,
                candidate.kind,
                candidate.content.clone(),
                vector.clone(),
            ));
            if let MergeAction::Supersede { target } = decision {
                let supersede_id = EventId::derived(&["supersede", &event_id.to_string()]);
                self.log
                    .append(
                        tenant,
                        &streams::memory(&target),
                        ExpectedVersion::Any,
                        vec![Pending {
                            event_id: supersede_id,
                            subject: Some(subject.clone()),
                            event: DomainEvent::MemorySuperseded(MemorySuperseded {
                                by: memory_id,
                                reason: Some(SubjectText::new("a newer statement contradicts it")),
                            }),
                            metadata: metadata.clone(),
                        }],
                    )
                    .await?;
                outcome.superseded += 1;
            }
        }
        Ok(outcome)
    }
}

#[cfg(test)]
mod tests {
    use super::text_overlap;

    #[test]
    fn overlap_tells_a_repeat_from_a_different_sentence() {
        assert!(text_overlap("I live in Lyon.", "i live in lyon") > 0.9);
        assert!(text_overlap("我喜欢喝绿茶", "我很喜欢喝绿茶") > 0.6);
        assert!(text_overlap("以后别给我推荐咖啡", "我喜欢喝绿茶") < 0.3);
        assert_eq!(text_overlap("", "x"), 0.0);
    }
}
