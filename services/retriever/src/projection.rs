//! The memory projection: memory events in, read-model rows and vector
//! points out. For each event it folds the memory's stream up to its
//! latest event, which makes the handler idempotent and indifferent to
//! redelivery or reordering: the row and the point always become the
//! stream's latest state. A run's read-ahead folds onto the memory's
//! readable row (the fold up to its version) only the events after it, so
//! a memory reinforced a thousand times is not read a thousand events deep
//! at every reinforcement; without a row, or with a gap, the whole stream.
//! Content is embedded only when it changed; a state change (archive,
//! restore) only rewrites the point's payload.
//!
//! Key decisions: the read-model row of a memory is written only after its
//! point is durable (in [`EventHandler::flush`], which the consumer calls
//! before it commits a run of records). The row's version is what tells a
//! redelivery it has nothing to do; a row ahead of an index that lost its
//! unflushed writes in a crash would leave the point missing for good. And
//! the points whose content changed are embedded and written at the flush
//! too, all of a run in one embedder call and one index write: an
//! embedding server answers a batch in about the time of one text. The
//! consumer lingers before it flushes while runs trickle in (one flush,
//! one sync of every index file, per linger rather than per run); a run
//! whose flush it defers is settled instead, which writes the run's points
//! without the sync and leaves its rows for the flush.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use mnemo_bus::{EventHandler, HandlerError};
use mnemo_crypto::{CryptoError, SubjectCipher, TokenPurpose};
use mnemo_domain::events::streams;
use mnemo_domain::{
    DomainEvent, EventId, Memory, MemoryId, MemoryState, RecordedEvent, SubjectId, TenantId,
};
use mnemo_embed::Embedder;
use mnemo_event_store::sealed::{Decoded, LogError, SealedLog};
use mnemo_read_model::{MemoryReadModel, ReadModelError};
use mnemo_vector_index::{Point, PointPayload, PointType, VectorIndex};

use crate::episodes::Episode;

pub struct MemoryProjection {
    log: SealedLog,
    read_model: Arc<dyn MemoryReadModel>,
    embedder: Arc<dyn Embedder>,
    index: Arc<dyn VectorIndex>,
    /// Rows projected since the last flush, newest state per memory; they
    /// also answer "what was projected before" for the next event of the
    /// same memory in the run.
    pending: Mutex<HashMap<(TenantId, MemoryId), Pending>>,
    /// What [`EventHandler::prepare`] read for the run's memory streams,
    /// taken by the first event of each stream `handle`s.
    prepared: Mutex<HashMap<(TenantId, String), Prepared>>,
    /// Memory streams read and folded since start.
    streams_read: std::sync::atomic::AtomicU64,
    /// Of those, the ones a run's read-ahead supplied.
    streams_read_ahead: std::sync::atomic::AtomicU64,
    /// Events the read-ahead opened and folded for them.
    events_folded: std::sync::atomic::AtomicU64,
}

/// A memory stream read ahead for a run, with what `handle` would have
/// read beside it: the key generation (read before the stream) and the
/// memory's read-model row.
struct Prepared {
    /// The subject whose key generation was read: the subject of the
    /// run's first event of the stream, which is the memory's own unless
    /// an event on its stream was appended under another.
    subject: SubjectId,
    generation: Option<u32>,
    /// The stream's events: all of them, or, when `row` is readable, only
    /// those after its version (see [`fold_onto`]).
    stream: Vec<Decoded>,
    row: Option<Memory>,
    /// `stream` holds only the events after `row`'s version.
    after_row: bool,
}

impl Prepared {
    /// The latest version this read saw: the stream's last event, or the
    /// row's when nothing came after it.
    fn version(&self) -> u64 {
        let row = match (&self.row, self.after_row) {
            (Some(row), true) => row.version,
            _ => 0,
        };
        self.stream
            .last()
            .map_or(row, |d| d.recorded.stream_version.max(row))
    }
}

