//! The consumer loop every service runs: poll, decode, handle with retries,
//! commit only after success. A record that keeps failing goes to the
//! dead-letter topic with its error, and consumption continues.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use mnemo_domain::RecordedEvent;
use tracing::Instrument;

use crate::{topics, Bus, Delivery, EventEnvelope, OutgoingRecord, Subscription};

#[derive(Debug, thiserror::Error)]
pub enum HandlerError {
    /// Worth another try (a store was busy, a dependency timed out).
    #[error("retryable: {0}")]
    Retryable(String),
    /// Will never succeed (a payload that cannot be decoded).
    #[error("permanent: {0}")]
    Permanent(String),
}

impl HandlerError {
    /// A stable code for logs and dead-letter records.
    pub fn code(&self) -> &'static str {
        match self {
            HandlerError::Retryable(_) => "handler_retryable",
            HandlerError::Permanent(_) => "handler_permanent",
        }
    }
}

#[async_trait]
pub trait EventHandler: Send + Sync + 'static {
    /// Must be idempotent on `event.event_id`: delivery is at least once.
    async fn handle(&self, event: &RecordedEvent) -> Result<(), HandlerError>;

    /// Called with a run's events before they are handled one by one: a
    /// handler may read what they will need together (one read for the
    /// run instead of one per event). Only an optimisation: a failure is
    /// logged and the run is handled anyway, so `handle` must not depend
    /// on it, and what it read is no older than the run's events.
    async fn prepare(&self, run: &[RecordedEvent]) -> Result<(), HandlerError> {
        let _ = run;
        Ok(())
    }

    /// Makes durable what the events handled since the last call did. The
    /// consumer calls it after each run of records it polled and before it
    /// commits their offsets, so a handler may buffer writes (an index
    /// flush per run instead of one per record) without a crash losing
    /// what a commit already acknowledged. Must be safe to call again after
    /// a failure.
    async fn flush(&self) -> Result<(), HandlerError> {
        Ok(())
    }

    /// Called after a run whose flush the consumer defers (a lingering
    /// group, see [`ConsumerOptions::linger`]): makes what the run's
    /// events did visible to readers, without the durability `flush`
    /// gives, for a handler that buffers more than durability until its
    /// flush. A failure is logged; the next flush does the work.
    async fn settle(&self) -> Result<(), HandlerError> {
        Ok(())
    }
}

/// A handler of raw bus records, for topics that do not carry log events
/// (access signals).
#[async_trait]
pub trait RecordHandler: Send + Sync + 'static {
    async fn handle_record(&self, delivery: &Delivery) -> Result<(), HandlerError>;

    /// See [`EventHandler::prepare`].
    async fn prepare(&self, run: &[Delivery]) -> Result<(), HandlerError> {
        let _ = run;
        Ok(())
    }

    /// See [`EventHandler::flush`].
    async fn flush(&self) -> Result<(), HandlerError> {
        Ok(())
    }

    /// See [`EventHandler::settle`].
    async fn settle(&self) -> Result<(), HandlerError> {
        Ok(())
    }
}

/// Decodes a log event from the record, then hands it to an [`EventHandler`].
struct EnvelopeHandler {
    handler: Arc<dyn EventHandler>,
    /// The run's events as `prepare` decoded them, by (topic, partition,
    /// offset), each taken by `handle_record`: a record is decoded once.
    decoded: std::sync::Mutex<HashMap<(String, i32, i64), RecordedEvent>>,
}

impl EnvelopeHandler {
    fn decode(delivery: &Delivery) -> Result<RecordedEvent, HandlerError> {
        serde_json::from_slice::<EventEnvelope>(&delivery.payload)
            .map_err(|error| HandlerError::Permanent(format!("undecodable envelope: {error}")))
    }

    fn decoded(&self) -> std::sync::MutexGuard<'_, HashMap<(String, i32, i64), RecordedEvent>> {
        self.decoded.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[async_trait]
impl RecordHandler for EnvelopeHandler {
    async fn handle_record(&self, delivery: &Delivery) -> Result<(), HandlerError> {
        let key = (delivery.topic.clone(), delivery.partition, delivery.offset);
        let prepared = self.decoded().remove(&key);
        let event = match prepared {
            Some(event) => event,
            None => Self::decode(delivery)?,
        };
        self.handler.handle(&event).await
    }

