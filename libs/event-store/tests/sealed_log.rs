//! SealedLog over the SQLite store: the single-event append, the batch
//! read.

use std::sync::Arc;

use mnemo_crypto::{MemorySubjectKeyStore, SubjectCipher};
use mnemo_domain::events::{streams, ConsolidationRequested, MessageReceived, Role};
use mnemo_domain::{DomainEvent, EventId, EventMetadata, SubjectId, SubjectText, TenantId};
use mnemo_event_store::sealed::{Pending, SealedLog};
use mnemo_event_store::{sqlite, ExpectedVersion};

fn requested(event_id: EventId, subject: &SubjectId) -> Pending {
    Pending {
        event_id,
        subject: Some(subject.clone()),
        event: DomainEvent::ConsolidationRequested(ConsolidationRequested { session: None }),
        metadata: EventMetadata {
            actor: "test".into(),
            ..Default::default()
        },
    }
}

#[tokio::test]
async fn append_one_reports_the_event_and_its_retry_as_a_duplicate() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(sqlite::open(&dir.path().join("mnemo.db")).await.unwrap());
    let cipher = Arc::new(SubjectCipher::new(Arc::new(MemorySubjectKeyStore::new())));
    let log = SealedLog::new(store, cipher);
    let tenant = TenantId::parse("acme").unwrap();
    let subject = SubjectId::parse("u").unwrap();
    let stream = streams::subject(&subject);
    let event_id = EventId::new();

    let first = log
        .append_one(
            &tenant,
            &stream,
            ExpectedVersion::NoStream,
            requested(event_id, &subject),
        )
        .await
        .unwrap();
    assert_eq!(first.event_id, event_id);
    assert_eq!(first.stream_version, 1);
    assert!(!first.duplicate);

    let retry = log
        .append_one(
            &tenant,
            &stream,
            ExpectedVersion::NoStream,
            requested(event_id, &subject),
        )
        .await
        .unwrap();
    assert!(retry.duplicate);
    assert_eq!(retry.stream_version, 1);

    let events = log.read_stream(&tenant, &stream).await.unwrap();
    assert_eq!(events.len(), 1);
    assert!(events[0]
        .recorded
        .is(mnemo_domain::EventType::ConsolidationRequested));
}

fn message(subject: &SubjectId, content: &str) -> Pending {
    Pending {
        event_id: EventId::new(),
        subject: Some(subject.clone()),
        event: DomainEvent::MessageReceived(MessageReceived {
            message_id: content.to_owned(),
            role: Role::User,
            content: SubjectText::new(content.to_owned()),
            timestamp: chrono::Utc::now(),
            session: None,
            agent: None,
            pii: Default::default(),
        }),
        metadata: EventMetadata {
            actor: "test".into(),
            ..Default::default()
        },
    }
}

#[tokio::test]
async fn get_events_opens_each_event_in_the_order_asked() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(sqlite::open(&dir.path().join("mnemo.db")).await.unwrap());
    let cipher = Arc::new(SubjectCipher::new(Arc::new(MemorySubjectKeyStore::new())));
    let log = SealedLog::new(store, cipher);
    let tenant = TenantId::parse("acme").unwrap();
    let subject = SubjectId::parse("u").unwrap();
    let (first, second) = (message(&subject, "first"), message(&subject, "second"));
    let (id1, id2) = (first.event_id, second.event_id);
    log.append(
        &tenant,
        &streams::conversation(&subject),
        ExpectedVersion::Any,
        vec![first, second],
    )
    .await
    .unwrap();

    let got = log
        .get_events(&tenant, &[id2, EventId::new(), id1])
        .await
        .unwrap();
    let said: Vec<_> = got
        .iter()
        .map(|d| match &d.event {
            DomainEvent::MessageReceived(m) => (d.recorded.event_id, m.content.as_text()),
            other => panic!("not a message: {other:?}"),
        })
        .collect();
    assert_eq!(said, [(id2, Some("second")), (id1, Some("first"))]);
}

#[test]
fn log_errors_keep_the_api_codes() {
    use mnemo_domain::{Classified, ErrorClass};
    use mnemo_event_store::sealed::LogError;
    use mnemo_event_store::EventStoreError;

    let cases = [
        (
            LogError::Store(EventStoreError::Conflict {
                stream_id: "memory-x".into(),
                expected: ExpectedVersion::Exact(1),
                actual: 2,
            }),
            ErrorClass::Conflict,
            "version_conflict",
        ),
        (
            LogError::Store(EventStoreError::EventIdTaken(EventId::new())),
            ErrorClass::Conflict,
            "id_taken",
        ),
        (
            LogError::Store(EventStoreError::Backend("down".into())),
            ErrorClass::Unavailable,
            "unavailable",
        ),
        (
            LogError::Store(EventStoreError::EmptyAppend),
            ErrorClass::Internal,
            "internal_error",
        ),
        (
            LogError::MissingSubject(EventId::new()),
            ErrorClass::Internal,
            "internal_error",
        ),
    ];
    for (error, class, code) in cases {
        assert_eq!(error.class(), class, "{error}");
        assert_eq!(error.code(), code, "{error}");
    }
}
