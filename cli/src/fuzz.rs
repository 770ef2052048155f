//! `rocenic fuzz`: random and mutated frames into the RX of a NIC with live, connected QPs,
//! the RTL held to the model on the same input.
//!
//! # The scenario
//!
//! A world of two nodes: A, the NIC under test (the Verilated engine or the model), and B,
//! a model peer. Each has a PD, a 64 KiB buffer and two connected RC QPs; A's MR covers the
//! middle 32 KiB of its buffer, so the 16 KiB on either side are registered nowhere (a DMA
//! write there is stray, though the IOMMU allows it). A third QP of A was destroyed: its
//! QPN is stale. The run alternates two phases, both seeded:
//!
//! - **live**: B and A post WRITEs, SENDs, READs and atomics to each other on both QPs and
//!   every request must complete (with success or an error status) within a cycle budget;
//!   each region of memory they write is written by one ordered stream (see [`SRC_AT`]...);
//!   QPs left outside RTS are reset and connected again with fresh PSNs. The frames B sends
//!   are the seeds of the mutations.
//! - **fuzz**: a batch of frames, one [`mutate::Class`] each (drawn uniformly), goes into A's
//!   RX queue at once, aimed at A's QPs as they are (their expected PSNs, their keys); A's
//!   answers are recorded and kept from B (a peer that never sent the frames must not see
//!   answers to them). The phase ends when A has been quiet (nothing received, sent or
//!   written) for [`QUIET_CYCLES`].
//!
//! After the stream every QP pair is reset and connected again and a normal workload must
//! complete with success and put its data where it belongs (liveness).
//!
//! # What is compared
//!
//! With `--backend rtl`, the same scenario runs twice in lockstep, on an RTL NIC and on a
//! model NIC; the frames of each batch are drawn once (from the model run) and injected
//! into both. After every phase, the two runs must agree on A's frames out (per destination
//! QP and per side of A's QP, requester or responder, in order, byte for byte), the byte
//! ranges A wrote by DMA (merged), A's buffer, A's and B's completions (per QP and queue, in order),
//! how much each of A's global counters moved in the phase, and its QPs' states. Each
//! phase that differs is a divergence. Every run (model alone too) counts as stray DMA an
//! access the IOMMU refused or a changed byte outside A's MR, and as a hang a phase that
//! does not end within its budget.

pub mod mutate;

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;
use std::io::Write;
use std::rc::Rc;
use std::time::Instant;

use anyhow::{bail, Context as _};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use rocenic_model::{Nic, NicConfig};
use rocenic_proto::device::Frame;
use rocenic_sim::{NodeId, World};

use crate::setup::{connect, ConnInfo, ConnParams};
use mutate::{Aim, Class, QpAim};
use rocenic_driver::backend::model::{pair_world, PairConfig};
use rocenic_driver::backend::rtl::engine_device;
use rocenic_driver::verbs::{
    access, qp_attr, send_flags, AtomicWr, Buffer, Context, Counter, Cq, Mr, Mtu, Pd, Qp, QpAttr,
    QpCap, QpInitAttr, QpState, RdmaWr, RecvWr, SendWr, Wc, WrOpcode,
};

/// Connected QP pairs.
pub const NQP: usize = 2;
/// Bytes of each node's buffer.
pub const BUF_LEN: usize = 64 << 10;
/// A's MR: `[MR_AT, MR_AT + MR_LEN)` of its buffer (B's MR is its whole buffer).
pub const MR_AT: usize = 16 << 10;
pub const MR_LEN: usize = 32 << 10;

// Where a live round's requests put their bytes, as offsets in each node's MR. Each region
// is written by one stream that the protocol keeps in order (QP q's incoming SENDs; the
// peer's WRITEs and atomics on QP q; the node's own READ responses and atomic results on QP
// q), so what memory holds at the end of a round does not depend on how the streams of
// different QPs, or a QP's requester and responder, interleave in time.
/// QP q's receives land at `RECV_AT + q * RECV_LEN`.
const RECV_AT: u64 = 0;
/// The sources of SENDs and WRITEs: written by nothing in a live round.
const SRC_AT: u64 = 4 << 10;
const SRC_LEN: u64 = 4 << 10;
/// QP q's peer WRITEs, READs and atomics at `TARGET_AT + q * TARGET_LEN`.
const TARGET_AT: u64 = 8 << 10;
const TARGET_LEN: u64 = 8 << 10;
/// QP q's READ responses and atomic results land at `LAND_AT + q * LAND_LEN`.
const LAND_AT: u64 = 24 << 10;
const LAND_LEN: u64 = 4 << 10;
const _: () = assert!(
    RECV_AT + NQP as u64 * RECV_LEN as u64 <= SRC_AT
        && SRC_AT + SRC_LEN <= TARGET_AT
        && TARGET_AT + NQP as u64 * TARGET_LEN <= LAND_AT
        && LAND_AT + NQP as u64 * LAND_LEN <= MR_LEN as u64
        && MR_AT + MR_LEN <= BUF_LEN
);
/// Cycles without anything received, sent or written by DMA that end a fuzz phase.
pub const QUIET_CYCLES: u64 = 600;
/// Cycles a live round's requests may take to complete.
pub const LIVE_BUDGET: u64 = 1_500_000;
/// Receive WQEs kept posted on each QP.
const RECVS: u32 = 8;
/// Bytes of each posted receive.
const RECV_LEN: u32 = 2048;
/// Seed frames kept (the most recent).
const SEEDS: usize = 256;
/// The byte the guard zones of A's buffer hold.
const GUARD: u8 = 0xa5;

/// What [`Scenario::poll`] saw: the send completions per node, and every completion as
/// (node, completion).
type Polled = ([usize; 2], Vec<(usize, Wc)>);

