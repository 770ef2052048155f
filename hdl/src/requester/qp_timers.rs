//! `QpTimers`: one deadline per QP (the local ACK timer or the RNR wait), kept in block RAM
//! and scanned round robin, one QP per cycle.
//!
//! ```text
//!  s_set (arm / disarm qpn) --> timer RAM {armed, kind, deadline} <-- scan pointer
//!                                                |
//!                                                +--> m_fire (qpn, kind), held until taken
//! ```
//!
//! The model keeps per QP at most one of `ack_deadline` and `rnr_until`
//! (`model/src/requester.rs`), so one timer with a `kind` bit covers both. The requester
//! arms a timer with a delay in cycles (`deadline = now + delay`, `now` counted here),
//! disarms it, or re-arms it (a set replaces the QP's timer). When a scan finds an armed
//! timer whose deadline has passed, it disarms it and offers a fire event; the requester
//! decides what it means (retransmit, count a retry, end an RNR wait).
//!
//! Timing: a timer fires between its deadline and one scan round (`2^QPN_BITS` cycles,
//! about 1 us at 256 QPs and 250 MHz) later, and later still if the fire output is
//! stalled or a set keeps the RAM's write port busy at the moment its entry is checked:
//! it is then seen again on the next round. ACK timeouts are at least 4 us and RNR waits
//! at least 10 us, so this only moves *when* a retransmission starts, which the model and
//! the RTL are allowed to differ on (`docs/rtl-architecture.md`, "Equivalence").
//!
//! A set and a fire never cross: a fire is dropped if a set touched the same QP in the
//! cycle its entry was read or in the cycle it would fire, so a re-armed or disarmed
//! timer never fires with its old deadline.

use crate::prelude::*;

/// Width of the cycle counter and deadlines: 2^48 cycles at 250 MHz is 13 days, past the
/// longest ACK timeout (`4.096 us * 2^31`, 2.4 hours).
pub const TIME_BITS: usize = 48;
/// RAM word: deadline, kind, armed.
const ENTRY_BITS: usize = TIME_BITS + 2;

/// Timer kinds, as the `kind` bit.
pub const KIND_ACK: bool = false;
pub const KIND_RNR: bool = true;

#[derive(LogicBlock)]
pub struct QpTimers<const QPN_BITS: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,

    /// Arm (`arm` = 1: deadline = now + `delay`) or disarm the QP's timer. Always taken
    /// (`s_set_ready` is high); a set has priority over the scan.
    pub s_set_valid: Signal<In, Bit>,
    pub s_set_ready: Signal<Out, Bit>,
    pub s_set_qpn: Signal<In, Bits<QPN_BITS>>,
    pub s_set_arm: Signal<In, Bit>,
    pub s_set_kind: Signal<In, Bit>,
    pub s_set_delay: Signal<In, Bits<TIME_BITS>>,

    /// A timer expired.
    pub m_fire_valid: Signal<Out, Bit>,
    pub m_fire_ready: Signal<In, Bit>,
    pub m_fire_qpn: Signal<Out, Bits<QPN_BITS>>,
    pub m_fire_kind: Signal<Out, Bit>,

    ram: RAM<Bits<ENTRY_BITS>, QPN_BITS>,
    word: TimerWord,
    now: DFF<Bits<TIME_BITS>>,
    /// The QP read this cycle, and the one whose entry is on `ram.read_data`.
    scan: DFF<Bits<QPN_BITS>>,
    looked: DFF<Bits<QPN_BITS>>,
    /// A set touched `looked` in the cycle its entry was read.
    stale: DFF<Bit>,
    fire_valid: DFF<Bit>,
    fire_qpn: DFF<Bits<QPN_BITS>>,
    fire_kind: DFF<Bit>,
    one_qpn: Constant<Bits<QPN_BITS>>,
    one_time: Constant<Bits<TIME_BITS>>,
    zero_time: Constant<Bits<TIME_BITS>>,

    armed: Signal<Local, Bit>,
    expired: Signal<Local, Bit>,
    fire: Signal<Local, Bit>,
}

impl<const QPN_BITS: usize> Default for QpTimers<QPN_BITS> {
    fn default() -> Self {
        assert!(
            (1..=16).contains(&QPN_BITS),
            "QpTimers<{QPN_BITS}>: 2 to 65536 QPs"
        );
        QpTimers {
            clock: Default::default(),
            reset: Default::default(),
            s_set_valid: Default::default(),
            s_set_ready: Default::default(),
            s_set_qpn: Default::default(),
            s_set_arm: Default::default(),
            s_set_kind: Default::default(),
            s_set_delay: Default::default(),
            m_fire_valid: Default::default(),
            m_fire_ready: Default::default(),
            m_fire_qpn: Default::default(),
            m_fire_kind: Default::default(),
            ram: Default::default(),
            word: Default::default(),
            now: Default::default(),
            scan: Default::default(),
            looked: Default::default(),
            stale: Default::default(),
            fire_valid: Default::default(),
            fire_qpn: Default::default(),
            fire_kind: Default::default(),
            one_qpn: Constant::new(1u64.to_bits()),
            one_time: Constant::new(1u64.to_bits()),
            zero_time: Constant::new(0u64.to_bits()),
            armed: Default::default(),
            expired: Default::default(),
            fire: Default::default(),
        }
    }
}

