//! The VFIO backend: a rocenic NIC on real hardware, reached through Linux VFIO (type1v2
//! IOMMU).
//!
//! Two layers:
//!
//! - **A generic VFIO layer**, usable for any PCI device and with no knowledge of the
//!   rocenic ABI: one type per kernel object, each releasing what it holds when dropped, in
//!   the order VFIO wants:
//!   - [`Container`] (`/dev/vfio/vfio`): API version and type1v2 checks, the IOMMU's page
//!     sizes and usable IOVA ranges, DMA buffers ([`Container::alloc_dma`]).
//!   - [`Group`] (`/dev/vfio/<n>`): viability check, attachment to the container.
//!   - [`Device`]: found by PCI address in sysfs (bound to vfio-pci, in an IOMMU group),
//!     config space, function reset, bus mastering, BARs mapped as [`Region`]s.
//!   - [`DmaBuffer`]: anonymous memory (2 MiB hugepages where available) mapped with
//!     `VFIO_IOMMU_MAP_DMA` at an IOVA inside the IOMMU's ranges and below the device's DMA
//!     mask (IOVA = virtual address where that works, else the lowest free fit); unmapped,
//!     then freed, on drop.
//! - **The rocenic [`Backend`](crate::Backend)**, [`VfioBackend`]: opens a device with the
//!   layer above, resets it, enables bus mastering, maps BAR0 (refusing one smaller than
//!   the ABI's `BAR0_SIZE`) and checks the ID register.
//!
//! Every system call goes through the [`sys::Sys`] trait; [`sys::Host`] is the running
//! kernel and the only code in the crate with `unsafe`. Unit tests run every layer above it
//! on a fake (`fake.rs`) that injects failures and emulates a rocenic BAR and QEMU's `edu`
//! device. [`edu`] is the check the `rocenic-vfio-edu` program runs against a real `edu`
//! device in a QEMU guest with an emulated IOMMU (`tests/interop/vfio-edu.sh`).
//!
//! Every failure a user can hit is a [`VfioError`] that says what to do.

mod container;
mod device;
mod dma;
pub mod edu;
mod error;
mod group;
mod iova;
mod pci;
mod rocenic;
pub mod sys;

#[cfg(test)]
mod fake;
#[cfg(test)]
mod tests;

pub use container::{parse_iommu_info, Container, IommuInfo, CONTAINER_PATH};
pub use device::{Device, Region, PCI_COMMAND, PCI_COMMAND_MASTER, PCI_COMMAND_MEMORY};
pub use dma::{DmaBuffer, DmaOptions, HUGE_PAGE};
pub use error::{bind_commands, GroupMember, Result, VfioError};
pub use group::Group;
pub use iova::{IovaRange, IovaSpace};
pub use pci::{
    find_by_id, PciAddress, PciFunction, SYSFS_IOMMU_GROUPS, SYSFS_PCI_DEVICES, VFIO_PCI_DRIVER,
};
pub use rocenic::{VfioBackend, VfioOptions, DEFAULT_CLOCK_MHZ};
pub use sys::{Host, Sys};

// BAR sizes and buffer lengths are u64 in VFIO and usize in mappings.
const _: () = assert!(usize::BITS == 64, "the VFIO backend needs a 64-bit target");