    async fn prepare(&self, run: &[Delivery]) -> Result<(), HandlerError> {
        // An undecodable record is left to `handle_record`, which
        // dead-letters it.
        let (keys, events): (Vec<_>, Vec<_>) = run
            .iter()
            .filter_map(|delivery| {
                let event = Self::decode(delivery).ok()?;
                Some((
                    (delivery.topic.clone(), delivery.partition, delivery.offset),
                    event,
                ))
            })
            .unzip();
        let prepared = self.handler.prepare(&events).await;
        let mut decoded = self.decoded();
        // What an earlier run left (a dead-lettered record) is not read again.
        decoded.clear();
        decoded.extend(keys.into_iter().zip(events));
        prepared
    }

    async fn flush(&self) -> Result<(), HandlerError> {
        self.handler.flush().await
    }

    async fn settle(&self) -> Result<(), HandlerError> {
        self.handler.settle().await
    }
}

#[derive(Debug, Clone)]
pub struct ConsumerOptions {
    pub group: String,
    pub topics: Vec<String>,
    pub max_attempts: u32,
    pub first_backoff: Duration,
    pub poll_timeout: Duration,
    /// Records handled between two flushes and commits at most: what is
    /// already waiting is taken in one run (up to this many), so a busy
    /// topic costs one flush, one commit and one `prepare` read per run,
    /// not per record. 1,024 by default: at 100,000 posted messages the
    /// pipeline's CPU an item fell by 4-8 % from 256 (docs/performance.md,
    /// "Consumer runs of 1,024 records"); a crash redelivers at most a run
    /// more, which idempotent handlers absorb.
    pub max_batch: usize,
    /// While the group is behind (each run fills `max_batch`), flush and
    /// commit at most this often instead of after every run; once a run
    /// finds nothing more waiting, at once. `None`: after every run. Only
    /// for a handler whose flush is durability alone (what it handled is
    /// already visible): the episode projection, whose flush rewrites the
    /// vector index's segments and under load took a quarter of its time.
    pub flush_interval: Option<Duration>,
    /// After a run that leaves the group caught up, how long since the last
    /// flush it waits for more records before it flushes and commits: a
    /// trickle of small runs costs one flush per `linger`, not one per run,
    /// and a run after a quiet spell is flushed at once. `None`: at once.
    /// Only for a handler whose flush is durability alone, as for
    /// `flush_interval` (the episode projection: its points are searchable
    /// once written, its flush syncs the vector index to disk), or that
    /// makes a deferred run visible in [`EventHandler::settle`], which the
    /// consumer calls after each run it does not flush.
    pub linger: Option<Duration>,
    /// Keys of a run handled at once, each on a task of its own; the
    /// records of one key are always handled one after another, in order
    /// (the order the bus keeps). 1: the run in order on the consumer's
    /// task. Only for a handler whose `handle` may run for records of
    /// different keys at the same time.
    pub lanes: usize,
}

impl ConsumerOptions {
    pub fn new(group: &str, topics: &[&str]) -> Self {
        ConsumerOptions {
            group: group.to_owned(),
            topics: topics.iter().map(|t| (*t).to_owned()).collect(),
            max_attempts: 5,
            first_backoff: Duration::from_millis(50),
            poll_timeout: Duration::from_secs(1),
            max_batch: 1024,
            flush_interval: None,
            linger: None,
            lanes: 1,
        }
    }
}

async fn dead_letter(bus: &dyn Bus, group: &str, delivery: &Delivery, error: &str) {
    let mut headers = delivery.headers.clone();
    headers.extend([
        ("dead_letter.error".to_owned(), error.to_owned()),
        ("dead_letter.group".to_owned(), group.to_owned()),
        ("dead_letter.topic".to_owned(), delivery.topic.clone()),
        (
            "dead_letter.position".to_owned(),
            format!("{}/{}", delivery.partition, delivery.offset),
        ),
    ]);
    let record = OutgoingRecord {
        key: delivery.key.clone(),
        payload: delivery.payload.clone(),
        headers,
    };
    // Keep trying: committing past a record that reached neither its handler
    // nor the dead-letter topic would lose it.
    let mut backoff = Duration::from_millis(100);
    while let Err(publish_error) = bus
        .publish(topics::DEAD_LETTERS, vec![record.clone()])
        .await
    {
        tracing::warn!(error = %publish_error, "dead-letter publish failed, retrying");
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(10));
    }
}

