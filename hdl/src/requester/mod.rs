//! `Requester`: the requester's sequencer (transmit half, and the receive half's
//! fault-free path) and its per-QP op ring.
//!
//! ```text
//!  sq_db   --> read qpc, qpa, qpr --> qpr.sq_pi written
//!  scan / doorbell / again --> read qpc, qpa, qpr (+ stopped, READ/atomic count, sent_end,
//!     the cursor held at the window's edge) --> held cursor back in the window? --> the
//!     go-back-N walk from it (below)
//!     --> eligible? --> WqeFetch --> window / max_rd_atomic / FENCE --> validate_wqe
//!     (opcode, inline, SGEs, lengths, lkey through MrCheck) --> op appended to the ring
//!     --> Segmenter job (first PSN = next_psn, start_pkt 0, stop at una + WINDOW)
//!     --> qpr written (sq_fetch, next_psn; the cursor held if the job was cut)
//!     --> the same QP again while it has work
//!  a WQE failing validation: error op appended (or, at the head of the SQ, its CQE at
//!  once on cqe and the QP-error pulse); the QP stops fetching
//!  Segmenter m_sent pulses --> sent_end (own RAM, copied into qpr at the next write-back)
//! ```
//!
//! # The op ring (stage 1)
//!
//! One ring of [`OPS`] ops per QP in block RAM, address `{qpn, slot}`, `slot` = the op's SQ
//! index mod 16. Head and tail are `qpr.sq_ci` (the oldest WQE not retired) and
//! `qpr.sq_fetch` (the next to fetch): one op per fetched WQE, as the model's `ops` list
//! (`sq_fetch - sq_ci` = `ops.len()`), so the ring needs no pointers of its own and fetch
//! stops when it holds 16 ops. An entry ([`op_layout`]) is what the model's `OpSummary`
//! holds (`kind`, `first_psn`, `npsn`, `resp` = responses received, `len`, `pmtu`,
//! `done`) and what a completion needs (`wr_id`, `signaled`, `wc_opcode`, `status` of a
//! failed op, the local `iova` for READ/atomic delivery); the WQE index is `sq_ci` + its
//! position. The walk port `s_op_rd_*` / `m_op_*` reads one entry a cycle (data one cycle
//! after the address), oldest first from `sq_ci`, as `ReqRxCheck`'s walk takes them.
//!
//! # What the transmit half matches in the model (`model/src/requester.rs`)
//!
//! - The window (`max_outstanding_psns` = [`WINDOW`]) per packet, as `build_packet`: an
//!   op starts once its first packet (a READ: its request) lies below `una + WINDOW`; a
//!   SEND/WRITE reaching past that edge is sent up to it (the Segmenter's `stop_psn`) and
//!   the transmit cursor is held there (`tp_v`, `tp_psn`: own RAM per QP). Nothing is
//!   fetched while it is held (as the model builds packets before it fetches). When a
//!   visit finds the held PSN back inside the window (the ACKs moved `una`), the go-back-N
//!   walk below sends from it: the rest of that op and every later op, each job again cut
//!   at the edge. A go-back-N walk stops the same way at the edge.
//! - Doorbells set `sq_pi` (a read-modify-write of `qpr`); the doorbell's QP is then
//!   served at once.
//! - `fetch_wqe`: only in RTS, not `stopped`, `sq_fetch != sq_pi`; a READ/atomic waits
//!   while `min(max_rd_atomic, 16).max(1)` are outstanding, a FENCE while any is; the WQE
//!   is then dropped and fetched again later (as the model returns without consuming it).
//!   A refused SQ read counts a DMA fault and pulses `m_qp_err` (the QP stops).
//! - `validate_wqe`: unknown opcode, inline READ/atomic or inline longer than 32 bytes,
//!   more than one SGE -> LOC_QP_OP_ERR; an atomic without one 8-byte SGE, a length over
//!   2^31 -> LOC_LEN_ERR; the SGE's lkey / PD / range / access (LOCAL_WRITE for READ and
//!   atomic) through `MrCheck` -> LOC_PROT_ERR. A valid op takes `packets(len, pmtu)` PSNs
//!   (one for an atomic) from `next_psn`; a failed one none, and it stops the QP.
//! - A failed op at the head of the SQ (every earlier op retired) completes at once with
//!   its status (`cqe`: wr_id, byte_len = the WQE's length, wqe_index, the WC opcode,
//!   the send CQ, src_qp = dest QPN) and `m_qp_err` pulses (the model's `retire` ->
//!   `enter_error`). Behind outstanding ops it is appended done with its status: its CQE
//!   is the receive half's (retire in SQ order).
//! - `note_request_sent`: each record the Segmenter hands on moves the QP's `sent_end` to
//!   its PSN + 1 unless it is a retransmission (a PSN before `sent_end`): a
//!   read-modify-write a cycle after the pulse, on mirrors of the `sent_end` RAMs, the last
//!   value written forwarded to a pulse of the same QP right behind it.
//!
//! # The receive half (fault-free path)
//!
//! ```text
//!  s_rsp (record) --> [IDLE, between QP visits] read qpc, qpa, qpr
//!     --> present, RTS/SQD and from the QP's peer (`rsp.src_ip` = `dest_ip`)? (else
//!         UnknownQpDrops, payload drained)
//!     --> walk the ring (sq_ci .. sq_fetch) through ReqRxCheck --> the decision
//!     --> counter pulse; una / retry_left / rnr_left; ops acknowledged or failed
//!         (an apply pass rewrites the ring's ops up to the last one the decision changes)
//!     --> delivery: READ payload (rsp_pay) or the atomic's original value
//!         --> dma_wr at the op's iova + offset --> status --> resp + 1 / done, or
//!         LOC_ACCESS_ERR + DmaFaults; progress (una, retries reloaded)
//!     --> payload not delivered: drained
//!     --> retire: done ops leave the head in SQ order (sq_ci + 1; READ/atomic count - 1);
//!         a signaled success or an error op -> cqe; an error op -> m_qp_err, stop
//!     --> qpr written --> the same QP again (fetch resumes)
//! ```
//!
//! In the one FSM, so every `qpr` read-modify-write and ring access stays serialized: a
//! waiting response is taken in IDLE before a doorbell or the scan. It matches the model's
//! `requester_rx` -> `apply_response` (counter, `ack_upto`, `una_psn` / `retry_left` /
//! `rnr_left`, `fails` with status and syndrome = the CQE's `vendor_err`, the delivery, a
//! failed write -> LOC_ACCESS_ERR, `progress`) -> `retire` (`send_cqe`: wr_id, byte_len =
//! the op's length, wqe_index, WC opcode, status, vendor_err; an error op -> the QP-error
//! pulse as `enter_error` is entered). Receive counters come out on `rx_cnt`
//! (NaksReceived, RnrNaksReceived, Duplicates, MalformedDrops, UnknownQpDrops), a refused
//! write on `cnt.dma_faults`.
//!
//! `requester::responses_match_the_model` (`hdl/tests/against_model`) holds it to the model: both
//! sides' requests answered by a responder model each, the responses fed back, CQEs (successes
//! too), QP errors, the emptied ring and window, host memory (READ/atomic results) and the counters
//! compared.
//!
//! # Go-back-N (the decision's `m_cursor` = rewind)
//!
//! ```text
//!  RX_DEC: rewind to PSN p (a PSN-sequence-error NAK, a READ/atomic response found lost
//!     by an ACK or out of order) --> rtx pending; rewound_to kept (own RAM per QP)
//!  after the write-back (qpr, retired ops gone): RT_RD / RT_CHK over the ring sq_ci..sq_fetch
//!     --> an unfinished op holding p (from packet p - first; a READ from its first missing
//!         response) or starting after p (from 0) --> its WQE read again (WqeFetch, SQ
//!         index) --> Segmenter job (first_psn, the op's PMTU, its iova, start_pkt)
//!     --> the next op, from its start; at sq_fetch: IDLE (and the QP again: fetch goes on)
//! ```
//!
//! The model's `rewind_cursor` + `build_packet` over the cursor: the retransmission reads
//! the payload again from host memory (no retransmit buffer). `rewound_to` (the model's
//! "already rewound there without progress since", which the decision reads so that a
//! repeated NAK neither rewinds again nor spends a retry) lives in the block's own RAM
//! (valid + PSN per QP, written back with `qpr`; `qpr` has no such field), cleared by a
//! delivery's progress and on a QP clear. Retries (`retry_left`) are the decision's.
//! Differences: the model purges the QP's frames not yet sent; here the Segmenter's
//! queued packets of the QP still go out before the retransmission (the peer sees them
//! out of sequence or as duplicates; frames and timing differ on faults, CQEs and memory do
//! not). The rule when no unfinished op holds p and none starts after it (the model then
//! restarts at the first unfinished op) is not followed: nothing is sent (the decision's
//! rewind PSNs, `una` or a READ's waiting PSN, always lie in or before an unfinished op).
//! The whole retransmission runs in one visit of the QP (responses wait).
//!
//! A go-back-N walk also runs when the QP is `stopped` (a WQE failed validation behind
//! outstanding ops, or an op failed by a NAK): the model's cursor still rewinds then; it
//! does not after an error op retired in the same visit (the QP is in error).
//!
//! # The ACK timer (`QpTimers`, one deadline per QP)
//!
//! ```text
//!  a visit's write-back (qpr): ring empty --> disarm; else a job started, a progress
//!     (delivery), the decision's ARM, a timeout's rewind --> arm (1024 << qpa.timeout
//!     cycles); else the decision's CLEAR --> disarm; else left alone. A QP clear disarms.
//!  fire (in IDLE, after responses) --> read qpc, qpa, qpr --> S_TO: ops outstanding and
//!     RTS/SQD? (AckTimeouts) --> retry_left > 0: retry_left - 1, rewound_to = una,
//!     rewind to una (go-back-N after the write-back), re-armed
//!     --> out of retries: the head op (the oldest unfinished) failed RETRY_EXC_ERR
//!     (S_TO_RD / S_TO_WR), retired: its CQE, the QP-error pulse
//! ```
//!
//! The model's `fire_timers` / `use_retry` / `rewind`. Differences (timing only): the
//! model arms on the first request *sent* when unarmed; here a job's start re-arms (a
//! deadline may be pushed out while jobs keep starting), and a timer fires up to one scan
//! round (256 cycles) after its deadline. `cnt.retransmits` pulses for each record taken
//! at a PSN before `sent_end` (the model's Retransmits), `cnt.ack_timeouts` at S_TO.
//!
//! A READ response for the op is written only when it is in order (the decision's
//! delivery).
//!
//! # The RNR wait (`QpTimers` kind RNR)
//!
//! ```text
//!  RX_DEC: the decision's m_rnr_wait (an RNR NAK in the window, an RNR retry left:
//!     rnr_left counted by ReqRxCheck, rnr_retry 7 = infinite) --> the QP's wait flag set
//!     (own RAM), the cursor held at the rewind PSN (tp_v / tp_psn = una), no go-back-N now
//!     --> write-back: the QP's timer set, kind RNR, the NAK's timer code in cycles (the
//!     rnr_timer_ns table / 4 ns: 2500 << (c / 2), 7500 << ((c - 3) / 2) for odd c >= 3,
//!     2500 << 16 for code 0)
//!  while it waits: nothing fetched or sent (the held cursor), a rewind decision only moves
//!     the held cursor, the timer left alone by the visits, s_rnr_waiting to ReqRxCheck
//!  fire, kind RNR (S_TO) --> the flag cleared, the ACK timer armed --> the QP again: the
//!     held cursor resumes (the go-back-N walk from it)
//!  out of RNR retries: the decision fails the oldest op RNR_RETRY_EXC_ERR (retired: CQE,
//!     QP error)
//! ```
//!
//! The model's `rnr_nak` / `rnr_until` / `fire_timers`. Differences (timing only): the
//! Segmenter's queued packets of the QP still leave at the RNR NAK (the peer NAKs them as out of
//! sequence, which the decision ignores while waiting); an ACK-timer arm decided during the wait (a
//! progress) is not applied (the model keeps both deadlines; here the RNR timer stays and the ACK
//! timer is armed when it fires). `requester::rnr_waits_match_the_model` (a peer posting its
//! receives late) and `requester::rnr_exhaustion_matches_the_model` (never) hold it to the model.
//!
//! # The flush (WR_FLUSH_ERR)
//!
//! ```text
//!  a visit (DECIDE) of a QP in ERR (qpa.state) with sq_ci != sq_pi: the wait and the held
//!     cursor dropped --> FL_RD / FL_CQE: each op of the ring from sq_ci, its CQE as a
//!     retire's (wr_id, byte_len, WC opcode) with WR_FLUSH_ERR, sq_ci + 1
//!  --> FL_POST: each WQE posted and not fetched (sq_fetch .. sq_pi) read through WqeFetch,
//!     its CQE (wr_id, WC opcode, byte_len 0; a WQE that cannot be read: all zero, as the
//!     model), sq_fetch and sq_ci + 1 --> qpr written (the timer disarmed: ring empty)
//! ```
//!
//! The model's `enter_error` + `flush_posted`. The QP reaches ERR through the command
//! engine (this block's QP-error pulse, the responder's, a MODIFY_QP to ERR); the write-back
//! after an error visits the QP again at once, so the flush follows the error's CQE when
//! the engine has set the state by then; otherwise (and after a MODIFY_QP to ERR) the scan
//! or the next doorbell finds it (a doorbell on a QP in ERR flushes what it posted, as the
//! model's `requester_step` does). No new port: the state is read from `qpa`.
//!
//! # How it is held to the model
//!
//! The bench `hdl/tests/against_model/requester.rs` (`requester::random_wqes_match_the_model`, in
//! the default test run): the block against the model's `Nic` over random WQE streams on two QPs,
//! with the tables, MR checks and DMA simulated from the model's rules; frames byte for byte, CQEs,
//! QP errors, `next_psn` and the ring compared each round, and every fetch held back must be
//! explained by max_rd_atomic or FENCE. No responses, so the window and the 16-op ring limit are
//! not reached there. `requester::long_message_matches_the_model` sends a WRITE of 1100+ packets at
//! PMTU 256 with the responses held back at first: exactly the window's 1024 packets leave, the
//! rest as the ACKs come (frames byte for byte). `requester::responses_match_the_model` adds a
//! responder model as the peer of each side (up to 32 WQEs a round: the ring fills).
//! `requester::faults_match_the_model` puts a seeded fault rule on both sides' links
//! (requests and responses held back so later ones overtake them, or duplicated; nothing
//! lost): sequence-error NAKs, out-of-order READ responses and duplicates reach go-back-N;
//! CQEs, QP errors, the drained ring and window and memory compared, retransmissions and
//! NAKs required (`fault_seed_0xfa170000_matches_the_model`, once a "known failure", was
//! the bench's: a peer in error after an invalid-request NAK leaves a READ unanswered, on
//! the model as on the RTL). `requester::losses_match_the_model` adds losses (6% of the first
//! passes of frames dropped on both links, ACK timeout 8192 cycles): ACK timeouts, retries and
//! go-back-N from `una` required, the Retransmits pulses held to the frames sent again.
//! `requester::retry_exhaustion_matches_the_model`: a peer silent for one QP from a
//! PSN on, 0 to 2 retries: RETRY_EXC_ERR on the oldest op, the QP error and the flush as
//! the model. The RNR benches are above. Every bench with a peer compares the WR_FLUSH_ERR
//! CQEs of the flush too (in SQ order after the error's).
//!
//! # Differences and what is not done
//!
//! - At most 16 ops per QP (the ring); the model has no such limit (its window bounds it).
//!   With responses the block fetches the 17th WQE once the oldest op retires; the order
//!   of frames and completions per QP is the model's.
//! - A payload read failure (Segmenter's `m_err`) counts a DMA fault and stops the QP;
//!   the op of that PSN is not marked failed in the ring yet (the receive half's walk
//!   will), and a second failure reported before the first is served is lost.
//! - The flush runs when a visit finds the QP in ERR (see above), not in the same step
//!   as the model's `enter_error`: CQEs of other QPs may come between.
//! - `sent_end` lives in the block's own RAM (the pulses come every cycle; `qpr` has one
//!   write port): `qpr.sent_end` is refreshed from it at each write-back of the QP.
//! - The read-modify-writes of `qpr` are not interlocked with a MODIFY_QP of the same QP.
//! - One QP at a time; one WQE takes about 15 cycles plus the MR check and, when
//!   `WqeFetch`'s prefetch buffer does not hold it (16 QPs' slots, read ahead of use), one
//!   DMA read (of up to 16 posted WQEs: `s_req_posted` = `sq_pi` - the index; a QP clear
//!   empties the buffer).

pub mod qp_timers;
pub mod req_rx_check;
pub mod segmenter;
pub mod wqe_fetch;

