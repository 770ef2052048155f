//! Two NICs joined by a cable, driven through the driver's verbs API: a buffer per side
//! registered with every access right (plus the small MRs the protection cases use), one
//! send CQ and one receive CQ per side, and `nqp` connected RC QP pairs. Each NIC is the
//! behavioural model or the Verilated RTL engine ([`Nic`]); the driver cannot tell them
//! apart.

use std::cell::RefCell;
use std::rc::Rc;

use rocenic_driver::backend::model::{pair_world, two_node_world, ModelPair, PairConfig};
use rocenic_driver::backend::rtl::engine_device;
use rocenic_driver::{
    access, qp_attr, AhAttr, Buffer, Context, Cq, Mr, Mtu, Pd, Qp, QpAttr, QpCap, QpInitAttr,
    QpState,
};
use rocenic_proto::abi::cmd::{mr_index, mr_key};
use rocenic_sim::{FaultConfig, LinkConfig, NodeId, World};

use crate::case::{Conn, LinkFaults, Side, MAX_INLINE, MAX_QPS};
use crate::plan::{KeyRef, Plan, Zone};
use crate::wire::{link_filter, LinkLog};

/// Cycles of cable latency each way.
pub const LINK_LATENCY: u64 = 64;

/// The device of one side.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Nic {
    /// The behavioural model (`rocenic_model::Nic`).
    #[default]
    Model,
    /// The Verilated engine (`rocenic_sim::rtl_device::RtlDevice`); with
    /// `ROCENIC_RTL_TRACE=FILE.vcd|.fst` set, side A's (or else B's) waveform goes there.
    Rtl,
}

/// How to build a pair (beyond what the plan says).
#[derive(Clone, Debug)]
pub struct Setup {
    /// The NICs of A and B.
    pub nics: [Nic; 2],
    pub seed: u64,
    pub psn_base: u32,
    pub sq_depth: u32,
    pub rq_depth: u32,
    pub cq_depth: u32,
    pub conn: Conn,
    pub faults: [LinkFaults; 2],
    /// Log every frame sent on both links.
    pub record_frames: bool,
}

/// The MR keys of one side.
#[derive(Clone, Debug)]
pub struct Keys {
    pub main: Mr,
    pub guard: Mr,
    pub noacc: Mr,
    pub ro: Mr,
    pub other_pd: Mr,
    pub stale: u32,
    pub inv: Vec<Mr>,
}

impl Keys {
    pub fn key(&self, k: KeyRef) -> u32 {
        match k {
            KeyRef::Main => self.main.lkey,
            KeyRef::Guard => self.guard.lkey,
            KeyRef::NoAcc => self.noacc.lkey,
            KeyRef::RoLocal => self.ro.lkey,
            KeyRef::OtherPd => self.other_pd.lkey,
            KeyRef::Inv(i) => self.inv[i].lkey,
            KeyRef::Stale => self.stale,
            KeyRef::WrongTag => self.main.lkey ^ 0x80,
            KeyRef::Unknown => mr_key(1000, 1),
        }
    }
}

/// One node: its driver context and objects.
pub struct End {
    pub ctx: Context,
    pub node: NodeId,
    pub pd: Pd,
    pub pd2: Pd,
    pub buf: Buffer,
    pub keys: Keys,
    pub scq: Cq,
    pub rcq: Cq,
    pub qps: Vec<Qp>,
    pub mac: [u8; 6],
    pub ip: [u8; 4],
}

/// Two connected nodes.
pub struct Pair {
    pub world: Rc<RefCell<World>>,
    pub ends: [End; 2],
    /// What the drop filters of the links A->B and B->A saw.
    pub logs: [Rc<RefCell<LinkLog>>; 2],
}

/// The first PSN of `side`'s QP `q`.
pub fn psn(base: u32, side: Side, q: usize) -> u32 {
    base.wrapping_add(0x1f3d_5b79u32.wrapping_mul((2 * q + side.idx()) as u32)) & 0xff_ffff
}

fn err(what: &str, e: impl std::fmt::Display) -> String {
    format!("setup: {what}: {e}")
}

