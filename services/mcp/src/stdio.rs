//! `mnemo mcp`: the server over stdio, for a client that starts it as a
//! child process (Claude Desktop, Claude Code, Cursor, ...). stdout carries
//! the protocol and nothing else: logs go to stderr.

use rmcp::ServiceExt;
use secrecy::SecretString;

use crate::{ApiClient, McpError, MnemoTools};

/// Serves the tools on stdin/stdout until the client closes stdin, every
/// call made to `api` with `token`.
pub async fn serve_stdio(api: ApiClient, token: SecretString) -> Result<(), McpError> {
    tracing::info!(url = %api.base_url(), "serving MCP on stdio");
    let running = MnemoTools::with_token(api, token)
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| McpError::Initialize(e.to_string()))?;
    let reason = running
        .waiting()
        .await
        .map_err(|e| McpError::Session(e.to_string()))?;
    tracing::info!(reason = ?reason, "MCP session over stdio ended");
    Ok(())
}
