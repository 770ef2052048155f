//! Unit tests of the verbs layer against the fake device (`backend::fake`).

use std::cell::RefCell;
use std::rc::Rc;

use super::*;
use crate::backend::fake::{FakeBackend, FakeState};
use rocenic_proto::abi::cmd::CmdStatus;

struct Setup {
    ctx: Context,
    st: Rc<RefCell<FakeState>>,
    pd: Pd,
    cq: Cq,
    qp: Qp,
    mr: Mr,
}

fn open() -> (Context, Rc<RefCell<FakeState>>) {
    let (be, st) = FakeBackend::new();
    (Context::open(Box::new(be)).expect("open"), st)
}

/// A context with one QP in RTS, a CQ of `cqe` entries and a 4 KiB registered buffer.
fn setup(cqe: u32, send_wr: u32) -> Setup {
    let (mut ctx, st) = open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(cqe).unwrap();
    let qp = ctx
        .create_qp(
            pd,
            &QpInitAttr {
                send_cq: cq,
                recv_cq: cq,
                cap: QpCap {
                    max_send_wr: send_wr,
                    max_recv_wr: 4,
                    max_send_sge: 1,
                    max_recv_sge: 1,
                    max_inline_data: 16,
                },
            },
        )
        .unwrap();
    for s in [QpState::Init, QpState::Rtr, QpState::Rts] {
        let attr = QpAttr {
            qp_state: s,
            ..QpAttr::default()
        };
        ctx.modify_qp(qp, &attr, qp_attr::STATE).unwrap();
    }
    let buf = ctx.alloc_buf(4096).unwrap();
    let mr = ctx.reg_mr(pd, &buf, access::LOCAL_WRITE).unwrap();
    Setup {
        ctx,
        st,
        pd,
        cq,
        qp,
        mr,
    }
}

fn send(wr_id: u64, mr: &Mr, len: u32) -> SendWr {
    SendWr {
        wr_id,
        opcode: WrOpcode::Send,
        send_flags: send_flags::SIGNALED,
        sg_list: vec![mr.sge(0, len)],
        ..SendWr::default()
    }
}

#[test]
fn open_refuses_other_devices() {
    let (be, st) = FakeBackend::new();
    st.borrow_mut().id = 0x1234;
    assert!(matches!(
        Context::open(Box::new(be)),
        Err(Error::NotRocenic { found: 0x1234, .. })
    ));
    let (be, st) = FakeBackend::new();
    st.borrow_mut().abi = 2 << 16 | 7;
    let e = Context::open(Box::new(be)).err().unwrap();
    assert!(matches!(
        e,
        Error::AbiMismatch {
            major: 2,
            minor: 7,
            ..
        }
    ));
    assert!(e.to_string().contains("ABI 2.7"), "{e}");
}

#[test]
fn open_reads_capabilities() {
    let (ctx, _) = open();
    let a = ctx.device_attr();
    assert_eq!(a.max_qp, 16);
    assert_eq!(a.max_qp_wr, 1024);
    assert_eq!((a.max_send_sge, a.max_recv_sge), (1, 1));
    assert_eq!(a.max_inline_data, 32);
    assert_eq!((a.max_qp_init_rd_atom, a.max_qp_rd_atom), (16, 16));
}

#[test]
fn command_timeout_is_an_error() {
    let (mut ctx, st) = open();
    ctx.set_cmd_timeout(500);
    st.borrow_mut().hang = true;
    let start = ctx.now();
    let e = ctx.alloc_pd().unwrap_err();
    assert!(
        matches!(e, Error::CmdTimeout { op: CmdOpcode::CreatePd, cycles, .. } if cycles >= 500),
        "{e}"
    );
    assert!(ctx.now() - start < 1000, "waited too long");
    // The mailbox is still busy: the next command cannot even start.
    let e = ctx.create_cq(4).unwrap_err();
    assert!(matches!(e, Error::CmdBusy { .. }), "{e}");
    // A failed create gives its number back.
    st.borrow_mut().hang = false;
    ctx.wait(1 << 20);
    assert_eq!(ctx.alloc_pd().unwrap().pdn, 1);
}

