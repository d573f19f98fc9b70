//! Builds the embedded application from settings: opens the database,
//! loads or creates the keys, wires the ports to their embedded adapters,
//! binds the HTTP listener (port 0 in tests) and runs the server beside the
//! relay and the consumers.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::Server;
use actix_web::middleware::from_fn;
use actix_web::{web, App, HttpResponse, HttpServer};
use anyhow::Context;
use async_trait::async_trait;
use mnemo_auth::{JwtAlgorithm, PublicKey, Verifier, VerifierConfig};
use mnemo_bus::in_process::InProcessBus;
use mnemo_bus::relay::{RelayStats, SqliteCheckpointStore};
use mnemo_bus::{
    run_consumer, run_record_consumer, topics, Bus, CheckpointStore, ConsumerOptions, Relay,
};
use mnemo_config::Settings;
use mnemo_consolidator::buffer::{MessageBuffer, SqliteMessageBuffer};
use mnemo_consolidator::llm::LlmStrategy;
use mnemo_consolidator::pipeline::Pipeline;
use mnemo_consolidator::rules::RuleStrategy;
use mnemo_consolidator::strategy::ConsolidationStrategy;
use mnemo_consolidator::Consolidator;
use mnemo_crypto::{MasterKey, SqliteSubjectKeyStore, SubjectCipher, SubjectKeyStore};
use mnemo_domain::events::ErasureStep;
use mnemo_domain::{SubjectId, TenantId};
use mnemo_embed::Embedder;
use mnemo_event_store::sealed::SealedLog;
use mnemo_event_store::sqlite::{self, SqliteEventStore};
use mnemo_event_store::EventStore;
use mnemo_forgetter::retention::Retention;
use mnemo_forgetter::usage::{AccessSignals, SqliteUsageStore, UsageStore};
use mnemo_forgetter::{ErasureExecutor, ErasureTarget};
use mnemo_http::{extractor_configs, json_error_bodies, observe_requests, ApiError};
use mnemo_ingest::{IngestState, Scrubbers};
use mnemo_read_model::sqlite::SqliteMemoryReadModel;
use mnemo_read_model::MemoryReadModel;
use mnemo_retriever::{MemoryProjection, RetrieverState};
use mnemo_telemetry::Metrics;
use mnemo_vector_index::{EdgeVectorIndex, VectorIndex};
use secrecy::ExposeSecret;
use sqlx::SqlitePool;
use tokio::task::JoinSet;

use crate::collections::{Collections, ReplayMarker};
use crate::secrets::load_or_create_dev_secret;

/// Every route the embedded server serves, for the OpenAPI coverage test.
pub fn routes() -> Vec<(&'static str, &'static str)> {
    let mut routes = vec![
        ("GET", "/healthz"),
        ("GET", "/readyz"),
        ("GET", "/metrics"),
        ("GET", "/openapi.json"),
        ("GET", "/docs"),
    ];
    routes.extend_from_slice(mnemo_ingest::ROUTES);
    routes.extend_from_slice(mnemo_retriever::ROUTES);
    routes
}

/// The erasure step for the vector index: the subject's points.
struct VectorIndexErasure(Arc<dyn VectorIndex>);

