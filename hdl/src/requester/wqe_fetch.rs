//! `RingFetch`: reads 64-byte WQEs from a QP's ring (SQ or RQ) by DMA and keeps a few
//! ahead for each of several QPs; `WqeFetch`: a `RingFetch` on the SQ that decodes the
//! send WQE.
//!
//! ```text
//!  s_req {qpn, ring, log, index, posted}
//!     --> the QP's slot (qpn mod 2^SL): its tag (qpn, first, n) read
//!     --> hit (the slot holds (qpn, index))? --> slot RAM --> m_ent (the 64 bytes)
//!     --> miss: ONE DMA read of n = min(posted, BUF, slots to the ring's end) slots from
//!         `index` on --> beats into the QP's slot (tagged qpn, index, n) --> m_ent
//!         (err, n > 1) --> the same request again as a 64-byte read
//!         (err, n = 1) --> m_err pulse
//!  WqeFetch: m_ent --> SendWqe decode --> m_wqe
//! ```
//!
//! The slot is `index mod 2^log` of the ring at IOVA `ring << 6` (the `qpc` table's
//! `sq_ring`/`sq_log` or `rq_ring`/`rq_log` fields, as the model's `fetch_wqe` reads
//! `sq_iova + 64 * slot` and its responder the receive WQE). `WqeFetch`'s decode is the
//! ABI's `SendWqe::from_bytes` (`proto/src/abi/wqe.rs`), which the bench holds it to:
//! little-endian fields at their offsets; with `flags & INLINE` the 32 bytes at 0x20 are
//! the inline payload and `compare_add`, `swap` and the SGE read as zero, without it the
//! inline bytes read as zero. No validation here (the requester validates, as the model's
//! `validate_wqe`; the responder decodes its receive WQEs itself).
//!
//! # The prefetch buffer
//!
//! `s_req_posted` is how many WQEs are posted from `index` on (`pi - index`): only those
//! are read, so every WQE kept is one the host handed over at a doorbell and may not change
//! until it completes (after it is fetched), and a WQE served from the buffer is the one the
//! model reads at fetch time. A miss reads `n` = min(posted, [`BUF`], slots to the ring's
//! wrap) slots (at least one) in one request (`n * 64` bytes, `n` beats).
//!
//! The buffer is `2^SL` slots of [`DEPTH`] WQEs, direct-mapped by the QP number's low `SL`
//! bits, so QPs served in turn (at most `2^SL` of them, numbered apart) keep their WQEs: a
//! RAM of `2^SL * DEPTH` x 512 bits, WQE `i` at `slot * DEPTH + (i mod DEPTH)`, and a tag
//! per slot (valid, qpn, first index, n: the slot holds `first .. first + n`, n <=
//! [`DEPTH`]; valid in flops, the rest in RAM). A request whose slot is valid, of its QP,
//! and whose index lies in the window (the full 32-bit free-running index) is a hit: no
//! DMA. A miss replaces its slot's contents. `s_inv` (a pulse, or held: the user's QP
//! clear, a RESET or DESTROYED QP whose indices start again with other contents) empties
//! every slot, also a fill in flight (the fill's own WQE is still answered). Go-back-N and
//! the flushes ask again for WQEs already fetched: hits when still held.
//!
//! # Reading ahead
//!
//! With `ahead` set (the SQ's reader), a hit that leaves at most [`BUF`] WQEs of its window
//! ahead of it (from its index on), while more are posted past the window's end `e`,
//! starts a read of the next `m` = min([`BUF`], posted past `e`, slots to the ring's wrap
//! from `e`) WQEs into the slot, behind the WQE it serves: the window's oldest WQEs make
//! room (only ones before the request's index: at most `DEPTH` - `BUF` lie ahead). The
//! tag shrinks to the WQEs kept at once and grows by the `m` new ones at the read's last
//! beat, so a request in the window is a hit meanwhile, and one past it (or any miss) waits
//! for the read and looks again. One read is in flight at a time, a read ahead or a miss's;
//! a refused read ahead is dropped (the WQE's own read, on a miss, says whether it fails).
//! A QP served at least every `BUF` requests' worth of a DMA round trip then finds every
//! WQE after its first in the buffer.
//!
//! The sizes: the requester serves a QP back to back while it has WQEs and room in its op
//! ring (bursts of up to 16 WQEs, about 18 cycles each), so a read ahead has to start
//! about a DMA round trip (~270 cycles in the default world) before the QP reaches it:
//! [`BUF`] = 16 WQEs ahead when it starts, and a slot of [`DEPTH`] = 32 keeps those and the
//! read's. The buffer RAM is as wide as a WQE (512 bits), so its block RAM count is set by
//! the width (15 RAMB18 at any depth up to 512): the depth costs none.
//!
//! A multi-slot read refused (`err`: one beat) does not fail the WQE: another slot of the
//! read may lie on an unmapped page. The request is read again alone (64 bytes), and only
//! that read's refusal pulses `m_err_*` (the model then counts a DMA fault).
//!
//! One request at a time. Latency: a hit is offered 2 cycles after the request is taken
//! (the tag, then the WQE, each a RAM read); a miss issues its read 2 cycles after (once a
//! read ahead in flight is in), and offers the WQE 2 cycles after the read's last beat (the
//! WQE is served from the RAM).

use crate::bus::dma_rd::DmaRdClient;
use crate::common::cat::Cat;
use crate::common::icrc::DATA_BITS;
use crate::prelude::*;

/// WQEs one read takes at most.
pub const BUF: u64 = 16;
/// WQEs a slot holds.
pub const DEPTH: u64 = 32;
/// log2 of [`DEPTH`] (a slot's part of the buffer RAM's address).
const DEPTH_LOG: usize = 5;
/// log2 of the send queues' slots (QPs whose WQEs are kept at once).
pub const SQ_SLOTS_LOG: usize = 4;
/// log2 of the receive queues' slots.
pub const RQ_SLOTS_LOG: usize = 1;
/// The SQ reader: [`SQ_SLOTS_LOG`] slots, its RAM address `SQ_SLOTS_LOG + DEPTH_LOG` bits.
pub type SqRingFetch<const QA: usize> = RingFetch<QA, SQ_SLOTS_LOG, { SQ_SLOTS_LOG + DEPTH_LOG }>;
/// The RQ reader: [`RQ_SLOTS_LOG`] slots.
pub type RqRingFetch<const QA: usize> = RingFetch<QA, RQ_SLOTS_LOG, { RQ_SLOTS_LOG + DEPTH_LOG }>;

// The send WQE's bit offsets in `WqeFetch::update` (literals, as `#[hdl_gen]` wants them)
// are the host ABI's byte offsets (`rocenic_proto::abi::wqe::field`) times 8.
const _: () = {
    use rocenic_proto::abi::wqe::field as f;
    assert!(f::WR_ID * 8 == 0 && f::OPCODE * 8 == 64 && f::FLAGS * 8 == 72);
    assert!(f::INLINE_LEN * 8 == 80 && f::NUM_SGE * 8 == 88 && f::IMM * 8 == 96);
    assert!(f::REMOTE_ADDR * 8 == 128 && f::RKEY * 8 == 192 && (f::RKEY + 4) * 8 == 224);
    assert!(f::INLINE * 8 == 256 && f::COMPARE_ADD * 8 == 256 && f::SWAP * 8 == 320);
    assert!(f::SGE * 8 == 384 && (f::SGE + 8) * 8 == 448 && (f::SGE + 12) * 8 == 480);
    assert!(rocenic_proto::abi::wqe::MAX_INLINE * 8 == 256);
    assert!(DEPTH == 1 << DEPTH_LOG && DEPTH >= 2 * BUF);
};

