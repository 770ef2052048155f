//! Comparing a run with the reference, with failure messages a human can act on: which
//! completion of which queue differs and how, which byte ranges of which zone differ.

use std::fmt::Write as _;

use rocenic_driver::{Counter, QpState, Wc, WcStatus};

use crate::case::Side;
use crate::exec::Run;
use crate::pair::Pair;
use crate::plan::{Plan, SEND_WR_ID};
use crate::reference::{ExpWc, Expected};
use crate::wire::Protect;

/// Counter values of one side, named.
pub fn counters_line(c: &[u64; Counter::COUNT]) -> String {
    let mut s = String::new();
    for k in Counter::ALL {
        let v = c[k as usize];
        if v != 0 {
            let _ = write!(s, "{}={v} ", k.name());
        }
    }
    s
}

fn wc_line(wc: &Wc) -> String {
    let mut s = format!(
        "wr_id={:#x} {} {} byte_len={}",
        wc.wr_id, wc.status, wc.opcode, wc.byte_len
    );
    if let Some(i) = wc.imm_data {
        let _ = write!(s, " imm={i:#x}");
    }
    if let Some(k) = wc.invalidated_rkey {
        let _ = write!(s, " inv={k:#x}");
    }
    if wc.vendor_err != 0 {
        let _ = write!(s, " vendor_err={:#x}", wc.vendor_err);
    }
    s
}

fn exp_line(e: &ExpWc) -> String {
    let mut s = format!("wr_id={:#x} {} ", e.wr_id, e.status);
    if e.status == WcStatus::Success {
        let _ = write!(s, "{} byte_len={}", e.opcode, e.byte_len);
        if let Some(i) = e.imm {
            let _ = write!(s, " imm={i:#x}");
        }
        if let Some(k) = e.inv {
            let _ = write!(s, " inv={k:?}");
        }
    }
    if let Some(v) = e.vendor_err {
        let _ = write!(s, " vendor_err={v:#x}");
    }
    s
}

/// Names the op or receive a wr_id belongs to.
fn who(wr_id: u64) -> String {
    let idx = wr_id & 0xffff_ffff;
    if wr_id & !0xffff_ffff == SEND_WR_ID {
        format!("op#{idx}")
    } else {
        format!("recv#{idx}")
    }
}

/// Compares one completion with what the ABI requires; error completions are compared
/// on the fields ibverbs defines for them (wr_id, status, qp_num, vendor_err).
fn wc_diff(e: &ExpWc, g: &Wc, qpn: u32, src_qp: u32, inv_key: Option<u32>) -> Option<String> {
    let mut d = Vec::new();
    if e.wr_id != g.wr_id {
        d.push("wr_id");
    }
    if e.status != g.status {
        d.push("status");
    }
    if g.qp_num != qpn {
        d.push("qp_num");
    }
    if e.status == WcStatus::Success {
        if e.opcode != g.opcode {
            d.push("opcode");
        }
        if e.byte_len != g.byte_len {
            d.push("byte_len");
        }
        if e.imm != g.imm_data {
            d.push("imm");
        }
        if inv_key != g.invalidated_rkey {
            d.push("invalidated_rkey");
        }
        if g.src_qp != src_qp {
            d.push("src_qp");
        }
    }
    if let Some(v) = e.vendor_err {
        if v != g.vendor_err {
            d.push("vendor_err");
        }
    }
    (!d.is_empty()).then(|| d.join(","))
}

