//! The command interface: how the host creates, modifies, queries and destroys device
//! objects through the BAR0 mailbox.
//!
//! Protocol: wait until `CMD_STATUS` is not busy; write the argument words
//! (`regs::cmd_arg(i)`); write the opcode to `CMD_OPCODE`; poll `CMD_STATUS` until the busy
//! bit clears (a driver gives up after a timeout); read the status in bits 7:0 and, on
//! success, the result words (`regs::cmd_out(i)`). Argument words not named by a command
//! are ignored. Object numbers (PDN, CQN, MR index, QPN) are chosen by the host.
//!
//! Each command's arguments are a struct here with `to_args`/`from_args`, so the word
//! layout is written once.

use super::verbs::{numbered_enum, Mtu, QpState};
use core::fmt;

numbered_enum! {
    /// Command opcodes, written to `CMD_OPCODE`.
    CmdOpcode: u32 {
        Nop = 0 => "NOP",
        CreatePd = 1 => "CREATE_PD",
        DestroyPd = 2 => "DESTROY_PD",
        CreateCq = 3 => "CREATE_CQ",
        DestroyCq = 4 => "DESTROY_CQ",
        RegMr = 5 => "REG_MR",
        DeregMr = 6 => "DEREG_MR",
        CreateQp = 7 => "CREATE_QP",
        ModifyQp = 8 => "MODIFY_QP",
        QueryQp = 9 => "QUERY_QP",
        DestroyQp = 10 => "DESTROY_QP",
        QueryQpCounters = 11 => "QUERY_QP_COUNTERS",
    }
}

numbered_enum! {
    /// Command completion status, bits 7:0 of `CMD_STATUS`.
    CmdStatus: u32 {
        Ok = 0 => "OK",
        BadOpcode = 1 => "BAD_OPCODE",
        /// An object number is outside the device's table.
        BadIndex = 2 => "BAD_INDEX",
        /// Create on an object that exists, or destroy of one still referenced.
        InUse = 3 => "IN_USE",
        /// The object named does not exist.
        NotFound = 4 => "NOT_FOUND",
        /// An argument is out of range or a required attribute is missing.
        BadParam = 5 => "BAD_PARAM",
        /// The QP state transition is not allowed.
        BadState = 6 => "BAD_STATE",
        /// A DMA access of the command (e.g. writing counters) faulted.
        DmaFault = 7 => "DMA_FAULT",
    }
}

/// Arguments are 16 words; results are 8.
pub type Args = [u32; 16];
pub type Outs = [u32; 8];

fn lo(v: u64) -> u32 {
    v as u32
}
fn hi(v: u64) -> u32 {
    (v >> 32) as u32
}
fn join(lo: u32, hi: u32) -> u64 {
    (hi as u64) << 32 | lo as u64
}

/// CREATE_PD / DESTROY_PD: word 0 = PDN.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PdArgs {
    pub pdn: u32,
}

impl PdArgs {
    pub fn to_args(&self) -> Args {
        let mut a = [0; 16];
        a[0] = self.pdn;
        a
    }
    pub fn from_args(a: &Args) -> Self {
        PdArgs { pdn: a[0] }
    }
}

/// CREATE_CQ: word 0 = CQN, 1 = log2 of the entry count, 2/3 = ring IOVA (lo/hi).
/// The ring must be 64-byte aligned, zeroed by the host (phase 0 = not yet written).
/// DESTROY_CQ uses word 0 only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CqArgs {
    pub cqn: u32,
    pub log_size: u32,
    pub ring_iova: u64,
}

impl CqArgs {
    pub fn to_args(&self) -> Args {
        let mut a = [0; 16];
        a[0] = self.cqn;
        a[1] = self.log_size;
        a[2] = lo(self.ring_iova);
        a[3] = hi(self.ring_iova);
        a
    }
    pub fn from_args(a: &Args) -> Self {
        CqArgs {
            cqn: a[0],
            log_size: a[1],
            ring_iova: join(a[2], a[3]),
        }
    }
}

/// The key of MR `index` with generation `tag`: lkey = rkey = index << 8 | tag. The tag lets
/// the host re-register an index without old keys working again.
pub fn mr_key(index: u32, tag: u8) -> u32 {
    index << 8 | tag as u32
}

/// The MR index a key names.
pub fn mr_index(key: u32) -> u32 {
    key >> 8
}

