//! `QpCounters`: the per-QP counters (`QUERY_QP_COUNTERS`), 64 bits each, in block RAM,
//! never losing an event.
//!
//! ```text
//!  responder pulses (QP, up to 2 at once) --> lanes 0-2 --+
//!  requester pulses (QP, DMA fault / ACK timeout) --> 3   |  one RAM each: a row per QP,
//!  requester retransmits (QP) ---------------------> 4   +- two 64-bit counters, a
//!  requester receive counters (QP, code) ----------> 5-7 |  read-modify-write pipeline
//!  TX frames (sending QP, bytes) -------------------> 8   |
//!  s_op (clear / read a QP, from the command engine) ----+--> m_done, m_cnt (16 x u64)
//! ```
//!
//! Why it is built so:
//! - **A lane per source group.** The sources fire in the same cycle for different QPs,
//!   and the responder fires two counters at once (a DMA fault and its NAK), so one
//!   shared read-modify-write port would lose events. Each [`CntLane`] has its own RAM
//!   (a row per QPN holding two of its source's counters) and its own two-stage
//!   pipeline: stage 0 reads the QP's row, stage 1 adds and writes it back. An event on
//!   the QP written in the cycle before is forwarded from a register (the RAM returns the
//!   old row for a read in the cycle of a write), so back-to-back events on one QP count.
//!   A lane never refuses an event. Counter `a` of a lane adds 1, counter `b` an amount:
//!   1 in lanes 0-7, the frame's bytes in lane 8 (`TxFrames` in `a`, `TxBytes` in `b`).
//! - **TX frames** come from `TxPath` as the last beat of a frame leaves (`tx_cnt`),
//!   with the frame's length and its sending QP (`tx_cnt.qpn`: the `src_qp` every record
//!   producer puts in the TX record, carried through `HdrBuild`'s pipeline beside the
//!   length), so each QP counts the frames it put on the wire: requests and their
//!   retransmissions, ACKs/NAKs, READ responses and atomic ACKs, as the model's
//!   `send_one`. At most one frame a cycle (a one-beat ACK each cycle, back to back);
//!   an operation takes the lane in a cycle no frame ends (any frame of two beats or
//!   more leaves one).
//! - **Operations wait for an idle cycle of each lane.** A clear (CREATE_QP) or a read
//!   (QUERY_QP_COUNTERS) of a QP goes down every lane's pipeline as an operation, taken
//!   in a cycle in which that lane's source has no event (events first: they cannot
//!   wait). A clear writes zero (with forwarding, like an event), a read returns the row
//!   as the events before it left it. No clearing pass after reset and no valid bit per
//!   QP are needed: every QP is created (and so cleared) before it can be queried, and
//!   rows of QPs that do not exist may count garbage that the next CREATE_QP wipes.
//!   The sources decide one packet or response in several cycles (retransmitted records
//!   come in bursts of at most a QP's 16-op ring), so an operation waits a few cycles; a
//!   source that fired in every cycle forever would hold it back (a lane has no spare
//!   read-modify-write cycle then), never lose an event. `s_op_ready` is high when no
//!   operation is in progress; `m_done` pulses when every lane has done it, and `m_cnt`
//!   then holds a read's result (16 counters, `Counter` order, counter `c` in bits
//!   `64c..64c+63`: the 128 bytes of QUERY_QP_COUNTERS in DMA beat order) until the next
//!   operation.
//! - **Not counted per QP here:** what the model counts only globally (RX frames and
//!   bytes, ICRC and malformed frame drops, frames for an unknown QP, refused CQE
//!   writes). A read answers 0 for those.
//!
//! A read's lanes are read at different cycles (each at its first idle cycle), so a read
//! while events of that QP arrive sees each counter at some moment between the
//! operation's start and `m_done`, as the model's counters at the moment the command runs.

use crate::bus::cnt::{ReqCntServer, RespCntServer, RxCntServer, TxCntServer};
use crate::common::cat::Cat;
use crate::common::zext::ZeroExt;
use crate::prelude::*;
use rocenic_proto::abi::regs::Counter;

/// Bits of `m_cnt`: the 16 counters of QUERY_QP_COUNTERS.
pub const CNT_BITS: usize = 64 * Counter::COUNT;

/// One lane: a RAM row of two 64-bit counters per QP and its read-modify-write pipeline
/// (see the [module docs](self)). Counter `a` counts events (+1); counter `b` adds an
/// amount of `BW` bits (`s_ev_b_amt`: the lanes of +1 events tie it to 1 with `BW` = 1,
/// the TX lane adds a frame's bytes).
#[derive(LogicBlock)]
pub struct CntLane<const QA: usize, const BW: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// An event: counter `a` of QP `s_ev_qpn` + 1 and/or counter `b` + `s_ev_b_amt`.
    /// Always taken.
    pub s_ev_valid: Signal<In, Bit>,
    pub s_ev_qpn: Signal<In, Bits<QA>>,
    pub s_ev_a: Signal<In, Bit>,
    pub s_ev_b: Signal<In, Bit>,
    pub s_ev_b_amt: Signal<In, Bits<BW>>,
    /// An operation: clear (`s_op_clear`) or read the QP's row; taken when no event is.
    pub s_op_valid: Signal<In, Bit>,
    pub s_op_ready: Signal<Out, Bit>,
    pub s_op_clear: Signal<In, Bit>,
    pub s_op_qpn: Signal<In, Bits<QA>>,
    /// A read's row, the cycle after it was taken.
    pub m_rd_valid: Signal<Out, Bit>,
    pub m_rd_a: Signal<Out, Bits<64>>,
    pub m_rd_b: Signal<Out, Bits<64>>,

    ram: RAM<Bits<128>, QA>,
    row: Cat<64, 64, 128>,
    /// Stage 1: what was read in stage 0 last cycle.
    s1_valid: DFF<Bit>,
    s1_op: DFF<Bit>,
    s1_clear: DFF<Bit>,
    s1_qpn: DFF<Bits<QA>>,
    s1_a: DFF<Bit>,
    s1_b: DFF<Bit>,
    s1_b_amt: DFF<Bits<BW>>,
    amt64: ZeroExt<BW, 64>,
    /// The row written at the last clock edge (forwarded to a read of the same QP).
    w_valid: DFF<Bit>,
    w_qpn: DFF<Bits<QA>>,
    w_a: DFF<Bits<64>>,
    w_b: DFF<Bits<64>>,
    one64: Constant<Bits<64>>,
    zero64: Constant<Bits<64>>,
    base_a: Signal<Local, Bits<64>>,
    base_b: Signal<Local, Bits<64>>,
    new_a: Signal<Local, Bits<64>>,
    new_b: Signal<Local, Bits<64>>,
    wr: Signal<Local, Bit>,
}

