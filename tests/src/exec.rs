//! The executor: posts a plan's work requests through the driver (respecting SQ and RQ
//! capacity, batching several WQEs per doorbell), polls every CQ with a cycle budget so that
//! nothing waits forever, lets the world settle to catch late or duplicate completions, and
//! collects everything a check needs.

use std::collections::BTreeMap;

use rocenic_driver::{send_flags, AtomicWr, Counter, QpState, RdmaWr, RecvWr, SendWr, Sge, Wc};
use rocenic_sim::{DmaFaultRecord, LinkStats};

use crate::case::Side;
use crate::pair::Pair;
use crate::plan::{Addr, Plan, SEND_WR_ID};
use crate::reference::Expected;
use crate::wire::Corrupted;

/// How long a run may take, in cycles, before it is declared stuck.
pub const RUN_BUDGET: u64 = 100_000_000;
/// Smallest and largest pause between two polls.
const QUANTUM_MIN: u64 = 32;
const QUANTUM_MAX: u64 = 16_384;
/// An address no MR and no IOMMU mapping covers.
pub const UNMAPPED_VA: u64 = 0x8;

/// What a run produced.
#[derive(Debug, Default)]
pub struct Run {
    /// Send-queue completions per (side, QP), in arrival order.
    pub send: BTreeMap<(Side, usize), Vec<Wc>>,
    /// Receive-queue completions per (side, QP), in arrival order.
    pub recv: BTreeMap<(Side, usize), Vec<Wc>>,
    /// Completions naming a QP the harness does not know.
    pub stray: Vec<(Side, Wc)>,
    pub mem: [Vec<u8>; 2],
    /// Global device counters, indexed by `Counter`.
    pub counters: [[u64; Counter::COUNT]; 2],
    /// Every QP's counters (QUERY_QP_COUNTERS) per (side, QP), read after the global ones.
    pub qp_counters: BTreeMap<(Side, usize), [u64; Counter::COUNT]>,
    /// Frames each link's log held (A->B, B->A) just before and just after the QP
    /// counters were read: the frames a QP counted are those of a log prefix in between.
    pub qp_counters_window: [(usize, usize); 2],
    /// DMA accesses each host's IOMMU refused.
    pub dma_faults: [Vec<DmaFaultRecord>; 2],
    /// Link A->B and B->A.
    pub links: [LinkStats; 2],
    /// Frames each link corrupted and delivered.
    pub corrupted: [Vec<Corrupted>; 2],
    pub acks_dropped: [u64; 2],
    pub qp_state: BTreeMap<(Side, usize), QpState>,
    /// Cycles from the first post to the last expected completion.
    pub cycles: u64,
    /// Why the run stopped early, if it did.
    pub stuck: Option<String>,
    /// Frames still in flight or queued after the settle period.
    pub undelivered: usize,
    /// Device DMAs into each side's data buffer: (cycle, buffer offset, length, write).
    pub buffer_dma: [Vec<(u64, usize, usize, bool)>; 2],
}

/// Options of one execution.
#[derive(Clone, Copy, Debug)]
pub struct ExecOpts {
    /// Receives wait this many cycles after the first post.
    pub recv_delay: u64,
    /// WRs per post_send call.
    pub batch: usize,
    /// Cycles to let pass after the last expected completion.
    pub settle: u64,
    /// Cycles without reaching the expected completions after which the run is stuck.
    pub budget: u64,
}

impl ExecOpts {
    /// The options of `case` (its receive delay and batching), with the given settle time
    /// and budget.
    pub fn for_case(case: &crate::case::Case, settle: u64, budget: u64) -> Self {
        ExecOpts {
            recv_delay: case.recv_delay as u64,
            batch: case.batch as usize,
            settle,
            budget,
        }
    }
}

struct SendStream {
    side: Side,
    qp: usize,
    ops: Vec<usize>,
    posted: usize,
    retired: usize,
    cap: usize,
}

struct RecvStream {
    side: Side,
    qp: usize,
    recvs: Vec<usize>,
    posted: usize,
    retired: usize,
    cap: usize,
}

fn addr_of(pair: &Pair, side: Side, a: Addr) -> u64 {
    match a {
        Addr::Buf(o) => pair.ends[side.idx()].buf.addr.wrapping_add_signed(o),
        Addr::Unmapped => UNMAPPED_VA,
    }
}

