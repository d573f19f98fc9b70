//! The episodes of `mnemo bench search --episodes`: one subject's
//! synthetic conversation, put into a data dir the way the server puts a
//! posted conversation there, so search hydrates real sealed events and
//! ranks exactly the points the projection writes.
//!
//! - **Log**: the turns are appended as `MessageReceived` events to the
//!   subject's conversation stream through the `SealedLog`, a batch at a
//!   time as ingest appends a posted batch (content, message id and
//!   session sealed under the subject's key).
//! - **Index**: the turns are read back from the log and indexed as the
//!   episode projection indexes them (`episodes::read_turns`,
//!   `with_previous`, `index_episodes`), each under the turn before it.
//! - **Relay**: its checkpoint is moved to the log's head, as on a server
//!   that delivered these messages long ago; otherwise the server would
//!   deliver them again during the measurement (the projection
//!   re-embedding every turn, the consolidator extracting memories).
//!
//! The texts are embedded once per run, through a memo the index writes
//! then read from, so the plain and the optimized dir cost one embedding.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use chrono::{DateTime, Utc};
use mnemo_bus::relay::CheckpointStore;
use mnemo_domain::events::{streams, MessageReceived, Role};
use mnemo_domain::TenantId;
use mnemo_domain::{DomainEvent, EventId, EventMetadata, SessionId, SubjectId, SubjectText};
use mnemo_embed::{CachedEmbedder, Embedder};
use mnemo_event_store::sealed::{Pending, SealedLog};
use mnemo_event_store::ExpectedVersion;
use mnemo_retriever::episodes::{self, Episode};
use mnemo_vector_index::VectorIndex;

use super::{capitalize, memory_text, rare_name, Rng, KINDS_OF_PLACE, NAMES, OBJECTS, PLACES};
use super::{REASONS, TIMES, UPSERT_CHUNK, VERBS};

/// Messages per append: a client's batch (ingest's default limit is 100).
const APPEND_BATCH: usize = 100;
/// Turns per session: 2 to this many.
const MAX_SESSION_TURNS: usize = 30;

/// One synthetic chat turn.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Turn {
    pub role: Role,
    pub content: String,
    /// The session's number, from 0, in conversation order.
    pub session: usize,
    pub timestamp: DateTime<Utc>,
}

/// `count` turns of one subject's conversation, deterministic in `seed`:
/// sessions of 2 to 30 turns, user and assistant taking turns (the user
/// first), minutes apart within a session and hours to days between
/// sessions; the last turn an hour before `now`. Users state things (the
/// memories' sentences, first-person news, plans at made-up places, with
/// relative dates the index resolves) and ask; assistants acknowledge,
/// ask back and recall, naming the same people and things.
pub(super) fn conversation(count: usize, seed: u64, now: DateTime<Utc>) -> Vec<Turn> {
    let mut rng = Rng(seed | 1);
    // Offsets in seconds from the first turn, computed forward, then
    // anchored on `now` (whole seconds: what the log stores exactly).
    let mut offsets = Vec::with_capacity(count);
    let mut turns = Vec::with_capacity(count);
    let (mut at, mut session, mut left, mut position) = (0i64, 0usize, 0usize, 0usize);
    while turns.len() < count {
        if left == 0 {
            if !turns.is_empty() {
                session += 1;
                at += 6 * 3_600 + rng.below(4 * 86_400) as i64;
            }
            left = 2 + rng.below(MAX_SESSION_TURNS - 1);
            position = 0;
        } else {
            at += 20 + rng.below(180) as i64;
        }
        let (role, content) = match position % 2 {
            0 => (Role::User, user_turn(&mut rng)),
            _ => (Role::Assistant, assistant_turn(&mut rng)),
        };
        offsets.push(at);
        turns.push(Turn {
            role,
            content,
            session,
            timestamp: now,
        });
        left -= 1;
        position += 1;
    }
    let last = DateTime::from_timestamp(now.timestamp() - 3_600, 0).unwrap_or(now);
    let end = offsets.last().copied().unwrap_or(0);
    for (turn, offset) in turns.iter_mut().zip(offsets) {
        turn.timestamp = last - chrono::Duration::seconds(end - offset);
    }
    turns
}

