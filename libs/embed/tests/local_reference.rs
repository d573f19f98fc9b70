//! The local embedder on the real all-MiniLM-L6-v2 against reference vectors
//! computed independently (float64) the way sentence-transformers does.
#![cfg(feature = "local")]

use std::sync::Arc;

use mnemo_embed::{test_model_dir, Embedder, LocalEmbedder, LocalOptions};
use serde::Deserialize;
use tokio::sync::OnceCell;

const MODEL_ID: &str = "sentence-transformers/all-MiniLM-L6-v2";
const MIN_COSINE: f32 = 0.9999;

#[derive(Deserialize)]
struct Reference {
    items: Vec<ReferenceItem>,
}

#[derive(Deserialize)]
struct ReferenceItem {
    text: String,
    embedding: Vec<f32>,
}

fn reference() -> Reference {
    let raw = include_str!("fixtures/all-MiniLM-L6-v2-reference.json");
    serde_json::from_str(raw).expect("reference fixture parses")
}

/// Loaded once per test binary: loading takes a while in debug builds.
async fn embedder() -> Arc<LocalEmbedder> {
    static EMBEDDER: OnceCell<Arc<LocalEmbedder>> = OnceCell::const_new();
    EMBEDDER
        .get_or_init(|| async {
            let dir = test_model_dir().await;
            let loaded = tokio::task::spawn_blocking(move || LocalEmbedder::load(&dir, MODEL_ID))
                .await
                .unwrap()
                .expect("the test model loads");
            Arc::new(loaded)
        })
        .await
        .clone()
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (norm(a) * norm(b))
}

#[tokio::test]
async fn space_comes_from_the_model_id_and_config() {
    let embedder = embedder().await;
    assert_eq!(embedder.space().model, MODEL_ID);
    assert_eq!(embedder.space().dimension, 384);
}

#[tokio::test]
async fn each_text_alone_matches_the_reference() {
    let embedder = embedder().await;
    for item in reference().items {
        // One text per call: no padding at all.
        let vectors = embedder
            .embed(std::slice::from_ref(&item.text))
            .await
            .unwrap();
        let similarity = cosine(&vectors[0], &item.embedding);
        assert!(
            similarity >= MIN_COSINE,
            "{:?}: cosine {similarity} to the reference",
            item.text
        );
        let norm = cosine(&vectors[0], &vectors[0]).sqrt();
        assert!((norm - 1.0).abs() < 1e-5);
    }
}

#[tokio::test]
async fn one_padded_batch_matches_the_reference() {
    let embedder = embedder().await;
    let items = reference().items;
    let texts: Vec<String> = items.iter().map(|i| i.text.clone()).collect();
    // All twelve sentences (4 to 20-odd tokens) in one forward pass: the
    // short ones carry many pads, which must not leak into their vectors.
    let vectors = embedder.embed(&texts).await.unwrap();
    assert_eq!(vectors.len(), items.len());
    for (vector, item) in vectors.iter().zip(&items) {
        let similarity = cosine(vector, &item.embedding);
        assert!(
            similarity >= MIN_COSINE,
            "{:?}: cosine {similarity} in a batch",
            item.text
        );
    }
}

#[tokio::test]
async fn published_similarities_are_reproduced() {
    let embedder = embedder().await;
    let texts: Vec<String> = reference().items[..3]
        .iter()
        .map(|i| i.text.clone())
        .collect();
    let v = embedder.embed(&texts).await.unwrap();
    for ((a, b), expected) in [((0, 1), 0.6660), ((0, 2), 0.1046), ((1, 2), 0.1411)] {
        let similarity = cosine(&v[a], &v[b]);
        assert!(
            (similarity - expected).abs() < 1e-3,
            "sim({a},{b}) = {similarity}, expected {expected}"
        );
    }
}

/// The default runs the exact GELU the model was trained with (the tests
/// above); the tanh approximation, an option, must hold to the reference
/// too, and must change the vectors (else the option would do nothing).
#[tokio::test]
async fn the_tanh_gelu_stays_within_the_reference_bound() {
    let dir = test_model_dir().await;
    let options = LocalOptions {
        approximate_gelu: true,
        workers: 1,
    };
    let approximate =
        tokio::task::spawn_blocking(move || LocalEmbedder::load_with(&dir, MODEL_ID, options))
            .await
            .unwrap()
            .unwrap();
    let items = reference().items;
    let texts: Vec<String> = items.iter().map(|i| i.text.clone()).collect();
    let vectors = approximate.embed(&texts).await.unwrap();
    let exact = embedder().await.embed(&texts).await.unwrap();
    for ((vector, item), exact) in vectors.iter().zip(&items).zip(&exact) {
        let similarity = cosine(vector, &item.embedding);
        assert!(
            similarity >= MIN_COSINE,
            "{:?}: cosine {similarity}",
            item.text
        );
        assert_ne!(
            vector, exact,
            "{:?}: the tanh GELU changed nothing",
            item.text
        );
    }
}

#[tokio::test]
async fn batches_split_over_workers_come_back_in_input_order() {
    let dir = test_model_dir().await;
    let options = LocalOptions {
        workers: 3,
        ..LocalOptions::default()
    };
    // Batches of 2 over 3 workers: 12 texts make 6 forward passes, two on
    // each worker, whose results must land at their texts' positions.
    let parallel =
        tokio::task::spawn_blocking(move || LocalEmbedder::load_with(&dir, MODEL_ID, options))
            .await
            .unwrap()
            .unwrap()
            .with_batch_size(2);
    let items = reference().items;
    let texts: Vec<String> = items.iter().map(|i| i.text.clone()).collect();
    assert!(texts.len() >= 12);
    let vectors = parallel.embed(&texts).await.unwrap();
    assert_eq!(vectors.len(), texts.len());
    for (vector, item) in vectors.iter().zip(&items) {
        let similarity = cosine(vector, &item.embedding);
        assert!(
            similarity >= MIN_COSINE,
            "{:?}: cosine {similarity}",
            item.text
        );
    }
}

/// `n` words, each a single token in the BERT vocabulary.
fn words(n: usize) -> String {
    let vocabulary = ["apple", "house", "river", "green", "music"];
    (0..n)
        .map(|i| vocabulary[i % vocabulary.len()])
        .collect::<Vec<_>>()
        .join(" ")
}

#[tokio::test]
async fn truncation_is_at_max_seq_length_256_not_the_tokenizer_128() {
    // Checked on token counts: forward passes over 256 tokens are slow in
    // debug builds, and the embedder encodes through the same function.
    let embedder = embedder().await;
    assert_eq!(embedder.max_seq_length(), 256);
    // [CLS] + words + [SEP]: the tokenizer.json's own 128 would cut the first.
    assert_eq!(embedder.token_count(&words(200)).unwrap(), 202);
    assert_eq!(embedder.token_count(&words(254)).unwrap(), 256);
    assert_eq!(embedder.token_count(&words(600)).unwrap(), 256);
}

#[tokio::test]
async fn empty_and_whitespace_inputs_are_handled() {
    let embedder = embedder().await;
    assert!(embedder.embed(&[]).await.unwrap().is_empty());
    let v = embedder
        .embed(&[
            "ok thanks".to_string(),
            "  ok thanks \n".to_string(),
            String::new(),
        ])
        .await
        .unwrap();
    // sentence-transformers strips before tokenizing.
    assert!(cosine(&v[0], &v[1]) > 0.99999);
    assert_eq!(v[2].len(), 384);
    // (A text past the 512 position embeddings is embedded by the
    // `embed_bench` example: a 256-token forward pass takes about a minute
    // in an unoptimised build.)
}
