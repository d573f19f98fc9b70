//! The scale-out mode's bus: Kafka through librdkafka (rdkafka).
//!
//! **Publish** goes through one idempotent producer (`enable.idempotence`,
//! `acks=all`): librdkafka retries without duplicating or reordering records of
//! a partition, and [`Bus::publish`] returns only once the broker acknowledged
//! every record of the call. Records keep their key (tenant and subject), so a
//! subject's events stay in order on one partition; headers (the relay's
//! `event_id`, `tenant`, W3C `traceparent`) travel as Kafka headers.
//!
//! **Subscribe** joins a Kafka consumer group: members of one group, in one or
//! many processes, share the partitions. Offsets are committed only by
//! [`Subscription::commit`] (synchronously, offset + 1), never automatically, so
//! a restarted member resumes after the last handled record and redelivers the
//! rest; a group without a committed offset starts at the beginning. A commit
//! refused because the partition moved to another member in a rebalance is not
//! an error: that member redelivers from the last committed offset, which is
//! the at-least-once contract every handler already honours.
//!
//! Topics are created up front ([`create_topics`], [`create_all_topics`]) with
//! the partition count that bounds a group's parallelism; the adapter never
//! relies on broker-side auto-creation. An optional namespace prefixes topics
//! and groups so several deployments can share one cluster; deliveries report
//! the topic without it, as the port names it.
//!
//! librdkafka calls that block (a synchronous commit, closing a consumer,
//! destroying a producer) run on tokio's blocking pool, never on a runtime
//! worker.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, StreamConsumer};
use rdkafka::error::KafkaError;
use rdkafka::message::{BorrowedMessage, Header, Headers, OwnedHeaders};
use rdkafka::producer::{DeliveryFuture, FutureProducer, FutureRecord};
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};

use crate::{topics, Bus, BusError, Delivery, OutgoingRecord, Subscription};

pub mod dev;

/// How to reach a Kafka cluster and how mnemo's clients behave on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KafkaConfig {
    /// `bootstrap.servers`: comma-separated `host:port` list.
    pub brokers: String,
    /// Prefixes every topic and group id as `<namespace>.<name>`, so several
    /// deployments (or test runs) can share one cluster. `None`: names as is.
    pub namespace: Option<String>,
    /// `client.id`, shown in broker logs and metrics.
    pub client_id: String,
    /// `message.timeout.ms`: how long a publish waits for the broker to
    /// acknowledge a record (librdkafka retries within it) before failing.
    pub delivery_timeout: Duration,
    /// `session.timeout.ms`: how long a silent group member keeps its
    /// partitions before the group gives them to the others.
    pub session_timeout: Duration,
    /// Further librdkafka properties (`security.protocol`, `sasl.*`, tuning),
    /// applied after mnemo's own, so an operator can override them.
    pub properties: Vec<(String, String)>,
}

impl KafkaConfig {
    pub fn new(brokers: impl Into<String>) -> Self {
        KafkaConfig {
            brokers: brokers.into(),
            namespace: None,
            client_id: "mnemo".to_owned(),
            delivery_timeout: Duration::from_secs(30),
            session_timeout: Duration::from_secs(10),
            properties: Vec::new(),
        }
    }

    pub fn with_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// The name a port-level topic or group has on the cluster.
    pub fn qualified(&self, name: &str) -> String {
        match &self.namespace {
            Some(namespace) => format!("{namespace}.{name}"),
            None => name.to_owned(),
        }
    }

