//! The fuzzer's bad input: frames built from real frames of live traffic (or from nothing),
//! edited through `proto`'s zero-copy views, then resealed (IPv4 header checksum and ICRC
//! recomputed) unless the class is about a broken seal.
//!
//! Every class is one kind of bad input a NIC meets on a real network; [`Class::ALL`] lists
//! them in the order of the report. [`mutate`] draws one frame of a class from a seeded
//! generator, so a seed replays the same stream.

use std::fmt;

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use rocenic_proto::wire::{
    compute_icrc, AethRepr, AtomicAckEthRepr, BthPacket, BthRepr, EtherType, EthernetAddress,
    EthernetRepr, ExtHeaders, IpProtocol, Ipv4Address, Ipv4Packet, Ipv4Repr, Opcode, Psn,
    RethPacket, RoceRepr, Syndrome, UdpPacket, ICRC_LEN,
};

/// Offset of the IPv4 header in an untagged frame.
pub const IP_AT: usize = 14;
/// Offset of the UDP header.
pub const UDP_AT: usize = IP_AT + 20;
/// Offset of the BTH.
pub const BTH_AT: usize = UDP_AT + 8;
/// Offset of the first extension header.
pub const EXT_AT: usize = BTH_AT + 12;

/// A kind of bad input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    /// 1 to 4 random bits flipped anywhere, seal left broken.
    BitFlip,
    /// 1 to 4 random bits flipped after the Ethernet header, then resealed.
    BitFlipResealed,
    /// Cut short anywhere (runts included).
    Truncate,
    /// Trailing bytes after the IP packet (Ethernet padding: the frame stays valid).
    Pad,
    /// IPv4 total length, UDP length, BTH pad count or RETH DMA length edited, or the
    /// payload grown past the path MTU; resealed.
    Length,
    /// The opcode byte replaced by any value; resealed.
    Opcode,
    /// A FIRST, MIDDLE or LAST (or ONLY) opcode of another message kind at the expected PSN:
    /// a message that breaks the opcode sequence; resealed.
    OpSequence,
    /// The PSN moved inside the window (ahead of or just behind the expected PSN).
    PsnInWindow,
    /// The PSN moved to the window's edges and beyond (2^23 away and around).
    PsnOutOfWindow,
    /// A destination QPN no QP has.
    UnknownQpn,
    /// The destination QPN of a QP that was destroyed.
    StaleQpn,
    /// A wrong R_Key (another tag, another index, random) or a VA outside the MR, at the
    /// expected PSN.
    WrongKey,
    /// An 802.1Q tag inserted.
    Vlan,
    /// The IP header replaced by an IPv6 one.
    Ipv6,
    /// UDP to another port, another IP protocol, or ARP.
    NonRoce,
    /// ACKs, NAKs, READ responses and atomic ACKs for requests never sent.
    AckForNothing,
    /// A real frame from a stranger's MAC and IP address; resealed.
    Stranger,
    /// A real frame sent again as it was (a stale duplicate).
    Replay,
    /// Random bytes, or random bytes behind valid Ethernet, IPv4 and UDP headers.
    Random,
}

impl Class {
    pub const ALL: [Class; 19] = [
        Class::BitFlip,
        Class::BitFlipResealed,
        Class::Truncate,
        Class::Pad,
        Class::Length,
        Class::Opcode,
        Class::OpSequence,
        Class::PsnInWindow,
        Class::PsnOutOfWindow,
        Class::UnknownQpn,
        Class::StaleQpn,
        Class::WrongKey,
        Class::Vlan,
        Class::Ipv6,
        Class::NonRoce,
        Class::AckForNothing,
        Class::Stranger,
        Class::Replay,
        Class::Random,
    ];

