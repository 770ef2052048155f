//! A simulated host: one process's memory, addressed by virtual address (VA), plus the
//! [`Iommu`] through which its device reaches that memory by IOVA.
//!
//! The host CPU (the driver, the test) reads and writes by VA with [`Host::read`] and
//! [`Host::write`]; the device reads and writes by IOVA with [`Host::dma_read`] and
//! [`Host::dma_write`] (normally through [`SimDma`](crate::SimDma), which adds timing).
//! A DMA the IOMMU refuses touches nothing, returns a [`DmaFault`] and is recorded, so a
//! test can assert that the device never reached outside registered memory:
//! `assert_eq!(host.fault_count(), 0)`.
//!
//! VAs come from a bump allocator starting at [`DEFAULT_VA_BASE`]; every allocation starts
//! on a page boundary, a guard page follows it and no VA is ever reused, so stale pointers
//! and overruns are errors, not silent aliasing.

use core::fmt;
use std::collections::BTreeMap;

use rocenic_proto::device::{DmaFault, DmaPort};

use crate::iommu::{Iommu, Perm, DEFAULT_IOVA_BASE, DEFAULT_IOVA_SIZE};
use crate::SimError;

/// The page size of host and IOMMU (4 KiB).
pub const PAGE_SIZE: u64 = 4096;
/// Default first VA of a host's allocations (where a 64-bit Linux process keeps mmaps).
pub const DEFAULT_VA_BASE: u64 = 0x7f00_0000_0000;
/// Default size of a host's VA range (64 GiB).
pub const DEFAULT_VA_SIZE: u64 = 64 << 30;
/// Default number of faults kept in [`Host::faults`] (all are counted).
pub const DEFAULT_MAX_RECORDED_FAULTS: usize = 4096;

/// Identifies one host allocation for its whole life; never reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AllocId(pub(crate) u64);

/// Configuration of a [`Host`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostConfig {
    /// First VA handed out; page aligned.
    pub va_base: u64,
    /// Size of the VA range in bytes.
    pub va_size: u64,
    /// First IOVA handed out; page aligned.
    pub iova_base: u64,
    /// Size of the IOVA range in bytes.
    pub iova_size: u64,
    /// How many faults [`Host::faults`] keeps (the oldest are kept); all are counted.
    pub max_recorded_faults: usize,
    /// Whether the DMA log starts enabled.
    pub dma_log: bool,
}

impl Default for HostConfig {
    fn default() -> Self {
        HostConfig {
            va_base: DEFAULT_VA_BASE,
            va_size: DEFAULT_VA_SIZE,
            iova_base: DEFAULT_IOVA_BASE,
            iova_size: DEFAULT_IOVA_SIZE,
            max_recorded_faults: DEFAULT_MAX_RECORDED_FAULTS,
            dma_log: false,
        }
    }
}

/// Memory allocated for DMA and mapped read+write into the device's IOVA space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DmaRegion {
    /// The allocation, for [`Host::free_dma`].
    pub id: AllocId,
    /// Where the host CPU sees it.
    pub va: u64,
    /// Where the device sees it.
    pub iova: u64,
    /// Length in bytes.
    pub len: usize,
}

/// A DMA the IOMMU refused, with the cycle it was issued at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DmaFaultRecord {
    /// Cycle the access was issued at.
    pub cycle: u64,
    /// The refused access.
    pub fault: DmaFault,
}

/// One DMA access that the IOMMU allowed (the DMA log, see [`Host::set_dma_log`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DmaLogEntry {
    /// Cycle the access was issued at.
    pub cycle: u64,
    /// First IOVA.
    pub iova: u64,
    /// Length in bytes.
    pub len: usize,
    /// `true` for a device write into host memory.
    pub write: bool,
}

#[derive(Debug, Clone)]
struct Allocation {
    va: u64,
    data: Vec<u8>,
}

/// The memory of one host process: page-aligned allocations at never-reused VAs.
#[derive(Debug, Clone)]
pub struct HostMemory {
    /// Next free VA (page aligned); only grows.
    next_va: u64,
    /// One past the last VA that may be handed out.
    limit: u64,
    next_id: u64,
    by_id: BTreeMap<AllocId, Allocation>,
    by_va: BTreeMap<u64, AllocId>,
}