/// Everything every property requires of a run. Returns the failures, one per line group.
pub fn check_run(plan: &Plan, exp: &Expected, run: &Run, pair: &Pair) -> Vec<String> {
    let mut f = Vec::new();
    if let Some(s) = &run.stuck {
        f.push(format!("run did not finish: {s}"));
    }
    for (side, wc) in &run.stray {
        f.push(format!(
            "{side:?}: completion for an unknown QP: {}",
            wc_line(wc)
        ));
    }
    // Completions, queue by queue.
    let mut keys: Vec<(Side, usize)> = exp.send.keys().chain(run.send.keys()).copied().collect();
    keys.sort();
    keys.dedup();
    for (side, qp) in keys {
        let e = exp.send.get(&(side, qp)).map_or(&[][..], |v| v);
        let g = run.send.get(&(side, qp)).map_or(&[][..], |v| v);
        compare_queue(&mut f, "send", side, qp, e, g, pair);
    }
    let mut keys: Vec<(Side, usize)> = exp.recv.keys().chain(run.recv.keys()).copied().collect();
    keys.sort();
    keys.dedup();
    for (side, qp) in keys {
        let e = exp.recv.get(&(side, qp)).map_or(&[][..], |v| v);
        let g = run.recv.get(&(side, qp)).map_or(&[][..], |v| v);
        compare_queue(&mut f, "recv", side, qp, e, g, pair);
    }
    // Memory.
    for side in Side::BOTH {
        let i = side.idx();
        let (e, g) = (&exp.mem[i], &run.mem[i]);
        if e.len() != g.len() {
            f.push(format!(
                "{side:?}: memory length {} != expected {}",
                g.len(),
                e.len()
            ));
            continue;
        }
        if e == g {
            continue;
        }
        let care = |at: usize| !exp.dont_care[i].iter().any(|r| r.contains(&at));
        let mut ranges: Vec<(usize, usize)> = Vec::new();
        for at in 0..e.len() {
            if e[at] != g[at] && care(at) {
                match ranges.last_mut() {
                    Some((_, end)) if *end == at => *end = at + 1,
                    _ => ranges.push((at, at + 1)),
                }
            }
        }
        if !ranges.is_empty() {
            let lay = &plan.layout[i];
            let mut s = format!(
                "{side:?}: memory differs from the expected image in {} range(s):",
                ranges.len()
            );
            for &(a, b) in ranges.iter().take(8) {
                let show = (b - a).min(8);
                let _ = write!(
                    s,
                    "\n    [{}, {} bytes): expected {:02x?}.. got {:02x?}..",
                    lay.describe(a),
                    b - a,
                    &e[a..a + show],
                    &g[a..a + show]
                );
            }
            f.push(s);
        }
    }
    // Shared counters: final value and prefix sums of the returned originals.
    for side in Side::BOTH {
        let (init, uses) = &exp.shared[side.idx()];
        if uses.is_empty() {
            continue;
        }
        let mut got: Vec<(u64, usize)> = uses
            .iter()
            .enumerate()
            .map(|(k, u)| {
                let m = &run.mem[u.side.idx()];
                let v = m
                    .get(u.result_off..u.result_off + 8)
                    .map_or(u64::MAX, |b| u64::from_le_bytes(b.try_into().expect("8")));
                (v, k)
            })
            .collect();
        got.sort();
        let mut expect_next = *init;
        let mut bad = None;
        for &(v, k) in &got {
            if v != expect_next {
                bad = Some(format!(
                    "op#{} returned {v:#x}, expected {expect_next:#x} in the prefix-sum chain",
                    uses[k].op
                ));
                break;
            }
            expect_next = expect_next.wrapping_add(uses[k].add);
        }
        // Per QP, originals must increase in SQ order.
        for q in 0..plan.nqp {
            for s in Side::BOTH {
                let mut last = None;
                for (k, u) in uses.iter().enumerate() {
                    if u.side == s && u.qp == q {
                        let v = got.iter().find(|g| g.1 == k).map(|g| g.0);
                        if last.is_some() && v <= last {
                            bad.get_or_insert(format!(
                                "fetch-adds of {s:?} qp{q} on the shared counter of {side:?} \
                                 did not take effect in SQ order (op#{})",
                                u.op
                            ));
                        }
                        last = v;
                    }
                }
            }
        }
        if let Some(b) = bad {
            f.push(format!(
                "{side:?} shared counter (initial {init:#x}, {} fetch-adds): {b}",
                uses.len()
            ));
        }
    }
    // No DMA outside registered memory.
    for side in Side::BOTH {
        let i = side.idx();
        if !run.dma_faults[i].is_empty() {
            f.push(format!(
                "{side:?}: the IOMMU refused {} DMA(s), first: {:?}",
                run.dma_faults[i].len(),
                run.dma_faults[i][0]
            ));
        }
        let c = run.counters[i][Counter::DmaFaults as usize];
        if c != 0 {
            f.push(format!("{side:?}: device dma_faults counter = {c}"));
        }
    }
    // No DMA into bytes no work request names.
    for side in Side::BOTH {
        let i = side.idx();
        let ok = &exp.dma_ok[i];
        let covered = |a: usize, b: usize| {
            let k = ok.partition_point(|r| r.end < b);
            ok.get(k).is_some_and(|r| r.start <= a && b <= r.end)
        };
        let bad: Vec<_> = run.buffer_dma[i]
            .iter()
            .filter(|&&(_, off, len, _)| !covered(off, off + len))
            .collect();
        if let Some(&&(cycle, off, len, write)) = bad.first() {
            f.push(format!(
                "{side:?}: {} DMA(s) touched bytes no work request names; first: a {} of \
                 {len} bytes at {} (cycle {cycle})",
                bad.len(),
                if write { "write" } else { "read" },
                plan.layout[i].describe(off)
            ));
        }
    }
    // QP states.
    for (&(side, q), &st) in &run.qp_state {
        let want = if plan.err_qps.contains(&(side, q)) {
            QpState::Err
        } else {
            QpState::Rts
        };
        if st != want {
            f.push(format!("{side:?} qp{q} ends in {st}, expected {want}"));
        }
    }
    if run.undelivered != 0 {
        f.push(format!(
            "{} frame(s) still in flight or queued after the settle period",
            run.undelivered
        ));
    }
    // Corrupted frames: counted as dropped, never acted upon.
    for dir in 0..2 {
        if run.corrupted[dir].len() as u64 != run.links[dir].corrupted {
            f.push(format!(
                "harness: the shadow fault stream of link {dir} saw {} corrupted deliveries, \
                 the link {}",
                run.corrupted[dir].len(),
                run.links[dir].corrupted
            ));
        }
        let rx = Side::BOTH[dir].peer().idx();
        let c = &run.counters[rx];
        let (mut must, mut may, mut only_icrc) = (0u64, 0u64, 0u64);
        for x in &run.corrupted[dir] {
            let n = x.copies as u64;
            match x.protect() {
                Protect::May => may += n,
                Protect::Must => must += n,
                Protect::OnlyIcrc => {
                    must += n;
                    only_icrc += n;
                }
            }
        }
        let icrc = c[Counter::IcrcDrops as usize];
        let dropped = icrc + c[Counter::MalformedDrops as usize];
        if icrc < only_icrc || dropped < must || dropped > must + may {
            f.push(format!(
                "link {:?}->{:?}: {} corrupted frame(s) delivered ({must} must be dropped, \
                 {only_icrc} of them only by the ICRC, {may} may pass), but the receiver \
                 counted icrc_drops={icrc}, malformed_drops={}: {:?}",
                Side::BOTH[dir],
                Side::BOTH[dir].peer(),
                run.corrupted[dir].len(),
                c[Counter::MalformedDrops as usize],
                run.corrupted[dir]
            ));
        }
    }
    f
}

