//! `rocenic demo`: two NICs, one RC connection per path MTU, every operation kind at sizes
//! from 0 B to 1 MiB; every completion and every byte of both hosts' memory is checked
//! against an expected image built from a seeded pattern.
//!
//! Each host has one buffer, registered once with every access right:
//!
//! ```text
//! 0            SRC   (message sources; READ targets on the responder)
//! REGION       DST   (receive buffers, WRITE targets, READ destinations)
//! 2*REGION     ATOM  (atomic targets at +0, atomic results at +ATOM_RESULTS)
//! 2*REGION+4K  INV   (a page registered anew for each SEND_WITH_INV to invalidate)
//! ```
//!
//! Operations alternate direction (A->B, then B->A), start at odd offsets, and run one at
//! a time, so after each one the whole of both buffers must equal the expected images.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context as _};
use clap::Args;

use crate::pattern::Pattern;
use crate::setup::{connected_pair, parse_backend, ConnParams, Endpoint, Testbed, TestbedOptions};
use rocenic_driver::verbs::{
    access, send_flags, Buffer, Context, Counter, Mr, Mtu, Pd, QpCap, RecvWr, SendWr, Wc, WcOpcode,
    WcStatus, WrOpcode,
};
use rocenic_driver::{AtomicWr, RdmaWr};

/// Arguments of `rocenic demo`.
#[derive(Debug, Clone, Args)]
pub struct DemoArgs {
    /// Device backend: "model", "rtl" (the Verilated engine, lossy links too; needs
    /// verilator and g++), or "vfio:<bdf-a>,<bdf-b>" (two boards cabled together).
    #[arg(long, default_value = "model")]
    pub backend: String,
    /// Write every frame both NICs send to this pcap file.
    #[arg(long)]
    pub pcap: Option<PathBuf>,
    /// Write a waveform of node A's RTL to this file (.vcd or .fst); --backend rtl only.
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Seed of the data pattern, the initial PSNs and the link faults.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Probability that the link loses a frame (each direction).
    #[arg(long, default_value_t = 0.0)]
    pub loss: f64,
    /// Largest message size in bytes.
    #[arg(long, default_value_t = 1 << 20)]
    pub max_size: usize,
    /// Path MTUs to run (comma-separated); default all of 256,512,1024,2048,4096.
    #[arg(long, value_delimiter = ',')]
    pub mtu: Vec<u32>,
    /// After the run, print both NICs' counters and those of the last MTU's QPs as
    /// `rdma statistic show` does (host A is rocenic0, host B rocenic1).
    #[arg(long)]
    pub stats: bool,
}

impl Default for DemoArgs {
    fn default() -> Self {
        DemoArgs {
            backend: "model".into(),
            pcap: None,
            trace: None,
            seed: 1,
            loss: 0.0,
            max_size: 1 << 20,
            mtu: Vec::new(),
            stats: false,
        }
    }
}

/// Longest wait for one completion, in cycles (0.4 s of device time).
const OP_TIMEOUT: u64 = 100_000_000;
const ATOM_RESULTS: usize = 2048;
const SEND_TAG: u64 = 0x5e4d_0000_0000_0000;
const RECV_TAG: u64 = 0x7ec0_0000_0000_0000;

/// The operation kinds the demo runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Send,
    SendImm,
    SendInv,
    SendInline,
    Write,
    WriteImm,
    WriteInline,
    Read,
    CmpSwap,
    FetchAdd,
}

