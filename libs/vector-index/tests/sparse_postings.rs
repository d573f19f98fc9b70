//! The sparse index of an appendable segment answers what a full scan
//! answers, whatever order its points were inserted, changed and deleted in.
//!
//! Why it is here: qdrant-edge is patched (vendor/README.md) so that an
//! insert into a posting list stops updating the list's `max_next_weight`
//! bounds at the first entry already right. A search prunes a posting list
//! by those bounds once it holds `limit` results, so a bound left too low
//! drops a point that belongs in the top results. Every change below is
//! followed by searches whose top scores are compared with a scan of the
//! points as written, on lists long enough for pruning to act.

#![cfg(feature = "edge")]

use std::collections::BTreeMap;

use qdrant_edge::{
    EdgeConfig, EdgeShard, EdgeSparseVectorParams, NamedQuery, PointId, PointInsertOperations,
    PointOperations, PointStruct, QueryEnum, QueryRequest, ScoringQuery, SparseVector,
    UpdateOperation, Vector, VectorInternal, Vectors, WithPayloadInterface, WithVector,
};
use serde_json::json;

const SPARSE: &str = "sparse";
/// The terms: one common (a frequent word), the others rare, and one that
/// only the first and the last point of the filled segment carry.
const DIMENSIONS: u32 = 40;
const HOT: u32 = 0;
const MARK: u32 = DIMENSIONS;
const LIMIT: usize = 5;

/// xorshift64*: the same operations on every run, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// A weight in (0, `max`], in steps of 1/16 so sums compare exactly.
    fn weight(&mut self, max: f32) -> f32 {
        let steps = (max * 16.0) as u64;
        (self.below(steps) + 1) as f32 / 16.0
    }

    /// A point: the common term [`HOT`] in half of them, with a weight up to
    /// `hot_max`, beside up to three rarer terms.
    fn point(&mut self, hot_max: f32) -> BTreeMap<u32, f32> {
        let mut vector = BTreeMap::new();
        if self.below(2) == 0 {
            vector.insert(HOT, self.weight(hot_max));
        }
        let rare = if vector.is_empty() { 1 } else { 0 } + self.below(3);
        for _ in 0..rare {
            let dimension = 1 + self.below(DIMENSIONS as u64 - 1) as u32;
            let weight = self.weight(8.0);
            vector.insert(dimension, weight);
        }
        vector
    }

    /// A query: mostly the common term weighted high beside a rarer one
    /// weighted low, so the common term's long list decides the top and is
    /// the one pruned (up to the rarer list's next point, the whole segment
    /// for [`MARK`]); otherwise two or three terms of any kind.
    fn query(&mut self) -> BTreeMap<u32, f32> {
        let mut query = BTreeMap::new();
        match self.below(4) {
            0 | 1 => {
                query.insert(HOT, 4.0);
                query.insert(MARK, 0.25);
            }
            2 => {
                query.insert(HOT, 4.0);
                query.insert(1 + self.below(DIMENSIONS as u64 - 1) as u32, 0.25);
            }
            _ => {
                while query.len() < 2 + self.below(2) as usize {
                    let weight = self.weight(4.0);
                    query.insert(self.below(DIMENSIONS as u64) as u32, weight);
                }
            }
        }
        query
    }
}

fn to_sparse(vector: &BTreeMap<u32, f32>) -> SparseVector {
    SparseVector::new(
        vector.keys().copied().collect(),
        vector.values().copied().collect(),
    )
    .unwrap()
}

fn shard(dir: &std::path::Path) -> EdgeShard {
    // No IDF modifier: the scores are plain dot products a scan can compute.
    let config = EdgeConfig::builder()
        .sparse_vector(SPARSE, EdgeSparseVectorParams::builder().build())
        .build();
    EdgeShard::new(dir, config).unwrap()
}

/// Writes `points` in one operation, in their order.
fn upsert(shard: &EdgeShard, points: &[(u64, BTreeMap<u32, f32>)]) {
    let points = points
        .iter()
        .map(|(id, vector)| {
            PointStruct::new(
                PointId::NumId(*id),
                Vectors::new_named([(SPARSE, Vector::from(to_sparse(vector)))]),
                json!({}),
            )
            .into()
        })
        .collect();
    shard
        .update(UpdateOperation::PointOperation(
            PointOperations::UpsertPoints(PointInsertOperations::PointsList(points)),
        ))
        .unwrap();
}

fn delete(shard: &EdgeShard, id: u64) {
    shard
        .update(UpdateOperation::PointOperation(
            PointOperations::DeletePoints {
                ids: vec![PointId::NumId(id)],
            },
        ))
        .unwrap();
}

