//! rocenic RTL: the RoCE v2 engine written in RustHDL, and the tools that turn it into
//! Verilog and check it.
//!
//! # Conventions (every block follows them)
//!
//! - **One block per file**, each with its own test bench in that file: RustHDL simulation
//!   (see [`bench`](mod@bench)) sweeping idle and backpressure patterns, checked against the software
//!   reference in `rocenic_proto`. Every block that can be a top also passes the quality
//!   gates in `tests/` (Verilator lint, yosys checks and synthesis; see [`gates`]).
//! - **Ports**: `clock`, `reset` (synchronous, active high), then `s_<bus>_*` for buses into
//!   the block and `m_<bus>_*` for buses out of it. Status and errors come out on named pins
//!   beside the data (`m_icrc_ok`, `m_icrc_len_err`), never as magic data values.
//! - **Handshake** (AXI-Stream style): a transfer happens in a cycle where `valid && ready`
//!   at the rising edge; `valid` never waits for `ready`, and once raised, `valid` and the
//!   data hold until the transfer.
//! - **Frame streams**: 512-bit beats (64 bytes) with `tdata`, `tkeep` (64 bits, one per byte
//!   lane, contiguous from lane 0), `tlast`, `tvalid`, `tready`. Byte 0 of the frame is in
//!   `tdata[7:0]` (lane 0), byte 1 in `tdata[15:8]`, as in verilog-ethernet and Corundum.
//!   Frames start at the destination MAC address and carry no FCS (the MAC strips/adds it).
//!   Multi-byte values taken from a beat are therefore little-endian in lane order and
//!   must be byte-swapped where the wire is big-endian.
//! - **Registers**: `DFF` widgets set up with `dff_setup!` (each holds its value unless
//!   assigned), all next-state logic in the block's one `#[hdl_gen] fn update`, reset
//!   applied last in `update` so it wins.
//! - **Widths**: derived from parameters in constructors, which assert that parameters fit
//!   (bad combinations refuse to elaborate, with a message). Constants used in logic are
//!   `Constant<Bits<W>>` fields of the exact width (RustHDL writes bare literals as 32- or
//!   64-bit numbers, which Verilator `-Wall` flags). Never widen with `bit_cast` (it writes
//!   a width-mismatched mask); narrow with `get_bits`, and keep every bit of a local signal
//!   used so the lint sees no unused bits.
//! - **Temporaries** are `Signal<Local, _>` fields (`let` is not allowed in `#[hdl_gen]`),
//!   each assigned on every path before use. Never read a local after writing it in order
//!   to accumulate (`x = x ^ y` in a loop): the RustHDL simulator and the Verilog disagree
//!   on that. Wide linear logic (CRC matrices) goes through [`gf2::Gf2Map`] instead.
//! - **Sub-block outputs** are consumed in statements of their own (`self.r.d.next =
//!   self.leaf.y.val()`, `self.b.x.next = self.a.y.val()`). RustHDL writes a block's
//!   `update` as one `always @(*)`; when a statement that reads a sub-block's output shares
//!   variables with the logic computing that sub-block's inputs (a multiplexer between two
//!   chained leaves, a register load inside a large `if`), Verilator sees a loop through
//!   the block (UNOPTFLAT). Put such multiplexers inside the leaf (as
//!   [`gf2_step::Gf2Step`] and [`masked_load::MaskedLoad`] do).
//! - **Unused bits**: where a block reads only some bits of a wide signal (header fields of
//!   a beat), the rest go to a local named `unused_*` (Verilator's default
//!   `-unused-regexp`), so `-Wall` stays clean without a waiver and the intent is visible.
//! - **Names**: no Verilog or SystemVerilog keyword as a field name (`reg`, `force`,
//!   `wire`...): RustHDL refuses only a few of them, the rest break the generated Verilog.
//!
//! # Blocks
//!
//! - [`icrc::Icrc`]: the RoCE v2 ICRC, generate (TX) or check (RX), 64 bytes per cycle.
//! - [`gf2::Gf2Map`]: `y = M·x` over GF(2), the leaf under every CRC.
//! - [`gf2_step::Gf2Step`]: `y = en ? M·x : x`, for log-depth "advance by k" chains.
//! - [`dma_rd_mux::DmaReadMux`], [`dma_wr_mux::DmaWriteMux`]: two DMA clients on one port
//!   (round robin; read responses routed by a tag bit, write statuses by a FIFO of clients).
//! - [`completion::Completion`]: the CQ table and CQE writes with the phase rule;
//!   [`cqe_beat::CqeBeat`] lays a CQE out as one beat.
//! - [`qp_timers::QpTimers`]: one ACK/RNR deadline per QP in block RAM, scanned round robin.
//! - [`qp_counters::QpCounters`]: the per-QP counters in block RAM (a read-modify-write
//!   lane per source group), cleared and read for the command engine.
//! - [`mr_check::MrCheck`]: key, PD, range and access -> IOVA or the reason, against the
//!   MR table (the model's `Tables::translate`).
//! - [`resp_check::RespCheck`]: the responder's decision on a request packet (PSN,
//!   duplicate, opcode sequence, access, payload length, RNR), the model's `classify`.
//! - [`req_rx_check::ReqRxCheck`]: the requester's decision on a response (ACK, NAK, RNR
//!   NAK, READ response, atomic ACK) from a walk over the QP's outstanding ops, one per
//!   cycle; the model's `on_response`.
//! - [`responder::Responder`]: the responder's sequencer (contexts, MR checks, RQ WQE
//!   fetch, payload DMA writes, CQEs, ACK/NAK records, READ/atomic jobs).
//! - [`cat::Cat`]: `{hi, lo}`, the widening concatenation `#[hdl_gen]` lacks;
//!   [`zext::ZeroExt`]: zero extension.
//! - [`masked_load::MaskedLoad`]: a beat register's next value, loading with byte lanes
//!   zeroed or holding (clock enable and synchronous reset on the register's pins).
//! - [`hdr_build::HdrBuild`]: TX frames from packet records and payload streams (headers,
//!   payload merge, ICRC insertion), one beat per cycle; its leaves in [`tx_leaves`].
//! - [`tx_arbiter::TxArbiter`]: responder before requester, whole frames.
//! - [`tx_path::TxPath`]: the TX back end, the arbiter feeding the frame builder.
//! - [`rsp_order::RspOrder`]: the responder's ACK/NAK records, READ responses and atomic
//!   ACKs merged in the order the responder decided them (the model's one response queue);
//!   [`job_slice::JobSlice`]: a register slice on a handshake whose source holds the data.
//! - [`rx_parser::RxParser`]: the verdict on each received frame (the checks of
//!   `RoceRepr::parse`, the ICRC, the MAC error flag, the destination address).
//! - [`rx_fifo::RxFifo`]: the RX front end: store and forward through a block-RAM frame
//!   buffer, header records and payload realigned to lane 0 for a consumer that may stall,
//!   drop pulses by reason.
//! - [`segmenter::Segmenter`]: the requester's segmentation: a send WQE's request records
//!   and their payloads read by DMA, 16 packets in flight (the model's `request_packet`).
//! - [`wqe_fetch::WqeFetch`]: send WQEs read from the SQ ring by DMA (up to 8 posted ones
//!   a read, kept in a prefetch buffer) and decoded (`SendWqe::from_bytes`).
//! - [`requester::Requester`]: the requester's sequencer: transmit half (SQ doorbells,
//!   WQE fetch, the model's `validate_wqe`, the per-QP op ring, Segmenter jobs, `qpr`)
//!   and the receive half's fault-free path (responses through `ReqRxCheck`, READ/atomic
//!   results by DMA write, retire with send CQEs; no go-back-N, timers or RNR waits yet).
//! - [`read_resp::ReadResp`]: READ responses: one DMA read per response packet, many in
//!   flight, records and payload in order as the model's `exec_read` sends them.
//! - [`atomic_unit::AtomicUnit`]: CMP_AND_SWP / FETCH_ADD by DMA read and write, the
//!   ATOMIC ACKNOWLEDGE, and the 16-entry per-QP replay cache for duplicates.
//! - [`skid::Skid`]: a register slice on a valid/ready channel (breaks combinational
//!   loops between blocks in the engine top).
//! - [`byte_swap::ByteSwap`]: byte reversal (lane order to wire numbers), a wiring leaf.
//!
//! - [`control::Control`]: the control plane — [`regfile::RegFile`] (BAR0) and
//!   [`cmd::CmdEngine`] (the mailbox commands over the [`ctx_tables`] in block RAM).
//! - [`leaves`]: small custom-Verilog leaves of the control plane (word select, word bank,
//!   counter bank, record pack/unpack).
//!
//! Helpers: [`crc32`] (the CRC-32 as GF(2) matrices), [`bench`](mod@bench) (test benches), [`gates`]
//! (Verilator and yosys gates, also behind `rocenic-hdl --synth`).
//!
//! The current top ([`Design`]) is written by the `rocenic-hdl` binary:
//! `cargo run -p rocenic-hdl --release -- --out DIR` writes `DIR/top.v`.