const IDLE: u64 = 0;
const LOOK: u64 = 1;
const REQ: u64 = 2;
const WAIT: u64 = 3;
const FILLED: u64 = 4;
const OUT: u64 = 5;
const HOLD: u64 = 6;

fn k<const N: usize>(v: u64) -> Constant<Bits<N>> {
    Constant::new(v.into())
}

/// The ring reader with its prefetch buffer of `2^SL` slots (`AW` = `SL` + `DEPTH_LOG`,
/// the buffer RAM's address width, which stable Rust cannot compute in the type); see
/// the [module docs](self).
#[derive(LogicBlock)]
pub struct RingFetch<const QA: usize, const SL: usize, const AW: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,

    /// A WQE to fetch: the QP, its ring (IOVA >> 6) and size (log2 entries), the
    /// free-running index, and how many WQEs are posted from it on (`pi - index`).
    pub s_req_valid: Signal<In, Bit>,
    pub s_req_ready: Signal<Out, Bit>,
    pub s_req_qpn: Signal<In, Bits<QA>>,
    pub s_req_ring: Signal<In, Bits<58>>,
    pub s_req_log: Signal<In, Bits<4>>,
    pub s_req_index: Signal<In, Bits<32>>,
    pub s_req_posted: Signal<In, Bits<32>>,
    /// Forget every WQE held (a QP was reset or destroyed); may be held high.
    pub s_inv: Signal<In, Bit>,

    // --- DMA read client ---
    pub dma_rd: DmaRdClient,

    /// The WQE's 64 bytes (byte `i` in bits `8i..8i+7`), with the request's QP and index.
    pub m_ent_valid: Signal<Out, Bit>,
    pub m_ent_ready: Signal<In, Bit>,
    pub m_ent_qpn: Signal<Out, Bits<QA>>,
    pub m_ent_index: Signal<Out, Bits<32>>,
    pub m_ent_beat: Signal<Out, Bits<DATA_BITS>>,

    /// Pulse: the read of the WQE failed.
    pub m_err_valid: Signal<Out, Bit>,
    pub m_err_qpn: Signal<Out, Bits<QA>>,
    pub m_err_index: Signal<Out, Bits<32>>,

    /// Read ahead on hits (the instance's mode).
    ahead: Constant<Bit>,
    state: DFF<Bits<3>>,
    qpn: DFF<Bits<QA>>,
    index: DFF<Bits<32>>,
    ring: DFF<Bits<58>>,
    log: DFF<Bits<4>>,
    posted: DFF<Bits<32>>,
    addr: DFF<Bits<64>>,
    /// The beat the miss's read expects next.
    cnt: DFF<Bits<DEPTH_LOG>>,
    /// Slots the miss's read asks for (the tag's `n` once it is in).
    n: DFF<Bits<32>>,
    /// An `s_inv` during the miss's fill: the fill is not kept.
    stale: DFF<Bit>,
    /// Each slot's tag is valid (bit `s`; `2^SL` <= 16).
    tag_v: DFF<Bits<16>>,
    /// A tag was written a cycle ago: the tag read then may be the old one.
    tag_moved: DFF<Bit>,
    tag_qpn: RAM<Bits<QA>, SL>,
    tag_first: RAM<Bits<32>, SL>,
    tag_n: RAM<Bits<32>, SL>,
    held: RAM<Bits<DATA_BITS>, AW>,
    /// The read ahead: in flight (`pf_req`: not yet taken by the DMA), its slot and QP,
    /// the index of its first WQE, its address and count, the next beat, and the tag
    /// (first, n) once it is in.
    pf_busy: DFF<Bit>,
    pf_req: DFF<Bit>,
    pf_slot: DFF<Bits<SL>>,
    pf_qpn: DFF<Bits<QA>>,
    pf_at: DFF<Bits<32>>,
    pf_ring: DFF<Bits<58>>,
    pf_log: DFF<Bits<4>>,
    pf_m: DFF<Bits<32>>,
    pf_cnt: DFF<Bits<DEPTH_LOG>>,
    pf_first: DFF<Bits<32>>,
    pf_n: DFF<Bits<32>>,
    /// The request's slot (the QP number's low bits): taken, and latched.
    slot_in: Signal<Local, Bits<SL>>,
    slot: Signal<Local, Bits<SL>>,
    /// The buffer RAM's address of the request's WQE, and of the beat being written.
    rd_at: Cat<SL, DEPTH_LOG, AW>,
    wr_at: Cat<SL, DEPTH_LOG, AW>,
    slot58: Cat<26, 32, 58>,
    addr64: Cat<58, 6, 64>,
    pf_slot58: Cat<26, 32, 58>,
    pf_addr64: Cat<58, 6, 64>,
    pf_ring_slot: Signal<Local, Bits<32>>,
    ring_slot: Signal<Local, Bits<32>>,
    to_wrap: Signal<Local, Bits<32>>,
    nn: Signal<Local, Bits<32>>,
    hit: Signal<Local, Bit>,
    /// The hit's window end, WQEs ahead of the request in it, WQEs posted past it, its ring
    /// slot and the slots from there to the wrap; the read ahead's count and the window's
    /// first kept WQE.
    e: Signal<Local, Bits<32>>,
    ahead_n: Signal<Local, Bits<32>>,
    beyond: Signal<Local, Bits<32>>,
    e_ring_slot: Signal<Local, Bits<32>>,
    e_to_wrap: Signal<Local, Bits<32>>,
    mm: Signal<Local, Bits<32>>,
    keep_first: Signal<Local, Bits<32>>,
    go_ahead: Signal<Local, Bit>,
    pf_resp: Signal<Local, Bit>,
    unused_tag: Signal<Local, Bits<8>>,

    st_idle: Constant<Bits<3>>,
    st_look: Constant<Bits<3>>,
    st_req: Constant<Bits<3>>,
    st_wait: Constant<Bits<3>>,
    st_filled: Constant<Bits<3>>,
    st_out: Constant<Bits<3>>,
    st_hold: Constant<Bits<3>>,
    ones32: Constant<Bits<32>>,
    one32: Constant<Bits<32>>,
    buf32: Constant<Bits<32>>,
    depth32: Constant<Bits<32>>,
    one16: Constant<Bits<16>>,
    zero16: Constant<Bits<16>>,
    zero6: Constant<Bits<6>>,
    zero26: Constant<Bits<26>>,
    zero32: Constant<Bits<32>>,
    zero_cnt: Constant<Bits<DEPTH_LOG>>,
    six: Constant<Bits<3>>,
    one_cnt: Constant<Bits<DEPTH_LOG>>,
    tag: Constant<Bits<8>>,
}

