//! Differential tests (verification ladder step 3): the same random workload runs through
//! the driver on two model NICs and on a pair with the Verilated RTL engine in it, and the
//! two runs must agree.
//!
//! Every op of a case is issued by A, at PMTU 256..4096, of up to 64 KiB, every kind
//! back to back over several QPs ([`all_from_a`]), sometimes with one request that fails.
//! The RTL engine is the **responder** (B) of a model requester, the **requester** (A) of
//! a model responder, or both ends are RTL engines. The engine is slower than line rate;
//! its RX buffer asks the link for a pause (PFC) before it would drop a frame, so the
//! frames are the model's and only the timing differs. Without faults, for each case:
//!
//! - both runs pass every check the property tests make against the reference executor
//!   (completions, memory, DMA faults, QP states: `check::check_run`);
//! - per direction and per QP, the frames are the same, byte for byte and in the same
//!   order (the ACK rule is per packet, `model/src/responder.rs`, so timing does not
//!   change which ACKs are sent), except that after a NAK that ends the connection one
//!   run's requests need only begin the other's (how many more the requester sent before
//!   it saw the NAK is timing);
//! - the completions of every queue (a flushed request's `byte_len` aside) and both hosts'
//!   memory are equal;
//! - every QP's counters (QUERY_QP_COUNTERS at the end of the run) are equal, `TxFrames`
//!   and `TxBytes` included, all but A's `TxFrames`/`TxBytes` and B's `UnknownQpDrops`
//!   after a NAK that ends the connection ([`qp_counter_differences`]).
//!
//! In every run, each side's per-QP counters sum to at most its global counters, and on
//! both sides each QP's `TxFrames`/`TxBytes` are the frames and bytes that QP put on the
//! wire (the harness logs them).
//!
//! Under seeded faults (loss, duplication, reordering, corruption, dropped ACKs, late
//! receives), where timing decides what is retransmitted: both runs pass the reference
//! executor's checks, the completions and memory are equal, and every frame the RTL run
//! sent passes the wire checks ([`faulted_differences`]).
//!
//! `ROCENIC_RTL_CASES` sets the responder property's case count (default 200; the
//! requester's runs half as many, the one with two engines a quarter, the faulted one a
//! tenth). The generator's seed is printed
//! first; `PROPTEST_RNG_SEED=<seed>` replays a run, and `ROCENIC_RTL_TRACE=FILE.vcd`
//! (or `.fst`) writes the RTL's waveform (of the last case run: pair it with
//! `ROCENIC_RTL_CASES=1` and the seed of a failing run to trace just that case).

mod common;

use std::collections::BTreeMap;

use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, RngSeed};

use common::*;
use rocenic_driver::{Wc, WcStatus};
use rocenic_proto::wire::{BthPacket, RoceRepr, BTH_LEN, ROCE_HEADERS_LEN};
use rocenic_tests::case::*;
use rocenic_tests::exec::ExecOpts;
use rocenic_tests::pair::{Nic, Setup};
use rocenic_tests::wire::describe_frame;
use rocenic_tests::{run_case_setup, setup_of, Outcome};

