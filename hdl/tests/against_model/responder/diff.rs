//! The differential bench: random request streams fed to the RustHDL simulation of
//! [`Responder`] and to the behavioural model (`rocenic_model::Nic`, set up through its
//! command mailbox and doorbells as a driver would), compared after every packet.
//!
//! The RTL's surroundings are simulated from the model's own rules: the context tables
//! (answers one cycle after the request; the `qps` write port lands in them; the QP-error
//! event moves `qpa.state` to ERR as the command engine will), the protection check (the
//! model's `Tables::translate` over the same MRs), DMA over a host memory of two mapped
//! regions (anything else faults), the READ jobs executed as ReadResp does
//! (`read_response_packets`, a DMA fault reported on `s_read_err_*`), the atomic jobs as
//! AtomicUnit does (`atomic_result`, a 16-entry replay cache per QP).
//!
//! Compared after each packet or doorbell: every response frame, byte for byte (the RTL's
//! ACK/NAK records, READ responses and atomic ACKs built into frames with the model's own
//! `build_frame`, against the frames the model sent), the receive CQEs (from the model's
//! CQ rings in host memory), host memory, the QP's state, ePSN and RQ consumer index (the
//! model's QUERY_QP) and the responder's global counters (the model's BAR0 counters).
//!
//! The error state is compared in full: the QP-error event (a handshake; the bench moves
//! `qpa.state` to ERR when it takes it, as the command engine does), the WR_FLUSH_ERR
//! CQEs of the receive in progress and of the posted receives (on the responder's own
//! error, on a receive posted to a QP in ERR, and on a host MODIFY_QP to ERR, which the
//! bench sends as the command engine's flush request), and the RQ consumer index after.

use rocenic_hdl::bench::{Bench, Rng};
use rocenic_hdl::bus::cnt::RespCntClient;
use rocenic_hdl::common::icrc::beat_from_bytes;
use rocenic_hdl::control::ctx_tables::*;
use rocenic_hdl::prelude::*;
use rocenic_hdl::requester::wqe_fetch::BUF;
use rocenic_hdl::responder::*;
use rocenic_hdl::tx::tx_arbiter::RECORD_FIELDS;
use rocenic_model::{
    atomic_result, build_frame, packets, read_response_packets, Addr, Hdr, Mr, Nic, NicConfig,
    Tables, NO_CREDIT, REPLAY_DEPTH,
};
use rocenic_proto::abi::cmd::{
    mr_key, qp_attr, Args, CmdOpcode, CmdStatus, CqArgs, CreateQpArgs, ModifyQpArgs, MrArgs,
    PdArgs, QueryQpOut,
};
use rocenic_proto::abi::cqe::{phase_of, Cqe};
use rocenic_proto::abi::regs;
use rocenic_proto::abi::verbs::{access, QpState, WcOpcode, WcStatus};
use rocenic_proto::abi::wqe::{RecvWqe, Sge};
use rocenic_proto::device::{Device, DeviceIo, DmaFault, DmaPort, Frame};
use rocenic_proto::wire::{Opcode, RoceRepr, Syndrome};
use std::collections::{BTreeMap, VecDeque};

const QA: usize = 4;
/// Our two QPs, each with its own receive CQ.
const QPS: [u32; 2] = [3, 6];
pub(crate) const PDN: u32 = 1;
pub(crate) const OTHER_PDN: u32 = 2;
pub(crate) const LOCAL_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
pub(crate) const LOCAL_IP: [u8; 4] = [10, 0, 0, 1];

/// Host memory: the buffers (rings, MR targets) and the CQ rings; the rest faults.
pub(crate) const BUF_BASE: u64 = 0x10_0000;
pub(crate) const BUF_LEN: usize = 0x4_0000;
pub(crate) const CQ_BASE: u64 = 0x80_0000;
pub(crate) const CQ_LOG: u32 = 11;
pub(crate) const CQ_BYTES: u64 = 64 << CQ_LOG;
const RQ_LOG: u32 = 4;
/// SEND with invalidate in the streams.
const INVALIDATE: bool = true;

/// The MRs: (index, access, va, iova, length, pdn).
pub(crate) const MRS: [(u32, u32, u64, u64, u64, u32); 5] = [
    // receive buffers
    (
        1,
        access::LOCAL_WRITE,
        0x7000_0000,
        BUF_BASE + 0x1000,
        0x8000,
        PDN,
    ),
    // RDMA target with every right
    (
        2,
        access::ALL,
        0x8000_0000,
        BUF_BASE + 0x9000,
        0x1_0000,
        PDN,
    ),
    // READ only
    (
        3,
        access::REMOTE_READ,
        0x9000_0000,
        BUF_BASE + 0x1_9000,
        0x8000,
        PDN,
    ),
    // every right, its upper half past the mapped memory (DMA faults)
    (
        4,
        access::ALL,
        0xA000_0000,
        BUF_BASE + 0x3_8000,
        0x1_0000,
        PDN,
    ),
    // another PD
    (
        5,
        access::ALL,
        0xB000_0000,
        BUF_BASE + 0x2_1000,
        0x4000,
        OTHER_PDN,
    ),
];

pub(crate) fn key_of(index: u32) -> u32 {
    mr_key(index, 0x10 + index as u8)
}

/// The RQ ring of a QP: QP 3's wholly mapped, QP 6's slots 12..16 past the mapped memory.
fn rq_ring(qpn: u32) -> u64 {
    if qpn == QPS[0] {
        BUF_BASE
    } else {
        BUF_BASE + BUF_LEN as u64 - 12 * 64
    }
}

pub(crate) fn cq_ring(cqn: u32) -> u64 {
    CQ_BASE + u64::from(cqn - 1) * CQ_BYTES
}

/// Host memory through the IOMMU: two mapped regions.
#[derive(Clone)]
pub(crate) struct Host {
    pub(crate) regions: Vec<(u64, Vec<u8>)>,
}

impl Host {
    pub(crate) fn new(rng: &mut Rng) -> Host {
        Host {
            regions: vec![
                (BUF_BASE, rng.bytes(BUF_LEN)),
                (CQ_BASE, vec![0; 2 * CQ_BYTES as usize]),
            ],
        }
    }

    fn range(&self, iova: u64, len: usize) -> Option<(usize, usize)> {
        self.regions.iter().enumerate().find_map(|(i, (base, m))| {
            let off = iova.checked_sub(*base)?;
            (off.checked_add(len as u64)? <= m.len() as u64).then_some((i, off as usize))
        })
    }

    pub(crate) fn read(&self, iova: u64, buf: &mut [u8]) -> bool {
        match self.range(iova, buf.len()) {
            Some((i, off)) => {
                buf.copy_from_slice(&self.regions[i].1[off..off + buf.len()]);
                true
            }
            None => false,
        }
    }

    pub(crate) fn write(&mut self, iova: u64, data: &[u8]) -> bool {
        match self.range(iova, data.len()) {
            Some((i, off)) => {
                self.regions[i].1[off..off + data.len()].copy_from_slice(data);
                true
            }
            None => false,
        }
    }
}

impl DmaPort for Host {
    fn dma_read(&mut self, now: u64, iova: u64, buf: &mut [u8]) -> Result<u64, DmaFault> {
        if self.read(iova, buf) {
            Ok(now)
        } else {
            Err(DmaFault {
                iova,
                len: buf.len(),
                write: false,
            })
        }
    }
    fn dma_write(&mut self, now: u64, iova: u64, data: &[u8]) -> Result<u64, DmaFault> {
        if self.write(iova, data) {
            Ok(now)
        } else {
            Err(DmaFault {
                iova,
                len: data.len(),
                write: true,
            })
        }
    }
}

/// The model, with its host memory.
pub(crate) struct Model {
    pub(crate) nic: Nic,
    pub(crate) host: Host,
    pub(crate) now: u64,
    /// CQEs read from each CQ ring so far.
    pub(crate) cq_seen: BTreeMap<u32, u32>,
}

impl Model {
    pub(crate) fn tick(&mut self, rx: &mut VecDeque<Frame>, tx: &mut Vec<Frame>) {
        self.now += 1;
        let mut io = DeviceIo {
            dma: &mut self.host,
            rx,
            tx,
        };
        self.nic.tick(self.now, &mut io);
    }

