//! The retriever: keeps the projections of memory events (the read model
//! now; the vector index next) and serves reads: a memory, a subject's
//! memories, a memory's history, the subject export, the tenant audit log
//! and erasure receipts, the tenant's subjects, and what a subject's
//! memories were at an instant and how they changed (`asof`, from the log).
//!
//! A single memory and its history are read from the log itself (streams
//! are short), so they are consistent the moment a write returns; lists come
//! from the read model and trail the log by the relay's lag.

pub mod access;
pub mod asof;
pub mod context;
pub mod cues;
pub mod episodes;
pub mod error;
pub mod handlers;
pub mod projection;
pub mod ranking;
pub mod read;
pub mod reindex;
pub mod report;
pub mod review;
pub mod search;

use std::sync::Arc;

use actix_web::web;
use mnemo_config::Policies;
use mnemo_domain::consolidation::ConsolidationPolicy;
use mnemo_embed::Embedder;
use mnemo_event_store::sealed::SealedLog;
use mnemo_http::CountedLog;
use mnemo_read_model::MemoryReadModel;
use mnemo_telemetry::Metrics;
use mnemo_vector_index::VectorIndex;
use ranking::RankingParams;

pub use error::{ReadError, SearchError};
pub use projection::MemoryProjection;

pub struct RetrieverState {
    pub log: SealedLog,
    pub read_model: Arc<dyn MemoryReadModel>,
    pub metrics: Arc<Metrics>,
    pub embedder: Arc<dyn Embedder>,
    pub index: Arc<dyn VectorIndex>,
    /// Where searches leave their access signals (published off the
    /// request path).
    pub access: access::AccessSignals,
    pub ranking: RankingParams,
    /// Reciprocal-rank-fusion constant for hybrid queries.
    pub rrf_k: u32,
    /// Token prices for the consolidation cost report.
    pub llm_pricing: report::LlmPricing,
    /// The tenants' consolidation policies: their thresholds are what the
    /// review statistics are read against.
    pub consolidation: Arc<Policies<ConsolidationPolicy>>,
}

impl RetrieverState {
    /// The log to append through: it counts what it appends.
    pub fn events(&self) -> CountedLog<'_> {
        CountedLog::new(&self.log, &self.metrics)
    }
}

pub const ROUTES: &[(&str, &str)] = &[
    ("GET", "/v1/memories/{id}"),
    ("GET", "/v1/memories/{id}/history"),
    ("GET", "/v1/subjects/{subject}/memories"),
    ("GET", "/v1/subjects/{subject}/changes"),
    ("GET", "/v1/subjects"),
    ("GET", "/v1/subjects/{subject}/export"),
    ("GET", "/v1/audit"),
    ("GET", "/v1/consolidation/report"),
    ("GET", "/v1/erasures/{id}"),
    ("POST", "/v1/subjects/{subject}/search"),
    ("POST", "/v1/subjects/{subject}/context"),
    ("GET", "/v1/subjects/{subject}/profile"),
    ("GET", "/v1/review"),
    ("GET", "/v1/review/stats"),
];

pub fn configure(state: Arc<RetrieverState>) -> impl Fn(&mut web::ServiceConfig) + Clone {
    move |cfg: &mut web::ServiceConfig| {
        cfg.app_data(web::Data::from(state.clone()))
            .route("/v1/memories/{id}", web::get().to(handlers::get_memory))
            .route(
                "/v1/memories/{id}/history",
                web::get().to(handlers::history),
            )
            .route(
                "/v1/subjects/{subject}/memories",
                web::get().to(handlers::list_memories),
            )
            .route(
                "/v1/subjects/{subject}/changes",
                web::get().to(handlers::subject_changes),
            )
            .route("/v1/subjects", web::get().to(handlers::list_subjects))
            .route(
                "/v1/subjects/{subject}/export",
                web::get().to(handlers::export_subject),
            )
            .route("/v1/audit", web::get().to(handlers::audit))
            .route(
                "/v1/consolidation/report",
                web::get().to(handlers::consolidation_report),
            )
            .route(
                "/v1/erasures/{id}",
                web::get().to(handlers::erasure_receipt),
            )
            .route(
                "/v1/subjects/{subject}/search",
                web::post().to(search::search),
            )
            .route(
                "/v1/subjects/{subject}/context",
                web::post().to(search::context),
            )
            .route(
                "/v1/subjects/{subject}/profile",
                web::get().to(handlers::get_profile),
            )
            .route("/v1/review", web::get().to(handlers::list_reviews))
            .route("/v1/review/stats", web::get().to(handlers::review_stats));
    }
}
