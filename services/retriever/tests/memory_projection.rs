//! The memory projection over a real SQLite log, read model and the
//! embedded index: a run of memory events is embedded in one embedder call
//! and written in one index write at the flush; rows appear only once their
//! points are durable; a memory created and deleted in one run, or changed
//! only in its state, is never embedded again; a failed embedding loses
//! nothing and is retried by the next flush; an erasure landing while a
//! run is flushed leaves neither its row nor its point; a settled run has
//! its points written and its rows wait for the flush; a memory stays its
//! creation's subject's.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use mnemo_bus::EventHandler;
use mnemo_crypto::{MemorySubjectKeyStore, SubjectCipher, TokenPurpose};
use mnemo_domain::events::{
    streams, MemoryCreated, MemoryReinforced, MemoryRevised, MemoryStateChanged, MessageReceived,
    RelationAdded, RelationKind, Role,
};
use mnemo_domain::{
    DomainEvent, EventId, EventMetadata, Memory, MemoryId, MemoryKind, MemoryState, Producer,
    Provenance, RecordedEvent, SubjectId, SubjectText, TenantId,
};
use mnemo_embed::{EmbedError, Embedder, EmbeddingSpace, LexicalEmbedder};
use mnemo_event_store::sealed::{Pending, SealedLog};
use mnemo_event_store::{sqlite, ExpectedVersion};
use mnemo_read_model::sqlite::SqliteMemoryReadModel;
use mnemo_read_model::MemoryReadModel;
use mnemo_retriever::projection::MemoryProjection;
use mnemo_vector_index::{EdgeVectorIndex, SearchMode, SearchRequest, VectorIndex};

const DIMENSION: usize = 64;

/// The lexical embedder, counting calls and texts, failing on demand, and
/// destroying a subject's key while it embeds when told to: an erasure
/// landing between the flush's look at the keys and its writes.
struct Counting {
    inner: LexicalEmbedder,
    calls: AtomicUsize,
    texts: AtomicUsize,
    fail: AtomicBool,
    erase_while_embedding: Mutex<Option<(Arc<SubjectCipher>, TenantId, SubjectId)>>,
}

#[async_trait]
impl Embedder for Counting {
    fn space(&self) -> &EmbeddingSpace {
        self.inner.space()
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if self.fail.load(Ordering::SeqCst) {
            return Err(EmbedError::InvalidResponse("down for the test".into()));
        }
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.texts.fetch_add(texts.len(), Ordering::SeqCst);
        let erase = self.erase_while_embedding.lock().unwrap().take();
        if let Some((cipher, tenant, subject)) = erase {
            cipher.destroy(&tenant, &subject).await.unwrap();
        }
        self.inner.embed(texts).await
    }
}

/// Handles `run` as the consumer does before it flushes or settles: read
/// ahead, then each event.
async fn handle_run(projection: &MemoryProjection, run: &[RecordedEvent]) {
    projection.prepare(run).await.unwrap();
    for event in run {
        projection.handle(event).await.unwrap();
    }
}

/// Projects `run` as the consumer does: read ahead, each event, flush.
async fn project(projection: &MemoryProjection, run: &[RecordedEvent]) {
    handle_run(projection, run).await;
    projection.flush().await.unwrap();
}

struct Fixture {
    _dir: tempfile::TempDir,
    log: SealedLog,
    read_model: Arc<SqliteMemoryReadModel>,
    index: Arc<EdgeVectorIndex>,
    embedder: Arc<Counting>,
    cipher: Arc<SubjectCipher>,
    tenant: TenantId,
    subject: SubjectId,
}