impl Pair {
    /// Builds the world, opens both devices, writes the initial images and connects the QPs.
    pub fn new(plan: &Plan, s: &Setup, images: &[Vec<u8>; 2]) -> Result<Pair, String> {
        let link = |dir: usize| {
            let f = s.faults[dir];
            LinkConfig {
                latency_cycles: LINK_LATENCY,
                faults: FaultConfig {
                    loss: f.loss as f64 / 1000.0,
                    duplicate: f.dup as f64 / 1000.0,
                    reorder: f.reorder as f64 / 1000.0,
                    corrupt: f.corrupt as f64 / 1000.0,
                    reorder_delay_cycles: 1000,
                    seed: s.seed.wrapping_mul(2).wrapping_add(dir as u64),
                },
                ..LinkConfig::default()
            }
        };
        let cfg = PairConfig {
            a_to_b: link(0),
            b_to_a: link(1),
            ..PairConfig::default()
        };
        let mp = build_world(&cfg, s.nics).map_err(|e| err("world", e))?;
        let world = mp.world.clone();
        let nodes = [mp.a.node(), mp.b.node()];
        for n in nodes {
            world.borrow_mut().host_mut(n).set_dma_log(true);
        }
        let logs: [Rc<RefCell<LinkLog>>; 2] = Default::default();
        for dir in 0..2 {
            let f = s.faults[dir];
            if f.is_none() && !s.record_frames {
                continue;
            }
            let filter = link_filter(
                &cfg_faults(&link(dir)),
                f.ack_drop,
                s.seed ^ (0xac0 + dir as u64),
                s.record_frames,
                logs[dir].clone(),
            );
            world
                .borrow_mut()
                .link_mut(nodes[dir])
                .ok_or("setup: link missing")?
                .set_drop_filter(filter);
        }
        let backends = [mp.a, mp.b];
        let mut ends = Vec::new();
        for (i, be) in backends.into_iter().enumerate() {
            let side = Side::BOTH[i];
            ends.push(open_end(plan, s, side, Box::new(be), nodes[i], &images[i])?);
        }
        let [a, b]: [End; 2] = ends.try_into().map_err(|_| "two ends")?;
        let mut pair = Pair {
            world,
            ends: [a, b],
            logs,
        };
        pair.connect(plan, s)?;
        Ok(pair)
    }

    fn connect(&mut self, plan: &Plan, s: &Setup) -> Result<(), String> {
        let mtu = Mtu::from_bytes(plan.pmtu).ok_or("setup: bad pmtu")?;
        for q in 0..plan.nqp {
            for side in Side::BOTH {
                let (me, peer) = (side.idx(), side.peer().idx());
                let (peer_qpn, peer_mac, peer_ip) = {
                    let p = &self.ends[peer];
                    (p.qps[q].qp_num, p.mac, p.ip)
                };
                let e = &mut self.ends[me];
                let qp = e.qps[q];
                let init = QpAttr {
                    qp_state: QpState::Init,
                    qp_access_flags: plan.qp_access[me][q],
                    ..QpAttr::default()
                };
                e.ctx
                    .modify_qp(qp, &init, qp_attr::STATE | qp_attr::ACCESS_FLAGS)
                    .map_err(|x| err("INIT", x))?;
                let rtr = QpAttr {
                    qp_state: QpState::Rtr,
                    path_mtu: mtu,
                    dest_qp_num: peer_qpn,
                    rq_psn: psn(s.psn_base, side.peer(), q),
                    ah_attr: AhAttr {
                        dmac: peer_mac,
                        dip: peer_ip,
                        udp_sport: 0xc000 | (q as u16) << 4 | me as u16,
                    },
                    max_dest_rd_atomic: s.conn.max_rd_atomic,
                    min_rnr_timer: s.conn.min_rnr_timer,
                    ..init
                };
                e.ctx
                    .modify_qp(qp, &rtr, qp_attr::REQ_RTR)
                    .map_err(|x| err("RTR", x))?;
            }
        }
        for q in 0..plan.nqp {
            for side in Side::BOTH {
                let e = &mut self.ends[side.idx()];
                let qp = e.qps[q];
                let rts = QpAttr {
                    qp_state: QpState::Rts,
                    sq_psn: psn(s.psn_base, side, q),
                    timeout: s.conn.timeout,
                    retry_cnt: s.conn.retry_cnt,
                    rnr_retry: s.conn.rnr_retry,
                    max_rd_atomic: s.conn.max_rd_atomic,
                    ..QpAttr::default()
                };
                e.ctx
                    .modify_qp(qp, &rts, qp_attr::REQ_RTS)
                    .map_err(|x| err("RTS", x))?;
            }
        }
        Ok(())
    }

    pub fn end(&mut self, side: Side) -> &mut End {
        &mut self.ends[side.idx()]
    }

    /// Node id of a side.
    pub fn node(&self, side: Side) -> NodeId {
        self.ends[side.idx()].node
    }
}

