//! A whole RoCE v2 frame over IPv4:
//!
//! ```text
//! Ethernet 14 | IPv4 20 | UDP 8 (dst 4791) | BTH 12 | ext headers | payload | pad 0-3 | ICRC 4
//! ```
//!
//! [`RoceRepr::parse`] validates a received frame, reporting the first failed check;
//! [`RoceRepr::emit`] builds one, deriving lengths, checksum, pad and ICRC. Frames are not
//! padded to the Ethernet minimum (the MAC does that); parse accepts such padding.

use core::fmt;

use super::{
    compute_icrc, verify_icrc, AethPacket, AethRepr, AtomicAckEthPacket, AtomicAckEthRepr,
    AtomicEthPacket, AtomicEthRepr, BthPacket, BthRepr, DethRepr, EtherType, EthernetFrame,
    EthernetRepr, ExtHeader, IethPacket, IethRepr, ImmDtPacket, ImmDtRepr, IpProtocol, Ipv4Packet,
    Ipv4Repr, Opcode, RethPacket, RethRepr, UdpPacket, UdpRepr, WireError, BTH_LEN,
    ETHERNET_HEADER_LEN, ICRC_LEN, IPV4_HEADER_LEN, ROCE_V2_PORT, UDP_HEADER_LEN,
};

const IP_AT: usize = ETHERNET_HEADER_LEN;
const UDP_AT: usize = IP_AT + IPV4_HEADER_LEN;
const BTH_AT: usize = UDP_AT + UDP_HEADER_LEN;

/// Length of the Ethernet, IPv4, UDP and BTH headers together; extension headers follow.
pub const ROCE_HEADERS_LEN: usize = BTH_AT + BTH_LEN;

/// The largest IPv4 total length.
const MAX_IP_LEN: usize = u16::MAX as usize;

/// Bytes of pad after a payload of `payload_len` bytes, so that payload and pad fill a whole
/// number of 4-byte words.
pub const fn pad_count(payload_len: usize) -> u8 {
    ((4 - payload_len % 4) % 4) as u8
}

/// The extension headers between the BTH and the payload. Which ones are present is fixed by
/// the opcode (see [`Opcode::ext_headers`]); [`ExtHeaders::matches`] checks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ExtHeaders {
    pub reth: Option<RethRepr>,
    pub atomic_eth: Option<AtomicEthRepr>,
    /// Immediate data: the four wire bytes read big-endian.
    pub immdt: Option<u32>,
    /// The R_Key to invalidate.
    pub ieth: Option<u32>,
    pub aeth: Option<AethRepr>,
    pub atomic_ack_eth: Option<AtomicAckEthRepr>,
    /// UD only; never present with an RC opcode.
    pub deth: Option<DethRepr>,
}

impl ExtHeaders {
    /// Whether exactly the headers that `opcode` carries are present.
    pub fn matches(&self, opcode: Opcode) -> bool {
        self.reth.is_some() == opcode.has_reth()
            && self.atomic_eth.is_some() == opcode.has_atomic_eth()
            && self.immdt.is_some() == opcode.has_immdt()
            && self.ieth.is_some() == opcode.has_ieth()
            && self.aeth.is_some() == opcode.has_aeth()
            && self.atomic_ack_eth.is_some() == opcode.has_atomic_ack_eth()
            && self.deth.is_none()
    }

