//! `mnemo bench pipeline`: a load test of the whole pipeline that can be
//! rerun. Writer clients post conversations through
//! `POST /v1/subjects/{s}/messages` for a bounded time while search clients
//! query and a probe measures how long a posted message takes to be found;
//! `/readyz` is sampled every second for the backlog (relay lag, each
//! consumer group's lag, the consolidation buffer) and the process's RSS is
//! read beside it. After the load the run waits, bounded, until the backlog
//! is zero. Against a running server (`--url`, `--token`) or, by default, an
//! embedded one on a temporary data dir in this process.
//!
//! Prints figures; asserts nothing (speed is measured here, not in tests).
//!
//! Definitions, as printed:
//! - accepted msg/s: messages acknowledged (2xx) over the load's seconds;
//! - consumed at t: accepted − the consolidator group's lag (what the
//!   consolidator took off the bus); consolidated at t: consumed − the
//!   consolidation buffer (`backlog.consolidation.messages` of `/readyz`:
//!   what has left the buffer). Both are relative to the backlog before the
//!   load, so what was already waiting does not count;
//! - backlog zero: relay lag 0, every consumer group's lag 0, and the
//!   consolidation buffer empty.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use chrono::{DateTime, Utc};
use mnemo_auth::Scope;
use serde_json::{json, Value};

use crate::bench::{message_text, percentile, EmbeddedServer};

/// Messages of one session before the writer starts the next: not a
/// multiple of the default batch, so sessions end mid-batch as real ones
/// do, and their last messages wait for the consolidator's idle timeout.
const SESSION_MESSAGES: usize = 24;
/// No request waits longer: a stuck server shows as timeouts, not a hang.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest a client waits after a 429 or 503, whatever Retry-After says.
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// How long probes still unanswered after the drain keep looking.
const PROBE_GRACE: Duration = Duration::from_secs(10);
/// The most rows of the time series printed; the samples are thinned evenly.
const TABLE_ROWS: usize = 30;
/// Queries of the search clients: what a user of the chats would ask.
const QUERIES: [&str; 8] = [
    "where did I move last year",
    "what did we decide about the quarterly budget",
    "which food allergies should recipes avoid",
    "when does the beta ship",
    "what is my email address",
    "what do I like about the food markets",
    "what happened after the review",
    "remind me of the report",
];
/// The environment variables the embedded server ignores: shared stores
/// (and a config file that could name them), so a bench on a temporary
/// data dir never writes into a deployment's database, bus or index.
const SHARED_STORE_VARIABLES: [&str; 4] = [
    "MNEMO_DATABASE_",
    "MNEMO_KAFKA_",
    "MNEMO_QDRANT_",
    "MNEMO_CONFIG",
];

#[derive(Debug, Clone)]
pub struct PipelineBench {
    /// A running server; None: an embedded one on a temporary data dir.
    pub url: Option<String>,
    /// A token with memories:write and memories:read, for `url`.
    pub token: Option<String>,
    /// With `url`: the server's process id, whose RSS is read from /proc.
    pub pid: Option<u32>,
    pub clients: usize,
    pub seconds: u64,
    /// Messages per request at most (a session's last request may be shorter).
    pub batch: usize,
    /// Subjects per writer client.
    pub subjects: usize,
    pub search_concurrency: usize,
    /// Memories posted to one subject before the load, which the search
    /// clients query every other time.
    pub memories: usize,
    pub drain_timeout: Duration,
}

/// What `/readyz` says of the backlog at one moment. None: not reported.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Backlog {
    pub relay_lag: Option<u64>,
    /// Per consumer group; None for a group whose lag the bus cannot tell.
    pub consumer_lag: BTreeMap<String, Option<u64>>,
    /// `backlog.consolidation.messages`: messages buffered for consolidation.
    pub buffered: Option<u64>,
    pub degraded: Vec<String>,
}

impl Backlog {
    pub fn parse(ready: &Value) -> Backlog {
        Backlog {
            relay_lag: ready["relay_lag"].as_u64(),
            consumer_lag: ready["consumer_lag"]
                .as_object()
                .map(|groups| {
                    groups
                        .iter()
                        .map(|(group, lag)| (group.clone(), lag.as_u64()))
                        .collect()
                })
                .unwrap_or_default(),
            buffered: ready["backlog"]["consolidation"]["messages"].as_u64(),
            degraded: ready["degraded"]
                .as_array()
                .map(|reasons| {
                    reasons
                        .iter()
                        .map(|reason| match reason.as_str() {
                            Some(text) => text.to_owned(),
                            None => reason.to_string(),
                        })
                        .collect()
                })
                .unwrap_or_default(),
        }
    }

    fn lag(&self, group: &str) -> Option<u64> {
        self.consumer_lag.get(group).copied().flatten()
    }

    /// Messages posted but not consolidated yet: on the bus for the
    /// consolidator, or in its buffer. None when either is unknown.
    pub fn pending_consolidation(&self) -> Option<u64> {
        Some(self.lag(CONSOLIDATOR)? + self.buffered?)
    }

    /// Whether the relay and every consumer group reported are at zero
    /// (the buffer aside).
    fn lags_are_zero(&self) -> bool {
        self.relay_lag == Some(0)
            && !self.consumer_lag.is_empty()
            && self.consumer_lag.values().all(|lag| *lag == Some(0))
    }

    /// Whether nothing is left to do: Some(true) only when every figure is
    /// known and zero; None when the zeros that are known leave an unknown.
    pub fn is_zero(&self) -> Option<bool> {
        let known = [self.relay_lag, self.buffered]
            .into_iter()
            .chain(self.consumer_lag.values().copied());
        let mut unknown = self.consumer_lag.is_empty();
        for figure in known {
            match figure {
                Some(0) => {}
                Some(_) => return Some(false),
                None => unknown = true,
            }
        }
        if unknown {
            None
        } else {
            Some(true)
        }
    }
}

const CONSOLIDATOR: &str = "consolidator";
const MEMORY_PROJECTION: &str = "retriever.memory-projection";
const EPISODE_PROJECTION: &str = "retriever.episode-projection";

