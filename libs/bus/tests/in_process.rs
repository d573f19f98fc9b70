//! The Bus contract on the in-process adapter, and the relay and consumer
//! loop over it with a real SQLite event store.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use mnemo_bus::in_process::{partition_for, InProcessBus};
use mnemo_bus::relay::SqliteCheckpointStore;
use mnemo_bus::{
    bus_contract_tests, run_consumer, run_consumer_until, topics, Bus, ConsumerOptions,
    EventEnvelope, EventHandler, HandlerError, Relay,
};
use mnemo_domain::{EventId, RecordedEvent};
use mnemo_event_store::sqlite::{self, SqliteEventStore};
use mnemo_event_store::testsuite::{event, subject, tenant};
use mnemo_event_store::{EventStore, ExpectedVersion};
use sqlx::SqlitePool;

struct Db {
    _dir: tempfile::TempDir,
    pool: SqlitePool,
}

async fn db() -> Db {
    let dir = tempfile::tempdir().unwrap();
    let pool = sqlite::connect(&dir.path().join("mnemo.db")).await.unwrap();
    Db { _dir: dir, pool }
}

async fn open_bus(db: Arc<Db>) -> Arc<dyn Bus> {
    Arc::new(InProcessBus::new(db.pool.clone(), 3))
}

bus_contract_tests!(setup: db(), open: open_bus);

#[tokio::test]
async fn a_second_member_of_a_group_is_refused() {
    let db = db().await;
    let bus = InProcessBus::new(db.pool.clone(), 1);
    let first = bus.subscribe("g", &["t"]).await.unwrap();
    assert!(bus.subscribe("g", &["t"]).await.is_err());
    drop(first);
    assert!(bus.subscribe("g", &["t"]).await.is_ok());
}

/// A partition is read ahead in chunks: a long one is still delivered in
/// order across them, and what was read ahead but not committed is
/// delivered again to the next member.
#[tokio::test]
async fn records_read_ahead_and_not_committed_come_again() {
    let db = db().await;
    let bus = InProcessBus::new(db.pool.clone(), 1);
    let records = (0..300)
        .map(|i| mnemo_bus::testsuite::record("t/s", &i.to_string()))
        .collect();
    bus.publish("t.ahead", records).await.unwrap();
    let payload = |d: &mnemo_bus::Delivery| String::from_utf8(d.payload.clone()).unwrap();
    {
        let mut sub = bus.subscribe("g-ahead", &["t.ahead"]).await.unwrap();
        let mut got = Vec::new();
        for _ in 0..200 {
            got.push(sub.poll(Duration::from_secs(5)).await.unwrap().unwrap());
        }
        let expected: Vec<String> = (0..200).map(|i| i.to_string()).collect();
        assert_eq!(got.iter().map(payload).collect::<Vec<_>>(), expected);
        // Handled up to 149; the rest was read ahead or delivered only.
        sub.commit(&got[149]).await.unwrap();
    }
    let mut sub = bus.subscribe("g-ahead", &["t.ahead"]).await.unwrap();
    let mut rest = Vec::new();
    while let Some(delivery) = sub.poll(Duration::from_millis(200)).await.unwrap() {
        rest.push(payload(&delivery));
    }
    let expected: Vec<String> = (150..300).map(|i| i.to_string()).collect();
    assert_eq!(rest, expected);
}

/// A publish of more records than one statement inserts (500): every
/// record lands once, each partition's offsets follow on from the last
/// publish without a gap, and a key's records keep their order.
#[tokio::test]
async fn a_publish_longer_than_a_statement_keeps_offsets_and_order() {
    let db = db().await;
    let bus = InProcessBus::new(db.pool.clone(), 3);
    let keys = ["t/a", "t/b", "t/c", "t/d"];
    let record = |i: usize| mnemo_bus::testsuite::record(keys[i % 4], &i.to_string());
    bus.publish("t.long", (0..7).map(record).collect())
        .await
        .unwrap();
    bus.publish("t.long", (7..1207).map(record).collect())
        .await
        .unwrap();
    let mut sub = bus.subscribe("g-long", &["t.long"]).await.unwrap();
    let mut by_partition: std::collections::BTreeMap<i32, Vec<i64>> = Default::default();
    let mut by_key: std::collections::BTreeMap<String, Vec<usize>> = Default::default();
    while let Some(delivery) = sub.poll(Duration::from_millis(200)).await.unwrap() {
        by_partition
            .entry(delivery.partition)
            .or_default()
            .push(delivery.offset);
        let n: usize = String::from_utf8(delivery.payload)
            .unwrap()
            .parse()
            .unwrap();
        by_key.entry(delivery.key).or_default().push(n);
    }
    for offsets in by_partition.values() {
        let expected: Vec<i64> = (0..offsets.len() as i64).collect();
        assert_eq!(offsets, &expected);
    }
    assert_eq!(by_partition.values().map(Vec::len).sum::<usize>(), 1207);
    for (k, key) in keys.iter().enumerate() {
        let expected: Vec<usize> = (0..1207).filter(|i| i % 4 == k).collect();
        assert_eq!(by_key[*key], expected, "{key}");
    }
}