fn user_turn(rng: &mut Rng) -> String {
    let (name, object) = (rng.pick(&NAMES), rng.pick(&OBJECTS));
    match rng.below(6) {
        0 => memory_text(rng),
        1 => format!(
            "{} {name} {} {object} {} {}.",
            rng.pick(&["Guess what:", "By the way,", "Quick update:", "Oh, and"]),
            rng.pick(&VERBS),
            rng.pick(&PLACES),
            rng.pick(&TIMES)
        ),
        2 => format!(
            "I {} {object} {}{}.",
            rng.pick(&VERBS),
            rng.pick(&TIMES),
            match rng.below(2) {
                0 => format!(" {}", rng.pick(&REASONS)),
                _ => String::new(),
            }
        ),
        3 => format!(
            "Can you remind me what {name} said about {object} {}?",
            rng.pick(&TIMES)
        ),
        4 => format!(
            "We are meeting at the {} {} {}.",
            rare_name(rng),
            rng.pick(&KINDS_OF_PLACE),
            rng.pick(&TIMES)
        ),
        _ => capitalize(&format!(
            "{name} and I talked about {object} {}, {}.",
            rng.pick(&PLACES),
            rng.pick(&REASONS)
        )),
    }
}

fn assistant_turn(rng: &mut Rng) -> String {
    let (name, object) = (rng.pick(&NAMES), rng.pick(&OBJECTS));
    match rng.below(5) {
        0 => format!("That sounds lovely! How does {name} feel about {object}?"),
        1 => format!(
            "Noted: {object} {}. Anything else to remember {}?",
            rng.pick(&PLACES),
            rng.pick(&TIMES)
        ),
        2 => format!(
            "Sure, I will remind you about {object} {}.",
            rng.pick(&TIMES)
        ),
        3 => format!(
            "You mentioned that {name} {} {object} before.",
            rng.pick(&VERBS)
        ),
        _ => format!(
            "Got it. Is the {} {} still open {}?",
            rare_name(rng),
            rng.pick(&KINDS_OF_PLACE),
            rng.pick(&TIMES)
        ),
    }
}

/// A conversation ready to load: its turns, the event id each will be
/// appended under, and a memo holding the vector of every text the index
/// will embed.
pub(super) struct Conversation {
    turns: Vec<Turn>,
    event_ids: Vec<EventId>,
    embedder: Arc<CachedEmbedder>,
}

impl Conversation {
    pub fn len(&self) -> usize {
        self.turns.len()
    }
}

fn session_id(number: usize) -> anyhow::Result<SessionId> {
    Ok(SessionId::parse(format!("session-{number:05}"))?)
}

/// The episodes the projection will see once `turns` are in the log
/// under `event_ids`, each with the turn before it.
fn expected_episodes(
    subject: &SubjectId,
    turns: &[Turn],
    event_ids: &[EventId],
) -> anyhow::Result<Vec<(Option<Episode>, Episode)>> {
    let stream_id = streams::conversation(subject);
    let mut episodes = Vec::with_capacity(turns.len());
    for (i, (turn, event_id)) in turns.iter().zip(event_ids).enumerate() {
        episodes.push(Episode {
            event_id: *event_id,
            stream_version: i as u64 + 1,
            stream_id: stream_id.clone(),
            subject: subject.clone(),
            role: turn.role,
            content: turn.content.clone(),
            // Ingest's own id when the client gives none.
            message_id: event_id.to_string(),
            session: Some(session_id(turn.session)?),
            agent: None,
            timestamp: turn.timestamp,
        });
    }
    Ok(episodes::with_previous(&episodes, 1))
}

/// Generates `count` turns and embeds what the index will be given for
/// them (each turn alone; its key adds the one before it). Returns the conversation and
/// the embedding time.
pub(super) async fn prepare(
    subject: &SubjectId,
    count: usize,
    seed: u64,
    embedder: &Arc<dyn Embedder>,
) -> anyhow::Result<(Conversation, Duration)> {
    let turns = conversation(count, seed, Utc::now());
    let event_ids: Vec<EventId> = (0..count).map(|_| EventId::new()).collect();
    let texts: Vec<String> = expected_episodes(subject, &turns, &event_ids)?
        .iter()
        .map(|(_, episode)| episode.content.clone())
        .collect();
    let memo = Arc::new(CachedEmbedder::new(embedder.clone(), count));
    let (_, elapsed) = super::embed_all(texts, &(memo.clone() as Arc<dyn Embedder>)).await?;
    Ok((
        Conversation {
            turns,
            event_ids,
            embedder: memo,
        },
        elapsed,
    ))
}

