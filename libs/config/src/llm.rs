//! `[llm]`: the OpenAI-compatible chat endpoint consolidation asks (see
//! docs/llm.md), resolved into mnemo-llm's own [`LlmConfig`] and
//! [`Pricing`], plus what only the consolidator reads.

use std::path::PathBuf;
use std::time::Duration;

use mnemo_llm::{LlmConfig, Pricing, ResponseFormat};
use secrecy::SecretString;
use serde::Deserialize;

use crate::env::Env;
use crate::{invalid, ConfigError};

const NON_NEGATIVE: &str = "a non-negative number";
const TEMPERATURE: &str = "llm.temperature (MNEMO_LLM_TEMPERATURE)";
const TIMEOUT: &str = "llm.timeout_seconds (MNEMO_LLM_TIMEOUT_SECONDS)";
const ATTEMPTS: &str = "llm.attempts (MNEMO_LLM_ATTEMPTS)";
const PRICE_INPUT: &str = "llm.price_input_per_million (MNEMO_LLM_PRICE_INPUT_PER_MILLION)";
const PRICE_OUTPUT: &str = "llm.price_output_per_million (MNEMO_LLM_PRICE_OUTPUT_PER_MILLION)";

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLlm {
    base_url: Option<String>,
    api_key: Option<String>,
    model: Option<String>,
    temperature: Option<f64>,
    timeout_seconds: Option<f64>,
    max_retries: Option<u32>,
    /// `json_schema`, `json_object` or `none`: parsed by mnemo-llm.
    response_format: Option<String>,
    prompts_dir: Option<PathBuf>,
    attempts: Option<u32>,
    price_input_per_million: Option<f64>,
    price_output_per_million: Option<f64>,
}

/// LLM consolidation. None in [`crate::Settings`]: the rules consolidate.
#[derive(Debug, Clone)]
pub struct LlmSettings {
    /// The chat client's settings, as `mnemo_llm::OpenAiChat::new` takes them.
    pub chat: LlmConfig,
    /// Price per million tokens, for the cost report (0 when unknown).
    pub pricing: Pricing,
    /// The operator's prompt set; None: the built-in one.
    pub prompts_dir: Option<PathBuf>,
    /// Answers asked for per call before the batch falls back to the rules.
    pub attempts: u32,
}

impl RawLlm {
    pub(crate) fn with_env(mut self, env: &Env) -> Result<Self, ConfigError> {
        let number = |var: &str| env.parse::<f64>(var, var, NON_NEGATIVE);
        self.base_url = env.get("MNEMO_LLM_BASE_URL").or(self.base_url);
        self.api_key = env.get("MNEMO_LLM_API_KEY").or(self.api_key);
        self.model = env.get("MNEMO_LLM_MODEL").or(self.model);
        self.temperature = number("MNEMO_LLM_TEMPERATURE")?.or(self.temperature);
        self.timeout_seconds = number("MNEMO_LLM_TIMEOUT_SECONDS")?.or(self.timeout_seconds);
        self.response_format = env
            .get("MNEMO_LLM_RESPONSE_FORMAT")
            .or(self.response_format);
        self.prompts_dir = env
            .get("MNEMO_LLM_PROMPTS_DIR")
            .map(PathBuf::from)
            .or(self.prompts_dir);
        self.attempts = env
            .parse(
                "MNEMO_LLM_ATTEMPTS",
                "MNEMO_LLM_ATTEMPTS",
                "between 1 and 10",
            )?
            .or(self.attempts);
        self.price_input_per_million =
            number("MNEMO_LLM_PRICE_INPUT_PER_MILLION")?.or(self.price_input_per_million);
        self.price_output_per_million =
            number("MNEMO_LLM_PRICE_OUTPUT_PER_MILLION")?.or(self.price_output_per_million);
        Ok(self)
    }