    /// Total length on the wire of the headers present.
    pub fn wire_len(&self) -> usize {
        let present = [
            (self.reth.is_some(), ExtHeader::Reth),
            (self.atomic_eth.is_some(), ExtHeader::AtomicEth),
            (self.immdt.is_some(), ExtHeader::ImmDt),
            (self.ieth.is_some(), ExtHeader::Ieth),
            (self.aeth.is_some(), ExtHeader::Aeth),
            (self.atomic_ack_eth.is_some(), ExtHeader::AtomicAckEth),
            (self.deth.is_some(), ExtHeader::Deth),
        ];
        present
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, h)| h.wire_len())
            .sum()
    }

    /// Parses the headers `opcode` carries from the start of `bytes`, in wire order.
    fn parse(opcode: Opcode, bytes: &[u8]) -> Result<ExtHeaders, WireError> {
        let mut ext = ExtHeaders::default();
        let mut at = 0;
        for &header in opcode.ext_headers() {
            let here = bytes.get(at..).unwrap_or_default();
            match header {
                ExtHeader::Reth => {
                    ext.reth = Some(RethRepr::parse(&RethPacket::new_unchecked(here))?);
                }
                ExtHeader::AtomicEth => {
                    ext.atomic_eth =
                        Some(AtomicEthRepr::parse(&AtomicEthPacket::new_unchecked(here))?);
                }
                ExtHeader::ImmDt => {
                    ext.immdt = Some(ImmDtRepr::parse(&ImmDtPacket::new_unchecked(here))?.imm_data);
                }
                ExtHeader::Ieth => {
                    ext.ieth = Some(IethRepr::parse(&IethPacket::new_unchecked(here))?.rkey);
                }
                ExtHeader::Aeth => {
                    ext.aeth = Some(AethRepr::parse(&AethPacket::new_unchecked(here))?);
                }
                ExtHeader::AtomicAckEth => {
                    ext.atomic_ack_eth = Some(AtomicAckEthRepr::parse(
                        &AtomicAckEthPacket::new_unchecked(here),
                    )?);
                }
                // No RC opcode carries a DETH; UD will parse it here.
                ExtHeader::Deth => return Err(WireError::UnknownOpcode(opcode.into())),
            }
            at += header.wire_len();
        }
        Ok(ext)
    }

    /// Writes the headers in `opcode`'s wire order. The caller has checked
    /// [`matches`](Self::matches) and sized `bytes` to [`wire_len`](Self::wire_len).
    fn emit(&self, opcode: Opcode, bytes: &mut [u8]) {
        let mut at = 0;
        for &header in opcode.ext_headers() {
            let here = &mut bytes[at..];
            match header {
                ExtHeader::Reth => {
                    if let Some(r) = self.reth {
                        r.emit(&mut RethPacket::new_unchecked(here));
                    }
                }
                ExtHeader::AtomicEth => {
                    if let Some(r) = self.atomic_eth {
                        r.emit(&mut AtomicEthPacket::new_unchecked(here));
                    }
                }
                ExtHeader::ImmDt => {
                    if let Some(imm_data) = self.immdt {
                        ImmDtRepr { imm_data }.emit(&mut ImmDtPacket::new_unchecked(here));
                    }
                }
                ExtHeader::Ieth => {
                    if let Some(rkey) = self.ieth {
                        IethRepr { rkey }.emit(&mut IethPacket::new_unchecked(here));
                    }
                }
                ExtHeader::Aeth => {
                    if let Some(r) = self.aeth {
                        r.emit(&mut AethPacket::new_unchecked(here));
                    }
                }
                ExtHeader::AtomicAckEth => {
                    if let Some(r) = self.atomic_ack_eth {
                        r.emit(&mut AtomicAckEthPacket::new_unchecked(here));
                    }
                }
                ExtHeader::Deth => {}
            }
            at += header.wire_len();
        }
    }
}

impl fmt::Display for ExtHeaders {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut sep = "";
        let mut item = |f: &mut fmt::Formatter<'_>, item: &dyn fmt::Display| {
            let r = write!(f, "{sep}{item}");
            sep = " ";
            r
        };
        if let Some(r) = &self.reth {
            item(f, r)?;
        }
        if let Some(r) = &self.atomic_eth {
            item(f, r)?;
        }
        if let Some(imm_data) = self.immdt {
            item(f, &ImmDtRepr { imm_data })?;
        }
        if let Some(rkey) = self.ieth {
            item(f, &IethRepr { rkey })?;
        }
        if let Some(r) = &self.aeth {
            item(f, r)?;
        }
        if let Some(r) = &self.atomic_ack_eth {
            item(f, r)?;
        }
        if let Some(r) = &self.deth {
            item(f, r)?;
        }
        Ok(())
    }
}

/// Every header of a RoCE v2 frame, as the sender chooses them. The UDP destination port is
/// always 4791 and the UDP checksum 0; lengths, IPv4 checksum, pad count and ICRC are derived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoceRepr {
    /// `ethertype` must be IPv4.
    pub eth: EthernetRepr,
    /// `protocol` must be UDP.
    pub ip: Ipv4Repr,
    /// Flow entropy for ECMP; any value.
    pub udp_src_port: u16,
    pub bth: BthRepr,
    pub ext: ExtHeaders,
}

