//! The tokio runtime a server runs on (`mnemo serve`, the four service
//! binaries, the benches' embedded server), and the priority of its
//! threads.
//!
//! Requests are served on actix-web's worker threads; the background work
//! (the relay, the consolidator, the projections, the sweeps) runs on this
//! runtime's threads and its blocking pool. When that work keeps every
//! core busy, the kernel shares the cores evenly among the runnable
//! threads, and a search took its turn behind projection and consolidation
//! work that nobody waits for: on this 2-core machine, search p99 under
//! `bench pipeline`'s load was 44.6 and 38.4 ms with even shares, 25.1 and
//! 24.2 ms with the background 10 lower (docs/performance.md, "Search
//! before the pipeline").
//! So this runtime's threads run `background_nice` lower than the thread
//! that builds it (default 10: about a tenth of a request thread's share
//! of a core both want). Ingest does not lose what the pipeline gives up:
//! pacing (`backlog.slowdown_seconds`) makes it wait when the consolidator
//! falls behind.
//!
//! The HTTP server's worker threads are started by the thread that first
//! polls the server's future, and inherit that thread's priority, so
//! `Application::run` must be awaited by `block_on` on the thread that
//! built this runtime, never spawned onto it: spawned, the request threads
//! would run at the background's priority too. (`tests/restart.rs` reads
//! the priorities of a running `mnemo serve`'s threads.) Other threads
//! inherit as well: an SQLite connection's thread has the priority of the
//! thread that opened it. So the embedded database has two pools
//! (`crate::stores`): the pipeline's, opened by a task of this runtime,
//! and the one kept for the HTTP handlers, opened by the thread that
//! builds the server.

use tokio::runtime::{Builder, Runtime};

/// The name of the runtime's threads, as `/proc` and `top` show them
/// (at most 15 bytes are kept).
pub const THREAD_NAME: &str = "mnemo-pipeline";

/// A multi-threaded runtime whose threads (workers and blocking pool) run
/// `background_nice` lower than the calling thread, capped at 19.
pub fn build(background_nice: u8) -> std::io::Result<Runtime> {
    let target = (current_nice()? + i32::from(background_nice)).min(19);
    Builder::new_multi_thread()
        .enable_all()
        .thread_name(THREAD_NAME)
        // An absolute value, not an increment: a blocking-pool thread is
        // started by a worker that already runs at `target` and inherits
        // it, so adding again would sink it further.
        .on_thread_start(move || {
            if let Err(error) = set_nice(target) {
                tracing::warn!(nice = target, error = %error, "cannot lower a background thread's priority; it keeps its parent's");
            }
        })
        .build()
}

/// The calling thread's nice value (on Linux, a thread's own).
pub fn current_nice() -> std::io::Result<i32> {
    // getpriority returns -1 for a nice of -1 as well as for a failure;
    // only errno, cleared before, tells them apart.
    // SAFETY: errno is this thread's; getpriority reads this thread.
    unsafe {
        *libc::__errno_location() = 0;
        let nice = libc::getpriority(libc::PRIO_PROCESS, 0);
        match std::io::Error::last_os_error() {
            error if nice == -1 && error.raw_os_error() != Some(0) => Err(error),
            _ => Ok(nice),
        }
    }
}

/// Sets the calling thread's nice value (`who` 0 is the calling thread: on
/// Linux the value is per thread). Lowering it below the current value
/// needs a privilege this process does not ask for.
fn set_nice(nice: i32) -> std::io::Result<()> {
    // SAFETY: a plain system call on the calling thread.
    match unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) } {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_and_blocking_threads_run_lower_by_the_increment_and_only_they() {
        // A thread of its own, so the test harness's threads keep theirs.
        std::thread::spawn(|| {
            let base = current_nice().unwrap();
            let runtime = build(7).unwrap();
            let expected = (base + 7).min(19);
            let (worker, nested, blocking) = runtime.block_on(async {
                let worker = tokio::spawn(async { current_nice().unwrap() })
                    .await
                    .unwrap();
                // The first blocking thread is started by a worker, which
                // runs at the target already: inherited, then set, not
                // lowered again.
                let nested = tokio::spawn(async {
                    tokio::task::spawn_blocking(|| current_nice().unwrap())
                        .await
                        .unwrap()
                })
                .await
                .unwrap();
                // With that one busy, the next is started by this thread,
                // which runs at the base.
                let busy = tokio::task::spawn_blocking(|| {
                    std::thread::sleep(std::time::Duration::from_millis(100))
                });
                let blocking = tokio::task::spawn_blocking(|| current_nice().unwrap())
                    .await
                    .unwrap();
                busy.await.unwrap();
                (worker, nested, blocking)
            });
            assert_eq!(worker, expected);
            assert_eq!(blocking, expected);
            assert_eq!(nested, expected);
            assert_eq!(
                current_nice().unwrap(),
                base,
                "the building thread keeps its own"
            );
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_zero_increment_leaves_every_thread_as_it_was() {
        std::thread::spawn(|| {
            let base = current_nice().unwrap();
            let runtime = build(0).unwrap();
            let worker = runtime.block_on(async {
                tokio::spawn(async { current_nice().unwrap() })
                    .await
                    .unwrap()
            });
            assert_eq!(worker, base);
        })
        .join()
        .unwrap();
    }
}
