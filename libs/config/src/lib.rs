//! Typed settings for every mnemo process: defaults, then a TOML file
//! (`MNEMO_CONFIG`, or `mnemo.toml` in the data dir when present), then
//! `MNEMO_*` environment variables, then command-line flags. Unknown keys
//! are refused, secrets are `secrecy` types, and everything is validated
//! once here so nothing downstream re-checks (ripgrep's raw → checked args).
//!
//! Each section of the file has a raw twin (`RawX`: the file's values, then
//! the environment's over them) that resolves once into the typed settings,
//! where a lib owns the section, into that lib's own settings type
//! (`mnemo_embed::EmbedSettings`, `mnemo_llm::LlmConfig`,
//! `mnemo_vector_index::QdrantSettings`), so nothing is mapped or parsed
//! again downstream. An error names the key, and the variable when there is
//! one.

mod auth;
mod embedding;
mod env;
mod llm;
mod load;
mod policies;
mod process;
mod retrieval;
mod stores;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use mnemo_domain::consolidation::ConsolidationPolicy;
use mnemo_embed::EmbedSettings;
use mnemo_vector_index::QdrantSettings;
use secrecy::SecretString;
use serde::Deserialize;

pub use crate::auth::{AuthSettings, PublicKeySetting};
use crate::env::Env;
pub use crate::llm::LlmSettings;
pub use crate::load::{BacklogSettings, Quota};
pub use crate::policies::{ForgettingSettings, PiiSettings, Policies};
pub use crate::process::{Limits, TelemetrySettings};
pub use crate::retrieval::RetrievalSettings;
pub use crate::stores::{DatabaseSettings, KafkaSettings};

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

impl ConfigError {
    /// A stable code for start-up errors and tools.
    pub fn code(&self) -> &'static str {
        match self {
            ConfigError::Read { .. } => "config_unreadable",
            ConfigError::Parse { .. } => "config_malformed",
            ConfigError::Invalid { .. } => "config_invalid_setting",
        }
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
    auth: auth::RawAuth,
    #[serde(default)]
    pii: policies::RawPii,
    #[serde(default)]
    limits: process::RawLimits,
    #[serde(default)]
    backlog: load::RawBacklog,
    #[serde(default)]
    quotas: load::RawQuotas,
    #[serde(default)]
    telemetry: process::RawTelemetry,
    #[serde(default)]
    runtime: process::RawRuntime,
    #[serde(default)]
    bus: process::RawBus,
    #[serde(default)]
    embedding: embedding::RawEmbedding,
    #[serde(default)]
    consolidation: policies::RawConsolidation,
    #[serde(default)]
    forgetting: policies::RawForgetting,
    #[serde(default)]
    retrieval: retrieval::RawRetrieval,
    #[serde(default)]
    database: stores::RawDatabase,
    #[serde(default)]
    kafka: stores::RawKafka,
    #[serde(default)]
    qdrant: stores::RawQdrant,
    #[serde(default)]
    llm: llm::RawLlm,
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
    pub backlog: BacklogSettings,
    pub quotas: Policies<Quota>,
    pub telemetry: TelemetrySettings,
    pub bus_partitions: u32,
    /// The nice increment of the threads that run the background work
    /// (projections, consolidation, relay) over the request threads, 0–19:
    /// see `mnemo_app::runtime`.
    pub background_nice: u8,
    /// Which embedder, and where its model or endpoint is.
    pub embedding: EmbedSettings,
    pub consolidation: Policies<ConsolidationPolicy>,
    /// Subjects consolidated at once; None: two per core, at most 8.
    pub consolidation_workers: Option<usize>,
    pub forgetting: ForgettingSettings,
    /// Fusion and ranking constants of search and context.
    pub retrieval: RetrievalSettings,
    /// None: SQLite in the data dir.
    pub database: Option<DatabaseSettings>,
    /// None: the in-process bus.
    pub kafka: Option<KafkaSettings>,
    /// None: qdrant-edge in the data dir.
    pub qdrant: Option<QdrantSettings>,
    /// None: rule-based consolidation only.
    pub llm: Option<LlmSettings>,
    /// Whether `embedding.cache_dir` (`MNEMO_MODEL_CACHE`) was set rather
    /// than defaulted: see [`Settings::keep_models_in_data_dir`].
    model_cache_configured: bool,
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

