//! Raw query latency of the qdrant-edge adapter: builds indexes of random
//! L2-normalised 384-d points with short synthetic texts for one tenant and
//! prints p50/p99 of dense, sparse and hybrid searches through the
//! `VectorIndex` trait (embedding excluded), before and after `optimize`,
//! tenant-wide and for one subject; and what an erasure's purge costs
//! (`purge_deleted` after deleting one subject), on plain and on optimised
//! segments.
//!
//! ```text
//! cargo run --release -p mnemo-vector-index --example edge_bench [SIZES] [QUERIES]
//! ```
//! SIZES is comma-separated (default `10000,100000`), QUERIES per mode
//! (default 200).

use std::path::Path;
use std::time::{Duration, Instant};

use mnemo_domain::{MemoryId, MemoryKind, MemoryState, SubjectId, TenantId};
use mnemo_vector_index::{
    EdgeVectorIndex, Point, PointPayload, SearchFilter, SearchMode, SearchRequest, VectorIndex,
};

const DIMENSION: usize = 384;
const SUBJECTS: u64 = 200;
const VOCABULARY: usize = 5_000;

/// xorshift64* with Box-Muller: enough randomness for a benchmark, no
/// dependency.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn normal(&mut self) -> f32 {
        let u1 = self.uniform().max(f64::MIN_POSITIVE);
        let u2 = self.uniform();
        ((-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()) as f32
    }

    fn unit_vector(&mut self) -> Vec<f32> {
        let v: Vec<f32> = (0..DIMENSION).map(|_| self.normal()).collect();
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / norm).collect()
    }

    /// Skewed towards frequent words, like text.
    fn word<'a>(&mut self, words: &'a [String]) -> &'a str {
        let u = self.uniform();
        &words[((u * u * u) * words.len() as f64) as usize]
    }
}

fn vocabulary() -> Vec<String> {
    const SYLLABLES: [&str; 20] = [
        "ka", "lo", "mi", "ren", "sa", "to", "vi", "del", "mor", "quin", "bra", "el", "fu", "gan",
        "ho", "jis", "nu", "pe", "ro", "tas",
    ];
    (0..VOCABULARY)
        .map(|n| {
            let mut word = String::new();
            let mut rest = n + 20;
            while rest > 0 {
                word.push_str(SYLLABLES[rest % SYLLABLES.len()]);
                rest /= SYLLABLES.len();
            }
            word
        })
        .collect()
}

fn text(rng: &mut Rng, words: &[String], length: usize) -> String {
    (0..length)
        .map(|_| rng.word(words))
        .collect::<Vec<_>>()
        .join(" ")
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index]
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1_000.0
}

/// (apparent bytes, allocated bytes, WAL files)
fn disk_usage(dir: &Path) -> (u64, u64, usize) {
    use std::os::unix::fs::MetadataExt;
    let (mut apparent, mut allocated, mut wal_files) = (0, 0, 0);
    let mut stack = vec![dir.to_path_buf()];
    while let Some(path) = stack.pop() {
        for entry in std::fs::read_dir(&path).unwrap().flatten() {
            let meta = entry.metadata().unwrap();
            if meta.is_dir() {
                stack.push(entry.path());
            } else {
                apparent += meta.len();
                allocated += meta.blocks() * 512;
                if path.ends_with("wal") {
                    wal_files += 1;
                }
            }
        }
    }
    (apparent, allocated, wal_files)
}

