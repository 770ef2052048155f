//! RoCE v2 wire formats: zero-copy header views and plain-value representations.
//!
//! Every header has two layers:
//! - a `…Packet<T: AsRef<[u8]>>` view over a byte buffer, with getters, and setters where
//!   `T: AsMut<[u8]>`. `new_unchecked` wraps any buffer; `check_len` proves that every
//!   accessor is in bounds; `new_checked` does both. No accessor of a view that passed
//!   `check_len` can panic; on an unchecked view they may.
//! - a `…Repr` with the values a sender chooses, `parse` (which validates) and `emit` (which
//!   panics only if the buffer is shorter than `buffer_len()`).
//!
//! Values that follow from the payload (IPv4 total length and header checksum, UDP length,
//! BTH pad count, ICRC) are not `Repr` fields: `emit` derives them and `parse` checks them.
//! [`RoceRepr`] puts a whole frame together: Ethernet / IPv4 / UDP 4791 / BTH / extension
//! headers / payload / pad / ICRC.
//!
//! There is no policy here: PSN windows, ACK/NAK decisions, retries and QP state belong to the
//! model and the RTL.

use core::ops::Range;

mod aeth;
mod arp;
mod atomic_ack_eth;
mod atomic_eth;
mod bth;
mod deth;
mod ethernet;
mod icrc;
mod ieth;
mod immdt;
mod ipv4;
mod opcode;
mod psn;
mod reth;
mod roce;
mod udp;

pub use aeth::{
    rnr_timer_ns, NakCode, Packet as AethPacket, Repr as AethRepr, Syndrome, CREDITS_INVALID,
    HEADER_LEN as AETH_LEN,
};
pub use arp::{
    ArpError, Operation as ArpOperation, Packet as ArpPacket, Repr as ArpRepr,
    PACKET_LEN as ARP_PACKET_LEN,
};
pub use atomic_ack_eth::{
    Packet as AtomicAckEthPacket, Repr as AtomicAckEthRepr, HEADER_LEN as ATOMIC_ACK_ETH_LEN,
};
pub use atomic_eth::{
    Packet as AtomicEthPacket, Repr as AtomicEthRepr, HEADER_LEN as ATOMIC_ETH_LEN,
};
pub use bth::{
    Packet as BthPacket, Repr as BthRepr, DEFAULT_PKEY, HEADER_LEN as BTH_LEN, TRANSPORT_VERSION,
};
pub use deth::{Packet as DethPacket, Repr as DethRepr, HEADER_LEN as DETH_LEN};
pub use ethernet::{
    Address as EthernetAddress, EtherType, Frame as EthernetFrame, Repr as EthernetRepr,
    HEADER_LEN as ETHERNET_HEADER_LEN,
};
pub use icrc::{compute_icrc, verify_icrc, ICRC_LEN};
pub use ieth::{Packet as IethPacket, Repr as IethRepr, HEADER_LEN as IETH_LEN};
pub use immdt::{Packet as ImmDtPacket, Repr as ImmDtRepr, HEADER_LEN as IMMDT_LEN};
pub use ipv4::{
    Address as Ipv4Address, IpProtocol, Packet as Ipv4Packet, Repr as Ipv4Repr,
    HEADER_LEN as IPV4_HEADER_LEN,
};
pub use opcode::{ExtHeader, Opcode};
pub use psn::Psn;
pub use reth::{Packet as RethPacket, Repr as RethRepr, HEADER_LEN as RETH_LEN};
pub use roce::{pad_count, ExtHeaders, RoceRepr, ROCE_HEADERS_LEN};
pub use udp::{Packet as UdpPacket, Repr as UdpRepr, HEADER_LEN as UDP_HEADER_LEN, ROCE_V2_PORT};