/// `rocenic fuzz` options.
#[derive(Debug, Clone, clap::Args)]
pub struct FuzzArgs {
    /// The NIC under test: "rtl" (held to a model NIC on the same input) or "model" (alone).
    #[arg(long, default_value = "rtl")]
    pub backend: String,
    /// Fuzz frames to inject.
    #[arg(long, default_value_t = 20_000)]
    pub frames: u64,
    /// Seed of the scenario and of the frame stream.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Frames per batch (injected at once).
    #[arg(long, default_value_t = 64)]
    pub batch: usize,
    /// Batches between two live rounds.
    #[arg(long, default_value_t = 8)]
    pub live_every: u64,
    /// Only these classes (comma-separated names, as the report spells them).
    #[arg(long, value_delimiter = ',')]
    pub classes: Vec<String>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

impl FuzzArgs {
    /// The defaults with `backend`, `frames` and `seed`.
    pub fn new(backend: &str, frames: u64, seed: u64) -> Self {
        FuzzArgs {
            backend: backend.into(),
            frames,
            seed,
            batch: 64,
            live_every: 8,
            classes: Vec::new(),
            json: false,
        }
    }
}

/// The result of a run (what `--json` prints).
#[derive(Debug, Clone, Serialize, Default)]
pub struct FuzzReport {
    pub backend: String,
    pub seed: u64,
    /// Fuzz frames injected.
    pub frames: u64,
    /// Frames injected per class.
    pub classes: BTreeMap<String, u64>,
    /// Phases in which the RTL run and the model run differ (0 with `--backend model`).
    pub divergences: u64,
    /// Phases that did not end within their budget, liveness failures included.
    pub hangs: u64,
    /// DMA accesses the IOMMU refused, plus bytes changed outside the MR.
    pub stray_dma: u64,
    /// Whether the final workload completed and its data arrived.
    pub liveness: bool,
    /// Live rounds run.
    pub live_rounds: u64,
    /// The NIC under test's drop counters at the end.
    pub drops: BTreeMap<String, u64>,
    /// Its global counters at the end.
    pub counters: BTreeMap<String, u64>,
    /// With `--backend rtl`: the model NIC's counters at the end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_counters: Option<BTreeMap<String, u64>>,
    /// Cycles the NIC under test's world ran.
    pub cycles: u64,
    pub wall_seconds: f64,
    /// What went wrong, first problems first (at most 20).
    pub problems: Vec<String>,
}

/// Which NIC is A.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dut {
    Model,
    Rtl,
}

/// One node's objects.
struct End {
    ctx: Context,
    node: NodeId,
    pd: Pd,
    buf: Buffer,
    mr: Mr,
    scq: Cq,
    rcq: Cq,
    qps: Vec<Qp>,
    mac: [u8; 6],
    ip: [u8; 4],
    /// Receives posted and not yet completed, per QP.
    recvs: Vec<u32>,
}

/// What one phase did, as the comparison sees it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Record {
    /// A's frames out by destination QP (`u32::MAX`: not RoCE) and [`Role`].
    frames: BTreeMap<(u32, Role), Vec<Frame>>,
    /// Byte ranges A wrote by DMA, merged.
    dma: Vec<(u64, u64)>,
    /// The bytes of A's buffer that changed in this phase (offset, new value): a byte
    /// that differs once is reported in that phase, not in every later one.
    mem: Vec<(usize, u8)>,
    /// Completions by (node, QPN, send queue): a QP's send and receive completions are
    /// in separate CQs, each in order, but how the two interleave is timing.
    wcs: BTreeMap<(u8, u32, bool), Vec<String>>,
    /// A's global counters: how much each moved in this phase (a frame counted apart
    /// differs in one phase, not in every later one).
    counters: Vec<u64>,
    states: Vec<String>,
}

/// Which side of A's QP sent a frame. A QP's requester and responder are independent
/// streams: each is in a fixed order, but how A's ACKs and READ responses interleave with
/// its own requests to the same QP is timing, so the two are compared apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Role {
    /// SENDs, WRITEs, READ requests, atomics (and frames of unknown opcode).
    Requester,
    /// ACK/NAK, READ responses, atomic ACKs.
    Responder,
}

/// A phase that did not end in time.
#[derive(Debug)]
struct Hang(String);

/// The scenario of one NIC under test.
struct Scenario {
    world: Rc<RefCell<World>>,
    a: End,
    b: End,
    /// Frames A sent since the last record.
    out: Rc<RefCell<Vec<Frame>>>,
    /// While set, A's frames are recorded and dropped.
    fuzzing: Rc<Cell<bool>>,
    /// Recent frames B sent to A.
    seeds: Rc<RefCell<VecDeque<Frame>>>,
    stale_qpn: u32,
    /// Completions polled since the last record.
    wcs: BTreeMap<(u8, u32, bool), Vec<String>>,
    params: ConnParams,
    /// Stray DMA seen so far.
    stray: u64,
    stray_notes: Vec<String>,
    /// A's global counters at the last record.
    last_counters: Vec<u64>,
    /// A's buffer at the last record.
    last_mem: Vec<u8>,
}

fn open_end(
    be: rocenic_driver::backend::model::ModelBackend,
    last: u8,
    mr_at: usize,
    mr_len: usize,
) -> anyhow::Result<End> {
    let node = be.node();
    let mut ctx = Context::open(Box::new(be))?;
    let mac = [0x02, 0, 0, 0, 0, last];
    let ip = [10, 0, 0, last];
    ctx.set_port(mac, ip);
    let pd = ctx.alloc_pd()?;
    let buf = ctx.alloc_buf(BUF_LEN)?;
    ctx.write(&buf, 0, &vec![GUARD; BUF_LEN])?;
    let mr = ctx.reg_mr_range(pd, &buf, mr_at, mr_len, access::ALL)?;
    let scq = ctx.create_cq(256)?;
    let rcq = ctx.create_cq(256)?;
    Ok(End {
        ctx,
        node,
        pd,
        buf,
        mr,
        scq,
        rcq,
        qps: Vec::new(),
        mac,
        ip,
        recvs: Vec::new(),
    })
}