    pub(crate) fn command(&mut self, op: CmdOpcode, args: Args) -> (CmdStatus, [u32; 8]) {
        for (i, &a) in args.iter().enumerate() {
            self.nic.bar_write(regs::cmd_arg(i as u32), a);
        }
        self.nic.bar_write(regs::CMD_OPCODE, u32::from(op));
        let (mut rx, mut tx) = (VecDeque::new(), Vec::new());
        let status = loop {
            self.tick(&mut rx, &mut tx);
            let s = self.nic.bar_read(regs::CMD_STATUS);
            if s & regs::CMD_STATUS_BUSY == 0 {
                break s;
            }
        };
        assert!(tx.is_empty(), "no frames from a command");
        let mut outs = [0; 8];
        for (i, o) in outs.iter_mut().enumerate() {
            *o = self.nic.bar_read(regs::cmd_out(i as u32));
        }
        (CmdStatus::from(status), outs)
    }

    pub(crate) fn ok(&mut self, op: CmdOpcode, args: Args) {
        let (s, _) = self.command(op, args);
        assert_eq!(s, CmdStatus::Ok, "{op:?}");
    }

    pub(crate) fn query(&mut self, qpn: u32) -> QueryQpOut {
        let mut a = [0; 16];
        a[0] = qpn;
        let (s, outs) = self.command(CmdOpcode::QueryQp, a);
        assert_eq!(s, CmdStatus::Ok);
        QueryQpOut::from_outs(&outs)
    }

    fn counters(&mut self) -> [u64; 6] {
        COUNTERS.map(|c| u64::from(self.nic.bar_read(regs::counter_lo(c))))
    }

    /// Delivers one frame (or none) and runs until the model is quiet; returns its frames.
    fn deliver(&mut self, frame: Option<Frame>) -> Vec<Frame> {
        let mut rx: VecDeque<Frame> = frame.into_iter().collect();
        let mut tx = Vec::new();
        for _ in 0..10_000 {
            self.tick(&mut rx, &mut tx);
            if rx.is_empty() && self.nic.next_event(self.now).is_none() {
                return tx;
            }
        }
        panic!("the model did not go quiet");
    }

    /// The CQEs written to CQ `cqn` since the last call.
    pub(crate) fn new_cqes(&mut self, cqn: u32) -> Vec<Cqe> {
        let mut out = Vec::new();
        let seen = self.cq_seen.entry(cqn).or_insert(0);
        loop {
            let at = cq_ring(cqn) + 64 * u64::from(*seen & ((1 << CQ_LOG) - 1));
            let mut raw = [0u8; 64];
            assert!(self.host.read(at, &mut raw));
            let c = Cqe::from_bytes(&raw);
            if c.phase != phase_of(*seen, CQ_LOG) {
                return out;
            }
            *seen += 1;
            out.push(Cqe { phase: 0, ..c });
        }
    }
}

/// The QP attributes both sides are given at RTR.
#[derive(Clone, Copy, Debug)]
struct Attrs {
    pmtu_code: u8,
    access: u32,
    min_rnr: u8,
    rq_psn: u32,
    dest_qpn: u32,
    dest_mac: [u8; 6],
    dest_ip: [u8; 4],
    udp_sport: u16,
}

impl Attrs {
    fn random(rng: &mut Rng, qpn: u32) -> Attrs {
        let rq_psn = if rng.percent(30) {
            0xff_fff0 + rng.below(16) as u32
        } else {
            rng.below(1 << 24) as u32
        };
        Attrs {
            pmtu_code: 1 + rng.below(5) as u8,
            access: if rng.percent(75) {
                access::ALL
            } else {
                rng.below(16) as u32
            },
            min_rnr: rng.below(32) as u8,
            rq_psn,
            dest_qpn: 0x100 + qpn,
            dest_mac: [0x02, 0, 0, 0, 0x10, qpn as u8],
            dest_ip: [10, 0, 1, qpn as u8],
            udp_sport: 0xc000 | rng.below(0x4000) as u16,
        }
    }
    fn pmtu(&self) -> u32 {
        128 << self.pmtu_code
    }
}

/// Shared with the scripted bench (`super::tests`) and the requester's bench.
pub(crate) fn put<const W: usize>(e: &mut Bits<W>, at: usize, w: usize, v: u64) {
    for b in 0..w {
        *e = e.replace_bit(at + b, (v >> b) & 1 == 1);
    }
}

/// Shared with the scripted bench (`super::tests`) and the requester's bench.
pub(crate) fn get<const W: usize>(e: &Bits<W>, at: usize, w: usize) -> u64 {
    (0..w).fold(0, |v, b| v | (u64::from(e.get_bit(at + b)) << b))
}

/// Shared with the scripted bench (`super::tests`) and the requester's bench.
/// The responder's six counter pulses this cycle, in the order of both benches'
/// `counters`: Duplicates, PsnSeqDrops, NaksSent, RnrNaksSent, UnknownQpDrops, DmaFaults.
pub(crate) fn cnt_pulses<const Q: usize>(c: &RespCntClient<Q>) -> [bool; 6] {
    [
        c.duplicates.val(),
        c.psn_seq_drops.val(),
        c.naks_sent.val(),
        c.rnr_naks_sent.val(),
        c.unknown_qp_drops.val(),
        c.dma_faults.val(),
    ]
}

pub(crate) fn field(fields: &[(&str, usize)], name: &str) -> (usize, usize) {
    let mut at = 0;
    for &(n, w) in fields {
        if n == name {
            return (at, w);
        }
        at += w;
    }
    panic!("no field {name}")
}

pub(crate) fn set<const W: usize>(e: &mut Bits<W>, fields: &[(&str, usize)], name: &str, v: u64) {
    let (at, w) = field(fields, name);
    put(e, at, w, v);
}

pub(crate) fn val<const W: usize>(e: &Bits<W>, fields: &[(&str, usize)], name: &str) -> u64 {
    let (at, w) = field(fields, name);
    get(e, at, w)
}

pub(crate) fn u48(b: [u8; 6]) -> u64 {
    b.iter().fold(0, |v, &x| v << 8 | u64::from(x))
}

fn mac_of(v: u64) -> [u8; 6] {
    let b = v.to_be_bytes();
    [b[2], b[3], b[4], b[5], b[6], b[7]]
}

/// What the RTL did with one packet or doorbell.
#[derive(Default)]
struct RtlOut {
    frames: Vec<Frame>,
    /// (cqn, CQE)
    cqes: Vec<(u32, Cqe)>,
    qp_errs: Vec<u32>,
    invalidates: usize,
    counters: [u64; 6],
}

/// The RTL and its simulated surroundings.
struct Rtl {
    b: Bench<Responder<QA>>,
    qpc: Vec<QpcEntry>,
    qpa: Vec<QpaEntry>,
    qps: Vec<QpsEntry>,
    tables: Tables,
    host: Host,
    /// AtomicUnit's replay cache: per QP, (psn, orig), oldest first.
    replay: BTreeMap<u32, VecDeque<(u32, u64)>>,
    /// The IPv4 source of the packet `run` feeds (the model's frame carries the same).
    src_ip: [u8; 4],
    rng: Rng,
    /// Percent of cycles a source is valid / a sink ready.
    pat: u32,
    /// The tables as the last run left them: a change made between runs (the command
    /// engine's part: a reconnection, MODIFY_QP to ERR) is signalled on `s_tbl_wr`.
    seen: Option<Snapshot>,
    /// DMA reads of more than one RQ WQE (receives fetched ahead).
    multi_slot_reads: usize,
}

/// The contexts and MRs, to notice a change.
type Snapshot = (Vec<QpcEntry>, Vec<QpaEntry>, Vec<QpsEntry>, String);

/// One request: its headers and payload.
#[derive(Clone, Debug)]
struct Pkt {
    hdr: Hdr,
    payload: Vec<u8>,
}

impl Rtl {
    fn maybe(&mut self) -> bool {
        self.rng.percent(self.pat)
    }

    fn snapshot(&self) -> Snapshot {
        (
            self.qpc.clone(),
            self.qpa.clone(),
            self.qps.clone(),
            format!("{:?}", self.tables.mrs),
        )
    }

    fn job_frame(&self, a: (u64, u64, u64, u64, u64), hdr: &Hdr, payload: &[u8]) -> Frame {
        let addr = Addr {
            dst_mac: mac_of(a.0),
            src_mac: mac_of(a.1),
            src_ip: (a.2 as u32).to_be_bytes(),
            dst_ip: (a.3 as u32).to_be_bytes(),
            udp_sport: a.4 as u16,
        };
        build_frame(&addr, hdr, payload)
    }

