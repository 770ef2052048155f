//! "No frame that fails its ICRC is acted upon", shown directly: real frames of a run, with
//! a few bits flipped in the bytes the receiver must protect, are put into the RX queue of a
//! fresh pair set up exactly like the one that sent them (same QPNs, PSNs, keys, posted
//! receives, so the unflipped frames would be acted upon). Nothing may change but the drop
//! counters; then the unflipped frames are injected too, as a control.

use std::fmt::Write as _;

use rocenic_driver::{Counter, Wc};
use rocenic_proto::wire::Opcode;

use crate::case::{Case, Side};
use crate::exec::post_recvs;
use crate::pair::Pair;
use crate::plan;
use crate::reference::{expect, initial_images};
use crate::wire::{must_protect, BTH_OPCODE_AT};
use crate::{run_case_with, setup_of};

/// One frame to corrupt: which recorded frame (modulo their count) and which protected
/// bits (modulo their count; 1 to 3 distinct bits).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pick {
    pub frame: u16,
    pub bits: Vec<u32>,
}

/// What was injected, for the report.
#[derive(Clone, Debug)]
pub struct Injected {
    pub to: Side,
    pub opcode: &'static str,
    pub len: usize,
    /// Flipped bits as (byte, bit).
    pub flips: Vec<(usize, u8)>,
}

/// Runs the case (recording frames), then injects corrupted copies of the picked frames into
/// a fresh pair. Returns the failures (empty if all held) and a report.
pub fn corrupt_and_inject(case: &Case, picks: &[Pick]) -> Result<(Vec<String>, String), String> {
    let first = run_case_with(case, true)?;
    let mut failures: Vec<String> = first
        .failures
        .iter()
        .map(|f| format!("recording run: {f}"))
        .collect();
    let mut all: Vec<(Side, Vec<u8>)> = Vec::new();
    for dir in 0..2 {
        let to = Side::BOTH[dir].peer();
        for f in &first.pair.logs[dir].borrow().frames {
            all.push((to, f.clone()));
        }
    }
    drop(first);
    if all.is_empty() {
        return Ok((failures, "no frames recorded".into()));
    }

    // A fresh pair in the same state as the first before it ran.
    let mut plan = plan::plan(case);
    let images = initial_images(&plan, case.seed);
    let _ = expect(&mut plan, &images);
    let mut pair = Pair::new(&plan, &setup_of(case, false), &images)?;
    post_recvs(&mut pair, &plan)?;
    pair.ends[0].ctx.wait(1000);
    let before: [[u64; Counter::COUNT]; 2] =
        [pair.ends[0].ctx.counters(), pair.ends[1].ctx.counters()];

    let mut injected = Vec::new();
    let mut originals = Vec::new();
    for p in picks {
        let (to, frame) = &all[p.frame as usize % all.len()];
        let allowed: Vec<usize> = (0..frame.len() * 8)
            .filter(|b| must_protect(b / 8))
            .collect();
        let mut bits: Vec<usize> = Vec::new();
        for &b in &p.bits {
            let bit = allowed[b as usize % allowed.len()];
            if !bits.contains(&bit) {
                bits.push(bit);
            }
        }
        let mut bad = frame.clone();
        for &b in &bits {
            bad[b / 8] ^= 1 << (b % 8);
        }
        let opcode = frame
            .get(BTH_OPCODE_AT)
            .map_or("?", |&o| Opcode::from(o).name());
        injected.push(Injected {
            to: *to,
            opcode,
            len: frame.len(),
            flips: bits.iter().map(|&b| (b / 8, (b % 8) as u8)).collect(),
        });
        originals.push((*to, frame.clone()));
        let node = pair.node(*to);
        pair.world.borrow_mut().inject_rx(node, bad);
    }
    pair.ends[0].ctx.wait(200_000);

    let mut report = String::new();
    for (i, x) in injected.iter().enumerate() {
        let _ = writeln!(
            report,
            "  injected #{i} into {:?}: {} ({} B), flipped (byte, bit) {:?}",
            x.to, x.opcode, x.len, x.flips
        );
    }

    // Nothing changed: memory, completions; only drop counters moved.
    for side in Side::BOTH {
        let i = side.idx();
        let e = &mut pair.ends[i];
        let buf = e.buf;
        let mut mem = vec![0u8; buf.len];
        e.ctx.read(&buf, 0, &mut mem).map_err(|x| x.to_string())?;
        if mem != images[i] {
            let at = mem.iter().zip(&images[i]).position(|(a, b)| a != b);
            failures.push(format!(
                "{side:?}: memory changed at {}",
                at.map_or("?".into(), |a| plan.layout[i].describe(a))
            ));
        }
        let mut wcs = [Wc::default(); 16];
        for cq in [e.scq, e.rcq] {
            let n = e.ctx.poll_cq(cq, &mut wcs).map_err(|x| x.to_string())?;
            for wc in &wcs[..n] {
                failures.push(format!("{side:?}: a completion appeared: {wc}"));
            }
        }
        let after = e.ctx.counters();
        let n_in = injected.iter().filter(|x| x.to == side).count() as u64;
        let d = |c: Counter| after[c as usize] - before[i][c as usize];
        let dropped = d(Counter::IcrcDrops) + d(Counter::MalformedDrops);
        if dropped != n_in {
            failures.push(format!(
                "{side:?}: {n_in} corrupted frame(s) injected, but icrc_drops+{} and \
                 malformed_drops+{}",
                d(Counter::IcrcDrops),
                d(Counter::MalformedDrops)
            ));
        }
        for c in Counter::ALL {
            if !matches!(c, Counter::IcrcDrops | Counter::MalformedDrops) && d(c) != 0 {
                failures.push(format!(
                    "{side:?}: counter {} moved by {} after corrupted frames",
                    c.name(),
                    d(c)
                ));
            }
        }
    }
    for side in Side::BOTH {
        let node = pair.node(side);
        let w = pair.world.borrow();
        if !w.host(node).faults().is_empty() {
            failures.push(format!(
                "{side:?}: IOMMU faults {:?}",
                w.host(node).faults()
            ));
        }
    }

    // Control: the same frames unflipped pass the parser. (Those acted upon make the
    // device answer; the answers arrive over the link and are accepted too.)
    let delivered = |pair: &Pair, to: Side| {
        let w = pair.world.borrow();
        w.link_stats(pair.node(to.peer()))
            .map_or(0, |s| s.delivered)
    };
    let before: [(u64, u64); 2] = Side::BOTH.map(|s| {
        (
            pair.ends[s.idx()].ctx.counters()[Counter::RxFrames as usize],
            delivered(&pair, s),
        )
    });
    for (to, f) in &originals {
        let node = pair.node(*to);
        pair.world.borrow_mut().inject_rx(node, f.clone());
    }
    pair.ends[0].ctx.wait(200_000);
    for side in Side::BOTH {
        let i = side.idx();
        let n_in = originals.iter().filter(|x| x.0 == side).count() as u64;
        let rx = pair.ends[i].ctx.counters()[Counter::RxFrames as usize] - before[i].0;
        let rx = rx - (delivered(&pair, side) - before[i].1).min(rx);
        if rx != n_in {
            failures.push(format!(
                "control: {n_in} unflipped frame(s) injected into {side:?}, parser accepted {rx}"
            ));
        }
    }
    Ok((failures, report))
}
