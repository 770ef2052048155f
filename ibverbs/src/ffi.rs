//! The exported `ibv_*` functions. Each is bound to the version node rdma-core gives it
//! (`.symver NAME, NAME@@IBVERBS_x.y`; the nodes are defined in `libibverbs.map`).
//!
//! Pointers come from the application, which keeps ibverbs' contract: objects passed in
//! are ones this library returned and has not destroyed, output pointers are writable,
//! `sg_list`s hold `num_sge` entries, and the memory of an SGE or of `ibv_reg_mr` is the
//! application's for the lengths given. Every `unsafe` block relies on that and on
//! nothing else; an unknown context yields `EINVAL`, never a crash.
//!
//! Verbs that are not served return what rdma-core returns for a provider without them:
//! `EOPNOTSUPP` (the value, or `NULL` with `errno`).

use core::ffi::{c_char, c_int, c_void};
use std::collections::BTreeMap;
use std::mem::ManuallyDrop;
use std::ptr::{self, null_mut};
use std::sync::{Mutex, OnceLock};

use rocenic_driver::verbs::{
    qp_attr, send_flags, AhAttr, AtomicWr, Mtu, QpAttr, QpCap, QpInitAttr, QpState, RdmaWr, RecvWr,
    SendWr, Sge, Wc, WrOpcode,
};

use crate::abi::*;
use crate::config::Config;
use crate::state::{errno_of, CqRec, Device, MrRec, QpRec};

/// The name of the one device the library lists.
pub const DEVICE_NAME: &str = "rocenic0";

