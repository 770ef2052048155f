//! The context tables' datapath ports (`CtxTable`): a read port (the address with a
//! valid/ready handshake; the entry comes back one cycle after the request was taken, on a
//! one-cycle `resp_valid`, with no ready) and a write port (address and entry with a
//! valid/ready handshake). `A` is the address width, `D` the entry width (a `*_layout::BITS`
//! of `proto`).

use crate::control::ctx_tables::{
    cq_layout, mr_layout, qpa_layout, qpc_layout, qpr_layout, qps_layout,
};
use crate::prelude::*;

port_group! {
    /// A block that reads a context table.
    client CtxRdClient = "CtxRdClient";
    /// The table's side of [`CtxRdClient`].
    server CtxRdServer = "CtxRdServer";
    generics <const A: usize, const D: usize>;
    out {
        req_valid: Bit,
        req_addr: Bits<A>,
    }
    in {
        req_ready: Bit,
        resp_valid: Bit,
        resp_data: Bits<D>,
    }
}

port_group! {
    /// A block that writes a context table.
    client CtxWrClient = "CtxWrClient";
    /// The table's side of [`CtxWrClient`].
    server CtxWrServer = "CtxWrServer";
    generics <const A: usize, const D: usize>;
    out {
        valid: Bit,
        addr: Bits<A>,
        data: Bits<D>,
    }
    in {
        ready: Bit,
    }
}

/// One context-table read port shared by two clients: `first` wins a cycle both ask, and
/// the answer (one cycle after the request) goes to the one served in that cycle.
#[derive(LogicBlock, Default)]
pub struct CtxRdShare<const A: usize, const D: usize> {
    pub clock: Signal<In, Clock>,
    /// The client served first (the responder's).
    pub first: CtxRdServer<A, D>,
    /// The other client (the requester's).
    pub second: CtxRdServer<A, D>,
    /// The table's port.
    pub table: CtxRdClient<A, D>,
    /// The answer due is `second`'s (`first` did not ask in the previous cycle).
    second_own: DFF<Bit>,
}

impl<const A: usize, const D: usize> Logic for CtxRdShare<A, D> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, second_own);
        self.table.req_valid.next = self.first.req_valid.val() | self.second.req_valid.val();
        self.table.req_addr.next = self.second.req_addr.val();
        if self.first.req_valid.val() {
            self.table.req_addr.next = self.first.req_addr.val();
        }
        self.first.req_ready.next = self.table.req_ready.val();
        self.second.req_ready.next = self.table.req_ready.val() & !self.first.req_valid.val();
        self.second_own.d.next = !self.first.req_valid.val();
        self.first.resp_valid.next = self.table.resp_valid.val() & !self.second_own.q.val();
        self.second.resp_valid.next = self.table.resp_valid.val() & self.second_own.q.val();
        self.first.resp_data.next = self.table.resp_data.val();
        self.second.resp_data.next = self.table.resp_data.val();
    }
}

/// The context tables' datapath ports as the control plane serves them, one field: the
/// read ports of `cq`, `mr`, `qpc`, `qpa`, `qpr`, `qps` and the write ports of `qps` (the
/// responder's) and `qpr` (the requester's). `QA` and `MA` are the QP and MR index widths.
#[derive(LogicInterface, Default)]
pub struct CtxServers<const QA: usize, const MA: usize> {
    pub cq_rd: CtxRdServer<8, { cq_layout::BITS }>,
    pub mr_rd: CtxRdServer<MA, { mr_layout::BITS }>,
    pub qpc_rd: CtxRdServer<QA, { qpc_layout::BITS }>,
    pub qpa_rd: CtxRdServer<QA, { qpa_layout::BITS }>,
    pub qpr_rd: CtxRdServer<QA, { qpr_layout::BITS }>,
    pub qps_rd: CtxRdServer<QA, { qps_layout::BITS }>,
    /// The responder's write port on `qps` (refused while a command writes it).
    pub qps_wr: CtxWrServer<QA, { qps_layout::BITS }>,
    /// The requester's write port on `qpr` (refused while a command writes it).
    pub qpr_wr: CtxWrServer<QA, { qpr_layout::BITS }>,
}