/// The two-node world with the NICs `nics` (a waveform of the first RTL node when
/// `ROCENIC_RTL_TRACE` names a file).
fn build_world(cfg: &PairConfig, nics: [Nic; 2]) -> rocenic_driver::Result<ModelPair> {
    use rocenic_model::{Nic as ModelNic, NicConfig};
    let trace = std::env::var_os("ROCENIC_RTL_TRACE").map(std::path::PathBuf::from);
    let rtl = |traced: bool| {
        let path = trace.as_deref().filter(|_| traced);
        let format = path
            .map(rocenic_driver::backend::rtl::trace_format)
            .transpose()?;
        engine_device(&cfg.world, format, path)
    };
    let model = || ModelNic::new(NicConfig::default());
    match nics {
        [Nic::Model, Nic::Model] => two_node_world(cfg, None),
        [Nic::Model, Nic::Rtl] => pair_world(cfg, None, model(), rtl(true)?),
        [Nic::Rtl, Nic::Model] => pair_world(cfg, None, rtl(true)?, model()),
        [Nic::Rtl, Nic::Rtl] => pair_world(cfg, None, rtl(true)?, rtl(false)?),
    }
}

fn cfg_faults(l: &LinkConfig) -> FaultConfig {
    l.faults.clone()
}

fn open_end(
    plan: &Plan,
    s: &Setup,
    side: Side,
    be: Box<dyn rocenic_driver::Backend>,
    node: NodeId,
    image: &[u8],
) -> Result<End, String> {
    let mut ctx = Context::open(be).map_err(|e| err("open", e))?;
    let last = 1 + side.idx() as u8;
    let mac = [0x02, 0, 0, 0, 0, last];
    let ip = [10, 0, 0, last];
    ctx.set_port(mac, ip);
    let pd = ctx.alloc_pd().map_err(|e| err("pd", e))?;
    let pd2 = ctx.alloc_pd().map_err(|e| err("pd2", e))?;
    let lay = &plan.layout[side.idx()];
    let buf = ctx.alloc_buf(lay.len).map_err(|e| err("buf", e))?;
    ctx.write(&buf, 0, image).map_err(|e| err("image", e))?;
    let all = access::ALL;
    let main = ctx.reg_mr(pd, &buf, all).map_err(|e| err("main MR", e))?;
    let zone_mr = |ctx: &mut Context, pd: Pd, z: Zone, acc: u32| -> Result<Mr, String> {
        let (start, len) = lay.get(z).ok_or_else(|| format!("setup: no zone {z:?}"))?;
        ctx.reg_mr_range(pd, &buf, start, len, acc)
            .map_err(|e| err("zone MR", e))
    };
    // The stale key: registered over Guard, then deregistered.
    let stale_mr = zone_mr(&mut ctx, pd, Zone::Guard, all)?;
    ctx.dereg_mr(&stale_mr).map_err(|e| err("dereg", e))?;
    let guard = zone_mr(&mut ctx, pd, Zone::Guard, all)?;
    let noacc = zone_mr(&mut ctx, pd, Zone::NoAcc, plan.noacc_access[side.idx()])?;
    let ro = zone_mr(&mut ctx, pd, Zone::RoLocal, access::REMOTE_READ)?;
    let other_pd = zone_mr(&mut ctx, pd2, Zone::OtherPd, all)?;
    let mut inv = Vec::new();
    for k in 0..plan.n_inv[side.idx()] {
        inv.push(zone_mr(&mut ctx, pd, Zone::Inv(k as u16), all)?);
    }
    debug_assert_ne!(mr_index(stale_mr.lkey), 1000);
    let scq = ctx.create_cq(s.cq_depth).map_err(|e| err("send CQ", e))?;
    let rcq = ctx.create_cq(s.cq_depth).map_err(|e| err("recv CQ", e))?;
    let mut qps = Vec::new();
    for _ in 0..plan.nqp.min(MAX_QPS) {
        let qp = ctx
            .create_qp(
                pd,
                &QpInitAttr {
                    send_cq: scq,
                    recv_cq: rcq,
                    cap: QpCap {
                        max_send_wr: s.sq_depth,
                        max_recv_wr: s.rq_depth,
                        max_send_sge: 1,
                        max_recv_sge: 1,
                        max_inline_data: MAX_INLINE,
                    },
                },
            )
            .map_err(|e| err("QP", e))?;
        qps.push(qp);
    }
    Ok(End {
        ctx,
        node,
        pd,
        pd2,
        buf,
        keys: Keys {
            main,
            guard,
            noacc,
            ro,
            other_pd,
            stale: stale_mr.lkey,
            inv,
        },
        scq,
        rcq,
        qps,
        mac,
        ip,
    })
}
