//! The relay: the event table is the outbox. It reads committed events in
//! position order from its checkpoint, publishes each to its topic, and only
//! then moves the checkpoint. A crash between the two republishes a batch;
//! consumers are idempotent on `event_id`, so the effect is exactly once.
//! Where the bus keeps the checkpoint beside its records (the in-process
//! bus of the embedded mode, `Bus::keeps_relay_checkpoints`), a batch's
//! records and its checkpoint commit in one transaction, and nothing is
//! republished at all.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use mnemo_event_store::EventStore;

use crate::envelope::key_of;
use crate::{topics, Bus, BusError, OutgoingRecord};

/// Held while this process is the one running a named relay; dropping it
/// lets another process take over.
pub trait Leadership: Send {}

impl Leadership for () {}

/// Where a named reader of the log has got to.
#[async_trait]
pub trait CheckpointStore: Send + Sync + 'static {
    async fn load(&self, name: &str) -> Result<i64, BusError>;
    async fn save(&self, name: &str, position: i64) -> Result<(), BusError>;

    /// Returns once this process may run the relay `name`, and while the
    /// returned value lives, no other process sharing the store gets it.
    /// Several relays would publish every event several times (harmless for
    /// idempotent consumers, but N times the traffic). Stores only one
    /// process uses (SQLite) grant it at once.
    async fn lead(&self, _name: &str) -> Result<Box<dyn Leadership>, BusError> {
        Ok(Box::new(()))
    }
}

#[cfg(feature = "sqlite")]
pub use sqlite_checkpoints::SqliteCheckpointStore;

/// Moves a relay's checkpoint forward (never back) in SQLite: what
/// [`SqliteCheckpointStore`] runs, and the in-process bus in the
/// transaction that publishes a batch.
#[cfg(feature = "sqlite")]
pub(crate) const SAVE_SQLITE_CHECKPOINT: &str =
    "INSERT INTO relay_checkpoints (name, position) VALUES (?, ?) \
     ON CONFLICT (name) DO UPDATE SET position = MAX(position, excluded.position)";

#[cfg(feature = "sqlite")]
mod sqlite_checkpoints {
    use super::*;
    use sqlx::SqlitePool;

    #[derive(Clone)]
    pub struct SqliteCheckpointStore {
        pool: SqlitePool,
    }

    impl SqliteCheckpointStore {
        pub fn new(pool: SqlitePool) -> Self {
            SqliteCheckpointStore { pool }
        }
    }

    #[async_trait]
    impl CheckpointStore for SqliteCheckpointStore {
        async fn load(&self, name: &str) -> Result<i64, BusError> {
            let position: Option<i64> =
                sqlx::query_scalar("SELECT position FROM relay_checkpoints WHERE name = ?")
                    .bind(name)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(|e| BusError::Backend(e.to_string()))?;
            Ok(position.unwrap_or(0))
        }

        async fn save(&self, name: &str, position: i64) -> Result<(), BusError> {
            sqlx::query(SAVE_SQLITE_CHECKPOINT)
                .bind(name)
                .bind(position)
                .execute(&self.pool)
                .await
                .map_err(|e| BusError::Backend(e.to_string()))?;
            Ok(())
        }
    }
}

/// Read by the metrics endpoint at scrape time.
#[derive(Debug, Default)]
pub struct RelayStats {
    pub published_position: AtomicI64,
    pub head_position: AtomicI64,
    pub published_total: AtomicI64,
}

