//! Size limits: oversize request heads, and the length of every free-text
//! query parameter and search filter. Each refusal is a 4xx with the JSON
//! error body, and nothing is appended.

use std::time::Duration;

use reqwest::Method;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::helpers::{spawn_app, TestApp};

/// Asserts a 4xx JSON error whose code is `code` and whose message names
/// `parameter` without echoing the value.
async fn assert_refused(response: reqwest::Response, status: u16, code: &str, parameter: &str) {
    let got = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    assert_eq!(got, status, "{parameter}: {body}");
    assert_eq!(body["error"]["code"], code, "{parameter}: {body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains(parameter), "{parameter}: {message}");
    assert!(
        !message.contains(&"x".repeat(200)),
        "{parameter}: {message}"
    );
}

/// A response read off the wire, as the server wrote it.
struct RawResponse {
    status: u16,
    /// Lower-cased names.
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl RawResponse {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "{}: body is not JSON ({e}): {:?}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }
}

/// Sends `request` as raw bytes on a fresh connection and reads the response
/// until the server closes it, so that what the HTTP server itself writes
/// (not what a client library makes of it) is what the test sees.
async fn raw(app: &TestApp, request: &[u8]) -> RawResponse {
    let address = app.address.trim_start_matches("http://");
    let mut stream = TcpStream::connect(address).await.unwrap();
    // The server may answer and stop reading before the request is all
    // written; the answer is what counts.
    let _ = stream.write_all(request).await;
    let mut received = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), async {
        let mut buffer = [0u8; 8192];
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => received.extend_from_slice(&buffer[..n]),
            }
        }
    })
    .await;
    assert!(read.is_ok(), "the server did not close the connection");
    let split = received
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| {
            panic!(
                "no response head in {:?}",
                String::from_utf8_lossy(&received)
            )
        });
    let head = String::from_utf8(received[..split].to_vec()).unwrap();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_lowercase(), v.trim().to_owned()))
        .collect();
    RawResponse {
        status,
        headers,
        body: received[split + 4..].to_vec(),
    }
}

/// A message post with `extra` header lines, as raw HTTP/1.1.
fn message_post(token: &str, extra: &str) -> Vec<u8> {
    let body = json!({"messages": [{"role": "user", "content": "I live in Lyon"}]}).to_string();
    format!(
        "POST /v1/subjects/u/messages HTTP/1.1\r\nHost: mnemo\r\nConnection: close\r\n\
         Authorization: Bearer {token}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n{extra}\r\n{body}",
        body.len()
    )
    .into_bytes()
}

#[tokio::test]
async fn a_64_kib_header_is_431_with_the_json_body_and_appends_nothing() {
    let app = spawn_app().await;
    let token = app.admin("acme");
    let filler = format!("X-Filler: {}\r\n", "a".repeat(64 * 1024));
    let response = raw(&app, &message_post(&token, &filler)).await;
    assert_eq!(response.status, 431);
    assert!(response
        .header("content-type")
        .is_some_and(|v| v.starts_with("application/json")));
    assert_eq!(response.json()["error"]["code"], "request_header_too_large");
    assert!(app.all_events("acme").await.is_empty());

    // The same request without the filler goes through.
    let response = raw(&app, &message_post(&token, "")).await;
    assert_eq!(
        response.status,
        202,
        "{:?}",
        String::from_utf8_lossy(&response.body)
    );
}

#[tokio::test]
async fn an_unknown_method_is_a_json_405() {
    let app = spawn_app().await;
    let token = app.admin("acme");
    let request = format!(
        "BREW /v1/audit HTTP/1.1\r\nHost: mnemo\r\nConnection: close\r\n\
         Authorization: Bearer {token}\r\n\r\n"
    );
    let response = raw(&app, request.as_bytes()).await;
    assert_eq!(response.status, 405);
    assert_eq!(response.json()["error"]["code"], "method_not_allowed");
}

/// Pins what actix-http answers by itself, before any middleware: these
/// responses cannot carry the JSON body (see docs/operations.md, "Errors
/// the HTTP server answers itself"). Should actix-http ever let us shape
/// them, this test fails and the document is to be updated.
#[tokio::test]
async fn what_the_http_server_refuses_before_the_app_runs_has_an_empty_body() {
    let app = spawn_app().await;
    let token = app.admin("acme");

    // More than 96 header fields: refused while parsing, as a head over
    // 128 KiB is, with a bare 431.
    let many: String = (0..100).map(|i| format!("X-Field-{i}: x\r\n")).collect();
    let response = raw(&app, &message_post(&token, &many)).await;
    assert_eq!(response.status, 431);
    assert_eq!(response.header("content-length"), Some("0"));
    assert_eq!(response.header("content-type"), None);
    assert!(response.header("date").is_some());
    assert!(response.body.is_empty());

    // A head over actix-http's 128 KiB buffer: the same bare 431.
    let huge = format!("X-Filler: {}\r\n", "a".repeat(200 * 1024));
    let response = raw(&app, &message_post(&token, &huge)).await;
    assert_eq!(response.status, 431);
    assert!(response.body.is_empty());

    // A header line that is not `name: value`: a bare 400.
    let response = raw(&app, &message_post(&token, "not a header line\r\n")).await;
    assert_eq!(response.status, 400);
    assert_eq!(response.header("content-length"), Some("0"));
    assert!(response.body.is_empty());

    // Nothing reached the app.
    assert!(app.all_events("acme").await.is_empty());
}

