//! The one place where the model turns its decisions into frames and frames into
//! headers; the wire formats themselves live in `rocenic_proto::wire`.

use rocenic_proto::device::Frame;
use rocenic_proto::wire::{
    AethRepr, AtomicAckEthRepr, AtomicEthRepr, BthRepr, EtherType, EthernetAddress, EthernetRepr,
    ExtHeaders, IpProtocol, Ipv4Address, Ipv4Repr, Opcode, Psn, RethRepr, RoceRepr, Syndrome,
    WireError,
};

/// PSN arithmetic on the 24-bit circle.
pub fn psn_add(psn: u32, n: u32) -> u32 {
    psn.wrapping_add(n) & 0xff_ffff
}

/// `a - b` on the 24-bit circle, in (-2^23, 2^23].
pub fn psn_diff(a: u32, b: u32) -> i32 {
    let d = a.wrapping_sub(b) & 0xff_ffff;
    if d > 0x80_0000 {
        d as i32 - 0x100_0000
    } else {
        d as i32
    }
}

/// The addressing of a frame: Ethernet, IPv4 and the UDP source port (flow entropy).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Addr {
    pub src_mac: [u8; 6],
    pub dst_mac: [u8; 6],
    pub src_ip: [u8; 4],
    pub dst_ip: [u8; 4],
    pub udp_sport: u16,
}

/// The transport headers of one packet, as the protocol engines use them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hdr {
    pub opcode: Opcode,
    pub dest_qp: u32,
    pub psn: u32,
    pub ack_req: bool,
    pub solicited: bool,
    /// (virtual address, rkey, DMA length)
    pub reth: Option<(u64, u32, u32)>,
    /// (syndrome byte, MSN)
    pub aeth: Option<(u8, u32)>,
    /// (virtual address, rkey, swap or add, compare)
    pub atomic: Option<(u64, u32, u64, u64)>,
    pub atomic_ack: Option<u64>,
    pub imm: Option<u32>,
    pub ieth: Option<u32>,
}

impl Hdr {
    pub fn new(opcode: Opcode, dest_qp: u32, psn: u32) -> Hdr {
        Hdr {
            opcode,
            dest_qp,
            psn,
            ack_req: false,
            solicited: false,
            reth: None,
            aeth: None,
            atomic: None,
            atomic_ack: None,
            imm: None,
            ieth: None,
        }
    }
}

/// A received frame, parsed and checked.
#[derive(Debug)]
pub struct Parsed<'a> {
    pub src_ip: [u8; 4],
    pub dst_ip: [u8; 4],
    pub hdr: Hdr,
    pub payload: &'a [u8],
}

/// Why a frame was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PacketError {
    Icrc,
    Malformed,
}

/// Builds a complete frame: Ethernet, IPv4 (DF, TTL 64, ident 0, checksum), UDP 4791
/// (checksum 0), BTH (P_Key 0xFFFF), extension headers, payload, pad and ICRC.
pub fn build(addr: &Addr, hdr: &Hdr, payload: &[u8]) -> Frame {
    let repr = RoceRepr {
        eth: EthernetRepr {
            src_addr: EthernetAddress(addr.src_mac),
            dst_addr: EthernetAddress(addr.dst_mac),
            ethertype: EtherType::Ipv4,
        },
        ip: Ipv4Repr {
            src_addr: Ipv4Address(addr.src_ip),
            dst_addr: Ipv4Address(addr.dst_ip),
            protocol: IpProtocol::Udp,
            dscp: 0,
            ecn: 0,
            ident: 0,
            dont_frag: true,
            ttl: 64,
        },
        udp_src_port: addr.udp_sport,
        bth: BthRepr {
            opcode: hdr.opcode,
            solicited: hdr.solicited,
            migreq: false,
            pkey: 0xffff,
            fecn: false,
            becn: false,
            dest_qp: hdr.dest_qp,
            ack_req: hdr.ack_req,
            psn: Psn::from(hdr.psn),
        },
        ext: ExtHeaders {
            reth: hdr
                .reth
                .map(|(va, rkey, dma_len)| RethRepr { va, rkey, dma_len }),
            aeth: hdr.aeth.map(|(s, msn)| AethRepr {
                syndrome: Syndrome::from(s),
                msn,
            }),
            atomic_eth: hdr
                .atomic
                .map(|(va, rkey, swap_add, compare)| AtomicEthRepr {
                    va,
                    rkey,
                    swap_add,
                    compare,
                }),
            atomic_ack_eth: hdr.atomic_ack.map(|orig| AtomicAckEthRepr {
                orig_remote_data: orig,
            }),
            immdt: hdr.imm,
            ieth: hdr.ieth,
            deth: None,
        },
    };
    let mut frame = Vec::with_capacity(repr.frame_len(payload.len()));
    repr.emit(payload, &mut frame)
        .expect("the engines only build headers that match their opcode");
    frame
}