/// REG_MR: word 0 = MR index, 1 = key (must equal `mr_key(index, tag)`), 2 = PDN,
/// 3 = access flags (`verbs::access`), 4/5 = virtual base, 6/7 = IOVA base, 8/9 = length.
/// The region [IOVA base, +length) must be mapped by the IOMMU; the device turns a
/// virtual address `va` inside [virtual base, +length) into `iova_base + (va - va_base)`.
/// DEREG_MR uses word 0 only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MrArgs {
    pub index: u32,
    pub key: u32,
    pub pdn: u32,
    pub access: u32,
    pub va: u64,
    pub iova: u64,
    pub length: u64,
}

impl MrArgs {
    pub fn to_args(&self) -> Args {
        let mut a = [0; 16];
        a[0] = self.index;
        a[1] = self.key;
        a[2] = self.pdn;
        a[3] = self.access;
        a[4] = lo(self.va);
        a[5] = hi(self.va);
        a[6] = lo(self.iova);
        a[7] = hi(self.iova);
        a[8] = lo(self.length);
        a[9] = hi(self.length);
        a
    }
    pub fn from_args(a: &Args) -> Self {
        MrArgs {
            index: a[0],
            key: a[1],
            pdn: a[2],
            access: a[3],
            va: join(a[4], a[5]),
            iova: join(a[6], a[7]),
            length: join(a[8], a[9]),
        }
    }
}

/// CREATE_QP: word 0 = QPN, 1 = PDN, 2 = send CQN, 3 = receive CQN, 4/5 = SQ ring IOVA,
/// 6 = SQ log2 entries, 7/8 = RQ ring IOVA, 9 = RQ log2 entries. The QP starts in RESET.
/// DESTROY_QP and QUERY_QP use word 0 only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CreateQpArgs {
    pub qpn: u32,
    pub pdn: u32,
    pub send_cqn: u32,
    pub recv_cqn: u32,
    pub sq_iova: u64,
    pub sq_log_size: u32,
    pub rq_iova: u64,
    pub rq_log_size: u32,
}

impl CreateQpArgs {
    pub fn to_args(&self) -> Args {
        let mut a = [0; 16];
        a[0] = self.qpn;
        a[1] = self.pdn;
        a[2] = self.send_cqn;
        a[3] = self.recv_cqn;
        a[4] = lo(self.sq_iova);
        a[5] = hi(self.sq_iova);
        a[6] = self.sq_log_size;
        a[7] = lo(self.rq_iova);
        a[8] = hi(self.rq_iova);
        a[9] = self.rq_log_size;
        a
    }
    pub fn from_args(a: &Args) -> Self {
        CreateQpArgs {
            qpn: a[0],
            pdn: a[1],
            send_cqn: a[2],
            recv_cqn: a[3],
            sq_iova: join(a[4], a[5]),
            sq_log_size: a[6],
            rq_iova: join(a[7], a[8]),
            rq_log_size: a[9],
        }
    }
}

/// Which attributes a MODIFY_QP sets (`enum ibv_qp_attr_mask`, same bit values).
pub mod qp_attr {
    pub const STATE: u32 = 1 << 0;
    pub const ACCESS_FLAGS: u32 = 1 << 3;
    /// Address vector: destination MAC, destination IPv4, UDP source port.
    pub const AV: u32 = 1 << 7;
    pub const PATH_MTU: u32 = 1 << 8;
    pub const TIMEOUT: u32 = 1 << 9;
    pub const RETRY_CNT: u32 = 1 << 10;
    pub const RNR_RETRY: u32 = 1 << 11;
    pub const RQ_PSN: u32 = 1 << 12;
    pub const MAX_QP_RD_ATOMIC: u32 = 1 << 13;
    pub const MIN_RNR_TIMER: u32 = 1 << 15;
    pub const SQ_PSN: u32 = 1 << 16;
    pub const MAX_DEST_RD_ATOMIC: u32 = 1 << 17;
    pub const DEST_QPN: u32 = 1 << 20;
    /// Every bit the device knows; others are refused with BAD_PARAM.
    pub const ALL: u32 = STATE
        | ACCESS_FLAGS
        | AV
        | PATH_MTU
        | TIMEOUT
        | RETRY_CNT
        | RNR_RETRY
        | RQ_PSN
        | MAX_QP_RD_ATOMIC
        | MIN_RNR_TIMER
        | SQ_PSN
        | MAX_DEST_RD_ATOMIC
        | DEST_QPN;
    /// Required for RESET -> INIT.
    pub const REQ_INIT: u32 = STATE;
    /// Required for INIT -> RTR (as ibverbs requires for RC).
    pub const REQ_RTR: u32 =
        STATE | AV | PATH_MTU | DEST_QPN | RQ_PSN | MAX_DEST_RD_ATOMIC | MIN_RNR_TIMER;
    /// Required for RTR -> RTS.
    pub const REQ_RTS: u32 = STATE | SQ_PSN | TIMEOUT | RETRY_CNT | RNR_RETRY | MAX_QP_RD_ATOMIC;
}

