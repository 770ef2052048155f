//! `ReqRxCheck`: the requester's decision on one response (ACK, NAK, RNR NAK, READ
//! response, atomic ACK), from the response's header fields, the QP's requester state and
//! a walk over its outstanding operations, one op per cycle.
//!
//! ```text
//!  response fields (opcode, psn, syndrome, ...) ---------+  (held during the walk)
//!  QP requester state (una, sent_end, retries, ...) -----+
//!  s_start, then s_op_valid + one op per cycle --> walk registers --> m_* (the decision)
//! ```
//!
//! The rule is the model's `requester::on_response` (`model/src/requester.rs`), which the model's
//! `requester_rx` itself calls; the bench in `hdl/tests/against_model/req_rx_check.rs` holds this
//! block to it. The sequencer keeps each QP's outstanding ops in a ring (oldest first, as the
//! model's `ops`); to decide on a response it holds the response's fields and the QP's `qpr` state
//! on the `s_*` inputs, pulses `s_start`, then feeds the ring's entries in order on `s_op_*` (one
//! per cycle, any gaps allowed). Once the last entry is in, the `m_*` outputs are the decision
//! (combinational from the walk's registers and the held inputs).
//!
//! What one pass over the ops collects (every op not `done`):
//!
//! - the first unfinished op (`fu`): the op an exhausted retry fails when nothing was
//!   acknowledged;
//! - the acknowledgement walk for PSN `a` (`psn` for an ACK, `psn - 1` for a NAK, RNR NAK
//!   or an in-order READ response / atomic ACK, whose acknowledgement covers everything
//!   before the op it answers): where it stops (`brk`: an op starting after `a`, ending
//!   after `a`, or a READ/atomic), whether that READ/atomic lost its response (it ends at
//!   or before `a`) and the PSN it waits for; the next unfinished op after it (`nxt`, the
//!   op a second exhausted retry fails);
//! - the first unfinished READ/atomic (`rl`): the response PSN it expects (the window
//!   never passes it) and its fields for the response checks;
//! - the first unfinished op holding `psn` (`hold`): the op an error NAK fails (unless
//!   the `rl` op waits for a PSN before the NAK's: its response was lost, and going back
//!   to it is all the NAK does).
//!
//! The decision then follows the model step by step (acknowledge, go back for a lost
//! response, then the NAK / RNR / response rule; see `on_response`). One assumption the
//! model's state always satisfies and this block relies on: a READ/atomic that already
//! has responses lies below `una` (its responses moved the window), so an in-order
//! response acknowledges earlier ops only when it is the op's first (`a = psn - 1`).
//!
//! Up to [`OPS`] ops per QP; `m_ack_upto`, `m_fail*_op`, `m_dlv_op` are positions in the
//! walk (0 = the oldest). Codes: [`CNT_NONE`].. for `m_count`, [`CUR_KEEP`].. for
//! `m_cursor`, [`TMR_KEEP`].. for `m_timer`, `ibv_wc_status` values for the fail statuses.
//!
//! `Requester` (its receive half) applies the decision: ops marked done or failed, `qpr`
//! written, the payload written by DMA, ops retired, and `m_cursor` (go-back-N),
//! `m_timer` and `m_rnr_wait` (`QpTimers`, kinds ACK and RNR), `m_rewound`.

use crate::common::cat::Cat;
use crate::prelude::*;
use rocenic_proto::abi::verbs::{Mtu, WcStatus};
use rocenic_proto::wire::{NakCode, Opcode, Syndrome};

/// Outstanding ops per QP the walk can count (positions are `IDX_BITS` wide).
pub const OPS: usize = 16;
pub const IDX_BITS: usize = 5;

/// `s_op_kind` codes (the model's `OpKind`).
pub const KIND_SEND: u64 = 0;
pub const KIND_WRITE: u64 = 1;
pub const KIND_READ: u64 = 2;
pub const KIND_ATOMIC: u64 = 3;
/// `m_count`: the counter the response bumps.
pub const CNT_NONE: u64 = 0;
pub const CNT_NAK: u64 = 1;
pub const CNT_RNR: u64 = 2;
pub const CNT_DUP: u64 = 3;
pub const CNT_MALFORMED: u64 = 4;
/// `m_cursor`: the transmit cursor.
pub const CUR_KEEP: u64 = 0;
pub const CUR_REWIND: u64 = 1;
pub const CUR_STOP: u64 = 2;
/// `m_timer`: the local ACK timer.
pub const TMR_KEEP: u64 = 0;
pub const TMR_ARM: u64 = 1;
pub const TMR_CLEAR: u64 = 2;

#[derive(LogicBlock)]
pub struct ReqRxCheck {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,

    /// The response (held from `s_start` until the decision is taken).
    pub s_opcode: Signal<In, Bits<8>>,
    pub s_psn: Signal<In, Bits<24>>,
    pub s_has_aeth: Signal<In, Bit>,
    pub s_syndrome: Signal<In, Bits<8>>,
    pub s_has_atomic_ack: Signal<In, Bit>,
    pub s_payload_len: Signal<In, Bits<16>>,
    /// The QP's requester state (`qpr`) and its retry attributes.
    pub s_una: Signal<In, Bits<24>>,
    pub s_sent_end: Signal<In, Bits<24>>,
    pub s_retry_left: Signal<In, Bits<3>>,
    pub s_rnr_left: Signal<In, Bits<3>>,
    pub s_retry_cnt: Signal<In, Bits<3>>,
    pub s_rnr_retry: Signal<In, Bits<3>>,
    pub s_rewound_valid: Signal<In, Bit>,
    pub s_rewound: Signal<In, Bits<24>>,
    pub s_rnr_waiting: Signal<In, Bit>,

