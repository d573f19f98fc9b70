//! `mnemo bench parts`: what the work every posted message causes costs on
//! this machine, stage by stage, each alone, with nothing else running:
//! the ceiling of `mnemo bench searchable` (items searchable per second)
//! that no scheduling of the pipeline can pass, and, against its CPU per
//! item, how much of that goes between the stages.
//!
//! On a fresh data dir, with the lexical embedder:
//! - **append**: `--messages` message events appended to the sealed log as
//!   ingest appends a post (one call per `--batch` messages of one
//!   conversation, sealed under the subject's key; `--subjects`
//!   conversations in turn), one writer;
//! - **index**: the same messages read back and indexed as the episode
//!   projection indexes a delivery ([`episodes::read_turns`],
//!   [`episodes::index_episodes`]: unsealed, embedded with the turn before
//!   each, written with its BM25 terms and payload), [`READ_AHEAD`] turns a
//!   write, the index flushed once a second as the projection flushes while
//!   it is behind, one writer;
//! - **consolidate**: the same messages handed to the consolidator as its
//!   consumer group hands them over (runs of [`RUN`] records, each run's
//!   arrivals buffered in one write, whole batches drained by its workers
//!   meanwhile), every conversation then drained to its end, with the
//!   rules;
//! - **project the memories**: the memory events consolidation appended,
//!   read from the log in runs of [`RUN`] and projected as the memory
//!   projection's consumer does (`prepare`, `handle`, `flush`: read-model
//!   rows and points).
//!
//! The last two run after the first two, so consolidation's neighbour
//! lookups find the memories of its own group, not those of the groups
//! before it (the projection has not indexed them yet): it may create a
//! memory the pipeline would have reinforced, and each stage is still the
//! work the pipeline does for a message.
//!
//! Every stage's CPU is also given per posted message, and their sum is
//! what a message costs with no HTTP, relay, bus or scheduling between
//! the stages: what `mnemo bench searchable` measures per item beyond it
//! is the plumbing's.
//!
//! Each stage's process CPU time (user + system, from `/proc/self/stat`) is
//! its cost: the stages run one after the other in this process, and the
//! runtime has nothing else to do (the consolidator's workers included:
//! the stage waits for them). A ceiling assumes every core spends all its
//! time on those stages alone, so the pipeline, which also answers HTTP,
//! scrubs, relays and polls the bus, stays below it. Prints figures;
//! asserts nothing but that every message was read back, indexed and
//! consolidated, and that memories were projected.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use chrono::Utc;
use mnemo_bus::{topics, EventHandler};
use mnemo_consolidator::pipeline::Pipeline;
use mnemo_consolidator::rules::RuleStrategy;
use mnemo_consolidator::Consolidator;
use mnemo_domain::events::{streams, MessageReceived, Role};
use mnemo_domain::RecordedEvent;
use mnemo_domain::{
    DomainEvent, EventId, EventMetadata, SessionId, SubjectId, SubjectText, TenantId,
};
use mnemo_event_store::sealed::Pending;
use mnemo_event_store::ExpectedVersion;
use mnemo_retriever::episodes::{self, READ_AHEAD};
use mnemo_retriever::projection::MemoryProjection;
use mnemo_vector_index::VectorIndex;

use crate::bench::{cores, message_text, process_cpu, varied_text};

#[derive(Debug, Clone)]
pub struct PartsBenchArgs {
    pub messages: usize,
    /// Messages per append (a post's size).
    pub batch: usize,
    /// Conversations the messages are spread over.
    pub subjects: usize,
    /// Append [`varied_text`] (natural text's word frequencies) instead of
    /// [`message_text`]'s six sentences, as `bench searchable --text`.
    pub varied_text: bool,
}

/// Turns per session, as `mnemo bench searchable` posts them.
const SESSION_TURNS: usize = 24;

/// Records a consumer takes in one run (`ConsumerOptions::max_batch`).
const RUN: usize = 1024;

