//! Choosing an embedder from settings, and getting model files onto disk.

use std::path::Path;

use mnemo_embed::{
    build, ensure_model, ensure_model_from_hub, EmbedSettings, EmbedderKind, ModelSource,
};
use serde_json::json;
use wiremock::matchers::{method, path, path_regex};
use wiremock::{Mock, MockServer, ResponseTemplate};

const MODEL_FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

fn settings(kind: EmbedderKind, cache_dir: &Path) -> EmbedSettings {
    EmbedSettings {
        kind,
        model_dir: None,
        model: None,
        base_url: None,
        api_key: None,
        cache_dir: cache_dir.to_path_buf(),
        dimension: None,
        hub_endpoint: mnemo_embed::unreachable_endpoint(),
        pypi_endpoint: mnemo_embed::unreachable_endpoint(),
    }
}

fn fake_model_dir(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    for file in MODEL_FILES {
        std::fs::write(dir.join(file), file).unwrap();
    }
}

#[tokio::test]
async fn lexical_kind_builds_the_lexical_embedder() {
    let cache = tempfile::tempdir().unwrap();
    let mut settings = settings(EmbedderKind::Lexical, cache.path());
    settings.dimension = Some(128);
    let embedder = build(&settings).await.unwrap();
    assert_eq!(embedder.space().model, "mnemo/lexical-hash-v1");
    assert_eq!(embedder.space().dimension, 128);
    let vectors = embedder.embed(&["hello world".to_string()]).await.unwrap();
    assert_eq!(vectors[0].len(), 128);
}

#[tokio::test]
async fn openai_kind_builds_the_http_embedder_and_needs_url_and_model() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "object": "list",
            "data": [{"object": "embedding", "index": 0, "embedding": [0.5, 0.5, 0.5, 0.5]}],
        })))
        .mount(&server)
        .await;
    let cache = tempfile::tempdir().unwrap();
    let mut settings = settings(EmbedderKind::Openai, cache.path());
    settings.base_url = Some(format!("{}/v1", server.uri()));
    settings.model = Some("nomic-embed-text".into());

    let embedder = build(&settings).await.unwrap();
    assert_eq!(embedder.space().model, "nomic-embed-text");
    assert_eq!(embedder.space().dimension, 4, "probed");

    let mut no_url = settings.clone();
    no_url.base_url = None;
    let error = build(&no_url).await.err().expect("no base url");
    assert_eq!(error.code(), "embed_invalid_config");
    assert!(error.to_string().contains("MNEMO_EMBED_BASE_URL"));
    let mut no_model = settings;
    no_model.model = None;
    let error = build(&no_model).await.err().expect("no model");
    assert!(error.to_string().contains("MNEMO_EMBED_MODEL"));
}

#[tokio::test]
async fn auto_falls_back_to_lexical_when_no_model_can_be_had() {
    let cache = tempfile::tempdir().unwrap();
    let settings = settings(EmbedderKind::Auto, cache.path());

    let embedder = build(&settings).await.unwrap();

    assert_eq!(embedder.space().model, "mnemo/lexical-hash-v1");
    assert!(
        std::fs::read_dir(cache.path()).unwrap().all(|e| {
            let name = e.unwrap().file_name();
            !name.to_string_lossy().starts_with(".download-")
        }),
        "a failed download leaves no staging directory"
    );
}

#[tokio::test]
async fn local_kind_fails_clearly_when_no_model_can_be_had() {
    let cache = tempfile::tempdir().unwrap();
    let settings = settings(EmbedderKind::Local, cache.path());

    let error = build(&settings).await.err().expect("no model anywhere");

    assert_eq!(error.code(), "embed_model_unavailable");
    let message = error.to_string();
    assert!(
        message.contains("sentence-transformers/all-MiniLM-L6-v2"),
        "{message}"
    );
    assert!(message.contains("MNEMO_EMBED_MODEL_DIR"), "{message}");
}

#[cfg(feature = "local")]
#[tokio::test]
async fn auto_and_local_use_the_model_dir_when_given() {
    let cache = tempfile::tempdir().unwrap();
    let model_dir = mnemo_embed::test_model_dir().await;
    for kind in [EmbedderKind::Auto, EmbedderKind::Local] {
        let mut settings = settings(kind, cache.path());
        settings.model_dir = Some(model_dir.clone());
        let embedder = build(&settings).await.unwrap();
        assert_eq!(
            embedder.space().model,
            "sentence-transformers/all-MiniLM-L6-v2"
        );
        assert_eq!(embedder.space().dimension, 384);
    }
    let mut mismatch = settings(EmbedderKind::Local, cache.path());
    mismatch.model_dir = Some(model_dir);
    mismatch.dimension = Some(768);
    let error = build(&mismatch).await.err().expect("wrong dimension");
    assert_eq!(error.code(), "embed_invalid_config");
}

