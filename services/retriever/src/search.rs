//! Search and context endpoints: hybrid retrieval over the vector index,
//! memories and episodes (what was said) in one candidate list, ranked with
//! recency and importance, diversified with MMR, explained component by
//! component, and reported to the forgetter as access signals.

use actix_web::{web, HttpResponse};
use chrono::{DateTime, Utc};
use mnemo_auth::Scope;
use mnemo_crypto::TokenPurpose;
use std::collections::{HashMap, HashSet};

use mnemo_domain::dates;
use mnemo_domain::events::RelationKind;
use mnemo_domain::ids::MAX_ID_LEN;
use mnemo_domain::memory::{MAX_TAGS, MAX_TAG_CHARS};
use mnemo_domain::signals::AccessSignal;
use mnemo_domain::{
    EventId, Memory, MemoryId, MemoryKind, MemoryState, SessionId, SubjectId, TenantId,
};
use mnemo_http::views::MemoryView;
use mnemo_http::{ApiError, Authenticated, SubjectPath};
use mnemo_vector_index::{Hit, PointType, SearchFilter, SearchMode, SearchRequest as IndexRequest};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::context::{
    build_query, estimate_tokens, format_block, profile_section, BlockLine, LineKind,
};
use crate::cues::{named_speakers, question_share, speaker_of, without_names, QueryDates};
use crate::episodes::{read_turns, Episode, EPISODE_IMPORTANCE, MAX_WINDOW};
use crate::error::{ReadError, SearchError};
use crate::ranking::{rank, Candidate, Ranked};
use crate::review::Profile;
use crate::RetrieverState;

const MAX_K: usize = 100;
/// The window of a context's episodes unless asked: the turn before an
/// episode (which it is indexed under) and the one after. Within the same
/// token budget it recalled more than the episode alone on the LoCoMo dev
/// split (78.9 against 75.0 of the evidence turns in a 1000-token block).
const CONTEXT_WINDOW: u8 = 1;
/// Whether search and context run the second, feedback pass unless asked.
const DEFAULT_FEEDBACK: bool = false;
const MAX_QUERY_CHARS: usize = 4_000;
/// Hops of premise / cause edges followed from each hit by default.
const DEFAULT_EXPAND_DEPTH: u8 = 2;
const MAX_EXPAND_DEPTH: u8 = 2;

#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    #[default]
    Hybrid,
    Semantic,
    Keyword,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Filters {
    #[serde(default)]
    pub kinds: Vec<MemoryKind>,
    #[serde(default)]
    pub tags: Vec<String>,
    pub session: Option<String>,
    pub agent: Option<String>,
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
    pub min_importance: Option<f32>,
    #[serde(default)]
    pub include_archived: bool,
}

/// What a search returns: curated memories, episodes (what was said), or
/// both (the default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Include {
    Memories,
    Episodes,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchInput {
    pub query: String,
    pub k: Option<usize>,
    #[serde(default)]
    pub mode: Mode,
    #[serde(default)]
    pub filters: Filters,
    /// Hops of premise / cause edges to follow from each hit (0–2).
    pub expand_depth: Option<u8>,
    /// Memories, episodes or both (default both).
    pub include: Option<Vec<Include>>,
    /// Turns on each side of an episode to return with it (0–2, default 0).
    pub window: Option<u8>,
    /// Recursive retrieval: a second pass with the best results' text.
    pub feedback: Option<bool>,
}

/// The point types `include` asks for (both when absent). A kind filter
/// is a memory filter: with one, no episode can match.
fn point_types(
    include: Option<&[Include]>,
    filters: &Filters,
) -> Result<Vec<PointType>, SearchError> {
    let include = include.unwrap_or(&[Include::Memories, Include::Episodes]);
    if include.is_empty() {
        return Err(SearchError::EmptyInclude);
    }
    let mut types = Vec::new();
    if include.contains(&Include::Memories) {
        types.push(PointType::Memory);
    }
    if include.contains(&Include::Episodes) && filters.kinds.is_empty() {
        types.push(PointType::Episode);
    }
    if types.is_empty() {
        // Episodes only, with a kind filter: nothing can match. Ask the
        // index for episodes of no kind rather than for memories.
        types.push(PointType::Episode);
    }
    Ok(types)
}

fn check_window(window: Option<u8>) -> Result<u8, SearchError> {
    match window.unwrap_or(0) {
        window if window <= MAX_WINDOW => Ok(window),
        _ => Err(SearchError::InvalidWindow { max: MAX_WINDOW }),
    }
}

fn check_expand_depth(depth: Option<u8>) -> Result<u8, SearchError> {
    match depth.unwrap_or(DEFAULT_EXPAND_DEPTH) {
        depth if depth <= MAX_EXPAND_DEPTH => Ok(depth),
        _ => Err(SearchError::InvalidExpandDepth {
            max: MAX_EXPAND_DEPTH,
        }),
    }
}

/// Refuses a session or agent filter longer than any id can be: the
/// domain's id length, [`MAX_ID_LEN`] (bytes, as ids are ASCII).
fn check_id_filter(field: &'static str, value: Option<&str>) -> Result<(), SearchError> {
    match value {
        Some(v) if v.len() > MAX_ID_LEN => Err(SearchError::FilterTooLong {
            field,
            max: MAX_ID_LEN,
        }),
        _ => Ok(()),
    }
}

fn to_filter(subject: &SubjectId, filters: &Filters) -> Result<SearchFilter, SearchError> {
    // Bounds first: a longer value could match no memory, and would be
    // carried into every leg of the index query.
    check_id_filter("filters.session", filters.session.as_deref())?;
    check_id_filter("filters.agent", filters.agent.as_deref())?;
    if filters.tags.len() > MAX_TAGS {
        return Err(SearchError::TooManyTags { max: MAX_TAGS });
    }
    if filters
        .tags
        .iter()
        .any(|t| t.trim().chars().count() > MAX_TAG_CHARS)
    {
        return Err(SearchError::FilterTooLong {
            field: "filters.tags[]",
            max: MAX_TAG_CHARS,
        });
    }
    if let Some(value) = filters.min_importance {
        if !(0.0..=1.0).contains(&value) {
            return Err(SearchError::OutOfRange {
                field: "min_importance",
            });
        }
    }
    if let (Some(from), Some(to)) = (filters.from, filters.to) {
        if from > to {
            return Err(SearchError::InvalidRange);
        }
    }
    let mut states = vec![MemoryState::Active];
    if filters.include_archived {
        states.push(MemoryState::Archived);
    }
    Ok(SearchFilter {
        subject: Some(subject.clone()),
        types: vec![PointType::Memory],
        kinds: filters.kinds.clone(),
        tags: filters
            .tags
            .iter()
            .map(|t| t.trim().to_lowercase())
            .collect(),
        states,
        session: filters.session.clone(),
        agent: filters.agent.clone(),
        created_from: filters.from.map(|t| t.timestamp()),
        created_to: filters.to.map(|t| t.timestamp()),
        min_importance: filters.min_importance,
    })
}

/// An episode found by a search, with the turns around it when a window
/// was asked (in conversation order, itself included).
#[derive(Debug, Clone)]
pub struct EpisodeHit {
    pub episode: Episode,
    pub turns: Vec<Episode>,
}

/// What a result is.
#[derive(Debug, Clone)]
pub enum Item {
    Memory(Memory),
    Episode(EpisodeHit),
}

