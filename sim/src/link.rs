//! A unidirectional Ethernet link: serialisation at line rate, propagation latency, and
//! seeded faults.
//!
//! Built, like smoltcp's `phy` wrappers, from small pieces that each do one thing and can
//! be used alone:
//!
//! - [`Serializer`]: when the last bit of a frame has left the sender, at line rate with
//!   the MAC's per-frame overhead;
//! - [`FaultInjector`]: what happens to a frame (a drop filter, random loss, corruption,
//!   duplication, reordering), from a ChaCha8 stream seeded by the configuration;
//! - [`DeliveryQueue`]: frames in flight, released in order of delivery cycle, FIFO on ties.
//!
//! [`Link`] chains them and counts what happened ([`LinkStats`]).
//!
//! # Timing
//!
//! A frame of `len` bytes (Ethernet header up, no FCS) pushed with [`Link::send`] at cycle
//! `now` starts serialising at `max(now, end of the previous frame's inter-frame gap)`. On
//! the wire it takes `8 (preamble+SFD) + max(len, 60) (MAC padding) + 4 (FCS)` bytes,
//! followed by a 12-byte inter-frame gap before the next frame may start. Time on the wire
//! is kept in bit-times, so back-to-back frames reach line rate exactly even when a frame
//! does not end on a cycle boundary. The frame is delivered at
//!
//! ```text
//! deliver = ceil(last FCS bit / bits_per_cycle) + latency_cycles (+ reorder delay)
//! ```
//!
//! which is always later than `now`, so a frame is never sent and received in one cycle.
//! Dropped frames occupy the sender's wire all the same (they are lost downstream).
//!
//! # Faults and determinism
//!
//! Every frame draws the same fixed number of values from the link's ChaCha8 stream, in the
//! same order, whether or not a fault is enabled or the filter drops it; so for one seed and
//! one sequence of frames the deliveries are always the same, and changing one probability
//! does not reshuffle the faults chosen by the others. In order, for frame number `i`
//! (0-based, counting every frame sent on this link):
//!
//! 1. the drop filter, if set, sees `(frame, i)` and may drop it ([`LinkStats::filtered`]);
//! 2. it is lost with probability `loss`;
//! 3. one bit, uniformly chosen over the whole frame, is flipped with probability `corrupt`
//!    (the frame is still delivered: the receiver's ICRC check must catch it);
//! 4. it is delivered twice with probability `duplicate` (the copy right after the
//!    original, the same bytes, no extra wire time);
//! 5. it is held back with probability `reorder` by an extra delay uniform in
//!    `1..=reorder_delay_cycles`, so later frames may overtake it.

use core::fmt;
use std::collections::BTreeMap;

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rocenic_proto::device::Frame;

use crate::SimError;

/// Preamble and start-of-frame delimiter, bytes.
pub const PREAMBLE_LEN: usize = 8;
/// Frame check sequence, bytes (not part of a [`Frame`], but on the wire).
pub const FCS_LEN: usize = 4;
/// Minimum inter-frame gap, bytes.
pub const IFG_LEN: usize = 12;
/// Minimum frame length without FCS; the MAC pads shorter frames.
pub const MIN_FRAME_LEN: usize = 60;

/// Bits per core-clock cycle (250 MHz) of an Ethernet line rate in Gb/s.
pub const fn bits_per_cycle_for_gbps(gbps: u64) -> u64 {
    gbps * 4
}

/// Decides a frame's drop by its bytes and its index on the link (0-based); `true` drops.
pub type DropFilter = Box<dyn FnMut(&[u8], u64) -> bool>;

/// Random faults of a link. All probabilities are per frame, in `0.0..=1.0`.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultConfig {
    /// Probability that a frame is lost.
    pub loss: f64,
    /// Probability that a frame is delivered twice.
    pub duplicate: f64,
    /// Probability that a frame is held back by an extra random delay.
    pub reorder: f64,
    /// Probability that one random bit of a frame is flipped.
    pub corrupt: f64,
    /// The largest extra delay of a held-back frame, cycles (at least 1 when `reorder > 0`).
    /// Default 1000 cycles (4 us): at 100 Gb/s about a dozen 4 KiB frames overtake it.
    pub reorder_delay_cycles: u64,
    /// Seed of the link's random stream.
    pub seed: u64,
}

