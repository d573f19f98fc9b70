//! What the agent believed, and why: a memory, a subject's memories and its
//! profile as of an instant, and what changed for a subject's memories
//! between two instants. Typed requests in, [`ReadError`] out.
//!
//! Key decision: these are folds of the log, never of the read model, which
//! only knows the present. An instant `T` takes every event with
//! `recorded_at <= T` (the stores keep microseconds). A subject-level read
//! is one pass over one log query (the subject's memory events, by tenant
//! and subject, up to `T`, in pages of [`SCAN_CHUNK`]), never a query per
//! memory: its cost is the number of the subject's memory events up to `T`
//! (`mnemo bench asof` measures it).

use std::collections::{BTreeMap, HashSet};

use chrono::{DateTime, Duration, DurationRound, Utc};
use mnemo_auth::{Principal, Scope};
use mnemo_domain::events::streams;
use mnemo_domain::{
    DomainEvent, EventId, EventType, Memory, MemoryId, Producer, RecordedEvent, SubjectId, TenantId,
};
use mnemo_event_store::sealed::Decoded;
use mnemo_event_store::EventQuery;
use mnemo_http::views::MemoryView;
use mnemo_read_model::MemoryFilter;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::ReadError;
use crate::read::{page_size, Page};
use crate::review::Profile;
use crate::RetrieverState;

/// Events read per log query of a subject-level fold.
pub const SCAN_CHUNK: u32 = 5_000;

/// Parses an instant given as RFC 3339 (`2026-01-31T12:00:00Z`).
pub fn parse_instant(parameter: &'static str, raw: &str) -> Result<DateTime<Utc>, ReadError> {
    DateTime::parse_from_rfc3339(raw.trim())
        .map(|t| t.with_timezone(&Utc))
        .map_err(|_| ReadError::InvalidTime { parameter })
}

/// The exclusive bound [`EventQuery::to`] needs for "recorded at or before
/// `at`": the stores keep microseconds, so the next microsecond.
fn through(at: DateTime<Utc>) -> DateTime<Utc> {
    let floor = at.duration_trunc(Duration::microseconds(1)).unwrap_or(at);
    floor + Duration::microseconds(1)
}

/// What a [`ChangeKind`] comes from: every event type of the catalogue
/// that changes a memory, said once. The match is exhaustive on purpose: a
/// new event type must be placed here (or said not to change a memory)
/// before the build passes.
///
/// - `MemoryCreated` → `created`
/// - `MemoryRevised`, `MemoryReinforced` (new sources, one more
///   reinforcement), `RelationAdded` (a new edge) → `revised`
/// - `MemorySuperseded` → `superseded`, `MemoryMerged` → `merged`
/// - `MemoryArchived` → `archived`, `MemoryRestored` → `restored`,
///   `MemoryDeleted` → `deleted`
/// - `ReviewResolved` → `reviewed` (a person's decision on a held
///   candidate; an approval names the memory it creates, whose
///   `MemoryCreated` follows as `created`)
pub fn change_of(event_type: EventType) -> Option<ChangeKind> {
    match event_type {
        EventType::MemoryCreated => Some(ChangeKind::Created),
        EventType::MemoryRevised | EventType::MemoryReinforced | EventType::RelationAdded => {
            Some(ChangeKind::Revised)
        }
        EventType::MemorySuperseded => Some(ChangeKind::Superseded),
        EventType::MemoryMerged => Some(ChangeKind::Merged),
        EventType::MemoryArchived => Some(ChangeKind::Archived),
        EventType::MemoryRestored => Some(ChangeKind::Restored),
        EventType::MemoryDeleted => Some(ChangeKind::Deleted),
        EventType::ReviewResolved => Some(ChangeKind::Reviewed),
        EventType::MessageReceived
        | EventType::ReviewRequested
        | EventType::ProfileUpdated
        | EventType::BatchConsolidated
        | EventType::ExportGenerated
        | EventType::ConsolidationRequested
        | EventType::ErasureRequested
        | EventType::SubjectErased
        | EventType::EpisodesForgotten => None,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Created,
    Revised,
    Superseded,
    Merged,
    Archived,
    Restored,
    Deleted,
    Reviewed,
}

impl ChangeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Created => "created",
            ChangeKind::Revised => "revised",
            ChangeKind::Superseded => "superseded",
            ChangeKind::Merged => "merged",
            ChangeKind::Archived => "archived",
            ChangeKind::Restored => "restored",
            ChangeKind::Deleted => "deleted",
            ChangeKind::Reviewed => "reviewed",
        }
    }
}