fn send_wr(pair: &Pair, plan: &Plan, i: usize) -> SendWr {
    let op = &plan.ops[i];
    let me = &pair.ends[op.side.idx()];
    let peer = &pair.ends[op.side.peer().idx()];
    let mut flags = 0;
    if op.signaled {
        flags |= send_flags::SIGNALED;
    }
    if op.inline {
        flags |= send_flags::INLINE;
    }
    if op.fence {
        flags |= send_flags::FENCE;
    }
    let sg_list = op
        .local
        .map(|l| Sge {
            addr: addr_of(pair, op.side, l.addr),
            length: l.len,
            lkey: me.keys.key(l.key),
        })
        .into_iter()
        .collect();
    let (remote_addr, rkey) = op.remote.map_or((0, 0), |r| {
        (addr_of(pair, op.side.peer(), r.addr), peer.keys.key(r.key))
    });
    SendWr {
        wr_id: op.wr_id(),
        opcode: op.kind.wr_opcode(),
        send_flags: flags,
        sg_list,
        imm_data: op.imm.unwrap_or(0),
        invalidate_rkey: op.inv.map_or(0, |k| peer.keys.inv[k].rkey),
        rdma: RdmaWr { remote_addr, rkey },
        atomic: AtomicWr {
            remote_addr,
            compare_add: op.compare_add,
            swap: op.swap,
            rkey,
        },
    }
}

fn recv_wr(pair: &Pair, plan: &Plan, i: usize) -> RecvWr {
    let r = &plan.recvs[i];
    let e = &pair.ends[r.side.idx()];
    RecvWr {
        wr_id: r.wr_id(),
        sg_list: if r.len > 0 {
            vec![Sge {
                addr: e.buf.addr + r.off as u64,
                length: r.len,
                lkey: e.keys.main.lkey,
            }]
        } else {
            Vec::new()
        },
    }
}

