//! `Responder`: the responder's sequencer. One request packet at a time: its header record
//! and the QP's contexts (`qpc`, `qpa`, `qps`) in, the decision ([`RespCheck`], the model's
//! `classify`), then what the model's `responder_rx` does with it: MR checks through
//! `MrCheck`, the RQ WQE fetch (DMA read), the payload DMA write, receive CQEs, ACK / NAK /
//! RNR NAK records, READ and atomic jobs for ReadResp / AtomicUnit, the QP-error event,
//! counter pulses, and the `qps` context written back.
//!
//! ```text
//!  s_hdr --> IDLE -> read qpc + qpa + qps -> DECIDE --+--> MR check ---+--> DMA write (payload) --+
//!  rq_db   ->  (doorbell: set rq_pi, write qps)        +--> RQ WQE fetch +                        |
//!  s_*_err -> (DMA failure report: NAK, QP error)      v                                          v
//!                    finish: CQE -> ACK/NAK record -> job (READ / atomic / replay) -> QP error -> qps write -> drain payload
//!                    (a finish step with nothing to do for the packet is skipped)
//! ```
//!
//! # What it matches in the model (`model/src/responder.rs`)
//!
//! - Drop / duplicate / ahead / invalid / execute as `classify`; a QP that does not exist
//!   (`qpc.present` clear or a QPN past the table) counts UnknownQpDrops globally only; a
//!   request whose IPv4 source (`hdr.src_ip`) is not the QP's `dest_ip` is dropped and
//!   counted as UnknownQpDrops for the QP, as the model's `responder_rx` does.
//! - Duplicates: re-ACK of ePSN - 1; READ re-executed (MR check, job with the duplicate's
//!   PSN and the current MSN; a failing check is ignored); atomic replayed (`m_replay_*`).
//! - Ahead: one PSN-sequence NAK of the ePSN (`nak_sent` set), then silence.
//! - SEND: RNR NAK (the QP's `min_rnr_timer`) with no receive posted; the first packet
//!   fetches the RQ WQE (a refused read: DmaFaults and an RNR NAK with timer 0; see
//!   "Receive WQEs read ahead" below); the
//!   receive's length (LocLenErr CQE + NAK Invalid Request), the MR check of `lkey` for
//!   the packet (LocProtErr CQE + NAK Remote Operational Error), the payload write (a
//!   refused write: DmaFaults, LocProtErr CQE, NAK Remote Operational); the last packet
//!   completes the receive (byte_len, immediate / invalidated rkey flags), MSN + 1.
//! - WRITE: the first packet checks the whole RETH range (NAK Remote Access), then the
//!   length rule (NAK Invalid Request), RNR for an immediate with no receive, the packet's
//!   MR check (NAK Remote Access), the payload write (NAK Remote Operational); with an
//!   immediate the receive is taken after the data is written and the last packet
//!   completes it as RECV_RDMA_WITH_IMM of the message's length.
//! - READ: MR check (NAK Remote Access), ePSN += packets(len, PMTU), MSN + 1, a job with
//!   the new MSN. Atomic: MR check of 8 bytes, ePSN + 1, MSN + 1, a job; no request is
//!   taken while the AtomicUnit holds it (`s_atomic_busy`), so the requests after it see
//!   its result in host memory, as the model's in-order execution does.
//! - ACK when AckReq is set, with the MSN after the packet; NAKs with the current MSN.
//! - A DMA failure report of ReadResp (the READ request's PSN) or AtomicUnit: NAK Remote
//!   Operational Error at that PSN, QP error; for an atomic the ePSN and MSN its job took
//!   are given back first (the model's failed atomic consumes neither). A report for a QP
//!   already in ERR is dropped (the model's sequential responder never executed it).
//! - SEND with invalidate: the last packet's IETH rkey goes to the command engine
//!   (`inv`), which invalidates the MR as the model's `Tables::invalidate` (exists,
//!   valid, the key's tag, the QP's PD); done: the CQE carries WITH_INV and the rkey;
//!   refused: LocProtErr CQE (byte_len kept), no MSN, NAK Invalid Request, QP error.
//! - The error state (the model's `enter_error` for the responder's side): after any
//!   error's CQE and NAK, the receive in progress (`prog` SEND) completes with
//!   WR_FLUSH_ERR, then every posted receive from `rq_ci` to `rq_pi` (each RQ WQE read
//!   again for its `wr_id`; a refused read gives 0, as `flush_posted`); then `qp_err`
//!   (valid/ready: the command engine moves `qpa.state` to ERR and answers once written),
//!   then `qps` is written. The same flush runs for a host MODIFY_QP to ERR (`flush`,
//!   the command engine's QPEV_ERROR) and for receives posted to a QP in ERR (the model's
//!   requester step flushes them). The send queue's flush is the requester's (not built).
//!
//! ```text
//!  error: ... F_JOB -> FL_IP (CQE of the receive in progress) -> FL_CHK <-> FL_RQ -> FL_RESP -> FL_CQE
//!                                                                  +--> FL_ERR (qpa.state := ERR) -> F_WQPS
//! ```
//!
//! Held to the model by a scripted bench and a differential bench against the model's `Nic`
//! (`hdl/tests/against_model/responder`, `diff`: random streams, every response frame byte for
//! byte, CQEs, host memory, QP state, counters; see its docs and docs/hdl.md).
//!
//! # Not yet
//!
//! - A DMA failure report arriving while one of the same source waits is lost (one latch
//!   each).
//! - A duplicate READ whose DMA faults: the model ignores the failure, ReadResp reports it
//!   and the responder NAKs and errors the QP (a job carries no duplicate flag).
//! - With reports arriving after later packets of the same QP were executed, the atomic's
//!   give-back of ePSN / MSN is approximate (the model is sequential; the QP errors anyway).
//! - The read-modify-write of `qps` is not interlocked with a MODIFY_QP of the same QP.
//! - Responses are not held in PSN order across the sources here: an ACK record can be offered
//!   before the packets of an earlier READ are read from host memory. The engine orders them
//!   ([`RspOrder`](crate::responder::rsp_order::RspOrder), fed by this block's hand-outs).
//!
//! # Receive WQEs read ahead
//!
//! The RQ WQE at `rq_ci` (a SEND's or WRITE with immediate's receive, or the flush's next
//! one) comes through a [`RqRingFetch`] (`rqf`, the requester's SQ reader without its
//! decode, with two slots and no reads ahead): a miss reads the posted WQEs from `rq_ci`
//! on (up to 16, `BUF`, to the ring's wrap) in one DMA read and keeps them in the QP's
//! slot, so the next SENDs of the QP find their receive without a DMA round trip (a hit:
//! 2 cycles). Only posted WQEs are read, which the host may not
//! change until they complete, so a kept WQE is the one the model reads when the SEND
//! arrives. The buffer is forgotten whenever a table may change (`s_cmd_start` to
//! `s_cmd_done`, `s_tbl_wr`: a QP reset and created again has a new ring). A refused
//! multi-WQE read is read again for the one WQE, and only that refusal is the SEND's
//! (DmaFaults, RNR NAK), as before. Bench: `receives_are_read_ahead`; the differential
//! bench checks that some reads carried several WQEs.
//!
//! # Throughput
//!
//! One packet at a time, with no step that does nothing for it: the three context reads
//! are requested together (2 cycles when each answers one cycle after), DECIDE makes a
//! middle WRITE packet's length / RNR / MR-range choices in the same cycle, a successful
//! payload write finishes a SEND or WRITE packet in the cycle of its status, finish steps
//! with no CQE, ACK, job, error or payload left are skipped, and the next header is taken
//! in the cycle the `qps` write is. Two things are kept from earlier reads:
//!
//! - **The QP's contexts.** After a packet's `qps` write (no error, the QP present), the
//!   registers hold its QP exactly as written: a next packet of the same QP (same
//!   `dest_qp`) goes from its header straight to DECIDE, with the expected PSN, MSN and
//!   message progress forwarded from the registers instead of read again. Any other
//!   packet, a doorbell, a flush or a DMA failure report reads the tables (and drops what
//!   is kept); so does a packet after an error (the flush and the command engine's
//!   `qpa.state` write).
//! - **A WRITE message's checked range.** The first packet's whole-range check (RETH VA,
//!   rkey, length, not zero) leaves its IOVA; a packet of the same QP and message (key,
//!   VA and length equal), which the length rule already keeps inside that range, needs
//!   no MR check of its own: its IOVA is the range's plus the message offset (what
//!   `MrCheck` would answer, the translation being linear). SEND packets (the receive's
//!   `lkey`, checked packet by packet) are checked as before.
//!
//! Both are dropped, and nothing read while it happens is kept, when a table may change
//! under them: from a command's `s_cmd_start` to its `s_cmd_done` (a command may write
//! any table in between), and on `s_tbl_wr` (the tables cleared after reset, a QP error
//! or an MR invalidation written by the command engine). A packet whose header was taken
//! before such a write finishes as before but leaves nothing kept (`stale`). The `qps`
//! table is written by this block only, so its own doorbell / flush paths never see a
//! stale copy (they read the table, which the last `qps` write updated).
//!
//! A middle packet of a long WRITE with its neighbours always ready
//! (`a_middle_write_packet_takes_few_cycles`: write status one after the last beat):
//! header 1 (with the previous `qps` write), DECIDE 1, DMA write request 1, payload 4
//! beats (256 bytes), status 1: 8 cycles from one header to the next (13 when the
//! contexts were read and the MR checked for every packet, 25 before the idle steps were
//! removed). A 256-byte packet lasts about 6 beats on the wire, so at PMTU 256 the
//! responder still sets the rate (docs/performance.md). The forwarded contexts serve any
//! packet of the same QP; the kept range only WRITE packets (a SEND packet is still
//! checked, 3 cycles); packets of alternating QPs read the tables each time. The next
//! header is still taken only once the current packet is done (its write status in, its
//! `qps` written), so no decision is ever made on a result that may still fail. Not yet:
//! the next packet's header and DECIDE overlapping the current payload and write status
//! (a pipeline; a refused write, NAK Remote Operational and the QP to error, would have to
//! cancel the decision made for the next packet and redo it).

pub mod atomic_unit;
pub mod read_resp;
pub mod read_slice;
pub mod resp_check;
pub mod rsp_order;

use crate::bus::cnt::RespCntClient;
use crate::bus::cqe::CqeClient;
use crate::bus::ctl::{InvClient, QpClrServer, QpErrClient};
use crate::bus::ctx::{CtxRdClient, CtxWrClient};
use crate::bus::dma_rd::DmaRdClient;
use crate::bus::dma_wr::DmaWrClient;
use crate::bus::job::{AtomicArgsClient, JobHdrClient, ReadArgsClient};
use crate::bus::mr::MrClient;
use crate::bus::record::{RecordClient, RecordPack};
use crate::bus::reg::QDbServer;
use crate::bus::rx::{ReqHdrServer, RxPayServer};
use crate::common::cat::Cat;
use crate::common::mtu_shift::MtuShift;
use crate::common::zext::ZeroExt;
use crate::control::ctx_tables::{qpa_layout, qpc_layout, qps_layout, QpsPack};
use crate::prelude::*;
use crate::requester::wqe_fetch::RqRingFetch;
use crate::responder::resp_check::{
    RespCheck, ACT_AHEAD, ACT_DROP, ACT_DUP, ACT_INVALID, DUP_ACK, DUP_ATOMIC, DUP_READ, KIND_READ,
    KIND_SEND, KIND_WRITE, PROG_IDLE, PROG_SEND, PROG_WRITE,
};
use rocenic_proto::abi::regs::Counter;
use rocenic_proto::abi::verbs::{access, wc_flags, QpState, WcOpcode, WcStatus};
use rocenic_proto::wire::{NakCode, Opcode, Syndrome};

