//! The scale-out adapter: one collection per embedding space on a Qdrant
//! server, over gRPC (qdrant-client).
//!
//! It stores exactly what the embedded adapter stores: the same named
//! vectors (`dense` cosine, `sparse` with the IDF modifier), the same payload
//! and payload indexes ([`crate::payload`]), and the same filters, so a
//! search returns the same memories in the same order in both deployments
//! (up to HNSW's approximation, which neither engine makes exact).
//!
//! **BM25 is computed here, not by the server.** qdrant-edge's BM25 is a
//! port of the server's `qdrant/bm25` inference and has no lighter crate of
//! its own, so this adapter links qdrant-edge for it (the `mnemo` binary links
//! the engine anyway for the embedded mode). The alternative, sending the
//! text as a `Document` with model `qdrant/bm25` and [`bm25::options`] and
//! letting the server embed it, would put the tokeniser's version (jieba
//! dictionary, stemmer, stopword lists, the `multilingual` tokenizer, which
//! not every server build has) in the server's hands: an upgrade of the
//! server could change the vectors of new points while old points keep
//! theirs, and the two deployments could drift without any test noticing.
//! Client-side, one pinned crate makes every sparse vector, wherever it is
//! stored; the server only applies IDF at query time from its own statistics,
//! as the embedded engine does.
//!
//! **Hybrid fusion is computed here too.** The server can fuse prefetches
//! with RRF and a chosen k, but it returns only the fused score, and the port
//! promises each hit's rank and score in each leg. So the two legs go to the
//! server as one batch request (one round trip), are fused by
//! [`crate::fusion`] with the engine's own formula (the embedded adapter's
//! tests prove the scores equal the engine's to the bit), and the fused ids
//! are fetched under the full filter again. Every request carries the tenant
//! condition and every condition of the search filter.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use mnemo_domain::{MemoryId, SubjectId, TenantId};
use qdrant_client::qdrant::{
    condition::ConditionOneOf, payload_index_params::IndexParams, point_id::PointIdOptions,
    points_selector::PointsSelectorOneOf, query::Variant as QueryVariant, r#match::MatchValue,
    vector_input::Variant as VectorInputVariant, vector_output::Vector as VectorOutputKind,
    vectors_config::Config as VectorsConfigKind, with_payload_selector, with_vectors_selector,
    Condition, CountPoints, CreateCollection, CreateFieldIndexCollection, DeletePoints,
    DenseVector, Distance, FieldCondition, FieldType, Filter, FloatIndexParams, GetPoints,
    HasIdCondition, IntegerIndexParams, IsEmptyCondition, KeywordIndexParams, Match, Modifier,
    NamedVectors, PayloadIndexParams, PointId, PointStruct, PointsSelector, Query,
    QueryBatchPoints, QueryPoints, Range, RepeatedStrings, ScoredPoint, ScrollPoints,
    SetPayloadPoints, SparseVector, SparseVectorConfig, SparseVectorParams, UpsertPoints,
    Value as QdrantValue, Vector, VectorInput, VectorParams, VectorParamsMap, VectorsConfig,
    VectorsOutput, VectorsSelector, WithPayloadSelector, WithVectorsSelector,
};
use qdrant_client::{Payload, Qdrant, QdrantError};
use qdrant_edge::bm25_embed::EdgeBm25;
use secrecy::ExposeSecret;
use serde_json::Value;
use tracing::debug;

use crate::checks::{check_dense, check_payload_tenant, check_point, same_tenant};
use crate::fusion::{self, Fused};
use crate::payload::{self, fields};
use crate::{
    bm25, Hit, Point, PointPayload, Purge, QdrantSettings, SearchMode, SearchRequest, VectorIndex,
    VectorIndexError,
};

const DENSE: &str = "dense";
const SPARSE: &str = "sparse";

/// Collection metadata: how the collection's sparse vectors were made. A
/// collection made with other BM25 options would silently mix incompatible
/// vectors, so it is refused (the embedded adapter keeps the same record in
/// a marker file beside its shard).
const METADATA_FORMAT: &str = "mnemo_format";
const METADATA_BM25: &str = "mnemo_bm25";
const FORMAT: i64 = 1;

/// The qdrant-client release this adapter is built and tested with.
const CLIENT_VERSION: &str = "1.20";

/// Qdrant's compatibility rule: same major version, minor versions at most
/// one apart.
fn compatible_server(server_version: &str) -> bool {
    let major_minor = |version: &str| -> Option<(u64, u64)> {
        let mut parts = version.trim_start_matches('v').split('.');
        Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
    };
    match (major_minor(server_version), major_minor(CLIENT_VERSION)) {
        (Some((major, minor)), Some((client_major, client_minor))) => {
            major == client_major && minor.abs_diff(client_minor) <= 1
        }
        _ => false,
    }
}

/// Longest collection name the server accepts.
const MAX_COLLECTION_NAME: usize = 255;

/// [`VectorIndex`] on one collection of a Qdrant server.
///
/// Cheap to clone; many processes may serve the same collection at once.
///
/// - Writes are sent with `wait=true`: when a call returns, the server has
///   applied it and written it to its WAL, so a read that follows sees it
///   and [`VectorIndex::flush`] has nothing left to do.
/// - The server optimises (HNSW, vacuum of deleted points) in the
///   background; there is no `optimize` here.
/// - A deleted point leaves every search and count at once; its bytes stay
///   in the server's WAL and segments until the server's optimiser vacuums
///   the segment and the WAL rolls over. An erasure receipt should say so.
#[derive(Clone)]
pub struct QdrantVectorIndex {
    inner: Arc<Inner>,
}

struct Inner {
    client: Qdrant,
    collection: String,
    dimension: usize,
    bm25: EdgeBm25,
    /// This connect made the collection (it did not exist before).
    created: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for QdrantVectorIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QdrantVectorIndex")
            .field("collection", &self.inner.collection)
            .field("dimension", &self.inner.dimension)
            .finish()
    }
}