impl<const QA: usize, const SL: usize, const AW: usize> RingFetch<QA, SL, AW> {
    /// A reader; `ahead`: read ahead on hits (see the [module docs](self)).
    pub fn new(ahead: bool) -> Self {
        assert!(
            (1..=4).contains(&SL) && SL <= QA && AW == SL + DEPTH_LOG,
            "RingFetch<{QA}, {SL}, {AW}>: needs 1 <= SL <= min(4, QA), AW = SL + {DEPTH_LOG}"
        );
        RingFetch {
            clock: Default::default(),
            reset: Default::default(),
            s_req_valid: Default::default(),
            s_req_ready: Default::default(),
            s_req_qpn: Default::default(),
            s_req_ring: Default::default(),
            s_req_log: Default::default(),
            s_req_index: Default::default(),
            s_req_posted: Default::default(),
            s_inv: Default::default(),
            dma_rd: Default::default(),
            m_ent_valid: Default::default(),
            m_ent_ready: Default::default(),
            m_ent_qpn: Default::default(),
            m_ent_index: Default::default(),
            m_ent_beat: Default::default(),
            m_err_valid: Default::default(),
            m_err_qpn: Default::default(),
            m_err_index: Default::default(),
            ahead: Constant::new(ahead),
            state: Default::default(),
            qpn: Default::default(),
            index: Default::default(),
            ring: Default::default(),
            log: Default::default(),
            posted: Default::default(),
            addr: Default::default(),
            cnt: Default::default(),
            n: Default::default(),
            stale: Default::default(),
            tag_v: Default::default(),
            tag_moved: Default::default(),
            tag_qpn: Default::default(),
            tag_first: Default::default(),
            tag_n: Default::default(),
            held: Default::default(),
            pf_busy: Default::default(),
            pf_req: Default::default(),
            pf_slot: Default::default(),
            pf_qpn: Default::default(),
            pf_at: Default::default(),
            pf_ring: Default::default(),
            pf_log: Default::default(),
            pf_m: Default::default(),
            pf_cnt: Default::default(),
            pf_first: Default::default(),
            pf_n: Default::default(),
            slot_in: Default::default(),
            slot: Default::default(),
            rd_at: Default::default(),
            wr_at: Default::default(),
            slot58: Default::default(),
            addr64: Default::default(),
            pf_slot58: Default::default(),
            pf_addr64: Default::default(),
            pf_ring_slot: Default::default(),
            ring_slot: Default::default(),
            to_wrap: Default::default(),
            nn: Default::default(),
            hit: Default::default(),
            e: Default::default(),
            ahead_n: Default::default(),
            beyond: Default::default(),
            e_ring_slot: Default::default(),
            e_to_wrap: Default::default(),
            mm: Default::default(),
            keep_first: Default::default(),
            go_ahead: Default::default(),
            pf_resp: Default::default(),
            unused_tag: Default::default(),
            st_idle: k(IDLE),
            st_look: k(LOOK),
            st_req: k(REQ),
            st_wait: k(WAIT),
            st_filled: k(FILLED),
            st_out: k(OUT),
            st_hold: k(HOLD),
            ones32: k(0xFFFF_FFFF),
            one32: k(1),
            buf32: k(BUF),
            depth32: k(DEPTH),
            one16: k(1),
            zero16: k(0),
            zero6: k(0),
            zero26: k(0),
            zero32: k(0),
            zero_cnt: k(0),
            six: k(6),
            one_cnt: k(1),
            tag: k(0),
        }
    }
}

