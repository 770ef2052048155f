//! The MR check port: a request (key, PD, virtual address, length, the access it needs) and
//! its result (allowed, and the IOVA), each with a valid/ready handshake, one result per
//! request in order. [`MrCheck`](crate::control::mr_check::MrCheck) answers it.

use crate::prelude::*;

port_group! {
    /// A block that has memory accesses checked. `need` is a set of `verbs::access` bits.
    client MrClient = "MrClient";
    /// The side that answers [`MrClient`]s.
    server MrServer = "MrServer";
    out {
        req_valid: Bit,
        req_key: Bits<32>,
        req_pdn: Bits<8>,
        req_va: Bits<64>,
        req_len: Bits<32>,
        req_need: Bits<4>,
        res_ready: Bit,
    }
    in {
        req_ready: Bit,
        res_valid: Bit,
        res_ok: Bit,
        res_iova: Bits<64>,
    }
}

/// Two clients on one [`MrServer`] that takes one request at a time and answers it before
/// taking the next (`MrCheck`): `first` wins a cycle both ask, and the client whose
/// request was taken owns the next answer.
#[derive(LogicBlock, Default)]
pub struct MrShare {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// The client served first (the responder's).
    pub first: MrServer,
    /// The other client (the requester's).
    pub second: MrServer,
    pub out: MrClient,
    /// The answer due is `second`'s.
    second_own: DFF<Bit>,
}

impl Logic for MrShare {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, second_own);
        self.out.req_valid.next = self.first.req_valid.val() | self.second.req_valid.val();
        self.out.req_key.next = self.second.req_key.val();
        self.out.req_pdn.next = self.second.req_pdn.val();
        self.out.req_va.next = self.second.req_va.val();
        self.out.req_len.next = self.second.req_len.val();
        self.out.req_need.next = self.second.req_need.val();
        if self.first.req_valid.val() {
            self.out.req_key.next = self.first.req_key.val();
            self.out.req_pdn.next = self.first.req_pdn.val();
            self.out.req_va.next = self.first.req_va.val();
            self.out.req_len.next = self.first.req_len.val();
            self.out.req_need.next = self.first.req_need.val();
        }
        self.first.req_ready.next = self.out.req_ready.val();
        self.second.req_ready.next = self.out.req_ready.val() & !self.first.req_valid.val();
        if self.out.req_ready.val() & (self.first.req_valid.val() | self.second.req_valid.val()) {
            self.second_own.d.next = !self.first.req_valid.val();
        }
        self.first.res_valid.next = self.out.res_valid.val() & !self.second_own.q.val();
        self.second.res_valid.next = self.out.res_valid.val() & self.second_own.q.val();
        self.first.res_ok.next = self.out.res_ok.val();
        self.second.res_ok.next = self.out.res_ok.val();
        self.first.res_iova.next = self.out.res_iova.val();
        self.second.res_iova.next = self.out.res_iova.val();
        self.out.res_ready.next = self.first.res_ready.val();
        if self.second_own.q.val() {
            self.out.res_ready.next = self.second.res_ready.val();
        }
        if self.reset.val() {
            self.second_own.d.next = false;
        }
    }
}
