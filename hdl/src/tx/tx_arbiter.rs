//! `TxArbiter`: shares the TX frame builder ([`HdrBuild`](crate::tx::hdr_build::HdrBuild))
//! between the responder (ACK/NAK, READ responses, atomic ACKs) and the requester
//! (requests): strict priority to responses, whole frames, no bubble between back-to-back
//! records.
//!
//! # Interface
//!
//! ```text
//!  s_rsp_pkt, s_rsp_pay --+   record: strict priority, held while offered   +--> m_pkt
//!                         +-->  order FIFO (source of each payload record) --+
//!  s_req_pkt, s_req_pay --+   payload: from the source at the FIFO head      +--> m_pay
//! ```
//!
//! - `s_rsp_pkt_*`, `s_req_pkt_*`, `m_pkt_*` (valid/ready): packet records as one bus of
//!   [`RECORD_BITS`] bits, the fields of [`RECORD_FIELDS`] from bit 0 up (the `s_pkt_*`
//!   ports of `HdrBuild`; [`pack`] builds one).
//! - `s_rsp_pay_*`, `s_req_pay_*`, `m_pay_*` (valid/ready, `tdata`, `tlast`): each source's
//!   payload streams, one per record with a non-zero `payload_len`, in that source's record
//!   order. Out, a payload follows the order in which records were passed on, so frames are
//!   never mixed.
//! - Arbitration: a response record goes first whenever one is offered; once `m_pkt_valid`
//!   is up with a record it stays with that record until it is taken (AXI rule), even if
//!   a response arrives meanwhile. A record can be passed every cycle (back-to-back ACKs).
//! - Payload order: a 4-entry FIFO holds the source of every record passed on with a
//!   payload whose last beat (`tlast`) has not gone yet; records wait while it is full
//!   (the builder holds at most two records ahead of the frame it sends, so it never fills
//!   in practice).
//! - Combinational from input to output (no register on the data): a multiplexer for the
//!   record bus and one for the payload stream.

use crate::prelude::*;

use crate::common::icrc::DATA_BITS;

/// The fields of a packed record, from bit 0 up: (name, bits). Names are the `s_pkt_*`
/// ports of `HdrBuild`. `src_qp` is the sending (local) QP, not put on the wire: `HdrBuild`
/// reports it with the frame (`m_tx_qpn`) for the per-QP `TxFrames`/`TxBytes`.
pub const RECORD_FIELDS: [(&str, usize); 21] = [
    ("dst_mac", 48),
    ("src_mac", 48),
    ("src_ip", 32),
    ("dst_ip", 32),
    ("udp_sport", 16),
    ("opcode", 8),
    ("se", 1),
    ("ack_req", 1),
    ("dest_qp", 24),
    ("psn", 24),
    ("va", 64),
    ("rkey", 32),
    ("dma_len", 32),
    ("swap_add", 64),
    ("compare", 64),
    ("orig", 64),
    ("syndrome", 8),
    ("msn", 24),
    ("imm", 32),
    ("payload_len", 16),
    ("src_qp", 24),
];

/// Bits of a packed record.
pub const RECORD_BITS: usize = 658;

/// Bit offset of a field in the packed record.
pub fn field_offset(name: &str) -> usize {
    let mut at = 0;
    for (n, w) in RECORD_FIELDS {
        if n == name {
            return at;
        }
        at += w;
    }
    panic!("no record field {name}")
}

/// Offset of `payload_len` (the arbiter reads it to know whether a payload follows).
const PAYLOAD_LEN_AT: usize = 618;

/// Packs field values (same order as [`RECORD_FIELDS`]) into a record bus.
pub fn pack(values: &[u64; 21]) -> Bits<RECORD_BITS> {
    let mut bits = [false; RECORD_BITS];
    let mut at = 0;
    for ((_, w), v) in RECORD_FIELDS.iter().zip(values) {
        for i in 0..*w {
            bits[at + i] = (v >> i) & 1 == 1;
        }
        at += w;
    }
    Bits::Long(bits.into())
}

