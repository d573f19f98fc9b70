//! mnemo as a Model Context Protocol server: the tools an agent uses to
//! remember a conversation, recall what it knows about the person it talks
//! to, get the memory block for its next answer, list, trace and forget
//! memories, and (for admins) export a subject. Served over stdio by
//! `mnemo mcp` and over Streamable HTTP at `POST /mcp` of `mnemo serve`.
//!
//! Key decision: every tool is a thin client of mnemo's own REST API
//! ([`api`]), called with the caller's mnemo token: the token in
//! `MNEMO_TOKEN` over stdio, the request's `Authorization: Bearer` token
//! over HTTP (verified by the endpoint before any MCP processing, then
//! passed on to the tools as a [`CallerToken`]). The tenant, the subject
//! binding and the scopes are therefore checked by the REST API exactly as
//! for any other client: there is no second authorization path to keep in
//! step. What the API refuses comes back as a tool error (`isError`) that
//! carries the API's JSON error body, so a model can read the code
//! (`insufficient_scope`, `subject_forbidden`, ...) and act on it; protocol
//! errors are left for what MCP itself cannot route.
//!
//! The HTTP endpoint is stateless (no MCP sessions, JSON answers): every
//! POST carries everything it needs, so any process running the API can
//! answer it, and it offers no server-sent event stream (`GET /mcp` is
//! 405). The transport itself is rmcp's `StreamableHttpService`, bridged
//! to actix-web in [`endpoint`], so protocol versions and headers are
//! checked by the SDK rather than here.

pub mod api;
pub mod endpoint;
pub mod requests;
pub mod stdio;
pub mod tools;

pub use api::ApiClient;
pub use endpoint::{configure, McpEndpoint, ROUTES};
pub use stdio::serve_stdio;
pub use tools::{CallerToken, MnemoTools};

/// What can stop the MCP server before or while it serves.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("invalid mnemo URL {url}: {reason}")]
    InvalidUrl { url: String, reason: String },
    #[error("cannot build the HTTP client: {0}")]
    HttpClient(#[source] reqwest::Error),
    #[error("the MCP session could not start: {0}")]
    Initialize(String),
    #[error("the MCP session failed: {0}")]
    Session(String),
}
