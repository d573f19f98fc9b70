//! The read use cases: a memory and its history, a subject's memories, the
//! subject export, the tenant audit log and erasure receipts. Typed requests
//! in, [`ReadError`] out; nothing here knows HTTP.
//!
//! Every read is scoped to the caller's tenant; a memory of another tenant
//! is indistinguishable from one that does not exist.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use mnemo_auth::{Principal, Scope};
use mnemo_domain::events::{streams, ErasureReceipt, ExportGenerated};
use mnemo_domain::{
    DomainEvent, ErasureId, EventId, EventMetadata, EventType, Memory, MemoryId, MemoryKind,
    MemoryState, RecordedEvent, SubjectId, TenantId,
};
use mnemo_event_store::sealed::{Decoded, Pending};
use mnemo_event_store::{EventQuery, ExpectedVersion};
use mnemo_http::views::{unmark, MemoryView};
use mnemo_read_model::{MemoryFilter, SubjectFilter, SubjectSummary};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::ReadError;
use crate::RetrieverState;

const DEFAULT_PAGE: u32 = 50;
const MAX_PAGE: u32 = 500;
/// Longest comma-separated list a query parameter (`kind`, `state`, `tag`,
/// `type`) may hold, in characters: every kind, state or event type fits
/// several times over, and so do 20 tags of a realistic length.
pub const MAX_LIST_PARAM_CHARS: usize = 1024;

/// Refuses a free-text query parameter longer than `max` characters before
/// it is split, parsed, echoed in an error or sent to a store.
fn check_length(parameter: &'static str, value: Option<&str>, max: usize) -> Result<(), ReadError> {
    match value {
        // Bytes bound characters from above: most values skip the count.
        Some(v) if v.len() > max && v.chars().count() > max => {
            Err(ReadError::ParameterTooLong { parameter, max })
        }
        _ => Ok(()),
    }
}

pub(crate) fn page_size(limit: Option<u32>) -> Result<u32, ReadError> {
    match limit {
        None => Ok(DEFAULT_PAGE),
        Some(n) if (1..=MAX_PAGE).contains(&n) => Ok(n),
        Some(_) => Err(ReadError::InvalidLimit { max: MAX_PAGE }),
    }
}

/// One page of a list and the cursor of the next, when there may be one.
pub struct Page<T, C> {
    pub items: Vec<T>,
    pub next_cursor: Option<C>,
}

fn fold(subject: &SubjectId, events: &[Decoded]) -> Option<Memory> {
    Memory::fold(
        subject,
        events
            .iter()
            .map(|d| (&d.event, d.recorded.stream_version, d.recorded.recorded_at)),
    )
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

// ---------------------------------------------------------------- one memory

/// A memory, for a caller who must have `memories:read` on its subject.
pub struct MemoryRequest<'a> {
    pub caller: &'a Principal,
    pub memory: MemoryId,
}

/// A memory's stream, once the caller may read it.
async fn memory_stream(
    state: &RetrieverState,
    request: &MemoryRequest<'_>,
) -> Result<(SubjectId, Vec<Decoded>), ReadError> {
    let caller = request.caller;
    let events = state
        .log
        .read_stream(&caller.tenant, &streams::memory(&request.memory))
        .await?;
    let subject = events
        .first()
        .and_then(|d| d.recorded.subject.clone())
        .ok_or(ReadError::MemoryNotFound)?;
    caller.authorize(Scope::MemoriesRead, Some(&subject))?;
    Ok((subject, events))
}

/// The memory as its stream folds, or `SubjectErased` when the key
/// generation that sealed its creation was destroyed by an erasure (the
/// fold knows: see `Memory::fold`). Gone rather than not found: the id did
/// exist, its subject was erased on request, and a client can stop asking.
/// Checked after the caller's authorization, so only a caller who may read
/// the subject learns it was erased (which the log's erasure receipts tell
/// it anyway).
pub async fn get_memory(
    state: &RetrieverState,
    request: MemoryRequest<'_>,
) -> Result<Memory, ReadError> {
    let (subject, events) = memory_stream(state, &request).await?;
    let memory = fold(&subject, &events).ok_or(ReadError::MemoryNotFound)?;
    if memory.is_erased() {
        return Err(ReadError::SubjectErased);
    }
    Ok(memory)
}

/// A memory's versions, oldest first. An erased memory's history is still
/// shown (what happened, by whom, when: the log keeps it), with every
/// version's content `null` and its state `erased`.
pub struct History {
    pub subject: SubjectId,
    /// Per version: the event and the memory as it then was.
    pub versions: Vec<Value>,
}

pub async fn history(
    state: &RetrieverState,
    request: MemoryRequest<'_>,
) -> Result<History, ReadError> {
    let (subject, events) = memory_stream(state, &request).await?;
    let versions = history_entries(&subject, &events);
    Ok(History { subject, versions })
}