// The receive WQE's bit offsets in `Responder::update` (literals, as `#[hdl_gen]` wants
// them) are the host ABI's byte offsets (`rocenic_proto::abi::wqe::field`) times 8: wr_id
// at 0, num_sge at 64, the SGE's address, length and lkey at 128, 192 and 224; the
// reserved bytes between (72..128) and after the SGE (256..512) are read into sinks.
const _: () = {
    use rocenic_proto::abi::wqe::field as f;
    assert!(f::WR_ID * 8 == 0 && f::RECV_NUM_SGE * 8 == 64 && (f::RECV_NUM_SGE + 1) * 8 == 72);
    assert!(f::RECV_SGE * 8 == 128 && (f::RECV_SGE + 8) * 8 == 192);
    assert!((f::RECV_SGE + 12) * 8 == 224 && (f::RECV_SGE + 16) * 8 == 256);
    assert!(rocenic_proto::abi::DESC_SIZE * 8 == 512);
};

crate::unpack_fields!(
    /// The create-time fields the responder reads.
    QpcFields, qpc_layout; present: 1, pdn: 8, recv_cqn: 8, rq_log: 4, rq_ring: 58
);
crate::unpack_fields!(
    /// The attributes the responder reads.
    QpaFields, qpa_layout; state: 3, pmtu: 3, dest_qpn: 24, dest_mac: 48, dest_ip: 32,
    udp_sport: 16, access: 4, min_rnr_timer: 5
);
crate::unpack_fields!(
    /// The responder state.
    QpsFields, qps_layout; rq_pi: 32, rq_ci: 32, epsn: 24, msn: 24, nak_sent: 1, prog: 2,
    msg_va: 64, msg_key: 32, msg_len: 32, msg_off: 32, rqe_wr_id: 64, rqe_index: 32
);

// FSM states.
const S_IDLE: u64 = 0;
const S_RD: u64 = 1;
const S_DECIDE: u64 = 7;
const S_MR_REQ: u64 = 8;
const S_MR_RES: u64 = 9;
const S_RQ_REQ: u64 = 10;
const S_RQ_RESP: u64 = 11;
const S_SEND_CHK: u64 = 12;
const S_SEND_DONE: u64 = 13;
const S_WRITE_CHK: u64 = 14;
const S_WRITE_DONE: u64 = 16;
const S_WR_REQ: u64 = 17;
const S_WR_DATA: u64 = 18;
const S_WR_STATUS: u64 = 19;
const S_F_CQE: u64 = 20;
const S_F_ACK: u64 = 21;
const S_F_JOB: u64 = 22;
const S_F_WQPS: u64 = 23;
const S_F_DRAIN: u64 = 24;
const S_FL_IP: u64 = 25;
const S_FL_CHK: u64 = 26;
const S_FL_RQ: u64 = 27;
const S_FL_RESP: u64 = 28;
const S_FL_CQE: u64 = 29;
const S_FL_ERR: u64 = 30;
const S_INV: u64 = 31;
// Which MR check is running.
const MR_WRITE_WHOLE: u64 = 0;
const MR_WRITE_PKT: u64 = 1;
const MR_SEND_PKT: u64 = 2;
const MR_READ: u64 = 3;
const MR_ATOMIC: u64 = 4;
const MR_DUP_READ: u64 = 5;

/// The counters the responder pulses, in the order of its `cnt` group's pulses (also the
/// per-QP counters bench's order).
pub const COUNTERS: [Counter; 6] = [
    Counter::Duplicates,
    Counter::PsnSeqDrops,
    Counter::NaksSent,
    Counter::RnrNaksSent,
    Counter::UnknownQpDrops,
    Counter::DmaFaults,
];

/// The sequencer; see the [module docs](self).
#[derive(LogicBlock)]
pub struct Responder<const QA: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// Our MAC and IPv4 address (BAR0), the source of every response.
    pub local_mac: Signal<In, Bits<48>>,
    pub local_ip: Signal<In, Bits<32>>,

    /// Request header records (`RxFifo`'s, through `RxDispatch`; the fields the responder
    /// reads).
    pub hdr: ReqHdrServer,
    /// The AtomicUnit holds an atomic (its `m_busy`): no request is taken until its
    /// write-back has landed, so later requests see its result.
    pub s_atomic_busy: Signal<In, Bit>,
    /// The payload of each record with `payload_len > 0`, lane 0 first (`RxFifo`'s
    /// `pay`).
    pub pay: RxPayServer,

    /// RQ doorbells: the new producer index of a QP's RQ.
    pub rq_db: QDbServer<QA>,

    /// DMA failures of ReadResp / AtomicUnit (pulses): NAK Remote Operational Error at
    /// that PSN and the QP to the error state.
    pub s_read_err_valid: Signal<In, Bit>,
    pub s_read_err_qpn: Signal<In, Bits<QA>>,
    pub s_read_err_psn: Signal<In, Bits<24>>,
    pub s_atomic_err_valid: Signal<In, Bit>,
    pub s_atomic_err_qpn: Signal<In, Bits<QA>>,
    pub s_atomic_err_psn: Signal<In, Bits<24>>,

    /// The QP context tables' datapath read ports (`CtxTable`), and the `qps` write port.
    pub qpc_rd: CtxRdClient<QA, { qpc_layout::BITS }>,
    pub qpa_rd: CtxRdClient<QA, { qpa_layout::BITS }>,
    pub qps_rd: CtxRdClient<QA, { qps_layout::BITS }>,
    pub qps_wr: CtxWrClient<QA, { qps_layout::BITS }>,

    /// The protection check (answered by `MrCheck`).
    pub mr: MrClient,

    /// DMA read client (RQ WQEs: up to 16 (`BUF`) posted ones, 64 bytes each, in one read).
    pub dma_rd: DmaRdClient,

    /// DMA write client (payload: one request per packet, data packed from lane 0).
    pub dma_wr: DmaWrClient,

    /// ACK / NAK / RNR NAK records for `TxPath`'s response source (`tx_arbiter::pack`
    /// layout, no payload).
    pub ack_pkt: RecordClient,

    /// READ jobs for ReadResp.
    pub m_read_job_valid: Signal<Out, Bit>,
    pub m_read_job_ready: Signal<In, Bit>,
    pub read_hdr: JobHdrClient<QA>,
    pub read_args: ReadArgsClient,

    /// Atomic jobs for AtomicUnit.
    pub m_atomic_job_valid: Signal<Out, Bit>,
    pub m_atomic_job_ready: Signal<In, Bit>,
    pub atomic_hdr: JobHdrClient<QA>,
    pub atomic_args: AtomicArgsClient,

    /// Duplicate atomics, to replay from AtomicUnit's cache.
    pub m_replay_valid: Signal<Out, Bit>,
    pub m_replay_ready: Signal<In, Bit>,
    pub replay_hdr: JobHdrClient<QA>,

    /// Receive completions (`Completion`'s `cqe`).
    pub cqe: CqeClient,

    /// The QP enters the error state (valid/ready): the command engine moves `qpa.state`
    /// to ERR and raises ready once it is written, so the responder's next read of the QP
    /// sees ERR. Raised after the QP's receives are flushed, before `qps` is written.
    pub qp_err: QpErrClient<QA>,

    /// SEND with invalidate (valid/ready): the command engine invalidates the MR of `key`
    /// if it exists, is valid, carries the key's tag and is in PD `pdn`; `inv.ok`, with
    /// ready, says whether it did (the model's `Tables::invalidate`).
    pub inv: InvClient,

    /// Flush requests (valid/ready): the host moved the QP to ERR (MODIFY_QP, the command
    /// engine's `QPEV_ERROR`); the receive in progress and the posted receives complete
    /// with WR_FLUSH_ERR. `flush.ready` is a register (a one-entry latch).
    pub flush: QpClrServer<QA>,

    /// The command engine's table writes, for what the responder keeps from earlier reads
    /// (see "Throughput"): a command's `start` and `done` pulses (it may write any table
    /// in between), and `s_tbl_wr`, high in any other cycle a table may be written (the
    /// tables cleared after reset, a QP error or an MR invalidation written).
    pub s_cmd_start: Signal<In, Bit>,
    pub s_cmd_done: Signal<In, Bit>,
    pub s_tbl_wr: Signal<In, Bit>,

    /// Counter pulses (one cycle each), global and, with `cnt.qp_valid`, for QP
    /// `cnt.qpn`.
    pub cnt: RespCntClient<QA>,

    chk: RespCheck,
    qpc_u: QpcFields,
    qpa_u: QpaFields,
    qps_u: QpsFields,
    qps_p: QpsPack,
    rec: RecordPack,
    len32: Cat<16, 16, 32>,
    off64: Cat<32, 32, 64>,
    rnr_syn: Cat<3, 5, 8>,
    qp24: ZeroExt<QA, 24>,

    /// The FSM state (read by the benches in hdl/tests).
    pub state: DFF<Bits<5>>,
    mode: DFF<Bits<3>>,
    // the request
    opcode: DFF<Bits<8>>,
    src_ip: DFF<Bits<32>>,
    dest_qp: DFF<Bits<24>>,
    ack_req: DFF<Bit>,
    psn: DFF<Bits<24>>,
    reth_va: DFF<Bits<64>>,
    reth_rkey: DFF<Bits<32>>,
    reth_len: DFF<Bits<32>>,
    swap: DFF<Bits<64>>,
    compare: DFF<Bits<64>>,
    imm: DFF<Bits<32>>,
    ieth: DFF<Bits<32>>,
    pay_len: DFF<Bits<16>>,
    has_reth: DFF<Bit>,
    has_atomic: DFF<Bit>,
    has_imm: DFF<Bit>,
    has_ieth: DFF<Bit>,
    pay_left: DFF<Bit>,
    // the QP
    present: DFF<Bit>,
    pdn: DFF<Bits<8>>,
    recv_cqn: DFF<Bits<8>>,
    rq_log: DFF<Bits<4>>,
    rq_ring: DFF<Bits<58>>,
    qp_state: DFF<Bits<3>>,
    pmtu: DFF<Bits<3>>,
    dest_qpn: DFF<Bits<24>>,
    dest_mac: DFF<Bits<48>>,
    dest_ip: DFF<Bits<32>>,
    udp_sport: DFF<Bits<16>>,
    access: DFF<Bits<4>>,
    min_rnr: DFF<Bits<5>>,
    rq_pi: DFF<Bits<32>>,
    rq_ci: DFF<Bits<32>>,
    epsn: DFF<Bits<24>>,
    msn: DFF<Bits<24>>,
    nak_sent: DFF<Bits<1>>,
    prog: DFF<Bits<2>>,
    msg_va: DFF<Bits<64>>,
    msg_key: DFF<Bits<32>>,
    msg_len: DFF<Bits<32>>,
    msg_off: DFF<Bits<32>>,
    rqe_wr_id: DFF<Bits<64>>,
    rqe_index: DFF<Bits<32>>,
    // the decision and what it still has to do
    d_kind: DFF<Bits<2>>,
    d_last: DFF<Bit>,
    d_len_err: DFF<Bit>,
    d_rnr: DFF<Bit>,
    d_wr_end: DFF<Bits<32>>,
    mr_step: DFF<Bits<3>>,
    mr_key: DFF<Bits<32>>,
    mr_va: DFF<Bits<64>>,
    mr_len: DFF<Bits<32>>,
    mr_need: DFF<Bits<4>>,
    iova: DFF<Bits<64>>,
    syndrome: DFF<Bits<8>>,
    ack_psn: DFF<Bits<24>>,
    do_ack: DFF<Bit>,
    do_cqe: DFF<Bit>,
    do_job: DFF<Bits<2>>,
    do_err: DFF<Bit>,
    cqe_status: DFF<Bits<8>>,
    cqe_opcode: DFF<Bits<8>>,
    cqe_byte_len: DFF<Bits<32>>,
    cqe_imm: DFF<Bits<32>>,
    cqe_flags: DFF<Bits<8>>,
    qpn: DFF<Bits<QA>>,
    /// The RQ's WQE reader: up to 16 (`BUF`) posted receive WQEs read at once and kept.
    rqf: RqRingFetch<QA>,
    /// The fetch's QP and index are the request's (`qpn`, `rq_ci`), kept here.
    unused_rqf_qpn: Signal<Local, Bits<QA>>,
    unused_rqf_index: Signal<Local, Bits<32>>,
    unused_rqf_err_qpn: Signal<Local, Bits<QA>>,
    unused_rqf_err_index: Signal<Local, Bits<32>>,
    /// A receive WQE's bytes past its SGE and between `num_sge` and the SGE.
    unused_rqe_hi: Signal<Local, Bits<256>>,
    unused_rqe_mid: Signal<Local, Bits<56>>,
    // DMA error reports waiting
    rerr_pend: DFF<Bit>,
    rerr_qpn: DFF<Bits<QA>>,
    rerr_psn: DFF<Bits<24>>,
    aerr_pend: DFF<Bit>,
    aerr_qpn: DFF<Bits<QA>>,
    aerr_psn: DFF<Bits<24>>,
    db_pi: DFF<Bits<32>>,
    fl_pend: DFF<Bit>,
    fl_qpn: DFF<Bits<QA>>,
    // the context reads: which requests were taken, which answers are in
    acc_c: DFF<Bit>,
    acc_a: DFF<Bit>,
    acc_s: DFF<Bit>,
    got_c: DFF<Bit>,
    got_a: DFF<Bit>,
    got_s: DFF<Bit>,
    // kept from earlier reads: the registers hold the last packet's QP (its contexts as
    // written back), and the IOVA of a WRITE message's whole checked range
    cmd_run: DFF<Bit>,
    fw_valid: DFF<Bit>,
    stale: DFF<Bit>,
    mc_valid: DFF<Bit>,
    mc_qpn: DFF<Bits<QA>>,
    mc_key: DFF<Bits<32>>,
    mc_va: DFF<Bits<64>>,
    mc_len: DFF<Bits<32>>,
    mc_iova: DFF<Bits<64>>,

    k_idle: Constant<Bits<5>>,
    k_rd: Constant<Bits<5>>,
    k_decide: Constant<Bits<5>>,
    k_mr_req: Constant<Bits<5>>,
    k_mr_res: Constant<Bits<5>>,
    k_rq_req: Constant<Bits<5>>,
    k_rq_resp: Constant<Bits<5>>,
    k_send_chk: Constant<Bits<5>>,
    k_send_done: Constant<Bits<5>>,
    k_write_chk: Constant<Bits<5>>,
    k_write_done: Constant<Bits<5>>,
    k_wr_req: Constant<Bits<5>>,
    k_wr_data: Constant<Bits<5>>,
    k_wr_status: Constant<Bits<5>>,
    k_f_cqe: Constant<Bits<5>>,
    k_f_ack: Constant<Bits<5>>,
    k_f_job: Constant<Bits<5>>,
    k_f_wqps: Constant<Bits<5>>,
    k_f_drain: Constant<Bits<5>>,
    k_fl_ip: Constant<Bits<5>>,
    k_fl_chk: Constant<Bits<5>>,
    k_fl_rq: Constant<Bits<5>>,
    k_fl_resp: Constant<Bits<5>>,
    k_fl_cqe: Constant<Bits<5>>,
    k_fl_err: Constant<Bits<5>>,
    k_inv: Constant<Bits<5>>,
    k_mode_pkt: Constant<Bits<3>>,
    k_mode_db: Constant<Bits<3>>,
    k_mode_rerr: Constant<Bits<3>>,
    k_mode_aerr: Constant<Bits<3>>,
    k_mode_flush: Constant<Bits<3>>,
    k_st_flush: Constant<Bits<8>>,
    k_qps_err: Constant<Bits<3>>,
    k_mr_wr_whole: Constant<Bits<3>>,
    k_mr_wr_pkt: Constant<Bits<3>>,
    k_mr_send: Constant<Bits<3>>,
    k_mr_read: Constant<Bits<3>>,
    k_mr_atomic: Constant<Bits<3>>,
    k_mr_dup_read: Constant<Bits<3>>,
    k_job_none: Constant<Bits<2>>,
    k_job_read: Constant<Bits<2>>,
    k_job_atomic: Constant<Bits<2>>,
    k_job_replay: Constant<Bits<2>>,
    k_act_drop: Constant<Bits<3>>,
    k_act_dup: Constant<Bits<3>>,
    k_act_ahead: Constant<Bits<3>>,
    k_act_invalid: Constant<Bits<3>>,
    k_dup_ack: Constant<Bits<2>>,
    k_dup_read: Constant<Bits<2>>,
    k_dup_atomic: Constant<Bits<2>>,
    k_kind_send: Constant<Bits<2>>,
    k_kind_write: Constant<Bits<2>>,
    k_kind_read: Constant<Bits<2>>,
    k_prog_idle: Constant<Bits<2>>,
    k_prog_send: Constant<Bits<2>>,
    k_prog_write: Constant<Bits<2>>,
    k_syn_ack: Constant<Bits<8>>,
    k_syn_rnr: Constant<Bits<8>>,
    k_syn_nak_seq: Constant<Bits<8>>,
    k_syn_nak_inv: Constant<Bits<8>>,
    k_syn_nak_acc: Constant<Bits<8>>,
    k_syn_nak_op: Constant<Bits<8>>,
    k_op_ack: Constant<Bits<8>>,
    k_op_cmp_swap: Constant<Bits<8>>,
    k_wc_recv: Constant<Bits<8>>,
    k_wc_recv_imm: Constant<Bits<8>>,
    k_st_success: Constant<Bits<8>>,
    k_st_loc_len: Constant<Bits<8>>,
    k_st_loc_prot: Constant<Bits<8>>,
    k_flag_imm: Constant<Bits<8>>,
    k_flag_inv: Constant<Bits<8>>,
    k_need_local_write: Constant<Bits<4>>,
    k_need_remote_write: Constant<Bits<4>>,
    k_need_remote_read: Constant<Bits<4>>,
    k_need_remote_atomic: Constant<Bits<4>>,
    k_one24: Constant<Bits<24>>,
    k_one32: Constant<Bits<32>>,
    k_zero1: Constant<Bits<1>>,
    k_one1: Constant<Bits<1>>,
    k_zero8: Constant<Bits<8>>,
    k_zero16: Constant<Bits<16>>,
    k_zero24: Constant<Bits<24>>,
    k_zero32: Constant<Bits<32>>,
    k_zero64: Constant<Bits<64>>,
    k_eight32: Constant<Bits<32>>,
    /// The RNR NAK's kind, the top three bits of its syndrome (the timer is the QP's).
    k_syn_kind_rnr: Constant<Bits<3>>,
    k_qa24: Constant<Bits<24>>,

    qp_fits: Signal<Local, Bit>,
    /// The QP's packet size as a shift and a mask.
    mtu_shift: MtuShift,
    read_pkts: Signal<Local, Bits<32>>,
    send_rem: Signal<Local, Bits<32>>,
    send_end: Signal<Local, Bits<32>>,
    rqe_len: Signal<Local, Bits<32>>,
    job_taken: Signal<Local, Bit>,
    unused_pkts: Signal<Local, Bits<8>>,
    ctl_mode: Signal<Local, Bit>,
    wchk_go: Signal<Local, Bit>,
    wc_len_err: Signal<Local, Bit>,
    wc_rnr: Signal<Local, Bit>,
    wd_go: Signal<Local, Bit>,
    sd_go: Signal<Local, Bit>,
    wr_ok: Signal<Local, Bit>,
    after_job: Signal<Local, Bits<5>>,
    after_ack: Signal<Local, Bits<5>>,
    after_cqe: Signal<Local, Bits<5>>,
    idle_go: Signal<Local, Bit>,
    ctx_stale: Signal<Local, Bit>,
    fw_set: Signal<Local, Bit>,
    fw_hit: Signal<Local, Bit>,
    mc_hit: Signal<Local, Bit>,
}

