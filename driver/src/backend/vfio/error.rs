//! Everything the VFIO layer can fail with: one variant per failure a user can hit, each
//! saying what to do about it.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// A device that shares an IOMMU group with ours.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMember {
    /// Its PCI address.
    pub bdf: String,
    /// The driver it is bound to, if any.
    pub driver: Option<String>,
}

impl fmt::Display for GroupMember {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.driver {
            Some(d) => write!(f, "{} (bound to {d})", self.bdf),
            None => write!(f, "{} (no driver)", self.bdf),
        }
    }
}

fn members(m: &[GroupMember]) -> String {
    if m.is_empty() {
        return "none listed in sysfs".into();
    }
    m.iter()
        .map(|m| m.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The commands (as root) that bind `bdf` to vfio-pci, whatever it is bound to now.
pub fn bind_commands(bdf: &str) -> String {
    format!(
        "  echo {bdf} > /sys/bus/pci/devices/{bdf}/driver/unbind   # if bound to a driver\n  \
         echo vfio-pci > /sys/bus/pci/devices/{bdf}/driver_override\n  \
         echo {bdf} > /sys/bus/pci/drivers_probe\n\
         (load the driver first with `modprobe vfio-pci`)"
    )
}

/// A VFIO failure.
#[derive(Debug, thiserror::Error)]
pub enum VfioError {
    /// The device address is not of the form `DDDD:BB:DD.F`.
    #[error(
        "{0:?} is not a PCI address: expected DOMAIN:BUS:DEVICE.FUNCTION in hex, such as \
         0000:03:00.0 (`lspci -D` lists them)"
    )]
    BadAddress(String),

    /// No PCI device has that address.
    #[error("no PCI device {bdf}: {} does not exist; `lspci -D` lists the devices", .path.display())]
    DeviceNotFound {
        /// The PCI address given.
        bdf: String,
        /// Its sysfs directory.
        path: PathBuf,
    },

    /// The device is bound to no driver.
    #[error("PCI device {bdf} is bound to no driver; bind it to vfio-pci as root:\n{}", bind_commands(.bdf))]
    NotBound {
        /// The PCI address.
        bdf: String,
    },

    /// The device is bound to a driver other than vfio-pci.
    #[error(
        "PCI device {bdf} ({vendor:04x}:{device:04x}) is bound to {driver}, not vfio-pci; \
         rebind it as root:\n{}", bind_commands(.bdf)
    )]
    WrongDriver {
        /// The PCI address.
        bdf: String,
        /// Its vendor ID.
        vendor: u16,
        /// Its device ID.
        device: u16,
        /// The driver it is bound to.
        driver: String,
    },

    /// The device has no IOMMU group: the IOMMU is off.
    #[error(
        "PCI device {bdf} has no IOMMU group, so the IOMMU is off: enable VT-d (or AMD-Vi) in \
         the firmware, boot with intel_iommu=on (or amd_iommu=on) iommu=pt, and check \
         `dmesg | grep -i -e DMAR -e IOMMU`"
    )]
    NoIommuGroup {
        /// The PCI address.
        bdf: String,
    },

    /// A VFIO device node does not exist.
    #[error(
        "{} does not exist: VFIO is not set up; load it with `modprobe vfio-pci` (the IOMMU \
         must be on: intel_iommu=on or amd_iommu=on) and bind the device to vfio-pci", .path.display()
    )]
    NoVfio {
        /// The missing node.
        path: PathBuf,
    },

    /// A VFIO device node exists but we may not open it.
    #[error(
        "permission denied opening {}: run as root, or give your user the VFIO group \
         (`sudo chown $USER {}`) and a large enough `ulimit -l`", .path.display(), .path.display()
    )]
    PermissionDenied {
        /// The node.
        path: PathBuf,
    },

    /// Another process holds the group.
    #[error(
        "VFIO group {group} ({}) is busy: another process (a VM, another rocenic) has it \
         open; stop that process first (`fuser -v {}` names it)", .path.display(), .path.display()
    )]
    GroupBusy {
        /// The IOMMU group number.
        group: u32,
        /// Its device node.
        path: PathBuf,
    },

    /// Some device of the group is bound to a host driver.
    #[error(
        "VFIO group {group} is not viable: every device in it must be bound to vfio-pci or \
         to no driver. The other devices in the group: {}. Unbind each (`echo <bdf> > \
         /sys/bus/pci/devices/<bdf>/driver/unbind`) or bind it to vfio-pci, or move the card \
         to a slot with an IOMMU group of its own", members(.others)
    )]
    GroupNotViable {
        /// The IOMMU group number.
        group: u32,
        /// The members bound to host drivers.
        others: Vec<GroupMember>,
    },

    /// The device is open in another process.
    #[error("PCI device {bdf} is already open through VFIO (by another process or handle); close that first")]
    DeviceBusy {
        /// The PCI address.
        bdf: String,
    },

    /// The kernel speaks another VFIO API version.
    #[error("the kernel's VFIO API version is {found}, this driver speaks version {expected}")]
    ApiVersion {
        /// The kernel's version.
        found: i32,
        /// The version this driver speaks.
        expected: i32,
    },

    /// The container lacks the type1v2 IOMMU.
    #[error(
        "the VFIO container does not offer the type1v2 IOMMU: load it with \
         `modprobe vfio_iommu_type1`"
    )]
    NoType1v2,

    /// The type1 IOMMU driver refuses an IOMMU without interrupt remapping.
    #[error(
        "VFIO refuses this IOMMU because it has no interrupt remapping (dmesg: \"No interrupt \
         remapping support\"): enable interrupt remapping in the firmware (and do not boot \
         with intremap=off); or, accepting that the device could forge interrupts, reload \
         the driver with `modprobe -r vfio_iommu_type1; modprobe vfio_iommu_type1 \
         allow_unsafe_interrupts=1`"
    )]
    NoInterruptRemapping,

    /// VFIO says the device is not a PCI device.
    #[error("{bdf} is not a vfio-pci device (VFIO device flags {flags:#x})")]
    NotPci {
        /// The PCI address.
        bdf: String,
        /// The device flags VFIO reports.
        flags: u32,
    },

    /// The device has no function reset.
    #[error("PCI device {bdf} supports no function reset (no FLR, PM or bus reset) through VFIO")]
    NoReset {
        /// The PCI address.
        bdf: String,
    },

    /// A BAR is not implemented or cannot be mapped.
    #[error(
        "BAR{index} of {bdf} cannot be memory-mapped (size {size} bytes, region flags \
         {flags:#x}): the device or the bitstream does not implement it as a memory BAR"
    )]
    BarNotMappable {
        /// The PCI address.
        bdf: String,
        /// The BAR.
        index: u32,
        /// Its size in bytes.
        size: u64,
        /// Its region flags.
        flags: u32,
    },

    /// A BAR is smaller than the register map needs.
    #[error(
        "BAR{index} of {bdf} is {size:#x} bytes, smaller than the {need:#x} bytes the register \
         map needs: wrong device, or an FPGA bitstream built for another ABI"
    )]
    BarTooSmall {
        /// The PCI address.
        bdf: String,
        /// The BAR.
        index: u32,
        /// Its size in bytes.
        size: u64,
        /// The bytes the register map needs.
        need: u64,
    },

    /// The identification register holds another value.
    #[error(
        "{bdf} (PCI {vendor:04x}:{device:04x}) is not a rocenic NIC: its ID register reads \
         {found:#010x}, expected {expected:#010x}; check the address with `lspci -D -nn` and \
         that the FPGA holds the rocenic bitstream (docs/flashing.md)"
    )]
    NotOurDevice {
        /// The PCI address.
        bdf: String,
        /// Its vendor ID.
        vendor: u16,
        /// Its device ID.
        device: u16,
        /// What the register holds.
        found: u32,
        /// What it should hold.
        expected: u32,
    },

    /// Locking DMA memory would pass RLIMIT_MEMLOCK.
    #[error(
        "mapping {needed} bytes for DMA needs them locked in memory, which would pass the \
         memory-lock limit (RLIMIT_MEMLOCK{}; {pinned} bytes already locked): raise it with \
         `ulimit -l unlimited` (or a `memlock` line in /etc/security/limits.conf), or run as \
         root", match .limit { Some(l) => format!(" = {l} bytes"), None => ", which the kernel enforced".into() }
    )]
    MemlockLimit {
        /// Bytes the new mapping needs locked.
        needed: u64,
        /// Bytes this process has locked already.
        pinned: u64,
        /// The limit we read, or `None` when the kernel refused a mapping (ENOMEM).
        limit: Option<u64>,
    },

    /// No IOVA range is free for a DMA buffer.
    #[error(
        "no free IOVA range of {len:#x} bytes below the DMA mask {mask:#x} in the IOMMU's \
         usable ranges {ranges}: free DMA buffers or allocate smaller ones"
    )]
    IovaExhausted {
        /// Bytes asked for.
        len: u64,
        /// The device's DMA mask.
        mask: u64,
        /// The usable IOVA ranges.
        ranges: String,
    },

    /// The DMA mask is not of the form 2^n - 1.
    #[error("DMA mask {0:#x} is not of the form 2^n - 1")]
    BadDmaMask(u64),

    /// An access falls outside a region or buffer, or is misaligned.
    #[error("{what}: access of {len} bytes at offset {off:#x} is outside its {size} bytes or misaligned")]
    OutOfRange {
        /// The region or buffer.
        what: &'static str,
        /// Offset of the access.
        off: u64,
        /// Length of the access.
        len: usize,
        /// Size of the region or buffer.
        size: usize,
    },

    /// A DMA buffer was used after its IOVA mapping was removed.
    #[error("DMA buffer at IOVA {iova:#x} is no longer mapped")]
    NotMapped {
        /// The IOVA the buffer had.
        iova: u64,
    },

    /// The kernel's IOMMU information is malformed.
    #[error("VFIO_IOMMU_GET_INFO returned a malformed capability chain: {0}")]
    BadIommuInfo(String),

    /// A system call failed in a way not covered above.
    #[error("{op} on {what} failed: {source}")]
    Sys {
        /// The system call or ioctl.
        op: &'static str,
        /// The file or object it acted on.
        what: String,
        /// The kernel's error.
        #[source]
        source: io::Error,
    },
}

impl VfioError {
    /// A [`VfioError::Sys`].
    pub(crate) fn sys(op: &'static str, what: impl Into<String>, source: io::Error) -> Self {
        VfioError::Sys {
            op,
            what: what.into(),
            source,
        }
    }
}

/// The result type of the VFIO layer.
pub type Result<T, E = VfioError> = std::result::Result<T, E>;
