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
use mnemo_bus::{run_consumer, topics, Bus, ConsumerOptions, Relay};
use mnemo_config::Settings;
use mnemo_crypto::{MasterKey, SqliteSubjectKeyStore, SubjectCipher};
use mnemo_domain::events::ErasureStep;
use mnemo_domain::{SubjectId, TenantId};
use mnemo_event_store::sealed::SealedLog;
use mnemo_event_store::sqlite::{self, SqliteEventStore};
use mnemo_event_store::EventStore;
use mnemo_forgetter::{ErasureExecutor, ErasureTarget};
use mnemo_http::{extractor_configs, json_error_bodies, observe_requests, ApiError};
use mnemo_ingest::{IngestState, Scrubbers};
use mnemo_read_model::sqlite::SqliteMemoryReadModel;
use mnemo_read_model::MemoryReadModel;
use mnemo_retriever::{MemoryProjection, RetrieverState};
use mnemo_telemetry::Metrics;
use secrecy::ExposeSecret;
use sqlx::SqlitePool;

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

/// The erasure step for the SQLite read model: delete the rows, then empty
/// the write-ahead log so no copy of the deleted pages survives in it.
struct SqliteReadModelErasure {
    read_model: Arc<dyn MemoryReadModel>,
    pool: SqlitePool,
}

#[async_trait]
impl ErasureTarget for SqliteReadModelErasure {
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
        sqlite::checkpoint_truncate(&self.pool)
            .await
            .map_err(|e| e.to_string())?;
        Ok(ErasureStep {
            store: "memory_read_model".to_owned(),
            action: "rows_deleted".to_owned(),
            count: deleted,
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

/// Loads the configured master key, or the data dir's (created on first start).
pub fn load_master_key(settings: &Settings) -> anyhow::Result<MasterKey> {
    if let Some(encoded) = &settings.master_key {
        return MasterKey::from_base64(encoded.expose_secret()).context("invalid master key");
    }
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

pub struct Application {
    port: u16,
    server: Server,
    relay: Arc<Relay>,
    bus: Arc<dyn Bus>,
    log: SealedLog,
    read_model: Arc<dyn MemoryReadModel>,
    pool: SqlitePool,
}

struct Health {
    pool: SqlitePool,
    relay_stats: Arc<RelayStats>,
}

async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(serde_json::json!({"status": "ok"}))
}

async fn readyz(health: web::Data<Health>) -> HttpResponse {
    match sqlx::query("SELECT 1").execute(&health.pool).await {
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
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        std::fs::create_dir_all(&settings.data_dir)
            .with_context(|| format!("cannot create data dir {}", settings.data_dir.display()))?;
        let master = Arc::new(load_master_key(&settings)?);
        let verifier = Arc::new(build_verifier(&settings)?);
        let pool = sqlite::connect(&settings.database_file())
            .await
            .context("cannot open the database")?;
        let metrics = Arc::new(Metrics::new().context("cannot register metrics")?);

        let store: Arc<dyn EventStore> = Arc::new(SqliteEventStore::new(pool.clone()).await?);
        let keys = Arc::new(SqliteSubjectKeyStore::new(pool.clone(), master.clone()));
        let cipher = Arc::new(SubjectCipher::new(keys));
        let log = SealedLog::new(store.clone(), cipher);
        let bus: Arc<dyn Bus> = Arc::new(InProcessBus::new(pool.clone(), settings.bus_partitions));
        let relay = Arc::new(Relay::new(
            store.clone(),
            bus.clone(),
            Arc::new(SqliteCheckpointStore::new(pool.clone())),
        ));
        let read_model: Arc<dyn MemoryReadModel> =
            Arc::new(SqliteMemoryReadModel::new(pool.clone()));

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
        });
        let health = web::Data::new(Health {
            pool: pool.clone(),
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
                .configure(mnemo_ingest::configure(ingest.clone()))
                .configure(mnemo_retriever::configure(retriever.clone()))
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
            port,
            server,
            relay,
            bus,
            log,
            read_model,
            pool,
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Runs the HTTP server beside the relay and the consumers until the
    /// server stops (SIGINT/SIGTERM), and says which part stopped.
    pub async fn run(self) -> anyhow::Result<()> {
        let relay = self.relay.clone();
        let relay_task = tokio::spawn(async move { relay.run().await });

        let projection = Arc::new(MemoryProjection::new(
            self.log.clone(),
            self.read_model.clone(),
        ));
        let projection_task = tokio::spawn(run_consumer(
            self.bus.clone(),
            ConsumerOptions::new("retriever.memory-projection", &[topics::MEMORY_EVENTS]),
            projection,
        ));
        let erasure = Arc::new(ErasureExecutor::new(
            self.log.clone(),
            vec![Arc::new(SqliteReadModelErasure {
                read_model: self.read_model.clone(),
                pool: self.pool.clone(),
            })],
        ));
        let erasure_task = tokio::spawn(run_consumer(
            self.bus.clone(),
            ConsumerOptions::new("forgetter.erasure", &[topics::SUBJECT_EVENTS]),
            erasure,
        ));
        let buffer_task = tokio::spawn(run_consumer(
            self.bus.clone(),
            ConsumerOptions::new("consolidator.buffer", &[topics::MESSAGES]),
            Arc::new(mnemo_consolidator::MessageBuffer::new()),
        ));

        let outcome = tokio::select! {
            result = self.server => {
                tracing::info!("http server stopped");
                result.context("http server failed")
            }
            result = relay_task => Err(anyhow::anyhow!("relay stopped: {result:?}")),
            result = projection_task => Err(anyhow::anyhow!("retriever projection stopped: {result:?}")),
            result = erasure_task => Err(anyhow::anyhow!("forgetter stopped: {result:?}")),
            result = buffer_task => Err(anyhow::anyhow!("consolidator stopped: {result:?}")),
        };
        // A clean shutdown leaves no write half done: SQLite transactions are
        // atomic, and consumers resume from their committed offsets.
        self.pool.close().await;
        outcome
    }
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
