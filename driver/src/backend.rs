//! What a device-specific backend supplies to the driver, and nothing more.
//!
//! The driver is the same for every rocenic device (behavioural model, Verilated RTL, FPGA
//! board behind VFIO): it writes descriptors into rings in host memory and writes doorbells
//! into BAR0. A [`Backend`] gives it exactly three things:
//!
//! 1. **BAR0**: 32-bit register reads and writes ([`Backend::bar_read`],
//!    [`Backend::bar_write`]) at byte offsets from `rocenic_proto::abi::regs`.
//! 2. **DMA memory**: host memory the device can reach by IOVA through the IOMMU
//!    ([`Backend::alloc_dma`], [`Backend::free_dma`]), which the host CPU accesses only by
//!    copying bytes in and out ([`Backend::mem_write`], [`Backend::mem_read`]). DMA memory
//!    never becomes a Rust reference: the device may change it at any time, so a VFIO backend
//!    implements these with volatile copies and the right fences, and a simulated backend
//!    with plain copies into its model of host memory.
//! 3. **Time**: [`Backend::wait`] lets `cycles` core-clock cycles pass (a simulated backend
//!    advances its world, a real one sleeps) and [`Backend::now`] reads the cycle count.
//!
//! # Contract
//!
//! - **Ordering.** Every call takes effect in program order with respect to every other
//!   call on the same backend: a `mem_write` of a descriptor is visible to the device before
//!   a later `bar_write` of the doorbell that announces it, and a `mem_read` issued after
//!   another `mem_read` observes memory no older than the first (the driver reads a CQE's
//!   owner byte, then the rest). Real-hardware backends put the needed barriers inside these
//!   methods (a write barrier before an MMIO doorbell, a read barrier between DMA reads).
//! - **Registers.** `off` is 4-byte aligned and below `regs::BAR0_SIZE`; the driver never
//!   passes anything else. Reads of unimplemented registers return whatever the device
//!   returns (usually 0); backends do not interpret register offsets.
//! - **DMA regions.** [`DmaRegion::va`] and [`DmaRegion::iova`] of a region from
//!   [`Backend::alloc_dma`] are both aligned to at least 4096 bytes, the region is zero-filled on allocation, and the whole IOVA range
//!   `[iova, iova + len)` is mapped for device reads and writes until
//!   [`Backend::free_dma`] (which unmaps before it frees). `len` is at least the requested
//!   length. `id` is unique among live regions of the backend.
//! - **Application memory.** [`Backend::adopt_dma`] maps memory the application owns (a
//!   `Vec<u8>` it hands over) where it is; the backend keeps the vector, untouched by the
//!   host CPU except through `mem_read`/`mem_write`, until [`Backend::release_dma`]
//!   unmaps it and hands it back (or `free_dma` unmaps and drops it). Owning the memory is
//!   what makes this sound: nothing else can free, grow or alias it while the device may
//!   write into it.
//! - **Host access.** `mem_read`/`mem_write` take a virtual address inside one live region;
//!   anything else is an error, never undefined behaviour.
//! - **Time.** `now` never goes backwards; `wait(0)` is allowed and returns at once
//!   (a simulated backend may still run the device for the current cycle). A backend never
//!   blocks for longer than asked: every loop in the driver that waits for the device is
//!   bounded by a cycle timeout measured with `now`.

use crate::{Rejected, Result};

/// A region of host memory mapped for device DMA.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DmaRegion {
    /// The backend's name for the region, passed back to [`Backend::free_dma`].
    pub id: u64,
    /// Host virtual address of the first byte (what the host CPU and MRs use).
    pub va: u64,
    /// I/O virtual address of the first byte (what the device puts on its DMA port).
    pub iova: u64,
    /// Length in bytes.
    pub len: usize,
}

impl DmaRegion {
    /// Whether `[va, va + len)` lies inside the region.
    pub fn contains(&self, va: u64, len: usize) -> bool {
        va >= self.va
            && va
                .checked_add(len as u64)
                .is_some_and(|end| end <= self.va + self.len as u64)
    }

    /// The IOVA of virtual address `va` inside the region.
    pub fn iova_of(&self, va: u64) -> u64 {
        self.iova + (va - self.va)
    }
}

