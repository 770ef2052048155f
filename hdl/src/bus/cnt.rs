//! Counter events of the sequencers: each pulse counts once globally and, where it names a
//! QP, once for that QP in `QpCounters` (the model's per-QP statistics).

use crate::prelude::*;

port_group! {
    /// The responder's counter pulses (`regs::Counter` names), for QP `qpn` when
    /// `qp_valid` (an unknown QP's drop counts globally only).
    client RespCntClient = "RespCntClient";
    /// `QpCounters`' side of [`RespCntClient`].
    server RespCntServer = "RespCntServer";
    generics <const QA: usize>;
    out {
        qp_valid: Bit,
        qpn: Bits<QA>,
        duplicates: Bit,
        psn_seq_drops: Bit,
        naks_sent: Bit,
        rnr_naks_sent: Bit,
        unknown_qp_drops: Bit,
        dma_faults: Bit,
    }
    in {}
}

port_group! {
    /// The requester's counter pulses: DmaFaults (an SQ slot or a payload could not be
    /// read, or a READ/atomic result could not be written) and AckTimeouts (the ACK timer
    /// of a QP with ops outstanding expired), QP `qpn`; Retransmits (a request record
    /// taken whose PSN was sent before, the model's `note_request_sent`), QP `rtx_qpn`.
    client ReqCntClient = "ReqCntClient";
    /// `QpCounters`' side of [`ReqCntClient`].
    server ReqCntServer = "ReqCntServer";
    generics <const QA: usize>;
    out {
        qpn: Bits<QA>,
        dma_faults: Bit,
        ack_timeouts: Bit,
        retransmits: Bit,
        rtx_qpn: Bits<QA>,
    }
    in {}
}

port_group! {
    /// The requester's receive counter pulses: `code` is `ReqRxCheck`'s `CNT_*`
    /// (NaksReceived, RnrNaksReceived, Duplicates, MalformedDrops) or `CNT_UNKNOWN_QP`
    /// (UnknownQpDrops), counted globally, and for QP `qpn` too when `per_qp`.
    client RxCntClient = "RxCntClient";
    /// `QpCounters`' side of [`RxCntClient`] (it counts the `per_qp` pulses).
    server RxCntServer = "RxCntServer";
    generics <const QA: usize>;
    out {
        valid: Bit,
        code: Bits<3>,
        per_qp: Bit,
        qpn: Bits<QA>,
    }
    in {}
}

port_group! {
    /// A frame sent (`TxPath`, as its last beat leaves): its length in bytes (Ethernet
    /// header to ICRC) and its sending QP (the record's `src_qp`, 24 bits as on the wire),
    /// for `TxFrames` and `TxBytes`, globally and per QP.
    client TxCntClient = "TxCntClient";
    /// The counters' side of [`TxCntClient`].
    server TxCntServer = "TxCntServer";
    out {
        frame: Bit,
        bytes: Bits<16>,
        qpn: Bits<24>,
    }
    in {}
}