/// The event types a subject-level fold reads: those of memory streams.
fn memory_event_types() -> Vec<String> {
    EventType::ALL
        .iter()
        .filter(|t| change_of(**t).is_some() && **t != EventType::ReviewResolved)
        .map(|t| t.as_str().to_owned())
        .collect()
}

/// The event that made something what it was at an instant.
#[derive(Debug, Clone)]
pub struct Cause {
    pub event_id: EventId,
    pub event_type: String,
    pub recorded_at: DateTime<Utc>,
    pub actor: String,
    /// The reason the event gives (a revision's, a state change's, a
    /// review's note), `None` when it gives none or it reads as erased.
    pub reason: Option<String>,
}

impl Cause {
    fn of(decoded: &Decoded) -> Self {
        Cause {
            event_id: decoded.recorded.event_id,
            event_type: decoded.recorded.event_type.clone(),
            recorded_at: decoded.recorded.recorded_at,
            actor: decoded.recorded.metadata.actor.clone(),
            reason: reason_of(&decoded.event).map(str::to_owned),
        }
    }

    pub fn to_json(&self) -> Value {
        json!({
            "id": self.event_id.to_string(),
            "type": self.event_type,
            "recorded_at": self.recorded_at,
            "actor": self.actor,
            "reason": self.reason,
        })
    }
}

fn reason_of(event: &DomainEvent) -> Option<&str> {
    let text = match event {
        DomainEvent::MemoryRevised(e) => e.reason.as_ref(),
        DomainEvent::MemoryArchived(e)
        | DomainEvent::MemoryRestored(e)
        | DomainEvent::MemoryDeleted(e) => e.reason.as_ref(),
        DomainEvent::MemorySuperseded(e) => e.reason.as_ref(),
        DomainEvent::MemoryMerged(e) => e.reason.as_ref(),
        DomainEvent::ReviewResolved(e) => e.note.as_ref(),
        _ => None,
    };
    text.and_then(|t| t.as_text())
}

/// A memory as of an instant, and the last event at or before it.
pub struct MemoryAsOf {
    pub memory: Memory,
    pub cause: Cause,
}

impl MemoryAsOf {
    pub fn to_json(&self, at: DateTime<Utc>) -> Value {
        let mut view = json!(MemoryView::of(&self.memory));
        view["as_of"] = json!({"at": at, "event": self.cause.to_json()});
        view
    }
}

/// Applies one event of a memory's stream to what the stream folded to so
/// far (as [`Memory::fold`] does, one step at a time).
fn advance(slot: &mut Option<Memory>, subject: &SubjectId, decoded: &Decoded) {
    let recorded = &decoded.recorded;
    if let DomainEvent::MemoryCreated(_) = &decoded.event {
        *slot = Memory::fold(
            subject,
            [(
                &decoded.event,
                recorded.stream_version,
                recorded.recorded_at,
            )],
        );
    } else if let Some(memory) = slot.as_mut() {
        memory.apply(&decoded.event);
        memory.version = recorded.stream_version;
        memory.updated_at = recorded.recorded_at;
    }
}

/// The memory a memory stream's event belongs to.
fn stream_memory(decoded: &Decoded) -> Option<MemoryId> {
    mnemo_domain::events::streams::memory_id(&decoded.recorded.stream_id)
}

// ---------------------------------------------------------------- one memory

/// `?as_of=` on a read of one resource. Other parameters stay ignored, as
/// they were before `as_of` existed.
#[derive(Debug, Deserialize)]
pub struct AsOfQuery {
    pub as_of: Option<String>,
}

impl AsOfQuery {
    pub fn instant(&self) -> Result<Option<DateTime<Utc>>, ReadError> {
        self.as_of
            .as_deref()
            .map(|raw| parse_instant("as_of", raw))
            .transpose()
    }
}

pub struct MemoryAsOfRequest<'a> {
    pub caller: &'a Principal,
    pub memory: MemoryId,
    pub at: DateTime<Utc>,
}

