//! `mnemo eval locomo --via messages`: LoCoMo recall measured the way users
//! use mnemo. Each conversation is posted through
//! `POST /v1/subjects/{s}/messages` (content `"<speaker>: <text>"`, one
//! session per LoCoMo session, timestamps from the session dates, message
//! id = `dia_id`), consolidation is asked for, and the run waits until the
//! subject is consolidated and indexed, timing it. Then every question of
//! categories 1–4 goes to `search` (k = 25, memories and episodes) and to
//! `context` (the question as the last user message, `token_budget` 1000).
//!
//! Scoring is by provenance: a result stands for the messages its
//! `provenance.source_event_ids` names (a memory's sources, an episode's
//! own turns), mapped back to `dia_id`s. Recall@k is the share of a
//! question's evidence turns among the first k results' turns; R@context
//! the share among everything the context block holds.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde_json::{json, Value};

use crate::eval::{
    parse_conversations, recall, retrieved, Api, Conversation, QuestionJobs, Retrieved, Tally,
    CATEGORY_NAMES, SEARCH_K,
};

/// Messages per request, as a client streaming a conversation would send.
pub const POST_BATCH: usize = 50;
/// The context budget the measure names.
pub const CONTEXT_BUDGET: usize = 1_000;
const SEARCH_CONCURRENCY: usize = 4;
/// How long the run waits for indexing or consolidation to move: the
/// episode projection's lag (`/readyz`) falling counts as moving, so a
/// slow machine is waited for and a stuck projection is not.
const STALL: Duration = Duration::from_secs(180);

/// The episode projection's lag from `/readyz`, when the server reports it.
async fn episode_lag(api: &Api) -> Option<u64> {
    let ready = api.get("/readyz").await.ok()?;
    ready["consumer_lag"]["retriever.episode-projection"].as_u64()
}

/// Whether every appended event is relayed and the memory projection has
/// consumed it (`/readyz`); false when the server does not say.
async fn memories_projected(api: &Api) -> bool {
    let Ok(ready) = api.get("/readyz").await else {
        return false;
    };
    ready["relay_lag"].as_u64() == Some(0)
        && ready["consumer_lag"]["retriever.memory-projection"].as_u64() == Some(0)
}

#[derive(Debug, Clone)]
pub struct ViaMessagesArgs {
    pub file: std::path::PathBuf,
    pub url: String,
    pub token: String,
    pub subject_prefix: String,
    /// Ask the questions of an earlier run's subjects: the messages are
    /// posted again (all duplicates, which gives back their event ids) and
    /// nothing is waited for.
    pub skip_ingest: bool,
}

/// What the searches ask for besides the question, for experiments:
/// `MNEMO_EVAL_INCLUDE` (`memories`, `episodes`, or both, comma-separated)
/// `MNEMO_EVAL_WINDOW` (0–2) and `MNEMO_EVAL_FEEDBACK` (`1`: the second,
/// feedback pass). Unset: the API's defaults.
fn search_extras() -> anyhow::Result<Value> {
    let mut extras = json!({});
    if let Ok(include) = std::env::var("MNEMO_EVAL_INCLUDE") {
        extras["include"] = json!(include.split(',').map(str::trim).collect::<Vec<_>>());
    }
    if let Ok(feedback) = std::env::var("MNEMO_EVAL_FEEDBACK") {
        extras["feedback"] = json!(matches!(feedback.trim(), "1" | "true"));
    }
    if let Ok(window) = std::env::var("MNEMO_EVAL_WINDOW") {
        extras["window"] = json!(window.trim().parse::<u8>().context("MNEMO_EVAL_WINDOW")?);
    }
    Ok(extras)
}

/// One conversation after ingest: its subject and event id → dia_id.
struct Ingested {
    subject: String,
    dia_of: HashMap<String, String>,
    /// Seconds from the first post until the last message's episode was
    /// searchable, and until consolidation was projected too.
    episodes_searchable: f64,
    consolidated: f64,
    memories: usize,
}

fn session_id(session: u32) -> String {
    format!("session_{session}")
}

