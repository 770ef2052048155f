//! Host-side bookkeeping of the descriptor rings: the SQ and RQ of a QP (host produces,
//! device consumes) and a CQ (device produces, host consumes).
//!
//! All indices are free-running `u32` counts; a slot is `index mod 2^log_size`. Comparisons
//! use wrapping arithmetic, so the rings keep working after 2^32 entries.

use rocenic_proto::abi::DESC_SIZE;

use crate::backend::DmaRegion;

/// A work queue (SQ or RQ): a ring of 64-byte WQEs the host writes and the device reads.
#[derive(Debug, Clone)]
pub(crate) struct WorkQueue {
    pub region: DmaRegion,
    pub log_size: u32,
    /// Producer index: WQEs written by the host (announced or about to be).
    pub pi: u32,
    /// Retired index: WQEs the host knows the device is done with (from completions).
    /// Slots `retired .. pi` must not be rewritten.
    pub retired: u32,
}

impl WorkQueue {
    pub fn new(region: DmaRegion, log_size: u32) -> Self {
        WorkQueue {
            region,
            log_size,
            pi: 0,
            retired: 0,
        }
    }

    /// Number of slots.
    pub fn size(&self) -> u32 {
        1 << self.log_size
    }

    /// WQEs posted and not yet retired.
    pub fn outstanding(&self) -> u32 {
        self.pi.wrapping_sub(self.retired)
    }

    /// Slots that may be written now.
    pub fn free(&self) -> u32 {
        self.size() - self.outstanding()
    }

    /// Host virtual address of the slot of free-running index `index`.
    pub fn slot_va(&self, index: u32) -> u64 {
        let slot = index & (self.size() - 1);
        self.region.va + (slot as u64) * DESC_SIZE as u64
    }

    /// A completion for the WQE at free-running index `wqe_index` arrived: it and every
    /// earlier WQE of this queue are done (RC completes in order). Indices outside the
    /// outstanding window are ignored (returns false).
    pub fn retire_through(&mut self, wqe_index: u32) -> bool {
        if wqe_index.wrapping_sub(self.retired) < self.outstanding() {
            self.retired = wqe_index.wrapping_add(1);
            true
        } else {
            false
        }
    }
}

/// A completion queue ring: 64-byte CQEs the device writes with the phase rule.
#[derive(Debug, Clone)]
pub(crate) struct CqRing {
    pub region: DmaRegion,
    pub log_size: u32,
    /// Consumer index: CQEs consumed by the host.
    pub ci: u32,
}

impl CqRing {
    pub fn new(region: DmaRegion, log_size: u32) -> Self {
        CqRing {
            region,
            log_size,
            ci: 0,
        }
    }

    pub fn size(&self) -> u32 {
        1 << self.log_size
    }

    /// Host virtual address of the slot the next CQE will land in.
    pub fn next_va(&self) -> u64 {
        let slot = self.ci & (self.size() - 1);
        self.region.va + (slot as u64) * DESC_SIZE as u64
    }

    /// The owner bit that marks the slot at `ci` as written by the device in its current
    /// lap (see `rocenic_proto::abi::cqe`).
    pub fn expected_phase(&self) -> u8 {
        rocenic_proto::abi::cqe::phase_of(self.ci, self.log_size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn region() -> DmaRegion {
        DmaRegion {
            id: 1,
            va: 0x10_0000,
            iova: 0x20_0000,
            len: 4 * DESC_SIZE,
        }
    }

    #[test]
    fn work_queue_retires_in_window_only() {
        let mut q = WorkQueue::new(region(), 2);
        assert_eq!(q.free(), 4);
        q.pi = 3;
        assert_eq!(q.free(), 1);
        assert!(!q.retire_through(3), "not yet posted");
        assert!(q.retire_through(1));
        assert_eq!(q.retired, 2);
        assert_eq!(q.free(), 3);
        assert!(!q.retire_through(1), "already retired");
        assert_eq!(q.slot_va(5), 0x10_0000 + 64);
    }

    #[test]
    fn work_queue_wraps_u32() {
        let mut q = WorkQueue::new(region(), 2);
        q.retired = u32::MAX - 1;
        q.pi = 2;
        assert_eq!(q.outstanding(), 4);
        assert!(q.retire_through(u32::MAX));
        assert_eq!(q.retired, 0);
        assert_eq!(q.free(), 2);
    }

    #[test]
    fn cq_phase_per_lap() {
        let mut c = CqRing::new(region(), 2);
        assert_eq!(c.expected_phase(), 1);
        c.ci = 4;
        assert_eq!(c.expected_phase(), 0);
        assert_eq!(c.next_va(), 0x10_0000);
        c.ci = 9;
        assert_eq!(c.expected_phase(), 1);
        assert_eq!(c.next_va(), 0x10_0000 + 64);
    }
}
