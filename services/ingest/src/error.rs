//! What the write use cases refuse, each with a stable code and a class;
//! the HTTP layer alone turns classes into statuses.

use mnemo_auth::AuthError;
use mnemo_domain::{Classified, ErrorClass, IdError};
use mnemo_event_store::sealed::LogError;
use mnemo_event_store::EventStoreError;

use crate::input::{MAX_TAGS, MAX_TAG_CHARS};
use crate::write::{MAX_MESSAGE_ID_CHARS, MAX_SOURCES};

/// A field of a write that breaks a rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    #[error("{field} must not be empty")]
    Empty { field: &'static str },
    #[error("{field} is longer than {max} characters")]
    TooLong { field: &'static str, max: usize },
    #[error("{field} must be between 0 and 1")]
    OutOfRange { field: &'static str },
    #[error("at most {} tags", MAX_TAGS)]
    TooManyTags,
    #[error("tags are 1 to {} letters, digits, spaces or - _ . :", MAX_TAG_CHARS)]
    InvalidTag,
    #[error("a tag looks like personal data; put it in the content instead")]
    TagContainsPii,
}

impl Classified for InputError {
    fn class(&self) -> ErrorClass {
        ErrorClass::Invalid
    }

    fn code(&self) -> &'static str {
        match self {
            InputError::Empty { .. } => "invalid_content",
            InputError::TooLong { .. } => "content_too_long",
            InputError::OutOfRange { .. } => "out_of_range",
            InputError::TooManyTags => "too_many_tags",
            InputError::InvalidTag => "invalid_tag",
            InputError::TagContainsPii => "tag_contains_pii",
        }
    }
}

/// Why a message batch, a memory write, a consolidation or an erasure
/// request was refused.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error(transparent)]
    Input(#[from] InputError),
    #[error(transparent)]
    Id(#[from] IdError),
    #[error(transparent)]
    Auth(#[from] AuthError),
    #[error(transparent)]
    Log(#[from] LogError),
    /// One message of a batch is bad; the message says which.
    #[error("messages[{index}]: {source}")]
    InMessage {
        index: usize,
        source: Box<WriteError>,
    },
    #[error("send at least one message")]
    EmptyBatch,
    #[error("at most {max} messages per request")]
    BatchTooLarge { max: usize },
    #[error("id must be 1 to {} printable characters", MAX_MESSAGE_ID_CHARS)]
    InvalidMessageId,
    #[error("the same id appears twice in this batch")]
    DuplicateMessageId,
    #[error("at most {} sources", MAX_SOURCES)]
    TooManySources,
    #[error("a source is not a message id posted for this subject")]
    UnknownSource,
    #[error("give at least one of content, kind, tags, confidence, importance")]
    NothingToChange,
    #[error("no such memory")]
    MemoryNotFound,
    #[error("a deleted memory cannot be corrected")]
    MemoryDeleted,
    /// The memory (or the messages a request names) belongs to a subject
    /// that was erased: gone for good, so nothing is appended.
    #[error("the subject of this memory was erased")]
    MemoryErased,
    #[error("the subject was erased; its earlier messages are gone")]
    SubjectErased,
    #[error("the memory is at version {actual}; fetch it and retry")]
    VersionConflict { actual: u64 },
}

impl From<EventStoreError> for WriteError {
    fn from(error: EventStoreError) -> Self {
        WriteError::Log(error.into())
    }
}

impl Classified for WriteError {
    fn class(&self) -> ErrorClass {
        match self {
            WriteError::Input(e) => e.class(),
            WriteError::Id(e) => e.class(),
            WriteError::Auth(e) => e.class(),
            WriteError::Log(e) => e.class(),
            WriteError::InMessage { source, .. } => source.class(),
            WriteError::EmptyBatch
            | WriteError::BatchTooLarge { .. }
            | WriteError::InvalidMessageId
            | WriteError::DuplicateMessageId
            | WriteError::TooManySources
            | WriteError::UnknownSource
            | WriteError::NothingToChange => ErrorClass::Invalid,
            WriteError::MemoryNotFound => ErrorClass::NotFound,
            WriteError::MemoryDeleted | WriteError::VersionConflict { .. } => ErrorClass::Conflict,
            WriteError::MemoryErased | WriteError::SubjectErased => ErrorClass::Gone,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            WriteError::Input(e) => e.code(),
            WriteError::Id(e) => e.code(),
            WriteError::Auth(e) => Classified::code(e),
            WriteError::Log(e) => e.code(),
            WriteError::InMessage { source, .. } => source.code(),
            WriteError::EmptyBatch => "empty_batch",
            WriteError::BatchTooLarge { .. } => "batch_too_large",
            WriteError::InvalidMessageId => "invalid_message_id",
            WriteError::DuplicateMessageId => "duplicate_message_id",
            WriteError::TooManySources => "too_many_sources",
            WriteError::UnknownSource => "unknown_source",
            WriteError::NothingToChange => "nothing_to_change",
            WriteError::MemoryNotFound => "memory_not_found",
            WriteError::MemoryDeleted => "memory_deleted",
            WriteError::MemoryErased | WriteError::SubjectErased => "subject_erased",
            WriteError::VersionConflict { .. } => "version_conflict",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_message_keeps_its_code_and_says_where() {
        let error = WriteError::InMessage {
            index: 2,
            source: Box::new(InputError::Empty { field: "content" }.into()),
        };
        assert_eq!(error.class(), ErrorClass::Invalid);
        assert_eq!(error.code(), "invalid_content");
        assert_eq!(error.to_string(), "messages[2]: content must not be empty");

        let id = WriteError::InMessage {
            index: 0,
            source: Box::new(mnemo_domain::SessionId::parse("a b").unwrap_err().into()),
        };
        assert_eq!(
            (id.class(), id.code()),
            (ErrorClass::Malformed, "invalid_id")
        );
    }

    #[test]
    fn codes_and_classes() {
        let table = [
            (WriteError::EmptyBatch, ErrorClass::Invalid, "empty_batch"),
            (
                WriteError::BatchTooLarge { max: 3 },
                ErrorClass::Invalid,
                "batch_too_large",
            ),
            (
                WriteError::UnknownSource,
                ErrorClass::Invalid,
                "unknown_source",
            ),
            (
                WriteError::MemoryNotFound,
                ErrorClass::NotFound,
                "memory_not_found",
            ),
            (
                WriteError::MemoryDeleted,
                ErrorClass::Conflict,
                "memory_deleted",
            ),
            (
                WriteError::VersionConflict { actual: 4 },
                ErrorClass::Conflict,
                "version_conflict",
            ),
            (WriteError::MemoryErased, ErrorClass::Gone, "subject_erased"),
            (
                WriteError::SubjectErased,
                ErrorClass::Gone,
                "subject_erased",
            ),
            (
                AuthError::SubjectForbidden.into(),
                ErrorClass::Forbidden,
                "subject_forbidden",
            ),
        ];
        for (error, class, code) in table {
            assert_eq!(error.class(), class, "{error}");
            assert_eq!(error.code(), code, "{error}");
        }
    }
}