/// One ranked result with everything that explains it.
pub struct Found {
    pub item: Item,
    pub parts: crate::ranking::ScoreParts,
    pub fused: f64,
    pub dense_rank: Option<usize>,
    pub sparse_rank: Option<usize>,
    pub dense_similarity: Option<f32>,
    /// Set on a memory found by following an edge rather than ranked: it
    /// explains (is the premise or cause of) the memory `of`.
    pub via: Option<Via>,
}

#[derive(Debug, Clone, Copy)]
pub struct Via {
    pub relation: RelationKind,
    pub of: MemoryId,
}

impl Found {
    pub fn memory(&self) -> Option<&Memory> {
        match &self.item {
            Item::Memory(memory) => Some(memory),
            Item::Episode(_) => None,
        }
    }

    pub fn episode(&self) -> Option<&EpisodeHit> {
        match &self.item {
            Item::Memory(_) => None,
            Item::Episode(hit) => Some(hit),
        }
    }

    /// The messages this result stands for: a memory's sources, or exactly
    /// the turns an episode result returns.
    pub fn source_event_ids(&self) -> Vec<EventId> {
        match &self.item {
            Item::Memory(memory) => memory.provenance.source_event_ids.clone(),
            Item::Episode(hit) => hit.turns.iter().map(|t| t.event_id).collect(),
        }
    }

    /// The text it would put in a prompt (`None` for an erased memory).
    pub fn text(&self) -> Option<&str> {
        match &self.item {
            Item::Memory(memory) => memory.content.as_text(),
            Item::Episode(hit) => Some(&hit.episode.content),
        }
    }

    pub fn to_json(&self) -> Value {
        let provenance = json!({
            "source_event_ids": self
                .source_event_ids()
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
        });
        let (kind, body) = match &self.item {
            Item::Memory(memory) => ("memory", json!({"memory": MemoryView::of(memory)})),
            Item::Episode(hit) => {
                let mut episode = hit.episode.to_json();
                episode["turns"] = hit.turns.iter().map(Episode::to_json).collect();
                ("episode", json!({ "episode": episode }))
            }
        };
        let mut result = json!({
            "type": kind,
            "provenance": provenance,
            "score": self.parts.final_score,
            "via": self.via.map(|via| json!({"relation": via.relation.as_str(), "of": via.of.to_string()})),
            "components": {
                "fused": self.fused,
                "dense_rank": self.dense_rank,
                "sparse_rank": self.sparse_rank,
                "dense_similarity": self.dense_similarity,
                "relevance": self.parts.relevance,
                "recency": self.parts.recency,
                "importance": self.parts.importance,
                "combined": self.parts.combined,
                "redundancy": self.parts.redundancy,
            },
        });
        if let (Some(result), Value::Object(body)) = (result.as_object_mut(), body) {
            result.extend(body);
        }
        result
    }
}

/// A ranked search of one subject's memories, validated: what [`find`]
/// runs.
#[derive(Debug, Clone)]
pub struct FindRequest {
    pub tenant: TenantId,
    pub subject: SubjectId,
    pub query: String,
    pub k: usize,
    pub mode: Mode,
    /// Its `types` say whether episodes are searched too.
    pub filter: SearchFilter,
    /// Hops of premise / cause edges to follow from each hit (0–2).
    pub expand_depth: u8,
    /// Turns on each side of an episode to return with it (0–2).
    pub window: u8,
    /// Recursive retrieval (seed 003): query again with the question and
    /// the text of the first pass's best results, and fuse both passes.
    pub feedback: bool,
}

/// The ids of the memory hits and of the episode hits, in hit order.
/// Collected rather than iterated: an iterator over the hits held across
/// the hydration's awaits would make the future's type depend on a borrow
/// it cannot name.
fn ids_by_type(hits: &[Hit]) -> (Vec<MemoryId>, Vec<MemoryId>) {
    let of = |wanted: PointType| -> Vec<MemoryId> {
        hits.iter()
            .filter(|hit| hit.payload.point_type == wanted)
            .map(|hit| hit.id)
            .collect()
    };
    (of(PointType::Memory), of(PointType::Episode))
}

/// Results of the first pass whose text feeds the second.
const FEEDBACK_RESULTS: usize = 3;

/// The second pass of recursive retrieval: the question and the text of
/// the first pass's best [`FEEDBACK_RESULTS`] results (pseudo-relevance
/// feedback, no model needed) make a new query; its hits and the first
/// pass's are fused with RRF (the index's constant), so a result both
/// passes find rises, and what only the expanded query reaches (the other
/// half of a multi-hop answer) can enter.
async fn second_pass(
    state: &RetrieverState,
    tenant: &TenantId,
    subject: &SubjectId,
    query: &str,
    mode: Mode,
    request: IndexRequest,
    first: Vec<Hit>,
) -> Result<Vec<Hit>, SearchError> {
    let top = &first[..first.len().min(FEEDBACK_RESULTS)];
    let (memory_ids, episode_ids) = ids_by_type(top);
    let rows = hydrate(state, tenant, memory_ids).await?;
    let episodes = hydrate_episodes(state, tenant, subject, episode_ids).await?;
    let mut expanded = query.to_owned();
    for hit in top {
        let text = match hit.payload.point_type {
            PointType::Memory => rows.get(&hit.id).and_then(|m| m.content.as_text()),
            PointType::Episode => episodes.get(&hit.id).map(|e| e.episode.content.as_str()),
        };
        if let Some(text) = text {
            expanded.push('\n');
            expanded.push_str(text);
        }
    }
    let expanded: String = expanded.chars().take(MAX_QUERY_CHARS).collect();
    let dense = query_vector(state, &expanded, mode).await?;
    let second = state
        .index
        .search(
            tenant,
            &IndexRequest {
                dense,
                text: Some(expanded),
                ..request
            },
        )
        .await
        .map_err(SearchError::Index)?;
    Ok(fuse_passes(first, second, state.rrf_k))
}

/// RRF over two hit lists by id: a hit at 0-based position `r` of a list
/// adds `1 / (k + r)`. A hit keeps what the first pass said of it (its
/// legs' ranks), else the second's; its `score` becomes the fused one.
fn fuse_passes(first: Vec<Hit>, second: Vec<Hit>, k: u32) -> Vec<Hit> {
    let mut fused: Vec<(f64, Hit)> = Vec::with_capacity(first.len() + second.len());
    let mut at: HashMap<MemoryId, usize> = HashMap::new();
    for list in [first, second] {
        for (rank, hit) in list.into_iter().enumerate() {
            let add = 1.0 / (f64::from(k) + rank as f64);
            match at.get(&hit.id) {
                Some(&i) => fused[i].0 += add,
                None => {
                    at.insert(hit.id, fused.len());
                    fused.push((add, hit));
                }
            }
        }
    }
    fused.sort_by(|a, b| b.0.total_cmp(&a.0));
    fused
        .into_iter()
        .map(|(score, mut hit)| {
            hit.score = score as f32;
            hit
        })
        .collect()
}

/// Runs a ranked search for one subject, then follows premise and cause
/// edges from the hits `expand_depth` hops back (see [`expand`]).
/// What a tag or session filter asks for when the subject has no key: a
/// token no value has, so the filter matches nothing (there is nothing of
/// the subject to match).
const NO_TOKEN: &str = "tk1_";