fn create_qp(e: &mut End) -> anyhow::Result<Qp> {
    let cap = QpCap {
        max_send_wr: 16,
        max_recv_wr: 16,
        max_send_sge: 1,
        max_recv_sge: 1,
        max_inline_data: 32,
    };
    Ok(e.ctx.create_qp(
        e.pd,
        &QpInitAttr {
            send_cq: e.scq,
            recv_cq: e.rcq,
            cap,
        },
    )?)
}

fn counters_map(c: &[u64]) -> BTreeMap<String, u64> {
    Counter::ALL
        .iter()
        .map(|&k| (k.name().to_string(), c[k as usize]))
        .collect()
}

const DROP_COUNTERS: [Counter; 6] = [
    Counter::IcrcDrops,
    Counter::MalformedDrops,
    Counter::PsnSeqDrops,
    Counter::Duplicates,
    Counter::UnknownQpDrops,
    Counter::NaksSent,
];

/// A one-line description of a frame.
pub fn describe(frame: &[u8]) -> String {
    use rocenic_proto::wire::RoceRepr;
    match RoceRepr::parse(frame) {
        Ok((r, payload)) => {
            let mut s = format!(
                "{} qp={:#x} psn={:#x}",
                r.bth.opcode.name(),
                r.bth.dest_qp,
                r.bth.psn.value()
            );
            if let Some(a) = r.ext.aeth {
                let _ = write!(s, " aeth={} msn={}", a.syndrome, a.msn);
            }
            if let Some(x) = r.ext.reth {
                let _ = write!(
                    s,
                    " reth(va={:#x} rkey={:#x} len={})",
                    x.va, x.rkey, x.dma_len
                );
            }
            let _ = write!(s, " payload={} ({} B)", payload.len(), frame.len());
            s
        }
        Err(e) => format!("not a valid RoCE frame ({e}), {} B", frame.len()),
    }
}

fn hex(frame: &[u8]) -> String {
    frame.iter().map(|b| format!("{b:02x}")).collect()
}