/// The memory folded from its stream's events recorded at or before the
/// instant. Not found when it had no event by then (or is another
/// tenant's); gone when its subject was erased since, as today's read.
pub async fn memory_as_of(
    state: &RetrieverState,
    request: MemoryAsOfRequest<'_>,
) -> Result<MemoryAsOf, ReadError> {
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
    let mut memory = None;
    let mut cause = None;
    for decoded in events
        .iter()
        .filter(|d| d.recorded.recorded_at <= request.at)
    {
        advance(&mut memory, &subject, decoded);
        cause = Some(decoded);
    }
    let (Some(memory), Some(cause)) = (memory, cause) else {
        return Err(ReadError::MemoryNotFound);
    };
    if memory.is_erased() {
        return Err(ReadError::SubjectErased);
    }
    Ok(MemoryAsOf {
        memory,
        cause: Cause::of(cause),
    })
}

// ---------------------------------------------------------------- a subject's

/// What [`scan_subject`] does with an event before opening it.
enum Scan {
    Open,
    Skip,
    Stop,
}

/// Every event of the types asked about the subject recorded at or before
/// `until`, in log order: one query, read in chunks. `pick` sees each
/// stored event first (its stream and position are in clear); only those
/// it wants opened are decrypted and decoded for `visit`, which is what a
/// fold mostly costs.
async fn scan_subject(
    state: &RetrieverState,
    tenant: &TenantId,
    subject: &SubjectId,
    event_types: Vec<String>,
    until: DateTime<Utc>,
    mut pick: impl FnMut(&RecordedEvent) -> Scan,
    mut visit: impl FnMut(&Decoded),
) -> Result<(), ReadError> {
    let mut after = None;
    loop {
        let events = state
            .log
            .store()
            .query(
                tenant,
                &EventQuery {
                    subject: Some(subject.clone()),
                    event_types: event_types.clone(),
                    to: Some(through(until)),
                    after_position: after,
                    limit: SCAN_CHUNK,
                    ..Default::default()
                },
            )
            .await?;
        let full = events.len() as u32 == SCAN_CHUNK;
        after = events.last().map(|e| e.global_position).or(after);
        for recorded in events {
            match pick(&recorded) {
                Scan::Open => visit(&state.log.decode(recorded).await?),
                Scan::Skip => {}
                Scan::Stop => return Ok(()),
            }
        }
        if !full {
            return Ok(());
        }
    }
}

/// Whether a folded memory passes a list's filter, as the read model's
/// query decides it: any of the kinds, any of the states (every state but
/// `deleted` when none is asked), every tag, older than the cursor.
fn matches(filter: &MemoryFilter, memory: &Memory) -> bool {
    let state = match filter.states.is_empty() {
        true => memory.state != mnemo_domain::MemoryState::Deleted,
        false => filter.states.contains(&memory.state),
    };
    state
        && (filter.kinds.is_empty() || filter.kinds.contains(&memory.kind))
        && filter.tags.iter().all(|tag| memory.tags.contains(tag))
        && filter.before.is_none_or(|before| memory.id < before)
}

/// A subject's memories as of an instant, for a subject whose binding the
/// caller has checked.
pub struct ListAsOfRequest {
    pub tenant: TenantId,
    pub subject: SubjectId,
    pub filter: MemoryFilter,
    pub at: DateTime<Utc>,
}

/// The list as `list_memories` gives it (newest first, the same filters and
/// cursor), from the log: erased memories are left out, as the read model
/// never serves them.
pub async fn list_as_of(
    state: &RetrieverState,
    request: ListAsOfRequest,
) -> Result<Page<MemoryAsOf, String>, ReadError> {
    let ListAsOfRequest {
        tenant,
        subject,
        filter,
        at,
    } = request;
    let mut folded: BTreeMap<MemoryId, (Option<Memory>, Option<Cause>)> = BTreeMap::new();
    scan_subject(
        state,
        &tenant,
        &subject,
        memory_event_types(),
        at,
        |_| Scan::Open,
        |decoded| {
            if let Some(id) = stream_memory(decoded) {
                let (memory, cause) = folded.entry(id).or_default();
                advance(memory, &subject, decoded);
                *cause = Some(Cause::of(decoded));
            }
        },
    )
    .await?;
    let limit = filter.limit;
    let items: Vec<MemoryAsOf> = folded
        .into_values()
        .rev()
        .filter_map(|(memory, cause)| Some((memory?, cause?)))
        .filter(|(memory, _)| !memory.is_erased() && matches(&filter, memory))
        .take(limit as usize)
        .map(|(memory, cause)| MemoryAsOf { memory, cause })
        .collect();
    let next_cursor = (items.len() as u32 == limit)
        .then(|| items.last().map(|m| m.memory.id.to_string()))
        .flatten();
    Ok(Page { items, next_cursor })
}

