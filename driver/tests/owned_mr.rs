//! Application-owned memory registered in place (`Context::reg_mr_owned`) and the
//! wall-clock bounded wait (`Context::wait_cq_for`), on two model NICs.

use std::time::{Duration, Instant};

use rocenic_driver::backend::model::{two_node_world, PairConfig};
use rocenic_driver::verbs::{
    access, qp_attr, send_flags, AhAttr, Context, Cq, Mtu, Pd, Qp, QpAttr, QpCap, QpInitAttr,
    QpState, RecvWr, SendWr, WcOpcode, WcStatus, WrOpcode,
};
use rocenic_driver::{Error, RdmaWr};

const MAC: [[u8; 6]; 2] = [[2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]];
const IP: [[u8; 4]; 2] = [[10, 0, 0, 1], [10, 0, 0, 2]];
const TIMEOUT: Duration = Duration::from_secs(10);
const ALL: u32 =
    access::LOCAL_WRITE | access::REMOTE_WRITE | access::REMOTE_READ | access::REMOTE_ATOMIC;

struct Side {
    ctx: Context,
    pd: Pd,
    cq: Cq,
    qp: Qp,
}

fn pair() -> (Side, Side) {
    let p = two_node_world(&PairConfig::default(), None).unwrap();
    let mut sides = [Box::new(p.a), Box::new(p.b)].map(|be| {
        let mut ctx = Context::open(be).unwrap();
        let pd = ctx.alloc_pd().unwrap();
        let cq = ctx.create_cq(16).unwrap();
        let cap = QpCap {
            max_send_wr: 16,
            max_recv_wr: 16,
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline_data: 0,
        };
        let init = QpInitAttr {
            send_cq: cq,
            recv_cq: cq,
            cap,
        };
        let qp = ctx.create_qp(pd, &init).unwrap();
        Some(Side { ctx, pd, cq, qp })
    });
    let mut a = sides[0].take().unwrap();
    let mut b = sides[1].take().unwrap();
    let (qa, qb) = (a.qp.qp_num, b.qp.qp_num);
    connect(&mut a, 0, qb);
    connect(&mut b, 1, qa);
    (a, b)
}

fn connect(s: &mut Side, me: usize, peer_qpn: u32) {
    let peer = 1 - me;
    s.ctx.set_port(MAC[me], IP[me]);
    let init = QpAttr {
        qp_state: QpState::Init,
        qp_access_flags: ALL,
        ..QpAttr::default()
    };
    let m = qp_attr::STATE | qp_attr::ACCESS_FLAGS;
    s.ctx.modify_qp(s.qp, &init, m).unwrap();
    let rtr = QpAttr {
        qp_state: QpState::Rtr,
        path_mtu: Mtu::Mtu1024,
        dest_qp_num: peer_qpn,
        rq_psn: 100 + peer as u32,
        ah_attr: AhAttr {
            dmac: MAC[peer],
            dip: IP[peer],
            udp_sport: 0xc000,
        },
        max_dest_rd_atomic: 4,
        min_rnr_timer: 1,
        ..init
    };
    s.ctx.modify_qp(s.qp, &rtr, qp_attr::REQ_RTR).unwrap();
    let rts = QpAttr {
        qp_state: QpState::Rts,
        sq_psn: 100 + me as u32,
        timeout: 14,
        retry_cnt: 7,
        rnr_retry: 7,
        max_rd_atomic: 4,
        ..rtr
    };
    s.ctx.modify_qp(s.qp, &rts, qp_attr::REQ_RTS).unwrap();
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31) ^ seed)
        .collect()
}