impl QdrantVectorIndex {
    /// Connects to the collection `settings.collection_prefix + space`
    /// (`space` is the embedding space's collection name, as the embedded
    /// adapter names its shard directory), creating it and its payload
    /// indexes when missing.
    ///
    /// Fails with [`VectorIndexError::DimensionMismatch`] when the
    /// collection holds vectors of another length, with
    /// [`VectorIndexError::Incompatible`] when it was made differently (other
    /// BM25 options, another distance, not by mnemo), and with
    /// [`VectorIndexError::Backend`] when the server cannot be reached.
    pub async fn connect(
        settings: &QdrantSettings,
        space: &str,
        dimension: usize,
    ) -> Result<Self, VectorIndexError> {
        if dimension == 0 {
            return Err(VectorIndexError::InvalidRequest(
                "dimension must be at least 1".into(),
            ));
        }
        let collection = collection_name(&settings.collection_prefix, space)?;
        let client = client(settings)?;
        // Tokenisation runs jieba's dictionary load once: off the runtime.
        let bm25 = tokio::task::spawn_blocking(bm25::model)
            .await
            .map_err(|e| backend(format!("bm25 model task failed: {e}")))??;
        let server_version = client.health_check().await.map_err(backend)?.version;
        if !compatible_server(&server_version) {
            tracing::warn!(
                server_version,
                client_version = CLIENT_VERSION,
                "qdrant server and client versions differ by more than one minor version"
            );
        }
        let index = Self {
            inner: Arc::new(Inner {
                client,
                collection,
                dimension,
                bm25,
                created: std::sync::atomic::AtomicBool::new(false),
            }),
        };
        // Services of one deployment start together and race to create the
        // collection: until its shards are active, Qdrant answers reads of
        // a collection another process just created with an internal error
        // ("0 of 0 read operations failed"). Every step is idempotent, so
        // the whole check is tried again, a few times, with a growing pause.
        let mut created = false;
        let mut attempt = 0;
        loop {
            match index.ensure_collection(&mut created).await {
                Ok(()) => break,
                Err(VectorIndexError::Backend(error)) if attempt < CONNECT_ATTEMPTS => {
                    attempt += 1;
                    tracing::warn!(collection = %index.inner.collection, attempt, error = %error, "qdrant collection not ready yet; trying again");
                    tokio::time::sleep(std::time::Duration::from_millis(200 * u64::from(attempt)))
                        .await;
                }
                Err(error) => return Err(error),
            }
        }
        index
            .inner
            .created
            .store(created, std::sync::atomic::Ordering::Relaxed);
        debug!(collection = %index.inner.collection, dimension, "qdrant vector index ready");
        Ok(index)
    }

    /// The embedding spaces that have a collection on the server under
    /// `settings.collection_prefix` (the names `connect` takes), sorted.
    /// Read-only: for tools that look at every space, as `mnemo
    /// verify-erasure` does, without creating one.
    pub async fn spaces(settings: &QdrantSettings) -> Result<Vec<String>, VectorIndexError> {
        let listed = client(settings)?.list_collections().await.map_err(server)?;
        let mut spaces: Vec<String> = listed
            .collections
            .into_iter()
            .filter_map(|c| {
                c.name
                    .strip_prefix(settings.collection_prefix.as_str())
                    .map(str::to_owned)
            })
            .filter(|space| !space.is_empty())
            .collect();
        spaces.sort();
        Ok(spaces)
    }

