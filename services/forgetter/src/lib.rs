//! The forgetter executes erasures: on `ErasureRequested` it destroys the
//! subject's data key (crypto-shredding every event that carried its
//! content, in the log and on the bus), deletes the subject from every
//! projection store registered as an [`ErasureTarget`], and appends
//! `SubjectErased` with a receipt of what was destroyed where. It also runs
//! the scheduled retention pass ([`retention`]): decay by the tenant's
//! policy, archiving and expiry, fed by retrieval access signals ([`usage`]).
//!
//! The receipt has one step per store, in the order they were done:
//! `subject_keys`, `event_log`, `bus`, then each target's (`vector_index`,
//! `pipeline_state`, `memory_read_model` as `mnemo-app` registers them). A
//! step says plainly what remains where and until when, if anything does.
//!
//! Invariant: the handler is idempotent; a redelivered request whose receipt
//! exists does nothing, and the receipt's event id is derived from the
//! erasure id so a crash between steps cannot produce two receipts.

pub mod legacy;
pub mod retention;
pub mod targets;
pub mod usage;

use std::sync::Arc;

use async_trait::async_trait;
use chrono::Utc;
use mnemo_bus::{EventHandler, HandlerError};
use mnemo_domain::events::{streams, ErasureReceipt, ErasureStep, SubjectErased};
use mnemo_domain::{
    DomainEvent, EventId, EventMetadata, EventType, RecordedEvent, SubjectId, TenantId,
};
use mnemo_event_store::sealed::{Pending, SealedLog};
use mnemo_event_store::ExpectedVersion;

/// A store holding subject data outside the log (read model, vector index,
/// caches). Deleting must be idempotent.
#[async_trait]
pub trait ErasureTarget: Send + Sync + 'static {
    /// Deletes everything the store holds about the subject and says what.
    async fn erase_subject(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<ErasureStep, ErasureTargetError>;
}

/// A store that could not delete a subject: the erasure is retried.
#[derive(Debug, thiserror::Error)]
#[error("erasing the subject from {store} failed: {source}")]
pub struct ErasureTargetError {
    /// The store's name in the receipt.
    pub store: &'static str,
    #[source]
    pub source: Box<dyn std::error::Error + Send + Sync>,
}

impl ErasureTargetError {
    pub fn new(
        store: &'static str,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        ErasureTargetError {
            store,
            source: Box::new(source),
        }
    }

    /// A stable code for logs and the dead-letter record.
    pub fn code(&self) -> &'static str {
        "erasure_target_failed"
    }
}

/// Which bus carries the log's events: where the copies of a subject's
/// events stay after an erasure, for the receipt's `bus` step. Either way
/// they hold the same sealed payload as the log, unreadable once the key
/// is destroyed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BusCopies {
    /// The in-process bus (the embedded mode): its records are rows of the
    /// data dir's SQLite database, kept until every consumer group has
    /// handled them (`InProcessBus::prune`).
    InProcess,
    /// Kafka: records stay on the brokers until the topics' retention
    /// deletes them. `topics` are their names on the cluster.
    Kafka { topics: Vec<String> },
}

impl BusCopies {
    fn note(&self) -> String {
        match self {
            BusCopies::InProcess => "the relay published each of these events to the in-process \
                 bus with the log's sealed payload; those records no longer decrypt and stay in \
                 the bus_records table of the data dir's SQLite database until every consumer \
                 group has handled them (the bus deletes those every minute)"
                .to_owned(),
            BusCopies::Kafka { topics } => format!(
                "the relay published each of these events to Kafka with the log's sealed \
                 payload; those records no longer decrypt and stay on the brokers until the \
                 retention of {} (retention.ms, retention.bytes; Kafka's default is 7 days) \
                 deletes the log segments holding them",
                topics.join(", ")
            ),
        }
    }
}

pub struct ErasureExecutor {
    log: SealedLog,
    bus: BusCopies,
    targets: Vec<Arc<dyn ErasureTarget>>,
}

