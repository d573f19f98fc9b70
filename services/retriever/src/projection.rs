//! The memory projection: memory events in, read-model rows out. For each
//! event it re-reads and folds the memory's whole stream, which makes the
//! handler idempotent and indifferent to redelivery or reordering: the row
//! always becomes the stream's latest state.

use std::sync::Arc;

use async_trait::async_trait;
use mnemo_bus::{EventHandler, HandlerError};
use mnemo_domain::{Memory, RecordedEvent};
use mnemo_event_store::sealed::SealedLog;
use mnemo_read_model::MemoryReadModel;

pub struct MemoryProjection {
    log: SealedLog,
    read_model: Arc<dyn MemoryReadModel>,
}

impl MemoryProjection {
    pub fn new(log: SealedLog, read_model: Arc<dyn MemoryReadModel>) -> Self {
        MemoryProjection { log, read_model }
    }
}

fn retryable(error: impl std::fmt::Display) -> HandlerError {
    HandlerError::Retryable(error.to_string())
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
        let memory = Memory::fold(
            subject,
            stream
                .iter()
                .map(|d| (&d.event, d.recorded.stream_version, d.recorded.recorded_at)),
        );
        let Some(memory) = memory else {
            return Ok(());
        };
        if memory.content.is_erased() {
            // The subject was erased: never bring its row back.
            self.read_model
                .remove(&event.tenant, &memory.id)
                .await
                .map_err(retryable)?;
            return Ok(());
        }
        self.read_model
            .upsert(&event.tenant, &memory)
            .await
            .map_err(retryable)
    }
}
