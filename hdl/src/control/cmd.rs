//! `CmdEngine`: the mailbox commands (`proto::abi::cmd`) as a state machine over the
//! context tables (`ctx_tables.rs`), which it owns; their datapath read ports pass through.
//!
//! ```text
//!            start
//!   Clear --> Idle --> ReadA --> ReadB --> ReadC --> ReadD --> ReadE --> Eval --+--> Done --> Idle
//!  (reset:                                                                |     ^
//!   zero every                                           Write2 (2nd CQ) <-+     |
//!   table)                                               Event (QP event) -------+
//!                                     (CREATE_QP, QUERY_QP_COUNTERS) Write2 --> Qc --+
//!                                          (QUERY_QP_COUNTERS) Qc --> QDma --> Done
//! ```
//!
//! - ReadA presents the entries named by argument word 0 (QP tables, MR, CQ); ReadB
//!   captures them; ReadC presents the PD and the send CQ (their numbers come from the
//!   arguments or from the QP/MR entry just read); ReadD captures them and presents the
//!   receive CQ; ReadE captures it. Eval decides the status exactly as `model::cmd` does
//!   (same checks, same order of precedence) and, on OK, writes every table in one cycle;
//!   Write2 updates a second CQ's reference count; Event hands a QP event to the datapath.
//!   A command takes 9 cycles (10-11 with a second CQ or an event) from `start` to `done`;
//!   CREATE_QP and QUERY_QP_COUNTERS more (the counters' operation, the DMA write).
//! - After reset the engine writes zero to every entry (2^MA cycles, `busy` high), so a
//!   reset device has no objects, as `Nic::new`.
//! - `outs` are the result words: zero after every command but a successful QUERY_QP, as in
//!   the model (`cmd_out` is cleared when a command runs).
//! - QP events (`qpev`, a `QpEvClient`, one per MODIFY_QP or DESTROY_QP that has one):
//!   `QPEV_RESET` (moved to RESET: drop everything of the QP), `QPEV_ERROR` (entered ERR
//!   from another state: flush its work requests), `QPEV_ACTIVE` (RTS or SQD: the
//!   requester may schedule it), `QPEV_DESTROYED`.
//! - CQ events (`cqev`, a `CqEvClient`, one per successful CREATE_CQ): the CQ's number,
//!   ring and size for the completion engine, which keeps the CQ's indices.
//! - Per-QP counters (`m_qc_*`, the [`QpCounters`](crate::control::qp_counters::QpCounters)
//!   operation port): a successful CREATE_QP clears the QP's counters and a
//!   QUERY_QP_COUNTERS that passed its checks (BAD_INDEX, NOT_FOUND) reads them, in state
//!   Qc after Write2 (offer the operation, wait for its `s_qc_done`). Every `state` change
//!   depends on registers only (Eval leaves `need_qc`): a condition on Eval's locals would
//!   tie the state logic to the table writes' and Verilator would see a loop through the
//!   datapath (UNOPTFLAT). QUERY_QP_COUNTERS
//!   then writes the 128 bytes (`s_qc_cnt`, 16 little-endian u64 in `Counter` order) to
//!   the IOVA of argument words 1-2 on the DMA write port (`dma_wr`: the request, two
//!   beats, then the status), state QDma; a refused write (`dma_wr.status_err`) answers
//!   `DMA_FAULT`, as the model does. The counters are those of the moment each is read
//!   (`qp_counters` docs).
//! - QP errors (`qperr`, a `QpErrServer`; the engine merges the responder's and the
//!   requester's): in Idle, with no command to
//!   start, the engine reads the QP's `qpc`/`qpa` (ErrRead, ErrCapture) and in ErrWrite
//!   moves `qpa.state` to ERR if the QP exists and is in RTR, RTS or SQD (the states the
//!   model's responder fails in; a QP reset or destroyed meanwhile is left alone), raising
//!   `qperr.ready` in that cycle, so the responder's next read of `qpa` sees ERR. No
//!   QP event is sent for it (the responder flushes the receives itself; the requester's
//!   SQ flush is not built). A `start` arriving in those three cycles is held and runs
//!   next. Commands go first; a QP error is also served while a QP event waits for its
//!   taker (which may be the responder, waiting for this write: no deadlock).
//! - The responder's SEND with invalidate (`inv`, an `InvServer`, after QP errors): the
//!   same three states read the MR named by the key (`key >> 8`), and invalidate it
//!   (clear `valid`) if it exists, is valid, carries the key's tag and is in the given PD,
//!   as the model's `Tables::invalidate`; `inv.ok` with ready says whether it did.
//! - Arguments are read during the command, not latched at start (as the model reads them
//!   when the command executes): the host must not write them while busy.

use crate::bus::ctl::{CqEvClient, InvServer, QpErrServer, QpEvClient};
use crate::bus::ctx::{CtxRdServer, CtxServers, CtxWrServer};
use crate::bus::dma_wr::DmaWrClient;
use crate::control::ctx_tables::*;
use crate::control::qp_counters::CNT_BITS;
use crate::prelude::*;
use rocenic_proto::abi::cmd::{modify_qp_arg as modify, mr_key, qp_attr, CmdOpcode, CmdStatus};
use rocenic_proto::abi::verbs::{access, Mtu, QpState};

/// QP event kinds on `qpev.kind`.
pub const QPEV_RESET: u64 = 0;
pub const QPEV_ERROR: u64 = 1;
pub const QPEV_ACTIVE: u64 = 2;
pub const QPEV_DESTROYED: u64 = 3;

/// The command engine's states (a 4-bit register: RustHDL's enum states do not lint
/// clean); see the [module docs](self).
pub mod cmd_state {
    pub const CLEAR: u64 = 0;
    pub const IDLE: u64 = 1;
    pub const READ_A: u64 = 2;
    pub const READ_B: u64 = 3;
    pub const READ_C: u64 = 4;
    pub const READ_D: u64 = 5;
    pub const READ_E: u64 = 6;
    pub const EVAL: u64 = 7;
    pub const WRITE2: u64 = 8;
    pub const EVENT: u64 = 9;
    pub const DONE: u64 = 10;
    pub const ERR_READ: u64 = 11;
    pub const ERR_CAPTURE: u64 = 12;
    pub const ERR_WRITE: u64 = 13;
    pub const QC: u64 = 14;
    pub const QDMA: u64 = 15;
}

/// The argument words as the commands use them (`proto::abi::cmd` layouts). Bits no
/// command reads (words 14-15, the upper bits of narrow fields) are ignored, as the ABI
/// says, and marked so for the lint.
#[derive(LogicBlock, Default)]
pub struct CmdArgs {
    pub args: Signal<In, Bits<512>>,
    pub w0: Signal<Out, Bits<32>>,
    pub w1: Signal<Out, Bits<32>>,
    pub w2: Signal<Out, Bits<32>>,
    pub w3: Signal<Out, Bits<32>>,
    pub w4: Signal<Out, Bits<32>>,
    pub w6: Signal<Out, Bits<32>>,
    pub w7: Signal<Out, Bits<32>>,
    pub w9: Signal<Out, Bits<32>>,
    pub w10: Signal<Out, Bits<32>>,
    /// Words 2:1, 3:2, 5:4, 7:6, 9:8 and 8:7 as 64-bit values (low word first).
    pub d12: Signal<Out, Bits<64>>,
    pub d23: Signal<Out, Bits<64>>,
    pub d45: Signal<Out, Bits<64>>,
    pub d67: Signal<Out, Bits<64>>,
    pub d89: Signal<Out, Bits<64>>,
    pub d78: Signal<Out, Bits<64>>,
    /// MODIFY_QP fields: RQ PSN (word 5, 24 bits), dest MAC bytes 0..2 (word 8), word 11's
    /// timeout/retry_cnt/rnr_retry/min_rnr_timer, word 12's two rd_atomic bytes, word 13's
    /// UDP source port.
    pub rq_psn: Signal<Out, Bits<24>>,
    pub mac_hi: Signal<Out, Bits<16>>,
    pub timeout: Signal<Out, Bits<5>>,
    pub retry_cnt: Signal<Out, Bits<3>>,
    pub rnr_retry: Signal<Out, Bits<3>>,
    pub min_rnr_timer: Signal<Out, Bits<5>>,
    pub max_rd_atomic: Signal<Out, Bits<8>>,
    pub max_dest_rd_atomic: Signal<Out, Bits<8>>,
    pub udp_sport: Signal<Out, Bits<16>>,
}

/// (output, bit offset in `args`, width) of every [`CmdArgs`] output: word `k` at `32 * k`,
/// the MODIFY_QP fields where `rocenic_proto::abi::cmd::modify_qp_arg` puts them.
const ARG_FIELDS: [(&str, usize, usize); 24] = [
    ("w0", 0, 32),
    ("w1", 32, 32),
    ("w2", 2 * 32, 32),
    ("w3", 3 * 32, 32),
    ("w4", 4 * 32, 32),
    ("w6", 6 * 32, 32),
    ("w7", 7 * 32, 32),
    ("w9", 9 * 32, 32),
    ("w10", 10 * 32, 32),
    ("d12", 32, 64),
    ("d23", 2 * 32, 64),
    ("d45", 4 * 32, 64),
    ("d67", 6 * 32, 64),
    ("d89", 8 * 32, 64),
    ("d78", 7 * 32, 64),
    ("rq_psn", modify::RQ_PSN.offset(), 24),
    ("mac_hi", modify::MAC_HI.offset(), 16),
    ("timeout", modify::TIMEOUT.offset(), modify::TIMEOUT.width),
    (
        "retry_cnt",
        modify::RETRY_CNT.offset(),
        modify::RETRY_CNT.width,
    ),
    (
        "rnr_retry",
        modify::RNR_RETRY.offset(),
        modify::RNR_RETRY.width,
    ),
    (
        "min_rnr_timer",
        modify::MIN_RNR_TIMER.offset(),
        modify::MIN_RNR_TIMER.width,
    ),
    (
        "max_rd_atomic",
        modify::MAX_RD_ATOMIC.offset(),
        modify::MAX_RD_ATOMIC.width,
    ),
    (
        "max_dest_rd_atomic",
        modify::MAX_DEST_RD_ATOMIC.offset(),
        modify::MAX_DEST_RD_ATOMIC.width,
    ),
    (
        "udp_sport",
        modify::UDP_SPORT.offset(),
        modify::UDP_SPORT.width,
    ),
];