impl HostMemory {
    /// Empty memory handing out VAs from `[base, base + size)`; `base` must be page
    /// aligned and the range must not wrap.
    pub fn new(base: u64, size: u64) -> Result<Self, SimError> {
        if !base.is_multiple_of(PAGE_SIZE) {
            return Err(SimError::InvalidConfig(format!(
                "VA base {base:#x} is not page aligned"
            )));
        }
        let limit = base
            .checked_add(size)
            .ok_or_else(|| SimError::InvalidConfig("VA range wraps around".into()))?;
        Ok(HostMemory {
            next_va: base,
            limit,
            next_id: 0,
            by_id: BTreeMap::new(),
            by_va: BTreeMap::new(),
        })
    }

    /// Allocates `len` zeroed bytes at a fresh page-aligned VA followed by a guard page.
    pub fn alloc(&mut self, len: usize) -> Result<(AllocId, u64), SimError> {
        if len == 0 {
            return Err(SimError::ZeroLength { what: "allocation" });
        }
        if self.span_end(len).is_none() {
            return Err(SimError::OutOfAddressSpace { space: "VA", len });
        }
        self.adopt(vec![0; len]).map_err(|(e, _)| e)
    }

    /// One past the guard page of a `len`-byte allocation at the next VA, if it fits.
    fn span_end(&self, len: usize) -> Option<u64> {
        (len as u64)
            .checked_next_multiple_of(PAGE_SIZE)
            .and_then(|span| span.checked_add(PAGE_SIZE))
            .and_then(|span| self.next_va.checked_add(span))
            .filter(|&end| end <= self.limit)
    }

    /// Makes `data` (the application's own bytes, moved in, not copied) an allocation at
    /// a fresh page-aligned VA followed by a guard page, as [`HostMemory::alloc`] does;
    /// [`HostMemory::take`] gives the same vector back. On failure `data` comes back
    /// with the error.
    pub fn adopt(&mut self, data: Vec<u8>) -> Result<(AllocId, u64), (SimError, Vec<u8>)> {
        let len = data.len();
        if len == 0 {
            return Err((SimError::ZeroLength { what: "allocation" }, data));
        }
        let Some(end) = self.span_end(len) else {
            return Err((SimError::OutOfAddressSpace { space: "VA", len }, data));
        };
        let va = self.next_va;
        self.next_va = end;
        let id = AllocId(self.next_id);
        self.next_id += 1;
        self.by_id.insert(id, Allocation { va, data });
        self.by_va.insert(va, id);
        Ok((id, va))
    }

    /// Removes an allocation and returns its bytes (the vector [`HostMemory::adopt`] took,
    /// with whatever was written into it). Its VAs are never handed out again.
    pub fn take(&mut self, id: AllocId) -> Result<Vec<u8>, SimError> {
        let a = self
            .by_id
            .remove(&id)
            .ok_or(SimError::UnknownAllocation(id))?;
        self.by_va.remove(&a.va);
        Ok(a.data)
    }

    /// Frees an allocation. Its VAs are never handed out again.
    pub fn free(&mut self, id: AllocId) -> Result<(), SimError> {
        self.take(id).map(drop)
    }

    /// The allocation that starts at `va`.
    pub fn alloc_at(&self, va: u64) -> Option<AllocId> {
        self.by_va.get(&va).copied()
    }

    /// Finds the allocation holding all of `[va, va + len)` and the offset of `va` in it.
    /// A zero-length range may sit at the very end of an allocation.
    pub fn locate(&self, va: u64, len: usize) -> Result<(AllocId, usize), SimError> {
        let bad = SimError::BadVa { va, len };
        let (&start, &id) = self.by_va.range(..=va).next_back().ok_or(bad)?;
        let a = &self.by_id[&id];
        let offset = va - start;
        let end = offset.checked_add(len as u64);
        match end {
            Some(end) if end <= a.data.len() as u64 => Ok((id, offset as usize)),
            _ => Err(SimError::BadVa { va, len }),
        }
    }

    /// The VA of an allocation.
    pub fn va_of(&self, id: AllocId) -> Option<u64> {
        self.by_id.get(&id).map(|a| a.va)
    }

    /// The bytes of an allocation.
    pub fn bytes(&self, id: AllocId) -> Option<&[u8]> {
        self.by_id.get(&id).map(|a| &a.data[..])
    }

    /// The bytes of an allocation, writable.
    pub fn bytes_mut(&mut self, id: AllocId) -> Option<&mut [u8]> {
        self.by_id.get_mut(&id).map(|a| &mut a.data[..])
    }

