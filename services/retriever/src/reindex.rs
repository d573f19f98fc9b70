//! Rebuilding a vector collection from the event log.
//!
//! The log is the source of truth and the vector index only a projection of
//! it, so a collection for a new embedding space (or a fresh copy of the
//! current one, which also sheds the bytes of deleted points) is made by
//! replaying the log: every memory stream touched after a position is
//! folded to its latest state and written to the target index, embedded
//! with the target's embedder, and every message after it becomes its
//! episode point again (with the turn before it, as the live projection
//! writes it). Only the index is written; the read model is
//! already current and stays as it is.
//!
//! The replay is idempotent (points are replaced whole, by memory id), so a
//! crashed rebuild is simply run again, and catching up from an earlier
//! position than necessary costs time, never correctness.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use mnemo_domain::{DomainEvent, EventType, Memory, MemoryId, MemoryState, SubjectId, TenantId};
use mnemo_embed::Embedder;
use mnemo_event_store::sealed::SealedLog;
use mnemo_vector_index::{Point, VectorIndex};

use crate::episodes::{index_episodes, point_id, with_previous, Episode};
use crate::projection::{memory_keys, payload_of, PointTokens};

/// How many events one `read_all` page holds.
const PAGE: u32 = 1_000;
/// How many memories are embedded in one call (batched embedding is about
/// twice as fast as one sentence at a time on the local model).
const BATCH: usize = 32;

/// What a replay reports as it goes, for a progress bar or a log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Reading the log: events seen so far, and the head being read up to.
    Scanning { events: u64, head: i64 },
    /// Writing points: memories done out of the total to do.
    Indexing { done: u64, total: u64 },
}

/// The outcome of a replay.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Replayed {
    /// The log position the target is now complete up to.
    pub position: i64,
    /// Memory streams folded and written (points upserted or removed).
    pub memories: u64,
    /// Points written (memories with readable content that are not deleted).
    pub points: u64,
    /// Subjects whose points were removed because the log says they were erased.
    pub erased_subjects: u64,
    /// Episode points written (messages whose subject was not erased).
    pub episodes: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("reading the log: {0}")]
    Log(String),
    #[error("embedding: {0}")]
    Embed(String),
    #[error("writing the vector index: {0}")]
    Index(String),
}

