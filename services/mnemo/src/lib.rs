//! The embedded mode: all four services in one process over one SQLite
//! database, the in-process bus and (next) the qdrant-edge engine. The
//! binary's `main` only parses the command line; everything it runs lives
//! here so the API tests can start the same application on a random port.

pub mod bench;
pub mod bench_search;
pub mod collections;
pub mod dev_kafka;
pub mod dev_llm;
pub mod eval;
pub mod eval_consolidation;
pub mod forget;
pub mod reindex;
pub mod secrets;
pub mod service;
pub mod startup;

pub use startup::{Application, Roles};