impl<const QA: usize> Default for Responder<QA> {
    fn default() -> Self {
        assert!((1..=24).contains(&QA), "Responder<{QA}>: a QPN has 24 bits");
        let syn = |s: Syndrome| Constant::new(u64::from(s.code()).to_bits());
        Responder {
            clock: Default::default(),
            reset: Default::default(),
            local_mac: Default::default(),
            local_ip: Default::default(),
            hdr: Default::default(),
            s_atomic_busy: Default::default(),
            pay: Default::default(),
            rq_db: Default::default(),
            s_read_err_valid: Default::default(),
            s_read_err_qpn: Default::default(),
            s_read_err_psn: Default::default(),
            s_atomic_err_valid: Default::default(),
            s_atomic_err_qpn: Default::default(),
            s_atomic_err_psn: Default::default(),
            qpc_rd: Default::default(),
            qpa_rd: Default::default(),
            qps_rd: Default::default(),
            qps_wr: Default::default(),
            mr: Default::default(),
            dma_rd: Default::default(),
            dma_wr: Default::default(),
            ack_pkt: Default::default(),
            m_read_job_valid: Default::default(),
            m_read_job_ready: Default::default(),
            read_hdr: Default::default(),
            read_args: Default::default(),
            m_atomic_job_valid: Default::default(),
            m_atomic_job_ready: Default::default(),
            atomic_hdr: Default::default(),
            atomic_args: Default::default(),
            m_replay_valid: Default::default(),
            m_replay_ready: Default::default(),
            replay_hdr: Default::default(),
            cqe: Default::default(),
            qp_err: Default::default(),
            inv: Default::default(),
            flush: Default::default(),
            cnt: Default::default(),
            s_cmd_start: Default::default(),
            s_cmd_done: Default::default(),
            s_tbl_wr: Default::default(),
            chk: Default::default(),
            qpc_u: Default::default(),
            qpa_u: Default::default(),
            qps_u: Default::default(),
            qps_p: Default::default(),
            rec: Default::default(),
            len32: Default::default(),
            off64: Default::default(),
            rnr_syn: Default::default(),
            qp24: Default::default(),
            state: Default::default(),
            mode: Default::default(),
            opcode: Default::default(),
            src_ip: Default::default(),
            dest_qp: Default::default(),
            ack_req: Default::default(),
            psn: Default::default(),
            reth_va: Default::default(),
            reth_rkey: Default::default(),
            reth_len: Default::default(),
            swap: Default::default(),
            compare: Default::default(),
            imm: Default::default(),
            ieth: Default::default(),
            pay_len: Default::default(),
            has_reth: Default::default(),
            has_atomic: Default::default(),
            has_imm: Default::default(),
            has_ieth: Default::default(),
            pay_left: Default::default(),
            present: Default::default(),
            pdn: Default::default(),
            recv_cqn: Default::default(),
            rq_log: Default::default(),
            rq_ring: Default::default(),
            qp_state: Default::default(),
            pmtu: Default::default(),
            dest_qpn: Default::default(),
            dest_mac: Default::default(),
            dest_ip: Default::default(),
            udp_sport: Default::default(),
            access: Default::default(),
            min_rnr: Default::default(),
            rq_pi: Default::default(),
            rq_ci: Default::default(),
            epsn: Default::default(),
            msn: Default::default(),
            nak_sent: Default::default(),
            prog: Default::default(),
            msg_va: Default::default(),
            msg_key: Default::default(),
            msg_len: Default::default(),
            msg_off: Default::default(),
            rqe_wr_id: Default::default(),
            rqe_index: Default::default(),
            d_kind: Default::default(),
            d_last: Default::default(),
            d_len_err: Default::default(),
            d_rnr: Default::default(),
            d_wr_end: Default::default(),
            mr_step: Default::default(),
            mr_key: Default::default(),
            mr_va: Default::default(),
            mr_len: Default::default(),
            mr_need: Default::default(),
            iova: Default::default(),
            syndrome: Default::default(),
            ack_psn: Default::default(),
            do_ack: Default::default(),
            do_cqe: Default::default(),
            do_job: Default::default(),
            do_err: Default::default(),
            cqe_status: Default::default(),
            cqe_opcode: Default::default(),
            cqe_byte_len: Default::default(),
            cqe_imm: Default::default(),
            cqe_flags: Default::default(),
            qpn: Default::default(),
            rqf: RqRingFetch::new(false),
            unused_rqf_qpn: Default::default(),
            unused_rqf_index: Default::default(),
            unused_rqf_err_qpn: Default::default(),
            unused_rqf_err_index: Default::default(),
            unused_rqe_hi: Default::default(),
            unused_rqe_mid: Default::default(),
            rerr_pend: Default::default(),
            rerr_qpn: Default::default(),
            rerr_psn: Default::default(),
            aerr_pend: Default::default(),
            aerr_qpn: Default::default(),
            aerr_psn: Default::default(),
            db_pi: Default::default(),
            fl_pend: Default::default(),
            fl_qpn: Default::default(),
            acc_c: Default::default(),
            acc_a: Default::default(),
            acc_s: Default::default(),
            got_c: Default::default(),
            got_a: Default::default(),
            got_s: Default::default(),
            cmd_run: Default::default(),
            fw_valid: Default::default(),
            stale: Default::default(),
            mc_valid: Default::default(),
            mc_qpn: Default::default(),
            mc_key: Default::default(),
            mc_va: Default::default(),
            mc_len: Default::default(),
            mc_iova: Default::default(),
            k_idle: Constant::new(S_IDLE.to_bits()),
            k_rd: Constant::new(S_RD.to_bits()),
            k_decide: Constant::new(S_DECIDE.to_bits()),
            k_mr_req: Constant::new(S_MR_REQ.to_bits()),
            k_mr_res: Constant::new(S_MR_RES.to_bits()),
            k_rq_req: Constant::new(S_RQ_REQ.to_bits()),
            k_rq_resp: Constant::new(S_RQ_RESP.to_bits()),
            k_send_chk: Constant::new(S_SEND_CHK.to_bits()),
            k_send_done: Constant::new(S_SEND_DONE.to_bits()),
            k_write_chk: Constant::new(S_WRITE_CHK.to_bits()),
            k_write_done: Constant::new(S_WRITE_DONE.to_bits()),
            k_wr_req: Constant::new(S_WR_REQ.to_bits()),
            k_wr_data: Constant::new(S_WR_DATA.to_bits()),
            k_wr_status: Constant::new(S_WR_STATUS.to_bits()),
            k_f_cqe: Constant::new(S_F_CQE.to_bits()),
            k_f_ack: Constant::new(S_F_ACK.to_bits()),
            k_f_job: Constant::new(S_F_JOB.to_bits()),
            k_f_wqps: Constant::new(S_F_WQPS.to_bits()),
            k_f_drain: Constant::new(S_F_DRAIN.to_bits()),
            k_fl_ip: Constant::new(S_FL_IP.to_bits()),
            k_fl_chk: Constant::new(S_FL_CHK.to_bits()),
            k_fl_rq: Constant::new(S_FL_RQ.to_bits()),
            k_fl_resp: Constant::new(S_FL_RESP.to_bits()),
            k_fl_cqe: Constant::new(S_FL_CQE.to_bits()),
            k_fl_err: Constant::new(S_FL_ERR.to_bits()),
            k_inv: Constant::new(S_INV.to_bits()),
            k_mode_pkt: Constant::new(0u64.to_bits()),
            k_mode_db: Constant::new(1u64.to_bits()),
            k_mode_rerr: Constant::new(2u64.to_bits()),
            k_mode_aerr: Constant::new(3u64.to_bits()),
            k_mode_flush: Constant::new(4u64.to_bits()),
            k_st_flush: Constant::new(u64::from(u8::from(WcStatus::WrFlushErr)).to_bits()),
            k_qps_err: Constant::new(u64::from(u8::from(QpState::Err)).to_bits()),
            k_mr_wr_whole: Constant::new(MR_WRITE_WHOLE.to_bits()),
            k_mr_wr_pkt: Constant::new(MR_WRITE_PKT.to_bits()),
            k_mr_send: Constant::new(MR_SEND_PKT.to_bits()),
            k_mr_read: Constant::new(MR_READ.to_bits()),
            k_mr_atomic: Constant::new(MR_ATOMIC.to_bits()),
            k_mr_dup_read: Constant::new(MR_DUP_READ.to_bits()),
            k_job_none: Constant::new(0u64.to_bits()),
            k_job_read: Constant::new(1u64.to_bits()),
            k_job_atomic: Constant::new(2u64.to_bits()),
            k_job_replay: Constant::new(3u64.to_bits()),
            k_act_drop: Constant::new(ACT_DROP.to_bits()),
            k_act_dup: Constant::new(ACT_DUP.to_bits()),
            k_act_ahead: Constant::new(ACT_AHEAD.to_bits()),
            k_act_invalid: Constant::new(ACT_INVALID.to_bits()),
            k_dup_ack: Constant::new(DUP_ACK.to_bits()),
            k_dup_read: Constant::new(DUP_READ.to_bits()),
            k_dup_atomic: Constant::new(DUP_ATOMIC.to_bits()),
            k_kind_send: Constant::new(KIND_SEND.to_bits()),
            k_kind_write: Constant::new(KIND_WRITE.to_bits()),
            k_kind_read: Constant::new(KIND_READ.to_bits()),
            k_prog_idle: Constant::new(PROG_IDLE.to_bits()),
            k_prog_send: Constant::new(PROG_SEND.to_bits()),
            k_prog_write: Constant::new(PROG_WRITE.to_bits()),
            k_syn_ack: syn(Syndrome::ACK),
            k_syn_rnr: syn(Syndrome::RnrNak { timer: 0 }),
            k_syn_nak_seq: syn(Syndrome::Nak(NakCode::PsnSequenceError)),
            k_syn_nak_inv: syn(Syndrome::Nak(NakCode::InvalidRequest)),
            k_syn_nak_acc: syn(Syndrome::Nak(NakCode::RemoteAccessError)),
            k_syn_nak_op: syn(Syndrome::Nak(NakCode::RemoteOperationalError)),
            k_op_ack: Constant::new(u64::from(u8::from(Opcode::Acknowledge)).to_bits()),
            k_op_cmp_swap: Constant::new(u64::from(u8::from(Opcode::CompareSwap)).to_bits()),
            k_wc_recv: Constant::new(u64::from(WcOpcode::Recv.code()).to_bits()),
            k_wc_recv_imm: Constant::new(u64::from(WcOpcode::RecvRdmaWithImm.code()).to_bits()),
            k_st_success: Constant::new(u64::from(WcStatus::Success.code()).to_bits()),
            k_st_loc_len: Constant::new(u64::from(WcStatus::LocLenErr.code()).to_bits()),
            k_st_loc_prot: Constant::new(u64::from(WcStatus::LocProtErr.code()).to_bits()),
            k_flag_imm: Constant::new(u64::from(wc_flags::WITH_IMM).to_bits()),
            k_flag_inv: Constant::new(u64::from(wc_flags::WITH_INV).to_bits()),
            k_need_local_write: Constant::new(u64::from(access::LOCAL_WRITE).to_bits()),
            k_need_remote_write: Constant::new(u64::from(access::REMOTE_WRITE).to_bits()),
            k_need_remote_read: Constant::new(u64::from(access::REMOTE_READ).to_bits()),
            k_need_remote_atomic: Constant::new(u64::from(access::REMOTE_ATOMIC).to_bits()),
            k_one24: Constant::new(1u64.to_bits()),
            k_one32: Constant::new(1u64.to_bits()),
            k_zero1: Constant::new(0u64.to_bits()),
            k_one1: Constant::new(1u64.to_bits()),
            k_zero8: Constant::new(0u64.to_bits()),
            k_zero16: Constant::new(0u64.to_bits()),
            k_zero24: Constant::new(0u64.to_bits()),
            k_zero32: Constant::new(0u64.to_bits()),
            k_zero64: Constant::new(0u64.to_bits()),
            k_eight32: Constant::new(8u64.to_bits()),
            k_syn_kind_rnr: Constant::new(
                u64::from(Syndrome::RnrNak { timer: 0 }.kind()).to_bits(),
            ),
            k_qa24: Constant::new((QA as u64).to_bits()),
            qp_fits: Default::default(),
            mtu_shift: Default::default(),
            read_pkts: Default::default(),
            send_rem: Default::default(),
            send_end: Default::default(),
            rqe_len: Default::default(),
            job_taken: Default::default(),
            unused_pkts: Default::default(),
            ctl_mode: Default::default(),
            wchk_go: Default::default(),
            wc_len_err: Default::default(),
            wc_rnr: Default::default(),
            wd_go: Default::default(),
            sd_go: Default::default(),
            wr_ok: Default::default(),
            after_job: Default::default(),
            after_ack: Default::default(),
            after_cqe: Default::default(),
            idle_go: Default::default(),
            ctx_stale: Default::default(),
            fw_set: Default::default(),
            fw_hit: Default::default(),
            mc_hit: Default::default(),
        }
    }
}

