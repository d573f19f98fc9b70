//! Event metadata from a request: who (the token's actor), as part of what
//! (the caller's `X-Request-Id` or a fresh one), and the trace it belongs to.

use actix_web::HttpRequest;
use mnemo_domain::EventMetadata;

/// Longest correlation id taken from a client; longer ones are replaced.
const MAX_CORRELATION_ID: usize = 128;

pub fn correlation_id(req: &HttpRequest) -> String {
    req.headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .filter(|v| {
            !v.is_empty()
                && v.len() <= MAX_CORRELATION_ID
                && v.bytes().all(|b| b.is_ascii_graphic())
        })
        .map(str::to_owned)
        .unwrap_or_else(|| uuid::Uuid::now_v7().to_string())
}

pub fn event_metadata(req: &HttpRequest, actor: &str) -> EventMetadata {
    EventMetadata {
        actor: actor.to_owned(),
        correlation_id: Some(correlation_id(req)),
        causation_id: None,
        traceparent: mnemo_telemetry::current_traceparent().or_else(|| {
            req.headers()
                .get("traceparent")
                .and_then(|v| v.to_str().ok())
                .filter(|v| v.len() == 55)
                .map(str::to_owned)
        }),
    }
}
