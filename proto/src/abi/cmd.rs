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

/// Where a command argument sits: `width` bits from bit `bit` of word `word`. A 64-bit
/// value takes word `word` (low half) and the next. Read as one little-endian vector of the
/// 16 words (word 0's bit 0 first), the field starts at [`offset`](Self::offset): how the
/// RTL slices it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArgField {
    pub word: usize,
    pub bit: usize,
    pub width: usize,
}

impl ArgField {
    /// A whole word.
    pub const fn word(word: usize) -> ArgField {
        ArgField::bits(word, 0, 32)
    }

    /// A 64-bit value: word `word` and the next.
    pub const fn dword(word: usize) -> ArgField {
        ArgField::bits(word, 0, 64)
    }

    pub const fn bits(word: usize, bit: usize, width: usize) -> ArgField {
        let in_word = width > 0 && bit + width <= 32 && word < 16;
        assert!(in_word || bit == 0 && width == 64 && word < 15);
        ArgField { word, bit, width }
    }

    /// The field's first bit in the arguments as one vector.
    pub const fn offset(self) -> usize {
        self.word * 32 + self.bit
    }

    const fn mask(self) -> u64 {
        u64::MAX >> (64 - self.width)
    }

    pub fn get(self, a: &Args) -> u64 {
        let mut v = u64::from(a[self.word]) >> self.bit;
        if self.width > 32 {
            v |= u64::from(a[self.word + 1]) << 32;
        }
        v & self.mask()
    }

    /// Sets the field to `v` (bits above its width are dropped), leaving the rest.
    pub fn set(self, a: &mut Args, v: u64) {
        let v = (v & self.mask()) << self.bit;
        let keep = !(self.mask() << self.bit);
        a[self.word] = (u64::from(a[self.word]) & keep | v) as u32;
        if self.width > 32 {
            a[self.word + 1] = (v >> 32) as u32;
        }
    }
}

/// Builds a command's argument words from `(field, value)` pairs.
fn args<const N: usize>(fields: [(ArgField, u64); N]) -> Args {
    let mut a = [0; 16];
    for (f, v) in fields {
        f.set(&mut a, v);
    }
    a
}

/// CREATE_PD / DESTROY_PD: word 0 = PDN.
pub mod pd_arg {
    use super::ArgField;
    pub const PDN: ArgField = ArgField::word(0);
}

/// The arguments of CREATE_PD and DESTROY_PD ([`pd_arg`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PdArgs {
    pub pdn: u32,
}

impl PdArgs {
    pub fn to_args(&self) -> Args {
        args([(pd_arg::PDN, self.pdn.into())])
    }
    pub fn from_args(a: &Args) -> Self {
        PdArgs {
            pdn: pd_arg::PDN.get(a) as u32,
        }
    }
}

/// CREATE_CQ: word 0 = CQN, 1 = log2 of the entry count, 2/3 = ring IOVA (lo/hi).
/// The ring must be 64-byte aligned, zeroed by the host (phase 0 = not yet written).
/// DESTROY_CQ uses word 0 only.
pub mod cq_arg {
    use super::ArgField;
    pub const CQN: ArgField = ArgField::word(0);
    pub const LOG_SIZE: ArgField = ArgField::word(1);
    pub const RING_IOVA: ArgField = ArgField::dword(2);
}

/// The arguments of CREATE_CQ ([`cq_arg`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CqArgs {
    pub cqn: u32,
    pub log_size: u32,
    pub ring_iova: u64,
}

impl CqArgs {
    pub fn to_args(&self) -> Args {
        args([
            (cq_arg::CQN, self.cqn.into()),
            (cq_arg::LOG_SIZE, self.log_size.into()),
            (cq_arg::RING_IOVA, self.ring_iova),
        ])
    }
    pub fn from_args(a: &Args) -> Self {
        CqArgs {
            cqn: cq_arg::CQN.get(a) as u32,
            log_size: cq_arg::LOG_SIZE.get(a) as u32,
            ring_iova: cq_arg::RING_IOVA.get(a),
        }
    }
}

