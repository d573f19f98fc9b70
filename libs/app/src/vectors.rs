//! The embedder and the vector index the settings ask for.

use std::sync::Arc;

use anyhow::Context;
use mnemo_config::Settings;
use mnemo_embed::{CachedEmbedder, Embedder, EmbedderKind, EmbedderStatus};
use mnemo_event_store::sealed::SealedLog;
use mnemo_vector_index::collections::{Collections, ReplayMarker};
use mnemo_vector_index::{payload, EdgeVectorIndex, VectorIndex};

/// The embedder the settings ask for (see `mnemo-embed`'s `build`).
pub async fn build_embedder(settings: &Settings) -> anyhow::Result<Arc<dyn Embedder>> {
    Ok(build_embedder_with_status(settings).await?.0)
}

/// [`build_embedder`], and what it built for `/readyz` to report.
pub async fn build_embedder_with_status(
    settings: &Settings,
) -> anyhow::Result<(Arc<dyn Embedder>, EmbedderStatus)> {
    let (embedder, status) = mnemo_embed::build_with_status(&settings.embedding)
        .await
        .context("cannot set up the embedder")?;
    tracing::info!(kind = ?status.kind, model = %status.model, dimension = status.dimension, fallback = status.fallback, "embedder ready");
    Ok((embedder, status))
}

/// Texts whose vectors the pipeline's embedder remembers: about 6 MiB of
/// 384-wide vectors, several of the pipeline's batches, so a memory's text
/// and its source messages are still there when the memory projection
/// embeds them again.
pub const RECENT_TEXTS: usize = 4096;

/// The embedder the consolidator and the projections share: a model-backed
/// one behind a memo of the texts it embedded lately ([`CachedEmbedder`]),
/// because they embed a consolidated memory's text and its source messages
/// twice each; the lexical one as it is (its vectors cost less to compute
/// than to look up). Search keeps the plain embedder.
pub fn pipeline_embedder(
    embedder: &Arc<dyn Embedder>,
    status: &EmbedderStatus,
) -> Arc<dyn Embedder> {
    match status.kind {
        EmbedderKind::Lexical => embedder.clone(),
        _ => Arc::new(CachedEmbedder::new(embedder.clone(), RECENT_TEXTS)),
    }
}

/// The data dir's embedded vector collections (`DIR/vectors`): the
/// served one, rebuilt ones, and the reindex's lock.
pub(crate) fn collections(settings: &Settings) -> Collections {
    Collections::new(settings.data_dir.join("vectors"))
}

/// Opens the collection the server serves for the embedder's space (one
/// collection per space, so switching models never mixes vectors): takes
/// over a collection `mnemo reindex` built, or replays the log into a new
/// one when the model changed without a reindex, before anything is served
/// from it (see `collections`). Stale collections are deleted afterwards.
pub async fn open_vector_index(
    settings: &Settings,
    embedder: Arc<dyn Embedder>,
    log: &SealedLog,
) -> anyhow::Result<Arc<EdgeVectorIndex>> {
    let space = embedder.space().clone();
    let collections = collections(settings);
    let opening = collections.plan(&payload::collection_name(&space.collection_name()))?;
    if opening.catch_up_from.is_some() && collections.marker(&opening.name)?.is_none() {
        // Marked unfinished before the first point lands, so a crash
        // mid-build is caught up again at the next start.
        collections.write_marker(
            &opening.name,
            &ReplayMarker::started(&space.model, space.dimension),
        )?;
    }
    let dir = collections.path(&opening.name);
    let index = Arc::new(
        EdgeVectorIndex::open(&dir, space.dimension)
            .with_context(|| format!("cannot open the vector index {}", dir.display()))?,
    );
    collections.set_active(&opening.name)?;
    if let Some(from) = opening.catch_up_from {
        tracing::info!(collection = %opening.name, from, "bringing the vector collection up to the log's head before serving");
        // One flush at the end instead of one per point: the marker stays
        // until then, so a crash replays again instead of losing points.
        index.set_durable_writes(false);
        let replayed =
            mnemo_retriever::reindex::catch_up(log, embedder.clone(), index.clone(), from)
                .await
                .context("cannot bring the vector collection up to date")?;
        index.flush().await?;
        collections.remove_marker(&opening.name)?;
        tracing::info!(
            collection = %opening.name,
            position = replayed.position,
            memories = replayed.memories,
            episodes = replayed.episodes,
            points = replayed.points,
            "vector collection is current"
        );
    }
    // The projections flush once per run of records, before they commit
    // its offsets (`EventHandler::flush`); an erasure's purge and the
    // shutdown flush too. A durable write per point would cost a sync of
    // the written segment per point (see `set_durable_writes`).
    index.set_durable_writes(false);
    for removed in collections.remove_stale(&opening.name)? {
        tracing::info!(collection = %removed, "removed a vector collection no longer served");
    }
    Ok(index)
}