    /// Its name in reports (snake case).
    pub fn name(self) -> &'static str {
        match self {
            Class::BitFlip => "bit_flip",
            Class::BitFlipResealed => "bit_flip_resealed",
            Class::Truncate => "truncate",
            Class::Pad => "pad",
            Class::Length => "length",
            Class::Opcode => "opcode",
            Class::OpSequence => "op_sequence",
            Class::PsnInWindow => "psn_in_window",
            Class::PsnOutOfWindow => "psn_out_of_window",
            Class::UnknownQpn => "unknown_qpn",
            Class::StaleQpn => "stale_qpn",
            Class::WrongKey => "wrong_key",
            Class::Vlan => "vlan",
            Class::Ipv6 => "ipv6",
            Class::NonRoce => "non_roce",
            Class::AckForNothing => "ack_for_nothing",
            Class::Stranger => "stranger",
            Class::Replay => "replay",
            Class::Random => "random",
        }
    }

    /// The class named `name` (as [`Class::name`] spells it).
    pub fn from_name(name: &str) -> Option<Class> {
        Class::ALL.into_iter().find(|c| c.name() == name)
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One QP of the NIC under test, as the mutator aims at it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QpAim {
    pub qpn: u32,
    /// The PSN its responder expects next.
    pub epsn: u32,
    /// The PSN its requester sends next (responses for nothing aim around it).
    pub sq_psn: u32,
}

/// What the mutator knows about the NIC under test and its peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Aim {
    pub mac: [u8; 6],
    pub ip: [u8; 4],
    pub peer_mac: [u8; 6],
    pub peer_ip: [u8; 4],
    pub qps: Vec<QpAim>,
    /// A QPN that was destroyed.
    pub stale_qpn: u32,
    /// The R_Key, base VA and length of the NIC's remotely accessible MR.
    pub rkey: u32,
    pub va: u64,
    pub mr_len: u64,
}

/// Recomputes the IPv4 header checksum and the ICRC where the frame's layout allows
/// (untagged IPv4 without options, the total length inside the frame); leaves the rest as
/// it is.
pub fn reseal(frame: &mut [u8]) {
    if frame.len() < UDP_AT || frame[12..14] != [0x08, 0x00] || frame[IP_AT] != 0x45 {
        return;
    }
    Ipv4Packet::new_unchecked(&mut frame[IP_AT..UDP_AT]).fill_checksum();
    let total = usize::from(u16::from_be_bytes([frame[16], frame[17]]));
    let end = IP_AT + total;
    if total < 20 + ICRC_LEN || end > frame.len() {
        return;
    }
    let icrc = compute_icrc(&frame[IP_AT..end - ICRC_LEN]);
    frame[end - ICRC_LEN..end].copy_from_slice(&icrc.to_le_bytes());
}

/// Whether `frame` has an untagged IPv4/UDP/BTH layout the views can edit.
fn has_bth(frame: &[u8]) -> bool {
    frame.len() >= EXT_AT + ICRC_LEN && frame[12..14] == [0x08, 0x00] && frame[IP_AT] == 0x45
}

fn opcode_of(frame: &[u8]) -> Opcode {
    Opcode::from(frame.get(BTH_AT).copied().unwrap_or(0xff))
}

fn dest_qp(frame: &[u8]) -> u32 {
    BthPacket::new_unchecked(&frame[BTH_AT..]).dest_qp()
}

fn set_psn(frame: &mut [u8], psn: u32) {
    BthPacket::new_unchecked(&mut frame[BTH_AT..]).set_psn(Psn::new(psn));
}

/// The aim of the frame's destination QP (the first QP if it is none of ours).
fn aim_of<'a>(aim: &'a Aim, frame: &[u8]) -> Option<&'a QpAim> {
    let qpn = dest_qp(frame);
    aim.qps.iter().find(|q| q.qpn == qpn).or(aim.qps.first())
}

/// The PSN a frame would need to be acted upon now: the responder's expected PSN for a
/// request, the requester's last sent PSN for a response.
fn expected_psn(aim: &Aim, frame: &[u8]) -> u32 {
    let Some(q) = aim_of(aim, frame) else {
        return 0;
    };
    if opcode_of(frame).is_response() {
        q.sq_psn.wrapping_sub(1) & Psn::MASK
    } else {
        q.epsn
    }
}