impl Default for FaultConfig {
    fn default() -> Self {
        FaultConfig {
            loss: 0.0,
            duplicate: 0.0,
            reorder: 0.0,
            corrupt: 0.0,
            reorder_delay_cycles: 1000,
            seed: 0,
        }
    }
}

impl FaultConfig {
    /// Refuses probabilities outside `0..=1` and a zero reorder delay with reordering on.
    pub fn validate(&self) -> Result<(), SimError> {
        for (name, p) in [
            ("loss", self.loss),
            ("duplicate", self.duplicate),
            ("reorder", self.reorder),
            ("corrupt", self.corrupt),
        ] {
            if !(0.0..=1.0).contains(&p) {
                return Err(SimError::InvalidConfig(format!(
                    "FaultConfig::{name} = {p} is not a probability"
                )));
            }
        }
        if self.reorder > 0.0 && self.reorder_delay_cycles == 0 {
            return Err(SimError::InvalidConfig(
                "FaultConfig::reorder_delay_cycles must be at least 1 when reorder > 0".into(),
            ));
        }
        Ok(())
    }
}

/// Configuration of one direction of a cable.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkConfig {
    /// Cycles from the last bit leaving the sender to the frame reaching the receiver's
    /// queue: cable, PHYs and MAC pipelines. Default 100 (400 ns).
    pub latency_cycles: u64,
    /// Line rate in bits per core-clock cycle; default 400 = 100 Gb/s at 250 MHz (see
    /// [`bits_per_cycle_for_gbps`]). Bits rather than bytes keep 25 GbE (100) exact.
    pub bits_per_cycle: u64,
    /// Random faults; none by default.
    pub faults: FaultConfig,
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig {
            latency_cycles: 100,
            bits_per_cycle: bits_per_cycle_for_gbps(100),
            faults: FaultConfig::default(),
        }
    }
}

impl LinkConfig {
    /// The default link with these faults.
    pub fn with_faults(faults: FaultConfig) -> Self {
        LinkConfig {
            faults,
            ..LinkConfig::default()
        }
    }

    /// Refuses a zero line rate or bad faults.
    pub fn validate(&self) -> Result<(), SimError> {
        if self.bits_per_cycle == 0 {
            return Err(SimError::InvalidConfig(
                "LinkConfig::bits_per_cycle must be at least 1".into(),
            ));
        }
        self.faults.validate()
    }
}

/// The sending MAC: puts frames on the wire one after another at line rate.
#[derive(Debug, Clone)]
pub struct Serializer {
    bits_per_cycle: u64,
    /// The bit-time (cycles x bits_per_cycle) at which the wire is free for the next frame.
    free_at: u128,
}

impl Serializer {
    /// An idle wire of `bits_per_cycle`.
    ///
    /// # Panics
    /// If `bits_per_cycle` is 0 ([`LinkConfig::validate`] refuses that first).
    pub fn new(bits_per_cycle: u64) -> Self {
        assert!(bits_per_cycle > 0, "line rate must be positive");
        Serializer {
            bits_per_cycle,
            free_at: 0,
        }
    }

    /// Bits a frame of `len` bytes (without FCS) occupies on the wire, without the gap.
    pub fn frame_bits(len: usize) -> u128 {
        ((PREAMBLE_LEN + len.max(MIN_FRAME_LEN) + FCS_LEN) as u128) * 8
    }

    /// Sends a frame of `len` bytes offered at cycle `now`; returns the cycle in which its
    /// last bit leaves (always after `now`).
    pub fn transmit(&mut self, now: u64, len: usize) -> u64 {
        let bpc = u128::from(self.bits_per_cycle);
        let start = self.free_at.max(u128::from(now) * bpc);
        let end = start + Self::frame_bits(len);
        self.free_at = end + (IFG_LEN as u128) * 8;
        u64::try_from(end.div_ceil(bpc)).unwrap_or(u64::MAX)
    }

    /// The first cycle at which a new frame would start without waiting.
    pub fn free_cycle(&self) -> u64 {
        let c = self.free_at.div_ceil(u128::from(self.bits_per_cycle));
        u64::try_from(c).unwrap_or(u64::MAX)
    }
}