/// Posts a conversation's turns in batches; returns event id → dia_id and
/// the last message's event id.
async fn post_conversation(
    api: &Api,
    subject: &str,
    conversation: &Conversation,
    again: bool,
) -> anyhow::Result<(HashMap<String, String>, String)> {
    let mut dia_of = HashMap::with_capacity(conversation.turns.len());
    let mut last = String::new();
    for batch in conversation.turns.chunks(POST_BATCH) {
        let messages: Vec<Value> = batch
            .iter()
            .map(|turn| {
                let mut message = json!({
                    "id": turn.dia_id,
                    "role": "user",
                    "content": turn.content,
                    "session": session_id(turn.session),
                });
                if let Some(at) = turn.timestamp {
                    message["timestamp"] = json!(at.to_rfc3339());
                }
                message
            })
            .collect();
        let accepted = api
            .post(
                &format!("/v1/subjects/{subject}/messages"),
                &json!({ "messages": messages }),
                true,
            )
            .await?;
        let events = accepted["events"]
            .as_array()
            .context("messages response without events")?;
        anyhow::ensure!(events.len() == batch.len(), "messages response is short");
        for (turn, event) in batch.iter().zip(events) {
            let event_id = event["event_id"]
                .as_str()
                .context("messages response without event_id")?;
            if !again && event["duplicate"].as_bool() == Some(true) {
                bail!(
                    "{subject}: {} was posted before; use a fresh --subject-prefix",
                    turn.dia_id
                );
            }
            dia_of.insert(event_id.to_owned(), turn.dia_id.clone());
            last = event_id.to_owned();
        }
    }
    Ok((dia_of, last))
}

