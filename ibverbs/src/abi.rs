//! The C structures and numbers of `infiniband/verbs.h` (rdma-core 44) that the library
//! serves, laid out field by field as the header has them. `tests/layout.rs` compiles a C
//! program against the installed header and checks every offset and size below.
#![allow(non_camel_case_types, missing_docs)]

use core::ffi::{c_char, c_int, c_uint, c_void};

use libc::{pthread_cond_t, pthread_mutex_t};

/// `IBV_SYSFS_NAME_MAX`.
pub const SYSFS_NAME_MAX: usize = 64;
/// `IBV_SYSFS_PATH_MAX`.
pub const SYSFS_PATH_MAX: usize = 256;

#[repr(C)]
pub struct ibv_device_ops {
    pub _dummy1: Option<unsafe extern "C" fn(*mut ibv_device, c_int) -> *mut ibv_context>,
    pub _dummy2: Option<unsafe extern "C" fn(*mut ibv_context)>,
}

#[repr(C)]
pub struct ibv_device {
    pub _ops: ibv_device_ops,
    pub node_type: c_int,
    pub transport_type: c_int,
    pub name: [c_char; SYSFS_NAME_MAX],
    pub dev_name: [c_char; SYSFS_NAME_MAX],
    pub dev_path: [c_char; SYSFS_PATH_MAX],
    pub ibdev_path: [c_char; SYSFS_PATH_MAX],
}

/// A slot of `ibv_context_ops` the library leaves empty (the `_compat_*` ones and the
/// verbs it does not serve through ops).
pub type Unused = Option<unsafe extern "C" fn()>;

pub type PollCqFn = unsafe extern "C" fn(*mut ibv_cq, c_int, *mut ibv_wc) -> c_int;
pub type ReqNotifyFn = unsafe extern "C" fn(*mut ibv_cq, c_int) -> c_int;
pub type PostSendFn =
    unsafe extern "C" fn(*mut ibv_qp, *mut ibv_send_wr, *mut *mut ibv_send_wr) -> c_int;
pub type PostRecvFn =
    unsafe extern "C" fn(*mut ibv_qp, *mut ibv_recv_wr, *mut *mut ibv_recv_wr) -> c_int;

#[repr(C)]
pub struct ibv_context_ops {
    pub _compat_query_device: Unused,
    pub _compat_query_port: Unused,
    pub _compat_alloc_pd: Unused,
    pub _compat_dealloc_pd: Unused,
    pub _compat_reg_mr: Unused,
    pub _compat_rereg_mr: Unused,
    pub _compat_dereg_mr: Unused,
    pub alloc_mw: Unused,
    pub bind_mw: Unused,
    pub dealloc_mw: Unused,
    pub _compat_create_cq: Unused,
    pub poll_cq: Option<PollCqFn>,
    pub req_notify_cq: Option<ReqNotifyFn>,
    pub _compat_cq_event: Unused,
    pub _compat_resize_cq: Unused,
    pub _compat_destroy_cq: Unused,
    pub _compat_create_srq: Unused,
    pub _compat_modify_srq: Unused,
    pub _compat_query_srq: Unused,
    pub _compat_destroy_srq: Unused,
    pub post_srq_recv: Unused,
    pub _compat_create_qp: Unused,
    pub _compat_query_qp: Unused,
    pub _compat_modify_qp: Unused,
    pub _compat_destroy_qp: Unused,
    pub post_send: Option<PostSendFn>,
    pub post_recv: Option<PostRecvFn>,
    pub _compat_create_ah: Unused,
    pub _compat_destroy_ah: Unused,
    pub _compat_attach_mcast: Unused,
    pub _compat_detach_mcast: Unused,
    pub _compat_async_event: Unused,
}

#[repr(C)]
pub struct ibv_context {
    pub device: *mut ibv_device,
    pub ops: ibv_context_ops,
    pub cmd_fd: c_int,
    pub async_fd: c_int,
    pub num_comp_vectors: c_int,
    pub mutex: pthread_mutex_t,
    pub abi_compat: *mut c_void,
}

#[repr(C)]
pub struct ibv_pd {
    pub context: *mut ibv_context,
    pub handle: u32,
}

#[repr(C)]
pub struct ibv_mr {
    pub context: *mut ibv_context,
    pub pd: *mut ibv_pd,
    pub addr: *mut c_void,
    pub length: usize,
    pub handle: u32,
    pub lkey: u32,
    pub rkey: u32,
}

#[repr(C)]
pub struct ibv_comp_channel {
    pub context: *mut ibv_context,
    pub fd: c_int,
    pub refcnt: c_int,
}