/// Why a frame did not arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropCause {
    /// The drop filter chose it.
    Filter,
    /// Random loss.
    Loss,
}

/// What the network does to one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    /// The frame's index on the link.
    pub index: u64,
    /// Dropped, and why; the other fields are then unused.
    pub drop: Option<DropCause>,
    /// The bit to flip (bit `b % 8` of byte `b / 8`, LSB = 0).
    pub corrupt_bit: Option<usize>,
    /// Deliver a second copy.
    pub duplicate: bool,
    /// Extra delay in cycles; non-zero when the frame is held back.
    pub extra_delay: u64,
}

/// Decides each frame's fate from a seeded random stream and an optional drop filter.
pub struct FaultInjector {
    cfg: FaultConfig,
    rng: ChaCha8Rng,
    filter: Option<DropFilter>,
    next_index: u64,
}

impl FaultInjector {
    /// An injector for `cfg` (validated by the caller); its stream is seeded by `cfg.seed`.
    pub fn new(cfg: FaultConfig) -> Self {
        let rng = ChaCha8Rng::seed_from_u64(cfg.seed);
        FaultInjector {
            cfg,
            rng,
            filter: None,
            next_index: 0,
        }
    }

    /// Installs a drop filter, replacing any previous one.
    pub fn set_filter(&mut self, filter: DropFilter) {
        self.filter = Some(filter);
    }

    /// Removes the drop filter.
    pub fn clear_filter(&mut self) {
        self.filter = None;
    }

    /// The configuration.
    pub fn config(&self) -> &FaultConfig {
        &self.cfg
    }

    /// Decides the fate of the next frame. Draws exactly six values from the stream.
    pub fn judge(&mut self, frame: &[u8]) -> Verdict {
        let index = self.next_index;
        self.next_index += 1;
        let mut draw = [0u64; 6];
        for d in &mut draw {
            *d = self.rng.next_u64();
        }
        let [loss, corrupt, bit, dup, reorder, delay] = draw;
        let mut v = Verdict {
            index,
            drop: None,
            corrupt_bit: None,
            duplicate: false,
            extra_delay: 0,
        };
        if let Some(filter) = &mut self.filter {
            if filter(frame, index) {
                v.drop = Some(DropCause::Filter);
                return v;
            }
        }
        if chance(loss, self.cfg.loss) {
            v.drop = Some(DropCause::Loss);
            return v;
        }
        if !frame.is_empty() && chance(corrupt, self.cfg.corrupt) {
            v.corrupt_bit = Some(below(bit, frame.len() as u64 * 8) as usize);
        }
        v.duplicate = chance(dup, self.cfg.duplicate);
        if chance(reorder, self.cfg.reorder) {
            v.extra_delay = 1 + below(delay, self.cfg.reorder_delay_cycles);
        }
        v
    }
}

impl fmt::Debug for FaultInjector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FaultInjector")
            .field("cfg", &self.cfg)
            .field("filter", &self.filter.as_ref().map(|_| "FnMut"))
            .field("next_index", &self.next_index)
            .finish()
    }
}

/// `true` with probability `p`, from a uniform u64 (53 bits used; `p = 1` always true).
fn chance(x: u64, p: f64) -> bool {
    const SCALE: f64 = 1.0 / (1u64 << 53) as f64;
    ((x >> 11) as f64) * SCALE < p
}

/// A value in `0..n` from a uniform u64 (multiply-shift: one draw, bias below 2^-32 for
/// any `n` used here); 0 when `n == 0`.
fn below(x: u64, n: u64) -> u64 {
    ((u128::from(x) * u128::from(n)) >> 64) as u64
}

/// Frames in flight, released in order of delivery cycle; equal cycles keep push order.
#[derive(Debug, Clone, Default)]
pub struct DeliveryQueue {
    frames: BTreeMap<(u64, u64), Frame>,
    seq: u64,
}

impl DeliveryQueue {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Queues `frame` for delivery at cycle `at`.
    pub fn push(&mut self, at: u64, frame: Frame) {
        self.frames.insert((at, self.seq), frame);
        self.seq += 1;
    }

    /// The cycle of the earliest delivery.
    pub fn next_due(&self) -> Option<u64> {
        self.frames.keys().next().map(|&(at, _)| at)
    }

