#![allow(unexpected_cfgs)]
#![allow(dead_code, unused_imports)]
// #![warn(unnameable_types)] // TODO: re-enable when cleaning up the API
pub use edge::*;
mod bm25;
mod common;
mod edge;
mod gridstore;
mod posting_list;
mod quantization;
mod segment;
mod shard;
mod sparse;
mod wal;
