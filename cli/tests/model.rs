//! The driver against the behavioural model, through the public API only.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use rocenic_cli::demo::{run_demo, DemoArgs};
use rocenic_cli::perf::{run_perf, PerfArgs, PerfOp};
use rocenic_cli::setup::{connect, ConnInfo, ConnParams};
use rocenic_driver::backend::model::{two_node_world, ModelBackend, PairConfig};
use rocenic_driver::{
    access, qp_attr, send_flags, Backend, Buffer, Context, Counter, Cq, DmaRegion, Error, Mr, Mtu,
    Pd, Qp, QpAttr, QpCap, QpInitAttr, QpState, RdmaWr, RecvWr, SendWr, WcOpcode, WcStatus,
    WrOpcode,
};
use rocenic_proto::abi::cmd::CmdStatus;
use rocenic_proto::abi::regs;

const T: u64 = 10_000_000;

/// A backend that counts BAR writes per register and passes everything on.
struct Counting {
    inner: ModelBackend,
    writes: Rc<RefCell<BTreeMap<u32, Vec<u32>>>>,
}

impl Backend for Counting {
    fn bar_read(&mut self, off: u32) -> u32 {
        self.inner.bar_read(off)
    }
    fn bar_write(&mut self, off: u32, v: u32) {
        self.writes.borrow_mut().entry(off).or_default().push(v);
        self.inner.bar_write(off, v)
    }
    fn alloc_dma(&mut self, len: usize) -> rocenic_driver::Result<DmaRegion> {
        self.inner.alloc_dma(len)
    }
    fn free_dma(&mut self, id: u64) -> rocenic_driver::Result<()> {
        self.inner.free_dma(id)
    }
    fn mem_write(&mut self, va: u64, data: &[u8]) -> rocenic_driver::Result<()> {
        self.inner.mem_write(va, data)
    }
    fn mem_read(&mut self, va: u64, buf: &mut [u8]) -> rocenic_driver::Result<()> {
        self.inner.mem_read(va, buf)
    }
    fn wait(&mut self, cycles: u64) {
        self.inner.wait(cycles)
    }
    fn now(&self) -> u64 {
        self.inner.now()
    }
}

struct Side {
    ctx: Context,
    pd: Pd,
    scq: Cq,
    rcq: Cq,
    qp: Qp,
    buf: Buffer,
    mr: Mr,
}

struct Pair {
    a: Side,
    b: Side,
    writes: Rc<RefCell<BTreeMap<u32, Vec<u32>>>>,
}

/// Two connected QPs; A's backend counts BAR writes. `cqe` sizes every CQ.
fn pair(cqe: u32, depth: u32) -> Pair {
    let p = two_node_world(&PairConfig::default(), None).unwrap();
    let writes = Rc::new(RefCell::new(BTreeMap::new()));
    let a_be = Counting {
        inner: p.a,
        writes: writes.clone(),
    };
    let mut sides = Vec::new();
    for (be, last) in [
        (Box::new(a_be) as Box<dyn Backend>, 1u8),
        (Box::new(p.b), 2),
    ] {
        let mut ctx = Context::open(be).unwrap();
        ctx.set_port([2, 0, 0, 0, 0, last], [10, 0, 0, last]);
        let pd = ctx.alloc_pd().unwrap();
        let scq = ctx.create_cq(cqe).unwrap();
        let rcq = ctx.create_cq(cqe).unwrap();
        let qp = ctx
            .create_qp(
                pd,
                &QpInitAttr {
                    send_cq: scq,
                    recv_cq: rcq,
                    cap: QpCap {
                        max_send_wr: depth,
                        max_recv_wr: depth,
                        max_send_sge: 1,
                        max_recv_sge: 1,
                        max_inline_data: 32,
                    },
                },
            )
            .unwrap();
        let buf = ctx.alloc_buf(1 << 16).unwrap();
        let mr = ctx
            .reg_mr(
                pd,
                &buf,
                access::LOCAL_WRITE
                    | access::REMOTE_WRITE
                    | access::REMOTE_READ
                    | access::REMOTE_ATOMIC,
            )
            .unwrap();
        sides.push(Side {
            ctx,
            pd,
            scq,
            rcq,
            qp,
            buf,
            mr,
        });
    }
    let mut b = sides.pop().unwrap();
    let mut a = sides.pop().unwrap();
    let info = |s: &Side, last: u8, psn| ConnInfo {
        qpn: s.qp.qp_num,
        psn,
        mac: [2, 0, 0, 0, 0, last],
        ip: [10, 0, 0, last],
    };
    let (ia, ib) = (info(&a, 1, 0xff_fff0), info(&b, 2, 100));
    let params = ConnParams::new(Mtu::Mtu1024);
    connect(&mut a.ctx, a.qp, &ia, &ib, &params).unwrap();
    connect(&mut b.ctx, b.qp, &ib, &ia, &params).unwrap();
    Pair { a, b, writes }
}

