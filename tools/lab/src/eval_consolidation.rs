//! `mnemo eval consolidation FILE`: replays a conversation set in the
//! LoCoMo shape through consolidation, with whatever LLM the environment
//! configures (`MNEMO_LLM_*`; the rules when none), and reports what the
//! consolidation made of it and what it cost.
//!
//! Everything runs in this process: an [`Application`](mnemo_app::Application)
//! on a fresh temporary data dir (or `--data-dir`), with the settings of the
//! environment as `mnemo serve` reads them, except that every consolidation
//! policy makes batches of 10 and never consolidates on idleness (only
//! batches of 10 and the explicit request below). For each conversation
//! (subject `<prefix>-<sample_id>`, the first `--limit` of the file):
//! 1. every turn is posted as a user message, as `eval locomo` posts it
//!    (`id` = its `dia_id`, content `"<speaker>: <text>"`, timestamp its
//!    session's date);
//! 2. consolidation is requested (`POST …/consolidate`) and the run waits
//!    until the `BatchConsolidated` records of the subject
//!    (`consolidation-<subject>`) account for every message posted, then
//!    until the memory list holds every memory they created and is stable
//!    (the projection caught up).
//!
//! The report (markdown on stdout, progress on stderr):
//! - messages, memories created and active at the end, memories per 100
//!   messages;
//! - LLM calls and tokens per 100 messages and the estimated cost per 100
//!   messages (`MNEMO_LLM_PRICE_INPUT_PER_MILLION` / `_OUTPUT_`, 0 when
//!   unset); the batches that fell back to the rules, by reason;
//! - the routing split of the candidates (memory / review / discarded);
//! - the duplicate rate: the share of active memories with another active
//!   memory of the same subject at `text_overlap` ≥ 0.8;
//! - LoCoMo recall@k (k = 1, 5, 10, 25; categories 1–4, 5 skipped) as
//!   `eval locomo` defines it, but searching the consolidated memories
//!   (hybrid, k = 25): a memory counts as the turns its provenance names
//!   (source event ids → the message ids posted → dia_ids).
//!
//! `mnemo dev llm` is a deterministic stand-in for a model: with it, the
//! run measures the pipeline around the model, not extraction quality.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use mnemo_config::{Overrides, Settings};
use mnemo_consolidator::pipeline::text_overlap;
use mnemo_domain::events::{streams, BatchConsolidated, Route};
use mnemo_domain::{SubjectId, TenantId};
use mnemo_event_store::sealed::SealedLog;
use serde_json::{json, Value};

use crate::eval::{
    mint_eval_token, parse_conversations, search_questions, Api, QuestionJobs, Shared, Tally,
    CUTOFFS, SEARCH_K,
};

#[derive(Debug, Clone)]
pub struct ConsolidationArgs {
    /// A JSON list of conversations in the LoCoMo shape.
    pub file: PathBuf,
    /// Where the run keeps its data; default: a temporary dir, removed after.
    pub data_dir: Option<PathBuf>,
    /// Only the first N conversations.
    pub limit: Option<usize>,
    /// Subject ids are `<prefix>-<sample_id>`.
    pub subject_prefix: String,
}

/// Messages per batch in the evaluation, whatever the configuration says.
pub const BATCH_SIZE: usize = 10;
/// An idle timeout no run reaches: only full batches and the explicit
/// request consolidate.
const NO_IDLE: Duration = Duration::from_secs(365 * 86_400);
/// Two active memories of a subject at least this close (bigram Dice) are
/// counted as duplicates.
pub const DUPLICATE_OVERLAP: f32 = 0.8;
/// How long consolidation or the projection may show no progress.
const STALL: Duration = Duration::from_secs(600);
const TENANT: &str = "eval";

/// Where the candidates went, summed over the batches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Routing {
    pub memory: usize,
    pub review: usize,
    pub discarded: usize,
}

impl Routing {
    pub fn total(&self) -> usize {
        self.memory + self.review + self.discarded
    }
}