/// Puts the frame at the PSN it needs to be acted upon, half the time.
fn maybe_in_sequence(rng: &mut ChaCha8Rng, aim: &Aim, frame: &mut [u8]) {
    if rng.gen_bool(0.5) {
        let psn = expected_psn(aim, frame);
        set_psn(frame, psn);
    }
}

fn random_bytes(rng: &mut ChaCha8Rng, len: usize) -> Vec<u8> {
    (0..len).map(|_| rng.gen()).collect()
}

fn flip_bits(rng: &mut ChaCha8Rng, frame: &mut [u8], from: usize) {
    if frame.len() <= from {
        return;
    }
    for _ in 0..rng.gen_range(1..=4) {
        let bit = rng.gen_range(from * 8..frame.len() * 8);
        frame[bit / 8] ^= 1 << (bit % 8);
    }
}

/// Rebuilds a parsable RoCE frame with a payload of `len` random bytes (lengths, pad and
/// seal derived); `None` if the frame does not parse or its opcode carries no payload.
fn with_payload_len(rng: &mut ChaCha8Rng, frame: &[u8], len: usize) -> Option<Vec<u8>> {
    let (repr, _) = RoceRepr::parse(frame).ok()?;
    if !repr.bth.opcode.has_payload() {
        return None;
    }
    let mut out = Vec::new();
    repr.emit(&random_bytes(rng, len), &mut out).ok()?;
    Some(out)
}

/// A fresh RoCE frame from the peer to the NIC under test.
fn build(aim: &Aim, bth: BthRepr, ext: ExtHeaders, payload: &[u8]) -> Vec<u8> {
    let repr = RoceRepr {
        eth: EthernetRepr {
            src_addr: EthernetAddress(aim.peer_mac),
            dst_addr: EthernetAddress(aim.mac),
            ethertype: EtherType::Ipv4,
        },
        ip: Ipv4Repr {
            src_addr: Ipv4Address(aim.peer_ip),
            dst_addr: Ipv4Address(aim.ip),
            protocol: IpProtocol::Udp,
            dscp: 0,
            ecn: 0,
            ident: 0,
            dont_frag: true,
            ttl: 64,
        },
        udp_src_port: 0xc000,
        bth,
        ext,
    };
    let mut out = Vec::new();
    // The reprs built here always match their opcodes and fit the IP length limit.
    let _ = repr.emit(payload, &mut out);
    out
}

fn bth_to(opcode: Opcode, qpn: u32, psn: u32) -> BthRepr {
    BthRepr {
        opcode,
        solicited: false,
        migreq: false,
        pkey: 0xffff,
        fecn: false,
        becn: false,
        dest_qp: qpn,
        ack_req: false,
        psn: Psn::new(psn),
    }
}

/// A response for a request never sent, to one of the NIC's QPs.
fn ack_for_nothing(rng: &mut ChaCha8Rng, aim: &Aim) -> Vec<u8> {
    let Some(q) = aim.qps.get(rng.gen_range(0..aim.qps.len().max(1))).copied() else {
        return Vec::new();
    };
    let psn = match rng.gen_range(0..4) {
        0 => q.sq_psn.wrapping_sub(1),
        1 => q.sq_psn,
        2 => q.sq_psn.wrapping_add(rng.gen_range(1..1000)),
        _ => rng.gen(),
    } & Psn::MASK;
    let aeth = AethRepr {
        syndrome: Syndrome::from(rng.gen::<u8>()),
        msn: rng.gen::<u32>() & Psn::MASK,
    };
    let (opcode, ext, payload) = match rng.gen_range(0..4) {
        0 => (
            Opcode::Acknowledge,
            ExtHeaders {
                aeth: Some(aeth),
                ..ExtHeaders::default()
            },
            Vec::new(),
        ),
        1 => (
            Opcode::AtomicAcknowledge,
            ExtHeaders {
                aeth: Some(aeth),
                atomic_ack_eth: Some(AtomicAckEthRepr {
                    orig_remote_data: rng.gen(),
                }),
                ..ExtHeaders::default()
            },
            Vec::new(),
        ),
        2 => (
            Opcode::RdmaReadResponseOnly,
            ExtHeaders {
                aeth: Some(aeth),
                ..ExtHeaders::default()
            },
            {
                let n = rng.gen_range(0..600);
                random_bytes(rng, n)
            },
        ),
        _ => (
            Opcode::RdmaReadResponseMiddle,
            ExtHeaders::default(),
            random_bytes(rng, 256),
        ),
    };
    build(aim, bth_to(opcode, q.qpn, psn), ext, &payload)
}

