//! `RxDispatch`: the received packets to their consumers. Request headers (every opcode
//! but the RC responses, RDMA READ RESPONSE FIRST ..= ATOMIC ACKNOWLEDGE) and their
//! payloads go to the responder (`req`, `req_pay`); responses and ACKs and their payloads
//! to the requester's receive half (`rsp`, `rsp_pay`).
//!
//! ```text
//!  RxFifo hdr --+-- request --> req      (Responder)
//!               +-- response -> rsp      (Requester)
//!  RxFifo pay --+-- rsp_on ? rsp_pay : req_pay
//! ```
//!
//! A response is taken only while the responder can take a header (it has consumed every
//! earlier payload) and the requester can take it; its payload then goes to the requester
//! (`rsp_on`, set when a header with a payload is taken, cleared by its last beat) and no
//! header is taken until that last beat, so the payload stream needs no routing FIFO. It
//! cannot wedge: the requester always consumes a response's payload (written to host
//! memory or drained), and neither side waits on the RX stream for anything else.
//!
//! Every output is an expression of its own (no shared local, no local assigned twice), so
//! Verilator splits the block and sees no loop through the responder's or the requester's
//! handshakes (the responder's ready is written in the always block that reads its valid).

use crate::bus::rx::{ReqHdrClient, RspHdrClient, RxHdrServer, RxPayClient, RxPayServer};
use crate::prelude::*;
use rocenic_proto::wire::Opcode;

/// The first and the last RC response opcode (they are contiguous).
const OP_RESP_FIRST: u64 = Opcode::RdmaReadResponseFirst.code() as u64;
const OP_RESP_LAST: u64 = Opcode::AtomicAcknowledge.code() as u64;

#[derive(LogicBlock)]
pub struct RxDispatch {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// `RxFifo`'s headers and payloads.
    pub hdr: RxHdrServer,
    pub pay: RxPayServer,
    /// Requests, for the responder.
    pub req: ReqHdrClient,
    pub req_pay: RxPayClient,
    /// Responses and ACKs, for the requester.
    pub rsp: RspHdrClient,
    pub rsp_pay: RxPayClient,
    /// A response's payload is passing to the requester.
    rsp_on: DFF<Bit>,
    k_op_resp_first: Constant<Bits<8>>,
    k_op_resp_last: Constant<Bits<8>>,
    zero16: Constant<Bits<16>>,
    unused_solicited: Signal<Local, Bit>,
    unused_migreq: Signal<Local, Bit>,
    unused_pad: Signal<Local, Bits<2>>,
    unused_pkey: Signal<Local, Bits<16>>,
    unused_fecn: Signal<Local, Bit>,
    unused_becn: Signal<Local, Bit>,
    unused_src_mac: Signal<Local, Bits<48>>,
    unused_dst_ip: Signal<Local, Bits<32>>,
    unused_udp_sport: Signal<Local, Bits<16>>,
    unused_aeth_msn: Signal<Local, Bits<24>>,
    unused_atomic_va: Signal<Local, Bits<64>>,
    unused_atomic_rkey: Signal<Local, Bits<32>>,
    unused_has_payload: Signal<Local, Bit>,
}

impl Default for RxDispatch {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            reset: Default::default(),
            hdr: Default::default(),
            pay: Default::default(),
            req: Default::default(),
            req_pay: Default::default(),
            rsp: Default::default(),
            rsp_pay: Default::default(),
            rsp_on: Default::default(),
            k_op_resp_first: Constant::new(OP_RESP_FIRST.to_bits()),
            k_op_resp_last: Constant::new(OP_RESP_LAST.to_bits()),
            zero16: Constant::new(0u64.to_bits()),
            unused_solicited: Default::default(),
            unused_migreq: Default::default(),
            unused_pad: Default::default(),
            unused_pkey: Default::default(),
            unused_fecn: Default::default(),
            unused_becn: Default::default(),
            unused_src_mac: Default::default(),
            unused_dst_ip: Default::default(),
            unused_udp_sport: Default::default(),
            unused_aeth_msn: Default::default(),
            unused_atomic_va: Default::default(),
            unused_atomic_rkey: Default::default(),
            unused_has_payload: Default::default(),
        }
    }
}

