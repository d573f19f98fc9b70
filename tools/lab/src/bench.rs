//! `mnemo bench ingest`: messages per second through `POST …/messages` over
//! real HTTP, against a running server (`--url`, `--token`) or, by default,
//! an embedded server started on a temporary data dir in this process.
//! Prints figures; asserts nothing (speed is measured here, not in tests).
//! [`EmbeddedServer`], that server with a token, serves `bench pipeline` too.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::bench_search::Rng;
use anyhow::Context;
use mnemo_auth::{MintRequest, Minter, Scope};
use mnemo_config::{Overrides, Settings};
use mnemo_domain::TenantId;
use secrecy::ExposeSecret;
use serde_json::json;

/// A server started in this process on a temporary data dir, and a token
/// for it: what the benches measure when no `--url` is given. It runs on a
/// thread and a runtime of its own, as `mnemo serve` would in its own
/// process (background work below its request threads, see
/// `mnemo_app::runtime`), so the bench's clients neither wait behind the
/// server's tasks on one runtime nor share its priorities. A bench ends it
/// with [`EmbeddedServer::stop`]; dropped instead, it removes the data dir
/// under the server's tasks, whose next flush then fails on the missing
/// files.
pub struct EmbeddedServer {
    pub url: String,
    /// Tenant `bench`, actor `bench`, valid for a day.
    pub token: String,
    pub settings: Settings,
    server: actix_web::dev::ServerHandle,
    running: tokio::sync::oneshot::Receiver<anyhow::Result<()>>,
    _dir: tempfile::TempDir,
}

impl EmbeddedServer {
    /// Every role on a fresh temporary data dir, settings from `env` (not
    /// the process environment, unless the caller passes it), listening on
    /// a free local port.
    pub async fn start(
        env: &HashMap<String, String>,
        scopes: Vec<Scope>,
    ) -> anyhow::Result<EmbeddedServer> {
        let dir = tempfile::tempdir()?;
        let settings = mnemo_config::load_from(
            &Overrides {
                data_dir: Some(dir.path().to_owned()),
                listen: Some("127.0.0.1:0".into()),
                config_file: None,
            },
            env,
        )?;
        let (started_tx, started) = tokio::sync::oneshot::channel();
        let (running_tx, running) = tokio::sync::oneshot::channel();
        let server_settings = settings.clone();
        // Not joined: its outcome is sent after its runtime is dropped,
        // which waits for every task and blocking thread, so the outcome
        // says all that the thread's end would (a panic drops the sender).
        std::thread::Builder::new()
            .name("embedded-server".into())
            .spawn(move || {
                let outcome = serve_embedded(server_settings, started_tx);
                // Gone only when the bench stopped waiting: nothing to tell.
                let _ = running_tx.send(outcome);
            })?;
        let Ok((port, server)) = started.await else {
            // The thread ended before the server listened: its outcome says why.
            return Err(match running.await {
                Ok(Err(error)) => error,
                _ => anyhow::anyhow!("the embedded server stopped before it listened"),
            });
        };
        let url = format!("http://127.0.0.1:{port}");
        let secret = match &settings.auth.hs256_secret {
            Some(secret) => secret.expose_secret().as_bytes().to_vec(),
            None => mnemo_app::secrets::load_or_create_dev_secret(&settings.dev_secret_file())?.0,
        };
        let token = Minter::hs256(&secret, &settings.auth.issuer, &settings.auth.audience).mint(
            &MintRequest {
                tenant: TenantId::parse("bench")?,
                actor: "bench".into(),
                scopes,
                subject: None,
                ttl: Duration::from_secs(86_400),
            },
        )?;
        Ok(EmbeddedServer {
            url,
            token,
            settings,
            server,
            running,
            _dir: dir,
        })
    }

    /// Stops the server as SIGTERM would and waits until it has stopped its
    /// background parts, flushed the vector index and closed its stores;
    /// then removes the data dir. Says what stopped the server if it was
    /// not this.
    pub async fn stop(self) -> anyhow::Result<()> {
        self.server.stop(true).await;
        self.running
            .await
            .context("the embedded server's thread ended without an outcome")?
            .context("the embedded server")
    }
}

/// The embedded server's thread: builds the server on a runtime of its
/// own, says where it listens, and runs it until it stops.
fn serve_embedded(
    settings: Settings,
    started: tokio::sync::oneshot::Sender<(u16, actix_web::dev::ServerHandle)>,
) -> anyhow::Result<()> {
    let runtime = mnemo_app::runtime::build(settings.background_nice)?;
    runtime.block_on(async {
        let app = mnemo_app::Application::build(settings).await?;
        // Gone only when the bench gave up waiting: it stops the server.
        let _ = started.send((app.port(), app.server_handle()));
        // Awaited here, not spawned: see mnemo_app::runtime.
        app.run().await
    })
}

