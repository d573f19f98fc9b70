//! How far the pipeline is behind what it accepted: the relay's lag, each
//! watched consumer group's uncommitted records, and the consolidation
//! buffer. `/readyz` and `/metrics` report it, `mnemo status` prints it,
//! and ingest refuses new messages past the ceiling ([`Backlog::over_ceiling`])
//! before it appends anything, and paces them while the consolidator
//! trails ([`Backlog::pace`], [`crate::pacing`]).
//!
//! It also watches the free space of the file system the process keeps
//! its data on ([`Backlog::watch_disk`]): below the floor the process is
//! `degraded` and ingest refuses new content ([`Backlog::disk_short`]),
//! before SQLite or the index run out of room mid-write.
//!
//! A reading is cached for [`Backlog::FRESH_FOR`]: ingest asks on every
//! post, and the figures come from database and broker queries.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use mnemo_bus::relay::RelayStats;
use mnemo_bus::Bus;
use mnemo_domain::TenantId;
use serde::Serialize;

use crate::pacing::{Pace, Pacer};

/// The consolidation buffer's figures (a port: the consolidator's buffer
/// answers it; this crate knows nothing of the consolidator).
#[async_trait]
pub trait BufferProbe: Send + Sync + 'static {
    async fn figures(&self) -> Result<BufferFigures, Box<dyn std::error::Error + Send + Sync>>;
}

/// Messages waiting for consolidation, in every tenant.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct BufferFigures {
    pub messages: u64,
    pub conversations: u64,
    /// When the longest-waiting message was buffered.
    #[serde(skip)]
    pub oldest: Option<DateTime<Utc>>,
    /// Its age when read: it includes each conversation's idle wait (a
    /// conversation below its batch size waits for its idle timeout).
    pub oldest_seconds: Option<f64>,
}

/// When the backlog makes a process `degraded` (still serving) and when
/// ingest stops accepting messages.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BacklogLimits {
    /// Records one group has not committed, or messages accepted but not
    /// consolidated (the consolidator's lag plus its buffer), past which
    /// the process reports `degraded`.
    pub degraded_records: u64,
    /// The age of the oldest buffered message, or of a group's oldest
    /// uncommitted record, past which it reports `degraded`.
    pub degraded_age: Duration,
    /// Messages accepted but not consolidated past which ingest answers 503
    /// with `Retry-After` instead of appending more.
    pub ceiling: u64,
    /// How long the consolidator's oldest unread message may have waited
    /// before ingest paces new messages to what consolidation sustains
    /// (None: never).
    pub slowdown: Option<Duration>,
    /// Free bytes the watched file system must keep: below, the process
    /// reports `degraded` and ingest refuses new content (0: never).
    pub min_free_disk: u64,
}

impl Default for BacklogLimits {
    fn default() -> Self {
        BacklogLimits {
            degraded_records: 50_000,
            degraded_age: Duration::from_secs(600),
            ceiling: 1_000_000,
            slowdown: Some(Duration::from_secs(2)),
            min_free_disk: 1 << 30,
        }
    }
}

/// How far one consumer group is behind.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupLag {
    pub group: String,
    /// Its uncommitted records; None when the bus could not tell (logged;
    /// unknown is not zero).
    pub records: Option<u64>,
    /// How long its oldest uncommitted record has waited since it was
    /// published; None when nothing waits or the bus could not tell.
    pub oldest_seconds: Option<f64>,
}

/// One reading of the backlog.
#[derive(Debug, Clone, Default)]
pub struct Reading {
    pub relay_lag: u64,
    /// Per watched group, how far behind it is.
    pub consumer_lag: Vec<GroupLag>,
    /// None in a process that cannot see the buffer, or when it could not
    /// be read.
    pub consolidation: Option<BufferFigures>,
    /// Messages accepted but not consolidated: the consolidator group's
    /// lag plus the buffer (None when either is unknown).
    pub unconsolidated: Option<u64>,
    /// Bytes an unprivileged writer may still use on the file system of
    /// the data dir; None where no disk is watched or it could not be read.
    pub disk_free_bytes: Option<u64>,
    /// Why the process is degraded; empty when it is not.
    pub degraded: Vec<String>,
}

