//! Request spans and metrics, extractor configs, and a guard that every
//! error response has the JSON error body.

use std::sync::Arc;
use std::time::Instant;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::error::{JsonPayloadError, PathError, QueryPayloadError};
use actix_web::http::header::{self, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::middleware::{ErrorHandlerResponse, ErrorHandlers};
use actix_web::{web, HttpRequest, HttpResponse};
use mnemo_telemetry::Metrics;
use tracing::Instrument;

use crate::ApiError;

/// JSON, path and query extractor configs: bad input becomes a 4xx with the
/// JSON error body, and bodies above `max_body_bytes` are refused unread.
pub fn extractor_configs(max_body_bytes: usize) -> impl Fn(&mut web::ServiceConfig) + Clone {
    move |cfg: &mut web::ServiceConfig| {
        cfg.app_data(
            web::JsonConfig::default()
                .limit(max_body_bytes)
                .error_handler(json_error),
        )
        .app_data(web::PayloadConfig::default().limit(max_body_bytes))
        .app_data(web::PathConfig::default().error_handler(path_error))
        .app_data(web::QueryConfig::default().error_handler(query_error));
    }
}

fn json_error(error: JsonPayloadError, _: &HttpRequest) -> actix_web::Error {
    let api = match &error {
        JsonPayloadError::Overflow { limit }
        | JsonPayloadError::OverflowKnownLength { limit, .. } => ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            format!("request body is larger than {limit} bytes"),
        ),
        JsonPayloadError::ContentType => ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "send the body as application/json",
        ),
        JsonPayloadError::Deserialize(inner) if inner.is_syntax() || inner.is_eof() => {
            ApiError::bad_request(
                "invalid_json",
                format!("request body is not valid JSON: {inner}"),
            )
        }
        JsonPayloadError::Deserialize(inner) => ApiError::bad_request(
            "invalid_body",
            format!("request body does not match the schema: {inner}"),
        ),
        other => ApiError::bad_request("invalid_body", other.to_string()),
    };
    api.into()
}

fn path_error(error: PathError, _: &HttpRequest) -> actix_web::Error {
    ApiError::bad_request("invalid_path", error.to_string()).into()
}

fn query_error(error: QueryPayloadError, _: &HttpRequest) -> actix_web::Error {
    ApiError::bad_request("invalid_query", error.to_string()).into()
}

/// Replaces the empty or plain-text body of a framework-made error response
/// (405, 404 from an unmatched resource, ...) with the JSON error body.
pub fn json_error_bodies<B: MessageBody + 'static>() -> ErrorHandlers<B> {
    ErrorHandlers::new().default_handler(|response: ServiceResponse<B>| {
        let is_json = response
            .headers()
            .get(header::CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
        if is_json {
            return Ok(ErrorHandlerResponse::Response(
                response.map_into_left_body(),
            ));
        }
        let status = response.status();
        let code = match status {
            StatusCode::NOT_FOUND => "not_found",
            StatusCode::METHOD_NOT_ALLOWED => "method_not_allowed",
            StatusCode::PAYLOAD_TOO_LARGE => "payload_too_large",
            StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported_media_type",
            s if s.is_client_error() => "bad_request",
            _ => "internal_error",
        };
        let message = status.canonical_reason().unwrap_or("error").to_lowercase();
        let (request, _) = response.into_parts();
        let mut replaced = HttpResponse::build(status).json(ApiError::body(code, &message));
        replaced.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        Ok(ErrorHandlerResponse::Response(
            ServiceResponse::new(request, replaced).map_into_right_body(),
        ))
    })
}

/// One span per request (continuing the caller's trace from `traceparent`)
/// and the request metrics, labelled by route pattern, never by raw path.
pub async fn observe_requests<B>(
    req: ServiceRequest,
    next: actix_web::middleware::Next<B>,
) -> Result<ServiceResponse<B>, actix_web::Error>
where
    B: MessageBody + 'static,
{
    let metrics = req.app_data::<web::Data<Arc<Metrics>>>().cloned();
    let method = req.method().to_string();
    let route = req
        .match_pattern()
        .unwrap_or_else(|| "unmatched".to_owned());
    let span = tracing::info_span!(
        "http_request",
        http.method = %method,
        http.route = %route,
        http.status = tracing::field::Empty,
        tenant = tracing::field::Empty,
    );
    if let Some(parent) = req
        .headers()
        .get("traceparent")
        .and_then(|v| v.to_str().ok())
    {
        mnemo_telemetry::set_parent_from_traceparent(&span, parent);
    }
    let started = Instant::now();
    let result = next.call(req).instrument(span.clone()).await;
    let status = match &result {
        Ok(response) => response.status().as_u16(),
        Err(error) => error.as_response_error().status_code().as_u16(),
    };
    span.record("http.status", status);
    if let Some(metrics) = metrics {
        metrics
            .http_requests_total
            .with_label_values(&[&method, &route, &status.to_string()])
            .inc();
        metrics
            .http_request_duration_seconds
            .with_label_values(&[&method, &route])
            .observe(started.elapsed().as_secs_f64());
    }
    result
}
