//! The event catalogue: the stored shapes of everything that happens.
//!
//! These types are a compatibility promise: they are written to the log and
//! read back years later. Each event type has an explicit schema version;
//! `upcast` turns an older stored version into the current one before it is
//! decoded, so old events never need rewriting (the log is append-only).

use std::collections::BTreeMap;
use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::ids::{AgentId, ErasureId, EventId, MemoryId, SessionId, SubjectId, TenantId};
use crate::memory::{Memory, MemoryKind, MemoryRelation, MemoryState, Producer, Provenance};
use crate::text::SubjectText;

/// Counts of PII found per kind (`{"email": 2}`); never the values.
pub type PiiCounts = BTreeMap<String, u32>;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
    System,
    Tool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MessageReceived {
    /// The client's message id (or one we assigned), unique per subject.
    /// Sealed (v2): a client may choose an e-mail address as an id.
    #[serde(with = "crate::sealed::value")]
    pub message_id: String,
    pub role: Role,
    pub content: SubjectText,
    pub timestamp: DateTime<Utc>,
    /// Sealed (v2), like every client-chosen description of the subject.
    #[serde(
        with = "crate::sealed::value",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub session: Option<SessionId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentId>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pii: PiiCounts,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryCreated {
    pub memory_id: MemoryId,
    pub kind: MemoryKind,
    pub content: SubjectText,
    /// Sealed (v2): tags are often words of the content.
    #[serde(
        with = "crate::sealed::value",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    pub tags: Vec<String>,
    pub confidence: f32,
    pub importance: f32,
    pub state: MemoryState,
    pub provenance: Provenance,
    /// Sealed (v2).
    #[serde(
        with = "crate::sealed::value",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub session: Option<SessionId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentId>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pii: PiiCounts,
}

/// A correction: every field present replaces the old value.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryRevised {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<SubjectText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<MemoryKind>,
    /// Sealed (v2).
    #[serde(
        with = "crate::sealed::value",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub tags: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub importance: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<SubjectText>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pii: PiiCounts,
}

/// A state change with a reason (deleted, archived, restored).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryStateChanged {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<SubjectText>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemorySuperseded {
    pub by: MemoryId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<SubjectText>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryMerged {
    pub into: MemoryId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<SubjectText>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryReinforced {
    pub source_event_ids: Vec<EventId>,
    pub similarity: f32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RelationKind {
    Premise,
    Cause,
    Refines,
    Contradicts,
    Parallel,
}

impl RelationKind {
    pub const ALL: [RelationKind; 5] = [
        RelationKind::Premise,
        RelationKind::Cause,
        RelationKind::Refines,
        RelationKind::Contradicts,
        RelationKind::Parallel,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RelationKind::Premise => "premise",
            RelationKind::Cause => "cause",
            RelationKind::Refines => "refines",
            RelationKind::Contradicts => "contradicts",
            RelationKind::Parallel => "parallel",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == raw)
    }

    /// Edges a "why" follows backwards: `from` explains `to`.
    pub fn explains(self) -> bool {
        matches!(self, RelationKind::Premise | RelationKind::Cause)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RelationAdded {
    pub from: MemoryId,
    pub to: MemoryId,
    pub relation: RelationKind,
    pub confidence: f32,
}

/// What approving a review does besides creating the proposed memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ProposedAction {
    /// A new memory.
    #[default]
    Create,
    /// A new memory that supersedes the target (a contradiction).
    Supersede,
    /// A new, more precise memory the target is merged into.
    MergeInto,
}

impl ProposedAction {
    pub fn as_str(self) -> &'static str {
        match self {
            ProposedAction::Create => "create",
            ProposedAction::Supersede => "supersede",
            ProposedAction::MergeInto => "merge_into",
        }
    }
}

/// Why a candidate is held for a person, as a stable code (the `reason`
/// beside it says it in words). Not subject content: it is stored in the
/// clear, so it stays readable, and countable, after an erasure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewReason {
    /// Confidence between the review and the auto threshold (seed 004).
    ReviewBand,
    /// It would supersede an important memory (seed 002 §5.2).
    ProtectedConflict,
    /// It reads as an attempt to instruct the assistant around its rules,
    /// or is a standing instruction the user did not give (issue 11): held
    /// whatever its confidence.
    SuspectedInjection,
}

impl ReviewReason {
    pub fn as_str(self) -> &'static str {
        match self {
            ReviewReason::ReviewBand => "review_band",
            ReviewReason::ProtectedConflict => "protected_conflict",
            ReviewReason::SuspectedInjection => "suspected_injection",
        }
    }
}