pub mod atomic_unit;
pub mod bench;
pub mod byte_swap;
pub mod cat;
pub mod cmd;
pub mod completion;
pub mod control;
pub mod cqe_beat;
pub mod crc32;
pub mod ctx_tables;
pub mod dma_rd_mux;
pub mod dma_wr_mux;
pub mod engine;
pub mod event_sum;
pub mod gates;
pub mod gf2;
pub mod gf2_step;
pub mod hdr_build;
pub mod icrc;
pub mod job_slice;
pub mod leaves;
pub mod masked_load;
pub mod mr_check;
pub mod qp_counters;
pub mod qp_timers;
pub mod read_resp;
pub mod regfile;
pub mod req_rx_check;
pub mod requester;
pub mod resp_check;
pub mod responder;
pub mod rsp_order;
pub mod rx_fifo;
pub mod rx_parser;
pub mod segmenter;
pub mod skid;
pub mod tx_arbiter;
pub mod tx_leaves;
pub mod tx_path;
pub mod wqe_fetch;
pub mod zext;

/// The RustHDL names the blocks use (what `rust_hdl::prelude` re-exports from the core and
/// widget crates).
pub mod prelude {
    pub use rust_hdl_core::prelude::*;
    pub use rust_hdl_widgets::prelude::*;
}