/// A bus knows each partition's next offset without asking the table; a
/// second bus on the same database hands out offsets the first does not
/// know of, and the first's next publish still lands after them, in
/// order, with no gap and nothing lost.
#[tokio::test]
async fn two_buses_on_one_database_keep_one_run_of_offsets() {
    let db = db().await;
    let (first, second) = (
        InProcessBus::new(db.pool.clone(), 1),
        InProcessBus::new(db.pool.clone(), 1),
    );
    let records = |range: std::ops::Range<usize>| {
        range
            .map(|i| mnemo_bus::testsuite::record("t/s", &i.to_string()))
            .collect::<Vec<_>>()
    };
    first.publish("t.shared", records(0..3)).await.unwrap();
    second.publish("t.shared", records(3..5)).await.unwrap();
    first.publish("t.shared", records(5..7)).await.unwrap();
    second.publish("t.shared", records(7..8)).await.unwrap();
    let mut sub = first.subscribe("g-shared", &["t.shared"]).await.unwrap();
    let mut got = Vec::new();
    while let Some(delivery) = sub.poll(Duration::from_millis(200)).await.unwrap() {
        let n: i64 = String::from_utf8(delivery.payload.clone())
            .unwrap()
            .parse()
            .unwrap();
        got.push((delivery.offset, n));
    }
    let expected: Vec<(i64, i64)> = (0..8).map(|i| (i, i)).collect();
    assert_eq!(got, expected);
}

async fn store_and_bus(db: &Db) -> (Arc<SqliteEventStore>, Arc<InProcessBus>) {
    (
        Arc::new(SqliteEventStore::new(db.pool.clone()).await.unwrap()),
        Arc::new(InProcessBus::new(db.pool.clone(), 2)),
    )
}

/// Runs the relay once: what the store holds is on the bus.
async fn publish_appended(db: &Db, store: &Arc<SqliteEventStore>, bus: &Arc<InProcessBus>) {
    Relay::new(
        store.clone(),
        bus.clone(),
        Arc::new(SqliteCheckpointStore::new(db.pool.clone())),
    )
    .run_once()
    .await
    .unwrap();
}

#[tokio::test]
async fn the_relay_publishes_committed_events_in_order_once_per_checkpoint() {
    let db = db().await;
    let (store, bus) = store_and_bus(&db).await;
    let t = tenant("t1");
    let s = subject("s1");
    let mut ids = Vec::new();
    for i in 0..6 {
        let kind = if i % 2 == 0 {
            "MessageReceived"
        } else {
            "MemoryCreated"
        };
        let e = event(kind, Some(&s), "a");
        ids.push((kind, e.event_id));
        store
            .append(&t, "st", ExpectedVersion::Any, vec![e])
            .await
            .unwrap();
    }
    let relay = Relay::new(
        store.clone(),
        bus.clone(),
        Arc::new(SqliteCheckpointStore::new(db.pool.clone())),
    );
    assert_eq!(relay.run_once().await.unwrap(), 6);
    assert_eq!(relay.run_once().await.unwrap(), 0, "checkpoint moved");
    assert_eq!(relay.stats().lag(), 0);

    let mut messages = bus.subscribe("g1", &[topics::MESSAGES]).await.unwrap();
    let mut got = Vec::new();
    while let Some(d) = messages.poll(Duration::from_millis(200)).await.unwrap() {
        assert_eq!(d.key, "t1/s1");
        assert_eq!(d.header("tenant"), Some("t1"));
        let envelope: EventEnvelope = serde_json::from_slice(&d.payload).unwrap();
        assert!(
            envelope.payload["content"]["$sealed"].is_object(),
            "stays sealed on the bus"
        );
        got.push(envelope.event_id);
    }
    let expected: Vec<EventId> = ids
        .iter()
        .filter(|(k, _)| *k == "MessageReceived")
        .map(|(_, id)| *id)
        .collect();
    assert_eq!(got, expected);

    // A new relay instance (a restart) starts from the saved checkpoint.
    let restarted = Relay::new(
        store.clone(),
        bus.clone(),
        Arc::new(SqliteCheckpointStore::new(db.pool.clone())),
    );
    assert_eq!(restarted.run_once().await.unwrap(), 0);
    store
        .append(
            &t,
            "st",
            ExpectedVersion::Any,
            vec![event("MemoryCreated", Some(&s), "a")],
        )
        .await
        .unwrap();
    assert_eq!(restarted.run_once().await.unwrap(), 1);
}

