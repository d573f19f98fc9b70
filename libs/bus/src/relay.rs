//! The relay: the event table is the outbox. It reads committed events in
//! position order from its checkpoint, publishes each to its topic, and only
//! then moves the checkpoint. A crash between the two republishes a batch;
//! consumers are idempotent on `event_id`, so the effect is exactly once.
//! Where the bus keeps the checkpoint beside its records (the in-process
//! bus of the embedded mode, `Bus::keeps_relay_checkpoints`), a batch's
//! records and its checkpoint commit in one transaction, and nothing is
//! republished at all.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

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
}

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
        }
    }

    pub fn stats(&self) -> Arc<RelayStats> {
        self.stats.clone()
    }

    /// Publishes the next batch after the checkpoint. Returns how many events
    /// were published (0 when caught up).
    pub async fn run_once(&self) -> Result<usize, RelayError> {
        let position = self.checkpoints.load(&self.name).await?;
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
            self.stats
                .head_position
                .store(self.store.head_position().await?, Ordering::Relaxed);
            return Ok(0);
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
        self.stats.head_position.store(
            self.store.head_position().await?.max(last),
            Ordering::Relaxed,
        );
        Ok(count)
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
        loop {
            match self.run_once().await {
                Ok(0) => {
                    backoff = Duration::from_millis(100);
                    let position = self.stats.published_position.load(Ordering::Relaxed);
                    self.store
                        .wait_for_append(position, Duration::from_secs(1))
                        .await;
                }
                Ok(_) => backoff = Duration::from_millis(100),
                Err(error) => {
                    tracing::warn!(error = %error, backoff_ms = backoff.as_millis() as u64, "relay failed, retrying");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(10));
                }
            }
        }
    }
}