    /// Removes and returns the earliest frame if it is due at or before `now`, with its
    /// delivery cycle.
    pub fn pop_due(&mut self, now: u64) -> Option<(u64, Frame)> {
        if self.next_due()? > now {
            return None;
        }
        self.frames.pop_first().map(|((at, _), f)| (at, f))
    }

    /// Frames in flight.
    pub fn len(&self) -> usize {
        self.frames.len()
    }

    /// No frame in flight.
    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }
}

/// Counters of one link.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Frames sent into the link.
    pub sent: u64,
    /// Bytes of the frames sent (without wire overhead).
    pub bytes_sent: u64,
    /// Frames handed to the receiver (duplicates included).
    pub delivered: u64,
    /// Frames lost at random.
    pub lost: u64,
    /// Frames dropped by the drop filter.
    pub filtered: u64,
    /// Extra copies delivered.
    pub duplicated: u64,
    /// Frames held back by an extra delay.
    pub reordered: u64,
    /// Frames with a flipped bit.
    pub corrupted: u64,
}

/// One direction of a cable: [`Serializer`], then [`FaultInjector`], then latency and a
/// [`DeliveryQueue`].
#[derive(Debug)]
pub struct Link {
    cfg: LinkConfig,
    serializer: Serializer,
    injector: FaultInjector,
    queue: DeliveryQueue,
    stats: LinkStats,
}

