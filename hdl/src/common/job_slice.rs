//! `JobSlice`: a register slice on a valid/ready handshake whose data the source holds
//! (no data register): on each of ReadResp's and AtomicUnit's job inputs in the engine,
//! behind [`RspOrder`](crate::responder::rsp_order::RspOrder)'s gates (see RspOrder's docs).
//!
//! ```text
//!  s_valid --> [armed] --> m_valid      (the destination reads the source's data)
//!  s_ready <-- [done]  <-- m_valid && m_ready
//! ```
//!
//! Both outputs come straight from registers, so no combinational path crosses it (the
//! units' job ready depends on their job valid inside their one `always`, and so does
//! `RspOrder`'s gate; wired together they close a loop, Verilator UNOPTFLAT), provided
//! Verilator splits the slice's own `always`: `update` writes the next states as
//! expressions for that (see there; `hdl/tests/gates.rs` verilates the engine). Unlike
//! [`Skid`](crate::common::skid::Skid) it stores no data: the source must hold `s_valid` and its
//! data until `s_ready` (the handshake rule of `lib.rs`); the destination takes the data
//! in the cycle it sees `m_valid && m_ready`, and the source's handshake completes the
//! cycle after. One transfer per three cycles (jobs are one per request).

use crate::prelude::*;

/// The slice; see the [module docs](self).
#[derive(LogicBlock, Default)]
pub struct JobSlice {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub s_valid: Signal<In, Bit>,
    pub s_ready: Signal<Out, Bit>,
    pub m_valid: Signal<Out, Bit>,
    pub m_ready: Signal<In, Bit>,
    /// Offering the source's job to the destination.
    armed: DFF<Bit>,
    /// The destination took it: the source's handshake, this cycle.
    done: DFF<Bit>,
}

impl Logic for JobSlice {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, armed, done);
        self.m_valid.next = self.armed.q.val();
        self.s_ready.next = self.done.q.val();
        // Next states as expressions, not `if`s: Verilator splits this `always` then, so
        // the outputs above depend on the registers alone. Written as `if`s (clear on a
        // take, set on an offer, `if reset` last) Verilator 5.006 kept the block whole,
        // each output read every input, and the engine drew 6 UNOPTFLAT.
        self.armed.d.next = !self.reset.val()
            & ((self.armed.q.val() & !self.m_ready.val())
                | (self.s_valid.val() & !self.armed.q.val() & !self.done.q.val()));
        self.done.d.next = !self.reset.val() & self.armed.q.val() & self.m_ready.val();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{Bench, Rng};

    /// A source that holds each job until its handshake, a destination with random ready:
    /// the destination takes every job exactly once, before the source's handshake, and
    /// the source's handshake comes the cycle after the take.
    #[test]
    fn every_job_taken_once_before_the_source_moves_on() {
        for ready_pct in [100u32, 50, 10] {
            let mut b = Bench::new(JobSlice::default(), |u| &mut u.clock);
            b.uut.reset.next = true;
            b.tick();
            b.uut.reset.next = false;
            let mut rng = Rng::new(0x10b5 + ready_pct as u64);
            let (mut job, mut taken, mut handed) = (0u64, 0u64, 0u64);
            let mut offering = false;
            let mut took_last_cycle = false;
            for _ in 0..3000 {
                if !offering {
                    offering = rng.percent(60);
                }
                b.uut.s_valid.next = offering;
                let ready = rng.percent(ready_pct);
                b.uut.m_ready.next = ready;
                b.settle();
                let u = &b.uut;
                let take = u.m_valid.val() && ready;
                if take {
                    assert!(offering, "offered with no job at the source");
                    assert_eq!(taken, job, "job {job} taken twice");
                    taken += 1;
                }
                let hand = offering && u.s_ready.val();
                assert_eq!(hand, took_last_cycle, "handshake the cycle after the take");
                if hand {
                    assert_eq!(taken, job + 1, "source moved on before the take");
                    job += 1;
                    handed += 1;
                    offering = false;
                }
                took_last_cycle = take;
                b.tick();
            }
            assert!(handed > 150, "{handed}");
        }
    }
}