/// One sample of the time series.
#[derive(Debug, Clone)]
pub struct Sample {
    /// Seconds since the load started (negative: before it).
    pub t: f64,
    /// Messages acknowledged so far (writers and probe).
    pub accepted: u64,
    pub backlog: Backlog,
    pub rss_bytes: Option<u64>,
}

/// The backlog before the load, which the run's figures leave out.
#[derive(Debug, Clone, Copy, Default)]
pub struct Baseline {
    pub consolidator_lag: u64,
    pub buffered: u64,
}

impl Baseline {
    fn of(backlog: &Backlog) -> Baseline {
        Baseline {
            consolidator_lag: backlog.lag(CONSOLIDATOR).unwrap_or(0),
            buffered: backlog.buffered.unwrap_or(0),
        }
    }
}

/// Of the messages accepted, how many the consolidator took off the bus.
pub fn consumed(sample: &Sample, baseline: Baseline) -> Option<u64> {
    let lag = sample.backlog.lag(CONSOLIDATOR)?;
    Some(
        sample
            .accepted
            .saturating_sub(lag.saturating_sub(baseline.consolidator_lag)),
    )
}

/// Of the messages accepted, how many have left the consolidation buffer
/// (consolidated, or dropped by it): accepted − (lag + buffer) beyond the
/// baseline's. None while the server reports no buffer.
pub fn consolidated(sample: &Sample, baseline: Baseline) -> Option<u64> {
    let pending = sample.backlog.pending_consolidation()?;
    let before = baseline.consolidator_lag + baseline.buffered;
    Some(
        sample
            .accepted
            .saturating_sub(pending.saturating_sub(before)),
    )
}

/// Consolidated messages per second between two samples.
pub fn consolidated_rate(from: &Sample, to: &Sample, baseline: Baseline) -> Option<f64> {
    let seconds = to.t - from.t;
    if seconds <= 0.0 {
        return None;
    }
    let (start, end) = (consolidated(from, baseline)?, consolidated(to, baseline)?);
    Some(end.saturating_sub(start) as f64 / seconds)
}

/// The rates of the load's second half, from the first sample at or past
/// its middle to the load's last: (accepted msg/s, consolidated msg/s).
/// What a run sustains once the backlog has found its level; the whole
/// load's figures include the first seconds, when nothing waits yet.
pub fn second_half(
    samples: &[Sample],
    load_last: usize,
    baseline: Baseline,
) -> Option<(f64, Option<f64>)> {
    let end = samples.get(load_last)?;
    let middle = samples[..load_last]
        .iter()
        .find(|sample| sample.t >= end.t / 2.0)?;
    let seconds = end.t - middle.t;
    (seconds > 0.0).then(|| {
        (
            end.accepted.saturating_sub(middle.accepted) as f64 / seconds,
            consolidated_rate(middle, end, baseline),
        )
    })
}

/// Which samples the table prints: at most about `rows`, evenly spaced,
/// always the first, the last of the load (`load_last`) and the last.
pub fn table_rows(samples: usize, load_last: Option<usize>, rows: usize) -> Vec<usize> {
    if samples == 0 {
        return Vec::new();
    }
    let step = samples.div_ceil(rows.max(1)).max(1);
    let mut picked: BTreeSet<usize> = (0..samples).step_by(step).collect();
    picked.extend(load_last.filter(|last| *last < samples));
    picked.insert(samples - 1);
    picked.into_iter().collect()
}

/// VmRSS of a /proc/<pid>/status text, in bytes.
pub fn parse_vm_rss(status: &str) -> Option<u64> {
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    let mut words = line["VmRSS:".len()..].split_whitespace();
    let value: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => Some(value * 1024),
        _ => None,
    }
}

/// Where the server's RSS is read: this process (embedded), another one
/// (`--pid`), or nowhere.
#[derive(Debug, Clone, Copy)]
enum RssSource {
    ThisProcess,
    Process(u32),
    Unknown,
}

impl RssSource {
    fn read(self) -> Option<u64> {
        let path = match self {
            RssSource::ThisProcess => "/proc/self/status".to_owned(),
            RssSource::Process(pid) => format!("/proc/{pid}/status"),
            RssSource::Unknown => return None,
        };
        parse_vm_rss(&std::fs::read_to_string(path).ok()?)
    }
}

/// A random word of lowercase letters, `zq` first: nothing else in the
/// data has it, so a keyword search for it finds the probe's message only.
fn nonce() -> String {
    let mut bits = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    let mut word = String::from("zq");
    for _ in 0..10 {
        word.push((b'a' + (bits % 26) as u8) as char);
        bits /= 26;
    }
    word
}

/// How long a client waits after a 429 or 503: the server's Retry-After,
/// at least 100 ms and at most [`MAX_BACKOFF`], so the load stays bounded.
pub fn backoff(retry_after: Option<Duration>) -> Duration {
    retry_after
        .unwrap_or_default()
        .clamp(Duration::from_millis(100), MAX_BACKOFF)
}

/// What every task of the run shares.
struct Shared {
    client: reqwest::Client,
    url: String,
    token: String,
    /// Names this run's subjects and message ids, so runs never collide.
    run: String,
    /// Messages acknowledged, writers' and probe's.
    accepted: AtomicU64,
    /// Failures per `operation status` (status: HTTP code, `timeout` or
    /// `transport`).
    errors: Mutex<BTreeMap<String, u64>>,
}

impl Shared {
    fn error(&self, operation: &str, what: &str) {
        let mut errors = self
            .errors
            .lock()
            .expect("the error tally is never poisoned");
        *errors.entry(format!("{operation} {what}")).or_default() += 1;
    }

    /// POSTs `body`; Some(the answer's JSON) on 2xx, None (counted) otherwise.
    async fn post(&self, operation: &str, path: &str, body: &Value) -> Option<Value> {
        let sent = self
            .client
            .post(format!("{}{path}", self.url))
            .bearer_auth(&self.token)
            .json(body)
            .send()
            .await;
        let response = match sent {
            Ok(response) => response,
            Err(error) => {
                self.error(operation, transport_failure(&error));
                return None;
            }
        };
        let status = response.status();
        if !status.is_success() {
            self.error(operation, status.as_str());
            if status == reqwest::StatusCode::TOO_MANY_REQUESTS
                || status == reqwest::StatusCode::SERVICE_UNAVAILABLE
            {
                // Backpressure: wait as asked (bounded), never a tight loop.
                let asked = response
                    .headers()
                    .get(reqwest::header::RETRY_AFTER)
                    .and_then(|value| value.to_str().ok())
                    .and_then(|value| value.trim().parse::<u64>().ok())
                    .map(Duration::from_secs);
                tokio::time::sleep(backoff(asked)).await;
            }
            return None;
        }
        match response.json::<Value>().await {
            Ok(value) => Some(value),
            Err(_) => {
                self.error(operation, "unreadable-body");
                None
            }
        }
    }

