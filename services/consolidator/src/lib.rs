//! The consolidator turns conversations into memories (seed 000). It
//! buffers `MessageReceived` per conversation (tenant, subject, session) in
//! a durable buffer and consolidates a conversation when N messages wait
//! (the tenant's batch size), when it has been idle for the tenant's
//! timeout, or when a client asks (`ConsolidationRequested`). The strategy
//! behind the [`strategy::ConsolidationStrategy`] port extracts candidates;
//! the pipeline thresholds, dedupes by vector, merges and appends memory
//! events only.
//!
//! Invariant: handlers are idempotent (see [`pipeline`]); the consumer may
//! commit a message's offset once it is buffered.
//!
//! Key decision: consolidation runs on a bounded pool of workers, one
//! subject never on two at once. A subject's conversations share its
//! memories (a candidate is compared with the subject's nearest ones), so
//! two of its batches at once could both create what one of them should
//! have reinforced; different subjects share nothing and run in parallel.
//! The consumer only buffers and schedules: it waits for a free worker
//! when all are busy (so a backlog shows as consumer lag, not as unbounded
//! tasks), and a failed drain leaves its messages buffered for the idle
//! sweeper to take again.

pub mod budget;
pub mod buffer;
pub mod injection;
pub mod llm;
pub mod pipeline;
pub mod rules;
pub mod strategy;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::Utc;
use mnemo_bus::{EventHandler, HandlerError};
use mnemo_crypto::TokenPurpose;
use mnemo_domain::events::EventType;
use mnemo_domain::{DomainEvent, EventId, RecordedEvent, SubjectId, TenantId};
use mnemo_event_store::sealed::LogError;
use tokio::sync::{Mutex, OwnedSemaphorePermit, Semaphore};
use tracing::Instrument;

use crate::buffer::Conversation;
use crate::pipeline::{Batches, Outcome, Pipeline, PipelineError};

/// How long a consolidated message's buffer row is kept after the message
/// was buffered: the row is what makes a redelivered message a no-op, so it
/// must outlive any redelivery, the bus's retention included (Kafka's
/// default is 7 days from publication, about when a message is buffered).
pub const CONSOLIDATED_KEPT: Duration = Duration::from_secs(30 * 24 * 3600);
/// How often the idle sweeper deletes the rows past [`CONSOLIDATED_KEPT`].
pub const PRUNE_EVERY: Duration = Duration::from_secs(3600);
/// Rows one prune statement deletes at most.
const PRUNE_CHUNK: usize = 2_000;

/// A subject of a tenant: what one worker owns at a time.
type SubjectKey = (TenantId, SubjectId);

/// A conversation waiting for its subject's worker: which batches, and the
/// span of the record that asked (so the events the drain appends join
/// that request's trace, as they did when the consumer drained inline).
struct Scheduled {
    which: Batches,
    span: tracing::Span,
}

/// Drains conversations on at most `workers` tasks at once, one subject
/// never on two of them.
pub struct Consolidator {
    inner: Arc<Inner>,
}

struct Inner {
    pipeline: Pipeline,
    workers: Arc<Semaphore>,
    /// Subjects a worker is draining, with their conversations still to
    /// drain. A conversation scheduled while its subject is here joins the
    /// set instead of starting a second worker.
    queued: std::sync::Mutex<HashMap<SubjectKey, BTreeMap<Conversation, Scheduled>>>,
    /// Held by every drain of a subject (worker or direct call), so a
    /// tool's direct drain never runs beside a worker's.
    subjects: std::sync::Mutex<HashMap<SubjectKey, Arc<Mutex<()>>>>,
    /// The running workers, so a shutdown can stop them.
    tasks: std::sync::Mutex<tokio::task::JoinSet<()>>,
    /// Messages of the current run of records, buffered together at its
    /// flush (or before a consolidation request that may concern them),
    /// each with the span of its record: the drain it schedules runs in
    /// it, so its trace and logs name the record (and its partition).
    arrived: std::sync::Mutex<Vec<Arrived>>,
    /// Sessions a newer session of their subject ended while every worker
    /// was busy: they join the subject's next drain instead of taking a
    /// drain (and a commit) of their own, which under load cost more than
    /// it brought. Lost at a restart, when the idle sweeper takes them.
    ended: std::sync::Mutex<HashMap<SubjectKey, Vec<Conversation>>>,
}

/// A message of the current run, as the buffer takes it, and its record's
/// span.
type Arrived = ((Conversation, EventId, i64), tracing::Span);

fn retryable(error: PipelineError) -> HandlerError {
    HandlerError::Retryable(error.to_string())
}