#[tokio::test]
async fn ensure_model_uses_an_explicit_dir_as_is() {
    let explicit = tempfile::tempdir().unwrap();
    fake_model_dir(explicit.path());
    let cache = tempfile::tempdir().unwrap();
    let source = ModelSource::new("org/model", "main");

    let dir = ensure_model(&source, Some(explicit.path()), cache.path())
        .await
        .unwrap();

    assert_eq!(dir, explicit.path());
    assert_eq!(std::fs::read_dir(cache.path()).unwrap().count(), 0);
}

#[tokio::test]
async fn ensure_model_uses_a_complete_cache_without_the_network() {
    let cache = tempfile::tempdir().unwrap();
    let source = ModelSource::new("org/model", "main");
    let cached = source.cache_path(cache.path());
    fake_model_dir(&cached);

    // The hub is unreachable: only the cache can answer.
    let dir = ensure_model_from_hub(
        &source,
        None,
        cache.path(),
        &mnemo_embed::unreachable_endpoint(),
    )
    .await
    .unwrap();

    assert_eq!(dir, cached);
}

#[tokio::test]
async fn ensure_model_refuses_an_incomplete_dir() {
    let explicit = tempfile::tempdir().unwrap();
    std::fs::write(explicit.path().join("config.json"), "{}").unwrap();
    std::fs::write(explicit.path().join("pytorch_model.bin"), "weights").unwrap();
    let cache = tempfile::tempdir().unwrap();
    let source = ModelSource::new("org/model", "main");

    let error = ensure_model(&source, Some(explicit.path()), cache.path())
        .await
        .unwrap_err();

    assert_eq!(error.code(), "embed_model_unavailable");
    let message = error.to_string();
    assert!(message.contains("tokenizer.json"), "{message}");
    assert!(
        message.contains("pytorch_model.bin is not supported"),
        "{message}"
    );

    // An incomplete cache entry is not taken for a model either.
    let partial = source.cache_path(cache.path());
    std::fs::create_dir_all(&partial).unwrap();
    std::fs::write(partial.join("config.json"), "{}").unwrap();
    let error = ensure_model_from_hub(
        &source,
        None,
        cache.path(),
        &mnemo_embed::unreachable_endpoint(),
    )
    .await
    .unwrap_err();
    assert!(error.to_string().contains("download"), "{error}");
}

#[tokio::test]
async fn ensure_model_downloads_into_the_cache_once() {
    let hub = MockServer::start().await;
    for file in MODEL_FILES {
        Mock::given(method("GET"))
            .and(path(format!("/org/model/resolve/v1.0/{file}")))
            .respond_with(ResponseTemplate::new(200).set_body_string(format!("content of {file}")))
            .mount(&hub)
            .await;
    }
    Mock::given(method("GET"))
        .and(path("/org/model/resolve/v1.0/1_Pooling/config.json"))
        .respond_with(ResponseTemplate::new(200).set_body_string("{}"))
        .mount(&hub)
        .await;
    // sentence_bert_config.json and modules.json: 404, they are optional.
    let cache = tempfile::tempdir().unwrap();
    let source = ModelSource::new("org/model", "v1.0");

    let dir = ensure_model_from_hub(&source, None, cache.path(), &hub.uri())
        .await
        .unwrap();

    assert_eq!(dir, source.cache_path(cache.path()));
    for file in MODEL_FILES {
        assert_eq!(
            std::fs::read_to_string(dir.join(file)).unwrap(),
            format!("content of {file}")
        );
    }
    assert!(dir.join("1_Pooling/config.json").is_file());
    let fetched = hub.received_requests().await.unwrap().len();

    let again = ensure_model_from_hub(&source, None, cache.path(), &hub.uri())
        .await
        .unwrap();
    assert_eq!(again, dir);
    assert_eq!(hub.received_requests().await.unwrap().len(), fetched);
}

#[tokio::test]
async fn a_failed_download_leaves_nothing_behind() {
    let hub = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path_regex(r"/(config|tokenizer)\.json$"))
        .respond_with(ResponseTemplate::new(200).set_body_string("{}"))
        .mount(&hub)
        .await;
    Mock::given(method("GET"))
        .and(path_regex(r"model\.safetensors$"))
        .respond_with(ResponseTemplate::new(500))
        .mount(&hub)
        .await;
    let cache = tempfile::tempdir().unwrap();
    let source = ModelSource::new("org/model", "main");

    let error = ensure_model_from_hub(&source, None, cache.path(), &hub.uri())
        .await
        .unwrap_err();

    assert_eq!(error.code(), "embed_model_unavailable");
    assert!(error.to_string().contains("500"), "{error}");
    assert!(!source.cache_path(cache.path()).exists());
    let leftovers: Vec<_> = std::fs::read_dir(cache.path())
        .unwrap()
        .flat_map(|e| std::fs::read_dir(e.unwrap().path()).unwrap())
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}