/// Handles one delivery to completion: success, or dead-lettered.
async fn process(
    bus: &dyn Bus,
    options: &ConsumerOptions,
    handler: &dyn RecordHandler,
    delivery: &Delivery,
) {
    let mut backoff = options.first_backoff;
    let mut attempt = 1;
    loop {
        match handler.handle_record(delivery).await {
            Ok(()) => return,
            Err(HandlerError::Retryable(error)) if attempt < options.max_attempts => {
                tracing::warn!(group = %options.group, topic = %delivery.topic, offset = delivery.offset, attempt, error = %error, "handler failed, retrying");
                tokio::time::sleep(backoff).await;
                backoff *= 2;
                attempt += 1;
            }
            Err(error) => {
                tracing::error!(group = %options.group, topic = %delivery.topic, offset = delivery.offset, attempt, error = %error, "handler gave up, dead-lettering");
                dead_letter(bus, &options.group, delivery, &error.to_string()).await;
                return;
            }
        }
    }
}

/// Runs a consumer group member of log-event topics until the task is dropped.
pub async fn run_consumer(
    bus: Arc<dyn Bus>,
    options: ConsumerOptions,
    handler: Arc<dyn EventHandler>,
) {
    run_consumer_until(bus, options, handler, std::future::pending()).await
}

/// Runs a consumer group member of log-event topics until `stop` completes
/// (see [`run_record_consumer_until`]) or the task is dropped.
pub async fn run_consumer_until(
    bus: Arc<dyn Bus>,
    options: ConsumerOptions,
    handler: Arc<dyn EventHandler>,
    stop: impl std::future::Future<Output = ()>,
) {
    let handler = EnvelopeHandler {
        handler,
        decoded: Default::default(),
    };
    run_record_consumer_until(bus, options, Arc::new(handler), stop).await
}

/// Runs a consumer group member of raw-record topics until the task is dropped.
pub async fn run_record_consumer(
    bus: Arc<dyn Bus>,
    options: ConsumerOptions,
    handler: Arc<dyn RecordHandler>,
) {
    run_record_consumer_until(bus, options, handler, std::future::pending()).await
}

