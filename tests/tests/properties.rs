//! Property tests of the behavioural NIC through the driver (verification ladder step 2).
//!
//! Every property runs `ROCENIC_PROPTEST_CASES` cases (default 1000) with failure
//! persistence off; `PROPTEST_RNG_SEED=<n>` pins the generator to reproduce a run. A failing
//! case prints the shrunk `Case` (ops, seed, PMTU, queue depths, faults) and a report: what
//! differed, the concrete plan (zones, keys, SQ/RQ positions, required fates) and the
//! devices' counters and link statistics.
//!
//! Every property also checks, through `check_run`: each work request completes exactly
//! once, in order per QP, with the status the ABI requires; both hosts' memory equals the
//! reference image byte for byte (gaps between zones included); atomics take effect once
//! (private words exactly, shared counters by prefix sums); neither IOMMU refused a DMA and
//! the devices counted no DMA fault; every QP ends in the state it must; every delivered
//! corrupted frame was dropped and counted, never acted upon.

mod common;

use proptest::prelude::*;

use common::*;
use rocenic_driver::{Counter, WcStatus};
use rocenic_tests::case::*;
use rocenic_tests::corrupt::{corrupt_and_inject, Pick};
use rocenic_tests::{run_case, Outcome};

fn fail(o: &Outcome, extra: &[String]) -> TestCaseError {
    TestCaseError::fail(format!("\n{}", o.report(extra)))
}

fn run(case: &Case) -> Result<Outcome, TestCaseError> {
    run_case(case).map_err(TestCaseError::fail)
}

proptest! {
    #![proptest_config(config())]

    /// (a) No faults: exact completions and memory, and the wire carried no
    /// retransmission, NAK, timeout, duplicate or drop. (Receive queues are deep enough for
    /// every receive to be posted first, so a correct device never needs an RNR NAK.)
    #[test]
    fn no_faults_exact(case in base(prop::collection::vec(op(), 1..=16), depth(), Just(64u32))) {
        let o = run(&case)?;
        let mut extra = Vec::new();
        for side in Side::BOTH {
            for c in [
                Counter::Retransmits,
                Counter::AckTimeouts,
                Counter::NaksSent,
                Counter::NaksReceived,
                Counter::RnrNaksSent,
                Counter::RnrNaksReceived,
                Counter::Duplicates,
                Counter::PsnSeqDrops,
                Counter::IcrcDrops,
                Counter::MalformedDrops,
                Counter::UnknownQpDrops,
            ] {
                let v = o.counter(side, c);
                if v != 0 {
                    extra.push(format!("{side:?}: {} = {v} on a fault-free wire", c.name()));
                }
            }
        }
        if !o.failures.is_empty() || !extra.is_empty() {
            return Err(fail(&o, &extra));
        }
    }

    /// (b) Random faults per direction (loss, duplication, reordering up to 5 %, corruption
    /// up to 3 %, up to 10 % of ACKs dropped by a filter) with retry_cnt 7, rnr_retry 7 and
    /// a short ACK timeout: every request still succeeds exactly once, memory is exact, and
    /// every delivered corrupted frame was dropped (by the ICRC when only the ICRC covers
    /// the flipped bit) and never acted upon.
    #[test]
    fn faults_recovered(case in fault_case()) {
        let o = run(&case)?;
        if !o.failures.is_empty() {
            return Err(fail(&o, &[]));
        }
    }

    /// (c1) Receives posted late: the responder answers RNR NAKs until they arrive, and with
    /// rnr_retry 7 everything completes correctly.
    #[test]
    fn rnr_late_receives(case in rnr_late_case()) {
        let o = run(&case)?;
        let mut extra = Vec::new();
        // A consumer posted at once (within the first SQ-full of its stream) reaches the
        // responder long before receives posted this late: an RNR NAK must have happened.
        let bytes: u64 = o.plan.ops.iter().map(|op| op.len as u64 + 64).sum();
        let early_consumer = o.plan.recvs.iter().any(|r| {
            o.plan.ops[r.op].sq_index < case.sq_depth as usize
        });
        if early_consumer && case.recv_delay as u64 > 20_000 + bytes / 8 {
            let rnr: u64 = Side::BOTH.iter().map(|&s| o.counter(s, Counter::RnrNaksSent)).sum();
            if rnr == 0 {
                extra.push(format!(
                    "receives posted {} cycles late, but no RNR NAK",
                    case.recv_delay
                ));
            }
        }
        if !o.failures.is_empty() || !extra.is_empty() {
            return Err(fail(&o, &extra));
        }
    }

    /// (c2) No receive and rnr_retry < 7: the SEND (or WRITE_WITH_IMM) completes with
    /// RNR_RETRY_EXC_ERR after exactly rnr_retry + 1 RNR NAKs (whatever retry_cnt is), later
    /// WRs on the QP are flushed, the responder stays in RTS, and nothing of the failed
    /// request is placed (a multi-packet WRITE_WITH_IMM excepted: the receive is looked for
    /// at its last packet).
    #[test]
    fn rnr_retry_exhausted(case in rnr_exhausted_case()) {
        let o = run(&case)?;
        let mut extra = Vec::new();
        let rnr = o.counter(Side::A, Counter::RnrNaksReceived);
        if rnr != case.conn.rnr_retry as u64 + 1 {
            extra.push(format!(
                "A received {rnr} RNR NAKs, expected rnr_retry + 1 = {}",
                case.conn.rnr_retry + 1
            ));
        }
        if !o.failures.is_empty() || !extra.is_empty() {
            return Err(fail(&o, &extra));
        }
    }

    /// (d) Protection: a bad, stale or invalidated rkey, bounds, a missing MR or QP access
    /// flag, another PD, a misaligned atomic or a too-small receive buffer fails with
    /// REM_ACCESS_ERR / REM_INV_REQ_ERR (and the matching AETH syndrome) as docs/abi.md says;
    /// both QPs enter ERR, later WRs and receives flush, and the responder's memory holds
    /// exactly the effects of the requests before it. A bad local SGE fails with
    /// LOC_PROT_ERR without touching the wire or the IOMMU. Other QPs are unaffected.
    #[test]
    fn protection_errors(case in protection_case()) {
        let o = run(&case)?;
        if !o.failures.is_empty() {
            return Err(fail(&o, &[]));
        }
    }

    /// (f) Corrupted frames: real frames of a run with 1 to 3 protected bits flipped,
    /// injected into a fresh pair set up like the one that sent them, change nothing but
    /// the drop counters; the same frames unflipped pass the parser.
    #[test]
    fn corrupted_frames_ignored(
        case in base(prop::collection::vec(small_op(), 1..=4), Just(64u32), Just(64u32)),
        picks in prop::collection::vec(
            (any::<u16>(), prop::collection::vec(any::<u32>(), 1..=3))
                .prop_map(|(frame, bits)| Pick { frame, bits }),
            1..=8,
        ),
    ) {
        let (failures, report) =
            corrupt_and_inject(&case, &picks).map_err(TestCaseError::fail)?;
        if !failures.is_empty() {
            return Err(TestCaseError::fail(format!(
                "\n- {}\n{report}",
                failures.join("\n- ")
            )));
        }
    }
}

