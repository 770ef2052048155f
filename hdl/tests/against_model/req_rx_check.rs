//! [`ReqRxCheck`] against the model's `on_response`: the requester's decision on a
//! response, from random and directed QP states, op lists and responses.

use rocenic_hdl::bench::{Bench, Rng};
use rocenic_hdl::prelude::*;
use rocenic_hdl::requester::req_rx_check::*;
use rocenic_model::{
    on_response, AckTimer, Cursor, Deliver, OpFail, OpKind, OpSummary, ReqDecision, ReqState,
    RespFields,
};
use rocenic_proto::abi::regs::Counter;
use rocenic_proto::wire::Opcode;

fn psn(x: u32) -> u32 {
    x & 0xff_ffff
}

/// One case: the QP's state, its ops (PMTU code shared) and a response.
#[derive(Debug, Clone)]
struct Case {
    st: ReqState,
    ops: Vec<OpSummary>,
    pmtu_code: u8,
    r: RespFields,
}

/// A QP state as the model keeps it: ops back to back in PSN order from `base`; those
/// wholly below `una` are done, a READ/atomic straddling `una` has its responses up
/// to it; `sent_end` between `una` and the end; now and then an op failed in the middle.
fn random_case(rng: &mut Rng) -> Case {
    let pmtu_code = 1 + rng.below(5) as u8;
    let pmtu = 128u32 << pmtu_code;
    let base = match rng.below(4) {
        0 => psn(0xff_fff0u32.wrapping_add(rng.below(16) as u32)),
        _ => rng.next_u64() as u32 & 0xff_ffff,
    };
    let n = rng.below(9) as usize;
    let mut ops = Vec::new();
    let mut next = base;
    for _ in 0..n {
        let kind =
            [OpKind::Send, OpKind::Write, OpKind::Read, OpKind::Atomic][rng.below(4) as usize];
        let npsn = if kind == OpKind::Atomic {
            1
        } else {
            1 + rng.below(3) as u32
        };
        let len = match kind {
            OpKind::Atomic => 8,
            _ if npsn == 1 => rng.below(u64::from(pmtu) + 1) as u32,
            _ => (npsn - 1) * pmtu + 1 + rng.below(u64::from(pmtu)) as u32,
        };
        ops.push(OpSummary {
            kind,
            first_psn: next,
            npsn,
            resp_pkts: 0,
            len,
            pmtu,
            done: false,
        });
        next = psn(next + npsn);
    }
    let span = next.wrapping_sub(base) & 0xff_ffff;
    let u = rng.below(u64::from(span) + 1) as u32;
    let e = u + rng.below(u64::from(span - u) + 1) as u32;
    let una = psn(base + u);
    for o in ops.iter_mut() {
        let off = o.first_psn.wrapping_sub(base) & 0xff_ffff;
        if off + o.npsn <= u {
            o.done = true;
            if o.is_read_like() {
                o.resp_pkts = o.npsn;
            }
        } else if off < u && o.is_read_like() {
            o.resp_pkts = u - off;
        }
    }
    if !ops.is_empty() && rng.percent(15) {
        let i = rng.below(ops.len() as u64) as usize;
        ops[i].done = true;
    }
    if rng.percent(40) {
        while ops.first().is_some_and(|o| o.done) {
            ops.remove(0);
        }
    }
    let waits: Vec<u32> = ops.iter().map(|o| o.waiting_psn()).collect();
    let pick = |rng: &mut Rng| -> u32 {
        match rng.below(8) {
            0 => una,
            1 => psn(una + 1 + rng.below(3) as u32),
            2 => psn(base + e),
            3 => psn((base + e).wrapping_sub(1)),
            4 | 5 if !waits.is_empty() => waits[rng.below(waits.len() as u64) as usize],
            6 if !ops.is_empty() => {
                let o = ops[rng.below(ops.len() as u64) as usize];
                if rng.percent(50) {
                    o.first_psn
                } else {
                    o.last_psn()
                }
            }
            _ => rng.next_u64() as u32 & 0xff_ffff,
        }
    };
    let rnr_retry = rng.below(8) as u8;
    let st = ReqState {
        una_psn: una,
        sent_end: psn(base + e),
        retry_left: if rng.percent(30) {
            0
        } else {
            rng.below(8) as u8
        },
        rnr_left: if rng.percent(30) {
            0
        } else {
            rng.below(8) as u8
        },
        retry_cnt: rng.below(8) as u8,
        rnr_retry,
        rewound_to: if rng.percent(50) {
            None
        } else {
            Some(pick(rng))
        },
        rnr_waiting: rng.percent(20),
    };
    let p = pick(rng);
    let (opcode, syndrome) = match rng.below(20) {
        0..=5 => (Opcode::Acknowledge, Some(rng.below(32) as u8)),
        6..=9 => (
            Opcode::Acknowledge,
            Some(
                0x60 | if rng.percent(60) {
                    0
                } else {
                    rng.below(32) as u8
                },
            ),
        ),
        10..=11 => (Opcode::Acknowledge, Some(0x20 | rng.below(32) as u8)),
        12..=16 => (
            [
                Opcode::RdmaReadResponseFirst,
                Opcode::RdmaReadResponseMiddle,
                Opcode::RdmaReadResponseLast,
                Opcode::RdmaReadResponseOnly,
            ][rng.below(4) as usize],
            None,
        ),
        17..=18 => (Opcode::AtomicAcknowledge, Some(0)),
        _ => match rng.below(3) {
            0 => (Opcode::Acknowledge, None),
            1 => (Opcode::Acknowledge, Some(0x40 | rng.byte())),
            _ => (Opcode::from(rng.byte() & 0x1f), Some(rng.byte())),
        },
    };
    // READ responses: mostly the length the waiting op expects.
    let want = ops
        .iter()
        .find(|o| !o.done && o.is_read_like())
        .map_or(0, |o| {
            let off = o.resp_pkts * o.pmtu;
            o.pmtu.min(o.len.saturating_sub(off))
        });
    let payload_len = match rng.below(4) {
        0 | 1 => want,
        2 => want.saturating_sub(1) + 2 * rng.below(2) as u32,
        _ => rng.below(5000) as u32,
    };
    let r = RespFields {
        opcode,
        psn: p,
        syndrome,
        has_atomic_ack: rng.percent(90),
        payload_len,
    };
    Case {
        st,
        ops,
        pmtu_code,
        r,
    }
}