impl<const QPN_BITS: usize> Logic for QpTimers<QPN_BITS> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, now, scan, looked, stale, fire_valid, fire_qpn, fire_kind);
        self.ram.read_clock.next = self.clock.val();
        self.ram.write_clock.next = self.clock.val();
        self.now.d.next = self.now.q.val() + self.one_time.val();
        self.s_set_ready.next = true;

        // The scan reads one QP per cycle; its entry is out of the RAM the next cycle.
        self.ram.read_address.next = self.scan.q.val();
        self.scan.d.next = self.scan.q.val() + self.one_qpn.val();
        self.looked.d.next = self.scan.q.val();
        self.stale.d.next = self.s_set_valid.val() & (self.s_set_qpn.val() == self.scan.q.val());

        // The looked-up entry: fire if armed, expired, not touched by a set since it was
        // read, and the fire register is free.
        self.armed.next = self.ram.read_data.val().get_bit(0);
        self.expired.next = self.ram.read_data.val().get_bits::<TIME_BITS>(2) <= self.now.q.val();
        self.fire.next = self.armed.val()
            & self.expired.val()
            & !self.stale.q.val()
            & !self.s_set_valid.val()
            & (!self.fire_valid.q.val() | self.m_fire_ready.val());

        // The RAM's one write port: a set, else the disarm of a firing entry.
        self.word.deadline.next = self.now.q.val() + self.s_set_delay.val();
        self.word.kind.next = self.s_set_kind.val();
        self.word.armed.next = self.s_set_arm.val() & self.s_set_valid.val();
        self.word.clear.next = !self.s_set_valid.val();
        self.ram.write_data.next = self.word.y.val();
        if self.s_set_valid.val() {
            self.ram.write_address.next = self.s_set_qpn.val();
        } else {
            self.ram.write_address.next = self.looked.q.val();
        }
        self.ram.write_enable.next = self.s_set_valid.val() | self.fire.val();

        // The fire event, held until taken.
        if self.m_fire_ready.val() {
            self.fire_valid.d.next = false;
        }
        if self.fire.val() {
            self.fire_valid.d.next = true;
            self.fire_qpn.d.next = self.looked.q.val();
            self.fire_kind.d.next = self.ram.read_data.val().get_bit(1);
        }
        self.m_fire_valid.next = self.fire_valid.q.val();
        self.m_fire_qpn.next = self.fire_qpn.q.val();
        self.m_fire_kind.next = self.fire_kind.q.val();

        if self.reset.val() {
            self.now.d.next = self.zero_time.val();
            self.fire_valid.d.next = false;
            self.stale.d.next = true;
        }
    }
}

/// The RAM word `{deadline, kind, armed}`, or all zero (`clear`: disarmed). Hand-written
/// Verilog: the widening concatenation `#[hdl_gen]` lacks, and kept in its own leaf so
/// the parent consumes it in one statement.
#[derive(LogicBlock, Default)]
pub struct TimerWord {
    pub deadline: Signal<In, Bits<TIME_BITS>>,
    pub kind: Signal<In, Bit>,
    pub armed: Signal<In, Bit>,
    pub clear: Signal<In, Bit>,
    pub y: Signal<Out, Bits<ENTRY_BITS>>,
}

impl Logic for TimerWord {
    fn update(&mut self) {
        let mut y = Bits::<ENTRY_BITS>::default();
        if !self.clear.val() {
            y.set_bits(2, self.deadline.val());
            y = y.replace_bit(1, self.kind.val());
            y = y.replace_bit(0, self.armed.val());
        }
        self.y.next = y;
    }

    fn connect(&mut self) {
        self.y.connect();
    }

