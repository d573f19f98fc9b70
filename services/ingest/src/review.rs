//! Deciding a review (seed 004): a person approves, edits or rejects a
//! candidate the consolidator held back.
//!
//! The decision is `ReviewResolved`, appended as the review stream's second
//! event (`ExpectedVersion::Exact(1)`), so of two reviewers only one decides;
//! its event id is derived from the decision, so the same decision retried
//! is a duplicate rather than a conflict. The memory an approval creates
//! (and the supersede / merge on the target) is appended afterwards with
//! derived ids too: a retry after a crash between the appends completes
//! what is missing and duplicates nothing.

use actix_web::{web, HttpRequest, HttpResponse};
use mnemo_auth::{Principal, Scope};
use mnemo_domain::events::{
    streams, MemoryCreated, MemoryMerged, MemorySuperseded, PiiCounts, ProposedAction,
    ReviewDecision, ReviewRequested, ReviewResolved,
};
use mnemo_domain::{
    importance_for, DomainEvent, EventId, EventMetadata, Memory, MemoryId, MemoryKind, MemoryState,
    Producer, Provenance, SubjectId, SubjectText,
};
use mnemo_event_store::sealed::{Decoded, LogError, Pending};
use mnemo_event_store::{EventStoreError, ExpectedVersion};
use mnemo_http::context::event_metadata;
use mnemo_http::views::MemoryView;
use mnemo_http::{ApiError, Authenticated};
use serde::Deserialize;
use serde_json::json;

use crate::handlers::{check_content, check_tags, MAX_REASON_CHARS};
use crate::scrub::ScrubSession;
use crate::IngestState;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResolveInput {
    pub decision: ReviewDecision,
    /// The corrected content: required for `edit`, refused otherwise.
    pub content: Option<String>,
    /// Edit only: replaces the proposed kind.
    pub kind: Option<MemoryKind>,
    /// Edit only: replaces the proposed tags.
    pub tags: Option<Vec<String>>,
    pub note: Option<String>,
}

/// The memory an approval of `review_id` creates: one id per review, so a
/// retried approval finds the memory it already made.
pub fn memory_id_for(review_id: &MemoryId) -> MemoryId {
    let derived = EventId::derived(&["review-memory", &review_id.to_string()]);
    MemoryId::from_uuid(derived.as_uuid())
}

fn review_not_found() -> ApiError {
    ApiError::not_found("review_not_found", "no such review")
}

fn add_counts(into: &mut PiiCounts, more: &PiiCounts) {
    for (kind, count) in more {
        *into.entry(kind.clone()).or_default() += count;
    }
}

/// The review's request and, when decided, its resolution with its actor
/// and time.
struct ReviewStream {
    subject: SubjectId,
    request: ReviewRequested,
    resolution: Option<(ReviewResolved, Decoded)>,
}

async fn load_review(
    state: &IngestState,
    principal: &Principal,
    review_id: &MemoryId,
) -> Result<ReviewStream, ApiError> {
    let events = state
        .log
        .read_stream(&principal.tenant, &streams::review(review_id))
        .await
        .map_err(ApiError::from)?;
    let first = events.first().ok_or_else(review_not_found)?;
    let (Some(subject), DomainEvent::ReviewRequested(request)) =
        (first.recorded.subject.clone(), &first.event)
    else {
        return Err(review_not_found());
    };
    principal.require_subject(&subject)?;
    // An erased subject's review has nothing left to decide on.
    if request.proposed.is_erased() {
        return Err(review_not_found());
    }
    let resolution = events.iter().skip(1).find_map(|d| match &d.event {
        DomainEvent::ReviewResolved(resolved) => Some((resolved.clone(), d.clone())),
        _ => None,
    });
    Ok(ReviewStream {
        subject,
        request: request.clone(),
        resolution,
    })
}

struct Checked {
    decision: ReviewDecision,
    content: Option<String>,
    kind: Option<MemoryKind>,
    tags: Option<Vec<String>>,
    note: Option<String>,
}

fn check_input(input: ResolveInput, state: &IngestState) -> Result<Checked, ApiError> {
    let editing = input.decision == ReviewDecision::Edit;
    match (&input.content, editing) {
        (None, true) => {
            return Err(ApiError::bad_request(
                "content_required",
                "an edit needs the corrected content",
            ))
        }
        (Some(_), false) => {
            return Err(ApiError::bad_request(
                "content_not_allowed",
                "content is only for an edit",
            ))
        }
        _ => {}
    }
    if !editing && (input.kind.is_some() || input.tags.is_some()) {
        return Err(ApiError::bad_request(
            "edit_only_field",
            "kind and tags are only for an edit",
        ));
    }
    if let Some(content) = &input.content {
        check_content("content", content, state.limits.max_content_chars)?;
    }
    if let Some(note) = &input.note {
        check_content("note", note, MAX_REASON_CHARS)?;
    }
    let tags = input.tags.as_deref().map(check_tags).transpose()?;
    Ok(Checked {
        decision: input.decision,
        content: input.content,
        kind: input.kind,
        tags,
        note: input.note,
    })
}

