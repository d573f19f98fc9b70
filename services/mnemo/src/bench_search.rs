//! `mnemo bench search`: search latency at scale (implementation in progress).

#[derive(Debug, Clone)]
pub struct SearchBenchArgs {
    /// Memory counts to measure at, e.g. 10000 and 100000.
    pub sizes: Vec<usize>,
    pub queries: usize,
}

pub async fn search(_args: SearchBenchArgs) -> anyhow::Result<()> {
    anyhow::bail!("not implemented yet")
}