/// A row waiting for its point to be durable.
#[derive(Clone)]
struct Pending {
    memory: Memory,
    /// The generation of the subject's key the memory was read under: if
    /// an erasure destroyed it since, the row must not be written (sealing
    /// would create a new key and revive the memory) and the point goes.
    generation: u32,
    /// Its content changed in this run: the point is embedded and written
    /// at the flush (until then the index has the previous one, or none).
    embed: bool,
}

impl MemoryProjection {
    /// The run's rows, one transaction per tenant (after their points):
    /// a run's memories appear in lists together.
    async fn write_rows(
        &self,
        rows: &[((TenantId, MemoryId), Pending)],
    ) -> Result<(), ReadModelError> {
        let mut by_tenant: HashMap<&TenantId, Vec<(Memory, u32)>> = HashMap::new();
        for ((tenant, _), row) in rows {
            by_tenant
                .entry(tenant)
                .or_default()
                .push((row.memory.clone(), row.generation));
        }
        for (tenant, memories) in by_tenant {
            self.read_model.upsert_many(tenant, &memories).await?;
        }
        Ok(())
    }

    pub fn new(
        log: SealedLog,
        read_model: Arc<dyn MemoryReadModel>,
        embedder: Arc<dyn Embedder>,
        index: Arc<dyn VectorIndex>,
    ) -> Self {
        MemoryProjection {
            log,
            read_model,
            embedder,
            index,
            pending: Mutex::default(),
            prepared: Mutex::default(),
            streams_read: Default::default(),
            streams_read_ahead: Default::default(),
            events_folded: Default::default(),
        }
    }

