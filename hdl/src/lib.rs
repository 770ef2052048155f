//! rocenic RTL: the RoCE v2 engine written in RustHDL, and the tools that turn it into
//! Verilog and check it.
//!
//! # Conventions (every block follows them)
//!
//! - **One block per file**, each with its own test bench: RustHDL simulation (see
//!   [`bench`](mod@bench)) sweeping idle and backpressure patterns, checked against the
//!   software reference in `rocenic_proto` in the block's file, or against the behavioural
//!   model in `hdl/tests/against_model` (the RTL is never built from the model, test code
//!   included, so no file here names it). Every block that can be a top also passes the
//!   quality gates in `tests/` (Verilator lint, yosys checks and synthesis; see [`gates`]).
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
//!   on that. Wide linear logic (CRC matrices) goes through [`common::gf2::Gf2Map`] instead.
//! - **Sub-block outputs** are consumed in statements of their own (`self.r.d.next =
//!   self.leaf.y.val()`, `self.b.x.next = self.a.y.val()`). RustHDL writes a block's
//!   `update` as one `always @(*)`; when a statement that reads a sub-block's output shares
//!   variables with the logic computing that sub-block's inputs (a multiplexer between two
//!   chained leaves, a register load inside a large `if`), Verilator sees a loop through
//!   the block (UNOPTFLAT). Put such multiplexers inside the leaf (as
//!   [`common::gf2_step::Gf2Step`] and [`common::masked_load::MaskedLoad`] do). Likewise a
//!   `ready` (or `valid`) output whose peer answers it combinationally is written from
//!   registers in its own statement, not through a local that statements reading the
//!   peer's `valid` also read (`RingFetch`'s `dma_rd.resp_ready`); and a `Cat` read
//!   inside a large `if` takes registers as inputs, not locals computed beside that `if`
//!   (`RingFetch` builds its read-ahead address from the read's registers, a cycle after
//!   the tag that decides it).
//! - **Unused bits**: where a block reads only some bits of a wide signal (header fields of
//!   a beat), the rest go to a local named `unused_*` (Verilator's default
//!   `-unused-regexp`), so `-Wall` stays clean without a waiver and the intent is visible.
//! - **Names**: no Verilog or SystemVerilog keyword as a field name (`reg`, `force`,
//!   `wire`...): RustHDL refuses only a few of them, the rest break the generated Verilog.
//!
//! # Layout
//!
//! The folders follow the pipeline, each the home of one stage and its blocks:
//!
//! - [`rx`]: frames in: verdicts, store and forward, header records and payload, and their
//!   dispatch to the two halves.
//! - [`requester`]: the sending side: WQE fetch, segmentation, responses, timers.
//! - [`responder`]: the receiving side: request checks, READ responses, atomics, response
//!   order.
//! - [`completion`]: CQEs into the CQ rings.
//! - [`tx`]: frames out: the arbiter and the frame builder.
//! - [`control`]: BAR0, the command engine, the context and MR tables, per-QP counters.
//! - [`dma`]: the DMA fabric: every client on the engine's two ports.
//! - [`common`]: register slices, wiring leaves and the CRC machinery every stage uses.
//! - [`bus`]: the port groups between blocks, each declared once.
//!
//! Beside them: [`engine`] (the top that joins the stages), [`design`] (the designs the
//! generator writes), [`prelude`] (the RustHDL names), [`bench`](mod@bench) and [`gates`].
//!
//! # Blocks
//!
//! - [`common::icrc::Icrc`]: the RoCE v2 ICRC, generate (TX) or check (RX), 64 bytes per cycle.
//! - [`common::gf2::Gf2Map`]: `y = M·x` over GF(2), the leaf under every CRC.
//! - [`common::gf2_step::Gf2Step`]: `y = en ? M·x : x`, for log-depth "advance by k" chains.
//! - [`dma::dma_rd_mux::DmaReadMux`], [`dma::dma_wr_mux::DmaWriteMux`]: two DMA clients on one port
//!   (round robin; read responses routed by a tag bit, write statuses by a FIFO of clients);
//!   [`dma::fabric::DmaFabric`]: the tree of them, their register slices and status routing;
//!   [`dma::slice`]: a DMA group's register slices and a client's tag adapter.
//! - [`completion::Completion`]: the CQ table and CQE writes with the phase rule;
//!   [`completion::cqe_beat::CqeBeat`] lays a CQE out as one beat.
//! - [`requester::qp_timers::QpTimers`]: one ACK/RNR deadline per QP in block RAM, scanned round
//!   robin.
//! - [`control::qp_counters::QpCounters`]: the per-QP counters in block RAM (a read-modify-write
//!   lane per source group), cleared and read for the command engine.
//! - [`control::mr_check::MrCheck`]: key, PD, range and access -> IOVA or the reason, against the
//!   MR table (the model's `Tables::translate`).
//! - [`responder::resp_check::RespCheck`]: the responder's decision on a request packet (PSN,
//!   duplicate, opcode sequence, access, payload length, RNR), the model's `classify`.
//! - [`requester::req_rx_check::ReqRxCheck`]: the requester's decision on a response (ACK, NAK, RNR
//!   NAK, READ response, atomic ACK) from a walk over the QP's outstanding ops, one per
//!   cycle; the model's `on_response`.
//! - [`responder::Responder`]: the responder's sequencer (contexts, MR checks, RQ WQE
//!   fetch, payload DMA writes, CQEs, ACK/NAK records, READ/atomic jobs).
//! - [`common::cat::Cat`]: `{hi, lo}`, the widening concatenation `#[hdl_gen]` lacks;
//!   [`common::zext::ZeroExt`]: zero extension.
//! - [`common::masked_load::MaskedLoad`]: a beat register's next value, loading with byte lanes
//!   zeroed or holding (clock enable and synchronous reset on the register's pins).
//! - [`tx::hdr_build::HdrBuild`]: TX frames from packet records and payload streams (headers,
//!   payload merge, ICRC insertion), one beat per cycle; its leaves in [`tx::tx_leaves`].
//! - [`tx::tx_arbiter::TxArbiter`]: responder before requester, whole frames.
//! - [`tx::tx_path::TxPath`]: the TX back end, the arbiter feeding the frame builder.
//! - [`responder::rsp_order::RspOrder`]: the responder's ACK/NAK records, READ responses and atomic
//!   ACKs merged in the order the responder decided them (the model's one response queue);
//!   [`common::job_slice::JobSlice`]: a register slice on a handshake whose source holds the data.
//! - [`rx::rx_parser::RxParser`]: the verdict on each received frame (the checks of
//!   `RoceRepr::parse`, the ICRC, the MAC error flag, the destination address).
//! - [`rx::dispatch::RxDispatch`]: requests to the responder, responses and ACKs to the
//!   requester, each with its payload.
//! - [`rx::rx_fifo::RxFifo`]: the RX front end: store and forward through a block-RAM frame
//!   buffer, header records and payload realigned to lane 0 for a consumer that may stall,
//!   drop pulses by reason.
//! - [`requester::segmenter::Segmenter`]: the requester's segmentation: a send WQE's request
//!   records and their payloads read by DMA, 16 packets in flight (the model's `request_packet`).
//! - [`requester::wqe_fetch::WqeFetch`]: send WQEs read from the SQ ring by DMA (up to 16 posted
//!   ones a read, kept in a prefetch buffer for 16 QPs) and decoded (`SendWqe::from_bytes`).
//! - [`requester::Requester`]: the requester's sequencer: transmit half (SQ doorbells,
//!   WQE fetch, the model's `validate_wqe`, the per-QP op ring, Segmenter jobs, `qpr`)
//!   and the receive half (responses through `ReqRxCheck`, READ/atomic results by DMA
//!   write, retire with send CQEs, go-back-N, the ACK and RNR timers of `QpTimers`).
//! - [`responder::read_resp::ReadResp`]: READ responses: one DMA read per response packet, many in
//!   flight, records and payload in order as the model's `exec_read` sends them.
//! - [`responder::atomic_unit::AtomicUnit`]: CMP_AND_SWP / FETCH_ADD by DMA read and write, the
//!   ATOMIC ACKNOWLEDGE, and the 16-entry per-QP replay cache for duplicates.
//! - [`common::skid::Skid`]: a register slice on a valid/ready channel (breaks combinational
//!   loops between blocks in the engine top).
//! - [`common::byte_swap::ByteSwap`]: byte reversal (lane order to wire numbers), a wiring leaf.
//!
//! - [`control::Control`]: the control plane — [`control::regfile::RegFile`] (BAR0) and
//!   [`control::cmd::CmdEngine`] (the mailbox commands over the [`control::ctx_tables`] in block
//!   RAM).
//! - [`control::leaves`]: small custom-Verilog leaves of the control plane (word select, word bank,
//!   counter bank, record pack/unpack).
//!
//! Helpers: [`common::crc32`] (the CRC-32 as GF(2) matrices), [`bench`](mod@bench) (test benches),
//! [`gates`] (Verilator and yosys gates, also behind `rocenic-hdl --synth`).
//!
//! The current top ([`Design`]) is written by the `rocenic-hdl` binary:
//! `cargo run -p rocenic-hdl --release -- --out DIR` writes `DIR/top.v`.

pub mod bench;
pub mod bus;
pub mod common;
pub mod completion;
pub mod control;
pub mod design;
pub mod dma;
pub mod engine;
pub mod gates;
pub mod prelude;
pub mod requester;
pub mod responder;
pub mod rx;
pub mod tx;

pub use design::{
    generate_verilog, Design, EngineConfig, LARGE_MR_LOG, LARGE_QP_LOG, MR_LOG, QP_LOG,
};
