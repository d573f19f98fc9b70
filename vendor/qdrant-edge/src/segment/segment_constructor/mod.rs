mod batched_reader;
pub mod segment_builder;
mod segment_constructor_base;
#[cfg(any(test, feature = "testing"))]
pub mod simple_segment_constructor;

pub use segment_constructor_base::*;
