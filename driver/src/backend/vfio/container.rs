//! The VFIO container (`/dev/vfio/vfio`): one IOMMU context, its usable IOVA ranges, and
//! the DMA buffers mapped into it.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use super::dma::{DmaBuffer, DmaOptions, HUGE_PAGE};
use super::error::{Result, VfioError};
use super::iova::{ranges_text, IovaRange, IovaSpace};
use super::sys::{uapi, Host, Sys};

/// The container device node.
pub const CONTAINER_PATH: &str = "/dev/vfio/vfio";
/// Where the process's capabilities are read from (CAP_IPC_LOCK lifts the memlock limit).
const PROC_SELF_STATUS: &str = "/proc/self/status";
/// `CAP_IPC_LOCK`'s bit in the capability sets.
const CAP_IPC_LOCK: u32 = 14;

/// What `VFIO_IOMMU_GET_INFO` says, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IommuInfo {
    /// Supported IOMMU page sizes as a bit mask (`None`: not reported).
    pub pgsizes: Option<u64>,
    /// Usable IOVA ranges (`None`: not reported, which means no restriction).
    pub ranges: Option<Vec<IovaRange>>,
}

fn rd_u16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?))
}
fn rd_u32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
fn rd_u64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// Parses `struct vfio_iommu_type1_info` and its capability chain (every offset and length
/// checked; each capability must lie after the one before, so a chain cannot loop).
pub fn parse_iommu_info(b: &[u8]) -> Result<IommuInfo> {
    let bad = |m: String| VfioError::BadIommuInfo(m);
    if b.len() < uapi::IOMMU_INFO_LEN {
        return Err(bad(format!(
            "{} bytes, shorter than the {}-byte header",
            b.len(),
            uapi::IOMMU_INFO_LEN
        )));
    }
    let flags = rd_u32(b, 4).unwrap_or(0);
    let pgsizes = (flags & uapi::IOMMU_INFO_PGSIZES != 0).then(|| rd_u64(b, 8).unwrap_or(0));
    let mut ranges = None;
    let mut at = if flags & uapi::IOMMU_INFO_CAPS != 0 {
        rd_u32(b, 16).unwrap_or(0) as usize
    } else {
        0
    };
    let mut prev = 0;
    while at != 0 {
        if at < uapi::IOMMU_INFO_LEN.max(prev + 8) {
            return Err(bad(format!(
                "capability at offset {at} overlaps what precedes it"
            )));
        }
        let (Some(id), Some(next)) = (rd_u16(b, at), rd_u32(b, at + 4)) else {
            return Err(bad(format!(
                "capability header at offset {at} runs past the {} bytes",
                b.len()
            )));
        };
        if id == uapi::IOMMU_CAP_IOVA_RANGE {
            let n = rd_u32(b, at + 8)
                .ok_or_else(|| bad(format!("IOVA range capability at {at} is truncated")))?;
            let mut v = Vec::new();
            for i in 0..n as usize {
                let base = at + 16 + 16 * i;
                match (rd_u64(b, base), rd_u64(b, base + 8)) {
                    (Some(start), Some(end)) => v.push(IovaRange { start, end }),
                    _ => {
                        return Err(bad(format!(
                            "IOVA range {i} of {n} runs past the {} bytes",
                            b.len()
                        )))
                    }
                }
            }
            ranges = Some(v);
        }
        prev = at;
        at = next as usize;
    }
    Ok(IommuInfo { pgsizes, ranges })
}

/// Whether `/proc/self/status` text grants CAP_IPC_LOCK (effective set).
fn has_ipc_lock(status: &str) -> bool {
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .is_some_and(|caps| caps & (1 << CAP_IPC_LOCK) != 0)
}