/// A running relay publishes every event appended one at a time, in
/// order; while they trickle in, it gathers them into fewer batches (each
/// a transaction, and a wake-up of every consumer) than appends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_relay_gathers_a_trickle_of_appends_into_fewer_batches() {
    let db = db().await;
    let store = Arc::new(SqliteEventStore::new(db.pool.clone()).await.unwrap());
    let bus = Arc::new(InProcessBus::keeping_relay_checkpoints(db.pool.clone(), 1));
    sqlx::query("CREATE TABLE moves (position INTEGER NOT NULL)")
        .execute(&db.pool)
        .await
        .unwrap();
    for when in ["INSERT", "UPDATE"] {
        sqlx::query(&format!(
            "CREATE TRIGGER count_{when} AFTER {when} ON relay_checkpoints \
             BEGIN INSERT INTO moves VALUES (NEW.position); END"
        ))
        .execute(&db.pool)
        .await
        .unwrap();
    }
    let relay = Arc::new(Relay::new(
        store.clone(),
        bus.clone(),
        Arc::new(SqliteCheckpointStore::new(db.pool.clone())),
    ));
    let running = tokio::spawn({
        let relay = relay.clone();
        async move { relay.run().await }
    });
    let (t, s) = (tenant("t1"), subject("s1"));
    let mut ids = Vec::new();
    for _ in 0..20 {
        let e = event("MessageReceived", Some(&s), "a");
        ids.push(e.event_id);
        store
            .append(&t, "st", ExpectedVersion::Any, vec![e])
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let mut messages = bus.subscribe("g1", &[topics::MESSAGES]).await.unwrap();
    let mut got = Vec::new();
    while got.len() < ids.len() {
        let d = messages
            .poll(Duration::from_secs(10))
            .await
            .unwrap()
            .expect("every appended event is published");
        let envelope: EventEnvelope = serde_json::from_slice(&d.payload).unwrap();
        got.push(envelope.event_id);
    }
    running.abort();
    assert_eq!(got, ids);
    let moves: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM moves")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    // One batch per append without the gathering; the appends span about
    // 40 ms, and a batch gathers for 20.
    assert!(moves <= 10, "{moves} batches for 20 appends");
}

/// Where the bus keeps the relay's checkpoint, a batch's records and the
/// checkpoint commit together: a checkpoint that cannot be saved leaves
/// nothing published (published and then refused, the batch would go out
/// again on the next run), and the batch once saved is published once.
#[tokio::test]
async fn the_relay_publishes_a_batch_and_its_checkpoint_in_one_transaction() {
    let db = db().await;
    let store = Arc::new(SqliteEventStore::new(db.pool.clone()).await.unwrap());
    let bus = Arc::new(InProcessBus::keeping_relay_checkpoints(db.pool.clone(), 2));
    assert!(bus.keeps_relay_checkpoints());
    assert!(!InProcessBus::new(db.pool.clone(), 2).keeps_relay_checkpoints());
    let (t, s) = (tenant("t1"), subject("s1"));
    for kind in ["MessageReceived", "MemoryCreated", "MessageReceived"] {
        store
            .append(
                &t,
                "st",
                ExpectedVersion::Any,
                vec![event(kind, Some(&s), "a")],
            )
            .await
            .unwrap();
    }
    let relay = Relay::new(
        store.clone(),
        bus.clone(),
        Arc::new(SqliteCheckpointStore::new(db.pool.clone())),
    );
    let records = || async {
        sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM bus_records")
            .fetch_one(&db.pool)
            .await
            .unwrap()
    };
    sqlx::query(
        "CREATE TRIGGER refuse_checkpoint BEFORE INSERT ON relay_checkpoints \
         BEGIN SELECT RAISE(ABORT, 'checkpoint refused'); END",
    )
    .execute(&db.pool)
    .await
    .unwrap();
    let refused = relay.run_once().await.unwrap_err();
    assert!(
        refused.to_string().contains("checkpoint refused"),
        "{refused}"
    );
    assert_eq!(
        records().await,
        0,
        "nothing published without its checkpoint"
    );

    sqlx::query("DROP TRIGGER refuse_checkpoint")
        .execute(&db.pool)
        .await
        .unwrap();
    assert_eq!(relay.run_once().await.unwrap(), 3);
    assert_eq!(relay.run_once().await.unwrap(), 0, "checkpoint moved");
    assert_eq!(records().await, 3);
    let position: i64 = sqlx::query_scalar("SELECT position FROM relay_checkpoints")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(position, store.head_position().await.unwrap());
    let mut messages = bus.subscribe("g1", &[topics::MESSAGES]).await.unwrap();
    let mut got = 0;
    while messages
        .poll(Duration::from_millis(200))
        .await
        .unwrap()
        .is_some()
    {
        got += 1;
    }
    assert_eq!(got, 2, "each message once, in its topic");
}

#[derive(Default)]
struct Recorder {
    seen: Mutex<Vec<EventId>>,
    failures_left: AtomicUsize,
    always_fail: Option<EventId>,
}

