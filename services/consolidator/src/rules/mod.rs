//! Rule-based consolidation: the deterministic, offline strategy (seed 000's
//! `SimpleConsolidationStrategy`, minus its noise problem). It serves when no
//! LLM is configured and as the fallback when the LLM fails.
//!
//! Key decision: extraction is *pattern-driven*, not length- or
//! keyword-driven. A clause becomes a candidate only when it matches an
//! explicit pattern of self-disclosure (facts, preferences), a decision, a
//! plan or status, or a standing instruction to the assistant (rules), in
//! English or Chinese. Greetings, thanks, laughter, questions and stories
//! about today ("我今天去公园玩得很开心") match nothing, so they produce
//! nothing; filters catch the small talk that looks like a pattern ("I love
//! you", "I have a question", "我今天在公司工作到很晚").
//!
//! How a message is read:
//! 1. Only `Role::User` messages are mined. The assistant's words are not
//!    facts about the user — "You live in Paris, right?" or a suggestion
//!    the user never accepted would otherwise become memories — and system
//!    and tool messages are not the user's either.
//! 2. The message is split into sentences, then clauses (commas, and
//!    "and"/"but" before a new statement), so one message with two facts
//!    gives two candidates. A lead-in ("From now on,", "以后，") is joined to
//!    the clause after it; a clause without its own subject that follows a
//!    candidate in the same sentence either carries the subject over ("I
//!    live in Paris and work as a nurse") or, when it matches nothing, is an
//!    elaboration glued onto that candidate ("我喜欢吃辣，尤其是川菜").
//! 3. The first matching pattern of the clause's language (Chinese when the
//!    clause holds a CJK character) gives the kind and a base confidence
//!    from the pattern's strength; a hedge ("I think", "maybe", "可能")
//!    lowers it by 0.25, an intensifier ("really", "真的") raises it by 0.05,
//!    "remember that …" / "记住…" by 0.05.
//!
//! Content is the user's own clause, trimmed of leading fillers ("oh,",
//! "嗯，") and trailing punctuation — not rewritten to the third person: a
//! rule cannot rewrite reliably in two languages, and the user's words embed
//! and read back best. Tags are 1–3 lowercase keywords of the clause's
//! object (see [`tags`]). The same statement twice in one batch yields one
//! candidate with both messages' event ids.
//!
//! Everything is deterministic, does no I/O, and compiles its regexes once
//! per process.

mod merge;
mod patterns;
mod tags;
mod text;

use async_trait::async_trait;
use mnemo_domain::events::Role;
use mnemo_domain::{EventId, MemoryKind};

use crate::strategy::{
    Candidate, ConsolidationStrategy, ConversationMessage, ExistingMemory, MergeDecision,
    MergeOutcome, Spend, StrategyError,
};
use patterns::{Lang, PatternMatch};

/// How much a hedge lowers confidence.
const HEDGE_PENALTY: f32 = 0.25;
/// How much an intensifier or an explicit "remember that" raises it.
const EMPHASIS_BONUS: f32 = 0.05;
const MIN_CONFIDENCE: f32 = 0.05;
const MAX_CONFIDENCE: f32 = 0.95;

/// The rule-based strategy. Cheap to construct; the pattern tables are
/// process-wide and compiled on first use.
#[derive(Debug, Default, Clone, Copy)]
pub struct RuleStrategy;

impl RuleStrategy {
    pub const NAME: &'static str = "rules";
    pub const VERSION: &'static str = "1";

    pub fn new() -> Self {
        RuleStrategy
    }

    /// Candidates of one text, as if a user had sent it (no provenance).
    /// Synchronous: what [`ConsolidationStrategy::extract`] runs per message.
    pub fn extract_text(&self, text: &str) -> Vec<Candidate> {
        extract_message(text, None)
    }

    /// Synchronous form of [`ConsolidationStrategy::extract`].
    pub fn extract_messages(&self, messages: &[ConversationMessage]) -> Vec<Candidate> {
        let mut out: Vec<Candidate> = Vec::new();
        for message in messages.iter().filter(|m| m.role == Role::User) {
            for candidate in extract_message(&message.content, Some(message.event_id)) {
                absorb(&mut out, candidate);
            }
        }
        out
    }

    /// Synchronous form of [`ConsolidationStrategy::merge`]. A candidate
    /// without its list of existing memories is compared against none.
    pub fn merge_candidates(
        &self,
        candidates: &[Candidate],
        existing: &[Vec<ExistingMemory>],
    ) -> Vec<MergeDecision> {
        candidates
            .iter()
            .enumerate()
            .map(|(index, candidate)| {
                let similar = existing.get(index).map(Vec::as_slice).unwrap_or(&[]);
                merge::decide(index, candidate, similar)
            })
            .collect()
    }
}

#[async_trait]
impl ConsolidationStrategy for RuleStrategy {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn version(&self) -> &'static str {
        Self::VERSION
    }

    /// Each user message is read alone and cited exactly: an injection in
    /// one message holds only the candidates of that message.
    fn reads_whole_batch(&self) -> bool {
        false
    }

    async fn extract(
        &self,
        messages: &[ConversationMessage],
        _spend: &Spend,
    ) -> Result<Vec<Candidate>, StrategyError> {
        Ok(self.extract_messages(messages))
    }

    async fn merge(
        &self,
        candidates: &[Candidate],
        existing: &[Vec<ExistingMemory>],
        _relations: bool,
        _spend: &Spend,
    ) -> Result<MergeOutcome, StrategyError> {
        Ok(MergeOutcome {
            decisions: self.merge_candidates(candidates, existing),
            relations: Vec::new(),
        })
    }
}

