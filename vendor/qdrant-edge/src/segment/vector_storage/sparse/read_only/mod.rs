pub mod sparse_vector_storage;