impl<const QA: usize, const BW: usize> Default for CntLane<QA, BW> {
    fn default() -> Self {
        assert!((1..=16).contains(&QA), "CntLane<{QA}>: 2 to 65536 QPs");
        assert!((1..=32).contains(&BW), "CntLane: a 1- to 32-bit amount");
        CntLane {
            clock: Default::default(),
            reset: Default::default(),
            s_ev_valid: Default::default(),
            s_ev_qpn: Default::default(),
            s_ev_a: Default::default(),
            s_ev_b: Default::default(),
            s_ev_b_amt: Default::default(),
            s_op_valid: Default::default(),
            s_op_ready: Default::default(),
            s_op_clear: Default::default(),
            s_op_qpn: Default::default(),
            m_rd_valid: Default::default(),
            m_rd_a: Default::default(),
            m_rd_b: Default::default(),
            ram: Default::default(),
            row: Default::default(),
            s1_valid: Default::default(),
            s1_op: Default::default(),
            s1_clear: Default::default(),
            s1_qpn: Default::default(),
            s1_a: Default::default(),
            s1_b: Default::default(),
            s1_b_amt: Default::default(),
            amt64: Default::default(),
            w_valid: Default::default(),
            w_qpn: Default::default(),
            w_a: Default::default(),
            w_b: Default::default(),
            one64: Constant::new(1u64.to_bits()),
            zero64: Constant::new(0u64.to_bits()),
            base_a: Default::default(),
            base_b: Default::default(),
            new_a: Default::default(),
            new_b: Default::default(),
            wr: Default::default(),
        }
    }
}

impl<const QA: usize, const BW: usize> Logic for CntLane<QA, BW> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, s1_valid, s1_op, s1_clear, s1_qpn, s1_a, s1_b, s1_b_amt, w_valid, w_qpn,
            w_a, w_b
        );
        self.ram.read_clock.next = self.clock.val();
        self.ram.write_clock.next = self.clock.val();

        // ---- stage 0: read the row of the event, else of the operation ----
        self.s_op_ready.next = !self.s_ev_valid.val();
        self.s1_valid.d.next = self.s_ev_valid.val() | self.s_op_valid.val();
        self.s1_op.d.next = !self.s_ev_valid.val();
        self.s1_clear.d.next = self.s_op_clear.val();
        self.s1_a.d.next = self.s_ev_valid.val() & self.s_ev_a.val();
        self.s1_b.d.next = self.s_ev_valid.val() & self.s_ev_b.val();
        self.s1_b_amt.d.next = self.s_ev_b_amt.val();
        if self.s_ev_valid.val() {
            self.ram.read_address.next = self.s_ev_qpn.val();
            self.s1_qpn.d.next = self.s_ev_qpn.val();
        } else {
            self.ram.read_address.next = self.s_op_qpn.val();
            self.s1_qpn.d.next = self.s_op_qpn.val();
        }

        // ---- stage 1: the row (forwarded if written at the last edge), add, write ----
        if self.w_valid.q.val() & (self.w_qpn.q.val() == self.s1_qpn.q.val()) {
            self.base_a.next = self.w_a.q.val();
            self.base_b.next = self.w_b.q.val();
        } else {
            self.base_a.next = self.ram.read_data.val().get_bits::<64>(0);
            self.base_b.next = self.ram.read_data.val().get_bits::<64>(64);
        }
        self.new_a.next = self.base_a.val();
        self.new_b.next = self.base_b.val();
        if self.s1_a.q.val() {
            self.new_a.next = self.base_a.val() + self.one64.val();
        }
        self.amt64.x.next = self.s1_b_amt.q.val();
        if self.s1_b.q.val() {
            self.new_b.next = self.base_b.val() + self.amt64.y.val();
        }
        if self.s1_op.q.val() & self.s1_clear.q.val() {
            self.new_a.next = self.zero64.val();
            self.new_b.next = self.zero64.val();
        }
        self.wr.next = self.s1_valid.q.val() & (!self.s1_op.q.val() | self.s1_clear.q.val());
        self.row.lo.next = self.new_a.val();
        self.row.hi.next = self.new_b.val();
        self.ram.write_data.next = self.row.y.val();
        self.ram.write_address.next = self.s1_qpn.q.val();
        self.ram.write_enable.next = self.wr.val();
        self.w_valid.d.next = self.wr.val();
        self.w_qpn.d.next = self.s1_qpn.q.val();
        self.w_a.d.next = self.new_a.val();
        self.w_b.d.next = self.new_b.val();
        self.m_rd_valid.next = self.s1_valid.q.val() & self.s1_op.q.val() & !self.s1_clear.q.val();
        self.m_rd_a.next = self.base_a.val();
        self.m_rd_b.next = self.base_b.val();

        if self.reset.val() {
            self.s1_valid.d.next = false;
            self.w_valid.d.next = false;
        }
    }
}