    /// Runs one request and/or doorbell through the block until it is idle again.
    fn run(
        &mut self,
        req: Option<&Pkt>,
        doorbell: Option<(u32, u32)>,
        flush: Option<u32>,
    ) -> RtlOut {
        let mut out = RtlOut::default();
        let mut hdr = req.map(|p| p.hdr);
        let mut beats: VecDeque<(Vec<u8>, bool)> = VecDeque::new();
        if let Some(p) = req {
            let n = p.payload.len().div_ceil(64);
            for i in 0..n {
                let end = ((i + 1) * 64).min(p.payload.len());
                beats.push_back((p.payload[i * 64..end].to_vec(), i + 1 == n));
            }
        }
        let mut db = doorbell;
        let mut fl = flush;
        // context reads: (due, table, addr)
        let mut rd: [Option<usize>; 3] = [None; 3];
        let mut mr_pending: Option<(u32, Result<u64, ()>)> = None;
        // The beat offered (after a delay; None = the read refused) and the read's later beats.
        let mut rd_resp: Option<(u32, Option<[u8; 64]>)> = None;
        let mut rd_more: VecDeque<[u8; 64]> = VecDeque::new();
        let mut wr: Option<(u64, usize, usize, Vec<u8>)> = None;
        let mut status_due: Option<(u32, bool)> = None;
        // error reports to send: (atomic, qpn, psn)
        let mut errs: VecDeque<(bool, u32, u32)> = VecDeque::new();
        let mut quiet = 0;
        let mut started = false;
        if self.seen.as_ref() != Some(&self.snapshot()) {
            // a table changed between runs: one cycle of `s_tbl_wr` first
            let u = &mut self.b.uut;
            u.hdr.valid.next = false;
            u.rq_db.valid.next = false;
            u.flush.valid.next = false;
            u.s_read_err_valid.next = false;
            u.s_atomic_err_valid.next = false;
            u.pay.tvalid.next = false;
            u.s_tbl_wr.next = true;
            self.b.tick();
        }
        for _ in 0..20_000 {
            let pv = self.maybe();
            let rdy: Vec<bool> = (0..14).map(|_| self.maybe()).collect();
            let u = &mut self.b.uut;
            // the command engine's table writes: a QP error or an MR invalidation written
            // in this cycle
            u.s_cmd_start.next = false;
            u.s_cmd_done.next = false;
            u.s_tbl_wr.next = (u.qp_err.valid.val() && rdy[12]) || (u.inv.valid.val() && rdy[13]);
            u.local_mac.next = u48(LOCAL_MAC).into();
            u.local_ip.next = u64::from(u32::from_be_bytes(LOCAL_IP)).into();
            u.hdr.valid.next = hdr.is_some();
            if let Some(h) = hdr {
                u.hdr.opcode.next = u64::from(u8::from(h.opcode)).into();
                u.hdr.src_ip.next = u64::from(u32::from_be_bytes(self.src_ip)).into();
                u.hdr.dest_qp.next = u64::from(h.dest_qp).into();
                u.hdr.ack_req.next = h.ack_req;
                u.hdr.psn.next = u64::from(h.psn).into();
                let (va, rkey, len) = match (h.reth, h.atomic) {
                    (Some(r), _) => r,
                    (None, Some((va, rkey, _, _))) => (va, rkey, 0),
                    _ => (0, 0, 0),
                };
                u.hdr.reth_va.next = va.into();
                u.hdr.reth_rkey.next = u64::from(rkey).into();
                u.hdr.reth_dma_len.next = u64::from(len).into();
                let (swap, compare) = h.atomic.map_or((0, 0), |a| (a.2, a.3));
                u.hdr.atomic_swap.next = swap.into();
                u.hdr.atomic_compare.next = compare.into();
                u.hdr.immdt.next = u64::from(h.imm.unwrap_or(0)).into();
                u.hdr.ieth.next = u64::from(h.ieth.unwrap_or(0)).into();
                u.hdr.payload_len.next = (req.map_or(0, |p| p.payload.len()) as u64).into();
                u.hdr.has_reth.next = h.reth.is_some();
                u.hdr.has_atomic_eth.next = h.atomic.is_some();
                u.hdr.has_immdt.next = h.imm.is_some();
                u.hdr.has_ieth.next = h.ieth.is_some();
            }
            u.flush.valid.next = fl.is_some();
            u.flush.qpn.next = u64::from(fl.unwrap_or(0)).into();
            u.qp_err.ready.next = rdy[12];
            // the command engine's invalidate: the model's own rule, answered with ready
            u.inv.ready.next = rdy[13];
            u.inv.ok.next = false;
            if u.inv.valid.val() {
                u.inv.ok.next = self.tables.clone().invalidate(
                    u.inv.key.val().to_u64() as u32,
                    u.inv.pdn.val().to_u64() as u32,
                );
            }
            u.rq_db.valid.next = db.is_some();
            let (dq, dpi) = db.unwrap_or((0, 0));
            u.rq_db.qpn.next = u64::from(dq).into();
            u.rq_db.pi.next = u64::from(dpi).into();
            let beat = beats.front().cloned().filter(|_| pv);
            u.pay.tvalid.next = beat.is_some();
            if let Some((bytes, last)) = &beat {
                let mut full = [0u8; 64];
                full[..bytes.len()].copy_from_slice(bytes);
                u.pay.tdata.next = beat_from_bytes(&full);
                let keep = if bytes.len() == 64 {
                    u64::MAX
                } else {
                    (1u64 << bytes.len()) - 1
                };
                u.pay.tkeep.next = keep.into();
                u.pay.tlast.next = *last;
            }
            u.qpc_rd.req_ready.next = rdy[0];
            u.qpa_rd.req_ready.next = rdy[1];
            u.qps_rd.req_ready.next = rdy[2];
            u.qpc_rd.resp_valid.next = rd[0].is_some();
            u.qpc_rd.resp_data.next = self.qpc[rd[0].unwrap_or(0)];
            u.qpa_rd.resp_valid.next = rd[1].is_some();
            u.qpa_rd.resp_data.next = self.qpa[rd[1].unwrap_or(0)];
            u.qps_rd.resp_valid.next = rd[2].is_some();
            u.qps_rd.resp_data.next = self.qps[rd[2].unwrap_or(0)];
            u.qps_wr.ready.next = rdy[3];
            u.mr.req_ready.next = mr_pending.is_none() && rdy[4];
            let mr_res = mr_pending.filter(|m| m.0 == 0);
            u.mr.res_valid.next = mr_res.is_some();
            u.mr.res_ok.next = mr_res.is_some_and(|r| r.1.is_ok());
            u.mr.res_iova.next = mr_res.map_or(0, |r| r.1.unwrap_or(0)).into();
            u.dma_rd.req_ready.next = rd_resp.is_none() && rdy[5];
            let resp = rd_resp.filter(|r| r.0 == 0);
            u.dma_rd.resp_valid.next = resp.is_some();
            u.dma_rd.resp_err.next = resp.is_some_and(|r| r.1.is_none());
            u.dma_rd.resp_last.next = rd_more.is_empty();
            u.dma_rd.resp_data.next = beat_from_bytes(&resp.and_then(|r| r.1).unwrap_or([0; 64]));
            u.dma_wr.req_ready.next = wr.is_none() && status_due.is_none() && rdy[6];
            u.dma_wr.data_ready.next = rdy[7];
            let st = status_due.filter(|s| s.0 == 0);
            u.dma_wr.status_valid.next = st.is_some();
            u.dma_wr.status_err.next = st.is_some_and(|s| s.1);
            u.ack_pkt.ready.next = rdy[8];
            u.m_read_job_ready.next = rdy[9];
            u.m_atomic_job_ready.next = rdy[10];
            u.m_replay_ready.next = rdy[11];
            u.cqe.ready.next = rdy[8];
            let err = errs.front().copied();
            u.s_read_err_valid.next = err.is_some_and(|e| !e.0);
            u.s_atomic_err_valid.next = err.is_some_and(|e| e.0);
            let (_, eq, ep) = err.unwrap_or((false, 0, 0));
            u.s_read_err_qpn.next = u64::from(eq).into();
            u.s_read_err_psn.next = u64::from(ep).into();
            u.s_atomic_err_qpn.next = u64::from(eq).into();
            u.s_atomic_err_psn.next = u64::from(ep).into();
            self.b.settle();
            let u = &self.b.uut;
            // ---- sample the handshakes ----
            errs.pop_front();
            if u.hdr.valid.val() && u.hdr.ready.val() {
                hdr = None;
                started = true;
            }
            if u.rq_db.valid.val() && u.rq_db.ready.val() {
                db = None;
                started = true;
            }
            if u.flush.valid.val() && u.flush.ready.val() {
                fl = None;
                started = true;
            }
            let mut next_rd = [None; 3];
            for (i, (v, r, a)) in [
                (
                    u.qpc_rd.req_valid.val(),
                    u.qpc_rd.req_ready.val(),
                    u.qpc_rd.req_addr.val(),
                ),
                (
                    u.qpa_rd.req_valid.val(),
                    u.qpa_rd.req_ready.val(),
                    u.qpa_rd.req_addr.val(),
                ),
                (
                    u.qps_rd.req_valid.val(),
                    u.qps_rd.req_ready.val(),
                    u.qps_rd.req_addr.val(),
                ),
            ]
            .into_iter()
            .enumerate()
            {
                if v && r {
                    next_rd[i] = Some(a.to_u64() as usize);
                }
            }
            rd = next_rd;
            if u.qps_wr.valid.val() && u.qps_wr.ready.val() {
                self.qps[u.qps_wr.addr.val().to_u64() as usize] = u.qps_wr.data.val();
            }
            if mr_res.is_some() && u.mr.res_ready.val() {
                mr_pending = None;
            } else if let Some((d, r)) = mr_pending {
                mr_pending = Some((d.saturating_sub(1), r));
            }
            if u.mr.req_valid.val() && u.mr.req_ready.val() {
                let r = self
                    .tables
                    .translate(
                        u.mr.req_key.val().to_u64() as u32,
                        u.mr.req_pdn.val().to_u64() as u32,
                        u.mr.req_va.val().to_u64(),
                        u.mr.req_len.val().to_u64(),
                        u.mr.req_need.val().to_u64() as u32,
                    )
                    .map_err(|_| ());
                mr_pending = Some((1 + self.rng.below(3) as u32, r));
            }
            if resp.is_some() && u.dma_rd.resp_ready.val() {
                rd_resp = rd_more.pop_front().map(|b| (0, Some(b)));
            } else if let Some((d, r)) = rd_resp {
                rd_resp = Some((d.saturating_sub(1), r));
            }
            if u.dma_rd.req_valid.val() && u.dma_rd.req_ready.val() {
                let a = u.dma_rd.req_addr.val().to_u64();
                // RQ WQEs: up to BUF slots of 64 bytes in one read
                let n = u.dma_rd.req_len.val().to_u64() as usize;
                assert!(
                    n.is_multiple_of(64) && (64..=64 * BUF as usize).contains(&n),
                    "a read of {n} bytes"
                );
                let mut raw = vec![0u8; n];
                let delay = 1 + self.rng.below(4) as u32;
                self.multi_slot_reads += usize::from(n > 64);
                if self.host.read(a, &mut raw) {
                    let mut beats = raw.chunks(64).map(|c| c.try_into().expect("64"));
                    rd_resp = Some((delay, beats.next()));
                    rd_more.extend(beats);
                } else {
                    rd_resp = Some((delay, None));
                }
            }
            if st.is_some() {
                status_due = None;
            } else if let Some((d, e)) = status_due {
                status_due = Some((d.saturating_sub(1), e));
            }
            if u.dma_wr.req_valid.val() && u.dma_wr.req_ready.val() {
                let a = u.dma_wr.req_addr.val().to_u64();
                let n = u.dma_wr.req_len.val().to_u64() as usize;
                assert!(n > 0, "no empty DMA writes");
                wr = Some((a, n, 0, Vec::new()));
            }
            if u.dma_wr.data_valid.val() && u.dma_wr.data_ready.val() {
                let (a, n, done, mut data) = wr.take().expect("data after its request");
                let d = u.dma_wr.data.val();
                let take = (n - done).min(64);
                for j in 0..take {
                    data.push(get(&d, 8 * j, 8) as u8);
                }
                assert_eq!(u.dma_wr.data_last.val(), done + take == n, "tlast");
                if done + take == n {
                    let ok = self.host.write(a, &data);
                    status_due = Some((self.rng.below(4) as u32, !ok));
                } else {
                    wr = Some((a, n, done + take, data));
                }
            }
            if u.pay.tvalid.val() && u.pay.tready.val() {
                beats.pop_front();
            }
            if u.ack_pkt.valid.val() && u.ack_pkt.ready.val() {
                let r = u.ack_pkt.data.val();
                let f = |n: &str| {
                    let (at, w) = field(RECORD_FIELDS, n);
                    get(&r, at, w)
                };
                let mut h = Hdr::new(
                    Opcode::from(f("opcode") as u8),
                    f("dest_qp") as u32,
                    f("psn") as u32,
                );
                h.ack_req = f("ack_req") != 0;
                h.solicited = f("se") != 0;
                h.aeth = Some((f("syndrome") as u8, f("msn") as u32));
                for n in [
                    "va", "rkey", "dma_len", "swap_add", "compare", "orig", "imm",
                ] {
                    assert_eq!(f(n), 0, "ACK record field {n}");
                }
                assert_eq!(f("payload_len"), 0);
                let a = (
                    f("dst_mac"),
                    f("src_mac"),
                    f("src_ip"),
                    f("dst_ip"),
                    f("udp_sport"),
                );
                out.frames.push(self.job_frame(a, &h, &[]));
            }
            if u.m_read_job_valid.val() && u.m_read_job_ready.val() {
                let a = (
                    u.read_hdr.dst_mac.val().to_u64(),
                    u.read_hdr.src_mac.val().to_u64(),
                    u.read_hdr.src_ip.val().to_u64(),
                    u.read_hdr.dst_ip.val().to_u64(),
                    u.read_hdr.udp_sport.val().to_u64(),
                );
                let qpn = u.read_hdr.qpn.val().to_u64() as u32;
                let dest = u.read_hdr.dest_qp.val().to_u64() as u32;
                let psn = u.read_hdr.psn.val().to_u64() as u32;
                let msn = u.read_hdr.msn.val().to_u64() as u32;
                let iova = u.read_args.iova.val().to_u64();
                let len = u.read_args.len.val().to_u64() as u32;
                let pmtu = 128u32 << u.read_args.pmtu.val().to_u64();
                // ReadResp: one DMA read per packet, a failure reported with the
                // request's PSN, later packets not sent.
                for p in read_response_packets(psn, len, pmtu, msn) {
                    let mut payload = vec![0u8; p.len as usize];
                    if p.len > 0 && !self.host.read(iova + u64::from(p.offset), &mut payload) {
                        errs.push_back((false, qpn, psn));
                        break;
                    }
                    let mut h = Hdr::new(p.opcode, dest, p.psn);
                    h.aeth = p.aeth;
                    out.frames.push(self.job_frame(a, &h, &payload));
                }
            }
            let atomic = u.m_atomic_job_valid.val() && u.m_atomic_job_ready.val();
            let replay = u.m_replay_valid.val() && u.m_replay_ready.val();
            if atomic || replay {
                let (a, qpn, dest, psn, msn) = if atomic {
                    (
                        (
                            u.atomic_hdr.dst_mac.val().to_u64(),
                            u.atomic_hdr.src_mac.val().to_u64(),
                            u.atomic_hdr.src_ip.val().to_u64(),
                            u.atomic_hdr.dst_ip.val().to_u64(),
                            u.atomic_hdr.udp_sport.val().to_u64(),
                        ),
                        u.atomic_hdr.qpn.val().to_u64() as u32,
                        u.atomic_hdr.dest_qp.val().to_u64() as u32,
                        u.atomic_hdr.psn.val().to_u64() as u32,
                        u.atomic_hdr.msn.val().to_u64() as u32,
                    )
                } else {
                    (
                        (
                            u.replay_hdr.dst_mac.val().to_u64(),
                            u.replay_hdr.src_mac.val().to_u64(),
                            u.replay_hdr.src_ip.val().to_u64(),
                            u.replay_hdr.dst_ip.val().to_u64(),
                            u.replay_hdr.udp_sport.val().to_u64(),
                        ),
                        u.replay_hdr.qpn.val().to_u64() as u32,
                        u.replay_hdr.dest_qp.val().to_u64() as u32,
                        u.replay_hdr.psn.val().to_u64() as u32,
                        u.replay_hdr.msn.val().to_u64() as u32,
                    )
                };
                let orig = if atomic {
                    // AtomicUnit: read, compute, write; a refusal is reported.
                    let iova = u.atomic_args.iova.val().to_u64();
                    let mut old = [0u8; 8];
                    let mut orig = None;
                    if self.host.read(iova, &mut old) {
                        let o = u64::from_le_bytes(old);
                        let new = atomic_result(
                            u.atomic_args.compare_swap.val(),
                            o,
                            u.atomic_args.swap_add.val().to_u64(),
                            u.atomic_args.compare.val().to_u64(),
                        );
                        if self.host.write(iova, &new.to_le_bytes()) {
                            orig = Some(o);
                        }
                    }
                    match orig {
                        Some(o) => {
                            let c = self.replay.entry(qpn).or_default();
                            if c.len() == REPLAY_DEPTH {
                                c.pop_front();
                            }
                            c.push_back((psn, o));
                        }
                        None => errs.push_back((true, qpn, psn)),
                    }
                    orig
                } else {
                    self.replay
                        .get(&qpn)
                        .and_then(|c| c.iter().find(|e| e.0 == psn))
                        .map(|e| e.1)
                };
                if let Some(o) = orig {
                    let mut h = Hdr::new(Opcode::AtomicAcknowledge, dest, psn);
                    h.aeth = Some((u8::from(Syndrome::Ack { credits: NO_CREDIT }), msn));
                    h.atomic_ack = Some(o);
                    out.frames.push(self.job_frame(a, &h, &[]));
                }
            }
            if u.cqe.valid.val() && u.cqe.ready.val() {
                let c = Cqe {
                    wr_id: u.cqe.wr_id.val().to_u64(),
                    byte_len: u.cqe.byte_len.val().to_u64() as u32,
                    imm_or_inv: u.cqe.imm.val().to_u64() as u32,
                    qp_num: u.cqe.qp_num.val().to_u64() as u32,
                    src_qp: u.cqe.src_qp.val().to_u64() as u32,
                    wqe_index: u.cqe.wqe_index.val().to_u64() as u32,
                    opcode: WcOpcode::from(u.cqe.opcode.val().to_u64() as u8),
                    status: WcStatus::from(u.cqe.status.val().to_u64() as u8),
                    wc_flags: u.cqe.wc_flags.val().to_u64() as u8,
                    vendor_err: u.cqe.vendor_err.val().to_u64() as u8,
                    phase: 0,
                };
                out.cqes.push((u.cqe.cqn.val().to_u64() as u32, c));
            }
            if u.inv.valid.val() && u.inv.ready.val() {
                let ok = self.tables.invalidate(
                    u.inv.key.val().to_u64() as u32,
                    u.inv.pdn.val().to_u64() as u32,
                );
                assert_eq!(ok, u.inv.ok.val(), "the answer given");
                out.invalidates += 1;
            }
            if u.qp_err.valid.val() && u.qp_err.ready.val() {
                let q = u.qp_err.qpn.val().to_u64() as u32;
                out.qp_errs.push(q);
                // The command engine's part: the QP enters the error state.
                set(&mut self.qpa[q as usize], qpa_layout::FIELDS, "state", 6);
            }
            for (i, c) in cnt_pulses(&u.cnt).into_iter().enumerate() {
                out.counters[i] += u64::from(c);
            }
            let idle = u.hdr.ready.val() || u.rq_db.ready.val();
            self.b.tick();
            let busy_outside = hdr.is_some()
                || db.is_some()
                || fl.is_some()
                || !errs.is_empty()
                || mr_pending.is_some()
                || rd_resp.is_some()
                || wr.is_some()
                || status_due.is_some()
                || rd.iter().any(Option::is_some);
            quiet = if started && idle && !busy_outside {
                quiet + 1
            } else {
                0
            };
            if quiet == 3 {
                assert!(beats.is_empty(), "payload consumed");
                self.seen = Some(self.snapshot());
                return out;
            }
        }
        panic!("the responder did not return to idle");
    }
}