impl Kind {
    pub const ALL: [Kind; 10] = [
        Kind::Send,
        Kind::SendImm,
        Kind::SendInv,
        Kind::SendInline,
        Kind::Write,
        Kind::WriteImm,
        Kind::WriteInline,
        Kind::Read,
        Kind::CmpSwap,
        Kind::FetchAdd,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Send => "SEND",
            Kind::SendImm => "SEND_WITH_IMM",
            Kind::SendInv => "SEND_WITH_INV",
            Kind::SendInline => "SEND inline",
            Kind::Write => "RDMA_WRITE",
            Kind::WriteImm => "RDMA_WRITE_WITH_IMM",
            Kind::WriteInline => "RDMA_WRITE inline",
            Kind::Read => "RDMA_READ",
            Kind::CmpSwap => "ATOMIC_CMP_AND_SWP",
            Kind::FetchAdd => "ATOMIC_FETCH_AND_ADD",
        }
    }

    fn opcode(self) -> WrOpcode {
        match self {
            Kind::Send | Kind::SendInline => WrOpcode::Send,
            Kind::SendImm => WrOpcode::SendWithImm,
            Kind::SendInv => WrOpcode::SendWithInv,
            Kind::Write | Kind::WriteInline => WrOpcode::RdmaWrite,
            Kind::WriteImm => WrOpcode::RdmaWriteWithImm,
            Kind::Read => WrOpcode::RdmaRead,
            Kind::CmpSwap => WrOpcode::AtomicCmpAndSwp,
            Kind::FetchAdd => WrOpcode::AtomicFetchAndAdd,
        }
    }

    fn inline(self) -> bool {
        matches!(self, Kind::SendInline | Kind::WriteInline)
    }

    fn atomic(self) -> bool {
        matches!(self, Kind::CmpSwap | Kind::FetchAdd)
    }
}

/// The message sizes run at path MTU `mtu`, up to `max`.
pub fn sizes(mtu: usize, max: usize) -> Vec<usize> {
    let mut v = vec![
        0,
        1,
        2,
        3,
        7,
        8,
        31,
        32,
        33,
        63,
        64,
        65,
        255,
        mtu - 1,
        mtu,
        mtu + 1,
        2 * mtu,
        3 * mtu - 5,
        16 * mtu + 1,
        65536 + 17,
        max,
    ];
    v.retain(|&s| s <= max);
    v.sort_unstable();
    v.dedup();
    v
}

/// One row of the summary table.
#[derive(Debug, Clone)]
pub struct Row {
    pub kind: Kind,
    pub min_size: usize,
    pub max_size: usize,
    pub mtus: BTreeSet<u32>,
    pub count: usize,
    pub ok: usize,
}

/// What a demo run found.
#[derive(Debug, Clone)]
pub struct Report {
    pub rows: Vec<Row>,
    pub failures: Vec<String>,
    pub cycles: u64,
    pub retransmits: u64,
    /// The counters after the run (the QPs: the last path MTU's pair).
    pub stats: crate::stats::Stats,
}

/// One host's registered buffer and the image its memory must equal.
struct Mem {
    buf: Buffer,
    mr: Mr,
    image: Vec<u8>,
    region: usize,
}

impl Mem {
    fn src(&self) -> usize {
        0
    }
    fn dst(&self) -> usize {
        self.region
    }
    fn atom(&self) -> usize {
        2 * self.region
    }
    fn inv(&self) -> usize {
        2 * self.region + 4096
    }
    fn va(&self, off: usize) -> u64 {
        self.buf.addr + off as u64
    }
    /// Writes `data` at `off` through the host CPU and into the image.
    fn put(&mut self, ctx: &mut Context, off: usize, data: &[u8]) -> rocenic_driver::Result<()> {
        ctx.write(&self.buf, off, data)?;
        self.image[off..off + data.len()].copy_from_slice(data);
        Ok(())
    }
}

/// Compares a host's whole buffer with its image; describes the first difference.
fn check_memory(
    ctx: &mut Context,
    mem: &mut Mem,
    host: &str,
) -> rocenic_driver::Result<Option<String>> {
    let mut actual = vec![0; mem.image.len()];
    ctx.read(&mem.buf, 0, &mut actual)?;
    if actual == mem.image {
        return Ok(None);
    }
    let diffs: Vec<usize> = (0..actual.len())
        .filter(|&i| actual[i] != mem.image[i])
        .collect();
    let (first, last) = (diffs[0], *diffs.last().expect("not empty"));
    let area = |o: usize| {
        let (name, base) = if o < mem.dst() {
            ("SRC", mem.src())
        } else if o < mem.atom() {
            ("DST", mem.dst())
        } else if o < mem.inv() {
            ("ATOM", mem.atom())
        } else {
            ("INV", mem.inv())
        };
        format!("{name}+{}", o - base)
    };
    let msg = format!(
        "host {host} memory differs in {} bytes between {} and {} (first: expected {:#04x}, found {:#04x})",
        diffs.len(),
        area(first),
        area(last),
        mem.image[first],
        actual[first]
    );
    // Resynchronise so later operations are judged on their own.
    mem.image = actual;
    Ok(Some(msg))
}