    /// The port-level name of a cluster topic (the inverse of [`Self::qualified`]).
    fn unqualified<'a>(&self, name: &'a str) -> &'a str {
        match &self.namespace {
            Some(namespace) => name
                .strip_prefix(namespace.as_str())
                .and_then(|rest| rest.strip_prefix('.'))
                .unwrap_or(name),
            None => name,
        }
    }

    fn client_config(&self) -> ClientConfig {
        let mut config = ClientConfig::new();
        config
            .set("bootstrap.servers", &self.brokers)
            .set("client.id", &self.client_id);
        config
    }

    fn apply_properties(&self, config: &mut ClientConfig) {
        for (key, value) in &self.properties {
            config.set(key, value);
        }
    }

    fn producer_config(&self) -> ClientConfig {
        let mut config = self.client_config();
        config
            .set("enable.idempotence", "true")
            .set("acks", "all")
            // The Java client's partitioner: a key lands on the same partition
            // whichever client (librdkafka, JVM tools) produced it.
            .set("partitioner", "murmur2_random")
            .set("linger.ms", "5")
            .set(
                "message.timeout.ms",
                self.delivery_timeout.as_millis().to_string(),
            );
        self.apply_properties(&mut config);
        config
    }

    fn consumer_config(&self, group: &str) -> ClientConfig {
        let mut config = self.client_config();
        config
            .set("group.id", self.qualified(group))
            .set("enable.auto.commit", "false")
            .set("enable.auto.offset.store", "false")
            // The port: a group without a committed offset starts at the beginning.
            .set("auto.offset.reset", "earliest")
            .set("enable.partition.eof", "false")
            .set(
                "session.timeout.ms",
                self.session_timeout.as_millis().to_string(),
            );
        self.apply_properties(&mut config);
        config
    }
}

fn backend(error: KafkaError) -> BusError {
    BusError::Backend(error.to_string())
}

/// Drops a librdkafka handle on the blocking pool: closing a consumer waits for
/// it to leave its group, destroying a producer flushes. Inline when no tokio
/// runtime is around (nothing to block then).
fn drop_off_runtime<T: Send + 'static>(value: T) {
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => {
            runtime.spawn_blocking(move || drop(value));
        }
        Err(_) => drop(value),
    }
}

/// The Kafka adapter of [`Bus`]. Cheap to clone: clones share one producer.
#[derive(Clone)]
pub struct KafkaBus {
    inner: Arc<Inner>,
}

struct Inner {
    config: KafkaConfig,
    producer: Option<FutureProducer>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(producer) = self.producer.take() {
            drop_off_runtime(producer);
        }
    }
}

impl KafkaBus {
    /// Creates the producer. Connections are made lazily, so this succeeds
    /// even while the brokers are unreachable; publishing then waits up to
    /// `delivery_timeout`.
    pub fn new(config: KafkaConfig) -> Result<Self, BusError> {
        let producer: FutureProducer = config.producer_config().create().map_err(backend)?;
        Ok(KafkaBus {
            inner: Arc::new(Inner {
                config,
                producer: Some(producer),
            }),
        })
    }

    pub fn config(&self) -> &KafkaConfig {
        &self.inner.config
    }

    fn producer(&self) -> &FutureProducer {
        self.inner
            .producer
            .as_ref()
            .expect("the producer lives as long as the bus")
    }

    /// Joins `group` as a new member, with the Kafka-specific view
    /// ([`KafkaSubscription::assignment`]) that [`Bus::subscribe`] hides.
    pub async fn join(&self, group: &str, topics: &[&str]) -> Result<KafkaSubscription, BusError> {
        let config = &self.inner.config;
        // A StreamConsumer spawns its wake-up task on the current runtime,
        // which is why this is async although nothing here awaits.
        let consumer: StreamConsumer = config.consumer_config(group).create().map_err(backend)?;
        let qualified: Vec<String> = topics.iter().map(|t| config.qualified(t)).collect();
        let names: Vec<&str> = qualified.iter().map(String::as_str).collect();
        // Non-blocking: librdkafka joins the group in the background, driven
        // by the member's polls.
        consumer.subscribe(&names).map_err(backend)?;
        Ok(KafkaSubscription {
            consumer: Some(Arc::new(consumer)),
            config: config.clone(),
            group: group.to_owned(),
        })
    }
}

