//! The embedded adapter: one qdrant-edge shard per embedding space.
//!
//! qdrant-edge 0.7.0 is a synchronous library, so every call runs on
//! tokio's blocking pool (`spawn_blocking`) with the shard behind an `Arc`.
//! Reads run concurrently; writes, flushes, optimisation and purges take one
//! writer lock because a write during the engine's optimisation would be
//! kept only in memory until it ends (the engine does not replay its WAL),
//! and because a few writes are check-then-act (an id owned by another tenant,
//! the count of an erasure, the copy of a purge).
//!
//! The engine facts the adapter is built around are on [`EdgeVectorIndex`].
//!
//! Where the shard lives: at first in the index directory itself; after a
//! purge in a subdirectory `shard.<n>` that the file `SHARD` names. A purge
//! builds the next `shard.<n+1>` beside the served one, points `SHARD` at it
//! (write, fsync, rename: the commit) and deletes the former shard; opening
//! deletes whatever a crash left of either, so the directory never holds
//! more than the shard `SHARD` names (or the one in place, before any
//! purge).

use std::fs;
use std::io::Write as _;
use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, TryLockError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use mnemo_domain::{MemoryId, SubjectId, TenantId};
use qdrant_edge::bm25_embed::EdgeBm25;
use qdrant_edge::{
    CountRequest, CreateIndex, Distance, EdgeConfig, EdgeShard, EdgeSparseVectorParams,
    EdgeVectorParams, FieldIndexOperations, Filter, JsonPath, Modifier, NamedQuery, OperationError,
    Payload, PayloadFieldSchema, PayloadOps, PointId, PointInsertOperations, PointOperations,
    PointStruct, QueryEnum, QueryRequest, Record, ScoredPoint, ScoringQuery, ScrollRequest,
    SetPayloadOp, SparseVector, UpdateOperation, Vector, VectorInternal, VectorStructInternal,
    Vectors, WalOptions, WithPayloadInterface, WithVector,
};
use serde_json::{json, Value};
use tracing::{debug, info};

use crate::checks::{check_dense, check_payload_tenant, check_point, same_tenant};
use crate::fusion::{self, Fused};
use crate::payload::{self, fields};
use crate::{
    bm25, Hit, Point, PointPayload, Purge, SearchFilter, SearchMode, SearchRequest, VectorIndex,
    VectorIndexError,
};

pub(crate) const DENSE: &str = "dense";
pub(crate) const SPARSE: &str = "sparse";

/// Written beside the shard: how its sparse vectors were made. Opening an
/// index made with other BM25 options would silently mix incompatible
/// vectors, so it is refused instead.
const MARKER_FILE: &str = "mnemo-vector-index.json";
const MARKER_FORMAT: u64 = 1;

/// Written by qdrant-edge when a shard is created.
const EDGE_CONFIG_FILE: &str = "edge_config.json";

/// Names the subdirectory the served shard lives in, once a purge moved it
/// there; without it the shard is the index directory itself.
const SHARD_POINTER_FILE: &str = "SHARD";
/// A purge's shard directory is `shard.<n>`, `n` one more each purge.
const SHARD_DIR_PREFIX: &str = "shard.";

/// What qdrant-edge 0.7.0 keeps in a shard directory (`shard/files`,
/// `edge/mod.rs` of its source). Deleted from the index directory once the
/// shard lives in a subdirectory: they are the former shard.
const ENGINE_ENTRIES: [&str; 8] = [
    "wal",
    "segments",
    "temp_segments",
    EDGE_CONFIG_FILE,
    "payload_index.json",
    "newest_clocks.json",
    "oldest_clocks.json",
    "applied_seq.json",
];

/// Points copied per engine write by a purge.
const PURGE_BATCH: usize = 512;

/// [`VectorIndex`] on an in-process qdrant-edge shard.
///
/// One instance per directory: the engine locks its WAL directory, so a
/// second open of the same directory fails until the first is dropped.
///
/// Engine facts this adapter is built around (read from the 0.7.0 source):
/// - `EdgeShard::load` does not replay the WAL; only flushed segments
///   survive a crash. So every write flushes before it returns (see
///   [`EdgeVectorIndex::set_durable_writes`]), and dropping the index
///   flushes too.
/// - Since the WAL is never read back, the vendored engine writes nothing
///   to it: in 0.7.0 every update serialised its points (payloads and
///   vectors) into a WAL record, a second copy that outlived a deleted
///   point until its file was dropped. Operations are numbered by a
///   counter that starts past every segment's version when the shard is
///   opened (a segment ignores an operation numbered below the point's
///   stored version). The WAL's files are still opened and locked, and a
///   shard an older build wrote keeps the records it has (at most about
///   three segment files, see `load_shard`) until a purge or a reindex
///   builds a new shard.
/// - Nothing optimises in the background. New points go to a plain
///   (brute-force) segment until [`EdgeVectorIndex::optimize`] builds HNSW.
///   A deleted point is only marked deleted in its segment (its payload,
///   vectors and payload index entries stay), and a vacuum only rewrites
///   segments past a threshold of deleted points.
/// - Hence [`VectorIndex::purge_deleted`] rebuilds: it copies the live
///   points into a fresh shard (new WAL, new segments) and swaps it in.
/// - Payload indexes are applied to existing segments only, so they are
///   (idempotently) re-created on every open.
#[derive(Clone)]
pub struct EdgeVectorIndex {
    inner: Arc<Inner>,
}

struct Inner {
    /// The shard served. A purge replaces it whole (under the writer lock);
    /// a read clones the `Arc` and works on the shard it got.
    shard: RwLock<Arc<Shard>>,
    bm25: EdgeBm25,
    dimension: usize,
    /// The index directory (the shard is in it, or is it: see the module
    /// docs).
    dir: PathBuf,
    /// Serialises writes, flushes, optimisation and purges; guards no data.
    writer: Mutex<()>,
    /// Set by whoever finds the writer lock taken: an idle optimisation
    /// holding it stops and gives way (see
    /// [`EdgeVectorIndex::optimize_if_idle`]).
    give_way: AtomicBool,
    /// How many wait for the writer lock: an idle optimisation does not
    /// start while anyone does.
    waiting: AtomicUsize,
    /// An optimisation is running.
    optimising: AtomicBool,
    /// Flush after every write (see [`EdgeVectorIndex::set_durable_writes`]).
    durable_writes: AtomicBool,
    /// Something changed since the last flush: a flush with nothing new
    /// skips the engine, whose flush syncs every segment file it has written.
    dirty: AtomicBool,
    /// When writes were applied, for [`EdgeVectorIndex::optimize_if_idle`]
    /// and [`EdgeVectorIndex::unoptimized_for`].
    writes: Mutex<Writes>,
}

