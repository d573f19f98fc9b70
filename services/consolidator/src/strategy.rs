//! The consolidation strategy port (seed 000): extract candidate memories
//! from a batch of conversation messages, then decide, for each candidate,
//! what to do against the subject's most similar existing memories.
//!
//! Key decision: the port is async and strategy-agnostic. The rule-based
//! strategy ([`crate::rules::RuleStrategy`]) answers synchronously inside the
//! async methods; the LLM strategy calls out. The pipeline (routing by
//! confidence, importance, storage) is coded against this trait only, so a
//! failing LLM strategy can fall back to the rules without the caller
//! knowing which one answered — [`ConsolidationStrategy::name`] and
//! [`ConsolidationStrategy::version`] go into each memory's provenance.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use mnemo_domain::{EventId, MemoryId, MemoryKind};

/// One message as the strategy sees it (content already PII-scrubbed and
/// opened).
#[derive(Debug, Clone)]
pub struct ConversationMessage {
    pub event_id: EventId,
    pub role: mnemo_domain::events::Role,
    pub content: String,
    pub timestamp: DateTime<Utc>,
    pub session: Option<String>,
}

/// What extraction proposes.
///
/// `content` is the user's own clause, trimmed (e.g. "I really love spicy
/// Sichuan food", "我住在北京海淀区"): strategies are not required to rewrite
/// it into the third person. `tags` holds 0–5 lowercase keywords,
/// `confidence` is in `0..=1`, and `source_event_ids` names the message
/// events the candidate came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub content: String,
    pub kind: MemoryKind,
    pub tags: Vec<String>,
    pub confidence: f32,
    pub source_event_ids: Vec<EventId>,
}

/// An existing memory the merge step compares against.
#[derive(Debug, Clone)]
pub struct ExistingMemory {
    pub id: MemoryId,
    pub content: String,
    pub kind: MemoryKind,
    /// Vector similarity to the candidate, `0..=1` (higher is closer).
    pub similarity: f32,
}

/// What to do with one candidate.
#[derive(Debug, Clone, PartialEq)]
pub enum MergeAction {
    /// New information: store the candidate as a new memory.
    Keep,
    /// Already known (a duplicate): store nothing; the caller may reinforce
    /// the existing memory.
    Skip,
    /// Fold the candidate into `target`, whose new content is `content`.
    MergeInto { target: MemoryId, content: String },
    /// The candidate replaces `target` (same slot, new value); the old
    /// version stays in history.
    Supersede { target: MemoryId },
}

/// The decision for candidate number `candidate` (an index into the
/// candidates passed to [`ConsolidationStrategy::merge`]).
#[derive(Debug, Clone, PartialEq)]
pub struct MergeDecision {
    pub candidate: usize,
    pub action: MergeAction,
    pub reason: String,
}

#[derive(Debug, thiserror::Error)]
pub enum StrategyError {
    #[error("strategy failed: {0}")]
    Failed(String),
    #[error("strategy answer is malformed: {0}")]
    Malformed(String),
}

/// Seed 000's lightweight port: extract, then merge. Both async because the
/// LLM strategy will call out.
#[async_trait]
pub trait ConsolidationStrategy: Send + Sync + 'static {
    /// "rules", "llm", ...
    fn name(&self) -> &'static str;
    fn version(&self) -> &'static str;
    async fn extract(
        &self,
        messages: &[ConversationMessage],
    ) -> Result<Vec<Candidate>, StrategyError>;
    /// For each candidate, given the subject's most similar existing
    /// memories (each candidate's own list, `existing[i]` for candidate `i`),
    /// decide. Rule-based: Keep unless an existing memory is a near-exact
    /// textual duplicate (Skip) or the same slot with a new value, e.g.
    /// "I live in Paris" vs existing "I live in Lyon" (Supersede) — only
    /// where the rule is certain.
    async fn merge(
        &self,
        candidates: &[Candidate],
        existing: &[Vec<ExistingMemory>],
    ) -> Result<Vec<MergeDecision>, StrategyError>;
}
