//! The 64-byte completion queue entry and the phase rule that makes it safe to poll.
//!
//! ```text
//! 0x00 u64 wr_id
//! 0x08 u32 byte_len        bytes received (RECV), or the message length (requester)
//! 0x0c u32 imm_or_inv      immediate data (wc_flags WITH_IMM) or invalidated rkey (WITH_INV)
//! 0x10 u32 qp_num
//! 0x14 u32 src_qp          the remote QPN of the connection
//! 0x18 u32 wqe_index       free-running SQ/RQ index of the WQE this completes
//! 0x1c u8  opcode          verbs::WcOpcode
//! 0x1d u8  status          verbs::WcStatus
//! 0x1e u8  wc_flags        verbs::wc_flags
//! 0x1f u8  vendor_err      the AETH syndrome of a NAK that caused the error, else 0
//! 0x20 ..0x3f reserved (0)
//! 0x3f u8  owner           bit 0 = phase
//! ```
//!
//! Phase rule: the CQ has 2^n entries and is zeroed by the host before CREATE_CQ. The
//! device writes its k-th CQE (k counted from 0, free-running) into slot `k mod 2^n` with
//! phase `((k >> n) & 1) ^ 1`, as one 64-byte DMA write whose last byte is the owner byte.
//! The host, whose consumer index is `c`, owns slot `c mod 2^n` when its phase equals
//! `((c >> n) & 1) ^ 1`: on the first lap the device writes 1 over the zeroed ring, on the
//! second 0, and so on. The device never writes slot `k mod 2^n` while `k - c >= 2^n`
//! (by the consumer index the host last wrote to the CQ doorbell); it holds the completion
//! instead, so nothing is overwritten or lost.

use super::verbs::{WcOpcode, WcStatus};
use super::{get_u32, get_u64, put_u32, put_u64, DESC_SIZE};

/// Byte offsets of the CQE's fields (the layout above); the RTL's CQE encoder takes them
/// from here.
pub mod field {
    pub const WR_ID: usize = 0x00;
    pub const BYTE_LEN: usize = 0x08;
    pub const IMM: usize = 0x0c;
    pub const QP_NUM: usize = 0x10;
    pub const SRC_QP: usize = 0x14;
    pub const WQE_INDEX: usize = 0x18;
    pub const OPCODE: usize = 0x1c;
    pub const STATUS: usize = 0x1d;
    pub const WC_FLAGS: usize = 0x1e;
    pub const VENDOR_ERR: usize = 0x1f;
    pub const OWNER: usize = 0x3f;
}

/// The phase the `k`-th CQE of a CQ of `2^log_size` entries carries.
pub fn phase_of(k: u32, log_size: u32) -> u8 {
    (((k >> log_size) & 1) ^ 1) as u8
}

/// A completion as plain values (`struct ibv_wc` plus the ring bookkeeping).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cqe {
    pub wr_id: u64,
    pub byte_len: u32,
    pub imm_or_inv: u32,
    pub qp_num: u32,
    pub src_qp: u32,
    pub wqe_index: u32,
    pub opcode: WcOpcode,
    pub status: WcStatus,
    pub wc_flags: u8,
    pub vendor_err: u8,
    pub phase: u8,
}

impl Cqe {
    pub fn to_bytes(&self) -> [u8; DESC_SIZE] {
        let mut b = [0u8; DESC_SIZE];
        put_u64(&mut b, field::WR_ID, self.wr_id);
        put_u32(&mut b, field::BYTE_LEN, self.byte_len);
        put_u32(&mut b, field::IMM, self.imm_or_inv);
        put_u32(&mut b, field::QP_NUM, self.qp_num);
        put_u32(&mut b, field::SRC_QP, self.src_qp);
        put_u32(&mut b, field::WQE_INDEX, self.wqe_index);
        b[field::OPCODE] = self.opcode.into();
        b[field::STATUS] = self.status.into();
        b[field::WC_FLAGS] = self.wc_flags;
        b[field::VENDOR_ERR] = self.vendor_err;
        b[field::OWNER] = self.phase & 1;
        b
    }

    pub fn from_bytes(b: &[u8; DESC_SIZE]) -> Cqe {
        Cqe {
            wr_id: get_u64(b, field::WR_ID),
            byte_len: get_u32(b, field::BYTE_LEN),
            imm_or_inv: get_u32(b, field::IMM),
            qp_num: get_u32(b, field::QP_NUM),
            src_qp: get_u32(b, field::SRC_QP),
            wqe_index: get_u32(b, field::WQE_INDEX),
            opcode: WcOpcode::from(b[field::OPCODE]),
            status: WcStatus::from(b[field::STATUS]),
            wc_flags: b[field::WC_FLAGS],
            vendor_err: b[field::VENDOR_ERR],
            phase: b[field::OWNER] & 1,
        }
    }

    /// The phase byte alone, for a poll that reads one byte before the whole entry.
    pub const OWNER_OFFSET: usize = field::OWNER;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_owner_last() {
        let c = Cqe {
            wr_id: 7,
            byte_len: 4096,
            imm_or_inv: 0xdead_beef,
            qp_num: 2,
            src_qp: 3,
            wqe_index: 0x1_0000,
            opcode: WcOpcode::RecvRdmaWithImm,
            status: WcStatus::Success,
            wc_flags: 2,
            vendor_err: 0,
            phase: 1,
        };
        let b = c.to_bytes();
        assert_eq!(b[63], 1);
        assert_eq!(b[0x1c], 129);
        assert_eq!(Cqe::from_bytes(&b), c);
    }

    #[test]
    fn phase_alternates_per_lap() {
        // 4 entries: first lap phase 1, second lap 0, third 1.
        assert_eq!(phase_of(0, 2), 1);
        assert_eq!(phase_of(3, 2), 1);
        assert_eq!(phase_of(4, 2), 0);
        assert_eq!(phase_of(8, 2), 1);
        // a zeroed ring is never mistaken for a first-lap CQE
        assert_ne!(phase_of(0, 2), 0);
    }
}
