//! The responder's jobs for its units: the common header of a job's response packets
//! ([`JobHdrClient`]: addressing, the QPs, PSN and MSN) and each kind's arguments (a READ's
//! [`ReadArgsClient`], an atomic's [`AtomicArgsClient`]; a replay has none). These carry
//! data only: a job's valid/ready handshake stays beside them, because it passes
//! `RspOrder`'s gate (which pushes the job's tag) and a `JobSlice` on its way, while the
//! data goes from the responder, which holds it until the job is taken, to the unit
//! directly.

use crate::prelude::*;

port_group! {
    /// A job's response header: the peer's and our MAC and IPv4 addresses, the UDP source
    /// port, the peer's QP, our QP (`Q` bits, reported on failures), the request's PSN and
    /// the MSN for the AETHs.
    client JobHdrClient = "JobHdrClient";
    /// A unit's side of [`JobHdrClient`].
    server JobHdrServer = "JobHdrServer";
    generics <const Q: usize>;
    out {
        dst_mac: Bits<48>,
        src_mac: Bits<48>,
        src_ip: Bits<32>,
        dst_ip: Bits<32>,
        udp_sport: Bits<16>,
        dest_qp: Bits<24>,
        qpn: Bits<Q>,
        psn: Bits<24>,
        msn: Bits<24>,
    }
    in {}
}

port_group! {
    /// A READ job's arguments: the translated address, the length (0..=2^31) and the IB
    /// MTU code (1..=5).
    client ReadArgsClient = "ReadArgsClient";
    /// `ReadResp`'s side of [`ReadArgsClient`].
    server ReadArgsServer = "ReadArgsServer";
    out {
        iova: Bits<64>,
        len: Bits<32>,
        pmtu: Bits<3>,
    }
    in {}
}

port_group! {
    /// An atomic job's arguments: the translated address, compare-and-swap (else
    /// fetch-and-add), the swap or add operand, the compare operand.
    client AtomicArgsClient = "AtomicArgsClient";
    /// `AtomicUnit`'s side of [`AtomicArgsClient`].
    server AtomicArgsServer = "AtomicArgsServer";
    out {
        iova: Bits<64>,
        compare_swap: Bit,
        swap_add: Bits<64>,
        compare: Bits<64>,
    }
    in {}
}