/// The arbiter; see the [module docs](self).
#[derive(LogicBlock)]
pub struct TxArbiter {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    // --- responder: records and payload (first priority) ---
    pub s_rsp_pkt_valid: Signal<In, Bit>,
    pub s_rsp_pkt_ready: Signal<Out, Bit>,
    pub s_rsp_pkt_data: Signal<In, Bits<RECORD_BITS>>,
    pub s_rsp_pay_tdata: Signal<In, Bits<DATA_BITS>>,
    pub s_rsp_pay_tlast: Signal<In, Bit>,
    pub s_rsp_pay_tvalid: Signal<In, Bit>,
    pub s_rsp_pay_tready: Signal<Out, Bit>,
    // --- requester ---
    pub s_req_pkt_valid: Signal<In, Bit>,
    pub s_req_pkt_ready: Signal<Out, Bit>,
    pub s_req_pkt_data: Signal<In, Bits<RECORD_BITS>>,
    pub s_req_pay_tdata: Signal<In, Bits<DATA_BITS>>,
    pub s_req_pay_tlast: Signal<In, Bit>,
    pub s_req_pay_tvalid: Signal<In, Bit>,
    pub s_req_pay_tready: Signal<Out, Bit>,
    // --- to the frame builder ---
    pub m_pkt_valid: Signal<Out, Bit>,
    pub m_pkt_ready: Signal<In, Bit>,
    pub m_pkt_data: Signal<Out, Bits<RECORD_BITS>>,
    pub m_pay_tdata: Signal<Out, Bits<DATA_BITS>>,
    pub m_pay_tlast: Signal<Out, Bit>,
    pub m_pay_tvalid: Signal<Out, Bit>,
    pub m_pay_tready: Signal<In, Bit>,

    c0_16: Constant<Bits<16>>,
    c0_3: Constant<Bits<3>>,
    c1_3: Constant<Bits<3>>,
    c4_3: Constant<Bits<3>>,
    c1_4: Constant<Bits<4>>,

    /// `m_pkt_valid` was up and not taken: keep the same source.
    locked: DFF<Bit>,
    locked_req: DFF<Bit>,
    /// Source of each outstanding payload record (1 = requester), head in bit 0.
    order: DFF<Bits<4>>,
    count: DFF<Bits<3>>,

    grant_req: Signal<Local, Bit>,
    fwd_req: Signal<Local, Bit>,
    offered: Signal<Local, Bit>,
    /// `payload_len` of the granted record.
    plen: Signal<Local, Bits<16>>,
    full: Signal<Local, Bit>,
    take: Signal<Local, Bit>,
    push: Signal<Local, Bit>,
    pop: Signal<Local, Bit>,
    head_req: Signal<Local, Bit>,
    head_valid: Signal<Local, Bit>,
    order_mid: Signal<Local, Bits<4>>,
    count_mid: Signal<Local, Bits<3>>,
}

impl Default for TxArbiter {
    fn default() -> Self {
        TxArbiter::new()
    }
}

impl TxArbiter {
    pub fn new() -> TxArbiter {
        assert_eq!(
            RECORD_FIELDS.iter().map(|f| f.1).sum::<usize>(),
            RECORD_BITS,
            "record width"
        );
        assert_eq!(field_offset("payload_len"), PAYLOAD_LEN_AT);
        TxArbiter {
            clock: Default::default(),
            reset: Default::default(),
            s_rsp_pkt_valid: Default::default(),
            s_rsp_pkt_ready: Default::default(),
            s_rsp_pkt_data: Default::default(),
            s_rsp_pay_tdata: Default::default(),
            s_rsp_pay_tlast: Default::default(),
            s_rsp_pay_tvalid: Default::default(),
            s_rsp_pay_tready: Default::default(),
            s_req_pkt_valid: Default::default(),
            s_req_pkt_ready: Default::default(),
            s_req_pkt_data: Default::default(),
            s_req_pay_tdata: Default::default(),
            s_req_pay_tlast: Default::default(),
            s_req_pay_tvalid: Default::default(),
            s_req_pay_tready: Default::default(),
            m_pkt_valid: Default::default(),
            m_pkt_ready: Default::default(),
            m_pkt_data: Default::default(),
            m_pay_tdata: Default::default(),
            m_pay_tlast: Default::default(),
            m_pay_tvalid: Default::default(),
            m_pay_tready: Default::default(),
            c0_16: Constant::new(0.into()),
            c0_3: Constant::new(0.into()),
            c1_3: Constant::new(1.into()),
            c4_3: Constant::new(4.into()),
            c1_4: Constant::new(1.into()),
            locked: Default::default(),
            locked_req: Default::default(),
            order: Default::default(),
            count: Default::default(),
            grant_req: Default::default(),
            fwd_req: Default::default(),
            offered: Default::default(),
            plen: Default::default(),
            full: Default::default(),
            take: Default::default(),
            push: Default::default(),
            pop: Default::default(),
            head_req: Default::default(),
            head_valid: Default::default(),
            order_mid: Default::default(),
            count_mid: Default::default(),
        }
    }
}

