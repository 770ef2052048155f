//! `CqeBeat`: a completion's fields laid out as the 64-byte CQE of the host ABI
//! (`rocenic_proto::abi::cqe`), one 512-bit DMA beat, little-endian fields, owner byte last.
//!
//! Hand-written Verilog: RustHDL's `#[hdl_gen]` cannot place narrow fields into a wide
//! vector (no widening concatenation or slice assignment), and the layout is pure wiring.

use crate::prelude::*;
// The byte offsets are the host ABI's.
use rocenic_proto::abi::cqe::field::{
    BYTE_LEN, IMM, OPCODE, OWNER, QP_NUM, SRC_QP, STATUS, VENDOR_ERR, WC_FLAGS, WQE_INDEX, WR_ID,
};

/// Bytes of a CQE (`rocenic_proto::abi::DESC_SIZE`).
pub const CQE_BYTES: usize = rocenic_proto::abi::DESC_SIZE;
pub const CQE_BITS: usize = 8 * CQE_BYTES;

#[derive(LogicBlock, Default)]
pub struct CqeBeat {
    pub wr_id: Signal<In, Bits<64>>,
    pub byte_len: Signal<In, Bits<32>>,
    pub imm: Signal<In, Bits<32>>,
    /// QPNs are 24 bits; the CQE's 32-bit field has zero upper bits.
    pub qp_num: Signal<In, Bits<24>>,
    pub src_qp: Signal<In, Bits<24>>,
    pub wqe_index: Signal<In, Bits<32>>,
    pub opcode: Signal<In, Bits<8>>,
    pub status: Signal<In, Bits<8>>,
    pub wc_flags: Signal<In, Bits<8>>,
    pub vendor_err: Signal<In, Bits<8>>,
    pub phase: Signal<In, Bit>,
    pub y: Signal<Out, Bits<CQE_BITS>>,
}

impl Logic for CqeBeat {
    fn update(&mut self) {
        let mut y = Bits::<CQE_BITS>::default();
        y.set_bits(8 * WR_ID, self.wr_id.val());
        y.set_bits(8 * BYTE_LEN, self.byte_len.val());
        y.set_bits(8 * IMM, self.imm.val());
        y.set_bits(8 * QP_NUM, self.qp_num.val());
        y.set_bits(8 * SRC_QP, self.src_qp.val());
        y.set_bits(8 * WQE_INDEX, self.wqe_index.val());
        y.set_bits(8 * OPCODE, self.opcode.val());
        y.set_bits(8 * STATUS, self.status.val());
        y.set_bits(8 * WC_FLAGS, self.wc_flags.val());
        y.set_bits(8 * VENDOR_ERR, self.vendor_err.val());
        y = y.replace_bit(8 * OWNER, self.phase.val());
        self.y.next = y;
    }

    fn connect(&mut self) {
        self.y.connect();
    }

    fn hdl(&self) -> Verilog {
        let field = |name: &str, at: usize, bits: usize| {
            format!("    y[{}:{}] = {name};\n", 8 * at + bits - 1, 8 * at)
        };
        let mut v = String::from("always @(*) begin\n");
        v.push_str(&format!("    y = {CQE_BITS}'h0;\n"));
        v.push_str(&field("wr_id", WR_ID, 64));
        v.push_str(&field("byte_len", BYTE_LEN, 32));
        v.push_str(&field("imm", IMM, 32));
        v.push_str(&field("qp_num", QP_NUM, 24));
        v.push_str(&field("src_qp", SRC_QP, 24));
        v.push_str(&field("wqe_index", WQE_INDEX, 32));
        v.push_str(&field("opcode", OPCODE, 8));
        v.push_str(&field("status", STATUS, 8));
        v.push_str(&field("wc_flags", WC_FLAGS, 8));
        v.push_str(&field("vendor_err", VENDOR_ERR, 8));
        v.push_str(&format!("    y[{}] = phase;\n", 8 * OWNER));
        v.push_str("end\n");
        Verilog::Custom(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocenic_proto::abi::cqe::Cqe;
    use rocenic_proto::abi::verbs::{WcOpcode, WcStatus};

    #[test]
    fn lays_out_the_abi_cqe() {
        let cqe = Cqe {
            wr_id: 0x0102_0304_0506_0708,
            byte_len: 0x1122_3344,
            imm_or_inv: 0xDEAD_BEEF,
            qp_num: 0xAB_CDEF,
            src_qp: 0x12_3456,
            wqe_index: 0x8000_0001,
            opcode: WcOpcode::RecvRdmaWithImm,
            status: WcStatus::RemAccessErr,
            wc_flags: 3,
            vendor_err: 0x63,
            phase: 1,
        };
        let mut b = CqeBeat::default();
        b.connect_all();
        b.wr_id.next = cqe.wr_id.into();
        b.byte_len.next = u64::from(cqe.byte_len).into();
        b.imm.next = u64::from(cqe.imm_or_inv).into();
        b.qp_num.next = u64::from(cqe.qp_num).into();
        b.src_qp.next = u64::from(cqe.src_qp).into();
        b.wqe_index.next = u64::from(cqe.wqe_index).into();
        b.opcode.next = u64::from(u8::from(cqe.opcode)).into();
        b.status.next = u64::from(u8::from(cqe.status)).into();
        b.wc_flags.next = u64::from(cqe.wc_flags).into();
        b.vendor_err.next = u64::from(cqe.vendor_err).into();
        b.phase.next = true;
        assert!(simulate(&mut b, 10));
        assert_eq!(
            crate::common::icrc::bytes_from_beat(&b.y.val()),
            cqe.to_bytes()
        );
        assert_eq!(OWNER, Cqe::OWNER_OFFSET);
    }
}