    /// Starts a walk (clears what the last one collected).
    pub s_start: Signal<In, Bit>,
    /// One op of the QP's ring, oldest first.
    pub s_op_valid: Signal<In, Bit>,
    pub s_op_kind: Signal<In, Bits<2>>,
    pub s_op_first: Signal<In, Bits<24>>,
    pub s_op_npsn: Signal<In, Bits<24>>,
    pub s_op_resp: Signal<In, Bits<24>>,
    pub s_op_len: Signal<In, Bits<32>>,
    /// The PMTU the op was segmented at (ibv_mtu code, 1..=5).
    pub s_op_pmtu: Signal<In, Bits<3>>,
    pub s_op_done: Signal<In, Bit>,

    /// The decision (`CNT_*`).
    pub m_count: Signal<Out, Bits<3>>,
    /// Unfinished ops before this position are acknowledged.
    pub m_ack_upto: Signal<Out, Bits<IDX_BITS>>,
    /// The window state after the response (before a delivery).
    pub m_una: Signal<Out, Bits<24>>,
    pub m_retry_left: Signal<Out, Bits<3>>,
    pub m_rnr_left: Signal<Out, Bits<3>>,
    pub m_rewound_valid: Signal<Out, Bit>,
    pub m_rewound: Signal<Out, Bits<24>>,
    /// Ops failing, in order (status: `ibv_wc_status`; syndrome: the NAK's).
    pub m_fail0_valid: Signal<Out, Bit>,
    pub m_fail0_op: Signal<Out, Bits<IDX_BITS>>,
    pub m_fail0_status: Signal<Out, Bits<5>>,
    pub m_fail0_syndrome: Signal<Out, Bits<8>>,
    pub m_fail1_valid: Signal<Out, Bit>,
    pub m_fail1_op: Signal<Out, Bits<IDX_BITS>>,
    pub m_fail1_status: Signal<Out, Bits<5>>,
    pub m_fail1_syndrome: Signal<Out, Bits<8>>,
    /// The transmit cursor (`CUR_*`) and the rewind PSN.
    pub m_cursor: Signal<Out, Bits<2>>,
    pub m_cursor_psn: Signal<Out, Bits<24>>,
    /// The ACK timer (`TMR_*`).
    pub m_timer: Signal<Out, Bits<2>>,
    /// An RNR wait starts (the syndrome's timer code).
    pub m_rnr_wait: Signal<Out, Bit>,
    pub m_rnr_timer: Signal<Out, Bits<5>>,
    /// Delivery of an in-order READ response / atomic ACK: op, buffer offset, length,
    /// atomic, and the window once delivered.
    pub m_dlv_valid: Signal<Out, Bit>,
    pub m_dlv_op: Signal<Out, Bits<IDX_BITS>>,
    pub m_dlv_offset: Signal<Out, Bits<32>>,
    pub m_dlv_len: Signal<Out, Bits<32>>,
    pub m_dlv_atomic: Signal<Out, Bit>,
    pub m_dlv_una: Signal<Out, Bits<24>>,
    /// The QP has requester work to look at.
    pub m_activate: Signal<Out, Bit>,

    // ---- the walk's registers ----
    idx: DFF<Bits<IDX_BITS>>,
    fu_found: DFF<Bit>,
    fu_idx: DFF<Bits<IDX_BITS>>,
    brk_found: DFF<Bit>,
    brk_idx: DFF<Bits<IDX_BITS>>,
    brk_lost: DFF<Bit>,
    brk_wait: DFF<Bits<24>>,
    nxt_found: DFF<Bit>,
    nxt_idx: DFF<Bits<IDX_BITS>>,
    rl_found: DFF<Bit>,
    rl_idx: DFF<Bits<IDX_BITS>>,
    rl_atomic: DFF<Bit>,
    rl_first: DFF<Bits<24>>,
    rl_npsn: DFF<Bits<24>>,
    rl_resp: DFF<Bits<24>>,
    rl_len: DFF<Bits<32>>,
    rl_pmtu: DFF<Bits<3>>,
    rl_wait: DFF<Bits<24>>,
    hold_found: DFF<Bit>,
    hold_idx: DFF<Bits<IDX_BITS>>,

    k32: Cat<8, 24, 32>,
    plen32: Cat<16, 16, 32>,

    op_ack: Constant<Bits<8>>,
    op_rd_first: Constant<Bits<8>>,
    op_rd_middle: Constant<Bits<8>>,
    op_rd_last: Constant<Bits<8>>,
    op_rd_only: Constant<Bits<8>>,
    op_atomic_ack: Constant<Bits<8>>,
    syn_ack: Constant<Bits<3>>,
    syn_rnr: Constant<Bits<3>>,
    syn_nak: Constant<Bits<3>>,
    nak_seq: Constant<Bits<5>>,
    nak_inv: Constant<Bits<5>>,
    nak_access: Constant<Bits<5>>,
    nak_inv_rd: Constant<Bits<5>>,
    st_bad_resp: Constant<Bits<5>>,
    st_rem_inv_req: Constant<Bits<5>>,
    st_rem_access: Constant<Bits<5>>,
    st_rem_op: Constant<Bits<5>>,
    st_retry_exc: Constant<Bits<5>>,
    st_rnr_retry_exc: Constant<Bits<5>>,
    cnt_none: Constant<Bits<3>>,
    cnt_nak: Constant<Bits<3>>,
    cnt_rnr: Constant<Bits<3>>,
    cnt_dup: Constant<Bits<3>>,
    cnt_malformed: Constant<Bits<3>>,
    cur_keep: Constant<Bits<2>>,
    cur_rewind: Constant<Bits<2>>,
    cur_stop: Constant<Bits<2>>,
    tmr_keep: Constant<Bits<2>>,
    tmr_arm: Constant<Bits<2>>,
    tmr_clear: Constant<Bits<2>>,
    mtu_256: Constant<Bits<3>>,
    mtu_512: Constant<Bits<3>>,
    mtu_1024: Constant<Bits<3>>,
    mtu_2048: Constant<Bits<3>>,
    mtu_4096: Constant<Bits<3>>,
    sh_256: Constant<Bits<4>>,
    sh_512: Constant<Bits<4>>,
    sh_1024: Constant<Bits<4>>,
    sh_2048: Constant<Bits<4>>,
    sh_4096: Constant<Bits<4>>,
    b256: Constant<Bits<32>>,
    b512: Constant<Bits<32>>,
    b1024: Constant<Bits<32>>,
    b2048: Constant<Bits<32>>,
    b4096: Constant<Bits<32>>,
    eight32: Constant<Bits<32>>,
    zero32: Constant<Bits<32>>,
    zero24: Constant<Bits<24>>,
    one24: Constant<Bits<24>>,
    half24: Constant<Bits<24>>,
    zero3: Constant<Bits<3>>,
    one3: Constant<Bits<3>>,
    seven3: Constant<Bits<3>>,
    zero8: Constant<Bits<8>>,
    zero8h: Constant<Bits<8>>,
    zero16: Constant<Bits<16>>,
    zero_idx: Constant<Bits<IDX_BITS>>,
    one_idx: Constant<Bits<IDX_BITS>>,