/// Opcodes that open, continue or close a message.
const SEQUENCE_OPCODES: [Opcode; 12] = [
    Opcode::SendFirst,
    Opcode::SendMiddle,
    Opcode::SendLast,
    Opcode::SendOnly,
    Opcode::RdmaWriteFirst,
    Opcode::RdmaWriteMiddle,
    Opcode::RdmaWriteLast,
    Opcode::RdmaWriteOnly,
    Opcode::RdmaReadResponseFirst,
    Opcode::RdmaReadResponseMiddle,
    Opcode::RdmaReadResponseLast,
    Opcode::SendLastWithImmediate,
];

/// Draws one frame of class `class` from `seeds` (real frames sent to the NIC under test;
/// classes that need one fall back to [`Class::Random`] when there is none).
pub fn mutate(rng: &mut ChaCha8Rng, class: Class, seeds: &[Vec<u8>], aim: &Aim) -> Vec<u8> {
    let seed = if seeds.is_empty() {
        None
    } else {
        Some(seeds[rng.gen_range(0..seeds.len())].clone())
    };
    let needs_bth = !matches!(class, Class::Random | Class::AckForNothing | Class::NonRoce);
    let Some(mut f) = seed.filter(|f| has_bth(f) || !needs_bth) else {
        return random_frame(rng, aim);
    };
    match class {
        Class::BitFlip => flip_bits(rng, &mut f, 0),
        Class::BitFlipResealed => {
            flip_bits(rng, &mut f, IP_AT);
            reseal(&mut f);
        }
        Class::Truncate => {
            // at least a byte: a MAC delivers no empty frame (the RTL's port has no way
            // to carry one), so neither does the fuzzer
            let n = rng.gen_range(1..f.len().max(2));
            f.truncate(n);
        }
        Class::Pad => {
            let n = rng.gen_range(1..=64);
            f.extend(random_bytes(rng, n));
        }
        Class::Length => {
            maybe_in_sequence(rng, aim, &mut f);
            match rng.gen_range(0..5) {
                0 => {
                    let v: u16 = match rng.gen_range(0..3) {
                        0 => rng.gen(),
                        _ => (f.len() as u16 - IP_AT as u16).wrapping_add(rng.gen_range(0..9) - 4),
                    };
                    Ipv4Packet::new_unchecked(&mut f[IP_AT..UDP_AT]).set_total_len(v);
                }
                1 => {
                    let v = UdpPacket::new_unchecked(&f[UDP_AT..]).len();
                    let v = v.wrapping_add(rng.gen_range(0..17) - 8);
                    UdpPacket::new_unchecked(&mut f[UDP_AT..]).set_len(v);
                }
                2 => {
                    let pad = rng.gen_range(0..4);
                    BthPacket::new_unchecked(&mut f[BTH_AT..]).set_pad_count(pad);
                }
                3 if opcode_of(&f).has_reth() && f.len() >= EXT_AT + 16 + ICRC_LEN => {
                    let len = match rng.gen_range(0..4) {
                        0 => 0,
                        1 => aim.mr_len as u32 + 1,
                        2 => u32::MAX,
                        _ => rng.gen_range(0..4097),
                    };
                    RethPacket::new_unchecked(&mut f[EXT_AT..]).set_dma_len(len);
                }
                _ => {
                    let len = rng.gen_range(1025..1600);
                    if let Some(g) = with_payload_len(rng, &f, len) {
                        f = g;
                    }
                }
            }
            reseal(&mut f);
        }
        Class::Opcode => {
            maybe_in_sequence(rng, aim, &mut f);
            f[BTH_AT] = rng.gen();
            reseal(&mut f);
        }
        Class::OpSequence => {
            let op = SEQUENCE_OPCODES[rng.gen_range(0..SEQUENCE_OPCODES.len())];
            f[BTH_AT] = u8::from(op);
            let psn = expected_psn(aim, &f);
            set_psn(&mut f, psn);
            reseal(&mut f);
        }
        Class::PsnInWindow => {
            let e = expected_psn(aim, &f);
            let d: i32 = match rng.gen_range(0..3) {
                0 => rng.gen_range(1..=4),
                1 => -rng.gen_range(1..=4),
                _ => rng.gen_range(-(1 << 22)..(1 << 22)),
            };
            set_psn(&mut f, e.wrapping_add(d as u32) & Psn::MASK);
            reseal(&mut f);
        }
        Class::PsnOutOfWindow => {
            let e = expected_psn(aim, &f);
            let d: u32 = match rng.gen_range(0..4) {
                0 => (1 << 23) - 1,
                1 => 1 << 23,
                2 => (1 << 23) + 1,
                _ => rng.gen_range((1 << 23) - 64..(1 << 23) + 64),
            };
            set_psn(&mut f, e.wrapping_add(d) & Psn::MASK);
            reseal(&mut f);
        }
        Class::UnknownQpn | Class::StaleQpn => {
            maybe_in_sequence(rng, aim, &mut f);
            let qpn = if class == Class::StaleQpn {
                aim.stale_qpn
            } else {
                loop {
                    let q = match rng.gen_range(0..3) {
                        0 => rng.gen::<u32>() & Psn::MASK,
                        1 => rng.gen_range(0..1024),
                        _ => Psn::MASK,
                    };
                    if aim.qps.iter().all(|a| a.qpn != q) && q != aim.stale_qpn {
                        break q;
                    }
                }
            };
            BthPacket::new_unchecked(&mut f[BTH_AT..]).set_dest_qp(qpn);
            reseal(&mut f);
        }
        Class::WrongKey => {
            let psn = expected_psn(aim, &f);
            set_psn(&mut f, psn);
            let op = opcode_of(&f);
            let at = EXT_AT;
            if (op.has_reth() || op.has_atomic_eth()) && f.len() >= at + 16 + ICRC_LEN {
                // RETH and AtomicETH both start with VA (8 bytes) then R_Key (4 bytes).
                let mut reth = RethPacket::new_unchecked(&mut f[at..]);
                match rng.gen_range(0..5) {
                    0 => reth.set_rkey(aim.rkey ^ 0x80),
                    1 => reth.set_rkey(aim.rkey.wrapping_add(0x100)),
                    2 => reth.set_rkey(rng.gen()),
                    3 => reth.set_va(aim.va + aim.mr_len - rng.gen_range(0..8)),
                    _ => reth.set_va(aim.va.wrapping_sub(rng.gen_range(1..4096))),
                }
            } else {
                f[BTH_AT] = u8::from(Opcode::RdmaWriteOnly);
            }
            reseal(&mut f);
        }
        Class::Vlan => {
            let tci: u16 = rng.gen();
            let tag = [0x81, 0x00, (tci >> 8) as u8, tci as u8];
            f.splice(12..12, tag);
        }
        Class::Ipv6 => {
            let ip_len = usize::from(u16::from_be_bytes([f[16], f[17]])).min(f.len() - IP_AT);
            let rest = f[UDP_AT..IP_AT + ip_len.max(20)].to_vec();
            let mut h = vec![0x60, 0, 0, 0];
            h.extend((rest.len() as u16).to_be_bytes());
            h.extend([17, 64]);
            for a in [aim.peer_ip, aim.ip] {
                h.extend([0u8; 10]);
                h.extend([0xff, 0xff]);
                h.extend(a);
            }
            f.truncate(12);
            f.extend([0x86, 0xdd]);
            f.extend(h);
            f.extend(rest);
        }
        Class::NonRoce => {
            let g = seed_or_random(rng, f, aim);
            f = non_roce(rng, aim, g);
        }
        Class::AckForNothing => f = ack_for_nothing(rng, aim),
        Class::Stranger => {
            maybe_in_sequence(rng, aim, &mut f);
            let mut mac: [u8; 6] = rng.gen();
            mac[0] = (mac[0] & 0xfe) | 0x02;
            f[6..12].copy_from_slice(&mac);
            let ip = [10, 9, rng.gen(), rng.gen_range(1..255)];
            Ipv4Packet::new_unchecked(&mut f[IP_AT..UDP_AT]).set_src_addr(Ipv4Address(ip));
            reseal(&mut f);
        }
        Class::Replay => {}
        Class::Random => f = random_frame(rng, aim),
    }
    f
}

