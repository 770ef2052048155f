//! `CounterEvents`: every block's pulses that the global counters count, as the register
//! file's increment vector ([`CntIncClient`]).
//!
//! ```text
//!  RX front end (frame, bytes, drops) --\
//!  responder `cnt`, requester `cnt`    --+--> EventSums --> CounterIncs --> cnt.inc
//!  requester `rx_cnt`, completion fault--/                                  cnt.{rx,tx}_bytes
//!  TxPath (frame, bytes)              --/
//! ```
//!
//! - `TxFrames`/`TxBytes` from TxPath; `RxFrames`/`RxBytes`, `IcrcDrops` from the RX front
//!   end; `PsnSeqDrops`, `NaksSent`, `RnrNaksSent` from the responder; `Retransmits`,
//!   `AckTimeouts` from the requester; `NaksReceived`, `RnrNaksReceived` from the
//!   requester's receive counters (`rx_cnt`, as the model's `requester_rx` counts them).
//! - Counted by several blocks, each through an [`EventSum`] (two pulses in one cycle
//!   count twice): `MalformedDrops` (the RX parser, a MAC error, an RX buffer overflow,
//!   the requester's `rx_cnt`), `UnknownQpDrops` (a frame for another IPv4 address, the
//!   responder's and the requester's peer checks), `Duplicates` (the responder, the
//!   requester), `DmaFaults` (the responder, the completion engine's refused CQE writes,
//!   the requester's refused reads and writes).
//!
//! The per-QP counters (`QpCounters`) take the same groups' pulses beside it (the engine
//! joins each counter group to both).

use rocenic_proto::abi::regs::Counter;

use crate::bus::cnt::{ReqCntServer, RespCntServer, RxCntServer, TxCntServer};
use crate::bus::reg::CntIncClient;
use crate::common::event_sum::EventSum;
use crate::prelude::*;
use crate::requester::req_rx_check::{CNT_DUP, CNT_MALFORMED, CNT_NAK, CNT_RNR};
use crate::requester::CNT_UNKNOWN_QP;

/// The merger; see the [module docs](self).
#[derive(LogicBlock)]
pub struct CounterEvents<const QA: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// The RX front end: a frame taken (and its bytes), or dropped for its ICRC, as
    /// malformed, for a MAC error, for a full buffer, for another IPv4 address.
    pub rx_frame: Signal<In, Bit>,
    pub rx_bytes: Signal<In, Bits<16>>,
    pub drop_icrc: Signal<In, Bit>,
    pub drop_malformed: Signal<In, Bit>,
    pub drop_mac: Signal<In, Bit>,
    pub drop_overflow: Signal<In, Bit>,
    pub drop_ip: Signal<In, Bit>,
    /// TxPath: a frame sent, and its bytes.
    pub tx: TxCntServer,
    /// The completion engine: a CQE write refused.
    pub cpl_dma_fault: Signal<In, Bit>,
    /// The sequencers' counter pulses.
    pub resp: RespCntServer<QA>,
    pub req: ReqCntServer<QA>,
    pub rx_cnt: RxCntServer<QA>,
    /// To the register file.
    pub cnt: CntIncClient,
    incs: CounterIncs,
    ev_malformed: EventSum,
    ev_unknown_qp: EventSum,
    ev_duplicates: EventSum,
    ev_dma_faults: EventSum,
    /// The requester's `rx_cnt.code`s.
    k_cnt_nak: Constant<Bits<3>>,
    k_cnt_rnr: Constant<Bits<3>>,
    k_cnt_dup: Constant<Bits<3>>,
    k_cnt_malformed: Constant<Bits<3>>,
    k_cnt_unknown_qp: Constant<Bits<3>>,
    /// What names a QP is the per-QP counters' business.
    unused_resp_qp_valid: Signal<Local, Bit>,
    unused_resp_qpn: Signal<Local, Bits<QA>>,
    unused_req_qpn: Signal<Local, Bits<QA>>,
    unused_req_rtx_qpn: Signal<Local, Bits<QA>>,
    unused_rx_cnt_per_qp: Signal<Local, Bit>,
    unused_rx_cnt_qpn: Signal<Local, Bits<QA>>,
    unused_tx_qpn: Signal<Local, Bits<24>>,
}