/// When an index was written.
struct Writes {
    /// The last write: [`EdgeVectorIndex::optimize_if_idle`] waits for a
    /// quiet index.
    last: std::time::Instant,
    /// The first write since the last optimisation (None: optimised since
    /// the last write).
    unoptimized_since: Option<std::time::Instant>,
}

/// An open qdrant-edge shard and the directory it lives in.
struct Shard {
    /// Dropped by hand in `Drop for Shard`: see there.
    engine: ManuallyDrop<EdgeShard>,
    path: PathBuf,
}

impl Shard {
    fn new(engine: EdgeShard, path: &Path) -> Self {
        Shard {
            engine: ManuallyDrop::new(engine),
            path: path.to_path_buf(),
        }
    }
}

impl Deref for Shard {
    type Target = EdgeShard;

    fn deref(&self) -> &EdgeShard {
        &self.engine
    }
}

impl Drop for Shard {
    fn drop(&mut self) {
        // qdrant-edge flushes in its own Drop (logging a failure). When the
        // directory is gone (a removed data dir, a test's temporary dir)
        // there is nowhere to flush to: leak the shard then, rather than
        // let it fail on every file. Writes are flushed as they happen
        // (durable writes), so nothing that was acknowledged is lost
        // either way.
        if !self.path.exists() {
            tracing::warn!(dir = %self.path.display(), "vector index directory vanished; not flushing on close");
            return;
        }
        // SAFETY: `engine` is never used again: this is the owner's drop.
        unsafe { ManuallyDrop::drop(&mut self.engine) }
    }
}

impl Inner {
    fn writes(&self) -> MutexGuard<'_, Writes> {
        self.writes.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn write_lock(&self) -> MutexGuard<'_, ()> {
        // The mutex protects no data, so a panic while holding it leaves
        // nothing inconsistent behind: ignore poisoning.
        match self.writer.try_lock() {
            Ok(guard) => guard,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => {
                // Counted before asking: an idle optimisation that takes the
                // lock after this line sees the count, one that took it
                // before sees the request (it clears the request first).
                self.waiting.fetch_add(1, Ordering::SeqCst);
                self.give_way.store(true, Ordering::SeqCst);
                let guard = self
                    .writer
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                self.waiting.fetch_sub(1, Ordering::SeqCst);
                guard
            }
        }
    }

    /// Runs the engine's optimisers (see [`EdgeVectorIndex::optimize`]);
    /// None when `stop` was set before they were done, which leaves the
    /// segments of the unfinished optimisation as they were.
    fn optimise(
        &self,
        writer: &MutexGuard<'_, ()>,
        stop: &AtomicBool,
    ) -> Result<Option<bool>, VectorIndexError> {
        let shard = self.shard();
        self.dirty.store(true, Ordering::Release);
        self.optimising.store(true, Ordering::Release);
        let outcome = shard.optimize_until(stop);
        self.optimising.store(false, Ordering::Release);
        // A rewrite may have created segments the indexes are missing on; so
        // may a stopped one (the segment it gave writes).
        ensure_payload_indexes(&shard)?;
        let changed = match outcome {
            Ok(changed) => changed,
            Err(OperationError::Cancelled { .. }) => return Ok(None),
            Err(error) => return Err(backend(error)),
        };
        // No write can have come in meanwhile: the caller holds the lock.
        self.writes().unoptimized_since = None;
        if self.durable_writes.load(Ordering::Relaxed) {
            self.flush_locked(writer)?;
        }
        Ok(Some(changed))
    }

    /// The shard served now. A write holds the writer lock, under which the
    /// shard is never replaced, so all its steps see the same shard.
    fn shard(&self) -> Arc<Shard> {
        Arc::clone(&self.shard.read().unwrap_or_else(|p| p.into_inner()))
    }
}

impl std::fmt::Debug for EdgeVectorIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EdgeVectorIndex")
            .field("dir", &self.inner.dir)
            .field("dimension", &self.inner.dimension)
            .finish()
    }
}

impl EdgeVectorIndex {
    /// One shard per embedding space under `dir` (e.g.
    /// `DATA_DIR/vectors/<collection name>`); created or reopened.
    ///
    /// Blocking (disk I/O): call it at startup or inside `spawn_blocking`.
    /// Fails with [`VectorIndexError::DimensionMismatch`] when the shard on
    /// disk holds vectors of another length, and with
    /// [`VectorIndexError::Incompatible`] when it was built with other BM25
    /// options.
    pub fn open(dir: &Path, dimension: usize) -> Result<Self, VectorIndexError> {
        if dimension == 0 {
            return Err(VectorIndexError::InvalidRequest(
                "dimension must be at least 1".into(),
            ));
        }
        fs::create_dir_all(dir)?;
        check_or_write_marker(dir)?;
        let bm25 = bm25::model()?;

        let shard_path = served_shard_path(dir)?;
        remove_former_shards(dir, &shard_path)?;
        let shard = if shard_path.join(EDGE_CONFIG_FILE).exists() {
            load_shard(&shard_path)?
        } else if shard_path == dir {
            EdgeShard::new(dir, shard_config(dimension)).map_err(backend)?
        } else {
            return Err(VectorIndexError::Corrupt(format!(
                "{SHARD_POINTER_FILE} names {}, which holds no shard",
                shard_path.display()
            )));
        };
        let shard = Shard::new(shard, &shard_path);
        check_shard_config(&shard, dimension)?;
        ensure_payload_indexes(&shard)?;
        debug!(dir = %dir.display(), dimension, "vector index opened");
        Ok(Self {
            inner: Arc::new(Inner {
                shard: RwLock::new(Arc::new(shard)),
                bm25,
                dimension,
                dir: dir.to_path_buf(),
                writer: Mutex::new(()),
                give_way: AtomicBool::new(false),
                waiting: AtomicUsize::new(0),
                optimising: AtomicBool::new(false),
                durable_writes: AtomicBool::new(true),
                // Opening re-applies payload indexes: flush once for them.
                dirty: AtomicBool::new(true),
                // What was on disk may never have been optimised.
                writes: Mutex::new({
                    let now = std::time::Instant::now();
                    Writes {
                        last: now,
                        unoptimized_since: Some(now),
                    }
                }),
            }),
        })
    }

    /// Whether every write (upsert, payload update, delete) is flushed to
    /// disk before it returns. On by default: qdrant-edge 0.7.0 does not
    /// replay its WAL, so an unflushed write is lost in a crash, and a
    /// projection that has already committed its consumer offset would never
    /// see that event again.
    ///
    /// The engine's flush syncs every segment written since the last
    /// flush: a durable write of one point costs about 6 ms (p50,
    /// 384-d, release build, at 10k and at 100k optimised points; 7–8 ms
    /// when 0.7.0 rewrote every segment). A consumer that writes many
    /// points per offset commit should switch this off and call
    /// [`VectorIndex::flush`] before each commit; so should a reindex.
    pub fn set_durable_writes(&self, durable: bool) {
        self.inner.durable_writes.store(durable, Ordering::Relaxed);
    }

