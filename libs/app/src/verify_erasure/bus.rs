//! The subject's records on the bus: the in-process bus's table in the data
//! dir's SQLite file, or every Kafka topic read from its beginning by a
//! throwaway consumer group. Records carry the log's sealed payloads, so
//! after an erasure none of them may open.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use mnemo_bus::{topics, Subscription};
use mnemo_config::Settings;
use sqlx::SqlitePool;

/// How long a fresh Kafka group may take to join and get its first record.
const KAFKA_FIRST_RECORD_WAIT: Duration = Duration::from_secs(15);
/// No record for this long: every topic is read to its end.
const KAFKA_IDLE_WAIT: Duration = Duration::from_secs(3);

/// One record keyed `tenant/subject` for a subject being checked.
pub(super) struct BusRecord {
    pub topic: String,
    pub key: String,
    pub payload: Vec<u8>,
}

/// Where the records were read from, and how.
pub(super) struct Source {
    /// `in-process bus (mnemo.db)` or `Kafka`.
    pub name: &'static str,
    pub note: Option<String>,
}

/// The records keyed by one of `keys`, from the in-process bus of the data
/// dir (`pool`, None when its database does not exist) or from Kafka.
pub(super) async fn records(
    settings: &Settings,
    pool: Option<&SqlitePool>,
    keys: &HashSet<String>,
) -> anyhow::Result<(Source, Vec<BusRecord>)> {
    if let Some(kafka) = &settings.kafka {
        return kafka_records(&kafka.brokers, keys).await;
    }
    let source = Source {
        name: "in-process bus",
        note: None,
    };
    let Some(pool) = pool else {
        return Ok((source, Vec::new()));
    };
    let mut found = Vec::new();
    for key in keys {
        let rows: Vec<(String, String, Vec<u8>)> = sqlx::query_as(
            "SELECT topic, record_key, payload FROM bus_records WHERE record_key = ? \
             ORDER BY topic, partition, \"offset\"",
        )
        .bind(key)
        .fetch_all(pool)
        .await?;
        found.extend(rows.into_iter().map(|(topic, key, payload)| BusRecord {
            topic,
            key,
            payload,
        }));
    }
    Ok((source, found))
}

/// Reads every topic from its beginning with a consumer group of its own
/// that never commits, until no record came for [`KAFKA_IDLE_WAIT`].
async fn kafka_records(
    brokers: &str,
    keys: &HashSet<String>,
) -> anyhow::Result<(Source, Vec<BusRecord>)> {
    let bus = mnemo_bus::kafka::KafkaBus::new(mnemo_bus::kafka::KafkaConfig::new(brokers))?;
    let group = format!(
        "mnemo-verify-erasure-{}-{}",
        std::process::id(),
        chrono::Utc::now().timestamp_micros()
    );
    let mut subscription = bus.join(&group, &topics::ALL).await?;
    let mut consumed: u64 = 0;
    let mut per_topic: BTreeMap<String, u64> = BTreeMap::new();
    let mut found = Vec::new();
    let mut wait = KAFKA_FIRST_RECORD_WAIT;
    while let Some(delivery) = subscription.poll(wait).await? {
        wait = KAFKA_IDLE_WAIT;
        consumed += 1;
        *per_topic.entry(delivery.topic.clone()).or_default() += 1;
        if keys.contains(&delivery.key) {
            found.push(BusRecord {
                topic: delivery.topic,
                key: delivery.key,
                payload: delivery.payload,
            });
        }
    }
    // Nothing read and no partition assigned: the group never joined, and
    // "no record" would be a guess.
    anyhow::ensure!(
        consumed > 0 || !subscription.assignment()?.is_empty(),
        "the consumer group {group} got no partition within {} s: are the brokers \
         ({brokers}) reachable?",
        KAFKA_FIRST_RECORD_WAIT.as_secs()
    );
    drop(subscription);
    let read: Vec<String> = per_topic.iter().map(|(t, n)| format!("{t} {n}")).collect();
    Ok((
        Source {
            name: "Kafka",
            note: Some(format!(
                "read {consumed} record(s) from the beginning of every topic ({}) as the \
                 consumer group {group}, which commits nothing; reading stopped after {} s \
                 without a record, so records published meanwhile may be missed",
                if read.is_empty() {
                    "none had any".to_owned()
                } else {
                    read.join(", ")
                },
                KAFKA_IDLE_WAIT.as_secs()
            )),
        },
        found,
    ))
}
