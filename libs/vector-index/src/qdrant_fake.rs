//! A stand-in Qdrant server for tests: the gRPC services the adapter calls,
//! served over a real socket by tonic, each collection an in-process
//! qdrant-edge shard (the server's own segment engine).
//!
//! It exists because no Qdrant server can run where these tests run. It
//! proves the adapter's side of the wire: what it sends (collections,
//! indexes, points, filters, queries) and how it reads the answers, with the
//! whole contract suite on top. It does not prove the server's side: the
//! translation below is this crate's reading of the server's semantics
//! (`update_filter`, metadata, IDF per collection), so `TEST_QDRANT_URL`
//! against a real server stays the test that counts.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use qdrant_client::qdrant as grpc;
use qdrant_client::qdrant::collections_server::{Collections, CollectionsServer};
use qdrant_client::qdrant::points_server::{Points, PointsServer};
use qdrant_client::qdrant::qdrant_server::{Qdrant as QdrantService, QdrantServer};
use qdrant_client::Payload as GrpcPayload;
use qdrant_edge::{
    CountRequest, CreateIndex, EdgeShard, FieldIndexOperations, Filter, JsonPath, Payload,
    PayloadFieldSchema, PayloadOps, PointId, PointInsertOperations, PointOperations, PointStruct,
    ScrollRequest, SetPayloadOp, SparseVector, UpdateOperation, Vector, VectorInternal, Vectors,
    WithPayloadInterface, WithVector,
};
use serde_json::{json, Map, Value};
use tonic::{Request, Response, Status};

use crate::edge::{dense_of, leg_query, shard_config, DENSE, SPARSE};

type Reply<T> = Result<Response<T>, Status>;
type BoxedReply<'a, T> = Pin<Box<dyn std::future::Future<Output = Reply<T>> + Send + 'a>>;

struct Collection {
    shard: EdgeShard,
    /// What `create` was given, for `get`.
    created: grpc::CreateCollection,
    _dir: tempfile::TempDir,
}

#[derive(Clone, Default)]
pub(crate) struct FakeQdrant {
    collections: Arc<Mutex<HashMap<String, Arc<Collection>>>>,
}

/// Starts the server on a free local port; it lives until the runtime ends
/// (dropping the runtime drops every collection and its files).
pub async fn start() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let fake = FakeQdrant::default();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(PointsServer::new(fake.clone()))
            .add_service(CollectionsServer::new(fake.clone()))
            .add_service(QdrantServer::new(fake))
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
    );
    address
}

fn internal(error: impl std::fmt::Display) -> Status {
    Status::internal(error.to_string())
}

impl FakeQdrant {
    fn collection(&self, name: &str) -> Result<Arc<Collection>, Status> {
        self.collections
            .lock()
            .unwrap()
            .get(name)
            .cloned()
            .ok_or_else(|| Status::not_found(format!("collection {name} not found")))
    }
}

// ------------------------------------------------------------ translation

fn json_filter(filter: &grpc::Filter) -> Result<Value, Status> {
    let conditions = |list: &[grpc::Condition]| -> Result<Vec<Value>, Status> {
        list.iter().map(json_condition).collect()
    };
    let mut object = Map::new();
    object.insert("must".into(), Value::Array(conditions(&filter.must)?));
    object.insert("should".into(), Value::Array(conditions(&filter.should)?));
    object.insert(
        "must_not".into(),
        Value::Array(conditions(&filter.must_not)?),
    );
    Ok(Value::Object(object))
}

