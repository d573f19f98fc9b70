//! `mnemo eval locomo FILE`: LoCoMo retrieval recall@k through the public
//! HTTP API of a running server.
//!
//! For each conversation (subject `<prefix>-<sample_id>`):
//! 1. every turn is posted as a message (`id` = its `dia_id`, role `user`,
//!    content `"<speaker>: <text>"` plus `" [image: <caption>]"` when the turn
//!    shares an image, timestamp = its session's date as UTC), 100 a request.
//!    Message ids make this idempotent: posting again returns the same event
//!    ids as duplicates, which is how `--skip-ingest` recovers the
//!    event id → `dia_id` map of an earlier run, exactly and cheaply;
//! 2. unless `--skip-ingest`, one memory per turn is written directly
//!    (`POST …/memories`, kind `fact`, the same content, `sources: [dia_id]`
//!    so its provenance names the turn, tag `locomo-turn`), 8 in flight,
//!    and the run waits until the subject's memory list shows all of them
//!    (the projection embeds asynchronously);
//! 3. every question of categories 1–4 (5, adversarial, is skipped) is
//!    searched with k = 25 in each requested mode, restricted to the turn
//!    memories (`filters.tags: ["locomo-turn"]`), so the memories the
//!    consolidator mines from the same messages neither compete nor count:
//!    this is the "one memory per turn" setting of the reference numbers in
//!    `shared/data/README.md`.
//!
//! Recall@k = |evidence ∩ provenance of the top k| / |evidence|, evidence
//! cleaned as the README says (every `D:?(\d+):(\d+)`, unknown ids dropped;
//! a question left without evidence is skipped), averaged per category and
//! over 1–4. One markdown table per mode goes to stdout, progress to stderr.
//!
//! Experiment switches (environment variables, not flags: they are for
//! investigating retrieval, not for routine runs):
//! - `MNEMO_EVAL_DIAGNOSTICS=1`: also fetch each leg on its own (keyword
//!   and semantic, k = 100), re-sort each by its raw leg score (`fused`:
//!   BM25 or cosine) to undo the final ranking and MMR, and print what the
//!   raw legs and their reciprocal-rank fusion at several RRF k would score
//!   (fusion computed here, over the top 100 of each leg, as the engine
//!   fuses its prefetches but before ranking and MMR).
//! - `MNEMO_EVAL_DENSE_PREFIX=P`: in the diagnostics, take the semantic leg
//!   from the subjects `P-<sample_id>` (an earlier run ingested with another
//!   content recipe, e.g. with `MNEMO_EVAL_CONTEXT_TURNS`), fusing by
//!   provenance; implies the diagnostics.
//! - `MNEMO_EVAL_CONTEXT_TURNS=N`: write each turn memory with the previous
//!   N turns of its session in front of it (provenance still the turn
//!   alone), under the subjects `<prefix>-ctx<N>-<sample_id>`, to measure
//!   what embedding context would give. Messages are unchanged.
//! - `MNEMO_EVAL_ALL_MEMORIES=1`: search every memory of the subject, the
//!   consolidator's included, instead of the turn memories only.
//! - `MNEMO_EVAL_DUMP=FILE`: write one JSON line per question (category,
//!   evidence, the ranked provenance of every list) for offline analysis;
//!   with `--via messages`, one more search per question (k = 100) whose
//!   results carry their text, dates and score components, for trying a
//!   ranking on the same candidates (the file holds the corpus's text).
//! - `MNEMO_EVAL_DATA_DIR=DIR` (with `--skip-ingest`): instead of `--url`,
//!   open DIR (the data dir of a *stopped* server that ran an earlier
//!   ingest) in this process, with the settings of the environment as
//!   `mnemo serve` would, and search through `mnemo_retriever::search::find_memories`
//!   directly (ranking and MMR included, no HTTP), for the tenant
//!   `MNEMO_EVAL_TENANT` (default `eval`). `MNEMO_EVAL_RRF_K=K` then sets
//!   the RRF constant of hybrid search (default: the server's,
//!   `mnemo_vector_index::DEFAULT_RRF_K`), so a fusion
//!   change is measured as served, not only offline, and
//!   `MNEMO_EVAL_MMR_LAMBDA=L` the MMR trade-off (the server's is 1.0, which
//!   turns diversification off).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use chrono::{DateTime, NaiveDateTime, Utc};
use mnemo_auth::{MintRequest, Minter, Principal, Scope};
use mnemo_config::Overrides;
use mnemo_domain::{MemoryState, SubjectId, TenantId};
use mnemo_retriever::search::{Item, Mode};
use mnemo_vector_index::SearchFilter;
use mnemo_vector_index::DEFAULT_RRF_K;
use secrecy::ExposeSecret;
use serde_json::{json, Value};

#[derive(Debug, Clone)]
pub struct LocomoArgs {
    pub file: std::path::PathBuf,
    pub url: String,
    pub token: String,
    /// hybrid, semantic, keyword, or all three.
    pub modes: Vec<String>,
    /// Subject ids are `<prefix>-<sample_id>`.
    pub subject_prefix: String,
    /// Reuse subjects ingested by an earlier run.
    pub skip_ingest: bool,
}

/// The tag every turn memory carries; searches are restricted to it.
const TURN_TAG: &str = "locomo-turn";
/// Results asked for per search; recall is reported at each of `CUTOFFS`.
pub(crate) const SEARCH_K: usize = 25;
pub(crate) const CUTOFFS: [usize; 4] = [1, 5, 10, 25];
/// Results asked for per leg in the diagnostics (the API's maximum).
const LEG_K: usize = 100;
/// RRF constants the diagnostics fuse the legs with.
const DIAGNOSTIC_RRF_K: [u32; 5] = [5, 10, 20, 30, 60];
const MESSAGE_BATCH: usize = 100;
const MEMORY_CONCURRENCY: usize = 8;
const SEARCH_CONCURRENCY: usize = 4;
pub(crate) const CATEGORY_NAMES: [&str; 4] = ["multi-hop", "temporal", "open-domain", "single-hop"];
/// How long the memory list may show no progress before the run gives up.
const PROJECTION_STALL: Duration = Duration::from_secs(180);

// ------------------------------------------------------------------ data

#[derive(Debug, Clone)]
pub(crate) struct Turn {
    pub(crate) dia_id: String,
    pub(crate) content: String,
    pub(crate) timestamp: Option<DateTime<Utc>>,
    pub(crate) session: u32,
}

#[derive(Debug, Clone)]
pub(crate) struct Question {
    pub(crate) text: String,
    pub(crate) category: u8,
    pub(crate) evidence: Vec<String>,
}

#[derive(Debug, Clone)]
pub(crate) struct Conversation {
    pub(crate) sample_id: String,
    pub(crate) turns: Vec<Turn>,
    pub(crate) questions: Vec<Question>,
}

/// `"1:56 pm on 8 May, 2023"` as UTC.
fn parse_session_date(raw: &str) -> Option<DateTime<Utc>> {
    let raw = raw.trim();
    NaiveDateTime::parse_from_str(raw, "%I:%M %p on %d %B, %Y")
        .or_else(|_| NaiveDateTime::parse_from_str(raw, "%I:%M %p on %d %b, %Y"))
        .ok()
        .map(|t| t.and_utc())
}

