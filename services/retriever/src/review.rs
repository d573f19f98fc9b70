//! The review queue and the subject profile, read from the log (seed 004,
//! seeds 002/003).
//!
//! A review is pending while its stream `review-{id}` holds only its
//! `ReviewRequested`; the queue is a log query on that event type plus one
//! short stream read per review. The statistics are counts over the
//! `BatchConsolidated` records, which hold no subject content and so
//! survive erasures; they show what the tenant's thresholds do now and
//! what other thresholds would have done.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};
use mnemo_auth::Principal;
use mnemo_domain::events::{streams, ProfileUpdated, Route};
use mnemo_domain::{
    DomainEvent, EventId, EventType, MemoryId, Producer, RecordedEvent, SubjectId, TenantId,
};
use mnemo_event_store::EventQuery;
use mnemo_http::views::round4;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::ReadError;
use crate::read::Page;
use crate::RetrieverState;

const DEFAULT_PAGE: u32 = 50;
const MAX_PAGE: u32 = 200;
/// Events read per log query while scanning.
const SCAN_CHUNK: u32 = 500;

/// The subject a query may see: the asked one (which a subject-bound token
/// must match), or the token's own when it is bound and none is asked.
fn visible_subject(
    caller: &Principal,
    asked: Option<&str>,
) -> Result<Option<SubjectId>, ReadError> {
    let asked = asked.map(SubjectId::parse).transpose()?;
    Ok(caller.visible_subject(asked)?)
}

/// Every event of the given type (and subject) at or after `from`, after
/// the cursor, in log order, calling `visit` until it returns false.
pub(crate) async fn scan(
    state: &RetrieverState,
    tenant: &TenantId,
    event_type: EventType,
    subject: Option<&SubjectId>,
    from: Option<DateTime<Utc>>,
    mut after: Option<i64>,
    mut visit: impl FnMut(RecordedEvent) -> ScanStep,
) -> Result<(), ReadError> {
    loop {
        let events = state
            .log
            .store()
            .query(
                tenant,
                &EventQuery {
                    subject: subject.cloned(),
                    event_types: vec![event_type.as_str().to_owned()],
                    from,
                    after_position: after,
                    limit: SCAN_CHUNK,
                    ..Default::default()
                },
            )
            .await?;
        let full = events.len() as u32 == SCAN_CHUNK;
        for event in events {
            after = Some(event.global_position);
            if let ScanStep::Stop = visit(event) {
                return Ok(());
            }
        }
        if !full {
            return Ok(());
        }
    }
}

pub(crate) enum ScanStep {
    Continue,
    Stop,
}