#[test]
fn write_read_send_into_and_out_of_application_memory() {
    let (mut a, mut b) = pair();
    let n = 3000;
    // A: source bytes at 0..n, READ lands at 4096..4096+n. The region starts 5 bytes in,
    // so it is not page aligned.
    let mut mem_a = vec![0u8; 8192];
    mem_a[5..5 + n].copy_from_slice(&pattern(n, 0x11));
    let heap_a = mem_a.as_ptr();
    let mr_a = a.ctx.reg_mr_owned_range(a.pd, mem_a, 5, 8000, ALL).unwrap();
    assert_eq!(
        (mr_a.offset(), mr_a.addr % 4096),
        (5, mr_a.buf().addr % 4096 + 5)
    );
    // B: WRITE target at 0..n, SEND target at 4096.., READ source at 6000..
    let mut mem_b = vec![0u8; 10000];
    mem_b[6000..6000 + n].copy_from_slice(&pattern(n, 0x22));
    let mr_b = b.ctx.reg_mr_owned(b.pd, mem_b, ALL).unwrap();

    let rdma = |off: u64| RdmaWr {
        remote_addr: mr_b.addr + off,
        rkey: mr_b.rkey,
    };
    let wr = |wr_id, opcode, sge, rdma| SendWr {
        wr_id,
        opcode,
        send_flags: send_flags::SIGNALED,
        sg_list: vec![sge],
        rdma,
        ..SendWr::default()
    };
    b.ctx
        .post_recv(
            b.qp,
            &[RecvWr {
                wr_id: 9,
                sg_list: vec![mr_b.sge(4096, n as u32)],
            }],
        )
        .unwrap();
    let wrs = [
        wr(1, WrOpcode::RdmaWrite, mr_a.sge(0, n as u32), rdma(0)),
        wr(2, WrOpcode::RdmaRead, mr_a.sge(4091, n as u32), rdma(6000)),
        wr(3, WrOpcode::Send, mr_a.sge(0, n as u32), RdmaWr::default()),
    ];
    a.ctx.post_send(a.qp, &wrs).unwrap();
    let wcs = a.ctx.wait_cq_for(a.cq, 3, TIMEOUT).unwrap();
    let got: Vec<_> = wcs.iter().map(|w| (w.wr_id, w.status, w.opcode)).collect();
    assert_eq!(
        got,
        [
            (1, WcStatus::Success, WcOpcode::RdmaWrite),
            (2, WcStatus::Success, WcOpcode::RdmaRead),
            (3, WcStatus::Success, WcOpcode::Send),
        ]
    );
    let wc = b.ctx.wait_cq_for(b.cq, 1, TIMEOUT).unwrap()[0];
    assert_eq!(
        (wc.wr_id, wc.status, wc.byte_len),
        (9, WcStatus::Success, n as u32)
    );

    // While registered, the CPU sees what the device wrote through the buffer.
    let mut peek = vec![0; n];
    b.ctx.read(&mr_b.buf(), 0, &mut peek).unwrap();
    assert_eq!(peek, pattern(n, 0x11));

    let back_a = a.ctx.dereg_mr_owned(mr_a).unwrap();
    let back_b = b.ctx.dereg_mr_owned(mr_b).unwrap();
    assert_eq!(
        back_a.as_ptr(),
        heap_a,
        "the application's own vector comes back"
    );
    assert_eq!(back_a.len(), 8192);
    assert_eq!(back_a[5..5 + n], pattern(n, 0x11)[..]);
    assert_eq!(
        back_a[4096..4096 + n],
        pattern(n, 0x22)[..],
        "READ landed in place"
    );
    assert_eq!(back_b[..n], pattern(n, 0x11)[..], "WRITE landed in place");
    assert_eq!(
        back_b[4096..4096 + n],
        pattern(n, 0x11)[..],
        "SEND landed in place"
    );
    assert!(
        back_b[n..4096].iter().all(|&x| x == 0),
        "nothing written past the WRITE"
    );
    a.ctx.close().unwrap();
    b.ctx.close().unwrap();
}