/// The 16 counters of a read from the lanes' rows, in `Counter` order (a counter two
/// lanes keep is their sum; the counters no lane keeps are 0). Hand-written Verilog: the
/// widening concatenation `#[hdl_gen]` lacks.
#[derive(LogicBlock, Default)]
pub struct CntSum {
    pub l0a: Signal<In, Bits<64>>,
    pub l0b: Signal<In, Bits<64>>,
    pub l1a: Signal<In, Bits<64>>,
    pub l1b: Signal<In, Bits<64>>,
    pub l2a: Signal<In, Bits<64>>,
    pub l2b: Signal<In, Bits<64>>,
    pub l3a: Signal<In, Bits<64>>,
    pub l3b: Signal<In, Bits<64>>,
    pub l4a: Signal<In, Bits<64>>,
    pub l5a: Signal<In, Bits<64>>,
    pub l5b: Signal<In, Bits<64>>,
    pub l6a: Signal<In, Bits<64>>,
    pub l6b: Signal<In, Bits<64>>,
    pub l7a: Signal<In, Bits<64>>,
    pub l8a: Signal<In, Bits<64>>,
    pub l8b: Signal<In, Bits<64>>,
    pub y: Signal<Out, Bits<CNT_BITS>>,
}

/// Which lane counters make each `Counter` (the lane map of [`QpCounters`]).
const SUMS: [(Counter, &[&str]); 13] = [
    (Counter::TxFrames, &["l8a"]),
    (Counter::TxBytes, &["l8b"]),
    (Counter::Retransmits, &["l4a"]),
    (Counter::MalformedDrops, &["l6b"]),
    (Counter::PsnSeqDrops, &["l0b"]),
    (Counter::Duplicates, &["l0a", "l6a"]),
    (Counter::NaksSent, &["l1a"]),
    (Counter::NaksReceived, &["l5a"]),
    (Counter::RnrNaksSent, &["l1b"]),
    (Counter::RnrNaksReceived, &["l5b"]),
    (Counter::AckTimeouts, &["l3b"]),
    (Counter::DmaFaults, &["l2b", "l3a"]),
    (Counter::UnknownQpDrops, &["l2a", "l7a"]),
];

impl CntSum {
    fn input(&self, name: &str) -> u64 {
        let s = match name {
            "l0a" => &self.l0a,
            "l0b" => &self.l0b,
            "l1a" => &self.l1a,
            "l1b" => &self.l1b,
            "l2a" => &self.l2a,
            "l2b" => &self.l2b,
            "l3a" => &self.l3a,
            "l3b" => &self.l3b,
            "l4a" => &self.l4a,
            "l5a" => &self.l5a,
            "l5b" => &self.l5b,
            "l6a" => &self.l6a,
            "l6b" => &self.l6b,
            "l7a" => &self.l7a,
            "l8a" => &self.l8a,
            "l8b" => &self.l8b,
            _ => unreachable!("no input {name}"),
        };
        s.val().to_u64()
    }
}

impl Logic for CntSum {
    fn update(&mut self) {
        let mut y = Bits::<CNT_BITS>::default();
        for (c, names) in SUMS {
            let v = names
                .iter()
                .fold(0u64, |acc, n| acc.wrapping_add(self.input(n)));
            y.set_bits(64 * c as usize, Bits::<64>::from(v));
        }
        self.y.next = y;
    }

    fn connect(&mut self) {
        self.y.connect();
    }

    fn hdl(&self) -> Verilog {
        let mut v = format!("always @(*) begin\n    y = {CNT_BITS}'h0;\n");
        for (c, names) in SUMS {
            v.push_str(&format!(
                "    y[{}:{}] = {};\n",
                64 * c as usize + 63,
                64 * c as usize,
                names.join(" + ")
            ));
        }
        v.push_str("end\n");
        Verilog::Custom(v)
    }
}

/// The per-QP counters of `2^QA` QPs; see the [module docs](self).
#[derive(LogicBlock)]
pub struct QpCounters<const QA: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// The responder's pulses (`Responder::cnt`), for QP `resp.qpn` when `resp.qp_valid`.
    pub resp: RespCntServer<QA>,
    /// The requester's pulses (`Requester::cnt`): DMA faults and ACK timeouts of QP
    /// `req.qpn`, retransmits of QP `req.rtx_qpn`.
    pub req: ReqCntServer<QA>,
    /// The requester's receive counter pulses; those with `per_qp` count for QP `rx.qpn`.
    pub rx: RxCntServer<QA>,
    /// The TX path's frames (`TxPath::tx_cnt`): `TxFrames` + 1 and `TxBytes` +
    /// `tx.bytes` of QP `tx.qpn` (its low `QA` bits), when `tx.frame`.
    pub tx: TxCntServer,
    /// Clear (CREATE_QP) or read (QUERY_QP_COUNTERS) a QP's counters.
    pub s_op_valid: Signal<In, Bit>,
    pub s_op_ready: Signal<Out, Bit>,
    pub s_op_clear: Signal<In, Bit>,
    pub s_op_qpn: Signal<In, Bits<QA>>,
    /// The operation is done (one cycle); `m_cnt` holds a read's counters until the next.
    pub m_done: Signal<Out, Bit>,
    pub m_cnt: Signal<Out, Bits<CNT_BITS>>,

    l0: CntLane<QA, 1>,
    l1: CntLane<QA, 1>,
    l2: CntLane<QA, 1>,
    l3: CntLane<QA, 1>,
    l4: CntLane<QA, 1>,
    l5: CntLane<QA, 1>,
    l6: CntLane<QA, 1>,
    l7: CntLane<QA, 1>,
    l8: CntLane<QA, 16>,
    sum: CntSum,
    busy: DFF<Bit>,
    fin: DFF<Bit>,
    op_clear: DFF<Bit>,
    op_qpn: DFF<Bits<QA>>,
    /// Lanes that have not yet taken the operation.
    p0: DFF<Bit>,
    p1: DFF<Bit>,
    p2: DFF<Bit>,
    p3: DFF<Bit>,
    p4: DFF<Bit>,
    p5: DFF<Bit>,
    p6: DFF<Bit>,
    p7: DFF<Bit>,
    p8: DFF<Bit>,
    /// The lanes' rows of the last read.
    r0a: DFF<Bits<64>>,
    r0b: DFF<Bits<64>>,
    r1a: DFF<Bits<64>>,
    r1b: DFF<Bits<64>>,
    r2a: DFF<Bits<64>>,
    r2b: DFF<Bits<64>>,
    r3a: DFF<Bits<64>>,
    r3b: DFF<Bits<64>>,
    r4a: DFF<Bits<64>>,
    r5a: DFF<Bits<64>>,
    r5b: DFF<Bits<64>>,
    r6a: DFF<Bits<64>>,
    r6b: DFF<Bits<64>>,
    r7a: DFF<Bits<64>>,
    r8a: DFF<Bits<64>>,
    r8b: DFF<Bits<64>>,
    /// The amount of the +1 lanes' counter `b`.
    one1: Constant<Bits<1>>,
    k_nak: Constant<Bits<3>>,
    k_rnr: Constant<Bits<3>>,
    k_dup: Constant<Bits<3>>,
    k_malformed: Constant<Bits<3>>,
    k_unknown: Constant<Bits<3>>,
    /// A receive pulse that counts for its QP.
    rx_on: Signal<Local, Bit>,
    rx_nak: Signal<Local, Bit>,
    rx_rnr: Signal<Local, Bit>,
    rx_dup: Signal<Local, Bit>,
    rx_malformed: Signal<Local, Bit>,
    rx_unknown: Signal<Local, Bit>,
    /// Second counters of lanes 4 and 7, which count nothing (always 0).
    unused_l4b: Signal<Local, Bits<64>>,
    unused_l7b: Signal<Local, Bits<64>>,
    /// A frame's QP above the `QA` bits.
    unused_tx_qpn: Signal<Local, Bits<24>>,
}

