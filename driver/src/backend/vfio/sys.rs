//! Every system call of the VFIO layer, behind one trait: the only place in the driver
//! crate with `unsafe` code.
//!
//! [`Sys`] is what the rest of `vfio` needs from the operating system: sysfs look-ups, file
//! opens, the VFIO ioctls, `mmap` of device regions and of anonymous (DMA) memory, volatile
//! accesses to those mappings, and the memory-lock limit. [`Host`] implements it on the
//! running Linux kernel; the unit tests implement it with a fake (`fake.rs`) that injects
//! failures and emulates devices, so every branch above this module runs without `/dev/vfio`.
//!
//! The VFIO uAPI structures (`linux/vfio.h`) are declared here as `#[repr(C)]` structs with
//! their sizes asserted at compile time. Callers above this module see plain Rust values
//! ([`DeviceInfo`], [`RegionInfo`]) or bytes (the IOMMU info capability chain, which
//! `container.rs` parses with bounds checks).
//!
//! Mapped memory ([`Sys::Map`]) is never handed out as a Rust reference: the device may
//! change it at any time. It is read and written only through the volatile accessors here,
//! each of which checks its bounds itself, so they are sound for any argument.
#![allow(unsafe_code)]

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{fence, Ordering};

use memmap2::{MmapOptions, MmapRaw};

/// The VFIO uAPI: ioctl numbers, flags and structures of `linux/vfio.h`.
pub mod uapi {
    /// `VFIO_API_VERSION`: the only version there is.
    pub const API_VERSION: i32 = 0;
    /// `VFIO_TYPE1v2_IOMMU`, the extension and IOMMU model we use.
    pub const TYPE1V2_IOMMU: u32 = 3;

    /// `VFIO_GROUP_FLAGS_VIABLE`: every device of the group is bound to a VFIO driver
    /// (or to none).
    pub const GROUP_FLAGS_VIABLE: u32 = 1 << 0;

    /// `VFIO_DEVICE_FLAGS_RESET`: the device supports `VFIO_DEVICE_RESET`.
    pub const DEVICE_FLAGS_RESET: u32 = 1 << 0;
    /// `VFIO_DEVICE_FLAGS_PCI`: a vfio-pci device.
    pub const DEVICE_FLAGS_PCI: u32 = 1 << 1;

    /// Region flags (`VFIO_REGION_INFO_FLAG_*`).
    pub const REGION_READ: u32 = 1 << 0;
    /// Writable.
    pub const REGION_WRITE: u32 = 1 << 1;
    /// Can be mmapped.
    pub const REGION_MMAP: u32 = 1 << 2;

    /// Region indices of a vfio-pci device (`VFIO_PCI_*_REGION_INDEX`).
    pub const PCI_BAR0_REGION_INDEX: u32 = 0;
    /// PCI configuration space.
    pub const PCI_CONFIG_REGION_INDEX: u32 = 7;

    /// `VFIO_IOMMU_INFO_PGSIZES`: `iova_pgsizes` is valid.
    pub const IOMMU_INFO_PGSIZES: u32 = 1 << 0;
    /// `VFIO_IOMMU_INFO_CAPS`: a capability chain starts at `cap_offset`.
    pub const IOMMU_INFO_CAPS: u32 = 1 << 1;
    /// `VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE`: the usable IOVA ranges.
    pub const IOMMU_CAP_IOVA_RANGE: u16 = 1;

    /// `VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE`: the device may read and write.
    pub const DMA_MAP_READ_WRITE: u32 = (1 << 0) | (1 << 1);

