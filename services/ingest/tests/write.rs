//! The write use cases on a real (SQLite) log: what they append and count.

use std::collections::BTreeMap;
use std::sync::Arc;

use mnemo_config::{Limits, PiiSettings};
use mnemo_crypto::{MasterKey, MemorySubjectKeyStore, SubjectCipher};
use mnemo_domain::events::Role;
use mnemo_domain::{Classified, EventMetadata, SubjectId, TenantId};
use mnemo_event_store::sealed::SealedLog;
use mnemo_ingest::write::{self, ConsolidationRequest, MessageInput, MessagesRequest};
use mnemo_ingest::{IngestState, Scrubbers};
use mnemo_telemetry::Metrics;

async fn state(dir: &tempfile::TempDir) -> IngestState {
    let store = Arc::new(
        mnemo_event_store::sqlite::open(&dir.path().join("mnemo.db"))
            .await
            .unwrap(),
    );
    let cipher = Arc::new(SubjectCipher::new(Arc::new(MemorySubjectKeyStore::new())));
    IngestState {
        log: SealedLog::new(store, cipher),
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