/// (e) A WQE whose SGE points at an address no MR (and no IOMMU mapping) covers: the device
/// refuses it at fetch with LOC_PROT_ERR, flushes what follows, and never issues the DMA.
#[test]
fn sge_outside_every_mr_is_refused_without_dma() {
    for op in [
        BadOp::Write,
        BadOp::Send,
        BadOp::WriteImm,
        BadOp::Read,
        BadOp::CmpSwap,
        BadOp::FetchAdd,
    ] {
        let case = Case {
            inject: Some((
                1,
                Inject::Local {
                    op,
                    fault: LocalFault::Unmapped,
                    len: Len::Bytes(64),
                },
            )),
            ops: vec![
                Op::Write {
                    qp: 0,
                    from: Side::A,
                    len: Len::Bytes(100),
                    local_off: 0,
                    remote_off: 0,
                    imm: None,
                    inline: false,
                    signaled: true,
                },
                Op::Read {
                    qp: 0,
                    from: Side::A,
                    len: Len::Bytes(100),
                    local_off: 0,
                    remote_off: 0,
                    after_write: false,
                    signaled: true,
                },
            ],
            ..Case::default()
        };
        let o = run_case(&case).expect("setup");
        assert!(o.failures.is_empty(), "{case:?}\n{}", o.report(&[]));
        let wcs = &o.run.send[&(Side::A, 0)];
        assert_eq!(wcs.len(), 3, "{wcs:?}");
        assert_eq!(wcs[1].status, WcStatus::LocProtErr);
        assert_eq!(wcs[2].status, WcStatus::WrFlushErr);
        for side in Side::BOTH {
            assert!(o.run.dma_faults[side.idx()].is_empty());
            assert_eq!(o.counter(side, Counter::DmaFaults), 0);
        }
    }
}