    /// How many memory streams `handle` has read and folded: fewer than
    /// the events handled when a run holds several events of one memory.
    pub fn streams_read(&self) -> u64 {
        self.streams_read.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many events the read-ahead opened and folded: those after a
    /// readable row's version, or the whole stream of a memory without one.
    pub fn events_folded(&self) -> u64 {
        self.events_folded
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Of [`Self::streams_read`], how many the run's read-ahead
    /// ([`EventHandler::prepare`]) supplied.
    pub fn streams_read_ahead(&self) -> u64 {
        self.streams_read_ahead
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<(TenantId, MemoryId), Pending>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn prepared(&self) -> std::sync::MutexGuard<'_, HashMap<(TenantId, String), Prepared>> {
        self.prepared.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reads the run's memory streams and their rows, per tenant: each
    /// subject's key generation first, then every stream with one call,
    /// then every row with one call.
    async fn read_ahead(&self, run: &[RecordedEvent]) -> Result<(), HandlerError> {
        let mut by_tenant: HashMap<&TenantId, Vec<&RecordedEvent>> = HashMap::new();
        for event in run {
            if event.stream_id.starts_with("memory-") && event.subject.is_some() {
                by_tenant.entry(&event.tenant).or_default().push(event);
            }
        }
        for (tenant, events) in by_tenant {
            // Generations before streams, as `handle` reads them: content
            // found readable was read under the generation kept with it.
            let mut generations = HashMap::new();
            let mut streams: Vec<String> = Vec::new();
            let mut subject_of = HashMap::new();
            for event in events {
                let Some(subject) = &event.subject else {
                    continue;
                };
                if !generations.contains_key(subject) {
                    let generation = self
                        .log
                        .cipher()
                        .live_generation(tenant, subject)
                        .await
                        .map_err(retryable)?;
                    generations.insert(subject.clone(), generation);
                }
                if subject_of
                    .insert(event.stream_id.clone(), subject.clone())
                    .is_none()
                {
                    streams.push(event.stream_id.clone());
                }
            }
            // Rows before streams: a readable row is the fold of its
            // stream up to its version, so only the events after it are
            // opened and decoded.
            let ids: Vec<MemoryId> = streams
                .iter()
                .filter_map(|s| streams::memory_id(s))
                .collect();
            let mut rows: HashMap<MemoryId, Memory> = self
                .read_model
                .get_many(tenant, &ids)
                .await
                .map_err(retryable)?
                .into_iter()
                .map(|row| (row.id, row))
                .collect();
            let after: HashMap<String, u64> = rows
                .values()
                .filter(|row| row.content.as_text().is_some())
                .map(|row| (streams::memory(&row.id), row.version))
                .collect();
            let mut read: HashMap<String, Vec<Decoded>> = HashMap::new();
            for decoded in self
                .log
                .read_streams_after(tenant, &streams, &after)
                .await
                .map_err(retryable)?
            {
                read.entry(decoded.recorded.stream_id.clone())
                    .or_default()
                    .push(decoded);
            }
            let mut prepared = self.prepared();
            for stream_id in streams {
                // Every stream listed has its subject: it was listed with it.
                let Some(subject) = subject_of.remove(&stream_id) else {
                    continue;
                };
                let generation = generations.get(&subject).copied().flatten();
                let row = streams::memory_id(&stream_id).and_then(|id| rows.remove(&id));
                let stream = read.remove(&stream_id).unwrap_or_default();
                prepared.insert(
                    (tenant.clone(), stream_id.clone()),
                    Prepared {
                        subject,
                        generation,
                        stream,
                        row,
                        after_row: after.contains_key(&stream_id),
                    },
                );
            }
        }
        Ok(())
    }
}

/// The subject a memory stream's creation was appended under.
fn creator(stream: &[Decoded]) -> Option<&SubjectId> {
    stream
        .iter()
        .find(|d| matches!(d.event, DomainEvent::MemoryCreated(_)))
        .and_then(|d| d.recorded.subject.as_ref())
}

fn retryable(error: impl std::fmt::Display) -> HandlerError {
    HandlerError::Retryable(error.to_string())
}

/// How much of its source messages a memory's dense key carries: the key
/// is `normalize(v(memory) + SOURCES_WEIGHT · v(its source messages))`.
pub const SOURCES_WEIGHT: f32 = 0.5;

/// Characters of source text a key takes at most: the model reads no more
/// than a few hundred tokens of it anyway.
const MAX_SOURCE_CHARS: usize = 2_000;

/// The dense key and keyword text of each memory (in order): fact-augmented
/// keys. A memory is a sentence the pipeline wrote ("Likes pottery"); a
/// question is often phrased like what the user said ("I signed up for a
/// pottery class"), so the key carries the text of the memory's source
/// messages, read from the log (those still readable: an erased or missing
/// one adds nothing), as a vector summed with the memory's (each text
/// embedded once, in one embedder call) and as keywords after its content.
/// A memory written through the API has no sources: its key is its text.
pub async fn memory_keys(
    log: &SealedLog,
    embedder: &dyn Embedder,
    memories: &[(&TenantId, &Memory)],
) -> Result<Vec<(Vec<f32>, String)>, KeyError> {
    let mut wanted: HashMap<&TenantId, Vec<EventId>> = HashMap::new();
    for (tenant, memory) in memories {
        wanted
            .entry(tenant)
            .or_default()
            .extend(&memory.provenance.source_event_ids);
    }
    let mut said: HashMap<EventId, String> = HashMap::new();
    for (tenant, mut ids) in wanted {
        ids.sort_unstable();
        ids.dedup();
        if ids.is_empty() {
            continue;
        }
        for decoded in log.get_events(tenant, &ids).await? {
            if let Some(episode) = Episode::of(&decoded) {
                said.insert(episode.event_id, episode.content);
            }
        }
    }
    let mut texts: Vec<String> = Vec::with_capacity(memories.len() * 2);
    // Per memory: its content's place in `texts`, and its sources' if any.
    let mut places: Vec<(usize, Option<usize>)> = Vec::with_capacity(memories.len());
    for (_, memory) in memories {
        let content = memory.content.as_text().unwrap_or_default().to_owned();
        let sources: Vec<&str> = memory
            .provenance
            .source_event_ids
            .iter()
            .filter_map(|id| said.get(id).map(String::as_str))
            .collect();
        let sources: String = sources.join("\n").chars().take(MAX_SOURCE_CHARS).collect();
        texts.push(content);
        let own = texts.len() - 1;
        let from = (!sources.is_empty()).then(|| {
            texts.push(sources);
            texts.len() - 1
        });
        places.push((own, from));
    }
    let vectors = embedder.embed(&texts).await?;
    if vectors.len() != texts.len() {
        return Err(KeyError::Embed(mnemo_embed::EmbedError::InvalidResponse(
            format!("asked for {} vectors, got {}", texts.len(), vectors.len()),
        )));
    }
    Ok(places
        .into_iter()
        .map(|(own, from)| {
            let mut key = vectors[own].clone();
            let mut keywords = texts[own].clone();
            if let Some(from) = from {
                for (k, s) in key.iter_mut().zip(&vectors[from]) {
                    *k += SOURCES_WEIGHT * s;
                }
                if !mnemo_embed::l2_normalize(&mut key) {
                    key = vectors[own].clone();
                }
                keywords.push('\n');
                keywords.push_str(&texts[from]);
            }
            (key, keywords)
        })
        .collect())
}

/// What stopped [`memory_keys`].
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("reading the memories' sources: {0}")]
    Log(#[from] LogError),
    #[error("embedding: {0}")]
    Embed(#[from] mnemo_embed::EmbedError),
}

/// The keyed tokens a memory's point carries instead of its tags and
/// session: a vector index keeps the bytes of what it was given in its
/// write-ahead log and segments, so it is given nothing it could leak.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PointTokens {
    pub tags: Vec<String>,
    pub session: Option<String>,
}

impl PointTokens {
    /// The tokens of `memory`'s tags and session under its subject's key
    /// of `generation`, the one its content was read under; `None` when
    /// that key is gone (erased since). Never creates a key: tokens under
    /// the subject's next one would match its erased tags again.
    pub async fn of(
        cipher: &SubjectCipher,
        tenant: &TenantId,
        memory: &Memory,
        generation: u32,
    ) -> Result<Option<Self>, CryptoError> {
        let subject = &memory.subject;
        let Some(tags) = cipher
            .tokens_in_generation(tenant, subject, generation, TokenPurpose::Tag, &memory.tags)
            .await?
        else {
            return Ok(None);
        };
        let session = match &memory.session {
            Some(s) => match cipher
                .token_in_generation(
                    tenant,
                    subject,
                    generation,
                    TokenPurpose::Session,
                    s.as_str(),
                )
                .await?
            {
                Some(token) => Some(token),
                None => return Ok(None),
            },
            None => None,
        };
        Ok(Some(PointTokens { tags, session }))
    }
}

/// The point payload of a memory: what search filters on, with its tags
/// and session as `tokens`.
pub fn payload_of(tenant: &TenantId, memory: &Memory, tokens: PointTokens) -> PointPayload {
    PointPayload {
        tenant: tenant.clone(),
        subject: memory.subject.clone(),
        point_type: PointType::Memory,
        kind: memory.kind,
        tags: tokens.tags,
        state: memory.state,
        session: tokens.session,
        agent: memory.agent.as_ref().map(ToString::to_string),
        created_at: memory.created_at.timestamp(),
        updated_at: memory.updated_at.timestamp(),
        importance: memory.importance,
    }
}

#[async_trait]
impl EventHandler for MemoryProjection {
    async fn handle(&self, event: &RecordedEvent) -> Result<(), HandlerError> {
        if !event.stream_id.starts_with("memory-") {
            return Ok(());
        }
        let Some(subject) = &event.subject else {
            return Err(HandlerError::Permanent(
                "memory event without subject".into(),
            ));
        };
        // Folded already in this run: the stream read for an earlier event
        // of this memory held this one. A memory reinforced again and again
        // in a backlog is read once per run, not once per event. Were the
        // subject erased since, the flush drops the row and the point.
        let folded = streams::memory_id(&event.stream_id).is_some_and(|id| {
            self.pending()
                .get(&(event.tenant.clone(), id))
                .is_some_and(|p| p.memory.version >= event.stream_version)
        });
        if folded {
            return Ok(());
        }
        // Projected by an earlier run: its read-ahead folded events that
        // were committed with the ones it carried, and the row the
        // read-ahead found is at this event's version or later. The check
        // reads the entry without taking it, so every such event of the
        // run returns here; taking it at the first sent the next one to
        // read the memory's whole stream again (a group's reinforcements
        // of one memory commit together but may reach the bus in two runs).
        let projected = self
            .prepared()
            .get(&(event.tenant.clone(), event.stream_id.clone()))
            .is_some_and(|p| {
                p.after_row
                    && p.row
                        .as_ref()
                        .is_some_and(|row| row.version >= event.stream_version)
            });
        if projected {
            return Ok(());
        }
        // Read ahead with the run, when it holds this event (a stream read
        // before the event was appended does not: never here, since the
        // relay publishes committed events, but cheap to check).
        let prepared = self
            .prepared()
            .remove(&(event.tenant.clone(), event.stream_id.clone()))
            .filter(|p| p.version() >= event.stream_version);
        // The row the read-ahead found, with what came after it.
        let mut onto_row = prepared.as_ref().filter(|p| p.after_row).and_then(|p| {
            p.row.clone()?.fold_onto(
                p.stream
                    .iter()
                    .map(|d| (&d.event, d.recorded.stream_version, d.recorded.recorded_at)),
            )
        });
        // A memory belongs to the subject its creation was appended under,
        // whatever subject a later event on its stream carries: the read
        // ahead is used only if it read that subject's key generation.
        let prepared = prepared.filter(|p| {
            let owner = match &onto_row {
                Some(memory) => Some(&memory.subject),
                None if p.after_row => None,
                None => creator(&p.stream),
            };
            owner == Some(&p.subject)
        });
        if prepared.is_none() {
            onto_row = None;
        }
        let (generation, stream, prepared_row, owner) = match prepared {
            Some(prepared) => {
                self.streams_read_ahead
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                self.events_folded.fetch_add(
                    prepared.stream.len() as u64,
                    std::sync::atomic::Ordering::Relaxed,
                );
                (
                    prepared.generation,
                    prepared.stream,
                    Some(prepared.row),
                    prepared.subject,
                )
            }
            // Not read ahead, what came after the row does not follow it,
            // or read under another subject: the whole stream.
            None => {
                let (generation, stream, owner) = self
                    .read_whole(&event.tenant, &event.stream_id, subject)
                    .await?;
                (generation, stream, None, owner)
            }
        };
        self.streams_read
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let folded = match onto_row {
            Some(memory) => Some(memory),
            None => Memory::fold(
                &owner,
                stream
                    .iter()
                    .map(|d| (&d.event, d.recorded.stream_version, d.recorded.recorded_at)),
            ),
        };
        let Some(memory) = folded else {
            return Ok(());
        };
        let key = (event.tenant.clone(), memory.id);
        let pending = self.pending().get(&key).cloned();
        // A point whose content changed earlier in this run is not written yet.
        let unwritten = pending.as_ref().is_some_and(|p| p.embed);
        let previous = match (pending, prepared_row) {
            (Some(projected), _) => Some(projected.memory),
            (None, Some(row)) => row,
            (None, None) => self
                .read_model
                .get(&event.tenant, &memory.id)
                .await
                .map_err(retryable)?,
        };
        // Already projected at this version or later: a redelivery.
        if previous
            .as_ref()
            .is_some_and(|p| p.version >= memory.version)
            && !memory.content.is_erased()
        {
            return Ok(());
        }
        let (Some(generation), Some(content)) = (generation, memory.content.as_text()) else {
            // The subject was erased: never bring its row or point back.
            return self.forget(key).await;
        };
        let previous_content = previous.as_ref().and_then(|p| p.content.as_text());
        let embed = if memory.state == MemoryState::Deleted {
            self.index
                .delete(&event.tenant, &[memory.id])
                .await
                .map_err(retryable)?;
            false
        } else if previous_content == Some(content) && !unwritten {
            let tokens = PointTokens::of(self.log.cipher(), &event.tenant, &memory, generation)
                .await
                .map_err(retryable)?;
            let Some(tokens) = tokens else {
                // Erased since the stream was read.
                return self.forget(key).await;
            };
            self.index
                .update_payload(
                    &event.tenant,
                    &memory.id,
                    payload_of(&event.tenant, &memory, tokens),
                )
                .await
                .map_err(retryable)?;
            false
        } else {
            true
        };
        self.pending().insert(
            key,
            Pending {
                memory,
                generation,
                embed,
            },
        );
        Ok(())
    }

    async fn prepare(&self, run: &[RecordedEvent]) -> Result<(), HandlerError> {
        // What an earlier run read ahead and did not use is stale now.
        self.prepared().clear();
        self.read_ahead(run).await
    }

    /// A run whose flush the consumer defers (the projection lingers):
    /// its points are embedded and written now, so the index (which the
    /// consolidator's neighbour lookups read) does not wait for the flush;
    /// the rows stay pending until the flush has made the points durable.
    async fn settle(&self) -> Result<(), HandlerError> {
        let rows: Vec<_> = self.pending().drain().collect();
        let (mut live, mut outcome) = self.drop_erased(rows).await;
        if outcome.is_ok() {
            outcome = self.write_points(&mut live).await;
        }
        for (key, row) in live {
            self.keep(key, row);
        }
        outcome
    }

    async fn flush(&self) -> Result<(), HandlerError> {
        // Read ahead for events that were not handled (dead-lettered).
        self.prepared().clear();
        let rows: Vec<_> = self.pending().drain().collect();
        let (mut live, mut outcome) = self.drop_erased(rows).await;
        if outcome.is_ok() {
            outcome = self.write_points(&mut live).await;
        }
        if outcome.is_ok() {
            outcome = self.index.flush().await.map_err(retryable);
        }
        if outcome.is_ok() {
            outcome = match self.write_rows(&live).await {
                // An erasure destroyed a key since `drop_erased` looked (the
                // read model refuses to seal under any other): look again,
                // which takes those rows' points back, and write the rest.
                Err(ReadModelError::SubjectErased) => {
                    let (rest, dropped) = self.drop_erased(live).await;
                    live = rest;
                    match dropped {
                        Ok(()) => self.write_rows(&live).await.map_err(retryable),
                        Err(error) => Err(error),
                    }
                }
                written => written.map_err(retryable),
            };
        }
        if outcome.is_err() {
            for (key, row) in live {
                self.keep(key, row);
            }
        }
        outcome
    }
}

impl MemoryProjection {
    /// A memory's whole stream, with the generation of its subject's key
    /// read before it: content found readable was then read under that
    /// generation (or an erasure came between, and the flush refuses the
    /// row), never under a key made after it. `guess` is the subject of
    /// the event being handled; when the stream's creation says the
    /// memory is another subject's, that subject's generation is read and
    /// the stream again after it.
    async fn read_whole(
        &self,
        tenant: &TenantId,
        stream_id: &str,
        guess: &SubjectId,
    ) -> Result<(Option<u32>, Vec<Decoded>, SubjectId), HandlerError> {
        let mut subject = guess.clone();
        loop {
            let generation = self
                .log
                .cipher()
                .live_generation(tenant, &subject)
                .await
                .map_err(retryable)?;
            let stream = self
                .log
                .read_stream(tenant, stream_id)
                .await
                .map_err(retryable)?;
            match creator(&stream) {
                // A creation is never rewritten: the second read finds the
                // subject it was read for.
                Some(owner) if *owner != subject => subject = owner.clone(),
                _ => return Ok((generation, stream, subject)),
            }
        }
    }

    /// A memory of an erased subject: nothing pending, no row, no point.
    async fn forget(&self, key: (TenantId, MemoryId)) -> Result<(), HandlerError> {
        self.pending().remove(&key);
        let (tenant, id) = &key;
        self.read_model
            .remove(tenant, id)
            .await
            .map_err(retryable)?;
        self.index.delete(tenant, &[*id]).await.map_err(retryable)
    }

    /// The rows whose subject still has the key they were read under; the
    /// points of the others (erased meanwhile: the erasure removed their
    /// rows) are deleted, so a point written before the erasure cannot
    /// outlive it. On an error the rows not yet looked at are all kept.
    async fn drop_erased(
        &self,
        rows: Vec<((TenantId, MemoryId), Pending)>,
    ) -> (
        Vec<((TenantId, MemoryId), Pending)>,
        Result<(), HandlerError>,
    ) {
        let mut live = Vec::with_capacity(rows.len());
        let mut outcome = Ok(());
        for (key, row) in rows {
            if outcome.is_err() {
                live.push((key, row));
                continue;
            }
            let (tenant, id) = &key;
            match self
                .log
                .cipher()
                .live_generation(tenant, &row.memory.subject)
                .await
            {
                Ok(Some(generation)) if generation == row.generation => live.push((key, row)),
                Ok(_) => {
                    if let Err(error) = self.index.delete(tenant, &[*id]).await {
                        outcome = Err(retryable(error));
                        live.push((key, row));
                    }
                }
                Err(error) => {
                    outcome = Err(retryable(error));
                    live.push((key, row));
                }
            }
        }
        (live, outcome)
    }

    /// Embeds the rows whose content changed, in one embedder call, and
    /// writes their points, one index write per tenant; each written row
    /// is marked so (a failed flush keeps the others for the next one).
    async fn write_points(
        &self,
        rows: &mut [((TenantId, MemoryId), Pending)],
    ) -> Result<(), HandlerError> {
        let changed: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].1.embed).collect();
        if changed.is_empty() {
            return Ok(());
        }
        let memories: Vec<(&TenantId, &Memory)> = changed
            .iter()
            .map(|&i| (&rows[i].0 .0, &rows[i].1.memory))
            .collect();
        let keys = memory_keys(&self.log, self.embedder.as_ref(), &memories)
            .await
            .map_err(retryable)?;
        let mut by_tenant: HashMap<TenantId, Vec<(usize, Point)>> = HashMap::new();
        for (&i, (dense, text)) in changed.iter().zip(keys) {
            let ((tenant, id), row) = &rows[i];
            let tokens = PointTokens::of(self.log.cipher(), tenant, &row.memory, row.generation)
                .await
                .map_err(retryable)?;
            // Erased since it was read: no point, and the rows' write
            // refuses it, which sends the flush to drop it.
            let Some(tokens) = tokens else {
                continue;
            };
            by_tenant.entry(tenant.clone()).or_default().push((
                i,
                Point {
                    id: *id,
                    dense,
                    text,
                    payload: payload_of(tenant, &row.memory, tokens),
                },
            ));
        }
        for (tenant, points) in by_tenant {
            let (written, points): (Vec<usize>, Vec<Point>) = points.into_iter().unzip();
            self.index
                .upsert(&tenant, points)
                .await
                .map_err(retryable)?;
            for i in written {
                rows[i].1.embed = false;
            }
        }
        Ok(())
    }

    /// Puts a row back for the next flush; a newer state projected
    /// meanwhile wins.
    fn keep(&self, key: (TenantId, MemoryId), row: Pending) {
        self.pending().entry(key).or_insert(row);
    }
}