impl RoceRepr {
    /// Parses and validates a frame (from the destination MAC, without FCS; trailing
    /// Ethernet padding is allowed). Returns the headers and the payload without its pad.
    ///
    /// Checks, in order, reporting the first failure: Ethernet length and ethertype IPv4;
    /// IPv4 version, header and total lengths, no options, header checksum, no fragment,
    /// protocol UDP; UDP destination port 4791, UDP length equal to the IPv4 payload; room for
    /// BTH and ICRC; BTH transport version 0; a known opcode; its extension headers; the pad
    /// count against the payload length; last, the ICRC (`WireError::BadIcrc`).
    pub fn parse(frame: &[u8]) -> Result<(RoceRepr, &[u8]), WireError> {
        let eth_frame = EthernetFrame::new_checked(frame)?;
        let eth = EthernetRepr::parse(&eth_frame)?;
        if eth.ethertype != EtherType::Ipv4 {
            return Err(WireError::BadEthertype(eth.ethertype.into()));
        }

        let ip_packet = Ipv4Packet::new_unchecked(eth_frame.payload());
        let ip = Ipv4Repr::parse(&ip_packet)?;
        if ip.protocol != IpProtocol::Udp {
            return Err(WireError::NotUdp(ip.protocol.into()));
        }
        // Without trailing Ethernet padding, as the ICRC covers it.
        let ip_bytes = &eth_frame.payload()[..usize::from(ip_packet.total_len())];

        let ip_payload = ip_packet.payload();
        let udp_packet = UdpPacket::new_unchecked(ip_payload);
        if ip_payload.len() < UDP_HEADER_LEN {
            return Err(WireError::Truncated);
        }
        if udp_packet.dst_port() != ROCE_V2_PORT {
            return Err(WireError::NotRoce(udp_packet.dst_port()));
        }
        if usize::from(udp_packet.len()) != ip_payload.len() {
            return Err(WireError::BadUdpLength);
        }
        let udp = UdpRepr::parse(&udp_packet)?;

        let udp_payload = udp_packet.payload();
        if udp_payload.len() < BTH_LEN + ICRC_LEN {
            return Err(WireError::Truncated);
        }
        let bth_packet = BthPacket::new_unchecked(udp_payload);
        let bth = BthRepr::parse(&bth_packet)?;
        let opcode = bth.opcode;
        if !opcode.is_known() {
            return Err(WireError::UnknownOpcode(opcode.into()));
        }

        // Extension headers, payload and pad, without the ICRC.
        let after_bth = bth_packet.payload();
        let after_bth = &after_bth[..after_bth.len() - ICRC_LEN];
        let ext_len = opcode.ext_headers_len();
        if after_bth.len() < ext_len {
            return Err(WireError::Truncated);
        }
        let ext = ExtHeaders::parse(opcode, after_bth)?;

        let padded = &after_bth[ext_len..];
        if !opcode.has_payload() && !padded.is_empty() {
            return Err(WireError::PayloadNotAllowed(opcode));
        }
        // The pad must be the one a sender derives from the payload length.
        let pad = bth_packet.pad_count();
        let payload_len = padded.len().checked_sub(usize::from(pad));
        let Some(payload_len) = payload_len.filter(|&len| pad_count(len) == pad) else {
            return Err(WireError::BadPadCount {
                pad,
                len: padded.len(),
            });
        };

        verify_icrc(ip_bytes)?;

        let repr = RoceRepr {
            eth,
            ip,
            udp_src_port: udp.src_port,
            bth,
            ext,
        };
        Ok((repr, &padded[..payload_len]))
    }

    /// The length of the frame this repr makes with `payload_len` bytes of payload.
    pub fn frame_len(&self, payload_len: usize) -> usize {
        ROCE_HEADERS_LEN
            + self.ext.wire_len()
            + payload_len
            + usize::from(pad_count(payload_len))
            + ICRC_LEN
    }

    /// Refuses what would make an invalid frame: these are caller bugs.
    fn check_emit(&self, payload_len: usize) -> Result<(), WireError> {
        let opcode = self.bth.opcode;
        if self.eth.ethertype != EtherType::Ipv4 {
            return Err(WireError::BadEthertype(self.eth.ethertype.into()));
        }
        if self.ip.protocol != IpProtocol::Udp {
            return Err(WireError::NotUdp(self.ip.protocol.into()));
        }
        if !opcode.is_known() {
            return Err(WireError::UnknownOpcode(opcode.into()));
        }
        if !self.ext.matches(opcode) {
            return Err(WireError::HeadersDoNotMatchOpcode(opcode));
        }
        if !opcode.has_payload() && payload_len != 0 {
            return Err(WireError::PayloadNotAllowed(opcode));
        }
        if self.frame_len(payload_len) - IP_AT > MAX_IP_LEN {
            return Err(WireError::PayloadTooLong(payload_len));
        }
        Ok(())
    }

    /// Builds the frame for `payload` and appends it to `buf`. On error `buf` is unchanged.
    pub fn emit(&self, payload: &[u8], buf: &mut Vec<u8>) -> Result<(), WireError> {
        self.check_emit(payload.len())?;
        let start = buf.len();
        buf.resize(start + self.frame_len(payload.len()), 0);
        self.emit_into(payload, &mut buf[start..])?;
        Ok(())
    }