impl RelayStats {
    pub fn lag(&self) -> i64 {
        (self.head_position.load(Ordering::Relaxed)
            - self.published_position.load(Ordering::Relaxed))
        .max(0)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    #[error(transparent)]
    Store(#[from] mnemo_event_store::EventStoreError),
    #[error(transparent)]
    Bus(#[from] BusError),
}

impl RelayError {
    /// A stable code for logs: the failing side's own code.
    pub fn code(&self) -> &'static str {
        match self {
            RelayError::Store(e) => e.code(),
            RelayError::Bus(e) => e.code(),
        }
    }
}

/// The relay's name in the checkpoint store: the position up to which the
/// log has been published.
pub const CHECKPOINT: &str = "relay";

pub struct Relay {
    store: Arc<dyn EventStore>,
    bus: Arc<dyn Bus>,
    checkpoints: Arc<dyn CheckpointStore>,
    name: String,
    batch_size: u32,
    stats: Arc<RelayStats>,
    /// When the log's head was last read (`note_head`).
    head_read_at: Mutex<Option<Instant>>,
}

/// How often the relay reads the log's head for its lag figure at most.
const HEAD_EVERY: Duration = Duration::from_millis(100);

/// How long the relay gathers appends after a batch that was neither empty
/// nor full before it publishes the next.
pub const GATHER: Duration = Duration::from_millis(20);

impl Relay {
    pub fn new(
        store: Arc<dyn EventStore>,
        bus: Arc<dyn Bus>,
        checkpoints: Arc<dyn CheckpointStore>,
    ) -> Self {
        Relay {
            store,
            bus,
            checkpoints,
            name: CHECKPOINT.to_owned(),
            batch_size: 500,
            stats: Arc::new(RelayStats::default()),
            head_read_at: Mutex::new(None),
        }
    }

    pub fn stats(&self) -> Arc<RelayStats> {
        self.stats.clone()
    }

    /// Publishes the next batch after the checkpoint. Returns how many events
    /// were published (0 when caught up).
    pub async fn run_once(&self) -> Result<usize, RelayError> {
        let position = self.checkpoints.load(&self.name).await?;
        Ok(self.publish_after(position).await?.0)
    }

    /// Publishes the next batch after `position`, the checkpoint; returns
    /// how many events it published and where the checkpoint is now.
    async fn publish_after(&self, position: i64) -> Result<(usize, i64), RelayError> {
        self.stats
            .published_position
            .store(position, Ordering::Relaxed);
        // Encoded by the store: where it keeps the payload as JSON text, the
        // text goes into the record as it is, never parsed and written again.
        let events = self
            .store
            .read_all_encoded(position, self.batch_size)
            .await?;
        let Some(last) = events.last().map(|e| e.global_position) else {
            self.note_head(position).await?;
            return Ok((0, position));
        };
        let count = events.len();
        // Consecutive events of one topic go out in one run; order across
        // topics does not matter, order within a key does and is kept.
        let mut runs: Vec<(&'static str, Vec<OutgoingRecord>)> = Vec::new();
        for event in events {
            let topic = topics::for_event_type(&event.event_type);
            if runs.last().is_none_or(|(t, _)| *t != topic) {
                runs.push((topic, Vec::new()));
            }
            let key = key_of(&event.tenant, event.subject.as_ref(), &event.stream_id);
            let mut headers = vec![
                ("event_id".to_owned(), event.event_id.to_string()),
                ("event_type".to_owned(), event.event_type),
                ("tenant".to_owned(), event.tenant.to_string()),
            ];
            if let Some(traceparent) = event.traceparent {
                headers.push(("traceparent".to_owned(), traceparent));
            }
            let (_, run) = runs.last_mut().expect("pushed above");
            run.push(OutgoingRecord {
                key,
                payload: event.envelope,
                headers,
            });
        }
        if self.bus.keeps_relay_checkpoints() {
            self.bus
                .publish_checkpointed(runs, &self.name, last)
                .await?;
        } else {
            for (topic, run) in runs {
                self.bus.publish(topic, run).await?;
            }
            self.checkpoints.save(&self.name, last).await?;
        }
        self.stats.published_position.store(last, Ordering::Relaxed);
        self.stats
            .published_total
            .fetch_add(count as i64, Ordering::Relaxed);
        self.note_head(last).await?;
        Ok((count, last))
    }

    /// Updates the head of the log that the lag figure compares with
    /// `published`. The head is read at most once per [`HEAD_EVERY`]: it
    /// only feeds that figure, and reading it after every batch was a
    /// query per batch.
    async fn note_head(&self, published: i64) -> Result<(), RelayError> {
        let due = {
            let mut read_at = self.head_read_at.lock().unwrap_or_else(|p| p.into_inner());
            let due = read_at.is_none_or(|at| at.elapsed() >= HEAD_EVERY);
            if due {
                *read_at = Some(Instant::now());
            }
            due
        };
        let head = if due {
            self.store.head_position().await?
        } else {
            self.stats.head_position.load(Ordering::Relaxed)
        };
        self.stats
            .head_position
            .store(head.max(published), Ordering::Relaxed);
        Ok(())
    }

    /// Runs until the task is dropped. Errors are logged and retried with
    /// backoff: a dead bus delays delivery, it never loses an event.
    pub async fn run(&self) {
        let mut backoff = Duration::from_millis(100);
        let _leadership = loop {
            match self.checkpoints.lead(&self.name).await {
                Ok(leadership) => break leadership,
                Err(error) => {
                    tracing::warn!(error = %error, "relay cannot take the lead, retrying");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(10));
                }
            }
        };
        tracing::info!(relay = %self.name, "relay is running");
        backoff = Duration::from_millis(100);
        // While this relay leads, nobody else moves its checkpoint: it is
        // read once, then known. After a failure it is read again, since a
        // failed commit may or may not have moved it.
        let mut position = None;
        // When the last batch that was neither empty nor full went out.
        let mut trickled: Option<Instant> = None;
        loop {
            // Under a steady trickle of appends, each batch a few events,
            // gather for a moment before the next one: a batch costs a
            // transaction, and wakes every consumer for a run of its own.
            // The first event after a quiet spell, and a backlog (full
            // batches), go at once.
            if let Some(at) = trickled.take() {
                tokio::time::sleep_until((at + GATHER).into()).await;
            }
            let after = match position {
                Some(after) => after,
                None => match self.checkpoints.load(&self.name).await {
                    Ok(after) => after,
                    Err(error) => {
                        tracing::warn!(error = %error, backoff_ms = backoff.as_millis() as u64, "relay cannot read its checkpoint, retrying");
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2).min(Duration::from_secs(10));
                        continue;
                    }
                },
            };
            match self.publish_after(after).await {
                Ok((0, now)) => {
                    backoff = Duration::from_millis(100);
                    position = Some(now);
                    self.store
                        .wait_for_append(now, Duration::from_secs(1))
                        .await;
                }
                Ok((count, now)) => {
                    backoff = Duration::from_millis(100);
                    position = Some(now);
                    if count < self.batch_size as usize {
                        trickled = Some(Instant::now());
                    }
                }
                Err(error) => {
                    position = None;
                    tracing::warn!(error = %error, backoff_ms = backoff.as_millis() as u64, "relay failed, retrying");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(10));
                }
            }
        }
    }
}