impl Scenario {
    fn new(dut: Dut, seed: u64) -> anyhow::Result<Scenario> {
        let cfg = PairConfig::default();
        let peer = Nic::new(NicConfig::default());
        let pair = match dut {
            Dut::Model => pair_world(&cfg, None, Nic::new(NicConfig::default()), peer)?,
            Dut::Rtl => {
                let dev =
                    engine_device(&cfg.world, None, None).context("building the RTL engine")?;
                pair_world(&cfg, None, dev, peer)?
            }
        };
        let world = pair.world.clone();
        let mut a = open_end(pair.a, 1, MR_AT, MR_LEN)?;
        let mut b = open_end(pair.b, 2, 0, BUF_LEN)?;
        world.borrow_mut().host_mut(a.node).set_dma_log(true);
        // The stale QPN: a QP created and destroyed before the live ones.
        let stale = create_qp(&mut a)?;
        a.ctx.destroy_qp(stale)?;
        for _ in 0..NQP {
            let q = create_qp(&mut a)?;
            a.qps.push(q);
            a.recvs.push(0);
            let q = create_qp(&mut b)?;
            b.qps.push(q);
            b.recvs.push(0);
        }
        let out: Rc<RefCell<Vec<Frame>>> = Rc::default();
        let fuzzing = Rc::new(Cell::new(false));
        let seeds: Rc<RefCell<VecDeque<Frame>>> = Rc::default();
        {
            let mut w = world.borrow_mut();
            let (o, f) = (out.clone(), fuzzing.clone());
            w.link_mut(a.node)
                .context("A has no link")?
                .set_drop_filter(move |frame: &[u8], _| {
                    tracing::trace!(frame = %hex(frame), fuzzing = f.get(), "A sent");
                    o.borrow_mut().push(frame.to_vec());
                    f.get()
                });
            let s = seeds.clone();
            w.link_mut(b.node)
                .context("B has no link")?
                .set_drop_filter(move |frame: &[u8], _| {
                    tracing::trace!(frame = %hex(frame), "B sent");
                    let mut s = s.borrow_mut();
                    if s.len() == SEEDS {
                        s.pop_front();
                    }
                    s.push_back(frame.to_vec());
                    false
                });
        }
        let mut params = ConnParams::new(Mtu::Mtu1024);
        // ACK timeout 1024 << 6 cycles (262 us): far above the round trip, and short
        // enough that a live round recovering a loss does not dominate the run.
        params.timeout = 6;
        params.retry_cnt = 2;
        params.rnr_retry = 2;
        params.min_rnr_timer = 1;
        params.max_rd_atomic = 4;
        let mut s = Scenario {
            world,
            a,
            b,
            out,
            fuzzing,
            seeds,
            stale_qpn: stale.qp_num,
            wcs: BTreeMap::new(),
            params,
            stray: 0,
            stray_notes: Vec::new(),
            last_counters: vec![0; Counter::ALL.len()],
            last_mem: vec![GUARD; BUF_LEN],
        };
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xc0_77ec7);
        for q in 0..NQP {
            s.connect_pair(q, &mut rng)?;
        }
        Ok(s)
    }

    /// Resets QP pair `q` (if it was connected) and connects it with fresh PSNs.
    fn connect_pair(&mut self, q: usize, rng: &mut ChaCha8Rng) -> anyhow::Result<()> {
        let reset = QpAttr {
            qp_state: QpState::Reset,
            ..QpAttr::default()
        };
        for e in [&mut self.a, &mut self.b] {
            let qp = e.qps[q];
            if e.ctx.query_qp(qp)?.qp_state != QpState::Reset {
                e.ctx.modify_qp(qp, &reset, qp_attr::STATE)?;
            }
            e.recvs[q] = 0;
        }
        let info = |e: &End, psn: u32| ConnInfo {
            qpn: e.qps[q].qp_num,
            psn,
            mac: e.mac,
            ip: e.ip,
        };
        let ia = info(&self.a, rng.gen::<u32>() & 0xff_ffff);
        let ib = info(&self.b, rng.gen::<u32>() & 0xff_ffff);
        connect(&mut self.a.ctx, self.a.qps[q], &ia, &ib, &self.params)?;
        connect(&mut self.b.ctx, self.b.qps[q], &ib, &ia, &self.params)?;
        Ok(())
    }

    fn post_recvs(&mut self) -> anyhow::Result<()> {
        for e in [&mut self.a, &mut self.b] {
            for q in 0..NQP {
                let qp = e.qps[q];
                if e.ctx.query_qp(qp)?.qp_state == QpState::Err {
                    continue;
                }
                while e.recvs[q] < RECVS {
                    let wr = RecvWr {
                        wr_id: 0x7ec0_0000 + u64::from(e.recvs[q]),
                        sg_list: vec![e.mr.sge(RECV_AT + q as u64 * u64::from(RECV_LEN), RECV_LEN)],
                    };
                    e.ctx
                        .post_recv(qp, &[wr])
                        .map_err(|x| anyhow::anyhow!("{x}"))?;
                    e.recvs[q] += 1;
                }
            }
        }
        Ok(())
    }

    /// Polls every CQ; returns the send completions seen (per node) and every completion
    /// (node, completion).
    fn poll(&mut self) -> anyhow::Result<Polled> {
        let mut sends = [0usize; 2];
        let mut all = Vec::new();
        let mut buf = [Wc::default(); 32];
        for (i, e) in [&mut self.a, &mut self.b].into_iter().enumerate() {
            for (cq, is_send) in [(e.scq, true), (e.rcq, false)] {
                loop {
                    let n = e.ctx.poll_cq(cq, &mut buf)?;
                    for wc in &buf[..n] {
                        if is_send {
                            sends[i] += 1;
                        } else if let Some(q) = e.qps.iter().position(|q| q.qp_num == wc.qp_num) {
                            e.recvs[q] = e.recvs[q].saturating_sub(1);
                        }
                        self.wcs
                            .entry((i as u8, wc.qp_num, is_send))
                            .or_default()
                            .push(format!("{wc:?}"));
                        all.push((i, *wc));
                    }
                    if n < buf.len() {
                        break;
                    }
                }
            }
        }
        Ok((sends, all))
    }

    /// A random request from `from` (0: A, 1: B) on QP `q`.
    fn random_wr(&self, rng: &mut ChaCha8Rng, from: usize, q: usize, id: u64) -> SendWr {
        let (me, peer) = if from == 0 {
            (&self.a, &self.b)
        } else {
            (&self.b, &self.a)
        };
        let q = q as u64;
        let len = rng.gen_range(0..=3000u64);
        let target = TARGET_AT + q * TARGET_LEN + rng.gen_range(0..=TARGET_LEN - len);
        let src = SRC_AT + rng.gen_range(0..=SRC_LEN - len.min(SRC_LEN));
        let land = LAND_AT + q * LAND_LEN + rng.gen_range(0..=LAND_LEN - len);
        let opcode = match rng.gen_range(0..7) {
            0 => WrOpcode::RdmaWrite,
            1 => WrOpcode::RdmaWriteWithImm,
            2 => WrOpcode::Send,
            3 => WrOpcode::SendWithImm,
            4 => WrOpcode::RdmaRead,
            5 => WrOpcode::AtomicFetchAndAdd,
            _ => WrOpcode::AtomicCmpAndSwp,
        };
        let mut wr = SendWr {
            wr_id: id,
            opcode,
            send_flags: send_flags::SIGNALED,
            imm_data: rng.gen(),
            ..SendWr::default()
        };
        match opcode {
            WrOpcode::Send | WrOpcode::SendWithImm => {
                wr.sg_list = vec![me.mr.sge(src, len.min(u64::from(RECV_LEN)) as u32)];
            }
            WrOpcode::AtomicFetchAndAdd | WrOpcode::AtomicCmpAndSwp => {
                let at = TARGET_AT + q * TARGET_LEN + rng.gen_range(0..TARGET_LEN / 8) * 8;
                let lat = LAND_AT + q * LAND_LEN + rng.gen_range(0..LAND_LEN / 8) * 8;
                wr.sg_list = vec![me.mr.sge(lat, 8)];
                wr.atomic = AtomicWr {
                    remote_addr: peer.mr.addr + at,
                    compare_add: rng.gen_range(0..4),
                    swap: rng.gen(),
                    rkey: peer.mr.rkey,
                };
            }
            WrOpcode::RdmaRead => {
                wr.sg_list = vec![me.mr.sge(land, len as u32)];
                wr.rdma = RdmaWr {
                    remote_addr: peer.mr.addr + target,
                    rkey: peer.mr.rkey,
                };
            }
            _ => {
                wr.sg_list = vec![me.mr.sge(src, len as u32)];
                wr.rdma = RdmaWr {
                    remote_addr: peer.mr.addr + target,
                    rkey: peer.mr.rkey,
                };
            }
        }
        wr
    }

    /// Posts `wrs` (node, QP index, request) and waits until each has completed; returns
    /// every completion polled meanwhile.
    fn run_wrs(
        &mut self,
        wrs: Vec<(usize, usize, SendWr)>,
        what: &str,
    ) -> anyhow::Result<Result<Vec<(usize, Wc)>, Hang>> {
        self.post_recvs()?;
        let mut want = [0usize; 2];
        for (from, q, wr) in wrs {
            let e = if from == 0 { &mut self.a } else { &mut self.b };
            let qp = e.qps[q];
            tracing::debug!(node = from, qp = qp.qp_num, ?wr, "post");
            if e.ctx.post_send(qp, &[wr]).is_ok() {
                want[from] += 1;
            }
        }
        let start = self.world.borrow().now();
        let mut got = [0usize; 2];
        let mut all = Vec::new();
        while got[0] < want[0] || got[1] < want[1] {
            let (s, w) = self.poll()?;
            got[0] += s[0];
            got[1] += s[1];
            all.extend(w);
            let waited = self.world.borrow().now() - start;
            if waited > LIVE_BUDGET {
                let mut states = String::new();
                for (name, e) in [("A", &mut self.a), ("B", &mut self.b)] {
                    for q in 0..NQP {
                        let attr = e.ctx.query_qp(e.qps[q])?;
                        let _ = write!(
                            states,
                            " {name}{q} {} sq_psn {:#x} rq_psn {:#x};",
                            attr.qp_state, attr.sq_psn, attr.rq_psn
                        );
                    }
                    let c = e.ctx.counters();
                    let nz: Vec<String> = Counter::ALL
                        .iter()
                        .filter(|&&k| c[k as usize] != 0)
                        .map(|&k| format!("{}={}", k.name(), c[k as usize]))
                        .collect();
                    let _ = write!(states, " {name} counters {};", nz.join(" "));
                }
                return Ok(Err(Hang(format!(
                    "{what}: {} of {} requests of A and {} of {} of B completed in {waited} \
                     cycles;{states}",
                    got[0], want[0], got[1], want[1]
                ))));
            }
            self.a.ctx.wait(500);
        }
        self.a.ctx.wait(3000);
        all.extend(self.poll()?.1);
        Ok(Ok(all))
    }

    /// A live round: random requests both ways on every QP, then QPs outside RTS
    /// reconnected.
    fn live(&mut self, rng: &mut ChaCha8Rng, round: u64) -> anyhow::Result<Result<(), Hang>> {
        let mut wrs = Vec::new();
        let mut id = round << 16;
        for q in 0..NQP {
            for from in [1usize, 0] {
                for _ in 0..rng.gen_range(usize::from(from == 1)..=2 + from) {
                    id += 1;
                    wrs.push((from, q, self.random_wr(rng, from, q, id)));
                }
            }
        }
        if let Err(h) = self.run_wrs(wrs, &format!("live round {round}"))? {
            return Ok(Err(h));
        }
        self.recover(rng)?;
        Ok(Ok(()))
    }

    /// Reconnects every QP pair with a side outside RTS.
    fn recover(&mut self, rng: &mut ChaCha8Rng) -> anyhow::Result<()> {
        for q in 0..NQP {
            let sa = self.a.ctx.query_qp(self.a.qps[q])?.qp_state;
            let sb = self.b.ctx.query_qp(self.b.qps[q])?.qp_state;
            if sa != QpState::Rts || sb != QpState::Rts {
                self.a.ctx.wait(2000);
                self.poll()?;
                self.connect_pair(q, rng)?;
            }
        }
        Ok(())
    }

    /// What the mutator aims at now.
    fn aim(&mut self) -> anyhow::Result<Aim> {
        let mut qps = Vec::new();
        for q in 0..NQP {
            let attr = self.a.ctx.query_qp(self.a.qps[q])?;
            qps.push(QpAim {
                qpn: self.a.qps[q].qp_num,
                epsn: attr.rq_psn,
                sq_psn: attr.sq_psn,
            });
        }
        Ok(Aim {
            mac: self.a.mac,
            ip: self.a.ip,
            peer_mac: self.b.mac,
            peer_ip: self.b.ip,
            qps,
            stale_qpn: self.stale_qpn,
            rkey: self.a.mr.rkey,
            va: self.a.mr.addr,
            mr_len: self.a.mr.length,
        })
    }

    /// Injects a batch into A's RX and waits until A is quiet.
    fn fuzz(&mut self, frames: &[Frame]) -> anyhow::Result<Result<(), Hang>> {
        self.fuzzing.set(true);
        let a = self.a.node;
        {
            let mut w = self.world.borrow_mut();
            for f in frames {
                w.inject_rx(a, f.clone());
            }
        }
        let budget = 200_000 + 2_000 * frames.len() as u64;
        let start = self.world.borrow().now();
        let mut last = (u64::MAX, usize::MAX);
        let mut since = start;
        loop {
            {
                let mut w = self.world.borrow_mut();
                w.advance(100);
                let now = w.now();
                let seen = (w.node_stats(a).frames_sent, w.host(a).dma_log().len());
                if seen != last || !w.rx_queue(a).is_empty() {
                    last = seen;
                    since = now;
                } else if now - since >= QUIET_CYCLES {
                    break;
                }
                if now - start > budget {
                    self.fuzzing.set(false);
                    return Ok(Err(Hang(format!(
                        "fuzz batch: A still busy after {budget} cycles ({} frames waiting)",
                        w.rx_queue(a).len()
                    ))));
                }
            }
        }
        self.fuzzing.set(false);
        self.poll()?;
        Ok(Ok(()))
    }

    /// Checks stray DMA and takes what the phase did.
    fn record(&mut self) -> anyhow::Result<Record> {
        let mut mem = vec![0u8; BUF_LEN];
        self.a.ctx.read(&self.a.buf, 0, &mut mem)?;
        let outside = mem[..MR_AT]
            .iter()
            .chain(&mem[MR_AT + MR_LEN..])
            .filter(|&&b| b != GUARD)
            .count() as u64;
        if outside > 0 {
            self.stray += outside;
            self.stray_notes
                .push(format!("{outside} bytes changed outside A's MR"));
            self.a.ctx.write(&self.a.buf, 0, &vec![GUARD; MR_AT])?;
            self.a.ctx.write(
                &self.a.buf,
                MR_AT + MR_LEN,
                &vec![GUARD; BUF_LEN - MR_AT - MR_LEN],
            )?;
        }
        let mut dma: Vec<(u64, u64)> = Vec::new();
        {
            let mut w = self.world.borrow_mut();
            for node in [self.a.node, self.b.node] {
                let faults = w.host(node).faults().to_vec();
                if !faults.is_empty() {
                    self.stray += faults.len() as u64;
                    self.stray_notes.push(format!(
                        "IOMMU refused {} DMA accesses of node {}: first {}",
                        faults.len(),
                        node.index(),
                        faults[0].fault
                    ));
                    w.host_mut(node).clear_faults();
                }
            }
            let mut writes: Vec<(u64, u64)> = w
                .host_mut(self.a.node)
                .take_dma_log()
                .into_iter()
                .filter(|e| e.write)
                .map(|e| (e.iova, e.iova + e.len as u64))
                .collect();
            writes.sort_unstable();
            for (s, e) in writes {
                match dma.last_mut() {
                    Some(last) if s <= last.1 => last.1 = last.1.max(e),
                    _ => dma.push((s, e)),
                }
            }
        }
        let mut frames: BTreeMap<(u32, Role), Vec<Frame>> = BTreeMap::new();
        for f in self.out.borrow_mut().drain(..) {
            let key = if f.len() >= mutate::EXT_AT && f[12..14] == [0x08, 0x00] {
                let bth = rocenic_proto::wire::BthPacket::new_unchecked(&f[mutate::BTH_AT..]);
                let role = if bth.opcode().is_response() {
                    Role::Responder
                } else {
                    Role::Requester
                };
                (bth.dest_qp(), role)
            } else {
                (u32::MAX, Role::Requester)
            };
            frames.entry(key).or_default().push(f);
        }
        let mut states = Vec::new();
        for q in 0..NQP {
            states.push(self.a.ctx.query_qp(self.a.qps[q])?.qp_state.to_string());
        }
        Ok(Record {
            frames,
            dma,
            mem: {
                let changed = mem
                    .iter()
                    .zip(&self.last_mem)
                    .enumerate()
                    .filter(|(_, (n, l))| n != l)
                    .map(|(i, (n, _))| (i, *n))
                    .collect();
                self.last_mem = mem;
                // Stray bytes were restored above.
                self.last_mem[..MR_AT].fill(GUARD);
                self.last_mem[MR_AT + MR_LEN..].fill(GUARD);
                changed
            },
            wcs: std::mem::take(&mut self.wcs),
            counters: {
                let now = self.a.ctx.counters().to_vec();
                let moved = now
                    .iter()
                    .zip(&self.last_counters)
                    .map(|(n, l)| n.wrapping_sub(*l))
                    .collect();
                self.last_counters = now;
                moved
            },
            states,
        })
    }

    /// Every QP pair reset and connected again, then a normal workload that must succeed:
    /// on each QP, B WRITEs a pattern into A's MR and SENDs to it, A READs the pattern back.
    fn liveness(&mut self, rng: &mut ChaCha8Rng) -> anyhow::Result<Result<(), String>> {
        self.a.ctx.wait(2000);
        self.poll()?;
        for q in 0..NQP {
            self.connect_pair(q, rng)?;
        }
        let pattern: Vec<u8> = (0..1000u32).map(|i| (i * 7 + 3) as u8).collect();
        // Offsets in A's MR: B's WRITE at WRITE_AT + at, A's READ at READ_AT + at (B's
        // SENDs land in the receive region).
        const WRITE_AT: u64 = TARGET_AT;
        const READ_AT: u64 = LAND_AT;
        let mut wrs = Vec::new();
        for q in 0..NQP {
            let at = 64 + 1024 * q as u64;
            self.b.ctx.write(&self.b.buf, at as usize, &pattern)?;
            wrs.push((
                1,
                q,
                SendWr {
                    wr_id: 0x11fe_0000 + q as u64,
                    opcode: WrOpcode::RdmaWrite,
                    send_flags: send_flags::SIGNALED,
                    sg_list: vec![self.b.mr.sge(at, 1000)],
                    rdma: RdmaWr {
                        remote_addr: self.a.mr.addr + WRITE_AT + at,
                        rkey: self.a.mr.rkey,
                    },
                    ..SendWr::default()
                },
            ));
            wrs.push((
                1,
                q,
                SendWr {
                    wr_id: 0x11fe_0100 + q as u64,
                    opcode: WrOpcode::Send,
                    send_flags: send_flags::SIGNALED,
                    sg_list: vec![self.b.mr.sge(at, 100)],
                    ..SendWr::default()
                },
            ));
            wrs.push((
                0,
                q,
                SendWr {
                    wr_id: 0x11fe_0200 + q as u64,
                    opcode: WrOpcode::RdmaRead,
                    send_flags: send_flags::SIGNALED,
                    sg_list: vec![self.a.mr.sge(READ_AT + at, 1000)],
                    rdma: RdmaWr {
                        remote_addr: self.b.mr.addr + at,
                        rkey: self.b.mr.rkey,
                    },
                    ..SendWr::default()
                },
            ));
        }
        let wcs = match self.run_wrs(wrs, "liveness")? {
            Ok(w) => w,
            Err(Hang(h)) => return Ok(Err(h)),
        };
        let mut problems = Vec::new();
        for (node, wc) in &wcs {
            if wc.status != rocenic_driver::verbs::WcStatus::Success {
                problems.push(format!("liveness: node {node}: {wc}"));
            }
        }
        // 3 requests and the receive of the SEND, per QP.
        if wcs.len() != 4 * NQP {
            problems.push(format!(
                "liveness: {} completions, expected {}",
                wcs.len(),
                4 * NQP
            ));
        }
        for q in 0..NQP {
            let at = 64 + 1024 * q as u64;
            let mut got = vec![0u8; 1000];
            for (off, what) in [
                (WRITE_AT, "B's WRITE did not land in A's memory"),
                (READ_AT, "A's READ did not return B's data"),
            ] {
                self.a
                    .ctx
                    .read(&self.a.buf, MR_AT + (off + at) as usize, &mut got)?;
                if got != pattern {
                    problems.push(format!("liveness: QP {q}: {what}"));
                }
            }
        }
        Ok(if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("; "))
        })
    }
}