impl Fixture {
    async fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mnemo.db");
        let store = sqlite::open(&path).await.unwrap();
        let pool = sqlite::connect(&path).await.unwrap();
        let cipher = Arc::new(SubjectCipher::new(Arc::new(MemorySubjectKeyStore::new())));
        Fixture {
            log: SealedLog::new(Arc::new(store), cipher.clone()),
            read_model: Arc::new(SqliteMemoryReadModel::new(pool, cipher.clone())),
            index: Arc::new(EdgeVectorIndex::open(&dir.path().join("vectors"), DIMENSION).unwrap()),
            embedder: Arc::new(Counting {
                inner: LexicalEmbedder::new(DIMENSION),
                calls: AtomicUsize::new(0),
                texts: AtomicUsize::new(0),
                fail: AtomicBool::new(false),
                erase_while_embedding: Mutex::new(None),
            }),
            cipher,
            tenant: TenantId::parse("t1").unwrap(),
            subject: SubjectId::parse("s1").unwrap(),
            _dir: dir,
        }
    }

    fn projection(&self) -> MemoryProjection {
        MemoryProjection::new(
            self.log.clone(),
            self.read_model.clone(),
            self.embedder.clone(),
            self.index.clone(),
        )
    }

    /// The memory said again, in the message `source`.
    async fn reinforce(&self, memory: &MemoryId, source: EventId) -> RecordedEvent {
        self.append(
            memory,
            DomainEvent::MemoryReinforced(MemoryReinforced {
                source_event_ids: vec![source],
                similarity: 0.97,
            }),
        )
        .await
    }

    async fn append(&self, memory: &MemoryId, event: DomainEvent) -> RecordedEvent {
        self.append_as(memory, &self.subject, event).await
    }

    /// An event on `memory`'s stream appended under `subject`.
    async fn append_as(
        &self,
        memory: &MemoryId,
        subject: &SubjectId,
        event: DomainEvent,
    ) -> RecordedEvent {
        let appended = self
            .log
            .append(
                &self.tenant,
                &streams::memory(memory),
                ExpectedVersion::Any,
                vec![Pending {
                    event_id: EventId::new(),
                    subject: Some(subject.clone()),
                    event,
                    metadata: EventMetadata {
                        actor: "test".into(),
                        ..Default::default()
                    },
                }],
            )
            .await
            .unwrap();
        let id = appended.events[0].event_id;
        self.log
            .store()
            .get_event(&self.tenant, &id)
            .await
            .unwrap()
            .unwrap()
    }

    async fn create(&self, content: &str) -> (MemoryId, RecordedEvent) {
        self.create_from(content, Vec::new()).await
    }

    /// A user message in the subject's conversation; its event id.
    async fn said(&self, content: &str) -> EventId {
        let appended = self
            .log
            .append(
                &self.tenant,
                &streams::conversation(&self.subject),
                ExpectedVersion::Any,
                vec![Pending {
                    event_id: EventId::new(),
                    subject: Some(self.subject.clone()),
                    event: DomainEvent::MessageReceived(MessageReceived {
                        message_id: EventId::new().to_string(),
                        role: Role::User,
                        content: SubjectText::new(content),
                        timestamp: chrono::Utc::now(),
                        session: None,
                        agent: None,
                        pii: Default::default(),
                    }),
                    metadata: EventMetadata {
                        actor: "test".into(),
                        ..Default::default()
                    },
                }],
            )
            .await
            .unwrap();
        appended.events[0].event_id
    }

    async fn create_from(
        &self,
        content: &str,
        source_event_ids: Vec<EventId>,
    ) -> (MemoryId, RecordedEvent) {
        let id = MemoryId::new();
        let event = DomainEvent::MemoryCreated(MemoryCreated {
            memory_id: id,
            kind: MemoryKind::Fact,
            content: SubjectText::new(content),
            tags: vec!["test".into()],
            confidence: 0.9,
            importance: 0.5,
            state: MemoryState::Active,
            provenance: Provenance {
                source_event_ids,
                producer: Producer {
                    strategy: "api".into(),
                    version: "1".into(),
                    model: None,
                    prompt_version: None,
                    fallback: None,
                },
            },
            session: None,
            agent: None,
            pii: Default::default(),
        });
        (id, self.append(&id, event).await)
    }

    async fn found(&self, word: &str) -> Vec<MemoryId> {
        self.index
            .search(
                &self.tenant,
                &SearchRequest {
                    text: Some(word.to_owned()),
                    mode: SearchMode::Keyword,
                    ..SearchRequest::default()
                },
            )
            .await
            .unwrap()
            .into_iter()
            .map(|hit| hit.id)
            .collect()
    }
}

