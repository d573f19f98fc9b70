//! A purge leaves no byte of a deleted point in any file of a qdrant-edge
//! index: not in its segments, not in its payload indexes (and the
//! engine's write-ahead log never held one: it writes no records, see
//! `edge_wal.rs`). Proved by scanning every file for a canary string that
//! only the deleted points' payloads carried (tags are stored as plain
//! strings, in the payload storage and the keyword index), after first
//! showing that the scan finds it while the points are live.
#![cfg(feature = "edge")]

use std::path::{Path, PathBuf};

use mnemo_domain::{MemoryState, SubjectId, TenantId};
use mnemo_vector_index::testsuite::{axis, keyword, point, subject, tenant};
use mnemo_vector_index::{EdgeVectorIndex, Point, Purge, SearchFilter, SearchRequest, VectorIndex};

const DIMENSION: usize = 16;
const ALICE_CANARY: &str = "canary-alice-7f3e91c2";
const BOB_CANARY: &str = "canary-bob-2d84b6a0";

/// Every file under `dir` whose bytes contain `needle`.
fn files_holding(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if memchr::memmem::find(&std::fs::read(&path).unwrap(), needle.as_bytes())
                .is_some()
            {
                found.push(path);
            }
        }
    }
    found
}

fn tagged(t: &TenantId, s: &SubjectId, text: &str, axis_n: usize, canary: &str) -> Point {
    let mut p = point(t, s, text, axis(DIMENSION, axis_n));
    p.payload.tags = vec![canary.to_owned(), "music".to_owned()];
    p
}

fn by_tag(tag: &str, text: &str) -> SearchRequest {
    SearchRequest {
        filter: SearchFilter {
            tags: vec![tag.to_owned()],
            states: vec![MemoryState::Active, MemoryState::Archived],
            ..SearchFilter::default()
        },
        ..keyword(text)
    }
}