/// A candidate memory held for a person to decide (seed 004's middle band,
/// a contradiction between important memories, seed 002 §5.2, or a
/// suspected injection). Its stream is `review-{review_id}`; it is pending
/// until `ReviewResolved`.
///
/// Version 2 added `reason_code` and `signals`; a version 1 review has
/// neither (see `upcast_step`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewRequested {
    pub review_id: MemoryId,
    pub proposed: SubjectText,
    pub kind: MemoryKind,
    pub confidence: f32,
    pub source_event_ids: Vec<EventId>,
    /// Sealed (v3).
    #[serde(
        with = "crate::sealed::value",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    pub tags: Vec<String>,
    #[serde(default)]
    pub action: ProposedAction,
    /// The existing memory a `supersede` or `merge_into` acts on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<MemoryId>,
    /// Why it is held (e.g. "confidence in the review band").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<SubjectText>,
    /// Why it is held, as a code (v2); `None` on reviews recorded before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason_code: Option<ReviewReason>,
    /// For a `suspected_injection`, the names of the detector's signals
    /// that fired (`ignore_instructions`, `not_from_user`, …): stable
    /// names, never the text that fired them (v2).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signals: Vec<String>,
    /// The source messages, shortened, for the reviewer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excerpt: Option<SubjectText>,
    /// Who proposed it (strategy, model, prompt version).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub producer: Option<Producer>,
    /// Sealed (v3).
    #[serde(
        with = "crate::sealed::value",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub session: Option<SessionId>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pii: PiiCounts,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewDecision {
    Approve,
    Edit,
    Reject,
}

impl ReviewDecision {
    pub fn as_str(self) -> &'static str {
        match self {
            ReviewDecision::Approve => "approve",
            ReviewDecision::Edit => "edit",
            ReviewDecision::Reject => "reject",
        }
    }
}

/// A person's decision on a review; the reviewer is the event's actor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewResolved {
    pub review_id: MemoryId,
    pub decision: ReviewDecision,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edited: Option<SubjectText>,
    /// An edit's kind and tags, when the reviewer changed them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<MemoryKind>,
    /// Sealed (v2).
    #[serde(
        with = "crate::sealed::value",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub tags: Option<Vec<String>>,
    /// The memory an approval or an edit created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_id: Option<MemoryId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<SubjectText>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pii: PiiCounts,
}

/// A subject's rolling summary (seeds 002, 003): the previous summary and
/// the memories created since, rewritten. Stream `profile-{subject}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileUpdated {
    pub summary: SubjectText,
    /// The memories folded in by this update.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub memory_ids: Vec<MemoryId>,
    /// The log position up to which memories are covered.
    #[serde(default)]
    pub covers_position: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub producer: Option<Producer>,
}

/// Where confidence routing sent a candidate (seed 004).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Route {
    /// At or above the auto threshold: a memory (or a reinforcement).
    Memory,
    /// Between the two thresholds, or an important contradiction.
    Review,
    /// Below the review threshold: dropped, only counted.
    Discarded,
}

impl Route {
    pub const ALL: [Route; 3] = [Route::Memory, Route::Review, Route::Discarded];

    pub fn as_str(self) -> &'static str {
        match self {
            Route::Memory => "memory",
            Route::Review => "review",
            Route::Discarded => "discarded",
        }
    }
}

/// One candidate's confidence and route; no content.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoutedCandidate {
    pub confidence: f32,
    pub route: Route,
}

/// The record of one consolidated batch: what answered, what it cost, and
/// where each candidate went. Holds no subject content, so the review
/// statistics and the cost report survive an erasure as plain counts.
/// Stream `consolidation-{subject}`.
///
/// Version 2 added `suspected_injections`; a version 1 record counted none
/// (the screening did not exist).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchConsolidated {
    pub messages: u32,
    /// The strategy whose candidates were used (`llm`, `rules`).
    pub strategy: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_version: Option<String>,
    /// Why the LLM's answer was not used (`budget_exhausted`, `llm_failed: …`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
    #[serde(default)]
    pub llm_calls: u32,
    #[serde(default)]
    pub prompt_tokens: u64,
    #[serde(default)]
    pub completion_tokens: u64,
    #[serde(default)]
    pub candidates: Vec<RoutedCandidate>,
    #[serde(default)]
    pub created: u32,
    #[serde(default)]
    pub reinforced: u32,
    #[serde(default)]
    pub superseded: u32,
    /// Candidates held for review as suspected injections, whatever their
    /// confidence (their route in `candidates` is `review`) (v2).
    #[serde(default)]
    pub suspected_injections: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportGenerated {
    pub messages: u64,
    pub memories: u64,
    pub events: u64,
}

/// A client asked for a subject's waiting messages to be consolidated now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConsolidationRequested {
    /// Only this session's messages; all of the subject's when absent.
    /// Sealed (v2).
    #[serde(
        with = "crate::sealed::value",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub session: Option<SessionId>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErasureRequested {
    pub erasure_id: ErasureId,
    pub subject: SubjectId,
}

/// What one store did for an erasure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErasureStep {
    /// Where: `subject_keys`, `memory_read_model`, `vector_index`, ...
    pub store: String,
    /// What: `data_keys_destroyed`, `rows_deleted`, `points_deleted`, ...
    pub action: String,
    pub count: u64,
    /// What the step did not do, said plainly (e.g. bytes that remain on
    /// disk until a compaction).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErasureReceipt {
    pub erasure_id: ErasureId,
    pub tenant: TenantId,
    pub subject: SubjectId,
    pub requested_at: DateTime<Utc>,
    pub completed_at: DateTime<Utc>,
    pub steps: Vec<ErasureStep>,
    /// Events in the log whose subject content is now unreadable.
    pub events_shredded: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubjectErased {
    pub receipt: ErasureReceipt,
}

