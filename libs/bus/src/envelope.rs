//! The wire form of a log event on the bus: the recorded event itself, its
//! payload still sealed. A bus record carries the same ciphertext as the
//! log, so destroying a subject's key also makes every copy on the bus
//! unreadable.

use mnemo_domain::{RecordedEvent, SubjectId, TenantId};

/// What a bus record's payload holds (JSON).
pub type EventEnvelope = RecordedEvent;

/// The record key: tenant and subject (or stream when there is no subject),
/// so a subject's events stay ordered on one partition.
pub fn record_key(event: &RecordedEvent) -> String {
    key_of(&event.tenant, event.subject.as_ref(), &event.stream_id)
}

/// [`record_key`] of an event's parts.
pub fn key_of(tenant: &TenantId, subject: Option<&SubjectId>, stream_id: &str) -> String {
    match subject {
        Some(subject) => format!("{tenant}/{subject}"),
        None => format!("{tenant}/{stream_id}"),
    }
}
