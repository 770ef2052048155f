//! The rocenic [`Backend`] on the generic VFIO layer: a thin layer that knows BAR0's size
//! and ID register and the core clock, and nothing else of the ABI.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use rocenic_proto::abi::regs;

use super::device::{Device, Region};
use super::dma::{DmaBuffer, DmaOptions};
use super::error::VfioError;
use super::sys::{Host, Sys};
use crate::backend::{Backend, DmaRegion};
use crate::{Error, Result};

/// The core clock the ABI specifies (used when the device reports none).
pub const DEFAULT_CLOCK_MHZ: u32 = 250;

/// Waits shorter than this spin; longer ones sleep most of the way, then spin.
const SPIN_LIMIT: Duration = Duration::from_micros(200);

/// Options of [`VfioBackend::open`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VfioOptions {
    /// Address bits the device drives on DMA (the board's DMA engine: 64).
    pub dma_mask_bits: u32,
    /// Reset the function when opening it, if it supports a reset (FLR).
    pub reset: bool,
    /// Use 2 MiB hugepages for large DMA buffers when there are free ones.
    pub hugepages: bool,
}

impl Default for VfioOptions {
    fn default() -> Self {
        VfioOptions {
            dma_mask_bits: 64,
            reset: true,
            hugepages: true,
        }
    }
}

/// A rocenic NIC behind VFIO.
pub struct VfioBackend<S: Sys = Host> {
    // Field order is drop order: BAR mapping, then DMA buffers (unmapped, then freed), then
    // the device, group and container. `Drop` first stops the device's DMA.
    bar: Region<S>,
    buffers: BTreeMap<u64, DmaBuffer<S>>,
    /// Virtual address of each live buffer -> its id.
    by_va: BTreeMap<u64, u64>,
    device: Device<S>,
    next_id: u64,
    dma: DmaOptions,
    was_reset: bool,
    start: Instant,
    mhz: u64,
}

impl VfioBackend<Host> {
    /// Opens the rocenic NIC at PCI address `address` (`0000:03:00.0`) on this host.
    pub fn open(address: &str, opts: &VfioOptions) -> Result<Self, VfioError> {
        VfioBackend::open_with(Host, address, opts)
    }
}

impl<S: Sys> VfioBackend<S> {
    /// Opens the device through `sys`: VFIO setup, reset (if asked and supported), bus
    /// mastering, BAR0 (at least `regs::BAR0_SIZE` bytes) and the ID register check.
    pub fn open_with(sys: S, address: &str, opts: &VfioOptions) -> Result<Self, VfioError> {
        let device = Device::open(sys, address)?;
        let was_reset = opts.reset && device.can_reset();
        if was_reset {
            device.reset()?;
        }
        device.enable_bus_master()?;
        let bar = device.map_bar(0, u64::from(regs::BAR0_SIZE))?;
        let found = bar.read32(u64::from(regs::ID))?;
        if found != regs::DEVICE_ID {
            let pci = device.pci();
            return Err(VfioError::NotOurDevice {
                bdf: pci.address.to_string(),
                vendor: pci.vendor,
                device: pci.device,
                found,
                expected: regs::DEVICE_ID,
            });
        }
        let mhz = match bar.read32(u64::from(regs::CLOCK_MHZ))? {
            0 => DEFAULT_CLOCK_MHZ,
            m => m,
        };
        Ok(VfioBackend {
            bar,
            buffers: BTreeMap::new(),
            by_va: BTreeMap::new(),
            device,
            next_id: 1,
            dma: DmaOptions {
                hugepages: opts.hugepages,
                ..DmaOptions::with_mask_bits(opts.dma_mask_bits)
            },
            was_reset,
            start: Instant::now(),
            mhz: u64::from(mhz),
        })
    }

    /// The VFIO device.
    pub fn device(&self) -> &Device<S> {
        &self.device
    }

    /// Whether the function was reset when it was opened.
    pub fn was_reset(&self) -> bool {
        self.was_reset
    }

