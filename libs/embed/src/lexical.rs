//! The built-in lexical embedder: feature hashing, no model.
//!
//! It exists so that mnemo works with nothing downloaded. It is honest about
//! what it is — its space is `mnemo/lexical-hash-v1`, and two texts are close
//! only when they share words or word pieces, never because they mean the same
//! thing. Everything here is fixed forever for a given space id (tokenizer,
//! hash function, weights): vectors stored by one release must stay comparable
//! with queries embedded by the next, so any change needs a new space id.

use crate::{l2_normalize, EmbedError, Embedder, EmbeddingSpace};

/// Space id of this embedder; bump the version on any change to features.
pub(crate) const LEXICAL_MODEL_ID: &str = "mnemo/lexical-hash-v1";

/// Above this many bytes in one call, hashing moves to the blocking pool so it
/// cannot stall the async runtime; below it, a thread hop costs more than the
/// work.
const INLINE_BYTES: usize = 16 * 1024;

// Feature weights: whole words dominate; character trigrams give partial
// credit for inflections and typos ("allergy" vs "allergic"); for CJK, where
// words are not delimited, bigrams stand in for words and single characters
// for pieces.
const WORD_WEIGHT: f32 = 1.0;
const TRIGRAM_WEIGHT: f32 = 0.5;
const CJK_BIGRAM_WEIGHT: f32 = 1.0;
const CJK_UNIGRAM_WEIGHT: f32 = 0.5;

/// Feature namespaces, hashed in front of the feature so that the word "abc"
/// and the trigram "abc" land in unrelated buckets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Namespace {
    Word,
    Trigram,
    CjkUnigram,
    CjkBigram,
    /// The single feature of a text without any token, so that it still maps
    /// to a (shared) unit vector instead of a zero vector.
    Empty,
}

impl Namespace {
    fn tag(self) -> &'static [u8] {
        match self {
            Namespace::Word => b"w\x1f",
            Namespace::Trigram => b"t\x1f",
            Namespace::CjkUnigram => b"u\x1f",
            Namespace::CjkBigram => b"b\x1f",
            Namespace::Empty => b"e\x1f",
        }
    }

    fn weight(self) -> f32 {
        match self {
            Namespace::Word => WORD_WEIGHT,
            Namespace::Trigram => TRIGRAM_WEIGHT,
            Namespace::CjkUnigram => CJK_UNIGRAM_WEIGHT,
            Namespace::CjkBigram => CJK_BIGRAM_WEIGHT,
            Namespace::Empty => 1.0,
        }
    }
}

/// Model-free embedder hashing words and character n-grams into a fixed
/// number of signed buckets.
#[derive(Debug, Clone)]
pub struct LexicalEmbedder {
    space: EmbeddingSpace,
}

impl LexicalEmbedder {
    /// # Panics
    /// When `dimension` is zero.
    pub fn new(dimension: usize) -> Self {
        assert!(dimension > 0, "lexical embedder dimension must be positive");
        Self {
            space: EmbeddingSpace::new(LEXICAL_MODEL_ID, dimension),
        }
    }

    /// The vector of one text; pure and deterministic.
    pub fn embed_one(&self, text: &str) -> Vec<f32> {
        embed_text(text, self.space.dimension)
    }
}

#[async_trait::async_trait]
impl Embedder for LexicalEmbedder {
    fn space(&self) -> &EmbeddingSpace {
        &self.space
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let dimension = self.space.dimension;
        let total_bytes: usize = texts.iter().map(String::len).sum();
        if total_bytes <= INLINE_BYTES {
            return Ok(texts.iter().map(|t| embed_text(t, dimension)).collect());
        }
        let texts = texts.to_vec();
        tokio::task::spawn_blocking(move || {
            texts
                .iter()
                .map(|t| embed_text(t, dimension))
                .collect::<Vec<_>>()
        })
        .await
        .map_err(|e| EmbedError::Task(e.to_string()))
    }
}