#[async_trait]
impl ErasureTarget for VectorIndexErasure {
    async fn erase_subject(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<ErasureStep, String> {
        let deleted = self
            .0
            .delete_subject(tenant, subject)
            .await
            .map_err(|e| e.to_string())?;
        self.0.flush().await.map_err(|e| e.to_string())?;
        Ok(ErasureStep {
            store: "vector_index".to_owned(),
            action: "points_deleted".to_owned(),
            count: deleted,
            note: Some(
                "the points are out of every query at once; qdrant-edge keeps their bytes in its \
                 write-ahead log and segments until the index is rebuilt"
                    .to_owned(),
            ),
        })
    }
}

/// The erasure step for the consolidator's buffer and the usage counts:
/// message ids and access counts of the subject.
struct PipelineStateErasure {
    buffer: Arc<dyn MessageBuffer>,
    usage: Arc<dyn UsageStore>,
}

#[async_trait]
impl ErasureTarget for PipelineStateErasure {
    async fn erase_subject(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<ErasureStep, String> {
        let buffered = self
            .buffer
            .delete_subject(tenant, subject)
            .await
            .map_err(|e| e.to_string())?;
        let usage = self
            .usage
            .delete_subject(tenant, subject)
            .await
            .map_err(|e| e.to_string())?;
        Ok(ErasureStep {
            store: "pipeline_state".to_owned(),
            action: "rows_deleted".to_owned(),
            count: buffered + usage,
            note: None,
        })
    }
}

/// The embedder the settings ask for (see `mnemo-embed`'s `build`).
pub async fn build_embedder(settings: &Settings) -> anyhow::Result<Arc<dyn Embedder>> {
    let embedder = mnemo_embed::build(&settings.embedding)
        .await
        .context("cannot set up the embedder")?;
    tracing::info!(model = %embedder.space().model, dimension = embedder.space().dimension, "embedder ready");
    Ok(embedder)
}

/// Opens the collection the server serves for the embedder's space (one
/// collection per space, so switching models never mixes vectors): takes
/// over a collection `mnemo reindex` built, or replays the log into a new
/// one when the model changed without a reindex, before anything is served
/// from it (see `collections`). Stale collections are deleted afterwards.
pub async fn open_vector_index(
    settings: &Settings,
    embedder: Arc<dyn Embedder>,
    log: &SealedLog,
) -> anyhow::Result<Arc<EdgeVectorIndex>> {
    let space = embedder.space().clone();
    let collections = Collections::new(settings.data_dir.join("vectors"));
    let opening = collections.plan(&space.collection_name())?;
    if opening.catch_up_from.is_some() && collections.marker(&opening.name)?.is_none() {
        // Marked unfinished before the first point lands, so a crash
        // mid-build is caught up again at the next start.
        collections.write_marker(&opening.name, &ReplayMarker::started(&space))?;
    }
    let dir = collections.path(&opening.name);
    let index = Arc::new(
        EdgeVectorIndex::open(&dir, space.dimension)
            .with_context(|| format!("cannot open the vector index {}", dir.display()))?,
    );
    collections.set_active(&opening.name)?;
    if let Some(from) = opening.catch_up_from {
        tracing::info!(collection = %opening.name, from, "bringing the vector collection up to the log's head before serving");
        // One flush at the end instead of one per point: the marker stays
        // until then, so a crash replays again instead of losing points.
        index.set_durable_writes(false);
        let replayed =
            mnemo_retriever::reindex::catch_up(log, embedder.clone(), index.clone(), from)
                .await
                .context("cannot bring the vector collection up to date")?;
        index.flush().await?;
        index.set_durable_writes(true);
        collections.remove_marker(&opening.name)?;
        tracing::info!(
            collection = %opening.name,
            position = replayed.position,
            memories = replayed.memories,
            points = replayed.points,
            "vector collection is current"
        );
    }
    for removed in collections.remove_stale(&opening.name)? {
        tracing::info!(collection = %removed, "removed a vector collection no longer served");
    }
    Ok(index)
}

/// The erasure step for the read model: delete the subject's rows. On SQLite
/// it then empties the write-ahead log so no copy of the deleted pages
/// survives in it; on PostgreSQL the rows' bytes leave the disk with vacuum
/// (see docs/postgres.md).
struct ReadModelErasure {
    read_model: Arc<dyn MemoryReadModel>,
    sqlite: Option<SqlitePool>,
}

#[async_trait]
impl ErasureTarget for ReadModelErasure {
    async fn erase_subject(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<ErasureStep, String> {
        let deleted = self
            .read_model
            .delete_subject(tenant, subject)
            .await
            .map_err(|e| e.to_string())?;
        if let Some(pool) = &self.sqlite {
            sqlite::checkpoint_truncate(pool)
                .await
                .map_err(|e| e.to_string())?;
        }
        Ok(ErasureStep {
            store: "memory_read_model".to_owned(),
            action: "rows_deleted".to_owned(),
            count: deleted,
            note: None,
        })
    }
}

/// Builds the JWT verifier: configured keys, or the dev secret of the data
/// dir when nothing is configured.
pub fn build_verifier(settings: &Settings) -> anyhow::Result<Verifier> {
    let auth = &settings.auth;
    let hs256_secret: Option<Vec<u8>> = match &auth.hs256_secret {
        Some(secret) => Some(secret.expose_secret().as_bytes().to_vec()),
        None if auth.public_keys.is_empty() => {
            let path = settings.dev_secret_file();
            let (secret, created) = load_or_create_dev_secret(&path)?;
            if created {
                tracing::warn!(path = %path.display(), "generated a development JWT secret; configure auth keys for production");
            }
            Some(secret)
        }
        None => None,
    };
    let public_keys = auth
        .public_keys
        .iter()
        .map(|key| {
            let pem = std::fs::read_to_string(&key.pem_file)
                .with_context(|| format!("cannot read {}", key.pem_file.display()))?;
            Ok(PublicKey {
                algorithm: key.algorithm,
                pem,
                kid: key.kid.clone(),
            })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let allowed_algorithms: Vec<JwtAlgorithm> = auth
        .allowed_algorithms
        .iter()
        .copied()
        .filter(|a| *a != JwtAlgorithm::HS256 || hs256_secret.is_some())
        .collect();
    Verifier::new(VerifierConfig {
        hs256_secret: hs256_secret.map(Into::into),
        public_keys,
        allowed_algorithms,
        issuer: Some(auth.issuer.clone()),
        audience: Some(auth.audience.clone()),
        leeway_seconds: auth.leeway_seconds,
    })
    .context("invalid auth settings")
}

/// The stores behind the ports: SQLite in the data dir (embedded) or
/// PostgreSQL (`MNEMO_DATABASE_URL`, scale-out).
pub struct Stores {
    pub store: Arc<dyn EventStore>,
    pub keys: Arc<dyn SubjectKeyStore>,
    pub checkpoints: Arc<dyn CheckpointStore>,
    pub read_model: Arc<dyn MemoryReadModel>,
    pub buffer: Arc<dyn MessageBuffer>,
    pub usage: Arc<dyn UsageStore>,
    backend: Backend,
}

enum Backend {
    Sqlite(SqlitePool),
    Postgres {
        tenant: mnemo_pg::TenantPool,
        system: mnemo_pg::SystemPool,
    },
}

impl Stores {
    pub async fn open(settings: &Settings, master: Arc<MasterKey>) -> anyhow::Result<Self> {
        match &settings.database {
            None => {
                let pool = sqlite::connect(&settings.database_file())
                    .await
                    .context("cannot open the database")?;
                Ok(Stores {
                    store: Arc::new(SqliteEventStore::new(pool.clone()).await?),
                    keys: Arc::new(SqliteSubjectKeyStore::new(pool.clone(), master)),
                    checkpoints: Arc::new(SqliteCheckpointStore::new(pool.clone())),
                    read_model: Arc::new(SqliteMemoryReadModel::new(pool.clone())),
                    buffer: Arc::new(SqliteMessageBuffer::new(pool.clone())),
                    usage: Arc::new(SqliteUsageStore::new(pool.clone())),
                    backend: Backend::Sqlite(pool),
                })
            }
            Some(database) => {
                let app_url = database.url.expose_secret();
                let system_url = match &database.system_url {
                    Some(url) => url.expose_secret().to_owned(),
                    None => with_user(app_url, mnemo_pg::SYSTEM_ROLE)?,
                };
                let tenant = mnemo_pg::TenantPool::connect(app_url, database.max_connections)
                    .await
                    .context("cannot connect to PostgreSQL as the application role")?;
                // The relay's notification listener holds one connection.
                let system = mnemo_pg::SystemPool::connect(&system_url, 4)
                    .await
                    .context("cannot connect to PostgreSQL as the system role")?;
                Ok(Stores {
                    store: Arc::new(mnemo_event_store::postgres::PostgresEventStore::new(
                        tenant.clone(),
                        system.clone(),
                    )),
                    keys: Arc::new(mnemo_crypto::PostgresSubjectKeyStore::new(
                        tenant.clone(),
                        master,
                    )),
                    checkpoints: Arc::new(mnemo_bus::postgres::PostgresCheckpointStore::new(
                        system.clone(),
                    )),
                    read_model: Arc::new(mnemo_read_model::postgres::PostgresMemoryReadModel::new(
                        tenant.clone(),
                        system.clone(),
                    )),
                    buffer: Arc::new(mnemo_consolidator::buffer::PostgresMessageBuffer::new(
                        tenant.clone(),
                        system.clone(),
                    )),
                    usage: Arc::new(mnemo_forgetter::usage::PostgresUsageStore::new(
                        tenant.clone(),
                    )),
                    backend: Backend::Postgres { tenant, system },
                })
            }
        }
    }

    /// The erasure step for the read model (run last: on SQLite it also
    /// truncates the write-ahead log, after every delete).
    fn read_model_erasure(&self) -> Arc<dyn ErasureTarget> {
        Arc::new(ReadModelErasure {
            read_model: self.read_model.clone(),
            sqlite: match &self.backend {
                Backend::Sqlite(pool) => Some(pool.clone()),
                Backend::Postgres { .. } => None,
            },
        })
    }

    async fn ping(&self) -> Result<(), String> {
        let result = match &self.backend {
            Backend::Sqlite(pool) => sqlx::query("SELECT 1").execute(pool).await.map(|_| ()),
            Backend::Postgres { system, .. } => sqlx::query("SELECT 1")
                .execute(system.pool())
                .await
                .map(|_| ()),
        };
        result.map_err(|e| e.to_string())
    }

    /// The in-process bus keeps its topics in SQLite: the data dir's
    /// database, also when the log is in PostgreSQL (one process only).
    async fn in_process_bus(&self, settings: &Settings) -> anyhow::Result<InProcessBus> {
        let pool = match &self.backend {
            Backend::Sqlite(pool) => pool.clone(),
            Backend::Postgres { .. } => {
                std::fs::create_dir_all(&settings.data_dir)?;
                sqlite::connect(&settings.database_file()).await?
            }
        };
        Ok(InProcessBus::new(pool, settings.bus_partitions))
    }

    pub async fn close(&self) {
        match &self.backend {
            Backend::Sqlite(pool) => pool.close().await,
            Backend::Postgres { tenant, system } => {
                tenant.close().await;
                system.close().await;
            }
        }
    }
}

/// `postgres://app@host/db` → `postgres://mnemo_system@host/db` (same host,
/// database and options; no password: give `MNEMO_DATABASE_SYSTEM_URL`
/// when the system role needs one).
fn with_user(url: &str, user: &str) -> anyhow::Result<String> {
    let (scheme, rest) = url
        .split_once("://")
        .context("the database URL has no scheme")?;
    let host_and_rest = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    Ok(format!("{scheme}://{user}@{host_and_rest}"))
}

/// The event log, opened for a tool running beside (or instead of) the
/// server, with the stores it lives in (close them when done).
pub async fn open_log(settings: &Settings) -> anyhow::Result<(SealedLog, Stores)> {
    let master = Arc::new(load_master_key(settings)?);
    let stores = Stores::open(settings, master).await?;
    let log = SealedLog::new(
        stores.store.clone(),
        Arc::new(SubjectCipher::new(stores.keys.clone())),
    );
    Ok((log, stores))
}

/// Loads the configured master key, or the data dir's (created on first start).
pub fn load_master_key(settings: &Settings) -> anyhow::Result<MasterKey> {
    if let Some(encoded) = &settings.master_key {
        return MasterKey::from_base64(encoded.expose_secret()).context("invalid master key");
    }
    // Processes sharing PostgreSQL must share one key; a key generated per
    // host would make every other host's subject content unreadable.
    anyhow::ensure!(
        settings.database.is_none(),
        "set MNEMO_MASTER_KEY (base64, 32 bytes): services sharing PostgreSQL need one master key"
    );
    let path = settings.master_key_file();
    let (key, created) = MasterKey::load_or_generate(&path)
        .with_context(|| format!("cannot load master key {}", path.display()))?;
    if created {
        tracing::warn!(path = %path.display(), "generated a new master key (mode 0600); back it up: without it no subject content can be read");
    } else {
        tracing::info!(path = %path.display(), key_id = %key.id(), "loaded master key");
    }
    Ok(key)
}

/// Which parts of mnemo a process runs: all of them (`mnemo serve`) or one
/// service of the scale-out deployment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Roles {
    /// The write API (messages, memories, erasure requests).
    pub ingest: bool,
    /// The read API and the projections it reads.
    pub retriever: bool,
    pub consolidator: bool,
    /// Erasure, access signals and the retention pass.
    pub forgetter: bool,
    /// Publishes the log to the bus; runs beside ingest, the writer.
    pub relay: bool,
}

impl Roles {
    pub const ALL: Roles = Roles {
        ingest: true,
        retriever: true,
        consolidator: true,
        forgetter: true,
        relay: true,
    };
    const NONE: Roles = Roles {
        ingest: false,
        retriever: false,
        consolidator: false,
        forgetter: false,
        relay: false,
    };
    pub const INGEST: Roles = Roles {
        ingest: true,
        relay: true,
        ..Roles::NONE
    };
    pub const RETRIEVER: Roles = Roles {
        retriever: true,
        ..Roles::NONE
    };
    pub const CONSOLIDATOR: Roles = Roles {
        consolidator: true,
        ..Roles::NONE
    };
    pub const FORGETTER: Roles = Roles {
        forgetter: true,
        ..Roles::NONE
    };
}

/// The vector index: a Qdrant server when one is configured, else the data
/// dir's qdrant-edge collection (see [`open_vector_index`]).
pub async fn open_index(
    settings: &Settings,
    embedder: Arc<dyn Embedder>,
    log: &SealedLog,
) -> anyhow::Result<Arc<dyn VectorIndex>> {
    let Some(qdrant) = &settings.qdrant else {
        return Ok(open_vector_index(settings, embedder, log).await?);
    };
    let space = embedder.space();
    let index = mnemo_vector_index::QdrantVectorIndex::connect(
        qdrant,
        &space.collection_name(),
        space.dimension,
    )
    .await
    .with_context(|| format!("cannot open the Qdrant collection for {}", space.model))?;
    let index = Arc::new(index);
    if index.created_collection() {
        // A new embedding space: without a replay it would hold none of the
        // memories already in the log (the projection only sees new events).
        // Another process writing meanwhile is harmless: points are whole
        // and replaced by memory id. A crash mid-replay leaves the
        // collection partial: drop it in Qdrant and restart to replay again.
        tracing::info!(collection = %index.collection(), "new Qdrant collection: replaying the log into it");
        let replayed = mnemo_retriever::reindex::catch_up(log, embedder, index.clone(), 0)
            .await
            .context("cannot replay the log into the new Qdrant collection")?;
        tracing::info!(
            memories = replayed.memories,
            points = replayed.points,
            "Qdrant collection is current"
        );
    }
    Ok(index)
}

/// Held (an exclusive advisory lock) by the server for its whole run, so
/// two servers never share a data dir and tools know whether one runs.
pub const SERVE_LOCK_FILE: &str = "serve.lock";

pub struct Application {
    /// Released when the process exits, however it exits.
    _serve_lock: std::fs::File,
    port: u16,
    server: Server,
    relay: Arc<Relay>,
    bus: Arc<dyn Bus>,
    log: SealedLog,
    read_model: Arc<dyn MemoryReadModel>,
    stores: Arc<Stores>,
    roles: Roles,
    embedder: Arc<dyn Embedder>,
    index: Arc<dyn VectorIndex>,
    consolidator: Arc<Consolidator>,
    retention: Arc<Retention>,
    usage: Arc<dyn UsageStore>,
    buffer: Arc<dyn MessageBuffer>,
    forget_interval: Duration,
}

struct Health {
    stores: Arc<Stores>,
    relay_stats: Arc<RelayStats>,
}

async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(serde_json::json!({"status": "ok"}))
}

async fn readyz(health: web::Data<Health>) -> HttpResponse {
    match health.stores.ping().await {
        Ok(_) => HttpResponse::Ok().json(serde_json::json!({
            "status": "ready",
            "relay_lag": health.relay_stats.lag(),
        })),
        Err(error) => {
            tracing::warn!(error = %error, "readiness check failed");
            HttpResponse::ServiceUnavailable()
                .json(ApiError::body("not_ready", "the database is unavailable"))
        }
    }
}

async fn metrics_endpoint(
    metrics: web::Data<Arc<Metrics>>,
    health: web::Data<Health>,
) -> HttpResponse {
    metrics.relay_lag_events.set(health.relay_stats.lag());
    metrics.relay_published_total.set(
        health
            .relay_stats
            .published_total
            .load(std::sync::atomic::Ordering::Relaxed),
    );
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4")
        .body(metrics.render())
}

/// Unknown paths get 404; a known path with another method gets 405.
async fn route_not_found(req: actix_web::HttpRequest) -> Result<HttpResponse, ApiError> {
    if req.match_pattern().is_some() {
        return Err(ApiError::new(
            actix_web::http::StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            format!("{} is not allowed here; see /docs", req.method()),
        ));
    }
    Err(ApiError::not_found(
        "route_not_found",
        "no such endpoint; see /docs",
    ))
}

impl Application {
    /// The embedded server: every role in one process.
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        Self::build_roles(settings, Roles::ALL).await
    }

