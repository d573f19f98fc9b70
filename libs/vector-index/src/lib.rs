//! The vector index port ([`VectorIndex`]), its in-process Qdrant adapter
//! ([`EdgeVectorIndex`], cargo feature `edge`), its Qdrant server adapter
//! (`QdrantVectorIndex`, cargo feature `qdrant`) and the contract suite every
//! adapter runs (feature `testsuite`).
//!
//! A point is one memory or one episode (a message as it was said; see
//! [`PointType`]): its UUID is the point id (a memory's id, or the
//! message's event id), its embedding is the
//! `dense` vector, and its text becomes a `sparse` BM25 vector made by
//! Qdrant's own tokenizer pipeline ([`bm25::options`] is the one
//! configuration both the embedded engine and a Qdrant server use, so the two
//! deployments score words the same way). The payload holds only filterable
//! metadata, never the text. Hybrid search fuses a dense and a sparse
//! candidate list with reciprocal rank fusion and reports each leg's rank and
//! score, so every hit can explain itself.
//!
//! Key decision: tenancy is not the caller's job. Every call takes a
//! [`TenantId`] and the adapter adds the tenant condition to every filter it
//! sends to the engine (each prefetch and the final fetch), refuses points
//! whose payload names another tenant, and refuses to overwrite an id that
//! another tenant owns.

use mnemo_domain::{MemoryId, MemoryKind, MemoryState, SubjectId, TenantId};

pub mod bm25;
#[cfg(any(feature = "edge", feature = "qdrant"))]
mod checks;
#[cfg(feature = "edge")]
pub mod collections;
#[cfg(feature = "edge")]
mod edge;
pub mod fusion;
pub mod payload;
#[cfg(feature = "qdrant")]
mod qdrant;
#[cfg(all(
    feature = "qdrant",
    feature = "edge",
    any(test, feature = "qdrant-standin")
))]
mod qdrant_fake;
/// A stand-in Qdrant server for tests in other crates (cargo feature
/// `qdrant-standin`), for machines where no Qdrant server can run: the gRPC
/// services the adapter calls, each collection a qdrant-edge shard. It proves
/// the adapter's side of the wire, not a real server's behaviour.
#[cfg(feature = "qdrant-standin")]
pub mod qdrant_standin {
    pub use crate::qdrant_fake::start;
}
mod settings;
#[cfg(feature = "testsuite")]
pub mod testsuite;

#[cfg(feature = "edge")]
pub use edge::{EdgeStats, EdgeVectorIndex, WAL_SEGMENT_BYTES as EDGE_WAL_SEGMENT_BYTES};
#[cfg(feature = "qdrant")]
pub use qdrant::QdrantVectorIndex;
pub use settings::QdrantSettings;

/// The reciprocal-rank-fusion constant of hybrid search, for every caller
/// ([`SearchRequest::default`], the retriever, the consolidator's neighbour
/// lookup). Not Qdrant's usual 60: on the LoCoMo dev split (one memory per
/// turn, BM25 + all-MiniLM-L6-v2), fusing the two top-100 lists with k = 10
/// gave recall@10 66.7 against 60.1 with k = 60 — with short memories a few
/// strong ranks should count for more.
pub const DEFAULT_RRF_K: u32 = 10;

/// What a point stands for. Memories are curated and versioned; episodes
/// are what was said, one per message, so an agent can recall a turn no
/// memory was made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PointType {
    #[default]
    Memory,
    Episode,
}

impl PointType {
    pub fn as_str(self) -> &'static str {
        match self {
            PointType::Memory => "memory",
            PointType::Episode => "episode",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "memory" => Some(PointType::Memory),
            "episode" => Some(PointType::Episode),
            _ => None,
        }
    }
}

/// What a point carries besides its vectors: everything a search may filter
/// on, and what a hit reports back.
#[derive(Debug, Clone, PartialEq)]
pub struct PointPayload {
    pub tenant: TenantId,
    pub subject: SubjectId,
    /// Memory or episode. An episode's `kind` is [`MemoryKind::Fact`] and
    /// means nothing: a kind filter is a memory filter.
    pub point_type: PointType,
    pub kind: MemoryKind,
    pub tags: Vec<String>,
    pub state: MemoryState,
    pub session: Option<String>,
    pub agent: Option<String>,
    /// Unix seconds.
    pub created_at: i64,
    /// Unix seconds.
    pub updated_at: i64,
    pub importance: f32,
}

/// One memory as the index stores it.
#[derive(Debug, Clone)]
pub struct Point {
    pub id: MemoryId,
    /// The embedding; its length must be [`VectorIndex::dimension`].
    pub dense: Vec<f32>,
    /// Text the sparse BM25 vector is made from. It is tokenised and hashed,
    /// not stored, and never logged.
    pub text: String,
    pub payload: PointPayload,
}

