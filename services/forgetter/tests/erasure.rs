//! The erasure executor over the embedded stores: the receipt has one step
//! per store, in the order they were done with the read model last, and the
//! vector index step says `points_purged` only when no file of the index
//! holds the subject's points any more (else it names what remains).

use std::path::Path;
use std::sync::Arc;

use chrono::Utc;
use mnemo_bus::EventHandler;
use mnemo_consolidator::buffer::SqliteMessageBuffer;
use mnemo_crypto::{MemorySubjectKeyStore, SubjectCipher};
use mnemo_domain::events::{streams, ErasureReceipt, ErasureRequested, MessageReceived, Role};
use mnemo_domain::{
    DomainEvent, ErasureId, EventId, EventMetadata, MemoryId, MemoryKind, MemoryState, SubjectId,
    SubjectText, TenantId,
};
use mnemo_event_store::sealed::{Pending, SealedLog};
use mnemo_event_store::{sqlite, ExpectedVersion};
use mnemo_forgetter::targets::{PipelineStateErasure, ReadModelErasure, VectorIndexErasure};
use mnemo_forgetter::usage::SqliteUsageStore;
use mnemo_forgetter::{BusCopies, ErasureExecutor, ErasureTarget};
use mnemo_read_model::sqlite::SqliteMemoryReadModel;
use mnemo_vector_index::{
    EdgeVectorIndex, Hit, Point, PointPayload, Purge, SearchRequest, VectorIndex, VectorIndexError,
};
use sqlx::SqlitePool;

const DIMENSION: usize = 8;
const CANARY: &str = "canary-erased-tag-40c1e7";

fn tenant() -> TenantId {
    TenantId::parse("acme").unwrap()
}

fn subject(name: &str) -> SubjectId {
    SubjectId::parse(name).unwrap()
}

fn metadata() -> EventMetadata {
    EventMetadata {
        actor: "test".into(),
        ..Default::default()
    }
}

fn vector_point(subject: &SubjectId, tag: &str) -> Point {
    let mut dense = vec![0.0; DIMENSION];
    dense[0] = 1.0;
    Point {
        id: MemoryId::new(),
        dense,
        text: "plays the harp".into(),
        payload: PointPayload {
            tenant: tenant(),
            subject: subject.clone(),
            point_type: mnemo_vector_index::PointType::Memory,
            kind: MemoryKind::Fact,
            tags: vec![tag.to_owned()],
            state: MemoryState::Active,
            session: None,
            agent: None,
            created_at: 1_700_000_000,
            updated_at: 1_700_000_000,
            importance: 0.5,
        },
    }
}

fn files_holding(dir: &Path, needle: &str) -> usize {
    let mut found = 0;
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if memchr::memmem::find(&std::fs::read(&path).unwrap(), needle.as_bytes())
                .is_some()
            {
                found += 1;
            }
        }
    }
    found
}

struct Fixture {
    _dir: tempfile::TempDir,
    vectors: std::path::PathBuf,
    pool: SqlitePool,
    log: SealedLog,
    index: Arc<EdgeVectorIndex>,
}

impl Fixture {
    /// Two messages of `erin`'s (sealed), one of `kim`'s, and a point each
    /// in the vector index.
    async fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let store = sqlite::open(&dir.path().join("mnemo.db")).await.unwrap();
        let pool = store.pool().clone();
        let cipher = SubjectCipher::new(Arc::new(MemorySubjectKeyStore::new()));
        let log = SealedLog::new(Arc::new(store), Arc::new(cipher));
        for (who, text) in [
            ("erin", "I play the harp"),
            ("erin", "in Lyon"),
            ("kim", "hi"),
        ] {
            let s = subject(who);
            log.append_one(
                &tenant(),
                &streams::subject(&s),
                ExpectedVersion::Any,
                Pending {
                    event_id: EventId::new(),
                    subject: Some(s.clone()),
                    event: DomainEvent::MessageReceived(MessageReceived {
                        message_id: EventId::new().to_string(),
                        role: Role::User,
                        content: SubjectText::new(text),
                        timestamp: Utc::now(),
                        session: None,
                        agent: None,
                        pii: Default::default(),
                    }),
                    metadata: metadata(),
                },
            )
            .await
            .unwrap();
        }
        let vectors = dir.path().join("vectors");
        let index = Arc::new(EdgeVectorIndex::open(&vectors, DIMENSION).unwrap());
        index
            .upsert(
                &tenant(),
                vec![
                    vector_point(&subject("erin"), CANARY),
                    vector_point(&subject("kim"), "kept"),
                ],
            )
            .await
            .unwrap();
        Fixture {
            _dir: dir,
            vectors,
            pool,
            log,
            index,
        }
    }

    fn executor(&self, bus: BusCopies, index: Arc<dyn VectorIndex>) -> ErasureExecutor {
        let targets: Vec<Arc<dyn ErasureTarget>> = vec![
            Arc::new(VectorIndexErasure(index)),
            Arc::new(PipelineStateErasure {
                buffer: Arc::new(SqliteMessageBuffer::new(self.pool.clone())),
                usage: Arc::new(SqliteUsageStore::new(self.pool.clone())),
            }),
            Arc::new(ReadModelErasure {
                read_model: Arc::new(SqliteMemoryReadModel::new(
                    self.pool.clone(),
                    self.log.cipher().clone(),
                )),
                sqlite: Some(self.pool.clone()),
            }),
        ];
        ErasureExecutor::new(self.log.clone(), bus, targets)
    }

    /// Asks for `erin`'s erasure, runs `executor` on the request (twice, as
    /// a redelivery would) and returns the receipt.
    async fn erase(&self, executor: &ErasureExecutor) -> ErasureReceipt {
        let erasure_id = ErasureId::new();
        let stream = streams::erasure(&erasure_id);
        self.log
            .append_one(
                &tenant(),
                &stream,
                ExpectedVersion::NoStream,
                Pending {
                    event_id: EventId::new(),
                    subject: Some(subject("erin")),
                    event: DomainEvent::ErasureRequested(ErasureRequested {
                        erasure_id,
                        subject: subject("erin"),
                    }),
                    metadata: metadata(),
                },
            )
            .await
            .unwrap();
        let request = self
            .log
            .store()
            .read_stream(&tenant(), &stream)
            .await
            .unwrap()[0]
            .clone();
        executor.handle(&request).await.unwrap();
        executor.handle(&request).await.unwrap();
        let receipts: Vec<ErasureReceipt> = self
            .log
            .read_stream(&tenant(), &stream)
            .await
            .unwrap()
            .into_iter()
            .filter_map(|d| match d.event {
                DomainEvent::SubjectErased(erased) => Some(erased.receipt),
                _ => None,
            })
            .collect();
        assert_eq!(receipts.len(), 1, "a redelivery writes no second receipt");
        receipts.into_iter().next().unwrap()
    }
}

