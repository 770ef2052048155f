//! A VFIO group (`/dev/vfio/<n>`): the unit of isolation the IOMMU gives, attached to a
//! container.

use std::path::PathBuf;

use super::container::{open_error, Container};
use super::error::{Result, VfioError};
use super::pci::{group_members, PciAddress};
use super::sys::{uapi, Host, Sys};

/// An open VFIO group attached to a container. Closing it (on drop) detaches it.
pub struct Group<S: Sys = Host> {
    // Field order is drop order: the group file closes (and leaves the container) before
    // our container handle goes.
    fd: S::Fd,
    number: u32,
    container: Container<S>,
}

impl<S: Sys> Group<S> {
    /// Opens group `number`, checks it is viable, attaches it to `container` and (for the
    /// container's first group) sets up the type1v2 IOMMU. `device` is the device we want
    /// from the group, named in errors.
    pub fn open(container: &Container<S>, number: u32, device: &PciAddress) -> Result<Self> {
        let sys = container.sys();
        let path = PathBuf::from(format!("/dev/vfio/{number}"));
        let fd = sys
            .open(&path)
            .map_err(|e| open_error(&path, e, Some(number)))?;
        let what = || path.display().to_string();
        let flags = sys
            .group_status(&fd)
            .map_err(|e| VfioError::sys("VFIO_GROUP_GET_STATUS", what(), e))?;
        if flags & uapi::GROUP_FLAGS_VIABLE == 0 {
            return Err(VfioError::GroupNotViable {
                group: number,
                others: group_members(&**sys, number, device),
            });
        }
        sys.group_set_container(&fd, container.fd())
            .map_err(|e| VfioError::sys("VFIO_GROUP_SET_CONTAINER", what(), e))?;
        let group = Group {
            fd,
            number,
            container: container.clone(),
        };
        container.setup_iommu()?;
        Ok(group)
    }

    /// The group number.
    pub fn number(&self) -> u32 {
        self.number
    }

    /// The container the group is attached to.
    pub fn container(&self) -> &Container<S> {
        &self.container
    }

    pub(crate) fn fd(&self) -> &S::Fd {
        &self.fd
    }
}