fn json_condition(condition: &grpc::Condition) -> Result<Value, Status> {
    use grpc::condition::ConditionOneOf;
    use grpc::r#match::MatchValue;
    match condition.condition_one_of.as_ref() {
        Some(ConditionOneOf::HasId(has_id)) => Ok(json!({
            "has_id": has_id.has_id.iter().map(uuid_of).collect::<Result<Vec<_>, _>>()?
        })),
        Some(ConditionOneOf::Field(field)) => {
            if let Some(r#match) = &field.r#match {
                let matching = match r#match.match_value.as_ref() {
                    Some(MatchValue::Keyword(value)) => json!({"value": value}),
                    Some(MatchValue::Integer(value)) => json!({"value": value}),
                    Some(MatchValue::Boolean(value)) => json!({"value": value}),
                    Some(MatchValue::Keywords(values)) => json!({"any": values.strings}),
                    other => return Err(Status::unimplemented(format!("match {other:?}"))),
                };
                Ok(json!({"key": field.key, "match": matching}))
            } else if let Some(range) = &field.range {
                let mut bounds = Map::new();
                for (name, bound) in [
                    ("gte", range.gte),
                    ("lte", range.lte),
                    ("gt", range.gt),
                    ("lt", range.lt),
                ] {
                    if let Some(bound) = bound {
                        bounds.insert(name.into(), json!(bound));
                    }
                }
                Ok(json!({"key": field.key, "range": bounds}))
            } else {
                Err(Status::unimplemented("field condition"))
            }
        }
        Some(ConditionOneOf::Filter(nested)) => json_filter(nested),
        Some(ConditionOneOf::IsEmpty(field)) => Ok(json!({"is_empty": {"key": field.key}})),
        other => Err(Status::unimplemented(format!("condition {other:?}"))),
    }
}

fn edge_filter(filter: Option<&grpc::Filter>) -> Result<Option<Filter>, Status> {
    filter
        .map(|f| serde_json::from_value(json_filter(f)?).map_err(internal))
        .transpose()
}

fn uuid_of(id: &grpc::PointId) -> Result<String, Status> {
    match id.point_id_options.as_ref() {
        Some(grpc::point_id::PointIdOptions::Uuid(uuid)) => Ok(uuid.clone()),
        other => Err(Status::invalid_argument(format!("point id {other:?}"))),
    }
}

fn edge_id(id: &grpc::PointId) -> Result<PointId, Status> {
    Ok(PointId::Uuid(uuid_of(id)?.parse().map_err(internal)?))
}

fn grpc_id(id: &PointId) -> grpc::PointId {
    let uuid = match id {
        PointId::Uuid(uuid) => uuid.to_string(),
        PointId::NumId(n) => n.to_string(),
    };
    grpc::PointId {
        point_id_options: Some(grpc::point_id::PointIdOptions::Uuid(uuid)),
    }
}

fn grpc_payload(payload: Option<Payload>) -> HashMap<String, grpc::Value> {
    match payload {
        Some(payload) => GrpcPayload::from(payload.0).into(),
        None => HashMap::new(),
    }
}

fn json_payload(payload: HashMap<String, grpc::Value>) -> Map<String, Value> {
    GrpcPayload::from(payload).into()
}

fn wants_payload(selector: Option<&grpc::WithPayloadSelector>) -> WithPayloadInterface {
    use grpc::with_payload_selector::SelectorOptions;
    match selector.and_then(|s| s.selector_options.as_ref()) {
        Some(SelectorOptions::Enable(enabled)) => WithPayloadInterface::Bool(*enabled),
        Some(SelectorOptions::Include(include)) => WithPayloadInterface::Fields(
            include
                .fields
                .iter()
                .map(|f| f.parse::<JsonPath>().unwrap())
                .collect(),
        ),
        _ => WithPayloadInterface::Bool(false),
    }
}

fn wants_dense(selector: Option<&grpc::WithVectorsSelector>) -> bool {
    use grpc::with_vectors_selector::SelectorOptions;
    match selector.and_then(|s| s.selector_options.as_ref()) {
        Some(SelectorOptions::Include(include)) => include.names.iter().any(|n| n == DENSE),
        Some(SelectorOptions::Enable(enabled)) => *enabled,
        None => false,
    }
}

fn grpc_vectors(dense: Option<Vec<f32>>) -> Option<grpc::VectorsOutput> {
    let dense = dense?;
    Some(grpc::VectorsOutput {
        vectors_options: Some(grpc::vectors_output::VectorsOptions::Vectors(
            grpc::NamedVectorsOutput {
                vectors: HashMap::from([(
                    DENSE.to_owned(),
                    grpc::VectorOutput {
                        vector: Some(grpc::vector_output::Vector::Dense(grpc::DenseVector {
                            data: dense,
                        })),
                        ..Default::default()
                    },
                )]),
            },
        )),
    })
}

