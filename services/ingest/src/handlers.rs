//! Write endpoints. Each validates its input into domain types first (so a
//! bad request changes nothing), then appends in one transaction.

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use chrono::{DateTime, Utc};
use mnemo_auth::Scope;
use mnemo_domain::events::{
    streams, ConsolidationRequested, ErasureRequested, MemoryCreated, MemoryRevised,
    MemoryStateChanged, MessageReceived, Role,
};
use mnemo_domain::{
    importance_for, AgentId, DomainEvent, ErasureId, EventId, Memory, MemoryId, MemoryKind,
    MemoryState, Producer, Provenance, SessionId, SubjectId, SubjectText, TenantId,
};
use mnemo_event_store::sealed::{LogError, Pending};
use mnemo_event_store::{EventStoreError, ExpectedVersion};
use mnemo_http::context::event_metadata;
use mnemo_http::views::MemoryView;
use mnemo_http::{ApiError, Authenticated};
use serde::Deserialize;
use serde_json::json;

use crate::scrub::ScrubSession;
use crate::IngestState;

const MAX_TAGS: usize = 20;
const MAX_TAG_CHARS: usize = 64;
const MAX_MESSAGE_ID_CHARS: usize = 128;
pub(crate) const MAX_REASON_CHARS: usize = 1000;

/// An optional JSON body (DELETE, POST without parameters): empty means
/// the defaults; when present it is checked like any other body.
fn optional_json<T: Default + serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    serde_json::from_slice(body).map_err(|e| {
        if e.is_syntax() || e.is_eof() {
            ApiError::bad_request(
                "invalid_json",
                format!("request body is not valid JSON: {e}"),
            )
        } else {
            ApiError::bad_request(
                "invalid_body",
                format!("request body does not match the schema: {e}"),
            )
        }
    })
}

fn subject_from_path(raw: &str) -> Result<SubjectId, ApiError> {
    Ok(SubjectId::parse(raw)?)
}

pub(crate) fn check_content(field: &str, text: &str, max_chars: usize) -> Result<(), ApiError> {
    if text.trim().is_empty() {
        return Err(ApiError::unprocessable(
            "invalid_content",
            format!("{field} must not be empty"),
        ));
    }
    if text.chars().count() > max_chars {
        return Err(ApiError::unprocessable(
            "content_too_long",
            format!("{field} is longer than {max_chars} characters"),
        ));
    }
    Ok(())
}

fn check_unit(field: &str, value: Option<f32>) -> Result<(), ApiError> {
    match value {
        Some(v) if !(0.0..=1.0).contains(&v) || v.is_nan() => Err(ApiError::unprocessable(
            "out_of_range",
            format!("{field} must be between 0 and 1"),
        )),
        _ => Ok(()),
    }
}

/// Tags are plain labels, not content: they are stored unencrypted, so one
/// that holds PII is refused rather than silently rewritten.
pub(crate) fn check_tags(tags: &[String]) -> Result<Vec<String>, ApiError> {
    if tags.len() > MAX_TAGS {
        return Err(ApiError::unprocessable(
            "too_many_tags",
            format!("at most {MAX_TAGS} tags"),
        ));
    }
    let mut clean = Vec::with_capacity(tags.len());
    for tag in tags {
        let tag = tag.trim().to_lowercase();
        let valid = !tag.is_empty()
            && tag.chars().count() <= MAX_TAG_CHARS
            && tag
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | ':' | ' '));
        if !valid {
            return Err(ApiError::unprocessable(
                "invalid_tag",
                format!("tags are 1 to {MAX_TAG_CHARS} letters, digits, spaces or - _ . :"),
            ));
        }
        if !mnemo_pii::Detector::shared().detect(&tag).is_empty() {
            return Err(ApiError::unprocessable(
                "tag_contains_pii",
                "a tag looks like personal data; put it in the content instead",
            ));
        }
        if !clean.contains(&tag) {
            clean.push(tag);
        }
    }
    Ok(clean)
}

// ---------------------------------------------------------------- messages

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MessageBatch {
    pub messages: Vec<MessageInput>,
}

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

struct ValidMessage {
    message_id: String,
    event_id: EventId,
    role: Role,
    content: String,
    timestamp: DateTime<Utc>,
    session: Option<SessionId>,
    agent: Option<AgentId>,
}