/// The differences between two records of phase `phase`.
fn differences(phase: &str, rtl: &Record, model: &Record) -> Vec<String> {
    let mut d = Vec::new();
    let qps: std::collections::BTreeSet<(u32, Role)> = rtl
        .frames
        .keys()
        .chain(model.frames.keys())
        .copied()
        .collect();
    for key @ (qp, role) in qps {
        let empty = Vec::new();
        let (r, m) = (
            rtl.frames.get(&key).unwrap_or(&empty),
            model.frames.get(&key).unwrap_or(&empty),
        );
        if r != m {
            let i = r
                .iter()
                .zip(m)
                .position(|(x, y)| x != y)
                .unwrap_or(r.len().min(m.len()));
            let show = |v: &Vec<Frame>| v.get(i).map_or("none".into(), |f| describe(f));
            let raw = |v: &Vec<Frame>| v.get(i).map_or(String::new(), |f| hex(f));
            d.push(format!(
                "{phase}: A's {role:?} frames to QP {qp:#x} differ at #{i} (rtl {} frames, model {}): \
                 rtl {} / model {} [rtl {} model {}]",
                r.len(),
                m.len(),
                show(r),
                show(m),
                raw(r),
                raw(m)
            ));
        }
    }
    if rtl.wcs != model.wcs {
        d.push(format!(
            "{phase}: completions differ: rtl {:?} / model {:?}",
            rtl.wcs, model.wcs
        ));
    }
    if rtl.counters != model.counters {
        let diff: Vec<String> = Counter::ALL
            .iter()
            .filter(|&&c| rtl.counters[c as usize] != model.counters[c as usize])
            .map(|&c| {
                format!(
                    "{} rtl {} model {}",
                    c.name(),
                    rtl.counters[c as usize],
                    model.counters[c as usize]
                )
            })
            .collect();
        d.push(format!("{phase}: counters differ: {}", diff.join(", ")));
    }
    if rtl.mem != model.mem {
        let (r, m): (BTreeMap<usize, u8>, BTreeMap<usize, u8>) = (
            rtl.mem.iter().copied().collect(),
            model.mem.iter().copied().collect(),
        );
        let at: Vec<usize> = r
            .keys()
            .chain(m.keys())
            .copied()
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .filter(|i| r.get(i) != m.get(i))
            .collect();
        let show = |w: &BTreeMap<usize, u8>| {
            at.iter()
                .take(16)
                .map(|i| w.get(i).map_or("--".into(), |b| format!("{b:02x}")))
                .collect::<Vec<_>>()
                .join("")
        };
        d.push(format!(
            "{phase}: A's memory changed differently at {} bytes from buffer offset {:#x} \
             (MR offset {:#x}) to {:#x}: rtl {} / model {} (-- unchanged)",
            at.len(),
            at[0],
            at[0] as i64 - MR_AT as i64,
            at[at.len() - 1],
            show(&r),
            show(&m)
        ));
    }
    if rtl.dma != model.dma {
        d.push(format!(
            "{phase}: A's DMA writes cover rtl {:x?} / model {:x?}",
            rtl.dma, model.dma
        ));
    }
    if rtl.states != model.states {
        d.push(format!(
            "{phase}: QP states rtl {:?} / model {:?}",
            rtl.states, model.states
        ));
    }
    d
}