use prelude::Block;

/// log2 of the QP contexts of the generated designs (`--qps`, 256).
pub const QP_LOG: usize = 8;
/// log2 of the MR entries of the generated designs (`--mrs`, 1024).
pub const MR_LOG: usize = 10;

/// log2 of the QP contexts of the large engine configuration (1024).
pub const LARGE_QP_LOG: usize = 10;
/// log2 of the MR entries of the large engine configuration (16384).
pub const LARGE_MR_LOG: usize = 14;

/// A build-time size of the engine top. Every benched design is generated at the default
/// size; the large one exists so that the utilization of a bigger build is measured too
/// (`rocenic-hdl --config large --synth`, docs/hdl.md "Utilization by configuration").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineConfig {
    /// 256 QPs, 1024 MRs ([`QP_LOG`], [`MR_LOG`]): what the model's `NicConfig::default`
    /// and the driver's tests assume.
    Default,
    /// 1024 QPs, 16384 MRs ([`LARGE_QP_LOG`], [`LARGE_MR_LOG`]).
    Large,
}

impl EngineConfig {
    /// Every configuration, the default first.
    pub const ALL: [EngineConfig; 2] = [EngineConfig::Default, EngineConfig::Large];

    /// The name the generator's `--config` option takes.
    pub fn name(self) -> &'static str {
        match self {
            EngineConfig::Default => "default",
            EngineConfig::Large => "large",
        }
    }

    /// The configuration of that name.
    pub fn from_name(name: &str) -> Option<EngineConfig> {
        EngineConfig::ALL.into_iter().find(|c| c.name() == name)
    }

    /// log2 of its QP contexts.
    pub fn qp_log(self) -> usize {
        match self {
            EngineConfig::Default => QP_LOG,
            EngineConfig::Large => LARGE_QP_LOG,
        }
    }

    /// log2 of its MR entries.
    pub fn mr_log(self) -> usize {
        match self {
            EngineConfig::Default => MR_LOG,
            EngineConfig::Large => LARGE_MR_LOG,
        }
    }

    /// The engine top's Verilog at this size (module `top`).
    pub fn engine_verilog(self) -> String {
        match self {
            EngineConfig::Default => Design::Engine.verilog(),
            EngineConfig::Large => with_big_stack(|| {
                generate_verilog(&mut engine::Engine::<
                    LARGE_QP_LOG,
                    LARGE_MR_LOG,
                    { LARGE_QP_LOG + 4 },
                >::new())
            }),
        }
    }
}

/// Runs `f` on a thread with a 512 MiB stack and returns its result. RustHDL keeps every
/// block by value and elaborates recursively, so the engine top (the large size above all)
/// overflows a test thread's 2 MiB stack and can overflow the main thread's 8 MiB.
fn with_big_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .stack_size(512 << 20)
            .spawn_scoped(scope, f)
            .expect("spawning the elaboration thread")
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