fn validate_messages(
    tenant: &TenantId,
    subject: &SubjectId,
    batch: MessageBatch,
    state: &IngestState,
) -> Result<Vec<ValidMessage>, ApiError> {
    if batch.messages.is_empty() {
        return Err(ApiError::unprocessable(
            "empty_batch",
            "send at least one message",
        ));
    }
    if batch.messages.len() > state.limits.max_messages_per_request {
        return Err(ApiError::unprocessable(
            "batch_too_large",
            format!(
                "at most {} messages per request",
                state.limits.max_messages_per_request
            ),
        ));
    }
    let now = Utc::now();
    let mut valid = Vec::with_capacity(batch.messages.len());
    for (index, message) in batch.messages.into_iter().enumerate() {
        let at = |e: ApiError| {
            ApiError::new(
                e.status(),
                e.code(),
                format!("messages[{index}]: {}", e.message()),
            )
        };
        check_content("content", &message.content, state.limits.max_content_chars).map_err(at)?;
        let (message_id, event_id) = match message.id {
            Some(id) => {
                let ok = !id.is_empty()
                    && id.chars().count() <= MAX_MESSAGE_ID_CHARS
                    && id.chars().all(|c| !c.is_control());
                if !ok {
                    return Err(at(ApiError::unprocessable(
                        "invalid_message_id",
                        format!("id must be 1 to {MAX_MESSAGE_ID_CHARS} printable characters"),
                    )));
                }
                // Same tenant, subject and client id → same event id: a
                // retried request appends nothing twice.
                let event_id = EventId::derived(&[tenant.as_str(), subject.as_str(), &id]);
                (id, event_id)
            }
            None => {
                let event_id = EventId::new();
                (event_id.to_string(), event_id)
            }
        };
        if valid.iter().any(|m: &ValidMessage| m.event_id == event_id) {
            return Err(at(ApiError::unprocessable(
                "duplicate_message_id",
                "the same id appears twice in this batch",
            )));
        }
        let session = message
            .session
            .map(SessionId::parse)
            .transpose()
            .map_err(|e| at(e.into()))?;
        let agent = message
            .agent
            .map(AgentId::parse)
            .transpose()
            .map_err(|e| at(e.into()))?;
        valid.push(ValidMessage {
            message_id,
            event_id,
            role: message.role,
            content: message.content,
            timestamp: message.timestamp.unwrap_or(now),
            session,
            agent,
        });
    }
    Ok(valid)
}