    /// `_IO(VFIO_TYPE, VFIO_BASE + n)`: VFIO ioctls carry no size in their number.
    const fn io(n: u64) -> u64 {
        ((b';' as u64) << 8) | (100 + n)
    }
    /// `VFIO_GET_API_VERSION`.
    pub const GET_API_VERSION: u64 = io(0);
    /// `VFIO_CHECK_EXTENSION`.
    pub const CHECK_EXTENSION: u64 = io(1);
    /// `VFIO_SET_IOMMU`.
    pub const SET_IOMMU: u64 = io(2);
    /// `VFIO_GROUP_GET_STATUS`.
    pub const GROUP_GET_STATUS: u64 = io(3);
    /// `VFIO_GROUP_SET_CONTAINER`.
    pub const GROUP_SET_CONTAINER: u64 = io(4);
    /// `VFIO_GROUP_GET_DEVICE_FD`.
    pub const GROUP_GET_DEVICE_FD: u64 = io(6);
    /// `VFIO_DEVICE_GET_INFO`.
    pub const DEVICE_GET_INFO: u64 = io(7);
    /// `VFIO_DEVICE_GET_REGION_INFO`.
    pub const DEVICE_GET_REGION_INFO: u64 = io(8);
    /// `VFIO_DEVICE_RESET`.
    pub const DEVICE_RESET: u64 = io(11);
    /// `VFIO_IOMMU_GET_INFO`.
    pub const IOMMU_GET_INFO: u64 = io(12);
    /// `VFIO_IOMMU_MAP_DMA`.
    pub const IOMMU_MAP_DMA: u64 = io(13);
    /// `VFIO_IOMMU_UNMAP_DMA`.
    pub const IOMMU_UNMAP_DMA: u64 = io(14);

    /// `struct vfio_group_status`.
    #[repr(C)]
    #[derive(Default)]
    pub struct GroupStatus {
        /// Size of the structure.
        pub argsz: u32,
        /// `VFIO_GROUP_FLAGS_*`.
        pub flags: u32,
    }

    /// `struct vfio_device_info` up to `num_irqs` (the kernel's minimum size).
    #[repr(C)]
    #[derive(Default)]
    pub struct DeviceInfo {
        /// Size of the structure.
        pub argsz: u32,
        /// `VFIO_DEVICE_FLAGS_*`.
        pub flags: u32,
        /// Number of regions.
        pub num_regions: u32,
        /// Number of interrupt types.
        pub num_irqs: u32,
    }

    /// `struct vfio_region_info`.
    #[repr(C)]
    #[derive(Default)]
    pub struct RegionInfo {
        /// Size of the structure.
        pub argsz: u32,
        /// `VFIO_REGION_INFO_FLAG_*`.
        pub flags: u32,
        /// The region index.
        pub index: u32,
        /// Offset of the first capability.
        pub cap_offset: u32,
        /// Size in bytes.
        pub size: u64,
        /// Offset of the region in the device file.
        pub offset: u64,
    }

    /// `struct vfio_iommu_type1_info` (the fixed part; capabilities follow it).
    #[repr(C)]
    #[derive(Default)]
    pub struct IommuInfo {
        /// Size of the structure.
        pub argsz: u32,
        /// `VFIO_IOMMU_INFO_*`.
        pub flags: u32,
        /// Supported IOMMU page sizes, a bit per size.
        pub iova_pgsizes: u64,
        /// Offset of the first capability.
        pub cap_offset: u32,
        /// Padding.
        pub pad: u32,
    }

    /// `struct vfio_iommu_type1_dma_map`.
    #[repr(C)]
    #[derive(Default)]
    pub struct DmaMap {
        /// Size of the structure.
        pub argsz: u32,
        /// `VFIO_DMA_MAP_FLAG_*`.
        pub flags: u32,
        /// Process virtual address.
        pub vaddr: u64,
        /// I/O virtual address.
        pub iova: u64,
        /// Size in bytes.
        pub size: u64,
    }

    /// `struct vfio_iommu_type1_dma_unmap` (without the dirty-bitmap tail).
    #[repr(C)]
    #[derive(Default)]
    pub struct DmaUnmap {
        /// Size of the structure.
        pub argsz: u32,
        /// `VFIO_DMA_UNMAP_FLAG_*`.
        pub flags: u32,
        /// I/O virtual address.
        pub iova: u64,
        /// Size in bytes.
        pub size: u64,
    }