    /// For a server and its tools (`serve`, `reindex`, `model fetch`): the
    /// model cache defaults to `<data dir>/models` instead of the user's
    /// cache, so a data dir holds what its server needs to start offline.
    /// Tools on throwaway data dirs (eval, bench) keep the shared cache,
    /// and a configured cache wins either way.
    pub fn keep_models_in_data_dir(mut self) -> Self {
        if !self.model_cache_configured {
            self.embedding.cache_dir = self.data_dir.join("models");
        }
        self
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
    let env = Env::new(env);
    let (data_dir, raw) = read_settings(overrides, &env)?;
    let listen = overrides
        .listen
        .clone()
        .or_else(|| env.get("MNEMO_LISTEN"))
        .or(raw.listen)
        .unwrap_or_else(|| DEFAULT_LISTEN.to_owned())
        .parse()
        .map_err(|_| {
            invalid(
                "listen",
                "expected HOST:PORT with an IP address, e.g. 127.0.0.1:8080",
            )
        })?;
    let master_key = env
        .get("MNEMO_MASTER_KEY")
        .or(raw.master_key)
        .map(SecretString::from);
    let model_cache_configured = raw.embedding.names_a_cache(&env);
    // Sections resolve in this order, so the first invalid one is reported.
    Ok(Settings {
        data_dir,
        listen,
        master_key,
        auth: raw.auth.with_env(&env).resolve()?,
        limits: raw.limits.resolve()?,
        backlog: raw.backlog.resolve()?,
        quotas: raw.quotas.resolve()?,
        telemetry: raw.telemetry.with_env(&env).resolve()?,
        bus_partitions: raw.bus.resolve()?,
        background_nice: raw.runtime.with_env(&env)?.resolve()?,
        embedding: raw.embedding.with_env(&env)?.resolve()?,
        database: raw.database.with_env(&env).resolve()?,
        kafka: raw.kafka.with_env(&env)?.resolve()?,
        qdrant: raw.qdrant.with_env(&env).resolve()?,
        llm: raw.llm.with_env(&env)?.resolve()?,
        consolidation_workers: raw.consolidation.workers(&env)?,
        consolidation: raw.consolidation.resolve()?,
        forgetting: raw.forgetting.resolve()?,
        retrieval: raw.retrieval.resolve()?,
        pii: raw.pii.resolve(),
        model_cache_configured,
    })
}

/// The data dir and the file's settings. The data dir decides where the
/// default config file is, so it is settled first (from the flags, the
/// environment, or the explicit file).
fn read_settings(overrides: &Overrides, env: &Env) -> Result<(PathBuf, RawSettings), ConfigError> {
    let explicit_file = overrides
        .config_file
        .clone()
        .or_else(|| env.get("MNEMO_CONFIG").map(PathBuf::from));
    let mut raw = match &explicit_file {
        Some(path) => read_file(path)?,
        None => RawSettings::default(),
    };
    let data_dir = overrides
        .data_dir
        .clone()
        .or_else(|| env.get("MNEMO_DATA_DIR").map(PathBuf::from))
        .or_else(|| raw.data_dir.clone())
        .unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR));
    if explicit_file.is_none() {
        let implicit = data_dir.join("mnemo.toml");
        if implicit.is_file() {
            raw = read_file(&implicit)?;
        }
    }
    Ok((data_dir, raw))
}