    /// Builds the frame for `payload` at the start of `frame` and returns its length
    /// ([`frame_len`](Self::frame_len)). Fails with `Truncated` if `frame` is too short.
    pub fn emit_into(&self, payload: &[u8], frame: &mut [u8]) -> Result<usize, WireError> {
        self.check_emit(payload.len())?;
        let len = self.frame_len(payload.len());
        let frame = frame.get_mut(..len).ok_or(WireError::Truncated)?;
        let opcode = self.bth.opcode;
        let ext_len = self.ext.wire_len();
        let udp_payload_len = len - BTH_AT;
        let pad = pad_count(payload.len());

        self.eth
            .emit(&mut EthernetFrame::new_unchecked(&mut frame[..]));
        self.ip.emit(
            &mut Ipv4Packet::new_unchecked(&mut frame[IP_AT..]),
            UDP_HEADER_LEN + udp_payload_len,
        );
        let udp = UdpRepr {
            src_port: self.udp_src_port,
            dst_port: ROCE_V2_PORT,
        };
        udp.emit(
            &mut UdpPacket::new_unchecked(&mut frame[UDP_AT..]),
            udp_payload_len,
        );
        self.bth
            .emit(&mut BthPacket::new_unchecked(&mut frame[BTH_AT..]), pad);

        let (ext_bytes, rest) = frame[ROCE_HEADERS_LEN..].split_at_mut(ext_len);
        self.ext.emit(opcode, ext_bytes);
        let (payload_bytes, rest) = rest.split_at_mut(payload.len());
        payload_bytes.copy_from_slice(payload);
        rest[..usize::from(pad)].fill(0);

        let icrc = compute_icrc(&frame[IP_AT..len - ICRC_LEN]);
        frame[len - ICRC_LEN..].copy_from_slice(&icrc.to_le_bytes());
        Ok(len)
    }
}