/// Workers by default: two per core, at most 8. A worker spends most of a
/// batch waiting (store round trips, the writer lock, index searches on
/// the blocking pool), so one per core left the cores half idle while a
/// backlog drained; past two per core the workers only take the cores from
/// ingest (measured in docs/performance.md, "Consolidation workers").
pub fn default_workers() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .saturating_mul(2)
        .clamp(2, 8)
}

impl Consolidator {
    pub fn new(pipeline: Pipeline) -> Self {
        Self::with_workers(pipeline, default_workers())
    }

    pub fn with_workers(pipeline: Pipeline, workers: usize) -> Self {
        Consolidator {
            inner: Arc::new(Inner {
                pipeline,
                workers: Arc::new(Semaphore::new(workers.max(1))),
                queued: Default::default(),
                subjects: Default::default(),
                tasks: Default::default(),
                arrived: Default::default(),
                ended: Default::default(),
            }),
        }
    }

    pub fn pipeline(&self) -> &Pipeline {
        &self.inner.pipeline
    }

    /// Drains one conversation now and says what came of it (tools and
    /// tests); waits while a worker drains the same subject.
    pub async fn drain(&self, conversation: &Conversation) -> Result<Outcome, PipelineError> {
        self.inner
            .drain(&[(conversation.clone(), Batches::All)])
            .await
    }

    /// Has a worker drain `conversation` (`which` of its batches): returns
    /// once one has it (waiting for a free worker when all are busy), not
    /// when it is done.
    pub async fn schedule(&self, conversation: Conversation, which: Batches) {
        Inner::schedule(&self.inner, conversation, which).await
    }

    /// Stops the workers (at shutdown). A drain cut short is harmless: its
    /// messages stay buffered until every event it appends is in the log,
    /// and a repeated drain appends nothing twice.
    pub async fn stop(&self) {
        let mut tasks =
            std::mem::take(&mut *self.inner.tasks.lock().unwrap_or_else(|p| p.into_inner()));
        tasks.shutdown().await;
        self.inner
            .queued
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        self.inner
            .ended
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    /// Consolidates conversations that went quiet, every `tick`, forever;
    /// and every [`PRUNE_EVERY`], deletes the buffer's consolidated rows
    /// buffered more than [`CONSOLIDATED_KEPT`] ago.
    pub async fn run_idle_sweeper(self: Arc<Self>, tick: Duration) {
        let mut pruned_at = tokio::time::Instant::now();
        loop {
            tokio::time::sleep(tick).await;
            if let Err(error) = self.sweep_idle().await {
                tracing::warn!(error = %error, "idle consolidation sweep failed");
            }
            if pruned_at.elapsed() >= PRUNE_EVERY {
                pruned_at = tokio::time::Instant::now();
                match self.prune_consolidated().await {
                    Ok(0) => {}
                    Ok(rows) => tracing::info!(rows, "consolidated buffer rows deleted"),
                    Err(error) => {
                        tracing::warn!(error = %error, "pruning the consolidation buffer failed")
                    }
                }
            }
        }
    }

    /// Deletes the buffer's consolidated rows buffered more than
    /// [`CONSOLIDATED_KEPT`] ago (each conversation's newest kept), a
    /// statement of [`PRUNE_CHUNK`] rows at a time so the write lock is
    /// never held long; returns how many.
    pub async fn prune_consolidated(&self) -> Result<u64, PipelineError> {
        let before = Utc::now() - chrono::Duration::from_std(CONSOLIDATED_KEPT).unwrap_or_default();
        let mut deleted = 0;
        loop {
            let rows = self
                .pipeline()
                .buffer
                .prune_consolidated(before, PRUNE_CHUNK)
                .await?;
            deleted += rows;
            if rows < PRUNE_CHUNK as u64 {
                return Ok(deleted);
            }
        }
    }

    /// Schedules every conversation quiet for its tenant's idle timeout;
    /// returns how many.
    pub async fn sweep_idle(&self) -> Result<usize, PipelineError> {
        let now = Utc::now();
        let shortest = self.shortest_idle_timeout();
        let quiet_since = now - chrono::Duration::from_std(shortest).unwrap_or_default();
        let mut scheduled = 0;
        for (conversation, last) in self.pipeline().buffer.idle(quiet_since).await? {
            let timeout = self.pipeline().policy(&conversation.tenant).idle_timeout;
            if (now - last).to_std().unwrap_or_default() >= timeout {
                self.schedule(conversation, Batches::All).await;
                scheduled += 1;
            }
        }
        Ok(scheduled)
    }

    /// The keyed token of a posted message's session ("" when it has
    /// none), or `None` when the message reads as erased: its subject was
    /// erased before the message got here.
    async fn session_token(
        &self,
        event: &RecordedEvent,
        subject: &SubjectId,
    ) -> Result<Option<String>, HandlerError> {
        let log = &self.pipeline().log;
        let decoded = log.decode(event.clone()).await.map_err(|e| match e {
            LogError::Decode(_) => HandlerError::Permanent(e.to_string()),
            other => retryable(other.into()),
        })?;
        let DomainEvent::MessageReceived(message) = decoded.event else {
            return Err(HandlerError::Permanent("not a MessageReceived".into()));
        };
        if message.content.is_erased() {
            return Ok(None);
        }
        let Some(session) = message.session else {
            return Ok(Some(String::new()));
        };
        // The key exists (the content opened); `None` only if an erasure
        // destroyed it since, and then the message is erased too.
        log.cipher()
            .live_token(
                &event.tenant,
                subject,
                TokenPurpose::Session,
                session.as_str(),
            )
            .await
            .map_err(|e| retryable(LogError::from(e).into()))
    }

    pub fn shortest_idle_timeout(&self) -> Duration {
        let policies = &self.pipeline().policies;
        policies
            .tenants
            .values()
            .map(|p| p.idle_timeout)
            .fold(policies.default.idle_timeout, Duration::min)
    }
}

impl Inner {
    async fn schedule(inner: &Arc<Inner>, conversation: Conversation, which: Batches) {
        let key = (conversation.tenant.clone(), conversation.subject.clone());
        if inner.join(&key, &conversation, which) {
            return;
        }
        // All workers busy: the consumer waits here, and the backlog shows
        // as its lag.
        let permit = inner
            .workers
            .clone()
            .acquire_owned()
            .await
            .expect("the worker semaphore is never closed");
        Inner::start(inner, key, conversation, which, permit);
    }