    // The layouts the kernel expects (checked against linux/vfio.h).
    const _: () = assert!(std::mem::size_of::<GroupStatus>() == 8);
    const _: () = assert!(std::mem::size_of::<DeviceInfo>() == 16);
    const _: () = assert!(std::mem::size_of::<RegionInfo>() == 32);
    const _: () = assert!(std::mem::size_of::<IommuInfo>() == 24);
    const _: () = assert!(std::mem::size_of::<DmaMap>() == 32);
    const _: () = assert!(std::mem::size_of::<DmaUnmap>() == 24);
    /// Size of the fixed part of the IOMMU info, where capability offsets start counting.
    pub const IOMMU_INFO_LEN: usize = std::mem::size_of::<IommuInfo>();
}

/// What `VFIO_DEVICE_GET_INFO` reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DeviceInfo {
    /// `VFIO_DEVICE_FLAGS_*`.
    pub flags: u32,
    /// Number of regions.
    pub num_regions: u32,
    /// Number of interrupt types.
    pub num_irqs: u32,
}

/// What `VFIO_DEVICE_GET_REGION_INFO` reports for one region.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RegionInfo {
    /// `VFIO_REGION_INFO_FLAG_*`.
    pub flags: u32,
    /// Size in bytes (0: the region is not implemented, e.g. an unused BAR).
    pub size: u64,
    /// Offset of the region in the device file (for `pread`/`pwrite`/`mmap`).
    pub offset: u64,
}

/// The operating system as the VFIO layer sees it. See the module documentation.
///
/// Every method reports failure as the `io::Error` of the call (its errno), which the
/// layers above turn into a [`super::VfioError`] that says what to do.
pub trait Sys {
    /// An open file (container, group or device).
    type Fd;
    /// A memory mapping (a device region or anonymous memory).
    type Map;

    // --- sysfs and procfs ---
    /// The target of a symbolic link.
    fn read_link(&self, path: &Path) -> io::Result<PathBuf>;
    /// A whole (small) file as text.
    fn read_file(&self, path: &Path) -> io::Result<String>;
    /// The names in a directory, in no particular order.
    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>>;

    // --- files ---
    /// Opens `path` read-write (close-on-exec).
    fn open(&self, path: &Path) -> io::Result<Self::Fd>;

    // --- container ioctls ---
    /// `VFIO_GET_API_VERSION`.
    fn get_api_version(&self, container: &Self::Fd) -> io::Result<i32>;
    /// `VFIO_CHECK_EXTENSION`: whether the container supports `ext`.
    fn check_extension(&self, container: &Self::Fd, ext: u32) -> io::Result<i32>;
    /// `VFIO_SET_IOMMU`.
    fn set_iommu(&self, container: &Self::Fd, iommu_type: u32) -> io::Result<()>;
    /// `VFIO_IOMMU_GET_INFO` with its whole capability chain: the returned bytes start
    /// with `struct vfio_iommu_type1_info`; capability offsets count from byte 0.
    fn iommu_info(&self, container: &Self::Fd) -> io::Result<Vec<u8>>;
    /// `VFIO_IOMMU_MAP_DMA`, read and write.
    fn map_dma(&self, container: &Self::Fd, vaddr: u64, iova: u64, size: u64) -> io::Result<()>;
    /// Returns the number of bytes unmapped.
    fn unmap_dma(&self, container: &Self::Fd, iova: u64, size: u64) -> io::Result<u64>;

    // --- group ioctls ---
    /// `VFIO_GROUP_GET_STATUS` flags.
    fn group_status(&self, group: &Self::Fd) -> io::Result<u32>;
    /// `VFIO_GROUP_SET_CONTAINER`.
    fn group_set_container(&self, group: &Self::Fd, container: &Self::Fd) -> io::Result<()>;
    /// `VFIO_GROUP_GET_DEVICE_FD` of the device `name`.
    fn group_device_fd(&self, group: &Self::Fd, name: &str) -> io::Result<Self::Fd>;

