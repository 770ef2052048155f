//! A VFIO PCI device: its config space, function reset, bus mastering, and its BARs mapped
//! as [`Region`]s.

use std::sync::Arc;

use super::container::Container;
use super::dma::{DmaBuffer, DmaOptions};
use super::error::{Result, VfioError};
use super::group::Group;
use super::pci::{check_vfio_ready, lookup, PciAddress, PciFunction};
use super::sys::{uapi, DeviceInfo, Host, RegionInfo, Sys};

/// The PCI command register (config offset, 16 bits) and its bits we use.
pub const PCI_COMMAND: u64 = 0x04;
/// Memory space enable: BAR accesses reach the device.
pub const PCI_COMMAND_MEMORY: u16 = 1 << 1;
/// Bus master enable: the device may DMA.
pub const PCI_COMMAND_MASTER: u16 = 1 << 2;

/// An open vfio-pci device, with the group and container it needs.
pub struct Device<S: Sys = Host> {
    // Field order is drop order: device file, then group, then (through the group) the
    // container, as VFIO wants them released.
    fd: S::Fd,
    group: Group<S>,
    sys: Arc<S>,
    function: PciFunction,
    info: DeviceInfo,
    config: RegionInfo,
}

impl Device<Host> {
    /// Opens the device at PCI address `address` (`0000:03:00.0`) on this host.
    pub fn open_host(address: &str) -> Result<Self> {
        Device::open(Host, address)
    }
}

impl<S: Sys> Device<S> {
    /// Finds the device in sysfs, checks it is bound to vfio-pci with a viable IOMMU group,
    /// and opens container, group and device.
    pub fn open(sys: S, address: &str) -> Result<Self> {
        let sys = Arc::new(sys);
        let addr: PciAddress = address.parse()?;
        let function = lookup(&*sys, &addr)?;
        let group_no = check_vfio_ready(&function)?;
        let container = Container::open(sys.clone())?;
        let group = Group::open(&container, group_no, &addr)?;
        let bdf = addr.to_string();
        let fd = sys.group_device_fd(group.fd(), &bdf).map_err(|e| {
            if e.raw_os_error() == Some(libc::EBUSY) {
                VfioError::DeviceBusy { bdf: bdf.clone() }
            } else {
                VfioError::sys("VFIO_GROUP_GET_DEVICE_FD", bdf.clone(), e)
            }
        })?;
        let info = sys
            .device_info(&fd)
            .map_err(|e| VfioError::sys("VFIO_DEVICE_GET_INFO", bdf.clone(), e))?;
        if info.flags & uapi::DEVICE_FLAGS_PCI == 0 {
            return Err(VfioError::NotPci {
                bdf,
                flags: info.flags,
            });
        }
        let config = sys
            .region_info(&fd, uapi::PCI_CONFIG_REGION_INDEX)
            .map_err(|e| VfioError::sys("VFIO_DEVICE_GET_REGION_INFO(config)", bdf, e))?;
        Ok(Device {
            fd,
            group,
            sys,
            function,
            info,
            config,
        })
    }

    /// What sysfs says about the device (address, vendor and device IDs, group).
    pub fn pci(&self) -> &PciFunction {
        &self.function
    }

    /// The device's PCI address.
    pub fn address(&self) -> &PciAddress {
        &self.function.address
    }

    /// What VFIO says about the device.
    pub fn info(&self) -> DeviceInfo {
        self.info
    }

    /// The IOMMU group.
    pub fn group(&self) -> &Group<S> {
        &self.group
    }

    /// The container (for DMA buffers).
    pub fn container(&self) -> &Container<S> {
        self.group.container()
    }

    fn bdf(&self) -> String {
        self.function.address.to_string()
    }

    /// Whether VFIO can reset the function.
    pub fn can_reset(&self) -> bool {
        self.info.flags & uapi::DEVICE_FLAGS_RESET != 0
    }

    /// Resets the function (FLR, PM or bus reset, as the kernel chooses).
    pub fn reset(&self) -> Result<()> {
        if !self.can_reset() {
            return Err(VfioError::NoReset { bdf: self.bdf() });
        }
        self.sys
            .device_reset(&self.fd)
            .map_err(|e| VfioError::sys("VFIO_DEVICE_RESET", self.bdf(), e))
    }

    fn config_range(&self, off: u64, len: usize) -> Result<u64> {
        if off
            .checked_add(len as u64)
            .is_some_and(|e| e <= self.config.size)
        {
            Ok(self.config.offset + off)
        } else {
            Err(VfioError::OutOfRange {
                what: "PCI config space",
                off,
                len,
                size: self.config.size as usize,
            })
        }
    }

    /// Reads config space at `off`.
    pub fn config_read(&self, off: u64, buf: &mut [u8]) -> Result<()> {
        let at = self.config_range(off, buf.len())?;
        self.sys
            .pread(&self.fd, at, buf)
            .map_err(|e| VfioError::sys("read of config space", self.bdf(), e))
    }

