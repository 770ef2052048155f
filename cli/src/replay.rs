//! `rocenic replay FILE`: the frames of a capture fed one by one into one NIC whose QPs are
//! set up from the command line, and what the NIC did with each.
//!
//! # Which frames
//!
//! The capture (classic pcap or pcapng, Ethernet link type) holds both directions of a
//! conversation. The NIC plays one side: the frames addressed to its MAC or IPv4 address
//! (`--local-mac`, `--local-ip`), or with `--from IP` the frames whose source is `IP`. The
//! others are skipped and counted, as are frames the capture cut short (snap length) and
//! runts without an Ethernet header.
//!
//! # The set-up
//!
//! One PD, a send and a receive CQ, and for each `--qpn` an RC QP connected to
//! `--peer-qpn` with `--epsn` as the first PSN it expects and `--sq-psn` as its own; each
//! `--mr` is a buffer registered with its access. Receives are kept posted on every QP
//! (`--recvs` of `--recv-len` bytes, in a buffer of their own). Whatever is not given is
//! read from the fed frames and printed with the report: the QPNs are the destinations of
//! the requests, the expected PSN of a QP the PSN of its first request, the peer's address
//! the source of that request, the peer's QPN (one QP only) the destination of the local
//! side's own frames in the capture, the path MTU the payload of a FIRST or MIDDLE packet (else
//! 4096), the MRs the ranges the RETHs and AtomicETHs of each rkey reach.
//!
//! The driver picks the NIC's own QPNs, keys and virtual addresses, so each fed frame is
//! relocated before it goes in: its destination QPN, and the rkey and virtual address of its
//! RETH or AtomicETH, are translated from the capture's names to the NIC's, and its ICRC is
//! recomputed if it was right (a wrong ICRC stays wrong). A QPN or rkey of the capture that
//! was not set up and happens to be one of the NIC's is moved to one that is not, so it
//! stays unknown. The report speaks the capture's names.
//!
//! # What is reported
//!
//! Each fed frame is injected alone and the world runs until the NIC has been quiet (nothing
//! sent or written) for [`QUIET_CYCLES`]; what happened meanwhile is the frame's: the
//! counters that moved, the frames sent (ACKs, NAKs, READ responses), the bytes written by
//! DMA into the MRs and elsewhere (CQEs), the completions. Its verdict:
//! `accepted`, `duplicate`, `nak` (with the AETH syndrome), `dropped` (with the reason:
//! the counter that moved and what the frame says), or `ignored` (nothing counted).

use std::collections::BTreeMap;
use std::io::{BufReader, Read, Write};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::Instant;
use std::{cell::RefCell, rc::Rc};

use anyhow::{bail, Context as _};
use serde::Serialize;

use pcap_file::pcap::PcapReader;
use pcap_file::pcapng::{Block, PcapNgReader};
use pcap_file::DataLink;
use rocenic_model::{Nic, NicConfig};
use rocenic_proto::device::Frame;
use rocenic_proto::wire::{
    AethPacket, AtomicEthPacket, BthPacket, Opcode, RethPacket, RoceRepr, Syndrome, WireError,
    ICRC_LEN,
};
use rocenic_sim::{NodeId, World};

use crate::fuzz::describe;
use crate::fuzz::mutate::{reseal, BTH_AT, EXT_AT, IP_AT};
use crate::setup::{connect, ConnInfo, ConnParams};
use rocenic_driver::backend::model::{pair_world, PairConfig};
use rocenic_driver::backend::rtl::engine_device;
use rocenic_driver::verbs::{
    access, Buffer, Context, Counter, Cq, Mr, Mtu, Qp, QpCap, QpInitAttr, RecvWr, Wc,
};

/// Cycles without anything sent or written by DMA that end a frame's turn.
pub const QUIET_CYCLES: u64 = 1000;
/// Cycles a frame's turn may last.
pub const FRAME_BUDGET: u64 = 200_000;
/// Largest MR read from the capture (a bigger one must be given with `--mr`).
const MAX_INFERRED_MR: u64 = 64 << 20;

/// `rocenic replay` options.
#[derive(Debug, Clone, clap::Args)]
#[command(
    after_help = "Numbers take a 0x prefix for hex. Example, the responder side of a \
    capture of `rocenic perf write --pcap perf.pcap`, everything else read from it:\n  \
    rocenic replay perf.pcap --local-ip 10.0.0.2\nWith the set-up spelled out:\n  \
    rocenic replay cap.pcap --local-ip 10.0.0.2 --local-mac 02:00:00:00:00:02 --qpn 0x11 \
    --peer-qpn 0x12 --epsn 0x3e8 --mtu 1024 --mr va=0x7f0000,len=65536,rkey=0x1234,access=rw"
)]
pub struct ReplayArgs {
    /// The capture: pcap or pcapng, Ethernet frames.
    pub file: PathBuf,
    /// The NIC: "model" or "rtl" (the Verilated engine; needs Verilator).
    #[arg(long, default_value = "model")]
    pub backend: String,
    /// The NIC's MAC address.
    #[arg(long, default_value = "02:00:00:00:00:02")]
    pub local_mac: String,
    /// The NIC's IPv4 address.
    #[arg(long, default_value = "10.0.0.2")]
    pub local_ip: Ipv4Addr,
    /// Feed the frames whose IPv4 source is this address (instead of the frames addressed
    /// to the local MAC or IP).
    #[arg(long)]
    pub from: Option<Ipv4Addr>,
    /// The local QPNs as the capture names them (comma-separated; default: the
    /// destinations of the fed requests).
    #[arg(long, value_delimiter = ',', value_parser = parse_u32)]
    pub qpn: Vec<u32>,
    /// The peer's QPN of each local QP (default: with one QP, the destination of the local
    /// side's frames in the capture, else 0; the NIC's answers go nowhere either way).
    #[arg(long, value_delimiter = ',', value_parser = parse_u32)]
    pub peer_qpn: Vec<u32>,
    /// The first PSN each QP expects (default: the PSN of its first fed request).
    #[arg(long, value_delimiter = ',', value_parser = parse_u32)]
    pub epsn: Vec<u32>,
    /// The first PSN each QP sends (default 0).
    #[arg(long, value_delimiter = ',', value_parser = parse_u32)]
    pub sq_psn: Vec<u32>,
    /// The peer's MAC (default: the source of the fed frames).
    #[arg(long)]
    pub peer_mac: Option<String>,
    /// The peer's IPv4 address (default: the source of the fed frames).
    #[arg(long)]
    pub peer_ip: Option<Ipv4Addr>,
    /// Path MTU in bytes: 256, 512, 1024, 2048 or 4096 (default: from the capture).
    #[arg(long)]
    pub mtu: Option<u32>,
    /// A memory region as the capture names it: va=ADDR,len=BYTES,rkey=KEY[,access=rwa]
    /// (r remote read, w remote write, a remote atomic; default rwa). Repeatable; default:
    /// one per rkey of the fed RETHs and AtomicETHs, covering what they reach.
    #[arg(long, value_parser = parse_mr)]
    pub mr: Vec<MrSpec>,
    /// Receives kept posted on each QP.
    #[arg(long, default_value_t = 16)]
    pub recvs: u32,
    /// Bytes of each posted receive.
    #[arg(long, default_value_t = 16384)]
    pub recv_len: u32,
    /// Print one JSON object (per-frame records and totals) instead of a table.
    #[arg(long)]
    pub json: bool,
}

