//! How a connection waits for SQLite's write lock: woken by the commit
//! that frees it, not by a timer.
//!
//! The embedded database is one file that the log, the bus, the keys, the
//! read model and the consolidation buffer all write through one pool, so
//! connections often find the write lock taken. SQLite's own busy handler
//! (what `busy_timeout` installs) then sleeps 1, 2, 5, 10, 15, 20, 25 ms
//! and on before it looks again, and the lock stays free while its waiters
//! sleep: under the load test, threads spent more than half their time in
//! that sleep and the machine's cores were a third idle.
//!
//! Here every connection of the process gets a busy handler that waits on
//! one condition variable, and a WAL hook that wakes it: SQLite calls the
//! hook after a commit, once the write lock is released. A wait is capped
//! at [`RECHECK`] so a lock freed without a commit (a rollback, another
//! process) is seen soon too, and the handler gives up after the pool's
//! busy timeout as SQLite's would.
//!
//! Installing a WAL hook replaces SQLite's automatic checkpoint (which is a
//! WAL hook too), so the hook also checkpoints as the default does: a
//! passive checkpoint once the WAL holds [`AUTOCHECKPOINT_FRAMES`] frames.

use std::cell::Cell;
use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use libsqlite3_sys as ffi;
use sqlx::sqlite::SqliteConnection;

/// Longest single wait before the lock is tried again without a wake-up.
const RECHECK: Duration = Duration::from_millis(2);

/// SQLite's default automatic checkpoint threshold (`SQLITE_DEFAULT_WAL_AUTOCHECKPOINT`).
const AUTOCHECKPOINT_FRAMES: c_int = 1000;

/// Commits seen in this process: a waiter sleeps until it changes.
struct Commits {
    count: Mutex<u64>,
    changed: Condvar,
}

static COMMITS: Commits = Commits {
    count: Mutex::new(0),
    changed: Condvar::new(),
};

/// Waits for the lock that a commit ended (rather than [`RECHECK`]).
static HANDOFFS: AtomicU64 = AtomicU64::new(0);

/// How many waits for the write lock in this process a commit ended.
pub fn handoffs() -> u64 {
    HANDOFFS.load(Ordering::Relaxed)
}