    // --- device ioctls and region I/O ---
    /// `VFIO_DEVICE_GET_INFO`.
    fn device_info(&self, device: &Self::Fd) -> io::Result<DeviceInfo>;
    /// `VFIO_DEVICE_GET_REGION_INFO` of region `index`.
    fn region_info(&self, device: &Self::Fd, index: u32) -> io::Result<RegionInfo>;
    /// `VFIO_DEVICE_RESET`.
    fn device_reset(&self, device: &Self::Fd) -> io::Result<()>;
    /// `pread` of the whole of `buf` at file offset `off`.
    fn pread(&self, device: &Self::Fd, off: u64, buf: &mut [u8]) -> io::Result<()>;
    /// `pwrite` of the whole of `data` at file offset `off`.
    fn pwrite(&self, device: &Self::Fd, off: u64, data: &[u8]) -> io::Result<()>;

    // --- mappings ---
    /// Maps `len` bytes of the device file at `offset` (a region), shared, read-write.
    fn mmap_device(&self, device: &Self::Fd, offset: u64, len: usize) -> io::Result<Self::Map>;
    /// Maps `len` bytes of zeroed anonymous memory, prefaulted; with `huge`, from 2 MiB
    /// hugetlb pages (`len` must then be a multiple of 2 MiB).
    fn mmap_anon(&self, len: usize, huge: bool) -> io::Result<Self::Map>;
    /// Virtual address of the first byte.
    fn map_addr(&self, map: &Self::Map) -> u64;
    /// Length in bytes.
    fn map_len(&self, map: &Self::Map) -> usize;

    /// Volatile 32-bit read at byte offset `off` (4-byte aligned, inside the mapping;
    /// panics otherwise).
    fn read32(&self, map: &Self::Map, off: usize) -> u32;
    /// Volatile 32-bit write, after a full fence so earlier memory writes are visible first.
    fn write32(&self, map: &Self::Map, off: usize, v: u32);
    /// Volatile 64-bit read (8-byte aligned).
    fn read64(&self, map: &Self::Map, off: usize) -> u64;
    /// Volatile 64-bit write (8-byte aligned), after a full fence.
    fn write64(&self, map: &Self::Map, off: usize, v: u64);
    /// Volatile copy out of the mapping, between full fences (panics when out of range).
    fn copy_from(&self, map: &Self::Map, off: usize, buf: &mut [u8]);
    /// Volatile copy into the mapping, between full fences (panics when out of range).
    fn copy_to(&self, map: &Self::Map, off: usize, data: &[u8]);

    // --- limits ---
    /// `RLIMIT_MEMLOCK` (soft) in bytes; `None` when unlimited.
    fn memlock_limit(&self) -> io::Result<Option<u64>>;
    /// The CPU page size.
    fn page_size(&self) -> usize;
}

/// The running Linux kernel.
#[derive(Debug, Clone, Copy, Default)]
pub struct Host;

/// A mapping made by [`Host`]: unmapped when dropped.
#[derive(Debug)]
pub struct HostMap(MmapRaw);

