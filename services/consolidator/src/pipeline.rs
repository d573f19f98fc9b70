//! The consolidation pipeline (seeds 000, 002, 004): messages → extract →
//! screen for injections → route by confidence (memory / review /
//! discarded) → compare with the
//! subject's 20 nearest memories → merge decisions → memory and review
//! events → relations and the profile (LLM only) → the batch's record.
//!
//! Idempotent by construction: every candidate of a batch has an event id
//! derived from the batch's message ids and its index, whatever it becomes
//! (a new memory, a reinforcement, a review), and a new memory's id is
//! derived the same way. A batch replayed after a crash finds its events
//! already in the log and skips them, so nothing is created twice; the
//! buffer rows are removed only after every event is appended, so nothing
//! is lost. A batch's events and its `BatchConsolidated` record commit in
//! one transaction (one write per batch, not per event; with an LLM that
//! rewrites the profile, two: the memories, then the profile and the
//! record, since the profile reads the memories from the log). Once the
//! record is in the log, a redelivered batch returns at once without
//! asking the LLM again. (A crash between the two commits does ask again;
//! the model's second answer is deduplicated against the first by vector
//! like any repeat.)
//!
//! An LLM that fails, answers garbage, or whose tenant spent its daily
//! budget never loses a batch: the rules consolidate it instead, and the
//! memories' provenance names the fallback and its reason.
//!
//! Screening comes before confidence routing because a confidence says how
//! clearly the messages state something, not whether it is safe to obey
//! later: a candidate [`crate::injection::screen`] flags — text that
//! instructs the assistant around its rules, or a standing instruction the
//! user did not give — goes to review as `suspected_injection` whatever its
//! confidence, from either strategy.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use chrono::Utc;
use mnemo_config::Policies;
use mnemo_domain::consolidation::ConsolidationPolicy;
use mnemo_domain::events::{
    streams, BatchConsolidated, EventType, MemoryCreated, MemoryMerged, MemoryReinforced,
    MemorySuperseded, ProfileUpdated, ProposedAction, RelationAdded, ReviewReason, ReviewRequested,
    Route, RoutedCandidate,
};
use mnemo_domain::{
    importance_for, DomainEvent, EventId, EventMetadata, MemoryId, MemoryKind, MemoryState,
    Producer, Provenance, RecordedEvent, SessionId, SubjectId, SubjectText, TenantId,
};
use mnemo_embed::Embedder;
use mnemo_event_store::sealed::{Pending, SealedLog};
use mnemo_event_store::{EventQuery, ExpectedVersion};
use mnemo_read_model::MemoryReadModel;
use mnemo_telemetry::Metrics;
use mnemo_vector_index::{SearchFilter, VectorIndex};
use uuid::Uuid;

use crate::budget::LlmBudget;
use crate::buffer::{Conversation, MessageBuffer};
use crate::injection::{self, Signal, Suspicion};
use crate::strategy::{
    Candidate, CandidateRelation, ConsolidationStrategy, ConversationMessage, ExistingMemory,
    FoundRelation, MergeAction, MergeDecision, Spend,
};

/// How many existing memories each candidate is compared with (the issue's
/// "top 20", better than seed 000's most-recent sample).
const NEIGHBOURS: usize = 20;
/// At most this many new memories are folded into one profile update.
const MAX_PROFILE_MEMORIES: u32 = 200;
/// At most this many messages' batches commit together
/// ([`Pipeline::drain_subject`]).
const GROUP_MESSAGES: usize = 200;
/// The longest source excerpt a review shows.
const EXCERPT_CHARS: usize = 400;

/// The source messages of a candidate, shortened, for a reviewer.
fn excerpt(messages: &[ConversationMessage], sources: &[EventId]) -> String {
    let text = messages
        .iter()
        .filter(|m| sources.contains(&m.event_id))
        .map(|m| m.content.as_str())
        .collect::<Vec<_>>()
        .join(" / ");
    if text.chars().count() <= EXCERPT_CHARS {
        return text;
    }
    let mut short: String = text.chars().take(EXCERPT_CHARS - 1).collect();
    short.push('…');
    short
}

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
    pub merged: usize,
    /// Candidates held for a person (the review band, a protected
    /// contradiction, or a suspected injection).
    pub reviews: usize,
    /// Candidates the injection screening sent to review, whatever their
    /// confidence (counted in `reviews` too, unless the merge step skipped them).
    pub suspected_injections: usize,
    /// Candidates the merge step found already known, with nothing to reinforce.
    pub skipped: usize,
    pub relations: usize,
    pub profile_updated: bool,
    pub already_done: usize,
    /// Why the rules answered instead of the LLM, when they did.
    pub fallback: Option<String>,
    pub llm_calls: u32,
    pub llm_tokens: u64,
}

impl Outcome {
    fn add(&mut self, other: Outcome) {
        self.messages += other.messages;
        self.candidates += other.candidates;
        self.below_threshold += other.below_threshold;
        self.created += other.created;
        self.reinforced += other.reinforced;
        self.superseded += other.superseded;
        self.merged += other.merged;
        self.reviews += other.reviews;
        self.suspected_injections += other.suspected_injections;
        self.skipped += other.skipped;
        self.relations += other.relations;
        self.profile_updated |= other.profile_updated;
        self.already_done += other.already_done;
        self.fallback = other.fallback.or(self.fallback.take());
        self.llm_calls += other.llm_calls;
        self.llm_tokens += other.llm_tokens;
    }
}

/// Which of a conversation's waiting batches a drain consolidates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Batches {
    /// Only whole batches (the batch size was reached).
    Whole,
    /// Everything waiting (idle timeout, a request, a tool).
    All,
}

/// The messages the consolidator's consumer was delivered, as the log
/// holds them (sealed under the subject's key), until a drain takes them:
/// a batch reads from the log only the messages not here.
///
/// Key decision: the consumer has each message in hand when it buffers
/// it, and the drain that follows seconds later read it back, a read and a
/// parse of every message (a quarter of the consolidator's own time in
/// `mnemo bench parts`). What is kept is the sealed event, never its
/// opened text: a drain opens it as it opens the log's copy, so a subject
/// erased in between reads as erased here too. Only an optimisation: a
/// message not here (another process delivered it, a restart, a memory
/// dropped whole at [`Delivered::KEPT`]) is read from the log.
#[derive(Default)]
pub struct Delivered {
    events: std::sync::Mutex<std::collections::HashMap<EventId, RecordedEvent>>,
}

impl Delivered {
    /// Messages kept at most. Past it the memory is dropped whole rather
    /// than one by one, as the episode projection's is: a message whose
    /// drain never comes (its subject erased meanwhile, a redelivery of a
    /// message consolidated before) cannot pile up, and under a backlog
    /// larger than this the drains read the log as before.
    pub const KEPT: usize = 8_192;

