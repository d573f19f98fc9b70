//! The contract every `Bus` adapter must honour. `open` opens the SAME
//! broker/storage on each call; a new instance is how a consumer restart is
//! simulated. [`bus_contract_tests!`] makes one test per case.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use crate::{Bus, Delivery, OutgoingRecord};

pub fn record(key: &str, payload: &str) -> OutgoingRecord {
    OutgoingRecord {
        key: key.to_owned(),
        payload: payload.as_bytes().to_vec(),
        headers: vec![(
            "tenant".to_owned(),
            key.split('/').next().unwrap_or("").to_owned(),
        )],
    }
}

fn text(delivery: &Delivery) -> String {
    String::from_utf8(delivery.payload.clone()).unwrap()
}

/// Generous: the first poll of a new member includes joining its group, and
/// the suite also runs against real brokers on loaded machines.
const WAIT: Duration = Duration::from_secs(20);

/// Every topic the cases use, for adapters whose topics must exist before a
/// member subscribes (Kafka topics are created up front).
pub const TOPICS: [&str; 8] = [
    "t.lag",
    "t.order",
    "t.headers",
    "t.resume",
    "t.groups",
    "t.mine",
    "t.other",
    "t.wake",
];

async fn drain(sub: &mut Box<dyn crate::Subscription>, n: usize) -> Vec<Delivery> {
    let mut out = Vec::new();
    while out.len() < n {
        match sub.poll(WAIT).await.unwrap() {
            Some(d) => out.push(d),
            None => panic!("expected {n} records, got {}", out.len()),
        }
    }
    out
}

pub async fn delivers_each_key_in_order<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn Bus>>,
{
    let bus = open().await;
    let mut records = Vec::new();
    for i in 0..20 {
        let key = format!("tenant-{}/subject-{}", i % 2, i % 4);
        records.push(record(&key, &format!("{key}#{i}")));
    }
    bus.publish("t.order", records).await.unwrap();
    let mut sub = bus.subscribe("g-order", &["t.order"]).await.unwrap();
    let got = drain(&mut sub, 20).await;
    for key_index in 0..4 {
        let key = format!("tenant-{}/subject-{}", key_index % 2, key_index);
        let seq: Vec<usize> = got
            .iter()
            .filter(|d| d.key == key)
            .map(|d| text(d).rsplit('#').next().unwrap().parse().unwrap())
            .collect();
        assert_eq!(seq.len(), 5, "{key}");
        assert!(
            seq.windows(2).all(|w| w[0] < w[1]),
            "{key} out of order: {seq:?}"
        );
    }
    assert!(got.iter().all(|d| d.topic == "t.order"));
    assert!(sub
        .poll(Duration::from_millis(100))
        .await
        .unwrap()
        .is_none());
}

pub async fn keys_and_headers_round_trip<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn Bus>>,
{
    let bus = open().await;
    bus.publish(
        "t.headers",
        vec![record("tenant-a/s1", "one"), record("tenant-b/s1", "two")],
    )
    .await
    .unwrap();
    let mut sub = bus.subscribe("g-headers", &["t.headers"]).await.unwrap();
    let mut got = drain(&mut sub, 2).await;
    got.sort_by_key(text);
    assert_eq!(got[0].key, "tenant-a/s1");
    assert_eq!(got[0].header("tenant"), Some("tenant-a"));
    assert_eq!(got[1].header("tenant"), Some("tenant-b"));
}

pub async fn resumes_from_the_committed_offset_after_a_restart<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn Bus>>,
{
    {
        let bus = open().await;
        let records = (0..5).map(|i| record("t/s", &i.to_string())).collect();
        bus.publish("t.resume", records).await.unwrap();
        let mut sub = bus.subscribe("g-resume", &["t.resume"]).await.unwrap();
        let got = drain(&mut sub, 3).await;
        // Handled 0 and 1; 2 was delivered but its handler never finished.
        sub.commit(&got[1]).await.unwrap();
    }
    let bus = open().await;
    let mut sub = bus.subscribe("g-resume", &["t.resume"]).await.unwrap();
    let got = drain(&mut sub, 3).await;
    assert_eq!(
        got.iter().map(text).collect::<Vec<_>>(),
        vec!["2", "3", "4"]
    );
}

pub async fn groups_consume_independently<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn Bus>>,
{
    let bus = open().await;
    bus.publish("t.groups", vec![record("t/s", "a"), record("t/s", "b")])
        .await
        .unwrap();
    let mut first = bus.subscribe("g-one", &["t.groups"]).await.unwrap();
    let got = drain(&mut first, 2).await;
    first.commit(&got[1]).await.unwrap();
    let mut second = bus.subscribe("g-two", &["t.groups"]).await.unwrap();
    assert_eq!(
        drain(&mut second, 2)
            .await
            .iter()
            .map(text)
            .collect::<Vec<_>>(),
        vec!["a", "b"]
    );
}

