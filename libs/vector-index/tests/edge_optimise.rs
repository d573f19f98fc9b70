//! The embedded engine's optimiser beside writes: an idle optimisation gives
//! way to a write instead of holding it for the minutes a large one takes,
//! a purge leaves the graphs to it, and a flush rewrites only what was
//! written since the last one.
#![cfg(feature = "edge")]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use mnemo_domain::{SubjectId, TenantId};
use mnemo_vector_index::testsuite::{self, axis, keyword, point, subject, tenant};
use mnemo_vector_index::{EdgeVectorIndex, VectorIndex};

/// Above the engine's indexing threshold (10 MB of vectors): at 384
/// dimensions, 7,500 points make the optimiser build an HNSW graph, which
/// takes seconds.
const DIMENSION: usize = 384;
const POINTS: u64 = 7_500;

fn spread(seed: u64) -> Vec<f32> {
    testsuite::spread(DIMENSION, seed)
}

/// An index past the indexing threshold, written as the server writes
/// (flushed by the caller, not per write), not yet optimised.
async fn large_index(dir: &Path) -> (Arc<EdgeVectorIndex>, TenantId, SubjectId) {
    let index = Arc::new(EdgeVectorIndex::open(dir, DIMENSION).unwrap());
    index.set_durable_writes(false);
    let t = tenant("t1");
    let s = subject("s1");
    for batch in 0..POINTS / 500 {
        let points = (batch * 500..(batch + 1) * 500)
            .map(|n| point(&t, &s, &format!("note {n}"), spread(n)))
            .collect();
        index.upsert(&t, points).await.unwrap();
    }
    index.flush().await.unwrap();
    (index, t, s)
}