/// The top scores the index gives for `query`, best first.
fn searched(shard: &EdgeShard, query: &BTreeMap<u32, f32>) -> Vec<f32> {
    let request = QueryRequest {
        prefetches: vec![],
        query: Some(ScoringQuery::Vector(QueryEnum::Nearest(NamedQuery {
            query: VectorInternal::Sparse(to_sparse(query)),
            using: Some(SPARSE.to_string()),
        }))),
        filter: None,
        score_threshold: None,
        limit: LIMIT,
        offset: 0,
        params: None,
        with_vector: WithVector::Bool(false),
        with_payload: WithPayloadInterface::Bool(false),
    };
    shard
        .query(request)
        .unwrap()
        .into_iter()
        .map(|point| point.score)
        .collect()
}

/// The top scores a scan of the live points gives for `query`, best first.
fn scanned(points: &BTreeMap<u64, BTreeMap<u32, f32>>, query: &BTreeMap<u32, f32>) -> Vec<f32> {
    let mut scores: Vec<f32> = points
        .values()
        .filter(|vector| vector.keys().any(|d| query.contains_key(d)))
        .map(|vector| {
            query
                .iter()
                .filter_map(|(d, q)| vector.get(d).map(|w| q * w))
                .sum()
        })
        .collect();
    scores.sort_by(|a, b| b.total_cmp(a));
    scores.truncate(LIMIT);
    scores
}

fn check(shard: &EdgeShard, points: &BTreeMap<u64, BTreeMap<u32, f32>>, rng: &mut Rng, at: usize) {
    for _ in 0..16 {
        let query = rng.query();
        let expected = scanned(points, &query);
        let found = searched(shard, &query);
        assert_eq!(
            found.len(),
            expected.len(),
            "after {at} operations, query {query:?}: {found:?} against {expected:?}"
        );
        for (f, e) in found.iter().zip(&expected) {
            assert!(
                (f - e).abs() <= 1e-3 * e.abs().max(1.0),
                "after {at} operations, query {query:?}: {found:?} against {expected:?}"
            );
        }
    }
}

/// A search scores ids in batches of 10,000 and, between batches, once it
/// holds `LIMIT` results, skips the longest posting list ahead to the other
/// lists' next point when the list's bound says nothing there can enter the
/// top. The segment is filled with three batches' worth first, in runs of
/// appends as the projections write, the common term weighing little in
/// the first two and up to four times more in the third: a bound left too
/// low after the first batch skips the third's best points. Then it is
/// changed one point at a time.
const FILLED: u64 = 30_000;
const LIGHT: u64 = 20_000;

#[test]
fn sparse_search_finds_the_top_points_after_inserts_updates_and_deletes() {
    for seed in [0x9e37_79b9_7f4a_7c15_u64, 0xd1b5_4a32_d192_ed03] {
        let dir = tempfile::tempdir().unwrap();
        let shard = shard(dir.path());
        let mut rng = Rng(seed);
        let mut points: BTreeMap<u64, BTreeMap<u32, f32>> = BTreeMap::new();
        let mut next_id = 0u64;
        while next_id < FILLED {
            let hot_max = if next_id < LIGHT { 2.0 } else { 8.0 };
            let mut run: Vec<_> = (next_id..next_id + 500)
                .map(|id| (id, rng.point(hot_max)))
                .collect();
            for (id, vector) in &mut run {
                if *id == 0 || *id == FILLED - 1 {
                    vector.insert(MARK, 1.0);
                }
            }
            upsert(&shard, &run);
            next_id += run.len() as u64;
            points.extend(run);
        }
        check(&shard, &points, &mut rng, 0);
        for at in 1..=1_000 {
            match rng.below(10) {
                // New points: appends at the lists' ends, the case the patch
                // changes.
                0..=4 => {
                    let vector = rng.point(8.0);
                    upsert(&shard, &[(next_id, vector.clone())]);
                    points.insert(next_id, vector);
                    next_id += 1;
                }
                // A point written again: weights up or down, terms gained
                // (inserts inside a list) or lost (deletes from a list).
                5..=7 => {
                    let id = rng.below(next_id);
                    let vector = rng.point(8.0);
                    upsert(&shard, &[(id, vector.clone())]);
                    points.insert(id, vector);
                }
                _ => {
                    let id = rng.below(next_id);
                    delete(&shard, id);
                    points.remove(&id);
                }
            }
            if at % 100 == 0 {
                check(&shard, &points, &mut rng, at);
            }
        }
    }
}
