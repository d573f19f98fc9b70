//! The memory read model: the current state of each memory, kept by the
//! retriever's projection and used for listing and for hydrating search
//! hits. It is a cache of the log: every row can be rebuilt by replay, and
//! an erasure deletes the subject's rows.
//!
//! Key decision: the subject's data is stored sealed (`sealed.rs`). What
//! came from the subject's conversation or a client's choice (content,
//! tags, session) is one blob sealed under the subject's data key, and tags
//! are filtered through keyed tokens; ids, kinds, states, numbers and times
//! stay in clear for the queries. So destroying the key erases the rows'
//! content at once, also the bytes a DELETE leaves behind on disk (dead
//! tuples on PostgreSQL, WAL, backups); deleting the rows is tidying up.
//! A row whose blob opens as erased is never served. The adapters take the
//! process's one `SubjectCipher`, whose key cache keeps a page of rows to
//! one key lookup.
//!
//! Only readable content is written: a memory whose content reads as erased
//! is deleted, never written, so a late event cannot bring an erased
//! subject's row back.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use mnemo_crypto::CryptoError;
use mnemo_domain::{Memory, MemoryId, MemoryKind, MemoryState, SubjectId, TenantId};

#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod sealed;
#[cfg(feature = "sqlite")]
pub mod sqlite;

#[derive(Debug, Clone, Default)]
pub struct MemoryFilter {
    pub kinds: Vec<MemoryKind>,
    /// Every tag listed must be on the memory.
    pub tags: Vec<String>,
    /// Empty means every state but `deleted`.
    pub states: Vec<MemoryState>,
    /// Keyset cursor: memories older than this id (ids are time-ordered).
    pub before: Option<MemoryId>,
    pub limit: u32,
}

/// Which of a tenant's subjects [`MemoryReadModel::list_subjects`] returns.
/// Subject ids are pseudonymous names the client chose for streams, kept in
/// clear in the read model (as in the log) so they can be listed; nothing
/// of the subject's content is read.
#[derive(Debug, Clone, Default)]
pub struct SubjectFilter {
    /// Only subject ids starting with this (compared as bytes, no pattern).
    pub prefix: Option<String>,
    /// Only this subject (a subject-bound caller's own).
    pub only: Option<SubjectId>,
    /// Keyset cursor: subjects after this id, in byte order.
    pub after: Option<SubjectId>,
    pub limit: u32,
}

/// A subject of the tenant and its memories, counted by state.
#[derive(Debug, Clone, PartialEq)]
pub struct SubjectSummary {
    pub subject: SubjectId,
    /// Memories per state, only the states it has, in [`MemoryState::ALL`]
    /// order.
    pub states: Vec<(MemoryState, u64)>,
    /// When one of its memories last changed (its latest `updated_at`).
    pub last_activity: Option<DateTime<Utc>>,
}

/// Rows of (subject, state, count, latest update) in subject order, grouped
/// into summaries. Shared by both adapters, whose queries return that shape.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
fn summarise(
    rows: Vec<(String, String, i64, Option<DateTime<Utc>>)>,
) -> Result<Vec<SubjectSummary>, ReadModelError> {
    let mut summaries: Vec<SubjectSummary> = Vec::new();
    for (subject, state, count, last) in rows {
        let subject =
            SubjectId::parse(subject).map_err(|_| ReadModelError::Corrupt("subject_id".into()))?;
        let state =
            MemoryState::parse(&state).ok_or_else(|| ReadModelError::Corrupt("state".into()))?;
        if summaries.last().map(|s| &s.subject) != Some(&subject) {
            summaries.push(SubjectSummary {
                subject,
                states: Vec::new(),
                last_activity: None,
            });
        }
        let summary = summaries.last_mut().expect("pushed above");
        summary.states.push((state, count.max(0) as u64));
        summary.last_activity = summary.last_activity.max(last);
    }
    for summary in &mut summaries {
        summary
            .states
            .sort_by_key(|(state, _)| MemoryState::ALL.iter().position(|s| s == state));
    }
    Ok(summaries)
}

#[derive(Debug, thiserror::Error)]
pub enum ReadModelError {
    #[error("memory content is erased: it cannot be projected")]
    ErasedContent,
    /// The subject's key is no longer the one a memory was read under: the
    /// subject was erased since, and the memory must not be written.
    #[error("the subject was erased since the memory was read: it cannot be projected")]
    SubjectErased,
    #[error("read model row is corrupt: {0}")]
    Corrupt(String),
    /// Sealing or opening a row's subject fields failed for another reason
    /// than the key store being unreachable (that is `Backend`): a wrong
    /// master key, a ciphertext that fails authentication.
    #[error("read model content could not be sealed or opened: {0}")]
    Crypto(#[source] CryptoError),
    #[error("read model backend failed: {0}")]
    Backend(String),
}

impl From<CryptoError> for ReadModelError {
    fn from(error: CryptoError) -> Self {
        match error {
            CryptoError::Store(_) => ReadModelError::Backend(error.to_string()),
            other => ReadModelError::Crypto(other),
        }
    }
}

impl ReadModelError {
    /// A stable name for logs, metrics and whatever error body a caller
    /// builds: unlike the message, it never changes with the backend's
    /// wording, so dashboards and clients can match on it.
    pub fn code(&self) -> &'static str {
        match self {
            ReadModelError::ErasedContent => "read_model_erased_content",
            ReadModelError::SubjectErased => "read_model_subject_erased",
            ReadModelError::Corrupt(_) => "read_model_corrupt",
            ReadModelError::Crypto(_) => "read_model_crypto",
            ReadModelError::Backend(_) => "read_model_unavailable",
        }
    }
}

