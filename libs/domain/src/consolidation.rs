//! A tenant's consolidation policy (seeds 000 and 004): when a batch of
//! messages is consolidated, which candidates are worth storing, and when a
//! candidate is the same memory seen again.

use std::time::Duration;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ConsolidationPolicy {
    /// Consolidate a conversation once this many messages wait (seed 000: 10).
    pub batch_size: usize,
    /// ...or once it has been quiet this long (seconds).
    #[serde(with = "seconds")]
    pub idle_timeout: Duration,
    /// ...or once a newer session of its subject begins: a subject's first
    /// message of a new session consolidates what waits in the subject's
    /// other sessions (a conversation ends when the next one starts,
    /// rather than `idle_timeout` later). Off for clients that keep
    /// several sessions of one subject open at once and want whole
    /// batches of each.
    pub end_earlier_sessions: bool,
    /// Candidates below this confidence are discarded (and counted): the
    /// review threshold of seed 004.
    pub min_confidence: f32,
    /// Candidates at or above this confidence become memories; those between
    /// `min_confidence` and this go to the review queue. Unset: 0.85 for the
    /// LLM strategy, and `min_confidence` for the rules (whose confidences
    /// are fixed per pattern, so a review band would only hold back a pattern).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auto_threshold: Option<f32>,
    /// A contradiction (`supersede`) between a candidate and a memory both at
    /// least this important goes to review instead of being decided
    /// automatically (seed 002 §5.2: an allergy is not overwritten silently).
    pub protected_importance: f32,
    /// Rewrite the subject's profile once this many memories were created
    /// since the last one; 0 turns profiles off. One rewrite covers them
    /// all, so a larger number spends fewer calls on the same memories.
    pub profile_every: usize,
    /// Ask for each new memory's relations to its nearest memories (LLM
    /// only; part of the merge call, which costs nothing more).
    pub relations: bool,
    /// The LLM's merge call is made only when some candidate of the batch
    /// has an existing memory at least this similar (cosine); below it no
    /// memory could be a duplicate, a revision or a contradiction of the
    /// candidate, and every candidate is kept without a call. 0 asks
    /// whenever the subject has memories.
    pub merge_similarity: f32,
    /// LLM calls and tokens a tenant may spend per UTC day; past either, the
    /// rules consolidate until the day ends.
    pub daily_llm_calls: u64,
    pub daily_llm_tokens: u64,
    /// A candidate at least this similar (cosine) to an existing memory
    /// reinforces it instead of creating another.
    pub similarity_threshold: f32,
}

impl Default for ConsolidationPolicy {
    fn default() -> Self {
        ConsolidationPolicy {
            batch_size: 10,
            idle_timeout: Duration::from_secs(120),
            end_earlier_sessions: true,
            min_confidence: 0.6,
            auto_threshold: None,
            protected_importance: 0.75,
            profile_every: 20,
            relations: true,
            merge_similarity: 0.6,
            daily_llm_calls: 5_000,
            daily_llm_tokens: 5_000_000,
            similarity_threshold: 0.9,
        }
    }
}

/// The LLM strategy's auto threshold when the tenant sets none (seed 004).
pub const LLM_AUTO_THRESHOLD: f32 = 0.85;

impl ConsolidationPolicy {
    /// The auto threshold for candidates of a strategy (`llm`, `rules`).
    pub fn auto_threshold_for(&self, strategy: &str) -> f32 {
        match self.auto_threshold {
            Some(threshold) => threshold.max(self.min_confidence),
            None if strategy == "llm" => LLM_AUTO_THRESHOLD.max(self.min_confidence),
            None => self.min_confidence,
        }
    }
}

mod seconds {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let seconds = f64::deserialize(d)?;
        if !(0.0..=1e9).contains(&seconds) {
            return Err(serde::de::Error::custom("seconds out of range"));
        }
        Ok(Duration::from_secs_f64(seconds))
    }
}
