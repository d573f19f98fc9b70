//! The LLM consolidation strategy (seeds 000, 002, 004): extraction, merge
//! decisions with the relations of what is kept, and the rolling profile,
//! each one chat completion with a versioned prompt and a JSON answer shape.
//!
//! Key decision: seed 000's budget is two calls per batch of 10 messages
//! (extract, then merge only when memories exist). Relations are asked in
//! the merge call, which already shows each candidate its nearest memories,
//! instead of a third call over the same pairs; the pipeline skips the merge
//! call when no neighbour is close, and the profile is rewritten once per
//! `profile_every` new memories, not per batch.
//!
//! Key decision: an unreliable model can never lose or corrupt a memory.
//! Every answer goes through tolerant parsing ([`mnemo_llm::answer`]) and
//! then validation against the documented shape (docs/llm.md); a call that
//! fails, or answers something that does not validate, is asked again up to
//! `attempts` times, and then the call fails with [`StrategyError`] — the
//! pipeline then lets the rules consolidate the batch and says so in the
//! memories' provenance. Nothing here writes anything.
//!
//! Prompts are files (`prompts/<version>/*.md`, compiled in; an operator can
//! point `MNEMO_LLM_PROMPTS_DIR` at a directory of their own). The file is
//! the system message; the user message is a JSON document of the inputs,
//! so a swapped prompt needs no template language.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use mnemo_domain::events::{RelationKind, Role};
use mnemo_domain::{MemoryId, MemoryKind};
use mnemo_llm::{AnswerSchema, ChatRequest, LanguageModel, LlmError, OpenAiChat};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::strategy::{
    Candidate, CandidateRelation, ConsolidationStrategy, ConversationMessage, ExistingMemory,
    MergeAction, MergeDecision, MergeOutcome, Spend, StrategyError,
};

/// How many times one call is tried before the batch falls back.
pub const DEFAULT_ATTEMPTS: u32 = 3;
/// Existing memories shown to the merge prompt, all candidates together.
const MAX_EXISTING_IN_MERGE: usize = 40;
/// Relations below this confidence are not recorded.
const MIN_RELATION_CONFIDENCE: f32 = 0.5;
const MAX_CONTENT_CHARS: usize = 500;
const MAX_PROFILE_CHARS: usize = 2_000;

/// The three prompts and the version that names them.
#[derive(Debug, Clone)]
pub struct PromptSet {
    pub version: String,
    pub extract: String,
    pub merge: String,
    pub profile: String,
}

impl PromptSet {
    /// The prompts this build ships (`prompts/v2`).
    pub fn builtin() -> Self {
        PromptSet {
            version: include_str!("../prompts/v2/VERSION").trim().to_owned(),
            extract: include_str!("../prompts/v2/extract.md").to_owned(),
            merge: include_str!("../prompts/v2/merge.md").to_owned(),
            profile: include_str!("../prompts/v2/profile.md").to_owned(),
        }
    }

    /// An operator's prompts: `VERSION`, `extract.md`, `merge.md` and
    /// `profile.md` in `dir`. The version goes into every memory's
    /// provenance, so it is required. A merge prompt that asks for no
    /// relations simply records none.
    pub fn load(dir: &Path) -> Result<Self, LlmSetupError> {
        let read = |name: &str| {
            std::fs::read_to_string(dir.join(name)).map_err(|source| LlmSetupError::Prompt {
                path: dir.join(name),
                source,
            })
        };
        let version = read("VERSION")?.trim().to_owned();
        if version.is_empty() {
            return Err(LlmSetupError::EmptyVersion(dir.join("VERSION")));
        }
        Ok(PromptSet {
            version,
            extract: read("extract.md")?,
            merge: read("merge.md")?,
            profile: read("profile.md")?,
        })
    }
}

