//! `mnemo bench search`: search latency at scale.
//!
//! For each size, memories of one tenant and one subject are generated
//! (templates over word lists plus a long tail of made-up names, so BM25
//! sees a realistic spread of common and rare words), embedded in batches
//! through the embedder, and written straight into the stores of a fresh
//! data dir: read-model rows (`SqliteMemoryReadModel::upsert`, sealed under
//! the data dir's master key as the server's would be) and index
//! points (`EdgeVectorIndex::upsert`, the same row + point the projection
//! writes). Loading through the HTTP API would embed one memory at a time
//! and take hours at 100k. The embedded server is then started on that dir
//! (`Application::build`) and four things are timed per query, one query
//! at a time:
//!
//! - **HTTP search**: `POST /v1/subjects/{subject}/search` (k = 10, hybrid)
//!   over real HTTP, end to end: auth, query embedding, both index legs,
//!   the read-model reads, ranking and MMR, the access signal, JSON;
//! - **embed**: the embedder alone on the same query;
//! - **find()**: `mnemo_retriever::search::find_memories` in process on the server's
//!   own index and a read model on the same database, with the query vector
//!   precomputed (an embedder that looks it up), i.e. mnemo's search
//!   without the embedder and without HTTP;
//! - **raw**: `VectorIndex::search` with the request `find` sends (hybrid,
//!   limit 40, prefetch 100, the server's RRF k (`mnemo_vector_index::DEFAULT_RRF_K`),
//!   vectors only when ranking diversifies, which by default it does not):
//!   the engine's floor.
//!
//! Each size is measured twice: on the index as the server keeps it (plain
//! segments: nothing in the server calls `EdgeVectorIndex::optimize`, so
//! dense search is brute force) and after `optimize` (HNSW).
//!
//! **Episodes** (`--episodes N [--memories M]`, M = 1000 unless given):
//! one more subject is measured, with a conversation of N messages beside
//! M memories, and, unless `--size` says otherwise, the memory-only subject
//! with N memories, on the same queries; a second table gives the ratio of
//! their p50s (HTTP search and find()), the figure of "search with episodes
//! within 1.5× of memory-only search". The messages are appended to the
//! data dir's log as ingest appends them and indexed as the episode
//! projection indexes them (see `episodes`), so a search hydrates each
//! episode it finds from the sealed log as in production. Both subjects are
//! searched as the API's default request does: memories and episodes
//! (`include` absent), window 0.
//!
//! The embedder: the local model when `MNEMO_EMBED_MODEL_DIR` is set (a
//! sentence-transformers directory), for sizes (points: memories plus
//! episodes) up to `MNEMO_BENCH_MODEL_MAX_SIZE` (default 100000; larger
//! sizes take the lexical embedder, and the table says so); the lexical
//! embedder otherwise.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use chrono::Utc;
use mnemo_auth::{MintRequest, Minter, Scope};
use mnemo_config::{Overrides, Settings};
use mnemo_domain::{
    Memory, MemoryId, MemoryKind, MemoryState, Producer, Provenance, SubjectId, SubjectText,
    TenantId,
};
use mnemo_embed::{CachedEmbedder, Embedder, EmbeddingSpace};
use mnemo_read_model::sqlite::SqliteMemoryReadModel;
use mnemo_read_model::MemoryReadModel;
use mnemo_retriever::search::{FindRequest, Mode};
use mnemo_retriever::RetrieverState;
use mnemo_vector_index::DEFAULT_RRF_K;
use mnemo_vector_index::{
    EdgeVectorIndex, Point, PointType, SearchFilter, SearchMode, SearchRequest, VectorIndex,
};
use serde_json::json;

mod episodes;

#[derive(Debug, Clone)]
pub struct SearchBenchArgs {
    /// Memory counts to measure at (memories only), e.g. 10000 and 100000.
    pub sizes: Vec<usize>,
    pub queries: usize,
    /// A subject with episodes beside its memories, measured too and
    /// compared with the memory-only size of as many memories as it has
    /// episodes.
    pub mix: Option<Mix>,
}

/// One subject's conversation (episodes) and memories.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mix {
    pub episodes: usize,
    pub memories: usize,
}

impl Mix {
    fn memories_only(memories: usize) -> Mix {
        Mix {
            episodes: 0,
            memories,
        }
    }

    fn points(&self) -> usize {
        self.episodes + self.memories
    }

    fn describe(&self) -> String {
        match self.episodes {
            0 => format!("{} memories", self.memories),
            episodes => format!("{episodes} episodes + {} memories", self.memories),
        }
    }
}

const TENANT: &str = "bench";
const SUBJECT: &str = "bench-subject";
/// Results per search, the API's default.
const K: usize = 10;
const WARMUP: usize = 10;
/// Texts per embedder call while loading, and calls in flight.
const EMBED_CHUNK: usize = 256;
const EMBED_CONCURRENCY: usize = 2;
/// Points per index upsert while loading.
const UPSERT_CHUNK: usize = 1_000;
const DEFAULT_MODEL_MAX_SIZE: usize = 100_000;

// ------------------------------------------------------------- synthetic text

/// xorshift64*: deterministic, no dependency. The seed must not be 0.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    fn pick<'a>(&mut self, list: &[&'a str]) -> &'a str {
        list[self.below(list.len())]
    }
}