/// The expected fields of a completion.
struct Expect {
    wr_id: u64,
    opcode: WcOpcode,
    byte_len: u32,
    imm: Option<u32>,
    inv: Option<u32>,
    qp_num: u32,
    src_qp: u32,
}

fn check_wc(wc: &Wc, e: &Expect, what: &str) -> Option<String> {
    let ok = wc.status == WcStatus::Success
        && wc.wr_id == e.wr_id
        && wc.opcode == e.opcode
        && wc.byte_len == e.byte_len
        && wc.imm_data == e.imm
        && wc.invalidated_rkey == e.inv
        && wc.qp_num == e.qp_num
        && wc.src_qp == e.src_qp;
    if ok {
        return None;
    }
    let mut want = format!(
        "wr_id={:#x} SUCCESS {} byte_len={} qp={} src_qp={}",
        e.wr_id, e.opcode, e.byte_len, e.qp_num, e.src_qp
    );
    if let Some(i) = e.imm {
        let _ = write!(want, " imm={i:#010x}");
    }
    if let Some(r) = e.inv {
        let _ = write!(want, " inv_rkey={r:#x}");
    }
    Some(format!("{what} completion: expected {want}, got {wc}"))
}

fn size_text(n: usize) -> String {
    if n >= 1 << 20 && n & ((1 << 20) - 1) == 0 {
        format!("{} MiB", n >> 20)
    } else if n >= 1 << 10 && n & ((1 << 10) - 1) == 0 {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} B")
    }
}

/// The state of a demo run.
struct Demo {
    tb: Testbed,
    mems: [Mem; 2],
    rng: Pattern,
    op_no: u64,
}

impl Demo {
    fn ctx(&mut self, i: usize) -> &mut Context {
        if i == 0 {
            &mut self.tb.a.ctx
        } else {
            &mut self.tb.b.ctx
        }
    }

