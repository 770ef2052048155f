//! `DmaFabric`: every DMA client of the engine on its one read port and one write port.
//!
//! ```text
//!   reads:  rd_top(ReadResp, rd_mid(rd_sub(responder, atomic unit),
//!                                   rd_req(requester WQE fetch, Segmenter)))
//!   writes: wr_b(wr_a(responder payload, atomic unit),
//!                wr_q(wr_c(completion, command engine), requester))
//! ```
//!
//! A tree of two-client muxes ([`DmaReadMux`], [`DmaWriteMux`]): each read level takes one
//! more tag bit to route responses back, each write level routes the statuses in request
//! order. Register slices ([`DmaRdSlice`], [`DmaWrSlice`]) sit between cascaded muxes and
//! around the clients whose handshakes would otherwise close a combinational loop through
//! a mux, and the statuses of a cascaded write mux come a cycle late; the engine verilates
//! free of UNOPTFLAT because of them (`hdl/tests/gates.rs`). Clients see no tag on their
//! responses (they come back in request order): each gets tag 0 ([`DmaRdNarrow`]).
//!
//! The clients are [`DmaRdServer`] / [`DmaWrServer`] ports joined to the blocks'
//! [`DmaRdClient`] /
//! [`DmaWrClient`] groups; `port_rd` and `port_wr` are the
//! engine's DMA ports (the contract of `docs/rtl-architecture.md`).

use crate::bus::dma_rd::{DmaRdClient, DmaRdClientT, DmaRdServer};
use crate::bus::dma_wr::{DmaWrClient, DmaWrServer};
use crate::dma::dma_rd_mux::DmaReadMux;
use crate::dma::dma_wr_mux::DmaWriteMux;
use crate::dma::slice::{DmaRdNarrow, DmaRdSlice, DmaWrSlice};
use crate::prelude::*;

#[derive(LogicBlock)]
pub struct DmaFabric {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// Read clients: ReadResp, the responder (RQ WQEs), the atomic unit, the requester's
    /// WQE fetch and its Segmenter.
    pub rdr_rd: DmaRdServer,
    pub resp_rd: DmaRdServer,
    pub atom_rd: DmaRdServer,
    pub wqe_rd: DmaRdServer,
    pub seg_rd: DmaRdServer,
    /// Write clients: the responder (payloads), the atomic unit, the completion engine,
    /// the command engine (QUERY_QP_COUNTERS) and the requester (READ / atomic results).
    pub resp_wr: DmaWrServer,
    pub atom_wr: DmaWrServer,
    pub cpl_wr: DmaWrServer,
    pub ctl_wr: DmaWrServer,
    pub req_wr: DmaWrServer,
    /// The engine's DMA read and write ports.
    pub port_rd: DmaRdClient,
    pub port_wr: DmaWrClient,
    /// The DMA read port: ReadResp (client 0) and `rd_mid` (client 1).
    rd_top: DmaReadMux<7, 8>,
    /// `rd_sub` (client 0) and `rd_req` (client 1).
    rd_mid: DmaReadMux<6, 7>,
    /// The responder's RQ WQE fetch (client 0) and the atomic unit (client 1).
    rd_sub: DmaReadMux<5, 6>,
    /// The requester's SQ WQE fetch (client 0) and its Segmenter's payload reads (client 1).
    rd_req: DmaReadMux<5, 6>,
    /// Each read client's tag cut to its mux input's.
    nr_rdr: DmaRdNarrow<8, 7>,
    nr_resp: DmaRdNarrow<8, 5>,
    nr_atom: DmaRdNarrow<8, 5>,
    nr_wqe: DmaRdNarrow<8, 5>,
    nr_seg: DmaRdNarrow<8, 5>,
    /// Around ReadResp's requests and responses: its handshakes and the muxes' would close
    /// loops (see `skid`).
    sl_rdr: DmaRdSlice<7, 87, 519>,
    /// Between the cascaded read muxes (`rd_sub`, `rd_req` -> `rd_mid` -> `rd_top`): the
    /// muxes' handshakes would close loops through each other otherwise.
    sl_sub: DmaRdSlice<6, 86, 518>,
    sl_req: DmaRdSlice<6, 86, 518>,
    sl_mid: DmaRdSlice<7, 87, 519>,
    /// The responses of the requester's WQE fetch and of its Segmenter: `rd_req` routes
    /// both clients' responses in one `always`, and inside the requester the fetch's answer
    /// reaches the Segmenter's response ready (whose ready depends on its own state, which
    /// `rd_req`'s routing of the other client feeds), a loop without them.
    sl_wqe: DmaRdSlice<5, 85, 517>,
    sl_seg: DmaRdSlice<5, 85, 517>,
    /// The responder's payload writes (client 0) and the atomic unit's writes (client 1).
    wr_a: DmaWriteMux,
    /// The DMA write port: `wr_a` (client 0) and `wr_q` (client 1).
    wr_b: DmaWriteMux,
    /// The completion engine (`wr_c`, client 0) and the requester's READ/atomic result
    /// writes (client 1), into `wr_b`'s client 1.
    wr_q: DmaWriteMux,
    /// The completion engine (client 0) and the command engine's QUERY_QP_COUNTERS writes
    /// (client 1, from `control`), into `wr_q`'s client 0.
    wr_c: DmaWriteMux,
    /// Between the cascaded write muxes (`wr_a` -> `wr_b`, `wr_c` -> `wr_q` -> `wr_b`),
    /// statuses a cycle late: two muxes' handshakes would close a loop otherwise.
    sl_a: DmaWrSlice,
    sl_c: DmaWrSlice,
    sl_q: DmaWrSlice,
    /// On the requester's write request and data (its data ready reaches its payload
    /// ready and the RX front end's), status straight.
    sl_req_wr: DmaWrSlice,
}

