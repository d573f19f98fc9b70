//! A consolidated batch commits once: its memories and its record are one
//! transaction, over a real SQLite log, buffer, read model and the
//! embedded index. A commit that fails leaves nothing of the batch, and
//! the batch asked again creates its memories exactly once. A subject's
//! batches drained together commit as one group, with what batch by batch
//! would have given.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::Utc;
use mnemo_bus::EventHandler;
use mnemo_config::Policies;
use mnemo_consolidator::buffer::{Conversation, MessageBuffer, SqliteMessageBuffer};
use mnemo_consolidator::pipeline::{Batches, Pipeline};
use mnemo_consolidator::rules::RuleStrategy;
use mnemo_crypto::{MemorySubjectKeyStore, SubjectCipher, TokenPurpose};
use mnemo_domain::consolidation::ConsolidationPolicy;
use mnemo_domain::events::{streams, EventType, MessageReceived, Role};
use mnemo_domain::{
    DomainEvent, EventId, EventMetadata, NewEvent, RecordedEvent, SessionId, SubjectId,
    SubjectText, TenantId,
};
use mnemo_embed::LexicalEmbedder;
use mnemo_event_store::sealed::{Pending, SealedLog};
use mnemo_event_store::sqlite::{self, SqliteEventStore};
use mnemo_event_store::{
    AppendResult, EventQuery, EventStore, EventStoreError, ExpectedVersion, StreamAppend,
};
use mnemo_read_model::sqlite::SqliteMemoryReadModel;
use mnemo_vector_index::EdgeVectorIndex;

const DIMENSION: usize = 64;

/// The SQLite log, refusing the next append that carries a batch's record
/// when `fail_record` is set (a crash or a full disk at the commit).
struct FailingRecord {
    inner: SqliteEventStore,
    fail_record: AtomicBool,
    /// Calls of `append_streams` that reached the log (commits).
    commits: AtomicUsize,
    /// Every id asked of `get_events`, in order.
    asked: std::sync::Mutex<Vec<EventId>>,
    /// Calls of `get_events`, and of `get_event`.
    reads: AtomicUsize,
    single_reads: AtomicUsize,
    /// When set, the next append carrying a batch's record commits all
    /// but the record, then fails (a crash between the memories' commit
    /// and the record's, as with an LLM that rewrites the profile).
    drop_record: AtomicBool,
}

