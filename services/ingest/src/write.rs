//! The write use cases: typed requests in, events appended, their own
//! [`WriteError`] out. Each validates its request into domain types first
//! (so a bad request changes nothing), scrubs PII, then appends in one
//! transaction. Nothing here knows HTTP.

use chrono::{DateTime, Utc};
use mnemo_auth::{Principal, Scope};
use mnemo_crypto::TokenPurpose;
use mnemo_domain::events::{
    streams, ConsolidationRequested, ErasureRequested, MemoryCreated, MemoryRevised,
    MemoryStateChanged, MessageReceived, Role,
};
use mnemo_domain::{
    importance_for, AgentId, DomainEvent, ErasureId, EventId, EventMetadata, EventType, Memory,
    MemoryId, MemoryKind, MemoryState, Producer, Provenance, SessionId, SubjectId, SubjectText,
    TenantId,
};
use mnemo_event_store::sealed::{LogError, Pending};
use mnemo_event_store::{AppendedEvent, EventQuery, EventStoreError, ExpectedVersion};
use serde::Deserialize;

use crate::error::WriteError;
use crate::input::{check_content, check_tags, check_unit, MAX_REASON_CHARS};
use crate::scrub::ScrubSession;
use crate::IngestState;

pub(crate) const MAX_MESSAGE_ID_CHARS: usize = 128;
/// Most messages one memory may cite.
pub(crate) const MAX_SOURCES: usize = 100;

// ---------------------------------------------------------------- messages

/// One message as a client sends it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MessageInput {
    pub role: Role,
    pub content: String,
    pub id: Option<String>,
    pub timestamp: Option<DateTime<Utc>>,
    pub session: Option<String>,
    pub agent: Option<String>,
}

/// Messages for one subject, whose binding the caller has checked.
pub struct MessagesRequest {
    pub tenant: TenantId,
    pub subject: SubjectId,
    pub messages: Vec<MessageInput>,
    pub metadata: EventMetadata,
}

/// A message of the batch as appended, under the id the client knows it by.
pub struct AcceptedMessage {
    pub message_id: String,
    pub event: AppendedEvent,
}

struct ValidMessage {
    message_id: String,
    /// Ours when the client gave no id; derived from the client's id (and
    /// the subject's key generation) once the batch is valid.
    event_id: Option<EventId>,
    role: Role,
    content: String,
    timestamp: DateTime<Utc>,
    session: Option<SessionId>,
    agent: Option<AgentId>,
}

fn validate_message(
    message: MessageInput,
    valid: &[ValidMessage],
    max_content_chars: usize,
    now: DateTime<Utc>,
) -> Result<ValidMessage, WriteError> {
    check_content("content", &message.content, max_content_chars)?;
    let (message_id, event_id) = match message.id {
        Some(id) => {
            let ok = !id.is_empty()
                && id.chars().count() <= MAX_MESSAGE_ID_CHARS
                && id.chars().all(|c| !c.is_control());
            if !ok {
                return Err(WriteError::InvalidMessageId);
            }
            (id, None)
        }
        None => {
            let event_id = EventId::new();
            (event_id.to_string(), Some(event_id))
        }
    };
    // Same client id twice in one batch: the same event id, whatever the
    // generation.
    if valid.iter().any(|m| m.message_id == message_id) {
        return Err(WriteError::DuplicateMessageId);
    }
    Ok(ValidMessage {
        message_id,
        event_id,
        role: message.role,
        content: message.content,
        timestamp: message.timestamp.unwrap_or(now),
        session: message.session.map(SessionId::parse).transpose()?,
        agent: message.agent.map(AgentId::parse).transpose()?,
    })
}