/// Every match of `D:?(\d+):(\d+)` in `raw`, as `D<a>:<b>`.
fn evidence_ids(raw: &str) -> Vec<String> {
    let bytes = raw.as_bytes();
    let digits = |mut at: usize| {
        let start = at;
        while at < bytes.len() && bytes[at].is_ascii_digit() {
            at += 1;
        }
        (at > start).then(|| (&raw[start..at], at))
    };
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'D' {
            let mut at = i + 1;
            if bytes.get(at) == Some(&b':') {
                at += 1;
            }
            if let Some((session, after)) = digits(at) {
                if bytes.get(after) == Some(&b':') {
                    if let Some((turn, end)) = digits(after + 1) {
                        found.push(format!("D{session}:{turn}"));
                        i = end;
                        continue;
                    }
                }
            }
        }
        i += 1;
    }
    found
}

fn turn_content(turn: &Value) -> Option<String> {
    let speaker = turn.get("speaker")?.as_str()?;
    let text = turn.get("text").and_then(Value::as_str).unwrap_or("");
    let mut content = format!("{speaker}: {text}");
    if let Some(caption) = turn
        .get("blip_caption")
        .and_then(Value::as_str)
        .filter(|c| !c.trim().is_empty())
    {
        content.push_str(&format!(" [image: {caption}]"));
    }
    Some(content)
}

pub(crate) fn parse_conversations(raw: &Value) -> anyhow::Result<Vec<Conversation>> {
    let list = raw
        .as_array()
        .context("expected a JSON list of conversations")?;
    let mut conversations = Vec::with_capacity(list.len());
    for (index, item) in list.iter().enumerate() {
        let sample_id = item
            .get("sample_id")
            .and_then(Value::as_str)
            .with_context(|| format!("conversation {index} has no sample_id"))?
            .to_owned();
        let conversation = item
            .get("conversation")
            .and_then(Value::as_object)
            .with_context(|| format!("{sample_id}: no conversation object"))?;
        let mut sessions: Vec<(u32, &Vec<Value>)> = conversation
            .iter()
            .filter_map(|(key, value)| {
                let number = key.strip_prefix("session_")?.parse::<u32>().ok()?;
                Some((number, value.as_array()?))
            })
            .collect();
        sessions.sort_by_key(|(number, _)| *number);
        let mut turns = Vec::new();
        for (number, session) in sessions {
            let date_key = format!("session_{number}_date_time");
            let timestamp = conversation
                .get(&date_key)
                .and_then(Value::as_str)
                .and_then(parse_session_date);
            if timestamp.is_none() {
                eprintln!(
                    "warning: {sample_id}: no parsable {date_key}; its turns get the server's time"
                );
            }
            for turn in session {
                let dia_id = turn
                    .get("dia_id")
                    .and_then(Value::as_str)
                    .with_context(|| {
                        format!("{sample_id}: a turn of session {number} has no dia_id")
                    })?;
                let content = turn_content(turn)
                    .with_context(|| format!("{sample_id}: turn {dia_id} has no speaker"))?;
                turns.push(Turn {
                    dia_id: dia_id.to_owned(),
                    content,
                    timestamp,
                    session: number,
                });
            }
        }
        let known: HashSet<&str> = turns.iter().map(|t| t.dia_id.as_str()).collect();
        anyhow::ensure!(known.len() == turns.len(), "{sample_id}: duplicate dia_ids");
        let mut questions = Vec::new();
        for qa in item
            .get("qa")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(category) = qa.get("category").and_then(Value::as_u64) else {
                continue;
            };
            let text = qa
                .get("question")
                .and_then(Value::as_str)
                .unwrap_or("")
                .trim()
                .to_owned();
            let mut evidence: Vec<String> = Vec::new();
            for raw in qa
                .get("evidence")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                for id in evidence_ids(raw.as_str().unwrap_or("")) {
                    if known.contains(id.as_str()) && !evidence.contains(&id) {
                        evidence.push(id);
                    }
                }
            }
            questions.push(Question {
                text,
                category: u8::try_from(category).unwrap_or(u8::MAX),
                evidence,
            });
        }
        conversations.push(Conversation {
            sample_id,
            turns,
            questions,
        });
    }
    Ok(conversations)
}

/// What a run would ask of a LoCoMo-format file, counted by the eval's own
/// loader: for checking a data set without a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatasetSummary {
    pub conversations: usize,
    pub turns: usize,
    /// Turns whose session has no parsable `session_N_date_time` (a run
    /// posts them with the server's time, so relative dates go wrong).
    pub undated_turns: usize,
    /// Questions of categories 1–4 with evidence left after cleaning, per
    /// category: the questions a run asks.
    pub asked_by_category: [usize; 4],
    /// Questions of categories 1–4 left without evidence (skipped).
    pub skipped_no_evidence: usize,
    /// Category 5 questions (skipped).
    pub adversarial: usize,
}

/// Loads `raw` as `mnemo eval locomo` does and counts what it would ask.
pub fn summarize_dataset(raw: &Value) -> anyhow::Result<DatasetSummary> {
    let conversations = parse_conversations(raw)?;
    let jobs = QuestionJobs::of(&conversations);
    let mut asked_by_category = [0; 4];
    for &(c, q) in &jobs.jobs {
        asked_by_category[usize::from(conversations[c].questions[q].category - 1)] += 1;
    }
    let turns = || conversations.iter().flat_map(|c| &c.turns);
    Ok(DatasetSummary {
        conversations: conversations.len(),
        turns: turns().count(),
        undated_turns: turns().filter(|t| t.timestamp.is_none()).count(),
        asked_by_category,
        skipped_no_evidence: jobs.skipped_no_evidence,
        adversarial: jobs.adversarial,
    })
}

// ------------------------------------------------------------------- api

#[derive(Clone)]
pub(crate) struct Api {
    client: reqwest::Client,
    url: String,
    token: String,
}

