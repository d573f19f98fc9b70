//! The REST client the tools call through, and the one mapping from what
//! the API answered to a tool result.

use std::time::Duration;

use reqwest::header::{ACCEPT, AUTHORIZATION};
use reqwest::Method;
use rmcp::model::CallToolResult;
use secrecy::{ExposeSecret, SecretString};
use serde_json::{json, Value};

use crate::McpError;

/// One call of the REST API, as a tool maps its arguments to it.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiRequest {
    pub method: Method,
    /// From the API's root, e.g. `/v1/subjects/user-42/search`. Built only
    /// from checked ids, so an argument can never change the route.
    pub path: String,
    pub query: Vec<(&'static str, String)>,
    pub body: Option<Value>,
    /// Safe to send again after an answer was lost: a read, a delete (the
    /// API deletes a memory once), or messages whose ids the API
    /// deduplicates on.
    pub idempotent: bool,
}

impl ApiRequest {
    pub fn get(path: String) -> Self {
        ApiRequest {
            method: Method::GET,
            path,
            query: Vec::new(),
            body: None,
            idempotent: true,
        }
    }

    pub fn post(path: String, body: Value) -> Self {
        ApiRequest {
            method: Method::POST,
            path,
            query: Vec::new(),
            body: Some(body),
            idempotent: false,
        }
    }
}

/// What the API answered: its status and its JSON body (`Null` when empty).
#[derive(Debug, Clone, PartialEq)]
pub struct ApiResponse {
    pub status: u16,
    pub body: Value,
}

/// mnemo's REST API at one base URL.
#[derive(Clone)]
pub struct ApiClient {
    http: reqwest::Client,
    base_url: String,
}

impl ApiClient {
    pub fn new(base_url: &str) -> Result<Self, McpError> {
        let invalid = |reason: String| McpError::InvalidUrl {
            url: base_url.to_owned(),
            reason,
        };
        let parsed = reqwest::Url::parse(base_url).map_err(|e| invalid(e.to_string()))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(invalid("the scheme must be http or https".to_owned()));
        }
        if parsed.query().is_some() || parsed.fragment().is_some() {
            return Err(invalid(
                "no query or fragment, only the API's root".to_owned(),
            ));
        }
        let http = reqwest::Client::builder()
            // Search and context embed the query; a minute is far above
            // either, and a hung server still ends the tool call.
            .timeout(Duration::from_secs(60))
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(McpError::HttpClient)?;
        Ok(ApiClient {
            http,
            base_url: base_url.trim_end_matches('/').to_owned(),
        })
    }

    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Sends the request with the caller's token. An idempotent request is
    /// sent once more when the first got no answer (the connection broke):
    /// whether or not the API acted on it, acting twice changes nothing. A
    /// timeout is not retried: it would only give a slow server a second
    /// minute.
    pub async fn send(
        &self,
        token: &SecretString,
        request: &ApiRequest,
    ) -> Result<ApiResponse, reqwest::Error> {
        match self.send_once(token, request).await {
            Err(error) if request.idempotent && !error.is_timeout() => {
                tracing::debug!(error = %error, method = %request.method, path = %request.path, "mnemo call failed, retrying once");
                self.send_once(token, request).await
            }
            outcome => outcome,
        }
    }

    async fn send_once(
        &self,
        token: &SecretString,
        request: &ApiRequest,
    ) -> Result<ApiResponse, reqwest::Error> {
        let mut builder = self
            .http
            .request(
                request.method.clone(),
                format!("{}{}", self.base_url, request.path),
            )
            .header(AUTHORIZATION, format!("Bearer {}", token.expose_secret()))
            .header(ACCEPT, "application/json");
        if !request.query.is_empty() {
            builder = builder.query(&request.query);
        }
        if let Some(body) = &request.body {
            builder = builder.json(body);
        }
        let response = builder.send().await?;
        let status = response.status().as_u16();
        let bytes = response.bytes().await?;
        // Every answer of the API is JSON; anything else (a proxy's HTML
        // page) is kept as text so the error can show it.
        let body = match bytes.is_empty() {
            true => Value::Null,
            false => serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned())),
        };
        Ok(ApiResponse { status, body })
    }
}