thread_local! {
    /// When this thread's connection began waiting for the lock it waits
    /// for now (sqlx runs each connection on a thread of its own, and the
    /// handler runs on it).
    static WAITING_SINCE: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Installs the handler and the hook on a new connection; `timeout` is how
/// long a statement waits for the lock before it fails with SQLITE_BUSY.
pub(crate) async fn install(
    connection: &mut SqliteConnection,
    timeout: Duration,
) -> Result<(), sqlx::Error> {
    // Milliseconds fit a pointer-sized integer: no allocation to free when
    // the connection closes.
    let timeout_ms = timeout.as_millis().min(u32::MAX as u128) as usize;
    let mut handle = connection.lock_handle().await?;
    let db = handle.as_raw_handle().as_ptr();
    // SAFETY: `db` is the live connection, held locked for the duration of
    // both calls; the callbacks are `extern "C"` functions with the
    // signatures SQLite expects, and their argument is a plain integer.
    let status = unsafe { ffi::sqlite3_busy_handler(db, Some(on_busy), timeout_ms as *mut c_void) };
    if status != ffi::SQLITE_OK {
        return Err(sqlx::Error::Protocol(format!(
            "cannot install the SQLite busy handler (code {status})"
        )));
    }
    // SAFETY: as above; the previous hook (the automatic checkpoint) is
    // replaced, and `on_commit` checkpoints in its place.
    unsafe { ffi::sqlite3_wal_hook(db, Some(on_commit), std::ptr::null_mut()) };
    Ok(())
}

/// SQLite's busy callback: 1 to try again, 0 to give up with SQLITE_BUSY.
extern "C" fn on_busy(timeout_ms: *mut c_void, attempts: c_int) -> c_int {
    let timeout = Duration::from_millis(timeout_ms as usize as u64);
    let now = Instant::now();
    let since = WAITING_SINCE.with(|since| {
        // The first call of a wait (attempts 0) starts its clock.
        if attempts == 0 {
            since.set(Some(now));
        }
        since.get().unwrap_or(now)
    });
    let waited = now.duration_since(since);
    if waited >= timeout {
        return 0;
    }
    // A poisoned lock guards a counter: keep going with it.
    let mut count = COMMITS.count.lock().unwrap_or_else(|p| p.into_inner());
    let seen = *count;
    let until = now + RECHECK.min(timeout - waited);
    while *count == seen {
        let Some(left) = until.checked_duration_since(Instant::now()) else {
            break;
        };
        let (next, result) = COMMITS
            .changed
            .wait_timeout(count, left)
            .unwrap_or_else(|p| p.into_inner());
        count = next;
        if result.timed_out() {
            break;
        }
        if *count != seen {
            // Woken by a commit, not by the clock.
            HANDOFFS.fetch_add(1, Ordering::Relaxed);
        }
    }
    1
}

/// SQLite's WAL hook: called after each commit, the write lock released.
extern "C" fn on_commit(
    _arg: *mut c_void,
    db: *mut ffi::sqlite3,
    name: *const c_char,
    frames: c_int,
) -> c_int {
    {
        let mut count = COMMITS.count.lock().unwrap_or_else(|p| p.into_inner());
        *count = count.wrapping_add(1);
    }
    COMMITS.changed.notify_all();
    if frames >= AUTOCHECKPOINT_FRAMES {
        // SAFETY: SQLite passes the committing connection and its schema
        // name, valid for this call; a checkpoint is what the default hook
        // runs here. A busy or failed passive checkpoint is retried at the
        // next commit, as with the default hook.
        unsafe { ffi::sqlite3_wal_checkpoint(db, name) };
    }
    ffi::SQLITE_OK
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode};
    use sqlx::{Connection, Executor};

    use super::*;

    async fn open(path: &std::path::Path, timeout: Duration) -> SqliteConnection {
        // As `connect` does before SQLite's first open: other tests of this
        // binary connect through it, and the allocator must not change
        // under a connection another thread is opening.
        crate::sqlite::configure_heap();
        let options = SqliteConnectOptions::from_str(&format!("sqlite://{}", path.display()))
            .unwrap()
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal);
        let mut connection = SqliteConnection::connect_with(&options).await.unwrap();
        install(&mut connection, timeout).await.unwrap();
        connection
    }

    #[tokio::test]
    async fn a_writer_gives_up_after_the_timeout_while_the_lock_is_held() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let mut holder = open(&path, Duration::from_secs(10)).await;
        holder.execute("CREATE TABLE t (x INTEGER)").await.unwrap();
        let mut waiter = open(&path, Duration::from_millis(100)).await;
        holder.execute("BEGIN IMMEDIATE").await.unwrap();
        holder.execute("INSERT INTO t VALUES (1)").await.unwrap();

        let refused = waiter
            .execute("INSERT INTO t VALUES (2)")
            .await
            .unwrap_err();
        assert!(refused.to_string().contains("locked"), "{refused}");

        holder.execute("COMMIT").await.unwrap();
        waiter.execute("INSERT INTO t VALUES (2)").await.unwrap();
        let rows: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM t")
            .fetch_one(&mut waiter)
            .await
            .unwrap();
        assert_eq!(rows, 2);
    }

    #[tokio::test]
    async fn the_commit_hook_checkpoints_the_wal_as_sqlite_would() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let mut connection = open(&path, Duration::from_secs(10)).await;
        connection.execute("CREATE TABLE t (x BLOB)").await.unwrap();
        // Each insert of a 3 KiB blob writes about one 4 KiB page: 3000
        // commits write three times the checkpoint threshold.
        for _ in 0..3000 {
            connection
                .execute("INSERT INTO t VALUES (randomblob(3000))")
                .await
                .unwrap();
        }
        // (busy, frames in the WAL, frames checkpointed): without the
        // hook's checkpoints the WAL would hold every frame written.
        let (_, frames, _): (i64, i64, i64) = sqlx::query_as("PRAGMA wal_checkpoint(PASSIVE)")
            .fetch_one(&mut connection)
            .await
            .unwrap();
        assert!(
            frames < i64::from(AUTOCHECKPOINT_FRAMES) + 50,
            "{frames} frames in the WAL"
        );
    }
}