const NAMES: [&str; 40] = [
    "Alice",
    "Bruno",
    "Chen",
    "Dana",
    "Elif",
    "Farah",
    "Goran",
    "Hana",
    "Ivan",
    "Jonas",
    "Kaori",
    "Liam",
    "Mei",
    "Nadia",
    "Omar",
    "Priya",
    "Quentin",
    "Rosa",
    "Sven",
    "Tariq",
    "Uma",
    "Viktor",
    "Wen",
    "Ximena",
    "Yusuf",
    "Zoe",
    "my sister",
    "my brother",
    "my manager",
    "our neighbour",
    "my grandmother",
    "the landlord",
    "my dentist",
    "the team lead",
    "my cousin",
    "my roommate",
    "my daughter",
    "my son",
    "my partner",
    "the coach",
];

const VERBS: [&str; 40] = [
    "started learning",
    "bought",
    "is allergic to",
    "prefers",
    "decided to sell",
    "wants to visit",
    "borrowed",
    "repaired",
    "painted",
    "recommended",
    "complained about",
    "signed up for",
    "lost",
    "found",
    "cooked",
    "ordered",
    "returned",
    "is saving for",
    "gave up",
    "booked",
    "cancelled",
    "photographed",
    "wrote about",
    "reviewed",
    "is afraid of",
    "collects",
    "built",
    "planted",
    "practised",
    "sold",
    "rented",
    "shared",
    "forgot about",
    "dreams of",
    "hates",
    "loves",
    "is training for",
    "volunteered at",
    "moved",
    "fixed",
];

const OBJECTS: [&str; 120] = [
    "a red bicycle",
    "the old piano",
    "sourdough bread",
    "Japanese pottery",
    "a vintage camera",
    "the marathon",
    "salsa classes",
    "a used car",
    "peanut butter",
    "the garden shed",
    "a sailing boat",
    "jazz records",
    "a mountain bike",
    "the kitchen table",
    "oat milk",
    "a golden retriever",
    "the violin",
    "hiking boots",
    "a telescope",
    "chess lessons",
    "the summer house",
    "a sewing machine",
    "green tea",
    "spicy ramen",
    "a laptop",
    "the guitar",
    "board games",
    "a wedding dress",
    "the quarterly report",
    "a tax refund",
    "a birthday cake",
    "watercolour paints",
    "a yoga mat",
    "the apartment",
    "climbing shoes",
    "a cookbook",
    "strawberries",
    "shellfish",
    "penicillin",
    "the night shift",
    "a pottery wheel",
    "the drum kit",
    "a tent",
    "ski lessons",
    "an electric scooter",
    "the family recipe",
    "a coffee grinder",
    "the bookshelf",
    "dark chocolate",
    "a kayak",
    "the podcast",
    "a fishing rod",
    "the basketball team",
    "a photo album",
    "the choir",
    "an herb garden",
    "a motorcycle",
    "the swimming pool pass",
    "a wool sweater",
    "the train tickets",
    "a concert ticket",
    "the bakery",
    "a rescue cat",
    "the language course",
    "a standing desk",
    "the cello",
    "homemade jam",
    "a drone",
    "the book club",
    "a leather jacket",
    "the vegetable patch",
    "a chemistry set",
    "the recycling rota",
    "an aquarium",
    "the wedding speech",
    "a scholarship",
    "the night market",
    "a rowing machine",
    "the thesis",
    "sunflower seeds",
    "a hammock",
    "the school play",
    "a charity run",
    "the debt",
    "a mortgage",
    "the insurance claim",
    "a puzzle",
    "the museum membership",
    "a bread machine",
    "the surf board",
    "a poetry collection",
    "the startup idea",
    "a road trip",
    "the dog walker",
    "a pension plan",
    "the broken window",
    "a hearing aid",
    "the flu vaccine",
    "a gym membership",
    "the family reunion",
    "an art exhibition",
    "the cooking contest",
    "a job offer",
    "the promotion",
    "a lottery ticket",
    "the heat pump",
    "a solar panel",
    "the old tractor",
    "a comic book collection",
    "the wine cellar",
    "a knitting project",
    "the roof repair",
    "a violin teacher",
    "the video game",
    "a film camera",
    "the lemon tree",
    "a sports car",
    "the nursery",
    "a robot vacuum",
    "the bird feeder",
];

const PLACES: [&str; 40] = [
    "in Lyon",
    "at the farmers market",
    "near the lake",
    "in Berlin",
    "at the office",
    "in the old town",
    "at the community centre",
    "in Osaka",
    "by the river",
    "at the library",
    "in Lisbon",
    "at the beach",
    "in the mountains",
    "at school",
    "in Toronto",
    "at the hospital",
    "in the village",
    "at the gym",
    "in Nairobi",
    "at the airport",
    "in the suburbs",
    "at the harbour",
    "in Seoul",
    "at the stadium",
    "in the countryside",
    "at the museum",
    "in Mexico City",
    "at the cafe",
    "in Krakow",
    "at home",
    "in Melbourne",
    "at the studio",
    "in Cairo",
    "at the workshop",
    "in Oslo",
    "at the campsite",
    "in Buenos Aires",
    "at the conference",
    "in Dublin",
    "at the clinic",
];