    /// The core clock `now` and `wait` count in, in MHz.
    pub fn clock_mhz(&self) -> u64 {
        self.mhz
    }

    /// The live buffer starting at or below `va`, and the offset of `va` in it (the
    /// buffer's own accessors check that the access fits).
    fn find(&self, va: u64) -> Option<(&DmaBuffer<S>, usize)> {
        let (&base, id) = self.by_va.range(..=va).next_back()?;
        Some((&self.buffers[id], (va - base) as usize))
    }
}

impl<S: Sys> Drop for VfioBackend<S> {
    fn drop(&mut self) {
        // Stop DMA before the buffers are unmapped; if this fails the IOMMU still blocks
        // the device once they are.
        let _ = self.device.disable_bus_master();
    }
}

fn bar_panic(e: VfioError) -> ! {
    // The Backend contract: the driver passes only aligned offsets below regs::BAR0_SIZE,
    // and BAR0 is at least that large, so this is a driver bug.
    panic!("rocenic VFIO backend: {e} (the driver passes only aligned offsets inside BAR0)")
}

impl<S: Sys> Backend for VfioBackend<S> {
    fn bar_read(&mut self, off: u32) -> u32 {
        self.bar
            .read32(u64::from(off))
            .unwrap_or_else(|e| bar_panic(e))
    }

    fn bar_write(&mut self, off: u32, v: u32) {
        self.bar
            .write32(u64::from(off), v)
            .unwrap_or_else(|e| bar_panic(e))
    }

    fn alloc_dma(&mut self, len: usize) -> Result<DmaRegion> {
        let b = self
            .device
            .alloc_dma(len, &self.dma)
            .map_err(|e| Error::DmaAlloc {
                len,
                reason: e.to_string(),
            })?;
        let id = self.next_id;
        self.next_id += 1;
        let region = DmaRegion {
            id,
            va: b.va(),
            iova: b.iova(),
            len: b.len(),
        };
        self.by_va.insert(b.va(), id);
        self.buffers.insert(id, b);
        Ok(region)
    }

    fn free_dma(&mut self, id: u64) -> Result<()> {
        let mut b = self.buffers.remove(&id).ok_or(Error::DmaFree {
            id,
            reason: "no live region has this id".into(),
        })?;
        self.by_va.remove(&b.va());
        // On failure the buffer stays mapped and its drop leaks the memory (never reused
        // while the device can reach it).
        b.unmap().map_err(|e| Error::DmaFree {
            id,
            reason: e.to_string(),
        })
    }

    fn mem_write(&mut self, va: u64, data: &[u8]) -> Result<()> {
        let (b, off) = self.find(va).ok_or(Error::MemAccess {
            va,
            len: data.len(),
            write: true,
            reason: "below every live DMA region".into(),
        })?;
        b.write(off, data).map_err(|e| Error::MemAccess {
            va,
            len: data.len(),
            write: true,
            reason: e.to_string(),
        })
    }

    fn mem_read(&mut self, va: u64, buf: &mut [u8]) -> Result<()> {
        let len = buf.len();
        let (b, off) = self.find(va).ok_or(Error::MemAccess {
            va,
            len,
            write: false,
            reason: "below every live DMA region".into(),
        })?;
        b.read(off, buf).map_err(|e| Error::MemAccess {
            va,
            len,
            write: false,
            reason: e.to_string(),
        })
    }

    fn wait(&mut self, cycles: u64) {
        let until = Duration::from_nanos(cycles.saturating_mul(1000) / self.mhz);
        let deadline = Instant::now() + until;
        if until > SPIN_LIMIT {
            std::thread::sleep(until - SPIN_LIMIT);
        }
        while Instant::now() < deadline {
            std::hint::spin_loop();
        }
    }

    fn now(&self) -> u64 {
        let ns = self.start.elapsed().as_nanos();
        (ns * u128::from(self.mhz) / 1000) as u64
    }
}