impl<const QA: usize, const SL: usize, const AW: usize> Logic for RingFetch<QA, SL, AW> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, state, qpn, index, ring, log, posted, addr, cnt, n, stale, tag_v,
            tag_moved, pf_busy, pf_req, pf_slot, pf_qpn, pf_at, pf_ring, pf_log, pf_m, pf_cnt,
            pf_first, pf_n
        );
        self.held.read_clock.next = self.clock.val();
        self.held.write_clock.next = self.clock.val();
        self.tag_qpn.read_clock.next = self.clock.val();
        self.tag_qpn.write_clock.next = self.clock.val();
        self.tag_first.read_clock.next = self.clock.val();
        self.tag_first.write_clock.next = self.clock.val();
        self.tag_n.read_clock.next = self.clock.val();
        self.tag_n.write_clock.next = self.clock.val();

        // ---- IDLE: take a request (its slot's tag read); the slot's address; the read's
        // length ----
        self.slot_in.next = self.s_req_qpn.val().get_bits::<SL>(0);
        self.slot.next = self.qpn.q.val().get_bits::<SL>(0);
        self.tag_qpn.read_address.next = self.slot.val();
        self.tag_first.read_address.next = self.slot.val();
        self.tag_n.read_address.next = self.slot.val();
        if self.state.q.val() == self.st_idle.val() {
            self.tag_qpn.read_address.next = self.slot_in.val();
            self.tag_first.read_address.next = self.slot_in.val();
            self.tag_n.read_address.next = self.slot_in.val();
        }
        self.ring_slot.next = self.s_req_index.val() & !(self.ones32.val() << self.s_req_log.val());
        self.slot58.lo.next = self.ring_slot.val();
        self.slot58.hi.next = self.zero26.val();
        self.addr64.hi.next = self.s_req_ring.val() + self.slot58.y.val();
        self.addr64.lo.next = self.zero6.val();
        self.to_wrap.next = (self.one32.val() << self.s_req_log.val()) - self.ring_slot.val();
        self.nn.next = self.buf32.val();
        if self.s_req_posted.val() < self.nn.val() {
            self.nn.next = self.s_req_posted.val();
        }
        if self.to_wrap.val() < self.nn.val() {
            self.nn.next = self.to_wrap.val();
        }
        if self.nn.val() == self.zero32.val() {
            self.nn.next = self.one32.val();
        }
        self.s_req_ready.next = self.state.q.val() == self.st_idle.val();
        if self.s_req_valid.val() & (self.state.q.val() == self.st_idle.val()) {
            self.qpn.d.next = self.s_req_qpn.val();
            self.index.d.next = self.s_req_index.val();
            self.ring.d.next = self.s_req_ring.val();
            self.log.d.next = self.s_req_log.val();
            self.posted.d.next = self.s_req_posted.val();
            self.addr.d.next = self.addr64.y.val();
            self.n.d.next = self.nn.val();
            self.state.d.next = self.st_look.val();
        }

        // ---- LOOK: the slot's tag: a hit (the WQE is read, maybe the next ones too), or a
        // miss (the slot refilled once no read ahead is in flight) ----
        self.hit.next = (((self.tag_v.q.val() >> self.slot.val()) & self.one16.val())
            != self.zero16.val())
            & (self.tag_qpn.read_data.val() == self.qpn.q.val())
            & ((self.index.q.val() - self.tag_first.read_data.val()) < self.tag_n.read_data.val())
            & !self.s_inv.val();
        self.e.next = self.tag_first.read_data.val() + self.tag_n.read_data.val();
        self.ahead_n.next = self.e.val() - self.index.q.val();
        self.beyond.next = self.posted.q.val() - self.ahead_n.val();
        self.e_ring_slot.next = self.e.val() & !(self.ones32.val() << self.log.q.val());
        self.e_to_wrap.next = (self.one32.val() << self.log.q.val()) - self.e_ring_slot.val();
        self.mm.next = self.buf32.val();
        if self.beyond.val() < self.mm.val() {
            self.mm.next = self.beyond.val();
        }
        if self.e_to_wrap.val() < self.mm.val() {
            self.mm.next = self.e_to_wrap.val();
        }
        self.keep_first.next = self.tag_first.read_data.val();
        if (self.tag_n.read_data.val() + self.mm.val()) > self.depth32.val() {
            self.keep_first.next = self.e.val() + self.mm.val() - self.depth32.val();
        }
        self.go_ahead.next = self.ahead.val()
            & self.hit.val()
            & !self.pf_busy.q.val()
            & (self.ahead_n.val() <= self.buf32.val())
            & (self.posted.q.val() > self.ahead_n.val());
        self.tag_qpn.write_enable.next = false;
        self.tag_first.write_enable.next = false;
        self.tag_n.write_enable.next = false;
        self.tag_qpn.write_address.next = self.slot.val();
        self.tag_first.write_address.next = self.slot.val();
        self.tag_n.write_address.next = self.slot.val();
        self.tag_qpn.write_data.next = self.qpn.q.val();
        self.tag_first.write_data.next = self.index.q.val();
        self.tag_n.write_data.next = self.n.q.val();
        if (self.state.q.val() == self.st_look.val()) & !self.tag_moved.q.val() {
            if self.hit.val() {
                self.state.d.next = self.st_out.val();
                if self.go_ahead.val() {
                    // the window shrinks to what stays; the read's WQEs join it when in
                    self.tag_first.write_data.next = self.keep_first.val();
                    self.tag_n.write_data.next = self.e.val() - self.keep_first.val();
                    self.tag_first.write_enable.next = true;
                    self.tag_n.write_enable.next = true;
                    self.pf_busy.d.next = true;
                    self.pf_req.d.next = true;
                    self.pf_slot.d.next = self.slot.val();
                    self.pf_qpn.d.next = self.qpn.q.val();
                    self.pf_at.d.next = self.e.val();
                    self.pf_ring.d.next = self.ring.q.val();
                    self.pf_log.d.next = self.log.q.val();
                    self.pf_m.d.next = self.mm.val();
                    self.pf_cnt.d.next = self.zero_cnt.val();
                    self.pf_first.d.next = self.keep_first.val();
                    self.pf_n.d.next = self.e.val() + self.mm.val() - self.keep_first.val();
                }
            } else if self.pf_busy.q.val() {
                self.state.d.next = self.st_hold.val();
            } else {
                self.cnt.d.next = self.zero_cnt.val();
                self.tag_v.d.next = self.tag_v.q.val() & !(self.one16.val() << self.slot.val());
                self.stale.d.next = false;
                self.state.d.next = self.st_req.val();
            }
        }

        // ---- HOLD: a miss waits for the read ahead, then looks again ----
        if (self.state.q.val() == self.st_hold.val()) & !self.pf_busy.q.val() {
            self.state.d.next = self.st_look.val();
        }

        // ---- REQ: the read (the miss's, or the read ahead's: its address from registers) ----
        self.pf_ring_slot.next = self.pf_at.q.val() & !(self.ones32.val() << self.pf_log.q.val());
        self.pf_slot58.lo.next = self.pf_ring_slot.val();
        self.pf_slot58.hi.next = self.zero26.val();
        self.pf_addr64.hi.next = self.pf_ring.q.val() + self.pf_slot58.y.val();
        self.pf_addr64.lo.next = self.zero6.val();
        self.dma_rd.req_valid.next =
            (self.state.q.val() == self.st_req.val()) | self.pf_req.q.val();
        self.dma_rd.req_addr.next = self.addr.q.val();
        self.dma_rd.req_len.next = self.n.q.val().get_bits::<16>(0) << self.six.val();
        if self.pf_req.q.val() {
            self.dma_rd.req_addr.next = self.pf_addr64.y.val();
            self.dma_rd.req_len.next = self.pf_m.q.val().get_bits::<16>(0) << self.six.val();
        }
        self.dma_rd.req_tag.next = self.tag.val();
        if self.dma_rd.req_ready.val() {
            if self.pf_req.q.val() {
                self.pf_req.d.next = false;
            } else if self.state.q.val() == self.st_req.val() {
                self.state.d.next = self.st_wait.val();
            }
        }

        // ---- WAIT: the read's beats into the slot (a miss's first is its WQE), or the
        // refusal ----
        self.pf_resp.next = self.pf_busy.q.val() & !self.pf_req.q.val();
        self.dma_rd.resp_ready.next = (self.state.q.val() == self.st_wait.val())
            | (self.pf_busy.q.val() & !self.pf_req.q.val());
        // Responses come in order, one read at a time: the tag says nothing new.
        self.unused_tag.next = self.dma_rd.resp_tag.val();
        self.wr_at.hi.next = self.slot.val();
        self.wr_at.lo.next = self.index.q.val().get_bits::<DEPTH_LOG>(0) + self.cnt.q.val();
        if self.pf_resp.val() {
            self.wr_at.hi.next = self.pf_slot.q.val();
            self.wr_at.lo.next = self.pf_at.q.val().get_bits::<DEPTH_LOG>(0) + self.pf_cnt.q.val();
        }
        self.held.write_address.next = self.wr_at.y.val();
        self.held.write_data.next = self.dma_rd.resp_data.val();
        self.held.write_enable.next = ((self.state.q.val() == self.st_wait.val())
            | self.pf_resp.val())
            & self.dma_rd.resp_valid.val()
            & !self.dma_rd.resp_err.val();
        self.m_err_valid.next = false;
        self.m_err_qpn.next = self.qpn.q.val();
        self.m_err_index.next = self.index.q.val();
        if self.pf_resp.val() & self.dma_rd.resp_valid.val() {
            if self.dma_rd.resp_err.val() {
                self.pf_busy.d.next = false;
            } else {
                self.pf_cnt.d.next = self.pf_cnt.q.val() + self.one_cnt.val();
                if self.dma_rd.resp_last.val() {
                    self.tag_qpn.write_address.next = self.pf_slot.q.val();
                    self.tag_first.write_address.next = self.pf_slot.q.val();
                    self.tag_n.write_address.next = self.pf_slot.q.val();
                    self.tag_qpn.write_data.next = self.pf_qpn.q.val();
                    self.tag_first.write_data.next = self.pf_first.q.val();
                    self.tag_n.write_data.next = self.pf_n.q.val();
                    self.tag_qpn.write_enable.next = true;
                    self.tag_first.write_enable.next = true;
                    self.tag_n.write_enable.next = true;
                    self.pf_busy.d.next = false;
                }
            }
        }
        if (self.state.q.val() == self.st_wait.val()) & self.dma_rd.resp_valid.val() {
            if self.dma_rd.resp_err.val() {
                if self.n.q.val() == self.one32.val() {
                    self.m_err_valid.next = true;
                    self.state.d.next = self.st_idle.val();
                } else {
                    // read the requested slot alone
                    self.n.d.next = self.one32.val();
                    self.cnt.d.next = self.zero_cnt.val();
                    self.state.d.next = self.st_req.val();
                }
            } else {
                self.cnt.d.next = self.cnt.q.val() + self.one_cnt.val();
                if self.dma_rd.resp_last.val() {
                    self.tag_qpn.write_enable.next = true;
                    self.tag_first.write_enable.next = true;
                    self.tag_n.write_enable.next = true;
                    if !self.stale.q.val() {
                        self.tag_v.d.next =
                            self.tag_v.q.val() | (self.one16.val() << self.slot.val());
                    }
                    self.state.d.next = self.st_filled.val();
                }
            }
        }

        // a LOOK right after a tag write reads the tag again (no RAM write-through)
        self.tag_moved.d.next = ((self.state.q.val() == self.st_look.val())
            & !self.tag_moved.q.val()
            & self.go_ahead.val())
            | (((self.state.q.val() == self.st_wait.val()) | self.pf_resp.val())
                & self.dma_rd.resp_valid.val()
                & !self.dma_rd.resp_err.val()
                & self.dma_rd.resp_last.val());

        // ---- FILLED: the last beat lands in the RAM; the WQE is read from it ----
        if self.state.q.val() == self.st_filled.val() {
            self.state.d.next = self.st_out.val();
        }

        // ---- OUT: the WQE (the RAM's word at the request's address), held until taken ----
        self.rd_at.hi.next = self.slot.val();
        self.rd_at.lo.next = self.index.q.val().get_bits::<DEPTH_LOG>(0);
        self.held.read_address.next = self.rd_at.y.val();
        self.m_ent_valid.next = self.state.q.val() == self.st_out.val();
        self.m_ent_qpn.next = self.qpn.q.val();
        self.m_ent_index.next = self.index.q.val();
        self.m_ent_beat.next = self.held.read_data.val();
        if (self.state.q.val() == self.st_out.val()) & self.m_ent_ready.val() {
            self.state.d.next = self.st_idle.val();
        }

        // ---- invalidation: every slot emptied, a fill in flight not kept ----
        if self.s_inv.val() {
            self.tag_v.d.next = self.zero16.val();
            self.stale.d.next = true;
        }

        if self.reset.val() {
            self.state.d.next = self.st_idle.val();
            self.tag_v.d.next = self.zero16.val();
            self.pf_busy.d.next = false;
            self.pf_req.d.next = false;
        }
    }
}

