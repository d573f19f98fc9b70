//! The embedded mode's bus: topics are tables in the SQLite database, so a
//! record published before a crash is still there after it, and a group's
//! committed offsets survive restarts. Partitions are chosen by key hash as
//! Kafka does; one member per consumer group (the embedded mode runs one
//! instance of each service), and a second member is refused rather than
//! silently given duplicate deliveries.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::{Row, SqlitePool};
use tokio::sync::watch;

use crate::{Bus, BusError, Delivery, OutgoingRecord, Subscription};

#[derive(Clone)]
pub struct InProcessBus {
    inner: Arc<Inner>,
}

struct Inner {
    pool: SqlitePool,
    partitions: u32,
    /// The relay's checkpoints (`relay_checkpoints`) are in this database
    /// too: see [`InProcessBus::keeping_relay_checkpoints`].
    relay_checkpoints: bool,
    /// How many publishes each topic has had: a subscription wakes when one
    /// of its own topics moves, not on every publish (a relay batch of
    /// messages woke the groups of every other topic for a query per
    /// partition that found nothing).
    published: watch::Sender<HashMap<String, u64>>,
    /// Held by every write. It guards each partition's next offset as
    /// this bus last handed it out, so a publish does not ask the table
    /// for its partitions' heads: only a bus writes its records (a prune
    /// keeps each partition's newest), and an offset another instance on
    /// the same database handed out meanwhile fails the insert, which
    /// forgets what it knew and tries again from the table.
    write_lock: tokio::sync::Mutex<NextOffsets>,
    active_groups: Mutex<HashSet<String>>,
}

/// Each partition's next offset, by (topic, partition).
type NextOffsets = HashMap<(String, i32), i64>;

fn backend(error: sqlx::Error) -> BusError {
    BusError::Backend(error.to_string())
}

