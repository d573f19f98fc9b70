//! [`OpenAiChat`]: the [`LanguageModel`] adapter for OpenAI-compatible
//! `POST {base_url}/chat/completions` endpoints.

use std::sync::atomic::{AtomicU8, Ordering};

use reqwest::header::{HeaderName, HeaderValue, AUTHORIZATION};
use secrecy::ExposeSecret;
use serde_json::{json, Value};

use crate::answer::strip_think;
use crate::retry::{
    classify_transport_error, is_transient_status, upstream_message, Backoff, TransportFailure,
};
use crate::{
    estimate_tokens, ChatRequest, Completion, LanguageModel, LlmConfig, LlmError, ResponseFormat,
    TokenUsage,
};

/// Language model behind an OpenAI-compatible chat-completions endpoint
/// (OpenAI, Azure OpenAI, Ollama, vLLM, DeepSeek, Qwen/DashScope…).
///
/// Cheap to share behind an `Arc`; the structured-output mode it has
/// downgraded to (see [`ResponseFormat`]) is remembered for all callers.
#[derive(Debug)]
pub struct OpenAiChat {
    client: reqwest::Client,
    url: reqwest::Url,
    /// The header carrying the key: `Authorization: Bearer …`, or Azure's
    /// `api-key: …`; none for keyless local servers.
    auth: Option<(HeaderName, HeaderValue)>,
    config: LlmConfig,
    backoff: Backoff,
    /// The [`ResponseFormat`] currently used, as `format_to_u8`; only ever
    /// moves towards `None`.
    format: AtomicU8,
}

/// One failed HTTP exchange.
enum Failure {
    /// Worth another attempt after a pause.
    Transient {
        /// For errors and logs: the status and the server's (bounded)
        /// message, or the transport error chain.
        reason: String,
        /// The HTTP status, when there was one.
        status: Option<u16>,
        retry_after: Option<std::time::Duration>,
    },
    /// A 4xx that retrying cannot fix; `format_complaint` when it looks like
    /// the server refusing our `response_format`.
    Rejected {
        status: u16,
        message: String,
        format_complaint: bool,
    },
    Fatal(LlmError),
}

impl OpenAiChat {
    /// Validates the config and prepares the HTTP client; no request is made.
    pub fn new(config: LlmConfig) -> Result<Self, LlmError> {
        let base_url = config.base_url.trim();
        let mut url = reqwest::Url::parse(base_url)
            .map_err(|e| LlmError::Config(format!("llm base url {base_url:?}: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(LlmError::Config(format!(
                "llm base url {base_url:?} must be http or https"
            )));
        }
        if config.model.trim().is_empty() {
            return Err(LlmError::Config("llm model name is empty".into()));
        }
        if config.timeout.is_zero() {
            return Err(LlmError::Config("llm timeout must be positive".into()));
        }
        if !(config.temperature.is_finite() && config.temperature >= 0.0) {
            return Err(LlmError::Config(format!(
                "llm temperature must be a non-negative number, got {}",
                config.temperature
            )));
        }
        if config.max_tokens == Some(0) {
            return Err(LlmError::Config("llm max_tokens must be positive".into()));
        }
        // Appended to the path: Azure's `?api-version=` stays the query.
        let path = format!("{}/chat/completions", url.path().trim_end_matches('/'));
        url.set_path(&path);

