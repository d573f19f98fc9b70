//! `mnemo eval locomo FILE`: LoCoMo retrieval recall through the public HTTP
//! API of a running server (implementation in progress).

#[derive(Debug, Clone)]
pub struct LocomoArgs {
    pub file: std::path::PathBuf,
    pub url: String,
    pub token: String,
    /// hybrid, semantic, keyword, or all three.
    pub modes: Vec<String>,
    /// Subject ids are `<prefix>-<sample_id>`.
    pub subject_prefix: String,
    /// Reuse subjects ingested by an earlier run.
    pub skip_ingest: bool,
}

pub async fn locomo(_args: LocomoArgs) -> anyhow::Result<()> {
    anyhow::bail!("not implemented yet")
}
