//! `RxFifo`: the RX front end. Takes the MAC RX stream (no backpressure), stores whole
//! frames in a block-RAM buffer until their verdict ([`RxParser`]: header checks and ICRC)
//! is known, and delivers each accepted frame as a header record and a payload stream
//! realigned to lane 0, both on valid/ready channels the consumer (the responder) may stall.
//! Nothing of a frame is delivered before its ICRC is known good; a frame the buffer cannot
//! hold is dropped whole and counted, never half delivered.
//!
//! ```text
//!              +--> RxParser (checks + Icrc) -- verdict, 6 cycles after tlast --+
//!  MAC RX -----+                                                                 v
//!  (no ready)  +--> write: every beat to the buffer ----> [ 512 x 64 B BRAM ]  accept? --> descriptor
//!                                                             |                 (start, payload len, layout)
//!                         read: beats of the head descriptor  v                      |
//!                         --> B (address, read data) --> C: header record / realign --> hdr, pay
//! ```
//!
//! # Interface
//!
//! - `s_axis_*`, `local_ip`: as [`RxParser`]. `enable` (CONTROL bit 0): a frame whose
//!   verdict comes while it is low is dropped without being counted (the model ignores
//!   frames while disabled).
//! - `hdr` (an `RxHdrClient`): one record per accepted frame, in frame order (below),
//!   valid/ready.
//! - `pay` (an `RxPayClient`): the payload of each accepted frame, payload byte 0 in lane 0, 64 bytes a
//!   beat, pad and ICRC removed, `tkeep` contiguous and partial only on the `tlast` beat; no
//!   beats for a frame without payload bytes. A frame's payload follows its record: the
//!   record is offered before the frame's first payload beat, and the next record after the
//!   frame's last beat has been offered (the two channels are independent otherwise).
//! - Pulses, one cycle each, one per frame (for the register file's counters):
//!   `m_rx_frame` with `m_rx_bytes` (accepted; `Counter::RxFrames`, `Counter::RxBytes`: the
//!   frame as received, Ethernet padding included), `m_drop_mac` (tuser), `m_drop_malformed`
//!   (`MalformedDrops`), `m_drop_icrc` (`IcrcDrops`), `m_drop_ip` (destination address not
//!   ours: `UnknownQpDrops`, as the model counts it), `m_drop_overflow` (no room). Reasons
//!   are exclusive, in that order of precedence, so a frame that is both malformed and too
//!   big counts as malformed, and overflow is counted only for frames that would have been
//!   delivered.
//!
//! # Header record
//!
//! Numbers as on the wire (big-endian fields read as numbers). Fields an opcode does not
//! carry hold whatever bytes are at their place (the consumer knows the opcode; `has_*`
//! say which are meaningful).
//!
//! | port | width | from |
//! |---|---|---|
//! | `opcode` | 8 | BTH |
//! | `solicited`, `migreq`, `fecn`, `becn`, `ack_req` | 1 | BTH flags |
//! | `pad` | 2 | BTH PadCnt |
//! | `pkey` | 16 | BTH |
//! | `dest_qp`, `psn` | 24 | BTH |
//! | `src_mac` | 48 | Ethernet |
//! | `src_ip`, `dst_ip` | 32 | IPv4 |
//! | `udp_sport` | 16 | UDP |
//! | `reth_va`, `reth_rkey`, `reth_dma_len` | 64, 32, 32 | RETH |
//! | `aeth_syndrome`, `aeth_msn` | 8, 24 | AETH |
//! | `atomic_va`, `atomic_rkey`, `atomic_swap`, `atomic_compare` | 64, 32, 64, 64 | AtomicETH (VA and R_Key share RETH's registers: same bytes) |
//! | `atomic_ack_orig` | 64 | AtomicAckETH |
//! | `immdt` | 32 | ImmDt (after the RETH for WRITE ONLY with immediate) |
//! | `ieth` | 32 | IETH |
//! | `payload_len` | 16 | bytes of payload, pad excluded |
//! | `has_reth`, `has_aeth`, `has_atomic_eth`, `has_atomic_ack_eth`, `has_immdt`, `has_ieth`, `has_payload` | 1 | from the opcode |
//!
//! # Buffer
//!
//! 512 beats of 64 bytes (32 KiB: seven 4 KiB-PMTU frames), one block RAM of 512 x 512
//! bits, written at every beat of every frame at the write pointer. A frame that finds the
//! buffer full is not written further and the write pointer returns to its start at its
//! last beat. Verdicts come in frame order, so the decided frames occupy the buffer
//! contiguously: `dec_end` is the end of the last decided one and an accepted frame's
//! descriptor records where it starts. Descriptors (up to 64 frames, plus the two in the
//! reader's stages) sit in three small RAMs; a frame that finds the queue full is dropped
//! as overflow. The reader frees a frame's space when it starts reading the next one, and jumps over
//! dropped frames; with nothing to read it frees everything decided. A frame needs at most
//! `ceil(len / 64)` beats; the largest that fits is 32 KiB (bigger ones count as overflow).
//!
//! # Pause (PFC XOFF)
//!
//! The engine cannot stall the MAC, but it can ask the link partner to pause, as RoCE's
//! lossless Ethernet does (802.1Qbb priority flow control: the MAC turns the request
//! into pause frames). `m_pause` is high, one cycle after the fact, while more than
//! [`XOFF_BEATS`] beats of the buffer or more than [`XOFF_FRAMES`] descriptors are in
//! use; it falls as the reader frees space. The thresholds leave room for the largest
//! frame being written and one more that starts before the sender stops (a sender that
//! obeys at frame boundaries, as the simulator's link does), so a paused link loses no
//! frame. Below line rate, the consumer's pace, not the buffer, then sets the rate.
//!
//! # Reader
//!
//! The header lengths are 54, 58, 66, 70, 74 and 82 bytes, so the payload starts at lane
//! 54, 58, 6 or 10 of the first or second beat, and realignment is one of four fixed
//! rotations. For a frame with `n` payload beats the reader reads the beats from the one
//! where the payload starts on, plus one: output beat `j` combines the tail of stored beat
//! `k` and the head of beat `k + 1`, so it is made when beat `k + 1` is read (reading past a
//! frame's end reads a slot whose content does not matter). A frame without payload reads
//! its one or two header beats. Throughput: one beat per cycle; back-to-back single-beat
//! ACKs (54 + 4 bytes) read one beat each, so the reader keeps up with them; a frame with
//! a few payload bytes in one beat takes two read cycles. The RAM's read address is the
//! address the read stage is about to hold, so a stalled read stage re-reads its own
//! address and keeps its data without a skid buffer.

use crate::bus::rx::{RxHdrClient, RxPayClient};
use crate::common::byte_swap::ByteSwap;
use crate::common::icrc::{BEAT_BYTES, DATA_BITS};
use crate::prelude::*;
use crate::rx::rx_parser::{Layout, RxParser};

/// Address bits of the frame buffer (512 beats).
pub const BUF_ADDR_BITS: usize = 9;
/// Beats in the frame buffer.
pub const BUF_BEATS: usize = 1 << BUF_ADDR_BITS;
/// Address bits of the descriptor queue (64 frames).
pub const DESC_ADDR_BITS: usize = 6;
/// Frames the descriptor queue holds.
pub const DESC_FRAMES: usize = 1 << DESC_ADDR_BITS;
/// Beats of the largest frame: a 4096-byte payload with 82 bytes of headers and the ICRC.
pub const MAX_FRAME_BEATS: usize = (4096usize + 82 + 4).div_ceil(BEAT_BYTES);
/// `m_pause` rises above this fill: room is left for the frame being written, one more
/// that may start before the sender sees the pause, and a beat of slack each.
pub const XOFF_BEATS: usize = BUF_BEATS - 2 * (MAX_FRAME_BEATS + 2);
/// `m_pause` rises above this many queued descriptors: room for the frames still in the
/// verdict pipeline (at most one a cycle for its 6 cycles) and two that may start.
pub const XOFF_FRAMES: usize = DESC_FRAMES - 16;

/// The RX front end; see the [module docs](self).
#[derive(LogicBlock)]
pub struct RxFifo {
    pub clock: Signal<In, Clock>,
    /// Synchronous reset, active high: empties the buffer and forgets frames in flight.
    pub reset: Signal<In, Bit>,
    /// CONTROL bit 0: frames decided while it is low are dropped uncounted.
    pub enable: Signal<In, Bit>,
    /// This port's IPv4 address (`a.b.c.d` = `0xaabbccdd`); 0 accepts any.
    pub local_ip: Signal<In, Bits<32>>,
    pub s_axis_tdata: Signal<In, Bits<DATA_BITS>>,
    pub s_axis_tkeep: Signal<In, Bits<BEAT_BYTES>>,
    pub s_axis_tlast: Signal<In, Bit>,
    pub s_axis_tvalid: Signal<In, Bit>,
    pub s_axis_tuser: Signal<In, Bit>,

