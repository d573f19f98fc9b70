//! The one BM25 configuration of mnemo's sparse vectors.
//!
//! Qdrant's BM25 is a document-side embedding: text is tokenised (Qdrant's
//! own pipeline: tokenizer, lowercasing, stopwords, stemming), each token is
//! hashed to a dimension (murmur3), documents get a saturated term-frequency
//! weight and queries a weight of 1 per distinct token. The engine applies
//! IDF at query time (the `idf` modifier of the sparse vector), so the
//! corpus statistics stay current without re-embedding. Those statistics
//! cover the whole shard or collection, every tenant included: a tenant's
//! keyword scores depend a little on other tenants' vocabulary (no text or
//! id crosses over), exactly as on a shared Qdrant collection.
//!
//! The JSON below has the shape of the server's `Bm25Config` (the `options`
//! of a `qdrant/bm25` inference document), which qdrant-edge's
//! `EdgeBm25Config` also deserialises. The embedded adapter builds its model
//! from it and a server adapter sends it verbatim, so both deployments make
//! identical sparse vectors. Changing it changes every stored vector: the
//! embedded adapter refuses to open an index built with other options.

use serde_json::{json, Value};

#[cfg(any(feature = "edge", feature = "qdrant"))]
use crate::VectorIndexError;

/// The multilingual tokenizer segments by script (charabia): jieba word
/// segmentation for Chinese, a Japanese segmenter, Unicode word boundaries
/// elsewhere. Qdrant's default `word` tokenizer would keep a whole run of
/// Chinese characters as one token, so a Chinese query would only match a
/// Chinese text that is exactly the same run.
pub const TOKENIZER: &str = "multilingual";

/// Default stopwords and Snowball stemmer come from this language; other
/// scripts pass through the English stemmer unchanged.
pub const LANGUAGE: &str = "english";

/// Expected document length in tokens. Memories are a sentence or two, not
/// Qdrant's default 256-token passages; with 256 the length normalisation
/// would be almost off for them.
pub const AVG_LEN: f64 = 32.0;

/// Term-frequency saturation (Qdrant's default).
pub const K1: f64 = 1.2;

/// Length normalisation strength (Qdrant's default).
pub const B: f64 = 0.75;

/// The BM25 options, in the server's `Bm25Config` JSON shape.
pub fn options() -> Value {
    json!({
        "tokenizer": TOKENIZER,
        "language": LANGUAGE,
        "k": K1,
        "b": B,
        "avg_len": AVG_LEN,
    })
}

/// The BM25 model both adapters embed with: qdrant-edge's implementation of
/// the server's `qdrant/bm25`, configured by [`options`].
#[cfg(any(feature = "edge", feature = "qdrant"))]
pub(crate) fn model() -> Result<qdrant_edge::bm25_embed::EdgeBm25, VectorIndexError> {
    let config: qdrant_edge::bm25_embed::EdgeBm25Config = serde_json::from_value(options())
        .map_err(|e| VectorIndexError::Backend(format!("bm25 options: {e}")))?;
    qdrant_edge::bm25_embed::EdgeBm25::new(config)
        .map_err(|e| VectorIndexError::Backend(format!("bm25 model: {e}")))
}