    /// Keeps a delivered message for the drain of its batch.
    pub fn keep(&self, event: RecordedEvent) {
        let mut events = self.events();
        if events.len() >= Self::KEPT {
            events.clear();
        }
        events.insert(event.event_id, event);
    }

    /// Takes the messages kept of these, the tenant's only.
    fn take(
        &self,
        tenant: &TenantId,
        ids: &[EventId],
    ) -> std::collections::HashMap<EventId, RecordedEvent> {
        let mut events = self.events();
        ids.iter()
            .filter_map(|id| {
                // An id names one event, of one tenant; another tenant's
                // is left where it is.
                if events.get(id)?.tenant != *tenant {
                    return None;
                }
                events.remove(id).map(|event| (*id, event))
            })
            .collect()
    }

    /// How many messages are kept.
    pub fn len(&self) -> usize {
        self.events().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn events(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::HashMap<EventId, RecordedEvent>> {
        self.events.lock().unwrap_or_else(|p| p.into_inner())
    }
}

pub struct Pipeline {
    pub log: SealedLog,
    pub buffer: Arc<dyn MessageBuffer>,
    pub strategy: Arc<dyn ConsolidationStrategy>,
    /// The rules, when `strategy` calls an LLM: they consolidate a batch the
    /// LLM cannot (failed answers, budget spent). `None` when `strategy` is
    /// the rules already.
    pub fallback: Option<Arc<dyn ConsolidationStrategy>>,
    pub budget: Arc<LlmBudget>,
    pub embedder: Arc<dyn Embedder>,
    pub index: Arc<dyn VectorIndex>,
    pub read_model: Arc<dyn MemoryReadModel>,
    pub policies: Arc<Policies<ConsolidationPolicy>>,
    pub metrics: Option<Metrics>,
    /// What the consumer delivered, for the drains (see [`Delivered`]).
    pub delivered: Delivered,
}

fn batch_key(event_ids: &[EventId]) -> String {
    let sorted: BTreeSet<String> = event_ids.iter().map(ToString::to_string).collect();
    sorted.into_iter().collect::<Vec<_>>().join(",")
}

/// The id of a batch's `BatchConsolidated` record, derived from the
/// batch's key: the same batch always has the same record.
fn record_id(conversation: &Conversation, key: &str) -> EventId {
    EventId::derived(&[
        "batch",
        conversation.tenant.as_str(),
        conversation.subject.as_str(),
        key,
    ])
}

/// The event id of a batch's kept candidate `index`, whatever it becomes:
/// a replay of the batch derives the same one.
fn candidate_id(conversation: &Conversation, key: &str, index: usize) -> EventId {
    EventId::derived(&[
        "consolidation",
        conversation.tenant.as_str(),
        conversation.subject.as_str(),
        key,
        &index.to_string(),
    ])
}

/// What [`Pipeline::committed`] found of a group's batches in the log.
struct Committed {
    /// The type of each event asked for that is in the log.
    found: std::collections::HashMap<EventId, EventType>,
    /// How many candidates of each batch were asked for: a batch with
    /// more asks for its own.
    candidates: usize,
}

/// Candidates of a batch [`Pipeline::committed`] asks for at most.
const MAX_CANDIDATES_ASKED: usize = 64;

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
        self.drain_batches(conversation, Batches::All).await
    }

    /// Consolidates the conversation's waiting messages batch by batch:
    /// all of them, or only while a whole batch waits (what reaching the
    /// batch size asks for: the rest waits for more, the idle timeout or a
    /// request, so a batch boundary does not depend on when a worker got
    /// to it).
    pub async fn drain_batches(
        &self,
        conversation: &Conversation,
        which: Batches,
    ) -> Result<Outcome, PipelineError> {
        self.drain_subject(&[(conversation.clone(), which)]).await
    }

    /// Consolidates waiting batches of one subject's conversations (`which`
    /// of each) and commits them together: up to [`GROUP_MESSAGES`]
    /// messages' batches are consolidated in turn, their events appended
    /// in one transaction and their buffer rows removed in one write, then
    /// the next group. Under load the write lock, not the work, is what a
    /// drain waits for (a commit per batch measured 8 ms of a batch's 15),
    /// so a group costs two writes where its batches cost two each.
    ///
    /// A group is still a sequence of batches: each has its own derived
    /// event ids and record, and a later batch sees the memories an
    /// earlier one created (not yet in the index, they are compared like
    /// those of its own batch), so the result is that of committing batch
    /// by batch. A group that fails appends nothing and keeps its messages
    /// buffered; the record of every batch commits with its events, so a
    /// replay skips exactly the batches that were committed.
    pub async fn drain_subject(
        &self,
        conversations: &[(Conversation, Batches)],
    ) -> Result<Outcome, PipelineError> {
        let mut total = Outcome::default();
        let Some((first, _)) = conversations.first() else {
            return Ok(total);
        };
        debug_assert!(
            conversations
                .iter()
                .all(|(c, _)| c.tenant == first.tenant && c.subject == first.subject),
            "a group holds one subject's conversations: they share its memories"
        );
        let mut waiting: Vec<&(Conversation, Batches)> = conversations.iter().collect();
        while !waiting.is_empty() {
            let mut group = Group::default();
            let mut more = Vec::new();
            for entry in waiting {
                let (conversation, which) = entry;
                let batch_size = self.policy(&conversation.tenant).batch_size.max(1);
                let room = GROUP_MESSAGES.saturating_sub(group.ids.len());
                // Whole batches only: a group never splits a batch.
                let limit = (room / batch_size).max(1) * batch_size;
                if !group.ids.is_empty() && room < batch_size {
                    more.push(entry);
                    continue;
                }
                let ids = self.buffer.batch(conversation, limit).await?;
                let batches: Vec<&[EventId]> = ids
                    .chunks(batch_size)
                    .take_while(|batch| *which == Batches::All || batch.len() == batch_size)
                    .collect();
                let committed = self.committed(conversation, &batches, batch_size).await?;
                for batch in batches {
                    let outcome = self
                        .consolidate_into(conversation, batch, &mut group, Some(&committed))
                        .await?;
                    group.ids.extend_from_slice(batch);
                    total.add(outcome);
                }
                if ids.len() == limit {
                    // More may wait behind what this group took.
                    more.push(entry);
                }
            }
            if group.ids.is_empty() {
                break;
            }
            self.commit_group(&first.tenant, &mut group).await?;
            self.buffer.remove(&first.tenant, &group.ids).await?;
            waiting = more;
        }
        Ok(total)
    }

