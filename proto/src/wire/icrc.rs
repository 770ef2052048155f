//! The RoCE v2 invariant CRC (ICRC) for IPv4.
//!
//! CRC-32 (the Ethernet polynomial, reflected, initial value and final XOR all ones; what
//! `crc32fast` computes) over:
//! 1. eight bytes of 0xFF, standing in for the InfiniBand LRH;
//! 2. the IPv4 header with TOS, TTL and header checksum set to all ones (routers change them);
//! 3. the UDP header with its checksum set to all ones;
//! 4. the BTH with byte 4 (FECN, BECN, reserved) set to all ones (switches mark congestion);
//! 5. everything else up to the ICRC: extension headers, payload, pad.
//!
//! The CRC's final value goes on the wire least significant byte first (`to_le_bytes`).

use super::{bth, ipv4, udp, WireError};

/// Length of the ICRC trailer.
pub const ICRC_LEN: usize = 4;

/// Bytes of the fixed headers that contain masked fields: IPv4 (no options), UDP, BTH.
const MASKED_LEN: usize = ipv4::HEADER_LEN + udp::HEADER_LEN + bth::HEADER_LEN;
const UDP_AT: usize = ipv4::HEADER_LEN;
const BTH_AT: usize = UDP_AT + udp::HEADER_LEN;

/// Offsets within the IPv4 packet of the bytes the ICRC treats as all ones.
const MASKED: [usize; 7] = [
    ipv4::field::DSCP_ECN,
    ipv4::field::TTL,
    ipv4::field::CHECKSUM.start,
    ipv4::field::CHECKSUM.start + 1,
    UDP_AT + udp::field::CHECKSUM.start,
    UDP_AT + udp::field::CHECKSUM.start + 1,
    BTH_AT + bth::field::FECN_BECN,
];

/// Computes the ICRC of an IPv4 RoCE packet, given from the IPv4 header up to (not including)
/// the ICRC. The header must have no options, as everything this crate parses or emits.
///
/// Never panics: a buffer shorter than the headers is hashed as it is, masked where the
/// masked bytes exist. Only the first 40 bytes are copied; the rest is hashed in place.
pub fn compute_icrc(ip_packet_without_icrc: &[u8]) -> u32 {
    let split = ip_packet_without_icrc.len().min(MASKED_LEN);
    let (headers, rest) = ip_packet_without_icrc.split_at(split);
    let mut masked = [0u8; MASKED_LEN];
    let masked = &mut masked[..split];
    masked.copy_from_slice(headers);
    for &at in MASKED.iter().filter(|&&at| at < split) {
        masked[at] = 0xFF;
    }

    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&[0xFF; 8]);
    hasher.update(masked);
    hasher.update(rest);
    hasher.finalize()
}

