//! The subject's records on the bus: the in-process bus's table in the data
//! dir's SQLite file, or every Kafka topic read from its beginning by a
//! throwaway consumer group. Records carry the log's sealed payloads, so
//! after an erasure none of them may open.
//!
//! On Kafka every record read (whatever its key) is also scanned as bytes:
//! its key, payload and headers, for the canaries and their keyed tokens
//! ([`RawNeedles`]). The in-process bus's records are rows of the data
//! dir's SQLite file, whose bytes the `files` check scans already.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use mnemo_bus::{topics, Delivery, Subscription};
use mnemo_config::Settings;
use sqlx::SqlitePool;

use super::bytes::Needles;

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

/// What the bytes of every record are searched for: each needle with its
/// name in the report (`canary #1`, or the token of one).
pub(super) struct RawNeedles {
    pub needles: Needles,
    pub names: Vec<String>,
    /// How many of them, first, are the canaries themselves.
    pub canaries: usize,
}

impl RawNeedles {
    pub fn is_empty(&self) -> bool {
        self.needles.is_empty()
    }
}

/// The part of a record a needle was found in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Part {
    Key,
    Payload,
    Headers,
}

impl Part {
    fn name(self) -> &'static str {
        match self {
            Part::Key => "key",
            Part::Payload => "payload",
            Part::Headers => "headers",
        }
    }
}

/// One record whose bytes hold a needle.
pub(super) struct RawHit {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    /// (needle index, part, occurrences), in needle order.
    pub found: Vec<(usize, Part, u64)>,
}

impl RawHit {
    /// `mnemo.messages partition 2 offset 17: canary #1 ×1 in the payload`.
    pub fn describe(&self, names: &[String]) -> String {
        let found: Vec<String> = self
            .found
            .iter()
            .map(|(needle, part, n)| format!("{} ×{n} in the {}", names[*needle], part.name()))
            .collect();
        format!(
            "{} partition {} offset {}: {}",
            self.topic,
            self.partition,
            self.offset,
            found.join(", ")
        )
    }
}

/// The raw scan of every record read.
#[derive(Default)]
pub(super) struct RawScan {
    pub records: u64,
    pub bytes: u64,
    pub hits: Vec<RawHit>,
}

impl RawScan {
    /// Scans one record's key, payload and headers (each header's name and
    /// value apart, so no match spans two of them).
    ///
    /// The bus hands over the key and the headers as text, invalid UTF-8
    /// replaced by U+FFFD: that replaces only bytes that cannot be part of
    /// a UTF-8 string, so a needle (a string) is found in that text exactly
    /// where it is in the raw bytes. The payload is the raw bytes.
    pub fn add(&mut self, delivery: &Delivery, raw: &RawNeedles) {
        self.records += 1;
        let header_bytes: usize = delivery
            .headers
            .iter()
            .map(|(name, value)| name.len() + value.len())
            .sum();
        self.bytes += (delivery.key.len() + delivery.payload.len() + header_bytes) as u64;
        if raw.is_empty() {
            return;
        }
        let mut headers = vec![0; raw.needles.len()];
        for (name, value) in &delivery.headers {
            for bytes in [name.as_bytes(), value.as_bytes()] {
                for (total, n) in headers.iter_mut().zip(raw.needles.count(bytes)) {
                    *total += n;
                }
            }
        }
        let parts = [
            (Part::Key, raw.needles.count(delivery.key.as_bytes())),
            (Part::Payload, raw.needles.count(&delivery.payload)),
            (Part::Headers, headers),
        ];
        let mut found = Vec::new();
        for needle in 0..raw.needles.len() {
            for (part, counts) in &parts {
                if counts[needle] > 0 {
                    found.push((needle, *part, counts[needle]));
                }
            }
        }
        if !found.is_empty() {
            self.hits.push(RawHit {
                topic: delivery.topic.clone(),
                partition: delivery.partition,
                offset: delivery.offset,
                found,
            });
        }
    }
}