/// Waits for the broker's acknowledgement of one record.
async fn acknowledged(delivery: DeliveryFuture) -> Result<(), BusError> {
    match delivery.await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err((error, _message))) => Err(backend(error)),
        Err(_canceled) => Err(BusError::Backend(
            "producer closed before the record was acknowledged".to_owned(),
        )),
    }
}

#[async_trait]
impl Bus for KafkaBus {
    async fn publish(&self, topic: &str, records: Vec<OutgoingRecord>) -> Result<(), BusError> {
        let topic = self.inner.config.qualified(topic);
        // Every record is handed to librdkafka before any acknowledgement is
        // awaited, so a batch costs one round of broker requests, not one per
        // record; idempotence keeps them in order within their partition.
        let mut pending: VecDeque<DeliveryFuture> = VecDeque::with_capacity(records.len());
        for record in &records {
            let mut headers = OwnedHeaders::new_with_capacity(record.headers.len());
            for (key, value) in &record.headers {
                headers = headers.insert(Header {
                    key,
                    value: Some(value.as_bytes()),
                });
            }
            let mut outgoing = FutureRecord::to(&topic)
                .key(record.key.as_bytes())
                .payload(record.payload.as_slice())
                .headers(headers);
            loop {
                match self.producer().send_result(outgoing) {
                    Ok(delivery) => {
                        pending.push_back(delivery);
                        break;
                    }
                    Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), returned)) => {
                        outgoing = returned;
                        // The client's queue is full: our oldest record's
                        // acknowledgement makes room. Other publishers filled
                        // it if we have none in flight; give them a moment.
                        match pending.pop_front() {
                            Some(oldest) => acknowledged(oldest).await?,
                            None => tokio::time::sleep(Duration::from_millis(10)).await,
                        }
                    }
                    Err((error, _)) => return Err(backend(error)),
                }
            }
        }
        for delivery in pending {
            acknowledged(delivery).await?;
        }
        Ok(())
    }

    async fn subscribe(
        &self,
        group: &str,
        topics: &[&str],
    ) -> Result<Box<dyn Subscription>, BusError> {
        Ok(Box::new(self.join(group, topics).await?))
    }

    async fn lag(&self, group: &str, topics: &[&str]) -> Result<u64, BusError> {
        self.inspect_group(group, topics, |consumer, topics| {
            Ok(group_positions(consumer, topics)?
                .iter()
                .map(|(_, _, from, high)| (high - from).max(0) as u64)
                .sum())
        })
        .await
    }

    async fn oldest_unprocessed(
        &self,
        group: &str,
        topics: &[&str],
    ) -> Result<Option<DateTime<Utc>>, BusError> {
        self.inspect_group(group, topics, first_uncommitted).await
    }
}

impl KafkaBus {
    /// Runs `inspect` on the blocking pool (metadata, offset, watermark and
    /// fetch requests block on the brokers) with a consumer carrying
    /// `group`'s id and the qualified `topics`. The consumer only reads
    /// the group's committed offsets: it never subscribes, so it never
    /// joins the group nor moves a partition, and it never commits.
    async fn inspect_group<T: Send + 'static>(
        &self,
        group: &str,
        topics: &[&str],
        inspect: impl FnOnce(&BaseConsumer, &[String]) -> Result<T, BusError> + Send + 'static,
    ) -> Result<T, BusError> {
        let config = self.inner.config.clone();
        let group = group.to_owned();
        let topics: Vec<String> = topics.iter().map(|t| config.qualified(t)).collect();
        tokio::task::spawn_blocking(move || {
            let consumer: BaseConsumer =
                config.consumer_config(&group).create().map_err(backend)?;
            let result = inspect(&consumer, &topics);
            drop_off_runtime(consumer);
            result
        })
        .await
        .map_err(|error| BusError::Backend(format!("lag task failed: {error}")))?
    }
}

/// How long one broker request of a group inspection may take.
const LAG_TIMEOUT: Duration = Duration::from_secs(5);