#[test]
fn command_status_maps_to_typed_error() {
    let (mut ctx, st) = open();
    st.borrow_mut().fail_next = Some(CmdStatus::BadParam);
    let e = ctx.create_cq(8).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Cmd {
                op: CmdOpcode::CreateCq,
                status: CmdStatus::BadParam,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("BAD_PARAM"), "{e}");
    // The CQN and the ring were released.
    assert_eq!(ctx.create_cq(8).unwrap().cqn, 1);
}

#[test]
fn one_doorbell_per_post_batch() {
    let mut s = setup(64, 16);
    let wrs: Vec<SendWr> = (0..8).map(|i| send(i, &s.mr, 10)).collect();
    let before = s.st.borrow().bar_writes.len();
    s.ctx.post_send(s.qp, &wrs).unwrap();
    let writes: Vec<(u32, u32)> = s.st.borrow().bar_writes[before..].to_vec();
    assert_eq!(writes, vec![(regs::sq_doorbell(s.qp.qp_num), 8)]);
    let wcs = s.ctx.wait_cq(s.cq, 8, 10_000).unwrap();
    let ids: Vec<u64> = wcs.iter().map(|w| w.wr_id).collect();
    assert_eq!(ids, (0..8).collect::<Vec<_>>());
    // Receive side: one doorbell for two WRs.
    let rwrs = vec![
        RecvWr {
            wr_id: 1,
            sg_list: vec![s.mr.sge(0, 64)],
        },
        RecvWr {
            wr_id: 2,
            sg_list: vec![s.mr.sge(64, 64)],
        },
    ];
    s.ctx.post_recv(s.qp, &rwrs).unwrap();
    assert_eq!(
        s.st.borrow().writes_to(regs::rq_doorbell(s.qp.qp_num)),
        vec![2]
    );
}

#[test]
fn sq_full_is_refused_and_earlier_wrs_are_posted() {
    let mut s = setup(64, 4);
    assert_eq!(s.qp.cap.max_send_wr, 4);
    let wrs: Vec<SendWr> = (0..6).map(|i| send(i, &s.mr, 1)).collect();
    let e = s.ctx.post_send(s.qp, &wrs).unwrap_err();
    assert_eq!(e.index_of_first_bad_wr, 4);
    assert!(
        matches!(e.error, Error::SqFull { depth: 4, .. }),
        "{}",
        e.error
    );
    assert_eq!(
        s.st.borrow().writes_to(regs::sq_doorbell(s.qp.qp_num)),
        vec![4]
    );
    // Nothing is retired until completions are polled.
    s.ctx.wait(100);
    let e = s.ctx.post_send(s.qp, &wrs[4..5]).unwrap_err();
    assert!(matches!(e.error, Error::SqFull { .. }));
    assert_eq!(s.ctx.wait_cq(s.cq, 4, 1000).unwrap().len(), 4);
    s.ctx.post_send(s.qp, &wrs[4..6]).unwrap();
}

#[test]
fn unsignaled_wrs_retire_with_a_later_signaled_one() {
    let mut s = setup(64, 4);
    let mut wrs: Vec<SendWr> = (0..4).map(|i| send(i, &s.mr, 1)).collect();
    for w in &mut wrs[..3] {
        w.send_flags = 0;
    }
    s.ctx.post_send(s.qp, &wrs).unwrap();
    let wcs = s.ctx.wait_cq(s.cq, 1, 1000).unwrap();
    assert_eq!(wcs[0].wr_id, 3);
    // All four slots are free again.
    s.ctx.post_send(s.qp, &wrs).unwrap();
}

