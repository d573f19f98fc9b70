//! Read endpoints. Every read is scoped to the token's tenant; a memory of
//! another tenant is indistinguishable from one that does not exist.

use std::collections::BTreeMap;

use actix_web::{web, HttpRequest, HttpResponse};
use chrono::{DateTime, Utc};
use mnemo_auth::{Principal, Scope};
use mnemo_domain::events::{streams, ExportGenerated};
use mnemo_domain::{
    DomainEvent, ErasureId, EventId, Memory, MemoryId, MemoryKind, MemoryState, SubjectId,
};
use mnemo_event_store::sealed::{Decoded, LogError, Pending};
use mnemo_event_store::{EventQuery, ExpectedVersion};
use mnemo_http::context::event_metadata;
use mnemo_http::views::{unmark, EventView, MemoryView};
use mnemo_http::{ApiError, Authenticated};
use mnemo_read_model::MemoryFilter;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::RetrieverState;

const DEFAULT_PAGE: u32 = 50;
const MAX_PAGE: u32 = 500;

fn page_size(limit: Option<u32>) -> Result<u32, ApiError> {
    match limit {
        None => Ok(DEFAULT_PAGE),
        Some(n) if (1..=MAX_PAGE).contains(&n) => Ok(n),
        Some(_) => Err(ApiError::bad_request(
            "invalid_limit",
            format!("limit must be between 1 and {MAX_PAGE}"),
        )),
    }
}

fn not_found() -> ApiError {
    ApiError::not_found("memory_not_found", "no such memory")
}

fn fold(subject: &SubjectId, events: &[Decoded]) -> Option<Memory> {
    Memory::fold(
        subject,
        events
            .iter()
            .map(|d| (&d.event, d.recorded.stream_version, d.recorded.recorded_at)),
    )
}

/// A memory's stream, within the caller's tenant and subject binding.
async fn memory_stream(
    state: &RetrieverState,
    principal: &Principal,
    raw_id: &str,
) -> Result<(SubjectId, Vec<Decoded>), ApiError> {
    let id = MemoryId::parse(raw_id)?;
    let events = state
        .log
        .read_stream(&principal.tenant, &streams::memory(&id))
        .await
        .map_err(ApiError::from)?;
    let subject = events
        .first()
        .and_then(|d| d.recorded.subject.clone())
        .ok_or_else(not_found)?;
    principal.require_subject(&subject)?;
    Ok((subject, events))
}

pub async fn get_memory(
    Authenticated(principal): Authenticated,
    path: web::Path<String>,
    state: web::Data<RetrieverState>,
) -> Result<HttpResponse, ApiError> {
    principal.require_scope(Scope::MemoriesRead)?;
    let (subject, events) = memory_stream(&state, &principal, &path).await?;
    let memory = fold(&subject, &events).ok_or_else(not_found)?;
    Ok(HttpResponse::Ok()
        .insert_header(("ETag", format!("\"{}\"", memory.version)))
        .json(MemoryView::of(&memory)))
}

/// The reason an event gives, opened (`null` when none or erased).
fn reason_of(payload: &Value) -> Value {
    unmark(&payload["reason"])
}

fn history_entries(subject: &SubjectId, events: &[Decoded]) -> Vec<Value> {
    let mut entries = Vec::with_capacity(events.len());
    let mut memory: Option<Memory> = None;
    for decoded in events {
        let recorded = &decoded.recorded;
        match &mut memory {
            None => memory = fold(subject, std::slice::from_ref(decoded)),
            Some(memory) => {
                memory.apply(&decoded.event);
                memory.version = recorded.stream_version;
                memory.updated_at = recorded.recorded_at;
            }
        }
        let mut changes = unmark(&recorded.payload);
        if let Some(object) = changes.as_object_mut() {
            object.remove("reason");
            object.remove("pii");
        }
        entries.push(json!({
            "version": recorded.stream_version,
            "event_id": recorded.event_id.to_string(),
            "event_type": recorded.event_type,
            "actor": recorded.metadata.actor,
            "recorded_at": recorded.recorded_at,
            "correlation_id": recorded.metadata.correlation_id,
            "reason": reason_of(&recorded.payload),
            "pii_found": recorded.payload.get("pii").cloned().unwrap_or(Value::Null),
            "changes": changes,
            "memory": memory.as_ref().map(MemoryView::of),
        }));
    }
    entries
}

