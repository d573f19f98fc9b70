//! `mnemo bench embed`: texts per second through the local model, as the
//! episode projection sends them (a LoCoMo conversation's turns, one text
//! each, in calls of [`CALL`] texts), for each way of running the model,
//! and how far the others move the vectors from the first.
//!
//! The model dominates how soon a posted conversation is searchable, so its
//! run options are compared here, in one process on the same texts, rather
//! than through a whole server run.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use mnemo_embed::{LocalEmbedder, LocalOptions};

use crate::eval::parse_conversations;

/// Texts per embedder call: the episode projection's read-ahead.
const CALL: usize = 64;

pub struct EmbedBenchArgs {
    pub model_dir: PathBuf,
    pub model_id: String,
    /// A LoCoMo-format file whose turns are the texts.
    pub file: PathBuf,
    pub texts: usize,
    pub rounds: usize,
}

/// The texts: the turns of the file's conversations, one text each, as the
/// episode projection sends them (an episode's key adds the vector of the
/// turn before; no text is embedded twice).
fn texts(file: &PathBuf, count: usize) -> anyhow::Result<Vec<String>> {
    let raw: serde_json::Value = serde_json::from_slice(
        &std::fs::read(file).with_context(|| format!("reading {}", file.display()))?,
    )?;
    let texts: Vec<String> = parse_conversations(&raw)?
        .into_iter()
        .flat_map(|conversation| conversation.turns)
        .map(|turn| turn.content)
        .take(count)
        .collect();
    anyhow::ensure!(!texts.is_empty(), "{} has no turns", file.display());
    Ok(texts)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    // Both are L2-normalised by the embedder.
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

pub fn embed(args: EmbedBenchArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.rounds > 0 && args.texts > 0, "counts must be positive");
    let texts = texts(&args.file, args.texts)?;
    let cores = crate::bench::cores();
    let default = LocalOptions::default();
    let variants = [
        (
            "exact GELU, 1 worker",
            LocalOptions {
                approximate_gelu: false,
                workers: 1,
            },
        ),
        (
            "tanh GELU, 1 worker",
            LocalOptions {
                approximate_gelu: true,
                workers: 1,
            },
        ),
        (
            "exact GELU, default workers (the default)",
            LocalOptions {
                approximate_gelu: false,
                workers: default.workers,
            },
        ),
        (
            "tanh GELU, default workers",
            LocalOptions {
                approximate_gelu: true,
                workers: default.workers,
            },
        ),
    ];
    println!(
        "embed bench: {} texts ({} calls of up to {CALL}), {} rounds, {cores} cores, \
         default workers {}",
        texts.len(),
        texts.len().div_ceil(CALL),
        args.rounds,
        default.workers
    );
    println!(
        "{:<40} {:>12} {:>10} {:>14}",
        "variant", "texts/s p50", "vs first", "min cosine"
    );
    let mut baseline: Option<(f64, Vec<Vec<f32>>)> = None;
    for (name, options) in variants {
        let embedder = LocalEmbedder::load_with(&args.model_dir, &args.model_id, options)?;
        let mut rates = Vec::with_capacity(args.rounds);
        let mut vectors = Vec::new();
        for _ in 0..args.rounds {
            vectors.clear();
            let started = Instant::now();
            for call in texts.chunks(CALL) {
                vectors.extend(embedder.embed_blocking(call)?);
            }
            rates.push(texts.len() as f64 / started.elapsed().as_secs_f64());
        }
        let rate = median(rates);
        let (ratio, min_cosine) = match &baseline {
            None => (1.0, 1.0),
            Some((first, reference)) => (
                rate / first,
                reference
                    .iter()
                    .zip(&vectors)
                    .map(|(a, b)| cosine(a, b))
                    .fold(f32::INFINITY, f32::min),
            ),
        };
        println!("{name:<40} {rate:>12.1} {ratio:>9.2}x {min_cosine:>14.6}");
        if baseline.is_none() {
            baseline = Some((rate, vectors));
        }
    }
    Ok(())
}
