//! The received packets: `RxFifo`'s header record of every accepted frame ([`RxHdrClient`],
//! the fields of the table in `rx_fifo`'s docs) and its payload stream ([`RxPayClient`]),
//! and the two views of a header the engine's consumers take after `RxDispatch`: a request's
//! ([`ReqHdrClient`], for the responder) and a response's ([`RspHdrClient`], for the
//! requester). Each with a valid/ready handshake; a header whose `payload_len` is not zero
//! is followed by that many bytes on the payload stream.

use crate::common::icrc::{BEAT_BYTES, DATA_BITS};
use crate::prelude::*;

port_group! {
    /// A frame's header record (`RxFifo`'s): numbers as on the wire; fields the opcode
    /// does not carry hold whatever bytes are at their place (`has_*` say which count).
    client RxHdrClient = "RxHdrClient";
    /// The side that takes [`RxHdrClient`]'s records.
    server RxHdrServer = "RxHdrServer";
    out {
        valid: Bit,
        opcode: Bits<8>,
        solicited: Bit,
        migreq: Bit,
        pad: Bits<2>,
        pkey: Bits<16>,
        fecn: Bit,
        becn: Bit,
        dest_qp: Bits<24>,
        ack_req: Bit,
        psn: Bits<24>,
        src_mac: Bits<48>,
        src_ip: Bits<32>,
        dst_ip: Bits<32>,
        udp_sport: Bits<16>,
        reth_va: Bits<64>,
        reth_rkey: Bits<32>,
        reth_dma_len: Bits<32>,
        aeth_syndrome: Bits<8>,
        aeth_msn: Bits<24>,
        atomic_va: Bits<64>,
        atomic_rkey: Bits<32>,
        atomic_swap: Bits<64>,
        atomic_compare: Bits<64>,
        atomic_ack_orig: Bits<64>,
        immdt: Bits<32>,
        ieth: Bits<32>,
        payload_len: Bits<16>,
        has_reth: Bit,
        has_aeth: Bit,
        has_atomic_eth: Bit,
        has_atomic_ack_eth: Bit,
        has_immdt: Bit,
        has_ieth: Bit,
        has_payload: Bit,
    }
    in {
        ready: Bit,
    }
}

port_group! {
    /// A received payload: byte 0 in lane 0, 64 bytes a beat, pad and ICRC removed, `tkeep`
    /// contiguous and partial only on the `tlast` beat.
    client RxPayClient = "RxPayClient";
    /// The side that takes [`RxPayClient`]'s beats.
    server RxPayServer = "RxPayServer";
    out {
        tdata: Bits<DATA_BITS>,
        tkeep: Bits<BEAT_BYTES>,
        tlast: Bit,
        tvalid: Bit,
    }
    in {
        tready: Bit,
    }
}

port_group! {
    /// A request's header, the fields the responder reads (an AtomicETH's VA and R_Key are
    /// in `reth_va` / `reth_rkey`, as `RxFifo` delivers them).
    client ReqHdrClient = "ReqHdrClient";
    /// The responder's side of [`ReqHdrClient`].
    server ReqHdrServer = "ReqHdrServer";
    out {
        valid: Bit,
        opcode: Bits<8>,
        dest_qp: Bits<24>,
        ack_req: Bit,
        psn: Bits<24>,
        reth_va: Bits<64>,
        reth_rkey: Bits<32>,
        reth_dma_len: Bits<32>,
        atomic_swap: Bits<64>,
        atomic_compare: Bits<64>,
        immdt: Bits<32>,
        ieth: Bits<32>,
        payload_len: Bits<16>,
        has_reth: Bit,
        has_atomic_eth: Bit,
        has_immdt: Bit,
        has_ieth: Bit,
        /// The packet's IPv4 source: a request from anyone but the QP's peer is dropped.
        src_ip: Bits<32>,
    }
    in {
        ready: Bit,
    }
}

port_group! {
    /// A response's header (ACK, NAK, READ response, atomic ACK), the fields the requester
    /// reads: the BTH's destination QP, opcode and PSN, the AETH's syndrome, the
    /// AtomicAckETH's original value, the payload length (without pad).
    client RspHdrClient = "RspHdrClient";
    /// The requester's side of [`RspHdrClient`].
    server RspHdrServer = "RspHdrServer";
    out {
        valid: Bit,
        qpn: Bits<24>,
        opcode: Bits<8>,
        psn: Bits<24>,
        has_aeth: Bit,
        syndrome: Bits<8>,
        has_atomic_ack: Bit,
        orig: Bits<64>,
        payload_len: Bits<16>,
        /// The response's IPv4 source: one from anyone but the QP's peer is dropped.
        src_ip: Bits<32>,
    }
    in {
        ready: Bit,
    }
}