    /// Copies `buf.len()` bytes from `va` into `buf`.
    pub fn read(&self, va: u64, buf: &mut [u8]) -> Result<(), SimError> {
        let (id, off) = self.locate(va, buf.len())?;
        buf.copy_from_slice(&self.by_id[&id].data[off..off + buf.len()]);
        Ok(())
    }

    /// Copies `data` to `va`.
    pub fn write(&mut self, va: u64, data: &[u8]) -> Result<(), SimError> {
        let (id, off) = self.locate(va, data.len())?;
        let a = self.by_id.get_mut(&id).expect("located allocation exists");
        a.data[off..off + data.len()].copy_from_slice(data);
        Ok(())
    }

    /// Number of live allocations.
    pub fn allocation_count(&self) -> usize {
        self.by_id.len()
    }
}

/// A simulated host: process memory, the IOMMU of its device, and the record of what the
/// device did with them.
#[derive(Debug, Clone)]
pub struct Host {
    memory: HostMemory,
    iommu: Iommu,
    /// Regions made by `alloc_dma` that are still alive.
    regions: BTreeMap<AllocId, DmaRegion>,
    faults: Vec<DmaFaultRecord>,
    fault_count: u64,
    max_recorded_faults: usize,
    dma_log: Option<Vec<DmaLogEntry>>,
}

impl Host {
    /// A host with empty memory and an empty IOMMU.
    pub fn new(cfg: &HostConfig) -> Result<Self, SimError> {
        Ok(Host {
            memory: HostMemory::new(cfg.va_base, cfg.va_size)?,
            iommu: Iommu::new(cfg.iova_base, cfg.iova_size)?,
            regions: BTreeMap::new(),
            faults: Vec::new(),
            fault_count: 0,
            max_recorded_faults: cfg.max_recorded_faults,
            dma_log: cfg.dma_log.then(Vec::new),
        })
    }

    /// Allocates `len` zeroed bytes of process memory (not mapped for the device) and
    /// returns their VA.
    pub fn alloc(&mut self, len: usize) -> Result<u64, SimError> {
        self.memory.alloc(len).map(|(_, va)| va)
    }

    /// Frees the allocation that starts at `va`, after removing every IOMMU mapping onto
    /// it: later DMA to those IOVAs faults.
    pub fn free(&mut self, va: u64) -> Result<(), SimError> {
        let id = self
            .memory
            .alloc_at(va)
            .ok_or(SimError::NotAllocated { va })?;
        self.release(id).map(drop)
    }

    /// Maps `[va, va + len)`, which must lie in one allocation, into the device's IOVA
    /// space with `perm` and returns the IOVA of `va` (its low 12 bits equal those of
    /// `va`). This is what registering a memory region does through VFIO.
    pub fn map(&mut self, va: u64, len: usize, perm: Perm) -> Result<u64, SimError> {
        if len == 0 {
            return Err(SimError::ZeroLength { what: "mapping" });
        }
        let (id, offset) = self.memory.locate(va, len)?;
        self.iommu.map(id, offset, len, perm, va)
    }

    /// Removes the mapping that starts at `iova`; later DMA to it faults.
    pub fn unmap(&mut self, iova: u64) -> Result<(), SimError> {
        self.iommu.unmap(iova).map(|_| ())
    }

    /// Allocates `len` zeroed bytes and maps them read+write for the device.
    pub fn alloc_dma(&mut self, len: usize) -> Result<DmaRegion, SimError> {
        let (id, va) = self.memory.alloc(len)?;
        let iova = match self.iommu.map(id, 0, len, Perm::READ_WRITE, va) {
            Ok(iova) => iova,
            Err(e) => {
                self.memory.free(id).expect("just allocated");
                return Err(e);
            }
        };
        let region = DmaRegion { id, va, iova, len };
        self.regions.insert(id, region);
        Ok(region)
    }

    /// Makes `mem` (application memory, moved in without a copy) process memory and maps
    /// all of it read+write for the device, as [`Host::alloc_dma`] does for fresh memory:
    /// the device then reads and writes these very bytes. [`Host::take_dma`] gives them
    /// back; [`Host::free_dma`] drops them. On failure `mem` comes back with the error.
    pub fn adopt_dma(&mut self, mem: Vec<u8>) -> Result<DmaRegion, (SimError, Vec<u8>)> {
        let len = mem.len();
        let (id, va) = self.memory.adopt(mem)?;
        match self.iommu.map(id, 0, len, Perm::READ_WRITE, va) {
            Ok(iova) => {
                let region = DmaRegion { id, va, iova, len };
                self.regions.insert(id, region);
                Ok(region)
            }
            Err(e) => {
                let mem = self.memory.take(id).expect("just adopted");
                Err((e, mem))
            }
        }
    }