impl Api {
    /// A client of the server at `url` (no trailing slash needed).
    pub(crate) fn new(url: &str, token: String) -> anyhow::Result<Self> {
        Ok(Api {
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(120))
                .pool_max_idle_per_host(MEMORY_CONCURRENCY)
                // Below the server's keep-alive (actix: 5 s), so an idle
                // connection is dropped here before the server closes it.
                .pool_idle_timeout(Duration::from_secs(2))
                .build()?,
            url: url.trim_end_matches('/').to_owned(),
            token,
        })
    }

    /// Sends a request; an idempotent one is sent again (up to 3 times in
    /// all) when the connection fails, e.g. when the server closed an idle
    /// keep-alive connection just as it was reused.
    async fn send(
        &self,
        request: reqwest::RequestBuilder,
        what: &str,
        idempotent: bool,
    ) -> anyhow::Result<Value> {
        let mut attempt = 1;
        let response = loop {
            let this = request
                .try_clone()
                .context("request cannot be repeated")?
                .bearer_auth(&self.token);
            match this.send().await {
                Ok(response) => break response,
                Err(error) if idempotent && attempt < 3 && !error.is_timeout() => {
                    attempt += 1;
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(error) => {
                    return Err(error).with_context(|| format!("{what}: cannot reach {}", self.url))
                }
            }
        };
        let status = response.status();
        let body = response
            .text()
            .await
            .with_context(|| format!("{what}: cannot read the response"))?;
        if !status.is_success() {
            bail!("{what} was refused: {status}: {body}");
        }
        serde_json::from_str(&body).with_context(|| format!("{what}: the response is not JSON"))
    }

    /// POST; `idempotent` when repeating it cannot do anything twice.
    pub(crate) async fn post(
        &self,
        path: &str,
        body: &Value,
        idempotent: bool,
    ) -> anyhow::Result<Value> {
        let request = self.client.post(format!("{}{path}", self.url)).json(body);
        self.send(request, &format!("POST {path}"), idempotent)
            .await
    }

    pub(crate) async fn get(&self, path: &str) -> anyhow::Result<Value> {
        let request = self.client.get(format!("{}{path}", self.url));
        self.send(request, &format!("GET {path}"), true).await
    }

    /// Posts the conversation's turns as messages; returns dia_id → event id
    /// (new or, on a repeat, the original's).
    pub(crate) async fn post_messages(
        &self,
        subject: &str,
        turns: &[Turn],
    ) -> anyhow::Result<(HashMap<String, String>, usize)> {
        let mut events = HashMap::with_capacity(turns.len());
        let mut duplicates = 0;
        for batch in turns.chunks(MESSAGE_BATCH) {
            let messages: Vec<Value> = batch
                .iter()
                .map(|turn| {
                    let mut message = json!({
                        "id": turn.dia_id,
                        "role": "user",
                        "content": turn.content,
                    });
                    if let Some(at) = turn.timestamp {
                        message["timestamp"] = json!(at.to_rfc3339());
                    }
                    message
                })
                .collect();
            let accepted = self
                .post(
                    &format!("/v1/subjects/{subject}/messages"),
                    &json!({ "messages": messages }),
                    true,
                )
                .await?;
            let listed = accepted
                .get("events")
                .and_then(Value::as_array)
                .context("messages response without events")?;
            anyhow::ensure!(
                listed.len() == batch.len(),
                "messages response lists {} events for {} messages",
                listed.len(),
                batch.len()
            );
            for (turn, event) in batch.iter().zip(listed) {
                let id = event.get("id").and_then(Value::as_str);
                anyhow::ensure!(
                    id == Some(turn.dia_id.as_str()),
                    "messages response out of order at {}",
                    turn.dia_id
                );
                let event_id = event
                    .get("event_id")
                    .and_then(Value::as_str)
                    .context("messages response without event_id")?;
                if event.get("duplicate").and_then(Value::as_bool) == Some(true) {
                    duplicates += 1;
                }
                events.insert(turn.dia_id.clone(), event_id.to_owned());
            }
        }
        Ok((events, duplicates))
    }

    /// Every listed memory of the subject (optionally only the turn memories).
    pub(crate) async fn list_memories(
        &self,
        subject: &str,
        turns_only: bool,
    ) -> anyhow::Result<Vec<Value>> {
        let mut memories = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut path = format!("/v1/subjects/{subject}/memories?limit=500");
            if turns_only {
                path.push_str(&format!("&tag={TURN_TAG}"));
            }
            if let Some(cursor) = &cursor {
                path.push_str(&format!("&cursor={cursor}"));
            }
            let page = self.get(&path).await?;
            if let Some(list) = page.get("memories").and_then(Value::as_array) {
                memories.extend(list.iter().cloned());
            }
            match page.get("next_cursor").and_then(Value::as_str) {
                Some(next) => cursor = Some(next.to_owned()),
                None => return Ok(memories),
            }
        }
    }
}

// ---------------------------------------------------------------- ingest

/// Memory content per turn: the turn, after `context` previous turns of
/// the same session when the context experiment is on.
fn memory_contents(turns: &[Turn], context: usize) -> Vec<String> {
    (0..turns.len())
        .map(|i| {
            let first = i.saturating_sub(context);
            let mut lines: Vec<&str> = turns[first..i]
                .iter()
                .filter(|t| t.session == turns[i].session)
                .map(|t| t.content.as_str())
                .collect();
            lines.push(&turns[i].content);
            lines.join("\n")
        })
        .collect()
}

async fn write_memories(
    api: &Api,
    subject: &str,
    turns: &[Turn],
    context: usize,
) -> anyhow::Result<()> {
    let contents = Arc::new(memory_contents(turns, context));
    let dia_ids: Arc<Vec<String>> = Arc::new(turns.iter().map(|t| t.dia_id.clone()).collect());
    let next = Arc::new(AtomicUsize::new(0));
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..MEMORY_CONCURRENCY {
        let (api, contents, dia_ids, next) =
            (api.clone(), contents.clone(), dia_ids.clone(), next.clone());
        let subject = subject.to_owned();
        workers.spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= contents.len() {
                    return anyhow::Ok(());
                }
                api.post(
                    &format!("/v1/subjects/{subject}/memories"),
                    &json!({
                        "content": contents[i],
                        "kind": "fact",
                        "tags": [TURN_TAG],
                        "sources": [dia_ids[i]],
                    }),
                    false,
                )
                .await
                .with_context(|| format!("memory of turn {}", dia_ids[i]))?;
            }
        });
    }
    while let Some(done) = workers.join_next().await {
        done??;
    }
    Ok(())
}

