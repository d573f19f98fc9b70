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

use mnemo_auth::{AuthError, Principal, Scope};
use mnemo_domain::events::{
    streams, MemoryCreated, MemoryMerged, MemorySuperseded, PiiCounts, ProposedAction,
    ReviewDecision, ReviewRequested, ReviewResolved,
};
use mnemo_domain::{
    importance_for, Classified, DomainEvent, ErrorClass, EventId, EventMetadata, Memory, MemoryId,
    MemoryKind, MemoryState, Producer, Provenance, SubjectId, SubjectText,
};
use mnemo_event_store::sealed::{Decoded, LogError, Pending};
use mnemo_event_store::{EventStoreError, ExpectedVersion};
use serde::Deserialize;

use crate::error::InputError;
use crate::input::{check_content, check_tags, MAX_REASON_CHARS};
use crate::scrub::ScrubSession;
use crate::IngestState;

/// Why a decision was refused.
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    #[error(transparent)]
    Input(#[from] InputError),
    #[error(transparent)]
    Auth(#[from] AuthError),
    #[error(transparent)]
    Log(#[from] LogError),
    #[error("an edit needs the corrected content")]
    ContentRequired,
    #[error("content is only for an edit")]
    ContentNotAllowed,
    #[error("kind and tags are only for an edit")]
    EditOnlyField,
    #[error("no such review")]
    NotFound,
    #[error("the subject of this review was erased")]
    SubjectErased,
    #[error("the review was already decided: {}", .0.as_str())]
    AlreadyResolved(ReviewDecision),
    #[error("the review has no resolution after appending one")]
    Unresolved,
    #[error("the approved memory does not fold")]
    MemoryDoesNotFold,
}

impl Classified for ReviewError {
    fn class(&self) -> ErrorClass {
        match self {
            ReviewError::Input(e) => e.class(),
            ReviewError::Auth(e) => e.class(),
            ReviewError::Log(e) => e.class(),
            ReviewError::ContentRequired
            | ReviewError::ContentNotAllowed
            | ReviewError::EditOnlyField => ErrorClass::Malformed,
            ReviewError::NotFound => ErrorClass::NotFound,
            ReviewError::SubjectErased => ErrorClass::Gone,
            ReviewError::AlreadyResolved(_) => ErrorClass::Conflict,
            ReviewError::Unresolved | ReviewError::MemoryDoesNotFold => ErrorClass::Internal,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            ReviewError::Input(e) => e.code(),
            ReviewError::Auth(e) => Classified::code(e),
            ReviewError::Log(e) => e.code(),
            ReviewError::ContentRequired => "content_required",
            ReviewError::ContentNotAllowed => "content_not_allowed",
            ReviewError::EditOnlyField => "edit_only_field",
            ReviewError::NotFound => "review_not_found",
            ReviewError::SubjectErased => "subject_erased",
            ReviewError::AlreadyResolved(_) => "review_already_resolved",
            ReviewError::Unresolved | ReviewError::MemoryDoesNotFold => "internal_error",
        }
    }
}

/// A decision as a reviewer sends it.
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

/// A decision on review `review` by a caller who must have
/// `memories:review` on its subject.
pub struct ResolveRequest<'a> {
    pub caller: &'a Principal,
    pub review: MemoryId,
    pub decision: ResolveInput,
    pub metadata: EventMetadata,
}

/// What the decision came to: the review, the recorded resolution (this
/// request's, or the same decision made before), and the memory an
/// approval or an edit created.
pub struct Resolved {
    pub review_id: MemoryId,
    pub subject: SubjectId,
    pub request: ReviewRequested,
    pub resolution: ReviewResolved,
    /// The stored `ReviewResolved`: who decided, and when.
    pub resolved: Decoded,
    pub memory: Option<Memory>,
}

/// The memory an approval of `review_id` creates: one id per review, so a
/// retried approval finds the memory it already made.
pub fn memory_id_for(review_id: &MemoryId) -> MemoryId {
    let derived = EventId::derived(&["review-memory", &review_id.to_string()]);
    MemoryId::from_uuid(derived.as_uuid())
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
    caller: &Principal,
    review_id: &MemoryId,
) -> Result<ReviewStream, ReviewError> {
    let events = state
        .log
        .read_stream(&caller.tenant, &streams::review(review_id))
        .await?;
    let first = events.first().ok_or(ReviewError::NotFound)?;
    let (Some(subject), DomainEvent::ReviewRequested(request)) =
        (first.recorded.subject.clone(), &first.event)
    else {
        return Err(ReviewError::NotFound);
    };
    caller.authorize(Scope::MemoriesReview, Some(&subject))?;
    // An erased subject's review has nothing left to decide on: its
    // proposal was sealed under a key the erasure destroyed. Gone rather
    // than not found, and before any decision is appended.
    if request.proposed.is_erased() {
        return Err(ReviewError::SubjectErased);
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

fn check_input(input: ResolveInput, state: &IngestState) -> Result<Checked, ReviewError> {
    let editing = input.decision == ReviewDecision::Edit;
    match (&input.content, editing) {
        (None, true) => return Err(ReviewError::ContentRequired),
        (Some(_), false) => return Err(ReviewError::ContentNotAllowed),
        _ => {}
    }
    if !editing && (input.kind.is_some() || input.tags.is_some()) {
        return Err(ReviewError::EditOnlyField);
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

/// Records the decision (unless one is recorded) and completes what it
/// implies; the same decision retried completes what is missing.
pub async fn resolve_review(
    state: &IngestState,
    request: ResolveRequest<'_>,
) -> Result<Resolved, ReviewError> {
    let ResolveRequest {
        caller,
        review: review_id,
        decision,
        metadata,
    } = request;
    let tenant = &caller.tenant;
    let mut review = load_review(state, caller, &review_id).await?;
    let input = check_input(decision, state)?;

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
            .events()
            .append_one(
                tenant,
                &streams::review(&review_id),
                ExpectedVersion::Exact(1),
                Pending {
                    event_id: EventId::derived(&[
                        tenant.as_str(),
                        &review_id.to_string(),
                        "resolved",
                        input.decision.as_str(),
                    ]),
                    subject: Some(review.subject.clone()),
                    event,
                    metadata: metadata.clone(),
                },
            )
            .await;
        match appended {
            Ok(_) => {}
            // Another reviewer decided first: what they decided is read below.
            Err(LogError::Store(EventStoreError::Conflict { .. })) => {}
            Err(other) => return Err(other.into()),
        }
        review = load_review(state, caller, &review_id).await?;
    }
    let Some((resolution, resolved)) = review.resolution.clone() else {
        return Err(ReviewError::Unresolved);
    };
    if resolution.decision != input.decision {
        return Err(ReviewError::AlreadyResolved(resolution.decision));
    }

    let memory = match resolution.decision {
        ReviewDecision::Reject => None,
        ReviewDecision::Approve | ReviewDecision::Edit => Some(
            complete_memory(state, caller, &review, &resolution, content_pii, &metadata).await?,
        ),
    };
    Ok(Resolved {
        review_id,
        subject: review.subject,
        request: review.request,
        resolution,
        resolved,
        memory,
    })
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
) -> Result<Memory, ReviewError> {
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
    state
        .events()
        .append_one(
            tenant,
            &streams::memory(&memory_id),
            ExpectedVersion::NoStream,
            Pending {
                event_id: EventId::derived(&[tenant.as_str(), &review_key, "memory"]),
                subject: Some(review.subject.clone()),
                event: created,
                metadata: metadata.clone(),
            },
        )
        .await?;

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
        .await?;
    Memory::fold(
        &review.subject,
        events
            .iter()
            .map(|d| (&d.event, d.recorded.stream_version, d.recorded.recorded_at)),
    )
    .ok_or(ReviewError::MemoryDoesNotFold)
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
) -> Result<(), ReviewError> {
    let tenant = &principal.tenant;
    let stream = streams::memory(&target);
    let events = state.log.read_stream(tenant, &stream).await?;
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
    // Already done by an earlier attempt: its event is in the stream. A
    // deleted or erased target is left as it is.
    if events.iter().any(|d| d.recorded.event_id == event_id)
        || current.state == MemoryState::Deleted
        || current.is_erased()
    {
        return Ok(());
    }
    state
        .events()
        .append_one(
            tenant,
            &stream,
            ExpectedVersion::Any,
            Pending {
                event_id,
                subject: Some(review.subject.clone()),
                event,
                metadata: metadata.clone(),
            },
        )
        .await?;
    Ok(())
}