#[test]
fn bad_arguments_are_refused_and_the_memory_comes_back() {
    let (mut a, _b) = pair();
    let mem = vec![7u8; 100];
    let heap = mem.as_ptr();
    let r = a.ctx.reg_mr_owned_range(a.pd, mem, 0, 0, ALL).unwrap_err();
    assert!(matches!(r.error, Error::InvalidArgument(_)), "{}", r.error);
    let r = a
        .ctx
        .reg_mr_owned_range(a.pd, r.value, 50, 51, ALL)
        .unwrap_err();
    assert!(r.error.to_string().contains("does not fit"), "{}", r.error);
    let r = a
        .ctx
        .reg_mr_owned(a.pd, r.value, access::REMOTE_WRITE)
        .unwrap_err();
    assert!(r.error.to_string().contains("LOCAL_WRITE"), "{}", r.error);
    let r = a
        .ctx
        .reg_mr_owned(Pd { pdn: 99 }, r.value, ALL)
        .unwrap_err();
    assert!(
        matches!(r.error, Error::UnknownHandle { .. }),
        "{}",
        r.error
    );
    assert_eq!((r.value.as_ptr(), &r.value[..]), (heap, &[7u8; 100][..]));
    let mem = r.value;
    let r = a.ctx.reg_mr_owned(a.pd, Vec::new(), ALL).unwrap_err();
    assert!(matches!(r.error, Error::InvalidArgument(_)));

    // A second MR over the same memory (its own key) holds it until it is deregistered.
    let mr = a.ctx.reg_mr_owned(a.pd, mem, ALL).unwrap();
    let other = a.ctx.reg_mr(a.pd, &mr.buf(), access::LOCAL_WRITE).unwrap();
    assert_ne!(other.lkey, mr.lkey);
    let r = a.ctx.dereg_mr_owned(mr).unwrap_err();
    assert!(matches!(r.error, Error::InUse { .. }), "{}", r.error);
    assert!(a.ctx.take_buf(&r.value.buf()).is_err());
    a.ctx.dereg_mr(&other).unwrap();
    let buf = r.value.buf();
    let back = a.ctx.dereg_mr_owned(r.value).unwrap();
    assert_eq!(back, vec![7u8; 100]);
    // Gone: the buffer handle is stale, and driver memory is not "given back".
    assert!(matches!(
        a.ctx.take_buf(&buf),
        Err(Error::UnknownHandle { .. })
    ));
    let driver_buf = a.ctx.alloc_buf(64).unwrap();
    assert!(matches!(
        a.ctx.take_buf(&driver_buf),
        Err(Error::DmaFree { .. })
    ));
    // adopt_buf / take_buf round trip, CPU writes visible in the vector given back.
    let buf = a.ctx.adopt_buf(vec![0u8; 10]).unwrap();
    a.ctx.write(&buf, 3, b"abc").unwrap();
    assert_eq!(a.ctx.take_buf(&buf).unwrap(), b"\0\0\0abc\0\0\0\0");
}

#[test]
fn wall_clock_wait_returns_completions_or_times_out_quickly() {
    let (mut a, mut b) = pair();
    let mr_b = b.ctx.reg_mr_owned(b.pd, vec![0; 64], ALL).unwrap();
    // Nothing posted: the wait ends after the timeout, with nothing.
    let t = Instant::now();
    let e = a
        .ctx
        .wait_cq_for(a.cq, 1, Duration::from_millis(50))
        .unwrap_err();
    let took = t.elapsed();
    match e {
        Error::CqWaitTimeout {
            wanted,
            waited,
            got,
            ..
        } => {
            assert_eq!((wanted, got.len()), (1, 0));
            assert!(waited >= Duration::from_millis(50));
        }
        e => panic!("expected CqWaitTimeout, got {e}"),
    }
    assert!(took < Duration::from_millis(500), "took {took:?}");
    // One WRITE posted, two asked for: the one that arrived comes back in the error.
    let mr_a = a.ctx.reg_mr_owned(a.pd, vec![0x5a; 64], ALL).unwrap();
    let wr = SendWr {
        wr_id: 7,
        opcode: WrOpcode::RdmaWrite,
        send_flags: send_flags::SIGNALED,
        sg_list: vec![mr_a.sge(0, 64)],
        rdma: RdmaWr {
            remote_addr: mr_b.addr,
            rkey: mr_b.rkey,
        },
        ..SendWr::default()
    };
    a.ctx.post_send(a.qp, std::slice::from_ref(&wr)).unwrap();
    let e = a
        .ctx
        .wait_cq_for(a.cq, 2, Duration::from_millis(50))
        .unwrap_err();
    let Error::CqWaitTimeout { got, .. } = e else {
        panic!("expected CqWaitTimeout, got {e}");
    };
    assert_eq!(
        (got.len(), got[0].wr_id, got[0].status),
        (1, 7, WcStatus::Success)
    );
    a.ctx.post_send(a.qp, &[wr]).unwrap();
    let wcs = a.ctx.wait_cq_for(a.cq, 1, TIMEOUT).unwrap();
    assert_eq!((wcs[0].wr_id, wcs[0].status), (7, WcStatus::Success));
    assert_eq!(b.ctx.dereg_mr_owned(mr_b).unwrap(), vec![0x5a; 64]);
}