use hdr_build::HdrBuild;
use icrc::{Icrc, IcrcMode};
use rx_fifo::RxFifo;
use rx_parser::RxParser;
use tx_path::TxPath;

/// A design that can be written as the Verilog top (module `top`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Design {
    /// The engine top: the device ([`engine::Engine`]; control plane and RX front end so
    /// far). The default top.
    Engine,
    /// The RX ICRC checker ([`Icrc`] in [`IcrcMode::Check`]).
    IcrcCheck,
    /// The TX ICRC generator ([`Icrc`] in [`IcrcMode::Generate`]).
    IcrcGenerate,
    /// Two DMA read clients on one port ([`dma_rd_mux::DmaReadMux`]).
    DmaReadMux,
    /// Two DMA write clients on one port ([`dma_wr_mux::DmaWriteMux`]).
    DmaWriteMux,
    /// The completion engine ([`completion::Completion`]).
    Completion,
    /// Per-QP ACK/RNR timers for 256 QPs ([`qp_timers::QpTimers`]).
    QpTimers,
    /// The memory protection check over 1024 MRs ([`mr_check::MrCheck`]).
    MrCheck,
    /// The TX frame builder ([`HdrBuild`]: header build, payload merge, ICRC insertion).
    HdrBuild,
    /// The TX back end ([`TxPath`]: [`tx_arbiter::TxArbiter`] feeding [`HdrBuild`]).
    TxPath,
    /// The RX verdict engine ([`RxParser`]): header checks and ICRC per frame.
    RxParser,
    /// The RX front end ([`RxFifo`]): verdicts, store and forward, header records and
    /// realigned payload.
    RxFifo,
    /// The control plane: register file, command engine, context tables
    /// ([`control::Control`], 256 QPs, 1024 MRs).
    Control,
    /// The BAR0 register file alone ([`regfile::RegFile`], 256 QPs, 1024 MRs).
    RegFile,
    /// The responder's per-packet decision ([`resp_check::RespCheck`]), combinational.
    RespCheck,
    /// The requester's decision on a response ([`req_rx_check::ReqRxCheck`]), a walk over
    /// the QP's outstanding ops.
    ReqRxCheck,
    /// The responder's sequencer ([`responder::Responder`], 256 QPs).
    Responder,
    /// The requester's segmentation engine ([`segmenter::Segmenter`]): send WQEs to request
    /// records and DMA-read payloads.
    Segmenter,
    /// The requester's sequencer, transmit half, with its per-QP op ring
    /// ([`requester::Requester`], 256 QPs).
    Requester,
    /// Send WQE fetch by DMA and decode ([`wqe_fetch::WqeFetch`]).
    WqeFetch,
    /// The READ responder's data path ([`read_resp::ReadResp`], 256 QPs).
    ReadResp,
    /// The responder's atomics and replay cache ([`atomic_unit::AtomicUnit`], 256 QPs).
    AtomicUnit,
    /// The responder's responses in decision order ([`rsp_order::RspOrder`]).
    RspOrder,
}

impl Design {
    /// Every design, the default first.
    pub const ALL: [Design; 23] = [
        Design::Engine,
        Design::IcrcCheck,
        Design::IcrcGenerate,
        Design::DmaReadMux,
        Design::DmaWriteMux,
        Design::Completion,
        Design::QpTimers,
        Design::MrCheck,
        Design::HdrBuild,
        Design::TxPath,
        Design::RxParser,
        Design::RxFifo,
        Design::Control,
        Design::RegFile,
        Design::RespCheck,
        Design::ReqRxCheck,
        Design::Responder,
        Design::Segmenter,
        Design::Requester,
        Design::WqeFetch,
        Design::ReadResp,
        Design::AtomicUnit,
        Design::RspOrder,
    ];