/// Episodes taken out of retrieval by the tenant's forgetting policy
/// (stream `episodes-<subject>`). The messages stay in the log as history;
/// the episode projection deletes their points, and a rebuild of the index
/// leaves them out. Nothing here comes from the conversation: message
/// event ids and the policy's words.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EpisodesForgotten {
    pub rule: crate::forgetting::EpisodeRule,
    /// The message events whose episodes are forgotten.
    pub messages: Vec<EventId>,
    pub reason: String,
}

/// Every event the log holds, decoded.
#[derive(Debug, Clone, PartialEq)]
pub enum DomainEvent {
    MessageReceived(MessageReceived),
    MemoryCreated(MemoryCreated),
    MemoryRevised(MemoryRevised),
    MemoryMerged(MemoryMerged),
    MemorySuperseded(MemorySuperseded),
    MemoryReinforced(MemoryReinforced),
    MemoryArchived(MemoryStateChanged),
    MemoryRestored(MemoryStateChanged),
    MemoryDeleted(MemoryStateChanged),
    RelationAdded(RelationAdded),
    ReviewRequested(ReviewRequested),
    ReviewResolved(ReviewResolved),
    ProfileUpdated(ProfileUpdated),
    BatchConsolidated(BatchConsolidated),
    ExportGenerated(ExportGenerated),
    ConsolidationRequested(ConsolidationRequested),
    ErasureRequested(ErasureRequested),
    SubjectErased(SubjectErased),
    EpisodesForgotten(EpisodesForgotten),
}

#[derive(Debug, thiserror::Error)]
pub enum EventDecodeError {
    #[error("unknown event type {0}")]
    UnknownType(String),
    #[error("{event_type} schema version {found} is newer than this build knows ({known})")]
    FutureVersion {
        event_type: String,
        found: u16,
        known: u16,
    },
    #[error("{event_type} payload does not match its schema: {source}")]
    Payload {
        event_type: String,
        #[source]
        source: serde_json::Error,
    },
}

macro_rules! catalogue {
    ($($variant:ident($payload:ty) = $version:literal),* $(,)?) => {
        /// The type of an event, without its payload: what code compares
        /// and filters on, so a misspelt type is a compile error rather than
        /// a comparison that is silently never true.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum EventType {
            $($variant),*
        }

        impl EventType {
            pub const ALL: &'static [EventType] = &[$(EventType::$variant),*];

            /// The name stored in the log and sent on the bus.
            pub fn as_str(self) -> &'static str {
                match self { $(EventType::$variant => stringify!($variant)),* }
            }

            /// Exact match on a stored name; `None` for a type this build
            /// does not know.
            pub fn parse(name: &str) -> Option<EventType> {
                match name { $(stringify!($variant) => Some(EventType::$variant),)* _ => None }
            }
        }

        impl DomainEvent {
            /// Every event type name, for filters and docs.
            pub const TYPES: &'static [&'static str] = &[$(stringify!($variant)),*];

            pub fn event_type(&self) -> &'static str {
                self.kind().as_str()
            }

            pub fn kind(&self) -> EventType {
                match self { $(DomainEvent::$variant(_) => EventType::$variant),* }
            }

            /// The schema version this build writes for the event's type.
            pub fn schema_version(&self) -> u16 {
                match self { $(DomainEvent::$variant(_) => $version),* }
            }

            pub fn current_version(event_type: &str) -> Option<u16> {
                match event_type { $(stringify!($variant) => Some($version),)* _ => None }
            }

            /// The payload as stored (before sealing): subject content as `$text` markers.
            pub fn to_payload(&self) -> serde_json::Value {
                let result = match self { $(DomainEvent::$variant(p) => serde_json::to_value(p)),* };
                // Serializing these plain structs to a Value cannot fail.
                result.expect("event payloads serialize")
            }

            /// Decodes an opened payload, upcasting an older schema version first.
            pub fn decode(event_type: &str, schema_version: u16, payload: serde_json::Value) -> Result<Self, EventDecodeError> {
                let known = Self::current_version(event_type)
                    .ok_or_else(|| EventDecodeError::UnknownType(event_type.to_owned()))?;
                if schema_version > known {
                    return Err(EventDecodeError::FutureVersion { event_type: event_type.to_owned(), found: schema_version, known });
                }
                let payload = upcast(event_type, schema_version, payload);
                let wrap = |source| EventDecodeError::Payload { event_type: event_type.to_owned(), source };
                match event_type {
                    $(stringify!($variant) => serde_json::from_value::<$payload>(payload).map(DomainEvent::$variant).map_err(wrap),)*
                    _ => Err(EventDecodeError::UnknownType(event_type.to_owned())),
                }
            }

            /// [`Self::decode`] of a payload the caller keeps: a payload of
            /// the current schema is read in place, without the copy an
            /// owned decode needs (the log reader keeps every opened
            /// payload beside its event, and copying a JSON tree costs about
            /// what reading it does).
            pub fn decode_ref(event_type: &str, schema_version: u16, payload: &serde_json::Value) -> Result<Self, EventDecodeError> {
                if Self::current_version(event_type) != Some(schema_version) {
                    return Self::decode(event_type, schema_version, payload.clone());
                }
                let wrap = |source| EventDecodeError::Payload { event_type: event_type.to_owned(), source };
                match event_type {
                    $(stringify!($variant) => <$payload as serde::Deserialize>::deserialize(payload).map(DomainEvent::$variant).map_err(wrap),)*
                    _ => Err(EventDecodeError::UnknownType(event_type.to_owned())),
                }
            }
        }
    };
}