/// A requester's view of one of our QPs: the packets of its messages, by PSN.
struct Sender {
    qpn: u32,
    attrs: Attrs,
    /// Every packet generated since the QP was (re)connected, in PSN order, with the
    /// PSNs it uses.
    history: Vec<(Pkt, u32)>,
    /// The PSN after the last generated packet.
    gen_psn: u32,
    /// Receives posted (the RQ producer index).
    rq_pi: u32,
}

fn psn_add(psn: u32, n: u32) -> u32 {
    psn.wrapping_add(n) & 0xff_ffff
}

/// A VA and rkey for an RDMA target of `len` bytes: mostly fine, sometimes wrong.
fn target(rng: &mut Rng, len: u32, align: u64) -> (u64, u32) {
    let pick = rng.below(100);
    let (idx, slack) = match pick {
        0..=69 => (2, 0),
        70..=77 => (4, 0),
        78..=83 => (3, 0),
        84..=87 => (5, 0),
        88..=90 => (1, 0),
        91..=95 => (2, 1), // out of bounds
        _ => (99, 0),      // no such key
    };
    let (va, mlen) = MRS
        .iter()
        .find(|m| m.0 == idx)
        .map_or((0x8000_0000, 0x1_0000), |m| (m.2, m.4));
    let room = mlen.saturating_sub(u64::from(len)).max(1);
    let mut off = rng.below(room) & !(align - 1);
    if slack == 1 {
        off = mlen - u64::from(len) / 2 - 1;
    }
    if idx == 4 && rng.percent(50) {
        // across the end of the mapped memory: the DMA of a later packet faults
        off = (0x8000 - rng.below(u64::from(len) + 1)) & !(align - 1);
    }
    let key = if idx == 99 {
        key_of(2) ^ 0x1
    } else {
        key_of(idx)
    };
    (va + off, key)
}

