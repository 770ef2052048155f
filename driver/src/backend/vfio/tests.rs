//! Every path of the VFIO layer and the rocenic backend on the fake system: each failure a
//! user can hit, injected, with the message it produces; the healthy paths; drop order.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use rocenic_proto::abi::regs;

use super::fake::{Edu, FakeSys, Op, RegisterBar, EDU, NIC, NIC_GROUP};
use super::sys::{uapi, RegionInfo};
use super::*;
use crate::backend::Backend;
use crate::{Context, Error};

fn open(f: &FakeSys) -> Result<Device<FakeSys>> {
    Device::open(f.clone(), NIC)
}

fn err(f: &FakeSys) -> VfioError {
    match open(f) {
        Ok(_) => panic!("opening succeeded"),
        Err(e) => e,
    }
}

fn nic_dir() -> PathBuf {
    PathBuf::from("/sys/bus/pci/devices").join(NIC)
}

fn small() -> DmaOptions {
    DmaOptions {
        hugepages: false,
        ..DmaOptions::default()
    }
}

// --- finding the device ---------------------------------------------------------------

#[test]
fn pci_addresses() {
    for bad in [
        "",
        "03:00",
        "0000:03:00.8",
        "0000:03:20.0",
        "zz:00.0",
        "0000:03:00.0:1",
        "000:03:00.0",
        "0000:3:00.0",
        "0000:03:00",
    ] {
        let e = bad.parse::<PciAddress>().unwrap_err();
        assert!(matches!(e, VfioError::BadAddress(_)), "{bad}: {e}");
        assert!(e.to_string().contains("lspci -D"), "{e}");
    }
    let a: PciAddress = "03:1F.7".parse().unwrap();
    assert_eq!(a.as_str(), "0000:03:1f.7");
    assert_eq!(a.to_string(), "0000:03:1f.7");
    let a: PciAddress = "10000:00:00.0".parse().unwrap();
    assert_eq!(
        a.sysfs_dir(),
        PathBuf::from("/sys/bus/pci/devices/10000:00:00.0")
    );
    let e = Device::open(FakeSys::nic(), "nonsense").err().unwrap();
    assert!(matches!(e, VfioError::BadAddress(_)));
}

#[test]
fn device_not_found() {
    let e = Device::open(FakeSys::nic(), "0000:04:00.0").err().unwrap();
    assert!(matches!(e, VfioError::DeviceNotFound { .. }), "{e}");
    assert!(e.to_string().contains("lspci -D"), "{e}");
}

#[test]
fn sysfs_read_failures() {
    let f = FakeSys::nic();
    f.fail_path(&format!("{}/vendor", nic_dir().display()), libc::EIO);
    assert!(matches!(err(&f), VfioError::Sys { op: "read", .. }));

    let f = FakeSys::nic();
    f.state()
        .files
        .insert(nic_dir().join("device"), "junk\n".into());
    let e = err(&f);
    assert!(matches!(e, VfioError::Sys { op: "parse", .. }), "{e}");
    assert!(e.to_string().contains("not a PCI ID"), "{e}");

    let f = FakeSys::nic();
    f.fail_path(&format!("{}/driver", nic_dir().display()), libc::EIO);
    assert!(matches!(err(&f), VfioError::Sys { op: "readlink", .. }));

    let f = FakeSys::nic();
    f.fail_path(&format!("{}/iommu_group", nic_dir().display()), libc::EIO);
    assert!(matches!(err(&f), VfioError::Sys { op: "readlink", .. }));

    let f = FakeSys::nic();
    f.state().links.insert(
        nic_dir().join("iommu_group"),
        PathBuf::from("../groups/abc"),
    );
    let e = err(&f);
    assert!(e.to_string().contains("not a group number"), "{e}");
}

#[test]
fn not_bound() {
    let f = FakeSys::nic();
    f.state().links.remove(&nic_dir().join("driver"));
    let e = err(&f);
    assert!(matches!(e, VfioError::NotBound { .. }), "{e}");
    let m = e.to_string();
    assert!(
        m.contains("echo vfio-pci > /sys/bus/pci/devices/0000:03:00.0/driver_override"),
        "{m}"
    );
    assert!(
        m.contains("echo 0000:03:00.0 > /sys/bus/pci/drivers_probe"),
        "{m}"
    );
}

#[test]
fn bound_to_another_driver() {
    let f = FakeSys::nic();
    f.state().links.insert(
        nic_dir().join("driver"),
        PathBuf::from("../../../bus/pci/drivers/xdma"),
    );
    let e = err(&f);
    assert!(matches!(e, VfioError::WrongDriver { .. }), "{e}");
    let m = e.to_string();
    assert!(
        m.contains("10ee:903f) is bound to xdma, not vfio-pci"),
        "{m}"
    );
    assert!(
        m.contains("echo 0000:03:00.0 > /sys/bus/pci/devices/0000:03:00.0/driver/unbind"),
        "{m}"
    );
    assert!(m.contains("modprobe vfio-pci"), "{m}");
}

#[test]
fn no_iommu_group() {
    let f = FakeSys::nic();
    f.state().links.remove(&nic_dir().join("iommu_group"));
    let e = err(&f);
    assert!(matches!(e, VfioError::NoIommuGroup { .. }), "{e}");
    assert!(e.to_string().contains("intel_iommu=on"), "{e}");
}

