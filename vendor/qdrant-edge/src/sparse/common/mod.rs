pub mod scores_memory_pool;
pub mod sparse_vector;
#[cfg(feature = "testing")]
pub mod sparse_vector_fixture;
pub mod types;
