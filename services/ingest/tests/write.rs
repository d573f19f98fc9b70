//! The write use cases on a real (SQLite) log: what they append and count.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::Utc;
use mnemo_bus::in_process::InProcessBus;
use mnemo_config::{Limits, PiiSettings};
use mnemo_crypto::{MasterKey, MemorySubjectKeyStore, SubjectCipher, TokenPurpose};
use mnemo_domain::events::{streams, ErasureReceipt, MessageReceived, Role, SubjectErased};
use mnemo_domain::{
    Classified, DomainEvent, ErasureId, ErrorClass, EventId, EventMetadata, MemoryKind, SubjectId,
    SubjectText, TenantId,
};
use mnemo_event_store::sealed::{Pending, SealedLog};
use mnemo_event_store::ExpectedVersion;
use mnemo_http::backlog::{Backlog, BacklogLimits};
use mnemo_ingest::quota::Quotas;
use mnemo_ingest::write::{
    self, ConsolidationRequest, MessageInput, MessagesRequest, NewMemoryRequest,
};
use mnemo_ingest::{IngestState, Scrubbers};
use mnemo_telemetry::Metrics;

async fn state(dir: &tempfile::TempDir) -> IngestState {
    let path = dir.path().join("mnemo.db");
    let store = Arc::new(mnemo_event_store::sqlite::open(&path).await.unwrap());
    let pool = mnemo_event_store::sqlite::connect(&path).await.unwrap();
    let backlog = Backlog::new(
        Arc::new(InProcessBus::new(pool.clone(), 1)),
        Arc::default(),
        Vec::new(),
        None,
        BacklogLimits::default(),
    );
    let cipher = Arc::new(SubjectCipher::new(Arc::new(MemorySubjectKeyStore::new())));
    IngestState {
        log: SealedLog::new(store, cipher.clone()),
        scrubbers: Scrubbers::new(
            PiiSettings {
                default: Default::default(),
                tenants: BTreeMap::new(),
            },
            Arc::new(MasterKey::generate()),
        ),
        limits: Limits {
            max_body_bytes: 1 << 20,
            max_messages_per_request: 3,
            max_content_chars: 200,
        },
        metrics: Arc::new(Metrics::new().unwrap()),
        backlog: Arc::new(backlog),
        quotas: Quotas::new(Default::default()),
        read_model: Arc::new(mnemo_read_model::sqlite::SqliteMemoryReadModel::new(
            pool, cipher,
        )),
    }
}

fn appended(state: &IngestState, event_type: &str) -> u64 {
    state
        .metrics
        .events_appended_total
        .with_label_values(&[event_type])
        .get()
}

fn metadata() -> EventMetadata {
    EventMetadata {
        actor: "agent-1".into(),
        ..Default::default()
    }
}

fn message(id: &str, content: &str) -> MessageInput {
    MessageInput {
        role: Role::User,
        content: content.into(),
        id: Some(id.into()),
        timestamp: None,
        session: None,
        agent: None,
    }
}

#[tokio::test]
async fn a_consolidation_request_is_counted_as_appended() {
    let dir = tempfile::tempdir().unwrap();
    let state = state(&dir).await;
    write::request_consolidation(
        &state,
        ConsolidationRequest {
            tenant: TenantId::parse("acme").unwrap(),
            subject: SubjectId::parse("u").unwrap(),
            session: None,
            metadata: metadata(),
        },
    )
    .await
    .unwrap();
    assert_eq!(appended(&state, "ConsolidationRequested"), 1);
}

#[tokio::test]
async fn retried_messages_are_duplicates_and_not_counted_twice() {
    let dir = tempfile::tempdir().unwrap();
    let state = state(&dir).await;
    let request = |messages| MessagesRequest {
        tenant: TenantId::parse("acme").unwrap(),
        subject: SubjectId::parse("u").unwrap(),
        messages,
        metadata: metadata(),
    };
    let first = write::ingest_messages(
        &state,
        request(vec![message("a", "hello"), message("b", "again")]),
    )
    .await
    .unwrap();
    assert_eq!(first.len(), 2);
    assert!(first.iter().all(|m| !m.event.duplicate));
    assert_eq!(first[0].message_id, "a");
    assert_eq!(appended(&state, "MessageReceived"), 2);

    let retry = write::ingest_messages(
        &state,
        request(vec![message("a", "hello"), message("c", "new")]),
    )
    .await
    .unwrap();
    let duplicates: Vec<bool> = retry.iter().map(|m| m.event.duplicate).collect();
    assert_eq!(duplicates, [true, false]);
    assert_eq!(appended(&state, "MessageReceived"), 3);
}

