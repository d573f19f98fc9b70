//! SQLite allocates through mimalloc and keeps no memory statistics
//! (`sqlite::heap`). Alone in its test binary: both settings are the
//! process's, and take only before SQLite opens its first database.

use std::ffi::c_void;

use libsqlite3_sys as ffi;
use mnemo_event_store::sqlite;
use sqlx::Executor;

extern "C" {
    // mimalloc's: whether a pointer lies in memory mimalloc manages.
    fn mi_is_in_heap_region(p: *const c_void) -> bool;
}

#[tokio::test]
async fn sqlite_allocates_through_mimalloc_and_counts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let pool = sqlite::connect(&dir.path().join("mnemo.db")).await.unwrap();
    assert_eq!(sqlite::configure_heap(), sqlite::Heap::Configured);

    // Rows written and read: SQLite allocates for each, and holds pages.
    pool.execute("CREATE TABLE t (x TEXT)").await.unwrap();
    for n in 0..200 {
        sqlx::query("INSERT INTO t VALUES (?)")
            .bind(format!("{n:>1000}"))
            .execute(&pool)
            .await
            .unwrap();
    }
    let rows: Vec<String> = sqlx::query_scalar("SELECT x FROM t")
        .fetch_all(&pool)
        .await
        .unwrap();
    assert_eq!(rows.len(), 200);

    // SAFETY: plain calls into SQLite's C API; the block it allocates is
    // freed with SQLite's own free.
    unsafe {
        // With its statistics on, SQLite counts every byte it holds here:
        // the schema, the statements, the connections' page caches.
        assert_eq!(ffi::sqlite3_memory_used(), 0);
        let block = ffi::sqlite3_malloc(1000);
        assert!(!block.is_null());
        assert!(mi_is_in_heap_region(block), "SQLite allocated elsewhere");
        assert!(ffi::sqlite3_msize(block) >= 1000);
        ffi::sqlite3_free(block);
    }
}