/// FNV-1a: stable across processes and releases, unlike std's hasher.
pub fn partition_for(key: &str, partitions: u32) -> i32 {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in key.bytes() {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    (hash % partitions.max(1)) as i32
}

impl InProcessBus {
    pub fn new(pool: SqlitePool, partitions: u32) -> Self {
        Self::open(pool, partitions, false)
    }

    /// A bus whose database also holds the relay's checkpoints: only where
    /// the relay's `CheckpointStore` is a `SqliteCheckpointStore` on the
    /// same database (the embedded mode with its log in SQLite), since the
    /// relay reads its checkpoint there and this bus moves it
    /// ([`Bus::publish_checkpointed`]).
    pub fn keeping_relay_checkpoints(pool: SqlitePool, partitions: u32) -> Self {
        Self::open(pool, partitions, true)
    }

    fn open(pool: SqlitePool, partitions: u32, relay_checkpoints: bool) -> Self {
        InProcessBus {
            inner: Arc::new(Inner {
                pool,
                partitions: partitions.max(1),
                relay_checkpoints,
                published: watch::channel(HashMap::new()).0,
                write_lock: tokio::sync::Mutex::new(HashMap::new()),
                active_groups: Mutex::new(HashSet::new()),
            }),
        }
    }
}

/// Records one statement inserts at most: 7 parameters a row stays far
/// below SQLite's 32,766.
const ROWS_PER_INSERT: usize = 500;

/// Records one statement of [`InProcessBus::prune`] deletes at most, so a
/// prune never holds the database's write lock for long.
const ROWS_PER_PRUNE: i64 = 2_000;

impl InProcessBus {
    /// Deletes the records every group reading their topic has committed:
    /// `readers` lists each consumer group with the topics it reads, and a
    /// partition keeps what its slowest reader has not committed (all of
    /// it while a reader never committed there). A topic no group reads
    /// (dead letters) is kept whole. The newest record of a partition is
    /// always kept, so its offsets go on from it. Without this the bus
    /// holds a second copy of every event of the log for good: a record
    /// below every reader's committed offset is never delivered again (a
    /// new projection replays the log, not the bus). Returns how many
    /// records it deleted.
    pub async fn prune(&self, readers: &[(&str, &[&str])]) -> Result<u64, BusError> {
        let mut topics: Vec<&str> = readers
            .iter()
            .flat_map(|(_, t)| t.iter().copied())
            .collect();
        topics.sort_unstable();
        topics.dedup();
        let mut deleted = 0;
        for topic in topics {
            let groups: Vec<&str> = readers
                .iter()
                .filter(|(_, read)| read.contains(&topic))
                .map(|(group, _)| *group)
                .collect();
            for partition in 0..self.inner.partitions as i32 {
                let mut below: Option<i64> = sqlx::query_scalar(
                    "SELECT MAX(\"offset\") FROM bus_records WHERE topic = ? AND partition = ?",
                )
                .bind(topic)
                .bind(partition)
                .fetch_one(&self.inner.pool)
                .await
                .map_err(backend)?;
                for group in &groups {
                    let committed = self
                        .group_figure(&format!("SELECT {COMMITTED}"), topic, group, partition)
                        .await?;
                    below = below.map(|b| b.min(committed));
                }
                let Some(below) = below else { continue };
                loop {
                    let done = sqlx::query(
                        "DELETE FROM bus_records WHERE topic = ?1 AND partition = ?2 \
                         AND \"offset\" < MIN(?3, (SELECT MIN(\"offset\") FROM bus_records \
                         WHERE topic = ?1 AND partition = ?2) + ?4)",
                    )
                    .bind(topic)
                    .bind(partition)
                    .bind(below)
                    .bind(ROWS_PER_PRUNE)
                    .execute(&self.inner.pool)
                    .await
                    .map_err(backend)?
                    .rows_affected();
                    deleted += done;
                    if done == 0 {
                        break;
                    }
                }
            }
        }
        Ok(deleted)
    }

    /// A figure of one group in one partition: `sql` binds the topic as
    /// `?1`, the group as `?2` and the partition as `?3`.
    async fn group_figure(
        &self,
        sql: &str,
        topic: &str,
        group: &str,
        partition: i32,
    ) -> Result<i64, BusError> {
        sqlx::query_scalar(sql)
            .bind(topic)
            .bind(group)
            .bind(partition)
            .fetch_one(&self.inner.pool)
            .await
            .map_err(backend)
    }
}

/// Group `?2`'s committed offset in partition `?3` of topic `?1` (0 when
/// it never committed), as a scalar subquery.
const COMMITTED: &str = "COALESCE((SELECT next_offset FROM bus_offsets WHERE group_id = ?2 \
     AND topic = ?1 AND partition = ?3), 0)";

impl InProcessBus {
    /// Appends each run of records to its topic and, with a checkpoint,
    /// moves the relay's checkpoint `(name, position)`, in one transaction
    /// under the bus's write lock; then wakes the subscriptions of the
    /// topics that received records.
    async fn write(
        &self,
        runs: &[(&str, Vec<OutgoingRecord>)],
        checkpoint: Option<(&str, i64)>,
    ) -> Result<(), BusError> {
        let mut next = self.inner.write_lock.lock().await;
        let written = match self.write_once(&mut next, runs, checkpoint).await {
            Err(_) if !next.is_empty() => {
                // Perhaps an offset another instance handed out: from the
                // table's heads once more.
                next.clear();
                self.write_once(&mut next, runs, checkpoint).await
            }
            written => written,
        };
        if written.is_err() {
            next.clear();
        }
        written?;
        drop(next);
        let topics: Vec<&str> = runs
            .iter()
            .filter(|(_, records)| !records.is_empty())
            .map(|(topic, _)| *topic)
            .collect();
        if !topics.is_empty() {
            self.inner.published.send_modify(|counts| {
                for topic in topics {
                    *counts.entry(topic.to_owned()).or_default() += 1;
                }
            });
        }
        Ok(())
    }

    /// [`InProcessBus::write`]'s transaction; `next` gains the offsets it
    /// hands out only once it has committed.
    async fn write_once(
        &self,
        next: &mut NextOffsets,
        runs: &[(&str, Vec<OutgoingRecord>)],
        checkpoint: Option<(&str, i64)>,
    ) -> Result<(), BusError> {
        let mut tx = self
            .inner
            .pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(backend)?;
        let mut handed = next.clone();
        for (topic, records) in runs {
            self.insert(&mut tx, topic, records, &mut handed).await?;
        }
        if let Some((name, position)) = checkpoint {
            sqlx::query(crate::relay::SAVE_SQLITE_CHECKPOINT)
                .bind(name)
                .bind(position)
                .execute(&mut *tx)
                .await
                .map_err(backend)?;
        }
        tx.commit().await.map_err(backend)?;
        *next = handed;
        Ok(())
    }

    /// Appends `records` to `topic` in `tx`, each to its key's partition
    /// at the partition's next offset; `next` carries the offsets a
    /// transaction has handed out, by topic and partition.
    async fn insert(
        &self,
        tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
        topic: &str,
        records: &[OutgoingRecord],
        next: &mut HashMap<(String, i32), i64>,
    ) -> Result<(), BusError> {
        let now = Utc::now().timestamp_micros();
        let mut rows = Vec::with_capacity(records.len());
        for record in records {
            let partition = partition_for(&record.key, self.inner.partitions);
            let key = (topic.to_owned(), partition);
            let offset = match next.get(&key) {
                Some(offset) => *offset,
                None => sqlx::query_scalar(
                    "SELECT COALESCE(MAX(\"offset\") + 1, 0) FROM bus_records WHERE topic = ? AND partition = ?",
                )
                .bind(topic)
                .bind(partition)
                .fetch_one(&mut **tx)
                .await
                .map_err(backend)?,
            };
            let headers = serde_json::to_string(&record.headers)
                .map_err(|e| BusError::Backend(e.to_string()))?;
            rows.push((partition, offset, record, headers));
            next.insert(key, offset + 1);
        }
        // Multi-row statements: each statement is a round trip to the
        // connection's thread made while holding the write lock.
        for chunk in rows.chunks(ROWS_PER_INSERT) {
            let mut insert = sqlx::QueryBuilder::new(
                "INSERT INTO bus_records (topic, partition, \"offset\", record_key, payload, headers, published_at) ",
            );
            insert.push_values(chunk, |mut row, (partition, offset, record, headers)| {
                row.push_bind(topic)
                    .push_bind(*partition)
                    .push_bind(*offset)
                    .push_bind(&record.key)
                    .push_bind(&record.payload)
                    .push_bind(headers)
                    .push_bind(now);
            });
            insert.build().execute(&mut **tx).await.map_err(backend)?;
        }
        Ok(())
    }
}

#[async_trait]
impl Bus for InProcessBus {
    async fn publish(&self, topic: &str, records: Vec<OutgoingRecord>) -> Result<(), BusError> {
        if records.is_empty() {
            return Ok(());
        }
        self.write(&[(topic, records)], None).await
    }

    fn keeps_relay_checkpoints(&self) -> bool {
        self.inner.relay_checkpoints
    }

    async fn publish_checkpointed(
        &self,
        runs: Vec<(&'static str, Vec<OutgoingRecord>)>,
        name: &str,
        position: i64,
    ) -> Result<(), BusError> {
        if !self.inner.relay_checkpoints {
            return Err(BusError::no_relay_checkpoints());
        }
        self.write(&runs, Some((name, position))).await
    }

    // Both readings look at one partition at a time, through the primary
    // key: a partition's offsets have no gaps, and only records below every
    // reader's committed offset are deleted (`prune`, which keeps the
    // newest), so what a group has not committed is the partition's head
    // minus its committed offset, and the oldest of it is the record at
    // that offset. (Counting and scanning the uncommitted rows cost a scan
    // of the topic per reading: at 100k messages, `/readyz` polled every
    // 100 ms kept a core busy.)
    async fn lag(&self, group: &str, topics: &[&str]) -> Result<u64, BusError> {
        let mut behind = 0;
        for topic in topics {
            for partition in 0..self.inner.partitions as i32 {
                let count = self
                    .group_figure(
                        &format!(
                            "SELECT (SELECT COALESCE(MAX(\"offset\") + 1, 0) FROM bus_records \
                             WHERE topic = ?1 AND partition = ?3) - {COMMITTED}"
                        ),
                        topic,
                        group,
                        partition,
                    )
                    .await?;
                behind += count.max(0) as u64;
            }
        }
        Ok(behind)
    }

    async fn oldest_unprocessed(
        &self,
        group: &str,
        topics: &[&str],
    ) -> Result<Option<DateTime<Utc>>, BusError> {
        let mut oldest: Option<i64> = None;
        for topic in topics {
            for partition in 0..self.inner.partitions as i32 {
                let published: Option<i64> = sqlx::query_scalar(&format!(
                    "SELECT published_at FROM bus_records WHERE topic = ?1 AND partition = ?3 \
                     AND \"offset\" >= {COMMITTED} ORDER BY \"offset\" LIMIT 1"
                ))
                .bind(topic)
                .bind(group)
                .bind(partition)
                .fetch_optional(&self.inner.pool)
                .await
                .map_err(backend)?;
                oldest = match (oldest, published) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
            }
        }
        Ok(oldest.and_then(DateTime::from_timestamp_micros))
    }

    async fn subscribe(
        &self,
        group: &str,
        topics: &[&str],
    ) -> Result<Box<dyn Subscription>, BusError> {
        {
            let mut active = self.inner.active_groups.lock().expect("lock poisoned");
            if !active.insert(group.to_owned()) {
                return Err(BusError::GroupBusy(group.to_owned()));
            }
        }
        let mut positions = Vec::new();
        for topic in topics {
            for partition in 0..self.inner.partitions as i32 {
                let committed: Option<i64> = sqlx::query_scalar(
                    "SELECT next_offset FROM bus_offsets WHERE group_id = ? AND topic = ? AND partition = ?",
                )
                .bind(group)
                .bind(*topic)
                .bind(partition)
                .fetch_optional(&self.inner.pool)
                .await
                .map_err(backend)?;
                positions.push(((*topic).to_owned(), partition, committed.unwrap_or(0)));
            }
        }
        Ok(Box::new(InProcessSubscription {
            bus: self.inner.clone(),
            group: group.to_owned(),
            topics: topics.iter().map(|topic| (*topic).to_owned()).collect(),
            positions,
            cursor: 0,
            fetched: VecDeque::new(),
            published: self.inner.published.subscribe(),
        }))
    }
}

struct InProcessSubscription {
    bus: Arc<Inner>,
    group: String,
    /// (topic, partition, next offset to deliver).
    positions: Vec<(String, i32, i64)>,
    /// Round-robin start, so one busy partition cannot starve the others.
    cursor: usize,
    /// Records read ahead from one partition and not delivered yet: one
    /// query per [`FETCH`] records instead of one per record (the positions
    /// are already past them; a new subscription starts again from the
    /// committed offsets, so nothing read ahead is lost).
    fetched: VecDeque<Delivery>,
    /// The topics it reads, whose publishes wake it.
    topics: Vec<String>,
    published: watch::Receiver<HashMap<String, u64>>,
}

/// Records read from a partition in one query at most.
const FETCH: i64 = 128;

impl Drop for InProcessSubscription {
    fn drop(&mut self) {
        if let Ok(mut active) = self.bus.active_groups.lock() {
            active.remove(&self.group);
        }
    }
}

impl InProcessSubscription {
    /// How many publishes its topics have had, marked seen.
    fn publishes(&mut self) -> u64 {
        let counts = self.published.borrow_and_update();
        self.topics
            .iter()
            .filter_map(|topic| counts.get(topic))
            .sum()
    }

    async fn try_next(&mut self) -> Result<Option<Delivery>, BusError> {
        if let Some(delivery) = self.fetched.pop_front() {
            return Ok(Some(delivery));
        }
        let count = self.positions.len();
        for step in 0..count {
            let index = (self.cursor + step) % count;
            let (topic, partition, offset) = &self.positions[index];
            let rows = sqlx::query(
                "SELECT \"offset\", record_key, payload, headers FROM bus_records \
                 WHERE topic = ? AND partition = ? AND \"offset\" >= ? ORDER BY \"offset\" LIMIT ?",
            )
            .bind(topic)
            .bind(partition)
            .bind(offset)
            .bind(FETCH)
            .fetch_all(&self.bus.pool)
            .await
            .map_err(backend)?;
            let Some(last) = rows.last().map(|row| row.get::<i64, _>("offset")) else {
                continue;
            };
            // Decoded whole before any is kept: a bad record leaves the
            // partition where it was.
            let mut deliveries = Vec::with_capacity(rows.len());
            for row in rows {
                let headers: String = row.get("headers");
                deliveries.push(Delivery {
                    topic: topic.clone(),
                    partition: *partition,
                    offset: row.get("offset"),
                    key: row.get("record_key"),
                    payload: row.get("payload"),
                    headers: serde_json::from_str(&headers)
                        .map_err(|e| BusError::Backend(e.to_string()))?,
                });
            }
            self.fetched.extend(deliveries);
            self.positions[index].2 = last + 1;
            self.cursor = (index + 1) % count;
            return Ok(self.fetched.pop_front());
        }
        Ok(None)
    }
}

#[async_trait]
impl Subscription for InProcessSubscription {
    async fn poll(&mut self, timeout: Duration) -> Result<Option<Delivery>, BusError> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            // Mark the publishes so far seen before looking, so a publish
            // that lands between the query and the wait still wakes us.
            let seen = self.publishes();
            if let Some(delivery) = self.try_next().await? {
                return Ok(Some(delivery));
            }
            loop {
                match tokio::time::timeout_at(deadline, self.published.changed()).await {
                    Ok(Ok(())) if self.publishes() != seen => break,
                    // Another topic's publish.
                    Ok(Ok(())) => continue,
                    Ok(Err(_)) | Err(_) => return Ok(None),
                }
            }
        }
    }

    async fn commit(&mut self, delivery: &Delivery) -> Result<(), BusError> {
        sqlx::query(
            "INSERT INTO bus_offsets (group_id, topic, partition, next_offset) VALUES (?, ?, ?, ?) \
             ON CONFLICT (group_id, topic, partition) DO UPDATE SET next_offset = MAX(next_offset, excluded.next_offset)",
        )
        .bind(&self.group)
        .bind(&delivery.topic)
        .bind(delivery.partition)
        .bind(delivery.offset + 1)
        .execute(&self.bus.pool)
        .await
        .map_err(backend)?;
        Ok(())
    }
}