pub async fn resolve_review(
    Authenticated(principal): Authenticated,
    path: web::Path<String>,
    body: web::Json<ResolveInput>,
    state: web::Data<IngestState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    principal.require_scope(Scope::MemoriesReview)?;
    let review_id = MemoryId::parse(path.as_str())?;
    let input = check_input(body.into_inner(), &state)?;
    let tenant = &principal.tenant;
    let mut review = load_review(&state, &principal, &review_id).await?;
    let metadata = event_metadata(&req, &principal.actor);

    // Counts of the edited content alone, for the memory it becomes.
    let mut content_pii = None;
    if review.resolution.is_none() {
        let mut scrub = ScrubSession::new(&state.scrubbers, tenant, &state.metrics);
        let edited = input
            .content
            .as_deref()
            .map(|c| SubjectText::new(scrub.scrub(c)));
        let edited_pii = scrub.finish();
        let mut scrub = ScrubSession::new(&state.scrubbers, tenant, &state.metrics);
        let note = input
            .note
            .as_deref()
            .map(|n| SubjectText::new(scrub.scrub(n)));
        let mut pii = scrub.finish();
        add_counts(&mut pii, &edited_pii);
        content_pii = Some(edited_pii);
        let memory_id =
            (input.decision != ReviewDecision::Reject).then(|| memory_id_for(&review_id));
        let event = DomainEvent::ReviewResolved(ReviewResolved {
            review_id,
            decision: input.decision,
            edited,
            kind: input.kind,
            tags: input.tags.clone(),
            memory_id,
            note,
            pii,
        });
        let appended = state
            .log
            .append(
                tenant,
                &streams::review(&review_id),
                ExpectedVersion::Exact(1),
                vec![Pending {
                    event_id: EventId::derived(&[
                        tenant.as_str(),
                        &review_id.to_string(),
                        "resolved",
                        input.decision.as_str(),
                    ]),
                    subject: Some(review.subject.clone()),
                    event,
                    metadata: metadata.clone(),
                }],
            )
            .await;
        match appended {
            Ok(result) => {
                if result.events.iter().any(|e| !e.duplicate) {
                    state
                        .metrics
                        .events_appended_total
                        .with_label_values(&["ReviewResolved"])
                        .inc();
                }
            }
            // Another reviewer decided first: what they decided is read below.
            Err(LogError::Store(EventStoreError::Conflict { .. })) => {}
            Err(other) => return Err(other.into()),
        }
        review = load_review(&state, &principal, &review_id).await?;
    }
    let Some((resolution, resolved_event)) = review.resolution.clone() else {
        return Err(ApiError::internal(std::io::Error::other(
            "the review has no resolution after appending one",
        )));
    };
    if resolution.decision != input.decision {
        return Err(ApiError::conflict(
            "review_already_resolved",
            format!(
                "the review was already decided: {}",
                resolution.decision.as_str()
            ),
        ));
    }

    let memory = match resolution.decision {
        ReviewDecision::Reject => None,
        ReviewDecision::Approve | ReviewDecision::Edit => Some(
            complete_memory(
                &state,
                &principal,
                &review,
                &resolution,
                content_pii,
                &metadata,
            )
            .await?,
        ),
    };
    let recorded = &resolved_event.recorded;
    Ok(HttpResponse::Ok().json(json!({
        "review": {
            "id": review_id.to_string(),
            "subject": review.subject.as_str(),
            "decision": resolution.decision.as_str(),
            "action": review.request.action.as_str(),
            "target": review.request.target.map(|t| t.to_string()),
            "proposed": review.request.proposed.as_text(),
            "edited": resolution.edited.as_ref().and_then(|t| t.as_text()),
            "note": resolution.note.as_ref().and_then(|t| t.as_text()),
            "resolved_by": recorded.metadata.actor,
            "resolved_at": recorded.recorded_at,
        },
        "memory_id": resolution.memory_id.map(|id| id.to_string()),
        "memory": memory.as_ref().map(MemoryView::of),
    })))
}