/// Runs a plan on a pair and collects the results. Expected completion counts (from the
/// reference) tell it when to stop waiting.
pub fn execute(pair: &mut Pair, plan: &Plan, exp: &Expected, opts: &ExecOpts) -> Run {
    let mut run = Run::default();
    let mut sends: Vec<SendStream> = Vec::new();
    for op in &plan.ops {
        let cap = pair.ends[op.side.idx()].qps[op.qp].cap.max_send_wr as usize;
        match sends
            .iter_mut()
            .find(|s| s.side == op.side && s.qp == op.qp)
        {
            Some(s) => s.ops.push(op.idx),
            None => sends.push(SendStream {
                side: op.side,
                qp: op.qp,
                ops: vec![op.idx],
                posted: 0,
                retired: 0,
                cap,
            }),
        }
    }
    let mut recvs: Vec<RecvStream> = Vec::new();
    let mut ordered: Vec<&crate::plan::PRecv> = plan.recvs.iter().filter(|r| r.posted).collect();
    ordered.sort_by_key(|r| (r.side, r.qp, r.rq_index));
    for r in ordered {
        let cap = pair.ends[r.side.idx()].qps[r.qp].cap.max_recv_wr as usize;
        match recvs.iter_mut().find(|s| s.side == r.side && s.qp == r.qp) {
            Some(s) => s.recvs.push(r.idx),
            None => recvs.push(RecvStream {
                side: r.side,
                qp: r.qp,
                recvs: vec![r.idx],
                posted: 0,
                retired: 0,
                cap,
            }),
        }
    }
    let want_send: BTreeMap<(Side, usize), usize> =
        exp.send.iter().map(|(k, v)| (*k, v.len())).collect();
    let want_recv: BTreeMap<(Side, usize), usize> =
        exp.recv.iter().map(|(k, v)| (*k, v.len())).collect();

    let start = pair.ends[0].ctx.now();
    let mut post_errors: Vec<String> = Vec::new();
    let mut quantum = QUANTUM_MIN;
    let batch = opts.batch.max(1);
    loop {
        let now = pair.ends[0].ctx.now();
        // Receives (all before any send when there is no delay).
        if now - start >= opts.recv_delay {
            for s in recvs.iter_mut() {
                while s.posted < s.recvs.len() && s.posted - s.retired < s.cap {
                    let n = (s.recvs.len() - s.posted).min(s.cap - (s.posted - s.retired));
                    let wrs: Vec<RecvWr> = s.recvs[s.posted..s.posted + n]
                        .iter()
                        .map(|&i| recv_wr(pair, plan, i))
                        .collect();
                    let e = &mut pair.ends[s.side.idx()];
                    let qp = e.qps[s.qp];
                    match e.ctx.post_recv(qp, &wrs) {
                        Ok(()) => s.posted += n,
                        Err(pe) => {
                            s.posted += pe.index_of_first_bad_wr;
                            post_errors.push(format!("post_recv {:?} qp{}: {pe}", s.side, s.qp));
                            s.recvs.truncate(s.posted);
                        }
                    }
                }
            }
        }
        for s in sends.iter_mut() {
            while s.posted < s.ops.len() && s.posted - s.retired < s.cap {
                let n = (s.ops.len() - s.posted)
                    .min(s.cap - (s.posted - s.retired))
                    .min(batch);
                let wrs: Vec<SendWr> = s.ops[s.posted..s.posted + n]
                    .iter()
                    .map(|&i| send_wr(pair, plan, i))
                    .collect();
                let e = &mut pair.ends[s.side.idx()];
                let qp = e.qps[s.qp];
                match e.ctx.post_send(qp, &wrs) {
                    Ok(()) => s.posted += n,
                    Err(pe) => {
                        s.posted += pe.index_of_first_bad_wr;
                        post_errors.push(format!("post_send {:?} qp{}: {pe}", s.side, s.qp));
                        s.ops.truncate(s.posted);
                    }
                }
            }
        }
        // Poll.
        let got = poll_all(pair, plan, &mut run, &mut sends, &mut recvs);
        let done = want_send
            .iter()
            .all(|(k, &n)| run.send.get(k).map_or(0, |v| v.len()) >= n)
            && want_recv
                .iter()
                .all(|(k, &n)| run.recv.get(k).map_or(0, |v| v.len()) >= n)
            && sends.iter().all(|s| s.posted == s.ops.len())
            && recvs.iter().all(|s| s.posted == s.recvs.len());
        let now = pair.ends[0].ctx.now();
        if done {
            run.cycles = now - start;
            break;
        }
        // A completion the reference does not expect at its position: the case has failed;
        // stop waiting for completions that may never come.
        let diverged = run.send.iter().any(|(k, v)| diverges(exp.send.get(k), v))
            || run.recv.iter().any(|(k, v)| diverges(exp.recv.get(k), v));
        if diverged {
            run.cycles = now - start;
            run.stuck = Some("a completion differs from the expected one (below)".into());
            break;
        }
        if now - start >= opts.budget {
            run.cycles = now - start;
            run.stuck = Some(format!(
                "no progress to the expected completions after {} cycles",
                now - start
            ));
            break;
        }
        if got == 0 {
            pair.ends[0].ctx.wait(quantum);
            quantum = (quantum * 2).min(QUANTUM_MAX);
        } else {
            quantum = QUANTUM_MIN;
        }
    }
    if !post_errors.is_empty() {
        let msg = post_errors.join("; ");
        run.stuck = Some(match run.stuck.take() {
            Some(s) => format!("{s}; {msg}"),
            None => msg,
        });
    }

    // Settle: late or duplicate completions would show up now.
    pair.ends[0].ctx.wait(opts.settle);
    poll_all(pair, plan, &mut run, &mut sends, &mut recvs);
    {
        let mut w = pair.world.borrow_mut();
        let (a, b) = (pair.ends[0].node, pair.ends[1].node);
        let _ = w.run_until(
            |w| {
                w.link(a).is_some_and(|l| l.in_flight() == 0)
                    && w.link(b).is_some_and(|l| l.in_flight() == 0)
                    && w.rx_queue(a).is_empty()
                    && w.rx_queue(b).is_empty()
            },
            10_000_000,
        );
        run.undelivered = [a, b]
            .iter()
            .map(|&n| w.link(n).map_or(0, |l| l.in_flight()) + w.rx_queue(n).len())
            .sum();
        for (i, n) in [a, b].into_iter().enumerate() {
            let host = w.host(n);
            run.dma_faults[i] = host.faults().to_vec();
            run.links[i] = w.link_stats(n).unwrap_or_default();
            // The data buffer's IOVA range, from its IOMMU mapping.
            let buf = pair.ends[i].buf;
            let alloc = host.memory().alloc_at(buf.addr);
            let map = host
                .iommu()
                .mappings()
                .find(|m| Some(m.alloc) == alloc && m.offset == 0);
            if let Some(m) = map {
                let (lo, hi) = (m.iova, m.iova + buf.len as u64);
                run.buffer_dma[i] = host
                    .dma_log()
                    .iter()
                    .filter(|e| e.iova < hi && e.iova + e.len as u64 > lo)
                    .map(|e| (e.cycle, (e.iova - lo.min(e.iova)) as usize, e.len, e.write))
                    .collect();
            }
        }
    }
    poll_all(pair, plan, &mut run, &mut sends, &mut recvs);

    for side in Side::BOTH {
        let e = &mut pair.ends[side.idx()];
        let mut mem = vec![0u8; e.buf.len];
        let buf = e.buf;
        if let Err(x) = e.ctx.read(&buf, 0, &mut mem) {
            run.stuck = Some(format!("reading memory of {side:?}: {x}"));
        }
        run.mem[side.idx()] = mem;
        run.counters[side.idx()] = e.ctx.counters();
        for q in 0..plan.nqp {
            let qp = e.qps[q];
            if let Ok(a) = e.ctx.query_qp(qp) {
                run.qp_state.insert((side, q), a.qp_state);
            }
        }
    }
    let logged = |pair: &Pair, dir: usize| pair.logs[dir].borrow().frames.len();
    for dir in 0..2 {
        run.qp_counters_window[dir].0 = logged(pair, dir);
    }
    for side in Side::BOTH {
        let e = &mut pair.ends[side.idx()];
        for q in 0..plan.nqp {
            let qp = e.qps[q];
            // A refused query leaves the entry out (the differential reports it).
            if let Ok(c) = e.ctx.query_qp_counters(qp) {
                run.qp_counters.insert((side, q), c);
            }
        }
    }
    for dir in 0..2 {
        run.qp_counters_window[dir].1 = logged(pair, dir);
    }
    for dir in 0..2 {
        let log = pair.logs[dir].borrow();
        run.corrupted[dir] = log.corrupted.clone();
        run.acks_dropped[dir] = log.acks_dropped;
    }
    run
}

