//! `RespCheck`: the responder's decision on one request packet, from its header record and
//! the QP's responder context; combinational.
//!
//! ```text
//!  header fields (opcode, psn, ack_req, ext flags, payload_len) --+
//!                                                                 +--> m_action, m_dup, m_kind, ...
//!  QP context (state, pmtu, access, epsn, nak_sent, rq_pi/ci,  ---+
//!              message in progress, WRITE total/offset)
//! ```
//!
//! The rule is the model's `responder::classify` (`model/src/responder.rs`), which the
//! model's `responder_rx` itself calls; the bench in `hdl/tests/against_model/resp_check.rs`
//! holds this block to it. In the model's order:
//!
//! 1. the QP is not in RTR/RTS/SQD: [`ACT_DROP`] (counted as UnknownQpDrops);
//! 2. PSN before the expected one (24-bit circle, `psn - epsn` in `0x800001..=0xFFFFFF`):
//!    [`ACT_DUP`] with `m_dup`: a READ is executed again ([`DUP_READ`], if the QP allows
//!    remote reads), an atomic is replayed ([`DUP_ATOMIC`]), anything else with AckReq is
//!    answered with an ACK of `m_ack_psn` = ePSN - 1 ([`DUP_ACK`]), else ignored;
//! 3. PSN after the expected one: [`ACT_AHEAD`], with `m_ahead_nak` if no PSN-sequence NAK
//!    was sent since the last in-order packet;
//! 4. in sequence: [`ACT_INVALID`] (NAK Invalid Request, QP to error) for an opcode out of
//!    sequence (a message in progress continues with MIDDLE/LAST of its kind; MIDDLE/LAST
//!    never start one), an access the QP does not allow, a SEND/WRITE payload breaking the
//!    PMTU rule (FIRST/MIDDLE exactly one PMTU, LAST 1..=PMTU, ONLY 0..=PMTU), a missing
//!    RETH/AtomicETH, a misaligned atomic; else [`ACT_EXEC`] with `m_kind`, `m_first`
//!    (starts a message), `m_last` (ends one), `m_len_err` (a WRITE overrunning its DMA
//!    length or ending short of it; reported after the first packet's MR check),
//!    `m_rnr` (needs a receive and none is posted) and `m_wr_end` (a WRITE's offset after
//!    this packet).
//!
//! The WRITE context keeps `wr_offset <= wr_total` (the model's invariant: a packet that
//! would pass it is refused), so `offset + len > total` is computed as `len > total -
//! offset` without a carry bit.

use crate::common::cat::Cat;
use crate::prelude::*;
use rocenic_proto::abi::verbs::{Mtu, QpState};
use rocenic_proto::wire::Opcode;

/// `m_action` codes.
pub const ACT_DROP: u64 = 0;
pub const ACT_DUP: u64 = 1;
pub const ACT_AHEAD: u64 = 2;
pub const ACT_INVALID: u64 = 3;
pub const ACT_EXEC: u64 = 4;
/// `m_dup` codes.
pub const DUP_IGNORE: u64 = 0;
pub const DUP_ACK: u64 = 1;
pub const DUP_READ: u64 = 2;
pub const DUP_ATOMIC: u64 = 3;
/// `m_kind` codes.
pub const KIND_SEND: u64 = 0;
pub const KIND_WRITE: u64 = 1;
pub const KIND_READ: u64 = 2;
pub const KIND_ATOMIC: u64 = 3;
/// `s_prog` codes: the message in progress.
pub const PROG_IDLE: u64 = 0;
pub const PROG_SEND: u64 = 1;
pub const PROG_WRITE: u64 = 2;

#[derive(LogicBlock)]
pub struct RespCheck {
    /// The request header (the RX record's fields).
    pub s_opcode: Signal<In, Bits<8>>,
    pub s_psn: Signal<In, Bits<24>>,
    pub s_ack_req: Signal<In, Bit>,
    pub s_has_reth: Signal<In, Bit>,
    pub s_reth_len: Signal<In, Bits<32>>,
    pub s_has_atomic: Signal<In, Bit>,
    /// Bits 2:0 of the AtomicETH's virtual address.
    pub s_atomic_va_lo: Signal<In, Bits<3>>,
    pub s_has_imm: Signal<In, Bit>,
    pub s_payload_len: Signal<In, Bits<16>>,
    /// The QP's context: state (`QpState` code), PMTU (ibv_mtu code), access flags.
    pub s_state: Signal<In, Bits<3>>,
    pub s_pmtu: Signal<In, Bits<3>>,
    pub s_access: Signal<In, Bits<4>>,
    /// Its responder state.
    pub s_epsn: Signal<In, Bits<24>>,
    pub s_nak_sent: Signal<In, Bit>,
    pub s_rq_pi: Signal<In, Bits<32>>,
    pub s_rq_ci: Signal<In, Bits<32>>,
    pub s_prog: Signal<In, Bits<2>>,
    pub s_wr_total: Signal<In, Bits<32>>,
    pub s_wr_offset: Signal<In, Bits<32>>,