/// The filter with its tags and session replaced by their keyed tokens
/// under the subject's live key, which is how the index stores them.
async fn with_tokens(
    state: &RetrieverState,
    tenant: &TenantId,
    subject: &SubjectId,
    mut filter: SearchFilter,
) -> Result<SearchFilter, SearchError> {
    let cipher = state.log.cipher();
    let token = |purpose, value: String| async move {
        cipher
            .live_token(tenant, subject, purpose, &value)
            .await
            .map(|t| t.unwrap_or_else(|| NO_TOKEN.to_owned()))
            .map_err(|e| SearchError::Read(ReadError::Log(e.into())))
    };
    let mut tags = Vec::with_capacity(filter.tags.len());
    for tag in std::mem::take(&mut filter.tags) {
        tags.push(token(TokenPurpose::Tag, tag).await?);
    }
    filter.tags = tags;
    if let Some(session) = filter.session.take() {
        filter.session = Some(token(TokenPurpose::Session, session).await?);
    }
    Ok(filter)
}

pub async fn find_memories(
    state: &RetrieverState,
    request: FindRequest,
) -> Result<Vec<Found>, SearchError> {
    let FindRequest {
        tenant,
        subject,
        query,
        k,
        mode,
        filter,
        expand_depth,
        window,
        feedback,
    } = request;
    let (tenant, subject, query) = (&tenant, &subject, query.as_str());
    let filter = with_tokens(state, tenant, subject, filter).await?;
    let mut request = IndexRequest {
        filter,
        dense: query_vector(state, query, mode).await?,
        text: Some(query.to_owned()),
        mode: match mode {
            Mode::Hybrid => SearchMode::Hybrid,
            Mode::Semantic => SearchMode::Semantic,
            Mode::Keyword => SearchMode::Keyword,
        },
        // Rank and diversify over more than k: MMR needs room to choose.
        limit: (k * 4).max(40),
        prefetch: (k * 10).max(100),
        rrf_k: state.rrf_k,
        // The vectors serve diversity only: without it (the default) they
        // are neither read nor compared.
        with_vectors: state.ranking.diversifies(),
    };
    let mut hits = state
        .index
        .search(tenant, &request)
        .await
        .map_err(SearchError::Index)?;
    // The memories' rows are read once every pass is done, and for a
    // memory-only result only those ranked in (`rank_memories_first`).
    let (_, episode_ids) = ids_by_type(&hits);
    // Windows only for the episodes ranked in, below: the hits number four
    // times k or more, and each window is a read of the log.
    let mut episodes = hydrate_episodes(state, tenant, subject, episode_ids).await?;
    // A query naming a speaker of the conversation: search again without
    // the name, and prefer that speaker's turns (see `cues`).
    let mut query = query.to_owned();
    let named = if state.ranking.speaker_boost != 1.0 {
        named_speakers(
            &query,
            episodes
                .values()
                .filter_map(|found| speaker_of(&found.episode.content)),
        )
    } else {
        Vec::new()
    };
    if let Some(stripped) = without_names(&query, &named) {
        request.dense = query_vector(state, &stripped, mode).await?;
        request.text = Some(stripped.clone());
        query = stripped;
        hits = state
            .index
            .search(tenant, &request)
            .await
            .map_err(SearchError::Index)?;
        hydrate_missing(state, tenant, subject, &hits, &mut episodes).await?;
    }
    // "What did she paint on October 13, 2023?" by what was said then:
    // the episodes of those days join the candidates (a search within
    // them), and weigh more below.
    let named_dates = if state.ranking.on_date_boost != 1.0 {
        QueryDates::of(&query, Utc::now().date_naive())
    } else {
        QueryDates::default()
    };
    if let Some(within) = named_dates.within(&request) {
        let extra = state
            .index
            .search(tenant, &within)
            .await
            .map_err(SearchError::Index)?;
        let known: HashSet<MemoryId> = hits.iter().map(|hit| hit.id).collect();
        hits.extend(extra.into_iter().filter(|hit| !known.contains(&hit.id)));
        hydrate_missing(state, tenant, subject, &hits, &mut episodes).await?;
    }
    if feedback && !hits.is_empty() {
        hits = second_pass(state, tenant, subject, &query, mode, request, hits).await?;
        hydrate_missing(state, tenant, subject, &hits, &mut episodes).await?;
    }
    let mut found = if !has_episodes(&hits) && !state.ranking.diversifies() {
        rank_memories_first(state, tenant, hits, k).await?
    } else {
        let rows = hydrate(state, tenant, ids_by_type(&hits).0).await?;
        rank_candidates(
            state,
            tenant,
            subject,
            &query,
            hits,
            rows,
            episodes,
            &named,
            &named_dates,
            k,
        )
        .await?
    };
    if window > 0 {
        add_windows(state, tenant, &mut found, window).await?;
    }
    let extras = expand(state, tenant, subject, &found, k, expand_depth).await?;
    found.extend(extras);
    signal_access(state, tenant, subject, &found);
    Ok(found)
}

/// Memory hits alone, without diversity: ranked on what their points
/// carry (the fused score, and the importance and update time the payload
/// holds), then only the rows ranked in are read, the next ones only for
/// a row found missing (erased, or not projected yet). The index returns
/// four times k hits or more, and reading and opening a row was most of
/// what search added to the index's own time.
async fn rank_memories_first(
    state: &RetrieverState,
    tenant: &TenantId,
    hits: Vec<Hit>,
    k: usize,
) -> Result<Vec<Found>, SearchError> {
    let candidates: Vec<Candidate<Hit>> = hits
        .into_iter()
        .map(|hit| Candidate {
            relevance: f64::from(hit.score),
            importance: f64::from(hit.payload.importance),
            updated_at: DateTime::from_timestamp(hit.payload.updated_at, 0).unwrap_or_default(),
            dense: None,
            item: hit,
        })
        .collect();
    let all = candidates.len();
    let mut ranked = rank(candidates, all, &state.ranking, Utc::now()).into_iter();
    let mut found = Vec::with_capacity(k);
    while found.len() < k {
        let next: Vec<Ranked<Hit>> = ranked.by_ref().take(k - found.len()).collect();
        if next.is_empty() {
            break;
        }
        let mut rows = hydrate(state, tenant, next.iter().map(|r| r.item.id)).await?;
        for Ranked { item: hit, parts } in next {
            let Some(memory) = rows.remove(&hit.id) else {
                continue;
            };
            found.push(Found {
                item: Item::Memory(memory),
                parts,
                fused: f64::from(hit.score),
                dense_rank: hit.dense_rank,
                sparse_rank: hit.sparse_rank,
                dense_similarity: hit.dense_score,
                via: None,
            });
        }
    }
    Ok(found)
}

