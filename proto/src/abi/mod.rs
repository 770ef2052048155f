//! The host ABI: what the driver and a rocenic device (model, RTL or board) agree on.
//!
//! - [`regs`]: the BAR0 register map (identification, capabilities, port address, the
//!   command mailbox, global counters, doorbells).
//! - [`cmd`]: the commands that create, modify, query and destroy PDs, CQs, MRs and QPs.
//! - [`wqe`], [`cqe`]: the 64-byte descriptors in host memory (send WQE, receive WQE, CQE).
//! - [`verbs`]: the enumerations users know from ibverbs (QP states, access flags, work
//!   request and completion opcodes, completion status), with ibverbs' numeric values.
//!
//! Every offset and layout is defined here once; `docs/abi.md` is the prose version.
//! All multi-byte fields in host memory and registers are little-endian.

pub mod cmd;
pub mod cqe;
pub mod regs;
pub mod verbs;
pub mod wqe;

/// Size of every descriptor: send WQE, receive WQE and CQE.
pub const DESC_SIZE: usize = 64;

pub(crate) fn get_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

pub(crate) fn get_u64(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

pub(crate) fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

pub(crate) fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}