fn new_bench() -> Bench<ReqRxCheck> {
    Bench::new(ReqRxCheck::default(), |b| &mut b.clock)
}

/// Runs the walk for a case and reads the decision back as the model's type.
fn decide(bn: &mut Bench<ReqRxCheck>, c: &Case) -> ReqDecision {
    let b = &mut bn.uut;
    b.s_opcode.next = u64::from(u8::from(c.r.opcode)).into();
    b.s_psn.next = u64::from(c.r.psn).into();
    b.s_has_aeth.next = c.r.syndrome.is_some();
    b.s_syndrome.next = u64::from(c.r.syndrome.unwrap_or(0)).into();
    b.s_has_atomic_ack.next = c.r.has_atomic_ack;
    b.s_payload_len.next = u64::from(c.r.payload_len).into();
    b.s_una.next = u64::from(c.st.una_psn).into();
    b.s_sent_end.next = u64::from(c.st.sent_end).into();
    b.s_retry_left.next = u64::from(c.st.retry_left).into();
    b.s_rnr_left.next = u64::from(c.st.rnr_left).into();
    b.s_retry_cnt.next = u64::from(c.st.retry_cnt).into();
    b.s_rnr_retry.next = u64::from(c.st.rnr_retry).into();
    b.s_rewound_valid.next = c.st.rewound_to.is_some();
    b.s_rewound.next = u64::from(c.st.rewound_to.unwrap_or(0)).into();
    b.s_rnr_waiting.next = c.st.rnr_waiting;
    b.s_start.next = true;
    b.s_op_valid.next = false;
    bn.tick();
    bn.uut.s_start.next = false;
    for o in &c.ops {
        let b = &mut bn.uut;
        b.s_op_valid.next = true;
        b.s_op_kind.next = match o.kind {
            OpKind::Send => KIND_SEND,
            OpKind::Write => KIND_WRITE,
            OpKind::Read => KIND_READ,
            OpKind::Atomic => KIND_ATOMIC,
        }
        .into();
        b.s_op_first.next = u64::from(o.first_psn).into();
        b.s_op_npsn.next = u64::from(o.npsn).into();
        b.s_op_resp.next = u64::from(o.resp_pkts).into();
        b.s_op_len.next = u64::from(o.len).into();
        b.s_op_pmtu.next = u64::from(c.pmtu_code).into();
        b.s_op_done.next = o.done;
        bn.tick();
    }
    bn.uut.s_op_valid.next = false;
    bn.settle();
    let b = &bn.uut;
    let u = |s: &Signal<Out, Bits<24>>| s.val().to_u64() as u32;
    let idx = |v: u64| v as usize;
    let status = |v: u64| rocenic_proto::abi::verbs::WcStatus::from(v as u8);
    let fail = |valid: bool, op: u64, st: u64, syn: u64| {
        valid.then(|| OpFail {
            op: idx(op),
            status: status(st),
            syndrome: syn as u8,
        })
    };
    ReqDecision {
        count: match b.m_count.val().to_u64() {
            CNT_NONE => None,
            CNT_NAK => Some(Counter::NaksReceived),
            CNT_RNR => Some(Counter::RnrNaksReceived),
            CNT_DUP => Some(Counter::Duplicates),
            CNT_MALFORMED => Some(Counter::MalformedDrops),
            x => panic!("count code {x}"),
        },
        ack_upto: idx(b.m_ack_upto.val().to_u64()),
        una_psn: u(&b.m_una),
        retry_left: b.m_retry_left.val().to_u64() as u8,
        rnr_left: b.m_rnr_left.val().to_u64() as u8,
        rewound_to: b.m_rewound_valid.val().then(|| u(&b.m_rewound)),
        fails: [
            fail(
                b.m_fail0_valid.val(),
                b.m_fail0_op.val().to_u64(),
                b.m_fail0_status.val().to_u64(),
                b.m_fail0_syndrome.val().to_u64(),
            ),
            fail(
                b.m_fail1_valid.val(),
                b.m_fail1_op.val().to_u64(),
                b.m_fail1_status.val().to_u64(),
                b.m_fail1_syndrome.val().to_u64(),
            ),
        ],
        cursor: match b.m_cursor.val().to_u64() {
            CUR_KEEP => Cursor::Keep,
            CUR_REWIND => Cursor::Rewind(u(&b.m_cursor_psn)),
            CUR_STOP => Cursor::Stop,
            x => panic!("cursor code {x}"),
        },
        timer: match b.m_timer.val().to_u64() {
            TMR_KEEP => AckTimer::Keep,
            TMR_ARM => AckTimer::Arm,
            TMR_CLEAR => AckTimer::Clear,
            x => panic!("timer code {x}"),
        },
        rnr_wait: b
            .m_rnr_wait
            .val()
            .then(|| b.m_rnr_timer.val().to_u64() as u8),
        deliver: b.m_dlv_valid.val().then(|| Deliver {
            op: idx(b.m_dlv_op.val().to_u64()),
            offset: b.m_dlv_offset.val().to_u64() as u32,
            len: b.m_dlv_len.val().to_u64() as u32,
            atomic: b.m_dlv_atomic.val(),
            una: u(&b.m_dlv_una),
        }),
        activate: b.m_activate.val(),
    }
}