    /// Writes config space at `off`.
    pub fn config_write(&self, off: u64, data: &[u8]) -> Result<()> {
        let at = self.config_range(off, data.len())?;
        self.sys
            .pwrite(&self.fd, at, data)
            .map_err(|e| VfioError::sys("write of config space", self.bdf(), e))
    }

    /// The PCI command register.
    pub fn command(&self) -> Result<u16> {
        let mut b = [0u8; 2];
        self.config_read(PCI_COMMAND, &mut b)?;
        Ok(u16::from_le_bytes(b))
    }

    fn set_command(&self, set: u16, clear: u16) -> Result<()> {
        let cmd = (self.command()? | set) & !clear;
        self.config_write(PCI_COMMAND, &cmd.to_le_bytes())
    }

    /// Lets the device decode its memory BARs and master the bus (DMA).
    pub fn enable_bus_master(&self) -> Result<()> {
        self.set_command(PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER, 0)
    }

    /// Stops the device from mastering the bus: no more DMA.
    pub fn disable_bus_master(&self) -> Result<()> {
        self.set_command(0, PCI_COMMAND_MASTER)
    }

    /// What VFIO says about region `index` (BAR*n* is region *n*).
    pub fn region_info(&self, index: u32) -> Result<RegionInfo> {
        self.sys
            .region_info(&self.fd, index)
            .map_err(|e| VfioError::sys("VFIO_DEVICE_GET_REGION_INFO", self.bdf(), e))
    }

    /// Maps BAR `index` whole, refusing a BAR smaller than `min_len` bytes.
    pub fn map_bar(&self, index: u32, min_len: u64) -> Result<Region<S>> {
        let r = self.region_info(index)?;
        if r.size == 0 || r.flags & uapi::REGION_MMAP == 0 {
            return Err(VfioError::BarNotMappable {
                bdf: self.bdf(),
                index,
                size: r.size,
                flags: r.flags,
            });
        }
        if r.size < min_len {
            return Err(VfioError::BarTooSmall {
                bdf: self.bdf(),
                index,
                size: r.size,
                need: min_len,
            });
        }
        // `usize` is 64 bits wide (checked in mod.rs), so a BAR size always fits.
        let len = r.size as usize;
        let map = self
            .sys
            .mmap_device(&self.fd, r.offset, len)
            .map_err(|e| VfioError::sys("mmap", format!("BAR{index} of {}", self.bdf()), e))?;
        Ok(Region {
            map,
            sys: self.sys.clone(),
            index,
        })
    }

    /// Allocates a DMA buffer in the device's container (see [`Container::alloc_dma`]).
    pub fn alloc_dma(&self, len: usize, opts: &DmaOptions) -> Result<DmaBuffer<S>> {
        self.container().alloc_dma(len, opts)
    }
}

/// A memory-mapped BAR. Accesses are volatile, of the given width, and checked: an access
/// outside the BAR or misaligned is an error, never undefined behaviour.
pub struct Region<S: Sys = Host> {
    map: S::Map,
    sys: Arc<S>,
    index: u32,
}

impl<S: Sys> Region<S> {
    /// The region index (the BAR number).
    pub fn index(&self) -> u32 {
        self.index
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.sys.map_len(&self.map)
    }

    /// Never true: an empty BAR is refused when mapping.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn check(&self, off: u64, width: usize) -> Result<usize> {
        let size = self.len();
        match usize::try_from(off) {
            Ok(o) if o.is_multiple_of(width) && o.checked_add(width).is_some_and(|e| e <= size) => {
                Ok(o)
            }
            _ => Err(VfioError::OutOfRange {
                what: "BAR",
                off,
                len: width,
                size,
            }),
        }
    }

    /// Reads the 32-bit register at byte offset `off`.
    pub fn read32(&self, off: u64) -> Result<u32> {
        let o = self.check(off, 4)?;
        Ok(self.sys.read32(&self.map, o))
    }

    /// Writes the 32-bit register at byte offset `off` (after earlier memory writes).
    pub fn write32(&self, off: u64, v: u32) -> Result<()> {
        let o = self.check(off, 4)?;
        self.sys.write32(&self.map, o, v);
        Ok(())
    }

    /// Reads the 64-bit register at byte offset `off`.
    pub fn read64(&self, off: u64) -> Result<u64> {
        let o = self.check(off, 8)?;
        Ok(self.sys.read64(&self.map, o))
    }

    /// Writes the 64-bit register at byte offset `off` (after earlier memory writes).
    pub fn write64(&self, off: u64, v: u64) -> Result<()> {
        let o = self.check(off, 8)?;
        self.sys.write64(&self.map, o, v);
        Ok(())
    }
}
