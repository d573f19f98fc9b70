//! The event log port ([`EventStore`]), its SQLite and PostgreSQL adapters
//! and the contract suite every adapter runs.
//!
//! The log is the source of truth: append-only (the database itself refuses
//! UPDATE and DELETE), optimistic concurrency per stream, idempotent on
//! `event_id`, and a global position that gives commit order. Every call
//! takes a tenant except [`EventStore::read_all`], which only the relay and
//! projection rebuilds use.
//!
//! The store refuses a payload that still holds clear subject text: sealing
//! happens before an append, never after.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use mnemo_domain::{EventId, NewEvent, RecordedEvent, SubjectId, TenantId};

#[cfg(feature = "postgres")]
pub mod postgres;
pub mod sealed;
#[cfg(feature = "sqlite")]
pub mod sqlite;
#[cfg(feature = "testsuite")]
pub mod testsuite;

/// An event as the relay publishes it ([`EventStore::read_all_encoded`]):
/// what it routes and keys the record by, and the envelope, the
/// [`RecordedEvent`] serialized as JSON (the event's wire form on the bus,
/// its payload still sealed).
#[derive(Debug, Clone, PartialEq)]
pub struct EncodedEvent {
    pub global_position: i64,
    pub event_id: EventId,
    pub tenant: TenantId,
    pub stream_id: String,
    pub subject: Option<SubjectId>,
    pub event_type: String,
    /// The W3C trace context the event's metadata carries.
    pub traceparent: Option<String>,
    pub envelope: Vec<u8>,
}

impl EncodedEvent {
    /// The encoding of a decoded event.
    pub fn of(event: &RecordedEvent) -> Result<Self, EventStoreError> {
        Ok(EncodedEvent {
            global_position: event.global_position,
            event_id: event.event_id,
            tenant: event.tenant.clone(),
            stream_id: event.stream_id.clone(),
            subject: event.subject.clone(),
            event_type: event.event_type.clone(),
            traceparent: event.metadata.traceparent.clone(),
            envelope: serde_json::to_vec(event)
                .map_err(|e| EventStoreError::Corrupt(format!("unencodable event: {e}")))?,
        })
    }
}

/// What the writer believes the stream's version is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExpectedVersion {
    /// No check: append at the end (conversation streams).
    Any,
    /// The stream must not exist yet.
    NoStream,
    /// The stream's last event must have this version.
    Exact(u64),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppendedEvent {
    pub event_id: EventId,
    pub global_position: i64,
    pub stream_version: u64,
    /// True when the event was already in the log (an idempotent retry).
    pub duplicate: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppendResult {
    pub events: Vec<AppendedEvent>,
    /// The stream's version after the append.
    pub stream_version: u64,
}

/// One stream's events in an [`EventStore::append_streams`].
#[derive(Debug, Clone)]
pub struct StreamAppend {
    pub stream_id: String,
    pub expected: ExpectedVersion,
    pub events: Vec<NewEvent>,
}

/// Filters for the audit query; all optional and combined with AND.
#[derive(Debug, Clone, Default)]
pub struct EventQuery {
    pub subject: Option<SubjectId>,
    pub actor: Option<String>,
    pub event_types: Vec<String>,
    pub stream_id: Option<String>,
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
    /// Keyset cursor: only events after this position.
    pub after_position: Option<i64>,
    pub limit: u32,
}

#[derive(Debug, thiserror::Error)]
pub enum EventStoreError {
    #[error("stream {stream_id} is at version {actual}, expected {expected:?}")]
    Conflict {
        stream_id: String,
        expected: ExpectedVersion,
        actual: u64,
    },
    #[error("event id {0} already exists in another stream or tenant")]
    EventIdTaken(EventId),
    #[error("payload of {event_type} holds clear subject text: seal it before appending")]
    UnsealedPayload { event_type: String },
    #[error("an append needs at least one event")]
    EmptyAppend,
    #[error("stored event is corrupt: {0}")]
    Corrupt(String),
    #[error("event store backend failed: {0}")]
    Backend(String),
}

impl EventStoreError {
    pub fn code(&self) -> &'static str {
        match self {
            EventStoreError::Conflict { .. } => "version_conflict",
            EventStoreError::EventIdTaken(_) => "event_id_taken",
            EventStoreError::UnsealedPayload { .. } => "unsealed_payload",
            EventStoreError::EmptyAppend => "empty_append",
            EventStoreError::Corrupt(_) => "corrupt_event",
            EventStoreError::Backend(_) => "event_store_unavailable",
        }
    }
}

