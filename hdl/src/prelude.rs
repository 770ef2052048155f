//! The RustHDL names the blocks use (what `rust_hdl::prelude` re-exports from the core and
//! widget crates).

pub use rust_hdl_core::prelude::*;
pub use rust_hdl_widgets::prelude::*;