/// Each partition of `topics` with the offset the consumer's group reads
/// from next (its committed offset, or the low watermark without a commit)
/// and its high watermark: the lag is Σ (high − next), as
/// `kafka-consumer-groups --describe` computes it.
fn group_positions(
    consumer: &BaseConsumer,
    topics: &[String],
) -> Result<Vec<(String, i32, i64, i64)>, BusError> {
    let mut list = TopicPartitionList::new();
    for topic in topics {
        let metadata = consumer
            .fetch_metadata(Some(topic), LAG_TIMEOUT)
            .map_err(backend)?;
        for partition in metadata.topics().iter().flat_map(|t| t.partitions()) {
            list.add_partition(topic, partition.id());
        }
    }
    let committed = consumer
        .committed_offsets(list, LAG_TIMEOUT)
        .map_err(backend)?;
    let mut positions = Vec::new();
    for element in committed.elements() {
        let (low, high) = consumer
            .fetch_watermarks(element.topic(), element.partition(), LAG_TIMEOUT)
            .map_err(backend)?;
        // No commit yet: the group starts at the beginning of what is kept.
        let from = match element.offset() {
            Offset::Offset(offset) => offset.max(low),
            _ => low,
        };
        positions.push((element.topic().to_owned(), element.partition(), from, high));
    }
    Ok(positions)
}

/// The earliest publish time (the records' create timestamps) among the
/// first uncommitted record of each partition the consumer's group is
/// behind on, which the consumer is assigned by hand. A partition whose
/// record does not arrive within [`LAG_TIMEOUT`] is left out of the answer.
fn first_uncommitted(
    consumer: &BaseConsumer,
    topics: &[String],
) -> Result<Option<DateTime<Utc>>, BusError> {
    let mut assignment = TopicPartitionList::new();
    let mut waiting = std::collections::HashSet::new();
    for (topic, partition, from, high) in group_positions(consumer, topics)? {
        if from < high {
            assignment
                .add_partition_offset(&topic, partition, Offset::Offset(from))
                .map_err(backend)?;
            waiting.insert((topic, partition));
        }
    }
    if waiting.is_empty() {
        return Ok(None);
    }
    consumer.assign(&assignment).map_err(backend)?;
    let deadline = std::time::Instant::now() + LAG_TIMEOUT;
    let mut oldest: Option<i64> = None;
    while !waiting.is_empty() && std::time::Instant::now() < deadline {
        match consumer.poll(Duration::from_millis(100)) {
            // The first record of a partition still waited for.
            Some(Ok(message))
                if waiting.remove(&(message.topic().to_owned(), message.partition())) =>
            {
                if let Some(millis) = message.timestamp().to_millis() {
                    oldest = Some(oldest.map_or(millis, |o| o.min(millis)));
                }
            }
            Some(Ok(_)) => {}
            Some(Err(error)) => return Err(backend(error)),
            None => {}
        }
    }
    Ok(oldest.and_then(DateTime::from_timestamp_millis))
}

/// One member of a consumer group.
pub struct KafkaSubscription {
    /// Shared with a commit running on the blocking pool; `None` only while
    /// being dropped.
    consumer: Option<Arc<StreamConsumer>>,
    config: KafkaConfig,
    group: String,
}

impl Drop for KafkaSubscription {
    fn drop(&mut self) {
        if let Some(consumer) = self.consumer.take() {
            // Closing leaves the group (so the others take over its partitions
            // now, not after the session timeout) and blocks until it has.
            drop_off_runtime(consumer);
        }
    }
}

impl KafkaSubscription {
    fn consumer(&self) -> &Arc<StreamConsumer> {
        self.consumer
            .as_ref()
            .expect("the consumer lives as long as the subscription")
    }

