pub mod appendable_dense_vector_storage;
pub mod dense_vector_storage;
pub mod empty_dense_vector_storage;
pub mod immutable_dense_vectors;
pub mod read_only;
pub mod volatile_dense_vector_storage;