    /// What of `batches` (of one conversation) is in the log already, read
    /// in one query: each batch's record (a batch whose record is there was
    /// committed: a redelivery, a replay) and the events of its first
    /// candidates (those of a batch committed in part: see
    /// [`Pipeline::already_appended`]). Asked batch by batch, these were
    /// two queries a batch, nearly always for nothing.
    async fn committed(
        &self,
        conversation: &Conversation,
        batches: &[&[EventId]],
        batch_size: usize,
    ) -> Result<Committed, PipelineError> {
        let candidates = (2 * batch_size).min(MAX_CANDIDATES_ASKED);
        let mut ids = Vec::with_capacity(batches.len() * (candidates + 1));
        for batch in batches {
            let key = batch_key(batch);
            ids.push(record_id(conversation, &key));
            ids.extend((0..candidates).map(|index| candidate_id(conversation, &key, index)));
        }
        Ok(Committed {
            found: self.in_log(&conversation.tenant, &ids).await?,
            candidates,
        })
    }

    /// The event with this id, when it is in the log (what makes replays idempotent).
    async fn recorded(
        &self,
        tenant: &TenantId,
        id: &EventId,
    ) -> Result<Option<mnemo_domain::RecordedEvent>, PipelineError> {
        Ok(self
            .log
            .store()
            .get_event(tenant, id)
            .await
            .map_err(mnemo_event_store::sealed::LogError::from)?)
    }