        let azure = is_azure(&url);
        let auth = match &config.api_key {
            None => None,
            Some(key) => {
                let (name, value) = if azure {
                    (
                        HeaderName::from_static("api-key"),
                        key.expose_secret().to_owned(),
                    )
                } else {
                    (AUTHORIZATION, format!("Bearer {}", key.expose_secret()))
                };
                let mut value = HeaderValue::from_str(&value).map_err(|_| {
                    LlmError::Config("llm api key is not a valid header value".into())
                })?;
                value.set_sensitive(true);
                Some((name, value))
            }
        };
        let client = reqwest::Client::builder()
            .timeout(config.timeout)
            .user_agent(concat!("mnemo-llm/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| LlmError::Config(format!("http client: {e}")))?;
        Ok(Self {
            client,
            url,
            auth,
            backoff: Backoff::with_initial(config.initial_backoff),
            format: AtomicU8::new(format_to_u8(config.response_format)),
            config,
        })
    }

    /// The structured-output mode the next request starts with (the
    /// configured one, or what it was downgraded to).
    pub fn response_format(&self) -> ResponseFormat {
        format_from_u8(self.format.load(Ordering::Relaxed))
    }

    /// The full endpoint URL requests go to.
    pub fn endpoint(&self) -> &str {
        self.url.as_str()
    }

    fn body(&self, request: &ChatRequest, format: ResponseFormat) -> (Value, bool) {
        // f32 → f64 shows binary noise (0.2 → 0.20000000298…); round it off.
        let temperature = (f64::from(self.config.temperature) * 1e6).round() / 1e6;
        let mut body = json!({
            "model": self.config.model,
            "messages": [
                {"role": "system", "content": request.system},
                {"role": "user", "content": request.prompt},
            ],
            "temperature": temperature,
            "stream": false,
        });
        if let Some(max_tokens) = self.config.max_tokens {
            body["max_tokens"] = max_tokens.into();
        }
        let response_format = match (format, &request.schema) {
            (ResponseFormat::JsonSchema, Some(schema)) => Some(json!({
                "type": "json_schema",
                "json_schema": {
                    "name": schema.name,
                    "schema": schema.schema,
                    "strict": false,
                },
            })),
            (ResponseFormat::JsonSchema, None) | (ResponseFormat::None, _) => None,
            (ResponseFormat::JsonObject, _) => Some(json!({"type": "json_object"})),
        };
        let sent = response_format.is_some();
        if let Some(response_format) = response_format {
            body["response_format"] = response_format;
        }
        (body, sent)
    }

    /// Moves the shared mode from `from` to the next weaker one, unless
    /// another call already did; logs the change once.
    fn downgrade(&self, from: ResponseFormat, status: u16) {
        let Some(to) = from.downgraded() else { return };
        if self
            .format
            .compare_exchange(
                format_to_u8(from),
                format_to_u8(to),
                Ordering::Relaxed,
                Ordering::Relaxed,
            )
            .is_ok()
        {
            tracing::warn!(
                model = %self.config.model,
                status,
                from = from.as_str(),
                to = to.as_str(),
                "llm endpoint refused the response format; downgrading for this client"
            );
        }
    }

    /// One HTTP exchange; the answer's raw bytes on 2xx.
    async fn send_once(&self, body: &Value) -> Result<Vec<u8>, Failure> {
        let mut request = self.client.post(self.url.clone()).json(body);
        if let Some((name, value)) = &self.auth {
            request = request.header(name.clone(), value.clone());
        }
        let response = request.send().await.map_err(transport_failure)?;
        let status = response.status();
        let retry_after = self.backoff.retry_after(response.headers());
        let bytes = response.bytes().await.map_err(transport_failure)?;
        if status.is_success() {
            return Ok(bytes.to_vec());
        }
        let message = upstream_message(&bytes);
        if is_transient_status(status) {
            return Err(Failure::Transient {
                reason: format!("status {}: {message}", status.as_u16()),
                status: Some(status.as_u16()),
                retry_after,
            });
        }
        let format_complaint = matches!(status.as_u16(), 400 | 422) && mentions_format(&bytes);
        Err(Failure::Rejected {
            status: status.as_u16(),
            message,
            format_complaint,
        })
    }

    fn finish(
        &self,
        bytes: &[u8],
        request: &ChatRequest,
        attempts: u32,
    ) -> Result<Completion, LlmError> {
        let answer: Value = serde_json::from_slice(bytes)
            .map_err(|e| LlmError::Malformed(format!("answer is not JSON: {e}")))?;
        let choice = answer
            .get("choices")
            .and_then(|c| c.get(0))
            .ok_or_else(|| LlmError::Malformed("answer has no choices".into()))?;
        let raw = content_text(choice.get("message").and_then(|m| m.get("content"))).ok_or_else(
            || LlmError::Malformed("answer has no choices[0].message.content string".into()),
        )?;
        let text = strip_think(&raw).trim();
        let finish_reason = choice.get("finish_reason").and_then(Value::as_str);
        if text.is_empty() {
            return Err(LlmError::Malformed(format!(
                "answer content is empty (finish_reason {})",
                finish_reason.unwrap_or("unknown")
            )));
        }
        let reported = answer.get("usage").and_then(|usage| {
            Some(TokenUsage::new(
                usage.get("prompt_tokens")?.as_u64()?,
                usage.get("completion_tokens")?.as_u64()?,
            ))
        });
        let usage_estimated = reported.is_none();
        let usage = reported.unwrap_or_else(|| {
            TokenUsage::new(
                estimate_tokens(&request.system) + estimate_tokens(&request.prompt),
                estimate_tokens(&raw),
            )
        });
        let model = answer
            .get("model")
            .and_then(Value::as_str)
            .filter(|m| !m.is_empty())
            .unwrap_or(&self.config.model)
            .to_owned();
        if finish_reason == Some("length") {
            tracing::warn!(
                model = %model,
                completion_tokens = usage.completion_tokens,
                "llm answer was cut off by the token limit"
            );
        }
        tracing::debug!(
            model = %model,
            attempts,
            prompt_tokens = usage.prompt_tokens,
            completion_tokens = usage.completion_tokens,
            usage_estimated,
            "llm completion"
        );
        Ok(Completion {
            text: text.to_owned(),
            usage,
            usage_estimated,
            model,
            attempts,
        })
    }
}

#[async_trait::async_trait]
impl LanguageModel for OpenAiChat {
    fn model(&self) -> &str {
        &self.config.model
    }

