//! The rocenic property-test harness (verification ladder step 2): random workloads of
//! RDMA operations between two behavioural NICs, under random link faults, checked against
//! a reference executor that knows only the host ABI's rules.
//!
//! - [`case`]: what proptest generates and shrinks ([`case::Case`], a list of
//!   [`case::Op`]s plus connection and fault parameters), all `Debug`-readable;
//! - [`plan`]: a case made concrete (memory zones, keys, SQ/RQ positions, forced
//!   signaling, the fate the ABI requires for each request);
//! - [`reference`]: the expected memory images and completions;
//! - [`pair`]: two model NICs in a simulated world, driven through the driver's verbs API;
//! - [`exec`]: posts, polls with a cycle budget, settles, collects;
//! - [`check`]: compares and explains;
//! - [`wire`]: the ACK drop filter, the corrupted-frame log and frame regions;
//! - [`corrupt`]: real frames with flipped bits injected into a fresh pair.
//!
//! [`run_case`] does all of it for one case.

pub mod case;
pub mod check;
pub mod corrupt;
pub mod exec;
pub mod pair;
pub mod plan;
pub mod reference;
pub mod wire;

use std::fmt::Write as _;

use rocenic_driver::Counter;

use crate::case::{Case, Side};
use crate::exec::{execute, ExecOpts, Run};
use crate::pair::{Nic, Pair, Setup};
use crate::plan::Plan;
use crate::reference::{expect, initial_images, Expected};

/// Everything one case produced.
pub struct Outcome {
    pub plan: Plan,
    pub exp: Expected,
    pub run: Run,
    pub pair: Pair,
    /// Failures of the checks every property makes (empty when all hold).
    pub failures: Vec<String>,
}

impl Outcome {
    /// Counter `c` of `side`.
    pub fn counter(&self, side: Side, c: Counter) -> u64 {
        self.run.counters[side.idx()][c as usize]
    }

    /// A report for a failure message: the failures, the plan and what the devices counted.
    pub fn report(&self, extra: &[String]) -> String {
        let mut s = String::new();
        for x in self.failures.iter().chain(extra) {
            let _ = writeln!(s, "- {x}");
        }
        let _ = write!(s, "{:?}", self.plan);
        for side in Side::BOTH {
            let _ = writeln!(
                s,
                "  counters {side:?}: {}",
                check::counters_line(&self.run.counters[side.idx()])
            );
        }
        for (dir, name) in ["A->B", "B->A"].iter().enumerate() {
            let _ = writeln!(
                s,
                "  link {name}: {}; acks dropped by filter {}",
                self.run.links[dir], self.run.acks_dropped[dir]
            );
        }
        let _ = writeln!(s, "  cycles: {}", self.run.cycles);
        s
    }
}

/// The setup a case asks for (two model NICs).
pub fn setup_of(case: &Case, record_frames: bool) -> Setup {
    Setup {
        nics: [Nic::Model; 2],
        seed: case.seed,
        psn_base: case.psn_base,
        sq_depth: case.sq_depth,
        rq_depth: case.rq_depth,
        cq_depth: case.cq_depth,
        conn: case.conn,
        faults: case.faults,
        record_frames,
    }
}

/// Cycles to let pass after the last expected completion: two ACK timeouts, so that a
/// retransmission that would complete something twice has the time to do it.
pub fn settle_cycles(case: &Case) -> u64 {
    2 * (1024u64 << case.conn.timeout.min(20)) + 100_000
}

/// Plans, builds, runs and checks one case. `Err` only when the pair cannot be set up.
pub fn run_case(case: &Case) -> Result<Outcome, String> {
    run_case_with(case, false)
}

/// [`run_case`], optionally recording every frame sent on both links.
pub fn run_case_with(case: &Case, record_frames: bool) -> Result<Outcome, String> {
    run_case_hook(case, record_frames, |_| {})
}

/// [`run_case_with`], with a hook that may change the pair (say, install a drop filter on
/// a link) after it is connected and before anything is posted.
pub fn run_case_hook(
    case: &Case,
    record_frames: bool,
    hook: impl FnOnce(&mut Pair),
) -> Result<Outcome, String> {
    let opts = ExecOpts::for_case(case, settle_cycles(case), exec::RUN_BUDGET);
    run_case_setup(case, &setup_of(case, record_frames), opts, hook)
}

/// [`run_case_hook`] on a given setup (say, an RTL engine on a side) and execution options
/// (the settle period and cycle budget).
pub fn run_case_setup(
    case: &Case,
    setup: &Setup,
    opts: ExecOpts,
    hook: impl FnOnce(&mut Pair),
) -> Result<Outcome, String> {
    let mut plan = plan::plan(case);
    let images = initial_images(&plan, case.seed);
    let exp = expect(&mut plan, &images);
    let mut pair = Pair::new(&plan, setup, &images)?;
    hook(&mut pair);
    let run = execute(&mut pair, &plan, &exp, &opts);
    let failures = check::check_run(&plan, &exp, &run, &pair);
    Ok(Outcome {
        plan,
        exp,
        run,
        pair,
        failures,
    })
}
