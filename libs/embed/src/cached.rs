//! [`CachedEmbedder`]: a bounded memo over any [`Embedder`]. A text embedded
//! once is answered from memory until it is evicted (oldest first), so
//! repeated texts cost no model work.
//!
//! The server puts one in front of a model-backed embedder for the
//! consolidator and the projections (`mnemo_app::vectors::pipeline_embedder`):
//! a consolidated memory's text is embedded by the consolidator (to find
//! its neighbours) and again by the memory projection, and its source
//! messages by the episode projection and again for the memory's key. On
//! two cores the model is what bounds how soon a conversation is
//! searchable, so each of those second embeddings was time taken from the
//! next turns. Search embeds its queries without one, so what a query
//! costs stays what it costs. `mnemo bench search` uses one to time search
//! without the model.
//!
//! Key decision: entries are keyed by the SHA-256 of the text, not the
//! text, so the memo holds no subject's words; it lives in memory only and
//! is dropped with the embedder.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use sha2::{Digest, Sha256};

use crate::{EmbedError, Embedder, EmbeddingSpace};

/// What a text is remembered by.
type Key = [u8; 32];

fn key(text: &str) -> Key {
    Sha256::digest(text.as_bytes()).into()
}

pub struct CachedEmbedder {
    inner: Arc<dyn Embedder>,
    capacity: usize,
    entries: Mutex<Entries>,
}

#[derive(Default)]
struct Entries {
    vectors: HashMap<Key, Vec<f32>>,
    /// Insertion order, for eviction.
    order: VecDeque<Key>,
}

impl CachedEmbedder {
    /// Keeps at most `capacity` texts' vectors.
    pub fn new(inner: Arc<dyn Embedder>, capacity: usize) -> Self {
        CachedEmbedder {
            inner,
            capacity: capacity.max(1),
            entries: Mutex::default(),
        }
    }

    fn lookup(&self, keys: &[Key]) -> Vec<Option<Vec<f32>>> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        keys.iter()
            .map(|k| entries.vectors.get(k).cloned())
            .collect()
    }

    fn remember(&self, keys: &[Key], vectors: &[Vec<f32>]) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        for (key, vector) in keys.iter().zip(vectors) {
            if entries.vectors.contains_key(key) {
                continue;
            }
            if entries.vectors.len() == self.capacity {
                if let Some(oldest) = entries.order.pop_front() {
                    entries.vectors.remove(&oldest);
                }
            }
            entries.vectors.insert(*key, vector.clone());
            entries.order.push_back(*key);
        }
    }
}

#[async_trait]
impl Embedder for CachedEmbedder {
    fn space(&self) -> &EmbeddingSpace {
        self.inner.space()
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let keys: Vec<Key> = texts.iter().map(|text| key(text)).collect();
        let mut found = self.lookup(&keys);
        let (missing, missing_keys): (Vec<String>, Vec<Key>) = texts
            .iter()
            .zip(&keys)
            .zip(&found)
            .filter(|(_, hit)| hit.is_none())
            .map(|((text, key), _)| (text.clone(), *key))
            .unzip();
        if !missing.is_empty() {
            // One batch for every miss: the adapters batch better than we could.
            let computed = self.inner.embed(&missing).await?;
            if computed.len() == missing.len() {
                self.remember(&missing_keys, &computed);
            }
            let mut computed = computed.into_iter();
            for slot in found.iter_mut().filter(|slot| slot.is_none()) {
                *slot = computed.next();
            }
        }
        found
            .into_iter()
            .map(|v| {
                v.ok_or_else(|| {
                    EmbedError::Inference("the embedder returned too few vectors".into())
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::LexicalEmbedder;

    /// Counts the texts that reach the real embedder.
    struct Counting {
        inner: LexicalEmbedder,
        texts: AtomicUsize,
    }

    #[async_trait]
    impl Embedder for Counting {
        fn space(&self) -> &EmbeddingSpace {
            self.inner.space()
        }

        async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
            self.texts.fetch_add(texts.len(), Ordering::SeqCst);
            self.inner.embed(texts).await
        }
    }

    fn texts(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[tokio::test]
    async fn repeated_texts_reach_the_model_once_and_get_the_same_vectors() {
        let counting = Arc::new(Counting {
            inner: LexicalEmbedder::new(64),
            texts: AtomicUsize::new(0),
        });
        let cached = CachedEmbedder::new(counting.clone(), 10);
        let first = cached.embed(&texts(&["green tea", "lyon"])).await.unwrap();
        let again = cached
            .embed(&texts(&["lyon", "hiking", "green tea"]))
            .await
            .unwrap();
        assert_eq!(
            counting.texts.load(Ordering::SeqCst),
            3,
            "only 'hiking' was new"
        );
        assert_eq!(again[0], first[1]);
        assert_eq!(again[2], first[0]);
        let direct = counting.inner.embed(&texts(&["hiking"])).await.unwrap();
        assert_eq!(again[1], direct[0]);
    }

    #[tokio::test]
    async fn the_oldest_text_is_evicted_at_capacity() {
        let counting = Arc::new(Counting {
            inner: LexicalEmbedder::new(16),
            texts: AtomicUsize::new(0),
        });
        let cached = CachedEmbedder::new(counting.clone(), 2);
        cached.embed(&texts(&["a", "b", "c"])).await.unwrap();
        cached.embed(&texts(&["b", "c"])).await.unwrap();
        assert_eq!(counting.texts.load(Ordering::SeqCst), 3);
        cached.embed(&texts(&["a"])).await.unwrap();
        assert_eq!(counting.texts.load(Ordering::SeqCst), 4, "'a' was evicted");
    }
}