async fn measure(
    index: &EdgeVectorIndex,
    tenant: &TenantId,
    rng: &mut Rng,
    words: &[String],
    queries: usize,
    subject: Option<&SubjectId>,
) {
    for mode in [
        SearchMode::Semantic,
        SearchMode::Keyword,
        SearchMode::Hybrid,
    ] {
        let mut times = Vec::with_capacity(queries);
        let mut returned = 0;
        for _ in 0..queries {
            let request = SearchRequest {
                filter: SearchFilter {
                    subject: subject.cloned(),
                    ..SearchFilter::default()
                },
                dense: (mode != SearchMode::Keyword).then(|| rng.unit_vector()),
                text: (mode != SearchMode::Semantic).then(|| text(rng, words, 3)),
                mode,
                limit: 10,
                prefetch: 50,
                ..SearchRequest::default()
            };
            let started = Instant::now();
            let hits = index.search(tenant, &request).await.unwrap();
            times.push(started.elapsed());
            returned += hits.len();
        }
        times.sort();
        println!(
            "    {:<9} p50 {:>8.2} ms   p99 {:>8.2} ms   ({:.1} hits/query)",
            format!("{mode:?}").to_lowercase(),
            millis(percentile(&times, 0.5)),
            millis(percentile(&times, 0.99)),
            returned as f64 / queries as f64
        );
    }
}

async fn bench(size: usize, queries: usize) {
    let dir = tempfile::tempdir().unwrap();
    let index = EdgeVectorIndex::open(dir.path(), DIMENSION).unwrap();
    let tenant = TenantId::parse("bench-tenant").unwrap();
    let words = vocabulary();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ size as u64);

    println!("== {size} points, {DIMENSION}-d, one tenant, {SUBJECTS} subjects");
    let started = Instant::now();
    let mut batch = Vec::with_capacity(1_000);
    for n in 0..size as u64 {
        let length = 6 + (rng.next_u64() % 10) as usize;
        batch.push(Point {
            id: MemoryId::new(),
            dense: rng.unit_vector(),
            text: text(&mut rng, &words, length),
            payload: PointPayload {
                tenant: tenant.clone(),
                subject: SubjectId::parse(format!("subject-{}", n % SUBJECTS)).unwrap(),
                point_type: mnemo_vector_index::PointType::Memory,
                kind: MemoryKind::ALL[(n % 5) as usize],
                tags: vec![format!("tag-{}", n % 17)],
                state: if n % 10 == 0 {
                    MemoryState::Archived
                } else {
                    MemoryState::Active
                },
                session: Some(format!("session-{}", n % 1_000)),
                agent: None,
                created_at: 1_700_000_000 + n as i64,
                updated_at: 1_700_000_000 + n as i64,
                importance: rng.uniform() as f32,
            },
        });
        if batch.len() == 1_000 {
            index
                .upsert(&tenant, std::mem::take(&mut batch))
                .await
                .unwrap();
        }
    }
    if !batch.is_empty() {
        index.upsert(&tenant, batch).await.unwrap();
    }
    let upserted = started.elapsed();
    let flush_started = Instant::now();
    index.flush().await.unwrap();
    println!(
        "  upsert {:.1} s ({:.0} points/s, durable batches of 1000), flush {:.0} ms",
        upserted.as_secs_f64(),
        size as f64 / upserted.as_secs_f64(),
        millis(flush_started.elapsed())
    );

    let subject = SubjectId::parse("subject-7").unwrap();
    println!("  plain segments (no HNSW), tenant-wide:");
    measure(&index, &tenant, &mut rng, &words, queries, None).await;
    println!(
        "  plain segments, one subject ({} points):",
        size as u64 / SUBJECTS
    );
    measure(&index, &tenant, &mut rng, &words, queries, Some(&subject)).await;
    give_way(&index, &tenant, &subject, &mut rng, &words).await;
    purge(&index, &tenant, "subject-3", "plain segments").await;

    let started = Instant::now();
    index.optimize().await.unwrap();
    let stats = index.stats().await.unwrap();
    println!(
        "  optimize {:.1} s -> {} segments, {} HNSW-indexed vectors",
        started.elapsed().as_secs_f64(),
        stats.segments,
        stats.indexed_vectors
    );
    println!("  optimized, tenant-wide:");
    measure(&index, &tenant, &mut rng, &words, queries, None).await;
    println!("  optimized, one subject:");
    measure(&index, &tenant, &mut rng, &words, queries, Some(&subject)).await;

    // A projection writing one memory at a time: durable (the default,
    // flushed before returning) and not.
    for durable in [true, false] {
        index.set_durable_writes(durable);
        let mut writes = Vec::new();
        for n in 0..50u64 {
            let point = new_fact(&mut rng, &words, &tenant, &subject, n);
            let started = Instant::now();
            index.upsert(&tenant, vec![point]).await.unwrap();
            writes.push(started.elapsed());
        }
        writes.sort();
        println!(
            "  single-point upsert, durable={durable}: p50 {:.2} ms, p99 {:.2} ms",
            millis(percentile(&writes, 0.5)),
            millis(percentile(&writes, 0.99))
        );
    }
    index.flush().await.unwrap();
    purge(&index, &tenant, "subject-5", "optimised segments").await;
    let (apparent, allocated, wal_files) = disk_usage(dir.path());
    println!(
        "  disk: {:.0} MiB allocated ({:.0} MiB apparent), {wal_files} WAL files",
        allocated as f64 / 1_048_576.0,
        apparent as f64 / 1_048_576.0
    );
}