fn seed_or_random(rng: &mut ChaCha8Rng, f: Vec<u8>, aim: &Aim) -> Vec<u8> {
    if has_bth(&f) {
        f
    } else {
        random_frame(rng, aim)
    }
}

/// A frame that is not RoCE: UDP to another port, another IP protocol, or an ARP request.
fn non_roce(rng: &mut ChaCha8Rng, aim: &Aim, mut f: Vec<u8>) -> Vec<u8> {
    match rng.gen_range(0..3) {
        0 if f.len() >= BTH_AT => {
            let port = loop {
                let p = match rng.gen_range(0..3) {
                    0 => 4789,
                    1 => 4790,
                    _ => rng.gen(),
                };
                if p != 4791 {
                    break p;
                }
            };
            UdpPacket::new_unchecked(&mut f[UDP_AT..]).set_dst_port(port);
            reseal(&mut f);
            f
        }
        1 if f.len() >= UDP_AT => {
            let proto = [1u8, 6, 0, 132, 255][rng.gen_range(0..5)];
            Ipv4Packet::new_unchecked(&mut f[IP_AT..UDP_AT]).set_protocol(IpProtocol::from(proto));
            reseal(&mut f);
            f
        }
        _ => {
            let mut a = vec![0xff; 6];
            a.extend(aim.peer_mac);
            a.extend([0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 1]);
            a.extend(aim.peer_mac);
            a.extend(aim.peer_ip);
            a.extend([0u8; 6]);
            let target = if rng.gen_bool(0.5) {
                aim.ip
            } else {
                [10, 0, 0, rng.gen()]
            };
            a.extend(target);
            a.resize(60, 0);
            a
        }
    }
}