impl Sender {
    fn new(qpn: u32, attrs: Attrs) -> Sender {
        Sender {
            qpn,
            attrs,
            history: Vec::new(),
            gen_psn: attrs.rq_psn,
            rq_pi: 0,
        }
    }

    fn find(&self, psn: u32) -> Option<usize> {
        self.history.iter().position(|(p, _)| p.hdr.psn == psn)
    }

    /// Generates one more message at `gen_psn`.
    fn generate(&mut self, rng: &mut Rng) {
        let pmtu = self.attrs.pmtu();
        let len = match rng.below(10) {
            0 => 0,
            1..=3 => 1 + rng.below(u64::from(pmtu)) as u32,
            4 => pmtu,
            5 => 2 * pmtu,
            _ => 1 + rng.below(u64::from(3 * pmtu + 100)) as u32,
        };
        let n = len.div_ceil(pmtu).max(1);
        let mut bytes = rng.bytes(len as usize);
        let dest = self.qpn;
        let mut out: Vec<(Pkt, u32)> = Vec::new();
        let kind = rng.below(100);
        let mut psn = self.gen_psn;
        let mut push = |h: Hdr, payload: Vec<u8>, npsn: u32| {
            out.push((Pkt { hdr: h, payload }, npsn));
        };
        if kind < 55 {
            // SEND or WRITE, n packets
            let write = kind >= 30;
            let imm = rng.percent(30).then(|| rng.next_u64() as u32);
            // SEND with invalidate: the READ-only MR, the other PD's, a wrong tag (MR 2's
            // index), or no such MR; only the first can succeed, once per seed
            let inv = (!write && INVALIDATE && imm.is_none() && rng.percent(20)).then(|| {
                [key_of(3), key_of(5), key_of(2) ^ 0x80, key_of(6)][rng.below(4) as usize]
            });
            let (va, rkey) = target(rng, len, 1);
            let reth_len = if rng.percent(4) {
                len.wrapping_add(1)
            } else {
                len
            };
            for k in 0..n {
                let (first, last) = (k == 0, k + 1 == n);
                let op = match (write, first, last, imm.is_some()) {
                    (false, true, true, false) if inv.is_some() => Opcode::SendOnlyWithInvalidate,
                    (false, false, true, false) if inv.is_some() => Opcode::SendLastWithInvalidate,
                    (false, true, true, false) => Opcode::SendOnly,
                    (false, true, true, true) => Opcode::SendOnlyWithImmediate,
                    (false, true, false, _) => Opcode::SendFirst,
                    (false, false, false, _) => Opcode::SendMiddle,
                    (false, false, true, false) => Opcode::SendLast,
                    (false, false, true, true) => Opcode::SendLastWithImmediate,
                    (true, true, true, false) => Opcode::RdmaWriteOnly,
                    (true, true, true, true) => Opcode::RdmaWriteOnlyWithImmediate,
                    (true, true, false, _) => Opcode::RdmaWriteFirst,
                    (true, false, false, _) => Opcode::RdmaWriteMiddle,
                    (true, false, true, false) => Opcode::RdmaWriteLast,
                    (true, false, true, true) => Opcode::RdmaWriteLastWithImmediate,
                };
                let mut h = Hdr::new(op, dest, psn);
                h.ack_req = last || rng.percent(20);
                if write && first {
                    h.reth = Some((va, rkey, reth_len));
                }
                if last {
                    h.imm = imm;
                    if !write {
                        h.ieth = inv;
                    }
                }
                let take = (bytes.len()).min(pmtu as usize);
                let mut payload: Vec<u8> = bytes.drain(..take).collect();
                if rng.percent(2) && !payload.is_empty() {
                    payload.pop(); // a short packet: invalid unless it ends the message
                }
                push(h, payload, 1);
                psn = psn_add(psn, 1);
            }
        } else if kind < 75 {
            let rlen = if rng.percent(10) { 0 } else { len };
            let (va, rkey) = target(rng, rlen, 1);
            let mut h = Hdr::new(Opcode::RdmaReadRequest, dest, psn);
            h.ack_req = true;
            h.reth = Some((va, rkey, rlen));
            let np = packets(rlen, pmtu);
            push(h, Vec::new(), np);
        } else {
            let cs = rng.percent(50);
            let (mut va, rkey) = target(rng, 8, 8);
            if rng.percent(4) {
                va += 4;
            }
            let op = if cs {
                Opcode::CompareSwap
            } else {
                Opcode::FetchAdd
            };
            let mut h = Hdr::new(op, dest, psn);
            h.ack_req = true;
            // compare: sometimes the value in memory is what a CAS expects (the bench
            // cannot see it here; a small value space makes equality happen)
            h.atomic = Some((va, rkey, rng.next_u64(), rng.below(4)));
            push(h, Vec::new(), 1);
        }
        for (p, np) in out {
            self.gen_psn = psn_add(p.hdr.psn, np);
            self.history.push((p, np));
        }
    }

