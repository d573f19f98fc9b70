pub mod compressed_point_mappings;
pub mod external_to_internal;
pub mod internal_to_external;
pub mod versions_store;
