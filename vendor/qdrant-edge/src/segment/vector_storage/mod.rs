mod chunked_vectors;
pub mod common;
pub mod dense;
mod memory_reporter;
pub mod multi_dense;
mod prefill_deleted;
pub mod quantized;
pub mod query;
pub mod query_scorer;
pub mod raw_scorer;
#[allow(dead_code)]
pub mod read_only;
pub mod sparse;
mod vector_storage_base;
pub mod volatile_chunked_vectors;

#[cfg(test)]
mod tests;

pub use raw_scorer::*;
pub use vector_storage_base::*;
