//! The relay's read on PostgreSQL: an event committed while an older
//! transaction is still open is held back until that one commits, so the
//! relay never moves its checkpoint past an event it has not seen.
#![cfg(feature = "postgres")]

use mnemo_event_store::postgres::PostgresEventStore;
use mnemo_event_store::testsuite::{event, tenant, wait_for_head};
use mnemo_event_store::{EventStore, ExpectedVersion};
use mnemo_pg::testsupport::TestDatabase;
use mnemo_pg::APP_ROLE;
use sqlx::{Connection, PgConnection};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_committed_behind_an_open_transaction_waits_for_it() {
    let db = TestDatabase::new().await;
    let store = PostgresEventStore::new(db.tenant_pool(), db.system_pool());
    let start = store.head_position().await.unwrap();

    // T1: appends through the same table trigger, and stays open.
    let mut conn = PgConnection::connect_with(&db.options_as(APP_ROLE))
        .await
        .unwrap();
    let mut t1 = mnemo_pg::begin_tenant(&mut conn, &tenant("t1"))
        .await
        .unwrap();
    let (first_id, first_position): (String, i64) = sqlx::query_as(
        "INSERT INTO events (event_id, tenant_id, stream_id, stream_version, event_type, \
         schema_version, actor, payload, metadata, recorded_at) \
         VALUES (gen_random_uuid()::text, 't1', 'conversation-1', 1, 'MessageReceived', 1, 'a', \
         '{}', '{\"actor\": \"a\"}', now()) RETURNING event_id, global_position",
    )
    .fetch_one(&mut *t1)
    .await
    .unwrap();

    // T2: appends and commits after T1 took its position.
    let second = store
        .append(
            &tenant("t2"),
            "conversation-2",
            ExpectedVersion::Any,
            vec![event("MessageReceived", None, "b")],
        )
        .await
        .unwrap();
    let second_position = second.events[0].global_position;
    assert!(first_position < second_position);

    // T2 is committed and visible to its tenant...
    assert_eq!(
        store
            .read_stream(&tenant("t2"), "conversation-2")
            .await
            .unwrap()
            .len(),
        1
    );
    // ...but not to the relay while T1, older, may still commit below it.
    assert!(store.read_all(start, 100).await.unwrap().is_empty());
    assert!(store.head_position().await.unwrap() < first_position);

    t1.commit().await.unwrap();
    wait_for_head(&store, second_position).await;
    let read = store.read_all(start, 100).await.unwrap();
    let ids: Vec<String> = read.iter().map(|e| e.event_id.to_string()).collect();
    assert_eq!(ids, vec![first_id, second.events[0].event_id.to_string()]);
    assert_eq!(
        read.iter().map(|e| e.global_position).collect::<Vec<_>>(),
        vec![first_position, second_position]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolled_back_append_leaves_no_hole_the_relay_waits_on() {
    let db = TestDatabase::new().await;
    let store = PostgresEventStore::new(db.tenant_pool(), db.system_pool());
    let start = store.head_position().await.unwrap();
    let mut conn = PgConnection::connect_with(&db.options_as(APP_ROLE))
        .await
        .unwrap();
    let mut aborted = mnemo_pg::begin_tenant(&mut conn, &tenant("t1"))
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO events (event_id, tenant_id, stream_id, stream_version, event_type, \
         schema_version, actor, payload, metadata, recorded_at) \
         VALUES (gen_random_uuid()::text, 't1', 's', 1, 'MessageReceived', 1, 'a', '{}', '{}', now())",
    )
    .execute(&mut *aborted)
    .await
    .unwrap();
    let later = store
        .append(
            &tenant("t1"),
            "s-2",
            ExpectedVersion::Any,
            vec![event("MessageReceived", None, "a")],
        )
        .await
        .unwrap();
    aborted.rollback().await.unwrap();
    wait_for_head(&store, later.events[0].global_position).await;
    let read = store.read_all(start, 100).await.unwrap();
    assert_eq!(read.len(), 1);
    assert_eq!(read[0].event_id, later.events[0].event_id);
}

/// The interleaving a sequence-numbered log gets wrong: T takes its
/// transaction id, U takes a position, T takes a later position and
/// commits while U is still open. The relay publishes T's events; U's must
/// still come after them, not below the relay's checkpoint.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_interleaved_inside_another_is_not_skipped() {
    let db = TestDatabase::new().await;
    let store = PostgresEventStore::new(db.tenant_pool(), db.system_pool());
    let start = store.head_position().await.unwrap();
    let insert = "INSERT INTO events (event_id, tenant_id, stream_id, stream_version, event_type, \
         schema_version, actor, payload, metadata, recorded_at) \
         VALUES (gen_random_uuid()::text, 't1', $1, $2, 'MessageReceived', 1, 'a', '{}', \
         '{\"actor\": \"a\"}', now()) \
         RETURNING global_position";
    let mut t_conn = PgConnection::connect_with(&db.options_as(APP_ROLE))
        .await
        .unwrap();
    let mut u_conn = PgConnection::connect_with(&db.options_as(APP_ROLE))
        .await
        .unwrap();
    let mut t = mnemo_pg::begin_tenant(&mut t_conn, &tenant("t1"))
        .await
        .unwrap();
    let mut u = mnemo_pg::begin_tenant(&mut u_conn, &tenant("t1"))
        .await
        .unwrap();
    let t_first: i64 = sqlx::query_scalar(insert)
        .bind("stream-t")
        .bind(1_i64)
        .fetch_one(&mut *t)
        .await
        .unwrap();
    let u_only: i64 = sqlx::query_scalar(insert)
        .bind("stream-u")
        .bind(1_i64)
        .fetch_one(&mut *u)
        .await
        .unwrap();
    let t_second: i64 = sqlx::query_scalar(insert)
        .bind("stream-t")
        .bind(2_i64)
        .fetch_one(&mut *t)
        .await
        .unwrap();
    t.commit().await.unwrap();
    wait_for_head(&store, t_second).await;

    // The relay publishes T's two events and moves its checkpoint.
    let published = store.read_all(start, 100).await.unwrap();
    let positions: Vec<i64> = published.iter().map(|e| e.global_position).collect();
    assert_eq!(positions, vec![t_first, t_second]);
    let checkpoint = t_second;

    // U commits later: it must still be ahead of the checkpoint.
    u.commit().await.unwrap();
    assert!(u_only > checkpoint);
    wait_for_head(&store, u_only).await;
    let next = store.read_all(checkpoint, 100).await.unwrap();
    assert_eq!(
        next.iter().map(|e| e.global_position).collect::<Vec<_>>(),
        vec![u_only]
    );
}

