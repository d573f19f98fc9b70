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

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use mnemo_domain::events::RelationKind;
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
    pub importance: f32,
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

/// A relation the merge answer proposes between candidate number
/// `candidate` and an existing memory (seed 002's "retrieve, then
/// classify", asked in the same call as the merge decisions). The candidate
/// has no memory id yet: the edge is recorded only if it becomes a memory.
#[derive(Debug, Clone, PartialEq)]
pub struct CandidateRelation {
    pub candidate: usize,
    pub memory: MemoryId,
    /// Whether the candidate is the edge's `from` end (`candidate` is the
    /// `relation` of `memory`), else its `to` end.
    pub candidate_is_from: bool,
    pub relation: RelationKind,
    pub confidence: f32,
}

/// What the merge step answers: a decision per candidate and, when they
/// were asked for, the candidates' relations to the memories shown.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MergeOutcome {
    pub decisions: Vec<MergeDecision>,
    pub relations: Vec<CandidateRelation>,
}

/// A classified edge: `from` is the `relation` of `to` (see
/// [`mnemo_domain::MemoryRelation`]).
#[derive(Debug, Clone, PartialEq)]
pub struct FoundRelation {
    pub from: MemoryId,
    pub to: MemoryId,
    pub relation: RelationKind,
    pub confidence: f32,
}

/// What a strategy spent on one batch: LLM calls and tokens. Shared by the
/// calls of one batch (atomics, so a strategy may call concurrently).
#[derive(Debug, Default)]
pub struct Spend {
    calls: AtomicU32,
    failed_calls: AtomicU32,
    prompt_tokens: AtomicU64,
    completion_tokens: AtomicU64,
}

impl Spend {
    pub fn record(&self, prompt_tokens: u64, completion_tokens: u64) {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.prompt_tokens
            .fetch_add(prompt_tokens, Ordering::Relaxed);
        self.completion_tokens
            .fetch_add(completion_tokens, Ordering::Relaxed);
    }

    /// A call that brought no usable answer (it still counts as a call).
    pub fn record_failure(&self) {
        self.failed_calls.fetch_add(1, Ordering::Relaxed);
    }

    pub fn calls(&self) -> u32 {
        self.calls.load(Ordering::Relaxed)
    }

    pub fn failed_calls(&self) -> u32 {
        self.failed_calls.load(Ordering::Relaxed)
    }

    pub fn prompt_tokens(&self) -> u64 {
        self.prompt_tokens.load(Ordering::Relaxed)
    }

    pub fn completion_tokens(&self) -> u64 {
        self.completion_tokens.load(Ordering::Relaxed)
    }

    pub fn tokens(&self) -> u64 {
        self.prompt_tokens() + self.completion_tokens()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StrategyError {
    #[error("strategy failed: {0}")]
    Failed(String),
    #[error("strategy answer is malformed: {0}")]
    Malformed(String),
}

/// Seed 000's lightweight port: extract, then merge (with an LLM, the merge
/// also relates), and with an LLM summarise. All async because the LLM strategy calls out; every
/// call reports what it spent in `spend`.
#[async_trait]
pub trait ConsolidationStrategy: Send + Sync + 'static {
    /// "rules", "llm", ...
    fn name(&self) -> &'static str;
    fn version(&self) -> &'static str;
    /// The model that answers, when there is one.
    fn model(&self) -> Option<String> {
        None
    }
    /// The version of the prompt set, when there is one.
    fn prompt_version(&self) -> Option<String> {
        None
    }
    /// Whether one extraction reads the whole batch at once (an LLM does),
    /// so that any message of it can steer any candidate, its sources
    /// included; the injection screening then holds every candidate of a
    /// batch that carries an injection. True unless a strategy knows
    /// better: the rules read each user message alone and cite it exactly.
    fn reads_whole_batch(&self) -> bool {
        true
    }
    async fn extract(
        &self,
        messages: &[ConversationMessage],
        spend: &Spend,
    ) -> Result<Vec<Candidate>, StrategyError>;
    /// For each candidate, given the subject's most similar existing
    /// memories (each candidate's own list, `existing[i]` for candidate `i`),
    /// decide; with `relations`, also say how the candidates relate to
    /// those memories ("unrelated" pairs left out). Rule-based: Keep unless
    /// an existing memory is a near-exact textual duplicate (Skip) or the
    /// same slot with a new value, e.g. "I live in Paris" vs existing "I
    /// live in Lyon" (Supersede) — only where the rule is certain; the rules
    /// find no relations.
    async fn merge(
        &self,
        candidates: &[Candidate],
        existing: &[Vec<ExistingMemory>],
        relations: bool,
        spend: &Spend,
    ) -> Result<MergeOutcome, StrategyError>;
    /// Whether [`merge`](Self::merge) costs a call (an LLM's does), so that
    /// the pipeline asks only when some candidate has a close neighbour;
    /// the rules' merge is free and always runs.
    fn merge_is_a_call(&self) -> bool {
        false
    }
    /// The subject's new summary from the previous one and the memories
    /// since. `None`: this strategy keeps no profile (the rules).
    async fn summarise(
        &self,
        _previous: Option<&str>,
        _memories: &[String],
        _spend: &Spend,
    ) -> Result<Option<String>, StrategyError> {
        Ok(None)
    }
}
