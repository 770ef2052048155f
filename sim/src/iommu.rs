//! The IOMMU between a device and its host's memory.
//!
//! The host maps a byte range of one allocation into the device's IOVA space; the device
//! can then reach exactly those bytes, with the mapping's permissions, and nothing else.
//!
//! Decisions, made to catch bugs early rather than to mimic one IOMMU's page tables:
//!
//! - IOVAs come from a bump allocator that starts at a base deliberately unlike the host's
//!   VAs (default [`DEFAULT_IOVA_BASE`]), so a device that uses a VA where an IOVA is due
//!   faults at once.
//! - A mapping starts on a page boundary plus the page offset of the mapped VA (as VFIO
//!   maps whole pages, the low 12 bits of IOVA and VA agree), and covers exactly the
//!   requested bytes: unlike real page-granular hardware, the tail of the last page is not
//!   reachable.
//! - A guard page separates consecutive mappings and IOVAs are never reused, so an access
//!   that overruns a mapping or uses it after `unmap` always faults.
//! - An access must lie inside one mapping. (The host's DMA entry points let a zero-length
//!   access through without asking the IOMMU: it touches nothing.)

use core::fmt;
use std::collections::BTreeMap;

use rocenic_proto::device::DmaFault;

use crate::host::{AllocId, PAGE_SIZE};
use crate::SimError;

/// Default first IOVA handed out (4 GiB: above 32-bit addresses, far from host VAs).
pub const DEFAULT_IOVA_BASE: u64 = 0x1_0000_0000;
/// Default size of the IOVA space (1 TiB).
pub const DEFAULT_IOVA_SIZE: u64 = 1 << 40;

/// Access rights of a mapping, seen from the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Perm {
    /// The device may read (DMA read, host memory to device).
    pub read: bool,
    /// The device may write (DMA write, device to host memory).
    pub write: bool,
}

impl Perm {
    /// Device reads only.
    pub const READ: Perm = Perm {
        read: true,
        write: false,
    };
    /// Device writes only.
    pub const WRITE: Perm = Perm {
        read: false,
        write: true,
    };
    /// Device reads and writes.
    pub const READ_WRITE: Perm = Perm {
        read: true,
        write: true,
    };

    /// Whether this permission allows a read (`write == false`) or a write.
    pub fn allows(self, write: bool) -> bool {
        if write {
            self.write
        } else {
            self.read
        }
    }
}

/// One IOVA range mapped onto bytes of a host allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mapping {
    /// First IOVA of the mapping.
    pub iova: u64,
    /// Length in bytes.
    pub len: usize,
    /// The allocation the IOVAs reach.
    pub alloc: AllocId,
    /// Byte offset inside the allocation that `iova` reaches.
    pub offset: usize,
    /// What the device may do.
    pub perm: Perm,
}

impl Mapping {
    /// One past the last IOVA of the mapping.
    pub fn end(&self) -> u64 {
        self.iova + self.len as u64
    }
}

/// The IOVA space of one device: an allocator plus the table of live mappings.
#[derive(Debug, Clone)]
pub struct Iommu {
    /// Next free IOVA (page aligned); only grows.
    next: u64,
    /// One past the last IOVA this IOMMU may hand out.
    limit: u64,
    /// Live mappings by first IOVA; they never overlap.
    maps: BTreeMap<u64, Mapping>,
}

impl Iommu {
    /// An empty IOMMU handing out IOVAs from `[base, base + size)`; `base` must be page
    /// aligned and the range must not wrap.
    pub fn new(base: u64, size: u64) -> Result<Self, SimError> {
        if !base.is_multiple_of(PAGE_SIZE) {
            return Err(SimError::InvalidConfig(format!(
                "IOVA base {base:#x} is not page aligned"
            )));
        }
        let limit = base
            .checked_add(size)
            .ok_or_else(|| SimError::InvalidConfig("IOVA range wraps around".into()))?;
        Ok(Iommu {
            next: base,
            limit,
            maps: BTreeMap::new(),
        })
    }

    /// Maps `len` bytes of allocation `alloc` starting at byte `offset` with `perm`, and
    /// returns the IOVA of the first byte. The IOVA's offset within its page is
    /// `page_offset % PAGE_SIZE` (pass the VA being mapped, so IOVA and VA agree in their
    /// low 12 bits as under VFIO). The caller checks that the bytes exist.
    pub fn map(
        &mut self,
        alloc: AllocId,
        offset: usize,
        len: usize,
        perm: Perm,
        page_offset: u64,
    ) -> Result<u64, SimError> {
        if len == 0 {
            return Err(SimError::ZeroLength { what: "mapping" });
        }
        let in_page = page_offset % PAGE_SIZE;
        let out_of_space = SimError::OutOfAddressSpace { space: "IOVA", len };
        // Pages spanned by the mapping, plus one guard page behind it.
        let span = (in_page + len as u64)
            .checked_next_multiple_of(PAGE_SIZE)
            .and_then(|s| s.checked_add(PAGE_SIZE))
            .ok_or(out_of_space)?;
        let end = self.next.checked_add(span).filter(|&e| e <= self.limit);
        let Some(end) = end else {
            return Err(SimError::OutOfAddressSpace { space: "IOVA", len });
        };
        let iova = self.next + in_page;
        self.next = end;
        self.maps.insert(
            iova,
            Mapping {
                iova,
                len,
                alloc,
                offset,
                perm,
            },
        );
        Ok(iova)
    }

    /// Removes the mapping that starts at `iova` and returns it. Its IOVAs are never
    /// handed out again, so later accesses to them fault.
    pub fn unmap(&mut self, iova: u64) -> Result<Mapping, SimError> {
        self.maps.remove(&iova).ok_or(SimError::NotMapped { iova })
    }