/// Replays every memory stream with an event after `after` into `index`,
/// up to the log's head when the call started, and returns the position
/// reached. Events appended while it runs are left for the next call (a
/// catch-up) or for the live projection.
pub async fn replay(
    log: &SealedLog,
    embedder: &dyn Embedder,
    index: &dyn VectorIndex,
    after: i64,
    progress: &(dyn Fn(Progress) + Send + Sync),
) -> Result<Replayed, ReplayError> {
    let store = log.store();
    let head = store
        .head_position()
        .await
        .map_err(|e| ReplayError::Log(e.to_string()))?;
    let mut outcome = Replayed {
        position: after.max(0),
        ..Default::default()
    };
    if head <= after {
        return Ok(outcome);
    }

    // First pass: which memories and which erasures the range touches. Only
    // ids are kept, so this stays small however long the log is.
    let mut seen: HashSet<(TenantId, String)> = HashSet::new();
    let mut memories: VecDeque<(TenantId, SubjectId, String)> = VecDeque::new();
    let mut erased: Vec<(TenantId, SubjectId)> = Vec::new();
    // Conversation streams with a message in the range, and the first
    // version of it there: the episodes from that one on are (re)written.
    let mut conversations: Vec<(TenantId, String, u64)> = Vec::new();
    let mut conversation_seen: HashSet<(TenantId, String)> = HashSet::new();
    // Episodes the forgetter forgot: left out, and removed from a target
    // that already holds them (a catch-up).
    let mut forgotten: HashMap<TenantId, HashSet<MemoryId>> = HashMap::new();
    let mut position = after.max(0);
    let mut events = 0u64;
    while position < head {
        let page = store
            .read_all(position, PAGE)
            .await
            .map_err(|e| ReplayError::Log(e.to_string()))?;
        let Some(last) = page.last() else { break };
        position = last.global_position;
        for event in page.into_iter().filter(|e| e.global_position <= head) {
            events += 1;
            let is_erasure = event.is(EventType::SubjectErased);
            let is_message = event.is(EventType::MessageReceived);
            if event.is(EventType::EpisodesForgotten) {
                let tenant = event.tenant.clone();
                let decoded = log
                    .decode(event)
                    .await
                    .map_err(|e| ReplayError::Log(e.to_string()))?;
                if let DomainEvent::EpisodesForgotten(done) = decoded.event {
                    forgotten
                        .entry(tenant)
                        .or_default()
                        .extend(done.messages.iter().map(point_id));
                }
                continue;
            }
            let Some(subject) = event.subject else {
                continue;
            };
            if is_message {
                if conversation_seen.insert((event.tenant.clone(), event.stream_id.clone())) {
                    conversations.push((event.tenant, event.stream_id, event.stream_version));
                }
                continue;
            }
            if is_erasure {
                erased.push((event.tenant, subject));
            } else if event.stream_id.starts_with("memory-")
                && seen.insert((event.tenant.clone(), event.stream_id.clone()))
            {
                memories.push_back((event.tenant, subject, event.stream_id));
            }
        }
        progress(Progress::Scanning { events, head });
    }

    // An erasure removes points whose memories may not appear in the range
    // at all (the erasure appends no memory event): remove them by subject.
    for (tenant, subject) in &erased {
        index
            .delete_subject(tenant, subject)
            .await
            .map_err(|e| ReplayError::Index(e.to_string()))?;
        outcome.erased_subjects += 1;
    }

    let total = memories.len() as u64;
    progress(Progress::Indexing { done: 0, total });
    while !memories.is_empty() {
        let chunk: Vec<_> = memories
            .drain(..BATCH.min(memories.len()))
            .collect::<Vec<_>>();
        let written = index_chunk(log, embedder, index, &chunk).await?;
        outcome.memories += chunk.len() as u64;
        outcome.points += written;
        progress(Progress::Indexing {
            done: outcome.memories,
            total,
        });
    }
    let none = HashSet::new();
    for (tenant, stream_id, first) in &conversations {
        let skip = forgotten.get(tenant).unwrap_or(&none);
        outcome.episodes +=
            index_conversation(log, embedder, index, tenant, stream_id, *first, skip).await?;
    }
    for (tenant, points) in &forgotten {
        let points: Vec<MemoryId> = points.iter().copied().collect();
        index
            .delete(tenant, &points)
            .await
            .map_err(|e| ReplayError::Index(e.to_string()))?;
    }
    outcome.position = head;
    Ok(outcome)
}

/// Writes the episode points of a conversation's messages from version
/// `first` on, in batches; the turn before `first` is read as context.
async fn index_conversation(
    log: &SealedLog,
    embedder: &dyn Embedder,
    index: &dyn VectorIndex,
    tenant: &TenantId,
    stream_id: &str,
    first: u64,
    forgotten: &HashSet<MemoryId>,
) -> Result<u64, ReplayError> {
    let turns: Vec<Episode> = log
        .read_stream_range(tenant, stream_id, first.saturating_sub(1), u64::MAX)
        .await
        .map_err(|e| ReplayError::Log(e.to_string()))?
        .iter()
        .filter_map(Episode::of)
        .collect();
    // The live projection's pairing, so a rebuilt point is the same point.
    let mut pairs = with_previous(&turns, first);
    pairs.retain(|(_, e)| !forgotten.contains(&e.point_id()));
    let Some(subject) = turns.first().map(|turn| &turn.subject) else {
        return Ok(0);
    };
    // Erased since the turns were read: nothing to write.
    let Some(generation) = log
        .cipher()
        .live_generation(tenant, subject)
        .await
        .map_err(|e| ReplayError::Log(e.to_string()))?
    else {
        return Ok(0);
    };
    let mut written = 0;
    for chunk in pairs.chunks(BATCH) {
        written += index_episodes(log.cipher(), embedder, index, tenant, generation, chunk)
            .await
            .map_err(|e| ReplayError::Index(e.to_string()))?;
    }
    Ok(written)
}