#[test]
fn inline_data_is_copied_and_limited() {
    let mut s = setup(64, 8);
    let buf = Buffer {
        id: 0,
        addr: s.mr.addr,
        len: 4096,
    };
    // The buffer handle of the MR: find it through the MR table's buffer id.
    let id = s.ctx.mrs.entries.values().next().unwrap().buf_id;
    let buf = Buffer { id, ..buf };
    s.ctx.write(&buf, 0, b"hello, inline world!").unwrap();
    let mut wr = send(7, &s.mr, 16);
    wr.send_flags |= send_flags::INLINE;
    s.ctx.post_send(s.qp, std::slice::from_ref(&wr)).unwrap();
    s.ctx.wait(10);
    {
        let st = s.st.borrow();
        let w = st.executed.last().unwrap();
        assert!(w.is_inline());
        assert_eq!(w.inline_len, 16);
        assert_eq!(&w.inline[..16], b"hello, inline wo");
    }
    // 17 bytes exceed the QP's max_inline_data of 16.
    wr.sg_list[0].length = 17;
    let e = s.ctx.post_send(s.qp, &[wr.clone()]).unwrap_err();
    assert_eq!(e.index_of_first_bad_wr, 0);
    assert!(
        matches!(
            e.error,
            Error::InlineTooLong {
                len: 17,
                max: 16,
                ..
            }
        ),
        "{}",
        e.error
    );
    // The QP cannot be created with more inline than the device has.
    let e = s
        .ctx
        .create_qp(
            s.pd,
            &QpInitAttr {
                send_cq: s.cq,
                recv_cq: s.cq,
                cap: QpCap {
                    max_send_wr: 1,
                    max_inline_data: 33,
                    ..QpCap::default()
                },
            },
        )
        .unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    // READ cannot be inline.
    wr.sg_list[0].length = 8;
    wr.opcode = WrOpcode::RdmaRead;
    let e = s.ctx.post_send(s.qp, &[wr]).unwrap_err();
    assert!(matches!(e.error, Error::BadWr(_)), "{}", e.error);
}

#[test]
fn too_many_sges_and_bad_opcode_are_refused() {
    let mut s = setup(64, 8);
    let mut wr = send(1, &s.mr, 8);
    wr.sg_list.push(s.mr.sge(8, 8));
    let wrs = vec![send(0, &s.mr, 8), wr];
    let e = s.ctx.post_send(s.qp, &wrs).unwrap_err();
    assert_eq!(e.index_of_first_bad_wr, 1);
    assert!(matches!(e.error, Error::TooManySge { n: 2, max: 1, .. }));
    assert_eq!(
        s.st.borrow().writes_to(regs::sq_doorbell(s.qp.qp_num)),
        vec![1],
        "the good WR before the bad one is posted"
    );
    let bad = SendWr {
        opcode: WrOpcode::Unknown(77),
        ..SendWr::default()
    };
    let e = s.ctx.post_send(s.qp, &[bad]).unwrap_err();
    assert!(matches!(e.error, Error::BadWr(_)));
    let atomic = SendWr {
        opcode: WrOpcode::AtomicFetchAndAdd,
        sg_list: vec![s.mr.sge(0, 4)],
        ..SendWr::default()
    };
    let e = s.ctx.post_send(s.qp, &[atomic]).unwrap_err();
    assert!(matches!(e.error, Error::BadWr(_)));
}

#[test]
fn posting_needs_the_right_state() {
    let (mut ctx, _st) = open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(4).unwrap();
    let qp = ctx
        .create_qp(
            pd,
            &QpInitAttr {
                send_cq: cq,
                recv_cq: cq,
                cap: QpCap {
                    max_send_wr: 2,
                    max_recv_wr: 2,
                    max_send_sge: 1,
                    max_recv_sge: 1,
                    max_inline_data: 0,
                },
            },
        )
        .unwrap();
    let wr = SendWr::default();
    let rwr = RecvWr::default();
    let e = ctx.post_recv(qp, std::slice::from_ref(&rwr)).unwrap_err();
    assert!(matches!(
        e.error,
        Error::BadQpState {
            state: QpState::Reset,
            ..
        }
    ));
    for s in [QpState::Init, QpState::Rtr] {
        let attr = QpAttr {
            qp_state: s,
            ..QpAttr::default()
        };
        ctx.modify_qp(qp, &attr, qp_attr::STATE).unwrap();
        let e = ctx.post_send(qp, std::slice::from_ref(&wr)).unwrap_err();
        assert!(
            matches!(e.error, Error::BadQpState { state, .. } if state == s),
            "{}",
            e.error
        );
        ctx.post_recv(qp, std::slice::from_ref(&rwr)).unwrap();
    }
    assert_eq!(ctx.query_qp(qp).unwrap().qp_state, QpState::Rtr);
    // Unknown mask bits are refused before reaching the device.
    let e = ctx.modify_qp(qp, &QpAttr::default(), 1 << 30).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)));
}

