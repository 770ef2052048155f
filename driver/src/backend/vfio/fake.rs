//! A fake of the system-call layer for unit tests: sysfs, device nodes, the VFIO ioctls, an
//! IOMMU, host memory and two device models (a BAR of plain registers, and QEMU's edu
//! device with its DMA engine), with failures injected per call.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use rocenic_proto::abi::regs;

use super::container::tests::{info_bytes, ranges_body};
use super::edu;
use super::sys::{uapi, DeviceInfo, RegionInfo, Sys};

/// A call that can be made to fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Op {
    ApiVersion,
    CheckExtension,
    SetIommu,
    IommuInfo,
    MapDma,
    UnmapDma,
    GroupStatus,
    SetContainer,
    DeviceFd,
    DeviceInfo,
    RegionInfo,
    Reset,
    Pread,
    Pwrite,
    MmapDevice,
    MmapAnon,
    Memlock,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FdKind {
    Container,
    Group(u32),
    Device,
    Other,
}

/// A file the fake opened.
#[derive(Debug)]
pub struct FakeFd {
    pub kind: FdKind,
}

/// A mapping the fake made: device memory (a BAR) or anonymous memory.
pub struct FakeMap {
    va: u64,
    len: usize,
    /// Anonymous memory's id in `FakeState::mem`; `None` for a BAR.
    anon: Option<u64>,
    /// Set when dropped (to check that memory is freed, or leaked).
    st: Arc<Mutex<FakeState>>,
}

impl Drop for FakeMap {
    fn drop(&mut self) {
        if let Some(id) = self.anon {
            lock(&self.st).mem.remove(&id);
        }
    }
}

/// How a device's BAR0 behaves.
pub trait Model: Send {
    fn read(&mut self, off: usize, width: usize, host: &mut FakeState) -> u64;
    fn write(&mut self, off: usize, width: usize, v: u64, host: &mut FakeState);
}

/// A BAR of plain read/write registers.
pub struct RegisterBar(pub BTreeMap<usize, u64>);

impl Model for RegisterBar {
    fn read(&mut self, off: usize, width: usize, _: &mut FakeState) -> u64 {
        let v = self.0.get(&off).copied().unwrap_or(0);
        if width == 4 {
            v & 0xffff_ffff
        } else {
            v
        }
    }
    fn write(&mut self, off: usize, _: usize, v: u64, _: &mut FakeState) {
        self.0.insert(off, v);
    }
}

/// QEMU's edu device (docs/specs/edu.rst): ID, liveness and the DMA engine, whose transfers
/// complete after `latency` reads of the command register (never, when `stuck`).
pub struct Edu {
    liveness: u32,
    src: u64,
    dst: u64,
    count: u64,
    cmd: u64,
    reads_left: u32,
    pub latency: u32,
    pub stuck: bool,
    pub id: u32,
    buf: Vec<u8>,
}

impl Edu {
    pub fn new() -> Self {
        Edu {
            liveness: 0,
            src: 0,
            dst: 0,
            count: 0,
            cmd: 0,
            reads_left: 0,
            latency: 2,
            stuck: false,
            id: edu::EDU_ID,
            buf: vec![0; edu::EDU_BUFFER_LEN],
        }
    }

    fn run_dma(&mut self, host: &mut FakeState) {
        let mask = (1u64 << edu::EDU_DMA_BITS) - 1;
        let n = self.count as usize;
        let inside = if self.cmd & 2 == 0 {
            self.dst
        } else {
            self.src
        };
        assert!(
            inside >= edu::EDU_BUFFER
                && inside + self.count < edu::EDU_BUFFER + edu::EDU_BUFFER_LEN as u64,
            "QEMU 7.2's edu stops the VM: DMA range out of bounds"
        );
        if self.cmd & 2 == 0 {
            let at = (self.dst - edu::EDU_BUFFER) as usize;
            // QEMU reads zeros where the IOMMU refuses the access.
            let data = host.dma_read(self.src & mask, n).unwrap_or(vec![0; n]);
            self.buf[at..at + n].copy_from_slice(&data);
        } else {
            let at = (self.src - edu::EDU_BUFFER) as usize;
            let data = self.buf[at..at + n].to_vec();
            host.dma_write(self.dst & mask, &data);
        }
        self.cmd &= !1;
    }
}