/// Folds each memory and writes its point (or removes it when the memory is
/// deleted or its subject erased); returns how many points were written.
async fn index_chunk(
    log: &SealedLog,
    embedder: &dyn Embedder,
    index: &dyn VectorIndex,
    chunk: &[(TenantId, SubjectId, String)],
) -> Result<u64, ReplayError> {
    let mut live: Vec<(TenantId, Memory)> = Vec::new();
    for (tenant, subject, stream_id) in chunk {
        let stream = log
            .read_stream(tenant, stream_id)
            .await
            .map_err(|e| ReplayError::Log(e.to_string()))?;
        let Some(memory) = Memory::fold(
            subject,
            stream
                .iter()
                .map(|d| (&d.event, d.recorded.stream_version, d.recorded.recorded_at)),
        ) else {
            continue;
        };
        if memory.state == MemoryState::Deleted || memory.content.as_text().is_none() {
            index
                .delete(tenant, &[memory.id])
                .await
                .map_err(|e| ReplayError::Index(e.to_string()))?;
        } else {
            live.push((tenant.clone(), memory));
        }
    }
    if live.is_empty() {
        return Ok(0);
    }
    // The live projection's keys, so a rebuilt point is the same point.
    let memories: Vec<(&TenantId, &Memory)> = live.iter().map(|(t, m)| (t, m)).collect();
    let keys = memory_keys(log, embedder, &memories)
        .await
        .map_err(|e| ReplayError::Embed(e.to_string()))?;
    // One upsert per tenant: the port refuses a batch mixing tenants.
    let mut by_tenant: Vec<(TenantId, Vec<Point>)> = Vec::new();
    for ((tenant, memory), (dense, text)) in live.into_iter().zip(keys) {
        let log_error = |e: mnemo_crypto::CryptoError| ReplayError::Log(e.to_string());
        let tokens = match log
            .cipher()
            .live_generation(&tenant, &memory.subject)
            .await
            .map_err(log_error)?
        {
            Some(generation) => PointTokens::of(log.cipher(), &tenant, &memory, generation)
                .await
                .map_err(log_error)?,
            None => None,
        };
        // Erased since its stream was read: no point, as for an erased one.
        let Some(tokens) = tokens else {
            continue;
        };
        let point = Point {
            id: memory.id,
            dense,
            text,
            payload: payload_of(&tenant, &memory, tokens),
        };
        match by_tenant.iter_mut().find(|(t, _)| *t == tenant) {
            Some((_, points)) => points.push(point),
            None => by_tenant.push((tenant, vec![point])),
        }
    }
    let mut written = 0u64;
    for (tenant, points) in by_tenant {
        written += points.len() as u64;
        index
            .upsert(&tenant, points)
            .await
            .map_err(|e| ReplayError::Index(e.to_string()))?;
    }
    Ok(written)
}

/// A replay that writes into `index` with `embedder` and logs its progress
/// every few seconds: what the server runs at startup to bring a collection
/// up to the log's head.
pub async fn catch_up(
    log: &SealedLog,
    embedder: Arc<dyn Embedder>,
    index: Arc<dyn VectorIndex>,
    after: i64,
) -> Result<Replayed, ReplayError> {
    let last_report = std::sync::Mutex::new(std::time::Instant::now());
    let report = move |step: Progress| {
        let mut last = last_report.lock().unwrap_or_else(|p| p.into_inner());
        if last.elapsed() < std::time::Duration::from_secs(5) {
            return;
        }
        *last = std::time::Instant::now();
        match step {
            Progress::Scanning { events, head } => {
                tracing::info!(events, head, "vector index catch-up: reading the log")
            }
            Progress::Indexing { done, total } => {
                tracing::info!(done, total, "vector index catch-up: indexing memories")
            }
        }
    };
    replay(log, embedder.as_ref(), index.as_ref(), after, &report).await
}