    /// Runs the engine's optimisers until they have nothing left to do:
    /// merges segments, builds HNSW graphs once a segment passes the
    /// indexing threshold, and vacuums segments with enough deleted points
    /// (20% by default). Slow: about 3 s for 10k and 3 min for 100k 384-d
    /// points on 2 cores. Run it after a reindex; the server runs
    /// [`optimize_if_idle`](Self::optimize_if_idle) instead. Writes wait
    /// while it runs; searches do not. Returns whether anything changed.
    ///
    /// It is not an erasure tool: a vacuum only happens above the threshold
    /// (and a shard an older build wrote keeps its WAL records, see the
    /// type's docs); that is [`VectorIndex::purge_deleted`]'s job.
    pub async fn optimize(&self) -> Result<bool, VectorIndexError> {
        self.blocking(|inner| {
            let writer = inner.write_lock();
            inner
                .optimise(&writer, &AtomicBool::new(false))?
                .ok_or_else(|| backend("the optimisation was cancelled by the engine"))
        })
        .await
    }

    /// Optimises (then flushes) when something was written since the last
    /// optimisation and nothing for `quiet`: the server calls it in the
    /// background, so dense search does not stay a scan of plain segments
    /// until a reindex. Returns whether it ran to its end.
    ///
    /// It gives way to writes: it does not start while one waits, and a
    /// write (or a flush, or a purge) that comes while it runs stops it, so
    /// the write waits milliseconds, not the minutes an optimisation of
    /// 100k points takes. What it had not finished is tried again at the
    /// next quiet spell; the engine puts the segments it was rewriting back
    /// as they were. The optimisation holds the writer lock rather than
    /// letting writes run beside it because the engine keeps a write made
    /// meanwhile to a point of a segment being rewritten in memory only,
    /// until the rewrite ends, and does not replay its WAL after a crash.
    pub async fn optimize_if_idle(
        &self,
        quiet: std::time::Duration,
    ) -> Result<bool, VectorIndexError> {
        let due = {
            let writes = self.inner.writes();
            writes.unoptimized_since.is_some() && writes.last.elapsed() >= quiet
        };
        if !due {
            return Ok(false);
        }
        self.blocking(|inner| {
            // Cleared before the lock is tried: a request made after this
            // stops the optimisation; one made before comes with a count.
            inner.give_way.store(false, Ordering::SeqCst);
            let writer = match inner.writer.try_lock() {
                Ok(guard) => guard,
                Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
                Err(TryLockError::WouldBlock) => return Ok(false),
            };
            if inner.waiting.load(Ordering::SeqCst) > 0 {
                return Ok(false);
            }
            let started = Instant::now();
            let finished = inner.optimise(&writer, &inner.give_way)?;
            // Flushed whatever the durability setting: the idle spell is
            // the time for it.
            inner.flush_locked(&writer)?;
            if finished.is_none() {
                info!(
                    dir = %inner.dir.display(),
                    after_ms = started.elapsed().as_millis() as u64,
                    "idle optimisation gave way to a write"
                );
            }
            Ok(finished.is_some())
        })
        .await
    }

    /// Whether an optimisation is running now.
    pub fn optimising(&self) -> bool {
        self.inner.optimising.load(Ordering::Acquire)
    }

    /// How long the index has held writes no optimisation has taken in
    /// (since it was opened, when it has not been optimised since): dense
    /// search scans what they wrote. None once optimised after the last
    /// write. The server optimises only a quiet index, so under a load
    /// that never pauses this only grows; `/metrics` reports it.
    pub fn unoptimized_for(&self) -> Option<std::time::Duration> {
        self.inner
            .writes()
            .unoptimized_since
            .map(|since| since.elapsed())
    }

    /// Engine-level numbers for metrics and tests: segments, points
    /// (approximate) and HNSW-indexed vectors.
    pub async fn stats(&self) -> Result<EdgeStats, VectorIndexError> {
        self.blocking(|inner| {
            let info = inner.shard().info();
            Ok(EdgeStats {
                segments: info.segments_count,
                points: info.points_count,
                indexed_vectors: info.indexed_vectors_count,
                payload_indexes: info.payload_schema.keys().map(|k| k.to_string()).collect(),
            })
        })
        .await
    }

    async fn blocking<T, F>(&self, work: F) -> Result<T, VectorIndexError>
    where
        T: Send + 'static,
        F: FnOnce(&Inner) -> Result<T, VectorIndexError> + Send + 'static,
    {
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || work(&inner))
            .await
            .map_err(|e| backend(format!("vector engine task failed: {e}")))?
    }
}

/// See [`EdgeVectorIndex::stats`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EdgeStats {
    pub segments: usize,
    pub points: usize,
    pub indexed_vectors: usize,
    pub payload_indexes: Vec<String>,
}

fn backend(error: impl std::fmt::Display) -> VectorIndexError {
    VectorIndexError::Backend(error.to_string())
}

/// The size of a WAL segment file this build creates. The engine writes
/// no records (see [`EdgeVectorIndex`]) but still preallocates the open
/// segment and the next one when it opens a shard, so this is what an
/// empty WAL takes on disk, twice. The engine's default is 32 MiB, sized
/// for a server's shard.
pub const WAL_SEGMENT_BYTES: usize = 8 * 1024 * 1024;

fn wal_options() -> WalOptions {
    WalOptions {
        segment_capacity: WAL_SEGMENT_BYTES,
        ..WalOptions::default()
    }
}

pub(crate) fn shard_config(dimension: usize) -> EdgeConfig {
    EdgeConfig::builder()
        .wal_options(wal_options())
        .vector(
            DENSE,
            EdgeVectorParams::builder(dimension, Distance::Cosine).build(),
        )
        .sparse_vector(
            SPARSE,
            // IDF is computed by the engine at query time from the shard's
            // current statistics, as on a Qdrant server.
            EdgeSparseVectorParams::builder()
                .modifier(Modifier::Idf)
                .build(),
        )
        .build()
}

/// Loads the shard at `path` with its stored settings, except the WAL's:
/// this build's segment size applies to the segment files the engine
/// creates from then on (a shard an older build created has 32 MiB ones,
/// the engine's default). The files that exist keep their size; the
/// stored settings are rewritten, and a purge's copy inherits them.
fn load_shard(path: &Path) -> Result<EdgeShard, VectorIndexError> {
    let mut config = EdgeConfig::load(path)
        .ok_or_else(|| VectorIndexError::Corrupt(format!("{} holds no shard", path.display())))?
        .map_err(backend)?;
    config.wal_options = Some(wal_options());
    EdgeShard::load(path, Some(config)).map_err(backend)
}

