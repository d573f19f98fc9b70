//! Access signals, off the request path: a search hands the memories it
//! returned to a queue and answers; one task publishes what the queue
//! holds to the access-signals topic, everything waiting in one publish.
//!
//! Why: publishing was a write transaction per search (on the embedded bus
//! four round trips to SQLite under its write lock), about half of what
//! `find()` spent beside the index at 10k memories. The signal only feeds
//! the forgetter's usage counts, which lose nothing that matters when a
//! signal is late, and little when one is lost: so a full queue drops the
//! signal rather than hold a search, and under load many searches share
//! one publish.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use mnemo_bus::{topics, Bus, OutgoingRecord};
use mnemo_domain::signals::AccessSignal;
use tokio::sync::mpsc;

/// Signals waiting at most: past this a search's signal is dropped.
pub const QUEUE: usize = 4096;
/// Signals in one publish at most.
pub const MAX_BATCH: usize = 256;

/// Where searches leave their access signals. Cheap to clone.
#[derive(Clone)]
pub struct AccessSignals {
    queue: mpsc::Sender<AccessSignal>,
    dropped: Arc<AtomicU64>,
}

impl AccessSignals {
    /// Starts the publisher on the current tokio runtime; it ends when
    /// every `AccessSignals` handle is dropped and the queue is drained.
    pub fn start(bus: Arc<dyn Bus>) -> Self {
        Self::with_capacity(bus, QUEUE)
    }

    fn with_capacity(bus: Arc<dyn Bus>, capacity: usize) -> Self {
        let (queue, waiting) = mpsc::channel(capacity);
        tokio::spawn(publish(bus, waiting));
        AccessSignals {
            queue,
            dropped: Arc::default(),
        }
    }

    /// Queues the signal without waiting; a full queue drops it (logged
    /// on the first drop and every thousandth after).
    pub fn send(&self, signal: AccessSignal) {
        if self.queue.try_send(signal).is_err() {
            let dropped = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            if dropped % 1000 == 1 {
                tracing::warn!(dropped, "access signals dropped: the queue is full");
            }
        }
    }

    /// Signals dropped so far because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

async fn publish(bus: Arc<dyn Bus>, mut waiting: mpsc::Receiver<AccessSignal>) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while waiting.recv_many(&mut batch, MAX_BATCH).await > 0 {
        let records: Vec<OutgoingRecord> = batch
            .drain(..)
            .map(|signal| OutgoingRecord {
                key: signal.key(),
                headers: vec![("tenant".to_owned(), signal.tenant.to_string())],
                payload: signal.encode(),
            })
            .collect();
        let count = records.len();
        if let Err(error) = bus.publish(topics::ACCESS_SIGNALS, records).await {
            tracing::warn!(error = %error, count, "access signals not published");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::Duration;

    use async_trait::async_trait;
    use chrono::{DateTime, Utc};
    use mnemo_bus::{BusError, Subscription};
    use mnemo_domain::{MemoryId, SubjectId, TenantId};
    use tokio::sync::Semaphore;

    use super::*;

    /// A bus that keeps each publish's records and lets a publish finish
    /// only when the test hands it a permit.
    struct Gated {
        published: Mutex<Vec<Vec<OutgoingRecord>>>,
        permits: Semaphore,
    }

    impl Default for Gated {
        fn default() -> Self {
            Gated {
                published: Mutex::default(),
                permits: Semaphore::new(0),
            }
        }
    }

    #[async_trait]
    impl Bus for Gated {
        async fn publish(&self, topic: &str, records: Vec<OutgoingRecord>) -> Result<(), BusError> {
            assert_eq!(topic, topics::ACCESS_SIGNALS);
            self.published.lock().unwrap().push(records);
            self.permits.acquire().await.unwrap().forget();
            Ok(())
        }

        async fn subscribe(&self, _: &str, _: &[&str]) -> Result<Box<dyn Subscription>, BusError> {
            Err(BusError::Backend("publish only".into()))
        }

        async fn lag(&self, _: &str, _: &[&str]) -> Result<u64, BusError> {
            Ok(0)
        }

        async fn oldest_unprocessed(
            &self,
            _: &str,
            _: &[&str],
        ) -> Result<Option<DateTime<Utc>>, BusError> {
            Ok(None)
        }
    }

    fn signal(subject: &str) -> AccessSignal {
        AccessSignal::new(
            TenantId::parse("t1").unwrap(),
            SubjectId::parse(subject).unwrap(),
            vec![MemoryId::new()],
            Utc::now(),
        )
    }

    async fn publishes_reach(bus: &Gated, n: usize) -> Vec<Vec<OutgoingRecord>> {
        for _ in 0..500 {
            let published = bus.published.lock().unwrap().clone();
            if published.len() >= n {
                return published;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        panic!("fewer than {n} publishes");
    }

    /// A send returns at once; the signals that arrive while a publish is
    /// under way go out together in the next one, each decodable, with the
    /// tenant header.
    #[tokio::test]
    async fn signals_waiting_behind_a_publish_share_the_next_one() {
        let bus = Arc::new(Gated::default());
        let signals = AccessSignals::start(bus.clone());
        let first = signal("a");
        signals.send(first.clone());
        let published = publishes_reach(&bus, 1).await;
        assert_eq!(published[0].len(), 1);

        let later: Vec<AccessSignal> = ["b", "c", "d"].into_iter().map(signal).collect();
        for s in &later {
            signals.send(s.clone());
        }
        bus.permits.add_permits(2);
        let published = publishes_reach(&bus, 2).await;
        assert_eq!(published.len(), 2);
        let decoded: Vec<AccessSignal> = published[1]
            .iter()
            .map(|r| AccessSignal::decode(&r.payload).unwrap())
            .collect();
        assert_eq!(decoded, later);
        assert_eq!(
            AccessSignal::decode(&published[0][0].payload).unwrap(),
            first
        );
        assert_eq!(
            published[1][0].headers,
            [("tenant".to_owned(), "t1".to_owned())]
        );
        assert_eq!(signals.dropped(), 0);
    }

    /// With the publisher held up and the queue full, a search's signal is
    /// dropped and counted, and the send does not wait.
    #[tokio::test]
    async fn a_full_queue_drops_the_signal_without_waiting() {
        let bus = Arc::new(Gated::default());
        let signals = AccessSignals::with_capacity(bus.clone(), 2);
        signals.send(signal("a"));
        publishes_reach(&bus, 1).await;
        // The publisher holds "a"; two fill the queue, the third is dropped.
        for subject in ["b", "c", "d"] {
            signals.send(signal(subject));
        }
        assert_eq!(signals.dropped(), 1);
        bus.permits.add_permits(2);
        let published = publishes_reach(&bus, 2).await;
        assert_eq!(published[1].len(), 2);
    }
}