impl Model for Edu {
    fn read(&mut self, off: usize, _: usize, host: &mut FakeState) -> u64 {
        match off as u64 {
            edu::reg::ID => u64::from(self.id),
            edu::reg::LIVENESS => u64::from(self.liveness),
            edu::reg::DMA_CMD => {
                if self.cmd & 1 != 0 && !self.stuck {
                    if self.reads_left == 0 {
                        self.run_dma(host);
                    } else {
                        self.reads_left -= 1;
                    }
                }
                self.cmd
            }
            _ => 0,
        }
    }
    fn write(&mut self, off: usize, _: usize, v: u64, _: &mut FakeState) {
        match off as u64 {
            edu::reg::LIVENESS => self.liveness = !(v as u32),
            edu::reg::DMA_SRC => self.src = v,
            edu::reg::DMA_DST => self.dst = v,
            edu::reg::DMA_COUNT => self.count = v,
            edu::reg::DMA_CMD if v & 1 != 0 => {
                self.cmd = v;
                self.reads_left = self.latency;
            }
            _ => {}
        }
    }
}

/// Everything the fake knows; tests change it before and after the code under test runs.
pub struct FakeState {
    pub files: BTreeMap<PathBuf, String>,
    pub links: BTreeMap<PathBuf, PathBuf>,
    pub dirs: BTreeMap<PathBuf, Vec<String>>,
    /// Device nodes that can be opened.
    pub nodes: BTreeSet<PathBuf>,
    /// errno of injected failures by call, and by path for file operations.
    pub fail: BTreeMap<Op, i32>,
    pub fail_path: BTreeMap<PathBuf, i32>,
    pub api_version: i32,
    pub type1v2: i32,
    pub group_flags: u32,
    pub device_bdf: String,
    pub device_flags: u32,
    pub regions: BTreeMap<u32, RegionInfo>,
    pub iommu_info: Vec<u8>,
    pub memlock: Option<u64>,
    pub page: usize,
    /// Free 2 MiB hugepages.
    pub hugepages: usize,
    /// UNMAP_DMA reports half the size (a kernel that did not unmap everything).
    pub unmap_short: bool,
    /// The IOMMU keeps translating unmapped IOVAs (a broken IOMMU the edu check must catch).
    pub stale_iotlb: bool,
    /// Every call, in order.
    pub log: Vec<String>,
    /// iova -> (va, size) of live IOMMU mappings; `stale` keeps removed ones.
    pub iommu: BTreeMap<u64, (u64, u64)>,
    stale: BTreeMap<u64, (u64, u64)>,
    /// IOVAs of DMA accesses the IOMMU refused.
    pub faults: Vec<u64>,
    /// Anonymous memory: id -> (va, bytes).
    pub mem: BTreeMap<u64, (u64, Vec<u8>)>,
    next_id: u64,
    next_va: u64,
    pub config: Vec<u8>,
    pub model: Option<Box<dyn Model>>,
}

fn lock(st: &Arc<Mutex<FakeState>>) -> MutexGuard<'_, FakeState> {
    st.lock().unwrap_or_else(|e| e.into_inner())
}

impl FakeState {
    fn bus_master(&self) -> bool {
        u16::from_le_bytes([self.config[4], self.config[5]]) & 4 != 0
    }

    fn translate(&self, iova: u64, len: usize) -> Option<u64> {
        let hit = |m: &BTreeMap<u64, (u64, u64)>| {
            let (&s, &(va, size)) = m.range(..=iova).next_back()?;
            (iova + len as u64 <= s + size).then_some(va + (iova - s))
        };
        hit(&self.iommu).or_else(|| self.stale_iotlb.then(|| hit(&self.stale)).flatten())
    }

    fn host_bytes(&mut self, va: u64, len: usize) -> Option<&mut [u8]> {
        self.mem.values_mut().find_map(|(base, bytes)| {
            let off = va.checked_sub(*base)? as usize;
            bytes.get_mut(off..off + len)
        })
    }