/// Runs the fuzzer.
pub fn run_fuzz(args: &FuzzArgs) -> anyhow::Result<FuzzReport> {
    let t0 = Instant::now();
    let rtl = match args.backend.as_str() {
        "rtl" => true,
        "model" => false,
        b => bail!("--backend {b}: fuzz runs on rtl (held to the model) or model"),
    };
    if args.batch == 0 || args.live_every == 0 {
        bail!("--batch and --live-every must be at least 1");
    }
    let classes: Vec<Class> = if args.classes.is_empty() {
        Class::ALL.to_vec()
    } else {
        args.classes
            .iter()
            .map(|n| {
                Class::from_name(n).with_context(|| {
                    let all: Vec<&str> = Class::ALL.iter().map(|c| c.name()).collect();
                    format!("--classes: unknown class {n:?} (known: {})", all.join(", "))
                })
            })
            .collect::<anyhow::Result<_>>()?
    };
    let mut model = Scenario::new(Dut::Model, args.seed)?;
    let mut dut = if rtl {
        Some(Scenario::new(Dut::Rtl, args.seed)?)
    } else {
        None
    };
    let mut report = FuzzReport {
        backend: args.backend.clone(),
        seed: args.seed,
        liveness: false,
        ..FuzzReport::default()
    };
    let problem = |r: &mut FuzzReport, p: String| {
        if r.problems.len() < 20 {
            r.problems.push(p);
        }
    };
    // One generator per purpose, so that the frame stream does not depend on the workload.
    let mut frames_rng = ChaCha8Rng::seed_from_u64(args.seed);
    let mut live_rng = [
        ChaCha8Rng::seed_from_u64(args.seed ^ 0x11fe),
        ChaCha8Rng::seed_from_u64(args.seed ^ 0x11fe),
    ];
    let mut conn_rng = [
        ChaCha8Rng::seed_from_u64(args.seed ^ 0xc0),
        ChaCha8Rng::seed_from_u64(args.seed ^ 0xc0),
    ];
    let mut batch_no = 0u64;
    let mut hung = false;
    // Runs one step on both scenarios and compares what they did.
    macro_rules! step {
        ($phase:expr, |$s:ident, $i:ident| $body:expr) => {{
            let phase: String = $phase;
            let mut recs = Vec::new();
            for ($i, sc) in [Some(&mut model), dut.as_mut()].into_iter().enumerate() {
                let Some($s) = sc else { continue };
                tracing::debug!(%phase, run = if $i == 0 { "model" } else { "rtl" }, "phase");
                match $body? {
                    Ok(()) => recs.push($s.record()?),
                    Err(Hang(h)) => {
                        report.hangs += 1;
                        problem(
                            &mut report,
                            format!("{} run: {h}", if $i == 0 { "model" } else { "rtl" }),
                        );
                        hung = true;
                    }
                }
            }
            if let [m, r] = recs.as_slice() {
                let d = differences(&phase, r, m);
                if !d.is_empty() {
                    report.divergences += 1;
                    for x in d {
                        problem(&mut report, x);
                    }
                }
            }
        }};
    }
    while report.frames < args.frames && !hung {
        if batch_no.is_multiple_of(args.live_every) {
            let round = report.live_rounds;
            step!(format!("live round {round}"), |s, i| s
                .live(&mut live_rng[i], round));
            report.live_rounds += 1;
            if hung {
                break;
            }
        }
        let n = (args.frames - report.frames).min(args.batch as u64) as usize;
        let aim = model.aim()?;
        let seeds: Vec<Frame> = model.seeds.borrow().iter().cloned().collect();
        let mut batch = Vec::with_capacity(n);
        let mut kinds = Vec::with_capacity(n);
        for _ in 0..n {
            let class = classes[frames_rng.gen_range(0..classes.len())];
            let frame = mutate::mutate(&mut frames_rng, class, &seeds, &aim);
            tracing::debug!(batch = batch_no, class = class.name(), frame = %hex(&frame), "fuzz frame");
            batch.push(frame);
            kinds.push(class);
            *report.classes.entry(class.name().into()).or_default() += 1;
        }
        report.frames += n as u64;
        let kinds_line: Vec<&str> = kinds.iter().map(|c| c.name()).collect();
        step!(
            format!(
                "fuzz batch {batch_no} (seed {}, classes {})",
                args.seed,
                kinds_line.join(",")
            ),
            |s, _i| s.fuzz(&batch)
        );
        batch_no += 1;
    }
    if !hung {
        let mut live = Vec::new();
        for (i, sc) in [Some(&mut model), dut.as_mut()].into_iter().enumerate() {
            let Some(s) = sc else { continue };
            let r = s.liveness(&mut conn_rng[i])?;
            if let Err(p) = &r {
                report.hangs += 1;
                problem(
                    &mut report,
                    format!("{} run: {p}", if i == 0 { "model" } else { "rtl" }),
                );
            }
            live.push(r.is_ok());
        }
        report.liveness = live.iter().all(|&l| l);
    }
    for s in [Some(&mut model), dut.as_mut()].into_iter().flatten() {
        let _ = s.record()?;
        report.stray_dma += s.stray;
        for n in s.stray_notes.drain(..) {
            problem(&mut report, format!("stray DMA: {n}"));
        }
    }
    let final_dut = dut.as_mut().unwrap_or(&mut model);
    let c = final_dut.a.ctx.counters();
    report.cycles = final_dut.world.borrow().now();
    report.counters = counters_map(&c);
    report.drops = DROP_COUNTERS
        .iter()
        .map(|&k| (k.name().to_string(), c[k as usize]))
        .collect();
    if rtl {
        report.model_counters = Some(counters_map(&model.a.ctx.counters()));
    }
    report.wall_seconds = t0.elapsed().as_secs_f64();
    Ok(report)
}

