//! Episodes (seed 003's episodic memory): every message of a subject's
//! conversation, as it was said (scrubbed, then sealed in the log), indexed
//! as its own point type beside the curated memories. Memories stay
//! selective; episodes are how the agent recalls a turn no memory was made
//! of.
//!
//! Key decisions:
//! - **The log is the episode store.** An episode's text is its message's
//!   sealed content and its point id is the message's event id; nothing is
//!   copied into another table. Erasure needs nothing new: the destroyed
//!   key leaves the text unreadable, `delete_subject` and the purge take
//!   the points, and a message handled after its key is gone is never
//!   indexed.
//! - **Indexed under the turn before it** in the same session: a reply
//!   ("yes, every Sunday") only means something with what it answers.
//! - **Dated.** Relative dates in the text ("yesterday", 上周) are resolved
//!   against the message's timestamp and added to its keyword text, so a
//!   search that names the date finds what was said as "last week".

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use mnemo_bus::{EventHandler, HandlerError};
use mnemo_crypto::{CryptoError, SubjectCipher, TokenPurpose};
use mnemo_domain::events::Role;
use mnemo_domain::{
    dates, AgentId, DomainEvent, EventId, EventType, MemoryId, MemoryKind, MemoryState,
    RecordedEvent, SessionId, SubjectId, TenantId,
};
use mnemo_embed::Embedder;
use mnemo_event_store::sealed::{Decoded, LogError, SealedLog};
use mnemo_vector_index::{Point, PointPayload, PointType, VectorIndex};
use serde_json::{json, Value};

/// The importance an episode ranks with: below what the rules give a kept
/// memory (0.6 and up), so a memory and the episode it came from tie on
/// relevance in the memory's favour.
pub const EPISODE_IMPORTANCE: f32 = 0.5;

/// Turns on each side of an episode a search may ask for.
pub const MAX_WINDOW: u8 = 2;

/// One message as an episode: what was said, by whom, when, where.
#[derive(Debug, Clone, PartialEq)]
pub struct Episode {
    pub event_id: EventId,
    /// Its place in the conversation stream.
    pub stream_version: u64,
    pub stream_id: String,
    pub subject: SubjectId,
    pub role: Role,
    pub content: String,
    pub message_id: String,
    pub session: Option<SessionId>,
    pub agent: Option<AgentId>,
    pub timestamp: DateTime<Utc>,
}

impl Episode {
    /// The episode of a decoded message, or `None` for any other event and
    /// for a message whose subject was erased.
    pub fn of(decoded: &Decoded) -> Option<Episode> {
        let DomainEvent::MessageReceived(message) = &decoded.event else {
            return None;
        };
        let content = message.content.as_text()?;
        Some(Episode {
            event_id: decoded.recorded.event_id,
            stream_version: decoded.recorded.stream_version,
            stream_id: decoded.recorded.stream_id.clone(),
            subject: decoded.recorded.subject.clone()?,
            role: message.role,
            content: content.to_owned(),
            message_id: message.message_id.clone(),
            session: message.session.clone(),
            agent: message.agent.clone(),
            timestamp: message.timestamp,
        })
    }

    /// The point id: the message's event id, so a redelivered message
    /// replaces its point instead of adding one.
    pub fn point_id(&self) -> MemoryId {
        point_id(&self.event_id)
    }

    /// The date phrases of the text, resolved against the message's date.
    pub fn dates(&self) -> Vec<String> {
        dates::resolve(&self.content, self.timestamp.date_naive())
            .iter()
            .map(dates::ResolvedDate::describe)
            .collect()
    }

    /// Whether the text names a date a reader can place (the resolved
    /// phrases of [`Self::dates`]).
    pub fn names_a_date(&self) -> bool {
        !dates::resolve(&self.content, self.timestamp.date_naive()).is_empty()
    }

    pub fn to_json(&self) -> Value {
        json!({
            "id": self.event_id.to_string(),
            "message_id": self.message_id,
            "role": role_name(self.role),
            "content": self.content,
            "session": self.session.as_ref().map(ToString::to_string),
            "agent": self.agent.as_ref().map(ToString::to_string),
            "timestamp": self.timestamp,
            "dates": self.dates(),
        })
    }
}

pub fn role_name(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::System => "system",
        Role::Tool => "tool",
    }
}