/// Adds a candidate, or folds it into an earlier one that says the same
/// thing (provenance joined, the higher confidence kept).
fn absorb(out: &mut Vec<Candidate>, candidate: Candidate) {
    let key = merge::duplicate_key(&candidate.content);
    if let Some(earlier) = out
        .iter_mut()
        .find(|c| c.kind == candidate.kind && merge::duplicate_key(&c.content) == key)
    {
        for id in candidate.source_event_ids {
            if !earlier.source_event_ids.contains(&id) {
                earlier.source_event_ids.push(id);
            }
        }
        earlier.confidence = earlier.confidence.max(candidate.confidence);
        return;
    }
    out.push(candidate);
}

/// A candidate in the making: the clause it came from may still grow an
/// elaboration.
struct Draft {
    lang: Lang,
    found: PatternMatch,
    content: String,
    /// "I" / "we" / "我" / "我们": carried to a following subjectless clause.
    subject: &'static str,
}

fn extract_message(raw: &str, event_id: Option<EventId>) -> Vec<Candidate> {
    let message = text::normalise_punctuation(raw);
    let mut out: Vec<Candidate> = Vec::new();
    for sentence in text::sentences(&message) {
        let mut drafts: Vec<Draft> = Vec::new();
        let mut lead_in = String::new();
        for clause in text::clauses(&sentence) {
            let lang = if text::has_cjk(&clause.text) {
                Lang::Zh
            } else {
                Lang::En
            };
            // Clauses keep the sentence's terminator, so the last one still
            // shows its question mark here.
            let question_mark = ends_with_question_mark(&clause.text);
            let cleaned = patterns::strip_filler(lang, &clause.text);
            if cleaned.is_empty() || patterns::is_noise(lang, cleaned) {
                continue;
            }
            if patterns::is_lead_in(lang, cleaned) {
                lead_in.push_str(cleaned);
                lead_in.push_str(if lang == Lang::Zh { "，" } else { ", " });
                continue;
            }
            let cleaned = if lead_in.is_empty() {
                cleaned.to_owned()
            } else {
                format!("{}{}", std::mem::take(&mut lead_in), cleaned)
            };
            let cleaned = cleaned.as_str();
            let is_question = question_mark || patterns::is_question(lang, cleaned);
            if is_question {
                // A question is not a statement, unless it is a polite form
                // of a standing instruction.
                if patterns::is_standing_request(lang, cleaned) {
                    drafts.push(Draft {
                        lang,
                        found: PatternMatch {
                            kind: MemoryKind::Rule,
                            confidence: 0.75,
                            object: None,
                            tag: None,
                        },
                        content: cleaned.to_owned(),
                        subject: "",
                    });
                }
                continue;
            }
            if let Some(draft) = read_clause(lang, cleaned) {
                drafts.push(draft);
                continue;
            }
            // No pattern of its own: maybe the subject of the clause before
            // carries over, maybe it elaborates on that clause.
            let Some(previous) = drafts.last_mut() else {
                continue;
            };
            if patterns::starts_with_subject(lang, cleaned) || previous.lang != lang {
                continue;
            }
            if !previous.subject.is_empty() {
                let joiner = if lang == Lang::Zh { "" } else { " " };
                let carried = format!("{}{joiner}{cleaned}", previous.subject);
                if let Some(draft) = read_clause(lang, &carried) {
                    drafts.push(draft);
                    continue;
                }
            }
            previous.content.push_str(clause.separator);
            previous.content.push_str(cleaned);
        }
        for draft in drafts {
            let candidate = finish(draft, event_id);
            absorb(&mut out, candidate);
        }
    }
    out
}

fn ends_with_question_mark(text: &str) -> bool {
    let text = text.trim_end();
    text.ends_with('?') || text.ends_with('？')
}

/// Matches one cleaned clause; "remember that X" is X with a bonus.
fn read_clause(lang: Lang, cleaned: &str) -> Option<Draft> {
    let (body, memo_bonus) = match patterns::strip_memo(lang, cleaned) {
        Some(rest) => (rest, EMPHASIS_BONUS),
        None => (cleaned, 0.0),
    };
    let (statement, hedged) = patterns::strip_hedge(lang, body);
    let mut found = patterns::match_clause(lang, statement)?;
    if hedged {
        found.confidence -= HEDGE_PENALTY;
    }
    if patterns::is_intensified(lang, statement) {
        found.confidence += EMPHASIS_BONUS;
    }
    found.confidence = (found.confidence + memo_bonus).clamp(MIN_CONFIDENCE, MAX_CONFIDENCE);
    Some(Draft {
        lang,
        subject: subject_of(lang, statement),
        found,
        content: cleaned.to_owned(),
    })
}

fn subject_of(lang: Lang, statement: &str) -> &'static str {
    let lower = statement.to_lowercase();
    match lang {
        Lang::Zh if statement.starts_with("我们") => "我们",
        Lang::Zh if statement.starts_with('我') => "我",
        Lang::En if lower.starts_with("we ") || lower.starts_with("we'") => "we",
        Lang::En if lower.starts_with("i ") || lower.starts_with("i'") => "I",
        _ => "",
    }
}

fn finish(draft: Draft, event_id: Option<EventId>) -> Candidate {
    let content = text::trim_end_punctuation(&draft.content).to_owned();
    let tags = tags::tags(
        draft.lang,
        draft.found.kind,
        &content,
        draft.found.object.as_deref(),
        draft.found.tag.as_deref(),
    );
    Candidate {
        content,
        kind: draft.found.kind,
        tags,
        // Two decimals: stable across platforms and readable in reviews.
        confidence: (draft.found.confidence * 100.0).round() / 100.0,
        source_event_ids: event_id.into_iter().collect(),
    }
}
