//! The episode projection over a real SQLite log and the embedded index:
//! a batch of posted messages is indexed by its first delivery in one
//! index write (the read-ahead), each message under the turn before it, a
//! redelivery changes nothing, an erased message is never indexed, and the
//! replay of `mnemo reindex` writes the same episodes.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use chrono::Utc;
use mnemo_bus::EventHandler;
use mnemo_crypto::{MemorySubjectKeyStore, SubjectCipher};
use mnemo_domain::events::{streams, MessageReceived, Role};
use mnemo_domain::{
    DomainEvent, EventId, EventMetadata, MemoryId, SessionId, SubjectId, SubjectText, TenantId,
};
use mnemo_embed::LexicalEmbedder;
use mnemo_event_store::sealed::{Pending, SealedLog};
use mnemo_event_store::{sqlite, ExpectedVersion};
use mnemo_retriever::episodes::EpisodeProjection;
use mnemo_vector_index::{
    EdgeVectorIndex, Hit, Point, PointPayload, PointType, Purge, SearchFilter, SearchMode,
    SearchRequest, VectorIndex, VectorIndexError,
};

const DIMENSION: usize = 64;

/// The embedded index, counting writes; set `erase_first`, and the next
/// write lands just after an erasure of that subject (its key destroyed,
/// its points deleted), as if the erasure ran while the batch was embedded.
struct Counting {
    inner: EdgeVectorIndex,
    upserts: AtomicUsize,
    erase_first: std::sync::Mutex<Option<(Arc<SubjectCipher>, SubjectId)>>,
}

