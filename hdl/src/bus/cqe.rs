//! A completion to write: the CQE fields of `rocenic_proto::abi::cqe::Cqe` with a
//! valid/ready handshake. [`Completion`](crate::completion::Completion) serves it.

use crate::completion::CQN_BITS;
use crate::prelude::*;

port_group! {
    /// A block that completes work (the requester's send CQEs, the responder's receive
    /// CQEs).
    client CqeClient = "CqeClient";
    /// The side that writes the CQEs of [`CqeClient`]s.
    server CqeServer = "CqeServer";
    out {
        valid: Bit,
        cqn: Bits<CQN_BITS>,
        wr_id: Bits<64>,
        byte_len: Bits<32>,
        imm: Bits<32>,
        qp_num: Bits<24>,
        src_qp: Bits<24>,
        wqe_index: Bits<32>,
        opcode: Bits<8>,
        status: Bits<8>,
        wc_flags: Bits<8>,
        vendor_err: Bits<8>,
    }
    in {
        ready: Bit,
    }
}

/// Two clients into one server, `first` chosen in a cycle both offer a CQE: enough where
/// the server's ready depends on its own state only (`Completion`'s), so no choice is
/// ever taken back.
#[derive(LogicBlock, Default)]
pub struct CqeShare {
    /// The client served first (the responder's receive CQEs).
    pub first: CqeServer,
    /// The other client (the requester's send CQEs).
    pub second: CqeServer,
    pub out: CqeClient,
}

impl Logic for CqeShare {
    #[hdl_gen]
    fn update(&mut self) {
        self.out.valid.next = self.first.valid.val() | self.second.valid.val();
        self.first.ready.next = self.out.ready.val();
        self.second.ready.next = self.out.ready.val() & !self.first.valid.val();
        self.out.cqn.next = self.second.cqn.val();
        self.out.wr_id.next = self.second.wr_id.val();
        self.out.byte_len.next = self.second.byte_len.val();
        self.out.imm.next = self.second.imm.val();
        self.out.qp_num.next = self.second.qp_num.val();
        self.out.src_qp.next = self.second.src_qp.val();
        self.out.wqe_index.next = self.second.wqe_index.val();
        self.out.opcode.next = self.second.opcode.val();
        self.out.status.next = self.second.status.val();
        self.out.wc_flags.next = self.second.wc_flags.val();
        self.out.vendor_err.next = self.second.vendor_err.val();
        if self.first.valid.val() {
            self.out.cqn.next = self.first.cqn.val();
            self.out.wr_id.next = self.first.wr_id.val();
            self.out.byte_len.next = self.first.byte_len.val();
            self.out.imm.next = self.first.imm.val();
            self.out.qp_num.next = self.first.qp_num.val();
            self.out.src_qp.next = self.first.src_qp.val();
            self.out.wqe_index.next = self.first.wqe_index.val();
            self.out.opcode.next = self.first.opcode.val();
            self.out.status.next = self.first.status.val();
            self.out.wc_flags.next = self.first.wc_flags.val();
            self.out.vendor_err.next = self.first.vendor_err.val();
        }
    }
}