// The words `Cmd::update` reads each command's arguments from (`self.a.w2` is MODIFY_QP's
// state, REG_MR's PDN and CREATE_QP's send CQN), and the MODIFY_QP mask bits it tests with
// `get_bit`, as `rocenic_proto::abi::cmd` places them.
const _: () = {
    use rocenic_proto::abi::cmd::{
        cq_arg as q, create_qp_arg as c, mr_arg as r, pd_arg as p, qp_attr as b,
        qp_counters_arg as k, ArgField,
    };
    const fn at(f: ArgField, word: usize, width: usize) -> bool {
        f.word == word && f.bit == 0 && f.width == width
    }
    assert!(at(p::PDN, 0, 32) && at(q::CQN, 0, 32) && at(r::INDEX, 0, 32));
    assert!(at(c::QPN, 0, 32) && at(modify::QPN, 0, 32) && at(k::QPN, 0, 32));
    assert!(at(q::LOG_SIZE, 1, 32) && at(q::RING_IOVA, 2, 64) && at(k::IOVA, 1, 64));
    assert!(at(r::KEY, 1, 32) && at(r::PDN, 2, 32) && at(r::ACCESS, 3, 32));
    assert!(at(r::VA, 4, 64) && at(r::IOVA, 6, 64) && at(r::LENGTH, 8, 64));
    assert!(at(c::PDN, 1, 32) && at(c::SEND_CQN, 2, 32) && at(c::RECV_CQN, 3, 32));
    assert!(at(c::SQ_IOVA, 4, 64) && at(c::SQ_LOG_SIZE, 6, 32));
    assert!(at(c::RQ_IOVA, 7, 64) && at(c::RQ_LOG_SIZE, 9, 32));
    assert!(at(modify::MASK, 1, 32) && at(modify::STATE, 2, 32) && at(modify::PATH_MTU, 3, 32));
    assert!(at(modify::DEST_QPN, 4, 32) && at(modify::SQ_PSN, 6, 32) && at(modify::MAC_LO, 7, 32));
    assert!(at(modify::DEST_IP, 9, 32) && at(modify::ACCESS, 10, 32));
    assert!(b::STATE == 1 << 0 && b::ACCESS_FLAGS == 1 << 3 && b::AV == 1 << 7);
    assert!(b::PATH_MTU == 1 << 8 && b::TIMEOUT == 1 << 9 && b::RETRY_CNT == 1 << 10);
    assert!(b::RNR_RETRY == 1 << 11 && b::RQ_PSN == 1 << 12 && b::MAX_QP_RD_ATOMIC == 1 << 13);
    assert!(b::MIN_RNR_TIMER == 1 << 15 && b::SQ_PSN == 1 << 16);
    assert!(b::MAX_DEST_RD_ATOMIC == 1 << 17 && b::DEST_QPN == 1 << 20);
    // A key is the MR index above an 8-bit tag (REG_MR checks `key >> 8 == index`).
    assert!(mr_key(0xab_cdef, 0x12) == 0xabcd_ef12);
};

impl Logic for CmdArgs {
    fn update(&mut self) {
        let a = self.args.val();
        self.w0.next = a.get_bits::<32>(0);
        self.w1.next = a.get_bits::<32>(32);
        self.w2.next = a.get_bits::<32>(2 * 32);
        self.w3.next = a.get_bits::<32>(3 * 32);
        self.w4.next = a.get_bits::<32>(4 * 32);
        self.w6.next = a.get_bits::<32>(6 * 32);
        self.w7.next = a.get_bits::<32>(7 * 32);
        self.w9.next = a.get_bits::<32>(9 * 32);
        self.w10.next = a.get_bits::<32>(10 * 32);
        self.d12.next = a.get_bits::<64>(32);
        self.d23.next = a.get_bits::<64>(2 * 32);
        self.d45.next = a.get_bits::<64>(4 * 32);
        self.d67.next = a.get_bits::<64>(6 * 32);
        self.d89.next = a.get_bits::<64>(8 * 32);
        self.d78.next = a.get_bits::<64>(7 * 32);
        self.rq_psn.next = a.get_bits::<24>(modify::RQ_PSN.offset());
        self.mac_hi.next = a.get_bits::<16>(modify::MAC_HI.offset());
        self.timeout.next = a.get_bits::<{ modify::TIMEOUT.width }>(modify::TIMEOUT.offset());
        self.retry_cnt.next = a.get_bits::<{ modify::RETRY_CNT.width }>(modify::RETRY_CNT.offset());
        self.rnr_retry.next = a.get_bits::<{ modify::RNR_RETRY.width }>(modify::RNR_RETRY.offset());
        self.min_rnr_timer.next =
            a.get_bits::<{ modify::MIN_RNR_TIMER.width }>(modify::MIN_RNR_TIMER.offset());
        self.max_rd_atomic.next =
            a.get_bits::<{ modify::MAX_RD_ATOMIC.width }>(modify::MAX_RD_ATOMIC.offset());
        self.max_dest_rd_atomic.next =
            a.get_bits::<{ modify::MAX_DEST_RD_ATOMIC.width }>(modify::MAX_DEST_RD_ATOMIC.offset());
        self.udp_sport.next = a.get_bits::<{ modify::UDP_SPORT.width }>(modify::UDP_SPORT.offset());
    }

    fn connect(&mut self) {
        self.w0.connect();
        self.w1.connect();
        self.w2.connect();
        self.w3.connect();
        self.w4.connect();
        self.w6.connect();
        self.w7.connect();
        self.w9.connect();
        self.w10.connect();
        self.d12.connect();
        self.d23.connect();
        self.d45.connect();
        self.d67.connect();
        self.d89.connect();
        self.d78.connect();
        self.rq_psn.connect();
        self.mac_hi.connect();
        self.timeout.connect();
        self.retry_cnt.connect();
        self.rnr_retry.connect();
        self.min_rnr_timer.connect();
        self.max_rd_atomic.connect();
        self.max_dest_rd_atomic.connect();
        self.udp_sport.connect();
    }

    fn hdl(&self) -> Verilog {
        let mut v = String::from(
            "// Argument bits no command reads are ignored (ABI: unnamed words are ignored).\n\
             // verilator lint_off UNUSEDSIGNAL\nwire [511:0] unused_ok = args;\n\
             // verilator lint_on UNUSEDSIGNAL\nalways @(*) begin\n",
        );
        for (name, at, w) in ARG_FIELDS {
            v.push_str(&format!("    {name} = args[{}:{at}];\n", at + w - 1));
        }
        v.push_str("end\n");
        Verilog::Custom(v)
    }
}

crate::unpack_fields!(PdUnpack, pd_layout; present: 1, refs: 25);
crate::unpack_fields!(CqUnpack, cq_layout; present: 1, refs: 14);
crate::unpack_fields!(CqPresent, cq_layout; present: 1);
crate::unpack_fields!(MrUnpack, mr_layout; present: 1, pdn: 8);
crate::unpack_fields!(MrInvUnpack, mr_layout; present: 1, valid: 1, tag: 8, pdn: 8);
crate::unpack_fields!(QpcUnpack, qpc_layout; present: 1, pdn: 8, send_cqn: 8, recv_cqn: 8);
crate::unpack_fields!(QpaUnpack, qpa_layout; state: 3, pmtu: 3, dest_qpn: 24, access: 4);
crate::unpack_fields!(QprUnpack, qpr_layout; sq_ci: 32, next_psn: 24);
crate::unpack_fields!(QpsUnpack, qps_layout; rq_ci: 32, epsn: 24);
crate::packed_layout!(
    /// The QUERY_QP result words (`QueryQpOut::to_outs`), zero-padded to 32 bits each.
    query_layout, QueryPack; state: 3, p0: 29, sq_psn: 24, p1: 8, rq_psn: 24, p2: 8,
    dest_qpn: 24, p3: 8, sq_ci: 32, rq_ci: 32, pmtu: 3, p4: 29, access: 4, p5: 28
);
crate::packed_layout!(
    /// A MAC address from its two register words.
    mac_layout, MacPack; lo: 32, hi: 16
);

/// A vector of `W` bits with the bits of the named fields of `layout` set.
fn field_mask<const W: usize>(fields: &[(&str, usize)], names: &[&str]) -> Bits<W> {
    let mut m = Bits::<W>::default();
    let mut at = 0;
    for &(name, w) in fields {
        if names.contains(&name) {
            for b in at..at + w {
                m = m.replace_bit(b, true);
            }
        }
        at += w;
    }
    assert_eq!(at, W, "layout width");
    m
}