    /// Drains a session that a newer one ended: with the subject's running
    /// worker, else on a free worker, else with the subject's next drain.
    fn schedule_ended(inner: &Arc<Inner>, conversation: Conversation) {
        let key = (conversation.tenant.clone(), conversation.subject.clone());
        if inner.join(&key, &conversation, Batches::All) {
            return;
        }
        match inner.workers.clone().try_acquire_owned() {
            Ok(permit) => Inner::start(inner, key, conversation, Batches::All, permit),
            Err(_) => {
                let mut ended = inner.ended.lock().unwrap_or_else(|p| p.into_inner());
                let waiting = ended.entry(key).or_default();
                if !waiting.contains(&conversation) {
                    waiting.push(conversation);
                }
            }
        }
    }

    /// Starts a worker for the subject on `permit`, with the sessions
    /// that wait for its next drain.
    fn start(
        inner: &Arc<Inner>,
        key: SubjectKey,
        conversation: Conversation,
        which: Batches,
        permit: OwnedSemaphorePermit,
    ) {
        {
            let mut queued = inner.queued.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(waiting) = queued.get_mut(&key) {
                // Another call started a worker for the subject meanwhile.
                merge(waiting, conversation, which);
                return;
            }
            let mut waiting = BTreeMap::from([(
                conversation,
                Scheduled {
                    which,
                    span: tracing::Span::current(),
                },
            )]);
            let ended = inner
                .ended
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&key);
            for conversation in ended.into_iter().flatten() {
                merge(&mut waiting, conversation, Batches::All);
            }
            queued.insert(key.clone(), waiting);
        }
        let mut tasks = inner.tasks.lock().unwrap_or_else(|p| p.into_inner());
        // Reap the finished ones, so the set holds only the running.
        while tasks.try_join_next().is_some() {}
        tasks.spawn(inner.clone().work(key, permit));
    }

    /// Adds the conversation to its subject's worker when one runs.
    fn join(
        &self,
        key: &(TenantId, SubjectId),
        conversation: &Conversation,
        which: Batches,
    ) -> bool {
        let mut queued = self.queued.lock().unwrap_or_else(|p| p.into_inner());
        match queued.get_mut(key) {
            Some(waiting) => {
                merge(waiting, conversation.clone(), which);
                true
            }
            None => false,
        }
    }