pub async fn post_messages(
    Authenticated(principal): Authenticated,
    path: web::Path<String>,
    body: web::Json<MessageBatch>,
    state: web::Data<IngestState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    principal.require_scope(Scope::MemoriesWrite)?;
    let subject = subject_from_path(&path)?;
    principal.require_subject(&subject)?;
    let tenant = &principal.tenant;
    let messages = validate_messages(tenant, &subject, body.into_inner(), &state)?;
    let metadata = event_metadata(&req, &principal.actor);

    let mut pending = Vec::with_capacity(messages.len());
    let mut ids = Vec::with_capacity(messages.len());
    for message in messages {
        let mut scrub = ScrubSession::new(&state.scrubbers, tenant, &state.metrics);
        let content = scrub.scrub(&message.content);
        let pii = scrub.finish();
        ids.push(message.message_id.clone());
        pending.push(Pending {
            event_id: message.event_id,
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
        .log
        .append(
            tenant,
            &streams::conversation(&subject),
            ExpectedVersion::Any,
            pending,
        )
        .await
        .map_err(ApiError::from)?;
    let fresh = result.events.iter().filter(|e| !e.duplicate).count();
    state
        .metrics
        .events_appended_total
        .with_label_values(&["MessageReceived"])
        .inc_by(fresh as u64);
    let events: Vec<_> = result
        .events
        .iter()
        .zip(&ids)
        .map(|(event, id)| {
            json!({"id": id, "event_id": event.event_id.to_string(), "position": event.global_position, "duplicate": event.duplicate})
        })
        .collect();
    Ok(HttpResponse::Accepted().json(json!({
        "accepted": fresh,
        "duplicates": events.len() - fresh,
        "events": events,
    })))
}

// ---------------------------------------------------------------- memories

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewMemoryInput {
    pub content: String,
    pub kind: MemoryKind,
    #[serde(default)]
    pub tags: Vec<String>,
    pub confidence: Option<f32>,
    pub importance: Option<f32>,
    pub session: Option<String>,
    pub agent: Option<String>,
    /// Ids of the subject's messages (as posted) this memory comes from:
    /// its provenance.
    #[serde(default)]
    pub sources: Vec<String>,
}

/// Most messages one memory may cite.
const MAX_SOURCES: usize = 100;

pub async fn create_memory(
    Authenticated(principal): Authenticated,
    path: web::Path<String>,
    body: web::Json<NewMemoryInput>,
    state: web::Data<IngestState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    principal.require_scope(Scope::MemoriesWrite)?;
    let subject = subject_from_path(&path)?;
    principal.require_subject(&subject)?;
    let input = body.into_inner();
    check_content("content", &input.content, state.limits.max_content_chars)?;
    check_unit("confidence", input.confidence)?;
    check_unit("importance", input.importance)?;
    let tags = check_tags(&input.tags)?;
    let session = input.session.map(SessionId::parse).transpose()?;
    let agent = input.agent.map(AgentId::parse).transpose()?;
    // A person writing a memory directly is sure of it unless they say not.
    let confidence = input.confidence.unwrap_or(1.0);
    let importance = input
        .importance
        .unwrap_or_else(|| importance_for(confidence, input.kind));

    let tenant = &principal.tenant;
    if input.sources.len() > MAX_SOURCES {
        return Err(ApiError::unprocessable(
            "too_many_sources",
            format!("at most {MAX_SOURCES} sources"),
        ));
    }
    let mut source_event_ids = Vec::with_capacity(input.sources.len());
    for message_id in &input.sources {
        let event_id = EventId::derived(&[tenant.as_str(), subject.as_str(), message_id]);
        let known = state
            .log
            .store()
            .get_event(tenant, &event_id)
            .await
            .map_err(LogError::from)?
            .is_some_and(|e| e.event_type == "MessageReceived");
        if !known {
            return Err(ApiError::unprocessable(
                "unknown_source",
                "a source is not a message id posted for this subject",
            ));
        }
        if !source_event_ids.contains(&event_id) {
            source_event_ids.push(event_id);
        }
    }
    let mut scrub = ScrubSession::new(&state.scrubbers, tenant, &state.metrics);
    let content = scrub.scrub(&input.content);
    let pii = scrub.finish();
    let memory_id = MemoryId::new();
    let event = DomainEvent::MemoryCreated(MemoryCreated {
        memory_id,
        kind: input.kind,
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
    let event_id = EventId::new();
    let result = state
        .log
        .append(
            tenant,
            &streams::memory(&memory_id),
            ExpectedVersion::NoStream,
            vec![Pending {
                event_id,
                subject: Some(subject.clone()),
                event: event.clone(),
                metadata: event_metadata(&req, &principal.actor),
            }],
        )
        .await
        .map_err(ApiError::from)?;
    state
        .metrics
        .events_appended_total
        .with_label_values(&["MemoryCreated"])
        .inc();
    let now = Utc::now();
    let memory = Memory::fold(&subject, [(&event, result.stream_version, now)])
        .expect("a created memory folds");
    Ok(HttpResponse::Created()
        .insert_header(("Location", format!("/v1/memories/{memory_id}")))
        .insert_header(("ETag", format!("\"{}\"", memory.version)))
        .json(MemoryView::of(&memory)))
}

/// The memory's current state and subject, within the caller's tenant; 404
/// whether it does not exist or belongs to another tenant.
async fn load_memory(
    state: &IngestState,
    tenant: &TenantId,
    raw_id: &str,
) -> Result<Memory, ApiError> {
    let id = MemoryId::parse(raw_id)?;
    let events = state
        .log
        .read_stream(tenant, &streams::memory(&id))
        .await
        .map_err(ApiError::from)?;
    let subject = events
        .first()
        .and_then(|e| e.recorded.subject.clone())
        .ok_or_else(|| ApiError::not_found("memory_not_found", "no such memory"))?;
    Memory::fold(
        &subject,
        events
            .iter()
            .map(|d| (&d.event, d.recorded.stream_version, d.recorded.recorded_at)),
    )
    .ok_or_else(|| ApiError::not_found("memory_not_found", "no such memory"))
}

fn expected_version(
    req: &HttpRequest,
    from_body: Option<u64>,
    current: u64,
) -> Result<ExpectedVersion, ApiError> {
    let from_header = match req.headers().get("if-match") {
        Some(value) => {
            let raw = value
                .to_str()
                .ok()
                .map(|v| v.trim().trim_matches('"'))
                .and_then(|v| v.parse::<u64>().ok())
                .ok_or_else(|| {
                    ApiError::bad_request("invalid_if_match", "If-Match must be a version number")
                })?;
            Some(raw)
        }
        None => None,
    };
    match (from_header, from_body) {
        (Some(a), Some(b)) if a != b => Err(ApiError::bad_request(
            "conflicting_versions",
            "If-Match and expected_version disagree",
        )),
        (Some(v), _) | (None, Some(v)) => Ok(ExpectedVersion::Exact(v)),
        // Without a stated version the write is against what we just read:
        // a racing writer still gets a conflict instead of being overwritten.
        (None, None) => Ok(ExpectedVersion::Exact(current)),
    }
}

fn reason_text(
    reason: Option<String>,
    scrub: &mut ScrubSession<'_>,
) -> Result<Option<SubjectText>, ApiError> {
    match reason {
        Some(reason) => {
            check_content("reason", &reason, MAX_REASON_CHARS)?;
            Ok(Some(SubjectText::new(scrub.scrub(&reason))))
        }
        None => Ok(None),
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviseInput {
    pub content: Option<String>,
    pub kind: Option<MemoryKind>,
    pub tags: Option<Vec<String>>,
    pub confidence: Option<f32>,
    pub importance: Option<f32>,
    pub reason: Option<String>,
    pub expected_version: Option<u64>,
}

pub async fn revise_memory(
    Authenticated(principal): Authenticated,
    path: web::Path<String>,
    body: web::Json<ReviseInput>,
    state: web::Data<IngestState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    principal.require_scope(Scope::MemoriesWrite)?;
    let input = body.into_inner();
    if input.content.is_none()
        && input.kind.is_none()
        && input.tags.is_none()
        && input.confidence.is_none()
        && input.importance.is_none()
    {
        return Err(ApiError::unprocessable(
            "nothing_to_change",
            "give at least one of content, kind, tags, confidence, importance",
        ));
    }
    if let Some(content) = &input.content {
        check_content("content", content, state.limits.max_content_chars)?;
    }
    check_unit("confidence", input.confidence)?;
    check_unit("importance", input.importance)?;
    let tags = input.tags.as_deref().map(check_tags).transpose()?;

    let tenant = &principal.tenant;
    let memory = load_memory(&state, tenant, &path).await?;
    principal.require_subject(&memory.subject)?;
    if memory.state == MemoryState::Deleted {
        return Err(ApiError::conflict(
            "memory_deleted",
            "a deleted memory cannot be corrected",
        ));
    }
    let expected = expected_version(&req, input.expected_version, memory.version)?;

    let mut scrub = ScrubSession::new(&state.scrubbers, tenant, &state.metrics);
    let content = input
        .content
        .as_deref()
        .map(|c| SubjectText::new(scrub.scrub(c)));
    let reason = reason_text(input.reason, &mut scrub)?;
    let event = DomainEvent::MemoryRevised(MemoryRevised {
        content,
        kind: input.kind,
        tags,
        confidence: input.confidence,
        importance: input.importance,
        reason,
        pii: scrub.finish(),
    });
    append_change(&state, &principal, &req, memory, event, expected).await
}

async fn append_change(
    state: &IngestState,
    principal: &mnemo_auth::Principal,
    req: &HttpRequest,
    mut memory: Memory,
    event: DomainEvent,
    expected: ExpectedVersion,
) -> Result<HttpResponse, ApiError> {
    let event_type = event.event_type();
    let result = state
        .log
        .append(
            &principal.tenant,
            &streams::memory(&memory.id),
            expected,
            vec![Pending {
                event_id: EventId::new(),
                subject: Some(memory.subject.clone()),
                event: event.clone(),
                metadata: event_metadata(req, &principal.actor),
            }],
        )
        .await
        .map_err(|error| match error {
            LogError::Store(EventStoreError::Conflict { actual, .. }) => ApiError::conflict(
                "version_conflict",
                format!("the memory is at version {actual}; fetch it and retry"),
            ),
            other => other.into(),
        })?;
    state
        .metrics
        .events_appended_total
        .with_label_values(&[event_type])
        .inc();
    memory.apply(&event);
    memory.version = result.stream_version;
    memory.updated_at = Utc::now();
    Ok(HttpResponse::Ok()
        .insert_header(("ETag", format!("\"{}\"", memory.version)))
        .json(MemoryView::of(&memory)))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeleteInput {
    pub reason: Option<String>,
}

pub async fn delete_memory(
    Authenticated(principal): Authenticated,
    path: web::Path<String>,
    body: web::Bytes,
    state: web::Data<IngestState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    principal.require_scope(Scope::MemoriesWrite)?;
    let input: DeleteInput = optional_json(&body)?;
    let tenant = &principal.tenant;
    let memory = load_memory(&state, tenant, &path).await?;
    principal.require_subject(&memory.subject)?;
    if memory.state == MemoryState::Deleted {
        // Deleting twice is not an error, and records nothing new.
        return Ok(HttpResponse::Ok().json(MemoryView::of(&memory)));
    }
    let mut scrub = ScrubSession::new(&state.scrubbers, tenant, &state.metrics);
    let reason = reason_text(input.reason, &mut scrub)?;
    let expected = ExpectedVersion::Exact(memory.version);
    let event = DomainEvent::MemoryDeleted(MemoryStateChanged { reason });
    append_change(&state, &principal, &req, memory, event, expected).await
}

// ---------------------------------------------------------------- consolidation

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConsolidateInput {
    pub session: Option<String>,
}

/// Asks the consolidator to consolidate the subject's waiting messages now
/// (all sessions, or one). Asynchronous: the memories appear in the subject's
/// list and search once consolidation has run.
pub async fn request_consolidation(
    Authenticated(principal): Authenticated,
    path: web::Path<String>,
    body: web::Bytes,
    state: web::Data<IngestState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    principal.require_scope(Scope::MemoriesWrite)?;
    let subject = subject_from_path(&path)?;
    principal.require_subject(&subject)?;
    let input: ConsolidateInput = optional_json(&body)?;
    let session = input.session.map(SessionId::parse).transpose()?;
    let event_id = EventId::new();
    state
        .log
        .append(
            &principal.tenant,
            &streams::subject(&subject),
            ExpectedVersion::Any,
            vec![Pending {
                event_id,
                subject: Some(subject.clone()),
                event: DomainEvent::ConsolidationRequested(ConsolidationRequested { session }),
                metadata: event_metadata(&req, &principal.actor),
            }],
        )
        .await
        .map_err(ApiError::from)?;
    Ok(HttpResponse::Accepted()
        .json(json!({"status": "requested", "event_id": event_id.to_string()})))
}

// ---------------------------------------------------------------- erasure

pub async fn erase_subject(
    Authenticated(principal): Authenticated,
    path: web::Path<String>,
    state: web::Data<IngestState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    principal.require_scope(Scope::GdprErase)?;
    let subject = subject_from_path(&path)?;
    principal.require_subject(&subject)?;
    let erasure_id = ErasureId::new();
    state
        .log
        .append(
            &principal.tenant,
            &streams::erasure(&erasure_id),
            ExpectedVersion::NoStream,
            vec![Pending {
                event_id: EventId::new(),
                subject: Some(subject.clone()),
                event: DomainEvent::ErasureRequested(ErasureRequested {
                    erasure_id,
                    subject: subject.clone(),
                }),
                metadata: event_metadata(&req, &principal.actor),
            }],
        )
        .await
        .map_err(ApiError::from)?;
    state
        .metrics
        .events_appended_total
        .with_label_values(&["ErasureRequested"])
        .inc();
    tracing::info!(tenant = %principal.tenant, erasure_id = %erasure_id, "erasure requested");
    Ok(HttpResponse::build(StatusCode::ACCEPTED)
        .insert_header(("Location", format!("/v1/erasures/{erasure_id}")))
        .json(json!({
            "erasure_id": erasure_id.to_string(),
            "status": "pending",
            "receipt": format!("/v1/erasures/{erasure_id}"),
        })))
}