/// Why the LLM strategy could not be set up from its settings.
#[derive(Debug, thiserror::Error)]
pub enum LlmSetupError {
    #[error("cannot read prompt {path}: {source}")]
    Prompt {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{0} is empty: the prompt version goes into every memory's provenance")]
    EmptyVersion(std::path::PathBuf),
    #[error(transparent)]
    Client(#[from] mnemo_llm::LlmError),
}

impl LlmSetupError {
    pub fn code(&self) -> &'static str {
        match self {
            LlmSetupError::Prompt { .. } => "llm_prompt_unreadable",
            LlmSetupError::EmptyVersion(_) => "llm_prompt_version_empty",
            LlmSetupError::Client(e) => e.code(),
        }
    }
}

pub struct LlmStrategy {
    model: Arc<dyn LanguageModel>,
    prompts: PromptSet,
    attempts: u32,
}

impl LlmStrategy {
    pub const NAME: &'static str = "llm";
    pub const VERSION: &'static str = "1";

    pub fn new(model: Arc<dyn LanguageModel>, prompts: PromptSet) -> Self {
        LlmStrategy {
            model,
            prompts,
            attempts: DEFAULT_ATTEMPTS,
        }
    }

    /// The strategy the settings describe: the OpenAI-compatible client and
    /// the built-in prompts, or the operator's.
    pub fn from_settings(settings: &mnemo_config::LlmSettings) -> Result<Self, LlmSetupError> {
        let client = OpenAiChat::new(settings.chat.clone())?;
        let prompts = match &settings.prompts_dir {
            Some(dir) => PromptSet::load(dir)?,
            None => PromptSet::builtin(),
        };
        Ok(LlmStrategy::new(Arc::new(client), prompts).with_attempts(settings.attempts))
    }

    pub fn with_attempts(mut self, attempts: u32) -> Self {
        self.attempts = attempts.max(1);
        self
    }

    /// One call, asked again until `validate` accepts the answer.
    async fn ask<T>(
        &self,
        purpose: &str,
        system: &str,
        input: Value,
        schema: Option<AnswerSchema>,
        spend: &Spend,
        validate: impl Fn(&str) -> Result<T, String>,
    ) -> Result<T, StrategyError> {
        let request = ChatRequest {
            system: system.to_owned(),
            prompt: serde_json::to_string_pretty(&input).expect("JSON values serialize"),
            schema,
        };
        let mut last = String::new();
        for attempt in 1..=self.attempts {
            match self.model.complete(&request).await {
                Ok(completion) => {
                    spend.record(
                        completion.usage.prompt_tokens,
                        completion.usage.completion_tokens,
                    );
                    match validate(&completion.text) {
                        Ok(answer) => return Ok(answer),
                        Err(why) => {
                            spend.record_failure();
                            // The reason names the shape problem, never the content.
                            tracing::warn!(purpose, attempt, reason = %why, "LLM answer rejected");
                            last = format!("malformed {purpose} answer: {why}");
                        }
                    }
                }
                Err(error) => {
                    spend.record_failure();
                    tracing::warn!(purpose, attempt, error = %error, "LLM call failed");
                    last = format!("{purpose} call failed: {error}");
                    // A refused request (bad key, unknown model) fails the
                    // same way however often it is sent.
                    if matches!(error, LlmError::Rejected { .. } | LlmError::Config(_)) {
                        break;
                    }
                }
            }
        }
        Err(StrategyError::Failed(last))
    }
}

// ---- answer shapes (docs/llm.md) -------------------------------------------

#[derive(Deserialize)]
struct ExtractionAnswer {
    memories: Vec<Value>,
}

#[derive(Deserialize)]
struct ExtractedMemory {
    content: String,
    kind: String,
    #[serde(default)]
    tags: Vec<String>,
    confidence: f32,
    #[serde(default)]
    sources: Vec<usize>,
}

#[derive(Deserialize)]
struct MergeAnswer {
    decisions: Vec<MergeItem>,
    /// Tolerant: an answer without relations (or with malformed ones) still
    /// carries its decisions.
    #[serde(default)]
    relations: Vec<Value>,
}

#[derive(Deserialize)]
struct MergeItem {
    candidate: usize,
    action: String,
    #[serde(default)]
    target: Option<String>,
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Deserialize)]
struct RelationItem {
    from: String,
    to: String,
    relation: String,
    #[serde(default = "default_relation_confidence")]
    confidence: f32,
}

