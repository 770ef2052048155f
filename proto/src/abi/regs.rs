//! The BAR0 register map. Every register is 32 bits wide, little-endian, 4-byte aligned.
//!
//! ```text
//! 0x0000 .. 0x003f  identification and capabilities (read-only)
//! 0x0040 .. 0x005f  port address and control (read/write), cycle counter (read-only)
//! 0x0100 .. 0x016f  command mailbox: 16 argument words, 8 result words, opcode, status
//! 0x0400 .. 0x04ff  global counters, 64 bits each (LO then HI)
//! 0x10000 ..        per-QP doorbells: SQ producer index at +0, RQ producer index at +4
//! 0x18000 ..        per-CQ doorbells: CQ consumer index
//! ```

/// Size of BAR0 in bytes.
pub const BAR0_SIZE: u32 = 0x2_0000;

/// The value of [`ID`]: ASCII "RoCE" read as a little-endian word.
pub const DEVICE_ID: u32 = u32::from_le_bytes(*b"RoCE");
/// ABI version reported in [`ABI_VERSION`]: major in bits 31:16, minor in 15:0. A driver
/// refuses a device whose major differs from its own.
pub const ABI_MAJOR: u16 = 1;
pub const ABI_MINOR: u16 = 0;

/// Device identification, [`DEVICE_ID`].
pub const ID: u32 = 0x0000;
/// ABI version, `major << 16 | minor`.
pub const ABI_VERSION: u32 = 0x0004;
/// Number of QP contexts; valid QPNs are 2 .. MAX_QP (0 and 1 are reserved as in IB).
pub const MAX_QP: u32 = 0x0010;
/// Number of CQs; valid CQNs are 0 .. MAX_CQ.
pub const MAX_CQ: u32 = 0x0014;
/// Number of MR table entries; an MR index is 0 .. MAX_MR.
pub const MAX_MR: u32 = 0x0018;
/// Number of protection domains; valid PDNs are 0 .. MAX_PD.
pub const MAX_PD: u32 = 0x001c;
/// Largest ring, as log2 of its entry count (applies to SQ, RQ and CQ).
pub const MAX_LOG_RING: u32 = 0x0020;
/// Scatter/gather entries per WQE: send in bits 7:0, receive in bits 15:8.
pub const MAX_SGE: u32 = 0x0024;
/// Largest inline payload of a send WQE, in bytes.
pub const MAX_INLINE: u32 = 0x0028;
/// Outstanding RDMA READ/atomic requests per QP: as initiator in bits 7:0, as target in 15:8.
pub const MAX_RD_ATOMIC: u32 = 0x002c;
/// Core clock in MHz (cycle counts convert to time with it).
pub const CLOCK_MHZ: u32 = 0x0030;

/// Our MAC address, bytes 2..6 in wire order packed big-endian (byte 2 in bits 31:24).
pub const MAC_LO: u32 = 0x0040;
/// Our MAC address, bytes 0..2 in wire order packed big-endian in bits 15:0.
pub const MAC_HI: u32 = 0x0044;
/// Our IPv4 address, big-endian packed (first octet in bits 31:24). GID = ::ffff:<ip>.
pub const IPV4_ADDR: u32 = 0x0048;
/// Control: bit 0 enables the port (frames are dropped while it is clear).
pub const CONTROL: u32 = 0x004c;
pub const CONTROL_ENABLE: u32 = 1;
/// Free-running core-clock cycle counter, low word; reading it latches [`CYCLE_HI`].
pub const CYCLE_LO: u32 = 0x0050;
/// High word of the cycle counter as latched by the last read of [`CYCLE_LO`].
pub const CYCLE_HI: u32 = 0x0054;

/// Command argument word `i` (0..16).
pub const fn cmd_arg(i: u32) -> u32 {
    0x0100 + 4 * i
}
pub const CMD_ARG_WORDS: u32 = 16;
/// Command result word `i` (0..8).
pub const fn cmd_out(i: u32) -> u32 {
    0x0140 + 4 * i
}
pub const CMD_OUT_WORDS: u32 = 8;
/// Writing a [`super::cmd::CmdOpcode`] here starts the command with the current arguments.
pub const CMD_OPCODE: u32 = 0x0160;
/// Command status: [`CMD_STATUS_BUSY`] while a command runs, then the
/// [`super::cmd::CmdStatus`] in bits 7:0.
pub const CMD_STATUS: u32 = 0x0164;
pub const CMD_STATUS_BUSY: u32 = 1 << 31;

/// Global counter `c`, low word; reading it latches the high word at `+4`.
pub const fn counter_lo(c: Counter) -> u32 {
    0x0400 + 8 * c as u32
}
pub const fn counter_hi(c: Counter) -> u32 {
    counter_lo(c) + 4
}

/// SQ doorbell of QP `qpn`: write the new SQ producer index (free-running u32 count of
/// WQEs posted). Several WQEs may be posted before one doorbell write.
pub const fn sq_doorbell(qpn: u32) -> u32 {
    0x1_0000 + 8 * qpn
}
/// RQ doorbell of QP `qpn`: write the new RQ producer index.
pub const fn rq_doorbell(qpn: u32) -> u32 {
    sq_doorbell(qpn) + 4
}
/// Highest QP count the doorbell area can address.
pub const DOORBELL_QPS: u32 = 0x1000;
/// CQ doorbell of CQ `cqn`: write the CQ consumer index (free-running u32 count of CQEs
/// the host has consumed), which releases their slots to the device.
pub const fn cq_doorbell(cqn: u32) -> u32 {
    0x1_8000 + 4 * cqn
}
/// Highest CQ count the doorbell area can address.
pub const DOORBELL_CQS: u32 = 0x2000;