/// The `n`-th memory written one at a time after the index was built.
fn new_fact(
    rng: &mut Rng,
    words: &[String],
    tenant: &TenantId,
    subject: &SubjectId,
    n: u64,
) -> Point {
    Point {
        id: MemoryId::new(),
        dense: rng.unit_vector(),
        text: text(rng, words, 8),
        payload: PointPayload {
            tenant: tenant.clone(),
            subject: subject.clone(),
            point_type: mnemo_vector_index::PointType::Memory,
            kind: MemoryKind::Fact,
            tags: vec![],
            state: MemoryState::Active,
            session: None,
            agent: None,
            created_at: 1_800_000_000 + n as i64,
            updated_at: 1_800_000_000 + n as i64,
            importance: 0.5,
        },
    }
}

/// A write that comes while the server's idle optimisation runs: how long
/// it waited (the optimisation gives way to it).
async fn give_way(
    index: &EdgeVectorIndex,
    tenant: &TenantId,
    subject: &SubjectId,
    rng: &mut Rng,
    words: &[String],
) {
    let optimiser = {
        let index = index.clone();
        tokio::spawn(async move { index.optimize_if_idle(Duration::ZERO).await })
    };
    while !index.optimising() {
        if optimiser.is_finished() {
            println!("  the idle optimisation had nothing to do");
            return;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    // Well into the optimisation.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let point = new_fact(rng, words, tenant, subject, 0);
    let started = Instant::now();
    index.upsert(tenant, vec![point]).await.unwrap();
    let waited = started.elapsed();
    let finished = optimiser.await.unwrap().unwrap();
    println!(
        "  a write during the idle optimisation waited {:.1} ms (the optimisation {})",
        millis(waited),
        if finished { "had finished" } else { "gave way" }
    );
}

/// An erasure's work on the index: one subject deleted, then the purge
/// (a fresh shard with the live points; HNSW rebuilt when it was built).
async fn purge(index: &EdgeVectorIndex, tenant: &TenantId, subject: &str, segments: &str) {
    let subject = SubjectId::parse(subject).unwrap();
    let started = Instant::now();
    let deleted = index.delete_subject(tenant, &subject).await.unwrap();
    let deleted_in = started.elapsed();
    let started = Instant::now();
    let purge = index.purge_deleted().await.unwrap();
    let purged_in = started.elapsed();
    let stats = index.stats().await.unwrap();
    println!(
        "  erasure on {segments}: delete_subject {deleted} points {:.0} ms, purge {:.2} s \
         ({purge:?}; then {} segments, {} HNSW-indexed vectors)",
        millis(deleted_in),
        purged_in.as_secs_f64(),
        stats.segments,
        stats.indexed_vectors
    );
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let sizes: Vec<usize> = args
        .next()
        .unwrap_or_else(|| "10000,100000".into())
        .split(',')
        .map(|s| s.trim().parse().expect("sizes are numbers"))
        .collect();
    let queries: usize = args
        .next()
        .map(|q| q.parse().expect("queries is a number"))
        .unwrap_or(200);
    for size in sizes {
        bench(size, queries).await;
    }
}