    /// Removes every mapping onto allocation `alloc` (used when the allocation is freed)
    /// and returns them in IOVA order.
    pub fn unmap_alloc(&mut self, alloc: AllocId) -> Vec<Mapping> {
        let doomed: Vec<u64> = self
            .maps
            .values()
            .filter(|m| m.alloc == alloc)
            .map(|m| m.iova)
            .collect();
        doomed
            .into_iter()
            .filter_map(|iova| self.maps.remove(&iova))
            .collect()
    }

    /// Checks a device access of `len` bytes at `iova`: it must lie inside one mapping that
    /// allows it. Returns the allocation and the byte offset in it of the first byte.
    pub fn translate(
        &self,
        iova: u64,
        len: usize,
        write: bool,
    ) -> Result<(AllocId, usize), DmaFault> {
        let fault = DmaFault { iova, len, write };
        let m = self.mapping_containing(iova).ok_or(fault)?;
        let end = iova.checked_add(len as u64).ok_or(fault)?;
        if end > m.end() || !m.perm.allows(write) {
            return Err(fault);
        }
        Ok((m.alloc, m.offset + (iova - m.iova) as usize))
    }

    /// The mapping that contains the byte at `iova`, if any.
    pub fn mapping_containing(&self, iova: u64) -> Option<&Mapping> {
        self.maps
            .range(..=iova)
            .next_back()
            .map(|(_, m)| m)
            .filter(|m| iova < m.end())
    }

    /// The mapping that starts at `iova`, if any.
    pub fn mapping(&self, iova: u64) -> Option<&Mapping> {
        self.maps.get(&iova)
    }

    /// All live mappings in IOVA order.
    pub fn mappings(&self) -> impl Iterator<Item = &Mapping> + '_ {
        self.maps.values()
    }
}

impl fmt::Display for Perm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = if self.read { "r" } else { "-" };
        let w = if self.write { "w" } else { "-" };
        write!(f, "{r}{w}")
    }
}

impl fmt::Display for Mapping {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "IOVA {:#x}..{:#x} {} -> {}+{:#x}",
            self.iova,
            self.end(),
            self.perm,
            self.alloc,
            self.offset
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iommu() -> Iommu {
        Iommu::new(DEFAULT_IOVA_BASE, DEFAULT_IOVA_SIZE).unwrap()
    }

    #[test]
    fn mappings_are_page_aligned_with_guard_pages() {
        let mut m = iommu();
        let a = m.map(AllocId(1), 0, 1, Perm::READ_WRITE, 0).unwrap();
        let b = m
            .map(AllocId(2), 0, PAGE_SIZE as usize, Perm::READ_WRITE, 0)
            .unwrap();
        let c = m
            .map(AllocId(3), 0, 10, Perm::READ_WRITE, 0x7f00_0000_1234)
            .unwrap();
        assert_eq!(a, DEFAULT_IOVA_BASE);
        // One page for `a`, one guard page.
        assert_eq!(b, DEFAULT_IOVA_BASE + 2 * PAGE_SIZE);
        // One page for `b`, one guard page; low 12 bits follow the VA.
        assert_eq!(c, DEFAULT_IOVA_BASE + 4 * PAGE_SIZE + 0x234);
    }

    #[test]
    fn translate_checks_bounds_and_permissions() {
        let mut m = iommu();
        let ro = m.map(AllocId(7), 100, 64, Perm::READ, 0).unwrap();
        assert_eq!(m.translate(ro, 64, false), Ok((AllocId(7), 100)));
        assert_eq!(m.translate(ro + 10, 4, false), Ok((AllocId(7), 110)));
        // Partially mapped: runs one byte past the end.
        assert!(m.translate(ro + 1, 64, false).is_err());
        // Before the mapping.
        assert!(m.translate(ro - 1, 2, false).is_err());
        // Wrong permission.
        let f = m.translate(ro, 4, true).unwrap_err();
        assert_eq!(
            f,
            DmaFault {
                iova: ro,
                len: 4,
                write: true
            }
        );
        // Wrapping range.
        assert!(m.translate(u64::MAX - 1, 8, false).is_err());
    }

    #[test]
    fn unmap_makes_range_fault_and_iova_is_never_reused() {
        let mut m = iommu();
        let a = m.map(AllocId(1), 0, 4096, Perm::READ_WRITE, 0).unwrap();
        assert!(m.unmap(a + 1).is_err());
        m.unmap(a).unwrap();
        assert!(m.translate(a, 1, false).is_err());
        let b = m.map(AllocId(1), 0, 4096, Perm::READ_WRITE, 0).unwrap();
        assert!(b > a);
        assert_eq!(m.unmap_alloc(AllocId(1)).len(), 1);
        assert_eq!(m.mappings().count(), 0);
    }

    #[test]
    fn exhausted_space_and_bad_config_are_errors() {
        assert!(Iommu::new(0x1001, 1 << 20).is_err());
        assert!(Iommu::new(u64::MAX - 4095, 1 << 20).is_err());
        let mut m = Iommu::new(0x1000, 3 * PAGE_SIZE).unwrap();
        m.map(AllocId(1), 0, 4096, Perm::READ, 0).unwrap();
        assert!(matches!(
            m.map(AllocId(1), 0, 4096, Perm::READ, 0),
            Err(SimError::OutOfAddressSpace { .. })
        ));
        assert!(matches!(
            m.map(AllocId(1), 0, 0, Perm::READ, 0),
            Err(SimError::ZeroLength { .. })
        ));
    }
}