    async fn backlog(&self) -> Option<(Backlog, Value)> {
        let response = match self.client.get(format!("{}/readyz", self.url)).send().await {
            Ok(response) => response,
            Err(error) => {
                self.error("readyz", transport_failure(&error));
                return None;
            }
        };
        let status = response.status();
        // A degraded server may answer with an error status and still
        // report its backlog: the figures are what the run wants.
        let ready: Option<Value> = response.json().await.ok();
        match ready {
            Some(ready) if ready.get("relay_lag").is_some() => {
                Some((Backlog::parse(&ready), ready))
            }
            _ => {
                self.error("readyz", status.as_str());
                None
            }
        }
    }
}

/// One writer's conversation with one subject: sessions of
/// [`SESSION_MESSAGES`] messages, user and assistant taking turns, a
/// minute apart, each session an hour after the one before.
struct Conversation {
    subject: String,
    session: usize,
    in_session: usize,
    sent: usize,
    started: DateTime<Utc>,
}

impl Conversation {
    /// The next request's messages: up to `batch`, never across a session.
    fn next_batch(&mut self, batch: usize, client: usize) -> Vec<Value> {
        let count = batch.min(SESSION_MESSAGES - self.in_session);
        let messages = (0..count)
            .map(|i| {
                let turn = self.in_session + i;
                let n = self.sent + i;
                let at = self.started
                    + chrono::Duration::hours(self.session as i64)
                    + chrono::Duration::minutes(turn as i64);
                json!({
                    "role": if turn.is_multiple_of(2) { "user" } else { "assistant" },
                    // Offset per client, so writers do not say the same lines in step.
                    "content": message_text(n + client),
                    "id": format!("{}-{n}", self.subject),
                    "session": format!("s{}", self.session),
                    "timestamp": at.to_rfc3339(),
                })
            })
            .collect();
        self.sent += count;
        self.in_session += count;
        if self.in_session == SESSION_MESSAGES {
            self.session += 1;
            self.in_session = 0;
        }
        messages
    }
}

/// How a request that got no response failed, as the errors table names it.
fn transport_failure(error: &reqwest::Error) -> &'static str {
    if error.is_timeout() {
        "timeout"
    } else {
        "transport"
    }
}

async fn writer(shared: Arc<Shared>, client: usize, subjects: usize, batch: usize, until: Instant) {
    // Old enough that an hour of load at any rate stays in the past.
    let started = Utc::now() - chrono::Duration::days(400);
    let mut conversations: Vec<Conversation> = (0..subjects)
        .map(|s| Conversation {
            subject: format!("bench-{}-c{client}-s{s}", shared.run),
            session: 0,
            in_session: 0,
            sent: 0,
            started,
        })
        .collect();
    let mut next = 0;
    while Instant::now() < until {
        let conversation = &mut conversations[next % subjects];
        next += 1;
        let messages = conversation.next_batch(batch, client);
        let count = messages.len() as u64;
        let path = format!("/v1/subjects/{}/messages", conversation.subject);
        if shared
            .post("messages", &path, &json!({ "messages": messages }))
            .await
            .is_some()
        {
            shared.accepted.fetch_add(count, Ordering::Relaxed);
        }
    }
    // The conversations end with the load: their clients ask for what is
    // left to be consolidated now, as a client does at a conversation's
    // end, so the drain measures the pipeline, not the idle timeout.
    for conversation in &conversations {
        let path = format!("/v1/subjects/{}/consolidate", conversation.subject);
        shared.post("consolidate", &path, &json!({})).await;
    }
}

/// Search latencies of successful searches, by target.
#[derive(Default)]
struct SearchTimes {
    memories: Vec<Duration>,
    writers: Vec<Duration>,
}

/// Searches until `until`: every other query to the subject holding the
/// preloaded memories when there is one, the others to a writer's subject.
async fn searcher(
    shared: Arc<Shared>,
    worker: usize,
    writer_subjects: Vec<String>,
    memory_subject: Option<String>,
    until: Instant,
) -> SearchTimes {
    let mut times = SearchTimes::default();
    let mut n = worker;
    while Instant::now() < until {
        n += 1;
        let to_memories = memory_subject.is_some() && n.is_multiple_of(2);
        let subject = match (&memory_subject, to_memories) {
            (Some(subject), true) => subject,
            _ => &writer_subjects[(n / 2) % writer_subjects.len()],
        };
        let query = QUERIES[n % QUERIES.len()];
        let sent = Instant::now();
        let found = shared
            .post(
                "search",
                &format!("/v1/subjects/{subject}/search"),
                &json!({ "query": query, "k": 10 }),
            )
            .await;
        if found.is_some() {
            let took = sent.elapsed();
            if to_memories {
                times.memories.push(took);
            } else {
                times.writers.push(took);
            }
        }
    }
    times
}

/// What became of one probe.
#[derive(Debug, Clone, Copy)]
enum Probe {
    /// Its post failed (counted with the errors).
    NotPosted,
    /// Found by search this long after its post was sent.
    Found(Duration),
    /// Not found before the run gave up on it.
    NotFound,
}