/// 10,000 characters: what the search filters and the audit `actor` took.
fn long() -> String {
    "x".repeat(10_000)
}

#[tokio::test]
async fn overlong_query_parameters_are_refused_and_nothing_is_appended() {
    let app = spawn_app().await;
    let token = app.admin("acme");
    app.memory(&token, "u", "Lives in Lyon").await;
    let before = app.all_events("acme").await.len();
    let long = long();

    // The audit log: `actor` is compared with a token's `sub`, at most
    // 256 characters; `type` is a list of event types.
    for (parameter, query) in [
        ("`actor`", format!("actor={long}")),
        ("`type`", format!("type={long}")),
    ] {
        let response = app.get(&format!("/v1/audit?{query}"), &token).await;
        assert_refused(response, 400, "parameter_too_long", parameter).await;
    }
    let at_limit = format!("/v1/audit?actor={}", "x".repeat(256));
    assert_eq!(app.get_json(&at_limit, &token).await["events"], json!([]));
    let over = format!("/v1/audit?actor={}", "x".repeat(257));
    assert_refused(
        app.get(&over, &token).await,
        400,
        "parameter_too_long",
        "`actor`",
    )
    .await;

    // A subject's memories: the comma-separated lists.
    for parameter in ["kind", "tag", "state"] {
        let path = format!("/v1/subjects/u/memories?{parameter}={long}");
        let response = app.get(&path, &token).await;
        assert_refused(
            response,
            400,
            "parameter_too_long",
            &format!("`{parameter}`"),
        )
        .await;
    }

    // The review queue and its statistics: ids and the cursor.
    let response = app.get(&format!("/v1/review?subject={long}"), &token).await;
    assert_refused(response, 400, "invalid_id", "subject_id").await;
    let response = app.get(&format!("/v1/review?cursor={long}"), &token).await;
    assert_refused(response, 400, "invalid_cursor", "cursor").await;
    let response = app
        .get(&format!("/v1/review/stats?subject={long}"), &token)
        .await;
    assert_refused(response, 400, "invalid_id", "subject_id").await;
    let response = app.get(&format!("/v1/audit?subject={long}"), &token).await;
    assert_refused(response, 400, "invalid_id", "subject_id").await;

    assert_eq!(app.all_events("acme").await.len(), before);
}

#[tokio::test]
async fn overlong_search_and_context_filters_are_refused_and_nothing_is_appended() {
    let app = spawn_app().await;
    let token = app.admin("acme");
    app.memory(&token, "u", "Lives in Lyon").await;
    let before = app.all_events("acme").await.len();
    let long = long();
    let search = |filters: Value| {
        app.call(
            Method::POST,
            "/v1/subjects/u/search",
            &token,
            Some(json!({"query": "Lyon", "filters": filters})),
        )
    };
    let context = |filters: Value| {
        app.call(
            Method::POST,
            "/v1/subjects/u/context",
            &token,
            Some(json!({"messages": [{"role": "user", "content": "Lyon?"}], "filters": filters})),
        )
    };

    // Session and agent filters are ids: at most the domain's 128.
    for field in ["session", "agent"] {
        let name = format!("`filters.{field}`");
        let response = search(json!({ field: long })).await;
        assert_refused(response, 422, "filter_too_long", &name).await;
        let response = context(json!({ field: long })).await;
        assert_refused(response, 422, "filter_too_long", &name).await;
        let response = search(json!({ field: "s".repeat(129) })).await;
        assert_refused(response, 422, "filter_too_long", &name).await;
        // At the limit: searched, nothing matches.
        let response = search(json!({ field: "s".repeat(128) })).await;
        assert_eq!(response.status(), 200);
        assert_eq!(
            response.json::<Value>().await.unwrap()["results"],
            json!([])
        );
    }
    // Tags: as many and as long as a memory's may be (20, 64 characters).
    let response = search(json!({"tags": [long]})).await;
    assert_refused(response, 422, "filter_too_long", "`filters.tags[]`").await;
    let response = context(json!({"tags": vec!["t"; 21]})).await;
    assert_refused(response, 422, "too_many_tags", "`filters.tags`").await;

    // The ingest side already bounds its fields; its sources are message
    // ids (at most 128), so a longer one names no message.
    let response = app
        .create_memory(
            &token,
            "u",
            json!({"content": "Likes tea", "kind": "preference", "sources": [long]}),
        )
        .await;
    assert_eq!(response.status(), 422);
    assert_eq!(
        response.json::<Value>().await.unwrap()["error"]["code"],
        "unknown_source"
    );
    let response = app
        .post_messages(
            &token,
            "u",
            json!([{"role": "user", "content": "hi", "session": long}]),
        )
        .await;
    assert_refused(response, 400, "invalid_id", "session_id").await;

    assert_eq!(app.all_events("acme").await.len(), before);
}
