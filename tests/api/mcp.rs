//! `POST /mcp`: the token is checked before any MCP processing, and each
//! tool is a call of the REST API with the caller's token, so the API's
//! scopes and subject binding decide, and refusals are tool errors. The
//! full client flows (stdio and HTTP, through the official SDK) are in
//! `tests/mcp`.

use mnemo_auth::Scope;
use reqwest::Response;
use serde_json::{json, Value};

use crate::helpers::{assert_error, spawn_app, TestApp};

const ACCEPT: &str = "application/json, text/event-stream";

async fn post_mcp(app: &TestApp, token: Option<&str>, message: Value) -> Response {
    let mut request = app
        .client
        .post(format!("{}/mcp", app.address))
        .header("accept", ACCEPT)
        .json(&message);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.unwrap()
}

/// A `tools/call` over the stateless endpoint, answered with its result.
async fn call_tool(app: &TestApp, token: &str, name: &str, arguments: Value) -> Value {
    let response = post_mcp(
        app,
        Some(token),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": name, "arguments": arguments}}),
    )
    .await;
    assert_eq!(response.status(), 200);
    let answer: Value = response.json().await.unwrap();
    answer["result"].clone()
}

#[tokio::test]
async fn a_missing_or_invalid_token_is_401_with_the_json_error_body() {
    let app = spawn_app().await;
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}});
    assert_error(
        post_mcp(&app, None, initialize.clone()).await,
        401,
        "missing_token",
    )
    .await;
    let forged = app.admin("acme").replace('.', "x.");
    let response = post_mcp(&app, Some(&forged), initialize.clone()).await;
    assert_eq!(response.status(), 401);

    let response = post_mcp(&app, Some(&app.admin("acme")), initialize).await;
    assert_eq!(response.status(), 200);
    let answer: Value = response.json().await.unwrap();
    assert_eq!(answer["result"]["serverInfo"]["name"], "mnemo", "{answer}");
    assert!(answer["result"]["capabilities"]["tools"].is_object());
}

#[tokio::test]
async fn get_offers_no_event_stream() {
    let app = spawn_app().await;
    let response = app
        .client
        .get(format!("{}/mcp", app.address))
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["allow"], "POST");
    assert_error(response, 405, "stream_not_offered").await;
}

#[tokio::test]
async fn tools_act_with_the_callers_token_and_the_apis_refusals_are_tool_errors() {
    let app = spawn_app().await;
    let remember = json!({"subject": "ana", "messages": [
        {"role": "user", "content": "I moved to Lyon", "session": "s1"}]});

    let reader = app.token("acme", &[Scope::MemoriesRead], None);
    let refused = call_tool(&app, &reader, "remember", remember.clone()).await;
    assert_eq!(refused["isError"], true, "{refused}");
    assert_eq!(refused["structuredContent"]["status"], 403);
    assert_eq!(
        refused["structuredContent"]["error"]["code"],
        "insufficient_scope"
    );
    assert!(
        app.all_events("acme").await.is_empty(),
        "nothing was recorded"
    );

    let bound = app.token(
        "acme",
        &[Scope::MemoriesRead, Scope::MemoriesWrite],
        Some("bob"),
    );
    let refused = call_tool(&app, &bound, "remember", remember.clone()).await;
    assert_eq!(
        refused["structuredContent"]["error"]["code"],
        "subject_forbidden"
    );

    let writer = app.token("acme", &[Scope::MemoriesWrite], None);
    let accepted = call_tool(&app, &writer, "remember", remember).await;
    assert_eq!(accepted["isError"], false, "{accepted}");
    assert_eq!(accepted["structuredContent"]["accepted"], 1);
    let events = app.all_events("acme").await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["type"], "MessageReceived");
    // The tool called the API as the token's actor: the audit trail names it.
    assert_eq!(events[0]["actor"], "acme-admin");

    // The same token in another tenant sees nothing of acme's.
    let other = app.admin("globex");
    let listed = call_tool(&app, &other, "list_memories", json!({"subject": "ana"})).await;
    assert_eq!(listed["isError"], false, "{listed}");
    assert_eq!(listed["structuredContent"]["memories"], json!([]));
}