    /// Drains the subject's scheduled conversations until none is left.
    async fn work(self: Arc<Self>, key: SubjectKey, _permit: OwnedSemaphorePermit) {
        loop {
            // Every conversation of the subject scheduled so far, drained
            // together: their batches commit in groups (`drain_subject`).
            let next = {
                let mut queued = self.queued.lock().unwrap_or_else(|p| p.into_inner());
                let next = queued.get_mut(&key).map(std::mem::take).unwrap_or_default();
                if next.is_empty() {
                    // Under the same lock as the check: a conversation
                    // scheduled from now on starts a new worker.
                    queued.remove(&key);
                }
                next
            };
            // One span for the drain: that of the last conversation in
            // order (each holds the span of the latest record that
            // scheduled it), so the drain's events join one of the traces
            // that asked for them.
            let Some(span) = next.values().map(|s| s.span.clone()).next_back() else {
                return;
            };
            let conversations: Vec<(Conversation, Batches)> = next
                .into_iter()
                .map(|(conversation, scheduled)| (conversation, scheduled.which))
                .collect();
            if let Err(error) = self.drain(&conversations).instrument(span).await {
                // Their messages stay buffered: the idle sweeper takes them
                // again.
                tracing::warn!(tenant = %key.0, error = %error, "consolidation failed; the messages stay buffered");
            }
        }
    }

    /// Drains conversations of one subject (see `drain_subject`).
    async fn drain(
        &self,
        conversations: &[(Conversation, Batches)],
    ) -> Result<Outcome, PipelineError> {
        let Some((conversation, _)) = conversations.first() else {
            return Ok(Outcome::default());
        };
        let key = (conversation.tenant.clone(), conversation.subject.clone());
        let subject = {
            let mut subjects = self.subjects.lock().unwrap_or_else(|p| p.into_inner());
            subjects.entry(key.clone()).or_default().clone()
        };
        let outcome = {
            let _subject = subject.lock().await;
            // ...and across processes sharing the buffer (scale-out).
            let _claim = self
                .pipeline
                .buffer
                .claim(&conversation.tenant, &conversation.subject)
                .await?;
            self.pipeline.drain_subject(conversations).await
        };
        {
            // Forget the subject's lock when nobody else holds or waits
            // for it (this map and `subject` are its only owners then).
            let mut subjects = self.subjects.lock().unwrap_or_else(|p| p.into_inner());
            if subjects
                .get(&key)
                .is_some_and(|l| Arc::strong_count(l) == 2)
            {
                subjects.remove(&key);
            }
        }
        let outcome = outcome?;
        if outcome.messages > 0 {
            tracing::info!(
                tenant = %conversation.tenant,
                messages = outcome.messages,
                candidates = outcome.candidates,
                below_threshold = outcome.below_threshold,
                created = outcome.created,
                reinforced = outcome.reinforced,
                superseded = outcome.superseded,
                merged = outcome.merged,
                reviews = outcome.reviews,
                suspected_injections = outcome.suspected_injections,
                relations = outcome.relations,
                llm_calls = outcome.llm_calls,
                llm_tokens = outcome.llm_tokens,
                fallback = outcome.fallback.as_deref().unwrap_or(""),
                "conversation consolidated"
            );
        }
        Ok(outcome)
    }
}

/// Schedules a conversation into its subject's waiting set: asked for
/// everything once, it stays asked for everything, in the trace of the
/// latest record that asked.
fn merge(
    waiting: &mut BTreeMap<Conversation, Scheduled>,
    conversation: Conversation,
    which: Batches,
) {
    let span = tracing::Span::current();
    let entry = waiting.entry(conversation).or_insert(Scheduled {
        which,
        span: span.clone(),
    });
    entry.which = entry.which.max(which);
    entry.span = span;
}

impl Consolidator {
    /// A session of the subject began: what waits in the subject's other
    /// sessions is consolidated, all of it, as if the client had asked at
    /// their end: at once when a worker is free, else with the subject's
    /// next drain (`Inner::ended`). The subject's messages without a
    /// session are not a session, and wait as before.
    async fn end_earlier_sessions(&self, began: &Conversation) -> Result<(), HandlerError> {
        let conversations = self
            .pipeline()
            .buffer
            .conversations(&began.tenant, &began.subject)
            .await
            .map_err(|e| retryable(e.into()))?;
        for conversation in conversations {
            if conversation.session != began.session && !conversation.session.is_empty() {
                Inner::schedule_ended(&self.inner, conversation);
            }
        }
        Ok(())
    }

