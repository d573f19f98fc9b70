//! How many read-model and log calls a search costs: hits are hydrated
//! with one `get_many`, episode hits with one `get_events`, and graph
//! expansion with one `get_many` per hop, never a `get` per id; an
//! episode's window is read only for the episodes returned. A real SQLite
//! read model and log (behind counting wrappers), embedded vector index and
//! lexical embedder; `find` is the code path the search and context
//! endpoints run.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use mnemo_auth::{Principal, Scope};
use mnemo_domain::events::RelationKind;
use mnemo_domain::events::{streams, MessageReceived, Role};
use mnemo_domain::{DomainEvent, EventId, EventMetadata, NewEvent, RecordedEvent};
use mnemo_domain::{
    Memory, MemoryId, MemoryKind, MemoryRelation, MemoryState, Producer, Provenance, SubjectId,
    SubjectText, TenantId,
};
use mnemo_embed::LexicalEmbedder;
use mnemo_event_store::sealed::Pending;
use mnemo_event_store::{AppendResult, EventQuery, EventStore, EventStoreError, ExpectedVersion};
use mnemo_read_model::sqlite::SqliteMemoryReadModel;
use mnemo_read_model::{MemoryFilter, MemoryReadModel, ReadModelError};
use mnemo_retriever::episodes;
use mnemo_retriever::search::{find_memories, FindRequest, Found, Mode};
use mnemo_retriever::RetrieverState;
use mnemo_vector_index::{EdgeVectorIndex, Point, PointType, SearchFilter};

const DIMENSION: usize = 64;

/// The SQLite read model, counting the reads search may make.
struct Counting {
    inner: SqliteMemoryReadModel,
    gets: AtomicUsize,
    get_manys: AtomicUsize,
    /// Ids asked for through `get_many`.
    rows_asked: AtomicUsize,
}

#[async_trait]
impl MemoryReadModel for Counting {
    async fn upsert(&self, tenant: &TenantId, memory: &Memory) -> Result<(), ReadModelError> {
        self.inner.upsert(tenant, memory).await
    }

    async fn upsert_many(
        &self,
        tenant: &TenantId,
        memories: &[(Memory, u32)],
    ) -> Result<(), ReadModelError> {
        self.inner.upsert_many(tenant, memories).await
    }

    async fn remove(&self, tenant: &TenantId, id: &MemoryId) -> Result<(), ReadModelError> {
        self.inner.remove(tenant, id).await
    }

    async fn get(
        &self,
        tenant: &TenantId,
        id: &MemoryId,
    ) -> Result<Option<Memory>, ReadModelError> {
        self.gets.fetch_add(1, Ordering::SeqCst);
        self.inner.get(tenant, id).await
    }

    async fn get_many(
        &self,
        tenant: &TenantId,
        ids: &[MemoryId],
    ) -> Result<Vec<Memory>, ReadModelError> {
        self.get_manys.fetch_add(1, Ordering::SeqCst);
        self.rows_asked.fetch_add(ids.len(), Ordering::SeqCst);
        self.inner.get_many(tenant, ids).await
    }

    async fn list(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
        filter: &MemoryFilter,
    ) -> Result<Vec<Memory>, ReadModelError> {
        self.inner.list(tenant, subject, filter).await
    }

    async fn subjects(
        &self,
        after: Option<(TenantId, SubjectId)>,
        limit: u32,
    ) -> Result<Vec<(TenantId, SubjectId)>, ReadModelError> {
        self.inner.subjects(after, limit).await
    }

    async fn list_subjects(
        &self,
        tenant: &TenantId,
        filter: &mnemo_read_model::SubjectFilter,
    ) -> Result<Vec<mnemo_read_model::SubjectSummary>, ReadModelError> {
        self.inner.list_subjects(tenant, filter).await
    }

