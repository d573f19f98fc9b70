//! mnemo-llm owns the [`LanguageModel`] port — a system text and a prompt in,
//! one answer out — and its adapter for OpenAI-compatible
//! `POST {base_url}/chat/completions` endpoints, [`OpenAiChat`].
//!
//! Why a port: the consolidator (extracting memories from conversations) and
//! any other LLM-backed step depend only on the lightweight
//! `complete(system, prompt)` seam, so tests run against a scripted fake or
//! [`testsupport::MockLlmServer`] (feature `testsupport`), and a deployment
//! picks its provider by configuration alone.
//!
//! Why one adapter is enough: the chat-completions protocol is the de facto
//! standard. [`OpenAiChat`] targets OpenAI, Azure OpenAI (deployment URL with
//! `?api-version=`, `api-key` header), Ollama and vLLM (`/v1`, usually no
//! key), DeepSeek and Qwen/DashScope's compatible mode — and the differences
//! between them that matter are handled here rather than by callers:
//! - structured output: `json_schema` is asked for first and downgraded, once
//!   per client, to `json_object` and then to none when a server says it does
//!   not support it (DeepSeek and Qwen only do `json_object`; older Ollama and
//!   vLLM neither);
//! - answers may arrive wrapped (code fences, prose, `<think>` blocks of
//!   reasoning models, trailing commas): [`answer::parse_json`] repairs what
//!   is safe to repair;
//! - some servers omit `usage`: token counts are then estimated and flagged
//!   ([`Completion::usage_estimated`]) so cost reporting stays honest.
//!
//! Transient failures (429, 408, 5xx, timeouts, dropped connections) are
//! retried with the policy in [`retry`], shared with mnemo-embed's embeddings
//! client; other 4xx fail at once.
//!
//! Prompts and answers hold end-user data: nothing in this crate logs them or
//! puts them in error messages. Logs carry status codes, attempts, the model
//! and token counts.
//!
//! ```no_run
//! use mnemo_llm::{answer, AnswerSchema, ChatRequest, LanguageModel, LlmConfig, OpenAiChat};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let chat = OpenAiChat::new(LlmConfig::new("http://localhost:11434/v1", "qwen2.5:7b"))?;
//! let request = ChatRequest::new("Extract durable facts as JSON.", "User: I like green tea.")
//!     .with_schema(AnswerSchema::new(
//!         "memories",
//!         serde_json::json!({"type": "object", "properties": {"memories": {"type": "array"}}}),
//!     ));
//! let completion = chat.complete(&request).await?;
//! let facts = answer::parse_json(&completion.text)?;
//! # let _ = facts;
//! # Ok(())
//! # }
//! ```

pub mod answer;
mod chat;
pub mod retry;
#[cfg(feature = "testsupport")]
pub mod testsupport;

use std::ops::{Add, AddAssign};
use std::str::FromStr;
use std::time::Duration;

use secrecy::SecretString;
use serde::{Deserialize, Serialize};

pub use answer::ParseError;
pub use chat::OpenAiChat;

/// Default sampling temperature: extraction wants determinism.
pub const DEFAULT_TEMPERATURE: f32 = 0.0;
/// Default per-attempt timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// Default number of retries after the first attempt.
pub const DEFAULT_MAX_RETRIES: u32 = 3;

/// How to reach an OpenAI-compatible chat-completions endpoint.
#[derive(Debug, Clone)]
pub struct LlmConfig {
    /// Up to and including the API version, e.g. `https://api.openai.com/v1`,
    /// `http://localhost:11434/v1`, or an Azure deployment
    /// `https://R.openai.azure.com/openai/deployments/D?api-version=2024-10-21`;
    /// `/chat/completions` is appended to the path, the query string kept.
    pub base_url: String,
    /// `Authorization: Bearer …` (Azure: `api-key: …`) when set; local
    /// servers need none.
    pub api_key: Option<SecretString>,
    pub model: String,
    /// Default 0.0.
    pub temperature: f32,
    /// Per attempt; default 60 s.
    pub timeout: Duration,
    /// Retries after the first attempt; default 3.
    pub max_retries: u32,
    /// Sent as `max_tokens` when set; default none.
    pub max_tokens: Option<u32>,
    /// The structured-output mode asked for first; default
    /// [`ResponseFormat::JsonSchema`].
    pub response_format: ResponseFormat,
    /// Nominal pause before the first retry (doubling after that, with
    /// jitter); default [`retry::DEFAULT_INITIAL_BACKOFF`]. Tests set it to
    /// a millisecond.
    pub initial_backoff: Duration,
}

