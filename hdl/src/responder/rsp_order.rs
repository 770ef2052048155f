//! `RspOrder`: the responder's three response sources (ACK/NAK records of the
//! [`Responder`](crate::responder::Responder), READ responses of
//! [`ReadResp`](crate::responder::read_resp::ReadResp), ATOMIC ACKNOWLEDGEs of
//! [`AtomicUnit`](crate::responder::atomic_unit::AtomicUnit)) merged into one record stream in the
//! order the responder decided them, as the model's single response queue sends them
//! (`Nic::send_one`): an ACK of a later request never overtakes the response packets of an
//! earlier READ still being read from host memory.
//!
//! ```text
//!  Responder ACK/NAK records --(push tag A)--> ACK record FIFO (16, RAM) --+
//!  Responder READ jobs  ----(push tag R, gate)--> ReadResp --- records ----+--> head tag's
//!  Responder atomic jobs / replays --(push tag T)--> AtomicUnit - records -+    source --> pkt
//!                     tag FIFO (32): A / R / T in decision order, popped per response
//! ```
//!
//! # Interface
//!
//! - `ack` (a [`RecordServer`], [`RECORD_BITS`]): the responder's ACK/NAK records; each is
//!   stored in a 16-entry FIFO (block RAM) and its tag pushed. `ack.ready` is low while
//!   either FIFO is full (the responder stalls; nothing is dropped).
//! - `s_rjob_valid`/`s_rjob_ready` (the responder's READ job handshake) and
//!   `m_rjob_valid`/`m_rjob_ready` (ReadResp's): passed through, gated: a READ job is
//!   handed on only while the tag FIFO has room and **no atomic (job or replay) is
//!   pending**, and pushes tag R when taken. `s_ajob_*`/`m_ajob_*` (atomic jobs) and
//!   `s_rep_*`/`m_rep_*` (replays) likewise, gated by room only, pushing tag T. The job
//!   data goes from the responder to the units directly (not through this block).
//!   **At most one of the four (ACK, READ job, atomic job, replay) may be offered in a
//!   cycle**: the responder offers them from distinct states of its FSM. The gates read
//!   registers only, never another source's valid (the responder writes a valid and
//!   reads its ready in one statement, so such a gate would close a Verilator loop
//!   through it); two at once would push one tag for two hand-outs.
//! - `rd` (a `RecordServer`): ReadResp's response records; `s_rd_err` (pulse):
//!   ReadResp's DMA failure report (`m_err_valid`): that job sends no further record.
//! - `at` (a `RecordServer`): AtomicUnit's ATOMIC ACKNOWLEDGEs; `s_at_err`,
//!   `s_at_miss` (pulses): an atomic whose DMA failed, a replay that missed the cache (no
//!   record for that job).
//! - `pkt` (a [`RecordClient`]): the merged records, for `TxPath`'s response source
//!   (through a register slice in the engine). The READ records' payloads are not
//!   handled here: `TxPath`'s arbiter sends each payload behind its record, and
//!   ReadResp's payloads come in its record order.
//!
//! # Rules
//!
//! - The head tag picks the source: A sends the ACK FIFO's head record; R passes ReadResp's
//!   records and pops with the job's last one (opcode READ RESPONSE LAST or ONLY; a
//!   zero-length READ is one ONLY); T passes one AtomicUnit record and pops.
//! - A job that ends without its last record pops by a count of failure pulses: each
//!   `s_rd_err` (each `s_at_err`, `s_at_miss`) adds one to a counter, and an R (T) tag at the
//!   head pops without a record while its counter is non-zero (or its pulse is up this
//!   cycle), taking one off. Both units work their jobs in order and a failed job sends
//!   nothing after its failure, so the oldest pending R (T) tag is always the failed job:
//!   ReadResp cannot start the next job's records before the failing one's last record is
//!   taken, and AtomicUnit works one operation at a time.
//! - The READ gate: AtomicUnit's DMA read shares the DMA read port with ReadResp, whose
//!   responses come in request order. A READ job behind a pending atomic could have its
//!   data ahead of the atomic's on the port, wait at the head of the port for the atomic's
//!   ACK (its tag is behind the atomic's) and so hold back the atomic's own read data: a
//!   wedge. So a READ job waits until no atomic is pending (rare: a READ right behind an
//!   atomic on the wire). Every other tag's record does not depend on a DMA read behind
//!   ReadResp's (ACK records are stored; atomics only ever wait for earlier READs).
//! - No bubble: with an empty FIFO an ACK record is offered 2 cycles after it is taken;
//!   READ and atomic records pass combinationally when their tag is at the head; records
//!   can follow each other every cycle (a tag whose ACK record is still in the RAM's read
//!   register costs one cycle).
//!
//! # In the engine
//!
//! Wired between the three sources and `TxPath`'s response source (engine `ro`). Wired
//! straight onto the units, Verilator `-Wall` reports UNOPTFLAT (it sees each block's
//! `always` as one vertex: an input it reads feeds every output it writes), so:
//! - a [`JobSlice`](crate::common::job_slice::JobSlice) (register outputs both ways, the data held
//!   by the responder) between each `m_*job_*` / `m_rep_*` handshake and its unit;
//! - a [`Skid`](crate::common::skid::Skid) on ReadResp's records (`sk_pkt`) that carries ReadResp's
//!   failure pulse in band: a beat is a record (`last` lane) and/or a failure that comes
//!   before it (`err` lane), given to `s_rd_err` once before the beat's record, so a failed
//!   job's records still in the slice go before its tag is popped. A pulse that meets a
//!   full slice waits in a counter and holds ReadResp's records back;
//! - a `RecordSlice` on `pkt` into `TxPath` (`sk_rsp`); AtomicUnit's records and pulses and
//!   the ACK records come straight in.
//!
//! # Not done
//!
//! - Order is global (as the model's one queue), not per QP: a QP's READ holds back later
//!   responses of every QP.
//! - A READ or atomic whose DMA fails: the responder's NAK is decided (and queued) when the
//!   failure is reported, behind responses decided meanwhile; the model queues it right
//!   behind the failed READ's earlier packets (the QP goes to the error state either way).
//!
//! Held by its bench (`tests`): random interleavings of the three sources with random
//! latencies, backpressure and failures, every record out exactly once in decision order.

