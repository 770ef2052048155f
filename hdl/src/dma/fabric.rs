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
//! order. Register slices (`Skid`) sit between cascaded muxes and around the clients
//! whose handshakes would otherwise close a combinational loop through a mux, and the
//! statuses of a cascaded write mux come a cycle late; the engine verilates free of
//! UNOPTFLAT because of them (`hdl/tests/gates.rs`). Clients see no tag on their
//! responses (they come back in request order): each gets tag 0.
//!
//! The clients are [`DmaRdServer`] / [`DmaWrServer`] ports joined to the blocks'
//! [`DmaRdClient`] /
//! [`DmaWrClient`] groups; `port_rd` and `port_wr` are the
//! engine's DMA ports (the contract of `docs/rtl-architecture.md`).

use crate::bus::dma_rd::{DmaRdClient, DmaRdServer};
use crate::bus::dma_wr::{DmaWrClient, DmaWrServer};
use crate::common::cat::Cat;
use crate::common::skid::Skid;
use crate::dma::dma_rd_mux::DmaReadMux;
use crate::dma::dma_wr_mux::DmaWriteMux;
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
    /// The responder's payload writes (client 0) and the atomic unit's writes (client 1).
    wr_a: DmaWriteMux,
    /// The DMA write port: `wr_a` (client 0) and `wr_q` (client 1).
    wr_b: DmaWriteMux,
    /// Register slices around ReadResp's DMA request and responses: its handshakes and the
    /// muxes' would close loops (see `skid`).
    sk_rd_req: Skid<87>,
    sk_rd_resp: Skid<512>,
    /// Register slices between the cascaded muxes (rd_sub -> rd_top requests, rd_top ->
    /// rd_sub responses, wr_a -> wr_b requests and data): the muxes' handshakes would close
    /// loops through each other otherwise.
    sk_sub_req: Skid<87>,
    sk_sub_resp: Skid<519>,
    /// The requester's WQE-fetch responses: `rd_req` routes both clients' responses in
    /// one `always`, and inside the requester the fetch's answer reaches the Segmenter's
    /// response ready, a loop without it.
    sk_wqe_resp: Skid<512>,
    /// The Segmenter's payload responses, for the same reason (its response ready depends
    /// on its own state, which `rd_req`'s routing of the other client feeds).
    sk_seg_resp: Skid<512>,
    sk_s2_req: Skid<86>,
    sk_s2_resp: Skid<518>,
    sk_r2_req: Skid<86>,
    sk_r2_resp: Skid<518>,
    sk_wa_req: Skid<80>,
    sk_wa_data: Skid<576>,
    sub_req_lt: Cat<16, 7, 23>,
    sub_req_cat: Cat<64, 23, 87>,
    sub_resp_cat: Cat<7, 512, 519>,
    s2_req_lt: Cat<16, 6, 22>,
    s2_req_cat: Cat<64, 22, 86>,
    s2_resp_cat: Cat<6, 512, 518>,
    r2_req_lt: Cat<16, 6, 22>,
    r2_req_cat: Cat<64, 22, 86>,
    r2_resp_cat: Cat<6, 512, 518>,
    wa_req_cat: Cat<64, 16, 80>,
    wa_data_cat: Cat<64, 512, 576>,
    /// `{len, tag[6:0]}` and `{addr, len, tag[6:0]}` of ReadResp's DMA request.
    rd_req_lt: Cat<16, 7, 23>,
    rd_req_cat: Cat<64, 23, 87>,
    /// The completion engine (client 0) and the requester's READ/atomic result writes
    /// (client 1), into `wr_b`'s client 1.
    wr_q: DmaWriteMux,
    /// Register slices on the requester's write request and data (its data ready reaches
    /// its payload ready and the RX front end's) and between `wr_q` and `wr_b`.
    sk_rw_req: Skid<80>,
    sk_rw_data: Skid<576>,
    sk_wq_req: Skid<80>,
    sk_wq_data: Skid<576>,
    rw_req_cat: Cat<64, 16, 80>,
    rw_data_cat: Cat<64, 512, 576>,
    wq_req_cat: Cat<64, 16, 80>,
    wq_data_cat: Cat<64, 512, 576>,
    /// The completion engine (client 0) and the command engine's QUERY_QP_COUNTERS writes
    /// (client 1, from `control`), into `wr_q`'s client 0 through register slices (two
    /// cascaded muxes' handshakes would close a loop), statuses a cycle late.
    wr_c: DmaWriteMux,
    sk_wc_req: Skid<80>,
    sk_wc_data: Skid<576>,
    wc_req_cat: Cat<64, 16, 80>,
    wc_data_cat: Cat<64, 512, 576>,
    st_c_valid: DFF<Bit>,
    st_c_err: DFF<Bit>,
    unused_sk_wc_req_m_last: Signal<Local, Bit>,
    unused_sk_wc_req_m_err: Signal<Local, Bit>,
    unused_sk_wc_data_m_err: Signal<Local, Bit>,
    /// `wr_b`'s statuses for `wr_q`, a cycle late.
    st_q_valid: DFF<Bit>,
    st_q_err: DFF<Bit>,
    /// `wr_b`'s statuses for `wr_a`, a cycle late (the two muxes' handshakes would close a
    /// loop otherwise).
    st_a_valid: DFF<Bit>,
    st_a_err: DFF<Bit>,
    unused_wqe_tag: Signal<Local, Bits<8>>,
    unused_seg_tag: Signal<Local, Bits<8>>,
    unused_rd_req_m0_resp_tag: Signal<Local, Bits<5>>,
    unused_rd_req_m1_resp_tag: Signal<Local, Bits<5>>,
    unused_sk_s2_req_m_last: Signal<Local, Bit>,
    unused_sk_s2_req_m_err: Signal<Local, Bit>,
    unused_sk_r2_req_m_last: Signal<Local, Bit>,
    unused_sk_r2_req_m_err: Signal<Local, Bit>,
    unused_rdr_tag: Signal<Local, Bits<8>>,
    unused_atom_tag: Signal<Local, Bits<8>>,
    unused_resp_tag: Signal<Local, Bits<8>>,
    unused_rd_top_m0_resp_tag: Signal<Local, Bits<7>>,
    unused_rd_sub_m0_resp_tag: Signal<Local, Bits<5>>,
    unused_rd_sub_m1_resp_tag: Signal<Local, Bits<5>>,
    unused_sk_rd_req_m_last: Signal<Local, Bit>,
    unused_sk_rd_req_m_err: Signal<Local, Bit>,
    unused_sk_sub_req_m_last: Signal<Local, Bit>,
    unused_sk_sub_req_m_err: Signal<Local, Bit>,
    unused_sk_wa_req_m_last: Signal<Local, Bit>,
    unused_sk_wa_req_m_err: Signal<Local, Bit>,
    unused_sk_wa_data_m_err: Signal<Local, Bit>,
    unused_sk_rw_req_m_last: Signal<Local, Bit>,
    unused_sk_rw_req_m_err: Signal<Local, Bit>,
    unused_sk_rw_data_m_err: Signal<Local, Bit>,
    unused_sk_wq_req_m_last: Signal<Local, Bit>,
    unused_sk_wq_req_m_err: Signal<Local, Bit>,
    unused_sk_wq_data_m_err: Signal<Local, Bit>,
    zero8: Constant<Bits<8>>,
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
            wr_a: Default::default(),
            wr_b: Default::default(),
            sk_rd_req: Default::default(),
            sk_rd_resp: Default::default(),
            sk_sub_req: Default::default(),
            sk_sub_resp: Default::default(),
            sk_wqe_resp: Default::default(),
            sk_seg_resp: Default::default(),
            sk_s2_req: Default::default(),
            sk_s2_resp: Default::default(),
            sk_r2_req: Default::default(),
            sk_r2_resp: Default::default(),
            sk_wa_req: Default::default(),
            sk_wa_data: Default::default(),
            sub_req_lt: Default::default(),
            sub_req_cat: Default::default(),
            sub_resp_cat: Default::default(),
            s2_req_lt: Default::default(),
            s2_req_cat: Default::default(),
            s2_resp_cat: Default::default(),
            r2_req_lt: Default::default(),
            r2_req_cat: Default::default(),
            r2_resp_cat: Default::default(),
            wa_req_cat: Default::default(),
            wa_data_cat: Default::default(),
            rd_req_lt: Default::default(),
            rd_req_cat: Default::default(),
            wr_q: Default::default(),
            sk_rw_req: Default::default(),
            sk_rw_data: Default::default(),
            sk_wq_req: Default::default(),
            sk_wq_data: Default::default(),
            rw_req_cat: Default::default(),
            rw_data_cat: Default::default(),
            wq_req_cat: Default::default(),
            wq_data_cat: Default::default(),
            wr_c: Default::default(),
            sk_wc_req: Default::default(),
            sk_wc_data: Default::default(),
            wc_req_cat: Default::default(),
            wc_data_cat: Default::default(),
            st_c_valid: Default::default(),
            st_c_err: Default::default(),
            unused_sk_wc_req_m_last: Default::default(),
            unused_sk_wc_req_m_err: Default::default(),
            unused_sk_wc_data_m_err: Default::default(),
            st_q_valid: Default::default(),
            st_q_err: Default::default(),
            st_a_valid: Default::default(),
            st_a_err: Default::default(),
            unused_wqe_tag: Default::default(),
            unused_seg_tag: Default::default(),
            unused_rd_req_m0_resp_tag: Default::default(),
            unused_rd_req_m1_resp_tag: Default::default(),
            unused_sk_s2_req_m_last: Default::default(),
            unused_sk_s2_req_m_err: Default::default(),
            unused_sk_r2_req_m_last: Default::default(),
            unused_sk_r2_req_m_err: Default::default(),
            unused_rdr_tag: Default::default(),
            unused_atom_tag: Default::default(),
            unused_resp_tag: Default::default(),
            unused_rd_top_m0_resp_tag: Default::default(),
            unused_rd_sub_m0_resp_tag: Default::default(),
            unused_rd_sub_m1_resp_tag: Default::default(),
            unused_sk_rd_req_m_last: Default::default(),
            unused_sk_rd_req_m_err: Default::default(),
            unused_sk_sub_req_m_last: Default::default(),
            unused_sk_sub_req_m_err: Default::default(),
            unused_sk_wa_req_m_last: Default::default(),
            unused_sk_wa_req_m_err: Default::default(),
            unused_sk_wa_data_m_err: Default::default(),
            unused_sk_rw_req_m_last: Default::default(),
            unused_sk_rw_req_m_err: Default::default(),
            unused_sk_rw_data_m_err: Default::default(),
            unused_sk_wq_req_m_last: Default::default(),
            unused_sk_wq_req_m_err: Default::default(),
            unused_sk_wq_data_m_err: Default::default(),
            zero8: Constant::new(0u64.to_bits()),
        }
    }
}