/// Posts one message with a fresh nonce to the probe subject and polls a
/// keyword search of episodes for it until it is found or `give_up`
/// passes. A keyword search does not embed the query, so the probe adds little
/// load; the episode is written with both its vectors at once, so found by
/// keyword is searchable.
async fn probe(shared: Arc<Shared>, n: usize, give_up: Instant) -> Probe {
    let word = nonce();
    let subject = format!("bench-{}-probe", shared.run);
    let message = json!({"messages": [{
        "role": "user",
        "content": format!("Note for later: the locker code word is {word}"),
        "id": format!("{}-probe-{n}", shared.run),
        "session": "probe",
    }]});
    let sent = Instant::now();
    let posted = shared
        .post(
            "probe-post",
            &format!("/v1/subjects/{subject}/messages"),
            &message,
        )
        .await;
    if posted.is_none() {
        return Probe::NotPosted;
    }
    shared.accepted.fetch_add(1, Ordering::Relaxed);
    let search = json!({"query": word, "mode": "keyword", "include": ["episodes"], "k": 5});
    let path = format!("/v1/subjects/{subject}/search");
    // 100 ms, growing by half up to a second: fine-grained while the lag is
    // short, without a poll storm while it is long.
    let mut pause = Duration::from_millis(100);
    loop {
        if let Some(found) = shared.post("probe-search", &path, &search).await {
            let hit = found["results"].as_array().is_some_and(|results| {
                results.iter().any(|result| {
                    result["episode"]["content"]
                        .as_str()
                        .is_some_and(|content| content.contains(&word))
                })
            });
            if hit {
                return Probe::Found(sent.elapsed());
            }
        }
        if Instant::now() + pause > give_up {
            return Probe::NotFound;
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 3 / 2).min(Duration::from_secs(1));
    }
}

/// Varied memories for the preload: templates over names, places and
/// things, numbered so no two are the same text.
fn memory_text(n: usize) -> (String, &'static str) {
    const PEOPLE: [&str; 6] = ["Alice", "Bruno", "Chen", "Dalia", "Emeka", "Farah"];
    const PLACES: [&str; 6] = ["Lyon", "Osaka", "Lisbon", "Toronto", "Nairobi", "Oslo"];
    const THINGS: [&str; 6] = [
        "green tea",
        "trail running",
        "jazz records",
        "sourdough baking",
        "chess openings",
        "vintage cameras",
    ];
    let (person, place, thing) = (
        PEOPLE[n % PEOPLE.len()],
        PLACES[(n / 6) % PLACES.len()],
        THINGS[(n / 36) % THINGS.len()],
    );
    match n % 3 {
        0 => (
            format!("{person} lives in {place} and collects {thing} (note {n})"),
            "fact",
        ),
        1 => (
            format!(
                "{person} prefers {thing} over anything else on weekends in {place} (note {n})"
            ),
            "preference",
        ),
        _ => (
            format!("{person} decided to visit {place} next spring for {thing} (note {n})"),
            "decision",
        ),
    }
}

async fn preload_memories(
    shared: &Arc<Shared>,
    subject: &str,
    memories: usize,
    concurrency: usize,
) {
    let next = Arc::new(AtomicU64::new(0));
    let mut workers = Vec::new();
    for _ in 0..concurrency {
        let (shared, next, path) = (
            shared.clone(),
            next.clone(),
            format!("/v1/subjects/{subject}/memories"),
        );
        workers.push(tokio::spawn(async move {
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed) as usize;
                if n >= memories {
                    return;
                }
                let (content, kind) = memory_text(n);
                shared
                    .post("preload", &path, &json!({"content": content, "kind": kind}))
                    .await;
            }
        }));
    }
    for worker in workers {
        let _ = worker.await;
    }
}

