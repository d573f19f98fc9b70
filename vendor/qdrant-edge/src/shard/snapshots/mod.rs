pub mod snapshot_data;
pub mod snapshot_manifest;
pub mod snapshot_utils;