    /// The decision (`ACT_*`).
    pub m_action: Signal<Out, Bits<3>>,
    /// Duplicates: what to answer (`DUP_*`), and the PSN of the re-ACK.
    pub m_dup: Signal<Out, Bits<2>>,
    pub m_ack_psn: Signal<Out, Bits<24>>,
    /// Ahead: send the PSN-sequence NAK (first since an in-order packet).
    pub m_ahead_nak: Signal<Out, Bit>,
    /// Execute: kind (`KIND_*`), starts / ends a message, WRITE length error, RNR.
    pub m_kind: Signal<Out, Bits<2>>,
    pub m_first: Signal<Out, Bit>,
    pub m_last: Signal<Out, Bit>,
    pub m_len_err: Signal<Out, Bit>,
    pub m_rnr: Signal<Out, Bit>,
    /// WRITE: the message offset after this packet (its length for a first packet).
    pub m_wr_end: Signal<Out, Bits<32>>,

    len32: Cat<16, 16, 32>,

    op_send_first: Constant<Bits<8>>,
    op_send_middle: Constant<Bits<8>>,
    op_send_last: Constant<Bits<8>>,
    op_send_last_imm: Constant<Bits<8>>,
    op_send_only: Constant<Bits<8>>,
    op_send_only_imm: Constant<Bits<8>>,
    op_write_first: Constant<Bits<8>>,
    op_write_middle: Constant<Bits<8>>,
    op_write_last: Constant<Bits<8>>,
    op_write_last_imm: Constant<Bits<8>>,
    op_write_only: Constant<Bits<8>>,
    op_write_only_imm: Constant<Bits<8>>,
    op_read: Constant<Bits<8>>,
    op_cmp_swap: Constant<Bits<8>>,
    op_fetch_add: Constant<Bits<8>>,
    op_send_last_inv: Constant<Bits<8>>,
    op_send_only_inv: Constant<Bits<8>>,
    st_rtr: Constant<Bits<3>>,
    st_rts: Constant<Bits<3>>,
    st_sqd: Constant<Bits<3>>,
    mtu_256: Constant<Bits<3>>,
    mtu_512: Constant<Bits<3>>,
    mtu_1024: Constant<Bits<3>>,
    mtu_2048: Constant<Bits<3>>,
    mtu_4096: Constant<Bits<3>>,
    b256: Constant<Bits<16>>,
    b512: Constant<Bits<16>>,
    b1024: Constant<Bits<16>>,
    b2048: Constant<Bits<16>>,
    b4096: Constant<Bits<16>>,
    zero16: Constant<Bits<16>>,
    zero3: Constant<Bits<3>>,
    zero24: Constant<Bits<24>>,
    zero32: Constant<Bits<32>>,
    one24: Constant<Bits<24>>,
    half24: Constant<Bits<24>>,
    prog_idle: Constant<Bits<2>>,
    prog_send: Constant<Bits<2>>,
    prog_write: Constant<Bits<2>>,
    act_drop: Constant<Bits<3>>,
    act_dup: Constant<Bits<3>>,
    act_ahead: Constant<Bits<3>>,
    act_invalid: Constant<Bits<3>>,
    act_exec: Constant<Bits<3>>,
    dup_ignore: Constant<Bits<2>>,
    dup_ack: Constant<Bits<2>>,
    dup_read: Constant<Bits<2>>,
    dup_atomic: Constant<Bits<2>>,
    kind_send: Constant<Bits<2>>,
    kind_write: Constant<Bits<2>>,
    kind_read: Constant<Bits<2>>,
    kind_atomic: Constant<Bits<2>>,

    can_receive: Signal<Local, Bit>,
    diff: Signal<Local, Bits<24>>,
    is_send: Signal<Local, Bit>,
    is_write: Signal<Local, Bit>,
    is_read: Signal<Local, Bit>,
    is_atomic: Signal<Local, Bit>,
    is_first: Signal<Local, Bit>,
    is_middle: Signal<Local, Bit>,
    is_last: Signal<Local, Bit>,
    is_only: Signal<Local, Bit>,
    continues: Signal<Local, Bit>,
    seq_ok: Signal<Local, Bit>,
    pmtu_bytes: Signal<Local, Bits<16>>,
    len_ok: Signal<Local, Bit>,
    rq_empty: Signal<Local, Bit>,
    wr_first: Signal<Local, Bit>,
    wr_rem: Signal<Local, Bits<32>>,
    wr_base: Signal<Local, Bits<32>>,
    may_write: Signal<Local, Bit>,
    may_read: Signal<Local, Bit>,
    may_atomic: Signal<Local, Bit>,
    /// LOCAL_WRITE: not a remote access.
    unused_access: Signal<Local, Bit>,
}