    pub hdr: RxHdrClient,

    pub pay: RxPayClient,

    pub m_rx_frame: Signal<Out, Bit>,
    pub m_rx_bytes: Signal<Out, Bits<16>>,
    pub m_drop_mac: Signal<Out, Bit>,
    pub m_drop_malformed: Signal<Out, Bit>,
    pub m_drop_icrc: Signal<Out, Bit>,
    pub m_drop_ip: Signal<Out, Bit>,
    pub m_drop_overflow: Signal<Out, Bit>,
    /// Pause request (PFC XOFF): high while the buffer holds more than [`XOFF_BEATS`] beats
    /// or the descriptor queue more than [`XOFF_FRAMES`] frames; see "Pause" above.
    pub m_pause: Signal<Out, Bit>,

    // --- constants ---
    one10: Constant<Bits<10>>,
    zero10: Constant<Bits<10>>,
    two10: Constant<Bits<10>>,
    buf_full: Constant<Bits<10>>,
    one7: Constant<Bits<7>>,
    zero7: Constant<Bits<7>>,
    one6: Constant<Bits<6>>,
    zero6: Constant<Bits<6>>,
    desc_full: Constant<Bits<7>>,
    xoff_beats: Constant<Bits<10>>,
    xoff_frames: Constant<Bits<7>>,
    pause: DFF<Bit>,
    beat_round: Constant<Bits<17>>,
    six: Constant<Bits<5>>,
    zero16: Constant<Bits<16>>,
    one16: Constant<Bits<16>>,
    lane_mask16: Constant<Bits<16>>,
    round16: Constant<Bits<16>>,
    ones64: Constant<Bits<BEAT_BYTES>>,
    code_atomic_ack: Constant<Bits<3>>,
    code_four: Constant<Bits<3>>,
    code_reth: Constant<Bits<3>>,
    code_reth_imm: Constant<Bits<3>>,
    /// Rotations: frame byte 54 (the payload or the extension headers) to lane 0, and
    /// payload at lanes 58, 6 and 10.
    sh_432: Constant<Bits<10>>,
    sh_80: Constant<Bits<10>>,
    sh_464: Constant<Bits<10>>,
    sh_48: Constant<Bits<10>>,
    ops_reth: Constant<Bits<32>>,
    ops_aeth: Constant<Bits<32>>,
    ops_atomic_eth: Constant<Bits<32>>,
    ops_atomic_ack_eth: Constant<Bits<32>>,
    ops_immdt: Constant<Bits<32>>,
    ops_ieth: Constant<Bits<32>>,
    ops_payload: Constant<Bits<32>>,

    parser: RxParser,

    // --- write side ---
    wp: DFF<Bits<10>>,
    w_in_frame: DFF<Bit>,
    w_start: DFF<Bits<10>>,
    w_ovf: DFF<Bit>,
    /// Bit `i`: the frame whose last beat came `i + 1` cycles ago overflowed.
    ovf_pipe: DFF<Bits<6>>,
    w_first: Signal<Local, Bit>,
    w_frame_start: Signal<Local, Bits<10>>,
    w_ovf_now: Signal<Local, Bit>,
    buffer: RAM<Bits<DATA_BITS>, BUF_ADDR_BITS>,

    // --- verdict ---
    dec_end: DFF<Bits<10>>,
    nbeats17: Signal<Local, Bits<17>>,
    unused_nbeats: Signal<Local, Bits<7>>,
    unused_bytes: Signal<Local, Bit>,
    v_ovf: Signal<Local, Bit>,
    v_keep: Signal<Local, Bit>,
    v_ok: Signal<Local, Bit>,
    accept: Signal<Local, Bit>,
    r_frame: DFF<Bit>,
    r_bytes: DFF<Bits<16>>,
    r_mac: DFF<Bit>,
    r_malformed: DFF<Bit>,
    r_icrc: DFF<Bit>,
    r_ipdrop: DFF<Bit>,
    r_overflow: DFF<Bit>,

    // --- descriptors ---
    d_head: DFF<Bits<7>>,
    d_tail: DFF<Bits<7>>,
    d_start: RAM<Bits<10>, DESC_ADDR_BITS>,
    d_plen: RAM<Bits<16>, DESC_ADDR_BITS>,
    d_layout: RAM<Bits<3>, DESC_ADDR_BITS>,
    /// The head was written in the cycle it was read: take the written value.
    byp: DFF<Bit>,
    byp_start: DFF<Bits<10>>,
    byp_plen: DFF<Bits<16>>,
    byp_layout: DFF<Bits<3>>,
    d_pop: Signal<Local, Bit>,
    d_raddr: Signal<Local, Bits<6>>,
    h_valid: Signal<Local, Bit>,
    h_start: Signal<Local, Bits<10>>,
    h_plen: Signal<Local, Bits<16>>,
    h_layout: Signal<Local, Bits<3>>,
    h_npay: Signal<Local, Bits<16>>,
    h_reads: Signal<Local, Bits<10>>,
    unused_npay: Signal<Local, Bits<6>>,

    // --- reader: issue and read stage B ---
    iss_i: DFF<Bits<10>>,
    fp: DFF<Bits<10>>,
    b_valid: DFF<Bit>,
    b_addr: DFF<Bits<10>>,
    b_i: DFF<Bits<10>>,
    b_last: DFF<Bit>,
    b_plen: DFF<Bits<16>>,
    b_layout: DFF<Bits<3>>,
    iss_addr: Signal<Local, Bits<10>>,
    iss_last: Signal<Local, Bit>,
    b_free: Signal<Local, Bit>,
    b_load: Signal<Local, Bit>,
    unused_raddr: Signal<Local, Bit>,

    // --- stage C: header record and realigned payload ---
    rd: Signal<Local, Bits<DATA_BITS>>,
    prev: DFF<Bits<DATA_BITS>>,
    o_hi: Signal<Local, Bit>,
    need_hdr: Signal<Local, Bit>,
    need_pay: Signal<Local, Bit>,
    consume: Signal<Local, Bit>,
    w0: Signal<Local, Bits<DATA_BITS>>,
    ext: Signal<Local, Bits<DATA_BITS>>,
    unused_ext: Signal<Local, Bits<288>>,
    realigned: Signal<Local, Bits<DATA_BITS>>,
    rem16: Signal<Local, Bits<16>>,
    hv: DFF<Bit>,
    r_src_mac: DFF<Bits<48>>,
    r_ip: DFF<Bits<80>>,
    r_bth: DFF<Bits<96>>,
    r_ext: DFF<Bits<224>>,
    r_imm: DFF<Bits<32>>,
    r_plen: DFF<Bits<16>>,
    unused_bth: Signal<Local, Bits<17>>,
    pv: DFF<Bit>,
    p_data: DFF<Bits<DATA_BITS>>,
    p_keep: DFF<Bits<BEAT_BYTES>>,
    p_last: DFF<Bit>,

    sw_mac: ByteSwap<6, 48>,
    sw_src_ip: ByteSwap<4, 32>,
    sw_dst_ip: ByteSwap<4, 32>,
    sw_sport: ByteSwap<2, 16>,
    sw_pkey: ByteSwap<2, 16>,
    sw_dqp: ByteSwap<3, 24>,
    sw_psn: ByteSwap<3, 24>,
    sw_va: ByteSwap<8, 64>,
    sw_rkey: ByteSwap<4, 32>,
    sw_dma_len: ByteSwap<4, 32>,
    sw_swap: ByteSwap<8, 64>,
    sw_compare: ByteSwap<8, 64>,
    sw_orig: ByteSwap<8, 64>,
    sw_w54: ByteSwap<4, 32>,
    sw_imm: ByteSwap<4, 32>,
}

impl Default for RxFifo {
    fn default() -> Self {
        RxFifo::new()
    }
}

/// Bit `op` set for each RC opcode `pick` selects.
fn mask(pick: impl Fn(rocenic_proto::wire::Opcode) -> bool) -> Constant<Bits<32>> {
    let mut m = 0u64;
    for op in rocenic_proto::wire::Opcode::all() {
        if pick(op) {
            m |= 1 << u8::from(op);
        }
    }
    Constant::new(m.into())
}