    pub(crate) fn resolve(self) -> Result<Option<LlmSettings>, ConfigError> {
        let (base_url, model) = match (self.base_url, self.model) {
            (None, None) => return Ok(None),
            (Some(base_url), Some(model)) => (base_url, model),
            (Some(_), None) | (None, Some(_)) => {
                return Err(invalid(
                    "llm (MNEMO_LLM_BASE_URL, MNEMO_LLM_MODEL)",
                    "both the base URL and the model, or neither",
                ))
            }
        };
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return Err(invalid(
                "llm.base_url (MNEMO_LLM_BASE_URL)",
                "an http:// or https:// URL up to the API version, e.g. https://api.openai.com/v1",
            ));
        }
        let temperature = self.temperature.unwrap_or(0.0);
        if !(0.0..=2.0).contains(&temperature) {
            return Err(invalid(TEMPERATURE, "between 0 and 2"));
        }
        let timeout = self.timeout_seconds.unwrap_or(60.0);
        if !(0.1..=3600.0).contains(&timeout) {
            return Err(invalid(TIMEOUT, "between 0.1 and 3600"));
        }
        let response_format = match self.response_format {
            Some(format) => format.parse::<ResponseFormat>().map_err(|_| {
                invalid(
                    "llm.response_format (MNEMO_LLM_RESPONSE_FORMAT)",
                    "json_schema, json_object or none",
                )
            })?,
            None => ResponseFormat::JsonSchema,
        };
        let attempts = self.attempts.unwrap_or(3);
        if !(1..=10).contains(&attempts) {
            return Err(invalid(ATTEMPTS, "between 1 and 10"));
        }
        let price = |key: &str, value: Option<f64>| match value {
            Some(price) if !(price.is_finite() && price >= 0.0) => Err(invalid(key, NON_NEGATIVE)),
            value => Ok(value.unwrap_or(0.0)),
        };
        let pricing = Pricing::new(
            price(PRICE_INPUT, self.price_input_per_million)?,
            price(PRICE_OUTPUT, self.price_output_per_million)?,
        );
        let mut chat = LlmConfig::new(base_url, model);
        chat.api_key = self.api_key.map(SecretString::from);
        chat.temperature = temperature as f32;
        chat.timeout = Duration::from_secs_f64(timeout);
        chat.max_retries = self.max_retries.unwrap_or(mnemo_llm::DEFAULT_MAX_RETRIES);
        chat.response_format = response_format;
        Ok(Some(LlmSettings {
            chat,
            pricing,
            prompts_dir: self.prompts_dir,
            attempts,
        }))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use mnemo_llm::ResponseFormat;

    use crate::testing::{load_env, load_toml};

    const ENDPOINT: &str = "[llm]\nbase_url = \"http://localhost:11434/v1\"\nmodel = \"m\"\n";

    #[test]
    fn an_unknown_response_format_is_refused_naming_the_key() {
        let error = load_toml(&format!("{ENDPOINT}response_format = \"xml\"\n")).unwrap_err();
        assert!(error.to_string().contains("llm.response_format"), "{error}");
        let error = load_toml(&format!("{ENDPOINT}attempts = 0\n")).unwrap_err();
        assert!(error.to_string().contains("llm.attempts"), "{error}");
        let error = load_toml(&format!("{ENDPOINT}temperature = -0.5\n")).unwrap_err();
        assert!(error.to_string().contains("llm.temperature"), "{error}");
        let error = load_env(&[
            ("MNEMO_LLM_BASE_URL", "http://localhost:11434/v1"),
            ("MNEMO_LLM_MODEL", "m"),
            ("MNEMO_LLM_TIMEOUT_SECONDS", "soon"),
        ])
        .unwrap_err();
        assert!(
            error.to_string().contains("MNEMO_LLM_TIMEOUT_SECONDS"),
            "{error}"
        );
    }

    #[test]
    fn the_llm_section_resolves_into_the_chat_client_settings() {
        let llm = load_toml(&format!(
            "{ENDPOINT}response_format = \"none\"\ntimeout_seconds = 2.5\nmax_retries = 1\n"
        ))
        .unwrap()
        .llm
        .unwrap();
        assert_eq!(llm.chat.base_url, "http://localhost:11434/v1");
        assert_eq!(llm.chat.response_format, ResponseFormat::None);
        assert_eq!(llm.chat.timeout, Duration::from_millis(2_500));
        assert_eq!(llm.chat.max_retries, 1);
        assert_eq!(llm.chat.max_tokens, None);
        assert_eq!(llm.attempts, 3);
    }
}