/// Parses and checks a received frame.
pub fn parse(frame: &[u8]) -> Result<Parsed<'_>, PacketError> {
    let (repr, payload) = RoceRepr::parse(frame).map_err(|e| match e {
        WireError::BadIcrc { .. } => PacketError::Icrc,
        _ => PacketError::Malformed,
    })?;
    let e = &repr.ext;
    Ok(Parsed {
        src_ip: repr.ip.src_addr.0,
        dst_ip: repr.ip.dst_addr.0,
        hdr: Hdr {
            opcode: repr.bth.opcode,
            dest_qp: repr.bth.dest_qp,
            psn: u32::from(repr.bth.psn),
            ack_req: repr.bth.ack_req,
            solicited: repr.bth.solicited,
            reth: e.reth.map(|r| (r.va, r.rkey, r.dma_len)),
            aeth: e.aeth.map(|a| (u8::from(a.syndrome), a.msn)),
            atomic: e.atomic_eth.map(|a| (a.va, a.rkey, a.swap_add, a.compare)),
            atomic_ack: e.atomic_ack_eth.map(|a| a.orig_remote_data),
            imm: e.immdt,
            ieth: e.ieth,
        },
        payload,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn psn_circle() {
        assert_eq!(psn_add(0xff_ffff, 1), 0);
        assert_eq!(psn_diff(0, 0xff_ffff), 1);
        assert_eq!(psn_diff(0xff_ffff, 0), -1);
        assert_eq!(psn_diff(5, 5), 0);
        assert_eq!(psn_diff(0x80_0000, 0), 0x80_0000);
    }

    #[test]
    fn build_parse_round_trip() {
        let addr = Addr {
            src_mac: [2, 0, 0, 0, 0, 1],
            dst_mac: [2, 0, 0, 0, 0, 2],
            src_ip: [10, 0, 0, 1],
            dst_ip: [10, 0, 0, 2],
            udp_sport: 0xc002,
        };
        let mut hdr = Hdr::new(Opcode::RdmaWriteOnlyWithImmediate, 0x12, 0xff_fffe);
        hdr.reth = Some((0x7f00_0000_0000, 0x105, 3));
        hdr.imm = Some(0xdead_beef);
        hdr.ack_req = true;
        let f = build(&addr, &hdr, b"abc");
        let p = parse(&f).unwrap();
        assert_eq!(p.hdr, hdr);
        assert_eq!(p.payload, b"abc");
        assert_eq!(p.dst_ip, addr.dst_ip);
        assert_eq!(p.src_ip, addr.src_ip);
        let mut bad = f.clone();
        let n = bad.len();
        bad[n - 5] ^= 1;
        assert_eq!(parse(&bad).unwrap_err(), PacketError::Icrc);
        assert_eq!(parse(&f[..20]).unwrap_err(), PacketError::Malformed);
    }
}
