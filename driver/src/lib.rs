//! rocenic userspace driver: a verbs-like API over the rocenic host ABI and the backends
//! that connect it to a device. The `rocenic` command lives in its own crate
//! (`rocenic-cli`), so an application linking this library gets no CLI dependencies.
//!
//! - [`backend`]: the [`Backend`] trait (BAR0 access, DMA memory, time) and its
//!   implementations: `backend::vfio` (a board through VFIO, always built),
//!   `backend::model` (the behavioural model in a simulated world, cargo feature `model`)
//!   and `backend::rtl` (the Verilated RTL engine, cargo feature `rtl`).
//! - [`verbs`]: [`Context`] and the handles, work requests and completions, with
//!   rdma-core's names. Memory the application owns is registered in place with
//!   [`Context::reg_mr_owned`] (the `Vec<u8>` comes back from
//!   [`Context::dereg_mr_owned`] with what the device wrote; failures return it in a
//!   [`Rejected`]), and [`Context::wait_cq_for`] waits for completions for at most a
//!   wall-clock [`std::time::Duration`]. `examples/rc_owned.rs` is a server and a client
//!   doing WRITE, READ and SEND that way on two model NICs.
// `unsafe` (ioctls, mmap, MMIO, DMA memory) is allowed in one module only:
// `backend::vfio::sys`.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod backend;
mod error;
pub mod verbs;

pub use backend::{Backend, DmaRegion};
pub use error::{cmd_status_meaning, Error, PostError, Rejected, Result};
pub use verbs::{
    access, qp_attr, send_flags, AhAttr, AtomicWr, Buffer, Context, Counter, Cq, DeviceAttr, Mr,
    Mtu, OwnedMr, Pd, Qp, QpAttr, QpCap, QpInitAttr, QpState, RdmaWr, RecvWr, SendWr, Sge, Wc,
    WcOpcode, WcStatus, WrOpcode,
};