fn default_relation_confidence() -> f32 {
    0.7
}

fn extraction_schema() -> AnswerSchema {
    AnswerSchema::new(
        "extraction",
        json!({
            "type": "object",
            "properties": {"memories": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "content": {"type": "string"},
                    "kind": {"type": "string", "enum": ["fact", "preference", "decision", "rule", "status"]},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                    "sources": {"type": "array", "items": {"type": "integer"}}
                },
                "required": ["content", "kind", "tags", "confidence"]
            }}},
            "required": ["memories"]
        }),
    )
}

fn merge_schema() -> AnswerSchema {
    AnswerSchema::new(
        "merge",
        json!({
            "type": "object",
            "properties": {
                "decisions": {"type": "array", "items": {
                    "type": "object",
                    "properties": {
                        "candidate": {"type": "integer"},
                        "action": {"type": "string", "enum": ["keep", "skip", "merge_into", "supersede"]},
                        "target": {"type": ["string", "null"]},
                        "content": {"type": ["string", "null"]},
                        "reason": {"type": "string"}
                    },
                    "required": ["candidate", "action"]
                }},
                "relations": {"type": "array", "items": {
                    "type": "object",
                    "properties": {
                        "from": {"type": "string"},
                        "to": {"type": "string"},
                        "relation": {"type": "string", "enum": ["premise", "cause", "refines", "contradicts", "parallel", "unrelated"]},
                        "confidence": {"type": "number", "minimum": 0, "maximum": 1}
                    },
                    "required": ["from", "to", "relation"]
                }}
            },
            "required": ["decisions", "relations"]
        }),
    )
}

fn clean_content(raw: &str) -> Option<String> {
    let content = raw.trim();
    if content.is_empty() {
        return None;
    }
    Some(content.chars().take(MAX_CONTENT_CHARS).collect())
}

fn clean_tags(raw: &[String]) -> Vec<String> {
    let mut seen = BTreeSet::new();
    raw.iter()
        .map(|t| t.trim().to_lowercase())
        .filter(|t| !t.is_empty() && t.chars().count() <= 40 && seen.insert(t.clone()))
        .take(5)
        .collect()
}

/// Validates an extraction answer. Items that break the shape are dropped;
/// the answer is refused only when it has items and none is usable.
pub fn parse_extraction(
    text: &str,
    messages: &[ConversationMessage],
) -> Result<Vec<Candidate>, String> {
    let answer: ExtractionAnswer = mnemo_llm::answer::parse(text).map_err(|e| e.to_string())?;
    let all_sources: Vec<_> = messages
        .iter()
        .filter(|m| m.role == Role::User)
        .map(|m| m.event_id)
        .collect();
    let mut candidates: Vec<Candidate> = Vec::new();
    let mut invalid = 0;
    for item in &answer.memories {
        let Ok(item) = serde_json::from_value::<ExtractedMemory>(item.clone()) else {
            invalid += 1;
            continue;
        };
        let (Some(content), Some(kind)) = (
            clean_content(&item.content),
            MemoryKind::parse(item.kind.trim()),
        ) else {
            invalid += 1;
            continue;
        };
        if !(0.0..=1.0).contains(&item.confidence) {
            invalid += 1;
            continue;
        }
        // Message indexes in the prompt start at 1.
        let mut sources: Vec<_> = item
            .sources
            .iter()
            .filter_map(|i| i.checked_sub(1).and_then(|i| messages.get(i)))
            .map(|m| m.event_id)
            .collect();
        sources.dedup();
        if sources.is_empty() {
            // Uncited: a memory cites every user message, but a standing
            // instruction cites every message, since nothing shows it came
            // from the user, and the injection screening holds one that
            // may have come from anyone else.
            sources = if crate::injection::is_standing_instruction(kind, &content) {
                messages.iter().map(|m| m.event_id).collect()
            } else {
                all_sources.clone()
            };
        }
        // The same memory twice in one answer is one candidate.
        if let Some(known) = candidates
            .iter_mut()
            .find(|c| c.content.eq_ignore_ascii_case(&content))
        {
            known.confidence = known.confidence.max(item.confidence);
            continue;
        }
        candidates.push(Candidate {
            content,
            kind,
            tags: clean_tags(&item.tags),
            confidence: item.confidence,
            source_event_ids: sources,
        });
    }
    if candidates.is_empty() && invalid > 0 {
        return Err(format!(
            "none of its {invalid} memories has the documented shape"
        ));
    }
    Ok(candidates)
}