#[tokio::test]
async fn a_run_is_embedded_in_one_call_and_its_rows_follow_their_points() {
    let fx = Fixture::new().await;
    let projection = fx.projection();
    let mut created = Vec::new();
    for word in ["apples", "bees", "cellos", "dahlias", "eels"] {
        created.push(fx.create(&format!("The user likes {word}")).await);
    }
    // In the same run: the first revised, the second archived, the third
    // created and deleted.
    let revised = fx
        .append(
            &created[0].0,
            DomainEvent::MemoryRevised(MemoryRevised {
                content: Some(SubjectText::new("The user likes figs")),
                ..Default::default()
            }),
        )
        .await;
    let archived = fx
        .append(
            &created[1].0,
            DomainEvent::MemoryArchived(MemoryStateChanged::default()),
        )
        .await;
    let deleted = fx
        .append(
            &created[2].0,
            DomainEvent::MemoryDeleted(MemoryStateChanged::default()),
        )
        .await;
    for (_, event) in &created {
        projection.handle(event).await.unwrap();
    }
    for event in [&revised, &archived, &deleted] {
        projection.handle(event).await.unwrap();
    }
    assert_eq!(
        fx.embedder.calls.load(Ordering::SeqCst),
        0,
        "nothing embedded before the flush"
    );
    assert!(fx
        .read_model
        .get(&fx.tenant, &created[3].0)
        .await
        .unwrap()
        .is_none());

    projection.flush().await.unwrap();
    assert_eq!(fx.embedder.calls.load(Ordering::SeqCst), 1, "one call");
    // Four points (the deleted one never embedded), each at its latest text.
    assert_eq!(fx.embedder.texts.load(Ordering::SeqCst), 4);
    assert_eq!(fx.found("figs").await, vec![created[0].0]);
    assert!(fx.found("apples").await.is_empty());
    assert!(fx.found("cellos").await.is_empty());
    assert_eq!(fx.found("dahlias").await, vec![created[3].0]);
    let row = |i: usize| fx.read_model.get(&fx.tenant, &created[i].0);
    assert_eq!(row(1).await.unwrap().unwrap().state, MemoryState::Archived);
    assert_eq!(row(2).await.unwrap().unwrap().state, MemoryState::Deleted);
    assert_eq!(
        row(0).await.unwrap().unwrap().content.as_text(),
        Some("The user likes figs")
    );

    // A state change alone rewrites the payload, with no embedding.
    let restored = fx
        .append(
            &created[1].0,
            DomainEvent::MemoryRestored(MemoryStateChanged::default()),
        )
        .await;
    projection.handle(&restored).await.unwrap();
    projection.flush().await.unwrap();
    assert_eq!(fx.embedder.calls.load(Ordering::SeqCst), 1);
    assert_eq!(row(1).await.unwrap().unwrap().state, MemoryState::Active);
    assert_eq!(fx.found("bees").await, vec![created[1].0]);
    // A redelivery of the whole run changes nothing and embeds nothing.
    for (_, event) in &created {
        projection.handle(event).await.unwrap();
    }
    projection.flush().await.unwrap();
    assert_eq!(fx.embedder.calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_memory_with_several_events_in_a_run_is_read_once() {
    let fx = Fixture::new().await;
    let projection = fx.projection();
    let (id, created) = fx.create("The user likes apples").await;
    let mut events = vec![created];
    for fruit in ["pears", "plums"] {
        events.push(
            fx.append(
                &id,
                DomainEvent::MemoryRevised(MemoryRevised {
                    content: Some(SubjectText::new(format!("The user likes {fruit}"))),
                    ..Default::default()
                }),
            )
            .await,
        );
    }
    // A backlog: every event was in the log before the first was handled,
    // so the first read of the stream folded all three.
    for event in &events {
        projection.handle(event).await.unwrap();
    }
    assert_eq!(projection.streams_read(), 1);
    projection.flush().await.unwrap();
    let row = fx.read_model.get(&fx.tenant, &id).await.unwrap().unwrap();
    assert_eq!(row.version, 3);
    assert_eq!(row.content.as_text(), Some("The user likes plums"));
    assert_eq!(fx.found("plums").await, vec![id]);

    // An event after the run is read again: the row moves on.
    let later = fx
        .append(
            &id,
            DomainEvent::MemoryRevised(MemoryRevised {
                content: Some(SubjectText::new("The user likes quinces")),
                ..Default::default()
            }),
        )
        .await;
    projection.handle(&later).await.unwrap();
    projection.flush().await.unwrap();
    assert_eq!(projection.streams_read(), 2);
    let row = fx.read_model.get(&fx.tenant, &id).await.unwrap().unwrap();
    assert_eq!(row.content.as_text(), Some("The user likes quinces"));
}

/// The consumer's read-ahead: a run's memory streams and rows read
/// together before its events are handled give the rows and points that
/// handling them one by one gives.
#[tokio::test]
async fn a_run_read_ahead_projects_what_one_by_one_does() {
    let fx = Fixture::new().await;
    let (apples, created) = fx.create("The user likes apples").await;
    let revised = fx
        .append(
            &apples,
            DomainEvent::MemoryRevised(MemoryRevised {
                content: Some(SubjectText::new("The user likes pears")),
                ..Default::default()
            }),
        )
        .await;
    let (goats, goats_created) = fx.create("The user keeps goats").await;
    let (boats, boats_created) = fx.create("The user sails boats").await;
    let run = [created, goats_created, revised, boats_created];

    let ahead = fx.projection();
    project(&ahead, &run).await;
    // Every memory came from the read-ahead, each read once.
    assert_eq!(ahead.streams_read(), 3);
    assert_eq!(ahead.streams_read_ahead(), 3);
    let rows = fx
        .read_model
        .get_many(&fx.tenant, &[apples, goats, boats])
        .await
        .unwrap();
    assert_eq!(
        rows.iter()
            .map(|r| (r.content.as_text().unwrap().to_owned(), r.version))
            .collect::<Vec<_>>(),
        [
            ("The user likes pears".to_owned(), 2),
            ("The user keeps goats".to_owned(), 1),
            ("The user sails boats".to_owned(), 1),
        ]
    );
    assert_eq!(fx.found("pears").await, vec![apples]);
    assert!(fx.found("apples").await.is_empty());
    assert_eq!(fx.found("goats").await, vec![goats]);

    // A redelivery of the run, read ahead again, finds the rows current:
    // they answer it alone (no stream is folded) and nothing is embedded
    // again.
    let calls = fx.embedder.calls.load(Ordering::SeqCst);
    let again = fx.projection();
    project(&again, &run).await;
    assert_eq!(again.streams_read(), 0);
    assert_eq!(again.events_folded(), 0);
    assert_eq!(fx.embedder.calls.load(Ordering::SeqCst), calls);
}

/// A memory reinforced run after run: each run's read-ahead opens only the
/// events after the memory's row, not its whole history again, and the row
/// is still the fold of the whole stream.
#[tokio::test]
async fn a_run_folds_onto_the_row_only_the_events_after_it() {
    let fx = Fixture::new().await;
    let first = fx.said("I drink tea every morning").await;
    let (id, created) = fx.create_from("The user drinks tea", vec![first]).await;
    let projection = fx.projection();
    let mut run = vec![created];
    let mut sources = vec![first];
    for round in 0..6 {
        project(&projection, &run).await;
        // The first run has no row yet: its whole stream (one event); every
        // later run only its own two events.
        assert_eq!(projection.events_folded(), 1 + 2 * round);
        let source = fx.said(&format!("Tea again, cup {round}")).await;
        sources.push(source);
        let reinforced = fx.reinforce(&id, source).await;
        let archived = fx
            .append(
                &id,
                if round % 2 == 0 {
                    DomainEvent::MemoryArchived(MemoryStateChanged::default())
                } else {
                    DomainEvent::MemoryRestored(MemoryStateChanged::default())
                },
            )
            .await;
        run = vec![reinforced, archived];
    }
    let row = fx.read_model.get(&fx.tenant, &id).await.unwrap().unwrap();
    let stream = fx
        .log
        .read_stream(&fx.tenant, &streams::memory(&id))
        .await
        .unwrap();
    let whole = Memory::fold(
        &fx.subject,
        stream
            .iter()
            .map(|d| (&d.event, d.recorded.stream_version, d.recorded.recorded_at)),
    )
    .unwrap();
    // Five runs of the six reinforced it (the last is still unprojected).
    assert_eq!(row.version, 1 + 2 * 5);
    assert_eq!(row.reinforcements, 5);
    assert_eq!(row.provenance.source_event_ids, sources[..6].to_vec());
    assert_eq!(row.state, MemoryState::Archived);
    assert_eq!(whole.version, 1 + 2 * 6);
    assert_eq!(whole.state, MemoryState::Active);
    let rest = fx.projection();
    project(&rest, &run).await;
    assert_eq!(rest.events_folded(), 2);
    let row = fx.read_model.get(&fx.tenant, &id).await.unwrap().unwrap();
    assert_eq!(row, whole);
}

/// A stream read ahead before one of its events was appended is not used
/// for that event: its state would be older than the event.
#[tokio::test]
async fn a_read_ahead_older_than_the_event_is_read_again() {
    let fx = Fixture::new().await;
    let projection = fx.projection();
    let (id, created) = fx.create("The user likes apples").await;
    projection.prepare(&[created]).await.unwrap();
    let revised = fx
        .append(
            &id,
            DomainEvent::MemoryRevised(MemoryRevised {
                content: Some(SubjectText::new("The user likes pears")),
                ..Default::default()
            }),
        )
        .await;
    projection.handle(&revised).await.unwrap();
    projection.flush().await.unwrap();
    assert_eq!(projection.streams_read_ahead(), 0);
    let row = fx.read_model.get(&fx.tenant, &id).await.unwrap().unwrap();
    assert_eq!(row.version, 2);
    assert_eq!(row.content.as_text(), Some("The user likes pears"));
}

/// A run the consumer does not flush yet (the projection lingers) is
/// settled: its points are embedded and written, so search finds them,
/// and its rows wait for the flush, which makes the points durable first
/// and does not embed them again.
#[tokio::test]
async fn a_settled_run_has_its_points_written_and_its_rows_wait_for_the_flush() {
    let fx = Fixture::new().await;
    let projection = fx.projection();
    let (id, created) = fx.create("The user keeps bees").await;
    handle_run(&projection, &[created]).await;
    assert!(fx.found("bees").await.is_empty());
    projection.settle().await.unwrap();
    assert_eq!(fx.found("bees").await, vec![id]);
    assert!(fx.read_model.get(&fx.tenant, &id).await.unwrap().is_none());
    assert_eq!(fx.embedder.calls.load(Ordering::SeqCst), 1);
    projection.flush().await.unwrap();
    let row = fx.read_model.get(&fx.tenant, &id).await.unwrap().unwrap();
    assert_eq!(row.version, 1);
    assert_eq!(fx.embedder.calls.load(Ordering::SeqCst), 1);
    assert_eq!(fx.found("bees").await, vec![id]);
}

/// An erasure between a settle and the flush: the settled point is taken
/// back and no row is written.
#[tokio::test]
async fn an_erasure_after_a_settle_leaves_no_row_or_point() {
    let fx = Fixture::new().await;
    let projection = fx.projection();
    let (id, created) = fx.create("The user keeps bees").await;
    handle_run(&projection, &[created]).await;
    projection.settle().await.unwrap();
    assert_eq!(fx.found("bees").await, vec![id]);
    fx.cipher.destroy(&fx.tenant, &fx.subject).await.unwrap();
    projection.flush().await.unwrap();
    assert!(fx.found("bees").await.is_empty());
    assert!(fx.read_model.get(&fx.tenant, &id).await.unwrap().is_none());
}

/// An event on a memory's stream appended under another subject (only a
/// defect could append one) neither moves the memory to that subject nor
/// has it written under that subject's key generation, whether its run
/// read the memory ahead onto its row, read it ahead whole, or did not
/// read ahead. The other subject's key is at generation 2 (it was erased
/// once), the memory's subject's at 1: a row kept with the wrong one is
/// refused at the flush, and its point deleted.
#[tokio::test]
async fn a_memory_stays_its_creators_whatever_subject_a_later_event_carries() {
    for case in ["onto the row", "whole", "not read ahead"] {
        let fx = Fixture::new().await;
        let projection = fx.projection();
        let other = SubjectId::parse("s2").unwrap();
        fx.cipher
            .token(&fx.tenant, &other, TokenPurpose::Tag, "x")
            .await
            .unwrap();
        fx.cipher.destroy(&fx.tenant, &other).await.unwrap();
        fx.cipher
            .token(&fx.tenant, &other, TokenPurpose::Tag, "x")
            .await
            .unwrap();
        let (id, created) = fx.create("The user keeps bees").await;
        if case == "onto the row" {
            project(&projection, &[created]).await;
        }
        let related = fx
            .append_as(
                &id,
                &other,
                DomainEvent::RelationAdded(RelationAdded {
                    from: MemoryId::new(),
                    to: id,
                    relation: RelationKind::Premise,
                    confidence: 0.9,
                }),
            )
            .await;
        assert_eq!(
            fx.cipher.live_generation(&fx.tenant, &other).await.unwrap(),
            Some(2),
            "{case}"
        );
        if case == "not read ahead" {
            projection.handle(&related).await.unwrap();
            projection.flush().await.unwrap();
        } else {
            project(&projection, &[related]).await;
        }
        let row = fx.read_model.get(&fx.tenant, &id).await.unwrap();
        let row = row.unwrap_or_else(|| panic!("{case}: no row"));
        assert_eq!(row.subject, fx.subject, "{case}");
        assert_eq!(row.version, 2, "{case}");
        assert_eq!(row.relations.len(), 1, "{case}");
        assert_eq!(fx.found("bees").await, vec![id], "{case}");
    }
}

/// A memory's events committed together but delivered in two runs: the
/// first run's read-ahead projected them all, so the second run reads
/// nothing of the memory's stream beyond its row, for any of its events.
#[tokio::test]
async fn events_an_earlier_run_projected_are_not_read_again() {
    let fx = Fixture::new().await;
    let first = fx.said("I drink tea every morning").await;
    let (id, created) = fx.create_from("The user drinks tea", vec![first]).await;
    let mut later = Vec::new();
    for cup in 0..3 {
        let source = fx.said(&format!("Tea again, cup {cup}")).await;
        let reinforced = fx.reinforce(&id, source).await;
        later.push(reinforced);
    }
    let projection = fx.projection();
    project(&projection, &[created]).await;
    // The first run read the whole stream ahead: all four events.
    assert_eq!(projection.events_folded(), 4);
    assert_eq!(
        fx.read_model
            .get(&fx.tenant, &id)
            .await
            .unwrap()
            .unwrap()
            .version,
        4
    );
    let read = projection.streams_read();
    project(&projection, &later).await;
    // The second run found the row at version 4 for each of its events:
    // no stream was read or folded again, ahead or whole.
    assert_eq!(projection.streams_read(), read);
    assert_eq!(projection.events_folded(), 4);
    assert_eq!(projection.streams_read(), projection.streams_read_ahead());
    let row = fx.read_model.get(&fx.tenant, &id).await.unwrap().unwrap();
    assert_eq!(row.version, 4);
    assert_eq!(row.reinforcements, 3);
}

/// An erasure between the read-ahead and the flush: the content read
/// ahead was readable, but its key generation is gone, so neither the row
/// nor the point is written.
#[tokio::test]
async fn an_erasure_after_the_read_ahead_leaves_no_row_or_point() {
    let fx = Fixture::new().await;
    let projection = fx.projection();
    let (id, event) = fx.create("The user keeps goats").await;
    projection
        .prepare(std::slice::from_ref(&event))
        .await
        .unwrap();
    fx.cipher.destroy(&fx.tenant, &fx.subject).await.unwrap();
    projection.handle(&event).await.unwrap();
    projection.flush().await.unwrap();
    assert_eq!(projection.streams_read_ahead(), 1);
    assert!(fx.read_model.get(&fx.tenant, &id).await.unwrap().is_none());
    assert!(fx.found("goats").await.is_empty());
}

#[tokio::test]
async fn a_failed_embedding_keeps_the_run_for_the_next_flush() {
    let fx = Fixture::new().await;
    let projection = fx.projection();
    let (id, event) = fx.create("The user keeps goats").await;
    projection.handle(&event).await.unwrap();
    fx.embedder.fail.store(true, Ordering::SeqCst);
    assert!(projection.flush().await.is_err());
    assert!(fx.read_model.get(&fx.tenant, &id).await.unwrap().is_none());
    assert!(fx.found("goats").await.is_empty());
    fx.embedder.fail.store(false, Ordering::SeqCst);
    projection.flush().await.unwrap();
    assert_eq!(fx.found("goats").await, vec![id]);
    assert!(fx.read_model.get(&fx.tenant, &id).await.unwrap().is_some());
}

/// The subject is erased after the flush looked at its key and before the
/// row is written (here: while the run is embedded). The read model will
/// not seal the row under any key but the one it was read under, so the
/// flush looks again, takes the point back and writes nothing of the
/// subject: no row to list, no point to find, and no key made for it.
#[tokio::test]
async fn an_erasure_during_the_flush_leaves_no_row_point_or_key() {
    let fx = Fixture::new().await;
    let projection = fx.projection();
    let (id, event) = fx.create("The user keeps goats").await;
    projection.handle(&event).await.unwrap();
    *fx.embedder.erase_while_embedding.lock().unwrap() =
        Some((fx.cipher.clone(), fx.tenant.clone(), fx.subject.clone()));

    projection.flush().await.unwrap();
    assert_eq!(fx.embedder.calls.load(Ordering::SeqCst), 1);
    assert!(fx.read_model.get(&fx.tenant, &id).await.unwrap().is_none());
    let filter = mnemo_read_model::MemoryFilter {
        limit: 10,
        ..Default::default()
    };
    assert!(fx
        .read_model
        .list(&fx.tenant, &fx.subject, &filter)
        .await
        .unwrap()
        .is_empty());
    assert!(fx.found("goats").await.is_empty());
    assert_eq!(
        fx.cipher
            .live_generation(&fx.tenant, &fx.subject)
            .await
            .unwrap(),
        None
    );
    // Nothing is left pending to bring it back at a later flush.
    projection.flush().await.unwrap();
    assert!(fx.read_model.get(&fx.tenant, &id).await.unwrap().is_none());
}

/// Fact-augmented keys: a memory is found by the words of the message it
/// was made from, not only by its own; a memory without sources keeps its
/// text as its key; the reindex writes the same key as the projection.
#[tokio::test]
async fn a_memory_is_keyed_by_its_source_messages_too() {
    let fx = Fixture::new().await;
    let projection = fx.projection();
    let source = fx.said("I signed up for a pottery class on Tuesdays").await;
    let (made, event) = fx.create_from("Likes ceramics", vec![source]).await;
    let (plain, plain_event) = fx.create("Keeps bees in the garden").await;
    projection.handle(&event).await.unwrap();
    projection.handle(&plain_event).await.unwrap();
    projection.flush().await.unwrap();

    assert_eq!(fx.found("pottery").await, vec![made]);
    assert_eq!(fx.found("ceramics").await, vec![made]);
    assert_eq!(fx.found("bees").await, vec![plain]);
    // The dense key leans towards the source: closer to it than the
    // memory's text alone is.
    let embed = |text: &str| {
        let embedder = fx.embedder.inner.clone();
        let text = text.to_owned();
        async move { embedder.embed(&[text]).await.unwrap().remove(0) }
    };
    let said = embed("I signed up for a pottery class on Tuesdays").await;
    let own = embed("Likes ceramics").await;
    let hits = fx
        .index
        .search(
            &fx.tenant,
            &SearchRequest {
                dense: Some(said.clone()),
                mode: SearchMode::Semantic,
                with_vectors: true,
                ..SearchRequest::default()
            },
        )
        .await
        .unwrap();
    let key = hits
        .iter()
        .find(|hit| hit.id == made)
        .and_then(|hit| hit.dense.clone())
        .unwrap();
    let cosine = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
    assert!(cosine(&key, &said) > cosine(&own, &said) + 0.1);

    // The reindex rebuilds the same point.
    let keys = mnemo_retriever::projection::memory_keys(
        &fx.log,
        fx.embedder.as_ref(),
        &[(
            &fx.tenant,
            &fx.read_model.get(&fx.tenant, &made).await.unwrap().unwrap(),
        )],
    )
    .await
    .unwrap();
    assert_eq!(keys[0].0, key);
    assert_eq!(
        keys[0].1,
        "Likes ceramics\nI signed up for a pottery class on Tuesdays"
    );
}