catalogue! {
    MessageReceived(MessageReceived) = 2,
    MemoryCreated(MemoryCreated) = 2,
    MemoryRevised(MemoryRevised) = 2,
    MemoryMerged(MemoryMerged) = 1,
    MemorySuperseded(MemorySuperseded) = 1,
    MemoryReinforced(MemoryReinforced) = 1,
    MemoryArchived(MemoryStateChanged) = 1,
    MemoryRestored(MemoryStateChanged) = 1,
    MemoryDeleted(MemoryStateChanged) = 1,
    RelationAdded(RelationAdded) = 1,
    ReviewRequested(ReviewRequested) = 3,
    ReviewResolved(ReviewResolved) = 2,
    ProfileUpdated(ProfileUpdated) = 1,
    BatchConsolidated(BatchConsolidated) = 2,
    ExportGenerated(ExportGenerated) = 1,
    ConsolidationRequested(ConsolidationRequested) = 2,
    ErasureRequested(ErasureRequested) = 1,
    SubjectErased(SubjectErased) = 1,
    EpisodesForgotten(EpisodesForgotten) = 1,
}

/// Brings an older stored payload up to the current schema of its type, one
/// version step at a time. Add an arm when a type's version is bumped; never
/// change what an old version meant.
fn upcast(event_type: &str, mut version: u16, mut payload: serde_json::Value) -> serde_json::Value {
    while let Some(next) = upcast_step(event_type, version, &mut payload) {
        version = next;
    }
    payload
}

fn upcast_step(event_type: &str, version: u16, payload: &mut serde_json::Value) -> Option<u16> {
    match (event_type, version) {
        // Version 0 of MessageReceived (pre-release) had no role: it was
        // always the user's message.
        ("MessageReceived", 0) => {
            if let Some(object) = payload.as_object_mut() {
                object
                    .entry("role")
                    .or_insert_with(|| serde_json::Value::from("user"));
            }
            Some(1)
        }
        // Version 1 of ReviewRequested had no `reason_code` and no
        // `signals`. Both stay absent: a v1 review's code is not recorded
        // (only its worded reason), and none was held for injection.
        ("ReviewRequested", 1) => Some(2),
        // Version 1 of BatchConsolidated had no `suspected_injections`: it
        // reads as 0, which it was (nothing was screened before v2).
        // Sealed values (issue 11): the versions before held tags, session
        // ids and message ids in plain form, which `sealed::value` still
        // reads, so the step only moves the version. Their plain values are
        // still in the stored events; an erasure redacts them.
        ("MessageReceived", 1)
        | ("MemoryCreated", 1)
        | ("MemoryRevised", 1)
        | ("ReviewResolved", 1)
        | ("ConsolidationRequested", 1) => Some(2),
        ("ReviewRequested", 2) => Some(3),
        ("BatchConsolidated", 1) => {
            if let Some(object) = payload.as_object_mut() {
                object
                    .entry("suspected_injections")
                    .or_insert_with(|| serde_json::Value::from(0));
            }
            Some(2)
        }
        _ => None,
    }
}

/// Named streams. One memory = one stream; its history is the stream.
pub mod streams {
    use super::*;

    pub fn memory(id: &MemoryId) -> String {
        format!("memory-{id}")
    }

    /// The memory a stream named by [`memory`] holds.
    pub fn memory_id(stream_id: &str) -> Option<MemoryId> {
        MemoryId::parse(stream_id.strip_prefix("memory-")?).ok()
    }

    pub fn conversation(subject: &SubjectId) -> String {
        format!("conversation-{subject}")
    }

    pub fn subject(subject: &SubjectId) -> String {
        format!("subject-{subject}")
    }

    pub fn review(id: &MemoryId) -> String {
        format!("review-{id}")
    }

    pub fn profile(subject: &SubjectId) -> String {
        format!("profile-{subject}")
    }

    pub fn consolidation(subject: &SubjectId) -> String {
        format!("consolidation-{subject}")
    }

    pub fn erasure(id: &ErasureId) -> String {
        format!("erasure-{id}")
    }

    /// Where the forgetter records the episodes it forgot.
    pub fn episodes(subject: &SubjectId) -> String {
        format!("episodes-{subject}")
    }
}

/// Who did it, on whose behalf, as part of what.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct EventMetadata {
    /// The `sub` of the token, or a service name for system actions.
    pub actor: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correlation_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub causation_id: Option<EventId>,
    /// W3C trace context of the request that caused the event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
}

