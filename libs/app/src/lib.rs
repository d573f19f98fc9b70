//! The composition of mnemo: settings → stores → roles → [`Application`].
//!
//! Everything that turns a [`mnemo_config::Settings`] into running parts
//! lives here and nowhere else: which adapter backs each port (SQLite or
//! PostgreSQL, the in-process bus or Kafka, qdrant-edge or a Qdrant
//! server), which parts a process builds for its [`Roles`] (ingest alone
//! loads no embedder and opens no vector collection), and the product's
//! commands that work on a data dir beside or instead of a server
//! (`forget`, `reindex`, `verify_erasure`). The `mnemo` CLI and the four
//! service binaries depend on this crate, not on each other; evaluation and
//! benchmark tools live in `tools/lab`, which no service binary links.

pub mod allocator;
pub mod application;
mod backlog;
pub mod compact;
pub mod forget;
pub mod reindex;
pub mod roles;
pub mod runtime;
pub mod secrets;
pub mod service;
pub mod stores;
pub mod vectors;
pub mod verifier;
pub mod verify_erasure;

pub use application::{Application, SERVE_LOCK_FILE};
pub use roles::Roles;

pub use allocator::Allocator;

mod data_dir_lock;
