//! Proptest strategies for rocenic cases, shared by the property tests (and, later, the
//! differential tests). Built from plain ranges, `Just`s and vectors so that shrinking
//! moves towards small, readable counterexamples: fewer ops, QP 0, side A, length 0, no
//! faults.

#![allow(dead_code)]

use proptest::prelude::*;
use proptest::test_runner::Config as ProptestConfig;

use rocenic_tests::case::*;

/// Cases per property: `ROCENIC_PROPTEST_CASES`, default 1000.
pub fn cases() -> u32 {
    std::env::var("ROCENIC_PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000)
}

/// The configuration of every property: the case count above, no failure persistence
/// (nothing is written in CI). `PROPTEST_RNG_SEED` still pins the generator.
pub fn config() -> ProptestConfig {
    ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        max_shrink_iters: 4096,
        ..ProptestConfig::default()
    }
}

pub fn pmtu() -> impl Strategy<Value = u32> {
    prop_oneof![Just(1024u32), Just(256), Just(512), Just(2048), Just(4096)]
}

/// Message lengths 0..=256 KiB, biased towards small and PMTU-boundary sizes; large ones
/// are rare.
pub fn len() -> impl Strategy<Value = Len> {
    prop_oneof![
        2 => Just(Len::Bytes(0)),
        4 => (1u32..=64).prop_map(Len::Bytes),
        4 => (-1i16..=1).prop_map(|d| Len::Mtu { k: 1, d }),
        2 => (2u8..=4, -1i16..=1).prop_map(|(k, d)| Len::Mtu { k, d }),
        1 => (15u8..=17, -1i16..=1).prop_map(|(k, d)| Len::Mtu { k, d }),
        3 => (32u32..=8192).prop_map(|n| Len::Bytes(n | 1)),
        2 => (8193u32..=MAX_MSG).prop_map(Len::Bytes),
    ]
}

/// Small lengths only (for the cases where size is not the point).
pub fn small_len() -> impl Strategy<Value = Len> {
    prop_oneof![
        Just(Len::Bytes(1)),
        (1u32..=64).prop_map(Len::Bytes),
        (-1i16..=1).prop_map(|d| Len::Mtu { k: 1, d }),
        (65u32..=3000).prop_map(Len::Bytes),
    ]
}

pub fn off() -> impl Strategy<Value = u32> {
    prop_oneof![Just(0u32), 0u32..64, 0u32..4100]
}

pub fn side() -> impl Strategy<Value = Side> {
    prop_oneof![Just(Side::A), Just(Side::B)]
}

pub fn qp() -> impl Strategy<Value = u8> {
    prop_oneof![2 => Just(0u8), 1 => 0u8..MAX_QPS as u8]
}

pub fn signaled() -> impl Strategy<Value = bool> {
    prop_oneof![3 => Just(true), 1 => Just(false)]
}

fn imm() -> impl Strategy<Value = Option<u32>> {
    prop_oneof![3 => Just(None), 1 => any::<u32>().prop_map(Some)]
}

pub fn write_op(len: impl Strategy<Value = Len>) -> impl Strategy<Value = Op> {
    (
        qp(),
        side(),
        len,
        off(),
        off(),
        imm(),
        any::<bool>(),
        signaled(),
    )
        .prop_map(
            |(qp, from, len, local_off, remote_off, imm, inline, signaled)| Op::Write {
                qp,
                from,
                len,
                local_off,
                remote_off,
                imm,
                inline,
                signaled,
            },
        )
}

fn extra() -> impl Strategy<Value = SendExtra> {
    prop_oneof![
        3 => Just(SendExtra::None),
        1 => any::<u32>().prop_map(SendExtra::Imm),
        1 => Just(SendExtra::Inv),
    ]
}

pub fn send_op(len: impl Strategy<Value = Len>) -> impl Strategy<Value = Op> {
    (
        qp(),
        side(),
        len,
        off(),
        off(),
        prop_oneof![Just(0u32), 0u32..100],
        extra(),
        any::<bool>(),
        signaled(),
    )
        .prop_map(
            |(qp, from, len, local_off, remote_off, slack, extra, inline, signaled)| Op::Send {
                qp,
                from,
                len,
                local_off,
                remote_off,
                slack,
                extra,
                inline,
                signaled,
            },
        )
}