use crate::bus::record::{RecordClient, RecordServer};
use crate::prelude::*;
use rocenic_proto::wire::Opcode;

use crate::tx::tx_arbiter::{field_offset, RECORD_BITS};

/// log2 of the ACK record FIFO's depth.
pub const ACK_LOG: usize = 4;
/// Depth of the tag FIFO (tags in flight: stored ACKs, READ and atomic jobs).
pub const TAG_DEPTH: usize = 32;
/// Bit offset of `opcode` in a packed record.
const OPCODE_AT: usize = 176;
/// RDMA READ RESPONSE LAST and ONLY (`rocenic_proto::wire::Opcode`).
const OP_READ_LAST: u64 = Opcode::RdmaReadResponseLast.code() as u64;
const OP_READ_ONLY: u64 = Opcode::RdmaReadResponseOnly.code() as u64;

/// The ordering block; see the [module docs](self).
#[derive(LogicBlock)]
pub struct RspOrder {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    // --- the responder's ACK/NAK records ---
    pub ack: RecordServer,
    // --- job handshakes: responder (s_) -> unit (m_) ---
    pub s_rjob_valid: Signal<In, Bit>,
    pub s_rjob_ready: Signal<Out, Bit>,
    pub m_rjob_valid: Signal<Out, Bit>,
    pub m_rjob_ready: Signal<In, Bit>,
    pub s_ajob_valid: Signal<In, Bit>,
    pub s_ajob_ready: Signal<Out, Bit>,
    pub m_ajob_valid: Signal<Out, Bit>,
    pub m_ajob_ready: Signal<In, Bit>,
    pub s_rep_valid: Signal<In, Bit>,
    pub s_rep_ready: Signal<Out, Bit>,
    pub m_rep_valid: Signal<Out, Bit>,
    pub m_rep_ready: Signal<In, Bit>,
    // --- ReadResp's records and failures ---
    pub rd: RecordServer,
    pub s_rd_err: Signal<In, Bit>,
    // --- AtomicUnit's records, failures and replay misses ---
    pub at: RecordServer,
    pub s_at_err: Signal<In, Bit>,
    pub s_at_miss: Signal<In, Bit>,
    // --- out ---
    pub pkt: RecordClient,

    // ---- the ACK record FIFO ----
    ack_ram: RAM<Bits<RECORD_BITS>, ACK_LOG>,
    a_wr: DFF<Bits<ACK_LOG>>,
    a_rd: DFF<Bits<ACK_LOG>>,
    a_cnt: DFF<Bits<5>>,
    /// The RAM's read register shows the head record.
    a_head_ok: DFF<Bit>,
    // ---- the tag FIFO: bit i of `t_read` / `t_atom` is entry i (head in bit 0) ----
    t_read: DFF<Bits<TAG_DEPTH>>,
    t_atom: DFF<Bits<TAG_DEPTH>>,
    t_cnt: DFF<Bits<6>>,
    /// Atomic tags (jobs and replays) in the tag FIFO.
    atom_n: DFF<Bits<6>>,
    /// Failure pulses not yet matched with their job's tag.
    rd_skip: DFF<Bits<6>>,
    at_skip: DFF<Bits<6>>,