const TIMES: [&str; 30] = [
    "last spring",
    "on Tuesday",
    "every morning",
    "two weeks ago",
    "last summer",
    "in December",
    "yesterday",
    "every weekend",
    "last year",
    "this morning",
    "in the evenings",
    "since January",
    "after work",
    "during the holidays",
    "last month",
    "on her birthday",
    "on his birthday",
    "at Easter",
    "in the autumn",
    "before the exam",
    "after the move",
    "on Friday night",
    "three years ago",
    "during lunch",
    "at Christmas",
    "in July",
    "at the weekend",
    "for the first time",
    "again",
    "once a month",
];

const REASONS: [&str; 30] = [
    "because it reminded them of home",
    "with a friend from work",
    "to save money",
    "after a long discussion",
    "for the kids",
    "on the doctor's advice",
    "as a surprise",
    "despite the rain",
    "to relax",
    "for a charity event",
    "because it was on sale",
    "to impress the in-laws",
    "after reading a review",
    "with the whole family",
    "to lose weight",
    "for the new job",
    "because the old one broke",
    "to meet new people",
    "as a birthday present",
    "for the exam",
    "to support a local shop",
    "because of the allergy",
    "after the accident",
    "to learn something new",
    "for the wedding",
    "to celebrate the promotion",
    "because the neighbours complained",
    "on a whim",
    "for the garden",
    "to keep fit",
];

const SYLLABLES: [&str; 24] = [
    "ka", "lo", "mi", "ren", "sa", "to", "vi", "del", "mor", "quin", "bra", "el", "fu", "gan",
    "ho", "jis", "nu", "pe", "ro", "tas", "zu", "wen", "ti", "dor",
];

const KINDS_OF_PLACE: [&str; 8] = [
    "cafe",
    "bookshop",
    "gallery",
    "bakery",
    "club",
    "studio",
    "market",
    "restaurant",
];

/// A made-up proper name from a vocabulary of about 5000: the long tail.
fn rare_name(rng: &mut Rng) -> String {
    // Skewed towards small indexes, like word frequencies.
    let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    let mut rest = (u * u * 5_000.0) as usize + SYLLABLES.len();
    let mut word = String::new();
    while rest > 0 {
        word.push_str(SYLLABLES[rest % SYLLABLES.len()]);
        rest /= SYLLABLES.len();
    }
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => word,
    }
}

fn memory_text(rng: &mut Rng) -> String {
    let name = rng.pick(&NAMES);
    let verb = rng.pick(&VERBS);
    let object = rng.pick(&OBJECTS);
    let mut text = format!("{name} {verb} {object}");
    match rng.below(3) {
        0 => text.push_str(&format!(" {}", rng.pick(&PLACES))),
        1 => text.push_str(&format!(
            " at the {} {}",
            rare_name(rng),
            rng.pick(&KINDS_OF_PLACE)
        )),
        _ => {}
    }
    text.push_str(&format!(" {}", rng.pick(&TIMES)));
    if rng.below(2) == 0 {
        text.push_str(&format!(" {}", rng.pick(&REASONS)));
    }
    let mut text = capitalize(&text);
    text.push('.');
    text
}

fn capitalize(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn query_text(rng: &mut Rng) -> String {
    let name = rng.pick(&NAMES);
    let object = rng.pick(&OBJECTS);
    match rng.below(6) {
        0 => format!("What did {name} say about {object}?"),
        1 => format!("Where did {name} buy {object}?"),
        2 => format!("Who {} {object}?", rng.pick(&VERBS)),
        3 => format!(
            "When did {name} go to the {} {}?",
            rare_name(rng),
            rng.pick(&KINDS_OF_PLACE)
        ),
        4 => format!("{object} {}", rng.pick(&PLACES)),
        _ => format!("Why does {name} care about {object} {}?", rng.pick(&TIMES)),
    }
}

// ----------------------------------------------------------------- helpers

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[derive(Debug, Clone, Copy, Default)]
struct Figures {
    p50: Duration,
    p99: Duration,
}

impl Figures {
    fn of(mut samples: Vec<Duration>) -> Self {
        samples.sort();
        Figures {
            p50: percentile(&samples, 0.5),
            p99: percentile(&samples, 0.99),
        }
    }

    fn cell(&self) -> String {
        format!("{:.2} / {:.2}", ms(self.p50), ms(self.p99))
    }
}

/// A server's settings on `dir` with this embedder (and model directory),
/// listening on a free loopback port, with no config file.
pub(crate) fn settings_for(
    dir: &Path,
    embedder: &str,
    model_dir: Option<&str>,
) -> anyhow::Result<Settings> {
    let mut env = HashMap::new();
    env.insert("MNEMO_EMBEDDER".to_owned(), embedder.to_owned());
    if let Some(model_dir) = model_dir {
        env.insert("MNEMO_EMBED_MODEL_DIR".to_owned(), model_dir.to_owned());
    }
    Ok(mnemo_config::load_from(
        &Overrides {
            data_dir: Some(dir.to_owned()),
            listen: Some("127.0.0.1:0".into()),
            config_file: None,
        },
        &env,
    )?)
}

struct Dataset {
    memories: Vec<Memory>,
    vectors: Vec<Vec<f32>>,
    embed_elapsed: Duration,
}

async fn generate(size: usize, embedder: &Arc<dyn Embedder>) -> anyhow::Result<Dataset> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ size as u64);
    let subject = SubjectId::parse(SUBJECT)?;
    let now = Utc::now();
    let texts: Vec<String> = (0..size).map(|_| memory_text(&mut rng)).collect();
    let memories: Vec<Memory> = texts
        .iter()
        .map(|text| {
            // Within the last six days: recency varies, the forgetter's
            // minimum age (seven days) is not reached.
            let at = now - chrono::Duration::seconds(rng.below(6 * 86_400) as i64);
            Memory {
                id: MemoryId::new(),
                subject: subject.clone(),
                kind: MemoryKind::Fact,
                content: SubjectText::new(text.clone()),
                tags: Vec::new(),
                confidence: 1.0,
                importance: 0.8,
                state: MemoryState::Active,
                version: 1,
                provenance: Provenance {
                    source_event_ids: Vec::new(),
                    producer: Producer::api(),
                },
                session: None,
                agent: None,
                reinforcements: 0,
                superseded_by: None,
                relations: Vec::new(),
                created_at: at,
                updated_at: at,
            }
        })
        .collect();

    let (vectors, embed_elapsed) = embed_all(texts, embedder).await?;
    Ok(Dataset {
        memories,
        vectors,
        embed_elapsed,
    })
}