/// Ranks memories and episodes together: the cues' boosts, the memories'
/// said-at recency beside episodes, the neighbour lift, MMR.
#[allow(clippy::too_many_arguments)]
async fn rank_candidates(
    state: &RetrieverState,
    tenant: &TenantId,
    subject: &SubjectId,
    query: &str,
    hits: Vec<Hit>,
    mut rows: HashMap<MemoryId, Memory>,
    mut episodes: HashMap<MemoryId, EpisodeHit>,
    named: &[String],
    named_dates: &QueryDates,
    k: usize,
) -> Result<Vec<Found>, SearchError> {
    // "When did she ...?" is answered by what was said with a date.
    let dated_boost = if dates::asks_when(query) {
        state.ranking.dated_boost
    } else {
        1.0
    };
    // Beside episodes, a memory ranks by when what it holds was said, as
    // an episode does: a memory consolidated today from a conversation
    // of last year is not fresh, and ranked by its row's time it
    // outranked the turns it came from on recency alone.
    let said_at = if has_episodes(&hits) {
        let ranked = hits.iter().filter_map(|hit| rows.get(&hit.id));
        said_at(state, tenant, subject, ranked, &episodes).await?
    } else {
        HashMap::new()
    };
    let mut candidates = Vec::with_capacity(hits.len());
    for hit in hits {
        // A point whose row or message is gone (erased, or not projected
        // yet) is skipped. The index returns a point once, so `remove`
        // takes each row for its only hit.
        let (item, importance, updated_at) = match hit.payload.point_type {
            PointType::Memory => match rows.remove(&hit.id) {
                Some(memory) => {
                    let importance = memory.importance;
                    let at = said_at
                        .get(&memory.id)
                        .copied()
                        .unwrap_or(memory.updated_at);
                    (Item::Memory(memory), importance, at)
                }
                None => continue,
            },
            PointType::Episode => match episodes.remove(&hit.id) {
                Some(found) => {
                    let at = found.episode.timestamp;
                    (Item::Episode(found), EPISODE_IMPORTANCE, at)
                }
                None => continue,
            },
        };
        let mut boost = 1.0;
        if let Item::Episode(found) = &item {
            let episode = &found.episode;
            if dated_boost != 1.0 && episode.names_a_date() {
                boost *= dated_boost;
            }
            if !named.is_empty()
                && speaker_of(&episode.content).is_some_and(|s| named.iter().any(|n| n == s))
            {
                boost *= state.ranking.speaker_boost;
            }
            if !named_dates.is_empty() && named_dates.meets(episode.timestamp, &episode.content) {
                boost *= state.ranking.on_date_boost;
            }
        }
        candidates.push(Candidate {
            relevance: f64::from(hit.score) * boost,
            importance: f64::from(importance),
            updated_at,
            dense: hit.dense.clone(),
            item: (item, hit),
        });
    }
    lift_neighbours(&mut candidates, state.ranking.neighbour_weight);
    // After the lift: a question still lifts the answer that follows it.
    weigh_questions(&mut candidates, state.ranking.question_weight);
    // Twice k: an episode folded into its memory below leaves a place.
    let ranked = rank(candidates, k * 2, &state.ranking, Utc::now());
    let found: Vec<Found> = ranked
        .into_iter()
        .map(|r| {
            let (item, hit): (Item, Hit) = r.item;
            Found {
                item,
                parts: r.parts,
                fused: f64::from(hit.score),
                dense_rank: hit.dense_rank,
                sparse_rank: hit.sparse_rank,
                dense_similarity: hit.dense_score,
                via: None,
            }
        })
        .collect();
    let mut found = fold_into_memories(found);
    found.truncate(k);
    Ok(found)
}

/// Never a memory and the episode it came from both, as in the context
/// block ([`keep_for_block`]): the memory, curated, is kept at the better
/// of the two places, and the places freed go to the next results: a
/// memory and its turn took two of the ten places for one thing said. On
/// the LoCoMo dev split, served over one ingest, recall@10 rose 0.3 and
/// multi-hop recall@10 0.5 (docs/operations.md).
fn fold_into_memories(found: Vec<Found>) -> Vec<Found> {
    let mut made_from: HashMap<EventId, usize> = HashMap::new();
    for (at, f) in found.iter().enumerate() {
        if f.memory().is_some() {
            for source in f.source_event_ids() {
                made_from.entry(source).or_insert(at);
            }
        }
    }
    if made_from.is_empty() {
        return found;
    }
    let mut slots: Vec<Option<Found>> = found.into_iter().map(Some).collect();
    let mut kept = Vec::with_capacity(slots.len());
    for at in 0..slots.len() {
        let Some(f) = slots[at].take() else {
            continue;
        };
        match &f.item {
            Item::Episode(hit) => {
                if let Some(&memory_at) = made_from.get(&hit.episode.event_id) {
                    // The memory moves up here, once; a second episode of
                    // the same memory is left out.
                    kept.extend(slots[memory_at].take());
                    continue;
                }
                kept.push(f);
            }
            Item::Memory(_) => kept.push(f),
        }
    }
    kept
}

/// Adds the episodes of the hits not read yet (a later pass finds mostly
/// what the first found).
async fn hydrate_missing(
    state: &RetrieverState,
    tenant: &TenantId,
    subject: &SubjectId,
    hits: &[Hit],
    episodes: &mut HashMap<MemoryId, EpisodeHit>,
) -> Result<(), SearchError> {
    let episode_ids: Vec<MemoryId> = ids_by_type(hits)
        .1
        .into_iter()
        .filter(|id| !episodes.contains_key(id))
        .collect();
    episodes.extend(hydrate_episodes(state, tenant, subject, episode_ids).await?);
    Ok(())
}

/// Turns on each side whose relevance lifts an episode's.
const NEIGHBOURHOOD: u64 = 2;

/// Adds to each episode's relevance `weight` times the relevance of the
/// candidates up to [`NEIGHBOURHOOD`] turns before and after it in the
/// same session: what answers a question is often said over a few turns,
/// and a turn between two relevant ones is likelier relevant than one
/// alone. Read before any is changed, so the order of the candidates does
/// not matter.
fn lift_neighbours(candidates: &mut [Candidate<(Item, Hit)>], weight: f64) {
    if weight == 0.0 {
        return;
    }
    // Keyed by borrowed stream and session: no string copied per lookup.
    fn place(item: &Item) -> Option<(&str, Option<&SessionId>, u64)> {
        match item {
            Item::Episode(found) => Some((
                found.episode.stream_id.as_str(),
                found.episode.session.as_ref(),
                found.episode.stream_version,
            )),
            Item::Memory(_) => None,
        }
    }
    let relevance: HashMap<_, f64> = candidates
        .iter()
        .filter_map(|c| place(&c.item.0).map(|p| (p, c.relevance)))
        .collect();
    let lifts: Vec<f64> = candidates
        .iter()
        .map(|c| {
            let Some((stream, session, version)) = place(&c.item.0) else {
                return 0.0;
            };
            let near = version.saturating_sub(NEIGHBOURHOOD)..=version + NEIGHBOURHOOD;
            near.filter(|v| *v != version)
                .filter_map(|v| relevance.get(&(stream, session, v)))
                .sum()
        })
        .collect();
    for (candidate, lift) in candidates.iter_mut().zip(lifts) {
        candidate.relevance += weight * lift;
    }
}

/// Multiplies each episode's relevance by 1 − `weight` × the share of its
/// text that asks ([`question_share`]). Memories are statements and keep
/// theirs.
fn weigh_questions(candidates: &mut [Candidate<(Item, Hit)>], weight: f64) {
    if weight == 0.0 {
        return;
    }
    for candidate in candidates {
        if let Item::Episode(found) = &candidate.item.0 {
            candidate.relevance *= 1.0 - weight * question_share(&found.episode.content);
        }
    }
}

/// Whether episodes are among the hits, i.e. memories compete with them.
fn has_episodes(hits: &[Hit]) -> bool {
    hits.iter()
        .any(|hit| hit.payload.point_type == PointType::Episode)
}

