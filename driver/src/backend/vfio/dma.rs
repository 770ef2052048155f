//! DMA buffers: anonymous memory mapped into a container's IOMMU.

use super::container::Container;
use super::error::{Result, VfioError};
use super::sys::{Host, Sys};

/// The hugepage size used for DMA memory (x86-64's PMD size, `MAP_HUGE_2MB`).
pub const HUGE_PAGE: u64 = 2 << 20;

/// How to allocate a DMA buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DmaOptions {
    /// The device's DMA mask: the last byte of a buffer's IOVA range must be at or below it
    /// (`2^bits - 1`; QEMU's edu device has 28 bits).
    pub mask: u64,
    /// Use 2 MiB hugepages for buffers larger than 1 MiB when the system has some free
    /// (falling back to small pages when it has none).
    pub hugepages: bool,
}

impl DmaOptions {
    /// Options for a device that drives `bits` address bits (1..=64).
    pub fn with_mask_bits(bits: u32) -> Self {
        let bits = bits.clamp(1, 64);
        DmaOptions {
            mask: if bits == 64 {
                u64::MAX
            } else {
                (1u64 << bits) - 1
            },
            hugepages: true,
        }
    }
}

impl Default for DmaOptions {
    /// A 64-bit DMA mask, hugepages where available.
    fn default() -> Self {
        DmaOptions::with_mask_bits(64)
    }
}

/// Zeroed memory that the device reaches at [`DmaBuffer::iova`]. The host CPU reaches it
/// only through [`DmaBuffer::read`] and [`DmaBuffer::write`] (volatile copies): it never
/// becomes a Rust reference, since the device may change it at any time.
///
/// Dropping the buffer removes its IOMMU mapping, then frees the memory; this also happens
/// while a panic unwinds. If the kernel refuses to remove the mapping, the memory is leaked
/// instead of freed, so the device can never write into memory that is reused.
pub struct DmaBuffer<S: Sys = Host> {
    // Field order is drop order: the memory goes before the container handle (after `Drop`
    // has unmapped it).
    map: Option<S::Map>,
    container: Container<S>,
    va: u64,
    iova: u64,
    len: u64,
    mapped: bool,
    huge: bool,
}

impl<S: Sys> DmaBuffer<S> {
    pub(crate) fn new(
        container: Container<S>,
        map: S::Map,
        va: u64,
        iova: u64,
        len: u64,
        huge: bool,
    ) -> Self {
        DmaBuffer {
            map: Some(map),
            container,
            va,
            iova,
            len,
            mapped: true,
            huge,
        }
    }

    /// Host virtual address of the first byte.
    pub fn va(&self) -> u64 {
        self.va
    }

    /// The IOVA of the first byte (after [`DmaBuffer::unmap`], the IOVA it had).
    pub fn iova(&self) -> u64 {
        self.iova
    }

    /// Length in bytes (the requested length rounded up to whole pages).
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Never true: a buffer has at least one page.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the memory is made of 2 MiB hugepages.
    pub fn is_huge(&self) -> bool {
        self.huge
    }

    /// Whether the device can still reach the buffer.
    pub fn is_mapped(&self) -> bool {
        self.mapped
    }

    fn check(&self, off: usize, len: usize) -> Result<&S::Map> {
        let map = self.map.as_ref().expect("memory is present until drop");
        if off.checked_add(len).is_some_and(|e| e as u64 <= self.len) {
            Ok(map)
        } else {
            Err(VfioError::OutOfRange {
                what: "DMA buffer",
                off: off as u64,
                len,
                size: self.len as usize,
            })
        }
    }

    /// Copies `buf.len()` bytes at offset `off` out of the buffer.
    pub fn read(&self, off: usize, buf: &mut [u8]) -> Result<()> {
        let map = self.check(off, buf.len())?;
        self.container.sys().copy_from(map, off, buf);
        Ok(())
    }

    /// Copies `data` into the buffer at offset `off`.
    pub fn write(&self, off: usize, data: &[u8]) -> Result<()> {
        let map = self.check(off, data.len())?;
        self.container.sys().copy_to(map, off, data);
        Ok(())
    }

    /// Removes the IOMMU mapping now, keeping the memory (the device can no longer reach
    /// it; a test can check that). Fails if it is already unmapped or the kernel refuses.
    pub fn unmap(&mut self) -> Result<()> {
        if !self.mapped {
            return Err(VfioError::NotMapped { iova: self.iova });
        }
        self.container.unmap(self.iova, self.len)?;
        self.mapped = false;
        Ok(())
    }
}

impl<S: Sys> Drop for DmaBuffer<S> {
    fn drop(&mut self) {
        if self.mapped && self.container.unmap(self.iova, self.len).is_err() {
            // Still mapped: freeing the memory would let the device write into whatever
            // reuses it. Leak it instead: the kernel drops the mapping when the container
            // closes, and the memory goes with the process.
            std::mem::forget(self.map.take());
        }
    }
}

impl<S: Sys> std::fmt::Debug for DmaBuffer<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DmaBuffer")
            .field("va", &format_args!("{:#x}", self.va))
            .field("iova", &format_args!("{:#x}", self.iova))
            .field("len", &self.len)
            .field("mapped", &self.mapped)
            .field("huge", &self.huge)
            .finish()
    }
}