fn write_wr(p: &Pair, wr_id: u64, off: u64, len: u32) -> SendWr {
    SendWr {
        wr_id,
        opcode: WrOpcode::RdmaWrite,
        send_flags: send_flags::SIGNALED,
        sg_list: vec![p.a.mr.sge(off, len)],
        rdma: RdmaWr {
            remote_addr: p.b.mr.addr + off,
            rkey: p.b.mr.rkey,
        },
        ..SendWr::default()
    }
}

#[test]
fn one_doorbell_for_a_batch_and_one_per_poll() {
    let mut p = pair(64, 32);
    p.a.ctx.write(&p.a.buf, 0, &[0xab; 4096]).unwrap();
    let wrs: Vec<SendWr> = (0..16).map(|i| write_wr(&p, i, i * 256, 256)).collect();
    p.writes.borrow_mut().clear();
    p.a.ctx.post_send(p.a.qp, &wrs).unwrap();
    let db = regs::sq_doorbell(p.a.qp.qp_num);
    assert_eq!(p.writes.borrow().get(&db), Some(&vec![16]));
    assert_eq!(p.writes.borrow().len(), 1, "nothing but the doorbell");
    let wcs = p.a.ctx.wait_cq(p.a.scq, 16, T).unwrap();
    assert!(wcs.iter().all(|w| w.status == WcStatus::Success));
    let polls_with_entries = p.writes.borrow()[&regs::cq_doorbell(p.a.scq.cqn)].len();
    assert!((1..=16).contains(&polls_with_entries));
    let mut got = vec![0; 4096];
    p.b.ctx.read(&p.b.buf, 0, &mut got).unwrap();
    assert_eq!(got, vec![0xab; 4096]);
}

#[test]
fn cq_phase_over_many_laps_of_a_four_entry_cq() {
    let mut p = pair(4, 16);
    assert_eq!(p.a.scq.cqe, 4);
    let mut next = 0;
    for round in 0..9u64 {
        // 3 per round, then 10 at once (more than the CQ holds: the model must hold them).
        let n = if round == 8 { 10 } else { 3 };
        let wrs: Vec<SendWr> = (next..next + n).map(|i| write_wr(&p, i, 0, 64)).collect();
        p.a.ctx.post_send(p.a.qp, &wrs).unwrap();
        let wcs = p.a.ctx.wait_cq(p.a.scq, n as usize, T).unwrap();
        let ids: Vec<u64> = wcs.iter().map(|w| w.wr_id).collect();
        assert_eq!(ids, (next..next + n).collect::<Vec<_>>());
        assert!(wcs
            .iter()
            .all(|w| w.status == WcStatus::Success && w.opcode == WcOpcode::RdmaWrite));
        next += n;
    }
    let mut extra = [Default::default(); 4];
    p.a.ctx.wait(10_000);
    assert_eq!(p.a.ctx.poll_cq(p.a.scq, &mut extra).unwrap(), 0);
}

#[test]
fn sq_full_then_space_after_completions() {
    let mut p = pair(64, 4);
    let wrs: Vec<SendWr> = (0..5).map(|i| write_wr(&p, i, 0, 8)).collect();
    let e = p.a.ctx.post_send(p.a.qp, &wrs).unwrap_err();
    assert_eq!(e.index_of_first_bad_wr, 4);
    assert!(matches!(e.error, Error::SqFull { depth: 4, .. }));
    p.a.ctx.wait_cq(p.a.scq, 4, T).unwrap();
    p.a.ctx.post_send(p.a.qp, &wrs[4..]).unwrap();
    assert_eq!(p.a.ctx.wait_cq(p.a.scq, 1, T).unwrap()[0].wr_id, 4);
}