impl<const QA: usize> Default for CounterEvents<QA> {
    fn default() -> Self {
        CounterEvents {
            clock: Default::default(),
            reset: Default::default(),
            rx_frame: Default::default(),
            rx_bytes: Default::default(),
            drop_icrc: Default::default(),
            drop_malformed: Default::default(),
            drop_mac: Default::default(),
            drop_overflow: Default::default(),
            drop_ip: Default::default(),
            tx: Default::default(),
            cpl_dma_fault: Default::default(),
            resp: Default::default(),
            req: Default::default(),
            rx_cnt: Default::default(),
            cnt: Default::default(),
            incs: Default::default(),
            ev_malformed: Default::default(),
            ev_unknown_qp: Default::default(),
            ev_duplicates: Default::default(),
            ev_dma_faults: Default::default(),
            k_cnt_nak: Constant::new(CNT_NAK.to_bits()),
            k_cnt_rnr: Constant::new(CNT_RNR.to_bits()),
            k_cnt_dup: Constant::new(CNT_DUP.to_bits()),
            k_cnt_malformed: Constant::new(CNT_MALFORMED.to_bits()),
            k_cnt_unknown_qp: Constant::new(CNT_UNKNOWN_QP.to_bits()),
            unused_resp_qp_valid: Default::default(),
            unused_resp_qpn: Default::default(),
            unused_req_qpn: Default::default(),
            unused_req_rtx_qpn: Default::default(),
            unused_rx_cnt_per_qp: Default::default(),
            unused_rx_cnt_qpn: Default::default(),
            unused_tx_qpn: Default::default(),
        }
    }
}

impl<const QA: usize> Logic for CounterEvents<QA> {
    #[hdl_gen]
    fn update(&mut self) {
        clock!(
            self,
            clock,
            ev_malformed,
            ev_unknown_qp,
            ev_duplicates,
            ev_dma_faults
        );
        self.ev_malformed.reset.next = self.reset.val();
        self.ev_unknown_qp.reset.next = self.reset.val();
        self.ev_duplicates.reset.next = self.reset.val();
        self.ev_dma_faults.reset.next = self.reset.val();

        self.incs.rx_frames.next = self.rx_frame.val();
        self.incs.rx_bytes.next = self.rx_frame.val();
        self.incs.icrc_drops.next = self.drop_icrc.val();
        self.ev_malformed.a.next = self.drop_malformed.val();
        self.ev_malformed.b.next = self.drop_mac.val();
        self.ev_malformed.c.next = self.drop_overflow.val();
        self.ev_malformed.d.next =
            self.rx_cnt.valid.val() & (self.rx_cnt.code.val() == self.k_cnt_malformed.val());
        self.incs.malformed_drops.next = self.ev_malformed.y.val();
        self.ev_unknown_qp.a.next = self.drop_ip.val();
        self.ev_unknown_qp.b.next = self.resp.unknown_qp_drops.val();
        self.ev_unknown_qp.c.next =
            self.rx_cnt.valid.val() & (self.rx_cnt.code.val() == self.k_cnt_unknown_qp.val());
        self.ev_unknown_qp.d.next = false;
        self.incs.unknown_qp_drops.next = self.ev_unknown_qp.y.val();
        self.incs.naks_received.next =
            self.rx_cnt.valid.val() & (self.rx_cnt.code.val() == self.k_cnt_nak.val());
        self.incs.rnr_naks_received.next =
            self.rx_cnt.valid.val() & (self.rx_cnt.code.val() == self.k_cnt_rnr.val());
        self.incs.tx_frames.next = self.tx.frame.val();
        self.incs.tx_bytes.next = self.tx.frame.val();
        self.ev_duplicates.a.next = self.resp.duplicates.val();
        self.ev_duplicates.b.next =
            self.rx_cnt.valid.val() & (self.rx_cnt.code.val() == self.k_cnt_dup.val());
        self.ev_duplicates.c.next = false;
        self.ev_duplicates.d.next = false;
        self.incs.duplicates.next = self.ev_duplicates.y.val();
        self.incs.psn_seq_drops.next = self.resp.psn_seq_drops.val();
        self.incs.naks_sent.next = self.resp.naks_sent.val();
        self.incs.rnr_naks_sent.next = self.resp.rnr_naks_sent.val();
        self.ev_dma_faults.a.next = self.resp.dma_faults.val();
        self.ev_dma_faults.b.next = self.cpl_dma_fault.val();
        self.ev_dma_faults.c.next = self.req.dma_faults.val();
        self.ev_dma_faults.d.next = false;
        self.incs.dma_faults.next = self.ev_dma_faults.y.val();
        self.incs.retransmits.next = self.req.retransmits.val();
        self.incs.ack_timeouts.next = self.req.ack_timeouts.val();
        self.cnt.inc.next = self.incs.y.val();
        self.cnt.rx_bytes.next = self.rx_bytes.val();
        self.cnt.tx_bytes.next = self.tx.bytes.val();
        self.unused_tx_qpn.next = self.tx.qpn.val();

        self.unused_resp_qp_valid.next = self.resp.qp_valid.val();
        self.unused_resp_qpn.next = self.resp.qpn.val();
        self.unused_req_qpn.next = self.req.qpn.val();
        self.unused_req_rtx_qpn.next = self.req.rtx_qpn.val();
        self.unused_rx_cnt_per_qp.next = self.rx_cnt.per_qp.val();
        self.unused_rx_cnt_qpn.next = self.rx_cnt.qpn.val();
    }
}