/// Embeds `texts` in chunks, a few in flight, with progress on stderr.
/// Returns their vectors in order and the time taken.
async fn embed_all(
    texts: Vec<String>,
    embedder: &Arc<dyn Embedder>,
) -> anyhow::Result<(Vec<Vec<f32>>, Duration)> {
    let started = Instant::now();
    let size = texts.len();
    let texts = Arc::new(texts);
    let chunks = size.div_ceil(EMBED_CHUNK);
    let mut vectors: Vec<Vec<Vec<f32>>> = vec![Vec::new(); chunks];
    let mut in_flight = tokio::task::JoinSet::new();
    let mut next = 0;
    let mut done = 0;
    let mut last_report = Instant::now();
    while done < chunks {
        while next < chunks && in_flight.len() < EMBED_CONCURRENCY {
            let (embedder, texts) = (embedder.clone(), texts.clone());
            let chunk = next;
            in_flight.spawn(async move {
                let range = chunk * EMBED_CHUNK..((chunk + 1) * EMBED_CHUNK).min(texts.len());
                let vectors = embedder.embed(&texts[range]).await?;
                anyhow::Ok((chunk, vectors))
            });
            next += 1;
        }
        let Some(finished) = in_flight.join_next().await else {
            break;
        };
        let (chunk, chunk_vectors) = finished??;
        vectors[chunk] = chunk_vectors;
        done += 1;
        if last_report.elapsed() > Duration::from_secs(15) {
            let embedded = (done * EMBED_CHUNK).min(size);
            eprintln!(
                "  embedded {embedded}/{size} ({:.0}/s)",
                embedded as f64 / started.elapsed().as_secs_f64()
            );
            last_report = Instant::now();
        }
    }
    let vectors: Vec<Vec<f32>> = vectors.into_iter().flatten().collect();
    anyhow::ensure!(
        vectors.len() == size,
        "the embedder returned too few vectors"
    );
    Ok((vectors, started.elapsed()))
}

/// Writes the rows, messages and points into `settings.data_dir` (before
/// any server opens it); optimises the index when asked. Returns the load
/// and optimise times.
async fn load(
    settings: &Settings,
    space: &EmbeddingSpace,
    data: &Dataset,
    conversation: Option<&episodes::Conversation>,
    optimize: bool,
) -> anyhow::Result<(Duration, Duration)> {
    let started = Instant::now();
    let tenant = TenantId::parse(TENANT)?;
    let subject = SubjectId::parse(SUBJECT)?;
    std::fs::create_dir_all(&settings.data_dir)?;
    let pool = mnemo_event_store::sqlite::connect(&settings.database_file()).await?;
    // Sealed under the data dir's master key, as the server will open them.
    let master = Arc::new(mnemo_app::stores::load_master_key(settings)?);
    let keys = Arc::new(mnemo_crypto::SqliteSubjectKeyStore::new(
        pool.clone(),
        master,
    ));
    let cipher = Arc::new(mnemo_crypto::SubjectCipher::new(keys));
    let read_model = SqliteMemoryReadModel::new(pool.clone(), cipher.clone());
    for memory in &data.memories {
        read_model.upsert(&tenant, memory).await?;
    }
    let log = mnemo_event_store::sealed::SealedLog::new(
        Arc::new(mnemo_event_store::sqlite::SqliteEventStore::new(pool.clone()).await?),
        cipher,
    );
    if let Some(conversation) = conversation {
        let checkpoints = mnemo_bus::relay::SqliteCheckpointStore::new(pool.clone());
        episodes::append(&log, &checkpoints, &tenant, &subject, conversation).await?;
    }

    let dir = settings
        .data_dir
        .join("vectors")
        .join(mnemo_vector_index::payload::collection_name(
            &space.collection_name(),
        ));
    let index = EdgeVectorIndex::open(&dir, space.dimension)
        .with_context(|| format!("cannot open {}", dir.display()))?;
    // One flush at the end instead of one per write.
    index.set_durable_writes(false);
    for (memories, vectors) in data
        .memories
        .chunks(UPSERT_CHUNK)
        .zip(data.vectors.chunks(UPSERT_CHUNK))
    {
        let points = memories
            .iter()
            .zip(vectors)
            .map(|(memory, vector)| Point {
                id: memory.id,
                dense: vector.clone(),
                text: memory.content.as_text().unwrap_or_default().to_owned(),
                // The bench's memories have no tags and no session.
                payload: mnemo_retriever::projection::payload_of(
                    &tenant,
                    memory,
                    Default::default(),
                ),
            })
            .collect();
        index.upsert(&tenant, points).await?;
    }
    let mut episodes_written = 0;
    if let Some(conversation) = conversation {
        episodes_written = episodes::index(&log, &index, &tenant, &subject, conversation).await?;
        anyhow::ensure!(
            episodes_written == conversation.len() as u64,
            "{episodes_written} episode points written for {} messages",
            conversation.len()
        );
    }
    pool.close().await;
    index.flush().await?;
    let loaded = started.elapsed();
    let mut optimized = Duration::ZERO;
    if optimize {
        let started = Instant::now();
        index.set_durable_writes(true);
        index.optimize().await?;
        index.flush().await?;
        optimized = started.elapsed();
    }
    let count = index.count(&tenant, None).await?;
    let expected = data.memories.len() as u64 + episodes_written;
    anyhow::ensure!(
        count == expected,
        "the index holds {count} points, expected {expected}"
    );
    drop(index);
    Ok((loaded, optimized))
}