/// Appends the batch to the subject's conversation, all or nothing; a
/// message already in the log (same client id) comes back as a duplicate.
pub async fn ingest_messages(
    state: &IngestState,
    request: MessagesRequest,
) -> Result<Vec<AcceptedMessage>, WriteError> {
    let MessagesRequest {
        tenant,
        subject,
        messages,
        metadata,
    } = request;
    if messages.is_empty() {
        return Err(WriteError::EmptyBatch);
    }
    let max = state.limits.max_messages_per_request;
    if messages.len() > max {
        return Err(WriteError::BatchTooLarge { max });
    }
    let now = Utc::now();
    let mut valid = Vec::with_capacity(messages.len());
    for (index, message) in messages.into_iter().enumerate() {
        let message = validate_message(message, &valid, state.limits.max_content_chars, now)
            .map_err(|source| WriteError::InMessage {
                index,
                source: Box::new(source),
            })?;
        valid.push(message);
    }

    // Same subject key and client id → same event id: a retried request
    // appends nothing twice. After an erasure the subject has a new key, so
    // the same client ids are new messages rather than duplicates of what
    // was erased. (Asked for once the batch is valid: it creates the
    // subject's key, which the append would.)
    let client_ids: Vec<String> = valid
        .iter()
        .filter(|m| m.event_id.is_none())
        .map(|m| m.message_id.clone())
        .collect();
    let mut event_ids = message_event_ids(state, &tenant, &subject, &client_ids)
        .await?
        .into_iter();
    let mut pending = Vec::with_capacity(valid.len());
    let mut ids = Vec::with_capacity(valid.len());
    for message in valid {
        let event_id = match message.event_id {
            Some(ours) => ours,
            None => event_ids
                .next()
                .expect("one event id per client id, in order"),
        };
        let mut scrub = ScrubSession::new(&state.scrubbers, &tenant, &state.metrics);
        let content = scrub.scrub(&message.content);
        let pii = scrub.finish();
        ids.push(message.message_id.clone());
        pending.push(Pending {
            event_id,
            subject: Some(subject.clone()),
            event: DomainEvent::MessageReceived(MessageReceived {
                message_id: message.message_id,
                role: message.role,
                content: SubjectText::new(content),
                timestamp: message.timestamp,
                session: message.session,
                agent: message.agent,
                pii,
            }),
            metadata: metadata.clone(),
        });
    }
    let result = state
        .events()
        .append(
            &tenant,
            &streams::conversation(&subject),
            ExpectedVersion::Any,
            pending,
        )
        .await?;
    Ok(ids
        .into_iter()
        .zip(result.events)
        .map(|(message_id, event)| AcceptedMessage { message_id, event })
        .collect())
}

/// The event ids of the subject's messages with these client ids, in
/// order: derived from the ids' keyed tokens under the subject's live key
/// (created on first use, as the append would).
///
/// A message appended before ids were keyed has the id
/// [`EventId::message`] derived from the client's id itself; when that
/// event is in the log it is the id, so a retry across the upgrade is still
/// recognised as a duplicate. One read for all the client ids.
async fn message_event_ids(
    state: &IngestState,
    tenant: &TenantId,
    subject: &SubjectId,
    client_ids: &[String],
) -> Result<Vec<EventId>, WriteError> {
    if client_ids.is_empty() {
        return Ok(Vec::new());
    }
    let cipher = state.log.cipher();
    let tokens = cipher
        .tokens(tenant, subject, TokenPurpose::MessageId, client_ids)
        .await
        .map_err(LogError::from)?;
    event_ids_of(state, tenant, subject, client_ids, &tokens).await
}

/// [`message_event_ids`] of messages that must already exist (a memory's
/// sources): `None` when the subject has no key, so has no messages, and
/// no key is made for a request that will be refused.
async fn existing_message_event_ids(
    state: &IngestState,
    tenant: &TenantId,
    subject: &SubjectId,
    client_ids: &[String],
) -> Result<Option<Vec<EventId>>, WriteError> {
    let cipher = state.log.cipher();
    let mut tokens = Vec::with_capacity(client_ids.len());
    for id in client_ids {
        match cipher
            .live_token(tenant, subject, TokenPurpose::MessageId, id)
            .await
            .map_err(LogError::from)?
        {
            Some(token) => tokens.push(token),
            None => return Ok(None),
        }
    }
    event_ids_of(state, tenant, subject, client_ids, &tokens)
        .await
        .map(Some)
}

async fn event_ids_of(
    state: &IngestState,
    tenant: &TenantId,
    subject: &SubjectId,
    client_ids: &[String],
    tokens: &[String],
) -> Result<Vec<EventId>, WriteError> {
    let cipher = state.log.cipher();
    let generation = cipher
        .generation(tenant, subject)
        .await
        .map_err(LogError::from)?;
    let legacy: Vec<EventId> = client_ids
        .iter()
        .map(|client_id| EventId::message(tenant, subject, generation, client_id))
        .collect();
    let recorded = messages_among(state, tenant, &legacy).await?;
    let ids = legacy
        .into_iter()
        .zip(tokens)
        .map(|(legacy, token)| {
            if recorded.contains(&legacy) {
                legacy
            } else {
                EventId::message_token(tenant, subject, token)
            }
        })
        .collect();
    Ok(ids)
}