use crate::bus::cnt::{ReqCntClient, RxCntClient};
use crate::bus::cqe::CqeClient;
use crate::bus::ctl::QpClrServer;
use crate::bus::ctx::{CtxRdClient, CtxWrClient};
use crate::bus::dma_rd::DmaRdClient;
use crate::bus::dma_wr::DmaWrClient;
use crate::bus::mr::MrClient;
use crate::bus::record::{PayloadClient, RecordClient};
use crate::bus::reg::QDbServer;
use crate::bus::rx::{RspHdrServer, RxPayServer};
use crate::common::cat::Cat;
use crate::common::mtu_shift::MtuShift;
use crate::common::zext::ZeroExt;
use crate::control::ctx_tables::{qpa_layout, qpc_layout, qpr_layout, QprPack};
use crate::prelude::*;
use crate::requester::qp_timers::{QpTimers, TIME_BITS};
use crate::requester::req_rx_check::{
    ReqRxCheck, CUR_REWIND, KIND_ATOMIC, KIND_READ, KIND_SEND, KIND_WRITE, OPS,
};
use crate::requester::segmenter::Segmenter;
use crate::requester::wqe_fetch::WqeFetch;
use rocenic_proto::abi::verbs::{access, QpState, WcOpcode, WcStatus, WrOpcode};
use rocenic_proto::abi::wqe::MAX_INLINE;

const _: () = assert!(OPS == 16, "the ring slot is 4 bits");
/// The go-back-N window (the model's `max_outstanding_psns`).
pub const WINDOW: u64 = 1024;

crate::packed_layout!(
    /// An op of the ring (what the model's `SendOp` keeps that the requester needs).
    op_layout, OpPack; wr_id: 64, signaled: 1, wc_opcode: 3, kind: 2, iova: 64, len: 32,
    first_psn: 24, npsn: 24, resp: 24, pmtu: 3, done: 1, status: 8, vendor: 8
);
crate::unpack_fields!(
    /// Every field of an op.
    OpUnpack, op_layout; wr_id: 64, signaled: 1, wc_opcode: 3, kind: 2, iova: 64, len: 32,
    first_psn: 24, npsn: 24, resp: 24, pmtu: 3, done: 1, status: 8, vendor: 8
);
pub type OpEntry = Bits<{ op_layout::BITS }>;

crate::unpack_fields!(
    /// The create-time fields the requester reads.
    QpcFields, qpc_layout; present: 1, pdn: 8, send_cqn: 8, sq_log: 4, sq_ring: 58
);
crate::unpack_fields!(
    /// The attributes the requester reads.
    QpaFields, qpa_layout; state: 3, pmtu: 3, dest_qpn: 24, dest_mac: 48, dest_ip: 32,
    udp_sport: 16, timeout: 5, retry_cnt: 3, rnr_retry: 3, max_rd_atomic: 5
);
crate::unpack_fields!(
    /// The requester state.
    QprFields, qpr_layout; sq_pi: 32, sq_fetch: 32, sq_ci: 32, next_psn: 24, una_psn: 24,
    sent_end: 24, retry_left: 3, rnr_left: 3
);

// FSM states.
const S_IDLE: u64 = 0;
const S_CTX: u64 = 1;
const S_CTX_IN: u64 = 2;
const S_WR_DB: u64 = 3;
const S_DECIDE: u64 = 4;
const S_FETCH: u64 = 5;
const S_WQE: u64 = 6;
const S_CHECK: u64 = 7;
const S_FAULT: u64 = 8;
const S_MR_REQ: u64 = 9;
const S_MR_RES: u64 = 10;
const S_FIT: u64 = 11;
const S_APPEND: u64 = 12;
const S_JOB: u64 = 13;
const S_WQPR: u64 = 14;
const S_CQE: u64 = 15;
const S_RX_UNK: u64 = 16;
const S_RX_START: u64 = 17;
const S_RX_WALK: u64 = 18;
const S_RX_DEC: u64 = 19;
const S_RX_PASS: u64 = 20;
const S_RX_DRD: u64 = 21;
const S_RX_DREQ: u64 = 22;
const S_RX_DDATA: u64 = 23;
const S_RX_DST: u64 = 24;
const S_RX_DWR: u64 = 25;
const S_RX_DRAIN: u64 = 26;
const S_RET_RD: u64 = 27;
const S_RET_CHK: u64 = 28;
const S_RET_CQE: u64 = 29;
const S_RT_RD: u64 = 30;
const S_RT_CHK: u64 = 31;
const S_RT_JOB: u64 = 32;
const S_TO: u64 = 33;
const S_TO_RD: u64 = 34;
const S_TO_WR: u64 = 35;
const S_FL_RD: u64 = 36;
const S_FL_CQE: u64 = 37;
const S_FL_POST: u64 = 38;
const ST_FLUSH: u64 = WcStatus::WrFlushErr.code() as u64;
const QPS_ERR: u64 = QpState::Err.code() as u64;
const ST_RETRY_EXC: u64 = WcStatus::RetryExcErr.code() as u64;

/// `rx_cnt.code` of a response for a QP that cannot take it (UnknownQpDrops); the other
/// codes are [`ReqRxCheck`]'s `CNT_*`.
pub const CNT_UNKNOWN_QP: u64 = 5;

fn k<const N: usize>(v: u64) -> Constant<Bits<N>> {
    Constant::new(v.into())
}

/// The requester's transmit sequencer and its op ring; see the [module docs](self).
#[derive(LogicBlock)]
pub struct Requester<const QA: usize, const RA: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// Our MAC and IPv4 address (BAR0), the source of every request.
    pub local_mac: Signal<In, Bits<48>>,
    pub local_ip: Signal<In, Bits<32>>,

    /// SQ doorbells: the new producer index of a QP's SQ (the register file's doorbell
    /// FIFO, kind SQ).
    pub sq_db: QDbServer<QA>,
    /// A QP was reset or destroyed (the command engine's QP event): its op-ring
    /// bookkeeping (`stopped`, outstanding READ/atomic count, `sent_end` copy) is cleared.
    pub qp_clr: QpClrServer<QA>,

    /// The QP context tables' datapath read ports (`CtxTable`) and the `qpr` write port.
    pub qpc_rd: CtxRdClient<QA, { qpc_layout::BITS }>,
    pub qpa_rd: CtxRdClient<QA, { qpa_layout::BITS }>,
    pub qpr_rd: CtxRdClient<QA, { qpr_layout::BITS }>,
    pub qpr_wr: CtxWrClient<QA, { qpr_layout::BITS }>,

    /// The lkey check of an SGE, through an `MrCheck` (request / answer).
    pub mr: MrClient,

    /// `WqeFetch`'s DMA read client (the SQ slot, 64 bytes).
    pub wqe_rd: DmaRdClient,

    /// `Segmenter`'s DMA read client (payloads).
    pub seg_rd: DmaRdClient,

    /// Request records and payloads (`Segmenter`'s), for `TxPath`'s request source.
    pub pkt: RecordClient,
    pub pay: PayloadClient,
    /// A request record was taken (pulse; for the ACK timer).
    pub m_sent_valid: Signal<Out, Bit>,
    pub m_sent_qpn: Signal<Out, Bits<QA>>,
    pub m_sent_psn: Signal<Out, Bits<24>>,

    /// Send completions (`Completion`'s `cqe`): a WQE that fails validation at the
    /// head of the SQ, and every op the receive half retires that is signaled or failed
    /// (`vendor_err` = the NAK's syndrome).
    pub cqe: CqeClient,

    /// The QP must enter the error state (pulse): a failed op completed at the head of
    /// the SQ (a WQE that failed validation, an op a NAK or a refused write failed), or
    /// its SQ could not be read.
    pub m_qp_err_valid: Signal<Out, Bit>,
    pub m_qp_err_qpn: Signal<Out, Bits<QA>>,
    /// Counter pulses (one cycle each, global and per QP): DmaFaults and AckTimeouts of QP
    /// `cnt.qpn`, Retransmits of QP `cnt.rtx_qpn` (`ReqCntClient`).
    pub cnt: ReqCntClient<QA>,

    /// Responses to our requests (the RX front end's header records of ACKs, NAKs, READ
    /// responses and atomic ACKs): the BTH's destination QP, opcode and PSN, the AETH's
    /// syndrome, the AtomicAckETH's original value, the payload length (without pad).
    pub rsp: RspHdrServer,
    /// The response's IPv4 source: one from anyone but the QP's peer is dropped.
    /// The payload of each response with `payload_len > 0`, lane 0 first. Always consumed:
    /// written to host memory (an in-order READ response) or drained.
    pub rsp_pay: RxPayServer,
    /// DMA write client (the contract's write stream): a READ response's payload at the
    /// op's local IOVA + offset, an atomic's original value (8 bytes); one request per
    /// response, data from lane 0, one status per write.
    pub dma_wr: DmaWrClient,
    /// Receive counters (pulse): `rx_cnt.code` is `ReqRxCheck`'s `CNT_*` (NaksReceived,
    /// RnrNaksReceived, Duplicates, MalformedDrops) or [`CNT_UNKNOWN_QP`]; counted for QP
    /// `rx_cnt.qpn` too when `rx_cnt.per_qp` (else only globally).
    pub rx_cnt: RxCntClient<QA>,

    /// The op ring's walk port (for the receive half and `ReqRxCheck`): op `slot` of QP
    /// `qpn` (slot = SQ index mod 16; the oldest is `qpr.sq_ci`), fields one cycle later.
    pub s_op_rd_qpn: Signal<In, Bits<QA>>,
    pub s_op_rd_slot: Signal<In, Bits<4>>,
    pub m_op_wr_id: Signal<Out, Bits<64>>,
    pub m_op_signaled: Signal<Out, Bits<1>>,
    pub m_op_wc_opcode: Signal<Out, Bits<3>>,
    pub m_op_kind: Signal<Out, Bits<2>>,
    pub m_op_iova: Signal<Out, Bits<64>>,
    pub m_op_len: Signal<Out, Bits<32>>,
    pub m_op_first_psn: Signal<Out, Bits<24>>,
    pub m_op_npsn: Signal<Out, Bits<24>>,
    pub m_op_resp: Signal<Out, Bits<24>>,
    pub m_op_pmtu: Signal<Out, Bits<3>>,
    pub m_op_done: Signal<Out, Bits<1>>,
    pub m_op_status: Signal<Out, Bits<8>>,
    pub m_op_vendor: Signal<Out, Bits<8>>,

    // ---- sub-blocks ----
    chk: ReqRxCheck,
    orig512: Cat<448, 64, 512>,
    doff64: Cat<32, 32, 64>,
    st8a: Cat<3, 5, 8>,
    st8b: Cat<3, 5, 8>,
    fetch: WqeFetch<QA>,
    seg: Segmenter<QA>,
    tmr: QpTimers<QA>,
    ring: RAM<OpEntry, RA>,
    stop_ram: RAM<Bit, QA>,
    rdc_ram: RAM<Bits<5>, QA>,
    sent_ok_ram: RAM<Bit, QA>,
    sent_ram: RAM<Bits<24>, QA>,
    /// The go-back-N bookkeeping: `rewound_to` (valid, PSN) per QP, and mirrors of
    /// `sent_ok_ram` / `sent_ram` read by the `sent_end` update (which only moves forward).
    rwv_ram: RAM<Bit, QA>,
    rwp_ram: RAM<Bits<24>, QA>,
    sent_okx: RAM<Bit, QA>,
    sent_mx: RAM<Bits<24>, QA>,
    /// The transmit cursor held at the window's edge (valid, PSN per QP): packets from
    /// that PSN on (the rest of its op and every later op) are not sent yet.
    tpv_ram: RAM<Bit, QA>,
    tpp_ram: RAM<Bits<24>, QA>,
    /// An RNR wait runs (per QP; the model's `rnr_until` is set): nothing is sent, the
    /// cursor is held (`tp_v`) at the PSN it rewound to until the RNR timer fires.
    rnrw_ram: RAM<Bit, QA>,
    qpc_u: QpcFields,
    qpa_u: QpaFields,
    qpr_u: QprFields,
    qpr_p: QprPack,
    op_p: OpPack,
    op_u: OpUnpack,
    ring_waddr: Cat<QA, 4, RA>,
    ring_raddr: Cat<QA, 4, RA>,
    ilen32: Cat<24, 8, 32>,
    qpn24: ZeroExt<QA, 24>,
    wcop8: Cat<5, 3, 8>,

    // ---- registers ----
    mode_rx: DFF<Bit>,
    rx_unk: DFF<Bit>,
    rx_glob: DFF<Bit>,
    rx_qpn: DFF<Bits<24>>,
    rx_opcode: DFF<Bits<8>>,
    rx_psn: DFF<Bits<24>>,
    rx_has_aeth: DFF<Bit>,
    rx_syn: DFF<Bits<8>>,
    rx_has_aa: DFF<Bit>,
    rx_orig: DFF<Bits<64>>,
    rx_plen: DFF<Bits<16>>,
    rx_src: DFF<Bits<32>>,
    pay_left: DFF<Bit>,
    retry_cnt: DFF<Bits<3>>,
    rnr_retry: DFF<Bits<3>>,
    wk: DFF<Bits<5>>,
    wk_v: DFF<Bit>,
    wslot: DFF<Bits<4>>,
    pslot: DFF<Bits<4>>,
    pidx: DFF<Bits<5>>,
    l_upto: DFF<Bits<5>>,
    l_f0v: DFF<Bit>,
    l_f0op: DFF<Bits<5>>,
    l_f0st: DFF<Bits<8>>,
    l_f0syn: DFF<Bits<8>>,
    l_f1v: DFF<Bit>,
    l_f1op: DFF<Bits<5>>,
    l_f1st: DFF<Bits<8>>,
    l_f1syn: DFF<Bits<8>>,
    l_dv: DFF<Bit>,
    l_dop: DFF<Bits<5>>,
    l_doff: DFF<Bits<32>>,
    l_datomic: DFF<Bit>,
    l_duna: DFF<Bits<24>>,
    dok: DFF<Bit>,
    rwd_v: DFF<Bit>,
    rwd: DFF<Bits<24>>,
    rtx_act: DFF<Bit>,
    rtx_idx: DFF<Bits<32>>,
    rtx_psn: DFF<Bits<24>>,
    rt_first: DFF<Bits<24>>,
    rt_start: DFF<Bits<24>>,
    rt_pmtu: DFF<Bits<3>>,
    rt_npsn: DFF<Bits<24>>,
    rt_rdl: DFF<Bit>,
    tp_v: DFF<Bit>,
    tp_psn: DFF<Bits<24>>,
    tpw: DFF<Bit>,
    /// The ACK timer: a visit of a fired timer; arm / clear at the write-back.
    mode_to: DFF<Bit>,
    tm_arm: DFF<Bit>,
    tm_clr: DFF<Bit>,
    timeout: DFF<Bits<5>>,
    /// The RNR wait: the QP's flag, a wait started by this visit (the RNR timer set at
    /// the write-back) and its timer code, the kind of the fire being served.
    rnr_w: DFF<Bit>,
    tm_rnr: DFF<Bit>,
    rnr_code: DFF<Bits<5>>,
    fire_rnr: DFF<Bit>,
    mode_rt: DFF<Bit>,
    /// The flush: the posted WQEs (sq_fetch .. sq_pi) read to complete them.
    mode_fl: DFF<Bit>,
    s1_v: DFF<Bit>,
    s1_q: DFF<Bits<QA>>,
    s1_p1: DFF<Bits<24>>,
    fw_v: DFF<Bit>,
    fw_q: DFF<Bits<QA>>,
    fw_val: DFF<Bits<24>>,
    /// The FSM state (read by the benches in hdl/tests).
    pub state: DFF<Bits<6>>,
    qpn: DFF<Bits<QA>>,
    scan: DFF<Bits<QA>>,
    mode_db: DFF<Bit>,
    /// The visit's context reads (`qpc`, `qpa`, `qpr`, all three at once): asked, answered.
    asked_c: DFF<Bit>,
    asked_a: DFF<Bit>,
    asked_r: DFF<Bit>,
    got_c: DFF<Bit>,
    got_a: DFF<Bit>,
    got_r: DFF<Bit>,
    ctx_all: Signal<Local, Bit>,
    again: DFF<Bit>,
    db_pi: DFF<Bits<32>>,
    /// A QP-error pulse waiting to go out (read by the benches in hdl/tests).
    pub serr_pend: DFF<Bit>,
    serr_qpn: DFF<Bits<QA>>,
    present: DFF<Bit>,
    pdn: DFF<Bits<8>>,
    send_cqn: DFF<Bits<8>>,
    sq_log: DFF<Bits<4>>,
    sq_ring: DFF<Bits<58>>,
    qp_state: DFF<Bits<3>>,
    pmtu: DFF<Bits<3>>,
    dest_qpn: DFF<Bits<24>>,
    dest_mac: DFF<Bits<48>>,
    dest_ip: DFF<Bits<32>>,
    udp_sport: DFF<Bits<16>>,
    max_rd: DFF<Bits<5>>,
    sq_pi: DFF<Bits<32>>,
    sq_fetch: DFF<Bits<32>>,
    sq_ci: DFF<Bits<32>>,
    next_psn: DFF<Bits<24>>,
    una_psn: DFF<Bits<24>>,
    sent_end: DFF<Bits<24>>,
    retry_left: DFF<Bits<3>>,
    rnr_left: DFF<Bits<3>>,
    stopped: DFF<Bit>,
    rd_cnt: DFF<Bits<5>>,
    w_wr_id: DFF<Bits<64>>,
    w_opcode: DFF<Bits<8>>,
    w_flags: DFF<Bits<8>>,
    w_inline_len: DFF<Bits<8>>,
    w_num_sge: DFF<Bits<8>>,
    w_imm: DFF<Bits<32>>,
    w_remote_addr: DFF<Bits<64>>,
    w_rkey: DFF<Bits<32>>,
    w_compare_add: DFF<Bits<64>>,
    w_swap: DFF<Bits<64>>,
    w_inline: DFF<Bits<256>>,
    w_sge_addr: DFF<Bits<64>>,
    w_sge_length: DFF<Bits<32>>,
    w_sge_lkey: DFF<Bits<32>>,
    is_err: DFF<Bit>,
    err_head: DFF<Bit>,
    job_taken: DFF<Bit>,
    status: DFF<Bits<8>>,
    iova: DFF<Bits<64>>,

    // ---- combinational ----
    qp_fits: Signal<Local, Bit>,
    rx_can: Signal<Local, Bit>,
    ring_n: Signal<Local, Bits<32>>,
    n5: Signal<Local, Bits<5>>,
    pend_a: Signal<Local, Bits<5>>,
    pend: Signal<Local, Bits<5>>,
    wk_end: Signal<Local, Bits<5>>,
    unused_ring_n: Signal<Local, Bits<27>>,
    dslot: Signal<Local, Bits<4>>,
    unused_dop: Signal<Local, Bit>,
    p_hit: Signal<Local, Bit>,
    p_f0: Signal<Local, Bit>,
    p_f1: Signal<Local, Bit>,
    nd: Signal<Local, Bits<1>>,
    nst: Signal<Local, Bits<8>>,
    nven: Signal<Local, Bits<8>>,
    nresp: Signal<Local, Bits<24>>,
    resp1: Signal<Local, Bits<24>>,
    rd_like_op: Signal<Local, Bit>,
    rx_st: Signal<Local, Bit>,
    rt_d: Signal<Local, Bits<24>>,
    rt_in: Signal<Local, Bit>,
    rt_before: Signal<Local, Bit>,
    rt_send: Signal<Local, Bit>,
    rt_s: Signal<Local, Bits<24>>,
    rt_sp: Signal<Local, Bits<24>>,
    rt_spo: Signal<Local, Bits<24>>,
    rt_ok: Signal<Local, Bit>,
    rt_end: Signal<Local, Bits<24>>,
    rt_cut: Signal<Local, Bit>,
    stop_psn: Signal<Local, Bits<24>>,
    cut: Signal<Local, Bit>,
    tp_off: Signal<Local, Bits<24>>,
    resume: Signal<Local, Bit>,
    flush_go: Signal<Local, Bit>,
    fire_take: Signal<Local, Bit>,
    to_ok: Signal<Local, Bit>,
    rtx_pulse: Signal<Local, Bit>,
    rnr_base: Signal<Local, Bits<TIME_BITS>>,
    rnr_sh: Signal<Local, Bits<5>>,
    unused_set_ready: Signal<Local, Bit>,
    s_base: Signal<Local, Bits<24>>,
    s_base_ok: Signal<Local, Bit>,
    s_diff: Signal<Local, Bits<24>>,
    s_new: Signal<Local, Bits<24>>,
    unused_timer: Signal<Local, Bits<2>>,
    unused_dlv_len: Signal<Local, Bits<32>>,
    unused_activate: Signal<Local, Bit>,
    known: Signal<Local, Bit>,
    kind: Signal<Local, Bits<2>>,
    wc_op: Signal<Local, Bits<3>>,
    rd_like: Signal<Local, Bit>,
    is_atomic: Signal<Local, Bit>,
    is_inline: Signal<Local, Bit>,
    len: Signal<Local, Bits<32>>,
    /// The QP's packet size as a shift and a mask.
    mtu_shift: MtuShift,
    npkt: Signal<Local, Bits<32>>,
    npsn: Signal<Local, Bits<24>>,
    chk_status: Signal<Local, Bits<8>>,
    need_mr: Signal<Local, Bit>,
    go_mr: Signal<Local, Bit>,
    limit: Signal<Local, Bits<5>>,
    blocked: Signal<Local, Bit>,
    fits: Signal<Local, Bit>,
    at_head: Signal<Local, Bit>,
    eligible: Signal<Local, Bit>,
    commit: Signal<Local, Bit>,
    done1: Signal<Local, Bits<1>>,
    op_npsn: Signal<Local, Bits<24>>,
    fence: Signal<Local, Bit>,
    wsum: Signal<Local, Bits<24>>,
    wdiff: Signal<Local, Bits<24>>,
    unused_fetch_err_qpn: Signal<Local, Bits<QA>>,
    clr_take: Signal<Local, Bit>,
    unused_npkt: Signal<Local, Bits<8>>,
    unused_fetch_err_index: Signal<Local, Bits<32>>,
    unused_seg_done: Signal<Local, Bit>,
    unused_seg_done_qpn: Signal<Local, Bits<QA>>,
    unused_seg_sent_last: Signal<Local, Bit>,
    unused_seg_err_psn: Signal<Local, Bits<24>>,
    unused_wqe_qpn: Signal<Local, Bits<QA>>,
    unused_wqe_index: Signal<Local, Bits<32>>,

    // ---- constants ----
    k_rx_unk: Constant<Bits<6>>,
    k_rx_start: Constant<Bits<6>>,
    k_rx_walk: Constant<Bits<6>>,
    k_rx_dec: Constant<Bits<6>>,
    k_rx_pass: Constant<Bits<6>>,
    k_rx_drd: Constant<Bits<6>>,
    k_rx_dreq: Constant<Bits<6>>,
    k_rx_ddata: Constant<Bits<6>>,
    k_rx_dst: Constant<Bits<6>>,
    k_rx_dwr: Constant<Bits<6>>,
    k_rx_drain: Constant<Bits<6>>,
    k_ret_rd: Constant<Bits<6>>,
    k_ret_chk: Constant<Bits<6>>,
    k_ret_cqe: Constant<Bits<6>>,
    k_rt_rd: Constant<Bits<6>>,
    k_rt_chk: Constant<Bits<6>>,
    k_rt_job: Constant<Bits<6>>,
    k_to: Constant<Bits<6>>,
    k_to_rd: Constant<Bits<6>>,
    k_to_wr: Constant<Bits<6>>,
    k_st_retry_exc: Constant<Bits<8>>,
    k_fl_rd: Constant<Bits<6>>,
    k_fl_cqe: Constant<Bits<6>>,
    k_fl_post: Constant<Bits<6>>,
    k_st_flush: Constant<Bits<8>>,
    k_qps_err: Constant<Bits<3>>,
    k_one3: Constant<Bits<3>>,
    k_tmo_base: Constant<Bits<TIME_BITS>>,
    k_rnr_unit: Constant<Bits<TIME_BITS>>,
    k_rnr_unit3: Constant<Bits<TIME_BITS>>,
    k_tmr_arm: Constant<Bits<2>>,
    k_tmr_clear: Constant<Bits<2>>,
    k_cur_rewind: Constant<Bits<2>>,
    k_sqd: Constant<Bits<3>>,
    k_cnt_unk: Constant<Bits<3>>,
    k_qa24: Constant<Bits<24>>,
    k_eight16: Constant<Bits<16>>,
    k_keep8: Constant<Bits<64>>,
    k_zero448: Constant<Bits<448>>,
    k_st_access: Constant<Bits<8>>,
    k_one4: Constant<Bits<4>>,
    k_idle: Constant<Bits<6>>,   // = S_IDLE
    k_ctx: Constant<Bits<6>>,    // = S_CTX
    k_ctx_in: Constant<Bits<6>>, // = S_CTX_IN
    k_wr_db: Constant<Bits<6>>,  // = S_WR_DB
    k_decide: Constant<Bits<6>>, // = S_DECIDE
    k_fetch: Constant<Bits<6>>,  // = S_FETCH
    k_wqe: Constant<Bits<6>>,    // = S_WQE
    k_check: Constant<Bits<6>>,  // = S_CHECK
    k_fault: Constant<Bits<6>>,  // = S_FAULT
    k_mr_req: Constant<Bits<6>>, // = S_MR_REQ
    k_mr_res: Constant<Bits<6>>, // = S_MR_RES
    k_fit: Constant<Bits<6>>,    // = S_FIT
    k_append: Constant<Bits<6>>, // = S_APPEND
    k_job: Constant<Bits<6>>,    // = S_JOB
    k_wqpr: Constant<Bits<6>>,   // = S_WQPR
    k_cqe: Constant<Bits<6>>,    // = S_CQE
    k_rts: Constant<Bits<3>>,
    k_zero1: Constant<Bits<1>>,       // = 0
    k_one1: Constant<Bits<1>>,        // = 1
    k_zero3: Constant<Bits<3>>,       // = 0
    k_one_qp: Constant<Bits<QA>>,     // = 1
    k_zero4: Constant<Bits<4>>,       // = 0
    k_zero5: Constant<Bits<5>>,       // = 0
    k_one5: Constant<Bits<5>>,        // = 1
    k_sixteen5: Constant<Bits<5>>,    // = 16
    k_zero8: Constant<Bits<8>>,       // = 0
    k_one8: Constant<Bits<8>>,        // = 1
    k_max_inline8: Constant<Bits<8>>, // = MAX_INLINE as u64
    k_op_write: Constant<Bits<8>>,
    k_op_write_imm: Constant<Bits<8>>,
    k_op_send: Constant<Bits<8>>,
    k_op_send_imm: Constant<Bits<8>>,
    k_op_read: Constant<Bits<8>>,
    k_op_cmp_swap: Constant<Bits<8>>,
    k_op_fetch_add: Constant<Bits<8>>,
    k_op_send_inv: Constant<Bits<8>>,
    k_st_len: Constant<Bits<8>>,
    k_st_qp_op: Constant<Bits<8>>,
    k_st_prot: Constant<Bits<8>>,
    k_kind_send: Constant<Bits<2>>,   // = KIND_SEND
    k_kind_write: Constant<Bits<2>>,  // = KIND_WRITE
    k_kind_read: Constant<Bits<2>>,   // = KIND_READ
    k_kind_atomic: Constant<Bits<2>>, // = KIND_ATOMIC
    k_wc_send: Constant<Bits<3>>,
    k_wc_write: Constant<Bits<3>>,
    k_wc_read: Constant<Bits<3>>,
    k_wc_cmp_swap: Constant<Bits<3>>,
    k_wc_fetch_add: Constant<Bits<3>>,
    k_need_write: Constant<Bits<4>>, // access::LOCAL_WRITE
    k_zero16: Constant<Bits<16>>,    // = 0
    k_zero24: Constant<Bits<24>>,    // = 0
    k_one24: Constant<Bits<24>>,     // = 1
    k_zero32: Constant<Bits<32>>,    // = 0
    k_one32: Constant<Bits<32>>,     // = 1
    k_eight32: Constant<Bits<32>>,   // = 8
    k_max_msg: Constant<Bits<32>>,   // = 1 << 31
    k_window: Constant<Bits<24>>,    // = WINDOW
    k_zero64: Constant<Bits<64>>,    // = 0
    k_slot_max: Constant<Bits<32>>,  // = OPS as u64
}