fn diverges(exp: Option<&Vec<crate::reference::ExpWc>>, got: &[Wc]) -> bool {
    let exp = exp.map_or(&[][..], |v| &v[..]);
    got.len() > exp.len()
        || got
            .iter()
            .zip(exp)
            .any(|(g, e)| g.status != e.status || g.wr_id != e.wr_id)
}

/// Polls all four CQs once; returns how many completions arrived.
fn poll_all(
    pair: &mut Pair,
    plan: &Plan,
    run: &mut Run,
    sends: &mut [SendStream],
    recvs: &mut [RecvStream],
) -> usize {
    let mut total = 0;
    let mut wcs = [Wc::default(); 32];
    for side in Side::BOTH {
        for recv_cq in [false, true] {
            loop {
                let e = &mut pair.ends[side.idx()];
                let cq = if recv_cq { e.rcq } else { e.scq };
                let n = match e.ctx.poll_cq(cq, &mut wcs) {
                    Ok(n) => n,
                    Err(x) => {
                        run.stuck = Some(format!("poll_cq {side:?}: {x}"));
                        0
                    }
                };
                total += n;
                for wc in &wcs[..n] {
                    let qp = e.qps.iter().position(|q| q.qp_num == wc.qp_num);
                    let Some(qp) = qp else {
                        run.stray.push((side, *wc));
                        continue;
                    };
                    if recv_cq {
                        run.recv.entry((side, qp)).or_default().push(*wc);
                        if let Some(s) = recvs.iter_mut().find(|s| s.side == side && s.qp == qp) {
                            s.retired += 1;
                        }
                    } else {
                        run.send.entry((side, qp)).or_default().push(*wc);
                        if wc.wr_id & !0xffff_ffff == SEND_WR_ID {
                            let idx = (wc.wr_id & 0xffff_ffff) as usize;
                            if let (Some(op), Some(s)) = (
                                plan.ops.get(idx),
                                sends.iter_mut().find(|s| s.side == side && s.qp == qp),
                            ) {
                                s.retired = s.retired.max(op.sq_index + 1);
                            }
                        }
                    }
                }
                if n < wcs.len() {
                    break;
                }
            }
        }
    }
    total
}

/// Posts every receive of the plan that the host posts (for a pair that will only be fed
/// injected frames).
pub fn post_recvs(pair: &mut Pair, plan: &Plan) -> Result<(), String> {
    let mut ordered: Vec<&crate::plan::PRecv> = plan.recvs.iter().filter(|r| r.posted).collect();
    ordered.sort_by_key(|r| (r.side, r.qp, r.rq_index));
    for r in ordered {
        let wr = recv_wr(pair, plan, r.idx);
        let e = &mut pair.ends[r.side.idx()];
        let qp = e.qps[r.qp];
        e.ctx
            .post_recv(qp, &[wr])
            .map_err(|x| format!("post_recv: {x}"))?;
    }
    Ok(())
}