/// Which of `event_ids` are messages of the log, within the tenant: one
/// read for them all (a post of 100 messages was 100 point reads).
async fn messages_among(
    state: &IngestState,
    tenant: &TenantId,
    event_ids: &[EventId],
) -> Result<std::collections::HashSet<EventId>, WriteError> {
    if event_ids.is_empty() {
        return Ok(std::collections::HashSet::new());
    }
    Ok(state
        .log
        .store()
        .get_events(tenant, event_ids)
        .await?
        .into_iter()
        .filter(|e| e.is(EventType::MessageReceived))
        .map(|e| e.event_id)
        .collect())
}

// ---------------------------------------------------------------- memories

/// A memory written directly, for a subject whose binding the caller has
/// checked.
pub struct NewMemoryRequest {
    pub tenant: TenantId,
    pub subject: SubjectId,
    pub content: String,
    pub kind: MemoryKind,
    pub tags: Vec<String>,
    pub confidence: Option<f32>,
    pub importance: Option<f32>,
    pub session: Option<String>,
    pub agent: Option<String>,
    /// Ids of the subject's messages (as posted) this memory comes from.
    pub sources: Vec<String>,
    pub metadata: EventMetadata,
}

pub async fn create_memory(
    state: &IngestState,
    request: NewMemoryRequest,
) -> Result<Memory, WriteError> {
    let NewMemoryRequest {
        tenant,
        subject,
        metadata,
        ..
    } = &request;
    check_content("content", &request.content, state.limits.max_content_chars)?;
    check_unit("confidence", request.confidence)?;
    check_unit("importance", request.importance)?;
    let tags = check_tags(&request.tags)?;
    let session = request.session.clone().map(SessionId::parse).transpose()?;
    let agent = request.agent.clone().map(AgentId::parse).transpose()?;
    // A person writing a memory directly is sure of it unless they say not.
    let confidence = request.confidence.unwrap_or(1.0);
    let importance = request
        .importance
        .unwrap_or_else(|| importance_for(confidence, request.kind));

    if request.sources.len() > MAX_SOURCES {
        return Err(WriteError::TooManySources);
    }
    let mut source_event_ids = Vec::with_capacity(request.sources.len());
    // The sources are the subject's messages under its live key, the one
    // the memory is sealed under too. A message posted before an erasure
    // cannot be found: its id's token was made with the destroyed key, so
    // it is as unknown as an id never posted (mnemo cannot tell the two
    // apart, by design).
    let sources = if request.sources.is_empty() {
        Vec::new()
    } else {
        existing_message_event_ids(state, tenant, subject, &request.sources)
            .await?
            .ok_or(WriteError::UnknownSource)?
    };
    let recorded = messages_among(state, tenant, &sources).await?;
    for event_id in sources {
        if !recorded.contains(&event_id) {
            return Err(WriteError::UnknownSource);
        }
        if !source_event_ids.contains(&event_id) {
            source_event_ids.push(event_id);
        }
    }
    let mut scrub = ScrubSession::new(&state.scrubbers, tenant, &state.metrics);
    let content = scrub.scrub(&request.content);
    let pii = scrub.finish();
    let memory_id = MemoryId::new();
    let event = DomainEvent::MemoryCreated(MemoryCreated {
        memory_id,
        kind: request.kind,
        content: SubjectText::new(content),
        tags,
        confidence,
        importance,
        state: MemoryState::Active,
        provenance: Provenance {
            source_event_ids,
            producer: Producer::api(),
        },
        session,
        agent,
        pii,
    });
    let appended = state
        .events()
        .append_one(
            tenant,
            &streams::memory(&memory_id),
            ExpectedVersion::NoStream,
            Pending {
                event_id: EventId::new(),
                subject: Some(subject.clone()),
                event: event.clone(),
                metadata: metadata.clone(),
            },
        )
        .await?;
    let memory = Memory::fold(subject, [(&event, appended.stream_version, Utc::now())])
        .expect("a created memory folds");
    Ok(memory)
}