    /// Buffers the messages of the run so far in one write, and schedules
    /// each conversation that now holds a whole batch, and the sessions
    /// that a session the run began ends. On failure they stay
    /// for the next try (the consumer commits nothing meanwhile).
    async fn buffer_arrived(&self) -> Result<(), HandlerError> {
        let arrived =
            std::mem::take(&mut *self.inner.arrived.lock().unwrap_or_else(|p| p.into_inner()));
        if arrived.is_empty() {
            return Ok(());
        }
        let messages: Vec<(Conversation, EventId, i64)> =
            arrived.iter().map(|(message, _)| message.clone()).collect();
        let waiting = match self.pipeline().buffer.add_many(&messages).await {
            Ok(waiting) => waiting,
            Err(error) => {
                let mut kept = self.inner.arrived.lock().unwrap_or_else(|p| p.into_inner());
                let newer = std::mem::replace(&mut *kept, arrived);
                kept.extend(newer);
                return Err(retryable(error.into()));
            }
        };
        let span_of = |conversation: &Conversation| {
            // The span of the conversation's latest message in the run.
            arrived
                .iter()
                .rev()
                .find(|((c, _, _), _)| c == conversation)
                .map_or_else(tracing::Span::current, |(_, span)| span.clone())
        };
        // Per subject, the session the run began last: it ends the
        // others, those begun earlier in the same run too (the arrivals
        // are in the order of their first message, a subject's in log
        // order).
        let mut newest: Vec<&Conversation> = Vec::new();
        for arrival in &waiting {
            let conversation = &arrival.conversation;
            let policy = self.pipeline().policy(&conversation.tenant);
            if arrival.began && policy.end_earlier_sessions && !conversation.session.is_empty() {
                newest.retain(|c| {
                    (&c.tenant, &c.subject) != (&conversation.tenant, &conversation.subject)
                });
                newest.push(conversation);
            }
            if arrival.waiting >= policy.batch_size {
                self.schedule(conversation.clone(), Batches::Whole)
                    .instrument(span_of(conversation))
                    .await;
            }
        }
        for began in newest {
            if let Err(error) = self
                .end_earlier_sessions(began)
                .instrument(span_of(began))
                .await
            {
                // Nothing is lost: they wait for their idle timeout.
                tracing::warn!(tenant = %began.tenant, error = %error, "cannot look for the sessions a new one ends");
            }
        }
        Ok(())
    }
}

#[async_trait]
impl EventHandler for Consolidator {
    async fn flush(&self) -> Result<(), HandlerError> {
        self.buffer_arrived().await
    }

    async fn handle(&self, event: &RecordedEvent) -> Result<(), HandlerError> {
        let Some(subject) = &event.subject else {
            return Ok(());
        };
        match EventType::parse(&event.event_type) {
            Some(EventType::MessageReceived) => {
                let Some(session) = self.session_token(event, subject).await? else {
                    // Its subject was erased before it got here: nothing to
                    // learn from, and nothing of it may be buffered.
                    return Ok(());
                };
                let conversation = Conversation {
                    tenant: event.tenant.clone(),
                    subject: subject.clone(),
                    session,
                };
                // Sealed, as delivered: its drain opens it again.
                self.pipeline().delivered.keep(event.clone());
                self.inner
                    .arrived
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push((
                        (conversation, event.event_id, event.global_position),
                        tracing::Span::current(),
                    ));
                Ok(())
            }
            Some(EventType::ConsolidationRequested) => {
                // The request covers what arrived before it in this run.
                self.buffer_arrived().await?;
                // Through the log, not `DomainEvent::decode`: the session
                // is sealed and only the subject's key opens it.
                let decoded =
                    self.pipeline()
                        .log
                        .decode(event.clone())
                        .await
                        .map_err(|e| match e {
                            LogError::Decode(_) => HandlerError::Permanent(e.to_string()),
                            other => retryable(other.into()),
                        })?;
                let DomainEvent::ConsolidationRequested(request) = decoded.event else {
                    return Err(HandlerError::Permanent(
                        "undecodable ConsolidationRequested".into(),
                    ));
                };
                let conversations = self
                    .pipeline()
                    .buffer
                    .conversations(&event.tenant, subject)
                    .await
                    .map_err(|e| retryable(e.into()))?;
                let wanted_session = match &request.session {
                    None => None,
                    Some(session) => Some(
                        self.pipeline()
                            .log
                            .cipher()
                            .live_token(
                                &event.tenant,
                                subject,
                                TokenPurpose::Session,
                                session.as_str(),
                            )
                            .await
                            .map_err(|e| retryable(LogError::from(e).into()))?
                            .unwrap_or_default(),
                    ),
                };
                for conversation in conversations {
                    let wanted = wanted_session
                        .as_ref()
                        .is_none_or(|token| *token == conversation.session);
                    if wanted {
                        self.schedule(conversation, Batches::All).await;
                    }
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}