impl Default for RespCheck {
    fn default() -> Self {
        let c8 = |v: u64| Constant::new(v.to_bits());
        let op = |o: Opcode| c8(u8::from(o).into());
        RespCheck {
            s_opcode: Default::default(),
            s_psn: Default::default(),
            s_ack_req: Default::default(),
            s_has_reth: Default::default(),
            s_reth_len: Default::default(),
            s_has_atomic: Default::default(),
            s_atomic_va_lo: Default::default(),
            s_has_imm: Default::default(),
            s_payload_len: Default::default(),
            s_state: Default::default(),
            s_pmtu: Default::default(),
            s_access: Default::default(),
            s_epsn: Default::default(),
            s_nak_sent: Default::default(),
            s_rq_pi: Default::default(),
            s_rq_ci: Default::default(),
            s_prog: Default::default(),
            s_wr_total: Default::default(),
            s_wr_offset: Default::default(),
            m_action: Default::default(),
            m_dup: Default::default(),
            m_ack_psn: Default::default(),
            m_ahead_nak: Default::default(),
            m_kind: Default::default(),
            m_first: Default::default(),
            m_last: Default::default(),
            m_len_err: Default::default(),
            m_rnr: Default::default(),
            m_wr_end: Default::default(),
            len32: Default::default(),
            op_send_first: op(Opcode::SendFirst),
            op_send_middle: op(Opcode::SendMiddle),
            op_send_last: op(Opcode::SendLast),
            op_send_last_imm: op(Opcode::SendLastWithImmediate),
            op_send_only: op(Opcode::SendOnly),
            op_send_only_imm: op(Opcode::SendOnlyWithImmediate),
            op_write_first: op(Opcode::RdmaWriteFirst),
            op_write_middle: op(Opcode::RdmaWriteMiddle),
            op_write_last: op(Opcode::RdmaWriteLast),
            op_write_last_imm: op(Opcode::RdmaWriteLastWithImmediate),
            op_write_only: op(Opcode::RdmaWriteOnly),
            op_write_only_imm: op(Opcode::RdmaWriteOnlyWithImmediate),
            op_read: op(Opcode::RdmaReadRequest),
            op_cmp_swap: op(Opcode::CompareSwap),
            op_fetch_add: op(Opcode::FetchAdd),
            op_send_last_inv: op(Opcode::SendLastWithInvalidate),
            op_send_only_inv: op(Opcode::SendOnlyWithInvalidate),
            st_rtr: Constant::new(u64::from(QpState::Rtr.code()).to_bits()),
            st_rts: Constant::new(u64::from(QpState::Rts.code()).to_bits()),
            st_sqd: Constant::new(u64::from(QpState::Sqd.code()).to_bits()),
            mtu_256: Constant::new((Mtu::Mtu256 as u64).to_bits()),
            mtu_512: Constant::new((Mtu::Mtu512 as u64).to_bits()),
            mtu_1024: Constant::new((Mtu::Mtu1024 as u64).to_bits()),
            mtu_2048: Constant::new((Mtu::Mtu2048 as u64).to_bits()),
            mtu_4096: Constant::new((Mtu::Mtu4096 as u64).to_bits()),
            b256: Constant::new(256u64.to_bits()),
            b512: Constant::new(512u64.to_bits()),
            b1024: Constant::new(1024u64.to_bits()),
            b2048: Constant::new(2048u64.to_bits()),
            b4096: Constant::new(4096u64.to_bits()),
            zero16: Constant::new(0u64.to_bits()),
            zero3: Constant::new(0u64.to_bits()),
            zero24: Constant::new(0u64.to_bits()),
            zero32: Constant::new(0u64.to_bits()),
            one24: Constant::new(1u64.to_bits()),
            half24: Constant::new(0x80_0000u64.to_bits()),
            prog_idle: Constant::new(PROG_IDLE.to_bits()),
            prog_send: Constant::new(PROG_SEND.to_bits()),
            prog_write: Constant::new(PROG_WRITE.to_bits()),
            act_drop: Constant::new(ACT_DROP.to_bits()),
            act_dup: Constant::new(ACT_DUP.to_bits()),
            act_ahead: Constant::new(ACT_AHEAD.to_bits()),
            act_invalid: Constant::new(ACT_INVALID.to_bits()),
            act_exec: Constant::new(ACT_EXEC.to_bits()),
            dup_ignore: Constant::new(DUP_IGNORE.to_bits()),
            dup_ack: Constant::new(DUP_ACK.to_bits()),
            dup_read: Constant::new(DUP_READ.to_bits()),
            dup_atomic: Constant::new(DUP_ATOMIC.to_bits()),
            kind_send: Constant::new(KIND_SEND.to_bits()),
            kind_write: Constant::new(KIND_WRITE.to_bits()),
            kind_read: Constant::new(KIND_READ.to_bits()),
            kind_atomic: Constant::new(KIND_ATOMIC.to_bits()),
            can_receive: Default::default(),
            diff: Default::default(),
            is_send: Default::default(),
            is_write: Default::default(),
            is_read: Default::default(),
            is_atomic: Default::default(),
            is_first: Default::default(),
            is_middle: Default::default(),
            is_last: Default::default(),
            is_only: Default::default(),
            continues: Default::default(),
            seq_ok: Default::default(),
            pmtu_bytes: Default::default(),
            len_ok: Default::default(),
            rq_empty: Default::default(),
            wr_first: Default::default(),
            wr_rem: Default::default(),
            wr_base: Default::default(),
            may_write: Default::default(),
            may_read: Default::default(),
            may_atomic: Default::default(),
            unused_access: Default::default(),
        }
    }
}