/// A waiting relay is woken by an append made through another store
/// instance (as from another process): by the commit's notification, since
/// its head poll is set far beyond the test's patience.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_append_is_woken_by_another_process_commit() {
    use std::time::{Duration, Instant};

    let db = TestDatabase::new().await;
    let relay_side = PostgresEventStore::new(db.tenant_pool(), db.system_pool())
        .with_head_poll(Duration::from_secs(120));
    let writer_side = PostgresEventStore::new(db.tenant_pool(), db.system_pool());
    let head = relay_side.head_position().await.unwrap();
    let waiter = tokio::spawn(async move {
        let started = Instant::now();
        relay_side
            .wait_for_append(head, Duration::from_secs(60))
            .await;
        (started.elapsed(), relay_side.head_position().await.unwrap())
    });
    // Long enough for the waiter to start listening.
    tokio::time::sleep(Duration::from_millis(500)).await;
    writer_side
        .append(
            &tenant("t1"),
            "s",
            ExpectedVersion::Any,
            vec![event("MessageReceived", None, "a")],
        )
        .await
        .unwrap();
    let (waited, seen) = waiter.await.unwrap();
    assert!(seen > head);
    // Other tests of this binary may hold the cluster-wide horizon back for
    // a moment; the re-checks after the notification cover that.
    assert!(waited < Duration::from_secs(15), "{waited:?}");
}