/// Runs a consumer group member of raw-record topics until `stop`
/// completes, then flushes and commits what it handled and returns. `stop`
/// is looked at between runs, never inside one: a run under way is
/// finished first. Without it (a task dropped), records handled but not
/// yet committed (a lingering group's, or the episode projection's between
/// two flushes) are delivered again at the next start: harmless to the
/// end state, handlers being idempotent, but a replay shows, for its
/// moment, what later records of the same partition had undone (an
/// episode forgotten, indexed again until its `EpisodesForgotten` comes
/// round).
pub async fn run_record_consumer_until(
    bus: Arc<dyn Bus>,
    options: ConsumerOptions,
    handler: Arc<dyn RecordHandler>,
    stop: impl std::future::Future<Output = ()>,
) {
    let mut stop = std::pin::pin!(stop);
    let topics: Vec<&str> = options.topics.iter().map(String::as_str).collect();
    let mut backoff = Duration::from_millis(100);
    let mut subscription: Box<dyn Subscription> = loop {
        match bus.subscribe(&options.group, &topics).await {
            Ok(subscription) => break subscription,
            Err(error) => {
                tracing::warn!(group = %options.group, error = %error, "subscribe failed, retrying");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(10));
            }
        }
    };
    let mut unflushed = Unflushed {
        last: Vec::new(),
        since: Instant::now(),
    };
    loop {
        // With handled records not yet flushed, only look (a lingering
        // group: wait out what is left of its linger): nothing waiting
        // means caught up, and they are flushed now.
        let timeout = match options.linger {
            _ if unflushed.last.is_empty() => options.poll_timeout,
            Some(linger) => linger.saturating_sub(unflushed.since.elapsed()),
            None => Duration::ZERO,
        };
        // Biased: a stop asked for is seen before another run is taken.
        let polled = tokio::select! {
            biased;
            () = &mut stop => None,
            polled = subscription.poll(timeout) => Some(polled),
        };
        let Some(polled) = polled else {
            if !unflushed.last.is_empty() {
                unflushed
                    .flush_and_commit(&options, handler.as_ref(), subscription.as_mut())
                    .await;
            }
            return;
        };
        let first = match polled {
            Ok(Some(delivery)) => delivery,
            Ok(None) => {
                if !unflushed.last.is_empty() {
                    unflushed
                        .flush_and_commit(&options, handler.as_ref(), subscription.as_mut())
                        .await;
                }
                continue;
            }
            Err(error) => {
                tracing::warn!(group = %options.group, error = %error, "poll failed, retrying");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(10));
                continue;
            }
        };
        backoff = Duration::from_millis(100);
        // Whatever else is already waiting joins this run; nothing waits
        // for more to arrive.
        let mut run = vec![first];
        while run.len() < options.max_batch.max(1) {
            match subscription.poll(Duration::ZERO).await {
                Ok(Some(delivery)) => run.push(delivery),
                Ok(None) | Err(_) => break,
            }
        }
        if let Err(error) = handler.prepare(&run).await {
            tracing::warn!(group = %options.group, error = %error, "preparing a run failed; its records are handled one by one");
        }
        let behind = run.len() >= options.max_batch.max(1);
        unflushed
            .last
            .extend(last_per_partition(&run).into_iter().cloned());
        unflushed.last = last_per_partition(&unflushed.last)
            .into_iter()
            .cloned()
            .collect();
        if options.lanes <= 1 {
            for delivery in &run {
                process_traced(bus.as_ref(), &options, handler.as_ref(), delivery).await;
            }
        } else {
            handle_lanes(&bus, &options, &handler, lanes_of(run)).await;
        }
        let since = unflushed.since.elapsed();
        let due = match (options.flush_interval, options.linger) {
            (Some(interval), _) if behind => since >= interval,
            (_, Some(linger)) if !behind => since >= linger,
            _ => true,
        };
        if due {
            unflushed
                .flush_and_commit(&options, handler.as_ref(), subscription.as_mut())
                .await;
        } else if let Err(error) = handler.settle().await {
            tracing::warn!(group = %options.group, error = %error, "settling a run failed; its flush will do the work");
        }
    }
}

/// Handles one delivery as [`process`] does, in a span that joins the
/// trace of the request that caused the record (and any event the handler
/// appends joins it too, via `current_traceparent`): ingest → consolidator
/// → retriever is one trace.
async fn process_traced(
    bus: &dyn Bus,
    options: &ConsumerOptions,
    handler: &dyn RecordHandler,
    delivery: &Delivery,
) {
    let span = tracing::info_span!("consume", group = %options.group, topic = %delivery.topic, partition = delivery.partition, offset = delivery.offset);
    if let Some(traceparent) = delivery.header(mnemo_telemetry::TRACEPARENT) {
        mnemo_telemetry::set_parent_from_traceparent(&span, traceparent);
    }
    process(bus, options, handler, delivery)
        .instrument(span)
        .await;
}

/// A run's deliveries per key (within its topic and partition), each lane
/// in delivery order, the lanes in the order their first record came.
///
/// By key, not by partition: the bus keeps order only within a key, and
/// the embedded bus has one partition unless configured otherwise, so
/// lanes by partition would leave every record of a run on one lane.
fn lanes_of(run: Vec<Delivery>) -> Vec<Vec<Delivery>> {
    let mut lanes: Vec<Vec<Delivery>> = Vec::new();
    let mut lane_of: HashMap<(String, i32, String), usize> = HashMap::new();
    for delivery in run {
        let key = (
            delivery.topic.clone(),
            delivery.partition,
            delivery.key.clone(),
        );
        match lane_of.get(&key) {
            Some(&lane) => lanes[lane].push(delivery),
            None => {
                lane_of.insert(key, lanes.len());
                lanes.push(vec![delivery]);
            }
        }
    }
    lanes
}