/// Appends whatever of the approval's memory events is missing (all of them
/// on the first call; none on a plain retry) and returns the new memory.
async fn complete_memory(
    state: &IngestState,
    principal: &Principal,
    review: &ReviewStream,
    resolution: &ReviewResolved,
    content_pii: Option<PiiCounts>,
    metadata: &EventMetadata,
) -> Result<Memory, ApiError> {
    let tenant = &principal.tenant;
    let request = &review.request;
    let review_key = request.review_id.to_string();
    let memory_id = resolution
        .memory_id
        .unwrap_or_else(|| memory_id_for(&request.review_id));
    let (content, pii) = match (&resolution.edited, resolution.decision) {
        (Some(edited), ReviewDecision::Edit) => (
            edited.clone(),
            content_pii.unwrap_or_else(|| resolution.pii.clone()),
        ),
        _ => (request.proposed.clone(), request.pii.clone()),
    };
    // From the recorded decision, not the request: a retried POST after a
    // crash completes the memory the first one decided.
    let (kind, tags) = match resolution.decision {
        ReviewDecision::Edit => (
            resolution.kind.unwrap_or(request.kind),
            resolution
                .tags
                .clone()
                .unwrap_or_else(|| request.tags.clone()),
        ),
        _ => (request.kind, request.tags.clone()),
    };
    let created = DomainEvent::MemoryCreated(MemoryCreated {
        memory_id,
        kind,
        content,
        tags,
        confidence: request.confidence,
        importance: importance_for(request.confidence, kind),
        state: MemoryState::Active,
        provenance: Provenance {
            source_event_ids: request.source_event_ids.clone(),
            producer: request.producer.clone().unwrap_or_else(Producer::api),
        },
        session: request.session.clone(),
        agent: None,
        pii,
    });
    let result = state
        .log
        .append(
            tenant,
            &streams::memory(&memory_id),
            ExpectedVersion::NoStream,
            vec![Pending {
                event_id: EventId::derived(&[tenant.as_str(), &review_key, "memory"]),
                subject: Some(review.subject.clone()),
                event: created,
                metadata: metadata.clone(),
            }],
        )
        .await
        .map_err(ApiError::from)?;
    if result.events.iter().any(|e| !e.duplicate) {
        state
            .metrics
            .events_appended_total
            .with_label_values(&["MemoryCreated"])
            .inc();
    }

    if let Some(target) = request.target {
        let event = match request.action {
            ProposedAction::Create => None,
            ProposedAction::Supersede => Some(DomainEvent::MemorySuperseded(MemorySuperseded {
                by: memory_id,
                reason: None,
            })),
            ProposedAction::MergeInto => Some(DomainEvent::MemoryMerged(MemoryMerged {
                into: memory_id,
                reason: None,
            })),
        };
        if let Some(event) = event {
            act_on_target(state, principal, review, target, event, metadata).await?;
        }
    }

    let events = state
        .log
        .read_stream(tenant, &streams::memory(&memory_id))
        .await
        .map_err(ApiError::from)?;
    Memory::fold(
        &review.subject,
        events
            .iter()
            .map(|d| (&d.event, d.recorded.stream_version, d.recorded.recorded_at)),
    )
    .ok_or_else(|| ApiError::internal(std::io::Error::other("the approved memory does not fold")))
}

/// Supersedes or merges the review's target, unless it is gone (deleted,
/// erased, or not a memory of this subject): the new memory stands anyway.
async fn act_on_target(
    state: &IngestState,
    principal: &Principal,
    review: &ReviewStream,
    target: MemoryId,
    event: DomainEvent,
    metadata: &EventMetadata,
) -> Result<(), ApiError> {
    let tenant = &principal.tenant;
    let stream = streams::memory(&target);
    let events = state
        .log
        .read_stream(tenant, &stream)
        .await
        .map_err(ApiError::from)?;
    let current = Memory::fold(
        &review.subject,
        events
            .iter()
            .map(|d| (&d.event, d.recorded.stream_version, d.recorded.recorded_at)),
    );
    let same_subject = events
        .first()
        .and_then(|d| d.recorded.subject.as_ref())
        .is_some_and(|s| s == &review.subject);
    let Some(current) = current.filter(|_| same_subject) else {
        tracing::warn!(tenant = %tenant, review_id = %review.request.review_id, "review target is not a memory of the subject; left alone");
        return Ok(());
    };
    let event_id = EventId::derived(&[
        tenant.as_str(),
        &review.request.review_id.to_string(),
        "target",
    ]);
    // Already done by an earlier attempt: its event is in the stream.
    if events.iter().any(|d| d.recorded.event_id == event_id)
        || current.state == MemoryState::Deleted
    {
        return Ok(());
    }
    let event_type = event.event_type();
    state
        .log
        .append(
            tenant,
            &stream,
            ExpectedVersion::Any,
            vec![Pending {
                event_id,
                subject: Some(review.subject.clone()),
                event,
                metadata: metadata.clone(),
            }],
        )
        .await
        .map_err(ApiError::from)?;
    state
        .metrics
        .events_appended_total
        .with_label_values(&[event_type])
        .inc();
    Ok(())
}