    c0_5: Constant<Bits<5>>,
    c1_5: Constant<Bits<5>>,
    c16_5: Constant<Bits<5>>,
    c0_6: Constant<Bits<6>>,
    c1_6: Constant<Bits<6>>,
    c32_6: Constant<Bits<6>>,
    c0_a: Constant<Bits<ACK_LOG>>,
    c1_a: Constant<Bits<ACK_LOG>>,
    c1_t: Constant<Bits<TAG_DEPTH>>,
    op_last: Constant<Bits<8>>,
    op_only: Constant<Bits<8>>,

    t_full: Signal<Local, Bit>,
    a_full: Signal<Local, Bit>,
    ack_take: Signal<Local, Bit>,
    rjob_ok: Signal<Local, Bit>,
    ajob_ok: Signal<Local, Bit>,
    rep_ok: Signal<Local, Bit>,
    rjob_take: Signal<Local, Bit>,
    ajob_take: Signal<Local, Bit>,
    rep_take: Signal<Local, Bit>,
    push: Signal<Local, Bit>,
    push_read: Signal<Local, Bit>,
    push_atom: Signal<Local, Bit>,
    t_any: Signal<Local, Bit>,
    sel_ack: Signal<Local, Bit>,
    sel_rd: Signal<Local, Bit>,
    sel_at: Signal<Local, Bit>,
    rd_skip_now: Signal<Local, Bit>,
    at_skip_now: Signal<Local, Bit>,
    rd_pass: Signal<Local, Bit>,
    at_pass: Signal<Local, Bit>,
    rd_op: Signal<Local, Bits<8>>,
    rd_last: Signal<Local, Bit>,
    ack_pop: Signal<Local, Bit>,
    pop: Signal<Local, Bit>,
    t_read_mid: Signal<Local, Bits<TAG_DEPTH>>,
    t_atom_mid: Signal<Local, Bits<TAG_DEPTH>>,
    t_cnt_mid: Signal<Local, Bits<6>>,
}

impl Default for RspOrder {
    fn default() -> Self {
        RspOrder::new()
    }
}

impl RspOrder {
    pub fn new() -> RspOrder {
        assert_eq!(field_offset("opcode"), OPCODE_AT, "record layout");
        RspOrder {
            clock: Default::default(),
            reset: Default::default(),
            ack: Default::default(),
            s_rjob_valid: Default::default(),
            s_rjob_ready: Default::default(),
            m_rjob_valid: Default::default(),
            m_rjob_ready: Default::default(),
            s_ajob_valid: Default::default(),
            s_ajob_ready: Default::default(),
            m_ajob_valid: Default::default(),
            m_ajob_ready: Default::default(),
            s_rep_valid: Default::default(),
            s_rep_ready: Default::default(),
            m_rep_valid: Default::default(),
            m_rep_ready: Default::default(),
            rd: Default::default(),
            s_rd_err: Default::default(),
            at: Default::default(),
            s_at_err: Default::default(),
            s_at_miss: Default::default(),
            pkt: Default::default(),
            ack_ram: Default::default(),
            a_wr: Default::default(),
            a_rd: Default::default(),
            a_cnt: Default::default(),
            a_head_ok: Default::default(),
            t_read: Default::default(),
            t_atom: Default::default(),
            t_cnt: Default::default(),
            atom_n: Default::default(),
            rd_skip: Default::default(),
            at_skip: Default::default(),
            c0_5: Constant::new(0.into()),
            c1_5: Constant::new(1.into()),
            c16_5: Constant::new((1u64 << ACK_LOG).into()),
            c0_6: Constant::new(0.into()),
            c1_6: Constant::new(1.into()),
            c32_6: Constant::new((TAG_DEPTH as u64).into()),
            c0_a: Constant::new(0.into()),
            c1_a: Constant::new(1.into()),
            c1_t: Constant::new(1.into()),
            op_last: Constant::new(OP_READ_LAST.into()),
            op_only: Constant::new(OP_READ_ONLY.into()),
            t_full: Default::default(),
            a_full: Default::default(),
            ack_take: Default::default(),
            rjob_ok: Default::default(),
            ajob_ok: Default::default(),
            rep_ok: Default::default(),
            rjob_take: Default::default(),
            ajob_take: Default::default(),
            rep_take: Default::default(),
            push: Default::default(),
            push_read: Default::default(),
            push_atom: Default::default(),
            t_any: Default::default(),
            sel_ack: Default::default(),
            sel_rd: Default::default(),
            sel_at: Default::default(),
            rd_skip_now: Default::default(),
            at_skip_now: Default::default(),
            rd_pass: Default::default(),
            at_pass: Default::default(),
            rd_op: Default::default(),
            rd_last: Default::default(),
            ack_pop: Default::default(),
            pop: Default::default(),
            t_read_mid: Default::default(),
            t_atom_mid: Default::default(),
            t_cnt_mid: Default::default(),
        }
    }
}

