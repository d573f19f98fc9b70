//! The crate's one error type.
//!
//! Messages never carry the texts being embedded (they are subject content);
//! upstream error bodies are cut short for the same reason.

use std::path::PathBuf;

/// Everything that can go wrong while choosing, loading or calling an embedder.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// Settings that cannot work (unknown embedder kind, missing base URL…).
    #[error("invalid embedder configuration: {0}")]
    InvalidConfig(String),

    /// The local model is neither on disk nor downloadable.
    #[error("embedding model {model} is unavailable: {reason}")]
    ModelUnavailable { model: String, reason: String },

    /// Model files are present but cannot be used (bad config, unsupported
    /// architecture or pooling, weights that do not match).
    #[error("cannot load embedding model from {dir}: {reason}")]
    ModelLoad { dir: PathBuf, reason: String },

    /// The forward pass or tokenization failed.
    #[error("embedding inference failed: {0}")]
    Inference(String),

    /// The endpoint refused the request with a status that retrying cannot fix
    /// (4xx other than 429).
    #[error("embedding endpoint rejected the request with status {status}: {message}")]
    Rejected { status: u16, message: String },

    /// Transient failures (429, 5xx, timeouts, connection errors) outlasted
    /// the retry budget.
    #[error("embedding endpoint still failing after {attempts} attempts: {last_error}")]
    RetriesExhausted { attempts: u32, last_error: String },

    /// The endpoint answered 2xx but the answer is unusable (wrong count,
    /// wrong dimension, malformed JSON, zero vector).
    #[error("invalid answer from embedding endpoint: {0}")]
    InvalidResponse(String),

    /// A downloaded file does not have the expected digest.
    #[error("integrity check failed for {what}: expected sha256 {expected}, got {actual}")]
    Integrity {
        what: String,
        expected: String,
        actual: String,
    },

    /// Filesystem trouble while caching or reading model files.
    #[error("i/o error on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// A blocking embedding task panicked or was cancelled.
    #[error("embedding task failed: {0}")]
    Task(String),
}

impl EmbedError {
    /// A stable, lowercase code for logs and API bodies; knows nothing of HTTP.
    pub fn code(&self) -> &'static str {
        match self {
            EmbedError::InvalidConfig(_) => "embed_invalid_config",
            EmbedError::ModelUnavailable { .. } => "embed_model_unavailable",
            EmbedError::ModelLoad { .. } => "embed_model_load",
            EmbedError::Inference(_) => "embed_inference",
            EmbedError::Rejected { .. } => "embed_rejected",
            EmbedError::RetriesExhausted { .. } => "embed_retries_exhausted",
            EmbedError::InvalidResponse(_) => "embed_invalid_response",
            EmbedError::Integrity { .. } => "embed_integrity",
            EmbedError::Io { .. } => "embed_io",
            EmbedError::Task(_) => "embed_task_failed",
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        EmbedError::Io {
            path: path.into(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_stable_and_distinct() {
        let errors = [
            EmbedError::InvalidConfig("x".into()),
            EmbedError::ModelUnavailable {
                model: "m".into(),
                reason: "r".into(),
            },
            EmbedError::ModelLoad {
                dir: "/d".into(),
                reason: "r".into(),
            },
            EmbedError::Inference("x".into()),
            EmbedError::Rejected {
                status: 400,
                message: "m".into(),
            },
            EmbedError::RetriesExhausted {
                attempts: 5,
                last_error: "e".into(),
            },
            EmbedError::InvalidResponse("x".into()),
            EmbedError::Integrity {
                what: "w".into(),
                expected: "a".into(),
                actual: "b".into(),
            },
            EmbedError::io("/p", std::io::Error::other("boom")),
            EmbedError::Task("x".into()),
        ];
        let codes: std::collections::HashSet<_> = errors.iter().map(EmbedError::code).collect();
        assert_eq!(codes.len(), errors.len());
        assert!(codes
            .iter()
            .all(|c| c.starts_with("embed_")
                && c.chars().all(|ch| ch.is_ascii_lowercase() || ch == '_')));
    }
}
