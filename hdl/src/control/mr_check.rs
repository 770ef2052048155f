//! `MrCheck`: the memory protection check. A key, a PD, a virtual range and the access it
//! needs go in; the IOVA of the range, or why it is refused, comes out.
//!
//! ```text
//!  port.req {key, pdn, va, len, need} --> MR table read port (index = key >> 8) --> checks --> port.res
//! ```
//!
//! The rule is the model's `Tables::translate` (`model/src/tables.rs`), and the bench in
//! `hdl/tests/against_model/mr_check.rs` holds the block to it: a zero-length access needs
//! no key (IOVA 0); else the MR named by `key >> 8` must exist, be valid (not invalidated)
//! and carry the key's tag (`key & 0xff`) ([`ERR_BAD_KEY`]), belong to the PD
//! ([`ERR_WRONG_PD`]), allow every access bit asked for ([`ERR_NO_ACCESS`]), and hold
//! `[va, va + len)` without the sum wrapping ([`ERR_OUT_OF_BOUNDS`]); the IOVA is
//! `mr.iova + (va - mr.va)`.
//!
//! The MR table is `ctx_tables`' `mr` table (the control plane's `mr_rd` port,
//! a `CtxRdClient` here: data one cycle after the address is taken). One request at a time: take, read the
//! table, check and answer; a result is held until taken. Three cycles a lookup when the
//! port and the consumer keep up: enough for one check per packet of a message at 64-byte
//! payloads only every third cycle, which the responder and requester amortise by checking
//! once per message and adding offsets (as the model does per packet on the same MR).

use crate::bus::ctx::CtxRdClient;
use crate::bus::mr::MrServer;
use crate::common::cat::Cat;
use crate::control::ctx_tables::mr_layout;
use crate::prelude::*;

/// `m_res_err` codes (the model's `ProtError`, in its order).
pub const ERR_BAD_KEY: u64 = 0;
pub const ERR_WRONG_PD: u64 = 1;
pub const ERR_NO_ACCESS: u64 = 2;
pub const ERR_OUT_OF_BOUNDS: u64 = 3;

crate::unpack_fields!(
    /// The fields of an MR entry the check reads.
    MrFields, mr_layout; present: 1, valid: 1, tag: 8, pdn: 8, access: 4, va: 64, iova: 64,
    length: 64
);

/// FSM states.
const IDLE: u64 = 0;
const READ: u64 = 1;
const CHECK: u64 = 2;
const DONE: u64 = 3;

#[derive(LogicBlock)]
pub struct MrCheck<const MA: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,

    /// An access to check (key: lkey or rkey; the QP's PD; the range; the access bits it
    /// needs, `verbs::access`) and the answer: `ok` with the IOVA.
    pub port: MrServer,

    /// The MR table's read port.
    pub mr_rd: CtxRdClient<MA, { mr_layout::BITS }>,

    /// The reason of a refusal (`ERR_*`), beside `port.res_ok`.
    pub m_res_err: Signal<Out, Bits<2>>,

    fields: MrFields,
    len64: Cat<32, 32, 64>,
    state: DFF<Bits<2>>,
    key: DFF<Bits<32>>,
    pdn: DFF<Bits<8>>,
    va: DFF<Bits<64>>,
    len: DFF<Bits<64>>,
    need: DFF<Bits<4>>,
    ok: DFF<Bit>,
    err: DFF<Bits<2>>,
    iova: DFF<Bits<64>>,

    st_idle: Constant<Bits<2>>,
    st_read: Constant<Bits<2>>,
    st_check: Constant<Bits<2>>,
    st_done: Constant<Bits<2>>,
    one1: Constant<Bits<1>>,
    zero32: Constant<Bits<32>>,
    zero64: Constant<Bits<64>>,
    e_bad_key: Constant<Bits<2>>,
    e_wrong_pd: Constant<Bits<2>>,
    e_no_access: Constant<Bits<2>>,
    e_bounds: Constant<Bits<2>>,
    /// First key bit past the MR index: `8 + MA`.
    index_end: Constant<Bits<6>>,

    index_fits: Signal<Local, Bit>,
    range_end: Signal<Local, Bits<64>>,
    limit: Signal<Local, Bits<64>>,
    in_bounds: Signal<Local, Bit>,
    key_ok: Signal<Local, Bit>,
}

