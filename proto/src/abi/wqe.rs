//! Work-queue entries: the 64-byte send WQE (SQ) and receive WQE (RQ).
//!
//! A ring of 2^n entries sits in host memory, 64-byte aligned. The host writes entry
//! `pi mod 2^n`, then (possibly after several entries) writes the free-running producer
//! index `pi` to the QP's doorbell. The device reads entries by DMA at `base + 64 * (i mod
//! 2^n)` and never writes them; an entry stays untouched by the host until a completion
//! with a `wqe_index` at or after it has been polled, so the device may read it again
//! (go-back-N retransmission re-reads the WQE and its payload).
//!
//! Send WQE layout (offsets in bytes, little-endian):
//!
//! ```text
//! 0x00 u64 wr_id           returned untouched in the completion
//! 0x08 u8  opcode          verbs::WrOpcode
//! 0x09 u8  flags           verbs::send_flags (SIGNALED, SOLICITED, INLINE, FENCE)
//! 0x0a u8  inline_len      payload bytes at 0x20 when INLINE (0..=32)
//! 0x0b u8  num_sge         0 or 1 (ignored when INLINE)
//! 0x0c u32 imm_or_inv      immediate data (…_WITH_IMM) or the rkey to invalidate (SEND_WITH_INV)
//! 0x10 u64 remote_addr     RDMA/atomic target virtual address
//! 0x18 u32 rkey            RDMA/atomic target key
//! 0x1c u32 reserved
//! 0x20 u64 compare_add     atomics: CMP_AND_SWP compare value / FETCH_AND_ADD addend
//! 0x28 u64 swap            atomics: CMP_AND_SWP swap value
//! 0x20 [u8; 32] inline     INLINE sends/writes (overlays compare_add, swap and the SGE)
//! 0x30 u64 sge.addr        local virtual address
//! 0x38 u32 sge.length
//! 0x3c u32 sge.lkey
//! ```
//!
//! Receive WQE layout:
//!
//! ```text
//! 0x00 u64 wr_id
//! 0x08 u8  num_sge         0 or 1
//! 0x09 ..0x10 reserved
//! 0x10 u64 sge.addr, 0x18 u32 sge.length, 0x1c u32 sge.lkey
//! 0x20 ..0x40 reserved (room for two more SGEs in a later ABI minor version)
//! ```

use super::verbs::WrOpcode;
use super::{get_u32, get_u64, put_u32, put_u64, DESC_SIZE};

/// Largest inline payload.
pub const MAX_INLINE: usize = 32;
/// SGEs per send WQE and per receive WQE in this ABI version.
pub const MAX_SEND_SGE: u8 = 1;
pub const MAX_RECV_SGE: u8 = 1;

/// Byte offsets of the send WQE's fields and, `RECV_*`, of the receive WQE's (the layouts
/// above); the RTL's WQE decoders take them from here.
pub mod field {
    pub const WR_ID: usize = 0x00;
    pub const OPCODE: usize = 0x08;
    pub const FLAGS: usize = 0x09;
    pub const INLINE_LEN: usize = 0x0a;
    pub const NUM_SGE: usize = 0x0b;
    pub const IMM: usize = 0x0c;
    pub const REMOTE_ADDR: usize = 0x10;
    pub const RKEY: usize = 0x18;
    pub const COMPARE_ADD: usize = 0x20;
    pub const SWAP: usize = 0x28;
    pub const INLINE: usize = 0x20;
    pub const SGE: usize = 0x30;
    pub const RECV_NUM_SGE: usize = 0x08;
    pub const RECV_SGE: usize = 0x10;
}

/// A scatter/gather element (`struct ibv_sge`): local virtual address, length, lkey.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sge {
    pub addr: u64,
    pub length: u32,
    pub lkey: u32,
}

impl Sge {
    fn read(b: &[u8], at: usize) -> Sge {
        Sge {
            addr: get_u64(b, at),
            length: get_u32(b, at + 8),
            lkey: get_u32(b, at + 12),
        }
    }
    fn write(&self, b: &mut [u8], at: usize) {
        put_u64(b, at, self.addr);
        put_u32(b, at + 8, self.length);
        put_u32(b, at + 12, self.lkey);
    }
}

/// A send WQE as plain values. `from_bytes` never fails: a device validates the decoded
/// values (unknown opcode, too many SGEs, inline too long) and completes a bad WQE with
/// `LOC_QP_OP_ERR`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendWqe {
    pub wr_id: u64,
    pub opcode: WrOpcode,
    pub flags: u8,
    pub inline_len: u8,
    pub num_sge: u8,
    pub imm_or_inv: u32,
    pub remote_addr: u64,
    pub rkey: u32,
    pub compare_add: u64,
    pub swap: u64,
    pub sge: Sge,
    pub inline: [u8; MAX_INLINE],
}

impl Default for SendWqe {
    fn default() -> Self {
        SendWqe {
            wr_id: 0,
            opcode: WrOpcode::Send,
            flags: 0,
            inline_len: 0,
            num_sge: 0,
            imm_or_inv: 0,
            remote_addr: 0,
            rkey: 0,
            compare_add: 0,
            swap: 0,
            sge: Sge::default(),
            inline: [0; MAX_INLINE],
        }
    }
}

impl SendWqe {
    /// Whether the payload is inline.
    pub fn is_inline(&self) -> bool {
        self.flags & super::verbs::send_flags::INLINE != 0
    }