/// Waits until the subject lists `expected` turn memories.
async fn wait_for_memories(api: &Api, subject: &str, expected: usize) -> anyhow::Result<()> {
    let mut last = usize::MAX;
    let mut last_progress = Instant::now();
    let mut last_report = Instant::now();
    loop {
        let listed = api.list_memories(subject, true).await?.len();
        if listed >= expected {
            return Ok(());
        }
        if listed != last {
            last = listed;
            last_progress = Instant::now();
        }
        if last_progress.elapsed() > PROJECTION_STALL {
            bail!(
                "{subject}: the memory list is stuck at {listed} of {expected} turn memories \
                 for {} s; is the server's projection running? (see /readyz relay_lag)",
                PROJECTION_STALL.as_secs()
            );
        }
        if last_report.elapsed() > Duration::from_secs(10) {
            eprintln!("  {subject}: {listed}/{expected} memories projected");
            last_report = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Posts (or re-posts) the messages and, unless skipped, writes and waits
/// for the turn memories. Returns dia_id → event id.
async fn prepare_subject(
    api: &Api,
    subject: &str,
    conversation: &Conversation,
    skip_ingest: bool,
    context: usize,
) -> anyhow::Result<HashMap<String, String>> {
    let turns = &conversation.turns;
    let (events, duplicates) = api.post_messages(subject, turns).await?;
    if skip_ingest {
        if duplicates < turns.len() {
            eprintln!(
                "  warning: {subject}: {} of {} messages were new, so this subject was not fully \
                 ingested before",
                turns.len() - duplicates,
                turns.len()
            );
        }
        let listed = api.list_memories(subject, true).await?.len();
        if listed != turns.len() {
            bail!(
                "{subject} lists {listed} turn memories, expected {}: run without --skip-ingest \
                 (on a fresh subject prefix) first",
                turns.len()
            );
        }
        return Ok(events);
    }
    let existing = api.list_memories(subject, true).await?.len();
    if existing > 0 {
        bail!(
            "{subject} already has {existing} turn memories from an earlier run; pass \
             --skip-ingest to reuse them, or another --subject-prefix"
        );
    }
    write_memories(api, subject, turns, context).await?;
    wait_for_memories(api, subject, turns.len()).await?;
    Ok(events)
}

// ---------------------------------------------------------------- search

/// One retrieved memory: its key (memory id), its provenance as dia_ids and
/// the index's own score (`components.fused`).
#[derive(Debug, Clone)]
pub(crate) struct Retrieved {
    key: String,
    pub(crate) turns: Vec<String>,
    fused: f64,
}

/// The results of a search response: a memory or an episode, each as the
/// turns its provenance names (the result's own `provenance`, or for a
/// server from before episodes, its memory's).
pub(crate) fn retrieved(results: &Value, dia_of: &HashMap<String, String>) -> Vec<Retrieved> {
    results
        .get("results")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|result| {
            let memory = &result["memory"];
            let provenance = if result["provenance"].is_object() {
                &result["provenance"]
            } else {
                &memory["provenance"]
            };
            let key = memory["id"]
                .as_str()
                .or_else(|| result["episode"]["id"].as_str())
                .unwrap_or_default();
            let turns = provenance["source_event_ids"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|e| dia_of.get(e.as_str()?).cloned())
                .collect();
            Retrieved {
                key: key.to_owned(),
                turns,
                fused: result["components"]["fused"].as_f64().unwrap_or(0.0),
            }
        })
        .collect()
}

/// The leg's raw order: by the index's score, best first (undoes the final
/// ranking and MMR over the candidates returned).
fn raw_order(mut list: Vec<Retrieved>) -> Vec<Retrieved> {
    list.sort_by(|a, b| b.fused.total_cmp(&a.fused));
    list
}

/// Qdrant's RRF (`1 / (r + k)` for 0-based rank r) over two legs, keyed by
/// `key` (or by provenance when the legs come from different subjects).
fn rrf(a: &[Retrieved], b: &[Retrieved], k: u32, by_provenance: bool) -> Vec<Retrieved> {
    let key = |r: &Retrieved| {
        if by_provenance {
            let mut turns = r.turns.clone();
            turns.sort();
            turns.join(",")
        } else {
            r.key.clone()
        }
    };
    // key → (score, best rank, item)
    let mut fused: HashMap<String, (f64, usize, Retrieved)> = HashMap::new();
    for leg in [a, b] {
        for (rank, item) in leg.iter().enumerate() {
            let entry = fused
                .entry(key(item))
                .or_insert_with(|| (0.0, rank, item.clone()));
            entry.0 += 1.0 / (rank as f64 + f64::from(k));
            entry.1 = entry.1.min(rank);
        }
    }
    let mut list: Vec<(String, (f64, usize, Retrieved))> = fused.into_iter().collect();
    list.sort_by(|(ka, a), (kb, b)| {
        b.0.total_cmp(&a.0)
            .then_with(|| a.1.cmp(&b.1))
            .then_with(|| ka.cmp(kb))
    });
    list.into_iter().map(|(_, (_, _, item))| item).collect()
}

pub(crate) fn recall(evidence: &[String], ranked: &[Retrieved], k: usize) -> f64 {
    let found: HashSet<&str> = ranked
        .iter()
        .take(k)
        .flat_map(|r| r.turns.iter().map(String::as_str))
        .collect();
    evidence
        .iter()
        .filter(|e| found.contains(e.as_str()))
        .count() as f64
        / evidence.len() as f64
}

/// Sums of recall per category (index 0..4 = categories 1–4).
#[derive(Debug, Clone, Default)]
pub(crate) struct Tally {
    n: [usize; 4],
    sums: [[f64; CUTOFFS.len()]; 4],
}

impl Tally {
    pub(crate) fn add(&mut self, category: u8, evidence: &[String], ranked: &[Retrieved]) {
        let c = usize::from(category - 1);
        self.n[c] += 1;
        for (i, k) in CUTOFFS.iter().enumerate() {
            self.sums[c][i] += recall(evidence, ranked, *k);
        }
    }

    pub(crate) fn total(&self) -> (usize, [f64; CUTOFFS.len()]) {
        let mut sums = [0.0; CUTOFFS.len()];
        for category in &self.sums {
            for (sum, value) in sums.iter_mut().zip(category) {
                *sum += value;
            }
        }
        (self.n.iter().sum(), sums)
    }

    fn row(n: usize, sums: &[f64; CUTOFFS.len()]) -> String {
        let cells: Vec<String> = sums
            .iter()
            .map(|s| {
                if n == 0 {
                    "–".to_owned()
                } else {
                    format!("{:.1}", 100.0 * s / n as f64)
                }
            })
            .collect();
        format!("{n} | {}", cells.join(" | "))
    }

    pub(crate) fn print(&self, title: &str) {
        println!("\n### {title}\n");
        print!("{}", self.table());
    }

    /// The markdown table: one row per category and the 1–4 total.
    pub(crate) fn table(&self) -> String {
        let header: Vec<String> = CUTOFFS.iter().map(|k| format!("R@{k}")).collect();
        let mut out = format!("| category | n | {} |\n", header.join(" | "));
        out.push_str(&format!("|---|---:|{}\n", "---:|".repeat(CUTOFFS.len())));
        for (c, name) in CATEGORY_NAMES.iter().enumerate() {
            out.push_str(&format!(
                "| {} {name} | {} |\n",
                c + 1,
                Tally::row(self.n[c], &self.sums[c])
            ));
        }
        let (n, sums) = self.total();
        out.push_str(&format!("| **1–4** | {} |\n", Tally::row(n, &sums)));
        out
    }

    fn summary_row(&self, label: &str) -> String {
        let (n, sums) = self.total();
        format!("| {label} | {} |", Tally::row(n, &sums))
    }
}

/// What one question retrieved: per mode, and the raw legs.
pub(crate) struct Outcome {
    pub(crate) conversation: usize,
    pub(crate) question: usize,
    pub(crate) by_mode: Vec<Vec<Retrieved>>,
    keyword_leg: Vec<Retrieved>,
    semantic_leg: Vec<Retrieved>,
}

/// The in-process experiment: the server's own search (`find`) beside an
/// embedded server on a stopped server's data dir, with another RRF k.
pub(crate) struct InProcess {
    state: mnemo_retriever::RetrieverState,
    principal: Principal,
    rrf_k: u32,
}

pub(crate) struct Shared {
    pub(crate) api: Api,
    pub(crate) in_process: Option<InProcess>,
    pub(crate) conversations: Vec<Conversation>,
    pub(crate) subjects: Vec<String>,
    /// Where the semantic leg of the diagnostics searches.
    pub(crate) dense_subjects: Vec<String>,
    /// Message event id → dia_id.
    pub(crate) dia_of: HashMap<String, String>,
    pub(crate) modes: Vec<String>,
    pub(crate) diagnostics: bool,
    /// Search the turn memories only (`locomo-turn`), not every memory.
    pub(crate) turns_only: bool,
}

impl Shared {
    async fn search(
        &self,
        subject: &str,
        query: &str,
        mode: &str,
        k: usize,
    ) -> anyhow::Result<Vec<Retrieved>> {
        if let Some(in_process) = &self.in_process {
            return self
                .search_in_process(in_process, subject, query, mode, k)
                .await;
        }
        let mut body = json!({ "query": query, "k": k, "mode": mode });
        if self.turns_only {
            body["filters"] = json!({ "tags": [TURN_TAG] });
        }
        let results = self
            .post_search(subject, &body)
            .await
            .with_context(|| format!("search ({mode}) for {query:?}"))?;
        Ok(retrieved(&results, &self.dia_of))
    }

    async fn search_in_process(
        &self,
        in_process: &InProcess,
        subject: &str,
        query: &str,
        mode: &str,
        k: usize,
    ) -> anyhow::Result<Vec<Retrieved>> {
        let subject = SubjectId::parse(subject)?;
        let filter = SearchFilter {
            subject: Some(subject.clone()),
            tags: if self.turns_only {
                vec![TURN_TAG.to_owned()]
            } else {
                Vec::new()
            },
            states: vec![MemoryState::Active],
            ..Default::default()
        };
        let search_mode = match mode {
            "keyword" => Mode::Keyword,
            "semantic" => Mode::Semantic,
            _ => Mode::Hybrid,
        };
        let found = mnemo_retriever::search::find_memories(
            &in_process.state,
            mnemo_retriever::search::FindRequest {
                tenant: in_process.principal.tenant.clone(),
                subject: subject.clone(),
                query: query.trim().to_owned(),
                k,
                mode: search_mode,
                filter,
                // Ranking alone: no graph expansion in the measurement.
                expand_depth: 0,
                window: 0,
                feedback: false,
            },
        )
        .await
        .map_err(|e| anyhow::anyhow!("search ({mode}) for {query:?} in process: {e}"))?;
        Ok(found
            .iter()
            .map(|f| Retrieved {
                key: match &f.item {
                    Item::Memory(memory) => memory.id.to_string(),
                    Item::Episode(hit) => hit.episode.event_id.to_string(),
                },
                turns: f
                    .source_event_ids()
                    .iter()
                    .filter_map(|e| self.dia_of.get(&e.to_string()).cloned())
                    .collect(),
                fused: f.fused,
            })
            .collect())
    }

    async fn post_search(&self, subject: &str, body: &Value) -> anyhow::Result<Value> {
        self.api
            .post(&format!("/v1/subjects/{subject}/search"), body, true)
            .await
    }

    async fn run(&self, conversation: usize, question: usize) -> anyhow::Result<Outcome> {
        let q = &self.conversations[conversation].questions[question];
        let subject = &self.subjects[conversation];
        let mut by_mode = Vec::with_capacity(self.modes.len());
        for mode in &self.modes {
            by_mode.push(self.search(subject, &q.text, mode, SEARCH_K).await?);
        }
        let (mut keyword_leg, mut semantic_leg) = (Vec::new(), Vec::new());
        if self.diagnostics {
            keyword_leg = raw_order(self.search(subject, &q.text, "keyword", LEG_K).await?);
            let dense_subject = &self.dense_subjects[conversation];
            semantic_leg = raw_order(
                self.search(dense_subject, &q.text, "semantic", LEG_K)
                    .await?,
            );
        }
        Ok(Outcome {
            conversation,
            question,
            by_mode,
            keyword_leg,
            semantic_leg,
        })
    }
}

fn env_flag(name: &str) -> bool {
    std::env::var(name)
        .map(|v| !v.trim().is_empty() && v.trim() != "0")
        .unwrap_or(false)
}

fn env_string(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn parse_modes(raw: &[String]) -> anyhow::Result<Vec<String>> {
    let mut modes = Vec::new();
    for mode in raw.iter().flat_map(|m| m.split([',', ' '])) {
        let wanted: &[&str] = match mode.trim() {
            "" => &[],
            "all" => &["keyword", "semantic", "hybrid"],
            "keyword" => &["keyword"],
            "semantic" => &["semantic"],
            "hybrid" => &["hybrid"],
            other => bail!("unknown mode {other:?}: expected hybrid, semantic, keyword or all"),
        };
        for m in wanted {
            if !modes.iter().any(|x| x == m) {
                modes.push((*m).to_owned());
            }
        }
    }
    anyhow::ensure!(!modes.is_empty(), "no mode given");
    Ok(modes)
}

/// The questions to search: every one of categories 1–4 with evidence, as
/// (conversation, question) indexes, and how many were left out.
pub(crate) struct QuestionJobs {
    pub(crate) jobs: Vec<(usize, usize)>,
    pub(crate) skipped_no_evidence: usize,
    pub(crate) adversarial: usize,
}

impl QuestionJobs {
    pub(crate) fn of(conversations: &[Conversation]) -> Self {
        let jobs = conversations
            .iter()
            .enumerate()
            .flat_map(|(c, conversation)| {
                conversation
                    .questions
                    .iter()
                    .enumerate()
                    .filter(|(_, q)| (1..=4).contains(&q.category) && !q.evidence.is_empty())
                    .map(move |(q, _)| (c, q))
            })
            .collect();
        let questions = || conversations.iter().flat_map(|c| &c.questions);
        QuestionJobs {
            jobs,
            skipped_no_evidence: questions()
                .filter(|q| (1..=4).contains(&q.category) && q.evidence.is_empty())
                .count(),
            adversarial: questions().filter(|q| q.category == 5).count(),
        }
    }
}

/// Runs every job's searches, `SEARCH_CONCURRENCY` at a time, with
/// progress on stderr; returns the outcomes in job order.
pub(crate) async fn search_questions(
    shared: &Arc<Shared>,
    jobs: Vec<(usize, usize)>,
) -> anyhow::Result<Vec<Outcome>> {
    let jobs = Arc::new(jobs);
    let next = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..SEARCH_CONCURRENCY {
        let (shared, jobs, next, done) = (shared.clone(), jobs.clone(), next.clone(), done.clone());
        workers.spawn(async move {
            let mut outcomes = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(c, q)) = jobs.get(i) else {
                    return anyhow::Ok(outcomes);
                };
                outcomes.push(shared.run(c, q).await?);
                let finished = done.fetch_add(1, Ordering::Relaxed) + 1;
                if finished % 100 == 0 {
                    eprintln!("  {finished}/{} questions", jobs.len());
                }
            }
        });
    }
    let mut outcomes = Vec::with_capacity(jobs.len());
    while let Some(result) = workers.join_next().await {
        outcomes.extend(result??);
    }
    outcomes.sort_by_key(|o| (o.conversation, o.question));
    Ok(outcomes)
}

/// The run's phases in their order: settings, the file, the server, the
/// ingest, the memory survey, the searches, the scores, the report, the
/// dump. Each phase is a function below; this one only threads their
/// results and takes the timings the report's last line gives.
pub async fn locomo(args: LocomoArgs) -> anyhow::Result<()> {
    let started = Instant::now();
    let options = EvalOptions::from_env(&args)?;
    let conversations = read_conversations(&args.file)?;
    let prefix = options.subject_prefix(&args);
    let subjects = subjects_of(&conversations, &prefix);
    let dense_subjects = match &options.dense_prefix {
        Some(p) => subjects_of(&conversations, p),
        None => subjects.clone(),
    };
    let (api, in_process) = connect(&args).await?;
    announce(&conversations, &prefix, options.context, args.skip_ingest);

    let dia_of = ingest_all(
        &api,
        &conversations,
        &subjects,
        &dense_subjects,
        &options,
        args.skip_ingest,
    )
    .await?;
    let ingest_elapsed = started.elapsed();
    survey_memories(&api, &subjects, options.turns_only).await?;

    let jobs = search_jobs(&conversations, &options);
    let search_started = Instant::now();
    let shared = Arc::new(Shared {
        api,
        in_process,
        conversations,
        subjects,
        dense_subjects,
        dia_of,
        modes: options.modes.clone(),
        diagnostics: options.diagnostics,
        turns_only: options.turns_only,
    });
    let outcomes = search_questions(&shared, jobs.jobs).await?;
    let search_elapsed = search_started.elapsed();

    let scores = score(&shared, &outcomes, options.dense_prefix.is_some());
    print_report(
        &args.file,
        &shared,
        &scores,
        outcomes.len(),
        options.dense_prefix.as_deref(),
        &Timings {
            started,
            ingest: ingest_elapsed,
            search: search_elapsed,
        },
    );
    if let Some(path) = &options.dump {
        write_dump(path, &shared, &outcomes)?;
        eprintln!("  per-question lists written to {path}");
    }
    Ok(())
}

/// The modes asked for and the experiment switches of the module docs
/// that shape the whole run. `MNEMO_EVAL_RRF_K` and `MNEMO_EVAL_DATA_DIR`
/// are not here: `connect` reads them, after the file is parsed, so a
/// broken file is still reported before a bad switch, as it always was.
struct EvalOptions {
    modes: Vec<String>,
    /// `MNEMO_EVAL_CONTEXT_TURNS`: previous turns in front of each memory.
    context: usize,
    /// `MNEMO_EVAL_DENSE_PREFIX`: the subjects of the semantic leg.
    dense_prefix: Option<String>,
    /// `MNEMO_EVAL_DIAGNOSTICS`, or implied by the dense prefix.
    diagnostics: bool,
    /// Not `MNEMO_EVAL_ALL_MEMORIES`: search the turn memories only.
    turns_only: bool,
    /// `MNEMO_EVAL_DUMP`: where the per-question lists go.
    dump: Option<String>,
}

impl EvalOptions {
    fn from_env(args: &LocomoArgs) -> anyhow::Result<Self> {
        let modes = parse_modes(&args.modes)?;
        let context = match env_string("MNEMO_EVAL_CONTEXT_TURNS") {
            Some(raw) => raw
                .trim()
                .parse::<usize>()
                .context("MNEMO_EVAL_CONTEXT_TURNS must be a number of turns")?,
            None => 0,
        };
        let dense_prefix = env_string("MNEMO_EVAL_DENSE_PREFIX");
        let diagnostics = env_flag("MNEMO_EVAL_DIAGNOSTICS") || dense_prefix.is_some();
        let turns_only = !env_flag("MNEMO_EVAL_ALL_MEMORIES");
        let dump = env_string("MNEMO_EVAL_DUMP");
        Ok(EvalOptions {
            modes,
            context,
            dense_prefix,
            diagnostics,
            turns_only,
            dump,
        })
    }

    /// `--subject-prefix`, with `-ctx<N>` when memories carry context, so
    /// the two recipes never share a subject.
    fn subject_prefix(&self, args: &LocomoArgs) -> String {
        if self.context > 0 {
            format!("{}-ctx{}", args.subject_prefix, self.context)
        } else {
            args.subject_prefix.clone()
        }
    }
}

fn read_conversations(file: &std::path::Path) -> anyhow::Result<Vec<Conversation>> {
    let raw: Value = serde_json::from_slice(
        &std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?,
    )
    .with_context(|| format!("{} is not JSON", file.display()))?;
    parse_conversations(&raw)
}

/// `<prefix>-<sample_id>` per conversation, in file order.
fn subjects_of(conversations: &[Conversation], prefix: &str) -> Vec<String> {
    conversations
        .iter()
        .map(|c| format!("{prefix}-{}", c.sample_id))
        .collect()
}

/// The API the run talks to: the server at `--url`, or, with
/// `MNEMO_EVAL_DATA_DIR`, an embedded one on that dir with the in-process
/// search beside it (the only place `MNEMO_EVAL_RRF_K` can take effect).
async fn connect(args: &LocomoArgs) -> anyhow::Result<(Api, Option<InProcess>)> {
    let rrf_k = match env_string("MNEMO_EVAL_RRF_K") {
        Some(raw) => raw
            .trim()
            .parse::<u32>()
            .ok()
            .filter(|k| *k > 0)
            .context("MNEMO_EVAL_RRF_K must be a positive integer")?,
        None => DEFAULT_RRF_K,
    };
    let (url, token, in_process) = match env_string("MNEMO_EVAL_DATA_DIR") {
        Some(dir) => {
            anyhow::ensure!(
                args.skip_ingest,
                "MNEMO_EVAL_DATA_DIR is for searching an earlier ingest: pass --skip-ingest"
            );
            let (in_process, local_url, local_token) = start_in_process(&dir, rrf_k).await?;
            (local_url, local_token, Some(in_process))
        }
        None => {
            anyhow::ensure!(
                rrf_k == DEFAULT_RRF_K,
                "MNEMO_EVAL_RRF_K needs MNEMO_EVAL_DATA_DIR (a stopped server's data dir): \
                 a running server fuses with its own constant"
            );
            (args.url.clone(), args.token.clone(), None)
        }
    };
    Ok((Api::new(&url, token)?, in_process))
}

/// The run's first progress line: what is about to be ingested, and where.
fn announce(conversations: &[Conversation], prefix: &str, context: usize, skip_ingest: bool) {
    let turns: usize = conversations.iter().map(|c| c.turns.len()).sum();
    eprintln!(
        "locomo: {} conversations, {turns} turns, subjects {prefix}-<sample_id>{}{}",
        conversations.len(),
        if context > 0 {
            format!(", memories with {context} previous turn(s) of context")
        } else {
            String::new()
        },
        if skip_ingest {
            " (reusing an earlier ingest)"
        } else {
            ""
        }
    );
}

/// Ingests every conversation (or recovers the event ids of an earlier
/// ingest), then recovers those of the dense subjects when the diagnostics
/// take the semantic leg from elsewhere. Returns message event id → dia_id.
async fn ingest_all(
    api: &Api,
    conversations: &[Conversation],
    subjects: &[String],
    dense_subjects: &[String],
    options: &EvalOptions,
    skip_ingest: bool,
) -> anyhow::Result<HashMap<String, String>> {
    let mut dia_of: HashMap<String, String> = HashMap::new();
    for (conversation, subject) in conversations.iter().zip(subjects) {
        let step = Instant::now();
        let events =
            prepare_subject(api, subject, conversation, skip_ingest, options.context).await?;
        dia_of.extend(events.into_iter().map(|(dia, event)| (event, dia)));
        eprintln!(
            "  {subject}: {} turns ready in {:.1} s",
            conversation.turns.len(),
            step.elapsed().as_secs_f64()
        );
    }
    if options.dense_prefix.is_some() {
        for (conversation, subject) in conversations.iter().zip(dense_subjects) {
            let events = prepare_subject(api, subject, conversation, true, 0).await?;
            dia_of.extend(events.into_iter().map(|(dia, event)| (event, dia)));
        }
    }
    Ok(dia_of)
}

/// Reports what else the subjects hold: the consolidator mines the same
/// messages, and may have reinforced or superseded turn memories.
async fn survey_memories(api: &Api, subjects: &[String], turns_only: bool) -> anyhow::Result<()> {
    let mut turn_memories = 0;
    let mut other_memories = 0;
    let mut changed_turn_memories = 0;
    for subject in subjects {
        for memory in api.list_memories(subject, false).await? {
            let is_turn = memory["tags"]
                .as_array()
                .is_some_and(|t| t.iter().any(|t| t.as_str() == Some(TURN_TAG)));
            if is_turn {
                turn_memories += 1;
                if memory["version"].as_u64() != Some(1)
                    || memory["state"].as_str() != Some("active")
                {
                    changed_turn_memories += 1;
                }
            } else {
                other_memories += 1;
            }
        }
    }
    eprintln!(
        "  {turn_memories} turn memories ({changed_turn_memories} since changed by the \
         consolidator: reinforced or superseded), {other_memories} other memories (consolidated \
         from the messages){}",
        if turns_only {
            "; searches see the turn memories only"
        } else {
            "; searches see all of them"
        }
    );
    Ok(())
}

/// Every question of categories 1–4 that has evidence, announced with
/// what was left out and how many searches each will take.
fn search_jobs(conversations: &[Conversation], options: &EvalOptions) -> QuestionJobs {
    let jobs = QuestionJobs::of(conversations);
    eprintln!(
        "  searching {} questions (categories 1–4; {} without valid evidence \
         and {} adversarial skipped) in {} mode(s){}",
        jobs.jobs.len(),
        jobs.skipped_no_evidence,
        jobs.adversarial,
        options.modes.len(),
        if options.diagnostics {
            " plus the keyword and semantic legs"
        } else {
            ""
        }
    );
    jobs
}

/// The recall sums of every list a run scores.
struct Scores {
    /// One per mode, in the order of `Shared::modes`.
    by_mode: Vec<Tally>,
    keyword_leg: Tally,
    semantic_leg: Tally,
    /// The offline RRF of the two legs, per `DIAGNOSTIC_RRF_K`.
    fused: BTreeMap<u32, Tally>,
}

/// Scores every outcome; the legs and their fusions only with the
/// diagnostics, fused `by_provenance` when they come from other subjects.
fn score(shared: &Shared, outcomes: &[Outcome], by_provenance: bool) -> Scores {
    let mut tallies = vec![Tally::default(); shared.modes.len()];
    let mut keyword_leg = Tally::default();
    let mut semantic_leg = Tally::default();
    let mut fused: BTreeMap<u32, Tally> = BTreeMap::new();
    for outcome in outcomes {
        let q = &shared.conversations[outcome.conversation].questions[outcome.question];
        for (tally, list) in tallies.iter_mut().zip(&outcome.by_mode) {
            tally.add(q.category, &q.evidence, list);
        }
        if shared.diagnostics {
            keyword_leg.add(q.category, &q.evidence, &outcome.keyword_leg);
            semantic_leg.add(q.category, &q.evidence, &outcome.semantic_leg);
            for k in DIAGNOSTIC_RRF_K {
                let list = rrf(
                    &outcome.semantic_leg,
                    &outcome.keyword_leg,
                    k,
                    by_provenance,
                );
                fused
                    .entry(k)
                    .or_default()
                    .add(q.category, &q.evidence, &list);
            }
        }
    }
    Scores {
        by_mode: tallies,
        keyword_leg,
        semantic_leg,
        fused,
    }
}

/// When the run started and how long its ingest and searches took.
struct Timings {
    started: Instant,
    /// From the start (settings and file included) to the end of the ingest.
    ingest: Duration,
    search: Duration,
}

/// The stdout report: one table per mode, the diagnostics, and the totals
/// line (whose elapsed time is taken as it prints, as it always was).
fn print_report(
    file: &std::path::Path,
    shared: &Shared,
    scores: &Scores,
    questions: usize,
    dense_prefix: Option<&str>,
    timings: &Timings,
) {
    println!(
        "## LoCoMo recall@k ({}, {} questions of categories 1–4, k = {SEARCH_K} per search{})",
        file.display(),
        questions,
        if shared.turns_only {
            ", one memory per turn"
        } else {
            ", every memory of the subject"
        }
    );
    let served = match &shared.in_process {
        Some(in_process) => format!(
            "as served by find() in process, RRF k = {}, MMR lambda {}",
            in_process.rrf_k, in_process.state.ranking.mmr_lambda
        ),
        None => "as served".to_owned(),
    };
    for (mode, tally) in shared.modes.iter().zip(&scores.by_mode) {
        tally.print(&format!("{mode} ({served})"));
    }
    if shared.diagnostics {
        print_diagnostics(shared, scores, dense_prefix, &served);
    }
    println!(
        "\n{} questions, {} searches, elapsed {:.1} s (ingest {:.1} s, search {:.1} s)",
        questions,
        questions * (shared.modes.len() + if shared.diagnostics { 2 } else { 0 }),
        timings.started.elapsed().as_secs_f64(),
        timings.ingest.as_secs_f64(),
        timings.search.as_secs_f64()
    );
}

/// The diagnostics table: the raw legs, their offline fusions, and the
/// modes as served, one summary row each.
fn print_diagnostics(shared: &Shared, scores: &Scores, dense_prefix: Option<&str>, served: &str) {
    println!(
        "\n### diagnostics: raw legs and offline RRF (categories 1–4)\n\n\
         Each leg is the API's single-mode search with k = {LEG_K}, re-sorted by its raw \
         score (BM25 or cosine), i.e. without the final ranking and MMR; fusion is Qdrant's \
         RRF (1 / (k + r)) over those two top-{LEG_K} lists{}.\n",
        match dense_prefix {
            Some(p) =>
                format!(", the semantic leg from the subjects {p}-<sample_id>, fused by provenance"),
            None => String::new(),
        }
    );
    let header: Vec<String> = CUTOFFS.iter().map(|k| format!("R@{k}")).collect();
    println!("| list | n | {} |", header.join(" | "));
    println!("|---|---:|{}", "---:|".repeat(CUTOFFS.len()));
    println!("{}", scores.keyword_leg.summary_row("keyword leg (BM25)"));
    println!(
        "{}",
        scores.semantic_leg.summary_row("semantic leg (cosine)")
    );
    for (k, tally) in &scores.fused {
        println!(
            "{}",
            tally.summary_row(&format!("RRF k={k}, no ranking/MMR"))
        );
    }
    for (mode, tally) in shared.modes.iter().zip(&scores.by_mode) {
        println!("{}", tally.summary_row(&format!("{mode} {served}")));
    }
}

/// Starts an embedded server on `dir` in this process (for the message
/// posts that recover the event ids) and a retriever state beside it with
/// RRF constant `rrf_k`; returns it with the server's URL and a token of
/// the tenant `MNEMO_EVAL_TENANT` (default `eval`). Settings (embedder and
/// so on) come from the environment, as for `mnemo serve`.
async fn start_in_process(dir: &str, rrf_k: u32) -> anyhow::Result<(InProcess, String, String)> {
    let settings = mnemo_config::load(&Overrides {
        config_file: None,
        data_dir: Some(dir.into()),
        listen: Some("127.0.0.1:0".into()),
    })?;
    anyhow::ensure!(
        settings.database_file().exists(),
        "{} holds no database",
        settings.data_dir.display()
    );
    let secret_file = settings.dev_secret_file();
    let app = mnemo_app::Application::build(settings.clone())
        .await
        .context("cannot open the data dir in process (is a server still running on it?)")?;
    let url = format!("http://127.0.0.1:{}", app.port());
    let index = app
        .vector_index()
        .expect("the embedded server runs every role");
    tokio::spawn(app.run());
    let tenant = TenantId::parse(env_string("MNEMO_EVAL_TENANT").unwrap_or_else(|| "eval".into()))
        .context("invalid MNEMO_EVAL_TENANT")?;
    let token = mint_eval_token(&settings, &secret_file, &tenant)?;
    let embedder = mnemo_app::vectors::build_embedder(&settings).await?;
    let (mut state, _pool) =
        crate::bench_search::retriever_beside(&settings, index, embedder, rrf_k).await?;
    if let Some(raw) = env_string("MNEMO_EVAL_MMR_LAMBDA") {
        state.ranking.mmr_lambda = raw
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|l| (0.0..=1.0).contains(l))
            .context("MNEMO_EVAL_MMR_LAMBDA must be between 0 and 1")?;
    }
    eprintln!(
        "  in process on {}: find() with RRF k = {rrf_k}, MMR lambda {}, tenant {tenant}",
        settings.data_dir.display(),
        state.ranking.mmr_lambda
    );
    let principal = Principal {
        tenant,
        actor: "eval".into(),
        scopes: Scope::ALL.iter().copied().collect(),
        subject: None,
        token_id: None,
    };
    Ok((
        InProcess {
            state,
            principal,
            rrf_k,
        },
        url,
        token,
    ))
}

