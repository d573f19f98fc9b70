//! Adapter for any OpenAI-compatible `POST {base_url}/embeddings` endpoint
//! (OpenAI, Azure-style proxies, Ollama, vLLM, llama.cpp server, TEI…).
//!
//! Transient failures — 429, 408, 5xx, timeouts, dropped connections — are
//! retried with exponential backoff and jitter, waiting at least as long as
//! a `Retry-After` header asks; any other 4xx fails at once because sending
//! the same request again cannot fix it. That policy is shared with the chat
//! client and lives in [`mnemo_llm::retry`]. Answers are checked (one vector per
//! input, in `index` order, all of the space's dimension) and re-normalised,
//! since not every server returns unit vectors.

use std::time::Duration;

use mnemo_llm::retry::{
    classify_transport_error, is_transient_status, upstream_message, Backoff, TransportFailure,
};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;

use crate::{l2_normalize, EmbedError, Embedder, EmbeddingSpace};

const DEFAULT_BATCH_SIZE: usize = 64;
const DEFAULT_MAX_RETRIES: u32 = 4;
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// The text sent once to learn an endpoint's dimension; not subject content.
const PROBE_TEXT: &str = "dimension probe";

/// How to reach an OpenAI-compatible embeddings endpoint.
#[derive(Debug, Clone)]
pub struct OpenAiConfig {
    /// Up to and including the API version, e.g. `http://localhost:11434/v1`
    /// or `https://api.openai.com/v1`; `/embeddings` is appended.
    pub base_url: String,
    pub model: String,
    /// Sent as `Authorization: Bearer …` when set (local servers need none).
    pub api_key: Option<SecretString>,
    /// Sent as `dimensions` when set (models with Matryoshka truncation);
    /// when `None`, the endpoint is probed once to learn it.
    pub dimension: Option<usize>,
    /// Texts per request; default 64.
    pub batch_size: usize,
    /// Retries after the first attempt; default 4.
    pub max_retries: u32,
    /// Per-request timeout; default 30 s.
    pub timeout: Duration,
}