/// An opened payload with every piece of subject text `null`: how an erased
/// memory's events show, including any written after the erasure under the
/// subject's next key (older builds accepted such revisions).
fn blank(value: &Value) -> Value {
    match value {
        Value::Object(object)
            if object.len() == 1
                && (object.contains_key("$text") || object.contains_key("$erased")) =>
        {
            Value::Null
        }
        Value::Object(object) => Value::Object(
            object
                .iter()
                .map(|(key, value)| (key.clone(), blank(value)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(blank).collect()),
        other => other.clone(),
    }
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
        let erased = memory.as_ref().is_some_and(Memory::is_erased);
        let opened = match erased {
            true => blank(&recorded.payload),
            false => unmark(&recorded.payload),
        };
        let mut changes = opened.clone();
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
            "reason": opened.get("reason").cloned().unwrap_or(Value::Null),
            "pii_found": recorded.payload.get("pii").cloned().unwrap_or(Value::Null),
            "changes": changes,
            "memory": memory.as_ref().map(MemoryView::of),
        }));
    }
    entries
}

// ---------------------------------------------------------------- lists

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
    /// RFC 3339: the list as it was then, folded from the log
    /// ([`crate::asof::list_as_of`]).
    pub as_of: Option<String>,
}

impl ListQuery {
    /// The filter the query asks for, checked; the same for the list from
    /// the read model and the one folded from the log.
    pub fn filter(&self) -> Result<MemoryFilter, ReadError> {
        check_length("kind", self.kind.as_deref(), MAX_LIST_PARAM_CHARS)?;
        check_length("tag", self.tag.as_deref(), MAX_LIST_PARAM_CHARS)?;
        check_length("state", self.state.as_deref(), MAX_LIST_PARAM_CHARS)?;
        let kinds = split(&self.kind)
            .into_iter()
            .map(|k| MemoryKind::parse(k).ok_or_else(|| ReadError::InvalidKind(k.to_owned())))
            .collect::<Result<Vec<_>, _>>()?;
        let states = split(&self.state)
            .into_iter()
            .map(|s| MemoryState::parse(s).ok_or_else(|| ReadError::InvalidState(s.to_owned())))
            .collect::<Result<Vec<_>, _>>()?;
        let tags = split(&self.tag)
            .into_iter()
            .map(str::to_lowercase)
            .collect();
        let limit = page_size(self.limit)?;
        let before = self.cursor.as_deref().map(MemoryId::parse).transpose()?;
        Ok(MemoryFilter {
            kinds,
            tags,
            states,
            before,
            limit,
        })
    }
}

/// A subject's memories, for a subject whose binding the caller has checked.
pub struct ListRequest {
    pub tenant: TenantId,
    pub subject: SubjectId,
    pub query: ListQuery,
}

/// From the read model, newest first.
pub async fn list_memories(
    state: &RetrieverState,
    request: ListRequest,
) -> Result<Page<Memory, String>, ReadError> {
    let filter = request.query.filter()?;
    let limit = filter.limit;
    let memories = state
        .read_model
        .list(&request.tenant, &request.subject, &filter)
        .await?;
    let next_cursor = (memories.len() as u32 == limit)
        .then(|| memories.last().map(|m| m.id.to_string()))
        .flatten();
    Ok(Page {
        items: memories,
        next_cursor,
    })
}

// ---------------------------------------------------------------- subjects

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubjectsQuery {
    /// Only subject ids starting with this.
    pub prefix: Option<String>,
    pub limit: Option<u32>,
    /// Opaque: the `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

/// The tenant's subjects, for a caller with `memories:read` (checked
/// before); a subject-bound token sees its own subject only.
pub struct SubjectsRequest<'a> {
    pub caller: &'a Principal,
    pub query: SubjectsQuery,
}

/// From the read model (subjects with memories), by subject id. Subject ids
/// are the pseudonymous names streams and rows are keyed by, stored in
/// clear; nothing of a subject's content is read.
pub async fn list_subjects(
    state: &RetrieverState,
    request: SubjectsRequest<'_>,
) -> Result<Page<SubjectSummary, String>, ReadError> {
    let SubjectsRequest { caller, query } = request;
    check_length(
        "prefix",
        query.prefix.as_deref(),
        mnemo_domain::ids::MAX_ID_LEN,
    )?;
    let limit = page_size(query.limit)?;
    let after = query
        .cursor
        .as_deref()
        .map(|c| SubjectId::parse(c).map_err(|_| ReadError::InvalidCursor))
        .transpose()?;
    let filter = SubjectFilter {
        prefix: query.prefix.filter(|p| !p.is_empty()),
        only: caller.visible_subject(None)?,
        after,
        limit,
    };
    let subjects = state
        .read_model
        .list_subjects(&caller.tenant, &filter)
        .await?;
    let next_cursor = (subjects.len() as u32 == limit)
        .then(|| subjects.last().map(|s| s.subject.to_string()))
        .flatten();
    Ok(Page {
        items: subjects,
        next_cursor,
    })
}