/// A retriever state beside an embedded server running on `settings`'
/// data dir: the server's own index (`Application::vector_index`), and a
/// read model, log and bus on a pool of its own over the same database.
/// Calling `mnemo_retriever::search::find_memories` with it is the server's search
/// without HTTP, with the embedder and RRF constant given here. Also used
/// by `mnemo eval locomo`'s in-process experiments.
pub(crate) async fn retriever_beside(
    settings: &Settings,
    index: Arc<dyn VectorIndex>,
    embedder: Arc<dyn Embedder>,
    rrf_k: u32,
) -> anyhow::Result<(RetrieverState, sqlx::SqlitePool)> {
    let pool = mnemo_event_store::sqlite::connect(&settings.database_file()).await?;
    let master = Arc::new(mnemo_app::stores::load_master_key(settings)?);
    let store: Arc<dyn mnemo_event_store::EventStore> =
        Arc::new(mnemo_event_store::sqlite::SqliteEventStore::new(pool.clone()).await?);
    let keys = Arc::new(mnemo_crypto::SqliteSubjectKeyStore::new(
        pool.clone(),
        master,
    ));
    let cipher = Arc::new(mnemo_crypto::SubjectCipher::new(keys));
    let state = RetrieverState {
        log: mnemo_event_store::sealed::SealedLog::new(store, cipher.clone()),
        read_model: Arc::new(SqliteMemoryReadModel::new(pool.clone(), cipher)),
        metrics: Arc::new(mnemo_telemetry::Metrics::new()?),
        embedder,
        index,
        access: mnemo_retriever::access::AccessSignals::start(Arc::new(
            mnemo_bus::in_process::InProcessBus::new(pool.clone(), settings.bus_partitions),
        )),
        ranking: Default::default(),
        rrf_k,
        llm_pricing: Default::default(),
        consolidation: Arc::new(settings.consolidation.clone()),
    };
    Ok((state, pool))
}

struct Measured {
    http: Figures,
    embed: Figures,
    find: Figures,
    raw: Figures,
    /// HTTP searches that found nothing (a sanity check of the data).
    empty: usize,
    /// Results of the HTTP searches, and how many of them were episodes.
    results: usize,
    episode_results: usize,
}

struct Row {
    mix: Mix,
    index: &'static str,
    embedder: String,
    measured: Measured,
}

/// Starts a server on the loaded dir and times the three searches and the
/// embedder, each over every query after a common warm-up.
async fn measure(
    settings: Settings,
    embedder: &Arc<dyn Embedder>,
    queries: &[String],
    vectors: &HashMap<String, Vec<f32>>,
) -> anyhow::Result<Measured> {
    let searches = Searches::start(settings, embedder, queries, vectors).await?;
    searches.warm_up(queries).await?;
    let measured = searches.time(queries).await?;
    searches.pool.close().await;
    Ok(measured)
}

/// What `measure` times, beside one embedded server: the server over
/// HTTP, `find()` in process, the index directly, and the embedder.
struct Searches<'a> {
    tenant: TenantId,
    subject: SubjectId,
    url: String,
    token: String,
    client: reqwest::Client,
    /// The server's own index, which the raw search queries directly.
    index: Arc<dyn VectorIndex>,
    /// `find()`'s state; its embedder is a memo warmed with every query.
    state: RetrieverState,
    /// The state's pool, closed once the timings are taken.
    pool: sqlx::SqlitePool,
    /// What the search handler makes of a request without filters: both
    /// point types (`include` absent), active memories.
    filter: SearchFilter,
    /// The real embedder, not the memo: the embed column times it.
    embedder: &'a Arc<dyn Embedder>,
    /// Each query's vector, precomputed for the raw search.
    vectors: &'a HashMap<String, Vec<f32>>,
}