/// The attributes of MODIFY_QP (`struct ibv_qp_attr`, the RC subset). Only the fields named
/// by `mask` are applied.
///
/// Words: 0 = QPN, 1 = mask, 2 = state, 3 = path MTU (ibv_mtu code), 4 = dest QPN,
/// 5 = RQ PSN, 6 = SQ PSN, 7 = dest MAC bytes 2..6 (as `regs::MAC_LO`), 8 = dest MAC bytes
/// 0..2 (as `regs::MAC_HI`), 9 = dest IPv4 (big-endian packed), 10 = access flags,
/// 11 = timeout (bits 4:0) | retry_cnt (10:8) | rnr_retry (18:16) | min_rnr_timer (28:24),
/// 12 = max_rd_atomic (7:0) | max_dest_rd_atomic (15:8), 13 = UDP source port (15:0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ModifyQpArgs {
    pub qpn: u32,
    pub mask: u32,
    pub state: u8,
    pub path_mtu: u8,
    pub dest_qpn: u32,
    pub rq_psn: u32,
    pub sq_psn: u32,
    pub dest_mac: [u8; 6],
    pub dest_ip: [u8; 4],
    pub access: u32,
    pub timeout: u8,
    pub retry_cnt: u8,
    pub rnr_retry: u8,
    pub min_rnr_timer: u8,
    pub max_rd_atomic: u8,
    pub max_dest_rd_atomic: u8,
    pub udp_sport: u16,
}

impl ModifyQpArgs {
    pub fn to_args(&self) -> Args {
        let mut a = [0; 16];
        let (mac_hi, mac_lo) = super::regs::mac_to_regs(self.dest_mac);
        a[0] = self.qpn;
        a[1] = self.mask;
        a[2] = self.state as u32;
        a[3] = self.path_mtu as u32;
        a[4] = self.dest_qpn;
        a[5] = self.rq_psn;
        a[6] = self.sq_psn;
        a[7] = mac_lo;
        a[8] = mac_hi;
        a[9] = u32::from_be_bytes(self.dest_ip);
        a[10] = self.access;
        a[11] = (self.timeout as u32 & 0x1f)
            | (self.retry_cnt as u32 & 7) << 8
            | (self.rnr_retry as u32 & 7) << 16
            | (self.min_rnr_timer as u32 & 0x1f) << 24;
        a[12] = self.max_rd_atomic as u32 | (self.max_dest_rd_atomic as u32) << 8;
        a[13] = self.udp_sport as u32;
        a
    }
    pub fn from_args(a: &Args) -> Self {
        ModifyQpArgs {
            qpn: a[0],
            mask: a[1],
            state: a[2] as u8,
            path_mtu: a[3] as u8,
            dest_qpn: a[4],
            rq_psn: a[5],
            sq_psn: a[6],
            dest_mac: super::regs::mac_from_regs(a[8], a[7]),
            dest_ip: a[9].to_be_bytes(),
            access: a[10],
            timeout: (a[11] & 0x1f) as u8,
            retry_cnt: (a[11] >> 8 & 7) as u8,
            rnr_retry: (a[11] >> 16 & 7) as u8,
            min_rnr_timer: (a[11] >> 24 & 0x1f) as u8,
            max_rd_atomic: a[12] as u8,
            max_dest_rd_atomic: (a[12] >> 8) as u8,
            udp_sport: a[13] as u16,
        }
    }
    /// The path MTU, if the code is valid.
    pub fn mtu(&self) -> Option<Mtu> {
        Mtu::from_code(self.path_mtu as u32)
    }
}