    /// Whether this connect created the collection: a new embedding space,
    /// which holds none of the memories already in the log until they are
    /// replayed into it (the server does that at start).
    pub fn created_collection(&self) -> bool {
        self.inner
            .created
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The collection this index writes to.
    pub fn collection(&self) -> &str {
        &self.inner.collection
    }

    /// Whether the server answers: for readiness probes.
    pub async fn ping(&self) -> Result<(), VectorIndexError> {
        self.inner.client.health_check().await.map_err(backend)?;
        Ok(())
    }

    /// Deletes the whole collection (every tenant's points). For tests and
    /// for dropping an embedding space that is no longer used; nothing in
    /// the request path calls it.
    pub async fn drop_collection(&self) -> Result<(), VectorIndexError> {
        self.inner
            .client
            .delete_collection(self.inner.collection.as_str())
            .await
            .map_err(backend)?;
        Ok(())
    }

    /// Deletes the collection of `space` under `settings.collection_prefix`
    /// when the server has one; returns whether it did. For a space this
    /// version no longer serves (a former payload layout's, see
    /// `payload::collection_name`): it would keep an erased subject's points,
    /// since erasures only reach the collection served.
    pub async fn drop_space(
        settings: &QdrantSettings,
        space: &str,
    ) -> Result<bool, VectorIndexError> {
        let name = collection_name(&settings.collection_prefix, space)?;
        let client = client(settings)?;
        if !client
            .collection_exists(name.as_str())
            .await
            .map_err(backend)?
        {
            return Ok(false);
        }
        client
            .delete_collection(name.as_str())
            .await
            .map_err(backend)?;
        Ok(true)
    }

    /// Returns whether it created the collection.
    /// Creates the collection when missing (setting `made_here`), checks
    /// its shape and makes its payload indexes.
    async fn ensure_collection(&self, made_here: &mut bool) -> Result<(), VectorIndexError> {
        let inner = &self.inner;
        let exists = inner
            .client
            .collection_exists(inner.collection.as_str())
            .await
            .map_err(backend)?;
        if !exists {
            let created = inner
                .client
                .create_collection(create_collection(&inner.collection, inner.dimension))
                .await;
            *made_here |= created.is_ok();
            if let Err(error) = created {
                // Another replica may have created it between the check and
                // the create: that is fine if it is the same shape, which the
                // check below decides. Anything else is a real failure.
                let now_exists = inner
                    .client
                    .collection_exists(inner.collection.as_str())
                    .await
                    .map_err(backend)?;
                if !now_exists {
                    return Err(backend(error));
                }
            }
        }
        let info = inner
            .client
            .collection_info(inner.collection.as_str())
            .await
            .map_err(backend)?
            .result
            .ok_or_else(|| backend("collection info without a result"))?;
        check_collection(&info, inner.dimension)?;
        // Idempotent on the server: an index of the same schema is kept. Made
        // on every connect so a collection made by an older version gains the
        // indexes added since.
        for request in field_indexes(&inner.collection)? {
            inner
                .client
                .create_field_index(request)
                .await
                .map_err(backend)?;
        }
        Ok(())
    }
}

/// A client of the configured server.
fn client(settings: &QdrantSettings) -> Result<Qdrant, VectorIndexError> {
    Qdrant::from_url(&settings.url)
        .api_key(
            settings
                .api_key
                .as_ref()
                .map(|key| key.expose_secret().to_owned()),
        )
        .timeout(settings.timeout)
        .connect_timeout(settings.connect_timeout)
        // The client's own check blocks a thread and prints to stdout;
        // `connect` checks the version itself, through tracing.
        .skip_compatibility_check()
        .build()
        .map_err(backend)
}

/// How many times `connect` tries the collection check again while another
/// process is creating the collection (about 9 s in all).
const CONNECT_ATTEMPTS: u32 = 8;

fn backend(error: impl std::fmt::Display) -> VectorIndexError {
    VectorIndexError::Backend(error.to_string())
}

fn server(error: QdrantError) -> VectorIndexError {
    backend(error)
}

/// `prefix + space`, checked against what the server accepts in a URL path
/// segment and a directory name.
pub(crate) fn collection_name(prefix: &str, space: &str) -> Result<String, VectorIndexError> {
    let name = format!("{prefix}{space}");
    let valid = !name.is_empty()
        && name.len() <= MAX_COLLECTION_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
        && !name.starts_with('.');
    if !valid {
        return Err(VectorIndexError::InvalidRequest(format!(
            "collection name {name:?}: use 1 to {MAX_COLLECTION_NAME} characters of [A-Za-z0-9_.-]"
        )));
    }
    Ok(name)
}

fn bm25_metadata() -> String {
    bm25::options().to_string()
}

fn create_collection(collection: &str, dimension: usize) -> CreateCollection {
    let dense = VectorParams {
        size: dimension as u64,
        distance: Distance::Cosine as i32,
        ..VectorParams::default()
    };
    let sparse = SparseVectorParams {
        // IDF is computed by the server at query time from the collection's
        // current statistics, as qdrant-edge does for its shard.
        modifier: Some(Modifier::Idf as i32),
        ..SparseVectorParams::default()
    };
    CreateCollection {
        collection_name: collection.to_owned(),
        vectors_config: Some(VectorsConfig {
            config: Some(VectorsConfigKind::ParamsMap(VectorParamsMap {
                map: HashMap::from([(DENSE.to_owned(), dense)]),
            })),
        }),
        sparse_vectors_config: Some(SparseVectorConfig {
            map: HashMap::from([(SPARSE.to_owned(), sparse)]),
        }),
        metadata: HashMap::from([
            (
                METADATA_FORMAT.to_owned(),
                QdrantValue::from(Value::from(FORMAT)),
            ),
            (METADATA_BM25.to_owned(), QdrantValue::from(bm25_metadata())),
        ]),
        ..CreateCollection::default()
    }
}

/// Refuses a collection this adapter cannot use as if it were its own.
fn check_collection(
    info: &qdrant_client::qdrant::CollectionInfo,
    dimension: usize,
) -> Result<(), VectorIndexError> {
    let incompatible = |why: &str| VectorIndexError::Incompatible(why.to_owned());
    let config = info
        .config
        .as_ref()
        .ok_or_else(|| incompatible("collection has no config"))?;
    let params = config
        .params
        .as_ref()
        .ok_or_else(|| incompatible("collection has no params"))?;
    let dense = match params
        .vectors_config
        .as_ref()
        .and_then(|c| c.config.as_ref())
    {
        Some(VectorsConfigKind::ParamsMap(map)) => map.map.get(DENSE),
        _ => None,
    }
    .ok_or_else(|| incompatible("no named dense vector"))?;
    if dense.size != dimension as u64 {
        return Err(VectorIndexError::DimensionMismatch {
            expected: dense.size as usize,
            actual: dimension,
        });
    }
    if dense.distance != Distance::Cosine as i32 {
        return Err(incompatible("dense distance is not cosine"));
    }
    let sparse = params
        .sparse_vectors_config
        .as_ref()
        .and_then(|c| c.map.get(SPARSE))
        .ok_or_else(|| incompatible("no sparse vector"))?;
    if sparse.modifier != Some(Modifier::Idf as i32) {
        return Err(incompatible("sparse vector has no idf modifier"));
    }
    let recorded = config
        .metadata
        .get(METADATA_BM25)
        .cloned()
        .map(Value::from)
        .and_then(|v| v.as_str().map(str::to_owned))
        .ok_or_else(|| {
            incompatible(
                "collection has no mnemo_bm25 metadata: it was not made by mnemo, \
                 or the server is too old to keep collection metadata",
            )
        })?;
    let recorded: Value = serde_json::from_str(&recorded)
        .map_err(|e| incompatible(&format!("mnemo_bm25 metadata: {e}")))?;
    if recorded != bm25::options() {
        return Err(VectorIndexError::Incompatible(format!(
            "built with bm25 {recorded}, this version uses {}",
            bm25::options()
        )));
    }
    Ok(())
}

/// One request per payload index of [`payload::indexes`], translated from
/// its REST `field_schema` JSON.
fn field_indexes(collection: &str) -> Result<Vec<CreateFieldIndexCollection>, VectorIndexError> {
    payload::indexes()
        .into_iter()
        .map(|(field, schema)| {
            let flag = |key: &str| schema.get(key).and_then(Value::as_bool);
            let (field_type, params) = match schema.get("type").and_then(Value::as_str) {
                Some("keyword") => (
                    FieldType::Keyword,
                    IndexParams::KeywordIndexParams(KeywordIndexParams {
                        is_tenant: flag("is_tenant"),
                        ..KeywordIndexParams::default()
                    }),
                ),
                Some("integer") => (
                    FieldType::Integer,
                    IndexParams::IntegerIndexParams(IntegerIndexParams {
                        lookup: flag("lookup"),
                        range: flag("range"),
                        ..IntegerIndexParams::default()
                    }),
                ),
                Some("float") => (
                    FieldType::Float,
                    IndexParams::FloatIndexParams(FloatIndexParams::default()),
                ),
                _ => {
                    return Err(backend(format!(
                        "payload index of {field}: unsupported schema {schema}"
                    )))
                }
            };
            Ok(CreateFieldIndexCollection {
                collection_name: collection.to_owned(),
                wait: Some(true),
                field_name: field.to_owned(),
                field_type: Some(field_type as i32),
                field_index_params: Some(PayloadIndexParams {
                    index_params: Some(params),
                }),
                ..CreateFieldIndexCollection::default()
            })
        })
        .collect()
}

/// Translates a filter of [`crate::payload`] (Qdrant's REST JSON) into the
/// gRPC message. Only the shapes that module builds are known; anything
/// else is refused rather than guessed, so a new filter there fails loudly
/// in this adapter's unit tests instead of matching too much.
pub(crate) fn grpc_filter(json: &Value) -> Result<Filter, VectorIndexError> {
    let object = json
        .as_object()
        .ok_or_else(|| unsupported("filter", json))?;
    let mut filter = Filter::default();
    for (clause, conditions) in object {
        let conditions = conditions
            .as_array()
            .ok_or_else(|| unsupported("filter clause", json))?
            .iter()
            .map(grpc_condition)
            .collect::<Result<Vec<_>, _>>()?;
        match clause.as_str() {
            "must" => filter.must = conditions,
            "should" => filter.should = conditions,
            "must_not" => filter.must_not = conditions,
            _ => return Err(unsupported("filter clause", json)),
        }
    }
    Ok(filter)
}

fn unsupported(what: &str, json: &Value) -> VectorIndexError {
    backend(format!("unsupported {what} {json}"))
}

fn grpc_condition(json: &Value) -> Result<Condition, VectorIndexError> {
    if json.get("key").is_none()
        && ["must", "should", "must_not"]
            .iter()
            .any(|clause| json.get(clause).is_some())
    {
        return Ok(Condition {
            condition_one_of: Some(ConditionOneOf::Filter(grpc_filter(json)?)),
        });
    }
    if let Some(field) = json.get("is_empty") {
        let key = field
            .get("key")
            .and_then(Value::as_str)
            .ok_or_else(|| unsupported("is_empty", json))?;
        return Ok(Condition {
            condition_one_of: Some(ConditionOneOf::IsEmpty(IsEmptyCondition {
                key: key.to_owned(),
            })),
        });
    }
    if let Some(ids) = json.get("has_id") {
        let ids = ids
            .as_array()
            .ok_or_else(|| unsupported("has_id", json))?
            .iter()
            .map(|id| {
                id.as_str()
                    .map(|id| PointId::from(id.to_owned()))
                    .ok_or_else(|| unsupported("point id", json))
            })
            .collect::<Result<Vec<_>, _>>()?;
        return Ok(Condition {
            condition_one_of: Some(ConditionOneOf::HasId(HasIdCondition { has_id: ids })),
        });
    }
    let key = json
        .get("key")
        .and_then(Value::as_str)
        .ok_or_else(|| unsupported("condition", json))?;
    let mut field = FieldCondition {
        key: key.to_owned(),
        ..FieldCondition::default()
    };
    if let Some(matching) = json.get("match") {
        let value = if let Some(value) = matching.get("value") {
            match value {
                Value::String(s) => MatchValue::Keyword(s.clone()),
                Value::Bool(b) => MatchValue::Boolean(*b),
                Value::Number(n) if n.is_i64() => MatchValue::Integer(n.as_i64().unwrap_or(0)),
                _ => return Err(unsupported("match value", json)),
            }
        } else if let Some(any) = matching.get("any").and_then(Value::as_array) {
            let strings = any
                .iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| unsupported("match any", json))?;
            MatchValue::Keywords(RepeatedStrings { strings })
        } else {
            return Err(unsupported("match", json));
        };
        field.r#match = Some(Match {
            match_value: Some(value),
        });
    } else if let Some(range) = json.get("range").and_then(Value::as_object) {
        let bound = |name: &str| -> Result<Option<f64>, VectorIndexError> {
            match range.get(name) {
                None => Ok(None),
                Some(v) => v
                    .as_f64()
                    .map(Some)
                    .ok_or_else(|| unsupported("range bound", json)),
            }
        };
        if range
            .keys()
            .any(|k| !matches!(k.as_str(), "gte" | "lte" | "gt" | "lt"))
        {
            return Err(unsupported("range", json));
        }
        field.range = Some(Range {
            gte: bound("gte")?,
            lte: bound("lte")?,
            gt: bound("gt")?,
            lt: bound("lt")?,
        });
    } else {
        return Err(unsupported("condition", json));
    }
    Ok(Condition {
        condition_one_of: Some(ConditionOneOf::Field(field)),
    })
}