    /// The packet at `psn`, generating messages up to it.
    fn at(&mut self, rng: &mut Rng, psn: u32) -> Option<Pkt> {
        for _ in 0..8 {
            if let Some(i) = self.find(psn) {
                return Some(self.history[i].0.clone());
            }
            if self.gen_psn != psn && self.history.iter().any(|(p, _)| p.hdr.psn == psn) {
                return None;
            }
            self.generate(rng);
        }
        None
    }
}

/// A request with a random request opcode and headers to match, at `psn`.
fn garbage(rng: &mut Rng, dest: u32, psn: u32, pmtu: u32) -> Pkt {
    let ops: Vec<Opcode> = Opcode::all()
        .filter(|o| o.is_request() && (INVALIDATE || !o.has_ieth()))
        .collect();
    let op = ops[rng.below(ops.len() as u64) as usize];
    let mut h = Hdr::new(op, dest, psn);
    h.ack_req = rng.percent(50);
    if op.has_reth() {
        let (va, rkey) = target(rng, 64, 1);
        h.reth = Some((va, rkey, rng.below(3 * u64::from(pmtu)) as u32));
    }
    if op.has_atomic_eth() {
        let (va, rkey) = target(rng, 8, 8);
        h.atomic = Some((va, rkey, rng.next_u64(), rng.next_u64()));
    }
    if op.has_immdt() {
        h.imm = Some(rng.next_u64() as u32);
    }
    if op.has_ieth() {
        h.ieth = Some(rng.next_u64() as u32);
    }
    let len = if op.is_send() || op.is_write() {
        match rng.below(3) {
            0 => pmtu as usize,
            1 => rng.below(u64::from(pmtu) + 2) as usize,
            _ => 0,
        }
    } else {
        0
    };
    Pkt {
        hdr: h,
        payload: rng.bytes(len),
    }
}

/// What the streams exercised (asserted at the end so the bench cannot go blind).
#[derive(Default, Debug)]
struct Stats {
    packets: BTreeMap<String, usize>,
    /// ACK frames by syndrome byte's class: ACK, RNR NAK, NAK codes.
    syndromes: BTreeMap<String, usize>,
    read_responses: usize,
    atomic_acks: usize,
    cqes: BTreeMap<String, usize>,
    qp_errors: usize,
    host_errors: usize,
    /// Invalidate requests, and receives completed WITH_INV.
    invalidates: usize,
    with_inv: usize,
    doorbells: usize,
    reconnects: usize,
    /// Packets sent from an address that is not the QP's peer.
    strangers: usize,
    counters: [u64; 6],
    multi_slot_reads: usize,
}

struct World {
    stats: Stats,
    model: Model,
    rtl: Rtl,
    senders: Vec<Sender>,
    rng: Rng,
    seed: u64,
    step: usize,
}

impl World {
    fn new(seed: u64) -> World {
        let mut rng = Rng::new(seed);
        let host = Host::new(&mut rng);
        let mut model = Model {
            nic: Nic::new(NicConfig::default()),
            host: host.clone(),
            now: 0,
            cq_seen: BTreeMap::new(),
        };
        let (hi, lo) = regs::mac_to_regs(LOCAL_MAC);
        model.nic.bar_write(regs::MAC_HI, hi);
        model.nic.bar_write(regs::MAC_LO, lo);
        model
            .nic
            .bar_write(regs::IPV4_ADDR, u32::from_be_bytes(LOCAL_IP));
        model.nic.bar_write(regs::CONTROL, regs::CONTROL_ENABLE);
        for pdn in [PDN, OTHER_PDN] {
            model.ok(CmdOpcode::CreatePd, PdArgs { pdn }.to_args());
        }
        let mut tables = Tables::new(256, 1024, 256);
        for &(index, acc, va, iova, length, pdn) in &MRS {
            let key = key_of(index);
            model.ok(
                CmdOpcode::RegMr,
                MrArgs {
                    index,
                    key,
                    pdn,
                    access: acc,
                    va,
                    iova,
                    length,
                }
                .to_args(),
            );
            tables.mrs[index as usize] = Some(Mr {
                key,
                pdn,
                access: acc,
                va,
                iova,
                length,
                valid: true,
            });
        }
        let mut b = Bench::new(Responder::<QA>::default(), |u| &mut u.clock);
        b.uut.reset.next = true;
        b.tick();
        b.uut.reset.next = false;
        let n = 1 << QA;
        let pat = [100, 90, 60][rng.below(3) as usize];
        let rtl = Rtl {
            b,
            qpc: vec![QpcEntry::default(); n],
            qpa: vec![QpaEntry::default(); n],
            qps: vec![QpsEntry::default(); n],
            tables,
            host,
            replay: BTreeMap::new(),
            rng: Rng::new(seed ^ 0x5555),
            pat,
            seen: None,
            multi_slot_reads: 0,
            src_ip: [0; 4],
        };
        let mut w = World {
            stats: Stats::default(),
            model,
            rtl,
            senders: Vec::new(),
            rng,
            seed,
            step: 0,
        };
        for (i, &qpn) in QPS.iter().enumerate() {
            let cqn = 1 + i as u32;
            w.model.ok(
                CmdOpcode::CreateCq,
                CqArgs {
                    cqn,
                    log_size: CQ_LOG,
                    ring_iova: cq_ring(cqn),
                }
                .to_args(),
            );
            w.model.ok(
                CmdOpcode::CreateQp,
                CreateQpArgs {
                    qpn,
                    pdn: PDN,
                    send_cqn: cqn,
                    recv_cqn: cqn,
                    sq_iova: 0x4000_0000,
                    sq_log_size: 4,
                    rq_iova: rq_ring(qpn),
                    rq_log_size: RQ_LOG,
                }
                .to_args(),
            );
            let c = &mut w.rtl.qpc[qpn as usize];
            let f = qpc_layout::FIELDS;
            set(c, f, "present", 1);
            set(c, f, "pdn", u64::from(PDN));
            set(c, f, "send_cqn", u64::from(cqn));
            set(c, f, "recv_cqn", u64::from(cqn));
            set(c, f, "sq_log", 4);
            set(c, f, "sq_ring", 0x4000_0000 >> 6);
            set(c, f, "rq_log", u64::from(RQ_LOG));
            set(c, f, "rq_ring", rq_ring(qpn) >> 6);
            let attrs = Attrs::random(&mut w.rng, qpn);
            w.senders.push(Sender::new(qpn, attrs));
            w.connect(i, attrs);
        }
        w
    }