impl LlmConfig {
    /// A config with the defaults: temperature 0, 60 s timeout, 3 retries,
    /// no `max_tokens`, `json_schema` output, no key.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            api_key: None,
            model: model.into(),
            temperature: DEFAULT_TEMPERATURE,
            timeout: DEFAULT_TIMEOUT,
            max_retries: DEFAULT_MAX_RETRIES,
            max_tokens: None,
            response_format: ResponseFormat::default(),
            initial_backoff: retry::DEFAULT_INITIAL_BACKOFF,
        }
    }
}

/// The structured-output mode sent as `response_format`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResponseFormat {
    /// `{"type": "json_schema", …}` with the request's schema (OpenAI, Azure,
    /// recent vLLM and Ollama); nothing when the request has no schema.
    #[default]
    JsonSchema,
    /// `{"type": "json_object"}` (DeepSeek, Qwen): any JSON, whatever the
    /// request's schema. OpenAI then requires the word "JSON" in the prompt.
    JsonObject,
    /// No `response_format` at all: the prompt alone asks for JSON.
    None,
}

impl ResponseFormat {
    /// `"json_schema"`, `"json_object"` or `"none"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::JsonSchema => "json_schema",
            Self::JsonObject => "json_object",
            Self::None => "none",
        }
    }

    /// The next weaker mode, for servers that refuse this one.
    pub fn downgraded(self) -> Option<Self> {
        match self {
            Self::JsonSchema => Some(Self::JsonObject),
            Self::JsonObject => Some(Self::None),
            Self::None => None,
        }
    }
}

impl std::fmt::Display for ResponseFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ResponseFormat {
    type Err = LlmError;

    /// Case-insensitive; `-` may stand for `_`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().replace('-', "_").as_str() {
            "json_schema" => Ok(Self::JsonSchema),
            "json_object" => Ok(Self::JsonObject),
            "none" => Ok(Self::None),
            other => Err(LlmError::Config(format!(
                "unknown response format {other:?} (expected json_schema, json_object or none)"
            ))),
        }
    }
}

/// One completion request: a system text and a user prompt.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatRequest {
    pub system: String,
    pub prompt: String,
    /// The JSON Schema the answer should follow, sent in `json_schema` mode.
    pub schema: Option<AnswerSchema>,
}

impl ChatRequest {
    pub fn new(system: impl Into<String>, prompt: impl Into<String>) -> Self {
        Self {
            system: system.into(),
            prompt: prompt.into(),
            schema: None,
        }
    }

    pub fn with_schema(mut self, schema: AnswerSchema) -> Self {
        self.schema = Some(schema);
        self
    }
}

/// A named JSON Schema for the answer.
#[derive(Debug, Clone, PartialEq)]
pub struct AnswerSchema {
    /// `[A-Za-z0-9_-]{1,64}` for OpenAI.
    pub name: String,
    pub schema: serde_json::Value,
}

impl AnswerSchema {
    pub fn new(name: impl Into<String>, schema: serde_json::Value) -> Self {
        Self {
            name: name.into(),
            schema,
        }
    }
}

/// Tokens billed for one or more completions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

impl TokenUsage {
    pub fn new(prompt_tokens: u64, completion_tokens: u64) -> Self {
        Self {
            prompt_tokens,
            completion_tokens,
        }
    }

    pub fn total(&self) -> u64 {
        self.prompt_tokens.saturating_add(self.completion_tokens)
    }
}

impl AddAssign for TokenUsage {
    fn add_assign(&mut self, other: Self) {
        self.prompt_tokens = self.prompt_tokens.saturating_add(other.prompt_tokens);
        self.completion_tokens = self
            .completion_tokens
            .saturating_add(other.completion_tokens);
    }
}

impl Add for TokenUsage {
    type Output = Self;

    fn add(mut self, other: Self) -> Self {
        self += other;
        self
    }
}

/// The estimate used when a server reports no usage: one token per four
/// characters, rounded up.
pub fn estimate_tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

/// A chat-completion body answering `request` with `text`, with a usage
/// block estimated at four characters a token over every message of the
/// request: what the stand-ins for a model (the tests' mock server,
/// `mnemo dev llm`) answer.
pub fn completion_body(request: &serde_json::Value, text: &str) -> serde_json::Value {
    let prompt_tokens: u64 = request["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["content"].as_str())
        .map(estimate_tokens)
        .sum();
    let completion_tokens = estimate_tokens(text);
    serde_json::json!({
        "id": "chatcmpl-mock",
        "object": "chat.completion",
        "created": 0,
        "model": request.get("model").cloned().unwrap_or(serde_json::Value::from("mock-model")),
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "finish_reason": "stop",
        }],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    })
}