/// The memory's current state and subject, within the caller's tenant, for
/// a caller with `scope` on its subject; not found whether it does not exist
/// or belongs to another tenant.
async fn load_memory(
    state: &IngestState,
    caller: &Principal,
    scope: Scope,
    id: &MemoryId,
) -> Result<Memory, WriteError> {
    let events = state
        .log
        .read_stream(&caller.tenant, &streams::memory(id))
        .await?;
    let subject = events
        .first()
        .and_then(|e| e.recorded.subject.clone())
        .ok_or(WriteError::MemoryNotFound)?;
    caller.authorize(scope, Some(&subject))?;
    let memory = Memory::fold(
        &subject,
        events
            .iter()
            .map(|d| (&d.event, d.recorded.stream_version, d.recorded.recorded_at)),
    )
    .ok_or(WriteError::MemoryNotFound)?;
    // Erased is final: no correction, deletion or state change is appended
    // to an erased memory (a revision would otherwise seal new content under
    // the subject's next key and bring the memory back).
    if memory.is_erased() {
        return Err(WriteError::MemoryErased);
    }
    Ok(memory)
}

fn reason_text(
    reason: Option<String>,
    scrub: &mut ScrubSession<'_>,
) -> Result<Option<SubjectText>, WriteError> {
    match reason {
        Some(reason) => {
            check_content("reason", &reason, MAX_REASON_CHARS)?;
            Ok(Some(SubjectText::new(scrub.scrub(&reason))))
        }
        None => Ok(None),
    }
}

/// A correction of a memory by a caller who must have `memories:write` on
/// its subject.
pub struct ReviseRequest<'a> {
    pub caller: &'a Principal,
    pub memory: MemoryId,
    pub content: Option<String>,
    pub kind: Option<MemoryKind>,
    pub tags: Option<Vec<String>>,
    pub confidence: Option<f32>,
    pub importance: Option<f32>,
    pub reason: Option<String>,
    /// The version the caller read; `None` means the one loaded now, so a
    /// racing writer still gets a conflict instead of being overwritten.
    pub expected_version: Option<u64>,
    pub metadata: EventMetadata,
}

pub async fn revise_memory(
    state: &IngestState,
    request: ReviseRequest<'_>,
) -> Result<Memory, WriteError> {
    let caller = request.caller;
    let memory = load_memory(state, caller, Scope::MemoriesWrite, &request.memory).await?;
    if request.content.is_none()
        && request.kind.is_none()
        && request.tags.is_none()
        && request.confidence.is_none()
        && request.importance.is_none()
    {
        return Err(WriteError::NothingToChange);
    }
    if let Some(content) = &request.content {
        check_content("content", content, state.limits.max_content_chars)?;
    }
    check_unit("confidence", request.confidence)?;
    check_unit("importance", request.importance)?;
    let tags = request.tags.as_deref().map(check_tags).transpose()?;
    if memory.state == MemoryState::Deleted {
        return Err(WriteError::MemoryDeleted);
    }
    let expected = ExpectedVersion::Exact(request.expected_version.unwrap_or(memory.version));

    let mut scrub = ScrubSession::new(&state.scrubbers, &caller.tenant, &state.metrics);
    let content = request
        .content
        .as_deref()
        .map(|c| SubjectText::new(scrub.scrub(c)));
    let reason = reason_text(request.reason, &mut scrub)?;
    let event = DomainEvent::MemoryRevised(MemoryRevised {
        content,
        kind: request.kind,
        tags,
        confidence: request.confidence,
        importance: request.importance,
        reason,
        pii: scrub.finish(),
    });
    append_change(state, caller, request.metadata, memory, event, expected).await
}

/// A deletion by a caller who must have `memories:write` on the memory's
/// subject. Deleting twice is not an error, and records nothing new.
pub struct DeleteRequest<'a> {
    pub caller: &'a Principal,
    pub memory: MemoryId,
    pub reason: Option<String>,
    pub metadata: EventMetadata,
}

pub async fn delete_memory(
    state: &IngestState,
    request: DeleteRequest<'_>,
) -> Result<Memory, WriteError> {
    let caller = request.caller;
    let memory = load_memory(state, caller, Scope::MemoriesWrite, &request.memory).await?;
    if memory.state == MemoryState::Deleted {
        return Ok(memory);
    }
    let mut scrub = ScrubSession::new(&state.scrubbers, &caller.tenant, &state.metrics);
    let reason = reason_text(request.reason, &mut scrub)?;
    let expected = ExpectedVersion::Exact(memory.version);
    let event = DomainEvent::MemoryDeleted(MemoryStateChanged { reason });
    append_change(state, caller, request.metadata, memory, event, expected).await
}

