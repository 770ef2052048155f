//! The IOVA space of a container: the ranges the IOMMU can translate, which of them are in
//! use, and the choice of an IOVA for a new DMA buffer.
//!
//! Policy (docs/design.md): a buffer's IOVA equals its virtual address when that address
//! range lies inside one usable range, below the device's DMA mask, and is free; otherwise
//! it is the lowest free, suitably aligned address that fits (first fit). IOVA 0 is never
//! handed out, so a zero DMA address always means "none".

use std::collections::BTreeMap;
use std::fmt;

/// A range of usable IOVAs, both ends inclusive (as VFIO reports them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IovaRange {
    /// The first usable IOVA.
    pub start: u64,
    /// The last usable IOVA.
    pub end: u64,
}

impl fmt::Display for IovaRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{:#x}, {:#x}]", self.start, self.end)
    }
}

/// Formats a list of ranges for messages.
pub fn ranges_text(r: &[IovaRange]) -> String {
    r.iter()
        .map(|r| r.to_string())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Usable ranges and the IOVAs in use.
#[derive(Debug, Clone)]
pub struct IovaSpace {
    ranges: Vec<IovaRange>,
    /// start -> length of each IOVA range in use; the ranges never overlap.
    used: BTreeMap<u64, u64>,
}

fn align_up(x: u64, align: u64) -> Option<u64> {
    x.checked_add(align - 1).map(|v| v & !(align - 1))
}

impl IovaSpace {
    /// A space made of `ranges` (in any order; empty ranges are dropped).
    pub fn new(mut ranges: Vec<IovaRange>) -> Self {
        ranges.retain(|r| r.start <= r.end);
        ranges.sort_by_key(|r| r.start);
        IovaSpace {
            ranges,
            used: BTreeMap::new(),
        }
    }

    /// The usable ranges, sorted.
    pub fn ranges(&self) -> &[IovaRange] {
        &self.ranges
    }

    /// The in-use block overlapping `[iova, end]`, if any.
    fn overlap(&self, iova: u64, end: u64) -> Option<(u64, u64)> {
        // Blocks do not overlap one another, so only the last one starting at or before
        // `end` can reach into the range.
        self.used
            .range(..=end)
            .next_back()
            .map(|(&s, &l)| (s, l))
            .filter(|&(s, l)| s + (l - 1) >= iova)
    }

    /// Whether `[iova, iova + len)` is non-empty, inside one usable range, at or below
    /// `mask` and free.
    pub fn is_free(&self, iova: u64, len: u64, mask: u64) -> bool {
        let Some(end) = len.checked_sub(1).and_then(|l| iova.checked_add(l)) else {
            return false;
        };
        iova != 0
            && end <= mask
            && self.ranges.iter().any(|r| r.start <= iova && end <= r.end)
            && self.overlap(iova, end).is_none()
    }

    /// The IOVA for a buffer of `len` bytes at virtual address `va`: `va` itself when it
    /// is usable (and `align`-aligned), else the lowest free `align`-aligned IOVA whose
    /// whole buffer fits below `mask` in one usable range. `align` is a power of two.
    pub fn choose(&self, va: u64, len: u64, align: u64, mask: u64) -> Option<u64> {
        debug_assert!(align.is_power_of_two() && len > 0);
        if va.is_multiple_of(align) && self.is_free(va, len, mask) {
            return Some(va);
        }
        for r in &self.ranges {
            let hi = r.end.min(mask);
            let Some(mut cur) = align_up(r.start.max(1), align) else {
                continue;
            };
            loop {
                let end = match cur.checked_add(len - 1) {
                    Some(e) if e <= hi => e,
                    _ => break,
                };
                match self.overlap(cur, end) {
                    None => return Some(cur),
                    Some((s, l)) => match s.checked_add(l).and_then(|e| align_up(e, align)) {
                        Some(next) => cur = next,
                        None => break,
                    },
                }
            }
        }
        None
    }

    /// Marks `[iova, iova + len)` in use (it must be free).
    pub fn reserve(&mut self, iova: u64, len: u64) {
        debug_assert!(self.is_free(iova, len, u64::MAX));
        self.used.insert(iova, len);
    }

    /// Frees the block starting at `iova`; returns its length.
    pub fn release(&mut self, iova: u64) -> Option<u64> {
        self.used.remove(&iova)
    }

    /// Bytes of IOVA space in use.
    pub fn used_bytes(&self) -> u64 {
        self.used.values().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: u64 = 4096;

    /// What Linux reports behind an Intel IOMMU with 39-bit addresses: everything but the
    /// MSI window.
    fn vtd39() -> IovaSpace {
        IovaSpace::new(vec![
            IovaRange {
                start: 0xfef0_0000,
                end: (1 << 39) - 1,
            },
            IovaRange {
                start: 0,
                end: 0xfedf_ffff,
            },
        ])
    }

    #[test]
    fn identity_when_the_va_is_usable() {
        let s = IovaSpace::new(vec![IovaRange {
            start: 0,
            end: (1 << 48) - 1,
        }]);
        let va = 0x7f12_3456_7000;
        assert_eq!(s.choose(va, 8192, PAGE, u64::MAX), Some(va));
    }

    #[test]
    fn allocates_when_the_va_is_beyond_the_iommu_or_the_mask() {
        let mut s = vtd39();
        assert_eq!(s.ranges()[0].start, 0, "sorted");
        let va = 0x7f12_3456_7000; // above 2^39
        let a = s.choose(va, 3 * PAGE, PAGE, (1 << 28) - 1).unwrap();
        assert_eq!(a, PAGE, "lowest free page; never IOVA 0");
        s.reserve(a, 3 * PAGE);
        let b = s.choose(va, PAGE, PAGE, (1 << 28) - 1).unwrap();
        assert_eq!(b, 4 * PAGE);
        s.reserve(b, PAGE);
        // Huge alignment skips ahead.
        let c = s.choose(va, 2 << 20, 2 << 20, (1 << 28) - 1).unwrap();
        assert_eq!(c, 2 << 20);
        s.reserve(c, 2 << 20);
        assert_eq!(s.used_bytes(), 4 * PAGE + (2 << 20));
        // A hole is reused.
        assert_eq!(s.release(a), Some(3 * PAGE));
        assert_eq!(s.choose(va, 2 * PAGE, PAGE, (1 << 28) - 1), Some(PAGE));
        assert_eq!(s.release(a), None);
        // A VA below the mask but in use is not taken twice.
        assert!(!s.is_free(b, PAGE, u64::MAX));
        assert_eq!(s.choose(b, PAGE, PAGE, (1 << 28) - 1), Some(PAGE));
    }

    #[test]
    fn respects_the_reserved_window_and_range_ends() {
        let mut s = vtd39();
        // Fill the low range up to just below the MSI window, then ask for more than fits.
        s.reserve(PAGE, 0xfedf_f000 - PAGE);
        let a = s.choose(!0xfff, 2 * PAGE, PAGE, u64::MAX).unwrap();
        assert_eq!(a, 0xfef0_0000, "skips [0xfee00000, 0xfeefffff]");
        // With a 32-bit mask nothing is left.
        assert_eq!(s.choose(0, 2 * PAGE, PAGE, 0xffff_ffff), Some(0xfef0_0000));
        assert_eq!(s.choose(0, 0x2000_0000, PAGE, 0xffff_ffff), None);
    }

    #[test]
    fn edge_cases() {
        let s = IovaSpace::new(vec![
            IovaRange { start: 5, end: 4 }, // empty: dropped
            IovaRange {
                start: u64::MAX - PAGE + 1,
                end: u64::MAX,
            },
        ]);
        assert_eq!(s.ranges().len(), 1);
        assert!(!s.is_free(0, 0, u64::MAX), "empty length");
        assert!(!s.is_free(u64::MAX, 2, u64::MAX), "wraps");
        assert!(!s.is_free(0, PAGE, u64::MAX), "IOVA 0 is never used");
        // Alignment overflow at the top of the space, and a length that runs past the end.
        assert_eq!(s.choose(1, PAGE, 1 << 63, u64::MAX), None);
        assert_eq!(s.choose(1, 2 * PAGE, PAGE, u64::MAX), None);
        assert_eq!(s.choose(1, PAGE, PAGE, u64::MAX), Some(u64::MAX - PAGE + 1));
        let mut t = IovaSpace::new(vec![IovaRange {
            start: 0,
            end: u64::MAX,
        }]);
        t.reserve(u64::MAX - PAGE + 1, PAGE);
        // Skipping past a block that ends at the top of the space overflows: nothing left.
        t.reserve(PAGE, u64::MAX - 2 * PAGE + 1);
        assert_eq!(t.choose(1, PAGE, PAGE, u64::MAX), None);
        assert_eq!(ranges_text(t.ranges()), "[0x0, 0xffffffffffffffff]");
    }
}
