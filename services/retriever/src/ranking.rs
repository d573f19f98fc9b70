//! Final ranking of search candidates (seeds 001–003): the fused relevance
//! from the index, recency decay and importance combine into one score,
//! then maximal marginal relevance (MMR) picks a diverse top k. Every
//! component is returned so a result can explain itself.

use chrono::{DateTime, Utc};
use serde::Serialize;

#[derive(Debug, Clone)]
pub struct RankingParams {
    /// Weights of the three components; they need not sum to 1.
    pub relevance_weight: f64,
    pub recency_weight: f64,
    pub importance_weight: f64,
    /// Age at which the recency component halves.
    pub recency_half_life_days: f64,
    /// MMR trade-off: 1.0 = relevance only, 0.0 = diversity only.
    pub mmr_lambda: f64,
}

impl Default for RankingParams {
    fn default() -> Self {
        RankingParams {
            relevance_weight: 0.7,
            recency_weight: 0.15,
            importance_weight: 0.15,
            recency_half_life_days: 30.0,
            mmr_lambda: 0.7,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Candidate<T> {
    pub item: T,
    /// The index's fused (or single-mode) score; higher is better.
    pub relevance: f64,
    pub importance: f64,
    /// When the memory was last created or changed.
    pub updated_at: DateTime<Utc>,
    /// Unit-length dense vector, for diversity; None skips MMR for it.
    pub dense: Option<Vec<f32>>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ScoreParts {
    /// Relevance scaled to [0, 1] against the best candidate of the query.
    pub relevance: f64,
    pub recency: f64,
    pub importance: f64,
    /// relevance·w + recency·w + importance·w.
    pub combined: f64,
    /// Highest similarity to a result ranked above it (0 when none).
    pub redundancy: f64,
    /// The MMR value it was picked with.
    pub final_score: f64,
}

#[derive(Debug, Clone)]
pub struct Ranked<T> {
    pub item: T,
    pub parts: ScoreParts,
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum()
}

/// Scores the candidates and picks up to `k` with MMR.
pub fn rank<T>(
    candidates: Vec<Candidate<T>>,
    k: usize,
    params: &RankingParams,
    now: DateTime<Utc>,
) -> Vec<Ranked<T>> {
    let best = candidates
        .iter()
        .map(|c| c.relevance)
        .fold(f64::MIN, f64::max)
        .max(f64::EPSILON);
    let mut pool: Vec<(Candidate<T>, ScoreParts)> = candidates
        .into_iter()
        .map(|candidate| {
            let relevance = (candidate.relevance / best).clamp(0.0, 1.0);
            let age_days = (now - candidate.updated_at).num_seconds().max(0) as f64 / 86_400.0;
            let recency = 0.5f64.powf(age_days / params.recency_half_life_days.max(1e-6));
            let importance = candidate.importance.clamp(0.0, 1.0);
            let combined = params.relevance_weight * relevance
                + params.recency_weight * recency
                + params.importance_weight * importance;
            let parts = ScoreParts {
                relevance,
                recency,
                importance,
                combined,
                redundancy: 0.0,
                final_score: combined,
            };
            (candidate, parts)
        })
        .collect();

    let mut picked: Vec<Ranked<T>> = Vec::new();
    let mut picked_vectors: Vec<Vec<f32>> = Vec::new();
    while picked.len() < k && !pool.is_empty() {
        let mut best_index = 0;
        let mut best_value = f64::MIN;
        let mut best_redundancy = 0.0;
        for (index, (candidate, parts)) in pool.iter().enumerate() {
            let redundancy = match &candidate.dense {
                Some(vector) => picked_vectors
                    .iter()
                    .map(|p| cosine(vector, p))
                    .fold(0.0, f64::max),
                None => 0.0,
            };
            let value = params.mmr_lambda * parts.combined - (1.0 - params.mmr_lambda) * redundancy;
            if value > best_value {
                best_value = value;
                best_index = index;
                best_redundancy = redundancy;
            }
        }
        let (candidate, mut parts) = pool.swap_remove(best_index);
        parts.redundancy = best_redundancy;
        parts.final_score = best_value;
        if let Some(vector) = &candidate.dense {
            picked_vectors.push(vector.clone());
        }
        picked.push(Ranked {
            item: candidate.item,
            parts,
        });
    }
    picked
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    fn candidate(
        name: &'static str,
        relevance: f64,
        days_old: i64,
        importance: f64,
        dense: Option<Vec<f32>>,
    ) -> Candidate<&'static str> {
        Candidate {
            item: name,
            relevance,
            importance,
            updated_at: Utc::now() - Duration::days(days_old),
            dense,
        }
    }

    #[test]
    fn relevance_dominates_and_recency_and_importance_break_ties() {
        let now = Utc::now();
        let ranked = rank(
            vec![
                candidate("old-unimportant", 1.0, 300, 0.1, None),
                candidate("fresh-important", 1.0, 0, 0.9, None),
                candidate("irrelevant", 0.1, 0, 1.0, None),
            ],
            3,
            &RankingParams::default(),
            now,
        );
        let order: Vec<_> = ranked.iter().map(|r| r.item).collect();
        assert_eq!(
            order,
            vec!["fresh-important", "old-unimportant", "irrelevant"]
        );
        assert!((ranked[0].parts.relevance - 1.0).abs() < 1e-9);
        assert!(ranked[0].parts.recency > 0.99);
        assert!(ranked[1].parts.recency < 0.01);
    }

    #[test]
    fn mmr_prefers_a_different_result_over_a_near_duplicate() {
        let a = vec![1.0f32, 0.0];
        let near_a = vec![0.999f32, 0.0447];
        let b = vec![0.0f32, 1.0];
        let ranked = rank(
            vec![
                candidate("a", 1.0, 0, 0.5, Some(a)),
                candidate("near-a", 0.98, 0, 0.5, Some(near_a)),
                candidate("b", 0.9, 0, 0.5, Some(b)),
            ],
            2,
            &RankingParams::default(),
            Utc::now(),
        );
        let order: Vec<_> = ranked.iter().map(|r| r.item).collect();
        assert_eq!(order, vec!["a", "b"]);
        assert!(ranked[1].parts.redundancy < 0.01);
    }

    #[test]
    fn k_bounds_the_result() {
        let ranked = rank(
            (0..10)
                .map(|i| candidate("x", f64::from(i), 0, 0.5, None))
                .collect(),
            3,
            &RankingParams::default(),
            Utc::now(),
        );
        assert_eq!(ranked.len(), 3);
        assert!(rank(
            Vec::<Candidate<&str>>::new(),
            3,
            &RankingParams::default(),
            Utc::now()
        )
        .is_empty());
    }
}