impl<const QA: usize> Logic for Responder<QA> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            state,
            mode,
            opcode,
            src_ip,
            dest_qp,
            ack_req,
            psn,
            reth_va,
            reth_rkey,
            reth_len,
            swap,
            compare,
            imm,
            ieth,
            pay_len,
            has_reth,
            has_atomic,
            has_imm,
            has_ieth,
            pay_left,
            present,
            pdn,
            recv_cqn,
            rq_log,
            rq_ring,
            qp_state,
            pmtu,
            dest_qpn,
            dest_mac,
            dest_ip,
            udp_sport,
            access,
            min_rnr,
            rq_pi,
            rq_ci,
            epsn,
            msn,
            nak_sent,
            prog,
            msg_va,
            msg_key,
            msg_len,
            msg_off,
            rqe_wr_id,
            rqe_index,
            d_kind,
            d_last,
            d_len_err,
            d_rnr,
            d_wr_end,
            mr_step,
            mr_key,
            mr_va,
            mr_len,
            mr_need,
            iova,
            syndrome,
            ack_psn,
            do_ack,
            do_cqe,
            do_job,
            do_err,
            cqe_status,
            cqe_opcode,
            cqe_byte_len,
            cqe_imm,
            cqe_flags,
            rerr_pend,
            rerr_qpn,
            rerr_psn,
            aerr_pend,
            aerr_qpn,
            aerr_psn,
            db_pi,
            fl_pend,
            fl_qpn,
            acc_c,
            acc_a,
            acc_s,
            got_c,
            got_a,
            got_s,
            cmd_run,
            fw_valid,
            stale,
            mc_valid,
            mc_qpn,
            mc_key,
            mc_va,
            mc_len,
            mc_iova,
            qpn
        );

        // ---- the decision, on the registered header and context ----
        self.chk.s_opcode.next = self.opcode.q.val();
        self.chk.s_psn.next = self.psn.q.val();
        self.chk.s_ack_req.next = self.ack_req.q.val();
        self.chk.s_has_reth.next = self.has_reth.q.val();
        self.chk.s_reth_len.next = self.reth_len.q.val();
        self.chk.s_has_atomic.next = self.has_atomic.q.val();
        self.chk.s_atomic_va_lo.next = self.reth_va.q.val().get_bits::<3>(0);
        self.chk.s_has_imm.next = self.has_imm.q.val();
        self.chk.s_payload_len.next = self.pay_len.q.val();
        self.chk.s_state.next = self.qp_state.q.val();
        self.chk.s_pmtu.next = self.pmtu.q.val();
        self.chk.s_access.next = self.access.q.val();
        self.chk.s_epsn.next = self.epsn.q.val();
        self.chk.s_nak_sent.next = self.nak_sent.q.val() != self.k_zero1.val();
        self.chk.s_rq_pi.next = self.rq_pi.q.val();
        self.chk.s_rq_ci.next = self.rq_ci.q.val();
        self.chk.s_prog.next = self.prog.q.val();
        self.chk.s_wr_total.next = self.msg_len.q.val();
        self.chk.s_wr_offset.next = self.msg_off.q.val();

        // ---- contexts: unpack what is read, pack what is written ----
        self.qpc_u.x.next = self.qpc_rd.resp_data.val();
        self.qpa_u.x.next = self.qpa_rd.resp_data.val();
        self.qps_u.x.next = self.qps_rd.resp_data.val();
        self.qps_p.rq_pi.next = self.rq_pi.q.val();
        self.qps_p.rq_ci.next = self.rq_ci.q.val();
        self.qps_p.epsn.next = self.epsn.q.val();
        self.qps_p.msn.next = self.msn.q.val();
        self.qps_p.nak_sent.next = self.nak_sent.q.val();
        self.qps_p.prog.next = self.prog.q.val();
        self.qps_p.msg_va.next = self.msg_va.q.val();
        self.qps_p.msg_key.next = self.msg_key.q.val();
        self.qps_p.msg_len.next = self.msg_len.q.val();
        self.qps_p.msg_off.next = self.msg_off.q.val();
        self.qps_p.rqe_wr_id.next = self.rqe_wr_id.q.val();
        self.qps_p.rqe_index.next = self.rqe_index.q.val();
        self.qps_wr.data.next = self.qps_p.y.val();
        self.qps_wr.addr.next = self.qpn.q.val();
        self.qpc_rd.req_addr.next = self.qpn.q.val();
        self.qpa_rd.req_addr.next = self.qpn.q.val();
        self.qps_rd.req_addr.next = self.qpn.q.val();
        self.qp24.x.next = self.qpn.q.val();

        // ---- the ACK/NAK record ----
        self.rec.dst_mac.next = self.dest_mac.q.val();
        self.rec.src_mac.next = self.local_mac.val();
        self.rec.src_ip.next = self.local_ip.val();
        self.rec.dst_ip.next = self.dest_ip.q.val();
        self.rec.udp_sport.next = self.udp_sport.q.val();
        self.rec.opcode.next = self.k_op_ack.val();
        self.rec.se.next = self.k_zero1.val();
        self.rec.ack_req.next = self.k_zero1.val();
        self.rec.dest_qp.next = self.dest_qpn.q.val();
        self.rec.psn.next = self.ack_psn.q.val();
        self.rec.va.next = self.k_zero64.val();
        self.rec.rkey.next = self.k_zero32.val();
        self.rec.dma_len.next = self.k_zero32.val();
        self.rec.swap_add.next = self.k_zero64.val();
        self.rec.compare.next = self.k_zero64.val();
        self.rec.orig.next = self.k_zero64.val();
        self.rec.syndrome.next = self.syndrome.q.val();
        self.rec.msn.next = self.msn.q.val();
        self.rec.imm.next = self.k_zero32.val();
        self.rec.payload_len.next = self.k_zero16.val();
        self.rec.src_qp.next = self.qp24.y.val();
        self.ack_pkt.data.next = self.rec.y.val();

        // ---- widths and derived numbers ----
        self.len32.hi.next = self.k_zero16.val();
        self.len32.lo.next = self.pay_len.q.val();
        self.off64.hi.next = self.k_zero32.val();
        self.off64.lo.next = self.msg_off.q.val();
        self.qp_fits.next = (self.dest_qp.q.val() >> self.k_qa24.val()) == self.k_zero24.val();
        // READ: packets = max(1, ceil(len / pmtu)), pmtu = 2^(code + 7)
        self.mtu_shift.mtu.next = self.pmtu.q.val();
        self.read_pkts.next = self.reth_len.q.val() >> self.mtu_shift.shift.val();
        if (self.reth_len.q.val() & self.mtu_shift.mask.val()) != self.k_zero32.val() {
            self.read_pkts.next =
                (self.reth_len.q.val() >> self.mtu_shift.shift.val()) + self.k_one32.val();
        }
        if self.reth_len.q.val() == self.k_zero32.val() {
            self.read_pkts.next = self.k_one32.val();
        }
        self.unused_pkts.next = self.read_pkts.val().get_bits::<8>(24);
        self.rnr_syn.hi.next = self.k_syn_kind_rnr.val();
        self.rnr_syn.lo.next = self.min_rnr.q.val();
        self.send_rem.next = self.msg_len.q.val() - self.msg_off.q.val();
        self.send_end.next = self.msg_off.q.val() + self.len32.y.val();
        self.rqe_len.next = self.rqf.m_ent_beat.val().get_bits::<32>(192);
        if self.rqf.m_ent_beat.val().get_bits::<8>(64) == self.k_zero8.val() {
            self.rqe_len.next = self.k_zero32.val();
        }

        // ---- outputs' defaults ----
        self.hdr.ready.next = false;
        self.rq_db.ready.next = false;
        self.pay.tready.next = false;
        self.qpc_rd.req_valid.next = (self.state.q.val() == self.k_rd.val()) & !self.acc_c.q.val();
        self.qpa_rd.req_valid.next = (self.state.q.val() == self.k_rd.val()) & !self.acc_a.q.val();
        self.qps_rd.req_valid.next = (self.state.q.val() == self.k_rd.val()) & !self.acc_s.q.val();
        self.qps_wr.valid.next = self.state.q.val() == self.k_f_wqps.val();
        self.mr.req_valid.next = self.state.q.val() == self.k_mr_req.val();
        self.mr.req_key.next = self.mr_key.q.val();
        self.mr.req_pdn.next = self.pdn.q.val();
        self.mr.req_va.next = self.mr_va.q.val();
        self.mr.req_len.next = self.mr_len.q.val();
        self.mr.req_need.next = self.mr_need.q.val();
        self.mr.res_ready.next = self.state.q.val() == self.k_mr_res.val();
        // The RQ WQE at rq_ci (a packet's receive, or the flush's next one) through `rqf`.
        self.rqf.clock.next = self.clock.val();
        self.rqf.reset.next = self.reset.val();
        self.rqf.s_req_valid.next = (self.state.q.val() == self.k_rq_req.val())
            | (self.state.q.val() == self.k_fl_rq.val());
        self.rqf.s_req_qpn.next = self.qpn.q.val();
        self.rqf.s_req_ring.next = self.rq_ring.q.val();
        self.rqf.s_req_log.next = self.rq_log.q.val();
        self.rqf.s_req_index.next = self.rq_ci.q.val();
        self.rqf.s_req_posted.next = self.rq_pi.q.val() - self.rq_ci.q.val();
        self.rqf.m_ent_ready.next = (self.state.q.val() == self.k_rq_resp.val())
            | (self.state.q.val() == self.k_fl_resp.val());
        self.unused_rqf_qpn.next = self.rqf.m_ent_qpn.val();
        self.unused_rqf_index.next = self.rqf.m_ent_index.val();
        self.unused_rqf_err_qpn.next = self.rqf.m_err_qpn.val();
        self.unused_rqf_err_index.next = self.rqf.m_err_index.val();
        self.unused_rqe_hi.next = self.rqf.m_ent_beat.val().get_bits::<256>(256);
        self.unused_rqe_mid.next = self.rqf.m_ent_beat.val().get_bits::<56>(72);
        DmaRdClient::link(&mut self.dma_rd, &mut self.rqf.dma_rd);
        self.dma_wr.req_valid.next = self.state.q.val() == self.k_wr_req.val();
        self.dma_wr.req_addr.next = self.iova.q.val();
        self.dma_wr.req_len.next = self.pay_len.q.val();
        self.dma_wr.data_valid.next =
            (self.state.q.val() == self.k_wr_data.val()) & self.pay.tvalid.val();
        self.dma_wr.data.next = self.pay.tdata.val();
        self.dma_wr.data_keep.next = self.pay.tkeep.val();
        self.dma_wr.data_last.next = self.pay.tlast.val();
        self.ack_pkt.valid.next = self.state.q.val() == self.k_f_ack.val();
        self.m_read_job_valid.next = (self.state.q.val() == self.k_f_job.val())
            & (self.do_job.q.val() == self.k_job_read.val());
        self.m_atomic_job_valid.next = (self.state.q.val() == self.k_f_job.val())
            & (self.do_job.q.val() == self.k_job_atomic.val());
        self.m_replay_valid.next = (self.state.q.val() == self.k_f_job.val())
            & (self.do_job.q.val() == self.k_job_replay.val());
        self.read_hdr.dst_mac.next = self.dest_mac.q.val();
        self.read_hdr.src_mac.next = self.local_mac.val();
        self.read_hdr.src_ip.next = self.local_ip.val();
        self.read_hdr.dst_ip.next = self.dest_ip.q.val();
        self.read_hdr.udp_sport.next = self.udp_sport.q.val();
        self.read_hdr.dest_qp.next = self.dest_qpn.q.val();
        self.read_hdr.qpn.next = self.qpn.q.val();
        self.read_hdr.psn.next = self.psn.q.val();
        self.read_hdr.msn.next = self.msn.q.val();
        self.read_args.iova.next = self.iova.q.val();
        self.read_args.len.next = self.reth_len.q.val();
        self.read_args.pmtu.next = self.pmtu.q.val();
        self.atomic_hdr.dst_mac.next = self.dest_mac.q.val();
        self.atomic_hdr.src_mac.next = self.local_mac.val();
        self.atomic_hdr.src_ip.next = self.local_ip.val();
        self.atomic_hdr.dst_ip.next = self.dest_ip.q.val();
        self.atomic_hdr.udp_sport.next = self.udp_sport.q.val();
        self.atomic_hdr.dest_qp.next = self.dest_qpn.q.val();
        self.atomic_hdr.qpn.next = self.qpn.q.val();
        self.atomic_hdr.psn.next = self.psn.q.val();
        self.atomic_hdr.msn.next = self.msn.q.val();
        self.atomic_args.iova.next = self.iova.q.val();
        self.atomic_args.compare_swap.next = self.opcode.q.val() == self.k_op_cmp_swap.val();
        self.atomic_args.swap_add.next = self.swap.q.val();
        self.atomic_args.compare.next = self.compare.q.val();
        self.replay_hdr.dst_mac.next = self.dest_mac.q.val();
        self.replay_hdr.src_mac.next = self.local_mac.val();
        self.replay_hdr.src_ip.next = self.local_ip.val();
        self.replay_hdr.dst_ip.next = self.dest_ip.q.val();
        self.replay_hdr.udp_sport.next = self.udp_sport.q.val();
        self.replay_hdr.dest_qp.next = self.dest_qpn.q.val();
        self.replay_hdr.qpn.next = self.qpn.q.val();
        self.replay_hdr.psn.next = self.psn.q.val();
        self.replay_hdr.msn.next = self.msn.q.val();
        self.cqe.valid.next = (self.state.q.val() == self.k_f_cqe.val())
            | (self.state.q.val() == self.k_fl_cqe.val());
        self.cqe.cqn.next = self.recv_cqn.q.val();
        self.cqe.wr_id.next = self.rqe_wr_id.q.val();
        self.cqe.byte_len.next = self.cqe_byte_len.q.val();
        self.cqe.imm.next = self.cqe_imm.q.val();
        self.cqe.qp_num.next = self.qp24.y.val();
        self.cqe.src_qp.next = self.dest_qpn.q.val();
        self.cqe.wqe_index.next = self.rqe_index.q.val();
        self.cqe.opcode.next = self.cqe_opcode.q.val();
        self.cqe.status.next = self.cqe_status.q.val();
        self.cqe.wc_flags.next = self.cqe_flags.q.val();
        self.cqe.vendor_err.next = self.k_zero8.val();
        if (self.state.q.val() == self.k_fl_ip.val()) | (self.state.q.val() == self.k_fl_cqe.val())
        {
            // WR_FLUSH_ERR of rqe_wr_id / rqe_index (the model's `recv_cqe`)
            self.cqe.byte_len.next = self.k_zero32.val();
            self.cqe.imm.next = self.k_zero32.val();
            self.cqe.opcode.next = self.k_wc_recv.val();
            self.cqe.status.next = self.k_st_flush.val();
            self.cqe.wc_flags.next = self.k_zero8.val();
        }
        self.qp_err.valid.next = self.state.q.val() == self.k_fl_err.val();
        self.flush.ready.next = !self.fl_pend.q.val();
        self.inv.valid.next = self.state.q.val() == self.k_inv.val();
        self.inv.key.next = self.ieth.q.val();
        self.inv.pdn.next = self.pdn.q.val();
        self.job_taken.next = false;
        self.qp_err.qpn.next = self.qpn.q.val();
        self.cnt.qp_valid.next = self.present.q.val() & self.qp_fits.val();
        self.cnt.qpn.next = self.qpn.q.val();
        self.cnt.duplicates.next = false;
        self.cnt.psn_seq_drops.next = false;
        self.cnt.naks_sent.next = false;
        self.cnt.rnr_naks_sent.next = false;
        self.cnt.unknown_qp_drops.next = false;
        self.cnt.dma_faults.next = false;

        // ---- DMA error reports: latched until served ----
        if self.s_read_err_valid.val() & !self.rerr_pend.q.val() {
            self.rerr_pend.d.next = true;
            self.rerr_qpn.d.next = self.s_read_err_qpn.val();
            self.rerr_psn.d.next = self.s_read_err_psn.val();
        }
        if self.s_atomic_err_valid.val() & !self.aerr_pend.q.val() {
            self.aerr_pend.d.next = true;
            self.aerr_qpn.d.next = self.s_atomic_err_qpn.val();
            self.aerr_psn.d.next = self.s_atomic_err_psn.val();
        }
        if self.flush.valid.val() & !self.fl_pend.q.val() {
            self.fl_pend.d.next = true;
            self.fl_qpn.d.next = self.flush.qpn.val();
        }

        // ---- IDLE (or the cycle a packet's context write is taken): an error report,
        // else a doorbell, else a request ----
        self.idle_go.next = (self.state.q.val() == self.k_idle.val())
            | ((self.state.q.val() == self.k_f_wqps.val())
                & self.qps_wr.ready.val()
                & !self.pay_left.q.val());
        // A table may be written in this cycle: a command from its start to its done, or
        // another write.
        self.cmd_run.d.next =
            (self.cmd_run.q.val() | self.s_cmd_start.val()) & !self.s_cmd_done.val();
        self.ctx_stale.next = self.s_cmd_start.val() | self.cmd_run.q.val() | self.s_tbl_wr.val();
        // A command may reset a QP and give it a new RQ: the WQEs kept are forgotten.
        self.rqf.s_inv.next = self.ctx_stale.val();
        // The registers hold a packet's QP as its `qps` write leaves it (no error, nothing
        // written by the command engine since its header was taken): the next packet of
        // the same QP goes straight to DECIDE.
        self.fw_set.next = (self.state.q.val() == self.k_f_wqps.val())
            & self.qps_wr.ready.val()
            & (self.mode.q.val() == self.k_mode_pkt.val())
            & !self.do_err.q.val()
            & self.present.q.val()
            & self.qp_fits.val()
            & !self.stale.q.val()
            & !self.ctx_stale.val();
        if self.fw_set.val() {
            self.fw_valid.d.next = true;
        }
        self.fw_hit.next = (self.fw_valid.q.val() | self.fw_set.val())
            & !self.ctx_stale.val()
            & (self.dest_qp.q.val() == self.hdr.dest_qp.val());
        // A WRITE message's whole range was checked (same QP, key, VA, length, no table
        // written since): a packet's IOVA is the range's plus the packet's offset.
        self.mc_hit.next = self.mc_valid.q.val()
            & !self.ctx_stale.val()
            & (self.mc_qpn.q.val() == self.qpn.q.val())
            & (self.mc_key.q.val() == self.msg_key.q.val())
            & (self.mc_va.q.val() == self.msg_va.q.val())
            & (self.mc_len.q.val() == self.msg_len.q.val());
        if self.idle_go.val() {
            self.state.d.next = self.k_idle.val();
            self.do_ack.d.next = false;
            self.do_cqe.d.next = false;
            self.do_job.d.next = self.k_job_none.val();
            self.do_err.d.next = false;
            self.pay_left.d.next = false;
            self.present.d.next = true;
            self.acc_c.d.next = false;
            self.acc_a.d.next = false;
            self.acc_s.d.next = false;
            self.got_c.d.next = false;
            self.got_a.d.next = false;
            self.got_s.d.next = false;
            if self.rerr_pend.q.val() {
                self.rerr_pend.d.next = false;
                self.fw_valid.d.next = false;
                self.stale.d.next = false;
                self.mode.d.next = self.k_mode_rerr.val();
                self.dest_qp.d.next = self.k_zero24.val();
                self.qpn.d.next = self.rerr_qpn.q.val();
                self.psn.d.next = self.rerr_psn.q.val();
                self.state.d.next = self.k_rd.val();
            } else if self.aerr_pend.q.val() {
                self.aerr_pend.d.next = false;
                self.fw_valid.d.next = false;
                self.stale.d.next = false;
                self.mode.d.next = self.k_mode_aerr.val();
                self.dest_qp.d.next = self.k_zero24.val();
                self.qpn.d.next = self.aerr_qpn.q.val();
                self.psn.d.next = self.aerr_psn.q.val();
                self.state.d.next = self.k_rd.val();
            } else if self.fl_pend.q.val() {
                self.fl_pend.d.next = false;
                self.fw_valid.d.next = false;
                self.stale.d.next = false;
                self.mode.d.next = self.k_mode_flush.val();
                self.dest_qp.d.next = self.k_zero24.val();
                self.qpn.d.next = self.fl_qpn.q.val();
                self.state.d.next = self.k_rd.val();
            } else if self.rq_db.valid.val() {
                self.rq_db.ready.next = true;
                self.fw_valid.d.next = false;
                self.stale.d.next = false;
                self.mode.d.next = self.k_mode_db.val();
                self.dest_qp.d.next = self.k_zero24.val();
                self.qpn.d.next = self.rq_db.qpn.val();
                self.db_pi.d.next = self.rq_db.pi.val();
                self.state.d.next = self.k_rd.val();
            } else if !self.s_atomic_busy.val() {
                self.hdr.ready.next = true;
                if self.hdr.valid.val() {
                    self.mode.d.next = self.k_mode_pkt.val();
                    self.opcode.d.next = self.hdr.opcode.val();
                    self.src_ip.d.next = self.hdr.src_ip.val();
                    self.dest_qp.d.next = self.hdr.dest_qp.val();
                    self.qpn.d.next = self.hdr.dest_qp.val().get_bits::<QA>(0);
                    self.ack_req.d.next = self.hdr.ack_req.val();
                    self.psn.d.next = self.hdr.psn.val();
                    self.reth_va.d.next = self.hdr.reth_va.val();
                    self.reth_rkey.d.next = self.hdr.reth_rkey.val();
                    self.reth_len.d.next = self.hdr.reth_dma_len.val();
                    self.swap.d.next = self.hdr.atomic_swap.val();
                    self.compare.d.next = self.hdr.atomic_compare.val();
                    self.imm.d.next = self.hdr.immdt.val();
                    self.ieth.d.next = self.hdr.ieth.val();
                    self.pay_len.d.next = self.hdr.payload_len.val();
                    self.pay_left.d.next = self.hdr.payload_len.val() != self.k_zero16.val();
                    self.has_reth.d.next = self.hdr.has_reth.val();
                    self.has_atomic.d.next = self.hdr.has_atomic_eth.val();
                    self.has_imm.d.next = self.hdr.has_immdt.val();
                    self.has_ieth.d.next = self.hdr.has_ieth.val();
                    self.fw_valid.d.next = false;
                    self.stale.d.next = false;
                    self.state.d.next = self.k_rd.val();
                    if self.fw_hit.val() {
                        self.state.d.next = self.k_decide.val();
                    }
                }
            }
        }

        // ---- context reads: qpc, qpa, qps requested together, each answer taken when it
        // comes; DECIDE once all three are in ----
        if self.state.q.val() == self.k_rd.val() {
            if self.qpc_rd.req_ready.val() {
                self.acc_c.d.next = true;
            }
            if self.qpa_rd.req_ready.val() {
                self.acc_a.d.next = true;
            }
            if self.qps_rd.req_ready.val() {
                self.acc_s.d.next = true;
            }
            if self.acc_c.q.val() & !self.got_c.q.val() & self.qpc_rd.resp_valid.val() {
                self.got_c.d.next = true;
                self.present.d.next = self.qpc_u.present.val() != self.k_zero1.val();
                self.pdn.d.next = self.qpc_u.pdn.val();
                self.recv_cqn.d.next = self.qpc_u.recv_cqn.val();
                self.rq_log.d.next = self.qpc_u.rq_log.val();
                self.rq_ring.d.next = self.qpc_u.rq_ring.val();
            }
            if self.acc_a.q.val() & !self.got_a.q.val() & self.qpa_rd.resp_valid.val() {
                self.got_a.d.next = true;
                self.qp_state.d.next = self.qpa_u.state.val();
                self.pmtu.d.next = self.qpa_u.pmtu.val();
                self.dest_qpn.d.next = self.qpa_u.dest_qpn.val();
                self.dest_mac.d.next = self.qpa_u.dest_mac.val();
                self.dest_ip.d.next = self.qpa_u.dest_ip.val();
                self.udp_sport.d.next = self.qpa_u.udp_sport.val();
                self.access.d.next = self.qpa_u.access.val();
                self.min_rnr.d.next = self.qpa_u.min_rnr_timer.val();
            }
            if self.acc_s.q.val() & !self.got_s.q.val() & self.qps_rd.resp_valid.val() {
                self.got_s.d.next = true;
                self.rq_pi.d.next = self.qps_u.rq_pi.val();
                self.rq_ci.d.next = self.qps_u.rq_ci.val();
                self.epsn.d.next = self.qps_u.epsn.val();
                self.msn.d.next = self.qps_u.msn.val();
                self.nak_sent.d.next = self.qps_u.nak_sent.val();
                self.prog.d.next = self.qps_u.prog.val();
                self.msg_va.d.next = self.qps_u.msg_va.val();
                self.msg_key.d.next = self.qps_u.msg_key.val();
                self.msg_len.d.next = self.qps_u.msg_len.val();
                self.msg_off.d.next = self.qps_u.msg_off.val();
                self.rqe_wr_id.d.next = self.qps_u.rqe_wr_id.val();
                self.rqe_index.d.next = self.qps_u.rqe_index.val();
            }
            if (self.got_c.q.val() | (self.acc_c.q.val() & self.qpc_rd.resp_valid.val()))
                & (self.got_a.q.val() | (self.acc_a.q.val() & self.qpa_rd.resp_valid.val()))
                & (self.got_s.q.val() | (self.acc_s.q.val() & self.qps_rd.resp_valid.val()))
            {
                self.state.d.next = self.k_decide.val();
            }
        }

        // ---- a doorbell or a flush request, once its QP's contexts are in ----
        self.ctl_mode.next = (self.mode.q.val() == self.k_mode_db.val())
            | (self.mode.q.val() == self.k_mode_flush.val());
        if (self.state.q.val() == self.k_decide.val()) & self.ctl_mode.val() {
            self.state.d.next = self.k_f_wqps.val();
            if self.mode.q.val() == self.k_mode_db.val() {
                // A receive posted to a QP in the error state is flushed at once (the
                // model's requester step flushes whatever is posted while in ERR).
                self.rq_pi.d.next = self.db_pi.q.val();
            }
            // MODIFY_QP to ERR: flush unless the QP left ERR again meanwhile.
            if self.qp_state.q.val() == self.k_qps_err.val() {
                self.state.d.next = self.k_fl_ip.val();
            }
        }

        // ---- DECIDE ----
        self.wchk_go.next = false;
        if (self.state.q.val() == self.k_decide.val()) & !self.ctl_mode.val() {
            self.d_kind.d.next = self.chk.m_kind.val();
            self.d_last.d.next = self.chk.m_last.val();
            self.d_len_err.d.next = self.chk.m_len_err.val();
            self.d_rnr.d.next = self.chk.m_rnr.val();
            self.d_wr_end.d.next = self.chk.m_wr_end.val();
            self.ack_psn.d.next = self.psn.q.val();
            self.state.d.next = self.k_f_cqe.val();
            if ((self.mode.q.val() == self.k_mode_rerr.val())
                | (self.mode.q.val() == self.k_mode_aerr.val()))
                & (self.qp_state.q.val() == self.k_qps_err.val())
            {
                // The QP is in ERR already (an earlier failure): nothing more to say.
            } else if (self.mode.q.val() == self.k_mode_rerr.val())
                | (self.mode.q.val() == self.k_mode_aerr.val())
            {
                // A READ response or atomic could not be read/written: as the model's
                // Fail::RemoteOperational (a DMA fault, NAK, QP to error).
                self.cnt.dma_faults.next = true;
                self.cnt.naks_sent.next = true;
                self.syndrome.d.next = self.k_syn_nak_op.val();
                self.do_ack.d.next = true;
                self.do_err.d.next = true;
                if self.mode.q.val() == self.k_mode_aerr.val() {
                    // The model's failed atomic consumed neither its PSN nor an MSN (the
                    // job went out with both advanced): take them back, so the NAK
                    // carries the MSN before the atomic and the QP's ePSN is its PSN.
                    self.epsn.d.next = self.psn.q.val();
                    self.msn.d.next = self.msn.q.val() - self.k_one24.val();
                }
            } else if !self.present.q.val()
                | !self.qp_fits.val()
                | (self.chk.m_action.val() == self.k_act_drop.val())
                | (self.src_ip.q.val() != self.dest_ip.q.val())
            {
                // No such QP (counted globally only: cnt.qp_valid is low), or it
                // does not receive, or the request is not from its peer.
                self.cnt.unknown_qp_drops.next = true;
            } else if self.chk.m_action.val() == self.k_act_dup.val() {
                self.cnt.duplicates.next = true;
                if self.chk.m_dup.val() == self.k_dup_ack.val() {
                    self.syndrome.d.next = self.k_syn_ack.val();
                    self.ack_psn.d.next = self.chk.m_ack_psn.val();
                    self.do_ack.d.next = true;
                } else if self.chk.m_dup.val() == self.k_dup_read.val() {
                    self.mr_step.d.next = self.k_mr_dup_read.val();
                    self.mr_key.d.next = self.reth_rkey.q.val();
                    self.mr_va.d.next = self.reth_va.q.val();
                    self.mr_len.d.next = self.reth_len.q.val();
                    self.mr_need.d.next = self.k_need_remote_read.val();
                    self.state.d.next = self.k_mr_req.val();
                } else if self.chk.m_dup.val() == self.k_dup_atomic.val() {
                    self.do_job.d.next = self.k_job_replay.val();
                }
            } else if self.chk.m_action.val() == self.k_act_ahead.val() {
                self.cnt.psn_seq_drops.next = true;
                if self.chk.m_ahead_nak.val() {
                    self.cnt.naks_sent.next = true;
                    self.nak_sent.d.next = self.k_one1.val();
                    self.syndrome.d.next = self.k_syn_nak_seq.val();
                    self.ack_psn.d.next = self.epsn.q.val();
                    self.do_ack.d.next = true;
                }
            } else if self.chk.m_action.val() == self.k_act_invalid.val() {
                self.nak_sent.d.next = self.k_zero1.val();
                self.cnt.naks_sent.next = true;
                self.syndrome.d.next = self.k_syn_nak_inv.val();
                self.do_ack.d.next = true;
                self.do_err.d.next = true;
            } else {
                // Execute.
                self.nak_sent.d.next = self.k_zero1.val();
                if self.chk.m_kind.val() == self.k_kind_send.val() {
                    if self.chk.m_rnr.val() {
                        self.cnt.rnr_naks_sent.next = true;
                        self.syndrome.d.next = self.rnr_syn.y.val();
                        self.do_ack.d.next = true;
                    } else if self.chk.m_first.val() {
                        self.state.d.next = self.k_rq_req.val();
                    } else {
                        self.state.d.next = self.k_send_chk.val();
                    }
                } else if self.chk.m_kind.val() == self.k_kind_write.val() {
                    if self.chk.m_first.val() {
                        self.mr_step.d.next = self.k_mr_wr_whole.val();
                        self.mr_key.d.next = self.reth_rkey.q.val();
                        self.mr_va.d.next = self.reth_va.q.val();
                        self.mr_len.d.next = self.reth_len.q.val();
                        self.mr_need.d.next = self.k_need_remote_write.val();
                        self.state.d.next = self.k_mr_req.val();
                    } else {
                        // the WRITE checks in this same cycle
                        self.wchk_go.next = true;
                    }
                } else if self.chk.m_kind.val() == self.k_kind_read.val() {
                    self.mr_step.d.next = self.k_mr_read.val();
                    self.mr_key.d.next = self.reth_rkey.q.val();
                    self.mr_va.d.next = self.reth_va.q.val();
                    self.mr_len.d.next = self.reth_len.q.val();
                    self.mr_need.d.next = self.k_need_remote_read.val();
                    self.state.d.next = self.k_mr_req.val();
                } else {
                    self.mr_step.d.next = self.k_mr_atomic.val();
                    self.mr_key.d.next = self.reth_rkey.q.val();
                    self.mr_va.d.next = self.reth_va.q.val();
                    self.mr_len.d.next = self.k_eight32.val();
                    self.mr_need.d.next = self.k_need_remote_atomic.val();
                    self.state.d.next = self.k_mr_req.val();
                }
            }
        }

        // ---- the protection check ----
        if (self.state.q.val() == self.k_mr_req.val()) & self.mr.req_ready.val() {
            self.state.d.next = self.k_mr_res.val();
        }
        if (self.state.q.val() == self.k_mr_res.val()) & self.mr.res_valid.val() {
            self.iova.d.next = self.mr.res_iova.val();
            self.state.d.next = self.k_f_cqe.val();
            if self.mr_step.q.val() == self.k_mr_dup_read.val() {
                if self.mr.res_ok.val() {
                    self.do_job.d.next = self.k_job_read.val();
                }
            } else if self.mr_step.q.val() == self.k_mr_read.val() {
                if self.mr.res_ok.val() {
                    self.epsn.d.next = self.psn.q.val() + self.read_pkts.val().get_bits::<24>(0);
                    self.msn.d.next = self.msn.q.val() + self.k_one24.val();
                    self.do_job.d.next = self.k_job_read.val();
                } else {
                    self.cnt.naks_sent.next = true;
                    self.syndrome.d.next = self.k_syn_nak_acc.val();
                    self.do_ack.d.next = true;
                    self.do_err.d.next = true;
                }
            } else if self.mr_step.q.val() == self.k_mr_atomic.val() {
                if self.mr.res_ok.val() {
                    self.epsn.d.next = self.psn.q.val() + self.k_one24.val();
                    self.msn.d.next = self.msn.q.val() + self.k_one24.val();
                    self.do_job.d.next = self.k_job_atomic.val();
                } else {
                    self.cnt.naks_sent.next = true;
                    self.syndrome.d.next = self.k_syn_nak_acc.val();
                    self.do_ack.d.next = true;
                    self.do_err.d.next = true;
                }
            } else if self.mr_step.q.val() == self.k_mr_wr_whole.val() {
                if self.mr.res_ok.val() {
                    self.mc_valid.d.next = !self.stale.q.val()
                        & !self.ctx_stale.val()
                        & (self.reth_len.q.val() != self.k_zero32.val());
                    self.mc_qpn.d.next = self.qpn.q.val();
                    self.mc_key.d.next = self.reth_rkey.q.val();
                    self.mc_va.d.next = self.reth_va.q.val();
                    self.mc_len.d.next = self.reth_len.q.val();
                    self.mc_iova.d.next = self.mr.res_iova.val();
                    self.msg_va.d.next = self.reth_va.q.val();
                    self.msg_key.d.next = self.reth_rkey.q.val();
                    self.msg_len.d.next = self.reth_len.q.val();
                    self.msg_off.d.next = self.k_zero32.val();
                    self.state.d.next = self.k_write_chk.val();
                } else {
                    self.cnt.naks_sent.next = true;
                    self.syndrome.d.next = self.k_syn_nak_acc.val();
                    self.do_ack.d.next = true;
                    self.do_err.d.next = true;
                }
            } else if self.mr_step.q.val() == self.k_mr_wr_pkt.val() {
                if self.mr.res_ok.val() {
                    self.state.d.next = self.k_wr_req.val();
                } else {
                    self.cnt.naks_sent.next = true;
                    self.syndrome.d.next = self.k_syn_nak_acc.val();
                    self.do_ack.d.next = true;
                    self.do_err.d.next = true;
                }
            } else if self.mr.res_ok.val() {
                // SEND payload
                self.state.d.next = self.k_wr_req.val();
            } else {
                self.cqe_status.d.next = self.k_st_loc_prot.val();
                self.cqe_opcode.d.next = self.k_wc_recv.val();
                self.cqe_byte_len.d.next = self.k_zero32.val();
                self.cqe_imm.d.next = self.k_zero32.val();
                self.cqe_flags.d.next = self.k_zero8.val();
                self.do_cqe.d.next = true;
                self.prog.d.next = self.k_prog_idle.val();
                self.cnt.naks_sent.next = true;
                self.syndrome.d.next = self.k_syn_nak_op.val();
                self.do_ack.d.next = true;
                self.do_err.d.next = true;
            }
        }

        // ---- RQ WQE fetch: one beat at rq_ring + 64 * (rq_ci mod 2^rq_log) ----
        if (self.state.q.val() == self.k_rq_req.val()) & self.rqf.s_req_ready.val() {
            self.state.d.next = self.k_rq_resp.val();
        }
        if (self.state.q.val() == self.k_rq_resp.val())
            & (self.rqf.m_ent_valid.val() | self.rqf.m_err_valid.val())
        {
            if self.rqf.m_err_valid.val() {
                // Treated as an empty RQ (the host broke its own ring).
                self.cnt.dma_faults.next = true;
                self.cnt.rnr_naks_sent.next = true;
                self.syndrome.d.next = self.k_syn_rnr.val();
                self.do_ack.d.next = true;
                self.state.d.next = self.k_f_cqe.val();
            } else {
                self.rq_ci.d.next = self.rq_ci.q.val() + self.k_one32.val();
                self.rqe_index.d.next = self.rq_ci.q.val();
                self.rqe_wr_id.d.next = self.rqf.m_ent_beat.val().get_bits::<64>(0);
                if self.d_kind.q.val() == self.k_kind_send.val() {
                    self.msg_va.d.next = self.rqf.m_ent_beat.val().get_bits::<64>(128);
                    self.msg_len.d.next = self.rqe_len.val();
                    self.msg_key.d.next = self.rqf.m_ent_beat.val().get_bits::<32>(224);
                    self.msg_off.d.next = self.k_zero32.val();
                    self.state.d.next = self.k_send_chk.val();
                } else {
                    self.state.d.next = self.k_write_done.val();
                }
            }
        }

        // ---- a successful payload write finishes the packet in the same cycle ----
        self.wr_ok.next = (self.state.q.val() == self.k_wr_status.val())
            & self.dma_wr.status_valid.val()
            & !self.dma_wr.status_err.val();
        self.sd_go.next = (self.state.q.val() == self.k_send_done.val())
            | (self.wr_ok.val() & (self.d_kind.q.val() == self.k_kind_send.val()));
        self.wd_go.next = (self.state.q.val() == self.k_write_done.val())
            | (self.wr_ok.val()
                & (self.d_kind.q.val() != self.k_kind_send.val())
                & !self.has_imm.q.val());

        // ---- SEND: the receive buffer's length, then its MR ----
        if self.state.q.val() == self.k_send_chk.val() {
            if self.len32.y.val() > self.send_rem.val() {
                self.cqe_status.d.next = self.k_st_loc_len.val();
                self.cqe_opcode.d.next = self.k_wc_recv.val();
                self.cqe_byte_len.d.next = self.k_zero32.val();
                self.cqe_imm.d.next = self.k_zero32.val();
                self.cqe_flags.d.next = self.k_zero8.val();
                self.do_cqe.d.next = true;
                self.prog.d.next = self.k_prog_idle.val();
                self.cnt.naks_sent.next = true;
                self.syndrome.d.next = self.k_syn_nak_inv.val();
                self.do_ack.d.next = true;
                self.do_err.d.next = true;
                self.state.d.next = self.k_f_cqe.val();
            } else if self.pay_len.q.val() == self.k_zero16.val() {
                self.state.d.next = self.k_send_done.val();
            } else {
                self.mr_step.d.next = self.k_mr_send.val();
                self.mr_key.d.next = self.msg_key.q.val();
                self.mr_va.d.next = self.msg_va.q.val() + self.off64.y.val();
                self.mr_len.d.next = self.len32.y.val();
                self.mr_need.d.next = self.k_need_local_write.val();
                self.state.d.next = self.k_mr_req.val();
            }
        }
        if self.sd_go.val() {
            self.epsn.d.next = self.psn.q.val() + self.k_one24.val();
            self.msg_off.d.next = self.send_end.val();
            self.prog.d.next = self.k_prog_send.val();
            if self.d_last.q.val() {
                self.prog.d.next = self.k_prog_idle.val();
                self.msn.d.next = self.msn.q.val() + self.k_one24.val();
                self.cqe_status.d.next = self.k_st_success.val();
                self.cqe_opcode.d.next = self.k_wc_recv.val();
                self.cqe_byte_len.d.next = self.send_end.val();
                self.cqe_imm.d.next = self.k_zero32.val();
                self.cqe_flags.d.next = self.k_zero8.val();
                if self.has_imm.q.val() {
                    self.cqe_imm.d.next = self.imm.q.val();
                    self.cqe_flags.d.next = self.k_flag_imm.val();
                }
                if self.has_ieth.q.val() {
                    self.cqe_imm.d.next = self.ieth.q.val();
                    self.cqe_flags.d.next = self.k_flag_inv.val();
                }
                self.do_cqe.d.next = true;
            }
            self.syndrome.d.next = self.k_syn_ack.val();
            self.do_ack.d.next = self.ack_req.q.val();
            self.state.d.next = self.k_f_cqe.val();
            if !self.d_last.q.val() {
                // no CQE, no job, no error: the ACK if asked for, else the context write
                self.state.d.next = self.k_f_wqps.val();
                if self.ack_req.q.val() {
                    self.state.d.next = self.k_f_ack.val();
                }
            }
            if self.d_last.q.val() & self.has_ieth.q.val() {
                self.state.d.next = self.k_inv.val();
            }
        }
        // ---- SEND with invalidate: the IETH's rkey, through the command engine; a key
        // that cannot be invalidated: LocProtErr CQE (byte_len kept), no MSN, NAK
        // Invalid Request, QP error (the model's `exec_send`) ----
        if (self.state.q.val() == self.k_inv.val()) & self.inv.ready.val() {
            self.state.d.next = self.k_f_cqe.val();
            if !self.inv.ok.val() {
                self.msn.d.next = self.msn.q.val() - self.k_one24.val();
                self.cqe_status.d.next = self.k_st_loc_prot.val();
                self.cqe_imm.d.next = self.k_zero32.val();
                self.cqe_flags.d.next = self.k_zero8.val();
                self.cnt.naks_sent.next = true;
                self.syndrome.d.next = self.k_syn_nak_inv.val();
                self.do_ack.d.next = true;
                self.do_err.d.next = true;
            }
        }

        // ---- WRITE: length, RNR, the packet's MR check ----
        self.wc_len_err.next = self.d_len_err.q.val();
        self.wc_rnr.next = self.d_rnr.q.val();
        if self.state.q.val() == self.k_decide.val() {
            self.wc_len_err.next = self.chk.m_len_err.val();
            self.wc_rnr.next = self.chk.m_rnr.val();
        }
        if (self.state.q.val() == self.k_write_chk.val()) | self.wchk_go.val() {
            self.state.d.next = self.k_f_cqe.val();
            if self.wc_len_err.val() {
                self.cnt.naks_sent.next = true;
                self.syndrome.d.next = self.k_syn_nak_inv.val();
                self.do_ack.d.next = true;
                self.do_err.d.next = true;
            } else if self.wc_rnr.val() {
                self.cnt.rnr_naks_sent.next = true;
                self.syndrome.d.next = self.rnr_syn.y.val();
                self.do_ack.d.next = true;
            } else if self.pay_len.q.val() == self.k_zero16.val() {
                self.state.d.next = self.k_write_done.val();
                if self.has_imm.q.val() {
                    self.state.d.next = self.k_rq_req.val();
                }
            } else if self.mc_hit.val() {
                // inside the range the message's first packet checked: no MR check
                self.iova.d.next = self.mc_iova.q.val() + self.off64.y.val();
                self.state.d.next = self.k_wr_req.val();
            } else {
                self.mr_step.d.next = self.k_mr_wr_pkt.val();
                self.mr_key.d.next = self.msg_key.q.val();
                self.mr_va.d.next = self.msg_va.q.val() + self.off64.y.val();
                self.mr_len.d.next = self.len32.y.val();
                self.mr_need.d.next = self.k_need_remote_write.val();
                self.state.d.next = self.k_mr_req.val();
            }
        }
        if self.wd_go.val() {
            self.epsn.d.next = self.psn.q.val() + self.k_one24.val();
            self.msg_off.d.next = self.d_wr_end.q.val();
            self.prog.d.next = self.k_prog_write.val();
            if self.d_last.q.val() {
                self.prog.d.next = self.k_prog_idle.val();
                self.msn.d.next = self.msn.q.val() + self.k_one24.val();
                if self.has_imm.q.val() {
                    self.cqe_status.d.next = self.k_st_success.val();
                    self.cqe_opcode.d.next = self.k_wc_recv_imm.val();
                    self.cqe_byte_len.d.next = self.msg_len.q.val();
                    self.cqe_imm.d.next = self.imm.q.val();
                    self.cqe_flags.d.next = self.k_flag_imm.val();
                    self.do_cqe.d.next = true;
                }
            }
            self.syndrome.d.next = self.k_syn_ack.val();
            self.do_ack.d.next = self.ack_req.q.val();
            // straight to the first finish step with something to do (no job, no error)
            self.state.d.next = self.k_f_wqps.val();
            if self.ack_req.q.val() {
                self.state.d.next = self.k_f_ack.val();
            }
            if self.d_last.q.val() & self.has_imm.q.val() {
                self.state.d.next = self.k_f_cqe.val();
            }
        }

        // ---- payload DMA write: request, beats straight from the RX stream, status ----
        if (self.state.q.val() == self.k_wr_req.val()) & self.dma_wr.req_ready.val() {
            self.state.d.next = self.k_wr_data.val();
        }
        if self.state.q.val() == self.k_wr_data.val() {
            self.pay.tready.next = self.dma_wr.data_ready.val();
            if self.pay.tvalid.val() & self.dma_wr.data_ready.val() & self.pay.tlast.val() {
                self.pay_left.d.next = false;
                self.state.d.next = self.k_wr_status.val();
            }
        }
        if (self.state.q.val() == self.k_wr_status.val()) & self.dma_wr.status_valid.val() {
            if self.dma_wr.status_err.val() {
                self.cnt.dma_faults.next = true;
                self.cnt.naks_sent.next = true;
                self.syndrome.d.next = self.k_syn_nak_op.val();
                self.do_ack.d.next = true;
                self.do_err.d.next = true;
                self.state.d.next = self.k_f_cqe.val();
                if self.d_kind.q.val() == self.k_kind_send.val() {
                    self.cqe_status.d.next = self.k_st_loc_prot.val();
                    self.cqe_opcode.d.next = self.k_wc_recv.val();
                    self.cqe_byte_len.d.next = self.k_zero32.val();
                    self.cqe_imm.d.next = self.k_zero32.val();
                    self.cqe_flags.d.next = self.k_zero8.val();
                    self.do_cqe.d.next = true;
                    self.prog.d.next = self.k_prog_idle.val();
                }
            } else if (self.d_kind.q.val() != self.k_kind_send.val()) & self.has_imm.q.val() {
                // WRITE with immediate: the receive is taken after the data is written
                self.state.d.next = self.k_rq_req.val();
            }
            // otherwise SEND_DONE / WRITE_DONE in this same cycle (sd_go / wd_go)
        }

        // ---- finish: CQE, ACK/NAK, job, QP error, context write, payload drain; a step
        // with nothing to do for this packet is skipped ----
        self.after_job.next = self.k_f_wqps.val();
        if self.do_err.q.val() {
            self.after_job.next = self.k_fl_ip.val();
        }
        if !self.present.q.val() | !self.qp_fits.val() {
            self.after_job.next = self.k_f_drain.val();
        }
        self.after_ack.next = self.after_job.val();
        if self.do_job.q.val() != self.k_job_none.val() {
            self.after_ack.next = self.k_f_job.val();
        }
        self.after_cqe.next = self.after_ack.val();
        if self.do_ack.q.val() {
            self.after_cqe.next = self.k_f_ack.val();
        }
        if self.state.q.val() == self.k_f_cqe.val() {
            self.cqe.valid.next = self.do_cqe.q.val();
            if !self.do_cqe.q.val() | self.cqe.ready.val() {
                self.state.d.next = self.after_cqe.val();
            }
        }
        if self.state.q.val() == self.k_f_ack.val() {
            self.ack_pkt.valid.next = self.do_ack.q.val();
            if !self.do_ack.q.val() | self.ack_pkt.ready.val() {
                self.state.d.next = self.after_ack.val();
            }
        }
        if self.state.q.val() == self.k_f_job.val() {
            self.job_taken.next = self.do_job.q.val() == self.k_job_none.val();
            if (self.do_job.q.val() == self.k_job_read.val()) & self.m_read_job_ready.val() {
                self.job_taken.next = true;
            }
            if (self.do_job.q.val() == self.k_job_atomic.val()) & self.m_atomic_job_ready.val() {
                self.job_taken.next = true;
            }
            if (self.do_job.q.val() == self.k_job_replay.val()) & self.m_replay_ready.val() {
                self.job_taken.next = true;
            }
            if self.job_taken.val() {
                self.state.d.next = self.after_job.val();
            }
        }

        // ---- the error state: flush the receive in progress and the posted receives
        // (WR_FLUSH_ERR CQEs, RQ WQEs read for their wr_id: a refused read gives 0, as in
        // the model's `flush_posted`), then, for an error of the responder's own, the
        // command engine moves the QP to ERR ----
        if self.state.q.val() == self.k_fl_ip.val() {
            if self.prog.q.val() != self.k_prog_send.val() {
                self.state.d.next = self.k_fl_chk.val();
            }
            self.cqe.valid.next = self.prog.q.val() == self.k_prog_send.val();
            if (self.prog.q.val() == self.k_prog_send.val()) & self.cqe.ready.val() {
                self.state.d.next = self.k_fl_chk.val();
            }
            // cleared once the CQE is taken (clearing it while the CQE waits for ready
            // lost the CQE)
            if (self.prog.q.val() != self.k_prog_send.val()) | self.cqe.ready.val() {
                self.prog.d.next = self.k_prog_idle.val();
            }
        }
        if self.state.q.val() == self.k_fl_chk.val() {
            self.state.d.next = self.k_f_wqps.val();
            if self.do_err.q.val() {
                self.state.d.next = self.k_fl_err.val();
            }
            if self.rq_ci.q.val() != self.rq_pi.q.val() {
                self.state.d.next = self.k_fl_rq.val();
            }
        }
        if (self.state.q.val() == self.k_fl_rq.val()) & self.rqf.s_req_ready.val() {
            self.state.d.next = self.k_fl_resp.val();
        }
        if (self.state.q.val() == self.k_fl_resp.val())
            & (self.rqf.m_ent_valid.val() | self.rqf.m_err_valid.val())
        {
            self.rqe_index.d.next = self.rq_ci.q.val();
            self.rqe_wr_id.d.next = self.rqf.m_ent_beat.val().get_bits::<64>(0);
            if self.rqf.m_err_valid.val() {
                self.rqe_wr_id.d.next = self.k_zero64.val();
            }
            self.state.d.next = self.k_fl_cqe.val();
        }
        if (self.state.q.val() == self.k_fl_cqe.val()) & self.cqe.ready.val() {
            self.rq_ci.d.next = self.rq_ci.q.val() + self.k_one32.val();
            self.state.d.next = self.k_fl_chk.val();
        }
        if (self.state.q.val() == self.k_fl_err.val()) & self.qp_err.ready.val() {
            self.state.d.next = self.k_f_wqps.val();
        }
        if (self.state.q.val() == self.k_f_wqps.val())
            & self.qps_wr.ready.val()
            & self.pay_left.q.val()
        {
            self.state.d.next = self.k_f_drain.val();
        }
        if self.state.q.val() == self.k_f_drain.val() {
            self.pay.tready.next = self.pay_left.q.val();
            if !self.pay_left.q.val() {
                self.state.d.next = self.k_idle.val();
            } else if self.pay.tvalid.val() & self.pay.tlast.val() {
                self.pay_left.d.next = false;
                self.state.d.next = self.k_idle.val();
            }
        }

        // ---- a table written: forget what was kept, and keep nothing read meanwhile ----
        if self.ctx_stale.val() {
            self.fw_valid.d.next = false;
            self.mc_valid.d.next = false;
            self.stale.d.next = true;
        }

        if self.reset.val() {
            self.state.d.next = self.k_idle.val();
            self.fw_valid.d.next = false;
            self.mc_valid.d.next = false;
            self.cmd_run.d.next = false;
            self.rerr_pend.d.next = false;
            self.aerr_pend.d.next = false;
        }
    }
}