/// The subject's profile as of an instant: its last readable update
/// recorded at or before it (as `latest_profile` reads the last one).
pub async fn profile_as_of(
    state: &RetrieverState,
    tenant: &TenantId,
    subject: &SubjectId,
    at: DateTime<Utc>,
) -> Result<Option<(Profile, Cause)>, ReadError> {
    let mut events = state
        .log
        .store()
        .read_stream(tenant, &streams::profile(subject))
        .await?;
    let Some(index) = events
        .iter()
        .rposition(|e| e.is(EventType::ProfileUpdated) && e.recorded_at <= at)
    else {
        return Ok(None);
    };
    let decoded = state.log.decode(events.swap_remove(index)).await?;
    let cause = Cause::of(&decoded);
    let DomainEvent::ProfileUpdated(update) = decoded.event else {
        return Ok(None);
    };
    let Some(summary) = update.summary.as_text().map(str::to_owned) else {
        return Ok(None);
    };
    Ok(Some((
        Profile {
            summary,
            version: decoded.recorded.stream_version,
            updated_at: decoded.recorded.recorded_at,
            update,
        },
        cause,
    )))
}

// ---------------------------------------------------------------- changes

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChangesQuery {
    /// RFC 3339; changes recorded after it.
    pub from: Option<String>,
    /// RFC 3339; changes recorded at or before it (default: now).
    pub to: Option<String>,
    pub limit: Option<u32>,
    /// Opaque: the `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

/// What changed for a subject's memories, for a subject whose binding the
/// caller has checked.
pub struct ChangesRequest {
    pub tenant: TenantId,
    pub subject: SubjectId,
    pub query: ChangesQuery,
}

/// One change: the event, and the memory just before and right after it.
pub struct Change {
    /// The memory changed; `None` for a rejected review, which creates none.
    pub memory_id: Option<MemoryId>,
    pub kind: ChangeKind,
    pub cause: Cause,
    pub position: i64,
    pub producer: Option<Producer>,
    /// For a `reviewed` change: the review and its decision.
    pub review: Option<(MemoryId, &'static str)>,
    pub before: Option<Memory>,
    pub after: Option<Memory>,
}

impl Change {
    pub fn to_json(&self) -> Value {
        json!({
            "memory_id": self.memory_id.map(|id| id.to_string()),
            "change": self.kind.as_str(),
            "at": self.cause.recorded_at,
            "event_id": self.cause.event_id.to_string(),
            "event_type": self.cause.event_type,
            "actor": self.cause.actor,
            "reason": self.cause.reason,
            "producer": self.producer.as_ref().map(|p| json!({
                "strategy": p.strategy,
                "model": p.model,
                "prompt_version": p.prompt_version,
            })),
            "review": self.review.map(|(id, decision)| json!({
                "id": id.to_string(),
                "decision": decision,
            })),
            "before": self.before.as_ref().map(MemoryView::of),
            "after": self.after.as_ref().map(MemoryView::of),
        })
    }
}

/// The changes recorded in `(from, to]`, oldest first (log order), a page
/// at a time: the page's events from one query, then one pass over the
/// subject's memory events up to the page's last, which opens only the
/// streams of the memories the page touches.
pub async fn changes(
    state: &RetrieverState,
    request: ChangesRequest,
) -> Result<Page<Change, String>, ReadError> {
    let ChangesRequest {
        tenant,
        subject,
        query,
    } = request;
    let from = query
        .from
        .as_deref()
        .ok_or(ReadError::MissingParameter { parameter: "from" })
        .and_then(|raw| parse_instant("from", raw))?;
    let to = match query.to.as_deref() {
        Some(raw) => parse_instant("to", raw)?,
        None => Utc::now(),
    };
    if from >= to {
        return Err(ReadError::InvalidRange);
    }
    let limit = page_size(query.limit)?;
    let after = query
        .cursor
        .as_deref()
        .map(|c| c.parse::<i64>().map_err(|_| ReadError::InvalidCursor))
        .transpose()?;

    let mut event_types = memory_event_types();
    event_types.push(EventType::ReviewResolved.as_str().to_owned());

    // The page first: its events, and the memories they touch.
    let mut page = state
        .log
        .store()
        .query(
            &tenant,
            &EventQuery {
                subject: Some(subject.clone()),
                event_types: event_types.clone(),
                // `from` is inclusive in the query: the next microsecond
                // is "recorded after `from`".
                from: Some(through(from)),
                to: Some(through(to)),
                after_position: after,
                limit: limit + 1,
                ..Default::default()
            },
        )
        .await?;
    let more = page.len() as u32 > limit;
    page.truncate(limit as usize);
    let Some(last) = page.last().map(|e| e.global_position) else {
        return Ok(Page {
            items: Vec::new(),
            next_cursor: None,
        });
    };
    let positions: HashSet<i64> = page.iter().map(|e| e.global_position).collect();
    let mut touched: HashSet<String> = HashSet::new();
    for decoded in state.log.decode_all(page).await? {
        match &decoded.event {
            DomainEvent::ReviewResolved(resolved) => {
                touched.extend(resolved.memory_id.as_ref().map(streams::memory));
            }
            _ => {
                touched.insert(decoded.recorded.stream_id.clone());
            }
        }
    }

    // Then one pass from the subject's first event to the page's last,
    // opening only the streams the page touches: every `before` is exact,
    // and the other memories' events cost a row read, not a decryption.
    let mut folded: BTreeMap<MemoryId, Option<Memory>> = BTreeMap::new();
    let mut items: Vec<Change> = Vec::with_capacity(positions.len());
    scan_subject(
        state,
        &tenant,
        &subject,
        event_types,
        to,
        |recorded| match recorded.global_position {
            position if position > last => Scan::Stop,
            position if positions.contains(&position) => Scan::Open,
            _ if touched.contains(&recorded.stream_id) => Scan::Open,
            _ => Scan::Skip,
        },
        |decoded| {
            let recorded = &decoded.recorded;
            let (memory_id, review) = match &decoded.event {
                DomainEvent::ReviewResolved(resolved) => (
                    resolved.memory_id,
                    Some((resolved.review_id, resolved.decision.as_str())),
                ),
                _ => (stream_memory(decoded), None),
            };
            let before = memory_id.and_then(|id| folded.get(&id).cloned().flatten());
            if review.is_none() {
                if let Some(id) = memory_id {
                    advance(folded.entry(id).or_default(), &subject, decoded);
                }
            }
            let kind = EventType::parse(&recorded.event_type).and_then(change_of);
            let (Some(kind), true) = (kind, positions.contains(&recorded.global_position)) else {
                return;
            };
            let producer = match &decoded.event {
                DomainEvent::MemoryCreated(created) => Some(created.provenance.producer.clone()),
                _ => None,
            };
            items.push(Change {
                memory_id,
                kind,
                cause: Cause::of(decoded),
                position: recorded.global_position,
                producer,
                review,
                before,
                after: memory_id.and_then(|id| folded.get(&id).cloned().flatten()),
            });
        },
    )
    .await?;
    let next_cursor = more.then(|| last.to_string());
    Ok(Page { items, next_cursor })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_memory_stream_event_type_is_a_change() {
        // Every type a memory stream holds (see `Memory::apply`) is mapped;
        // nothing else is, but the review decision.
        let mapped: Vec<&str> = EventType::ALL
            .iter()
            .filter(|t| change_of(**t).is_some())
            .map(|t| t.as_str())
            .collect();
        assert_eq!(
            mapped,
            [
                "MemoryCreated",
                "MemoryRevised",
                "MemoryMerged",
                "MemorySuperseded",
                "MemoryReinforced",
                "MemoryArchived",
                "MemoryRestored",
                "MemoryDeleted",
                "RelationAdded",
                "ReviewResolved"
            ]
        );
    }

    #[test]
    fn an_instant_includes_its_own_microsecond() {
        let at = parse_instant("as_of", "2026-01-31T12:00:00.0000019Z").unwrap();
        assert_eq!(
            through(at),
            parse_instant("as_of", "2026-01-31T12:00:00.000002Z").unwrap()
        );
        assert!(matches!(
            parse_instant("as_of", "yesterday"),
            Err(ReadError::InvalidTime { parameter: "as_of" })
        ));
    }
}
