//! The OpenAI-compatible adapter against a mock server speaking the real
//! `/v1/embeddings` protocol.

use std::time::{Duration, Instant};

use mnemo_embed::{EmbedError, Embedder, OpenAiConfig, OpenAiEmbedder};
use serde_json::{json, Value};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// Answers like OpenAI: one embedding per input, listed in reverse order with
/// `index` fields (so order must come from `index`), unnormalised (so the
/// client must normalise). Input `"text-{i}"` gets `[i + 1, 2, 0, …]`.
struct EchoEmbeddings {
    default_dimension: usize,
}

impl Respond for EchoEmbeddings {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = request.body_json().expect("json request body");
        let dimension = body["dimensions"]
            .as_u64()
            .map_or(self.default_dimension, |d| d as usize);
        let inputs = body["input"].as_array().expect("input is an array");
        let mut data: Vec<Value> = inputs
            .iter()
            .enumerate()
            .map(|(index, input)| {
                let number: f32 = input
                    .as_str()
                    .and_then(|s| s.strip_prefix("text-"))
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0.0);
                let mut embedding = vec![0.0f32; dimension];
                embedding[0] = number + 1.0;
                embedding[1] = 2.0;
                json!({"object": "embedding", "index": index, "embedding": embedding})
            })
            .collect();
        data.reverse();
        ResponseTemplate::new(200).set_body_json(json!({
            "object": "list",
            "data": data,
            "model": body["model"],
            "usage": {"prompt_tokens": 1, "total_tokens": 1},
        }))
    }
}

fn texts(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("text-{i}")).collect()
}

fn config(server: &MockServer, dimension: Option<usize>) -> OpenAiConfig {
    let mut config = OpenAiConfig::new(format!("{}/v1", server.uri()), "test-embedding-model");
    config.dimension = dimension;
    config.timeout = Duration::from_secs(5);
    config
}

fn assert_echo_vectors(vectors: &[Vec<f32>], dimension: usize) {
    for (i, vector) in vectors.iter().enumerate() {
        assert_eq!(vector.len(), dimension);
        let norm: f32 = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!(
            (norm - 1.0).abs() < 1e-5,
            "vector {i} not normalised: {norm}"
        );
        let ratio = vector[0] / vector[1];
        let expected = (i as f32 + 1.0) / 2.0;
        assert!(
            (ratio - expected).abs() < 1e-4,
            "vector {i} out of order: ratio {ratio}, expected {expected}"
        );
    }
}

async fn requests(server: &MockServer) -> Vec<Request> {
    server.received_requests().await.expect("recording is on")
}

#[tokio::test]
async fn batches_split_at_batch_size_and_keep_order() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(EchoEmbeddings {
            default_dimension: 8,
        })
        .mount(&server)
        .await;
    let mut config = config(&server, Some(3));
    config.batch_size = 4;
    let embedder = OpenAiEmbedder::new(config).await.unwrap();
    assert_eq!(embedder.space().dimension, 3);
    assert_eq!(embedder.space().model, "test-embedding-model");

    let vectors = embedder.embed(&texts(10)).await.unwrap();
    assert_eq!(vectors.len(), 10);
    assert_echo_vectors(&vectors, 3);

    let requests = requests(&server).await;
    let batches: Vec<Vec<String>> = requests
        .iter()
        .map(|r| {
            let body: Value = r.body_json().unwrap();
            assert_eq!(body["model"], "test-embedding-model");
            assert_eq!(body["dimensions"], 3, "configured dimension is sent");
            serde_json::from_value(body["input"].clone()).unwrap()
        })
        .collect();
    assert_eq!(
        batches,
        vec![
            texts(10)[0..4].to_vec(),
            texts(10)[4..8].to_vec(),
            texts(10)[8..10].to_vec()
        ]
    );
    assert!(embedder.embed(&[]).await.unwrap().is_empty());
}

#[tokio::test]
async fn rate_limit_is_retried_after_the_requested_pause() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "1")
                .set_body_json(json!({"error": {"message": "rate limited"}})),
        )
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(EchoEmbeddings {
            default_dimension: 3,
        })
        .mount(&server)
        .await;
    let embedder = OpenAiEmbedder::new(config(&server, Some(3))).await.unwrap();

    let started = Instant::now();
    let vectors = embedder.embed(&texts(2)).await.unwrap();
    let waited = started.elapsed();

    assert_echo_vectors(&vectors, 3);
    assert_eq!(requests(&server).await.len(), 2);
    // Plain backoff for a first retry is at most 250 ms: a full second
    // means Retry-After was honoured.
    assert!(waited >= Duration::from_secs(1), "waited only {waited:?}");
}