/// Appends the conversation to `log` as ingest would, and moves the relay's
/// checkpoint past it (`checkpoints` on the same database).
pub(super) async fn append(
    log: &SealedLog,
    checkpoints: &dyn CheckpointStore,
    tenant: &TenantId,
    subject: &SubjectId,
    conversation: &Conversation,
) -> anyhow::Result<()> {
    let stream_id = streams::conversation(subject);
    let metadata = EventMetadata {
        actor: "bench".into(),
        ..Default::default()
    };
    let pairs: Vec<(&Turn, &EventId)> = conversation
        .turns
        .iter()
        .zip(&conversation.event_ids)
        .collect();
    for batch in pairs.chunks(APPEND_BATCH) {
        let mut pending = Vec::with_capacity(batch.len());
        for (turn, event_id) in batch {
            pending.push(Pending {
                event_id: **event_id,
                subject: Some(subject.clone()),
                event: DomainEvent::MessageReceived(MessageReceived {
                    message_id: event_id.to_string(),
                    role: turn.role,
                    content: SubjectText::new(turn.content.clone()),
                    timestamp: turn.timestamp,
                    session: Some(session_id(turn.session)?),
                    agent: None,
                    pii: Default::default(),
                }),
                metadata: metadata.clone(),
            });
        }
        log.append(tenant, &stream_id, ExpectedVersion::Any, pending)
            .await?;
    }
    let head = log.store().head_position().await?;
    checkpoints.save(mnemo_bus::relay::CHECKPOINT, head).await?;
    Ok(())
}

/// Indexes the conversation from the log as the episode projection does;
/// refuses to when what the log gives back is not what was appended.
/// Returns how many points were written.
pub(super) async fn index(
    log: &SealedLog,
    index: &dyn VectorIndex,
    tenant: &TenantId,
    subject: &SubjectId,
    conversation: &Conversation,
) -> anyhow::Result<u64> {
    let stream_id = streams::conversation(subject);
    let turns = episodes::read_turns(log, tenant, &stream_id, 1, conversation.len() as u64).await?;
    let pairs = episodes::with_previous(&turns, 1);
    anyhow::ensure!(
        pairs == expected_episodes(subject, &conversation.turns, &conversation.event_ids)?,
        "the log gave back other turns than were appended"
    );
    let generation = log
        .cipher()
        .live_generation(tenant, subject)
        .await?
        .context("the subject's key is gone")?;
    let mut written = 0;
    for chunk in pairs.chunks(UPSERT_CHUNK) {
        written += episodes::index_episodes(
            log.cipher(),
            conversation.embedder.as_ref(),
            index,
            tenant,
            generation,
            chunk,
        )
        .await
        .context("cannot index the episodes")?;
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn now() -> DateTime<Utc> {
        DateTime::from_timestamp(1_780_000_000, 0).unwrap()
    }

    #[test]
    fn the_conversation_is_deterministic_in_its_seed() {
        assert_eq!(conversation(500, 7, now()), conversation(500, 7, now()));
        assert_ne!(conversation(500, 7, now()), conversation(500, 8, now()));
    }

    #[test]
    fn the_conversation_is_varied_and_shaped_like_sessions() {
        let turns = conversation(2_000, 42, now());
        assert_eq!(turns.len(), 2_000);
        let distinct: HashSet<&str> = turns.iter().map(|t| t.content.as_str()).collect();
        assert!(distinct.len() > 1_900, "{} distinct turns", distinct.len());
        let words: HashSet<&str> = turns
            .iter()
            .flat_map(|t| t.content.split_whitespace())
            .collect();
        assert!(words.len() > 1_000, "{} distinct words", words.len());

        let sessions = turns.last().unwrap().session + 1;
        assert!((70..=250).contains(&sessions), "{sessions} sessions");
        let mut lengths = vec![0usize; sessions];
        for turn in &turns {
            lengths[turn.session] += 1;
        }
        assert!(lengths[..sessions - 1]
            .iter()
            .all(|n| (2..=MAX_SESSION_TURNS).contains(n)));
        assert!(lengths.iter().collect::<HashSet<_>>().len() > 10);

        for pair in turns.windows(2) {
            assert!(pair[0].timestamp < pair[1].timestamp);
            if pair[0].session == pair[1].session {
                // Each session opens with the user; then they take turns.
                assert_ne!(pair[0].role, pair[1].role);
                assert!(pair[1].timestamp - pair[0].timestamp < chrono::Duration::minutes(5));
            } else {
                assert_eq!(pair[1].role, Role::User);
                assert!(pair[1].timestamp - pair[0].timestamp >= chrono::Duration::hours(6));
            }
        }
        assert_eq!(turns[0].role, Role::User);
        assert_eq!(
            turns.last().unwrap().timestamp,
            now() - chrono::Duration::hours(1)
        );
        // Relative dates for the index to resolve.
        let dated = turns
            .iter()
            .filter(|t| t.content.contains("yesterday") || t.content.contains("last month"))
            .count();
        assert!(dated > 20, "{dated} turns with a relative date");
    }
}
