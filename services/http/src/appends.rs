//! Appends from the API, counted: [`CountedLog`] is the only way the HTTP
//! services write to the log, so `mnemo_events_appended_total` is counted
//! here and no handler counts by hand (or forgets to).

use mnemo_domain::TenantId;
use mnemo_event_store::sealed::{LogError, Pending, SealedLog};
use mnemo_event_store::{AppendResult, AppendedEvent, ExpectedVersion};
use mnemo_telemetry::Metrics;

/// A [`SealedLog`] that counts what it appends. Borrowed for a request from
/// the service state, which owns the log and the metrics.
#[derive(Clone, Copy)]
pub struct CountedLog<'a> {
    log: &'a SealedLog,
    metrics: &'a Metrics,
}

impl<'a> CountedLog<'a> {
    pub fn new(log: &'a SealedLog, metrics: &'a Metrics) -> Self {
        CountedLog { log, metrics }
    }

    pub async fn append(
        &self,
        tenant: &TenantId,
        stream_id: &str,
        expected: ExpectedVersion,
        events: Vec<Pending>,
    ) -> Result<AppendResult, LogError> {
        let types: Vec<&'static str> = events.iter().map(|p| p.event.event_type()).collect();
        let result = self.log.append(tenant, stream_id, expected, events).await?;
        for (appended, event_type) in result.events.iter().zip(types) {
            self.count(appended, event_type);
        }
        Ok(result)
    }

    pub async fn append_one(
        &self,
        tenant: &TenantId,
        stream_id: &str,
        expected: ExpectedVersion,
        event: Pending,
    ) -> Result<AppendedEvent, LogError> {
        let event_type = event.event.event_type();
        let appended = self
            .log
            .append_one(tenant, stream_id, expected, event)
            .await?;
        self.count(&appended, event_type);
        Ok(appended)
    }

    /// A retried request's events are already in the log: they are not
    /// counted again.
    fn count(&self, appended: &AppendedEvent, event_type: &'static str) {
        if !appended.duplicate {
            self.metrics
                .events_appended_total
                .with_label_values(&[event_type])
                .inc();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use mnemo_crypto::{MemorySubjectKeyStore, SubjectCipher};
    use mnemo_domain::events::{streams, ConsolidationRequested, ExportGenerated};
    use mnemo_domain::{DomainEvent, EventId, EventMetadata, SubjectId};

    use super::*;

    fn pending(event_id: EventId, subject: &SubjectId, event: DomainEvent) -> Pending {
        Pending {
            event_id,
            subject: Some(subject.clone()),
            event,
            metadata: EventMetadata {
                actor: "test".into(),
                ..Default::default()
            },
        }
    }

    fn count(metrics: &Metrics, event_type: &str) -> u64 {
        metrics
            .events_appended_total
            .with_label_values(&[event_type])
            .get()
    }

    #[tokio::test]
    async fn counts_fresh_events_by_type_and_not_retries() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(
            mnemo_event_store::sqlite::open(&dir.path().join("mnemo.db"))
                .await
                .unwrap(),
        );
        let cipher = Arc::new(SubjectCipher::new(Arc::new(MemorySubjectKeyStore::new())));
        let log = SealedLog::new(store, cipher);
        let metrics = Metrics::new().unwrap();
        let counted = CountedLog::new(&log, &metrics);
        let tenant = TenantId::parse("acme").unwrap();
        let subject = SubjectId::parse("u").unwrap();
        let stream = streams::subject(&subject);
        let requested =
            || DomainEvent::ConsolidationRequested(ConsolidationRequested { session: None });
        let export = || {
            DomainEvent::ExportGenerated(ExportGenerated {
                messages: 0,
                memories: 0,
                events: 0,
            })
        };

        let id = EventId::new();
        counted
            .append_one(
                &tenant,
                &stream,
                ExpectedVersion::Any,
                pending(id, &subject, requested()),
            )
            .await
            .unwrap();
        assert_eq!(count(&metrics, "ConsolidationRequested"), 1);
        let retry = counted
            .append_one(
                &tenant,
                &stream,
                ExpectedVersion::Any,
                pending(id, &subject, requested()),
            )
            .await
            .unwrap();
        assert!(retry.duplicate);
        assert_eq!(count(&metrics, "ConsolidationRequested"), 1);

        counted
            .append(
                &tenant,
                &stream,
                ExpectedVersion::Any,
                vec![
                    pending(id, &subject, requested()),
                    pending(EventId::new(), &subject, export()),
                    pending(EventId::new(), &subject, requested()),
                ],
            )
            .await
            .unwrap();
        assert_eq!(count(&metrics, "ConsolidationRequested"), 2);
        assert_eq!(count(&metrics, "ExportGenerated"), 1);
    }
}