/// Outcome classes, to show the cases reach every branch.
fn class(d: &ReqDecision) -> Vec<usize> {
    let mut v = vec![match d.count {
        None => 0,
        Some(Counter::NaksReceived) => 1,
        Some(Counter::RnrNaksReceived) => 2,
        Some(Counter::Duplicates) => 3,
        _ => 4,
    }];
    v.push(5 + usize::from(d.ack_upto > 0));
    v.push(match d.cursor {
        Cursor::Keep => 7,
        Cursor::Rewind(_) => 8,
        Cursor::Stop => 9,
    });
    if let Some(f) = d.fails[0] {
        v.push(match u8::from(f.status) {
            12 => 10,
            13 => 11,
            7 => 12,
            _ => 13,
        });
    }
    if d.fails[1].is_some() {
        v.push(14);
    }
    if let Some(dl) = d.deliver {
        v.push(15 + usize::from(dl.atomic));
    }
    if d.rnr_wait.is_some() {
        v.push(17);
    }
    if d.timer == AckTimer::Arm {
        v.push(18);
    }
    v
}

fn check(bn: &mut Bench<ReqRxCheck>, c: &Case, seen: &mut [usize; 19]) {
    let want = on_response(&c.st, &c.ops, &c.r);
    let got = decide(bn, c);
    assert_eq!(got, want, "{c:#x?}");
    for k in class(&want) {
        seen[k] += 1;
    }
}

#[test]
fn every_decision_matches_the_models_on_response() {
    let mut bn = new_bench();
    let mut rng = Rng::new(0x4E9_C0DE);
    let mut seen = [0usize; 19];
    for _ in 0..3000 {
        let c = random_case(&mut rng);
        check(&mut bn, &c, &mut seen);
    }
    eprintln!("outcome classes: {seen:?}");
    assert!(
        seen.iter().all(|&n| n >= 2),
        "every outcome class reached: {seen:?}"
    );
}

fn op(kind: OpKind, first_psn: u32, npsn: u32, len: u32) -> OpSummary {
    OpSummary {
        kind,
        first_psn,
        npsn,
        resp_pkts: 0,
        len,
        pmtu: 1024,
        done: false,
    }
}

fn state(una_psn: u32, sent_end: u32, retry_left: u8) -> ReqState {
    ReqState {
        una_psn,
        sent_end,
        retry_left,
        rnr_left: 3,
        retry_cnt: 7,
        rnr_retry: 3,
        rewound_to: None,
        rnr_waiting: false,
    }
}