    /// The (port-level topic, partition) pairs this member holds right now;
    /// empty until the group has assigned it some.
    pub fn assignment(&self) -> Result<Vec<(String, i32)>, BusError> {
        let list = self.consumer().assignment().map_err(backend)?;
        Ok(list
            .elements()
            .iter()
            .map(|element| {
                (
                    self.config.unqualified(element.topic()).to_owned(),
                    element.partition(),
                )
            })
            .collect())
    }

    fn delivery(&self, message: &BorrowedMessage<'_>) -> Delivery {
        let text =
            |bytes: Option<&[u8]>| String::from_utf8_lossy(bytes.unwrap_or_default()).into_owned();
        Delivery {
            topic: self.config.unqualified(message.topic()).to_owned(),
            partition: message.partition(),
            offset: message.offset(),
            key: text(message.key()),
            payload: message.payload().unwrap_or_default().to_vec(),
            headers: message
                .headers()
                .map(|headers| {
                    headers
                        .iter()
                        .map(|header| (header.key.to_owned(), text(header.value)))
                        .collect()
                })
                .unwrap_or_default(),
        }
    }
}

/// A consumer error that clears up by itself: a subscribed topic that does not
/// exist (yet). librdkafka reports it and keeps the subscription.
fn is_missing_topic(error: &KafkaError) -> bool {
    matches!(
        error.rdkafka_error_code(),
        Some(RDKafkaErrorCode::UnknownTopicOrPartition | RDKafkaErrorCode::UnknownTopic)
    )
}

/// A commit refused because this member no longer owns the partition (a
/// rebalance moved it). The new owner redelivers from the last committed offset.
fn is_reassigned(error: &KafkaError) -> bool {
    matches!(
        error.rdkafka_error_code(),
        Some(
            RDKafkaErrorCode::RebalanceInProgress
                | RDKafkaErrorCode::IllegalGeneration
                | RDKafkaErrorCode::UnknownMemberId
                | RDKafkaErrorCode::FencedInstanceId
                | RDKafkaErrorCode::StaleMemberEpoch
                | RDKafkaErrorCode::AssignmentLost
        )
    )
}

#[async_trait]
impl Subscription for KafkaSubscription {
    async fn poll(&mut self, timeout: Duration) -> Result<Option<Delivery>, BusError> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            // `recv` is cancellation safe: a record is taken off the queue
            // only when it is returned, so the timeout loses nothing.
            match tokio::time::timeout_at(deadline, self.consumer().recv()).await {
                Err(_elapsed) => return Ok(None),
                Ok(Ok(message)) => return Ok(Some(self.delivery(&message))),
                Ok(Err(error)) if is_missing_topic(&error) => {
                    tracing::warn!(group = %self.group, error = %error, "subscribed topic does not exist yet; topics are created up front");
                }
                Ok(Err(error)) => return Err(backend(error)),
            }
        }
    }

    async fn commit(&mut self, delivery: &Delivery) -> Result<(), BusError> {
        let mut list = TopicPartitionList::new();
        list.add_partition_offset(
            &self.config.qualified(&delivery.topic),
            delivery.partition,
            Offset::Offset(delivery.offset + 1),
        )
        .map_err(backend)?;
        let consumer = self.consumer().clone();
        // A synchronous commit blocks until the group coordinator answers.
        let result = tokio::task::spawn_blocking(move || consumer.commit(&list, CommitMode::Sync))
            .await
            .map_err(|error| BusError::Backend(format!("commit task failed: {error}")))?;
        match result {
            Ok(()) => Ok(()),
            Err(error) if is_reassigned(&error) => {
                tracing::info!(group = %self.group, topic = %delivery.topic, partition = delivery.partition, offset = delivery.offset, error = %error, "commit dropped: the partition moved to another member, which redelivers");
                Ok(())
            }
            Err(error) => Err(backend(error)),
        }
    }
}

