//! A connection of the embedded database that waits for the write lock is
//! woken by the commit that frees it (`sqlite::handoff`), not by SQLite's
//! sleeping busy handler. Alone in its test binary: the count it reads is
//! the process's.

use std::time::Duration;

use mnemo_event_store::sqlite;
use sqlx::Executor;

#[tokio::test]
async fn a_waiting_writer_is_handed_the_lock_by_the_commit_that_frees_it() {
    let dir = tempfile::tempdir().unwrap();
    let pool = sqlite::connect(&dir.path().join("mnemo.db")).await.unwrap();
    pool.execute("CREATE TABLE handoff (x INTEGER)")
        .await
        .unwrap();

    // The waiter can also find the lock free between two waits (a commit
    // landing in the microseconds it spends trying), so the round is run
    // three times: a commit must have handed the lock over at least once.
    let mut handed = 0;
    for round in 0..3 {
        let mut holder = pool.acquire().await.unwrap();
        holder.execute("BEGIN IMMEDIATE").await.unwrap();
        holder
            .execute(sqlx::query("INSERT INTO handoff VALUES (?)").bind(round))
            .await
            .unwrap();
        let waiter = {
            let pool = pool.clone();
            tokio::spawn(async move {
                sqlx::query("INSERT INTO handoff VALUES (?)")
                    .bind(100 + round)
                    .execute(&pool)
                    .await
            })
        };
        // Long enough for the waiter to be waiting on the lock.
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!waiter.is_finished(), "the lock is held: the waiter waits");
        let before = sqlite::lock_handoffs();
        holder.execute("COMMIT").await.unwrap();
        waiter.await.unwrap().unwrap();
        if sqlite::lock_handoffs() > before {
            handed += 1;
        }
    }
    assert!(handed >= 1, "no wait was ended by a commit");
    let rows: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM handoff")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(rows, 6, "every write of both sides landed");
}