    // ---- per op ----
    ack_psn: Signal<Local, Bits<24>>,
    op_last: Signal<Local, Bits<24>>,
    op_wait: Signal<Local, Bits<24>>,
    op_rl: Signal<Local, Bit>,
    d_first_a: Signal<Local, Bits<24>>,
    d_last_a: Signal<Local, Bits<24>>,
    last_after: Signal<Local, Bit>,
    brk_here: Signal<Local, Bit>,
    d_psn_first: Signal<Local, Bits<24>>,
    d_psn_last: Signal<Local, Bits<24>>,
    holds: Signal<Local, Bit>,

    // ---- the decision ----
    syn_kind: Signal<Local, Bits<3>>,
    nak_code: Signal<Local, Bits<5>>,
    is_ackop: Signal<Local, Bit>,
    is_rd: Signal<Local, Bit>,
    is_aack: Signal<Local, Bit>,
    t_ack: Signal<Local, Bit>,
    t_rnr: Signal<Local, Bit>,
    t_nak: Signal<Local, Bit>,
    d_psn_una: Signal<Local, Bits<24>>,
    d_psn_end: Signal<Local, Bits<24>>,
    psn_ge_una: Signal<Local, Bit>,
    psn_gt_una: Signal<Local, Bit>,
    in_win: Signal<Local, Bit>,
    malformed_aack: Signal<Local, Bit>,
    resp_path: Signal<Local, Bit>,
    d_rl: Signal<Local, Bits<24>>,
    rl_dup: Signal<Local, Bit>,
    kind_ok: Signal<Local, Bit>,
    expect_dup: Signal<Local, Bit>,
    expect_miss: Signal<Local, Bit>,
    expect_hit: Signal<Local, Bit>,
    d_rf_una: Signal<Local, Bits<24>>,
    rfm1_end: Signal<Local, Bits<24>>,
    ack_en: Signal<Local, Bit>,
    a_next: Signal<Local, Bits<24>>,
    d_wait_next: Signal<Local, Bits<24>>,
    new_una: Signal<Local, Bits<24>>,
    d_nu: Signal<Local, Bits<24>>,
    progressed: Signal<Local, Bit>,
    una1: Signal<Local, Bits<24>>,
    retry1: Signal<Local, Bits<3>>,
    rnr1: Signal<Local, Bits<3>>,
    rewv1: Signal<Local, Bit>,
    lost: Signal<Local, Bit>,
    do_a: Signal<Local, Bit>,
    fail_a: Signal<Local, Bit>,
    rew_a: Signal<Local, Bit>,
    retry2: Signal<Local, Bits<3>>,
    rewv2: Signal<Local, Bit>,
    rew2: Signal<Local, Bits<24>>,
    c_found: Signal<Local, Bit>,
    c_idx: Signal<Local, Bits<IDX_BITS>>,
    gb_en: Signal<Local, Bit>,
    p_b: Signal<Local, Bits<24>>,
    do_b: Signal<Local, Bit>,
    fail_b: Signal<Local, Bit>,
    rew_b: Signal<Local, Bit>,
    rnr_go: Signal<Local, Bit>,
    rnr_fail: Signal<Local, Bit>,
    rnr_ok: Signal<Local, Bit>,
    nak_err: Signal<Local, Bit>,
    rl_before: Signal<Local, Bit>,
    nak_status: Signal<Local, Bits<5>>,
    rd_last: Signal<Local, Bit>,
    shape_ok: Signal<Local, Bit>,
    shamt: Signal<Local, Bits<4>>,
    pmtu_bytes: Signal<Local, Bits<32>>,
    offset: Signal<Local, Bits<32>>,
    rem: Signal<Local, Bits<32>>,
    want: Signal<Local, Bits<32>>,
    rd_bad: Signal<Local, Bit>,
    fb_valid: Signal<Local, Bit>,
    fb_op: Signal<Local, Bits<IDX_BITS>>,
    fb_status: Signal<Local, Bits<5>>,
    fb_syndrome: Signal<Local, Bits<8>>,
    psn_next: Signal<Local, Bits<24>>,
    d_dlv: Signal<Local, Bits<24>>,
}