#[async_trait]
impl EventHandler for Recorder {
    async fn handle(&self, event: &RecordedEvent) -> Result<(), HandlerError> {
        if Some(event.event_id) == self.always_fail {
            return Err(HandlerError::Retryable("store is down".into()));
        }
        if self.failures_left.load(Ordering::SeqCst) > 0 {
            self.failures_left.fetch_sub(1, Ordering::SeqCst);
            return Err(HandlerError::Retryable("transient".into()));
        }
        let mut seen = self.seen.lock().unwrap();
        if !seen.contains(&event.event_id) {
            seen.push(event.event_id);
        }
        Ok(())
    }
}

#[tokio::test]
async fn the_consumer_retries_dead_letters_and_moves_on() {
    let db = db().await;
    let (store, bus) = store_and_bus(&db).await;
    let t = tenant("t1");
    let poison = event("MessageReceived", None, "a");
    let good = event("MessageReceived", None, "a");
    let (poison_id, good_id) = (poison.event_id, good.event_id);
    store
        .append(&t, "c", ExpectedVersion::Any, vec![poison, good])
        .await
        .unwrap();
    let relay = Relay::new(
        store.clone(),
        bus.clone(),
        Arc::new(SqliteCheckpointStore::new(db.pool.clone())),
    );
    relay.run_once().await.unwrap();

    let handler = Arc::new(Recorder {
        failures_left: AtomicUsize::new(2),
        always_fail: Some(poison_id),
        ..Default::default()
    });
    let mut options = ConsumerOptions::new("g-consumer", &[topics::MESSAGES]);
    options.first_backoff = Duration::from_millis(1);
    options.poll_timeout = Duration::from_millis(50);
    let task = tokio::spawn(run_consumer(bus.clone(), options.clone(), handler.clone()));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while handler.seen.lock().unwrap().is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "good event never handled"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Handled is not yet committed: on a busy machine the commit after the
    // run can come after a look 20 ms later.
    while bus.lag("g-consumer", &[topics::MESSAGES]).await.unwrap() > 0 {
        assert!(tokio::time::Instant::now() < deadline, "never committed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    task.abort();
    let _ = task.await;
    assert_eq!(*handler.seen.lock().unwrap(), vec![good_id]);

    let mut dead = bus
        .subscribe("inspector", &[topics::DEAD_LETTERS])
        .await
        .unwrap();
    let letter = dead
        .poll(Duration::from_secs(2))
        .await
        .unwrap()
        .expect("dead letter");
    assert_eq!(
        letter.header("event_id"),
        Some(poison_id.to_string().as_str())
    );
    assert!(letter
        .header("dead_letter.error")
        .unwrap()
        .contains("store is down"));
    assert!(dead
        .poll(Duration::from_millis(100))
        .await
        .unwrap()
        .is_none());

    // Both records were committed: a restarted member has nothing left.
    let mut restarted = bus
        .subscribe("g-consumer", &[topics::MESSAGES])
        .await
        .unwrap();
    assert!(restarted
        .poll(Duration::from_millis(100))
        .await
        .unwrap()
        .is_none());
}

/// Records the trace each handled event ran in.
#[derive(Default)]
struct TraceRecorder {
    traceparents: Mutex<Vec<Option<String>>>,
}

#[async_trait]
impl EventHandler for TraceRecorder {
    async fn handle(&self, _event: &RecordedEvent) -> Result<(), HandlerError> {
        self.traceparents
            .lock()
            .unwrap()
            .push(mnemo_telemetry::current_traceparent());
        Ok(())
    }
}

/// The relay copies an event's `traceparent` into the record's headers and
/// the consumer loop runs the handler in a child span of that trace, so one
/// trace spans the request that appended the event and every consumer of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_handler_runs_in_the_trace_of_the_appended_event() {
    trace_spans();

    let db = db().await;
    let (store, bus) = store_and_bus(&db).await;
    let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let mut traced = event("MessageReceived", Some(&subject("s1")), "a");
    traced.metadata.traceparent = Some(traceparent.to_owned());
    let untraced = event("MessageReceived", Some(&subject("s1")), "a");
    store
        .append(
            &tenant("t1"),
            "c",
            ExpectedVersion::Any,
            vec![traced, untraced],
        )
        .await
        .unwrap();
    publish_appended(&db, &store, &bus).await;

    let handler = Arc::new(TraceRecorder::default());
    let mut options = ConsumerOptions::new("g-trace", &[topics::MESSAGES]);
    options.poll_timeout = Duration::from_millis(50);
    let task = tokio::spawn(run_consumer(bus.clone(), options, handler.clone()));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while handler.traceparents.lock().unwrap().len() < 2 {
        assert!(tokio::time::Instant::now() < deadline, "events not handled");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    task.abort();
    let _ = task.await;

    let seen = handler.traceparents.lock().unwrap().clone();
    let child = seen[0].as_deref().expect("a span around the handler");
    assert_eq!(child.split('-').nth(1), traceparent.split('-').nth(1));
    assert_ne!(child, traceparent, "a child span, not the caller's span");
    let own = seen[1].as_deref().expect("a span around the handler");
    assert_ne!(
        own.split('-').nth(1),
        traceparent.split('-').nth(1),
        "an event without a traceparent starts its own trace"
    );
}

/// Gives every span of this test binary an OpenTelemetry context (nothing is
/// exported). Global rather than per test: tracing caches per call site
/// whether anyone listens, and a thread-local subscriber races with tests on
/// other threads that reach the same call site without one.
fn trace_spans() {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        use tracing_subscriber::layer::SubscriberExt;
        let subscriber =
            tracing_subscriber::registry().with(mnemo_telemetry::otel_layer_for_tests());
        tracing::subscriber::set_global_default(subscriber).expect("no other global subscriber");
    });
}