fn read_file(path: &Path) -> Result<RawSettings, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_owned(),
        source,
    })?;
    toml::from_str(&text).map_err(|error| {
        // The line, not its text: a value may be a password. Serde names an
        // unknown key, but not the key of a value it cannot take.
        let message = match error.span() {
            Some(span) => {
                let line = text[..span.start].matches('\n').count() + 1;
                format!("{} (line {line})", error.message())
            }
            None => error.message().to_owned(),
        };
        ConfigError::Parse {
            path: path.to_owned(),
            message,
        }
    })
}

/// Loading from a file or an environment, for the sections' tests.
#[cfg(test)]
pub(crate) mod testing {
    use std::collections::HashMap;

    use crate::{load_from, ConfigError, Overrides, Settings};

    pub(crate) fn load_env(pairs: &[(&str, &str)]) -> Result<Settings, ConfigError> {
        let env: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        load_from(&Overrides::default(), &env)
    }

    pub(crate) fn load_toml(text: &str) -> Result<Settings, ConfigError> {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("mnemo.toml");
        std::fs::write(&file, text).unwrap();
        load_from(
            &Overrides {
                config_file: Some(file),
                ..Default::default()
            },
            &HashMap::new(),
        )
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

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
        assert_eq!(on.chat.model, "qwen2.5:7b");
        assert_eq!(
            on.chat.response_format,
            mnemo_llm::ResponseFormat::JsonObject
        );
        assert_eq!(on.chat.api_key.unwrap().expose_secret(), "sk-test");
        assert_eq!(on.attempts, 3);
        assert!((on.pricing.input_per_million - 0.15).abs() < 1e-9);
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

    /// Every TOML block of the operators' guide is a config file the
    /// loader accepts: the guide cannot drift from the settings.
    #[test]
    fn the_operations_guide_toml_blocks_load() {
        let guide = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/operations.md"),
        )
        .unwrap();
        let blocks: Vec<&str> = guide
            .split("```toml\n")
            .skip(1)
            .map(|rest| rest.split("```").next().unwrap())
            .collect();
        assert!(blocks.len() >= 3, "{} toml blocks", blocks.len());
        let dir = tempfile::tempdir().unwrap();
        for block in blocks {
            let file = dir.path().join("guide.toml");
            std::fs::write(&file, block).unwrap();
            let loaded = load_from(
                &Overrides::default(),
                &env(&[("MNEMO_CONFIG", file.to_str().unwrap())]),
            );
            assert!(loaded.is_ok(), "{block}\n→ {:?}", loaded.err());
        }
    }

    #[test]
    fn retrieval_constants_come_from_the_file_and_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let load = |text: &str| {
            let file = dir.path().join("r.toml");
            std::fs::write(&file, text).unwrap();
            load_from(
                &Overrides::default(),
                &env(&[("MNEMO_CONFIG", file.to_str().unwrap())]),
            )
        };
        let settings = load(
            "[retrieval]\nrrf_k = 20\nmmr_lambda = 0.9\ndated_boost = 1.25\nspeaker_boost = 1.0\n",
        )
        .unwrap();
        assert_eq!(settings.retrieval.rrf_k, Some(20));
        assert_eq!(settings.retrieval.mmr_lambda, Some(0.9));
        assert_eq!(settings.retrieval.dated_boost, Some(1.25));
        assert_eq!(settings.retrieval.speaker_boost, Some(1.0));
        assert_eq!(settings.retrieval.relevance_weight, None);
        for bad in [
            "rrf_k = 0",
            "mmr_lambda = 1.5",
            "recency_weight = -1.0",
            "recency_half_life_days = 0.0",
            "dated_boost = 0.5",
            "speaker_boost = 0.9",
            "on_date_boost = inf",
            "question_weight = 1.5",
            "question_weight = -0.1",
            "fusion = 3",
        ] {
            let refused = load(&format!("[retrieval]\n{bad}\n"));
            assert!(refused.is_err(), "{bad} was accepted");
        }
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
        assert_eq!(settings.embedding.kind, mnemo_embed::EmbedderKind::Lexical);
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
