//! Where subject data keys live. One live key per (tenant, subject); erasure
//! deletes it, which is what makes the subject's sealed content unreadable,
//! and leaves a tombstone (key id and generation, no key material) so the
//! subject's next key knows its generation.

use std::sync::Arc;

use mnemo_domain::{SubjectId, TenantId};

use crate::{CryptoError, DataKey, KeyRef};

mod memory;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "sqlite")]
mod sqlite;

pub use memory::MemorySubjectKeyStore;
#[cfg(feature = "postgres")]
pub use postgres::PostgresSubjectKeyStore;
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteSubjectKeyStore;

#[async_trait::async_trait]
pub trait SubjectKeyStore: Send + Sync {
    /// The subject's live key, created (and persisted, wrapped) on first use.
    /// Concurrent callers for the same subject get the same key. A new key's
    /// generation is one more than the highest the subject had destroyed
    /// (1 when none was).
    async fn get_or_create(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<KeyRef, CryptoError>;

    /// A key by id, `None` when it was destroyed (or never existed for this
    /// tenant/subject: a key id of another subject is not found, so a
    /// ciphertext cannot be opened under a borrowed key).
    async fn get(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
        key_id: &str,
    ) -> Result<Option<Arc<DataKey>>, CryptoError>;

    /// Destroys every key of the subject, leaving a tombstone of each (its
    /// id and generation). Returns how many were destroyed. After this,
    /// `get()` returns `None` for them and `get_or_create` makes a new key
    /// with a new id and the next generation.
    async fn destroy(&self, tenant: &TenantId, subject: &SubjectId) -> Result<u32, CryptoError>;

    /// The generation of the subject's live key, without creating one:
    /// `None` when it has none (it never had one, or it was erased and
    /// nothing was sealed for it since).
    async fn live_generation(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<Option<u32>, CryptoError>;
}
