//! Streaming a model file to disk, hashing it on the way and saying how far
//! it got.
//!
//! A first start may spend minutes on a slow link fetching ~90 MB; without a
//! progress line it looks hung. Lines name files and byte counts only: model
//! files are public, and nothing of a subject passes through here.

use std::path::Path;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;

use crate::model::error_chain;

/// Files smaller than this arrive before anyone would miss a progress line.
const REPORTED_FROM_BYTES: u64 = 1 << 20;
/// A line at least this often while bytes arrive, whatever the share.
const LINE_AT_LEAST_EVERY: Duration = Duration::from_secs(5);
/// And never more often than this, even when a tenth went by faster.
const LINE_AT_MOST_EVERY: Duration = Duration::from_secs(1);

/// The client both model sources use.
pub(crate) fn http_client() -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        // No overall timeout (the weights can be hundreds of MB on a slow
        // link), but a stalled transfer fails instead of hanging forever.
        .read_timeout(Duration::from_secs(60))
        .user_agent(concat!("mnemo-embed/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("cannot build http client: {e}"))
}

/// Streams `url` into `destination` and returns the hex sha256 of what was
/// written; `Ok(None)` on 404. `what` names the file in progress lines.
pub(crate) async fn fetch_to_file(
    client: &reqwest::Client,
    url: &str,
    destination: &Path,
    what: &str,
) -> Result<Option<String>, String> {
    let mut response = client
        .get(url)
        .send()
        .await
        .map_err(|e| format!("GET {url}: {}", error_chain(&e)))?;
    if response.status() == reqwest::StatusCode::NOT_FOUND {
        return Ok(None);
    }
    if !response.status().is_success() {
        return Err(format!("GET {url}: status {}", response.status()));
    }
    let mut file = tokio::fs::File::create(destination)
        .await
        .map_err(|e| format!("cannot create {}: {e}", destination.display()))?;
    let mut hasher = Sha256::new();
    let mut progress = Progress::new(response.content_length(), Instant::now());
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| format!("GET {url}: {}", error_chain(&e)))?
    {
        hasher.update(&chunk);
        file.write_all(&chunk)
            .await
            .map_err(|e| format!("cannot write {}: {e}", destination.display()))?;
        if let Some(line) = progress.advance(chunk.len() as u64, Instant::now()) {
            tracing::info!(
                file = what,
                received_bytes = progress.received,
                total_bytes = progress.total,
                "downloading {what}: {line}"
            );
        }
    }
    file.sync_all()
        .await
        .map_err(|e| format!("cannot sync {}: {e}", destination.display()))?;
    if progress.received >= REPORTED_FROM_BYTES {
        tracing::info!(
            file = what,
            received_bytes = progress.received,
            "downloaded {what}: {} in {:.1} s",
            megabytes(progress.received),
            progress.started.elapsed().as_secs_f64()
        );
    }
    Ok(Some(hex::encode(hasher.finalize())))
}

/// When a download is due its next progress line.
#[derive(Debug)]
struct Progress {
    total: Option<u64>,
    received: u64,
    started: Instant,
    last_line: Instant,
    /// Tenths of the total received at the last line.
    last_tenths: u64,
}

impl Progress {
    fn new(total: Option<u64>, now: Instant) -> Self {
        Self {
            total: total.filter(|t| *t > 0),
            received: 0,
            started: now,
            last_line: now,
            last_tenths: 0,
        }
    }

    /// Counts `bytes` more; returns the line to log when one is due: after
    /// another tenth of the total (at most one a second), or every few
    /// seconds when the total is unknown or the link is slow.
    fn advance(&mut self, bytes: u64, now: Instant) -> Option<String> {
        self.received += bytes;
        if self.total.unwrap_or(self.received) < REPORTED_FROM_BYTES {
            return None;
        }
        let since_last = now.duration_since(self.last_line);
        let tenths = self.total.map_or(0, |t| self.received * 10 / t);
        let another_tenth = tenths > self.last_tenths && since_last >= LINE_AT_MOST_EVERY;
        if !another_tenth && since_last < LINE_AT_LEAST_EVERY {
            return None;
        }
        self.last_line = now;
        self.last_tenths = tenths;
        Some(match self.total {
            Some(total) => format!(
                "{} of {} ({} %)",
                megabytes(self.received),
                megabytes(total),
                self.received * 100 / total
            ),
            None => format!("{} so far", megabytes(self.received)),
        })
    }
}

fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: u64 = 1_000_000;

    #[test]
    fn a_line_per_tenth_at_most_once_a_second() {
        let start = Instant::now();
        let mut progress = Progress::new(Some(100 * MB), start);
        // 5 % after half a second: nothing yet.
        assert_eq!(
            progress.advance(5 * MB, start + Duration::from_millis(500)),
            None
        );
        // 15 % after 1.5 s: a tenth went by.
        assert_eq!(
            progress
                .advance(10 * MB, start + Duration::from_millis(1500))
                .as_deref(),
            Some("15.0 MB of 100.0 MB (15 %)")
        );
        // 95 % a moment later: too soon for another line.
        assert_eq!(
            progress.advance(80 * MB, start + Duration::from_millis(1600)),
            None
        );
        assert!(progress
            .advance(MB, start + Duration::from_millis(2600))
            .is_some());
    }

    #[test]
    fn a_slow_or_unsized_download_still_reports_every_few_seconds() {
        let start = Instant::now();
        let mut unsized_download = Progress::new(None, start);
        assert_eq!(
            unsized_download.advance(2 * MB, start + Duration::from_secs(1)),
            None
        );
        assert_eq!(
            unsized_download
                .advance(MB, start + Duration::from_secs(6))
                .as_deref(),
            Some("3.0 MB so far")
        );
        let mut slow = Progress::new(Some(1000 * MB), start);
        assert!(slow.advance(MB, start + Duration::from_secs(6)).is_some());
    }

    #[test]
    fn small_files_say_nothing() {
        let start = Instant::now();
        let mut progress = Progress::new(Some(1000), start);
        assert_eq!(
            progress.advance(1000, start + Duration::from_secs(60)),
            None
        );
    }
}
