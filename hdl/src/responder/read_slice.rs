//! `ReadSlice`: `ReadResp`'s response records and failure pulses into `RspOrder`, in one
//! order, through a register slice.
//!
//! ```text
//!  s (records) ---+                                +--> m     (a record, to RspOrder)
//!                 +--> [Skid: data, last, err] ----+
//!  s_err (pulses)-+    (`n` pulses wait for room)  +--> m_err (a failure, once a beat)
//! ```
//!
//! A slice beat is a record (`last`) and/or a failure that comes before it (`err`).
//! RspOrder pops a failed job's tag by its failure, so a failure must stay in order with
//! the records around it. A record offered in the cycle of a pulse belongs to a later job
//! (a failed job sends nothing after its failure), so it rides behind the pulse; pulses
//! that meet a full slice wait in `n` and hold the records back (`s.ready` reads
//! registers only). Out of the slice, a beat's failure goes to `m_err` once (a pulse),
//! then its record waits for `m.ready`.
//!
//! The slice is there because RspOrder's ready would otherwise close a loop through
//! ReadResp (`common::skid`).

use crate::bus::record::{RecordClient, RecordServer};
use crate::common::skid::Skid;
use crate::prelude::*;
use crate::tx::tx_arbiter::RECORD_BITS;

/// The slice; see the [module docs](self).
#[derive(LogicBlock)]
pub struct ReadSlice {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// ReadResp's records.
    pub s: RecordServer,
    /// ReadResp's failure pulses (one per failed job).
    pub s_err: Signal<In, Bit>,
    /// The records, for RspOrder.
    pub m: RecordClient,
    /// The failures, for RspOrder, each before the records that followed it.
    pub m_err: Signal<Out, Bit>,
    sk: Skid<RECORD_BITS>,
    /// Failure pulses not yet put into `sk`.
    n: DFF<Bits<7>>,
    /// The `err` of `sk`'s output beat has been given (the beat waits for `m.ready`).
    done: DFF<Bit>,
    have: Signal<Local, Bit>,
    ins: Signal<Local, Bit>,
    zero7: Constant<Bits<7>>,
    one7: Constant<Bits<7>>,
}

impl Default for ReadSlice {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            reset: Default::default(),
            s: Default::default(),
            s_err: Default::default(),
            m: Default::default(),
            m_err: Default::default(),
            sk: Default::default(),
            n: Default::default(),
            done: Default::default(),
            have: Default::default(),
            ins: Default::default(),
            zero7: Constant::new(0u64.to_bits()),
            one7: Constant::new(1u64.to_bits()),
        }
    }
}

impl Logic for ReadSlice {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, n, done);
        clock!(self, clock, sk);
        self.sk.reset.next = self.reset.val();
        // ---- in: a pulse (or a waiting one) goes in first, a record behind it ----
        self.have.next = self.s_err.val() | (self.n.q.val() != self.zero7.val());
        self.ins.next = self.have.val() & self.sk.s_ready.val();
        self.s.ready.next = self.sk.s_ready.val() & (self.n.q.val() == self.zero7.val());
        self.sk.s_valid.next = self.s.valid.val() | self.have.val();
        self.sk.s_data.next = self.s.data.val();
        self.sk.s_last.next = self.s.valid.val() & (self.n.q.val() == self.zero7.val());
        self.sk.s_err.next = self.have.val();
        if self.s_err.val() & !self.ins.val() {
            self.n.d.next = self.n.q.val() + self.one7.val();
        }
        if !self.s_err.val() & self.ins.val() {
            self.n.d.next = self.n.q.val() - self.one7.val();
        }
        if self.reset.val() {
            self.n.d.next = self.zero7.val();
        }
        // ---- out: the beat's failure once, then its record ----
        self.m_err.next = self.sk.m_valid.val() & self.sk.m_err.val() & !self.done.q.val();
        self.m.valid.next = self.sk.m_valid.val() & self.sk.m_last.val();
        self.m.data.next = self.sk.m_data.val();
        self.sk.m_ready.next = !self.sk.m_last.val() | self.m.ready.val();
        self.done.d.next = !self.reset.val()
            & self.sk.m_valid.val()
            & self.sk.m_err.val()
            & self.sk.m_last.val()
            & !self.m.ready.val();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{Bench, Rng};

    #[derive(Debug, PartialEq, Clone, Copy)]
    enum Ev {
        Err,
        Rec(u64),
    }

    /// Records (held until taken) and failure pulses (at any time, bursts included) in; a
    /// destination with random ready: every failure and every record leaves once, in the
    /// order they came (a pulse before a record taken in its cycle), each failure as one
    /// pulse.
    #[test]
    fn failures_and_records_leave_in_the_order_they_came() {
        for (ready_pct, err_pct) in [(100u32, 0u32), (100, 5), (50, 10), (10, 30)] {
            let mut b = Bench::new(ReadSlice::default(), |u| &mut u.clock);
            b.uut.reset.next = true;
            b.tick();
            b.uut.reset.next = false;
            let mut rng = Rng::new(0x5e1 + u64::from(ready_pct * 100 + err_pct));
            let (mut sent, mut got) = (vec![], vec![]);
            let mut offer: Option<u64> = None;
            let mut next = 1u64;
            for cycle in 0..4000 {
                let feeding = cycle < 3000;
                if offer.is_none() && feeding && rng.percent(70) {
                    offer = Some(next);
                    next += 1;
                }
                let err = feeding && rng.percent(err_pct);
                let ready = rng.percent(ready_pct);
                let u = &mut b.uut;
                u.s.valid.next = offer.is_some();
                u.s.data.next = offer.unwrap_or(0).to_bits();
                u.s_err.next = err;
                u.m.ready.next = ready;
                b.settle();
                let u = &b.uut;
                if err {
                    sent.push(Ev::Err);
                }
                if offer.is_some() && u.s.ready.val() {
                    sent.push(Ev::Rec(offer.take().unwrap()));
                }
                if u.m_err.val() {
                    got.push(Ev::Err);
                }
                if u.m.valid.val() && ready {
                    got.push(Ev::Rec(u.m.data.val().get_bits::<32>(0).index() as u64));
                }
                b.tick();
            }
            assert!(offer.is_none(), "a record never taken");
            assert_eq!(got, sent, "ready {ready_pct} %, failures {err_pct} %");
            let recs = sent.iter().filter(|e| matches!(e, Ev::Rec(_))).count();
            assert!(recs > 150, "{recs} records");
            if ready_pct == 100 && err_pct == 0 {
                // Full rate: every offer is taken in its cycle.
                assert!(recs > 2000, "{recs} records at full rate");
            }
        }
    }
}