pub async fn a_subscription_sees_only_its_topics<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn Bus>>,
{
    let bus = open().await;
    bus.publish("t.mine", vec![record("t/s", "mine")])
        .await
        .unwrap();
    bus.publish("t.other", vec![record("t/s", "other")])
        .await
        .unwrap();
    let mut sub = bus.subscribe("g-topics", &["t.mine"]).await.unwrap();
    assert_eq!(text(&drain(&mut sub, 1).await[0]), "mine");
    assert!(sub
        .poll(Duration::from_millis(200))
        .await
        .unwrap()
        .is_none());
}

pub async fn a_waiting_poll_wakes_on_publish<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn Bus>>,
{
    let bus = open().await;
    let mut sub = bus.subscribe("g-wake", &["t.wake"]).await.unwrap();
    let publisher = {
        let bus = bus.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            bus.publish("t.wake", vec![record("t/s", "late")])
                .await
                .unwrap();
        })
    };
    let got = sub.poll(WAIT).await.unwrap().expect("woken by the publish");
    assert_eq!(text(&got), "late");
    publisher.await.unwrap();
}

pub async fn lag_counts_what_a_group_has_not_committed<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn Bus>>,
{
    let bus = open().await;
    assert_eq!(
        bus.oldest_unprocessed("g-lag", &["t.lag"]).await.unwrap(),
        None,
        "nothing published, nothing waits"
    );
    // Kafka's timestamps are in milliseconds.
    let before = chrono::Utc::now() - chrono::Duration::milliseconds(1);
    let records = (0..5).map(|i| record(&format!("t/s{i}"), "x")).collect();
    bus.publish("t.lag", records).await.unwrap();
    let after = chrono::Utc::now();
    assert_eq!(
        bus.lag("g-lag", &["t.lag"]).await.unwrap(),
        5,
        "a group that never committed is behind by every record"
    );
    let oldest = bus
        .oldest_unprocessed("g-lag", &["t.lag"])
        .await
        .unwrap()
        .expect("five records wait");
    assert!(
        before <= oldest && oldest <= after,
        "{before} ≤ {oldest} ≤ {after}"
    );
    let mut sub = bus.subscribe("g-lag", &["t.lag"]).await.unwrap();
    let delivered = drain(&mut sub, 5).await;
    // Committing the last of a partition covers that partition only; the
    // lag falls by each partition's records.
    let mut last_per_partition = std::collections::BTreeMap::new();
    for delivery in &delivered {
        last_per_partition.insert(delivery.partition, delivery.clone());
    }
    let (first, rest): (Vec<_>, Vec<_>) = last_per_partition
        .values()
        .enumerate()
        .partition(|(i, _)| *i == 0);
    let (_, committed) = first[0];
    sub.commit(committed).await.unwrap();
    let covered = delivered
        .iter()
        .filter(|d| d.partition == committed.partition)
        .count() as u64;
    assert_eq!(bus.lag("g-lag", &["t.lag"]).await.unwrap(), 5 - covered);
    for (_, delivery) in rest {
        sub.commit(delivery).await.unwrap();
    }
    assert_eq!(bus.lag("g-lag", &["t.lag"]).await.unwrap(), 0);
    assert_eq!(
        bus.oldest_unprocessed("g-lag", &["t.lag"]).await.unwrap(),
        None
    );
    assert_eq!(
        bus.lag("g-other", &["t.lag"]).await.unwrap(),
        5,
        "another group's commits are not this group's"
    );
    assert!(bus
        .oldest_unprocessed("g-other", &["t.lag"])
        .await
        .unwrap()
        .is_some());
}

#[macro_export]
macro_rules! bus_contract_tests {
    (setup: $setup:expr, open: $open:expr) => {
        $crate::bus_contract_tests!(setup: $setup, open: $open, run_if: true);
    };
    // `run_if` false: each case returns at once (an optional backend that is
    // not configured, e.g. a real broker).
    (setup: $setup:expr, open: $open:expr, run_if: $run_if:expr) => {
        $crate::bus_contract_tests!(@cases $setup, $open, $run_if;
            delivers_each_key_in_order,
            keys_and_headers_round_trip,
            resumes_from_the_committed_offset_after_a_restart,
            groups_consume_independently,
            a_subscription_sees_only_its_topics,
            a_waiting_poll_wakes_on_publish,
            lag_counts_what_a_group_has_not_committed,
        );
    };
    (@cases $setup:expr, $open:expr, $run_if:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                if !$run_if {
                    eprintln!("{}: skipped, its backend is not configured", stringify!($case));
                    return;
                }
                let state = std::sync::Arc::new($setup.await);
                let open = $open;
                $crate::testsuite::$case(|| open(state.clone())).await;
            }
        )*
    };
}
