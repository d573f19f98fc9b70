//! The memory model and the policy numbers that come from the design notes.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::ids::{AgentId, EventId, MemoryId, SessionId, SubjectId};
use crate::text::SubjectText;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryKind {
    Fact,
    Preference,
    Decision,
    Rule,
    Status,
}

impl MemoryKind {
    pub const ALL: [MemoryKind; 5] = [
        MemoryKind::Fact,
        MemoryKind::Preference,
        MemoryKind::Decision,
        MemoryKind::Rule,
        MemoryKind::Status,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            MemoryKind::Fact => "fact",
            MemoryKind::Preference => "preference",
            MemoryKind::Decision => "decision",
            MemoryKind::Rule => "rule",
            MemoryKind::Status => "status",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == raw)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryState {
    Active,
    PendingReview,
    Archived,
    Superseded,
    Deleted,
    /// The subject was erased: the key generation that sealed the memory's
    /// creation is destroyed. Final, whatever the stream holds after it
    /// (see [`Memory::fold`]); never stored in a projection, only folded.
    Erased,
}

impl MemoryState {
    pub const ALL: [MemoryState; 6] = [
        MemoryState::Active,
        MemoryState::PendingReview,
        MemoryState::Archived,
        MemoryState::Superseded,
        MemoryState::Deleted,
        MemoryState::Erased,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            MemoryState::Active => "active",
            MemoryState::PendingReview => "pending_review",
            MemoryState::Archived => "archived",
            MemoryState::Superseded => "superseded",
            MemoryState::Deleted => "deleted",
            MemoryState::Erased => "erased",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == raw)
    }
}

/// Who produced a memory: a person through the API, or a consolidation
/// strategy with its version (and, later, model and prompt version).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Producer {
    /// `api`, `rules`, `llm`.
    pub strategy: String,
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_version: Option<String>,
    /// Set when the configured LLM did not answer and the rules did: why
    /// (`budget_exhausted`, `llm_failed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
}

impl Producer {
    pub fn api() -> Self {
        Producer {
            strategy: "api".to_owned(),
            version: "1".to_owned(),
            model: None,
            prompt_version: None,
            fallback: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// The message events the memory came from (empty for a direct write):
    /// as a memory folds, at most [`Provenance::MAX_SOURCES`] of them (see
    /// [`Provenance::add_source`]).
    pub source_event_ids: Vec<EventId>,
    pub producer: Producer,
}

impl Provenance {
    /// The most sources a folded memory keeps. A memory said again in
    /// conversation after conversation is reinforced by each; keeping
    /// every message that repeated it grew its row (rewritten at each
    /// reinforcement), its fold (a look-up per source) and the search's
    /// per-result lists without end. Every reinforcement stays in the
    /// log, with its sources: the memory's history lists them all.
    pub const MAX_SOURCES: usize = 64;
    /// Of those, the first ones, kept for good: where the memory was
    /// learned. The rest are the latest.
    pub const FIRST_SOURCES: usize = 16;

    /// Adds a source message unless it is kept already; at
    /// [`Provenance::MAX_SOURCES`], the oldest of the latest ones makes
    /// room, so the kept ones are the first [`Provenance::FIRST_SOURCES`]
    /// and the latest others, in the order they came. Folding onto a list
    /// kept so gives what folding the whole stream gives.
    pub fn add_source(&mut self, id: EventId) {
        if self.source_event_ids.contains(&id) {
            return;
        }
        // A loop, not one removal: a list kept before the bound (a
        // read-model row written by an older build) shrinks to it at once.
        while self.source_event_ids.len() >= Self::MAX_SOURCES {
            self.source_event_ids.remove(Self::FIRST_SOURCES);
        }
        self.source_event_ids.push(id);
    }

    /// This provenance with its sources kept as [`Provenance::add_source`]
    /// keeps them, added in order.
    pub fn bounded(mut self) -> Provenance {
        let ids = std::mem::take(&mut self.source_event_ids);
        for id in ids {
            self.add_source(id);
        }
        self
    }
}

/// Importance from confidence and kind (seed 000): `0.3 + 0.5·confidence`,
/// +0.1 for a preference, +0.05 for a decision, clamped to [0, 1].
pub fn importance_for(confidence: f32, kind: MemoryKind) -> f32 {
    let bonus = match kind {
        MemoryKind::Preference => 0.1,
        MemoryKind::Decision => 0.05,
        _ => 0.0,
    };
    (0.3 + 0.5 * confidence.clamp(0.0, 1.0) + bonus).clamp(0.0, 1.0)
}

/// A typed edge between two memories (seed 002): `from` is the `relation`
/// of `to` — a premise `to` rests on, a cause of `to`, a refinement of `to`,
/// or in contradiction / parallel with it. Both memories' streams carry it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryRelation {
    pub from: MemoryId,
    pub to: MemoryId,
    pub relation: crate::events::RelationKind,
    pub confidence: f32,
}

impl MemoryRelation {
    /// The memory at the other end, seen from `me`.
    pub fn other(&self, me: &MemoryId) -> MemoryId {
        if &self.from == me {
            self.to
        } else {
            self.from
        }
    }
}

/// Most tags a memory may carry. Writes refuse more; a search filter with
/// more could match no memory.
pub const MAX_TAGS: usize = 20;
/// Longest tag, in characters (after trimming).
pub const MAX_TAG_CHARS: usize = 64;

/// A memory as of some version: the fold of its stream.
#[derive(Debug, Clone, PartialEq)]
pub struct Memory {
    pub id: MemoryId,
    pub subject: SubjectId,
    pub kind: MemoryKind,
    pub content: SubjectText,
    pub tags: Vec<String>,
    pub confidence: f32,
    pub importance: f32,
    pub state: MemoryState,
    /// The stream version of the last event applied (1 after creation).
    pub version: u64,
    pub provenance: Provenance,
    pub session: Option<SessionId>,
    pub agent: Option<AgentId>,
    pub reinforcements: u32,
    pub superseded_by: Option<MemoryId>,
    /// Edges to other memories, in the order they were added.
    pub relations: Vec<MemoryRelation>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn importance_follows_the_formula() {
        assert!((importance_for(0.8, MemoryKind::Fact) - 0.7).abs() < 1e-6);
        assert!((importance_for(0.8, MemoryKind::Preference) - 0.8).abs() < 1e-6);
        assert!((importance_for(0.8, MemoryKind::Decision) - 0.75).abs() < 1e-6);
        assert!((importance_for(1.0, MemoryKind::Preference) - 0.9).abs() < 1e-6);
        assert!((importance_for(7.0, MemoryKind::Preference) - 0.9).abs() < 1e-6);
    }

    #[test]
    fn kinds_and_states_parse_their_names() {
        for kind in MemoryKind::ALL {
            assert_eq!(MemoryKind::parse(kind.as_str()), Some(kind));
        }
        for state in MemoryState::ALL {
            assert_eq!(MemoryState::parse(state.as_str()), Some(state));
        }
        assert_eq!(MemoryKind::parse("opinion"), None);
    }
}
