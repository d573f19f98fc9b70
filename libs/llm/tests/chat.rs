//! `OpenAiChat` against `MockLlmServer` (and raw wiremock for Azure): the
//! request it sends, retries, format downgrades and answer handling.

use std::time::{Duration, Instant};

use mnemo_llm::answer::parse_json;
use mnemo_llm::testsupport::{completion_body, user_prompt, MockLlmServer};
use mnemo_llm::{
    AnswerSchema, ChatRequest, LanguageModel, LlmConfig, LlmError, OpenAiChat, ResponseFormat,
    TokenUsage,
};
use serde_json::{json, Value};
use wiremock::matchers::{header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

const MODEL: &str = "test-chat-model";

fn config(base_url: &str) -> LlmConfig {
    let mut config = LlmConfig::new(base_url, MODEL);
    config.timeout = Duration::from_secs(5);
    config.initial_backoff = Duration::from_millis(1);
    config
}

fn chat(server: &MockLlmServer) -> OpenAiChat {
    OpenAiChat::new(config(&server.uri())).unwrap()
}

fn schema() -> AnswerSchema {
    AnswerSchema::new(
        "memories",
        json!({
            "type": "object",
            "properties": {"memories": {"type": "array", "items": {"type": "string"}}},
            "required": ["memories"],
        }),
    )
}

fn request() -> ChatRequest {
    ChatRequest::new("You extract facts.", "User: I like green tea.").with_schema(schema())
}

#[tokio::test]
async fn request_shape_and_bearer_header() {
    let server = MockLlmServer::start().await;
    server.push_answer(r#"{"memories": ["likes green tea"]}"#);
    let mut config = config(&server.uri());
    config.api_key = Some("sk-test".to_string().into());
    config.temperature = 0.2;
    config.max_tokens = Some(512);
    let chat = OpenAiChat::new(config).unwrap();
    assert_eq!(chat.model(), MODEL);

    let completion = chat.complete(&request()).await.unwrap();
    assert_eq!(completion.text, r#"{"memories": ["likes green tea"]}"#);
    assert_eq!(completion.attempts, 1);
    assert_eq!(completion.model, MODEL);

    let bodies = server.requests();
    assert_eq!(bodies.len(), 1);
    let body = &bodies[0];
    assert_eq!(body["model"], MODEL);
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "You extract facts."},
            {"role": "user", "content": "User: I like green tea."},
        ])
    );
    assert_eq!(body["temperature"], json!(0.2));
    assert_eq!(body["max_tokens"], 512);
    assert_eq!(body["stream"], false);
    assert_eq!(
        body["response_format"],
        json!({
            "type": "json_schema",
            "json_schema": {"name": "memories", "schema": schema().schema, "strict": false},
        })
    );
    assert_eq!(user_prompt(body), Some("User: I like green tea."));

    let received = server.server().received_requests().await.unwrap();
    assert_eq!(
        received[0].headers.get("authorization").unwrap(),
        "Bearer sk-test"
    );
    assert!(received[0].headers.get("api-key").is_none());
}

#[tokio::test]
async fn no_key_no_auth_header_and_defaults() {
    let server = MockLlmServer::start().await;
    let chat = chat(&server);
    chat.complete(&ChatRequest::new("s", "p")).await.unwrap();
    let body = &server.requests()[0];
    assert_eq!(body["temperature"], json!(0.0));
    assert!(body.get("max_tokens").is_none());
    // json_schema mode without a schema sends no response_format.
    assert!(body.get("response_format").is_none());
    let received = server.server().received_requests().await.unwrap();
    assert!(received[0].headers.get("authorization").is_none());
    assert!(received[0].headers.get("api-key").is_none());
}

#[tokio::test]
async fn json_object_and_none_modes() {
    let server = MockLlmServer::start().await;
    let mut object = config(&server.uri());
    object.response_format = ResponseFormat::JsonObject;
    OpenAiChat::new(object)
        .unwrap()
        .complete(&request())
        .await
        .unwrap();
    let mut none = config(&server.uri());
    none.response_format = "none".parse().unwrap();
    OpenAiChat::new(none)
        .unwrap()
        .complete(&request())
        .await
        .unwrap();
    let bodies = server.requests();
    assert_eq!(bodies[0]["response_format"], json!({"type": "json_object"}));
    assert!(bodies[1].get("response_format").is_none());
}