impl<const QA: usize, const RA: usize> Default for Requester<QA, RA> {
    fn default() -> Self {
        assert_eq!(RA, QA + 4, "Requester: the op ring has 16 entries a QP");
        Requester {
            clock: Default::default(),
            reset: Default::default(),
            local_mac: Default::default(),
            local_ip: Default::default(),
            sq_db: Default::default(),
            qp_clr: Default::default(),
            qpc_rd: Default::default(),
            qpa_rd: Default::default(),
            qpr_rd: Default::default(),
            qpr_wr: Default::default(),
            mr: Default::default(),
            wqe_rd: Default::default(),
            seg_rd: Default::default(),
            pkt: Default::default(),
            pay: Default::default(),
            m_sent_valid: Default::default(),
            m_sent_qpn: Default::default(),
            m_sent_psn: Default::default(),
            cqe: Default::default(),
            m_qp_err_valid: Default::default(),
            m_qp_err_qpn: Default::default(),
            cnt: Default::default(),
            s_op_rd_qpn: Default::default(),
            s_op_rd_slot: Default::default(),
            m_op_wr_id: Default::default(),
            m_op_signaled: Default::default(),
            m_op_wc_opcode: Default::default(),
            m_op_kind: Default::default(),
            m_op_iova: Default::default(),
            m_op_len: Default::default(),
            m_op_first_psn: Default::default(),
            m_op_npsn: Default::default(),
            m_op_resp: Default::default(),
            m_op_pmtu: Default::default(),
            m_op_done: Default::default(),
            m_op_status: Default::default(),
            rsp: Default::default(),
            rsp_pay: Default::default(),
            dma_wr: Default::default(),
            rx_cnt: Default::default(),
            m_op_vendor: Default::default(),
            chk: Default::default(),
            orig512: Default::default(),
            doff64: Default::default(),
            st8a: Default::default(),
            st8b: Default::default(),
            mode_rx: Default::default(),
            rx_unk: Default::default(),
            rx_glob: Default::default(),
            rx_qpn: Default::default(),
            rx_opcode: Default::default(),
            rx_psn: Default::default(),
            rx_has_aeth: Default::default(),
            rx_syn: Default::default(),
            rx_has_aa: Default::default(),
            rx_orig: Default::default(),
            rx_plen: Default::default(),
            rx_src: Default::default(),
            pay_left: Default::default(),
            retry_cnt: Default::default(),
            rnr_retry: Default::default(),
            wk: Default::default(),
            wk_v: Default::default(),
            wslot: Default::default(),
            pslot: Default::default(),
            pidx: Default::default(),
            l_upto: Default::default(),
            l_f0v: Default::default(),
            l_f0op: Default::default(),
            l_f0st: Default::default(),
            l_f0syn: Default::default(),
            l_f1v: Default::default(),
            l_f1op: Default::default(),
            l_f1st: Default::default(),
            l_f1syn: Default::default(),
            l_dv: Default::default(),
            l_dop: Default::default(),
            l_doff: Default::default(),
            l_datomic: Default::default(),
            l_duna: Default::default(),
            dok: Default::default(),
            rwd_v: Default::default(),
            rwd: Default::default(),
            rtx_act: Default::default(),
            rtx_idx: Default::default(),
            rtx_psn: Default::default(),
            rt_first: Default::default(),
            rt_start: Default::default(),
            rt_pmtu: Default::default(),
            rt_npsn: Default::default(),
            rt_rdl: Default::default(),
            tp_v: Default::default(),
            tp_psn: Default::default(),
            tpw: Default::default(),
            mode_to: Default::default(),
            rnr_w: Default::default(),
            tm_rnr: Default::default(),
            rnr_code: Default::default(),
            fire_rnr: Default::default(),
            tm_arm: Default::default(),
            tm_clr: Default::default(),
            timeout: Default::default(),
            mode_rt: Default::default(),
            mode_fl: Default::default(),
            s1_v: Default::default(),
            s1_q: Default::default(),
            s1_p1: Default::default(),
            fw_v: Default::default(),
            fw_q: Default::default(),
            fw_val: Default::default(),
            rt_d: Default::default(),
            rt_in: Default::default(),
            rt_before: Default::default(),
            rt_send: Default::default(),
            rt_s: Default::default(),
            rt_sp: Default::default(),
            rt_spo: Default::default(),
            rt_ok: Default::default(),
            rt_end: Default::default(),
            rt_cut: Default::default(),
            stop_psn: Default::default(),
            cut: Default::default(),
            tp_off: Default::default(),
            resume: Default::default(),
            flush_go: Default::default(),
            fire_take: Default::default(),
            to_ok: Default::default(),
            rtx_pulse: Default::default(),
            rnr_base: Default::default(),
            rnr_sh: Default::default(),
            unused_set_ready: Default::default(),
            s_base: Default::default(),
            s_base_ok: Default::default(),
            s_diff: Default::default(),
            s_new: Default::default(),
            qp_fits: Default::default(),
            rx_can: Default::default(),
            ring_n: Default::default(),
            n5: Default::default(),
            pend_a: Default::default(),
            pend: Default::default(),
            wk_end: Default::default(),
            unused_ring_n: Default::default(),
            dslot: Default::default(),
            unused_dop: Default::default(),
            p_hit: Default::default(),
            p_f0: Default::default(),
            p_f1: Default::default(),
            nd: Default::default(),
            nst: Default::default(),
            nven: Default::default(),
            nresp: Default::default(),
            resp1: Default::default(),
            rd_like_op: Default::default(),
            rx_st: Default::default(),
            unused_timer: Default::default(),
            unused_dlv_len: Default::default(),
            unused_activate: Default::default(),
            fetch: Default::default(),
            seg: Default::default(),
            tmr: Default::default(),
            ring: Default::default(),
            stop_ram: Default::default(),
            rdc_ram: Default::default(),
            sent_ok_ram: Default::default(),
            sent_ram: Default::default(),
            rwv_ram: Default::default(),
            rwp_ram: Default::default(),
            sent_okx: Default::default(),
            sent_mx: Default::default(),
            tpv_ram: Default::default(),
            tpp_ram: Default::default(),
            rnrw_ram: Default::default(),
            qpc_u: Default::default(),
            qpa_u: Default::default(),
            qpr_u: Default::default(),
            qpr_p: Default::default(),
            op_p: Default::default(),
            op_u: Default::default(),
            ring_waddr: Default::default(),
            ring_raddr: Default::default(),
            ilen32: Default::default(),
            qpn24: Default::default(),
            wcop8: Default::default(),
            state: Default::default(),
            qpn: Default::default(),
            scan: Default::default(),
            mode_db: Default::default(),
            asked_c: Default::default(),
            asked_a: Default::default(),
            asked_r: Default::default(),
            got_c: Default::default(),
            got_a: Default::default(),
            got_r: Default::default(),
            ctx_all: Default::default(),
            again: Default::default(),
            db_pi: Default::default(),
            serr_pend: Default::default(),
            serr_qpn: Default::default(),
            present: Default::default(),
            pdn: Default::default(),
            send_cqn: Default::default(),
            sq_log: Default::default(),
            sq_ring: Default::default(),
            qp_state: Default::default(),
            pmtu: Default::default(),
            dest_qpn: Default::default(),
            dest_mac: Default::default(),
            dest_ip: Default::default(),
            udp_sport: Default::default(),
            max_rd: Default::default(),
            sq_pi: Default::default(),
            sq_fetch: Default::default(),
            sq_ci: Default::default(),
            next_psn: Default::default(),
            una_psn: Default::default(),
            sent_end: Default::default(),
            retry_left: Default::default(),
            rnr_left: Default::default(),
            stopped: Default::default(),
            rd_cnt: Default::default(),
            w_wr_id: Default::default(),
            w_opcode: Default::default(),
            w_flags: Default::default(),
            w_inline_len: Default::default(),
            w_num_sge: Default::default(),
            w_imm: Default::default(),
            w_remote_addr: Default::default(),
            w_rkey: Default::default(),
            w_compare_add: Default::default(),
            w_swap: Default::default(),
            w_inline: Default::default(),
            w_sge_addr: Default::default(),
            w_sge_length: Default::default(),
            w_sge_lkey: Default::default(),
            is_err: Default::default(),
            err_head: Default::default(),
            job_taken: Default::default(),
            status: Default::default(),
            iova: Default::default(),
            known: Default::default(),
            kind: Default::default(),
            wc_op: Default::default(),
            rd_like: Default::default(),
            is_atomic: Default::default(),
            is_inline: Default::default(),
            len: Default::default(),
            mtu_shift: Default::default(),
            npkt: Default::default(),
            npsn: Default::default(),
            chk_status: Default::default(),
            need_mr: Default::default(),
            go_mr: Default::default(),
            limit: Default::default(),
            blocked: Default::default(),
            fits: Default::default(),
            at_head: Default::default(),
            eligible: Default::default(),
            commit: Default::default(),
            done1: Default::default(),
            op_npsn: Default::default(),
            fence: Default::default(),
            wsum: Default::default(),
            wdiff: Default::default(),
            unused_fetch_err_qpn: Default::default(),
            clr_take: Default::default(),
            unused_npkt: Default::default(),
            unused_fetch_err_index: Default::default(),
            unused_seg_done: Default::default(),
            unused_seg_done_qpn: Default::default(),
            unused_seg_sent_last: Default::default(),
            unused_seg_err_psn: Default::default(),
            unused_wqe_qpn: Default::default(),
            unused_wqe_index: Default::default(),
            k_rx_unk: k(S_RX_UNK),
            k_rx_start: k(S_RX_START),
            k_rx_walk: k(S_RX_WALK),
            k_rx_dec: k(S_RX_DEC),
            k_rx_pass: k(S_RX_PASS),
            k_rx_drd: k(S_RX_DRD),
            k_rx_dreq: k(S_RX_DREQ),
            k_rx_ddata: k(S_RX_DDATA),
            k_rx_dst: k(S_RX_DST),
            k_rx_dwr: k(S_RX_DWR),
            k_rx_drain: k(S_RX_DRAIN),
            k_ret_rd: k(S_RET_RD),
            k_ret_chk: k(S_RET_CHK),
            k_ret_cqe: k(S_RET_CQE),
            k_rt_rd: k(S_RT_RD),
            k_rt_chk: k(S_RT_CHK),
            k_rt_job: k(S_RT_JOB),
            k_to: k(S_TO),
            k_to_rd: k(S_TO_RD),
            k_to_wr: k(S_TO_WR),
            k_st_retry_exc: k(ST_RETRY_EXC),
            k_fl_rd: k(S_FL_RD),
            k_fl_cqe: k(S_FL_CQE),
            k_fl_post: k(S_FL_POST),
            k_st_flush: k(ST_FLUSH),
            k_qps_err: k(QPS_ERR),
            k_one3: k(1),
            k_tmo_base: k(1024),
            // (the RNR timer table in 10 us units, 2500 cycles at 4 ns: 1, 2, 3, 4, 6, 8,
            // ... = 2^(c/2) for an even code, 3 * 2^((c-3)/2) for an odd one from 3;
            // code 0 is 2^16)
            k_rnr_unit: k(10_000 / 4),
            k_rnr_unit3: k(3 * 10_000 / 4),
            k_tmr_arm: k(crate::requester::req_rx_check::TMR_ARM),
            k_tmr_clear: k(crate::requester::req_rx_check::TMR_CLEAR),
            k_cur_rewind: k(CUR_REWIND),
            k_sqd: k(QpState::Sqd.code() as u64),
            k_cnt_unk: k(CNT_UNKNOWN_QP),
            k_qa24: k(QA as u64),
            k_eight16: k(8),
            k_keep8: k(0xff),
            k_zero448: k(0),
            k_st_access: k(WcStatus::LocAccessErr.code() as u64),
            k_one4: k(1),
            k_idle: k(S_IDLE),
            k_ctx: k(S_CTX),
            k_ctx_in: k(S_CTX_IN),
            k_wr_db: k(S_WR_DB),
            k_decide: k(S_DECIDE),
            k_fetch: k(S_FETCH),
            k_wqe: k(S_WQE),
            k_check: k(S_CHECK),
            k_fault: k(S_FAULT),
            k_mr_req: k(S_MR_REQ),
            k_mr_res: k(S_MR_RES),
            k_fit: k(S_FIT),
            k_append: k(S_APPEND),
            k_job: k(S_JOB),
            k_wqpr: k(S_WQPR),
            k_cqe: k(S_CQE),
            k_rts: k(QpState::Rts.code() as u64),
            k_zero1: k(0),
            k_one1: k(1),
            k_zero3: k(0),
            k_one_qp: k(1),
            k_zero4: k(0),
            k_zero5: k(0),
            k_one5: k(1),
            k_sixteen5: k(16),
            k_zero8: k(0),
            k_one8: k(1),
            k_max_inline8: k(MAX_INLINE as u64),
            k_op_write: k(WrOpcode::RdmaWrite.code() as u64),
            k_op_write_imm: k(WrOpcode::RdmaWriteWithImm.code() as u64),
            k_op_send: k(WrOpcode::Send.code() as u64),
            k_op_send_imm: k(WrOpcode::SendWithImm.code() as u64),
            k_op_read: k(WrOpcode::RdmaRead.code() as u64),
            k_op_cmp_swap: k(WrOpcode::AtomicCmpAndSwp.code() as u64),
            k_op_fetch_add: k(WrOpcode::AtomicFetchAndAdd.code() as u64),
            k_op_send_inv: k(WrOpcode::SendWithInv.code() as u64),
            k_st_len: k(WcStatus::LocLenErr.code() as u64),
            k_st_qp_op: k(WcStatus::LocQpOpErr.code() as u64),
            k_st_prot: k(WcStatus::LocProtErr.code() as u64),
            k_kind_send: k(KIND_SEND),
            k_kind_write: k(KIND_WRITE),
            k_kind_read: k(KIND_READ),
            k_kind_atomic: k(KIND_ATOMIC),
            k_wc_send: k(WcOpcode::Send.code() as u64),
            k_wc_write: k(WcOpcode::RdmaWrite.code() as u64),
            k_wc_read: k(WcOpcode::RdmaRead.code() as u64),
            k_wc_cmp_swap: k(WcOpcode::CompSwap.code() as u64),
            k_wc_fetch_add: k(WcOpcode::FetchAdd.code() as u64),
            k_need_write: k(access::LOCAL_WRITE.into()),
            k_zero16: k(0),
            k_zero24: k(0),
            k_one24: k(1),
            k_zero32: k(0),
            k_one32: k(1),
            k_eight32: k(8),
            k_max_msg: k(1 << 31),
            k_window: k(WINDOW),
            k_zero64: k(0),
            k_slot_max: k(OPS as u64),
        }
    }
}