/// True while the review's stream holds no decision.
async fn is_pending(
    state: &RetrieverState,
    tenant: &TenantId,
    review_id: &MemoryId,
) -> Result<bool, ReadError> {
    let events = state
        .log
        .store()
        .read_stream(tenant, &streams::review(review_id))
        .await?;
    Ok(!events.iter().any(|e| e.is(EventType::ReviewResolved)))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewListQuery {
    pub subject: Option<String>,
    pub limit: Option<u32>,
    /// Opaque: the `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

fn review_view(recorded: &RecordedEvent, request: &mnemo_domain::events::ReviewRequested) -> Value {
    let text = |t: &Option<mnemo_domain::SubjectText>| {
        t.as_ref().and_then(|t| t.as_text()).map(str::to_owned)
    };
    json!({
        "id": request.review_id.to_string(),
        "subject": recorded.subject.as_ref().map(SubjectId::as_str),
        "proposed": request.proposed.as_text(),
        "kind": request.kind.as_str(),
        "tags": request.tags,
        "confidence": round4(request.confidence),
        "action": request.action.as_str(),
        "target": request.target.map(|t| t.to_string()),
        "reason": text(&request.reason),
        // The code and the signals are plain: shown even where the worded
        // reason is not (absent on reviews recorded before they existed).
        "reason_code": request.reason_code.map(|code| code.as_str()),
        "signals": request.signals,
        "excerpt": text(&request.excerpt),
        "source_event_ids": request.source_event_ids.iter().map(EventId::to_string).collect::<Vec<_>>(),
        "producer": request.producer.as_ref().map(|p: &Producer| json!(p)),
        "session": request.session.as_ref().map(|s| s.as_str()),
        "requested_at": recorded.recorded_at,
    })
}

/// The pending reviews, for a caller with `memories:review` (checked
/// before); a subject-bound token sees its own subject's only.
pub struct ReviewListRequest<'a> {
    pub caller: &'a Principal,
    pub query: ReviewListQuery,
}

/// Oldest first; each review as its JSON view.
pub async fn list_reviews(
    state: &RetrieverState,
    request: ReviewListRequest<'_>,
) -> Result<Page<Value, String>, ReadError> {
    let ReviewListRequest { caller, query } = request;
    let subject = visible_subject(caller, query.subject.as_deref())?;
    let limit = match query.limit {
        None => DEFAULT_PAGE,
        Some(n) if (1..=MAX_PAGE).contains(&n) => n,
        Some(_) => return Err(ReadError::InvalidLimit { max: MAX_PAGE }),
    };
    let after = query
        .cursor
        .as_deref()
        .map(|raw| raw.parse::<i64>().map_err(|_| ReadError::InvalidCursor))
        .transpose()?;
    let tenant = &caller.tenant;

    // Requests first (log order = oldest first), then one stream read each.
    let mut requests = Vec::new();
    let mut after_scan = after;
    let mut exhausted = false;
    let mut items = Vec::new();
    let mut last_position = None;
    while items.len() < limit as usize && !exhausted {
        requests.clear();
        scan(
            state,
            tenant,
            EventType::ReviewRequested,
            subject.as_ref(),
            None,
            after_scan,
            |event| {
                requests.push(event);
                if requests.len() as u32 >= SCAN_CHUNK {
                    ScanStep::Stop
                } else {
                    ScanStep::Continue
                }
            },
        )
        .await?;
        exhausted = (requests.len() as u32) < SCAN_CHUNK;
        for recorded in requests.drain(..) {
            after_scan = Some(recorded.global_position);
            let decoded = state.log.decode(recorded).await?;
            let DomainEvent::ReviewRequested(request) = &decoded.event else {
                continue;
            };
            // An erased subject's review cannot be read, nor decided.
            if request.proposed.is_erased()
                || !is_pending(state, tenant, &request.review_id).await?
            {
                continue;
            }
            items.push(review_view(&decoded.recorded, request));
            last_position = Some(decoded.recorded.global_position);
            if items.len() == limit as usize {
                break;
            }
        }
    }
    let next_cursor = (items.len() == limit as usize)
        .then(|| last_position.map(|p| p.to_string()))
        .flatten();
    Ok(Page { items, next_cursor })
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatsQuery {
    pub days: Option<u32>,
    pub subject: Option<String>,
}

/// 0.05, 0.10, … 0.95, each the f32 nearest its decimal (as confidences
/// written as decimals are).
fn threshold_grid() -> impl Iterator<Item = f32> {
    (1..=19).map(|step| (f64::from(step) / 20.0) as f32)
}

/// What the tenant's thresholds did over the last days, for a caller with
/// `memories:review` (checked before); a subject-bound token sees its own
/// subject's only.
pub struct StatsRequest<'a> {
    pub caller: &'a Principal,
    pub query: StatsQuery,
}

const MAX_STATS_DAYS: u32 = 365;

/// The statistics document.
pub async fn review_stats(
    state: &RetrieverState,
    request: StatsRequest<'_>,
) -> Result<Value, ReadError> {
    let StatsRequest { caller, query } = request;
    let days = query.days.unwrap_or(30);
    if !(1..=MAX_STATS_DAYS).contains(&days) {
        return Err(ReadError::InvalidDays {
            max: MAX_STATS_DAYS,
        });
    }
    let subject = visible_subject(caller, query.subject.as_deref())?;
    let tenant = &caller.tenant;
    let since = Utc::now() - Duration::days(i64::from(days));
    let routing = routing_since(state, tenant, subject.as_ref(), since).await?;
    let decided = decisions_since(state, tenant, subject.as_ref(), since).await?;
    let pending = pending_reviews(state, tenant, subject.as_ref()).await?;

    let policy = state.consolidation.for_tenant(tenant.as_str());
    let auto_threshold = policy.auto_threshold_for("llm");
    let review_threshold = policy.min_confidence;
    let confidences = &routing.confidences;
    let count = |keep: &dyn Fn(f32) -> bool| confidences.iter().filter(|c| keep(**c)).count();
    let grid: Vec<Value> = threshold_grid()
        .map(|t| {
            json!({
                "threshold": round4(t),
                "auto_accepted": count(&|c| c >= t),
                "discarded": count(&|c| c < t),
            })
        })
        .collect();
    let total_decided: u64 = decided.values().sum();
    let acceptance_rate = (total_decided > 0)
        .then(|| (decided["approve"] + decided["edit"]) as f64 / total_decided as f64);

    Ok(json!({
        "days": days,
        "since": since,
        "batches": routing.batches,
        "candidates": confidences.len(),
        "routed": routing.routed,
        // Held for review as suspected injections, whatever their
        // confidence: part of `routed.review`. The threshold arithmetic
        // below still counts them by confidence, although no threshold
        // would have made them memories.
        "suspected_injections": routing.suspected_injections,
        "thresholds": {
            "auto": round4(auto_threshold),
            "review": round4(review_threshold),
        },
        "current_split": {
            "auto_accepted": count(&|c| c >= auto_threshold),
            "review": count(&|c| c >= review_threshold && c < auto_threshold),
            "discarded": count(&|c| c < review_threshold),
        },
        "grid": grid,
        "reviews": {
            "decided": decided,
            "total_decided": total_decided,
            "acceptance_rate": acceptance_rate,
            "pending": pending,
        },
    }))
}

/// What the batch records since `since` say about routing.
struct Routing {
    batches: u64,
    confidences: Vec<f32>,
    routed: BTreeMap<&'static str, u64>,
    suspected_injections: u64,
}

async fn routing_since(
    state: &RetrieverState,
    tenant: &TenantId,
    subject: Option<&SubjectId>,
    since: DateTime<Utc>,
) -> Result<Routing, ReadError> {
    let mut routing = Routing {
        batches: 0,
        confidences: Vec::new(),
        routed: Route::ALL.into_iter().map(|r| (r.as_str(), 0)).collect(),
        suspected_injections: 0,
    };
    let mut undecodable = 0u64;
    scan(
        state,
        tenant,
        EventType::BatchConsolidated,
        subject,
        Some(since),
        None,
        |event| {
            // No subject content: the payload decodes without a key.
            match DomainEvent::decode(&event.event_type, event.schema_version, event.payload) {
                Ok(DomainEvent::BatchConsolidated(batch)) => {
                    routing.batches += 1;
                    routing.suspected_injections += u64::from(batch.suspected_injections);
                    for candidate in batch.candidates {
                        routing.confidences.push(candidate.confidence);
                        *routing.routed.entry(candidate.route.as_str()).or_default() += 1;
                    }
                }
                _ => undecodable += 1,
            }
            ScanStep::Continue
        },
    )
    .await?;
    if undecodable > 0 {
        tracing::warn!(tenant = %tenant, undecodable, "batch records skipped in review stats");
    }
    Ok(routing)
}

/// Review decisions since `since`, by decision.
async fn decisions_since(
    state: &RetrieverState,
    tenant: &TenantId,
    subject: Option<&SubjectId>,
    since: DateTime<Utc>,
) -> Result<BTreeMap<&'static str, u64>, ReadError> {
    let mut decided: BTreeMap<&'static str, u64> =
        [("approve", 0), ("edit", 0), ("reject", 0)].into();
    scan(
        state,
        tenant,
        EventType::ReviewResolved,
        subject,
        Some(since),
        None,
        |event| {
            // The decision is plain; only the edit and the note are sealed.
            match event.payload["decision"].as_str() {
                Some("approve") => *decided.entry("approve").or_default() += 1,
                Some("edit") => *decided.entry("edit").or_default() += 1,
                Some("reject") => *decided.entry("reject").or_default() += 1,
                _ => {}
            }
            ScanStep::Continue
        },
    )
    .await?;
    Ok(decided)
}