    /// The message length: inline bytes, the SGE's length, or 0 without an SGE; 8 for atomics.
    pub fn length(&self) -> u32 {
        if self.opcode.is_atomic() {
            8
        } else if self.is_inline() {
            self.inline_len as u32
        } else if self.num_sge == 0 {
            0
        } else {
            self.sge.length
        }
    }

    pub fn to_bytes(&self) -> [u8; DESC_SIZE] {
        let mut b = [0u8; DESC_SIZE];
        put_u64(&mut b, field::WR_ID, self.wr_id);
        b[field::OPCODE] = self.opcode.into();
        b[field::FLAGS] = self.flags;
        b[field::INLINE_LEN] = self.inline_len;
        b[field::NUM_SGE] = self.num_sge;
        put_u32(&mut b, field::IMM, self.imm_or_inv);
        put_u64(&mut b, field::REMOTE_ADDR, self.remote_addr);
        put_u32(&mut b, field::RKEY, self.rkey);
        if self.is_inline() {
            b[field::INLINE..field::INLINE + MAX_INLINE].copy_from_slice(&self.inline);
        } else {
            put_u64(&mut b, field::COMPARE_ADD, self.compare_add);
            put_u64(&mut b, field::SWAP, self.swap);
            self.sge.write(&mut b, field::SGE);
        }
        b
    }

    pub fn from_bytes(b: &[u8; DESC_SIZE]) -> SendWqe {
        let mut w = SendWqe {
            wr_id: get_u64(b, field::WR_ID),
            opcode: WrOpcode::from(b[field::OPCODE]),
            flags: b[field::FLAGS],
            inline_len: b[field::INLINE_LEN],
            num_sge: b[field::NUM_SGE],
            imm_or_inv: get_u32(b, field::IMM),
            remote_addr: get_u64(b, field::REMOTE_ADDR),
            rkey: get_u32(b, field::RKEY),
            ..SendWqe::default()
        };
        if w.is_inline() {
            w.inline
                .copy_from_slice(&b[field::INLINE..field::INLINE + MAX_INLINE]);
        } else {
            w.compare_add = get_u64(b, field::COMPARE_ADD);
            w.swap = get_u64(b, field::SWAP);
            w.sge = Sge::read(b, field::SGE);
        }
        w
    }
}

/// A receive WQE as plain values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RecvWqe {
    pub wr_id: u64,
    pub num_sge: u8,
    pub sge: Sge,
}

impl RecvWqe {
    /// The buffer length (0 without an SGE).
    pub fn length(&self) -> u32 {
        if self.num_sge == 0 {
            0
        } else {
            self.sge.length
        }
    }

    pub fn to_bytes(&self) -> [u8; DESC_SIZE] {
        let mut b = [0u8; DESC_SIZE];
        put_u64(&mut b, field::WR_ID, self.wr_id);
        b[field::RECV_NUM_SGE] = self.num_sge;
        self.sge.write(&mut b, field::RECV_SGE);
        b
    }

    pub fn from_bytes(b: &[u8; DESC_SIZE]) -> RecvWqe {
        RecvWqe {
            wr_id: get_u64(b, field::WR_ID),
            num_sge: b[field::RECV_NUM_SGE],
            sge: Sge::read(b, field::RECV_SGE),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::verbs::send_flags;

    #[test]
    fn send_wqe_bytes() {
        let w = SendWqe {
            wr_id: 0x1122_3344_5566_7788,
            opcode: WrOpcode::AtomicCmpAndSwp,
            flags: send_flags::SIGNALED,
            num_sge: 1,
            remote_addr: 0x7f00_0000_0008,
            rkey: 0x0000_0503,
            compare_add: 1,
            swap: 2,
            sge: Sge {
                addr: 0x7f00_0000_1000,
                length: 8,
                lkey: 0x0000_0401,
            },
            ..SendWqe::default()
        };
        let b = w.to_bytes();
        assert_eq!(&b[0..8], &0x1122_3344_5566_7788u64.to_le_bytes());
        assert_eq!(b[8], 5);
        assert_eq!(b[9], 1);
        assert_eq!(&b[0x18..0x1c], &0x503u32.to_le_bytes());
        assert_eq!(&b[0x38..0x3c], &8u32.to_le_bytes());
        assert_eq!(SendWqe::from_bytes(&b), w);
        assert_eq!(w.length(), 8);
    }

    #[test]
    fn inline_overlays_sge() {
        let mut w = SendWqe {
            opcode: WrOpcode::Send,
            flags: send_flags::INLINE,
            inline_len: 5,
            ..SendWqe::default()
        };
        w.inline[..5].copy_from_slice(b"hello");
        let b = w.to_bytes();
        assert_eq!(&b[0x20..0x25], b"hello");
        assert_eq!(SendWqe::from_bytes(&b), w);
        assert_eq!(w.length(), 5);
    }

    #[test]
    fn recv_wqe_round_trip() {
        let r = RecvWqe {
            wr_id: 42,
            num_sge: 1,
            sge: Sge {
                addr: 0x7f00_0000_2000,
                length: 4096,
                lkey: 0x201,
            },
        };
        let b = r.to_bytes();
        assert_eq!(b[8], 1);
        assert_eq!(&b[0x10..0x18], &0x7f00_0000_2000u64.to_le_bytes());
        assert_eq!(RecvWqe::from_bytes(&b), r);
    }

    #[test]
    fn unknown_opcode_decodes() {
        let mut b = [0u8; DESC_SIZE];
        b[8] = 200;
        assert_eq!(SendWqe::from_bytes(&b).opcode, WrOpcode::Unknown(200));
    }
}