    /// The name the generator's `--top` option takes.
    pub fn name(self) -> &'static str {
        match self {
            Design::Engine => "engine",
            Design::IcrcCheck => "icrc-check",
            Design::IcrcGenerate => "icrc-generate",
            Design::DmaReadMux => "dma-rd-mux",
            Design::DmaWriteMux => "dma-wr-mux",
            Design::Completion => "completion",
            Design::QpTimers => "qp-timers",
            Design::MrCheck => "mr-check",
            Design::HdrBuild => "hdr-build",
            Design::TxPath => "tx-path",
            Design::RxParser => "rx-parser",
            Design::RxFifo => "rx-fifo",
            Design::Control => "control",
            Design::RegFile => "regfile",
            Design::RespCheck => "resp-check",
            Design::ReqRxCheck => "req-rx-check",
            Design::Responder => "responder",
            Design::Segmenter => "segmenter",
            Design::Requester => "requester",
            Design::WqeFetch => "wqe-fetch",
            Design::ReadResp => "read-resp",
            Design::AtomicUnit => "atomic-unit",
            Design::RspOrder => "rsp-order",
        }
    }

    /// The design this one is instantiated in, if any: the yosys structural check of
    /// that design covers this one (the check flattens), so the gates run it once there.
    pub fn part_of(self) -> Option<Design> {
        match self {
            Design::IcrcCheck | Design::RxParser => Some(Design::RxFifo),
            Design::IcrcGenerate => Some(Design::HdrBuild),
            Design::HdrBuild => Some(Design::TxPath),
            Design::RxFifo | Design::Control => Some(Design::Engine),
            Design::RegFile => Some(Design::Control),
            Design::RespCheck => Some(Design::Responder),
            Design::Segmenter | Design::WqeFetch | Design::ReqRxCheck => Some(Design::Requester),
            _ => None,
        }
    }

    /// The design of that name.
    pub fn from_name(name: &str) -> Option<Design> {
        Design::ALL.into_iter().find(|d| d.name() == name)
    }

    /// Its Verilog, with `top` as the top module.
    pub fn verilog(self) -> String {
        match self {
            Design::Engine => with_big_stack(|| {
                generate_verilog(&mut engine::Engine::<QP_LOG, MR_LOG, { QP_LOG + 4 }>::new())
            }),
            Design::IcrcCheck => generate_verilog(&mut Icrc::new(IcrcMode::Check)),
            Design::IcrcGenerate => generate_verilog(&mut Icrc::new(IcrcMode::Generate)),
            Design::DmaReadMux => generate_verilog(&mut dma_rd_mux::DmaReadMux::<7, 8>::default()),
            Design::DmaWriteMux => generate_verilog(&mut dma_wr_mux::DmaWriteMux::default()),
            Design::Completion => generate_verilog(&mut completion::Completion::default()),
            Design::QpTimers => generate_verilog(&mut qp_timers::QpTimers::<QP_LOG>::default()),
            Design::MrCheck => generate_verilog(&mut mr_check::MrCheck::<MR_LOG>::default()),
            Design::HdrBuild => generate_verilog(&mut HdrBuild::new()),
            Design::TxPath => generate_verilog(&mut TxPath::new()),
            Design::RxParser => generate_verilog(&mut RxParser::new()),
            Design::RxFifo => generate_verilog(&mut RxFifo::new()),
            Design::Control => generate_verilog(&mut control::Control::<QP_LOG, MR_LOG>::new()),
            Design::RegFile => generate_verilog(&mut regfile::RegFile::new(
                regfile::CtrlParams::new(QP_LOG, MR_LOG),
            )),
            Design::RespCheck => generate_verilog(&mut resp_check::RespCheck::default()),
            Design::ReqRxCheck => generate_verilog(&mut req_rx_check::ReqRxCheck::default()),
            Design::Responder => generate_verilog(&mut responder::Responder::<QP_LOG>::default()),
            Design::Segmenter => generate_verilog(&mut segmenter::Segmenter::<QP_LOG>::new()),
            Design::Requester => {
                generate_verilog(&mut requester::Requester::<QP_LOG, { QP_LOG + 4 }>::default())
            }
            Design::WqeFetch => generate_verilog(&mut wqe_fetch::WqeFetch::<QP_LOG>::default()),
            Design::ReadResp => generate_verilog(&mut read_resp::ReadResp::<QP_LOG>::default()),
            Design::AtomicUnit => {
                generate_verilog(&mut atomic_unit::AtomicUnit::<QP_LOG, { QP_LOG + 4 }>::default())
            }
            Design::RspOrder => generate_verilog(&mut rsp_order::RspOrder::new()),
        }
    }
}

/// The Verilog of a block, its module named `top` and each sub-block a module named after
/// its path (`top$rem` ...), all in one text. Panics if the block is not fully connected
/// (RustHDL's own checks: an undriven input, a logic loop, a written input).
pub fn generate_verilog<B: Block>(top: &mut B) -> String {
    top.connect_all();
    let body = prelude::generate_verilog(top);
    format!(
        "// Generated by rocenic-hdl {} (RustHDL). Do not edit: change hdl/src and regenerate.\n{}",
        env!("CARGO_PKG_VERSION"),
        body
    )
}