#[async_trait]
impl EventStore for FailingRecord {
    async fn append(
        &self,
        tenant: &TenantId,
        stream_id: &str,
        expected: ExpectedVersion,
        events: Vec<NewEvent>,
    ) -> Result<AppendResult, EventStoreError> {
        self.inner.append(tenant, stream_id, expected, events).await
    }
    async fn append_streams(
        &self,
        tenant: &TenantId,
        appends: Vec<StreamAppend>,
    ) -> Result<Vec<AppendResult>, EventStoreError> {
        let has_record = appends
            .iter()
            .flat_map(|a| &a.events)
            .any(|e| e.event_type == EventType::BatchConsolidated.as_str());
        if has_record && self.fail_record.swap(false, Ordering::SeqCst) {
            return Err(EventStoreError::Backend(
                "injected: the disk is full".into(),
            ));
        }
        if has_record && self.drop_record.swap(false, Ordering::SeqCst) {
            let without: Vec<StreamAppend> = appends
                .into_iter()
                .map(|mut append| {
                    append
                        .events
                        .retain(|e| e.event_type != EventType::BatchConsolidated.as_str());
                    append
                })
                .filter(|append| !append.events.is_empty())
                .collect();
            self.inner.append_streams(tenant, without).await?;
            return Err(EventStoreError::Backend(
                "injected: a crash before the record".into(),
            ));
        }
        self.commits.fetch_add(1, Ordering::SeqCst);
        self.inner.append_streams(tenant, appends).await
    }
    async fn read_stream(
        &self,
        tenant: &TenantId,
        stream_id: &str,
    ) -> Result<Vec<RecordedEvent>, EventStoreError> {
        self.inner.read_stream(tenant, stream_id).await
    }
    async fn read_streams(
        &self,
        tenant: &TenantId,
        stream_ids: &[String],
    ) -> Result<Vec<RecordedEvent>, EventStoreError> {
        self.inner.read_streams(tenant, stream_ids).await
    }
    async fn read_stream_range(
        &self,
        tenant: &TenantId,
        stream_id: &str,
        from: u64,
        to: u64,
    ) -> Result<Vec<RecordedEvent>, EventStoreError> {
        self.inner
            .read_stream_range(tenant, stream_id, from, to)
            .await
    }
    async fn read_subject(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<Vec<RecordedEvent>, EventStoreError> {
        self.inner.read_subject(tenant, subject).await
    }
    async fn get_event(
        &self,
        tenant: &TenantId,
        event_id: &EventId,
    ) -> Result<Option<RecordedEvent>, EventStoreError> {
        self.single_reads.fetch_add(1, Ordering::SeqCst);
        self.inner.get_event(tenant, event_id).await
    }
    async fn get_events(
        &self,
        tenant: &TenantId,
        event_ids: &[EventId],
    ) -> Result<Vec<RecordedEvent>, EventStoreError> {
        self.asked.lock().unwrap().extend_from_slice(event_ids);
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.inner.get_events(tenant, event_ids).await
    }
    async fn query(
        &self,
        tenant: &TenantId,
        query: &EventQuery,
    ) -> Result<Vec<RecordedEvent>, EventStoreError> {
        self.inner.query(tenant, query).await
    }
    async fn read_all(
        &self,
        after_position: i64,
        limit: u32,
    ) -> Result<Vec<RecordedEvent>, EventStoreError> {
        self.inner.read_all(after_position, limit).await
    }
    async fn redact_legacy(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<u64, EventStoreError> {
        self.inner.redact_legacy(tenant, subject).await
    }
    async fn head_position(&self) -> Result<i64, EventStoreError> {
        self.inner.head_position().await
    }
    async fn stored_bytes(&self, tenant: &TenantId) -> Result<u64, EventStoreError> {
        self.inner.stored_bytes(tenant).await
    }
    async fn count_since(
        &self,
        tenant: &TenantId,
        event_type: &str,
        since: chrono::DateTime<chrono::Utc>,
    ) -> Result<u64, EventStoreError> {
        self.inner.count_since(tenant, event_type, since).await
    }
    async fn wait_for_append(&self, after_position: i64, timeout: Duration) {
        self.inner.wait_for_append(after_position, timeout).await
    }
}

async fn events_of(
    store: &dyn EventStore,
    tenant: &TenantId,
    kind: EventType,
) -> Vec<RecordedEvent> {
    store
        .query(
            tenant,
            &EventQuery {
                event_types: vec![kind.as_str().to_owned()],
                limit: 100,
                ..Default::default()
            },
        )
        .await
        .unwrap()
}

/// A pipeline with the rules over a real SQLite log, buffer and read model
/// and the embedded index in `dir`, its log refusing the first batch record.
struct Setup {
    store: Arc<FailingRecord>,
    log: SealedLog,
    buffer: Arc<SqliteMessageBuffer>,
    pipeline: Pipeline,
}

async fn setup(dir: &std::path::Path, policy: ConsolidationPolicy) -> Setup {
    let pool = sqlite::connect(&dir.join("mnemo.db")).await.unwrap();
    let store = Arc::new(FailingRecord {
        inner: SqliteEventStore::new(pool.clone()).await.unwrap(),
        fail_record: AtomicBool::new(true),
        commits: AtomicUsize::new(0),
        asked: Default::default(),
        reads: AtomicUsize::new(0),
        single_reads: AtomicUsize::new(0),
        drop_record: AtomicBool::new(false),
    });
    let cipher = Arc::new(SubjectCipher::new(Arc::new(MemorySubjectKeyStore::new())));
    let log = SealedLog::new(store.clone(), cipher.clone());
    let buffer = Arc::new(SqliteMessageBuffer::new(pool.clone()));
    let pipeline = Pipeline {
        log: log.clone(),
        buffer: buffer.clone(),
        strategy: Arc::new(RuleStrategy::new()),
        fallback: None,
        budget: Arc::default(),
        embedder: Arc::new(LexicalEmbedder::new(DIMENSION)),
        index: Arc::new(EdgeVectorIndex::open(&dir.join("vectors"), DIMENSION).unwrap()),
        read_model: Arc::new(SqliteMemoryReadModel::new(pool, cipher)),
        policies: Arc::new(Policies {
            default: policy,
            tenants: BTreeMap::new(),
        }),
        metrics: None,
        delivered: Default::default(),
    };
    Setup {
        store,
        log,
        buffer,
        pipeline,
    }
}

/// Appends `lines` as messages of `subject`; returns them as appended.
async fn append_messages(
    log: &SealedLog,
    tenant: &TenantId,
    subject: &SubjectId,
    lines: &[&str],
) -> AppendResult {
    append_session_messages(log, tenant, subject, None, lines).await
}

async fn append_session_messages(
    log: &SealedLog,
    tenant: &TenantId,
    subject: &SubjectId,
    session: Option<&str>,
    lines: &[&str],
) -> AppendResult {
    let pending: Vec<Pending> = lines
        .iter()
        .map(|line| Pending {
            event_id: EventId::new(),
            subject: Some(subject.clone()),
            event: DomainEvent::MessageReceived(MessageReceived {
                message_id: EventId::new().to_string(),
                role: Role::User,
                content: SubjectText::new(*line),
                timestamp: Utc::now(),
                session: session.map(|s| SessionId::parse(s).unwrap()),
                agent: None,
                pii: Default::default(),
            }),
            metadata: EventMetadata {
                actor: "ingest".into(),
                ..Default::default()
            },
        })
        .collect();
    log.append(
        tenant,
        &streams::conversation(subject),
        ExpectedVersion::Any,
        pending,
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn a_batch_commits_its_memories_and_record_together_or_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let Setup {
        store,
        log,
        pipeline,
        ..
    } = setup(dir.path(), ConsolidationPolicy::default()).await;
    let tenant = TenantId::parse("acme").unwrap();
    let subject = SubjectId::parse("bob").unwrap();
    let lines = [
        "I live in Lyon.",
        "I love jazz.",
        "I work at the harbour office.",
    ];
    let ids: Vec<EventId> = append_messages(&log, &tenant, &subject, &lines)
        .await
        .events
        .iter()
        .map(|e| e.event_id)
        .collect();
    let conversation = Conversation {
        tenant: tenant.clone(),
        subject,
        session: String::new(),
    };

    // The commit fails: not one of the batch's memories is in the log.
    assert!(pipeline.consolidate(&conversation, &ids).await.is_err());
    assert!(events_of(store.as_ref(), &tenant, EventType::MemoryCreated)
        .await
        .is_empty());
    assert!(
        events_of(store.as_ref(), &tenant, EventType::BatchConsolidated)
            .await
            .is_empty()
    );

    // Asked again, the batch creates them once, with its record after them.
    let outcome = pipeline.consolidate(&conversation, &ids).await.unwrap();
    assert_eq!(outcome.created, lines.len(), "{outcome:?}");
    let created = events_of(store.as_ref(), &tenant, EventType::MemoryCreated).await;
    let records = events_of(store.as_ref(), &tenant, EventType::BatchConsolidated).await;
    assert_eq!(created.len(), lines.len());
    assert_eq!(records.len(), 1);
    assert!(created
        .iter()
        .all(|e| e.global_position < records[0].global_position));

    // And a redelivery of the batch appends nothing.
    let again = pipeline.consolidate(&conversation, &ids).await.unwrap();
    assert_eq!(again.created, 0);
    assert_eq!(again.already_done, ids.len());
    assert_eq!(
        events_of(store.as_ref(), &tenant, EventType::MemoryCreated)
            .await
            .len(),
        lines.len()
    );
}

/// Posts `lines` as messages of `subject` in `session` and buffers them as
/// the consumer would; returns their event ids.
async fn post(
    log: &SealedLog,
    buffer: &SqliteMessageBuffer,
    tenant: &TenantId,
    subject: &SubjectId,
    session: &str,
    lines: &[&str],
) -> Vec<EventId> {
    let appended = append_messages(log, tenant, subject, lines).await;
    let conversation = Conversation {
        tenant: tenant.clone(),
        subject: subject.clone(),
        session: session.to_owned(),
    };
    let buffered: Vec<(Conversation, EventId, i64)> = appended
        .events
        .iter()
        .map(|e| (conversation.clone(), e.event_id, e.global_position))
        .collect();
    buffer.add_many(&buffered).await.unwrap();
    appended.events.iter().map(|e| e.event_id).collect()
}

#[tokio::test]
async fn a_subjects_batches_drained_together_commit_once_and_a_later_batch_reinforces_an_earlier_ones_memory(
) {
    let dir = tempfile::tempdir().unwrap();
    let Setup {
        store,
        log,
        buffer,
        pipeline,
    } = setup(
        dir.path(),
        ConsolidationPolicy {
            batch_size: 2,
            ..ConsolidationPolicy::default()
        },
    )
    .await;
    let tenant = TenantId::parse("acme").unwrap();
    let subject = SubjectId::parse("bob").unwrap();
    // Two batches in one conversation, the second repeating the first's
    // jazz; a third batch in another conversation repeats it again.
    let first = post(
        &log,
        &buffer,
        &tenant,
        &subject,
        "session-a",
        &[
            "I live in Lyon.",
            "I love jazz.",
            "I work at the harbour office.",
            "I love jazz.",
        ],
    )
    .await;
    let second = post(
        &log,
        &buffer,
        &tenant,
        &subject,
        "session-b",
        &["I love jazz.", "I live in Lyon."],
    )
    .await;
    let conversation = |session: &str| Conversation {
        tenant: tenant.clone(),
        subject: subject.clone(),
        session: session.to_owned(),
    };
    let both = [
        (conversation("session-a"), Batches::All),
        (conversation("session-b"), Batches::All),
    ];

    // The group's commit fails: nothing of any of its batches is in the
    // log, and every message still waits.
    assert!(pipeline.drain_subject(&both).await.is_err());
    assert!(events_of(store.as_ref(), &tenant, EventType::MemoryCreated)
        .await
        .is_empty());
    assert_eq!(
        buffer.batch(&conversation("session-a"), 10).await.unwrap(),
        first
    );
    assert_eq!(
        buffer.batch(&conversation("session-b"), 10).await.unwrap(),
        second
    );

    // Drained again: one commit for the three batches, each memory created
    // once (the repeats, not yet in the index, reinforce the memory an
    // earlier batch of the group created), a record per batch after them.
    let (reads, single_reads) = (
        store.reads.load(Ordering::SeqCst),
        store.single_reads.load(Ordering::SeqCst),
    );
    let outcome = pipeline.drain_subject(&both).await.unwrap();
    assert_eq!(store.commits.load(Ordering::SeqCst), 1);
    // The log is read once a conversation for what of its batches it
    // holds (their records, their candidates' events: nothing here), and
    // once a batch for its messages, which no consumer delivered here.
    assert_eq!(store.reads.load(Ordering::SeqCst), reads + 2 + 3);
    assert_eq!(store.single_reads.load(Ordering::SeqCst), single_reads);
    assert_eq!(outcome.messages, 6, "{outcome:?}");
    assert_eq!(outcome.created, 3, "{outcome:?}");
    assert_eq!(outcome.reinforced, 3, "{outcome:?}");
    let created = events_of(store.as_ref(), &tenant, EventType::MemoryCreated).await;
    let reinforced = events_of(store.as_ref(), &tenant, EventType::MemoryReinforced).await;
    let records = events_of(store.as_ref(), &tenant, EventType::BatchConsolidated).await;
    assert_eq!(created.len(), 3);
    assert_eq!(reinforced.len(), 3);
    assert_eq!(records.len(), 3);
    let created_streams: Vec<&str> = created.iter().map(|e| e.stream_id.as_str()).collect();
    assert!(reinforced
        .iter()
        .all(|e| created_streams.contains(&e.stream_id.as_str())));
    for conversation in [conversation("session-a"), conversation("session-b")] {
        assert!(buffer.batch(&conversation, 10).await.unwrap().is_empty());
    }

    // Redelivered, every batch is found done: nothing more is appended.
    for (ids, session) in [
        (&first[..2], "session-a"),
        (&first[2..], "session-a"),
        (&second[..], "session-b"),
    ] {
        let again = pipeline
            .consolidate(&conversation(session), ids)
            .await
            .unwrap();
        assert_eq!(again.already_done, ids.len());
    }
    assert_eq!(
        events_of(store.as_ref(), &tenant, EventType::MemoryCreated)
            .await
            .len(),
        3
    );
}

/// A pipeline over [`setup`] with batches of two and no failure injected,
/// `lines` posted to a conversation of bob's and buffered: the
/// conversation and the messages' ids.
async fn posted_in_pairs(
    dir: &std::path::Path,
    lines: &[&str],
) -> (Setup, Conversation, Vec<EventId>) {
    let setup = setup(
        dir,
        ConsolidationPolicy {
            batch_size: 2,
            ..ConsolidationPolicy::default()
        },
    )
    .await;
    setup.store.fail_record.store(false, Ordering::SeqCst);
    let conversation = Conversation {
        tenant: TenantId::parse("acme").unwrap(),
        subject: SubjectId::parse("bob").unwrap(),
        session: "session-a".to_owned(),
    };
    let ids = post(
        &setup.log,
        &setup.buffer,
        &conversation.tenant,
        &conversation.subject,
        &conversation.session,
        lines,
    )
    .await;
    (setup, conversation, ids)
}

/// What the drain tests post, in pairs: one fact a message.
const FACTS: [&str; 6] = [
    "I live in Lyon.",
    "I love jazz.",
    "I work at the harbour office.",
    "I play the cello.",
    "My sister is called Ana.",
    "I drink green tea.",
];

/// A crash between a group's commit and the removal of its buffer rows
/// leaves committed batches waiting: the next drain finds each of them
/// done with one read of the log for all their records (not one a batch,
/// which nearly always found nothing), and appends nothing.
#[tokio::test]
async fn a_drain_finds_the_batches_a_crash_left_buffered_done_in_one_read() {
    let dir = tempfile::tempdir().unwrap();
    let (
        Setup {
            store,
            buffer,
            pipeline,
            ..
        },
        conversation,
        ids,
    ) = posted_in_pairs(dir.path(), &FACTS).await;
    // Each batch committed, its buffer rows not yet removed.
    for batch in ids.chunks(2) {
        let outcome = pipeline.consolidate(&conversation, batch).await.unwrap();
        assert!(outcome.created > 0, "{outcome:?}");
    }
    assert_eq!(buffer.batch(&conversation, 10).await.unwrap(), ids);
    let head = store.head_position().await.unwrap();
    let (reads, single_reads) = (
        store.reads.load(Ordering::SeqCst),
        store.single_reads.load(Ordering::SeqCst),
    );

    let outcome = pipeline.drain(&conversation).await.unwrap();
    assert_eq!(outcome.already_done, ids.len(), "{outcome:?}");
    assert_eq!(outcome.created, 0, "{outcome:?}");
    assert_eq!(
        store.head_position().await.unwrap(),
        head,
        "nothing appended"
    );
    assert!(buffer.batch(&conversation, 10).await.unwrap().is_empty());
    assert_eq!(store.single_reads.load(Ordering::SeqCst), single_reads);
    assert_eq!(store.reads.load(Ordering::SeqCst), reads + 1);
}

/// A group whose memories were committed without their batches' records
/// (a crash between the two commits) is drained again: each batch finds
/// its candidates' events in the log, among what the drain read of the
/// group in one query, and settles nothing twice; the records follow.
#[tokio::test]
async fn a_drain_after_a_commit_without_records_settles_nothing_twice() {
    let dir = tempfile::tempdir().unwrap();
    let (
        Setup {
            store,
            buffer,
            pipeline,
            ..
        },
        conversation,
        ids,
    ) = posted_in_pairs(dir.path(), &FACTS[..4]).await;
    let tenant = conversation.tenant.clone();
    store.drop_record.store(true, Ordering::SeqCst);
    assert!(pipeline.drain(&conversation).await.is_err());
    let created = events_of(store.as_ref(), &tenant, EventType::MemoryCreated).await;
    assert!(!created.is_empty());
    assert!(
        events_of(store.as_ref(), &tenant, EventType::BatchConsolidated)
            .await
            .is_empty()
    );
    assert_eq!(buffer.batch(&conversation, 10).await.unwrap(), ids);

    let outcome = pipeline.drain(&conversation).await.unwrap();
    assert_eq!(outcome.created, 0, "{outcome:?}");
    assert_eq!(outcome.already_done, created.len(), "{outcome:?}");
    assert_eq!(
        events_of(store.as_ref(), &tenant, EventType::MemoryCreated)
            .await
            .len(),
        created.len()
    );
    assert_eq!(
        events_of(store.as_ref(), &tenant, EventType::BatchConsolidated)
            .await
            .len(),
        2
    );
    assert!(buffer.batch(&conversation, 10).await.unwrap().is_empty());
}

/// Hands the subject's conversation stream to the consolidator as its
/// consumer does (each record, then the run's flush); returns their ids.
async fn hand_over(
    store: &FailingRecord,
    consolidator: &mnemo_consolidator::Consolidator,
    tenant: &TenantId,
    subject: &SubjectId,
) -> Vec<EventId> {
    let recorded = store
        .inner
        .read_stream(tenant, &streams::conversation(subject))
        .await
        .unwrap();
    for event in &recorded {
        consolidator.handle(event).await.unwrap();
    }
    consolidator.flush().await.unwrap();
    recorded.iter().map(|e| e.event_id).collect()
}

/// The messages the consumer was delivered are consolidated from what it
/// kept (`Delivered`), not read back from the log, and what it kept is
/// sealed: a subject erased between delivery and drain reads as erased,
/// and nothing is made of its messages.
#[tokio::test]
async fn delivered_messages_are_consolidated_without_a_read_of_the_log_and_stay_sealed() {
    let dir = tempfile::tempdir().unwrap();
    let Setup {
        store,
        log,
        buffer,
        pipeline,
    } = setup(dir.path(), ConsolidationPolicy::default()).await;
    store.fail_record.store(false, Ordering::SeqCst);
    let consolidator = mnemo_consolidator::Consolidator::with_workers(pipeline, 1);
    let tenant = TenantId::parse("acme").unwrap();
    let lines = ["I live in Lyon.", "I love jazz."];
    let conversation = |subject: &SubjectId| Conversation {
        tenant: tenant.clone(),
        subject: subject.clone(),
        session: String::new(),
    };
    // Appends a subject's messages and hands them to the consolidator as
    // its consumer does; returns their ids.
    let deliver = |subject: SubjectId| {
        let (log, store, consolidator, tenant) = (&log, &store, &consolidator, &tenant);
        async move {
            append_messages(log, tenant, &subject, &lines).await;
            hand_over(store, consolidator, tenant, &subject).await
        }
    };
    let asked = |ids: &[EventId]| {
        let asked = store.asked.lock().unwrap();
        ids.iter().filter(|id| asked.contains(id)).count()
    };

    // Delivered: consolidated from what the consumer kept.
    let ann = SubjectId::parse("ann").unwrap();
    let delivered_ids = deliver(ann.clone()).await;
    assert_eq!(consolidator.pipeline().delivered.len(), lines.len());
    let outcome = consolidator.drain(&conversation(&ann)).await.unwrap();
    assert_eq!(outcome.created, lines.len(), "{outcome:?}");
    assert_eq!(
        asked(&delivered_ids),
        0,
        "the delivered messages were read back"
    );
    assert!(consolidator.pipeline().delivered.is_empty());

    // Buffered but not delivered to this process (a restart, another
    // consumer): read from the log, with the same memories.
    let bob = SubjectId::parse("bob").unwrap();
    let buffered_ids = post(&log, &buffer, &tenant, &bob, "", &lines).await;
    let outcome = consolidator.drain(&conversation(&bob)).await.unwrap();
    assert_eq!(outcome.created, lines.len(), "{outcome:?}");
    assert_eq!(asked(&buffered_ids), buffered_ids.len());

    // Erased after delivery, before the drain: what was kept is sealed
    // under the destroyed key, so the batch learns nothing.
    let cy = SubjectId::parse("cy").unwrap();
    let erased_ids = deliver(cy.clone()).await;
    log.cipher().destroy(&tenant, &cy).await.unwrap();
    let outcome = consolidator.drain(&conversation(&cy)).await.unwrap();
    assert_eq!(outcome.created, 0, "{outcome:?}");
    assert_eq!(asked(&erased_ids), 0);
    let made_of_cy = events_of(store.as_ref(), &tenant, EventType::MemoryCreated)
        .await
        .iter()
        .filter(|e| e.subject.as_ref() == Some(&cy))
        .count();
    assert_eq!(made_of_cy, 0);
}

/// On arrival the consumer opens only a message's content and session: a
/// message joins its session's conversation under the session's keyed
/// token (never its plain id), a message without one joins the subject's
/// conversation without a session, and a subject erased before delivery
/// has nothing buffered and nothing kept.
#[tokio::test]
async fn arrivals_join_their_sessions_conversation_and_an_erased_subjects_are_not_buffered() {
    let dir = tempfile::tempdir().unwrap();
    let Setup {
        store,
        log,
        buffer,
        pipeline,
    } = setup(dir.path(), ConsolidationPolicy::default()).await;
    store.fail_record.store(false, Ordering::SeqCst);
    let consolidator = mnemo_consolidator::Consolidator::with_workers(pipeline, 1);
    let tenant = TenantId::parse("acme").unwrap();

    let ann = SubjectId::parse("ann").unwrap();
    append_session_messages(&log, &tenant, &ann, Some("trip-1"), &["I live in Lyon."]).await;
    append_session_messages(&log, &tenant, &ann, None, &["I love jazz."]).await;
    hand_over(&store, &consolidator, &tenant, &ann).await;
    let token = log
        .cipher()
        .live_token(&tenant, &ann, TokenPurpose::Session, "trip-1")
        .await
        .unwrap()
        .unwrap();
    assert_ne!(token, "trip-1");
    let mut sessions: Vec<String> = buffer
        .conversations(&tenant, &ann)
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.session)
        .collect();
    sessions.sort();
    let mut expected = vec![String::new(), token.clone()];
    expected.sort();
    assert_eq!(sessions, expected);
    assert_eq!(consolidator.pipeline().delivered.len(), 2);
    let trip = Conversation {
        tenant: tenant.clone(),
        subject: ann.clone(),
        session: token,
    };
    let outcome = consolidator.drain(&trip).await.unwrap();
    assert_eq!((outcome.messages, outcome.created), (1, 1), "{outcome:?}");

    // Erased before its messages were delivered: nothing to learn from.
    let cy = SubjectId::parse("cy").unwrap();
    append_session_messages(&log, &tenant, &cy, Some("trip-2"), &["I live in Oslo."]).await;
    append_session_messages(&log, &tenant, &cy, None, &["I love tango."]).await;
    log.cipher().destroy(&tenant, &cy).await.unwrap();
    hand_over(&store, &consolidator, &tenant, &cy).await;
    assert!(buffer.conversations(&tenant, &cy).await.unwrap().is_empty());
    assert_eq!(consolidator.pipeline().delivered.len(), 1);
}