fn compare_queue(
    f: &mut Vec<String>,
    what: &str,
    side: Side,
    qp: usize,
    e: &[ExpWc],
    g: &[Wc],
    pair: &Pair,
) {
    let me = &pair.ends[side.idx()];
    let peer = &pair.ends[side.peer().idx()];
    let qpn = me.qps[qp].qp_num;
    let src_qp = peer.qps[qp].qp_num;
    let mut diffs = Vec::new();
    for k in 0..e.len().max(g.len()) {
        match (e.get(k), g.get(k)) {
            (Some(x), Some(y)) => {
                let inv = x.inv.map(|kr| me.keys.key(kr));
                if let Some(d) = wc_diff(x, y, qpn, src_qp, inv) {
                    diffs.push(format!(
                        "    [{k}] {} differs in {d}:\n        expected {}\n        got      {}",
                        who(x.wr_id),
                        exp_line(x),
                        wc_line(y)
                    ));
                }
            }
            (Some(x), None) => diffs.push(format!(
                "    [{k}] missing: {} {}",
                who(x.wr_id),
                exp_line(x)
            )),
            (None, Some(y)) => diffs.push(format!(
                "    [{k}] unexpected (extra or duplicate): {} {}",
                who(y.wr_id),
                wc_line(y)
            )),
            (None, None) => {}
        }
    }
    if !diffs.is_empty() {
        f.push(format!(
            "{side:?} qp{qp} {what} completions ({} expected, {} got):\n{}",
            e.len(),
            g.len(),
            diffs.join("\n")
        ));
    }
}