/// Reviews still waiting for a decision, whenever they were requested.
async fn pending_reviews(
    state: &RetrieverState,
    tenant: &TenantId,
    subject: Option<&SubjectId>,
) -> Result<u64, ReadError> {
    let mut reviews = Vec::new();
    scan(
        state,
        tenant,
        EventType::ReviewRequested,
        subject,
        None,
        None,
        |event| {
            reviews.push(event);
            ScanStep::Continue
        },
    )
    .await?;
    let mut pending = 0u64;
    for event in reviews {
        let decoded = state.log.decode(event).await?;
        let DomainEvent::ReviewRequested(request) = &decoded.event else {
            continue;
        };
        // As in the list: an erased subject's review can no longer be decided.
        if !request.proposed.is_erased() && is_pending(state, tenant, &request.review_id).await? {
            pending += 1;
        }
    }
    Ok(pending)
}

/// A subject's latest profile.
pub struct Profile {
    pub summary: String,
    pub version: u64,
    pub updated_at: DateTime<Utc>,
    pub update: ProfileUpdated,
}

impl Profile {
    pub fn to_json(&self, subject: &SubjectId) -> Value {
        json!({
            "subject": subject.as_str(),
            "summary": self.summary,
            "version": self.version,
            "updated_at": self.updated_at,
            "memory_ids": self.update.memory_ids.iter().map(MemoryId::to_string).collect::<Vec<_>>(),
            "covers_position": self.update.covers_position,
            "producer": self.update.producer,
        })
    }
}

/// The latest readable `ProfileUpdated` of the subject, if any. The event
/// store reads a stream only whole, so this reads the profile stream and
/// opens just its last update (one update per few memories keeps it short).
pub async fn latest_profile(
    state: &RetrieverState,
    tenant: &TenantId,
    subject: &SubjectId,
) -> Result<Option<Profile>, ReadError> {
    let mut events = state
        .log
        .store()
        .read_stream(tenant, &streams::profile(subject))
        .await?;
    let Some(index) = events.iter().rposition(|e| e.is(EventType::ProfileUpdated)) else {
        return Ok(None);
    };
    let last = events.swap_remove(index);
    let decoded = state.log.decode(last).await?;
    let DomainEvent::ProfileUpdated(update) = decoded.event else {
        return Ok(None);
    };
    let Some(summary) = update.summary.as_text().map(str::to_owned) else {
        return Ok(None);
    };
    Ok(Some(Profile {
        summary,
        version: decoded.recorded.stream_version,
        updated_at: decoded.recorded.recorded_at,
        update,
    }))
}
