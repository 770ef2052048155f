//! `TxArbiter`: shares the TX frame builder ([`HdrBuild`](crate::tx::hdr_build::HdrBuild))
//! between the responder (ACK/NAK, READ responses, atomic ACKs) and the requester
//! (requests): strict priority to responses, whole frames, no bubble between back-to-back
//! records.
//!
//! # Interface
//!
//! ```text
//!  rsp_pkt, rsp_pay ------+   record: strict priority, held while offered   +--> pkt
//!                         +-->  order FIFO (source of each payload record) --+
//!  req_pkt, req_pay ------+   payload: from the source at the FIFO head      +--> pay
//! ```
//!
//! - `rsp_pkt`, `req_pkt` (`RecordServer`s), `pkt` (a `RecordClient`): packet records as one bus of
//!   [`RECORD_BITS`] bits, the fields of [`RECORD_FIELDS`] from bit 0 up (the `s_pkt_*`
//!   ports of `HdrBuild`; [`pack`] builds one).
//! - `rsp_pay`, `req_pay` (`PayloadServer`s), `pay` (a `PayloadClient`): each source's
//!   payload streams, one per record with a non-zero `payload_len`, in that source's record
//!   order. Out, a payload follows the order in which records were passed on, so frames are
//!   never mixed.
//! - Arbitration: a response record goes first whenever one is offered; once `pkt.valid`
//!   is up with a record it stays with that record until it is taken (AXI rule), even if
//!   a response arrives meanwhile. A record can be passed every cycle (back-to-back ACKs).
//! - Payload order: a 4-entry FIFO holds the source of every record passed on with a
//!   payload whose last beat (`tlast`) has not gone yet; records wait while it is full
//!   (the builder holds at most two records ahead of the frame it sends, so it never fills
//!   in practice).
//! - Combinational from input to output (no register on the data): a multiplexer for the
//!   record bus and one for the payload stream.

use crate::bus::record::{record_layout, PayloadClient, PayloadServer, RecordClient, RecordServer};
use crate::prelude::*;

/// The fields of a packed record, from bit 0 up: (name, bits). Names are the `s_pkt_*`
/// ports of `HdrBuild`. `src_qp` is the sending (local) QP, not put on the wire: `HdrBuild`
/// reports it with the frame (`tx_cnt.qpn`) for the per-QP `TxFrames`/`TxBytes`.
pub const RECORD_FIELDS: &[(&str, usize)] = record_layout::FIELDS;

pub use crate::bus::record::RECORD_BITS;

/// Bit offset of a field in the packed record.
pub const fn field_offset(name: &str) -> usize {
    record_layout::offset(name)
}

/// Offset of `payload_len` (the arbiter reads it to know whether a payload follows).
const PAYLOAD_LEN_AT: usize = 618;
const _: () = assert!(field_offset("payload_len") == PAYLOAD_LEN_AT);

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
    pub rsp_pkt: RecordServer,
    pub rsp_pay: PayloadServer,
    // --- requester ---
    pub req_pkt: RecordServer,
    pub req_pay: PayloadServer,
    // --- to the frame builder ---
    pub pkt: RecordClient,
    pub pay: PayloadClient,

    c0_16: Constant<Bits<16>>,
    c0_3: Constant<Bits<3>>,
    c1_3: Constant<Bits<3>>,
    c4_3: Constant<Bits<3>>,
    c1_4: Constant<Bits<4>>,

    /// `pkt.valid` was up and not taken: keep the same source.
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
        TxArbiter {
            clock: Default::default(),
            reset: Default::default(),
            rsp_pkt: Default::default(),
            rsp_pay: Default::default(),
            req_pkt: Default::default(),
            req_pay: Default::default(),
            pkt: Default::default(),
            pay: Default::default(),
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
            self.grant_req.next = !self.rsp_pkt.valid.val();
        }
        if self.grant_req.val() {
            self.offered.next = self.req_pkt.valid.val();
            self.plen.next = self.req_pkt.data.val().get_bits::<16>(618);
        } else {
            self.offered.next = self.rsp_pkt.valid.val();
            self.plen.next = self.rsp_pkt.data.val().get_bits::<16>(618);
        }
        self.full.next = self.count.q.val() == self.c4_3.val();
        // The outputs towards the builder come from statements of their own (no local
        // shared with the ready logic), so Verilator sees no loop through the builder.
        if self.locked.q.val() {
            self.fwd_req.next = self.locked_req.q.val();
        } else {
            self.fwd_req.next = !self.rsp_pkt.valid.val();
        }
        if self.fwd_req.val() {
            self.pkt.valid.next =
                self.req_pkt.valid.val() & (self.count.q.val() != self.c4_3.val());
            self.pkt.data.next = self.req_pkt.data.val();
        } else {
            self.pkt.valid.next =
                self.rsp_pkt.valid.val() & (self.count.q.val() != self.c4_3.val());
            self.pkt.data.next = self.rsp_pkt.data.val();
        }
        self.take.next = self.offered.val() & !self.full.val() & self.pkt.ready.val();
        self.rsp_pkt.ready.next = !self.grant_req.val() & !self.full.val() & self.pkt.ready.val();
        self.req_pkt.ready.next = self.grant_req.val() & !self.full.val() & self.pkt.ready.val();
        self.locked.d.next = self.offered.val() & !self.full.val() & !self.pkt.ready.val();
        self.locked_req.d.next = self.grant_req.val();

        // ---- payload: from the source of the oldest payload record ----
        self.head_valid.next = self.count.q.val() != self.c0_3.val();
        self.head_req.next = self.order.q.val().get_bit(0);
        if self.order.q.val().get_bit(0) {
            self.pay.tvalid.next =
                (self.count.q.val() != self.c0_3.val()) & self.req_pay.tvalid.val();
            self.pay.tdata.next = self.req_pay.tdata.val();
            self.pay.tlast.next = self.req_pay.tlast.val();
        } else {
            self.pay.tvalid.next =
                (self.count.q.val() != self.c0_3.val()) & self.rsp_pay.tvalid.val();
            self.pay.tdata.next = self.rsp_pay.tdata.val();
            self.pay.tlast.next = self.rsp_pay.tlast.val();
        }
        self.rsp_pay.tready.next =
            self.head_valid.val() & !self.head_req.val() & self.pay.tready.val();
        self.req_pay.tready.next =
            self.head_valid.val() & self.head_req.val() & self.pay.tready.val();

        // ---- order FIFO: pop the head on a payload's last beat, push a payload record ----
        self.pop.next = self.head_valid.val()
            & self.pay.tready.val()
            & ((self.head_req.val() & self.req_pay.tvalid.val() & self.req_pay.tlast.val())
                | (!self.head_req.val() & self.rsp_pay.tvalid.val() & self.rsp_pay.tlast.val()));
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