/// Maps an `open` failure of a VFIO node to the error that says what to do.
pub(crate) fn open_error(path: &Path, e: io::Error, group: Option<u32>) -> VfioError {
    let path = path.to_path_buf();
    match (e.kind(), e.raw_os_error(), group) {
        (io::ErrorKind::NotFound, _, _) => VfioError::NoVfio { path },
        (io::ErrorKind::PermissionDenied, _, _) => VfioError::PermissionDenied { path },
        (_, Some(libc::EBUSY), Some(group)) => VfioError::GroupBusy { group, path },
        _ => VfioError::sys("open", path.display().to_string(), e),
    }
}

struct IommuState {
    /// The smallest IOMMU page the mappings must be aligned to.
    min_page: u64,
    pgsizes: u64,
    space: IovaSpace,
}

struct State {
    iommu: Option<IommuState>,
    /// Bytes mapped for DMA (and so locked) through this container.
    locked: u64,
}

struct Inner<S: Sys> {
    fd: S::Fd,
    sys: Arc<S>,
    state: Mutex<State>,
}

/// An open VFIO container. Cloning it gives another handle to the same container; it is
/// closed (and every mapping left in it dropped by the kernel) when the last handle, group
/// and DMA buffer using it are gone.
pub struct Container<S: Sys = Host> {
    inner: Arc<Inner<S>>,
}

impl<S: Sys> Clone for Container<S> {
    fn clone(&self) -> Self {
        Container {
            inner: self.inner.clone(),
        }
    }
}

impl<S: Sys> Container<S> {
    /// Opens `/dev/vfio/vfio` and checks the API version and the type1v2 IOMMU.
    pub fn open(sys: Arc<S>) -> Result<Self> {
        let path = PathBuf::from(CONTAINER_PATH);
        let fd = sys.open(&path).map_err(|e| open_error(&path, e, None))?;
        let version = sys
            .get_api_version(&fd)
            .map_err(|e| VfioError::sys("VFIO_GET_API_VERSION", CONTAINER_PATH, e))?;
        if version != uapi::API_VERSION {
            return Err(VfioError::ApiVersion {
                found: version,
                expected: uapi::API_VERSION,
            });
        }
        let ok = sys
            .check_extension(&fd, uapi::TYPE1V2_IOMMU)
            .map_err(|e| VfioError::sys("VFIO_CHECK_EXTENSION", CONTAINER_PATH, e))?;
        if ok <= 0 {
            return Err(VfioError::NoType1v2);
        }
        Ok(Container {
            inner: Arc::new(Inner {
                fd,
                sys,
                state: Mutex::new(State {
                    iommu: None,
                    locked: 0,
                }),
            }),
        })
    }

    pub(crate) fn sys(&self) -> &Arc<S> {
        &self.inner.sys
    }