fn edge_vectors(vectors: Option<grpc::Vectors>) -> Result<Vectors, Status> {
    use grpc::vector::Vector as Kind;
    let Some(grpc::vectors::VectorsOptions::Vectors(named)) =
        vectors.and_then(|v| v.vectors_options)
    else {
        return Err(Status::invalid_argument("named vectors expected"));
    };
    let mut out = Vec::new();
    for (name, vector) in named.vectors {
        let vector = match vector.vector {
            Some(Kind::Dense(dense)) => Vector::new_dense(dense.data),
            Some(Kind::Sparse(sparse)) => Vector::from(SparseVector {
                indices: sparse.indices,
                values: sparse.values,
            }),
            other => return Err(Status::invalid_argument(format!("vector {other:?}"))),
        };
        out.push((name, vector));
    }
    Ok(Vectors::new_named(out))
}

fn count(shard: &EdgeShard, filter: Option<Filter>) -> Result<usize, Status> {
    shard
        .count(CountRequest {
            filter,
            exact: true,
        })
        .map_err(internal)
}

fn apply(shard: &EdgeShard, operation: UpdateOperation) -> Result<(), Status> {
    shard.update(operation).map_err(internal)
}

fn done() -> Reply<grpc::PointsOperationResponse> {
    Ok(Response::new(grpc::PointsOperationResponse {
        result: Some(grpc::UpdateResult {
            operation_id: Some(0),
            status: grpc::UpdateStatus::Completed as i32,
        }),
        ..Default::default()
    }))
}

fn run_query(
    collection: &Collection,
    query: grpc::QueryPoints,
) -> Result<Vec<grpc::ScoredPoint>, Status> {
    use grpc::query::Variant;
    use grpc::vector_input::Variant as Input;
    let Some(Variant::Nearest(input)) = query.query.and_then(|q| q.variant) else {
        return Err(Status::unimplemented("only nearest queries"));
    };
    let vector = match input.variant {
        Some(Input::Dense(dense)) => VectorInternal::Dense(dense.data),
        Some(Input::Sparse(sparse)) => VectorInternal::Sparse(SparseVector {
            indices: sparse.indices,
            values: sparse.values,
        }),
        other => return Err(Status::unimplemented(format!("input {other:?}"))),
    };
    let using = query.using.unwrap_or_default();
    if using != DENSE && using != SPARSE {
        return Err(Status::invalid_argument(format!("vector {using}")));
    }
    let filter = edge_filter(query.filter.as_ref())?
        .ok_or_else(|| Status::invalid_argument("mnemo always filters"))?;
    let with_payload = !matches!(
        wants_payload(query.with_payload.as_ref()),
        WithPayloadInterface::Bool(false)
    );
    let points = collection
        .shard
        .query(leg_query(
            vector,
            &using,
            filter,
            query.limit.unwrap_or(10) as usize,
            with_payload,
            wants_dense(query.with_vectors.as_ref()),
        ))
        .map_err(internal)?;
    Ok(points
        .into_iter()
        .map(|point| grpc::ScoredPoint {
            id: Some(grpc_id(&point.id)),
            payload: grpc_payload(point.payload),
            score: point.score,
            vectors: grpc_vectors(dense_of(point.vector)),
            ..Default::default()
        })
        .collect())
}

// ------------------------------------------------------------ services

macro_rules! unimplemented_rpcs {
    ($($name:ident($request:ident) -> $response:ident;)*) => {
        $(
            fn $name<'life0, 'async_trait>(
                &'life0 self,
                _request: Request<grpc::$request>,
            ) -> BoxedReply<'async_trait, grpc::$response>
            where
                'life0: 'async_trait,
                Self: 'async_trait,
            {
                Box::pin(async { Err(Status::unimplemented(stringify!($name))) })
            }
        )*
    };
}