impl Logic for RxDispatch {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, rsp_on);
        // ---- headers ----
        self.req.valid.next = self.hdr.valid.val()
            & !self.rsp_on.q.val()
            & !((self.hdr.opcode.val() >= self.k_op_resp_first.val())
                & (self.hdr.opcode.val() <= self.k_op_resp_last.val()));
        self.rsp.valid.next = self.hdr.valid.val()
            & !self.rsp_on.q.val()
            & self.req.ready.val()
            & ((self.hdr.opcode.val() >= self.k_op_resp_first.val())
                & (self.hdr.opcode.val() <= self.k_op_resp_last.val()));
        self.hdr.ready.next = self.req.ready.val()
            & !self.rsp_on.q.val()
            & (!((self.hdr.opcode.val() >= self.k_op_resp_first.val())
                & (self.hdr.opcode.val() <= self.k_op_resp_last.val()))
                | self.rsp.ready.val());
        // One expression, reset included (an `if` override would keep Verilator from
        // splitting this block, and the handshakes through it would form a loop).
        self.rsp_on.d.next = !self.reset.val()
            & ((self.hdr.valid.val()
                & self.req.ready.val()
                & self.rsp.ready.val()
                & !self.rsp_on.q.val()
                & ((self.hdr.opcode.val() >= self.k_op_resp_first.val())
                    & (self.hdr.opcode.val() <= self.k_op_resp_last.val()))
                & (self.hdr.payload_len.val() != self.zero16.val()))
                | (self.rsp_on.q.val()
                    & !(self.pay.tvalid.val() & self.pay.tlast.val() & self.rsp_pay.tready.val())));
        self.req.opcode.next = self.hdr.opcode.val();
        self.req.dest_qp.next = self.hdr.dest_qp.val();
        self.req.ack_req.next = self.hdr.ack_req.val();
        self.req.psn.next = self.hdr.psn.val();
        self.req.reth_va.next = self.hdr.reth_va.val();
        self.req.reth_rkey.next = self.hdr.reth_rkey.val();
        self.req.reth_dma_len.next = self.hdr.reth_dma_len.val();
        self.req.atomic_swap.next = self.hdr.atomic_swap.val();
        self.req.atomic_compare.next = self.hdr.atomic_compare.val();
        self.req.immdt.next = self.hdr.immdt.val();
        self.req.ieth.next = self.hdr.ieth.val();
        self.req.payload_len.next = self.hdr.payload_len.val();
        self.req.has_reth.next = self.hdr.has_reth.val();
        self.req.has_atomic_eth.next = self.hdr.has_atomic_eth.val();
        self.req.has_immdt.next = self.hdr.has_immdt.val();
        self.req.has_ieth.next = self.hdr.has_ieth.val();
        self.req.src_ip.next = self.hdr.src_ip.val();
        self.rsp.qpn.next = self.hdr.dest_qp.val();
        self.rsp.opcode.next = self.hdr.opcode.val();
        self.rsp.psn.next = self.hdr.psn.val();
        self.rsp.has_aeth.next = self.hdr.has_aeth.val();
        self.rsp.syndrome.next = self.hdr.aeth_syndrome.val();
        self.rsp.has_atomic_ack.next = self.hdr.has_atomic_ack_eth.val();
        self.rsp.orig.next = self.hdr.atomic_ack_orig.val();
        self.rsp.payload_len.next = self.hdr.payload_len.val();
        self.rsp.src_ip.next = self.hdr.src_ip.val();
        // ---- payloads: to the requester while `rsp_on`, else to the responder ----
        self.req_pay.tdata.next = self.pay.tdata.val();
        self.req_pay.tkeep.next = self.pay.tkeep.val();
        self.req_pay.tlast.next = self.pay.tlast.val();
        self.req_pay.tvalid.next = self.pay.tvalid.val() & !self.rsp_on.q.val();
        self.rsp_pay.tdata.next = self.pay.tdata.val();
        self.rsp_pay.tkeep.next = self.pay.tkeep.val();
        self.rsp_pay.tlast.next = self.pay.tlast.val();
        self.rsp_pay.tvalid.next = self.pay.tvalid.val() & self.rsp_on.q.val();
        self.pay.tready.next = (self.req_pay.tready.val() & !self.rsp_on.q.val())
            | (self.rsp_pay.tready.val() & self.rsp_on.q.val());
        // ---- header fields no consumer reads ----
        self.unused_solicited.next = self.hdr.solicited.val();
        self.unused_migreq.next = self.hdr.migreq.val();
        self.unused_pad.next = self.hdr.pad.val();
        self.unused_pkey.next = self.hdr.pkey.val();
        self.unused_fecn.next = self.hdr.fecn.val();
        self.unused_becn.next = self.hdr.becn.val();
        self.unused_src_mac.next = self.hdr.src_mac.val();
        self.unused_dst_ip.next = self.hdr.dst_ip.val();
        self.unused_udp_sport.next = self.hdr.udp_sport.val();
        self.unused_aeth_msn.next = self.hdr.aeth_msn.val();
        self.unused_atomic_va.next = self.hdr.atomic_va.val();
        self.unused_atomic_rkey.next = self.hdr.atomic_rkey.val();
        self.unused_has_payload.next = self.hdr.has_payload.val();
    }
}