impl<'a> Searches<'a> {
    async fn start(
        settings: Settings,
        embedder: &'a Arc<dyn Embedder>,
        queries: &[String],
        vectors: &'a HashMap<String, Vec<f32>>,
    ) -> anyhow::Result<Searches<'a>> {
        let tenant = TenantId::parse(TENANT)?;
        let subject = SubjectId::parse(SUBJECT)?;
        let secret_file = settings.dev_secret_file();
        let app = mnemo_app::Application::build(settings.clone()).await?;
        let url = format!("http://127.0.0.1:{}", app.port());
        let index = app
            .vector_index()
            .expect("the embedded server runs every role");
        tokio::spawn(app.run());
        let (secret, _) = mnemo_app::secrets::load_or_create_dev_secret(&secret_file)?;
        let token = Minter::hs256(&secret, &settings.auth.issuer, &settings.auth.audience).mint(
            &MintRequest {
                tenant: tenant.clone(),
                actor: "bench".into(),
                scopes: vec![Scope::MemoriesRead],
                subject: None,
                ttl: Duration::from_secs(3600),
            },
        )?;

        // find() beside the server: the server's index, a read model and a bus
        // on the same database, and the real embedder behind a memo warmed
        // with every query now, so the timing holds no model work.
        let cached = Arc::new(CachedEmbedder::new(embedder.clone(), queries.len()));
        cached.embed(queries).await?;
        let (state, pool) =
            retriever_beside(&settings, index.clone(), cached, DEFAULT_RRF_K).await?;
        let filter = SearchFilter {
            subject: Some(subject.clone()),
            types: vec![PointType::Memory, PointType::Episode],
            states: vec![MemoryState::Active],
            ..Default::default()
        };
        Ok(Searches {
            tenant,
            subject,
            url,
            token,
            client: reqwest::Client::new(),
            index,
            state,
            pool,
            filter,
            embedder,
            vectors,
        })
    }

    /// `POST …/search` end to end; returns how many results it found, and
    /// how many of them were episodes.
    async fn http(&self, query: &str) -> anyhow::Result<(usize, usize)> {
        let request = self
            .client
            .post(format!("{}/v1/subjects/{SUBJECT}/search", self.url))
            .bearer_auth(&self.token)
            .json(&json!({ "query": query, "k": K, "mode": "hybrid" }));
        let response = request.send().await?;
        let status = response.status();
        let body: serde_json::Value = response.json().await?;
        anyhow::ensure!(status == 200, "search was refused: {status}: {body}");
        let results = body["results"].as_array().map_or(&[][..], Vec::as_slice);
        let episodes = results.iter().filter(|r| r["type"] == "episode").count();
        anyhow::Ok((results.len(), episodes))
    }

    async fn find(&self, query: String) -> anyhow::Result<Vec<mnemo_retriever::search::Found>> {
        mnemo_retriever::search::find_memories(
            &self.state,
            FindRequest {
                tenant: self.tenant.clone(),
                subject: self.subject.clone(),
                query,
                k: K,
                mode: Mode::Hybrid,
                filter: self.filter.clone(),
                // Ranking alone: no graph expansion in the measurement.
                expand_depth: 0,
                window: 0,
                feedback: false,
            },
        )
        .await
        .map_err(|e| anyhow::anyhow!("find failed: {e}"))
    }

    /// The request `find` sends the index for `query`.
    fn raw(&self, query: &str) -> SearchRequest {
        SearchRequest {
            filter: self.filter.clone(),
            dense: self.vectors.get(query).cloned(),
            text: Some(query.to_owned()),
            mode: SearchMode::Hybrid,
            limit: (K * 4).max(40),
            prefetch: (K * 10).max(100),
            rrf_k: DEFAULT_RRF_K,
            // As find asks: vectors only when it diversifies.
            with_vectors: self.state.ranking.diversifies(),
        }
    }

    async fn warm_up(&self, queries: &[String]) -> anyhow::Result<()> {
        for query in queries.iter().cycle().take(WARMUP) {
            self.http(query).await?;
            self.find(query.clone()).await?;
            self.index.search(&self.tenant, &self.raw(query)).await?;
            self.embedder.embed(std::slice::from_ref(query)).await?;
        }
        Ok(())
    }

    /// One pass over the queries per search: HTTP, embed, find, raw. Each
    /// pass runs on the caches the previous ones left, so this order is
    /// part of the figures.
    async fn time(&self, queries: &[String]) -> anyhow::Result<Measured> {
        let mut http = Vec::with_capacity(queries.len());
        let (mut empty, mut results, mut episode_results) = (0, 0, 0);
        for query in queries {
            let started = Instant::now();
            let (found, episodes) = self.http(query).await?;
            http.push(started.elapsed());
            if found == 0 {
                empty += 1;
            }
            results += found;
            episode_results += episodes;
        }
        let mut embed = Vec::with_capacity(queries.len());
        for query in queries {
            let started = Instant::now();
            self.embedder.embed(std::slice::from_ref(query)).await?;
            embed.push(started.elapsed());
        }
        let mut found = Vec::with_capacity(queries.len());
        for query in queries {
            let started = Instant::now();
            self.find(query.clone()).await?;
            found.push(started.elapsed());
        }
        let mut engine = Vec::with_capacity(queries.len());
        for query in queries {
            // Built before the clock starts: the raw figure is the index alone.
            let request = self.raw(query);
            let started = Instant::now();
            self.index.search(&self.tenant, &request).await?;
            engine.push(started.elapsed());
        }
        Ok(Measured {
            http: Figures::of(http),
            embed: Figures::of(embed),
            find: Figures::of(found),
            raw: Figures::of(engine),
            empty,
            results,
            episode_results,
        })
    }
}

