//! The application a process runs: its roles' parts built from settings,
//! the HTTP listener bound (port 0 in tests), and `run`, which serves HTTP
//! beside the relay and the consumers until one of them stops.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::Server;
use actix_web::middleware::from_fn;
use actix_web::{web, App, HttpServer};
use anyhow::Context;
use mnemo_bus::in_process::InProcessBus;
use mnemo_bus::{
    run_consumer_until, run_record_consumer_until, topics, Bus, EventHandler, RecordHandler, Relay,
};
use mnemo_config::Settings;
use mnemo_consolidator::llm::LlmStrategy;
use mnemo_consolidator::pipeline::Pipeline;
use mnemo_consolidator::rules::RuleStrategy;
use mnemo_consolidator::strategy::ConsolidationStrategy;
use mnemo_consolidator::Consolidator;
use mnemo_embed::{Embedder, EmbedderStatus};
use mnemo_event_store::sealed::SealedLog;
use mnemo_forgetter::legacy::LegacyLogRedaction;
use mnemo_forgetter::retention::Retention;
use mnemo_forgetter::targets::{PipelineStateErasure, ReadModelErasure, VectorIndexErasure};
use mnemo_forgetter::usage::AccessSignals;
use mnemo_forgetter::{BusCopies, ErasureExecutor};
use mnemo_http::backlog::{Backlog, BacklogLimits};
use mnemo_http::health::{self, Health};
use mnemo_http::{extractor_configs, json_error_bodies, limit_request_headers, observe_requests};
use mnemo_ingest::{IngestState, Scrubbers};
use mnemo_retriever::episodes::EpisodeProjection;
use mnemo_retriever::ranking::RankingParams;
use mnemo_retriever::{MemoryProjection, RetrieverState};
use mnemo_telemetry::Metrics;
use mnemo_vector_index::VectorIndex;
use tokio::task::JoinSet;

use crate::backlog::BufferFigures;
use crate::roles::{Group, Roles};
use crate::stores::{load_master_key, Stores};
use crate::vectors::{build_embedder_with_status, open_index, pipeline_embedder};
use crate::verifier::build_verifier;

/// Held (an exclusive advisory lock) by the server for its whole run, so
/// two servers never share a data dir and tools know whether one runs.
pub const SERVE_LOCK_FILE: &str = "serve.lock";

/// Every route a process running every role serves, for the OpenAPI
/// coverage test.
pub fn routes() -> Vec<(&'static str, &'static str)> {
    let mut routes = vec![("GET", "/openapi.json")];
    routes.extend_from_slice(mnemo_http::docs_ui::ROUTES);
    routes.extend_from_slice(mnemo_http::console::ROUTES);
    routes.extend_from_slice(health::ROUTES);
    routes.extend_from_slice(mnemo_ingest::ROUTES);
    routes.extend_from_slice(mnemo_retriever::ROUTES);
    routes.extend_from_slice(mnemo_mcp::ROUTES);
    routes
}

/// The embedder and the index it fills: only roles that search or write
/// vectors build them ([`Roles::needs_vectors`]).
#[derive(Clone)]
struct Vectors {
    /// Search's embedder.
    embedder: Arc<dyn Embedder>,
    /// The consolidator's and the projections' ([`pipeline_embedder`]).
    pipeline: Arc<dyn Embedder>,
    /// Which embedder that is, for `/readyz`.
    status: EmbedderStatus,
    index: Arc<dyn VectorIndex>,
    /// The embedded engine behind `index`, optimised when idle.
    edge: Option<Arc<mnemo_vector_index::EdgeVectorIndex>>,
}

pub struct Application {
    /// Released when the process exits, however it exits.
    _serve_lock: std::fs::File,
    port: u16,
    server: Server,
    roles: Roles,
    relay: Arc<Relay>,
    bus: Arc<dyn Bus>,
    /// The same bus when it is the in-process one, which deletes what
    /// every consumer group has handled (`prune_bus`).
    in_process_bus: Option<InProcessBus>,
    /// Where that bus keeps copies of the log's events: the erasure
    /// receipt's `bus` step.
    bus_copies: BusCopies,
    log: SealedLog,
    stores: Arc<Stores>,
    vectors: Option<Vectors>,
    consolidator: Option<Arc<Consolidator>>,
    retention: Option<Arc<Retention>>,
    forget_interval: Duration,
}