fn point_id(id: &MemoryId) -> PointId {
    PointId {
        point_id_options: Some(PointIdOptions::Uuid(id.as_uuid().to_string())),
    }
}

fn memory_id(id: Option<&PointId>) -> Result<MemoryId, VectorIndexError> {
    match id.and_then(|id| id.point_id_options.as_ref()) {
        Some(PointIdOptions::Uuid(uuid)) => MemoryId::parse(uuid)
            .map_err(|e| VectorIndexError::Corrupt(format!("point id {uuid}: {e}"))),
        Some(PointIdOptions::Num(n)) => Err(VectorIndexError::Corrupt(format!(
            "numeric point id {n} in a memory index"
        ))),
        None => Err(VectorIndexError::Corrupt("point without an id".into())),
    }
}

fn with_payload(enabled: bool) -> Option<WithPayloadSelector> {
    Some(WithPayloadSelector {
        selector_options: Some(with_payload_selector::SelectorOptions::Enable(enabled)),
    })
}

fn with_vectors(with_dense: bool) -> Option<WithVectorsSelector> {
    let options = if with_dense {
        with_vectors_selector::SelectorOptions::Include(VectorsSelector {
            names: vec![DENSE.to_owned()],
        })
    } else {
        with_vectors_selector::SelectorOptions::Enable(false)
    };
    Some(WithVectorsSelector {
        selector_options: Some(options),
    })
}

fn by_filter(filter: Filter) -> Option<PointsSelector> {
    Some(PointsSelector {
        points_selector_one_of: Some(PointsSelectorOneOf::Filter(filter)),
    })
}

fn sparse_vector(sparse: qdrant_edge::SparseVector) -> SparseVector {
    SparseVector {
        indices: sparse.indices,
        values: sparse.values,
    }
}

/// One leg: nearest neighbours of `query` in the vector `using`, under
/// `filter` (which holds the tenant).
fn leg_query(
    collection: &str,
    query: VectorInputVariant,
    using: &str,
    filter: Filter,
    limit: usize,
    with_payload_and_vector: Option<bool>,
) -> QueryPoints {
    QueryPoints {
        collection_name: collection.to_owned(),
        query: Some(Query {
            variant: Some(QueryVariant::Nearest(VectorInput {
                variant: Some(query),
            })),
        }),
        using: Some(using.to_owned()),
        filter: Some(filter),
        limit: Some(limit as u64),
        with_payload: with_payload(with_payload_and_vector.is_some()),
        with_vectors: with_vectors(with_payload_and_vector.unwrap_or(false)),
        ..QueryPoints::default()
    }
}

fn decode_payload(payload: HashMap<String, QdrantValue>) -> Result<PointPayload, VectorIndexError> {
    if payload.is_empty() {
        return Err(VectorIndexError::Corrupt("point without payload".into()));
    }
    let map: serde_json::Map<String, Value> = Payload::from(payload).into();
    payload::from_json(&map)
}

fn dense_of(vectors: Option<VectorsOutput>) -> Option<Vec<f32>> {
    match vectors?.get_vector_by_name(DENSE)? {
        VectorOutputKind::Dense(DenseVector { data }) => Some(data),
        _ => None,
    }
}

fn single_leg_hits(
    tenant: &TenantId,
    points: Vec<ScoredPoint>,
    mode: SearchMode,
) -> Result<Vec<Hit>, VectorIndexError> {
    let dense_leg = mode == SearchMode::Semantic;
    let mut hits = Vec::with_capacity(points.len());
    for (rank, point) in points.into_iter().enumerate() {
        let id = memory_id(point.id.as_ref())?;
        let payload = decode_payload(point.payload)?;
        if !same_tenant(tenant, &payload, &id) {
            continue;
        }
        hits.push(Hit {
            id,
            score: point.score,
            dense_rank: dense_leg.then_some(rank),
            sparse_rank: (!dense_leg).then_some(rank),
            dense_score: dense_leg.then_some(point.score),
            sparse_score: (!dense_leg).then_some(point.score),
            payload,
            dense: dense_of(point.vectors),
        });
    }
    Ok(hits)
}

fn leg_ids(points: Vec<ScoredPoint>) -> Result<Vec<(MemoryId, f32)>, VectorIndexError> {
    points
        .into_iter()
        .map(|p| Ok((memory_id(p.id.as_ref())?, p.score)))
        .collect()
}

/// What [`QdrantVectorIndex::search`] sends, before any I/O: built apart so
/// the request construction is unit-tested without a server.
#[derive(Debug)]
pub(crate) enum SearchPlan {
    /// Nothing can match (limit 0, or a keyword query of stopwords only).
    Empty,
    /// One leg, with payload: its hits are the answer.
    Single(Box<QueryPoints>, SearchMode),
    /// Both legs (or the one that has an input), ids and scores only; then
    /// fusion and a fetch of the fused ids.
    Hybrid {
        dense: Option<Box<QueryPoints>>,
        sparse: Option<Box<QueryPoints>>,
    },
}

impl Inner {
    fn filter(
        &self,
        tenant: &TenantId,
        request: &SearchRequest,
        ids: Option<&[MemoryId]>,
    ) -> Result<Filter, VectorIndexError> {
        grpc_filter(&payload::search_filter(tenant, &request.filter, ids))
    }