/// QUERY_QP results: 0 = state, 1 = next SQ PSN, 2 = expected RQ PSN, 3 = dest QPN,
/// 4 = SQ consumer index, 5 = RQ consumer index, 6 = path MTU code, 7 = access flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryQpOut {
    pub state: QpState,
    pub sq_psn: u32,
    pub rq_psn: u32,
    pub dest_qpn: u32,
    pub sq_ci: u32,
    pub rq_ci: u32,
    pub path_mtu: u8,
    pub access: u32,
}

impl QueryQpOut {
    pub fn to_outs(&self) -> Outs {
        [
            u8::from(self.state) as u32,
            self.sq_psn,
            self.rq_psn,
            self.dest_qpn,
            self.sq_ci,
            self.rq_ci,
            self.path_mtu as u32,
            self.access,
        ]
    }
    pub fn from_outs(o: &Outs) -> Self {
        QueryQpOut {
            state: QpState::from(o[0] as u8),
            sq_psn: o[1],
            rq_psn: o[2],
            dest_qpn: o[3],
            sq_ci: o[4],
            rq_ci: o[5],
            path_mtu: o[6] as u8,
            access: o[7],
        }
    }
}

/// QUERY_QP_COUNTERS: word 0 = QPN, 1/2 = IOVA of a 128-byte buffer into which the device
/// writes the QP's counters as 16 little-endian u64 in `regs::Counter` order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QpCountersArgs {
    pub qpn: u32,
    pub iova: u64,
}

impl QpCountersArgs {
    pub fn to_args(&self) -> Args {
        let mut a = [0; 16];
        a[0] = self.qpn;
        a[1] = lo(self.iova);
        a[2] = hi(self.iova);
        a
    }
    pub fn from_args(a: &Args) -> Self {
        QpCountersArgs {
            qpn: a[0],
            iova: join(a[1], a[2]),
        }
    }
}

impl fmt::Display for ModifyQpArgs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "MODIFY_QP qpn={} mask={:#x} state={}",
            self.qpn,
            self.mask,
            QpState::from(self.state)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modify_round_trip() {
        let m = ModifyQpArgs {
            qpn: 7,
            mask: qp_attr::REQ_RTR,
            state: 2,
            path_mtu: 3,
            dest_qpn: 0x12_3456,
            rq_psn: 0xff_fffe,
            sq_psn: 1,
            dest_mac: [2, 0, 0, 0, 0, 9],
            dest_ip: [10, 0, 0, 2],
            access: 0xf,
            timeout: 14,
            retry_cnt: 7,
            rnr_retry: 6,
            min_rnr_timer: 12,
            max_rd_atomic: 16,
            max_dest_rd_atomic: 8,
            udp_sport: 0xc000,
        };
        assert_eq!(ModifyQpArgs::from_args(&m.to_args()), m);
        assert_eq!(m.mtu(), Some(Mtu::Mtu1024));
    }

    #[test]
    fn other_round_trips() {
        let mr = MrArgs {
            index: 5,
            key: mr_key(5, 3),
            pdn: 1,
            access: 6,
            va: 0x7f00_0000_1000,
            iova: 0x1_0000_2000,
            length: 1 << 33,
        };
        assert_eq!(MrArgs::from_args(&mr.to_args()), mr);
        assert_eq!(mr_index(mr.key), 5);
        let qp = CreateQpArgs {
            qpn: 9,
            pdn: 1,
            send_cqn: 2,
            recv_cqn: 3,
            sq_iova: 0x1_0000_0000,
            sq_log_size: 8,
            rq_iova: 0x2_0000_0000,
            rq_log_size: 7,
        };
        assert_eq!(CreateQpArgs::from_args(&qp.to_args()), qp);
        let cq = CqArgs {
            cqn: 4,
            log_size: 10,
            ring_iova: 0xdead_beef_0000,
        };
        assert_eq!(CqArgs::from_args(&cq.to_args()), cq);
        let q = QueryQpOut {
            state: QpState::Rts,
            sq_psn: 1,
            rq_psn: 2,
            dest_qpn: 3,
            sq_ci: 4,
            rq_ci: 5,
            path_mtu: 5,
            access: 7,
        };
        assert_eq!(QueryQpOut::from_outs(&q.to_outs()), q);
    }
}