/// Cases per differential property: `ROCENIC_RTL_CASES`, default 200.
fn rtl_cases() -> u32 {
    std::env::var("ROCENIC_RTL_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200)
}

/// The generator's seed: `PROPTEST_RNG_SEED` or a fresh one, printed so that a failure can
/// be replayed.
fn rng_seed() -> u64 {
    let seed = std::env::var("PROPTEST_RNG_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        });
    eprintln!("differential: PROPTEST_RNG_SEED={seed}");
    seed
}

fn rtl_config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        rng_seed: RngSeed::Fixed(rng_seed()),
        // Each shrink step runs the RTL: a few dozen are enough to make a case readable;
        // `PROPTEST_MAX_SHRINK_ITERS` asks for more when a case is being hunted down.
        max_shrink_iters: std::env::var("PROPTEST_MAX_SHRINK_ITERS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(16),
        ..config()
    }
}

/// Cycles after the last expected completion of a fault-free case: nothing is
/// retransmitted, so this only has to outlast the last ACKs and CQE writes.
const SETTLE: u64 = 4_000;
/// Cycles the model run may take to reach its expected completions (a fault-free case of
/// 8 ops needs tens of thousands).
const MODEL_BUDGET: u64 = 1_000_000;

/// Cycles a faulted model run may take: a long READ at PMTU 256 over a lossy link with ACK
/// timeout 6 (65 536 cycles) can meet more than a dozen timeouts (PROPTEST_RNG_SEED
/// 1796111629308561532: 16 on a 46 594-byte READ, over 1 M cycles). The model is cheap.
const FAULTED_MODEL_BUDGET: u64 = 8_000_000;

/// Cycles a faulted RTL run may take at least: a dozen ACK timeouts of [`faulted_case`].
const FAULTED_RTL_BUDGET: u64 = 1_000_000;

/// Cycles the RTL run may take: a generous multiple of what the model needed; more means
/// it is stuck (the RTL runs about 50 000 cycles a second, so a stuck case must cost
/// seconds, not the property tests' 100 M-cycle budget).
fn rtl_budget(model_cycles: u64) -> u64 {
    (20 * model_cycles).max(50_000)
}

/// Message lengths up to 64 KiB (256 packets at PMTU 256), biased towards small and
/// PMTU-boundary sizes.
fn diff_len() -> impl Strategy<Value = Len> {
    prop_oneof![
        2 => Just(Len::Bytes(0)),
        4 => (1u32..=64).prop_map(Len::Bytes),
        4 => (-1i16..=1).prop_map(|d| Len::Mtu { k: 1, d }),
        2 => (2u8..=4, -1i16..=1).prop_map(|(k, d)| Len::Mtu { k, d }),
        3 => (32u32..=16384).prop_map(Len::Bytes),
        1 => (16385u32..=65536).prop_map(Len::Bytes),
    ]
}

/// Any operation, of a [`diff_len`].
fn diff_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => write_op(diff_len()),
        3 => send_op(diff_len()),
        3 => read_op(diff_len()),
        1 => cmp_swap_op(),
        2 => fetch_add_op(),
    ]
}

/// A fault-free case of 1 to 8 [`diff_op`]s with generated queue depths, as generated
/// (each op from either side): the properties below reshape it.
fn diff_case() -> impl Strategy<Value = Case> {
    base(
        prop::collection::vec(diff_op(), 1..=8),
        depth(),
        Just(64u32),
    )
}

/// A fault-free case of up to 8 ops of up to 64 KiB, all issued by A, sometimes with one
/// request that must fail a protection check, at PMTU 256..4096 ([`all_from_a`]).
fn a_issues_everything() -> impl Strategy<Value = Case> {
    (diff_case(), prop::option::weighted(0.2, (0u8..6, inject()))).prop_map(|(mut c, inject)| {
        all_from_a(&mut c);
        c.inject = inject;
        c
    })
}

/// Makes A issue every op; the ops keep their QPs and queue depths, so messages go back
/// to back, faster than the RTL takes them (its RX buffer pauses the link). A fetch-add
/// on the shared counter moves to QP 0: the values it returns depend on the order of the
/// QPs' atomics, and no order between QPs is defined (the model's scheduler sends the
/// lowest ready QP first, the RTL's the first rung).
fn all_from_a(c: &mut Case) {
    for op in &mut c.ops {
        *op.from_mut() = Side::A;
        if let Op::FetchAdd {
            qp,
            word: Word::Shared,
            ..
        } = op
        {
            *qp = 0;
        }
    }
}

fn run_on(case: &Case, nics: [Nic; 2], budget: u64) -> Result<Outcome, TestCaseError> {
    let setup = Setup {
        nics,
        ..setup_of(case, true)
    };
    // Under faults, a retransmission (or a duplicate) may still come after the last
    // completion, within one ACK timeout.
    let settle = match case.is_faulted() {
        false => SETTLE,
        true => SETTLE + (1024 << case.conn.timeout),
    };
    let opts = ExecOpts::for_case(case, settle, budget);
    let t = std::time::Instant::now();
    let o = run_case_setup(case, &setup, opts, |_| {}).map_err(TestCaseError::fail)?;
    eprintln!(
        "  {nics:?}: {} ops, {} cycles, {:.2} s",
        case.ops.len(),
        o.run.cycles,
        t.elapsed().as_secs_f64()
    );
    Ok(o)
}

