pub mod entry_point;
pub mod snapshot_entry;

pub use entry_point::{
    NonAppendableSegmentEntry, ReadSegmentEntry, SegmentEntry, StorageSegmentEntry,
};
pub use snapshot_entry::SnapshotEntry;
