pub mod common;
pub mod count;
pub mod facet;
pub mod files;
pub mod locked_segment;
pub mod operation_rate_cost;
pub mod operations;
pub mod optimize;
pub mod optimizers;
pub mod payload_index_schema;
pub mod proxy_segment;
pub mod query;
pub mod retrieve;
pub mod scroll;
pub mod search;
pub mod search_result_aggregator;
pub mod segment_holder;
pub mod snapshots;
pub mod tracker;
pub mod update;
pub mod wal;

#[cfg(feature = "testing")]
pub mod fixtures;

pub type PeerId = u64;
