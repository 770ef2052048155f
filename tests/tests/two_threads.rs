//! The two-thread world (`rocenic_sim::World`, "Two threads") against the one-thread world:
//! the same seeded, lossy workload on two Verilated engines (and on two model NICs, which
//! stay on one thread: the comparison shows the knob changes nothing there either) gives
//! the same frames on both links, in order and bit for bit, the same completions, memory,
//! counters, link statistics and cycle counts. Needs verilator and g++ (the engine is
//! built, or taken from the cache, on first use); without them the RTL test fails with the
//! install command.

use rocenic_tests::case::*;
use rocenic_tests::exec::ExecOpts;
use rocenic_tests::pair::{Nic, Setup};
use rocenic_tests::{run_case_setup, settle_cycles, setup_of, Outcome};

/// A mix of every kind of operation from both sides over a lossy, duplicating,
/// reordering, corrupting cable that also drops ACKs.
fn lossy_case() -> Case {
    let faults = LinkFaults {
        loss: 60,
        dup: 30,
        reorder: 20,
        corrupt: 5,
        ack_drop: 50,
    };
    let write = |qp, from, len: u32, off| Op::Write {
        qp,
        from,
        len: Len::Bytes(len),
        local_off: off,
        remote_off: off,
        imm: None,
        inline: false,
        signaled: true,
    };
    Case {
        seed: 0x2_7e4d,
        pmtu: 1024,
        faults: [faults; 2],
        // A short ACK timeout (1024 << 6 cycles, far above the round trip) so the losses
        // are recovered, and the run settles, in fewer simulated cycles.
        conn: Conn {
            timeout: 6,
            ..Conn::default()
        },
        ops: vec![
            write(0, Side::A, 9000, 0),
            Op::Send {
                qp: 1,
                from: Side::B,
                len: Len::Bytes(3000),
                local_off: 0,
                remote_off: 0,
                slack: 0,
                extra: SendExtra::None,
                inline: false,
                signaled: true,
            },
            Op::Read {
                qp: 0,
                from: Side::A,
                len: Len::Bytes(5000),
                local_off: 0,
                remote_off: 0,
                after_write: false,
                signaled: true,
            },
            write(1, Side::B, 64, 16384),
            Op::FetchAdd {
                qp: 0,
                from: Side::A,
                word: Word::Shared,
                add: 7,
                signaled: true,
            },
            write(0, Side::A, 20000, 32768),
        ],
        ..Case::default()
    }
}

/// Runs `case` on `nics`, on one thread or (where the world allows it) two; returns the
/// outcome and the cycles the world ran on two threads after the setup.
fn run(case: &Case, nics: [Nic; 2], parallel: bool) -> (Outcome, u64) {
    let setup = Setup {
        nics,
        ..setup_of(case, true)
    };
    let opts = ExecOpts::for_case(case, settle_cycles(case), 20_000_000);
    let t = std::time::Instant::now();
    // The pair's setup (driver commands) runs before the hook, with the default.
    let mut at_hook = 0;
    let o = run_case_setup(case, &setup, opts, |pair| {
        let mut w = pair.world.borrow_mut();
        w.set_parallel(parallel);
        at_hook = w.parallel_cycles();
    })
    .unwrap_or_else(|e| panic!("cannot set up {nics:?}: {e}"));
    let p = o.pair.world.borrow().parallel_cycles() - at_hook;
    eprintln!(
        "  {nics:?} parallel={parallel}: {} cycles ({} of them on two threads), {:.2} s",
        o.run.cycles,
        p,
        t.elapsed().as_secs_f64()
    );
    (o, p)
}

/// Everything the two runs must share.
fn assert_same(one: &Outcome, two: &Outcome) {
    for dir in 0..2 {
        let (f1, f2) = (&one.pair.logs[dir], &two.pair.logs[dir]);
        assert_eq!(
            f1.borrow().frames,
            f2.borrow().frames,
            "frames on link {dir}"
        );
        assert_eq!(f1.borrow().acks_dropped, f2.borrow().acks_dropped);
    }
    assert_eq!(one.run.send, two.run.send, "send completions");
    assert_eq!(one.run.recv, two.run.recv, "receive completions");
    assert_eq!(one.run.mem, two.run.mem, "memory");
    assert_eq!(one.run.counters, two.run.counters, "device counters");
    assert_eq!(one.run.qp_counters, two.run.qp_counters, "QP counters");
    assert_eq!(one.run.links, two.run.links, "link statistics");
    assert_eq!(
        one.run.cycles, two.run.cycles,
        "cycles to the last completion"
    );
    let clock = |o: &Outcome| {
        let w = o.pair.world.borrow();
        (w.now(), w.steps())
    };
    assert_eq!(clock(one), clock(two), "world clock and executed cycles");
}

#[test]
fn two_rtl_engines_on_two_threads_match_one_thread() {
    let case = lossy_case();
    let (one, p1) = run(&case, [Nic::Rtl; 2], false);
    let (two, p2) = run(&case, [Nic::Rtl; 2], true);
    assert!(one.failures.is_empty(), "{}", one.report(&[]));
    assert_eq!(p1, 0, "set_parallel(false) ran cycles on two threads");
    // The engines are never idle: nearly every cycle runs on two threads.
    let steps = two.pair.world.borrow().steps();
    assert!(
        p2 * 10 >= steps * 9,
        "{p2} of {steps} cycles on two threads"
    );
    let lost: u64 = one.run.links.iter().map(|l| l.lost).sum();
    assert!(lost > 0, "the workload lost no frame: {:?}", one.run.links);
    assert_same(&one, &two);
}

#[test]
fn model_nics_are_unchanged_by_the_knob() {
    let case = lossy_case();
    let (one, _) = run(&case, [Nic::Model; 2], false);
    let (two, p2) = run(&case, [Nic::Model; 2], true);
    assert!(one.failures.is_empty(), "{}", one.report(&[]));
    // The model does not offer itself for a thread of its own (its tick is cheap).
    assert_eq!(p2, 0);
    assert_same(&one, &two);
}
