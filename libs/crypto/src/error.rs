use std::path::PathBuf;

/// Everything that can go wrong in this crate.
///
/// Messages carry ids (key ids, master key fingerprints, file paths) but never
/// key material or plaintext, so they are safe to log.
#[derive(Debug, thiserror::Error)]
pub enum CryptoError {
    /// The configured master key is not 32 bytes of standard base64, or is
    /// obviously a placeholder.
    #[error("invalid master key: {0}")]
    InvalidMasterKey(&'static str),

    /// The master key file could not be read, created or written.
    #[error("master key file {}: {source}", path.display())]
    KeyFile {
        path: PathBuf,
        source: std::io::Error,
    },

    /// The master key file can be read or written by group or others. Refused
    /// (like ssh does with private keys) rather than warned about: a warning
    /// in a log is easy to miss, a key copied off a shared box is forever.
    #[error(
        "master key file {} is accessible by group or others (mode {mode:o}); run chmod 600 on it",
        path.display()
    )]
    KeyFileInsecure { path: PathBuf, mode: u32 },

    /// A data key was wrapped by a different master key than the configured
    /// one (compared by fingerprint, before any decryption is tried).
    #[error("data key {key_id} is wrapped by master key {stored}, but the configured master key is {current}")]
    WrongMasterKey {
        key_id: String,
        stored: String,
        current: String,
    },

    /// A wrapped data key failed authentication: corrupted, or copied to
    /// another tenant/subject/key id than it was wrapped for.
    #[error("data key {key_id} could not be unwrapped (corrupt, or moved from another subject)")]
    Unwrap { key_id: String },

    /// Sealed content failed authentication under a key that exists: the
    /// ciphertext was altered or moved from another place. Never reported as
    /// "erased", which would let tampering pass for an erasure.
    #[error("sealed content under key {key_id} failed authentication (tampered or moved)")]
    Tampered { key_id: String },

    /// A `$text` / `$sealed` marker does not have the shape of the protocol.
    #[error("malformed payload marker: {0}")]
    MalformedMarker(&'static str),

    /// A `$sealed` marker names an algorithm this build does not implement.
    #[error("unsupported sealing algorithm {0:?}")]
    UnsupportedAlgorithm(String),

    /// AES-GCM refused to encrypt (only possible for absurdly long input).
    #[error("encryption failed")]
    Encrypt,

    /// The key store's backend failed (database error, ...).
    #[error("key store: {0}")]
    Store(Box<dyn std::error::Error + Send + Sync>),
}

impl CryptoError {
    /// A stable, machine-readable code for logs, metrics and API errors.
    pub fn code(&self) -> &'static str {
        match self {
            CryptoError::InvalidMasterKey(_) => "invalid_master_key",
            CryptoError::KeyFile { .. } => "master_key_file",
            CryptoError::KeyFileInsecure { .. } => "master_key_file_insecure",
            CryptoError::WrongMasterKey { .. } => "wrong_master_key",
            CryptoError::Unwrap { .. } => "key_unwrap_failed",
            CryptoError::Tampered { .. } => "sealed_content_tampered",
            CryptoError::MalformedMarker(_) => "malformed_marker",
            CryptoError::UnsupportedAlgorithm(_) => "unsupported_algorithm",
            CryptoError::Encrypt => "encryption_failed",
            CryptoError::Store(_) => "key_store",
        }
    }
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
impl From<sqlx::Error> for CryptoError {
    fn from(e: sqlx::Error) -> Self {
        CryptoError::Store(Box::new(e))
    }
}
