//! `mnemo compact`: the embedded database's free pages go back to the file
//! system, everything it holds stays, and a data dir a server has open (or
//! a reindex reads) is refused.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::helpers::{settings_for, spawn_app, spawn_app_in, TestApp};

/// Waits until the relay and every consumer group have nothing left: the
/// bus records of everything posted are committed by every group. Two
/// readings, the second taken over a second after the first: a reading is
/// at most a second old, so the first may predate the last posts' relay.
async fn caught_up(app: &TestApp) {
    let deadline = Instant::now() + Duration::from_secs(60);
    for _ in 0..2 {
        loop {
            let ready = app.public_json("/readyz").await;
            let groups_done = ready["consumer_lag"]
                .as_object()
                .is_some_and(|groups| groups.values().all(|lag| lag == 0));
            if ready["relay_lag"] == 0 && groups_done {
                break;
            }
            assert!(Instant::now() < deadline, "never caught up: {ready}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        tokio::time::sleep(Duration::from_millis(1100)).await;
    }
}

/// One figure read from the file with no server running.
async fn scalar(database: &std::path::Path, sql: &str) -> i64 {
    let pool = mnemo_event_store::sqlite::connect(database).await.unwrap();
    let figure = sqlx::query_scalar::<_, i64>(sql)
        .fetch_one(&pool)
        .await
        .unwrap();
    pool.close().await;
    figure
}

#[tokio::test]
async fn compact_gives_free_pages_back_keeps_every_event_and_refuses_a_running_server() {
    let app = spawn_app().await;
    let token = app.admin("acme");
    for batch in 0..4 {
        let messages: Vec<Value> = (0..100)
            .map(|i| {
                json!({
                    "id": format!("m{batch}-{i}"),
                    "role": if i % 2 == 0 { "user" } else { "assistant" },
                    "content": format!("Turn {i} of talk {batch}: my bike stays in the shed behind tree {i}."),
                    "session": format!("talk-{batch}"),
                })
            })
            .collect();
        app.post_json(
            "/v1/subjects/noa/messages",
            &token,
            json!({ "messages": messages }),
        )
        .await;
    }
    caught_up(&app).await;
    let settings = settings_for(app.dir.path(), &[]);

    // A server has the data dir open: refused, through the command line.
    let refused = std::process::Command::new(mnemo_tests::binary("mnemo"))
        .args(["compact", "--data-dir", app.dir.path().to_str().unwrap()])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{said}");
    assert!(
        said.contains("mnemo serve (pid") && said.contains("stop it first"),
        "{said}"
    );

    let dir = app.stop().await;
    let database = settings.database_file();
    let events = scalar(&database, "SELECT COUNT(*) FROM events").await;
    assert!(events >= 400, "{events} events");

    // A reindex building from the log (it holds its own lock, not the data
    // dir's, until its take-over): refused, naming it, and nothing rewritten.
    let size = std::fs::metadata(&database).unwrap().len();
    std::fs::create_dir_all(dir.path().join("vectors")).unwrap();
    let reindex = std::fs::File::create(dir.path().join("vectors/reindex.lock")).unwrap();
    reindex.try_lock().unwrap();
    let refused = mnemo_app::compact::run(&settings).await.unwrap_err();
    assert!(
        format!("{refused:#}").contains("mnemo reindex is building"),
        "{refused:#}"
    );
    assert_eq!(std::fs::metadata(&database).unwrap().len(), size);
    drop(reindex);

    let compacted = mnemo_app::compact::run(&settings).await.unwrap();
    // What the server's minute had not pruned yet: every message's record
    // (each partition keeps its newest).
    assert!(
        compacted.bus_records_deleted >= 400 - u64::from(settings.bus_partitions),
        "{compacted}"
    );
    assert!(compacted.free_pages > 0, "{compacted}");
    assert!(compacted.after < compacted.before, "{compacted}");
    let wal = dir.path().join("mnemo.db-wal");
    let on_disk = std::fs::metadata(&database).unwrap().len()
        + std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
    assert_eq!(compacted.after, on_disk);
    assert_eq!(
        scalar(&database, "SELECT COUNT(*) FROM events").await,
        events,
        "an event was lost"
    );
    let free = scalar(&database, "PRAGMA freelist_count").await;
    assert_eq!(free, 0, "free pages left in the file");

    // The server starts on it again, and what was said is found.
    let app = spawn_app_in(dir, &[]).await;
    // A token of its own: the first may have expired while `mnemo` was
    // built for the command-line refusal above.
    let token = app.admin("acme");
    let found = app
        .post_json(
            "/v1/subjects/noa/search",
            &token,
            json!({"query": "bike shed tree 7", "include": ["episodes"], "k": 3}),
        )
        .await;
    let results = found["results"].as_array().unwrap();
    assert!(!results.is_empty(), "{found}");
    // The lock is given back: a compaction after the server stops runs.
    let dir = app.stop().await;
    mnemo_app::compact::run(&settings_for(dir.path(), &[]))
        .await
        .unwrap();
}
