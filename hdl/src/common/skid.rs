//! `Skid`: a register slice (two-entry skid buffer) on a valid/ready channel of `W` bits.
//!
//! ```text
//!  s_valid/s_data --> [skid entry] --> [output entry] --> m_valid/m_data
//!  s_ready = !skid full                                 <-- m_ready
//! ```
//!
//! Both outputs (`s_ready`, `m_valid`, `m_data`) come straight from registers, so no
//! combinational path crosses it in either direction. The engine top puts one between
//! two blocks whose handshakes would otherwise close a loop through their `always`
//! blocks (RustHDL writes a block's logic as one `always @(*)`, so Verilator sees every
//! input of a block feeding every output: UNOPTFLAT). Full throughput (a beat per cycle),
//! one cycle of latency, order and data unchanged. Two single-bit side lanes (`last`,
//! `err`) travel with the data (tie them low where a channel has none).

use crate::prelude::*;

/// The slice; see the [module docs](self).
#[derive(LogicBlock, Default)]
pub struct Skid<const W: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub s_valid: Signal<In, Bit>,
    pub s_ready: Signal<Out, Bit>,
    pub s_data: Signal<In, Bits<W>>,
    pub s_last: Signal<In, Bit>,
    pub s_err: Signal<In, Bit>,
    pub m_valid: Signal<Out, Bit>,
    pub m_ready: Signal<In, Bit>,
    pub m_data: Signal<Out, Bits<W>>,
    pub m_last: Signal<Out, Bit>,
    pub m_err: Signal<Out, Bit>,
    out_valid: DFF<Bit>,
    out_data: DFF<Bits<W>>,
    skid_valid: DFF<Bit>,
    skid_data: DFF<Bits<W>>,
    out_last: DFF<Bit>,
    out_err: DFF<Bit>,
    skid_last: DFF<Bit>,
    skid_err: DFF<Bit>,
}

impl<const W: usize> Logic for Skid<W> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, out_valid, out_data, skid_valid, skid_data, out_last, out_err, skid_last,
            skid_err
        );
        self.s_ready.next = !self.skid_valid.q.val();
        self.m_valid.next = self.out_valid.q.val();
        self.m_data.next = self.out_data.q.val();
        self.m_last.next = self.out_last.q.val();
        self.m_err.next = self.out_err.q.val();
        if self.m_ready.val() | !self.out_valid.q.val() {
            // The output entry is free (or leaves now): refill it, from the skid first.
            if self.skid_valid.q.val() {
                self.out_valid.d.next = true;
                self.out_data.d.next = self.skid_data.q.val();
                self.out_last.d.next = self.skid_last.q.val();
                self.out_err.d.next = self.skid_err.q.val();
                self.skid_valid.d.next = false;
            } else {
                self.out_valid.d.next = self.s_valid.val();
                self.out_data.d.next = self.s_data.val();
                self.out_last.d.next = self.s_last.val();
                self.out_err.d.next = self.s_err.val();
            }
        } else if self.s_valid.val() & !self.skid_valid.q.val() {
            // The output is stalled: park the incoming beat.
            self.skid_valid.d.next = true;
            self.skid_data.d.next = self.s_data.val();
            self.skid_last.d.next = self.s_last.val();
            self.skid_err.d.next = self.s_err.val();
        }
        if self.reset.val() {
            self.out_valid.d.next = false;
            self.skid_valid.d.next = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{Bench, Rng};

    /// Random valid and ready patterns: every beat comes out once, in order, unchanged.
    #[test]
    fn passes_every_beat_in_order_under_backpressure() {
        for (valid_pct, ready_pct) in [(100, 100), (50, 100), (100, 30), (60, 60), (10, 90)] {
            let mut b = Bench::new(Skid::<12>::default(), |u| &mut u.clock);
            b.uut.reset.next = true;
            b.tick();
            b.uut.reset.next = false;
            let mut rng = Rng::new(0x5C1D + valid_pct as u64 * 131 + ready_pct as u64);
            let (mut next_in, mut next_out) = (0u64, 0u64);
            let mut offering = false;
            for _ in 0..3000 {
                if !offering {
                    offering = rng.percent(valid_pct);
                }
                b.uut.s_valid.next = offering;
                b.uut.s_data.next = (next_in & 0xFFF).into();
                b.uut.s_last.next = next_in % 3 == 0;
                b.uut.s_err.next = next_in % 5 == 0;
                b.uut.m_ready.next = rng.percent(ready_pct);
                b.settle();
                if b.uut.m_valid.val() && b.uut.m_ready.val() {
                    assert_eq!(b.uut.m_data.val().to_u64(), next_out & 0xFFF);
                    assert_eq!(b.uut.m_last.val(), next_out % 3 == 0);
                    assert_eq!(b.uut.m_err.val(), next_out % 5 == 0);
                    next_out += 1;
                }
                if offering && b.uut.s_ready.val() {
                    next_in += 1;
                    offering = false;
                }
                b.tick();
            }
            assert!(
                next_out + 2 >= next_in && next_out > 100,
                "{next_out} of {next_in}"
            );
            if (valid_pct, ready_pct) == (100, 100) {
                assert!(next_out >= 2990, "full rate: {next_out}");
            }
        }
    }
}
