//! The register file's ports: BAR0 register access ([`RegClient`], the host's side), the
//! port configuration it holds ([`PortCfgClient`]), the counter increments it adds
//! ([`CntIncClient`]) and the doorbells it passes on ([`DbClient`] for SQ/RQ doorbells,
//! [`CqDbClient`] for CQ doorbells). `RegFile` serves or sends each; `Control` passes them
//! out.

use crate::prelude::*;
use rocenic_proto::abi::regs::BAR0_SIZE;

/// Bits of a BAR0 byte offset.
pub const REG_ADDR_BITS: usize = 17;
const _: () = assert!(1u32 << REG_ADDR_BITS == BAR0_SIZE);

port_group! {
    /// A 32-bit register access at a BAR0 byte offset (4-byte aligned): a write (`write`,
    /// `wdata`) or a read, whose data comes later with `rdata_valid`, one per read, in
    /// order.
    client RegClient = "RegClient";
    /// The register file's side of [`RegClient`].
    server RegServer = "RegServer";
    out {
        valid: Bit,
        write: Bit,
        addr: Bits<REG_ADDR_BITS>,
        wdata: Bits<32>,
    }
    in {
        ready: Bit,
        rdata_valid: Bit,
        rdata: Bits<32>,
    }
}

port_group! {
    /// The port configuration: our MAC address (`mac_hi` bytes 0..2, `mac_lo` bytes 2..6,
    /// as `MAC_HI`/`MAC_LO`), our IPv4 address and `CONTROL_ENABLE` (frames are dropped
    /// while clear).
    client PortCfgClient = "PortCfgClient";
    /// The datapath's side of [`PortCfgClient`].
    server PortCfgServer = "PortCfgServer";
    out {
        mac_lo: Bits<32>,
        mac_hi: Bits<16>,
        ipv4: Bits<32>,
        port_enable: Bit,
    }
    in {}
}

port_group! {
    /// A cycle's counter events: a bit per `abi::regs::Counter` (`inc`), and the bytes
    /// `TxBytes` and `RxBytes` add when their bits are set.
    client CntIncClient = "CntIncClient";
    /// The register file's side of [`CntIncClient`].
    server CntIncServer = "CntIncServer";
    out {
        inc: Bits<16>,
        tx_bytes: Bits<16>,
        rx_bytes: Bits<16>,
    }
    in {}
}

port_group! {
    /// An SQ or RQ doorbell (`kind`: `regfile::DB_SQ`, `DB_RQ`): the QP (`index`) and the
    /// host's new producer index (`value`).
    client DbClient = "DbClient";
    /// The sequencers' side of [`DbClient`].
    server DbServer = "DbServer";
    out {
        valid: Bit,
        kind: Bits<2>,
        index: Bits<16>,
        value: Bits<32>,
    }
    in {
        ready: Bit,
    }
}

port_group! {
    /// One queue's doorbell, as `DbSplit` sends it to its sequencer: the QP and the
    /// host's new producer index of its SQ (to the requester) or RQ (to the responder).
    client QDbClient = "QDbClient";
    /// The sequencer's side of [`QDbClient`].
    server QDbServer = "QDbServer";
    generics <const QA: usize>;
    out {
        valid: Bit,
        qpn: Bits<QA>,
        pi: Bits<32>,
    }
    in {
        ready: Bit,
    }
}

port_group! {
    /// A CQ doorbell: the CQ and the host's new consumer index.
    client CqDbClient = "CqDbClient";
    /// The completion engine's side of [`CqDbClient`].
    server CqDbServer = "CqDbServer";
    out {
        valid: Bit,
        cqn: Bits<16>,
        ci: Bits<32>,
    }
    in {
        ready: Bit,
    }
}