/// The global counters' increment vector (bit `c` = [`Counter`] `c`) from named pulses.
/// Hand-written Verilog: `#[hdl_gen]` cannot build a vector from single bits.
#[derive(LogicBlock, Default)]
pub struct CounterIncs {
    pub tx_frames: Signal<In, Bit>,
    /// Adds the byte count the register file takes beside the vector (`cnt_tx_bytes`).
    pub tx_bytes: Signal<In, Bit>,
    pub rx_frames: Signal<In, Bit>,
    /// Adds the byte count the register file takes beside the vector (`cnt_rx_bytes`).
    pub rx_bytes: Signal<In, Bit>,
    pub icrc_drops: Signal<In, Bit>,
    pub malformed_drops: Signal<In, Bit>,
    pub psn_seq_drops: Signal<In, Bit>,
    pub duplicates: Signal<In, Bit>,
    pub naks_sent: Signal<In, Bit>,
    pub rnr_naks_sent: Signal<In, Bit>,
    pub naks_received: Signal<In, Bit>,
    pub rnr_naks_received: Signal<In, Bit>,
    pub dma_faults: Signal<In, Bit>,
    pub unknown_qp_drops: Signal<In, Bit>,
    pub retransmits: Signal<In, Bit>,
    pub ack_timeouts: Signal<In, Bit>,
    pub y: Signal<Out, Bits<{ Counter::COUNT }>>,
}

impl CounterIncs {
    /// The inputs wired today, with their counters and Verilog names.
    fn inputs(&self) -> [(Counter, bool, &'static str); 16] {
        [
            (Counter::TxFrames, self.tx_frames.val(), "tx_frames"),
            (Counter::TxBytes, self.tx_bytes.val(), "tx_bytes"),
            (Counter::RxFrames, self.rx_frames.val(), "rx_frames"),
            (Counter::RxBytes, self.rx_bytes.val(), "rx_bytes"),
            (Counter::IcrcDrops, self.icrc_drops.val(), "icrc_drops"),
            (
                Counter::MalformedDrops,
                self.malformed_drops.val(),
                "malformed_drops",
            ),
            (
                Counter::PsnSeqDrops,
                self.psn_seq_drops.val(),
                "psn_seq_drops",
            ),
            (Counter::Duplicates, self.duplicates.val(), "duplicates"),
            (Counter::NaksSent, self.naks_sent.val(), "naks_sent"),
            (
                Counter::RnrNaksSent,
                self.rnr_naks_sent.val(),
                "rnr_naks_sent",
            ),
            (
                Counter::NaksReceived,
                self.naks_received.val(),
                "naks_received",
            ),
            (
                Counter::RnrNaksReceived,
                self.rnr_naks_received.val(),
                "rnr_naks_received",
            ),
            (Counter::DmaFaults, self.dma_faults.val(), "dma_faults"),
            (
                Counter::UnknownQpDrops,
                self.unknown_qp_drops.val(),
                "unknown_qp_drops",
            ),
            (Counter::Retransmits, self.retransmits.val(), "retransmits"),
            (
                Counter::AckTimeouts,
                self.ack_timeouts.val(),
                "ack_timeouts",
            ),
        ]
    }
}

impl Logic for CounterIncs {
    fn update(&mut self) {
        let mut y = Bits::<{ Counter::COUNT }>::default();
        for (c, v, _) in self.inputs() {
            y = y.replace_bit(c as usize, v);
        }
        self.y.next = y;
    }