/// Samples `/readyz` until `done` says so or `timeout` passes; Some(the
/// time it took) when `done` was reached.
async fn wait_for(
    shared: &Shared,
    timeout: Duration,
    mut done: impl FnMut(&Backlog) -> bool,
) -> Option<Duration> {
    let started = Instant::now();
    loop {
        if let Some((backlog, _)) = shared.backlog().await {
            if done(&backlog) {
                return Some(started.elapsed());
            }
        }
        if started.elapsed() >= timeout {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

fn mib(bytes: Option<u64>) -> String {
    match bytes {
        Some(bytes) => format!("{:.0} MiB", bytes as f64 / (1024.0 * 1024.0)),
        None => "n/a".into(),
    }
}

fn figure(value: Option<u64>) -> String {
    value.map_or_else(|| "?".into(), |value| value.to_string())
}

fn millis(duration: Duration) -> String {
    format!("{:.1} ms", duration.as_secs_f64() * 1000.0)
}

fn latency_line(label: &str, times: &mut [Duration]) -> String {
    if times.is_empty() {
        return format!("{label}: no successful search");
    }
    times.sort();
    format!(
        "{label}: p50 {}, p99 {} over {} searches",
        millis(percentile(times, 0.5)),
        millis(percentile(times, 0.99)),
        times.len(),
    )
}

/// The embedded server's environment: this process's, without the shared
/// stores (see [`SHARED_STORE_VARIABLES`]).
fn embedded_env() -> HashMap<String, String> {
    std::env::vars()
        .filter(|(name, _)| {
            !SHARED_STORE_VARIABLES
                .iter()
                .any(|prefix| name.starts_with(prefix))
        })
        .collect()
}

/// Where the run sends its requests, and what it knows of the server.
struct Target {
    shared: Arc<Shared>,
    rss: RssSource,
    /// Lines for the header: the embedder, the consolidation policy.
    described: Vec<String>,
    /// The embedded server, stopped when the run ends.
    server: Option<EmbeddedServer>,
}

impl Target {
    async fn connect(bench: &PipelineBench) -> anyhow::Result<Target> {
        let (url, token, rss, server, mut described) = match &bench.url {
            None => {
                let server = EmbeddedServer::start(
                    &embedded_env(),
                    vec![Scope::MemoriesWrite, Scope::MemoriesRead],
                )
                .await?;
                let settings = &server.settings;
                anyhow::ensure!(
                    settings.database.is_none()
                        && settings.kafka.is_none()
                        && settings.qdrant.is_none(),
                    "the embedded server must keep its stores in its temporary data dir"
                );
                let policy = settings.consolidation.for_tenant("bench");
                let described =
                    vec![format!(
                    "consolidation: {}; a conversation is consolidated at {} messages or after \
                     {} s quiet (a session's last partial batch waits for that)",
                    if settings.llm.is_some() { "LLM" } else { "rules" },
                    policy.batch_size,
                    policy.idle_timeout.as_secs_f64()
                )];
                let (url, token) = (server.url.clone(), server.token.clone());
                (url, token, RssSource::ThisProcess, Some(server), described)
            }
            Some(url) => (
                url.trim_end_matches('/').to_owned(),
                bench.token.clone().context("--url needs --token")?,
                bench.pid.map_or(RssSource::Unknown, RssSource::Process),
                None,
                Vec::new(),
            ),
        };
        let shared = Arc::new(Shared {
            client: reqwest::Client::builder()
                .timeout(REQUEST_TIMEOUT)
                .pool_max_idle_per_host(bench.clients + bench.search_concurrency + 8)
                .build()?,
            url,
            token,
            run: format!("{:x}", Utc::now().timestamp_millis()),
            accepted: AtomicU64::new(0),
            errors: Mutex::new(BTreeMap::new()),
        });
        // The server answers, and says what it embeds with.
        let started = Instant::now();
        let ready = loop {
            if let Some((_, ready)) = shared.backlog().await {
                break ready;
            }
            anyhow::ensure!(
                started.elapsed() < Duration::from_secs(60),
                "{}/readyz does not answer",
                shared.url
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        };
        // Failed tries while the server came up are not the run's errors.
        shared
            .errors
            .lock()
            .expect("the error tally is never poisoned")
            .clear();
        let embedder = &ready["embedder"];
        if embedder.is_object() {
            described.insert(
                0,
                format!(
                    "embedder: {} {}{}",
                    embedder["kind"].as_str().unwrap_or("?"),
                    embedder["model"].as_str().unwrap_or("?"),
                    if embedder["fallback"].as_bool() == Some(true) {
                        " (auto fell back to lexical)"
                    } else {
                        ""
                    }
                ),
            );
        }
        Ok(Target {
            shared,
            rss,
            described,
            server,
        })
    }
}

/// Takes the samples of the time series.
#[derive(Clone)]
struct Recorder {
    shared: Arc<Shared>,
    rss: RssSource,
    load_started: Instant,
}

impl Recorder {
    /// `accepted` is read before `/readyz`, so what is posted while the
    /// backlog is read counts in the lags but not yet in `accepted`: while
    /// writers run, consumed and consolidated err low, not high.
    async fn sample(&self) -> Sample {
        let accepted = self.shared.accepted.load(Ordering::Relaxed);
        let backlog = self
            .shared
            .backlog()
            .await
            .map(|(backlog, _)| backlog)
            .unwrap_or_default();
        Sample {
            t: self.load_started.elapsed().as_secs_f64(),
            accepted,
            backlog,
            rss_bytes: self.rss.read(),
        }
    }
}

/// What the load and the drain recorded.
struct Run {
    load_started: Instant,
    samples: Vec<Sample>,
    /// The sample taken when the last writer stopped.
    load_last: usize,
    load_seconds: f64,
    /// The backlog just before the load.
    before: Backlog,
    rss_start: Option<u64>,
    rss_middle: Option<u64>,
    searches: SearchTimes,
    probes: Vec<tokio::task::JoinHandle<Probe>>,
    /// Some(how long after the load's end) when the backlog was zero.
    drained: Option<Duration>,
    /// Drained as far as the server can say: it reports no buffer.
    buffer_unknown: bool,
}

impl Run {
    fn load_end(&self) -> &Sample {
        &self.samples[self.load_last]
    }

    fn last(&self) -> &Sample {
        &self.samples[self.samples.len() - 1]
    }

    fn baseline(&self) -> Baseline {
        Baseline::of(&self.before)
    }
}

pub async fn pipeline(bench: PipelineBench) -> anyhow::Result<()> {
    anyhow::ensure!(
        bench.clients > 0 && bench.subjects > 0 && bench.batch > 0 && bench.seconds > 0,
        "clients, subjects, batch and seconds must be positive"
    );
    let target = Target::connect(&bench).await?;
    let shared = &target.shared;
    println!(
        "pipeline benchmark: {} writer clients × {} subjects, batch {}, {} s, {} search clients, \
         {} preloaded memories, {} server at {}, run {}",
        bench.clients,
        bench.subjects,
        bench.batch,
        bench.seconds,
        bench.search_concurrency,
        bench.memories,
        match target.rss {
            RssSource::ThisProcess => "embedded",
            _ => "running",
        },
        shared.url,
        shared.run
    );
    for line in &target.described {
        println!("  {line}");
    }
    let memory_subject = (bench.memories > 0).then(|| format!("bench-{}-memories", shared.run));
    if let Some(subject) = &memory_subject {
        preload(shared, subject, &bench).await;
    }
    let mut run = load(&target, &bench, memory_subject.as_deref()).await?;
    drain(&target, &mut run, bench.drain_timeout).await;
    let probes = collect_probes(std::mem::take(&mut run.probes)).await?;
    print_table(&run);
    print_summary(&target, &bench, &mut run, &probes);
    match target.server {
        Some(server) => server.stop().await,
        None => Ok(()),
    }
}

/// Posts the memories, then waits (bounded) until they are searchable.
async fn preload(shared: &Arc<Shared>, subject: &str, bench: &PipelineBench) {
    let started = Instant::now();
    preload_memories(shared, subject, bench.memories, bench.clients).await;
    let posted = started.elapsed();
    let projected = wait_for(shared, bench.drain_timeout, |backlog| {
        backlog.relay_lag == Some(0) && backlog.lag(MEMORY_PROJECTION) == Some(0)
    })
    .await;
    println!(
        "  preload: {} memories posted in {:.1} s ({:.0}/s); {}",
        bench.memories,
        posted.as_secs_f64(),
        bench.memories as f64 / posted.as_secs_f64(),
        match projected {
            Some(wait) => format!("searchable {:.1} s later", wait.as_secs_f64()),
            None => format!(
                "not all searchable after {} s: the load starts anyway",
                bench.drain_timeout.as_secs()
            ),
        }
    );
}

/// The load: writers, searchers and the probe until `--seconds` pass,
/// with a sample a second.
async fn load(
    target: &Target,
    bench: &PipelineBench,
    memory_subject: Option<&str>,
) -> anyhow::Result<Run> {
    let shared = &target.shared;
    let before = shared
        .backlog()
        .await
        .map(|(backlog, _)| backlog)
        .unwrap_or_default();
    let rss_start = target.rss.read();
    let recorder = Recorder {
        shared: shared.clone(),
        rss: target.rss,
        load_started: Instant::now(),
    };
    let until = recorder.load_started + Duration::from_secs(bench.seconds);
    let give_up = until + bench.drain_timeout;

    let writers: Vec<_> = (0..bench.clients)
        .map(|client| {
            tokio::spawn(writer(
                shared.clone(),
                client,
                bench.subjects,
                bench.batch,
                until,
            ))
        })
        .collect();
    let writer_subjects: Vec<String> = (0..bench.clients)
        .flat_map(|client| {
            let run = shared.run.clone();
            (0..bench.subjects).map(move |s| format!("bench-{run}-c{client}-s{s}"))
        })
        .collect();
    let searchers: Vec<_> = (0..bench.search_concurrency)
        .map(|worker| {
            tokio::spawn(searcher(
                shared.clone(),
                worker,
                writer_subjects.clone(),
                memory_subject.map(str::to_owned),
                until,
            ))
        })
        .collect();
    let prober = {
        let shared = shared.clone();
        tokio::spawn(async move {
            let mut probes = Vec::new();
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            for n in 0.. {
                tick.tick().await;
                if Instant::now() >= until {
                    break;
                }
                probes.push(tokio::spawn(probe(shared.clone(), n, give_up)));
            }
            // The probe's conversation ends with the load too, like the
            // writers': its last messages are consolidated now, not after
            // the idle timeout.
            let path = format!("/v1/subjects/bench-{}-probe/consolidate", shared.run);
            shared.post("consolidate", &path, &json!({})).await;
            probes
        })
    };

    let mut samples: Vec<Sample> = Vec::new();
    let mut rss_middle = None;
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    while Instant::now() < until {
        tick.tick().await;
        let sample = recorder.sample().await;
        if rss_middle.is_none() && sample.t >= bench.seconds as f64 / 2.0 {
            rss_middle = sample.rss_bytes;
        }
        if samples.len() % 10 == 9 {
            eprintln!(
                "  t {:.0} s: accepted {}, consolidator lag {}, buffer {}",
                sample.t,
                sample.accepted,
                figure(sample.backlog.lag(CONSOLIDATOR)),
                figure(sample.backlog.buffered)
            );
        }
        samples.push(sample);
    }
    for writer in writers {
        writer.await.context("a writer panicked")?;
    }
    let load_seconds = recorder.load_started.elapsed().as_secs_f64();
    let mut searches = SearchTimes::default();
    for searcher in searchers {
        let times = searcher.await.context("a searcher panicked")?;
        searches.memories.extend(times.memories);
        searches.writers.extend(times.writers);
    }
    samples.push(recorder.sample().await);
    Ok(Run {
        load_started: recorder.load_started,
        load_last: samples.len() - 1,
        samples,
        load_seconds,
        before,
        rss_start,
        rss_middle,
        searches,
        probes: prober.await.context("the probe scheduler panicked")?,
        drained: None,
        buffer_unknown: false,
    })
}

/// After the load: a sample a second until the backlog is zero or
/// `timeout` passes.
async fn drain(target: &Target, run: &mut Run, timeout: Duration) {
    let recorder = Recorder {
        shared: target.shared.clone(),
        rss: target.rss,
        load_started: run.load_started,
    };
    let started = Instant::now();
    loop {
        let sample = recorder.sample().await;
        let zero = sample.backlog.is_zero();
        // Every known figure zero, but no buffer reported: as drained as
        // this server can say.
        let lags_zero = sample.backlog.lags_are_zero();
        run.samples.push(sample);
        match zero {
            Some(true) => {
                run.drained = Some(started.elapsed());
                return;
            }
            None if lags_zero => {
                run.drained = Some(started.elapsed());
                run.buffer_unknown = true;
                return;
            }
            _ => {}
        }
        if started.elapsed() >= timeout {
            return;
        }
        tokio::time::sleep_until(tokio::time::Instant::from_std(
            started + Duration::from_secs(run.samples.len() as u64 - run.load_last as u64),
        ))
        .await;
    }
}

/// The probes' outcomes: those still looking once the drain is over get
/// [`PROBE_GRACE`] more (the index may answer a moment after its lag
/// reads zero), no more.
async fn collect_probes(probes: Vec<tokio::task::JoinHandle<Probe>>) -> anyhow::Result<Vec<Probe>> {
    let last_chance = tokio::time::Instant::now() + PROBE_GRACE;
    let mut outcomes = Vec::new();
    for mut probe in probes {
        outcomes.push(
            match tokio::time::timeout_at(last_chance, &mut probe).await {
                Ok(outcome) => outcome.context("a probe panicked")?,
                Err(_) => {
                    probe.abort();
                    Probe::NotFound
                }
            },
        );
    }
    Ok(outcomes)
}

fn print_table(run: &Run) {
    let baseline = run.baseline();
    println!();
    println!(
        "| t (s) | accepted | consumed | consolidated | buffer | relay lag | consolidator lag | \
         memory proj. lag | episode proj. lag | RSS |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for index in table_rows(run.samples.len(), Some(run.load_last), TABLE_ROWS) {
        let sample = &run.samples[index];
        println!(
            "| {:.0}{} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            sample.t,
            if index == run.load_last {
                " (load end)"
            } else {
                ""
            },
            sample.accepted,
            figure(consumed(sample, baseline)),
            figure(consolidated(sample, baseline)),
            figure(sample.backlog.buffered),
            figure(sample.backlog.relay_lag),
            figure(sample.backlog.lag(CONSOLIDATOR)),
            figure(sample.backlog.lag(MEMORY_PROJECTION)),
            figure(sample.backlog.lag(EPISODE_PROJECTION)),
            mib(sample.rss_bytes),
        );
    }
    println!();
}

fn print_summary(target: &Target, bench: &PipelineBench, run: &mut Run, probes: &[Probe]) {
    let baseline = run.baseline();
    let (load_end, drain_end) = (run.load_end().clone(), run.last().clone());
    let posted = probes
        .iter()
        .filter(|probe| !matches!(probe, Probe::NotPosted))
        .count();
    println!(
        "accepted: {} messages in {:.1} s = {:.0} msg/s (the probe's {posted} included)",
        load_end.accepted,
        run.load_seconds,
        load_end.accepted as f64 / run.load_seconds,
    );
    let start = Sample {
        t: 0.0,
        accepted: 0,
        backlog: run.before.clone(),
        rss_bytes: run.rss_start,
    };
    match (
        consolidated_rate(&start, &load_end, baseline),
        consolidated(&load_end, baseline),
    ) {
        (Some(during), Some(by_end)) => println!(
            "consolidated: {during:.0} msg/s during the load ({by_end} by its end); {} after it \
             ({} by {:.0} s later)",
            consolidated_rate(&load_end, &drain_end, baseline)
                .map_or_else(|| "?".into(), |rate| format!("{rate:.0} msg/s")),
            figure(consolidated(&drain_end, baseline)),
            drain_end.t - load_end.t,
        ),
        _ => println!(
            "consolidated: unknown (the server's /readyz reports no backlog.consolidation); \
             taken off the bus by the consolidator: {} by the load's end",
            figure(consumed(&load_end, baseline))
        ),
    }
    if let Some((accepted, consolidated)) = second_half(&run.samples, run.load_last, baseline) {
        println!(
            "the load's second half: accepted {accepted:.0} msg/s, consolidated {} (consolidated ÷ \
             accepted {})",
            consolidated.map_or_else(|| "?".into(), |rate| format!("{rate:.0} msg/s")),
            consolidated.map_or_else(|| "?".into(), |rate| format!("{:.2}", rate / accepted)),
        );
    }
    let mut found: Vec<Duration> = probes
        .iter()
        .filter_map(|probe| match probe {
            Probe::Found(took) => Some(*took),
            _ => None,
        })
        .collect();
    found.sort();
    let lost = posted - found.len();
    match found.last() {
        None => println!("searchable lag: no probe was found ({lost} not found)"),
        Some(max) => println!(
            "searchable lag (a probe message a second, found by keyword search): p50 {:.2} s, \
             max {:.2} s over {} probes{}",
            percentile(&found, 0.5).as_secs_f64(),
            max.as_secs_f64(),
            found.len(),
            if lost > 0 {
                format!(", {lost} not found by the drain's end")
            } else {
                String::new()
            }
        ),
    }
    if bench.search_concurrency == 0 {
        println!("search under load: no search clients");
    } else {
        let label = |target: &str, times: &[Duration]| {
            format!(
                "search under load (hybrid, k 10, {target}, {:.1}/s)",
                times.len() as f64 / run.load_seconds
            )
        };
        if bench.memories > 0 {
            let memories = &mut run.searches.memories;
            let text = label(&format!("subject of {} memories", bench.memories), memories);
            println!("{}", latency_line(&text, memories));
        }
        let writers = &mut run.searches.writers;
        let text = label("writers' subjects", writers);
        println!("{}", latency_line(&text, writers));
    }
    match run.drained {
        Some(took) if run.buffer_unknown => println!(
            "drain: relay and consumer lags zero {:.1} s after the load stopped (the \
             consolidation buffer is not reported: it may still hold messages)",
            took.as_secs_f64()
        ),
        Some(took) => println!(
            "drain: backlog zero {:.1} s after the load stopped",
            took.as_secs_f64()
        ),
        None => println!(
            "drain: backlog not zero after the {} s drain timeout (relay lag {}, consolidator \
             lag {}, buffer {}, memory projection lag {}, episode projection lag {})",
            bench.drain_timeout.as_secs(),
            figure(drain_end.backlog.relay_lag),
            figure(drain_end.backlog.lag(CONSOLIDATOR)),
            figure(drain_end.backlog.buffered),
            figure(drain_end.backlog.lag(MEMORY_PROJECTION)),
            figure(drain_end.backlog.lag(EPISODE_PROJECTION)),
        ),
    }
    let errors = target
        .shared
        .errors
        .lock()
        .expect("the error tally is never poisoned");
    if errors.is_empty() {
        println!("errors: none");
    } else {
        let list: Vec<String> = errors
            .iter()
            .map(|(what, count)| format!("{what} ×{count}"))
            .collect();
        println!("errors: {}", list.join(", "));
    }
    let degraded: BTreeSet<&str> = run
        .samples
        .iter()
        .flat_map(|sample| sample.backlog.degraded.iter().map(String::as_str))
        .collect();
    if !degraded.is_empty() {
        let list: Vec<&str> = degraded.into_iter().collect();
        println!("degraded (/readyz) at some point: {}", list.join("; "));
    }
    println!(
        "RSS: start {}, middle {}, end of load {}, end of drain {}{}",
        mib(run.rss_start),
        mib(run.rss_middle),
        mib(load_end.rss_bytes),
        mib(drain_end.rss_bytes),
        match target.rss {
            RssSource::ThisProcess => " (this process: the server and the bench's clients)",
            RssSource::Process(_) => "",
            RssSource::Unknown => " (give --pid to read the server's)",
        }
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(t: f64, accepted: u64, lag: u64, buffered: Option<u64>) -> Sample {
        Sample {
            t,
            accepted,
            backlog: Backlog {
                relay_lag: Some(0),
                consumer_lag: [(CONSOLIDATOR.to_owned(), Some(lag))].into_iter().collect(),
                buffered,
                degraded: Vec::new(),
            },
            rss_bytes: None,
        }
    }

    #[test]
    fn consolidated_is_what_left_the_bus_and_the_buffer() {
        let none = Baseline::default();
        let at = sample(10.0, 1_000, 150, Some(50));
        assert_eq!(consumed(&at, none), Some(850));
        assert_eq!(consolidated(&at, none), Some(800));
        // What waited before the load is not the load's.
        let before = Baseline {
            consolidator_lag: 20,
            buffered: 30,
        };
        assert_eq!(consumed(&at, before), Some(870));
        assert_eq!(consolidated(&at, before), Some(850));
        // Never more than accepted, never below zero.
        assert_eq!(consolidated(&sample(1.0, 10, 0, Some(0)), before), Some(10));
        assert_eq!(consolidated(&sample(1.0, 10, 500, Some(0)), none), Some(0));
        // No buffer reported: unknown, not "all consolidated".
        assert_eq!(consolidated(&sample(1.0, 10, 0, None), none), None);
        assert_eq!(consumed(&sample(1.0, 10, 4, None), none), Some(6));
    }

    #[test]
    fn the_consolidated_rate_is_per_second_between_samples() {
        let none = Baseline::default();
        let start = sample(0.0, 0, 0, Some(0));
        let end = sample(20.0, 2_000, 400, Some(100));
        assert_eq!(consolidated_rate(&start, &end, none), Some(75.0));
        let later = sample(30.0, 2_000, 0, Some(0));
        assert_eq!(consolidated_rate(&end, &later, none), Some(50.0));
        assert_eq!(consolidated_rate(&end, &end, none), None);
        assert_eq!(
            consolidated_rate(&start, &sample(5.0, 10, 0, None), none),
            None
        );
    }

    #[test]
    fn the_second_half_runs_from_the_middle_sample_to_the_loads_last() {
        let none = Baseline::default();
        let samples = [
            sample(1.0, 100, 100, Some(0)),
            sample(4.0, 400, 300, Some(0)),
            sample(6.0, 600, 400, Some(0)),
            sample(10.0, 1_000, 400, Some(200)),
            // After the load: not part of it.
            sample(12.0, 1_000, 0, Some(0)),
        ];
        // From t 6 (the first at or past 5) to t 10.
        assert_eq!(second_half(&samples, 3, none), Some((100.0, Some(50.0))));
        assert_eq!(second_half(&samples[..1], 0, none), None);
        let unknown = [sample(2.0, 10, 0, None), sample(4.0, 30, 0, None)];
        assert_eq!(second_half(&unknown, 1, none), Some((10.0, None)));
    }

    #[test]
    fn readyz_is_read_with_its_unknowns() {
        let ready = json!({
            "status": "degraded",
            "degraded": ["consolidation backlog"],
            "relay_lag": 3,
            "consumer_lag": {"consolidator": 7, "retriever.episode-projection": null},
            "backlog": {"consolidation": {"messages": 12, "conversations": 2, "oldest_seconds": 1.5}},
        });
        let backlog = Backlog::parse(&ready);
        assert_eq!(backlog.relay_lag, Some(3));
        assert_eq!(backlog.lag(CONSOLIDATOR), Some(7));
        assert_eq!(backlog.lag(EPISODE_PROJECTION), None);
        assert_eq!(backlog.buffered, Some(12));
        assert_eq!(backlog.pending_consolidation(), Some(19));
        assert_eq!(backlog.degraded, vec!["consolidation backlog".to_owned()]);
        assert_eq!(backlog.is_zero(), Some(false));

        let older = Backlog::parse(&json!({"relay_lag": 0, "consumer_lag": {"consolidator": 0}}));
        assert_eq!(older.buffered, None);
        assert_eq!(
            older.is_zero(),
            None,
            "no buffer reported: not known to be zero"
        );
        let idle = Backlog::parse(&json!({
            "relay_lag": 0,
            "consumer_lag": {"consolidator": 0, "forgetter.access": 0},
            "backlog": {"consolidation": {"messages": 0}},
        }));
        assert_eq!(idle.is_zero(), Some(true));
        let one_left = Backlog::parse(&json!({
            "relay_lag": 0,
            "consumer_lag": {"consolidator": 0, "forgetter.access": 1},
            "backlog": {"consolidation": {"messages": 0}},
        }));
        assert_eq!(one_left.is_zero(), Some(false));
    }

    #[test]
    fn the_table_is_thinned_but_keeps_the_load_end_and_the_last_sample() {
        assert_eq!(table_rows(0, None, 30), Vec::<usize>::new());
        assert_eq!(table_rows(5, Some(3), 30), vec![0, 1, 2, 3, 4]);
        let rows = table_rows(100, Some(61), 30);
        assert!(rows.len() <= 32, "{rows:?}");
        assert_eq!(rows[0], 0);
        assert!(rows.contains(&61) && rows.contains(&99), "{rows:?}");
        assert!(rows.windows(2).all(|pair| pair[0] < pair[1]));
    }

    #[test]
    fn rss_is_read_in_bytes_from_proc_status() {
        let status = "Name:\tmnemo\nVmPeak:\t  300000 kB\nVmRSS:\t  123456 kB\nThreads:\t9\n";
        assert_eq!(parse_vm_rss(status), Some(123_456 * 1024));
        assert_eq!(parse_vm_rss("Name:\tx\n"), None);
        assert!(RssSource::ThisProcess.read().is_some_and(|bytes| bytes > 0));
    }

    #[test]
    fn backpressure_waits_as_asked_within_bounds() {
        assert_eq!(backoff(None), Duration::from_millis(100));
        assert_eq!(backoff(Some(Duration::ZERO)), Duration::from_millis(100));
        assert_eq!(
            backoff(Some(Duration::from_secs(2))),
            Duration::from_secs(2)
        );
        assert_eq!(backoff(Some(Duration::from_secs(120))), MAX_BACKOFF);
    }

    #[test]
    fn percentiles_pick_by_rank() {
        let times: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(percentile(&times, 0.5), Duration::from_millis(51));
        assert_eq!(percentile(&times, 0.99), Duration::from_millis(99));
        assert_eq!(percentile(&[], 0.5), Duration::ZERO);
    }

    #[test]
    fn a_session_never_spans_two_requests_and_ids_are_unique() {
        let mut conversation = Conversation {
            subject: "bench-x-c0-s0".into(),
            session: 0,
            in_session: 0,
            sent: 0,
            started: Utc::now(),
        };
        let sizes: Vec<usize> = (0..4)
            .map(|_| conversation.next_batch(10, 0).len())
            .collect();
        assert_eq!(sizes, vec![10, 10, 4, 10]);
        let next = conversation.next_batch(10, 0);
        assert_eq!(next[0]["session"], "s1");
        assert_eq!(next[0]["id"], "bench-x-c0-s0-34");
        let nonces: BTreeSet<String> = (0..50).map(|_| nonce()).collect();
        assert_eq!(nonces.len(), 50);
        assert!(nonces
            .iter()
            .all(|word| word.starts_with("zq") && word.len() == 12));
    }
}