impl Reading {
    /// The consolidator group's lag, where the process watches it.
    pub fn consolidator(&self) -> Option<&GroupLag> {
        self.consumer_lag
            .iter()
            .find(|lag| lag.group == CONSOLIDATOR_GROUP)
    }
}

/// The consumer group whose lag, with the buffer, is what is accepted but
/// not consolidated.
pub const CONSOLIDATOR_GROUP: &str = "consolidator";

pub struct Backlog {
    bus: Arc<dyn Bus>,
    relay: Arc<RelayStats>,
    /// (group, its topics): the groups the process runs, and the
    /// consolidator's wherever a buffer is watched.
    groups: Vec<(String, Vec<String>)>,
    buffer: Option<Arc<dyn BufferProbe>>,
    limits: BacklogLimits,
    pacer: Pacer,
    /// A directory on the file system whose free space is watched.
    disk: Option<PathBuf>,
    cached: Mutex<Option<(Instant, Arc<Reading>)>>,
}

impl Backlog {
    pub const FRESH_FOR: Duration = Duration::from_secs(1);

    pub fn new(
        bus: Arc<dyn Bus>,
        relay: Arc<RelayStats>,
        groups: Vec<(String, Vec<String>)>,
        buffer: Option<Arc<dyn BufferProbe>>,
        limits: BacklogLimits,
    ) -> Self {
        Backlog {
            bus,
            relay,
            groups,
            buffer,
            limits,
            pacer: Pacer::new(limits.slowdown),
            disk: None,
            cached: Mutex::new(None),
        }
    }

    /// Watches the free space of the file system holding `dir` (the data
    /// dir: SQLite, the WAL, the embedded index).
    pub fn watch_disk(mut self, dir: impl Into<PathBuf>) -> Self {
        self.disk = Some(dir.into());
        self
    }

    pub fn limits(&self) -> BacklogLimits {
        self.limits
    }

    pub fn relay(&self) -> &RelayStats {
        &self.relay
    }

    /// The latest reading, at most [`Self::FRESH_FOR`] old.
    pub async fn read(&self) -> Arc<Reading> {
        self.read_with_age().await.0
    }

    /// The latest reading and how long ago it was taken (at most
    /// [`Self::FRESH_FOR`]): whoever times the pipeline by it knows when
    /// the figures were true, not only when it asked.
    pub async fn read_with_age(&self) -> (Arc<Reading>, Duration) {
        if let Some((at, reading)) = &*self.cached.lock().unwrap_or_else(|p| p.into_inner()) {
            let age = at.elapsed();
            if age < Self::FRESH_FOR {
                return (reading.clone(), age);
            }
        }
        let reading = Arc::new(self.measure().await);
        // Stamped when the last figure is in: each was true by then.
        *self.cached.lock().unwrap_or_else(|p| p.into_inner()) =
            Some((Instant::now(), reading.clone()));
        (reading, Duration::ZERO)
    }

    /// Messages accepted but not consolidated, when past the ceiling.
    pub async fn over_ceiling(&self) -> Option<u64> {
        self.read()
            .await
            .unconsolidated
            .filter(|&waiting| waiting > self.limits.ceiling)
    }

    /// The free bytes of the watched disk, when below the floor.
    pub async fn disk_short(&self) -> Option<u64> {
        if self.limits.min_free_disk == 0 {
            return None;
        }
        self.read()
            .await
            .disk_free_bytes
            .filter(|&free| free < self.limits.min_free_disk)
    }

    /// Admits a request of `messages` under the pace the consolidator's
    /// lag sets ([`crate::pacing`]): the caller waits what it says, or
    /// refuses the request.
    pub async fn pace(&self, tenant: &TenantId, messages: u64) -> Pace {
        if !self.pacer.enabled() || messages == 0 {
            return Pace::Go;
        }
        let reading = self.read().await;
        let now = Instant::now();
        self.pacer.observe(reading.consolidator(), now);
        self.pacer.reserve(tenant, messages, now)
    }