    fn connect(&mut self) {
        self.y.connect();
    }

    fn hdl(&self) -> Verilog {
        let mut v = format!("always @(*) begin\n    y = {}'h0;\n", Counter::COUNT);
        for (c, _, name) in self.inputs() {
            v.push_str(&format!("    y[{}] = {name};\n", c as usize));
        }
        v.push_str("end\n");
        Verilog::Custom(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::Bench;

    type Uut = CounterEvents<8>;

    /// Drives one cycle of pulses (`set`), then returns the increment vector of each of
    /// the next `n` cycles (inputs low after the first).
    fn incs_after(set: impl Fn(&mut Uut), n: usize) -> Vec<u64> {
        let mut b = Bench::new(Uut::default(), |u| &mut u.clock);
        b.uut.reset.next = true;
        b.tick();
        b.uut.reset.next = false;
        set(&mut b.uut);
        let mut out = Vec::new();
        for _ in 0..n {
            b.settle();
            out.push(b.uut.cnt.inc.val().to_u64());
            b.tick();
            b.uut.rx_frame.next = false;
            b.uut.drop_mac.next = false;
            b.uut.drop_ip.next = false;
            b.uut.tx.frame.next = false;
            b.uut.cpl_dma_fault.next = false;
            b.uut.resp.dma_faults.next = false;
            b.uut.resp.unknown_qp_drops.next = false;
            b.uut.req.dma_faults.next = false;
            b.uut.req.retransmits.next = false;
            b.uut.rx_cnt.valid.next = false;
        }
        out
    }

    fn bit(c: Counter) -> u64 {
        1 << c as u32
    }

    /// Each source lands on its counter; the requester's receive codes on theirs.
    #[test]
    fn each_pulse_lands_on_its_counter() {
        let got = incs_after(
            |u| {
                u.rx_frame.next = true;
                u.tx.frame.next = true;
                u.req.retransmits.next = true;
            },
            2,
        );
        let want = bit(Counter::RxFrames)
            | bit(Counter::RxBytes)
            | bit(Counter::TxFrames)
            | bit(Counter::TxBytes)
            | bit(Counter::Retransmits);
        assert_eq!(got, vec![want, 0]);
        for (code, c) in [
            (CNT_NAK, Counter::NaksReceived),
            (CNT_RNR, Counter::RnrNaksReceived),
            (CNT_DUP, Counter::Duplicates),
            (CNT_MALFORMED, Counter::MalformedDrops),
            (CNT_UNKNOWN_QP, Counter::UnknownQpDrops),
        ] {
            let got = incs_after(
                |u| {
                    u.rx_cnt.valid.next = true;
                    u.rx_cnt.code.next = code.into();
                },
                2,
            );
            assert_eq!(got, vec![bit(c), 0], "rx_cnt code {code}");
        }
    }

    /// Coincident pulses of one counter from several blocks each count: one a cycle.
    #[test]
    fn coincident_pulses_all_count() {
        let got = incs_after(
            |u| {
                u.cpl_dma_fault.next = true;
                u.resp.dma_faults.next = true;
                u.req.dma_faults.next = true;
                u.drop_ip.next = true;
                u.resp.unknown_qp_drops.next = true;
            },
            4,
        );
        let (f, q) = (bit(Counter::DmaFaults), bit(Counter::UnknownQpDrops));
        assert_eq!(got, vec![f | q, f | q, f, 0]);
    }

    #[test]
    fn counter_inputs_land_on_their_counter_bits() {
        let mut c = CounterIncs::default();
        c.connect_all();
        c.rx_frames.next = true;
        c.unknown_qp_drops.next = true;
        assert!(simulate(&mut c, 10));
        c.rx_bytes.next = true;
        assert!(simulate(&mut c, 10));
        let want = 1u64 << Counter::RxFrames as u32
            | 1u64 << Counter::RxBytes as u32
            | 1u64 << Counter::UnknownQpDrops as u32;
        assert_eq!(c.y.val().to_u64(), want);
    }
}