impl Points for FakeQdrant {
    fn upsert<'life0, 'async_trait>(
        &'life0 self,
        request: Request<grpc::UpsertPoints>,
    ) -> BoxedReply<'async_trait, grpc::PointsOperationResponse>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(async move {
            let request = request.into_inner();
            let collection = self.collection(&request.collection_name)?;
            let mut records = Vec::new();
            for point in request.points {
                let id = point
                    .id
                    .as_ref()
                    .ok_or_else(|| Status::invalid_argument("id"))?;
                // update_filter: an existing point is replaced only when it
                // matches; a new point is inserted regardless.
                if let Some(update_filter) = &request.update_filter {
                    let exists = count(
                        &collection.shard,
                        edge_filter(Some(&grpc::Filter {
                            must: vec![grpc::Condition {
                                condition_one_of: Some(grpc::condition::ConditionOneOf::HasId(
                                    grpc::HasIdCondition {
                                        has_id: vec![id.clone()],
                                    },
                                )),
                            }],
                            ..Default::default()
                        }))?,
                    )? > 0;
                    let mut only_this = update_filter.clone();
                    only_this.must.push(grpc::Condition {
                        condition_one_of: Some(grpc::condition::ConditionOneOf::HasId(
                            grpc::HasIdCondition {
                                has_id: vec![id.clone()],
                            },
                        )),
                    });
                    if exists && count(&collection.shard, edge_filter(Some(&only_this))?)? == 0 {
                        continue;
                    }
                }
                records.push(
                    PointStruct::new(
                        edge_id(id)?,
                        edge_vectors(point.vectors)?,
                        Value::Object(json_payload(point.payload)),
                    )
                    .into(),
                );
            }
            apply(
                &collection.shard,
                UpdateOperation::PointOperation(PointOperations::UpsertPoints(
                    PointInsertOperations::PointsList(records),
                )),
            )?;
            done()
        })
    }

    fn delete<'life0, 'async_trait>(
        &'life0 self,
        request: Request<grpc::DeletePoints>,
    ) -> BoxedReply<'async_trait, grpc::PointsOperationResponse>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(async move {
            let request = request.into_inner();
            let collection = self.collection(&request.collection_name)?;
            let Some(grpc::points_selector::PointsSelectorOneOf::Filter(filter)) =
                request.points.and_then(|p| p.points_selector_one_of)
            else {
                return Err(Status::unimplemented("delete by ids"));
            };
            let filter = edge_filter(Some(&filter))?.unwrap();
            apply(
                &collection.shard,
                UpdateOperation::PointOperation(PointOperations::DeletePointsByFilter(filter)),
            )?;
            done()
        })
    }

    fn get<'life0, 'async_trait>(
        &'life0 self,
        request: Request<grpc::GetPoints>,
    ) -> BoxedReply<'async_trait, grpc::GetResponse>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(async move {
            let request = request.into_inner();
            let collection = self.collection(&request.collection_name)?;
            let ids = request
                .ids
                .iter()
                .map(edge_id)
                .collect::<Result<Vec<_>, _>>()?;
            let records = collection
                .shard
                .retrieve(
                    &ids,
                    Some(wants_payload(request.with_payload.as_ref())),
                    Some(WithVector::Bool(false)),
                )
                .map_err(internal)?;
            Ok(Response::new(grpc::GetResponse {
                result: records
                    .into_iter()
                    .map(|record| grpc::RetrievedPoint {
                        id: Some(grpc_id(&record.id)),
                        payload: grpc_payload(record.payload),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }))
        })
    }

    fn overwrite_payload<'life0, 'async_trait>(
        &'life0 self,
        request: Request<grpc::SetPayloadPoints>,
    ) -> BoxedReply<'async_trait, grpc::PointsOperationResponse>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(async move {
            let request = request.into_inner();
            let collection = self.collection(&request.collection_name)?;
            let Some(grpc::points_selector::PointsSelectorOneOf::Filter(filter)) = request
                .points_selector
                .and_then(|p| p.points_selector_one_of)
            else {
                return Err(Status::unimplemented("overwrite by ids"));
            };
            apply(
                &collection.shard,
                UpdateOperation::PayloadOperation(PayloadOps::OverwritePayload(SetPayloadOp {
                    payload: Payload(json_payload(request.payload)),
                    points: None,
                    filter: edge_filter(Some(&filter))?,
                    key: None,
                })),
            )?;
            done()
        })
    }

    fn create_field_index<'life0, 'async_trait>(
        &'life0 self,
        request: Request<grpc::CreateFieldIndexCollection>,
    ) -> BoxedReply<'async_trait, grpc::PointsOperationResponse>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        use grpc::payload_index_params::IndexParams;
        Box::pin(async move {
            let request = request.into_inner();
            let collection = self.collection(&request.collection_name)?;
            let params = request.field_index_params.and_then(|p| p.index_params);
            let schema = match params {
                Some(IndexParams::KeywordIndexParams(p)) => {
                    json!({"type": "keyword", "is_tenant": p.is_tenant.unwrap_or(false)})
                }
                Some(IndexParams::IntegerIndexParams(p)) => json!({
                    "type": "integer",
                    "lookup": p.lookup.unwrap_or(true),
                    "range": p.range.unwrap_or(true),
                }),
                Some(IndexParams::FloatIndexParams(_)) => json!({"type": "float"}),
                other => return Err(Status::unimplemented(format!("index {other:?}"))),
            };
            let field_schema: PayloadFieldSchema =
                serde_json::from_value(schema).map_err(internal)?;
            apply(
                &collection.shard,
                UpdateOperation::FieldIndexOperation(FieldIndexOperations::CreateIndex(
                    CreateIndex {
                        field_name: request
                            .field_name
                            .parse()
                            .map_err(|_| Status::invalid_argument("field"))?,
                        field_schema: Some(field_schema),
                    },
                )),
            )?;
            done()
        })
    }

    fn scroll<'life0, 'async_trait>(
        &'life0 self,
        request: Request<grpc::ScrollPoints>,
    ) -> BoxedReply<'async_trait, grpc::ScrollResponse>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(async move {
            let request = request.into_inner();
            let collection = self.collection(&request.collection_name)?;
            let with_dense = wants_dense(request.with_vectors.as_ref());
            let (records, _) = collection
                .shard
                .scroll(ScrollRequest {
                    offset: None,
                    limit: Some(request.limit.unwrap_or(10) as usize),
                    filter: edge_filter(request.filter.as_ref())?,
                    with_payload: Some(wants_payload(request.with_payload.as_ref())),
                    with_vector: crate::edge::with_vector(with_dense),
                    order_by: None,
                })
                .map_err(internal)?;
            Ok(Response::new(grpc::ScrollResponse {
                result: records
                    .into_iter()
                    .map(|record| grpc::RetrievedPoint {
                        id: Some(grpc_id(&record.id)),
                        payload: grpc_payload(record.payload),
                        vectors: grpc_vectors(dense_of(record.vector)),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }))
        })
    }

    fn count<'life0, 'async_trait>(
        &'life0 self,
        request: Request<grpc::CountPoints>,
    ) -> BoxedReply<'async_trait, grpc::CountResponse>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(async move {
            let request = request.into_inner();
            let collection = self.collection(&request.collection_name)?;
            let n = count(&collection.shard, edge_filter(request.filter.as_ref())?)?;
            Ok(Response::new(grpc::CountResponse {
                result: Some(grpc::CountResult { count: n as u64 }),
                ..Default::default()
            }))
        })
    }

    fn query<'life0, 'async_trait>(
        &'life0 self,
        request: Request<grpc::QueryPoints>,
    ) -> BoxedReply<'async_trait, grpc::QueryResponse>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(async move {
            let request = request.into_inner();
            let collection = self.collection(&request.collection_name)?;
            Ok(Response::new(grpc::QueryResponse {
                result: run_query(&collection, request)?,
                ..Default::default()
            }))
        })
    }

    fn query_batch<'life0, 'async_trait>(
        &'life0 self,
        request: Request<grpc::QueryBatchPoints>,
    ) -> BoxedReply<'async_trait, grpc::QueryBatchResponse>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(async move {
            let request = request.into_inner();
            let collection = self.collection(&request.collection_name)?;
            let mut result = Vec::new();
            for query in request.query_points {
                result.push(grpc::BatchResult {
                    result: run_query(&collection, query)?,
                });
            }
            Ok(Response::new(grpc::QueryBatchResponse {
                result,
                ..Default::default()
            }))
        })
    }

    unimplemented_rpcs! {
        update_vectors(UpdatePointVectors) -> PointsOperationResponse;
        delete_vectors(DeletePointVectors) -> PointsOperationResponse;
        set_payload(SetPayloadPoints) -> PointsOperationResponse;
        delete_payload(DeletePayloadPoints) -> PointsOperationResponse;
        clear_payload(ClearPayloadPoints) -> PointsOperationResponse;
        delete_field_index(DeleteFieldIndexCollection) -> PointsOperationResponse;
        create_vector_name(CreateVectorNameRequest) -> PointsOperationResponse;
        delete_vector_name(DeleteVectorNameRequest) -> PointsOperationResponse;
        search(SearchPoints) -> SearchResponse;
        search_batch(SearchBatchPoints) -> SearchBatchResponse;
        search_groups(SearchPointGroups) -> SearchGroupsResponse;
        recommend(RecommendPoints) -> RecommendResponse;
        recommend_batch(RecommendBatchPoints) -> RecommendBatchResponse;
        recommend_groups(RecommendPointGroups) -> RecommendGroupsResponse;
        discover(DiscoverPoints) -> DiscoverResponse;
        discover_batch(DiscoverBatchPoints) -> DiscoverBatchResponse;
        update_batch(UpdateBatchPoints) -> UpdateBatchResponse;
        query_groups(QueryPointGroups) -> QueryGroupsResponse;
        facet(FacetCounts) -> FacetResponse;
        search_matrix_pairs(SearchMatrixPoints) -> SearchMatrixPairsResponse;
        search_matrix_offsets(SearchMatrixPoints) -> SearchMatrixOffsetsResponse;
    }
}