fn embed_text(text: &str, dimension: usize) -> Vec<f32> {
    let tokens = tokenize(text);
    let mut features: Vec<(Namespace, Feature<'_>)> = Vec::new();
    for token in &tokens {
        match token {
            Token::Word(word) => {
                features.extend(
                    marked(word)
                        .windows(3)
                        .map(|trigram| (Namespace::Trigram, Feature::gram(trigram))),
                );
                features.push((Namespace::Word, Feature::Word(word)));
            }
            Token::CjkRun(chars) => {
                features.extend(chars.iter().map(|c| {
                    (
                        Namespace::CjkUnigram,
                        Feature::gram(std::slice::from_ref(c)),
                    )
                }));
                features.extend(
                    chars
                        .windows(2)
                        .map(|pair| (Namespace::CjkBigram, Feature::gram(pair))),
                );
            }
        }
    }
    if features.is_empty() {
        features.push((Namespace::Empty, Feature::Word("")));
    }
    // Summed in the order of (namespace, feature text), each distinct
    // feature once with its count: a fixed order makes the float sums, and
    // so the vectors, bit-identical across processes. (A sorted list, not
    // a map with an owned string per feature: a trigram allocates nothing.)
    features.sort_unstable();
    let counts = features
        .chunk_by(|a, b| a == b)
        .map(|run| (run[0], run.len() as u32));

    let mut vector = vec![0.0f32; dimension];
    for ((namespace, feature), count) in counts {
        // Sublinear tf: a word said five times is not five times the topic.
        let value = namespace.weight() * (1.0 + (count as f32).ln());
        let hash = fnv1a64(namespace.tag(), feature.bytes());
        // Signed hashing: collisions cancel out in expectation instead of
        // piling up, which keeps inner products unbiased.
        let sign = if hash >> 63 == 1 { -1.0 } else { 1.0 };
        let bucket = (hash % dimension as u64) as usize;
        vector[bucket] += sign * value;
    }
    if !l2_normalize(&mut vector) {
        // Every feature cancelled out in its bucket (possible only with tiny
        // dimensions): fall back to the empty-text direction.
        vector.iter_mut().for_each(|x| *x = 0.0);
        let hash = fnv1a64(Namespace::Empty.tag(), b"");
        vector[(hash % dimension as u64) as usize] = 1.0;
    }
    vector
}

/// A word's characters between a start and an end mark, so its first and
/// last trigrams say where the word begins and ends.
fn marked(word: &str) -> Vec<char> {
    std::iter::once('^')
        .chain(word.chars())
        .chain(std::iter::once('$'))
        .collect()
}

/// A feature's text: a word, borrowed from its token, or an n-gram of at
/// most three characters, held inline. Ordered by its UTF-8 bytes, as the
/// `String` it stands for.
#[derive(Debug, Clone, Copy)]
enum Feature<'a> {
    Word(&'a str),
    Gram { bytes: [u8; 12], len: u8 },
}

impl<'a> Feature<'a> {
    /// # Panics
    /// With more than three characters (the n-grams are at most trigrams).
    fn gram(chars: &[char]) -> Self {
        let mut bytes = [0u8; 12];
        let mut len = 0;
        for c in chars {
            len += c.encode_utf8(&mut bytes[len..]).len();
        }
        Feature::Gram {
            bytes,
            len: len as u8,
        }
    }

    fn bytes(&self) -> &[u8] {
        match self {
            Feature::Word(word) => word.as_bytes(),
            Feature::Gram { bytes, len } => &bytes[..usize::from(*len)],
        }
    }
}

impl PartialEq for Feature<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.bytes() == other.bytes()
    }
}

impl Eq for Feature<'_> {}

impl PartialOrd for Feature<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Feature<'_> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.bytes().cmp(other.bytes())
    }
}

/// 64-bit FNV-1a: tiny, specified, and stable across platforms and Rust
/// releases (unlike `DefaultHasher`).
fn fnv1a64(prefix: &[u8], bytes: &[u8]) -> u64 {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut hash = OFFSET_BASIS;
    for &byte in prefix.iter().chain(bytes) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(PRIME);
    }
    hash
}

#[derive(Debug, PartialEq, Eq)]
enum Token {
    /// A lowercased run of alphanumerics from a space-delimited script.
    Word(String),
    /// A run of characters from scripts written without spaces.
    CjkRun(Vec<char>),
}

/// Lowercases and splits on anything not alphanumeric. Han, kana and other
/// scripts written without spaces come out as runs, which become character
/// unigrams and bigrams downstream. Hangul is space-delimited, so it is
/// treated as words.
fn tokenize(text: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut word = String::new();
    let mut cjk: Vec<char> = Vec::new();
    for c in text.chars().flat_map(char::to_lowercase) {
        if is_unsegmented_script(c) {
            if !word.is_empty() {
                tokens.push(Token::Word(std::mem::take(&mut word)));
            }
            cjk.push(c);
        } else if c.is_alphanumeric() {
            if !cjk.is_empty() {
                tokens.push(Token::CjkRun(std::mem::take(&mut cjk)));
            }
            word.push(c);
        } else {
            if !word.is_empty() {
                tokens.push(Token::Word(std::mem::take(&mut word)));
            }
            if !cjk.is_empty() {
                tokens.push(Token::CjkRun(std::mem::take(&mut cjk)));
            }
        }
    }
    if !word.is_empty() {
        tokens.push(Token::Word(word));
    }
    if !cjk.is_empty() {
        tokens.push(Token::CjkRun(cjk));
    }
    tokens
}

