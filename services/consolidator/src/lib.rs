//! The consolidator turns conversations into memories. In this release it
//! consumes `MessageReceived` from the bus and keeps the per-(tenant,
//! subject, session) count of messages waiting for consolidation; the
//! extraction strategies (rule-based, then LLM) plug in behind the same
//! consumer and emit memory events only.
//!
//! It reads only the event envelope (ids and session), never the sealed
//! content, so it needs no subject key until it extracts.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use mnemo_bus::{EventHandler, HandlerError};
use mnemo_domain::{EventId, RecordedEvent};

/// (tenant, subject, session) of a conversation.
pub type ConversationKey = (String, String, String);

#[derive(Default)]
pub struct MessageBuffer {
    pending: Mutex<HashMap<ConversationKey, Vec<EventId>>>,
}

impl MessageBuffer {
    pub fn new() -> Self {
        Self::default()
    }

    /// Message event ids waiting for consolidation in one conversation.
    pub fn pending(&self, key: &ConversationKey) -> Vec<EventId> {
        self.pending
            .lock()
            .expect("buffer lock")
            .get(key)
            .cloned()
            .unwrap_or_default()
    }
}

#[async_trait]
impl EventHandler for MessageBuffer {
    async fn handle(&self, event: &RecordedEvent) -> Result<(), HandlerError> {
        if event.event_type != "MessageReceived" {
            return Ok(());
        }
        let Some(subject) = &event.subject else {
            return Err(HandlerError::Permanent("message without subject".into()));
        };
        let session = event.payload["session"].as_str().unwrap_or("").to_owned();
        let key = (event.tenant.to_string(), subject.to_string(), session);
        let mut pending = self.pending.lock().expect("buffer lock");
        let ids = pending.entry(key).or_default();
        // Delivery is at least once: a redelivered message is not counted twice.
        if !ids.contains(&event.event_id) {
            ids.push(event.event_id);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemo_domain::{EventMetadata, SubjectId, TenantId};

    fn message(session: &str) -> RecordedEvent {
        RecordedEvent {
            global_position: 1,
            event_id: EventId::new(),
            tenant: TenantId::parse("t").unwrap(),
            stream_id: "conversation-s".into(),
            stream_version: 1,
            subject: Some(SubjectId::parse("s").unwrap()),
            event_type: "MessageReceived".into(),
            schema_version: 1,
            payload: serde_json::json!({"session": session, "content": {"$sealed": {}}}),
            metadata: EventMetadata::default(),
            recorded_at: chrono::Utc::now(),
        }
    }

    #[tokio::test]
    async fn buffers_per_conversation_and_ignores_redelivery() {
        let buffer = MessageBuffer::new();
        let first = message("a");
        buffer.handle(&first).await.unwrap();
        buffer.handle(&first).await.unwrap();
        buffer.handle(&message("b")).await.unwrap();
        let key = ("t".to_owned(), "s".to_owned(), "a".to_owned());
        assert_eq!(buffer.pending(&key), vec![first.event_id]);
    }
}
