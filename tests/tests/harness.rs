//! Self-tests of the harness: the checks catch what they are meant to catch, so a passing
//! property means something.

use rocenic_tests::case::*;
use rocenic_tests::check::check_run;
use rocenic_tests::plan::Zone;
use rocenic_tests::wire::{protect, Protect, EXT_AT};
use rocenic_tests::{run_case, run_case_with, Outcome};

fn mixed() -> Case {
    Case {
        ops: vec![
            Op::Write {
                qp: 0,
                from: Side::A,
                len: Len::Mtu { k: 2, d: 1 },
                local_off: 3,
                remote_off: 5,
                imm: None,
                inline: false,
                signaled: true,
            },
            Op::Send {
                qp: 1,
                from: Side::B,
                len: Len::Bytes(100),
                local_off: 1,
                remote_off: 7,
                slack: 3,
                extra: SendExtra::Imm(0x1234),
                inline: false,
                signaled: true,
            },
            Op::FetchAdd {
                qp: 0,
                from: Side::A,
                word: Word::Shared,
                add: 5,
                signaled: true,
            },
            Op::FetchAdd {
                qp: 1,
                from: Side::A,
                word: Word::Shared,
                add: 7,
                signaled: true,
            },
        ],
        ..Case::default()
    }
}

fn recheck(o: &Outcome) -> Vec<String> {
    check_run(&o.plan, &o.exp, &o.run, &o.pair)
}

#[test]
fn a_correct_run_passes() {
    let o = run_case(&mixed()).unwrap();
    assert!(o.failures.is_empty(), "{}", o.report(&[]));
}

#[test]
fn catches_a_wrong_byte() {
    let mut o = run_case(&mixed()).unwrap();
    let at = o.plan.layout[1].start(Zone::W(0)) + 5 + 1000;
    o.run.mem[1][at] ^= 1;
    let f = recheck(&o);
    assert!(
        f.iter()
            .any(|x| x.contains("memory differs") && x.contains("W(qp0)+1005")),
        "{f:?}"
    );
    // A stray byte in a gap between zones is caught too.
    let mut o = run_case(&mixed()).unwrap();
    let at = o.plan.layout[1].start(Zone::Src) - 1;
    o.run.mem[1][at] ^= 0x80;
    assert!(
        recheck(&o).iter().any(|x| x.contains("gap")),
        "{:?}",
        recheck(&o)
    );
}

#[test]
fn catches_missing_extra_and_reordered_completions() {
    let mut o = run_case(&mixed()).unwrap();
    o.run.send.get_mut(&(Side::A, 0)).unwrap().pop();
    assert!(recheck(&o).iter().any(|x| x.contains("missing")));

    let mut o = run_case(&mixed()).unwrap();
    let q = o.run.recv.get_mut(&(Side::A, 1)).unwrap();
    q.push(q[0]);
    assert!(recheck(&o).iter().any(|x| x.contains("unexpected")));

    let mut o = run_case(&mixed()).unwrap();
    let q = o.run.send.get_mut(&(Side::A, 0)).unwrap();
    q.swap(0, 1);
    assert!(recheck(&o).iter().any(|x| x.contains("differs in")));

    let mut o = run_case(&mixed()).unwrap();
    o.run.recv.get_mut(&(Side::A, 1)).unwrap()[0].imm_data = Some(0x1235);
    assert!(recheck(&o).iter().any(|x| x.contains("imm")));
}

#[test]
fn catches_an_atomic_applied_twice() {
    // The shared counter's second fetch-add returning the first one's original value.
    let mut o = run_case(&mixed()).unwrap();
    let uses = o.exp.shared[1].1.clone();
    assert_eq!(uses.len(), 2);
    let v0 = o.run.mem[0][uses[0].result_off..uses[0].result_off + 8].to_vec();
    o.run.mem[0][uses[1].result_off..uses[1].result_off + 8].copy_from_slice(&v0);
    assert!(
        recheck(&o).iter().any(|x| x.contains("prefix-sum")),
        "{:?}",
        recheck(&o)
    );
}

#[test]
fn frame_regions() {
    let o = run_case_with(&mixed(), true).unwrap();
    let log = o.pair.logs[0].borrow();
    let f = log.frames.first().expect("a frame").clone();
    assert_eq!(protect(&f, 0), Protect::May);
    assert_eq!(protect(&f, 13), Protect::Must);
    assert_eq!(protect(&f, 15), Protect::Must);
    assert_eq!(protect(&f, 40), Protect::May);
    assert_eq!(protect(&f, 46), Protect::May);
    assert_eq!(protect(&f, EXT_AT), Protect::Must);
    assert_eq!(protect(&f, f.len() - 1), Protect::OnlyIcrc);
}

#[test]
fn shadow_fault_stream_matches_the_link() {
    let f = LinkFaults {
        corrupt: 200,
        dup: 200,
        ..LinkFaults::default()
    };
    let mut case = mixed();
    case.faults = [f, f];
    let o = run_case(&case).unwrap();
    assert!(o.failures.is_empty(), "{}", o.report(&[]));
    let n: usize = o.run.corrupted.iter().map(|c| c.len()).sum();
    assert!(n > 0, "no corruption at 20 %");
}

#[test]
fn catches_a_dma_into_unnamed_bytes() {
    let mut o = run_case(&mixed()).unwrap();
    assert!(!o.run.buffer_dma[0].is_empty(), "the DMA log is empty");
    assert!(recheck(&o).is_empty());
    // A read of the source zone past what the WRITE names.
    let at = o.plan.layout[0].start(Zone::Src) + 3 + 2 * 1024 + 1;
    o.run.buffer_dma[0].push((1, at, 16, false));
    assert!(
        recheck(&o)
            .iter()
            .any(|x| x.contains("no work request names")),
        "{:?}",
        recheck(&o)
    );
}