    /// Unmaps (every mapping onto it) a region from [`Host::adopt_dma`] or
    /// [`Host::alloc_dma`] and returns its bytes: after this the device cannot reach them.
    pub fn take_dma(&mut self, id: AllocId) -> Result<Vec<u8>, SimError> {
        if !self.regions.contains_key(&id) {
            return Err(SimError::UnknownAllocation(id));
        }
        self.release(id)
    }

    /// Unmaps (every mapping onto it) and frees a region from [`Host::alloc_dma`] or
    /// [`Host::adopt_dma`].
    pub fn free_dma(&mut self, id: AllocId) -> Result<(), SimError> {
        if !self.regions.contains_key(&id) {
            return Err(SimError::UnknownAllocation(id));
        }
        self.release(id).map(drop)
    }

    /// Unmaps every mapping onto an allocation, forgets its region and returns its bytes.
    fn release(&mut self, id: AllocId) -> Result<Vec<u8>, SimError> {
        self.iommu.unmap_alloc(id);
        self.regions.remove(&id);
        self.memory.take(id)
    }

    /// A live region from [`Host::alloc_dma`].
    pub fn region(&self, id: AllocId) -> Option<DmaRegion> {
        self.regions.get(&id).copied()
    }

    /// Host CPU read of `buf.len()` bytes at `va`.
    pub fn read(&self, va: u64, buf: &mut [u8]) -> Result<(), SimError> {
        self.memory.read(va, buf)
    }

    /// Host CPU read of `len` bytes at `va` into a new vector.
    pub fn read_vec(&self, va: u64, len: usize) -> Result<Vec<u8>, SimError> {
        let mut v = vec![0; len];
        self.memory.read(va, &mut v)?;
        Ok(v)
    }

    /// Host CPU write of `data` at `va`.
    pub fn write(&mut self, va: u64, data: &[u8]) -> Result<(), SimError> {
        self.memory.write(va, data)
    }

    /// Little-endian u16 at `va`.
    pub fn read_u16(&self, va: u64) -> Result<u16, SimError> {
        let mut b = [0; 2];
        self.read(va, &mut b)?;
        Ok(u16::from_le_bytes(b))
    }