#[derive(Debug, Clone)]
pub struct IngestBench {
    pub url: Option<String>,
    pub token: Option<String>,
    pub messages: usize,
    pub batch: usize,
    pub concurrency: usize,
    pub subjects: usize,
    /// Part of every message id, so repeated rounds are not idempotent no-ops.
    pub round: usize,
}

pub struct IngestFigures {
    pub messages: usize,
    pub elapsed: Duration,
    pub request_p50: Duration,
    pub request_p99: Duration,
}

impl IngestFigures {
    pub fn messages_per_second(&self) -> f64 {
        self.messages as f64 / self.elapsed.as_secs_f64()
    }
}

pub(crate) fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let index = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[index]
}

/// The machine's cores, as the benches count them.
pub(crate) fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The process's CPU time so far (user + system), from `/proc/self/stat`.
pub(crate) fn process_cpu() -> anyhow::Result<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    // Fields after the command name (which may hold spaces), closed by ')'.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .context("unexpected /proc/self/stat")?
        .1
        .split_whitespace()
        .collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 here.
    let ticks: u64 = fields
        .get(11..13)
        .context("unexpected /proc/self/stat")?
        .iter()
        .map(|field| field.parse::<u64>())
        .sum::<Result<u64, _>>()?;
    // The kernel reports in USER_HZ, 100 on Linux.
    Ok(Duration::from_millis(ticks * 10))
}

/// Realistic chat lines, some with PII so the scrubber does its usual work.
pub(crate) fn message_text(n: usize) -> String {
    const LINES: [&str; 6] = [
        "I moved to Lyon last spring and I love the food markets there",
        "Can you remind me what we decided about the quarterly budget?",
        "My email is jane.doe@example.com if you need to send the report",
        "We decided to ship the beta on Friday after the review",
        "I'm allergic to peanuts, please keep that in mind for recipes",
        "ok thanks, sounds good",
    ];
    format!("{} (#{n})", LINES[n % LINES.len()])
}

/// Words in [`varied_text`]'s vocabulary.
const VOCABULARY: f64 = 5_000.0;
/// The Zipf rank of its most frequent word: natural text's hundred most
/// frequent words are mostly stop words, which BM25 leaves out.
const FIRST_RANK: f64 = 100.0;

/// Every tenth message is one of [`message_text`]'s six sentences (so the
/// rules keep memories: 8.3 per 100 messages measured, against 9.4 on the
/// LoCoMo dev split); the others are 8 to 16 words drawn from a vocabulary
/// of [`VOCABULARY`] made-up words with the frequencies of natural text's
/// content words (Zipf's law: the word of rank `r` about as frequent as
/// `1 / r`, ranks [`FIRST_RANK`] on), then `(#n)`. The same `n` gives the
/// same text. [`message_text`] alone puts each of its words in a sixth of
/// the messages or more, the worst case for the index's BM25 posting lists
/// (see docs/performance.md, "The pipeline under load"), and makes 55
/// memories per 100 messages.
pub(crate) fn varied_text(n: usize) -> String {
    if n.is_multiple_of(10) {
        return message_text(n / 10);
    }
    // A fixed sequence per message: its number spread over the seed's bits
    // (odd, so never the generator's fixed point 0).
    let mut rng = Rng((n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let words = 8 + rng.below(9);
    let mut text = String::new();
    for _ in 0..words {
        let unit = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        // Log-uniform over FIRST_RANK..FIRST_RANK + VOCABULARY.
        let rank = FIRST_RANK * ((VOCABULARY + FIRST_RANK) / FIRST_RANK).powf(unit);
        text.push_str(&made_up_word(rank as u64));
        text.push(' ');
    }
    text.push_str(&format!("(#{n})"));
    text
}

/// The made-up word of `rank` (above 0): its digits in base 16 spelt as
/// syllables of two letters, so distinct ranks give distinct words.
fn made_up_word(mut rank: u64) -> String {
    const SYLLABLES: [&str; 16] = [
        "ka", "lo", "mi", "ru", "te", "sa", "no", "vi", "pe", "du", "ra", "ze", "fo", "li", "ga",
        "bu",
    ];
    let mut word = String::new();
    while rank > 0 {
        word.push_str(SYLLABLES[(rank % 16) as usize]);
        rank /= 16;
    }
    word
}

pub async fn run(bench: IngestBench) -> anyhow::Result<IngestFigures> {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(bench.concurrency)
        .build()?;
    let requests = bench.messages.div_ceil(bench.batch);
    let url = Arc::new(bench.url.clone().context("url")?);
    let token = Arc::new(bench.token.clone().context("token")?);
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..bench.concurrency {
        let (client, url, token, next, bench) = (
            client.clone(),
            url.clone(),
            token.clone(),
            next.clone(),
            bench.clone(),
        );
        workers.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            loop {
                let request = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if request >= requests {
                    return anyhow::Ok(latencies);
                }
                let first = request * bench.batch;
                let messages: Vec<_> = (first..(first + bench.batch).min(bench.messages))
                    .map(|n| json!({"role": if n % 2 == 0 { "user" } else { "assistant" }, "content": message_text(n), "id": format!("bench-{}-{n}", bench.round)}))
                    .collect();
                let subject = format!("bench-subject-{}", request % bench.subjects);
                let sent = Instant::now();
                let response = client
                    .post(format!("{url}/v1/subjects/{subject}/messages"))
                    .bearer_auth(token.as_str())
                    .json(&json!({ "messages": messages }))
                    .send()
                    .await?;
                anyhow::ensure!(response.status() == 202, "unexpected status {}", response.status());
                latencies.push(sent.elapsed());
            }
        }));
    }
    let mut latencies = Vec::new();
    for worker in workers {
        latencies.extend(worker.await??);
    }
    let elapsed = started.elapsed();
    latencies.sort();
    Ok(IngestFigures {
        messages: bench.messages,
        elapsed,
        request_p50: percentile(&latencies, 0.5),
        request_p99: percentile(&latencies, 0.99),
    })
}

