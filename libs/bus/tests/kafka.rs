//! The Bus contract and Kafka's own guarantees over the real wire protocol:
//! librdkafka's mock cluster (a Kafka broker inside this process, reached over
//! loopback TCP) always, and a real broker too when `TEST_KAFKA_BROKERS` is set
//! (each case then works under its own namespace, so runs never share topics
//! or groups).
#![cfg(feature = "kafka")]

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use mnemo_bus::kafka::dev::{DevKafka, MockKafka};
use mnemo_bus::kafka::{create_all_topics, create_topics, KafkaBus, KafkaConfig};
use mnemo_bus::relay::SqliteCheckpointStore;
use mnemo_bus::testsuite::record;
use mnemo_bus::{
    bus_contract_tests, run_consumer, testsuite, topics, Bus, ConsumerOptions, Delivery,
    EventHandler, HandlerError, Relay, Subscription,
};
use mnemo_domain::{EventId, RecordedEvent};
use mnemo_event_store::sqlite::{self, SqliteEventStore};
use mnemo_event_store::testsuite::{event, subject, tenant};
use mnemo_event_store::{EventStore, ExpectedVersion};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::ClientConfig;
use tokio::time::Instant;

const PARTITIONS: i32 = 3;
/// Long enough for a group join and a rebalance on a loaded machine; the
/// tests wait for conditions and only fail at this bound.
const PATIENCE: Duration = Duration::from_secs(60);

/// Every topic a test here uses.
fn all_topics() -> Vec<&'static str> {
    testsuite::TOPICS
        .iter()
        .chain(topics::ALL.iter())
        .copied()
        .collect()
}

/// A cluster with every topic created; `config` reaches it.
struct Cluster {
    config: KafkaConfig,
    _mock: Option<MockKafka>,
}

fn mock_cluster() -> Cluster {
    let mock = MockKafka::new().unwrap();
    for topic in all_topics() {
        mock.create_topic(topic, PARTITIONS).unwrap();
    }
    let mut config = KafkaConfig::new(mock.bootstrap_servers());
    // The mock broker completes a rebalance after a member left only when
    // the session timeout (less a second) has passed, so a restarted member
    // waits that long for its partitions; the smallest timeout a real broker
    // accepts keeps the restart cases short.
    config.session_timeout = Duration::from_secs(6);
    Cluster {
        config,
        _mock: Some(mock),
    }
}

fn real_brokers() -> Option<String> {
    std::env::var("TEST_KAFKA_BROKERS")
        .ok()
        .filter(|brokers| !brokers.trim().is_empty())
}

/// `TEST_KAFKA_PROPERTIES`: librdkafka properties for the real broker, as
/// `key=value` pairs separated by commas (security settings, workarounds).
fn real_properties() -> Vec<(String, String)> {
    std::env::var("TEST_KAFKA_PROPERTIES")
        .unwrap_or_default()
        .split(',')
        .filter(|pair| !pair.trim().is_empty())
        .map(|pair| {
            let (key, value) = pair
                .split_once('=')
                .expect("TEST_KAFKA_PROPERTIES holds key=value pairs");
            (key.trim().to_owned(), value.trim().to_owned())
        })
        .collect()
}

async fn real_cluster() -> Cluster {
    let brokers = real_brokers().expect("TEST_KAFKA_BROKERS");
    let mut config = KafkaConfig::new(brokers).with_namespace(format!("test-{}", EventId::new()));
    config.properties = real_properties();
    create_topics(&config, &all_topics(), PARTITIONS, 1)
        .await
        .unwrap();
    Cluster {
        config,
        _mock: None,
    }
}

async fn open_bus(cluster: Arc<Cluster>) -> Arc<dyn Bus> {
    Arc::new(KafkaBus::new(cluster.config.clone()).unwrap())
}

mod mock {
    use super::*;
    bus_contract_tests!(setup: async { mock_cluster() }, open: open_bus);
}

mod real_broker {
    use super::*;
    bus_contract_tests!(setup: real_cluster(), open: open_bus, run_if: real_brokers().is_some());
}

