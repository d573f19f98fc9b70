//! The mnemo domain: validated ids, the memory model, the versioned event
//! catalogue and the policy numbers of the design notes. This crate does no
//! I/O and knows no framework; every other crate speaks in its types.
//!
//! Key decision: subject content is typed ([`SubjectText`]) so the crypto
//! layer can find and seal it anywhere in an event payload without a
//! per-event list of fields that could drift.

pub mod consolidation;
pub mod dates;
pub mod error;
pub mod events;
pub mod forgetting;
pub mod ids;
pub mod memory;
pub mod sealed;
pub mod signals;
pub mod text;

pub use error::{Classified, ErrorClass};
pub use events::{DomainEvent, EventMetadata, EventType, NewEvent, RecordedEvent};
pub use ids::{AgentId, ErasureId, EventId, IdError, MemoryId, SessionId, SubjectId, TenantId};
pub use memory::{
    importance_for, Memory, MemoryKind, MemoryRelation, MemoryState, Producer, Provenance,
};
pub use text::SubjectText;
