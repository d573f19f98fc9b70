//! Event metadata from a request: who (the token's actor), as part of what
//! (the caller's `X-Request-Id` when it is a UUID, else a fresh one), and
//! the trace it belongs to.

use actix_web::HttpRequest;
use mnemo_domain::EventMetadata;

/// The correlation id stored with every event of the request: the
/// client's `X-Request-Id` when it is a UUID, else a fresh UUIDv7.
///
/// Only a UUID is kept because the id is stored in the clear beside every
/// event and outlives an erasure: a free-form request id is text a client
/// chose (`jane.doe@example.com-42` is a valid one), and sealing it per
/// subject would make it useless for correlating a request's events. A
/// UUID carries nothing of anybody, and clients that trace by request id
/// overwhelmingly send one.
pub fn correlation_id(req: &HttpRequest) -> String {
    req.headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| uuid::Uuid::try_parse(v).ok())
        .unwrap_or_else(uuid::Uuid::now_v7)
        .hyphenated()
        .to_string()
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