/// The frames of one direction grouped by destination QP, in the order they were sent.
fn frames_by_qp(o: &Outcome, dir: usize) -> BTreeMap<u32, Vec<Vec<u8>>> {
    let mut by_qp: BTreeMap<u32, Vec<Vec<u8>>> = BTreeMap::new();
    for f in &o.pair.logs[dir].borrow().frames {
        let qpn = f
            .get(ROCE_HEADERS_LEN - BTH_LEN..)
            .and_then(|b| BthPacket::new_checked(b).ok())
            .map_or(u32::MAX, |b| b.dest_qp());
        by_qp.entry(qpn).or_default().push(f.clone());
    }
    by_qp
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The completions with what timing decides left out: a flushed work request's length is
/// its message's when the requester had fetched it before the error and 0 when it was
/// still in the send queue (verbs defines only `wr_id`, `status`, `qp_num` and
/// `vendor_err` of a completion in error).
fn comparable(c: &BTreeMap<(Side, usize), Vec<Wc>>) -> BTreeMap<(Side, usize), Vec<Wc>> {
    let mut c = c.clone();
    for wc in c.values_mut().flatten() {
        if wc.status == WcStatus::WrFlushErr {
            wc.byte_len = 0;
        }
    }
    c
}

/// Whether B's QP `qpn` answered A with a NAK other than a PSN sequence error (the QP
/// errors): a B->A frame to A's QP connected to it carrying such a syndrome.
fn ends_with_error(o: &Outcome, qpn: u32) -> bool {
    use rocenic_proto::wire::{NakCode, Syndrome};
    let [a, b] = &o.pair.ends;
    let Some(q) = b.qps.iter().position(|qp| qp.qp_num == qpn) else {
        return false;
    };
    let peer = a.qps[q].qp_num;
    o.pair.logs[1].borrow().frames.iter().any(|f| {
        RoceRepr::parse(f).is_ok_and(|(r, _)| {
            r.bth.dest_qp == peer
                && matches!(
                    r.ext.aeth.map(|a| a.syndrome),
                    Some(Syndrome::Nak(c)) if c != NakCode::PsnSequenceError
                )
        })
    })
}

/// Where `got` (the RTL run) and `want` (the model run) differ, as lines of a report.
fn differences(got: &Outcome, want: &Outcome) -> Vec<String> {
    let mut d = Vec::new();
    for (dir, name) in ["A->B", "B->A"].iter().enumerate() {
        let (g, w) = (frames_by_qp(got, dir), frames_by_qp(want, dir));
        let qps: std::collections::BTreeSet<u32> = g.keys().chain(w.keys()).copied().collect();
        for qpn in qps {
            let (gf, wf) = (&g.get(&qpn), &w.get(&qpn));
            let (gf, wf) = (gf.map_or(&[][..], |v| v), wf.map_or(&[][..], |v| v));
            // After a NAK that ends the connection, how many more requests the requester
            // sends before it sees the NAK is timing: one run's frames must then be the
            // start of the other's.
            let n = if dir == 0 && (ends_with_error(got, qpn) || ends_with_error(want, qpn)) {
                gf.len().min(wf.len())
            } else {
                gf.len().max(wf.len())
            };
            if let Some(i) = (0..n).find(|&i| gf.get(i) != wf.get(i)) {
                let show = |f: Option<&Vec<u8>>| {
                    f.map_or("(none)".into(), |f| {
                        format!("{}\n         {}", describe_frame(f), hex(f))
                    })
                };
                d.push(format!(
                    "{name} to QP {qpn:#x}: frame {i} of {} (RTL run) / {} (model run) differs:\n  \
                     RTL:   {}\n  model: {}",
                    gf.len(),
                    wf.len(),
                    show(gf.get(i)),
                    show(wf.get(i)),
                ));
            }
        }
    }
    d.extend(result_differences(got, want));
    d.extend(qp_counter_differences(got, want));
    d
}

/// Where the per-QP counters of a fault-free `got` (the RTL run) and `want` (the model
/// run) differ: every counter of every QP (`TxFrames`/`TxBytes` too: the same frames
/// leave both runs) but, where B's QP ended the connection with a NAK, A's
/// `TxFrames`/`TxBytes` and B's `UnknownQpDrops` (the requests A sent after it are
/// timing, as `differences` allows for the frames).
fn qp_counter_differences(got: &Outcome, want: &Outcome) -> Vec<String> {
    use rocenic_driver::Counter;
    let mut d = Vec::new();
    for side in Side::BOTH {
        for q in 0..want.plan.nqp {
            let (g, w) = (
                got.run.qp_counters.get(&(side, q)),
                want.run.qp_counters.get(&(side, q)),
            );
            let (Some(g), Some(w)) = (g, w) else {
                d.push(format!(
                    "{side:?}'s QP {q}: no QP counters (RTL run {}, model run {})",
                    g.is_some(),
                    w.is_some()
                ));
                continue;
            };
            // After a NAK that ends B's connection, how many more requests A sent (A's
            // TxFrames/TxBytes; B's QP in ERR drops them as UnknownQpDrops) is timing, as
            // for the frames. (Each run's TX counts are still its own wire's:
            // `qp_counter_invariants`.)
            let ended = {
                let b_qpn = |o: &Outcome| o.pair.ends[1].qps[q].qp_num;
                ends_with_error(got, b_qpn(got)) || ends_with_error(want, b_qpn(want))
            };
            for c in Counter::ALL {
                let timing = match side {
                    Side::A => matches!(c, Counter::TxFrames | Counter::TxBytes),
                    Side::B => c == Counter::UnknownQpDrops,
                };
                if ended && timing {
                    continue;
                }
                let (gv, wv) = (g[c as usize], w[c as usize]);
                if gv != wv {
                    d.push(format!(
                        "{side:?}'s QP {q} counter {}: RTL {gv}, model {wv}",
                        c.name()
                    ));
                }
            }
        }
    }
    d
}

/// What must hold of one run's per-QP counters (`who`: "RTL" or "model"): per counter,
/// the QPs' sum is at most the global counter; each QP's `TxFrames`/`TxBytes`
/// are the frames and bytes it sent, as the link logs show them (a log prefix between
/// the lengths before and after the counters were read).
fn qp_counter_invariants(o: &Outcome, who: &str) -> Vec<String> {
    use rocenic_driver::Counter;
    let mut d = Vec::new();
    for side in Side::BOTH {
        for c in Counter::ALL {
            let sum: u64 = (0..o.plan.nqp)
                .filter_map(|q| o.run.qp_counters.get(&(side, q)))
                .map(|v| v[c as usize])
                .sum();
            let global = o.counter(side, c);
            if sum > global {
                d.push(format!(
                    "{who} run: {side:?}'s QP counters {} sum to {sum}, more than the global {global}",
                    c.name()
                ));
            }
        }
        let dir = side.idx();
        let log = o.pair.logs[dir].borrow();
        let (before, after) = o.run.qp_counters_window[dir];
        let peer = &o.pair.ends[1 - dir];
        for q in 0..o.plan.nqp {
            let Some(v) = o.run.qp_counters.get(&(side, q)) else {
                continue;
            };
            let to = peer.qps[q].qp_num;
            let sent = |n: usize| {
                log.frames[..n]
                    .iter()
                    .filter(|f| {
                        f.get(ROCE_HEADERS_LEN - BTH_LEN..)
                            .and_then(|b| BthPacket::new_checked(b).ok())
                            .is_some_and(|b| b.dest_qp() == to)
                    })
                    .fold((0u64, 0u64), |(n, b), f| (n + 1, b + f.len() as u64))
            };
            let (lo, hi) = (sent(before), sent(after));
            let (frames, bytes) = (v[Counter::TxFrames as usize], v[Counter::TxBytes as usize]);
            if !(lo.0 <= frames && frames <= hi.0 && lo.1 <= bytes && bytes <= hi.1) {
                d.push(format!(
                    "{who} run: {side:?}'s QP {q} counted TxFrames {frames} TxBytes {bytes}, \
                     but sent {} frames / {} bytes ({} / {} counting frames sent while the \
                     counters were read)",
                    lo.0, lo.1, hi.0, hi.1
                ));
            }
        }
    }
    d
}

/// Where the results of `got` (the RTL run) and `want` (the model run) differ: every
/// queue's completions ([`comparable`]) and both hosts' memory.
fn result_differences(got: &Outcome, want: &Outcome) -> Vec<String> {
    let mut d = Vec::new();
    for (what, g, w) in [
        ("send", &got.run.send, &want.run.send),
        ("recv", &got.run.recv, &want.run.recv),
    ] {
        let (g, w) = (&comparable(g), &comparable(w));
        if g != w {
            d.push(format!(
                "{what} completions differ:\n  RTL:   {g:?}\n  model: {w:?}"
            ));
        }
    }
    for side in Side::BOTH {
        let (g, w) = (&got.run.mem[side.idx()], &want.run.mem[side.idx()]);
        if let Some(i) = (0..g.len().max(w.len())).find(|&i| g.get(i) != w.get(i)) {
            d.push(format!("{side:?}'s memory differs first at byte {i}"));
        }
    }
    d
}

/// Where a faulted run `got` (the RTL's) and `want` (the model's) differ: timing decides
/// which frames are lost, retransmitted or NAKed, so only the completions and memory are
/// compared, and every frame either side sent must pass the wire checks (parse, lengths,
/// checksums, ICRC).
fn faulted_differences(got: &Outcome, want: &Outcome) -> Vec<String> {
    let mut d = Vec::new();
    for (dir, name) in ["A->B", "B->A"].iter().enumerate() {
        for (i, f) in got.pair.logs[dir].borrow().frames.iter().enumerate() {
            if let Err(e) = RoceRepr::parse(f) {
                d.push(format!(
                    "{name}: frame {i} sent in the RTL run fails the wire checks ({e:?}): {}",
                    hex(f)
                ));
            }
        }
    }
    d.extend(result_differences(got, want));
    d
}

/// Runs `case` on two model NICs and on `nics`, and reports where they differ.
fn compare(case: &Case, nics: [Nic; 2]) -> Result<(), TestCaseError> {
    let faulted = case.is_faulted();
    let model_budget = match faulted {
        false => MODEL_BUDGET,
        true => FAULTED_MODEL_BUDGET,
    };
    let want = run_on(case, [Nic::Model, Nic::Model], model_budget)?;
    // Under faults the RTL may meet more ACK timeouts than the model did.
    let budget = match faulted {
        false => rtl_budget(want.run.cycles),
        true => rtl_budget(want.run.cycles).max(FAULTED_RTL_BUDGET),
    };
    let got = run_on(case, nics, budget)?;
    let mut differences = if !faulted {
        differences(&got, &want)
    } else {
        faulted_differences(&got, &want)
    };
    differences.extend(qp_counter_invariants(&got, "RTL"));
    differences.extend(qp_counter_invariants(&want, "model"));
    let mut report = Vec::new();
    if !want.failures.is_empty() {
        report.push(format!(
            "the model run fails its own checks:\n{}",
            want.report(&[])
        ));
    }
    if !got.failures.is_empty() {
        report.push(format!(
            "the RTL run fails the checks:\n{}",
            got.report(&[])
        ));
    }
    report.extend(differences);
    if report.is_empty() {
        return Ok(());
    }
    Err(TestCaseError::fail(format!(
        "\n{}\nreproduce: PROPTEST_RNG_SEED=<the seed printed above> \
         ROCENIC_RTL_TRACE=/tmp/rtl.vcd cargo test --release -p rocenic-tests \
         --test differential\n{:?}",
        report.join("\n"),
        case
    )))
}

proptest! {
    #![proptest_config(rtl_config(rtl_cases()))]

    /// The RTL engine as the responder of a model requester, no faults: the same frames
    /// per direction and QP, the same completions and memory as two model NICs, and both
    /// runs right by the reference executor.
    #[test]
    fn rtl_responder_matches_the_model(case in a_issues_everything()) {
        compare(&case, [Nic::Model, Nic::Rtl])?;
    }
}

proptest! {
    #![proptest_config(rtl_config(rtl_cases() / 2))]

    /// The RTL engine as the requester of a model responder, no faults (but sometimes a
    /// request that fails, and the send queue's flush after it): the same frames per
    /// direction and QP, the same completions and memory as two model NICs, and both runs
    /// right by the reference executor.
    #[test]
    fn rtl_requester_matches_the_model(case in a_issues_everything()) {
        compare(&case, [Nic::Rtl, Nic::Model])?;
    }
}

proptest! {
    #![proptest_config(rtl_config(rtl_cases() / 4))]

    /// Two RTL engines, no faults: the same frames per direction and QP, the same
    /// completions and memory as two model NICs, and both runs right by the reference
    /// executor.
    #[test]
    fn two_rtl_engines_match_the_model(case in a_issues_everything()) {
        compare(&case, [Nic::Rtl, Nic::Rtl])?;
    }
}

/// A [`diff_case`] under random faults in both directions (loss, duplication, reordering
/// up to 5 %, corruption up to 3 %, up to 10 % of ACKs dropped), in a third of the cases
/// with receives posted late (RNR NAKs), every op from A ([`all_from_a`]), and an ACK
/// timeout of 64 Ki cycles (the RTL runs about 10^5 cycles a second; the default's
/// 256 Ki cycles would make each lost tail cost seconds).
fn faulted_case() -> impl Strategy<Value = Case> {
    (
        diff_case(),
        link_faults(),
        link_faults(),
        prop_oneof![2 => Just(0u32), 1 => 5_000u32..60_000],
    )
        .prop_map(|(mut c, ab, ba, recv_delay)| {
            all_from_a(&mut c);
            c.faults = [ab, ba];
            c.recv_delay = recv_delay;
            c.conn.timeout = 6;
            c
        })
}

proptest! {
    #![proptest_config(rtl_config(rtl_cases() / 10))]

    /// Faults, the RTL engine as the responder of a model requester, as the requester of
    /// a model responder, and at both ends: both runs right by the reference executor (every
    /// request done exactly once, memory exact, no corrupted frame acted upon), the same
    /// completions per queue and the same memory as two model NICs, and every frame the
    /// RTL run sent passes the wire checks.
    #[test]
    fn rtl_matches_the_model_under_faults(case in faulted_case()) {
        compare(&case, [Nic::Model, Nic::Rtl])?;
        compare(&case, [Nic::Rtl, Nic::Model])?;
        compare(&case, [Nic::Rtl, Nic::Rtl])?;
    }
}

/// The RTL responder at PMTU 256 under a long WRITE sent at line rate by a model
/// requester: the frames are the model's (the RX buffer pauses the link instead of
/// dropping), but a responder at line rate would not need the pause, and the run would
/// take as many cycles as the model's (give or take the last ACK's DMA): it does since the
/// responder forwards a QP's contexts and a WRITE's checked range (4064 cycles both).
#[test]
fn rtl_responder_keeps_up_with_pmtu_256_at_line_rate() {
    let case = Case {
        seed: 34482,
        pmtu: 256,
        ops: vec![Op::Write {
            qp: 0,
            from: Side::A,
            len: Len::Bytes(65536),
            local_off: 0,
            remote_off: 0,
            imm: None,
            inline: false,
            signaled: true,
        }],
        ..Case::default()
    };
    let want = run_on(&case, [Nic::Model, Nic::Model], MODEL_BUDGET).unwrap();
    let got = run_on(&case, [Nic::Model, Nic::Rtl], rtl_budget(want.run.cycles)).unwrap();
    let drops = got.counter(Side::B, rocenic_driver::Counter::MalformedDrops);
    assert_eq!(drops, 0, "frames the RTL responder dropped");
    assert!(got.failures.is_empty(), "{}", got.report(&[]));
    assert!(differences(&got, &want).is_empty());
    assert!(
        got.run.cycles <= want.run.cycles + 1_000,
        "the RTL run took {} cycles, the model's {}",
        got.run.cycles,
        want.run.cycles
    );
}
