//! `POST /mcp`: MCP's Streamable HTTP transport on the API server itself.
//! The bearer token is verified first, with mnemo's 401 and JSON error body
//! for a missing or bad one; only then is the request handed to rmcp's
//! stateless `StreamableHttpService`, with the token attached for the
//! tools, which call this server's REST API over loopback with it.

use std::convert::Infallible;
use std::sync::Arc;

use actix_web::http::header::{self, HeaderName, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse, ResponseError};
use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use mnemo_auth::{bearer_token, AuthError};
use mnemo_http::{ApiError, Authenticated};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use secrecy::SecretString;

use crate::{ApiClient, CallerToken, MnemoTools};

/// The routes [`configure`] registers, for the OpenAPI coverage test.
pub const ROUTES: &[(&str, &str)] = &[("POST", "/mcp"), ("GET", "/mcp")];

/// The MCP endpoint of one server: its tools, calling `api`.
#[derive(Clone)]
pub struct McpEndpoint {
    service: StreamableHttpService<MnemoTools, NeverSessionManager>,
}

impl McpEndpoint {
    /// `api` is the server's own REST API (its loopback address);
    /// `max_body_bytes` the request body limit the rest of the API has.
    pub fn new(api: ApiClient, max_body_bytes: usize) -> Self {
        let config = StreamableHttpServerConfig::default()
            // Stateless: no session to keep or to lose between requests,
            // so any process serving the API can answer any POST.
            .with_legacy_session_mode(false)
            .with_json_response(true)
            .with_sse_keep_alive(None)
            .with_sse_retry(None)
            .with_max_request_body_bytes(max_body_bytes)
            // rmcp's Host allow-list guards servers without authentication
            // against DNS rebinding; here the bearer token admits a request
            // (a page in a browser has none), and the list would refuse
            // every name the server is reached by but localhost.
            .disable_allowed_hosts();
        // Built once; each request gets a copy (the tools hold no state of
        // their own, only the client and the router).
        let tools = MnemoTools::per_request(api);
        let service = StreamableHttpService::new(
            move || Ok(tools.clone()),
            Arc::new(NeverSessionManager::default()),
            config,
        );
        McpEndpoint { service }
    }
}

/// Registers `POST /mcp` and `GET /mcp` (405: no event stream is offered).
pub fn configure(endpoint: McpEndpoint) -> impl Fn(&mut web::ServiceConfig) + Clone {
    move |cfg: &mut web::ServiceConfig| {
        cfg.app_data(web::Data::new(endpoint.clone()))
            .route("/mcp", web::post().to(post_mcp))
            .route("/mcp", web::get().to(get_mcp));
    }
}

/// `Authenticated` comes first: an unauthenticated request is answered 401
/// before its body is read or any MCP processing happens.
async fn post_mcp(
    _caller: Authenticated,
    req: HttpRequest,
    body: web::Bytes,
    endpoint: web::Data<McpEndpoint>,
) -> Result<HttpResponse, ApiError> {
    let token = caller_token(&req)?;
    let mut request = http::Request::builder()
        .method(http::Method::POST)
        .uri(req.uri().to_string());
    for (name, value) in req.headers() {
        request = request.header(name.as_str(), value.as_bytes());
    }
    let mut request = request
        .body(Full::new(body))
        .map_err(|e| ApiError::bad_request("bad_request", e.to_string()))?;
    request.extensions_mut().insert(token);
    Ok(into_actix(endpoint.service.handle(request).await).await)
}

/// The token `Authenticated` verified, as the tools send it on.
fn caller_token(req: &HttpRequest) -> Result<CallerToken, ApiError> {
    let header = req
        .headers()
        .get(header::AUTHORIZATION)
        .ok_or(AuthError::MissingToken)?
        .to_str()
        .map_err(|_| AuthError::MalformedToken)?;
    Ok(CallerToken(SecretString::from(bearer_token(header)?)))
}

async fn get_mcp() -> HttpResponse {
    let mut response = ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "stream_not_offered",
        "this MCP endpoint is stateless and offers no event stream: POST JSON-RPC messages to it",
    )
    .error_response();
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("POST"));
    response
}

/// rmcp's answer (http 1.x) as actix-web's (http 0.2): the same status,
/// headers and body. A JSON answer is sent whole; an event stream (only
/// when a tool sends a notification before its result) is streamed.
async fn into_actix(response: http::Response<BoxBody<Bytes, Infallible>>) -> HttpResponse {
    let (parts, body) = response.into_parts();
    let status =
        StatusCode::from_u16(parts.status.as_u16()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut builder = HttpResponse::build(status);
    for (name, value) in &parts.headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_str().as_bytes()),
            HeaderValue::from_bytes(value.as_bytes()),
        ) {
            builder.append_header((name, value));
        }
    }
    let event_stream = parts
        .headers
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|value| value.as_bytes().starts_with(b"text/event-stream"));
    if event_stream {
        return builder.streaming(body.into_data_stream());
    }
    let Ok(collected) = body.collect().await;
    builder.body(collected.to_bytes())
}