/// The point id of the message with this event id.
pub fn point_id(event_id: &EventId) -> MemoryId {
    MemoryId::from_uuid(event_id.as_uuid())
}

/// How much of the turn before an episode its dense key carries: the key
/// is `normalize(v(turn) + CONTEXT_WEIGHT · v(turn before))`, each turn
/// embedded once, alone.
///
/// Key decision: a question often names what the turn before said ("what
/// did she answer when asked about ..."), so the key needs that turn; but
/// embedding the two texts together embeds every turn twice, and the
/// model is most of the cost of making a conversation searchable. Summing
/// the vectors of turns embedded once gives the key the context at half
/// the tokens (docs/operations.md has the dev-split figures of both).
pub const CONTEXT_WEIGHT: f32 = 0.5;

/// The keyword (BM25) text an episode is indexed under: the turn before it
/// in the same session, then its own text, then its resolved dates, which
/// stay out of the dense key, where a date in a query can meet them
/// without pulling the embedding away from what was said.
pub fn keyword_text(previous: Option<&Episode>, episode: &Episode) -> String {
    let mut keywords = String::new();
    if let Some(previous) = same_session(previous, episode) {
        keywords.push_str(&previous.content);
        keywords.push('\n');
    }
    keywords.push_str(&episode.content);
    for date in episode.dates() {
        keywords.push_str(" [");
        keywords.push_str(&date);
        keywords.push(']');
    }
    keywords
}

fn same_session<'a>(previous: Option<&'a Episode>, episode: &Episode) -> Option<&'a Episode> {
    previous.filter(|p| p.session == episode.session)
}

/// The dense keys of these episodes, from one embedder call over the
/// distinct turns (each episode and the turn before it) embedded alone.
pub async fn dense_keys(
    embedder: &dyn Embedder,
    episodes: &[(Option<Episode>, Episode)],
) -> Result<Vec<Vec<f32>>, EpisodeIndexError> {
    let mut position: HashMap<EventId, usize> = HashMap::with_capacity(episodes.len() + 1);
    let mut texts = Vec::with_capacity(episodes.len() + 1);
    let turns = episodes.iter().flat_map(|(previous, episode)| {
        same_session(previous.as_ref(), episode)
            .into_iter()
            .chain([episode])
    });
    for turn in turns {
        position.entry(turn.event_id).or_insert_with(|| {
            texts.push(turn.content.clone());
            texts.len() - 1
        });
    }
    let vectors = embedder
        .embed(&texts)
        .await
        .map_err(|e| EpisodeIndexError::Embed(e.to_string()))?;
    if vectors.len() != texts.len() {
        return Err(EpisodeIndexError::Embed(format!(
            "asked for {} vectors, got {}",
            texts.len(),
            vectors.len()
        )));
    }
    let weight = CONTEXT_WEIGHT;
    let mut keys = Vec::with_capacity(episodes.len());
    for (previous, episode) in episodes {
        let mut key = vectors[position[&episode.event_id]].clone();
        if let Some(previous) = same_session(previous.as_ref(), episode) {
            let before = &vectors[position[&previous.event_id]];
            for (k, b) in key.iter_mut().zip(before) {
                *k += weight * b;
            }
            // Opposite turns cannot cancel out exactly in practice; if they
            // did, the turn's own vector is the key.
            if !mnemo_embed::l2_normalize(&mut key) {
                key = vectors[position[&episode.event_id]].clone();
            }
        }
        keys.push(key);
    }
    Ok(keys)
}

/// The point payload of an episode: its session as a keyed token, like a
/// memory's (the index is given nothing of the subject it could leak),
/// under the subject's key of `generation`, the one the turn was read
/// under; `None` when that key is gone (erased since). Never creates a
/// key: an erasure landing while a batch is indexed must not leave the
/// subject a new one.
pub async fn payload_of(
    cipher: &SubjectCipher,
    tenant: &TenantId,
    episode: &Episode,
    generation: u32,
) -> Result<Option<PointPayload>, CryptoError> {
    let session = match &episode.session {
        Some(session) => match cipher
            .token_in_generation(
                tenant,
                &episode.subject,
                generation,
                TokenPurpose::Session,
                session.as_str(),
            )
            .await?
        {
            Some(token) => Some(token),
            None => return Ok(None),
        },
        None => None,
    };
    Ok(Some(PointPayload {
        tenant: tenant.clone(),
        subject: episode.subject.clone(),
        point_type: PointType::Episode,
        kind: MemoryKind::Fact,
        tags: Vec::new(),
        state: MemoryState::Active,
        session,
        agent: episode.agent.as_ref().map(ToString::to_string),
        created_at: episode.timestamp.timestamp(),
        updated_at: episode.timestamp.timestamp(),
        importance: EPISODE_IMPORTANCE,
    }))
}