/// The key of MR `index` with generation `tag`: lkey = rkey = index << 8 | tag. The tag lets
/// the host re-register an index without old keys working again.
pub const fn mr_key(index: u32, tag: u8) -> u32 {
    index << 8 | tag as u32
}

/// The MR index a key names.
pub const fn mr_index(key: u32) -> u32 {
    key >> 8
}

/// REG_MR: word 0 = MR index, 1 = key (must equal `mr_key(index, tag)`), 2 = PDN,
/// 3 = access flags (`verbs::access`), 4/5 = virtual base, 6/7 = IOVA base, 8/9 = length.
/// The region [IOVA base, +length) must be mapped by the IOMMU; the device turns a
/// virtual address `va` inside [virtual base, +length) into `iova_base + (va - va_base)`.
/// DEREG_MR uses word 0 only.
pub mod mr_arg {
    use super::ArgField;
    pub const INDEX: ArgField = ArgField::word(0);
    pub const KEY: ArgField = ArgField::word(1);
    pub const PDN: ArgField = ArgField::word(2);
    pub const ACCESS: ArgField = ArgField::word(3);
    pub const VA: ArgField = ArgField::dword(4);
    pub const IOVA: ArgField = ArgField::dword(6);
    pub const LENGTH: ArgField = ArgField::dword(8);
}

/// The arguments of REG_MR ([`mr_arg`]).
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
        use mr_arg as f;
        args([
            (f::INDEX, self.index.into()),
            (f::KEY, self.key.into()),
            (f::PDN, self.pdn.into()),
            (f::ACCESS, self.access.into()),
            (f::VA, self.va),
            (f::IOVA, self.iova),
            (f::LENGTH, self.length),
        ])
    }
    pub fn from_args(a: &Args) -> Self {
        use mr_arg as f;
        MrArgs {
            index: f::INDEX.get(a) as u32,
            key: f::KEY.get(a) as u32,
            pdn: f::PDN.get(a) as u32,
            access: f::ACCESS.get(a) as u32,
            va: f::VA.get(a),
            iova: f::IOVA.get(a),
            length: f::LENGTH.get(a),
        }
    }
}

/// CREATE_QP: word 0 = QPN, 1 = PDN, 2 = send CQN, 3 = receive CQN, 4/5 = SQ ring IOVA,
/// 6 = SQ log2 entries, 7/8 = RQ ring IOVA, 9 = RQ log2 entries. The QP starts in RESET.
/// DESTROY_QP and QUERY_QP use word 0 only.
pub mod create_qp_arg {
    use super::ArgField;
    pub const QPN: ArgField = ArgField::word(0);
    pub const PDN: ArgField = ArgField::word(1);
    pub const SEND_CQN: ArgField = ArgField::word(2);
    pub const RECV_CQN: ArgField = ArgField::word(3);
    pub const SQ_IOVA: ArgField = ArgField::dword(4);
    pub const SQ_LOG_SIZE: ArgField = ArgField::word(6);
    pub const RQ_IOVA: ArgField = ArgField::dword(7);
    pub const RQ_LOG_SIZE: ArgField = ArgField::word(9);
}