/// Why a frame or header was refused. Every parse reports the first check that failed, so a
/// receiver can count ICRC drops (`BadIcrc`) apart from malformed frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The buffer ends before the header, or before the length a header field announces.
    #[error("buffer too short")]
    Truncated,
    /// The Ethernet type is not IPv4 (or, when emitting a RoCE frame, was not set to IPv4).
    #[error("ethertype {0:#06x} is not IPv4")]
    BadEthertype(u16),
    #[error("IP version {0} is not 4")]
    BadIpVersion(u8),
    /// IHL above 5: IPv4 options are not accepted (RoCE senders never use them).
    #[error("IPv4 header of {0} bytes: options are not supported")]
    IpOptionsUnsupported(usize),
    /// IHL below 5, or a total length shorter than the header.
    #[error("IPv4 header or total length is inconsistent")]
    BadIpLength,
    #[error("bad IPv4 header checksum")]
    BadIpChecksum,
    /// RoCE packets are never fragmented and there is no reassembly here.
    #[error("IPv4 fragment")]
    IpFragmented,
    #[error("IP protocol {0} is not UDP")]
    NotUdp(u8),
    #[error("UDP destination port {0} is not RoCE v2 (4791)")]
    NotRoce(u16),
    /// The UDP length is below 8 or disagrees with the IPv4 payload length.
    #[error("UDP length is inconsistent")]
    BadUdpLength,
    #[error("BTH transport version {0} is not 0")]
    BadTransportVersion(u8),
    #[error("unknown or unsupported opcode {0:#04x}")]
    UnknownOpcode(u8),
    /// The BTH pad count is not the one that makes `len` (payload plus pad) a whole number
    /// of 4-byte words, or exceeds `len`.
    #[error("pad count {pad} does not fit {len} bytes of payload and pad")]
    BadPadCount { pad: u8, len: usize },
    /// Bytes follow the headers of an opcode that carries no payload.
    #[error("{0} carries no payload")]
    PayloadNotAllowed(Opcode),
    /// `expected` is the ICRC computed over the received bytes, `got` the one in the frame.
    #[error("bad ICRC: computed {expected:#010x}, frame has {got:#010x}")]
    BadIcrc { expected: u32, got: u32 },
    /// A caller asked to emit extension headers other than those the opcode defines.
    #[error("extension headers do not match opcode {0}")]
    HeadersDoNotMatchOpcode(Opcode),
    /// The frame would exceed the 65535-byte IPv4 total length.
    #[error("payload of {0} bytes does not fit one IPv4 packet")]
    PayloadTooLong(usize),
}

/// A byte range of a header field.
type Field = Range<usize>;

/// Reads a big-endian unsigned integer of up to 8 bytes.
fn get_be(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0, |acc, &b| (acc << 8) | u64::from(b))
}

/// Writes the low `bytes.len()` bytes of `value`, big-endian.
fn put_be(bytes: &mut [u8], value: u64) {
    for (i, b) in bytes.iter_mut().rev().enumerate() {
        *b = (value >> (8 * i)) as u8;
    }
}

/// Copies a field of known length into an array.
fn get_array<const N: usize>(bytes: &[u8]) -> [u8; N] {
    let mut out = [0; N];
    out.copy_from_slice(bytes);
    out
}

#[cfg(test)]
mod tests {
    //! Cross-header tests: no parser may panic on any input.
    use super::*;

    /// Deterministic xorshift64*, so failures reproduce without extra crates.
    pub(crate) struct XorShift(u64);

    impl XorShift {
        pub(crate) fn new(seed: u64) -> Self {
            XorShift(seed | 1)
        }
        pub(crate) fn next(&mut self) -> u64 {
            let mut x = self.0;
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            self.0 = x;
            x.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        pub(crate) fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
        pub(crate) fn bytes(&mut self, len: usize) -> Vec<u8> {
            (0..len).map(|_| self.next() as u8).collect()
        }
    }

    #[test]
    fn get_put_be() {
        let mut b = [0u8; 8];
        put_be(&mut b[1..4], 0xAB_CDEF);
        assert_eq!(b, [0, 0xAB, 0xCD, 0xEF, 0, 0, 0, 0]);
        assert_eq!(get_be(&b[1..4]), 0xAB_CDEF);
        put_be(&mut b, u64::MAX - 1);
        assert_eq!(get_be(&b), u64::MAX - 1);
        put_be(&mut b[..2], 0x1_2345); // high bits are dropped
        assert_eq!(get_be(&b[..2]), 0x2345);
    }

