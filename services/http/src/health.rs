//! The operational endpoints every process serves, whatever its roles:
//! liveness (`/healthz`), readiness (`/readyz`: the database answers, and
//! which embedder serves) and
//! the Prometheus metrics (`/metrics`), plus the JSON 404/405 for paths no
//! role serves.
//!
//! Both report how far behind each consumer group of the process is
//! (`consumer_lag`): a projection's lag is what is posted but not yet
//! searchable. Lag never makes a process unready: search serves what is
//! indexed while the rest catches up.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use async_trait::async_trait;
use mnemo_bus::relay::RelayStats;
use mnemo_bus::Bus;
use mnemo_embed::EmbedderStatus;
use mnemo_telemetry::Metrics;

use crate::ApiError;

/// Whatever a process must reach to serve: its database.
#[async_trait]
pub trait Readiness: Send + Sync + 'static {
    async fn check(&self) -> Result<(), Box<dyn std::error::Error + Send + Sync>>;
}

/// The consumer groups a process runs, and the bus that knows their
/// committed offsets.
pub struct ConsumerGroups {
    pub bus: Arc<dyn Bus>,
    /// (group, its topics).
    pub groups: Vec<(String, Vec<String>)>,
}

impl ConsumerGroups {
    /// Records each group has not committed yet; None for a group whose
    /// lag the bus could not tell (logged).
    async fn lag(&self) -> Vec<(&str, Option<u64>)> {
        let mut lags = Vec::with_capacity(self.groups.len());
        for (group, topics) in &self.groups {
            let topics: Vec<&str> = topics.iter().map(String::as_str).collect();
            let lag = match self.bus.lag(group, &topics).await {
                Ok(lag) => Some(lag),
                Err(error) => {
                    tracing::warn!(group = %group, error = %error, "consumer lag unavailable");
                    None
                }
            };
            lags.push((group.as_str(), lag));
        }
        lags
    }
}

/// What the health endpoints read.
pub struct Health {
    pub database: Arc<dyn Readiness>,
    pub relay: Arc<RelayStats>,
    pub consumers: ConsumerGroups,
    /// The embedder of a process that embeds (None: ingest only). Reported
    /// because `auto` may have fallen back to lexical search, which an
    /// operator should not have to find in the start-up log.
    pub embedder: Option<EmbedderStatus>,
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
            let consumer_lag: serde_json::Map<String, serde_json::Value> = health
                .consumers
                .lag()
                .await
                .into_iter()
                .map(|(group, lag)| (group.to_owned(), serde_json::json!(lag)))
                .collect();
            let mut body = serde_json::json!({
                "status": "ready",
                "relay_lag": health.relay.lag(),
                "consumer_lag": consumer_lag,
            });
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

async fn metrics_endpoint(
    metrics: web::Data<Arc<Metrics>>,
    health: web::Data<Health>,
) -> HttpResponse {
    // The relay keeps plain atomics (it knows nothing of Prometheus); the
    // gauges are brought up to date when they are read.
    metrics.relay_lag_events.set(health.relay.lag());
    metrics
        .relay_published_total
        .set(health.relay.published_total.load(Ordering::Relaxed));
    for (group, lag) in health.consumers.lag().await {
        let gauge = metrics.consumer_lag_events.with_label_values(&[group]);
        // Unknown is not zero: a gauge that cannot be read is left out.
        match lag {
            Some(lag) => gauge.set(i64::try_from(lag).unwrap_or(i64::MAX)),
            None => {
                let _ = metrics.consumer_lag_events.remove_label_values(&[group]);
            }
        }
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