impl Collections for FakeQdrant {
    fn get<'life0, 'async_trait>(
        &'life0 self,
        request: Request<grpc::GetCollectionInfoRequest>,
    ) -> BoxedReply<'async_trait, grpc::GetCollectionInfoResponse>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(async move {
            let collection = self.collection(&request.into_inner().collection_name)?;
            let created = collection.created.clone();
            Ok(Response::new(grpc::GetCollectionInfoResponse {
                result: Some(grpc::CollectionInfo {
                    config: Some(grpc::CollectionConfig {
                        params: Some(grpc::CollectionParams {
                            vectors_config: created.vectors_config,
                            sparse_vectors_config: created.sparse_vectors_config,
                            ..Default::default()
                        }),
                        metadata: created.metadata,
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            }))
        })
    }

    fn create<'life0, 'async_trait>(
        &'life0 self,
        request: Request<grpc::CreateCollection>,
    ) -> BoxedReply<'async_trait, grpc::CollectionOperationResponse>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(async move {
            let created = request.into_inner();
            let mut collections = self.collections.lock().unwrap();
            if collections.contains_key(&created.collection_name) {
                return Err(Status::already_exists("collection exists"));
            }
            let dimension = match created
                .vectors_config
                .as_ref()
                .and_then(|c| c.config.as_ref())
            {
                Some(grpc::vectors_config::Config::ParamsMap(map)) => map
                    .map
                    .get(DENSE)
                    .map(|p| p.size as usize)
                    .ok_or_else(|| Status::invalid_argument("no dense vector"))?,
                _ => return Err(Status::invalid_argument("named vectors expected")),
            };
            let dir = tempfile::tempdir().map_err(internal)?;
            let shard = EdgeShard::new(dir.path(), shard_config(dimension)).map_err(internal)?;
            collections.insert(
                created.collection_name.clone(),
                Arc::new(Collection {
                    shard,
                    created,
                    _dir: dir,
                }),
            );
            Ok(Response::new(grpc::CollectionOperationResponse {
                result: true,
                ..Default::default()
            }))
        })
    }

    fn delete<'life0, 'async_trait>(
        &'life0 self,
        request: Request<grpc::DeleteCollection>,
    ) -> BoxedReply<'async_trait, grpc::CollectionOperationResponse>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(async move {
            let name = request.into_inner().collection_name;
            let removed = self.collections.lock().unwrap().remove(&name).is_some();
            Ok(Response::new(grpc::CollectionOperationResponse {
                result: removed,
                ..Default::default()
            }))
        })
    }

    fn collection_exists<'life0, 'async_trait>(
        &'life0 self,
        request: Request<grpc::CollectionExistsRequest>,
    ) -> BoxedReply<'async_trait, grpc::CollectionExistsResponse>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(async move {
            let name = request.into_inner().collection_name;
            let exists = self.collections.lock().unwrap().contains_key(&name);
            Ok(Response::new(grpc::CollectionExistsResponse {
                result: Some(grpc::CollectionExists { exists }),
                ..Default::default()
            }))
        })
    }

    fn list<'life0, 'async_trait>(
        &'life0 self,
        _request: Request<grpc::ListCollectionsRequest>,
    ) -> BoxedReply<'async_trait, grpc::ListCollectionsResponse>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(async move {
            let collections = self
                .collections
                .lock()
                .unwrap()
                .keys()
                .map(|name| grpc::CollectionDescription { name: name.clone() })
                .collect();
            Ok(Response::new(grpc::ListCollectionsResponse {
                collections,
                ..Default::default()
            }))
        })
    }

    unimplemented_rpcs! {
        update(UpdateCollection) -> CollectionOperationResponse;
        update_aliases(ChangeAliases) -> CollectionOperationResponse;
        list_collection_aliases(ListCollectionAliasesRequest) -> ListAliasesResponse;
        list_aliases(ListAliasesRequest) -> ListAliasesResponse;
        collection_cluster_info(CollectionClusterInfoRequest) -> CollectionClusterInfoResponse;
        update_collection_cluster_setup(UpdateCollectionClusterSetupRequest) -> UpdateCollectionClusterSetupResponse;
        create_shard_key(CreateShardKeyRequest) -> CreateShardKeyResponse;
        delete_shard_key(DeleteShardKeyRequest) -> DeleteShardKeyResponse;
        list_shard_keys(ListShardKeysRequest) -> ListShardKeysResponse;
    }
}