#[tokio::test]
async fn a_bad_message_refuses_the_batch_and_says_which() {
    let dir = tempfile::tempdir().unwrap();
    let state = state(&dir).await;
    let error = write::ingest_messages(
        &state,
        MessagesRequest {
            tenant: TenantId::parse("acme").unwrap(),
            subject: SubjectId::parse("u").unwrap(),
            messages: vec![message("a", "fine"), message("b", "  ")],
            metadata: metadata(),
        },
    )
    .await
    .err()
    .unwrap();
    assert_eq!(error.code(), "invalid_content");
    assert_eq!(error.to_string(), "messages[1]: content must not be empty");
    assert_eq!(appended(&state, "MessageReceived"), 0);
}

fn acme() -> TenantId {
    TenantId::parse("acme").unwrap()
}

fn subject() -> SubjectId {
    SubjectId::parse("u").unwrap()
}

fn messages(messages: Vec<MessageInput>) -> MessagesRequest {
    MessagesRequest {
        tenant: acme(),
        subject: subject(),
        messages,
        metadata: metadata(),
    }
}

/// What the forgetter does to the subject, as far as the write side sees
/// it: the key destroyed, then the receipt appended.
async fn erase(state: &IngestState) {
    state
        .log
        .cipher()
        .destroy(&acme(), &subject())
        .await
        .unwrap();
    let erasure_id = ErasureId::new();
    let receipt = ErasureReceipt {
        erasure_id,
        tenant: acme(),
        subject: subject(),
        requested_at: Utc::now(),
        completed_at: Utc::now(),
        steps: vec![],
        events_shredded: 0,
    };
    state
        .log
        .append_one(
            &acme(),
            &streams::erasure(&erasure_id),
            ExpectedVersion::Any,
            Pending {
                event_id: EventId::new(),
                subject: Some(subject()),
                event: DomainEvent::SubjectErased(SubjectErased { receipt }),
                metadata: metadata(),
            },
        )
        .await
        .unwrap();
}

fn memory_from(sources: &[&str]) -> NewMemoryRequest {
    NewMemoryRequest {
        tenant: acme(),
        subject: subject(),
        content: "likes tea".into(),
        kind: MemoryKind::Preference,
        tags: vec![],
        confidence: None,
        importance: None,
        session: None,
        agent: None,
        sources: sources.iter().map(|s| s.to_string()).collect(),
        metadata: metadata(),
    }
}

fn consolidation() -> ConsolidationRequest {
    ConsolidationRequest {
        tenant: acme(),
        subject: subject(),
        session: None,
        metadata: metadata(),
    }
}

#[tokio::test]
async fn after_an_erasure_the_same_message_ids_are_new_messages() {
    let dir = tempfile::tempdir().unwrap();
    let state = state(&dir).await;
    let batch = || vec![message("m1", "before"), message("m2", "before too")];
    let before = write::ingest_messages(&state, messages(batch()))
        .await
        .unwrap();
    erase(&state).await;

    let after = write::ingest_messages(&state, messages(batch()))
        .await
        .unwrap();
    assert!(
        after.iter().all(|m| !m.event.duplicate),
        "not deduplicated against the erased generation"
    );
    for (old, new) in before.iter().zip(&after) {
        assert_eq!(old.message_id, new.message_id);
        assert_ne!(old.event.event_id, new.event.event_id);
    }
    assert_eq!(appended(&state, "MessageReceived"), 4);
    // The ids come from the keyed token of the client's id under the
    // subject's new key, not from the id itself.
    assert_eq!(after[0].event.event_id, message_id_now(&state, "m1").await);
    assert_ne!(
        after[0].event.event_id,
        EventId::message(&acme(), &subject(), 2, "m1")
    );

    // Within the new generation a retry is a duplicate again.
    let retry = write::ingest_messages(&state, messages(batch()))
        .await
        .unwrap();
    assert!(retry.iter().all(|m| m.event.duplicate));
    assert_eq!(appended(&state, "MessageReceived"), 4);
}