// --- container and group ---------------------------------------------------------------

#[test]
fn no_dev_vfio() {
    let f = FakeSys::nic();
    f.state().nodes.remove(&PathBuf::from("/dev/vfio/vfio"));
    let e = err(&f);
    assert!(matches!(e, VfioError::NoVfio { .. }), "{e}");
    assert!(
        e.to_string().contains("/dev/vfio/vfio does not exist"),
        "{e}"
    );
    assert!(e.to_string().contains("modprobe vfio-pci"), "{e}");

    let f = FakeSys::nic();
    f.state().nodes.remove(&PathBuf::from("/dev/vfio/12"));
    let e = err(&f);
    assert!(e.to_string().contains("/dev/vfio/12 does not exist"), "{e}");
}

#[test]
fn permission_denied() {
    for path in ["/dev/vfio/vfio", "/dev/vfio/12"] {
        for errno in [libc::EACCES, libc::EPERM] {
            let f = FakeSys::nic();
            f.fail_path(path, errno);
            let e = err(&f);
            assert!(matches!(e, VfioError::PermissionDenied { .. }), "{e}");
            assert!(
                e.to_string().contains(&format!("sudo chown $USER {path}")),
                "{e}"
            );
        }
    }
}

#[test]
fn group_busy_and_other_open_failures() {
    let f = FakeSys::nic();
    f.fail_path("/dev/vfio/12", libc::EBUSY);
    let e = err(&f);
    assert!(
        matches!(
            e,
            VfioError::GroupBusy {
                group: NIC_GROUP,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("fuser -v /dev/vfio/12"), "{e}");

    let f = FakeSys::nic();
    f.fail_path("/dev/vfio/vfio", libc::EIO);
    assert!(matches!(err(&f), VfioError::Sys { op: "open", .. }));
}

#[test]
fn group_not_viable_lists_the_other_devices() {
    let f = FakeSys::nic();
    {
        let mut st = f.state();
        st.group_flags = 0;
        let g = PathBuf::from("/sys/kernel/iommu_groups/12/devices");
        st.dirs.insert(
            g.clone(),
            vec!["0000:03:00.1".into(), NIC.into(), "0000:00:01.0".into()],
        );
        st.links.insert(
            g.join("0000:03:00.1/driver"),
            PathBuf::from("../../drivers/ixgbe"),
        );
    }
    let e = err(&f);
    assert!(
        matches!(e, VfioError::GroupNotViable { group: 12, .. }),
        "{e}"
    );
    let m = e.to_string();
    assert!(
        m.contains("0000:00:01.0 (no driver), 0000:03:00.1 (bound to ixgbe)."),
        "{m}"
    );
    assert!(m.contains("driver/unbind"), "{m}");

    // Nothing listed in sysfs.
    let f = FakeSys::nic();
    f.state().group_flags = 0;
    f.fail_path("/sys/kernel/iommu_groups/12/devices", libc::EIO);
    assert!(err(&f).to_string().contains("none listed in sysfs"));
}

#[test]
fn api_version_and_type1v2() {
    let f = FakeSys::nic();
    f.state().api_version = 1;
    let e = err(&f);
    assert!(
        matches!(
            e,
            VfioError::ApiVersion {
                found: 1,
                expected: 0
            }
        ),
        "{e}"
    );

    let f = FakeSys::nic();
    f.state().type1v2 = 0;
    let e = err(&f);
    assert!(matches!(e, VfioError::NoType1v2), "{e}");
    assert!(e.to_string().contains("modprobe vfio_iommu_type1"));
}

#[test]
fn every_ioctl_failure_is_reported_with_its_call() {
    for (op, name) in [
        (Op::ApiVersion, "VFIO_GET_API_VERSION"),
        (Op::CheckExtension, "VFIO_CHECK_EXTENSION"),
        (Op::GroupStatus, "VFIO_GROUP_GET_STATUS"),
        (Op::SetContainer, "VFIO_GROUP_SET_CONTAINER"),
        (Op::SetIommu, "VFIO_SET_IOMMU(type1v2)"),
        (Op::IommuInfo, "VFIO_IOMMU_GET_INFO"),
        (Op::DeviceFd, "VFIO_GROUP_GET_DEVICE_FD"),
        (Op::DeviceInfo, "VFIO_DEVICE_GET_INFO"),
        (Op::RegionInfo, "VFIO_DEVICE_GET_REGION_INFO(config)"),
    ] {
        let f = FakeSys::nic();
        f.fail(op, libc::EINVAL);
        match err(&f) {
            VfioError::Sys { op, source, .. } => {
                assert_eq!(op, name);
                assert_eq!(source.raw_os_error(), Some(libc::EINVAL));
            }
            e => panic!("{name}: {e}"),
        }
    }
}

#[test]
fn no_interrupt_remapping() {
    // What Linux answers VFIO_SET_IOMMU when the IOMMU cannot remap interrupts (seen in the
    // QEMU guest with intel-iommu,intremap=off).
    let f = FakeSys::nic();
    f.fail(Op::SetIommu, libc::EPERM);
    let e = err(&f);
    assert!(matches!(e, VfioError::NoInterruptRemapping), "{e}");
    assert!(e.to_string().contains("allow_unsafe_interrupts=1"), "{e}");
}

#[test]
fn malformed_iommu_info() {
    let f = FakeSys::nic();
    f.state().iommu_info = vec![0; 4];
    assert!(matches!(err(&f), VfioError::BadIommuInfo(_)));
}

#[test]
fn device_busy_and_not_pci() {
    let f = FakeSys::nic();
    f.fail(Op::DeviceFd, libc::EBUSY);
    let e = err(&f);
    assert!(matches!(e, VfioError::DeviceBusy { .. }), "{e}");

    let f = FakeSys::nic();
    f.state().device_flags = uapi::DEVICE_FLAGS_RESET;
    let e = err(&f);
    assert!(matches!(e, VfioError::NotPci { flags: 1, .. }), "{e}");

    // A device the group does not hold (the kernel says ENODEV).
    let f = FakeSys::nic();
    f.state().device_bdf = "0000:03:00.1".into();
    assert!(matches!(
        err(&f),
        VfioError::Sys {
            op: "VFIO_GROUP_GET_DEVICE_FD",
            ..
        }
    ));
}

#[test]
fn healthy_open() {
    let f = FakeSys::nic();
    let d = open(&f).unwrap();
    assert_eq!(d.address().as_str(), NIC);
    assert_eq!((d.pci().vendor, d.pci().device), (0x10ee, 0x903f));
    assert_eq!(d.pci().driver.as_deref(), Some("vfio-pci"));
    assert_eq!(d.group().number(), NIC_GROUP);
    assert_eq!(d.info().num_regions, 9);
    assert!(d.can_reset());
    let c = d.container();
    assert_eq!(c.iova_pgsizes(), 0x4020_1000);
    assert_eq!(
        c.iova_ranges(),
        vec![
            IovaRange {
                start: 0,
                end: 0xfedf_ffff
            },
            IovaRange {
                start: 0xfef0_0000,
                end: (1 << 39) - 1
            }
        ]
    );
    assert_eq!(c.locked_bytes(), 0);
    assert_eq!(f.calls(Op::SetIommu), 1);
}

#[test]
fn a_second_group_reuses_the_container_iommu() {
    let f = FakeSys::nic();
    let c = Container::open(std::sync::Arc::new(f.clone())).unwrap();
    assert!(c.iova_ranges().is_empty() && c.iova_pgsizes() == 0);
    let addr: PciAddress = NIC.parse().unwrap();
    let g1 = Group::open(&c, NIC_GROUP, &addr).unwrap();
    let g2 = Group::open(&c, NIC_GROUP, &addr).unwrap();
    assert_eq!(f.calls(Op::SetIommu), 1, "the IOMMU is set up once");
    assert_eq!(g1.container().iova_ranges().len(), 2);
    drop((g1, g2));
}

#[test]
fn no_page_sizes_and_no_ranges_reported() {
    let f = FakeSys::nic();
    f.state().iommu_info = {
        let mut b = vec![0u8; uapi::IOMMU_INFO_LEN];
        b[0..4].copy_from_slice(&24u32.to_ne_bytes());
        b
    };
    let d = open(&f).unwrap();
    assert_eq!(d.container().iova_pgsizes(), 4096, "the CPU page size");
    assert_eq!(
        d.container().iova_ranges(),
        vec![IovaRange {
            start: 0,
            end: u64::MAX
        }]
    );
    // With no restriction, IOVA = VA.
    let b = d.alloc_dma(4096, &small()).unwrap();
    assert_eq!(b.iova(), b.va());
}

// --- device: reset, config space, BARs --------------------------------------------------

#[test]
fn reset() {
    let f = FakeSys::nic();
    let d = open(&f).unwrap();
    d.reset().unwrap();
    assert_eq!(f.calls(Op::Reset), 1);
    f.fail(Op::Reset, libc::EIO);
    assert!(matches!(
        d.reset(),
        Err(VfioError::Sys {
            op: "VFIO_DEVICE_RESET",
            ..
        })
    ));

    let f = FakeSys::edu(Edu::new());
    let d = Device::open(f.clone(), EDU).unwrap();
    assert!(!d.can_reset());
    let e = d.reset().unwrap_err();
    assert!(matches!(e, VfioError::NoReset { .. }), "{e}");
    assert_eq!(f.calls(Op::Reset), 0);
}

#[test]
fn config_space_and_bus_master() {
    let f = FakeSys::nic();
    let d = open(&f).unwrap();
    assert_eq!(d.command().unwrap(), 0);
    d.enable_bus_master().unwrap();
    assert_eq!(
        d.command().unwrap(),
        PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER
    );
    assert_eq!(f.state().config[4], 0b110);
    d.disable_bus_master().unwrap();
    assert_eq!(d.command().unwrap(), PCI_COMMAND_MEMORY);
    let mut b = [0u8; 2];
    let e = d.config_read(255, &mut b).unwrap_err();
    assert!(
        matches!(
            e,
            VfioError::OutOfRange {
                what: "PCI config space",
                ..
            }
        ),
        "{e}"
    );
    assert!(d.config_write(u64::MAX, &b).is_err());
    f.fail(Op::Pwrite, libc::EIO);
    assert!(matches!(
        d.enable_bus_master(),
        Err(VfioError::Sys {
            op: "write of config space",
            ..
        })
    ));
    f.fail(Op::Pread, libc::EIO);
    assert!(matches!(
        d.command(),
        Err(VfioError::Sys {
            op: "read of config space",
            ..
        })
    ));
}

#[test]
fn bars() {
    let f = FakeSys::nic();
    let d = open(&f).unwrap();
    let bar = d.map_bar(0, 0x1000).unwrap();
    assert_eq!(
        (bar.index(), bar.len(), bar.is_empty()),
        (0, regs::BAR0_SIZE as usize, false)
    );
    assert_eq!(bar.read32(u64::from(regs::ID)).unwrap(), regs::DEVICE_ID);
    bar.write32(0x40, 7).unwrap();
    assert_eq!(bar.read32(0x40).unwrap(), 7);
    bar.write64(0x48, 1 << 40).unwrap();
    assert_eq!(bar.read64(0x48).unwrap(), 1 << 40);
    for (off, e) in [
        (
            u64::from(regs::BAR0_SIZE),
            bar.read32(u64::from(regs::BAR0_SIZE)).unwrap_err(),
        ),
        (2, bar.write32(2, 0).unwrap_err()),
        (4, bar.read64(4).unwrap_err()),
        (u64::MAX - 3, bar.write64(u64::MAX - 3, 0).unwrap_err()),
    ] {
        match e {
            VfioError::OutOfRange {
                what: "BAR",
                off: o,
                ..
            } => assert_eq!(o, off),
            e => panic!("{e}"),
        }
    }
    // Too small, not mappable, not implemented, and failing calls.
    let e = d.map_bar(0, 0x4_0000).err().unwrap();
    assert!(
        matches!(
            e,
            VfioError::BarTooSmall {
                size: 0x2_0000,
                need: 0x4_0000,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("bitstream"), "{e}");
    let e = d.map_bar(2, 1).err().unwrap();
    assert!(
        matches!(
            e,
            VfioError::BarNotMappable {
                index: 2,
                size: 0,
                ..
            }
        ),
        "{e}"
    );
    f.state().regions.insert(
        4,
        RegionInfo {
            flags: uapi::REGION_READ,
            size: 0x1000,
            offset: 4 << 40,
        },
    );
    assert!(matches!(
        d.map_bar(4, 1),
        Err(VfioError::BarNotMappable { index: 4, .. })
    ));
    f.fail(Op::MmapDevice, libc::EINVAL);
    assert!(matches!(
        d.map_bar(0, 1),
        Err(VfioError::Sys { op: "mmap", .. })
    ));
    f.fail(Op::RegionInfo, libc::EINVAL);
    assert!(matches!(
        d.map_bar(0, 1),
        Err(VfioError::Sys {
            op: "VFIO_DEVICE_GET_REGION_INFO",
            ..
        })
    ));
}

// --- DMA ------------------------------------------------------------------------------

#[test]
fn dma_buffers_below_the_mask_and_their_lifetime() {
    let f = FakeSys::nic();
    let d = open(&f).unwrap();
    let opts = DmaOptions {
        hugepages: false,
        ..DmaOptions::with_mask_bits(28)
    };
    let a = d.alloc_dma(100, &opts).unwrap();
    assert_eq!(
        (a.len(), a.is_empty(), a.is_huge(), a.is_mapped()),
        (4096, false, false, true)
    );
    assert_eq!(
        a.iova(),
        0x1000,
        "the VA is above the IOMMU's 39 bits: allocated"
    );
    assert!(a.iova() + a.len() as u64 - 1 < 1 << 28);
    let b = d.alloc_dma(8192, &opts).unwrap();
    assert_eq!(b.iova(), 0x2000);
    assert_eq!(d.container().locked_bytes(), 3 * 4096);
    assert_eq!(f.state().iommu.len(), 2);
    assert!(format!("{a:?}").contains("iova: 0x1000"));

    a.write(10, b"abc").unwrap();
    let mut r = [0u8; 5];
    a.read(9, &mut r).unwrap();
    assert_eq!(&r, b"\0abc\0");
    let e = a.write(4094, b"abc").unwrap_err();
    assert!(
        matches!(
            e,
            VfioError::OutOfRange {
                what: "DMA buffer",
                off: 4094,
                len: 3,
                size: 4096
            }
        ),
        "{e}"
    );
    assert!(a.read(usize::MAX, &mut r).is_err());

    drop(a);
    assert_eq!(f.state().iommu.len(), 1, "drop unmaps");
    assert_eq!(d.container().locked_bytes(), 2 * 4096);
    let c = d.alloc_dma(4096, &opts).unwrap();
    assert_eq!(c.iova(), 0x1000, "the freed IOVA is reused");
    drop((b, c));
    assert!(
        f.state().iommu.is_empty() && f.state().mem.is_empty(),
        "unmapped and freed"
    );
}

#[test]
fn explicit_unmap_keeps_the_memory() {
    let f = FakeSys::nic();
    let d = open(&f).unwrap();
    let mut a = d.alloc_dma(4096, &small()).unwrap();
    a.write(0, &[9; 16]).unwrap();
    a.unmap().unwrap();
    assert!(!a.is_mapped() && f.state().iommu.is_empty());
    let mut r = [0u8; 16];
    a.read(0, &mut r).unwrap();
    assert_eq!(r, [9; 16]);
    assert!(matches!(a.unmap(), Err(VfioError::NotMapped { .. })));
    assert_eq!(f.state().mem.len(), 1);
    drop(a);
    assert!(f.state().mem.is_empty());
    assert_eq!(f.calls(Op::UnmapDma), 1, "drop does not unmap twice");
}

#[test]
fn a_failed_unmap_leaks_instead_of_freeing() {
    let f = FakeSys::nic();
    let d = open(&f).unwrap();
    let mut a = d.alloc_dma(4096, &small()).unwrap();
    f.fail(Op::UnmapDma, libc::EIO);
    assert!(matches!(
        a.unmap(),
        Err(VfioError::Sys {
            op: "VFIO_IOMMU_UNMAP_DMA",
            ..
        })
    ));
    drop(a);
    assert_eq!(f.state().mem.len(), 1, "still mapped, so never freed");

    // A short unmap is a failure too.
    let f = FakeSys::nic();
    let d = open(&f).unwrap();
    let mut a = d.alloc_dma(4096, &small()).unwrap();
    f.state().unmap_short = true;
    let e = a.unmap().unwrap_err();
    assert!(
        e.to_string().contains("the kernel unmapped 0x800 bytes"),
        "{e}"
    );
}

#[test]
fn dma_is_unmapped_when_a_panic_unwinds() {
    let f = FakeSys::nic();
    let d = open(&f).unwrap();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _a = d.alloc_dma(4096, &small()).unwrap();
        let _b = d.alloc_dma(4096, &small()).unwrap();
        assert_eq!(f.state().iommu.len(), 2);
        panic!("application bug");
    }));
    assert!(r.is_err());
    assert!(f.state().iommu.is_empty() && f.state().mem.is_empty());
    assert_eq!(d.container().locked_bytes(), 0);
}

#[test]
fn hugepages_where_available() {
    let f = FakeSys::nic();
    f.state().hugepages = 2;
    let d = open(&f).unwrap();
    let big = d.alloc_dma(3 << 20, &DmaOptions::default()).unwrap();
    assert!(big.is_huge());
    assert_eq!(big.len(), 4 << 20);
    assert_eq!(
        big.iova() % HUGE_PAGE,
        0,
        "2 MiB aligned for the IOMMU's 2 MiB pages"
    );
    assert_eq!(big.iova(), HUGE_PAGE, "never IOVA 0");
    // None left: small pages.
    let more = d.alloc_dma(4 << 20, &DmaOptions::default()).unwrap();
    assert!(!more.is_huge());
    assert_eq!(more.len(), 4 << 20);
    // Small buffers never use hugepages.
    f.state().hugepages = 1;
    let s = d.alloc_dma(4096, &DmaOptions::default()).unwrap();
    assert!(!s.is_huge());
    // An IOMMU without 2 MiB pages: page alignment is enough.
    let f = FakeSys::nic();
    {
        let mut st = f.state();
        st.hugepages = 1;
        st.iommu_info[8..16].copy_from_slice(&0x1000u64.to_ne_bytes());
    }
    let d = open(&f).unwrap();
    let _pad = d.alloc_dma(4096, &small()).unwrap();
    let h = d.alloc_dma(2 << 20, &DmaOptions::default()).unwrap();
    assert!(h.is_huge());
    assert_eq!(h.iova(), 0x2000);
}

#[test]
fn memlock_limit() {
    let f = FakeSys::nic();
    f.state().memlock = Some(8192);
    let d = open(&f).unwrap();
    let _a = d.alloc_dma(8192, &small()).unwrap();
    let e = d.alloc_dma(1, &small()).unwrap_err();
    assert!(
        matches!(
            e,
            VfioError::MemlockLimit {
                needed: 4096,
                pinned: 8192,
                limit: Some(8192)
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("ulimit -l"), "{e}");
    assert!(
        f.state().iommu.len() == 1 && f.state().mem.len() == 1,
        "nothing left behind"
    );

    // CAP_IPC_LOCK lifts it (as the kernel does).
    f.state().files.insert(
        PathBuf::from("/proc/self/status"),
        "CapEff:\t0000000000004000\n".into(),
    );
    d.alloc_dma(4096, &small()).unwrap();

    // Unlimited.
    let f = FakeSys::nic();
    f.state().memlock = None;
    let d = open(&f).unwrap();
    d.alloc_dma(1 << 20, &small()).unwrap();

    // The kernel's own refusal (ENOMEM) says the same.
    f.fail(Op::MapDma, libc::ENOMEM);
    let e = d.alloc_dma(4096, &small()).unwrap_err();
    assert!(
        matches!(e, VfioError::MemlockLimit { limit: None, .. }),
        "{e}"
    );
    assert!(e.to_string().contains("ulimit -l unlimited"), "{e}");

    f.fail(Op::Memlock, libc::EINVAL);
    assert!(matches!(
        d.alloc_dma(4096, &small()),
        Err(VfioError::Sys {
            op: "getrlimit(RLIMIT_MEMLOCK)",
            ..
        })
    ));
}

#[test]
fn dma_allocation_failures() {
    let f = FakeSys::nic();
    let d = open(&f).unwrap();
    let e = d
        .alloc_dma(
            4096,
            &DmaOptions {
                mask: 0x1234,
                hugepages: false,
            },
        )
        .unwrap_err();
    assert!(matches!(e, VfioError::BadDmaMask(0x1234)), "{e}");
    // A 13-bit mask holds one page (IOVA 0 is never used).
    let tiny = DmaOptions {
        hugepages: false,
        ..DmaOptions::with_mask_bits(13)
    };
    let _one = d.alloc_dma(4096, &tiny).unwrap();
    let e = d.alloc_dma(4096, &tiny).unwrap_err();
    assert!(matches!(e, VfioError::IovaExhausted { .. }), "{e}");
    assert!(e.to_string().contains("[0xfef00000, 0x7fffffffff]"), "{e}");
    assert_eq!(DmaOptions::with_mask_bits(0).mask, 1);
    assert_eq!(DmaOptions::with_mask_bits(99).mask, u64::MAX);

    f.fail(Op::MmapAnon, libc::ENOMEM);
    assert!(matches!(
        d.alloc_dma(4096, &small()),
        Err(VfioError::Sys { op: "mmap", .. })
    ));
    f.state().fail.clear();
    f.fail(Op::MapDma, libc::EINVAL);
    let e = d.alloc_dma(4096, &small()).unwrap_err();
    assert!(
        matches!(
            e,
            VfioError::Sys {
                op: "VFIO_IOMMU_MAP_DMA",
                ..
            }
        ),
        "{e}"
    );
    f.state().fail.clear();
    assert_eq!(
        d.alloc_dma(4096, &small()).unwrap().iova(),
        0x2000,
        "a failed map leaves no IOVA behind"
    );

    // A container with no group yet has no IOMMU to map into.
    let c = Container::open(std::sync::Arc::new(FakeSys::nic())).unwrap();
    let e = c.alloc_dma(4096, &small()).unwrap_err();
    assert!(e.to_string().contains("no group has joined"), "{e}");
}

// --- the rocenic backend ----------------------------------------------------------------

/// A NIC whose capability registers make `Context::open` succeed.
fn full_nic() -> FakeSys {
    let mut r = BTreeMap::new();
    for (off, v) in [
        (regs::ID, regs::DEVICE_ID),
        (
            regs::ABI_VERSION,
            (regs::ABI_MAJOR as u32) << 16 | regs::ABI_MINOR as u32,
        ),
        (regs::MAX_QP, 64),
        (regs::MAX_CQ, 64),
        (regs::MAX_MR, 256),
        (regs::MAX_PD, 16),
        (regs::MAX_LOG_RING, 12),
        (regs::MAX_SGE, 0x0404),
        (regs::MAX_INLINE, 16),
        (regs::MAX_RD_ATOMIC, 0x1010),
        (regs::CLOCK_MHZ, 250),
    ] {
        r.insert(off as usize, u64::from(v));
    }
    FakeSys::with_device(
        NIC,
        (0x10ee, 0x903f),
        NIC_GROUP,
        regs::BAR0_SIZE.into(),
        Box::new(RegisterBar(r)),
    )
}

fn backend(f: &FakeSys) -> VfioBackend<FakeSys> {
    VfioBackend::open_with(f.clone(), NIC, &VfioOptions::default()).unwrap()
}

#[test]
fn rocenic_backend_opens_resets_and_masters() {
    let f = FakeSys::nic();
    f.state().config[4] = 0x06; // left over from a previous user; reset clears it
    let be = backend(&f);
    assert!(be.was_reset());
    assert_eq!(be.clock_mhz(), 250);
    assert_eq!(
        be.device().command().unwrap(),
        PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER
    );
    let log = f.state().log.clone();
    let reset = log.iter().position(|l| l == "Reset").unwrap();
    let master = log.iter().rposition(|l| l == "Pwrite").unwrap();
    assert!(
        reset < master,
        "bus mastering is enabled after the reset: {log:?}"
    );
    drop(be);
    assert_eq!(f.state().config[4] & 4, 0, "dropping the backend stops DMA");

    // Asked not to reset; a device that cannot reset is not reset either.
    let f = FakeSys::nic();
    let be = VfioBackend::open_with(
        f.clone(),
        NIC,
        &VfioOptions {
            reset: false,
            ..Default::default()
        },
    )
    .unwrap();
    assert!(!be.was_reset());
    let f2 = FakeSys::nic();
    f2.state().device_flags = uapi::DEVICE_FLAGS_PCI;
    assert!(!backend(&f2).was_reset());
    assert_eq!(f.calls(Op::Reset) + f2.calls(Op::Reset), 0);
}

#[test]
fn rocenic_backend_open_failures() {
    // Not ours: the ID register holds something else.
    let f = FakeSys::with_device(
        NIC,
        (0x8086, 0x1572),
        NIC_GROUP,
        regs::BAR0_SIZE.into(),
        Box::new(RegisterBar(BTreeMap::new())),
    );
    let e = VfioBackend::open_with(f, NIC, &VfioOptions::default())
        .err()
        .unwrap();
    assert!(matches!(e, VfioError::NotOurDevice { found: 0, .. }), "{e}");
    let m = e.to_string();
    assert!(m.contains("(PCI 8086:1572) is not a rocenic NIC"), "{m}");
    assert!(
        m.contains("lspci -D -nn") && m.contains("docs/flashing.md"),
        "{m}"
    );

    // BAR0 smaller than the register map.
    let f = FakeSys::nic();
    f.state().regions.get_mut(&0).unwrap().size = 0x1000;
    let e = VfioBackend::open_with(f, NIC, &VfioOptions::default())
        .err()
        .unwrap();
    assert!(
        matches!(
            e,
            VfioError::BarTooSmall {
                size: 0x1000,
                need: 0x2_0000,
                ..
            }
        ),
        "{e}"
    );

    // Reset and bus-master failures.
    let f = FakeSys::nic();
    f.fail(Op::Reset, libc::EIO);
    assert!(VfioBackend::open_with(f, NIC, &VfioOptions::default()).is_err());
    let f = FakeSys::nic();
    f.fail(Op::Pread, libc::EIO);
    assert!(VfioBackend::open_with(f, NIC, &VfioOptions::default()).is_err());
    let f = FakeSys::nic();
    f.state().nodes.clear();
    assert!(matches!(
        VfioBackend::open_with(f, NIC, &VfioOptions::default()),
        Err(VfioError::NoVfio { .. })
    ));

    // The crate error carries it unchanged.
    let e: Error = VfioError::NoType1v2.into();
    assert!(e.to_string().contains("modprobe vfio_iommu_type1"), "{e}");
}

#[test]
fn rocenic_backend_clock_defaults_to_250_mhz() {
    let f = FakeSys::nic();
    if let Some(m) = f.state().model.as_mut() {
        // RegisterBar: CLOCK_MHZ reads 0.
        let mut r = BTreeMap::new();
        r.insert(regs::ID as usize, u64::from(regs::DEVICE_ID));
        *m = Box::new(RegisterBar(r));
    }
    assert_eq!(backend(&f).clock_mhz(), u64::from(DEFAULT_CLOCK_MHZ));
}

#[test]
fn rocenic_backend_keeps_the_backend_contract() {
    let f = FakeSys::nic();
    let mut be = backend(&f);
    be.bar_write(regs::MAC_LO, 0x1234_5678);
    assert_eq!(be.bar_read(regs::MAC_LO), 0x1234_5678);

    let r1 = be.alloc_dma(100).unwrap();
    let r2 = be.alloc_dma(3 * 4096).unwrap();
    assert_ne!(r1.id, r2.id);
    assert!(r1.len >= 100 && r1.va.is_multiple_of(4096) && r1.iova.is_multiple_of(4096));
    assert_eq!(
        r1.iova, 0x1000,
        "the VA is above the IOMMU's 39 bits: allocated"
    );
    let mut z = vec![1u8; r2.len];
    be.mem_read(r2.va, &mut z).unwrap();
    assert!(z.iter().all(|&b| b == 0), "zero-filled");
    be.mem_write(r2.va + 4000, b"descriptor").unwrap();
    let mut back = [0u8; 10];
    be.mem_read(r2.va + 4000, &mut back).unwrap();
    assert_eq!(&back, b"descriptor");

    // Outside every region, or across a region's end.
    for va in [r1.va - 1, r1.va + r1.len as u64 - 2] {
        match be.mem_write(va, &[0; 4]) {
            Err(Error::MemAccess { write: true, .. }) => {}
            r => panic!("{va:#x}: {r:?}"),
        }
        match be.mem_read(va, &mut [0; 4]) {
            Err(Error::MemAccess { write: false, .. }) => {}
            r => panic!("{va:#x}: {r:?}"),
        }
    }

    be.free_dma(r1.id).unwrap();
    assert!(matches!(be.free_dma(r1.id), Err(Error::DmaFree { .. })));
    assert!(matches!(
        be.mem_read(r1.va, &mut [0; 1]),
        Err(Error::MemAccess { .. })
    ));
    f.fail(Op::UnmapDma, libc::EIO);
    let e = be.free_dma(r2.id).unwrap_err();
    assert!(matches!(e, Error::DmaFree { .. }), "{e}");

    f.state().memlock = Some(0);
    let e = be.alloc_dma(4096).unwrap_err();
    assert!(matches!(e, Error::DmaAlloc { len: 4096, .. }), "{e}");
    assert!(e.to_string().contains("ulimit -l"), "{e}");
}

#[test]
fn rocenic_backend_time() {
    let f = FakeSys::nic();
    let mut be = backend(&f);
    let t0 = be.now();
    let w = Instant::now();
    be.wait(0);
    be.wait(250); // 1 us: spins
    be.wait(250_000); // 1 ms: sleeps, then spins
    let spent = w.elapsed();
    assert!(spent >= Duration::from_micros(1001), "{spent:?}");
    let t1 = be.now();
    assert!(t1 >= t0 + 250_250, "{t0} -> {t1}");
}

#[test]
#[should_panic(expected = "only aligned offsets inside BAR0")]
fn rocenic_backend_bar_access_outside_bar0_is_a_driver_bug() {
    let f = FakeSys::nic();
    backend(&f).bar_read(regs::BAR0_SIZE);
}

#[test]
#[should_panic(expected = "only aligned offsets inside BAR0")]
fn rocenic_backend_misaligned_bar_write_is_a_driver_bug() {
    let f = FakeSys::nic();
    backend(&f).bar_write(2, 0);
}

#[test]
fn the_driver_core_runs_on_it_unchanged() {
    let f = full_nic();
    let be = backend(&f);
    let mut ctx = Context::open(Box::new(be)).unwrap();
    assert_eq!(ctx.device_attr().max_qp, 64);
    ctx.set_port([2, 0, 0, 0, 0, 1], [10, 0, 0, 1]);
    let buf = ctx.alloc_buf(10_000).unwrap();
    ctx.write(&buf, 9000, b"through VFIO").unwrap();
    let mut r = [0u8; 12];
    ctx.read(&buf, 9000, &mut r).unwrap();
    assert_eq!(&r, b"through VFIO");
    assert_eq!(f.state().iommu.len(), 1);
    ctx.free_buf(&buf).unwrap();
    assert!(f.state().iommu.is_empty());
    drop(ctx);
    assert!(f.state().mem.is_empty());
}

// --- the edu check --------------------------------------------------------------------

fn run_edu(f: &FakeSys, opts: &edu::EduOptions) -> (edu::EduOutcome, String) {
    let d = Device::open(f.clone(), EDU).unwrap();
    let mut out = Vec::new();
    let o = edu::run(&d, opts, &mut out).unwrap();
    (o, String::from_utf8(out).unwrap())
}

#[test]
fn edu_check_passes_on_a_working_device() {
    let f = FakeSys::edu(Edu::new());
    let (o, text) = run_edu(&f, &edu::EduOptions::default());
    assert!(o.ok(), "{text}");
    assert_eq!(o.passed.len(), 7, "{text}");
    assert_eq!(o.verdict(), "PASS (7 checks)");
    assert!(text.contains("not reset"), "{text}");
    assert!(text.contains("small pages"), "{text}");
    // The two unmapped accesses were refused by the IOMMU, and nothing is left mapped.
    assert_eq!(f.state().faults.len(), 2, "{text}");
    assert!(f.state().iommu.is_empty() && f.state().mem.is_empty());
    assert_eq!(f.state().config[4] & 4, 4, "bus mastering enabled");
}

#[test]
fn edu_check_uses_hugepages_and_resets_when_it_can() {
    let f = FakeSys::edu(Edu::new());
    {
        let mut st = f.state();
        st.hugepages = 4;
        st.device_flags |= uapi::DEVICE_FLAGS_RESET;
    }
    let (o, text) = run_edu(&f, &edu::EduOptions::default());
    assert!(o.ok(), "{text}");
    assert!(
        text.contains("2 MiB pages") && text.contains("function reset"),
        "{text}"
    );
}

#[test]
fn edu_check_catches_an_iommu_that_lets_unmapped_dma_through() {
    let f = FakeSys::edu(Edu::new());
    f.state().stale_iotlb = true;
    let (o, text) = run_edu(&f, &edu::EduOptions::default());
    assert!(!o.ok());
    assert_eq!(o.failed.len(), 2, "{text}");
    assert!(
        o.failed[0].starts_with("DMA write to an unmapped IOVA is blocked"),
        "{text}"
    );
    assert!(
        o.failed[1].starts_with("DMA read from an unmapped IOVA is blocked"),
        "{text}"
    );
    assert!(
        o.verdict().starts_with("FAIL (2 of 7 checks failed"),
        "{}",
        o.verdict()
    );
}

#[test]
fn edu_check_fails_on_a_wrong_id_and_a_stuck_engine() {
    let mut m = Edu::new();
    m.id = 0x0200_00ed;
    m.stuck = true;
    let f = FakeSys::edu(m);
    let opts = edu::EduOptions {
        timeout: Duration::from_millis(5),
        ..Default::default()
    };
    let (o, text) = run_edu(&f, &opts);
    assert!(!o.ok());
    assert!(
        o.failed[0].contains("0x020000ed (expected 0x010000ed)"),
        "{text}"
    );
    assert!(
        text.contains("FAIL DMA RAM -> edu -> RAM: completed false/false"),
        "{text}"
    );
    assert_eq!(o.passed.len(), 2, "liveness and the IOVA placement: {text}");
    assert!(!edu::EduOutcome::default().ok(), "no checks is no pass");
}

#[test]
fn edu_check_reports_layer_failures_as_errors() {
    let f = FakeSys::edu(Edu::new());
    let d = Device::open(f.clone(), EDU).unwrap();
    f.fail(Op::MapDma, libc::EINVAL);
    assert!(edu::run(&d, &edu::EduOptions::default(), &mut Vec::new()).is_err());
}

#[test]
fn finding_devices_by_id() {
    let f = FakeSys::edu(Edu::new());
    f.state()
        .dirs
        .get_mut(&PathBuf::from("/sys/bus/pci/devices"))
        .unwrap()
        .extend(["0000:00:01.0".to_string(), "not-an-address".to_string()]);
    assert_eq!(
        find_by_id(&f, edu::EDU_VENDOR, edu::EDU_DEVICE),
        vec![EDU.parse::<PciAddress>().unwrap()]
    );
    assert!(find_by_id(&f, 0x10ee, 0x903f).is_empty());
}