impl<const MA: usize> Default for MrCheck<MA> {
    fn default() -> Self {
        assert!(
            (1..=24).contains(&MA),
            "MrCheck<{MA}>: an MR index is the key's top 24 bits"
        );
        MrCheck {
            clock: Default::default(),
            reset: Default::default(),
            port: Default::default(),
            mr_rd: Default::default(),
            m_res_err: Default::default(),
            fields: Default::default(),
            len64: Default::default(),
            state: Default::default(),
            key: Default::default(),
            pdn: Default::default(),
            va: Default::default(),
            len: Default::default(),
            need: Default::default(),
            ok: Default::default(),
            err: Default::default(),
            iova: Default::default(),
            st_idle: Constant::new(IDLE.to_bits()),
            st_read: Constant::new(READ.to_bits()),
            st_check: Constant::new(CHECK.to_bits()),
            st_done: Constant::new(DONE.to_bits()),
            one1: Constant::new(1u64.to_bits()),
            zero32: Constant::new(0u64.to_bits()),
            zero64: Constant::new(0u64.to_bits()),
            e_bad_key: Constant::new(ERR_BAD_KEY.to_bits()),
            e_wrong_pd: Constant::new(ERR_WRONG_PD.to_bits()),
            e_no_access: Constant::new(ERR_NO_ACCESS.to_bits()),
            e_bounds: Constant::new(ERR_OUT_OF_BOUNDS.to_bits()),
            index_end: Constant::new((8 + MA as u64).to_bits()),
            index_fits: Default::default(),
            range_end: Default::default(),
            limit: Default::default(),
            in_bounds: Default::default(),
            key_ok: Default::default(),
        }
    }
}

impl<const MA: usize> Logic for MrCheck<MA> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, state, key, pdn, va, len, need, ok, err, iova);

        // ---- take a request ----
        self.len64.hi.next = self.zero32.val();
        self.len64.lo.next = self.port.req_len.val();
        self.port.req_ready.next = self.state.q.val() == self.st_idle.val();
        if self.port.req_valid.val() & (self.state.q.val() == self.st_idle.val()) {
            self.key.d.next = self.port.req_key.val();
            self.pdn.d.next = self.port.req_pdn.val();
            self.va.d.next = self.port.req_va.val();
            self.len.d.next = self.len64.y.val();
            self.need.d.next = self.port.req_need.val();
            self.state.d.next = self.st_read.val();
        }

        // ---- READ: the MR named by the key's index (if the table has it) ----
        // Bits 31:8 of the key are the index; those above the table's size must be zero.
        self.index_fits.next = (self.key.q.val() >> self.index_end.val()) == self.zero32.val();
        self.mr_rd.req_addr.next = self.key.q.val().get_bits::<MA>(8);
        self.mr_rd.req_valid.next = (self.state.q.val() == self.st_read.val())
            & self.index_fits.val()
            & (self.len.q.val() != self.zero64.val());
        if self.state.q.val() == self.st_read.val() {
            if (self.len.q.val() == self.zero64.val()) | !self.index_fits.val() {
                // Zero length: no key needed, IOVA 0. Index past the table: no such MR.
                self.ok.d.next = self.len.q.val() == self.zero64.val();
                self.err.d.next = self.e_bad_key.val();
                self.iova.d.next = self.zero64.val();
                self.state.d.next = self.st_done.val();
            } else if self.mr_rd.req_ready.val() {
                self.state.d.next = self.st_check.val();
            }
        }

        // ---- CHECK: the entry is on the read port ----
        self.fields.x.next = self.mr_rd.resp_data.val();
        self.key_ok.next = (self.fields.present.val() == self.one1.val())
            & (self.fields.valid.val() == self.one1.val())
            & (self.fields.tag.val() == self.key.q.val().get_bits::<8>(0));
        self.range_end.next = self.va.q.val() + self.len.q.val();
        self.limit.next = self.fields.va.val() + self.fields.length.val();
        self.in_bounds.next = (self.range_end.val() >= self.va.q.val())
            & (self.va.q.val() >= self.fields.va.val())
            & (self.range_end.val() <= self.limit.val());
        if (self.state.q.val() == self.st_check.val()) & self.mr_rd.resp_valid.val() {
            self.ok.d.next = false;
            self.iova.d.next = self.fields.iova.val() + (self.va.q.val() - self.fields.va.val());
            if !self.key_ok.val() {
                self.err.d.next = self.e_bad_key.val();
            } else if self.fields.pdn.val() != self.pdn.q.val() {
                self.err.d.next = self.e_wrong_pd.val();
            } else if (self.fields.access.val() & self.need.q.val()) != self.need.q.val() {
                self.err.d.next = self.e_no_access.val();
            } else if !self.in_bounds.val() {
                self.err.d.next = self.e_bounds.val();
            } else {
                self.ok.d.next = true;
            }
            self.state.d.next = self.st_done.val();
        }

        // ---- DONE: the answer, held until taken ----
        self.port.res_valid.next = self.state.q.val() == self.st_done.val();
        self.port.res_ok.next = self.ok.q.val();
        self.m_res_err.next = self.err.q.val();
        self.port.res_iova.next = self.iova.q.val();
        if (self.state.q.val() == self.st_done.val()) & self.port.res_ready.val() {
            self.state.d.next = self.st_idle.val();
        }

        if self.reset.val() {
            self.state.d.next = self.st_idle.val();
        }
    }
}