    /// Gives back the pace an admitted request took when a later check
    /// refuses it ([`crate::pacing::Pacer::release`]).
    pub fn unpace(&self, tenant: &TenantId, messages: u64) {
        if self.pacer.enabled() && messages > 0 {
            self.pacer.release(tenant, messages);
        }
    }

    /// Messages per second ingest admits now; None while not paced.
    pub fn pace_rate(&self) -> Option<f64> {
        self.pacer.rate()
    }

    async fn measure(&self) -> Reading {
        let mut consumer_lag = Vec::with_capacity(self.groups.len());
        for (group, topics) in &self.groups {
            let topics: Vec<&str> = topics.iter().map(String::as_str).collect();
            let records = match self.bus.lag(group, &topics).await {
                Ok(lag) => Some(lag),
                Err(error) => {
                    tracing::warn!(group = %group, error = %error, "consumer lag unavailable");
                    None
                }
            };
            // Caught up: no record to date, and no broker round trip.
            let oldest = match records {
                Some(0) => None,
                _ => match self.bus.oldest_unprocessed(group, &topics).await {
                    Ok(oldest) => oldest,
                    Err(error) => {
                        tracing::warn!(group = %group, error = %error, "oldest unprocessed record unavailable");
                        None
                    }
                },
            };
            consumer_lag.push(GroupLag {
                group: group.clone(),
                records,
                oldest_seconds: oldest.map(seconds_since),
            });
        }
        let consolidation = match &self.buffer {
            None => None,
            Some(buffer) => match buffer.figures().await {
                Ok(mut figures) => {
                    figures.oldest_seconds = figures.oldest.map(seconds_since);
                    Some(figures)
                }
                Err(error) => {
                    tracing::warn!(error = %error, "consolidation buffer figures unavailable");
                    None
                }
            },
        };
        let consolidator_lag = consumer_lag
            .iter()
            .find(|lag| lag.group == CONSOLIDATOR_GROUP)
            .and_then(|lag| lag.records);
        let unconsolidated = match (consolidator_lag, &consolidation) {
            (Some(lag), Some(buffer)) => Some(lag + buffer.messages),
            _ => None,
        };
        let disk_free_bytes = match &self.disk {
            None => None,
            Some(dir) => {
                let dir = dir.clone();
                // statvfs blocks: a network file system may take its time.
                let read = actix_web::rt::task::spawn_blocking(move || fs4::available_space(&dir))
                    .await
                    .map_err(|e| e.to_string())
                    .and_then(|free| free.map_err(|e| e.to_string()));
                match read {
                    Ok(free) => Some(free),
                    Err(error) => {
                        // Unknown is not short: ingest goes on accepting.
                        tracing::warn!(error = %error, "free disk space unavailable");
                        None
                    }
                }
            }
        };
        let mut reading = Reading {
            relay_lag: self.relay.lag().max(0) as u64,
            consumer_lag,
            consolidation,
            unconsolidated,
            disk_free_bytes,
            degraded: Vec::new(),
        };
        reading.degraded = degraded(&reading, &self.limits);
        reading
    }
}

fn seconds_since(at: DateTime<Utc>) -> f64 {
    ((Utc::now() - at).num_milliseconds().max(0) as f64) / 1000.0
}

