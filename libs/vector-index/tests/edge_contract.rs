//! The VectorIndex contract on qdrant-edge, plus what only the embedded
//! engine can show: the load a single process puts on it, reopening with
//! another dimension, payload indexes, optimisation.
#![cfg(feature = "edge")]

use std::sync::Arc;
use std::time::{Duration, Instant};

use mnemo_domain::{MemoryId, MemoryKind, MemoryState};
use mnemo_vector_index::testsuite::{
    axis, hybrid, keyword, point, semantic, subject, tenant, vector,
};
use mnemo_vector_index::{
    vector_index_contract_tests, EdgeVectorIndex, SearchFilter, SearchRequest, VectorIndex,
};

const DIMENSION: usize = 16;

async fn fresh_dir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

async fn open_in(dir: Arc<tempfile::TempDir>) -> Arc<dyn VectorIndex> {
    let path = dir.path().join("vectors").join("test-space");
    Arc::new(
        tokio::task::spawn_blocking(move || EdgeVectorIndex::open(&path, DIMENSION))
            .await
            .unwrap()
            .unwrap(),
    )
}

vector_index_contract_tests!(setup: fresh_dir(), open: open_in);

/// A cheap deterministic spread of unit vectors.
fn pseudo_random_vector(seed: u64, dimension: usize) -> Vec<f32> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let axes: Vec<(usize, f32)> = (0..dimension)
        .map(|axis| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (axis, ((state >> 33) as f32 / u32::MAX as f32) - 0.25)
        })
        .collect();
    vector(dimension, &axes)
}