#[repr(C)]
pub struct ibv_cq {
    pub context: *mut ibv_context,
    pub channel: *mut ibv_comp_channel,
    pub cq_context: *mut c_void,
    pub handle: u32,
    pub cqe: c_int,
    pub mutex: pthread_mutex_t,
    pub cond: pthread_cond_t,
    pub comp_events_completed: u32,
    pub async_events_completed: u32,
}

#[repr(C)]
pub struct ibv_qp {
    pub context: *mut ibv_context,
    pub qp_context: *mut c_void,
    pub pd: *mut ibv_pd,
    pub send_cq: *mut ibv_cq,
    pub recv_cq: *mut ibv_cq,
    pub srq: *mut c_void,
    pub handle: u32,
    pub qp_num: u32,
    pub state: c_uint,
    pub qp_type: c_uint,
    pub mutex: pthread_mutex_t,
    pub cond: pthread_cond_t,
    pub events_completed: u32,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct ibv_sge {
    pub addr: u64,
    pub length: u32,
    pub lkey: u32,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct ibv_wc {
    pub wr_id: u64,
    pub status: c_uint,
    pub opcode: c_uint,
    pub vendor_err: u32,
    pub byte_len: u32,
    /// `imm_data` (big-endian) or `invalidated_rkey`.
    pub imm_data: u32,
    pub qp_num: u32,
    pub src_qp: u32,
    pub wc_flags: c_uint,
    pub pkey_index: u16,
    pub slid: u16,
    pub sl: u8,
    pub dlid_path_bits: u8,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct ibv_rdma {
    pub remote_addr: u64,
    pub rkey: u32,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct ibv_atomic {
    pub remote_addr: u64,
    pub compare_add: u64,
    pub swap: u64,
    pub rkey: u32,
}

/// `ibv_send_wr.wr`: `rdma`, `atomic` or `ud` (not served; its 24 bytes fit `atomic`).
#[repr(C)]
#[derive(Clone, Copy)]
pub union ibv_send_wr_wr {
    pub rdma: ibv_rdma,
    pub atomic: ibv_atomic,
}

#[repr(C)]
pub struct ibv_send_wr {
    pub wr_id: u64,
    pub next: *mut ibv_send_wr,
    pub sg_list: *mut ibv_sge,
    pub num_sge: c_int,
    pub opcode: c_uint,
    pub send_flags: c_uint,
    /// `imm_data` (big-endian) or `invalidate_rkey`.
    pub imm_data: u32,
    pub wr: ibv_send_wr_wr,
    /// `qp_type.xrc.remote_srqn`.
    pub qp_type: u32,
    /// `bind_mw` or `tso` (not served): 48 bytes, 8-aligned.
    pub _bind_mw_or_tso: [u64; 6],
}

#[repr(C)]
pub struct ibv_recv_wr {
    pub wr_id: u64,
    pub next: *mut ibv_recv_wr,
    pub sg_list: *mut ibv_sge,
    pub num_sge: c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ibv_qp_cap {
    pub max_send_wr: u32,
    pub max_recv_wr: u32,
    pub max_send_sge: u32,
    pub max_recv_sge: u32,
    pub max_inline_data: u32,
}

#[repr(C)]
pub struct ibv_qp_init_attr {
    pub qp_context: *mut c_void,
    pub send_cq: *mut ibv_cq,
    pub recv_cq: *mut ibv_cq,
    pub srq: *mut c_void,
    pub cap: ibv_qp_cap,
    pub qp_type: c_uint,
    pub sq_sig_all: c_int,
}

/// `union ibv_gid` (16 bytes, network order; 8-aligned by its `__be64` view).
#[repr(C, align(8))]
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct ibv_gid {
    pub raw: [u8; 16],
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ibv_global_route {
    pub dgid: ibv_gid,
    pub flow_label: u32,
    pub sgid_index: u8,
    pub hop_limit: u8,
    pub traffic_class: u8,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ibv_ah_attr {
    pub grh: ibv_global_route,
    pub dlid: u16,
    pub sl: u8,
    pub src_path_bits: u8,
    pub static_rate: u8,
    pub is_global: u8,
    pub port_num: u8,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ibv_qp_attr {
    pub qp_state: c_uint,
    pub cur_qp_state: c_uint,
    pub path_mtu: c_uint,
    pub path_mig_state: c_uint,
    pub qkey: u32,
    pub rq_psn: u32,
    pub sq_psn: u32,
    pub dest_qp_num: u32,
    pub qp_access_flags: c_uint,
    pub cap: ibv_qp_cap,
    pub ah_attr: ibv_ah_attr,
    pub alt_ah_attr: ibv_ah_attr,
    pub pkey_index: u16,
    pub alt_pkey_index: u16,
    pub en_sqd_async_notify: u8,
    pub sq_draining: u8,
    pub max_rd_atomic: u8,
    pub max_dest_rd_atomic: u8,
    pub min_rnr_timer: u8,
    pub port_num: u8,
    pub timeout: u8,
    pub retry_cnt: u8,
    pub rnr_retry: u8,
    pub alt_port_num: u8,
    pub alt_timeout: u8,
    pub rate_limit: u32,
}

/// `struct ibv_port_attr` (verbs.h's inline `ibv_query_port` passes one to the exported
/// function as a `struct _compat_ibv_port_attr`).
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ibv_port_attr {
    pub state: c_uint,
    pub max_mtu: c_uint,
    pub active_mtu: c_uint,
    pub gid_tbl_len: c_int,
    pub port_cap_flags: u32,
    pub max_msg_sz: u32,
    pub bad_pkey_cntr: u32,
    pub qkey_viol_cntr: u32,
    pub pkey_tbl_len: u16,
    pub lid: u16,
    pub sm_lid: u16,
    pub lmc: u8,
    pub max_vl_num: u8,
    pub sm_sl: u8,
    pub subnet_timeout: u8,
    pub init_type_reply: u8,
    pub active_width: u8,
    pub active_speed: u8,
    pub phys_state: u8,
    pub link_layer: u8,
    pub flags: u8,
    pub port_cap_flags2: u16,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct ibv_device_attr {
    pub fw_ver: [c_char; 64],
    pub node_guid: u64,
    pub sys_image_guid: u64,
    pub max_mr_size: u64,
    pub page_size_cap: u64,
    pub vendor_id: u32,
    pub vendor_part_id: u32,
    pub hw_ver: u32,
    pub max_qp: c_int,
    pub max_qp_wr: c_int,
    pub device_cap_flags: c_uint,
    pub max_sge: c_int,
    pub max_sge_rd: c_int,
    pub max_cq: c_int,
    pub max_cqe: c_int,
    pub max_mr: c_int,
    pub max_pd: c_int,
    pub max_qp_rd_atom: c_int,
    pub max_ee_rd_atom: c_int,
    pub max_res_rd_atom: c_int,
    pub max_qp_init_rd_atom: c_int,
    pub max_ee_init_rd_atom: c_int,
    pub atomic_cap: c_uint,
    pub max_ee: c_int,
    pub max_rdd: c_int,
    pub max_mw: c_int,
    pub max_raw_ipv6_qp: c_int,
    pub max_raw_ethy_qp: c_int,
    pub max_mcast_grp: c_int,
    pub max_mcast_qp_attach: c_int,
    pub max_total_mcast_qp_attach: c_int,
    pub max_ah: c_int,
    pub max_fmr: c_int,
    pub max_map_per_fmr: c_int,
    pub max_srq: c_int,
    pub max_srq_wr: c_int,
    pub max_srq_sge: c_int,
    pub max_pkeys: u16,
    pub local_ca_ack_delay: u8,
    pub phys_port_cnt: u8,
}

// Numbers of verbs.h used by the library.
pub const IBV_NODE_CA: c_int = 1;
pub const IBV_TRANSPORT_IB: c_int = 0;
pub const IBV_QPT_RC: c_uint = 2;
pub const IBV_PORT_DOWN: c_uint = 1;
pub const IBV_PORT_ACTIVE: c_uint = 4;
pub const IBV_MTU_4096: c_uint = 5;
pub const IBV_LINK_LAYER_ETHERNET: u8 = 2;
pub const IBV_ATOMIC_HCA: c_uint = 1;
pub const IBV_WC_WITH_IMM: c_uint = 1 << 1;
pub const IBV_WC_WITH_INV: c_uint = 1 << 3;
pub const IBV_SEND_INLINE: c_uint = 1 << 3;
pub const IBV_QP_CAP: c_int = 1 << 19;
/// `IBV_ACCESS_OPTIONAL_RANGE`: access bits a provider may ignore.
pub const IBV_ACCESS_OPTIONAL_RANGE: c_uint = 0x3ff0_0000;

#[cfg(test)]
mod tests {
    //! Every field offset and structure size above against the installed verbs.h, by a C
    //! program compiled with gcc.
    use super::*;
    use std::fmt::Write as _;
    use std::mem::{offset_of, size_of};

    /// `(C type, size, [(C field, offset)])` of every structure, from the Rust side.
    macro_rules! layout {
        ($($c:literal $t:ident { $($f:ident $(= $cf:literal)?),* })*) => {
            vec![$(($c, size_of::<$t>(), vec![$((layout!(@name $f $($cf)?), offset_of!($t, $f))),*])),*]
        };
        (@name $f:ident) => { stringify!($f) };
        (@name $f:ident $cf:literal) => { $cf };
    }

    #[test]
    fn structures_match_verbs_h() {
        let table = layout! {
            "struct ibv_device" ibv_device { _ops, node_type, transport_type, name, dev_name, dev_path, ibdev_path }
            "struct ibv_context_ops" ibv_context_ops { poll_cq, req_notify_cq, post_srq_recv, post_send, post_recv, _compat_async_event }
            "struct ibv_context" ibv_context { device, ops, cmd_fd, async_fd, num_comp_vectors, mutex, abi_compat }
            "struct ibv_pd" ibv_pd { context, handle }
            "struct ibv_mr" ibv_mr { context, pd, addr, length, handle, lkey, rkey }
            "struct ibv_comp_channel" ibv_comp_channel { context, fd, refcnt }
            "struct ibv_cq" ibv_cq { context, channel, cq_context, handle, cqe, mutex, cond, comp_events_completed, async_events_completed }
            "struct ibv_qp" ibv_qp { context, qp_context, pd, send_cq, recv_cq, srq, handle, qp_num, state, qp_type, mutex, cond, events_completed }
            "struct ibv_sge" ibv_sge { addr, length, lkey }
            "struct ibv_wc" ibv_wc { wr_id, status, opcode, vendor_err, byte_len, imm_data, qp_num, src_qp, wc_flags, pkey_index, slid, sl, dlid_path_bits }
            "struct ibv_send_wr" ibv_send_wr { wr_id, next, sg_list, num_sge, opcode, send_flags, imm_data, wr, qp_type, _bind_mw_or_tso = "bind_mw" }
            "struct ibv_recv_wr" ibv_recv_wr { wr_id, next, sg_list, num_sge }
            "struct ibv_qp_cap" ibv_qp_cap { max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline_data }
            "struct ibv_qp_init_attr" ibv_qp_init_attr { qp_context, send_cq, recv_cq, srq, cap, qp_type, sq_sig_all }
            "union ibv_gid" ibv_gid { raw }
            "struct ibv_global_route" ibv_global_route { dgid, flow_label, sgid_index, hop_limit, traffic_class }
            "struct ibv_ah_attr" ibv_ah_attr { grh, dlid, sl, src_path_bits, static_rate, is_global, port_num }
            "struct ibv_qp_attr" ibv_qp_attr { qp_state, cur_qp_state, path_mtu, path_mig_state, qkey, rq_psn, sq_psn, dest_qp_num, qp_access_flags, cap, ah_attr, alt_ah_attr, pkey_index, alt_pkey_index, en_sqd_async_notify, sq_draining, max_rd_atomic, max_dest_rd_atomic, min_rnr_timer, port_num, timeout, retry_cnt, rnr_retry, alt_port_num, alt_timeout, rate_limit }
            "struct ibv_port_attr" ibv_port_attr { state, max_mtu, active_mtu, gid_tbl_len, port_cap_flags, max_msg_sz, bad_pkey_cntr, qkey_viol_cntr, pkey_tbl_len, lid, sm_lid, lmc, max_vl_num, sm_sl, subnet_timeout, init_type_reply, active_width, active_speed, phys_state, link_layer, flags, port_cap_flags2 }
            "struct ibv_device_attr" ibv_device_attr { fw_ver, node_guid, sys_image_guid, max_mr_size, page_size_cap, vendor_id, vendor_part_id, hw_ver, max_qp, max_qp_wr, device_cap_flags, max_sge, max_sge_rd, max_cq, max_cqe, max_mr, max_pd, max_qp_rd_atom, max_ee_rd_atom, max_res_rd_atom, max_qp_init_rd_atom, max_ee_init_rd_atom, atomic_cap, max_ee, max_rdd, max_mw, max_raw_ipv6_qp, max_raw_ethy_qp, max_mcast_grp, max_mcast_qp_attach, max_total_mcast_qp_attach, max_ah, max_fmr, max_map_per_fmr, max_srq, max_srq_wr, max_srq_sge, max_pkeys, local_ca_ack_delay, phys_port_cnt }
        };
        let mut c = String::from("#include <stddef.h>\n#include <stdio.h>\n#include <infiniband/verbs.h>\nint main(void) {\n");
        let mut want = String::new();
        for (ty, size, fields) in &table {
            writeln!(c, "printf(\"{ty} %zu\\n\", sizeof({ty}));").unwrap();
            writeln!(want, "{ty} {size}").unwrap();
            for (f, off) in fields {
                writeln!(c, "printf(\"{ty}.{f} %zu\\n\", offsetof({ty}, {f}));").unwrap();
                writeln!(want, "{ty}.{f} {off}").unwrap();
            }
        }
        c.push_str("return 0;\n}\n");
        let got = crate::testutil::compile_and_run_c("layout", &c);
        assert_eq!(got, want, "the Rust structures differ from verbs.h");
    }
}