/// The reasons a reading is degraded under `limits`, each naming the
/// figure and the limit it passed.
pub fn degraded(reading: &Reading, limits: &BacklogLimits) -> Vec<String> {
    let mut reasons = Vec::new();
    if reading.relay_lag > limits.degraded_records {
        reasons.push(format!(
            "relay lag {} > {}",
            reading.relay_lag, limits.degraded_records
        ));
    }
    for GroupLag {
        group,
        records,
        oldest_seconds,
    } in &reading.consumer_lag
    {
        if let Some(lag) = records.filter(|&lag| lag > limits.degraded_records) {
            reasons.push(format!(
                "consumer group {group} lag {lag} > {}",
                limits.degraded_records
            ));
        }
        if let Some(age) = oldest_seconds.filter(|&age| age > limits.degraded_age.as_secs_f64()) {
            reasons.push(format!(
                "consumer group {group}'s oldest record waited {age:.0} s > {} s",
                limits.degraded_age.as_secs()
            ));
        }
    }
    if let Some(waiting) = reading
        .unconsolidated
        .filter(|&w| w > limits.degraded_records)
    {
        reasons.push(format!(
            "unconsolidated messages {waiting} > {}",
            limits.degraded_records
        ));
    }
    if let Some(age) = reading
        .consolidation
        .and_then(|c| c.oldest_seconds)
        .filter(|&age| age > limits.degraded_age.as_secs_f64())
    {
        reasons.push(format!(
            "oldest buffered message waited {age:.0} s > {} s",
            limits.degraded_age.as_secs()
        ));
    }
    if let Some(free) = reading
        .disk_free_bytes
        .filter(|&free| free < limits.min_free_disk)
    {
        reasons.push(format!(
            "free disk {free} bytes < {} bytes",
            limits.min_free_disk
        ));
    }
    reasons
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lag(group: &str, records: Option<u64>, oldest_seconds: Option<f64>) -> GroupLag {
        GroupLag {
            group: group.into(),
            records,
            oldest_seconds,
        }
    }

    fn limits() -> BacklogLimits {
        BacklogLimits {
            degraded_records: 100,
            degraded_age: Duration::from_secs(60),
            ceiling: 1000,
            slowdown: None,
            min_free_disk: 1000,
        }
    }

    /// An in-process bus on a fresh database, and the dir that holds it.
    async fn in_process_bus() -> (tempfile::TempDir, Arc<dyn Bus>) {
        let dir = tempfile::tempdir().unwrap();
        let pool = mnemo_event_store::sqlite::connect(&dir.path().join("mnemo.db"))
            .await
            .unwrap();
        let bus = Arc::new(mnemo_bus::in_process::InProcessBus::new(pool, 2));
        (dir, bus)
    }

    fn record(key: &str) -> mnemo_bus::OutgoingRecord {
        mnemo_bus::OutgoingRecord {
            key: key.to_owned(),
            payload: b"x".to_vec(),
            headers: Vec::new(),
        }
    }

    #[tokio::test]
    async fn a_reused_reading_says_how_old_it_is_and_a_stale_one_is_taken_again() {
        let (_dir, bus) = in_process_bus().await;
        let backlog = Backlog::new(
            bus.clone(),
            Arc::new(RelayStats::default()),
            vec![("g".to_owned(), vec!["t.a".to_owned()])],
            None,
            limits(),
        );
        let (first, age) = backlog.read_with_age().await;
        assert_eq!(age, Duration::ZERO, "a fresh reading");
        assert_eq!(first.consumer_lag[0].records, Some(0));

        // A record published now is not in the reading reused for a while,
        // and the reading says how long it has been reused.
        // (A short wait: a busy machine has the rest of the second.)
        bus.publish("t.a", vec![record("a/1")]).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        let (reused, age) = backlog.read_with_age().await;
        assert!(Arc::ptr_eq(&first, &reused));
        assert!(
            (Duration::from_millis(100)..Backlog::FRESH_FOR).contains(&age),
            "{age:?}"
        );

        tokio::time::sleep(Backlog::FRESH_FOR).await;
        let (taken, age) = backlog.read_with_age().await;
        assert_eq!(age, Duration::ZERO, "taken again");
        assert_eq!(taken.consumer_lag[0].records, Some(1));
    }

    #[tokio::test]
    async fn a_group_behind_reports_its_oldest_record_and_degrades_past_the_age() {
        let (_dir, bus) = in_process_bus().await;
        let backlog = |age: Duration| {
            Backlog::new(
                bus.clone(),
                Arc::new(RelayStats::default()),
                vec![
                    ("stuck".to_owned(), vec!["t.old".to_owned()]),
                    ("idle".to_owned(), vec!["t.none".to_owned()]),
                ],
                None,
                BacklogLimits {
                    degraded_records: 100,
                    degraded_age: age,
                    ceiling: 1000,
                    slowdown: None,
                    min_free_disk: 0,
                },
            )
        };
        bus.publish("t.old", vec![record("a/1"), record("a/2")])
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(1200)).await;
        let reading = backlog(Duration::from_secs(600)).read().await;
        let stuck = &reading.consumer_lag[0];
        assert_eq!(stuck.records, Some(2));
        let age = stuck.oldest_seconds.expect("two records wait");
        assert!((1.2..60.0).contains(&age), "{age}");
        assert_eq!(
            reading.consumer_lag[1],
            GroupLag {
                group: "idle".into(),
                records: Some(0),
                oldest_seconds: None
            }
        );
        assert!(reading.degraded.is_empty(), "{:?}", reading.degraded);
        let reading = backlog(Duration::from_secs(1)).read().await;
        assert_eq!(reading.degraded.len(), 1, "{:?}", reading.degraded);
        assert!(
            reading.degraded[0].starts_with("consumer group stuck's oldest record waited"),
            "{:?}",
            reading.degraded
        );
    }

    #[test]
    fn a_quiet_pipeline_is_not_degraded() {
        let reading = Reading {
            relay_lag: 3,
            consumer_lag: vec![
                lag("consolidator", Some(100), Some(60.0)),
                lag("g", None, None),
            ],
            consolidation: Some(BufferFigures {
                oldest_seconds: Some(60.0),
                ..Default::default()
            }),
            unconsolidated: Some(100),
            disk_free_bytes: Some(1000),
            degraded: Vec::new(),
        };
        assert!(degraded(&reading, &limits()).is_empty());
    }

    #[test]
    fn each_figure_past_its_limit_is_a_reason() {
        let reading = Reading {
            relay_lag: 101,
            consumer_lag: vec![
                lag("retriever.memory-projection", Some(500), Some(1.0)),
                lag("retriever.episode-projection", Some(7), Some(90.0)),
            ],
            consolidation: Some(BufferFigures {
                messages: 200,
                conversations: 3,
                oldest: None,
                oldest_seconds: Some(61.0),
            }),
            unconsolidated: Some(200),
            disk_free_bytes: Some(999),
            degraded: Vec::new(),
        };
        assert_eq!(
            degraded(&reading, &limits()),
            [
                "relay lag 101 > 100",
                "consumer group retriever.memory-projection lag 500 > 100",
                "consumer group retriever.episode-projection's oldest record waited 90 s > 60 s",
                "unconsolidated messages 200 > 100",
                "oldest buffered message waited 61 s > 60 s",
                "free disk 999 bytes < 1000 bytes",
            ]
        );
    }

    /// The watched disk is read for real (statvfs of the temp dir): a
    /// floor above what is free makes the process short of disk and
    /// `degraded`; the same disk under a floor of 0 never is.
    #[tokio::test]
    async fn a_disk_below_the_floor_is_short_and_degrades_and_a_zero_floor_never_is() {
        let (dir, bus) = in_process_bus().await;
        let backlog = |min_free_disk: u64| {
            Backlog::new(
                bus.clone(),
                Arc::new(RelayStats::default()),
                Vec::new(),
                None,
                BacklogLimits {
                    min_free_disk,
                    ..BacklogLimits::default()
                },
            )
            .watch_disk(dir.path())
        };
        let free = fs4::available_space(dir.path()).unwrap();
        assert!(free > 0);

        let short = backlog(u64::MAX);
        let reading = short.read().await;
        let seen = reading.disk_free_bytes.expect("the disk is read");
        // Other writers share the disk: the figure moves, but not by much.
        assert!(seen.abs_diff(free) < 1 << 30, "{seen} against {free}");
        assert_eq!(short.disk_short().await, Some(seen));
        assert_eq!(reading.degraded.len(), 1, "{:?}", reading.degraded);
        assert!(
            reading.degraded[0].starts_with("free disk "),
            "{:?}",
            reading.degraded
        );

        let ample = backlog(1);
        assert_eq!(ample.disk_short().await, None);
        assert!(ample.read().await.degraded.is_empty());
        let off = backlog(0);
        assert_eq!(off.disk_short().await, None);
        assert!(off.read().await.degraded.is_empty());
    }
}
