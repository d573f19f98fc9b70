//! The embedded engine's write-ahead log stays the size of three segment
//! files however much is written: a flush acknowledges what the segments
//! now hold, and the WAL drops its older segment files. (The engine does
//! not replay its WAL when a shard is loaded, so what it drops was never
//! read again.) A shard an older build created, with larger segments,
//! takes this build's size for the segment files it creates.
#![cfg(feature = "edge")]

use std::path::{Path, PathBuf};

use mnemo_vector_index::testsuite::{self, point, semantic, subject, tenant};
use mnemo_vector_index::{
    EdgeVectorIndex, VectorIndex, EDGE_WAL_SEGMENT_BYTES as WAL_SEGMENT_BYTES,
};
use qdrant_edge::{EdgeConfig, EdgeShard, WalOptions};

/// Wide vectors, so a few thousand points write megabytes of WAL records.
const DIMENSION: usize = 1536;
/// Points written one batch at a time, each batch flushed as the
/// projections flush.
const BATCH: usize = 100;
/// Enough points for their dense vectors alone (4 bytes a dimension, more
/// in the WAL's CBOR records) to fill five WAL segment files.
const POINTS: usize = 5 * WAL_SEGMENT_BYTES / (DIMENSION * 4) / BATCH * BATCH;

fn spread(seed: usize) -> Vec<f32> {
    testsuite::spread(DIMENSION, seed as u64)
}

/// The WAL segment files under `dir` (`open-N`, `closed-N`) with their sizes.
fn wal_segments(dir: &Path) -> Vec<(String, u64)> {
    let mut found = Vec::new();
    let mut pending: Vec<PathBuf> = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                pending.push(path);
            } else if next.file_name().is_some_and(|n| n == "wal")
                && (name.starts_with("open-") || name.starts_with("closed-"))
            {
                found.push((name, entry.metadata().unwrap().len()));
            }
        }
    }
    found.sort();
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wal_keeps_three_segment_files_whatever_was_written() {
    let dir = tempfile::tempdir().unwrap();
    let t = tenant("t1");
    let s = subject("s1");
    let mut first = None;
    {
        let index = EdgeVectorIndex::open(dir.path(), DIMENSION).unwrap();
        index.set_durable_writes(false);
        for batch in 0..POINTS / BATCH {
            let points: Vec<_> = (batch * BATCH..(batch + 1) * BATCH)
                .map(|n| point(&t, &s, &format!("note {n}"), spread(n)))
                .collect();
            first = first.or(Some(points[0].id));
            index.upsert(&t, points).await.unwrap();
            index.flush().await.unwrap();
        }

        // The open segment, the next one (created ahead), and the closed
        // one the WAL retains.
        let segments = wal_segments(dir.path());
        let closed = segments
            .iter()
            .filter(|(name, _)| name.starts_with("closed-"))
            .count();
        assert!(
            closed <= 1,
            "the WAL kept {closed} closed segment files: {segments:?}"
        );
        let bytes: u64 = segments.iter().map(|(_, size)| size).sum();
        assert!(
            bytes <= 3 * WAL_SEGMENT_BYTES as u64,
            "the WAL holds {bytes} bytes: {segments:?}"
        );
        // The writes did fill several segment files: the closed one left
        // starts past the first record, so the ones before it were dropped.
        assert!(
            segments
                .iter()
                .any(|(name, _)| name.strip_prefix("closed-").is_some_and(|n| n != "0")),
            "no WAL segment was closed and dropped: {segments:?}"
        );
    }

    // Nothing the segments hold depended on what the WAL dropped.
    let index = EdgeVectorIndex::open(dir.path(), DIMENSION).unwrap();
    assert_eq!(index.count(&t, None).await.unwrap(), POINTS as u64);
    let hits = index.search(&t, &semantic(spread(0))).await.unwrap();
    assert!(
        hits.first().is_some_and(|hit| Some(hit.id) == first),
        "the first point written is not found after a reopen: {hits:?}"
    );
}

/// A shard an older build created keeps the engine's 32 MiB segments in
/// its stored settings; opened by this build, the WAL files it creates
/// from then on are this build's size, without a reindex.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shard_an_older_build_created_takes_this_builds_wal_segment_size() {
    let engine_default = WalOptions::default().segment_capacity;
    assert!(engine_default > WAL_SEGMENT_BYTES);
    let dir = tempfile::tempdir().unwrap();
    // What an older build left: the adapter's shard (its marker, its
    // payload indexes), with the WAL and the stored settings of the
    // engine's defaults. It holds no point yet, so its WAL holds nothing.
    drop(EdgeVectorIndex::open(dir.path(), DIMENSION).unwrap());
    std::fs::remove_dir_all(dir.path().join("wal")).unwrap();
    let mut older = EdgeConfig::load(dir.path()).unwrap().unwrap();
    older.wal_options = None;
    drop(EdgeShard::load(dir.path(), Some(older)).unwrap());
    let segments = wal_segments(dir.path());
    assert!(
        !segments.is_empty()
            && segments
                .iter()
                .all(|(_, size)| *size == engine_default as u64),
        "not an older build's WAL: {segments:?}"
    );

    let t = tenant("t1");
    let s = subject("s1");
    let index = EdgeVectorIndex::open(dir.path(), DIMENSION).unwrap();
    index.set_durable_writes(false);
    let stored = EdgeConfig::load(dir.path()).unwrap().unwrap().wal_options;
    assert_eq!(stored.map(|o| o.segment_capacity), Some(WAL_SEGMENT_BYTES));
    // Writes until the WAL creates a segment file, at most three of the
    // older size's worth: the files it had keep their size, and the first
    // it creates must be the new size.
    let bound = 3 * engine_default / (DIMENSION * 4) / BATCH;
    let mut written = 0;
    let created = loop {
        let points: Vec<_> = (written..written + BATCH)
            .map(|n| point(&t, &s, &format!("note {n}"), spread(n)))
            .collect();
        index.upsert(&t, points).await.unwrap();
        index.flush().await.unwrap();
        written += BATCH;
        // A closed segment is the same file renamed (`closed-N`); a file
        // the WAL created is an `open-N` it did not have.
        let now = wal_segments(dir.path());
        if let Some(new) = now.iter().find(|(name, _)| {
            name.starts_with("open-") && !segments.iter().any(|(had, _)| had == name)
        }) {
            break new.clone();
        }
        assert!(
            written < bound * BATCH,
            "no WAL segment file created after {written} points: {now:?}"
        );
    };
    assert_eq!(
        created.1, WAL_SEGMENT_BYTES as u64,
        "the first segment file created after the open: {created:?}"
    );
    assert_eq!(index.count(&t, None).await.unwrap(), written as u64);
}