impl ErasureExecutor {
    /// `targets` run in this order, after the key is destroyed; a target
    /// that must see every other delete first (the SQLite read model, which
    /// truncates the WAL) goes last.
    pub fn new(log: SealedLog, bus: BusCopies, targets: Vec<Arc<dyn ErasureTarget>>) -> Self {
        ErasureExecutor { log, bus, targets }
    }

    async fn execute(&self, event: &RecordedEvent) -> Result<(), HandlerError> {
        let retry = |e: String| HandlerError::Retryable(e);
        let decoded = self
            .log
            .decode(event.clone())
            .await
            .map_err(|e| retry(e.to_string()))?;
        let DomainEvent::ErasureRequested(request) = decoded.event else {
            return Ok(());
        };
        let tenant = &event.tenant;
        let subject = &request.subject;
        let stream = streams::erasure(&request.erasure_id);
        let existing = self
            .log
            .read_stream(tenant, &stream)
            .await
            .map_err(|e| retry(e.to_string()))?;
        if existing
            .iter()
            .any(|d| matches!(d.event, DomainEvent::SubjectErased(_)))
        {
            return Ok(());
        }

        let mut steps = Vec::new();
        // The key first: from this moment nothing of the subject's content
        // in the log or on the bus can be read, whatever fails after.
        let destroyed = self
            .log
            .cipher()
            .destroy(tenant, subject)
            .await
            .map_err(|e| retry(e.to_string()))?;
        steps.push(ErasureStep {
            store: "subject_keys".to_owned(),
            action: "data_keys_destroyed".to_owned(),
            count: u64::from(destroyed),
            note: None,
        });
        let shredded = self
            .log
            .store()
            .read_subject(tenant, subject)
            .await
            .map_err(|e| retry(e.to_string()))?
            .iter()
            .filter(|e| e.payload.to_string().contains("\"$sealed\""))
            .count() as u64;
        steps.push(ErasureStep {
            store: "event_log".to_owned(),
            action: "events_shredded".to_owned(),
            count: shredded,
            note: Some(
                "the events stay in the append-only log as history (ids, types, times, actors \
                 and the fields that are not content, such as kinds and tags); the subject's \
                 content in them is sealed under the destroyed key and can no longer be read"
                    .to_owned(),
            ),
        });
        steps.push(ErasureStep {
            store: "bus".to_owned(),
            action: "records_shredded".to_owned(),
            count: shredded,
            note: Some(self.bus.note()),
        });
        for target in &self.targets {
            steps.push(
                target
                    .erase_subject(tenant, subject)
                    .await
                    .map_err(|e| retry(e.to_string()))?,
            );
        }
        let receipt = ErasureReceipt {
            erasure_id: request.erasure_id,
            tenant: tenant.clone(),
            subject: subject.clone(),
            requested_at: event.recorded_at,
            completed_at: Utc::now(),
            steps,
            events_shredded: shredded,
        };
        let receipt_event_id =
            EventId::derived(&["erasure-receipt", &request.erasure_id.to_string()]);
        self.log
            .append_one(
                tenant,
                &stream,
                ExpectedVersion::Any,
                Pending {
                    event_id: receipt_event_id,
                    subject: Some(subject.clone()),
                    event: DomainEvent::SubjectErased(SubjectErased { receipt }),
                    metadata: EventMetadata {
                        actor: "mnemo-forgetter".to_owned(),
                        correlation_id: event.metadata.correlation_id.clone(),
                        causation_id: Some(event.event_id),
                        traceparent: event.metadata.traceparent.clone(),
                    },
                },
            )
            .await
            .map_err(|e| retry(e.to_string()))?;
        tracing::info!(tenant = %tenant, erasure_id = %request.erasure_id, events_shredded = shredded, "subject erased");
        Ok(())
    }
}

#[async_trait]
impl EventHandler for ErasureExecutor {
    async fn handle(&self, event: &RecordedEvent) -> Result<(), HandlerError> {
        if !event.is(EventType::ErasureRequested) {
            return Ok(());
        }
        self.execute(event).await
    }
}
