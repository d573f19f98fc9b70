//! The ingest service: the write side of the API. It authenticates,
//! validates, scrubs PII by tenant policy, seals subject content and appends
//! events in one transaction, then answers. Nothing slow (embedding, LLM,
//! consolidation) happens here: those follow from the log via the bus.
//!
//! Invariant: PII is scrubbed before an event is appended; every stored
//! piece of subject text went through [`scrub::Scrubbers`].

pub mod error;
pub mod handlers;
mod input;
pub mod review;
pub mod scrub;
pub mod write;

use std::sync::Arc;

use actix_web::web;
use mnemo_config::Limits;
use mnemo_event_store::sealed::SealedLog;
use mnemo_http::CountedLog;
use mnemo_telemetry::Metrics;

pub use error::{InputError, WriteError};
pub use scrub::Scrubbers;

/// What the ingest handlers need.
pub struct IngestState {
    pub log: SealedLog,
    pub scrubbers: Scrubbers,
    pub limits: Limits,
    pub metrics: Arc<Metrics>,
}

impl IngestState {
    /// The log to append through: it counts what it appends.
    pub fn events(&self) -> CountedLog<'_> {
        CountedLog::new(&self.log, &self.metrics)
    }
}

/// The routes this service serves, for the OpenAPI coverage test.
pub const ROUTES: &[(&str, &str)] = &[
    ("POST", "/v1/subjects/{subject}/messages"),
    ("POST", "/v1/subjects/{subject}/memories"),
    ("PATCH", "/v1/memories/{id}"),
    ("DELETE", "/v1/memories/{id}"),
    ("DELETE", "/v1/subjects/{subject}"),
    ("POST", "/v1/subjects/{subject}/consolidate"),
    ("POST", "/v1/review/{id}"),
];

pub fn configure(state: Arc<IngestState>) -> impl Fn(&mut web::ServiceConfig) + Clone {
    move |cfg: &mut web::ServiceConfig| {
        cfg.app_data(web::Data::from(state.clone()))
            .route(
                "/v1/subjects/{subject}/messages",
                web::post().to(handlers::post_messages),
            )
            .route(
                "/v1/subjects/{subject}/memories",
                web::post().to(handlers::create_memory),
            )
            .route(
                "/v1/memories/{id}",
                web::patch().to(handlers::revise_memory),
            )
            .route(
                "/v1/memories/{id}",
                web::delete().to(handlers::delete_memory),
            )
            .route(
                "/v1/subjects/{subject}",
                web::delete().to(handlers::erase_subject),
            )
            .route(
                "/v1/subjects/{subject}/consolidate",
                web::post().to(handlers::request_consolidation),
            )
            .route("/v1/review/{id}", web::post().to(handlers::resolve_review));
    }
}