/// Waits until searching the subject's episodes for the text the last turn
/// is indexed under (the turn before it and itself) returns that turn:
/// messages are indexed in order, so then all are.
///
/// The search is asked only once the episode projection reports no lag
/// (a cheap `/readyz` read), and for 10 results: a measuring loop that
/// searched hard every 250 ms took a fifth of the server's CPU from the
/// indexing it was timing.
async fn wait_for_episodes(
    api: &Api,
    subject: &str,
    last_text: &str,
    last_event: &str,
) -> anyhow::Result<()> {
    let mut moved = Instant::now();
    let mut lag = episode_lag(api).await;
    let query: String = last_text.chars().take(2_000).collect();
    loop {
        if lag.is_some_and(|behind| behind > 0) {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let now = episode_lag(api).await;
            if matches!((now, lag), (Some(now), Some(before)) if now < before) {
                moved = Instant::now();
            }
            lag = now;
            if moved.elapsed() > STALL {
                bail!("{subject}: the episode projection stopped moving (lag {lag:?})");
            }
            continue;
        }
        let found = api
            .post(
                &format!("/v1/subjects/{subject}/search"),
                &json!({"query": query, "include": ["episodes"], "k": 10, "mode": "keyword"}),
                true,
            )
            .await?;
        let hit = found["results"].as_array().into_iter().flatten().any(|r| {
            r["provenance"]["source_event_ids"]
                .as_array()
                .is_some_and(|ids| ids.iter().any(|id| id == last_event))
        });
        if hit {
            return Ok(());
        }
        let now = episode_lag(api).await;
        if matches!((now, lag), (Some(now), Some(before)) if now < before) {
            moved = Instant::now();
        }
        lag = now;
        if moved.elapsed() > STALL {
            bail!("{subject}: the last message never became searchable and the episode projection stopped moving (lag {lag:?})");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Messages the subject's `BatchConsolidated` events account for.
async fn consolidated_messages(api: &Api, subject: &str) -> anyhow::Result<u64> {
    let mut total = 0;
    let mut cursor: Option<i64> = None;
    loop {
        let mut path = format!("/v1/audit?subject={subject}&type=BatchConsolidated&limit=500");
        if let Some(cursor) = cursor {
            path.push_str(&format!("&cursor={cursor}"));
        }
        let page = api.get(&path).await?;
        for event in page["events"].as_array().into_iter().flatten() {
            total += event["payload"]["messages"].as_u64().unwrap_or(0);
        }
        match page["next_cursor"].as_i64() {
            Some(next) => cursor = Some(next),
            None => return Ok(total),
        }
    }
}

/// Asks for consolidation and waits until every posted message is
/// accounted for, the memory events are relayed and projected (`/readyz`:
/// no relay lag, no memory-projection lag) and the memory list has
/// stopped growing. Returns the memories listed, and when (seconds after
/// `since`) the messages were accounted for and projected: before the
/// settling wait, and apart from the episodes' wait it runs beside. (The
/// list's settling alone is not enough: memories reach the list through
/// the relay and the projection, a while after their batches are counted,
/// and a list read before they do is short; runs before this check
/// undercounted by up to half a conversation's memories, and timed
/// "consolidated" before they were searchable.)
async fn consolidate(
    api: &Api,
    subject: &str,
    posted: u64,
    since: Instant,
) -> anyhow::Result<(usize, f64)> {
    api.post(
        &format!("/v1/subjects/{subject}/consolidate"),
        &json!({}),
        true,
    )
    .await?;
    let started = Instant::now();
    while consolidated_messages(api, subject).await? < posted {
        if started.elapsed() > STALL {
            bail!("{subject}: consolidation did not account for {posted} messages");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let started = Instant::now();
    while !memories_projected(api).await {
        if started.elapsed() > STALL {
            bail!("{subject}: the memory projection did not catch up");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let consolidated = since.elapsed().as_secs_f64();
    let mut listed = api.list_memories(subject, false).await?.len();
    let mut stable_since = Instant::now();
    while stable_since.elapsed() < Duration::from_millis(600) {
        tokio::time::sleep(Duration::from_millis(150)).await;
        let now = api.list_memories(subject, false).await?.len();
        if now != listed {
            listed = now;
            stable_since = Instant::now();
        }
    }
    Ok((listed, consolidated))
}

async fn ingest(
    api: &Api,
    subject: String,
    conversation: &Conversation,
    skip: bool,
) -> anyhow::Result<Ingested> {
    let started = Instant::now();
    let (dia_of, last_event) = post_conversation(api, &subject, conversation, skip).await?;
    if skip {
        let memories = api.list_memories(&subject, false).await?.len();
        return Ok(Ingested {
            subject,
            dia_of,
            episodes_searchable: 0.0,
            consolidated: 0.0,
            memories,
        });
    }
    let last_text = conversation
        .turns
        .iter()
        .rev()
        .take(2)
        .rev()
        .map(|t| t.content.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    let last_text = &last_text;
    // Each wait reads its own time: joined, they end together.
    let consolidation = consolidate(api, &subject, conversation.turns.len() as u64, started);
    let episodes = async {
        wait_for_episodes(api, &subject, last_text, &last_event).await?;
        anyhow::Ok(started.elapsed().as_secs_f64())
    };
    let ((memories, consolidated), episodes_searchable) =
        tokio::try_join!(consolidation, episodes)?;
    Ok(Ingested {
        subject,
        dia_of,
        episodes_searchable,
        consolidated,
        memories,
    })
}

/// What one question retrieved: the search list and the context's items.
struct Answered {
    category: u8,
    evidence: Vec<String>,
    search: Vec<Retrieved>,
    context: Vec<Retrieved>,
    context_tokens: u64,
}

async fn ask(
    api: &Api,
    ingested: &Ingested,
    question: &str,
    extras: &Value,
) -> anyhow::Result<(Vec<Retrieved>, Vec<Retrieved>, u64)> {
    let subject = &ingested.subject;
    let mut body = json!({"query": question, "k": SEARCH_K});
    merge(&mut body, extras);
    let found = api
        .post(&format!("/v1/subjects/{subject}/search"), &body, true)
        .await?;
    let search = retrieved(&found, &ingested.dia_of);
    let mut body = json!({
        "messages": [{"role": "user", "content": question}],
        "token_budget": CONTEXT_BUDGET,
        "max_memories": SEARCH_K,
    });
    merge(&mut body, extras);
    let context = api
        .post(&format!("/v1/subjects/{subject}/context"), &body, true)
        .await?;
    let mut items = retrieved(&json!({"results": context["memories"]}), &ingested.dia_of);
    items.extend(retrieved(
        &json!({"results": context["episodes"]}),
        &ingested.dia_of,
    ));
    Ok((search, items, context["tokens"].as_u64().unwrap_or(0)))
}

/// With `MNEMO_EVAL_DUMP=FILE`: a line per question with its evidence and
/// the first [`DUMP_K`] search results, each with its turns, text and
/// score components, for trying ranking ideas offline on the same
/// candidates. The file holds the corpus's text: keep it with the data.
const DUMP_K: usize = 100;

async fn dump_line(
    api: &Api,
    ingested: &Ingested,
    question: &crate::eval::Question,
    extras: &Value,
) -> anyhow::Result<String> {
    let mut body = json!({"query": question.text, "k": DUMP_K});
    merge(&mut body, extras);
    let found = api
        .post(
            &format!("/v1/subjects/{}/search", ingested.subject),
            &body,
            true,
        )
        .await?;
    let turns = retrieved(&found, &ingested.dia_of);
    let results: Vec<Value> = found["results"]
        .as_array()
        .into_iter()
        .flatten()
        .zip(turns)
        .map(|(result, turns)| {
            let text = result["memory"]["content"]
                .as_str()
                .or_else(|| result["episode"]["content"].as_str());
            json!({
                "type": result["type"],
                "turns": turns.turns,
                "text": text,
                "timestamp": result["episode"]["timestamp"],
                "dates": result["episode"]["dates"],
                "components": result["components"],
                "score": result["score"],
            })
        })
        .collect();
    Ok(json!({
        "subject": ingested.subject,
        "question": question.text,
        "category": question.category,
        "evidence": question.evidence,
        "results": results,
    })
    .to_string())
}

fn merge(body: &mut Value, extras: &Value) {
    if let (Some(body), Some(extras)) = (body.as_object_mut(), extras.as_object()) {
        body.extend(extras.clone());
    }
}

pub async fn via_messages(args: ViaMessagesArgs) -> anyhow::Result<()> {
    let extras = Arc::new(search_extras()?);
    let raw: Value = serde_json::from_slice(
        &std::fs::read(&args.file)
            .with_context(|| format!("cannot read {}", args.file.display()))?,
    )?;
    let conversations = parse_conversations(&raw)?;
    let api = Api::new(&args.url, args.token.clone())?;
    let turns: usize = conversations.iter().map(|c| c.turns.len()).sum();
    eprintln!(
        "locomo via messages: {} conversations, {turns} turns, subjects {}-<sample_id>",
        conversations.len(),
        args.subject_prefix
    );

    let mut ingested = Vec::with_capacity(conversations.len());
    for conversation in &conversations {
        let subject = format!("{}-{}", args.subject_prefix, conversation.sample_id);
        let done = ingest(&api, subject, conversation, args.skip_ingest).await?;
        eprintln!(
            "  {}: {} messages; episodes searchable after {:.1} s, consolidated after {:.1} s, {} memories",
            done.subject,
            conversation.turns.len(),
            done.episodes_searchable,
            done.consolidated,
            done.memories
        );
        ingested.push(done);
    }

    let jobs = QuestionJobs::of(&conversations).jobs;
    let started = Instant::now();
    let shared = Arc::new((api, ingested, conversations));
    let next = Arc::new(AtomicUsize::new(0));
    let jobs = Arc::new(jobs);
    let mut workers = tokio::task::JoinSet::new();
    let dump = match std::env::var_os("MNEMO_EVAL_DUMP") {
        Some(path) => Some(Arc::new(tokio::sync::Mutex::new(
            std::fs::File::create(&path).context("MNEMO_EVAL_DUMP")?,
        ))),
        None => None,
    };
    for _ in 0..SEARCH_CONCURRENCY {
        let (shared, next, jobs, extras, dump) = (
            shared.clone(),
            next.clone(),
            jobs.clone(),
            extras.clone(),
            dump.clone(),
        );
        workers.spawn(async move {
            let (api, ingested, conversations) = &*shared;
            let mut answered = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(c, q)) = jobs.get(i) else {
                    return anyhow::Ok(answered);
                };
                let question = &conversations[c].questions[q];
                let (search, context, context_tokens) =
                    ask(api, &ingested[c], &question.text, &extras).await?;
                if let Some(dump) = &dump {
                    let line = dump_line(api, &ingested[c], question, &extras).await?;
                    let mut file = dump.lock().await;
                    use std::io::Write as _;
                    writeln!(file, "{line}")?;
                }
                answered.push(Answered {
                    category: question.category,
                    evidence: question.evidence.clone(),
                    search,
                    context,
                    context_tokens,
                });
            }
        });
    }
    let mut answered = Vec::new();
    while let Some(done) = workers.join_next().await {
        answered.extend(done??);
    }
    let (_, ingested, conversations) = &*shared;
    print!(
        "{}",
        report(&answered, ingested, conversations, started.elapsed())
    );
    Ok(())
}

/// The markdown report.
fn report(
    answered: &[Answered],
    ingested: &[Ingested],
    conversations: &[Conversation],
    search_time: Duration,
) -> String {
    let mut tally = Tally::default();
    let mut context_sums = [0.0f64; 4];
    let mut context_n = [0usize; 4];
    let mut tokens = 0u64;
    for a in answered {
        tally.add(a.category, &a.evidence, &a.search);
        let c = usize::from(a.category - 1);
        context_sums[c] += recall(&a.evidence, &a.context, usize::MAX);
        context_n[c] += 1;
        tokens += a.context_tokens;
    }
    let mut out = String::from(
        "\n### LoCoMo evidence recall through posted messages (search k = 25; context budget 1000)\n\n",
    );
    out.push_str(&tally.table());
    out.push_str("\n| category | R@context |\n|---|---:|\n");
    for (c, name) in CATEGORY_NAMES.iter().enumerate() {
        out.push_str(&format!(
            "| {} {name} | {} |\n",
            c + 1,
            percent(context_sums[c], context_n[c])
        ));
    }
    out.push_str(&format!(
        "| **1–4** | {} |\n",
        percent(context_sums.iter().sum(), context_n.iter().sum())
    ));
    let messages: usize = conversations.iter().map(|c| c.turns.len()).sum();
    let memories: usize = ingested.iter().map(|i| i.memories).sum();
    let mut searchable: Vec<f64> = ingested.iter().map(|i| i.episodes_searchable).collect();
    let mut consolidated: Vec<f64> = ingested.iter().map(|i| i.consolidated).collect();
    out.push_str(&format!(
        "\nquestions {}; mean context tokens {:.0}; memories per 100 messages {:.1}\n",
        answered.len(),
        tokens as f64 / answered.len().max(1) as f64,
        100.0 * memories as f64 / messages.max(1) as f64,
    ));
    let waited: f64 = ingested.iter().map(|i| i.episodes_searchable).sum();
    if waited == 0.0 {
        // Reused subjects (`--skip-ingest`): nothing was timed.
        out.push_str(&format!(
            "questions answered in {:.1} s\n",
            search_time.as_secs_f64()
        ));
        return out;
    }
    out.push_str(&format!(
        "time to searchable per conversation (posted in batches of {POST_BATCH}): episodes median {:.1} s \
         (max {:.1} s), consolidated and projected median {:.1} s (max {:.1} s); \
         {:.0} messages/s to searchable overall; questions answered in {:.1} s\n",
        median(&mut searchable),
        searchable.iter().cloned().fold(0.0, f64::max),
        median(&mut consolidated),
        consolidated.iter().cloned().fold(0.0, f64::max),
        messages as f64 / waited,
        search_time.as_secs_f64()
    ));
    out
}

fn percent(sum: f64, n: usize) -> String {
    if n == 0 {
        "–".to_owned()
    } else {
        format!("{:.1}", 100.0 * sum / n as f64)
    }
}

fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scoring on a hand-made conversation with known answers: the
    /// search list and the context are scored by the turns their
    /// provenance names.
    #[test]
    fn recall_is_scored_by_provenance_per_category() {
        let dia_of: HashMap<String, String> = [("e1", "D1:1"), ("e2", "D1:2"), ("e3", "D2:1")]
            .into_iter()
            .map(|(e, d)| (e.to_owned(), d.to_owned()))
            .collect();
        let results = json!({"results": [
            {"type": "episode", "episode": {"id": "e3"}, "provenance": {"source_event_ids": ["e3"]}},
            {"type": "memory", "memory": {"id": "m1", "provenance": {"source_event_ids": ["e1"]}},
             "provenance": {"source_event_ids": ["e1", "e2"]}},
        ]});
        let search = retrieved(&results, &dia_of);
        assert_eq!(search[0].turns, ["D2:1"]);
        assert_eq!(search[1].turns, ["D1:1", "D1:2"]);
        let answered = vec![
            Answered {
                category: 1,
                evidence: vec!["D1:1".into(), "D1:2".into()],
                search: search.clone(),
                context: search[..1].to_vec(),
                context_tokens: 100,
            },
            Answered {
                category: 2,
                evidence: vec!["D2:1".into()],
                search: search.clone(),
                context: search.clone(),
                context_tokens: 300,
            },
        ];
        let conversations = vec![];
        let ingested = vec![];
        let table = report(&answered, &ingested, &conversations, Duration::ZERO);
        // Multi-hop: both evidence turns only at rank 2 → R@1 0, R@5 100.
        assert!(
            table.contains("| 1 multi-hop | 1 | 0.0 | 100.0 | 100.0 | 100.0 |"),
            "{table}"
        );
        assert!(
            table.contains("| 2 temporal | 1 | 100.0 | 100.0 | 100.0 | 100.0 |"),
            "{table}"
        );
        // The first context held only the episode: none of its evidence.
        assert!(table.contains("| 1 multi-hop | 0.0 |"), "{table}");
        assert!(table.contains("| 2 temporal | 100.0 |"), "{table}");
        assert!(table.contains("| **1–4** | 50.0 |"), "{table}");
        assert!(table.contains("mean context tokens 200"), "{table}");
    }
}