#[test]
fn cq_phase_across_many_laps_of_a_small_ring() {
    let mut s = setup(4, 16);
    assert_eq!(s.cq.cqe, 4);
    let mut next = 0u64;
    // 3 completions per round: the consumer index walks over slot boundaries and laps.
    for _round in 0..7 {
        let wrs: Vec<SendWr> = (next..next + 3).map(|i| send(i, &s.mr, 1)).collect();
        s.ctx.post_send(s.qp, &wrs).unwrap();
        let wcs = s.ctx.wait_cq(s.cq, 3, 1000).unwrap();
        let ids: Vec<u64> = wcs.iter().map(|w| w.wr_id).collect();
        assert_eq!(ids, (next..next + 3).collect::<Vec<_>>());
        next += 3;
        let mut extra = [Wc::default(); 4];
        assert_eq!(s.ctx.poll_cq(s.cq, &mut extra).unwrap(), 0, "stale CQE");
    }
    // More completions than the ring holds: the device holds the rest until the consumer
    // index is rung, and nothing is lost or repeated.
    let wrs: Vec<SendWr> = (next..next + 10).map(|i| send(i, &s.mr, 1)).collect();
    s.ctx.post_send(s.qp, &wrs).unwrap();
    s.ctx.wait(10);
    let mut wcs = [Wc::default(); 16];
    let before = s.st.borrow().writes_to(regs::cq_doorbell(s.cq.cqn)).len();
    assert_eq!(s.ctx.poll_cq(s.cq, &mut wcs).unwrap(), 4);
    assert_eq!(
        s.st.borrow().writes_to(regs::cq_doorbell(s.cq.cqn)).len(),
        before + 1,
        "one CQ doorbell per poll call"
    );
    let mut ids: Vec<u64> = wcs[..4].iter().map(|w| w.wr_id).collect();
    ids.extend(
        s.ctx
            .wait_cq(s.cq, 6, 1000)
            .unwrap()
            .iter()
            .map(|w| w.wr_id),
    );
    assert_eq!(ids, (next..next + 10).collect::<Vec<_>>());
    assert_eq!(s.ctx.poll_cq(s.cq, &mut wcs).unwrap(), 0);
    // Nothing consumed: no doorbell.
    let n = s.st.borrow().writes_to(regs::cq_doorbell(s.cq.cqn)).len();
    assert_eq!(s.ctx.poll_cq(s.cq, &mut wcs).unwrap(), 0);
    assert_eq!(
        s.st.borrow().writes_to(regs::cq_doorbell(s.cq.cqn)).len(),
        n
    );
}

#[test]
fn wait_cq_times_out_with_what_arrived() {
    let mut s = setup(8, 8);
    s.ctx.post_send(s.qp, &[send(5, &s.mr, 1)]).unwrap();
    let start = s.ctx.now();
    let e = s.ctx.wait_cq(s.cq, 2, 300).unwrap_err();
    match e {
        Error::CqTimeout {
            wanted: 2,
            cycles,
            got,
            ..
        } => {
            assert!((300..400).contains(&cycles), "{cycles}");
            assert_eq!(got.len(), 1);
            assert_eq!(got[0].wr_id, 5);
        }
        e => panic!("{e}"),
    }
    assert!(s.ctx.now() - start < 400);
}

#[test]
fn mr_keys_carry_a_generation_tag() {
    let mut s = setup(4, 4);
    let id = s.ctx.mrs.entries.values().next().unwrap().buf_id;
    let buf = Buffer {
        id,
        addr: s.mr.addr,
        len: 4096,
    };
    let old = s.mr;
    s.ctx.dereg_mr(&old).unwrap();
    // Index 0 is reused only after every fresh index: register until it comes back.
    let mut again = None;
    for _ in 0..16 {
        let m = s.ctx.reg_mr(s.pd, &buf, access::LOCAL_WRITE).unwrap();
        if abi_cmd::mr_index(m.lkey) == abi_cmd::mr_index(old.lkey) {
            again = Some(m);
            break;
        }
    }
    let again = again.expect("index reused");
    assert_ne!(again.lkey, old.lkey, "same index, new tag");
    assert!(matches!(
        s.ctx.dereg_mr(&old),
        Err(Error::UnknownHandle { what: "MR", .. })
    ));
    assert!(s.st.borrow().mrs.contains_key(&abi_cmd::mr_index(old.lkey)));
    // Remote write needs local write, as in ibverbs.
    let e = s.ctx.reg_mr(s.pd, &buf, access::REMOTE_WRITE).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)));
    // The buffer cannot be freed under its MRs, and the PD not under its QP.
    assert!(matches!(s.ctx.free_buf(&buf), Err(Error::InUse { .. })));
    assert!(matches!(s.ctx.dealloc_pd(s.pd), Err(Error::InUse { .. })));
    assert!(matches!(s.ctx.destroy_cq(s.cq), Err(Error::InUse { .. })));
}

