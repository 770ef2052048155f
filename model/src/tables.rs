//! The PD, MR and CQ tables, and the protection check every DMA of user memory passes.

use rocenic_proto::abi::cmd::mr_index;
use rocenic_proto::abi::cqe::{phase_of, Cqe};
use rocenic_proto::abi::DESC_SIZE;
use rocenic_proto::device::DmaPort;
use std::collections::VecDeque;

/// A registered memory region: virtual range [va, va+length) at IOVA [iova, iova+length).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mr {
    pub key: u32,
    pub pdn: u32,
    pub access: u32,
    pub va: u64,
    pub iova: u64,
    pub length: u64,
    /// Cleared by a SEND_WITH_INV naming this key; the MR then refuses every access.
    pub valid: bool,
}

/// Why a memory access was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProtError {
    /// No MR has this key (or it was invalidated).
    BadKey,
    /// The MR belongs to another PD.
    WrongPd,
    /// The MR lacks the access right.
    NoAccess,
    /// The range leaves the MR (or overflows).
    OutOfBounds,
}

/// A completion queue: the ring, the device's producer index, the host's consumer index
/// (from the doorbell), and completions held while the ring is full.
#[derive(Debug, Clone)]
pub struct Cq {
    pub log_size: u32,
    pub ring_iova: u64,
    pub pi: u32,
    pub ci: u32,
    pub held: VecDeque<Cqe>,
    /// QPs that use this CQ (a CQ in use cannot be destroyed).
    pub refs: u32,
}

impl Cq {
    pub fn new(log_size: u32, ring_iova: u64) -> Cq {
        Cq {
            log_size,
            ring_iova,
            pi: 0,
            ci: 0,
            held: VecDeque::new(),
            refs: 0,
        }
    }

    /// Writes held completions into free slots, oldest first. Returns the DMA faults met
    /// (a faulting CQE is dropped: the host unmapped its own ring).
    pub fn flush(&mut self, now: u64, dma: &mut dyn DmaPort) -> u64 {
        let mut faults = 0;
        while !self.held.is_empty() && self.pi.wrapping_sub(self.ci) < (1u32 << self.log_size) {
            let mut cqe = self.held.pop_front().expect("checked non-empty");
            cqe.phase = phase_of(self.pi, self.log_size);
            let slot = (self.pi & ((1u32 << self.log_size) - 1)) as u64;
            let iova = self.ring_iova + slot * DESC_SIZE as u64;
            if dma.dma_write(now, iova, &cqe.to_bytes()).is_err() {
                faults += 1;
            }
            self.pi = self.pi.wrapping_add(1);
        }
        faults
    }
}

/// All object tables of one device.
#[derive(Debug, Clone)]
pub struct Tables {
    pub pds: Vec<Option<PdEntry>>,
    pub mrs: Vec<Option<Mr>>,
    pub cqs: Vec<Option<Cq>>,
}

/// A protection domain: only a reference count (MRs and QPs in it).
#[derive(Debug, Clone, Copy, Default)]
pub struct PdEntry {
    pub refs: u32,
}

impl Tables {
    pub fn new(max_pd: u32, max_mr: u32, max_cq: u32) -> Tables {
        Tables {
            pds: vec![None; max_pd as usize],
            mrs: vec![None; max_mr as usize],
            cqs: vec![None; max_cq as usize],
        }
    }

    /// Checks that `key` in PD `pdn` allows `need` on [va, va+len) and returns the IOVA of
    /// `va`. A zero-length access needs no key (as in IB).
    pub fn translate(
        &self,
        key: u32,
        pdn: u32,
        va: u64,
        len: u64,
        need: u32,
    ) -> Result<u64, ProtError> {
        if len == 0 {
            return Ok(0);
        }
        let mr = self
            .mrs
            .get(mr_index(key) as usize)
            .and_then(|m| m.as_ref())
            .filter(|m| m.key == key && m.valid)
            .ok_or(ProtError::BadKey)?;
        if mr.pdn != pdn {
            return Err(ProtError::WrongPd);
        }
        if mr.access & need != need {
            return Err(ProtError::NoAccess);
        }
        let end = va.checked_add(len).ok_or(ProtError::OutOfBounds)?;
        if va < mr.va || end > mr.va + mr.length {
            return Err(ProtError::OutOfBounds);
        }
        Ok(mr.iova + (va - mr.va))
    }

    /// Invalidates the MR named by `key` if it is valid and in PD `pdn`.
    pub fn invalidate(&mut self, key: u32, pdn: u32) -> bool {
        match self
            .mrs
            .get_mut(mr_index(key) as usize)
            .and_then(|m| m.as_mut())
        {
            Some(mr) if mr.key == key && mr.valid && mr.pdn == pdn => {
                mr.valid = false;
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocenic_proto::abi::cmd::mr_key;
    use rocenic_proto::abi::verbs::access;

    fn tables_with_mr() -> Tables {
        let mut t = Tables::new(4, 4, 4);
        t.mrs[1] = Some(Mr {
            key: mr_key(1, 7),
            pdn: 2,
            access: access::REMOTE_READ,
            va: 0x1000,
            iova: 0x9000,
            length: 0x100,
            valid: true,
        });
        t
    }

    #[test]
    fn translate_checks_everything() {
        let t = tables_with_mr();
        let k = mr_key(1, 7);
        assert_eq!(
            t.translate(k, 2, 0x1010, 0x10, access::REMOTE_READ),
            Ok(0x9010)
        );
        assert_eq!(
            t.translate(k, 2, 0x1000, 0x100, access::REMOTE_READ),
            Ok(0x9000)
        );
        assert_eq!(
            t.translate(mr_key(1, 8), 2, 0x1000, 1, access::REMOTE_READ),
            Err(ProtError::BadKey)
        );
        assert_eq!(
            t.translate(k, 3, 0x1000, 1, access::REMOTE_READ),
            Err(ProtError::WrongPd)
        );
        assert_eq!(
            t.translate(k, 2, 0x1000, 1, access::REMOTE_WRITE),
            Err(ProtError::NoAccess)
        );
        assert_eq!(
            t.translate(k, 2, 0x10ff, 2, access::REMOTE_READ),
            Err(ProtError::OutOfBounds)
        );
        assert_eq!(
            t.translate(k, 2, 0xfff, 1, access::REMOTE_READ),
            Err(ProtError::OutOfBounds)
        );
        assert_eq!(
            t.translate(k, 2, u64::MAX, 2, access::REMOTE_READ),
            Err(ProtError::OutOfBounds)
        );
        assert_eq!(t.translate(0xdead, 9, 0, 0, access::REMOTE_READ), Ok(0));
    }

    #[test]
    fn invalidate_needs_same_pd() {
        let mut t = tables_with_mr();
        let k = mr_key(1, 7);
        assert!(!t.invalidate(k, 3));
        assert!(t.invalidate(k, 2));
        assert!(!t.invalidate(k, 2));
        assert_eq!(
            t.translate(k, 2, 0x1000, 1, access::REMOTE_READ),
            Err(ProtError::BadKey)
        );
    }
}