    /// Little-endian u32 at `va`.
    pub fn read_u32(&self, va: u64) -> Result<u32, SimError> {
        let mut b = [0; 4];
        self.read(va, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    /// Little-endian u64 at `va`.
    pub fn read_u64(&self, va: u64) -> Result<u64, SimError> {
        let mut b = [0; 8];
        self.read(va, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    /// Writes `v` little-endian at `va`.
    pub fn write_u16(&mut self, va: u64, v: u16) -> Result<(), SimError> {
        self.write(va, &v.to_le_bytes())
    }

    /// Writes `v` little-endian at `va`.
    pub fn write_u32(&mut self, va: u64, v: u32) -> Result<(), SimError> {
        self.write(va, &v.to_le_bytes())
    }

    /// Writes `v` little-endian at `va`.
    pub fn write_u64(&mut self, va: u64, v: u64) -> Result<(), SimError> {
        self.write(va, &v.to_le_bytes())
    }

    /// Device read of `buf.len()` bytes at `iova`, issued at cycle `now`. A refused access
    /// leaves `buf` untouched and is recorded. Zero bytes are always allowed.
    pub fn dma_read(&mut self, now: u64, iova: u64, buf: &mut [u8]) -> Result<(), DmaFault> {
        if buf.is_empty() {
            return Ok(());
        }
        let (id, off) = self.check(now, iova, buf.len(), false)?;
        let src = self.memory.bytes(id).expect("mapped allocations are alive");
        buf.copy_from_slice(&src[off..off + buf.len()]);
        Ok(())
    }

    /// Device write of `data` at `iova`, issued at cycle `now`. A refused access writes
    /// nothing and is recorded. Zero bytes are always allowed.
    pub fn dma_write(&mut self, now: u64, iova: u64, data: &[u8]) -> Result<(), DmaFault> {
        if data.is_empty() {
            return Ok(());
        }
        let (id, off) = self.check(now, iova, data.len(), true)?;
        let dst = self
            .memory
            .bytes_mut(id)
            .expect("mapped allocations are alive");
        dst[off..off + data.len()].copy_from_slice(data);
        Ok(())
    }

    /// Asks the IOMMU, then records the fault or logs the access.
    fn check(
        &mut self,
        now: u64,
        iova: u64,
        len: usize,
        write: bool,
    ) -> Result<(AllocId, usize), DmaFault> {
        match self.iommu.translate(iova, len, write) {
            Ok(at) => {
                if let Some(log) = &mut self.dma_log {
                    log.push(DmaLogEntry {
                        cycle: now,
                        iova,
                        len,
                        write,
                    });
                }
                Ok(at)
            }
            Err(fault) => {
                self.fault_count += 1;
                if self.faults.len() < self.max_recorded_faults {
                    self.faults.push(DmaFaultRecord { cycle: now, fault });
                }
                Err(fault)
            }
        }
    }

    /// The recorded IOMMU faults, oldest first (at most `max_recorded_faults`).
    pub fn faults(&self) -> &[DmaFaultRecord] {
        &self.faults
    }

    /// How many DMAs the IOMMU refused since the host was made or last cleared.
    pub fn fault_count(&self) -> u64 {
        self.fault_count
    }

    /// Forgets the recorded faults and resets the count.
    pub fn clear_faults(&mut self) {
        self.faults.clear();
        self.fault_count = 0;
    }

    /// Turns the log of allowed DMA accesses on (keeping what it holds) or off (dropping it).
    pub fn set_dma_log(&mut self, on: bool) {
        match (on, self.dma_log.is_some()) {
            (true, false) => self.dma_log = Some(Vec::new()),
            (false, true) => self.dma_log = None,
            _ => {}
        }
    }

    /// The logged DMA accesses, oldest first; empty when the log is off.
    pub fn dma_log(&self) -> &[DmaLogEntry] {
        self.dma_log.as_deref().unwrap_or(&[])
    }

    /// Takes the logged accesses, leaving the log (if on) empty.
    pub fn take_dma_log(&mut self) -> Vec<DmaLogEntry> {
        self.dma_log
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// The process memory.
    pub fn memory(&self) -> &HostMemory {
        &self.memory
    }

    /// The IOMMU.
    pub fn iommu(&self) -> &Iommu {
        &self.iommu
    }
}

/// An ideal DMA port with no latency: every access completes in the cycle it is issued.
/// Useful for unit tests of a device; the world uses [`SimDma`](crate::SimDma).
impl DmaPort for Host {
    fn dma_read(&mut self, now: u64, iova: u64, buf: &mut [u8]) -> Result<u64, DmaFault> {
        Host::dma_read(self, now, iova, buf).map(|()| now)
    }

    fn dma_write(&mut self, now: u64, iova: u64, data: &[u8]) -> Result<u64, DmaFault> {
        Host::dma_write(self, now, iova, data).map(|()| now)
    }
}

impl fmt::Display for AllocId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "alloc#{}", self.0)
    }
}

impl fmt::Display for DmaRegion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} bytes at VA {:#x}, IOVA {:#x}",
            self.id, self.len, self.va, self.iova
        )
    }
}