/// What the index directory holds, sorted (names only, top level).
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Alice's three points (one archived, one with its payload rewritten, so
/// the segments hold her canary several times over) and Bob's two,
/// flushed.
async fn alice_and_bob(index: &EdgeVectorIndex) -> (TenantId, Vec<Point>) {
    let t = tenant("t1");
    let (alice, bob) = (subject("alice"), subject("bob"));
    let mut archived = tagged(&t, &alice, "old flat near the harbour", 2, ALICE_CANARY);
    archived.payload.state = MemoryState::Archived;
    let rewritten = tagged(&t, &alice, "plays the oboe", 0, ALICE_CANARY);
    index
        .upsert(
            &t,
            vec![
                rewritten.clone(),
                tagged(&t, &alice, "oboe reeds from Paris", 1, ALICE_CANARY),
                archived,
            ],
        )
        .await
        .unwrap();
    let mut payload = rewritten.payload.clone();
    payload.importance = 0.9;
    index
        .update_payload(&t, &rewritten.id, payload)
        .await
        .unwrap();
    let bobs = vec![
        tagged(&t, &bob, "plays the bassoon", 0, BOB_CANARY),
        tagged(&t, &bob, "bassoon lessons on monday", 3, BOB_CANARY),
    ];
    index.upsert(&t, bobs.clone()).await.unwrap();
    index.flush().await.unwrap();
    (t, bobs)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_erased_subjects_bytes_leave_every_file_and_others_stay_served() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("vectors").join("space__16");
    let index = EdgeVectorIndex::open(&dir, DIMENSION).unwrap();
    let (t, bobs) = alice_and_bob(&index).await;
    let alice_files = files_holding(&dir, ALICE_CANARY);
    assert!(
        alice_files
            .iter()
            .any(|f| f.components().any(|c| c.as_os_str() == "segments")),
        "the scan finds Alice's canary in the segments before the purge (else this test \
         proves nothing): {alice_files:?}"
    );
    assert!(
        !alice_files
            .iter()
            .any(|f| f.components().any(|c| c.as_os_str() == "wal")),
        "and never in the WAL: {alice_files:?}"
    );

    assert_eq!(
        index.delete_subject(&t, &subject("alice")).await.unwrap(),
        3
    );
    assert!(
        !files_holding(&dir, ALICE_CANARY).is_empty(),
        "a delete alone leaves the bytes: the purge is what removes them"
    );
    assert_eq!(
        index.purge_deleted().await.unwrap(),
        Purge::Purged { live_points: 2 }
    );

    assert_eq!(files_holding(&dir, ALICE_CANARY), Vec::<PathBuf>::new());
    assert!(!files_holding(&dir, BOB_CANARY).is_empty());
    let hits = index
        .search(&t, &by_tag(BOB_CANARY, "bassoon"))
        .await
        .unwrap();
    assert_eq!(hits.len(), 2);
    assert!(hits.iter().all(|h| bobs.iter().any(|b| b.id == h.id)));
    assert!(index
        .search(&t, &by_tag(ALICE_CANARY, "oboe"))
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        listing(&dir),
        ["SHARD", "mnemo-vector-index.json", "shard.1"]
    );

    // Reopened from disk, it serves Bob and holds nothing of Alice.
    drop(index);
    let index = EdgeVectorIndex::open(&dir, DIMENSION).unwrap();
    assert_eq!(index.count(&t, None).await.unwrap(), 2);
    let hits = index
        .search(&t, &by_tag(BOB_CANARY, "bassoon"))
        .await
        .unwrap();
    assert_eq!(hits.len(), 2);
    assert_eq!(files_holding(&dir, ALICE_CANARY), Vec::<PathBuf>::new());

    // A second purge moves on to the next shard and deletes the first.
    let later = tagged(&t, &subject("carol"), "tuba", 4, ALICE_CANARY);
    index.upsert(&t, vec![later.clone()]).await.unwrap();
    index.delete(&t, &[later.id]).await.unwrap();
    assert!(!files_holding(&dir, ALICE_CANARY).is_empty());
    assert_eq!(
        index.purge_deleted().await.unwrap(),
        Purge::Purged { live_points: 2 }
    );
    assert_eq!(files_holding(&dir, ALICE_CANARY), Vec::<PathBuf>::new());
    assert_eq!(
        listing(&dir),
        ["SHARD", "mnemo-vector-index.json", "shard.2"]
    );
    let hits = index.search(&t, &keyword("bassoon")).await.unwrap();
    assert_eq!(hits.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_purge_with_nothing_deleted_is_harmless() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("space__16");
    let index = EdgeVectorIndex::open(&dir, DIMENSION).unwrap();
    assert_eq!(
        index.purge_deleted().await.unwrap(),
        Purge::Purged { live_points: 0 }
    );
    let (t, bobs) = alice_and_bob(&index).await;
    assert_eq!(
        index.purge_deleted().await.unwrap(),
        Purge::Purged { live_points: 5 }
    );
    assert_eq!(index.count(&t, None).await.unwrap(), 5);
    assert_eq!(index.count(&t, Some(&subject("alice"))).await.unwrap(), 3);
    assert!(!files_holding(&dir, ALICE_CANARY).is_empty());
    assert!(!files_holding(&dir, BOB_CANARY).is_empty());
    let hits = index.search(&t, &keyword("bassoon monday")).await.unwrap();
    assert_eq!(hits[0].id, bobs[1].id);
    drop(index);
    let index = EdgeVectorIndex::open(&dir, DIMENSION).unwrap();
    assert_eq!(index.count(&t, None).await.unwrap(), 5);
}

/// A copy of a directory tree, as a crash would leave it on disk.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opening_deletes_what_a_crashed_purge_left() {
    let root = tempfile::tempdir().unwrap();
    let live = root.path().join("live");
    let index = EdgeVectorIndex::open(&live, DIMENSION).unwrap();
    let (t, _) = alice_and_bob(&index).await;
    index.delete_subject(&t, &subject("alice")).await.unwrap();

    // Crashed before the commit: an unfinished shard.1 beside the served
    // shard. The served shard is opened; the unfinished one goes.
    let before_commit = root.path().join("before-commit");
    copy_tree(&live, &before_commit);
    copy_tree(&live, &before_commit.join("shard.1"));
    let reopened = EdgeVectorIndex::open(&before_commit, DIMENSION).unwrap();
    assert_eq!(reopened.count(&t, None).await.unwrap(), 2);
    assert!(!before_commit.join("shard.1").exists());
    drop(reopened);

    // Crashed after the commit, before the former shard was deleted: SHARD
    // names shard.1, and the former shard's files are still in place.
    index.purge_deleted().await.unwrap();
    drop(index);
    let after_commit = root.path().join("after-commit");
    copy_tree(&before_commit, &after_commit);
    copy_tree(&live.join("shard.1"), &after_commit.join("shard.1"));
    std::fs::copy(live.join("SHARD"), after_commit.join("SHARD")).unwrap();
    assert!(!files_holding(&after_commit, ALICE_CANARY).is_empty());
    let reopened = EdgeVectorIndex::open(&after_commit, DIMENSION).unwrap();
    assert_eq!(reopened.count(&t, None).await.unwrap(), 2);
    assert_eq!(
        files_holding(&after_commit, ALICE_CANARY),
        Vec::<PathBuf>::new()
    );
    assert_eq!(
        listing(&after_commit),
        ["SHARD", "mnemo-vector-index.json", "shard.1"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn searches_go_on_while_a_purge_swaps_the_shard() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("space__16");
    let index = std::sync::Arc::new(EdgeVectorIndex::open(&dir, DIMENSION).unwrap());
    let (t, bobs) = alice_and_bob(&index).await;
    let crowd: Vec<Point> = (0..400)
        .map(|n| tagged(&t, &subject("crowd"), "crowd noise", n % DIMENSION, "crowd"))
        .collect();
    index.upsert(&t, crowd).await.unwrap();
    index.delete_subject(&t, &subject("alice")).await.unwrap();

    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (index, done, t) = (index.clone(), done.clone(), t.clone());
        tokio::spawn(async move {
            let mut searches = 0;
            while !done.load(std::sync::atomic::Ordering::Acquire) || searches == 0 {
                let hits = index.search(&t, &keyword("bassoon")).await.unwrap();
                assert_eq!(
                    hits.len(),
                    2,
                    "every search sees Bob's points, before and after"
                );
                searches += 1;
            }
            searches
        })
    };
    let purged = index.purge_deleted().await.unwrap();
    done.store(true, std::sync::atomic::Ordering::Release);
    assert!(reader.await.unwrap() > 0);
    assert_eq!(purged, Purge::Purged { live_points: 402 });
    let hits = index.search(&t, &keyword("bassoon")).await.unwrap();
    assert!(hits.iter().all(|h| bobs.iter().any(|b| b.id == h.id)));
    assert_eq!(files_holding(&dir, ALICE_CANARY), Vec::<PathBuf>::new());
}
