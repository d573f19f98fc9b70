mod point;
mod vector;

pub use point::*;
pub use vector::*;