fn stores(receipt: &ErasureReceipt) -> Vec<&str> {
    receipt.steps.iter().map(|s| s.store.as_str()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_receipt_has_a_step_per_store_and_the_vector_bytes_are_gone() {
    let fixture = Fixture::new().await;
    assert!(
        files_holding(&fixture.vectors, CANARY) > 0,
        "the scan finds the tag before the erasure (else this test proves nothing)"
    );
    let executor = fixture.executor(BusCopies::InProcess, fixture.index.clone());

    let receipt = fixture.erase(&executor).await;

    assert_eq!(
        stores(&receipt),
        [
            "subject_keys",
            "event_log",
            "bus",
            "vector_index",
            "pipeline_state",
            "memory_read_model"
        ]
    );
    let step = |store: &str| receipt.steps.iter().find(|s| s.store == store).unwrap();
    assert_eq!(step("subject_keys").count, 1);
    assert_eq!(receipt.events_shredded, 2, "erin's two messages");
    assert_eq!(step("event_log").action, "events_shredded");
    assert_eq!(step("event_log").count, 2);
    assert_eq!(step("bus").count, 2);
    assert!(step("bus").note.as_deref().unwrap().contains("bus_records"));
    let vectors = step("vector_index");
    assert_eq!(
        (
            vectors.action.as_str(),
            vectors.count,
            vectors.note.as_deref()
        ),
        ("points_purged", 1, None)
    );
    assert_eq!(files_holding(&fixture.vectors, CANARY), 0);
    assert_eq!(
        fixture
            .index
            .count(&tenant(), Some(&subject("kim")))
            .await
            .unwrap(),
        1
    );
}

/// The embedded index under an adapter that cannot purge, as a Qdrant
/// server is.
struct CannotPurge(Arc<EdgeVectorIndex>);

#[async_trait::async_trait]
impl VectorIndex for CannotPurge {
    fn dimension(&self) -> usize {
        self.0.dimension()
    }
    async fn upsert(&self, t: &TenantId, points: Vec<Point>) -> Result<(), VectorIndexError> {
        self.0.upsert(t, points).await
    }
    async fn update_payload(
        &self,
        t: &TenantId,
        id: &MemoryId,
        payload: PointPayload,
    ) -> Result<(), VectorIndexError> {
        self.0.update_payload(t, id, payload).await
    }
    async fn delete(&self, t: &TenantId, ids: &[MemoryId]) -> Result<(), VectorIndexError> {
        self.0.delete(t, ids).await
    }
    async fn delete_subject(&self, t: &TenantId, s: &SubjectId) -> Result<u64, VectorIndexError> {
        self.0.delete_subject(t, s).await
    }
    async fn search(
        &self,
        t: &TenantId,
        request: &SearchRequest,
    ) -> Result<Vec<Hit>, VectorIndexError> {
        self.0.search(t, request).await
    }
    async fn count(&self, t: &TenantId, s: Option<&SubjectId>) -> Result<u64, VectorIndexError> {
        self.0.count(t, s).await
    }
    async fn flush(&self) -> Result<(), VectorIndexError> {
        self.0.flush().await
    }
    async fn purge_deleted(&self) -> Result<Purge, VectorIndexError> {
        Ok(Purge::Residue {
            note: "the server keeps them until its optimizer vacuums them".into(),
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_keeps_bytes_says_where_and_until_when() {
    let fixture = Fixture::new().await;
    let kafka = BusCopies::Kafka {
        topics: vec!["mnemo.messages".into(), "mnemo.subject-events".into()],
    };
    let executor = fixture.executor(kafka, Arc::new(CannotPurge(fixture.index.clone())));

    let receipt = fixture.erase(&executor).await;

    let step = |store: &str| receipt.steps.iter().find(|s| s.store == store).unwrap();
    let vectors = step("vector_index");
    assert_eq!(
        (vectors.action.as_str(), vectors.count),
        ("points_deleted", 1)
    );
    assert!(vectors
        .note
        .as_deref()
        .unwrap()
        .contains("until its optimizer vacuums them"));
    let bus = step("bus").note.as_deref().unwrap();
    assert!(
        bus.contains("mnemo.messages, mnemo.subject-events"),
        "{bus}"
    );
    assert!(bus.contains("retention"), "{bus}");
    assert_eq!(stores(&receipt).last(), Some(&"memory_read_model"));
}