/// Metadata conditions of a search; all combine with AND. The tenant is not
/// here on purpose: it is an argument of every call and always applied.
#[derive(Debug, Clone, Default)]
pub struct SearchFilter {
    pub subject: Option<SubjectId>,
    /// Any of these point types; empty = memories only, so a caller that
    /// knows nothing of episodes (the consolidator's neighbour lookup)
    /// never meets one.
    pub types: Vec<PointType>,
    /// Any of these kinds; empty = every kind.
    pub kinds: Vec<MemoryKind>,
    /// All required.
    pub tags: Vec<String>,
    /// Any of these states; empty = Active only.
    pub states: Vec<MemoryState>,
    pub session: Option<String>,
    pub agent: Option<String>,
    /// Inclusive lower bound on `created_at` (unix seconds).
    pub created_from: Option<i64>,
    /// Inclusive upper bound on `created_at` (unix seconds).
    pub created_to: Option<i64>,
    /// Inclusive lower bound on `importance`.
    pub min_importance: Option<f32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchMode {
    /// Dense and sparse candidates fused with RRF. Uses whichever of
    /// `dense` / `text` is given; at least one is required.
    Hybrid,
    /// Dense only; needs `dense`.
    Semantic,
    /// Sparse BM25 only; needs `text`.
    Keyword,
}

#[derive(Debug, Clone)]
pub struct SearchRequest {
    pub filter: SearchFilter,
    /// Query embedding.
    pub dense: Option<Vec<f32>>,
    /// Query text for BM25.
    pub text: Option<String>,
    pub mode: SearchMode,
    /// Hits returned at most.
    pub limit: usize,
    /// Candidates per prefetch (per leg) in hybrid mode; raised to `limit`
    /// when smaller.
    pub prefetch: usize,
    /// RRF k: a candidate at 0-based position `r` of a leg adds
    /// `1 / (k + r)` to its fused score (Qdrant's formula). Must be > 0.
    pub rrf_k: u32,
    /// Return each hit's stored dense vector (for MMR, dedupe).
    pub with_vectors: bool,
}

impl Default for SearchRequest {
    fn default() -> Self {
        Self {
            filter: SearchFilter::default(),
            dense: None,
            text: None,
            mode: SearchMode::Hybrid,
            limit: 10,
            prefetch: 50,
            rrf_k: DEFAULT_RRF_K,
            with_vectors: false,
        }
    }
}

/// One search result with the evidence for its place.
#[derive(Debug, Clone)]
pub struct Hit {
    pub id: MemoryId,
    /// Fused RRF score in hybrid mode; the leg's own score otherwise (cosine
    /// similarity for semantic, IDF-weighted BM25 for keyword).
    pub score: f32,
    /// 0-based position in the dense candidate list, if it was there.
    pub dense_rank: Option<usize>,
    /// 0-based position in the sparse candidate list, if it was there.
    pub sparse_rank: Option<usize>,
    /// Cosine similarity to the query embedding, if in the dense list.
    pub dense_score: Option<f32>,
    /// BM25 score, if in the sparse list.
    pub sparse_score: Option<f32>,
    pub payload: PointPayload,
    /// The stored dense vector (cosine storage keeps it L2-normalised), when
    /// `with_vectors` was asked.
    pub dense: Option<Vec<f32>>,
}

/// What [`VectorIndex::purge_deleted`] did with the bytes of deleted points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Purge {
    /// Gone: no file of the index holds a byte of a deleted point any more.
    /// `live_points` points (every tenant's) were kept.
    Purged { live_points: u64 },
    /// Still on disk, out of this adapter's reach: where they are and when
    /// they will be gone, said plainly for an erasure receipt.
    Residue { note: String },
}

#[derive(Debug, thiserror::Error)]
pub enum VectorIndexError {
    #[error("point {id} names tenant {found} but the call is for tenant {expected}")]
    TenantMismatch {
        id: MemoryId,
        expected: TenantId,
        found: TenantId,
    },
    #[error("point id {0} is already used by another tenant")]
    IdTaken(MemoryId),
    #[error("point {0} not found")]
    PointNotFound(MemoryId),
    #[error("vector has {actual} dimensions, the index expects {expected}")]
    DimensionMismatch { expected: usize, actual: usize },
    #[error("invalid point {id}: {reason}")]
    InvalidPoint { id: MemoryId, reason: String },
    #[error("invalid search request: {0}")]
    InvalidRequest(String),
    #[error("index on disk was built differently ({0}); rebuild it with a reindex")]
    Incompatible(String),
    #[error("stored point is corrupt: {0}")]
    Corrupt(String),
    #[error("vector index i/o failed: {0}")]
    Io(#[from] std::io::Error),
    #[error("vector engine failed: {0}")]
    Backend(String),
}

impl VectorIndexError {
    /// A stable code for logs and API error bodies; knows nothing of HTTP.
    pub fn code(&self) -> &'static str {
        match self {
            VectorIndexError::TenantMismatch { .. } => "tenant_mismatch",
            VectorIndexError::IdTaken(_) => "point_id_taken",
            VectorIndexError::PointNotFound(_) => "point_not_found",
            VectorIndexError::DimensionMismatch { .. } => "dimension_mismatch",
            VectorIndexError::InvalidPoint { .. } => "invalid_point",
            VectorIndexError::InvalidRequest(_) => "invalid_search_request",
            VectorIndexError::Incompatible(_) => "incompatible_index",
            VectorIndexError::Corrupt(_) => "corrupt_point",
            VectorIndexError::Io(_) => "vector_index_io",
            VectorIndexError::Backend(_) => "vector_index_unavailable",
        }
    }
}