/// The command engine over `2^QA` QPs and `2^MA` MRs (256 CQs, 256 PDs).
#[derive(LogicBlock)]
pub struct CmdEngine<const QA: usize, const MA: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// One-cycle pulse: run `opcode` with `args`.
    pub start: Signal<In, Bit>,
    pub opcode: Signal<In, Bits<32>>,
    pub args: Signal<In, Bits<512>>,
    /// Clearing the tables after reset (no command may start).
    pub busy: Signal<Out, Bit>,
    /// One-cycle pulse: the command finished; `status` and `outs` hold until the next one.
    pub done: Signal<Out, Bit>,
    pub status: Signal<Out, Bits<32>>,
    pub outs: Signal<Out, Bits<256>>,
    /// QP events for the datapath.
    pub qpev: QpEvClient<QA>,
    /// CQ events for the completion engine (valid/ready, one per successful CREATE_CQ):
    /// the CQ, its ring IOVA without the six zero bits, its log2 entries. (DESTROY_CQ
    /// needs none: a CQ with QPs on it cannot be destroyed, so no CQE is in flight for it,
    /// and the next CREATE_CQ of that number zeroes its indices.)
    pub cqev: CqEvClient,
    /// The tables' datapath ports (see ctx_tables::CtxTable).
    pub ctx: CtxServers<QA, MA>,
    /// The responder's QP errors: the QP to ERR (ready once `qpa` is written).
    pub qperr: QpErrServer<QA>,
    /// The responder's SEND with invalidate: the MR named by `key` is invalidated if it
    /// exists, is valid, carries the key's tag and is in PD `pdn` (the model's
    /// `Tables::invalidate`); `inv.ok` (with ready) says whether it was.
    pub inv: InvServer,
    /// The per-QP counters' operation port (`QpCounters::s_op_*`, `m_done`, `m_cnt`).
    pub m_qc_valid: Signal<Out, Bit>,
    pub m_qc_ready: Signal<In, Bit>,
    pub m_qc_clear: Signal<Out, Bit>,
    pub m_qc_qpn: Signal<Out, Bits<QA>>,
    pub s_qc_done: Signal<In, Bit>,
    pub s_qc_cnt: Signal<In, Bits<CNT_BITS>>,
    /// QUERY_QP_COUNTERS's DMA write (a `DmaWriteMux` client: request, data, status).
    pub dma_wr: DmaWrClient,

    // --- the tables ---
    pd: RAM<PdEntry, 8>,
    cq: CtxTable<{ cq_layout::BITS }, 8>,
    mr: CtxTable<{ mr_layout::BITS }, MA>,
    qpc: CtxTable<{ qpc_layout::BITS }, QA>,
    qpa: CtxTable<{ qpa_layout::BITS }, QA>,
    qpr: CtxTable<{ qpr_layout::BITS }, QA>,
    qps: CtxTable<{ qps_layout::BITS }, QA>,

    // --- state ---
    state: DFF<Bits<4>>,
    clr: DFF<Bits<MA>>,
    op: DFF<Bits<32>>,
    qpc_q: DFF<QpcEntry>,
    qpa_q: DFF<QpaEntry>,
    qpr_q: DFF<QprEntry>,
    qps_q: DFF<QpsEntry>,
    mr_q: DFF<MrEntry>,
    cqa_q: DFF<CqEntry>,
    pd_q: DFF<PdEntry>,
    cqs_q: DFF<CqEntry>,
    cqr_q: DFF<CqEntry>,
    pd_addr: DFF<Bits<8>>,
    cqs_addr: DFF<Bits<8>>,
    cqr_addr: DFF<Bits<8>>,
    status_r: DFF<Bits<32>>,
    outs_r: DFF<Bits<256>>,
    need_wr2: DFF<Bit>,
    need_ev: DFF<Bit>,
    ev_kind: DFF<Bits<2>>,
    /// The pending event is a CQ event (CREATE_CQ), not a QP event.
    cq_ev: DFF<Bit>,
    /// A `start` that came while a QP error was being written.
    start_pend: DFF<Bit>,
    /// The QP error was taken while a QP event waited (return to Event, not Idle).
    err_ret: DFF<Bit>,
    /// The datapath request being served is an invalidate (else a QP error).
    dp_inv: DFF<Bit>,
    /// After Write2: the counters' operation (CREATE_QP's clear, else QUERY_QP_COUNTERS's
    /// read, `qc_read`); Qc: it was taken.
    need_qc: DFF<Bit>,
    qc_read: DFF<Bit>,
    qc_sent: DFF<Bit>,
    /// QDma: 0 request, 1 and 2 the beats, 3 the status; `qd_st` it came, `qd_err` refused.
    qd: DFF<Bits<2>>,
    qd_st: DFF<Bit>,
    qd_err: DFF<Bit>,
    qd0: Constant<Bits<2>>,
    qd1: Constant<Bits<2>>,
    qd2: Constant<Bits<2>>,
    qd3: Constant<Bits<2>>,
    qd_len: Constant<Bits<16>>,
    keep_all: Constant<Bits<64>>,
    st_qc: Constant<Bits<4>>,
    st_qdma: Constant<Bits<4>>,

    // --- field access ---
    a: CmdArgs,
    pd_u: PdUnpack,
    cqa_u: CqUnpack,
    cqs_u: CqPresent,
    cqr_u: CqPresent,
    mr_u: MrUnpack,
    mr_inv: MrInvUnpack,
    qpc_u: QpcUnpack,
    qpa_u: QpaUnpack,
    qpr_u: QprUnpack,
    qps_u: QpsUnpack,

    cq_new: CqPack,

    mr_new: MrPack,
    qpc_new: QpcPack,
    qpa_cand: QpaPack,
    qpr_cand: QprPack,
    qps_cand: QpsPack,
    mac: MacPack,
    query: QueryPack,

    // --- constants ---
    st_clear: Constant<Bits<4>>,
    st_idle: Constant<Bits<4>>,
    st_read_a: Constant<Bits<4>>,
    st_read_b: Constant<Bits<4>>,
    st_read_c: Constant<Bits<4>>,
    st_read_d: Constant<Bits<4>>,
    st_read_e: Constant<Bits<4>>,
    st_eval: Constant<Bits<4>>,
    st_write2: Constant<Bits<4>>,
    st_event: Constant<Bits<4>>,
    st_done_st: Constant<Bits<4>>,
    st_err_read: Constant<Bits<4>>,
    st_err_capture: Constant<Bits<4>>,
    st_err_write: Constant<Bits<4>>,
    qpa_err: Constant<QpaEntry>,
    mr_valid_bit: Constant<MrEntry>,
    /// First key bit past the MR index: `8 + MA`.
    mr_index_end: Constant<Bits<32>>,
    inv_ok: Signal<Local, Bit>,
    op_nop: Constant<Bits<32>>,
    op_create_pd: Constant<Bits<32>>,
    op_destroy_pd: Constant<Bits<32>>,
    op_create_cq: Constant<Bits<32>>,
    op_destroy_cq: Constant<Bits<32>>,
    op_reg_mr: Constant<Bits<32>>,
    op_dereg_mr: Constant<Bits<32>>,
    op_create_qp: Constant<Bits<32>>,
    op_modify_qp: Constant<Bits<32>>,
    op_query_qp: Constant<Bits<32>>,
    op_destroy_qp: Constant<Bits<32>>,
    op_query_counters: Constant<Bits<32>>,
    st_ok: Constant<Bits<32>>,
    st_bad_opcode: Constant<Bits<32>>,
    st_bad_index: Constant<Bits<32>>,
    st_in_use: Constant<Bits<32>>,
    st_not_found: Constant<Bits<32>>,
    st_bad_param: Constant<Bits<32>>,
    st_bad_state: Constant<Bits<32>>,
    st_dma_fault: Constant<Bits<32>>,
    max_qp: Constant<Bits<32>>,
    max_mr: Constant<Bits<32>>,
    max_cq: Constant<Bits<32>>,
    max_pd: Constant<Bits<32>>,
    max_log_ring: Constant<Bits<32>>,
    two32: Constant<Bits<32>>,
    max_dest_qpn: Constant<Bits<32>>,
    max_rd: Constant<Bits<8>>,
    mtu_min: Constant<Bits<8>>,
    mtu_max: Constant<Bits<8>>,
    access_bad: Constant<Bits<32>>,
    mask_bad: Constant<Bits<32>>,
    req_init: Constant<Bits<32>>,
    req_rtr: Constant<Bits<32>>,
    req_rts: Constant<Bits<32>>,
    s3_reset: Constant<Bits<3>>,
    s3_init: Constant<Bits<3>>,
    s3_rtr: Constant<Bits<3>>,
    s3_rts: Constant<Bits<3>>,
    s3_sqd: Constant<Bits<3>>,
    s3_err: Constant<Bits<3>>,
    s8_reset: Constant<Bits<8>>,
    s8_init: Constant<Bits<8>>,
    s8_rtr: Constant<Bits<8>>,
    s8_rts: Constant<Bits<8>>,
    s8_sqd: Constant<Bits<8>>,
    s8_err: Constant<Bits<8>>,
    ev_reset: Constant<Bits<2>>,
    ev_error: Constant<Bits<2>>,
    ev_active: Constant<Bits<2>>,
    ev_destroyed: Constant<Bits<2>>,
    one1: Constant<Bits<1>>,
    zero1: Constant<Bits<1>>,
    zero2_qps: Constant<Bits<2>>,
    zero64_qps: Constant<Bits<64>>,
    zero5: Constant<Bits<5>>,
    zero6: Constant<Bits<6>>,
    zero8: Constant<Bits<8>>,
    zero_cq_refs: Constant<Bits<14>>,
    zero_pd_refs: Constant<Bits<25>>,
    zero24: Constant<Bits<24>>,
    zero28: Constant<Bits<28>>,
    zero29: Constant<Bits<29>>,
    zero32: Constant<Bits<32>>,
    one_ma: Constant<Bits<MA>>,
    zero_ma: Constant<Bits<MA>>,
    last_ma: Constant<Bits<MA>>,
    zero_pd: Constant<PdEntry>,
    zero_cq: Constant<CqEntry>,
    zero_mr: Constant<MrEntry>,
    zero_qpc: Constant<QpcEntry>,
    zero_qpa: Constant<QpaEntry>,
    zero_qpr: Constant<QprEntry>,
    zero_qps: Constant<QpsEntry>,
    zero_outs: Constant<Bits<256>>,
    /// One reference, two references (a QP using the CQ for both queues), as added to an
    /// entry whose `refs` field sits above `present`; an entry that is present.
    pd_ref: Constant<PdEntry>,
    pd_fresh: Constant<PdEntry>,
    cq_ref: Constant<CqEntry>,
    cq_ref2: Constant<CqEntry>,
    /// Field masks of MODIFY_QP's attribute bits.
    fm_state: Constant<QpaEntry>,
    fm_access: Constant<QpaEntry>,
    fm_av: Constant<QpaEntry>,
    fm_pmtu: Constant<QpaEntry>,
    fm_timeout: Constant<QpaEntry>,
    fm_retry: Constant<QpaEntry>,
    fm_rnr: Constant<QpaEntry>,
    fm_min_rnr: Constant<QpaEntry>,
    fm_max_rd: Constant<QpaEntry>,
    fm_max_dest_rd: Constant<QpaEntry>,
    fm_dest_qpn: Constant<QpaEntry>,
    fm_sq_psn: Constant<QprEntry>,
    fm_retry_left: Constant<QprEntry>,
    fm_rnr_left: Constant<QprEntry>,
    fm_epsn: Constant<QpsEntry>,

    // --- Eval's decisions ---
    is_nop: Signal<Local, Bit>,
    is_cpd: Signal<Local, Bit>,
    is_dpd: Signal<Local, Bit>,
    is_ccq: Signal<Local, Bit>,
    is_dcq: Signal<Local, Bit>,
    is_reg: Signal<Local, Bit>,
    is_dereg: Signal<Local, Bit>,
    is_cqp: Signal<Local, Bit>,
    is_mqp: Signal<Local, Bit>,
    is_qqp: Signal<Local, Bit>,
    is_dqp: Signal<Local, Bit>,
    is_qcnt: Signal<Local, Bit>,
    is_qp_cmd: Signal<Local, Bit>,
    st: Signal<Local, Bits<32>>,
    ok: Signal<Local, Bit>,
    qpn_ok: Signal<Local, Bit>,
    mr_ok: Signal<Local, Bit>,
    w0_pd_ok: Signal<Local, Bit>,
    w0_cq_ok: Signal<Local, Bit>,
    w1_pd_ok: Signal<Local, Bit>,
    w2_pd_ok: Signal<Local, Bit>,
    w2_cq_ok: Signal<Local, Bit>,
    w3_cq_ok: Signal<Local, Bit>,
    va_end: Signal<Local, Bits<64>>,
    iova_end: Signal<Local, Bits<64>>,
    mr_bad: Signal<Local, Bit>,
    cqp_bad: Signal<Local, Bit>,
    same_cq: Signal<Local, Bit>,
    // MODIFY_QP
    has_state: Signal<Local, Bit>,
    c_reset: Signal<Local, Bit>,
    c_init: Signal<Local, Bit>,
    c_rtr: Signal<Local, Bit>,
    c_rts: Signal<Local, Bit>,
    c_sqd: Signal<Local, Bit>,
    c_err: Signal<Local, Bit>,
    n_reset: Signal<Local, Bit>,
    n_init: Signal<Local, Bit>,
    n_rtr: Signal<Local, Bit>,
    n_rts: Signal<Local, Bit>,
    n_sqd: Signal<Local, Bit>,
    n_err: Signal<Local, Bit>,
    legal: Signal<Local, Bit>,
    req_missing: Signal<Local, Bit>,
    attr_bad: Signal<Local, Bit>,

    m_state: Signal<Local, QpaEntry>,
    m_access: Signal<Local, QpaEntry>,
    m_av: Signal<Local, QpaEntry>,
    m_pmtu: Signal<Local, QpaEntry>,
    m_timeout: Signal<Local, QpaEntry>,
    m_retry: Signal<Local, QpaEntry>,
    m_rnr: Signal<Local, QpaEntry>,
    m_min_rnr: Signal<Local, QpaEntry>,
    m_max_rd: Signal<Local, QpaEntry>,
    m_max_dest_rd: Signal<Local, QpaEntry>,
    m_dest_qpn: Signal<Local, QpaEntry>,
    wm_a: Signal<Local, QpaEntry>,
    m_sq_psn: Signal<Local, QprEntry>,
    m_retry_left: Signal<Local, QprEntry>,
    m_rnr_left: Signal<Local, QprEntry>,
    wm_r: Signal<Local, QprEntry>,
    wm_s: Signal<Local, QpsEntry>,
    qpa_mod: Signal<Local, QpaEntry>,
    qpr_mod: Signal<Local, QprEntry>,
    qps_mod: Signal<Local, QpsEntry>,
    unused_cq_wr_ready: Signal<Local, Bit>,
    unused_mr_wr_ready: Signal<Local, Bit>,
    unused_qpc_wr_ready: Signal<Local, Bit>,
    unused_qpa_wr_ready: Signal<Local, Bit>,
}