    /// Runs every checked constructor, every `Repr::parse` and `RoceRepr::parse` on `bytes`.
    /// Accessors are exercised through `Display`, which reads every field.
    fn exercise(bytes: &[u8]) {
        macro_rules! view {
            ($packet:ident, $repr:ident) => {
                if let Ok(p) = $packet::new_checked(bytes) {
                    let _ = format!("{p}");
                    if let Ok(r) = $repr::parse(&p) {
                        let _ = format!("{r}");
                    }
                }
                let _ = $repr::parse(&$packet::new_unchecked(bytes));
            };
        }
        view!(EthernetFrame, EthernetRepr);
        view!(Ipv4Packet, Ipv4Repr);
        view!(UdpPacket, UdpRepr);
        view!(BthPacket, BthRepr);
        view!(RethPacket, RethRepr);
        view!(AethPacket, AethRepr);
        view!(AtomicEthPacket, AtomicEthRepr);
        view!(AtomicAckEthPacket, AtomicAckEthRepr);
        view!(ImmDtPacket, ImmDtRepr);
        view!(IethPacket, IethRepr);
        view!(DethPacket, DethRepr);
        if let Ok(p) = Ipv4Packet::new_checked(bytes) {
            let _ = p.payload();
            let _ = p.verify_checksum();
        }
        if let Ok(p) = UdpPacket::new_checked(bytes) {
            let _ = p.payload();
        }
        let _ = compute_icrc(bytes);
        let _ = verify_icrc(bytes);
        if let Ok((repr, payload)) = RoceRepr::parse(bytes) {
            let _ = format!("{repr}");
            // Whatever parses must emit again and parse back to the same values (the bytes
            // may differ: trailing Ethernet padding and reserved bits are not kept).
            let mut out = Vec::new();
            repr.emit(payload, &mut out).expect("a parsed repr emits");
            let (again, again_payload) = RoceRepr::parse(&out).expect("re-parse");
            assert_eq!(again, repr);
            assert_eq!(again_payload, payload);
        }
    }

    #[test]
    fn parsers_never_panic_on_random_bytes() {
        let mut rng = XorShift::new(0x5EED_0001);
        for _ in 0..20_000 {
            let len = rng.below(160);
            let bytes = rng.bytes(len);
            exercise(&bytes);
        }
    }

    #[test]
    fn parsers_never_panic_on_truncated_or_mutated_frames() {
        let mut rng = XorShift::new(0x5EED_0002);
        for (repr, payload) in roce::tests::samples() {
            let mut frame = Vec::new();
            repr.emit(&payload, &mut frame).unwrap();
            // Every truncation, as a frame and as each header region.
            for len in 0..=frame.len() {
                exercise(&frame[..len]);
                exercise(&frame[ETHERNET_HEADER_LEN.min(len)..len]);
                exercise(&frame[(ETHERNET_HEADER_LEN + IPV4_HEADER_LEN).min(len)..len]);
            }
            // Random mutations: byte overwrites, including the length and IHL fields.
            for _ in 0..300 {
                let mut bad = frame.clone();
                for _ in 0..1 + rng.below(4) {
                    let at = rng.below(bad.len());
                    bad[at] = rng.next() as u8;
                }
                if rng.below(4) == 0 {
                    bad.truncate(rng.below(bad.len() + 1));
                }
                exercise(&bad);
            }
        }
    }

    #[test]
    fn single_bit_errors_are_caught_where_the_wire_protects() {
        // Bits no check covers: the MAC addresses (the FCS guards them, and it is stripped),
        // the UDP checksum (sent as 0, masked from the ICRC), and the FECN/BECN/reserved byte
        // of the BTH (masked so switches can mark congestion).
        let mut rng = XorShift::new(0x5EED_0003);
        for (repr, payload) in roce::tests::samples() {
            let mut frame = Vec::new();
            repr.emit(&payload, &mut frame).unwrap();
            let udp_csum = ETHERNET_HEADER_LEN + IPV4_HEADER_LEN + 6;
            let bth_byte4 = ETHERNET_HEADER_LEN + IPV4_HEADER_LEN + UDP_HEADER_LEN + 4;
            for _ in 0..200 {
                let bit = rng.below(frame.len() * 8);
                let at = bit / 8;
                let mut bad = frame.clone();
                bad[at] ^= 1 << (bit % 8);
                let unprotected =
                    at < 12 || at == udp_csum || at == udp_csum + 1 || at == bth_byte4;
                if !unprotected {
                    assert!(
                        RoceRepr::parse(&bad).is_err(),
                        "flip of bit {bit} not caught"
                    );
                }
            }
        }
    }
}