impl Logic for DmaFabric {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, st_c_valid, st_c_err, st_q_valid, st_q_err, st_a_valid, st_a_err);
        clock!(
            self,
            clock,
            rd_top,
            rd_mid,
            rd_sub,
            rd_req,
            wr_a,
            wr_b,
            sk_rd_req,
            sk_rd_resp,
            sk_sub_req,
            sk_sub_resp,
            sk_wqe_resp,
            sk_seg_resp,
            sk_s2_req,
            sk_s2_resp,
            sk_r2_req,
            sk_r2_resp,
            sk_wa_req,
            sk_wa_data,
            wr_q,
            sk_rw_req,
            sk_rw_data,
            sk_wq_req,
            sk_wq_data,
            wr_c,
            sk_wc_req,
            sk_wc_data
        );
        self.rd_top.reset.next = self.reset.val();
        self.rd_mid.reset.next = self.reset.val();
        self.rd_sub.reset.next = self.reset.val();
        self.rd_req.reset.next = self.reset.val();
        self.wr_a.reset.next = self.reset.val();
        self.wr_b.reset.next = self.reset.val();
        self.sk_rd_req.reset.next = self.reset.val();
        self.sk_rd_resp.reset.next = self.reset.val();
        self.sk_sub_req.reset.next = self.reset.val();
        self.sk_sub_resp.reset.next = self.reset.val();
        self.sk_wqe_resp.reset.next = self.reset.val();
        self.sk_seg_resp.reset.next = self.reset.val();
        self.sk_s2_req.reset.next = self.reset.val();
        self.sk_s2_resp.reset.next = self.reset.val();
        self.sk_r2_req.reset.next = self.reset.val();
        self.sk_r2_resp.reset.next = self.reset.val();
        self.sk_wa_req.reset.next = self.reset.val();
        self.sk_wa_data.reset.next = self.reset.val();
        self.wr_q.reset.next = self.reset.val();
        self.sk_rw_req.reset.next = self.reset.val();
        self.sk_rw_data.reset.next = self.reset.val();
        self.sk_wq_req.reset.next = self.reset.val();
        self.sk_wq_data.reset.next = self.reset.val();
        self.wr_c.reset.next = self.reset.val();
        self.sk_wc_req.reset.next = self.reset.val();
        self.sk_wc_data.reset.next = self.reset.val();

        // ---- DMA reads: rd_top(ReadResp, rd_mid(rd_sub(responder, atomic unit),
        //      rd_req(requester WQE fetch, Segmenter))) ----
        self.rd_sub.s0.req_valid.next = self.resp_rd.req_valid.val();
        self.rd_sub.s0.req_addr.next = self.resp_rd.req_addr.val();
        self.rd_sub.s0.req_len.next = self.resp_rd.req_len.val();
        self.rd_sub.s0.req_tag.next = self.resp_rd.req_tag.val().get_bits::<5>(0);
        self.unused_resp_tag.next = self.resp_rd.req_tag.val();
        self.resp_rd.req_ready.next = self.rd_sub.s0.req_ready.val();
        self.rd_sub.s1.req_valid.next = self.atom_rd.req_valid.val();
        self.rd_sub.s1.req_addr.next = self.atom_rd.req_addr.val();
        self.rd_sub.s1.req_len.next = self.atom_rd.req_len.val();
        self.rd_sub.s1.req_tag.next = self.atom_rd.req_tag.val().get_bits::<5>(0);
        self.unused_atom_tag.next = self.atom_rd.req_tag.val();
        self.atom_rd.req_ready.next = self.rd_sub.s1.req_ready.val();
        self.rd_req_lt.hi.next = self.rdr_rd.req_len.val();
        self.rd_req_lt.lo.next = self.rdr_rd.req_tag.val().get_bits::<7>(0);
        self.unused_rdr_tag.next = self.rdr_rd.req_tag.val();
        self.rd_req_cat.hi.next = self.rdr_rd.req_addr.val();
        self.rd_req_cat.lo.next = self.rd_req_lt.y.val();
        self.sk_rd_req.s_valid.next = self.rdr_rd.req_valid.val();
        self.sk_rd_req.s_data.next = self.rd_req_cat.y.val();
        self.sk_rd_req.s_last.next = false;
        self.sk_rd_req.s_err.next = false;
        self.rdr_rd.req_ready.next = self.sk_rd_req.s_ready.val();
        self.rd_top.s0.req_valid.next = self.sk_rd_req.m_valid.val();
        self.rd_top.s0.req_addr.next = self.sk_rd_req.m_data.val().get_bits::<64>(23);
        self.rd_top.s0.req_len.next = self.sk_rd_req.m_data.val().get_bits::<16>(7);
        self.rd_top.s0.req_tag.next = self.sk_rd_req.m_data.val().get_bits::<7>(0);
        self.sk_rd_req.m_ready.next = self.rd_top.s0.req_ready.val();
        self.unused_sk_rd_req_m_last.next = self.sk_rd_req.m_last.val();
        self.unused_sk_rd_req_m_err.next = self.sk_rd_req.m_err.val();
        // the requester's two clients under rd_req
        self.rd_req.s0.req_valid.next = self.wqe_rd.req_valid.val();
        self.rd_req.s0.req_addr.next = self.wqe_rd.req_addr.val();
        self.rd_req.s0.req_len.next = self.wqe_rd.req_len.val();
        self.rd_req.s0.req_tag.next = self.wqe_rd.req_tag.val().get_bits::<5>(0);
        self.unused_wqe_tag.next = self.wqe_rd.req_tag.val();
        self.wqe_rd.req_ready.next = self.rd_req.s0.req_ready.val();
        self.rd_req.s1.req_valid.next = self.seg_rd.req_valid.val();
        self.rd_req.s1.req_addr.next = self.seg_rd.req_addr.val();
        self.rd_req.s1.req_len.next = self.seg_rd.req_len.val();
        self.rd_req.s1.req_tag.next = self.seg_rd.req_tag.val().get_bits::<5>(0);
        self.unused_seg_tag.next = self.seg_rd.req_tag.val();
        self.seg_rd.req_ready.next = self.rd_req.s1.req_ready.val();
        // rd_sub and rd_req -> (register slices) -> rd_mid
        self.s2_req_lt.hi.next = self.rd_sub.m.req_len.val();
        self.s2_req_lt.lo.next = self.rd_sub.m.req_tag.val();
        self.s2_req_cat.hi.next = self.rd_sub.m.req_addr.val();
        self.s2_req_cat.lo.next = self.s2_req_lt.y.val();
        self.sk_s2_req.s_valid.next = self.rd_sub.m.req_valid.val();
        self.sk_s2_req.s_data.next = self.s2_req_cat.y.val();
        self.sk_s2_req.s_last.next = false;
        self.sk_s2_req.s_err.next = false;
        self.rd_sub.m.req_ready.next = self.sk_s2_req.s_ready.val();
        self.rd_mid.s0.req_valid.next = self.sk_s2_req.m_valid.val();
        self.rd_mid.s0.req_addr.next = self.sk_s2_req.m_data.val().get_bits::<64>(22);
        self.rd_mid.s0.req_len.next = self.sk_s2_req.m_data.val().get_bits::<16>(6);
        self.rd_mid.s0.req_tag.next = self.sk_s2_req.m_data.val().get_bits::<6>(0);
        self.sk_s2_req.m_ready.next = self.rd_mid.s0.req_ready.val();
        self.unused_sk_s2_req_m_last.next = self.sk_s2_req.m_last.val();
        self.unused_sk_s2_req_m_err.next = self.sk_s2_req.m_err.val();
        self.r2_req_lt.hi.next = self.rd_req.m.req_len.val();
        self.r2_req_lt.lo.next = self.rd_req.m.req_tag.val();
        self.r2_req_cat.hi.next = self.rd_req.m.req_addr.val();
        self.r2_req_cat.lo.next = self.r2_req_lt.y.val();
        self.sk_r2_req.s_valid.next = self.rd_req.m.req_valid.val();
        self.sk_r2_req.s_data.next = self.r2_req_cat.y.val();
        self.sk_r2_req.s_last.next = false;
        self.sk_r2_req.s_err.next = false;
        self.rd_req.m.req_ready.next = self.sk_r2_req.s_ready.val();
        self.rd_mid.s1.req_valid.next = self.sk_r2_req.m_valid.val();
        self.rd_mid.s1.req_addr.next = self.sk_r2_req.m_data.val().get_bits::<64>(22);
        self.rd_mid.s1.req_len.next = self.sk_r2_req.m_data.val().get_bits::<16>(6);
        self.rd_mid.s1.req_tag.next = self.sk_r2_req.m_data.val().get_bits::<6>(0);
        self.sk_r2_req.m_ready.next = self.rd_mid.s1.req_ready.val();
        self.unused_sk_r2_req_m_last.next = self.sk_r2_req.m_last.val();
        self.unused_sk_r2_req_m_err.next = self.sk_r2_req.m_err.val();
        // rd_mid -> (register slice) -> rd_top
        self.sub_req_lt.hi.next = self.rd_mid.m.req_len.val();
        self.sub_req_lt.lo.next = self.rd_mid.m.req_tag.val();
        self.sub_req_cat.hi.next = self.rd_mid.m.req_addr.val();
        self.sub_req_cat.lo.next = self.sub_req_lt.y.val();
        self.sk_sub_req.s_valid.next = self.rd_mid.m.req_valid.val();
        self.sk_sub_req.s_data.next = self.sub_req_cat.y.val();
        self.sk_sub_req.s_last.next = false;
        self.sk_sub_req.s_err.next = false;
        self.rd_mid.m.req_ready.next = self.sk_sub_req.s_ready.val();
        self.rd_top.s1.req_valid.next = self.sk_sub_req.m_valid.val();
        self.rd_top.s1.req_addr.next = self.sk_sub_req.m_data.val().get_bits::<64>(23);
        self.rd_top.s1.req_len.next = self.sk_sub_req.m_data.val().get_bits::<16>(7);
        self.rd_top.s1.req_tag.next = self.sk_sub_req.m_data.val().get_bits::<7>(0);
        self.sk_sub_req.m_ready.next = self.rd_top.s1.req_ready.val();
        self.unused_sk_sub_req_m_last.next = self.sk_sub_req.m_last.val();
        self.unused_sk_sub_req_m_err.next = self.sk_sub_req.m_err.val();
        DmaRdClient::link(&mut self.port_rd, &mut self.rd_top.m);
        // The clients ignore response tags (responses come in request order).
        self.sk_rd_resp.s_valid.next = self.rd_top.s0.resp_valid.val();
        self.sk_rd_resp.s_data.next = self.rd_top.s0.resp_data.val();
        self.sk_rd_resp.s_last.next = self.rd_top.s0.resp_last.val();
        self.sk_rd_resp.s_err.next = self.rd_top.s0.resp_err.val();
        self.rd_top.s0.resp_ready.next = self.sk_rd_resp.s_ready.val();
        self.rdr_rd.resp_valid.next = self.sk_rd_resp.m_valid.val();
        self.rdr_rd.resp_data.next = self.sk_rd_resp.m_data.val();
        self.rdr_rd.resp_tag.next = self.zero8.val();
        self.rdr_rd.resp_last.next = self.sk_rd_resp.m_last.val();
        self.rdr_rd.resp_err.next = self.sk_rd_resp.m_err.val();
        self.sk_rd_resp.m_ready.next = self.rdr_rd.resp_ready.val();
        self.unused_rd_top_m0_resp_tag.next = self.rd_top.s0.resp_tag.val();
        self.sub_resp_cat.hi.next = self.rd_top.s1.resp_tag.val();
        self.sub_resp_cat.lo.next = self.rd_top.s1.resp_data.val();
        self.sk_sub_resp.s_valid.next = self.rd_top.s1.resp_valid.val();
        self.sk_sub_resp.s_data.next = self.sub_resp_cat.y.val();
        self.sk_sub_resp.s_last.next = self.rd_top.s1.resp_last.val();
        self.sk_sub_resp.s_err.next = self.rd_top.s1.resp_err.val();
        self.rd_top.s1.resp_ready.next = self.sk_sub_resp.s_ready.val();
        self.rd_mid.m.resp_valid.next = self.sk_sub_resp.m_valid.val();
        self.rd_mid.m.resp_data.next = self.sk_sub_resp.m_data.val().get_bits::<512>(0);
        self.rd_mid.m.resp_tag.next = self.sk_sub_resp.m_data.val().get_bits::<7>(512);
        self.rd_mid.m.resp_last.next = self.sk_sub_resp.m_last.val();
        self.rd_mid.m.resp_err.next = self.sk_sub_resp.m_err.val();
        self.sk_sub_resp.m_ready.next = self.rd_mid.m.resp_ready.val();
        // rd_mid -> (register slices) -> rd_sub and rd_req
        self.s2_resp_cat.hi.next = self.rd_mid.s0.resp_tag.val();
        self.s2_resp_cat.lo.next = self.rd_mid.s0.resp_data.val();
        self.sk_s2_resp.s_valid.next = self.rd_mid.s0.resp_valid.val();
        self.sk_s2_resp.s_data.next = self.s2_resp_cat.y.val();
        self.sk_s2_resp.s_last.next = self.rd_mid.s0.resp_last.val();
        self.sk_s2_resp.s_err.next = self.rd_mid.s0.resp_err.val();
        self.rd_mid.s0.resp_ready.next = self.sk_s2_resp.s_ready.val();
        self.rd_sub.m.resp_valid.next = self.sk_s2_resp.m_valid.val();
        self.rd_sub.m.resp_data.next = self.sk_s2_resp.m_data.val().get_bits::<512>(0);
        self.rd_sub.m.resp_tag.next = self.sk_s2_resp.m_data.val().get_bits::<6>(512);
        self.rd_sub.m.resp_last.next = self.sk_s2_resp.m_last.val();
        self.rd_sub.m.resp_err.next = self.sk_s2_resp.m_err.val();
        self.sk_s2_resp.m_ready.next = self.rd_sub.m.resp_ready.val();
        self.r2_resp_cat.hi.next = self.rd_mid.s1.resp_tag.val();
        self.r2_resp_cat.lo.next = self.rd_mid.s1.resp_data.val();
        self.sk_r2_resp.s_valid.next = self.rd_mid.s1.resp_valid.val();
        self.sk_r2_resp.s_data.next = self.r2_resp_cat.y.val();
        self.sk_r2_resp.s_last.next = self.rd_mid.s1.resp_last.val();
        self.sk_r2_resp.s_err.next = self.rd_mid.s1.resp_err.val();
        self.rd_mid.s1.resp_ready.next = self.sk_r2_resp.s_ready.val();
        self.rd_req.m.resp_valid.next = self.sk_r2_resp.m_valid.val();
        self.rd_req.m.resp_data.next = self.sk_r2_resp.m_data.val().get_bits::<512>(0);
        self.rd_req.m.resp_tag.next = self.sk_r2_resp.m_data.val().get_bits::<6>(512);
        self.rd_req.m.resp_last.next = self.sk_r2_resp.m_last.val();
        self.rd_req.m.resp_err.next = self.sk_r2_resp.m_err.val();
        self.sk_r2_resp.m_ready.next = self.rd_req.m.resp_ready.val();
        self.sk_wqe_resp.s_valid.next = self.rd_req.s0.resp_valid.val();
        self.sk_wqe_resp.s_data.next = self.rd_req.s0.resp_data.val();
        self.sk_wqe_resp.s_last.next = self.rd_req.s0.resp_last.val();
        self.sk_wqe_resp.s_err.next = self.rd_req.s0.resp_err.val();
        self.rd_req.s0.resp_ready.next = self.sk_wqe_resp.s_ready.val();
        self.wqe_rd.resp_valid.next = self.sk_wqe_resp.m_valid.val();
        self.wqe_rd.resp_data.next = self.sk_wqe_resp.m_data.val();
        self.wqe_rd.resp_tag.next = self.zero8.val();
        self.wqe_rd.resp_last.next = self.sk_wqe_resp.m_last.val();
        self.wqe_rd.resp_err.next = self.sk_wqe_resp.m_err.val();
        self.sk_wqe_resp.m_ready.next = self.wqe_rd.resp_ready.val();
        self.unused_rd_req_m0_resp_tag.next = self.rd_req.s0.resp_tag.val();
        self.sk_seg_resp.s_valid.next = self.rd_req.s1.resp_valid.val();
        self.sk_seg_resp.s_data.next = self.rd_req.s1.resp_data.val();
        self.sk_seg_resp.s_last.next = self.rd_req.s1.resp_last.val();
        self.sk_seg_resp.s_err.next = self.rd_req.s1.resp_err.val();
        self.rd_req.s1.resp_ready.next = self.sk_seg_resp.s_ready.val();
        self.seg_rd.resp_valid.next = self.sk_seg_resp.m_valid.val();
        self.seg_rd.resp_data.next = self.sk_seg_resp.m_data.val();
        self.seg_rd.resp_tag.next = self.zero8.val();
        self.seg_rd.resp_last.next = self.sk_seg_resp.m_last.val();
        self.seg_rd.resp_err.next = self.sk_seg_resp.m_err.val();
        self.sk_seg_resp.m_ready.next = self.seg_rd.resp_ready.val();
        self.unused_rd_req_m1_resp_tag.next = self.rd_req.s1.resp_tag.val();
        self.resp_rd.resp_valid.next = self.rd_sub.s0.resp_valid.val();
        self.resp_rd.resp_data.next = self.rd_sub.s0.resp_data.val();
        self.resp_rd.resp_last.next = self.rd_sub.s0.resp_last.val();
        self.resp_rd.resp_err.next = self.rd_sub.s0.resp_err.val();
        self.rd_sub.s0.resp_ready.next = self.resp_rd.resp_ready.val();
        self.unused_rd_sub_m0_resp_tag.next = self.rd_sub.s0.resp_tag.val();
        self.resp_rd.resp_tag.next = self.zero8.val();
        self.atom_rd.resp_valid.next = self.rd_sub.s1.resp_valid.val();
        self.atom_rd.resp_data.next = self.rd_sub.s1.resp_data.val();
        self.atom_rd.resp_tag.next = self.zero8.val();
        self.atom_rd.resp_last.next = self.rd_sub.s1.resp_last.val();
        self.atom_rd.resp_err.next = self.rd_sub.s1.resp_err.val();
        self.rd_sub.s1.resp_ready.next = self.atom_rd.resp_ready.val();
        self.unused_rd_sub_m1_resp_tag.next = self.rd_sub.s1.resp_tag.val();

        // ---- DMA writes: wr_b(wr_a(responder payload, atomic unit),
        //      wr_q(completion, requester)) ----
        DmaWrServer::link(&mut self.resp_wr, &mut self.wr_a.s0);
        DmaWrServer::link(&mut self.atom_wr, &mut self.wr_a.s1);
        self.wa_req_cat.hi.next = self.wr_a.m.req_addr.val();
        self.wa_req_cat.lo.next = self.wr_a.m.req_len.val();
        self.sk_wa_req.s_valid.next = self.wr_a.m.req_valid.val();
        self.sk_wa_req.s_data.next = self.wa_req_cat.y.val();
        self.sk_wa_req.s_last.next = false;
        self.sk_wa_req.s_err.next = false;
        self.wr_a.m.req_ready.next = self.sk_wa_req.s_ready.val();
        self.wr_b.s0.req_valid.next = self.sk_wa_req.m_valid.val();
        self.wr_b.s0.req_addr.next = self.sk_wa_req.m_data.val().get_bits::<64>(16);
        self.wr_b.s0.req_len.next = self.sk_wa_req.m_data.val().get_bits::<16>(0);
        self.sk_wa_req.m_ready.next = self.wr_b.s0.req_ready.val();
        self.unused_sk_wa_req_m_last.next = self.sk_wa_req.m_last.val();
        self.unused_sk_wa_req_m_err.next = self.sk_wa_req.m_err.val();
        self.wa_data_cat.hi.next = self.wr_a.m.data_keep.val();
        self.wa_data_cat.lo.next = self.wr_a.m.data.val();
        self.sk_wa_data.s_valid.next = self.wr_a.m.data_valid.val();
        self.sk_wa_data.s_data.next = self.wa_data_cat.y.val();
        self.sk_wa_data.s_last.next = self.wr_a.m.data_last.val();
        self.sk_wa_data.s_err.next = false;
        self.wr_a.m.data_ready.next = self.sk_wa_data.s_ready.val();
        self.wr_b.s0.data_valid.next = self.sk_wa_data.m_valid.val();
        self.wr_b.s0.data.next = self.sk_wa_data.m_data.val().get_bits::<512>(0);
        self.wr_b.s0.data_keep.next = self.sk_wa_data.m_data.val().get_bits::<64>(512);
        self.wr_b.s0.data_last.next = self.sk_wa_data.m_last.val();
        self.sk_wa_data.m_ready.next = self.wr_b.s0.data_ready.val();
        self.unused_sk_wa_data_m_err.next = self.sk_wa_data.m_err.val();
        self.st_a_valid.d.next = self.wr_b.s0.status_valid.val();
        self.st_a_err.d.next = self.wr_b.s0.status_err.val();
        self.wr_a.m.status_valid.next = self.st_a_valid.q.val();
        self.wr_a.m.status_err.next = self.st_a_err.q.val();
        // wr_c(completion engine, command engine) -> (register slices) -> wr_q client 0
        DmaWrServer::link(&mut self.cpl_wr, &mut self.wr_c.s0);
        DmaWrServer::link(&mut self.ctl_wr, &mut self.wr_c.s1);
        self.wc_req_cat.hi.next = self.wr_c.m.req_addr.val();
        self.wc_req_cat.lo.next = self.wr_c.m.req_len.val();
        self.sk_wc_req.s_valid.next = self.wr_c.m.req_valid.val();
        self.sk_wc_req.s_data.next = self.wc_req_cat.y.val();
        self.sk_wc_req.s_last.next = false;
        self.sk_wc_req.s_err.next = false;
        self.wr_c.m.req_ready.next = self.sk_wc_req.s_ready.val();
        self.wr_q.s0.req_valid.next = self.sk_wc_req.m_valid.val();
        self.wr_q.s0.req_addr.next = self.sk_wc_req.m_data.val().get_bits::<64>(16);
        self.wr_q.s0.req_len.next = self.sk_wc_req.m_data.val().get_bits::<16>(0);
        self.sk_wc_req.m_ready.next = self.wr_q.s0.req_ready.val();
        self.unused_sk_wc_req_m_last.next = self.sk_wc_req.m_last.val();
        self.unused_sk_wc_req_m_err.next = self.sk_wc_req.m_err.val();
        self.wc_data_cat.hi.next = self.wr_c.m.data_keep.val();
        self.wc_data_cat.lo.next = self.wr_c.m.data.val();
        self.sk_wc_data.s_valid.next = self.wr_c.m.data_valid.val();
        self.sk_wc_data.s_data.next = self.wc_data_cat.y.val();
        self.sk_wc_data.s_last.next = self.wr_c.m.data_last.val();
        self.sk_wc_data.s_err.next = false;
        self.wr_c.m.data_ready.next = self.sk_wc_data.s_ready.val();
        self.wr_q.s0.data_valid.next = self.sk_wc_data.m_valid.val();
        self.wr_q.s0.data.next = self.sk_wc_data.m_data.val().get_bits::<512>(0);
        self.wr_q.s0.data_keep.next = self.sk_wc_data.m_data.val().get_bits::<64>(512);
        self.wr_q.s0.data_last.next = self.sk_wc_data.m_last.val();
        self.sk_wc_data.m_ready.next = self.wr_q.s0.data_ready.val();
        self.unused_sk_wc_data_m_err.next = self.sk_wc_data.m_err.val();
        self.st_c_valid.d.next = self.wr_q.s0.status_valid.val();
        self.st_c_err.d.next = self.wr_q.s0.status_err.val();
        self.wr_c.m.status_valid.next = self.st_c_valid.q.val();
        self.wr_c.m.status_err.next = self.st_c_err.q.val();
        // wr_q(wr_c, requester) -> (register slices) -> wr_b client 1
        self.rw_req_cat.hi.next = self.req_wr.req_addr.val();
        self.rw_req_cat.lo.next = self.req_wr.req_len.val();
        self.sk_rw_req.s_valid.next = self.req_wr.req_valid.val();
        self.sk_rw_req.s_data.next = self.rw_req_cat.y.val();
        self.sk_rw_req.s_last.next = false;
        self.sk_rw_req.s_err.next = false;
        self.req_wr.req_ready.next = self.sk_rw_req.s_ready.val();
        self.wr_q.s1.req_valid.next = self.sk_rw_req.m_valid.val();
        self.wr_q.s1.req_addr.next = self.sk_rw_req.m_data.val().get_bits::<64>(16);
        self.wr_q.s1.req_len.next = self.sk_rw_req.m_data.val().get_bits::<16>(0);
        self.sk_rw_req.m_ready.next = self.wr_q.s1.req_ready.val();
        self.unused_sk_rw_req_m_last.next = self.sk_rw_req.m_last.val();
        self.unused_sk_rw_req_m_err.next = self.sk_rw_req.m_err.val();
        self.rw_data_cat.hi.next = self.req_wr.data_keep.val();
        self.rw_data_cat.lo.next = self.req_wr.data.val();
        self.sk_rw_data.s_valid.next = self.req_wr.data_valid.val();
        self.sk_rw_data.s_data.next = self.rw_data_cat.y.val();
        self.sk_rw_data.s_last.next = self.req_wr.data_last.val();
        self.sk_rw_data.s_err.next = false;
        self.req_wr.data_ready.next = self.sk_rw_data.s_ready.val();
        self.wr_q.s1.data_valid.next = self.sk_rw_data.m_valid.val();
        self.wr_q.s1.data.next = self.sk_rw_data.m_data.val().get_bits::<512>(0);
        self.wr_q.s1.data_keep.next = self.sk_rw_data.m_data.val().get_bits::<64>(512);
        self.wr_q.s1.data_last.next = self.sk_rw_data.m_last.val();
        self.sk_rw_data.m_ready.next = self.wr_q.s1.data_ready.val();
        self.unused_sk_rw_data_m_err.next = self.sk_rw_data.m_err.val();
        self.req_wr.status_valid.next = self.wr_q.s1.status_valid.val();
        self.req_wr.status_err.next = self.wr_q.s1.status_err.val();
        self.wq_req_cat.hi.next = self.wr_q.m.req_addr.val();
        self.wq_req_cat.lo.next = self.wr_q.m.req_len.val();
        self.sk_wq_req.s_valid.next = self.wr_q.m.req_valid.val();
        self.sk_wq_req.s_data.next = self.wq_req_cat.y.val();
        self.sk_wq_req.s_last.next = false;
        self.sk_wq_req.s_err.next = false;
        self.wr_q.m.req_ready.next = self.sk_wq_req.s_ready.val();
        self.wr_b.s1.req_valid.next = self.sk_wq_req.m_valid.val();
        self.wr_b.s1.req_addr.next = self.sk_wq_req.m_data.val().get_bits::<64>(16);
        self.wr_b.s1.req_len.next = self.sk_wq_req.m_data.val().get_bits::<16>(0);
        self.sk_wq_req.m_ready.next = self.wr_b.s1.req_ready.val();
        self.unused_sk_wq_req_m_last.next = self.sk_wq_req.m_last.val();
        self.unused_sk_wq_req_m_err.next = self.sk_wq_req.m_err.val();
        self.wq_data_cat.hi.next = self.wr_q.m.data_keep.val();
        self.wq_data_cat.lo.next = self.wr_q.m.data.val();
        self.sk_wq_data.s_valid.next = self.wr_q.m.data_valid.val();
        self.sk_wq_data.s_data.next = self.wq_data_cat.y.val();
        self.sk_wq_data.s_last.next = self.wr_q.m.data_last.val();
        self.sk_wq_data.s_err.next = false;
        self.wr_q.m.data_ready.next = self.sk_wq_data.s_ready.val();
        self.wr_b.s1.data_valid.next = self.sk_wq_data.m_valid.val();
        self.wr_b.s1.data.next = self.sk_wq_data.m_data.val().get_bits::<512>(0);
        self.wr_b.s1.data_keep.next = self.sk_wq_data.m_data.val().get_bits::<64>(512);
        self.wr_b.s1.data_last.next = self.sk_wq_data.m_last.val();
        self.sk_wq_data.m_ready.next = self.wr_b.s1.data_ready.val();
        self.unused_sk_wq_data_m_err.next = self.sk_wq_data.m_err.val();
        self.st_q_valid.d.next = self.wr_b.s1.status_valid.val();
        self.st_q_err.d.next = self.wr_b.s1.status_err.val();
        self.wr_q.m.status_valid.next = self.st_q_valid.q.val();
        self.wr_q.m.status_err.next = self.st_q_err.q.val();
        DmaWrClient::link(&mut self.port_wr, &mut self.wr_b.m);

        if self.reset.val() {
            self.st_q_valid.d.next = false;
            self.st_a_valid.d.next = false;
        }
    }
}