impl fmt::Display for DmaFaultRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cycle {}: {}", self.cycle, self.fault)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> Host {
        Host::new(&HostConfig::default()).unwrap()
    }

    #[test]
    fn allocations_are_page_aligned_guarded_and_never_reused() {
        let mut h = host();
        let a = h.alloc(10).unwrap();
        let b = h.alloc(4096).unwrap();
        assert_eq!(a, DEFAULT_VA_BASE);
        assert_eq!(b, DEFAULT_VA_BASE + 2 * PAGE_SIZE);
        h.free(a).unwrap();
        let c = h.alloc(10).unwrap();
        assert_eq!(c, DEFAULT_VA_BASE + 4 * PAGE_SIZE);
        assert!(h.free(a).is_err());
        assert!(h.free(c + 1).is_err());
    }

    #[test]
    fn cpu_access_is_bounds_checked() {
        let mut h = host();
        let va = h.alloc(16).unwrap();
        h.write_u64(va + 8, 0x0102_0304_0506_0708).unwrap();
        assert_eq!(h.read_u32(va + 8).unwrap(), 0x0506_0708);
        assert_eq!(h.read_u64(va + 8).unwrap(), 0x0102_0304_0506_0708);
        assert_eq!(h.read_vec(va + 8, 2).unwrap(), vec![0x08, 0x07]);
        h.write_u16(va, 0xbeef).unwrap();
        assert_eq!(h.read_u16(va).unwrap(), 0xbeef);
        // One byte past the end, before the start, and a VA that was never allocated.
        assert!(matches!(
            h.write_u64(va + 9, 0),
            Err(SimError::BadVa { .. })
        ));
        assert!(h.read_u32(va - 4).is_err());
        assert!(h.read_u32(0x1000).is_err());
        assert!(h.read_vec(va + 16, 0).is_ok());
        assert!(h.read_vec(u64::MAX, 2).is_err());
    }

    #[test]
    fn dma_region_round_trip_between_cpu_and_device() {
        let mut h = host();
        let r = h.alloc_dma(8192).unwrap();
        assert_ne!(r.va, r.iova);
        assert_eq!(r.iova % PAGE_SIZE, 0);
        h.write(r.va + 100, b"hello").unwrap();
        let mut buf = [0; 5];
        h.dma_read(1, r.iova + 100, &mut buf).unwrap();
        assert_eq!(&buf, b"hello");
        h.dma_write(2, r.iova + 8191, &[0xaa]).unwrap();
        assert_eq!(h.read_vec(r.va + 8191, 1).unwrap(), vec![0xaa]);
        assert_eq!(h.fault_count(), 0);
        assert_eq!(h.region(r.id), Some(r));
    }

    #[test]
    fn adopted_memory_is_reached_in_place_and_given_back() {
        let mut h = host();
        let mut mem = vec![0u8; 5000];
        mem[..5].copy_from_slice(b"owned");
        let heap = mem.as_ptr();
        let r = h.adopt_dma(mem).map_err(|(e, _)| e).unwrap();
        assert_eq!((r.len, r.va % PAGE_SIZE), (5000, 0));
        let mut buf = [0; 5];
        h.dma_read(1, r.iova, &mut buf).unwrap();
        assert_eq!(&buf, b"owned");
        h.dma_write(2, r.iova + 4999, &[0x5a]).unwrap();
        // One past the end faults: the guard page.
        assert!(h.dma_write(3, r.iova + 5000, &[1]).is_err());
        let back = h.take_dma(r.id).unwrap();
        assert_eq!(back.as_ptr(), heap, "the same vector, not a copy");
        assert_eq!((&back[..5], back[4999]), (&b"owned"[..], 0x5a));
        assert!(h.dma_read(4, r.iova, &mut buf).is_err(), "unmapped by take");
        assert!(h.take_dma(r.id).is_err());
        // Empty memory is refused and comes back.
        let (e, v) = h.adopt_dma(Vec::with_capacity(8)).unwrap_err();
        assert!(matches!(e, SimError::ZeroLength { .. }));
        assert_eq!(v.capacity(), 8);
    }

    #[test]
    fn iommu_refuses_unmapped_partial_and_freed_ranges_and_records_them() {
        let mut h = host();
        let r = h.alloc_dma(4096).unwrap();
        h.write(r.va, &[7; 4096]).unwrap();
        // A VA used as an IOVA: unmapped.
        let mut buf = [0u8; 8];
        assert!(h.dma_read(10, r.va, &mut buf).is_err());
        // Partially mapped: starts inside, ends in the guard page.
        assert!(h.dma_write(11, r.iova + 4090, &[1; 8]).is_err());
        assert_eq!(
            h.read_vec(r.va + 4088, 8).unwrap(),
            vec![7; 8],
            "nothing written"
        );
        // In the guard page / before the region.
        assert!(h.dma_read(12, r.iova + 4096, &mut buf).is_err());
        assert!(h.dma_read(13, r.iova - 1, &mut buf).is_err());
        // After free.
        h.free_dma(r.id).unwrap();
        assert!(h.dma_read(14, r.iova, &mut buf).is_err());
        assert_eq!(buf, [0; 8], "a refused read leaves the buffer alone");
        assert!(h.free_dma(r.id).is_err());

        assert_eq!(h.fault_count(), 5);
        let f: Vec<_> = h.faults().iter().map(|f| (f.cycle, f.fault)).collect();
        assert_eq!(
            f,
            vec![
                (
                    10,
                    DmaFault {
                        iova: r.va,
                        len: 8,
                        write: false
                    }
                ),
                (
                    11,
                    DmaFault {
                        iova: r.iova + 4090,
                        len: 8,
                        write: true
                    }
                ),
                (
                    12,
                    DmaFault {
                        iova: r.iova + 4096,
                        len: 8,
                        write: false
                    }
                ),
                (
                    13,
                    DmaFault {
                        iova: r.iova - 1,
                        len: 8,
                        write: false
                    }
                ),
                (
                    14,
                    DmaFault {
                        iova: r.iova,
                        len: 8,
                        write: false
                    }
                ),
            ]
        );
        h.clear_faults();
        assert_eq!(h.fault_count(), 0);
        assert!(h.faults().is_empty());
    }

    #[test]
    fn registered_sub_range_with_permissions() {
        let mut h = host();
        let va = h.alloc(10_000).unwrap();
        // Register bytes 0x123.. of the allocation, device may only read.
        let iova = h.map(va + 0x123, 100, Perm::READ).unwrap();
        assert_eq!(iova % PAGE_SIZE, 0x123);
        h.write(va + 0x123, &[5; 100]).unwrap();
        let mut buf = [0; 100];
        h.dma_read(0, iova, &mut buf).unwrap();
        assert_eq!(buf, [5; 100]);
        assert!(h.dma_write(0, iova, &[1]).is_err());
        assert!(h.dma_read(0, iova + 99, &mut [0; 2]).is_err());
        // Mapping outside the allocation is refused.
        assert!(h.map(va + 9_990, 11, Perm::READ).is_err());
        // Freeing the memory removes the mapping.
        h.free(va).unwrap();
        assert!(h.dma_read(0, iova, &mut buf).is_err());
        assert!(h.iommu().mappings().next().is_none());
        assert_eq!(h.memory().allocation_count(), 0);
    }

    #[test]
    fn explicit_unmap_then_fault() {
        let mut h = host();
        let va = h.alloc(64).unwrap();
        let iova = h.map(va, 64, Perm::READ_WRITE).unwrap();
        h.unmap(iova).unwrap();
        assert!(h.unmap(iova).is_err());
        assert!(h.dma_write(3, iova, &[1]).is_err());
        assert_eq!(h.fault_count(), 1);
    }

    #[test]
    fn dma_log_is_off_by_default_and_records_allowed_accesses() {
        let mut h = host();
        let r = h.alloc_dma(64).unwrap();
        h.dma_write(1, r.iova, &[1, 2]).unwrap();
        assert!(h.dma_log().is_empty());
        h.set_dma_log(true);
        h.dma_write(2, r.iova, &[1, 2]).unwrap();
        h.dma_read(3, r.iova + 4, &mut [0; 4]).unwrap();
        let _ = h.dma_read(4, r.iova + 64, &mut [0; 4]);
        assert_eq!(
            h.take_dma_log(),
            vec![
                DmaLogEntry {
                    cycle: 2,
                    iova: r.iova,
                    len: 2,
                    write: true
                },
                DmaLogEntry {
                    cycle: 3,
                    iova: r.iova + 4,
                    len: 4,
                    write: false
                },
            ]
        );
        assert!(h.dma_log().is_empty());
    }

    #[test]
    fn fault_list_is_capped_but_count_is_not() {
        let mut h = Host::new(&HostConfig {
            max_recorded_faults: 2,
            ..HostConfig::default()
        })
        .unwrap();
        for i in 0..5 {
            let _ = h.dma_read(i, 0, &mut [0; 1]);
        }
        assert_eq!(h.fault_count(), 5);
        assert_eq!(h.faults().len(), 2);
        assert_eq!(h.faults()[1].cycle, 1);
    }

    #[test]
    fn address_space_exhaustion_is_an_error() {
        let mut h = Host::new(&HostConfig {
            va_size: 4 * PAGE_SIZE,
            ..HostConfig::default()
        })
        .unwrap();
        h.alloc(PAGE_SIZE as usize).unwrap();
        h.alloc(PAGE_SIZE as usize).unwrap();
        assert!(matches!(
            h.alloc(1),
            Err(SimError::OutOfAddressSpace { space: "VA", .. })
        ));
        assert!(matches!(h.alloc(0), Err(SimError::ZeroLength { .. })));
        assert!(h.alloc(usize::MAX).is_err());
    }

    #[test]
    fn ideal_port_completes_at_once() {
        let mut h = host();
        let r = h.alloc_dma(16).unwrap();
        let port: &mut dyn DmaPort = &mut h;
        assert_eq!(port.dma_write(42, r.iova, &[9; 16]), Ok(42));
        let mut b = [0; 16];
        assert_eq!(port.dma_read(43, r.iova, &mut b), Ok(43));
        assert_eq!(b, [9; 16]);
    }

    mod prop {
        use super::*;
        use proptest::prelude::*;

        #[derive(Debug, Clone)]
        enum Op {
            Alloc(usize),
            Free(usize),
            /// Region pick, offset from its IOVA (may run off either end), length, write.
            Dma(usize, i64, usize, bool),
            /// Region pick, length, offset from one past its end (to probe the edge), write.
            Edge(usize, usize, i64, bool),
        }

        fn op() -> impl Strategy<Value = Op> {
            prop_oneof![
                (1usize..10_000).prop_map(Op::Alloc),
                any::<usize>().prop_map(Op::Free),
                (
                    any::<usize>(),
                    -5000i64..15_000,
                    0usize..5000,
                    any::<bool>()
                )
                    .prop_map(|(r, o, l, w)| Op::Dma(r, o, l, w)),
                (any::<usize>(), 0usize..64, -64i64..4, any::<bool>())
                    .prop_map(|(r, l, o, w)| Op::Edge(r, l, o, w)),
            ]
        }

        proptest! {
            /// Against a reference model: a DMA succeeds exactly when it lies inside one
            /// live region, a refused one changes nothing, and memory always equals the
            /// model's image.
            #[test]
            fn dma_reaches_exactly_the_live_regions(ops in proptest::collection::vec(op(), 1..60)) {
                let mut h = Host::new(&HostConfig::default()).unwrap();
                // Every region ever made, live or not, with the model's bytes when live.
                let mut model: Vec<(DmaRegion, Option<Vec<u8>>)> = Vec::new();
                let mut faults = 0;
                for (cycle, op) in ops.into_iter().enumerate() {
                    let cycle = cycle as u64;
                    let op = match op {
                        Op::Edge(i, len, off, write) if !model.is_empty() => {
                            let r = model[i % model.len()].0;
                            Op::Dma(i, r.len as i64 + off - len as i64, len, write)
                        }
                        op => op,
                    };
                    match op {
                        Op::Alloc(len) => {
                            let r = h.alloc_dma(len).unwrap();
                            model.push((r, Some(vec![0; len])));
                        }
                        Op::Free(i) if !model.is_empty() => {
                            let n = model.len();
                            let (r, bytes) = &mut model[i % n];
                            prop_assert_eq!(h.free_dma(r.id).is_ok(), bytes.is_some());
                            *bytes = None;
                        }
                        Op::Free(_) => {}
                        Op::Dma(i, off, len, write) if !model.is_empty() => {
                            let base = model[i % model.len()].0.iova;
                            let iova = base.wrapping_add_signed(off);
                            let owner = model.iter_mut().find(|(r, b)| {
                                b.is_some() && iova >= r.iova && iova + len as u64 <= r.iova + r.len as u64
                            });
                            let expect_ok = len == 0 || owner.is_some();
                            let data: Vec<u8> = (0..len).map(|k| (k as u8) ^ (cycle as u8)).collect();
                            let res = if write {
                                h.dma_write(cycle, iova, &data).map(|()| data.clone())
                            } else {
                                let mut buf = vec![0xee; len];
                                h.dma_read(cycle, iova, &mut buf).map(|()| buf)
                            };
                            prop_assert_eq!(res.is_ok(), expect_ok);
                            if !expect_ok {
                                faults += 1;
                            }
                            if let (Ok(got), Some((r, Some(bytes)))) = (res, owner) {
                                let at = (iova - r.iova) as usize;
                                if write {
                                    bytes[at..at + len].copy_from_slice(&got);
                                } else {
                                    prop_assert_eq!(&bytes[at..at + len], &got[..]);
                                }
                            }
                        }
                        Op::Dma(..) | Op::Edge(..) => {}
                    }
                }
                prop_assert_eq!(h.fault_count(), faults);
                for (r, bytes) in &model {
                    match bytes {
                        Some(b) => prop_assert_eq!(&h.read_vec(r.va, r.len).unwrap(), b),
                        None => prop_assert!(h.read_vec(r.va, 1).is_err()),
                    }
                }
            }
        }
    }
}