/// A [`RingFetch`] on the SQ with the send WQE decoded; see the [module docs](self).
#[derive(LogicBlock)]
pub struct WqeFetch<const QA: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,

    /// A WQE to fetch: the QP, its SQ ring (IOVA >> 6) and size (log2 entries), the
    /// free-running SQ index, and how many WQEs are posted from it on (`sq_pi - index`).
    pub s_req_valid: Signal<In, Bit>,
    pub s_req_ready: Signal<Out, Bit>,
    pub s_req_qpn: Signal<In, Bits<QA>>,
    pub s_req_sq_ring: Signal<In, Bits<58>>,
    pub s_req_sq_log: Signal<In, Bits<4>>,
    pub s_req_index: Signal<In, Bits<32>>,
    pub s_req_posted: Signal<In, Bits<32>>,
    /// Pulse: forget every WQE held (a QP was reset or destroyed).
    pub s_inv: Signal<In, Bit>,

    // --- DMA read client ---
    pub dma_rd: DmaRdClient,

    /// The decoded WQE (`SendWqe`'s fields), with the request's QP and index.
    pub m_wqe_valid: Signal<Out, Bit>,
    pub m_wqe_ready: Signal<In, Bit>,
    pub m_wqe_qpn: Signal<Out, Bits<QA>>,
    pub m_wqe_index: Signal<Out, Bits<32>>,
    pub m_wqe_wr_id: Signal<Out, Bits<64>>,
    pub m_wqe_opcode: Signal<Out, Bits<8>>,
    pub m_wqe_flags: Signal<Out, Bits<8>>,
    pub m_wqe_inline_len: Signal<Out, Bits<8>>,
    pub m_wqe_num_sge: Signal<Out, Bits<8>>,
    pub m_wqe_imm: Signal<Out, Bits<32>>,
    pub m_wqe_remote_addr: Signal<Out, Bits<64>>,
    pub m_wqe_rkey: Signal<Out, Bits<32>>,
    pub m_wqe_compare_add: Signal<Out, Bits<64>>,
    pub m_wqe_swap: Signal<Out, Bits<64>>,
    pub m_wqe_inline: Signal<Out, Bits<256>>,
    pub m_wqe_sge_addr: Signal<Out, Bits<64>>,
    pub m_wqe_sge_length: Signal<Out, Bits<32>>,
    pub m_wqe_sge_lkey: Signal<Out, Bits<32>>,

    /// Pulse: the read of the WQE failed.
    pub m_err_valid: Signal<Out, Bit>,
    pub m_err_qpn: Signal<Out, Bits<QA>>,
    pub m_err_index: Signal<Out, Bits<32>>,

    ring: SqRingFetch<QA>,
    is_inline: Signal<Local, Bit>,
    unused_rsvd: Signal<Local, Bits<32>>,
    zero32: Constant<Bits<32>>,
    zero64: Constant<Bits<64>>,
    zero256: Constant<Bits<256>>,
    inline_flag: Constant<Bits<8>>,
    zero8: Constant<Bits<8>>,
}

impl<const QA: usize> Default for WqeFetch<QA> {
    fn default() -> Self {
        WqeFetch {
            clock: Default::default(),
            reset: Default::default(),
            s_req_valid: Default::default(),
            s_req_ready: Default::default(),
            s_req_qpn: Default::default(),
            s_req_sq_ring: Default::default(),
            s_req_sq_log: Default::default(),
            s_req_index: Default::default(),
            s_req_posted: Default::default(),
            s_inv: Default::default(),
            dma_rd: Default::default(),
            m_wqe_valid: Default::default(),
            m_wqe_ready: Default::default(),
            m_wqe_qpn: Default::default(),
            m_wqe_index: Default::default(),
            m_wqe_wr_id: Default::default(),
            m_wqe_opcode: Default::default(),
            m_wqe_flags: Default::default(),
            m_wqe_inline_len: Default::default(),
            m_wqe_num_sge: Default::default(),
            m_wqe_imm: Default::default(),
            m_wqe_remote_addr: Default::default(),
            m_wqe_rkey: Default::default(),
            m_wqe_compare_add: Default::default(),
            m_wqe_swap: Default::default(),
            m_wqe_inline: Default::default(),
            m_wqe_sge_addr: Default::default(),
            m_wqe_sge_length: Default::default(),
            m_wqe_sge_lkey: Default::default(),
            m_err_valid: Default::default(),
            m_err_qpn: Default::default(),
            m_err_index: Default::default(),
            ring: SqRingFetch::new(true),
            is_inline: Default::default(),
            unused_rsvd: Default::default(),
            zero32: k(0),
            zero64: k(0),
            zero256: k(0),
            inline_flag: k(u64::from(rocenic_proto::abi::verbs::send_flags::INLINE)),
            zero8: k(0),
        }
    }
}