#[tokio::test]
async fn azure_uses_api_key_and_keeps_the_query_string() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/openai/deployments/gpt4o/chat/completions"))
        .and(query_param("api-version", "2024-10-21"))
        .and(header("api-key", "azure-key"))
        .respond_with(|request: &wiremock::Request| {
            let body: Value = request.body_json().unwrap();
            ResponseTemplate::new(200).set_body_json(completion_body(&body, "{}"))
        })
        .expect(1)
        .mount(&server)
        .await;
    let mut config = config(&format!(
        "{}/openai/deployments/gpt4o?api-version=2024-10-21",
        server.uri()
    ));
    config.api_key = Some("azure-key".to_string().into());
    let chat = OpenAiChat::new(config).unwrap();
    assert!(chat
        .endpoint()
        .ends_with("/openai/deployments/gpt4o/chat/completions?api-version=2024-10-21"));
    let completion = chat.complete(&request()).await.unwrap();
    assert_eq!(completion.text, "{}");
    let received = server.received_requests().await.unwrap();
    assert!(received[0].headers.get("authorization").is_none());
}

#[tokio::test]
async fn server_error_then_success_is_retried() {
    let server = MockLlmServer::start().await;
    server
        .push_status(500, r#"{"error": {"message": "overloaded"}}"#)
        .push_answer(r#"{"memories": []}"#);
    let completion = chat(&server).complete(&request()).await.unwrap();
    assert_eq!(completion.attempts, 2);
    assert_eq!(server.request_count(), 2);
}

#[tokio::test]
async fn rate_limit_honours_retry_after() {
    let server = MockLlmServer::start().await;
    server
        .push_response(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "0.2")
                .set_body_json(json!({"error": {"message": "rate limited"}})),
        )
        .push_answer("{}");
    let started = Instant::now();
    let completion = chat(&server).complete(&request()).await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(200));
    assert_eq!(completion.attempts, 2);
}