pub async fn history(
    Authenticated(principal): Authenticated,
    path: web::Path<String>,
    state: web::Data<RetrieverState>,
) -> Result<HttpResponse, ApiError> {
    principal.require_scope(Scope::MemoriesRead)?;
    let (subject, events) = memory_stream(&state, &principal, &path).await?;
    Ok(HttpResponse::Ok().json(json!({
        "memory_id": path.as_str(),
        "subject": subject.as_str(),
        "versions": history_entries(&subject, &events),
    })))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    /// Comma-separated kinds.
    pub kind: Option<String>,
    /// Comma-separated tags, all required.
    pub tag: Option<String>,
    /// Comma-separated states (default: all but deleted).
    pub state: Option<String>,
    pub limit: Option<u32>,
    pub cursor: Option<String>,
}

fn split(raw: &Option<String>) -> Vec<&str> {
    raw.as_deref()
        .map(|r| {
            r.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

pub async fn list_memories(
    Authenticated(principal): Authenticated,
    path: web::Path<String>,
    query: web::Query<ListQuery>,
    state: web::Data<RetrieverState>,
) -> Result<HttpResponse, ApiError> {
    principal.require_scope(Scope::MemoriesRead)?;
    let subject = SubjectId::parse(path.as_str())?;
    principal.require_subject(&subject)?;
    let kinds = split(&query.kind)
        .into_iter()
        .map(|k| {
            MemoryKind::parse(k)
                .ok_or_else(|| ApiError::bad_request("invalid_kind", format!("unknown kind {k}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let states = split(&query.state)
        .into_iter()
        .map(|s| {
            MemoryState::parse(s)
                .ok_or_else(|| ApiError::bad_request("invalid_state", format!("unknown state {s}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let tags = split(&query.tag)
        .into_iter()
        .map(str::to_lowercase)
        .collect();
    let limit = page_size(query.limit)?;
    let before = query.cursor.as_deref().map(MemoryId::parse).transpose()?;
    let filter = MemoryFilter {
        kinds,
        tags,
        states,
        before,
        limit,
    };
    let memories = state
        .read_model
        .list(&principal.tenant, &subject, &filter)
        .await
        .map_err(ApiError::unavailable)?;
    let next_cursor = (memories.len() as u32 == limit)
        .then(|| memories.last().map(|m| m.id.to_string()))
        .flatten();
    let views: Vec<_> = memories.iter().map(MemoryView::of).collect();
    Ok(HttpResponse::Ok().json(json!({"memories": views, "next_cursor": next_cursor})))
}

pub async fn export_subject(
    Authenticated(principal): Authenticated,
    path: web::Path<String>,
    state: web::Data<RetrieverState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    principal.require_scope(Scope::GdprExport)?;
    let subject = SubjectId::parse(path.as_str())?;
    principal.require_subject(&subject)?;
    let tenant = &principal.tenant;
    let events = state
        .log
        .read_subject(tenant, &subject)
        .await
        .map_err(ApiError::from)?;

    let mut messages = Vec::new();
    let mut memory_streams: BTreeMap<String, Vec<Decoded>> = BTreeMap::new();
    let mut erasures = Vec::new();
    for decoded in &events {
        match &decoded.event {
            // Content whose key was destroyed is gone: the export holds
            // nothing of it, not even a placeholder.
            DomainEvent::MessageReceived(message) => {
                if let Some(content) = message.content.as_text() {
                    messages.push(json!({
                        "message_id": message.message_id,
                        "event_id": decoded.recorded.event_id.to_string(),
                        "role": message.role,
                        "content": content,
                        "timestamp": message.timestamp,
                        "session": message.session,
                        "agent": message.agent,
                        "received_at": decoded.recorded.recorded_at,
                    }));
                }
            }
            DomainEvent::SubjectErased(erased) => erasures.push(json!(erased.receipt)),
            _ if decoded.recorded.stream_id.starts_with("memory-") => memory_streams
                .entry(decoded.recorded.stream_id.clone())
                .or_default()
                .push(decoded.clone()),
            _ => {}
        }
    }
    let mut memories = Vec::new();
    for stream in memory_streams.values() {
        let Some(memory) = fold(&subject, stream) else {
            continue;
        };
        if memory.content.is_erased() {
            continue;
        }
        memories.push(json!({
            "memory": MemoryView::of(&memory),
            "history": history_entries(&subject, stream),
        }));
    }

    let counts = ExportGenerated {
        messages: messages.len() as u64,
        memories: memories.len() as u64,
        events: events.len() as u64,
    };
    state
        .log
        .append(
            tenant,
            &streams::subject(&subject),
            ExpectedVersion::Any,
            vec![Pending {
                event_id: EventId::new(),
                subject: Some(subject.clone()),
                event: DomainEvent::ExportGenerated(counts.clone()),
                metadata: event_metadata(&req, &principal.actor),
            }],
        )
        .await
        .map_err(ApiError::from)?;
    state
        .metrics
        .events_appended_total
        .with_label_values(&["ExportGenerated"])
        .inc();
    Ok(HttpResponse::Ok()
        .insert_header((
            "Content-Disposition",
            format!("attachment; filename=\"mnemo-export-{subject}.json\""),
        ))
        .json(json!({
            "tenant": tenant.as_str(),
            "subject": subject.as_str(),
            "generated_at": Utc::now(),
            "counts": counts,
            "messages": messages,
            "memories": memories,
            "erasures": erasures,
        })))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditQuery {
    pub subject: Option<String>,
    pub actor: Option<String>,
    /// Comma-separated event types.
    #[serde(rename = "type")]
    pub event_type: Option<String>,
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
    pub cursor: Option<i64>,
    pub limit: Option<u32>,
}

pub async fn audit(
    Authenticated(principal): Authenticated,
    query: web::Query<AuditQuery>,
    state: web::Data<RetrieverState>,
) -> Result<HttpResponse, ApiError> {
    principal.require_scope(Scope::AuditRead)?;
    let query = query.into_inner();
    let mut subject = query.subject.map(SubjectId::parse).transpose()?;
    if let Some(bound) = &principal.subject {
        match &subject {
            Some(asked) => principal.require_subject(asked)?,
            // A subject-bound token sees its own subject's events only.
            None => subject = Some(bound.clone()),
        }
    }
    let event_types: Vec<String> = split(&query.event_type)
        .into_iter()
        .map(|t| {
            if DomainEvent::TYPES.contains(&t) {
                Ok(t.to_owned())
            } else {
                Err(ApiError::bad_request(
                    "invalid_type",
                    format!("unknown event type {t}"),
                ))
            }
        })
        .collect::<Result<_, _>>()?;
    if let (Some(from), Some(to)) = (query.from, query.to) {
        if from > to {
            return Err(ApiError::bad_request("invalid_range", "from is after to"));
        }
    }
    let limit = page_size(query.limit)?;
    let events = state
        .log
        .store()
        .query(
            &principal.tenant,
            &EventQuery {
                subject,
                actor: query.actor,
                event_types,
                stream_id: None,
                from: query.from,
                to: query.to,
                after_position: query.cursor,
                limit,
            },
        )
        .await
        .map_err(LogError::from)?;
    let decoded = state.log.decode_all(events).await.map_err(ApiError::from)?;
    let next_cursor = (decoded.len() as u32 == limit)
        .then(|| decoded.last().map(|d| d.recorded.global_position))
        .flatten();
    let views: Vec<_> = decoded.iter().map(|d| EventView::of(&d.recorded)).collect();
    Ok(HttpResponse::Ok().json(json!({"events": views, "next_cursor": next_cursor})))
}

pub async fn erasure_receipt(
    Authenticated(principal): Authenticated,
    path: web::Path<String>,
    state: web::Data<RetrieverState>,
) -> Result<HttpResponse, ApiError> {
    if principal.require_scope(Scope::GdprErase).is_err() {
        principal.require_scope(Scope::AuditRead)?;
    }
    let id = ErasureId::parse(path.as_str())?;
    let events = state
        .log
        .read_stream(&principal.tenant, &streams::erasure(&id))
        .await
        .map_err(ApiError::from)?;
    let Some(first) = events.first() else {
        return Err(ApiError::not_found("erasure_not_found", "no such erasure"));
    };
    if let Some(subject) = &first.recorded.subject {
        principal.require_subject(subject)?;
    }
    let requested_at = first.recorded.recorded_at;
    let requested_by = first.recorded.metadata.actor.clone();
    let receipt = events.iter().find_map(|d| match &d.event {
        DomainEvent::SubjectErased(erased) => Some(erased.receipt.clone()),
        _ => None,
    });
    Ok(HttpResponse::Ok().json(json!({
        "erasure_id": id.to_string(),
        "subject": first.recorded.subject,
        "status": if receipt.is_some() { "completed" } else { "pending" },
        "requested_at": requested_at,
        "requested_by": requested_by,
        "receipt": receipt,
    })))
}