pub fn read_op(len: impl Strategy<Value = Len>) -> impl Strategy<Value = Op> {
    (qp(), side(), len, off(), off(), any::<bool>(), signaled()).prop_map(
        |(qp, from, len, local_off, remote_off, after_write, signaled)| Op::Read {
            qp,
            from,
            len,
            local_off,
            remote_off,
            after_write,
            signaled,
        },
    )
}

pub fn cmp_swap_op() -> impl Strategy<Value = Op> {
    (
        qp(),
        side(),
        0..ATOM_WORDS,
        any::<bool>(),
        any::<u64>(),
        signaled(),
    )
        .prop_map(|(qp, from, word, hit, swap, signaled)| Op::CmpSwap {
            qp,
            from,
            word,
            hit,
            swap,
            signaled,
        })
}

pub fn fetch_add_op() -> impl Strategy<Value = Op> {
    let word = prop_oneof![(0..ATOM_WORDS).prop_map(Word::Private), Just(Word::Shared),];
    (qp(), side(), word, any::<u64>(), signaled()).prop_map(|(qp, from, word, add, signaled)| {
        Op::FetchAdd {
            qp,
            from,
            word,
            add,
            signaled,
        }
    })
}

/// Any operation, sizes from [`len`].
pub fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => write_op(len()),
        3 => send_op(len()),
        3 => read_op(len()),
        1 => cmp_swap_op(),
        2 => fetch_add_op(),
    ]
}

/// Any operation with a small size.
pub fn small_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => write_op(small_len()),
        3 => send_op(small_len()),
        3 => read_op(small_len()),
        1 => cmp_swap_op(),
        2 => fetch_add_op(),
    ]
}

pub fn psn_base() -> impl Strategy<Value = u32> {
    prop_oneof![Just(0u32), 0xff_fff0u32..=0xff_ffff, 0u32..0x100_0000]
}

pub fn depth() -> impl Strategy<Value = u32> {
    prop_oneof![Just(64u32), Just(2), Just(4), Just(8), Just(16)]
}

pub fn cq_depth() -> impl Strategy<Value = u32> {
    prop_oneof![Just(64u32), Just(1), Just(2), Just(8)]
}

pub fn max_rd_atomic() -> impl Strategy<Value = u8> {
    prop_oneof![Just(16u8), Just(1), Just(2), Just(4)]
}

/// The common shape of a case: seed, PMTU, PSNs, queue depths, batching.
pub fn base(
    ops: impl Strategy<Value = Vec<Op>>,
    sq: impl Strategy<Value = u32>,
    rq: impl Strategy<Value = u32>,
) -> impl Strategy<Value = Case> {
    (
        0u64..1 << 32,
        pmtu(),
        psn_base(),
        sq,
        rq,
        cq_depth(),
        1u8..=4,
        prop_oneof![3 => Just(0u8), 1 => 1u8..=4],
        max_rd_atomic(),
        ops,
    )
        .prop_map(
            |(seed, pmtu, psn_base, sq_depth, rq_depth, cq_depth, batch, fence, rd, ops)| Case {
                seed,
                pmtu,
                psn_base,
                sq_depth,
                rq_depth,
                cq_depth,
                batch,
                fence,
                conn: Conn {
                    max_rd_atomic: rd,
                    ..Conn::default()
                },
                ops,
                ..Case::default()
            },
        )
}

/// Faults of one direction: loss, duplication, reordering up to 5 %, corruption up to 3 %,
/// lost ACKs up to 10 %.
pub fn link_faults() -> impl Strategy<Value = LinkFaults> {
    (0u16..=50, 0u16..=50, 0u16..=50, 0u16..=30, 0u16..=100).prop_map(
        |(loss, dup, reorder, corrupt, ack_drop)| LinkFaults {
            loss,
            dup,
            reorder,
            corrupt,
            ack_drop,
        },
    )
}