/// Checks the ICRC at the end of an IPv4 RoCE packet (IPv4 header up to and including the
/// ICRC). On a mismatch, `expected` is the ICRC computed over the packet and `got` the one
/// it carries.
pub fn verify_icrc(ip_packet: &[u8]) -> Result<(), WireError> {
    let Some(covered_len) = ip_packet.len().checked_sub(ICRC_LEN) else {
        return Err(WireError::Truncated);
    };
    let (covered, trailer) = ip_packet.split_at(covered_len);
    let got = u32::from_le_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
    let expected = compute_icrc(covered);
    if expected != got {
        return Err(WireError::BadIcrc { expected, got });
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// RoCE v2 CNP captured on a ConnectX-4 Lx, from scapy's `test/contrib/roce.uts`
    /// ("RoCE CNP captured on ConnectX-4 Lx"). Its wire ICRC is 82 fd 00 2a.
    pub(crate) const CX4_CNP_FRAME: [u8; 74] = [
        0xe4, 0x1d, 0x2d, 0xab, 0x2b, 0xc2, 0x7c, 0xfe, 0x90, 0x64, 0x3b, 0x32, 0x08,
        0x00, // Ethernet
        0x45, 0xc2, 0x00, 0x3c, 0x71, 0x8c, 0x40, 0x00, 0x40, 0x11, 0x91, 0x61, 0x0a, 0x00, 0x11,
        0x01, 0x0a, 0x00, 0x12, 0x01, // IPv4
        0x00, 0x00, 0x12, 0xb7, 0x00, 0x28, 0x00, 0x00, // UDP
        0x81, 0x00, 0xff, 0xff, 0x40, 0x00, 0x01, 0x18, 0x00, 0x00, 0x00, 0x00, // BTH
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, // CNP reserved
        0x82, 0xfd, 0x00, 0x2a, // ICRC
    ];

    /// scapy's UC example from the same file ("RoCE layer"): UC SEND ONLY, pad 2; scapy's
    /// `icrc` field is 0x78f353f3, i.e. wire bytes 78 f3 53 f3. The UDP checksum is non-zero
    /// (0xaca2) there, which the ICRC masks.
    const UC_IP_PACKET: [u8; 64] = [
        0x45, 0x01, 0x00, 0x40, 0x04, 0x78, 0x40, 0x00, 0x40, 0x11, 0xb4, 0xd5, 0xc0, 0xa8, 0x00,
        0x07, 0xc0, 0xa8, 0x00, 0x07, // IPv4
        0xc0, 0x00, 0x12, 0xb7, 0x00, 0x2c, 0xac, 0xa2, // UDP
        0x24, 0x60, 0xff, 0xff, 0x00, 0x00, 0x00, 0xd3, 0x00, 0xcf, 0x17, 0x10, // BTH
        b'F', b'0', 0x81, 0x8b, 0xe2, 0x89, b'5', 0xd9, 0x0e, 0x9a, 0x95, b'P', b'T', 0x01, 0xbe,
        0x88, b'^', b'P', 0x00, 0x00, // payload and pad
        0x78, 0xf3, 0x53, 0xf3, // ICRC
    ];

    /// A bit-at-a-time reflected CRC-32, independent of crc32fast.
    fn bitwise_crc32(data: impl IntoIterator<Item = u8>) -> u32 {
        let mut crc = u32::MAX;
        for byte in data {
            crc ^= u32::from(byte);
            for _ in 0..8 {
                crc = if crc & 1 != 0 {
                    (crc >> 1) ^ 0xEDB8_8320
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }

    /// The ICRC by the book, written out without the module's tables.
    fn reference_icrc(ip_packet_without_icrc: &[u8]) -> u32 {
        let mut copy = ip_packet_without_icrc.to_vec();
        for at in [1, 8, 10, 11, 20 + 6, 20 + 7, 20 + 8 + 4] {
            copy[at] = 0xFF;
        }
        bitwise_crc32([0xFF; 8].into_iter().chain(copy))
    }

    #[test]
    fn connectx4_cnp_vector() {
        let ip = &CX4_CNP_FRAME[14..];
        let icrc = compute_icrc(&ip[..ip.len() - 4]);
        assert_eq!(icrc.to_le_bytes(), [0x82, 0xfd, 0x00, 0x2a]);
        assert_eq!(verify_icrc(ip), Ok(()));
        assert_eq!(reference_icrc(&ip[..ip.len() - 4]), icrc);
    }

    #[test]
    fn scapy_uc_vector() {
        let icrc = compute_icrc(&UC_IP_PACKET[..60]);
        assert_eq!(icrc.to_le_bytes(), [0x78, 0xf3, 0x53, 0xf3]);
        assert_eq!(verify_icrc(&UC_IP_PACKET), Ok(()));
    }

    #[test]
    fn bitwise_reference_agrees_on_standard_check_value() {
        // The CRC-32 check value of "123456789".
        assert_eq!(bitwise_crc32(*b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn matches_the_reference_on_random_packets() {
        let mut rng = crate::wire::tests::XorShift::new(0x1C_0C);
        for _ in 0..500 {
            let len = MASKED_LEN + rng.below(300);
            let packet = rng.bytes(len);
            assert_eq!(compute_icrc(&packet), reference_icrc(&packet));
        }
    }

    #[test]
    fn masked_fields_do_not_count_and_others_do() {
        let ip = &CX4_CNP_FRAME[14..CX4_CNP_FRAME.len() - 4];
        let icrc = compute_icrc(ip);
        for at in 0..ip.len() {
            let mut changed = ip.to_vec();
            changed[at] ^= 0x5A;
            let masked = MASKED.contains(&at);
            assert_eq!(compute_icrc(&changed) == icrc, masked, "byte {at}");
        }
    }

    #[test]
    fn corruption_is_reported_with_both_values() {
        let mut ip = CX4_CNP_FRAME[14..].to_vec();
        ip[40] ^= 1; // a CNP reserved byte
        let expected = compute_icrc(&ip[..ip.len() - 4]);
        assert_eq!(
            verify_icrc(&ip),
            Err(WireError::BadIcrc {
                expected,
                got: 0x2a00_fd82
            })
        );
        assert_eq!(verify_icrc(&ip[..3]), Err(WireError::Truncated));
    }

    #[test]
    fn short_inputs_do_not_panic() {
        let ip = &CX4_CNP_FRAME[14..];
        for len in 0..ip.len() {
            let _ = compute_icrc(&ip[..len]);
            let _ = verify_icrc(&ip[..len]);
        }
    }
}
