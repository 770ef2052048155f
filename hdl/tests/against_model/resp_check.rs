//! [`RespCheck`] against the model's `classify`: the responder's decision on a request
//! packet (PSN, duplicate, opcode sequence, access, payload length, RNR) over random and
//! directed cases.

use rocenic_hdl::bench::Rng;
use rocenic_hdl::prelude::*;
use rocenic_hdl::responder::resp_check::*;
use rocenic_model::{classify, Decision, Dup, ExecKind, Progress, ReqFields, RespCtx};
use rocenic_proto::abi::verbs::{Mtu, QpState};
use rocenic_proto::wire::Opcode;

/// Every request opcode, a response and two unknown codes.
const OPCODES: [u8; 21] = [
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x13, 0x14, 0x16,
    0x17, 0x10, 0x11, 0x15, 0x64,
];

/// One case: the model's inputs plus the RTL-only encodings.
#[derive(Debug, Clone, Copy)]
struct Case {
    ctx: RespCtx,
    req: ReqFields,
    state: u8,
    pmtu_code: u8,
    rq_pi: u32,
    rq_ci: u32,
}

fn mtu_bytes(code: u8) -> u32 {
    Mtu::from_code(u32::from(code)).map_or(0, |m| m.bytes())
}

/// A case with its PSN, opcode and in-progress state drawn to reach every branch.
fn random_case(rng: &mut Rng) -> Case {
    let state = if rng.percent(85) {
        3
    } else {
        rng.below(7) as u8
    };
    let pmtu_code = rng.below(6) as u8;
    let pmtu = mtu_bytes(pmtu_code);
    let epsn = match rng.below(4) {
        0 => 0xff_ffff - rng.below(3) as u32,
        1 => rng.below(3) as u32,
        _ => rng.next_u64() as u32 & 0xff_ffff,
    };
    let psn = match rng.below(8) {
        0..=3 => epsn,
        4 => epsn.wrapping_add(1 + rng.below(4) as u32),
        5 => epsn.wrapping_sub(1 + rng.below(4) as u32),
        6 => epsn.wrapping_add(0x80_0000 - 1 + rng.below(3) as u32),
        _ => rng.next_u64() as u32,
    } & 0xff_ffff;
    let rq_ci = rng.next_u64() as u32;
    let rq_pi = if rng.percent(50) {
        rq_ci
    } else {
        rq_ci.wrapping_add(1 + rng.below(1 << 20) as u32)
    };
    let total = match rng.below(3) {
        0 => rng.below(3 * u64::from(pmtu.max(1))) as u32,
        1 => rng.next_u64() as u32,
        _ => u32::MAX - rng.below(300) as u32,
    };
    let offset = if rng.percent(30) {
        total
    } else {
        total.saturating_sub(rng.below(u64::from(pmtu) + 3) as u32)
    };
    let progress = match rng.below(3) {
        0 => Progress::Idle,
        1 => Progress::Send,
        _ => Progress::Write { total, offset },
    };
    let payload_len = match rng.below(5) {
        0 => pmtu,
        1 => pmtu + 1,
        2 => 0,
        3 => pmtu.saturating_sub(1),
        _ => rng.below(0x1_0000) as u32,
    }
    .min(0xffff);
    let opcode = Opcode::from(OPCODES[rng.below(OPCODES.len() as u64) as usize]);
    let reth_len = match rng.below(3) {
        0 => payload_len,
        1 => payload_len + rng.below(2 * u64::from(pmtu) + 1) as u32,
        _ => rng.next_u64() as u32,
    };
    Case {
        ctx: RespCtx {
            can_receive: matches!(
                QpState::from(state),
                QpState::Rtr | QpState::Rts | QpState::Sqd
            ),
            epsn,
            nak_sent: rng.percent(50),
            rq_empty: rq_pi == rq_ci,
            pmtu,
            access: rng.below(16) as u32,
            progress,
        },
        req: ReqFields {
            opcode,
            psn,
            ack_req: rng.percent(50),
            has_reth: rng.percent(85),
            reth_len,
            has_atomic: rng.percent(85),
            atomic_va: if rng.percent(80) {
                rng.next_u64() & !7
            } else {
                rng.next_u64()
            },
            has_imm: rng.percent(50),
            payload_len,
        },
        state,
        pmtu_code,
        rq_pi,
        rq_ci,
    }
}