    async fn messages(
        &self,
        tenant: &TenantId,
        ids: &[EventId],
    ) -> Result<Vec<ConversationMessage>, PipelineError> {
        // What the consumer was delivered, then one read of the log for
        // the rest; in the buffer's order either way.
        let mut delivered = self.delivered.take(tenant, ids);
        let missing: Vec<EventId> = ids
            .iter()
            .filter(|id| !delivered.contains_key(id))
            .copied()
            .collect();
        let mut read: std::collections::HashMap<EventId, _> = if missing.is_empty() {
            Default::default()
        } else {
            self.log
                .get_events(tenant, &missing)
                .await?
                .into_iter()
                .map(|decoded| (decoded.recorded.event_id, decoded))
                .collect()
        };
        let mut messages = Vec::with_capacity(ids.len());
        for id in ids {
            let decoded = match delivered.remove(id) {
                Some(event) => self.log.decode(event).await?,
                None => match read.remove(id) {
                    Some(decoded) => decoded,
                    None => continue,
                },
            };
            let id = decoded.recorded.event_id;
            if let DomainEvent::MessageReceived(message) = decoded.event {
                // An erased subject's messages have nothing left to learn from.
                if let Some(content) = message.content.as_text() {
                    messages.push(ConversationMessage {
                        event_id: id,
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

    /// Whether the tenant spent its LLM day (and so the rules answer).
    async fn budget_exhausted(
        &self,
        tenant: &TenantId,
        policy: &ConsolidationPolicy,
    ) -> Result<bool, PipelineError> {
        let spent = self
            .budget
            .spent_today(self.log.store().as_ref(), tenant, Utc::now())
            .await
            .map_err(mnemo_event_store::sealed::LogError::from)?;
        Ok(spent.calls >= policy.daily_llm_calls || spent.tokens >= policy.daily_llm_tokens)
    }

    /// Extraction with the configured strategy, or the rules when it cannot
    /// answer; returns who answered and why the rules did.
    async fn extract(
        &self,
        tenant: &TenantId,
        policy: &ConsolidationPolicy,
        messages: &[ConversationMessage],
        spend: &Spend,
    ) -> Result<
        (
            Arc<dyn ConsolidationStrategy>,
            Vec<Candidate>,
            Option<String>,
        ),
        PipelineError,
    > {
        let Some(fallback) = &self.fallback else {
            let candidates = self.strategy.extract(messages, spend).await?;
            return Ok((self.strategy.clone(), candidates, None));
        };
        let reason = if self.budget_exhausted(tenant, policy).await? {
            "budget_exhausted".to_owned()
        } else {
            match self.strategy.extract(messages, spend).await {
                Ok(candidates) => return Ok((self.strategy.clone(), candidates, None)),
                Err(error) => {
                    tracing::warn!(tenant = %tenant, error = %error, "LLM extraction failed; the rules consolidate this batch");
                    format!("llm_failed: {error}")
                }
            }
        };
        let candidates = fallback.extract(messages, spend).await?;
        Ok((fallback.clone(), candidates, Some(reason)))
    }

    /// The subject's memories nearest to each vector (read-model rows): one
    /// index lookup of ids and similarities for all the vectors, and one
    /// read for all their rows.
    async fn neighbours(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
        vectors: &[Vec<f32>],
    ) -> Result<Vec<Vec<ExistingMemory>>, PipelineError> {
        // Ids and similarities only: the rows come from the read model.
        let filter = SearchFilter {
            subject: Some(subject.clone()),
            ..Default::default()
        };
        let all_hits = self
            .index
            .nearest(tenant, &filter, vectors, NEIGHBOURS)
            .await
            .map_err(|e| PipelineError::Index(e.to_string()))?;
        let mut ids: Vec<MemoryId> = all_hits.iter().flatten().map(|(id, _)| *id).collect();
        ids.sort_unstable();
        ids.dedup();
        if ids.is_empty() {
            return Ok(vectors.iter().map(|_| Vec::new()).collect());
        }
        // One read for every candidate's rows: a batch's candidates share
        // most of their neighbours.
        let rows: std::collections::HashMap<MemoryId, mnemo_domain::Memory> = self
            .read_model
            .get_many(tenant, &ids)
            .await
            .map_err(|e| PipelineError::Index(e.to_string()))?
            .into_iter()
            .map(|memory| (memory.id, memory))
            .collect();
        Ok(all_hits
            .into_iter()
            .map(|hits| {
                hits.into_iter()
                    .filter_map(|(id, similarity)| {
                        let memory = rows.get(&id)?;
                        let content = memory.content.as_text()?;
                        Some(ExistingMemory {
                            id: memory.id,
                            content: content.to_owned(),
                            kind: memory.kind,
                            importance: memory.importance,
                            similarity,
                        })
                    })
                    .collect()
            })
            .collect())
    }

    /// One batch: the buffer rows are the caller's to remove afterwards.
    ///
    /// The batch goes through its steps in order: route by confidence,
    /// compare with the subject's memories, the strategy's merge decisions,
    /// then each kept candidate settled (reviewed, reinforced as a near
    /// duplicate, or created; a later one sees what the earlier ones
    /// created), the LLM's extras, and the batch's record last, all
    /// committed together.
    pub async fn consolidate(
        &self,
        conversation: &Conversation,
        ids: &[EventId],
    ) -> Result<Outcome, PipelineError> {
        let mut group = Group::default();
        let outcome = self
            .consolidate_into(conversation, ids, &mut group, None)
            .await?;
        self.commit_group(&conversation.tenant, &mut group).await?;
        Ok(outcome)
    }

    /// One batch of a group: its events join the group's, to be committed
    /// with them ([`Pipeline::commit_group`]), and the memories it creates
    /// are the group's for the batches after it.
    ///
    /// `committed`: what of the group's batches is in the log already,
    /// when the caller read it ([`Pipeline::committed`]); else the batch
    /// looks for itself.
    async fn consolidate_into(
        &self,
        conversation: &Conversation,
        ids: &[EventId],
        group: &mut Group,
        committed: Option<&Committed>,
    ) -> Result<Outcome, PipelineError> {
        let tenant = &conversation.tenant;
        let policy = self.policy(tenant).clone();
        let key = batch_key(ids);
        // The batch's record is its last event: when it is in the log, the
        // batch is complete and a redelivery costs no LLM call.
        let record_id = record_id(conversation, &key);
        let recorded = match committed {
            Some(committed) => committed.found.contains_key(&record_id),
            None => self.recorded(tenant, &record_id).await?.is_some(),
        };
        if recorded {
            return Ok(Outcome {
                already_done: ids.len(),
                ..Default::default()
            });
        }
        let messages = self.messages(tenant, ids).await?;
        if messages.is_empty() {
            return Ok(Outcome::default());
        }
        let spend = Spend::default();
        let (active, extracted, fallback) =
            self.extract(tenant, &policy, &messages, &spend).await?;
        let mut batch = Batch {
            conversation,
            ids,
            key,
            record_id,
            policy,
            outcome: Outcome {
                messages: messages.len(),
                candidates: extracted.len(),
                ..Default::default()
            },
            messages,
            spend,
            active,
            fallback,
            routed: Vec::with_capacity(extracted.len()),
            candidates: Vec::new(),
            suspicions: Vec::new(),
            slots: Vec::new(),
            event_ids: Vec::new(),
            vectors: Vec::new(),
            neighbours: Vec::new(),
            decisions: Vec::new(),
            proposed_relations: Vec::new(),
            created_here: std::mem::take(&mut group.created),
            new_memories: Vec::new(),
            appends: Vec::new(),
        };
        batch.route(extracted);
        self.compare(&mut batch).await?;
        self.merge(&mut batch).await?;
        let stamp = batch.stamp();
        let done = match committed {
            Some(committed) if batch.event_ids.len() <= committed.candidates => batch
                .event_ids
                .iter()
                .filter_map(|id| Some((*id, *committed.found.get(id)?)))
                .collect(),
            _ => self.already_appended(&batch).await?,
        };
        for index in 0..batch.candidates.len() {
            if batch.replayed(index, &done) {
                continue;
            }
            let appends = batch.settle(index, &stamp);
            batch.appends.extend(appends);
        }
        self.extras(&mut batch, &stamp, group).await?;
        self.finish(batch, &stamp, group).await
    }

    /// Embeds the kept candidates and finds each one's nearest memories.
    async fn compare(&self, batch: &mut Batch<'_>) -> Result<(), PipelineError> {
        let texts: Vec<String> = batch.candidates.iter().map(|c| c.content.clone()).collect();
        batch.vectors = if texts.is_empty() {
            Vec::new()
        } else {
            self.embedder
                .embed(&texts)
                .await
                .map_err(|e| PipelineError::Embed(e.to_string()))?
        };
        let conversation = batch.conversation;
        batch.neighbours = self
            .neighbours(&conversation.tenant, &conversation.subject, &batch.vectors)
            .await?;
        Ok(())
    }

    /// The strategy's merge decisions for the kept candidates (and, from an
    /// LLM, their relations); the rules' when an LLM's fail (the batch's
    /// fallback then says why). A merge that costs a call is asked only when
    /// some candidate has a neighbour at `merge_similarity` or closer:
    /// otherwise nothing could be a duplicate, a revision or a
    /// contradiction, and every candidate is kept as it would be.
    async fn merge(&self, batch: &mut Batch<'_>) -> Result<(), PipelineError> {
        if batch.candidates.is_empty() {
            return Ok(());
        }
        if batch.active.merge_is_a_call() && !batch.has_close_neighbour() {
            batch.decisions = (0..batch.candidates.len())
                .map(|candidate| MergeDecision {
                    candidate,
                    action: MergeAction::Keep,
                    reason: "no existing memory is close".into(),
                })
                .collect();
            return Ok(());
        }
        let merged = batch
            .active
            .merge(
                &batch.candidates,
                &batch.neighbours,
                batch.policy.relations,
                &batch.spend,
            )
            .await;
        batch.decisions = match merged {
            Ok(outcome) => {
                batch.proposed_relations = outcome.relations;
                outcome.decisions
            }
            Err(error) => {
                let Some(rules) = &self.fallback else {
                    return Err(error.into());
                };
                tracing::warn!(tenant = %batch.conversation.tenant, error = %error, "LLM merge failed; the rules decide this batch");
                batch
                    .fallback
                    .get_or_insert_with(|| format!("llm_failed: {error}"));
                rules
                    .merge(&batch.candidates, &batch.neighbours, false, &batch.spend)
                    .await?
                    .decisions
            }
        };
        Ok(())
    }

    /// Which kept candidates' events are in the log already (a replay
    /// after a crash between the batch's commits), read in one query.
    async fn already_appended(
        &self,
        batch: &Batch<'_>,
    ) -> Result<std::collections::HashMap<EventId, EventType>, PipelineError> {
        self.in_log(&batch.conversation.tenant, &batch.event_ids)
            .await
    }

    /// The type of each of these events that is in the log, read in one
    /// query (none for no ids).
    async fn in_log(
        &self,
        tenant: &TenantId,
        ids: &[EventId],
    ) -> Result<std::collections::HashMap<EventId, EventType>, PipelineError> {
        if ids.is_empty() {
            return Ok(Default::default());
        }
        let found = self
            .log
            .store()
            .get_events(tenant, ids)
            .await
            .map_err(mnemo_event_store::sealed::LogError::from)?;
        Ok(found
            .into_iter()
            .filter_map(|event| Some((event.event_id, EventType::parse(&event.event_type)?)))
            .collect())
    }

    /// Moves what the batch has settled so far to its group, in order,
    /// each event for its stream of the subject, stamped with the batch's
    /// metadata.
    fn stage(batch: &mut Batch<'_>, stamp: &Stamp<'_>, group: &mut Group) {
        let conversation = stamp.conversation;
        group.pending.extend(
            std::mem::take(&mut batch.appends)
                .into_iter()
                .map(|append| {
                    (
                        append.stream,
                        ExpectedVersion::Any,
                        vec![Pending {
                            event_id: append.id,
                            subject: Some(conversation.subject.clone()),
                            event: append.event,
                            metadata: stamp.metadata.clone(),
                        }],
                    )
                }),
        );
    }

    /// Appends what the group's batches settled, in order, in one
    /// transaction: a batch's memories and its record commit together (one
    /// write for the group, not one per event or per batch).
    async fn commit_group(
        &self,
        tenant: &TenantId,
        group: &mut Group,
    ) -> Result<(), PipelineError> {
        let pending = std::mem::take(&mut group.pending);
        if pending.is_empty() {
            return Ok(());
        }
        self.log.append_streams(tenant, pending).await?;
        Ok(())
    }

    /// Relations and the profile are the LLM's extras: a batch the rules
    /// consolidated has neither, and their failure loses no memory.
    async fn extras(
        &self,
        batch: &mut Batch<'_>,
        stamp: &Stamp<'_>,
        group: &mut Group,
    ) -> Result<(), PipelineError> {
        if batch.fallback.is_some() || self.fallback.is_none() {
            return Ok(());
        }
        if batch.policy.relations {
            self.relate(batch);
        }
        if batch.policy.profile_every > 0 && batch.outcome.created > 0 {
            // The profile reads the memories created so far from the log.
            Self::stage(batch, stamp, group);
            self.commit_group(&batch.conversation.tenant, group).await?;
            match self.update_profile(batch, stamp).await {
                Ok(updated) => batch.outcome.profile_updated = updated,
                Err(error) => {
                    tracing::warn!(tenant = %batch.conversation.tenant, error = %error, "profile update failed; it is retried after the next batch")
                }
            }
        }
        Ok(())
    }

    /// The relations the merge answer proposed for candidates that became
    /// new memories, as edges on both ends.
    fn relate(&self, batch: &mut Batch<'_>) {
        for relation in batch.found_relations() {
            batch.appends.extend(relation_events(&relation));
            batch.outcome.relations += 1;
        }
    }

    /// The batch's record, appended last (with what the batch settled
    /// since the last commit): once it is in the log, a redelivered batch
    /// returns before any LLM call.
    async fn finish(
        &self,
        mut batch: Batch<'_>,
        stamp: &Stamp<'_>,
        group: &mut Group,
    ) -> Result<Outcome, PipelineError> {
        let signals = batch.signal_counts();
        let mut outcome = std::mem::take(&mut batch.outcome);
        let spend = std::mem::take(&mut batch.spend);
        outcome.fallback = batch.fallback.clone();
        outcome.llm_calls = spend.calls();
        outcome.llm_tokens = spend.tokens();
        let record = BatchConsolidated {
            messages: u32::try_from(batch.messages.len()).unwrap_or(u32::MAX),
            strategy: batch.active.name().to_owned(),
            model: self.strategy.model(),
            prompt_version: self.strategy.prompt_version(),
            fallback: batch.fallback.clone(),
            llm_calls: spend.calls(),
            prompt_tokens: spend.prompt_tokens(),
            completion_tokens: spend.completion_tokens(),
            candidates: std::mem::take(&mut batch.routed),
            created: u32::try_from(outcome.created).unwrap_or(u32::MAX),
            reinforced: u32::try_from(outcome.reinforced).unwrap_or(u32::MAX),
            superseded: u32::try_from(outcome.superseded).unwrap_or(u32::MAX),
            suspected_injections: u32::try_from(outcome.suspected_injections).unwrap_or(u32::MAX),
        };
        self.observe(&record, &spend, &signals);
        let record = Append {
            stream: streams::consolidation(&stamp.conversation.subject),
            id: batch.record_id,
            event: DomainEvent::BatchConsolidated(record),
        };
        batch.appends.push(record);
        Self::stage(&mut batch, stamp, group);
        group.created = std::mem::take(&mut batch.created_here);
        Ok(outcome)
    }

    fn observe(&self, record: &BatchConsolidated, spend: &Spend, signals: &BTreeMap<Signal, u64>) {
        let Some(metrics) = &self.metrics else {
            return;
        };
        for candidate in &record.candidates {
            metrics
                .consolidation_candidates_total
                .with_label_values(&[candidate.route.as_str()])
                .inc();
        }
        // Label values are the detector's fixed signal names: a bounded
        // set, and never the text that fired them.
        for (signal, count) in signals {
            metrics
                .consolidation_suspected_injections_total
                .with_label_values(&[signal.as_str()])
                .inc_by(*count);
        }
        if let Some(reason) = &record.fallback {
            let reason = reason.split(':').next().unwrap_or(reason);
            metrics
                .consolidation_fallbacks_total
                .with_label_values(&[reason])
                .inc();
        }
        // `completed`: answers received (billed); `failed`: attempts that
        // brought no usable answer (an error, or an answer that did not validate).
        metrics
            .llm_calls_total
            .with_label_values(&["completed"])
            .inc_by(u64::from(spend.calls()));
        metrics
            .llm_calls_total
            .with_label_values(&["failed"])
            .inc_by(u64::from(spend.failed_calls()));
        metrics
            .llm_tokens_total
            .with_label_values(&["prompt"])
            .inc_by(spend.prompt_tokens());
        metrics
            .llm_tokens_total
            .with_label_values(&["completion"])
            .inc_by(spend.completion_tokens());
    }

    /// Rewrites the subject's profile when `profile_every` memories were
    /// created since the last one (seed 003's throttled, incremental summary).
    async fn update_profile(
        &self,
        batch: &Batch<'_>,
        stamp: &Stamp<'_>,
    ) -> Result<bool, PipelineError> {
        let (tenant, subject) = (&batch.conversation.tenant, &batch.conversation.subject);
        let stream = streams::profile(subject);
        let mut previous: Option<String> = None;
        let mut covered = 0;
        let last = self
            .log
            .store()
            .read_stream(tenant, &stream)
            .await
            .map_err(mnemo_event_store::sealed::LogError::from)?
            .pop();
        if let Some(last) = last {
            if let DomainEvent::ProfileUpdated(profile) = self.log.decode(last).await?.event {
                previous = profile.summary.as_text().map(str::to_owned);
                covered = profile.covers_position;
            }
        }
        let created = self
            .log
            .store()
            .query(
                tenant,
                &EventQuery {
                    subject: Some(subject.clone()),
                    event_types: vec![EventType::MemoryCreated.as_str().to_owned()],
                    after_position: Some(covered),
                    limit: MAX_PROFILE_MEMORIES,
                    ..Default::default()
                },
            )
            .await
            .map_err(mnemo_event_store::sealed::LogError::from)?;
        if created.len() < batch.policy.profile_every {
            return Ok(false);
        }
        let covers_position = created.last().map_or(covered, |e| e.global_position);
        let mut memory_ids = Vec::new();
        let mut contents = Vec::new();
        for event in created {
            if let DomainEvent::MemoryCreated(memory) = self.log.decode(event).await?.event {
                if let Some(content) = memory.content.as_text() {
                    memory_ids.push(memory.memory_id);
                    contents.push(content.to_owned());
                }
            }
        }
        let Some(summary) = batch
            .active
            .summarise(previous.as_deref(), &contents, &batch.spend)
            .await?
        else {
            return Ok(false);
        };
        self.log
            .append_one(
                tenant,
                &stream,
                ExpectedVersion::Any,
                Pending {
                    event_id: EventId::derived(&[
                        "profile",
                        tenant.as_str(),
                        subject.as_str(),
                        &covers_position.to_string(),
                    ]),
                    subject: Some(subject.clone()),
                    event: DomainEvent::ProfileUpdated(ProfileUpdated {
                        summary: SubjectText::new(summary),
                        memory_ids,
                        covers_position,
                        producer: Some(stamp.producer.clone()),
                    }),
                    metadata: stamp.metadata.clone(),
                },
            )
            .await?;
        Ok(true)
    }
}

/// Batches of one subject consolidated one after the other and committed
/// together: the events they settled, the memories they created (which a
/// later batch reinforces instead of creating again), and their messages.
#[derive(Default)]
struct Group {
    pending: Vec<(String, ExpectedVersion, Vec<Pending>)>,
    created: Vec<(MemoryId, MemoryKind, String, Vec<f32>)>,
    ids: Vec<EventId>,
}

/// One event for the log: its stream, its derived id and itself.
struct Append {
    stream: String,
    id: EventId,
    event: DomainEvent,
}

/// What every event of a batch carries: the conversation it belongs to,
/// who wrote it, and the metadata tying it to the batch.
struct Stamp<'a> {
    conversation: &'a Conversation,
    producer: Producer,
    metadata: EventMetadata,
    session: Option<SessionId>,
}

/// One batch between extraction and its record: its messages, its
/// candidates and what the strategy decided for them, and the record under
/// construction (the routes and the outcome).
struct Batch<'a> {
    conversation: &'a Conversation,
    /// The message ids, as the buffer handed them over.
    ids: &'a [EventId],
    /// The message ids sorted and joined: every id the batch derives (its
    /// candidates' events, their memories, its record) is made from it.
    key: String,
    record_id: EventId,
    policy: ConsolidationPolicy,
    messages: Vec<ConversationMessage>,
    spend: Spend,
    /// Who extracted: the configured strategy, or the rules in its stead.
    active: Arc<dyn ConsolidationStrategy>,
    /// Why the rules answered instead of the LLM, when they did.
    fallback: Option<String>,
    /// Every extracted candidate's confidence and route, for the record.
    routed: Vec<RoutedCandidate>,
    /// The candidates routing kept (not discarded). The vectors below are
    /// theirs, index for index.
    candidates: Vec<Candidate>,
    /// For each kept candidate, why the injection screening holds it, if it
    /// does (such a candidate's route is review, whatever its confidence).
    suspicions: Vec<Option<Suspicion>>,
    /// For each kept candidate, its place in `routed` (whose route a
    /// protected contradiction may still change to review).
    slots: Vec<usize>,
    /// Each kept candidate's event id, whatever it becomes.
    event_ids: Vec<EventId>,
    vectors: Vec<Vec<f32>>,
    /// Each kept candidate's nearest memories of the subject.
    neighbours: Vec<Vec<ExistingMemory>>,
    /// The merge step's decisions, by kept candidate index.
    decisions: Vec<MergeDecision>,
    /// The relations the merge answer proposed, by kept candidate index.
    proposed_relations: Vec<CandidateRelation>,
    /// Memories created earlier in this same batch: a later candidate
    /// that repeats one reinforces it (the index has not seen it yet).
    created_here: Vec<(MemoryId, MemoryKind, String, Vec<f32>)>,
    /// Memories created by this batch, for the relation step: (id,
    /// candidate index).
    new_memories: Vec<(MemoryId, usize)>,
    /// Events settled and not yet appended: the next commit writes them.
    appends: Vec<Append>,
    outcome: Outcome,
}

impl<'a> Batch<'a> {
    fn auto_threshold(&self) -> f32 {
        self.policy.auto_threshold_for(self.active.name())
    }

    /// Screening, then confidence routing. A candidate the injection
    /// screening flags is held for review whatever its confidence (never a
    /// memory, never discarded unseen). Otherwise: below `min_confidence` a
    /// candidate is discarded, below the auto threshold held for review,
    /// else made a memory. Every candidate goes in the record; the
    /// discarded ones go no further.
    fn route(&mut self, extracted: Vec<Candidate>) {
        let auto_threshold = self.auto_threshold();
        let whole_batch = self.active.reads_whole_batch();
        // Only a strategy that reads the whole batch is steered by messages
        // a candidate does not cite.
        let batch_signals = if whole_batch {
            injection::scan_batch(&self.messages)
        } else {
            BTreeSet::new()
        };
        for candidate in extracted {
            let suspicion =
                injection::screen(&candidate, &self.messages, whole_batch, &batch_signals);
            let route = if suspicion.is_some() {
                Route::Review
            } else if candidate.confidence < self.policy.min_confidence {
                Route::Discarded
            } else if candidate.confidence < auto_threshold {
                Route::Review
            } else {
                Route::Memory
            };
            if let Some(suspicion) = &suspicion {
                self.outcome.suspected_injections += 1;
                // The signals' names only: what fired is logged, never the text.
                tracing::warn!(
                    tenant = %self.conversation.tenant,
                    signals = ?suspicion.names(),
                    strategy = self.active.name(),
                    "candidate held for review as a suspected injection"
                );
            }
            self.routed.push(RoutedCandidate {
                confidence: candidate.confidence,
                route,
            });
            if route != Route::Discarded {
                self.candidates.push(candidate);
                self.suspicions.push(suspicion);
                self.slots.push(self.routed.len() - 1);
            }
        }
        self.outcome.below_threshold = self.outcome.candidates - self.candidates.len();
        self.event_ids = (0..self.candidates.len())
            .map(|i| candidate_id(self.conversation, &self.key, i))
            .collect();
    }

    /// Whether kept candidate `index` is in the log already (`done`: what
    /// [`Pipeline::already_appended`] found): a replay after a crash. A
    /// memory it created is remembered, so a later candidate repeating it
    /// still reinforces instead of duplicating.
    fn replayed(
        &mut self,
        index: usize,
        done: &std::collections::HashMap<EventId, EventType>,
    ) -> bool {
        let Some(kind) = done.get(&self.event_ids[index]) else {
            return false;
        };
        if *kind == EventType::MemoryCreated {
            let memory_id = self.memory_id(index);
            let candidate = &self.candidates[index];
            self.created_here.push((
                memory_id,
                candidate.kind,
                candidate.content.clone(),
                self.vectors[index].clone(),
            ));
        }
        self.outcome.already_done += 1;
        true
    }

    /// The memory kept candidate `index` creates, or the review it asks
    /// for: derived from its event id, so a replay finds the same one.
    fn memory_id(&self, index: usize) -> MemoryId {
        MemoryId::from_uuid(Uuid::new_v5(
            &Uuid::NAMESPACE_OID,
            self.event_ids[index].to_string().as_bytes(),
        ))
    }

    /// Made once the merge step is done: the producer names the fallback,
    /// which a failed LLM merge may have set.
    fn stamp(&self) -> Stamp<'a> {
        let active = &self.active;
        let producer = Producer {
            strategy: active.name().to_owned(),
            version: active.version().to_owned(),
            model: active.model(),
            prompt_version: active.prompt_version(),
            fallback: self.fallback.as_ref().map(|reason| {
                // The kind of failure, not its details (those are logged).
                reason.split(':').next().unwrap_or(reason).to_owned()
            }),
        };
        let metadata = EventMetadata {
            actor: format!("mnemo-consolidator/{}", active.name()),
            correlation_id: Some(format!("consolidation:{}", self.record_id)),
            causation_id: self.ids.last().copied(),
            // Inside a consumed record's span this is the trace the message
            // was posted in, so one trace runs ingest → consolidator →
            // retriever (the idle sweeper starts a trace of its own).
            traceparent: mnemo_telemetry::current_traceparent(),
        };
        // The conversation knows its session by token only; the messages,
        // opened, carry it in the clear.
        let session = self
            .messages
            .iter()
            .find_map(|m| m.session.as_deref())
            .and_then(|s| SessionId::parse(s).ok());
        Stamp {
            conversation: self.conversation,
            producer,
            metadata,
            session,
        }
    }

    /// What kept candidate `index` becomes, as the events to append in
    /// order (none when it is skipped), counted in the outcome: a review,
    /// a reinforcement of the memory it repeats, or a new memory.
    fn settle(&mut self, index: usize, stamp: &Stamp<'_>) -> Vec<Append> {
        let (decision, why) = self.decision(index);
        let protected_conflict = self.protected_conflict(index, &decision);
        let slot = &mut self.routed[self.slots[index]];
        if protected_conflict && slot.route == Route::Memory {
            slot.route = Route::Review;
        }
        if slot.route == Route::Review {
            return self
                .review(index, &decision, protected_conflict, stamp)
                .into_iter()
                .collect();
        }
        if let Some(target) = self.dedupe(index, &decision) {
            self.outcome.reinforced += 1;
            return vec![self.reinforcement(index, target)];
        }
        if decision == MergeAction::Skip {
            // Known already, and nothing close enough to reinforce.
            self.outcome.skipped += 1;
            return Vec::new();
        }
        self.create(index, decision, &why, stamp)
    }

    /// The merge step's decision for kept candidate `index` and its reason
    /// (Keep, and no reason, when it gave none).
    fn decision(&self, index: usize) -> (MergeAction, String) {
        self.decisions
            .iter()
            .find(|d| d.candidate == index)
            .map(|d| (d.action.clone(), d.reason.trim().to_owned()))
            .unwrap_or((MergeAction::Keep, String::new()))
    }

    /// Seed 002 §5.2: two important memories in contradiction are a
    /// person's call, not the model's.
    fn protected_conflict(&self, index: usize, decision: &MergeAction) -> bool {
        let MergeAction::Supersede { target } = decision else {
            return false;
        };
        let candidate = &self.candidates[index];
        let protected = self.policy.protected_importance;
        importance_for(candidate.confidence, candidate.kind) >= protected
            && self.neighbours[index]
                .iter()
                .find(|m| m.id == *target)
                .is_some_and(|m| m.importance >= protected)
    }

    /// The review a person decides, for a candidate in the review band, in
    /// a protected contradiction or suspected of injection; none when the
    /// merge step skips it (a suspected injection it skips is stored
    /// nowhere, which is as safe as a review, and is still counted in the
    /// batch record).
    fn review(
        &mut self,
        index: usize,
        decision: &MergeAction,
        protected_conflict: bool,
        stamp: &Stamp<'_>,
    ) -> Option<Append> {
        let candidate = &self.candidates[index];
        let (action, target, proposed) = match decision {
            MergeAction::Skip => {
                self.outcome.skipped += 1;
                return None;
            }
            MergeAction::Keep => (ProposedAction::Create, None, candidate.content.clone()),
            MergeAction::Supersede { target } => (
                ProposedAction::Supersede,
                Some(*target),
                candidate.content.clone(),
            ),
            MergeAction::MergeInto { target, content } => {
                (ProposedAction::MergeInto, Some(*target), content.clone())
            }
        };
        // A suspected injection says so first: that is what the reviewer
        // must weigh, whatever else holds the candidate.
        let (code, reason, signals) = if let Some(suspicion) = &self.suspicions[index] {
            let names = suspicion.names();
            (
                ReviewReason::SuspectedInjection,
                format!("suspected_injection: {}", names.join(", ")),
                names,
            )
        } else if protected_conflict {
            (
                ReviewReason::ProtectedConflict,
                "contradicts an important memory".to_owned(),
                Vec::new(),
            )
        } else {
            (
                ReviewReason::ReviewBand,
                format!(
                    "confidence {:.2} is below the auto threshold {:.2}",
                    candidate.confidence,
                    self.auto_threshold()
                ),
                Vec::new(),
            )
        };
        let memory_id = self.memory_id(index);
        let review = DomainEvent::ReviewRequested(ReviewRequested {
            review_id: memory_id,
            proposed: SubjectText::new(proposed),
            kind: candidate.kind,
            confidence: candidate.confidence,
            source_event_ids: candidate.source_event_ids.clone(),
            tags: candidate.tags.clone(),
            action,
            target,
            reason: Some(SubjectText::new(reason)),
            reason_code: Some(code),
            signals,
            excerpt: Some(SubjectText::new(excerpt(
                &self.messages,
                &candidate.source_event_ids,
            ))),
            producer: Some(stamp.producer.clone()),
            session: stamp.session.clone(),
            pii: Default::default(),
        });
        self.outcome.reviews += 1;
        Some(Append {
            stream: streams::review(&memory_id),
            id: self.event_ids[index],
            event: review,
        })
    }

    /// Near duplicates: the memory kept candidate `index` repeats, to be
    /// reinforced instead of created again, when the decision leaves that
    /// to the pipeline. The same memory seen again is of the same kind,
    /// close in meaning, and shares enough of its wording; it is in the
    /// index already or was created earlier in this batch.
    fn dedupe(&self, index: usize, decision: &MergeAction) -> Option<MemoryId> {
        let candidate = &self.candidates[index];
        let threshold = self.policy.similarity_threshold;
        let neighbours = &self.neighbours[index];
        let nearest_existing = neighbours
            .iter()
            .filter(|m| {
                m.kind == candidate.kind
                    && m.similarity >= threshold
                    && text_overlap(&m.content, &candidate.content) >= MIN_TEXT_OVERLAP
            })
            .max_by(|a, b| a.similarity.total_cmp(&b.similarity))
            .map(|m| m.id);
        let nearest_here = self
            .created_here
            .iter()
            .filter(|(_, kind, content, _)| {
                *kind == candidate.kind
                    && text_overlap(content, &candidate.content) >= MIN_TEXT_OVERLAP
            })
            .map(|(id, _, _, v)| (*id, cosine(v, &self.vectors[index])))
            .filter(|(_, s)| *s >= threshold)
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(id, _)| id);
        match decision {
            // The model rewrote or replaced a memory: that is its call.
            MergeAction::MergeInto { .. } | MergeAction::Supersede { .. } => None,
            MergeAction::Skip => nearest_existing
                .or(nearest_here)
                .or(neighbours.first().map(|m| m.id)),
            MergeAction::Keep => nearest_existing.or(nearest_here),
        }
    }

    fn reinforcement(&self, index: usize, target: MemoryId) -> Append {
        let similarity = self.neighbours[index]
            .iter()
            .find(|m| m.id == target)
            .map_or(1.0, |m| m.similarity);
        Append {
            stream: streams::memory(&target),
            id: self.event_ids[index],
            event: DomainEvent::MemoryReinforced(MemoryReinforced {
                source_event_ids: self.candidates[index].source_event_ids.clone(),
                similarity,
            }),
        }
    }

    /// A new memory, then the supersession or merge of the memory it
    /// replaces. `why` is the merge step's reason, when it gave one: the
    /// audit trail's "why".
    fn create(
        &mut self,
        index: usize,
        decision: MergeAction,
        why: &str,
        stamp: &Stamp<'_>,
    ) -> Vec<Append> {
        let why = |default: &str| {
            if why.is_empty() {
                default.to_owned()
            } else {
                why.to_owned()
            }
        };
        let event_id = self.event_ids[index];
        let memory_id = self.memory_id(index);
        let candidate = &self.candidates[index];
        let content = match &decision {
            MergeAction::MergeInto { content, .. } => content.clone(),
            _ => candidate.content.clone(),
        };
        let mut appends = vec![Append {
            stream: streams::memory(&memory_id),
            id: event_id,
            event: DomainEvent::MemoryCreated(MemoryCreated {
                memory_id,
                kind: candidate.kind,
                content: SubjectText::new(content.clone()),
                tags: candidate.tags.clone(),
                confidence: candidate.confidence,
                importance: importance_for(candidate.confidence, candidate.kind),
                state: MemoryState::Active,
                provenance: Provenance {
                    source_event_ids: candidate.source_event_ids.clone(),
                    producer: stamp.producer.clone(),
                },
                session: stamp.session.clone(),
                agent: None,
                pii: Default::default(),
            }),
        }];
        self.outcome.created += 1;
        self.created_here.push((
            memory_id,
            candidate.kind,
            content.clone(),
            self.vectors[index].clone(),
        ));
        self.new_memories.push((memory_id, index));
        match decision {
            MergeAction::Supersede { target } => {
                appends.push(Append {
                    stream: streams::memory(&target),
                    id: EventId::derived(&["supersede", &event_id.to_string()]),
                    event: DomainEvent::MemorySuperseded(MemorySuperseded {
                        by: memory_id,
                        reason: Some(SubjectText::new(why("a newer statement contradicts it"))),
                    }),
                });
                self.outcome.superseded += 1;
            }
            MergeAction::MergeInto { target, .. } => {
                appends.push(Append {
                    stream: streams::memory(&target),
                    id: EventId::derived(&["merge", &event_id.to_string()]),
                    event: DomainEvent::MemoryMerged(MemoryMerged {
                        into: memory_id,
                        reason: Some(SubjectText::new(why("merged into a more precise memory"))),
                    }),
                });
                self.outcome.merged += 1;
            }
            MergeAction::Keep | MergeAction::Skip => {}
        }
        appends
    }

    /// How often each signal fired on the batch's held candidates, for the
    /// metric (a candidate counts once per signal).
    fn signal_counts(&self) -> BTreeMap<Signal, u64> {
        let mut counts = BTreeMap::new();
        for suspicion in self.suspicions.iter().flatten() {
            for signal in &suspicion.signals {
                *counts.entry(*signal).or_default() += 1;
            }
        }
        counts
    }

    /// Whether some kept candidate has a neighbour close enough that the
    /// merge could be anything but "keep".
    fn has_close_neighbour(&self) -> bool {
        self.neighbours
            .iter()
            .flatten()
            .any(|memory| memory.similarity >= self.policy.merge_similarity)
    }

    /// The proposed relations whose candidate this batch created, with the
    /// new memory's id in place of the candidate.
    fn found_relations(&self) -> Vec<FoundRelation> {
        self.proposed_relations
            .iter()
            .filter_map(|proposed| {
                let (created, _) = self
                    .new_memories
                    .iter()
                    .find(|(_, index)| *index == proposed.candidate)?;
                let (from, to) = if proposed.candidate_is_from {
                    (*created, proposed.memory)
                } else {
                    (proposed.memory, *created)
                };
                Some(FoundRelation {
                    from,
                    to,
                    relation: proposed.relation,
                    confidence: proposed.confidence,
                })
            })
            .collect()
    }
}

/// A classified relation as its two events: both ends carry the edge, so
/// each memory's history and row show it.
fn relation_events(relation: &FoundRelation) -> Vec<Append> {
    let added = RelationAdded {
        from: relation.from,
        to: relation.to,
        relation: relation.relation,
        confidence: relation.confidence,
    };
    [relation.from, relation.to]
        .into_iter()
        .map(|end| Append {
            stream: streams::memory(&end),
            id: EventId::derived(&[
                "relation",
                &relation.from.to_string(),
                &relation.to.to_string(),
                relation.relation.as_str(),
                &end.to_string(),
            ]),
            event: DomainEvent::RelationAdded(added.clone()),
        })
        .collect()
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