/// What a run measured.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub file: String,
    /// `llm (<model>)` or `rules`.
    pub configured: String,
    pub conversations: usize,
    pub messages: usize,
    pub batches: usize,
    /// Batches per strategy that answered (`llm`, `rules`).
    pub batches_by_strategy: BTreeMap<String, usize>,
    pub memories_created: u64,
    pub memories_active: usize,
    pub reinforced: u64,
    pub superseded: u64,
    pub reviews_requested: usize,
    pub llm_calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub price_input_per_million: f64,
    pub price_output_per_million: f64,
    /// Batches the rules consolidated instead of the LLM, by reason.
    pub fallbacks: BTreeMap<String, usize>,
    pub routing: Routing,
    /// Active memories with a near-copy (see [`DUPLICATE_OVERLAP`]).
    pub duplicates: usize,
    pub questions: usize,
    pub questions_without_evidence: usize,
    pub adversarial_skipped: usize,
    recall: Tally,
    pub consolidation_seconds: f64,
    pub search_seconds: f64,
}

impl Report {
    /// `count` per 100 messages.
    pub fn per_100_messages(&self, count: f64) -> f64 {
        if self.messages == 0 {
            0.0
        } else {
            100.0 * count / self.messages as f64
        }
    }

    /// Estimated cost of the whole run, in the price's currency.
    pub fn cost(&self) -> f64 {
        (self.prompt_tokens as f64 * self.price_input_per_million
            + self.completion_tokens as f64 * self.price_output_per_million)
            / 1_000_000.0
    }

    pub fn duplicate_rate(&self) -> f64 {
        share(self.duplicates, self.memories_active)
    }

    /// Recall@k over categories 1–4, as fractions, for each k of `CUTOFFS`.
    pub fn recall_at(&self) -> Vec<(usize, f64)> {
        let (n, sums) = self.recall.total();
        CUTOFFS
            .iter()
            .zip(sums)
            .map(|(k, sum)| (*k, if n == 0 { 0.0 } else { sum / n as f64 }))
            .collect()
    }

    pub fn markdown(&self) -> String {
        let mut out = format!(
            "## Consolidation of {} ({}, batches of {BATCH_SIZE})\n\n",
            self.file, self.configured
        );
        out.push_str("### volume\n\n| measure | value |\n|---|---:|\n");
        let strategies: Vec<String> = self
            .batches_by_strategy
            .iter()
            .map(|(s, n)| format!("{s} {n}"))
            .collect();
        for (label, value) in [
            ("conversations", self.conversations.to_string()),
            ("messages", self.messages.to_string()),
            (
                "batches (by strategy)",
                format!("{} ({})", self.batches, strategies.join(", ")),
            ),
            ("memories created", self.memories_created.to_string()),
            (
                "memories active at the end",
                self.memories_active.to_string(),
            ),
            (
                "active memories per 100 messages",
                format!("{:.1}", self.per_100_messages(self.memories_active as f64)),
            ),
            ("reinforcements", self.reinforced.to_string()),
            ("superseded", self.superseded.to_string()),
            ("review requests", self.reviews_requested.to_string()),
        ] {
            out.push_str(&format!("| {label} | {value} |\n"));
        }

        out.push_str("\n### cost\n\n| measure | total | per 100 messages |\n|---|---:|---:|\n");
        for (label, value) in [
            ("LLM calls", self.llm_calls),
            ("prompt tokens", self.prompt_tokens),
            ("completion tokens", self.completion_tokens),
        ] {
            out.push_str(&format!(
                "| {label} | {value} | {:.1} |\n",
                self.per_100_messages(value as f64)
            ));
        }
        out.push_str(&format!(
            "| estimated cost (input {} / output {} per million tokens) | {:.4} | {:.4} |\n",
            self.price_input_per_million,
            self.price_output_per_million,
            self.cost(),
            self.per_100_messages(self.cost())
        ));
        if !self.configured.starts_with("llm") {
            out.push_str("\nNo LLM configured: the rules consolidated every batch.\n");
        } else if self.fallbacks.is_empty() {
            out.push_str("\nNo batch fell back to the rules.\n");
        } else {
            out.push_str(
                "\nBatches that fell back to the rules:\n\n| reason | batches |\n|---|---:|\n",
            );
            for (reason, n) in &self.fallbacks {
                out.push_str(&format!("| {} | {n} |\n", reason.replace('|', "\\|")));
            }
        }

        out.push_str(
            "\n### routing of the candidates\n\n| route | candidates | % |\n|---|---:|---:|\n",
        );
        let total = self.routing.total();
        for (label, n) in [
            ("memory", self.routing.memory),
            ("review", self.routing.review),
            ("discarded", self.routing.discarded),
        ] {
            out.push_str(&format!(
                "| {label} | {n} | {:.1} |\n",
                100.0 * share(n, total)
            ));
        }
        out.push_str(&format!("| **all** | {total} | |\n"));

        out.push_str(&format!(
            "\n### duplicates\n\n{} of {} active memories ({:.1} %) have another active memory of \
             the same subject with text_overlap ≥ {DUPLICATE_OVERLAP}.\n",
            self.duplicates,
            self.memories_active,
            100.0 * self.duplicate_rate()
        ));

        out.push_str(&format!(
            "\n### LoCoMo recall@k over the consolidated memories (hybrid, k = {SEARCH_K}; \
             {} questions of categories 1–4; {} without valid evidence and {} adversarial \
             skipped)\n\n",
            self.questions, self.questions_without_evidence, self.adversarial_skipped
        ));
        out.push_str(&self.recall.table());
        out.push_str(&format!(
            "\nconsolidation {:.1} s, search {:.1} s\n",
            self.consolidation_seconds, self.search_seconds
        ));
        out
    }
}