    pub(crate) fn plan(
        &self,
        tenant: &TenantId,
        request: &SearchRequest,
    ) -> Result<SearchPlan, VectorIndexError> {
        if let Some(dense) = &request.dense {
            check_dense(self.dimension, dense)?;
        }
        if request.limit == 0 {
            return Ok(SearchPlan::Empty);
        }
        let sparse_query = request
            .text
            .as_deref()
            .map(|text| self.bm25.embed_query(text));
        let collection = self.collection.as_str();
        match request.mode {
            SearchMode::Semantic => {
                let dense = request.dense.clone().ok_or_else(|| {
                    VectorIndexError::InvalidRequest("semantic search needs a dense vector".into())
                })?;
                Ok(SearchPlan::Single(
                    Box::new(leg_query(
                        collection,
                        VectorInputVariant::Dense(DenseVector { data: dense }),
                        DENSE,
                        self.filter(tenant, request, None)?,
                        request.limit,
                        Some(request.with_vectors),
                    )),
                    SearchMode::Semantic,
                ))
            }
            SearchMode::Keyword => {
                let sparse = sparse_query.ok_or_else(|| {
                    VectorIndexError::InvalidRequest("keyword search needs a text".into())
                })?;
                if sparse.indices.is_empty() {
                    // Only stopwords or punctuation: nothing can match.
                    return Ok(SearchPlan::Empty);
                }
                Ok(SearchPlan::Single(
                    Box::new(leg_query(
                        collection,
                        VectorInputVariant::Sparse(sparse_vector(sparse)),
                        SPARSE,
                        self.filter(tenant, request, None)?,
                        request.limit,
                        Some(request.with_vectors),
                    )),
                    SearchMode::Keyword,
                ))
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
                let dense = match &request.dense {
                    Some(dense) => Some(Box::new(leg_query(
                        collection,
                        VectorInputVariant::Dense(DenseVector {
                            data: dense.clone(),
                        }),
                        DENSE,
                        self.filter(tenant, request, None)?,
                        candidates,
                        None,
                    ))),
                    None => None,
                };
                let sparse = match sparse_query {
                    Some(sparse) if !sparse.indices.is_empty() => Some(Box::new(leg_query(
                        collection,
                        VectorInputVariant::Sparse(sparse_vector(sparse)),
                        SPARSE,
                        self.filter(tenant, request, None)?,
                        candidates,
                        None,
                    ))),
                    _ => None,
                };
                if dense.is_none() && sparse.is_none() {
                    return Ok(SearchPlan::Empty);
                }
                Ok(SearchPlan::Hybrid { dense, sparse })
            }
        }
    }

    async fn count_matching(&self, filter: Value) -> Result<u64, VectorIndexError> {
        let response = self
            .client
            .count(CountPoints {
                collection_name: self.collection.clone(),
                filter: Some(grpc_filter(&filter)?),
                exact: Some(true),
                ..CountPoints::default()
            })
            .await
            .map_err(server)?;
        Ok(response.result.map(|r| r.count).unwrap_or(0))
    }

    async fn delete_matching(&self, filter: Filter) -> Result<(), VectorIndexError> {
        self.client
            .delete_points(DeletePoints {
                collection_name: self.collection.clone(),
                wait: Some(true),
                points: by_filter(filter),
                ..DeletePoints::default()
            })
            .await
            .map_err(server)?;
        Ok(())
    }

    /// The final query of a hybrid search: payloads (and vectors) of the
    /// fused ids, under the full filter again.
    async fn fetch_fused(
        &self,
        tenant: &TenantId,
        request: &SearchRequest,
        fused: Vec<Fused>,
    ) -> Result<Vec<Hit>, VectorIndexError> {
        if fused.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<MemoryId> = fused.iter().map(|f| f.id).collect();
        let records = self
            .client
            .scroll(ScrollPoints {
                collection_name: self.collection.clone(),
                filter: Some(self.filter(tenant, request, Some(&ids))?),
                limit: Some(ids.len() as u32),
                with_payload: with_payload(true),
                with_vectors: with_vectors(request.with_vectors),
                ..ScrollPoints::default()
            })
            .await
            .map_err(server)?
            .result;
        let mut found = HashMap::with_capacity(records.len());
        for record in records {
            found.insert(memory_id(record.id.as_ref())?, record);
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
                dense: dense_of(record.vectors),
            });
        }
        Ok(hits)
    }
}

#[async_trait]
impl VectorIndex for QdrantVectorIndex {
    fn dimension(&self) -> usize {
        self.inner.dimension
    }

    async fn upsert(&self, tenant: &TenantId, points: Vec<Point>) -> Result<(), VectorIndexError> {
        if points.is_empty() {
            return Ok(());
        }
        let inner = &self.inner;
        for point in &points {
            check_point(tenant, inner.dimension, point)?;
        }
        // An id another tenant owns must not be overwritten: upsert replaces
        // whole points, so this is the one place a tenant could touch another
        // tenant's data by id. Checked first to report it (and write nothing
        // of the batch), and enforced again atomically by the server through
        // the upsert's `update_filter` below.
        let ids: Vec<PointId> = points.iter().map(|p| point_id(&p.id)).collect();
        let existing = inner
            .client
            .get_points(GetPoints {
                collection_name: inner.collection.clone(),
                ids,
                with_payload: Some(WithPayloadSelector {
                    selector_options: Some(with_payload_selector::SelectorOptions::Include(
                        qdrant_client::qdrant::PayloadIncludeSelector {
                            fields: vec![fields::TENANT.to_owned()],
                        },
                    )),
                }),
                with_vectors: with_vectors(false),
                ..GetPoints::default()
            })
            .await
            .map_err(server)?
            .result;
        for record in existing {
            let owner = record.payload.get(fields::TENANT).cloned().map(Value::from);
            if owner.as_ref().and_then(Value::as_str) != Some(tenant.as_str()) {
                return Err(VectorIndexError::IdTaken(memory_id(record.id.as_ref())?));
            }
        }

        let count = points.len();
        // Tokenising (jieba, stemming) is CPU work: off the async runtime.
        let bm25_inner = Arc::clone(&self.inner);
        let records = tokio::task::spawn_blocking(move || {
            points
                .into_iter()
                .map(|point| {
                    let sparse = sparse_vector(bm25_inner.bm25.embed_document(&point.text));
                    let mut vectors = NamedVectors::default();
                    vectors.vectors.insert(
                        DENSE.to_owned(),
                        Vector::from(DenseVector { data: point.dense }),
                    );
                    vectors
                        .vectors
                        .insert(SPARSE.to_owned(), Vector::from(sparse));
                    PointStruct::new(
                        point_id(&point.id),
                        vectors,
                        Payload::from(payload::to_json(&point.payload)),
                    )
                })
                .collect::<Vec<_>>()
        })
        .await
        .map_err(|e| backend(format!("bm25 task failed: {e}")))?;
        inner
            .client
            .upsert_points(UpsertPoints {
                collection_name: inner.collection.clone(),
                wait: Some(true),
                points: records,
                update_filter: Some(grpc_filter(&payload::tenant_filter(tenant, None))?),
                ..UpsertPoints::default()
            })
            .await
            .map_err(server)?;
        debug!(points = count, "vector points upserted");
        Ok(())
    }

    async fn update_payload(
        &self,
        tenant: &TenantId,
        id: &MemoryId,
        payload: PointPayload,
    ) -> Result<(), VectorIndexError> {
        check_payload_tenant(tenant, id, &payload)?;
        let only_this = payload::tenant_filter(tenant, Some(std::slice::from_ref(id)));
        if self.inner.count_matching(only_this.clone()).await? == 0 {
            return Err(VectorIndexError::PointNotFound(*id));
        }
        // By filter, not by id: the tenant condition travels with the write.
        self.inner
            .client
            .overwrite_payload(SetPayloadPoints {
                collection_name: self.inner.collection.clone(),
                wait: Some(true),
                payload: Payload::from(payload::to_json(&payload)).into(),
                points_selector: by_filter(grpc_filter(&only_this)?),
                ..SetPayloadPoints::default()
            })
            .await
            .map_err(server)?;
        Ok(())
    }

