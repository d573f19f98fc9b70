pub mod appendable_mmap_multi_dense_vector_storage;
pub mod read_only;
pub mod volatile_multi_dense_vector_storage;