#[async_trait]
pub trait EventStore: Send + Sync + 'static {
    /// Appends events to one stream atomically. Events whose id is already in
    /// the log are reported as duplicates and not written again; if every
    /// event is a duplicate the call succeeds whatever `expected` says, so a
    /// retried request is harmless.
    async fn append(
        &self,
        tenant: &TenantId,
        stream_id: &str,
        expected: ExpectedVersion,
        events: Vec<NewEvent>,
    ) -> Result<AppendResult, EventStoreError>;

    /// Appends to several streams of one tenant in one transaction: every
    /// event or none. Each stream follows [`EventStore::append`]'s rules
    /// (duplicates reported, `expected` checked) and sees the appends
    /// before it, so one stream may appear twice. One result per append,
    /// in order. What one unit of work writes across streams (a
    /// consolidated batch: its memories, reviews, relations and record)
    /// commits once instead of once per stream.
    async fn append_streams(
        &self,
        tenant: &TenantId,
        appends: Vec<StreamAppend>,
    ) -> Result<Vec<AppendResult>, EventStoreError>;

    /// A stream's events in version order (empty when it does not exist).
    async fn read_stream(
        &self,
        tenant: &TenantId,
        stream_id: &str,
    ) -> Result<Vec<RecordedEvent>, EventStoreError>;

    /// The events of several streams of the tenant: each stream's in
    /// version order, the streams in the order asked (one asked twice comes
    /// once, one that does not exist adds nothing). A projection reads the
    /// streams a run of records names with one call, not one per record.
    async fn read_streams(
        &self,
        tenant: &TenantId,
        stream_ids: &[String],
    ) -> Result<Vec<RecordedEvent>, EventStoreError>;

    /// The events of several streams, each only after its version (0: the
    /// whole stream), grouped by stream in the order asked and in version
    /// order within each: what a reader that holds each stream's fold up
    /// to a version still needs; a stream asked twice is read once, after
    /// the lower version. The default reads the whole streams and drops
    /// the rest.
    async fn read_streams_after(
        &self,
        tenant: &TenantId,
        streams: &[(String, u64)],
    ) -> Result<Vec<RecordedEvent>, EventStoreError> {
        let unique = each_stream_once(streams);
        let ids: Vec<String> = unique.iter().map(|(id, _)| id.clone()).collect();
        let after: std::collections::HashMap<&str, u64> =
            unique.iter().map(|(id, v)| (id.as_str(), *v)).collect();
        Ok(self
            .read_streams(tenant, &ids)
            .await?
            .into_iter()
            .filter(|e| e.stream_version > after.get(e.stream_id.as_str()).copied().unwrap_or(0))
            .collect())
    }

    /// The events of a stream whose version is in `from..=to`, in version
    /// order: a message and its neighbours in a conversation, without
    /// reading the whole conversation (an episode's previous turn, a search
    /// result's window).
    async fn read_stream_range(
        &self,
        tenant: &TenantId,
        stream_id: &str,
        from: u64,
        to: u64,
    ) -> Result<Vec<RecordedEvent>, EventStoreError>;

    /// Every event about a subject, in log order.
    async fn read_subject(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<Vec<RecordedEvent>, EventStoreError>;

    /// One event by id, within the tenant.
    async fn get_event(
        &self,
        tenant: &TenantId,
        event_id: &EventId,
    ) -> Result<Option<RecordedEvent>, EventStoreError>;

    /// Events by id, within the tenant, in the order of `event_ids`; an id
    /// the tenant has no event for is left out, and one asked for twice
    /// comes once. A search reads every episode it found with one call,
    /// not one round trip per hit.
    async fn get_events(
        &self,
        tenant: &TenantId,
        event_ids: &[EventId],
    ) -> Result<Vec<RecordedEvent>, EventStoreError>;

    /// The tenant's events matching the query, in log order.
    async fn query(
        &self,
        tenant: &TenantId,
        query: &EventQuery,
    ) -> Result<Vec<RecordedEvent>, EventStoreError>;

    /// All tenants' events after a position, in commit order, without gaps.
    /// System use only: the relay and projection rebuilds.
    async fn read_all(
        &self,
        after_position: i64,
        limit: u32,
    ) -> Result<Vec<RecordedEvent>, EventStoreError>;

    /// [`EventStore::read_all`] as the relay publishes it: each event with
    /// its wire form on the bus already encoded. The default encodes what
    /// `read_all` returns; a store that keeps the payload as JSON text may
    /// put that text in the envelope as it is, without parsing it.
    async fn read_all_encoded(
        &self,
        after_position: i64,
        limit: u32,
    ) -> Result<Vec<EncodedEvent>, EventStoreError> {
        self.read_all(after_position, limit)
            .await?
            .iter()
            .map(EncodedEvent::of)
            .collect()
    }

    /// Redacts what events of the subject stored before tags, session ids
    /// and message ids were sealed still hold in plain form: those fields
    /// become `{"$erased": true}` and the correlation id is dropped. The one
    /// change the log accepts (its triggers refuse any other), and only an
    /// erasure makes it, after the subject's key is destroyed. Returns how
    /// many events changed; events already sealed are untouched.
    async fn redact_legacy(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<u64, EventStoreError>;

    /// The highest committed position (0 for an empty log).
    async fn head_position(&self) -> Result<i64, EventStoreError>;

    /// What the tenant's events take in the log: the bytes of their
    /// payloads and metadata as stored (sealed, and on PostgreSQL after its
    /// own compression). The storage quota is checked against it. One scan
    /// of the tenant's rows: callers cache it.
    async fn stored_bytes(&self, tenant: &TenantId) -> Result<u64, EventStoreError>;

    /// How many of the tenant's events of `event_type` were recorded at or
    /// after `since`: the messages it posted today, which the daily quota
    /// counts from the log so that a restart or a second ingest replica
    /// does not start the day afresh. Found from the tenant's first event
    /// at or after `since` by time, then counted from its position in the
    /// (tenant, type, position) index: two index ranges (SQLite reads no
    /// row for them), but a count of the day's events all the same, so
    /// callers cache it.
    async fn count_since(
        &self,
        tenant: &TenantId,
        event_type: &str,
        since: DateTime<Utc>,
    ) -> Result<u64, EventStoreError>;

    /// Returns once the head is past `after_position` or the timeout passed,
    /// so the relay can sleep without polling hard.
    async fn wait_for_append(&self, after_position: i64, timeout: Duration);
}

/// What an append to one stream may do, given each event's row when its
/// id is in the stream already (`existing`: position and version) and the
/// stream's current version: `Ok(Some(result))` when every event is a
/// duplicate (nothing to write, whatever `expected` says, so a retried
/// request is harmless), `Ok(None)` to write the new ones, or the
/// conflict. Both adapters decide by this one rule.
pub(crate) fn check_stream(
    stream_id: &str,
    expected: ExpectedVersion,
    events: &[NewEvent],
    existing: &[Option<(i64, u64)>],
    current: u64,
) -> Result<Option<AppendResult>, EventStoreError> {
    if existing.iter().all(Option::is_some) {
        let events = events
            .iter()
            .zip(existing)
            .map(|(event, found)| {
                let (position, version) = found.expect("checked above");
                AppendedEvent {
                    event_id: event.event_id,
                    global_position: position,
                    stream_version: version,
                    duplicate: true,
                }
            })
            .collect();
        return Ok(Some(AppendResult {
            events,
            stream_version: current,
        }));
    }
    let conflict = || EventStoreError::Conflict {
        stream_id: stream_id.to_owned(),
        expected,
        actual: current,
    };
    let some_duplicates = existing.iter().any(Option::is_some);
    match expected {
        ExpectedVersion::Any => Ok(None),
        // A partial retry under a version check cannot be told apart from
        // a racing writer: refuse rather than guess.
        _ if some_duplicates => Err(conflict()),
        ExpectedVersion::NoStream if current != 0 => Err(conflict()),
        ExpectedVersion::Exact(version) if version != current => Err(conflict()),
        _ => Ok(None),
    }
}

/// Moves the head an adapter publishes to the last position a committed
/// append wrote (never back: a slower commit may report an older one), so
/// `wait_for_append` wakes.
pub(crate) fn advance_head(head: &tokio::sync::watch::Sender<i64>, results: &[AppendResult]) {
    let last = results
        .iter()
        .flat_map(|result| &result.events)
        .map(|e| e.global_position)
        .max();
    if let Some(last) = last {
        head.send_if_modified(|head| {
            let moved = last > *head;
            if moved {
                *head = last;
            }
            moved
        });
    }
}

/// What every append refuses before it touches the store: nothing to
/// append, or subject data in clear.
pub(crate) fn check_appends(appends: &[StreamAppend]) -> Result<(), EventStoreError> {
    if appends.is_empty() || appends.iter().any(|a| a.events.is_empty()) {
        return Err(EventStoreError::EmptyAppend);
    }
    let clear = appends
        .iter()
        .flat_map(|a| &a.events)
        .find(|e| holds_clear_subject_data(e));
    if let Some(event) = clear {
        return Err(EventStoreError::UnsealedPayload {
            event_type: event.event_type.clone(),
        });
    }
    Ok(())
}

/// `ids` without repeats, in their first order: what
/// [`EventStore::get_events`] asks the database for.
pub(crate) fn unique_in_order(ids: &[EventId]) -> Vec<EventId> {
    let mut seen = std::collections::HashSet::with_capacity(ids.len());
    ids.iter().copied().filter(|id| seen.insert(*id)).collect()
}

/// `events` (of these streams, in any order of streams) grouped by stream
/// in the order of `wanted` (unique), each stream's in version order.
pub(crate) fn in_stream_order(wanted: &[String], events: Vec<RecordedEvent>) -> Vec<RecordedEvent> {
    let mut by_stream: std::collections::HashMap<String, Vec<RecordedEvent>> =
        std::collections::HashMap::with_capacity(wanted.len());
    for event in events {
        by_stream
            .entry(event.stream_id.clone())
            .or_default()
            .push(event);
    }
    let mut ordered = Vec::new();
    // A stream asked twice was removed at its first mention.
    for stream in wanted {
        if let Some(mut events) = by_stream.remove(stream) {
            events.sort_by_key(|e| e.stream_version);
            ordered.extend(events);
        }
    }
    ordered
}

/// `streams` with each stream once, at its first mention, from the lowest
/// version asked for it: a join of the wanted streams with the events
/// would return a stream's events once per mention.
pub(crate) fn each_stream_once(streams: &[(String, u64)]) -> Vec<(String, u64)> {
    let mut from: std::collections::HashMap<&str, u64> =
        std::collections::HashMap::with_capacity(streams.len());
    for (stream_id, after) in streams {
        from.entry(stream_id.as_str())
            .and_modify(|v| *v = (*v).min(*after))
            .or_insert(*after);
    }
    streams
        .iter()
        .filter_map(|(stream_id, _)| Some((stream_id.clone(), from.remove(stream_id.as_str())?)))
        .collect()
}

/// `events` (found by id, in any order) in the order of `wanted`.
pub(crate) fn in_order_of(wanted: &[EventId], events: Vec<RecordedEvent>) -> Vec<RecordedEvent> {
    let mut by_id: std::collections::HashMap<EventId, RecordedEvent> =
        events.into_iter().map(|e| (e.event_id, e)).collect();
    wanted.iter().filter_map(|id| by_id.remove(id)).collect()
}

/// A stream version as SQL binds it: versions are counted from 1 and never
/// near `i64::MAX`, so a larger bound only means "to the end".
pub(crate) fn version_bound(version: u64) -> i64 {
    i64::try_from(version).unwrap_or(i64::MAX)
}

/// Whether an event about to be appended still holds subject data in the
/// clear: a `$text` or `$value` marker that was not sealed, or a field that
/// must be a sealed value (tags, session and message ids) in its plain form.
/// Both stores refuse such an event.
pub(crate) fn holds_clear_subject_data(event: &NewEvent) -> bool {
    mnemo_crypto::contains_clear_text(&event.payload)
        || !mnemo_domain::sealed::plain_fields(&event.event_type, &event.payload).is_empty()
}

/// The SQL condition that selects events stored before their subject
/// fields were sealed (the versions `mnemo_domain::sealed` reads in plain
/// form), for [`EventStore::redact_legacy`].
pub(crate) const LEGACY_PLAIN_EVENTS: &str =
    "((event_type IN ('MessageReceived', 'MemoryCreated', \
     'MemoryRevised', 'ReviewResolved', 'ConsolidationRequested') AND schema_version < 2) \
     OR (event_type = 'ReviewRequested' AND schema_version < 3))";