impl Logic for TxArbiter {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, locked, locked_req, order, count);

        // ---- records: responses first, held while offered ----
        if self.locked.q.val() {
            self.grant_req.next = self.locked_req.q.val();
        } else {
            self.grant_req.next = !self.s_rsp_pkt_valid.val();
        }
        if self.grant_req.val() {
            self.offered.next = self.s_req_pkt_valid.val();
            self.plen.next = self.s_req_pkt_data.val().get_bits::<16>(618);
        } else {
            self.offered.next = self.s_rsp_pkt_valid.val();
            self.plen.next = self.s_rsp_pkt_data.val().get_bits::<16>(618);
        }
        self.full.next = self.count.q.val() == self.c4_3.val();
        // The outputs towards the builder come from statements of their own (no local
        // shared with the ready logic), so Verilator sees no loop through the builder.
        if self.locked.q.val() {
            self.fwd_req.next = self.locked_req.q.val();
        } else {
            self.fwd_req.next = !self.s_rsp_pkt_valid.val();
        }
        if self.fwd_req.val() {
            self.m_pkt_valid.next =
                self.s_req_pkt_valid.val() & (self.count.q.val() != self.c4_3.val());
            self.m_pkt_data.next = self.s_req_pkt_data.val();
        } else {
            self.m_pkt_valid.next =
                self.s_rsp_pkt_valid.val() & (self.count.q.val() != self.c4_3.val());
            self.m_pkt_data.next = self.s_rsp_pkt_data.val();
        }
        self.take.next = self.offered.val() & !self.full.val() & self.m_pkt_ready.val();
        self.s_rsp_pkt_ready.next =
            !self.grant_req.val() & !self.full.val() & self.m_pkt_ready.val();
        self.s_req_pkt_ready.next =
            self.grant_req.val() & !self.full.val() & self.m_pkt_ready.val();
        self.locked.d.next = self.offered.val() & !self.full.val() & !self.m_pkt_ready.val();
        self.locked_req.d.next = self.grant_req.val();

        // ---- payload: from the source of the oldest payload record ----
        self.head_valid.next = self.count.q.val() != self.c0_3.val();
        self.head_req.next = self.order.q.val().get_bit(0);
        if self.order.q.val().get_bit(0) {
            self.m_pay_tvalid.next =
                (self.count.q.val() != self.c0_3.val()) & self.s_req_pay_tvalid.val();
            self.m_pay_tdata.next = self.s_req_pay_tdata.val();
            self.m_pay_tlast.next = self.s_req_pay_tlast.val();
        } else {
            self.m_pay_tvalid.next =
                (self.count.q.val() != self.c0_3.val()) & self.s_rsp_pay_tvalid.val();
            self.m_pay_tdata.next = self.s_rsp_pay_tdata.val();
            self.m_pay_tlast.next = self.s_rsp_pay_tlast.val();
        }
        self.s_rsp_pay_tready.next =
            self.head_valid.val() & !self.head_req.val() & self.m_pay_tready.val();
        self.s_req_pay_tready.next =
            self.head_valid.val() & self.head_req.val() & self.m_pay_tready.val();

        // ---- order FIFO: pop the head on a payload's last beat, push a payload record ----
        self.pop.next = self.head_valid.val()
            & self.m_pay_tready.val()
            & ((self.head_req.val() & self.s_req_pay_tvalid.val() & self.s_req_pay_tlast.val())
                | (!self.head_req.val()
                    & self.s_rsp_pay_tvalid.val()
                    & self.s_rsp_pay_tlast.val()));
        self.push.next = self.take.val() & (self.plen.val() != self.c0_16.val());
        if self.pop.val() {
            self.order_mid.next = self.order.q.val() >> self.c1_4.val();
            self.count_mid.next = self.count.q.val() - self.c1_3.val();
        } else {
            self.order_mid.next = self.order.q.val();
            self.count_mid.next = self.count.q.val();
        }
        if self.push.val() {
            if self.grant_req.val() {
                self.order.d.next =
                    self.order_mid.val() | (self.c1_4.val() << self.count_mid.val());
            } else {
                self.order.d.next =
                    self.order_mid.val() & !(self.c1_4.val() << self.count_mid.val());
            }
            self.count.d.next = self.count_mid.val() + self.c1_3.val();
        } else {
            self.order.d.next = self.order_mid.val();
            self.count.d.next = self.count_mid.val();
        }

        if self.reset.val() {
            self.locked.d.next = false;
            self.count.d.next = self.c0_3.val();
        }
    }
}