fn check_shard_config(shard: &EdgeShard, dimension: usize) -> Result<(), VectorIndexError> {
    let config = shard.config();
    let dense = config
        .vectors
        .get(DENSE)
        .ok_or_else(|| VectorIndexError::Incompatible("no dense vector".into()))?;
    if dense.size != dimension {
        return Err(VectorIndexError::DimensionMismatch {
            expected: dense.size,
            actual: dimension,
        });
    }
    if dense.distance != Distance::Cosine {
        return Err(VectorIndexError::Incompatible(
            "dense distance is not cosine".into(),
        ));
    }
    let sparse = config
        .sparse_vectors
        .get(SPARSE)
        .ok_or_else(|| VectorIndexError::Incompatible("no sparse vector".into()))?;
    if sparse.modifier != Some(Modifier::Idf) {
        return Err(VectorIndexError::Incompatible(
            "sparse vector has no idf modifier".into(),
        ));
    }
    Ok(())
}

fn check_or_write_marker(dir: &Path) -> Result<(), VectorIndexError> {
    let expected = json!({"format": MARKER_FORMAT, "bm25": bm25::options()});
    let path = dir.join(MARKER_FILE);
    match fs::read(&path) {
        Ok(bytes) => {
            let found: Value = serde_json::from_slice(&bytes)
                .map_err(|e| VectorIndexError::Incompatible(format!("{MARKER_FILE}: {e}")))?;
            if found != expected {
                return Err(VectorIndexError::Incompatible(format!(
                    "built with {found}, this version uses {expected}"
                )));
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if dir.join(EDGE_CONFIG_FILE).exists() {
                // A shard without our marker was not made by this adapter.
                return Err(VectorIndexError::Incompatible(format!(
                    "{} holds a shard without {MARKER_FILE}",
                    dir.display()
                )));
            }
            let temporary = dir.join(format!("{MARKER_FILE}.tmp"));
            fs::write(
                &temporary,
                serde_json::to_vec_pretty(&expected).unwrap_or_default(),
            )?;
            fs::rename(&temporary, &path)?;
            Ok(())
        }
        Err(e) => Err(e.into()),
    }
}

fn ensure_payload_indexes(shard: &EdgeShard) -> Result<(), VectorIndexError> {
    for (field, schema) in payload::indexes() {
        let field_schema: PayloadFieldSchema = serde_json::from_value(schema)
            .map_err(|e| backend(format!("payload index schema of {field}: {e}")))?;
        let field_name: JsonPath = field
            .parse()
            .map_err(|_| backend(format!("payload key {field}")))?;
        // Idempotent: an existing index of the same schema is left alone.
        shard
            .update(UpdateOperation::FieldIndexOperation(
                FieldIndexOperations::CreateIndex(CreateIndex {
                    field_name,
                    field_schema: Some(field_schema),
                }),
            ))
            .map_err(backend)?;
    }
    Ok(())
}

pub(crate) fn engine_filter(filter: Value) -> Result<Filter, VectorIndexError> {
    serde_json::from_value(filter).map_err(|e| backend(format!("filter: {e}")))
}

pub(crate) fn point_id(id: &MemoryId) -> PointId {
    PointId::Uuid(id.as_uuid())
}

pub(crate) fn memory_id(id: &PointId) -> Result<MemoryId, VectorIndexError> {
    match id {
        PointId::Uuid(uuid) => Ok(MemoryId::from_uuid(*uuid)),
        PointId::NumId(n) => Err(VectorIndexError::Corrupt(format!(
            "numeric point id {n} in a memory index"
        ))),
    }
}

/// The engine's flush, its I/O error reported (`EdgeShard::flush` panics
/// on one; `try_flush` is the vendored engine's).
fn flush_shard(shard: &EdgeShard) -> Result<(), VectorIndexError> {
    shard
        .try_flush()
        .map_err(|e| backend(format!("flush failed: {e}")))
}

/// The directory of the shard `dir` serves: the one `SHARD` names, else
/// `dir` itself.
fn served_shard_path(dir: &Path) -> Result<PathBuf, VectorIndexError> {
    match fs::read_to_string(dir.join(SHARD_POINTER_FILE)) {
        Ok(raw) => {
            let name = raw.trim();
            if shard_generation(name).is_none() {
                return Err(VectorIndexError::Corrupt(format!(
                    "{SHARD_POINTER_FILE} names {name:?}, not a shard directory"
                )));
            }
            Ok(dir.join(name))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(dir.to_path_buf()),
        Err(e) => Err(e.into()),
    }
}

/// `shard.7` → 7.
fn shard_generation(name: &str) -> Option<u64> {
    name.strip_prefix(SHARD_DIR_PREFIX)?.parse().ok()
}

/// The directory name a purge builds into: one generation past the served
/// shard's.
fn next_shard_name(dir: &Path, served: &Path) -> String {
    let generation = if served == dir {
        0
    } else {
        served
            .file_name()
            .and_then(|name| name.to_str())
            .and_then(shard_generation)
            .unwrap_or(0)
    };
    format!("{SHARD_DIR_PREFIX}{}", generation + 1)
}

/// Points `SHARD` at `name`, atomically (write, fsync, rename, fsync the
/// directory): the commit point of a purge.
fn write_shard_pointer(dir: &Path, name: &str) -> Result<(), VectorIndexError> {
    let temporary = dir.join(format!("{SHARD_POINTER_FILE}.tmp"));
    let mut file = fs::File::create(&temporary)?;
    writeln!(file, "{name}")?;
    file.sync_all()?;
    fs::rename(&temporary, dir.join(SHARD_POINTER_FILE))?;
    fs::File::open(dir)?.sync_all()?;
    Ok(())
}

/// Deletes every shard in `dir` but the served one at `served`: a former
/// shard in `dir` itself (its engine files), former or unfinished `shard.<n>`
/// directories, a pointer that was never renamed. What a purge leaves
/// behind it, or a crash in the middle of one.
fn remove_former_shards(dir: &Path, served: &Path) -> Result<(), VectorIndexError> {
    let mut removed = false;
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let former = if shard_generation(&name).is_some() {
            path != served
        } else {
            name == format!("{SHARD_POINTER_FILE}.tmp")
                || (served != dir && ENGINE_ENTRIES.contains(&name.as_ref()))
        };
        if !former {
            continue;
        }
        if entry.file_type()?.is_dir() {
            fs::remove_dir_all(&path)?;
        } else {
            fs::remove_file(&path)?;
        }
        removed = true;
    }
    if removed {
        fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// A fresh shard at `path` with the live points of `former`, its payload
/// indexes and, when `former` was optimised, its HNSW graphs; flushed. The
/// sparse vectors are copied as stored, not recomputed. Fails rather than
/// return a shard that holds fewer points than `former`.
fn copy_live_points(former: &EdgeShard, path: &Path) -> Result<(Shard, u64), VectorIndexError> {
    fs::create_dir_all(path)?;
    let config = former.config().clone();
    let shard = Shard::new(EdgeShard::new(path, config).map_err(backend)?, path);
    // Before the points: indexes apply to the segments that exist.
    ensure_payload_indexes(&shard)?;
    let mut offset = None;
    let mut copied = 0u64;
    loop {
        let (records, next) = former
            .scroll(ScrollRequest {
                offset,
                limit: Some(PURGE_BATCH),
                filter: None,
                with_payload: Some(WithPayloadInterface::Bool(true)),
                with_vector: WithVector::Bool(true),
                order_by: None,
            })
            .map_err(backend)?;
        if !records.is_empty() {
            copied += records.len() as u64;
            let points = records
                .into_iter()
                .map(live_copy)
                .collect::<Result<Vec<_>, _>>()?;
            shard
                .update(UpdateOperation::PointOperation(
                    PointOperations::UpsertPoints(PointInsertOperations::PointsList(points)),
                ))
                .map_err(backend)?;
        }
        match next {
            Some(next) => offset = Some(next),
            None => break,
        }
    }
    // Not optimised here: that would hold writes for as long as the HNSW
    // build takes (minutes at 100k points). The purge marks the index
    // unoptimised and the idle optimisation, which gives way to writes,
    // builds the graphs.
    flush_shard(&shard)?;
    let expected = count_all(former)?;
    let found = count_all(&shard)?;
    if copied != expected || found != expected {
        return Err(backend(format!(
            "purge copied {copied} points and kept {found}, but {expected} are live"
        )));
    }
    Ok((shard, copied))
}

/// A stored point as a write of the same point.
fn live_copy(record: Record) -> Result<qdrant_edge::PointStructPersisted, VectorIndexError> {
    let vectors = record
        .vector
        .ok_or_else(|| VectorIndexError::Corrupt("point without vectors".into()))?;
    let payload = record
        .payload
        .ok_or_else(|| VectorIndexError::Corrupt("point without payload".into()))?;
    Ok(PointStruct::new(record.id, Vectors(vectors), Value::Object(payload.0)).into())
}

fn count_all(shard: &EdgeShard) -> Result<u64, VectorIndexError> {
    let count = shard
        .count(CountRequest {
            filter: None,
            exact: true,
        })
        .map_err(backend)?;
    Ok(count as u64)
}

/// Waits until the reads still holding `shard` are done, and takes it.
fn sole_owner(mut shard: Arc<Shard>) -> Shard {
    loop {
        match Arc::try_unwrap(shard) {
            Ok(owned) => return owned,
            Err(shared) => {
                shard = shared;
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
}

fn count_matching(shard: &EdgeShard, filter: Value) -> Result<u64, VectorIndexError> {
    let count = shard
        .count(CountRequest {
            filter: Some(engine_filter(filter)?),
            exact: true,
        })
        .map_err(backend)?;
    Ok(count as u64)
}

pub(crate) fn with_vector(with_dense: bool) -> WithVector {
    if with_dense {
        WithVector::Selector(vec![DENSE.to_string()])
    } else {
        WithVector::Bool(false)
    }
}

/// One leg: nearest neighbours of `query` in `using`, under `filter`.
pub(crate) fn leg_query(
    query: VectorInternal,
    using: &str,
    filter: Filter,
    limit: usize,
    with_payload: bool,
    with_dense: bool,
) -> QueryRequest {
    QueryRequest {
        prefetches: vec![],
        query: Some(ScoringQuery::Vector(QueryEnum::Nearest(NamedQuery {
            query,
            using: Some(using.to_string()),
        }))),
        filter: Some(filter),
        score_threshold: None,
        limit,
        offset: 0,
        params: None,
        with_vector: with_vector(with_dense),
        with_payload: WithPayloadInterface::Bool(with_payload),
    }
}

pub(crate) fn dense_of(vectors: Option<VectorStructInternal>) -> Option<Vec<f32>> {
    match vectors? {
        VectorStructInternal::Named(mut named) => match named.remove(DENSE)? {
            VectorInternal::Dense(dense) => Some(dense),
            _ => None,
        },
        VectorStructInternal::Single(dense) => Some(dense),
        VectorStructInternal::MultiDense(_) => None,
    }
}

fn decode_payload(payload: Option<Payload>) -> Result<PointPayload, VectorIndexError> {
    let payload =
        payload.ok_or_else(|| VectorIndexError::Corrupt("point without payload".into()))?;
    payload::from_json(&payload.0)
}

fn single_leg_hits(
    tenant: &TenantId,
    points: Vec<ScoredPoint>,
    mode: SearchMode,
) -> Result<Vec<Hit>, VectorIndexError> {
    let mut hits = Vec::with_capacity(points.len());
    for (rank, point) in points.into_iter().enumerate() {
        let id = memory_id(&point.id)?;
        let payload = decode_payload(point.payload)?;
        if !same_tenant(tenant, &payload, &id) {
            continue;
        }
        let dense_leg = mode == SearchMode::Semantic;
        hits.push(Hit {
            id,
            score: point.score,
            dense_rank: dense_leg.then_some(rank),
            sparse_rank: (!dense_leg).then_some(rank),
            dense_score: dense_leg.then_some(point.score),
            sparse_score: (!dense_leg).then_some(point.score),
            payload,
            dense: dense_of(point.vector),
        });
    }
    Ok(hits)
}

fn leg_ids(points: Vec<ScoredPoint>) -> Result<Vec<(MemoryId, f32)>, VectorIndexError> {
    points
        .into_iter()
        .map(|p| Ok((memory_id(&p.id)?, p.score)))
        .collect()
}

impl Inner {
    fn sparse_document(&self, text: &str) -> SparseVector {
        self.bm25.embed_document(text)
    }

    fn upsert(&self, tenant: &TenantId, points: Vec<Point>) -> Result<(), VectorIndexError> {
        let mut ids = Vec::with_capacity(points.len());
        for point in &points {
            check_point(tenant, self.dimension, point)?;
            ids.push(point_id(&point.id));
        }
        // Embedding (jieba, stemming) is the slow part: do it before taking
        // the writer lock.
        let records: Vec<_> = points
            .into_iter()
            .map(|point| {
                let sparse = self.sparse_document(&point.text);
                PointStruct::new(
                    point_id(&point.id),
                    Vectors::new_named([
                        (DENSE, Vector::new_dense(point.dense)),
                        (SPARSE, Vector::from(sparse)),
                    ]),
                    Value::Object(payload::to_json(&point.payload)),
                )
                .into()
            })
            .collect();

        let writer = self.write_lock();
        // An id another tenant owns must not be overwritten: upsert replaces
        // whole points, so this is the one place a tenant could touch another
        // tenant's data by id.
        let existing = self
            .shard()
            .retrieve(
                &ids,
                Some(WithPayloadInterface::Fields(vec![fields::TENANT
                    .parse()
                    .map_err(|_| {
                    backend("payload key tenant")
                })?])),
                Some(WithVector::Bool(false)),
            )
            .map_err(backend)?;
        for record in existing {
            let owner = record
                .payload
                .as_ref()
                .and_then(|p| p.0.get(fields::TENANT))
                .and_then(Value::as_str);
            if owner != Some(tenant.as_str()) {
                return Err(VectorIndexError::IdTaken(memory_id(&record.id)?));
            }
        }
        self.apply(
            &writer,
            UpdateOperation::PointOperation(PointOperations::UpsertPoints(
                PointInsertOperations::PointsList(records),
            )),
        )
    }

    fn update_payload(
        &self,
        tenant: &TenantId,
        id: &MemoryId,
        payload: PointPayload,
    ) -> Result<(), VectorIndexError> {
        check_payload_tenant(tenant, id, &payload)?;
        let only_this = payload::tenant_filter(tenant, Some(std::slice::from_ref(id)));
        let writer = self.write_lock();
        if count_matching(&self.shard(), only_this.clone())? == 0 {
            return Err(VectorIndexError::PointNotFound(*id));
        }
        // By filter, not by id: the tenant condition travels with the write.
        self.apply(
            &writer,
            UpdateOperation::PayloadOperation(PayloadOps::OverwritePayload(SetPayloadOp {
                payload: Payload(payload::to_json(&payload)),
                points: None,
                filter: Some(engine_filter(only_this)?),
                key: None,
            })),
        )
    }

    fn delete(&self, tenant: &TenantId, ids: &[MemoryId]) -> Result<(), VectorIndexError> {
        if ids.is_empty() {
            return Ok(());
        }
        let filter = engine_filter(payload::tenant_filter(tenant, Some(ids)))?;
        let writer = self.write_lock();
        self.apply(
            &writer,
            UpdateOperation::PointOperation(PointOperations::DeletePointsByFilter(filter)),
        )
    }

    fn delete_subject(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<u64, VectorIndexError> {
        let filter = payload::subject_filter(tenant, subject);
        let writer = self.write_lock();
        // Counted under the writer lock, so the number is what is deleted.
        let deleted = count_matching(&self.shard(), filter.clone())?;
        if deleted > 0 {
            self.apply(
                &writer,
                UpdateOperation::PointOperation(PointOperations::DeletePointsByFilter(
                    engine_filter(filter)?,
                )),
            )?;
        }
        Ok(deleted)
    }

    fn count(
        &self,
        tenant: &TenantId,
        subject: Option<&SubjectId>,
    ) -> Result<u64, VectorIndexError> {
        let filter = match subject {
            Some(subject) => payload::subject_filter(tenant, subject),
            None => payload::tenant_filter(tenant, None),
        };
        count_matching(&self.shard(), filter)
    }

    /// Applies one write; with durable writes on, it is on disk when this
    /// returns. Taking the writer guard proves the caller holds the lock.
    fn apply(
        &self,
        writer: &MutexGuard<'_, ()>,
        operation: UpdateOperation,
    ) -> Result<(), VectorIndexError> {
        self.dirty.store(true, Ordering::Release);
        {
            let now = std::time::Instant::now();
            let mut writes = self.writes();
            writes.last = now;
            writes.unoptimized_since.get_or_insert(now);
        }
        self.shard().update(operation).map_err(backend)?;
        if self.durable_writes.load(Ordering::Relaxed) {
            self.flush_locked(writer)?;
        }
        Ok(())
    }

    fn flush(&self) -> Result<(), VectorIndexError> {
        let writer = self.write_lock();
        self.flush_locked(&writer)
    }

    fn flush_locked(&self, _writer: &MutexGuard<'_, ()>) -> Result<(), VectorIndexError> {
        if !self.dirty.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        flush_shard(&self.shard()).inspect_err(|_| self.dirty.store(true, Ordering::Release))
    }

    /// Copies the live points into a fresh shard beside the served one,
    /// makes it the served one, and deletes the former shard with its WAL
    /// and segments (see the module docs for the layout and its commit
    /// point). Writes wait meanwhile; reads go on, on the former shard until
    /// the swap and on the new one after. The copy's points are in plain
    /// segments until the idle optimisation builds their graphs.
    fn purge_deleted(&self) -> Result<Purge, VectorIndexError> {
        let started = Instant::now();
        let _writer = self.write_lock();
        let served = self.shard();
        let name = next_shard_name(&self.dir, &served.path);
        let path = self.dir.join(&name);
        if path.exists() {
            // An earlier purge that crashed before its commit.
            fs::remove_dir_all(&path)?;
        }
        let built = copy_live_points(&served, &path)
            .and_then(|copied| write_shard_pointer(&self.dir, &name).map(|()| copied));
        // Only the swap below may hold the former shard from here on.
        drop(served);
        let (fresh, live_points) = match built {
            Ok(copied) => copied,
            Err(error) => {
                // Not served, nor named by SHARD: the former shard stays.
                let _ = fs::remove_dir_all(&path);
                return Err(error);
            }
        };
        // Committed: SHARD names the new shard. Swap it in; the former one
        // goes once the reads that hold it are done.
        let former = std::mem::replace(
            &mut *self.shard.write().unwrap_or_else(|p| p.into_inner()),
            Arc::new(fresh),
        );
        // Everything the former shard held is flushed in the new one.
        self.dirty.store(false, Ordering::Release);
        // Its points are in plain segments.
        self.writes()
            .unoptimized_since
            .get_or_insert_with(Instant::now);
        let former = sole_owner(former);
        let former_path = former.path.clone();
        drop(former);
        remove_former_shards(&self.dir, &path)?;
        info!(
            dir = %self.dir.display(),
            former = %former_path.display(),
            live_points,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "vector index purged of deleted points"
        );
        Ok(Purge::Purged { live_points })
    }

    fn search(
        &self,
        tenant: &TenantId,
        request: &SearchRequest,
    ) -> Result<Vec<Hit>, VectorIndexError> {
        if request.limit == 0 {
            return Ok(Vec::new());
        }
        if let Some(dense) = &request.dense {
            check_dense(self.dimension, dense)?;
        }
        let filter = |ids: Option<&[MemoryId]>| {
            engine_filter(payload::search_filter(tenant, &request.filter, ids))
        };
        let sparse_query = request
            .text
            .as_deref()
            .map(|text| self.bm25.embed_query(text));
        // One shard for every query of this search, even if a purge swaps
        // another in meanwhile.
        let shard = self.shard();

        match request.mode {
            SearchMode::Semantic => {
                let dense = request.dense.clone().ok_or_else(|| {
                    VectorIndexError::InvalidRequest("semantic search needs a dense vector".into())
                })?;
                let points = shard
                    .query(leg_query(
                        VectorInternal::Dense(dense),
                        DENSE,
                        filter(None)?,
                        request.limit,
                        true,
                        request.with_vectors,
                    ))
                    .map_err(backend)?;
                single_leg_hits(tenant, points, SearchMode::Semantic)
            }
            SearchMode::Keyword => {
                let sparse = sparse_query.ok_or_else(|| {
                    VectorIndexError::InvalidRequest("keyword search needs a text".into())
                })?;
                if sparse.indices.is_empty() {
                    // Only stopwords or punctuation: nothing can match.
                    return Ok(Vec::new());
                }
                let points = shard
                    .query(leg_query(
                        VectorInternal::Sparse(sparse),
                        SPARSE,
                        filter(None)?,
                        request.limit,
                        true,
                        request.with_vectors,
                    ))
                    .map_err(backend)?;
                single_leg_hits(tenant, points, SearchMode::Keyword)
            }
            SearchMode::Hybrid => {
                if request.dense.is_none() && sparse_query.is_none() {
                    return Err(VectorIndexError::InvalidRequest(
                        "hybrid search needs a dense vector, a text or both".into(),
                    ));
                }
                if request.rrf_k == 0 {
                    return Err(VectorIndexError::InvalidRequest(
                        "rrf_k must be at least 1".into(),
                    ));
                }
                let candidates = request.prefetch.max(request.limit);
                // Each prefetch carries the full filter, tenant included.
                let dense_leg = match &request.dense {
                    Some(dense) => leg_ids(
                        shard
                            .query(leg_query(
                                VectorInternal::Dense(dense.clone()),
                                DENSE,
                                filter(None)?,
                                candidates,
                                false,
                                false,
                            ))
                            .map_err(backend)?,
                    )?,
                    None => Vec::new(),
                };
                let sparse_leg = match sparse_query {
                    Some(sparse) if !sparse.indices.is_empty() => leg_ids(
                        shard
                            .query(leg_query(
                                VectorInternal::Sparse(sparse),
                                SPARSE,
                                filter(None)?,
                                candidates,
                                false,
                                false,
                            ))
                            .map_err(backend)?,
                    )?,
                    _ => Vec::new(),
                };
                let fused = fusion::rrf(&dense_leg, &sparse_leg, request.rrf_k, request.limit);
                fetch_fused(&shard, tenant, fused, filter, request.with_vectors)
            }
        }
    }
}

/// The final query of a hybrid search: payloads (and vectors) of the fused
/// ids, under the full filter again.
fn fetch_fused(
    shard: &EdgeShard,
    tenant: &TenantId,
    fused: Vec<Fused>,
    filter: impl Fn(Option<&[MemoryId]>) -> Result<Filter, VectorIndexError>,
    with_dense: bool,
) -> Result<Vec<Hit>, VectorIndexError> {
    if fused.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<MemoryId> = fused.iter().map(|f| f.id).collect();
    let (records, _) = shard
        .scroll(ScrollRequest {
            offset: None,
            limit: Some(ids.len()),
            filter: Some(filter(Some(&ids))?),
            with_payload: Some(WithPayloadInterface::Bool(true)),
            with_vector: with_vector(with_dense),
            order_by: None,
        })
        .map_err(backend)?;
    let mut found = std::collections::HashMap::with_capacity(records.len());
    for record in records {
        found.insert(memory_id(&record.id)?, record);
    }
    let mut hits = Vec::with_capacity(fused.len());
    for candidate in fused {
        // Missing: deleted or changed between the legs and this fetch.
        let Some(record) = found.remove(&candidate.id) else {
            continue;
        };
        let payload = decode_payload(record.payload)?;
        if !same_tenant(tenant, &payload, &candidate.id) {
            continue;
        }
        hits.push(Hit {
            id: candidate.id,
            score: candidate.score,
            dense_rank: candidate.dense_rank,
            sparse_rank: candidate.sparse_rank,
            dense_score: candidate.dense_score,
            sparse_score: candidate.sparse_score,
            payload,
            dense: dense_of(record.vector),
        });
    }
    Ok(hits)
}

#[async_trait]
impl VectorIndex for EdgeVectorIndex {
    fn dimension(&self) -> usize {
        self.inner.dimension
    }

    async fn upsert(&self, tenant: &TenantId, points: Vec<Point>) -> Result<(), VectorIndexError> {
        if points.is_empty() {
            return Ok(());
        }
        let tenant = tenant.clone();
        let count = points.len();
        self.blocking(move |inner| inner.upsert(&tenant, points))
            .await
            .inspect(|_| debug!(points = count, "vector points upserted"))
    }

    async fn update_payload(
        &self,
        tenant: &TenantId,
        id: &MemoryId,
        payload: PointPayload,
    ) -> Result<(), VectorIndexError> {
        let (tenant, id) = (tenant.clone(), *id);
        self.blocking(move |inner| inner.update_payload(&tenant, &id, payload))
            .await
    }

    async fn delete(&self, tenant: &TenantId, ids: &[MemoryId]) -> Result<(), VectorIndexError> {
        let (tenant, ids) = (tenant.clone(), ids.to_vec());
        self.blocking(move |inner| inner.delete(&tenant, &ids))
            .await
    }

    async fn delete_subject(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<u64, VectorIndexError> {
        let (tenant, subject) = (tenant.clone(), subject.clone());
        self.blocking(move |inner| inner.delete_subject(&tenant, &subject))
            .await
    }

    async fn search(
        &self,
        tenant: &TenantId,
        request: &SearchRequest,
    ) -> Result<Vec<Hit>, VectorIndexError> {
        let (tenant, request) = (tenant.clone(), request.clone());
        self.blocking(move |inner| inner.search(&tenant, &request))
            .await
    }

    /// One trip to the engine's thread for every query, and no hit's
    /// payload read or parsed: in the consolidator's neighbour lookups the
    /// payloads were a third of the search's time. The filter holds the
    /// tenant, as a search's does.
    async fn nearest(
        &self,
        tenant: &TenantId,
        filter: &SearchFilter,
        queries: &[Vec<f32>],
        limit: usize,
    ) -> Result<Vec<Vec<(MemoryId, f32)>>, VectorIndexError> {
        for query in queries {
            check_dense(self.inner.dimension, query)?;
        }
        if queries.is_empty() || limit == 0 {
            return Ok(vec![Vec::new(); queries.len()]);
        }
        let filter = engine_filter(payload::search_filter(tenant, filter, None))?;
        let queries = queries.to_vec();
        self.blocking(move |inner| {
            let shard = inner.shard();
            queries
                .into_iter()
                .map(|query| {
                    let points = shard
                        .query(leg_query(
                            VectorInternal::Dense(query),
                            DENSE,
                            filter.clone(),
                            limit,
                            false,
                            false,
                        ))
                        .map_err(backend)?;
                    leg_ids(points)
                })
                .collect()
        })
        .await
    }

    async fn count(
        &self,
        tenant: &TenantId,
        subject: Option<&SubjectId>,
    ) -> Result<u64, VectorIndexError> {
        let (tenant, subject) = (tenant.clone(), subject.cloned());
        self.blocking(move |inner| inner.count(&tenant, subject.as_ref()))
            .await
    }

    async fn flush(&self) -> Result<(), VectorIndexError> {
        self.blocking(|inner| inner.flush()).await
    }

    /// Rebuilds the shard from its live points (see the type's docs): no
    /// file is left that holds a deleted point, in the segments, the WAL or
    /// the payload indexes. Costs a copy of every live point and, when the
    /// shard was optimised, a new HNSW build (see `edge_bench`); writes wait
    /// for it, searches do not.
    async fn purge_deleted(&self) -> Result<Purge, VectorIndexError> {
        self.blocking(|inner| inner.purge_deleted()).await
    }
}

#[cfg(test)]
mod tests {
    use qdrant_edge::{Fusion, Prefetch};

    use super::*;
    use crate::testsuite::{point, subject, tenant, vector};
    use crate::{PointType, SearchFilter};

    #[test]
    fn chinese_text_is_segmented_into_words() {
        let dir = tempfile::tempdir().unwrap();
        let index = EdgeVectorIndex::open(dir.path(), 8).unwrap();
        let document = index.inner.bm25.embed_document("我喜欢喝绿茶");
        assert!(document.indices.len() >= 3, "{document:?}");
        let query = index.inner.bm25.embed_query("绿茶");
        assert_eq!(query.indices.len(), 1);
        assert!(document.indices.contains(&query.indices[0]));
    }

    /// A point written before episodes carries no `type`: a memories-only
    /// search still finds it, beside the memories, and never an episode,
    /// in every mode; asking for episodes does not return it.
    #[tokio::test]
    async fn a_point_without_a_type_is_a_memory_to_search() {
        let dir = tempfile::tempdir().unwrap();
        let index = EdgeVectorIndex::open(dir.path(), 8).unwrap();
        let (t, s) = (tenant("t1"), subject("s1"));
        let dense = vector(8, &[(0, 1.0)]);
        let legacy = point(&t, &s, "green tea", dense.clone());
        let memory = point(&t, &s, "green tea", dense.clone());
        let mut episode = point(&t, &s, "green tea", dense.clone());
        episode.payload.point_type = PointType::Episode;
        index
            .upsert(&t, vec![legacy.clone(), memory.clone(), episode.clone()])
            .await
            .unwrap();
        let key: JsonPath = payload::fields::TYPE.parse().unwrap();
        index
            .inner
            .shard()
            .update(UpdateOperation::PayloadOperation(
                PayloadOps::DeletePayload(qdrant_edge::DeletePayloadOp {
                    keys: vec![key],
                    points: Some(vec![point_id(&legacy.id)]),
                    filter: None,
                }),
            ))
            .unwrap();

        for request in [
            crate::testsuite::semantic(dense.clone()),
            crate::testsuite::keyword("green tea"),
            crate::testsuite::hybrid(dense.clone(), "green tea"),
        ] {
            let request = SearchRequest {
                filter: SearchFilter {
                    subject: Some(s.clone()),
                    ..SearchFilter::default()
                },
                ..request
            };
            let mut memories = vec![legacy.id, memory.id];
            memories.sort();
            assert_eq!(
                hit_ids(&index, &request).await,
                memories,
                "{:?}",
                request.mode
            );
        }
        let episodes = SearchRequest {
            filter: SearchFilter {
                types: vec![PointType::Episode],
                ..SearchFilter::default()
            },
            ..crate::testsuite::semantic(dense)
        };
        assert_eq!(hit_ids(&index, &episodes).await, [episode.id]);
    }

    /// The ids a search of tenant t1 finds, sorted.
    async fn hit_ids(index: &EdgeVectorIndex, request: &SearchRequest) -> Vec<MemoryId> {
        let hits = index.search(&tenant("t1"), request).await.unwrap();
        let mut ids: Vec<MemoryId> = hits.iter().map(|hit| hit.id).collect();
        ids.sort();
        ids
    }

    /// The in-crate fusion must give the engine's own RRF scores.
    #[tokio::test]
    async fn fusion_gives_the_engines_rrf_scores() {
        let dir = tempfile::tempdir().unwrap();
        let index = EdgeVectorIndex::open(dir.path(), 8).unwrap();
        let (t, s) = (tenant("t1"), subject("s1"));
        let words = ["tea", "coffee", "juice", "water", "milk"];
        let points: Vec<_> = (0..40usize)
            .map(|n| {
                let text = format!(
                    "{} {} {}",
                    words[n % 5],
                    words[(n / 5) % 5],
                    words[(n * 3) % 5]
                );
                let dense = vector(
                    8,
                    &[(n % 8, 1.0), ((n * 7) % 8, 0.3 + (n % 3) as f32 * 0.2)],
                );
                point(&t, &s, &text, dense)
            })
            .collect();
        index.upsert(&t, points).await.unwrap();

        let query = vector(8, &[(1, 1.0), (4, 0.5)]);
        let request = SearchRequest {
            limit: 15,
            prefetch: 20,
            rrf_k: 5,
            ..crate::testsuite::hybrid(query.clone(), "coffee milk")
        };
        let ours = index.search(&t, &request).await.unwrap();

        let filter =
            || engine_filter(payload::search_filter(&t, &SearchFilter::default(), None)).unwrap();
        let prefetch = |query: VectorInternal, using: &str| Prefetch {
            prefetches: vec![],
            query: Some(ScoringQuery::Vector(QueryEnum::Nearest(NamedQuery {
                query,
                using: Some(using.to_string()),
            }))),
            limit: 20,
            params: None,
            filter: Some(filter()),
            score_threshold: None,
        };
        let sparse = index.inner.bm25.embed_query("coffee milk");
        let engine = index
            .inner
            .shard()
            .query(QueryRequest {
                prefetches: vec![
                    prefetch(VectorInternal::Dense(query), DENSE),
                    prefetch(VectorInternal::Sparse(sparse), SPARSE),
                ],
                query: Some(ScoringQuery::Fusion(Fusion::Rrf {
                    k: 5,
                    weights: None,
                })),
                filter: Some(filter()),
                score_threshold: None,
                limit: 40,
                offset: 0,
                params: None,
                with_vector: WithVector::Bool(false),
                with_payload: WithPayloadInterface::Bool(false),
            })
            .unwrap();
        let engine_scores: std::collections::HashMap<MemoryId, f32> = engine
            .iter()
            .map(|p| (memory_id(&p.id).unwrap(), p.score))
            .collect();
        assert_eq!(ours.len(), 15);
        for hit in &ours {
            assert_eq!(Some(&hit.score), engine_scores.get(&hit.id), "{:?}", hit.id);
        }
        // Same top scores: ties may order differently, the cut may not.
        let mut engine_top: Vec<f32> = engine.iter().map(|p| p.score).take(15).collect();
        engine_top.sort_by(|a, b| b.total_cmp(a));
        let our_top: Vec<f32> = ours.iter().map(|h| h.score).collect();
        assert_eq!(our_top, engine_top);
    }
}