/// Handles up to `options.lanes` lanes at once, each on a task of its own
/// (so one lane's CPU work runs beside another's waits, on another core),
/// and returns when every lane is done. Dropping the future aborts the
/// lanes, as dropping the consumer's task stops it; a lane that panicked
/// panics here, as its record would have on the consumer's task.
async fn handle_lanes(
    bus: &Arc<dyn Bus>,
    options: &ConsumerOptions,
    handler: &Arc<dyn RecordHandler>,
    lanes: Vec<Vec<Delivery>>,
) {
    let options = Arc::new(options.clone());
    let mut waiting = lanes.into_iter();
    let mut running = tokio::task::JoinSet::new();
    loop {
        while running.len() < options.lanes {
            let Some(lane) = waiting.next() else { break };
            let (bus, options, handler) = (bus.clone(), options.clone(), handler.clone());
            running.spawn(async move {
                for delivery in &lane {
                    process_traced(bus.as_ref(), &options, handler.as_ref(), delivery).await;
                }
            });
        }
        match running.join_next().await {
            Some(Ok(())) => {}
            Some(Err(error)) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
            // Only a runtime shutting down cancels a lane; going on would
            // commit records it never handled.
            Some(Err(error)) => panic!("a lane of group {} stopped: {error}", options.group),
            None => return,
        }
    }
}

/// Records handled but not yet flushed and committed (see
/// `ConsumerOptions::flush_interval`).
struct Unflushed {
    /// The last delivery of each partition.
    last: Vec<Delivery>,
    /// When they were last flushed.
    since: Instant,
}

impl Unflushed {
    /// Flushes the handler, then commits the last delivery of each
    /// partition, each retried until it succeeds. Durable before
    /// acknowledged: a commit ahead of the flush would let a crash lose
    /// what the run wrote.
    async fn flush_and_commit(
        &mut self,
        options: &ConsumerOptions,
        handler: &dyn RecordHandler,
        subscription: &mut dyn Subscription,
    ) {
        let mut backoff = Duration::from_millis(100);
        while let Err(error) = handler.flush().await {
            tracing::warn!(group = %options.group, error = %error, "handler flush failed, retrying");
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_secs(10));
        }
        let mut backoff = Duration::from_millis(100);
        for delivery in &self.last {
            while let Err(error) = subscription.commit(delivery).await {
                tracing::warn!(group = %options.group, error = %error, "commit failed, retrying");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(10));
            }
        }
        self.last.clear();
        self.since = Instant::now();
    }
}

/// The last delivery of each (topic, partition) in a run: committing it
/// commits everything before it on its partition.
fn last_per_partition(run: &[Delivery]) -> Vec<&Delivery> {
    let mut last: Vec<&Delivery> = Vec::new();
    for delivery in run {
        match last
            .iter_mut()
            .find(|d| d.topic == delivery.topic && d.partition == delivery.partition)
        {
            Some(slot) if slot.offset < delivery.offset => *slot = delivery,
            Some(_) => {}
            None => last.push(delivery),
        }
    }
    last
}

#[cfg(test)]
mod code_tests {
    use super::*;

    fn delivery(topic: &str, partition: i32, offset: i64) -> Delivery {
        Delivery {
            topic: topic.into(),
            partition,
            offset,
            key: String::new(),
            payload: Vec::new(),
            headers: Vec::new(),
        }
    }

    #[test]
    fn a_run_commits_the_last_offset_of_each_partition() {
        let run = [
            delivery("a", 0, 4),
            delivery("a", 1, 9),
            delivery("a", 0, 5),
            delivery("b", 0, 2),
            delivery("a", 1, 10),
        ];
        let committed: Vec<(&str, i32, i64)> = last_per_partition(&run)
            .into_iter()
            .map(|d| (d.topic.as_str(), d.partition, d.offset))
            .collect();
        assert_eq!(committed, [("a", 0, 5), ("a", 1, 10), ("b", 0, 2)]);
    }

    #[test]
    fn handler_error_codes_are_stable() {
        assert_eq!(
            HandlerError::Retryable("x".into()).code(),
            "handler_retryable"
        );
        assert_eq!(
            HandlerError::Permanent("x".into()).code(),
            "handler_permanent"
        );
    }
}
