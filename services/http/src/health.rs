//! The operational endpoints every process serves, whatever its roles:
//! liveness (`/healthz`), readiness (`/readyz`: the database answers, and
//! which embedder serves) and
//! the Prometheus metrics (`/metrics`), plus the JSON 404/405 for paths no
//! role serves.
//!
//! Both report the backlog ([`crate::backlog`]): how far behind each
//! consumer group of the process is (`consumer_lag`: a projection's lag is
//! what is posted but not yet searchable) and what waits for
//! consolidation, and the free space of the data dir's disk. Past the
//! configured limits `/readyz` says `degraded`,
//! with the reasons, and still answers 200: search serves what is indexed
//! while the rest catches up.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use async_trait::async_trait;
use mnemo_embed::EmbedderStatus;
use mnemo_telemetry::Metrics;

use crate::backlog::{Backlog, Reading};
use crate::ApiError;

/// Whatever a process must reach to serve: its database.
#[async_trait]
pub trait Readiness: Send + Sync + 'static {
    async fn check(&self) -> Result<(), Box<dyn std::error::Error + Send + Sync>>;
}

/// The embedded vector index of a process, for `/metrics` (a Qdrant
/// server optimises itself and reports its own).
pub trait IndexStatus: Send + Sync + 'static {
    /// How long writes have waited for an optimisation; None when the
    /// index was optimised after the last write.
    fn unoptimized_for(&self) -> Option<std::time::Duration>;
}

/// What the health endpoints read.
pub struct Health {
    pub database: Arc<dyn Readiness>,
    /// The relay, the consumer groups and the consolidation buffer.
    pub backlog: Arc<Backlog>,
    /// The embedder of a process that embeds (None: ingest only). Reported
    /// because `auto` may have fallen back to lexical search, which an
    /// operator should not have to find in the start-up log.
    pub embedder: Option<EmbedderStatus>,
    /// The embedded vector index of a process that has one.
    pub index: Option<Arc<dyn IndexStatus>>,
}

/// Routes `/healthz`, `/readyz` and `/metrics` (the app registers
/// `web::Data<Arc<Metrics>>`).
pub fn configure(health: Health) -> impl FnOnce(&mut web::ServiceConfig) + Clone {
    let health = web::Data::new(health);
    move |cfg| {
        cfg.app_data(health)
            .route("/healthz", web::get().to(healthz))
            .route("/readyz", web::get().to(readyz))
            .route("/metrics", web::get().to(metrics_endpoint));
    }
}

/// The paths [`configure`] serves, for the OpenAPI coverage test.
pub const ROUTES: &[(&str, &str)] = &[("GET", "/healthz"), ("GET", "/readyz"), ("GET", "/metrics")];

async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(serde_json::json!({"status": "ok"}))
}

async fn readyz(health: web::Data<Health>) -> HttpResponse {
    match health.database.check().await {
        Ok(()) => {
            let (reading, age) = health.backlog.read_with_age().await;
            let mut body = backlog_json(&reading);
            body["age_ms"] = serde_json::json!(age.as_millis() as u64);
            body["ingest_pace"] = serde_json::json!(health.backlog.pace_rate().map(f64::round));
            // Degraded still answers 200: search serves what is indexed
            // while the rest catches up; a load balancer must not take the
            // process out for being behind.
            body["status"] = match reading.degraded.is_empty() {
                true => "ready".into(),
                false => "degraded".into(),
            };
            if let Some(embedder) = &health.embedder {
                body["embedder"] = serde_json::json!(embedder);
            }
            HttpResponse::Ok().json(body)
        }
        Err(error) => {
            tracing::warn!(error = %error, "readiness check failed");
            HttpResponse::ServiceUnavailable()
                .json(ApiError::body("not_ready", "the database is unavailable"))
        }
    }
}

/// A backlog reading as `/readyz` reports it (and `mnemo status` reads).
pub fn backlog_json(reading: &Reading) -> serde_json::Value {
    let consumer_lag: serde_json::Map<String, serde_json::Value> = reading
        .consumer_lag
        .iter()
        .map(|lag| (lag.group.clone(), serde_json::json!(lag.records)))
        .collect();
    let oldest: serde_json::Map<String, serde_json::Value> = reading
        .consumer_lag
        .iter()
        .map(|lag| (lag.group.clone(), serde_json::json!(lag.oldest_seconds)))
        .collect();
    let mut body = serde_json::json!({
        "relay_lag": reading.relay_lag,
        "consumer_lag": consumer_lag,
        "consumer_oldest_seconds": oldest,
        "degraded": reading.degraded,
        "disk_free_bytes": reading.disk_free_bytes,
    });
    if let Some(consolidation) = &reading.consolidation {
        body["backlog"] = serde_json::json!({
            "consolidation": consolidation,
            "unconsolidated": reading.unconsolidated,
        });
    }
    body
}

async fn metrics_endpoint(
    metrics: web::Data<Arc<Metrics>>,
    health: web::Data<Health>,
) -> HttpResponse {
    // The relay keeps plain atomics (it knows nothing of Prometheus); the
    // gauges are brought up to date when they are read.
    let relay = health.backlog.relay();
    metrics.relay_lag_events.set(relay.lag());
    metrics
        .relay_published_total
        .set(relay.published_total.load(Ordering::Relaxed));
    metrics
        .ingest_pace_messages_per_second
        .set(health.backlog.pace_rate().unwrap_or(0.0));
    let reading = health.backlog.read().await;
    for lag in &reading.consumer_lag {
        let group = lag.group.as_str();
        let gauge = metrics.consumer_lag_events.with_label_values(&[group]);
        // Unknown is not zero: a gauge that cannot be read is left out.
        match lag.records {
            Some(records) => gauge.set(i64::try_from(records).unwrap_or(i64::MAX)),
            None => {
                let _ = metrics.consumer_lag_events.remove_label_values(&[group]);
            }
        }
        // Caught up is 0 s; unknown (records unknown) is left out.
        let age = metrics
            .consumer_oldest_unprocessed_seconds
            .with_label_values(&[group]);
        match (lag.records, lag.oldest_seconds) {
            (_, Some(seconds)) => age.set(seconds),
            (Some(0), None) => age.set(0.0),
            _ => {
                let _ = metrics
                    .consumer_oldest_unprocessed_seconds
                    .remove_label_values(&[group]);
            }
        }
    }
    if let Some(buffer) = &reading.consolidation {
        let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        metrics
            .consolidation_buffer_messages
            .set(count(buffer.messages));
        metrics
            .consolidation_buffer_conversations
            .set(count(buffer.conversations));
        metrics
            .consolidation_buffer_oldest_seconds
            .set(buffer.oldest_seconds.unwrap_or(0.0));
    }
    metrics
        .degraded
        .set(i64::from(!reading.degraded.is_empty()));
    if let Some(free) = reading.disk_free_bytes {
        metrics
            .disk_free_bytes
            .set(i64::try_from(free).unwrap_or(i64::MAX));
    }
    if let Some(index) = &health.index {
        metrics.vector_index_unoptimized_seconds.set(
            index
                .unoptimized_for()
                .map_or(0.0, |waited| waited.as_secs_f64()),
        );
    }
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4")
        .body(metrics.render())
}

/// The default service: unknown paths get 404; a known path with another
/// method gets 405.
pub async fn route_not_found(req: HttpRequest) -> Result<HttpResponse, ApiError> {
    if req.match_pattern().is_some() {
        return Err(ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            format!("{} is not allowed here; see /docs", req.method()),
        ));
    }
    Err(ApiError::not_found(
        "route_not_found",
        "no such endpoint; see /docs",
    ))
}