/// (b) A case under random faults in both directions.
pub fn fault_case() -> impl Strategy<Value = Case> {
    (
        base(prop::collection::vec(op(), 1..=12), depth(), depth()),
        link_faults(),
        link_faults(),
    )
        .prop_map(|(mut c, ab, ba)| {
            c.faults = [ab, ba];
            c
        })
}

/// (c1) Mostly SENDs, receives posted late.
pub fn rnr_late_case() -> impl Strategy<Value = Case> {
    (
        base(
            prop::collection::vec(
                prop_oneof![3 => send_op(small_len()), 1 => write_op(small_len()), 1 => small_op()],
                1..=6,
            ),
            depth(),
            Just(64u32),
        ),
        prop_oneof![Just(20_000u32), 0u32..120_000],
    )
        .prop_map(|(mut c, delay)| {
            c.recv_delay = delay;
            c
        })
}

/// (c2) A SEND or WRITE_WITH_IMM that never finds a receive, rnr_retry < 7.
pub fn rnr_exhausted_case() -> impl Strategy<Value = Case> {
    (
        base(
            prop::collection::vec(small_op(), 0..=6),
            depth(),
            Just(64u32),
        ),
        0u8..4,
        any::<bool>(),
        small_len(),
        0u8..=6,
        0u8..=7,
    )
        .prop_map(|(mut c, at, imm_write, len, rnr_retry, retry_cnt)| {
            c.conn.rnr_retry = rnr_retry;
            c.conn.retry_cnt = retry_cnt;
            c.inject = Some((at, Inject::NoRecv { imm_write, len }));
            c
        })
}

/// (d) A request that must fail a protection check, among others that must not.
pub fn protection_case() -> impl Strategy<Value = Case> {
    (
        base(
            prop::collection::vec(small_op(), 0..=12),
            depth(),
            Just(64u32),
        ),
        0u8..6,
        inject(),
    )
        .prop_map(|(mut c, at, inj)| {
            c.inject = Some((at, inj));
            c
        })
}

fn bad_op_remote() -> impl Strategy<Value = BadOp> {
    prop_oneof![
        Just(BadOp::Write),
        Just(BadOp::WriteImm),
        Just(BadOp::Read),
        Just(BadOp::CmpSwap),
        Just(BadOp::FetchAdd),
    ]
}

fn bad_op_any() -> impl Strategy<Value = BadOp> {
    prop_oneof![
        Just(BadOp::Write),
        Just(BadOp::Send),
        Just(BadOp::WriteImm),
        Just(BadOp::Read),
        Just(BadOp::CmpSwap),
        Just(BadOp::FetchAdd),
    ]
}

pub fn remote_fault() -> impl Strategy<Value = RemoteFault> {
    prop_oneof![
        Just(RemoteFault::WrongTag),
        Just(RemoteFault::UnknownIndex),
        Just(RemoteFault::Deregistered),
        Just(RemoteFault::Invalidated),
        any::<u32>().prop_map(|over| RemoteFault::PastEnd { over }),
        any::<u32>().prop_map(|under| RemoteFault::BeforeStart { under }),
        Just(RemoteFault::MrLacksAccess),
        Just(RemoteFault::OtherPd),
        Just(RemoteFault::QpLacksAccess),
        (0u8..7).prop_map(|by| RemoteFault::Misaligned { by }),
    ]
}

pub fn local_fault() -> impl Strategy<Value = LocalFault> {
    prop_oneof![
        Just(LocalFault::WrongTag),
        any::<u32>().prop_map(|over| LocalFault::PastEnd { over }),
        Just(LocalFault::Unmapped),
        Just(LocalFault::NoLocalWrite),
        Just(LocalFault::OtherPd),
    ]
}

pub fn inject() -> impl Strategy<Value = Inject> {
    prop_oneof![
        3 => (bad_op_remote(), remote_fault(), small_len())
            .prop_map(|(op, fault, len)| Inject::Remote { op, fault, len }),
        2 => (bad_op_any(), local_fault(), small_len())
            .prop_map(|(op, fault, len)| Inject::Local { op, fault, len }),
        1 => (small_len(), any::<u32>())
            .prop_map(|(len, short)| Inject::RecvTooSmall { len, short }),
    ]
}