/// Dense + sparse storage of memories and episodes, per tenant.
///
/// Every method is scoped to `tenant`: no call sees, counts, changes or
/// deletes another tenant's points, whatever ids or subject names it is
/// given.
#[async_trait::async_trait]
pub trait VectorIndex: Send + Sync + 'static {
    /// Length of the dense vectors this index holds.
    fn dimension(&self) -> usize;

    /// Inserts points or replaces them whole (vectors and payload). Every
    /// point's `payload.tenant` must equal `tenant`, and an id another tenant
    /// owns is refused; either error rejects the whole batch.
    async fn upsert(&self, tenant: &TenantId, points: Vec<Point>) -> Result<(), VectorIndexError>;

    /// Replaces payload fields without re-embedding (state change on
    /// archive/restore, importance, tags). [`VectorIndexError::PointNotFound`]
    /// when the tenant has no such point.
    async fn update_payload(
        &self,
        tenant: &TenantId,
        id: &MemoryId,
        payload: PointPayload,
    ) -> Result<(), VectorIndexError>;

    /// Deletes the tenant's points with these ids; unknown ids are ignored.
    async fn delete(&self, tenant: &TenantId, ids: &[MemoryId]) -> Result<(), VectorIndexError>;

    /// Deletes every point of a subject (any state); returns how many. The
    /// points leave every search and count at once, but not the disk: an
    /// engine only marks a deleted point (and a Qdrant server's write-ahead
    /// log keeps what was written). An erasure follows this with
    /// [`purge_deleted`](Self::purge_deleted).
    async fn delete_subject(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<u64, VectorIndexError>;

    /// Removes from the disk the bytes of every point deleted so far (by
    /// [`delete`](Self::delete) or [`delete_subject`](Self::delete_subject),
    /// in any tenant), or, when the adapter cannot, says where they remain
    /// and until when. Live points are untouched: they stay searchable and
    /// counted, during the purge too. Every write so far is durable when it
    /// returns. Idempotent, and harmless with nothing deleted.
    ///
    /// It may cost a rewrite of the whole index (the embedded adapter
    /// copies every live point into a fresh shard): call it for an erasure,
    /// not after every delete.
    async fn purge_deleted(&self) -> Result<Purge, VectorIndexError>;

    async fn search(
        &self,
        tenant: &TenantId,
        request: &SearchRequest,
    ) -> Result<Vec<Hit>, VectorIndexError>;

    /// For each of `queries`, the ids of the `limit` points under `filter`
    /// nearest it and their cosine similarities, best first: a semantic
    /// [`search`](Self::search) each, without the payloads, for a caller
    /// that reads what it needs of the hits elsewhere (the consolidator
    /// reads its neighbours' rows from the read model, by tenant).
    ///
    /// The default runs those searches; an adapter whose search pays for
    /// the payloads (reading and parsing each hit's) answers without them.
    async fn nearest(
        &self,
        tenant: &TenantId,
        filter: &SearchFilter,
        queries: &[Vec<f32>],
        limit: usize,
    ) -> Result<Vec<Vec<(MemoryId, f32)>>, VectorIndexError> {
        if let Some(query) = queries.iter().find(|q| q.len() != self.dimension()) {
            return Err(VectorIndexError::DimensionMismatch {
                expected: self.dimension(),
                actual: query.len(),
            });
        }
        if limit == 0 {
            return Ok(vec![Vec::new(); queries.len()]);
        }
        let mut nearest = Vec::with_capacity(queries.len());
        for query in queries {
            let request = SearchRequest {
                filter: filter.clone(),
                dense: Some(query.clone()),
                text: None,
                mode: SearchMode::Semantic,
                limit,
                prefetch: limit,
                // Semantic mode fuses nothing: the constant is unused.
                rrf_k: DEFAULT_RRF_K,
                with_vectors: false,
            };
            let hits = self.search(tenant, &request).await?;
            nearest.push(
                hits.into_iter()
                    .map(|hit| (hit.id, hit.dense_score.unwrap_or(hit.score)))
                    .collect(),
            );
        }
        Ok(nearest)
    }

    /// Points of the tenant (or of one subject), in every state.
    async fn count(
        &self,
        tenant: &TenantId,
        subject: Option<&SubjectId>,
    ) -> Result<u64, VectorIndexError>;

    /// Makes every write so far durable. Used before reporting an erasure
    /// receipt, on shutdown, and before committing a consumer offset when
    /// the adapter was told not to make each write durable by itself. Cheap
    /// when nothing changed.
    async fn flush(&self) -> Result<(), VectorIndexError>;
}
