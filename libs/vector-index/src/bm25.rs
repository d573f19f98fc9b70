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

#[cfg(all(test, any(feature = "edge", feature = "qdrant")))]
mod tests {
    use super::model;

    /// A text's sparse vector by the engine's charabia path: a trailing
    /// paragraph separator (U+2029, one of charabia's separators and not a
    /// letter, so it adds no token) makes the text non-ASCII, which the
    /// plain-ASCII path of the vendored tokenizer does not take.
    fn by_charabia(
        bm25: &qdrant_edge::bm25_embed::EdgeBm25,
        text: &str,
    ) -> qdrant_edge::SparseVector {
        bm25.embed_document(&format!("{text}\u{2029}"))
    }

    /// Texts of every ASCII character the fast path must treat as charabia
    /// does: each separator, the punctuation that is not one (`$ < = > ^ |
    /// ~`), digits, capitals, camel case, contractions, stopwords and the
    /// three control characters it accepts. A fixed seed: a failure
    /// reproduces.
    fn generated(count: usize) -> Vec<String> {
        const PIECES: &[&str] = &[
            "the",
            "and",
            "I",
            "we're",
            "don't",
            "camelCase",
            "iPhone",
            "C++",
            "e-mail",
            "3.5",
            "29.3F",
            "$5",
            "a=b",
            "x|y",
            "<b>",
            "~home",
            "^up",
            "RUNNING",
            "flies",
            "Caroline's",
            "LGBTQ",
            "U.S.",
            "mid-2023",
            "#tag",
            "@anna",
            "100%",
            "snake_case",
            "path/to",
            "a\\b",
            "`code`",
            "(note)",
            "[x]",
            "{y}",
            "well...",
            "yes!!",
            "why?",
            "so, ",
            "end. ",
        ];
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move |bound: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % bound as u64) as usize
        };
        (0..count)
            .map(|_| {
                let mut text = String::new();
                for _ in 0..1 + next(12) {
                    match next(4) {
                        0 => text.push_str(PIECES[next(PIECES.len())]),
                        1 => text.push(char::from(b' ' + next(95) as u8)),
                        2 => text.push(['\t', '\n', '\r', ' '][next(4)]),
                        _ => {
                            for _ in 0..1 + next(8) {
                                text.push(char::from(b'a' + next(26) as u8));
                            }
                            text.push(' ');
                        }
                    }
                }
                text
            })
            .collect()
    }

    #[test]
    fn plain_ascii_texts_get_the_sparse_vectors_charabia_gives_them() {
        let bm25 = model().unwrap();
        let mut texts = generated(20_000);
        // The development conversations, where this checkout has them.
        let locomo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/data/locomo-dev/locomo-dev.json");
        if let Ok(raw) = std::fs::read_to_string(locomo) {
            let mut stack = vec![serde_json::from_str::<serde_json::Value>(&raw).unwrap()];
            while let Some(value) = stack.pop() {
                match value {
                    serde_json::Value::String(text) if text.is_ascii() => texts.push(text),
                    serde_json::Value::Array(items) => stack.extend(items),
                    serde_json::Value::Object(fields) => stack.extend(fields.into_values()),
                    _ => {}
                }
            }
        }
        let mut tokens = 0;
        for text in &texts {
            let fast = bm25.embed_document(text);
            tokens += fast.indices.len();
            assert_eq!(fast, by_charabia(&bm25, text), "{text:?}");
        }
        assert!(
            tokens > texts.len(),
            "the texts were mostly empty of tokens"
        );
    }

    /// What the fast path leaves to charabia still goes there: a text with
    /// another control character, or not ASCII, is tokenised as before.
    #[test]
    fn other_texts_keep_charabias_tokens() {
        let bm25 = model().unwrap();
        let cafe = bm25.embed_document("Café CAFÉ");
        assert_eq!(cafe, bm25.embed_document("café café"));
        assert_eq!(cafe.indices.len(), 1);
        // A control character is dropped from the token, as charabia does.
        assert_eq!(
            bm25.embed_document("gar\u{1}den"),
            bm25.embed_document("garden")
        );
    }
}