    /// RESET -> INIT -> RTR with `attrs` on both sides (the RTL's contexts as the command
    /// engine leaves them: `qps` zeroed with the ePSN, `qpa` with the attributes).
    fn connect(&mut self, i: usize, attrs: Attrs) {
        let qpn = QPS[i];
        let m = |mask: u32, state: QpState| ModifyQpArgs {
            qpn,
            mask,
            state: u8::from(state),
            path_mtu: attrs.pmtu_code,
            dest_qpn: attrs.dest_qpn,
            rq_psn: attrs.rq_psn,
            dest_mac: attrs.dest_mac,
            dest_ip: attrs.dest_ip,
            access: attrs.access,
            min_rnr_timer: attrs.min_rnr,
            udp_sport: attrs.udp_sport,
            ..ModifyQpArgs::default()
        };
        for (mask, state) in [
            (qp_attr::STATE, QpState::Reset),
            (qp_attr::REQ_INIT, QpState::Init),
            (qp_attr::REQ_RTR | qp_attr::ACCESS_FLAGS, QpState::Rtr),
        ] {
            self.model.ok(CmdOpcode::ModifyQp, m(mask, state).to_args());
        }
        let a = &mut self.rtl.qpa[qpn as usize];
        *a = QpaEntry::default();
        let f = qpa_layout::FIELDS;
        set(a, f, "state", u64::from(u8::from(QpState::Rtr)));
        set(a, f, "pmtu", u64::from(attrs.pmtu_code));
        set(a, f, "dest_qpn", u64::from(attrs.dest_qpn));
        set(a, f, "dest_mac", u48(attrs.dest_mac));
        set(
            a,
            f,
            "dest_ip",
            u64::from(u32::from_be_bytes(attrs.dest_ip)),
        );
        set(a, f, "udp_sport", u64::from(attrs.udp_sport));
        set(a, f, "access", u64::from(attrs.access));
        set(a, f, "min_rnr_timer", u64::from(attrs.min_rnr));
        let s = &mut self.rtl.qps[qpn as usize];
        *s = QpsEntry::default();
        set(s, qps_layout::FIELDS, "epsn", u64::from(attrs.rq_psn));
        self.rtl.replay.remove(&qpn);
        self.senders[i] = Sender::new(qpn, attrs);
    }

    fn fail(&self, what: &str) -> ! {
        panic!(
            "Responder vs model, seed {:#x}, step {}: {what}",
            self.seed, self.step
        );
    }

    /// Compares what both sides did in one step, and the state after it.
    fn compare(&mut self, model_frames: Vec<Frame>, before: [u64; 6], out: RtlOut, what: &str) {
        for f in &model_frames {
            let (r, _) = RoceRepr::parse(f).expect("the model's frame parses");
            match r.bth.opcode {
                Opcode::Acknowledge => {
                    let syn = r.ext.aeth.expect("AETH").syndrome;
                    *self.stats.syndromes.entry(format!("{syn:?}")).or_default() += 1;
                }
                Opcode::AtomicAcknowledge => self.stats.atomic_acks += 1,
                _ => self.stats.read_responses += 1,
            }
        }
        self.stats.qp_errors += out.qp_errs.len();
        self.stats.invalidates += out.invalidates;
        self.stats.with_inv += out
            .cqes
            .iter()
            .filter(|(_, c)| c.wc_flags & rocenic_proto::abi::verbs::wc_flags::WITH_INV != 0)
            .count();
        for (c, o) in self.stats.counters.iter_mut().zip(out.counters) {
            *c += o;
        }
        for (_, c) in &out.cqes {
            *self
                .stats
                .cqes
                .entry(format!("{:?} {:?}", c.opcode, c.status))
                .or_default() += 1;
        }
        let n = model_frames.len().max(out.frames.len());
        for k in 0..n {
            let (m, r) = (model_frames.get(k), out.frames.get(k));
            if m != r {
                let show = |f: Option<&Frame>| {
                    f.map(|f| format!("{:?}", RoceRepr::parse(f).map(|p| (p.0.bth, p.0.ext))))
                };
                self.fail(&format!(
                    "{what}: response {k} differs\n  model: {:?}\n  rtl:   {:?}",
                    show(m),
                    show(r)
                ));
            }
        }
        let mut mc = Vec::new();
        for (i, _) in QPS.iter().enumerate() {
            let cqn = 1 + i as u32;
            mc.extend(self.model.new_cqes(cqn).into_iter().map(|c| (cqn, c)));
        }
        if mc != out.cqes {
            self.fail(&format!(
                "{what}: CQEs differ\n  model: {mc:?}\n  rtl:   {:?}",
                out.cqes
            ));
        }
        let after = self.model.counters();
        for (i, c) in COUNTERS.iter().enumerate() {
            if after[i] - before[i] != out.counters[i] {
                self.fail(&format!(
                    "{what}: counter {c:?}: model +{}, rtl +{}",
                    after[i] - before[i],
                    out.counters[i]
                ));
            }
        }
        for &qpn in &QPS {
            let q = self.model.query(qpn);
            let s = &self.rtl.qps[qpn as usize];
            let st = val(&self.rtl.qpa[qpn as usize], qpa_layout::FIELDS, "state");
            let rtl = (
                st,
                val(s, qps_layout::FIELDS, "epsn") as u32,
                val(s, qps_layout::FIELDS, "rq_ci") as u32,
            );
            let model = (u64::from(u8::from(q.state)), q.rq_psn, q.rq_ci);
            if rtl != model {
                self.fail(&format!(
                    "{what}: QP {qpn} (state, epsn, rq_ci): model {model:?}, rtl {rtl:?}"
                ));
            }
        }
        let (mb, rb) = (&self.model.host.regions[0].1, &self.rtl.host.regions[0].1);
        if let Some(i) = (0..BUF_LEN).find(|&i| mb[i] != rb[i]) {
            self.fail(&format!(
                "{what}: host memory differs first at {:#x}: model {:#x}, rtl {:#x}",
                BUF_BASE + i as u64,
                mb[i],
                rb[i]
            ));
        }
    }