/// The event id a client's message id maps to under the subject's live key.
async fn message_id_now(state: &IngestState, client_id: &str) -> EventId {
    let token = state
        .log
        .cipher()
        .token(&acme(), &subject(), TokenPurpose::MessageId, client_id)
        .await
        .unwrap();
    EventId::message_token(&acme(), &subject(), &token)
}

#[tokio::test]
async fn a_message_stored_under_the_unkeyed_id_is_still_a_duplicate_when_retried() {
    let dir = tempfile::tempdir().unwrap();
    let state = state(&dir).await;
    // As appended before message ids were keyed: the event id derived from
    // the client's id itself.
    let generation = state
        .log
        .cipher()
        .generation(&acme(), &subject())
        .await
        .unwrap();
    let legacy = EventId::message(&acme(), &subject(), generation, "m-old");
    state
        .log
        .append_one(
            &acme(),
            &streams::conversation(&subject()),
            ExpectedVersion::Any,
            Pending {
                event_id: legacy,
                subject: Some(subject()),
                event: DomainEvent::MessageReceived(MessageReceived {
                    message_id: "m-old".into(),
                    role: Role::User,
                    content: SubjectText::new("before the upgrade"),
                    timestamp: Utc::now(),
                    session: None,
                    agent: None,
                    pii: BTreeMap::new(),
                }),
                metadata: metadata(),
            },
        )
        .await
        .unwrap();
    let retried = write::ingest_messages(
        &state,
        messages(vec![
            message("m-old", "before the upgrade"),
            message("m-new", "after"),
        ]),
    )
    .await
    .unwrap();
    assert!(retried[0].event.duplicate);
    assert_eq!(retried[0].event.event_id, legacy);
    assert!(!retried[1].event.duplicate);
    assert_eq!(
        retried[1].event.event_id,
        message_id_now(&state, "m-new").await
    );
    // Counted: the new message only (the old one went past the counter).
    assert_eq!(appended(&state, "MessageReceived"), 1);
    // A memory may still name it as a source.
    let memory = write::create_memory(&state, memory_from(&["m-old"]))
        .await
        .unwrap();
    assert_eq!(memory.provenance.source_event_ids, [legacy]);
}

#[tokio::test]
async fn a_source_from_before_an_erasure_is_unknown_and_appends_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let state = state(&dir).await;
    write::ingest_messages(&state, messages(vec![message("old", "before")]))
        .await
        .unwrap();
    write::create_memory(&state, memory_from(&["old"]))
        .await
        .unwrap();
    erase(&state).await;
    write::ingest_messages(&state, messages(vec![message("new", "after")]))
        .await
        .unwrap();

    // Its id's token was made with the destroyed key: mnemo cannot tell it
    // from an id never posted, by design.
    let gone = write::create_memory(&state, memory_from(&["new", "old"]))
        .await
        .err()
        .unwrap();
    assert_eq!(gone.code(), "unknown_source");
    let unknown = write::create_memory(&state, memory_from(&["never-posted"]))
        .await
        .err()
        .unwrap();
    assert_eq!(unknown.code(), "unknown_source");
    assert_eq!(appended(&state, "MemoryCreated"), 1);

    // A message of the new generation is a source as any.
    let memory = write::create_memory(&state, memory_from(&["new"]))
        .await
        .unwrap();
    assert_eq!(
        memory.provenance.source_event_ids,
        [message_id_now(&state, "new").await]
    );
}

#[tokio::test]
async fn consolidating_an_erased_subject_is_refused_until_something_is_posted_afresh() {
    let dir = tempfile::tempdir().unwrap();
    let state = state(&dir).await;
    write::ingest_messages(&state, messages(vec![message("m1", "before")]))
        .await
        .unwrap();
    write::request_consolidation(&state, consolidation())
        .await
        .unwrap();
    erase(&state).await;

    let refused = write::request_consolidation(&state, consolidation())
        .await
        .err()
        .unwrap();
    assert_eq!(
        (refused.class(), refused.code()),
        (ErrorClass::Gone, "subject_erased")
    );
    assert_eq!(appended(&state, "ConsolidationRequested"), 1);
    assert_eq!(
        state
            .log
            .cipher()
            .live_generation(&acme(), &subject())
            .await
            .unwrap(),
        None,
        "refusing created no key"
    );

    write::ingest_messages(&state, messages(vec![message("m1", "after")]))
        .await
        .unwrap();
    write::request_consolidation(&state, consolidation())
        .await
        .unwrap();
    assert_eq!(appended(&state, "ConsolidationRequested"), 2);
}