/// Kafka's own cases, one test each on the mock cluster (`mock_cluster::`)
/// and on the real broker when configured (`real_cluster::`).
macro_rules! kafka_tests {
    ($($case:ident),* $(,)?) => {
        mod mock_cluster {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    super::$case(super::mock_cluster()).await;
                }
            )*
        }
        mod real_cluster {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    if super::real_brokers().is_none() {
                        eprintln!("{}: skipped, TEST_KAFKA_BROKERS is not set", stringify!($case));
                        return;
                    }
                    super::$case(super::real_cluster().await).await;
                }
            )*
        }
    };
}

kafka_tests!(
    two_members_of_a_group_split_the_partitions_and_see_each_record_once,
    an_uncommitted_record_is_redelivered_after_a_restart_and_a_committed_one_is_not,
    a_batch_larger_than_the_client_queue_is_published_whole_and_in_order,
    relay_to_consumer_keeps_the_trace_and_dead_letters_a_failing_record,
);

fn text(delivery: &Delivery) -> String {
    String::from_utf8(delivery.payload.clone()).unwrap()
}

async fn next(subscription: &mut dyn Subscription) -> Delivery {
    subscription
        .poll(PATIENCE)
        .await
        .unwrap()
        .expect("a record within the patience bound")
}

async fn two_members_of_a_group_split_the_partitions_and_see_each_record_once(cluster: Cluster) {
    let bus = KafkaBus::new(cluster.config.clone()).unwrap();
    let mut first = bus.join("g-split", &["t.order"]).await.unwrap();
    let mut second = bus.join("g-split", &["t.order"]).await.unwrap();

    // Publish only once the group has settled with both members holding
    // partitions: a record fetched by a member that then loses its partition
    // is legitimately delivered again (at least once), which is not what this
    // test is about.
    let deadline = Instant::now() + PATIENCE;
    loop {
        // Members make progress in the group protocol only while they poll.
        assert!(first
            .poll(Duration::from_millis(100))
            .await
            .unwrap()
            .is_none());
        assert!(second
            .poll(Duration::from_millis(100))
            .await
            .unwrap()
            .is_none());
        let (a, b) = (first.assignment().unwrap(), second.assignment().unwrap());
        let union: BTreeSet<_> = a.iter().chain(b.iter()).cloned().collect();
        if !a.is_empty() && !b.is_empty() && union.len() == a.len() + b.len() {
            assert_eq!(union.len(), PARTITIONS as usize, "{a:?} {b:?}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the group never split: {a:?} {b:?}"
        );
    }

    let count = 60;
    let records = (0..count)
        .map(|i| record(&format!("tenant/subject-{i}"), &i.to_string()))
        .collect();
    bus.publish("t.order", records).await.unwrap();

    let mut seen: HashMap<String, &str> = HashMap::new();
    let mut per_member = [0, 0];
    let deadline = Instant::now() + PATIENCE;
    while seen.len() < count {
        assert!(Instant::now() < deadline, "saw {} of {count}", seen.len());
        for (index, (name, member)) in [("first", &mut first), ("second", &mut second)]
            .into_iter()
            .enumerate()
        {
            if let Some(delivery) = member.poll(Duration::from_millis(100)).await.unwrap() {
                let owned = member.assignment().unwrap();
                assert!(owned.contains(&(delivery.topic.clone(), delivery.partition)));
                member.commit(&delivery).await.unwrap();
                per_member[index] += 1;
                assert!(
                    seen.insert(text(&delivery), name).is_none(),
                    "{} delivered twice",
                    text(&delivery)
                );
            }
        }
    }
    assert!(per_member.iter().all(|n| *n > 0), "{per_member:?}");
    for member in [&mut first, &mut second] {
        assert!(member
            .poll(Duration::from_millis(300))
            .await
            .unwrap()
            .is_none());
    }
}

async fn an_uncommitted_record_is_redelivered_after_a_restart_and_a_committed_one_is_not(
    cluster: Cluster,
) {
    let bus = KafkaBus::new(cluster.config.clone()).unwrap();
    bus.publish("t.resume", vec![record("t/s", "first")])
        .await
        .unwrap();

    let mut member = bus.subscribe("g-redeliver", &["t.resume"]).await.unwrap();
    let polled = next(member.as_mut()).await;
    assert_eq!(text(&polled), "first");
    drop(member); // a crash before the handler finished: nothing committed

    let mut member = bus.subscribe("g-redeliver", &["t.resume"]).await.unwrap();
    let again = next(member.as_mut()).await;
    assert_eq!(
        (text(&again), again.offset),
        ("first".to_owned(), polled.offset)
    );
    member.commit(&again).await.unwrap();
    drop(member);

    // After the commit a restarted member goes on with what came next.
    bus.publish("t.resume", vec![record("t/s", "second")])
        .await
        .unwrap();
    let mut member = bus.subscribe("g-redeliver", &["t.resume"]).await.unwrap();
    assert_eq!(text(&next(member.as_mut()).await), "second");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publish_fails_while_no_broker_acknowledges_and_recovers_after() {
    let mock = MockKafka::new().unwrap();
    mock.create_topic("t.order", PARTITIONS).unwrap();
    let mut config = KafkaConfig::new(mock.bootstrap_servers());
    config.delivery_timeout = Duration::from_secs(2);
    let bus = KafkaBus::new(config).unwrap();
    bus.publish("t.order", vec![record("t/s", "before")])
        .await
        .unwrap();

    mock.set_broker_up(false).unwrap();
    let outage = bus.publish("t.order", vec![record("t/s", "lost")]).await;
    assert!(outage.is_err(), "published without an acknowledgement");

    // The idempotent producer must not be left in a fatal state: the relay
    // retries the same batch on the same producer.
    mock.set_broker_up(true).unwrap();
    let deadline = Instant::now() + PATIENCE;
    while let Err(error) = bus.publish("t.order", vec![record("t/s", "after")]).await {
        assert!(Instant::now() < deadline, "never recovered: {error}");
    }
    let mut member = bus.subscribe("g-outage", &["t.order"]).await.unwrap();
    assert_eq!(text(&next(member.as_mut()).await), "before");
    let mut rest = vec![text(&next(member.as_mut()).await)];
    while rest.last().map(String::as_str) != Some("after") {
        rest.push(text(&next(member.as_mut()).await));
    }
    // A timed-out record may or may not have reached the broker (at least
    // once); if it did, it is in its place.
    assert!(rest == ["after"] || rest == ["lost", "after"], "{rest:?}");
}

async fn a_batch_larger_than_the_client_queue_is_published_whole_and_in_order(cluster: Cluster) {
    let mut config = cluster.config.clone();
    // Room for 4 records: publishing 40 has to wait for acknowledgements.
    config
        .properties
        .push(("queue.buffering.max.messages".into(), "4".into()));
    let bus = KafkaBus::new(config).unwrap();
    let records = (0..40).map(|i| record("t/s", &i.to_string())).collect();
    bus.publish("t.order", records).await.unwrap();

    let mut member = bus.subscribe("g-queue", &["t.order"]).await.unwrap();
    let mut got = Vec::new();
    while got.len() < 40 {
        got.push(text(&next(member.as_mut()).await));
    }
    let expected: Vec<String> = (0..40).map(|i| i.to_string()).collect();
    assert_eq!(got, expected);
}

/// What the consumer loop handed the handler, and the trace it ran in.
#[derive(Default)]
struct Recorder {
    handled: Mutex<Vec<EventId>>,
    traceparents: Mutex<Vec<Option<String>>>,
    always_fail: Option<EventId>,
}

#[async_trait]
impl EventHandler for Recorder {
    async fn handle(&self, event: &RecordedEvent) -> Result<(), HandlerError> {
        self.traceparents
            .lock()
            .unwrap()
            .push(mnemo_telemetry::current_traceparent());
        if Some(event.event_id) == self.always_fail {
            return Err(HandlerError::Retryable("store is down".into()));
        }
        self.handled.lock().unwrap().push(event.event_id);
        Ok(())
    }
}

/// `00-<trace id>-<span id>-<flags>`: the trace id.
fn trace_id(traceparent: &str) -> &str {
    traceparent.split('-').nth(1).unwrap()
}

/// The whole path in one test: events appended with a `traceparent` go
/// through the relay onto Kafka; the consumer loop retries a record whose
/// handler keeps failing, dead-letters it with its error and handles the
/// next; the trace header arrives intact and the handler runs in that trace.
async fn relay_to_consumer_keeps_the_trace_and_dead_letters_a_failing_record(cluster: Cluster) {
    trace_spans();

    let dir = tempfile::tempdir().unwrap();
    let pool = sqlite::connect(&dir.path().join("mnemo.db")).await.unwrap();
    let store = Arc::new(SqliteEventStore::new(pool.clone()).await.unwrap());
    let bus: Arc<KafkaBus> = Arc::new(KafkaBus::new(cluster.config.clone()).unwrap());

    let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let s = subject("s1");
    let mut poison = event("MessageReceived", Some(&s), "alice");
    poison.metadata.traceparent = Some(traceparent.to_owned());
    let mut good = event("MessageReceived", Some(&s), "alice");
    good.metadata.traceparent = Some(traceparent.to_owned());
    let (poison_id, good_id) = (poison.event_id, good.event_id);
    store
        .append(
            &tenant("t1"),
            "conversation",
            ExpectedVersion::Any,
            vec![poison, good],
        )
        .await
        .unwrap();
    let relay = Relay::new(
        store.clone(),
        bus.clone(),
        Arc::new(SqliteCheckpointStore::new(pool.clone())),
    );
    assert_eq!(relay.run_once().await.unwrap(), 2);

    let handler = Arc::new(Recorder {
        always_fail: Some(poison_id),
        ..Default::default()
    });
    let mut options = ConsumerOptions::new("g-consolidator", &[topics::MESSAGES]);
    options.first_backoff = Duration::from_millis(1);
    options.max_attempts = 3;
    options.poll_timeout = Duration::from_millis(100);
    let task = tokio::spawn(run_consumer(bus.clone(), options, handler.clone()));

    let mut dead = bus
        .subscribe("inspector", &[topics::DEAD_LETTERS])
        .await
        .unwrap();
    let letter = next(dead.as_mut()).await;
    assert_eq!(
        letter.header("event_id"),
        Some(poison_id.to_string().as_str())
    );
    assert!(letter
        .header("dead_letter.error")
        .unwrap()
        .contains("store is down"));
    assert_eq!(letter.header("dead_letter.group"), Some("g-consolidator"));
    assert_eq!(letter.header("dead_letter.topic"), Some(topics::MESSAGES));
    assert_eq!(letter.header("traceparent"), Some(traceparent));
    let envelope: RecordedEvent = serde_json::from_slice(&letter.payload).unwrap();
    assert_eq!(envelope.event_id, poison_id);

    let deadline = Instant::now() + PATIENCE;
    while handler.handled.lock().unwrap().is_empty() {
        assert!(
            Instant::now() < deadline,
            "the next record was never handled"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    task.abort();
    let _ = task.await;
    assert_eq!(*handler.handled.lock().unwrap(), vec![good_id]);

    // Three attempts at the poison record, one at the good one, every one of
    // them inside the trace the events were appended in.
    let traceparents = handler.traceparents.lock().unwrap().clone();
    assert_eq!(traceparents.len(), 4, "{traceparents:?}");
    for seen in &traceparents {
        let seen = seen.as_deref().expect("the handler runs inside a span");
        assert_eq!(trace_id(seen), trace_id(traceparent), "{seen}");
        assert_ne!(seen, traceparent, "a child span, not the caller's span");
    }

    // Both records were committed: a restarted member sees only what is
    // published after them.
    bus.publish(topics::MESSAGES, vec![record("t1/s1", "marker")])
        .await
        .unwrap();
    let mut restarted = bus
        .subscribe("g-consolidator", &[topics::MESSAGES])
        .await
        .unwrap();
    assert_eq!(text(&next(restarted.as_mut()).await), "marker");
}

/// A service started alongside a broker that is still creating its topics
/// (`mnemo dev kafka &` and the services at once): its request to create the
/// missing ones fails (the development host has no CreateTopics API), but
/// the topics exist by then, so the start goes on instead of failing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topics_created_while_the_create_request_waits_count_as_created() {
    let mock = MockKafka::new().unwrap();
    let mut config = KafkaConfig::new(mock.bootstrap_servers());
    // The bound on the create request; the topic appears well before it.
    config.delivery_timeout = Duration::from_secs(3);
    let starting = tokio::spawn({
        let config = config.clone();
        async move { create_topics(&config, &[topics::MESSAGES], PARTITIONS, 1).await }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    mock.create_topic(topics::MESSAGES, PARTITIONS).unwrap();
    starting.await.unwrap().unwrap();

    // A topic nobody creates still fails the start, naming the cause.
    let error = create_topics(&config, &[topics::DEAD_LETTERS], PARTITIONS, 1)
        .await
        .unwrap_err();
    assert!(error.to_string().contains("Timed out"), "{error}");
}

/// Set in the child process that `dev_host_serves_other_processes` starts.
const CHILD_BOOTSTRAP: &str = "MNEMO_TEST_DEV_KAFKA_BOOTSTRAP";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dev_host_serves_other_processes() {
    let host = DevKafka::start(0, PARTITIONS).unwrap();
    let bootstrap = host.bootstrap_servers();
    assert_eq!(bootstrap, format!("127.0.0.1:{}", host.port()));
    // What a service runs on start: a no-op here, every topic exists.
    create_all_topics(&KafkaConfig::new(&bootstrap), PARTITIONS, 1)
        .await
        .unwrap();
    let bus = KafkaBus::new(KafkaConfig::new(&bootstrap)).unwrap();
    let requests = (0..5)
        .map(|i| record(&format!("tenant/subject-{i}"), &format!("request-{i}")))
        .collect();
    bus.publish(topics::MESSAGES, requests).await.unwrap();

    // The child: this test binary again, running only `dev_host_child`.
    let child = tokio::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "dev_host_child", "--ignored", "--nocapture"])
        .env(CHILD_BOOTSTRAP, &bootstrap)
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(PATIENCE * 2, child)
        .await
        .expect("the child finished")
        .unwrap();
    assert!(
        output.status.success(),
        "child failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("1 passed"),
        "the child ran its test:\n{}",
        String::from_utf8_lossy(&output.stdout)
    );

    let mut replies = bus
        .subscribe("parent", &[topics::ACCESS_SIGNALS])
        .await
        .unwrap();
    let mut got = BTreeSet::new();
    while got.len() < 5 {
        got.insert(text(&next(replies.as_mut()).await));
    }
    let expected: BTreeSet<String> = (0..5).map(|i| format!("reply to request-{i}")).collect();
    assert_eq!(got, expected);
    assert!(host.forwarded_connections() > 0);
}

/// The other process of `dev_host_serves_other_processes`: knows only the
/// bootstrap address, consumes the parent's records as a group member,
/// answers each on another topic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "runs as the child process of dev_host_serves_other_processes"]
async fn dev_host_child() {
    let bootstrap = std::env::var(CHILD_BOOTSTRAP).expect("started by the parent test");

    // The broker advertises the bootstrap address itself, so every later
    // connection also goes through the fixed port.
    let metadata = {
        let bootstrap = bootstrap.clone();
        tokio::task::spawn_blocking(move || {
            let client: BaseConsumer = ClientConfig::new()
                .set("bootstrap.servers", &bootstrap)
                .create()
                .unwrap();
            client.fetch_metadata(None, PATIENCE).unwrap()
        })
        .await
        .unwrap()
    };
    let brokers: Vec<String> = metadata
        .brokers()
        .iter()
        .map(|broker| format!("{}:{}", broker.host(), broker.port()))
        .collect();
    assert_eq!(brokers, vec![bootstrap.clone()]);
    let topic_names: BTreeSet<&str> = metadata.topics().iter().map(|t| t.name()).collect();
    for topic in topics::ALL {
        assert!(
            topic_names.contains(topic),
            "{topic} missing: {topic_names:?}"
        );
    }
    let messages = metadata
        .topics()
        .iter()
        .find(|t| t.name() == topics::MESSAGES)
        .unwrap();
    assert_eq!(messages.partitions().len(), PARTITIONS as usize);

    let bus = KafkaBus::new(KafkaConfig::new(&bootstrap)).unwrap();
    let mut member = bus.subscribe("child", &[topics::MESSAGES]).await.unwrap();
    let mut replies = Vec::new();
    while replies.len() < 5 {
        let delivery = next(member.as_mut()).await;
        replies.push(record(
            &delivery.key,
            &format!("reply to {}", text(&delivery)),
        ));
        member.commit(&delivery).await.unwrap();
    }
    bus.publish(topics::ACCESS_SIGNALS, replies).await.unwrap();
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