impl QdrantService for FakeQdrant {
    fn health_check<'life0, 'async_trait>(
        &'life0 self,
        _request: Request<grpc::HealthCheckRequest>,
    ) -> BoxedReply<'async_trait, grpc::HealthCheckReply>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(async {
            Ok(Response::new(grpc::HealthCheckReply {
                title: "fake qdrant (qdrant-edge)".into(),
                version: "1.20.0".into(),
                ..Default::default()
            }))
        })
    }
}

#[cfg(test)]
mod contract {
    //! The whole contract suite, through gRPC, against the stand-in.
    use std::sync::Arc;

    use super::start;
    use crate::{QdrantSettings, QdrantVectorIndex, VectorIndex};

    const DIMENSION: usize = 16;

    async fn fresh_server() -> QdrantSettings {
        let address = start().await;
        QdrantSettings::new(format!("http://{address}"))
    }

    async fn connect(settings: Arc<QdrantSettings>) -> Arc<dyn VectorIndex> {
        Arc::new(
            QdrantVectorIndex::connect(&settings, "fake-space__16", DIMENSION)
                .await
                .unwrap(),
        )
    }

    crate::vector_index_contract_tests!(setup: fresh_server(), open: connect);

    #[tokio::test]
    async fn ping_and_a_dimension_change_are_answered() {
        let settings = fresh_server().await;
        let index = QdrantVectorIndex::connect(&settings, "space__16", DIMENSION)
            .await
            .unwrap();
        index.ping().await.unwrap();
        let error = QdrantVectorIndex::connect(&settings, "space__16", DIMENSION * 2)
            .await
            .unwrap_err();
        assert_eq!(error.code(), "dimension_mismatch");
        index.drop_collection().await.unwrap();
        QdrantVectorIndex::connect(&settings, "space__16", DIMENSION * 2)
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn only_the_connect_that_made_the_collection_says_so() {
        let settings = fresh_server().await;
        let first = QdrantVectorIndex::connect(&settings, "new__16", DIMENSION)
            .await
            .unwrap();
        assert!(first.created_collection());
        let again = QdrantVectorIndex::connect(&settings, "new__16", DIMENSION)
            .await
            .unwrap();
        assert!(!again.created_collection());
    }

    #[tokio::test]
    async fn spaces_lists_the_collections_under_the_prefix() {
        let mut settings = fresh_server().await;
        settings.collection_prefix = "prod-".into();
        assert!(QdrantVectorIndex::spaces(&settings)
            .await
            .unwrap()
            .is_empty());
        for space in ["b__16", "a__16"] {
            QdrantVectorIndex::connect(&settings, space, DIMENSION)
                .await
                .unwrap();
        }
        let mut other = settings.clone();
        other.collection_prefix = "test-".into();
        QdrantVectorIndex::connect(&other, "c__16", DIMENSION)
            .await
            .unwrap();
        assert_eq!(
            QdrantVectorIndex::spaces(&settings).await.unwrap(),
            ["a__16", "b__16"]
        );
    }

    #[tokio::test]
    async fn drop_space_deletes_only_that_space_and_says_whether_it_was_there() {
        let settings = fresh_server().await;
        for space in ["old__16", "p2_old__16"] {
            QdrantVectorIndex::connect(&settings, space, DIMENSION)
                .await
                .unwrap();
        }
        assert!(QdrantVectorIndex::drop_space(&settings, "old__16")
            .await
            .unwrap());
        assert_eq!(
            QdrantVectorIndex::spaces(&settings).await.unwrap(),
            ["p2_old__16"]
        );
        assert!(!QdrantVectorIndex::drop_space(&settings, "old__16")
            .await
            .unwrap());
    }
}