impl fmt::Display for RoceRepr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "RoCEv2 {} > {} {}:{} > {} {}",
            self.eth.src_addr,
            self.eth.dst_addr,
            self.ip.src_addr,
            self.udp_src_port,
            self.ip.dst_addr,
            self.bth
        )?;
        if self.ext != ExtHeaders::default() {
            write!(f, " {}", self.ext)?;
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::wire::icrc::tests::CX4_CNP_FRAME;
    use crate::wire::{
        EthernetAddress, Ipv4Address, NakCode, Psn, Syndrome, CREDITS_INVALID, DEFAULT_PKEY,
    };

    /// Byte-exact ACK (62 bytes, the smallest RC frame with an extension header), made
    /// independently with Python's struct and zlib.crc32.
    const ACK_FRAME: [u8; 62] = [
        0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00, 0x45,
        0x00, 0x00, 0x30, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0x14, 0x87, 0x0a, 0x00, 0x00, 0x01,
        0x0a, 0x00, 0x00, 0x02, // IPv4
        0xc0, 0x00, 0x12, 0xb7, 0x00, 0x1c, 0x00, 0x00, // UDP
        0x11, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x11, 0x00, 0x00, 0x00, 0x64, // BTH
        0x1f, 0x00, 0x00, 0x05, // AETH
        0xed, 0xe1, 0x10, 0x9f, // ICRC
    ];

    /// Byte-exact RDMA WRITE ONLY WITH IMMEDIATE of "hello" (pad 3), SE, BECN, AckReq,
    /// PSN 0xffffff, DSCP 26 / ECN 2; made independently with Python.
    const WRITE_IMM_FRAME: [u8; 86] = [
        0x02, 0x11, 0x22, 0x33, 0x44, 0x55, 0x02, 0x66, 0x77, 0x88, 0x99, 0xaa, 0x08, 0x00, 0x45,
        0x6a, 0x00, 0x48, 0xbe, 0xef, 0x40, 0x00, 0x40, 0x11, 0xf7, 0xdc, 0xc0, 0xa8, 0x01, 0x0a,
        0xc0, 0xa8, 0x01, 0x14, // IPv4
        0xd0, 0x01, 0x12, 0xb7, 0x00, 0x34, 0x00, 0x00, // UDP
        0x0b, 0xb0, 0xff, 0xff, 0x40, 0x00, 0x01, 0x23, 0x80, 0xff, 0xff, 0xff, // BTH
        0x00, 0x00, 0x7f, 0x00, 0x12, 0x34, 0x56, 0x78, 0xde, 0xad, 0xbe, 0xef, 0x00, 0x00, 0x00,
        0x05, // RETH
        0xca, 0xfe, 0xba, 0xbe, // ImmDt
        b'h', b'e', b'l', b'l', b'o', 0x00, 0x00, 0x00, // payload, pad
        0xcf, 0x65, 0x2c, 0x68, // ICRC
    ];

    fn ip(src: [u8; 4], dst: [u8; 4], dscp: u8, ecn: u8, ident: u16) -> Ipv4Repr {
        Ipv4Repr {
            src_addr: Ipv4Address(src),
            dst_addr: Ipv4Address(dst),
            protocol: IpProtocol::Udp,
            dscp,
            ecn,
            ident,
            dont_frag: true,
            ttl: 64,
        }
    }

    fn bth(opcode: Opcode, dest_qp: u32, psn: u32) -> BthRepr {
        BthRepr {
            opcode,
            solicited: false,
            migreq: false,
            pkey: DEFAULT_PKEY,
            fecn: false,
            becn: false,
            dest_qp,
            ack_req: false,
            psn: Psn::new(psn),
        }
    }

    fn ack_repr() -> RoceRepr {
        RoceRepr {
            eth: EthernetRepr {
                src_addr: EthernetAddress([2, 0, 0, 0, 0, 1]),
                dst_addr: EthernetAddress([2, 0, 0, 0, 0, 2]),
                ethertype: EtherType::Ipv4,
            },
            ip: ip([10, 0, 0, 1], [10, 0, 0, 2], 0, 0, 0x1234),
            udp_src_port: 0xC000,
            bth: bth(Opcode::Acknowledge, 0x11, 100),
            ext: ExtHeaders {
                aeth: Some(AethRepr {
                    syndrome: Syndrome::Ack {
                        credits: CREDITS_INVALID,
                    },
                    msn: 5,
                }),
                ..ExtHeaders::default()
            },
        }
    }

    fn write_imm_repr() -> RoceRepr {
        RoceRepr {
            eth: EthernetRepr {
                src_addr: EthernetAddress([0x02, 0x66, 0x77, 0x88, 0x99, 0xaa]),
                dst_addr: EthernetAddress([0x02, 0x11, 0x22, 0x33, 0x44, 0x55]),
                ethertype: EtherType::Ipv4,
            },
            ip: ip([192, 168, 1, 10], [192, 168, 1, 20], 26, 2, 0xBEEF),
            udp_src_port: 0xD001,
            bth: BthRepr {
                solicited: true,
                becn: true,
                ack_req: true,
                ..bth(Opcode::RdmaWriteOnlyWithImmediate, 0x123, 0xFF_FFFF)
            },
            ext: ExtHeaders {
                reth: Some(RethRepr {
                    va: 0x7f00_1234_5678,
                    rkey: 0xdead_beef,
                    dma_len: 5,
                }),
                immdt: Some(0xcafe_babe),
                ..ExtHeaders::default()
            },
        }
    }

    /// The extension headers `opcode` needs, with arbitrary values.
    fn ext_for(opcode: Opcode, seed: u64) -> ExtHeaders {
        let mut ext = ExtHeaders::default();
        for &h in opcode.ext_headers() {
            match h {
                ExtHeader::Reth => {
                    ext.reth = Some(RethRepr {
                        va: seed << 12,
                        rkey: seed as u32 ^ 0xA5A5,
                        dma_len: 4096,
                    })
                }
                ExtHeader::AtomicEth => {
                    ext.atomic_eth = Some(AtomicEthRepr {
                        va: seed << 3,
                        rkey: 7,
                        swap_add: seed.wrapping_mul(3),
                        compare: !seed,
                    })
                }
                ExtHeader::ImmDt => ext.immdt = Some(seed as u32),
                ExtHeader::Ieth => ext.ieth = Some(!(seed as u32)),
                ExtHeader::Aeth => {
                    ext.aeth = Some(AethRepr {
                        syndrome: if seed & 1 == 0 {
                            Syndrome::Ack {
                                credits: (seed % 32) as u8,
                            }
                        } else {
                            Syndrome::Nak(NakCode::PsnSequenceError)
                        },
                        msn: seed as u32 & 0xFF_FFFF,
                    })
                }
                ExtHeader::AtomicAckEth => {
                    ext.atomic_ack_eth = Some(AtomicAckEthRepr {
                        orig_remote_data: seed,
                    })
                }
                ExtHeader::Deth => unreachable!("no RC opcode carries a DETH"),
            }
        }
        ext
    }

    /// A valid repr and payload for every opcode; payload opcodes with 0 to 9 bytes, so every
    /// pad count occurs.
    pub(crate) fn samples() -> Vec<(RoceRepr, Vec<u8>)> {
        let mut out = vec![(write_imm_repr(), b"hello".to_vec())];
        for (i, op) in Opcode::all().enumerate() {
            let lens: &[usize] = if op.has_payload() {
                &[0, 1, 2, 3, 4, 5, 9]
            } else {
                &[0]
            };
            for &len in lens {
                let seed = (i * 31 + len) as u64;
                let mut repr = ack_repr();
                repr.bth = bth(op, 0xFF_FFFF - seed as u32, 0xFF_FFF0 + seed as u32);
                repr.bth.ack_req = len % 2 == 1;
                repr.bth.fecn = len == 3;
                repr.ext = ext_for(op, seed);
                repr.udp_src_port = 0xC000 | seed as u16;
                out.push((repr, (0..len).map(|b| (b as u8).wrapping_mul(37)).collect()));
            }
        }
        out
    }

    fn emit(repr: &RoceRepr, payload: &[u8]) -> Vec<u8> {
        let mut frame = Vec::new();
        repr.emit(payload, &mut frame).unwrap();
        frame
    }

    #[test]
    fn ack_is_byte_exact() {
        assert_eq!(emit(&ack_repr(), &[]), ACK_FRAME);
        assert_eq!(ack_repr().frame_len(0), 62);
        let (repr, payload) = RoceRepr::parse(&ACK_FRAME).unwrap();
        assert_eq!(repr, ack_repr());
        assert!(payload.is_empty());
    }

    #[test]
    fn write_with_immediate_is_byte_exact() {
        assert_eq!(emit(&write_imm_repr(), b"hello"), WRITE_IMM_FRAME);
        let (repr, payload) = RoceRepr::parse(&WRITE_IMM_FRAME).unwrap();
        assert_eq!(repr, write_imm_repr());
        assert_eq!(payload, b"hello");
    }

    #[test]
    fn every_opcode_round_trips() {
        for (repr, payload) in samples() {
            let frame = emit(&repr, &payload);
            assert_eq!(frame.len(), repr.frame_len(payload.len()), "{repr}");
            let pad = usize::from(pad_count(payload.len()));
            assert_eq!(
                (frame.len() - ETHERNET_HEADER_LEN) % 4,
                0,
                "IP packet is whole words"
            );
            let (parsed, parsed_payload) = RoceRepr::parse(&frame).unwrap();
            assert_eq!(parsed, repr);
            assert_eq!(parsed_payload, &payload[..]);
            let pad_bytes = &frame[frame.len() - ICRC_LEN - pad..frame.len() - ICRC_LEN];
            assert!(pad_bytes.iter().all(|&b| b == 0));
            assert_eq!(
                BthPacket::new_unchecked(&frame[BTH_AT..]).pad_count() as usize,
                pad
            );
            // emit_into into a larger buffer gives the same bytes.
            let mut buf = [0xEEu8; 200];
            assert_eq!(repr.emit_into(&payload, &mut buf), Ok(frame.len()));
            assert_eq!(&buf[..frame.len()], &frame[..]);
        }
    }

    #[test]
    fn emit_appends() {
        let mut buf = vec![1, 2, 3];
        ack_repr().emit(&[], &mut buf).unwrap();
        assert_eq!(&buf[..3], &[1, 2, 3]);
        assert_eq!(&buf[3..], &ACK_FRAME);
    }

    #[test]
    fn ethernet_padding_is_accepted() {
        let mut frame = ACK_FRAME.to_vec();
        frame.extend([0u8; 6]);
        assert_eq!(RoceRepr::parse(&frame).unwrap().0, ack_repr());
    }

    #[test]
    fn hardware_frames_with_other_transports_are_unknown_opcodes() {
        // The ConnectX-4 Lx CNP passes every check up to the opcode.
        assert_eq!(
            RoceRepr::parse(&CX4_CNP_FRAME),
            Err(WireError::UnknownOpcode(0x81))
        );
    }

    /// Applies `edit` to a frame, then makes the IPv4 checksum and the ICRC right again, so
    /// that only the edited check can fail.
    fn edited(frame: &[u8], edit: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
        let mut frame = frame.to_vec();
        edit(&mut frame);
        Ipv4Packet::new_unchecked(&mut frame[IP_AT..]).fill_checksum();
        let ip_len = usize::from(Ipv4Packet::new_unchecked(&frame[IP_AT..]).total_len());
        let end = (IP_AT + ip_len).min(frame.len());
        if end >= IP_AT + ICRC_LEN {
            let icrc = compute_icrc(&frame[IP_AT..end - ICRC_LEN]);
            frame[end - ICRC_LEN..end].copy_from_slice(&icrc.to_le_bytes());
        }
        frame
    }

    /// Changes the IPv4 and UDP lengths by `delta`, as when bytes are inserted or removed.
    fn relength(frame: &mut [u8], delta: isize) {
        let ip_len = Ipv4Packet::new_unchecked(&frame[IP_AT..]).total_len() as isize;
        set_lengths(frame, (ip_len + delta) as u16);
    }

    /// Sets the IPv4 total length and the matching UDP length.
    fn set_lengths(frame: &mut [u8], ip_len: u16) {
        Ipv4Packet::new_unchecked(&mut frame[IP_AT..]).set_total_len(ip_len);
        UdpPacket::new_unchecked(&mut frame[UDP_AT..]).set_len(ip_len - IPV4_HEADER_LEN as u16);
    }

    #[test]
    fn checks_fail_in_order() {
        use WireError::*;
        let good = WRITE_IMM_FRAME;
        let end = good.len() - ICRC_LEN;
        let cases: Vec<(Vec<u8>, WireError)> = vec![
            (good[..13].to_vec(), Truncated),
            (edited(&good, |f| f[12] = 0x86), BadEthertype(0x8600)),
            (good[..ETHERNET_HEADER_LEN + 10].to_vec(), Truncated),
            (edited(&good, |f| f[IP_AT] = 0x65), BadIpVersion(6)),
            (edited(&good, |f| f[IP_AT] = 0x44), BadIpLength),
            (edited(&good, |f| f[IP_AT + 3] = 19), BadIpLength),
            (edited(&good, |f| relength(f, 1)), Truncated),
            (good[..good.len() - 1].to_vec(), Truncated),
            (edited(&good, |f| f[IP_AT] = 0x46), IpOptionsUnsupported(24)),
            (
                {
                    let mut f = good.to_vec();
                    f[IP_AT + 8] = 63; // TTL, with the checksum left stale
                    f
                },
                BadIpChecksum,
            ),
            (edited(&good, |f| f[IP_AT + 6] |= 0x20), IpFragmented),
            (edited(&good, |f| f[IP_AT + 9] = 6), NotUdp(6)),
            (
                edited(&good, |f| {
                    set_lengths(f, 24);
                    f.truncate(IP_AT + 24);
                }),
                Truncated,
            ),
            (edited(&good, |f| f[UDP_AT + 3] = 0xb6), NotRoce(4790)),
            (edited(&good, |f| f[UDP_AT + 5] -= 1), BadUdpLength),
            (edited(&good, |f| f[UDP_AT + 5] = 7), BadUdpLength),
            // No room for BTH and ICRC.
            (
                edited(&good, |f| {
                    set_lengths(f, (IPV4_HEADER_LEN + UDP_HEADER_LEN + 15) as u16);
                    f.truncate(BTH_AT + 15);
                }),
                Truncated,
            ),
            (
                edited(&good, |f| f[BTH_AT + 1] |= 0x01),
                BadTransportVersion(1),
            ),
            (edited(&good, |f| f[BTH_AT] = 0x15), UnknownOpcode(0x15)),
            (edited(&good, |f| f[BTH_AT] = 0x64), UnknownOpcode(0x64)),
            // COMPARE_SWAP needs a 28-byte AtomicETH; an ACK has 4 bytes after the BTH.
            (edited(&ACK_FRAME, |f| f[BTH_AT] = 0x13), Truncated),
            // ACKNOWLEDGE has an AETH and nothing after it.
            (
                edited(&good, |f| f[BTH_AT] = 0x11),
                PayloadNotAllowed(Opcode::Acknowledge),
            ),
            // Payload and pad not a whole number of words.
            (
                edited(&good, |f| {
                    relength(f, -1);
                    f.remove(end - 1);
                }),
                BadPadCount { pad: 3, len: 7 },
            ),
            // More pad than payload.
            (
                edited(&good, |f| {
                    relength(f, -8);
                    f.drain(end - 8..end);
                }),
                BadPadCount { pad: 3, len: 0 },
            ),
            (
                edited(&ACK_FRAME, |f| f[BTH_AT + 1] = 0x20),
                BadPadCount { pad: 2, len: 0 },
            ),
        ];
        for (i, (frame, want)) in cases.into_iter().enumerate() {
            assert_eq!(RoceRepr::parse(&frame).map(|_| ()), Err(want), "case {i}");
        }
    }

    #[test]
    fn icrc_failures_are_reported_apart() {
        let mut frame = WRITE_IMM_FRAME;
        frame[WRITE_IMM_FRAME.len() - ICRC_LEN - 4] ^= 0x01; // a payload bit
        let expected = compute_icrc(&frame[IP_AT..frame.len() - ICRC_LEN]);
        let got = u32::from_le_bytes([0xcf, 0x65, 0x2c, 0x68]);
        assert_eq!(
            RoceRepr::parse(&frame),
            Err(WireError::BadIcrc { expected, got })
        );
        // Masked bits do not matter: a switch may set FECN.
        let mut frame = WRITE_IMM_FRAME;
        frame[BTH_AT + 4] |= 0x80;
        assert!(RoceRepr::parse(&frame).unwrap().0.bth.fecn);
    }

    #[test]
    fn inconsistent_reprs_are_refused_not_emitted() {
        use WireError::*;
        let check = |repr: RoceRepr, payload: &[u8], want: WireError| {
            let mut buf = vec![9];
            assert_eq!(repr.emit(payload, &mut buf), Err(want), "{repr}");
            assert_eq!(buf, [9], "buffer untouched");
            assert_eq!(repr.emit_into(payload, &mut [0u8; 128]), Err(want));
        };
        let mut r = write_imm_repr();
        r.ext.immdt = None;
        check(
            r,
            b"x",
            HeadersDoNotMatchOpcode(Opcode::RdmaWriteOnlyWithImmediate),
        );
        let mut r = ack_repr();
        r.ext.reth = write_imm_repr().ext.reth;
        check(r, &[], HeadersDoNotMatchOpcode(Opcode::Acknowledge));
        let mut r = ack_repr();
        r.ext.deth = Some(DethRepr { qkey: 1, src_qp: 2 });
        check(r, &[], HeadersDoNotMatchOpcode(Opcode::Acknowledge));
        let mut r = ack_repr();
        r.bth.opcode = Opcode::SendOnly; // an AETH on a SEND
        check(r, &[], HeadersDoNotMatchOpcode(Opcode::SendOnly));
        check(ack_repr(), b"data", PayloadNotAllowed(Opcode::Acknowledge));
        let mut r = ack_repr();
        r.bth.opcode = Opcode::Unknown(0x81);
        check(r, &[], UnknownOpcode(0x81));
        let mut r = ack_repr();
        r.eth.ethertype = EtherType::Arp;
        check(r, &[], BadEthertype(0x0806));
        let mut r = ack_repr();
        r.ip.protocol = IpProtocol::Unknown(6);
        check(r, &[], NotUdp(6));

        // The largest payload that fits one IPv4 packet (payload and pad are whole words),
        // and one byte more.
        let r = write_imm_repr();
        let max = (MAX_IP_LEN - (r.frame_len(0) - IP_AT)) / 4 * 4;
        let big = vec![0u8; max + 1];
        let mut frame = Vec::new();
        r.emit(&big[..max], &mut frame).unwrap();
        assert_eq!(frame.len() - IP_AT, MAX_IP_LEN - 3);
        assert_eq!(RoceRepr::parse(&frame).unwrap().1.len(), max);
        assert_eq!(r.emit(&big, &mut Vec::new()), Err(PayloadTooLong(max + 1)));

        // emit_into wants room for the whole frame.
        let mut small = [0u8; 85];
        assert_eq!(
            write_imm_repr().emit_into(b"hello", &mut small),
            Err(Truncated)
        );
    }

    #[test]
    fn pad_counts() {
        let pads: Vec<u8> = (0..9).map(pad_count).collect();
        assert_eq!(pads, [0, 3, 2, 1, 0, 3, 2, 1, 0]);
    }

    #[test]
    fn display() {
        assert_eq!(
            write_imm_repr().to_string(),
            "RoCEv2 02:66:77:88:99:aa > 02:11:22:33:44:55 192.168.1.10:53249 > 192.168.1.20 \
             BTH RDMA_WRITE_ONLY_WITH_IMMEDIATE qp=0x000123 psn=16777215 pkey=0xffff SE BECN A \
             RETH va=0x7f0012345678 rkey=0xdeadbeef len=5 ImmDt 0xcafebabe"
        );
        assert_eq!(
            ack_repr().to_string(),
            "RoCEv2 02:00:00:00:00:01 > 02:00:00:00:00:02 10.0.0.1:49152 > 10.0.0.2 \
             BTH ACKNOWLEDGE qp=0x000011 psn=100 pkey=0xffff AETH ACK credits=invalid msn=5"
        );
    }
}
