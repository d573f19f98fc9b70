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

pub mod budget;
pub mod buffer;
pub mod injection;
pub mod llm;
pub mod pipeline;
pub mod rules;
pub mod strategy;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::Utc;
use mnemo_bus::{EventHandler, HandlerError};
use mnemo_crypto::TokenPurpose;
use mnemo_domain::events::EventType;
use mnemo_domain::{DomainEvent, RecordedEvent, SubjectId};
use mnemo_event_store::sealed::LogError;
use tokio::sync::Mutex;

use crate::buffer::Conversation;
use crate::pipeline::{Outcome, Pipeline, PipelineError};

pub struct Consolidator {
    pipeline: Pipeline,
    /// One consolidation at a time: the sweeper and the consumer never work
    /// on the same conversation at once (the result would be the same, but
    /// the work would be done twice).
    running: Mutex<()>,
}

fn retryable(error: PipelineError) -> HandlerError {
    HandlerError::Retryable(error.to_string())
}

impl Consolidator {
    pub fn new(pipeline: Pipeline) -> Self {
        Consolidator {
            pipeline,
            running: Mutex::new(()),
        }
    }

    pub fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }

    pub async fn drain(&self, conversation: &Conversation) -> Result<Outcome, PipelineError> {
        let _running = self.running.lock().await;
        // ...and across processes sharing the buffer (scale-out).
        let _claim = self.pipeline.buffer.claim(conversation).await?;
        let outcome = self.pipeline.drain(conversation).await?;
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

    /// Consolidates conversations that went quiet, every `tick`, forever.
    pub async fn run_idle_sweeper(self: Arc<Self>, tick: Duration) {
        loop {
            tokio::time::sleep(tick).await;
            if let Err(error) = self.sweep_idle().await {
                tracing::warn!(error = %error, "idle consolidation sweep failed");
            }
        }
    }

    pub async fn sweep_idle(&self) -> Result<usize, PipelineError> {
        let now = Utc::now();
        let shortest = self.shortest_idle_timeout();
        let quiet_since = now - chrono::Duration::from_std(shortest).unwrap_or_default();
        let mut drained = 0;
        for (conversation, last) in self.pipeline.buffer.idle(quiet_since).await? {
            let timeout = self.pipeline.policy(&conversation.tenant).idle_timeout;
            if (now - last).to_std().unwrap_or_default() >= timeout {
                self.drain(&conversation).await?;
                drained += 1;
            }
        }
        Ok(drained)
    }

    /// The keyed token of a posted message's session ("" when it has
    /// none), or `None` when the message reads as erased: its subject was
    /// erased before the message got here.
    async fn session_token(
        &self,
        event: &RecordedEvent,
        subject: &SubjectId,
    ) -> Result<Option<String>, HandlerError> {
        let log = &self.pipeline.log;
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
        let policies = &self.pipeline.policies;
        policies
            .tenants
            .values()
            .map(|p| p.idle_timeout)
            .fold(policies.default.idle_timeout, Duration::min)
    }
}

#[async_trait]
impl EventHandler for Consolidator {
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
                let waiting = self
                    .pipeline
                    .buffer
                    .add(&conversation, event.event_id, event.global_position)
                    .await
                    .map_err(|e| retryable(e.into()))?;
                if waiting >= self.pipeline.policy(&event.tenant).batch_size {
                    self.drain(&conversation).await.map_err(retryable)?;
                }
                Ok(())
            }
            Some(EventType::ConsolidationRequested) => {
                // Through the log, not `DomainEvent::decode`: the session
                // is sealed and only the subject's key opens it.
                let decoded =
                    self.pipeline
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
                    .pipeline
                    .buffer
                    .conversations(&event.tenant, subject)
                    .await
                    .map_err(|e| retryable(e.into()))?;
                let wanted_session = match &request.session {
                    None => None,
                    Some(session) => Some(
                        self.pipeline
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
                        self.drain(&conversation).await.map_err(retryable)?;
                    }
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}