/// When the source messages of these memories were said (the latest of
/// each memory's): from the episodes already read where a source is one,
/// the rest in one log call; a memory without readable sources (written
/// directly, or its messages erased) is absent.
async fn said_at<'a>(
    state: &RetrieverState,
    tenant: &TenantId,
    subject: &SubjectId,
    memories: impl Iterator<Item = &'a Memory>,
    episodes: &HashMap<MemoryId, EpisodeHit>,
) -> Result<HashMap<MemoryId, DateTime<Utc>>, SearchError> {
    let sources: Vec<(MemoryId, EventId)> = memories
        .flat_map(|memory| {
            memory
                .provenance
                .source_event_ids
                .iter()
                .map(move |source| (memory.id, *source))
        })
        .collect();
    let mut when: HashMap<EventId, DateTime<Utc>> = HashMap::new();
    let mut unread: Vec<EventId> = Vec::new();
    for (_, source) in &sources {
        match episodes.get(&crate::episodes::point_id(source)) {
            Some(found) => {
                when.insert(*source, found.episode.timestamp);
            }
            None => unread.push(*source),
        }
    }
    when.extend(
        read_episodes(state, tenant, subject, &unread)
            .await?
            .into_iter()
            .map(|episode| (episode.event_id, episode.timestamp)),
    );
    let mut said: HashMap<MemoryId, DateTime<Utc>> = HashMap::new();
    for (memory, source) in sources {
        if let Some(at) = when.get(&source) {
            let latest = said.entry(memory).or_insert(*at);
            *latest = (*latest).max(*at);
        }
    }
    Ok(said)
}

/// The query's dense vector, for the modes that search by meaning.
async fn query_vector(
    state: &RetrieverState,
    query: &str,
    mode: Mode,
) -> Result<Option<Vec<f32>>, SearchError> {
    match mode {
        Mode::Keyword => Ok(None),
        Mode::Hybrid | Mode::Semantic => Ok(Some(
            state
                .embedder
                .embed(&[query.to_owned()])
                .await
                .map_err(SearchError::Embed)?
                .pop()
                .ok_or(SearchError::NoQueryVector)?,
        )),
    }
}

/// The tenant's rows for these ids, by id, in one read-model call: search
/// asks for 40 or more at a time, and a call per id was a round trip (a
/// transaction, on PostgreSQL) per hit. Ids with no row are absent.
async fn hydrate(
    state: &RetrieverState,
    tenant: &TenantId,
    ids: impl IntoIterator<Item = MemoryId>,
) -> Result<HashMap<MemoryId, Memory>, SearchError> {
    let ids: Vec<MemoryId> = ids.into_iter().collect();
    let rows = state
        .read_model
        .get_many(tenant, &ids)
        .await
        .map_err(SearchError::ReadModel)?;
    Ok(rows.into_iter().map(|memory| (memory.id, memory)).collect())
}

/// The episodes of these points (message event ids), by point id, each
/// alone in its turns. A point whose message is no longer readable
/// (erased) or belongs to another subject is absent.
async fn hydrate_episodes(
    state: &RetrieverState,
    tenant: &TenantId,
    subject: &SubjectId,
    ids: Vec<MemoryId>,
) -> Result<HashMap<MemoryId, EpisodeHit>, SearchError> {
    // Every hit's message in one store call: most of a search's hits can be
    // episodes, and a read per hit was a round trip (a transaction, on
    // PostgreSQL) per episode found.
    let event_ids: Vec<EventId> = ids
        .iter()
        .map(|id| EventId::from_uuid(id.as_uuid()))
        .collect();
    Ok(read_episodes(state, tenant, subject, &event_ids)
        .await?
        .into_iter()
        .map(|episode| {
            let turns = vec![episode.clone()];
            (episode.point_id(), EpisodeHit { episode, turns })
        })
        .collect())
}

/// The subject's messages among these events, as episodes, in one log
/// call (none for no ids: a memory-only search asks the log nothing).
/// An erased message, or another subject's, is absent.
async fn read_episodes(
    state: &RetrieverState,
    tenant: &TenantId,
    subject: &SubjectId,
    event_ids: &[EventId],
) -> Result<Vec<Episode>, SearchError> {
    if event_ids.is_empty() {
        return Ok(Vec::new());
    }
    let messages = state
        .log
        .get_events(tenant, event_ids)
        .await
        .map_err(log_error)?;
    Ok(messages
        .iter()
        .filter_map(Episode::of)
        .filter(|episode| &episode.subject == subject)
        .collect())
}

fn log_error(error: mnemo_event_store::sealed::LogError) -> SearchError {
    SearchError::Read(ReadError::Log(error))
}

/// Gives each episode result the turns `window` on each side of it from
/// the same session, in conversation order.
async fn add_windows(
    state: &RetrieverState,
    tenant: &TenantId,
    found: &mut [Found],
    window: u8,
) -> Result<(), SearchError> {
    for result in found.iter_mut() {
        let Item::Episode(hit) = &mut result.item else {
            continue;
        };
        let version = hit.episode.stream_version;
        hit.turns = read_turns(
            &state.log,
            tenant,
            &hit.episode.stream_id,
            version.saturating_sub(u64::from(window)),
            version + u64::from(window),
        )
        .await
        .map_err(log_error)?
        .into_iter()
        .filter(|turn| turn.session == hit.episode.session)
        .collect();
    }
    Ok(())
}

/// The memories that explain the hits: for each hit, the `from` end of its
/// premise and cause edges (where the hit is `to`), then theirs, up to
/// `depth` hops, breadth first. They come after the hits and displace none;
/// at most `k` of them; only live memories (active or archived) of the same
/// tenant and subject that are not already in the results. Each scores its
/// parent's score times the edge's confidence.
async fn expand(
    state: &RetrieverState,
    tenant: &TenantId,
    subject: &SubjectId,
    hits: &[Found],
    k: usize,
    depth: u8,
) -> Result<Vec<Found>, SearchError> {
    let mut seen: HashSet<MemoryId> = hits
        .iter()
        .filter_map(|f| f.memory().map(|m| m.id))
        .collect();
    let mut extras: Vec<Found> = Vec::new();
    // (is_extra, index into hits or extras)
    let mut frontier: Vec<(bool, usize)> = (0..hits.len()).map(|i| (false, i)).collect();
    for _ in 0..depth {
        if extras.len() >= k {
            return Ok(extras);
        }
        // All the hop's edges first, parent by parent, so their rows come
        // in one read-model call; they are then followed in that order, so
        // the cap of k still keeps the earliest parents' explanations.
        let mut edges = Vec::new();
        for &(is_extra, index) in &frontier {
            let parent = if is_extra {
                &extras[index]
            } else {
                &hits[index]
            };
            // Episodes have no edges.
            let Some(memory) = parent.memory() else {
                continue;
            };
            for edge in memory
                .relations
                .iter()
                .filter(|r| r.to == memory.id && r.relation.explains())
            {
                if seen.insert(edge.from) {
                    edges.push((edge.clone(), memory.id, parent.parts.clone()));
                }
            }
        }
        if edges.is_empty() {
            break;
        }
        let mut rows = hydrate(state, tenant, edges.iter().map(|(e, ..)| e.from)).await?;
        let mut next = Vec::new();
        for (edge, parent_id, parent_parts) in edges {
            if extras.len() >= k {
                return Ok(extras);
            }
            let Some(memory) = rows.remove(&edge.from) else {
                continue;
            };
            let live = matches!(memory.state, MemoryState::Active | MemoryState::Archived);
            if &memory.subject != subject || !live || memory.content.as_text().is_none() {
                continue;
            }
            let weight = f64::from(edge.confidence);
            let parts = crate::ranking::ScoreParts {
                relevance: parent_parts.relevance * weight,
                recency: 0.0,
                importance: f64::from(memory.importance),
                combined: parent_parts.combined * weight,
                redundancy: 0.0,
                final_score: parent_parts.final_score * weight,
            };
            extras.push(Found {
                item: Item::Memory(memory),
                parts,
                fused: 0.0,
                dense_rank: None,
                sparse_rank: None,
                dense_similarity: None,
                via: Some(Via {
                    relation: edge.relation,
                    of: parent_id,
                }),
            });
            next.push((true, extras.len() - 1));
        }
        if next.is_empty() {
            break;
        }
        frontier = next;
    }
    Ok(extras)
}