/// A failure the tool reports itself, before or instead of an API answer,
/// shaped like the API's errors so a model reads one kind of error.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolError {
    pub code: &'static str,
    pub message: String,
}

impl ToolError {
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        ToolError {
            code,
            message: message.into(),
        }
    }

    pub fn into_result(self) -> CallToolResult {
        CallToolResult::structured_error(json!({
            "error": {"code": self.code, "message": self.message},
        }))
    }
}

/// The one mapping from an API answer to a tool result: a 2xx is the
/// answer's JSON as structured content (and as text, for clients that show
/// only text); anything else is a tool error (`isError: true`) with the
/// API's `{"error": {"code", "message"}}` body and the HTTP status, never a
/// protocol error, so the model sees why it was refused.
pub fn tool_result(response: ApiResponse) -> CallToolResult {
    let ApiResponse { status, body } = response;
    if (200..300).contains(&status) {
        return match body {
            Value::Object(_) => CallToolResult::structured(body),
            // No JSON object to show (e.g. 204): the status says it worked.
            other => CallToolResult::structured(json!({"status": status, "body": other})),
        };
    }
    let error = match &body["error"] {
        Value::Object(error) if error.get("code").is_some_and(Value::is_string) => {
            Value::Object(error.clone())
        }
        _ => json!({
            "code": "unexpected_response",
            "message": format!("mnemo answered HTTP {status} without its error body: {}", excerpt(&body)),
        }),
    };
    CallToolResult::structured_error(json!({"error": error, "status": status}))
}

/// A transport failure: the API was not reached, or its answer was lost.
pub fn unreachable(base_url: &str, error: &reqwest::Error) -> CallToolResult {
    ToolError::new(
        "mnemo_unreachable",
        format!("cannot reach mnemo at {base_url}: {error}"),
    )
    .into_result()
}