    async fn delete(&self, tenant: &TenantId, ids: &[MemoryId]) -> Result<(), VectorIndexError> {
        if ids.is_empty() {
            return Ok(());
        }
        let filter = grpc_filter(&payload::tenant_filter(tenant, Some(ids)))?;
        self.inner.delete_matching(filter).await
    }

    /// The count is taken just before the delete; a point of the subject
    /// written by another process between the two is deleted but not
    /// counted (the embedded adapter counts under its writer lock; a server
    /// has no lock to offer).
    async fn delete_subject(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<u64, VectorIndexError> {
        let filter = payload::subject_filter(tenant, subject);
        let deleted = self.inner.count_matching(filter.clone()).await?;
        if deleted > 0 {
            self.inner.delete_matching(grpc_filter(&filter)?).await?;
        }
        Ok(deleted)
    }

    async fn search(
        &self,
        tenant: &TenantId,
        request: &SearchRequest,
    ) -> Result<Vec<Hit>, VectorIndexError> {
        let inner = &self.inner;
        // Query embedding is a few microseconds of CPU: inline.
        match inner.plan(tenant, request)? {
            SearchPlan::Empty => Ok(Vec::new()),
            SearchPlan::Single(query, mode) => {
                let points = inner.client.query(*query).await.map_err(server)?.result;
                single_leg_hits(tenant, points, mode)
            }
            SearchPlan::Hybrid { dense, sparse } => {
                let has_dense = dense.is_some();
                let batch: Vec<QueryPoints> = dense.into_iter().chain(sparse).map(|q| *q).collect();
                let legs = batch.len();
                let mut results = inner
                    .client
                    .query_batch(QueryBatchPoints {
                        collection_name: inner.collection.clone(),
                        query_points: batch,
                        ..QueryBatchPoints::default()
                    })
                    .await
                    .map_err(server)?
                    .result
                    .into_iter();
                if results.len() != legs {
                    return Err(backend(format!(
                        "batch query returned {} results for {legs} queries",
                        results.len()
                    )));
                }
                let dense_leg = if has_dense {
                    leg_ids(results.next().map(|r| r.result).unwrap_or_default())?
                } else {
                    Vec::new()
                };
                let sparse_leg = leg_ids(results.next().map(|r| r.result).unwrap_or_default())?;
                let fused = fusion::rrf(&dense_leg, &sparse_leg, request.rrf_k, request.limit);
                inner.fetch_fused(tenant, request, fused).await
            }
        }
    }

    async fn count(
        &self,
        tenant: &TenantId,
        subject: Option<&SubjectId>,
    ) -> Result<u64, VectorIndexError> {
        let filter = match subject {
            Some(subject) => payload::subject_filter(tenant, subject),
            None => payload::tenant_filter(tenant, None),
        };
        self.inner.count_matching(filter).await
    }

    /// Nothing to do: every write was sent with `wait=true`, so the server
    /// had applied it and written it to its WAL before the write returned.
    async fn flush(&self) -> Result<(), VectorIndexError> {
        Ok(())
    }

    /// A client cannot make a Qdrant server drop a deleted point's bytes:
    /// the server only marks the point deleted, and no API rewrites a
    /// segment or truncates the WAL on request. So this says where they
    /// remain and what removes them, for the receipt.
    async fn purge_deleted(&self) -> Result<Purge, VectorIndexError> {
        Ok(Purge::Residue {
            note: server_residue(&self.inner.collection),
        })
    }
}

/// Where a Qdrant server keeps deleted points, and until when (Qdrant 1.x;
/// the thresholds are the server's defaults, which a deployment may change
/// in `storage.optimizers` and `storage.wal`).
fn server_residue(collection: &str) -> String {
    format!(
        "the Qdrant server keeps the deleted points' vectors and payloads on its disk, \
         out of every query: in the segments of collection {collection} until its vacuum \
         optimizer rewrites them (once deleted points reach deleted_threshold, 20% of a \
         segment by default, in a segment of at least vacuum_min_vector_number vectors, \
         1000 by default; a smaller segment keeps them until it is merged or rebuilt), and \
         in its write-ahead log until the log segments holding them (wal_capacity_mb, \
         32 MiB by default) are truncated after the collection has flushed past them; \
         snapshots taken before the erasure keep them until they are deleted"
    )
}

#[cfg(test)]
mod tests {
    use mnemo_domain::{MemoryKind, MemoryState};
    use serde_json::json;

    use std::time::Duration;

    use super::*;
    use crate::testsuite::{axis, hybrid, keyword, semantic, subject, tenant};
    use crate::SearchFilter;

    /// An index that never connects: `plan` and the builders need no server.
    fn offline(dimension: usize) -> Inner {
        Inner {
            client: Qdrant::from_url("http://127.0.0.1:1")
                .skip_compatibility_check()
                .build()
                .unwrap(),
            collection: "mnemo-test__8".into(),
            dimension,
            bm25: bm25::model().unwrap(),
            created: Default::default(),
        }
    }

    fn field(condition: &Condition) -> &FieldCondition {
        match condition.condition_one_of.as_ref().unwrap() {
            ConditionOneOf::Field(field) => field,
            other => panic!("not a field condition: {other:?}"),
        }
    }

    fn keyword_of(condition: &Condition) -> (&str, &MatchValue) {
        let field = field(condition);
        (
            field.key.as_str(),
            field
                .r#match
                .as_ref()
                .unwrap()
                .match_value
                .as_ref()
                .unwrap(),
        )
    }

    fn tenant_first(filter: &Filter, tenant_name: &str) {
        let (key, value) = keyword_of(&filter.must[0]);
        assert_eq!(key, fields::TENANT);
        assert_eq!(value, &MatchValue::Keyword(tenant_name.into()));
    }

    #[test]
    fn server_versions_within_one_minor_are_compatible() {
        for version in ["1.20.0", "1.19.3", "1.21.1", "v1.20.2"] {
            assert!(compatible_server(version), "{version}");
        }
        for version in ["1.18.0", "1.22.0", "2.20.0", "dev", ""] {
            assert!(!compatible_server(version), "{version}");
        }
    }

    #[test]
    fn collection_names_are_prefixed_and_checked() {
        assert_eq!(
            collection_name("prod-", "all-MiniLM-L6-v2__384").unwrap(),
            "prod-all-MiniLM-L6-v2__384"
        );
        assert_eq!(collection_name("", "m__8").unwrap(), "m__8");
        for bad in ["a/b", "a b", "", ".hidden", &"x".repeat(256)] {
            let error = collection_name("", bad).unwrap_err();
            assert_eq!(error.code(), "invalid_search_request", "{bad}");
        }
    }