impl<const QA: usize> Logic for WqeFetch<QA> {
    #[hdl_gen]
    fn update(&mut self) {
        self.ring.clock.next = self.clock.val();
        self.ring.reset.next = self.reset.val();
        self.ring.s_req_valid.next = self.s_req_valid.val();
        self.s_req_ready.next = self.ring.s_req_ready.val();
        self.ring.s_req_qpn.next = self.s_req_qpn.val();
        self.ring.s_req_ring.next = self.s_req_sq_ring.val();
        self.ring.s_req_log.next = self.s_req_sq_log.val();
        self.ring.s_req_index.next = self.s_req_index.val();
        self.ring.s_req_posted.next = self.s_req_posted.val();
        self.ring.s_inv.next = self.s_inv.val();
        DmaRdClient::link(&mut self.dma_rd, &mut self.ring.dma_rd);
        self.m_err_valid.next = self.ring.m_err_valid.val();
        self.m_err_qpn.next = self.ring.m_err_qpn.val();
        self.m_err_index.next = self.ring.m_err_index.val();

        // ---- the send WQE's fields ----
        self.m_wqe_valid.next = self.ring.m_ent_valid.val();
        self.ring.m_ent_ready.next = self.m_wqe_ready.val();
        self.m_wqe_qpn.next = self.ring.m_ent_qpn.val();
        self.m_wqe_index.next = self.ring.m_ent_index.val();
        self.m_wqe_wr_id.next = self.ring.m_ent_beat.val().get_bits::<64>(0);
        self.m_wqe_opcode.next = self.ring.m_ent_beat.val().get_bits::<8>(64);
        self.m_wqe_flags.next = self.ring.m_ent_beat.val().get_bits::<8>(72);
        self.m_wqe_inline_len.next = self.ring.m_ent_beat.val().get_bits::<8>(80);
        self.m_wqe_num_sge.next = self.ring.m_ent_beat.val().get_bits::<8>(88);
        self.m_wqe_imm.next = self.ring.m_ent_beat.val().get_bits::<32>(96);
        self.m_wqe_remote_addr.next = self.ring.m_ent_beat.val().get_bits::<64>(128);
        self.m_wqe_rkey.next = self.ring.m_ent_beat.val().get_bits::<32>(192);
        self.unused_rsvd.next = self.ring.m_ent_beat.val().get_bits::<32>(224);
        self.is_inline.next = (self.ring.m_ent_beat.val().get_bits::<8>(72)
            & self.inline_flag.val())
            != self.zero8.val();
        if self.is_inline.val() {
            self.m_wqe_compare_add.next = self.zero64.val();
            self.m_wqe_swap.next = self.zero64.val();
            self.m_wqe_sge_addr.next = self.zero64.val();
            self.m_wqe_sge_length.next = self.zero32.val();
            self.m_wqe_sge_lkey.next = self.zero32.val();
            self.m_wqe_inline.next = self.ring.m_ent_beat.val().get_bits::<256>(256);
        } else {
            self.m_wqe_compare_add.next = self.ring.m_ent_beat.val().get_bits::<64>(256);
            self.m_wqe_swap.next = self.ring.m_ent_beat.val().get_bits::<64>(320);
            self.m_wqe_sge_addr.next = self.ring.m_ent_beat.val().get_bits::<64>(384);
            self.m_wqe_sge_length.next = self.ring.m_ent_beat.val().get_bits::<32>(448);
            self.m_wqe_sge_lkey.next = self.ring.m_ent_beat.val().get_bits::<32>(480);
            self.m_wqe_inline.next = self.zero256.val();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{HashMap, HashSet, VecDeque};

    use rocenic_proto::abi::verbs::{send_flags, WrOpcode};
    use rocenic_proto::abi::wqe::SendWqe;
    use rocenic_proto::abi::DESC_SIZE;

    use super::*;
    use crate::bench::{Bench, Pattern, Rng};
    use crate::tx::tx_leaves::bytes_from_bits;
    use crate::QP_LOG;

    /// Rings whose IOVA is at or above this fail to read.
    const BAD_RING: u64 = 0xF000_0000_0000_0000;

    /// A random WQE image: mostly a real WQE (`to_bytes`), sometimes raw random bytes
    /// (`from_bytes` never fails, and neither does the block).
    fn random_raw(rng: &mut Rng) -> [u8; DESC_SIZE] {
        if rng.percent(30) {
            let mut raw: [u8; DESC_SIZE] = rng.bytes(DESC_SIZE).try_into().expect("64");
            if rng.percent(50) {
                raw[9] |= send_flags::INLINE;
            }
            return raw;
        }
        let inline = rng.percent(30);
        let w = SendWqe {
            wr_id: rng.next_u64(),
            opcode: WrOpcode::from(rng.below(11) as u8),
            flags: rng.byte() & 0xB | if inline { send_flags::INLINE } else { 0 },
            inline_len: rng.below(33) as u8,
            num_sge: rng.below(3) as u8,
            imm_or_inv: rng.next_u64() as u32,
            remote_addr: rng.next_u64(),
            rkey: rng.next_u64() as u32,
            compare_add: rng.next_u64(),
            swap: rng.next_u64(),
            sge: rocenic_proto::abi::wqe::Sge {
                addr: rng.next_u64(),
                length: rng.next_u64() as u32,
                lkey: rng.next_u64() as u32,
            },
            inline: rng.bytes(32).try_into().expect("32"),
        };
        w.to_bytes()
    }

    /// The block's outputs as a `SendWqe`.
    fn wqe_out(u: &WqeFetch<QP_LOG>) -> SendWqe {
        SendWqe {
            wr_id: u.m_wqe_wr_id.val().to_u64(),
            opcode: WrOpcode::from(u.m_wqe_opcode.val().to_u64() as u8),
            flags: u.m_wqe_flags.val().to_u64() as u8,
            inline_len: u.m_wqe_inline_len.val().to_u64() as u8,
            num_sge: u.m_wqe_num_sge.val().to_u64() as u8,
            imm_or_inv: u.m_wqe_imm.val().to_u64() as u32,
            remote_addr: u.m_wqe_remote_addr.val().to_u64(),
            rkey: u.m_wqe_rkey.val().to_u64() as u32,
            compare_add: u.m_wqe_compare_add.val().to_u64(),
            swap: u.m_wqe_swap.val().to_u64(),
            sge: rocenic_proto::abi::wqe::Sge {
                addr: u.m_wqe_sge_addr.val().to_u64(),
                length: u.m_wqe_sge_length.val().to_u64() as u32,
                lkey: u.m_wqe_sge_lkey.val().to_u64() as u32,
            },
            inline: bytes_from_bits(u.m_wqe_inline.val())
                .try_into()
                .expect("32"),
        }
    }

    /// A fetch request: QP, ring (IOVA >> 6), log2 size, index, WQEs posted from it on.
    #[derive(Clone, Copy, Debug)]
    struct Req {
        qpn: u64,
        ring: u64,
        sq_log: u64,
        index: u32,
        posted: u32,
    }

    impl Req {
        fn slot_addr(&self, index: u32) -> u64 {
            (self.ring << 6) + 64 * (u64::from(index) & ((1 << self.sq_log) - 1))
        }

        /// Whether a read of `n` slots at `addr` takes only WQEs posted at this request
        /// (from one index on, not past the ring's wrap, at most [`BUF`]).
        fn covers(&self, addr: u64, n: u64) -> bool {
            let size = 1u64 << self.sq_log;
            let base = self.ring << 6;
            if addr < base || addr >= base + 64 * size || !(addr - base).is_multiple_of(64) {
                return false;
            }
            let slot = (addr - base) / 64;
            let ahead = slot.wrapping_sub(u64::from(self.index)) & (size - 1);
            (1..=BUF).contains(&n) && slot + n <= size && ahead + n <= u64::from(self.posted)
        }
    }

    /// The block, a host memory of WQE slots (random, made on first read, kept) and a DMA
    /// that answers in order after a random latency; every read is checked against the
    /// rules (a miss's starts at the requested slot and takes at most min(posted, BUF, to
    /// the wrap) slots; a read ahead takes only WQEs posted at an earlier request).
    struct Tb {
        b: Bench<WqeFetch<QP_LOG>>,
        rng: Rng,
        pattern: Pattern,
        mem: HashMap<u64, [u8; DESC_SIZE]>,
        /// Slots (addresses) on an unmapped page.
        bad: HashSet<u64>,
        /// Reads issued: (address, slots).
        reads: Vec<(u64, u64)>,
        /// Requests made.
        history: Vec<Req>,
        /// (due cycle, beats; None = refused) of the reads in flight.
        pending: VecDeque<(u64, Option<VecDeque<[u8; DESC_SIZE]>>)>,
        offered: bool,
        /// Cycles from the last fetch's request to its answer's first offer.
        last_cycles: u64,
    }

    impl Tb {
        fn new(pattern: Pattern, seed: u64) -> Tb {
            let mut b = Bench::new(WqeFetch::<QP_LOG>::default(), |u| &mut u.clock);
            b.uut.reset.next = true;
            b.tick();
            b.uut.reset.next = false;
            Tb {
                b,
                rng: Rng::new(seed),
                pattern,
                mem: HashMap::new(),
                bad: HashSet::new(),
                reads: Vec::new(),
                history: Vec::new(),
                pending: VecDeque::new(),
                offered: false,
                last_cycles: 0,
            }
        }

        fn slot(&mut self, addr: u64) -> [u8; DESC_SIZE] {
            let rng = &mut self.rng;
            *self.mem.entry(addr).or_insert_with(|| random_raw(rng))
        }

        fn readable(&self, addr: u64) -> bool {
            addr < BAD_RING && !self.bad.contains(&addr)
        }

        /// A cycle with `s_inv` high and nothing requested.
        fn invalidate(&mut self) {
            self.b.uut.s_inv.next = true;
            self.b.uut.s_req_valid.next = false;
            self.step(None);
            self.b.uut.s_inv.next = false;
        }

        /// `n` cycles with nothing requested (reads ahead go on).
        fn idle(&mut self, n: u64) {
            self.b.uut.s_req_valid.next = false;
            for _ in 0..n {
                self.step(None);
            }
        }

        /// One cycle: the DMA side driven (a response due offered, random readiness), the
        /// block's reads checked and queued, its answer checked against `want` (the
        /// request, and the slot's contents if it can be read; none: no answer may come).
        /// Returns whether the request was taken, an answer offered, and taken.
        fn step(&mut self, want: Option<(Req, Option<[u8; DESC_SIZE]>)>) -> (bool, bool, bool) {
            let now = self.b.cycle();
            let due = self.pending.front().is_some_and(|p| p.0 <= now);
            if due && !self.offered && self.rng.percent(self.pattern.valid_pct) {
                self.offered = true;
            }
            let (data, err, last) = match self.pending.front() {
                Some((_, Some(beats))) => (beats[0], false, beats.len() == 1),
                _ => ([0; DESC_SIZE], true, true),
            };
            let rdy_req = self.rng.percent(self.pattern.ready_pct);
            let rdy_wqe = self.rng.percent(self.pattern.ready_pct);
            let u = &mut self.b.uut;
            u.dma_rd.resp_valid.next = self.offered;
            u.dma_rd.resp_err.next = err;
            u.dma_rd.resp_last.next = last;
            u.dma_rd.resp_data.next = crate::common::icrc::beat_from_bytes(&data);
            u.dma_rd.req_ready.next = rdy_req;
            u.m_wqe_ready.next = rdy_wqe;
            self.b.settle();
            let u = &self.b.uut;
            let taken = u.s_req_valid.val() && u.s_req_ready.val();
            let req = (u.dma_rd.req_valid.val() && u.dma_rd.req_ready.val()).then(|| {
                (
                    u.dma_rd.req_addr.val().to_u64(),
                    u.dma_rd.req_len.val().to_u64(),
                )
            });
            let resp = u.dma_rd.resp_valid.val() && u.dma_rd.resp_ready.val();
            let mut finished = false;
            let offer = u.m_wqe_valid.val() || u.m_err_valid.val();
            if u.m_err_valid.val() {
                let (r, slot) = want.expect("an error with no request");
                assert!(slot.is_none(), "error for a readable slot: {r:x?}");
                assert_eq!(u.m_err_qpn.val().to_u64(), r.qpn);
                assert_eq!(u.m_err_index.val().to_u64(), u64::from(r.index));
                finished = true;
            }
            if u.m_wqe_valid.val() && u.m_wqe_ready.val() {
                let (r, slot) = want.expect("a WQE with no request");
                let raw = slot.expect("a WQE from a slot that cannot be read");
                assert_eq!(wqe_out(u), SendWqe::from_bytes(&raw), "{r:x?}");
                assert_eq!(u.m_wqe_qpn.val().to_u64(), r.qpn);
                assert_eq!(u.m_wqe_index.val().to_u64(), u64::from(r.index));
                finished = true;
            }
            if resp {
                let front = self.pending.front_mut().expect("a read in flight");
                match &mut front.1 {
                    Some(beats) if beats.len() > 1 => {
                        beats.pop_front();
                    }
                    _ => {
                        self.pending.pop_front();
                    }
                }
                self.offered = false;
            }
            if let Some((addr, len)) = req {
                assert_eq!(len % 64, 0);
                let n = len / 64;
                let miss = want.is_some_and(|(r, _)| {
                    let slot = u64::from(r.index) & ((1 << r.sq_log) - 1);
                    let max = u64::from(r.posted).min(BUF).min((1 << r.sq_log) - slot);
                    addr == r.slot_addr(r.index) && n >= 1 && n <= max.max(1)
                });
                assert!(
                    miss || self.history.iter().any(|h| h.covers(addr, n)),
                    "a read of {n} slots at {addr:#x} is neither the miss's nor ahead"
                );
                let ok = (0..n).all(|i| self.readable(addr + 64 * i));
                let beats = ok.then(|| (0..n).map(|i| self.slot(addr + 64 * i)).collect());
                let due = now + 1 + self.rng.below(20);
                self.pending.push_back((due, beats));
                self.reads.push((addr, n));
            }
            self.b.tick();
            (taken, offer, finished)
        }

        /// Fetches one WQE; checks the answer (the slot's contents, or a refusal exactly
        /// when that slot alone cannot be read); returns whether it was fetched.
        fn fetch(&mut self, r: Req) -> bool {
            let want_addr = r.slot_addr(r.index);
            let want_ok = self.readable(want_addr);
            let want = want_ok.then(|| self.slot(want_addr));
            self.history.push(r);
            let u = &mut self.b.uut;
            u.s_req_valid.next = true;
            u.s_req_qpn.next = r.qpn.into();
            u.s_req_sq_ring.next = r.ring.into();
            u.s_req_sq_log.next = r.sq_log.into();
            u.s_req_index.next = u64::from(r.index).into();
            u.s_req_posted.next = u64::from(r.posted).into();
            let mut cycles = 0;
            let mut offered = false;
            loop {
                cycles += 1;
                assert!(cycles < 400, "stuck");
                let (taken, offer, finished) = self.step(Some((r, want)));
                if taken {
                    self.b.uut.s_req_valid.next = false;
                }
                if offer && !offered {
                    offered = true;
                    self.last_cycles = cycles;
                }
                if finished {
                    return want_ok;
                }
            }
        }
    }

    /// Random requests on random rings (some unreadable), random `posted`.
    fn run(pattern: Pattern, seed: u64, count: usize) -> (usize, usize) {
        let mut tb = Tb::new(pattern, seed);
        let (mut fetched, mut refused) = (0, 0);
        for _ in 0..count {
            let r = Req {
                qpn: tb.rng.below(1 << QP_LOG),
                ring: if tb.rng.percent(10) {
                    BAD_RING >> 6
                } else {
                    tb.rng.next_u64() >> 8
                },
                sq_log: tb.rng.below(16),
                index: tb.rng.next_u64() as u32,
                posted: tb.rng.below(20) as u32 + 1,
            };
            if tb.fetch(r) {
                fetched += 1;
            } else {
                refused += 1;
            }
        }
        (fetched, refused)
    }

    #[test]
    fn every_fetch_decodes_as_send_wqe_from_bytes() {
        let (mut fetched, mut refused) = (0, 0);
        for (i, p) in Pattern::SWEEP.into_iter().enumerate() {
            let (f, r) = run(p, 0xF37 + i as u64, 120);
            fetched += f;
            refused += r;
        }
        assert!(
            fetched > 400 && refused > 20,
            "{fetched} fetched, {refused} refused"
        );
    }

    /// Walks a QP's SQ in order (with `sq_pi` fixed), re-reads (go-back-N), another QP.
    #[test]
    fn fetches_in_order_hit_the_buffer_and_stop_at_the_wrap() {
        assert_eq!((BUF, DEPTH), (16, 32), "the figures below are for these");
        for (i, p) in Pattern::SWEEP.into_iter().enumerate() {
            let mut tb = Tb::new(p, 0xB0F + i as u64);
            let q = |index: u32, pi: u32| Req {
                qpn: 3,
                ring: 0x1000,
                sq_log: 5,
                index,
                posted: pi - index,
            };
            // indices 20..60 of a 32-slot ring, sq_pi 60: reads of 12 (to the wrap), then 16
            // and 12 ahead (each when at most 16 are left ahead)
            for index in 20..60 {
                assert!(tb.fetch(q(index, 60)));
            }
            let base = 0x1000 << 6;
            assert_eq!(
                tb.reads,
                vec![(base + 64 * 20, 12), (base, 16), (base + 64 * 16, 12)],
                "pattern {i}"
            );
            // read again (a rewind): 57 and 28 are held (the last 32), 27 is not
            tb.reads.clear();
            assert!(tb.fetch(q(57, 60)));
            assert!(tb.fetch(q(28, 60)));
            assert!(tb.reads.is_empty(), "a hit reads nothing");
            assert!(tb.fetch(q(27, 60)));
            assert_eq!(tb.reads, vec![(base + 64 * 27, 5)]);
            // the same index of another QP is a miss
            tb.reads.clear();
            assert!(tb.fetch(Req {
                qpn: 4,
                ..q(41, 60)
            }));
            assert_eq!(tb.reads.len(), 1);
            // one posted: one slot read
            tb.reads.clear();
            assert!(tb.fetch(q(80, 81)));
            assert_eq!(tb.reads, vec![(base + 64 * 16, 1)]);
        }
    }

    /// QPs served in turn keep their WQEs, one slot each; two QPs of one slot take turns.
    #[test]
    fn interleaved_qps_keep_their_slots() {
        for (i, p) in Pattern::SWEEP.into_iter().enumerate() {
            let mut tb = Tb::new(p, 0x5107 + i as u64);
            let slots = 1u64 << SQ_SLOTS_LOG;
            let b = BUF as u32;
            let q = |qpn: u64, index: u32| Req {
                qpn,
                ring: 0x4000 + 0x100 * qpn,
                sq_log: 6,
                index,
                posted: 2 * b - index,
            };
            for index in 0..2 * b {
                for qpn in 0..slots {
                    assert!(tb.fetch(q(qpn, index)));
                }
            }
            let mut want: Vec<(u64, u64)> = Vec::new();
            for first in [0, b] {
                want.extend((0..slots).map(|qpn| (q(qpn, first).slot_addr(first), BUF)));
            }
            let mut reads = tb.reads.clone();
            reads.sort_unstable();
            want.sort_unstable();
            assert_eq!(reads, want, "pattern {i}: two reads of BUF per QP");
            // the QP numbered one slot count on shares QP 1's slot: each turn misses
            tb.reads.clear();
            for index in 0..4 {
                assert!(tb.fetch(q(1 + slots, index)));
                assert!(tb.fetch(q(1, index)));
            }
            assert_eq!(tb.reads.len(), 8, "pattern {i}");
            // and the others' slots are untouched
            tb.reads.clear();
            for qpn in 2..slots {
                assert!(tb.fetch(q(qpn, 2 * b - 4)));
            }
            assert!(tb.reads.is_empty(), "pattern {i}");
        }
    }

    /// A QP served slower than a DMA round trip per [`BUF`] WQEs waits for its first only:
    /// the next ones are read ahead, `BUF` at a time, and found in the buffer.
    #[test]
    fn reads_ahead_keep_a_walking_qp_fed() {
        for (i, p) in Pattern::SWEEP.into_iter().enumerate() {
            let mut tb = Tb::new(p, 0xAE + i as u64);
            let q = |index: u32| Req {
                qpn: 9,
                ring: 0x5000,
                sq_log: 8,
                index,
                posted: 64 - index,
            };
            let mut slow = 0;
            for index in 0..64 {
                assert!(tb.fetch(q(index)));
                if index > 0 && tb.last_cycles > 3 {
                    slow += 1;
                }
                tb.idle(40);
            }
            let base = 0x5000 << 6;
            let want: Vec<(u64, u64)> = (0..64 / BUF).map(|j| (base + 64 * BUF * j, BUF)).collect();
            assert_eq!(tb.reads, want, "pattern {i}");
            assert_eq!(slow, 0, "pattern {i}: fetches that waited");
        }
    }

    /// `s_inv` empties the buffer: new contents of the same (qpn, index) are read.
    #[test]
    fn invalidation_forgets_the_buffer() {
        let mut tb = Tb::new(Pattern::SWEEP[0], 0x1A);
        let r = |index: u32| Req {
            qpn: 1,
            ring: 0x2000,
            sq_log: 6,
            index,
            posted: 8 - index,
        };
        assert!(tb.fetch(r(0)));
        assert!(tb.fetch(r(1)));
        assert_eq!(tb.reads.len(), 1);
        // the QP reset and posted again: other contents at index 2
        let a2 = r(2).slot_addr(2);
        let fresh = random_raw(&mut tb.rng);
        tb.mem.insert(a2, fresh);
        tb.invalidate();
        assert!(tb.fetch(r(2)), "fresh contents read"); // checked against `fresh`
        assert_eq!(tb.reads.len(), 2);
    }

    /// A refused multi-slot read is retried for the requested slot alone; only that read's
    /// refusal is the WQE's.
    #[test]
    fn a_refused_prefetch_is_retried_alone() {
        for (i, p) in Pattern::SWEEP.into_iter().enumerate() {
            let mut tb = Tb::new(p, 0xE77 + i as u64);
            let b = BUF as u32;
            let r = |index: u32| Req {
                qpn: 2,
                ring: 0x3000,
                sq_log: 5,
                index,
                posted: 2 * b - index,
            };
            let base = 0x3000 << 6;
            tb.bad.insert(base + 64 * 3);
            // 0: BUF slots refused (3 is bad), then 0 alone
            assert!(tb.fetch(r(0)));
            assert_eq!(tb.reads, vec![(base, BUF), (base, 1)], "pattern {i}");
            // 1: the same (the buffer holds 0 only)
            assert!(tb.fetch(r(1)));
            // 3: refused twice: the WQE's error
            assert!(!tb.fetch(r(3)));
            assert_eq!(tb.reads.len(), 6);
            assert_eq!(tb.reads[4..], [(base + 64 * 3, BUF), (base + 64 * 3, 1)]);
            // 4..4 + BUF: one read, then hits, the first of which reads the rest ahead
            // (4 + BUF .. 2 BUF)
            tb.reads.clear();
            for index in 4..4 + b {
                assert!(tb.fetch(r(index)));
            }
            let rest = u64::from(b - 4);
            assert_eq!(
                tb.reads,
                vec![(base + 64 * 4, BUF), (base + 64 * (4 + BUF), rest)]
            );
        }
    }
}