async fn append_change(
    state: &IngestState,
    caller: &Principal,
    metadata: EventMetadata,
    mut memory: Memory,
    event: DomainEvent,
    expected: ExpectedVersion,
) -> Result<Memory, WriteError> {
    let appended = state
        .events()
        .append_one(
            &caller.tenant,
            &streams::memory(&memory.id),
            expected,
            Pending {
                event_id: EventId::new(),
                subject: Some(memory.subject.clone()),
                event: event.clone(),
                metadata,
            },
        )
        .await
        .map_err(|error| match error {
            LogError::Store(EventStoreError::Conflict { actual, .. }) => {
                WriteError::VersionConflict { actual }
            }
            other => other.into(),
        })?;
    memory.apply(&event);
    memory.version = appended.stream_version;
    memory.updated_at = Utc::now();
    Ok(memory)
}

// ---------------------------------------------------------------- consolidation

/// Consolidate the subject's waiting messages now (all sessions, or one),
/// for a subject whose binding the caller has checked.
pub struct ConsolidationRequest {
    pub tenant: TenantId,
    pub subject: SubjectId,
    pub session: Option<String>,
    pub metadata: EventMetadata,
}

/// Asynchronous: the memories appear in the subject's list and search once
/// the consolidator has run. Returns the request's event id.
///
/// Refused (and nothing appended) for a subject that was erased and has
/// had nothing posted since: every message it has is from before the
/// erasure, and gone. Once something is posted afresh (a new key
/// generation), the request is accepted and the consolidator ignores the
/// erased messages, whose content reads as erased.
pub async fn request_consolidation(
    state: &IngestState,
    request: ConsolidationRequest,
) -> Result<EventId, WriteError> {
    let session = request.session.map(SessionId::parse).transpose()?;
    let live = state
        .log
        .cipher()
        .live_generation(&request.tenant, &request.subject)
        .await
        .map_err(LogError::from)?;
    if live.is_none() && was_erased(state, &request.tenant, &request.subject).await? {
        return Err(WriteError::SubjectErased);
    }
    let event_id = EventId::new();
    state
        .events()
        .append_one(
            &request.tenant,
            &streams::subject(&request.subject),
            ExpectedVersion::Any,
            Pending {
                event_id,
                subject: Some(request.subject.clone()),
                event: DomainEvent::ConsolidationRequested(ConsolidationRequested { session }),
                metadata: request.metadata,
            },
        )
        .await?;
    Ok(event_id)
}

/// Whether an erasure of the subject completed (its receipt is in the log).
async fn was_erased(
    state: &IngestState,
    tenant: &TenantId,
    subject: &SubjectId,
) -> Result<bool, WriteError> {
    let receipts = state
        .log
        .store()
        .query(
            tenant,
            &EventQuery {
                subject: Some(subject.clone()),
                event_types: vec![EventType::SubjectErased.as_str().to_owned()],
                limit: 1,
                ..Default::default()
            },
        )
        .await?;
    Ok(!receipts.is_empty())
}

// ---------------------------------------------------------------- erasure

/// Erase everything of a subject whose binding the caller has checked.
pub struct ErasureRequest {
    pub tenant: TenantId,
    pub subject: SubjectId,
    pub metadata: EventMetadata,
}

/// Records the request; the forgetter carries it out and writes the receipt.
pub async fn request_erasure(
    state: &IngestState,
    request: ErasureRequest,
) -> Result<ErasureId, WriteError> {
    let erasure_id = ErasureId::new();
    state
        .events()
        .append_one(
            &request.tenant,
            &streams::erasure(&erasure_id),
            ExpectedVersion::NoStream,
            Pending {
                event_id: EventId::new(),
                subject: Some(request.subject.clone()),
                event: DomainEvent::ErasureRequested(ErasureRequested {
                    erasure_id,
                    subject: request.subject,
                }),
                metadata: request.metadata,
            },
        )
        .await?;
    tracing::info!(tenant = %request.tenant, erasure_id = %erasure_id, "erasure requested");
    Ok(erasure_id)
}
