//! The one path between domain events and the log: [`SealedLog`] seals
//! subject content with the subject's key before an append and opens it
//! after a read, so no service can store clear subject text by mistake.

use std::sync::Arc;

use mnemo_crypto::{CryptoError, SubjectCipher};
use mnemo_domain::events::EventDecodeError;
use mnemo_domain::{
    Classified, DomainEvent, ErrorClass, EventId, EventMetadata, NewEvent, RecordedEvent,
    SubjectId, TenantId,
};

use crate::{AppendResult, AppendedEvent, EventStore, EventStoreError, ExpectedVersion};

#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error(transparent)]
    Store(#[from] EventStoreError),
    #[error("subject key operation failed: {0}")]
    Crypto(#[from] CryptoError),
    #[error(transparent)]
    Decode(#[from] EventDecodeError),
    #[error("event {0} carries subject content but no subject")]
    MissingSubject(EventId),
}

impl Classified for LogError {
    fn class(&self) -> ErrorClass {
        match self {
            LogError::Store(EventStoreError::Conflict { .. })
            | LogError::Store(EventStoreError::EventIdTaken(_)) => ErrorClass::Conflict,
            LogError::Store(EventStoreError::Backend(_)) => ErrorClass::Unavailable,
            _ => ErrorClass::Internal,
        }
    }

    /// The codes of the API, which predate [`EventStoreError::code`]'s.
    fn code(&self) -> &'static str {
        match self {
            LogError::Store(EventStoreError::Conflict { .. }) => "version_conflict",
            LogError::Store(EventStoreError::EventIdTaken(_)) => "id_taken",
            LogError::Store(EventStoreError::Backend(_)) => "unavailable",
            _ => "internal_error",
        }
    }
}

/// An event to append: what happened, about whom, by whom.
pub struct Pending {
    pub event_id: EventId,
    pub subject: Option<SubjectId>,
    pub event: DomainEvent,
    pub metadata: EventMetadata,
}

/// A stored event with its payload opened and decoded.
#[derive(Debug, Clone)]
pub struct Decoded {
    pub recorded: RecordedEvent,
    pub event: DomainEvent,
}

#[derive(Clone)]
pub struct SealedLog {
    store: Arc<dyn EventStore>,
    cipher: Arc<SubjectCipher>,
}

impl SealedLog {
    pub fn new(store: Arc<dyn EventStore>, cipher: Arc<SubjectCipher>) -> Self {
        SealedLog { store, cipher }
    }

    pub fn store(&self) -> &Arc<dyn EventStore> {
        &self.store
    }

    pub fn cipher(&self) -> &Arc<SubjectCipher> {
        &self.cipher
    }

    /// Seals every event's subject content, then appends them atomically.
    pub async fn append(
        &self,
        tenant: &TenantId,
        stream_id: &str,
        expected: ExpectedVersion,
        events: Vec<Pending>,
    ) -> Result<AppendResult, LogError> {
        let sealed = self.seal(tenant, events).await?;
        Ok(self
            .store
            .append(tenant, stream_id, expected, sealed)
            .await?)
    }

    /// Seals, then appends to several streams in one transaction (see
    /// [`EventStore::append_streams`]): `(stream, expected, events)` each.
    pub async fn append_streams(
        &self,
        tenant: &TenantId,
        appends: Vec<(String, ExpectedVersion, Vec<Pending>)>,
    ) -> Result<Vec<AppendResult>, LogError> {
        let mut sealed = Vec::with_capacity(appends.len());
        for (stream_id, expected, events) in appends {
            sealed.push(crate::StreamAppend {
                stream_id,
                expected,
                events: self.seal(tenant, events).await?,
            });
        }
        Ok(self.store.append_streams(tenant, sealed).await?)
    }

    async fn seal(
        &self,
        tenant: &TenantId,
        events: Vec<Pending>,
    ) -> Result<Vec<NewEvent>, LogError> {
        let mut sealed = Vec::with_capacity(events.len());
        for pending in events {
            let mut payload = pending.event.to_payload();
            match &pending.subject {
                Some(subject) => {
                    self.cipher.seal(tenant, subject, &mut payload).await?;
                }
                None if mnemo_crypto::contains_clear_text(&payload) => {
                    return Err(LogError::MissingSubject(pending.event_id));
                }
                None => {}
            }
            sealed.push(NewEvent {
                event_id: pending.event_id,
                event_type: pending.event.event_type().to_owned(),
                schema_version: pending.event.schema_version(),
                subject: pending.subject,
                payload,
                metadata: pending.metadata,
            });
        }
        Ok(sealed)
    }

    /// [`SealedLog::append`] of a single event: most writes are one event,
    /// and the one outcome is all they look at.
    pub async fn append_one(
        &self,
        tenant: &TenantId,
        stream_id: &str,
        expected: ExpectedVersion,
        event: Pending,
    ) -> Result<AppendedEvent, LogError> {
        let result = self
            .append(tenant, stream_id, expected, vec![event])
            .await?;
        result.events.into_iter().next().ok_or_else(|| {
            EventStoreError::Corrupt("the store reported no event for an append of one".into())
                .into()
        })
    }

    /// Opens (content reads as erased when the key is gone) and decodes.
    pub async fn decode(&self, mut recorded: RecordedEvent) -> Result<Decoded, LogError> {
        if let Some(subject) = &recorded.subject {
            self.cipher
                .open(&recorded.tenant, subject, &mut recorded.payload)
                .await?;
        }
        let event = DomainEvent::decode_ref(
            &recorded.event_type,
            recorded.schema_version,
            &recorded.payload,
        )?;
        Ok(Decoded { recorded, event })
    }

    pub async fn decode_all(&self, events: Vec<RecordedEvent>) -> Result<Vec<Decoded>, LogError> {
        let mut decoded = Vec::with_capacity(events.len());
        for event in events {
            decoded.push(self.decode(event).await?);
        }
        Ok(decoded)
    }

    pub async fn read_stream(
        &self,
        tenant: &TenantId,
        stream_id: &str,
    ) -> Result<Vec<Decoded>, LogError> {
        let events = self.store.read_stream(tenant, stream_id).await?;
        self.decode_all(events).await
    }

    /// Several streams, decoded (see [`EventStore::read_streams`]).
    pub async fn read_streams(
        &self,
        tenant: &TenantId,
        stream_ids: &[String],
    ) -> Result<Vec<Decoded>, LogError> {
        let events = self.store.read_streams(tenant, stream_ids).await?;
        self.decode_all(events).await
    }

    /// Several streams, each only past a version (streams not in `after`
    /// whole), decoded (see [`EventStore::read_streams_after`]).
    pub async fn read_streams_after(
        &self,
        tenant: &TenantId,
        stream_ids: &[String],
        after: &std::collections::HashMap<String, u64>,
    ) -> Result<Vec<Decoded>, LogError> {
        let streams: Vec<(String, u64)> = stream_ids
            .iter()
            .map(|id| (id.clone(), after.get(id).copied().unwrap_or(0)))
            .collect();
        let events = self.store.read_streams_after(tenant, &streams).await?;
        self.decode_all(events).await
    }

    pub async fn read_stream_range(
        &self,
        tenant: &TenantId,
        stream_id: &str,
        from: u64,
        to: u64,
    ) -> Result<Vec<Decoded>, LogError> {
        let events = self
            .store
            .read_stream_range(tenant, stream_id, from, to)
            .await?;
        self.decode_all(events).await
    }

    /// One event by id, decoded; `None` when the tenant has no such event.
    pub async fn get_event(
        &self,
        tenant: &TenantId,
        event_id: &mnemo_domain::EventId,
    ) -> Result<Option<Decoded>, LogError> {
        match self.store.get_event(tenant, event_id).await? {
            Some(event) => Ok(Some(self.decode(event).await?)),
            None => Ok(None),
        }
    }

    /// Events by id, decoded, in the order asked; ids the tenant has no
    /// event for are left out (see [`EventStore::get_events`]).
    pub async fn get_events(
        &self,
        tenant: &TenantId,
        event_ids: &[EventId],
    ) -> Result<Vec<Decoded>, LogError> {
        let events = self.store.get_events(tenant, event_ids).await?;
        self.decode_all(events).await
    }

    pub async fn read_subject(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<Vec<Decoded>, LogError> {
        let events = self.store.read_subject(tenant, subject).await?;
        self.decode_all(events).await
    }
}