#[tokio::test]
async fn server_errors_are_retried_until_success() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(ResponseTemplate::new(500).set_body_string("upstream exploded"))
        .up_to_n_times(3)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(EchoEmbeddings {
            default_dimension: 3,
        })
        .mount(&server)
        .await;
    let embedder = OpenAiEmbedder::new(config(&server, Some(3))).await.unwrap();

    let vectors = embedder.embed(&texts(3)).await.unwrap();

    assert_echo_vectors(&vectors, 3);
    assert_eq!(requests(&server).await.len(), 4);
}

#[tokio::test]
async fn persistent_server_errors_exhaust_the_retry_budget() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(ResponseTemplate::new(503))
        .mount(&server)
        .await;
    let mut config = config(&server, Some(3));
    config.max_retries = 2;
    let embedder = OpenAiEmbedder::new(config).await.unwrap();

    let error = embedder.embed(&texts(1)).await.unwrap_err();

    assert!(
        matches!(error, EmbedError::RetriesExhausted { attempts: 3, .. }),
        "{error:?}"
    );
    assert_eq!(error.code(), "embed_retries_exhausted");
    assert_eq!(requests(&server).await.len(), 3);
}

#[tokio::test]
async fn bad_request_fails_at_once_with_the_server_message() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(ResponseTemplate::new(400).set_body_json(json!({
            "error": {"message": "model 'nope' does not exist", "type": "invalid_request_error"}
        })))
        .mount(&server)
        .await;
    let embedder = OpenAiEmbedder::new(config(&server, Some(3))).await.unwrap();

    let error = embedder.embed(&texts(2)).await.unwrap_err();

    match &error {
        EmbedError::Rejected { status, message } => {
            assert_eq!(*status, 400);
            assert_eq!(message, "model 'nope' does not exist");
        }
        other => panic!("expected a rejection, got {other:?}"),
    }
    assert!(error.to_string().contains("400"));
    assert_eq!(requests(&server).await.len(), 1, "a 400 is not retried");
}

#[tokio::test]
async fn wrong_count_in_the_answer_is_an_error() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "object": "list",
            "data": [{"object": "embedding", "index": 0, "embedding": [1.0, 0.0, 0.0]}],
        })))
        .mount(&server)
        .await;
    let embedder = OpenAiEmbedder::new(config(&server, Some(3))).await.unwrap();

    let error = embedder.embed(&texts(2)).await.unwrap_err();

    assert!(matches!(error, EmbedError::InvalidResponse(_)), "{error:?}");
    assert!(error.to_string().contains("expected 2 embeddings, got 1"));
    assert_eq!(
        requests(&server).await.len(),
        1,
        "a bad answer is not retried"
    );
}

#[tokio::test]
async fn wrong_dimension_in_the_answer_is_an_error() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "object": "list",
            "data": [{"object": "embedding", "index": 0, "embedding": [1.0, 0.0, 0.0, 0.0]}],
        })))
        .mount(&server)
        .await;
    let embedder = OpenAiEmbedder::new(config(&server, Some(3))).await.unwrap();

    let error = embedder.embed(&texts(1)).await.unwrap_err();

    assert!(matches!(error, EmbedError::InvalidResponse(_)), "{error:?}");
    assert!(
        error.to_string().contains("dimension 4, expected 3"),
        "{error}"
    );
}

#[tokio::test]
async fn malformed_and_zero_answers_are_errors() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(ResponseTemplate::new(200).set_body_string("<html>proxy</html>"))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "data": [{"index": 0, "embedding": [0.0, 0.0, 0.0]}],
        })))
        .mount(&server)
        .await;
    let embedder = OpenAiEmbedder::new(config(&server, Some(3))).await.unwrap();

    let malformed = embedder.embed(&texts(1)).await.unwrap_err();
    assert!(
        malformed.to_string().contains("malformed body"),
        "{malformed}"
    );
    let zero = embedder.embed(&texts(1)).await.unwrap_err();
    assert!(zero.to_string().contains("zero or not finite"), "{zero}");
}