/// Holds what it handled until `flush`, which fails while `refuse` is set:
/// a handler that buffers its writes.
#[derive(Default)]
struct Buffering {
    pending: Mutex<Vec<EventId>>,
    durable: Mutex<Vec<EventId>>,
    /// What was pending when the consumer settled a run it did not flush.
    settled: Mutex<Vec<EventId>>,
    refuse: std::sync::atomic::AtomicBool,
    flushes: AtomicUsize,
}

#[async_trait]
impl EventHandler for Buffering {
    async fn handle(&self, event: &RecordedEvent) -> Result<(), HandlerError> {
        self.pending.lock().unwrap().push(event.event_id);
        Ok(())
    }

    async fn flush(&self) -> Result<(), HandlerError> {
        if self.refuse.load(Ordering::SeqCst) {
            return Err(HandlerError::Retryable("disk is full".into()));
        }
        let mut pending = self.pending.lock().unwrap();
        if !pending.is_empty() {
            self.flushes.fetch_add(1, Ordering::SeqCst);
        }
        self.durable.lock().unwrap().append(&mut pending);
        Ok(())
    }

    async fn settle(&self) -> Result<(), HandlerError> {
        let pending = self.pending.lock().unwrap();
        let mut settled = self.settled.lock().unwrap();
        for id in pending.iter() {
            if !settled.contains(id) {
                settled.push(*id);
            }
        }
        Ok(())
    }
}