    pub(crate) fn fd(&self) -> &S::Fd {
        &self.inner.fd
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while the lock was held leaves consistent state (every update is one
        // assignment after the system call), so a poisoned lock is still usable.
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Selects the type1v2 IOMMU (once: after the first group joined) and reads its page
    /// sizes and usable IOVA ranges.
    pub(crate) fn setup_iommu(&self) -> Result<()> {
        let mut st = self.state();
        if st.iommu.is_some() {
            return Ok(());
        }
        let sys = &self.inner.sys;
        sys.set_iommu(&self.inner.fd, uapi::TYPE1V2_IOMMU)
            .map_err(|e| match e.raw_os_error() {
                // vfio_iommu_type1 refuses an IOMMU without interrupt remapping with EPERM.
                Some(libc::EPERM) => VfioError::NoInterruptRemapping,
                _ => VfioError::sys("VFIO_SET_IOMMU(type1v2)", CONTAINER_PATH, e),
            })?;
        let bytes = sys
            .iommu_info(&self.inner.fd)
            .map_err(|e| VfioError::sys("VFIO_IOMMU_GET_INFO", CONTAINER_PATH, e))?;
        let info = parse_iommu_info(&bytes)?;
        let host_page = sys.page_size() as u64;
        let pgsizes = info.pgsizes.filter(|&p| p != 0).unwrap_or(host_page);
        let min_page = (1u64 << pgsizes.trailing_zeros()).max(host_page);
        let ranges = info.ranges.unwrap_or_else(|| {
            vec![IovaRange {
                start: 0,
                end: u64::MAX,
            }]
        });
        st.iommu = Some(IommuState {
            min_page,
            pgsizes,
            space: IovaSpace::new(ranges),
        });
        Ok(())
    }

    /// The usable IOVA ranges (empty before a group has joined).
    pub fn iova_ranges(&self) -> Vec<IovaRange> {
        self.state()
            .iommu
            .as_ref()
            .map(|i| i.space.ranges().to_vec())
            .unwrap_or_default()
    }

    /// The IOMMU page sizes as a bit mask (0 before a group has joined).
    pub fn iova_pgsizes(&self) -> u64 {
        self.state().iommu.as_ref().map_or(0, |i| i.pgsizes)
    }

    /// Bytes currently mapped for DMA through this container.
    pub fn locked_bytes(&self) -> u64 {
        self.state().locked
    }

    /// Checks that locking `needed` more bytes stays under RLIMIT_MEMLOCK (unless the
    /// process holds CAP_IPC_LOCK, which lifts it).
    fn check_memlock(&self, needed: u64, locked: u64) -> Result<()> {
        let sys = &self.inner.sys;
        let privileged = sys
            .read_file(Path::new(PROC_SELF_STATUS))
            .is_ok_and(|s| has_ipc_lock(&s));
        if privileged {
            return Ok(());
        }
        let limit = sys
            .memlock_limit()
            .map_err(|e| VfioError::sys("getrlimit(RLIMIT_MEMLOCK)", "this process", e))?;
        match limit {
            Some(limit) if locked.saturating_add(needed) > limit => Err(VfioError::MemlockLimit {
                needed,
                pinned: locked,
                limit: Some(limit),
            }),
            _ => Ok(()),
        }
    }

    /// Allocates at least `len` bytes of zeroed memory and maps it for device reads and
    /// writes at an IOVA chosen as `iova.rs` describes. See [`DmaOptions`].
    pub fn alloc_dma(&self, len: usize, opts: &DmaOptions) -> Result<DmaBuffer<S>> {
        let mask = opts.mask;
        if mask != u64::MAX && !(mask.wrapping_add(1)).is_power_of_two() {
            return Err(VfioError::BadDmaMask(mask));
        }
        let mut guard = self.state();
        let st = &mut *guard; // (so `iommu` and `locked` can be borrowed apart)
        let Some(iommu) = st.iommu.as_mut() else {
            return Err(VfioError::sys(
                "VFIO_IOMMU_MAP_DMA",
                CONTAINER_PATH,
                io::Error::other("no group has joined the container yet"),
            ));
        };
        let (min_page, pgsizes) = (iommu.min_page, iommu.pgsizes);
        let sys = &self.inner.sys;
        let len = len.max(1) as u64;
        let round = |n: u64, to: u64| n.div_ceil(to) * to;
        let huge_map = if opts.hugepages && len > HUGE_PAGE / 2 {
            // No hugepages reserved (or none left): fall back to small pages.
            sys.mmap_anon(round(len, HUGE_PAGE) as usize, true).ok()
        } else {
            None
        };
        let huge = huge_map.is_some();
        let map = match huge_map {
            Some(m) => m,
            None => {
                let n = round(len, min_page);
                sys.mmap_anon(n as usize, false).map_err(|e| {
                    VfioError::sys("mmap", format!("{n} bytes of anonymous memory"), e)
                })?
            }
        };
        let size = sys.map_len(&map) as u64;
        let va = sys.map_addr(&map);
        let align = if huge && pgsizes & HUGE_PAGE != 0 {
            HUGE_PAGE
        } else {
            min_page
        };

        let locked = st.locked;
        self.check_memlock(size, locked)?;
        let iova =
            iommu
                .space
                .choose(va, size, align, mask)
                .ok_or_else(|| VfioError::IovaExhausted {
                    len: size,
                    mask,
                    ranges: ranges_text(iommu.space.ranges()),
                })?;
        sys.map_dma(&self.inner.fd, va, iova, size).map_err(|e| {
            if e.raw_os_error() == Some(libc::ENOMEM) {
                VfioError::MemlockLimit {
                    needed: size,
                    pinned: locked,
                    limit: None,
                }
            } else {
                VfioError::sys(
                    "VFIO_IOMMU_MAP_DMA",
                    format!("{size:#x} bytes at VA {va:#x} to IOVA {iova:#x}"),
                    e,
                )
            }
        })?;
        iommu.space.reserve(iova, size);
        st.locked += size;
        drop(guard);
        Ok(DmaBuffer::new(self.clone(), map, va, iova, size, huge))
    }

    /// Removes the mapping of `[iova, iova + size)` made by [`Container::alloc_dma`].
    pub(crate) fn unmap(&self, iova: u64, size: u64) -> Result<()> {
        let mut st = self.state();
        let what = || format!("{size:#x} bytes at IOVA {iova:#x}");
        let n = self
            .inner
            .sys
            .unmap_dma(&self.inner.fd, iova, size)
            .map_err(|e| VfioError::sys("VFIO_IOMMU_UNMAP_DMA", what(), e))?;
        if n != size {
            return Err(VfioError::sys(
                "VFIO_IOMMU_UNMAP_DMA",
                what(),
                io::Error::other(format!("the kernel unmapped {n:#x} bytes")),
            ));
        }
        if let Some(i) = st.iommu.as_mut() {
            i.space.release(iova);
        }
        st.locked -= size;
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Builds IOMMU info bytes: header, then capabilities at the given offsets.
    pub(crate) fn info_bytes(
        flags: u32,
        pgsizes: u64,
        caps: &[(usize, u16, u32, Vec<u8>)],
    ) -> Vec<u8> {
        let mut b = vec![0u8; uapi::IOMMU_INFO_LEN];
        b[4..8].copy_from_slice(&flags.to_ne_bytes());
        b[8..16].copy_from_slice(&pgsizes.to_ne_bytes());
        if let Some((first, ..)) = caps.first() {
            b[16..20].copy_from_slice(&(*first as u32).to_ne_bytes());
        }
        for (at, id, next, body) in caps {
            if b.len() < at + 8 + body.len() {
                b.resize(at + 8 + body.len(), 0);
            }
            b[*at..at + 2].copy_from_slice(&id.to_ne_bytes());
            b[at + 2..at + 4].copy_from_slice(&1u16.to_ne_bytes());
            b[at + 4..at + 8].copy_from_slice(&next.to_ne_bytes());
            b[at + 8..at + 8 + body.len()].copy_from_slice(body);
        }
        let n = b.len() as u32;
        b[0..4].copy_from_slice(&n.to_ne_bytes());
        b
    }

    pub(crate) fn ranges_body(r: &[(u64, u64)]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&(r.len() as u32).to_ne_bytes());
        v.extend_from_slice(&0u32.to_ne_bytes());
        for (s, e) in r {
            v.extend_from_slice(&s.to_ne_bytes());
            v.extend_from_slice(&e.to_ne_bytes());
        }
        v
    }

    const BOTH: u32 = uapi::IOMMU_INFO_PGSIZES | uapi::IOMMU_INFO_CAPS;

    #[test]
    fn parses_ranges_after_other_capabilities() {
        // A migration-like capability (id 2) first, then the IOVA ranges.
        let b = info_bytes(
            BOTH,
            0x4020_1000,
            &[
                (24, 2, 40, vec![0; 8]),
                (
                    40,
                    1,
                    0,
                    ranges_body(&[(0, 0xfedf_ffff), (0xfef0_0000, (1 << 39) - 1)]),
                ),
            ],
        );
        let i = parse_iommu_info(&b).unwrap();
        assert_eq!(i.pgsizes, Some(0x4020_1000));
        let r = i.ranges.unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(
            r[1],
            IovaRange {
                start: 0xfef0_0000,
                end: (1 << 39) - 1
            }
        );
    }

    #[test]
    fn no_capabilities_and_no_page_sizes() {
        let i = parse_iommu_info(&info_bytes(0, 0, &[])).unwrap();
        assert_eq!(
            i,
            IommuInfo {
                pgsizes: None,
                ranges: None
            }
        );
        // CAPS set but an offset of 0: an empty chain (the kernel does this when our buffer
        // was too small for the capabilities).
        let i = parse_iommu_info(&info_bytes(uapi::IOMMU_INFO_CAPS, 0, &[])).unwrap();
        assert_eq!(i.ranges, None);
    }

    #[test]
    fn malformed_chains_are_refused() {
        let short = parse_iommu_info(&[0u8; 8]).unwrap_err();
        assert!(short.to_string().contains("shorter"), "{short}");
        // Points into the header.
        let mut b = info_bytes(BOTH, 0, &[(24, 1, 0, ranges_body(&[]))]);
        b[16..20].copy_from_slice(&8u32.to_ne_bytes());
        assert!(parse_iommu_info(&b)
            .unwrap_err()
            .to_string()
            .contains("overlaps"));
        // Loops back onto itself.
        let b = info_bytes(BOTH, 0, &[(24, 3, 24, vec![0; 8])]);
        assert!(parse_iommu_info(&b)
            .unwrap_err()
            .to_string()
            .contains("overlaps"));
        // Header past the end.
        let b = info_bytes(BOTH, 0, &[(24, 3, 4096, vec![])]);
        assert!(parse_iommu_info(&b)
            .unwrap_err()
            .to_string()
            .contains("runs past"));
        // Range count larger than the bytes.
        let mut body = ranges_body(&[(0, 0xffff)]);
        body[0..4].copy_from_slice(&2u32.to_ne_bytes());
        let b = info_bytes(BOTH, 0, &[(24, 1, 0, body)]);
        assert!(parse_iommu_info(&b)
            .unwrap_err()
            .to_string()
            .contains("range 1 of 2"));
        // Range capability without its count.
        let mut b = info_bytes(BOTH, 0, &[(24, 1, 0, vec![])]);
        b.truncate(32);
        assert!(parse_iommu_info(&b)
            .unwrap_err()
            .to_string()
            .contains("truncated"));
    }

    #[test]
    fn capability_text() {
        assert!(has_ipc_lock("Name:\tx\nCapEff:\t000001ffffffffff\n"));
        assert!(!has_ipc_lock("CapEff:\t0000000000000000\n"));
        assert!(!has_ipc_lock("CapEff:\tzz\n"));
        assert!(!has_ipc_lock("nothing"));
    }

    #[test]
    fn open_errors_say_what_to_do() {
        let p = Path::new("/dev/vfio/7");
        let e = |errno| io::Error::from_raw_os_error(errno);
        assert!(matches!(
            open_error(p, e(libc::ENOENT), Some(7)),
            VfioError::NoVfio { .. }
        ));
        assert!(matches!(
            open_error(p, e(libc::EACCES), Some(7)),
            VfioError::PermissionDenied { .. }
        ));
        assert!(matches!(
            open_error(p, e(libc::EPERM), Some(7)),
            VfioError::PermissionDenied { .. }
        ));
        assert!(matches!(
            open_error(p, e(libc::EBUSY), Some(7)),
            VfioError::GroupBusy { group: 7, .. }
        ));
        assert!(matches!(
            open_error(p, e(libc::EBUSY), None),
            VfioError::Sys { .. }
        ));
    }
}
