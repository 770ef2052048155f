//! Finding a PCI function in sysfs: its address, IDs, driver and IOMMU group.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use super::error::{GroupMember, Result, VfioError};
use super::sys::Sys;

/// Where sysfs lists PCI devices.
pub const SYSFS_PCI_DEVICES: &str = "/sys/bus/pci/devices";
/// Where sysfs lists IOMMU groups.
pub const SYSFS_IOMMU_GROUPS: &str = "/sys/kernel/iommu_groups";
/// The driver a device must be bound to.
pub const VFIO_PCI_DRIVER: &str = "vfio-pci";

/// A PCI function address, `DDDD:BB:DD.F`, normalised to lower case with the domain.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PciAddress(String);

impl PciAddress {
    /// The address as sysfs and VFIO spell it.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The device's directory in sysfs.
    pub fn sysfs_dir(&self) -> PathBuf {
        Path::new(SYSFS_PCI_DEVICES).join(&self.0)
    }
}

impl fmt::Display for PciAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for PciAddress {
    type Err = VfioError;

    /// Accepts `DDDD:BB:DD.F` (a domain of 4 to 8 hex digits) or `BB:DD.F` (domain 0000).
    fn from_str(s: &str) -> Result<PciAddress> {
        let bad = || VfioError::BadAddress(s.to_string());
        let hex = |t: &str, min: usize, max: usize| {
            (t.len() >= min && t.len() <= max && t.bytes().all(|b| b.is_ascii_hexdigit()))
                .then(|| u32::from_str_radix(t, 16).ok())
                .flatten()
        };
        let parts: Vec<&str> = s.split(':').collect();
        let (domain, bus, rest) = match parts.as_slice() {
            [d, b, r] => (hex(d, 4, 8).ok_or_else(bad)?, *b, *r),
            [b, r] => (0, *b, *r),
            _ => return Err(bad()),
        };
        let bus = hex(bus, 2, 2).ok_or_else(bad)?;
        let (dev, func) = rest.split_once('.').ok_or_else(bad)?;
        let dev = hex(dev, 2, 2).filter(|&d| d < 32).ok_or_else(bad)?;
        let func = hex(func, 1, 1).filter(|&f| f < 8).ok_or_else(bad)?;
        Ok(PciAddress(format!(
            "{domain:04x}:{bus:02x}:{dev:02x}.{func:x}"
        )))
    }
}

/// What sysfs says about a PCI function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PciFunction {
    /// Its address.
    pub address: PciAddress,
    /// Its vendor ID.
    pub vendor: u16,
    /// Its device ID.
    pub device: u16,
    /// The bound driver's name.
    pub driver: Option<String>,
    /// The IOMMU group number (none when the IOMMU is off).
    pub iommu_group: Option<u32>,
}

/// The last component of a symlink's target (`../../../bus/pci/drivers/vfio-pci` → `vfio-pci`).
fn link_name<S: Sys>(sys: &S, path: &Path) -> io::Result<Option<String>> {
    match sys.read_link(path) {
        Ok(t) => Ok(t.file_name().map(|n| n.to_string_lossy().into_owned())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

fn read_id<S: Sys>(sys: &S, path: &Path) -> Result<u16> {
    let text = sys
        .read_file(path)
        .map_err(|e| VfioError::sys("read", path.display().to_string(), e))?;
    let t = text.trim();
    u16::from_str_radix(t.trim_start_matches("0x"), 16).map_err(|_| {
        VfioError::sys(
            "parse",
            path.display().to_string(),
            io::Error::new(io::ErrorKind::InvalidData, format!("not a PCI ID: {t:?}")),
        )
    })
}

/// Looks `address` up in sysfs.
pub fn lookup<S: Sys>(sys: &S, address: &PciAddress) -> Result<PciFunction> {
    let dir = address.sysfs_dir();
    let vendor = match read_id(sys, &dir.join("vendor")) {
        Err(VfioError::Sys { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
            return Err(VfioError::DeviceNotFound {
                bdf: address.to_string(),
                path: dir,
            })
        }
        r => r?,
    };
    let device = read_id(sys, &dir.join("device"))?;
    let driver = link_name(sys, &dir.join("driver"))
        .map_err(|e| VfioError::sys("readlink", format!("{}/driver", dir.display()), e))?;
    let group = link_name(sys, &dir.join("iommu_group"))
        .map_err(|e| VfioError::sys("readlink", format!("{}/iommu_group", dir.display()), e))?;
    let iommu_group = match group {
        None => None,
        Some(g) => Some(g.parse::<u32>().map_err(|_| {
            VfioError::sys(
                "parse",
                format!("{}/iommu_group", dir.display()),
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("not a group number: {g:?}"),
                ),
            )
        })?),
    };
    Ok(PciFunction {
        address: address.clone(),
        vendor,
        device,
        driver,
        iommu_group,
    })
}

/// Checks that `f` is bound to vfio-pci and has an IOMMU group; returns the group.
pub fn check_vfio_ready(f: &PciFunction) -> Result<u32> {
    let bdf = f.address.to_string();
    match f.driver.as_deref() {
        None => return Err(VfioError::NotBound { bdf }),
        Some(VFIO_PCI_DRIVER) => {}
        Some(other) => {
            return Err(VfioError::WrongDriver {
                bdf,
                vendor: f.vendor,
                device: f.device,
                driver: other.to_string(),
            })
        }
    }
    f.iommu_group.ok_or(VfioError::NoIommuGroup { bdf })
}

/// The devices of IOMMU group `group` other than `except`, with their drivers (for the
/// "group not viable" message; devices sysfs cannot describe are listed without a driver).
pub fn group_members<S: Sys>(sys: &S, group: u32, except: &PciAddress) -> Vec<GroupMember> {
    let dir = Path::new(SYSFS_IOMMU_GROUPS)
        .join(group.to_string())
        .join("devices");
    let mut names = sys.list_dir(&dir).unwrap_or_default();
    names.sort();
    names
        .into_iter()
        .filter(|n| n != except.as_str())
        .map(|n| GroupMember {
            driver: link_name(sys, &dir.join(&n).join("driver")).ok().flatten(),
            bdf: n,
        })
        .collect()
}

/// The PCI functions whose vendor and device IDs are `vendor:device`, by address.
pub fn find_by_id<S: Sys>(sys: &S, vendor: u16, device: u16) -> Vec<PciAddress> {
    let mut found: Vec<PciAddress> = sys
        .list_dir(Path::new(SYSFS_PCI_DEVICES))
        .unwrap_or_default()
        .iter()
        .filter_map(|n| n.parse::<PciAddress>().ok())
        .filter(|a| {
            let dir = a.sysfs_dir();
            read_id(sys, &dir.join("vendor")).ok() == Some(vendor)
                && read_id(sys, &dir.join("device")).ok() == Some(device)
        })
        .collect();
    found.sort();
    found
}