/// Creates the given port-level topics (namespaced per `config`) with
/// `partitions` partitions each. Topics that already exist are left as they
/// are (their partition count too), so this is safe to run on every start,
/// and a no-op on the development host, which has them all.
///
/// `partitions` bounds how many members of one group work in parallel; it can
/// be raised later but never lowered, and raising it moves keys to other
/// partitions (per-subject order holds again only for records published after).
pub async fn create_topics(
    config: &KafkaConfig,
    names: &[&str],
    partitions: i32,
    replication_factor: i32,
) -> Result<(), BusError> {
    let admin: AdminClient<DefaultClientContext> = {
        let mut admin_config = config.client_config();
        config.apply_properties(&mut admin_config);
        admin_config.create().map_err(backend)?
    };
    // Ask for what exists first and create only what is missing: a cluster
    // that already has every topic (or a broker without the CreateTopics
    // API, like the development host) then needs no admin request at all.
    let timeout = config.delivery_timeout;
    let (admin, existing) = existing_topics(admin, timeout).await?;
    let existing = match existing {
        Ok(existing) => existing,
        Err(error) => {
            drop_off_runtime(admin);
            return Err(error);
        }
    };
    let missing: Vec<String> = names
        .iter()
        .map(|name| config.qualified(name))
        .filter(|name| !existing.contains(name))
        .collect();
    if missing.is_empty() {
        drop_off_runtime(admin);
        return Ok(());
    }
    let new_topics: Vec<NewTopic<'_>> = missing
        .iter()
        .map(|name| {
            NewTopic::new(
                name,
                partitions,
                TopicReplication::Fixed(replication_factor),
            )
        })
        .collect();
    let options = AdminOptions::new().request_timeout(Some(timeout));
    let results = match admin.create_topics(&new_topics, &options).await {
        Ok(results) => results,
        Err(error) => {
            // The request itself failed (timed out, or the broker has no
            // CreateTopics API). What it was for may have happened anyway:
            // another instance, or a development host still starting,
            // created the topics meanwhile. Then there is nothing to fail.
            let Ok((admin, existing)) = existing_topics(admin, timeout).await else {
                return Err(backend(error));
            };
            drop_off_runtime(admin);
            return match existing {
                Ok(existing) if missing.iter().all(|name| existing.contains(name)) => Ok(()),
                _ => Err(backend(error)),
            };
        }
    };
    drop_off_runtime(admin);
    for result in results {
        match result {
            // Another instance created it meanwhile.
            Ok(_) | Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
            Err((name, code)) => {
                return Err(BusError::Backend(format!("creating topic {name}: {code}")))
            }
        }
    }
    Ok(())
}

/// The names of the topics the cluster has. A topic listed with an error
/// other than "unknown" exists (a leader election, say, is under way), so
/// creating it would only fail. The client comes back for further use,
/// unless the task that asked failed (the runtime shutting down).
async fn existing_topics(
    admin: AdminClient<DefaultClientContext>,
    timeout: Duration,
) -> Result<
    (
        AdminClient<DefaultClientContext>,
        Result<Vec<String>, BusError>,
    ),
    BusError,
> {
    // A blocking librdkafka call: off the runtime's workers.
    let task = tokio::task::spawn_blocking(move || {
        let metadata = admin.inner().fetch_metadata(None, timeout);
        let existing = metadata.map_err(backend).map(|metadata| {
            metadata
                .topics()
                .iter()
                .filter(|topic| {
                    !matches!(
                        topic.error().map(RDKafkaErrorCode::from),
                        Some(RDKafkaErrorCode::UnknownTopicOrPartition)
                    )
                })
                .map(|topic| topic.name().to_owned())
                .collect()
        });
        (admin, existing)
    });
    task.await
        .map_err(|error| BusError::Backend(format!("metadata task failed: {error}")))
}

/// Creates every mnemo topic ([`topics::ALL`]); see [`create_topics`].
pub async fn create_all_topics(
    config: &KafkaConfig,
    partitions: i32,
    replication_factor: i32,
) -> Result<(), BusError> {
    create_topics(config, &topics::ALL, partitions, replication_factor).await
}