impl ReplayArgs {
    /// The defaults for `file`.
    pub fn new(file: impl Into<PathBuf>) -> Self {
        ReplayArgs {
            file: file.into(),
            backend: "model".into(),
            local_mac: "02:00:00:00:00:02".into(),
            local_ip: Ipv4Addr::new(10, 0, 0, 2),
            from: None,
            qpn: Vec::new(),
            peer_qpn: Vec::new(),
            epsn: Vec::new(),
            sq_psn: Vec::new(),
            peer_mac: None,
            peer_ip: None,
            mtu: None,
            mr: Vec::new(),
            recvs: 16,
            recv_len: 16384,
            json: false,
        }
    }
}

/// An MR as the capture names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MrSpec {
    pub va: u64,
    pub len: u64,
    pub rkey: u32,
    /// `access` flags.
    pub access: u32,
}

fn parse_u64(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let r = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    };
    r.map_err(|e| format!("{s:?} is not a number ({e})"))
}

fn parse_u32(s: &str) -> Result<u32, String> {
    let v = parse_u64(s)?;
    u32::try_from(v).map_err(|_| format!("{s} does not fit 32 bits"))
}

fn parse_access(s: &str) -> Result<u32, String> {
    let mut a = 0;
    for c in s.chars() {
        a |= match c {
            'r' => access::REMOTE_READ,
            'w' => access::REMOTE_WRITE | access::LOCAL_WRITE,
            'a' => access::REMOTE_ATOMIC | access::LOCAL_WRITE,
            _ => return Err(format!("access {s:?}: letters r, w, a")),
        };
    }
    Ok(a | access::LOCAL_WRITE)
}

/// Parses `va=ADDR,len=BYTES,rkey=KEY[,access=rwa]`.
pub fn parse_mr(s: &str) -> Result<MrSpec, String> {
    let (mut va, mut len, mut rkey) = (None, None, None);
    let mut acc = access::ALL;
    for part in s.split(',') {
        let (k, v) = part
            .split_once('=')
            .ok_or_else(|| format!("--mr {s:?}: want va=ADDR,len=BYTES,rkey=KEY[,access=rwa]"))?;
        match k.trim() {
            "va" => va = Some(parse_u64(v)?),
            "len" => len = Some(parse_u64(v)?),
            "rkey" => rkey = Some(parse_u32(v)?),
            "access" => acc = parse_access(v)?,
            k => return Err(format!("--mr: unknown field {k:?} (va, len, rkey, access)")),
        }
    }
    match (va, len, rkey) {
        (Some(va), Some(len), Some(rkey)) if len > 0 => Ok(MrSpec {
            va,
            len,
            rkey,
            access: acc,
        }),
        _ => Err(format!("--mr {s:?}: va, len (above 0) and rkey are needed")),
    }
}

fn parse_mac(s: &str) -> anyhow::Result<[u8; 6]> {
    let parts: Vec<&str> = s.split(':').collect();
    let mut mac = [0u8; 6];
    if parts.len() != 6 {
        bail!("{s:?} is not a MAC address (six hex bytes joined by ':')");
    }
    for (m, p) in mac.iter_mut().zip(parts) {
        *m = u8::from_str_radix(p, 16).with_context(|| format!("{s:?} is not a MAC address"))?;
    }
    Ok(mac)
}

