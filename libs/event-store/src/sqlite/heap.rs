//! Where SQLite's own allocations come from: the process's allocator
//! (mimalloc), and no global count of them.
//!
//! SQLite allocates through the C library's `malloc` unless told
//! otherwise, and by default it also keeps memory statistics, updated
//! under one process-wide mutex on every allocation and free. The
//! embedded server runs eight connections, each on a thread of its own,
//! allocating for every row they read or bind: in a profile of the load
//! test (`mnemo bench searchable`, 40,000 messages) the C library's
//! allocator took some 4 % of all samples on those threads, and nothing
//! here reads the statistics. Both settings are process-wide and only
//! take before SQLite is first initialised, so [`configure`] runs once,
//! before [`super::connect`] opens the first connection.

use std::ffi::{c_int, c_void};
use std::sync::OnceLock;

use libsqlite3_sys as ffi;

extern "C" {
    // Part of mimalloc's public API, linked in with `libmimalloc-sys`
    // (whose Rust declaration of it sits behind a feature that would pull
    // in another crate).
    fn mi_usable_size(p: *const c_void) -> usize;
}

unsafe extern "C" fn allocate(size: c_int) -> *mut c_void {
    // SQLite never asks for a negative size; a zero one is a valid call.
    libmimalloc_sys::mi_malloc(size.max(0) as usize)
}

unsafe extern "C" fn free(pointer: *mut c_void) {
    libmimalloc_sys::mi_free(pointer)
}

unsafe extern "C" fn reallocate(pointer: *mut c_void, size: c_int) -> *mut c_void {
    libmimalloc_sys::mi_realloc(pointer, size.max(0) as usize)
}

unsafe extern "C" fn size_of(pointer: *mut c_void) -> c_int {
    // At least what was asked for, which is all SQLite requires; its
    // allocations are far below 2 GiB (SQLite caps them at that).
    c_int::try_from(mi_usable_size(pointer)).unwrap_or(c_int::MAX)
}

unsafe extern "C" fn round_up(size: c_int) -> c_int {
    // To a multiple of 8, as SQLite's default allocator does; mimalloc's
    // own size classes are coarser, and `size_of` reports those.
    size.saturating_add(7) & !7
}

unsafe extern "C" fn init(_: *mut c_void) -> c_int {
    ffi::SQLITE_OK
}

unsafe extern "C" fn shutdown(_: *mut c_void) {}

/// How [`configure`] went, once per process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Heap {
    /// SQLite allocates through mimalloc and keeps no statistics.
    Configured,
    /// SQLite was initialised before [`configure`] ran (something opened a
    /// database first), so it keeps its defaults: correct, only slower.
    TooLate,
}

static HEAP: OnceLock<Heap> = OnceLock::new();

/// Points SQLite's allocator at mimalloc and turns its memory statistics
/// off, once per process; later calls return the first call's outcome.
pub fn configure() -> Heap {
    *HEAP.get_or_init(|| {
        let methods = ffi::sqlite3_mem_methods {
            xMalloc: Some(allocate),
            xFree: Some(free),
            xRealloc: Some(reallocate),
            xSize: Some(size_of),
            xRoundup: Some(round_up),
            xInit: Some(init),
            xShutdown: Some(shutdown),
            pAppData: std::ptr::null_mut(),
        };
        // SAFETY: `sqlite3_config` is called with the argument types each
        // option documents (a pointer to a methods structure, which SQLite
        // copies before returning; an int). It refuses, with
        // SQLITE_MISUSE, once SQLite is initialised, and changes nothing
        // then. The callbacks forward to mimalloc, which is thread-safe
        // and returns memory aligned to at least 8 bytes, as SQLite needs.
        let status = unsafe {
            let malloc = ffi::sqlite3_config(ffi::SQLITE_CONFIG_MALLOC, &methods);
            if malloc == ffi::SQLITE_OK {
                ffi::sqlite3_config(ffi::SQLITE_CONFIG_MEMSTATUS, 0 as c_int)
            } else {
                malloc
            }
        };
        if status == ffi::SQLITE_OK {
            Heap::Configured
        } else {
            tracing::warn!(
                code = status,
                "SQLite was initialised before its allocator could be set; it keeps the C library's"
            );
            Heap::TooLate
        }
    })
}