impl Default for ReqRxCheck {
    fn default() -> Self {
        fn k<const N: usize>(v: u64) -> Constant<Bits<N>> {
            Constant::new(v.to_bits())
        }
        let c8 = k::<8>;
        let op = |o: Opcode| c8(u8::from(o).into());
        // The syndrome's kind, its top three bits (`syn_kind`), and a NAK's code.
        let kind = |s: Syndrome| u64::from(u8::from(s) >> 5);
        let nak = |n: NakCode| u64::from(u8::from(n));
        ReqRxCheck {
            clock: Default::default(),
            reset: Default::default(),
            s_opcode: Default::default(),
            s_psn: Default::default(),
            s_has_aeth: Default::default(),
            s_syndrome: Default::default(),
            s_has_atomic_ack: Default::default(),
            s_payload_len: Default::default(),
            s_una: Default::default(),
            s_sent_end: Default::default(),
            s_retry_left: Default::default(),
            s_rnr_left: Default::default(),
            s_retry_cnt: Default::default(),
            s_rnr_retry: Default::default(),
            s_rewound_valid: Default::default(),
            s_rewound: Default::default(),
            s_rnr_waiting: Default::default(),
            s_start: Default::default(),
            s_op_valid: Default::default(),
            s_op_kind: Default::default(),
            s_op_first: Default::default(),
            s_op_npsn: Default::default(),
            s_op_resp: Default::default(),
            s_op_len: Default::default(),
            s_op_pmtu: Default::default(),
            s_op_done: Default::default(),
            m_count: Default::default(),
            m_ack_upto: Default::default(),
            m_una: Default::default(),
            m_retry_left: Default::default(),
            m_rnr_left: Default::default(),
            m_rewound_valid: Default::default(),
            m_rewound: Default::default(),
            m_fail0_valid: Default::default(),
            m_fail0_op: Default::default(),
            m_fail0_status: Default::default(),
            m_fail0_syndrome: Default::default(),
            m_fail1_valid: Default::default(),
            m_fail1_op: Default::default(),
            m_fail1_status: Default::default(),
            m_fail1_syndrome: Default::default(),
            m_cursor: Default::default(),
            m_cursor_psn: Default::default(),
            m_timer: Default::default(),
            m_rnr_wait: Default::default(),
            m_rnr_timer: Default::default(),
            m_dlv_valid: Default::default(),
            m_dlv_op: Default::default(),
            m_dlv_offset: Default::default(),
            m_dlv_len: Default::default(),
            m_dlv_atomic: Default::default(),
            m_dlv_una: Default::default(),
            m_activate: Default::default(),
            idx: Default::default(),
            fu_found: Default::default(),
            fu_idx: Default::default(),
            brk_found: Default::default(),
            brk_idx: Default::default(),
            brk_lost: Default::default(),
            brk_wait: Default::default(),
            nxt_found: Default::default(),
            nxt_idx: Default::default(),
            rl_found: Default::default(),
            rl_idx: Default::default(),
            rl_atomic: Default::default(),
            rl_first: Default::default(),
            rl_npsn: Default::default(),
            rl_resp: Default::default(),
            rl_len: Default::default(),
            rl_pmtu: Default::default(),
            rl_wait: Default::default(),
            hold_found: Default::default(),
            hold_idx: Default::default(),
            k32: Default::default(),
            plen32: Default::default(),
            op_ack: op(Opcode::Acknowledge),
            op_rd_first: op(Opcode::RdmaReadResponseFirst),
            op_rd_middle: op(Opcode::RdmaReadResponseMiddle),
            op_rd_last: op(Opcode::RdmaReadResponseLast),
            op_rd_only: op(Opcode::RdmaReadResponseOnly),
            op_atomic_ack: op(Opcode::AtomicAcknowledge),
            syn_ack: k(kind(Syndrome::Ack { credits: 0 })),
            syn_rnr: k(kind(Syndrome::RnrNak { timer: 0 })),
            syn_nak: k(kind(Syndrome::Nak(NakCode::PsnSequenceError))),
            nak_seq: k(nak(NakCode::PsnSequenceError)),
            nak_inv: k(nak(NakCode::InvalidRequest)),
            nak_access: k(nak(NakCode::RemoteAccessError)),
            nak_inv_rd: k(nak(NakCode::InvalidRdRequest)),
            st_bad_resp: k(u64::from(u8::from(WcStatus::BadRespErr))),
            st_rem_inv_req: k(u64::from(u8::from(WcStatus::RemInvReqErr))),
            st_rem_access: k(u64::from(u8::from(WcStatus::RemAccessErr))),
            st_rem_op: k(u64::from(u8::from(WcStatus::RemOpErr))),
            st_retry_exc: k(u64::from(u8::from(WcStatus::RetryExcErr))),
            st_rnr_retry_exc: k(u64::from(u8::from(WcStatus::RnrRetryExcErr))),
            cnt_none: k(CNT_NONE),
            cnt_nak: k(CNT_NAK),
            cnt_rnr: k(CNT_RNR),
            cnt_dup: k(CNT_DUP),
            cnt_malformed: k(CNT_MALFORMED),
            cur_keep: k(CUR_KEEP),
            cur_rewind: k(CUR_REWIND),
            cur_stop: k(CUR_STOP),
            tmr_keep: k(TMR_KEEP),
            tmr_arm: k(TMR_ARM),
            tmr_clear: k(TMR_CLEAR),
            mtu_256: k(Mtu::Mtu256 as u64),
            mtu_512: k(Mtu::Mtu512 as u64),
            mtu_1024: k(Mtu::Mtu1024 as u64),
            mtu_2048: k(Mtu::Mtu2048 as u64),
            mtu_4096: k(Mtu::Mtu4096 as u64),
            sh_256: k(8),
            sh_512: k(9),
            sh_1024: k(10),
            sh_2048: k(11),
            sh_4096: k(12),
            b256: k(256),
            b512: k(512),
            b1024: k(1024),
            b2048: k(2048),
            b4096: k(4096),
            eight32: k(8),
            zero32: k(0),
            zero24: k(0),
            one24: k(1),
            half24: k(0x80_0000),
            zero3: k(0),
            one3: k(1),
            seven3: k(7),
            zero8: k(0),
            zero8h: k(0),
            zero16: k(0),
            zero_idx: k(0),
            one_idx: k(1),
            ack_psn: Default::default(),
            op_last: Default::default(),
            op_wait: Default::default(),
            op_rl: Default::default(),
            d_first_a: Default::default(),
            d_last_a: Default::default(),
            last_after: Default::default(),
            brk_here: Default::default(),
            d_psn_first: Default::default(),
            d_psn_last: Default::default(),
            holds: Default::default(),
            syn_kind: Default::default(),
            nak_code: Default::default(),
            is_ackop: Default::default(),
            is_rd: Default::default(),
            is_aack: Default::default(),
            t_ack: Default::default(),
            t_rnr: Default::default(),
            t_nak: Default::default(),
            d_psn_una: Default::default(),
            d_psn_end: Default::default(),
            psn_ge_una: Default::default(),
            psn_gt_una: Default::default(),
            in_win: Default::default(),
            malformed_aack: Default::default(),
            resp_path: Default::default(),
            d_rl: Default::default(),
            rl_dup: Default::default(),
            kind_ok: Default::default(),
            expect_dup: Default::default(),
            expect_miss: Default::default(),
            expect_hit: Default::default(),
            d_rf_una: Default::default(),
            rfm1_end: Default::default(),
            ack_en: Default::default(),
            a_next: Default::default(),
            d_wait_next: Default::default(),
            new_una: Default::default(),
            d_nu: Default::default(),
            progressed: Default::default(),
            una1: Default::default(),
            retry1: Default::default(),
            rnr1: Default::default(),
            rewv1: Default::default(),
            lost: Default::default(),
            do_a: Default::default(),
            fail_a: Default::default(),
            rew_a: Default::default(),
            retry2: Default::default(),
            rewv2: Default::default(),
            rew2: Default::default(),
            c_found: Default::default(),
            c_idx: Default::default(),
            gb_en: Default::default(),
            p_b: Default::default(),
            do_b: Default::default(),
            fail_b: Default::default(),
            rew_b: Default::default(),
            rnr_go: Default::default(),
            rnr_fail: Default::default(),
            rnr_ok: Default::default(),
            nak_err: Default::default(),
            rl_before: Default::default(),
            nak_status: Default::default(),
            rd_last: Default::default(),
            shape_ok: Default::default(),
            shamt: Default::default(),
            pmtu_bytes: Default::default(),
            offset: Default::default(),
            rem: Default::default(),
            want: Default::default(),
            rd_bad: Default::default(),
            fb_valid: Default::default(),
            fb_op: Default::default(),
            fb_status: Default::default(),
            fb_syndrome: Default::default(),
            psn_next: Default::default(),
            d_dlv: Default::default(),
        }
    }
}