/// Tells the forgetter which memories were retrieved. Best effort: a lost
/// signal makes a memory look a little less used, it never fails or holds
/// a read (see [`crate::access`]).
fn signal_access(state: &RetrieverState, tenant: &TenantId, subject: &SubjectId, found: &[Found]) {
    // Episodes are not scored for forgetting by use: only memories.
    let memories: Vec<MemoryId> = found
        .iter()
        .filter_map(|f| f.memory().map(|m| m.id))
        .collect();
    if memories.is_empty() {
        return;
    }
    state.access.send(AccessSignal::new(
        tenant.clone(),
        subject.clone(),
        memories,
        Utc::now(),
    ));
}

fn check_k(k: Option<usize>, default: usize) -> Result<usize, SearchError> {
    match k.unwrap_or(default) {
        k if (1..=MAX_K).contains(&k) => Ok(k),
        _ => Err(SearchError::InvalidK { max: MAX_K }),
    }
}

/// A search of a subject whose binding the caller has checked.
pub struct SearchRequest {
    pub tenant: TenantId,
    pub subject: SubjectId,
    pub query: String,
    /// How many results (default 10).
    pub k: Option<usize>,
    pub mode: Mode,
    pub filters: Filters,
    /// Hops of premise / cause edges to follow from each hit (default 2).
    pub expand_depth: Option<u8>,
    /// Memories, episodes or both (default both).
    pub include: Option<Vec<Include>>,
    /// Turns on each side of an episode (default 0).
    pub window: Option<u8>,
    pub feedback: Option<bool>,
}

pub async fn search_memories(
    state: &RetrieverState,
    request: SearchRequest,
) -> Result<Vec<Found>, SearchError> {
    let query = request.query.trim();
    if query.is_empty() || query.chars().count() > MAX_QUERY_CHARS {
        return Err(SearchError::InvalidQuery {
            max: MAX_QUERY_CHARS,
        });
    }
    let k = check_k(request.k, 10)?;
    let expand_depth = check_expand_depth(request.expand_depth)?;
    let window = check_window(request.window)?;
    let mut filter = to_filter(&request.subject, &request.filters)?;
    filter.types = point_types(request.include.as_deref(), &request.filters)?;
    find_memories(
        state,
        FindRequest {
            query: query.to_owned(),
            tenant: request.tenant,
            subject: request.subject,
            k,
            mode: request.mode,
            filter,
            expand_depth,
            window,
            feedback: request.feedback.unwrap_or(DEFAULT_FEEDBACK),
        },
    )
    .await
}