impl OpenAiConfig {
    /// A config with the default batch size, retries and timeout.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            dimension: None,
            batch_size: DEFAULT_BATCH_SIZE,
            max_retries: DEFAULT_MAX_RETRIES,
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

/// Embedder backed by an OpenAI-compatible HTTP endpoint.
#[derive(Debug)]
pub struct OpenAiEmbedder {
    client: reqwest::Client,
    url: String,
    config: OpenAiConfig,
    space: EmbeddingSpace,
}

impl OpenAiEmbedder {
    /// Validates the config and, when no dimension is configured, probes the
    /// endpoint once with a short fixed text to learn it.
    pub async fn new(config: OpenAiConfig) -> Result<Self, EmbedError> {
        let base_url = config.base_url.trim().trim_end_matches('/');
        let parsed = reqwest::Url::parse(base_url).map_err(|e| {
            EmbedError::InvalidConfig(format!("embedding base url {base_url:?}: {e}"))
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(EmbedError::InvalidConfig(format!(
                "embedding base url {base_url:?} must be http or https"
            )));
        }
        if config.model.trim().is_empty() {
            return Err(EmbedError::InvalidConfig(
                "embedding model name is empty".into(),
            ));
        }
        if config.batch_size == 0 {
            return Err(EmbedError::InvalidConfig(
                "embedding batch size must be positive".into(),
            ));
        }
        if config.dimension == Some(0) {
            return Err(EmbedError::InvalidConfig(
                "embedding dimension must be positive".into(),
            ));
        }
        if config.timeout.is_zero() {
            return Err(EmbedError::InvalidConfig(
                "embedding timeout must be positive".into(),
            ));
        }
        let client = reqwest::Client::builder()
            .timeout(config.timeout)
            .user_agent(concat!("mnemo-embed/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| EmbedError::InvalidConfig(format!("http client: {e}")))?;
        let url = format!("{base_url}/embeddings");

        let mut embedder = Self {
            client,
            url,
            space: EmbeddingSpace::new(config.model.clone(), config.dimension.unwrap_or(0)),
            config,
        };
        if embedder.config.dimension.is_none() {
            let probe = embedder
                .request_with_retries(&[PROBE_TEXT.to_string()], None)
                .await?;
            let dimension = probe.first().map(Vec::len).unwrap_or(0);
            tracing::info!(
                model = %embedder.config.model,
                dimension,
                "learned embedding dimension from the endpoint"
            );
            embedder.space.dimension = dimension;
        }
        Ok(embedder)
    }

    async fn request_with_retries(
        &self,
        inputs: &[String],
        expected_dimension: Option<usize>,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut attempt: u32 = 0;
        loop {
            match self.request_once(inputs).await {
                Ok(answer) => return check_answer(answer, inputs.len(), expected_dimension),
                Err(Failure::Fatal(error)) => return Err(error),
                Err(Failure::Transient {
                    reason,
                    retry_after,
                }) => {
                    if attempt >= self.config.max_retries {
                        return Err(EmbedError::RetriesExhausted {
                            attempts: attempt + 1,
                            last_error: reason,
                        });
                    }
                    let delay = Backoff::default().delay(attempt, retry_after);
                    tracing::warn!(
                        model = %self.config.model,
                        attempt = attempt + 1,
                        max_retries = self.config.max_retries,
                        delay_ms = delay.as_millis() as u64,
                        reason = %reason,
                        "embedding request failed; retrying"
                    );
                    tokio::time::sleep(delay).await;
                    attempt += 1;
                }
            }
        }
    }

    /// One HTTP exchange. A malformed 2xx answer is fatal, not transient: the
    /// server would most likely send the same again.
    async fn request_once(&self, inputs: &[String]) -> Result<Answer, Failure> {
        let mut body = serde_json::json!({
            "model": self.config.model,
            "input": inputs,
        });
        if let Some(dimension) = self.config.dimension {
            body["dimensions"] = dimension.into();
        }
        let mut request = self.client.post(&self.url).json(&body);
        if let Some(key) = &self.config.api_key {
            request = request.bearer_auth(key.expose_secret());
        }
        let response = request.send().await.map_err(transport_failure)?;
        let status = response.status();
        let retry_after = Backoff::default().retry_after(response.headers());
        let bytes = response.bytes().await.map_err(transport_failure)?;
        if status.is_success() {
            return serde_json::from_slice(&bytes).map_err(|e| {
                Failure::Fatal(EmbedError::InvalidResponse(format!("malformed body: {e}")))
            });
        }
        let message = upstream_message(&bytes);
        if is_transient_status(status) {
            return Err(Failure::Transient {
                reason: format!("status {}: {message}", status.as_u16()),
                retry_after,
            });
        }
        Err(Failure::Fatal(EmbedError::Rejected {
            status: status.as_u16(),
            message,
        }))
    }
}

#[async_trait::async_trait]
impl Embedder for OpenAiEmbedder {
    fn space(&self) -> &EmbeddingSpace {
        &self.space
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut vectors = Vec::with_capacity(texts.len());
        for batch in texts.chunks(self.config.batch_size) {
            vectors.extend(
                self.request_with_retries(batch, Some(self.space.dimension))
                    .await?,
            );
        }
        Ok(vectors)
    }
}

enum Failure {
    /// Worth another attempt after a pause.
    Transient {
        reason: String,
        retry_after: Option<Duration>,
    },
    Fatal(EmbedError),
}

fn transport_failure(error: reqwest::Error) -> Failure {
    match classify_transport_error(&error) {
        TransportFailure::Config(message) => Failure::Fatal(EmbedError::InvalidConfig(message)),
        TransportFailure::Transient(reason) => Failure::Transient {
            reason,
            retry_after: None,
        },
    }
}

#[derive(Deserialize)]
struct Answer {
    data: Vec<AnswerItem>,
}

#[derive(Deserialize)]
struct AnswerItem {
    index: Option<usize>,
    embedding: Vec<f32>,
}

/// One vector per input, placed by `index`, all of one dimension, unit
/// length.
fn check_answer(
    answer: Answer,
    expected_count: usize,
    expected_dimension: Option<usize>,
) -> Result<Vec<Vec<f32>>, EmbedError> {
    if answer.data.len() != expected_count {
        return Err(EmbedError::InvalidResponse(format!(
            "expected {expected_count} embeddings, got {}",
            answer.data.len()
        )));
    }
    // OpenAI documents `index` as the input position; honour it rather than
    // trusting the array order, and refuse answers where it is inconsistent.
    let mut slots: Vec<Option<Vec<f32>>> = vec![None; expected_count];
    let indexed = answer.data.iter().all(|item| item.index.is_some());
    for (position, item) in answer.data.into_iter().enumerate() {
        let index = if indexed {
            item.index.unwrap_or(position)
        } else {
            position
        };
        let slot = slots.get_mut(index).ok_or_else(|| {
            EmbedError::InvalidResponse(format!("embedding index {index} out of range"))
        })?;
        if slot.replace(item.embedding).is_some() {
            return Err(EmbedError::InvalidResponse(format!(
                "embedding index {index} appears twice"
            )));
        }
    }
    let mut vectors: Vec<Vec<f32>> = slots.into_iter().map(Option::unwrap_or_default).collect();
    let dimension = expected_dimension.unwrap_or_else(|| vectors.first().map_or(0, Vec::len));
    if dimension == 0 {
        return Err(EmbedError::InvalidResponse("empty embedding".into()));
    }
    for (index, vector) in vectors.iter_mut().enumerate() {
        if vector.len() != dimension {
            return Err(EmbedError::InvalidResponse(format!(
                "embedding {index} has dimension {}, expected {dimension}",
                vector.len()
            )));
        }
        if !l2_normalize(vector) {
            return Err(EmbedError::InvalidResponse(format!(
                "embedding {index} is zero or not finite"
            )));
        }
    }
    Ok(vectors)
}
