//! The TX back end: the arbiter and the frame builder with its leaves.

pub mod hdr_build;
pub mod tx_arbiter;
pub mod tx_leaves;
pub mod tx_path;