    /// A device read of host memory through the IOMMU (`None`: refused).
    pub fn dma_read(&mut self, iova: u64, len: usize) -> Option<Vec<u8>> {
        let va = self.translate(iova, len).filter(|_| self.bus_master());
        match va.and_then(|va| self.host_bytes(va, len).map(|b| b.to_vec())) {
            Some(v) => Some(v),
            None => {
                self.faults.push(iova);
                None
            }
        }
    }

    /// A device write of host memory through the IOMMU (dropped when refused).
    pub fn dma_write(&mut self, iova: u64, data: &[u8]) {
        let va = self
            .translate(iova, data.len())
            .filter(|_| self.bus_master());
        match va.and_then(|va| self.host_bytes(va, data.len())) {
            Some(b) => b.copy_from_slice(data),
            None => self.faults.push(iova),
        }
    }

    fn check(&mut self, op: Op) -> io::Result<()> {
        self.log.push(format!("{op:?}"));
        match self.fail.get(&op) {
            Some(&errno) => Err(io::Error::from_raw_os_error(errno)),
            None => Ok(()),
        }
    }

    fn check_path(&self, path: &Path) -> io::Result<()> {
        match self.fail_path.get(path) {
            Some(&errno) => Err(io::Error::from_raw_os_error(errno)),
            None => Ok(()),
        }
    }

    fn model_access<R>(&mut self, f: impl FnOnce(&mut dyn Model, &mut FakeState) -> R) -> R {
        let mut m = self.model.take().expect("the fake device has a BAR model");
        let r = f(&mut *m, self);
        self.model = Some(m);
        r
    }
}

/// The fake system; clones share one state.
#[derive(Clone)]
pub struct FakeSys {
    pub st: Arc<Mutex<FakeState>>,
}

/// The config region's offset in the device file (vfio-pci puts region n at n << 40).
pub const CONFIG_OFFSET: u64 = 7 << 40;

/// The rocenic NIC of the healthy fake system.
pub const NIC: &str = "0000:03:00.0";
/// Its IOMMU group.
pub const NIC_GROUP: u32 = 12;
/// The edu device of the edu fake system.
pub const EDU: &str = "0000:00:03.0";

impl FakeSys {
    /// A host with one healthy device at `bdf` (group `group`, bound to vfio-pci) whose
    /// BAR0 of `bar_size` bytes behaves like `model`. The IOMMU is an Intel one with
    /// 39-bit addresses; the memlock limit is 64 MiB; there are no hugepages.
    pub fn with_device(
        bdf: &str,
        ids: (u16, u16),
        group: u32,
        bar_size: u64,
        model: Box<dyn Model>,
    ) -> Self {
        let dev = PathBuf::from("/sys/bus/pci/devices").join(bdf);
        let gdir = PathBuf::from(format!("/sys/kernel/iommu_groups/{group}/devices"));
        let mut files = BTreeMap::new();
        files.insert(dev.join("vendor"), format!("{:#06x}\n", ids.0));
        files.insert(dev.join("device"), format!("{:#06x}\n", ids.1));
        files.insert(
            PathBuf::from("/proc/self/status"),
            "Name:\ttest\nCapEff:\t0000000000000000\n".into(),
        );
        let mut links = BTreeMap::new();
        links.insert(
            dev.join("driver"),
            PathBuf::from("../../../bus/pci/drivers/vfio-pci"),
        );
        links.insert(
            dev.join("iommu_group"),
            PathBuf::from(format!("../../../kernel/iommu_groups/{group}")),
        );
        let mut dirs = BTreeMap::new();
        dirs.insert(gdir, vec![bdf.to_string()]);
        dirs.insert(PathBuf::from("/sys/bus/pci/devices"), vec![bdf.to_string()]);
        let mut regions = BTreeMap::new();
        regions.insert(
            uapi::PCI_BAR0_REGION_INDEX,
            RegionInfo {
                flags: uapi::REGION_READ | uapi::REGION_WRITE | uapi::REGION_MMAP,
                size: bar_size,
                offset: 0,
            },
        );
        regions.insert(
            uapi::PCI_CONFIG_REGION_INDEX,
            RegionInfo {
                flags: uapi::REGION_READ | uapi::REGION_WRITE,
                size: 256,
                offset: CONFIG_OFFSET,
            },
        );
        let nodes = ["/dev/vfio/vfio".to_string(), format!("/dev/vfio/{group}")]
            .into_iter()
            .map(PathBuf::from)
            .collect();
        let flags = uapi::IOMMU_INFO_PGSIZES | uapi::IOMMU_INFO_CAPS;
        let iommu_info = info_bytes(
            flags,
            0x4020_1000,
            &[(
                24,
                uapi::IOMMU_CAP_IOVA_RANGE,
                0,
                ranges_body(&[(0, 0xfedf_ffff), (0xfef0_0000, (1 << 39) - 1)]),
            )],
        );
        let st = FakeState {
            files,
            links,
            dirs,
            nodes,
            fail: BTreeMap::new(),
            fail_path: BTreeMap::new(),
            api_version: 0,
            type1v2: 1,
            group_flags: uapi::GROUP_FLAGS_VIABLE,
            device_bdf: bdf.to_string(),
            device_flags: uapi::DEVICE_FLAGS_PCI | uapi::DEVICE_FLAGS_RESET,
            regions,
            iommu_info,
            memlock: Some(64 << 20),
            page: 4096,
            hugepages: 0,
            unmap_short: false,
            stale_iotlb: false,
            log: Vec::new(),
            iommu: BTreeMap::new(),
            stale: BTreeMap::new(),
            faults: Vec::new(),
            mem: BTreeMap::new(),
            next_id: 1,
            next_va: 0x7f00_0000_0000,
            config: vec![0; 256],
            model: Some(model),
        };
        FakeSys {
            st: Arc::new(Mutex::new(st)),
        }
    }

