//! `mnemo reindex`: builds the vector collection of the configured
//! embedding space by replaying the event log, beside a running server.
//!
//! The server keeps serving its current collection (and model) while this
//! runs; the new collection is written to a new directory and marked
//! complete up to the log position it reached. `mnemo serve` takes it over
//! at its next start, catching up from that position (see `collections`).
//! When no server runs on the data dir, the take-over happens here.
//!
//! Run with the same model as the server, it also compacts: the rebuilt
//! collection holds no bytes of deleted or erased points.

use std::fs::File;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use mnemo_config::Settings;
use mnemo_retriever::reindex::{replay, Progress};
use mnemo_vector_index::{payload, EdgeVectorIndex, VectorIndex};

use crate::stores::open_log;
use crate::vectors::{build_embedder, open_vector_index};
use mnemo_vector_index::collections::ReplayMarker;

/// The file a reindex holds locked while it builds; the server's data-dir
/// lock is taken only for the take-over, so `mnemo compact` (which must have
/// the database to itself) looks here too.
pub(crate) fn lock_file(settings: &Settings) -> std::path::PathBuf {
    crate::vectors::collections(settings).path("reindex.lock")
}

pub async fn run(settings: &Settings) -> anyhow::Result<()> {
    let started = Instant::now();
    let collections = crate::vectors::collections(settings);
    std::fs::create_dir_all(collections.path(""))?;
    let lock = File::create(lock_file(settings))?;
    lock.try_lock().map_err(|_| {
        anyhow::anyhow!("another mnemo reindex (or a mnemo compact) is running on this data dir")
    })?;
    anyhow::ensure!(
        settings.database_file().exists(),
        "{} holds no database: nothing to reindex",
        settings.data_dir.display()
    );
    for removed in collections.remove_unfinished()? {
        eprintln!("removed the unfinished build {removed}");
    }

    let embedder = build_embedder(settings).await?;
    let (log, stores) = open_log(settings).await?;
    let space = embedder.space().clone();
    let name = collections.new_generation(&payload::collection_name(&space.collection_name()));
    let marker = ReplayMarker::started(&space.model, space.dimension);
    collections.write_marker(&name, &marker)?;
    let dir = collections.path(&name);
    let index = Arc::new(
        EdgeVectorIndex::open(&dir, space.dimension)
            .with_context(|| format!("cannot create {}", dir.display()))?,
    );
    // One flush at the end: the marker says "unfinished" until then.
    index.set_durable_writes(false);
    eprintln!(
        "building {} ({} , {} dimensions) from the event log",
        dir.display(),
        space.model,
        space.dimension
    );

    let bar = ProgressBar::new_spinner();
    bar.enable_steady_tick(Duration::from_millis(200));
    let indexing_style =
        ProgressStyle::with_template("{bar:40} {pos}/{len} memories  {per_sec}  eta {eta}")?;
    let report = {
        let bar = bar.clone();
        move |step: Progress| match step {
            Progress::Scanning { events, head } => {
                bar.set_message(format!("reading the log: {events} events (head {head})"));
            }
            Progress::Indexing { done, total } => {
                if bar.length() != Some(total) {
                    bar.set_style(indexing_style.clone());
                    bar.set_length(total);
                }
                bar.set_position(done);
            }
        }
    };
    let mut replayed = replay(&log, embedder.as_ref(), index.as_ref(), 0, &report).await?;
    // What was appended while the first pass ran: usually a handful.
    let tail = replay(
        &log,
        embedder.as_ref(),
        index.as_ref(),
        replayed.position,
        &report,
    )
    .await?;
    replayed.position = tail.position;
    replayed.memories += tail.memories;
    replayed.points += tail.points;
    replayed.episodes += tail.episodes;
    index.flush().await?;
    // Built once, read many times: merge segments and build the HNSW graph
    // now rather than leave the server on plain segments (about twice as
    // fast a search at 100k points; see `mnemo bench search`).
    bar.set_style(ProgressStyle::default_spinner());
    bar.enable_steady_tick(Duration::from_millis(200));
    bar.set_message("optimizing the collection (merging segments, building the HNSW graph)");
    index.optimize().await?;
    bar.finish_and_clear();
    let points = index.stats().await?.points;
    drop(index);
    collections.write_marker(&name, &marker.completed(replayed.position))?;
    println!(
        "built {name}: {} memories and {} episodes replayed, {points} points, complete up to log position {}, in {:.1} s",
        replayed.memories,
        replayed.episodes,
        replayed.position,
        started.elapsed().as_secs_f64()
    );

    // Held through the take-over, so no server starts on a half-switched
    // data dir (it would be told that this reindex holds it).
    match crate::data_dir_lock::try_take(&settings.data_dir, "mnemo reindex")? {
        Ok(_serve_lock) => {
            // No server on this data dir: take the new collection over now.
            let taken = open_vector_index(settings, embedder, &log).await?;
            taken.flush().await?;
            drop(taken);
            println!("no server is running: {name} is now the active collection");
        }
        Err(holder) => println!(
            "{holder} is running on this data dir: it keeps serving its current collection; \
             restart it (with this embedder's settings) to switch to {name}"
        ),
    }
    stores.close().await;
    Ok(())
}