impl RxFifo {
    pub fn new() -> RxFifo {
        use rocenic_proto::wire::Opcode;
        // Frame byte 54 is where extension headers or the payload begin; the payload
        // starts at 54, 58, 70 or 74 and the rotation takes lane `start % 64` to lane 0.
        assert_eq!(Layout::Bare.header_len(), 54);
        assert_eq!(Layout::Four.header_len(), 58);
        assert_eq!(Layout::Reth.header_len(), 70);
        assert_eq!(Layout::RethImm.header_len(), 74);
        let c3 = |l: Layout| Constant::new((l as u64).into());
        RxFifo {
            clock: Default::default(),
            reset: Default::default(),
            enable: Default::default(),
            local_ip: Default::default(),
            s_axis_tdata: Default::default(),
            s_axis_tkeep: Default::default(),
            s_axis_tlast: Default::default(),
            s_axis_tvalid: Default::default(),
            s_axis_tuser: Default::default(),
            hdr: Default::default(),
            pay: Default::default(),
            m_rx_frame: Default::default(),
            m_rx_bytes: Default::default(),
            m_drop_mac: Default::default(),
            m_drop_malformed: Default::default(),
            m_drop_icrc: Default::default(),
            m_drop_ip: Default::default(),
            m_drop_overflow: Default::default(),
            m_pause: Default::default(),
            one10: Constant::new(1.into()),
            zero10: Constant::new(0.into()),
            two10: Constant::new(2.into()),
            buf_full: Constant::new((BUF_BEATS as u64).into()),
            one7: Constant::new(1.into()),
            zero7: Constant::new(0.into()),
            one6: Constant::new(1.into()),
            zero6: Constant::new(0.into()),
            desc_full: Constant::new((DESC_FRAMES as u64).into()),
            xoff_beats: Constant::new((XOFF_BEATS as u64).into()),
            xoff_frames: Constant::new((XOFF_FRAMES as u64).into()),
            pause: Default::default(),
            beat_round: Constant::new((BEAT_BYTES as u64 - 1).into()),
            six: Constant::new(6.into()),
            zero16: Constant::new(0.into()),
            one16: Constant::new(1.into()),
            lane_mask16: Constant::new((BEAT_BYTES as u64 - 1).into()),
            round16: Constant::new((BEAT_BYTES as u64 - 1).into()),
            ones64: Constant::new(Bits::<BEAT_BYTES>::mask()),
            code_atomic_ack: c3(Layout::AtomicAck),
            code_four: c3(Layout::Four),
            code_reth: c3(Layout::Reth),
            code_reth_imm: c3(Layout::RethImm),
            sh_432: Constant::new(432.into()),
            sh_80: Constant::new(80.into()),
            sh_464: Constant::new(464.into()),
            sh_48: Constant::new(48.into()),
            ops_reth: mask(Opcode::has_reth),
            ops_aeth: mask(Opcode::has_aeth),
            ops_atomic_eth: mask(Opcode::has_atomic_eth),
            ops_atomic_ack_eth: mask(Opcode::has_atomic_ack_eth),
            ops_immdt: mask(Opcode::has_immdt),
            ops_ieth: mask(Opcode::has_ieth),
            ops_payload: mask(Opcode::has_payload),
            parser: RxParser::new(),
            wp: Default::default(),
            w_in_frame: Default::default(),
            w_start: Default::default(),
            w_ovf: Default::default(),
            ovf_pipe: Default::default(),
            w_first: Default::default(),
            w_frame_start: Default::default(),
            w_ovf_now: Default::default(),
            buffer: Default::default(),
            dec_end: Default::default(),
            nbeats17: Default::default(),
            unused_nbeats: Default::default(),
            unused_bytes: Default::default(),
            v_ovf: Default::default(),
            v_keep: Default::default(),
            v_ok: Default::default(),
            accept: Default::default(),
            r_frame: Default::default(),
            r_bytes: Default::default(),
            r_mac: Default::default(),
            r_malformed: Default::default(),
            r_icrc: Default::default(),
            r_ipdrop: Default::default(),
            r_overflow: Default::default(),
            d_head: Default::default(),
            d_tail: Default::default(),
            d_start: Default::default(),
            d_plen: Default::default(),
            d_layout: Default::default(),
            byp: Default::default(),
            byp_start: Default::default(),
            byp_plen: Default::default(),
            byp_layout: Default::default(),
            d_pop: Default::default(),
            d_raddr: Default::default(),
            h_valid: Default::default(),
            h_start: Default::default(),
            h_plen: Default::default(),
            h_layout: Default::default(),
            h_npay: Default::default(),
            h_reads: Default::default(),
            unused_npay: Default::default(),
            iss_i: Default::default(),
            fp: Default::default(),
            b_valid: Default::default(),
            b_addr: Default::default(),
            b_i: Default::default(),
            b_last: Default::default(),
            b_plen: Default::default(),
            b_layout: Default::default(),
            iss_addr: Default::default(),
            iss_last: Default::default(),
            b_free: Default::default(),
            b_load: Default::default(),
            unused_raddr: Default::default(),
            rd: Default::default(),
            prev: Default::default(),
            o_hi: Default::default(),
            need_hdr: Default::default(),
            need_pay: Default::default(),
            consume: Default::default(),
            w0: Default::default(),
            ext: Default::default(),
            unused_ext: Default::default(),
            realigned: Default::default(),
            rem16: Default::default(),
            hv: Default::default(),
            r_src_mac: Default::default(),
            r_ip: Default::default(),
            r_bth: Default::default(),
            r_ext: Default::default(),
            r_imm: Default::default(),
            r_plen: Default::default(),
            unused_bth: Default::default(),
            pv: Default::default(),
            p_data: Default::default(),
            p_keep: Default::default(),
            p_last: Default::default(),
            sw_mac: Default::default(),
            sw_src_ip: Default::default(),
            sw_dst_ip: Default::default(),
            sw_sport: Default::default(),
            sw_pkey: Default::default(),
            sw_dqp: Default::default(),
            sw_psn: Default::default(),
            sw_va: Default::default(),
            sw_rkey: Default::default(),
            sw_dma_len: Default::default(),
            sw_swap: Default::default(),
            sw_compare: Default::default(),
            sw_orig: Default::default(),
            sw_w54: Default::default(),
            sw_imm: Default::default(),
        }
    }
}