struct Stage {
    name: &'static str,
    items: usize,
    wall: Duration,
    cpu: Duration,
}

impl Stage {
    fn cpu_per_item(&self) -> Duration {
        self.cpu / self.items.max(1) as u32
    }
}

async fn timed<F, T>(name: &'static str, items: usize, work: F) -> anyhow::Result<(Stage, T)>
where
    F: std::future::Future<Output = anyhow::Result<T>>,
{
    let (cpu, started) = (process_cpu()?, Instant::now());
    let out = work.await?;
    let stage = Stage {
        name,
        items,
        wall: started.elapsed(),
        cpu: process_cpu()?.saturating_sub(cpu),
    };
    Ok((stage, out))
}

/// What [`measure`] found: each stage's figures, in the order they ran.
pub struct PartsReport {
    args: PartsBenchArgs,
    stages: [Stage; 4],
    memory_events: usize,
}

impl PartsReport {
    /// The four stages' CPU per posted message: what a message costs with
    /// nothing between the stages.
    pub fn cpu_per_message(&self) -> Duration {
        self.stages.iter().map(Stage::cpu_per_item).sum()
    }

    /// Messages a second `cores` cores make searchable doing nothing but
    /// the four stages.
    pub fn ceiling(&self, cores: usize) -> f64 {
        ceiling(cores, self.cpu_per_message())
    }

    pub fn print(&self) {
        println!(
            "## The parts' own cost ({} messages, {} conversations, appends of {}, lexical embedder)\n",
            self.args.messages, self.args.subjects, self.args.batch
        );
        println!("| stage | items | wall | items/s | CPU | CPU per item |");
        println!("|---|---:|---:|---:|---:|---:|");
        for stage in &self.stages {
            println!(
                "| {} | {} | {:.2} s | {:.0} | {:.2} s | {:.0} µs |",
                stage.name,
                stage.items,
                stage.wall.as_secs_f64(),
                stage.items as f64 / stage.wall.as_secs_f64(),
                stage.cpu.as_secs_f64(),
                stage.cpu_per_item().as_secs_f64() * 1e6
            );
        }
        let cores = cores();
        let two_writes = self.stages[0].cpu_per_item() + self.stages[1].cpu_per_item();
        println!(
            "\nThe two writes: {:.0} µs of CPU per message. On {cores} cores doing nothing else, \
             at most {:.0} messages/s become searchable episodes.",
            two_writes.as_secs_f64() * 1e6,
            ceiling(cores, two_writes)
        );
        println!(
            "All four stages ({} memory events projected): {:.0} µs of CPU per message, \
             at most {:.0} messages/s on {cores} cores with nothing between the stages.\n",
            self.memory_events,
            self.cpu_per_message().as_secs_f64() * 1e6,
            self.ceiling(cores)
        );
    }
}

/// Items a second `cores` cores make at `cpu` of CPU an item, doing
/// nothing else.
pub fn ceiling(cores: usize, cpu: Duration) -> f64 {
    cores as f64 / cpu.as_secs_f64().max(f64::EPSILON)
}

pub async fn parts(args: PartsBenchArgs) -> anyhow::Result<()> {
    measure(args).await?.print();
    Ok(())
}

/// Runs the four stages on a fresh data dir of its own, one after the
/// other, and closes it.
pub async fn measure(args: PartsBenchArgs) -> anyhow::Result<PartsReport> {
    anyhow::ensure!(
        args.messages > 0 && args.batch > 0 && args.subjects > 0,
        "counts must be positive"
    );
    let dir = tempfile::tempdir()?;
    let settings = crate::bench_search::settings_for(dir.path(), "lexical", None)?;
    // The stores and the collection as the server opens them (the index
    // flushes once per run of records, not per write).
    let (log, stores) = mnemo_app::stores::open_log(&settings).await?;
    let embedder = mnemo_app::vectors::build_embedder(&settings).await?;
    let index = mnemo_app::vectors::open_vector_index(&settings, embedder.clone(), &log).await?;

    let tenant = TenantId::parse("bench")?;
    let subjects: Vec<SubjectId> = (0..args.subjects)
        .map(|n| SubjectId::parse(format!("parts-{n}")))
        .collect::<Result<_, _>>()?;
    let text = if args.varied_text {
        varied_text
    } else {
        message_text
    };

    // The posts, as ingest appends them: conversation after conversation
    // in turn, a batch each.
    let (append, ()) = timed("append to the sealed log", args.messages, async {
        let metadata = EventMetadata {
            actor: "bench".into(),
            ..Default::default()
        };
        let mut sent = vec![0usize; args.subjects];
        let mut next = 0usize;
        while next < args.messages {
            for (s, subject) in subjects.iter().enumerate() {
                let take = args.batch.min(args.messages - next);
                if take == 0 {
                    break;
                }
                let mut pending = Vec::with_capacity(take);
                for _ in 0..take {
                    let turn = sent[s];
                    pending.push(Pending {
                        event_id: EventId::new(),
                        subject: Some(subject.clone()),
                        event: DomainEvent::MessageReceived(MessageReceived {
                            message_id: format!("m{next}"),
                            role: if turn.is_multiple_of(2) {
                                Role::User
                            } else {
                                Role::Assistant
                            },
                            content: SubjectText::new(text(next)),
                            timestamp: Utc::now(),
                            session: Some(SessionId::parse(format!("s{}", turn / SESSION_TURNS))?),
                            agent: None,
                            pii: Default::default(),
                        }),
                        metadata: metadata.clone(),
                    });
                    sent[s] += 1;
                    next += 1;
                }
                log.append(
                    &tenant,
                    &streams::conversation(subject),
                    ExpectedVersion::Any,
                    pending,
                )
                .await?;
            }
        }
        Ok(())
    })
    .await?;

    // The episode projection's work for the same messages.
    let (indexed, written) = timed("index the episodes", args.messages, async {
        let mut written = 0u64;
        let mut flushed = Instant::now();
        let mut positions: HashMap<&SubjectId, u64> = HashMap::new();
        loop {
            let mut progressed = false;
            for subject in &subjects {
                let from = positions.get(subject).copied().unwrap_or(1);
                let stream = streams::conversation(subject);
                let read = episodes::read_turns(
                    &log,
                    &tenant,
                    &stream,
                    from.saturating_sub(1),
                    from + READ_AHEAD - 1,
                )
                .await?;
                let pairs = episodes::with_previous(&read, from);
                if pairs.is_empty() {
                    continue;
                }
                let generation = log
                    .cipher()
                    .live_generation(&tenant, subject)
                    .await?
                    .context("the subject's key is gone")?;
                written += episodes::index_episodes(
                    log.cipher(),
                    embedder.as_ref(),
                    index.as_ref(),
                    &tenant,
                    generation,
                    &pairs,
                )
                .await?;
                positions.insert(subject, from + pairs.len() as u64);
                progressed = true;
                if flushed.elapsed() >= mnemo_app::roles::EPISODE_FLUSH_INTERVAL {
                    index.flush().await?;
                    flushed = Instant::now();
                }
            }
            if !progressed {
                break;
            }
        }
        index.flush().await?;
        Ok(written)
    })
    .await?;
    anyhow::ensure!(
        written == args.messages as u64,
        "{written} episodes indexed for {} messages",
        args.messages
    );

    let consolidator = Consolidator::new(Pipeline {
        log: log.clone(),
        buffer: stores.buffer.clone(),
        strategy: Arc::new(RuleStrategy::new()),
        fallback: None,
        budget: Arc::default(),
        embedder: embedder.clone(),
        index: index.clone(),
        read_model: stores.read_model.clone(),
        policies: Arc::new(settings.consolidation.clone()),
        metrics: None,
        delivered: Default::default(),
    });
    let (consolidated, ()) = timed("consolidate (rules)", args.messages, async {
        let mut conversations = Vec::with_capacity(subjects.len());
        for subject in &subjects {
            let stream = streams::conversation(subject);
            conversations.push(log.store().read_stream(&tenant, &stream).await?);
        }
        // The conversations' records interleaved, as the bus delivers
        // posts of several clients.
        let longest = conversations.iter().map(Vec::len).max().unwrap_or(0);
        let mut run = Vec::with_capacity(RUN);
        for start in (0..longest).step_by(args.batch) {
            for events in &conversations {
                run.extend(events.iter().skip(start).take(args.batch));
                if run.len() >= RUN {
                    hand_over(&consolidator, &std::mem::take(&mut run)).await?;
                }
            }
        }
        hand_over(&consolidator, &run).await?;
        for subject in &subjects {
            for conversation in consolidator
                .pipeline()
                .buffer
                .conversations(&tenant, subject)
                .await?
            {
                consolidator.drain(&conversation).await?;
            }
        }
        consolidator.stop().await;
        Ok(())
    })
    .await?;
    let waiting = stores.buffer.stats().await?.messages;
    anyhow::ensure!(waiting == 0, "{waiting} messages still buffered");

    let projection = MemoryProjection::new(
        log.clone(),
        stores.read_model.clone(),
        embedder.clone(),
        index.clone(),
    );
    let (projected, memory_events) = timed("project the memories", args.messages, async {
        let (mut position, mut projected) = (0, 0usize);
        loop {
            let events = log.store().read_all(position, RUN as u32).await?;
            let Some(last) = events.last() else { break };
            position = last.global_position;
            let run: Vec<RecordedEvent> = events
                .into_iter()
                .filter(|e| topics::for_event_type(&e.event_type) == topics::MEMORY_EVENTS)
                .collect();
            if run.is_empty() {
                continue;
            }
            projection.prepare(&run).await?;
            for event in &run {
                projection.handle(event).await?;
            }
            projection.flush().await?;
            projected += run.len();
        }
        Ok(projected)
    })
    .await?;
    anyhow::ensure!(memory_events > 0, "consolidation appended no memory event");

    stores.close().await;
    Ok(PartsReport {
        args,
        stages: [append, indexed, consolidated, projected],
        memory_events,
    })
}

/// One run of the consolidator's records, as its consumer handles it: each
/// record, then the run's flush (its arrivals buffered in one write, the
/// conversations holding a whole batch handed to the workers).
async fn hand_over(consolidator: &Consolidator, run: &[&RecordedEvent]) -> anyhow::Result<()> {
    for event in run {
        consolidator.handle(event).await?;
    }
    consolidator.flush().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_process_cpu_time_grows_with_work() {
        let before = process_cpu().unwrap();
        let started = Instant::now();
        let mut x = 0u64;
        while started.elapsed() < Duration::from_millis(200) {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        let spent = process_cpu().unwrap() - before;
        // 200 ms of spinning, counted in 10 ms ticks.
        assert!(spent >= Duration::from_millis(100), "{spent:?}");
    }

    #[tokio::test]
    async fn the_six_sentences_are_measured_too() {
        let report = measure(PartsBenchArgs {
            messages: 60,
            batch: 10,
            subjects: 2,
            varied_text: false,
        })
        .await
        .unwrap();
        // Each stage counts the posted messages (its CPU is per message)
        // and rules consolidation found memories in the six sentences.
        assert!(report.stages.iter().all(|stage| stage.items == 60));
        assert!(report.memory_events > 0);
        assert_eq!(
            report.ceiling(2),
            2.0 / report.cpu_per_message().as_secs_f64()
        );
    }

    #[tokio::test]
    async fn every_message_appended_is_indexed_consolidated_and_its_memories_projected() {
        // Uneven on purpose: the last append of a round is short, and the
        // conversations end at different lengths.
        parts(PartsBenchArgs {
            messages: 131,
            batch: 20,
            subjects: 3,
            varied_text: true,
        })
        .await
        .unwrap();
    }
}