fn resp(opcode: Opcode, psn: u32, syndrome: Option<u8>, payload_len: u32) -> RespFields {
    RespFields {
        opcode,
        psn,
        syndrome,
        has_atomic_ack: true,
        payload_len,
    }
}

/// Directed cases, each checked to reach the branch it is named for.
#[test]
fn directed_cases() {
    let mut bn = new_bench();
    let mut seen = [0usize; 19];
    let mut run = |ops: Vec<OpSummary>, st: ReqState, r: RespFields| {
        let c = Case {
            st,
            ops,
            pmtu_code: 3,
            r,
        };
        check(&mut bn, &c, &mut seen);
        on_response(&c.st, &c.ops, &c.r)
    };
    // An ACK across the PSN wrap completes both SENDs and moves the window past 0.
    let ops = vec![
        op(OpKind::Send, 0xff_fffe, 2, 2048),
        op(OpKind::Send, 0, 2, 1500),
    ];
    let d = run(
        ops,
        state(0xff_fffe, 2, 3),
        resp(Opcode::Acknowledge, 1, Some(0), 0),
    );
    assert_eq!((d.ack_upto, d.una_psn, d.timer), (2, 2, AckTimer::Arm));
    // An ACK passing a READ without its response: go back to the READ.
    let ops = vec![op(OpKind::Read, 10, 2, 2000), op(OpKind::Write, 12, 1, 100)];
    let d = run(
        ops.clone(),
        state(10, 13, 3),
        resp(Opcode::Acknowledge, 12, Some(0), 0),
    );
    assert_eq!((d.cursor, d.retry_left), (Cursor::Rewind(10), 2));
    // The same with no retry left, and the NAK (remote access) naming the WRITE: two
    // ops fail.
    let d = run(
        ops.clone(),
        state(10, 13, 0),
        resp(Opcode::Acknowledge, 12, Some(0x62), 0),
    );
    assert!(d.fails[0].is_some() && d.fails[1].is_some(), "{d:?}");
    // A NAK (invalid request) naming the WRITE behind a READ whose response was lost:
    // back to the READ, the timer armed, nothing fails (the NAK comes again after
    // the READ, or the retries run out).
    let d = run(
        ops.clone(),
        state(10, 13, 3),
        resp(Opcode::Acknowledge, 12, Some(0x61), 0),
    );
    assert_eq!(
        (d.cursor, d.timer, d.fails[0], d.count),
        (
            Cursor::Rewind(10),
            AckTimer::Arm,
            None,
            Some(Counter::NaksReceived)
        )
    );
    // RNR NAK with RNR retries forever: rewind and wait, no retry spent.
    let mut st = state(10, 13, 3);
    st.rnr_retry = 7;
    st.rnr_left = 0;
    let d = run(
        ops.clone(),
        st,
        resp(Opcode::Acknowledge, 10, Some(0x2e), 0),
    );
    assert_eq!((d.rnr_wait, d.cursor), (Some(0x0e), Cursor::Rewind(10)));
    // READ responses: FIRST in order is delivered at offset 0; a second one after it
    // (MIDDLE at PSN 11 with one response in) goes at one PMTU; a LAST of the wrong
    // length fails the READ.
    let d = run(
        ops.clone(),
        state(10, 13, 3),
        resp(Opcode::RdmaReadResponseFirst, 10, None, 1024),
    );
    assert_eq!(
        d.deliver.map(|x| (x.offset, x.len, x.una)),
        Some((0, 1024, 11))
    );
    let mut ops2 = ops.clone();
    ops2[0].resp_pkts = 1;
    let d = run(
        ops2.clone(),
        state(11, 13, 3),
        resp(Opcode::RdmaReadResponseLast, 11, None, 976),
    );
    assert_eq!(
        d.deliver.map(|x| (x.offset, x.len, x.una)),
        Some((1024, 976, 12))
    );
    let d = run(
        ops2,
        state(11, 13, 3),
        resp(Opcode::RdmaReadResponseLast, 11, None, 977),
    );
    assert_eq!(d.fails[0].map(|f| f.op), Some(0));
    // A response past the expected PSN goes back to it; one before it is a duplicate.
    let d = run(
        ops.clone(),
        state(10, 13, 3),
        resp(Opcode::RdmaReadResponseMiddle, 11, None, 1024),
    );
    assert_eq!(d.cursor, Cursor::Rewind(10));
    let d = run(
        ops,
        state(10, 13, 3),
        resp(Opcode::RdmaReadResponseOnly, 9, None, 10),
    );
    assert_eq!(d.count, Some(Counter::Duplicates));
}