impl Logic for RxFifo {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            wp,
            w_in_frame,
            w_start,
            w_ovf,
            ovf_pipe,
            dec_end,
            r_frame,
            r_bytes,
            r_mac,
            r_malformed,
            r_icrc,
            r_ipdrop,
            r_overflow,
            pause,
            d_head,
            d_tail,
            byp,
            byp_start,
            byp_plen,
            byp_layout,
            iss_i,
            fp,
            b_valid,
            b_addr,
            b_i,
            b_last,
            b_plen,
            b_layout,
            prev,
            hv,
            r_src_mac,
            r_ip,
            r_bth,
            r_ext,
            r_imm,
            r_plen,
            pv,
            p_data,
            p_keep,
            p_last
        );
        self.buffer.read_clock.next = self.clock.val();
        self.buffer.write_clock.next = self.clock.val();
        self.d_start.read_clock.next = self.clock.val();
        self.d_start.write_clock.next = self.clock.val();
        self.d_plen.read_clock.next = self.clock.val();
        self.d_plen.write_clock.next = self.clock.val();
        self.d_layout.read_clock.next = self.clock.val();
        self.d_layout.write_clock.next = self.clock.val();

        // ---- the verdict engine taps the stream ----
        self.parser.clock.next = self.clock.val();
        self.parser.reset.next = self.reset.val();
        self.parser.s_axis_tdata.next = self.s_axis_tdata.val();
        self.parser.s_axis_tkeep.next = self.s_axis_tkeep.val();
        self.parser.s_axis_tlast.next = self.s_axis_tlast.val();
        self.parser.s_axis_tvalid.next = self.s_axis_tvalid.val();
        self.parser.s_axis_tuser.next = self.s_axis_tuser.val();
        self.parser.local_ip.next = self.local_ip.val();

        // ---- write every beat while there is room ----
        self.w_first.next = !self.w_in_frame.q.val();
        if self.w_first.val() {
            self.w_frame_start.next = self.wp.q.val();
            self.w_ovf_now.next = (self.wp.q.val() - self.fp.q.val()) == self.buf_full.val();
        } else {
            self.w_frame_start.next = self.w_start.q.val();
            self.w_ovf_now.next =
                self.w_ovf.q.val() | ((self.wp.q.val() - self.fp.q.val()) == self.buf_full.val());
        }
        self.buffer.write_address.next = self.wp.q.val().get_bits::<9>(0);
        self.buffer.write_data.next = self.s_axis_tdata.val();
        self.buffer.write_enable.next = self.s_axis_tvalid.val() & !self.w_ovf_now.val();
        self.ovf_pipe.d.next = self.ovf_pipe.q.val() << self.one10.val();
        if self.s_axis_tvalid.val() {
            self.w_in_frame.d.next = !self.s_axis_tlast.val();
            self.w_start.d.next = self.w_frame_start.val();
            self.w_ovf.d.next = self.w_ovf_now.val();
            if self.s_axis_tlast.val() & self.w_ovf_now.val() {
                // An overflowed frame gives its beats back at once; its verdict learns of
                // the overflow 6 cycles later.
                self.wp.d.next = self.w_frame_start.val();
                self.ovf_pipe.d.next =
                    (self.ovf_pipe.q.val() << self.one10.val()) | self.one6.val();
            } else if !self.w_ovf_now.val() {
                self.wp.d.next = self.wp.q.val() + self.one10.val();
            }
        }

        // ---- verdict: count it, and queue an accepted frame for the reader ----
        // Beats the frame took: ceil(bytes / 64) (not written at all if it overflowed).
        self.nbeats17.next =
            (self.parser.m_v_frame_len.val() + self.beat_round.val()) >> self.six.val();
        self.unused_nbeats.next = self.nbeats17.val().get_bits::<7>(10);
        self.unused_bytes.next = self.parser.m_v_frame_len.val().get_bit(16);
        self.v_ovf.next = self.ovf_pipe.q.val().get_bit(5)
            | ((self.d_tail.q.val() - self.d_head.q.val()) == self.desc_full.val());
        self.v_keep.next = self.parser.m_v_valid.val() & self.enable.val();
        self.v_ok.next = self.v_keep.val()
            & !self.parser.m_v_mac_err.val()
            & !self.parser.m_v_malformed.val()
            & !self.parser.m_v_icrc_bad.val()
            & !self.parser.m_v_ip_bad.val();
        self.accept.next = self.v_ok.val() & !self.v_ovf.val();
        self.r_frame.d.next = self.accept.val();
        self.r_bytes.d.next = self.parser.m_v_frame_len.val().get_bits::<16>(0);
        self.r_mac.d.next = self.v_keep.val() & self.parser.m_v_mac_err.val();
        self.r_malformed.d.next =
            self.v_keep.val() & !self.parser.m_v_mac_err.val() & self.parser.m_v_malformed.val();
        self.r_icrc.d.next = self.v_keep.val()
            & !self.parser.m_v_mac_err.val()
            & !self.parser.m_v_malformed.val()
            & self.parser.m_v_icrc_bad.val();
        self.r_ipdrop.d.next = self.v_keep.val()
            & !self.parser.m_v_mac_err.val()
            & !self.parser.m_v_malformed.val()
            & !self.parser.m_v_icrc_bad.val()
            & self.parser.m_v_ip_bad.val();
        self.r_overflow.d.next = self.v_ok.val() & self.v_ovf.val();
        self.m_rx_frame.next = self.r_frame.q.val();
        self.m_rx_bytes.next = self.r_bytes.q.val();
        self.m_drop_mac.next = self.r_mac.q.val();
        self.m_drop_malformed.next = self.r_malformed.q.val();
        self.m_drop_icrc.next = self.r_icrc.q.val();
        self.m_drop_ip.next = self.r_ipdrop.q.val();
        self.m_drop_overflow.next = self.r_overflow.q.val();
        // ---- pause: room left for the frame being written and one more ----
        self.pause.d.next = ((self.wp.q.val() - self.fp.q.val()) > self.xoff_beats.val())
            | ((self.d_tail.q.val() - self.d_head.q.val()) > self.xoff_frames.val());
        self.m_pause.next = self.pause.q.val();

        if self.parser.m_v_valid.val() & !self.ovf_pipe.q.val().get_bit(5) {
            self.dec_end.d.next = self.dec_end.q.val() + self.nbeats17.val().get_bits::<10>(0);
        }
        self.d_start.write_address.next = self.d_tail.q.val().get_bits::<6>(0);
        self.d_start.write_data.next = self.dec_end.q.val();
        self.d_start.write_enable.next = self.accept.val();
        self.d_plen.write_address.next = self.d_tail.q.val().get_bits::<6>(0);
        self.d_plen.write_data.next = self.parser.m_v_payload_len.val();
        self.d_plen.write_enable.next = self.accept.val();
        self.d_layout.write_address.next = self.d_tail.q.val().get_bits::<6>(0);
        self.d_layout.write_data.next = self.parser.m_v_layout.val();
        self.d_layout.write_enable.next = self.accept.val();
        if self.accept.val() {
            self.d_tail.d.next = self.d_tail.q.val() + self.one7.val();
        }

        // ---- the head descriptor: the RAMs read the address the head is about to hold ----
        self.h_valid.next = self.d_tail.q.val() != self.d_head.q.val();
        if self.byp.q.val() {
            self.h_start.next = self.byp_start.q.val();
            self.h_plen.next = self.byp_plen.q.val();
            self.h_layout.next = self.byp_layout.q.val();
        } else {
            self.h_start.next = self.d_start.read_data.val();
            self.h_plen.next = self.d_plen.read_data.val();
            self.h_layout.next = self.d_layout.read_data.val();
        }
        // Beats to read: the header beats before the payload's first, then one per payload
        // beat plus one (see the module docs).
        self.h_npay.next = (self.h_plen.val() + self.round16.val()) >> self.six.val();
        self.unused_npay.next = self.h_npay.val().get_bits::<6>(10);
        if self.h_layout.val() >= self.code_atomic_ack.val() {
            self.h_reads.next = self.h_npay.val().get_bits::<10>(0) + self.two10.val();
        } else {
            self.h_reads.next = self.h_npay.val().get_bits::<10>(0) + self.one10.val();
        }
        self.iss_last.next = self.iss_i.q.val() == self.h_reads.val() - self.one10.val();
        self.iss_addr.next = self.h_start.val() + self.iss_i.q.val();

        // ---- stage C: what the beat in B makes, and whether it can go ----
        self.rd.next = self.buffer.read_data.val();
        self.o_hi.next = self.b_layout.q.val() >= self.code_atomic_ack.val();
        self.need_hdr.next = ((self.b_i.q.val() == self.zero10.val()) & !self.o_hi.val())
            | ((self.b_i.q.val() == self.one10.val()) & self.o_hi.val());
        if self.o_hi.val() {
            self.need_pay.next =
                (self.b_plen.q.val() != self.zero16.val()) & (self.b_i.q.val() >= self.two10.val());
        } else {
            self.need_pay.next =
                (self.b_plen.q.val() != self.zero16.val()) & (self.b_i.q.val() >= self.one10.val());
        }
        self.consume.next = self.b_valid.q.val()
            & (!self.need_hdr.val() | !self.hv.q.val() | self.hdr.ready.val())
            & (!self.need_pay.val() | !self.pv.q.val() | self.pay.tready.val());

        // ---- issue: B takes the next beat when it is empty or its beat goes ----
        self.b_free.next = !self.b_valid.q.val() | self.consume.val();
        self.b_load.next = self.b_free.val() & self.h_valid.val();
        self.d_pop.next = self.b_load.val() & self.iss_last.val();
        if self.d_pop.val() {
            self.d_raddr.next = self.d_head.q.val().get_bits::<6>(0) + self.one6.val();
        } else {
            self.d_raddr.next = self.d_head.q.val().get_bits::<6>(0);
        }
        self.d_start.read_address.next = self.d_raddr.val();
        self.d_plen.read_address.next = self.d_raddr.val();
        self.d_layout.read_address.next = self.d_raddr.val();
        self.byp.d.next =
            self.accept.val() & (self.d_tail.q.val().get_bits::<6>(0) == self.d_raddr.val());
        self.byp_start.d.next = self.dec_end.q.val();
        self.byp_plen.d.next = self.parser.m_v_payload_len.val();
        self.byp_layout.d.next = self.parser.m_v_layout.val();
        if self.d_pop.val() {
            self.d_head.d.next = self.d_head.q.val() + self.one7.val();
        }
        if self.b_load.val() {
            self.b_addr.d.next = self.iss_addr.val();
            self.b_i.d.next = self.iss_i.q.val();
            self.b_last.d.next = self.iss_last.val();
            self.b_plen.d.next = self.h_plen.val();
            self.b_layout.d.next = self.h_layout.val();
            if self.iss_last.val() {
                self.iss_i.d.next = self.zero10.val();
            } else {
                self.iss_i.d.next = self.iss_i.q.val() + self.one10.val();
            }
            // Starting a frame frees the one before it (its beats have left B).
            if self.iss_i.q.val() == self.zero10.val() {
                self.fp.d.next = self.h_start.val();
            }
        } else if !self.h_valid.val() & !self.b_valid.q.val() {
            // Nothing to read: every decided frame is read or dropped.
            self.fp.d.next = self.dec_end.q.val();
        }
        if self.b_free.val() {
            self.b_valid.d.next = self.h_valid.val();
        }
        // A stalled B re-reads its own address, so its data holds.
        if self.b_load.val() {
            self.buffer.read_address.next = self.iss_addr.val().get_bits::<9>(0);
            self.unused_raddr.next = self.iss_addr.val().get_bit(9);
        } else {
            self.buffer.read_address.next = self.b_addr.q.val().get_bits::<9>(0);
            self.unused_raddr.next = self.b_addr.q.val().get_bit(9);
        }

        // ---- stage C: the header record from beat 0 (here or in `prev`) and beat 1 ----
        if self.b_i.q.val() == self.zero10.val() {
            self.w0.next = self.rd.val();
        } else {
            self.w0.next = self.prev.q.val();
        }
        // Frame bytes 54.. (the extension headers) from lane 0 on.
        self.ext.next = (self.w0.val() >> self.sh_432.val()) | (self.rd.val() << self.sh_80.val());
        self.unused_ext.next = self.ext.val().get_bits::<288>(224);
        if self.consume.val() {
            self.prev.d.next = self.rd.val();
        }
        if self.consume.val() & self.need_hdr.val() {
            self.hv.d.next = true;
            self.r_src_mac.d.next = self.w0.val().get_bits::<48>(48);
            self.r_ip.d.next = self.w0.val().get_bits::<80>(208);
            self.r_bth.d.next = self.w0.val().get_bits::<96>(336);
            self.r_ext.d.next = self.ext.val().get_bits::<224>(0);
            if self.b_layout.q.val() == self.code_reth_imm.val() {
                self.r_imm.d.next = self.ext.val().get_bits::<32>(128);
            } else {
                self.r_imm.d.next = self.ext.val().get_bits::<32>(0);
            }
            self.r_plen.d.next = self.b_plen.q.val();
        } else if self.hdr.ready.val() {
            self.hv.d.next = false;
        }

        // ---- stage C: payload beat j = tail of the previous beat + head of this one ----
        if self.b_layout.q.val() == self.code_four.val() {
            self.realigned.next =
                (self.prev.q.val() >> self.sh_464.val()) | (self.rd.val() << self.sh_48.val());
        } else if self.b_layout.q.val() == self.code_reth.val() {
            self.realigned.next =
                (self.prev.q.val() >> self.sh_48.val()) | (self.rd.val() << self.sh_464.val());
        } else if self.b_layout.q.val() == self.code_reth_imm.val() {
            self.realigned.next =
                (self.prev.q.val() >> self.sh_80.val()) | (self.rd.val() << self.sh_432.val());
        } else {
            self.realigned.next =
                (self.prev.q.val() >> self.sh_432.val()) | (self.rd.val() << self.sh_80.val());
        }
        // Bytes in the last beat: 1 to 64.
        self.rem16.next =
            ((self.b_plen.q.val() - self.one16.val()) & self.lane_mask16.val()) + self.one16.val();
        if self.consume.val() & self.need_pay.val() {
            self.pv.d.next = true;
            self.p_data.d.next = self.realigned.val();
            self.p_last.d.next = self.b_last.q.val();
            if self.b_last.q.val() {
                self.p_keep.d.next = !(self.ones64.val() << self.rem16.val());
            } else {
                self.p_keep.d.next = self.ones64.val();
            }
        } else if self.pay.tready.val() {
            self.pv.d.next = false;
        }

        // ---- outputs ----
        self.pay.tvalid.next = self.pv.q.val();
        self.pay.tdata.next = self.p_data.q.val();
        self.pay.tkeep.next = self.p_keep.q.val();
        self.pay.tlast.next = self.p_last.q.val();

        self.hdr.valid.next = self.hv.q.val();
        self.hdr.opcode.next = self.r_bth.q.val().get_bits::<8>(0);
        self.hdr.solicited.next = self.r_bth.q.val().get_bit(15);
        self.hdr.migreq.next = self.r_bth.q.val().get_bit(14);
        self.hdr.pad.next = self.r_bth.q.val().get_bits::<2>(12);
        self.hdr.fecn.next = self.r_bth.q.val().get_bit(39);
        self.hdr.becn.next = self.r_bth.q.val().get_bit(38);
        self.hdr.ack_req.next = self.r_bth.q.val().get_bit(71);
        // TVer (checked), the reserved bits of bytes 4 and 8.
        self.unused_bth.next = self.r_bth.q.val().get_bits::<17>(8);
        self.sw_pkey.x.next = self.r_bth.q.val().get_bits::<16>(16);
        self.sw_dqp.x.next = self.r_bth.q.val().get_bits::<24>(40);
        self.sw_psn.x.next = self.r_bth.q.val().get_bits::<24>(72);
        self.hdr.pkey.next = self.sw_pkey.y.val();
        self.hdr.dest_qp.next = self.sw_dqp.y.val();
        self.hdr.psn.next = self.sw_psn.y.val();
        self.sw_mac.x.next = self.r_src_mac.q.val();
        self.hdr.src_mac.next = self.sw_mac.y.val();
        self.sw_src_ip.x.next = self.r_ip.q.val().get_bits::<32>(0);
        self.sw_dst_ip.x.next = self.r_ip.q.val().get_bits::<32>(32);
        self.sw_sport.x.next = self.r_ip.q.val().get_bits::<16>(64);
        self.hdr.src_ip.next = self.sw_src_ip.y.val();
        self.hdr.dst_ip.next = self.sw_dst_ip.y.val();
        self.hdr.udp_sport.next = self.sw_sport.y.val();
        self.sw_va.x.next = self.r_ext.q.val().get_bits::<64>(0);
        self.sw_rkey.x.next = self.r_ext.q.val().get_bits::<32>(64);
        self.sw_dma_len.x.next = self.r_ext.q.val().get_bits::<32>(96);
        self.sw_swap.x.next = self.r_ext.q.val().get_bits::<64>(96);
        self.sw_compare.x.next = self.r_ext.q.val().get_bits::<64>(160);
        self.sw_orig.x.next = self.r_ext.q.val().get_bits::<64>(32);
        self.sw_w54.x.next = self.r_ext.q.val().get_bits::<32>(0);
        self.sw_imm.x.next = self.r_imm.q.val();
        self.hdr.reth_va.next = self.sw_va.y.val();
        self.hdr.atomic_va.next = self.sw_va.y.val();
        self.hdr.reth_rkey.next = self.sw_rkey.y.val();
        self.hdr.atomic_rkey.next = self.sw_rkey.y.val();
        self.hdr.reth_dma_len.next = self.sw_dma_len.y.val();
        self.hdr.atomic_swap.next = self.sw_swap.y.val();
        self.hdr.atomic_compare.next = self.sw_compare.y.val();
        self.hdr.atomic_ack_orig.next = self.sw_orig.y.val();
        self.hdr.aeth_syndrome.next = self.sw_w54.y.val().get_bits::<8>(24);
        self.hdr.aeth_msn.next = self.sw_w54.y.val().get_bits::<24>(0);
        self.hdr.ieth.next = self.sw_w54.y.val();
        self.hdr.immdt.next = self.sw_imm.y.val();
        self.hdr.payload_len.next = self.r_plen.q.val();
        self.hdr.has_reth.next = self
            .ops_reth
            .val()
            .get_bit(self.r_bth.q.val().get_bits::<5>(0).index());
        self.hdr.has_aeth.next = self
            .ops_aeth
            .val()
            .get_bit(self.r_bth.q.val().get_bits::<5>(0).index());
        self.hdr.has_atomic_eth.next = self
            .ops_atomic_eth
            .val()
            .get_bit(self.r_bth.q.val().get_bits::<5>(0).index());
        self.hdr.has_atomic_ack_eth.next = self
            .ops_atomic_ack_eth
            .val()
            .get_bit(self.r_bth.q.val().get_bits::<5>(0).index());
        self.hdr.has_immdt.next = self
            .ops_immdt
            .val()
            .get_bit(self.r_bth.q.val().get_bits::<5>(0).index());
        self.hdr.has_ieth.next = self
            .ops_ieth
            .val()
            .get_bit(self.r_bth.q.val().get_bits::<5>(0).index());
        self.hdr.has_payload.next = self
            .ops_payload
            .val()
            .get_bit(self.r_bth.q.val().get_bits::<5>(0).index());

        if self.reset.val() {
            self.wp.d.next = self.zero10.val();
            self.w_in_frame.d.next = false;
            self.w_ovf.d.next = false;
            self.ovf_pipe.d.next = self.zero6.val();
            self.dec_end.d.next = self.zero10.val();
            self.r_frame.d.next = false;
            self.r_mac.d.next = false;
            self.r_malformed.d.next = false;
            self.r_icrc.d.next = false;
            self.r_ipdrop.d.next = false;
            self.r_overflow.d.next = false;
            self.pause.d.next = false;
            self.d_head.d.next = self.zero7.val();
            self.d_tail.d.next = self.zero7.val();
            self.byp.d.next = false;
            self.iss_i.d.next = self.zero10.val();
            self.fp.d.next = self.zero10.val();
            self.b_valid.d.next = false;
            self.hv.d.next = false;
            self.pv.d.next = false;
        }
    }
}