fn cvt(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// An ioctl whose argument is an integer (or nothing).
fn ioctl_val(fd: &File, req: u64, arg: libc::c_ulong) -> io::Result<libc::c_int> {
    // SAFETY: `fd` is an open file we own for the duration of the call; the VFIO ioctls
    // issued through this helper (GET_API_VERSION, CHECK_EXTENSION, SET_IOMMU,
    // DEVICE_RESET) take an integer argument or none and do not access our memory. On any
    // other file the kernel fails the call with ENOTTY.
    cvt(unsafe { libc::ioctl(fd.as_raw_fd(), req as _, arg) })
}

/// An ioctl whose argument points at `*arg`, which the kernel may read and write.
fn ioctl_ptr<T>(fd: &File, req: u64, arg: &mut T) -> io::Result<libc::c_int> {
    // SAFETY: `arg` is a valid, exclusively borrowed, properly aligned `#[repr(C)]` value
    // of the layout the request expects (the uapi structs above, whose `argsz` tells the
    // kernel their size, or a `c_int` for SET_CONTAINER); the kernel reads and writes at
    // most `argsz` bytes of it and keeps no pointer after returning.
    cvt(unsafe { libc::ioctl(fd.as_raw_fd(), req as _, arg as *mut T) })
}

/// One `VFIO_IOMMU_GET_INFO` with a buffer of `len` bytes; returns the buffer.
fn iommu_info_call(container: &File, len: usize) -> io::Result<Vec<u8>> {
    // u64 words keep the buffer aligned for the structure.
    let mut words = vec![0u64; len.div_ceil(8)];
    let len = words.len() * 8;
    let mut head = [0u8; 8];
    head[..4].copy_from_slice(&(len as u32).to_ne_bytes()); // argsz; flags = 0
    words[0] = u64::from_ne_bytes(head);
    // SAFETY: the buffer is `len` bytes, 8-byte aligned and exclusively ours, and starts
    // with `argsz = len`, so the kernel writes at most `len` bytes into it and keeps no
    // pointer after returning.
    cvt(unsafe {
        libc::ioctl(
            container.as_raw_fd(),
            uapi::IOMMU_GET_INFO as _,
            words.as_mut_ptr(),
        )
    })?;
    Ok(words.iter().flat_map(|w| w.to_ne_bytes()).collect())
}

impl Sys for Host {
    type Fd = File;
    type Map = HostMap;

    fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        std::fs::read_link(path)
    }

    fn read_file(&self, path: &Path) -> io::Result<String> {
        std::fs::read_to_string(path)
    }

    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        std::fs::read_dir(path)?
            .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect()
    }

    fn open(&self, path: &Path) -> io::Result<File> {
        // std opens with O_CLOEXEC.
        File::options().read(true).write(true).open(path)
    }

    fn get_api_version(&self, container: &File) -> io::Result<i32> {
        ioctl_val(container, uapi::GET_API_VERSION, 0)
    }

    fn check_extension(&self, container: &File, ext: u32) -> io::Result<i32> {
        ioctl_val(container, uapi::CHECK_EXTENSION, ext as libc::c_ulong)
    }

    fn set_iommu(&self, container: &File, iommu_type: u32) -> io::Result<()> {
        ioctl_val(container, uapi::SET_IOMMU, iommu_type as libc::c_ulong).map(drop)
    }

    fn iommu_info(&self, container: &File) -> io::Result<Vec<u8>> {
        // Twice: first with room for the fixed part only, which makes the kernel raise argsz
        // to what the capabilities need; then with that much room. (Should a capability
        // still not fit, its offset points past the bytes and the parser says so.)
        let first = iommu_info_call(container, uapi::IOMMU_INFO_LEN)?;
        let want = u32::from_ne_bytes([first[0], first[1], first[2], first[3]]) as usize;
        iommu_info_call(container, want.max(uapi::IOMMU_INFO_LEN))
    }

    fn map_dma(&self, container: &File, vaddr: u64, iova: u64, size: u64) -> io::Result<()> {
        let mut m = uapi::DmaMap {
            argsz: std::mem::size_of::<uapi::DmaMap>() as u32,
            flags: uapi::DMA_MAP_READ_WRITE,
            vaddr,
            iova,
            size,
        };
        ioctl_ptr(container, uapi::IOMMU_MAP_DMA, &mut m).map(drop)
    }

    fn unmap_dma(&self, container: &File, iova: u64, size: u64) -> io::Result<u64> {
        let mut u = uapi::DmaUnmap {
            argsz: std::mem::size_of::<uapi::DmaUnmap>() as u32,
            flags: 0,
            iova,
            size,
        };
        ioctl_ptr(container, uapi::IOMMU_UNMAP_DMA, &mut u)?;
        Ok(u.size)
    }

    fn group_status(&self, group: &File) -> io::Result<u32> {
        let mut s = uapi::GroupStatus {
            argsz: std::mem::size_of::<uapi::GroupStatus>() as u32,
            flags: 0,
        };
        ioctl_ptr(group, uapi::GROUP_GET_STATUS, &mut s)?;
        Ok(s.flags)
    }

    fn group_set_container(&self, group: &File, container: &File) -> io::Result<()> {
        let mut fd: libc::c_int = container.as_raw_fd();
        ioctl_ptr(group, uapi::GROUP_SET_CONTAINER, &mut fd).map(drop)
    }

    fn group_device_fd(&self, group: &File, name: &str) -> io::Result<File> {
        let name = std::ffi::CString::new(name)
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: `name` is a NUL-terminated string alive for the call; the kernel only reads
        // it. On success the return value is a new file descriptor nobody else owns.
        let fd = cvt(unsafe {
            libc::ioctl(
                group.as_raw_fd(),
                uapi::GROUP_GET_DEVICE_FD as _,
                name.as_ptr(),
            )
        })?;
        // SAFETY: `fd` was just returned by the kernel, is open, and is owned by nothing else.
        Ok(unsafe { File::from_raw_fd(fd) })
    }

    fn device_info(&self, device: &File) -> io::Result<DeviceInfo> {
        let mut i = uapi::DeviceInfo {
            argsz: std::mem::size_of::<uapi::DeviceInfo>() as u32,
            ..Default::default()
        };
        ioctl_ptr(device, uapi::DEVICE_GET_INFO, &mut i)?;
        Ok(DeviceInfo {
            flags: i.flags,
            num_regions: i.num_regions,
            num_irqs: i.num_irqs,
        })
    }

    fn region_info(&self, device: &File, index: u32) -> io::Result<RegionInfo> {
        let mut r = uapi::RegionInfo {
            argsz: std::mem::size_of::<uapi::RegionInfo>() as u32,
            index,
            ..Default::default()
        };
        ioctl_ptr(device, uapi::DEVICE_GET_REGION_INFO, &mut r)?;
        Ok(RegionInfo {
            flags: r.flags,
            size: r.size,
            offset: r.offset,
        })
    }

    fn device_reset(&self, device: &File) -> io::Result<()> {
        ioctl_val(device, uapi::DEVICE_RESET, 0).map(drop)
    }

    fn pread(&self, device: &File, off: u64, buf: &mut [u8]) -> io::Result<()> {
        device.read_exact_at(buf, off)
    }

    fn pwrite(&self, device: &File, off: u64, data: &[u8]) -> io::Result<()> {
        device.write_all_at(data, off)
    }

    fn mmap_device(&self, device: &File, offset: u64, len: usize) -> io::Result<HostMap> {
        MmapOptions::new()
            .offset(offset)
            .len(len)
            .map_raw(device.as_raw_fd())
            .map(HostMap)
    }

    fn mmap_anon(&self, len: usize, huge: bool) -> io::Result<HostMap> {
        let mut o = MmapOptions::new();
        o.len(len).populate();
        if huge {
            o.huge(Some(21)); // MAP_HUGETLB | MAP_HUGE_2MB
        }
        o.map_anon().map(|m| HostMap(MmapRaw::from(m)))
    }

    fn map_addr(&self, map: &HostMap) -> u64 {
        map.0.as_ptr() as u64
    }

    fn map_len(&self, map: &HostMap) -> usize {
        map.0.len()
    }

    fn read32(&self, map: &HostMap, off: usize) -> u32 {
        let p = checked_ptr(map, off, 4, 4);
        // SAFETY: `checked_ptr` proved `[off, off + 4)` lies inside the live mapping and is
        // 4-byte aligned; a volatile read through a raw pointer creates no reference.
        let v = unsafe { std::ptr::read_volatile(p as *const u32) };
        fence(Ordering::SeqCst);
        v
    }

    fn write32(&self, map: &HostMap, off: usize, v: u32) {
        let p = checked_ptr(map, off, 4, 4);
        fence(Ordering::SeqCst);
        // SAFETY: as in `read32`; the mapping is writable (mapped read-write).
        unsafe { std::ptr::write_volatile(p as *mut u32, v) }
    }

    fn read64(&self, map: &HostMap, off: usize) -> u64 {
        let p = checked_ptr(map, off, 8, 8);
        // SAFETY: as in `read32`, for 8 aligned bytes.
        let v = unsafe { std::ptr::read_volatile(p as *const u64) };
        fence(Ordering::SeqCst);
        v
    }

    fn write64(&self, map: &HostMap, off: usize, v: u64) {
        let p = checked_ptr(map, off, 8, 8);
        fence(Ordering::SeqCst);
        // SAFETY: as in `write32`, for 8 aligned bytes.
        unsafe { std::ptr::write_volatile(p as *mut u64, v) }
    }

    fn copy_from(&self, map: &HostMap, off: usize, buf: &mut [u8]) {
        let p = checked_ptr(map, off, buf.len(), 1);
        fence(Ordering::SeqCst);
        for (i, b) in buf.iter_mut().enumerate() {
            // SAFETY: `checked_ptr` proved `[off, off + buf.len())` is inside the mapping, so
            // `p + i` is in bounds; volatile byte reads need no alignment.
            *b = unsafe { std::ptr::read_volatile(p.add(i)) };
        }
        fence(Ordering::SeqCst);
    }

    fn copy_to(&self, map: &HostMap, off: usize, data: &[u8]) {
        let p = checked_ptr(map, off, data.len(), 1);
        fence(Ordering::SeqCst);
        for (i, &b) in data.iter().enumerate() {
            // SAFETY: as in `copy_from`; the mapping is writable.
            unsafe { std::ptr::write_volatile(p.add(i), b) };
        }
        fence(Ordering::SeqCst);
    }

    fn memlock_limit(&self) -> io::Result<Option<u64>> {
        let mut r = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: `r` is a valid `rlimit` the call fills in; nothing else is accessed.
        cvt(unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut r) })?;
        Ok((r.rlim_cur != libc::RLIM_INFINITY).then_some(r.rlim_cur))
    }

    fn page_size(&self) -> usize {
        // SAFETY: sysconf has no memory-safety preconditions.
        let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        // It cannot fail for _SC_PAGESIZE; 4096 stands in for the -1 it never returns.
        n.max(4096) as usize
    }
}