/// Drives the block with a case and reads its decision back as the model's type.
fn decide(b: &mut RespCheck, c: &Case) -> (Decision, u32) {
    let (prog, total, offset) = match c.ctx.progress {
        Progress::Idle => (PROG_IDLE, 0, 0),
        Progress::Send => (PROG_SEND, 0, 0),
        Progress::Write { total, offset } => (PROG_WRITE, total, offset),
    };
    b.s_opcode.next = u64::from(u8::from(c.req.opcode)).into();
    b.s_psn.next = u64::from(c.req.psn).into();
    b.s_ack_req.next = c.req.ack_req;
    b.s_has_reth.next = c.req.has_reth;
    b.s_reth_len.next = u64::from(c.req.reth_len).into();
    b.s_has_atomic.next = c.req.has_atomic;
    b.s_atomic_va_lo.next = (c.req.atomic_va & 7).into();
    b.s_has_imm.next = c.req.has_imm;
    b.s_payload_len.next = u64::from(c.req.payload_len).into();
    b.s_state.next = u64::from(c.state).into();
    b.s_pmtu.next = u64::from(c.pmtu_code).into();
    b.s_access.next = u64::from(c.ctx.access).into();
    b.s_epsn.next = u64::from(c.ctx.epsn).into();
    b.s_nak_sent.next = c.ctx.nak_sent;
    b.s_rq_pi.next = u64::from(c.rq_pi).into();
    b.s_rq_ci.next = u64::from(c.rq_ci).into();
    b.s_prog.next = prog.into();
    b.s_wr_total.next = u64::from(total).into();
    b.s_wr_offset.next = u64::from(offset).into();
    assert!(simulate(b, 100), "settles");
    let d = match b.m_action.val().to_u64() {
        ACT_DROP => Decision::Drop,
        ACT_DUP => Decision::Duplicate(match b.m_dup.val().to_u64() {
            DUP_ACK => Dup::Ack {
                psn: b.m_ack_psn.val().to_u64() as u32,
            },
            DUP_READ => Dup::Read,
            DUP_ATOMIC => Dup::Atomic,
            _ => Dup::Ignore,
        }),
        ACT_AHEAD => Decision::Ahead {
            nak: b.m_ahead_nak.val(),
        },
        ACT_INVALID => Decision::Invalid,
        ACT_EXEC => Decision::Execute(rocenic_model::Exec {
            kind: match b.m_kind.val().to_u64() {
                KIND_SEND => ExecKind::Send,
                KIND_WRITE => ExecKind::Write,
                KIND_READ => ExecKind::Read,
                _ => ExecKind::Atomic,
            },
            first: b.m_first.val(),
            last: b.m_last.val(),
            len_err: b.m_len_err.val(),
            rnr: b.m_rnr.val(),
        }),
        a => panic!("action code {a}"),
    };
    (d, b.m_wr_end.val().to_u64() as u32)
}

/// Outcome classes, to show the cases reach every branch.
fn class(d: &Decision) -> usize {
    match d {
        Decision::Drop => 0,
        Decision::Duplicate(Dup::Ack { .. }) => 1,
        Decision::Duplicate(Dup::Read) => 2,
        Decision::Duplicate(Dup::Atomic) => 3,
        Decision::Duplicate(Dup::Ignore) => 4,
        Decision::Ahead { nak: true } => 5,
        Decision::Ahead { nak: false } => 6,
        Decision::Invalid => 7,
        Decision::Execute(e) => {
            8 + match e.kind {
                ExecKind::Send => usize::from(e.first) + usize::from(e.rnr),
                ExecKind::Write => {
                    3 + usize::from(e.first) + 2 * usize::from(e.len_err) + 4 * usize::from(e.rnr)
                }
                ExecKind::Read => 11,
                ExecKind::Atomic => 12,
            }
        }
    }
}

fn check(b: &mut RespCheck, c: &Case, seen: &mut [usize; 21]) {
    let want = classify(&c.ctx, &c.req);
    let (got, wr_end) = decide(b, c);
    assert_eq!(got, want, "{c:#x?}");
    if let Decision::Execute(e) = want {
        if e.kind == ExecKind::Write && !e.len_err {
            let base = match c.ctx.progress {
                Progress::Write { offset, .. } => offset,
                _ => 0,
            };
            assert_eq!(wr_end, base + c.req.payload_len, "{c:#x?}");
        }
    }
    seen[class(&want)] += 1;
}

#[test]
fn every_decision_matches_the_models_classify() {
    let mut b = RespCheck::default();
    b.connect_all();
    check_all(&b).expect("structural check");
    let mut rng = Rng::new(0x5E5C);
    let mut seen = [0usize; 21];
    for _ in 0..20000 {
        let c = random_case(&mut rng);
        check(&mut b, &c, &mut seen);
    }
    // Directed: every opcode in every in-progress state, in sequence, in RTS, with a
    // payload of exactly one PMTU and of zero, and the PSN at the wrap of the circle.
    for &op in &OPCODES {
        for prog in [
            Progress::Idle,
            Progress::Send,
            Progress::Write {
                total: 3000,
                offset: 1024,
            },
        ] {
            for (len, epsn) in [(1024, 0xff_ffff), (0, 0), (1976, 5)] {
                let mut c = random_case(&mut rng);
                c.state = 3;
                c.pmtu_code = 3;
                c.ctx.can_receive = true;
                c.ctx.pmtu = 1024;
                c.ctx.epsn = epsn;
                c.ctx.progress = prog;
                c.req.opcode = Opcode::from(op);
                c.req.psn = epsn;
                c.req.payload_len = len;
                check(&mut b, &c, &mut seen);
                // The same packet one PSN later and earlier across the wrap.
                c.req.psn = (epsn + 1) & 0xff_ffff;
                check(&mut b, &c, &mut seen);
                c.req.psn = epsn.wrapping_sub(1) & 0xff_ffff;
                check(&mut b, &c, &mut seen);
                c.req.psn = epsn.wrapping_add(0x80_0000) & 0xff_ffff;
                check(&mut b, &c, &mut seen);
                c.req.psn = epsn.wrapping_add(0x80_0001) & 0xff_ffff;
                check(&mut b, &c, &mut seen);
            }
        }
    }
    assert!(
        seen.iter().all(|&n| n >= 2),
        "every outcome class reached: {seen:?}"
    );
}