impl<const QA: usize, const MA: usize> CmdEngine<QA, MA> {
    /// A command engine with `2^QA` QP contexts and `2^MA` MR entries.
    pub fn new() -> Self {
        assert!(
            (2..=12).contains(&QA),
            "QA: 4..=4096 QPs (the doorbell area's limit)"
        );
        assert!(
            MA >= QA && MA >= 8 && MA <= 24,
            "MA: at least as many MRs as QPs and 256, an MR index fits a key's 24 bits"
        );
        let c32 = |v: u32| Constant::new(u64::from(v).into());
        let op = |o: CmdOpcode| c32(u32::from(o));
        let st = |s: CmdStatus| c32(u32::from(s));
        let s3 = |s: QpState| Constant::new(u64::from(u8::from(s)).into());
        let s8 = |s: QpState| Constant::new(u64::from(u8::from(s)).into());
        let qpa_f = qpa_layout::FIELDS;
        let fa = |names: &[&str]| Constant::new(field_mask::<{ qpa_layout::BITS }>(qpa_f, names));
        let fr = |names: &[&str]| {
            Constant::new(field_mask::<{ qpr_layout::BITS }>(
                qpr_layout::FIELDS,
                names,
            ))
        };

        CmdEngine {
            clock: Default::default(),
            reset: Default::default(),
            start: Default::default(),
            opcode: Default::default(),
            args: Default::default(),
            busy: Default::default(),
            done: Default::default(),
            status: Default::default(),
            outs: Default::default(),
            qpev: Default::default(),
            cqev: Default::default(),
            ctx: Default::default(),
            qperr: Default::default(),
            inv: Default::default(),
            m_qc_valid: Default::default(),
            m_qc_ready: Default::default(),
            m_qc_clear: Default::default(),
            m_qc_qpn: Default::default(),
            s_qc_done: Default::default(),
            s_qc_cnt: Default::default(),
            dma_wr: Default::default(),
            pd: Default::default(),
            cq: Default::default(),
            mr: Default::default(),
            qpc: Default::default(),
            qpa: Default::default(),
            qpr: Default::default(),
            qps: Default::default(),
            state: Default::default(),
            clr: Default::default(),
            op: Default::default(),
            qpc_q: Default::default(),
            qpa_q: Default::default(),
            qpr_q: Default::default(),
            qps_q: Default::default(),
            mr_q: Default::default(),
            cqa_q: Default::default(),
            pd_q: Default::default(),
            cqs_q: Default::default(),
            cqr_q: Default::default(),
            pd_addr: Default::default(),
            cqs_addr: Default::default(),
            cqr_addr: Default::default(),
            status_r: Default::default(),
            outs_r: Default::default(),
            need_wr2: Default::default(),
            need_ev: Default::default(),
            ev_kind: Default::default(),
            cq_ev: Default::default(),
            start_pend: Default::default(),
            err_ret: Default::default(),
            need_qc: Default::default(),
            qc_read: Default::default(),
            qc_sent: Default::default(),
            qd: Default::default(),
            qd_st: Default::default(),
            qd_err: Default::default(),
            qd0: Constant::new(0u64.to_bits()),
            qd1: Constant::new(1u64.to_bits()),
            qd2: Constant::new(2u64.to_bits()),
            qd3: Constant::new(3u64.to_bits()),
            qd_len: Constant::new(128u64.to_bits()),
            keep_all: Constant::new(u64::MAX.to_bits()),
            st_qc: Constant::new(cmd_state::QC.into()),
            st_qdma: Constant::new(cmd_state::QDMA.into()),
            dp_inv: Default::default(),
            a: Default::default(),
            pd_u: Default::default(),
            cqa_u: Default::default(),
            cqs_u: Default::default(),
            cqr_u: Default::default(),
            mr_u: Default::default(),
            mr_inv: Default::default(),
            qpc_u: Default::default(),
            qpa_u: Default::default(),
            qpr_u: Default::default(),
            qps_u: Default::default(),

            cq_new: Default::default(),

            mr_new: Default::default(),
            qpc_new: Default::default(),
            qpa_cand: Default::default(),
            qpr_cand: Default::default(),
            qps_cand: Default::default(),
            mac: Default::default(),
            query: Default::default(),
            st_clear: Constant::new(cmd_state::CLEAR.into()),
            st_idle: Constant::new(cmd_state::IDLE.into()),
            st_read_a: Constant::new(cmd_state::READ_A.into()),
            st_read_b: Constant::new(cmd_state::READ_B.into()),
            st_read_c: Constant::new(cmd_state::READ_C.into()),
            st_read_d: Constant::new(cmd_state::READ_D.into()),
            st_read_e: Constant::new(cmd_state::READ_E.into()),
            st_eval: Constant::new(cmd_state::EVAL.into()),
            st_write2: Constant::new(cmd_state::WRITE2.into()),
            st_event: Constant::new(cmd_state::EVENT.into()),
            st_done_st: Constant::new(cmd_state::DONE.into()),
            st_err_read: Constant::new(cmd_state::ERR_READ.into()),
            st_err_capture: Constant::new(cmd_state::ERR_CAPTURE.into()),
            st_err_write: Constant::new(cmd_state::ERR_WRITE.into()),
            qpa_err: Constant::new(u64::from(u8::from(QpState::Err)).into()),
            mr_valid_bit: Constant::new((1u64 << mr_layout::offset("valid")).into()),
            mr_index_end: c32(8 + MA as u32),
            inv_ok: Default::default(),
            op_nop: op(CmdOpcode::Nop),
            op_create_pd: op(CmdOpcode::CreatePd),
            op_destroy_pd: op(CmdOpcode::DestroyPd),
            op_create_cq: op(CmdOpcode::CreateCq),
            op_destroy_cq: op(CmdOpcode::DestroyCq),
            op_reg_mr: op(CmdOpcode::RegMr),
            op_dereg_mr: op(CmdOpcode::DeregMr),
            op_create_qp: op(CmdOpcode::CreateQp),
            op_modify_qp: op(CmdOpcode::ModifyQp),
            op_query_qp: op(CmdOpcode::QueryQp),
            op_destroy_qp: op(CmdOpcode::DestroyQp),
            op_query_counters: op(CmdOpcode::QueryQpCounters),
            st_ok: st(CmdStatus::Ok),
            st_bad_opcode: st(CmdStatus::BadOpcode),
            st_bad_index: st(CmdStatus::BadIndex),
            st_in_use: st(CmdStatus::InUse),
            st_not_found: st(CmdStatus::NotFound),
            st_bad_param: st(CmdStatus::BadParam),
            st_bad_state: st(CmdStatus::BadState),
            st_dma_fault: st(CmdStatus::DmaFault),
            max_qp: c32(1 << QA),
            max_mr: c32(1 << MA),
            max_cq: c32(256),
            max_pd: c32(256),
            max_log_ring: c32(15),
            two32: c32(2),
            max_dest_qpn: c32(0xff_ffff),
            max_rd: Constant::new(16.into()),
            mtu_min: Constant::new((Mtu::Mtu256 as u64).to_bits()),
            mtu_max: Constant::new((Mtu::Mtu4096 as u64).to_bits()),
            access_bad: c32(!access::ALL),
            mask_bad: c32(!qp_attr::ALL),
            req_init: c32(qp_attr::REQ_INIT),
            req_rtr: c32(qp_attr::REQ_RTR),
            req_rts: c32(qp_attr::REQ_RTS),
            s3_reset: s3(QpState::Reset),
            s3_init: s3(QpState::Init),
            s3_rtr: s3(QpState::Rtr),
            s3_rts: s3(QpState::Rts),
            s3_sqd: s3(QpState::Sqd),
            s3_err: s3(QpState::Err),
            s8_reset: s8(QpState::Reset),
            s8_init: s8(QpState::Init),
            s8_rtr: s8(QpState::Rtr),
            s8_rts: s8(QpState::Rts),
            s8_sqd: s8(QpState::Sqd),
            s8_err: s8(QpState::Err),
            ev_reset: Constant::new(QPEV_RESET.into()),
            ev_error: Constant::new(QPEV_ERROR.into()),
            ev_active: Constant::new(QPEV_ACTIVE.into()),
            ev_destroyed: Constant::new(QPEV_DESTROYED.into()),
            one1: Constant::new(1.into()),
            zero1: Constant::new(0.into()),
            zero2_qps: Constant::new(0.into()),
            zero64_qps: Constant::new(0.into()),
            zero5: Constant::new(0.into()),
            zero6: Constant::new(0.into()),
            zero8: Constant::new(0.into()),
            zero_cq_refs: Constant::new(0.into()),
            zero_pd_refs: Constant::new(0.into()),
            zero24: Constant::new(0.into()),
            zero28: Constant::new(0.into()),
            zero29: Constant::new(0.into()),
            zero32: Constant::new(0.into()),
            one_ma: Constant::new(1.into()),
            zero_ma: Constant::new(0.into()),
            last_ma: Constant::new(Bits::<MA>::mask()),
            zero_pd: Constant::new(0.into()),
            zero_cq: Constant::new(0.into()),
            zero_mr: Constant::new(0.into()),
            zero_qpc: Constant::new(0.into()),
            zero_qpa: Constant::new(0.into()),
            zero_qpr: Constant::new(0.into()),
            zero_qps: Constant::new(0.into()),
            zero_outs: Constant::new(0.into()),
            pd_ref: Constant::new((1u64 << pd_layout::offset("refs")).into()),
            pd_fresh: Constant::new(1.into()),
            cq_ref: Constant::new((1u64 << cq_layout::offset("refs")).into()),
            cq_ref2: Constant::new((2u64 << cq_layout::offset("refs")).into()),
            fm_state: fa(&["state"]),
            fm_access: fa(&["access"]),
            fm_av: fa(&["dest_mac", "dest_ip", "udp_sport"]),
            fm_pmtu: fa(&["pmtu"]),
            fm_timeout: fa(&["timeout"]),
            fm_retry: fa(&["retry_cnt"]),
            fm_rnr: fa(&["rnr_retry"]),
            fm_min_rnr: fa(&["min_rnr_timer"]),
            fm_max_rd: fa(&["max_rd_atomic"]),
            fm_max_dest_rd: fa(&["max_dest_rd_atomic"]),
            fm_dest_qpn: fa(&["dest_qpn"]),
            fm_sq_psn: fr(&["next_psn", "una_psn", "sent_end"]),
            fm_retry_left: fr(&["retry_left"]),
            fm_rnr_left: fr(&["rnr_left"]),
            fm_epsn: Constant::new(field_mask::<{ qps_layout::BITS }>(
                qps_layout::FIELDS,
                &["epsn"],
            )),
            is_nop: Default::default(),
            is_cpd: Default::default(),
            is_dpd: Default::default(),
            is_ccq: Default::default(),
            is_dcq: Default::default(),
            is_reg: Default::default(),
            is_dereg: Default::default(),
            is_cqp: Default::default(),
            is_mqp: Default::default(),
            is_qqp: Default::default(),
            is_dqp: Default::default(),
            is_qcnt: Default::default(),
            is_qp_cmd: Default::default(),
            st: Default::default(),
            ok: Default::default(),
            qpn_ok: Default::default(),
            mr_ok: Default::default(),
            w0_pd_ok: Default::default(),
            w0_cq_ok: Default::default(),
            w1_pd_ok: Default::default(),
            w2_pd_ok: Default::default(),
            w2_cq_ok: Default::default(),
            w3_cq_ok: Default::default(),
            va_end: Default::default(),
            iova_end: Default::default(),
            mr_bad: Default::default(),
            cqp_bad: Default::default(),
            same_cq: Default::default(),
            has_state: Default::default(),
            c_reset: Default::default(),
            c_init: Default::default(),
            c_rtr: Default::default(),
            c_rts: Default::default(),
            c_sqd: Default::default(),
            c_err: Default::default(),
            n_reset: Default::default(),
            n_init: Default::default(),
            n_rtr: Default::default(),
            n_rts: Default::default(),
            n_sqd: Default::default(),
            n_err: Default::default(),
            legal: Default::default(),
            req_missing: Default::default(),
            attr_bad: Default::default(),

            m_state: Default::default(),
            m_access: Default::default(),
            m_av: Default::default(),
            m_pmtu: Default::default(),
            m_timeout: Default::default(),
            m_retry: Default::default(),
            m_rnr: Default::default(),
            m_min_rnr: Default::default(),
            m_max_rd: Default::default(),
            m_max_dest_rd: Default::default(),
            m_dest_qpn: Default::default(),
            wm_a: Default::default(),
            m_sq_psn: Default::default(),
            m_retry_left: Default::default(),
            m_rnr_left: Default::default(),
            wm_r: Default::default(),
            wm_s: Default::default(),
            qpa_mod: Default::default(),
            qpr_mod: Default::default(),
            qps_mod: Default::default(),
            unused_cq_wr_ready: Default::default(),
            unused_mr_wr_ready: Default::default(),
            unused_qpc_wr_ready: Default::default(),
            unused_qpa_wr_ready: Default::default(),
        }
    }
}