/// Starts the server's idle optimisation and returns once it runs; the
/// handle answers whether it ran to its end.
async fn idle_optimisation_under_way(
    index: &Arc<EdgeVectorIndex>,
) -> tokio::task::JoinHandle<Result<bool, mnemo_vector_index::VectorIndexError>> {
    let optimiser = {
        let index = Arc::clone(index);
        tokio::spawn(async move { index.optimize_if_idle(Duration::ZERO).await })
    };
    let started = Instant::now();
    while !index.optimising() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the idle optimisation never started"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    optimiser
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_optimisation_gives_way_to_a_write_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (index, t, s) = large_index(dir.path()).await;

    let optimiser = idle_optimisation_under_way(&index).await;
    let late = point(&t, &s, "harpsichord lessons", axis(DIMENSION, 3));
    index.upsert(&t, vec![late.clone()]).await.unwrap();
    // Had the write waited for the optimisation, it would have ended.
    assert!(
        !optimiser.await.unwrap().unwrap(),
        "the optimisation ran to its end while a write waited"
    );
    assert!(!index.optimising());
    assert!(
        index.unoptimized_for().is_some(),
        "the write, and what the optimisation did not finish, still wait for one"
    );
    assert_eq!(index.count(&t, None).await.unwrap(), POINTS + 1);
    let hits = index.search(&t, &keyword("harpsichord")).await.unwrap();
    assert_eq!(hits[0].id, late.id);

    // What the stopped optimisation left reopens whole.
    index.flush().await.unwrap();
    drop(index);
    let index = EdgeVectorIndex::open(dir.path(), DIMENSION).unwrap();
    assert_eq!(index.count(&t, None).await.unwrap(), POINTS + 1);
    let hits = index.search(&t, &keyword("harpsichord")).await.unwrap();
    assert_eq!(hits[0].id, late.id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flush_stops_an_idle_optimisation_too() {
    let dir = tempfile::tempdir().unwrap();
    let (index, t, _) = large_index(dir.path()).await;
    let optimiser = idle_optimisation_under_way(&index).await;
    // What a projection does before it commits its offsets.
    index.flush().await.unwrap();
    assert!(
        !optimiser.await.unwrap().unwrap(),
        "the optimisation ran to its end while a flush waited"
    );
    assert_eq!(index.count(&t, None).await.unwrap(), POINTS);
    // Asked by nobody, the next one runs to its end.
    assert!(index.optimize_if_idle(Duration::ZERO).await.unwrap());
    assert_eq!(index.unoptimized_for(), None);
    assert_eq!(index.count(&t, None).await.unwrap(), POINTS);
}

/// The modification times of every file of every segment, by segment.
fn segment_files(shard: &Path) -> Vec<(PathBuf, Vec<(PathBuf, SystemTime)>)> {
    fn walk(dir: &Path, into: &mut Vec<(PathBuf, SystemTime)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                walk(&entry.path(), into);
            } else {
                into.push((entry.path(), entry.metadata().unwrap().modified().unwrap()));
            }
        }
    }
    let mut segments: Vec<_> = std::fs::read_dir(shard.join("segments"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_dir())
        .map(|path| {
            let mut files = Vec::new();
            walk(&path, &mut files);
            files.sort();
            (path, files)
        })
        .collect();
    segments.sort();
    segments
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flush_writes_only_the_segments_written_since_the_last() {
    let dir = tempfile::tempdir().unwrap();
    let (index, t, s) = large_index(dir.path()).await;
    assert!(index.optimize().await.unwrap());
    index.flush().await.unwrap();
    let before = segment_files(dir.path());
    assert!(
        before.len() >= 2,
        "an optimised segment and one taking writes: {before:?}"
    );
    tokio::time::sleep(Duration::from_millis(20)).await;

    // One durable write: one segment takes it.
    index.set_durable_writes(true);
    let late = point(&t, &s, "clavichord recital", axis(DIMENSION, 5));
    index.upsert(&t, vec![late.clone()]).await.unwrap();
    let after = segment_files(dir.path());
    let changed: Vec<_> = before
        .iter()
        .filter(|segment| !after.contains(segment))
        .map(|(path, _)| path)
        .collect();
    assert_eq!(
        changed.len(),
        1,
        "segments rewritten by a flush of one point: {changed:?}"
    );

    // And the write is on disk: it survives a reopen.
    drop(index);
    let index = EdgeVectorIndex::open(dir.path(), DIMENSION).unwrap();
    let hits = index.search(&t, &keyword("clavichord")).await.unwrap();
    assert_eq!(hits[0].id, late.id);
    assert_eq!(index.count(&t, None).await.unwrap(), POINTS + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_purge_leaves_the_graphs_to_the_idle_optimisation() {
    let dir = tempfile::tempdir().unwrap();
    let (index, t, s) = large_index(dir.path()).await;
    let gone = point(&t, &subject("s2"), "erased", axis(DIMENSION, 7));
    index.upsert(&t, vec![gone]).await.unwrap();
    index.delete_subject(&t, &subject("s2")).await.unwrap();

    // The purge copies the live points and does not build their HNSW
    // graphs under the writer lock (minutes at 100k points): the engine
    // counts only the sparse vectors as indexed, one per point.
    index.purge_deleted().await.unwrap();
    assert_eq!(index.count(&t, None).await.unwrap(), POINTS);
    let purged = index.stats().await.unwrap();
    assert!(
        purged.indexed_vectors <= POINTS as usize,
        "the purge built dense graphs: {} indexed vectors for {POINTS} points",
        purged.indexed_vectors
    );
    assert!(index.unoptimized_for().is_some());

    // The idle optimisation builds them, and writes still go in after.
    assert!(index.optimize_if_idle(Duration::ZERO).await.unwrap());
    let optimised = index.stats().await.unwrap();
    assert!(optimised.indexed_vectors > POINTS as usize);
    let late = point(&t, &s, "harpsichord lessons", axis(DIMENSION, 3));
    index.upsert(&t, vec![late.clone()]).await.unwrap();
    let hits = index.search(&t, &keyword("harpsichord")).await.unwrap();
    assert_eq!(hits[0].id, late.id);
    assert_eq!(index.count(&t, None).await.unwrap(), POINTS + 1);
}