impl<const QA: usize> Default for QpCounters<QA> {
    fn default() -> Self {
        use crate::requester::req_rx_check::{CNT_DUP, CNT_MALFORMED, CNT_NAK, CNT_RNR};
        use crate::requester::CNT_UNKNOWN_QP;
        let k = |v: u64| Constant::new(v.to_bits());
        QpCounters {
            clock: Default::default(),
            reset: Default::default(),
            resp: Default::default(),
            req: Default::default(),
            rx: Default::default(),
            tx: Default::default(),
            s_op_valid: Default::default(),
            s_op_ready: Default::default(),
            s_op_clear: Default::default(),
            s_op_qpn: Default::default(),
            m_done: Default::default(),
            m_cnt: Default::default(),
            l0: Default::default(),
            l1: Default::default(),
            l2: Default::default(),
            l3: Default::default(),
            l4: Default::default(),
            l5: Default::default(),
            l6: Default::default(),
            l7: Default::default(),
            l8: Default::default(),
            sum: Default::default(),
            busy: Default::default(),
            fin: Default::default(),
            op_clear: Default::default(),
            op_qpn: Default::default(),
            p0: Default::default(),
            p1: Default::default(),
            p2: Default::default(),
            p3: Default::default(),
            p4: Default::default(),
            p5: Default::default(),
            p6: Default::default(),
            p7: Default::default(),
            p8: Default::default(),
            r0a: Default::default(),
            r0b: Default::default(),
            r1a: Default::default(),
            r1b: Default::default(),
            r2a: Default::default(),
            r2b: Default::default(),
            r3a: Default::default(),
            r3b: Default::default(),
            r4a: Default::default(),
            r5a: Default::default(),
            r5b: Default::default(),
            r6a: Default::default(),
            r6b: Default::default(),
            r7a: Default::default(),
            r8a: Default::default(),
            r8b: Default::default(),
            one1: Constant::new(1u64.to_bits()),
            k_nak: k(CNT_NAK),
            k_rnr: k(CNT_RNR),
            k_dup: k(CNT_DUP),
            k_malformed: k(CNT_MALFORMED),
            k_unknown: k(CNT_UNKNOWN_QP),
            rx_on: Default::default(),
            rx_nak: Default::default(),
            rx_rnr: Default::default(),
            rx_dup: Default::default(),
            rx_malformed: Default::default(),
            rx_unknown: Default::default(),
            unused_l4b: Default::default(),
            unused_l7b: Default::default(),
            unused_tx_qpn: Default::default(),
        }
    }
}