/// Validates a merge answer against the candidates and the labels of the
/// existing memories shown. Strict for decisions: one decision that cannot
/// be applied as stated refuses the whole answer, since applying it
/// differently (say, keeping what the model meant to skip) would store a
/// duplicate. Tolerant for relations, which lose no memory: see
/// [`parse_relations`].
pub fn parse_merge(
    text: &str,
    candidates: usize,
    labels: &HashMap<String, MemoryId>,
) -> Result<MergeOutcome, String> {
    let answer: MergeAnswer = mnemo_llm::answer::parse(text).map_err(|e| e.to_string())?;
    let target_of = |item: &MergeItem| -> Result<MemoryId, String> {
        let raw = item
            .target
            .as_deref()
            .map(str::trim)
            .ok_or_else(|| format!("decision {} has no target", item.candidate))?;
        labels
            .get(raw)
            .copied()
            .or_else(|| {
                MemoryId::parse(raw)
                    .ok()
                    .filter(|id| labels.values().any(|v| v == id))
            })
            .ok_or_else(|| format!("decision {} targets an unknown memory", item.candidate))
    };
    let mut decisions: Vec<MergeDecision> = Vec::new();
    for item in &answer.decisions {
        if item.candidate >= candidates {
            return Err(format!(
                "decision for candidate {} of {candidates}",
                item.candidate
            ));
        }
        if decisions.iter().any(|d| d.candidate == item.candidate) {
            return Err(format!("two decisions for candidate {}", item.candidate));
        }
        let action = match item.action.trim() {
            "keep" => MergeAction::Keep,
            "skip" => MergeAction::Skip,
            "supersede" => MergeAction::Supersede {
                target: target_of(item)?,
            },
            "merge_into" => MergeAction::MergeInto {
                target: target_of(item)?,
                content: item
                    .content
                    .as_deref()
                    .and_then(clean_content)
                    .ok_or_else(|| format!("merge_into {} has no content", item.candidate))?,
            },
            other => return Err(format!("unknown action {other:?}")),
        };
        decisions.push(MergeDecision {
            candidate: item.candidate,
            action,
            reason: item.reason.clone().unwrap_or_default(),
        });
    }
    Ok(MergeOutcome {
        decisions,
        relations: parse_relations(answer.relations, candidates, labels),
    })
}

/// The relations of a merge answer. Each pairs a candidate (`c<i>`) with
/// an existing memory shown (`m<j>`), in either direction; items naming
/// anything else, an unknown relation, "unrelated", or a confidence below
/// [`MIN_RELATION_CONFIDENCE`] are dropped, as are repeats.
pub fn parse_relations(
    items: Vec<Value>,
    candidates: usize,
    labels: &HashMap<String, MemoryId>,
) -> Vec<CandidateRelation> {
    let candidate = |label: &str| {
        label
            .strip_prefix('c')
            .and_then(|i| i.parse::<usize>().ok())
            .filter(|i| *i < candidates)
    };
    let mut found: Vec<CandidateRelation> = Vec::new();
    for item in items {
        let Ok(item) = serde_json::from_value::<RelationItem>(item) else {
            continue;
        };
        let (from, to) = (item.from.trim(), item.to.trim());
        let (index, memory, candidate_is_from) = match (
            candidate(from),
            labels.get(to),
            candidate(to),
            labels.get(from),
        ) {
            (Some(index), Some(memory), _, _) => (index, *memory, true),
            (_, _, Some(index), Some(memory)) => (index, *memory, false),
            _ => continue,
        };
        let Some(relation) = RelationKind::parse(item.relation.trim()) else {
            continue;
        };
        if !(MIN_RELATION_CONFIDENCE..=1.0).contains(&item.confidence) {
            continue;
        }
        let proposed = CandidateRelation {
            candidate: index,
            memory,
            candidate_is_from,
            relation,
            confidence: item.confidence,
        };
        let repeat = found.iter().any(|f| {
            (f.candidate, f.memory, f.candidate_is_from, f.relation)
                == (index, memory, candidate_is_from, relation)
        });
        if !repeat {
            found.push(proposed);
        }
    }
    found
}

