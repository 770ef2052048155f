//! Packet sequence numbers: 24-bit counters compared on a circle.

use core::fmt;

/// A 24-bit packet sequence number. The value is always below 2^24; arithmetic wraps.
///
/// Order is only meaningful within half the circle: `a.is_before(b)` when `b` lies less than
/// 2^23 steps ahead of `a` (or exactly 2^23, where both directions hold; a protocol engine
/// never has that many packets in flight).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Psn(u32);

impl Psn {
    /// The bits a PSN occupies.
    pub const MASK: u32 = 0x00FF_FFFF;
    /// Half the circle: the largest forward distance.
    const HALF: u32 = 1 << 23;

    /// Makes a PSN from the low 24 bits of `value`.
    pub const fn new(value: u32) -> Psn {
        Psn(value & Self::MASK)
    }

    pub const fn value(self) -> u32 {
        self.0
    }

    pub const fn wrapping_add(self, n: u32) -> Psn {
        Psn::new(self.0.wrapping_add(n))
    }

    pub const fn wrapping_sub(self, n: u32) -> Psn {
        Psn::new(self.0.wrapping_sub(n))
    }

    /// The PSN after this one.
    pub const fn next(self) -> Psn {
        self.wrapping_add(1)
    }

    /// How far `b` is ahead of `a` (`b - a` on the circle), in (-2^23, 2^23].
    pub const fn distance(a: Psn, b: Psn) -> i32 {
        let forward = b.0.wrapping_sub(a.0) & Self::MASK;
        if forward > Self::HALF {
            forward as i32 - (Self::MASK as i32 + 1)
        } else {
            forward as i32
        }
    }

    /// Whether `self` comes before `other` on the circle.
    pub const fn is_before(self, other: Psn) -> bool {
        Self::distance(self, other) > 0
    }

    /// Whether `self` comes after `other` on the circle.
    pub const fn is_after(self, other: Psn) -> bool {
        other.is_before(self)
    }
}

impl From<u32> for Psn {
    /// Keeps the low 24 bits.
    fn from(value: u32) -> Self {
        Psn::new(value)
    }
}

impl From<Psn> for u32 {
    fn from(value: Psn) -> Self {
        value.0
    }
}

impl fmt::Display for Psn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::tests::XorShift;

    const TOP: u32 = Psn::MASK;

    #[test]
    fn wraps() {
        assert_eq!(Psn::new(TOP).next(), Psn::new(0));
        assert_eq!(Psn::new(TOP).wrapping_add(1), Psn::new(0));
        assert_eq!(Psn::new(0).wrapping_sub(1), Psn::new(TOP));
        assert_eq!(Psn::new(5).wrapping_sub(10).value(), TOP - 4);
        assert_eq!(Psn::new(0x1234_5678).value(), 0x34_5678);
        assert_eq!(Psn::new(TOP).wrapping_add(u32::MAX), Psn::new(TOP - 1));
        assert_eq!(u32::from(Psn::from(0xFF00_0001)), 1);
    }

    #[test]
    fn distance_across_the_wrap() {
        assert_eq!(Psn::distance(Psn::new(TOP), Psn::new(0)), 1);
        assert_eq!(Psn::distance(Psn::new(0), Psn::new(TOP)), -1);
        assert_eq!(Psn::distance(Psn::new(TOP - 2), Psn::new(3)), 6);
        assert_eq!(Psn::distance(Psn::new(7), Psn::new(7)), 0);
        // The ends of the range (-2^23, 2^23].
        assert_eq!(Psn::distance(Psn::new(0), Psn::new(1 << 23)), 1 << 23);
        assert_eq!(Psn::distance(Psn::new(1 << 23), Psn::new(0)), 1 << 23);
        assert_eq!(
            Psn::distance(Psn::new(0), Psn::new((1 << 23) + 1)),
            -(1 << 23) + 1
        );
        assert!(Psn::new(TOP).is_before(Psn::new(0)));
        assert!(Psn::new(0).is_after(Psn::new(TOP)));
        assert!(!Psn::new(0).is_before(Psn::new(0)));
        assert!(!Psn::new(0).is_after(Psn::new(0)));
    }

    #[test]
    fn properties_hold_on_random_points() {
        let mut rng = XorShift::new(0x9_5A);
        for _ in 0..100_000 {
            let a = Psn::new(rng.next() as u32);
            // Mostly small steps, to cross the wrap often, and sometimes any step.
            let n = if rng.below(2) == 0 {
                rng.below(64) as u32
            } else {
                rng.next() as u32
            };
            let b = a.wrapping_add(n);
            assert!(b.value() <= TOP);
            assert_eq!(b.wrapping_sub(n), a);
            let d = Psn::distance(a, b);
            assert!(d > -(1 << 23) && d <= 1 << 23, "{d}");
            assert_eq!(a.wrapping_add(d as u32), b, "distance leads from a to b");
            assert_eq!(d as u32 & TOP, n & TOP);
            if d != 1 << 23 {
                assert_eq!(Psn::distance(b, a), -d, "antisymmetric off the half point");
                assert_eq!(a.is_before(b), b.is_after(a));
                assert_eq!(a.is_before(b), !b.is_before(a) && a != b);
            }
            let small = (n & 0xFFFF) + 1;
            assert!(a.is_before(a.wrapping_add(small)));
            assert!(a.is_after(a.wrapping_sub(small)));
        }
    }

    #[test]
    fn display() {
        assert_eq!(Psn::new(TOP).to_string(), "16777215");
    }
}
