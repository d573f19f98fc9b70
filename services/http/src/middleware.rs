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

/// The most header bytes (names, values and 4 bytes of framing per field) a
/// request may carry. Well above any real request (a bearer token is at most
/// [`mnemo_auth::MAX_TOKEN_BYTES`]), and below actix-http's own 128 KiB head
/// buffer, so that an oversize head usually gets our 431 with the JSON body
/// rather than the HTTP server's bare one (see `docs/operations.md`).
pub const MAX_REQUEST_HEADER_BYTES: usize = 32 * 1024;

/// Refuses a request whose header fields add up to more than
/// [`MAX_REQUEST_HEADER_BYTES`] with 431 `request_header_too_large`, before
/// anything reads them (the token included).
pub async fn limit_request_headers<B>(
    req: ServiceRequest,
    next: actix_web::middleware::Next<B>,
) -> Result<ServiceResponse<actix_web::body::EitherBody<B>>, actix_web::Error>
where
    B: MessageBody + 'static,
{
    let size: usize = req
        .headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 4)
        .sum();
    if size > MAX_REQUEST_HEADER_BYTES {
        let error = ApiError::new(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            "request_header_too_large",
            format!("request header fields are larger than {MAX_REQUEST_HEADER_BYTES} bytes"),
        );
        let response = actix_web::ResponseError::error_response(&error);
        return Ok(req.into_response(response).map_into_right_body());
    }
    next.call(req)
        .await
        .map(ServiceResponse::map_into_left_body)
}

/// The code of a framework-made error response, by status.
fn framework_error_code(status: StatusCode) -> &'static str {
    match status {
        StatusCode::BAD_REQUEST => "bad_request",
        StatusCode::NOT_FOUND => "not_found",
        StatusCode::METHOD_NOT_ALLOWED => "method_not_allowed",
        StatusCode::NOT_ACCEPTABLE => "not_acceptable",
        StatusCode::REQUEST_TIMEOUT => "request_timeout",
        StatusCode::LENGTH_REQUIRED => "length_required",
        StatusCode::PAYLOAD_TOO_LARGE => "payload_too_large",
        StatusCode::URI_TOO_LONG => "uri_too_long",
        StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported_media_type",
        StatusCode::EXPECTATION_FAILED => "expectation_failed",
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => "request_header_too_large",
        StatusCode::SERVICE_UNAVAILABLE => "unavailable",
        s if s.is_client_error() => "bad_request",
        _ => "internal_error",
    }
}

/// Replaces the empty or plain-text body of a framework-made error response
/// (405, 404 from an unmatched resource, 413 from a payload limit, a 4xx or
/// 5xx that an extractor or actix-web itself produced, ...) with the JSON
/// error body. Every error response that passes through the app gets one;
/// what actix-http answers before the app runs (an unparsable request head,
/// more than 96 header fields, a head over 128 KiB) cannot be reached from
/// here and is described in `docs/operations.md`.
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
        let code = framework_error_code(status);
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

#[cfg(test)]
mod tests {
    use actix_web::middleware::from_fn;
    use actix_web::{test, App};
    use serde_json::Value;

    use super::*;

    async fn status_handler(path: web::Path<u16>) -> HttpResponse {
        // A bare framework-style error response: status, no body.
        HttpResponse::build(StatusCode::from_u16(path.into_inner()).unwrap()).finish()
    }

    async fn call(request: test::TestRequest) -> (StatusCode, Value) {
        let app = test::init_service(
            App::new()
                .wrap(json_error_bodies())
                .wrap(from_fn(limit_request_headers))
                .route("/status/{code}", web::get().to(status_handler)),
        )
        .await;
        let response = test::call_service(&app, request.to_request()).await;
        let status = response.status();
        let body = test::read_body(response).await;
        (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
    }

    #[actix_web::test]
    async fn oversize_header_fields_are_431_with_the_json_body() {
        let (status, body) = call(
            test::TestRequest::get()
                .uri("/status/204")
                .insert_header(("x-filler", "a".repeat(MAX_REQUEST_HEADER_BYTES))),
        )
        .await;
        assert_eq!(status, StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE);
        assert_eq!(body["error"]["code"], "request_header_too_large");
        // Many fields add up as one big one does.
        let mut request = test::TestRequest::get().uri("/status/204");
        for i in 0..40 {
            request = request.append_header((format!("x-filler-{i}"), "a".repeat(1000)));
        }
        let (status, _) = call(request).await;
        assert_eq!(status, StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE);
        // Up to the limit is fine.
        let (status, _) = call(
            test::TestRequest::get()
                .uri("/status/204")
                .insert_header(("x-filler", "a".repeat(MAX_REQUEST_HEADER_BYTES - 100))),
        )
        .await;
        assert_eq!(status, StatusCode::NO_CONTENT);
    }

    #[actix_web::test]
    async fn bare_error_responses_get_the_json_body_and_a_code() {
        for (status, code) in [
            (400, "bad_request"),
            (404, "not_found"),
            (405, "method_not_allowed"),
            (406, "not_acceptable"),
            (408, "request_timeout"),
            (413, "payload_too_large"),
            (414, "uri_too_long"),
            (415, "unsupported_media_type"),
            (418, "bad_request"),
            (431, "request_header_too_large"),
            (500, "internal_error"),
            (503, "unavailable"),
        ] {
            let (got, body) =
                call(test::TestRequest::get().uri(&format!("/status/{status}"))).await;
            assert_eq!(got.as_u16(), status);
            assert_eq!(body["error"]["code"], code, "{status}");
            assert!(body["error"]["message"].is_string(), "{status}");
        }
    }
}