fn parse_profile(text: &str) -> Result<String, String> {
    let text = mnemo_llm::answer::strip_think(text).trim();
    let text = text
        .strip_prefix("```")
        .and_then(|t| t.strip_suffix("```"))
        .map_or(text, |t| t.trim_start_matches("text").trim());
    if text.is_empty() {
        return Err("the profile is empty".into());
    }
    Ok(text.chars().take(MAX_PROFILE_CHARS).collect())
}

#[async_trait]
impl ConsolidationStrategy for LlmStrategy {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn version(&self) -> &'static str {
        Self::VERSION
    }

    fn model(&self) -> Option<String> {
        Some(self.model.model().to_owned())
    }

    fn prompt_version(&self) -> Option<String> {
        Some(self.prompts.version.clone())
    }

    async fn extract(
        &self,
        messages: &[ConversationMessage],
        spend: &Spend,
    ) -> Result<Vec<Candidate>, StrategyError> {
        if messages.is_empty() {
            return Ok(Vec::new());
        }
        let input = json!({
            "messages": messages.iter().enumerate().map(|(i, m)| json!({
                "index": i + 1,
                "role": m.role,
                "content": m.content,
                "timestamp": m.timestamp.to_rfc3339(),
            })).collect::<Vec<_>>()
        });
        self.ask(
            "extract",
            &self.prompts.extract,
            input,
            Some(extraction_schema()),
            spend,
            |text| parse_extraction(text, messages),
        )
        .await
    }

    async fn merge(
        &self,
        candidates: &[Candidate],
        existing: &[Vec<ExistingMemory>],
        relations: bool,
        spend: &Spend,
    ) -> Result<MergeOutcome, StrategyError> {
        // One list of existing memories for all candidates, labelled m1…,
        // nearest first: short labels are copied back reliably, UUIDs not.
        let mut shown: Vec<&ExistingMemory> = Vec::new();
        for rank in 0..existing.iter().map(Vec::len).max().unwrap_or(0) {
            for list in existing {
                if let Some(memory) = list.get(rank) {
                    if shown.len() < MAX_EXISTING_IN_MERGE
                        && !shown.iter().any(|m| m.id == memory.id)
                    {
                        shown.push(memory);
                    }
                }
            }
        }
        if candidates.is_empty() {
            return Ok(MergeOutcome::default());
        }
        if shown.is_empty() {
            // Nothing to compare with: every candidate is new, no call needed.
            return Ok(MergeOutcome {
                decisions: (0..candidates.len())
                    .map(|candidate| MergeDecision {
                        candidate,
                        action: MergeAction::Keep,
                        reason: "no existing memory is similar".into(),
                    })
                    .collect(),
                relations: Vec::new(),
            });
        }
        let labels: HashMap<String, MemoryId> = shown
            .iter()
            .enumerate()
            .map(|(i, m)| (format!("m{}", i + 1), m.id))
            .collect();
        let input = json!({
            "candidates": candidates.iter().enumerate().map(|(i, c)| json!({
                "candidate": i, "id": format!("c{i}"), "content": c.content, "kind": c.kind.as_str(),
            })).collect::<Vec<_>>(),
            "existing": shown.iter().enumerate().map(|(i, m)| json!({
                "id": format!("m{}", i + 1), "content": m.content, "kind": m.kind.as_str(),
            })).collect::<Vec<_>>(),
            "relations_wanted": relations,
        });
        self.ask(
            "merge",
            &self.prompts.merge,
            input,
            Some(merge_schema()),
            spend,
            |text| parse_merge(text, candidates.len(), &labels),
        )
        .await
        .map(|mut outcome| {
            if !relations {
                outcome.relations.clear();
            }
            outcome
        })
    }

    fn merge_is_a_call(&self) -> bool {
        true
    }

    async fn summarise(
        &self,
        previous: Option<&str>,
        memories: &[String],
        spend: &Spend,
    ) -> Result<Option<String>, StrategyError> {
        let input = json!({"previous_profile": previous, "new_memories": memories});
        self.ask(
            "profile",
            &self.prompts.profile,
            input,
            None,
            spend,
            parse_profile,
        )
        .await
        .map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;
    use mnemo_domain::EventId;

    fn messages(n: usize) -> Vec<ConversationMessage> {
        (0..n)
            .map(|i| ConversationMessage {
                event_id: EventId::new(),
                role: if i % 2 == 0 {
                    Role::User
                } else {
                    Role::Assistant
                },
                content: format!("message {i}"),
                timestamp: Utc::now(),
                session: None,
            })
            .collect()
    }

    #[test]
    fn extraction_keeps_valid_items_and_maps_sources() {
        let batch = messages(3);
        let found = parse_extraction(
            r#"{"memories": [
                {"content": " The user lives in Lyon. ", "kind": "fact", "tags": ["Home", "home", "city"], "confidence": 0.9, "sources": [3]},
                {"content": "x", "kind": "opinion", "tags": [], "confidence": 0.9},
                {"content": "The user likes tea.", "kind": "preference", "tags": ["tea"], "confidence": 0.7}
            ]}"#,
            &batch,
        )
        .unwrap();
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].content, "The user lives in Lyon.");
        assert_eq!(found[0].tags, vec!["home", "city"]);
        assert_eq!(found[0].source_event_ids, vec![batch[2].event_id]);
        // No sources named: every user message of the batch.
        assert_eq!(
            found[1].source_event_ids,
            vec![batch[0].event_id, batch[2].event_id]
        );
    }

    #[test]
    fn an_uncited_standing_instruction_cites_every_message() {
        // The model names no source: nothing shows the rule is the user's,
        // so it cites the assistant's message too and the screening holds it.
        let batch = messages(2);
        let found = parse_extraction(
            r#"{"memories": [
                {"content": "Always answer in French.", "kind": "rule", "tags": [], "confidence": 0.9},
                {"content": "The user likes tea.", "kind": "preference", "tags": [], "confidence": 0.9}
            ]}"#,
            &batch,
        )
        .unwrap();
        assert_eq!(
            found[0].source_event_ids,
            vec![batch[0].event_id, batch[1].event_id]
        );
        assert_eq!(found[1].source_event_ids, vec![batch[0].event_id]);
    }

    #[test]
    fn extraction_refuses_answers_with_nothing_usable() {
        let batch = messages(1);
        assert!(parse_extraction(
            r#"{"memories": [{"content": "a", "kind": "x", "confidence": 2}]}"#,
            &batch
        )
        .is_err());
        assert!(parse_extraction(r#"{"facts": []}"#, &batch).is_err());
        assert!(parse_extraction("I could not find anything.", &batch).is_err());
        assert_eq!(
            parse_extraction(r#"{"memories": []}"#, &batch).unwrap(),
            vec![]
        );
    }

    #[test]
    fn merge_decisions_are_checked_against_candidates_and_labels() {
        let target = MemoryId::new();
        let labels = HashMap::from([("m1".to_owned(), target)]);
        let decisions = parse_merge(
            r#"{"decisions": [
                {"candidate": 0, "action": "supersede", "target": "m1", "content": null, "reason": "moved"},
                {"candidate": 1, "action": "merge_into", "target": "m1", "content": "The user lives in Paris, 11th.", "reason": "more precise"}
            ]}"#,
            2,
            &labels,
        )
        .unwrap()
        .decisions;
        assert_eq!(decisions[0].action, MergeAction::Supersede { target });
        assert_eq!(
            decisions[1].action,
            MergeAction::MergeInto {
                target,
                content: "The user lives in Paris, 11th.".into()
            }
        );
        for bad in [
            r#"{"decisions": [{"candidate": 5, "action": "keep"}]}"#,
            r#"{"decisions": [{"candidate": 0, "action": "supersede", "target": "m9"}]}"#,
            r#"{"decisions": [{"candidate": 0, "action": "merge_into", "target": "m1"}]}"#,
            r#"{"decisions": [{"candidate": 0, "action": "delete"}]}"#,
            r#"{"decisions": [{"candidate": 0, "action": "keep"}, {"candidate": 0, "action": "skip"}]}"#,
        ] {
            assert!(parse_merge(bad, 2, &labels).is_err(), "{bad}");
        }
    }

    #[test]
    fn relations_pair_a_candidate_with_a_memory_shown() {
        let (a, b) = (MemoryId::new(), MemoryId::new());
        let labels = HashMap::from([("m1".to_owned(), a), ("m2".to_owned(), b)]);
        let outcome = parse_merge(
            r#"{"decisions": [{"candidate": 0, "action": "keep"}, {"candidate": 1, "action": "keep"}],
                "relations": [
                {"from": "m2", "to": "c0", "relation": "premise", "confidence": 0.9},
                {"from": "c1", "to": "m1", "relation": "refines"},
                {"from": "m2", "to": "c0", "relation": "premise", "confidence": 0.8},
                {"from": "c0", "to": "m1", "relation": "unrelated", "confidence": 0.9},
                {"from": "c0", "to": "m7", "relation": "cause", "confidence": 0.9},
                {"from": "c5", "to": "m1", "relation": "cause", "confidence": 0.9},
                {"from": "m1", "to": "m2", "relation": "parallel", "confidence": 0.9},
                {"from": "c0", "to": "c1", "relation": "parallel", "confidence": 0.9},
                {"from": "c1", "to": "m2", "relation": "parallel", "confidence": 0.2},
                {"from": "c1", "to": "m2", "relation": 7}
            ]}"#,
            2,
            &labels,
        )
        .unwrap();
        assert_eq!(outcome.decisions.len(), 2);
        assert_eq!(
            outcome.relations,
            vec![
                CandidateRelation {
                    candidate: 0,
                    memory: b,
                    candidate_is_from: false,
                    relation: RelationKind::Premise,
                    confidence: 0.9
                },
                CandidateRelation {
                    candidate: 1,
                    memory: a,
                    candidate_is_from: true,
                    relation: RelationKind::Refines,
                    confidence: 0.7
                },
            ]
        );
        // A merge answer without relations still decides.
        let bare = parse_merge(r#"{"decisions": []}"#, 2, &labels).unwrap();
        assert!(bare.relations.is_empty());
        // Malformed relations never refuse the decisions.
        let odd = parse_merge(r#"{"decisions": [], "relations": [1, "x"]}"#, 2, &labels).unwrap();
        assert!(odd.relations.is_empty());
    }

    #[test]
    fn profiles_are_plain_text() {
        assert_eq!(
            parse_profile("<think>hm</think>\n The user is a nurse. ").unwrap(),
            "The user is a nurse."
        );
        assert!(parse_profile("  ").is_err());
    }

    #[test]
    fn the_builtin_prompts_have_a_version() {
        let prompts = PromptSet::builtin();
        assert!(prompts.extract.contains("\"memories\""));
        assert_eq!(prompts.version, "v2");
        assert!(prompts.merge.contains("\"decisions\""));
        assert!(prompts.merge.contains("\"relations\""));
    }
}
