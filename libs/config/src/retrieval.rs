//! `[retrieval]`: the constants that fuse and rank search candidates.
//!
//! The defaults were chosen on the LoCoMo dev split through the
//! conversation path (docs/operations.md has the table); an operator tunes
//! them for a corpus of another shape, e.g. long documents instead of chat
//! turns, without a rebuild.

use serde::Deserialize;

use crate::{invalid, ConfigError};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRetrieval {
    rrf_k: Option<u32>,
    relevance_weight: Option<f64>,
    recency_weight: Option<f64>,
    importance_weight: Option<f64>,
    recency_half_life_days: Option<f64>,
    mmr_lambda: Option<f64>,
    dated_boost: Option<f64>,
    speaker_boost: Option<f64>,
    on_date_boost: Option<f64>,
    neighbour_weight: Option<f64>,
    question_weight: Option<f64>,
}

/// The fusion and ranking constants; `None` keeps the retriever's default.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RetrievalSettings {
    /// RRF k of the hybrid fusion: a candidate at rank r of a leg adds
    /// 1 / (k + r + 1).
    pub rrf_k: Option<u32>,
    pub relevance_weight: Option<f64>,
    pub recency_weight: Option<f64>,
    pub importance_weight: Option<f64>,
    pub recency_half_life_days: Option<f64>,
    /// MMR trade-off: 1.0 is relevance only.
    pub mmr_lambda: Option<f64>,
    /// Factor on the relevance of an episode that names a date, when the
    /// query asks when something happened; 1.0 is off.
    pub dated_boost: Option<f64>,
    /// Factor on the relevance of a named speaker's turns, searched
    /// without the name; 1.0 is off.
    pub speaker_boost: Option<f64>,
    /// Factor on the relevance of an episode said on (or naming) a date the
    /// query names; 1.0 is off.
    pub on_date_boost: Option<f64>,
    /// Share of the neighbouring turns' relevance an episode gains; 0 is
    /// off.
    pub neighbour_weight: Option<f64>,
    /// How much an episode that asks a question weighs less: its relevance
    /// is multiplied by 1 − this × the share of its text in questions;
    /// 0 is off, at most 1.
    pub question_weight: Option<f64>,
}

impl RawRetrieval {
    pub(crate) fn resolve(self) -> Result<RetrievalSettings, ConfigError> {
        if self.rrf_k == Some(0) {
            return Err(invalid("retrieval.rrf_k", "must be at least 1"));
        }
        let weights = [
            ("retrieval.relevance_weight", self.relevance_weight),
            ("retrieval.recency_weight", self.recency_weight),
            ("retrieval.importance_weight", self.importance_weight),
            ("retrieval.neighbour_weight", self.neighbour_weight),
        ];
        for (key, weight) in weights {
            if weight.is_some_and(|w| !w.is_finite() || w < 0.0) {
                return Err(invalid(key, "a weight is a finite number ≥ 0"));
            }
        }
        if self
            .recency_half_life_days
            .is_some_and(|d| !d.is_finite() || d <= 0.0)
        {
            return Err(invalid(
                "retrieval.recency_half_life_days",
                "a number of days > 0",
            ));
        }
        if self
            .mmr_lambda
            .is_some_and(|l| !l.is_finite() || !(0.0..=1.0).contains(&l))
        {
            return Err(invalid("retrieval.mmr_lambda", "between 0 and 1"));
        }
        if self
            .question_weight
            .is_some_and(|w| !w.is_finite() || !(0.0..=1.0).contains(&w))
        {
            return Err(invalid("retrieval.question_weight", "between 0 and 1"));
        }
        let boosts = [
            ("retrieval.dated_boost", self.dated_boost),
            ("retrieval.speaker_boost", self.speaker_boost),
            ("retrieval.on_date_boost", self.on_date_boost),
        ];
        for (key, boost) in boosts {
            if boost.is_some_and(|b| !b.is_finite() || b < 1.0) {
                return Err(invalid(key, "a finite factor ≥ 1 (1 is off)"));
            }
        }
        Ok(RetrievalSettings {
            rrf_k: self.rrf_k,
            relevance_weight: self.relevance_weight,
            recency_weight: self.recency_weight,
            importance_weight: self.importance_weight,
            recency_half_life_days: self.recency_half_life_days,
            mmr_lambda: self.mmr_lambda,
            dated_boost: self.dated_boost,
            speaker_boost: self.speaker_boost,
            on_date_boost: self.on_date_boost,
            neighbour_weight: self.neighbour_weight,
            question_weight: self.question_weight,
        })
    }
}