    #[test]
    fn every_search_filter_field_translates_to_grpc() {
        let t = tenant("t1");
        let (a, b) = (MemoryId::new(), MemoryId::new());
        let filter = SearchFilter {
            subject: Some(subject("alice")),
            types: vec![crate::PointType::Episode],
            kinds: vec![MemoryKind::Preference, MemoryKind::Fact],
            tags: vec!["food".into(), "drink".into()],
            states: vec![MemoryState::Active, MemoryState::Archived],
            session: Some("sess-1".into()),
            agent: Some("agent-7".into()),
            created_from: Some(1_700_000_000),
            created_to: Some(1_800_000_000),
            min_importance: Some(0.25),
        };
        let grpc = grpc_filter(&payload::search_filter(&t, &filter, Some(&[a, b]))).unwrap();
        assert!(grpc.should.is_empty() && grpc.must_not.is_empty());
        tenant_first(&grpc, "t1");
        let mut seen = Vec::new();
        for condition in &grpc.must[1..] {
            match condition.condition_one_of.as_ref().unwrap() {
                ConditionOneOf::HasId(has_id) => {
                    assert_eq!(has_id.has_id, vec![point_id(&a), point_id(&b)]);
                    seen.push("has_id".to_owned());
                }
                ConditionOneOf::Field(field) => {
                    seen.push(field.key.clone());
                    match field.key.as_str() {
                        "subject" => assert_eq!(
                            keyword_of(condition).1,
                            &MatchValue::Keyword("alice".into())
                        ),
                        "kind" => assert_eq!(
                            keyword_of(condition).1,
                            &MatchValue::Keywords(RepeatedStrings {
                                strings: vec!["preference".into(), "fact".into()]
                            })
                        ),
                        "state" => assert_eq!(
                            keyword_of(condition).1,
                            &MatchValue::Keywords(RepeatedStrings {
                                strings: vec!["active".into(), "archived".into()]
                            })
                        ),
                        "tags" | "session" | "agent" => {
                            assert!(matches!(keyword_of(condition).1, MatchValue::Keyword(_)))
                        }
                        "type" => assert_eq!(
                            keyword_of(condition).1,
                            &MatchValue::Keyword("episode".into())
                        ),
                        "created_at" => assert_eq!(
                            field.range,
                            Some(Range {
                                gte: Some(1_700_000_000.0),
                                lte: Some(1_800_000_000.0),
                                gt: None,
                                lt: None,
                            })
                        ),
                        "importance" => {
                            assert_eq!(field.range.unwrap().gte, Some(f64::from(0.25f32)))
                        }
                        other => panic!("unexpected key {other}"),
                    }
                }
                other => panic!("unexpected condition {other:?}"),
            }
        }
        seen.sort();
        assert_eq!(
            seen,
            [
                "agent",
                "created_at",
                "has_id",
                "importance",
                "kind",
                "session",
                "state",
                "subject",
                "tags",
                "tags",
                "type"
            ]
        );
        // Memories only (the default): type memory, or no type at all
        // (points from before episodes), as one nested `should`.
        let memories =
            grpc_filter(&payload::search_filter(&t, &SearchFilter::default(), None)).unwrap();
        assert!(memories.must_not.is_empty());
        let nested = memories
            .must
            .iter()
            .find_map(|c| match &c.condition_one_of {
                Some(ConditionOneOf::Filter(nested)) => Some(nested),
                _ => None,
            })
            .expect("a nested filter");
        assert_eq!(
            keyword_of(&nested.should[0]),
            ("type", &MatchValue::Keyword("memory".into()))
        );
        assert_eq!(
            nested.should[1].condition_one_of,
            Some(ConditionOneOf::IsEmpty(IsEmptyCondition {
                key: "type".into()
            }))
        );
    }

    #[test]
    fn tenant_and_subject_filters_translate() {
        let t = tenant("t2");
        let grpc = grpc_filter(&payload::subject_filter(&t, &subject("bob"))).unwrap();
        tenant_first(&grpc, "t2");
        assert_eq!(
            keyword_of(&grpc.must[1]),
            ("subject", &MatchValue::Keyword("bob".into()))
        );
        let grpc = grpc_filter(&payload::tenant_filter(&t, None)).unwrap();
        assert_eq!(grpc.must.len(), 1);
        tenant_first(&grpc, "t2");
    }

    #[test]
    fn unknown_filter_shapes_are_refused_not_guessed() {
        for shape in [
            json!({"must": [{"key": "x", "geo_radius": {}}]}),
            json!({"must": [{"key": "x", "match": {"text": "y"}}]}),
            json!({"must": [{"key": "x", "range": {"gte": 1, "near": 2}}]}),
            json!({"filter": []}),
            json!({"must": [{"nested": {}}]}),
        ] {
            assert!(grpc_filter(&shape).is_err(), "{shape}");
        }
    }

    #[test]
    fn the_collection_has_named_vectors_metadata_and_every_payload_index() {
        let create = create_collection("c__8", 8);
        let Some(VectorsConfigKind::ParamsMap(map)) = create.vectors_config.unwrap().config else {
            panic!("named vectors expected");
        };
        assert_eq!(map.map[DENSE].size, 8);
        assert_eq!(map.map[DENSE].distance, Distance::Cosine as i32);
        let sparse = &create.sparse_vectors_config.unwrap().map[SPARSE];
        assert_eq!(sparse.modifier, Some(Modifier::Idf as i32));
        let recorded: Value = Value::from(create.metadata[METADATA_BM25].clone());
        let recorded: Value = serde_json::from_str(recorded.as_str().unwrap()).unwrap();
        assert_eq!(recorded, bm25::options());

        let indexes = field_indexes("c__8").unwrap();
        let mut names: Vec<&str> = indexes.iter().map(|i| i.field_name.as_str()).collect();
        names.sort();
        assert_eq!(
            names,
            [
                "agent",
                "created_at",
                "importance",
                "kind",
                "memory_subject",
                "session",
                "state",
                "subject",
                "tags",
                "tenant",
                "type"
            ]
        );
        for index in &indexes {
            let params = index.field_index_params.clone().unwrap().index_params;
            match (index.field_name.as_str(), params) {
                ("tenant", Some(IndexParams::KeywordIndexParams(p))) => {
                    assert_eq!(p.is_tenant, Some(true))
                }
                ("created_at", Some(IndexParams::IntegerIndexParams(p))) => {
                    assert_eq!((p.lookup, p.range), (Some(false), Some(true)))
                }
                ("importance", Some(IndexParams::FloatIndexParams(_))) => {}
                (_, Some(IndexParams::KeywordIndexParams(p))) => assert_eq!(p.is_tenant, None),
                (name, params) => panic!("{name}: {params:?}"),
            }
            assert_eq!(index.wait, Some(true));
        }
    }