    /// Runs one operation from host `r` to host `s` over the endpoints `ep`; returns the
    /// problems found (empty when everything matched).
    fn run_op(
        &mut self,
        kind: Kind,
        size: usize,
        (r, s): (usize, usize),
        ep: &[Endpoint; 2],
    ) -> rocenic_driver::Result<Vec<String>> {
        let n = self.op_no;
        self.op_no += 1;
        let src_off = (n as usize * 7) % 64;
        let dst_off = (n as usize * 13) % 64;
        let wr_id = SEND_TAG | n;
        let recv_id = RECV_TAG | n;
        let (rq, sq) = (ep[r].qp, ep[s].qp);
        let mut problems = Vec::new();
        let mut wr = SendWr {
            wr_id,
            opcode: kind.opcode(),
            send_flags: send_flags::SIGNALED,
            ..SendWr::default()
        };
        let req = Expect {
            wr_id,
            opcode: kind.opcode().wc_opcode(),
            byte_len: if kind.atomic() { 8 } else { size as u32 },
            imm: None,
            inv: None,
            qp_num: rq.qp_num,
            src_qp: sq.qp_num,
        };
        let mut resp: Option<Expect> = None;
        let mut inv_mr = None;
        // After-effects on the images, applied once the operation completed.
        let mut effects: Vec<(usize, usize, Vec<u8>)> = Vec::new();

        if kind.inline() {
            wr.send_flags |= send_flags::INLINE;
        }
        match kind {
            Kind::Send | Kind::SendImm | Kind::SendInv | Kind::SendInline => {
                let data = self.rng.bytes(size);
                let src = self.mems[r].src() + src_off;
                let (mem, ctx) = self.mem_ctx(r);
                mem.put(ctx, src, &data)?;
                if size > 0 {
                    wr.sg_list = vec![self.mems[r].mr.sge(src as u64, size as u32)];
                }
                let dst = self.mems[s].dst() + dst_off;
                let recv_len = size + (n as usize % 3) * 8;
                let rwr = RecvWr {
                    wr_id: recv_id,
                    sg_list: vec![self.mems[s].mr.sge(dst as u64, recv_len as u32)],
                };
                self.ctx(s).post_recv(sq, &[rwr]).map_err(|e| e.error)?;
                let mut e = Expect {
                    wr_id: recv_id,
                    opcode: WcOpcode::Recv,
                    byte_len: size as u32,
                    imm: None,
                    inv: None,
                    qp_num: sq.qp_num,
                    src_qp: rq.qp_num,
                };
                if kind == Kind::SendImm {
                    wr.imm_data = self.rng.next_u64() as u32;
                    e.imm = Some(wr.imm_data);
                }
                if kind == Kind::SendInv {
                    let (pd, inv) = (ep[s].pd, self.mems[s].inv());
                    let buf = self.mems[s].buf;
                    let mr = self.ctx(s).reg_mr_range(
                        pd,
                        &buf,
                        inv,
                        4096,
                        access::LOCAL_WRITE | access::REMOTE_WRITE,
                    )?;
                    wr.invalidate_rkey = mr.rkey;
                    e.inv = Some(mr.rkey);
                    inv_mr = Some(mr);
                }
                resp = Some(e);
                effects.push((s, dst, data));
            }
            Kind::Write | Kind::WriteImm | Kind::WriteInline => {
                let data = self.rng.bytes(size);
                let src = self.mems[r].src() + src_off;
                let (mem, ctx) = self.mem_ctx(r);
                mem.put(ctx, src, &data)?;
                if size > 0 {
                    wr.sg_list = vec![self.mems[r].mr.sge(src as u64, size as u32)];
                }
                let dst = self.mems[s].dst() + dst_off;
                wr.rdma = RdmaWr {
                    remote_addr: self.mems[s].va(dst),
                    rkey: self.mems[s].mr.rkey,
                };
                if kind == Kind::WriteImm {
                    // The immediate consumes a receive; it needs no buffer.
                    let rwr = RecvWr {
                        wr_id: recv_id,
                        sg_list: Vec::new(),
                    };
                    self.ctx(s).post_recv(sq, &[rwr]).map_err(|e| e.error)?;
                    wr.imm_data = self.rng.next_u64() as u32;
                    resp = Some(Expect {
                        wr_id: recv_id,
                        opcode: WcOpcode::RecvRdmaWithImm,
                        byte_len: size as u32,
                        imm: Some(wr.imm_data),
                        inv: None,
                        qp_num: sq.qp_num,
                        src_qp: rq.qp_num,
                    });
                }
                effects.push((s, dst, data));
            }
            Kind::Read => {
                let data = self.rng.bytes(size);
                let src = self.mems[s].src() + src_off;
                let (mem, ctx) = self.mem_ctx(s);
                mem.put(ctx, src, &data)?;
                let dst = self.mems[r].dst() + dst_off;
                if size > 0 {
                    wr.sg_list = vec![self.mems[r].mr.sge(dst as u64, size as u32)];
                }
                wr.rdma = RdmaWr {
                    remote_addr: self.mems[s].va(src),
                    rkey: self.mems[s].mr.rkey,
                };
                effects.push((r, dst, data));
            }
            Kind::CmpSwap | Kind::FetchAdd => {
                let slot = (n as usize % 128) * 8;
                let target = self.mems[s].atom() + slot;
                let result = self.mems[r].atom() + ATOM_RESULTS + slot;
                let old = self.rng.next_u64();
                let junk = self.rng.next_u64();
                let (mem, ctx) = self.mem_ctx(s);
                mem.put(ctx, target, &old.to_le_bytes())?;
                let (mem, ctx) = self.mem_ctx(r);
                mem.put(ctx, result, &junk.to_le_bytes())?;
                let (compare_add, swap, new) = if kind == Kind::CmpSwap {
                    let swap = self.rng.next_u64();
                    // Alternate a matching and a mismatching compare.
                    if n & 1 == 0 {
                        (old, swap, swap)
                    } else {
                        (old ^ 0x0100, swap, old)
                    }
                } else {
                    let add = self.rng.next_u64() >> 8;
                    (add, 0, old.wrapping_add(add))
                };
                wr.sg_list = vec![self.mems[r].mr.sge(result as u64, 8)];
                wr.atomic = AtomicWr {
                    remote_addr: self.mems[s].va(target),
                    compare_add,
                    swap,
                    rkey: self.mems[s].mr.rkey,
                };
                effects.push((s, target, new.to_le_bytes().to_vec()));
                effects.push((r, result, old.to_le_bytes().to_vec()));
            }
        }

        self.ctx(r).post_send(rq, &[wr]).map_err(|e| e.error)?;
        match self.ctx(r).wait_cq(ep[r].send_cq, 1, OP_TIMEOUT) {
            Ok(wcs) => problems.extend(check_wc(&wcs[0], &req, "requester")),
            Err(e) => problems.push(format!("requester: {e}")),
        }
        if let Some(e) = resp.take() {
            match self.ctx(s).wait_cq(ep[s].recv_cq, 1, OP_TIMEOUT) {
                Ok(wcs) => problems.extend(check_wc(&wcs[0], &e, "responder")),
                Err(err) => problems.push(format!("responder: {err}")),
            }
        }
        // No other completion may have appeared anywhere.
        for (h, cq, what) in [
            (r, ep[r].send_cq, "requester send"),
            (r, ep[r].recv_cq, "requester receive"),
            (s, ep[s].send_cq, "responder send"),
            (s, ep[s].recv_cq, "responder receive"),
        ] {
            let mut extra = [Wc::default(); 1];
            if self.ctx(h).poll_cq(cq, &mut extra)? > 0 {
                problems.push(format!("unexpected {what} completion: {}", extra[0]));
            }
        }
        if let Some(mr) = inv_mr {
            self.ctx(s).dereg_mr(&mr)?;
        }
        for (h, off, data) in effects {
            self.mems[h].image[off..off + data.len()].copy_from_slice(&data);
        }
        for h in [0, 1] {
            let name = if h == 0 { "A" } else { "B" };
            let (mem, ctx) = self.mem_ctx(h);
            if let Some(m) = check_memory(ctx, mem, name)? {
                problems.push(m);
            }
        }
        Ok(problems)
    }