    async fn delete_subject(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<u64, ReadModelError> {
        self.inner.delete_subject(tenant, subject).await
    }
}

/// The SQLite log, counting the reads search may make.
struct CountingLog {
    inner: mnemo_event_store::sqlite::SqliteEventStore,
    get_event: AtomicUsize,
    get_events: AtomicUsize,
    ranges: AtomicUsize,
}

#[async_trait]
impl EventStore for CountingLog {
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
        appends: Vec<mnemo_event_store::StreamAppend>,
    ) -> Result<Vec<AppendResult>, EventStoreError> {
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
        self.ranges.fetch_add(1, Ordering::SeqCst);
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
        self.get_event.fetch_add(1, Ordering::SeqCst);
        self.inner.get_event(tenant, event_id).await
    }
    async fn get_events(
        &self,
        tenant: &TenantId,
        event_ids: &[EventId],
    ) -> Result<Vec<RecordedEvent>, EventStoreError> {
        self.get_events.fetch_add(1, Ordering::SeqCst);
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
    async fn wait_for_append(&self, after_position: i64, timeout: std::time::Duration) {
        self.inner.wait_for_append(after_position, timeout).await
    }
}

impl CountingLog {
    /// (`get_event`, `get_events`, `read_stream_range` calls) since the
    /// last reset.
    fn take(&self) -> (usize, usize, usize) {
        (
            self.get_event.swap(0, Ordering::SeqCst),
            self.get_events.swap(0, Ordering::SeqCst),
            self.ranges.swap(0, Ordering::SeqCst),
        )
    }
}

impl Counting {
    /// (`get` calls, `get_many` calls) since the last reset.
    fn take(&self) -> (usize, usize) {
        self.rows_asked.swap(0, Ordering::SeqCst);
        (
            self.gets.swap(0, Ordering::SeqCst),
            self.get_manys.swap(0, Ordering::SeqCst),
        )
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    state: RetrieverState,
    read_model: Arc<Counting>,
    log: Arc<CountingLog>,
    embedder: LexicalEmbedder,
    tenant: TenantId,
    subject: SubjectId,
}

impl Fixture {
    async fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let pool = mnemo_event_store::sqlite::connect(&dir.path().join("m.db"))
            .await
            .unwrap();
        let log = Arc::new(CountingLog {
            inner: mnemo_event_store::sqlite::SqliteEventStore::new(pool.clone())
                .await
                .unwrap(),
            get_event: AtomicUsize::new(0),
            get_events: AtomicUsize::new(0),
            ranges: AtomicUsize::new(0),
        });
        let cipher = Arc::new(mnemo_crypto::SubjectCipher::new(Arc::new(
            mnemo_crypto::MemorySubjectKeyStore::new(),
        )));
        let read_model = Arc::new(Counting {
            inner: SqliteMemoryReadModel::new(pool.clone(), cipher.clone()),
            gets: AtomicUsize::new(0),
            get_manys: AtomicUsize::new(0),
            rows_asked: AtomicUsize::new(0),
        });
        let index = EdgeVectorIndex::open(&dir.path().join("vectors"), DIMENSION).unwrap();
        let embedder = LexicalEmbedder::new(DIMENSION);
        let state = RetrieverState {
            log: mnemo_event_store::sealed::SealedLog::new(log.clone(), cipher),
            read_model: read_model.clone(),
            metrics: Arc::new(mnemo_telemetry::Metrics::new().unwrap()),
            embedder: Arc::new(embedder.clone()),
            index: Arc::new(index),
            access: mnemo_retriever::access::AccessSignals::start(Arc::new(
                mnemo_bus::in_process::InProcessBus::new(pool, 1),
            )),
            ranking: Default::default(),
            rrf_k: mnemo_vector_index::DEFAULT_RRF_K,
            llm_pricing: Default::default(),
            consolidation: Arc::new(Default::default()),
        };
        Fixture {
            _dir: dir,
            state,
            read_model,
            log,
            embedder,
            tenant: TenantId::parse("t1").unwrap(),
            subject: SubjectId::parse("s1").unwrap(),
        }
    }

