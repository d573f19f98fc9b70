//! The bus port ([`Bus`]), its in-process adapter, the relay that publishes
//! the event log to topics, and the consumer loop every service runs.
//!
//! Delivery is at least once: the relay may publish an event twice after a
//! crash, and a consumer commits only after its handler succeeded, so
//! handlers must be idempotent on `event_id`. Records are keyed by tenant and
//! subject so one subject's events stay in order on one partition.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

pub mod consumer;
pub mod envelope;
#[cfg(feature = "sqlite")]
pub mod in_process;
#[cfg(feature = "kafka")]
pub mod kafka;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod relay;
#[cfg(feature = "testsuite")]
pub mod testsuite;

pub use consumer::{
    run_consumer, run_consumer_until, run_record_consumer, run_record_consumer_until,
    ConsumerOptions, EventHandler, HandlerError, RecordHandler,
};
pub use envelope::EventEnvelope;
pub use relay::{CheckpointStore, Relay};

/// Topic names shared by every deployment.
pub mod topics {
    /// `MessageReceived` and `ConsolidationRequested`: what the consolidator
    /// reads. A request shares its subject's key and topic with the
    /// messages, so it is seen after every message posted before it.
    pub const MESSAGES: &str = "mnemo.messages";
    /// Memory, relation and review events: what projections follow.
    pub const MEMORY_EVENTS: &str = "mnemo.memory-events";
    /// Profile, export and erasure events.
    pub const SUBJECT_EVENTS: &str = "mnemo.subject-events";
    /// Retrieval access signals for the forgetter.
    pub const ACCESS_SIGNALS: &str = "mnemo.access-signals";
    /// Records a consumer could not handle, with the error.
    pub const DEAD_LETTERS: &str = "mnemo.dead-letters";

    pub const ALL: [&str; 5] = [
        MESSAGES,
        MEMORY_EVENTS,
        SUBJECT_EVENTS,
        ACCESS_SIGNALS,
        DEAD_LETTERS,
    ];

    /// The topic an event type is published to.
    pub fn for_event_type(event_type: &str) -> &'static str {
        use mnemo_domain::EventType;
        match EventType::parse(event_type) {
            // Forgotten episodes travel with the messages, keyed by the
            // subject like them, so the episode projection deletes a point
            // only after it has indexed it.
            Some(
                EventType::MessageReceived
                | EventType::ConsolidationRequested
                | EventType::EpisodesForgotten,
            ) => MESSAGES,
            Some(
                EventType::ProfileUpdated
                | EventType::ExportGenerated
                | EventType::ErasureRequested
                | EventType::SubjectErased,
            ) => SUBJECT_EVENTS,
            _ => MEMORY_EVENTS,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutgoingRecord {
    pub key: String,
    pub payload: Vec<u8>,
    pub headers: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub key: String,
    pub payload: Vec<u8>,
    pub headers: Vec<(String, String)>,
}

impl Delivery {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum BusError {
    #[error("consumer group {0} already has a member in this process")]
    GroupBusy(String),
    #[error("bus backend failed: {0}")]
    Backend(String),
}

impl BusError {
    /// What [`Bus::publish_checkpointed`] answers on a bus that keeps no
    /// relay checkpoints.
    pub(crate) fn no_relay_checkpoints() -> Self {
        BusError::Backend("this bus keeps no relay checkpoints".to_owned())
    }

    /// A stable code for logs and dead-letter records; knows nothing of HTTP.
    pub fn code(&self) -> &'static str {
        match self {
            BusError::GroupBusy(_) => "bus_group_busy",
            BusError::Backend(_) => "bus_backend_failed",
        }
    }
}

#[async_trait]
pub trait Bus: Send + Sync + 'static {
    /// Publishes records in order; records with the same key keep their order.
    async fn publish(&self, topic: &str, records: Vec<OutgoingRecord>) -> Result<(), BusError>;

    /// Joins a consumer group. Without a committed offset the group starts at
    /// the beginning of each topic.
    async fn subscribe(
        &self,
        group: &str,
        topics: &[&str],
    ) -> Result<Box<dyn Subscription>, BusError>;

    /// Records published to `topics` that `group` has not committed yet:
    /// how far behind the group's consumers are. Read from the broker's (or
    /// the table's) committed offsets, so any process can ask about any
    /// group, whether or not it runs a member.
    async fn lag(&self, group: &str, topics: &[&str]) -> Result<u64, BusError>;

    /// When the oldest record on `topics` that `group` has not committed
    /// was published; None when the group is caught up. With [`Bus::lag`],
    /// what an operator alerts on: a lag of 10 records an hour old is a
    /// stuck consumer, 10,000 a second old a busy one.
    async fn oldest_unprocessed(
        &self,
        group: &str,
        topics: &[&str],
    ) -> Result<Option<DateTime<Utc>>, BusError>;

    /// Whether this bus keeps the relay's checkpoints in its own store, so
    /// [`Bus::publish_checkpointed`] can move one in the transaction that
    /// publishes the records.
    fn keeps_relay_checkpoints(&self) -> bool {
        false
    }

    /// Publishes runs of records (each to its topic, in order) and moves
    /// the relay checkpoint `name` to `position`, all in one transaction:
    /// a crash publishes all of it or none, so nothing is published twice,
    /// and a batch of the relay costs one commit instead of one a topic
    /// and one for the checkpoint. Only for a bus that
    /// [`Bus::keeps_relay_checkpoints`]; the default refuses.
    async fn publish_checkpointed(
        &self,
        runs: Vec<(&'static str, Vec<OutgoingRecord>)>,
        name: &str,
        position: i64,
    ) -> Result<(), BusError> {
        let _ = (runs, name, position);
        Err(BusError::no_relay_checkpoints())
    }
}

#[async_trait]
pub trait Subscription: Send {
    /// The next record, or None when none arrived within `timeout`.
    async fn poll(&mut self, timeout: Duration) -> Result<Option<Delivery>, BusError>;

    /// Durably records that this delivery (and everything before it on its
    /// partition) is handled.
    async fn commit(&mut self, delivery: &Delivery) -> Result<(), BusError>;
}

#[cfg(test)]
mod code_tests {
    use super::*;

    #[test]
    fn bus_error_codes_are_stable() {
        assert_eq!(BusError::GroupBusy("g".into()).code(), "bus_group_busy");
        assert_eq!(BusError::Backend("x".into()).code(), "bus_backend_failed");
    }
}

#[cfg(test)]
mod tests {
    use mnemo_domain::EventType;

    use super::topics;

    #[test]
    fn each_event_type_has_its_topic() {
        let topic = |kind: EventType| topics::for_event_type(kind.as_str());
        assert_eq!(topic(EventType::MessageReceived), topics::MESSAGES);
        assert_eq!(topic(EventType::ConsolidationRequested), topics::MESSAGES);
        assert_eq!(topic(EventType::EpisodesForgotten), topics::MESSAGES);
        for kind in [
            EventType::ProfileUpdated,
            EventType::ExportGenerated,
            EventType::ErasureRequested,
            EventType::SubjectErased,
        ] {
            assert_eq!(topic(kind), topics::SUBJECT_EVENTS, "{kind}");
        }
        assert_eq!(topic(EventType::MemoryCreated), topics::MEMORY_EVENTS);
        assert_eq!(topic(EventType::ReviewResolved), topics::MEMORY_EVENTS);
        // A type this build does not know is published with the memories.
        assert_eq!(topics::for_event_type("Teleported"), topics::MEMORY_EVENTS);
    }
}
