//! Typed settings for every mnemo process: defaults, then a TOML file
//! (`MNEMO_CONFIG`, or `mnemo.toml` in the data dir when present), then
//! `MNEMO_*` environment variables, then command-line flags. Unknown keys
//! are refused, secrets are `secrecy` types, and everything is validated
//! once here so nothing downstream re-checks (ripgrep's raw → checked args).

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use std::time::Duration;

use mnemo_auth::JwtAlgorithm;
use mnemo_domain::consolidation::ConsolidationPolicy;
use mnemo_domain::forgetting::ForgetPolicy;
use mnemo_pii::Policy;
use mnemo_telemetry::LogFormat;
use secrecy::SecretString;
use serde::Deserialize;

pub const DEFAULT_DATA_DIR: &str = "./mnemo-data";
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";
pub const DEFAULT_ISSUER: &str = "mnemo";
pub const DEFAULT_AUDIENCE: &str = "mnemo";

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("config file {path} is invalid: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("setting {key} is invalid: {message}")]
    Invalid { key: String, message: String },
}

fn check_postgres_url(key: &str, url: &str) -> Result<(), ConfigError> {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        Ok(())
    } else {
        // Never echo the value: it may hold a password.
        Err(invalid(key, "a postgres:// URL"))
    }
}

fn invalid(key: &str, message: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        key: key.to_owned(),
        message: message.into(),
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSettings {
    data_dir: Option<PathBuf>,
    listen: Option<String>,
    master_key: Option<String>,
    #[serde(default)]
    auth: RawAuth,
    #[serde(default)]
    pii: RawPii,
    #[serde(default)]
    limits: RawLimits,
    #[serde(default)]
    telemetry: RawTelemetry,
    #[serde(default)]
    bus: RawBus,
    #[serde(default)]
    embedding: RawEmbedding,
    #[serde(default)]
    consolidation: RawPolicies<ConsolidationPolicy>,
    #[serde(default)]
    forgetting: RawForgetting,
    #[serde(default)]
    database: RawDatabase,
    #[serde(default)]
    kafka: RawKafka,
    #[serde(default)]
    qdrant: RawQdrant,
    #[serde(default)]
    llm: RawLlm,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLlm {
    base_url: Option<String>,
    api_key: Option<String>,
    model: Option<String>,
    temperature: Option<f32>,
    timeout_seconds: Option<f64>,
    max_retries: Option<u32>,
    response_format: Option<String>,
    prompts_dir: Option<PathBuf>,
    attempts: Option<u32>,
    price_input_per_million: Option<f64>,
    price_output_per_million: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDatabase {
    url: Option<String>,
    system_url: Option<String>,
    owner_url: Option<String>,
    max_connections: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawKafka {
    brokers: Option<String>,
    partitions: Option<i32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawQdrant {
    url: Option<String>,
    api_key: Option<String>,
    collection_prefix: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEmbedding {
    kind: Option<String>,
    model_dir: Option<PathBuf>,
    model: Option<String>,
    base_url: Option<String>,
    api_key: Option<String>,
    cache_dir: Option<PathBuf>,
    dimension: Option<usize>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPolicies<P> {
    #[serde(default)]
    default: Option<P>,
    #[serde(default = "BTreeMap::new")]
    tenants: BTreeMap<String, P>,
}

impl<P> Default for RawPolicies<P> {
    fn default() -> Self {
        RawPolicies {
            default: None,
            tenants: BTreeMap::new(),
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawForgetting {
    interval_seconds: Option<f64>,
    default: Option<ForgetPolicy>,
    #[serde(default)]
    tenants: BTreeMap<String, ForgetPolicy>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAuth {
    issuer: Option<String>,
    audience: Option<String>,
    hs256_secret: Option<String>,
    #[serde(default)]
    public_keys: Vec<RawPublicKey>,
    allowed_algorithms: Option<Vec<String>>,
    leeway_seconds: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPublicKey {
    algorithm: String,
    pem_file: PathBuf,
    kid: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPii {
    default: Option<Policy>,
    #[serde(default)]
    tenants: BTreeMap<String, Policy>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLimits {
    max_body_bytes: Option<usize>,
    max_messages_per_request: Option<usize>,
    max_content_chars: Option<usize>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTelemetry {
    log_format: Option<LogFormat>,
    log_filter: Option<String>,
    otlp_endpoint: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBus {
    partitions: Option<u32>,
}

#[derive(Debug, Clone)]
pub struct PublicKeySetting {
    pub algorithm: JwtAlgorithm,
    pub pem_file: PathBuf,
    pub kid: Option<String>,
}

#[derive(Debug, Clone)]
pub struct AuthSettings {
    pub issuer: String,
    pub audience: String,
    /// None: the embedded mode uses (and creates) the dev secret in the data dir.
    pub hs256_secret: Option<SecretString>,
    pub public_keys: Vec<PublicKeySetting>,
    pub allowed_algorithms: Vec<JwtAlgorithm>,
    pub leeway_seconds: u64,
}

#[derive(Debug, Clone)]
pub struct PiiSettings {
    pub default: Policy,
    pub tenants: BTreeMap<String, Policy>,
}

impl PiiSettings {
    pub fn policy_for(&self, tenant: &str) -> &Policy {
        self.tenants.get(tenant).unwrap_or(&self.default)
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_body_bytes: usize,
    pub max_messages_per_request: usize,
    pub max_content_chars: usize,
}

#[derive(Debug, Clone)]
pub struct TelemetrySettings {
    pub log_format: LogFormat,
    pub log_filter: String,
    pub otlp_endpoint: Option<String>,
}

/// Which embedder, and where its model or endpoint is (see `mnemo-embed`).
#[derive(Debug, Clone, Default)]
pub struct EmbeddingSettings {
    /// `auto`, `local`, `openai` or `lexical`.
    pub kind: String,
    pub model_dir: Option<PathBuf>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub api_key: Option<SecretString>,
    /// None: the platform cache dir.
    pub cache_dir: Option<PathBuf>,
    pub dimension: Option<usize>,
}

/// A default policy and per-tenant overrides.
#[derive(Debug, Clone, Default)]
pub struct Policies<P> {
    pub default: P,
    pub tenants: BTreeMap<String, P>,
}

impl<P> Policies<P> {
    pub fn for_tenant(&self, tenant: &str) -> &P {
        self.tenants.get(tenant).unwrap_or(&self.default)
    }
}

#[derive(Debug, Clone)]
pub struct ForgettingSettings {
    /// How often the forgetter scores every memory.
    pub interval: Duration,
    pub policies: Policies<ForgetPolicy>,
}

/// PostgreSQL instead of the data dir's SQLite file (see `docs/postgres.md`).
/// URLs are secrets: they may carry passwords.
#[derive(Debug, Clone)]
pub struct DatabaseSettings {
    /// The services' login (`mnemo_app`): tenant-scoped access only.
    pub url: SecretString,
    /// The relay's and the cross-tenant passes' login (`mnemo_system`).
    /// None: the app URL with the user replaced by `mnemo_system`.
    pub system_url: Option<SecretString>,
    /// The owner's login, for `mnemo migrate` only.
    pub owner_url: Option<SecretString>,
    pub max_connections: u32,
}

/// Kafka instead of the in-process bus (see `docs/kafka.md`).
#[derive(Debug, Clone)]
pub struct KafkaSettings {
    /// `host:port[,host:port…]`.
    pub brokers: String,
    /// Partitions of the topics mnemo creates when they are missing.
    pub partitions: i32,
}

/// A Qdrant server instead of the data dir's qdrant-edge shard.
#[derive(Debug, Clone)]
pub struct QdrantSettings {
    /// The gRPC endpoint, e.g. `http://qdrant:6334`.
    pub url: String,
    pub api_key: Option<SecretString>,
    pub collection_prefix: String,
}

/// An OpenAI-compatible chat endpoint for consolidation (docs/llm.md).
/// None: the rules consolidate, as before.
#[derive(Debug, Clone)]
pub struct LlmSettings {
    /// Up to the API version: `https://api.openai.com/v1`,
    /// `http://localhost:11434/v1` (Ollama), an Azure deployment URL.
    pub base_url: String,
    pub api_key: Option<SecretString>,
    pub model: String,
    pub temperature: f32,
    /// Per HTTP attempt.
    pub timeout: Duration,
    /// HTTP retries on 429/5xx/timeouts, after the first attempt.
    pub max_retries: u32,
    /// `json_schema`, `json_object` or `none`.
    pub response_format: String,
    /// The operator's prompt set; None: the built-in one.
    pub prompts_dir: Option<PathBuf>,
    /// Answers asked for per call before the batch falls back to the rules.
    pub attempts: u32,
    /// Price per million tokens, for the cost report (0 when unknown).
    pub price_input_per_million: f64,
    pub price_output_per_million: f64,
}

#[derive(Debug, Clone)]
pub struct Settings {
    pub data_dir: PathBuf,
    pub listen: SocketAddr,
    /// None: the embedded mode generates `master.key` in the data dir.
    pub master_key: Option<SecretString>,
    pub auth: AuthSettings,
    pub pii: PiiSettings,
    pub limits: Limits,
    pub telemetry: TelemetrySettings,
    pub bus_partitions: u32,
    pub embedding: EmbeddingSettings,
    pub consolidation: Policies<ConsolidationPolicy>,
    pub forgetting: ForgettingSettings,
    /// None: SQLite in the data dir.
    pub database: Option<DatabaseSettings>,
    /// None: the in-process bus.
    pub kafka: Option<KafkaSettings>,
    /// None: qdrant-edge in the data dir.
    pub qdrant: Option<QdrantSettings>,
    /// None: rule-based consolidation only.
    pub llm: Option<LlmSettings>,
}

impl Settings {
    pub fn master_key_file(&self) -> PathBuf {
        self.data_dir.join("master.key")
    }

    pub fn dev_secret_file(&self) -> PathBuf {
        self.data_dir.join("jwt-dev.secret")
    }

    pub fn database_file(&self) -> PathBuf {
        self.data_dir.join("mnemo.db")
    }

    /// Every store is shared (PostgreSQL, Kafka, Qdrant): nothing of the
    /// process lives in the data dir, so several processes may run at once.
    pub fn is_scale_out(&self) -> bool {
        self.database.is_some() && self.kafka.is_some() && self.qdrant.is_some()
    }
}

/// Values given on the command line; they win over everything else.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub config_file: Option<PathBuf>,
    pub data_dir: Option<PathBuf>,
    pub listen: Option<String>,
}

/// Loads settings from the process environment.
pub fn load(overrides: &Overrides) -> Result<Settings, ConfigError> {
    let env: HashMap<String, String> = std::env::vars().collect();
    load_from(overrides, &env)
}

/// Loads settings from an explicit environment (testable).
pub fn load_from(
    overrides: &Overrides,
    env: &HashMap<String, String>,
) -> Result<Settings, ConfigError> {
    let get = |key: &str| env.get(key).filter(|v| !v.is_empty()).cloned();

    // The data dir decides where the default config file is, so settle it first.
    let explicit_file = overrides
        .config_file
        .clone()
        .or_else(|| get("MNEMO_CONFIG").map(PathBuf::from));
    let mut raw = match &explicit_file {
        Some(path) => read_file(path)?,
        None => RawSettings::default(),
    };
    let data_dir = overrides
        .data_dir
        .clone()
        .or_else(|| get("MNEMO_DATA_DIR").map(PathBuf::from))
        .or_else(|| raw.data_dir.clone())
        .unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR));
    if explicit_file.is_none() {
        let implicit = data_dir.join("mnemo.toml");
        if implicit.is_file() {
            raw = read_file(&implicit)?;
        }
    }

    let listen_raw = overrides
        .listen
        .clone()
        .or_else(|| get("MNEMO_LISTEN"))
        .or(raw.listen)
        .unwrap_or_else(|| DEFAULT_LISTEN.to_owned());
    let listen: SocketAddr = listen_raw.parse().map_err(|_| {
        invalid(
            "listen",
            "expected HOST:PORT with an IP address, e.g. 127.0.0.1:8080",
        )
    })?;

    let master_key = get("MNEMO_MASTER_KEY")
        .or(raw.master_key)
        .map(SecretString::from);

    let auth = raw.auth;
    let allowed_algorithms = match auth.allowed_algorithms {
        Some(names) => names
            .iter()
            .map(|name| {
                name.parse::<JwtAlgorithm>().map_err(|_| {
                    invalid(
                        "auth.allowed_algorithms",
                        format!("unknown algorithm {name}"),
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()?,
        None => vec![
            JwtAlgorithm::HS256,
            JwtAlgorithm::RS256,
            JwtAlgorithm::ES256,
            JwtAlgorithm::EdDSA,
        ],
    };
    let public_keys = auth
        .public_keys
        .into_iter()
        .map(|key| {
            Ok(PublicKeySetting {
                algorithm: key.algorithm.parse::<JwtAlgorithm>().map_err(|_| {
                    invalid(
                        "auth.public_keys.algorithm",
                        format!("unknown algorithm {}", key.algorithm),
                    )
                })?,
                pem_file: key.pem_file,
                kid: key.kid,
            })
        })
        .collect::<Result<Vec<_>, ConfigError>>()?;
    let hs256_secret = get("MNEMO_JWT_SECRET").or(auth.hs256_secret);
    if let Some(secret) = &hs256_secret {
        if secret.len() < 32 {
            return Err(invalid("auth.hs256_secret", "must be at least 32 bytes"));
        }
    }
    let auth = AuthSettings {
        issuer: get("MNEMO_JWT_ISSUER")
            .or(auth.issuer)
            .unwrap_or_else(|| DEFAULT_ISSUER.to_owned()),
        audience: get("MNEMO_JWT_AUDIENCE")
            .or(auth.audience)
            .unwrap_or_else(|| DEFAULT_AUDIENCE.to_owned()),
        hs256_secret: hs256_secret.map(SecretString::from),
        public_keys,
        allowed_algorithms,
        leeway_seconds: auth.leeway_seconds.unwrap_or(30),
    };
    if auth.leeway_seconds > 300 {
        return Err(invalid("auth.leeway_seconds", "at most 300"));
    }

    let limits = Limits {
        max_body_bytes: raw.limits.max_body_bytes.unwrap_or(1024 * 1024),
        max_messages_per_request: raw.limits.max_messages_per_request.unwrap_or(100),
        max_content_chars: raw.limits.max_content_chars.unwrap_or(32 * 1024),
    };
    if limits.max_body_bytes == 0
        || limits.max_messages_per_request == 0
        || limits.max_content_chars == 0
    {
        return Err(invalid("limits", "every limit must be greater than zero"));
    }

    let telemetry = TelemetrySettings {
        log_format: match get("MNEMO_LOG_FORMAT") {
            Some(format) => match format.as_str() {
                "text" => LogFormat::Text,
                "json" => LogFormat::Json,
                _ => return Err(invalid("MNEMO_LOG_FORMAT", "text or json")),
            },
            None => raw.telemetry.log_format.unwrap_or_default(),
        },
        log_filter: get("MNEMO_LOG")
            .or(raw.telemetry.log_filter)
            .unwrap_or_else(|| "info".to_owned()),
        otlp_endpoint: get("MNEMO_OTLP_ENDPOINT")
            .or_else(|| get("OTEL_EXPORTER_OTLP_ENDPOINT"))
            .or(raw.telemetry.otlp_endpoint),
    };

    let bus_partitions = raw.bus.partitions.unwrap_or(1);
    if bus_partitions == 0 {
        return Err(invalid("bus.partitions", "must be at least 1"));
    }

    let raw_embedding = raw.embedding;
    let embedding = EmbeddingSettings {
        kind: get("MNEMO_EMBEDDER")
            .or(raw_embedding.kind)
            .unwrap_or_else(|| "auto".to_owned()),
        model_dir: get("MNEMO_EMBED_MODEL_DIR")
            .map(PathBuf::from)
            .or(raw_embedding.model_dir),
        model: get("MNEMO_EMBED_MODEL").or(raw_embedding.model),
        base_url: get("MNEMO_EMBED_BASE_URL").or(raw_embedding.base_url),
        api_key: get("MNEMO_EMBED_API_KEY")
            .or(raw_embedding.api_key)
            .map(SecretString::from),
        cache_dir: get("MNEMO_MODEL_CACHE")
            .map(PathBuf::from)
            .or(raw_embedding.cache_dir),
        dimension: match get("MNEMO_EMBED_DIMENSION") {
            Some(raw) => Some(
                raw.trim()
                    .parse::<usize>()
                    .ok()
                    .filter(|d| *d > 0)
                    .ok_or_else(|| {
                        invalid(
                            "embedding.dimension (MNEMO_EMBED_DIMENSION)",
                            "must be a positive integer",
                        )
                    })?,
            ),
            None => raw_embedding.dimension,
        },
    };
    if !["auto", "local", "openai", "lexical"].contains(&embedding.kind.as_str()) {
        return Err(invalid(
            "embedding.kind (MNEMO_EMBEDDER)",
            "auto, local, openai or lexical",
        ));
    }

    let raw_database = raw.database;
    let database = match get("MNEMO_DATABASE_URL").or(raw_database.url) {
        Some(url) => {
            check_postgres_url("database.url (MNEMO_DATABASE_URL)", &url)?;
            let system_url = get("MNEMO_DATABASE_SYSTEM_URL").or(raw_database.system_url);
            let owner_url = get("MNEMO_DATABASE_OWNER_URL").or(raw_database.owner_url);
            for (key, value) in [
                (
                    "database.system_url (MNEMO_DATABASE_SYSTEM_URL)",
                    &system_url,
                ),
                ("database.owner_url (MNEMO_DATABASE_OWNER_URL)", &owner_url),
            ] {
                if let Some(url) = value {
                    check_postgres_url(key, url)?;
                }
            }
            let max_connections = raw_database.max_connections.unwrap_or(10);
            if max_connections < 2 {
                return Err(invalid("database.max_connections", "at least 2"));
            }
            Some(DatabaseSettings {
                url: SecretString::from(url),
                system_url: system_url.map(SecretString::from),
                owner_url: owner_url.map(SecretString::from),
                max_connections,
            })
        }
        None => None,
    };
    let raw_kafka = raw.kafka;
    let kafka = match get("MNEMO_KAFKA_BROKERS").or(raw_kafka.brokers) {
        Some(brokers) if brokers.trim().is_empty() => None,
        Some(brokers) => {
            let partitions = match get("MNEMO_KAFKA_PARTITIONS") {
                Some(raw) => raw.trim().parse::<i32>().ok(),
                None => Some(raw_kafka.partitions.unwrap_or(6)),
            }
            .filter(|p| *p > 0)
            .ok_or_else(|| {
                invalid(
                    "kafka.partitions (MNEMO_KAFKA_PARTITIONS)",
                    "a positive integer",
                )
            })?;
            Some(KafkaSettings {
                brokers: brokers.trim().to_owned(),
                partitions,
            })
        }
        None => None,
    };
    let raw_qdrant = raw.qdrant;
    let qdrant = match get("MNEMO_QDRANT_URL").or(raw_qdrant.url) {
        Some(url) => {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(invalid(
                    "qdrant.url (MNEMO_QDRANT_URL)",
                    "an http:// or https:// URL of Qdrant's gRPC port (6334)",
                ));
            }
            Some(QdrantSettings {
                url,
                api_key: get("MNEMO_QDRANT_API_KEY")
                    .or(raw_qdrant.api_key)
                    .map(SecretString::from),
                collection_prefix: get("MNEMO_QDRANT_COLLECTION_PREFIX")
                    .or(raw_qdrant.collection_prefix)
                    .unwrap_or_else(|| "mnemo-".to_owned()),
            })
        }
        None => None,
    };

    let raw_llm = raw.llm;
    let llm_url = get("MNEMO_LLM_BASE_URL").or(raw_llm.base_url);
    let llm_model = get("MNEMO_LLM_MODEL").or(raw_llm.model);
    let llm = match (llm_url, llm_model) {
        (None, None) => None,
        (Some(_), None) | (None, Some(_)) => {
            return Err(invalid(
                "llm (MNEMO_LLM_BASE_URL, MNEMO_LLM_MODEL)",
                "both the base URL and the model, or neither",
            ))
        }
        (Some(base_url), Some(model)) => {
            if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
                return Err(invalid(
                    "llm.base_url (MNEMO_LLM_BASE_URL)",
                    "an http:// or https:// URL up to the API version, e.g. https://api.openai.com/v1",
                ));
            }
            let number = |key: &str, file: Option<f64>| -> Result<Option<f64>, ConfigError> {
                match get(key) {
                    Some(raw) => raw
                        .parse::<f64>()
                        .ok()
                        .filter(|v| v.is_finite() && *v >= 0.0)
                        .map(Some)
                        .ok_or_else(|| invalid(key, "a non-negative number")),
                    None => Ok(file),
                }
            };
            let temperature =
                number("MNEMO_LLM_TEMPERATURE", raw_llm.temperature.map(f64::from))?.unwrap_or(0.0);
            if temperature > 2.0 {
                return Err(invalid(
                    "llm.temperature (MNEMO_LLM_TEMPERATURE)",
                    "between 0 and 2",
                ));
            }
            let timeout =
                number("MNEMO_LLM_TIMEOUT_SECONDS", raw_llm.timeout_seconds)?.unwrap_or(60.0);
            if !(0.1..=3600.0).contains(&timeout) {
                return Err(invalid(
                    "llm.timeout_seconds (MNEMO_LLM_TIMEOUT_SECONDS)",
                    "between 0.1 and 3600",
                ));
            }
            let response_format = get("MNEMO_LLM_RESPONSE_FORMAT")
                .or(raw_llm.response_format)
                .unwrap_or_else(|| "json_schema".to_owned());
            if !["json_schema", "json_object", "none"].contains(&response_format.as_str()) {
                return Err(invalid(
                    "llm.response_format (MNEMO_LLM_RESPONSE_FORMAT)",
                    "json_schema, json_object or none",
                ));
            }
            let attempts = match get("MNEMO_LLM_ATTEMPTS") {
                Some(raw) => raw
                    .parse::<u32>()
                    .ok()
                    .filter(|n| (1..=10).contains(n))
                    .ok_or_else(|| invalid("MNEMO_LLM_ATTEMPTS", "between 1 and 10"))?,
                None => raw_llm.attempts.unwrap_or(3),
            };
            Some(LlmSettings {
                base_url,
                api_key: get("MNEMO_LLM_API_KEY")
                    .or(raw_llm.api_key)
                    .map(SecretString::from),
                model,
                temperature: temperature as f32,
                timeout: Duration::from_secs_f64(timeout),
                max_retries: raw_llm.max_retries.unwrap_or(3),
                response_format,
                prompts_dir: get("MNEMO_LLM_PROMPTS_DIR")
                    .map(PathBuf::from)
                    .or(raw_llm.prompts_dir),
                attempts,
                price_input_per_million: number(
                    "MNEMO_LLM_PRICE_INPUT_PER_MILLION",
                    raw_llm.price_input_per_million,
                )?
                .unwrap_or(0.0),
                price_output_per_million: number(
                    "MNEMO_LLM_PRICE_OUTPUT_PER_MILLION",
                    raw_llm.price_output_per_million,
                )?
                .unwrap_or(0.0),
            })
        }
    };

    let consolidation = Policies {
        default: raw.consolidation.default.unwrap_or_default(),
        tenants: raw.consolidation.tenants,
    };
    for policy in std::iter::once(&consolidation.default).chain(consolidation.tenants.values()) {
        if policy.batch_size == 0
            || !(0.0..=1.0).contains(&policy.min_confidence)
            || !(0.0..=1.0).contains(&policy.similarity_threshold)
            || !(0.0..=1.0).contains(&policy.protected_importance)
            || policy
                .auto_threshold
                .is_some_and(|t| !(policy.min_confidence..=1.0).contains(&t))
        {
            return Err(invalid(
                "consolidation",
                "batch_size ≥ 1; min_confidence, similarity_threshold and protected_importance within 0..1; auto_threshold within min_confidence..1",
            ));
        }
    }
    let interval = raw.forgetting.interval_seconds.unwrap_or(3600.0);
    if !(0.01..=1e7).contains(&interval) {
        return Err(invalid(
            "forgetting.interval_seconds",
            "between 0.01 and 1e7",
        ));
    }
    let forgetting = ForgettingSettings {
        interval: Duration::from_secs_f64(interval),
        policies: Policies {
            default: raw.forgetting.default.unwrap_or_default(),
            tenants: raw.forgetting.tenants,
        },
    };

    Ok(Settings {
        data_dir,
        listen,
        master_key,
        auth,
        pii: PiiSettings {
            default: raw.pii.default.unwrap_or_default(),
            tenants: raw.pii.tenants,
        },
        limits,
        telemetry,
        bus_partitions,
        embedding,
        consolidation,
        forgetting,
        database,
        kafka,
        qdrant,
        llm,
    })
}

fn read_file(path: &Path) -> Result<RawSettings, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_owned(),
        source,
    })?;
    toml::from_str(&text).map_err(|error| ConfigError::Parse {
        path: path.to_owned(),
        message: error.message().to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemo_pii::{Action, PiiKind};
    use secrecy::ExposeSecret;

    fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_llm_is_off_unless_an_endpoint_and_a_model_are_given() {
        let none = load_from(&Overrides::default(), &env(&[])).unwrap();
        assert!(none.llm.is_none());
        let half = load_from(
            &Overrides::default(),
            &env(&[("MNEMO_LLM_MODEL", "gpt-4o-mini")]),
        );
        assert!(half.unwrap_err().to_string().contains("MNEMO_LLM_BASE_URL"));
        let on = load_from(
            &Overrides::default(),
            &env(&[
                ("MNEMO_LLM_BASE_URL", "http://localhost:11434/v1"),
                ("MNEMO_LLM_MODEL", "qwen2.5:7b"),
                ("MNEMO_LLM_API_KEY", "sk-test"),
                ("MNEMO_LLM_RESPONSE_FORMAT", "json_object"),
                ("MNEMO_LLM_PRICE_INPUT_PER_MILLION", "0.15"),
            ]),
        )
        .unwrap()
        .llm
        .unwrap();
        assert_eq!(on.model, "qwen2.5:7b");
        assert_eq!(on.response_format, "json_object");
        assert_eq!(on.api_key.unwrap().expose_secret(), "sk-test");
        assert_eq!(on.attempts, 3);
        assert!((on.price_input_per_million - 0.15).abs() < 1e-9);
        let bad = load_from(
            &Overrides::default(),
            &env(&[
                ("MNEMO_LLM_BASE_URL", "localhost:11434"),
                ("MNEMO_LLM_MODEL", "m"),
            ]),
        );
        assert!(bad.is_err());
    }

    #[test]
    fn defaults_apply() {
        let settings = load_from(&Overrides::default(), &env(&[])).unwrap();
        assert_eq!(settings.listen.to_string(), DEFAULT_LISTEN);
        assert_eq!(settings.data_dir, PathBuf::from(DEFAULT_DATA_DIR));
        assert_eq!(settings.auth.issuer, "mnemo");
        assert_eq!(settings.limits.max_messages_per_request, 100);
    }

    #[test]
    fn file_then_env_then_flags() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.toml");
        std::fs::write(
            &file,
            "listen = \"127.0.0.1:9000\"\n[pii.default]\ndefault = \"mask\"\n[pii.tenants.acme.kinds]\nemail = \"pseudonymize\"\n",
        )
        .unwrap();
        let from_file = load_from(
            &Overrides::default(),
            &env(&[("MNEMO_CONFIG", file.to_str().unwrap())]),
        )
        .unwrap();
        assert_eq!(from_file.listen.port(), 9000);
        assert_eq!(from_file.pii.default.default, Action::Mask);
        assert_eq!(
            from_file.pii.policy_for("acme").action_for(PiiKind::Email),
            Action::Pseudonymize
        );
        let from_env = load_from(
            &Overrides::default(),
            &env(&[
                ("MNEMO_CONFIG", file.to_str().unwrap()),
                ("MNEMO_LISTEN", "127.0.0.1:9100"),
            ]),
        )
        .unwrap();
        assert_eq!(from_env.listen.port(), 9100);
        let from_flag = load_from(
            &Overrides {
                listen: Some("127.0.0.1:9200".into()),
                ..Default::default()
            },
            &env(&[("MNEMO_LISTEN", "127.0.0.1:9100")]),
        )
        .unwrap();
        assert_eq!(from_flag.listen.port(), 9200);
    }

    #[test]
    fn memory_pipeline_policies_with_tenant_overrides() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.toml");
        std::fs::write(
            &file,
            "[embedding]\nkind = \"lexical\"\n[consolidation.default]\nbatch_size = 4\n[consolidation.tenants.acme]\nmin_confidence = 0.9\n[forgetting]\ninterval_seconds = 0.5\n[forgetting.default]\nhalf_life = 2\n",
        )
        .unwrap();
        let settings = load_from(
            &Overrides::default(),
            &env(&[
                ("MNEMO_CONFIG", file.to_str().unwrap()),
                ("MNEMO_EMBED_MODEL_DIR", "/models/x"),
            ]),
        )
        .unwrap();
        assert_eq!(settings.embedding.kind, "lexical");
        assert_eq!(
            settings.embedding.model_dir,
            Some(PathBuf::from("/models/x"))
        );
        assert_eq!(settings.consolidation.for_tenant("other").batch_size, 4);
        assert_eq!(
            settings.consolidation.for_tenant("acme").min_confidence,
            0.9
        );
        assert_eq!(
            settings.consolidation.for_tenant("acme").batch_size,
            10,
            "a tenant override is a whole policy"
        );
        assert_eq!(settings.forgetting.interval, Duration::from_millis(500));
        assert_eq!(
            settings.forgetting.policies.default.half_life,
            Duration::from_secs(2)
        );
        assert!(load_from(&Overrides::default(), &env(&[("MNEMO_EMBEDDER", "magic")])).is_err());
    }

    #[test]
    fn scale_out_adapters_are_chosen_by_their_urls() {
        let embedded = load_from(&Overrides::default(), &env(&[])).unwrap();
        assert!(
            embedded.database.is_none() && embedded.kafka.is_none() && embedded.qdrant.is_none()
        );
        let settings = load_from(
            &Overrides::default(),
            &env(&[
                ("MNEMO_DATABASE_URL", "postgres://mnemo_app:pw@db/mnemo"),
                (
                    "MNEMO_DATABASE_OWNER_URL",
                    "postgres://mnemo_owner:pw@db/mnemo",
                ),
                ("MNEMO_KAFKA_BROKERS", "k1:9092,k2:9092"),
                ("MNEMO_QDRANT_URL", "http://qdrant:6334"),
            ]),
        )
        .unwrap();
        let database = settings.database.unwrap();
        assert_eq!(
            database.url.expose_secret(),
            "postgres://mnemo_app:pw@db/mnemo"
        );
        assert!(database.system_url.is_none());
        assert_eq!(database.max_connections, 10);
        let kafka = settings.kafka.unwrap();
        assert_eq!(
            (kafka.brokers.as_str(), kafka.partitions),
            ("k1:9092,k2:9092", 6)
        );
        assert_eq!(settings.qdrant.unwrap().collection_prefix, "mnemo-");
        // A malformed URL is refused without echoing it (it may hold a password).
        let error = load_from(
            &Overrides::default(),
            &env(&[("MNEMO_DATABASE_URL", "mysql://root:secret@db")]),
        )
        .unwrap_err()
        .to_string();
        assert!(
            error.contains("MNEMO_DATABASE_URL") && !error.contains("secret"),
            "{error}"
        );
        assert!(load_from(
            &Overrides::default(),
            &env(&[("MNEMO_QDRANT_URL", "qdrant:6334")])
        )
        .is_err());
        assert!(load_from(
            &Overrides::default(),
            &env(&[
                ("MNEMO_KAFKA_BROKERS", "k:9092"),
                ("MNEMO_KAFKA_PARTITIONS", "0")
            ])
        )
        .is_err());
    }

    #[test]
    fn the_embedding_dimension_comes_from_the_environment_over_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.toml");
        std::fs::write(&file, "[embedding]\ndimension = 128\n").unwrap();
        let config = ("MNEMO_CONFIG", file.to_str().unwrap());
        let from_file = load_from(&Overrides::default(), &env(&[config])).unwrap();
        assert_eq!(from_file.embedding.dimension, Some(128));
        let from_env = load_from(
            &Overrides::default(),
            &env(&[config, ("MNEMO_EMBED_DIMENSION", "384")]),
        )
        .unwrap();
        assert_eq!(from_env.embedding.dimension, Some(384));
        for bad in ["0", "-3", "many"] {
            let error = load_from(
                &Overrides::default(),
                &env(&[("MNEMO_EMBED_DIMENSION", bad)]),
            )
            .unwrap_err();
            assert!(
                error.to_string().contains("MNEMO_EMBED_DIMENSION"),
                "{error}"
            );
        }
    }

    #[test]
    fn a_config_file_in_the_data_dir_is_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("mnemo.toml"), "[bus]\npartitions = 4\n").unwrap();
        let settings = load_from(
            &Overrides {
                data_dir: Some(dir.path().to_owned()),
                ..Default::default()
            },
            &env(&[]),
        )
        .unwrap();
        assert_eq!(settings.bus_partitions, 4);
    }

    #[test]
    fn unknown_keys_and_bad_values_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.toml");
        std::fs::write(&file, "listen_port = 1\n").unwrap();
        let error = load_from(
            &Overrides {
                config_file: Some(file),
                ..Default::default()
            },
            &env(&[]),
        )
        .unwrap_err();
        assert!(error.to_string().contains("listen_port"), "{error}");
        assert!(load_from(&Overrides::default(), &env(&[("MNEMO_LISTEN", "nope")])).is_err());
        assert!(load_from(
            &Overrides::default(),
            &env(&[("MNEMO_JWT_SECRET", "short")])
        )
        .is_err());
        assert!(load_from(&Overrides::default(), &env(&[("MNEMO_LOG_FORMAT", "xml")])).is_err());
    }
}