/// The counters a device keeps, globally (registers above) and per QP (command
/// `QUERY_QP_COUNTERS`, same indices). A frame dropped before its QP is known counts only
/// globally.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum Counter {
    /// Frames sent (any RoCE frame: requests, responses, ACKs).
    TxFrames = 0,
    /// Bytes sent, Ethernet header to ICRC inclusive (no FCS).
    TxBytes = 1,
    /// Frames received and accepted by the parser.
    RxFrames = 2,
    /// Bytes received in accepted frames.
    RxBytes = 3,
    /// Request packets sent again (go-back-N after a NAK or a timeout).
    Retransmits = 4,
    /// Frames dropped because the ICRC did not match.
    IcrcDrops = 5,
    /// Frames dropped as malformed (bad IP/UDP headers, truncated, unknown opcode).
    MalformedDrops = 6,
    /// Request packets dropped as out of sequence (a PSN sequence-error NAK may follow).
    PsnSeqDrops = 7,
    /// Duplicate request packets (re-ACKed, READs re-executed, atomics replayed).
    Duplicates = 8,
    /// NAKs sent (sequence error, invalid request, remote access, remote operational).
    NaksSent = 9,
    /// NAKs received.
    NaksReceived = 10,
    /// RNR NAKs sent.
    RnrNaksSent = 11,
    /// RNR NAKs received.
    RnrNaksReceived = 12,
    /// Local ACK timeouts that caused a retransmission.
    AckTimeouts = 13,
    /// DMA accesses the IOMMU refused.
    DmaFaults = 14,
    /// Frames for a QP that does not exist or cannot receive in its state, or whose IPv4
    /// source is not the QP's peer.
    UnknownQpDrops = 15,
}

impl Counter {
    pub const COUNT: usize = 16;
    pub const ALL: [Counter; Counter::COUNT] = [
        Counter::TxFrames,
        Counter::TxBytes,
        Counter::RxFrames,
        Counter::RxBytes,
        Counter::Retransmits,
        Counter::IcrcDrops,
        Counter::MalformedDrops,
        Counter::PsnSeqDrops,
        Counter::Duplicates,
        Counter::NaksSent,
        Counter::NaksReceived,
        Counter::RnrNaksSent,
        Counter::RnrNaksReceived,
        Counter::AckTimeouts,
        Counter::DmaFaults,
        Counter::UnknownQpDrops,
    ];
    /// The counter's name in reports (snake case).
    pub fn name(self) -> &'static str {
        match self {
            Counter::TxFrames => "tx_frames",
            Counter::TxBytes => "tx_bytes",
            Counter::RxFrames => "rx_frames",
            Counter::RxBytes => "rx_bytes",
            Counter::Retransmits => "retransmits",
            Counter::IcrcDrops => "icrc_drops",
            Counter::MalformedDrops => "malformed_drops",
            Counter::PsnSeqDrops => "psn_seq_drops",
            Counter::Duplicates => "duplicates",
            Counter::NaksSent => "naks_sent",
            Counter::NaksReceived => "naks_received",
            Counter::RnrNaksSent => "rnr_naks_sent",
            Counter::RnrNaksReceived => "rnr_naks_received",
            Counter::AckTimeouts => "ack_timeouts",
            Counter::DmaFaults => "dma_faults",
            Counter::UnknownQpDrops => "unknown_qp_drops",
        }
    }
}

/// Packs a MAC address into ([`MAC_HI`], [`MAC_LO`]) register values.
pub fn mac_to_regs(mac: [u8; 6]) -> (u32, u32) {
    (
        u32::from_be_bytes([0, 0, mac[0], mac[1]]),
        u32::from_be_bytes([mac[2], mac[3], mac[4], mac[5]]),
    )
}

/// Unpacks ([`MAC_HI`], [`MAC_LO`]) register values into a MAC address.
pub fn mac_from_regs(hi: u32, lo: u32) -> [u8; 6] {
    let h = hi.to_be_bytes();
    let l = lo.to_be_bytes();
    [h[2], h[3], l[0], l[1], l[2], l[3]]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_do_not_overlap() {
        assert!(cmd_out(CMD_OUT_WORDS) <= CMD_OPCODE);
        assert!(cmd_arg(CMD_ARG_WORDS) <= cmd_out(0));
        assert!(counter_hi(Counter::UnknownQpDrops) < 0x0500);
        assert!(rq_doorbell(DOORBELL_QPS - 1) < cq_doorbell(0));
        assert!(cq_doorbell(DOORBELL_CQS - 1) < BAR0_SIZE);
    }

    #[test]
    fn counters_are_numbered_in_order() {
        for (i, c) in Counter::ALL.iter().enumerate() {
            assert_eq!(*c as usize, i);
        }
    }

    #[test]
    fn mac_round_trip() {
        let mac = [0x02, 0x11, 0x22, 0x33, 0x44, 0x55];
        let (hi, lo) = mac_to_regs(mac);
        assert_eq!(hi, 0x0211);
        assert_eq!(lo, 0x2233_4455);
        assert_eq!(mac_from_regs(hi, lo), mac);
    }

    #[test]
    fn id_spells_roce() {
        assert_eq!(DEVICE_ID.to_le_bytes(), *b"RoCE");
    }
}