#[tokio::test]
async fn other_client_errors_fail_at_once() {
    let server = MockLlmServer::start().await;
    server.push_status(400, r#"{"error": {"message": "context length exceeded"}}"#);
    let error = chat(&server).complete(&request()).await.unwrap_err();
    match error {
        LlmError::Rejected { status, message } => {
            assert_eq!(status, 400);
            assert_eq!(message, "context length exceeded");
        }
        other => panic!("expected Rejected, got {other:?}"),
    }
    assert_eq!(server.request_count(), 1);

    server.push_status(401, "unauthorized");
    assert!(matches!(
        chat(&server).complete(&request()).await,
        Err(LlmError::Rejected { status: 401, .. })
    ));
    assert_eq!(server.request_count(), 2);
}

#[tokio::test]
async fn retries_exhausted_is_transient() {
    let server = MockLlmServer::start().await;
    for _ in 0..3 {
        server.push_status(503, "unavailable");
    }
    server.push_answer("never reached");
    let mut config = config(&server.uri());
    config.max_retries = 2;
    let error = OpenAiChat::new(config)
        .unwrap()
        .complete(&request())
        .await
        .unwrap_err();
    assert!(error.is_transient(), "{error:?}");
    assert!(error.to_string().contains("503"), "{error}");
    assert_eq!(server.request_count(), 3);
    assert_eq!(server.pending(), 1);
}

#[tokio::test]
async fn timeouts_are_retried_then_transient() {
    let server = MockLlmServer::start().await;
    server
        .push_delay("{}", Duration::from_millis(400))
        .push_delay("{}", Duration::from_millis(400));
    let mut config = config(&server.uri());
    config.timeout = Duration::from_millis(150);
    config.max_retries = 1;
    let error = OpenAiChat::new(config)
        .unwrap()
        .complete(&request())
        .await
        .unwrap_err();
    assert!(
        matches!(&error, LlmError::Transient(reason) if reason.contains("timeout")),
        "{error:?}"
    );
    assert_eq!(server.request_count(), 2);
}

#[tokio::test]
async fn a_slow_answer_within_the_timeout_succeeds_after_a_timed_out_one() {
    let server = MockLlmServer::start().await;
    server
        .push_delay("{}", Duration::from_millis(400))
        .push_delay(r#"{"ok": true}"#, Duration::from_millis(20));
    let mut config = config(&server.uri());
    config.timeout = Duration::from_millis(150);
    let completion = OpenAiChat::new(config)
        .unwrap()
        .complete(&request())
        .await
        .unwrap();
    assert_eq!(completion.text, r#"{"ok": true}"#);
    assert_eq!(completion.attempts, 2);
}

#[tokio::test]
async fn connection_errors_are_transient() {
    // A port that was just free: nothing listens there (wiremock servers
    // are pooled and keep listening after a drop).
    let uri = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/v1", listener.local_addr().unwrap())
    };
    let mut config = config(&uri);
    config.max_retries = 1;
    let error = OpenAiChat::new(config)
        .unwrap()
        .complete(&request())
        .await
        .unwrap_err();
    assert!(error.is_transient(), "{error:?}");
}

#[tokio::test]
async fn unsupported_response_format_is_downgraded_and_remembered() {
    let server = MockLlmServer::start().await;
    server
        .push_status(
            400,
            r#"{"error": {"message": "This response_format type is unavailable now"}}"#,
        )
        .push_answer(r#"{"memories": ["a"]}"#);
    let chat = chat(&server);
    let completion = chat.complete(&request()).await.unwrap();
    assert_eq!(completion.text, r#"{"memories": ["a"]}"#);
    assert_eq!(completion.attempts, 2);
    assert_eq!(chat.response_format(), ResponseFormat::JsonObject);

    // The next call starts with json_object.
    let completion = chat.complete(&request()).await.unwrap();
    assert_eq!(completion.attempts, 1);
    let formats: Vec<Value> = server
        .requests()
        .iter()
        .map(|body| body["response_format"]["type"].clone())
        .collect();
    assert_eq!(
        formats,
        vec![
            json!("json_schema"),
            json!("json_object"),
            json!("json_object")
        ]
    );
}

#[tokio::test]
async fn downgrade_goes_down_to_none_and_is_not_a_retry() {
    let server = MockLlmServer::start().await;
    server
        .push_status(422, r#"{"detail": "json_schema is not supported"}"#)
        .push_status(400, r#"{"error": "unknown field response_format"}"#)
        .push_answer("{}");
    let mut config = config(&server.uri());
    // No retries at all: downgrades must not consume them.
    config.max_retries = 0;
    let chat = OpenAiChat::new(config).unwrap();
    let completion = chat.complete(&request()).await.unwrap();
    assert_eq!(completion.attempts, 3);
    assert_eq!(chat.response_format(), ResponseFormat::None);
    let bodies = server.requests();
    assert_eq!(bodies[0]["response_format"]["type"], "json_schema");
    assert_eq!(bodies[1]["response_format"]["type"], "json_object");
    assert!(bodies[2].get("response_format").is_none());

    // Once at none, such a complaint is a plain rejection.
    server.push_status(400, r#"{"error": "response_format is bad"}"#);
    assert!(matches!(
        chat.complete(&request()).await,
        Err(LlmError::Rejected { status: 400, .. })
    ));
}

#[tokio::test]
async fn a_format_complaint_without_a_format_sent_is_a_rejection() {
    let server = MockLlmServer::start().await;
    server.push_status(400, r#"{"error": "response_format required"}"#);
    let chat = chat(&server);
    // json_schema mode, no schema: no response_format was sent.
    let error = chat
        .complete(&ChatRequest::new("s", "p"))
        .await
        .unwrap_err();
    assert!(matches!(error, LlmError::Rejected { status: 400, .. }));
    assert_eq!(chat.response_format(), ResponseFormat::JsonSchema);
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn reported_usage_is_used() {
    let server = MockLlmServer::start().await;
    let mut body = completion_body(&json!({"model": "served-model"}), "{}");
    body["usage"] = json!({"prompt_tokens": 1234, "completion_tokens": 56, "total_tokens": 1290});
    server.push_json(200, body);
    let completion = chat(&server).complete(&request()).await.unwrap();
    assert_eq!(completion.usage, TokenUsage::new(1234, 56));
    assert!(!completion.usage_estimated);
    assert_eq!(completion.model, "served-model");
}

#[tokio::test]
async fn missing_usage_is_estimated() {
    let server = MockLlmServer::start().await;
    let answer = r#"{"memories": ["likes green tea"]}"#; // 34 chars → 9 tokens
    let mut body = completion_body(&json!({}), answer);
    body.as_object_mut().unwrap().remove("usage");
    body.as_object_mut().unwrap().remove("model");
    server.push_json(200, body);
    let request = request();
    let completion = chat(&server).complete(&request).await.unwrap();
    assert!(completion.usage_estimated);
    let expected_prompt = (request.system.chars().count() as u64).div_ceil(4)
        + (request.prompt.chars().count() as u64).div_ceil(4);
    assert_eq!(completion.usage, TokenUsage::new(expected_prompt, 9));
    assert_eq!(completion.model, MODEL);
}

#[tokio::test]
async fn think_blocks_are_stripped() {
    let server = MockLlmServer::start().await;
    server
        .push_answer("<think>\nThe user likes tea {maybe}.\n</think>\n\n{\"memories\": [\"tea\"]}")
        .push_answer("  {\"plain\": true}  ");
    let chat = chat(&server);
    let completion = chat.complete(&request()).await.unwrap();
    assert_eq!(completion.text, r#"{"memories": ["tea"]}"#);
    let completion = chat.complete(&request()).await.unwrap();
    assert_eq!(completion.text, r#"{"plain": true}"#);
}

#[tokio::test]
async fn empty_or_missing_content_is_malformed_and_not_retried() {
    let server = MockLlmServer::start().await;
    server
        .push_answer("")
        .push_answer("<think>thinking forever")
        .push_json(
            200,
            json!({"choices": [{"message": {"role": "assistant", "content": null}}]}),
        )
        .push_json(200, json!({"choices": []}))
        .push_status(200, "not json at all");
    let chat = chat(&server);
    for _ in 0..5 {
        let error = chat.complete(&request()).await.unwrap_err();
        assert!(matches!(error, LlmError::Malformed(_)), "{error:?}");
    }
    assert_eq!(server.request_count(), 5);
}

#[tokio::test]
async fn responder_fallback_and_recorded_requests() {
    let server = MockLlmServer::start().await;
    let chat = chat(&server);
    // Default fallback.
    let completion = chat.complete(&request()).await.unwrap();
    assert_eq!(
        parse_json(&completion.text).unwrap(),
        json!({"memories": []})
    );
    assert!(!completion.usage_estimated);

    server.set_fallback(r#"{"memories": ["fallback"]}"#);
    let completion = chat.complete(&request()).await.unwrap();
    assert_eq!(completion.text, r#"{"memories": ["fallback"]}"#);

    server.respond_with(|body| {
        let prompt = user_prompt(body).unwrap_or_default();
        json!({"echo": prompt.len()}).to_string()
    });
    // Queued replies come first, then the responder.
    server.push_answer("queued");
    let first = chat.complete(&ChatRequest::new("s", "abc")).await.unwrap();
    let second = chat
        .complete(&ChatRequest::new("s", "abcdef"))
        .await
        .unwrap();
    assert_eq!(first.text, "queued");
    assert_eq!(second.text, r#"{"echo":6}"#);
    assert_eq!(server.request_count(), 4);
    assert_eq!(
        server.prompts(),
        vec![
            "User: I like green tea.",
            "User: I like green tea.",
            "abc",
            "abcdef"
        ]
    );
}

#[tokio::test]
async fn fenced_answers_parse_end_to_end() {
    let server = MockLlmServer::start().await;
    server.push_answer("Here are the facts:\n```json\n{\"memories\": [\"a\", \"b\",],}\n```");
    let completion = chat(&server).complete(&request()).await.unwrap();
    assert_eq!(
        parse_json(&completion.text).unwrap(),
        json!({"memories": ["a", "b"]})
    );
}

#[tokio::test]
async fn usable_through_the_port() {
    let server = MockLlmServer::start().await;
    let model: std::sync::Arc<dyn LanguageModel> = std::sync::Arc::new(chat(&server));
    let completion = model.complete(&request()).await.unwrap();
    assert_eq!(completion.attempts, 1);
    assert!(completion.usage.total() > 0);
}
