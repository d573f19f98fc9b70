mod buffered_update;
mod read_only;
mod stored_struct;
mod typed;
mod wrapped_pipeline;

pub use buffered_update::SliceBufferedUpdateWrapper;
pub use read_only::ReadOnly;
pub use stored_struct::StoredStruct;
pub use typed::TypedStorage;
use wrapped_pipeline::{BorrowedWrappedReadPipeline, OwnedWrappedReadPipeline};