/// The address of byte `off` of `map` after checking that `[off, off + len)` lies inside it
/// and that `off` is a multiple of `align` (and so is the address: mappings are page
/// aligned). Panics otherwise: callers check ranges first and report errors; reaching this
/// panic is a bug above this module.
fn checked_ptr(map: &HostMap, off: usize, len: usize, align: usize) -> *mut u8 {
    let size = map.0.len();
    assert!(
        off.checked_add(len).is_some_and(|end| end <= size) && off.is_multiple_of(align),
        "mapping access of {len} bytes at offset {off:#x} is outside {size} bytes or not {align}-aligned"
    );
    // `off <= size`, so this stays inside (or one past) the mapping: `wrapping_add` needs no
    // unsafe and gives the same address.
    map.0.as_mut_ptr().wrapping_add(off)
}

#[cfg(test)]
mod tests {
    //! The parts of [`Host`] that run without VFIO: sysfs/procfs access, anonymous memory,
    //! volatile accesses, limits, and every ioctl's error return (on a file that is not a
    //! VFIO file the kernel answers ENOTTY).
    use super::*;

    fn not_vfio() -> File {
        Host.open(Path::new("/dev/null")).unwrap()
    }

    #[test]
    fn ioctl_numbers_match_linux() {
        // _IO(';', 100 + n): e.g. VFIO_DEVICE_GET_INFO = 0x3b6b, VFIO_IOMMU_MAP_DMA = 0x3b71.
        assert_eq!(uapi::GET_API_VERSION, 0x3b64);
        assert_eq!(uapi::GROUP_GET_DEVICE_FD, 0x3b6a);
        assert_eq!(uapi::DEVICE_GET_INFO, 0x3b6b);
        assert_eq!(uapi::DEVICE_RESET, 0x3b6f);
        assert_eq!(uapi::IOMMU_GET_INFO, 0x3b70);
        assert_eq!(uapi::IOMMU_MAP_DMA, 0x3b71);
        assert_eq!(uapi::IOMMU_UNMAP_DMA, 0x3b72);
    }