/// The vector index: a Qdrant server when one is configured, else the data
/// dir's qdrant-edge collection (see [`open_vector_index`]).
pub async fn open_index(
    settings: &Settings,
    embedder: Arc<dyn Embedder>,
    log: &SealedLog,
) -> anyhow::Result<OpenedIndex> {
    let Some(qdrant) = &settings.qdrant else {
        let edge = open_vector_index(settings, embedder, log).await?;
        return Ok(OpenedIndex {
            index: edge.clone(),
            edge: Some(edge),
        });
    };
    let space = embedder.space().clone();
    let index = mnemo_vector_index::QdrantVectorIndex::connect(
        qdrant,
        &payload::collection_name(&space.collection_name()),
        space.dimension,
    )
    .await
    .with_context(|| format!("cannot open the Qdrant collection for {}", space.model))?;
    let index = Arc::new(index);
    if index.created_collection() {
        // A new embedding space: without a replay it would hold none of the
        // memories already in the log (the projection only sees new events).
        // Another process writing meanwhile is harmless: points are whole
        // and replaced by memory id. A crash mid-replay leaves the
        // collection partial: drop it in Qdrant and restart to replay again.
        tracing::info!(collection = %index.collection(), "new Qdrant collection: replaying the log into it");
        let replayed = mnemo_retriever::reindex::catch_up(log, embedder, index.clone(), 0)
            .await
            .context("cannot replay the log into the new Qdrant collection")?;
        tracing::info!(
            memories = replayed.memories,
            episodes = replayed.episodes,
            points = replayed.points,
            "Qdrant collection is current"
        );
    }
    // The space's collection under an earlier payload layout no longer
    // receives erasures once this one serves: it goes, as the embedded
    // mode's stale collections do. Every connect looks, so a crash between
    // the replay and this is made good at the next start.
    for former in payload::former_collection_names(&space.collection_name()) {
        if mnemo_vector_index::QdrantVectorIndex::drop_space(qdrant, &former)
            .await
            .with_context(|| format!("cannot delete the former collection of {former}"))?
        {
            tracing::info!(space = %former, "deleted the collection of an earlier payload layout");
        }
    }
    Ok(OpenedIndex { index, edge: None })
}

/// The index a process serves, and the embedded engine behind it when it
/// is one (which the server optimises in the background when idle; a
/// Qdrant server optimises itself).
pub struct OpenedIndex {
    pub index: Arc<dyn VectorIndex>,
    pub edge: Option<Arc<EdgeVectorIndex>>,
}

/// The embedded index, as `/metrics` reports it.
pub struct EdgeStatus(pub Arc<EdgeVectorIndex>);

impl mnemo_http::health::IndexStatus for EdgeStatus {
    fn unoptimized_for(&self) -> Option<std::time::Duration> {
        self.0.unoptimized_for()
    }
}

/// How long the embedded index must have had no write before the server
/// optimises it, and how often it looks.
pub const OPTIMIZE_WHEN_QUIET: std::time::Duration = std::time::Duration::from_secs(30);

/// Optimises the embedded index whenever it has been written and then left
/// quiet for [`OPTIMIZE_WHEN_QUIET`]: merged segments and HNSW graphs, so
/// dense search is not a scan of plain segments until a reindex. A write
/// that comes meanwhile stops it (it is tried again at the next quiet
/// spell), so writes do not wait for it; searches never do.
pub async fn optimize_when_idle(index: Arc<EdgeVectorIndex>) {
    loop {
        tokio::time::sleep(OPTIMIZE_WHEN_QUIET).await;
        match index.optimize_if_idle(OPTIMIZE_WHEN_QUIET).await {
            Ok(true) => tracing::info!("vector index optimised while idle"),
            Ok(false) => {}
            Err(error) => tracing::warn!(error = %error, "background optimisation failed"),
        }
    }
}