/// Random bytes (any length up to 1600, runts included), or random bytes after valid
/// Ethernet, IPv4 and UDP headers to the NIC, resealed.
fn random_frame(rng: &mut ChaCha8Rng, aim: &Aim) -> Vec<u8> {
    if rng.gen_bool(0.5) {
        let len = rng.gen_range(0..1600);
        return random_bytes(rng, len);
    }
    let q = aim.qps.first().map_or(0, |q| q.qpn);
    let mut f = build(
        aim,
        bth_to(Opcode::SendOnly, q, 0),
        ExtHeaders::default(),
        &[],
    );
    let n = rng.gen_range(12..600);
    f.truncate(BTH_AT);
    f.extend(random_bytes(rng, n));
    let ip_len = (f.len() - IP_AT) as u16;
    Ipv4Packet::new_unchecked(&mut f[IP_AT..UDP_AT]).set_total_len(ip_len);
    UdpPacket::new_unchecked(&mut f[UDP_AT..]).set_len(ip_len - 20);
    if rng.gen_bool(0.5) {
        // Version 0, a live QP: the parser must reach the opcode and the headers.
        f[BTH_AT + 1] &= 0xf0;
        BthPacket::new_unchecked(&mut f[BTH_AT..]).set_dest_qp(q);
    }
    reseal(&mut f);
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn aim() -> Aim {
        Aim {
            mac: [2, 0, 0, 0, 0, 1],
            ip: [10, 0, 0, 1],
            peer_mac: [2, 0, 0, 0, 0, 2],
            peer_ip: [10, 0, 0, 2],
            qps: vec![QpAim {
                qpn: 0x11,
                epsn: 100,
                sq_psn: 200,
            }],
            stale_qpn: 0x13,
            rkey: 0x0102,
            va: 0x1000,
            mr_len: 0x2000,
        }
    }

    fn write_only(aim: &Aim, psn: u32) -> Vec<u8> {
        let ext = ExtHeaders {
            reth: Some(rocenic_proto::wire::RethRepr {
                va: aim.va,
                rkey: aim.rkey,
                dma_len: 8,
            }),
            ..ExtHeaders::default()
        };
        build(
            aim,
            bth_to(Opcode::RdmaWriteOnly, 0x11, psn),
            ext,
            &[1, 2, 3, 4, 5, 6, 7, 8],
        )
    }

    #[test]
    fn resealed_classes_parse_and_sealed_ones_do_not() {
        let a = aim();
        let seeds = vec![write_only(&a, 100)];
        assert!(RoceRepr::parse(&seeds[0]).is_ok());
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for _ in 0..200 {
            // The PSN edits keep every other field, so the frame parses, at another PSN.
            for class in [Class::PsnInWindow, Class::PsnOutOfWindow] {
                let f = mutate(&mut rng, class, &seeds, &a);
                let (r, _) = RoceRepr::parse(&f).unwrap();
                assert_ne!(r.bth.psn.value(), 100, "{class}");
            }
            let f = mutate(&mut rng, Class::StaleQpn, &seeds, &a);
            assert_eq!(RoceRepr::parse(&f).unwrap().0.bth.dest_qp, 0x13);
            let f = mutate(&mut rng, Class::UnknownQpn, &seeds, &a);
            let qp = RoceRepr::parse(&f).unwrap().0.bth.dest_qp;
            assert!(qp != 0x11 && qp != 0x13);
            let f = mutate(&mut rng, Class::WrongKey, &seeds, &a);
            let r = RoceRepr::parse(&f).unwrap().0.ext.reth.unwrap();
            assert!(r.rkey != a.rkey || r.va != a.va);
            // Trailing Ethernet padding keeps the frame valid.
            let f = mutate(&mut rng, Class::Pad, &seeds, &a);
            assert!(RoceRepr::parse(&f).is_ok());
            // A flipped bit with the seal left broken parses only where the ICRC does not
            // look: the Ethernet header, or a byte the ICRC masks (IPv4 TOS, TTL and
            // checksum, the UDP checksum, BTH byte 4).
            let f = mutate(&mut rng, Class::BitFlip, &seeds, &a);
            assert_ne!(f, seeds[0]);
            if RoceRepr::parse(&f).is_ok() {
                const UNSEALED: [usize; 6] = [15, 22, 24, 25, 40, 41];
                let changed = (0..f.len()).filter(|&i| f[i] != seeds[0][i]);
                for i in changed {
                    assert!(
                        i < 14 || UNSEALED.contains(&i) || i == 46,
                        "byte {i} flipped"
                    );
                }
            }
            let f = mutate(&mut rng, Class::Truncate, &seeds, &a);
            assert!(RoceRepr::parse(&f).is_err());
            for class in [Class::Vlan, Class::Ipv6] {
                assert!(RoceRepr::parse(&mutate(&mut rng, class, &seeds, &a)).is_err());
            }
            let f = mutate(&mut rng, Class::AckForNothing, &seeds, &a);
            assert!(RoceRepr::parse(&f).unwrap().0.bth.opcode.is_response());
        }
    }

    #[test]
    fn same_seed_same_stream() {
        let a = aim();
        let seeds = vec![write_only(&a, 100)];
        let draw = || {
            let mut rng = ChaCha8Rng::seed_from_u64(3);
            Class::ALL
                .iter()
                .map(|&c| mutate(&mut rng, c, &seeds, &a))
                .collect::<Vec<_>>()
        };
        assert_eq!(draw(), draw());
    }
}