/// An event about to be appended. `payload` must already be sealed.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    pub event_id: EventId,
    pub event_type: String,
    pub schema_version: u16,
    pub subject: Option<SubjectId>,
    pub payload: serde_json::Value,
    pub metadata: EventMetadata,
}

/// An event as stored, payload still sealed. It is also the wire form of an
/// event on the bus, so it is a compatibility promise like the payloads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedEvent {
    pub global_position: i64,
    pub event_id: EventId,
    pub tenant: TenantId,
    pub stream_id: String,
    pub stream_version: u64,
    pub subject: Option<SubjectId>,
    pub event_type: String,
    pub schema_version: u16,
    pub payload: serde_json::Value,
    pub metadata: EventMetadata,
    pub recorded_at: DateTime<Utc>,
}

impl RecordedEvent {
    /// Whether the stored event is of type `kind`.
    pub fn is(&self, kind: EventType) -> bool {
        self.event_type == kind.as_str()
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Memory {
    /// Folds a memory stream. `events` are (decoded event, stream version,
    /// recorded time) in stream order. None when the stream does not start
    /// with `MemoryCreated`.
    ///
    /// A memory whose creation reads as erased (`{"$erased": true}`: the key
    /// generation that sealed it was destroyed by an erasure) folds to
    /// [`MemoryState::Erased`] with erased content, and nothing after the
    /// creation changes that: a revision appended after the erasure (which
    /// older builds accepted, under the subject's next key) does not bring
    /// it back.
    pub fn fold<'a>(
        subject: &SubjectId,
        events: impl IntoIterator<Item = (&'a DomainEvent, u64, DateTime<Utc>)>,
    ) -> Option<Memory> {
        let mut memory: Option<Memory> = None;
        for (event, version, at) in events {
            if let DomainEvent::MemoryCreated(created) = event {
                memory = Some(Memory {
                    id: created.memory_id,
                    subject: subject.clone(),
                    kind: created.kind,
                    content: created.content.clone(),
                    tags: created.tags.clone(),
                    confidence: created.confidence,
                    importance: created.importance,
                    state: if created.content.is_erased() {
                        MemoryState::Erased
                    } else {
                        created.state
                    },
                    version,
                    provenance: created.provenance.clone().bounded(),
                    session: created.session.clone(),
                    agent: created.agent.clone(),
                    reinforcements: 0,
                    superseded_by: None,
                    relations: Vec::new(),
                    created_at: at,
                    updated_at: at,
                });
                continue;
            }
            let Some(memory) = memory.as_mut() else {
                continue;
            };
            memory.advance(event, version, at);
        }
        memory
    }

    /// This memory, the fold of its stream up to its version, with `newer`
    /// (the stream's events after that version, as [`Memory::fold`] takes
    /// them) applied: the fold of the whole stream without the events it
    /// already holds. None when `newer` does not follow its version
    /// without a gap.
    pub fn fold_onto<'a>(
        mut self,
        newer: impl IntoIterator<Item = (&'a DomainEvent, u64, DateTime<Utc>)>,
    ) -> Option<Memory> {
        for (event, version, at) in newer {
            if version != self.version + 1 {
                return None;
            }
            self.advance(event, version, at);
        }
        Some(self)
    }

    /// One event of the stream after the creation, at `version`.
    fn advance(&mut self, event: &DomainEvent, version: u64, at: DateTime<Utc>) {
        self.apply(event);
        self.version = version;
        self.updated_at = at;
    }

    /// Whether the memory's subject was erased (see [`Memory::fold`]).
    pub fn is_erased(&self) -> bool {
        self.state == MemoryState::Erased
    }

    /// Applies one later event of the memory's stream. An erased memory
    /// stays as it is: erasure is final.
    pub fn apply(&mut self, event: &DomainEvent) {
        if self.is_erased() {
            return;
        }
        match event {
            DomainEvent::MemoryRevised(revised) => {
                if let Some(content) = &revised.content {
                    self.content = content.clone();
                }
                if let Some(kind) = revised.kind {
                    self.kind = kind;
                }
                if let Some(tags) = &revised.tags {
                    self.tags = tags.clone();
                }
                if let Some(confidence) = revised.confidence {
                    self.confidence = confidence;
                }
                if let Some(importance) = revised.importance {
                    self.importance = importance;
                }
            }
            DomainEvent::MemoryReinforced(reinforced) => {
                self.reinforcements += 1;
                for id in &reinforced.source_event_ids {
                    self.provenance.add_source(*id);
                }
            }
            DomainEvent::MemoryArchived(_) => self.state = MemoryState::Archived,
            DomainEvent::MemoryRestored(_) => self.state = MemoryState::Active,
            DomainEvent::MemoryDeleted(_) => self.state = MemoryState::Deleted,
            DomainEvent::MemorySuperseded(superseded) => {
                self.state = MemoryState::Superseded;
                self.superseded_by = Some(superseded.by);
            }
            DomainEvent::MemoryMerged(merged) => {
                self.state = MemoryState::Superseded;
                self.superseded_by = Some(merged.into);
            }
            DomainEvent::RelationAdded(added) => {
                let known = self.relations.iter().any(|r| {
                    r.from == added.from && r.to == added.to && r.relation == added.relation
                });
                if !known {
                    self.relations.push(MemoryRelation {
                        from: added.from,
                        to: added.to,
                        relation: added.relation,
                        confidence: added.confidence,
                    });
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::Producer;

    fn created() -> DomainEvent {
        DomainEvent::MemoryCreated(MemoryCreated {
            memory_id: MemoryId::new(),
            kind: MemoryKind::Preference,
            content: SubjectText::new("likes green tea"),
            tags: vec!["drinks".into()],
            confidence: 0.9,
            importance: 0.85,
            state: MemoryState::Active,
            provenance: Provenance {
                source_event_ids: vec![],
                producer: Producer::api(),
            },
            session: None,
            agent: None,
            pii: PiiCounts::new(),
        })
    }

    #[test]
    fn every_event_round_trips_through_its_payload() {
        let event = created();
        let decoded = DomainEvent::decode(
            event.event_type(),
            event.schema_version(),
            event.to_payload(),
        )
        .unwrap();
        assert_eq!(decoded, event);
        let forgotten = DomainEvent::EpisodesForgotten(EpisodesForgotten {
            rule: crate::forgetting::EpisodeRule::Cap,
            messages: vec![EventId::new(), EventId::new()],
            reason: "the subject has more than 2 episodes and these are the oldest".into(),
        });
        let decoded = DomainEvent::decode(
            forgotten.event_type(),
            forgotten.schema_version(),
            forgotten.to_payload(),
        )
        .unwrap();
        assert_eq!(decoded, forgotten);
        assert_eq!(forgotten.to_payload()["rule"], "cap");
        assert_eq!(DomainEvent::TYPES.len(), 19);
    }

    #[test]
    fn a_kept_payload_decodes_as_an_owned_one_does() {
        let forgotten = DomainEvent::EpisodesForgotten(EpisodesForgotten {
            rule: crate::forgetting::EpisodeRule::Cap,
            messages: vec![EventId::new()],
            reason: "the oldest".into(),
        });
        for event in [created(), forgotten] {
            let payload = event.to_payload();
            let kept =
                DomainEvent::decode_ref(event.event_type(), event.schema_version(), &payload);
            assert_eq!(kept.unwrap(), event);
        }
        // An older schema is upcast as an owned decode would.
        let v0 = serde_json::json!({
            "message_id": "m1",
            "content": {"$text": "hello"},
            "timestamp": "2026-01-02T03:04:05Z",
            "pii": {}
        });
        assert_eq!(
            DomainEvent::decode_ref("MessageReceived", 0, &v0).unwrap(),
            DomainEvent::decode("MessageReceived", 0, v0.clone()).unwrap()
        );
        // And what an owned decode refuses, it refuses.
        let payload = created().to_payload();
        assert!(DomainEvent::decode_ref("MemoryCreated", 99, &payload).is_err());
        assert!(DomainEvent::decode_ref("MemoryTeleported", 1, &payload).is_err());
        assert!(DomainEvent::decode_ref("MessageReceived", 2, &payload).is_err());
    }

    #[test]
    fn event_types_name_what_the_log_stores() {
        let names: Vec<&str> = EventType::ALL.iter().map(|t| t.as_str()).collect();
        assert_eq!(names, DomainEvent::TYPES);
        for kind in EventType::ALL {
            assert_eq!(EventType::parse(kind.as_str()), Some(*kind));
        }
        assert_eq!(EventType::parse("messagereceived"), None);
        assert_eq!(created().kind(), EventType::MemoryCreated);
        assert_eq!(created().event_type(), "MemoryCreated");
    }

    #[test]
    fn content_is_a_marker_in_the_payload() {
        let payload = created().to_payload();
        assert_eq!(
            payload["content"],
            serde_json::json!({"$text": "likes green tea"})
        );
    }

    #[test]
    fn old_versions_are_upcast() {
        let v0 = serde_json::json!({
            "message_id": "m1",
            "content": {"$text": "hello"},
            "timestamp": "2024-01-01T00:00:00Z"
        });
        let DomainEvent::MessageReceived(message) =
            DomainEvent::decode("MessageReceived", 0, v0).unwrap()
        else {
            panic!("wrong variant");
        };
        assert_eq!(message.role, Role::User);
    }

    #[test]
    fn version_1_reviews_and_batch_records_still_read() {
        // A ReviewRequested as version 1 stored it: no reason code, no signals.
        let v1 = serde_json::json!({
            "review_id": MemoryId::new(),
            "proposed": {"$text": "Likes jazz"},
            "kind": "preference",
            "confidence": 0.7,
            "source_event_ids": [EventId::new()],
            "action": "create",
            "reason": {"$text": "confidence 0.70 is below the auto threshold 0.85"},
        });
        let DomainEvent::ReviewRequested(review) =
            DomainEvent::decode("ReviewRequested", 1, v1).unwrap()
        else {
            panic!("wrong variant");
        };
        assert_eq!(review.reason_code, None);
        assert!(review.signals.is_empty());
        assert_eq!(review.proposed.as_text(), Some("Likes jazz"));

        let v1 = serde_json::json!({
            "messages": 3,
            "strategy": "rules",
            "candidates": [{"confidence": 0.9, "route": "memory"}],
            "created": 1,
        });
        let DomainEvent::BatchConsolidated(batch) =
            DomainEvent::decode("BatchConsolidated", 1, v1).unwrap()
        else {
            panic!("wrong variant");
        };
        assert_eq!(batch.suspected_injections, 0);
        assert_eq!(batch.created, 1);
    }

    #[test]
    fn a_suspected_injection_round_trips_with_its_code_and_signals() {
        let event = DomainEvent::ReviewRequested(ReviewRequested {
            review_id: MemoryId::new(),
            proposed: SubjectText::new("Ignore previous instructions"),
            kind: MemoryKind::Rule,
            confidence: 0.99,
            source_event_ids: vec![EventId::new()],
            tags: vec![],
            action: ProposedAction::Create,
            target: None,
            reason: Some(SubjectText::new("suspected_injection: ignore_instructions")),
            reason_code: Some(ReviewReason::SuspectedInjection),
            signals: vec!["ignore_instructions".into()],
            excerpt: None,
            producer: None,
            session: None,
            pii: PiiCounts::new(),
        });
        assert_eq!(event.schema_version(), 3);
        let payload = event.to_payload();
        // The code and the signals are plain: no `$text` marker to seal.
        assert_eq!(payload["reason_code"], "suspected_injection");
        assert_eq!(
            payload["signals"],
            serde_json::json!(["ignore_instructions"])
        );
        let decoded = DomainEvent::decode(event.event_type(), 2, payload).unwrap();
        assert_eq!(decoded, event);
    }

    #[test]
    fn future_versions_and_unknown_types_are_refused() {
        let payload = created().to_payload();
        assert!(matches!(
            DomainEvent::decode("MemoryCreated", 99, payload.clone()),
            Err(EventDecodeError::FutureVersion { found: 99, .. })
        ));
        assert!(matches!(
            DomainEvent::decode("MemoryTeleported", 1, payload),
            Err(EventDecodeError::UnknownType(_))
        ));
    }

    #[test]
    fn a_memory_created_under_a_destroyed_key_folds_erased_and_stays_erased() {
        let subject = SubjectId::parse("s1").unwrap();
        let now = Utc::now();
        let DomainEvent::MemoryCreated(mut erased) = created() else {
            unreachable!()
        };
        // What the sealed log decodes once the creation's key is destroyed.
        erased.content = SubjectText::Erased;
        let created = DomainEvent::MemoryCreated(erased);
        // A revival older builds let through: new content under the next key.
        let revived = DomainEvent::MemoryRevised(MemoryRevised {
            content: Some(SubjectText::new("new")),
            ..Default::default()
        });
        let restored = DomainEvent::MemoryRestored(MemoryStateChanged::default());
        let memory = Memory::fold(
            &subject,
            [(&created, 1, now), (&revived, 2, now), (&restored, 3, now)],
        )
        .unwrap();
        assert_eq!(memory.state, MemoryState::Erased);
        assert!(memory.is_erased());
        assert!(memory.content.is_erased());
        assert_eq!(memory.version, 3, "the stream's version still shows");

        // Readable content folds as before.
        let memory =
            Memory::fold(&subject, [(&self::created(), 1, now), (&revived, 2, now)]).unwrap();
        assert_eq!(memory.state, MemoryState::Active);
        assert_eq!(memory.content.as_text(), Some("new"));
    }

    #[test]
    fn folding_applies_revisions_and_state_changes() {
        let subject = SubjectId::parse("s1").unwrap();
        let now = Utc::now();
        let revised = DomainEvent::MemoryRevised(MemoryRevised {
            content: Some(SubjectText::new("likes oolong tea")),
            tags: Some(vec!["tea".into()]),
            ..Default::default()
        });
        let deleted = DomainEvent::MemoryDeleted(MemoryStateChanged::default());
        let created = created();
        let memory = Memory::fold(
            &subject,
            [(&created, 1, now), (&revised, 2, now), (&deleted, 3, now)],
        )
        .unwrap();
        assert_eq!(memory.content.as_text(), Some("likes oolong tea"));
        assert_eq!(memory.tags, vec!["tea".to_owned()]);
        assert_eq!(memory.state, MemoryState::Deleted);
        assert_eq!(memory.version, 3);
        assert_eq!(memory.kind, MemoryKind::Preference);
    }

    #[test]
    fn folding_onto_a_prefix_is_folding_the_whole_stream_and_refuses_a_gap() {
        let subject = SubjectId::parse("s1").unwrap();
        let (then, later) = (Utc::now(), Utc::now() + chrono::Duration::seconds(5));
        let created = created();
        let revised = DomainEvent::MemoryRevised(MemoryRevised {
            content: Some(SubjectText::new("likes oolong tea")),
            ..Default::default()
        });
        let archived = DomainEvent::MemoryArchived(MemoryStateChanged::default());
        let whole = Memory::fold(
            &subject,
            [
                (&created, 1, then),
                (&revised, 2, then),
                (&archived, 3, later),
            ],
        )
        .unwrap();
        let prefix = Memory::fold(&subject, [(&created, 1, then)]).unwrap();
        let onto = prefix
            .clone()
            .fold_onto([(&revised, 2, then), (&archived, 3, later)])
            .unwrap();
        assert_eq!(onto, whole);
        assert_eq!(onto.updated_at, later);
        assert_eq!(prefix.clone().fold_onto([]), Some(prefix.clone()));
        // Version 2 missing: not the whole stream's fold.
        assert_eq!(prefix.fold_onto([(&archived, 3, later)]), None);
    }

    /// A memory reinforced 200 times keeps its first sources and its
    /// latest ones, 64 in all, whether folded whole or onto a fold of
    /// part of its stream; it still counts every reinforcement, and a
    /// source it was said in again is not added twice.
    #[test]
    fn a_memory_keeps_its_first_sources_and_its_latest_ones() {
        let subject = SubjectId::parse("u1").unwrap();
        let now = Utc::now();
        let first = EventId::new();
        let DomainEvent::MemoryCreated(mut creation) = created() else {
            unreachable!()
        };
        creation.provenance.source_event_ids = vec![first];
        let creation = DomainEvent::MemoryCreated(creation);
        let mut said = vec![first];
        let mut stream = vec![(creation, 1)];
        for version in 2..=201 {
            let id = EventId::new();
            said.push(id);
            // The memory's first source again beside the new one.
            stream.push((
                DomainEvent::MemoryReinforced(MemoryReinforced {
                    source_event_ids: vec![first, id],
                    similarity: 0.95,
                }),
                version,
            ));
        }
        let events = |range: std::ops::Range<usize>| {
            stream[range]
                .iter()
                .map(|(event, version)| (event, *version, now))
                .collect::<Vec<_>>()
        };
        let whole = Memory::fold(&subject, events(0..201)).unwrap();
        let kept = &whole.provenance.source_event_ids;
        assert_eq!(kept.len(), Provenance::MAX_SOURCES);
        assert_eq!(kept[..16], said[..16]);
        assert_eq!(kept[16..], said[201 - 48..]);
        assert_eq!(whole.reinforcements, 200);
        let part = Memory::fold(&subject, events(0..100)).unwrap();
        assert_eq!(
            part.clone().fold_onto(events(100..201)),
            Some(whole.clone())
        );
        // A row kept before the bound, with every source: one more
        // reinforcement brings it to the bound, as the whole fold has it.
        let mut unbounded = part;
        unbounded.provenance.source_event_ids = said[..200].to_vec();
        unbounded.version = 200;
        unbounded.reinforcements = 199;
        assert_eq!(unbounded.fold_onto(events(200..201)), Some(whole));
    }

    #[test]
    fn tags_sessions_and_message_ids_are_sealed_values_and_old_versions_still_read() {
        let message = serde_json::json!({
            "message_id": "jane.doe@example.com",
            "role": "user",
            "content": {"$text": "hello"},
            "timestamp": "2026-01-02T03:04:05Z",
            "session": "s-1",
        });
        let DomainEvent::MessageReceived(old) =
            DomainEvent::decode("MessageReceived", 1, message).unwrap()
        else {
            panic!("a message")
        };
        assert_eq!(old.message_id, "jane.doe@example.com");
        assert_eq!(old.session.as_ref().map(SessionId::as_str), Some("s-1"));
        let now = DomainEvent::MessageReceived(old).to_payload();
        assert_eq!(
            now["message_id"],
            serde_json::json!({"$value": "jane.doe@example.com"})
        );
        assert_eq!(now["session"], serde_json::json!({"$value": "s-1"}));
        assert!(crate::sealed::plain_fields("MessageReceived", &now).is_empty());

        let created = serde_json::json!({
            "memory_id": MemoryId::new(),
            "kind": "fact",
            "content": {"$text": "allergic to penicillin"},
            "tags": ["allergic", "penicillin"],
            "confidence": 0.9,
            "importance": 0.8,
            "state": "active",
            "provenance": {"source_event_ids": [], "producer": {"strategy": "rules", "version": "1"}},
        });
        let decoded = DomainEvent::decode("MemoryCreated", 1, created.clone()).unwrap();
        let DomainEvent::MemoryCreated(c) = &decoded else {
            panic!("a creation")
        };
        assert_eq!(c.tags, ["allergic", "penicillin"]);
        assert_eq!(
            crate::sealed::plain_fields("MemoryCreated", &created),
            ["tags"],
            "the v1 form is what the stores now refuse"
        );
        // Erased: the key is gone, so are the tags.
        let mut erased = decoded.to_payload();
        erased["tags"] = serde_json::json!({"$erased": true});
        erased["content"] = serde_json::json!({"$erased": true});
        let DomainEvent::MemoryCreated(e) =
            DomainEvent::decode("MemoryCreated", 2, erased).unwrap()
        else {
            panic!("a creation")
        };
        assert!(e.tags.is_empty() && e.content.is_erased());
    }
}
