//! Reciprocal rank fusion of a dense and a sparse candidate list.
//!
//! Qdrant fuses prefetches inside the engine but returns only the fused
//! score; mnemo must explain every hit (its rank and score in each leg), so
//! the adapters fetch both legs and fuse here, with Qdrant's own formula:
//! a candidate at 0-based position `r` adds `1 / ((r + 1) + k - 1)`,
//! computed in `f32` exactly as the engine does, so fused scores are the
//! engine's to the bit. Unlike the engine, ties are broken deterministically
//! (best single-leg position, then id) so equal inputs give equal pages.

use std::collections::HashMap;

use mnemo_domain::MemoryId;

/// One leg's result: ids best first, with the leg's own score.
pub type Leg = [(MemoryId, f32)];

/// A fused candidate and the evidence for its score.
#[derive(Debug, Clone, PartialEq)]
pub struct Fused {
    pub id: MemoryId,
    pub score: f32,
    pub dense_rank: Option<usize>,
    pub sparse_rank: Option<usize>,
    pub dense_score: Option<f32>,
    pub sparse_score: Option<f32>,
}

/// Qdrant's RRF contribution of 0-based `position` (weight 1).
pub fn position_score(position: usize, k: u32) -> f32 {
    1.0 / ((position + 1) as f32 + k as f32 - 1.0)
}

/// Fuses the two legs and returns the best `limit`, best first.
pub fn rrf(dense: &Leg, sparse: &Leg, k: u32, limit: usize) -> Vec<Fused> {
    let mut by_id: HashMap<MemoryId, Fused> = HashMap::with_capacity(dense.len() + sparse.len());
    for (position, (id, score)) in dense.iter().enumerate() {
        let fused = by_id.entry(*id).or_insert_with(|| unscored(*id));
        fused.score += position_score(position, k);
        fused.dense_rank = Some(position);
        fused.dense_score = Some(*score);
    }
    for (position, (id, score)) in sparse.iter().enumerate() {
        let fused = by_id.entry(*id).or_insert_with(|| unscored(*id));
        fused.score += position_score(position, k);
        fused.sparse_rank = Some(position);
        fused.sparse_score = Some(*score);
    }
    let mut fused: Vec<Fused> = by_id.into_values().collect();
    fused.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| best_rank(a).cmp(&best_rank(b)))
            .then_with(|| a.id.cmp(&b.id))
    });
    fused.truncate(limit);
    fused
}

fn unscored(id: MemoryId) -> Fused {
    Fused {
        id,
        score: 0.0,
        dense_rank: None,
        sparse_rank: None,
        dense_score: None,
        sparse_score: None,
    }
}

fn best_rank(fused: &Fused) -> usize {
    fused
        .dense_rank
        .into_iter()
        .chain(fused.sparse_rank)
        .min()
        .unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(n: usize) -> Vec<MemoryId> {
        let mut ids: Vec<MemoryId> = (0..n).map(|_| MemoryId::new()).collect();
        ids.sort();
        ids
    }

    #[test]
    fn a_candidate_in_both_legs_beats_one_leg_leaders() {
        let [a, b, c] = ids(3).try_into().unwrap();
        let dense = [(a, 0.9), (c, 0.5)];
        let sparse = [(b, 7.0), (c, 3.0)];
        let fused = rrf(&dense, &sparse, 60, 10);
        assert_eq!(fused[0].id, c);
        assert_eq!(fused[0].dense_rank, Some(1));
        assert_eq!(fused[0].sparse_rank, Some(1));
        assert_eq!(fused[0].sparse_score, Some(3.0));
        assert_eq!(fused[0].score, 2.0 * position_score(1, 60));
        assert_eq!(fused.len(), 3);
    }

    #[test]
    fn uses_qdrants_formula_and_breaks_ties_by_rank_then_id() {
        assert_eq!(position_score(0, 60), 1.0 / 60.0);
        assert_eq!(position_score(2, 2), 1.0 / 4.0);
        let [a, b] = ids(2).try_into().unwrap();
        // a and b tie on score; both lead one leg, so the id decides.
        let fused = rrf(&[(b, 0.9)], &[(a, 2.0)], 60, 10);
        assert_eq!(fused.iter().map(|f| f.id).collect::<Vec<_>>(), vec![a, b]);
        assert_eq!(rrf(&[(b, 0.9)], &[(a, 2.0)], 60, 1).len(), 1);
    }
}