fn share(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// The command: settings from the environment (and `config`), a temporary
/// data dir unless one is given; prints the report.
pub async fn consolidation(config: Option<PathBuf>, args: ConsolidationArgs) -> anyhow::Result<()> {
    let temporary = match &args.data_dir {
        Some(_) => None,
        None => Some(tempfile::tempdir().context("cannot create a temporary data dir")?),
    };
    let data_dir = match (&args.data_dir, &temporary) {
        (Some(dir), _) => dir.clone(),
        (None, Some(temporary)) => temporary.path().to_owned(),
        (None, None) => unreachable!("a temporary dir is made when none is given"),
    };
    let settings = mnemo_config::load(&Overrides {
        config_file: config,
        data_dir: Some(data_dir),
        listen: Some("127.0.0.1:0".into()),
    })
    .context("invalid configuration")?;
    let report = run(settings, &args).await?;
    print!("{}", report.markdown());
    Ok(())
}

/// Runs the evaluation on `settings` (its data dir should be fresh) and
/// returns the report.
pub async fn run(mut settings: Settings, args: &ConsolidationArgs) -> anyhow::Result<Report> {
    let raw: Value = serde_json::from_slice(
        &std::fs::read(&args.file)
            .with_context(|| format!("cannot read {}", args.file.display()))?,
    )
    .with_context(|| format!("{} is not JSON", args.file.display()))?;
    let mut conversations = parse_conversations(&raw)?;
    if let Some(limit) = args.limit {
        conversations.truncate(limit);
    }
    anyhow::ensure!(!conversations.is_empty(), "no conversation to replay");

    let policies = &mut settings.consolidation;
    for policy in std::iter::once(&mut policies.default).chain(policies.tenants.values_mut()) {
        policy.batch_size = BATCH_SIZE;
        policy.idle_timeout = NO_IDLE;
    }
    settings.listen = "127.0.0.1:0".parse().expect("a valid address");
    let mut report = Report {
        file: args.file.display().to_string(),
        configured: match &settings.llm {
            Some(llm) => format!("llm ({} at {})", llm.chat.model, llm.chat.base_url),
            None => "rules".to_owned(),
        },
        conversations: conversations.len(),
        price_input_per_million: settings
            .llm
            .as_ref()
            .map_or(0.0, |l| l.pricing.input_per_million),
        price_output_per_million: settings
            .llm
            .as_ref()
            .map_or(0.0, |l| l.pricing.output_per_million),
        ..Default::default()
    };

    let secret_file = settings.dev_secret_file();
    let app = mnemo_app::Application::build(settings.clone())
        .await
        .context("cannot start the application on the data dir")?;
    let url = format!("http://127.0.0.1:{}", app.port());
    let log = app
        .consolidator()
        .expect("the embedded server consolidates")
        .pipeline()
        .log
        .clone();
    let server = app.server_handle();
    let running = tokio::spawn(app.run());
    let tenant = TenantId::parse(TENANT)?;
    let api = Api::new(&url, mint_eval_token(&settings, &secret_file, &tenant)?)?;
    eprintln!(
        "consolidation: {} conversations, {} turns, {}, data dir {}",
        conversations.len(),
        conversations.iter().map(|c| c.turns.len()).sum::<usize>(),
        report.configured,
        settings.data_dir.display()
    );

    let outcome = measure(&mut report, &api, &log, &tenant, conversations, args).await;
    server.stop(true).await;
    match running.await {
        Ok(Ok(())) => {}
        Ok(Err(error)) => eprintln!("  the application stopped with: {error:#}"),
        Err(error) => eprintln!("  the application task failed: {error}"),
    }
    outcome.map(|()| report)
}

async fn measure(
    report: &mut Report,
    api: &Api,
    log: &SealedLog,
    tenant: &TenantId,
    conversations: Vec<crate::eval::Conversation>,
    args: &ConsolidationArgs,
) -> anyhow::Result<()> {
    let started = Instant::now();
    let subjects: Vec<String> = conversations
        .iter()
        .map(|c| format!("{}-{}", args.subject_prefix, c.sample_id))
        .collect();
    let mut dia_of: HashMap<String, String> = HashMap::new();
    for (conversation, subject) in conversations.iter().zip(&subjects) {
        let step = Instant::now();
        let turns = &conversation.turns;
        let (events, duplicates) = api.post_messages(subject, turns).await?;
        if duplicates > 0 {
            eprintln!(
                "  warning: {subject}: {duplicates} of {} messages were posted before (a reused \
                 data dir?); the report counts what their earlier run consolidated",
                turns.len()
            );
        }
        dia_of.extend(events.into_iter().map(|(dia, event)| (event, dia)));
        api.post(
            &format!("/v1/subjects/{subject}/consolidate"),
            &json!({}),
            false,
        )
        .await?;
        let records = wait_for_batches(log, tenant, subject, turns.len()).await?;
        let created: u64 = records.iter().map(|r| u64::from(r.created)).sum();
        let listed = wait_for_projection(api, subject, created).await?;
        for record in &records {
            add_record(report, record);
        }
        report.reviews_requested += review_requests(log, tenant, subject).await?;
        let active: Vec<String> = listed
            .iter()
            .filter(|m| m["state"].as_str() == Some("active"))
            .filter_map(|m| m["content"].as_str().map(str::to_owned))
            .collect();
        report.memories_active += active.len();
        report.duplicates += tokio::task::spawn_blocking(move || near_duplicates(&active)).await?;
        eprintln!(
            "  {subject}: {} turns, {} batches, {created} memories in {:.1} s",
            turns.len(),
            records.len(),
            step.elapsed().as_secs_f64()
        );
    }
    report.consolidation_seconds = started.elapsed().as_secs_f64();

    let jobs = QuestionJobs::of(&conversations);
    report.questions = jobs.jobs.len();
    report.questions_without_evidence = jobs.skipped_no_evidence;
    report.adversarial_skipped = jobs.adversarial;
    eprintln!("  searching {} questions", jobs.jobs.len());
    let searched = Instant::now();
    let shared = Arc::new(Shared {
        api: api.clone(),
        in_process: None,
        conversations,
        dense_subjects: subjects.clone(),
        subjects,
        dia_of,
        modes: vec!["hybrid".to_owned()],
        diagnostics: false,
        turns_only: false,
    });
    for outcome in search_questions(&shared, jobs.jobs).await? {
        let q = &shared.conversations[outcome.conversation].questions[outcome.question];
        report
            .recall
            .add(q.category, &q.evidence, &outcome.by_mode[0]);
    }
    report.search_seconds = searched.elapsed().as_secs_f64();
    Ok(())
}

fn add_record(report: &mut Report, record: &BatchConsolidated) {
    report.messages += record.messages as usize;
    report.batches += 1;
    *report
        .batches_by_strategy
        .entry(record.strategy.clone())
        .or_default() += 1;
    report.memories_created += u64::from(record.created);
    report.reinforced += u64::from(record.reinforced);
    report.superseded += u64::from(record.superseded);
    report.llm_calls += u64::from(record.llm_calls);
    report.prompt_tokens += record.prompt_tokens;
    report.completion_tokens += record.completion_tokens;
    if let Some(reason) = &record.fallback {
        let reason: String = reason.chars().take(160).collect();
        *report.fallbacks.entry(reason).or_default() += 1;
    }
    for candidate in &record.candidates {
        match candidate.route {
            Route::Memory => report.routing.memory += 1,
            Route::Review => report.routing.review += 1,
            Route::Discarded => report.routing.discarded += 1,
        }
    }
}

/// The subject's batch records (they hold no content: nothing to open).
async fn batch_records(
    log: &SealedLog,
    tenant: &TenantId,
    subject: &SubjectId,
) -> anyhow::Result<Vec<BatchConsolidated>> {
    let events = log
        .store()
        .read_stream(tenant, &streams::consolidation(subject))
        .await?;
    events
        .into_iter()
        .filter(|e| e.event_type == "BatchConsolidated")
        .map(|e| {
            serde_json::from_value::<BatchConsolidated>(e.payload)
                .context("an undecodable BatchConsolidated record")
        })
        .collect()
}

/// Waits until the subject's batch records account for `messages` messages.
async fn wait_for_batches(
    log: &SealedLog,
    tenant: &TenantId,
    subject: &str,
    messages: usize,
) -> anyhow::Result<Vec<BatchConsolidated>> {
    let subject = SubjectId::parse(subject)?;
    let mut last = 0;
    let mut last_progress = Instant::now();
    let mut last_report = Instant::now();
    loop {
        let records = batch_records(log, tenant, &subject).await?;
        let done: usize = records.iter().map(|r| r.messages as usize).sum();
        if done >= messages {
            return Ok(records);
        }
        if done != last {
            last = done;
            last_progress = Instant::now();
        }
        if last_progress.elapsed() > STALL {
            bail!(
                "{subject}: consolidation is stuck at {done} of {messages} messages for {} s",
                STALL.as_secs()
            );
        }
        if last_report.elapsed() > Duration::from_secs(10) {
            eprintln!("  {subject}: {done}/{messages} messages consolidated");
            last_report = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits until the subject's memory list (every state but deleted) holds
/// at least `created` memories and two listings in a row are the same (ids
/// and versions), i.e. the projection caught up; returns the last listing.
async fn wait_for_projection(api: &Api, subject: &str, created: u64) -> anyhow::Result<Vec<Value>> {
    let fingerprint = |listed: &[Value]| -> Vec<(String, u64)> {
        let mut ids: Vec<(String, u64)> = listed
            .iter()
            .map(|m| {
                (
                    m["id"].as_str().unwrap_or_default().to_owned(),
                    m["version"].as_u64().unwrap_or_default(),
                )
            })
            .collect();
        ids.sort();
        ids
    };
    let mut previous: Option<Vec<(String, u64)>> = None;
    let mut last_progress = Instant::now();
    loop {
        let listed = api.list_memories(subject, false).await?;
        let now = fingerprint(&listed);
        if listed.len() as u64 >= created && previous.as_ref() == Some(&now) {
            return Ok(listed);
        }
        if previous.as_ref() != Some(&now) {
            last_progress = Instant::now();
        }
        if last_progress.elapsed() > STALL {
            bail!(
                "{subject}: the memory list is stuck at {} of {created} memories",
                listed.len()
            );
        }
        previous = Some(now);
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// `ReviewRequested` events about the subject.
async fn review_requests(
    log: &SealedLog,
    tenant: &TenantId,
    subject: &str,
) -> anyhow::Result<usize> {
    let subject = SubjectId::parse(subject)?;
    Ok(log
        .store()
        .read_subject(tenant, &subject)
        .await?
        .iter()
        .filter(|e| e.event_type == "ReviewRequested")
        .count())
}

/// How many of `contents` have another one at `text_overlap` ≥
/// [`DUPLICATE_OVERLAP`].
pub fn near_duplicates(contents: &[String]) -> usize {
    let mut duplicate = vec![false; contents.len()];
    for i in 0..contents.len() {
        for j in i + 1..contents.len() {
            if (!duplicate[i] || !duplicate[j])
                && text_overlap(&contents[i], &contents[j]) >= DUPLICATE_OVERLAP
            {
                duplicate[i] = true;
                duplicate[j] = true;
            }
        }
    }
    duplicate.into_iter().filter(|d| *d).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_duplicates_count_both_sides() {
        let contents: Vec<String> = [
            "The user adopted a puppy named Biscuit.",
            "The user adopted a puppy named Biscuit!",
            "The user moved to Berlin in 2021.",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        assert_eq!(near_duplicates(&contents), 2);
        assert_eq!(near_duplicates(&contents[2..]), 0);
    }

    #[test]
    fn per_100_messages_and_cost() {
        let report = Report {
            messages: 200,
            prompt_tokens: 1_000_000,
            completion_tokens: 500_000,
            price_input_per_million: 0.15,
            price_output_per_million: 0.6,
            ..Default::default()
        };
        assert!((report.per_100_messages(10.0) - 5.0).abs() < 1e-9);
        assert!((report.cost() - 0.45).abs() < 1e-9);
        assert_eq!(Report::default().per_100_messages(3.0), 0.0);
    }
}