impl Default for DmaFabric {
    fn default() -> Self {
        DmaFabric {
            clock: Default::default(),
            reset: Default::default(),
            rdr_rd: Default::default(),
            resp_rd: Default::default(),
            atom_rd: Default::default(),
            wqe_rd: Default::default(),
            seg_rd: Default::default(),
            resp_wr: Default::default(),
            atom_wr: Default::default(),
            cpl_wr: Default::default(),
            ctl_wr: Default::default(),
            req_wr: Default::default(),
            port_rd: Default::default(),
            port_wr: Default::default(),
            rd_top: Default::default(),
            rd_mid: Default::default(),
            rd_sub: Default::default(),
            rd_req: Default::default(),
            nr_rdr: Default::default(),
            nr_resp: Default::default(),
            nr_atom: Default::default(),
            nr_wqe: Default::default(),
            nr_seg: Default::default(),
            sl_rdr: Default::default(),
            sl_sub: Default::default(),
            sl_req: Default::default(),
            sl_mid: Default::default(),
            sl_wqe: DmaRdSlice::new(false, true),
            sl_seg: DmaRdSlice::new(false, true),
            wr_a: Default::default(),
            wr_b: Default::default(),
            wr_q: Default::default(),
            wr_c: Default::default(),
            sl_a: DmaWrSlice::new(true),
            sl_c: DmaWrSlice::new(true),
            sl_q: DmaWrSlice::new(true),
            sl_req_wr: DmaWrSlice::new(false),
        }
    }
}