    /// Creates CQs and an RC QP on each host and connects them at path MTU `mtu`.
    fn connect(
        &mut self,
        pd_a: Pd,
        pd_b: Pd,
        cap: QpCap,
        mtu: Mtu,
    ) -> rocenic_driver::Result<[Endpoint; 2]> {
        let cqs = |ctx: &mut Context| -> rocenic_driver::Result<_> {
            Ok((ctx.create_cq(16)?, ctx.create_cq(16)?))
        };
        let (a_scq, a_rcq) = cqs(&mut self.tb.a.ctx)?;
        let (b_scq, b_rcq) = cqs(&mut self.tb.b.ctx)?;
        let (ea, eb) = connected_pair(
            &mut self.tb,
            (pd_a, a_scq, a_rcq),
            (pd_b, b_scq, b_rcq),
            cap,
            &ConnParams::new(mtu),
            &mut self.rng,
        )?;
        Ok([ea, eb])
    }

    fn mem_ctx(&mut self, i: usize) -> (&mut Mem, &mut Context) {
        let ctx = if i == 0 {
            &mut self.tb.a.ctx
        } else {
            &mut self.tb.b.ctx
        };
        (&mut self.mems[i], ctx)
    }
}

/// Runs the demo and returns its report (the caller decides how to print it).
pub fn run_demo(args: &DemoArgs) -> anyhow::Result<Report> {
    let kind = parse_backend(&args.backend)?;
    let mtus: Vec<Mtu> = if args.mtu.is_empty() {
        Mtu::ALL.to_vec()
    } else {
        args.mtu
            .iter()
            .map(|&m| {
                Mtu::from_bytes(m).with_context(|| {
                    format!("--mtu {m}: a path MTU is one of 256, 512, 1024, 2048, 4096")
                })
            })
            .collect::<anyhow::Result<_>>()?
    };
    if args.max_size > 1 << 30 {
        bail!("--max-size {} is larger than 1 GiB", args.max_size);
    }
    let mut tb = Testbed::new(
        kind,
        &TestbedOptions {
            seed: args.seed,
            loss: args.loss,
            pcap: args.pcap.clone(),
            trace: args.trace.clone(),
        },
    )?;
    let region = (args.max_size + 64).next_multiple_of(4096);
    let total = 2 * region + 8192;
    let mem = |ctx: &mut Context| -> rocenic_driver::Result<(Pd, Mem)> {
        let pd = ctx.alloc_pd()?;
        let buf = ctx.alloc_buf(total)?;
        let mr = ctx.reg_mr(
            pd,
            &buf,
            access::LOCAL_WRITE
                | access::REMOTE_WRITE
                | access::REMOTE_READ
                | access::REMOTE_ATOMIC,
        )?;
        Ok((
            pd,
            Mem {
                buf,
                mr,
                image: vec![0; total],
                region,
            },
        ))
    };
    let (pd_a, mem_a) = mem(&mut tb.a.ctx)?;
    let (pd_b, mem_b) = mem(&mut tb.b.ctx)?;
    let start = tb.a.ctx.now();
    let mut demo = Demo {
        tb,
        mems: [mem_a, mem_b],
        rng: Pattern::new(args.seed),
        op_no: 0,
    };
    let mut rows: Vec<Row> = Kind::ALL
        .iter()
        .map(|&kind| Row {
            kind,
            min_size: usize::MAX,
            max_size: 0,
            mtus: BTreeSet::new(),
            count: 0,
            ok: 0,
        })
        .collect();
    let mut failures = Vec::new();
    let max_inline = demo.tb.a.ctx.device_attr().max_inline_data;
    let cap = QpCap {
        max_send_wr: 16,
        max_recv_wr: 16,
        max_send_sge: 1,
        max_recv_sge: 1,
        max_inline_data: max_inline,
    };
    let list = |kind: Kind, mtu: Mtu| -> Vec<usize> {
        if kind.atomic() {
            vec![8, 8]
        } else if kind.inline() {
            sizes(mtu.bytes() as usize, args.max_size.min(max_inline as usize))
        } else {
            sizes(mtu.bytes() as usize, args.max_size)
        }
    };
    let planned: usize = mtus
        .iter()
        .flat_map(|&m| Kind::ALL.iter().map(move |&k| (k, m)))
        .map(|(k, m)| list(k, m).len())
        .sum();
    let bar = crate::progress::bar(planned as u64, "demo");
    let mut last_eps = None;
    for mtu in mtus {
        let mut ep = demo.connect(pd_a, pd_b, cap, mtu)?;
        tracing::debug!(
            mtu = mtu.bytes(),
            qpn_a = ep[0].qp.qp_num,
            qpn_b = ep[1].qp.qp_num,
            "QPs connected: RESET -> INIT -> RTR -> RTS"
        );
        for &kind in &Kind::ALL {
            for size in list(kind, mtu) {
                bar.set_message(format!(
                    "{} {} at PMTU {}",
                    kind.name(),
                    size_text(size),
                    mtu.bytes()
                ));
                let dir = if demo.op_no & 1 == 0 { (0, 1) } else { (1, 0) };
                let row = &mut rows[kind as usize];
                row.count += 1;
                row.min_size = row.min_size.min(size);
                row.max_size = row.max_size.max(size);
                row.mtus.insert(mtu.bytes());
                let problems = demo.run_op(kind, size, dir, &ep)?;
                bar.inc(1);
                if problems.is_empty() {
                    rows[kind as usize].ok += 1;
                    continue;
                }
                let (from, to) = if dir.0 == 0 { ("A", "B") } else { ("B", "A") };
                for p in problems {
                    failures.push(format!(
                        "{} size {size} mtu {} {from}->{to}: {p}",
                        kind.name(),
                        mtu.bytes()
                    ));
                }
                // A failed operation usually leaves the QP in ERR: go on with a new
                // connection (and new CQs, so late completions of the old one cannot be
                // mistaken for new ones), as an application would reconnect.
                tracing::warn!(
                    op = kind.name(),
                    size,
                    mtu = mtu.bytes(),
                    "operation failed: reconnecting on new QPs"
                );
                ep = demo.connect(pd_a, pd_b, cap, mtu)?;
            }
        }
        last_eps = Some(ep);
    }
    bar.finish_and_clear();
    let cycles = demo.tb.a.ctx.now() - start;
    let ca = demo.tb.a.ctx.counters();
    let cb = demo.tb.b.ctx.counters();
    let mut stats = crate::stats::Stats {
        global: [ca, cb],
        qps: Vec::new(),
    };
    if let Some([ea, eb]) = last_eps {
        stats
            .qps
            .push((0, ea.qp.qp_num, demo.tb.a.ctx.query_qp_counters(ea.qp)?));
        stats
            .qps
            .push((1, eb.qp.qp_num, demo.tb.b.ctx.query_qp_counters(eb.qp)?));
    }
    let retransmits = ca[Counter::Retransmits as usize] + cb[Counter::Retransmits as usize];
    for (name, c) in [("A", &ca), ("B", &cb)] {
        if c[Counter::DmaFaults as usize] != 0 {
            failures.push(format!(
                "host {name}: the device met {} IOMMU faults (DMA outside registered memory)",
                c[Counter::DmaFaults as usize]
            ));
        }
    }
    if let Some(w) = &demo.tb.world {
        let w = w.borrow();
        for (node, name) in w.nodes().zip(["A", "B"]) {
            let faults = w.host(node).fault_count();
            if faults != 0 {
                failures.push(format!(
                    "host {name}: the IOMMU refused {faults} DMA accesses (first: {})",
                    w.host(node).faults()[0]
                ));
            }
        }
    }
    demo.tb.finish()?;
    Ok(Report {
        rows,
        failures,
        cycles,
        retransmits,
        stats,
    })
}