impl<const QA: usize, const RA: usize> Logic for Requester<QA, RA> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            state,
            qpn,
            scan,
            mode_db,
            asked_c,
            asked_a,
            asked_r,
            got_c,
            got_a,
            got_r,
            again,
            db_pi,
            serr_pend,
            serr_qpn,
            present,
            pdn,
            send_cqn,
            sq_log,
            sq_ring,
            qp_state,
            pmtu,
            dest_qpn,
            dest_mac,
            dest_ip,
            udp_sport,
            max_rd,
            sq_pi,
            sq_fetch,
            sq_ci,
            next_psn,
            una_psn,
            sent_end,
            retry_left,
            rnr_left,
            stopped,
            rd_cnt,
            w_wr_id,
            w_opcode,
            w_flags,
            w_inline_len,
            w_num_sge,
            w_imm,
            w_remote_addr,
            w_rkey,
            w_compare_add,
            w_swap,
            w_inline,
            w_sge_addr,
            w_sge_length,
            w_sge_lkey,
            is_err,
            err_head,
            job_taken,
            status,
            iova,
            mode_rx,
            rx_unk,
            rx_glob,
            rx_qpn,
            rx_opcode,
            rx_psn,
            rx_has_aeth,
            rx_syn,
            rx_has_aa,
            rx_orig,
            rx_plen,
            rx_src,
            pay_left,
            retry_cnt,
            rnr_retry,
            wk,
            wk_v,
            wslot,
            pslot,
            pidx,
            l_upto,
            l_f0v,
            l_f0op,
            l_f0st,
            l_f0syn,
            l_f1v,
            l_f1op,
            l_f1st,
            l_f1syn,
            l_dv,
            l_dop,
            l_doff,
            l_datomic,
            l_duna,
            dok,
            rwd_v,
            rwd,
            rtx_act,
            rtx_idx,
            rtx_psn,
            rt_first,
            rt_start,
            rt_pmtu,
            rt_npsn,
            rt_rdl,
            tp_v,
            tp_psn,
            tpw,
            mode_to,
            rnr_w,
            tm_rnr,
            rnr_code,
            fire_rnr,
            tm_arm,
            tm_clr,
            timeout,
            mode_rt,
            mode_fl,
            s1_v,
            s1_q,
            s1_p1,
            fw_v,
            fw_q,
            fw_val
        );
        clock!(self, clock, fetch, seg, chk, tmr);
        self.tmr.reset.next = self.reset.val();
        self.chk.reset.next = self.reset.val();
        self.fetch.reset.next = self.reset.val();
        self.seg.reset.next = self.reset.val();
        self.ring.read_clock.next = self.clock.val();
        self.ring.write_clock.next = self.clock.val();
        self.stop_ram.read_clock.next = self.clock.val();
        self.stop_ram.write_clock.next = self.clock.val();
        self.rdc_ram.read_clock.next = self.clock.val();
        self.rdc_ram.write_clock.next = self.clock.val();
        self.sent_ok_ram.read_clock.next = self.clock.val();
        self.sent_ok_ram.write_clock.next = self.clock.val();
        self.sent_ram.read_clock.next = self.clock.val();
        self.sent_ram.write_clock.next = self.clock.val();
        self.rwv_ram.read_clock.next = self.clock.val();
        self.rwv_ram.write_clock.next = self.clock.val();
        self.rwp_ram.read_clock.next = self.clock.val();
        self.rwp_ram.write_clock.next = self.clock.val();
        self.sent_okx.read_clock.next = self.clock.val();
        self.sent_okx.write_clock.next = self.clock.val();
        self.sent_mx.read_clock.next = self.clock.val();
        self.sent_mx.write_clock.next = self.clock.val();
        self.tpv_ram.read_clock.next = self.clock.val();
        self.tpv_ram.write_clock.next = self.clock.val();
        self.tpp_ram.read_clock.next = self.clock.val();
        self.tpp_ram.write_clock.next = self.clock.val();
        self.rnrw_ram.read_clock.next = self.clock.val();
        self.rnrw_ram.write_clock.next = self.clock.val();

        // ---- contexts: unpack what is read, pack what is written ----
        self.qpc_u.x.next = self.qpc_rd.resp_data.val();
        self.qpa_u.x.next = self.qpa_rd.resp_data.val();
        self.qpr_u.x.next = self.qpr_rd.resp_data.val();
        self.qpr_p.sq_pi.next = self.sq_pi.q.val();
        self.qpr_p.sq_fetch.next = self.sq_fetch.q.val();
        self.qpr_p.sq_ci.next = self.sq_ci.q.val();
        self.qpr_p.next_psn.next = self.next_psn.q.val();
        self.qpr_p.una_psn.next = self.una_psn.q.val();
        self.qpr_p.sent_end.next = self.sent_end.q.val();
        self.qpr_p.retry_left.next = self.retry_left.q.val();
        self.qpr_p.rnr_left.next = self.rnr_left.q.val();
        self.qpr_wr.data.next = self.qpr_p.y.val();
        self.qpr_wr.addr.next = self.qpn.q.val();
        self.qpc_rd.req_addr.next = self.qpn.q.val();
        self.qpa_rd.req_addr.next = self.qpn.q.val();
        self.qpr_rd.req_addr.next = self.qpn.q.val();

        // ---- the WQE's rules (the model's fetch_wqe / validate_wqe) ----
        self.known.next = (self.w_opcode.q.val() == self.k_op_write.val())
            | (self.w_opcode.q.val() == self.k_op_write_imm.val())
            | (self.w_opcode.q.val() == self.k_op_send.val())
            | (self.w_opcode.q.val() == self.k_op_send_imm.val())
            | (self.w_opcode.q.val() == self.k_op_read.val())
            | (self.w_opcode.q.val() == self.k_op_cmp_swap.val())
            | (self.w_opcode.q.val() == self.k_op_fetch_add.val())
            | (self.w_opcode.q.val() == self.k_op_send_inv.val());
        self.is_atomic.next = (self.w_opcode.q.val() == self.k_op_cmp_swap.val())
            | (self.w_opcode.q.val() == self.k_op_fetch_add.val());
        self.rd_like.next = (self.w_opcode.q.val() == self.k_op_read.val())
            | (self.w_opcode.q.val() == self.k_op_cmp_swap.val())
            | (self.w_opcode.q.val() == self.k_op_fetch_add.val());
        self.kind.next = self.k_kind_send.val();
        self.wc_op.next = self.k_wc_send.val();
        if (self.w_opcode.q.val() == self.k_op_write.val())
            | (self.w_opcode.q.val() == self.k_op_write_imm.val())
        {
            self.kind.next = self.k_kind_write.val();
            self.wc_op.next = self.k_wc_write.val();
        }
        if self.w_opcode.q.val() == self.k_op_read.val() {
            self.kind.next = self.k_kind_read.val();
            self.wc_op.next = self.k_wc_read.val();
        }
        if self.w_opcode.q.val() == self.k_op_cmp_swap.val() {
            self.kind.next = self.k_kind_atomic.val();
            self.wc_op.next = self.k_wc_cmp_swap.val();
        }
        if self.w_opcode.q.val() == self.k_op_fetch_add.val() {
            self.kind.next = self.k_kind_atomic.val();
            self.wc_op.next = self.k_wc_fetch_add.val();
        }
        self.is_inline.next = self.w_flags.q.val().get_bit(2);
        self.fence.next = self.w_flags.q.val().get_bit(3);
        // SendWqe::length: 8 for atomics, the inline bytes, the SGE's length or 0.
        self.ilen32.hi.next = self.k_zero24.val();
        self.ilen32.lo.next = self.w_inline_len.q.val();
        self.len.next = self.w_sge_length.q.val();
        if self.w_num_sge.q.val() == self.k_zero8.val() {
            self.len.next = self.k_zero32.val();
        }
        if self.is_inline.val() {
            self.len.next = self.ilen32.y.val();
        }
        if self.is_atomic.val() {
            self.len.next = self.k_eight32.val();
        }
        // packets(len, pmtu) = max(1, ceil(len / pmtu)); an atomic uses one PSN.
        self.mtu_shift.mtu.next = self.pmtu.q.val();
        self.npkt.next = self.len.val() >> self.mtu_shift.shift.val();
        if (self.len.val() & self.mtu_shift.mask.val()) != self.k_zero32.val() {
            self.npkt.next = (self.len.val() >> self.mtu_shift.shift.val()) + self.k_one32.val();
        }
        if self.len.val() == self.k_zero32.val() {
            self.npkt.next = self.k_one32.val();
        }
        self.unused_npkt.next = self.npkt.val().get_bits::<8>(24);
        self.npsn.next = self.npkt.val().get_bits::<24>(0);
        if self.is_atomic.val() {
            self.npsn.next = self.k_one24.val();
        }
        // validate_wqe, lowest priority first (a later check's answer wins).
        self.chk_status.next = self.k_zero8.val();
        if self.len.val() > self.k_max_msg.val() {
            self.chk_status.next = self.k_st_len.val();
        }
        if self.is_atomic.val()
            & ((self.w_num_sge.q.val() != self.k_one8.val())
                | (self.w_sge_length.q.val() != self.k_eight32.val()))
        {
            self.chk_status.next = self.k_st_len.val();
        }
        if self.w_num_sge.q.val() > self.k_one8.val() {
            self.chk_status.next = self.k_st_qp_op.val();
        }
        if self.is_inline.val() {
            self.chk_status.next = self.k_zero8.val();
            if self.rd_like.val() | (self.w_inline_len.q.val() > self.k_max_inline8.val()) {
                self.chk_status.next = self.k_st_qp_op.val();
            }
        }
        if !self.known.val() {
            self.chk_status.next = self.k_st_qp_op.val();
        }
        self.need_mr.next = (self.w_num_sge.q.val() == self.k_one8.val())
            & !self.is_inline.val()
            & self.known.val();
        self.go_mr.next = self.need_mr.val() & (self.chk_status.val() == self.k_zero8.val());
        // max_rd_atomic (min of the QP's and the device's, at least 1) and FENCE.
        self.limit.next = self.max_rd.q.val();
        if self.max_rd.q.val() > self.k_sixteen5.val() {
            self.limit.next = self.k_sixteen5.val();
        }
        if self.max_rd.q.val() == self.k_zero5.val() {
            self.limit.next = self.k_one5.val();
        }
        self.blocked.next = (self.rd_like.val() & (self.rd_cnt.q.val() >= self.limit.val()))
            | (self.fence.val() & (self.rd_cnt.q.val() != self.k_zero5.val()));
        // The window, per packet (the model's build_packet): an op starts when its first
        // packet lies within WINDOW PSNs of una; a SEND/WRITE whose last packet does not is
        // cut at the window's edge (`cut`: the job stops there, the cursor is kept). A READ
        // sends one request. (24 bits: wdiff < WINDOW and npsn < 2^23 cannot wrap.)
        self.wdiff.next = self.next_psn.q.val() - self.una_psn.q.val();
        self.wsum.next = self.wdiff.val() + self.npsn.val() - self.k_one24.val();
        self.fits.next = self.wdiff.val() < self.k_window.val();
        self.stop_psn.next = self.una_psn.q.val() + self.k_window.val();
        self.cut.next = !self.rd_like.val() & (self.wsum.val() >= self.k_window.val());
        // a cursor held at the window's edge goes on once the window has moved
        self.tp_off.next = self.tp_psn.q.val() - self.una_psn.q.val();
        self.resume.next = self.tp_v.q.val()
            & self.present.q.val()
            & ((self.qp_state.q.val() == self.k_rts.val())
                | (self.qp_state.q.val() == self.k_sqd.val()))
            & !self.stopped.q.val()
            & !self.rnr_w.q.val()
            & ((self.tp_off.val() < self.k_window.val()) | self.tp_off.val().get_bit(23));
        self.at_head.next = self.sq_ci.q.val() == self.sq_fetch.q.val();
        self.eligible.next = self.present.q.val()
            & (self.qp_state.q.val() == self.k_rts.val())
            & (self.pmtu.q.val() != self.k_zero3.val())
            & !self.stopped.q.val()
            & !self.tp_v.q.val()
            & (self.sq_fetch.q.val() != self.sq_pi.q.val())
            & ((self.sq_fetch.q.val() - self.sq_ci.q.val()) < self.k_slot_max.val());
        // the QP is in error with WQEs not completed: the flush (the model's enter_error /
        // flush_posted)
        self.flush_go.next = self.present.q.val()
            & (self.qp_state.q.val() == self.k_qps_err.val())
            & (self.sq_ci.q.val() != self.sq_pi.q.val());

        // ---- the op ring ----
        self.ring_waddr.hi.next = self.qpn.q.val();
        self.ring_waddr.lo.next = self.sq_fetch.q.val().get_bits::<4>(0);
        self.ring.write_address.next = self.ring_waddr.y.val();
        self.ring_raddr.hi.next = self.s_op_rd_qpn.val();
        self.ring_raddr.lo.next = self.s_op_rd_slot.val();
        self.ring.read_address.next = self.ring_raddr.y.val();
        self.done1.next = self.k_zero1.val();
        self.op_npsn.next = self.npsn.val();
        if self.is_err.q.val() {
            self.done1.next = self.k_one1.val();
            self.op_npsn.next = self.k_zero24.val();
        }
        self.op_p.wr_id.next = self.w_wr_id.q.val();
        self.op_p.signaled.next = self.w_flags.q.val().get_bits::<1>(0);
        self.op_p.wc_opcode.next = self.wc_op.val();
        self.op_p.kind.next = self.kind.val();
        self.op_p.iova.next = self.iova.q.val();
        self.op_p.len.next = self.len.val();
        self.op_p.first_psn.next = self.next_psn.q.val();
        self.op_p.npsn.next = self.op_npsn.val();
        self.op_p.resp.next = self.k_zero24.val();
        self.op_p.pmtu.next = self.pmtu.q.val();
        self.op_p.done.next = self.done1.val();
        self.op_p.status.next = self.status.q.val();
        self.op_p.vendor.next = self.k_zero8.val();
        self.ring.write_data.next = self.op_p.y.val();
        self.ring.write_enable.next = self.state.q.val() == self.k_append.val();
        self.op_u.x.next = self.ring.read_data.val();
        self.m_op_wr_id.next = self.op_u.wr_id.val();
        self.m_op_signaled.next = self.op_u.signaled.val();
        self.m_op_wc_opcode.next = self.op_u.wc_opcode.val();
        self.m_op_kind.next = self.op_u.kind.val();
        self.m_op_iova.next = self.op_u.iova.val();
        self.m_op_len.next = self.op_u.len.val();
        self.m_op_first_psn.next = self.op_u.first_psn.val();
        self.m_op_npsn.next = self.op_u.npsn.val();
        self.m_op_resp.next = self.op_u.resp.val();
        self.m_op_pmtu.next = self.op_u.pmtu.val();
        self.m_op_done.next = self.op_u.done.val();
        self.m_op_status.next = self.op_u.status.val();
        self.m_op_vendor.next = self.op_u.vendor.val();

        // ---- WQE fetch ----
        self.fetch.s_req_valid.next = self.state.q.val() == self.k_fetch.val();
        self.fetch.s_req_qpn.next = self.qpn.q.val();
        self.fetch.s_req_sq_ring.next = self.sq_ring.q.val();
        self.fetch.s_req_sq_log.next = self.sq_log.q.val();
        self.fetch.s_req_index.next = self.sq_fetch.q.val();
        self.fetch.s_req_posted.next = self.sq_pi.q.val() - self.sq_fetch.q.val();
        if self.mode_rt.q.val() {
            self.fetch.s_req_index.next = self.rtx_idx.q.val();
            self.fetch.s_req_posted.next = self.sq_pi.q.val() - self.rtx_idx.q.val();
        }
        DmaRdClient::link(&mut self.wqe_rd, &mut self.fetch.dma_rd);
        self.fetch.m_wqe_ready.next = self.state.q.val() == self.k_wqe.val();
        self.unused_wqe_qpn.next = self.fetch.m_wqe_qpn.val();
        self.unused_wqe_index.next = self.fetch.m_wqe_index.val();
        self.unused_fetch_err_index.next = self.fetch.m_err_index.val();
        self.unused_fetch_err_qpn.next = self.fetch.m_err_qpn.val();

        // ---- segmentation ----
        // The job handshake is registered (`job_taken`) so that the Segmenter's ready is
        // read in a statement of its own (no loop through the blocks, UNOPTFLAT).
        self.seg.s_job_valid.next = ((self.state.q.val() == self.k_job.val())
            | (self.state.q.val() == self.k_rt_job.val()))
            & !self.job_taken.q.val();
        self.job_taken.d.next = ((self.state.q.val() == self.k_job.val())
            | (self.state.q.val() == self.k_rt_job.val()))
            & !self.job_taken.q.val()
            & self.seg.s_job_ready.val();
        self.seg.s_job_dst_mac.next = self.dest_mac.q.val();
        self.seg.s_job_src_mac.next = self.local_mac.val();
        self.seg.s_job_src_ip.next = self.local_ip.val();
        self.seg.s_job_dst_ip.next = self.dest_ip.q.val();
        self.seg.s_job_udp_sport.next = self.udp_sport.q.val();
        self.seg.s_job_dest_qp.next = self.dest_qpn.q.val();
        self.seg.s_job_qpn.next = self.qpn.q.val();
        self.seg.s_job_opcode.next = self.w_opcode.q.val();
        self.seg.s_job_solicited.next = self.w_flags.q.val().get_bit(1);
        self.seg.s_job_inline.next = self.is_inline.val();
        self.seg.s_job_inline_data.next = self.w_inline.q.val();
        self.seg.s_job_len.next = self.len.val();
        self.seg.s_job_iova.next = self.iova.q.val();
        self.seg.s_job_remote_va.next = self.w_remote_addr.q.val();
        self.seg.s_job_rkey.next = self.w_rkey.q.val();
        self.seg.s_job_imm.next = self.w_imm.q.val();
        self.seg.s_job_compare_add.next = self.w_compare_add.q.val();
        self.seg.s_job_swap.next = self.w_swap.q.val();
        self.seg.s_job_first_psn.next = self.next_psn.q.val();
        self.seg.s_job_pmtu.next = self.pmtu.q.val();
        self.seg.s_job_start_pkt.next = self.k_zero24.val();
        self.seg.s_job_stop_psn.next = self.stop_psn.val();
        if self.state.q.val() == self.k_rt_job.val() {
            self.seg.s_job_first_psn.next = self.rt_first.q.val();
            self.seg.s_job_pmtu.next = self.rt_pmtu.q.val();
            self.seg.s_job_start_pkt.next = self.rt_start.q.val();
        }
        DmaRdClient::link(&mut self.seg_rd, &mut self.seg.dma_rd);
        RecordClient::link(&mut self.pkt, &mut self.seg.pkt);
        PayloadClient::link(&mut self.pay, &mut self.seg.pay);
        self.m_sent_valid.next = self.seg.m_sent_valid.val();
        self.m_sent_qpn.next = self.seg.m_sent_qpn.val();
        self.m_sent_psn.next = self.seg.m_sent_psn.val();
        self.unused_seg_sent_last.next = self.seg.m_sent_last.val();
        self.unused_seg_done.next = self.seg.m_done_valid.val();
        self.unused_seg_done_qpn.next = self.seg.m_done_qpn.val();
        self.unused_seg_err_psn.next = self.seg.m_err_psn.val();

        // ---- sent_end (note_request_sent): the PSN after each record taken ----
        self.sent_ok_ram.read_address.next = self.qpn.q.val();
        self.sent_ram.read_address.next = self.qpn.q.val();
        // (a read-modify-write a cycle later: a retransmitted PSN leaves it; the last
        // value written is forwarded to a pulse of the same QP right behind it)
        self.s1_v.d.next = self.seg.m_sent_valid.val();
        self.s1_q.d.next = self.seg.m_sent_qpn.val();
        self.s1_p1.d.next = self.seg.m_sent_psn.val() + self.k_one24.val();
        self.sent_okx.read_address.next = self.seg.m_sent_qpn.val();
        self.sent_mx.read_address.next = self.seg.m_sent_qpn.val();
        self.s_base_ok.next = self.sent_okx.read_data.val();
        self.s_base.next = self.sent_mx.read_data.val();
        if self.fw_v.q.val() & (self.fw_q.q.val() == self.s1_q.q.val()) {
            self.s_base_ok.next = true;
            self.s_base.next = self.fw_val.q.val();
        }
        self.s_diff.next = self.s1_p1.q.val() - self.s_base.val();
        self.s_new.next = self.s1_p1.q.val();
        if self.s_base_ok.val()
            & ((self.s_diff.val() == self.k_zero24.val()) | self.s_diff.val().get_bit(23))
        {
            self.s_new.next = self.s_base.val();
        }
        if self.s1_v.q.val() {
            self.fw_v.d.next = true;
            self.fw_q.d.next = self.s1_q.q.val();
            self.fw_val.d.next = self.s_new.val();
        }
        self.sent_ok_ram.write_address.next = self.s1_q.q.val();
        self.sent_ram.write_address.next = self.s1_q.q.val();
        self.sent_okx.write_address.next = self.s1_q.q.val();
        self.sent_mx.write_address.next = self.s1_q.q.val();
        self.sent_ok_ram.write_data.next = true;
        self.sent_okx.write_data.next = true;
        self.sent_ram.write_data.next = self.s_new.val();
        self.sent_mx.write_data.next = self.s_new.val();
        self.sent_ok_ram.write_enable.next = self.s1_v.q.val();
        self.sent_okx.write_enable.next = self.s1_v.q.val();
        self.sent_ram.write_enable.next = self.s1_v.q.val();
        self.sent_mx.write_enable.next = self.s1_v.q.val();

        // ---- per-QP bookkeeping: stopped, outstanding READ/atomic ops ----
        self.clr_take.next = self.qp_clr.valid.val()
            & (self.state.q.val() == self.k_idle.val())
            & !self.tpw.q.val()
            & !self.serr_pend.q.val()
            & !self.seg.m_sent_valid.val()
            & !self.s1_v.q.val();
        // a QP reset or destroyed: its indices start again, with other WQEs (the WQE
        // prefetch forgets them)
        self.fetch.s_inv.next = self.clr_take.val();
        self.qp_clr.ready.next = (self.state.q.val() == self.k_idle.val())
            & !self.tpw.q.val()
            & !self.serr_pend.q.val()
            & !self.seg.m_sent_valid.val()
            & !self.s1_v.q.val();
        self.stop_ram.read_address.next = self.qpn.q.val();
        self.rdc_ram.read_address.next = self.qpn.q.val();
        self.stop_ram.write_address.next = self.qpn.q.val();
        self.stop_ram.write_data.next = self.stopped.q.val();
        self.rdc_ram.write_address.next = self.qpn.q.val();
        self.rdc_ram.write_data.next = self.rd_cnt.q.val();
        self.stop_ram.write_enable.next = ((self.state.q.val() == self.k_wqpr.val())
            & self.qpr_wr.ready.val())
            | (self.state.q.val() == self.k_fault.val());
        self.rdc_ram.write_enable.next =
            (self.state.q.val() == self.k_wqpr.val()) & self.qpr_wr.ready.val();
        self.rwv_ram.read_address.next = self.qpn.q.val();
        self.rwp_ram.read_address.next = self.qpn.q.val();
        self.rwv_ram.write_address.next = self.qpn.q.val();
        self.rwp_ram.write_address.next = self.qpn.q.val();
        self.rwv_ram.write_data.next = self.rwd_v.q.val();
        self.rwp_ram.write_data.next = self.rwd.q.val();
        self.rwv_ram.write_enable.next =
            (self.state.q.val() == self.k_wqpr.val()) & self.qpr_wr.ready.val();
        self.rwp_ram.write_enable.next =
            (self.state.q.val() == self.k_wqpr.val()) & self.qpr_wr.ready.val();
        self.tpv_ram.read_address.next = self.qpn.q.val();
        self.tpp_ram.read_address.next = self.qpn.q.val();
        self.tpv_ram.write_address.next = self.qpn.q.val();
        self.tpp_ram.write_address.next = self.qpn.q.val();
        self.tpv_ram.write_data.next = self.tp_v.q.val();
        self.tpp_ram.write_data.next = self.tp_psn.q.val();
        self.tpv_ram.write_enable.next = ((self.state.q.val() == self.k_wqpr.val())
            & self.qpr_wr.ready.val())
            | self.tpw.q.val();
        self.tpp_ram.write_enable.next = ((self.state.q.val() == self.k_wqpr.val())
            & self.qpr_wr.ready.val())
            | self.tpw.q.val();
        self.tpw.d.next = false;
        self.rnrw_ram.read_address.next = self.qpn.q.val();
        self.rnrw_ram.write_address.next = self.qpn.q.val();
        self.rnrw_ram.write_data.next = self.rnr_w.q.val();
        self.rnrw_ram.write_enable.next =
            (self.state.q.val() == self.k_wqpr.val()) & self.qpr_wr.ready.val();
        if (self.state.q.val() == self.k_idle.val()) & self.serr_pend.q.val() {
            self.stop_ram.write_address.next = self.serr_qpn.q.val();
            self.stop_ram.write_data.next = true;
            self.stop_ram.write_enable.next = true;
        }
        if self.clr_take.val() {
            self.stop_ram.write_address.next = self.qp_clr.qpn.val();
            self.stop_ram.write_data.next = false;
            self.stop_ram.write_enable.next = true;
            self.rdc_ram.write_address.next = self.qp_clr.qpn.val();
            self.rdc_ram.write_data.next = self.k_zero5.val();
            self.rdc_ram.write_enable.next = true;
            self.sent_ok_ram.write_address.next = self.qp_clr.qpn.val();
            self.sent_ok_ram.write_data.next = false;
            self.sent_ok_ram.write_enable.next = true;
            self.sent_okx.write_address.next = self.qp_clr.qpn.val();
            self.sent_okx.write_data.next = false;
            self.sent_okx.write_enable.next = true;
            self.rwv_ram.write_address.next = self.qp_clr.qpn.val();
            self.rwv_ram.write_data.next = false;
            self.rwv_ram.write_enable.next = true;
            self.tpv_ram.write_address.next = self.qp_clr.qpn.val();
            self.tpv_ram.write_data.next = false;
            self.tpv_ram.write_enable.next = true;
            self.rnrw_ram.write_address.next = self.qp_clr.qpn.val();
            self.rnrw_ram.write_data.next = false;
            self.rnrw_ram.write_enable.next = true;
            self.fw_v.d.next = false;
        }

        // ---- the ACK timer (QpTimers): armed / re-armed or cleared at each write-back, as
        // the visit decided; cleared with the QP; a fire taken in IDLE ----
        // (timeout: 4.096 us * 2^timeout = 1024 << timeout cycles, the model's
        // ack_timeout_cycles)
        self.tmr.s_set_valid.next =
            (self.state.q.val() == self.k_wqpr.val()) & self.qpr_wr.ready.val();
        self.tmr.s_set_qpn.next = self.qpn.q.val();
        self.tmr.s_set_kind.next = false;
        self.tmr.s_set_delay.next = self.k_tmo_base.val() << self.timeout.q.val();
        self.tmr.s_set_arm.next = self.tm_arm.q.val();
        if (self.sq_ci.q.val() == self.sq_fetch.q.val()) | !self.tm_arm.q.val() {
            self.tmr.s_set_arm.next = false;
            // (neither armed nor cleared by the visit: the timer is left alone)
            if (self.sq_ci.q.val() != self.sq_fetch.q.val()) & !self.tm_clr.q.val() {
                self.tmr.s_set_valid.next = false;
            }
        }
        // (the RNR timer: the rnr_timer_ns table in cycles; set when this visit started
        // a wait, replacing the ACK timer; while a wait runs the timer is left alone)
        self.rnr_base.next = self.k_rnr_unit.val();
        self.rnr_sh.next = self.rnr_code.q.val() >> self.k_one5.val();
        if self.rnr_code.q.val().get_bit(0) & (self.rnr_code.q.val() != self.k_one5.val()) {
            self.rnr_base.next = self.k_rnr_unit3.val();
            self.rnr_sh.next = (self.rnr_code.q.val() >> self.k_one5.val()) - self.k_one5.val();
        }
        if self.rnr_code.q.val() == self.k_zero5.val() {
            self.rnr_sh.next = self.k_sixteen5.val();
        }
        if self.rnr_w.q.val() & !self.tm_rnr.q.val() {
            self.tmr.s_set_valid.next = false;
        }
        if self.tm_rnr.q.val() {
            self.tmr.s_set_valid.next =
                (self.state.q.val() == self.k_wqpr.val()) & self.qpr_wr.ready.val();
            self.tmr.s_set_arm.next = true;
            self.tmr.s_set_kind.next = true;
            self.tmr.s_set_delay.next = self.rnr_base.val() << self.rnr_sh.val();
        }
        if self.clr_take.val() {
            self.tmr.s_set_valid.next = true;
            self.tmr.s_set_qpn.next = self.qp_clr.qpn.val();
            self.tmr.s_set_arm.next = false;
        }
        self.fire_take.next = (self.state.q.val() == self.k_idle.val())
            & !self.serr_pend.q.val()
            & !self.rsp.valid.val()
            & self.tmr.m_fire_valid.val();
        self.tmr.m_fire_ready.next = self.fire_take.val();
        // (a set is always taken)
        self.unused_set_ready.next = self.tmr.s_set_ready.val();
        self.to_ok.next = self.present.q.val()
            & ((self.qp_state.q.val() == self.k_rts.val())
                | (self.qp_state.q.val() == self.k_sqd.val()))
            & (self.sq_ci.q.val() != self.sq_fetch.q.val());
        // Retransmits: a record taken at a PSN before sent_end
        self.rtx_pulse.next = self.s1_v.q.val()
            & self.s_base_ok.val()
            & ((self.s_diff.val() == self.k_zero24.val()) | self.s_diff.val().get_bit(23));
        self.cnt.retransmits.next = self.rtx_pulse.val();
        self.cnt.rtx_qpn.next = self.s1_q.q.val();

        // ---- outputs' defaults ----
        self.sq_db.ready.next = (self.state.q.val() == self.k_idle.val())
            & !self.serr_pend.q.val()
            & !self.rsp.valid.val()
            & !self.tmr.m_fire_valid.val();
        self.rsp.ready.next = (self.state.q.val() == self.k_idle.val()) & !self.serr_pend.q.val();
        self.qpc_rd.req_valid.next =
            (self.state.q.val() == self.k_ctx.val()) & !self.asked_c.q.val();
        self.qpa_rd.req_valid.next =
            (self.state.q.val() == self.k_ctx.val()) & !self.asked_a.q.val();
        self.qpr_rd.req_valid.next =
            (self.state.q.val() == self.k_ctx.val()) & !self.asked_r.q.val();
        self.qpr_wr.valid.next =
            (self.state.q.val() == self.k_wr_db.val()) | (self.state.q.val() == self.k_wqpr.val());
        self.mr.req_valid.next = self.state.q.val() == self.k_mr_req.val();
        self.mr.req_key.next = self.w_sge_lkey.q.val();
        self.mr.req_pdn.next = self.pdn.q.val();
        self.mr.req_va.next = self.w_sge_addr.q.val();
        self.mr.req_len.next = self.w_sge_length.q.val();
        self.mr.req_need.next = self.k_zero4.val();
        if self.rd_like.val() {
            self.mr.req_need.next = self.k_need_write.val();
        }
        self.mr.res_ready.next = self.state.q.val() == self.k_mr_res.val();
        self.qpn24.x.next = self.qpn.q.val();
        self.wcop8.hi.next = self.k_zero5.val();
        self.wcop8.lo.next = self.wc_op.val();
        self.cqe.valid.next = (self.state.q.val() == self.k_cqe.val())
            | (self.state.q.val() == self.k_ret_cqe.val())
            | (self.state.q.val() == self.k_fl_cqe.val())
            | (self.state.q.val() == self.k_fl_post.val());
        self.cqe.cqn.next = self.send_cqn.q.val();
        self.cqe.wr_id.next = self.w_wr_id.q.val();
        self.cqe.byte_len.next = self.len.val();
        self.cqe.imm.next = self.k_zero32.val();
        self.cqe.qp_num.next = self.qpn24.y.val();
        self.cqe.src_qp.next = self.dest_qpn.q.val();
        self.cqe.wqe_index.next = self.sq_fetch.q.val();
        self.cqe.opcode.next = self.wcop8.y.val();
        self.cqe.status.next = self.status.q.val();
        self.cqe.wc_flags.next = self.k_zero8.val();
        self.cqe.vendor_err.next = self.k_zero8.val();
        if self.state.q.val() == self.k_ret_cqe.val() {
            self.wcop8.lo.next = self.op_u.wc_opcode.val();
            self.cqe.wr_id.next = self.op_u.wr_id.val();
            self.cqe.byte_len.next = self.op_u.len.val();
            self.cqe.wqe_index.next = self.sq_ci.q.val();
            self.cqe.status.next = self.op_u.status.val();
            self.cqe.vendor_err.next = self.op_u.vendor.val();
        }
        // the flush: an op of the ring (as retired, WR_FLUSH_ERR), a posted WQE (byte_len 0)
        if self.state.q.val() == self.k_fl_cqe.val() {
            self.wcop8.lo.next = self.op_u.wc_opcode.val();
            self.cqe.wr_id.next = self.op_u.wr_id.val();
            self.cqe.byte_len.next = self.op_u.len.val();
            self.cqe.wqe_index.next = self.sq_ci.q.val();
            self.cqe.status.next = self.k_st_flush.val();
        }
        if self.state.q.val() == self.k_fl_post.val() {
            self.cqe.byte_len.next = self.k_zero32.val();
            self.cqe.status.next = self.k_st_flush.val();
        }
        self.m_qp_err_valid.next = ((self.state.q.val() == self.k_wqpr.val())
            & self.qpr_wr.ready.val()
            & self.err_head.q.val())
            | (self.state.q.val() == self.k_fault.val())
            | ((self.state.q.val() == self.k_ret_cqe.val())
                & self.cqe.ready.val()
                & (self.op_u.status.val() != self.k_zero8.val()));
        self.m_qp_err_qpn.next = self.qpn.q.val();
        self.cnt.dma_faults.next = (self.state.q.val() == self.k_fault.val())
            | ((self.state.q.val() == self.k_idle.val()) & self.serr_pend.q.val())
            | ((self.state.q.val() == self.k_rx_dwr.val()) & !self.dok.q.val());
        self.cnt.ack_timeouts.next =
            (self.state.q.val() == self.k_to.val()) & self.to_ok.val() & !self.fire_rnr.q.val();
        self.cnt.qpn.next = self.qpn.q.val();
        if self.state.q.val() == self.k_idle.val() {
            self.cnt.qpn.next = self.serr_qpn.q.val();
        }
        self.commit.next = ((self.state.q.val() == self.k_append.val()) & self.is_err.q.val())
            | ((self.state.q.val() == self.k_job.val()) & self.job_taken.q.val())
            | ((self.state.q.val() == self.k_cqe.val()) & self.cqe.ready.val());

        // ---- the receive half: the decision (ReqRxCheck over a walk of the ring) ----
        self.qp_fits.next = (self.rx_qpn.q.val() >> self.k_qa24.val()) == self.k_zero24.val();
        self.rx_can.next = self.present.q.val()
            & self.qp_fits.val()
            & ((self.qp_state.q.val() == self.k_rts.val())
                | (self.qp_state.q.val() == self.k_sqd.val()));
        self.ring_n.next = self.sq_fetch.q.val() - self.sq_ci.q.val();
        self.n5.next = self.ring_n.val().get_bits::<5>(0);
        self.unused_ring_n.next = self.ring_n.val().get_bits::<27>(5);
        self.dslot.next = self.sq_ci.q.val().get_bits::<4>(0) + self.l_dop.q.val().get_bits::<4>(0);
        self.unused_dop.next = self.l_dop.q.val().get_bit(4);
        self.chk.s_opcode.next = self.rx_opcode.q.val();
        self.chk.s_psn.next = self.rx_psn.q.val();
        self.chk.s_has_aeth.next = self.rx_has_aeth.q.val();
        self.chk.s_syndrome.next = self.rx_syn.q.val();
        self.chk.s_has_atomic_ack.next = self.rx_has_aa.q.val();
        self.chk.s_payload_len.next = self.rx_plen.q.val();
        self.chk.s_una.next = self.una_psn.q.val();
        self.chk.s_sent_end.next = self.sent_end.q.val();
        self.chk.s_retry_left.next = self.retry_left.q.val();
        self.chk.s_rnr_left.next = self.rnr_left.q.val();
        self.chk.s_retry_cnt.next = self.retry_cnt.q.val();
        self.chk.s_rnr_retry.next = self.rnr_retry.q.val();
        self.chk.s_rewound_valid.next = self.rwd_v.q.val();
        self.chk.s_rewound.next = self.rwd.q.val();
        self.chk.s_rnr_waiting.next = self.rnr_w.q.val();
        self.chk.s_start.next = self.state.q.val() == self.k_rx_start.val();
        self.chk.s_op_valid.next = (self.state.q.val() == self.k_rx_walk.val()) & self.wk_v.q.val();
        self.chk.s_op_kind.next = self.op_u.kind.val();
        self.chk.s_op_first.next = self.op_u.first_psn.val();
        self.chk.s_op_npsn.next = self.op_u.npsn.val();
        self.chk.s_op_resp.next = self.op_u.resp.val();
        self.chk.s_op_len.next = self.op_u.len.val();
        self.chk.s_op_pmtu.next = self.op_u.pmtu.val();
        self.chk.s_op_done.next = self.op_u.done.val() != self.k_zero1.val();
        self.st8a.hi.next = self.k_zero3.val();
        self.st8a.lo.next = self.chk.m_fail0_status.val();
        self.st8b.hi.next = self.k_zero3.val();
        self.st8b.lo.next = self.chk.m_fail1_status.val();
        self.unused_timer.next = self.chk.m_timer.val();
        if self.state.q.val() == self.k_rx_dec.val() {
            if self.chk.m_timer.val() == self.k_tmr_arm.val() {
                self.tm_arm.d.next = true;
            }
            if self.chk.m_timer.val() == self.k_tmr_clear.val() {
                self.tm_clr.d.next = true;
            }
        }
        self.unused_dlv_len.next = self.chk.m_dlv_len.val();
        self.unused_activate.next = self.chk.m_activate.val();
        self.rx_cnt.valid.next = ((self.state.q.val() == self.k_rx_dec.val())
            & (self.chk.m_count.val() != self.k_zero3.val()))
            | (self.state.q.val() == self.k_rx_unk.val());
        self.rx_cnt.code.next = self.chk.m_count.val();
        if self.state.q.val() == self.k_rx_unk.val() {
            self.rx_cnt.code.next = self.k_cnt_unk.val();
        }
        self.rx_cnt.per_qp.next =
            !((self.state.q.val() == self.k_rx_unk.val()) & self.rx_glob.q.val());
        self.rx_cnt.qpn.next = self.qpn.q.val();

        // ---- the receive half: ring reads and the rewritten entries ----
        // (an apply pass rewrites each op: acknowledged / failed; the delivered op counts its
        // response; retire reads the head)
        if (self.state.q.val() == self.k_rx_walk.val())
            | (self.state.q.val() == self.k_rx_pass.val())
        {
            self.ring_raddr.hi.next = self.qpn.q.val();
            self.ring_raddr.lo.next = self.wslot.q.val();
        }
        if (self.state.q.val() == self.k_rx_drd.val())
            | (self.state.q.val() == self.k_rx_dreq.val())
            | (self.state.q.val() == self.k_rx_ddata.val())
            | (self.state.q.val() == self.k_rx_dst.val())
            | (self.state.q.val() == self.k_rx_dwr.val())
        {
            self.ring_raddr.hi.next = self.qpn.q.val();
            self.ring_raddr.lo.next = self.dslot.val();
        }
        if (self.state.q.val() == self.k_ret_rd.val())
            | (self.state.q.val() == self.k_ret_chk.val())
            | (self.state.q.val() == self.k_ret_cqe.val())
            | (self.state.q.val() == self.k_to_rd.val())
            | (self.state.q.val() == self.k_to_wr.val())
            | (self.state.q.val() == self.k_fl_rd.val())
            | (self.state.q.val() == self.k_fl_cqe.val())
        {
            self.ring_raddr.hi.next = self.qpn.q.val();
            self.ring_raddr.lo.next = self.sq_ci.q.val().get_bits::<4>(0);
        }
        if (self.state.q.val() == self.k_rt_rd.val()) | (self.state.q.val() == self.k_rt_chk.val())
        {
            self.ring_raddr.hi.next = self.qpn.q.val();
            self.ring_raddr.lo.next = self.rtx_idx.q.val().get_bits::<4>(0);
        }
        // the op at the cursor is sent again when unfinished and holding the rewind PSN
        // (from that packet; a READ from its first missing response) or starting after it
        // (from its start); an op wholly before the PSN is not
        self.rt_d.next = self.rtx_psn.q.val() - self.op_u.first_psn.val();
        self.rt_in.next = self.rt_d.val() < self.op_u.npsn.val();
        self.rt_before.next = self.rt_d.val().get_bit(23);
        self.rt_send.next = (self.op_u.done.val() == self.k_zero1.val())
            & (self.rt_in.val() | self.rt_before.val());
        // its first packet (rt_s = the start_pkt the job gets) must lie in the window
        self.rt_s.next = self.k_zero24.val();
        if self.rt_in.val() {
            self.rt_s.next = self.rt_d.val();
        }
        if self.op_u.kind.val() == self.k_kind_read.val() {
            self.rt_s.next = self.op_u.resp.val();
        }
        self.rt_sp.next = self.op_u.first_psn.val() + self.rt_s.val();
        self.rt_spo.next = self.rt_sp.val() - self.una_psn.q.val();
        self.rt_ok.next = (self.rt_spo.val() < self.k_window.val()) | self.rt_spo.val().get_bit(23);
        // a SEND/WRITE job ending past the window's edge was cut there
        self.rt_end.next = self.rt_first.q.val() + self.rt_npsn.q.val() - self.una_psn.q.val();
        self.rt_cut.next = !self.rt_rdl.q.val()
            & !self.rt_end.val().get_bit(23)
            & (self.rt_end.val() > self.k_window.val());
        self.p_hit.next = self.pidx.q.val() < self.l_upto.q.val();
        self.p_f0.next = self.l_f0v.q.val() & (self.pidx.q.val() == self.l_f0op.q.val());
        self.p_f1.next = self.l_f1v.q.val() & (self.pidx.q.val() == self.l_f1op.q.val());
        self.resp1.next = self.op_u.resp.val() + self.k_one24.val();
        self.nd.next = self.op_u.done.val();
        self.nst.next = self.op_u.status.val();
        self.nven.next = self.op_u.vendor.val();
        self.nresp.next = self.op_u.resp.val();
        if self.state.q.val() == self.k_rx_pass.val() {
            if self.p_hit.val() | self.p_f0.val() | self.p_f1.val() {
                self.nd.next = self.k_one1.val();
            }
            if self.p_f0.val() {
                self.nst.next = self.l_f0st.q.val();
                self.nven.next = self.l_f0syn.q.val();
            }
            if self.p_f1.val() {
                self.nst.next = self.l_f1st.q.val();
                self.nven.next = self.l_f1syn.q.val();
            }
        }
        if self.state.q.val() == self.k_rx_dwr.val() {
            self.nresp.next = self.resp1.val();
            if self.resp1.val() == self.op_u.npsn.val() {
                self.nd.next = self.k_one1.val();
            }
            if self.l_datomic.q.val() {
                self.nresp.next = self.k_one24.val();
                self.nd.next = self.k_one1.val();
            }
            if !self.dok.q.val() {
                self.nd.next = self.k_one1.val();
                self.nst.next = self.k_st_access.val();
            }
        }
        if self.state.q.val() == self.k_to_wr.val() {
            self.nd.next = self.k_one1.val();
            self.nst.next = self.k_st_retry_exc.val();
            self.nven.next = self.k_zero8.val();
        }
        self.rx_st.next = (self.state.q.val() == self.k_rx_pass.val())
            | (self.state.q.val() == self.k_rx_dwr.val())
            | (self.state.q.val() == self.k_to_wr.val());
        if self.rx_st.val() {
            self.op_p.wr_id.next = self.op_u.wr_id.val();
            self.op_p.signaled.next = self.op_u.signaled.val();
            self.op_p.wc_opcode.next = self.op_u.wc_opcode.val();
            self.op_p.kind.next = self.op_u.kind.val();
            self.op_p.iova.next = self.op_u.iova.val();
            self.op_p.len.next = self.op_u.len.val();
            self.op_p.first_psn.next = self.op_u.first_psn.val();
            self.op_p.npsn.next = self.op_u.npsn.val();
            self.op_p.resp.next = self.nresp.val();
            self.op_p.pmtu.next = self.op_u.pmtu.val();
            self.op_p.done.next = self.nd.val();
            self.op_p.status.next = self.nst.val();
            self.op_p.vendor.next = self.nven.val();
            self.ring_waddr.lo.next = self.pslot.q.val();
            if self.state.q.val() == self.k_rx_dwr.val() {
                self.ring_waddr.lo.next = self.dslot.val();
            }
            if self.state.q.val() == self.k_to_wr.val() {
                self.ring_waddr.lo.next = self.sq_ci.q.val().get_bits::<4>(0);
            }
        }
        if ((self.state.q.val() == self.k_rx_pass.val()) & self.wk_v.q.val())
            | (self.state.q.val() == self.k_rx_dwr.val())
            | (self.state.q.val() == self.k_to_wr.val())
        {
            self.ring.write_enable.next = true;
        }
        self.rd_like_op.next = ((self.op_u.kind.val() == self.k_kind_read.val())
            | (self.op_u.kind.val() == self.k_kind_atomic.val()))
            & (self.op_u.npsn.val() != self.k_zero24.val());

        // ---- the receive half: delivery (DMA write) and the payload stream ----
        self.doff64.hi.next = self.k_zero32.val();
        self.doff64.lo.next = self.l_doff.q.val();
        self.orig512.hi.next = self.k_zero448.val();
        self.orig512.lo.next = self.rx_orig.q.val();
        self.dma_wr.req_valid.next = self.state.q.val() == self.k_rx_dreq.val();
        self.dma_wr.req_addr.next = self.op_u.iova.val() + self.doff64.y.val();
        self.dma_wr.req_len.next = self.rx_plen.q.val();
        if self.l_datomic.q.val() {
            self.dma_wr.req_len.next = self.k_eight16.val();
        }
        self.dma_wr.data_valid.next = (self.state.q.val() == self.k_rx_ddata.val())
            & (self.l_datomic.q.val() | self.rsp_pay.tvalid.val());
        self.dma_wr.data.next = self.rsp_pay.tdata.val();
        self.dma_wr.data_keep.next = self.rsp_pay.tkeep.val();
        self.dma_wr.data_last.next = self.rsp_pay.tlast.val();
        if self.l_datomic.q.val() {
            self.dma_wr.data.next = self.orig512.y.val();
            self.dma_wr.data_keep.next = self.k_keep8.val();
            self.dma_wr.data_last.next = true;
        }
        self.rsp_pay.tready.next = ((self.state.q.val() == self.k_rx_ddata.val())
            & !self.l_datomic.q.val()
            & self.dma_wr.data_ready.val())
            | ((self.state.q.val() == self.k_rx_drain.val()) & self.pay_left.q.val());

        // ---- the sequence ----
        if self.state.q.val() == self.k_idle.val() {
            self.mode_db.d.next = false;
            self.mode_rx.d.next = false;
            self.mode_rt.d.next = false;
            self.mode_fl.d.next = false;
            self.mode_to.d.next = false;
            self.tm_arm.d.next = false;
            self.tm_clr.d.next = false;
            self.tm_rnr.d.next = false;
            self.rtx_act.d.next = false;
            self.asked_c.d.next = false;
            self.asked_a.d.next = false;
            self.asked_r.d.next = false;
            self.got_c.d.next = false;
            self.got_a.d.next = false;
            self.got_r.d.next = false;
            if self.serr_pend.q.val() {
                self.serr_pend.d.next = false;
            } else if self.rsp.valid.val() {
                self.rx_qpn.d.next = self.rsp.qpn.val();
                self.qpn.d.next = self.rsp.qpn.val().get_bits::<QA>(0);
                self.rx_opcode.d.next = self.rsp.opcode.val();
                self.rx_psn.d.next = self.rsp.psn.val();
                self.rx_has_aeth.d.next = self.rsp.has_aeth.val();
                self.rx_syn.d.next = self.rsp.syndrome.val();
                self.rx_has_aa.d.next = self.rsp.has_atomic_ack.val();
                self.rx_orig.d.next = self.rsp.orig.val();
                self.rx_plen.d.next = self.rsp.payload_len.val();
                self.rx_src.d.next = self.rsp.src_ip.val();
                self.pay_left.d.next = self.rsp.payload_len.val() != self.k_zero16.val();
                self.mode_rx.d.next = true;
                self.rx_glob.d.next = true;
                self.state.d.next = self.k_ctx.val();
                if (self.rsp.qpn.val() >> self.k_qa24.val()) != self.k_zero24.val() {
                    self.state.d.next = self.k_rx_unk.val();
                }
            } else if self.tmr.m_fire_valid.val() {
                self.qpn.d.next = self.tmr.m_fire_qpn.val();
                self.fire_rnr.d.next = self.tmr.m_fire_kind.val();
                self.mode_to.d.next = true;
                self.state.d.next = self.k_ctx.val();
            } else if self.sq_db.valid.val() {
                self.qpn.d.next = self.sq_db.qpn.val();
                self.db_pi.d.next = self.sq_db.pi.val();
                self.mode_db.d.next = true;
                self.state.d.next = self.k_ctx.val();
            } else if self.again.q.val() {
                self.again.d.next = false;
                self.state.d.next = self.k_ctx.val();
            } else {
                self.qpn.d.next = self.scan.q.val();
                self.scan.d.next = self.scan.q.val() + self.k_one_qp.val();
                self.state.d.next = self.k_ctx.val();
            }
        }
        // the three context reads at once, each answered one cycle after it is taken
        if self.state.q.val() == self.k_ctx.val() {
            if self.qpc_rd.req_ready.val() {
                self.asked_c.d.next = true;
            }
            if self.qpa_rd.req_ready.val() {
                self.asked_a.d.next = true;
            }
            if self.qpr_rd.req_ready.val() {
                self.asked_r.d.next = true;
            }
        }
        self.ctx_all.next = (self.got_c.q.val() | self.qpc_rd.resp_valid.val())
            & (self.got_a.q.val() | self.qpa_rd.resp_valid.val())
            & (self.got_r.q.val() | self.qpr_rd.resp_valid.val());
        if (self.state.q.val() == self.k_ctx.val()) & self.ctx_all.val() {
            self.state.d.next = self.k_ctx_in.val();
        }
        if (self.state.q.val() == self.k_ctx.val()) & self.qpc_rd.resp_valid.val() {
            self.got_c.d.next = true;
            self.present.d.next = self.qpc_u.present.val() != self.k_zero1.val();
            self.pdn.d.next = self.qpc_u.pdn.val();
            self.send_cqn.d.next = self.qpc_u.send_cqn.val();
            self.sq_log.d.next = self.qpc_u.sq_log.val();
            self.sq_ring.d.next = self.qpc_u.sq_ring.val();
        }
        if (self.state.q.val() == self.k_ctx.val()) & self.qpa_rd.resp_valid.val() {
            self.got_a.d.next = true;
            self.qp_state.d.next = self.qpa_u.state.val();
            self.pmtu.d.next = self.qpa_u.pmtu.val();
            self.dest_qpn.d.next = self.qpa_u.dest_qpn.val();
            self.dest_mac.d.next = self.qpa_u.dest_mac.val();
            self.dest_ip.d.next = self.qpa_u.dest_ip.val();
            self.udp_sport.d.next = self.qpa_u.udp_sport.val();
            self.max_rd.d.next = self.qpa_u.max_rd_atomic.val();
            self.retry_cnt.d.next = self.qpa_u.retry_cnt.val();
            self.rnr_retry.d.next = self.qpa_u.rnr_retry.val();
            self.timeout.d.next = self.qpa_u.timeout.val();
        }
        if (self.state.q.val() == self.k_ctx.val()) & self.qpr_rd.resp_valid.val() {
            self.got_r.d.next = true;
            self.sq_pi.d.next = self.qpr_u.sq_pi.val();
            if self.mode_db.q.val() {
                self.sq_pi.d.next = self.db_pi.q.val();
            }
            self.sq_fetch.d.next = self.qpr_u.sq_fetch.val();
            self.sq_ci.d.next = self.qpr_u.sq_ci.val();
            self.next_psn.d.next = self.qpr_u.next_psn.val();
            self.una_psn.d.next = self.qpr_u.una_psn.val();
            self.sent_end.d.next = self.qpr_u.sent_end.val();
            if self.sent_ok_ram.read_data.val() {
                self.sent_end.d.next = self.sent_ram.read_data.val();
            }
            self.retry_left.d.next = self.qpr_u.retry_left.val();
            self.rnr_left.d.next = self.qpr_u.rnr_left.val();
            self.stopped.d.next = self.stop_ram.read_data.val();
            self.rd_cnt.d.next = self.rdc_ram.read_data.val();
            self.rwd_v.d.next = self.rwv_ram.read_data.val();
            self.rwd.d.next = self.rwp_ram.read_data.val();
            self.tp_v.d.next = self.tpv_ram.read_data.val();
            self.tp_psn.d.next = self.tpp_ram.read_data.val();
            self.rnr_w.d.next = self.rnrw_ram.read_data.val();
        }
        if self.state.q.val() == self.k_ctx_in.val() {
            self.state.d.next = self.k_decide.val();
            if self.mode_db.q.val() {
                self.state.d.next = self.k_wr_db.val();
            }
        }
        if (self.state.q.val() == self.k_wr_db.val()) & self.qpr_wr.ready.val() {
            self.state.d.next = self.k_decide.val();
        }
        if self.state.q.val() == self.k_decide.val() {
            self.is_err.d.next = false;
            self.status.d.next = self.k_zero8.val();
            self.iova.d.next = self.k_zero64.val();
            self.state.d.next = self.k_idle.val();
            if self.eligible.val() {
                self.state.d.next = self.k_fetch.val();
            }
            if self.resume.val() {
                // the packets held at the window's edge (the go-back-N walk from there)
                self.rtx_psn.d.next = self.tp_psn.q.val();
                self.rtx_idx.d.next = self.sq_ci.q.val();
                self.state.d.next = self.k_rt_rd.val();
            }
            if self.flush_go.val() {
                // the QP is in error: every WQE not completed, WR_FLUSH_ERR in SQ order
                // (no RNR wait, no cursor held any more)
                self.err_head.d.next = false;
                self.rnr_w.d.next = false;
                self.tp_v.d.next = false;
                self.state.d.next = self.k_fl_rd.val();
            }
        }
        // ---- the flush: the ring's ops, then the WQEs posted and not fetched ----
        if self.state.q.val() == self.k_fl_rd.val() {
            self.state.d.next = self.k_fl_cqe.val();
            if self.sq_ci.q.val() == self.sq_fetch.q.val() {
                self.state.d.next = self.k_wqpr.val();
                if self.sq_fetch.q.val() != self.sq_pi.q.val() {
                    self.mode_fl.d.next = true;
                    self.state.d.next = self.k_fetch.val();
                }
            }
        }
        if (self.state.q.val() == self.k_fl_cqe.val()) & self.cqe.ready.val() {
            self.sq_ci.d.next = self.sq_ci.q.val() + self.k_one32.val();
            if self.rd_like_op.val() {
                self.rd_cnt.d.next = self.rd_cnt.q.val() - self.k_one5.val();
            }
            self.state.d.next = self.k_fl_rd.val();
        }
        if (self.state.q.val() == self.k_fl_post.val()) & self.cqe.ready.val() {
            self.sq_fetch.d.next = self.sq_fetch.q.val() + self.k_one32.val();
            self.sq_ci.d.next = self.sq_fetch.q.val() + self.k_one32.val();
            self.mode_fl.d.next = false;
            self.state.d.next = self.k_fl_rd.val();
        }
        if (self.state.q.val() == self.k_fetch.val()) & self.fetch.s_req_ready.val() {
            self.state.d.next = self.k_wqe.val();
        }
        if self.state.q.val() == self.k_wqe.val() {
            if self.fetch.m_wqe_valid.val() {
                self.w_wr_id.d.next = self.fetch.m_wqe_wr_id.val();
                self.w_opcode.d.next = self.fetch.m_wqe_opcode.val();
                self.w_flags.d.next = self.fetch.m_wqe_flags.val();
                self.w_inline_len.d.next = self.fetch.m_wqe_inline_len.val();
                self.w_num_sge.d.next = self.fetch.m_wqe_num_sge.val();
                self.w_imm.d.next = self.fetch.m_wqe_imm.val();
                self.w_remote_addr.d.next = self.fetch.m_wqe_remote_addr.val();
                self.w_rkey.d.next = self.fetch.m_wqe_rkey.val();
                self.w_compare_add.d.next = self.fetch.m_wqe_compare_add.val();
                self.w_swap.d.next = self.fetch.m_wqe_swap.val();
                self.w_inline.d.next = self.fetch.m_wqe_inline.val();
                self.w_sge_addr.d.next = self.fetch.m_wqe_sge_addr.val();
                self.w_sge_length.d.next = self.fetch.m_wqe_sge_length.val();
                self.w_sge_lkey.d.next = self.fetch.m_wqe_sge_lkey.val();
                self.state.d.next = self.k_check.val();
                if self.mode_rt.q.val() {
                    self.state.d.next = self.k_rt_job.val();
                }
                if self.mode_fl.q.val() {
                    self.state.d.next = self.k_fl_post.val();
                }
            }
            if self.fetch.m_err_valid.val() {
                self.stopped.d.next = true;
                self.state.d.next = self.k_fault.val();
                if self.mode_fl.q.val() {
                    // (a WQE that cannot be read is flushed as an all-zero one: wr_id 0,
                    // RDMA WRITE, as the model does)
                    self.w_wr_id.d.next = self.k_zero64.val();
                    self.w_opcode.d.next = self.k_zero8.val();
                    self.state.d.next = self.k_fl_post.val();
                }
            }
        }
        if self.state.q.val() == self.k_fault.val() {
            self.state.d.next = self.k_idle.val();
        }
        if self.state.q.val() == self.k_check.val() {
            if self.blocked.val() {
                self.state.d.next = self.k_idle.val();
            } else if self.chk_status.val() != self.k_zero8.val() {
                self.is_err.d.next = true;
                self.status.d.next = self.chk_status.val();
                self.state.d.next = self.k_append.val();
                if self.at_head.val() {
                    self.state.d.next = self.k_cqe.val();
                }
            } else if self.go_mr.val() {
                self.state.d.next = self.k_mr_req.val();
            } else {
                self.state.d.next = self.k_fit.val();
            }
        }
        if (self.state.q.val() == self.k_mr_req.val()) & self.mr.req_ready.val() {
            self.state.d.next = self.k_mr_res.val();
        }
        if (self.state.q.val() == self.k_mr_res.val()) & self.mr.res_valid.val() {
            if self.mr.res_ok.val() {
                self.iova.d.next = self.mr.res_iova.val();
                self.state.d.next = self.k_fit.val();
            } else {
                self.is_err.d.next = true;
                self.status.d.next = self.k_st_prot.val();
                self.state.d.next = self.k_append.val();
                if self.at_head.val() {
                    self.state.d.next = self.k_cqe.val();
                }
            }
        }
        if self.state.q.val() == self.k_fit.val() {
            self.state.d.next = self.k_idle.val();
            if self.fits.val() {
                self.state.d.next = self.k_append.val();
            }
        }
        if (self.state.q.val() == self.k_append.val()) & !self.is_err.q.val() {
            self.state.d.next = self.k_job.val();
        }
        if self.commit.val() {
            self.sq_fetch.d.next = self.sq_fetch.q.val() + self.k_one32.val();
            if !self.is_err.q.val() {
                self.next_psn.d.next = self.next_psn.q.val() + self.npsn.val();
            }
            if self.is_err.q.val() & self.at_head.val() {
                self.sq_ci.d.next = self.sq_fetch.q.val() + self.k_one32.val();
            }
            self.err_head.d.next = self.is_err.q.val() & self.at_head.val();
            if self.is_err.q.val() {
                self.stopped.d.next = true;
            }
            if self.rd_like.val() & !self.is_err.q.val() {
                self.rd_cnt.d.next = self.rd_cnt.q.val() + self.k_one5.val();
            }
            if self.state.q.val() == self.k_job.val() {
                self.tm_arm.d.next = true;
            }
            if (self.state.q.val() == self.k_job.val()) & self.cut.val() {
                self.tp_v.d.next = true;
                self.tp_psn.d.next = self.stop_psn.val();
            }
            self.state.d.next = self.k_wqpr.val();
        }
        if (self.state.q.val() == self.k_wqpr.val()) & self.qpr_wr.ready.val() {
            // (after an error, too: the QP is then found in error and flushed)
            self.again.d.next = true;
            self.state.d.next = self.k_idle.val();
            if self.rtx_act.q.val() {
                self.rtx_idx.d.next = self.sq_ci.q.val();
                self.state.d.next = self.k_rt_rd.val();
            }
        }
        // ---- go-back-N: the ring's unfinished ops from the rewind PSN sent again ----
        // (the model's rewind_cursor: into the op holding the PSN, a READ at its first
        // missing response; every later unfinished op from its start)
        if self.state.q.val() == self.k_rt_rd.val() {
            self.state.d.next = self.k_rt_chk.val();
            if self.rtx_idx.q.val() == self.sq_fetch.q.val() {
                // everything sent: no cursor held; the QP again (fetch goes on)
                self.tp_v.d.next = false;
                self.tpw.d.next = true;
                self.again.d.next = true;
                self.state.d.next = self.k_idle.val();
            }
        }
        if self.state.q.val() == self.k_rt_chk.val() {
            if self.rt_send.val() & !self.rt_ok.val() {
                // its first packet past the window's edge: the cursor is held there
                self.tp_v.d.next = true;
                self.tp_psn.d.next = self.rt_sp.val();
                self.tpw.d.next = true;
                self.state.d.next = self.k_idle.val();
            } else if self.rt_send.val() {
                self.rt_rdl.d.next = (self.op_u.kind.val() == self.k_kind_read.val())
                    | (self.op_u.kind.val() == self.k_kind_atomic.val());
                self.rt_first.d.next = self.op_u.first_psn.val();
                self.rt_pmtu.d.next = self.op_u.pmtu.val();
                self.rt_npsn.d.next = self.op_u.npsn.val();
                self.iova.d.next = self.op_u.iova.val();
                self.rt_start.d.next = self.k_zero24.val();
                if self.rt_in.val() {
                    self.rt_start.d.next = self.rt_d.val();
                }
                if self.op_u.kind.val() == self.k_kind_read.val() {
                    self.rt_start.d.next = self.op_u.resp.val();
                }
                self.mode_rt.d.next = true;
                self.state.d.next = self.k_fetch.val();
            } else {
                self.rtx_idx.d.next = self.rtx_idx.q.val() + self.k_one32.val();
                self.state.d.next = self.k_rt_rd.val();
            }
        }
        if (self.state.q.val() == self.k_rt_job.val()) & self.job_taken.q.val() {
            self.rtx_idx.d.next = self.rtx_idx.q.val() + self.k_one32.val();
            self.rtx_psn.d.next = self.rt_first.q.val() + self.rt_npsn.q.val();
            self.mode_rt.d.next = false;
            self.state.d.next = self.k_rt_rd.val();
            if self.rt_cut.val() {
                // the job stopped at the window's edge: the cursor is held there
                self.tp_v.d.next = true;
                self.tp_psn.d.next = self.stop_psn.val();
                self.tpw.d.next = true;
                self.state.d.next = self.k_idle.val();
            }
        }

        // ---- the receive half: the sequence (the model's requester_rx) ----
        if (self.state.q.val() == self.k_ctx_in.val()) & self.mode_rx.q.val() {
            self.rx_glob.d.next = !self.present.q.val();
            self.state.d.next = self.k_rx_start.val();
            // (a response from an address other than the peer's is not for this QP)
            if !self.rx_can.val() | (self.rx_src.q.val() != self.dest_ip.q.val()) {
                self.state.d.next = self.k_rx_unk.val();
            }
        }
        if (self.state.q.val() == self.k_ctx_in.val()) & self.mode_to.q.val() {
            self.state.d.next = self.k_to.val();
        }
        // the ACK timer expired (the model's fire_timers): with ops outstanding, a retry
        // and go-back-N from una (rewound_to = una, the timer re-armed), or out of retries
        // the oldest op fails with RETRY_EXC_ERR (its CQE and the QP error at the retire)
        if self.state.q.val() == self.k_to.val() {
            self.state.d.next = self.k_idle.val();
            if self.fire_rnr.q.val() {
                // the RNR wait is over (the model's fire_timers): the ACK timer armed,
                // then the QP again: the held cursor resumes (go-back-N from it)
                self.rnr_w.d.next = false;
                self.tm_arm.d.next = true;
                self.is_err.d.next = false;
                self.err_head.d.next = false;
                self.state.d.next = self.k_wqpr.val();
            } else if self.to_ok.val() {
                if self.retry_left.q.val() == self.k_zero3.val() {
                    self.stopped.d.next = true;
                    self.state.d.next = self.k_to_rd.val();
                } else {
                    self.retry_left.d.next = self.retry_left.q.val() - self.k_one3.val();
                    self.rtx_act.d.next = true;
                    self.rtx_psn.d.next = self.una_psn.q.val();
                    self.rwd_v.d.next = true;
                    self.rwd.d.next = self.una_psn.q.val();
                    self.tm_arm.d.next = true;
                    self.is_err.d.next = false;
                    self.err_head.d.next = false;
                    self.state.d.next = self.k_wqpr.val();
                }
            }
        }
        if self.state.q.val() == self.k_to_rd.val() {
            self.state.d.next = self.k_to_wr.val();
        }
        if self.state.q.val() == self.k_to_wr.val() {
            self.is_err.d.next = false;
            self.err_head.d.next = false;
            self.state.d.next = self.k_ret_rd.val();
        }
        if self.state.q.val() == self.k_rx_unk.val() {
            // UnknownQpDrops (rx_cnt), the payload drained
            self.rx_unk.d.next = true;
            self.state.d.next = self.k_rx_drain.val();
        }
        if self.state.q.val() == self.k_rx_start.val() {
            self.rx_unk.d.next = false;
            self.is_err.d.next = false;
            self.err_head.d.next = false;
            self.dok.d.next = true;
            self.wslot.d.next = self.sq_ci.q.val().get_bits::<4>(0);
            self.wk.d.next = self.k_zero5.val();
            self.wk_v.d.next = false;
            self.state.d.next = self.k_rx_walk.val();
        }
        // walk: one ring address a cycle, the op into ReqRxCheck the cycle after
        // apply pass: the same addresses, each op rewritten the cycle after its read, up
        // to the last op the decision changes (acknowledged or failed): the ops after it
        // would be written back as they are
        self.pend_a.next = self.l_upto.q.val();
        if self.l_f0v.q.val() & (self.l_f0op.q.val() >= self.l_upto.q.val()) {
            self.pend_a.next = self.l_f0op.q.val() + self.k_one5.val();
        }
        self.pend.next = self.pend_a.val();
        if self.l_f1v.q.val() & (self.l_f1op.q.val() >= self.pend_a.val()) {
            self.pend.next = self.l_f1op.q.val() + self.k_one5.val();
        }
        self.wk_end.next = self.n5.val();
        if (self.state.q.val() == self.k_rx_pass.val()) & (self.pend.val() < self.n5.val()) {
            self.wk_end.next = self.pend.val();
        }
        if (self.state.q.val() == self.k_rx_walk.val())
            | (self.state.q.val() == self.k_rx_pass.val())
        {
            self.wk_v.d.next = false;
            if self.wk.q.val() < self.wk_end.val() {
                self.wslot.d.next = self.wslot.q.val() + self.k_one4.val();
                self.wk.d.next = self.wk.q.val() + self.k_one5.val();
                self.wk_v.d.next = true;
                self.pslot.d.next = self.wslot.q.val();
                self.pidx.d.next = self.wk.q.val();
            }
        }
        if (self.state.q.val() == self.k_rx_walk.val())
            & (self.wk.q.val() == self.wk_end.val())
            & !self.wk_v.q.val()
        {
            self.state.d.next = self.k_rx_dec.val();
        }
        if self.state.q.val() == self.k_rx_dec.val() {
            // the window state, the ops' fates and the delivery, as decided
            self.una_psn.d.next = self.chk.m_una.val();
            self.retry_left.d.next = self.chk.m_retry_left.val();
            self.rnr_left.d.next = self.chk.m_rnr_left.val();
            self.l_upto.d.next = self.chk.m_ack_upto.val();
            self.l_f0v.d.next = self.chk.m_fail0_valid.val();
            self.l_f0op.d.next = self.chk.m_fail0_op.val();
            self.l_f0st.d.next = self.st8a.y.val();
            self.l_f0syn.d.next = self.chk.m_fail0_syndrome.val();
            self.l_f1v.d.next = self.chk.m_fail1_valid.val();
            self.l_f1op.d.next = self.chk.m_fail1_op.val();
            self.l_f1st.d.next = self.st8b.y.val();
            self.l_f1syn.d.next = self.chk.m_fail1_syndrome.val();
            self.l_dv.d.next = self.chk.m_dlv_valid.val();
            self.l_dop.d.next = self.chk.m_dlv_op.val();
            self.l_doff.d.next = self.chk.m_dlv_offset.val();
            self.l_datomic.d.next = self.chk.m_dlv_atomic.val();
            self.l_duna.d.next = self.chk.m_dlv_una.val();
            self.rwd_v.d.next = self.chk.m_rewound_valid.val();
            self.rwd.d.next = self.chk.m_rewound.val();
            if self.chk.m_cursor.val() == self.k_cur_rewind.val() {
                if self.chk.m_rnr_wait.val() | self.rnr_w.q.val() {
                    // an RNR wait (starting or running): the cursor is only moved, held
                    // there until the RNR timer fires
                    self.tp_v.d.next = true;
                    self.tp_psn.d.next = self.chk.m_cursor_psn.val();
                } else {
                    // go-back-N: retransmitted once the QP's state is written back
                    self.rtx_act.d.next = true;
                    self.rtx_psn.d.next = self.chk.m_cursor_psn.val();
                }
            }
            if self.chk.m_rnr_wait.val() {
                // an RNR NAK with an RNR retry left: the wait starts (the RNR timer set
                // at the write-back)
                self.rnr_w.d.next = true;
                self.tm_rnr.d.next = true;
                self.rnr_code.d.next = self.chk.m_rnr_timer.val();
            }
            if self.chk.m_fail0_valid.val() | self.chk.m_fail1_valid.val() {
                self.stopped.d.next = true;
            }
            self.wslot.d.next = self.sq_ci.q.val().get_bits::<4>(0);
            self.wk.d.next = self.k_zero5.val();
            self.wk_v.d.next = false;
            self.state.d.next = self.k_rx_pass.val();
        }
        if (self.state.q.val() == self.k_rx_pass.val())
            & (self.wk.q.val() == self.wk_end.val())
            & !self.wk_v.q.val()
        {
            if self.l_dv.q.val() {
                self.state.d.next = self.k_rx_drd.val();
            } else if self.pay_left.q.val() {
                self.state.d.next = self.k_rx_drain.val();
            } else {
                self.state.d.next = self.k_ret_rd.val();
            }
        }
        if self.state.q.val() == self.k_rx_drd.val() {
            // (a READ response without payload writes nothing)
            self.state.d.next = self.k_rx_dwr.val();
            if self.l_datomic.q.val() | (self.rx_plen.q.val() != self.k_zero16.val()) {
                self.state.d.next = self.k_rx_dreq.val();
            }
        }
        if (self.state.q.val() == self.k_rx_dreq.val()) & self.dma_wr.req_ready.val() {
            self.state.d.next = self.k_rx_ddata.val();
        }
        if (self.state.q.val() == self.k_rx_ddata.val()) & self.dma_wr.data_ready.val() {
            if self.l_datomic.q.val() {
                self.state.d.next = self.k_rx_dst.val();
            } else if self.rsp_pay.tvalid.val() & self.rsp_pay.tlast.val() {
                self.pay_left.d.next = false;
                self.state.d.next = self.k_rx_dst.val();
            }
        }
        if (self.state.q.val() == self.k_rx_dst.val()) & self.dma_wr.status_valid.val() {
            self.dok.d.next = !self.dma_wr.status_err.val();
            self.state.d.next = self.k_rx_dwr.val();
        }
        if self.state.q.val() == self.k_rx_dwr.val() {
            // progress: the window moves, retries reload (a failed READ write: none)
            if self.dok.q.val() | self.l_datomic.q.val() {
                self.tm_arm.d.next = true;
                self.una_psn.d.next = self.l_duna.q.val();
                self.retry_left.d.next = self.retry_cnt.q.val();
                self.rnr_left.d.next = self.rnr_retry.q.val();
                self.rwd_v.d.next = false;
            }
            if !self.dok.q.val() {
                self.stopped.d.next = true;
            }
            self.state.d.next = self.k_ret_rd.val();
            if self.pay_left.q.val() {
                self.state.d.next = self.k_rx_drain.val();
            }
        }
        if (self.state.q.val() == self.k_rx_drain.val())
            & (!self.pay_left.q.val() | (self.rsp_pay.tvalid.val() & self.rsp_pay.tlast.val()))
        {
            self.pay_left.d.next = false;
            self.state.d.next = self.k_ret_rd.val();
            if self.rx_unk.q.val() {
                self.state.d.next = self.k_idle.val();
            }
        }
        // retire: done ops leave the ring head in SQ order (the model's retire)
        if self.state.q.val() == self.k_ret_rd.val() {
            self.state.d.next = self.k_ret_chk.val();
            if self.sq_ci.q.val() == self.sq_fetch.q.val() {
                self.state.d.next = self.k_wqpr.val();
            }
        }
        if self.state.q.val() == self.k_ret_chk.val() {
            if self.op_u.done.val() == self.k_zero1.val() {
                self.state.d.next = self.k_wqpr.val();
            } else if (self.op_u.status.val() != self.k_zero8.val())
                | (self.op_u.signaled.val() != self.k_zero1.val())
            {
                self.state.d.next = self.k_ret_cqe.val();
            } else {
                self.sq_ci.d.next = self.sq_ci.q.val() + self.k_one32.val();
                if self.rd_like_op.val() {
                    self.rd_cnt.d.next = self.rd_cnt.q.val() - self.k_one5.val();
                }
                self.state.d.next = self.k_ret_rd.val();
            }
        }
        if (self.state.q.val() == self.k_ret_cqe.val()) & self.cqe.ready.val() {
            self.sq_ci.d.next = self.sq_ci.q.val() + self.k_one32.val();
            if self.rd_like_op.val() {
                self.rd_cnt.d.next = self.rd_cnt.q.val() - self.k_one5.val();
            }
            self.state.d.next = self.k_ret_rd.val();
            if self.op_u.status.val() != self.k_zero8.val() {
                // an error op: its CQE, the QP-error pulse, no more retiring (and nothing
                // sent again: the QP is in error)
                self.stopped.d.next = true;
                self.rtx_act.d.next = false;
                self.state.d.next = self.k_wqpr.val();
            }
        }

        // ---- a payload read failed (Segmenter's pulse): latched until IDLE serves it ----
        if self.seg.m_err_valid.val()
            & (!self.serr_pend.q.val() | (self.state.q.val() == self.k_idle.val()))
        {
            self.serr_pend.d.next = true;
            self.serr_qpn.d.next = self.seg.m_err_qpn.val();
        }

        if self.reset.val() {
            self.state.d.next = self.k_idle.val();
            self.serr_pend.d.next = false;
            self.again.d.next = false;
            self.mode_db.d.next = false;
            self.mode_rx.d.next = false;
            self.mode_rt.d.next = false;
            self.mode_fl.d.next = false;
            self.mode_to.d.next = false;
            self.s1_v.d.next = false;
            self.fw_v.d.next = false;
            self.tpw.d.next = false;
        }
    }
}