impl Logic for RespCheck {
    #[hdl_gen]
    fn update(&mut self) {
        // ---- opcode classes (RC opcodes; anything else is none of them) ----
        self.is_send.next = (self.s_opcode.val() <= self.op_send_only_imm.val())
            | (self.s_opcode.val() == self.op_send_last_inv.val())
            | (self.s_opcode.val() == self.op_send_only_inv.val());
        self.is_write.next = (self.s_opcode.val() >= self.op_write_first.val())
            & (self.s_opcode.val() <= self.op_write_only_imm.val());
        self.is_read.next = self.s_opcode.val() == self.op_read.val();
        self.is_atomic.next = (self.s_opcode.val() == self.op_cmp_swap.val())
            | (self.s_opcode.val() == self.op_fetch_add.val());
        self.is_first.next = (self.s_opcode.val() == self.op_send_first.val())
            | (self.s_opcode.val() == self.op_write_first.val());
        self.is_middle.next = (self.s_opcode.val() == self.op_send_middle.val())
            | (self.s_opcode.val() == self.op_write_middle.val());
        self.is_last.next = (self.s_opcode.val() == self.op_send_last.val())
            | (self.s_opcode.val() == self.op_send_last_imm.val())
            | (self.s_opcode.val() == self.op_send_last_inv.val())
            | (self.s_opcode.val() == self.op_write_last.val())
            | (self.s_opcode.val() == self.op_write_last_imm.val());
        self.is_only.next = (self.s_opcode.val() == self.op_send_only.val())
            | (self.s_opcode.val() == self.op_send_only_imm.val())
            | (self.s_opcode.val() == self.op_send_only_inv.val())
            | (self.s_opcode.val() == self.op_write_only.val())
            | (self.s_opcode.val() == self.op_write_only_imm.val());
        self.continues.next = self.is_middle.val() | self.is_last.val();

        // ---- context ----
        self.can_receive.next = (self.s_state.val() == self.st_rtr.val())
            | (self.s_state.val() == self.st_rts.val())
            | (self.s_state.val() == self.st_sqd.val());
        self.diff.next = self.s_psn.val() - self.s_epsn.val();
        self.rq_empty.next = self.s_rq_pi.val() == self.s_rq_ci.val();
        self.may_write.next = self.s_access.val().get_bit(1);
        self.may_read.next = self.s_access.val().get_bit(2);
        self.may_atomic.next = self.s_access.val().get_bit(3);
        self.unused_access.next = self.s_access.val().get_bit(0);
        self.seq_ok.next = false;
        if self.s_prog.val() == self.prog_idle.val() {
            self.seq_ok.next = !self.continues.val();
        } else if self.s_prog.val() == self.prog_send.val() {
            self.seq_ok.next = self.continues.val() & self.is_send.val();
        } else if self.s_prog.val() == self.prog_write.val() {
            self.seq_ok.next = self.continues.val() & self.is_write.val();
        }

        // ---- payload length against the PMTU ----
        self.pmtu_bytes.next = self.zero16.val();
        if self.s_pmtu.val() == self.mtu_256.val() {
            self.pmtu_bytes.next = self.b256.val();
        }
        if self.s_pmtu.val() == self.mtu_512.val() {
            self.pmtu_bytes.next = self.b512.val();
        }
        if self.s_pmtu.val() == self.mtu_1024.val() {
            self.pmtu_bytes.next = self.b1024.val();
        }
        if self.s_pmtu.val() == self.mtu_2048.val() {
            self.pmtu_bytes.next = self.b2048.val();
        }
        if self.s_pmtu.val() == self.mtu_4096.val() {
            self.pmtu_bytes.next = self.b4096.val();
        }
        if self.is_first.val() | self.is_middle.val() {
            self.len_ok.next = self.s_payload_len.val() == self.pmtu_bytes.val();
        } else if self.is_last.val() {
            self.len_ok.next = (self.s_payload_len.val() != self.zero16.val())
                & (self.s_payload_len.val() <= self.pmtu_bytes.val());
        } else {
            self.len_ok.next = self.s_payload_len.val() <= self.pmtu_bytes.val();
        }

        // ---- WRITE: the range of the message left ----
        self.len32.hi.next = self.zero16.val();
        self.len32.lo.next = self.s_payload_len.val();
        self.wr_first.next = self.s_prog.val() != self.prog_write.val();
        if self.wr_first.val() {
            self.wr_rem.next = self.s_reth_len.val();
            self.wr_base.next = self.zero32.val();
        } else {
            self.wr_rem.next = self.s_wr_total.val() - self.s_wr_offset.val();
            self.wr_base.next = self.s_wr_offset.val();
        }

        // ---- the decision ----
        self.m_dup.next = self.dup_ignore.val();
        self.m_ack_psn.next = self.s_epsn.val() - self.one24.val();
        self.m_ahead_nak.next = !self.s_nak_sent.val();
        self.m_kind.next = self.kind_send.val();
        self.m_first.next = true;
        self.m_last.next = true;
        self.m_len_err.next = false;
        self.m_rnr.next = false;
        self.m_wr_end.next = self.wr_base.val() + self.len32.y.val();
        if self.is_read.val() {
            if self.may_read.val() & self.s_has_reth.val() {
                self.m_dup.next = self.dup_read.val();
            }
        } else if self.is_atomic.val() {
            self.m_dup.next = self.dup_atomic.val();
        } else if self.s_ack_req.val() {
            self.m_dup.next = self.dup_ack.val();
        }
        if !self.can_receive.val() {
            self.m_action.next = self.act_drop.val();
        } else if self.diff.val() > self.half24.val() {
            self.m_action.next = self.act_dup.val();
        } else if self.diff.val() != self.zero24.val() {
            self.m_action.next = self.act_ahead.val();
        } else if !self.seq_ok.val() {
            self.m_action.next = self.act_invalid.val();
        } else if self.is_send.val() {
            self.m_action.next = self.act_invalid.val();
            if self.len_ok.val() {
                self.m_action.next = self.act_exec.val();
            }
            self.m_first.next = self.s_prog.val() == self.prog_idle.val();
            self.m_last.next = self.is_last.val() | self.is_only.val();
            self.m_rnr.next = (self.s_prog.val() == self.prog_idle.val()) & self.rq_empty.val();
        } else if self.is_write.val() {
            self.m_action.next = self.act_invalid.val();
            if self.may_write.val()
                & self.len_ok.val()
                & (!self.wr_first.val() | self.s_has_reth.val())
            {
                self.m_action.next = self.act_exec.val();
            }
            self.m_kind.next = self.kind_write.val();
            self.m_first.next = self.wr_first.val();
            self.m_last.next = self.is_last.val() | self.is_only.val();
            self.m_len_err.next = (self.len32.y.val() > self.wr_rem.val())
                | ((self.is_last.val() | self.is_only.val())
                    & (self.len32.y.val() != self.wr_rem.val()));
            self.m_rnr.next = self.s_has_imm.val() & self.rq_empty.val();
        } else if self.is_read.val() {
            self.m_action.next = self.act_invalid.val();
            if self.may_read.val() & self.s_has_reth.val() {
                self.m_action.next = self.act_exec.val();
            }
            self.m_kind.next = self.kind_read.val();
        } else if self.is_atomic.val() {
            self.m_action.next = self.act_invalid.val();
            if self.may_atomic.val()
                & self.s_has_atomic.val()
                & (self.s_atomic_va_lo.val() == self.zero3.val())
            {
                self.m_action.next = self.act_exec.val();
            }
            self.m_kind.next = self.kind_atomic.val();
        } else {
            self.m_action.next = self.act_invalid.val();
        }
    }
}