#[async_trait]
impl VectorIndex for Counting {
    fn dimension(&self) -> usize {
        self.inner.dimension()
    }
    async fn upsert(&self, tenant: &TenantId, points: Vec<Point>) -> Result<(), VectorIndexError> {
        self.upserts.fetch_add(1, Ordering::SeqCst);
        let erase = self.erase_first.lock().unwrap().take();
        if let Some((cipher, subject)) = erase {
            cipher.destroy(tenant, &subject).await.unwrap();
            self.inner.delete_subject(tenant, &subject).await?;
        }
        self.inner.upsert(tenant, points).await
    }
    async fn update_payload(
        &self,
        tenant: &TenantId,
        id: &MemoryId,
        payload: PointPayload,
    ) -> Result<(), VectorIndexError> {
        self.inner.update_payload(tenant, id, payload).await
    }
    async fn delete(&self, tenant: &TenantId, ids: &[MemoryId]) -> Result<(), VectorIndexError> {
        self.inner.delete(tenant, ids).await
    }
    async fn delete_subject(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<u64, VectorIndexError> {
        self.inner.delete_subject(tenant, subject).await
    }
    async fn purge_deleted(&self) -> Result<Purge, VectorIndexError> {
        self.inner.purge_deleted().await
    }
    async fn search(
        &self,
        tenant: &TenantId,
        request: &SearchRequest,
    ) -> Result<Vec<Hit>, VectorIndexError> {
        self.inner.search(tenant, request).await
    }
    async fn count(
        &self,
        tenant: &TenantId,
        subject: Option<&SubjectId>,
    ) -> Result<u64, VectorIndexError> {
        self.inner.count(tenant, subject).await
    }
    async fn flush(&self) -> Result<(), VectorIndexError> {
        self.inner.flush().await
    }
}

/// A keyword search of episodes only.
fn episodes_by_keyword(query: &str) -> SearchRequest {
    SearchRequest {
        filter: SearchFilter {
            types: vec![PointType::Episode],
            ..SearchFilter::default()
        },
        text: Some(query.to_owned()),
        mode: SearchMode::Keyword,
        ..SearchRequest::default()
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    log: SealedLog,
    index: Arc<Counting>,
    tenant: TenantId,
}

impl Fixture {
    async fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let store = sqlite::open(&dir.path().join("mnemo.db")).await.unwrap();
        let cipher = SubjectCipher::new(Arc::new(MemorySubjectKeyStore::new()));
        let log = SealedLog::new(Arc::new(store), Arc::new(cipher));
        let index = Arc::new(Counting {
            inner: EdgeVectorIndex::open(&dir.path().join("vectors"), DIMENSION).unwrap(),
            upserts: AtomicUsize::new(0),
            erase_first: std::sync::Mutex::new(None),
        });
        Fixture {
            _dir: dir,
            log,
            index,
            tenant: TenantId::parse("t1").unwrap(),
        }
    }

    fn projection(&self) -> EpisodeProjection {
        EpisodeProjection::new(
            self.log.clone(),
            Arc::new(LexicalEmbedder::new(DIMENSION)),
            self.index.clone(),
        )
    }

    /// Posts the lines as one batch (one append, as ingest does).
    async fn post(&self, subject: &SubjectId, lines: &[&str]) -> Vec<mnemo_domain::RecordedEvent> {
        let pending = lines
            .iter()
            .map(|line| Pending {
                event_id: EventId::new(),
                subject: Some(subject.clone()),
                event: DomainEvent::MessageReceived(MessageReceived {
                    message_id: EventId::new().to_string(),
                    role: Role::User,
                    content: SubjectText::new(*line),
                    timestamp: Utc::now(),
                    session: Some(SessionId::parse("s1").unwrap()),
                    agent: None,
                    pii: Default::default(),
                }),
                metadata: EventMetadata {
                    actor: "test".into(),
                    correlation_id: None,
                    causation_id: None,
                    traceparent: None,
                },
            })
            .collect();
        let stream = streams::conversation(subject);
        self.log
            .append(&self.tenant, &stream, ExpectedVersion::Any, pending)
            .await
            .unwrap();
        self.log
            .store()
            .read_stream(&self.tenant, &stream)
            .await
            .unwrap()
    }

    async fn episodes(&self, query: &str) -> Vec<Hit> {
        self.index
            .search(&self.tenant, &episodes_by_keyword(query))
            .await
            .unwrap()
    }
}

#[tokio::test]
async fn a_batch_is_indexed_by_its_first_delivery_in_one_write() {
    let fixture = Fixture::new().await;
    let subject = SubjectId::parse("ann").unwrap();
    let events = fixture
        .post(
            &subject,
            &[
                "Do you still swim?",
                "Yes, every Sunday at the lake.",
                "Which lake?",
                "Lake Annecy, with my sister.",
            ],
        )
        .await;
    let projection = fixture.projection();
    for event in &events {
        projection.handle(event).await.unwrap();
    }
    assert_eq!(fixture.index.upserts.load(Ordering::SeqCst), 1, "one write");
    assert_eq!(
        fixture
            .index
            .count(&fixture.tenant, Some(&subject))
            .await
            .unwrap(),
        4
    );
    // Each answer is indexed under its question: "swim" finds the reply
    // that never says it.
    let swim: Vec<MemoryId> = fixture
        .episodes("swim")
        .await
        .iter()
        .map(|h| h.id)
        .collect();
    assert!(
        swim.contains(&MemoryId::from_uuid(events[1].event_id.as_uuid())),
        "{swim:?}"
    );
    // Redelivered (a new projection has no memory of the read-ahead): the
    // same points again, nothing added.
    let again = fixture.projection();
    again.handle(&events[2]).await.unwrap();
    assert_eq!(
        fixture
            .index
            .count(&fixture.tenant, Some(&subject))
            .await
            .unwrap(),
        4
    );
    // A later batch is one more write.
    let later = fixture
        .post(&subject, &["And in winter?", "The pool."])
        .await;
    for event in &later[4..] {
        projection.handle(event).await.unwrap();
    }
    assert_eq!(fixture.index.upserts.load(Ordering::SeqCst), 3);
    assert_eq!(
        fixture
            .index
            .count(&fixture.tenant, Some(&subject))
            .await
            .unwrap(),
        6
    );
}

#[tokio::test]
async fn an_erased_message_is_never_indexed_and_reindex_writes_the_same_episodes() {
    let fixture = Fixture::new().await;
    let (gone, kept) = (
        SubjectId::parse("gone").unwrap(),
        SubjectId::parse("kept").unwrap(),
    );
    let erased = fixture.post(&gone, &["my secret plan"]).await;
    let events = fixture
        .post(&kept, &["I moved to Porto", "Near the river"])
        .await;
    fixture
        .log
        .cipher()
        .destroy(&fixture.tenant, &gone)
        .await
        .unwrap();
    let projection = fixture.projection();
    projection.handle(&erased[0]).await.unwrap();
    assert_eq!(
        fixture
            .index
            .count(&fixture.tenant, Some(&gone))
            .await
            .unwrap(),
        0
    );
    for event in &events {
        projection.handle(event).await.unwrap();
    }
    let live: Vec<MemoryId> = fixture
        .episodes("river Porto")
        .await
        .iter()
        .map(|h| h.id)
        .collect();

    // The replay into a fresh index finds the same episodes.
    let rebuilt = EdgeVectorIndex::open(&fixture._dir.path().join("rebuilt"), DIMENSION).unwrap();
    let replayed = mnemo_retriever::reindex::replay(
        &fixture.log,
        &LexicalEmbedder::new(DIMENSION),
        &rebuilt,
        0,
        &|_| {},
    )
    .await
    .unwrap();
    assert_eq!(replayed.episodes, 2, "the erased message is not replayed");
    let from_replay: Vec<MemoryId> = rebuilt
        .search(&fixture.tenant, &episodes_by_keyword("river Porto"))
        .await
        .unwrap()
        .iter()
        .map(|h| h.id)
        .collect();
    assert_eq!(from_replay, live);
    assert_eq!(live.len(), 2);
}

#[tokio::test]
async fn an_erasure_while_a_batch_is_embedded_leaves_none_of_its_points() {
    let fixture = Fixture::new().await;
    let subject = SubjectId::parse("eve").unwrap();
    let events = fixture
        .post(&subject, &["I keep bees.", "On the roof, since May."])
        .await;
    *fixture.index.erase_first.lock().unwrap() =
        Some((fixture.log.cipher().clone(), subject.clone()));
    let projection = fixture.projection();
    for event in &events {
        projection.handle(event).await.unwrap();
    }
    projection.flush().await.unwrap();
    assert!(
        fixture.index.erase_first.lock().unwrap().is_none(),
        "the erasure ran during the write"
    );
    assert_eq!(
        fixture
            .index
            .count(&fixture.tenant, Some(&subject))
            .await
            .unwrap(),
        0,
        "the points written after the erasure were taken back"
    );
    assert!(fixture.episodes("bees").await.is_empty());
}

/// The lexical embedder that destroys a subject's key on its first call:
/// an erasure landing while a batch is embedded, before its points are
/// made.
struct ErasingEmbedder {
    inner: LexicalEmbedder,
    erase: std::sync::Mutex<Option<(Arc<SubjectCipher>, TenantId, SubjectId)>>,
}

#[async_trait]
impl mnemo_embed::Embedder for ErasingEmbedder {
    fn space(&self) -> &mnemo_embed::EmbeddingSpace {
        self.inner.space()
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, mnemo_embed::EmbedError> {
        let erase = self.erase.lock().unwrap().take();
        if let Some((cipher, tenant, subject)) = erase {
            cipher.destroy(&tenant, &subject).await.unwrap();
        }
        self.inner.embed(texts).await
    }
}

/// Erased while its batch is embedded: no point is written, and the
/// subject is left without a key (the session's token, made under
/// whatever key was live, created the subject's next one).
#[tokio::test]
async fn an_erasure_while_a_batch_is_embedded_leaves_the_subject_no_key() {
    let fixture = Fixture::new().await;
    let subject = SubjectId::parse("eve").unwrap();
    let events = fixture
        .post(&subject, &["I keep bees.", "On the roof, since May."])
        .await;
    let cipher = fixture.log.cipher().clone();
    let embedder = ErasingEmbedder {
        inner: LexicalEmbedder::new(DIMENSION),
        erase: std::sync::Mutex::new(Some((
            cipher.clone(),
            fixture.tenant.clone(),
            subject.clone(),
        ))),
    };
    let projection = EpisodeProjection::new(
        fixture.log.clone(),
        Arc::new(embedder),
        fixture.index.clone(),
    );
    for event in &events {
        projection.handle(event).await.unwrap();
    }
    projection.flush().await.unwrap();

    assert_eq!(fixture.index.upserts.load(Ordering::SeqCst), 0);
    assert!(fixture.episodes("bees").await.is_empty());
    assert_eq!(
        cipher
            .live_generation(&fixture.tenant, &subject)
            .await
            .unwrap(),
        None
    );
}

/// A run's messages are indexed as delivered: the projection here reads
/// a log that holds none of them, so only the run can give a turn its
/// text and the turn before it; the next run's first turn finds its
/// context in the last run's newest. A subject erased after its run was
/// delivered is not indexed from the run's sealed copies either.
#[tokio::test]
async fn a_runs_turns_are_indexed_as_delivered_without_a_read_of_the_log() {
    let fixture = Fixture::new().await;
    let (ann, eve) = (
        SubjectId::parse("ann").unwrap(),
        SubjectId::parse("eve").unwrap(),
    );
    let first = fixture
        .post(
            &ann,
            &[
                "Do you still swim?",
                "Yes, every Sunday at the lake.",
                "Which lake?",
                "Lake Annecy, with my sister.",
            ],
        )
        .await;
    let erased = fixture.post(&eve, &["I keep bees on the roof."]).await;
    let empty = sqlite::open(&fixture._dir.path().join("empty.db"))
        .await
        .unwrap();
    let projection = EpisodeProjection::new(
        SealedLog::new(Arc::new(empty), fixture.log.cipher().clone()),
        Arc::new(LexicalEmbedder::new(DIMENSION)),
        fixture.index.clone(),
    );
    let run: Vec<_> = first.iter().chain(&erased).cloned().collect();
    projection.prepare(&run).await.unwrap();
    fixture
        .log
        .cipher()
        .destroy(&fixture.tenant, &eve)
        .await
        .unwrap();
    for event in &run {
        projection.handle(event).await.unwrap();
    }
    assert_eq!(fixture.index.upserts.load(Ordering::SeqCst), 1, "one write");
    let count = |subject: SubjectId| {
        let (index, tenant) = (fixture.index.clone(), fixture.tenant.clone());
        async move { index.count(&tenant, Some(&subject)).await.unwrap() }
    };
    assert_eq!(count(ann.clone()).await, 4);
    assert_eq!(count(eve.clone()).await, 0, "erased after delivery");
    let found = |hits: Vec<Hit>| -> Vec<MemoryId> { hits.iter().map(|h| h.id).collect() };
    // The reply is indexed under its question, taken from the run.
    assert!(found(fixture.episodes("swim").await)
        .contains(&MemoryId::from_uuid(first[1].event_id.as_uuid())));

    // The next run: its first turn's context is the last run's newest.
    let later = fixture.post(&ann, &["And in winter?", "The pool."]).await;
    projection.prepare(&later[4..]).await.unwrap();
    for event in &later[4..] {
        projection.handle(event).await.unwrap();
    }
    assert_eq!(count(ann).await, 6);
    assert!(found(fixture.episodes("sister").await)
        .contains(&MemoryId::from_uuid(later[4].event_id.as_uuid())));
}