const WORDS: [&str; 12] = [
    "coffee", "chess", "berlin", "violin", "garden", "python", "marathon", "sushi", "jazz",
    "mountain", "novel", "camera",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_points_and_a_hundred_searches_complete() {
    let dir = tempfile::tempdir().unwrap();
    let index = Arc::new(EdgeVectorIndex::open(dir.path(), DIMENSION).unwrap());
    let t = tenant("busy-tenant");
    let started = Instant::now();
    let points: Vec<_> = (0..1_000u64)
        .map(|n| {
            let s = subject(&format!("subject-{}", n % 20));
            let text = format!(
                "{} and {} on day {n}",
                WORDS[n as usize % WORDS.len()],
                WORDS[(n as usize / 7) % WORDS.len()]
            );
            let mut p = point(&t, &s, &text, pseudo_random_vector(n, DIMENSION));
            p.payload.kind = MemoryKind::ALL[n as usize % MemoryKind::ALL.len()];
            p.payload.importance = (n % 10) as f32 / 10.0;
            p
        })
        .collect();
    for batch in points.chunks(250) {
        index.upsert(&t, batch.to_vec()).await.unwrap();
    }
    assert_eq!(index.count(&t, None).await.unwrap(), 1_000);
    let upserted = started.elapsed();

    // Searches from several tasks at once, all three modes, with filters.
    let mut tasks = Vec::new();
    for task in 0..4u64 {
        let index = Arc::clone(&index);
        let t = t.clone();
        tasks.push(tokio::spawn(async move {
            for n in 0..25u64 {
                let query = pseudo_random_vector(10_000 + task * 100 + n, DIMENSION);
                let word = WORDS[(task * 25 + n) as usize % WORDS.len()];
                let request = match n % 3 {
                    0 => semantic(query),
                    1 => keyword(word),
                    _ => SearchRequest {
                        filter: SearchFilter {
                            min_importance: Some(0.5),
                            ..SearchFilter::default()
                        },
                        ..hybrid(query, word)
                    },
                };
                let hits = index.search(&t, &request).await.unwrap();
                assert_eq!(hits.len(), 10);
                if n % 3 == 1 {
                    assert!(hits.iter().all(|h| h.sparse_score.unwrap() > 0.0));
                }
                if n % 3 == 2 {
                    assert!(hits.iter().all(|h| h.payload.importance >= 0.5));
                }
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let total = started.elapsed();
    eprintln!("1000 upserts: {upserted:?}; with 100 searches: {total:?}");
    assert!(total < Duration::from_secs(120), "{total:?}");
}

#[tokio::test]
async fn reopening_with_another_dimension_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    drop(EdgeVectorIndex::open(dir.path(), DIMENSION).unwrap());
    let error = EdgeVectorIndex::open(dir.path(), DIMENSION * 2).unwrap_err();
    assert_eq!(error.code(), "dimension_mismatch", "{error}");
    EdgeVectorIndex::open(dir.path(), DIMENSION).unwrap();
}

#[tokio::test]
async fn a_second_open_of_the_same_directory_fails_while_the_first_lives() {
    let dir = tempfile::tempdir().unwrap();
    let first = EdgeVectorIndex::open(dir.path(), DIMENSION).unwrap();
    assert!(EdgeVectorIndex::open(dir.path(), DIMENSION).is_err());
    drop(first);
    EdgeVectorIndex::open(dir.path(), DIMENSION).unwrap();
}

#[tokio::test]
async fn every_filterable_field_has_a_payload_index_after_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let index = EdgeVectorIndex::open(dir.path(), DIMENSION).unwrap();
    let t = tenant("t1");
    index
        .upsert(
            &t,
            vec![point(&t, &subject("s1"), "hello", axis(DIMENSION, 0))],
        )
        .await
        .unwrap();
    drop(index);
    let index = EdgeVectorIndex::open(dir.path(), DIMENSION).unwrap();
    let mut indexed = index.stats().await.unwrap().payload_indexes;
    indexed.sort();
    assert_eq!(
        indexed,
        vec![
            "agent",
            "created_at",
            "importance",
            "kind",
            "memory_subject",
            "session",
            "state",
            "subject",
            "tags",
            "tenant",
            "type"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn optimize_keeps_points_filters_and_writes_working() {
    let dir = tempfile::tempdir().unwrap();
    let index = EdgeVectorIndex::open(dir.path(), DIMENSION).unwrap();
    let t = tenant("t1");
    let s = subject("s1");
    let points: Vec<_> = (0..300u64)
        .map(|n| {
            let mut p = point(
                &t,
                &s,
                WORDS[n as usize % WORDS.len()],
                pseudo_random_vector(n, DIMENSION),
            );
            if n % 2 == 0 {
                p.payload.state = MemoryState::Archived;
            }
            p
        })
        .collect();
    let first = points[1].clone();
    index.upsert(&t, points).await.unwrap();
    index.delete(&t, &[first.id]).await.unwrap();
    index.optimize().await.unwrap();
    assert_eq!(index.count(&t, None).await.unwrap(), 299);
    let hits = index.search(&t, &keyword("chess")).await.unwrap();
    assert!(!hits.is_empty());
    assert!(hits.iter().all(|h| h.payload.state == MemoryState::Active));
    let extra = point(&t, &s, "harpsichord lessons", axis(DIMENSION, 0));
    index.upsert(&t, vec![extra.clone()]).await.unwrap();
    drop(index);
    let index = EdgeVectorIndex::open(dir.path(), DIMENSION).unwrap();
    assert_eq!(index.count(&t, None).await.unwrap(), 300);
    let hits = index.search(&t, &keyword("harpsichord")).await.unwrap();
    assert_eq!(hits[0].id, extra.id);
    // Writes into a reopened optimised shard: what a collection rebuilt and
    // optimised by `mnemo reindex` gets when the server takes it over.
    let later = point(&t, &s, "clavichord recital", axis(DIMENSION, 1));
    index.upsert(&t, vec![later.clone()]).await.unwrap();
    index.delete(&t, &[extra.id]).await.unwrap();
    drop(index);
    let index = EdgeVectorIndex::open(dir.path(), DIMENSION).unwrap();
    assert_eq!(index.count(&t, None).await.unwrap(), 300);
    let hits = index.search(&t, &keyword("clavichord")).await.unwrap();
    assert_eq!(hits[0].id, later.id);
}

/// What a process crash leaves on disk: a copy of the directory taken while
/// the index is live (the page cache is shared, so unflushed mmap writes are
/// in it; unflushed in-memory state is not).
fn crash_image(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            crash_image(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[tokio::test]
async fn a_write_that_returned_survives_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let live = dir.path().join("live");
    let index = EdgeVectorIndex::open(&live, DIMENSION).unwrap();
    let t = tenant("t1");
    let s = subject("s1");
    let kept = point(&t, &s, "durable write", axis(DIMENSION, 0));
    index.upsert(&t, vec![kept.clone()]).await.unwrap();
    index.delete(&t, &[MemoryId::new()]).await.unwrap();

    // Without durable writes, qdrant-edge 0.7.0 loses what was not flushed:
    // it does not replay its WAL. If this starts to pass, the engine has
    // learned to recover and the flush per write could go.
    index.set_durable_writes(false);
    let lost = point(&t, &s, "volatile write", axis(DIMENSION, 1));
    index.upsert(&t, vec![lost.clone()]).await.unwrap();

    crash_image(&live, &dir.path().join("after-crash"));
    drop(index);
    let recovered = EdgeVectorIndex::open(&dir.path().join("after-crash"), DIMENSION).unwrap();
    let hits = recovered.search(&t, &keyword("durable")).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].id, kept.id);
    assert_eq!(
        recovered.count(&t, None).await.unwrap(),
        1,
        "unflushed write recovered"
    );
}

#[tokio::test]
async fn an_idle_index_is_optimised_and_flushed_once_per_quiet_spell() {
    let dir = tempfile::tempdir().unwrap();
    let live = dir.path().join("live");
    let index = EdgeVectorIndex::open(&live, DIMENSION).unwrap();
    // As the server runs it: the projections flush, not each write.
    index.set_durable_writes(false);
    let t = tenant("t1");
    let s = subject("s1");
    let written = point(&t, &s, "idle optimisation", axis(DIMENSION, 0));
    index.upsert(&t, vec![written.clone()]).await.unwrap();

    // Written a moment ago: not quiet for an hour.
    assert!(!index
        .optimize_if_idle(Duration::from_secs(3600))
        .await
        .unwrap());
    // Unoptimised since it was opened, the write included.
    let waited = index.unoptimized_for().expect("written, not optimised");
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(index.unoptimized_for().unwrap() >= waited + Duration::from_millis(20));
    assert!(index.optimize_if_idle(Duration::ZERO).await.unwrap());
    assert_eq!(index.unoptimized_for(), None);
    // Nothing written since: nothing to do.
    assert!(!index.optimize_if_idle(Duration::ZERO).await.unwrap());
    // A write starts the wait again, from itself.
    let before = std::time::Instant::now();
    index
        .upsert(&t, vec![point(&t, &s, "another", axis(DIMENSION, 1))])
        .await
        .unwrap();
    assert!(index.unoptimized_for().unwrap() <= before.elapsed());
    assert!(index.optimize_if_idle(Duration::ZERO).await.unwrap());

    // It flushed: a crash now keeps the point.
    crash_image(&live, &dir.path().join("after-crash"));
    drop(index);
    let recovered = EdgeVectorIndex::open(&dir.path().join("after-crash"), DIMENSION).unwrap();
    let hits = recovered
        .search(&t, &keyword("optimisation"))
        .await
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].id, written.id);
}