/// The software reference of [`RxFifo`]: what it must do with each frame, from
/// `rocenic_proto::wire::RoceRepr::parse` and the model's use of it (`model/src/nic.rs`).
pub mod model {
    use rocenic_proto::wire::{pad_count, RoceRepr, WireError};

    /// Why a frame was dropped (one counter each).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum Reason {
        Mac,
        Malformed,
        Icrc,
        Ip,
        Overflow,
    }

    /// A header record, with the headers the opcode does not carry as `None`.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct Record {
        pub opcode: u8,
        pub solicited: bool,
        pub migreq: bool,
        pub fecn: bool,
        pub becn: bool,
        pub pad: u8,
        pub pkey: u16,
        pub dest_qp: u32,
        pub ack_req: bool,
        pub psn: u32,
        pub src_mac: [u8; 6],
        pub src_ip: [u8; 4],
        pub dst_ip: [u8; 4],
        pub udp_sport: u16,
        /// (VA, R_Key, DMA length)
        pub reth: Option<(u64, u32, u32)>,
        /// (syndrome, MSN)
        pub aeth: Option<(u8, u32)>,
        /// (VA, R_Key, swap or add, compare)
        pub atomic: Option<(u64, u32, u64, u64)>,
        pub atomic_ack: Option<u64>,
        pub immdt: Option<u32>,
        pub ieth: Option<u32>,
        pub payload_len: usize,
        pub has_payload: bool,
    }

    impl Record {
        /// The record of a parsed frame.
        pub fn from_repr(repr: &RoceRepr, payload_len: usize) -> Record {
            let e = &repr.ext;
            Record {
                opcode: repr.bth.opcode.into(),
                solicited: repr.bth.solicited,
                migreq: repr.bth.migreq,
                fecn: repr.bth.fecn,
                becn: repr.bth.becn,
                pad: pad_count(payload_len),
                pkey: repr.bth.pkey,
                dest_qp: repr.bth.dest_qp,
                ack_req: repr.bth.ack_req,
                psn: repr.bth.psn.into(),
                src_mac: repr.eth.src_addr.0,
                src_ip: repr.ip.src_addr.0,
                dst_ip: repr.ip.dst_addr.0,
                udp_sport: repr.udp_src_port,
                reth: e.reth.map(|r| (r.va, r.rkey, r.dma_len)),
                aeth: e.aeth.map(|a| (u8::from(a.syndrome), a.msn)),
                atomic: e.atomic_eth.map(|a| (a.va, a.rkey, a.swap_add, a.compare)),
                atomic_ack: e.atomic_ack_eth.map(|a| a.orig_remote_data),
                immdt: e.immdt,
                ieth: e.ieth,
                payload_len,
                has_payload: repr.bth.opcode.has_payload(),
            }
        }
    }

    /// What the front end does with one frame as the MAC hands it over.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub enum Fate {
        /// Delivered: its record and payload; counted with its length.
        Accept(Record, Vec<u8>),
        Drop(Reason),
        /// Dropped uncounted (the port is disabled).
        Ignored,
    }

    /// The fate of `frame` (with the MAC's error flag `tuser`) at a port with address
    /// `local_ip` (0: any) that is `enabled`, given room in the buffer. As the model: a
    /// disabled port ignores frames; a frame that fails `RoceRepr::parse` is an ICRC drop if
    /// the ICRC is the failed check, else malformed; a parsed frame for another IPv4 address
    /// is an unknown-QP drop. The MAC error comes first (the model never sees such frames).
    pub fn fate(frame: &[u8], tuser: bool, local_ip: u32, enabled: bool) -> Fate {
        if !enabled {
            return Fate::Ignored;
        }
        if tuser {
            return Fate::Drop(Reason::Mac);
        }
        match RoceRepr::parse(frame) {
            Err(WireError::BadIcrc { .. }) => Fate::Drop(Reason::Icrc),
            Err(_) => Fate::Drop(Reason::Malformed),
            Ok((repr, payload)) => {
                if local_ip != 0 && u32::from_be_bytes(repr.ip.dst_addr.0) != local_ip {
                    Fate::Drop(Reason::Ip)
                } else {
                    Fate::Accept(Record::from_repr(&repr, payload.len()), payload.to_vec())
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{HashMap, VecDeque};

    use rocenic_proto::wire::Opcode;

    use super::model::{fate, Fate, Reason, Record};
    use super::*;
    use crate::bench::{
        frame_beats, random_payload_len, random_roce_frame, Beat, Bench, Pattern, Rng,
    };
    use crate::rx::rx_parser::frames::{damaged, good, Input, IP_AT};

    /// How a run is driven besides the pattern.
    #[derive(Clone, Copy, Debug)]
    struct Cfg {
        local_ip: u32,
        /// The `enable` input throughout the run.
        enabled: bool,
        /// The consumer takes nothing before this cycle.
        stall_until: u64,
        /// Assert reset for one cycle, with this beat (counted from 1) on the bus.
        reset_at_beat: Option<usize>,
        /// The MAC obeys `m_pause`: it starts no frame while it is high.
        obey_pause: bool,
    }

    const CFG: Cfg = Cfg {
        local_ip: 0,
        enabled: true,
        stall_until: 0,
        reset_at_beat: None,
        obey_pause: false,
    };

    #[derive(Debug, Default)]
    struct Out {
        records: Vec<Record>,
        payloads: Vec<Vec<u8>>,
        counts: HashMap<Reason, usize>,
        rx_frames: usize,
        rx_bytes: u64,
        /// Cycle of each record transfer.
        record_at: Vec<u64>,
        /// Cycles `m_pause` was high.
        paused: u64,
    }

    fn bit_u64<const N: usize>(b: Bits<N>) -> u64 {
        b.to_u64()
    }

    fn read_record(u: &RxFifo) -> Record {
        let mac = bit_u64(u.hdr.src_mac.val()).to_be_bytes();
        Record {
            opcode: bit_u64(u.hdr.opcode.val()) as u8,
            solicited: u.hdr.solicited.val(),
            migreq: u.hdr.migreq.val(),
            fecn: u.hdr.fecn.val(),
            becn: u.hdr.becn.val(),
            pad: bit_u64(u.hdr.pad.val()) as u8,
            pkey: bit_u64(u.hdr.pkey.val()) as u16,
            dest_qp: bit_u64(u.hdr.dest_qp.val()) as u32,
            ack_req: u.hdr.ack_req.val(),
            psn: bit_u64(u.hdr.psn.val()) as u32,
            src_mac: mac[2..].try_into().expect("6"),
            src_ip: (bit_u64(u.hdr.src_ip.val()) as u32).to_be_bytes(),
            dst_ip: (bit_u64(u.hdr.dst_ip.val()) as u32).to_be_bytes(),
            udp_sport: bit_u64(u.hdr.udp_sport.val()) as u16,
            reth: u.hdr.has_reth.val().then(|| {
                (
                    bit_u64(u.hdr.reth_va.val()),
                    bit_u64(u.hdr.reth_rkey.val()) as u32,
                    bit_u64(u.hdr.reth_dma_len.val()) as u32,
                )
            }),
            aeth: u.hdr.has_aeth.val().then(|| {
                (
                    bit_u64(u.hdr.aeth_syndrome.val()) as u8,
                    bit_u64(u.hdr.aeth_msn.val()) as u32,
                )
            }),
            atomic: u.hdr.has_atomic_eth.val().then(|| {
                (
                    bit_u64(u.hdr.atomic_va.val()),
                    bit_u64(u.hdr.atomic_rkey.val()) as u32,
                    bit_u64(u.hdr.atomic_swap.val()),
                    bit_u64(u.hdr.atomic_compare.val()),
                )
            }),
            atomic_ack: u
                .hdr
                .has_atomic_ack_eth
                .val()
                .then(|| bit_u64(u.hdr.atomic_ack_orig.val())),
            immdt: u
                .hdr
                .has_immdt
                .val()
                .then(|| bit_u64(u.hdr.immdt.val()) as u32),
            ieth: u
                .hdr
                .has_ieth
                .val()
                .then(|| bit_u64(u.hdr.ieth.val()) as u32),
            payload_len: bit_u64(u.hdr.payload_len.val()) as usize,
            has_payload: u.hdr.has_payload.val(),
        }
    }

    /// Streams `inputs` (gaps between beats per `pattern.valid_pct`; the MAC never waits)
    /// into a front end whose consumer takes records and beats per `pattern.ready_pct`, until
    /// every frame has its verdict and everything accepted has come out.
    fn run(inputs: &[Input], pattern: Pattern, seed: u64, cfg: Cfg) -> Out {
        let mut rng = Rng::new(seed);
        let mut bench = Bench::new(RxFifo::new(), |u| &mut u.clock);
        bench.uut.enable.next = cfg.enabled;
        bench.uut.local_ip.next = u64::from(cfg.local_ip).into();
        bench.uut.reset.next = true;
        bench.tick();
        bench.tick();
        bench.uut.reset.next = false;
        let mut beats: VecDeque<(Beat, bool)> = inputs
            .iter()
            .flat_map(|i| {
                let tuser = i.tuser;
                frame_beats(&i.frame, || 0xA5)
                    .into_iter()
                    .map(move |b| (b, tuser))
            })
            .collect();
        let total_beats = beats.len();
        let mut out = Out::default();
        let mut payload: Vec<u8> = vec![];
        let mut quiet = 0;
        let mut sent = 0;
        let mut in_frame = false;
        let limit = 2000 + 40 * total_beats as u64 * (100 / u64::from(pattern.ready_pct.max(1)));
        loop {
            assert!(
                bench.cycle() < limit + cfg.stall_until,
                "no progress by cycle {} (seed {seed})",
                bench.cycle()
            );
            let open = bench.cycle() >= cfg.stall_until;
            let u = &mut bench.uut;
            let paused = u.m_pause.val();
            out.paused += u64::from(paused);
            let held = cfg.obey_pause && paused && !in_frame;
            let send = !beats.is_empty() && !held && rng.percent(pattern.valid_pct);
            if send {
                let (beat, tuser) = beats.pop_front().expect("beat");
                in_frame = !beat.last;
                u.s_axis_tdata.next = beat.tdata();
                u.s_axis_tkeep.next = beat.tkeep();
                u.s_axis_tlast.next = beat.last;
                u.s_axis_tuser.next = tuser && beat.last;
                sent += 1;
            } else {
                // Garbage on an idle bus must not matter.
                u.s_axis_tlast.next = rng.percent(50);
                u.s_axis_tuser.next = rng.percent(50);
            }
            u.s_axis_tvalid.next = send;
            u.hdr.ready.next = open && rng.percent(pattern.ready_pct);
            u.pay.tready.next = open && rng.percent(pattern.ready_pct);
            let resetting = send && cfg.reset_at_beat == Some(sent);
            u.reset.next = resetting;
            bench.settle();
            let u = &bench.uut;
            // Quiet means nothing offered and nothing decided, whatever the consumer does.
            let mut active = send || u.hdr.valid.val() || u.pay.tvalid.val();
            if resetting {
                // The consumer is reset too: a payload it was taking is abandoned.
                payload.clear();
            } else if u.hdr.valid.val() && u.hdr.ready.val() {
                out.records.push(read_record(u));
                out.record_at.push(bench.cycle());
                active = true;
            }
            if !resetting && u.pay.tvalid.val() && u.pay.tready.val() {
                let keep = bit_u64(u.pay.tkeep.val());
                let data = u.pay.tdata.val();
                for lane in 0..BEAT_BYTES {
                    if keep >> lane & 1 == 1 {
                        payload.push(data.get_bits::<8>(8 * lane).to_u64() as u8);
                    }
                }
                if u.pay.tlast.val() {
                    out.payloads.push(std::mem::take(&mut payload));
                } else {
                    assert_eq!(keep, u64::MAX, "partial beat before tlast (seed {seed})");
                }
                active = true;
            }
            for (pulse, reason) in [
                (u.m_drop_mac.val(), Reason::Mac),
                (u.m_drop_malformed.val(), Reason::Malformed),
                (u.m_drop_icrc.val(), Reason::Icrc),
                (u.m_drop_ip.val(), Reason::Ip),
                (u.m_drop_overflow.val(), Reason::Overflow),
            ] {
                if pulse {
                    *out.counts.entry(reason).or_default() += 1;
                    active = true;
                }
            }
            let pulses = [
                u.m_rx_frame.val(),
                u.m_drop_mac.val(),
                u.m_drop_malformed.val(),
                u.m_drop_icrc.val(),
                u.m_drop_ip.val(),
                u.m_drop_overflow.val(),
            ];
            assert!(
                pulses.iter().filter(|&&p| p).count() <= 1,
                "one verdict pulse at a time"
            );
            if u.m_rx_frame.val() {
                out.rx_frames += 1;
                out.rx_bytes += bit_u64(u.m_rx_bytes.val());
                active = true;
            }
            bench.tick();
            quiet = if active || !beats.is_empty() {
                0
            } else {
                quiet + 1
            };
            // The verdict takes 8 cycles and a stalled consumer may hold things longer.
            if quiet > 60 && sent == total_beats && bench.cycle() > cfg.stall_until + 60 {
                break;
            }
        }
        assert!(
            payload.is_empty(),
            "payload left without tlast (seed {seed})"
        );
        out
    }

    /// What `inputs` must give with room to spare.
    fn expected(inputs: &[Input], local_ip: u32) -> Vec<Fate> {
        inputs
            .iter()
            .map(|i| fate(&i.frame, i.tuser, local_ip, true))
            .collect()
    }

    /// Checks a run without overflow against the reference, frame for frame.
    fn check_exact(inputs: &[Input], out: &Out, local_ip: u32, what: &str) {
        let fates = expected(inputs, local_ip);
        let accepted: Vec<(&Record, &Vec<u8>, usize)> = fates
            .iter()
            .zip(inputs)
            .filter_map(|(f, i)| match f {
                Fate::Accept(r, p) => Some((r, p, i.frame.len())),
                _ => None,
            })
            .collect();
        assert_eq!(
            out.records.len(),
            accepted.len(),
            "{what}: records delivered"
        );
        for (k, (got, (want, _, _))) in out.records.iter().zip(&accepted).enumerate() {
            assert_eq!(got, *want, "{what}: record {k}");
        }
        let want_payloads: Vec<&Vec<u8>> = accepted
            .iter()
            .filter(|(_, p, _)| !p.is_empty())
            .map(|(_, p, _)| *p)
            .collect();
        assert_eq!(out.payloads.len(), want_payloads.len(), "{what}: payloads");
        for (k, (got, want)) in out.payloads.iter().zip(&want_payloads).enumerate() {
            assert!(
                got == *want,
                "{what}: payload {k}: {} bytes, want {}",
                got.len(),
                want.len()
            );
        }
        let mut want_counts: HashMap<Reason, usize> = HashMap::new();
        for f in &fates {
            if let Fate::Drop(r) = f {
                *want_counts.entry(*r).or_default() += 1;
            }
        }
        assert_eq!(out.counts, want_counts, "{what}: drop counts");
        assert_eq!(out.rx_frames, accepted.len(), "{what}: rx frames");
        let bytes: u64 = accepted.iter().map(|(_, _, n)| *n as u64).sum();
        assert_eq!(out.rx_bytes, bytes, "{what}: rx bytes");
    }

    #[test]
    fn every_opcode_and_payload_size_under_every_pattern() {
        let ops: Vec<Opcode> = Opcode::all().collect();
        for (k, pattern) in Pattern::SWEEP.into_iter().enumerate() {
            let seed = 100 + k as u64;
            let mut rng = Rng::new(seed);
            let mut inputs: Vec<Input> = ops
                .iter()
                .map(|&op| {
                    let len = rng.below(150) as usize;
                    good(&mut rng, op, len)
                })
                .collect();
            // A 4 KiB PMTU one and past it, and some random long ones.
            inputs.push(good(&mut rng, Opcode::RdmaWriteOnly, 4096 + k));
            for _ in 0..3 {
                let op = ops[rng.below(ops.len() as u64) as usize];
                let len = random_payload_len(&mut rng);
                inputs.push(good(&mut rng, op, len));
            }
            let out = run(&inputs, pattern, seed, CFG);
            check_exact(&inputs, &out, 0, &format!("{pattern:?} seed {seed}"));
        }
    }

    #[test]
    fn payload_lengths_cover_every_tail_and_rotation() {
        // Every payload-carrying layout with 0..=130 bytes: every last-beat size and pad.
        let mut rng = Rng::new(7);
        let ops = [
            Opcode::SendOnly,
            Opcode::SendOnlyWithImmediate,
            Opcode::RdmaWriteOnly,
            Opcode::RdmaWriteOnlyWithImmediate,
        ];
        let inputs: Vec<Input> = (0..=130)
            .map(|len| good(&mut rng, ops[len % 4], len))
            .collect();
        let out = run(&inputs, Pattern::SWEEP[0], 7, CFG);
        check_exact(&inputs, &out, 0, "lengths");
    }

    #[test]
    fn damaged_frames_are_dropped_and_counted_by_reason() {
        let mut rng = Rng::new(11);
        let mut inputs = damaged(&mut rng);
        // Good frames in between, so drops are seen to leave their neighbours intact.
        let n = inputs.len();
        for i in 0..n {
            let len = rng.below(90) as usize;
            inputs.insert(2 * i, good(&mut rng, Opcode::SendOnly, len));
        }
        let fates = expected(&inputs, 0);
        for reason in [Reason::Mac, Reason::Malformed, Reason::Icrc] {
            assert!(
                fates.contains(&Fate::Drop(reason)),
                "the damaged frames include a {reason:?} drop"
            );
        }
        for (k, pattern) in [Pattern::SWEEP[0], Pattern::SWEEP[3]]
            .into_iter()
            .enumerate()
        {
            let out = run(&inputs, pattern, 11 + k as u64, CFG);
            check_exact(&inputs, &out, 0, &format!("damaged {pattern:?}"));
        }
    }

    #[test]
    fn frames_for_another_address_are_dropped_as_unknown() {
        let mut rng = Rng::new(12);
        let inputs: Vec<Input> = (0..12)
            .map(|i| good(&mut rng, Opcode::Acknowledge, i))
            .collect();
        let mine = u32::from_be_bytes(
            inputs[3].frame[IP_AT + 16..IP_AT + 20]
                .try_into()
                .expect("4"),
        );
        let cfg = Cfg {
            local_ip: mine,
            ..CFG
        };
        let out = run(&inputs, Pattern::SWEEP[0], 12, cfg);
        check_exact(&inputs, &out, mine, "local ip");
        assert_eq!(out.records.len(), 1);
        assert_eq!(out.counts[&Reason::Ip], 11);
    }

    #[test]
    fn back_to_back_acks_at_full_rate_are_all_delivered() {
        let mut rng = Rng::new(13);
        let inputs: Vec<Input> = (0..80)
            .map(|_| Input {
                frame: random_roce_frame(&mut rng, Opcode::Acknowledge, 0),
                tuser: false,
            })
            .collect();
        assert!(inputs.iter().all(|i| i.frame.len() <= BEAT_BYTES));
        let out = run(&inputs, Pattern::SWEEP[0], 13, CFG);
        check_exact(&inputs, &out, 0, "acks");
        // One record per cycle once the first is out: the reader keeps up.
        let first = out.record_at[0];
        assert_eq!(*out.record_at.last().expect("records"), first + 79);
    }

    #[test]
    fn overflow_under_a_stalled_consumer_drops_whole_frames() {
        let mut rng = Rng::new(14);
        // 12 frames of 4 KiB (65 beats each): the 512-beat buffer holds 7.
        let mut inputs: Vec<Input> = (0..12)
            .map(|_| good(&mut rng, Opcode::RdmaWriteMiddle, 4096))
            .collect();
        // Then many ACKs: the 64-entry descriptor queue fills too.
        inputs.extend((0..70).map(|_| good(&mut rng, Opcode::Acknowledge, 0)));
        let beats: usize = inputs.iter().map(|i| i.frame.len().div_ceil(64)).sum();
        let cfg = Cfg {
            stall_until: beats as u64 + 50,
            ..CFG
        };
        let out = run(&inputs, Pattern::SWEEP[0], 14, cfg);
        let fates = expected(&inputs, 0);
        let accepted: Vec<(&Record, &Vec<u8>)> = fates
            .iter()
            .filter_map(|f| match f {
                Fate::Accept(r, p) => Some((r, p)),
                _ => None,
            })
            .collect();
        assert_eq!(accepted.len(), inputs.len());
        let dropped = out.counts.get(&Reason::Overflow).copied().unwrap_or(0);
        assert!(dropped >= 5, "frames overflowed: {dropped}");
        assert_eq!(out.records.len() + dropped, inputs.len());
        assert_eq!(out.rx_frames, out.records.len());
        // What came out is a subsequence of what went in, each payload whole.
        let mut pay = out.payloads.iter();
        let mut want = accepted.iter();
        for (k, got) in out.records.iter().enumerate() {
            let (_, p) = want
                .by_ref()
                .find(|(r, _)| *r == got)
                .unwrap_or_else(|| panic!("record {k} out of order or wrong: {got:?}"));
            if !p.is_empty() {
                assert!(pay.next() == Some(*p), "payload of record {k}");
            }
        }
        assert!(pay.next().is_none());
        // The 4 KiB frames that fitted came out: the buffer held at least 7.
        let big = out.records.iter().filter(|r| r.payload_len == 4096).count();
        assert!(big >= 7, "4 KiB frames delivered: {big}");
    }

    #[test]
    fn a_mac_that_obeys_pause_loses_nothing_to_a_slow_consumer() {
        // As the overflow test, with the consumer slow instead of stalled, and 4 KiB
        // frames mixed with runs of ACKs (the descriptor threshold) and short SENDs.
        let mut rng = Rng::new(18);
        let mut inputs: Vec<Input> = vec![];
        for i in 0..40 {
            inputs.push(good(&mut rng, Opcode::RdmaWriteMiddle, 4096));
            let acks = if i % 5 == 0 { 40 } else { 2 };
            inputs.extend((0..acks).map(|_| good(&mut rng, Opcode::Acknowledge, 0)));
            inputs.push(good(&mut rng, Opcode::SendOnly, 1 + 37 * i));
        }
        let slow = Pattern {
            valid_pct: 100,
            ready_pct: 15,
        };
        for (obey, what) in [(true, "obeying"), (false, "deaf")] {
            let cfg = Cfg {
                stall_until: 400,
                obey_pause: obey,
                ..CFG
            };
            let out = run(&inputs, slow, 18, cfg);
            assert!(out.paused > 0, "{what}: the buffer never asked for a pause");
            if obey {
                check_exact(&inputs, &out, 0, what);
            } else {
                // The same traffic from a MAC that ignores the request overflows.
                assert!(out.counts.get(&Reason::Overflow).is_some_and(|&n| n > 0));
            }
        }
    }

    #[test]
    fn descriptor_queue_full_drops_and_counts() {
        // 80 ACKs under a stalled consumer: 80 beats fit the buffer, but only 64 frames
        // fit the descriptor queue, plus one in the read stage and one in the record
        // register.
        let mut rng = Rng::new(16);
        let inputs: Vec<Input> = (0..80)
            .map(|_| good(&mut rng, Opcode::Acknowledge, 0))
            .collect();
        let cfg = Cfg {
            stall_until: 200,
            ..CFG
        };
        let out = run(&inputs, Pattern::SWEEP[0], 16, cfg);
        assert_eq!(out.records.len(), DESC_FRAMES + 2);
        assert_eq!(out.counts[&Reason::Overflow], 80 - DESC_FRAMES - 2);
        let fates = expected(&inputs, 0);
        for (k, r) in out.records.iter().enumerate() {
            assert!(
                matches!(&fates[k], Fate::Accept(want, _) if want == r),
                "record {k}"
            );
        }
    }

    #[test]
    fn a_disabled_port_drops_everything_uncounted() {
        let mut rng = Rng::new(17);
        let mut inputs: Vec<Input> = (0..6)
            .map(|i| good(&mut rng, Opcode::SendOnly, 50 * i))
            .collect();
        inputs.extend(damaged(&mut rng).into_iter().take(6));
        let cfg = Cfg {
            enabled: false,
            ..CFG
        };
        let out = run(&inputs, Pattern::SWEEP[0], 17, cfg);
        assert!(out.records.is_empty() && out.payloads.is_empty());
        assert!(out.counts.is_empty(), "{:?}", out.counts);
        assert_eq!(out.rx_frames, 0);
    }

    #[test]
    fn reset_in_the_middle_of_a_frame_loses_only_that_frame() {
        let mut rng = Rng::new(15);
        let first: Vec<Input> = (0..3)
            .map(|i| good(&mut rng, Opcode::SendOnly, 200 + i))
            .collect();
        let beats_first: usize = first.iter().map(|i| i.frame.len().div_ceil(64)).sum();
        // The fourth frame is cut by a reset on its second (last) beat; the MAC goes on
        // with the frames after it.
        let cut = good(&mut rng, Opcode::RdmaWriteOnly, 300);
        let after: Vec<Input> = (0..4)
            .map(|i| good(&mut rng, Opcode::SendOnlyWithImmediate, 64 * i + 5))
            .collect();
        let mut inputs = first.clone();
        inputs.push(Input {
            frame: cut.frame[..128].to_vec(),
            tuser: false,
        });
        inputs.extend(after.iter().cloned());
        let cfg = Cfg {
            reset_at_beat: Some(beats_first + 2),
            ..CFG
        };
        let out = run(&inputs, Pattern::SWEEP[0], 15, cfg);
        // Whatever of the first frames was out before the reset is intact; the frames
        // after the reset all come out, checked exactly.
        let tail = out.records.len() - after.len();
        let tail_out = Out {
            records: out.records[tail..].to_vec(),
            payloads: out.payloads[out.payloads.len() - after.len()..].to_vec(),
            counts: HashMap::new(),
            rx_frames: after.len(),
            rx_bytes: after.iter().map(|i| i.frame.len() as u64).sum(),
            record_at: vec![],
            paused: 0,
        };
        check_exact(&after, &tail_out, 0, "after reset");
        for (k, r) in out.records[..tail].iter().enumerate() {
            let f = fate(&first[k].frame, false, 0, true);
            assert!(
                matches!(f, Fate::Accept(ref want, _) if want == r),
                "record {k} before the reset"
            );
        }
    }
}