/// Which embedder a size takes: the local model (`MNEMO_EMBED_MODEL_DIR`)
/// up to `MNEMO_BENCH_MODEL_MAX_SIZE` memories, the lexical one otherwise.
struct EmbedderChoice {
    model_dir: Option<String>,
    model_max: usize,
}

impl EmbedderChoice {
    fn from_env() -> anyhow::Result<Self> {
        let model_dir = std::env::var("MNEMO_EMBED_MODEL_DIR")
            .ok()
            .filter(|v| !v.trim().is_empty());
        let model_max = match std::env::var("MNEMO_BENCH_MODEL_MAX_SIZE") {
            Ok(raw) if !raw.trim().is_empty() => raw
                .trim()
                .parse::<usize>()
                .context("MNEMO_BENCH_MODEL_MAX_SIZE must be a number of memories")?,
            _ => DEFAULT_MODEL_MAX_SIZE,
        };
        Ok(EmbedderChoice {
            model_dir,
            model_max,
        })
    }

    /// The `MNEMO_EMBEDDER` for `size` memories.
    fn kind(&self, size: usize) -> &'static str {
        if self.model_dir.is_some() && size <= self.model_max {
            "local"
        } else {
            "lexical"
        }
    }

    /// The embedder as the header line names it.
    fn describe(&self) -> String {
        match &self.model_dir {
            Some(dir) => format!(
                "local model {dir} up to {} memories, lexical above",
                self.model_max
            ),
            None => "lexical (set MNEMO_EMBED_MODEL_DIR for the local model)".to_owned(),
        }
    }
}

pub async fn search(args: SearchBenchArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.sizes.iter().all(|s| *s > 0) && args.queries > 0,
        "sizes and queries must be positive"
    );
    // Each mix with the seed of its queries: a memory count, so that the
    // subject with episodes is asked the same questions as the memory-only
    // subject it is compared with.
    let mut mixes: Vec<(Mix, usize)> = args
        .sizes
        .iter()
        .map(|&size| (Mix::memories_only(size), size))
        .collect();
    if let Some(mix) = args.mix {
        anyhow::ensure!(
            mix.episodes > 0 && mix.memories > 0,
            "episodes and memories must be positive"
        );
        mixes.push((mix, mix.episodes));
    }
    anyhow::ensure!(!mixes.is_empty(), "nothing to measure");
    let choice = EmbedderChoice::from_env()?;
    let scratch = tempfile::tempdir()?;
    let mut embedders: HashMap<&'static str, Arc<dyn Embedder>> = HashMap::new();
    let mut rows = Vec::new();
    println!(
        "search benchmark: one tenant, one subject, {} queries per measurement (after {WARMUP} \
         warm-up), k = {K}, hybrid; {}; embedder: {}",
        args.queries,
        mixes
            .iter()
            .map(|(mix, _)| mix.describe())
            .collect::<Vec<_>>()
            .join(", "),
        choice.describe()
    );
    for &(mix, query_seed) in &mixes {
        let kind = choice.kind(mix.points());
        // Built once per kind, for every size that takes it.
        let embedder = match embedders.get(kind) {
            Some(embedder) => embedder.clone(),
            None => {
                let settings = settings_for(scratch.path(), kind, choice.model_dir.as_deref())?;
                let embedder = mnemo_app::vectors::build_embedder(&settings).await?;
                embedders.insert(kind, embedder.clone());
                embedder
            }
        };
        rows.extend(
            bench_mix(
                mix,
                query_seed,
                args.queries,
                &choice,
                &embedder,
                scratch.path(),
            )
            .await?,
        );
    }
    print_table(&rows);
    if let Some(mix) = args.mix {
        print_ratios(&rows, mix);
    }
    Ok(())
}

/// Generates and embeds the memories (and conversation) of `mix`, then
/// loads and measures them twice, in a dir of their own under `scratch`
/// each: on the plain index, then on the optimized one. Returns the two
/// rows.
async fn bench_mix(
    mix: Mix,
    query_seed: usize,
    queries: usize,
    choice: &EmbedderChoice,
    embedder: &Arc<dyn Embedder>,
    scratch: &Path,
) -> anyhow::Result<Vec<Row>> {
    let kind = choice.kind(mix.points());
    let space = embedder.space().clone();
    eprintln!(
        "{}, embedder {} ({}-d)",
        mix.describe(),
        space.model,
        space.dimension
    );
    let data = generate(mix.memories, embedder).await?;
    eprintln!(
        "  embedded {} memories in {:.1} s ({:.0}/s)",
        mix.memories,
        data.embed_elapsed.as_secs_f64(),
        mix.memories as f64 / data.embed_elapsed.as_secs_f64()
    );
    let conversation = match mix.episodes {
        0 => None,
        count => {
            let subject = SubjectId::parse(SUBJECT)?;
            let (conversation, elapsed) = episodes::prepare(
                &subject,
                count,
                0x51_7CC1_B727_220A ^ count as u64,
                embedder,
            )
            .await?;
            eprintln!(
                "  embedded {count} episodes (each with the turn before it) in {:.1} s ({:.0}/s)",
                elapsed.as_secs_f64(),
                count as f64 / elapsed.as_secs_f64()
            );
            Some(conversation)
        }
    };
    let (queries, vectors) = queries_for(query_seed, queries, embedder).await?;
    let mut rows = Vec::new();
    for (label, optimize) in [("plain", false), ("optimized", true)] {
        let dir = scratch.join(format!("{}e-{}m-{label}", mix.episodes, mix.memories));
        let settings = settings_for(&dir, kind, choice.model_dir.as_deref())?;
        let (loaded, optimized) =
            load(&settings, &space, &data, conversation.as_ref(), optimize).await?;
        eprintln!(
            "  {label}: rows, messages and points written in {:.1} s{}",
            loaded.as_secs_f64(),
            if optimize {
                format!(", optimize {:.1} s", optimized.as_secs_f64())
            } else {
                String::new()
            }
        );
        let measured = measure(settings, embedder, &queries, &vectors).await?;
        eprintln!(
            "  {label}: HTTP p50 {:.2} ms, find {:.2} ms, raw {:.2} ms",
            ms(measured.http.p50),
            ms(measured.find.p50),
            ms(measured.raw.p50)
        );
        rows.push(Row {
            mix,
            index: label,
            embedder: format!("{} ({}-d)", space.model, space.dimension),
            measured,
        });
    }
    Ok(rows)
}