#[tokio::test]
async fn the_consumer_commits_a_run_only_after_its_handler_flushed_it() {
    let db = db().await;
    let (store, bus) = store_and_bus(&db).await;
    let t = tenant("t1");
    let s = subject("s1");
    let events: Vec<_> = (0..40)
        .map(|_| event("MessageReceived", Some(&s), "a"))
        .collect();
    let ids: Vec<EventId> = events.iter().map(|e| e.event_id).collect();
    store
        .append(&t, "c", ExpectedVersion::Any, events)
        .await
        .unwrap();
    publish_appended(&db, &store, &bus).await;

    let handler = Arc::new(Buffering::default());
    handler.refuse.store(true, Ordering::SeqCst);
    let mut options = ConsumerOptions::new("g-flush", &[topics::MESSAGES]);
    options.poll_timeout = Duration::from_millis(50);
    let task = tokio::spawn(run_consumer(bus.clone(), options, handler.clone()));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while handler.pending.lock().unwrap().len() < ids.len() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "records not handled"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Handled but not flushed: nothing is acknowledged.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        bus.lag("g-flush", &[topics::MESSAGES]).await.unwrap(),
        40,
        "committed before the flush"
    );

    handler.refuse.store(false, Ordering::SeqCst);
    while bus.lag("g-flush", &[topics::MESSAGES]).await.unwrap() > 0 {
        assert!(tokio::time::Instant::now() < deadline, "never committed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    task.abort();
    let _ = task.await;
    assert_eq!(*handler.durable.lock().unwrap(), ids);
    // The waiting records were one run: one flush, not one per record.
    assert_eq!(handler.flushes.load(Ordering::SeqCst), 1);
}

/// A consumer asked to stop flushes and commits what it handled since its
/// last commit before it returns, even where its linger would have held it
/// back: the next start is handed nothing again. Dropped instead, it
/// commits nothing, and the next member of the group gets every record
/// again.
#[tokio::test]
async fn a_consumer_asked_to_stop_commits_what_it_handled_and_a_dropped_one_does_not() {
    let db = db().await;
    let (store, bus) = store_and_bus(&db).await;
    let events: Vec<_> = (0..30)
        .map(|_| event("MessageReceived", Some(&subject("s1")), "a"))
        .collect();
    let ids: Vec<EventId> = events.iter().map(|e| e.event_id).collect();
    store
        .append(&tenant("t1"), "c", ExpectedVersion::Any, events)
        .await
        .unwrap();
    publish_appended(&db, &store, &bus).await;
    let lag = |group: &'static str| {
        let bus = bus.clone();
        async move { bus.lag(group, &[topics::MESSAGES]).await.unwrap() }
    };
    // A linger far longer than the test: only a stop flushes these runs.
    let options = |group: &str| {
        let mut options = ConsumerOptions::new(group, &[topics::MESSAGES]);
        options.poll_timeout = Duration::from_millis(50);
        options.linger = Some(Duration::from_secs(3600));
        options
    };
    let handled = |handler: Arc<Buffering>| async move {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while handler.pending.lock().unwrap().len() < 30 {
            assert!(tokio::time::Instant::now() < deadline, "not handled");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };

    let dropped = Arc::new(Buffering::default());
    let task = tokio::spawn(run_consumer(
        bus.clone(),
        options("g-dropped"),
        dropped.clone(),
    ));
    handled(dropped.clone()).await;
    task.abort();
    let _ = task.await;
    assert_eq!(lag("g-dropped").await, 30, "a dropped consumer committed");
    assert!(dropped.durable.lock().unwrap().is_empty());

    let stopping = Arc::new(Buffering::default());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(run_consumer_until(
        bus.clone(),
        options("g-stopped"),
        stopping.clone(),
        async move {
            let _ = stopped.await;
        },
    ));
    handled(stopping.clone()).await;
    assert_eq!(lag("g-stopped").await, 30, "committed within the linger");
    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("the consumer returns once asked to stop")
        .unwrap();
    assert_eq!(lag("g-stopped").await, 0, "what it handled is committed");
    assert_eq!(*stopping.durable.lock().unwrap(), ids, "flushed first");

    // The next member of the group is handed nothing again.
    let next = Arc::new(Buffering::default());
    let task = tokio::spawn(run_consumer(
        bus.clone(),
        options("g-stopped"),
        next.clone(),
    ));
    tokio::time::sleep(Duration::from_millis(300)).await;
    task.abort();
    let _ = task.await;
    assert!(next.pending.lock().unwrap().is_empty());
}

/// Publishes `count` messages for each subject of `subjects` (one
/// conversation each), runs a consumer over them with the options as
/// `configure` leaves them until everything is committed, and returns each
/// subject's event ids in order.
async fn consume(
    subjects: &[(&str, usize)],
    configure: impl FnOnce(&mut ConsumerOptions),
    handler: Arc<dyn EventHandler>,
) -> HashMap<String, Vec<EventId>> {
    let db = db().await;
    let (store, bus) = store_and_bus(&db).await;
    let mut ids = HashMap::new();
    for (name, count) in subjects {
        let s = subject(name);
        let events: Vec<_> = (0..*count)
            .map(|_| event("MessageReceived", Some(&s), "a"))
            .collect();
        ids.insert(
            name.to_string(),
            events.iter().map(|e| e.event_id).collect::<Vec<_>>(),
        );
        store
            .append(
                &tenant("t1"),
                &format!("c-{name}"),
                ExpectedVersion::Any,
                events,
            )
            .await
            .unwrap();
    }
    publish_appended(&db, &store, &bus).await;

    let mut options = ConsumerOptions::new("g-all", &[topics::MESSAGES]);
    options.poll_timeout = Duration::from_millis(50);
    configure(&mut options);
    let task = tokio::spawn(run_consumer(bus.clone(), options, handler));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while bus.lag("g-all", &[topics::MESSAGES]).await.unwrap() > 0 {
        assert!(tokio::time::Instant::now() < deadline, "never committed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    task.abort();
    let _ = task.await;
    ids
}

/// [`consume`] of `count` messages of one subject in runs of `max_batch`.
async fn consume_all(
    count: usize,
    max_batch: usize,
    flush_interval: Option<Duration>,
    handler: Arc<dyn EventHandler>,
) -> Vec<EventId> {
    let configure = |options: &mut ConsumerOptions| {
        options.max_batch = max_batch;
        options.flush_interval = flush_interval;
    };
    consume(&[("s1", count)], configure, handler)
        .await
        .remove("s1")
        .unwrap()
}

/// 40 messages in runs of 10, through a handler that buffers until its
/// flush: everything committed was flushed, in order.
async fn consume_forty_in_runs_of_ten(flush_interval: Option<Duration>) -> Arc<Buffering> {
    let handler = Arc::new(Buffering::default());
    let ids = consume_all(40, 10, flush_interval, handler.clone()).await;
    assert_eq!(*handler.durable.lock().unwrap(), ids);
    handler
}

#[tokio::test]
async fn a_group_behind_flushes_once_per_interval_and_at_once_when_caught_up() {
    // Without an interval, each full run is flushed and committed.
    let every_run = consume_forty_in_runs_of_ten(None).await;
    assert_eq!(every_run.flushes.load(Ordering::SeqCst), 4);

    // With one longer than the test, the four full runs wait, and the
    // flush comes when the next poll finds nothing more: one flush, and
    // the lag still reaches zero.
    let deferred = consume_forty_in_runs_of_ten(Some(Duration::from_secs(3600))).await;
    assert_eq!(deferred.flushes.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_lingering_group_flushes_a_trickle_of_runs_once_and_a_run_after_a_quiet_spell_at_once() {
    const LINGER: Duration = Duration::from_millis(1500);
    let db = db().await;
    let (store, bus) = store_and_bus(&db).await;
    let (t, s) = (tenant("t1"), subject("s1"));
    let mut ids = Vec::new();
    let mut post = |count: usize| {
        let events: Vec<_> = (0..count)
            .map(|_| event("MessageReceived", Some(&s), "a"))
            .collect();
        ids.extend(events.iter().map(|e| e.event_id));
        let (db, store, bus, t) = (&db, store.clone(), bus.clone(), t.clone());
        async move {
            store
                .append(&t, "c", ExpectedVersion::Any, events)
                .await
                .unwrap();
            publish_appended(db, &store, &bus).await;
        }
    };
    let handler = Arc::new(Buffering::default());
    let mut options = ConsumerOptions::new("g-linger", &[topics::MESSAGES]);
    options.poll_timeout = Duration::from_millis(50);
    options.linger = Some(LINGER);
    let task = tokio::spawn(run_consumer(bus.clone(), options, handler.clone()));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let wait_for = |what: &'static str, done: &dyn Fn() -> bool| {
        assert!(tokio::time::Instant::now() < deadline, "{what}");
        !done()
    };

    // A run after a quiet spell longer than the linger: flushed at once,
    // well before another linger has passed.
    tokio::time::sleep(LINGER + Duration::from_millis(200)).await;
    post(3).await;
    let posted = tokio::time::Instant::now();
    while wait_for("first run never flushed", &|| {
        handler.durable.lock().unwrap().len() == 3
    }) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        posted.elapsed() < LINGER,
        "a run after a quiet spell waited"
    );
    assert_eq!(handler.flushes.load(Ordering::SeqCst), 1);

    // A trickle of small runs within the linger: each handled, none
    // flushed or committed until the linger since the last flush is over.
    for _ in 0..4 {
        post(2).await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Each deferred run is settled as it ends: the trickle, not the run
    // flushed at once.
    while wait_for("trickle never handled and settled", &|| {
        handler.settled.lock().unwrap().len() == 8
    }) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(handler.flushes.load(Ordering::SeqCst), 1);
    assert_eq!(*handler.settled.lock().unwrap(), ids[3..]);
    assert_eq!(handler.pending.lock().unwrap().len(), 8);
    assert_eq!(bus.lag("g-linger", &[topics::MESSAGES]).await.unwrap(), 8);
    while bus.lag("g-linger", &[topics::MESSAGES]).await.unwrap() > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "trickle never committed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    task.abort();
    let _ = task.await;
    // Four posts, one flush; everything committed was flushed, in order.
    assert_eq!(handler.flushes.load(Ordering::SeqCst), 2);
    assert_eq!(*handler.durable.lock().unwrap(), ids);
}

/// Logs what the consumer asks of it, in order.
#[derive(Default)]
struct Preparing {
    calls: Mutex<Vec<(&'static str, Vec<EventId>)>>,
}

#[async_trait]
impl EventHandler for Preparing {
    async fn prepare(&self, run: &[RecordedEvent]) -> Result<(), HandlerError> {
        let ids = run.iter().map(|e| e.event_id).collect();
        self.calls.lock().unwrap().push(("prepare", ids));
        Ok(())
    }

    async fn handle(&self, event: &RecordedEvent) -> Result<(), HandlerError> {
        self.calls
            .lock()
            .unwrap()
            .push(("handle", vec![event.event_id]));
        Ok(())
    }
}

#[tokio::test]
async fn each_run_is_prepared_whole_before_its_events_are_handled() {
    let handler = Arc::new(Preparing::default());
    let ids = consume_all(25, 10, None, handler.clone()).await;

    // Runs of 10, 10 and 5: each announced whole, then handled in order.
    let mut expected = Vec::new();
    for run in ids.chunks(10) {
        expected.push(("prepare", run.to_vec()));
        expected.extend(run.iter().map(|id| ("handle", vec![*id])));
    }
    assert_eq!(*handler.calls.lock().unwrap(), expected);
}

/// Counts the handles in flight, overall and per subject, and keeps the
/// order each subject's events were handled in.
#[derive(Default)]
struct Concurrent {
    in_flight: Mutex<HashMap<String, usize>>,
    most_at_once: AtomicUsize,
    a_subject_twice_at_once: std::sync::atomic::AtomicBool,
    handled: Mutex<HashMap<String, Vec<EventId>>>,
}

#[async_trait]
impl EventHandler for Concurrent {
    async fn handle(&self, event: &RecordedEvent) -> Result<(), HandlerError> {
        let subject = event.subject.as_ref().unwrap().to_string();
        {
            let mut in_flight = self.in_flight.lock().unwrap();
            let mine = in_flight.entry(subject.clone()).or_default();
            *mine += 1;
            if *mine > 1 {
                self.a_subject_twice_at_once.store(true, Ordering::SeqCst);
            }
            let total = in_flight.values().sum();
            self.most_at_once.fetch_max(total, Ordering::SeqCst);
        }
        // Long enough for the other lane to start meanwhile.
        tokio::time::sleep(Duration::from_millis(3)).await;
        self.handled
            .lock()
            .unwrap()
            .entry(subject.clone())
            .or_default()
            .push(event.event_id);
        *self.in_flight.lock().unwrap().get_mut(&subject).unwrap() -= 1;
        Ok(())
    }
}

/// Two subjects, 30 messages each, on the two partitions of the bus or on
/// the `same_partition`, all consumed with `lanes`; returns the handler
/// and each subject's ids in append order.
async fn consume_two_subjects(
    lanes: usize,
    same_partition: bool,
) -> (Arc<Concurrent>, HashMap<String, Vec<EventId>>) {
    // The bus of `store_and_bus` has two partitions.
    let partition = |name: &str| partition_for(&format!("t1/{name}"), 2);
    let second = (2..)
        .map(|i| format!("s{i}"))
        .find(|name| (partition(name) == partition("s1")) == same_partition)
        .unwrap();
    let handler = Arc::new(Concurrent::default());
    let expected = consume(
        &[("s1", 30), (&second, 30)],
        |options| options.lanes = lanes,
        handler.clone(),
    )
    .await;
    (handler, expected)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lanes_handle_keys_at_once_and_each_key_in_order() {
    // Keys on two partitions, and two keys of one partition (the embedded
    // bus has one unless configured): both handled at once.
    for same_partition in [false, true] {
        let (handler, expected) = consume_two_subjects(2, same_partition).await;
        assert_eq!(*handler.handled.lock().unwrap(), expected);
        assert_eq!(handler.most_at_once.load(Ordering::SeqCst), 2);
        assert!(!handler.a_subject_twice_at_once.load(Ordering::SeqCst));
    }

    // One lane: the same records, one at a time.
    let (handler, expected) = consume_two_subjects(1, true).await;
    assert_eq!(*handler.handled.lock().unwrap(), expected);
    assert_eq!(handler.most_at_once.load(Ordering::SeqCst), 1);
}

/// What every reader of a topic committed is deleted; what any reader has
/// not (or a reader that never committed) stays and is delivered; offsets
/// go on after a prune; a topic nobody reads is kept.
#[tokio::test]
async fn a_prune_deletes_what_every_reader_committed_and_nothing_else() {
    let db = db().await;
    let bus = InProcessBus::new(db.pool.clone(), 1);
    let records = |from: usize, to: usize| {
        (from..to)
            .map(|i| mnemo_bus::testsuite::record("t/s", &i.to_string()))
            .collect::<Vec<_>>()
    };
    bus.publish("t.kept", records(0, 10)).await.unwrap();
    bus.publish("t.unread", records(0, 3)).await.unwrap();
    let count = |topic: &'static str| {
        let pool = db.pool.clone();
        async move {
            sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM bus_records WHERE topic = ?")
                .bind(topic)
                .fetch_one(&pool)
                .await
                .unwrap()
        }
    };
    let handle = |group: &'static str, upto: usize| {
        let bus = bus.clone();
        async move {
            let mut sub = bus.subscribe(group, &["t.kept"]).await.unwrap();
            let mut last = None;
            for _ in 0..upto {
                last = sub.poll(Duration::from_secs(5)).await.unwrap();
            }
            sub.commit(&last.unwrap()).await.unwrap();
        }
    };
    handle("fast", 7).await;
    handle("slow", 4).await;
    let readers: &[(&str, &[&str])] = &[("fast", &["t.kept"]), ("slow", &["t.kept"])];
    // Offsets 0 to 3: both committed them.
    assert_eq!(bus.prune(readers).await.unwrap(), 4);
    assert_eq!(count("t.kept").await, 6);
    assert_eq!(count("t.unread").await, 3);
    // A reader that never committed holds everything.
    let with_new: &[(&str, &[&str])] = &[("fast", &["t.kept"]), ("new", &["t.kept"])];
    assert_eq!(bus.prune(with_new).await.unwrap(), 0);
    // The slow group still gets what it has not committed, in order.
    let mut sub = bus.subscribe("slow", &["t.kept"]).await.unwrap();
    let mut rest = Vec::new();
    while let Some(delivery) = sub.poll(Duration::from_millis(200)).await.unwrap() {
        rest.push(String::from_utf8(delivery.payload.clone()).unwrap());
        sub.commit(&delivery).await.unwrap();
    }
    drop(sub);
    assert_eq!(rest, ["4", "5", "6", "7", "8", "9"]);
    handle("fast", 3).await;
    // Both are at the head: all but the newest record goes, and offsets
    // go on from it.
    assert_eq!(bus.prune(readers).await.unwrap(), 5);
    assert_eq!(count("t.kept").await, 1);
    assert_eq!(bus.lag("slow", &["t.kept"]).await.unwrap(), 0);
    bus.publish("t.kept", records(10, 12)).await.unwrap();
    assert_eq!(bus.lag("slow", &["t.kept"]).await.unwrap(), 2);
    let mut sub = bus.subscribe("slow", &["t.kept"]).await.unwrap();
    let next = sub.poll(Duration::from_secs(5)).await.unwrap().unwrap();
    assert_eq!(
        (next.offset, next.payload.as_slice()),
        (10, b"10".as_slice())
    );
}
