//! `EventSum`: up to four event pulses of one cycle into one counter's increment, none
//! lost.
//!
//! ```text
//!  a, b, c, d --> backlog + a + b + c + d --> y = (sum != 0) --> backlog' = sum - y
//! ```
//!
//! A global counter adds at most one event a cycle (`regfile`'s `cnt.inc` is a bit per
//! counter), but several blocks count the same counter: the RX port, the responder and the
//! requester all count UnknownQpDrops, and two of them can drop a frame in the same cycle.
//! An OR of their pulses would count those once. Here the pulses of a cycle join a backlog
//! and `y` pulses while the sum is not zero: a lone pulse passes in its own cycle (the
//! counters move when they did before), coincident ones in the cycles after. Every source
//! drops or counts at most one frame a cycle and frames take at least a cycle each, so the
//! backlog stays within a few events; its 8 bits are far from full.

use crate::prelude::*;

/// The merger; see the [module docs](self). Tie unused inputs low.
#[derive(LogicBlock)]
pub struct EventSum {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub a: Signal<In, Bit>,
    pub b: Signal<In, Bit>,
    pub c: Signal<In, Bit>,
    pub d: Signal<In, Bit>,
    pub y: Signal<Out, Bit>,
    s_a: Signal<Local, Bits<8>>,
    s_b: Signal<Local, Bits<8>>,
    s_c: Signal<Local, Bits<8>>,
    sum: Signal<Local, Bits<8>>,
    backlog: DFF<Bits<8>>,
    k_zero: Constant<Bits<8>>,
    k_one: Constant<Bits<8>>,
}

impl Default for EventSum {
    fn default() -> Self {
        EventSum {
            clock: Default::default(),
            reset: Default::default(),
            a: Default::default(),
            b: Default::default(),
            c: Default::default(),
            d: Default::default(),
            y: Default::default(),
            s_a: Default::default(),
            s_b: Default::default(),
            s_c: Default::default(),
            sum: Default::default(),
            backlog: Default::default(),
            k_zero: Constant::new(0u64.into()),
            k_one: Constant::new(1u64.into()),
        }
    }
}

impl Logic for EventSum {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, backlog);
        self.s_a.next = self.backlog.q.val();
        if self.a.val() {
            self.s_a.next = self.backlog.q.val() + self.k_one.val();
        }
        self.s_b.next = self.s_a.val();
        if self.b.val() {
            self.s_b.next = self.s_a.val() + self.k_one.val();
        }
        self.s_c.next = self.s_b.val();
        if self.c.val() {
            self.s_c.next = self.s_b.val() + self.k_one.val();
        }
        self.sum.next = self.s_c.val();
        if self.d.val() {
            self.sum.next = self.s_c.val() + self.k_one.val();
        }
        self.y.next = self.sum.val() != self.k_zero.val();
        self.backlog.d.next = self.sum.val();
        if self.sum.val() != self.k_zero.val() {
            self.backlog.d.next = self.sum.val() - self.k_one.val();
        }
        if self.reset.val() {
            self.backlog.d.next = self.k_zero.val();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{Bench, Rng};

    #[test]
    fn every_pulse_is_counted_and_a_lone_one_in_its_cycle() {
        let mut b = Bench::new(EventSum::default(), |u| &mut u.clock);
        b.uut.reset.next = true;
        b.tick();
        b.uut.reset.next = false;
        let mut rng = Rng::new(7);
        let (mut sent, mut counted) = (0u64, 0u64);
        for cycle in 0..4000 {
            // bursts of coincident pulses, then quiet stretches that drain the backlog
            let busy = (cycle / 50) % 2 == 0;
            let p: Vec<bool> = (0..4).map(|_| busy && rng.percent(30)).collect();
            let u = &mut b.uut;
            u.a.next = p[0];
            u.b.next = p[1];
            u.c.next = p[2];
            u.d.next = p[3];
            b.settle();
            sent += p.iter().filter(|&&x| x).count() as u64;
            counted += u64::from(b.uut.y.val());
            assert!(counted <= sent, "cycle {cycle}: more counted than sent");
            b.tick();
        }
        assert!(sent > 500);
        assert_eq!(counted, sent, "pulses lost");
        // with the backlog empty, a lone pulse counts in its own cycle
        let u = &mut b.uut;
        u.a.next = false;
        u.b.next = false;
        u.c.next = true;
        u.d.next = false;
        b.settle();
        assert!(b.uut.y.val());
        b.tick();
        b.uut.c.next = false;
        b.settle();
        assert!(!b.uut.y.val());
    }
}