    #[test]
    fn every_ioctl_reports_the_kernels_error() {
        let h = Host;
        let fd = not_vfio();
        let enotty = |e: io::Error| assert_eq!(e.raw_os_error(), Some(libc::ENOTTY), "{e}");
        enotty(h.get_api_version(&fd).unwrap_err());
        enotty(h.check_extension(&fd, uapi::TYPE1V2_IOMMU).unwrap_err());
        enotty(h.set_iommu(&fd, uapi::TYPE1V2_IOMMU).unwrap_err());
        enotty(h.iommu_info(&fd).unwrap_err());
        enotty(h.map_dma(&fd, 0x1000, 0x1000, 0x1000).unwrap_err());
        enotty(h.unmap_dma(&fd, 0x1000, 0x1000).unwrap_err());
        enotty(h.group_status(&fd).unwrap_err());
        enotty(h.group_set_container(&fd, &fd).unwrap_err());
        enotty(h.group_device_fd(&fd, "0000:00:00.0").unwrap_err());
        enotty(h.device_info(&fd).unwrap_err());
        enotty(h.region_info(&fd, 0).unwrap_err());
        enotty(h.device_reset(&fd).unwrap_err());
        let e = h.group_device_fd(&fd, "a\0b").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn files_and_sysfs() {
        let h = Host;
        assert!(h.read_link(Path::new("/proc/self/exe")).is_ok());
        assert!(h
            .read_file(Path::new("/proc/self/status"))
            .unwrap()
            .contains("CapEff"));
        assert!(h
            .list_dir(Path::new("/proc/self"))
            .unwrap()
            .iter()
            .any(|n| n == "status"));
        assert!(h.list_dir(Path::new("/nonexistent-rocenic")).is_err());
        let e = h.open(Path::new("/nonexistent-rocenic/vfio")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        // /dev/null reads as empty and accepts writes.
        let fd = not_vfio();
        let mut b = [0u8; 4];
        assert!(
            h.pread(&fd, 0, &mut b).is_err(),
            "read_exact of an empty file fails"
        );
        h.pwrite(&fd, 0, &[1, 2, 3]).unwrap();
        // /dev/null cannot be mapped.
        assert!(h.mmap_device(&fd, 0, 4096).is_err());
    }

    #[test]
    fn anonymous_memory_and_volatile_access() {
        let h = Host;
        let page = h.page_size();
        assert!(page >= 4096 && page.is_power_of_two());
        let m = h.mmap_anon(2 * page, false).unwrap();
        assert_eq!(h.map_len(&m), 2 * page);
        assert_eq!(h.map_addr(&m) % page as u64, 0);
        let mut buf = [0xffu8; 16];
        h.copy_from(&m, 8, &mut buf);
        assert_eq!(buf, [0; 16], "anonymous memory starts zeroed");
        h.copy_to(&m, 3, b"hello, device");
        h.copy_from(&m, 3, &mut buf[..13]);
        assert_eq!(&buf[..13], b"hello, device");
        h.write32(&m, 64, 0xdead_beef);
        assert_eq!(h.read32(&m, 64), 0xdead_beef);
        h.write64(&m, 128, 0x0123_4567_89ab_cdef);
        assert_eq!(h.read64(&m, 128), 0x0123_4567_89ab_cdef);
        assert_eq!(h.read32(&m, 128), 0x89ab_cdef);
        // Hugepages: either there are some (and the mapping works) or the call fails cleanly.
        match h.mmap_anon(2 << 20, true) {
            Ok(m) => assert_eq!(h.map_len(&m), 2 << 20),
            Err(e) => assert!(e.raw_os_error().is_some(), "{e}"),
        }
    }

    #[test]
    #[should_panic(expected = "outside")]
    fn access_past_the_end_panics() {
        let h = Host;
        let m = h.mmap_anon(4096, false).unwrap();
        h.read32(&m, 4096);
    }

    #[test]
    #[should_panic(expected = "aligned")]
    fn misaligned_access_panics() {
        let h = Host;
        let m = h.mmap_anon(4096, false).unwrap();
        h.write64(&m, 4, 0);
    }

    #[test]
    fn memlock_limit_is_read() {
        // Whatever it is here, the call works and a finite limit is a whole number of bytes.
        if let Some(l) = Host.memlock_limit().unwrap() {
            assert!(l < u64::MAX);
        }
    }
}
