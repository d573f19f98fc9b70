//! The local sentence-transformer: a BERT-architecture model run on the CPU
//! ([`crate::encoder`]), reproducing what sentence-transformers computes.
//!
//! What sentence-transformers does, and so what this does: strip the text
//! (and lowercase it when `do_lower_case` says so), tokenize with truncation
//! at `max_seq_length` from `sentence_bert_config.json` (not the tokenizer's
//! own setting), run the encoder, pool (mean over real tokens, or CLS), and
//! L2-normalise. Padding is where naive ports go wrong: the shipped
//! `tokenizer.json` pads every input to 128 tokens, and averaging over the
//! pads gives vectors that look alike for unrelated sentences. Here the
//! tokenizer's padding is switched off and nothing is padded: the encoder
//! packs a batch's texts, attends within each, and pooling sees each
//! text's own tokens only.
//!
//! Nothing is specific to one vocabulary: multilingual BERT-architecture
//! models with an XLM-R tokenizer (e.g. intfloat/multilingual-e5-small) load
//! the same way, with their own pad id and special tokens. Models trained
//! with an instruction prefix (E5's `query: `) name it in
//! `config_sentence_transformers.json` (`prompts`, `default_prompt_name`);
//! as in sentence-transformers, the default prompt goes before every text.

use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

use crate::encoder::{Activation, Config as BertConfig, Encoder, Tokens};
use crate::model::check_complete;
use crate::{l2_normalize, EmbedError, Embedder, EmbeddingSpace};

/// sentence-transformers' default when a model does not say.
const DEFAULT_MAX_SEQ_LENGTH: usize = 256;
/// Texts per forward pass. Nothing is padded, so a larger pass costs no
/// extra work and gives the matrix products more rows; its buffers grow
/// with it (at most 32 × 256 tokens × the feed-forward width).
const DEFAULT_BATCH_SIZE: usize = 32;

/// How token vectors become one sentence vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pooling {
    /// Mean over the tokens the attention mask marks as real.
    Mean,
    /// The first ([CLS]) token's vector.
    Cls,
}

/// A sentence-transformers model directory loaded for CPU inference.
pub struct LocalEmbedder {
    inner: Arc<Inner>,
    space: EmbeddingSpace,
    batch_size: usize,
    workers: usize,
}

/// How the model is run; [`Default`] is what the server uses.
#[derive(Debug, Clone, Copy)]
pub struct LocalOptions {
    /// Runs the GELU of models trained with the exact (erf) one as its tanh
    /// approximation. Off by default: the exact one is computed by a
    /// polynomial that vectorises, and is faster than the tanh form
    /// (`mnemo bench embed`, release: 0.62× with the tanh form). The
    /// vectors stay within the reference tests' cosine bound either way.
    pub approximate_gelu: bool,
    /// Forward passes run at once, each over its own share of the texts, on
    /// threads of their own (a pass runs on one core). Defaults to the
    /// machine's cores, at most 4.
    pub workers: usize,
}

impl Default for LocalOptions {
    fn default() -> Self {
        LocalOptions {
            approximate_gelu: false,
            workers: std::thread::available_parallelism()
                .map_or(1, |n| n.get())
                .min(4),
        }
    }
}

struct Inner {
    encoder: Encoder,
    tokenizer: Tokenizer,
    pooling: Pooling,
    lowercase: bool,
    /// Put before every text (the model's default prompt), if any.
    prompt: Option<String>,
    max_seq_length: usize,
}

impl std::fmt::Debug for LocalEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalEmbedder")
            .field("space", &self.space)
            .field("pooling", &self.inner.pooling)
            .field("batch_size", &self.batch_size)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct SentenceBertConfig {
    max_seq_length: Option<usize>,
    #[serde(default)]
    do_lower_case: bool,
}