    #[test]
    fn a_collection_made_otherwise_is_refused() {
        let info = |create: CreateCollection| qdrant_client::qdrant::CollectionInfo {
            config: Some(qdrant_client::qdrant::CollectionConfig {
                params: Some(qdrant_client::qdrant::CollectionParams {
                    vectors_config: create.vectors_config,
                    sparse_vectors_config: create.sparse_vectors_config,
                    ..Default::default()
                }),
                metadata: create.metadata,
                ..Default::default()
            }),
            ..Default::default()
        };
        check_collection(&info(create_collection("c", 8)), 8).unwrap();
        assert_eq!(
            check_collection(&info(create_collection("c", 8)), 16)
                .unwrap_err()
                .code(),
            "dimension_mismatch"
        );
        let mut foreign = create_collection("c", 8);
        foreign.metadata.clear();
        assert_eq!(
            check_collection(&info(foreign), 8).unwrap_err().code(),
            "incompatible_index"
        );
        let mut other_bm25 = create_collection("c", 8);
        other_bm25.metadata.insert(
            METADATA_BM25.into(),
            QdrantValue::from(json!({"tokenizer": "word"}).to_string()),
        );
        assert_eq!(
            check_collection(&info(other_bm25), 8).unwrap_err().code(),
            "incompatible_index"
        );
        let mut no_idf = create_collection("c", 8);
        no_idf
            .sparse_vectors_config
            .as_mut()
            .unwrap()
            .map
            .get_mut(SPARSE)
            .unwrap()
            .modifier = None;
        assert_eq!(
            check_collection(&info(no_idf), 8).unwrap_err().code(),
            "incompatible_index"
        );
    }

    #[tokio::test]
    async fn semantic_and_keyword_plans_carry_the_whole_filter_and_payload() {
        let index = offline(8);
        let t = tenant("t1");
        let request = SearchRequest {
            filter: SearchFilter {
                subject: Some(subject("alice")),
                ..SearchFilter::default()
            },
            limit: 7,
            with_vectors: true,
            ..semantic(axis(8, 0))
        };
        let SearchPlan::Single(query, SearchMode::Semantic) = index.plan(&t, &request).unwrap()
        else {
            panic!("one dense leg expected");
        };
        assert_eq!(query.collection_name, "mnemo-test__8");
        assert_eq!(query.using.as_deref(), Some(DENSE));
        assert_eq!(query.limit, Some(7));
        let filter = query.filter.unwrap();
        tenant_first(&filter, "t1");
        // A subject's memories: their own condition (`fields::MEMORY_SUBJECT`).
        assert_eq!(
            keyword_of(&filter.must[1]),
            ("memory_subject", &MatchValue::Keyword("alice".into()))
        );
        assert_eq!(query.with_payload, with_payload(true));
        assert_eq!(query.with_vectors, with_vectors(true));

        let SearchPlan::Single(query, SearchMode::Keyword) =
            index.plan(&t, &keyword("Espresso mornings")).unwrap()
        else {
            panic!("one sparse leg expected");
        };
        assert_eq!(query.using.as_deref(), Some(SPARSE));
        let Some(QueryVariant::Nearest(VectorInput {
            variant: Some(VectorInputVariant::Sparse(sparse)),
        })) = query.query.unwrap().variant
        else {
            panic!("sparse nearest query expected");
        };
        // The same query vector the embedded adapter sends its engine.
        let expected = index.bm25.embed_query("Espresso mornings");
        assert_eq!(sparse.indices, expected.indices);
        assert_eq!(sparse.values, expected.values);
        tenant_first(&query.filter.unwrap(), "t1");
        assert_eq!(query.with_vectors, with_vectors(false));
    }

    #[tokio::test]
    async fn hybrid_plans_two_filtered_legs_of_prefetch_size_without_payload() {
        let index = offline(8);
        let t = tenant("t1");
        let request = SearchRequest {
            limit: 5,
            prefetch: 30,
            filter: SearchFilter {
                min_importance: Some(0.5),
                ..SearchFilter::default()
            },
            ..hybrid(axis(8, 1), "espresso")
        };
        let SearchPlan::Hybrid {
            dense: Some(dense),
            sparse: Some(sparse),
        } = index.plan(&t, &request).unwrap()
        else {
            panic!("two legs expected");
        };
        for (leg, using) in [(&dense, DENSE), (&sparse, SPARSE)] {
            assert_eq!(leg.using.as_deref(), Some(using));
            assert_eq!(leg.limit, Some(30));
            assert_eq!(leg.with_payload, with_payload(false));
            let filter = leg.filter.as_ref().unwrap();
            tenant_first(filter, "t1");
            assert!(filter.must.iter().any(|c| matches!(
                &c.condition_one_of,
                Some(ConditionOneOf::Field(f)) if f.key == fields::IMPORTANCE
            )));
        }
        // The prefetch never returns fewer candidates than the page.
        let small = SearchRequest {
            limit: 40,
            prefetch: 10,
            ..request.clone()
        };
        let SearchPlan::Hybrid {
            dense: Some(dense), ..
        } = index.plan(&t, &small).unwrap()
        else {
            panic!("two legs expected");
        };
        assert_eq!(dense.limit, Some(40));
        // Stopwords only and no vector: nothing to ask.
        let nothing = SearchRequest {
            dense: None,
            ..hybrid(axis(8, 1), "the and of")
        };
        assert!(matches!(
            index.plan(&t, &nothing).unwrap(),
            SearchPlan::Empty
        ));
    }

    #[tokio::test]
    async fn malformed_requests_are_refused_before_any_io() {
        let index = offline(8);
        let t = tenant("t1");
        let code = |request: SearchRequest| index.plan(&t, &request).unwrap_err().code();
        assert_eq!(code(semantic(vec![1.0; 9])), "dimension_mismatch");
        assert_eq!(
            code(SearchRequest {
                dense: None,
                ..semantic(axis(8, 0))
            }),
            "invalid_search_request"
        );
        assert_eq!(
            code(SearchRequest {
                rrf_k: 0,
                ..hybrid(axis(8, 0), "x")
            }),
            "invalid_search_request"
        );
        assert!(matches!(
            index
                .plan(
                    &t,
                    &SearchRequest {
                        limit: 0,
                        ..semantic(axis(8, 0))
                    }
                )
                .unwrap(),
            SearchPlan::Empty
        ));
    }

    #[test]
    fn payload_survives_the_grpc_value_round_trip() {
        let mut original = crate::testsuite::payload(&tenant("t1"), &subject("s1"));
        original.tags = vec!["one".into()];
        original.session = Some("s".into());
        original.importance = 0.7;
        let grpc: HashMap<String, QdrantValue> = Payload::from(payload::to_json(&original)).into();
        assert_eq!(decode_payload(grpc).unwrap(), original);
        assert_eq!(
            decode_payload(HashMap::new()).unwrap_err().code(),
            "corrupt_point"
        );
    }

    #[tokio::test]
    async fn an_unreachable_server_is_reported_as_unavailable() {
        let mut settings = QdrantSettings::new("http://127.0.0.1:1");
        settings.connect_timeout = Duration::from_millis(500);
        settings.timeout = Duration::from_secs(2);
        let error = QdrantVectorIndex::connect(&settings, "space__8", 8)
            .await
            .unwrap_err();
        assert_eq!(error.code(), "vector_index_unavailable", "{error}");
        let error = QdrantVectorIndex::connect(&settings, "space/8", 8)
            .await
            .unwrap_err();
        assert_eq!(error.code(), "invalid_search_request", "{error}");
    }

    #[test]
    fn point_ids_round_trip_and_numeric_ids_are_corrupt() {
        let id = MemoryId::new();
        assert_eq!(memory_id(Some(&point_id(&id))).unwrap(), id);
        let numeric = PointId::from(7u64);
        assert_eq!(
            memory_id(Some(&numeric)).unwrap_err().code(),
            "corrupt_point"
        );
    }
}