    /// Sends one packet to both sides and compares.
    fn packet(&mut self, p: &Pkt) {
        let q = self.senders.iter().find(|s| s.qpn == p.hdr.dest_qp);
        let attrs = q.map_or_else(|| self.senders[0].attrs, |s| s.attrs);
        let mut addr = Addr {
            src_mac: attrs.dest_mac,
            dst_mac: LOCAL_MAC,
            src_ip: attrs.dest_ip,
            dst_ip: LOCAL_IP,
            udp_sport: attrs.udp_sport,
        };
        // One packet in 32 comes from a stranger's address (chosen by a hash of the seed
        // and the step, so the streams stay those of the seed).
        let h = (self.seed ^ (self.step as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .wrapping_mul(0xbf58_476d_1ce4_e5b9);
        if h >> 59 == 0 {
            addr.src_ip = [10, 9, 9, 9];
            self.stats.strangers += 1;
        }
        let frame = build_frame(&addr, &p.hdr, &p.payload);
        *self
            .stats
            .packets
            .entry(format!("{:?}", p.hdr.opcode))
            .or_default() += 1;
        let before = self.model.counters();
        let mf = self.model.deliver(Some(frame));
        self.rtl.src_ip = addr.src_ip;
        let out = self.rtl.run(Some(p), None, None);
        let what = format!(
            "packet {:?} psn {:#x} to QP {:#x} ({} bytes, reth {:x?}, atomic {:x?})",
            p.hdr.opcode,
            p.hdr.psn,
            p.hdr.dest_qp,
            p.payload.len(),
            p.hdr.reth,
            p.hdr.atomic
        );
        self.compare(mf, before, out, &what);
    }

    /// Posts `k` receives on QP `i` (host memory of both sides) and rings the doorbell.
    fn post(&mut self, i: usize, k: u32) {
        let qpn = QPS[i];
        let pmtu = self.senders[i].attrs.pmtu();
        for _ in 0..k {
            let rng = &mut self.rng;
            let pi = self.senders[i].rq_pi;
            let (lkey_idx, len) = match rng.below(20) {
                0 => (2, pmtu),
                1 => (3, pmtu),
                2 => (4, 4 * pmtu),
                3 => (99, pmtu),
                4 => (1, pmtu / 2),
                _ => (1, [pmtu, 3 * pmtu, 4096, 100][rng.below(4) as usize]),
            };
            let (va, mlen) = MRS
                .iter()
                .find(|m| m.0 == lkey_idx)
                .map_or((0x7000_0000, 0x8000), |m| (m.2, m.4));
            let off = rng.below(mlen.saturating_sub(u64::from(len)).max(1));
            let wqe = RecvWqe {
                wr_id: rng.next_u64(),
                num_sge: if rng.percent(3) { 0 } else { 1 },
                sge: Sge {
                    addr: va + off,
                    length: len,
                    lkey: if lkey_idx == 99 {
                        0x999
                    } else {
                        key_of(lkey_idx)
                    },
                },
            };
            let slot = u64::from(pi & ((1 << RQ_LOG) - 1));
            let at = rq_ring(qpn) + 64 * slot;
            // both memories, where mapped (QP 6's upper slots are not)
            self.model.host.write(at, &wqe.to_bytes());
            self.rtl.host.write(at, &wqe.to_bytes());
            self.senders[i].rq_pi = pi.wrapping_add(1);
        }
        let pi = self.senders[i].rq_pi;
        self.stats.doorbells += 1;
        let before = self.model.counters();
        self.model.nic.bar_write(regs::rq_doorbell(qpn), pi);
        let mf = self.model.deliver(None);
        let out = self.rtl.run(None, Some((qpn, pi)), None);
        self.compare(mf, before, out, &format!("RQ doorbell QP {qpn} pi {pi}"));
    }

    /// The host moves QP `i` to ERR (MODIFY_QP): the model flushes; on the RTL side the
    /// command engine writes `qpa.state` and hands the responder a flush request.
    fn host_error(&mut self, i: usize) {
        let qpn = QPS[i];
        self.stats.host_errors += 1;
        let before = self.model.counters();
        let args = ModifyQpArgs {
            qpn,
            mask: qp_attr::STATE,
            state: u8::from(QpState::Err),
            ..ModifyQpArgs::default()
        };
        self.model.ok(CmdOpcode::ModifyQp, args.to_args());
        let mf = self.model.deliver(None);
        set(
            &mut self.rtl.qpa[qpn as usize],
            qpa_layout::FIELDS,
            "state",
            u64::from(u8::from(QpState::Err)),
        );
        let out = self.rtl.run(None, None, Some(qpn));
        self.compare(mf, before, out, &format!("MODIFY_QP {qpn} to ERR"));
    }

    fn step(&mut self) {
        self.step += 1;
        let r = self.rng.below(100);
        let i = self.rng.below(2) as usize;
        let qpn = QPS[i];
        let errored = self.model.query(qpn).state == QpState::Err;
        if r < 20 {
            let q = self.model.query(qpn);
            let room = (1u32 << RQ_LOG) - self.senders[i].rq_pi.wrapping_sub(q.rq_ci);
            let k = (1 + self.rng.below(3) as u32).min(room);
            self.post(i, k);
        } else if r < 22 && !errored && self.rng.percent(50) {
            self.host_error(i);
        } else if r < 22 || (errored && r < 50) {
            let attrs = Attrs::random(&mut self.rng, qpn);
            self.stats.reconnects += 1;
            self.connect(i, attrs);
        } else if r < 25 {
            let dest = [5, 0x13, 0x10_0003, 0][self.rng.below(4) as usize];
            let psn = self.rng.below(1 << 24) as u32;
            let p = garbage(&mut self.rng, dest, psn, 256);
            self.packet(&p);
        } else {
            let epsn = self.model.query(qpn).rq_psn;
            let pmtu = self.senders[i].attrs.pmtu();
            let rng = &mut self.rng;
            let s = &mut self.senders[i];
            let sent: Vec<usize> = (0..s.history.len())
                .filter(|&k| {
                    let d = s.history[k].0.hdr.psn.wrapping_sub(epsn) & 0xff_ffff;
                    d >= 0x80_0000
                })
                .collect();
            let p = match rng.below(100) {
                0..=7 if !sent.is_empty() => {
                    // a duplicate
                    s.history[sent[rng.below(sent.len() as u64) as usize]]
                        .0
                        .clone()
                }
                8..=11 => {
                    // ahead: a later packet of the stream
                    let mut psn = epsn;
                    let mut got = None;
                    for _ in 0..1 + rng.below(3) {
                        let Some(p) = s.at(rng, psn) else { break };
                        let np = s.history[s.find(psn).expect("generated")].1;
                        psn = psn_add(psn, np);
                        got = Some(p);
                    }
                    match s.at(rng, psn) {
                        Some(p) => p,
                        None => got.unwrap_or_else(|| garbage(rng, qpn, epsn, pmtu)),
                    }
                }
                12..=14 => garbage(rng, qpn, epsn, pmtu),
                _ => match s.at(rng, epsn) {
                    Some(p) => p,
                    None => {
                        // the stream lost its place (an invalid packet moved the ePSN
                        // into a message): start anew from the ePSN
                        s.history.clear();
                        s.gen_psn = epsn;
                        s.at(rng, epsn).expect("a new message")
                    }
                },
            };
            self.packet(&p);
        }
    }
}

/// Random streams on two QPs (PMTUs, access flags, RNR timers and start PSNs random per
/// connection), every opcode the responder takes, duplicates, gaps, bad keys and ranges,
/// DMA faults, receives posted by doorbells and RNR, QP errors and reconnections.
#[test]
fn random_streams_match_the_model() {
    let seeds: Vec<u64> = match std::env::var("RESP_DIFF_SEED") {
        Ok(s) => vec![u64::from_str_radix(s.trim_start_matches("0x"), 16).expect("hex seed")],
        Err(_) => (1..=std::env::var("RESP_DIFF_SEEDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(4))
            .collect(),
    };
    let steps: usize = std::env::var("RESP_DIFF_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(150);
    let mut total = Stats::default();
    for seed in seeds {
        let mut w = World::new(seed);
        for _ in 0..steps {
            w.step();
        }
        let s = w.stats;
        total.multi_slot_reads += w.rtl.multi_slot_reads;
        for (k, v) in s.packets {
            *total.packets.entry(k).or_default() += v;
        }
        for (k, v) in s.syndromes {
            *total.syndromes.entry(k).or_default() += v;
        }
        for (k, v) in s.cqes {
            *total.cqes.entry(k).or_default() += v;
        }
        total.read_responses += s.read_responses;
        total.atomic_acks += s.atomic_acks;
        total.qp_errors += s.qp_errors;
        total.host_errors += s.host_errors;
        total.invalidates += s.invalidates;
        total.with_inv += s.with_inv;
        total.doorbells += s.doorbells;
        total.reconnects += s.reconnects;
        total.strangers += s.strangers;
        for (t, c) in total.counters.iter_mut().zip(s.counters) {
            *t += c;
        }
    }
    eprintln!("{total:#?}");
    // The streams must have reached every path that matters.
    let n = |m: &BTreeMap<String, usize>, k: &str| m.get(k).copied().unwrap_or(0);
    for op in [
        "SendFirst",
        "SendMiddle",
        "SendLast",
        "SendOnly",
        "SendOnlyWithImmediate",
        "RdmaWriteFirst",
        "RdmaWriteMiddle",
        "RdmaWriteLast",
        "RdmaWriteOnly",
        "RdmaWriteOnlyWithImmediate",
        "RdmaReadRequest",
        "SendOnlyWithInvalidate",
        "SendLastWithInvalidate",
        "CompareSwap",
        "FetchAdd",
    ] {
        assert!(n(&total.packets, op) > 0, "no {op} sent");
    }
    for syn in [
        "Ack { credits: 31 }",
        "Nak(PsnSequenceError)",
        "Nak(InvalidRequest)",
        "Nak(RemoteAccessError)",
        "Nak(RemoteOperationalError)",
    ] {
        assert!(n(&total.syndromes, syn) > 0, "no {syn} answered");
    }
    assert!(
        total.syndromes.keys().any(|k| k.starts_with("RnrNak")),
        "no RNR NAK"
    );
    assert!(total.read_responses > 0 && total.atomic_acks > 0);
    assert!(n(&total.cqes, "Recv Success") > 0 && n(&total.cqes, "RecvRdmaWithImm Success") > 0);
    assert!(total.qp_errors > 0 && total.reconnects > 0 && total.host_errors > 0);
    assert!(n(&total.cqes, "Recv WrFlushErr") > 0, "no receive flushed");
    assert!(
        total.with_inv > 0 && total.invalidates > total.with_inv,
        "SEND with invalidate: no success or no refusal"
    );
    assert!(total.counters.iter().all(|&c| c > 0), "every counter moved");
    assert!(total.multi_slot_reads > 0, "no receive WQEs fetched ahead");
    assert!(total.strangers > 0, "no packet from a stranger");
}