impl Logic for ReqRxCheck {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, idx, fu_found, fu_idx, brk_found, brk_idx, brk_lost, brk_wait, nxt_found,
            nxt_idx, rl_found, rl_idx, rl_atomic, rl_first, rl_npsn, rl_resp, rl_len, rl_pmtu,
            rl_wait, hold_found, hold_idx
        );

        // ---- the response type ----
        self.syn_kind.next = self.s_syndrome.val().get_bits::<3>(5);
        self.nak_code.next = self.s_syndrome.val().get_bits::<5>(0);
        self.is_ackop.next = self.s_opcode.val() == self.op_ack.val();
        self.is_rd.next = (self.s_opcode.val() >= self.op_rd_first.val())
            & (self.s_opcode.val() <= self.op_rd_only.val());
        self.is_aack.next = self.s_opcode.val() == self.op_atomic_ack.val();
        self.t_ack.next = self.is_ackop.val()
            & self.s_has_aeth.val()
            & (self.syn_kind.val() == self.syn_ack.val());
        self.t_rnr.next = self.is_ackop.val()
            & self.s_has_aeth.val()
            & (self.syn_kind.val() == self.syn_rnr.val());
        self.t_nak.next = self.is_ackop.val()
            & self.s_has_aeth.val()
            & (self.syn_kind.val() == self.syn_nak.val());
        // The acknowledgement walk's PSN.
        if self.t_ack.val() {
            self.ack_psn.next = self.s_psn.val();
        } else {
            self.ack_psn.next = self.s_psn.val() - self.one24.val();
        }

        // ---- one op of the walk ----
        if self.s_op_npsn.val() == self.zero24.val() {
            self.op_last.next = self.s_op_first.val();
        } else {
            self.op_last.next = self.s_op_first.val() + self.s_op_npsn.val() - self.one24.val();
        }
        self.op_wait.next = self.s_op_first.val() + self.s_op_resp.val();
        self.op_rl.next = self.s_op_kind.val().get_bit(1);
        self.d_first_a.next = self.s_op_first.val() - self.ack_psn.val();
        self.d_last_a.next = self.op_last.val() - self.ack_psn.val();
        self.last_after.next =
            (self.d_last_a.val() != self.zero24.val()) & (self.d_last_a.val() <= self.half24.val());
        self.brk_here.next = !self.s_op_done.val()
            & (((self.d_first_a.val() != self.zero24.val())
                & (self.d_first_a.val() <= self.half24.val()))
                | self.op_rl.val()
                | self.last_after.val());
        self.d_psn_first.next = self.s_psn.val() - self.s_op_first.val();
        self.d_psn_last.next = self.s_psn.val() - self.op_last.val();
        self.holds.next = (self.d_psn_first.val() <= self.half24.val())
            & ((self.d_psn_last.val() == self.zero24.val())
                | (self.d_psn_last.val() > self.half24.val()));

        if self.s_op_valid.val() {
            self.idx.d.next = self.idx.q.val() + self.one_idx.val();
            if !self.s_op_done.val() & !self.fu_found.q.val() {
                self.fu_found.d.next = true;
                self.fu_idx.d.next = self.idx.q.val();
            }
            if !self.brk_found.q.val() & self.brk_here.val() {
                self.brk_found.d.next = true;
                self.brk_idx.d.next = self.idx.q.val();
                self.brk_lost.d.next = self.op_rl.val() & !self.last_after.val();
                self.brk_wait.d.next = self.op_wait.val();
            }
            if self.brk_found.q.val() & !self.nxt_found.q.val() & !self.s_op_done.val() {
                self.nxt_found.d.next = true;
                self.nxt_idx.d.next = self.idx.q.val();
            }
            if !self.rl_found.q.val() & !self.s_op_done.val() & self.op_rl.val() {
                self.rl_found.d.next = true;
                self.rl_idx.d.next = self.idx.q.val();
                self.rl_atomic.d.next = self.s_op_kind.val().get_bit(0);
                self.rl_first.d.next = self.s_op_first.val();
                self.rl_npsn.d.next = self.s_op_npsn.val();
                self.rl_resp.d.next = self.s_op_resp.val();
                self.rl_len.d.next = self.s_op_len.val();
                self.rl_pmtu.d.next = self.s_op_pmtu.val();
                self.rl_wait.d.next = self.op_wait.val();
            }
            if !self.hold_found.q.val() & !self.s_op_done.val() & self.holds.val() {
                self.hold_found.d.next = true;
                self.hold_idx.d.next = self.idx.q.val();
            }
        }
        if self.s_start.val() | self.reset.val() {
            self.idx.d.next = self.zero_idx.val();
            self.fu_found.d.next = false;
            self.brk_found.d.next = false;
            self.nxt_found.d.next = false;
            self.rl_found.d.next = false;
            self.hold_found.d.next = false;
        }

        // ---- windows ----
        self.d_psn_una.next = self.s_psn.val() - self.s_una.val();
        self.d_psn_end.next = self.s_psn.val() - self.s_sent_end.val();
        self.psn_ge_una.next = self.d_psn_una.val() <= self.half24.val();
        self.psn_gt_una.next = self.psn_ge_una.val() & (self.d_psn_una.val() != self.zero24.val());
        self.in_win.next = self.psn_ge_una.val() & (self.d_psn_end.val() > self.half24.val());

        // ---- READ responses / atomic ACKs: the PSN the oldest waiting op expects ----
        self.malformed_aack.next = self.is_aack.val() & !self.s_has_atomic_ack.val();
        self.resp_path.next = (self.is_rd.val() | self.is_aack.val()) & !self.malformed_aack.val();
        self.d_rl.next = self.s_psn.val() - self.rl_wait.q.val();
        self.rl_dup.next = self.d_rl.val() > self.half24.val();
        self.kind_ok.next = self.rl_atomic.q.val() == self.is_aack.val();
        self.expect_dup.next = self.resp_path.val() & (!self.rl_found.q.val() | self.rl_dup.val());
        self.expect_miss.next = self.resp_path.val()
            & self.rl_found.q.val()
            & !self.rl_dup.val()
            & ((self.d_rl.val() != self.zero24.val()) | !self.kind_ok.val());
        self.expect_hit.next = self.resp_path.val()
            & self.rl_found.q.val()
            & (self.d_rl.val() == self.zero24.val())
            & self.kind_ok.val();
        self.d_rf_una.next = self.rl_first.q.val() - self.s_una.val();
        self.rfm1_end.next = self.rl_first.q.val() - self.one24.val() - self.s_sent_end.val();

        // ---- stage A: the acknowledgement, and going back for a lost response ----
        self.ack_en.next = (self.t_ack.val() & self.in_win.val())
            | ((self.t_nak.val() | self.t_rnr.val()) & self.in_win.val() & self.psn_gt_una.val())
            | (self.expect_hit.val()
                & self.psn_gt_una.val()
                & (self.d_rf_una.val() != self.zero24.val())
                & (self.d_rf_una.val() <= self.half24.val())
                & (self.rfm1_end.val() > self.half24.val()));
        self.a_next.next = self.ack_psn.val() + self.one24.val();
        self.d_wait_next.next = self.rl_wait.q.val() - self.a_next.val();
        if self.rl_found.q.val() & (self.d_wait_next.val() > self.half24.val()) {
            self.new_una.next = self.rl_wait.q.val();
        } else {
            self.new_una.next = self.a_next.val();
        }
        self.d_nu.next = self.new_una.val() - self.s_una.val();
        self.progressed.next = self.ack_en.val()
            & (self.d_nu.val() != self.zero24.val())
            & (self.d_nu.val() <= self.half24.val());
        if self.progressed.val() {
            self.una1.next = self.new_una.val();
            self.retry1.next = self.s_retry_cnt.val();
            self.rnr1.next = self.s_rnr_retry.val();
            self.rewv1.next = false;
        } else {
            self.una1.next = self.s_una.val();
            self.retry1.next = self.s_retry_left.val();
            self.rnr1.next = self.s_rnr_left.val();
            self.rewv1.next = self.s_rewound_valid.val();
        }
        self.lost.next = self.ack_en.val() & self.brk_found.q.val() & self.brk_lost.q.val();
        self.do_a.next =
            self.lost.val() & !(self.rewv1.val() & (self.s_rewound.val() == self.brk_wait.q.val()));
        self.fail_a.next = self.do_a.val() & (self.retry1.val() == self.zero3.val());
        self.rew_a.next = self.do_a.val() & (self.retry1.val() != self.zero3.val());
        if self.rew_a.val() {
            self.retry2.next = self.retry1.val() - self.one3.val();
            self.rewv2.next = true;
            self.rew2.next = self.brk_wait.q.val();
        } else {
            self.retry2.next = self.retry1.val();
            self.rewv2.next = self.rewv1.val();
            self.rew2.next = self.s_rewound.val();
        }

        // ---- stage B: the NAK / RNR NAK / response rule ----
        // The op an exhausted retry fails: the first unfinished one after the
        // acknowledgement (and after stage A's failure).
        if self.ack_en.val() {
            if self.fail_a.val() {
                self.c_found.next = self.nxt_found.q.val();
                self.c_idx.next = self.nxt_idx.q.val();
            } else {
                self.c_found.next = self.brk_found.q.val();
                self.c_idx.next = self.brk_idx.q.val();
            }
        } else {
            self.c_found.next = self.fu_found.q.val();
            self.c_idx.next = self.fu_idx.q.val();
        }
        // Go back: a PSN-sequence NAK (not during an RNR wait) to the window's start, a
        // response past the expected PSN (or of the wrong kind) to the expected one.
        self.gb_en.next = (self.t_nak.val()
            & self.in_win.val()
            & (self.nak_code.val() == self.nak_seq.val())
            & !self.s_rnr_waiting.val())
            | (self.expect_miss.val() & (self.d_psn_end.val() > self.half24.val()));
        if self.t_nak.val() {
            self.p_b.next = self.una1.val();
        } else {
            self.p_b.next = self.rl_wait.q.val();
        }
        self.do_b.next =
            self.gb_en.val() & !(self.rewv2.val() & (self.rew2.val() == self.p_b.val()));
        self.fail_b.next = self.do_b.val() & (self.retry2.val() == self.zero3.val());
        self.rew_b.next = self.do_b.val() & (self.retry2.val() != self.zero3.val());
        // RNR NAK: one RNR retry (7: forever), rewind to the window's start and wait.
        self.rnr_go.next = self.t_rnr.val() & self.in_win.val();
        self.rnr_fail.next = self.rnr_go.val()
            & (self.s_rnr_retry.val() != self.seven3.val())
            & (self.rnr1.val() == self.zero3.val());
        self.rnr_ok.next = self.rnr_go.val() & !self.rnr_fail.val();
        // Error NAKs fail the op holding the PSN, unless a READ/atomic before it still
        // waits for its response (its PSN, `rl_wait`, before the NAK's) and stage A did
        // not fail it: then stage A's go-back to it is all the NAK does.
        self.rl_before.next = self.rl_found.q.val()
            & (self.d_rl.val() != self.zero24.val())
            & !self.rl_dup.val()
            & !self.fail_a.val();
        self.nak_err.next = self.t_nak.val()
            & self.in_win.val()
            & (self.nak_code.val() != self.nak_seq.val())
            & self.hold_found.q.val()
            & !self.rl_before.val();
        if (self.nak_code.val() == self.nak_inv.val())
            | (self.nak_code.val() == self.nak_inv_rd.val())
        {
            self.nak_status.next = self.st_rem_inv_req.val();
        } else if self.nak_code.val() == self.nak_access.val() {
            self.nak_status.next = self.st_rem_access.val();
        } else {
            self.nak_status.next = self.st_rem_op.val();
        }
        // A READ response: opcode against its position, length against the PMTU.
        self.rd_last.next = (self.rl_resp.q.val() + self.one24.val()) == self.rl_npsn.q.val();
        if (self.s_opcode.val() == self.op_rd_first.val())
            | (self.s_opcode.val() == self.op_rd_middle.val())
        {
            self.shape_ok.next = !self.rd_last.val();
        } else if self.s_opcode.val() == self.op_rd_last.val() {
            self.shape_ok.next = self.rd_last.val() & (self.rl_resp.q.val() != self.zero24.val());
        } else {
            self.shape_ok.next = self.rd_last.val();
        }
        self.shamt.next = self.sh_256.val();
        self.pmtu_bytes.next = self.zero32.val();
        if self.rl_pmtu.q.val() == self.mtu_256.val() {
            self.shamt.next = self.sh_256.val();
            self.pmtu_bytes.next = self.b256.val();
        }
        if self.rl_pmtu.q.val() == self.mtu_512.val() {
            self.shamt.next = self.sh_512.val();
            self.pmtu_bytes.next = self.b512.val();
        }
        if self.rl_pmtu.q.val() == self.mtu_1024.val() {
            self.shamt.next = self.sh_1024.val();
            self.pmtu_bytes.next = self.b1024.val();
        }
        if self.rl_pmtu.q.val() == self.mtu_2048.val() {
            self.shamt.next = self.sh_2048.val();
            self.pmtu_bytes.next = self.b2048.val();
        }
        if self.rl_pmtu.q.val() == self.mtu_4096.val() {
            self.shamt.next = self.sh_4096.val();
            self.pmtu_bytes.next = self.b4096.val();
        }
        self.k32.hi.next = self.zero8h.val();
        self.k32.lo.next = self.rl_resp.q.val();
        self.offset.next = self.k32.y.val() << self.shamt.val();
        self.rem.next = self.rl_len.q.val() - self.offset.val();
        if self.rem.val() < self.pmtu_bytes.val() {
            self.want.next = self.rem.val();
        } else {
            self.want.next = self.pmtu_bytes.val();
        }
        self.plen32.hi.next = self.zero16.val();
        self.plen32.lo.next = self.s_payload_len.val();
        self.rd_bad.next = self.expect_hit.val()
            & self.is_rd.val()
            & (!self.shape_ok.val() | (self.plen32.y.val() != self.want.val()));

        // ---- the stage-B failure ----
        self.fb_valid.next = false;
        self.fb_op.next = self.c_idx.val();
        self.fb_status.next = self.st_retry_exc.val();
        self.fb_syndrome.next = self.zero8.val();
        if self.fail_b.val() {
            self.fb_valid.next = self.c_found.val();
        }
        if self.rnr_fail.val() {
            self.fb_valid.next = self.c_found.val();
            self.fb_status.next = self.st_rnr_retry_exc.val();
        }
        if self.nak_err.val() {
            self.fb_valid.next = true;
            self.fb_op.next = self.hold_idx.q.val();
            self.fb_status.next = self.nak_status.val();
            self.fb_syndrome.next = self.s_syndrome.val();
        }
        if self.rd_bad.val() {
            self.fb_valid.next = true;
            self.fb_op.next = self.rl_idx.q.val();
            self.fb_status.next = self.st_bad_resp.val();
        }

        // ---- outputs ----
        self.m_count.next = self.cnt_none.val();
        if self.t_nak.val() {
            self.m_count.next = self.cnt_nak.val();
        }
        if self.t_rnr.val() {
            self.m_count.next = self.cnt_rnr.val();
        }
        if self.expect_dup.val() {
            self.m_count.next = self.cnt_dup.val();
        }
        if (self.is_ackop.val() & !(self.t_ack.val() | self.t_rnr.val() | self.t_nak.val()))
            | self.malformed_aack.val()
            | !(self.is_ackop.val() | self.is_rd.val() | self.is_aack.val())
        {
            self.m_count.next = self.cnt_malformed.val();
        }
        self.m_ack_upto.next = self.zero_idx.val();
        if self.ack_en.val() {
            if self.brk_found.q.val() {
                self.m_ack_upto.next = self.brk_idx.q.val();
            } else {
                self.m_ack_upto.next = self.idx.q.val();
            }
        }
        self.m_una.next = self.una1.val();
        if self.rew_b.val() {
            self.m_retry_left.next = self.retry2.val() - self.one3.val();
        } else {
            self.m_retry_left.next = self.retry2.val();
        }
        if self.rnr_ok.val() & (self.s_rnr_retry.val() != self.seven3.val()) {
            self.m_rnr_left.next = self.rnr1.val() - self.one3.val();
        } else {
            self.m_rnr_left.next = self.rnr1.val();
        }
        self.m_rewound_valid.next = self.rewv2.val();
        self.m_rewound.next = self.rew2.val();
        if self.rew_b.val() {
            self.m_rewound_valid.next = true;
            self.m_rewound.next = self.p_b.val();
        }
        if self.rnr_ok.val() {
            self.m_rewound_valid.next = false;
        }
        self.m_fail0_valid.next = self.fb_valid.val();
        self.m_fail0_op.next = self.fb_op.val();
        self.m_fail0_status.next = self.fb_status.val();
        self.m_fail0_syndrome.next = self.fb_syndrome.val();
        self.m_fail1_valid.next = false;
        self.m_fail1_op.next = self.fb_op.val();
        self.m_fail1_status.next = self.fb_status.val();
        self.m_fail1_syndrome.next = self.fb_syndrome.val();
        if self.fail_a.val() {
            self.m_fail0_valid.next = true;
            self.m_fail0_op.next = self.brk_idx.q.val();
            self.m_fail0_status.next = self.st_retry_exc.val();
            self.m_fail0_syndrome.next = self.zero8.val();
            self.m_fail1_valid.next = self.fb_valid.val();
        }
        // The cursor and the timer: the last step that sets them wins.
        self.m_cursor.next = self.cur_keep.val();
        self.m_cursor_psn.next = self.brk_wait.q.val();
        self.m_timer.next = self.tmr_keep.val();
        if self.progressed.val() {
            self.m_timer.next = self.tmr_arm.val();
        }
        if self.rew_a.val() {
            self.m_cursor.next = self.cur_rewind.val();
            self.m_timer.next = self.tmr_arm.val();
        }
        if self.fail_a.val() {
            self.m_cursor.next = self.cur_stop.val();
            self.m_timer.next = self.tmr_clear.val();
        }
        if self.rew_b.val() {
            self.m_cursor.next = self.cur_rewind.val();
            self.m_cursor_psn.next = self.p_b.val();
            self.m_timer.next = self.tmr_arm.val();
        }
        if self.fail_b.val() | self.rnr_fail.val() | self.nak_err.val() {
            self.m_cursor.next = self.cur_stop.val();
            self.m_timer.next = self.tmr_clear.val();
        }
        if self.rnr_ok.val() {
            self.m_cursor.next = self.cur_rewind.val();
            self.m_cursor_psn.next = self.una1.val();
            self.m_timer.next = self.tmr_clear.val();
        }
        if self.rd_bad.val() {
            self.m_cursor.next = self.cur_stop.val();
        }
        self.m_rnr_wait.next = self.rnr_ok.val();
        self.m_rnr_timer.next = self.nak_code.val();
        // Delivery, and the window once delivered.
        self.m_dlv_valid.next = self.expect_hit.val() & !self.rd_bad.val();
        self.m_dlv_op.next = self.rl_idx.q.val();
        self.m_dlv_atomic.next = self.is_aack.val();
        if self.is_aack.val() {
            self.m_dlv_offset.next = self.zero32.val();
            self.m_dlv_len.next = self.eight32.val();
        } else {
            self.m_dlv_offset.next = self.offset.val();
            self.m_dlv_len.next = self.want.val();
        }
        self.psn_next.next = self.s_psn.val() + self.one24.val();
        self.d_dlv.next = self.psn_next.val() - self.una1.val();
        if (self.d_dlv.val() != self.zero24.val()) & (self.d_dlv.val() <= self.half24.val()) {
            self.m_dlv_una.next = self.psn_next.val();
        } else {
            self.m_dlv_una.next = self.una1.val();
        }
        self.m_activate.next = self.ack_en.val()
            | self.fail_b.val()
            | self.rew_b.val()
            | self.rnr_fail.val()
            | self.rnr_ok.val();
    }
}