    /// A host with a healthy rocenic NIC at [`NIC`].
    pub fn nic() -> Self {
        let mut r = BTreeMap::new();
        r.insert(regs::ID as usize, u64::from(regs::DEVICE_ID));
        r.insert(regs::CLOCK_MHZ as usize, 250);
        FakeSys::with_device(
            NIC,
            (0x10ee, 0x903f),
            NIC_GROUP,
            u64::from(regs::BAR0_SIZE),
            Box::new(RegisterBar(r)),
        )
    }

    /// A host with QEMU's edu device at [`EDU`] (no function reset, as in QEMU).
    pub fn edu(model: Edu) -> Self {
        let f = FakeSys::with_device(
            EDU,
            (edu::EDU_VENDOR, edu::EDU_DEVICE),
            3,
            1 << 20,
            Box::new(model),
        );
        f.state().device_flags = uapi::DEVICE_FLAGS_PCI;
        f
    }

    pub fn state(&self) -> MutexGuard<'_, FakeState> {
        lock(&self.st)
    }

    pub fn fail(&self, op: Op, errno: i32) {
        self.state().fail.insert(op, errno);
    }

    pub fn fail_path(&self, path: &str, errno: i32) {
        self.state().fail_path.insert(PathBuf::from(path), errno);
    }

    /// How many times `op` was called.
    pub fn calls(&self, op: Op) -> usize {
        let name = format!("{op:?}");
        self.state().log.iter().filter(|l| **l == name).count()
    }
}

fn enoent() -> io::Error {
    io::Error::from_raw_os_error(libc::ENOENT)
}

impl Sys for FakeSys {
    type Fd = FakeFd;
    type Map = FakeMap;

    fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        let st = self.state();
        st.check_path(path)?;
        st.links.get(path).cloned().ok_or_else(enoent)
    }

    fn read_file(&self, path: &Path) -> io::Result<String> {
        let st = self.state();
        st.check_path(path)?;
        st.files.get(path).cloned().ok_or_else(enoent)
    }

    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        let st = self.state();
        st.check_path(path)?;
        st.dirs.get(path).cloned().ok_or_else(enoent)
    }

    fn open(&self, path: &Path) -> io::Result<FakeFd> {
        let st = self.state();
        st.check_path(path)?;
        if !st.nodes.contains(path) {
            return Err(enoent());
        }
        let name = path.to_string_lossy();
        let kind = match name.strip_prefix("/dev/vfio/") {
            Some("vfio") => FdKind::Container,
            Some(n) => n.parse().map(FdKind::Group).unwrap_or(FdKind::Other),
            None => FdKind::Other,
        };
        Ok(FakeFd { kind })
    }

    fn get_api_version(&self, c: &FakeFd) -> io::Result<i32> {
        let mut st = self.state();
        st.check(Op::ApiVersion)?;
        assert_eq!(c.kind, FdKind::Container);
        Ok(st.api_version)
    }

    fn check_extension(&self, c: &FakeFd, ext: u32) -> io::Result<i32> {
        let mut st = self.state();
        st.check(Op::CheckExtension)?;
        assert_eq!((&c.kind, ext), (&FdKind::Container, uapi::TYPE1V2_IOMMU));
        Ok(st.type1v2)
    }

    fn set_iommu(&self, c: &FakeFd, t: u32) -> io::Result<()> {
        let mut st = self.state();
        st.check(Op::SetIommu)?;
        assert_eq!((&c.kind, t), (&FdKind::Container, uapi::TYPE1V2_IOMMU));
        Ok(())
    }

    fn iommu_info(&self, _: &FakeFd) -> io::Result<Vec<u8>> {
        let mut st = self.state();
        st.check(Op::IommuInfo)?;
        Ok(st.iommu_info.clone())
    }

    fn map_dma(&self, _: &FakeFd, vaddr: u64, iova: u64, size: u64) -> io::Result<()> {
        let mut st = self.state();
        st.check(Op::MapDma)?;
        let errno = |e| Err(io::Error::from_raw_os_error(e));
        if size == 0 || !(vaddr | iova | size).is_multiple_of(st.page as u64) {
            return errno(libc::EINVAL);
        }
        if st.host_bytes(vaddr, size as usize).is_none() {
            return errno(libc::EFAULT);
        }
        let overlaps = st
            .iommu
            .iter()
            .any(|(&s, &(_, l))| s < iova + size && iova < s + l);
        if overlaps {
            return errno(libc::EEXIST);
        }
        st.iommu.insert(iova, (vaddr, size));
        Ok(())
    }

    fn unmap_dma(&self, _: &FakeFd, iova: u64, size: u64) -> io::Result<u64> {
        let mut st = self.state();
        st.check(Op::UnmapDma)?;
        match st.iommu.get(&iova) {
            Some(&(va, s)) if s == size => {
                st.iommu.remove(&iova);
                st.stale.insert(iova, (va, s));
                Ok(if st.unmap_short { size / 2 } else { size })
            }
            _ => Ok(0),
        }
    }

    fn group_status(&self, g: &FakeFd) -> io::Result<u32> {
        let mut st = self.state();
        st.check(Op::GroupStatus)?;
        assert!(matches!(g.kind, FdKind::Group(_)));
        Ok(st.group_flags)
    }

    fn group_set_container(&self, g: &FakeFd, c: &FakeFd) -> io::Result<()> {
        let mut st = self.state();
        st.check(Op::SetContainer)?;
        assert!(matches!(g.kind, FdKind::Group(_)) && c.kind == FdKind::Container);
        Ok(())
    }

    fn group_device_fd(&self, g: &FakeFd, name: &str) -> io::Result<FakeFd> {
        let mut st = self.state();
        st.check(Op::DeviceFd)?;
        assert!(matches!(g.kind, FdKind::Group(_)));
        if name != st.device_bdf {
            return Err(io::Error::from_raw_os_error(libc::ENODEV));
        }
        Ok(FakeFd {
            kind: FdKind::Device,
        })
    }

    fn device_info(&self, d: &FakeFd) -> io::Result<DeviceInfo> {
        let mut st = self.state();
        st.check(Op::DeviceInfo)?;
        assert_eq!(d.kind, FdKind::Device);
        Ok(DeviceInfo {
            flags: st.device_flags,
            num_regions: 9,
            num_irqs: 5,
        })
    }

    fn region_info(&self, _: &FakeFd, index: u32) -> io::Result<RegionInfo> {
        let mut st = self.state();
        st.check(Op::RegionInfo)?;
        Ok(st.regions.get(&index).copied().unwrap_or_default())
    }

    fn device_reset(&self, _: &FakeFd) -> io::Result<()> {
        let mut st = self.state();
        st.check(Op::Reset)?;
        st.config[4] = 0;
        st.config[5] = 0;
        Ok(())
    }

    fn pread(&self, _: &FakeFd, off: u64, buf: &mut [u8]) -> io::Result<()> {
        let mut st = self.state();
        st.check(Op::Pread)?;
        let at = (off - CONFIG_OFFSET) as usize;
        buf.copy_from_slice(&st.config[at..at + buf.len()]);
        Ok(())
    }

    fn pwrite(&self, _: &FakeFd, off: u64, data: &[u8]) -> io::Result<()> {
        let mut st = self.state();
        st.check(Op::Pwrite)?;
        let at = (off - CONFIG_OFFSET) as usize;
        st.config[at..at + data.len()].copy_from_slice(data);
        Ok(())
    }

    fn mmap_device(&self, _: &FakeFd, offset: u64, len: usize) -> io::Result<FakeMap> {
        let mut st = self.state();
        st.check(Op::MmapDevice)?;
        assert_eq!(offset, 0, "only BAR0 is mapped");
        Ok(FakeMap {
            va: 0x7e00_0000_0000,
            len,
            anon: None,
            st: self.st.clone(),
        })
    }

    fn mmap_anon(&self, len: usize, huge: bool) -> io::Result<FakeMap> {
        let mut st = self.state();
        st.check(Op::MmapAnon)?;
        let align = if huge {
            let pages = len / (2 << 20);
            if st.hugepages < pages {
                return Err(io::Error::from_raw_os_error(libc::ENOMEM));
            }
            st.hugepages -= pages;
            2 << 20
        } else {
            st.page as u64
        };
        let va = st.next_va.div_ceil(align) * align;
        st.next_va = va + len as u64 + 0x10_0000; // a gap between mappings
        let id = st.next_id;
        st.next_id += 1;
        st.mem.insert(id, (va, vec![0; len]));
        Ok(FakeMap {
            va,
            len,
            anon: Some(id),
            st: self.st.clone(),
        })
    }

    fn map_addr(&self, m: &FakeMap) -> u64 {
        m.va
    }

    fn map_len(&self, m: &FakeMap) -> usize {
        m.len
    }

    fn read32(&self, m: &FakeMap, off: usize) -> u32 {
        assert!(
            off + 4 <= m.len && off.is_multiple_of(4),
            "outside or misaligned"
        );
        self.state().model_access(|d, st| d.read(off, 4, st)) as u32
    }

    fn write32(&self, m: &FakeMap, off: usize, v: u32) {
        assert!(
            off + 4 <= m.len && off.is_multiple_of(4),
            "outside or misaligned"
        );
        self.state()
            .model_access(|d, st| d.write(off, 4, u64::from(v), st))
    }

    fn read64(&self, m: &FakeMap, off: usize) -> u64 {
        assert!(
            off + 8 <= m.len && off.is_multiple_of(8),
            "outside or misaligned"
        );
        self.state().model_access(|d, st| d.read(off, 8, st))
    }

    fn write64(&self, m: &FakeMap, off: usize, v: u64) {
        assert!(
            off + 8 <= m.len && off.is_multiple_of(8),
            "outside or misaligned"
        );
        self.state().model_access(|d, st| d.write(off, 8, v, st))
    }

    fn copy_from(&self, m: &FakeMap, off: usize, buf: &mut [u8]) {
        let st = self.state();
        let (_, bytes) = &st.mem[&m.anon.expect("DMA memory")];
        buf.copy_from_slice(&bytes[off..off + buf.len()]);
    }

    fn copy_to(&self, m: &FakeMap, off: usize, data: &[u8]) {
        let mut st = self.state();
        let (_, bytes) = st.mem.get_mut(&m.anon.expect("DMA memory")).unwrap();
        bytes[off..off + data.len()].copy_from_slice(data);
    }

    fn memlock_limit(&self) -> io::Result<Option<u64>> {
        let mut st = self.state();
        st.check(Op::Memlock)?;
        Ok(st.memlock)
    }

    fn page_size(&self) -> usize {
        self.state().page
    }
}