/// Everything a device-specific backend supplies. See the module documentation for the
/// contract every implementation keeps.
pub trait Backend {
    /// Reads the 32-bit BAR0 register at byte offset `off`.
    fn bar_read(&mut self, off: u32) -> u32;

    /// Writes `v` to the 32-bit BAR0 register at byte offset `off`.
    fn bar_write(&mut self, off: u32, v: u32);

    /// Allocates at least `len` bytes of zeroed host memory, maps it in the device's IOMMU
    /// and returns its addresses. Fails with [`crate::Error::DmaAlloc`].
    fn alloc_dma(&mut self, len: usize) -> Result<DmaRegion>;

    /// Unmaps and frees the region `id`. Fails with [`crate::Error::DmaFree`] when no live
    /// region has that id.
    fn free_dma(&mut self, id: u64) -> Result<()>;

    /// Copies `data` into host memory at virtual address `va` (inside one live region).
    /// Fails with [`crate::Error::MemAccess`].
    fn mem_write(&mut self, va: u64, data: &[u8]) -> Result<()>;

    /// Copies host memory at virtual address `va` (inside one live region) into `buf`.
    /// Fails with [`crate::Error::MemAccess`].
    fn mem_read(&mut self, va: u64, buf: &mut [u8]) -> Result<()>;

    /// Lets `cycles` core-clock cycles pass.
    fn wait(&mut self, cycles: u64);

    /// The current core-clock cycle.
    fn now(&self) -> u64;

    /// Takes `mem`, memory the application owns, and maps all of it for device reads and
    /// writes where it is, without copying it: the device then reads and writes these very
    /// bytes. The region behaves like one from [`Backend::alloc_dma`] (`mem_read`,
    /// `mem_write`, `free_dma`, which drops the memory) except that `va` is wherever the
    /// backend keeps `mem[0]` (any alignment; `iova` has the same offset in its page) and
    /// `len` is `mem.len()`. [`Backend::release_dma`] unmaps it and gives `mem` back. On
    /// failure `mem` comes back with the error; a backend that cannot map application
    /// memory fails with [`crate::Error::Unsupported`] (the default).
    fn adopt_dma(&mut self, mem: Vec<u8>) -> Result<DmaRegion, Rejected<Vec<u8>>> {
        Err(Rejected {
            error: crate::Error::Unsupported {
                what: "mapping application memory for DMA",
                why: "this backend has no way to map memory it did not allocate".into(),
            },
            value: mem,
        })
    }

    /// Unmaps the region `id` made by [`Backend::adopt_dma`] and returns its memory, with
    /// whatever the device wrote into it; after this the device cannot reach it. Fails
    /// for an unknown id or a region from [`Backend::alloc_dma`] (free those with
    /// [`Backend::free_dma`]).
    fn release_dma(&mut self, id: u64) -> Result<Vec<u8>> {
        Err(crate::Error::DmaFree {
            id,
            reason: "this backend never adopts application memory".into(),
        })
    }
}

impl<B: Backend + ?Sized> Backend for Box<B> {
    fn bar_read(&mut self, off: u32) -> u32 {
        (**self).bar_read(off)
    }
    fn bar_write(&mut self, off: u32, v: u32) {
        (**self).bar_write(off, v)
    }
    fn alloc_dma(&mut self, len: usize) -> Result<DmaRegion> {
        (**self).alloc_dma(len)
    }
    fn free_dma(&mut self, id: u64) -> Result<()> {
        (**self).free_dma(id)
    }
    fn mem_write(&mut self, va: u64, data: &[u8]) -> Result<()> {
        (**self).mem_write(va, data)
    }
    fn mem_read(&mut self, va: u64, buf: &mut [u8]) -> Result<()> {
        (**self).mem_read(va, buf)
    }
    fn wait(&mut self, cycles: u64) {
        (**self).wait(cycles)
    }
    fn now(&self) -> u64 {
        (**self).now()
    }
    fn adopt_dma(&mut self, mem: Vec<u8>) -> Result<DmaRegion, Rejected<Vec<u8>>> {
        (**self).adopt_dma(mem)
    }
    fn release_dma(&mut self, id: u64) -> Result<Vec<u8>> {
        (**self).release_dma(id)
    }
}

#[cfg(test)]
pub(crate) mod fake;
#[cfg(feature = "model")]
pub mod model;
#[cfg(feature = "rtl")]
pub mod rtl;
pub mod vfio;