pub async fn search(
    Authenticated(principal): Authenticated,
    SubjectPath(subject): SubjectPath,
    body: web::Json<SearchInput>,
    state: web::Data<RetrieverState>,
) -> Result<HttpResponse, ApiError> {
    principal.require_scope(Scope::MemoriesRead)?;
    let input = body.into_inner();
    let found = search_memories(
        &state,
        SearchRequest {
            tenant: principal.tenant,
            subject,
            query: input.query,
            k: input.k,
            mode: input.mode,
            filters: input.filters,
            expand_depth: input.expand_depth,
            include: input.include,
            window: input.window,
            feedback: input.feedback,
        },
    )
    .await?;
    let results: Vec<Value> = found.iter().map(Found::to_json).collect();
    Ok(HttpResponse::Ok().json(json!({ "results": results })))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextMessage {
    pub role: String,
    pub content: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextInput {
    pub messages: Vec<ContextMessage>,
    /// How many of the last user/assistant messages make the query.
    pub last_n: Option<usize>,
    pub max_memories: Option<usize>,
    /// Results whose dense similarity to the query (or, in keyword mode,
    /// relevance relative to the best result) is below this are left out.
    pub min_relevance: Option<f32>,
    pub token_budget: Option<usize>,
    #[serde(default)]
    pub mode: Mode,
    #[serde(default)]
    pub filters: Filters,
    /// Hops of premise / cause edges to follow from each hit (0–2).
    pub expand_depth: Option<u8>,
    /// Put the subject's profile (its rolling summary) at the top.
    #[serde(default)]
    pub include_profile: bool,
    /// Memories, episodes or both (default both).
    pub include: Option<Vec<Include>>,
    /// Turns on each side of an episode (0–2, default 0).
    pub window: Option<u8>,
    /// Recursive retrieval: a second pass with the best results' text.
    pub feedback: Option<bool>,
}

/// The memories for the next turn of a conversation, for a subject whose
/// binding the caller has checked.
pub struct ContextRequest {
    pub tenant: TenantId,
    pub subject: SubjectId,
    /// (role, content) of the conversation so far.
    pub messages: Vec<ContextMessage>,
    /// How many of the last user/assistant messages make the query (default 3).
    pub last_n: Option<usize>,
    pub max_memories: Option<usize>,
    pub min_relevance: Option<f32>,
    pub token_budget: Option<usize>,
    pub mode: Mode,
    pub filters: Filters,
    pub expand_depth: Option<u8>,
    pub include_profile: bool,
    pub include: Option<Vec<Include>>,
    pub window: Option<u8>,
    pub feedback: Option<bool>,
}

/// The block to put in the prompt and what it was made of.
pub struct Context {
    pub block: String,
    pub tokens: usize,
    pub query_tokens: usize,
    /// The memories and episodes in the block, in rank order.
    pub memories: Vec<Found>,
    pub profile: Option<Profile>,
}

pub async fn build_context(
    state: &RetrieverState,
    request: ContextRequest,
) -> Result<Context, SearchError> {
    let ContextRequest {
        tenant,
        subject,
        messages,
        last_n,
        max_memories,
        min_relevance,
        token_budget,
        mode,
        filters,
        expand_depth,
        include_profile,
        include,
        window,
        feedback,
    } = request;
    let last_n = last_n.unwrap_or(3);
    if !(1..=50).contains(&last_n) {
        return Err(SearchError::InvalidLastN);
    }
    let max_memories = check_k(max_memories, 8)?;
    let token_budget = token_budget.unwrap_or(400);
    if !(16..=32_000).contains(&token_budget) {
        return Err(SearchError::InvalidTokenBudget);
    }
    let min_relevance = min_relevance.unwrap_or(0.0);
    if !(0.0..=1.0).contains(&min_relevance) {
        return Err(SearchError::OutOfRange {
            field: "min_relevance",
        });
    }
    let query = build_query(
        messages
            .iter()
            .map(|m| (m.role.as_str(), m.content.as_str())),
        last_n,
    );
    let query: String = query.chars().take(MAX_QUERY_CHARS).collect();
    if query.trim().is_empty() {
        return Err(SearchError::NoQuery);
    }
    let expand_depth = check_expand_depth(expand_depth)?;
    let window = check_window(window.or(Some(CONTEXT_WINDOW)))?;
    let mut filter = to_filter(&subject, &filters)?;
    filter.types = point_types(include.as_deref(), &filters)?;
    let profile = if include_profile {
        crate::review::latest_profile(state, &tenant, &subject).await?
    } else {
        None
    };
    let query_tokens = estimate_tokens(&query);
    let found = find_memories(
        state,
        FindRequest {
            tenant,
            subject,
            query,
            k: max_memories,
            mode,
            filter,
            expand_depth,
            window,
            feedback: feedback.unwrap_or(DEFAULT_FEEDBACK),
        },
    )
    .await?;
    let kept = keep_for_block(found, min_relevance);
    // Each line with the position of its result, so the results returned
    // stay line for line with the block.
    let (positions, lines): (Vec<usize>, Vec<BlockLine<'_>>) = kept
        .iter()
        .enumerate()
        .filter_map(|(i, f)| block_line(f).map(|line| (i, line)))
        .unzip();
    // The profile comes first and is paid for first; one that does not fit
    // the budget is left out of the block (still returned as `profile`).
    let profile_section = profile
        .as_ref()
        .map(|p| profile_section(&p.summary))
        .filter(|section| estimate_tokens(section) <= token_budget);
    let profile_tokens = profile_section.as_deref().map_or(0, estimate_tokens);
    let (block, included, tokens) = format_block(&lines, token_budget - profile_tokens, Utc::now());
    let (block, tokens) = match profile_section {
        Some(section) if block.is_empty() => (section, profile_tokens),
        Some(section) => (format!("{section}\n{block}"), profile_tokens + tokens),
        None => (block, tokens),
    };
    let included: HashSet<usize> = included.into_iter().map(|i| positions[i]).collect();
    let kept: Vec<Found> = kept
        .into_iter()
        .enumerate()
        .filter(|(i, _)| included.contains(i))
        .map(|(_, f)| f)
        .collect();
    Ok(Context {
        block,
        tokens,
        query_tokens,
        memories: kept,
        profile,
    })
}

/// What of the ranked results goes into the block, in rank order: only
/// readable ones, so the block and the list stay line for line; a memory
/// reached by an edge when the one it explains stays; and never a memory
/// and the episode it came from both: the memory, curated, is kept, at
/// the better of the two places, so the budget is not spent twice on one
/// thing said (an episode can outrank its memory: the turns around it lift
/// it).
fn keep_for_block(found: Vec<Found>, min_relevance: f32) -> Vec<Found> {
    let above_floor = |f: &Found| {
        f64::from(f.dense_similarity.unwrap_or(f.parts.relevance as f32))
            >= f64::from(min_relevance)
    };
    // The message each ranked (not edge-reached), relevant memory was made
    // from, with the memory's place: its episode gives the memory its place.
    let mut made_from: HashMap<EventId, usize> = HashMap::new();
    for (at, f) in found.iter().enumerate() {
        if f.memory().is_some() && f.via.is_none() && f.text().is_some() && above_floor(f) {
            for source in f.source_event_ids() {
                made_from.entry(source).or_insert(at);
            }
        }
    }
    let mut slots: Vec<Option<Found>> = found.into_iter().map(Some).collect();
    let mut kept: Vec<Found> = Vec::with_capacity(slots.len());
    let mut kept_ids: HashSet<MemoryId> = HashSet::new();
    // Messages already in the block: episodes shown, memories' sources.
    let mut shown: HashSet<EventId> = HashSet::new();
    for at in 0..slots.len() {
        let Some(mut f) = slots[at].take() else {
            continue;
        };
        if let Item::Episode(hit) = &f.item {
            if let Some(&memory_at) = made_from.get(&hit.episode.event_id) {
                if let Some(memory) = slots.get_mut(memory_at).and_then(Option::take) {
                    f = memory;
                }
            }
        }
        if f.text().is_none() {
            continue;
        }
        let relevant = match f.via {
            Some(via) => kept_ids.contains(&via.of),
            None => above_floor(&f),
        };
        if !relevant {
            continue;
        }
        let sources = f.source_event_ids();
        let repeats = match &f.item {
            // An episode whose message a kept memory was made from.
            Item::Episode(hit) => shown.contains(&hit.episode.event_id),
            // A memory made only of messages already shown as episodes.
            Item::Memory(_) => !sources.is_empty() && sources.iter().all(|s| shown.contains(s)),
        };
        if repeats {
            continue;
        }
        shown.extend(sources);
        if let Some(memory) = f.memory() {
            kept_ids.insert(memory.id);
        }
        kept.push(f);
    }
    kept
}

/// The block line of a result. An episode returned with a window shows
/// every turn it returns (its provenance names them all), the first after
/// the date, the others each on an indented line of their own.
fn block_line(found: &Found) -> Option<BlockLine<'_>> {
    Some(match &found.item {
        Item::Memory(memory) => BlockLine {
            kind: LineKind::Memory(memory.kind),
            content: std::borrow::Cow::Borrowed(memory.content.as_text()?),
            updated_at: memory.updated_at,
            importance: memory.importance,
        },
        Item::Episode(hit) => {
            let first = hit.turns.first().unwrap_or(&hit.episode);
            let mut content = first.content.trim().to_owned();
            for turn in hit.turns.iter().skip(1) {
                content.push_str(&format!(
                    "\n  {}: {}",
                    crate::episodes::role_name(turn.role),
                    turn.content.trim()
                ));
            }
            BlockLine {
                kind: LineKind::Episode(first.role),
                content: std::borrow::Cow::Owned(content),
                updated_at: hit.episode.timestamp,
                importance: EPISODE_IMPORTANCE,
            }
        }
    })
}

pub async fn context(
    Authenticated(principal): Authenticated,
    SubjectPath(subject): SubjectPath,
    body: web::Json<ContextInput>,
    state: web::Data<RetrieverState>,
) -> Result<HttpResponse, ApiError> {
    principal.require_scope(Scope::MemoriesRead)?;
    let input = body.into_inner();
    let context = build_context(
        &state,
        ContextRequest {
            tenant: principal.tenant,
            subject: subject.clone(),
            messages: input.messages,
            last_n: input.last_n,
            max_memories: input.max_memories,
            min_relevance: input.min_relevance,
            token_budget: input.token_budget,
            mode: input.mode,
            filters: input.filters,
            expand_depth: input.expand_depth,
            include_profile: input.include_profile,
            include: input.include,
            window: input.window,
            feedback: input.feedback,
        },
    )
    .await?;
    let of_type = |episodes: bool| -> Vec<Value> {
        context
            .memories
            .iter()
            .filter(|f| f.episode().is_some() == episodes)
            .map(Found::to_json)
            .collect()
    };
    let (memories, episodes) = (of_type(false), of_type(true));
    Ok(HttpResponse::Ok().json(json!({
        "block": context.block,
        "tokens": context.tokens,
        "query_tokens": context.query_tokens,
        "memories": memories,
        "episodes": episodes,
        "profile": context.profile.map(|p| p.to_json(&subject)),
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(id: MemoryId, dense_rank: Option<usize>) -> Hit {
        Hit {
            id,
            score: 0.0,
            dense_rank,
            sparse_rank: None,
            dense_score: None,
            sparse_score: None,
            payload: mnemo_vector_index::PointPayload {
                tenant: TenantId::parse("t").unwrap(),
                subject: SubjectId::parse("s").unwrap(),
                point_type: PointType::Episode,
                kind: MemoryKind::Fact,
                tags: Vec::new(),
                state: MemoryState::Active,
                session: None,
                agent: None,
                created_at: 0,
                updated_at: 0,
                importance: 0.5,
            },
            dense: None,
        }
    }

    fn turn(session: &str, version: u64, relevance: f64) -> Candidate<(Item, Hit)> {
        let episode = Episode {
            event_id: EventId::new(),
            stream_version: version,
            stream_id: "conversation".into(),
            subject: SubjectId::parse("s").unwrap(),
            role: mnemo_domain::events::Role::User,
            content: format!("turn {version}"),
            message_id: format!("m{version}"),
            session: Some(mnemo_domain::SessionId::parse(session).unwrap()),
            agent: None,
            timestamp: Utc::now(),
        };
        Candidate {
            item: (
                Item::Episode(EpisodeHit {
                    turns: vec![episode.clone()],
                    episode,
                }),
                hit(MemoryId::new(), None),
            ),
            relevance,
            importance: 0.5,
            updated_at: Utc::now(),
            dense: None,
        }
    }

    fn found(item: Item) -> Found {
        Found {
            item,
            parts: crate::ranking::ScoreParts {
                relevance: 1.0,
                recency: 0.0,
                importance: 0.5,
                combined: 0.7,
                redundancy: 0.0,
                final_score: 0.7,
            },
            fused: 0.1,
            dense_rank: None,
            sparse_rank: None,
            dense_similarity: None,
            via: None,
        }
    }

    fn made_from(sources: &[&Episode]) -> Memory {
        Memory {
            id: MemoryId::new(),
            subject: SubjectId::parse("s").unwrap(),
            kind: MemoryKind::Fact,
            content: mnemo_domain::SubjectText::new("likes pottery"),
            tags: Vec::new(),
            confidence: 0.9,
            importance: 0.7,
            state: MemoryState::Active,
            version: 1,
            provenance: mnemo_domain::Provenance {
                source_event_ids: sources.iter().map(|e| e.event_id).collect(),
                producer: mnemo_domain::Producer::api(),
            },
            session: None,
            agent: None,
            reinforcements: 0,
            superseded_by: None,
            relations: Vec::new(),
            created_at: Utc::now(),
            updated_at: Utc::now(),
        }
    }

    fn said(episode: &Episode) -> Found {
        found(Item::Episode(EpisodeHit {
            turns: vec![episode.clone()],
            episode: episode.clone(),
        }))
    }

    fn place(found: &[Found]) -> Vec<String> {
        found
            .iter()
            .map(|f| match &f.item {
                Item::Memory(m) => m.content.as_text().unwrap().to_owned(),
                Item::Episode(e) => e.episode.content.clone(),
            })
            .collect()
    }

    #[test]
    fn a_memory_takes_the_better_place_of_the_episodes_it_came_from() {
        let turns: Vec<Episode> = (1..=4)
            .map(|v| match turn("s1", v, 1.0).item.0 {
                Item::Episode(hit) => hit.episode,
                Item::Memory(_) => unreachable!(),
            })
            .collect();
        let memory = made_from(&[&turns[1], &turns[3]]);
        // turn 1, turn 2 (a source), turn 3, the memory, turn 4 (a source).
        let ranked = vec![
            said(&turns[0]),
            said(&turns[1]),
            said(&turns[2]),
            found(Item::Memory(memory)),
            said(&turns[3]),
        ];
        assert_eq!(
            place(&fold_into_memories(ranked)),
            ["turn 1", "likes pottery", "turn 3"]
        );
        // Ranked above its source, the memory stays; the source is left out.
        let memory = made_from(&[&turns[0]]);
        let ranked = vec![
            found(Item::Memory(memory)),
            said(&turns[1]),
            said(&turns[0]),
        ];
        assert_eq!(
            place(&fold_into_memories(ranked)),
            ["likes pottery", "turn 2"]
        );
        // No memory: nothing moves.
        assert_eq!(
            place(&fold_into_memories(turns.iter().map(said).collect())),
            ["turn 1", "turn 2", "turn 3", "turn 4"]
        );
    }

    #[test]
    fn an_episode_gains_from_relevant_turns_near_it_in_its_session() {
        let mut candidates = vec![
            turn("s1", 10, 1.0),
            turn("s1", 12, 0.5),
            turn("s1", 13, 0.2),
            turn("s1", 20, 0.4),
            turn("s2", 11, 0.8),
        ];
        lift_neighbours(&mut candidates, 0.1);
        let relevance: Vec<f64> = candidates.iter().map(|c| c.relevance).collect();
        let expected = [
            1.0 + 0.1 * 0.5,         // 12 is two turns on; 13 is three
            0.5 + 0.1 * (1.0 + 0.2), // 10 and 13
            0.2 + 0.1 * 0.5,         // 12 (10 is three turns back)
            0.4,                     // alone
            0.8,                     // 10 and 12 are of another session
        ];
        for (got, want) in relevance.iter().zip(expected) {
            assert!((got - want).abs() < 1e-9, "{relevance:?}");
        }
        let mut off = vec![turn("s1", 1, 1.0), turn("s1", 2, 1.0)];
        lift_neighbours(&mut off, 0.0);
        assert!(off.iter().all(|c| c.relevance == 1.0));
    }

    #[test]
    fn the_passes_are_fused_by_rank_and_a_hit_keeps_its_first_pass_ranks() {
        let (a, b, c) = (MemoryId::new(), MemoryId::new(), MemoryId::new());
        // a leads the first pass only; b is second in both; c is new.
        let first = vec![hit(a, Some(0)), hit(b, Some(1))];
        let second = vec![hit(c, Some(0)), hit(b, Some(5))];
        let fused = fuse_passes(first, second, 10);
        let order: Vec<MemoryId> = fused.iter().map(|h| h.id).collect();
        assert_eq!(order, [b, a, c]);
        assert!((f64::from(fused[0].score) - (2.0 / 11.0)).abs() < 1e-6);
        assert_eq!(fused[0].dense_rank, Some(1), "the first pass's explanation");
        assert_eq!(fused[2].dense_rank, Some(0), "only the second pass knew c");
    }

    fn refused(filters: Filters) -> (&'static str, String) {
        let subject = SubjectId::parse("u1").unwrap();
        let error = to_filter(&subject, &filters).unwrap_err();
        let message = error.to_string();
        (mnemo_domain::Classified::code(&error), message)
    }

    #[test]
    fn free_text_filters_are_bounded_and_named() {
        let long_id = "s".repeat(MAX_ID_LEN + 1);
        let (code, message) = refused(Filters {
            session: Some(long_id.clone()),
            ..Filters::default()
        });
        assert_eq!(code, "filter_too_long");
        assert!(message.contains("`filters.session`"), "{message}");
        assert!(!message.contains(&long_id), "{message}");
        let (code, message) = refused(Filters {
            agent: Some(long_id),
            ..Filters::default()
        });
        assert_eq!(code, "filter_too_long");
        assert!(message.contains("`filters.agent`"), "{message}");
        let (code, _) = refused(Filters {
            tags: vec!["t".repeat(MAX_TAG_CHARS + 1)],
            ..Filters::default()
        });
        assert_eq!(code, "filter_too_long");
        let (code, _) = refused(Filters {
            tags: vec!["t".to_owned(); MAX_TAGS + 1],
            ..Filters::default()
        });
        assert_eq!(code, "too_many_tags");

        // At the limits, and padded tags (trimmed before matching), pass.
        let subject = SubjectId::parse("u1").unwrap();
        let filter = to_filter(
            &subject,
            &Filters {
                session: Some("s".repeat(MAX_ID_LEN)),
                agent: Some("a".repeat(MAX_ID_LEN)),
                tags: vec![format!("  {}  ", "t".repeat(MAX_TAG_CHARS)); MAX_TAGS],
                ..Filters::default()
            },
        )
        .unwrap();
        assert_eq!(filter.tags.len(), MAX_TAGS);
    }
}