/// `config_sentence_transformers.json`: the prompts a model was trained
/// with, and which one `encode` uses when none is named.
#[derive(Deserialize)]
struct SentenceTransformersConfig {
    #[serde(default)]
    prompts: std::collections::HashMap<String, String>,
    default_prompt_name: Option<String>,
}

#[derive(Deserialize)]
struct ModuleEntry {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    path: String,
}

#[derive(Deserialize)]
struct PoolingConfig {
    word_embedding_dimension: Option<usize>,
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pooling_mode_max_tokens: bool,
    #[serde(default)]
    pooling_mode_mean_sqrt_len_tokens: bool,
    #[serde(default)]
    pooling_mode_weightedmean_tokens: bool,
    #[serde(default)]
    pooling_mode_lasttoken: bool,
}

impl LocalEmbedder {
    /// Loads `dir`: `config.json`, `tokenizer.json` and `model.safetensors`
    /// (`pytorch_model.bin` is not supported: unpickling is unsafe), plus
    /// the optional sentence-transformers files `sentence_bert_config.json`
    /// (max_seq_length, do_lower_case), `modules.json` and the pooling
    /// config it points to (mean and CLS pooling are supported; other
    /// modes and extra modules such as `Dense` are refused rather than
    /// silently ignored). `model_id` names the
    /// embedding space.
    ///
    /// Vectors are always L2-normalised, as the port promises; for models
    /// whose `modules.json` has a `Normalize` module this is exactly their
    /// output, for others it differs only in length, so cosine similarity is
    /// unchanged.
    pub fn load(dir: &Path, model_id: &str) -> Result<Self, EmbedError> {
        Self::load_with(dir, model_id, LocalOptions::default())
    }

    /// [`Self::load`] with explicit run options (benchmarks compare them).
    pub fn load_with(
        dir: &Path,
        model_id: &str,
        options: LocalOptions,
    ) -> Result<Self, EmbedError> {
        let fail = |reason: String| EmbedError::ModelLoad {
            dir: dir.to_path_buf(),
            reason,
        };
        check_complete(dir).map_err(fail)?;

        let config_json: serde_json::Value =
            read_json(dir, "config.json")?.ok_or_else(|| fail("config.json is missing".into()))?;
        // The encoder numbers positions from 0; RoBERTa-family models
        // (model_type xlm-roberta, roberta) offset them by the pad id and
        // would silently produce wrong vectors, so refuse them by name.
        let model_type = config_json
            .get("model_type")
            .and_then(|v| v.as_str())
            .unwrap_or("bert")
            .to_owned();
        if model_type != "bert" {
            return Err(fail(format!(
                "model_type {model_type:?} is not supported; only BERT-architecture models load"
            )));
        }
        let config: BertConfig = serde_json::from_value(config_json)
            .map_err(|e| fail(format!("config.json is not a BERT config: {e}")))?;
        let activation = match config.hidden_act {
            Activation::Gelu if options.approximate_gelu => Activation::GeluTanh,
            other => other,
        };

        let sbert: Option<SentenceBertConfig> = read_json(dir, "sentence_bert_config.json")?;
        let max_seq_length = sbert
            .as_ref()
            .and_then(|c| c.max_seq_length)
            .unwrap_or(DEFAULT_MAX_SEQ_LENGTH)
            .min(config.max_position_embeddings);
        let lowercase = sbert.as_ref().is_some_and(|c| c.do_lower_case);
        let prompt = read_default_prompt(dir)?;

        let (pooling, model_normalizes) = read_pipeline(dir, config.hidden_size)?;

        let mut tokenizer = Tokenizer::from_file(dir.join("tokenizer.json"))
            .map_err(|e| fail(format!("tokenizer.json: {e}")))?;
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: max_seq_length,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
                direction: TruncationDirection::Right,
            }))
            .map_err(|e| fail(format!("tokenizer truncation: {e}")))?;

        // Read into memory rather than mmap: mmap needs `unsafe` and is
        // undefined behaviour if the file changes underneath; the weights end
        // up in memory either way.
        let weights_path = dir.join("model.safetensors");
        let weights = std::fs::read(&weights_path).map_err(|e| EmbedError::io(&weights_path, e))?;
        let encoder = Encoder::load(&weights, &config, activation, &model_type)
            .map_err(|e| fail(format!("model.safetensors: {e}")))?;

        tracing::info!(
            model = %model_id,
            dimension = config.hidden_size,
            max_seq_length,
            pooling = ?pooling,
            model_normalizes,
            prompt = prompt.as_deref().unwrap_or(""),
            "local embedding model loaded"
        );
        Ok(Self {
            space: EmbeddingSpace::new(model_id, config.hidden_size),
            inner: Arc::new(Inner {
                encoder,
                tokenizer,
                pooling,
                lowercase,
                prompt,
                max_seq_length,
            }),
            batch_size: DEFAULT_BATCH_SIZE,
            workers: options.workers.max(1),
        })
    }

    /// Texts per forward pass (default 16); 1 turns batching off.
    pub fn with_batch_size(mut self, batch_size: usize) -> Self {
        self.batch_size = batch_size.max(1);
        self
    }

    /// Tokens the model sees for `text`, special tokens included: at most
    /// [`Self::max_seq_length`], and equal to it when the text was cut.
    /// Callers can use it to chunk long texts instead of losing their end.
    pub fn token_count(&self, text: &str) -> Result<usize, EmbedError> {
        Ok(self.inner.encode(text)?.get_ids().len())
    }

    /// Where texts are cut: `max_seq_length` from
    /// `sentence_bert_config.json` (default 256), capped by the model's
    /// position embeddings.
    pub fn max_seq_length(&self) -> usize {
        self.inner.max_seq_length
    }

    /// Embeds on the calling thread; [`Embedder::embed`] runs this on the
    /// blocking pool.
    pub fn embed_blocking(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.inner.embed(texts, self.batch_size, self.workers)
    }
}