#[test]
fn device_refuses_bad_transition_with_typed_error() {
    let mut p = pair(4, 4);
    let qp =
        p.a.ctx
            .create_qp(
                p.a.pd,
                &QpInitAttr {
                    send_cq: p.a.scq,
                    recv_cq: p.a.rcq,
                    cap: QpCap {
                        max_send_wr: 1,
                        ..QpCap::default()
                    },
                },
            )
            .unwrap();
    let rts = QpAttr {
        qp_state: QpState::Rts,
        ..QpAttr::default()
    };
    let e = p.a.ctx.modify_qp(qp, &rts, qp_attr::STATE).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Cmd {
                status: CmdStatus::BadState | CmdStatus::BadParam,
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(p.a.ctx.query_qp(qp).unwrap().qp_state, QpState::Reset);
    let q = p.a.ctx.query_qp(p.a.qp).unwrap();
    assert_eq!(q.qp_state, QpState::Rts);
    assert_eq!(q.path_mtu, Mtu::Mtu1024);
    assert_eq!(q.dest_qp_num, p.b.qp.qp_num);
}

#[test]
fn invalidated_rkey_fails_remotely_and_flushes_the_rest() {
    let mut p = pair(16, 8);
    // B registers a page, A invalidates it with SEND_WITH_INV.
    let target =
        p.b.ctx
            .reg_mr_range(
                p.b.pd,
                &p.b.buf,
                4096,
                4096,
                access::LOCAL_WRITE | access::REMOTE_WRITE,
            )
            .unwrap();
    p.b.ctx
        .post_recv(
            p.b.qp,
            &[RecvWr {
                wr_id: 9,
                sg_list: vec![p.b.mr.sge(0, 64)],
            }],
        )
        .unwrap();
    let inv = SendWr {
        wr_id: 1,
        opcode: WrOpcode::SendWithInv,
        send_flags: send_flags::SIGNALED,
        invalidate_rkey: target.rkey,
        ..SendWr::default()
    };
    p.a.ctx.post_send(p.a.qp, &[inv]).unwrap();
    assert_eq!(
        p.a.ctx.wait_cq(p.a.scq, 1, T).unwrap()[0].status,
        WcStatus::Success
    );
    let r = p.b.ctx.wait_cq(p.b.rcq, 1, T).unwrap()[0];
    assert_eq!(r.invalidated_rkey, Some(target.rkey));
    assert_eq!(r.byte_len, 0);
    // A write through the invalidated rkey is refused by B; the next WR is flushed.
    let bad = SendWr {
        rdma: RdmaWr {
            remote_addr: target.addr,
            rkey: target.rkey,
        },
        ..write_wr(&p, 2, 0, 16)
    };
    let after = write_wr(&p, 3, 0, 16);
    p.a.ctx.post_send(p.a.qp, &[bad, after]).unwrap();
    let wcs = p.a.ctx.wait_cq(p.a.scq, 2, T).unwrap();
    assert_eq!((wcs[0].wr_id, wcs[0].status), (2, WcStatus::RemAccessErr));
    assert_eq!((wcs[1].wr_id, wcs[1].status), (3, WcStatus::WrFlushErr));
    assert_eq!(p.a.ctx.query_qp(p.a.qp).unwrap().qp_state, QpState::Err);
    let c = p.a.ctx.query_qp_counters(p.a.qp).unwrap();
    assert!(c[Counter::NaksReceived as usize] >= 1, "{c:?}");
    // Deregistering the invalidated MR still works; its key is then unknown to the driver.
    p.b.ctx.dereg_mr(&target).unwrap();
    assert!(matches!(
        p.b.ctx.dereg_mr(&target),
        Err(Error::UnknownHandle { .. })
    ));
}

#[test]
fn stale_rkey_after_reregistration_is_refused() {
    let mut p = pair(16, 8);
    let old = p.b.mr;
    p.b.ctx.dereg_mr(&old).unwrap();
    let new =
        p.b.ctx
            .reg_mr(p.b.pd, &p.b.buf, access::LOCAL_WRITE | access::REMOTE_WRITE)
            .unwrap();
    assert_ne!(new.rkey, old.rkey);
    assert_eq!(new.addr, old.addr);
    let good = SendWr {
        rdma: RdmaWr {
            remote_addr: new.addr,
            rkey: new.rkey,
        },
        ..write_wr(&p, 1, 0, 16)
    };
    let stale = write_wr(&p, 2, 0, 16);
    assert_eq!(stale.rdma.rkey, old.rkey);
    p.a.ctx.post_send(p.a.qp, &[good, stale]).unwrap();
    let wcs = p.a.ctx.wait_cq(p.a.scq, 2, T).unwrap();
    assert_eq!((wcs[0].wr_id, wcs[0].status), (1, WcStatus::Success));
    assert_eq!((wcs[1].wr_id, wcs[1].status), (2, WcStatus::RemAccessErr));
}

#[test]
fn reset_and_reconnect_reuses_the_rings() {
    let mut p = pair(16, 4);
    for i in 0..3 {
        p.a.ctx.post_send(p.a.qp, &[write_wr(&p, i, 0, 8)]).unwrap();
    }
    p.a.ctx.wait_cq(p.a.scq, 3, T).unwrap();
    let reset = QpAttr {
        qp_state: QpState::Reset,
        ..QpAttr::default()
    };
    p.a.ctx.modify_qp(p.a.qp, &reset, qp_attr::STATE).unwrap();
    p.b.ctx.modify_qp(p.b.qp, &reset, qp_attr::STATE).unwrap();
    let info = |s: &Side, last: u8| ConnInfo {
        qpn: s.qp.qp_num,
        psn: 7,
        mac: [2, 0, 0, 0, 0, last],
        ip: [10, 0, 0, last],
    };
    let (ia, ib) = (info(&p.a, 1), info(&p.b, 2));
    let params = ConnParams::new(Mtu::Mtu256);
    connect(&mut p.a.ctx, p.a.qp, &ia, &ib, &params).unwrap();
    connect(&mut p.b.ctx, p.b.qp, &ib, &ia, &params).unwrap();
    let wrs: Vec<SendWr> = (10..14).map(|i| write_wr(&p, i, 0, 1000)).collect();
    p.a.ctx.post_send(p.a.qp, &wrs).unwrap();
    let ids: Vec<u64> =
        p.a.ctx
            .wait_cq(p.a.scq, 4, T)
            .unwrap()
            .iter()
            .map(|w| w.wr_id)
            .collect();
    assert_eq!(ids, vec![10, 11, 12, 13]);
}

#[test]
fn teardown_releases_everything() {
    let p = pair(4, 4);
    let Pair { a, b, .. } = p;
    let Side {
        mut ctx,
        pd,
        scq,
        rcq,
        qp,
        buf,
        mr,
    } = a;
    assert!(matches!(ctx.dealloc_pd(pd), Err(Error::InUse { .. })));
    ctx.destroy_qp(qp).unwrap();
    ctx.destroy_cq(scq).unwrap();
    ctx.destroy_cq(rcq).unwrap();
    ctx.dereg_mr(&mr).unwrap();
    ctx.free_buf(&buf).unwrap();
    ctx.dealloc_pd(pd).unwrap();
    ctx.close().unwrap();
    b.ctx.close().unwrap();
}

#[test]
fn small_demo_passes_and_captures_frames() {
    let dir = std::env::temp_dir().join(format!("rocenic-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = dir.join("demo.pcap");
    let args = DemoArgs {
        pcap: Some(pcap.clone()),
        max_size: 8192,
        mtu: vec![256, 4096],
        ..DemoArgs::default()
    };
    let r = run_demo(&args).unwrap();
    assert!(r.failures.is_empty(), "{:#?}", r.failures);
    assert!(r
        .rows
        .iter()
        .all(|row| row.ok == row.count && row.count > 0));
    let frames = rocenic_sim::read_pcap_file(&pcap).unwrap();
    assert!(frames.len() > 100, "{} frames", frames.len());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn perf_runs_and_verifies_every_op() {
    for op in [PerfOp::Write, PerfOp::Read, PerfOp::Send, PerfOp::Atomic] {
        let args = PerfArgs {
            size: 3000,
            iters: 40,
            qps: 2,
            tx_depth: 8,
            mtu: 1024,
            ..PerfArgs::new(op)
        };
        let r = run_perf(&args).unwrap();
        assert!(r.verified, "{op:?}: {:?}", r.problems);
        assert_eq!(r.messages, 80);
        assert!(r.cycles > 0 && r.payload_bytes_per_cycle > 0.0);
        let json: serde_json::Value = serde_json::to_value(&r).unwrap();
        for key in [
            "backend",
            "op",
            "size",
            "iters",
            "qps",
            "mtu",
            "messages",
            "payload_bytes",
            "cycles",
            "retransmissions",
            "verified",
            "payload_bytes_per_cycle",
            "wire_efficiency",
            "messages_per_cycle",
            "gbps_at_250mhz",
            "latency_cycles",
        ] {
            assert!(json.get(key).is_some(), "{key} missing from {json}");
        }
        let eff = r.wire_efficiency.unwrap();
        assert!(eff > 0.0 && eff <= 1.0, "{op:?}: wire efficiency {eff}");
        let lat = r.latency_cycles.expect("the model world has a clock");
        // The model's timing is not the RTL's (it reads a WQE at once and waits only
        // for payload reads), but a message on an idle QP leaves within a few DMA
        // round trips.
        assert!(lat.doorbell_to_first_tx_beat < 5000, "{op:?}: {lat:?}");
        assert!(lat.last_rx_beat_to_cqe < 5000, "{op:?}: {lat:?}");
    }
}