    fn hdl(&self) -> Verilog {
        Verilog::Custom(format!(
            "always @(*) y = clear ? {ENTRY_BITS}'h0 : {{deadline, kind, armed}};\n"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{Bench, Rng};

    const BITS: usize = 4;
    const QPS: usize = 1 << BITS;

    /// What the bench expects of one QP's timer.
    #[derive(Clone, Copy, Debug, Default)]
    struct Expect {
        /// Armed with (deadline, kind); fired at most once per arming.
        armed: Option<(u64, bool)>,
    }

    #[test]
    fn timers_fire_once_within_a_round_of_their_deadline() {
        for seed in 0..4 {
            let mut rng = Rng::new(0x71AE + seed);
            let mut b = Bench::new(QpTimers::<BITS>::default(), |u| &mut u.clock);
            b.uut.reset.next = true;
            b.tick();
            b.uut.reset.next = false;
            let mut want = [Expect::default(); QPS];
            let mut fires = 0;
            let mut pending: Option<(usize, bool)> = None;
            // The block's clock counts from 0 at the first cycle after reset.
            for now in 0u64..6000 {
                let set = rng.percent(15).then(|| {
                    let qpn = rng.below(QPS as u64) as usize;
                    let arm = rng.percent(70);
                    let kind = rng.percent(50);
                    let delay = rng.below(200);
                    (qpn, arm, kind, delay)
                });
                let ready = seed == 0 || rng.percent(60);
                let u = &mut b.uut;
                u.s_set_valid.next = set.is_some();
                if let Some((qpn, arm, kind, delay)) = set {
                    u.s_set_qpn.next = (qpn as u64).into();
                    u.s_set_arm.next = arm;
                    u.s_set_kind.next = kind;
                    u.s_set_delay.next = delay.into();
                }
                u.m_fire_ready.next = ready;
                b.settle();
                let u = &b.uut;
                assert!(u.s_set_ready.val());
                // A fire is an event when it is raised (the cycle after the scan found it
                // expired); a later set of that QP does not withdraw it.
                if u.m_fire_valid.val() && pending.is_none() {
                    let qpn = u.m_fire_qpn.val().index();
                    let (deadline, kind) = want[qpn]
                        .armed
                        .take()
                        .unwrap_or_else(|| panic!("QP {qpn} fired unarmed at {now}"));
                    assert!(
                        now > deadline,
                        "QP {qpn} fired at {now}, deadline {deadline}"
                    );
                    assert_eq!(u.m_fire_kind.val(), kind);
                    pending = Some((qpn, kind));
                }
                if u.m_fire_valid.val() {
                    let (qpn, kind) = pending.expect("raised");
                    assert_eq!(u.m_fire_qpn.val().index(), qpn, "held until taken");
                    assert_eq!(u.m_fire_kind.val(), kind);
                    if u.m_fire_ready.val() {
                        pending = None;
                        fires += 1;
                    }
                } else {
                    assert!(pending.is_none(), "a fire withdrawn before it was taken");
                }
                // A set after the fire check: it re-arms or disarms from this cycle on.
                if let Some((qpn, arm, kind, delay)) = set {
                    want[qpn].armed = arm.then_some((now + delay, kind));
                }
                // Nothing stays expired for long. A check is skipped when a set uses the
                // RAM's write port in that cycle (15 % here), so allow a few rounds at full
                // ready, and more with a stalled output.
                for (qpn, w) in want.iter().enumerate() {
                    if let Some((deadline, _)) = w.armed {
                        let slack = if seed == 0 { 8 * QPS as u64 } else { 400 };
                        assert!(now <= deadline + slack, "QP {qpn} overdue at {now}");
                    }
                }
                b.tick();
            }
            assert!(fires > 100, "seed {seed}: only {fires} fires");
        }
    }

    #[test]
    fn a_disarmed_or_rearmed_timer_never_fires_with_its_old_deadline() {
        let mut b = Bench::new(QpTimers::<BITS>::default(), |u| &mut u.clock);
        b.uut.reset.next = true;
        b.tick();
        b.uut.reset.next = false;
        b.uut.m_fire_ready.next = true;
        let set = |b: &mut Bench<QpTimers<BITS>>, qpn: u64, arm: bool, delay: u64| {
            b.uut.s_set_valid.next = true;
            b.uut.s_set_qpn.next = qpn.into();
            b.uut.s_set_arm.next = arm;
            b.uut.s_set_kind.next = KIND_RNR;
            b.uut.s_set_delay.next = delay.into();
            b.settle();
            b.tick();
            b.uut.s_set_valid.next = false;
        };
        set(&mut b, 3, true, 5);
        set(&mut b, 5, true, 5);
        set(&mut b, 3, false, 0); // disarmed before it expires
        set(&mut b, 5, true, 1000); // re-armed far away
        let mut fired = Vec::new();
        for _ in 0..200 {
            b.settle();
            if b.uut.m_fire_valid.val() {
                fired.push(b.uut.m_fire_qpn.val().index());
            }
            b.tick();
        }
        assert!(fired.is_empty(), "fired {fired:?}");
        for _ in 0..1000 {
            b.settle();
            if b.uut.m_fire_valid.val() {
                fired.push(b.uut.m_fire_qpn.val().index());
                assert!(b.uut.m_fire_kind.val() == KIND_RNR);
            }
            b.tick();
        }
        assert_eq!(fired, vec![5]);
    }
}