/// Han ideographs (all CJK blocks), Japanese kana, and Thai/Lao/Khmer/Myanmar,
/// which are written without spaces between words.
fn is_unsegmented_script(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF          // Hiragana, Katakana
        | 0x31F0..=0x31FF        // Katakana phonetic extensions
        | 0x3400..=0x4DBF        // CJK Extension A
        | 0x4E00..=0x9FFF        // CJK Unified Ideographs
        | 0xF900..=0xFAFF        // CJK Compatibility Ideographs
        | 0xFF66..=0xFF9D        // Halfwidth Katakana
        | 0x20000..=0x323AF      // CJK Extensions B–H
        | 0x0E00..=0x0EFF        // Thai, Lao
        | 0x1000..=0x109F        // Myanmar
        | 0x1780..=0x17FF        // Khmer
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenizer_lowercases_splits_and_isolates_cjk_runs() {
        assert_eq!(
            tokenize("Hello, WORLD! I'm user42 住在北京。ok"),
            vec![
                Token::Word("hello".into()),
                Token::Word("world".into()),
                Token::Word("i".into()),
                Token::Word("m".into()),
                Token::Word("user42".into()),
                Token::CjkRun("住在北京".chars().collect()),
                Token::Word("ok".into()),
            ]
        );
        assert_eq!(
            tokenize("Ünïcödé Straße"),
            vec![Token::Word("ünïcödé".into()), Token::Word("straße".into())]
        );
    }

    #[test]
    fn fnv_matches_the_published_test_vectors() {
        // From the FNV reference (draft-eastlake-fnv): FNV-1a 64 of "" and "a".
        assert_eq!(fnv1a64(b"", b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"", b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foo", b"bar"), fnv1a64(b"", b"foobar"));
    }

    #[test]
    fn vectors_are_pinned_across_releases() {
        // A stored vector must equal tomorrow's query vector: pin every
        // coordinate (scaled to integers) so that any change of features,
        // weights or hashing fails here and forces a new space id.
        let v = embed_text("The user lives in Lisbon, 用户住在北京 lives!", 32);
        let pinned: Vec<i32> = v.iter().map(|x| (x * 1e4).round() as i32).collect();
        assert_eq!(pinned, PINNED);
    }

    /// Cross-checked against an independent Python implementation of the
    /// same specification when first written.
    const PINNED: [i32; 32] = [
        1046, 0, 1046, 0, 0, 0, 1046, -2091, -2091, 2091, 0, 0, 0, 1149, -5632, 0, 0, -2091, -2816,
        0, -1046, 0, 1046, 0, -2091, 0, -1046, -2091, 725, -1046, -725, -4907,
    ];

    /// The vector as the first release computed it: a map from each
    /// (namespace, feature text) to its count, summed in the map's order.
    fn embed_text_with_a_map(text: &str, dimension: usize) -> Vec<f32> {
        let mut counts: std::collections::BTreeMap<(Namespace, String), u32> =
            std::collections::BTreeMap::new();
        for token in tokenize(text) {
            match token {
                Token::Word(word) => {
                    for trigram in marked(&word).windows(3) {
                        *counts
                            .entry((Namespace::Trigram, trigram.iter().collect()))
                            .or_default() += 1;
                    }
                    *counts.entry((Namespace::Word, word)).or_default() += 1;
                }
                Token::CjkRun(chars) => {
                    for c in &chars {
                        *counts
                            .entry((Namespace::CjkUnigram, c.to_string()))
                            .or_default() += 1;
                    }
                    for pair in chars.windows(2) {
                        *counts
                            .entry((Namespace::CjkBigram, pair.iter().collect()))
                            .or_default() += 1;
                    }
                }
            }
        }
        if counts.is_empty() {
            counts.insert((Namespace::Empty, String::new()), 1);
        }
        let mut vector = vec![0.0f32; dimension];
        for ((namespace, feature), count) in counts {
            let value = namespace.weight() * (1.0 + (count as f32).ln());
            let hash = fnv1a64(namespace.tag(), feature.as_bytes());
            let sign = if hash >> 63 == 1 { -1.0 } else { 1.0 };
            vector[(hash % dimension as u64) as usize] += sign * value;
        }
        if !l2_normalize(&mut vector) {
            vector.iter_mut().for_each(|x| *x = 0.0);
            let hash = fnv1a64(Namespace::Empty.tag(), b"");
            vector[(hash % dimension as u64) as usize] = 1.0;
        }
        vector
    }

    proptest::proptest! {
        /// Bit for bit, not within a tolerance: a stored vector and a
        /// query vector of the same text must be equal.
        #[test]
        fn vectors_are_bit_identical_to_the_map_of_the_first_release(
            text in proptest::prop_oneof![
                proptest::prelude::any::<String>(),
                "[a-zA-Z0-9 ,.!?éü]{0,200}",
                "[a-z 住在北京用户我们昨天ひらがなカタカナ한국어ไทย]{0,120}",
            ],
            dimension in 1usize..512,
        ) {
            let fast: Vec<u32> = embed_text(&text, dimension).iter().map(|x| x.to_bits()).collect();
            let map: Vec<u32> = embed_text_with_a_map(&text, dimension)
                .iter()
                .map(|x| x.to_bits())
                .collect();
            proptest::prop_assert_eq!(fast, map);
        }
    }

    #[test]
    fn empty_and_punctuation_only_texts_get_a_unit_vector() {
        for text in ["", "   ", "?!…"] {
            let v = embed_text(text, 32);
            let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-6);
        }
        assert_eq!(embed_text("", 32), embed_text("!!", 32));
    }
}