#[test]
fn buffer_access_is_bounds_checked() {
    let (mut ctx, _) = open();
    let buf = ctx.alloc_buf(100).unwrap();
    ctx.write(&buf, 90, &[1; 10]).unwrap();
    let e = ctx.write(&buf, 95, &[1; 10]).unwrap_err();
    assert!(matches!(e, Error::OutOfBounds { .. }));
    let mut out = [0u8; 10];
    ctx.read(&buf, 90, &mut out).unwrap();
    assert_eq!(out, [1; 10]);
    ctx.free_buf(&buf).unwrap();
    assert!(matches!(
        ctx.read(&buf, 0, &mut out),
        Err(Error::UnknownHandle { .. })
    ));
}

#[test]
fn counters_and_teardown() {
    let mut s = setup(4, 4);
    let c = s.ctx.query_qp_counters(s.qp).unwrap();
    assert_eq!(c[Counter::Retransmits as usize], 40);
    s.ctx.destroy_qp(s.qp).unwrap();
    assert!(s.st.borrow().qps.is_empty());
    assert!(matches!(
        s.ctx.post_send(s.qp, &[]),
        Err(PostError {
            error: Error::UnknownHandle { what: "QP", .. },
            ..
        })
    ));
    let st = s.st.clone();
    s.ctx.close().unwrap();
    assert!(st.borrow().mrs.is_empty(), "close deregisters MRs");
}

#[test]
fn send_flags_translate_between_verbs_h_and_the_wqe() {
    use rocenic_proto::abi::verbs::send_flags as wqe;
    let pairs = [
        (send_flags::FENCE, wqe::FENCE),
        (send_flags::SIGNALED, wqe::SIGNALED),
        (send_flags::SOLICITED, wqe::SOLICITED),
        (send_flags::INLINE, wqe::INLINE),
    ];
    // verbs.h: FENCE 1, SIGNALED 2, SOLICITED 4, INLINE 8; the device: 8, 1, 2, 4.
    assert_eq!(pairs.map(|(v, _)| v), [1, 2, 4, 8]);
    assert_eq!(pairs.map(|(_, d)| d), [8, 1, 2, 4]);
    // Every subset both ways.
    for set in 0..16u32 {
        let verbs: u32 = (0..4)
            .filter(|i| set >> i & 1 != 0)
            .map(|i| pairs[i].0)
            .sum();
        let device: u8 = (0..4)
            .filter(|i| set >> i & 1 != 0)
            .map(|i| pairs[i].1)
            .sum();
        assert_eq!(send_flags::to_wqe(verbs), Some(device), "verbs {verbs:#x}");
        assert_eq!(
            send_flags::from_wqe(device),
            Some(verbs),
            "device {device:#x}"
        );
    }
    // Bits neither side defines are refused, not dropped.
    assert_eq!(send_flags::to_wqe(16), None); // IBV_SEND_IP_CSUM
    assert_eq!(send_flags::to_wqe(send_flags::SIGNALED | 1 << 31), None);
    assert_eq!(send_flags::from_wqe(0x10), None);
}

#[test]
fn post_send_writes_the_device_bits() {
    use rocenic_proto::abi::verbs::send_flags as wqe;
    let mut s = setup(64, 8);
    let mut wr = send(1, &s.mr, 8);
    wr.send_flags = send_flags::SIGNALED | send_flags::FENCE | send_flags::SOLICITED;
    s.ctx.post_send(s.qp, std::slice::from_ref(&wr)).unwrap();
    s.ctx.wait(10);
    let flags = s.st.borrow().executed.last().unwrap().flags;
    assert_eq!(flags, wqe::SIGNALED | wqe::FENCE | wqe::SOLICITED);
    assert_eq!(s.ctx.wait_cq(s.cq, 1, 1000).unwrap()[0].wr_id, 1);
    // An unknown flag is refused before anything is written.
    wr.send_flags = 16;
    let e = s.ctx.post_send(s.qp, &[wr]).unwrap_err();
    assert!(
        matches!(e.error, Error::BadWr(ref m) if m.contains("0x10")),
        "{}",
        e.error
    );
}