#[async_trait]
pub trait MemoryReadModel: Send + Sync + 'static {
    /// Writes the memory's state when it is newer than what is stored,
    /// sealed under its subject's live key (created on first use).
    async fn upsert(&self, tenant: &TenantId, memory: &Memory) -> Result<(), ReadModelError>;
    /// [`MemoryReadModel::upsert`] of several memories in one transaction:
    /// a projection's run of rows becomes visible together, for one write.
    ///
    /// Each memory comes with the generation of its subject's key that its
    /// content was read under, and is sealed under that key only: when the
    /// subject was erased since (the key destroyed, perhaps a next one
    /// made), nothing is written and the call fails with
    /// [`ReadModelError::SubjectErased`]. Sealing under whatever key is live
    /// would create the next key and write the erased content readable.
    async fn upsert_many(
        &self,
        tenant: &TenantId,
        memories: &[(Memory, u32)],
    ) -> Result<(), ReadModelError>;
    async fn remove(&self, tenant: &TenantId, id: &MemoryId) -> Result<(), ReadModelError>;
    async fn get(&self, tenant: &TenantId, id: &MemoryId)
        -> Result<Option<Memory>, ReadModelError>;
    /// The tenant's memories with these ids, in one round trip where the
    /// backend allows (a search hydrates 40 or more hits at once).
    ///
    /// The result follows the order of `ids`. An id with no row for this
    /// tenant (never projected, erased, or another tenant's) is skipped, so
    /// the result may be shorter than `ids`. An id given twice is returned
    /// once, at its first position. No ids: an empty result, and the
    /// database is not asked.
    async fn get_many(
        &self,
        tenant: &TenantId,
        ids: &[MemoryId],
    ) -> Result<Vec<Memory>, ReadModelError>;
    /// A page of a subject's memories, newest first.
    async fn list(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
        filter: &MemoryFilter,
    ) -> Result<Vec<Memory>, ReadModelError>;
    /// Every (tenant, subject) with memories, in order, after a cursor. System
    /// use only: the forgetter's pass over all tenants.
    async fn subjects(
        &self,
        after: Option<(TenantId, SubjectId)>,
        limit: u32,
    ) -> Result<Vec<(TenantId, SubjectId)>, ReadModelError>;
    /// A page of the tenant's subjects that have memories, by subject id,
    /// each with its memories counted by state (deleted ones included).
    async fn list_subjects(
        &self,
        tenant: &TenantId,
        filter: &SubjectFilter,
    ) -> Result<Vec<SubjectSummary>, ReadModelError>;
    /// Deletes every row of the subject; returns how many memories went.
    async fn delete_subject(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<u64, ReadModelError>;
}

/// `ids` without repeats, first occurrences in order: what
/// [`MemoryReadModel::get_many`] promises to return, before the rows that
/// are missing are left out.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
fn unique_in_order(ids: &[MemoryId]) -> Vec<MemoryId> {
    let mut seen = std::collections::HashSet::with_capacity(ids.len());
    ids.iter().copied().filter(|id| seen.insert(*id)).collect()
}

/// Puts the rows of a `get_many` query (in whatever order the database
/// gave them) in the order of `wanted`, skipping ids that found no row.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
fn in_order_of(wanted: &[MemoryId], rows: Vec<Memory>) -> Vec<Memory> {
    let mut by_id: std::collections::HashMap<MemoryId, Memory> =
        rows.into_iter().map(|m| (m.id, m)).collect();
    wanted.iter().filter_map(|id| by_id.remove(id)).collect()
}

#[cfg(test)]
mod tests {
    use super::ReadModelError;

    #[test]
    fn error_codes_are_stable_and_distinct() {
        let errors = [
            ReadModelError::ErasedContent,
            ReadModelError::SubjectErased,
            ReadModelError::Corrupt("kind".into()),
            ReadModelError::Crypto(mnemo_crypto::CryptoError::Encrypt),
            ReadModelError::Backend("connection reset".into()),
        ];
        let codes: Vec<&str> = errors.iter().map(ReadModelError::code).collect();
        assert_eq!(
            codes,
            [
                "read_model_erased_content",
                "read_model_subject_erased",
                "read_model_corrupt",
                "read_model_crypto",
                "read_model_unavailable"
            ]
        );
        // The detail is for the message, never the code.
        assert_eq!(ReadModelError::Backend("other".into()).code(), codes[4]);
    }
}