impl Link {
    /// An idle link; refuses a bad configuration.
    pub fn new(cfg: LinkConfig) -> Result<Self, SimError> {
        cfg.validate()?;
        Ok(Link {
            serializer: Serializer::new(cfg.bits_per_cycle),
            injector: FaultInjector::new(cfg.faults.clone()),
            queue: DeliveryQueue::new(),
            stats: LinkStats::default(),
            cfg,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &LinkConfig {
        &self.cfg
    }

    /// Sends `frame`, offered at cycle `now` (cycles must not go backwards between calls).
    /// Returns the verdict of the fault injector.
    pub fn send(&mut self, now: u64, mut frame: Frame) -> Verdict {
        self.stats.sent += 1;
        self.stats.bytes_sent += frame.len() as u64;
        let sent = self.serializer.transmit(now, frame.len());
        let v = self.injector.judge(&frame);
        match v.drop {
            Some(DropCause::Filter) => self.stats.filtered += 1,
            Some(DropCause::Loss) => self.stats.lost += 1,
            None => {
                if let Some(bit) = v.corrupt_bit {
                    frame[bit / 8] ^= 1 << (bit % 8);
                    self.stats.corrupted += 1;
                }
                if v.extra_delay > 0 {
                    self.stats.reordered += 1;
                }
                let at = sent
                    .saturating_add(self.cfg.latency_cycles)
                    .saturating_add(v.extra_delay);
                if v.duplicate {
                    self.stats.duplicated += 1;
                    self.queue.push(at, frame.clone());
                }
                self.queue.push(at, frame);
            }
        }
        v
    }

    /// The cycle of the next delivery, if a frame is in flight.
    pub fn next_delivery(&self) -> Option<u64> {
        self.queue.next_due()
    }

    /// Takes the next frame due at or before `now`, with its delivery cycle.
    pub fn receive(&mut self, now: u64) -> Option<(u64, Frame)> {
        let got = self.queue.pop_due(now);
        if got.is_some() {
            self.stats.delivered += 1;
        }
        got
    }

    /// Frames in flight.
    pub fn in_flight(&self) -> usize {
        self.queue.len()
    }

    /// Lends the frames in flight to the receiving side (the world's two-thread stepping:
    /// the receiver's thread takes what is due while the sender's frames of the same span
    /// are held back, see `world`); give them back with [`Link::restore_queue`] before the
    /// next `send` or `receive`.
    pub(crate) fn take_queue(&mut self) -> DeliveryQueue {
        std::mem::take(&mut self.queue)
    }

    /// Takes back the queue lent by [`Link::take_queue`], of which `delivered` frames were
    /// received meanwhile.
    pub(crate) fn restore_queue(&mut self, queue: DeliveryQueue, delivered: u64) {
        self.queue = queue;
        self.stats.delivered += delivered;
    }

    /// The counters.
    pub fn stats(&self) -> LinkStats {
        self.stats
    }

    /// Installs a drop filter: `f(frame, index)` returning `true` drops the frame; `index`
    /// counts every frame sent on this link from 0 (so `|_, i| i == 2` drops the third).
    pub fn set_drop_filter(&mut self, f: impl FnMut(&[u8], u64) -> bool + 'static) {
        self.injector.set_filter(Box::new(f));
    }

    /// Removes the drop filter.
    pub fn clear_drop_filter(&mut self) {
        self.injector.clear_filter();
    }
}

impl fmt::Display for LinkStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "sent {} ({} B), delivered {}, lost {}, filtered {}, duplicated {}, reordered {}, corrupted {}",
            self.sent,
            self.bytes_sent,
            self.delivered,
            self.lost,
            self.filtered,
            self.duplicated,
            self.reordered,
            self.corrupted
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Frame `i`: 64 bytes, the index in the first 8.
    fn frame(i: u64) -> Frame {
        let mut f = vec![0u8; 64];
        f[..8].copy_from_slice(&i.to_le_bytes());
        f
    }

    fn index_of(f: &[u8]) -> u64 {
        u64::from_le_bytes(f[..8].try_into().unwrap())
    }

    /// Sends `n` frames, one every `gap` cycles, and drains the link; returns
    /// (delivery cycle, frame) in delivery order.
    fn run(link: &mut Link, n: u64, gap: u64) -> Vec<(u64, Frame)> {
        let mut out = Vec::new();
        for i in 0..n {
            link.send(i * gap, frame(i));
        }
        while let Some(got) = link.receive(u64::MAX) {
            out.push(got);
        }
        out
    }

    #[test]
    fn serializer_timing() {
        let mut s = Serializer::new(400);
        // 1000 B: (8 + 1000 + 4) * 8 = 8096 bits = 20.24 cycles -> last bit in cycle 21.
        assert_eq!(s.transmit(0, 1000), 21);
        // Offered at 0 but the wire is busy until 8096 + 96 bits = 20.48 cycles.
        // Ends at 8192 + 8096 = 16288 bits = 40.72 -> 41.
        assert_eq!(s.transmit(0, 1000), 41);
        assert_eq!(s.free_cycle(), 41);
        // A short frame is padded to 60 B: 72 * 8 = 576 bits = 1.44 cycles.
        let mut s = Serializer::new(400);
        assert_eq!(s.transmit(100, 10), 102);
        // Back-to-back 4096 B frames at 100 Gb/s reach exactly line rate:
        // (8 + 4096 + 4 + 12) * 8 = 32960 bits per frame = 82.4 cycles.
        let mut s = Serializer::new(400);
        let last = (0..1000).map(|_| s.transmit(0, 4096)).last().unwrap();
        assert_eq!(last, (999 * 32960 + 32864u64).div_ceil(400));
    }

    #[test]
    fn fifo_with_latency_and_no_faults() {
        let mut link = Link::new(LinkConfig::default()).unwrap();
        let got = run(&mut link, 1000, 3);
        assert_eq!(got.len(), 1000);
        for (i, (at, f)) in got.iter().enumerate() {
            assert_eq!(index_of(f), i as u64);
            assert_eq!(f, &frame(i as u64));
            // 64 B: 76 * 8 = 608 bits = 1.52 cycles, next frame 3 cycles later: no queueing.
            assert_eq!(*at, i as u64 * 3 + 2 + 100);
        }
        let s = link.stats();
        assert_eq!(
            (s.sent, s.delivered, s.lost, s.corrupted),
            (1000, 1000, 0, 0)
        );
        assert_eq!(s.bytes_sent, 64_000);
    }

    #[test]
    fn receive_waits_for_the_delivery_cycle() {
        let mut link = Link::new(LinkConfig::default()).unwrap();
        link.send(10, frame(0));
        assert_eq!(link.next_delivery(), Some(112));
        assert!(link.receive(111).is_none());
        assert_eq!(link.receive(112).map(|(at, _)| at), Some(112));
        assert!(link.next_delivery().is_none());
    }

    #[test]
    fn same_seed_same_deliveries_different_seed_different() {
        let faults = FaultConfig {
            loss: 0.05,
            duplicate: 0.05,
            reorder: 0.05,
            corrupt: 0.05,
            seed: 7,
            ..FaultConfig::default()
        };
        let a = run(
            &mut Link::new(LinkConfig::with_faults(faults.clone())).unwrap(),
            2000,
            1,
        );
        let b = run(
            &mut Link::new(LinkConfig::with_faults(faults.clone())).unwrap(),
            2000,
            1,
        );
        assert_eq!(a, b);
        let c = run(
            &mut Link::new(LinkConfig::with_faults(FaultConfig { seed: 8, ..faults })).unwrap(),
            2000,
            1,
        );
        assert_ne!(a, c);
    }

    #[test]
    fn fault_rates_match_configuration() {
        let n = 10_000u64;
        let faults = FaultConfig {
            loss: 0.10,
            duplicate: 0.05,
            reorder: 0.02,
            corrupt: 0.03,
            seed: 42,
            ..FaultConfig::default()
        };
        let mut link = Link::new(LinkConfig::with_faults(faults)).unwrap();
        let got = run(&mut link, n, 100);
        let s = link.stats();
        let near = |count: u64, p: f64, of: u64| {
            let expect = p * of as f64;
            let sd = (expect * (1.0 - p)).sqrt();
            (count as f64 - expect).abs() < 4.0 * sd
        };
        assert!(near(s.lost, 0.10, n), "lost {}", s.lost);
        let survivors = n - s.lost;
        assert!(near(s.duplicated, 0.05, survivors), "dup {}", s.duplicated);
        assert!(
            near(s.reordered, 0.02, survivors),
            "reorder {}",
            s.reordered
        );
        assert!(
            near(s.corrupted, 0.03, survivors),
            "corrupt {}",
            s.corrupted
        );
        assert_eq!(s.delivered, survivors + s.duplicated);
        assert_eq!(got.len() as u64, s.delivered);

        // A corrupted frame differs from what was sent in one bit: at most one bit is set
        // in the 56 bytes that were sent as zeros.
        for (_, f) in &got {
            assert!(f[8..].iter().map(|b| b.count_ones()).sum::<u32>() <= 1);
        }

        // Reordered frames come out after frames sent later.
        let order: Vec<u64> = got
            .iter()
            .filter(|(_, f)| f[8..].iter().all(|&b| b == 0))
            .map(|(_, f)| index_of(f))
            .collect();
        let out_of_order = order.windows(2).filter(|w| w[0] > w[1]).count();
        assert!(out_of_order > 0);
    }

    #[test]
    fn corruption_flips_exactly_one_bit() {
        let faults = FaultConfig {
            corrupt: 1.0,
            seed: 1,
            ..FaultConfig::default()
        };
        let mut link = Link::new(LinkConfig::with_faults(faults)).unwrap();
        for i in 0..500u64 {
            let sent = vec![(i % 251) as u8; 1 + (i as usize % 300)];
            link.send(i * 100, sent.clone());
            let (_, got) = link.receive(u64::MAX).unwrap();
            let diff: u32 = sent
                .iter()
                .zip(&got)
                .map(|(a, b)| (a ^ b).count_ones())
                .sum();
            assert_eq!(diff, 1);
        }
        assert_eq!(link.stats().corrupted, 500);
    }

    #[test]
    fn duplicates_follow_the_original() {
        let faults = FaultConfig {
            duplicate: 1.0,
            ..FaultConfig::default()
        };
        let mut link = Link::new(LinkConfig::with_faults(faults)).unwrap();
        let got = run(&mut link, 3, 50);
        let idx: Vec<u64> = got.iter().map(|(_, f)| index_of(f)).collect();
        assert_eq!(idx, vec![0, 0, 1, 1, 2, 2]);
        assert_eq!(got[0].0, got[1].0);
    }

    #[test]
    fn drop_filter_sees_frame_and_index() {
        let mut link = Link::new(LinkConfig::default()).unwrap();
        link.set_drop_filter(|f, i| i == 2 || index_of(f) == 7);
        let idx: Vec<u64> = run(&mut link, 10, 10)
            .iter()
            .map(|(_, f)| index_of(f))
            .collect();
        assert_eq!(idx, vec![0, 1, 3, 4, 5, 6, 8, 9]);
        assert_eq!(link.stats().filtered, 2);
        link.clear_drop_filter();
        assert_eq!(run(&mut link, 1, 1).len(), 1);
    }

    #[test]
    fn filter_does_not_perturb_random_faults() {
        let faults = FaultConfig {
            loss: 0.3,
            seed: 3,
            ..FaultConfig::default()
        };
        let plain: Vec<u64> = run(
            &mut Link::new(LinkConfig::with_faults(faults.clone())).unwrap(),
            200,
            10,
        )
        .iter()
        .map(|(_, f)| index_of(f))
        .collect();
        let mut link = Link::new(LinkConfig::with_faults(faults)).unwrap();
        link.set_drop_filter(|_, i| i % 10 == 0);
        let filtered: Vec<u64> = run(&mut link, 200, 10)
            .iter()
            .map(|(_, f)| index_of(f))
            .collect();
        let expect: Vec<u64> = plain.into_iter().filter(|i| i % 10 != 0).collect();
        assert_eq!(filtered, expect);
    }

    #[test]
    fn bad_configuration_is_refused() {
        let bad = |faults| Link::new(LinkConfig::with_faults(faults)).is_err();
        assert!(bad(FaultConfig {
            loss: 1.5,
            ..FaultConfig::default()
        }));
        assert!(bad(FaultConfig {
            corrupt: -0.1,
            ..FaultConfig::default()
        }));
        assert!(bad(FaultConfig {
            duplicate: f64::NAN,
            ..FaultConfig::default()
        }));
        assert!(bad(FaultConfig {
            reorder: 0.1,
            reorder_delay_cycles: 0,
            ..FaultConfig::default()
        }));
        assert!(Link::new(LinkConfig {
            bits_per_cycle: 0,
            ..LinkConfig::default()
        })
        .is_err());
    }

    #[test]
    fn delivery_queue_ties_keep_fifo_order() {
        let mut q = DeliveryQueue::new();
        q.push(5, vec![1]);
        q.push(3, vec![2]);
        q.push(5, vec![3]);
        q.push(3, vec![4]);
        assert_eq!(q.next_due(), Some(3));
        assert!(q.pop_due(2).is_none());
        let all: Vec<_> = std::iter::from_fn(|| q.pop_due(10)).collect();
        assert_eq!(
            all,
            vec![(3, vec![2]), (3, vec![4]), (5, vec![1]), (5, vec![3])]
        );
        assert!(q.is_empty());
    }

    mod prop {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            /// Without faults, any traffic arrives complete, in order, never before its
            /// serialisation and latency, and never faster than line rate.
            #[test]
            fn fifo_and_line_rate(
                frames in proptest::collection::vec((0u64..300, 0usize..2000), 1..200),
                latency in 0u64..500,
                gbps in prop_oneof![Just(10u64), Just(25), Just(100), Just(400)],
            ) {
                let bpc = bits_per_cycle_for_gbps(gbps);
                let mut link = Link::new(LinkConfig {
                    latency_cycles: latency,
                    bits_per_cycle: bpc,
                    faults: FaultConfig::default(),
                })
                .unwrap();
                let mut now = 0;
                let mut sent = Vec::new();
                for (i, (gap, len)) in frames.iter().enumerate() {
                    now += gap;
                    let mut f = vec![0u8; (*len).max(8)];
                    f[..8].copy_from_slice(&(i as u64).to_le_bytes());
                    link.send(now, f.clone());
                    sent.push((now, f));
                }
                let got: Vec<_> = std::iter::from_fn(|| link.receive(u64::MAX)).collect();
                prop_assert_eq!(got.len(), sent.len());
                let first = sent[0].0;
                let mut bits = 0u128;
                for (k, ((at, f), (sent_at, g))) in got.iter().zip(&sent).enumerate() {
                    prop_assert_eq!(f, g);
                    bits += Serializer::frame_bits(f.len());
                    prop_assert!(*at > sent_at + latency);
                    // Everything up to frame k needed at least its wire time since the first send.
                    let floor = u128::from(first) * u128::from(bpc) + bits + (k as u128) * (IFG_LEN as u128) * 8;
                    prop_assert!(u128::from(*at - latency) * u128::from(bpc) >= floor);
                }
                prop_assert!(got.windows(2).all(|w| w[0].0 <= w[1].0));
            }
        }
    }
}