/// Reads modules.json (when present) and the pooling config it names.
/// Returns the pooling mode and whether a Normalize module is declared.
fn read_pipeline(dir: &Path, hidden_size: usize) -> Result<(Pooling, bool), EmbedError> {
    let fail = |reason: String| EmbedError::ModelLoad {
        dir: dir.to_path_buf(),
        reason,
    };
    let modules: Option<Vec<ModuleEntry>> = read_json(dir, "modules.json")?;
    let mut pooling_path = "1_Pooling".to_string();
    let mut normalize = false;
    if let Some(modules) = &modules {
        for module in modules {
            let kind = module.kind.rsplit('.').next().unwrap_or(&module.kind);
            match kind {
                "Transformer" => {}
                "Pooling" => pooling_path = module.path.clone(),
                "Normalize" => normalize = true,
                other => {
                    return Err(fail(format!(
                        "modules.json lists a {other} module, which is not supported"
                    )))
                }
            }
        }
    }
    let pooling_file = format!("{}/config.json", pooling_path.trim_end_matches('/'));
    let pooling = match read_json::<PoolingConfig>(dir, &pooling_file)? {
        // Loading a plain transformer, sentence-transformers defaults to mean.
        None => Pooling::Mean,
        Some(config) => {
            if let Some(dimension) = config.word_embedding_dimension {
                if dimension != hidden_size {
                    return Err(fail(format!(
                        "pooling dimension {dimension} differs from hidden size {hidden_size}"
                    )));
                }
            }
            let unsupported = config.pooling_mode_max_tokens
                || config.pooling_mode_mean_sqrt_len_tokens
                || config.pooling_mode_weightedmean_tokens
                || config.pooling_mode_lasttoken;
            match (
                config.pooling_mode_mean_tokens,
                config.pooling_mode_cls_token,
                unsupported,
            ) {
                (true, false, false) => Pooling::Mean,
                (false, true, false) => Pooling::Cls,
                _ => {
                    return Err(fail(
                        "pooling must be exactly one of mean or cls; other and combined \
                         modes are not supported"
                            .into(),
                    ))
                }
            }
        }
    };
    Ok((pooling, normalize))
}

