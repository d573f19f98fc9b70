//! A flush that fails (the data dir removed or full under a running
//! process) is an error its caller reports and retries: the engine panics
//! neither in the flush nor when the shard is dropped. Alone in its test
//! binary: it counts the process's panics.
#![cfg(feature = "edge")]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use mnemo_vector_index::testsuite::{self, point, subject, tenant};
use mnemo_vector_index::{EdgeVectorIndex, VectorIndex};

const DIMENSION: usize = 64;

/// The first directory named `name` under `dir`.
fn find_dir(dir: &Path, name: &str) -> Option<PathBuf> {
    for entry in std::fs::read_dir(dir).ok()? {
        let path = entry.ok()?.path();
        if path.is_dir() {
            if path.file_name() == Some(name.as_ref()) {
                return Some(path);
            }
            if let Some(found) = find_dir(&path, name) {
                return Some(found);
            }
        }
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flush_that_fails_is_an_error_naming_the_cause_not_a_panic() {
    static PANICS: AtomicUsize = AtomicUsize::new(0);
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        PANICS.fetch_add(1, Ordering::SeqCst);
        report(info);
    }));
    let dir = tempfile::tempdir().unwrap();
    let (t, s) = (tenant("t1"), subject("s1"));
    let index = EdgeVectorIndex::open(dir.path(), DIMENSION).unwrap();
    index.set_durable_writes(false);
    let written = point(&t, &s, "not flushed yet", testsuite::spread(DIMENSION, 1));
    index.upsert(&t, vec![written]).await.unwrap();
    // The segments' files go away under the open shard.
    std::fs::remove_dir_all(find_dir(dir.path(), "segments").unwrap()).unwrap();

    let error = index.flush().await.unwrap_err().to_string();
    assert!(
        error.contains("No such file"),
        "the cause is named: {error}"
    );
    // Still unflushed: the next flush tries again, and fails again.
    let again = index.flush().await.unwrap_err().to_string();
    assert!(again.contains("No such file"), "{again}");
    // Dropping the shard flushes once more: logged, not a panic.
    drop(index);
    assert_eq!(PANICS.load(Ordering::SeqCst), 0, "nothing panicked");
}