impl<const QA: usize> Logic for QpCounters<QA> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, busy, fin, op_clear, op_qpn, p0, p1, p2, p3, p4, p5, p6, p7, p8, r0a, r0b,
            r1a, r1b, r2a, r2b, r3a, r3b, r4a, r5a, r5b, r6a, r6b, r7a, r8a, r8b
        );
        clock!(self, clock, l0, l1, l2, l3, l4, l5, l6, l7, l8);
        self.l0.reset.next = self.reset.val();
        self.l1.reset.next = self.reset.val();
        self.l2.reset.next = self.reset.val();
        self.l3.reset.next = self.reset.val();
        self.l4.reset.next = self.reset.val();
        self.l5.reset.next = self.reset.val();
        self.l6.reset.next = self.reset.val();
        self.l7.reset.next = self.reset.val();
        self.l8.reset.next = self.reset.val();

        // ---- events: lanes 0-2 the responder, 3 and 4 the requester, 5-7 its receive ----
        self.l0.s_ev_valid.next =
            self.resp.qp_valid.val() & (self.resp.duplicates.val() | self.resp.psn_seq_drops.val());
        self.l0.s_ev_qpn.next = self.resp.qpn.val();
        self.l0.s_ev_a.next = self.resp.duplicates.val();
        self.l0.s_ev_b.next = self.resp.psn_seq_drops.val();
        self.l1.s_ev_valid.next =
            self.resp.qp_valid.val() & (self.resp.naks_sent.val() | self.resp.rnr_naks_sent.val());
        self.l1.s_ev_qpn.next = self.resp.qpn.val();
        self.l1.s_ev_a.next = self.resp.naks_sent.val();
        self.l1.s_ev_b.next = self.resp.rnr_naks_sent.val();
        self.l2.s_ev_valid.next = self.resp.qp_valid.val()
            & (self.resp.unknown_qp_drops.val() | self.resp.dma_faults.val());
        self.l2.s_ev_qpn.next = self.resp.qpn.val();
        self.l2.s_ev_a.next = self.resp.unknown_qp_drops.val();
        self.l2.s_ev_b.next = self.resp.dma_faults.val();
        self.l3.s_ev_valid.next = self.req.dma_faults.val() | self.req.ack_timeouts.val();
        self.l3.s_ev_qpn.next = self.req.qpn.val();
        self.l3.s_ev_a.next = self.req.dma_faults.val();
        self.l3.s_ev_b.next = self.req.ack_timeouts.val();
        self.l4.s_ev_valid.next = self.req.retransmits.val();
        self.l4.s_ev_qpn.next = self.req.rtx_qpn.val();
        self.l4.s_ev_a.next = true;
        self.l4.s_ev_b.next = false;
        self.rx_on.next = self.rx.valid.val() & self.rx.per_qp.val();
        self.rx_nak.next = self.rx_on.val() & (self.rx.code.val() == self.k_nak.val());
        self.rx_rnr.next = self.rx_on.val() & (self.rx.code.val() == self.k_rnr.val());
        self.rx_dup.next = self.rx_on.val() & (self.rx.code.val() == self.k_dup.val());
        self.rx_malformed.next = self.rx_on.val() & (self.rx.code.val() == self.k_malformed.val());
        self.rx_unknown.next = self.rx_on.val() & (self.rx.code.val() == self.k_unknown.val());
        self.l5.s_ev_valid.next = self.rx_nak.val() | self.rx_rnr.val();
        self.l5.s_ev_qpn.next = self.rx.qpn.val();
        self.l5.s_ev_a.next = self.rx_nak.val();
        self.l5.s_ev_b.next = self.rx_rnr.val();
        self.l6.s_ev_valid.next = self.rx_dup.val() | self.rx_malformed.val();
        self.l6.s_ev_qpn.next = self.rx.qpn.val();
        self.l6.s_ev_a.next = self.rx_dup.val();
        self.l6.s_ev_b.next = self.rx_malformed.val();
        self.l7.s_ev_valid.next = self.rx_unknown.val();
        self.l7.s_ev_qpn.next = self.rx.qpn.val();
        self.l7.s_ev_a.next = true;
        self.l7.s_ev_b.next = false;
        self.l0.s_ev_b_amt.next = self.one1.val();
        self.l1.s_ev_b_amt.next = self.one1.val();
        self.l2.s_ev_b_amt.next = self.one1.val();
        self.l3.s_ev_b_amt.next = self.one1.val();
        self.l4.s_ev_b_amt.next = self.one1.val();
        self.l5.s_ev_b_amt.next = self.one1.val();
        self.l6.s_ev_b_amt.next = self.one1.val();
        self.l7.s_ev_b_amt.next = self.one1.val();
        // Lane 8: a frame sent, +1 frame and + its bytes.
        self.l8.s_ev_valid.next = self.tx.frame.val();
        self.l8.s_ev_qpn.next = self.tx.qpn.val().get_bits::<QA>(0);
        self.unused_tx_qpn.next = self.tx.qpn.val();
        self.l8.s_ev_a.next = true;
        self.l8.s_ev_b.next = true;
        self.l8.s_ev_b_amt.next = self.tx.bytes.val();

        // ---- an operation: to every lane, each taking it in an idle cycle ----
        self.s_op_ready.next = !self.busy.q.val();
        self.l0.s_op_valid.next = self.p0.q.val();
        self.l1.s_op_valid.next = self.p1.q.val();
        self.l2.s_op_valid.next = self.p2.q.val();
        self.l3.s_op_valid.next = self.p3.q.val();
        self.l4.s_op_valid.next = self.p4.q.val();
        self.l5.s_op_valid.next = self.p5.q.val();
        self.l6.s_op_valid.next = self.p6.q.val();
        self.l7.s_op_valid.next = self.p7.q.val();
        self.l8.s_op_valid.next = self.p8.q.val();
        self.l0.s_op_clear.next = self.op_clear.q.val();
        self.l1.s_op_clear.next = self.op_clear.q.val();
        self.l2.s_op_clear.next = self.op_clear.q.val();
        self.l3.s_op_clear.next = self.op_clear.q.val();
        self.l4.s_op_clear.next = self.op_clear.q.val();
        self.l5.s_op_clear.next = self.op_clear.q.val();
        self.l6.s_op_clear.next = self.op_clear.q.val();
        self.l7.s_op_clear.next = self.op_clear.q.val();
        self.l8.s_op_clear.next = self.op_clear.q.val();
        self.l0.s_op_qpn.next = self.op_qpn.q.val();
        self.l1.s_op_qpn.next = self.op_qpn.q.val();
        self.l2.s_op_qpn.next = self.op_qpn.q.val();
        self.l3.s_op_qpn.next = self.op_qpn.q.val();
        self.l4.s_op_qpn.next = self.op_qpn.q.val();
        self.l5.s_op_qpn.next = self.op_qpn.q.val();
        self.l6.s_op_qpn.next = self.op_qpn.q.val();
        self.l7.s_op_qpn.next = self.op_qpn.q.val();
        self.l8.s_op_qpn.next = self.op_qpn.q.val();
        if self.l0.s_op_ready.val() {
            self.p0.d.next = false;
        }
        if self.l1.s_op_ready.val() {
            self.p1.d.next = false;
        }
        if self.l2.s_op_ready.val() {
            self.p2.d.next = false;
        }
        if self.l3.s_op_ready.val() {
            self.p3.d.next = false;
        }
        if self.l4.s_op_ready.val() {
            self.p4.d.next = false;
        }
        if self.l5.s_op_ready.val() {
            self.p5.d.next = false;
        }
        if self.l6.s_op_ready.val() {
            self.p6.d.next = false;
        }
        if self.l7.s_op_ready.val() {
            self.p7.d.next = false;
        }
        if self.l8.s_op_ready.val() {
            self.p8.d.next = false;
        }
        // (A new operation is taken only when none is pending: after the lanes' clears.)
        if self.s_op_valid.val() & !self.busy.q.val() {
            self.busy.d.next = true;
            self.op_clear.d.next = self.s_op_clear.val();
            self.op_qpn.d.next = self.s_op_qpn.val();
            self.p0.d.next = true;
            self.p1.d.next = true;
            self.p2.d.next = true;
            self.p3.d.next = true;
            self.p4.d.next = true;
            self.p5.d.next = true;
            self.p6.d.next = true;
            self.p7.d.next = true;
            self.p8.d.next = true;
        }
        // The last lane's row arrives the cycle after it took the operation; done the
        // cycle after that, with every row latched.
        self.fin.d.next = self.busy.q.val()
            & !self.fin.q.val()
            & !(self.p0.q.val()
                | self.p1.q.val()
                | self.p2.q.val()
                | self.p3.q.val()
                | self.p4.q.val()
                | self.p5.q.val()
                | self.p6.q.val()
                | self.p7.q.val()
                | self.p8.q.val());
        self.m_done.next = self.fin.q.val();
        if self.fin.q.val() {
            self.busy.d.next = false;
        }

        // ---- the rows of a read ----
        if self.l0.m_rd_valid.val() {
            self.r0a.d.next = self.l0.m_rd_a.val();
            self.r0b.d.next = self.l0.m_rd_b.val();
        }
        if self.l1.m_rd_valid.val() {
            self.r1a.d.next = self.l1.m_rd_a.val();
            self.r1b.d.next = self.l1.m_rd_b.val();
        }
        if self.l2.m_rd_valid.val() {
            self.r2a.d.next = self.l2.m_rd_a.val();
            self.r2b.d.next = self.l2.m_rd_b.val();
        }
        if self.l3.m_rd_valid.val() {
            self.r3a.d.next = self.l3.m_rd_a.val();
            self.r3b.d.next = self.l3.m_rd_b.val();
        }
        if self.l4.m_rd_valid.val() {
            self.r4a.d.next = self.l4.m_rd_a.val();
        }
        if self.l5.m_rd_valid.val() {
            self.r5a.d.next = self.l5.m_rd_a.val();
            self.r5b.d.next = self.l5.m_rd_b.val();
        }
        if self.l6.m_rd_valid.val() {
            self.r6a.d.next = self.l6.m_rd_a.val();
            self.r6b.d.next = self.l6.m_rd_b.val();
        }
        if self.l7.m_rd_valid.val() {
            self.r7a.d.next = self.l7.m_rd_a.val();
        }
        if self.l8.m_rd_valid.val() {
            self.r8a.d.next = self.l8.m_rd_a.val();
            self.r8b.d.next = self.l8.m_rd_b.val();
        }
        self.unused_l4b.next = self.l4.m_rd_b.val();
        self.unused_l7b.next = self.l7.m_rd_b.val();
        self.sum.l0a.next = self.r0a.q.val();
        self.sum.l0b.next = self.r0b.q.val();
        self.sum.l1a.next = self.r1a.q.val();
        self.sum.l1b.next = self.r1b.q.val();
        self.sum.l2a.next = self.r2a.q.val();
        self.sum.l2b.next = self.r2b.q.val();
        self.sum.l3a.next = self.r3a.q.val();
        self.sum.l3b.next = self.r3b.q.val();
        self.sum.l4a.next = self.r4a.q.val();
        self.sum.l5a.next = self.r5a.q.val();
        self.sum.l5b.next = self.r5b.q.val();
        self.sum.l6a.next = self.r6a.q.val();
        self.sum.l6b.next = self.r6b.q.val();
        self.sum.l7a.next = self.r7a.q.val();
        self.sum.l8a.next = self.r8a.q.val();
        self.sum.l8b.next = self.r8b.q.val();
        self.m_cnt.next = self.sum.y.val();

        if self.reset.val() {
            self.busy.d.next = false;
            self.fin.d.next = false;
            self.p0.d.next = false;
            self.p1.d.next = false;
            self.p2.d.next = false;
            self.p3.d.next = false;
            self.p4.d.next = false;
            self.p5.d.next = false;
            self.p6.d.next = false;
            self.p7.d.next = false;
            self.p8.d.next = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{Bench, Rng};
    use crate::requester::req_rx_check::{CNT_DUP, CNT_MALFORMED, CNT_NAK, CNT_RNR};
    use crate::requester::CNT_UNKNOWN_QP;
    use crate::responder::COUNTERS as RESP_COUNTERS;

    const QA: usize = 3;
    const QPS: usize = 1 << QA;
    type Uut = QpCounters<QA>;

    /// One cycle's events from every source (None: the source is quiet).
    #[derive(Default, Clone, Copy, Debug)]
    struct Events {
        /// (qpn, dup, psn_seq, naks, rnr_naks, unknown_qp, dma_faults)
        resp: Option<(usize, [bool; 6])>,
        /// (qpn, dma_faults, ack_timeouts)
        req: Option<(usize, bool, bool)>,
        rtx: Option<usize>,
        /// (qpn, code)
        rx: Option<(usize, u64)>,
        /// A frame sent: (qpn, bytes)
        tx: Option<(usize, u64)>,
    }

    fn rx_counter(code: u64) -> Counter {
        match code {
            CNT_NAK => Counter::NaksReceived,
            CNT_RNR => Counter::RnrNaksReceived,
            CNT_DUP => Counter::Duplicates,
            CNT_MALFORMED => Counter::MalformedDrops,
            CNT_UNKNOWN_QP => Counter::UnknownQpDrops,
            _ => unreachable!(),
        }
    }

    impl Events {
        /// Random events, never for the QPs in `quiet`; `rate` percent per source.
        fn random(rng: &mut Rng, rate: u32, quiet: &[usize]) -> Events {
            let qp = |rng: &mut Rng| loop {
                let q = rng.below(QPS as u64) as usize;
                if !quiet.contains(&q) {
                    return q;
                }
            };
            let mut e = Events::default();
            if rng.percent(rate) {
                let mut f = [false; 6];
                // One or two counters at once, as the responder pulses them.
                f[rng.below(6) as usize] = true;
                if rng.percent(30) {
                    f[rng.below(6) as usize] = true;
                }
                e.resp = Some((qp(rng), f));
            }
            if rng.percent(rate) {
                let a = rng.percent(50);
                e.req = Some((qp(rng), a, !a || rng.percent(20)));
            }
            if rng.percent(rate) {
                e.rtx = Some(qp(rng));
            }
            if rng.percent(rate) {
                let code = [CNT_NAK, CNT_RNR, CNT_DUP, CNT_MALFORMED, CNT_UNKNOWN_QP]
                    [rng.below(5) as usize];
                e.rx = Some((qp(rng), code));
            }
            if rng.percent(rate) {
                e.tx = Some((qp(rng), 58 + rng.below(65536 - 58)));
            }
            e
        }

        fn drive(&self, u: &mut Uut) {
            u.resp.qp_valid.next = self.resp.is_some();
            let (q, f) = self.resp.unwrap_or((0, [false; 6]));
            u.resp.qpn.next = (q as u64).into();
            u.resp.duplicates.next = f[0];
            u.resp.psn_seq_drops.next = f[1];
            u.resp.naks_sent.next = f[2];
            u.resp.rnr_naks_sent.next = f[3];
            u.resp.unknown_qp_drops.next = f[4];
            u.resp.dma_faults.next = f[5];
            let (q, a, b) = self.req.unwrap_or((1, false, false));
            u.req.qpn.next = (q as u64).into();
            u.req.dma_faults.next = a;
            u.req.ack_timeouts.next = b;
            u.req.retransmits.next = self.rtx.is_some();
            u.req.rtx_qpn.next = (self.rtx.unwrap_or(2) as u64).into();
            u.rx.valid.next = self.rx.is_some();
            u.rx.per_qp.next = true;
            let (q, c) = self.rx.unwrap_or((3, CNT_NAK));
            u.rx.qpn.next = (q as u64).into();
            u.rx.code.next = c.into();
            u.tx.frame.next = self.tx.is_some();
            let (q, n) = self.tx.unwrap_or((4, 0xFFFF));
            u.tx.qpn.next = (q as u64).into();
            u.tx.bytes.next = n.into();
        }

        /// Adds the events to the expected counters.
        fn count(&self, want: &mut [[u64; Counter::COUNT]; QPS]) {
            if let Some((q, f)) = self.resp {
                for (i, c) in RESP_COUNTERS.iter().enumerate() {
                    want[q][*c as usize] += u64::from(f[i]);
                }
            }
            if let Some((q, a, b)) = self.req {
                want[q][Counter::DmaFaults as usize] += u64::from(a);
                want[q][Counter::AckTimeouts as usize] += u64::from(b);
            }
            if let Some(q) = self.rtx {
                want[q][Counter::Retransmits as usize] += 1;
            }
            if let Some((q, c)) = self.rx {
                want[q][rx_counter(c) as usize] += 1;
            }
            if let Some((q, n)) = self.tx {
                want[q][Counter::TxFrames as usize] += 1;
                want[q][Counter::TxBytes as usize] += n;
            }
        }
    }

    fn counters(u: &Uut) -> [u64; Counter::COUNT] {
        let y = u.m_cnt.val();
        std::array::from_fn(|c| y.get_bits::<64>(64 * c).to_u64())
    }

    fn bench() -> Bench<Uut> {
        let mut b = Bench::new(Uut::default(), |u| &mut u.clock);
        b.uut.reset.next = true;
        b.tick();
        b.uut.reset.next = false;
        b
    }

    /// Runs one operation with the events `ev(cycle)` arriving meanwhile (counted into
    /// `want`); returns the counters at the start and at the end of the operation, and
    /// what the block answered.
    #[allow(clippy::type_complexity)]
    fn op(
        b: &mut Bench<Uut>,
        clear: bool,
        qpn: usize,
        want: &mut [[u64; Counter::COUNT]; QPS],
        mut ev: impl FnMut() -> Events,
    ) -> (
        [u64; Counter::COUNT],
        [u64; Counter::COUNT],
        [u64; Counter::COUNT],
    ) {
        b.uut.s_op_valid.next = true;
        b.uut.s_op_clear.next = clear;
        b.uut.s_op_qpn.next = (qpn as u64).into();
        let start = want[qpn];
        let mut n = 0;
        loop {
            let e = ev();
            e.drive(&mut b.uut);
            b.settle();
            let taken = b.uut.s_op_valid.val() && b.uut.s_op_ready.val();
            let done = b.uut.m_done.val();
            if done {
                assert!(!taken, "a new operation taken in the cycle of m_done");
                let got = counters(&b.uut);
                let end = want[qpn];
                // Finish the done cycle, quiet.
                Events::default().drive(&mut b.uut);
                b.tick();
                return (start, end, got);
            }
            e.count(want);
            b.tick();
            if taken {
                b.uut.s_op_valid.next = false;
            }
            n += 1;
            assert!(n < 500, "operation on QP {qpn} never done");
        }
    }

    /// Every source at once, random QPs (the same QP back to back often: 8 QPs), reads
    /// while events arrive (each counter between its values at the start and the end of
    /// the read), clears of quiet QPs, and in the end a quiet read of every QP, exact.
    #[test]
    fn qp_counters_count_every_event_of_every_source() {
        // (Not 100 %: a lane whose source fires in every cycle never has a cycle for an
        // operation; `qp_counters_same_qp_back_to_back` runs every source every cycle.)
        for (seed, rate) in [(1u64, 70u32), (2, 45), (3, 20)] {
            let mut rng = Rng::new(0xC0DE + seed);
            let mut b = bench();
            let mut want = [[0u64; Counter::COUNT]; QPS];
            // Every QP created first (its rows cleared: the RAM starts as garbage).
            for q in 0..QPS {
                let (_, _, got) = op(&mut b, true, q, &mut want, Events::default);
                assert_eq!(got.len(), Counter::COUNT);
            }
            for round in 0..60 {
                // Traffic for a while.
                for _ in 0..rng.below(40) {
                    let e = Events::random(&mut rng, rate, &[]);
                    e.drive(&mut b.uut);
                    e.count(&mut want);
                    b.tick();
                }
                let q = rng.below(QPS as u64) as usize;
                if rng.percent(20) {
                    // A clear (CREATE_QP): the QP has no traffic until it is done.
                    let mut r2 = rng.clone();
                    op(&mut b, true, q, &mut want, || {
                        Events::random(&mut r2, rate, &[q])
                    });
                    rng = r2;
                    want[q] = [0; Counter::COUNT];
                } else {
                    let mut r2 = rng.clone();
                    let (lo, hi, got) = op(&mut b, false, q, &mut want, || {
                        Events::random(&mut r2, rate, &[])
                    });
                    rng = r2;
                    for c in Counter::ALL {
                        let i = c as usize;
                        assert!(
                            lo[i] <= got[i] && got[i] <= hi[i],
                            "seed {seed} round {round}: QP {q} {}: read {} not in {}..={}",
                            c.name(),
                            got[i],
                            lo[i],
                            hi[i]
                        );
                    }
                }
            }
            // Quiet: every QP exactly as counted.
            for _ in 0..3 {
                Events::default().drive(&mut b.uut);
                b.tick();
            }
            let mut total = 0;
            for q in 0..QPS {
                let (_, _, got) = op(&mut b, false, q, &mut want, Events::default);
                for c in Counter::ALL {
                    assert_eq!(
                        got[c as usize],
                        want[q][c as usize],
                        "seed {seed}: QP {q} {}",
                        c.name()
                    );
                }
                total += want[q].iter().sum::<u64>();
            }
            assert!(total > 200, "seed {seed}: only {total} events counted");
        }
    }

    /// The same QP every cycle on every source (the forwarding path), then a read.
    #[test]
    fn qp_counters_same_qp_back_to_back() {
        let mut b = bench();
        let mut want = [[0u64; Counter::COUNT]; QPS];
        op(&mut b, true, 5, &mut want, Events::default);
        let e = Events {
            resp: Some((5, [true, false, true, false, false, true])),
            req: Some((5, true, true)),
            rtx: Some(5),
            rx: Some((5, CNT_DUP)),
            tx: Some((5, 60_001)),
        };
        for _ in 0..37 {
            e.drive(&mut b.uut);
            e.count(&mut want);
            b.tick();
        }
        let (_, _, got) = op(&mut b, false, 5, &mut want, Events::default);
        assert_eq!(got, want[5]);
        assert_eq!(got[Counter::Duplicates as usize], 74);
        assert_eq!(got[Counter::DmaFaults as usize], 74);
        assert_eq!(got[Counter::Retransmits as usize], 37);
        assert_eq!(got[Counter::TxFrames as usize], 37);
        assert_eq!(got[Counter::TxBytes as usize], 37 * 60_001);
        // Cleared at create: zero, and counting again from there.
        op(&mut b, true, 5, &mut want, Events::default);
        want[5] = [0; Counter::COUNT];
        e.drive(&mut b.uut);
        e.count(&mut want);
        b.tick();
        let (_, _, got) = op(&mut b, false, 5, &mut want, Events::default);
        assert_eq!(got, want[5]);
        assert_eq!(got[Counter::AckTimeouts as usize], 1);
    }

    /// The TX lane against plain sums: frames of one QP in every cycle, then of two QPs
    /// interleaved cycle by cycle, then of random QPs every other cycle, with lengths from
    /// a one-beat ACK to 65535 bytes; reads in between (each between its values at the
    /// start and the end of the read) and an exact read of every QP at the end.
    #[test]
    fn qp_counters_tx_lane_sums_frames_and_bytes() {
        let mut rng = Rng::new(0x7C);
        let mut b = bench();
        let mut want = [[0u64; Counter::COUNT]; QPS];
        for q in 0..QPS {
            op(&mut b, true, q, &mut want, Events::default);
        }
        // Plain sums, apart from `Events::count`.
        let mut frames = [0u64; QPS];
        let mut bytes = [0u64; QPS];
        let mut sent = |b: &mut Bench<Uut>, q: Option<(usize, u64)>| {
            let e = Events {
                tx: q,
                ..Events::default()
            };
            e.drive(&mut b.uut);
            if let Some((q, n)) = q {
                frames[q] += 1;
                bytes[q] += n;
            }
            b.tick();
        };
        let len = |rng: &mut Rng| match rng.below(4) {
            0 => 62,
            1 => 0xFFFF,
            _ => 58 + rng.below(9000),
        };
        for _ in 0..64 {
            let n = len(&mut rng);
            sent(&mut b, Some((3, n)));
        }
        for i in 0..64 {
            let n = len(&mut rng);
            sent(&mut b, Some(([1, 6][i % 2], n)));
        }
        for i in 0..128 {
            let q = rng.below(QPS as u64) as usize;
            let n = len(&mut rng);
            sent(&mut b, (i % 2 == 0).then_some((q, n)));
        }
        sent(&mut b, None);
        for q in 0..QPS {
            let (_, _, got) = op(&mut b, false, q, &mut want, Events::default);
            assert_eq!(got[Counter::TxFrames as usize], frames[q], "QP {q} frames");
            assert_eq!(got[Counter::TxBytes as usize], bytes[q], "QP {q} bytes");
            for c in Counter::ALL {
                if !matches!(c, Counter::TxFrames | Counter::TxBytes) {
                    assert_eq!(got[c as usize], 0, "QP {q} {}", c.name());
                }
            }
        }
        assert!(frames[3] >= 64 && frames[1] >= 32 && frames[6] >= 32);
        assert!(bytes[3] > 1 << 16, "the sums carry past 16 bits");
        // A read while QP 2 sends every cycle waits for a gap, then is exact as of then.
        let before = (frames[2], bytes[2]);
        let mut gaps = 0;
        let (_, _, got) = op(&mut b, false, 2, &mut want, || {
            gaps += 1;
            Events {
                tx: (gaps % 5 != 0).then_some((2, 100)),
                ..Events::default()
            }
        });
        let f = got[Counter::TxFrames as usize];
        assert!(
            f >= before.0 && f <= before.0 + gaps,
            "read {f} after {before:?}"
        );
        assert_eq!(
            got[Counter::TxBytes as usize],
            before.1 + 100 * (f - before.0)
        );
    }
}
