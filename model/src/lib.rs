//! The behavioural rocenic NIC: the golden reference for the host ABI and the wire.
//!
//! [`Nic`] implements [`rocenic_proto::device::Device`]: a host drives it through BAR0
//! (the command mailbox, doorbells, counters) and descriptor rings in host memory reached
//! by DMA through an IOMMU; it sends and receives RoCE v2 frames on one Ethernet port.
//! It is deterministic and advanced by a clock tick, so it can run in lockstep with the
//! RTL. Timing is modelled coarsely (a 64-byte-per-cycle port on each side, DMA latency as
//! reported by the DMA port); behaviour — frames, completions, memory — is exact.
//!
//! Modules, one concern each: `config` (build-time sizes), `tables` (PD, MR, CQ tables
//! and the protection check), `cmd` (the command mailbox), `qp` (QP context and state
//! machine), `requester` (SQ processing, segmentation, ACK/NAK/timeout handling and
//! go-back-N), `responder` (request execution, ACK/NAK generation, replay cache),
//! `packet` (the one place that builds and parses frames), `nic` (BAR0 and the tick).

mod cmd;
pub mod config;
mod counters;
mod nic;
mod packet;
mod qp;
mod requester;
mod responder;
mod tables;

pub use config::NicConfig;
pub use nic::Nic;
/// The 64-byte bus's framing rule, for the figures `rocenic perf` reports.
pub use nic::{beats, BEAT};
/// Frame building and the requester's segmentation rule, for the RTL's benches.
pub use packet::{build as build_frame, Addr, Hdr};
/// The requester's decision on a response, for the RTL's `ReqRxCheck` bench.
pub use qp::OpKind;
pub use requester::{
    on_response, AckTimer, Cursor, Deliver, OpFail, OpSummary, ReqDecision, ReqState, RespFields,
};
pub use requester::{packets, request_packet, RequestPacket};
/// The responder's READ response and atomic rules, for the RTL's `ReadResp` and
/// `AtomicUnit` benches.
pub use responder::{
    atomic_result, read_response_packets, ReadRespPacket, NO_CREDIT, REPLAY_DEPTH,
};
/// The responder's per-packet decision, for the RTL's `RespCheck` and `Responder` benches.
pub use responder::{classify, Decision, Dup, Exec, ExecKind, Progress, ReqFields, RespCtx};
/// The MR table and its protection rule, for the RTL's benches to hold their blocks to.
pub use tables::{Mr, ProtError, Tables};