    async fn complete(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
        let mut attempts: u32 = 0;
        let mut retries: u32 = 0;
        loop {
            let format = self.response_format();
            let (body, format_sent) = self.body(request, format);
            attempts += 1;
            match self.send_once(&body).await {
                Ok(bytes) => return self.finish(&bytes, request, attempts),
                Err(Failure::Fatal(error)) => return Err(error),
                Err(Failure::Rejected {
                    status,
                    message,
                    format_complaint,
                }) => {
                    // A server that does not know our response_format: ask
                    // again with a weaker one, not counted as a retry.
                    if format_complaint && format_sent && format.downgraded().is_some() {
                        self.downgrade(format, status);
                        continue;
                    }
                    tracing::warn!(
                        model = %self.config.model,
                        status,
                        attempts,
                        "llm endpoint rejected the request"
                    );
                    return Err(LlmError::Rejected { status, message });
                }
                Err(Failure::Transient {
                    reason,
                    status,
                    retry_after,
                }) => {
                    // Logs get the status, or the transport error (which
                    // never holds a body), never a server's message: it
                    // might echo the prompt.
                    let cause = match status {
                        Some(status) => format!("status {status}"),
                        None => reason.clone(),
                    };
                    if retries >= self.config.max_retries {
                        tracing::warn!(
                            model = %self.config.model,
                            attempts,
                            cause = %cause,
                            "llm request failed; retries exhausted"
                        );
                        return Err(LlmError::Transient(format!(
                            "{reason} ({attempts} attempts)"
                        )));
                    }
                    let delay = self.backoff.delay(retries, retry_after);
                    tracing::warn!(
                        model = %self.config.model,
                        attempt = attempts,
                        max_retries = self.config.max_retries,
                        delay_ms = delay.as_millis() as u64,
                        cause = %cause,
                        "llm request failed; retrying"
                    );
                    tokio::time::sleep(delay).await;
                    retries += 1;
                }
            }
        }
    }
}

fn transport_failure(error: reqwest::Error) -> Failure {
    match classify_transport_error(&error) {
        TransportFailure::Config(message) => Failure::Fatal(LlmError::Config(message)),
        TransportFailure::Transient(reason) => Failure::Transient {
            reason,
            status: None,
            retry_after: None,
        },
    }
}

/// Azure OpenAI wants `api-key` rather than a bearer token.
fn is_azure(url: &reqwest::Url) -> bool {
    url.host_str()
        .is_some_and(|host| host.to_ascii_lowercase().ends_with(".openai.azure.com"))
        || url.path().contains("/openai/deployments/")
}

/// Whether an error body is about `response_format` (what OpenAI, vLLM,
/// DeepSeek and DashScope say when they do not support the mode asked for).
fn mentions_format(body: &[u8]) -> bool {
    let body = String::from_utf8_lossy(body).to_ascii_lowercase();
    [
        "response_format",
        "response format",
        "json_schema",
        "json_object",
    ]
    .iter()
    .any(|needle| body.contains(needle))
}

/// The message content: a string, or (some servers) an array of text parts.
fn content_text(content: Option<&Value>) -> Option<String> {
    match content? {
        Value::String(text) => Some(text.clone()),
        Value::Array(parts) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter_map(|part| part.get("text").and_then(Value::as_str))
                .collect();
            (!texts.is_empty()).then(|| texts.concat())
        }
        _ => None,
    }
}

