//! What the read use cases refuse, each with a stable code and a class;
//! the HTTP layer alone turns classes into statuses.

use mnemo_auth::AuthError;
use mnemo_domain::{Classified, ErrorClass, IdError};
use mnemo_embed::EmbedError;
use mnemo_event_store::sealed::LogError;
use mnemo_event_store::EventStoreError;
use mnemo_read_model::ReadModelError;
use mnemo_vector_index::VectorIndexError;

/// Why a read (a memory, a list, an export, the audit log, a receipt, the
/// review queue, a profile, a report) was refused.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error(transparent)]
    Id(#[from] IdError),
    #[error(transparent)]
    Auth(#[from] AuthError),
    #[error(transparent)]
    Log(#[from] LogError),
    #[error("the read model failed: {0}")]
    ReadModel(#[from] ReadModelError),
    #[error("no such memory")]
    MemoryNotFound,
    /// The memory existed and its subject was erased on request.
    #[error("the subject of this memory was erased")]
    SubjectErased,
    #[error("no such erasure")]
    ErasureNotFound,
    #[error("the subject has no profile")]
    ProfileNotFound,
    #[error("limit must be between 1 and {max}")]
    InvalidLimit { max: u32 },
    #[error("days must be between 1 and {max}")]
    InvalidDays { max: u32 },
    #[error("unknown kind {0}")]
    InvalidKind(String),
    #[error("unknown state {0}")]
    InvalidState(String),
    #[error("unknown event type {0}")]
    InvalidType(String),
    #[error("from is after to")]
    InvalidRange,
    #[error("cursor is not one we gave")]
    InvalidCursor,
    /// An instant that is not RFC 3339. Names the parameter.
    #[error("`{parameter}` must be an RFC 3339 time, like 2026-01-31T12:00:00Z")]
    InvalidTime { parameter: &'static str },
    #[error("`{parameter}` is required")]
    MissingParameter { parameter: &'static str },
    /// A free-text query parameter over its documented maximum. Names the
    /// parameter, never echoes the value.
    #[error("`{parameter}` must be at most {max} characters")]
    ParameterTooLong { parameter: &'static str, max: usize },
}

impl From<EventStoreError> for ReadError {
    fn from(error: EventStoreError) -> Self {
        ReadError::Log(error.into())
    }
}

impl Classified for ReadError {
    fn class(&self) -> ErrorClass {
        match self {
            ReadError::Id(e) => e.class(),
            ReadError::Auth(e) => e.class(),
            ReadError::Log(e) => e.class(),
            ReadError::ReadModel(_) => ErrorClass::Unavailable,
            ReadError::MemoryNotFound | ReadError::ErasureNotFound | ReadError::ProfileNotFound => {
                ErrorClass::NotFound
            }
            ReadError::SubjectErased => ErrorClass::Gone,
            ReadError::InvalidLimit { .. }
            | ReadError::InvalidDays { .. }
            | ReadError::InvalidKind(_)
            | ReadError::InvalidState(_)
            | ReadError::InvalidType(_)
            | ReadError::InvalidRange
            | ReadError::InvalidCursor
            | ReadError::InvalidTime { .. }
            | ReadError::MissingParameter { .. }
            | ReadError::ParameterTooLong { .. } => ErrorClass::Malformed,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            ReadError::Id(e) => e.code(),
            ReadError::Auth(e) => Classified::code(e),
            ReadError::Log(e) => e.code(),
            ReadError::ReadModel(_) => "unavailable",
            ReadError::MemoryNotFound => "memory_not_found",
            ReadError::SubjectErased => "subject_erased",
            ReadError::ErasureNotFound => "erasure_not_found",
            ReadError::ProfileNotFound => "profile_not_found",
            ReadError::InvalidLimit { .. } => "invalid_limit",
            ReadError::InvalidDays { .. } => "invalid_days",
            ReadError::InvalidKind(_) => "invalid_kind",
            ReadError::InvalidState(_) => "invalid_state",
            ReadError::InvalidType(_) => "invalid_type",
            ReadError::InvalidRange => "invalid_range",
            ReadError::InvalidCursor => "invalid_cursor",
            // `as_of` has its own code: the one a console meets most.
            ReadError::InvalidTime { parameter: "as_of" } => "invalid_as_of",
            ReadError::InvalidTime { .. } => "invalid_time",
            ReadError::MissingParameter { .. } => "missing_parameter",
            ReadError::ParameterTooLong { .. } => "parameter_too_long",
        }
    }
}

/// Why a search or a context request was refused.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("query must be 1 to {max} characters")]
    InvalidQuery { max: usize },
    #[error("k must be between 1 and {max}")]
    InvalidK { max: usize },
    #[error("expand_depth must be between 0 and {max}")]
    InvalidExpandDepth { max: u8 },
    #[error("window must be between 0 and {max}")]
    InvalidWindow { max: u8 },
    #[error("include must name at least one of memories, episodes")]
    EmptyInclude,
    #[error("{field} must be between 0 and 1")]
    OutOfRange { field: &'static str },
    #[error("from is after to")]
    InvalidRange,
    /// A free-text search filter over its maximum; names the filter.
    #[error("`{field}` must be at most {max} characters")]
    FilterTooLong { field: &'static str, max: usize },
    #[error("`filters.tags` holds at most {max} tags")]
    TooManyTags { max: usize },
    #[error("last_n must be between 1 and 50")]
    InvalidLastN,
    #[error("token_budget must be between 16 and 32000")]
    InvalidTokenBudget,
    #[error("send at least one user or assistant message with content")]
    NoQuery,
    #[error("the query could not be embedded: {0}")]
    Embed(#[source] EmbedError),
    #[error("the embedder returned no query vector")]
    NoQueryVector,
    #[error("the vector index failed: {0}")]
    Index(#[source] VectorIndexError),
    #[error("the read model failed: {0}")]
    ReadModel(#[source] ReadModelError),
}

impl Classified for SearchError {
    fn class(&self) -> ErrorClass {
        match self {
            SearchError::Read(e) => e.class(),
            SearchError::InvalidQuery { .. }
            | SearchError::InvalidK { .. }
            | SearchError::InvalidExpandDepth { .. }
            | SearchError::InvalidWindow { .. }
            | SearchError::EmptyInclude
            | SearchError::OutOfRange { .. }
            | SearchError::InvalidRange
            | SearchError::FilterTooLong { .. }
            | SearchError::TooManyTags { .. }
            | SearchError::InvalidLastN
            | SearchError::InvalidTokenBudget
            | SearchError::NoQuery => ErrorClass::Invalid,
            SearchError::Embed(_) | SearchError::Index(_) | SearchError::ReadModel(_) => {
                ErrorClass::Unavailable
            }
            SearchError::NoQueryVector => ErrorClass::Internal,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            SearchError::Read(e) => e.code(),
            SearchError::InvalidQuery { .. } => "invalid_query",
            SearchError::InvalidK { .. } => "invalid_k",
            SearchError::InvalidExpandDepth { .. } => "invalid_expand_depth",
            SearchError::InvalidWindow { .. } => "invalid_window",
            SearchError::EmptyInclude => "invalid_include",
            SearchError::OutOfRange { .. } => "out_of_range",
            SearchError::InvalidRange => "invalid_range",
            SearchError::FilterTooLong { .. } => "filter_too_long",
            SearchError::TooManyTags { .. } => "too_many_tags",
            SearchError::InvalidLastN => "invalid_last_n",
            SearchError::InvalidTokenBudget => "invalid_token_budget",
            SearchError::NoQuery => "no_query",
            SearchError::Embed(_) | SearchError::Index(_) | SearchError::ReadModel(_) => {
                "unavailable"
            }
            SearchError::NoQueryVector => "internal_error",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_code_can_have_two_classes() {
        // `invalid_range` is a bad query parameter of the audit log (400) but
        // a rule of search filters (422), as the API has always answered.
        assert_eq!(ReadError::InvalidRange.class(), ErrorClass::Malformed);
        assert_eq!(SearchError::InvalidRange.class(), ErrorClass::Invalid);
        assert_eq!(
            ReadError::InvalidRange.code(),
            SearchError::InvalidRange.code()
        );
    }

    #[test]
    fn an_erased_memory_is_gone() {
        assert_eq!(ReadError::SubjectErased.class(), ErrorClass::Gone);
        assert_eq!(ReadError::SubjectErased.code(), "subject_erased");
    }

    #[test]
    fn read_errors_inside_a_search_keep_their_class() {
        let error = SearchError::from(ReadError::ProfileNotFound);
        assert_eq!(error.class(), ErrorClass::NotFound);
        assert_eq!(error.code(), "profile_not_found");
        let forbidden = SearchError::from(ReadError::from(AuthError::SubjectForbidden));
        assert_eq!(forbidden.class(), ErrorClass::Forbidden);
        assert_eq!(forbidden.code(), "subject_forbidden");
    }
}