/// Exports `fn` bound to version node `$ver`.
macro_rules! verb {
    ($ver:literal; $(#[$m:meta])* fn $name:ident($($args:tt)*) $(-> $ret:ty)? $body:block) => {
        $(#[$m])*
        #[no_mangle]
        pub unsafe extern "C" fn $name($($args)*) $(-> $ret)? $body
        #[cfg(not(test))]
        core::arch::global_asm!(concat!(
            ".symver ", stringify!($name), ", ", stringify!($name), "@@", $ver
        ));
    };
}

// ---------------------------------------------------------------------------------------
// Process state.

/// The open contexts, by the address of their `ibv_context`.
struct Global {
    devices: BTreeMap<usize, Device>,
}

/// The state lives behind one lock; every verb holds it for its whole call.
struct Shared(Global);

// SAFETY: a `Device` holds `Rc`s (the world shared by the driver's backend and the
// library) that never leave it; they are only touched with the lock held, by one thread
// at a time, so moving the whole state between threads is sound.
unsafe impl Send for Shared {}

static STATE: Mutex<Shared> = Mutex::new(Shared(Global {
    devices: BTreeMap::new(),
}));

fn lock() -> std::sync::MutexGuard<'static, Shared> {
    STATE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs `f` on the device of context `ctx`; `EINVAL` for a context we did not open.
fn with_dev<R>(
    ctx: *mut ibv_context,
    f: impl FnOnce(&mut Device) -> Result<R, i32>,
) -> Result<R, i32> {
    let mut g = lock();
    match g.0.devices.get_mut(&(ctx as usize)) {
        Some(d) => f(d),
        None => Err(libc::EINVAL),
    }
}

fn set_errno(e: i32) {
    // SAFETY: __errno_location returns this thread's errno.
    unsafe { *libc::__errno_location() = e };
}

/// A pointer result: the value, or `NULL` with `errno` set.
fn ptr_or_errno<T>(r: Result<*mut T, i32>) -> *mut T {
    r.unwrap_or_else(|e| {
        set_errno(e);
        null_mut()
    })
}

/// An int result as rdma-core gives it: 0, or the errno value.
fn rc(r: Result<(), i32>) -> c_int {
    match r {
        Ok(()) => 0,
        Err(e) => e,
    }
}

fn leak<T>(v: T) -> *mut T {
    Box::into_raw(Box::new(v))
}

/// Frees an object from [`leak`].
///
/// # Safety
/// `p` came from [`leak`] and is not used again.
unsafe fn free<T>(p: *mut T) {
    drop(Box::from_raw(p));
}

// ---------------------------------------------------------------------------------------
// Devices.

fn device() -> *mut ibv_device {
    static DEVICE: OnceLock<usize> = OnceLock::new();
    *DEVICE.get_or_init(|| {
        let mut d = ibv_device {
            _ops: ibv_device_ops {
                _dummy1: None,
                _dummy2: None,
            },
            node_type: IBV_NODE_CA,
            transport_type: IBV_TRANSPORT_IB,
            name: [0; SYSFS_NAME_MAX],
            dev_name: [0; SYSFS_NAME_MAX],
            dev_path: [0; SYSFS_PATH_MAX],
            ibdev_path: [0; SYSFS_PATH_MAX],
        };
        let put = |dst: &mut [c_char], s: &str| {
            for (d, b) in dst.iter_mut().zip(s.bytes()) {
                *d = b as c_char;
            }
        };
        put(&mut d.name, DEVICE_NAME);
        put(&mut d.dev_name, "uverbs-rocenic0");
        put(&mut d.dev_path, "/dev/null");
        put(&mut d.ibdev_path, "/dev/null");
        leak(d) as usize
    }) as *mut ibv_device
}

/// The EUI-64 of `mac`, as a GUID's bytes (network order).
fn eui64(mac: [u8; 6]) -> [u8; 8] {
    [
        mac[0] ^ 2,
        mac[1],
        mac[2],
        0xff,
        0xfe,
        mac[3],
        mac[4],
        mac[5],
    ]
}

type DeviceList = [*mut ibv_device; 2];

verb! { "IBVERBS_1.1";
    /// Lists `rocenic0`.
    fn ibv_get_device_list(num_devices: *mut c_int) -> *mut *mut ibv_device {
        if !num_devices.is_null() {
            *num_devices = 1;
        }
        leak::<DeviceList>([device(), null_mut()]) as *mut *mut ibv_device
    }
}

verb! { "IBVERBS_1.1";
    fn ibv_free_device_list(list: *mut *mut ibv_device) {
        if !list.is_null() {
            free(list as *mut DeviceList);
        }
    }
}

verb! { "IBVERBS_1.1";
    fn ibv_get_device_name(device: *mut ibv_device) -> *const c_char {
        if device.is_null() {
            set_errno(libc::EINVAL);
            return ptr::null();
        }
        (*device).name.as_ptr()
    }
}

verb! { "IBVERBS_1.9";
    fn ibv_get_device_index(device: *mut ibv_device) -> c_int {
        if device == crate::ffi::device() { 0 } else { -1 }
    }
}

verb! { "IBVERBS_1.1";
    /// The node GUID: the EUI-64 of `ROCENIC_MAC`.
    fn ibv_get_device_guid(_device: *mut ibv_device) -> u64 {
        let mac = Config::from_env().map(|c| c.mac).unwrap_or([2, 0, 0, 0, 0, 1]);
        u64::from_ne_bytes(eui64(mac))
    }
}

verb! { "IBVERBS_1.1";
    /// Opens `rocenic0` as `ROCENIC_*` configure it. A bad configuration is reported on
    /// standard error and fails with `EINVAL`.
    fn ibv_open_device(device: *mut ibv_device) -> *mut ibv_context {
        ptr_or_errno(open_device(device))
    }
}

fn open_device(device: *mut ibv_device) -> Result<*mut ibv_context, i32> {
    if device != crate::ffi::device() {
        return Err(libc::ENODEV);
    }
    let cfg = Config::from_env().map_err(|e| {
        eprintln!("rocenic: {e}");
        libc::EINVAL
    })?;
    let dev = Device::open(cfg).map_err(|(errno, msg)| {
        eprintln!("rocenic: {DEVICE_NAME}: {msg}");
        errno
    })?;
    let ctx = leak(ibv_context {
        device,
        ops: ops(),
        cmd_fd: -1,
        async_fd: -1,
        num_comp_vectors: 1,
        // SAFETY: all-zero is PTHREAD_MUTEX_INITIALIZER on glibc.
        mutex: unsafe { std::mem::zeroed() },
        abi_compat: null_mut(),
    });
    lock().0.devices.insert(ctx as usize, dev);
    Ok(ctx)
}

fn ops() -> ibv_context_ops {
    ibv_context_ops {
        _compat_query_device: None,
        _compat_query_port: None,
        _compat_alloc_pd: None,
        _compat_dealloc_pd: None,
        _compat_reg_mr: None,
        _compat_rereg_mr: None,
        _compat_dereg_mr: None,
        alloc_mw: None,
        bind_mw: None,
        dealloc_mw: None,
        _compat_create_cq: None,
        poll_cq: Some(poll_cq),
        req_notify_cq: Some(req_notify_cq),
        _compat_cq_event: None,
        _compat_resize_cq: None,
        _compat_destroy_cq: None,
        _compat_create_srq: None,
        _compat_modify_srq: None,
        _compat_query_srq: None,
        _compat_destroy_srq: None,
        post_srq_recv: None,
        _compat_create_qp: None,
        _compat_query_qp: None,
        _compat_modify_qp: None,
        _compat_destroy_qp: None,
        post_send: Some(post_send),
        post_recv: Some(post_recv),
        _compat_create_ah: None,
        _compat_destroy_ah: None,
        _compat_attach_mcast: None,
        _compat_detach_mcast: None,
        _compat_async_event: None,
    }
}

verb! { "IBVERBS_1.1";
    /// Closes the context: what the application left (QPs, MRs, CQs, PDs) is released,
    /// and its memory given back untouched.
    fn ibv_close_device(context: *mut ibv_context) -> c_int {
        let Some(mut dev) = lock().0.devices.remove(&(context as usize)) else {
            return libc::EINVAL;
        };
        for (k, q) in std::mem::take(&mut dev.qps) {
            let _ = dev.ctx.destroy_qp(q.qp);
            free(k as *mut ibv_qp);
        }
        for (k, m) in std::mem::take(&mut dev.mrs) {
            let _ = dev.ctx.dereg_mr(&m.mr);
            give_back(&mut dev, &m);
            free(k as *mut ibv_mr);
        }
        let _ = dev.ctx.close();
        free(context);
        0
    }
}

verb! { "IBVERBS_1.1";
    fn ibv_query_device(context: *mut ibv_context, attr: *mut ibv_device_attr) -> c_int {
        rc(with_dev(context, |d| {
            let a = d.ctx.device_attr();
            let mut out: ibv_device_attr = std::mem::zeroed();
            let fw = format!("rocenic abi {}.{}", a.abi_major, a.abi_minor);
            for (o, b) in out.fw_ver.iter_mut().zip(fw.bytes().take(63)) {
                *o = b as c_char;
            }
            out.node_guid = u64::from_ne_bytes(eui64(d.cfg.mac));
            out.sys_image_guid = out.node_guid;
            out.max_mr_size = u64::MAX;
            out.page_size_cap = !0xfff;
            out.max_qp = a.max_qp as c_int;
            out.max_qp_wr = a.max_qp_wr as c_int;
            out.max_sge = a.max_send_sge.min(a.max_recv_sge) as c_int;
            out.max_sge_rd = a.max_send_sge as c_int;
            out.max_cq = a.max_cq as c_int;
            out.max_cqe = a.max_cqe as c_int;
            out.max_mr = a.max_mr as c_int;
            out.max_pd = a.max_pd as c_int;
            out.max_qp_rd_atom = a.max_qp_rd_atom as c_int;
            out.max_res_rd_atom = (a.max_qp_rd_atom * a.max_qp) as c_int;
            out.max_qp_init_rd_atom = a.max_qp_init_rd_atom as c_int;
            out.atomic_cap = IBV_ATOMIC_HCA;
            out.max_pkeys = 1;
            out.local_ca_ack_delay = 15;
            out.phys_port_cnt = 1;
            *attr = out;
            Ok(())
        }))
    }
}

verb! { "IBVERBS_1.1";
    /// Port 1: Ethernet, 4096-byte MTU, active when a wire is configured.
    fn ibv_query_port(context: *mut ibv_context, port_num: u8, attr: *mut ibv_port_attr) -> c_int {
        rc(with_dev(context, |d| {
            if port_num != 1 {
                return Err(libc::EINVAL);
            }
            let up = d.wired();
            *attr = ibv_port_attr {
                state: if up { IBV_PORT_ACTIVE } else { IBV_PORT_DOWN },
                max_mtu: IBV_MTU_4096,
                active_mtu: IBV_MTU_4096,
                gid_tbl_len: 2,
                max_msg_sz: 1 << 31,
                pkey_tbl_len: 1,
                active_width: 1,
                active_speed: 1,
                phys_state: if up { 5 } else { 3 },
                link_layer: IBV_LINK_LAYER_ETHERNET,
                ..ibv_port_attr::default()
            };
            Ok(())
        }))
    }
}

/// GID `index` of the port: 0 the IPv6 link-local address of the MAC, 1 `::ffff:IP`.
fn gid(cfg: &Config, index: c_int) -> Option<ibv_gid> {
    let mut raw = [0u8; 16];
    match index {
        0 => {
            raw[0] = 0xfe;
            raw[1] = 0x80;
            raw[8..].copy_from_slice(&eui64(cfg.mac));
        }
        1 => {
            raw[10] = 0xff;
            raw[11] = 0xff;
            raw[12..].copy_from_slice(&cfg.ip);
        }
        _ => return None,
    }
    Some(ibv_gid { raw })
}

verb! { "IBVERBS_1.1";
    fn ibv_query_gid(context: *mut ibv_context, port_num: u8, index: c_int, out: *mut ibv_gid) -> c_int {
        match with_dev(context, |d| {
            (port_num == 1).then(|| gid(&d.cfg, index)).flatten().ok_or(libc::EINVAL)
        }) {
            Ok(g) => {
                *out = g;
                0
            }
            Err(e) => {
                set_errno(e);
                -1
            }
        }
    }
}

verb! { "IBVERBS_1.1";
    fn ibv_query_pkey(context: *mut ibv_context, port_num: u8, index: c_int, pkey: *mut u16) -> c_int {
        match with_dev(context, |_| Ok(())) {
            Ok(()) if port_num == 1 && index == 0 => {
                *pkey = 0xffff;
                0
            }
            _ => {
                set_errno(libc::EINVAL);
                -1
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Protection domains and memory regions.

verb! { "IBVERBS_1.1";
    fn ibv_alloc_pd(context: *mut ibv_context) -> *mut ibv_pd {
        ptr_or_errno(with_dev(context, |d| {
            let pd = d.ctx.alloc_pd().map_err(|e| errno_of(&e))?;
            let p = leak(ibv_pd { context, handle: pd.pdn });
            d.pds.insert(p as usize, pd);
            Ok(p)
        }))
    }
}

verb! { "IBVERBS_1.1";
    fn ibv_dealloc_pd(pd: *mut ibv_pd) -> c_int {
        if pd.is_null() {
            return libc::EINVAL;
        }
        rc(with_dev((*pd).context, |d| {
            let &h = d.pds.get(&(pd as usize)).ok_or(libc::EINVAL)?;
            d.ctx.dealloc_pd(h).map_err(|e| errno_of(&e))?;
            d.pds.remove(&(pd as usize));
            free(pd);
            Ok(())
        }))
    }
}

/// Ends the driver's hold on the application memory of `m` (already deregistered): the
/// vector that stood for it is taken back and forgotten, never freed.
fn give_back(d: &mut Device, m: &MrRec) {
    if let Ok(v) = d.ctx.take_buf(&m.buf) {
        let _ = ManuallyDrop::new(v);
    }
}

/// `ibv_reg_mr_iova2`: registers the application's `length` bytes at `addr`, named `iova`
/// by work requests and by the peer.
///
/// The simulated NIC's host memory is made of `Vec<u8>`s; the application's bytes become
/// one in place (`Vec::from_raw_parts` over `addr`, capacity = length), handed to the
/// driver's `adopt_buf`, so the NIC's DMA reads and writes the application's own memory.
/// That vector is never grown and never dropped: it comes back from `take_buf` when the
/// region is deregistered (or the context closed) and is forgotten there.
unsafe fn reg_mr(
    pd: *mut ibv_pd,
    addr: *mut c_void,
    length: usize,
    iova: u64,
    access: u32,
) -> Result<*mut ibv_mr, i32> {
    if pd.is_null() || addr.is_null() || length == 0 {
        return Err(libc::EINVAL);
    }
    let access = access & !IBV_ACCESS_OPTIONAL_RANGE;
    with_dev((*pd).context, |d| {
        let &h = d.pds.get(&(pd as usize)).ok_or(libc::EINVAL)?;
        // SAFETY: the application gives us `length` bytes at `addr` until it deregisters
        // the region (ibverbs' contract); the vector is never grown nor freed (see above).
        let mem = Vec::from_raw_parts(addr as *mut u8, length, length);
        let buf = d.ctx.adopt_buf(mem).map_err(|r| {
            let _ = ManuallyDrop::new(r.value);
            errno_of(&r.error)
        })?;
        let mr = match d
            .ctx
            .reg_mr_range_at(h, &buf, 0, length, access, Some(iova))
        {
            Ok(mr) => mr,
            Err(e) => {
                if let Ok(v) = d.ctx.take_buf(&buf) {
                    let _ = ManuallyDrop::new(v);
                }
                return Err(errno_of(&e));
            }
        };
        let p = leak(ibv_mr {
            context: (*pd).context,
            pd,
            addr,
            length,
            handle: mr.lkey,
            lkey: mr.lkey,
            rkey: mr.rkey,
        });
        d.mrs.insert(p as usize, MrRec { mr, buf });
        Ok(p)
    })
}

verb! { "IBVERBS_1.1";
    fn ibv_reg_mr(pd: *mut ibv_pd, addr: *mut c_void, length: usize, access: c_int) -> *mut ibv_mr {
        ptr_or_errno(reg_mr(pd, addr, length, addr as u64, access as u32))
    }
}

verb! { "IBVERBS_1.7";
    fn ibv_reg_mr_iova(pd: *mut ibv_pd, addr: *mut c_void, length: usize, iova: u64, access: c_int) -> *mut ibv_mr {
        ptr_or_errno(reg_mr(pd, addr, length, iova, access as u32))
    }
}

verb! { "IBVERBS_1.8";
    fn ibv_reg_mr_iova2(pd: *mut ibv_pd, addr: *mut c_void, length: usize, iova: u64, access: u32) -> *mut ibv_mr {
        ptr_or_errno(reg_mr(pd, addr, length, iova, access))
    }
}

verb! { "IBVERBS_1.1";
    fn ibv_dereg_mr(mr: *mut ibv_mr) -> c_int {
        if mr.is_null() {
            return libc::EINVAL;
        }
        rc(with_dev((*mr).context, |d| {
            let m = d.mrs.get(&(mr as usize)).ok_or(libc::EINVAL)?;
            d.ctx.dereg_mr(&m.mr).map_err(|e| errno_of(&e))?;
            let m = d.mrs.remove(&(mr as usize)).expect("found above");
            give_back(d, &m);
            free(mr);
            Ok(())
        }))
    }
}

// ---------------------------------------------------------------------------------------
// Completion channels and CQs.

verb! { "IBVERBS_1.0";
    /// A channel whose `fd` is an eventfd that never becomes readable: wait with
    /// `ibv_get_cq_event`, which runs the NIC, not with `poll(2)` on the fd.
    fn ibv_create_comp_channel(context: *mut ibv_context) -> *mut ibv_comp_channel {
        ptr_or_errno(with_dev(context, |d| {
            let fd = libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK);
            if fd < 0 {
                return Err(*libc::__errno_location());
            }
            let p = leak(ibv_comp_channel { context, fd, refcnt: 0 });
            d.channels.insert(p as usize, ());
            Ok(p)
        }))
    }
}

verb! { "IBVERBS_1.0";
    fn ibv_destroy_comp_channel(channel: *mut ibv_comp_channel) -> c_int {
        if channel.is_null() {
            return libc::EINVAL;
        }
        rc(with_dev((*channel).context, |d| {
            let key = channel as usize;
            if !d.channels.contains_key(&key) {
                return Err(libc::EINVAL);
            }
            if d.cqs.values().any(|c| c.channel == key) {
                return Err(libc::EBUSY);
            }
            d.channels.remove(&key);
            libc::close((*channel).fd);
            free(channel);
            Ok(())
        }))
    }
}

verb! { "IBVERBS_1.1";
    fn ibv_create_cq(context: *mut ibv_context, cqe: c_int, cq_context: *mut c_void, channel: *mut ibv_comp_channel, _comp_vector: c_int) -> *mut ibv_cq {
        ptr_or_errno(with_dev(context, |d| {
            if cqe < 1 || (!channel.is_null() && !d.channels.contains_key(&(channel as usize))) {
                return Err(libc::EINVAL);
            }
            let cq = d.ctx.create_cq(cqe as u32).map_err(|e| errno_of(&e))?;
            let p = leak(ibv_cq {
                context,
                channel,
                cq_context,
                handle: cq.cqn,
                cqe: cq.cqe as c_int,
                // SAFETY: all-zero is the glibc static initializer of both.
                mutex: std::mem::zeroed(),
                cond: std::mem::zeroed(),
                comp_events_completed: 0,
                async_events_completed: 0,
            });
            if !channel.is_null() {
                (*channel).refcnt += 1;
            }
            d.cqs.insert(p as usize, CqRec { cq, pending: Default::default(), armed: false, channel: channel as usize });
            Ok(p)
        }))
    }
}

verb! { "IBVERBS_1.1";
    fn ibv_destroy_cq(cq: *mut ibv_cq) -> c_int {
        if cq.is_null() {
            return libc::EINVAL;
        }
        rc(with_dev((*cq).context, |d| {
            let key = cq as usize;
            let rec = d.cqs.get(&key).ok_or(libc::EINVAL)?;
            if d.qps.values().any(|q| q.send_cq == key || q.recv_cq == key) {
                return Err(libc::EBUSY);
            }
            d.ctx.destroy_cq(rec.cq).map_err(|e| errno_of(&e))?;
            d.cqs.remove(&key);
            let ch = (*cq).channel;
            if !ch.is_null() {
                (*ch).refcnt -= 1;
            }
            free(cq);
            Ok(())
        }))
    }
}

/// `ops.poll_cq`: up to `num_entries` completions; when there are none the NIC runs one
/// quantum (`ROCENIC_POLL_US`) and the CQ is polled again. Negative on error.
unsafe extern "C" fn poll_cq(cq: *mut ibv_cq, num_entries: c_int, wc: *mut ibv_wc) -> c_int {
    if cq.is_null() || num_entries < 0 || (num_entries > 0 && wc.is_null()) {
        return -libc::EINVAL;
    }
    match with_dev((*cq).context, |d| {
        if !d.cqs.contains_key(&(cq as usize)) {
            return Err(libc::EINVAL);
        }
        d.poll(cq as usize, num_entries as usize)
            .map_err(|e| errno_of(&e))
    }) {
        Ok(wcs) => {
            for (i, w) in wcs.iter().enumerate() {
                *wc.add(i) = to_ibv_wc(w);
            }
            wcs.len() as c_int
        }
        Err(e) => -e,
    }
}

fn to_ibv_wc(w: &Wc) -> ibv_wc {
    let (imm, flags) = match (w.imm_data, w.invalidated_rkey) {
        (Some(i), _) => (i.to_be(), IBV_WC_WITH_IMM),
        (None, Some(k)) => (k, IBV_WC_WITH_INV),
        (None, None) => (0, 0),
    };
    ibv_wc {
        wr_id: w.wr_id,
        status: u8::from(w.status) as u32,
        opcode: u8::from(w.opcode) as u32,
        vendor_err: w.vendor_err,
        byte_len: w.byte_len,
        imm_data: imm,
        qp_num: w.qp_num,
        src_qp: w.src_qp,
        wc_flags: flags,
        pkey_index: 0,
        slid: 0,
        sl: 0,
        dlid_path_bits: 0,
    }
}

/// `ops.req_notify_cq`: the next `ibv_get_cq_event` on the CQ's channel returns it once
/// it holds a completion not yet polled.
unsafe extern "C" fn req_notify_cq(cq: *mut ibv_cq, _solicited_only: c_int) -> c_int {
    if cq.is_null() {
        return libc::EINVAL;
    }
    rc(with_dev((*cq).context, |d| {
        let rec = d.cqs.get_mut(&(cq as usize)).ok_or(libc::EINVAL)?;
        if rec.channel == 0 {
            return Err(libc::EINVAL);
        }
        rec.armed = true;
        Ok(())
    }))
}

verb! { "IBVERBS_1.1";
    /// Waits (running the NIC) for an armed CQ of the channel to hold a completion, for
    /// at most `ROCENIC_EVENT_TIMEOUT_MS`; -1 with `errno` `ETIMEDOUT` after that.
    fn ibv_get_cq_event(channel: *mut ibv_comp_channel, cq: *mut *mut ibv_cq, cq_context: *mut *mut c_void) -> c_int {
        if channel.is_null() || cq.is_null() || cq_context.is_null() {
            set_errno(libc::EINVAL);
            return -1;
        }
        match with_dev((*channel).context, |d| d.wait_event(channel as usize)) {
            Ok(k) => {
                let p = k as *mut ibv_cq;
                *cq = p;
                *cq_context = (*p).cq_context;
                0
            }
            Err(e) => {
                set_errno(e);
                -1
            }
        }
    }
}

verb! { "IBVERBS_1.1";
    fn ibv_ack_cq_events(cq: *mut ibv_cq, nevents: u32) {
        if !cq.is_null() {
            let _g = lock();
            (*cq).comp_events_completed = (*cq).comp_events_completed.wrapping_add(nevents);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Queue pairs.

/// `IBV_QP_PKEY_INDEX`, `IBV_QP_PORT`, `IBV_QP_CUR_STATE`: accepted (one port, one pkey)
/// and not passed on.
const QP_ACCEPTED: c_int = (1 << 4) | (1 << 5) | (1 << 1);

verb! { "IBVERBS_1.1";
    /// RC QPs only (`EOPNOTSUPP` for other types and for SRQs). `init_attr.cap` is set to
    /// what was created.
    fn ibv_create_qp(pd: *mut ibv_pd, init: *mut ibv_qp_init_attr) -> *mut ibv_qp {
        ptr_or_errno(create_qp(pd, init))
    }
}

unsafe fn create_qp(pd: *mut ibv_pd, init: *mut ibv_qp_init_attr) -> Result<*mut ibv_qp, i32> {
    if pd.is_null() || init.is_null() {
        return Err(libc::EINVAL);
    }
    let ia = &mut *init;
    if ia.qp_type != IBV_QPT_RC || !ia.srq.is_null() {
        return Err(libc::EOPNOTSUPP);
    }
    with_dev((*pd).context, |d| {
        let &h = d.pds.get(&(pd as usize)).ok_or(libc::EINVAL)?;
        let (sk, rk) = (ia.send_cq as usize, ia.recv_cq as usize);
        let (Some(s), Some(r)) = (d.cqs.get(&sk), d.cqs.get(&rk)) else {
            return Err(libc::EINVAL);
        };
        let c = ia.cap;
        let cap = QpCap {
            max_send_wr: c.max_send_wr.max(1),
            max_recv_wr: c.max_recv_wr.max(1),
            max_send_sge: c.max_send_sge.max(1),
            max_recv_sge: c.max_recv_sge.max(1),
            max_inline_data: c.max_inline_data,
        };
        let qp = d
            .ctx
            .create_qp(
                h,
                &QpInitAttr {
                    send_cq: s.cq,
                    recv_cq: r.cq,
                    cap,
                },
            )
            .map_err(|e| errno_of(&e))?;
        let staging = match qp.cap.max_inline_data {
            0 => None,
            n => match d.ctx.alloc_buf(n as usize) {
                Ok(b) => Some(b),
                Err(e) => {
                    let _ = d.ctx.destroy_qp(qp);
                    return Err(errno_of(&e));
                }
            },
        };
        let qc = qp.cap;
        ia.cap = ibv_qp_cap {
            max_send_wr: qc.max_send_wr,
            max_recv_wr: qc.max_recv_wr,
            max_send_sge: qc.max_send_sge,
            max_recv_sge: qc.max_recv_sge,
            max_inline_data: qc.max_inline_data,
        };
        let p = leak(ibv_qp {
            context: (*pd).context,
            qp_context: ia.qp_context,
            pd,
            send_cq: ia.send_cq,
            recv_cq: ia.recv_cq,
            srq: null_mut(),
            handle: qp.qp_num,
            qp_num: qp.qp_num,
            state: 0,
            qp_type: IBV_QPT_RC,
            // SAFETY: all-zero is the glibc static initializer of both.
            mutex: std::mem::zeroed(),
            cond: std::mem::zeroed(),
            events_completed: 0,
        });
        d.qps.insert(
            p as usize,
            QpRec {
                qp,
                send_cq: sk,
                recv_cq: rk,
                staging,
                sig_all: ia.sq_sig_all != 0,
            },
        );
        Ok(p)
    })
}

/// The IPv4 address of a RoCE v2 GID (`::ffff:a.b.c.d`).
fn gid_ipv4(g: &ibv_gid) -> Option<[u8; 4]> {
    let r = &g.raw;
    (r[..10].iter().all(|&b| b == 0) && r[10] == 0xff && r[11] == 0xff)
        .then(|| [r[12], r[13], r[14], r[15]])
}

verb! { "IBVERBS_1.1";
    /// RESET -> INIT -> RTR -> RTS (and ERR, RESET). The address vector must be global
    /// with an IPv4-mapped destination GID; the peer's MAC is resolved by ARP on the wire.
    fn ibv_modify_qp(qp: *mut ibv_qp, attr: *mut ibv_qp_attr, attr_mask: c_int) -> c_int {
        if qp.is_null() || attr.is_null() {
            return libc::EINVAL;
        }
        let a = *attr;
        rc(with_dev((*qp).context, |d| {
            let rec = d.qps.get(&(qp as usize)).ok_or(libc::EINVAL)?;
            let handle = rec.qp;
            let served = qp_attr::ALL as c_int | QP_ACCEPTED;
            if attr_mask & !served != 0 {
                return Err(libc::EINVAL);
            }
            if attr_mask & (1 << 5) != 0 && a.port_num != 1 {
                return Err(libc::EINVAL);
            }
            let mask = attr_mask as u32 & qp_attr::ALL;
            let mut ah = AhAttr::default();
            if mask & qp_attr::AV != 0 {
                let g = a.ah_attr.grh;
                let ip = (a.ah_attr.is_global != 0).then(|| gid_ipv4(&g.dgid)).flatten();
                let ip = ip.ok_or(libc::EINVAL)?;
                ah = AhAttr { dmac: d.resolve(ip)?, dip: ip, udp_sport: 0 };
            }
            let path_mtu = match Mtu::from_code(a.path_mtu) {
                Some(m) => m,
                None if mask & qp_attr::PATH_MTU != 0 => return Err(libc::EINVAL),
                None => Mtu::Mtu1024,
            };
            let state = u8::try_from(a.qp_state).map(QpState::from).map_err(|_| libc::EINVAL)?;
            let da = QpAttr {
                qp_state: state,
                path_mtu,
                dest_qp_num: a.dest_qp_num,
                rq_psn: a.rq_psn,
                sq_psn: a.sq_psn,
                qp_access_flags: a.qp_access_flags,
                ah_attr: ah,
                timeout: a.timeout,
                retry_cnt: a.retry_cnt,
                rnr_retry: a.rnr_retry,
                min_rnr_timer: a.min_rnr_timer,
                max_rd_atomic: a.max_rd_atomic,
                max_dest_rd_atomic: a.max_dest_rd_atomic,
            };
            d.ctx.modify_qp(handle, &da, mask).map_err(|e| errno_of(&e))?;
            if mask & qp_attr::STATE != 0 {
                (*qp).state = a.qp_state;
            }
            Ok(())
        }))
    }
}

verb! { "IBVERBS_1.1";
    fn ibv_query_qp(qp: *mut ibv_qp, attr: *mut ibv_qp_attr, _attr_mask: c_int, init: *mut ibv_qp_init_attr) -> c_int {
        if qp.is_null() || attr.is_null() || init.is_null() {
            return libc::EINVAL;
        }
        rc(with_dev((*qp).context, |d| {
            let rec = d.qps.get(&(qp as usize)).ok_or(libc::EINVAL)?;
            let (handle, sig_all) = (rec.qp, rec.sig_all);
            let q = d.ctx.query_qp(handle).map_err(|e| errno_of(&e))?;
            let c = handle.cap;
            let cap = ibv_qp_cap {
                max_send_wr: c.max_send_wr,
                max_recv_wr: c.max_recv_wr,
                max_send_sge: c.max_send_sge,
                max_recv_sge: c.max_recv_sge,
                max_inline_data: c.max_inline_data,
            };
            let mut ah = ibv_ah_attr { is_global: 1, port_num: 1, ..Default::default() };
            ah.grh.dgid.raw[10] = 0xff;
            ah.grh.dgid.raw[11] = 0xff;
            ah.grh.dgid.raw[12..].copy_from_slice(&q.ah_attr.dip);
            ah.grh.hop_limit = 64;
            let state = u8::from(q.qp_state) as u32;
            *attr = ibv_qp_attr {
                qp_state: state,
                cur_qp_state: state,
                path_mtu: q.path_mtu as u32,
                rq_psn: q.rq_psn,
                sq_psn: q.sq_psn,
                dest_qp_num: q.dest_qp_num,
                qp_access_flags: q.qp_access_flags,
                cap,
                ah_attr: ah,
                max_rd_atomic: q.max_rd_atomic,
                max_dest_rd_atomic: q.max_dest_rd_atomic,
                min_rnr_timer: q.min_rnr_timer,
                port_num: 1,
                timeout: q.timeout,
                retry_cnt: q.retry_cnt,
                rnr_retry: q.rnr_retry,
                ..Default::default()
            };
            (*qp).state = state;
            *init = ibv_qp_init_attr {
                qp_context: (*qp).qp_context,
                send_cq: (*qp).send_cq,
                recv_cq: (*qp).recv_cq,
                srq: null_mut(),
                cap,
                qp_type: IBV_QPT_RC,
                sq_sig_all: sig_all as c_int,
            };
            Ok(())
        }))
    }
}

verb! { "IBVERBS_1.1";
    fn ibv_destroy_qp(qp: *mut ibv_qp) -> c_int {
        if qp.is_null() {
            return libc::EINVAL;
        }
        rc(with_dev((*qp).context, |d| {
            let rec = d.qps.get(&(qp as usize)).ok_or(libc::EINVAL)?;
            d.ctx.destroy_qp(rec.qp).map_err(|e| errno_of(&e))?;
            let rec = d.qps.remove(&(qp as usize)).expect("found above");
            if let Some(b) = rec.staging {
                let _ = d.ctx.free_buf(&b);
            }
            free(qp);
            Ok(())
        }))
    }
}

/// The SGEs of a work request.
///
/// # Safety
/// `sg` holds `n` entries when `n > 0`.
unsafe fn sges(sg: *const ibv_sge, n: c_int) -> Result<Vec<Sge>, i32> {
    if n < 0 || (n > 0 && sg.is_null()) {
        return Err(libc::EINVAL);
    }
    Ok((0..n as usize)
        .map(|i| {
            let s = *sg.add(i);
            Sge {
                addr: s.addr,
                length: s.length,
                lkey: s.lkey,
            }
        })
        .collect())
}

/// Converts one `ibv_send_wr`; an inline payload is copied from the application's memory
/// into the QP's staging buffer, which the driver then copies into the WQE.
unsafe fn send_wr(d: &mut Device, rec_key: usize, w: &ibv_send_wr) -> Result<SendWr, i32> {
    let rec = &d.qps[&rec_key];
    let opcode = WrOpcode::from(u8::try_from(w.opcode).map_err(|_| libc::EINVAL)?);
    let mut flags = w.send_flags;
    if rec.sig_all {
        flags |= send_flags::SIGNALED;
    }
    let mut sg_list = sges(w.sg_list, w.num_sge)?;
    if flags & IBV_SEND_INLINE != 0 && !sg_list.is_empty() {
        let Some(stage) = rec.staging else {
            return Err(libc::EINVAL);
        };
        let total: u64 = sg_list.iter().map(|s| s.length as u64).sum();
        if total > stage.len as u64 {
            return Err(libc::EINVAL);
        }
        let mut at = 0;
        for s in &sg_list {
            // SAFETY: an inline SGE names `length` readable bytes of the application's.
            let bytes = std::slice::from_raw_parts(s.addr as *const u8, s.length as usize);
            d.ctx.write(&stage, at, bytes).map_err(|e| errno_of(&e))?;
            at += bytes.len();
        }
        sg_list = vec![Sge {
            addr: stage.addr,
            length: total as u32,
            lkey: 0,
        }];
    }
    let imm = match opcode {
        WrOpcode::SendWithImm | WrOpcode::RdmaWriteWithImm => u32::from_be(w.imm_data),
        _ => 0,
    };
    let (rdma, atomic) = if opcode.is_atomic() {
        let a = w.wr.atomic;
        (
            RdmaWr::default(),
            AtomicWr {
                remote_addr: a.remote_addr,
                compare_add: a.compare_add,
                swap: a.swap,
                rkey: a.rkey,
            },
        )
    } else {
        let r = w.wr.rdma;
        (
            RdmaWr {
                remote_addr: r.remote_addr,
                rkey: r.rkey,
            },
            AtomicWr::default(),
        )
    };
    Ok(SendWr {
        wr_id: w.wr_id,
        opcode,
        send_flags: flags,
        sg_list,
        imm_data: imm,
        invalidate_rkey: if opcode == WrOpcode::SendWithInv {
            w.imm_data
        } else {
            0
        },
        rdma,
        atomic,
    })
}

/// `ops.post_send`: posts the list one request at a time; on a refused one `*bad_wr`
/// points at it and its errno is returned.
unsafe extern "C" fn post_send(
    qp: *mut ibv_qp,
    wr: *mut ibv_send_wr,
    bad_wr: *mut *mut ibv_send_wr,
) -> c_int {
    if qp.is_null() {
        return libc::EINVAL;
    }
    let mut cur = wr;
    let r = with_dev((*qp).context, |d| {
        let key = qp as usize;
        let handle = d.qps.get(&key).ok_or(libc::EINVAL)?.qp;
        while !cur.is_null() {
            let w = send_wr(d, key, &*cur)?;
            d.ctx
                .post_send(handle, &[w])
                .map_err(|e| errno_of(&e.error))?;
            cur = (*cur).next;
        }
        Ok(())
    });
    if r.is_err() && !bad_wr.is_null() {
        *bad_wr = if cur.is_null() { wr } else { cur };
    }
    rc(r)
}

/// `ops.post_recv`, as `post_send`.
unsafe extern "C" fn post_recv(
    qp: *mut ibv_qp,
    wr: *mut ibv_recv_wr,
    bad_wr: *mut *mut ibv_recv_wr,
) -> c_int {
    if qp.is_null() {
        return libc::EINVAL;
    }
    let mut cur = wr;
    let r = with_dev((*qp).context, |d| {
        let handle = d.qps.get(&(qp as usize)).ok_or(libc::EINVAL)?.qp;
        while !cur.is_null() {
            let w = &*cur;
            let rw = RecvWr {
                wr_id: w.wr_id,
                sg_list: sges(w.sg_list, w.num_sge)?,
            };
            d.ctx
                .post_recv(handle, &[rw])
                .map_err(|e| errno_of(&e.error))?;
            cur = w.next;
        }
        Ok(())
    });
    if r.is_err() && !bad_wr.is_null() {
        *bad_wr = if cur.is_null() { wr } else { cur };
    }
    rc(r)
}

// ---------------------------------------------------------------------------------------
// Names.

/// A static C string.
macro_rules! cstr {
    ($s:literal) => {
        concat!($s, "\0").as_ptr() as *const c_char
    };
}

verb! { "IBVERBS_1.1";
    fn ibv_wc_status_str(status: u32) -> *const c_char {
        match status {
            0 => cstr!("success"),
            1 => cstr!("local length error"),
            2 => cstr!("local QP operation error"),
            3 => cstr!("local EE context operation error"),
            4 => cstr!("local protection error"),
            5 => cstr!("Work Request Flushed Error"),
            6 => cstr!("memory management operation error"),
            7 => cstr!("bad response error"),
            8 => cstr!("local access error"),
            9 => cstr!("remote invalid request error"),
            10 => cstr!("remote access error"),
            11 => cstr!("remote operation error"),
            12 => cstr!("transport retry counter exceeded"),
            13 => cstr!("RNR retry counter exceeded"),
            14 => cstr!("local RDD violation error"),
            15 => cstr!("remote invalid RD request"),
            16 => cstr!("aborted error"),
            17 => cstr!("invalid EE context number"),
            18 => cstr!("invalid EE context state"),
            19 => cstr!("fatal error"),
            20 => cstr!("response timeout error"),
            21 => cstr!("general error"),
            22 => cstr!("TM error"),
            23 => cstr!("TM Rendezvous error"),
            _ => cstr!("unknown"),
        }
    }
}

verb! { "IBVERBS_1.1";
    fn ibv_port_state_str(state: u32) -> *const c_char {
        match state {
            0 => cstr!("PORT_NOP"),
            1 => cstr!("PORT_DOWN"),
            2 => cstr!("PORT_INIT"),
            3 => cstr!("PORT_ARMED"),
            4 => cstr!("PORT_ACTIVE"),
            5 => cstr!("PORT_ACTIVE_DEFER"),
            _ => cstr!("invalid state"),
        }
    }
}

verb! { "IBVERBS_1.1";
    fn ibv_node_type_str(node_type: c_int) -> *const c_char {
        match node_type {
            1 => cstr!("InfiniBand channel adapter"),
            2 => cstr!("InfiniBand switch"),
            3 => cstr!("InfiniBand router"),
            4 => cstr!("iWARP NIC"),
            5 => cstr!("usNIC"),
            6 => cstr!("usNIC UDP"),
            _ => cstr!("unknown"),
        }
    }
}

verb! { "IBVERBS_1.1";
    /// Nothing to prepare: the library pins nothing.
    fn ibv_fork_init() -> c_int {
        0
    }
}

// ---------------------------------------------------------------------------------------
// Not served: the errno rdma-core gives for a provider without the verb.

verb! { "IBVERBS_1.1";
    fn ibv_create_srq(_pd: *mut ibv_pd, _attr: *mut c_void) -> *mut c_void {
        set_errno(libc::EOPNOTSUPP);
        null_mut()
    }
}

verb! { "IBVERBS_1.1";
    fn ibv_create_ah(_pd: *mut ibv_pd, _attr: *mut c_void) -> *mut c_void {
        set_errno(libc::EOPNOTSUPP);
        null_mut()
    }
}

verb! { "IBVERBS_1.1";
    fn ibv_destroy_srq(_srq: *mut c_void) -> c_int {
        libc::EOPNOTSUPP
    }
}

verb! { "IBVERBS_1.1";
    fn ibv_destroy_ah(_ah: *mut c_void) -> c_int {
        libc::EOPNOTSUPP
    }
}

verb! { "IBVERBS_1.1";
    fn ibv_resize_cq(_cq: *mut ibv_cq, _cqe: c_int) -> c_int {
        libc::EOPNOTSUPP
    }
}

verb! { "IBVERBS_1.1";
    fn ibv_attach_mcast(_qp: *mut ibv_qp, _gid: *const ibv_gid, _lid: u16) -> c_int {
        libc::EOPNOTSUPP
    }
}

verb! { "IBVERBS_1.1";
    fn ibv_detach_mcast(_qp: *mut ibv_qp, _gid: *const ibv_gid, _lid: u16) -> c_int {
        libc::EOPNOTSUPP
    }
}

verb! { "IBVERBS_1.6";
    /// No QP here is an extended one: `NULL`, as rdma-core gives for a QP not created
    /// with `ibv_create_qp_ex`.
    fn ibv_qp_to_qp_ex(_qp: *mut ibv_qp) -> *mut c_void {
        null_mut()
    }
}