/// Runs the benchmark against an embedded server on a temporary data dir
/// unless a URL is given, with one or more batch sizes, and prints a table.
pub async fn ingest(mut bench: IngestBench, batches: &[usize]) -> anyhow::Result<()> {
    let mut embedded = None;
    if bench.url.is_none() {
        let server = EmbeddedServer::start(&HashMap::new(), vec![Scope::MemoriesWrite]).await?;
        bench.url = Some(server.url.clone());
        bench.token = Some(server.token.clone());
        embedded = Some(server);
    }
    println!(
        "ingest benchmark: {} messages, concurrency {}, {} subjects, {}",
        bench.messages,
        bench.concurrency,
        bench.subjects,
        bench.url.as_deref().unwrap_or_default()
    );
    println!("| batch | messages/s | requests/s | request p50 | request p99 | elapsed |");
    println!("|---:|---:|---:|---:|---:|---:|");
    for (round, batch) in batches.iter().enumerate() {
        let figures = run(IngestBench {
            batch: *batch,
            round,
            ..bench.clone()
        })
        .await?;
        println!(
            "| {} | {:.0} | {:.0} | {:.1} ms | {:.1} ms | {:.2} s |",
            batch,
            figures.messages_per_second(),
            figures.messages_per_second() / *batch as f64,
            figures.request_p50.as_secs_f64() * 1000.0,
            figures.request_p99.as_secs_f64() * 1000.0,
            figures.elapsed.as_secs_f64(),
        );
    }
    if let Some(server) = embedded {
        server.stop().await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{HashMap, HashSet};

    /// The share of `count` messages that hold their most common word.
    fn most_common_word_share(text: impl Fn(usize) -> String, count: usize) -> f64 {
        let mut messages_with: HashMap<String, usize> = HashMap::new();
        for n in 0..count {
            let words: HashSet<String> = text(n)
                .split_whitespace()
                .filter(|w| !w.starts_with('('))
                .map(str::to_lowercase)
                .collect();
            for word in words {
                *messages_with.entry(word).or_default() += 1;
            }
        }
        *messages_with.values().max().unwrap() as f64 / count as f64
    }

    #[test]
    fn varied_text_is_fixed_per_message_and_spreads_its_words_as_natural_text_does() {
        assert_eq!(varied_text(7), varied_text(7));
        assert_ne!(varied_text(7), varied_text(8));
        assert_eq!(varied_text(30), message_text(3));
        for n in (0..100).filter(|n: &usize| !n.is_multiple_of(10)) {
            let words = varied_text(n).split_whitespace().count() - 1;
            assert!((8..=16).contains(&words), "{words} words in message {n}");
        }
        // The six sentences put a word in a sixth of the messages or more;
        // the varied text's most common word is in far fewer of them.
        assert!(most_common_word_share(message_text, 6_000) >= 1.0 / 6.0);
        let varied = most_common_word_share(varied_text, 6_000);
        assert!(
            varied < 0.08,
            "most common word in {varied:.3} of the messages"
        );
    }

    #[test]
    fn made_up_words_of_distinct_ranks_differ() {
        let words: HashSet<String> = (16..5_200).map(made_up_word).collect();
        assert_eq!(words.len(), 5_200 - 16);
    }
}