impl Application {
    /// The embedded server: every role in one process.
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        Self::build_roles(settings, Roles::ALL).await
    }

    /// A process running `roles` (one service of the scale-out deployment,
    /// or all of them). Each role's parts are built only when it runs.
    pub async fn build_roles(settings: Settings, roles: Roles) -> anyhow::Result<Self> {
        let serve_lock = lock_data_dir(&settings, roles)?;
        let master = Arc::new(load_master_key(&settings)?);
        let metrics = Arc::new(Metrics::new().context("cannot register metrics")?);
        let stores = Arc::new(Stores::open(&settings, master.clone()).await?);
        let log = SealedLog::new(stores.store.clone(), stores.cipher.clone());
        let (bus, bus_copies, in_process_bus) = open_bus(&settings, &stores).await?;
        let relay = Arc::new(Relay::new(
            stores.store.clone(),
            bus.clone(),
            stores.checkpoints.clone(),
        ));
        let vectors = match roles.needs_vectors() {
            true => {
                let (embedder, status) = build_embedder_with_status(&settings).await?;
                let opened = open_index(&settings, embedder.clone(), &log).await?;
                Some(Vectors {
                    pipeline: pipeline_embedder(&embedder, &status),
                    embedder,
                    status,
                    index: opened.index,
                    edge: opened.edge,
                })
            }
            false => None,
        };
        let consolidator = match (&vectors, roles.consolidator) {
            (Some(vectors), true) => Some(Arc::new(build_consolidator(
                &settings, &log, &stores, vectors, &metrics,
            )?)),
            _ => None,
        };
        let retention = roles.forgetter.then(|| {
            Arc::new(Retention {
                log: log.clone(),
                read_model: stores.read_model.clone(),
                usage: stores.usage.clone(),
                policies: Arc::new(settings.forgetting.policies.clone()),
            })
        });
        let backlog = Arc::new(backlog(&settings, &roles, &bus, &relay, &stores));
        // The handlers' statements go to the connections kept for them
        // (`Stores::requests`), not to the pipeline's.
        let request_log = SealedLog::new(stores.requests.store.clone(), stores.cipher.clone());
        let api = Api {
            ingest: roles.ingest.then(|| {
                Arc::new(IngestState {
                    log: request_log.clone(),
                    scrubbers: Scrubbers::new(settings.pii.clone(), master.clone()),
                    limits: settings.limits,
                    metrics: metrics.clone(),
                    backlog: backlog.clone(),
                    quotas: mnemo_ingest::quota::Quotas::new(settings.quotas.clone()),
                    read_model: stores.requests.read_model.clone(),
                })
            }),
            retriever: match (&vectors, roles.retriever) {
                (Some(vectors), true) => Some(Arc::new(retriever_state(
                    &settings,
                    &request_log,
                    &stores,
                    vectors,
                    &bus,
                    &metrics,
                ))),
                _ => None,
            },
        };
        let health = Health {
            database: stores.clone(),
            backlog,
            embedder: vectors.as_ref().map(|v| v.status.clone()),
            index: vectors
                .as_ref()
                .and_then(|v| v.edge.clone())
                .map(|edge| Arc::new(crate::vectors::EdgeStatus(edge)) as _),
        };
        let (server, port) = serve_http(&settings, api, health, metrics)?;
        Ok(Application {
            _serve_lock: serve_lock,
            port,
            server,
            roles,
            relay,
            bus,
            in_process_bus,
            bus_copies,
            log,
            stores,
            vectors,
            consolidator,
            retention,
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

    /// The vector index, for tools and tests that inspect it directly;
    /// None in a process that runs only ingest.
    pub fn vector_index(&self) -> Option<Arc<dyn VectorIndex>> {
        self.vectors.as_ref().map(|v| v.index.clone())
    }

    /// The consolidator, for tools (`mnemo eval consolidation`) and tests
    /// that drive it directly; None unless the process consolidates.
    pub fn consolidator(&self) -> Option<Arc<Consolidator>> {
        self.consolidator.clone()
    }

    /// Runs the HTTP server beside the relay and the consumers until the
    /// server stops (SIGINT/SIGTERM), and says which part stopped.
    pub async fn run(self) -> anyhow::Result<()> {
        // Every background part in one of two sets: the first to stop ends
        // the run, and the rest are stopped (and dropped) before `run`
        // returns, so nothing keeps the data dir's files open after it.
        let mut parts = Parts::new();
        if self.roles.relay {
            let relay = self.relay.clone();
            parts.spawn("relay", async move { relay.run().await });
        }
        if let (Some(vectors), true) = (&self.vectors, self.roles.retriever) {
            self.spawn_retriever(&mut parts, vectors);
        }
        if let (Some(vectors), Some(retention)) = (&self.vectors, &self.retention) {
            self.spawn_forgetter(&mut parts, vectors, retention.clone());
        }
        if let Some(consolidator) = &self.consolidator {
            self.spawn_consolidator(&mut parts, consolidator.clone());
        }
        if let Some(bus) = &self.in_process_bus {
            parts.spawn("bus prune", prune_bus(bus.clone()));
        }

        let outcome = tokio::select! {
            result = self.server => {
                tracing::info!("http server stopped");
                result.context("http server failed")
            }
            stopped = parts.stopped() => Err(anyhow::anyhow!(stopped)),
        };
        parts.stop().await;
        if let Some(consolidator) = &self.consolidator {
            consolidator.stop().await;
        }
        if let Some(vectors) = &self.vectors {
            if let Err(error) = vectors.index.flush().await {
                tracing::warn!(error = %error, "vector index flush at shutdown failed");
            }
        }
        // A clean shutdown leaves no write half done: SQLite transactions are
        // atomic, and consumers resume from their committed offsets.
        self.stores.close().await;
        outcome
    }

    fn spawn_retriever(&self, parts: &mut Parts, vectors: &Vectors) {
        let projection = Arc::new(MemoryProjection::new(
            self.log.clone(),
            self.stores.read_model.clone(),
            vectors.pipeline.clone(),
            vectors.index.clone(),
        ));
        parts.consume(
            "retriever projection",
            &self.bus,
            Group::MEMORY_PROJECTION,
            Handler::Events(projection),
        );
        let episodes = Arc::new(EpisodeProjection::new(
            self.log.clone(),
            vectors.pipeline.clone(),
            vectors.index.clone(),
        ));
        parts.consume(
            "episode projection",
            &self.bus,
            Group::EPISODE_PROJECTION,
            Handler::Events(episodes),
        );
        if let Some(edge) = &vectors.edge {
            parts.spawn(
                "index optimiser",
                crate::vectors::optimize_when_idle(edge.clone()),
            );
        }
    }

    fn spawn_forgetter(&self, parts: &mut Parts, vectors: &Vectors, retention: Arc<Retention>) {
        let erasure = Arc::new(ErasureExecutor::new(
            self.log.clone(),
            self.bus_copies.clone(),
            vec![
                Arc::new(LegacyLogRedaction {
                    store: self.log.store().clone(),
                    postgres: self.stores.sqlite_pool().is_none(),
                    // The in-process bus lives in the SQLite file.
                    bus: self.stores.sqlite_pool(),
                }),
                Arc::new(VectorIndexErasure(vectors.index.clone())),
                Arc::new(PipelineStateErasure {
                    buffer: self.stores.buffer.clone(),
                    usage: self.stores.usage.clone(),
                }),
                // Last: on SQLite it also truncates the WAL, after every delete.
                Arc::new(ReadModelErasure {
                    read_model: self.stores.read_model.clone(),
                    sqlite: self.stores.sqlite_pool(),
                }),
            ],
        ));
        parts.consume(
            "forgetter",
            &self.bus,
            Group::ERASURE,
            Handler::Events(erasure),
        );
        parts.consume(
            "access signal consumer",
            &self.bus,
            Group::ACCESS,
            Handler::Records(Arc::new(AccessSignals {
                usage: self.stores.usage.clone(),
                cipher: self.log.cipher().clone(),
            })),
        );
        parts.spawn("retention pass", retention.run_every(self.forget_interval));
    }

    fn spawn_consolidator(&self, parts: &mut Parts, consolidator: Arc<Consolidator>) {
        parts.consume(
            "consolidator",
            &self.bus,
            Group::CONSOLIDATOR,
            Handler::Events(consolidator.clone()),
        );
        let tick = (consolidator.shortest_idle_timeout() / 4)
            .clamp(Duration::from_millis(50), Duration::from_secs(30));
        parts.spawn("consolidation sweeper", consolidator.run_idle_sweeper(tick));
    }
}

/// How long a stopping process waits for its consumers to finish the run
/// under way and commit; past it they are dropped, and what they handled
/// since their last commit is delivered again at the next start.
const CONSUMERS_STOP_WITHIN: Duration = Duration::from_secs(10);

/// What a consumer group hands its records to.
enum Handler {
    Events(Arc<dyn EventHandler>),
    Records(Arc<dyn RecordHandler>),
}

/// A process's background parts: the consumer groups, which are asked to
/// stop and commit what they handled, and the rest (relay, sweepers,
/// pruning), which are dropped.
struct Parts {
    consumers: JoinSet<String>,
    others: JoinSet<String>,
    stop: tokio::sync::watch::Sender<bool>,
}

impl Parts {
    fn new() -> Self {
        Parts {
            consumers: JoinSet::new(),
            others: JoinSet::new(),
            stop: tokio::sync::watch::channel(false).0,
        }
    }

    fn spawn<T: std::fmt::Debug + Send + 'static>(
        &mut self,
        name: &'static str,
        part: impl std::future::Future<Output = T> + Send + 'static,
    ) {
        self.others.spawn(named(name, part));
    }

    fn consume(&mut self, name: &'static str, bus: &Arc<dyn Bus>, group: Group, handler: Handler) {
        let mut stop = self.stop.subscribe();
        // A dropped sender stops the consumers too.
        let stopped = async move {
            let _ = stop.wait_for(|stop| *stop).await;
        };
        let (bus, options) = (bus.clone(), group.options());
        match handler {
            Handler::Events(handler) => self.consumers.spawn(named(
                name,
                run_consumer_until(bus, options, handler, stopped),
            )),
            Handler::Records(handler) => self.consumers.spawn(named(
                name,
                run_record_consumer_until(bus, options, handler, stopped),
            )),
        };
    }

    /// The first part to stop, and why (a part stops only when it fails,
    /// until [`Parts::stop`]). Pending while there are none.
    async fn stopped(&mut self) -> String {
        let first = tokio::select! {
            Some(stopped) = self.consumers.join_next(), if !self.consumers.is_empty() => stopped,
            Some(stopped) = self.others.join_next(), if !self.others.is_empty() => stopped,
            else => std::future::pending().await,
        };
        first.unwrap_or_else(|e| format!("a background part failed: {e}"))
    }

    /// Asks the consumers to finish their run and commit, waits for them
    /// (at most [`CONSUMERS_STOP_WITHIN`]), then stops everything left.
    async fn stop(mut self) {
        let _ = self.stop.send(true);
        let consumers = &mut self.consumers;
        let finished = tokio::time::timeout(CONSUMERS_STOP_WITHIN, async {
            while consumers.join_next().await.is_some() {}
        })
        .await;
        if finished.is_err() {
            tracing::warn!(
                within = ?CONSUMERS_STOP_WITHIN,
                "consumers did not stop in time; what they handled since their last commit is delivered again at the next start"
            );
        }
        self.consumers.shutdown().await;
        self.others.shutdown().await;
    }
}

/// Creates the data dir and, when the process keeps a store there, takes
/// its lock (see `data_dir_lock`).
fn lock_data_dir(settings: &Settings, roles: Roles) -> anyhow::Result<std::fs::File> {
    std::fs::create_dir_all(&settings.data_dir)
        .with_context(|| format!("cannot create data dir {}", settings.data_dir.display()))?;
    // Processes whose every store is shared (PostgreSQL, Kafka and, if
    // they open a vector index, Qdrant) keep nothing in the data dir and
    // may share it.
    if crate::data_dir_lock::embedded_stores(settings, roles).is_empty() {
        return Ok(crate::data_dir_lock::open(&settings.data_dir)?);
    }
    match crate::data_dir_lock::try_take(&settings.data_dir, roles.program())? {
        Ok(lock) => Ok(lock),
        Err(holder) => Err(crate::data_dir_lock::refusal(settings, roles, &holder)),
    }
}

/// How often the in-process bus deletes the records every consumer group
/// has handled.
const BUS_PRUNE_EVERY: Duration = Duration::from_secs(60);

/// Deletes, every [`BUS_PRUNE_EVERY`], the in-process bus's records that
/// every group reading their topic has committed. The readers are every
/// group of every role, whichever roles this process runs: a group that
/// has never committed keeps its topics whole.
async fn prune_bus(bus: InProcessBus) {
    let groups = Roles::ALL.groups();
    let readers: Vec<(&str, &[&str])> = groups.iter().map(|g| (g.name, g.topics)).collect();
    loop {
        tokio::time::sleep(BUS_PRUNE_EVERY).await;
        match bus.prune(&readers).await {
            Ok(deleted) => tracing::debug!(deleted, "bus records every group handled deleted"),
            Err(error) => tracing::warn!(error = %error, "bus prune failed; next try in a minute"),
        }
    }
}

/// Kafka when brokers are configured, else the in-process bus (also
/// returned as itself, for `prune_bus`); and where it keeps copies of the
/// log's events.
async fn open_bus(
    settings: &Settings,
    stores: &Stores,
) -> anyhow::Result<(Arc<dyn Bus>, BusCopies, Option<InProcessBus>)> {
    let Some(kafka) = &settings.kafka else {
        let bus = stores.in_process_bus(settings).await?;
        return Ok((Arc::new(bus.clone()), BusCopies::InProcess, Some(bus)));
    };
    let config = mnemo_bus::kafka::KafkaConfig::new(kafka.brokers.clone());
    // The topics a log event (or its dead letter) is published to; access
    // signals are not log events and hold no content.
    let copies = BusCopies::Kafka {
        topics: [
            topics::MESSAGES,
            topics::MEMORY_EVENTS,
            topics::SUBJECT_EVENTS,
            topics::DEAD_LETTERS,
        ]
        .map(|topic| config.qualified(topic))
        .to_vec(),
    };
    // Creates only what is missing: a no-op where the operator created the
    // topics (with their replication) beforehand.
    mnemo_bus::kafka::create_all_topics(&config, kafka.partitions, 1)
        .await
        .context("cannot create the Kafka topics")?;
    Ok((
        Arc::new(mnemo_bus::kafka::KafkaBus::new(config).context("cannot set up Kafka")?),
        copies,
        None,
    ))
}

/// The consolidator with its strategy: the LLM when one is configured
/// (the rules behind it as the fallback), else the rules.
fn build_consolidator(
    settings: &Settings,
    log: &SealedLog,
    stores: &Stores,
    vectors: &Vectors,
    metrics: &Metrics,
) -> anyhow::Result<Consolidator> {
    let rules: Arc<dyn ConsolidationStrategy> = Arc::new(RuleStrategy::new());
    let (strategy, fallback) = match &settings.llm {
        Some(llm) => {
            let strategy = LlmStrategy::from_settings(llm).context("cannot set up the LLM")?;
            tracing::info!(model = %llm.chat.model, prompts = %strategy.prompt_version().unwrap_or_default(), "LLM consolidation on; the rules are its fallback");
            (
                Arc::new(strategy) as Arc<dyn ConsolidationStrategy>,
                Some(rules),
            )
        }
        None => (rules, None),
    };
    let workers = settings
        .consolidation_workers
        .unwrap_or_else(mnemo_consolidator::default_workers);
    Ok(Consolidator::with_workers(
        Pipeline {
            log: log.clone(),
            buffer: stores.buffer.clone(),
            strategy,
            fallback,
            budget: Arc::default(),
            metrics: Some(metrics.clone()),
            embedder: vectors.pipeline.clone(),
            index: vectors.index.clone(),
            read_model: stores.read_model.clone(),
            policies: Arc::new(settings.consolidation.clone()),
            delivered: Default::default(),
        },
        workers,
    ))
}

fn retriever_state(
    settings: &Settings,
    log: &SealedLog,
    stores: &Stores,
    vectors: &Vectors,
    bus: &Arc<dyn Bus>,
    metrics: &Arc<Metrics>,
) -> RetrieverState {
    RetrieverState {
        log: log.clone(),
        read_model: stores.requests.read_model.clone(),
        metrics: metrics.clone(),
        embedder: vectors.embedder.clone(),
        index: vectors.index.clone(),
        access: mnemo_retriever::access::AccessSignals::start(bus.clone()),
        ranking: ranking_params(&settings.retrieval),
        rrf_k: settings
            .retrieval
            .rrf_k
            .unwrap_or(mnemo_vector_index::DEFAULT_RRF_K),
        llm_pricing: settings
            .llm
            .as_ref()
            .map(|llm| mnemo_retriever::report::LlmPricing {
                input_per_million: llm.pricing.input_per_million,
                output_per_million: llm.pricing.output_per_million,
            })
            .unwrap_or_default(),
        consolidation: Arc::new(settings.consolidation.clone()),
    }
}

/// The file's ranking constants over the retriever's defaults.
fn ranking_params(retrieval: &mnemo_config::RetrievalSettings) -> RankingParams {
    let default = RankingParams::default();
    RankingParams {
        relevance_weight: retrieval
            .relevance_weight
            .unwrap_or(default.relevance_weight),
        recency_weight: retrieval.recency_weight.unwrap_or(default.recency_weight),
        importance_weight: retrieval
            .importance_weight
            .unwrap_or(default.importance_weight),
        recency_half_life_days: retrieval
            .recency_half_life_days
            .unwrap_or(default.recency_half_life_days),
        mmr_lambda: retrieval.mmr_lambda.unwrap_or(default.mmr_lambda),
        dated_boost: retrieval.dated_boost.unwrap_or(default.dated_boost),
        speaker_boost: retrieval.speaker_boost.unwrap_or(default.speaker_boost),
        on_date_boost: retrieval.on_date_boost.unwrap_or(default.on_date_boost),
        neighbour_weight: retrieval
            .neighbour_weight
            .unwrap_or(default.neighbour_weight),
        question_weight: retrieval.question_weight.unwrap_or(default.question_weight),
    }
}

/// The HTTP APIs of the roles this process runs.
struct Api {
    ingest: Option<Arc<IngestState>>,
    retriever: Option<Arc<RetrieverState>>,
}

/// Binds the listener and starts the HTTP server: the roles' APIs, the
/// OpenAPI document and the health endpoints.
/// What the process watches of the backlog: its own consumer groups, and
/// where it consolidates or ingests, the consolidation buffer and the
/// consolidator's group (ingest refuses messages past the ceiling even in
/// a process that does not consolidate).
fn backlog(
    settings: &Settings,
    roles: &Roles,
    bus: &Arc<dyn Bus>,
    relay: &Relay,
    stores: &Stores,
) -> Backlog {
    let mut groups = roles.groups();
    let watches_buffer = roles.consolidator || roles.ingest;
    if watches_buffer && !groups.contains(&Group::CONSOLIDATOR) {
        groups.push(Group::CONSOLIDATOR);
    }
    let groups = groups
        .iter()
        .map(|g| {
            (
                g.name.to_owned(),
                g.topics.iter().map(|t| (*t).to_owned()).collect(),
            )
        })
        .collect();
    let buffer = watches_buffer.then(|| {
        Arc::new(BufferFigures(stores.buffer.clone())) as Arc<dyn mnemo_http::backlog::BufferProbe>
    });
    Backlog::new(
        bus.clone(),
        relay.stats(),
        groups,
        buffer,
        BacklogLimits {
            degraded_records: settings.backlog.degraded_records,
            degraded_age: settings.backlog.degraded_age,
            ceiling: settings.backlog.ceiling_messages,
            slowdown: settings.backlog.slowdown,
            min_free_disk: settings.backlog.min_free_disk_bytes,
        },
    )
    // Every process keeps its lock there, and an embedded one its
    // database and index: what fills first when the disk does.
    .watch_disk(&settings.data_dir)
}

fn serve_http(
    settings: &Settings,
    api: Api,
    health: Health,
    metrics: Arc<Metrics>,
) -> anyhow::Result<(Server, u16)> {
    let verifier = web::Data::new(Arc::new(build_verifier(settings)?));
    let listener = TcpListener::bind(settings.listen)
        .with_context(|| format!("cannot listen on {}", settings.listen))?;
    let address = listener.local_addr()?;
    let port = address.port();
    let max_body = settings.limits.max_body_bytes;
    // The MCP tools call the REST API, so /mcp is served only where both
    // halves of it are (the embedded server), over this server's own
    // address: a tool call is then an ordinary API request.
    let mcp = match (&api.ingest, &api.retriever) {
        (Some(_), Some(_)) => {
            let own_api = mnemo_mcp::ApiClient::new(&loopback_url(address))
                .context("cannot set up the MCP endpoint")?;
            Some(mnemo_mcp::McpEndpoint::new(own_api, max_body))
        }
        _ => None,
    };
    let metrics = web::Data::new(metrics);
    let health = health::configure(health);
    let server = HttpServer::new(move || {
        App::new()
            .wrap(json_error_bodies())
            // Inside the span and the metrics, so a 431 is counted too.
            .wrap(from_fn(limit_request_headers))
            .wrap(from_fn(observe_requests))
            .app_data(verifier.clone())
            .app_data(metrics.clone())
            .configure(extractor_configs(max_body))
            .configure(|cfg| {
                if let Some(ingest) = &api.ingest {
                    mnemo_ingest::configure(ingest.clone())(cfg);
                }
                if let Some(retriever) = &api.retriever {
                    mnemo_retriever::configure(retriever.clone())(cfg);
                }
                if let Some(mcp) = &mcp {
                    mnemo_mcp::configure(mcp.clone())(cfg);
                }
            })
            .configure(mnemo_http::openapi::configure)
            .configure(health.clone())
            .default_service(web::to(health::route_not_found))
    })
    .workers(2)
    .shutdown_timeout(10)
    .listen(listener)?
    .run();
    Ok((server, port))
}

/// Where this server reaches itself: its bound address, or loopback when
/// it listens on every interface.
fn loopback_url(address: SocketAddr) -> String {
    let ip = match address.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    format!("http://{}", SocketAddr::new(ip, address.port()))
}

/// A background part's future, reporting how it stopped.
async fn named<T: std::fmt::Debug>(
    name: &'static str,
    part: impl std::future::Future<Output = T>,
) -> String {
    let result = part.await;
    format!("{name} stopped: {result:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_reaches_itself_on_loopback_when_bound_to_every_interface() {
        let cases = [
            ("0.0.0.0:8080", "http://127.0.0.1:8080"),
            ("[::]:8080", "http://[::1]:8080"),
            ("127.0.0.1:18200", "http://127.0.0.1:18200"),
            ("10.1.2.3:80", "http://10.1.2.3:80"),
        ];
        for (bound, url) in cases {
            assert_eq!(loopback_url(bound.parse().unwrap()), url, "{bound}");
        }
    }
}