/// `count` queries seeded by `size` (the same at every run), and the vector
/// of each distinct one, which the raw search is given precomputed.
async fn queries_for(
    size: usize,
    count: usize,
    embedder: &Arc<dyn Embedder>,
) -> anyhow::Result<(Vec<String>, HashMap<String, Vec<f32>>)> {
    let mut rng = Rng(0xD1B5_4A32_D192_ED03 ^ size as u64);
    let queries: Vec<String> = (0..count).map(|_| query_text(&mut rng)).collect();
    let mut vectors = HashMap::new();
    for query in &queries {
        if !vectors.contains_key(query) {
            let vector = embedder
                .embed(std::slice::from_ref(query))
                .await?
                .pop()
                .context("the embedder returned no vector")?;
            vectors.insert(query.clone(), vector);
        }
    }
    Ok((queries, vectors))
}

/// The stdout table, one row per size and index, and its legend.
fn print_table(rows: &[Row]) {
    println!();
    println!(
        "| episodes | memories | index | embedder | HTTP search p50 / p99 | embed query p50 / p99 | \
         HTTP − embed p50 | find() no embedder p50 / p99 | raw hybrid query p50 / p99 | \
         find / raw p50 (p99) | episodes / all results |"
    );
    println!("|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut notes = Vec::new();
    for row in rows {
        let m = &row.measured;
        println!(
            "| {} | {} | {} | {} | {} | {} | {:.2} | {} | {} | {:.2} ({:.2}) | {} / {} |",
            row.mix.episodes,
            row.mix.memories,
            row.index,
            row.embedder,
            m.http.cell(),
            m.embed.cell(),
            ms(m.http.p50.saturating_sub(m.embed.p50)),
            m.find.cell(),
            m.raw.cell(),
            m.find.p50.as_secs_f64() / m.raw.p50.as_secs_f64().max(1e-9),
            m.find.p99.as_secs_f64() / m.raw.p99.as_secs_f64().max(1e-9),
            m.episode_results,
            m.results,
        );
        if m.empty > 0 {
            notes.push(format!(
                "warning: {} HTTP searches of {} ({}) found nothing",
                m.empty,
                row.mix.describe(),
                row.index
            ));
        }
    }
    for note in notes {
        println!("{note}");
    }
    println!(
        "\nms. HTTP search: POST /search end to end (k = {K}, hybrid). embed: the embedder alone \
         on the query. HTTP − embed: the p50s subtracted. find(): mnemo's search in process \
         (both index legs, read-model reads, ranking, queueing the access signal) with the query \
         vector precomputed, no HTTP. raw: VectorIndex::search with the same request (limit {}, \
         prefetch {}, RRF k {DEFAULT_RRF_K}, no vectors: the default ranking does not \
         diversify). plain: the index as the server \
         keeps it (nothing optimises it, dense search is brute force); optimized: after \
         EdgeVectorIndex::optimize (HNSW). episodes: messages of the subject's conversation, \
         in the log (sealed) and in the index as the episode projection writes them; a search \
         ranks them with the memories and reads each episode found from the log. episodes / all \
         results: over every HTTP search's results.",
        (K * 4).max(40),
        (K * 10).max(100),
    );
}

/// The figure: the p50s of the subject with episodes over those of
/// the memory-only subject with as many memories as it has episodes,
/// measured in the same run on the same queries.
fn print_ratios(rows: &[Row], mix: Mix) {
    let baseline = Mix::memories_only(mix.episodes);
    println!(
        "\n{} over {}, p50 (same queries, same run):",
        mix.describe(),
        baseline.describe()
    );
    println!("| index | HTTP search p50 | find() p50 |");
    println!("|---|---:|---:|");
    for index in ["plain", "optimized"] {
        let of = |wanted: Mix| {
            rows.iter()
                .find(|r| r.mix == wanted && r.index == index)
                .map(|r| &r.measured)
        };
        let (Some(with), Some(without)) = (of(mix), of(baseline)) else {
            continue;
        };
        let ratio = |a: Duration, b: Duration| {
            format!(
                "{:.2} / {:.2} ms = {:.2}×",
                ms(a),
                ms(b),
                a.as_secs_f64() / b.as_secs_f64().max(1e-9)
            )
        };
        println!(
            "| {index} | {} | {} |",
            ratio(with.http.p50, without.http.p50),
            ratio(with.find.p50, without.find.p50)
        );
    }
}