/// `rocenic demo`.
pub fn run(args: &DemoArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let wall = Instant::now();
    let report = run_demo(args)?;
    writeln!(
        out,
        "rocenic demo: backend {}, seed {}, loss {}",
        args.backend, args.seed, args.loss
    )?;
    writeln!(
        out,
        "{:<22} {:>18} {:>24} {:>6} {:>6}",
        "op", "sizes", "path MTUs", "count", "ok"
    )?;
    for r in &report.rows {
        if r.count == 0 {
            continue;
        }
        let mtus: Vec<String> = r.mtus.iter().map(|m| m.to_string()).collect();
        writeln!(
            out,
            "{:<22} {:>18} {:>24} {:>6} {:>6}",
            r.kind.name(),
            format!("{} .. {}", size_text(r.min_size), size_text(r.max_size)),
            mtus.join(","),
            r.count,
            r.ok
        )?;
    }
    let total: usize = report.rows.iter().map(|r| r.count).sum();
    let ok: usize = report.rows.iter().map(|r| r.ok).sum();
    writeln!(
        out,
        "{ok}/{total} operations ok; {} simulated cycles; {} retransmitted packets; {:.2} s wall",
        report.cycles,
        report.retransmits,
        wall.elapsed().as_secs_f64()
    )?;
    let rate = report.cycles as f64 / wall.elapsed().as_secs_f64();
    writeln!(out, "{rate:.0} simulated cycles per wall second")?;
    if let Some(p) = &args.pcap {
        writeln!(out, "frames captured in {}", p.display())?;
    }
    if args.stats {
        for l in report.stats.lines() {
            writeln!(out, "{l}")?;
        }
    }
    if report.failures.is_empty() {
        writeln!(out, "PASS")?;
        return Ok(());
    }
    writeln!(out, "FAIL: {} problems", report.failures.len())?;
    for f in &report.failures {
        writeln!(out, "  {f}")?;
    }
    bail!(
        "demo failed: {} of {total} operations did not match (first: {})",
        total - ok,
        report.failures[0]
    )
}