fn format_to_u8(format: ResponseFormat) -> u8 {
    match format {
        ResponseFormat::JsonSchema => 0,
        ResponseFormat::JsonObject => 1,
        ResponseFormat::None => 2,
    }
}

fn format_from_u8(value: u8) -> ResponseFormat {
    match value {
        0 => ResponseFormat::JsonSchema,
        1 => ResponseFormat::JsonObject,
        _ => ResponseFormat::None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chat(base_url: &str) -> OpenAiChat {
        OpenAiChat::new(LlmConfig::new(base_url, "m")).unwrap()
    }

    #[test]
    fn endpoint_appends_to_the_path_and_keeps_the_query() {
        assert_eq!(
            chat("https://api.openai.com/v1").endpoint(),
            "https://api.openai.com/v1/chat/completions"
        );
        assert_eq!(
            chat("http://localhost:11434/v1/").endpoint(),
            "http://localhost:11434/v1/chat/completions"
        );
        assert_eq!(
            chat("https://r.openai.azure.com/openai/deployments/d?api-version=2024-10-21")
                .endpoint(),
            "https://r.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-10-21"
        );
    }

    #[test]
    fn azure_detection() {
        let url = |s: &str| reqwest::Url::parse(s).unwrap();
        assert!(is_azure(&url("https://R.openai.azure.com/openai/v1")));
        assert!(is_azure(&url(
            "https://proxy.example/openai/deployments/d/chat/completions"
        )));
        assert!(!is_azure(&url("https://api.openai.com/v1")));
        assert!(!is_azure(&url("https://openai.azure.com.evil.example/v1")));
    }

    #[test]
    fn invalid_configs_are_refused() {
        for (base_url, model) in [
            ("not a url", "m"),
            ("ftp://host/v1", "m"),
            ("http://host/v1", " "),
        ] {
            assert!(matches!(
                OpenAiChat::new(LlmConfig::new(base_url, model)),
                Err(LlmError::Config(_))
            ));
        }
        let mut config = LlmConfig::new("http://host/v1", "m");
        config.timeout = std::time::Duration::ZERO;
        assert!(matches!(OpenAiChat::new(config), Err(LlmError::Config(_))));
        let mut config = LlmConfig::new("http://host/v1", "m");
        config.temperature = f32::NAN;
        assert!(matches!(OpenAiChat::new(config), Err(LlmError::Config(_))));
        let mut config = LlmConfig::new("http://host/v1", "m");
        config.api_key = Some("bad\nkey".to_string().into());
        assert!(matches!(OpenAiChat::new(config), Err(LlmError::Config(_))));
    }

    #[test]
    fn content_parts_are_joined() {
        assert_eq!(
            content_text(Some(
                &json!([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}])
            )),
            Some("ab".into())
        );
        assert_eq!(content_text(Some(&Value::Null)), None);
        assert_eq!(content_text(None), None);
    }

    #[test]
    fn format_codes_round_trip() {
        for format in [
            ResponseFormat::JsonSchema,
            ResponseFormat::JsonObject,
            ResponseFormat::None,
        ] {
            assert_eq!(format_from_u8(format_to_u8(format)), format);
        }
    }
}
