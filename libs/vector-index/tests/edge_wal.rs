//! The embedded engine writes nothing to its write-ahead log. An edge shard
//! never replays its WAL when it is loaded, so a record there was only
//! ever a second copy of each written point (payload and vectors) that
//! outlived the point's deletion until its file was dropped. The vendored
//! engine numbers its operations with a counter instead, which must start
//! past every version the segments hold when a shard is opened again, or a
//! rewrite of an existing point would be ignored.
#![cfg(feature = "edge")]

use std::path::{Path, PathBuf};

use mnemo_vector_index::testsuite::{self, point, semantic, subject, tenant};
use mnemo_vector_index::{
    EdgeVectorIndex, Point, VectorIndex, EDGE_WAL_SEGMENT_BYTES as WAL_SEGMENT_BYTES,
};
use qdrant_edge::{EdgeConfig, EdgeShard, WalOptions};

const DIMENSION: usize = 64;
const BATCH: usize = 100;

fn spread(seed: usize) -> Vec<f32> {
    testsuite::spread(DIMENSION, seed as u64)
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending: Vec<PathBuf> = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// The files of the WAL directory under `dir`.
fn wal_files(dir: &Path) -> Vec<PathBuf> {
    walk(dir)
        .into_iter()
        .filter(|path| path.parent().and_then(Path::file_name) == Some("wal".as_ref()))
        .collect()
}

/// The WAL segment files under `dir` (`open-N`, `closed-N`) with their sizes.
fn wal_segments(dir: &Path) -> Vec<(String, u64)> {
    wal_files(dir)
        .into_iter()
        .filter_map(|path| {
            let name = path.file_name()?.to_string_lossy().into_owned();
            (name.starts_with("open-") || name.starts_with("closed-"))
                .then(|| (name, std::fs::metadata(&path).unwrap().len()))
        })
        .collect()
}

fn holds(path: &Path, needle: &[u8]) -> bool {
    let bytes = std::fs::read(path).unwrap();
    bytes.windows(needle.len()).any(|window| window == needle)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn written_points_leave_no_copy_in_the_wal() {
    let dir = tempfile::tempdir().unwrap();
    let t = tenant("t1");
    // A subject id no other byte sequence of the shard would spell out: a
    // WAL record carries the payload (and so the subject) as written.
    let canary = "wal-canary-5d1e93";
    let s = subject(canary);
    let index = EdgeVectorIndex::open(dir.path(), DIMENSION).unwrap();
    let opened = wal_segments(dir.path());
    assert!(!opened.is_empty(), "the engine opened no WAL");
    index.set_durable_writes(false);
    let mut written = Vec::new();
    for batch in 0..5 {
        let points: Vec<_> = (batch * BATCH..(batch + 1) * BATCH)
            .map(|n| point(&t, &s, &format!("note {n}"), spread(n)))
            .collect();
        written.extend(points.iter().map(|p| p.id));
        index.upsert(&t, points).await.unwrap();
        index.flush().await.unwrap();
    }
    index.delete(&t, &written[..BATCH]).await.unwrap();
    index.flush().await.unwrap();
    assert_eq!(
        index.count(&t, None).await.unwrap(),
        (written.len() - BATCH) as u64
    );

    // The WAL is the files it was opened with, and none holds the subject.
    assert_eq!(wal_segments(dir.path()), opened);
    let wal = wal_files(dir.path());
    let copies: Vec<_> = wal
        .iter()
        .filter(|path| holds(path, canary.as_bytes()))
        .collect();
    assert!(copies.is_empty(), "the WAL holds the payload: {copies:?}");
    // The segments do hold it, so the check above can find it where it is.
    let elsewhere = walk(dir.path())
        .into_iter()
        .filter(|path| !wal.contains(path))
        .any(|path| holds(&path, canary.as_bytes()));
    assert!(
        elsewhere,
        "the subject is nowhere in the shard, so its absence from the WAL proves nothing"
    );
}

/// The search by `point`'s vector finds it first, as written.
async fn assert_found_as_written(index: &EdgeVectorIndex, point: &Point, what: &str) {
    let hits = index
        .search(&point.payload.tenant, &semantic(point.dense.clone()))
        .await
        .unwrap();
    assert!(
        hits.first()
            .is_some_and(|hit| hit.id == point.id && hit.score > 0.999),
        "{what}: {hits:?}"
    );
}

/// A point rewritten after a reopen takes the new vector: the operation
/// numbers go on past what the segments hold. Numbered from the start
/// again, the rewrite would carry a lower number than the point's stored
/// version, and the engine would ignore it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_point_rewritten_after_a_reopen_takes_the_new_vector() {
    let dir = tempfile::tempdir().unwrap();
    let t = tenant("t1");
    let s = subject("s1");
    let mut first = point(&t, &s, "note", spread(0));
    {
        let index = EdgeVectorIndex::open(dir.path(), DIMENSION).unwrap();
        index.upsert(&t, vec![first.clone()]).await.unwrap();
        // Many operations after it, so the segment's version is far past
        // where a fresh count would start.
        for batch in 0..20 {
            let points: Vec<_> = (1 + batch * 10..1 + (batch + 1) * 10)
                .map(|n| point(&t, &s, &format!("note {n}"), spread(n)))
                .collect();
            index.upsert(&t, points).await.unwrap();
        }
        // The first point once more, late: its version is the newest.
        index.upsert(&t, vec![first.clone()]).await.unwrap();
    }
    for round in 0..3 {
        let index = EdgeVectorIndex::open(dir.path(), DIMENSION).unwrap();
        first.dense = spread(1_000 + round);
        index.upsert(&t, vec![first.clone()]).await.unwrap();
        drop(index);
        let index = EdgeVectorIndex::open(dir.path(), DIMENSION).unwrap();
        let what = format!("round {round}: the rewrite after a reopen was lost");
        assert_found_as_written(&index, &first, &what).await;
        assert_eq!(index.count(&t, None).await.unwrap(), 201);
    }
}

/// A shard an older build created, with the engine's default WAL
/// settings, opened by this build: it keeps this build's WAL segment size
/// in its stored settings, and takes writes and rewrites across reopens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shard_an_older_build_created_takes_this_builds_settings_and_rewrites() {
    let dir = tempfile::tempdir().unwrap();
    let t = tenant("t1");
    let s = subject("s1");
    drop(EdgeVectorIndex::open(dir.path(), DIMENSION).unwrap());
    // What an older build left: the engine's default WAL settings.
    std::fs::remove_dir_all(dir.path().join("wal")).unwrap();
    let mut older = EdgeConfig::load(dir.path()).unwrap().unwrap();
    older.wal_options = None;
    drop(EdgeShard::load(dir.path(), Some(older)).unwrap());
    let engine_default = WalOptions::default().segment_capacity;
    assert!(engine_default > WAL_SEGMENT_BYTES);
    assert!(wal_segments(dir.path())
        .iter()
        .all(|(_, size)| *size == engine_default as u64));

    let mut kept = point(&t, &s, "kept", spread(7));
    {
        let index = EdgeVectorIndex::open(dir.path(), DIMENSION).unwrap();
        let stored = EdgeConfig::load(dir.path()).unwrap().unwrap().wal_options;
        assert_eq!(stored.map(|o| o.segment_capacity), Some(WAL_SEGMENT_BYTES));
        index.upsert(&t, vec![kept.clone()]).await.unwrap();
    }
    let index = EdgeVectorIndex::open(dir.path(), DIMENSION).unwrap();
    kept.dense = spread(8);
    index.upsert(&t, vec![kept.clone()]).await.unwrap();
    assert_found_as_written(&index, &kept, "the rewrite was lost").await;
}