fn excerpt(body: &Value) -> String {
    let text = match body {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    text.chars().take(200).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn structured(result: &CallToolResult) -> &Value {
        result
            .structured_content
            .as_ref()
            .expect("structured content")
    }

    #[test]
    fn a_2xx_is_a_success_with_the_answer_as_structured_content_and_text() {
        let body = json!({"accepted": 2, "duplicates": 0, "events": []});
        let result = tool_result(ApiResponse {
            status: 202,
            body: body.clone(),
        });
        assert_eq!(result.is_error, Some(false));
        assert_eq!(structured(&result), &body);
        let text = &result.content[0].as_text().expect("text content").text;
        assert_eq!(serde_json::from_str::<Value>(text).unwrap(), body);
    }

    #[test]
    fn an_api_error_is_a_tool_error_with_the_apis_code_message_and_status() {
        let result = tool_result(ApiResponse {
            status: 403,
            body: json!({"error": {"code": "insufficient_scope", "message": "this needs the memories:write scope"}}),
        });
        assert_eq!(result.is_error, Some(true));
        assert_eq!(
            structured(&result),
            &json!({
                "error": {"code": "insufficient_scope", "message": "this needs the memories:write scope"},
                "status": 403,
            })
        );
        let text = &result.content[0].as_text().expect("text content").text;
        assert!(text.contains("insufficient_scope"), "{text}");
    }

    #[test]
    fn an_error_without_the_apis_body_still_says_what_came_back() {
        let result = tool_result(ApiResponse {
            status: 502,
            body: Value::String("<html>bad gateway</html>".to_owned()),
        });
        assert_eq!(result.is_error, Some(true));
        let error = &structured(&result)["error"];
        assert_eq!(error["code"], "unexpected_response");
        assert!(error["message"].as_str().unwrap().contains("502"));
        assert!(error["message"].as_str().unwrap().contains("bad gateway"));
        assert_eq!(structured(&result)["status"], 502);
    }

    #[test]
    fn a_success_without_an_object_reports_its_status() {
        let result = tool_result(ApiResponse {
            status: 204,
            body: Value::Null,
        });
        assert_eq!(result.is_error, Some(false));
        assert_eq!(structured(&result)["status"], 204);
    }

    /// A server that reads each request and hangs up on the first `drop`
    /// of them without answering, then answers 202; it reports how many
    /// requests it read.
    async fn hanging_up_server(drop: usize) -> (String, tokio::task::JoinHandle<usize>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let served = tokio::spawn(async move {
            let mut requests = 0;
            loop {
                let accepted =
                    tokio::time::timeout(Duration::from_millis(500), listener.accept()).await;
                let Ok(Ok((mut socket, _))) = accepted else {
                    return requests;
                };
                // Headers, then as many body bytes as they announce.
                let mut seen = Vec::new();
                let mut buffer = [0u8; 4096];
                let complete = |seen: &[u8]| {
                    let text = String::from_utf8_lossy(seen);
                    let Some((head, body)) = text.split_once("\r\n\r\n") else {
                        return false;
                    };
                    let length = head
                        .lines()
                        .find_map(|line| {
                            line.to_lowercase()
                                .strip_prefix("content-length: ")
                                .map(str::to_owned)
                        })
                        .map_or(0, |n| n.trim().parse::<usize>().unwrap());
                    body.len() >= length
                };
                while !complete(&seen) {
                    let read = socket.read(&mut buffer).await.unwrap();
                    assert!(read > 0, "the client hung up first");
                    seen.extend_from_slice(&buffer[..read]);
                }
                requests += 1;
                if requests > drop {
                    let body = br#"{"accepted":1}"#;
                    let head = format!(
                        "HTTP/1.1 202 Accepted\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                        body.len()
                    );
                    socket.write_all(head.as_bytes()).await.unwrap();
                    socket.write_all(body).await.unwrap();
                }
            }
        });
        (url, served)
    }

    #[tokio::test]
    async fn an_idempotent_call_whose_answer_was_lost_is_sent_once_more() {
        let (url, served) = hanging_up_server(1).await;
        let api = ApiClient::new(&url).unwrap();
        let token = SecretString::from("token");
        let request = ApiRequest {
            idempotent: true,
            ..ApiRequest::post(
                "/v1/subjects/u/messages".to_owned(),
                json!({"messages": []}),
            )
        };
        let response = api.send(&token, &request).await.unwrap();
        assert_eq!(response.status, 202);
        assert_eq!(served.await.unwrap(), 2);
    }

    #[tokio::test]
    async fn any_other_call_is_sent_once_and_reported_unreachable() {
        let (url, served) = hanging_up_server(1).await;
        let api = ApiClient::new(&url).unwrap();
        let token = SecretString::from("token");
        let request = ApiRequest::post("/v1/subjects/u/memories".to_owned(), json!({}));
        let error = api.send(&token, &request).await.unwrap_err();
        assert_eq!(served.await.unwrap(), 1, "a second memory would be written");
        let result = unreachable(api.base_url(), &error);
        assert_eq!(result.is_error, Some(true));
        assert_eq!(structured(&result)["error"]["code"], "mnemo_unreachable");
    }

    #[test]
    fn the_base_url_must_be_an_http_root() {
        assert!(ApiClient::new("http://127.0.0.1:8080").is_ok());
        assert_eq!(
            ApiClient::new("http://127.0.0.1:8080/").unwrap().base_url(),
            "http://127.0.0.1:8080"
        );
        for bad in ["127.0.0.1:8080", "ftp://h", "http://h/?x=1", "not a url"] {
            assert!(
                matches!(ApiClient::new(bad), Err(McpError::InvalidUrl { .. })),
                "{bad}"
            );
        }
    }
}
