//! The wire form of a log event on the bus. The payload stays sealed: a bus
//! record carries the same ciphertext as the log, so destroying a subject's
//! key also makes every copy on the bus unreadable.

use chrono::{DateTime, Utc};
use mnemo_domain::{EventId, EventMetadata, RecordedEvent, SubjectId, TenantId};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventEnvelope {
    pub global_position: i64,
    pub event_id: EventId,
    pub tenant: TenantId,
    pub stream_id: String,
    pub stream_version: u64,
    pub subject: Option<SubjectId>,
    pub event_type: String,
    pub schema_version: u16,
    pub payload: serde_json::Value,
    pub metadata: EventMetadata,
    pub recorded_at: DateTime<Utc>,
}

impl From<RecordedEvent> for EventEnvelope {
    fn from(e: RecordedEvent) -> Self {
        EventEnvelope {
            global_position: e.global_position,
            event_id: e.event_id,
            tenant: e.tenant,
            stream_id: e.stream_id,
            stream_version: e.stream_version,
            subject: e.subject,
            event_type: e.event_type,
            schema_version: e.schema_version,
            payload: e.payload,
            metadata: e.metadata,
            recorded_at: e.recorded_at,
        }
    }
}

impl From<EventEnvelope> for RecordedEvent {
    fn from(e: EventEnvelope) -> Self {
        RecordedEvent {
            global_position: e.global_position,
            event_id: e.event_id,
            tenant: e.tenant,
            stream_id: e.stream_id,
            stream_version: e.stream_version,
            subject: e.subject,
            event_type: e.event_type,
            schema_version: e.schema_version,
            payload: e.payload,
            metadata: e.metadata,
            recorded_at: e.recorded_at,
        }
    }
}

/// The record key: tenant and subject (or stream when there is no subject),
/// so a subject's events stay ordered on one partition.
pub fn record_key(event: &RecordedEvent) -> String {
    match &event.subject {
        Some(subject) => format!("{}/{}", event.tenant, subject),
        None => format!("{}/{}", event.tenant, event.stream_id),
    }
}