impl<const QA: usize, const MA: usize> Default for CmdEngine<QA, MA> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const QA: usize, const MA: usize> Logic for CmdEngine<QA, MA> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, state, clr, op, qpc_q, qpa_q, qpr_q, qps_q, mr_q, cqa_q, pd_q, cqs_q,
            cqr_q, pd_addr, cqs_addr, cqr_addr, status_r, outs_r, need_wr2, need_ev, ev_kind,
            cq_ev, start_pend, err_ret, dp_inv, need_qc, qc_read, qc_sent, qd, qd_st, qd_err
        );
        clock!(self, clock, cq, mr, qpc, qpa, qpr, qps);
        self.pd.read_clock.next = self.clock.val();
        self.pd.write_clock.next = self.clock.val();
        self.cq.reset.next = self.reset.val();
        self.mr.reset.next = self.reset.val();
        self.qpc.reset.next = self.reset.val();
        self.qpa.reset.next = self.reset.val();
        self.qpr.reset.next = self.reset.val();
        self.qps.reset.next = self.reset.val();
        self.a.args.next = self.args.val();

        // ---- datapath read ports pass through ----
        CtxRdServer::<8, { cq_layout::BITS }>::link(&mut self.ctx.cq_rd, &mut self.cq.rd);
        CtxRdServer::<MA, { mr_layout::BITS }>::link(&mut self.ctx.mr_rd, &mut self.mr.rd);
        CtxRdServer::<QA, { qpc_layout::BITS }>::link(&mut self.ctx.qpc_rd, &mut self.qpc.rd);
        CtxRdServer::<QA, { qpa_layout::BITS }>::link(&mut self.ctx.qpa_rd, &mut self.qpa.rd);
        CtxRdServer::<QA, { qpr_layout::BITS }>::link(&mut self.ctx.qpr_rd, &mut self.qpr.rd);
        CtxRdServer::<QA, { qps_layout::BITS }>::link(&mut self.ctx.qps_rd, &mut self.qps.rd);

        // ---- unpack the captured entries ----
        self.pd_u.x.next = self.pd_q.q.val();
        self.cqa_u.x.next = self.cqa_q.q.val();
        self.cqs_u.x.next = self.cqs_q.q.val();
        self.cqr_u.x.next = self.cqr_q.q.val();
        self.mr_u.x.next = self.mr_q.q.val();
        self.mr_inv.x.next = self.mr_q.q.val();
        self.qpc_u.x.next = self.qpc_q.q.val();
        self.qpa_u.x.next = self.qpa_q.q.val();
        self.qpr_u.x.next = self.qpr_q.q.val();
        self.qps_u.x.next = self.qps_q.q.val();

        // ---- which command ----
        self.is_nop.next = self.op.q.val() == self.op_nop.val();
        self.is_cpd.next = self.op.q.val() == self.op_create_pd.val();
        self.is_dpd.next = self.op.q.val() == self.op_destroy_pd.val();
        self.is_ccq.next = self.op.q.val() == self.op_create_cq.val();
        self.is_dcq.next = self.op.q.val() == self.op_destroy_cq.val();
        self.is_reg.next = self.op.q.val() == self.op_reg_mr.val();
        self.is_dereg.next = self.op.q.val() == self.op_dereg_mr.val();
        self.is_cqp.next = self.op.q.val() == self.op_create_qp.val();
        self.is_mqp.next = self.op.q.val() == self.op_modify_qp.val();
        self.is_qqp.next = self.op.q.val() == self.op_query_qp.val();
        self.is_dqp.next = self.op.q.val() == self.op_destroy_qp.val();
        self.is_qcnt.next = self.op.q.val() == self.op_query_counters.val();
        self.is_qp_cmd.next =
            self.is_mqp.val() | self.is_qqp.val() | self.is_dqp.val() | self.is_qcnt.val();

        // ---- argument checks ----
        self.qpn_ok.next = self.a.w0.val() < self.max_qp.val();
        self.mr_ok.next = self.a.w0.val() < self.max_mr.val();
        self.w0_pd_ok.next = self.a.w0.val() < self.max_pd.val();
        self.w0_cq_ok.next = self.a.w0.val() < self.max_cq.val();
        self.w1_pd_ok.next = self.a.w1.val() < self.max_pd.val();
        self.w2_pd_ok.next = self.a.w2.val() < self.max_pd.val();
        self.w2_cq_ok.next = self.a.w2.val() < self.max_cq.val();
        self.w3_cq_ok.next = self.a.w3.val() < self.max_cq.val();
        self.va_end.next = self.a.d45.val() + self.a.d89.val();
        self.iova_end.next = self.a.d67.val() + self.a.d89.val();
        // REG_MR: the key names the index, known access bits, no 64-bit wrap.
        self.mr_bad.next = (self.a.w1.val().get_bits::<24>(8) != self.a.w0.val().get_bits::<24>(0))
            | (self.a.w0.val().get_bits::<8>(24) != self.zero8.val())
            | ((self.a.w3.val() & self.access_bad.val()) != self.zero32.val())
            | (self.va_end.val() < self.a.d45.val())
            | (self.iova_end.val() < self.a.d67.val());
        // CREATE_QP: ring sizes and 64-byte aligned rings.
        self.cqp_bad.next = (self.a.w6.val() > self.max_log_ring.val())
            | (self.a.w9.val() > self.max_log_ring.val())
            | (self.a.d45.val().get_bits::<6>(0) != self.zero6.val())
            | (self.a.d78.val().get_bits::<6>(0) != self.zero6.val());
        self.same_cq.next = self.cqs_addr.q.val() == self.cqr_addr.q.val();

        // ---- MODIFY_QP: the transition and its required attributes (model::qp) ----
        self.has_state.next = self.a.w1.val().get_bit(0);
        self.c_reset.next = self.qpa_u.state.val() == self.s3_reset.val();
        self.c_init.next = self.qpa_u.state.val() == self.s3_init.val();
        self.c_rtr.next = self.qpa_u.state.val() == self.s3_rtr.val();
        self.c_rts.next = self.qpa_u.state.val() == self.s3_rts.val();
        self.c_sqd.next = self.qpa_u.state.val() == self.s3_sqd.val();
        self.c_err.next = self.qpa_u.state.val() == self.s3_err.val();
        self.n_reset.next = self.c_reset.val();
        self.n_init.next = self.c_init.val();
        self.n_rtr.next = self.c_rtr.val();
        self.n_rts.next = self.c_rts.val();
        self.n_sqd.next = self.c_sqd.val();
        self.n_err.next = self.c_err.val();

        if self.has_state.val() {
            self.n_reset.next = self.a.w2.val().get_bits::<8>(0) == self.s8_reset.val();
            self.n_init.next = self.a.w2.val().get_bits::<8>(0) == self.s8_init.val();
            self.n_rtr.next = self.a.w2.val().get_bits::<8>(0) == self.s8_rtr.val();
            self.n_rts.next = self.a.w2.val().get_bits::<8>(0) == self.s8_rts.val();
            self.n_sqd.next = self.a.w2.val().get_bits::<8>(0) == self.s8_sqd.val();
            self.n_err.next = self.a.w2.val().get_bits::<8>(0) == self.s8_err.val();
        }
        self.legal.next = self.n_reset.val()
            | self.n_err.val()
            | (self.c_reset.val() & self.n_init.val())
            | (self.c_init.val() & (self.n_init.val() | self.n_rtr.val()))
            | (self.c_rtr.val() & self.n_rts.val())
            | ((self.c_rts.val() | self.c_sqd.val()) & (self.n_rts.val() | self.n_sqd.val()));
        self.req_missing.next = (self.c_reset.val()
            & self.n_init.val()
            & ((self.a.w1.val() & self.req_init.val()) != self.req_init.val()))
            | (self.c_init.val()
                & self.n_rtr.val()
                & ((self.a.w1.val() & self.req_rtr.val()) != self.req_rtr.val()))
            | (self.c_rtr.val()
                & self.n_rts.val()
                & ((self.a.w1.val() & self.req_rts.val()) != self.req_rts.val()));
        self.attr_bad.next = (self.a.w1.val().get_bit(8)
            & ((self.a.w3.val().get_bits::<8>(0) < self.mtu_min.val())
                | (self.a.w3.val().get_bits::<8>(0) > self.mtu_max.val())))
            | (self.a.w1.val().get_bit(3)
                & ((self.a.w10.val() & self.access_bad.val()) != self.zero32.val()))
            | (self.a.w1.val().get_bit(9) & (self.a.timeout.val() == self.zero5.val()))
            | (self.a.w1.val().get_bit(20) & (self.a.w4.val() > self.max_dest_qpn.val()))
            | (self.a.w1.val().get_bit(13) & (self.a.max_rd_atomic.val() > self.max_rd.val()))
            | (self.a.w1.val().get_bit(17) & (self.a.max_dest_rd_atomic.val() > self.max_rd.val()));

        // The attributes MODIFY_QP writes: candidates from the arguments, kept where the
        // mask bit is clear.
        self.mac.lo.next = self.a.w7.val();
        self.mac.hi.next = self.a.mac_hi.val();
        self.qpa_cand.state.next = self.a.w2.val().get_bits::<3>(0);
        self.qpa_cand.pmtu.next = self.a.w3.val().get_bits::<3>(0);
        self.qpa_cand.dest_qpn.next = self.a.w4.val().get_bits::<24>(0);
        self.qpa_cand.dest_mac.next = self.mac.y.val();
        self.qpa_cand.dest_ip.next = self.a.w9.val();
        self.qpa_cand.udp_sport.next = self.a.udp_sport.val();
        self.qpa_cand.access.next = self.a.w10.val().get_bits::<4>(0);
        self.qpa_cand.timeout.next = self.a.timeout.val();
        self.qpa_cand.retry_cnt.next = self.a.retry_cnt.val();
        self.qpa_cand.rnr_retry.next = self.a.rnr_retry.val();
        self.qpa_cand.min_rnr_timer.next = self.a.min_rnr_timer.val();
        self.qpa_cand.max_rd_atomic.next = self.a.max_rd_atomic.val().get_bits::<5>(0);
        self.qpa_cand.max_dest_rd_atomic.next = self.a.max_dest_rd_atomic.val().get_bits::<5>(0);
        self.qpr_cand.sq_pi.next = self.zero32.val();
        self.qpr_cand.sq_fetch.next = self.zero32.val();
        self.qpr_cand.sq_ci.next = self.zero32.val();
        self.qpr_cand.next_psn.next = self.a.w6.val().get_bits::<24>(0);
        self.qpr_cand.una_psn.next = self.a.w6.val().get_bits::<24>(0);
        self.qpr_cand.sent_end.next = self.a.w6.val().get_bits::<24>(0);
        self.qpr_cand.retry_left.next = self.a.retry_cnt.val();
        self.qpr_cand.rnr_left.next = self.a.rnr_retry.val();
        self.qps_cand.rq_pi.next = self.zero32.val();
        self.qps_cand.rq_ci.next = self.zero32.val();
        self.qps_cand.epsn.next = self.a.rq_psn.val();
        self.qps_cand.msn.next = self.zero24.val();
        self.qps_cand.nak_sent.next = self.zero1.val();
        self.qps_cand.prog.next = self.zero2_qps.val();
        self.qps_cand.msg_va.next = self.zero64_qps.val();
        self.qps_cand.msg_key.next = self.zero32.val();
        self.qps_cand.msg_len.next = self.zero32.val();
        self.qps_cand.msg_off.next = self.zero32.val();
        self.qps_cand.rqe_wr_id.next = self.zero64_qps.val();
        self.qps_cand.rqe_index.next = self.zero32.val();
        self.m_state.next = self.zero_qpa.val();
        if self.has_state.val() {
            self.m_state.next = self.fm_state.val();
        }
        self.m_access.next = self.zero_qpa.val();
        self.m_av.next = self.zero_qpa.val();
        self.m_pmtu.next = self.zero_qpa.val();
        self.m_timeout.next = self.zero_qpa.val();
        self.m_retry.next = self.zero_qpa.val();
        self.m_rnr.next = self.zero_qpa.val();
        self.m_min_rnr.next = self.zero_qpa.val();
        self.m_max_rd.next = self.zero_qpa.val();
        self.m_max_dest_rd.next = self.zero_qpa.val();
        self.m_dest_qpn.next = self.zero_qpa.val();
        self.m_sq_psn.next = self.zero_qpr.val();
        self.m_retry_left.next = self.zero_qpr.val();
        self.m_rnr_left.next = self.zero_qpr.val();
        self.wm_s.next = self.zero_qps.val();
        if self.a.w1.val().get_bit(3) {
            self.m_access.next = self.fm_access.val();
        }
        if self.a.w1.val().get_bit(7) {
            self.m_av.next = self.fm_av.val();
        }
        if self.a.w1.val().get_bit(8) {
            self.m_pmtu.next = self.fm_pmtu.val();
        }
        if self.a.w1.val().get_bit(9) {
            self.m_timeout.next = self.fm_timeout.val();
        }
        if self.a.w1.val().get_bit(10) {
            self.m_retry.next = self.fm_retry.val();
            self.m_retry_left.next = self.fm_retry_left.val();
        }
        if self.a.w1.val().get_bit(11) {
            self.m_rnr.next = self.fm_rnr.val();
            self.m_rnr_left.next = self.fm_rnr_left.val();
        }
        if self.a.w1.val().get_bit(12) {
            self.wm_s.next = self.fm_epsn.val();
        }
        if self.a.w1.val().get_bit(13) {
            self.m_max_rd.next = self.fm_max_rd.val();
        }
        if self.a.w1.val().get_bit(15) {
            self.m_min_rnr.next = self.fm_min_rnr.val();
        }
        if self.a.w1.val().get_bit(16) {
            self.m_sq_psn.next = self.fm_sq_psn.val();
        }
        if self.a.w1.val().get_bit(17) {
            self.m_max_dest_rd.next = self.fm_max_dest_rd.val();
        }
        if self.a.w1.val().get_bit(20) {
            self.m_dest_qpn.next = self.fm_dest_qpn.val();
        }
        self.wm_a.next = self.m_state.val()
            | self.m_access.val()
            | self.m_av.val()
            | self.m_pmtu.val()
            | self.m_timeout.val()
            | self.m_retry.val()
            | self.m_rnr.val()
            | self.m_min_rnr.val()
            | self.m_max_rd.val()
            | self.m_max_dest_rd.val()
            | self.m_dest_qpn.val();
        self.wm_r.next = self.m_sq_psn.val() | self.m_retry_left.val() | self.m_rnr_left.val();
        self.qpa_mod.next =
            (self.qpa_q.q.val() & !self.wm_a.val()) | (self.qpa_cand.y.val() & self.wm_a.val());
        self.qpr_mod.next =
            (self.qpr_q.q.val() & !self.wm_r.val()) | (self.qpr_cand.y.val() & self.wm_r.val());
        self.qps_mod.next =
            (self.qps_q.q.val() & !self.wm_s.val()) | (self.qps_cand.y.val() & self.wm_s.val());

        // ---- the status, as model::cmd decides it (later checks here take precedence) ----
        self.st.next = self.st_bad_opcode.val();
        if self.is_nop.val() {
            self.st.next = self.st_ok.val();
        }
        if self.is_cpd.val() {
            self.st.next = self.st_ok.val();
            if self.pd_u.present.val().any() {
                self.st.next = self.st_in_use.val();
            }
            if !self.w0_pd_ok.val() {
                self.st.next = self.st_bad_index.val();
            }
        }
        if self.is_dpd.val() {
            self.st.next = self.st_ok.val();
            if self.pd_u.refs.val() != self.zero_pd_refs.val() {
                self.st.next = self.st_in_use.val();
            }
            if !self.pd_u.present.val().any() {
                self.st.next = self.st_not_found.val();
            }
            if !self.w0_pd_ok.val() {
                self.st.next = self.st_bad_index.val();
            }
        }
        if self.is_ccq.val() {
            self.st.next = self.st_ok.val();
            if self.cqa_u.present.val().any() {
                self.st.next = self.st_in_use.val();
            }
            if !self.w0_cq_ok.val() {
                self.st.next = self.st_bad_index.val();
            }
            if (self.a.w1.val() > self.max_log_ring.val())
                | (self.a.d23.val().get_bits::<6>(0) != self.zero6.val())
            {
                self.st.next = self.st_bad_param.val();
            }
        }
        if self.is_dcq.val() {
            self.st.next = self.st_ok.val();
            if self.cqa_u.refs.val() != self.zero_cq_refs.val() {
                self.st.next = self.st_in_use.val();
            }
            if !self.cqa_u.present.val().any() {
                self.st.next = self.st_not_found.val();
            }
            if !self.w0_cq_ok.val() {
                self.st.next = self.st_bad_index.val();
            }
        }
        if self.is_reg.val() {
            self.st.next = self.st_ok.val();
            if !self.pd_u.present.val().any() {
                self.st.next = self.st_not_found.val();
            }
            if !self.w2_pd_ok.val() {
                self.st.next = self.st_bad_index.val();
            }
            if self.mr_u.present.val().any() {
                self.st.next = self.st_in_use.val();
            }
            if !self.mr_ok.val() {
                self.st.next = self.st_bad_index.val();
            }
            if self.mr_bad.val() {
                self.st.next = self.st_bad_param.val();
            }
        }
        if self.is_dereg.val() {
            self.st.next = self.st_ok.val();
            if !self.mr_u.present.val().any() {
                self.st.next = self.st_not_found.val();
            }
            if !self.mr_ok.val() {
                self.st.next = self.st_bad_index.val();
            }
        }
        if self.is_cqp.val() {
            self.st.next = self.st_ok.val();
            if !self.pd_u.present.val().any() {
                self.st.next = self.st_not_found.val();
            }
            if !self.w1_pd_ok.val() {
                self.st.next = self.st_bad_index.val();
            }
            if !self.cqr_u.present.val().any() {
                self.st.next = self.st_not_found.val();
            }
            if !self.w3_cq_ok.val() {
                self.st.next = self.st_bad_index.val();
            }
            if !self.cqs_u.present.val().any() {
                self.st.next = self.st_not_found.val();
            }
            if !self.w2_cq_ok.val() {
                self.st.next = self.st_bad_index.val();
            }
            if self.cqp_bad.val() {
                self.st.next = self.st_bad_param.val();
            }
            if self.qpc_u.present.val().any() {
                self.st.next = self.st_in_use.val();
            }
            if !self.qpn_ok.val() | (self.a.w0.val() < self.two32.val()) {
                self.st.next = self.st_bad_index.val();
            }
        }
        if self.is_qp_cmd.val() {
            self.st.next = self.st_ok.val();
            if self.is_mqp.val() {
                if self.req_missing.val() | self.attr_bad.val() {
                    self.st.next = self.st_bad_param.val();
                }
                if !self.legal.val() {
                    self.st.next = self.st_bad_state.val();
                }
                if (self.a.w1.val() & self.mask_bad.val()) != self.zero32.val() {
                    self.st.next = self.st_bad_param.val();
                }
            }
            if !self.qpc_u.present.val().any() {
                self.st.next = self.st_not_found.val();
            }
            if !self.qpn_ok.val() {
                self.st.next = self.st_bad_index.val();
            }
        }
        self.ok.next = self.st.val() == self.st_ok.val();

        // ---- new entries ----
        self.cq_new.present.next = self.one1.val();
        self.cq_new.refs.next = self.zero_cq_refs.val();
        self.cq_new.log_size.next = self.a.w1.val().get_bits::<4>(0);
        self.cq_new.ring.next = self.a.d23.val().get_bits::<58>(6);
        self.mr_new.present.next = self.one1.val();
        self.mr_new.valid.next = self.one1.val();
        self.mr_new.tag.next = self.a.w1.val().get_bits::<8>(0);
        self.mr_new.pdn.next = self.a.w2.val().get_bits::<8>(0);
        self.mr_new.access.next = self.a.w3.val().get_bits::<4>(0);
        self.mr_new.va.next = self.a.d45.val();
        self.mr_new.iova.next = self.a.d67.val();
        self.mr_new.length.next = self.a.d89.val();
        self.qpc_new.present.next = self.one1.val();
        self.qpc_new.pdn.next = self.a.w1.val().get_bits::<8>(0);
        self.qpc_new.send_cqn.next = self.a.w2.val().get_bits::<8>(0);
        self.qpc_new.recv_cqn.next = self.a.w3.val().get_bits::<8>(0);
        self.qpc_new.sq_log.next = self.a.w6.val().get_bits::<4>(0);
        self.qpc_new.sq_ring.next = self.a.d45.val().get_bits::<58>(6);
        self.qpc_new.rq_log.next = self.a.w9.val().get_bits::<4>(0);
        self.qpc_new.rq_ring.next = self.a.d78.val().get_bits::<58>(6);
        self.query.state.next = self.qpa_u.state.val();
        self.query.p0.next = self.zero29.val();
        self.query.sq_psn.next = self.qpr_u.next_psn.val();
        self.query.p1.next = self.zero8.val();
        self.query.rq_psn.next = self.qps_u.epsn.val();
        self.query.p2.next = self.zero8.val();
        self.query.dest_qpn.next = self.qpa_u.dest_qpn.val();
        self.query.p3.next = self.zero8.val();
        self.query.sq_ci.next = self.qpr_u.sq_ci.val();
        self.query.rq_ci.next = self.qps_u.rq_ci.val();
        self.query.pmtu.next = self.qpa_u.pmtu.val();
        self.query.p4.next = self.zero29.val();
        self.query.access.next = self.qpa_u.access.val();
        self.query.p5.next = self.zero28.val();

        // ---- table ports: idle by default ----
        self.pd.read_address.next = self.pd_addr.q.val();
        self.pd.write_enable.next = false;
        self.pd.write_address.next = self.pd_addr.q.val();
        self.pd.write_data.next = self.pd_fresh.val();
        self.cq.cmd_rd_en.next = false;
        self.cq.cmd_rd_addr.next = self.a.w0.val().get_bits::<8>(0);
        self.cq.wr_en.next = false;
        self.cq.wr.valid.next = false;
        self.cq.wr.addr.next = self.a.w0.val().get_bits::<8>(0);
        self.cq.wr.data.next = self.cq_new.y.val();
        self.unused_cq_wr_ready.next = self.cq.wr.ready.val();
        self.cq.wr_addr.next = self.a.w0.val().get_bits::<8>(0);
        self.cq.wr_data.next = self.cq_new.y.val();
        self.mr.cmd_rd_en.next = false;
        self.mr.cmd_rd_addr.next = self.a.w0.val().get_bits::<MA>(0);
        self.mr.wr_en.next = false;
        self.mr.wr.valid.next = false;
        self.mr.wr.addr.next = self.a.w0.val().get_bits::<MA>(0);
        self.mr.wr.data.next = self.mr_new.y.val();
        self.unused_mr_wr_ready.next = self.mr.wr.ready.val();
        self.mr.wr_addr.next = self.a.w0.val().get_bits::<MA>(0);
        self.mr.wr_data.next = self.mr_new.y.val();
        self.qpc.cmd_rd_en.next = false;
        self.qpc.cmd_rd_addr.next = self.a.w0.val().get_bits::<QA>(0);
        self.qpc.wr_en.next = false;
        self.qpc.wr.valid.next = false;
        self.qpc.wr.addr.next = self.a.w0.val().get_bits::<QA>(0);
        self.qpc.wr.data.next = self.qpc_new.y.val();
        self.unused_qpc_wr_ready.next = self.qpc.wr.ready.val();
        self.qpc.wr_addr.next = self.a.w0.val().get_bits::<QA>(0);
        self.qpc.wr_data.next = self.qpc_new.y.val();
        self.qpa.cmd_rd_en.next = false;
        self.qpa.cmd_rd_addr.next = self.a.w0.val().get_bits::<QA>(0);
        self.qpa.wr_en.next = false;
        self.qpa.wr.valid.next = false;
        self.qpa.wr.addr.next = self.a.w0.val().get_bits::<QA>(0);
        self.qpa.wr.data.next = self.qpa_mod.val();
        self.unused_qpa_wr_ready.next = self.qpa.wr.ready.val();
        self.qpa.wr_addr.next = self.a.w0.val().get_bits::<QA>(0);
        self.qpa.wr_data.next = self.qpa_mod.val();
        self.qpr.cmd_rd_en.next = false;
        self.qpr.cmd_rd_addr.next = self.a.w0.val().get_bits::<QA>(0);
        self.qpr.wr_en.next = false;
        CtxWrServer::<QA, { qpr_layout::BITS }>::link(&mut self.ctx.qpr_wr, &mut self.qpr.wr);
        self.qpr.wr_addr.next = self.a.w0.val().get_bits::<QA>(0);
        self.qpr.wr_data.next = self.qpr_mod.val();
        self.qps.cmd_rd_en.next = false;
        self.qps.cmd_rd_addr.next = self.a.w0.val().get_bits::<QA>(0);
        self.qps.wr_en.next = false;
        CtxWrServer::<QA, { qps_layout::BITS }>::link(&mut self.ctx.qps_wr, &mut self.qps.wr);
        self.qps.wr_addr.next = self.a.w0.val().get_bits::<QA>(0);
        self.qps.wr_data.next = self.qps_mod.val();

        self.busy.next = self.state.q.val() == self.st_clear.val();
        self.done.next = false;
        self.status.next = self.status_r.q.val();
        self.outs.next = self.outs_r.q.val();
        self.qpev.valid.next = false;
        self.qpev.kind.next = self.ev_kind.q.val();
        self.qpev.qpn.next = self.a.w0.val().get_bits::<QA>(0);
        self.cqev.valid.next = false;
        self.cqev.cqn.next = self.a.w0.val().get_bits::<8>(0);
        self.cqev.iova64.next = self.a.d23.val().get_bits::<58>(6);
        self.cqev.log.next = self.a.w1.val().get_bits::<4>(0);
        // The counters' operation and the DMA write: outputs from registers only, in
        // statements of their own (the readies are consumed below), as a DmaWriteMux
        // client must be.
        self.m_qc_valid.next = (self.state.q.val() == self.st_qc.val()) & !self.qc_sent.q.val();
        self.m_qc_clear.next = !self.qc_read.q.val();
        self.m_qc_qpn.next = self.a.w0.val().get_bits::<QA>(0);
        self.dma_wr.req_valid.next =
            (self.state.q.val() == self.st_qdma.val()) & (self.qd.q.val() == self.qd0.val());
        self.dma_wr.req_addr.next = self.a.d12.val();
        self.dma_wr.req_len.next = self.qd_len.val();
        self.dma_wr.data_valid.next = (self.state.q.val() == self.st_qdma.val())
            & ((self.qd.q.val() == self.qd1.val()) | (self.qd.q.val() == self.qd2.val()));
        self.dma_wr.data_last.next = self.qd.q.val() == self.qd2.val();
        self.dma_wr.data_keep.next = self.keep_all.val();
        if self.qd.q.val() == self.qd2.val() {
            self.dma_wr.data.next = self.s_qc_cnt.val().get_bits::<512>(512);
        } else {
            self.dma_wr.data.next = self.s_qc_cnt.val().get_bits::<512>(0);
        }

        if self.state.q.val() == self.st_clear.val() {
            // Zero every entry (smaller tables are written several times over).
            self.pd.write_enable.next = true;
            self.pd.write_address.next = self.clr.q.val().get_bits::<8>(0);
            self.pd.write_data.next = self.zero_pd.val();
            self.cq.wr_en.next = true;
            self.cq.wr_addr.next = self.clr.q.val().get_bits::<8>(0);
            self.cq.wr_data.next = self.zero_cq.val();
            self.mr.wr_en.next = true;
            self.mr.wr_addr.next = self.clr.q.val();
            self.mr.wr_data.next = self.zero_mr.val();
            self.qpc.wr_en.next = true;
            self.qpc.wr_addr.next = self.clr.q.val().get_bits::<QA>(0);
            self.qpc.wr_data.next = self.zero_qpc.val();
            self.qpa.wr_en.next = true;
            self.qpa.wr_addr.next = self.clr.q.val().get_bits::<QA>(0);
            self.qpa.wr_data.next = self.zero_qpa.val();
            self.qpr.wr_en.next = true;
            self.qpr.wr_addr.next = self.clr.q.val().get_bits::<QA>(0);
            self.qpr.wr_data.next = self.zero_qpr.val();
            self.qps.wr_en.next = true;
            self.qps.wr_addr.next = self.clr.q.val().get_bits::<QA>(0);
            self.qps.wr_data.next = self.zero_qps.val();
            self.clr.d.next = self.clr.q.val() + self.one_ma.val();
            if self.clr.q.val() == self.last_ma.val() {
                self.state.d.next = self.st_idle.val();
            }
        }
        self.qperr.ready.next = false;
        if self.start.val() & (self.state.q.val() != self.st_idle.val()) {
            self.start_pend.d.next = true;
        }
        if self.state.q.val() == self.st_idle.val() {
            if self.start.val() | self.start_pend.q.val() {
                self.start_pend.d.next = false;
                self.op.d.next = self.opcode.val();
                self.state.d.next = self.st_read_a.val();
            } else if self.qperr.valid.val() {
                self.err_ret.d.next = false;
                self.dp_inv.d.next = false;
                self.state.d.next = self.st_err_read.val();
            } else if self.inv.valid.val() {
                self.err_ret.d.next = false;
                self.dp_inv.d.next = true;
                self.state.d.next = self.st_err_read.val();
            }
        }
        // ---- a QP error of the responder: qpa.state to ERR ----
        // (the same three states serve an invalidate, `dp_inv`: mr read, check, write)
        self.inv.ready.next = false;
        self.inv_ok.next = self.mr_inv.present.val().any()
            & self.mr_inv.valid.val().any()
            & (self.mr_inv.tag.val() == self.inv.key.val().get_bits::<8>(0))
            & (self.mr_inv.pdn.val() == self.inv.pdn.val())
            & ((self.inv.key.val() >> self.mr_index_end.val()) == self.zero32.val());
        self.inv.ok.next = self.inv_ok.val();
        if self.state.q.val() == self.st_err_read.val() {
            self.qpc.cmd_rd_en.next = true;
            self.qpc.cmd_rd_addr.next = self.qperr.qpn.val();
            self.qpa.cmd_rd_en.next = true;
            self.qpa.cmd_rd_addr.next = self.qperr.qpn.val();
            self.mr.cmd_rd_en.next = true;
            self.mr.cmd_rd_addr.next = self.inv.key.val().get_bits::<MA>(8);
            self.state.d.next = self.st_err_capture.val();
        }
        if self.state.q.val() == self.st_err_capture.val() {
            self.qpc_q.d.next = self.qpc.rd_data.val();
            self.qpa_q.d.next = self.qpa.rd_data.val();
            self.mr_q.d.next = self.mr.rd_data.val();
            self.state.d.next = self.st_err_write.val();
        }
        if (self.state.q.val() == self.st_err_write.val()) & self.dp_inv.q.val() {
            self.inv.ready.next = true;
            self.mr.wr_addr.next = self.inv.key.val().get_bits::<MA>(8);
            self.mr.wr_data.next = self.mr_q.q.val() & !self.mr_valid_bit.val();
            self.mr.wr_en.next = self.inv_ok.val();
            self.state.d.next = self.st_idle.val();
            if self.err_ret.q.val() {
                self.state.d.next = self.st_event.val();
            }
        }
        if (self.state.q.val() == self.st_err_write.val()) & !self.dp_inv.q.val() {
            self.qperr.ready.next = true;
            self.qpa.wr_addr.next = self.qperr.qpn.val();
            self.qpa.wr_data.next =
                (self.qpa_q.q.val() & !self.fm_state.val()) | self.qpa_err.val();
            self.qpa.wr_en.next = self.qpc_u.present.val().any()
                & (self.c_rtr.val() | self.c_rts.val() | self.c_sqd.val());
            self.state.d.next = self.st_idle.val();
            if self.err_ret.q.val() {
                self.state.d.next = self.st_event.val();
            }
        }
        if self.state.q.val() == self.st_read_a.val() {
            self.cq.cmd_rd_en.next = true;
            self.mr.cmd_rd_en.next = true;
            self.qpc.cmd_rd_en.next = true;
            self.qpa.cmd_rd_en.next = true;
            self.qpr.cmd_rd_en.next = true;
            self.qps.cmd_rd_en.next = true;
            self.state.d.next = self.st_read_b.val();
        }
        if self.state.q.val() == self.st_read_b.val() {
            self.cqa_q.d.next = self.cq.rd_data.val();
            self.mr_q.d.next = self.mr.rd_data.val();
            self.qpc_q.d.next = self.qpc.rd_data.val();
            self.qpa_q.d.next = self.qpa.rd_data.val();
            self.qpr_q.d.next = self.qpr.rd_data.val();
            self.qps_q.d.next = self.qps.rd_data.val();
            self.state.d.next = self.st_read_c.val();
        }
        if self.state.q.val() == self.st_read_c.val() {
            // The PD and the send CQ, named by the arguments or the entries read.
            self.pd.read_address.next = self.a.w0.val().get_bits::<8>(0);
            self.pd_addr.d.next = self.a.w0.val().get_bits::<8>(0);
            if self.is_reg.val() {
                self.pd.read_address.next = self.a.w2.val().get_bits::<8>(0);
                self.pd_addr.d.next = self.a.w2.val().get_bits::<8>(0);
            }
            if self.is_cqp.val() {
                self.pd.read_address.next = self.a.w1.val().get_bits::<8>(0);
                self.pd_addr.d.next = self.a.w1.val().get_bits::<8>(0);
            }
            if self.is_dereg.val() {
                self.pd.read_address.next = self.mr_u.pdn.val();
                self.pd_addr.d.next = self.mr_u.pdn.val();
            }
            if self.is_dqp.val() {
                self.pd.read_address.next = self.qpc_u.pdn.val();
                self.pd_addr.d.next = self.qpc_u.pdn.val();
            }
            self.cq.cmd_rd_en.next = true;
            self.cq.cmd_rd_addr.next = self.a.w2.val().get_bits::<8>(0);
            self.cqs_addr.d.next = self.a.w2.val().get_bits::<8>(0);
            if self.is_dqp.val() {
                self.cq.cmd_rd_addr.next = self.qpc_u.send_cqn.val();
                self.cqs_addr.d.next = self.qpc_u.send_cqn.val();
            }
            self.state.d.next = self.st_read_d.val();
        }
        if self.state.q.val() == self.st_read_d.val() {
            self.pd_q.d.next = self.pd.read_data.val();
            self.cqs_q.d.next = self.cq.rd_data.val();
            self.cq.cmd_rd_en.next = true;
            self.cq.cmd_rd_addr.next = self.a.w3.val().get_bits::<8>(0);
            self.cqr_addr.d.next = self.a.w3.val().get_bits::<8>(0);
            if self.is_dqp.val() {
                self.cq.cmd_rd_addr.next = self.qpc_u.recv_cqn.val();
                self.cqr_addr.d.next = self.qpc_u.recv_cqn.val();
            }
            self.state.d.next = self.st_read_e.val();
        }
        if self.state.q.val() == self.st_read_e.val() {
            self.cqr_q.d.next = self.cq.rd_data.val();
            self.state.d.next = self.st_eval.val();
        }
        if self.state.q.val() == self.st_eval.val() {
            self.status_r.d.next = self.st.val();
            self.outs_r.d.next = self.zero_outs.val();
            self.need_wr2.d.next = false;
            self.need_ev.d.next = false;
            self.cq_ev.d.next = false;
            if self.ok.val() {
                if self.is_qqp.val() {
                    self.outs_r.d.next = self.query.y.val();
                }
                // PD: create, destroy, or a reference taken or dropped.
                // `refs` counts up and down in place (it cannot carry into other fields).
                if self.is_cpd.val() {
                    self.pd.write_enable.next = true;
                }
                if self.is_reg.val() | self.is_cqp.val() {
                    self.pd.write_enable.next = true;
                    self.pd.write_data.next = self.pd_q.q.val() + self.pd_ref.val();
                }
                if self.is_dereg.val() | self.is_dqp.val() {
                    self.pd.write_enable.next = true;
                    self.pd.write_data.next = self.pd_q.q.val() - self.pd_ref.val();
                }
                if self.is_dpd.val() {
                    self.pd.write_enable.next = true;
                    self.pd.write_data.next = self.zero_pd.val();
                }
                if self.is_ccq.val() {
                    self.cq.wr_en.next = true;
                    self.need_ev.d.next = true;
                    self.cq_ev.d.next = true;
                }
                if self.is_dcq.val() {
                    self.cq.wr_en.next = true;
                    self.cq.wr_data.next = self.zero_cq.val();
                }
                if self.is_cqp.val() | self.is_dqp.val() {
                    // The send CQ now, the receive CQ next cycle unless it is the same.
                    self.cq.wr_en.next = true;
                    self.cq.wr_addr.next = self.cqs_addr.q.val();
                    self.cq.wr_data.next = self.cqs_q.q.val() + self.cq_ref.val();
                    if self.same_cq.val() {
                        self.cq.wr_data.next = self.cqs_q.q.val() + self.cq_ref2.val();
                    }
                    if self.is_dqp.val() {
                        self.cq.wr_data.next = self.cqs_q.q.val() - self.cq_ref.val();
                        if self.same_cq.val() {
                            self.cq.wr_data.next = self.cqs_q.q.val() - self.cq_ref2.val();
                        }
                    }
                    self.need_wr2.d.next = !self.same_cq.val();
                }
                if self.is_reg.val() {
                    self.mr.wr_en.next = true;
                }
                if self.is_dereg.val() {
                    self.mr.wr_en.next = true;
                    self.mr.wr_data.next = self.zero_mr.val();
                }
                if self.is_cqp.val() {
                    self.qpc.wr_en.next = true;
                    self.qpa.wr_en.next = true;
                    self.qpa.wr_data.next = self.zero_qpa.val();
                    self.qpr.wr_en.next = true;
                    self.qpr.wr_data.next = self.zero_qpr.val();
                    self.qps.wr_en.next = true;
                    self.qps.wr_data.next = self.zero_qps.val();
                }
                if self.is_dqp.val() {
                    self.qpc.wr_en.next = true;
                    self.qpc.wr_data.next = self.zero_qpc.val();
                    self.qpa.wr_en.next = true;
                    self.qpa.wr_data.next = self.zero_qpa.val();
                    self.qpr.wr_en.next = true;
                    self.qpr.wr_data.next = self.zero_qpr.val();
                    self.qps.wr_en.next = true;
                    self.qps.wr_data.next = self.zero_qps.val();
                    self.need_ev.d.next = true;
                    self.ev_kind.d.next = self.ev_destroyed.val();
                }
                if self.is_mqp.val() {
                    self.qpa.wr_en.next = true;
                    self.qpr.wr_en.next = true;
                    self.qps.wr_en.next = true;
                    if self.n_reset.val() {
                        // A fresh context: nothing of the old connection survives.
                        self.qpa.wr_data.next = self.zero_qpa.val();
                        self.qpr.wr_data.next = self.zero_qpr.val();
                        self.qps.wr_data.next = self.zero_qps.val();
                        self.need_ev.d.next = true;
                        self.ev_kind.d.next = self.ev_reset.val();
                    }
                    if self.n_err.val() & !self.c_err.val() {
                        self.need_ev.d.next = true;
                        self.ev_kind.d.next = self.ev_error.val();
                    }
                    if self.n_rts.val() | self.n_sqd.val() {
                        self.need_ev.d.next = true;
                        self.ev_kind.d.next = self.ev_active.val();
                    }
                }
            }
            self.state.d.next = self.st_write2.val();
            // The counters' operation follows Write2 (registers decide every `state`
            // change: a condition on Eval's locals would tie the state register's logic
            // to the table writes' and close a loop through the datapath in Verilator).
            self.need_qc.d.next = self.ok.val() & (self.is_cqp.val() | self.is_qcnt.val());
            self.qc_read.d.next = self.is_qcnt.val();
        }
        if self.state.q.val() == self.st_qc.val() {
            if self.m_qc_ready.val() {
                self.qc_sent.d.next = true;
            }
            if self.qc_sent.q.val() & self.s_qc_done.val() {
                self.state.d.next = self.st_done_st.val();
                if self.qc_read.q.val() {
                    self.qd.d.next = self.qd0.val();
                    self.qd_st.d.next = false;
                    self.state.d.next = self.st_qdma.val();
                }
            }
        }
        if self.state.q.val() == self.st_qdma.val() {
            if self.dma_wr.status_valid.val() {
                self.qd_st.d.next = true;
                self.qd_err.d.next = self.dma_wr.status_err.val();
            }
            if (self.qd.q.val() == self.qd0.val()) & self.dma_wr.req_ready.val() {
                self.qd.d.next = self.qd1.val();
            }
            if (self.qd.q.val() == self.qd1.val()) & self.dma_wr.data_ready.val() {
                self.qd.d.next = self.qd2.val();
            }
            if (self.qd.q.val() == self.qd2.val()) & self.dma_wr.data_ready.val() {
                self.qd.d.next = self.qd3.val();
            }
            if (self.qd.q.val() == self.qd3.val()) & self.qd_st.q.val() {
                self.state.d.next = self.st_done_st.val();
            }
        }
        if (self.state.q.val() == self.st_qdma.val())
            & (self.qd.q.val() == self.qd3.val())
            & self.qd_st.q.val()
            & self.qd_err.q.val()
        {
            self.status_r.d.next = self.st_dma_fault.val();
        }
        if self.state.q.val() == self.st_write2.val() {
            if self.need_wr2.q.val() {
                self.cq.wr_en.next = true;
                self.cq.wr_addr.next = self.cqr_addr.q.val();
                self.cq.wr_data.next = self.cqr_q.q.val() + self.cq_ref.val();
                if self.is_dqp.val() {
                    self.cq.wr_data.next = self.cqr_q.q.val() - self.cq_ref.val();
                }
            }
            self.state.d.next = self.st_done_st.val();
            if self.need_ev.q.val() {
                self.state.d.next = self.st_event.val();
            }
            if self.need_qc.q.val() {
                self.qc_sent.d.next = false;
                self.state.d.next = self.st_qc.val();
            }
        }
        if self.state.q.val() == self.st_event.val() {
            if self.cq_ev.q.val() {
                self.cqev.valid.next = true;
                if self.cqev.ready.val() {
                    self.state.d.next = self.st_done_st.val();
                }
            } else {
                self.qpev.valid.next = true;
                if self.qpev.ready.val() {
                    self.state.d.next = self.st_done_st.val();
                } else if self.qperr.valid.val() | self.inv.valid.val() {
                    // The event's taker may be the responder, itself waiting for this.
                    self.err_ret.d.next = true;
                    self.dp_inv.d.next = !self.qperr.valid.val();
                    self.state.d.next = self.st_err_read.val();
                }
            }
        }
        if self.state.q.val() == self.st_done_st.val() {
            self.done.next = true;
            self.state.d.next = self.st_idle.val();
        }

        if self.reset.val() {
            self.state.d.next = self.st_clear.val();
            self.clr.d.next = self.zero_ma.val();
            self.status_r.d.next = self.zero32.val();
            self.outs_r.d.next = self.zero_outs.val();
            self.start_pend.d.next = false;
        }
    }
}