// ---------------------------------------------------------------- export

/// Everything the log holds of a subject whose binding the caller has
/// checked; the export itself is recorded (`ExportGenerated`).
pub struct ExportRequest {
    pub tenant: TenantId,
    pub subject: SubjectId,
    pub metadata: EventMetadata,
}

/// The subject's readable data: content whose key was destroyed is gone,
/// not even a placeholder is left of it.
pub struct Export {
    pub counts: ExportGenerated,
    pub messages: Vec<Value>,
    pub memories: Vec<Value>,
    pub erasures: Vec<ErasureReceipt>,
}

pub async fn export_subject(
    state: &RetrieverState,
    request: ExportRequest,
) -> Result<Export, ReadError> {
    let ExportRequest {
        tenant,
        subject,
        metadata,
    } = request;
    let events = state.log.read_subject(&tenant, &subject).await?;

    let mut messages = Vec::new();
    let mut memory_streams: BTreeMap<String, Vec<Decoded>> = BTreeMap::new();
    let mut erasures = Vec::new();
    for decoded in &events {
        match &decoded.event {
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
            DomainEvent::SubjectErased(erased) => erasures.push(erased.receipt.clone()),
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
        if memory.is_erased() {
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
        .events()
        .append_one(
            &tenant,
            &streams::subject(&subject),
            ExpectedVersion::Any,
            Pending {
                event_id: EventId::new(),
                subject: Some(subject.clone()),
                event: DomainEvent::ExportGenerated(counts.clone()),
                metadata,
            },
        )
        .await?;
    Ok(Export {
        counts,
        messages,
        memories,
        erasures,
    })
}

// ---------------------------------------------------------------- audit

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

/// The tenant's log, for a caller with `audit:read`; a subject-bound token
/// sees its own subject's events only.
pub struct AuditRequest<'a> {
    pub caller: &'a Principal,
    pub query: AuditQuery,
}

pub async fn audit(
    state: &RetrieverState,
    request: AuditRequest<'_>,
) -> Result<Page<RecordedEvent, i64>, ReadError> {
    let AuditRequest { caller, query } = request;
    // No actor is longer than a token's `sub` may be.
    check_length("actor", query.actor.as_deref(), mnemo_auth::MAX_ACTOR_CHARS)?;
    check_length("type", query.event_type.as_deref(), MAX_LIST_PARAM_CHARS)?;
    let asked = query.subject.map(SubjectId::parse).transpose()?;
    let subject = caller.visible_subject(asked)?;
    let event_types: Vec<String> = split(&query.event_type)
        .into_iter()
        .map(|t| match EventType::parse(t) {
            Some(kind) => Ok(kind.as_str().to_owned()),
            None => Err(ReadError::InvalidType(t.to_owned())),
        })
        .collect::<Result<_, _>>()?;
    if let (Some(from), Some(to)) = (query.from, query.to) {
        if from > to {
            return Err(ReadError::InvalidRange);
        }
    }
    let limit = page_size(query.limit)?;
    let events = state
        .log
        .store()
        .query(
            &caller.tenant,
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
        .await?;
    let decoded = state.log.decode_all(events).await?;
    let next_cursor = (decoded.len() as u32 == limit)
        .then(|| decoded.last().map(|d| d.recorded.global_position))
        .flatten();
    Ok(Page {
        items: decoded.into_iter().map(|d| d.recorded).collect(),
        next_cursor,
    })
}

// ---------------------------------------------------------------- erasures

/// An erasure's receipt, for a caller with `gdpr:erase` or `audit:read`
/// (checked before) who may see the erased subject.
pub struct ReceiptRequest<'a> {
    pub caller: &'a Principal,
    pub erasure: ErasureId,
}

/// An erasure as requested, and its receipt once the forgetter is done.
pub struct Erasure {
    pub id: ErasureId,
    pub subject: Option<SubjectId>,
    pub requested_at: DateTime<Utc>,
    pub requested_by: String,
    pub receipt: Option<ErasureReceipt>,
}

pub async fn erasure_receipt(
    state: &RetrieverState,
    request: ReceiptRequest<'_>,
) -> Result<Erasure, ReadError> {
    let ReceiptRequest { caller, erasure } = request;
    let events = state
        .log
        .read_stream(&caller.tenant, &streams::erasure(&erasure))
        .await?;
    let first = events.first().ok_or(ReadError::ErasureNotFound)?;
    if let Some(subject) = &first.recorded.subject {
        caller.require_subject(subject)?;
    }
    let receipt = events.iter().find_map(|d| match &d.event {
        DomainEvent::SubjectErased(erased) => Some(erased.receipt.clone()),
        _ => None,
    });
    Ok(Erasure {
        id: erasure,
        subject: first.recorded.subject.clone(),
        requested_at: first.recorded.recorded_at,
        requested_by: first.recorded.metadata.actor.clone(),
        receipt,
    })
}