    fn memory(&self, content: &str) -> Memory {
        Memory {
            id: MemoryId::new(),
            subject: self.subject.clone(),
            kind: MemoryKind::Fact,
            content: SubjectText::new(content),
            tags: Vec::new(),
            confidence: 0.9,
            importance: 0.5,
            state: MemoryState::Active,
            version: 1,
            provenance: Provenance {
                source_event_ids: Vec::new(),
                producer: Producer::api(),
            },
            session: None,
            agent: None,
            reinforcements: 0,
            superseded_by: None,
            relations: Vec::new(),
            created_at: Utc::now(),
            updated_at: Utc::now(),
        }
    }

    /// Writes the memory to the read model, the index, or both: a hit with
    /// no row and a row with no point are both states search meets.
    async fn add(&self, memory: &Memory, in_read_model: bool, indexed: bool) {
        if in_read_model {
            self.read_model.upsert(&self.tenant, memory).await.unwrap();
        }
        if indexed {
            let text = memory.content.as_text().unwrap().to_owned();
            let point = Point {
                id: memory.id,
                dense: self.embedder.embed_one(&text),
                text,
                // The fixture's memories have no tags and no session.
                payload: mnemo_retriever::projection::payload_of(
                    &self.tenant,
                    memory,
                    Default::default(),
                ),
            };
            self.state
                .index
                .upsert(&self.tenant, vec![point])
                .await
                .unwrap();
        }
    }

    /// Posts the lines as one conversation (one append, as ingest does)
    /// and indexes them as the episode projection does.
    async fn post(&self, lines: &[&str]) -> Vec<EventId> {
        self.post_at(lines, Utc::now(), true).await
    }

    /// [`Fixture::post`] said at `timestamp`, indexed as episodes or only
    /// appended; the messages' event ids.
    async fn post_at(
        &self,
        lines: &[&str],
        timestamp: DateTime<Utc>,
        indexed: bool,
    ) -> Vec<EventId> {
        let ids: Vec<EventId> = lines.iter().map(|_| EventId::new()).collect();
        let pending = lines
            .iter()
            .zip(&ids)
            .map(|(line, id)| Pending {
                event_id: *id,
                subject: Some(self.subject.clone()),
                event: DomainEvent::MessageReceived(MessageReceived {
                    message_id: EventId::new().to_string(),
                    role: Role::User,
                    content: SubjectText::new(*line),
                    timestamp,
                    session: None,
                    agent: None,
                    pii: Default::default(),
                }),
                metadata: EventMetadata {
                    actor: "test".into(),
                    ..Default::default()
                },
            })
            .collect();
        let stream = streams::conversation(&self.subject);
        self.state
            .log
            .append(&self.tenant, &stream, ExpectedVersion::Any, pending)
            .await
            .unwrap();
        if !indexed {
            return ids;
        }
        let turns = episodes::read_turns(&self.state.log, &self.tenant, &stream, 1, u64::MAX)
            .await
            .unwrap();
        let generation = self
            .state
            .log
            .cipher()
            .live_generation(&self.tenant, &self.subject)
            .await
            .unwrap()
            .unwrap();
        episodes::index_episodes(
            self.state.log.cipher(),
            self.state.embedder.as_ref(),
            self.state.index.as_ref(),
            &self.tenant,
            generation,
            &episodes::with_previous(&turns, 1),
        )
        .await
        .unwrap();
        ids
    }

    /// A search as the endpoint runs it (live memories of the subject,
    /// expansion two hops deep), without HTTP.
    async fn search(&self, query: &str, k: usize, mode: Mode) -> Vec<Found> {
        self.search_types(query, k, mode, Vec::new(), 0).await
    }

