//! The forgetter executes erasures: on `ErasureRequested` it destroys the
//! subject's data key (crypto-shredding every event that carried its
//! content, in the log and on the bus), deletes the subject from every
//! projection store registered as an [`ErasureTarget`], and appends
//! `SubjectErased` with a receipt of what was destroyed where. It also runs
//! the scheduled retention pass ([`retention`]): decay by the tenant's
//! policy, archiving and expiry, fed by retrieval access signals ([`usage`]).
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

pub struct ErasureExecutor {
    log: SealedLog,
    targets: Vec<Arc<dyn ErasureTarget>>,
}

impl ErasureExecutor {
    pub fn new(log: SealedLog, targets: Vec<Arc<dyn ErasureTarget>>) -> Self {
        ErasureExecutor { log, targets }
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
        for target in &self.targets {
            steps.push(
                target
                    .erase_subject(tenant, subject)
                    .await
                    .map_err(|e| retry(e.to_string()))?,
            );
        }
        let shredded = self
            .log
            .store()
            .read_subject(tenant, subject)
            .await
            .map_err(|e| retry(e.to_string()))?
            .iter()
            .filter(|e| e.payload.to_string().contains("\"$sealed\""))
            .count() as u64;
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