    /// A process running `roles` (one service of the scale-out deployment,
    /// or all of them).
    pub async fn build_roles(settings: Settings, roles: Roles) -> anyhow::Result<Self> {
        std::fs::create_dir_all(&settings.data_dir)
            .with_context(|| format!("cannot create data dir {}", settings.data_dir.display()))?;
        // The data dir's files (SQLite, qdrant-edge, the in-process bus) are
        // one process's; services sharing PostgreSQL, Kafka and Qdrant keep
        // nothing there and may share it.
        let serve_lock = std::fs::File::create(settings.data_dir.join(SERVE_LOCK_FILE))?;
        if !settings.is_scale_out() {
            serve_lock.try_lock().map_err(|_| {
                anyhow::anyhow!(
                    "another mnemo serve is running on {}",
                    settings.data_dir.display()
                )
            })?;
        }
        let master = Arc::new(load_master_key(&settings)?);
        let verifier = Arc::new(build_verifier(&settings)?);
        let metrics = Arc::new(Metrics::new().context("cannot register metrics")?);

        let stores = Arc::new(Stores::open(&settings, master.clone()).await?);
        let store = stores.store.clone();
        let cipher = Arc::new(SubjectCipher::new(stores.keys.clone()));
        let log = SealedLog::new(store.clone(), cipher);
        let bus: Arc<dyn Bus> = match &settings.kafka {
            Some(kafka) => {
                let config = mnemo_bus::kafka::KafkaConfig::new(kafka.brokers.clone());
                // Creates only what is missing: a no-op where the operator
                // created the topics (with their replication) beforehand.
                mnemo_bus::kafka::create_all_topics(&config, kafka.partitions, 1)
                    .await
                    .context("cannot create the Kafka topics")?;
                Arc::new(mnemo_bus::kafka::KafkaBus::new(config).context("cannot set up Kafka")?)
            }
            None => Arc::new(stores.in_process_bus(&settings).await?),
        };
        let relay = Arc::new(Relay::new(
            store.clone(),
            bus.clone(),
            stores.checkpoints.clone(),
        ));
        let read_model = stores.read_model.clone();
        let embedder = build_embedder(&settings).await?;
        let index = open_index(&settings, embedder.clone(), &log).await?;
        let buffer = stores.buffer.clone();
        let usage = stores.usage.clone();
        let rules: Arc<dyn ConsolidationStrategy> = Arc::new(RuleStrategy::new());
        let (strategy, fallback) = match &settings.llm {
            Some(llm) => {
                let strategy = LlmStrategy::from_settings(llm)
                    .map_err(|e| anyhow::anyhow!("cannot set up the LLM: {e}"))?;
                tracing::info!(model = %llm.chat.model, prompts = %strategy.prompt_version().unwrap_or_default(), "LLM consolidation on; the rules are its fallback");
                (
                    Arc::new(strategy) as Arc<dyn ConsolidationStrategy>,
                    Some(rules),
                )
            }
            None => (rules, None),
        };
        let consolidator = Arc::new(Consolidator::new(Pipeline {
            log: log.clone(),
            buffer: buffer.clone(),
            strategy,
            fallback,
            budget: Arc::default(),
            metrics: Some(metrics.as_ref().clone()),
            embedder: embedder.clone(),
            index: index.clone(),
            read_model: read_model.clone(),
            policies: Arc::new(settings.consolidation.clone()),
        }));
        let retention = Arc::new(Retention {
            log: log.clone(),
            read_model: read_model.clone(),
            usage: usage.clone(),
            policies: Arc::new(settings.forgetting.policies.clone()),
        });

        let ingest = Arc::new(IngestState {
            log: log.clone(),
            scrubbers: Scrubbers::new(settings.pii.clone(), master.clone()),
            limits: settings.limits,
            metrics: metrics.clone(),
        });
        let retriever = Arc::new(RetrieverState {
            log: log.clone(),
            read_model: read_model.clone(),
            metrics: metrics.clone(),
            embedder: embedder.clone(),
            index: index.clone(),
            bus: bus.clone(),
            ranking: Default::default(),
            rrf_k: mnemo_retriever::DEFAULT_RRF_K,
            llm_pricing: settings
                .llm
                .as_ref()
                .map(|llm| mnemo_retriever::report::LlmPricing {
                    input_per_million: llm.pricing.input_per_million,
                    output_per_million: llm.pricing.output_per_million,
                })
                .unwrap_or_default(),
            consolidation: Arc::new(settings.consolidation.clone()),
        });
        let health = web::Data::new(Health {
            stores: stores.clone(),
            relay_stats: relay.stats(),
        });

        let listener = TcpListener::bind(settings.listen)
            .with_context(|| format!("cannot listen on {}", settings.listen))?;
        let port = listener.local_addr()?.port();
        let max_body = settings.limits.max_body_bytes;
        let verifier = web::Data::new(verifier);
        let metrics_data = web::Data::new(metrics.clone());
        let server = HttpServer::new(move || {
            App::new()
                .wrap(json_error_bodies())
                .wrap(from_fn(observe_requests))
                .app_data(verifier.clone())
                .app_data(metrics_data.clone())
                .app_data(health.clone())
                .configure(extractor_configs(max_body))
                .configure(|cfg| {
                    if roles.ingest {
                        mnemo_ingest::configure(ingest.clone())(cfg);
                    }
                    if roles.retriever {
                        mnemo_retriever::configure(retriever.clone())(cfg);
                    }
                })
                .configure(mnemo_http::openapi::configure)
                .route("/healthz", web::get().to(healthz))
                .route("/readyz", web::get().to(readyz))
                .route("/metrics", web::get().to(metrics_endpoint))
                .default_service(web::to(route_not_found))
        })
        .workers(2)
        .shutdown_timeout(10)
        .listen(listener)?
        .run();

        Ok(Application {
            _serve_lock: serve_lock,
            port,
            server,
            relay,
            bus,
            log,
            read_model,
            stores,
            roles,
            embedder,
            index,
            consolidator,
            retention,
            usage,
            buffer,
            forget_interval: settings.forgetting.interval,
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Stops the server gracefully when asked (as SIGTERM does); `run`
    /// then flushes and returns.
    pub fn server_handle(&self) -> actix_web::dev::ServerHandle {
        self.server.handle()
    }

    /// The sealed log, for tools and tests that append as another service
    /// would (e.g. the consolidator's review requests).
    pub fn log(&self) -> SealedLog {
        self.log.clone()
    }

    /// The vector index, for tools and tests that inspect it directly.
    pub fn vector_index(&self) -> Arc<dyn VectorIndex> {
        self.index.clone()
    }

    /// The consolidator, for tools (`mnemo eval consolidation`) and tests
    /// that drive it directly.
    pub fn consolidator(&self) -> Arc<Consolidator> {
        self.consolidator.clone()
    }

    /// Runs the HTTP server beside the relay and the consumers until the
    /// server stops (SIGINT/SIGTERM), and says which part stopped.
    pub async fn run(self) -> anyhow::Result<()> {
        // Every background part in one set: the first to stop ends the run,
        // and the rest are stopped (and dropped) before `run` returns, so
        // nothing keeps the data dir's files open after it.
        let mut parts: JoinSet<String> = JoinSet::new();
        let roles = self.roles;
        if roles.relay {
            let relay = self.relay.clone();
            parts.spawn(named("relay", async move { relay.run().await }));
        }
        if roles.retriever {
            let projection = Arc::new(MemoryProjection::new(
                self.log.clone(),
                self.read_model.clone(),
                self.embedder.clone(),
                self.index.clone(),
            ));
            parts.spawn(named(
                "retriever projection",
                run_consumer(
                    self.bus.clone(),
                    ConsumerOptions::new("retriever.memory-projection", &[topics::MEMORY_EVENTS]),
                    projection,
                ),
            ));
        }
        if roles.forgetter {
            let erasure = Arc::new(ErasureExecutor::new(
                self.log.clone(),
                vec![
                    Arc::new(VectorIndexErasure(self.index.clone())),
                    Arc::new(PipelineStateErasure {
                        buffer: self.buffer.clone(),
                        usage: self.usage.clone(),
                    }),
                    // Last: on SQLite it also truncates the WAL, after every delete.
                    self.stores.read_model_erasure(),
                ],
            ));
            parts.spawn(named(
                "forgetter",
                run_consumer(
                    self.bus.clone(),
                    ConsumerOptions::new("forgetter.erasure", &[topics::SUBJECT_EVENTS]),
                    erasure,
                ),
            ));
            parts.spawn(named(
                "access signal consumer",
                run_record_consumer(
                    self.bus.clone(),
                    ConsumerOptions::new("forgetter.access", &[topics::ACCESS_SIGNALS]),
                    Arc::new(AccessSignals {
                        usage: self.usage.clone(),
                    }),
                ),
            ));
            parts.spawn(named(
                "retention pass",
                self.retention.clone().run_every(self.forget_interval),
            ));
        }
        if roles.consolidator {
            parts.spawn(named(
                "consolidator",
                run_consumer(
                    self.bus.clone(),
                    ConsumerOptions::new("consolidator", &[topics::MESSAGES]),
                    self.consolidator.clone(),
                ),
            ));
            let tick = (self.consolidator.shortest_idle_timeout() / 4)
                .clamp(Duration::from_millis(50), Duration::from_secs(30));
            parts.spawn(named(
                "consolidation sweeper",
                self.consolidator.clone().run_idle_sweeper(tick),
            ));
        }

        let outcome = tokio::select! {
            result = self.server => {
                tracing::info!("http server stopped");
                result.context("http server failed")
            }
            Some(stopped) = parts.join_next(), if !parts.is_empty() => {
                Err(anyhow::anyhow!(stopped.unwrap_or_else(|e| format!("a background part failed: {e}"))))
            }
        };
        // Aborted mid-handler, a consumer has not committed: the record is
        // handled again at the next start (handlers are idempotent).
        parts.shutdown().await;
        if let Err(error) = self.index.flush().await {
            tracing::warn!(error = %error, "vector index flush at shutdown failed");
        }
        // A clean shutdown leaves no write half done: SQLite transactions are
        // atomic, and consumers resume from their committed offsets.
        self.stores.close().await;
        outcome
    }
}

/// A background part's future, reporting how it stopped.
async fn named<T: std::fmt::Debug>(
    name: &'static str,
    part: impl std::future::Future<Output = T>,
) -> String {
    let result = part.await;
    format!("{name} stopped: {result:?}")
}

/// Waits up to `timeout` for the relay to publish everything in the log
/// (used by `mnemo` tools and tests that need read-your-writes on lists).
pub async fn wait_for_relay(stats: &RelayStats, timeout: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + timeout;
    while stats.lag() > 0 {
        if tokio::time::Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    true
}