    /// [`Fixture::search`] of these point types (memories when empty), with
    /// `window` turns on each side of an episode.
    async fn search_types(
        &self,
        query: &str,
        k: usize,
        mode: Mode,
        types: Vec<PointType>,
        window: u8,
    ) -> Vec<Found> {
        let principal = Principal {
            tenant: self.tenant.clone(),
            actor: "test".into(),
            scopes: BTreeSet::from([Scope::MemoriesRead]),
            subject: None,
            token_id: None,
        };
        let filter = SearchFilter {
            subject: Some(self.subject.clone()),
            types,
            states: vec![MemoryState::Active],
            ..Default::default()
        };
        find_memories(
            &self.state,
            FindRequest {
                tenant: principal.tenant.clone(),
                subject: self.subject.clone(),
                query: query.to_owned(),
                k,
                mode,
                filter,
                expand_depth: 2,
                window,
                feedback: false,
            },
        )
        .await
        .unwrap_or_else(|e| panic!("search failed: {e:?}"))
    }
}

/// Memory hits are ranked on their points, and only the rows ranked in
/// are read, with one `get_many`, and one more for the row found missing.
#[tokio::test]
async fn search_with_k_10_reads_only_the_rows_ranked_in() {
    let fx = Fixture::new().await;
    let mut written = Vec::new();
    for i in 0..15 {
        let memory = fx.memory(&format!("drinks green tea, note {i}"));
        fx.add(&memory, true, true).await;
        written.push(memory);
    }
    // Indexed but not projected yet: a hit with no row, left out. It
    // names the tea twice, so it ranks first and its row is asked for.
    let unprojected = fx.memory("drinks green tea, green tea, not projected");
    fx.add(&unprojected, false, true).await;
    fx.read_model.take();

    let found = fx.search("green tea", 10, Mode::Keyword).await;

    assert_eq!(found.len(), 10);
    let rows_asked = fx.read_model.rows_asked.load(Ordering::SeqCst);
    let (gets, get_manys) = fx.read_model.take();
    assert_eq!(gets, 0, "no read-model `get` per hit");
    assert_eq!(
        get_manys, 2,
        "the ten ranked in, then one for the missing row"
    );
    assert_eq!(rows_asked, 11, "16 hits, 11 rows read");
    let ids: BTreeSet<MemoryId> = found.iter().map(|f| f.memory().unwrap().id).collect();
    assert_eq!(ids.len(), 10, "each memory once");
    assert!(!ids.contains(&unprojected.id));
    for f in &found {
        let original = written
            .iter()
            .find(|m| m.id == f.memory().unwrap().id)
            .unwrap();
        assert_eq!(
            f.memory().unwrap().content,
            original.content,
            "the hit's own row"
        );
        assert!(f.via.is_none());
    }
}

/// C is the premise of B, B the premise of the only hit A: two hops, one
/// `get_many` each, after the one for the hits.
#[tokio::test]
async fn expansion_reads_each_hop_with_one_read_model_call() {
    let fx = Fixture::new().await;
    let mut a = fx.memory("moved to Paris for the new job");
    let mut b = fx.memory("got an offer from a startup");
    let mut c = fx.memory("finished a degree in robotics");
    let premise = |from: &Memory, to: &Memory| MemoryRelation {
        from: from.id,
        to: to.id,
        relation: RelationKind::Premise,
        confidence: 0.8,
    };
    let (b_of_a, c_of_b) = (premise(&b, &a), premise(&c, &b));
    a.relations = vec![b_of_a.clone()];
    b.relations = vec![b_of_a, c_of_b.clone()];
    c.relations = vec![c_of_b];
    fx.add(&a, true, true).await;
    fx.add(&b, true, false).await;
    fx.add(&c, true, false).await;
    fx.read_model.take();

    let found = fx.search("Paris", 10, Mode::Keyword).await;

    let order: Vec<(MemoryId, Option<MemoryId>)> = found
        .iter()
        .map(|f| (f.memory().unwrap().id, f.via.map(|via| via.of)))
        .collect();
    assert_eq!(
        order,
        [(a.id, None), (b.id, Some(a.id)), (c.id, Some(b.id))]
    );
    assert_eq!(fx.read_model.take(), (0, 3), "(gets, get_manys)");
}

/// Twelve turns, each naming tea: every hit an episode. One log call for
/// all the hits; then, with a window, one range read per episode returned
/// (three), not per hit.
#[tokio::test]
async fn episode_hits_are_read_with_one_log_call_and_windows_only_for_results() {
    let fx = Fixture::new().await;
    let lines: Vec<String> = (0..12)
        .map(|i| format!("I drink green tea, cup {i}"))
        .collect();
    fx.post(&lines.iter().map(String::as_str).collect::<Vec<_>>())
        .await;
    let both = vec![PointType::Memory, PointType::Episode];
    fx.log.take();

    let found = fx
        .search_types("green tea", 3, Mode::Hybrid, both.clone(), 0)
        .await;
    assert_eq!(found.len(), 3);
    assert!(found.iter().all(|f| f.episode().is_some()));
    assert_eq!(fx.log.take(), (0, 1, 0), "one get_events, no get_event");
    for f in &found {
        let hit = f.episode().unwrap();
        assert_eq!(hit.turns, vec![hit.episode.clone()]);
    }

    let found = fx.search_types("green tea", 3, Mode::Hybrid, both, 1).await;
    assert_eq!(found.len(), 3);
    assert_eq!(
        fx.log.take(),
        (0, 1, 3),
        "one get_events, a window read per episode returned"
    );
    for f in &found {
        let hit = f.episode().unwrap();
        let versions: Vec<u64> = hit.turns.iter().map(|t| t.stream_version).collect();
        let v = hit.episode.stream_version;
        let expected: Vec<u64> = (v.saturating_sub(1).max(1)..=(v + 1).min(12)).collect();
        assert_eq!(versions, expected);
    }
}

/// Beside episodes, a memory made today from what was said a year ago
/// ranks as old as what was said (one log read for its sources); a memory
/// with no source message keeps its row's time.
#[tokio::test]
async fn beside_episodes_a_memory_is_as_recent_as_its_sources() {
    let fx = Fixture::new().await;
    let said = Utc::now() - chrono::Duration::days(400);
    // One source is an episode among the hits, its time known without a
    // read; the other only in the log (appended after the indexing), read
    // for its time.
    let among_hits = fx
        .post_at(&["I drink green tea at lunch"], said, true)
        .await;
    let in_log = fx
        .post_at(&["I drink green tea every morning"], said, false)
        .await;
    let mut from_old_talk = fx.memory("drinks green tea in the morning");
    from_old_talk.provenance.source_event_ids = in_log;
    let mut from_a_hit = fx.memory("drinks green tea at lunch");
    from_a_hit.provenance.source_event_ids = among_hits;
    let written_directly = fx.memory("drinks green tea at noon");
    fx.add(&from_old_talk, true, true).await;
    fx.add(&from_a_hit, true, true).await;
    fx.add(&written_directly, true, true).await;
    fx.log.take();

    let both = vec![PointType::Memory, PointType::Episode];
    let found = fx
        .search_types("green tea", 10, Mode::Hybrid, both, 0)
        .await;
    let recency = |id: MemoryId| {
        found
            .iter()
            .find(|f| f.memory().is_some_and(|m| m.id == id))
            .map(|f| f.parts.recency)
            .unwrap()
    };
    assert!(recency(from_old_talk.id) < 0.01);
    assert!(recency(from_a_hit.id) < 0.01);
    assert!(recency(written_directly.id) > 0.99);
    assert_eq!(
        fx.log.take(),
        (0, 2, 0),
        "one get_events for the episodes, one for the source not among them"
    );

    // Memories alone: their rows' time, and no log read.
    let found = fx.search("green tea", 10, Mode::Hybrid).await;
    assert!(found.iter().all(|f| f.parts.recency > 0.99));
    assert_eq!(fx.log.take(), (0, 0, 0));
}