/// The arguments of CREATE_QP ([`create_qp_arg`]).
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
        use create_qp_arg as f;
        args([
            (f::QPN, self.qpn.into()),
            (f::PDN, self.pdn.into()),
            (f::SEND_CQN, self.send_cqn.into()),
            (f::RECV_CQN, self.recv_cqn.into()),
            (f::SQ_IOVA, self.sq_iova),
            (f::SQ_LOG_SIZE, self.sq_log_size.into()),
            (f::RQ_IOVA, self.rq_iova),
            (f::RQ_LOG_SIZE, self.rq_log_size.into()),
        ])
    }
    pub fn from_args(a: &Args) -> Self {
        use create_qp_arg as f;
        CreateQpArgs {
            qpn: f::QPN.get(a) as u32,
            pdn: f::PDN.get(a) as u32,
            send_cqn: f::SEND_CQN.get(a) as u32,
            recv_cqn: f::RECV_CQN.get(a) as u32,
            sq_iova: f::SQ_IOVA.get(a),
            sq_log_size: f::SQ_LOG_SIZE.get(a) as u32,
            rq_iova: f::RQ_IOVA.get(a),
            rq_log_size: f::RQ_LOG_SIZE.get(a) as u32,
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
pub mod modify_qp_arg {
    use super::ArgField;
    pub const QPN: ArgField = ArgField::word(0);
    /// The attributes set ([`qp_attr`](super::qp_attr)).
    pub const MASK: ArgField = ArgField::word(1);
    pub const STATE: ArgField = ArgField::word(2);
    pub const PATH_MTU: ArgField = ArgField::word(3);
    pub const DEST_QPN: ArgField = ArgField::word(4);
    pub const RQ_PSN: ArgField = ArgField::word(5);
    pub const SQ_PSN: ArgField = ArgField::word(6);
    pub const MAC_LO: ArgField = ArgField::word(7);
    pub const MAC_HI: ArgField = ArgField::word(8);
    pub const DEST_IP: ArgField = ArgField::word(9);
    pub const ACCESS: ArgField = ArgField::word(10);
    pub const TIMEOUT: ArgField = ArgField::bits(11, 0, 5);
    pub const RETRY_CNT: ArgField = ArgField::bits(11, 8, 3);
    pub const RNR_RETRY: ArgField = ArgField::bits(11, 16, 3);
    pub const MIN_RNR_TIMER: ArgField = ArgField::bits(11, 24, 5);
    pub const MAX_RD_ATOMIC: ArgField = ArgField::bits(12, 0, 8);
    pub const MAX_DEST_RD_ATOMIC: ArgField = ArgField::bits(12, 8, 8);
    pub const UDP_SPORT: ArgField = ArgField::bits(13, 0, 16);
}

/// The arguments of MODIFY_QP ([`modify_qp_arg`]).
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
        use modify_qp_arg as f;
        let (mac_hi, mac_lo) = super::regs::mac_to_regs(self.dest_mac);
        args([
            (f::QPN, self.qpn.into()),
            (f::MASK, self.mask.into()),
            (f::STATE, self.state.into()),
            (f::PATH_MTU, self.path_mtu.into()),
            (f::DEST_QPN, self.dest_qpn.into()),
            (f::RQ_PSN, self.rq_psn.into()),
            (f::SQ_PSN, self.sq_psn.into()),
            (f::MAC_LO, mac_lo.into()),
            (f::MAC_HI, mac_hi.into()),
            (f::DEST_IP, u32::from_be_bytes(self.dest_ip).into()),
            (f::ACCESS, self.access.into()),
            (f::TIMEOUT, self.timeout.into()),
            (f::RETRY_CNT, self.retry_cnt.into()),
            (f::RNR_RETRY, self.rnr_retry.into()),
            (f::MIN_RNR_TIMER, self.min_rnr_timer.into()),
            (f::MAX_RD_ATOMIC, self.max_rd_atomic.into()),
            (f::MAX_DEST_RD_ATOMIC, self.max_dest_rd_atomic.into()),
            (f::UDP_SPORT, self.udp_sport.into()),
        ])
    }
    pub fn from_args(a: &Args) -> Self {
        use modify_qp_arg as f;
        ModifyQpArgs {
            qpn: f::QPN.get(a) as u32,
            mask: f::MASK.get(a) as u32,
            state: f::STATE.get(a) as u8,
            path_mtu: f::PATH_MTU.get(a) as u8,
            dest_qpn: f::DEST_QPN.get(a) as u32,
            rq_psn: f::RQ_PSN.get(a) as u32,
            sq_psn: f::SQ_PSN.get(a) as u32,
            dest_mac: super::regs::mac_from_regs(f::MAC_HI.get(a) as u32, f::MAC_LO.get(a) as u32),
            dest_ip: (f::DEST_IP.get(a) as u32).to_be_bytes(),
            access: f::ACCESS.get(a) as u32,
            timeout: f::TIMEOUT.get(a) as u8,
            retry_cnt: f::RETRY_CNT.get(a) as u8,
            rnr_retry: f::RNR_RETRY.get(a) as u8,
            min_rnr_timer: f::MIN_RNR_TIMER.get(a) as u8,
            max_rd_atomic: f::MAX_RD_ATOMIC.get(a) as u8,
            max_dest_rd_atomic: f::MAX_DEST_RD_ATOMIC.get(a) as u8,
            udp_sport: f::UDP_SPORT.get(a) as u16,
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
pub mod qp_counters_arg {
    use super::ArgField;
    pub const QPN: ArgField = ArgField::word(0);
    pub const IOVA: ArgField = ArgField::dword(1);
}

/// The arguments of QUERY_QP_COUNTERS ([`qp_counters_arg`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QpCountersArgs {
    pub qpn: u32,
    pub iova: u64,
}

impl QpCountersArgs {
    pub fn to_args(&self) -> Args {
        args([
            (qp_counters_arg::QPN, self.qpn.into()),
            (qp_counters_arg::IOVA, self.iova),
        ])
    }
    pub fn from_args(a: &Args) -> Self {
        QpCountersArgs {
            qpn: qp_counters_arg::QPN.get(a) as u32,
            iova: qp_counters_arg::IOVA.get(a),
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

    /// A command's fields never share a bit, and each reads back what was set.
    #[test]
    fn arg_fields_are_disjoint() {
        use modify_qp_arg as m;
        let commands: [&[ArgField]; 6] = [
            &[pd_arg::PDN],
            &[qp_counters_arg::QPN, qp_counters_arg::IOVA],
            &[cq_arg::CQN, cq_arg::LOG_SIZE, cq_arg::RING_IOVA],
            &[
                mr_arg::INDEX,
                mr_arg::KEY,
                mr_arg::PDN,
                mr_arg::ACCESS,
                mr_arg::VA,
                mr_arg::IOVA,
                mr_arg::LENGTH,
            ],
            &[
                create_qp_arg::QPN,
                create_qp_arg::PDN,
                create_qp_arg::SEND_CQN,
                create_qp_arg::RECV_CQN,
                create_qp_arg::SQ_IOVA,
                create_qp_arg::SQ_LOG_SIZE,
                create_qp_arg::RQ_IOVA,
                create_qp_arg::RQ_LOG_SIZE,
            ],
            &[
                m::QPN,
                m::MASK,
                m::STATE,
                m::PATH_MTU,
                m::DEST_QPN,
                m::RQ_PSN,
                m::SQ_PSN,
                m::MAC_LO,
                m::MAC_HI,
                m::DEST_IP,
                m::ACCESS,
                m::TIMEOUT,
                m::RETRY_CNT,
                m::RNR_RETRY,
                m::MIN_RNR_TIMER,
                m::MAX_RD_ATOMIC,
                m::MAX_DEST_RD_ATOMIC,
                m::UDP_SPORT,
            ],
        ];
        for fields in commands {
            let mut a = [0; 16];
            for (i, f) in fields.iter().enumerate() {
                let before = a;
                f.set(&mut a, u64::MAX);
                assert_eq!(f.get(&before), 0, "field {i} overlaps an earlier one");
                assert_eq!(f.get(&a), u64::MAX >> (64 - f.width));
            }
            let bits: u32 = a.iter().map(|w| w.count_ones()).sum();
            let widths: usize = fields.iter().map(|f| f.width).sum();
            assert_eq!(bits as usize, widths);
        }
        assert_eq!(m::RETRY_CNT.offset(), 11 * 32 + 8);
    }
}