#[derive(Debug, thiserror::Error)]
pub enum EpisodeIndexError {
    #[error("reading the log: {0}")]
    Log(#[from] LogError),
    #[error("sealing: {0}")]
    Crypto(#[from] CryptoError),
    #[error("embedding: {0}")]
    Embed(String),
    #[error("writing the vector index: {0}")]
    Index(#[from] mnemo_vector_index::VectorIndexError),
}

/// Embeds and writes the points of these episodes of one subject, each
/// with the turn before it ([`dense_keys`], [`keyword_text`]): one
/// embedder call and one upsert for the batch. `generation` is that of the
/// subject's key the turns were read under: when it is gone (erased
/// since), nothing is written.
pub async fn index_episodes(
    cipher: &SubjectCipher,
    embedder: &dyn Embedder,
    index: &dyn VectorIndex,
    tenant: &TenantId,
    generation: u32,
    episodes: &[(Option<Episode>, Episode)],
) -> Result<u64, EpisodeIndexError> {
    if episodes.is_empty() {
        return Ok(0);
    }
    let dense = dense_keys(embedder, episodes).await?;
    let mut points = Vec::with_capacity(episodes.len());
    for ((previous, episode), dense) in episodes.iter().zip(dense) {
        points.push(Point {
            id: episode.point_id(),
            dense,
            text: keyword_text(previous.as_ref(), episode),
            payload: match payload_of(cipher, tenant, episode, generation).await? {
                Some(payload) => payload,
                None => return Ok(0),
            },
        });
    }
    let written = points.len() as u64;
    index.upsert(tenant, points).await?;
    Ok(written)
}

/// Each turn from version `first` on, paired with the turn just before it
/// when that one is readable (an erased turn is not context): what
/// [`index_episodes`] takes. `turns` are in conversation order.
pub fn with_previous(turns: &[Episode], first: u64) -> Vec<(Option<Episode>, Episode)> {
    let mut pairs = Vec::with_capacity(turns.len());
    for (i, turn) in turns.iter().enumerate() {
        if turn.stream_version < first {
            continue;
        }
        let previous = i
            .checked_sub(1)
            .map(|p| &turns[p])
            .filter(|p| p.stream_version + 1 == turn.stream_version)
            .cloned();
        pairs.push((previous, turn.clone()));
    }
    pairs
}

/// The turns of a conversation stream from version `from` to `to`, as
/// episodes (erased or non-message events left out).
pub async fn read_turns(
    log: &SealedLog,
    tenant: &TenantId,
    stream_id: &str,
    from: u64,
    to: u64,
) -> Result<Vec<Episode>, LogError> {
    Ok(log
        .read_stream_range(tenant, stream_id, from, to)
        .await?
        .iter()
        .filter_map(Episode::of)
        .collect())
}

/// Messages a delivery indexes at most: its own and the ones after it in
/// the conversation that are already in the log.
pub const READ_AHEAD: u64 = 64;
/// Conversations whose read-ahead position is remembered; past this the
/// memory is dropped (redeliveries then cost an index write, not a wrong
/// point).
const REMEMBERED: usize = 100_000;

/// The messages of the run being handled, and the newest taken of each
/// conversation before, as delivered (sealed under the subject's key):
/// where a delivery finds its turns before it reads the log.
///
/// Key decision: the consumer hands a run of up to 1,024 records, and a
/// client's post of a batch is in one run, so the turns a delivery indexes
/// (its own, the read-ahead after it, the turn before it as context) were
/// delivered beside it; reading them back was a query and a parse of every
/// row (a profile of `mnemo bench searchable`: 2.1 % of the samples on the
/// runtime's side, beside the database thread's share). What is kept is the
/// sealed event, never its opened text: it is opened as the log's copy
/// is, so a subject erased in between reads as erased here too. Only an
/// optimisation: a delivery whose turns are not all here (the turn before
/// it in an earlier run that a restart forgot, a redelivery) reads the log
/// as before.
#[derive(Default)]
struct Delivered {
    /// (tenant, conversation stream) → stream version → the message, for
    /// the run being handled.
    run: HashMap<(TenantId, String), std::collections::BTreeMap<u64, RecordedEvent>>,
    /// (tenant, conversation stream) → the newest message taken of it:
    /// the context of the next run's first.
    newest: HashMap<(TenantId, String), RecordedEvent>,
}

impl Delivered {
    /// Conversations whose newest message is kept at most; past this the
    /// memory is dropped whole (their next deliveries read the turn
    /// before from the log).
    const CONVERSATIONS: usize = 8_192;

    /// A run's messages replace the last run's: what a run did not take
    /// (indexed already by a read-ahead) is not kept past it.
    fn start_run(&mut self, run: &[RecordedEvent]) {
        self.run.clear();
        for event in run.iter().filter(|e| e.is(EventType::MessageReceived)) {
            self.run
                .entry((event.tenant.clone(), event.stream_id.clone()))
                .or_default()
                .insert(event.stream_version, event.clone());
        }
    }

    /// The turns a delivery of `version` indexes, the turn before it first
    /// (unless it is the conversation's first), then it and the run's
    /// messages after it up to [`READ_AHEAD`] in all, without a gap: `None`
    /// when one of the first two is not here.
    fn take(
        &mut self,
        tenant: &TenantId,
        stream_id: &str,
        version: u64,
    ) -> Option<Vec<RecordedEvent>> {
        let key = (tenant.clone(), stream_id.to_owned());
        let run = self.run.get_mut(&key)?;
        if !run.contains_key(&version) {
            return None;
        }
        let before = match version.checked_sub(1).filter(|v| *v > 0) {
            None => None,
            Some(before) => Some(
                run.get(&before)
                    .or_else(|| self.newest.get(&key).filter(|e| e.stream_version == before))?
                    .clone(),
            ),
        };
        let mut turns: Vec<RecordedEvent> = before.into_iter().collect();
        for next in version..version + READ_AHEAD {
            match run.remove(&next) {
                Some(event) => turns.push(event),
                None => break,
            }
        }
        if let Some(last) = turns.last() {
            if self.newest.len() >= Self::CONVERSATIONS && !self.newest.contains_key(&key) {
                self.newest.clear();
            }
            self.newest.insert(key, last.clone());
        }
        Some(turns)
    }
}

/// The episode projection: message events in, episode points out.
///
/// Key decision: a delivery indexes its message *and* those after it in
/// the conversation already in the log (up to [`READ_AHEAD`]), in one
/// embedder call and one index write, and remembers how far it got, so
/// the deliveries of those messages cost nothing. A client posts a batch
/// at a time, so one write per batch, not per message, makes it
/// searchable; the flush to disk happens once per run of deliveries.
/// Redelivery after a restart (the memory is lost) writes the same points
/// again: correct, only slower. `handle` may run for several subjects at
/// once (the group's lanes, `Group::lanes`): what it shares across them is
/// that memory, behind a lock, and the index, which orders its writes.
pub struct EpisodeProjection {
    log: SealedLog,
    embedder: Arc<dyn Embedder>,
    index: Arc<dyn VectorIndex>,
    /// (tenant, conversation stream) → highest stream version indexed.
    indexed: std::sync::Mutex<std::collections::HashMap<(TenantId, String), u64>>,
    delivered: std::sync::Mutex<Delivered>,
}

impl EpisodeProjection {
    pub fn new(log: SealedLog, embedder: Arc<dyn Embedder>, index: Arc<dyn VectorIndex>) -> Self {
        EpisodeProjection {
            log,
            embedder,
            index,
            indexed: Default::default(),
            delivered: Default::default(),
        }
    }

    fn delivered(&self) -> std::sync::MutexGuard<'_, Delivered> {
        self.delivered.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn indexed_through(&self, tenant: &TenantId, stream_id: &str) -> u64 {
        let indexed = self.indexed.lock().unwrap_or_else(|p| p.into_inner());
        indexed
            .get(&(tenant.clone(), stream_id.to_owned()))
            .copied()
            .unwrap_or(0)
    }

    fn remember(&self, tenant: &TenantId, stream_id: &str, version: u64) {
        let mut indexed = self.indexed.lock().unwrap_or_else(|p| p.into_inner());
        if indexed.len() >= REMEMBERED {
            indexed.clear();
        }
        let entry = indexed
            .entry((tenant.clone(), stream_id.to_owned()))
            .or_insert(0);
        *entry = (*entry).max(version);
    }
}

impl EpisodeProjection {
    /// Deletes the points of episodes the forgetter forgot. They travel on
    /// the messages' topic, keyed by subject, so this runs after those
    /// messages were indexed.
    async fn forget(&self, event: &RecordedEvent) -> Result<(), HandlerError> {
        let decoded = self.log.decode(event.clone()).await.map_err(retryable)?;
        if let DomainEvent::EpisodesForgotten(forgotten) = decoded.event {
            let ids: Vec<MemoryId> = forgotten.messages.iter().map(point_id).collect();
            self.index
                .delete(&event.tenant, &ids)
                .await
                .map_err(retryable)?;
        }
        Ok(())
    }
}

fn retryable(error: impl std::fmt::Display) -> HandlerError {
    HandlerError::Retryable(error.to_string())
}

#[async_trait]
impl EventHandler for EpisodeProjection {
    async fn handle(&self, event: &RecordedEvent) -> Result<(), HandlerError> {
        if event.is(EventType::EpisodesForgotten) {
            return self.forget(event).await;
        }
        if !event.is(EventType::MessageReceived) {
            return Ok(());
        }
        let tenant = &event.tenant;
        let version = event.stream_version;
        if self.indexed_through(tenant, &event.stream_id) >= version {
            // Indexed by the read-ahead of an earlier delivery.
            return Ok(());
        }
        let Some(subject) = &event.subject else {
            return Err(HandlerError::Permanent("message without subject".into()));
        };
        // The key generation the turns are read under: an erasure that
        // lands while they are embedded must not find its points written
        // back after it deleted the subject's.
        let cipher = self.log.cipher();
        let Some(generation) = cipher
            .live_generation(tenant, subject)
            .await
            .map_err(retryable)?
        else {
            // Erased before it was indexed: it must not be, now or later.
            self.index
                .delete(tenant, &[point_id(&event.event_id)])
                .await
                .map_err(retryable)?;
            return Ok(());
        };
        // The turn before (context) through the read-ahead: as delivered
        // when the run holds them, else from the log.
        let taken = self.delivered().take(tenant, &event.stream_id, version);
        let read = match taken {
            Some(turns) => self.log.decode_all(turns).await,
            None => {
                self.log
                    .read_stream_range(
                        tenant,
                        &event.stream_id,
                        version.saturating_sub(1),
                        version + READ_AHEAD - 1,
                    )
                    .await
            }
        }
        .map_err(retryable)?;
        let last_read = read.last().map_or(version, |d| d.recorded.stream_version);
        let turns: Vec<Episode> = read.iter().filter_map(Episode::of).collect();
        if !turns.iter().any(|t| t.event_id == event.event_id) {
            // Erased before it was indexed: it must not be, now or later.
            self.index
                .delete(tenant, &[point_id(&event.event_id)])
                .await
                .map_err(retryable)?;
        }
        let pairs = with_previous(&turns, version);
        index_episodes(
            cipher,
            self.embedder.as_ref(),
            self.index.as_ref(),
            tenant,
            generation,
            &pairs,
        )
        .await
        .map_err(retryable)?;
        let still = cipher
            .live_generation(tenant, subject)
            .await
            .map_err(retryable)?;
        if still != Some(generation) {
            // Erased meanwhile: take back what was just written.
            let ids: Vec<MemoryId> = pairs.iter().map(|(_, e)| e.point_id()).collect();
            self.index.delete(tenant, &ids).await.map_err(retryable)?;
            return Ok(());
        }
        self.remember(tenant, &event.stream_id, last_read);
        Ok(())
    }

    async fn prepare(&self, run: &[RecordedEvent]) -> Result<(), HandlerError> {
        self.delivered().start_run(run);
        Ok(())
    }

    /// The run's points become durable before its offsets are committed
    /// (the index does not flush each write in the embedded mode).
    async fn flush(&self) -> Result<(), HandlerError> {
        self.index.flush().await.map_err(retryable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn episode(content: &str, session: Option<&str>, version: u64) -> Episode {
        Episode {
            event_id: EventId::new(),
            stream_version: version,
            stream_id: "conversation-ann".into(),
            subject: SubjectId::parse("ann").unwrap(),
            role: Role::User,
            content: content.into(),
            message_id: format!("m{version}"),
            session: session.map(|s| SessionId::parse(s).unwrap()),
            agent: None,
            timestamp: Utc.with_ymd_and_hms(2023, 5, 8, 13, 56, 0).unwrap(),
        }
    }

    #[test]
    fn the_keyword_text_is_the_turn_before_it_in_its_session_then_its_own() {
        let question = episode("Do you still swim?", Some("s1"), 1);
        let answer = episode("Yes, every Sunday.", Some("s1"), 2);
        assert_eq!(
            keyword_text(Some(&question), &answer),
            "Do you still swim?\nYes, every Sunday."
        );
        // Another session's turn is not context.
        let elsewhere = episode("Yes, every Sunday.", Some("s2"), 2);
        assert_eq!(
            keyword_text(Some(&question), &elsewhere),
            "Yes, every Sunday."
        );
        assert_eq!(keyword_text(None, &answer), "Yes, every Sunday.");
    }

    /// The lexical embedder, counting the texts it is given.
    struct Counting(mnemo_embed::LexicalEmbedder, std::sync::Mutex<Vec<String>>);

    #[async_trait]
    impl Embedder for Counting {
        fn space(&self) -> &mnemo_embed::EmbeddingSpace {
            self.0.space()
        }
        async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, mnemo_embed::EmbedError> {
            self.1.lock().unwrap().extend(texts.iter().cloned());
            self.0.embed(texts).await
        }
    }

    #[tokio::test]
    async fn the_dense_key_adds_the_turn_before_to_the_turn_each_embedded_once() {
        let embedder = Counting(mnemo_embed::LexicalEmbedder::new(64), Default::default());
        let question = episode("Do you still swim?", Some("s1"), 1);
        let answer = episode("Yes, every Sunday.", Some("s1"), 2);
        let thanks = episode("Thanks for asking.", Some("s1"), 3);
        let elsewhere = episode("Back from Lisbon.", Some("s2"), 4);
        let pairs = vec![
            (Some(question.clone()), answer.clone()),
            (Some(answer.clone()), thanks.clone()),
            (Some(thanks.clone()), elsewhere.clone()),
        ];
        let keys = dense_keys(&embedder, &pairs).await.unwrap();
        // Each turn once, the context turn included: four texts, not six.
        let sent = embedder.1.lock().unwrap().clone();
        assert_eq!(
            sent,
            [
                "Do you still swim?",
                "Yes, every Sunday.",
                "Thanks for asking.",
                "Back from Lisbon."
            ]
        );
        let alone = embedder.0.embed(&sent).await.unwrap();
        let mut expected = alone[1].clone();
        for (e, q) in expected.iter_mut().zip(&alone[0]) {
            *e += CONTEXT_WEIGHT * q;
        }
        assert!(mnemo_embed::l2_normalize(&mut expected));
        for (k, e) in keys[0].iter().zip(&expected) {
            assert!((k - e).abs() < 1e-6);
        }
        // Another session's turn is not context: the turn's own vector.
        assert_eq!(keys[2], alone[3]);
        assert_ne!(keys[0], alone[1]);
    }

    #[test]
    fn relative_dates_are_resolved_into_the_keyword_text_only() {
        let said = episode("I went to a support group yesterday.", None, 3);
        assert_eq!(said.dates(), vec!["2023-05-07".to_owned()]);
        let keywords = keyword_text(None, &said);
        assert!(keywords.ends_with(" [2023-05-07]"), "{keywords}");
        let zh = episode("我上周去了北京", None, 4);
        assert_eq!(zh.dates(), vec!["week of 2023-05-01".to_owned()]);
    }

    #[test]
    fn the_point_id_is_the_message_event_id() {
        let said = episode("hello", None, 1);
        assert_eq!(said.point_id().as_uuid(), said.event_id.as_uuid());
    }
}