impl Logic for RspOrder {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, a_wr, a_rd, a_cnt, a_head_ok, t_read, t_atom, t_cnt, atom_n, rd_skip,
            at_skip
        );
        self.ack_ram.read_clock.next = self.clock.val();
        self.ack_ram.write_clock.next = self.clock.val();

        // ---- pushes: one hand-out at a time (the responder offers one at a time) ----
        self.t_full.next = self.t_cnt.q.val() == self.c32_6.val();
        self.a_full.next = self.a_cnt.q.val() == self.c16_5.val();
        self.ack.ready.next = !self.a_full.val() & !self.t_full.val();
        self.ack_take.next = self.ack.valid.val() & !self.a_full.val() & !self.t_full.val();
        // The gates read registers only (never another source's valid): the responder's
        // FSM writes a valid and reads its ready in one statement, so a gate on the ACK
        // valid would close a loop through it (UNOPTFLAT). It offers one at a time.
        self.rjob_ok.next = !self.t_full.val() & (self.atom_n.q.val() == self.c0_6.val());
        self.ajob_ok.next = !self.t_full.val();
        self.rep_ok.next = !self.t_full.val();
        self.m_rjob_valid.next = self.s_rjob_valid.val() & self.rjob_ok.val();
        self.s_rjob_ready.next = self.m_rjob_ready.val() & self.rjob_ok.val();
        self.m_ajob_valid.next = self.s_ajob_valid.val() & self.ajob_ok.val();
        self.s_ajob_ready.next = self.m_ajob_ready.val() & self.ajob_ok.val();
        self.m_rep_valid.next = self.s_rep_valid.val() & self.rep_ok.val();
        self.s_rep_ready.next = self.m_rep_ready.val() & self.rep_ok.val();
        self.rjob_take.next =
            self.s_rjob_valid.val() & self.m_rjob_ready.val() & self.rjob_ok.val();
        self.ajob_take.next =
            self.s_ajob_valid.val() & self.m_ajob_ready.val() & self.ajob_ok.val();
        self.rep_take.next = self.s_rep_valid.val() & self.m_rep_ready.val() & self.rep_ok.val();
        self.push_read.next = self.rjob_take.val();
        self.push_atom.next = self.ajob_take.val() | self.rep_take.val();
        self.push.next = self.ack_take.val() | self.push_read.val() | self.push_atom.val();

        // ---- the head tag's source ----
        self.t_any.next = self.t_cnt.q.val() != self.c0_6.val();
        self.sel_rd.next = self.t_any.val() & self.t_read.q.val().get_bit(0);
        self.sel_at.next = self.t_any.val() & self.t_atom.q.val().get_bit(0);
        self.sel_ack.next =
            self.t_any.val() & !self.t_read.q.val().get_bit(0) & !self.t_atom.q.val().get_bit(0);
        self.rd_skip_now.next =
            self.sel_rd.val() & ((self.rd_skip.q.val() != self.c0_6.val()) | self.s_rd_err.val());
        self.at_skip_now.next = self.sel_at.val()
            & ((self.at_skip.q.val() != self.c0_6.val())
                | self.s_at_err.val()
                | self.s_at_miss.val());
        self.rd_pass.next =
            self.sel_rd.val() & (self.rd_skip.q.val() == self.c0_6.val()) & !self.s_rd_err.val();
        self.at_pass.next = self.sel_at.val()
            & (self.at_skip.q.val() == self.c0_6.val())
            & !self.s_at_err.val()
            & !self.s_at_miss.val();
        self.rd.ready.next = self.rd_pass.val() & self.pkt.ready.val();
        self.at.ready.next = self.at_pass.val() & self.pkt.ready.val();
        self.pkt.valid.next = (self.sel_ack.val() & self.a_head_ok.q.val())
            | (self.rd_pass.val() & self.rd.valid.val())
            | (self.at_pass.val() & self.at.valid.val());
        if self.sel_ack.val() {
            self.pkt.data.next = self.ack_ram.read_data.val();
        } else if self.sel_rd.val() {
            self.pkt.data.next = self.rd.data.val();
        } else {
            self.pkt.data.next = self.at.data.val();
        }
        // (a literal: RustHDL writes a const name into the Verilog; `new` checks it is OPCODE_AT)
        self.rd_op.next = self.rd.data.val().get_bits::<8>(176);
        self.rd_last.next =
            (self.rd_op.val() == self.op_last.val()) | (self.rd_op.val() == self.op_only.val());
        self.ack_pop.next = self.sel_ack.val() & self.a_head_ok.q.val() & self.pkt.ready.val();
        self.pop.next = self.ack_pop.val()
            | self.rd_skip_now.val()
            | self.at_skip_now.val()
            | (self.rd_pass.val()
                & self.rd.valid.val()
                & self.pkt.ready.val()
                & self.rd_last.val())
            | (self.at_pass.val() & self.at.valid.val() & self.pkt.ready.val());

        // ---- the ACK record FIFO (block RAM, the head in its read register) ----
        self.ack_ram.write_enable.next = self.ack_take.val();
        self.ack_ram.write_address.next = self.a_wr.q.val();
        self.ack_ram.write_data.next = self.ack.data.val();
        if self.ack_take.val() {
            self.a_wr.d.next = self.a_wr.q.val() + self.c1_a.val();
        }
        if self.ack_take.val() & !self.ack_pop.val() {
            self.a_cnt.d.next = self.a_cnt.q.val() + self.c1_5.val();
        }
        if self.ack_pop.val() & !self.ack_take.val() {
            self.a_cnt.d.next = self.a_cnt.q.val() - self.c1_5.val();
        }
        // The RAM reads the entry that is the head next cycle (written before this one).
        self.ack_ram.read_address.next = self.a_rd.q.val();
        self.a_head_ok.d.next = self.a_cnt.q.val() != self.c0_5.val();
        if self.ack_pop.val() {
            self.a_rd.d.next = self.a_rd.q.val() + self.c1_a.val();
            self.ack_ram.read_address.next = self.a_rd.q.val() + self.c1_a.val();
            self.a_head_ok.d.next = self.a_cnt.q.val() > self.c1_5.val();
        }

        // ---- the tag FIFO: pop the head, push at the end ----
        if self.pop.val() {
            self.t_read_mid.next = self.t_read.q.val() >> self.c1_t.val();
            self.t_atom_mid.next = self.t_atom.q.val() >> self.c1_t.val();
            self.t_cnt_mid.next = self.t_cnt.q.val() - self.c1_6.val();
        } else {
            self.t_read_mid.next = self.t_read.q.val();
            self.t_atom_mid.next = self.t_atom.q.val();
            self.t_cnt_mid.next = self.t_cnt.q.val();
        }
        if self.push.val() {
            if self.push_read.val() {
                self.t_read.d.next =
                    self.t_read_mid.val() | (self.c1_t.val() << self.t_cnt_mid.val());
            } else {
                self.t_read.d.next =
                    self.t_read_mid.val() & !(self.c1_t.val() << self.t_cnt_mid.val());
            }
            if self.push_atom.val() {
                self.t_atom.d.next =
                    self.t_atom_mid.val() | (self.c1_t.val() << self.t_cnt_mid.val());
            } else {
                self.t_atom.d.next =
                    self.t_atom_mid.val() & !(self.c1_t.val() << self.t_cnt_mid.val());
            }
            self.t_cnt.d.next = self.t_cnt_mid.val() + self.c1_6.val();
        } else {
            self.t_read.d.next = self.t_read_mid.val();
            self.t_atom.d.next = self.t_atom_mid.val();
            self.t_cnt.d.next = self.t_cnt_mid.val();
        }
        if self.push_atom.val() & !(self.pop.val() & self.sel_at.val()) {
            self.atom_n.d.next = self.atom_n.q.val() + self.c1_6.val();
        }
        if !self.push_atom.val() & self.pop.val() & self.sel_at.val() {
            self.atom_n.d.next = self.atom_n.q.val() - self.c1_6.val();
        }

        // ---- failure counters: +1 per pulse, -1 per tag popped without a record ----
        if self.s_rd_err.val() & !self.rd_skip_now.val() {
            self.rd_skip.d.next = self.rd_skip.q.val() + self.c1_6.val();
        }
        if !self.s_rd_err.val() & self.rd_skip_now.val() {
            self.rd_skip.d.next = self.rd_skip.q.val() - self.c1_6.val();
        }
        if (self.s_at_err.val() | self.s_at_miss.val()) & !self.at_skip_now.val() {
            self.at_skip.d.next = self.at_skip.q.val() + self.c1_6.val();
        }
        if !(self.s_at_err.val() | self.s_at_miss.val()) & self.at_skip_now.val() {
            self.at_skip.d.next = self.at_skip.q.val() - self.c1_6.val();
        }

        if self.reset.val() {
            self.a_wr.d.next = self.c0_a.val();
            self.a_rd.d.next = self.c0_a.val();
            self.a_cnt.d.next = self.c0_5.val();
            self.a_head_ok.d.next = false;
            self.t_cnt.d.next = self.c0_6.val();
            self.atom_n.d.next = self.c0_6.val();
            self.rd_skip.d.next = self.c0_6.val();
            self.at_skip.d.next = self.c0_6.val();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{Bench, Rng};
    use crate::tx::tx_arbiter::pack;
    use std::collections::VecDeque;

    const PSN_AT: usize = 48 + 48 + 32 + 32 + 16 + 8 + 1 + 1 + 24;

    /// A record carrying `opcode` and a unique `id` (in the PSN field).
    fn record(opcode: u64, id: u64) -> Bits<RECORD_BITS> {
        let mut v = [0u64; 21];
        v[5] = opcode;
        v[9] = id;
        v[0] = id * 0x1_0001; // some other bits that must pass unchanged
        v[20] = (id * 7) & 0xFF_FFFF; // src_qp, the record's last field
        pack(&v)
    }

    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Outcome {
        Ok,
        /// READ: fails after this many records; atomic: DMA failure.
        Fail(usize),
        /// Replay cache miss.
        Miss,
    }

    #[derive(Clone, Copy, Debug)]
    enum Decision {
        Ack(u64),
        /// First record id, packets, outcome.
        Read(u64, usize, Outcome),
        Atomic(u64, Outcome),
        Replay(u64, Outcome),
    }

    fn read_opcode(k: usize, n: usize) -> u64 {
        match (k, n) {
            (0, 1) => OP_READ_ONLY,
            (0, _) => 0x0d,
            (k, n) if k + 1 == n => OP_READ_LAST,
            _ => 0x0e,
        }
    }

    /// The records the decisions must produce, in order.
    fn expected(ds: &[Decision]) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        for d in ds {
            match *d {
                Decision::Ack(id) => out.push((0x11, id)),
                Decision::Read(id, n, o) => {
                    let sent = match o {
                        Outcome::Fail(k) => k,
                        _ => n,
                    };
                    for k in 0..sent {
                        out.push((read_opcode(k, n), id + k as u64));
                    }
                }
                Decision::Atomic(id, Outcome::Ok) | Decision::Replay(id, Outcome::Ok) => {
                    out.push((0x12, id))
                }
                _ => {}
            }
        }
        out
    }

    fn decisions(
        rng: &mut Rng,
        n: usize,
        p_read: u32,
        p_atomic: u32,
        p_fail: u32,
    ) -> Vec<Decision> {
        let mut id = 1u64;
        let mut ds = Vec::new();
        for _ in 0..n {
            let r = rng.below(100) as u32;
            let fail = rng.percent(p_fail);
            let d = if r < p_read {
                let span = if rng.percent(20) { 12 } else { 3 };
                let pk = 1 + rng.below(span) as usize;
                let o = if fail {
                    Outcome::Fail(rng.below(pk as u64) as usize)
                } else {
                    Outcome::Ok
                };
                let d = Decision::Read(id, pk, o);
                id += pk as u64;
                d
            } else if r < p_read + p_atomic {
                let replay = rng.percent(30);
                let o = match (fail, replay) {
                    (false, _) => Outcome::Ok,
                    (true, true) => Outcome::Miss,
                    (true, false) => Outcome::Fail(0),
                };
                let d = if replay {
                    Decision::Replay(id, o)
                } else {
                    Decision::Atomic(id, o)
                };
                id += 1;
                d
            } else {
                id += 1;
                Decision::Ack(id - 1)
            };
            ds.push(d);
        }
        ds
    }

    /// One unit's work in progress (ReadResp or AtomicUnit emulated): the job, how many
    /// records it has sent, the cycles to wait before the next record or report.
    struct Unit {
        jobs: VecDeque<(usize, Decision)>,
        sent: usize,
        wait: u64,
        offering: bool,
    }

    impl Unit {
        fn new() -> Unit {
            Unit {
                jobs: VecDeque::new(),
                sent: 0,
                wait: 0,
                offering: false,
            }
        }
    }

    /// Runs `ds` through the block with the given patterns; returns the cycles taken.
    /// `slow_rd`: ReadResp's records come late (DMA latency), so later ACKs must wait.
    fn run(ds: &[Decision], seed: u64, ready_pct: u32, slow_rd: u64, stall: bool) -> u64 {
        let mut b = Bench::new(RspOrder::new(), |u| &mut u.clock);
        let mut rng = Rng::new(seed);
        b.uut.reset.next = true;
        b.tick();
        b.uut.reset.next = false;
        let want = expected(ds);
        let mut got: Vec<(u64, u64)> = Vec::new();
        let mut next = 0usize; // the responder's next decision
        let mut gap = 0u64;
        let mut rd = Unit::new();
        let mut at = Unit::new();
        // Decisions the units have finished (record taken or failure reported).
        let mut resolved = vec![false; ds.len()];
        let (mut rd_ready, mut at_ready, mut ap_ready) = (true, true, true);
        let mut cycles = 0u64;
        while got.len() < want.len() || next < ds.len() {
            cycles += 1;
            assert!(
                cycles < 200_000,
                "wedged: {} of {} records, decision {next}",
                got.len(),
                want.len()
            );
            // ---- inputs ----
            let offer = if gap == 0 { ds.get(next) } else { None };
            b.uut.ack.valid.next = matches!(offer, Some(Decision::Ack(_)));
            b.uut.s_rjob_valid.next = matches!(offer, Some(Decision::Read(..)));
            b.uut.s_ajob_valid.next = matches!(offer, Some(Decision::Atomic(..)));
            b.uut.s_rep_valid.next = matches!(offer, Some(Decision::Replay(..)));
            b.uut.ack.data.next = match offer {
                Some(Decision::Ack(id)) => record(0x11, *id),
                _ => record(0x11, 0xdead),
            };
            b.uut.m_rjob_ready.next = rd_ready;
            b.uut.m_ajob_ready.next = at_ready;
            b.uut.m_rep_ready.next = ap_ready;
            // ReadResp: records of the head job, then (failed) one report pulse.
            b.uut.rd.valid.next = false;
            b.uut.s_rd_err.next = false;
            b.uut.rd.data.next = record(0, 0);
            let mut rd_pulse = false;
            if let Some(&(_, Decision::Read(id, n, o))) = rd.jobs.front() {
                let stop = match o {
                    Outcome::Fail(k) => k,
                    _ => n,
                };
                if rd.wait == 0 {
                    if rd.sent < stop {
                        rd.offering = true;
                        b.uut.rd.valid.next = true;
                        b.uut.rd.data.next = record(read_opcode(rd.sent, n), id + rd.sent as u64);
                    } else {
                        rd_pulse = true;
                        b.uut.s_rd_err.next = true;
                    }
                }
            }
            b.uut.at.valid.next = false;
            b.uut.s_at_err.next = false;
            b.uut.s_at_miss.next = false;
            b.uut.at.data.next = record(0, 0);
            let mut at_pulse = false;
            if let Some(&(_, d)) = at.jobs.front() {
                if at.wait == 0 {
                    match d {
                        Decision::Atomic(id, Outcome::Ok) | Decision::Replay(id, Outcome::Ok) => {
                            at.offering = true;
                            b.uut.at.valid.next = true;
                            b.uut.at.data.next = record(0x12, id);
                        }
                        Decision::Replay(_, Outcome::Miss) => {
                            at_pulse = true;
                            b.uut.s_at_miss.next = true;
                        }
                        _ => {
                            at_pulse = true;
                            b.uut.s_at_err.next = true;
                        }
                    }
                }
            }
            let out_ready = if stall && (cycles / 300) % 2 == 1 {
                false
            } else {
                rng.percent(ready_pct)
            };
            b.uut.pkt.ready.next = out_ready;
            b.settle();

            // ---- outputs ----
            let u = &b.uut;
            if u.pkt.valid.val() && out_ready {
                let d = u.pkt.data.val();
                let rec = (
                    d.get_bits::<8>(OPCODE_AT).to_u64(),
                    d.get_bits::<24>(PSN_AT).to_u64(),
                );
                assert_eq!(
                    d.get_bits::<48>(0).to_u64(),
                    rec.1 * 0x1_0001,
                    "record bits"
                );
                got.push(rec);
                let i = got.len() - 1;
                assert!(i < want.len(), "extra record {rec:x?}");
                assert_eq!(got[i], want[i], "record {i} (opcode, id), cycle {cycles}");
            }
            // the job handshakes as the responder and as the unit see them agree
            assert_eq!(
                u.s_rjob_valid.val() && u.s_rjob_ready.val(),
                u.m_rjob_valid.val() && u.m_rjob_ready.val()
            );
            assert_eq!(
                u.s_ajob_valid.val() && u.s_ajob_ready.val(),
                u.m_ajob_valid.val() && u.m_ajob_ready.val()
            );
            assert_eq!(
                u.s_rep_valid.val() && u.s_rep_ready.val(),
                u.m_rep_valid.val() && u.m_rep_ready.val()
            );
            let taken = match offer {
                Some(Decision::Ack(_)) => u.ack.ready.val(),
                Some(Decision::Read(..)) => u.s_rjob_ready.val(),
                Some(Decision::Atomic(..)) => u.s_ajob_ready.val(),
                Some(Decision::Replay(..)) => u.s_rep_ready.val(),
                None => false,
            };
            let rd_take = rd.offering && u.rd.ready.val();
            let at_take = at.offering && u.at.ready.val();
            // ---- the emulated units and responder move on ----
            if taken {
                let d = ds[next];
                match d {
                    Decision::Read(..) => {
                        // The READ gate: every atomic decided before is finished.
                        for (j, e) in ds[..next].iter().enumerate() {
                            if matches!(e, Decision::Atomic(..) | Decision::Replay(..)) {
                                assert!(resolved[j], "READ {next} handed out before atomic {j}");
                            }
                        }
                        rd.jobs.push_back((next, d));
                    }
                    Decision::Atomic(..) | Decision::Replay(..) => at.jobs.push_back((next, d)),
                    Decision::Ack(_) => {}
                }
                next += 1;
                gap = if rng.percent(50) { 0 } else { rng.below(20) };
            } else {
                gap = gap.saturating_sub(1);
            }
            rd.wait = rd.wait.saturating_sub(1);
            if rd_take {
                rd.sent += 1;
                rd.offering = false;
                rd.wait = if rng.percent(70) { 0 } else { rng.below(4) };
            }
            if rd_pulse
                || (rd_take && {
                    let (_, d) = rd.jobs.front().unwrap();
                    matches!(d, Decision::Read(_, n, Outcome::Ok) if rd.sent == *n)
                })
            {
                let (j, _) = rd.jobs.pop_front().unwrap();
                resolved[j] = true;
                rd.sent = 0;
                // The next job's first record: after a DMA latency, or at once.
                rd.wait = if rng.percent(50) {
                    0
                } else {
                    rng.below(slow_rd + 1)
                };
            } else if rd_take && rd.wait == 0 && rd.sent > 0 {
                // a failure report comes a cycle or more after the last record
                if let Some((_, Decision::Read(_, _, Outcome::Fail(k)))) = rd.jobs.front() {
                    if rd.sent == *k {
                        rd.wait = 1 + rng.below(3);
                    }
                }
            }
            at.wait = at.wait.saturating_sub(1);
            if at_pulse || at_take {
                let (j, _) = at.jobs.pop_front().unwrap();
                resolved[j] = true;
                at.offering = false;
                at.wait = 2 + rng.below(slow_rd / 2 + 1);
            }
            rd_ready = rng.percent(80);
            at_ready = rng.percent(80);
            ap_ready = rng.percent(80);
            b.tick();
        }
        assert_eq!(got, want);
        assert!(rd.jobs.is_empty() && at.jobs.is_empty());
        println!(
            "{} decisions, {} records, {cycles} cycles",
            ds.len(),
            want.len()
        );
        cycles
    }

    /// Random mixes of ACKs, READs (1..12 packets) and atomics / replays, some failing,
    /// with random gaps, unit latencies and backpressure: every record out exactly once,
    /// in decision order; no READ job handed out while an atomic is pending.
    #[test]
    fn responses_leave_in_decision_order() {
        for (seed, p_read, p_atomic, p_fail, ready, slow, stall) in [
            (1u64, 30u32, 20u32, 0u32, 100u32, 40u64, false),
            (2, 40, 10, 20, 70, 60, false),
            (3, 20, 30, 30, 50, 10, false),
            (4, 50, 0, 10, 100, 100, true),
            (5, 10, 10, 10, 90, 30, true),
            (6, 30, 30, 50, 30, 5, false),
        ] {
            let mut rng = Rng::new(seed * 977);
            let ds = decisions(&mut rng, 150, p_read, p_atomic, p_fail);
            run(&ds, seed, ready, slow, stall);
        }
    }

    /// A READ with a long DMA latency and a stream of ACKs behind it: the ACKs wait (the
    /// responder stalls once the FIFOs are full) and then leave back to back, and with
    /// everything ready the records leave one per cycle (no bubble).
    #[test]
    fn acks_wait_for_an_earlier_read_and_then_stream() {
        let mut ds = vec![Decision::Read(1000, 4, Outcome::Ok)];
        ds.extend((0..60).map(Decision::Ack));
        run(&ds, 7, 100, 400, false);
        // Only ACKs, all ready: 60 records in about 60 cycles plus the FIFO's latency.
        let ds: Vec<Decision> = (0..60).map(Decision::Ack).collect();
        let mut b = Bench::new(RspOrder::new(), |u| &mut u.clock);
        b.uut.reset.next = true;
        b.tick();
        b.uut.reset.next = false;
        b.uut.pkt.ready.next = true;
        let (mut next, mut out, mut first) = (0usize, 0usize, None);
        for c in 0..200u64 {
            b.uut.ack.valid.next = next < ds.len();
            b.uut.ack.data.next = record(0x11, next as u64);
            b.settle();
            if b.uut.pkt.valid.val() {
                assert_eq!(
                    b.uut.pkt.data.val().get_bits::<24>(PSN_AT).to_u64(),
                    out as u64
                );
                first.get_or_insert(c);
                out += 1;
            }
            if b.uut.ack.valid.val() && b.uut.ack.ready.val() {
                next += 1;
            }
            b.tick();
        }
        assert_eq!(out, 60);
        assert_eq!(
            first,
            Some(2),
            "an ACK record leaves 2 cycles after it is taken"
        );
    }
}