#[tokio::test]
async fn api_key_is_sent_as_bearer_token() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .and(header("authorization", "Bearer sk-test-123"))
        .respond_with(EchoEmbeddings {
            default_dimension: 3,
        })
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(
            ResponseTemplate::new(401)
                .set_body_json(json!({"error": {"message": "missing api key"}})),
        )
        .mount(&server)
        .await;

    let mut with_key = config(&server, Some(3));
    with_key.api_key = Some("sk-test-123".into());
    let embedder = OpenAiEmbedder::new(with_key).await.unwrap();
    assert_echo_vectors(&embedder.embed(&texts(1)).await.unwrap(), 3);
    assert!(
        !format!("{embedder:?}").contains("sk-test-123"),
        "key leaks in Debug"
    );

    let without_key = OpenAiEmbedder::new(config(&server, Some(3))).await.unwrap();
    let error = without_key.embed(&texts(1)).await.unwrap_err();
    assert!(
        matches!(error, EmbedError::Rejected { status: 401, .. }),
        "{error:?}"
    );
}

#[tokio::test]
async fn dimension_is_probed_once_when_not_configured() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(EchoEmbeddings {
            default_dimension: 5,
        })
        .mount(&server)
        .await;

    let embedder = OpenAiEmbedder::new(config(&server, None)).await.unwrap();

    assert_eq!(embedder.space().dimension, 5);
    let probes = requests(&server).await;
    assert_eq!(probes.len(), 1);
    let probe: Value = probes[0].body_json().unwrap();
    assert_eq!(probe["input"].as_array().map(Vec::len), Some(1));
    assert!(probe.get("dimensions").is_none(), "nothing to request yet");

    assert_echo_vectors(&embedder.embed(&texts(2)).await.unwrap(), 5);
}

#[tokio::test]
async fn timeouts_are_retried() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(
            EchoEmbeddings {
                default_dimension: 3,
            }
            .respond_slowly(Duration::from_secs(3)),
        )
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(EchoEmbeddings {
            default_dimension: 3,
        })
        .mount(&server)
        .await;
    let mut config = config(&server, Some(3));
    config.timeout = Duration::from_millis(500);
    let embedder = OpenAiEmbedder::new(config).await.unwrap();

    let vectors = embedder.embed(&texts(2)).await.unwrap();

    assert_echo_vectors(&vectors, 3);
    assert_eq!(requests(&server).await.len(), 2);
}

#[tokio::test]
async fn connection_errors_are_retried_then_reported() {
    // Bind and drop a listener: nothing accepts on that port any more.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut config = OpenAiConfig::new(format!("http://127.0.0.1:{port}/v1"), "m");
    config.dimension = Some(3);
    config.max_retries = 1;
    let embedder = OpenAiEmbedder::new(config).await.unwrap();

    let error = embedder.embed(&texts(1)).await.unwrap_err();

    match error {
        EmbedError::RetriesExhausted {
            attempts,
            last_error,
        } => {
            assert_eq!(attempts, 2);
            assert!(last_error.contains("connection"), "{last_error}");
        }
        other => panic!("expected exhausted retries, got {other:?}"),
    }
}

#[tokio::test]
async fn invalid_configs_are_refused_up_front() {
    for (base_url, model, batch_size) in [
        ("not a url", "m", 4),
        ("ftp://host/v1", "m", 4),
        ("http://localhost:1/v1", " ", 4),
        ("http://localhost:1/v1", "m", 0),
    ] {
        let mut config = OpenAiConfig::new(base_url, model);
        config.batch_size = batch_size;
        config.dimension = Some(3);
        let error = OpenAiEmbedder::new(config).await.unwrap_err();
        assert_eq!(error.code(), "embed_invalid_config", "{base_url} {model:?}");
    }
}

/// Delays an inner responder (wiremock's `set_delay` lives on templates).
trait RespondSlowly: Respond + Sized {
    fn respond_slowly(self, delay: Duration) -> Slow<Self> {
        Slow { inner: self, delay }
    }
}

impl<R: Respond> RespondSlowly for R {}

struct Slow<R> {
    inner: R,
    delay: Duration,
}

impl<R: Respond> Respond for Slow<R> {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        self.inner.respond(request).set_delay(self.delay)
    }
}