/// `rocenic fuzz`: runs, prints the report, and fails if anything went wrong.
pub fn run(args: &FuzzArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let r = run_fuzz(args)?;
    if args.json {
        writeln!(out, "{}", serde_json::to_string(&r)?)?;
    } else {
        writeln!(
            out,
            "fuzz --backend {} --seed {}: {} frames, {} live rounds, {} cycles, {:.1} s",
            r.backend, r.seed, r.frames, r.live_rounds, r.cycles, r.wall_seconds
        )?;
        writeln!(
            out,
            "  divergences {}  hangs {}  stray DMA {}  liveness {}",
            r.divergences,
            r.hangs,
            r.stray_dma,
            if r.liveness { "ok" } else { "FAILED" }
        )?;
        let drops: Vec<String> = r.drops.iter().map(|(k, v)| format!("{k} {v}")).collect();
        writeln!(out, "  drops: {}", drops.join(", "))?;
        for p in &r.problems {
            writeln!(out, "  - {p}")?;
        }
    }
    if r.divergences + r.hangs + r.stray_dma > 0 || !r.liveness {
        bail!(
            "fuzz: {} divergences, {} hangs, {} stray DMA, liveness {}",
            r.divergences,
            r.hangs,
            r.stray_dma,
            r.liveness
        );
    }
    Ok(())
}