/// The default prompt of `config_sentence_transformers.json`, when it names
/// one: sentence-transformers puts it before every text it encodes without
/// an explicit prompt, as mnemo always does (memories and queries alike).
fn read_default_prompt(dir: &Path) -> Result<Option<String>, EmbedError> {
    let Some(config) =
        read_json::<SentenceTransformersConfig>(dir, "config_sentence_transformers.json")?
    else {
        return Ok(None);
    };
    let Some(name) = config.default_prompt_name else {
        return Ok(None);
    };
    match config.prompts.get(&name) {
        Some(prompt) => Ok(Some(prompt.clone()).filter(|p| !p.is_empty())),
        None => Err(EmbedError::ModelLoad {
            dir: dir.to_path_buf(),
            reason: format!(
                "config_sentence_transformers.json: default_prompt_name {name:?} is not among its prompts"
            ),
        }),
    }
}

/// Parses `dir/name` as JSON; `Ok(None)` when the file does not exist.
fn read_json<T: serde::de::DeserializeOwned>(
    dir: &Path,
    name: &str,
) -> Result<Option<T>, EmbedError> {
    let path = dir.join(name);
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(EmbedError::io(path, e)),
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| EmbedError::ModelLoad {
            dir: dir.to_path_buf(),
            reason: format!("{name}: {e}"),
        })
}

fn inference(error: impl std::fmt::Display) -> EmbedError {
    EmbedError::Inference(error.to_string())
}

/// Vectors with the input positions of their texts.
type Placed = Vec<(usize, Vec<f32>)>;

impl Inner {
    /// The model's input for one text, truncated to `max_seq_length`.
    fn encode(&self, text: &str) -> Result<tokenizers::Encoding, EmbedError> {
        // sentence-transformers prepends the prompt, then strips before
        // tokenizing; for sentencepiece tokenizers a leading space changes
        // the tokens.
        let prompted;
        let text = match &self.prompt {
            Some(prompt) => {
                prompted = format!("{prompt}{text}");
                prompted.trim()
            }
            None => text.trim(),
        };
        let text = if self.lowercase {
            std::borrow::Cow::Owned(text.to_lowercase())
        } else {
            std::borrow::Cow::Borrowed(text)
        };
        self.tokenizer
            .encode(text.as_ref(), true)
            .map_err(|e| inference(format!("tokenization failed: {e}")))
    }

    fn embed(
        &self,
        texts: &[String],
        batch_size: usize,
        workers: usize,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let encodings = texts
            .iter()
            .map(|text| self.encode(text))
            .collect::<Result<Vec<_>, _>>()?;

        // Worker w takes texts w, w + workers, ... in order of length, so
        // each gets a like share of the tokens (the work) whatever the mix,
        // and runs them in passes of `batch_size`; results go back to their
        // input positions.
        let mut order: Vec<usize> = (0..encodings.len()).collect();
        order.sort_by_key(|&i| encodings[i].get_ids().len());
        let cores = workers.max(1);
        let workers = cores.min(order.len()).max(1);
        // Fewer texts than workers (a query): the cores left over share
        // each pass's matrix products instead.
        let threads = cores / workers;
        let run = |worker: usize| -> Result<Placed, EmbedError> {
            let mine: Vec<usize> = order
                .iter()
                .copied()
                .skip(worker)
                .step_by(workers)
                .collect();
            let mut done = Vec::new();
            for chunk in mine.chunks(batch_size) {
                let batch: Vec<&tokenizers::Encoding> =
                    chunk.iter().map(|&i| &encodings[i]).collect();
                done.extend(chunk.iter().copied().zip(self.forward(&batch, threads)?));
            }
            Ok(done)
        };
        let results: Vec<Result<Placed, EmbedError>> = if workers == 1 {
            vec![run(0)]
        } else {
            std::thread::scope(|scope| {
                let handles: Vec<_> = (1..workers)
                    .map(|worker| scope.spawn(move || run(worker)))
                    .collect();
                let mut results = vec![run(0)];
                for handle in handles {
                    results.push(
                        handle
                            .join()
                            .unwrap_or_else(|_| Err(inference("an embedding worker panicked"))),
                    );
                }
                results
            })
        };
        let mut vectors: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
        for result in results {
            for (index, vector) in result? {
                vectors[index] = vector;
            }
        }
        Ok(vectors)
    }