fn mac_str(m: [u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// One frame of a capture.
#[derive(Debug, Clone)]
pub struct Captured {
    pub data: Vec<u8>,
    /// Its length on the wire (above `data.len()` when the capture cut it).
    pub orig_len: u32,
}

/// Reads a pcap or pcapng stream of Ethernet frames.
pub fn read_capture<R: Read>(mut r: R) -> anyhow::Result<Vec<Captured>> {
    let mut bytes = Vec::new();
    r.read_to_end(&mut bytes).context("reading the capture")?;
    if bytes.len() < 4 {
        bail!(
            "not a capture: {} bytes, shorter than a pcap header",
            bytes.len()
        );
    }
    let mut out = Vec::new();
    if bytes[..4] == [0x0a, 0x0d, 0x0d, 0x0a] {
        let mut rd = PcapNgReader::new(&bytes[..]).context("not a readable pcapng file")?;
        while let Some(block) = rd.next_block() {
            let block = block.context("pcapng file truncated or corrupt")?;
            let (iface, data, orig_len) = match block {
                Block::EnhancedPacket(p) => (p.interface_id, p.data.into_owned(), p.original_len),
                Block::SimplePacket(p) => (0, p.data.into_owned(), p.original_len),
                _ => continue,
            };
            match rd.interfaces().get(iface as usize).map(|i| i.linktype) {
                Some(DataLink::ETHERNET) => {}
                Some(l) => bail!(
                    "pcapng interface {iface} has link type {l:?}: replay needs Ethernet \
                     frames (capture on the Ethernet interface, not `any`)"
                ),
                None => bail!("pcapng packet of undeclared interface {iface}"),
            }
            out.push(Captured { data, orig_len });
        }
        return Ok(out);
    }
    let mut rd = PcapReader::new(&bytes[..])
        .map_err(|e| anyhow::anyhow!("not a pcap or pcapng file ({e})"))?;
    let link = rd.header().datalink;
    if link != DataLink::ETHERNET {
        bail!(
            "link type {link:?}: replay needs Ethernet frames (capture on the Ethernet \
             interface, not `any`)"
        );
    }
    while let Some(p) = rd.next_packet() {
        let p = p.context("pcap file truncated or corrupt")?;
        out.push(Captured {
            orig_len: p.orig_len,
            data: p.data.into_owned(),
        });
    }
    Ok(out)
}

/// Reads a capture file.
pub fn read_capture_file(path: &Path) -> anyhow::Result<Vec<Captured>> {
    let f = std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    read_capture(BufReader::new(f)).with_context(|| path.display().to_string())
}

/// The set-up the NIC got, in the capture's names (what the report prints).
#[derive(Debug, Clone, Serialize)]
pub struct Setup {
    pub local_mac: String,
    pub local_ip: String,
    pub from: Option<String>,
    pub mtu: u32,
    pub qps: Vec<QpSetup>,
    pub mrs: Vec<MrSpec>,
    /// What was read from the capture rather than given.
    pub inferred: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct QpSetup {
    pub qpn: u32,
    pub peer_qpn: u32,
    pub epsn: u32,
    pub sq_psn: u32,
    pub peer_mac: String,
    pub peer_ip: String,
    /// The NIC's own QPN for it.
    pub nic_qpn: u32,
}

/// What the NIC did with one frame of the capture.
#[derive(Debug, Clone, Serialize)]
pub struct FrameRecord {
    /// Its number in the capture, from 1 (as Wireshark counts).
    pub index: usize,
    pub len: usize,
    /// The frame decoded.
    pub frame: String,
    /// accepted, duplicate, nak, dropped, ignored or skipped.
    pub verdict: String,
    /// Why it was dropped or skipped, or the NAK's syndrome.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Counters that moved, by how much.
    pub counters: BTreeMap<String, u64>,
    /// The frames the NIC sent, decoded.
    pub sent: Vec<String>,
    /// Bytes written by DMA into the MRs.
    pub mr_bytes: u64,
    /// Bytes written by DMA elsewhere (CQEs).
    pub other_dma_bytes: u64,
    /// Completions, `wr_id`s left out.
    pub completions: Vec<String>,
}

/// Sums over the capture.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Totals {
    pub frames: usize,
    pub fed: usize,
    pub skipped: usize,
    pub accepted: usize,
    pub duplicates: usize,
    pub naks: usize,
    pub dropped: usize,
    pub ignored: usize,
    pub sent: usize,
    pub mr_bytes: u64,
    pub completions: usize,
    /// Drops by reason (counter name).
    pub drops: BTreeMap<String, usize>,
}

/// The result of a replay (what `--json` prints).
#[derive(Debug, Clone, Serialize)]
pub struct ReplayReport {
    pub file: String,
    pub backend: String,
    pub setup: Setup,
    pub frames: Vec<FrameRecord>,
    pub totals: Totals,
    /// The NIC's global counters at the end.
    pub counters: BTreeMap<String, u64>,
    pub cycles: u64,
    pub wall_seconds: f64,
}

/// A live MR: the capture's names and the NIC's.
struct LiveMr {
    spec: MrSpec,
    buf: Buffer,
    mr: Mr,
    /// IOVA range of its buffer.
    iova: (u64, u64),
}

/// A replay after it ran: the report and the NIC's memory.
pub struct Replay {
    pub report: ReplayReport,
    ctx: Context,
    mrs: Vec<LiveMr>,
}

impl Replay {
    /// The contents of MR `i` (in `--mr` order, or the inferred ones').
    pub fn mr_bytes(&mut self, i: usize) -> anyhow::Result<Vec<u8>> {
        let m = self.mrs.get(i).context("no such MR")?;
        let mut out = vec![0u8; m.buf.len];
        self.ctx.read(&m.buf, 0, &mut out)?;
        Ok(out)
    }
}

/// The untagged IPv4 addresses of a frame: (source, destination).
fn ipv4_addrs(f: &[u8]) -> Option<([u8; 4], [u8; 4])> {
    if f.len() >= IP_AT + 20 && f[12..14] == [0x08, 0x00] && f[IP_AT] >> 4 == 4 {
        let s: [u8; 4] = f[IP_AT + 12..IP_AT + 16].try_into().ok()?;
        let d: [u8; 4] = f[IP_AT + 16..IP_AT + 20].try_into().ok()?;
        Some((s, d))
    } else {
        None
    }
}

/// Whether the frame has the untagged IPv4 (no options) + UDP + BTH layout.
fn has_bth(f: &[u8]) -> bool {
    f.len() >= EXT_AT + ICRC_LEN && f[12..14] == [0x08, 0x00] && f[IP_AT] == 0x45
}

fn opcode(f: &[u8]) -> Opcode {
    BthPacket::new_unchecked(&f[BTH_AT..]).opcode()
}

/// The (rkey, va, len) a request's RETH or AtomicETH names.
fn remote_ref(f: &[u8]) -> Option<(u32, u64, u64)> {
    if !has_bth(f) {
        return None;
    }
    let op = opcode(f);
    if op.has_reth() && f.len() >= EXT_AT + 16 {
        let r = RethPacket::new_unchecked(&f[EXT_AT..]);
        Some((r.rkey(), r.va(), u64::from(r.dma_len())))
    } else if op.has_atomic_eth() && f.len() >= EXT_AT + 28 {
        let a = AtomicEthPacket::new_unchecked(&f[EXT_AT..]);
        Some((a.rkey(), a.va(), 8))
    } else {
        None
    }
}

/// Whether the ICRC of a frame with the BTH layout is right.
fn icrc_ok(f: &[u8]) -> bool {
    let total = usize::from(u16::from_be_bytes([f[IP_AT + 2], f[IP_AT + 3]]));
    let end = IP_AT + total;
    end <= f.len() && rocenic_proto::wire::verify_icrc(&f[IP_AT..end]).is_ok()
}

/// Runs a replay.
pub fn replay(args: &ReplayArgs) -> anyhow::Result<Replay> {
    let t0 = Instant::now();
    let rtl = match args.backend.as_str() {
        "model" => false,
        "rtl" => true,
        b => bail!("--backend {b}: replay runs on model or rtl"),
    };
    let local_mac = parse_mac(&args.local_mac).context("--local-mac")?;
    let local_ip = args.local_ip.octets();
    let peer_mac_arg = args
        .peer_mac
        .as_deref()
        .map(parse_mac)
        .transpose()
        .context("--peer-mac")?;
    let captured = read_capture_file(&args.file)?;
    if captured.is_empty() {
        bail!("{}: the capture holds no frames", args.file.display());
    }

    // Which frames are fed.
    let mut skip: Vec<Option<String>> = Vec::with_capacity(captured.len());
    for c in &captured {
        let f = &c.data;
        let why = if f.len() < 14 {
            Some(format!(
                "runt: {} bytes, shorter than an Ethernet header",
                f.len()
            ))
        } else if (c.orig_len as usize) > f.len() {
            Some(format!(
                "cut by the capture: {} of {} bytes",
                f.len(),
                c.orig_len
            ))
        } else {
            let addrs = ipv4_addrs(f);
            match args.from {
                Some(from) => match addrs {
                    Some((s, _)) if s == from.octets() => None,
                    _ => Some(format!("not from {from}")),
                },
                None => {
                    let to_us = f[..6] == local_mac || addrs.is_some_and(|(_, d)| d == local_ip);
                    (!to_us).then(|| {
                        format!(
                            "not addressed to {} / {}",
                            mac_str(local_mac),
                            args.local_ip
                        )
                    })
                }
            }
        };
        skip.push(why);
    }
    let fed: Vec<usize> = (0..captured.len()).filter(|&i| skip[i].is_none()).collect();
    if fed.is_empty() {
        bail!(
            "{}: none of its {} frames is {}: say which side the NIC plays with --local-ip, \
             --local-mac or --from",
            args.file.display(),
            captured.len(),
            match args.from {
                Some(f) => format!("from {f}"),
                None => format!("addressed to {} / {}", mac_str(local_mac), args.local_ip),
            }
        );
    }

    // The set-up, what is not given read from the fed requests.
    let mut inferred = Vec::new();
    let requests: Vec<&[u8]> = fed
        .iter()
        .map(|&i| captured[i].data.as_slice())
        .filter(|f| has_bth(f) && opcode(f).is_known() && opcode(f).is_request())
        .collect();
    let mut qpns = args.qpn.clone();
    if qpns.is_empty() {
        for f in &requests {
            let q = BthPacket::new_unchecked(&f[BTH_AT..]).dest_qp();
            if !qpns.contains(&q) {
                qpns.push(q);
            }
        }
        if qpns.is_empty() {
            bail!("no request among the fed frames to read a QPN from: give --qpn");
        }
        inferred.push("qpn".to_string());
    }
    let nth = |v: &[u32], i: usize, what: &str| -> anyhow::Result<Option<u32>> {
        match v.len() {
            0 => Ok(None),
            n if n == qpns.len() => Ok(Some(v[i])),
            1 => Ok(Some(v[0])),
            n => bail!("--{what}: {n} values for {} QPs", qpns.len()),
        }
    };
    // With one QP, its peer is the one QP the local side's own frames in the capture go to.
    let mut peer_qpns = args.peer_qpn.clone();
    if peer_qpns.is_empty() && qpns.len() == 1 {
        let mut seen: Vec<u32> = Vec::new();
        for (c, s) in captured.iter().zip(&skip) {
            let f = &c.data;
            let ours = ipv4_addrs(f).is_some_and(|(src, _)| src == local_ip);
            if s.is_some() && ours && has_bth(f) {
                let q = BthPacket::new_unchecked(&f[BTH_AT..]).dest_qp();
                if !seen.contains(&q) {
                    seen.push(q);
                }
            }
        }
        if let [q] = seen.as_slice() {
            peer_qpns.push(*q);
            inferred.push("peer_qpn".into());
        }
    }
    let mut qps = Vec::new();
    for (i, &qpn) in qpns.iter().enumerate() {
        let first = requests
            .iter()
            .find(|f| BthPacket::new_unchecked(&f[BTH_AT..]).dest_qp() == qpn);
        let epsn = match nth(&args.epsn, i, "epsn")? {
            Some(p) => p & 0xff_ffff,
            None => {
                inferred.push(format!("epsn of QP {qpn:#x}"));
                first.map_or(0, |f| BthPacket::new_unchecked(&f[BTH_AT..]).psn().value())
            }
        };
        let src = first
            .copied()
            .or_else(|| requests.first().copied())
            .unwrap_or(&captured[fed[0]].data);
        let peer_mac = peer_mac_arg.unwrap_or_else(|| src[6..12].try_into().expect("6 bytes"));
        let peer_ip = match args.peer_ip {
            Some(ip) => ip.octets(),
            None => ipv4_addrs(src).map_or([0; 4], |(s, _)| s),
        };
        if args.peer_mac.is_none() || args.peer_ip.is_none() {
            inferred.push(format!("peer address of QP {qpn:#x}"));
        }
        qps.push(QpSetup {
            qpn,
            peer_qpn: nth(&peer_qpns, i, "peer-qpn")?.unwrap_or(0) & 0xff_ffff,
            epsn,
            sq_psn: nth(&args.sq_psn, i, "sq-psn")?.unwrap_or(0) & 0xff_ffff,
            peer_mac: mac_str(peer_mac),
            peer_ip: Ipv4Addr::from(peer_ip).to_string(),
            nic_qpn: 0,
        });
    }
    let mtu = match args.mtu {
        Some(m) => m,
        None => {
            inferred.push("mtu".into());
            requests
                .iter()
                .filter(|f| opcode(f).is_first() || opcode(f).is_middle())
                .filter_map(|f| RoceRepr::parse(f).ok().map(|(_, p)| p.len() as u32))
                .max()
                .unwrap_or(4096)
        }
    };
    let path_mtu = Mtu::from_bytes(mtu)
        .with_context(|| format!("--mtu {mtu}: 256, 512, 1024, 2048 or 4096"))?;
    let mut mr_specs = args.mr.clone();
    if mr_specs.is_empty() {
        let mut reach: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
        for f in &requests {
            if let Some((rkey, va, len)) = remote_ref(f) {
                let e = reach.entry(rkey).or_insert((va, va));
                e.0 = e.0.min(va);
                e.1 = e.1.max(va.saturating_add(len.max(1)));
            }
        }
        for (rkey, (lo, hi)) in reach {
            if hi - lo > MAX_INFERRED_MR {
                bail!(
                    "the requests with rkey {rkey:#x} reach {} bytes: give the MR with --mr",
                    hi - lo
                );
            }
            mr_specs.push(MrSpec {
                va: lo,
                len: hi - lo,
                rkey,
                access: access::ALL,
            });
        }
        if !mr_specs.is_empty() {
            inferred.push("mr".into());
        }
    }

    // The NIC.
    let cfg = PairConfig::default();
    let peer = Nic::new(NicConfig::default());
    let pair = if rtl {
        let dev = crate::progress::rtl_build(|| engine_device(&cfg.world, None, None))
            .context("building the RTL engine")?;
        pair_world(&cfg, None, dev, peer)?
    } else {
        pair_world(&cfg, None, Nic::new(NicConfig::default()), peer)?
    };
    let world: Rc<RefCell<World>> = pair.world.clone();
    let node: NodeId = pair.a.node();
    let mut ctx = Context::open(Box::new(pair.a))?;
    ctx.set_port(local_mac, local_ip);
    let pd = ctx.alloc_pd()?;
    let iova_of = |w: &World, buf: &Buffer| -> anyhow::Result<(u64, u64)> {
        let h = w.host(node);
        let id = h
            .memory()
            .alloc_at(buf.addr)
            .context("buffer not in host memory")?;
        let r = h.region(id).context("buffer not mapped")?;
        Ok((r.iova, r.iova + r.len as u64))
    };
    let mut mrs = Vec::new();
    for spec in &mr_specs {
        let len = usize::try_from(spec.len).context("MR length")?;
        let buf = ctx
            .alloc_buf(len)
            .with_context(|| format!("allocating the MR of rkey {:#x}", spec.rkey))?;
        let mr = ctx.reg_mr(pd, &buf, spec.access)?;
        let iova = iova_of(&world.borrow(), &buf)?;
        mrs.push(LiveMr {
            spec: *spec,
            buf,
            mr,
            iova,
        });
    }
    let recv_total = (args.recvs as usize) * (args.recv_len as usize) * qps.len();
    let (recv_buf, recv_mr) = if recv_total > 0 {
        let b = ctx.alloc_buf(recv_total)?;
        let m = ctx.reg_mr(pd, &b, access::LOCAL_WRITE)?;
        (Some(b), Some(m))
    } else {
        (None, None)
    };
    let recv_iova = match &recv_buf {
        Some(b) => iova_of(&world.borrow(), b)?,
        None => (0, 0),
    };
    let scq: Cq = ctx.create_cq(1024)?;
    let rcq: Cq = ctx.create_cq(1024)?;
    let mut params = ConnParams::new(path_mtu);
    params.max_rd_atomic = 16;
    let mut live_qps: Vec<Qp> = Vec::new();
    for q in qps.iter_mut() {
        let qp = ctx.create_qp(
            pd,
            &QpInitAttr {
                send_cq: scq,
                recv_cq: rcq,
                cap: QpCap {
                    max_send_wr: 16,
                    max_recv_wr: args.recvs.max(1),
                    max_send_sge: 1,
                    max_recv_sge: 1,
                    max_inline_data: 0,
                },
            },
        )?;
        q.nic_qpn = qp.qp_num;
        let local = ConnInfo {
            qpn: qp.qp_num,
            psn: q.sq_psn,
            mac: local_mac,
            ip: local_ip,
        };
        let remote = ConnInfo {
            qpn: q.peer_qpn,
            psn: q.epsn,
            mac: parse_mac(&q.peer_mac)?,
            ip: q.peer_ip.parse::<Ipv4Addr>()?.octets(),
        };
        connect(&mut ctx, qp, &local, &remote, &params)
            .with_context(|| format!("connecting QP {:#x}", q.qpn))?;
        live_qps.push(qp);
    }
    // Receives: slot s of QP i at (i * recvs + s) * recv_len; reposted when consumed.
    let post = |ctx: &mut Context, i: usize, slot: u32| -> anyhow::Result<()> {
        let Some(m) = recv_mr else { return Ok(()) };
        let at = (i as u64 * u64::from(args.recvs) + u64::from(slot)) * u64::from(args.recv_len);
        let wr = RecvWr {
            wr_id: (i as u64) << 32 | u64::from(slot),
            sg_list: vec![m.sge(at, args.recv_len)],
        };
        ctx.post_recv(live_qps[i], &[wr])
            .map_err(|e| anyhow::anyhow!("posting a receive: {e}"))
    };
    for i in 0..qps.len() {
        for s in 0..args.recvs {
            post(&mut ctx, i, s)?;
        }
    }

    // Names: capture -> NIC.
    let qp_map: BTreeMap<u32, u32> = qps.iter().map(|q| (q.qpn, q.nic_qpn)).collect();
    let nic_qpns: Vec<u32> = qps.iter().map(|q| q.nic_qpn).collect();
    let nic_keys: Vec<u32> = mrs
        .iter()
        .map(|m| m.mr.rkey)
        .chain(recv_mr.map(|m| m.rkey))
        .collect();
    let unused_qpn = (1..0xff_ffffu32)
        .rev()
        .find(|q| !nic_qpns.contains(q))
        .expect("a free QPN");
    let relocate = |f: &mut [u8]| {
        if !has_bth(f) {
            return;
        }
        let sealed = icrc_ok(f);
        let before = f.to_vec();
        let mut bth = BthPacket::new_unchecked(&mut f[BTH_AT..]);
        let q = bth.dest_qp();
        match qp_map.get(&q) {
            Some(&n) => bth.set_dest_qp(n),
            None if nic_qpns.contains(&q) => bth.set_dest_qp(unused_qpn),
            None => {}
        }
        let op = bth.opcode();
        let map_key = |rkey: u32, va: u64| -> (u32, u64) {
            match mrs.iter().find(|m| m.spec.rkey == rkey) {
                Some(m) => (
                    m.mr.rkey,
                    va.wrapping_sub(m.spec.va).wrapping_add(m.mr.addr),
                ),
                None if nic_keys.contains(&rkey) => (rkey ^ 0x8000_0000, va),
                None => (rkey, va),
            }
        };
        if op.has_reth() && f.len() >= EXT_AT + 16 {
            let mut r = RethPacket::new_unchecked(&mut f[EXT_AT..]);
            let (k, va) = map_key(r.rkey(), r.va());
            r.set_rkey(k);
            r.set_va(va);
        } else if op.has_atomic_eth() && f.len() >= EXT_AT + 28 {
            let mut a = AtomicEthPacket::new_unchecked(&mut f[EXT_AT..]);
            let (k, va) = map_key(a.rkey(), a.va());
            a.set_rkey(k);
            a.set_va(va);
        }
        if f == before.as_slice() {
            return;
        }
        let total = usize::from(u16::from_be_bytes([f[IP_AT + 2], f[IP_AT + 3]]));
        let end = IP_AT + total;
        if sealed {
            reseal(f);
        } else if end <= f.len() && end >= IP_AT + 20 + ICRC_LEN && icrc_ok(f) {
            // The edit made a wrong ICRC right by chance: keep it wrong.
            f[end - 1] ^= 0xff;
        }
    };

    // Frames out, recorded and kept from the peer.
    let out: Rc<RefCell<Vec<Frame>>> = Rc::default();
    {
        let mut w = world.borrow_mut();
        let o = out.clone();
        w.link_mut(node)
            .context("the NIC has no link")?
            .set_drop_filter(move |frame: &[u8], _| {
                o.borrow_mut().push(frame.to_vec());
                true
            });
        w.host_mut(node).set_dma_log(true);
        w.host_mut(node).take_dma_log();
    }
    ctx.wait(2000);
    out.borrow_mut().clear();
    world.borrow_mut().host_mut(node).take_dma_log();

    let capture_qpn = |nic: u32| qps.iter().find(|q| q.nic_qpn == nic).map_or(nic, |q| q.qpn);
    let mut records = Vec::new();
    let mut totals = Totals {
        frames: captured.len(),
        ..Totals::default()
    };
    let mut wcs = [Wc::default(); 64];
    let mut before = ctx.counters();
    for (i, c) in captured.iter().enumerate() {
        let mut rec = FrameRecord {
            index: i + 1,
            len: c.data.len(),
            frame: if c.data.len() < 14 {
                format!("{} bytes", c.data.len())
            } else {
                describe(&c.data)
            },
            verdict: "skipped".into(),
            reason: skip[i].clone(),
            counters: BTreeMap::new(),
            sent: Vec::new(),
            mr_bytes: 0,
            other_dma_bytes: 0,
            completions: Vec::new(),
        };
        if skip[i].is_some() {
            totals.skipped += 1;
            records.push(rec);
            continue;
        }
        totals.fed += 1;
        let mut f = c.data.clone();
        let dest = has_bth(&f).then(|| BthPacket::new_unchecked(&f[BTH_AT..]).dest_qp());
        let epsn_now = match dest.and_then(|d| qp_map.get(&d)) {
            Some(&n) => {
                let qp = live_qps[nic_qpns.iter().position(|&x| x == n).expect("live")];
                Some(ctx.query_qp(qp)?.rq_psn)
            }
            None => None,
        };
        relocate(&mut f);
        // The frame's turn.
        let start = world.borrow().now();
        world.borrow_mut().inject_rx(node, f);
        let mut last = (usize::MAX, usize::MAX);
        let mut since = start;
        loop {
            let mut w = world.borrow_mut();
            w.advance(100);
            let now = w.now();
            let seen = (out.borrow().len(), w.host(node).dma_log().len());
            if seen != last || !w.rx_queue(node).is_empty() {
                last = seen;
                since = now;
            } else if now - since >= QUIET_CYCLES {
                break;
            }
            if now - start > FRAME_BUDGET {
                bail!(
                    "frame {}: the NIC was still busy after {FRAME_BUDGET} cycles",
                    i + 1
                );
            }
        }
        let after = ctx.counters();
        for k in Counter::ALL {
            let d = after[k as usize].wrapping_sub(before[k as usize]);
            if d != 0 {
                rec.counters.insert(k.name().into(), d);
            }
        }
        before = after;
        let moved = |k: Counter| rec.counters.contains_key(k.name());
        for w in world.borrow_mut().host_mut(node).take_dma_log() {
            if !w.write {
                continue;
            }
            let inside = |r: (u64, u64)| w.iova >= r.0 && w.iova < r.1;
            if mrs.iter().any(|m| inside(m.iova)) || inside(recv_iova) {
                rec.mr_bytes += w.len as u64;
            } else {
                rec.other_dma_bytes += w.len as u64;
            }
        }
        let mut nak = None;
        for o in out.borrow_mut().drain(..) {
            if has_bth(&o) && opcode(&o).has_aeth() && o.len() >= EXT_AT + 4 {
                let s = Syndrome::from(AethPacket::new_unchecked(&o[EXT_AT..]).syndrome());
                if !matches!(s, Syndrome::Ack { .. }) {
                    nak = Some(s.to_string());
                }
            }
            rec.sent.push(describe(&o));
        }
        for cq in [scq, rcq] {
            loop {
                let n = ctx.poll_cq(cq, &mut wcs)?;
                for wc in &wcs[..n] {
                    rec.completions.push(format!(
                        "{:?} {:?} {} B qp {:#x}{}",
                        wc.opcode,
                        wc.status,
                        wc.byte_len,
                        capture_qpn(wc.qp_num),
                        wc.imm_data
                            .map_or(String::new(), |x| format!(" imm {x:#x}"))
                    ));
                    if cq == rcq {
                        let q = (wc.wr_id >> 32) as usize;
                        if q < live_qps.len()
                            && wc.status == rocenic_driver::verbs::WcStatus::Success
                        {
                            post(&mut ctx, q, wc.wr_id as u32)?;
                        }
                    }
                }
                if n < wcs.len() {
                    break;
                }
            }
        }
        let parsed = RoceRepr::parse(&c.data).err();
        let (verdict, reason) = if let Some(s) = nak {
            ("nak", Some(s))
        } else if moved(Counter::RnrNaksSent) {
            ("nak", Some("RNR NAK".into()))
        } else if moved(Counter::Duplicates) {
            ("duplicate", None)
        } else if moved(Counter::IcrcDrops) {
            let detail = match parsed {
                Some(WireError::BadIcrc { expected, got }) => {
                    format!("icrc_drops: bad ICRC (frame {got:#010x}, computed {expected:#010x})")
                }
                _ => "icrc_drops: bad ICRC".into(),
            };
            ("dropped", Some(detail))
        } else if moved(Counter::MalformedDrops) {
            let detail = parsed.map_or("not parsed".into(), |e| e.to_string());
            ("dropped", Some(format!("malformed_drops: {detail}")))
        } else if moved(Counter::PsnSeqDrops) {
            let psn = BthPacket::new_unchecked(&c.data[BTH_AT..]).psn().value();
            let want = epsn_now.map_or(String::new(), |e| format!(", expected {e:#x}"));
            (
                "dropped",
                Some(format!("psn_seq_drops: PSN {psn:#x} out of sequence{want}")),
            )
        } else if moved(Counter::UnknownQpDrops) {
            let detail = match (ipv4_addrs(&c.data), dest) {
                (Some((_, d)), _) if d != local_ip => {
                    format!("not for the local IP ({})", Ipv4Addr::from(d))
                }
                (_, Some(q)) if !qp_map.contains_key(&q) => format!("unknown QPN {q:#x}"),
                (_, Some(q)) => {
                    let n = qp_map[&q];
                    let qp = live_qps[nic_qpns.iter().position(|&x| x == n).expect("live")];
                    let state = ctx.query_qp(qp)?.qp_state;
                    format!("QP {q:#x} cannot receive in state {state}")
                }
                _ => "no QP".into(),
            };
            ("dropped", Some(format!("unknown_qp_drops: {detail}")))
        } else if moved(Counter::RxFrames) {
            ("accepted", None)
        } else {
            ("ignored", Some("no counter moved".into()))
        };
        match verdict {
            "accepted" => totals.accepted += 1,
            "duplicate" => totals.duplicates += 1,
            "nak" => totals.naks += 1,
            "dropped" => {
                totals.dropped += 1;
                let key = reason
                    .as_deref()
                    .and_then(|r| r.split(':').next())
                    .unwrap_or("?")
                    .to_string();
                *totals.drops.entry(key).or_default() += 1;
            }
            _ => totals.ignored += 1,
        }
        rec.verdict = verdict.into();
        rec.reason = reason;
        totals.sent += rec.sent.len();
        totals.mr_bytes += rec.mr_bytes;
        totals.completions += rec.completions.len();
        records.push(rec);
    }
    let counters = ctx.counters();
    let report = ReplayReport {
        file: args.file.display().to_string(),
        backend: args.backend.clone(),
        setup: Setup {
            local_mac: mac_str(local_mac),
            local_ip: args.local_ip.to_string(),
            from: args.from.map(|f| f.to_string()),
            mtu,
            qps,
            mrs: mr_specs,
            inferred,
        },
        frames: records,
        totals,
        counters: Counter::ALL
            .iter()
            .map(|&k| (k.name().to_string(), counters[k as usize]))
            .collect(),
        cycles: world.borrow().now(),
        wall_seconds: t0.elapsed().as_secs_f64(),
    };
    Ok(Replay { report, ctx, mrs })
}

fn print_table(r: &ReplayReport, out: &mut dyn Write) -> anyhow::Result<()> {
    let s = &r.setup;
    writeln!(
        out,
        "replay {} --backend {}: NIC {} / {}, MTU {}{}",
        r.file,
        r.backend,
        s.local_mac,
        s.local_ip,
        s.mtu,
        s.from
            .as_ref()
            .map_or(String::new(), |f| format!(", frames from {f}"))
    )?;
    for q in &s.qps {
        writeln!(
            out,
            "  QP {:#x} <- peer QP {:#x} at {} / {}, ePSN {:#x}, SQ PSN {:#x}",
            q.qpn, q.peer_qpn, q.peer_mac, q.peer_ip, q.epsn, q.sq_psn
        )?;
    }
    for m in &s.mrs {
        writeln!(
            out,
            "  MR rkey {:#x}: va {:#x}, {} B, access {:#x}",
            m.rkey, m.va, m.len, m.access
        )?;
    }
    if !s.inferred.is_empty() {
        writeln!(out, "  read from the capture: {}", s.inferred.join(", "))?;
    }
    writeln!(
        out,
        "{:>5} {:>5}  {:<9}  frame / what followed",
        "#", "len", "verdict"
    )?;
    for f in &r.frames {
        writeln!(
            out,
            "{:>5} {:>5}  {:<9}  {}",
            f.index, f.len, f.verdict, f.frame
        )?;
        if let Some(why) = &f.reason {
            if f.verdict != "skipped" || r.frames.len() <= 64 {
                writeln!(out, "{:24}{why}", "")?;
            }
        }
        if f.mr_bytes > 0 {
            writeln!(out, "{:24}wrote {} B into memory", "", f.mr_bytes)?;
        }
        for x in &f.sent {
            writeln!(out, "{:24}sent {x}", "")?;
        }
        // Identical completions in a row (a flushed receive queue) on one line.
        let mut i = 0;
        while i < f.completions.len() {
            let x = &f.completions[i];
            let n = f.completions[i..].iter().take_while(|y| *y == x).count();
            if n > 1 {
                writeln!(out, "{:24}completion {x} (x{n})", "")?;
            } else {
                writeln!(out, "{:24}completion {x}", "")?;
            }
            i += n;
        }
    }
    let t = &r.totals;
    writeln!(
        out,
        "{} frames: {} fed, {} skipped; {} accepted, {} duplicates, {} NAKed, {} dropped, \
         {} ignored; {} sent, {} B written, {} completions",
        t.frames,
        t.fed,
        t.skipped,
        t.accepted,
        t.duplicates,
        t.naks,
        t.dropped,
        t.ignored,
        t.sent,
        t.mr_bytes,
        t.completions
    )?;
    if !t.drops.is_empty() {
        let d: Vec<String> = t.drops.iter().map(|(k, v)| format!("{k} {v}")).collect();
        writeln!(out, "drops: {}", d.join(", "))?;
    }
    Ok(())
}

/// `rocenic replay`: runs and prints the report.
pub fn run(args: &ReplayArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let r = replay(args)?.report;
    if args.json {
        writeln!(out, "{}", serde_json::to_string(&r)?)?;
    } else {
        print_table(&r, out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_parse() {
        assert_eq!(parse_u32("0x11").unwrap(), 0x11);
        assert_eq!(parse_u32("17").unwrap(), 17);
        assert!(parse_u32("0x1_0000_0000").is_err());
        let m = parse_mr("va=0x1000,len=4096,rkey=0x1234,access=r").unwrap();
        assert_eq!((m.va, m.len, m.rkey), (0x1000, 4096, 0x1234));
        assert_eq!(m.access, access::REMOTE_READ | access::LOCAL_WRITE);
        assert!(parse_mr("va=1,len=0,rkey=2").is_err());
        assert!(parse_mr("va=1,len=2").unwrap_err().contains("rkey"));
        assert!(parse_mr("va=1,len=2,rkey=3,access=x").is_err());
        assert_eq!(parse_mac("02:00:00:00:00:0a").unwrap()[5], 10);
        assert!(parse_mac("02:00:00").is_err());
    }

    #[test]
    fn bad_captures_are_errors() {
        let e = read_capture(&b"GET / HTTP/1.1\r\n\r\n"[..]).unwrap_err();
        assert!(format!("{e:#}").contains("not a pcap"), "{e:#}");
        assert!(read_capture(&b"ab"[..]).is_err());
        // A pcap header followed by half a packet record.
        let buf = rocenic_sim::pcap::SharedBuffer::new();
        let mut tap = rocenic_sim::pcap::PcapTap::new(buf.clone()).unwrap();
        tap.record(1, &[0u8; 60]).unwrap();
        tap.finish().unwrap();
        let bytes = buf.contents();
        assert_eq!(read_capture(&bytes[..]).unwrap().len(), 1);
        let e = read_capture(&bytes[..bytes.len() - 10]).unwrap_err();
        assert!(format!("{e:#}").contains("truncated"), "{e:#}");
    }

    fn pcapng(linktype: DataLink) -> Vec<u8> {
        use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
        use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionBlock;
        use pcap_file::pcapng::PcapNgWriter;
        let mut w = PcapNgWriter::new(Vec::new()).unwrap();
        w.write_pcapng_block(InterfaceDescriptionBlock::new(linktype, 128))
            .unwrap();
        for (len, orig) in [(60usize, 60u32), (128, 1082)] {
            w.write_pcapng_block(EnhancedPacketBlock {
                interface_id: 0,
                timestamp: std::time::Duration::from_nanos(4),
                original_len: orig,
                data: vec![0x5a; len].into(),
                options: Vec::new(),
            })
            .unwrap();
        }
        w.into_inner()
    }

    #[test]
    fn pcapng_is_read_with_its_cut_lengths() {
        let got = read_capture(&pcapng(DataLink::ETHERNET)[..]).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!((got[0].data.len(), got[0].orig_len), (60, 60));
        assert_eq!((got[1].data.len(), got[1].orig_len), (128, 1082));
        let e = read_capture(&pcapng(DataLink::LINUX_SLL)[..]).unwrap_err();
        assert!(format!("{e:#}").contains("needs Ethernet"), "{e:#}");
    }
}
