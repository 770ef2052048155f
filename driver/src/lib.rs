//! rocenic userspace driver: a verbs-like API over the rocenic host ABI, the backends that
//! connect it to a device, and the logic of the `rocenic` command-line tool.
//!
//! - [`backend`]: the [`Backend`] trait (BAR0 access, DMA memory, time) and its
//!   implementations (`backend::model`: the behavioural model in a simulated world).
//! - [`verbs`]: [`Context`] and the handles, work requests and completions, with
//!   rdma-core's names.
//! - [`cli`]: the `rocenic demo` and `rocenic perf` commands, as a library so they can be
//!   tested.
// `unsafe` (ioctls, mmap, MMIO, DMA memory) is allowed in one module only:
// `backend::vfio::sys`.
#![deny(unsafe_code)]

pub mod backend;
pub mod cli;
mod error;
pub mod verbs;

pub use backend::{Backend, DmaRegion};
pub use error::{cmd_status_meaning, Error, PostError, Result};
pub use verbs::{
    access, qp_attr, send_flags, AhAttr, AtomicWr, Buffer, Context, Counter, Cq, DeviceAttr, Mr,
    Mtu, Pd, Qp, QpAttr, QpCap, QpInitAttr, QpState, RdmaWr, RecvWr, SendWr, Sge, Wc, WcOpcode,
    WcStatus, WrOpcode,
};