/// The records keyed by one of `keys`, from the in-process bus of the data
/// dir (`pool`, None when its database does not exist) or from Kafka; on
/// Kafka, with the raw scan of every record for `raw`.
pub(super) async fn records(
    settings: &Settings,
    pool: Option<&SqlitePool>,
    keys: &HashSet<String>,
    raw: &RawNeedles,
) -> anyhow::Result<(Source, Vec<BusRecord>, Option<RawScan>)> {
    if let Some(kafka) = &settings.kafka {
        let (source, records, scan) = kafka_records(&kafka.brokers, keys, raw).await?;
        return Ok((source, records, Some(scan)));
    }
    let source = Source {
        name: "in-process bus",
        note: None,
    };
    let Some(pool) = pool else {
        return Ok((source, Vec::new(), None));
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
    Ok((source, found, None))
}

/// Reads every topic from its beginning with a consumer group of its own
/// that never commits, until no record came for [`KAFKA_IDLE_WAIT`]; every
/// record is scanned for `raw` on the way.
async fn kafka_records(
    brokers: &str,
    keys: &HashSet<String>,
    raw: &RawNeedles,
) -> anyhow::Result<(Source, Vec<BusRecord>, RawScan)> {
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
    let mut scan = RawScan::default();
    let mut wait = KAFKA_FIRST_RECORD_WAIT;
    while let Some(delivery) = subscription.poll(wait).await? {
        wait = KAFKA_IDLE_WAIT;
        consumed += 1;
        scan.add(&delivery, raw);
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
        scan,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(texts: &[&str]) -> RawNeedles {
        let texts: Vec<String> = texts.iter().map(|t| t.to_string()).collect();
        RawNeedles {
            needles: Needles::new(&texts),
            names: (0..texts.len()).map(super::super::canary).collect(),
            canaries: texts.len(),
        }
    }

    fn delivery(key: &str, payload: &[u8], headers: &[(&str, &str)]) -> Delivery {
        Delivery {
            topic: "mnemo.dead-letters".into(),
            partition: 1,
            offset: 41,
            key: key.into(),
            payload: payload.to_vec(),
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    #[test]
    fn key_payload_and_headers_are_each_scanned_in_any_case() {
        let raw = raw(&["raw-canary-one", "raw-canary-two"]);
        let mut scan = RawScan::default();
        scan.add(
            &delivery("acme/s", b"{\"x\": 1}", &[("event_id", "e1")]),
            &raw,
        );
        assert!(scan.hits.is_empty());
        scan.add(
            &delivery(
                "acme/RAW-CANARY-ONE",
                b"\xff\x00raw-canary-two..Raw-Canary-Two",
                &[("raw-canary-one", "x"), ("tenant", "RAW-canary-ONE!")],
            ),
            &raw,
        );
        assert_eq!(scan.records, 2);
        assert_eq!(scan.hits.len(), 1);
        let hit = &scan.hits[0];
        assert_eq!(
            hit.found,
            vec![
                (0, Part::Key, 1),
                (0, Part::Headers, 2),
                (1, Part::Payload, 2)
            ]
        );
        assert_eq!(
            hit.describe(&raw.names),
            "mnemo.dead-letters partition 1 offset 41: canary #1 ×1 in the key, \
             canary #1 ×2 in the headers, canary #2 ×2 in the payload"
        );
    }

    #[test]
    fn a_match_never_spans_a_header_name_and_its_value() {
        let raw = raw(&["splitcanary"]);
        let mut scan = RawScan::default();
        scan.add(&delivery("k", b"", &[("split", "canary")]), &raw);
        assert!(scan.hits.is_empty());
        assert_eq!(scan.bytes, 1 + 5 + 6);
    }

    #[test]
    fn without_needles_records_are_only_counted() {
        let mut scan = RawScan::default();
        scan.add(&delivery("k", b"anything", &[]), &raw(&[]));
        assert_eq!((scan.records, scan.hits.len()), (1, 0));
    }
}