impl Logic for DmaFabric {
    #[hdl_gen]
    fn update(&mut self) {
        clock!(
            self, clock, rd_top, rd_mid, rd_sub, rd_req, sl_rdr, sl_sub, sl_req, sl_mid, sl_wqe,
            sl_seg, wr_a, wr_b, wr_q, wr_c, sl_a, sl_c, sl_q, sl_req_wr
        );
        self.rd_top.reset.next = self.reset.val();
        self.rd_mid.reset.next = self.reset.val();
        self.rd_sub.reset.next = self.reset.val();
        self.rd_req.reset.next = self.reset.val();
        self.sl_rdr.reset.next = self.reset.val();
        self.sl_sub.reset.next = self.reset.val();
        self.sl_req.reset.next = self.reset.val();
        self.sl_mid.reset.next = self.reset.val();
        self.sl_wqe.reset.next = self.reset.val();
        self.sl_seg.reset.next = self.reset.val();
        self.wr_a.reset.next = self.reset.val();
        self.wr_b.reset.next = self.reset.val();
        self.wr_q.reset.next = self.reset.val();
        self.wr_c.reset.next = self.reset.val();
        self.sl_a.reset.next = self.reset.val();
        self.sl_c.reset.next = self.reset.val();
        self.sl_q.reset.next = self.reset.val();
        self.sl_req_wr.reset.next = self.reset.val();

        // ---- DMA reads: rd_top(ReadResp, rd_mid(rd_sub(responder, atomic unit),
        //      rd_req(requester WQE fetch, Segmenter))) ----
        DmaRdServer::link(&mut self.rdr_rd, &mut self.nr_rdr.s);
        DmaRdClientT::<7>::join(&mut self.nr_rdr.m, &mut self.sl_rdr.s);
        DmaRdClientT::<7>::join(&mut self.sl_rdr.m, &mut self.rd_top.s0);
        DmaRdServer::link(&mut self.resp_rd, &mut self.nr_resp.s);
        DmaRdClientT::<5>::join(&mut self.nr_resp.m, &mut self.rd_sub.s0);
        DmaRdServer::link(&mut self.atom_rd, &mut self.nr_atom.s);
        DmaRdClientT::<5>::join(&mut self.nr_atom.m, &mut self.rd_sub.s1);
        DmaRdServer::link(&mut self.wqe_rd, &mut self.nr_wqe.s);
        DmaRdClientT::<5>::join(&mut self.nr_wqe.m, &mut self.sl_wqe.s);
        DmaRdClientT::<5>::join(&mut self.sl_wqe.m, &mut self.rd_req.s0);
        DmaRdServer::link(&mut self.seg_rd, &mut self.nr_seg.s);
        DmaRdClientT::<5>::join(&mut self.nr_seg.m, &mut self.sl_seg.s);
        DmaRdClientT::<5>::join(&mut self.sl_seg.m, &mut self.rd_req.s1);
        DmaRdClientT::<6>::join(&mut self.rd_sub.m, &mut self.sl_sub.s);
        DmaRdClientT::<6>::join(&mut self.sl_sub.m, &mut self.rd_mid.s0);
        DmaRdClientT::<6>::join(&mut self.rd_req.m, &mut self.sl_req.s);
        DmaRdClientT::<6>::join(&mut self.sl_req.m, &mut self.rd_mid.s1);
        DmaRdClientT::<7>::join(&mut self.rd_mid.m, &mut self.sl_mid.s);
        DmaRdClientT::<7>::join(&mut self.sl_mid.m, &mut self.rd_top.s1);
        DmaRdClient::link(&mut self.port_rd, &mut self.rd_top.m);

        // ---- DMA writes: wr_b(wr_a(responder payload, atomic unit),
        //      wr_q(wr_c(completion, command engine), requester)) ----
        DmaWrServer::link(&mut self.resp_wr, &mut self.wr_a.s0);
        DmaWrServer::link(&mut self.atom_wr, &mut self.wr_a.s1);
        DmaWrClient::join(&mut self.wr_a.m, &mut self.sl_a.s);
        DmaWrClient::join(&mut self.sl_a.m, &mut self.wr_b.s0);
        DmaWrServer::link(&mut self.cpl_wr, &mut self.wr_c.s0);
        DmaWrServer::link(&mut self.ctl_wr, &mut self.wr_c.s1);
        DmaWrClient::join(&mut self.wr_c.m, &mut self.sl_c.s);
        DmaWrClient::join(&mut self.sl_c.m, &mut self.wr_q.s0);
        DmaWrServer::link(&mut self.req_wr, &mut self.sl_req_wr.s);
        DmaWrClient::join(&mut self.sl_req_wr.m, &mut self.wr_q.s1);
        DmaWrClient::join(&mut self.wr_q.m, &mut self.sl_q.s);
        DmaWrClient::join(&mut self.sl_q.m, &mut self.wr_b.s1);
        DmaWrClient::link(&mut self.port_wr, &mut self.wr_b.m);
    }
}