/// A model's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    /// `choices[0].message.content`, without a leading `<think>` block.
    pub text: String,
    pub usage: TokenUsage,
    /// True when the server sent no usage and [`Completion::usage`] is
    /// estimated with [`estimate_tokens`].
    pub usage_estimated: bool,
    /// The model that answered, as the server names it (else the configured
    /// one).
    pub model: String,
    /// HTTP attempts made, including retries and format downgrades.
    pub attempts: u32,
}

/// Price of a model, for cost estimates.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Pricing {
    /// Per million prompt tokens.
    pub input_per_million: f64,
    /// Per million completion tokens.
    pub output_per_million: f64,
}

impl Pricing {
    pub fn new(input_per_million: f64, output_per_million: f64) -> Self {
        Self {
            input_per_million,
            output_per_million,
        }
    }

    /// The cost of `usage`, in the currency of the prices.
    pub fn cost(&self, usage: TokenUsage) -> f64 {
        (usage.prompt_tokens as f64 * self.input_per_million
            + usage.completion_tokens as f64 * self.output_per_million)
            / 1_000_000.0
    }
}

/// Everything that can go wrong calling a language model. Messages never
/// carry prompt or answer text.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// 429, 408, 5xx, timeouts or connection errors outlasted the retries.
    #[error("language model endpoint still failing after retries: {0}")]
    Transient(String),
    /// A status that retrying cannot fix (4xx other than 408 and 429).
    #[error("language model endpoint rejected the request with status {status}: {message}")]
    Rejected { status: u16, message: String },
    /// A 2xx answer that is not a usable chat completion (bad JSON, no
    /// choices, empty content).
    #[error("malformed answer from language model endpoint: {0}")]
    Malformed(String),
    /// Settings that cannot work (bad URL, empty model, zero timeout…).
    #[error("invalid language model configuration: {0}")]
    Config(String),
}

impl LlmError {
    /// A stable code for logs, metrics and batch records.
    pub fn code(&self) -> &'static str {
        match self {
            LlmError::Transient(_) => "llm_transient",
            LlmError::Rejected { .. } => "llm_rejected",
            LlmError::Malformed(_) => "llm_malformed_answer",
            LlmError::Config(_) => "llm_invalid_config",
        }
    }
}

impl LlmError {
    /// Whether a later call might succeed (the caller may re-queue the work).
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Transient(_))
    }
}

/// The port: one system text and prompt in, one answer out.
#[async_trait::async_trait]
pub trait LanguageModel: Send + Sync + 'static {
    /// The configured model name (for logs and cost attribution).
    fn model(&self) -> &str;

    async fn complete(&self, request: &ChatRequest) -> Result<Completion, LlmError>;
}

#[async_trait::async_trait]
impl<T: LanguageModel + ?Sized> LanguageModel for std::sync::Arc<T> {
    fn model(&self) -> &str {
        (**self).model()
    }

    async fn complete(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
        (**self).complete(request).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn response_format_round_trips() {
        for format in [
            ResponseFormat::JsonSchema,
            ResponseFormat::JsonObject,
            ResponseFormat::None,
        ] {
            assert_eq!(format.as_str().parse::<ResponseFormat>().unwrap(), format);
            assert_eq!(
                serde_json::to_value(format).unwrap(),
                serde_json::Value::from(format.as_str())
            );
        }
        assert_eq!(
            "JSON-Object".parse::<ResponseFormat>().unwrap(),
            ResponseFormat::JsonObject
        );
        assert!(matches!(
            "xml".parse::<ResponseFormat>(),
            Err(LlmError::Config(_))
        ));
        assert_eq!(ResponseFormat::default(), ResponseFormat::JsonSchema);
        assert_eq!(ResponseFormat::None.downgraded(), None);
    }

    #[test]
    fn config_defaults() {
        let config = LlmConfig::new("http://localhost:11434/v1", "qwen2.5");
        assert_eq!(config.temperature, 0.0);
        assert_eq!(config.timeout, Duration::from_secs(60));
        assert_eq!(config.max_retries, 3);
        assert_eq!(config.max_tokens, None);
        assert_eq!(config.response_format, ResponseFormat::JsonSchema);
        assert!(config.api_key.is_none());
    }

    #[test]
    fn usage_adds_and_prices() {
        let mut usage = TokenUsage::new(1_000, 200);
        usage += TokenUsage::new(500, 100);
        assert_eq!(usage, TokenUsage::new(1_500, 300));
        assert_eq!(usage.total(), 1_800);
        assert_eq!(usage + TokenUsage::default(), usage);
        let pricing = Pricing::new(0.15, 0.60);
        let cost = pricing.cost(TokenUsage::new(2_000_000, 1_000_000));
        assert!((cost - 0.90).abs() < 1e-9, "{cost}");
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abcde"), 2);
        assert_eq!(estimate_tokens("éééé"), 1);
    }
}