    /// One forward pass over a batch of texts, packed (nothing is padded).
    fn forward(
        &self,
        batch: &[&tokenizers::Encoding],
        threads: usize,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let texts: Vec<Tokens<'_>> = batch
            .iter()
            .map(|encoding| Tokens {
                ids: encoding.get_ids(),
                type_ids: encoding.get_type_ids(),
            })
            .collect();
        let (hidden, starts) = self.encoder.forward(&texts, threads).map_err(inference)?;
        let size = self.encoder.hidden_size();
        let mut vectors = Vec::with_capacity(batch.len());
        for bounds in starts.windows(2) {
            let rows = &hidden[bounds[0] * size..bounds[1] * size];
            if rows.is_empty() {
                return Err(inference("a text has no tokens"));
            }
            let mut vector = match self.pooling {
                Pooling::Mean => {
                    let mut sum = vec![0f32; size];
                    for row in rows.chunks_exact(size) {
                        sum.iter_mut().zip(row).for_each(|(s, v)| *s += v);
                    }
                    // Every text has at least its special tokens, so the
                    // count is never zero.
                    let count = (bounds[1] - bounds[0]) as f32;
                    sum.iter_mut().for_each(|s| *s /= count);
                    sum
                }
                Pooling::Cls => rows[..size].to_vec(),
            };
            if !l2_normalize(&mut vector) {
                return Err(inference("model produced a zero or non-finite vector"));
            }
            vectors.push(vector);
        }
        Ok(vectors)
    }
}

#[async_trait::async_trait]
impl Embedder for LocalEmbedder {
    fn space(&self) -> &EmbeddingSpace {
        &self.space
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let inner = Arc::clone(&self.inner);
        let (batch_size, workers) = (self.batch_size, self.workers);
        let texts = texts.to_vec();
        tokio::task::spawn_blocking(move || inner.embed(&texts, batch_size, workers))
            .await
            .map_err(|e| EmbedError::Task(e.to_string()))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir_with(config: Option<&str>) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        if let Some(config) = config {
            std::fs::write(dir.path().join("config_sentence_transformers.json"), config).unwrap();
        }
        dir
    }

    #[test]
    fn the_default_prompt_is_read_when_one_is_named() {
        let e5 = dir_with(Some(
            r#"{"prompts": {"query": "query: ", "passage": "passage: "}, "default_prompt_name": "query"}"#,
        ));
        assert_eq!(
            read_default_prompt(e5.path()).unwrap().as_deref(),
            Some("query: ")
        );
        // all-MiniLM-L6-v2's file names no prompt; older models have none.
        let minilm = dir_with(Some(
            r#"{"__version__": {"sentence_transformers": "2.0.0"}}"#,
        ));
        assert_eq!(read_default_prompt(minilm.path()).unwrap(), None);
        let unnamed = dir_with(Some(
            r#"{"prompts": {"query": "query: "}, "default_prompt_name": null}"#,
        ));
        assert_eq!(read_default_prompt(unnamed.path()).unwrap(), None);
        assert_eq!(read_default_prompt(dir_with(None).path()).unwrap(), None);
    }

    #[test]
    fn a_default_prompt_that_is_not_defined_is_refused() {
        let broken = dir_with(Some(r#"{"prompts": {}, "default_prompt_name": "query"}"#));
        assert!(read_default_prompt(broken.path()).is_err());
    }
}