/// A day's token with every scope for `tenant`, signed as the server on
/// `settings` verifies it (its HS256 secret, or the data dir's dev secret
/// in `secret_file`).
pub(crate) fn mint_eval_token(
    settings: &mnemo_config::Settings,
    secret_file: &std::path::Path,
    tenant: &TenantId,
) -> anyhow::Result<String> {
    let secret = match &settings.auth.hs256_secret {
        Some(secret) => secret.expose_secret().as_bytes().to_vec(),
        None => mnemo_app::secrets::load_or_create_dev_secret(secret_file)?.0,
    };
    Ok(
        Minter::hs256(&secret, &settings.auth.issuer, &settings.auth.audience).mint(
            &MintRequest {
                tenant: tenant.clone(),
                actor: "eval".into(),
                scopes: Scope::ALL.to_vec(),
                subject: None,
                ttl: Duration::from_secs(86_400),
            },
        )?,
    )
}

fn write_dump(path: &str, shared: &Shared, outcomes: &[Outcome]) -> anyhow::Result<()> {
    let mut out = std::io::BufWriter::new(
        std::fs::File::create(path).with_context(|| format!("cannot create {path}"))?,
    );
    let turns =
        |list: &[Retrieved]| -> Vec<Vec<String>> { list.iter().map(|r| r.turns.clone()).collect() };
    for outcome in outcomes {
        let conversation = &shared.conversations[outcome.conversation];
        let q = &conversation.questions[outcome.question];
        let mut lists = serde_json::Map::new();
        for (mode, list) in shared.modes.iter().zip(&outcome.by_mode) {
            lists.insert(mode.clone(), json!(turns(list)));
        }
        if shared.diagnostics {
            lists.insert("keyword_leg".into(), json!(turns(&outcome.keyword_leg)));
            lists.insert("semantic_leg".into(), json!(turns(&outcome.semantic_leg)));
        }
        let line = json!({
            "sample_id": conversation.sample_id,
            "question": q.text,
            "category": q.category,
            "evidence": q.evidence,
            "lists": lists,
        });
        writeln!(out, "{line}")?;
    }
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_dates_parse_as_utc() {
        let at = parse_session_date("1:56 pm on 8 May, 2023").unwrap();
        assert_eq!(at.to_rfc3339(), "2023-05-08T13:56:00+00:00");
        let at = parse_session_date("10:04 am on 19 December, 2023").unwrap();
        assert_eq!(at.to_rfc3339(), "2023-12-19T10:04:00+00:00");
        assert!(parse_session_date("yesterday").is_none());
    }

    #[test]
    fn evidence_is_cleaned_like_the_regex() {
        assert_eq!(evidence_ids("D1:3"), vec!["D1:3"]);
        assert_eq!(evidence_ids("D8:6; D9:17"), vec!["D8:6", "D9:17"]);
        assert_eq!(evidence_ids("D:11:26"), vec!["D11:26"]);
        assert!(evidence_ids("D").is_empty());
        assert!(evidence_ids("D1").is_empty());
        assert_eq!(evidence_ids("DD2:4"), vec!["D2:4"]);
    }

    fn item(key: &str, turns: &[&str]) -> Retrieved {
        Retrieved {
            key: key.to_owned(),
            turns: turns.iter().map(|t| (*t).to_owned()).collect(),
            fused: 0.0,
        }
    }

    #[test]
    fn recall_counts_evidence_in_the_top_k() {
        let evidence = vec!["D1:1".to_owned(), "D1:2".to_owned()];
        let ranked = vec![
            item("a", &["D1:2"]),
            item("b", &["D3:3"]),
            item("c", &["D1:1"]),
        ];
        assert_eq!(recall(&evidence, &ranked, 1), 0.5);
        assert_eq!(recall(&evidence, &ranked, 2), 0.5);
        assert_eq!(recall(&evidence, &ranked, 3), 1.0);
    }

    #[test]
    fn rrf_prefers_items_in_both_legs() {
        let dense = vec![item("a", &["D1:1"]), item("c", &["D1:3"])];
        let sparse = vec![item("b", &["D1:2"]), item("c", &["D1:3"])];
        let fused = rrf(&dense, &sparse, 60, false);
        assert_eq!(fused[0].key, "c");
        assert_eq!(fused.len(), 3);
        // By provenance, memories of different subjects with the same turn merge.
        let other = vec![item("x", &["D1:3"])];
        assert_eq!(rrf(&other, &sparse, 10, true)[0].turns, vec!["D1:3"]);
    }

    #[test]
    fn context_is_taken_from_the_same_session_only() {
        let turn = |id: &str, session| Turn {
            dia_id: id.to_owned(),
            content: id.to_owned(),
            timestamp: None,
            session,
        };
        let turns = vec![turn("D1:1", 1), turn("D1:2", 1), turn("D2:1", 2)];
        assert_eq!(memory_contents(&turns, 0), vec!["D1:1", "D1:2", "D2:1"]);
        assert_eq!(
            memory_contents(&turns, 1),
            vec!["D1:1", "D1:1\nD1:2", "D2:1"]
        );
    }
}
