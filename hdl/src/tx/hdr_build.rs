//! `HdrBuild`: the TX frame builder. Turns "send this packet" records plus their payload
//! streams into complete RoCE v2 frames on the MAC TX stream, byte for byte what the model
//! sends (`model::packet::build`, i.e. `RoceRepr::emit` with the model's fixed fields),
//! ICRC included, one beat per cycle and without bubbles between back-to-back frames.
//!
//! # Interface
//!
//! ```text
//!  s_pkt (record) --> R1 --> R2 (header bytes) --+
//!   lengths, addr sum   IPv4 checksum            |   assembler: header lanes, payload
//!                                                +-> shifted behind them, zero pad/ICRC
//!  pay (payload) --------------------------------+        |
//!                                                   +-----+------------------+
//!                                                   |                        |
//!                                             Icrc (Generate)        delay line S0..S7
//!                                                   |  result FIFO           |
//!                                                   +-----> CrcInsert <------+--> m_axis
//! ```
//!
//! - `s_pkt_*` (valid/ready): one record per frame. Addressing from the QP context:
//!   `dst_mac`, `src_mac` (48, wire order: the first byte is bits 47:40), `src_ip`,
//!   `dst_ip` (32, first byte in 31:24), `udp_sport` (16). BTH: `opcode` (8, a known RC
//!   opcode; the extension headers sent are the opcode's), `se`, `ack_req` (1), `dest_qp`,
//!   `psn` (24). Extension headers (only those of the opcode are sent): `va` (64) and
//!   `rkey` (32) for RETH and AtomicETH, `dma_len` (32, RETH), `swap_add`, `compare` (64,
//!   AtomicETH), `orig` (64, AtomicAckETH), `syndrome` (8), `msn` (24) for AETH, `imm`
//!   (32: ImmDt, or the R_Key of an IETH). `payload_len` (16): payload bytes; a payload
//!   stream follows exactly when it is not 0 (header + payload + pad + ICRC at most 65535
//!   bytes; the engine sends at most a 4096-byte PMTU). `src_qp` (24): the sending (local)
//!   QP, not sent; it travels with the frame to `tx_cnt.qpn`.
//! - Fixed fields, as the model sends them: IPv4 TOS 0, ident 0, DF, TTL 64, checksum
//!   computed; UDP destination 4791, checksum 0; BTH M = 0, TVer 0, P_Key 0xFFFF,
//!   FECN/BECN 0; pad count derived from the payload length, pad bytes zero.
//! - `pay` (a `PayloadServer`): the payload of the records with `payload_len > 0`, in record
//!   order, lane-0 aligned, `ceil(payload_len / 64)` beats each, bubbles allowed. Lanes past
//!   the payload length in the last beat are ignored (so there is no `tkeep`); `tlast` is
//!   only checked: a `tlast` on the wrong beat pulses `m_err_payload` (the beats are still
//!   counted from the record's length).
//! - `m_axis_*`: the frames (512-bit, byte 0 in lane 0, `tkeep` all ones but on the last
//!   beat). `tx_cnt.frame` pulses with a frame's last transfer, `tx_cnt.bytes` is then its
//!   length and `tx_cnt.qpn` its record's `src_qp` (Counter::TxFrames, TxBytes, globally
//!   and per QP). `m_err_icrc`: the ICRC engine disagreed with a
//!   frame's length (never, unless this block is broken; benches assert it stays low).
//! - Throughput: one beat per cycle; a zero-payload frame (an ACK) every cycle. Latency: a
//!   record's first beat leaves 10 cycles after the record is taken (2 record stages, the
//!   8-stage delay line), when nothing stalls.
//!
//! # How
//!
//! - R1 takes the record: layout from the opcode ([`OpDecode`]), frame length, the sum of
//!   the IPv4 addresses. R2 gets the IPv4 checksum (ones' complement, two 16-bit additions
//!   per stage) and the header bytes ([`HdrBytes`], up to 82 bytes in two beats).
//! - The assembler emits beat `k` of the frame from R2's header, the payload beat being
//!   taken and the previous one (kept in `prev`): a byte rotation by one of four amounts
//!   (header lengths 54, 58, 70, 74 put the payload at lane 54, 58, 6 or 10; [`BeatMerge`]),
//!   lanes past the payload zero (pad and ICRC placeholder). The frame is at its final
//!   length, as the ICRC engine wants.
//! - The beat goes at once into the ICRC engine (Generate, always ready) and into an
//!   8-stage delay line. A stage moves when the one after it is empty or moving, so the
//!   line never stalls the assembler while it has room. The ICRC (6 cycles after the last
//!   beat, plus a register) goes into a result FIFO (8 entries: at most one per frame
//!   whose last beat is in the line). At the line's end [`CrcInsert`] writes it into its
//!   lanes; when the ICRC straddles two beats (a frame ending in lanes 0-1 of a beat) the
//!   second-last beat waits for it too, and since the line collapses bubbles the last beat
//!   can still come in. With 8 stages the result is there in time at full rate.
//! - The ICRC lanes: every header length is 2 mod 4 and payload plus pad a whole number of
//!   words, so the ICRC starts at lane 4i+2: each lane can only take one ICRC byte, and
//!   the insertion is a 2:1 multiplexer per lane.

use crate::bus::cnt::TxCntClient;
use crate::bus::record::PayloadServer;
use crate::prelude::*;

use crate::common::icrc::{Icrc, IcrcMode, BEAT_BYTES, DATA_BITS};
use crate::tx::tx_leaves::{
    check_layout_facts, BeatMerge, CrcInsert, HdrBytes, OpDecode, CUR_LANES, HDR_BYTES,
    IP_FLAGS_DF, IP_TOS, IP_TTL, PREV_FROM,
};

/// Stages of the delay line beside the ICRC engine (its 6-cycle latency, the result
/// register, and one more beat for an ICRC that straddles two beats).
pub const DELAY_STAGES: usize = 8;
/// Bits of the current payload beat the merge reads, and of the kept previous beat.
const CUR_BITS: usize = 8 * CUR_LANES;
const PREV_BITS: usize = 8 * (BEAT_BYTES - PREV_FROM);

/// Ones' complement 16-bit sum of the constant IPv4 header words (version/IHL/TOS, ident,
/// flags, TTL/protocol).
pub fn ip_const_sum() -> u16 {
    let words = [
        0x4500 | u16::from(IP_TOS),
        0,
        IP_FLAGS_DF,
        (u16::from(IP_TTL) << 8) | 17,
    ];
    words.iter().fold(0u16, |a, &w| {
        let (s, c) = a.overflowing_add(w);
        s + u16::from(c)
    })
}

/// The TX frame builder; see the [module docs](self).
#[derive(LogicBlock)]
pub struct HdrBuild {
    pub clock: Signal<In, Clock>,
    /// Synchronous reset, active high: drops records, the frame in flight and the line.
    pub reset: Signal<In, Bit>,

    // --- packet records ---
    pub s_pkt_valid: Signal<In, Bit>,
    pub s_pkt_ready: Signal<Out, Bit>,
    pub s_pkt_dst_mac: Signal<In, Bits<48>>,
    pub s_pkt_src_mac: Signal<In, Bits<48>>,
    pub s_pkt_src_ip: Signal<In, Bits<32>>,
    pub s_pkt_dst_ip: Signal<In, Bits<32>>,
    pub s_pkt_udp_sport: Signal<In, Bits<16>>,
    pub s_pkt_opcode: Signal<In, Bits<8>>,
    pub s_pkt_se: Signal<In, Bit>,
    pub s_pkt_ack_req: Signal<In, Bit>,
    pub s_pkt_dest_qp: Signal<In, Bits<24>>,
    pub s_pkt_psn: Signal<In, Bits<24>>,
    pub s_pkt_va: Signal<In, Bits<64>>,
    pub s_pkt_rkey: Signal<In, Bits<32>>,
    pub s_pkt_dma_len: Signal<In, Bits<32>>,
    pub s_pkt_swap_add: Signal<In, Bits<64>>,
    pub s_pkt_compare: Signal<In, Bits<64>>,
    pub s_pkt_orig: Signal<In, Bits<64>>,
    pub s_pkt_syndrome: Signal<In, Bits<8>>,
    pub s_pkt_msn: Signal<In, Bits<24>>,
    pub s_pkt_imm: Signal<In, Bits<32>>,
    pub s_pkt_payload_len: Signal<In, Bits<16>>,
    /// The sending (local) QP: not sent, reported with the frame on `tx_cnt.qpn`.
    pub s_pkt_src_qp: Signal<In, Bits<24>>,

    // --- payload stream ---
    pub pay: PayloadServer,

    // --- MAC TX ---
    pub m_axis_tdata: Signal<Out, Bits<DATA_BITS>>,
    pub m_axis_tkeep: Signal<Out, Bits<BEAT_BYTES>>,
    pub m_axis_tlast: Signal<Out, Bit>,
    pub m_axis_tvalid: Signal<Out, Bit>,
    pub m_axis_tready: Signal<In, Bit>,

    // --- counters and errors ---
    /// Pulses with the last transfer of a frame.
    pub tx_cnt: TxCntClient,
    /// A payload `tlast` on the wrong beat (pulse).
    pub m_err_payload: Signal<Out, Bit>,
    /// The ICRC engine reported a length error (pulse; never for frames built here).
    pub m_err_icrc: Signal<Out, Bit>,

    // --- constants ---
    c0_16: Constant<Bits<16>>,
    c3_16: Constant<Bits<16>>,
    c4_16: Constant<Bits<16>>,
    c14_16: Constant<Bits<16>>,
    c34_16: Constant<Bits<16>>,
    c63_16: Constant<Bits<16>>,
    c64_16: Constant<Bits<16>>,
    c68_16: Constant<Bits<16>>,
    c1_16: Constant<Bits<16>>,
    c6_16: Constant<Bits<16>>,
    not3_16: Constant<Bits<16>>,
    ip_sum: Constant<Bits<16>>,
    c0_7: Constant<Bits<7>>,
    c4_7: Constant<Bits<7>>,
    c64_7: Constant<Bits<7>>,
    c0_8: Constant<Bits<8>>,
    c3_8: Constant<Bits<8>>,
    c4_8: Constant<Bits<8>>,
    c80_8: Constant<Bits<8>>,
    ones64: Constant<Bits<BEAT_BYTES>>,
    fc: [Constant<Bits<4>>; 9],

    // --- R1: the record, lengths, address sum ---
    load_r1: Signal<Local, Bit>,
    decode: OpDecode,
    ppad: Signal<Local, Bits<16>>,
    p63: Signal<Local, Bits<16>>,
    flen_in: Signal<Local, Bits<16>>,
    pad8: Signal<Local, Bits<8>>,
    sa_s: Signal<Local, Bits<16>>,
    sa: Signal<Local, Bits<16>>,
    sb_s: Signal<Local, Bits<16>>,
    sb: Signal<Local, Bits<16>>,
    sc_s: Signal<Local, Bits<16>>,
    sc: Signal<Local, Bits<16>>,
    v1: DFF<Bit>,
    r1_dst_mac: DFF<Bits<48>>,
    r1_src_mac: DFF<Bits<48>>,
    r1_src_ip: DFF<Bits<32>>,
    r1_dst_ip: DFF<Bits<32>>,
    r1_udp_sport: DFF<Bits<16>>,
    r1_opcode: DFF<Bits<8>>,
    r1_flags: DFF<Bits<8>>,
    r1_ack: DFF<Bits<8>>,
    r1_dest_qp: DFF<Bits<24>>,
    r1_psn: DFF<Bits<24>>,
    r1_va: DFF<Bits<64>>,
    r1_rkey: DFF<Bits<32>>,
    r1_dma_len: DFF<Bits<32>>,
    r1_swap_add: DFF<Bits<64>>,
    r1_compare: DFF<Bits<64>>,
    r1_orig: DFF<Bits<64>>,
    r1_syndrome: DFF<Bits<8>>,
    r1_msn: DFF<Bits<24>>,
    r1_imm: DFF<Bits<32>>,
    r1_layout: DFF<Bits<3>>,
    r1_shift: DFF<Bits<2>>,
    r1_big: DFF<Bit>,
    r1_nh0: DFF<Bits<7>>,
    r1_nh1: DFF<Bits<7>>,
    r1_flen: DFF<Bits<16>>,
    r1_dend: DFF<Bits<16>>,
    r1_np: DFF<Bits<16>>,
    r1_total: DFF<Bits<16>>,
    r1_udp_len: DFF<Bits<16>>,
    r1_asum: DFF<Bits<16>>,
    r1_src_qp: DFF<Bits<24>>,

    // --- R2: header bytes and the frame's counts ---
    load_r2: Signal<Local, Bit>,
    t1_s: Signal<Local, Bits<16>>,
    t1: Signal<Local, Bits<16>>,
    t2_s: Signal<Local, Bits<16>>,
    t2: Signal<Local, Bits<16>>,
    hdr_bytes: HdrBytes,
    v2: DFF<Bit>,
    r2_hdr: DFF<Bits<{ 8 * HDR_BYTES }>>,
    r2_shift: DFF<Bits<2>>,
    r2_big: DFF<Bit>,
    r2_nh0: DFF<Bits<7>>,
    r2_nh1: DFF<Bits<7>>,
    r2_flen: DFF<Bits<16>>,
    r2_dend: DFF<Bits<16>>,
    r2_np: DFF<Bits<16>>,
    r2_src_qp: DFF<Bits<24>>,

    // --- assembler ---
    first: Signal<Local, Bit>,
    fleft_now: Signal<Local, Bits<16>>,
    dleft_now: Signal<Local, Bits<16>>,
    pleft_now: Signal<Local, Bits<16>>,
    n_hdr: Signal<Local, Bits<7>>,
    n_data: Signal<Local, Bits<7>>,
    need_pay: Signal<Local, Bit>,
    emit: Signal<Local, Bit>,
    last_now: Signal<Local, Bit>,
    straddle: Signal<Local, Bit>,
    lo_now: Signal<Local, Bits<7>>,
    hi_now: Signal<Local, Bits<7>>,
    keep_now: Signal<Local, Bits<BEAT_BYTES>>,
    merge: BeatMerge,
    in_frame: DFF<Bit>,
    at1: DFF<Bit>,
    fleft: DFF<Bits<16>>,
    dleft: DFF<Bits<16>>,
    pleft: DFF<Bits<16>>,
    prev: DFF<Bits<PREV_BITS>>,
    err_pay: DFF<Bit>,

    // --- ICRC and its results ---
    icrc: Icrc,
    res_v: DFF<Bit>,
    res_crc: DFF<Bits<32>>,
    res_err: DFF<Bit>,
    fcnt: DFF<Bits<4>>,
    fifo: [DFF<Bits<32>>; DELAY_STAGES],
    crc_avail: Signal<Local, Bit>,
    crc_head: Signal<Local, Bits<32>>,
    pop: Signal<Local, Bit>,
    fshift: Signal<Local, Bit>,
    fwrite: Signal<Local, Bit>,

    // --- delay line: stage i moves when mv[i] ---
    mv: [Signal<Local, Bit>; DELAY_STAGES],
    sv: [DFF<Bit>; DELAY_STAGES],
    sd: [DFF<Bits<DATA_BITS>>; DELAY_STAGES],
    slast: [DFF<Bit>; DELAY_STAGES],
    sneed: [DFF<Bit>; DELAY_STAGES],
    slo: [DFF<Bits<7>>; DELAY_STAGES],
    shi: [DFF<Bits<7>>; DELAY_STAGES],
    sflen: [DFF<Bits<16>>; DELAY_STAGES],
    ssrc: [DFF<Bits<24>>; DELAY_STAGES],

    // --- output ---
    out_ok: Signal<Local, Bit>,
    out_take: Signal<Local, Bit>,
    insert: CrcInsert,
}

impl Default for HdrBuild {
    fn default() -> Self {
        HdrBuild::new()
    }
}

fn k<const N: usize>(v: u64) -> Constant<Bits<N>> {
    Constant::new(v.into())
}

impl HdrBuild {
    pub fn new() -> HdrBuild {
        check_layout_facts();
        assert_eq!(CUR_LANES * 8, 464, "BeatMerge port widths");
        HdrBuild {
            clock: Default::default(),
            reset: Default::default(),
            s_pkt_valid: Default::default(),
            s_pkt_ready: Default::default(),
            s_pkt_dst_mac: Default::default(),
            s_pkt_src_mac: Default::default(),
            s_pkt_src_ip: Default::default(),
            s_pkt_dst_ip: Default::default(),
            s_pkt_udp_sport: Default::default(),
            s_pkt_opcode: Default::default(),
            s_pkt_se: Default::default(),
            s_pkt_ack_req: Default::default(),
            s_pkt_dest_qp: Default::default(),
            s_pkt_psn: Default::default(),
            s_pkt_va: Default::default(),
            s_pkt_rkey: Default::default(),
            s_pkt_dma_len: Default::default(),
            s_pkt_swap_add: Default::default(),
            s_pkt_compare: Default::default(),
            s_pkt_orig: Default::default(),
            s_pkt_syndrome: Default::default(),
            s_pkt_msn: Default::default(),
            s_pkt_imm: Default::default(),
            s_pkt_payload_len: Default::default(),
            s_pkt_src_qp: Default::default(),
            pay: Default::default(),
            m_axis_tdata: Default::default(),
            m_axis_tkeep: Default::default(),
            m_axis_tlast: Default::default(),
            m_axis_tvalid: Default::default(),
            m_axis_tready: Default::default(),
            tx_cnt: Default::default(),
            m_err_payload: Default::default(),
            m_err_icrc: Default::default(),
            c0_16: k(0),
            c3_16: k(3),
            c4_16: k(4),
            c14_16: k(14),
            c34_16: k(34),
            c63_16: k(63),
            c64_16: k(64),
            c68_16: k(68),
            c1_16: k(1),
            c6_16: k(6),
            not3_16: k(0xFFFC),
            ip_sum: k(u64::from(ip_const_sum())),
            c0_7: k(0),
            c4_7: k(4),
            c64_7: k(64),
            c0_8: k(0),
            c3_8: k(3),
            c4_8: k(4),
            c80_8: k(0x80),
            ones64: Constant::new(Bits::<BEAT_BYTES>::mask()),
            fc: std::array::from_fn(|i| k(i as u64)),
            load_r1: Default::default(),
            decode: Default::default(),
            ppad: Default::default(),
            p63: Default::default(),
            flen_in: Default::default(),
            pad8: Default::default(),
            sa_s: Default::default(),
            sa: Default::default(),
            sb_s: Default::default(),
            sb: Default::default(),
            sc_s: Default::default(),
            sc: Default::default(),
            v1: Default::default(),
            r1_dst_mac: Default::default(),
            r1_src_mac: Default::default(),
            r1_src_ip: Default::default(),
            r1_dst_ip: Default::default(),
            r1_udp_sport: Default::default(),
            r1_opcode: Default::default(),
            r1_flags: Default::default(),
            r1_ack: Default::default(),
            r1_dest_qp: Default::default(),
            r1_psn: Default::default(),
            r1_va: Default::default(),
            r1_rkey: Default::default(),
            r1_dma_len: Default::default(),
            r1_swap_add: Default::default(),
            r1_compare: Default::default(),
            r1_orig: Default::default(),
            r1_syndrome: Default::default(),
            r1_msn: Default::default(),
            r1_imm: Default::default(),
            r1_layout: Default::default(),
            r1_shift: Default::default(),
            r1_big: Default::default(),
            r1_nh0: Default::default(),
            r1_nh1: Default::default(),
            r1_flen: Default::default(),
            r1_dend: Default::default(),
            r1_np: Default::default(),
            r1_total: Default::default(),
            r1_udp_len: Default::default(),
            r1_asum: Default::default(),
            r1_src_qp: Default::default(),
            load_r2: Default::default(),
            t1_s: Default::default(),
            t1: Default::default(),
            t2_s: Default::default(),
            t2: Default::default(),
            hdr_bytes: Default::default(),
            v2: Default::default(),
            r2_hdr: Default::default(),
            r2_shift: Default::default(),
            r2_big: Default::default(),
            r2_nh0: Default::default(),
            r2_nh1: Default::default(),
            r2_flen: Default::default(),
            r2_dend: Default::default(),
            r2_np: Default::default(),
            r2_src_qp: Default::default(),
            first: Default::default(),
            fleft_now: Default::default(),
            dleft_now: Default::default(),
            pleft_now: Default::default(),
            n_hdr: Default::default(),
            n_data: Default::default(),
            need_pay: Default::default(),
            emit: Default::default(),
            last_now: Default::default(),
            straddle: Default::default(),
            lo_now: Default::default(),
            hi_now: Default::default(),
            keep_now: Default::default(),
            merge: Default::default(),
            in_frame: Default::default(),
            at1: Default::default(),
            fleft: Default::default(),
            dleft: Default::default(),
            pleft: Default::default(),
            prev: Default::default(),
            err_pay: Default::default(),
            icrc: Icrc::new(IcrcMode::Generate),
            res_v: Default::default(),
            res_crc: Default::default(),
            res_err: Default::default(),
            fcnt: Default::default(),
            fifo: Default::default(),
            crc_avail: Default::default(),
            crc_head: Default::default(),
            pop: Default::default(),
            fshift: Default::default(),
            fwrite: Default::default(),
            mv: Default::default(),
            sv: Default::default(),
            sd: Default::default(),
            slast: Default::default(),
            sneed: Default::default(),
            slo: Default::default(),
            shi: Default::default(),
            sflen: Default::default(),
            ssrc: Default::default(),
            out_ok: Default::default(),
            out_take: Default::default(),
            insert: Default::default(),
        }
    }
}

impl Logic for HdrBuild {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            v1,
            r1_dst_mac,
            r1_src_mac,
            r1_src_ip,
            r1_dst_ip,
            r1_udp_sport,
            r1_opcode,
            r1_flags,
            r1_ack,
            r1_dest_qp,
            r1_psn,
            r1_va,
            r1_rkey,
            r1_dma_len,
            r1_swap_add,
            r1_compare,
            r1_orig,
            r1_syndrome,
            r1_msn,
            r1_imm,
            r1_layout,
            r1_shift,
            r1_big,
            r1_nh0,
            r1_nh1,
            r1_flen,
            r1_dend,
            r1_np,
            r1_total,
            r1_udp_len,
            r1_asum,
            r1_src_qp,
            v2,
            r2_hdr,
            r2_shift,
            r2_big,
            r2_nh0,
            r2_nh1,
            r2_flen,
            r2_dend,
            r2_np,
            r2_src_qp,
            in_frame,
            at1,
            fleft,
            dleft,
            pleft,
            prev,
            err_pay,
            res_v,
            res_crc,
            res_err,
            fcnt
        );
        for i in 0..8 {
            self.fifo[i].clock.next = self.clock.val();
            self.sv[i].clock.next = self.clock.val();
            self.sd[i].clock.next = self.clock.val();
            self.slast[i].clock.next = self.clock.val();
            self.sneed[i].clock.next = self.clock.val();
            self.slo[i].clock.next = self.clock.val();
            self.shi[i].clock.next = self.clock.val();
            self.sflen[i].clock.next = self.clock.val();
            self.ssrc[i].clock.next = self.clock.val();
            self.fifo[i].d.next = self.fifo[i].q.val();
            self.sv[i].d.next = self.sv[i].q.val();
            self.sd[i].d.next = self.sd[i].q.val();
            self.slast[i].d.next = self.slast[i].q.val();
            self.sneed[i].d.next = self.sneed[i].q.val();
            self.slo[i].d.next = self.slo[i].q.val();
            self.shi[i].d.next = self.shi[i].q.val();
            self.sflen[i].d.next = self.sflen[i].q.val();
            self.ssrc[i].d.next = self.ssrc[i].q.val();
        }
        self.icrc.clock.next = self.clock.val();
        self.icrc.reset.next = self.reset.val();

        // ---- output end of the delay line: wait for the ICRC where the beat needs it ----
        self.crc_avail.next = (self.fcnt.q.val() != self.fc[0].val()) | self.res_v.q.val();
        if self.fcnt.q.val() != self.fc[0].val() {
            self.crc_head.next = self.fifo[0].q.val();
        } else {
            self.crc_head.next = self.res_crc.q.val();
        }
        self.out_ok.next = self.sv[7].q.val() & (!self.sneed[7].q.val() | self.crc_avail.val());
        self.out_take.next = self.out_ok.val() & self.m_axis_tready.val();
        self.m_axis_tvalid.next = self.out_ok.val();
        self.m_axis_tlast.next = self.slast[7].q.val();
        if self.slast[7].q.val() {
            self.m_axis_tkeep.next = !(self.ones64.val() << self.shi[7].q.val());
        } else {
            self.m_axis_tkeep.next = self.ones64.val();
        }
        self.insert.d.next = self.sd[7].q.val();
        self.insert.crc.next = self.crc_head.val();
        self.insert.ins.next = (self.ones64.val() << self.slo[7].q.val())
            & !(self.ones64.val() << self.shi[7].q.val());
        self.m_axis_tdata.next = self.insert.y.val();
        self.tx_cnt.frame.next = self.out_take.val() & self.slast[7].q.val();
        self.tx_cnt.bytes.next = self.sflen[7].q.val();
        self.tx_cnt.qpn.next = self.ssrc[7].q.val();

        // ---- delay line: a stage moves when it is empty or the next one moves ----
        self.mv[7].next = !self.sv[7].q.val() | self.out_take.val();
        for i in 0..7 {
            self.mv[6 - i].next = !self.sv[6 - i].q.val() | self.mv[7 - i].val();
        }
        for i in 1..8 {
            if self.mv[i].val() {
                self.sv[i].d.next = self.sv[i - 1].q.val();
                self.sd[i].d.next = self.sd[i - 1].q.val();
                self.slast[i].d.next = self.slast[i - 1].q.val();
                self.sneed[i].d.next = self.sneed[i - 1].q.val();
                self.slo[i].d.next = self.slo[i - 1].q.val();
                self.shi[i].d.next = self.shi[i - 1].q.val();
                self.sflen[i].d.next = self.sflen[i - 1].q.val();
                self.ssrc[i].d.next = self.ssrc[i - 1].q.val();
            }
        }

        // ---- ICRC results: registered, then a FIFO with a bypass ----
        self.res_v.d.next = self.icrc.m_icrc_valid.val();
        self.res_crc.d.next = self.icrc.m_icrc_crc.val();
        self.res_err.d.next = self.icrc.m_icrc_len_err.val()
            | !self.icrc.m_icrc_ok.val()
            | !self.icrc.s_axis_tready.val();
        self.m_err_icrc.next = self.res_err.q.val() & self.res_v.q.val();
        self.pop.next = self.out_take.val() & self.slast[7].q.val();
        self.fshift.next = self.pop.val() & (self.fcnt.q.val() != self.fc[0].val());
        self.fwrite.next = !self.pop.val() & self.res_v.q.val();
        for i in 0..7 {
            if self.fshift.val() {
                if self.res_v.q.val() & (self.fcnt.q.val() == self.fc[i + 1].val()) {
                    self.fifo[i].d.next = self.res_crc.q.val();
                } else {
                    self.fifo[i].d.next = self.fifo[i + 1].q.val();
                }
            } else if self.fwrite.val() & (self.fcnt.q.val() == self.fc[i].val()) {
                self.fifo[i].d.next = self.res_crc.q.val();
            }
        }
        if (self.fshift.val() & self.res_v.q.val() & (self.fcnt.q.val() == self.fc[8].val()))
            | (self.fwrite.val() & (self.fcnt.q.val() == self.fc[7].val()))
        {
            self.fifo[7].d.next = self.res_crc.q.val();
        }
        if self.fshift.val() & !self.res_v.q.val() {
            self.fcnt.d.next = self.fcnt.q.val() - self.fc[1].val();
        } else if self.fwrite.val() {
            self.fcnt.d.next = self.fcnt.q.val() + self.fc[1].val();
        }

        // ---- assembler: beat k of the frame in R2 ----
        self.first.next = !self.in_frame.q.val();
        if self.first.val() {
            self.fleft_now.next = self.r2_flen.q.val();
            self.dleft_now.next = self.r2_dend.q.val();
            self.pleft_now.next = self.r2_np.q.val();
            self.n_hdr.next = self.r2_nh0.q.val();
            self.merge.hdr.next = self.r2_hdr.q.val().get_bits::<DATA_BITS>(0);
        } else {
            self.fleft_now.next = self.fleft.q.val();
            self.dleft_now.next = self.dleft.q.val();
            self.pleft_now.next = self.pleft.q.val();
            if self.at1.q.val() {
                self.n_hdr.next = self.r2_nh1.q.val();
            } else {
                self.n_hdr.next = self.c0_7.val();
            }
            self.merge.hdr.next = self.r2_hdr.q.val().get_bits::<DATA_BITS>(512);
        }
        if self.dleft_now.val() >= self.c64_16.val() {
            self.n_data.next = self.c64_7.val();
        } else {
            self.n_data.next = self.dleft_now.val().get_bits::<7>(0);
        }
        self.need_pay.next =
            (self.pleft_now.val() != self.c0_16.val()) & (!self.first.val() | !self.r2_big.q.val());
        self.emit.next =
            self.v2.q.val() & (!self.need_pay.val() | self.pay.tvalid.val()) & self.mv[0].val();
        self.pay.tready.next = self.v2.q.val() & self.need_pay.val() & self.mv[0].val();
        self.last_now.next = self.fleft_now.val() <= self.c64_16.val();
        self.straddle.next = !self.last_now.val() & (self.fleft_now.val() < self.c68_16.val());
        if self.last_now.val() {
            self.hi_now.next = self.fleft_now.val().get_bits::<7>(0);
            if self.fleft_now.val().get_bits::<7>(0) >= self.c4_7.val() {
                self.lo_now.next = self.fleft_now.val().get_bits::<7>(0) - self.c4_7.val();
            } else {
                self.lo_now.next = self.c0_7.val();
            }
            self.keep_now.next = !(self.ones64.val() << self.fleft_now.val().get_bits::<7>(0));
        } else if self.straddle.val() {
            self.hi_now.next = self.c64_7.val();
            self.lo_now.next = self.fleft_now.val().get_bits::<7>(0) - self.c4_7.val();
            self.keep_now.next = self.ones64.val();
        } else {
            self.hi_now.next = self.c0_7.val();
            self.lo_now.next = self.c0_7.val();
            self.keep_now.next = self.ones64.val();
        }
        self.merge.cur.next = self.pay.tdata.val().get_bits::<CUR_BITS>(0);
        self.merge.prev.next = self.prev.q.val();
        self.merge.shift.next = self.r2_shift.q.val();
        self.merge.hdr_keep.next = !(self.ones64.val() << self.n_hdr.val());
        self.merge.data_keep.next = !(self.ones64.val() << self.n_data.val());
        self.merge.hold.next = !self.mv[0].val();
        self.merge.q.next = self.sd[0].q.val();
        self.sd[0].d.next = self.merge.y.val();

        // The beat goes into the ICRC engine and stage 0 together.
        self.icrc.s_axis_tdata.next = self.merge.y.val();
        self.icrc.s_axis_tkeep.next = self.keep_now.val();
        self.icrc.s_axis_tlast.next = self.last_now.val();
        self.icrc.s_axis_tvalid.next = self.emit.val();
        self.icrc.m_icrc_ready.next = true;
        if self.mv[0].val() {
            self.sv[0].d.next = self.emit.val();
            self.slast[0].d.next = self.last_now.val();
            self.sneed[0].d.next = self.last_now.val() | self.straddle.val();
            self.slo[0].d.next = self.lo_now.val();
            self.shi[0].d.next = self.hi_now.val();
            self.sflen[0].d.next = self.r2_flen.q.val();
            self.ssrc[0].d.next = self.r2_src_qp.q.val();
        }
        self.m_err_payload.next = self.err_pay.q.val();
        self.err_pay.d.next = false;
        if self.emit.val() {
            self.in_frame.d.next = !self.last_now.val();
            self.at1.d.next = self.first.val();
            self.fleft.d.next = self.fleft_now.val() - self.c64_16.val();
            if self.dleft_now.val() >= self.c64_16.val() {
                self.dleft.d.next = self.dleft_now.val() - self.c64_16.val();
            } else {
                self.dleft.d.next = self.c0_16.val();
            }
            if self.need_pay.val() {
                self.pleft.d.next = self.pleft_now.val() - self.c1_16.val();
                self.prev.d.next = self.pay.tdata.val().get_bits::<PREV_BITS>(48);
                self.err_pay.d.next =
                    self.pay.tlast.val() != (self.pleft_now.val() == self.c1_16.val());
            } else {
                self.pleft.d.next = self.pleft_now.val();
            }
        }

        // ---- R2: the frame being sent; refilled from R1 as its last beat goes ----
        self.load_r2.next = !self.v2.q.val() | (self.emit.val() & self.last_now.val());
        self.t1_s.next = self.r1_total.q.val() + self.ip_sum.val();
        if self.t1_s.val() < self.r1_total.q.val() {
            self.t1.next = self.t1_s.val() + self.c1_16.val();
        } else {
            self.t1.next = self.t1_s.val();
        }
        self.t2_s.next = self.t1.val() + self.r1_asum.q.val();
        if self.t2_s.val() < self.t1.val() {
            self.t2.next = self.t2_s.val() + self.c1_16.val();
        } else {
            self.t2.next = self.t2_s.val();
        }
        self.hdr_bytes.layout.next = self.r1_layout.q.val();
        self.hdr_bytes.dst_mac.next = self.r1_dst_mac.q.val();
        self.hdr_bytes.src_mac.next = self.r1_src_mac.q.val();
        self.hdr_bytes.src_ip.next = self.r1_src_ip.q.val();
        self.hdr_bytes.dst_ip.next = self.r1_dst_ip.q.val();
        self.hdr_bytes.udp_sport.next = self.r1_udp_sport.q.val();
        self.hdr_bytes.total_len.next = self.r1_total.q.val();
        self.hdr_bytes.ip_csum.next = !self.t2.val();
        self.hdr_bytes.udp_len.next = self.r1_udp_len.q.val();
        self.hdr_bytes.opcode.next = self.r1_opcode.q.val();
        self.hdr_bytes.bth_flags.next = self.r1_flags.q.val();
        self.hdr_bytes.dest_qp.next = self.r1_dest_qp.q.val();
        self.hdr_bytes.ack_byte.next = self.r1_ack.q.val();
        self.hdr_bytes.psn.next = self.r1_psn.q.val();
        self.hdr_bytes.va.next = self.r1_va.q.val();
        self.hdr_bytes.rkey.next = self.r1_rkey.q.val();
        self.hdr_bytes.dma_len.next = self.r1_dma_len.q.val();
        self.hdr_bytes.swap_add.next = self.r1_swap_add.q.val();
        self.hdr_bytes.compare.next = self.r1_compare.q.val();
        self.hdr_bytes.orig.next = self.r1_orig.q.val();
        self.hdr_bytes.syndrome.next = self.r1_syndrome.q.val();
        self.hdr_bytes.msn.next = self.r1_msn.q.val();
        self.hdr_bytes.imm.next = self.r1_imm.q.val();
        if self.load_r2.val() {
            self.v2.d.next = self.v1.q.val();
            self.r2_hdr.d.next = self.hdr_bytes.y.val();
            self.r2_shift.d.next = self.r1_shift.q.val();
            self.r2_big.d.next = self.r1_big.q.val();
            self.r2_nh0.d.next = self.r1_nh0.q.val();
            self.r2_nh1.d.next = self.r1_nh1.q.val();
            self.r2_flen.d.next = self.r1_flen.q.val();
            self.r2_dend.d.next = self.r1_dend.q.val();
            self.r2_np.d.next = self.r1_np.q.val();
            self.r2_src_qp.d.next = self.r1_src_qp.q.val();
        }

        // ---- R1: take a record ----
        self.load_r1.next = !self.v1.q.val() | self.load_r2.val();
        self.s_pkt_ready.next = self.load_r1.val();
        self.decode.opcode.next = self.s_pkt_opcode.val();
        self.ppad.next = (self.s_pkt_payload_len.val() + self.c3_16.val()) & self.not3_16.val();
        self.p63.next = self.s_pkt_payload_len.val() + self.c63_16.val();
        self.flen_in.next = self.decode.hdr_len.val() + self.ppad.val() + self.c4_16.val();
        self.pad8.next =
            (self.c0_8.val() - self.s_pkt_payload_len.val().get_bits::<8>(0)) & self.c3_8.val();
        self.sa_s.next =
            self.s_pkt_src_ip.val().get_bits::<16>(16) + self.s_pkt_src_ip.val().get_bits::<16>(0);
        if self.sa_s.val() < self.s_pkt_src_ip.val().get_bits::<16>(16) {
            self.sa.next = self.sa_s.val() + self.c1_16.val();
        } else {
            self.sa.next = self.sa_s.val();
        }
        self.sb_s.next =
            self.s_pkt_dst_ip.val().get_bits::<16>(16) + self.s_pkt_dst_ip.val().get_bits::<16>(0);
        if self.sb_s.val() < self.s_pkt_dst_ip.val().get_bits::<16>(16) {
            self.sb.next = self.sb_s.val() + self.c1_16.val();
        } else {
            self.sb.next = self.sb_s.val();
        }
        self.sc_s.next = self.sa.val() + self.sb.val();
        if self.sc_s.val() < self.sa.val() {
            self.sc.next = self.sc_s.val() + self.c1_16.val();
        } else {
            self.sc.next = self.sc_s.val();
        }
        if self.load_r1.val() {
            self.v1.d.next = self.s_pkt_valid.val();
            self.r1_dst_mac.d.next = self.s_pkt_dst_mac.val();
            self.r1_src_mac.d.next = self.s_pkt_src_mac.val();
            self.r1_src_ip.d.next = self.s_pkt_src_ip.val();
            self.r1_dst_ip.d.next = self.s_pkt_dst_ip.val();
            self.r1_udp_sport.d.next = self.s_pkt_udp_sport.val();
            self.r1_opcode.d.next = self.s_pkt_opcode.val();
            if self.s_pkt_se.val() {
                self.r1_flags.d.next = (self.pad8.val() << self.c4_8.val()) | self.c80_8.val();
            } else {
                self.r1_flags.d.next = self.pad8.val() << self.c4_8.val();
            }
            if self.s_pkt_ack_req.val() {
                self.r1_ack.d.next = self.c80_8.val();
            } else {
                self.r1_ack.d.next = self.c0_8.val();
            }
            self.r1_dest_qp.d.next = self.s_pkt_dest_qp.val();
            self.r1_psn.d.next = self.s_pkt_psn.val();
            self.r1_va.d.next = self.s_pkt_va.val();
            self.r1_rkey.d.next = self.s_pkt_rkey.val();
            self.r1_dma_len.d.next = self.s_pkt_dma_len.val();
            self.r1_swap_add.d.next = self.s_pkt_swap_add.val();
            self.r1_compare.d.next = self.s_pkt_compare.val();
            self.r1_orig.d.next = self.s_pkt_orig.val();
            self.r1_syndrome.d.next = self.s_pkt_syndrome.val();
            self.r1_msn.d.next = self.s_pkt_msn.val();
            self.r1_imm.d.next = self.s_pkt_imm.val();
            self.r1_layout.d.next = self.decode.layout.val();
            self.r1_shift.d.next = self.decode.shift.val();
            self.r1_big.d.next = self.decode.hdr_big.val();
            self.r1_nh0.d.next = self.decode.hdr_lanes0.val();
            self.r1_nh1.d.next = self.decode.hdr_lanes1.val();
            self.r1_flen.d.next = self.flen_in.val();
            self.r1_dend.d.next = self.decode.hdr_len.val() + self.s_pkt_payload_len.val();
            self.r1_np.d.next = self.p63.val() >> self.c6_16.val();
            self.r1_total.d.next = self.flen_in.val() - self.c14_16.val();
            self.r1_udp_len.d.next = self.flen_in.val() - self.c34_16.val();
            self.r1_asum.d.next = self.sc.val();
            self.r1_src_qp.d.next = self.s_pkt_src_qp.val();
        }

        // ---- synchronous reset ----
        if self.reset.val() {
            self.v1.d.next = false;
            self.v2.d.next = false;
            self.in_frame.d.next = false;
            self.at1.d.next = false;
            self.err_pay.d.next = false;
            self.res_v.d.next = false;
            self.fcnt.d.next = self.fc[0].val();
            for i in 0..8 {
                self.sv[i].d.next = false;
            }
        }
    }
}

/// The block's software reference: packet records, and the frame the model sends for one
/// (`RoceRepr::emit` with the fixed fields of `model::packet::build`, which is private to
/// the model crate).
pub mod model {
    use rocenic_proto::wire::{
        AethRepr, AtomicAckEthRepr, AtomicEthRepr, BthRepr, EtherType, EthernetAddress,
        EthernetRepr, ExtHeaders, IpProtocol, Ipv4Address, Ipv4Repr, Opcode, Psn, RethRepr,
        RoceRepr, Syndrome,
    };

    use super::HdrBuild;
    use crate::bench::Rng;
    use crate::prelude::Bits;
    use crate::tx::tx_arbiter::{RECORD_BITS, RECORD_FIELDS};

    /// One "send this packet" record and its payload.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct Record {
        pub dst_mac: [u8; 6],
        pub src_mac: [u8; 6],
        pub src_ip: [u8; 4],
        pub dst_ip: [u8; 4],
        pub udp_sport: u16,
        pub opcode: Opcode,
        pub se: bool,
        pub ack_req: bool,
        pub dest_qp: u32,
        pub psn: u32,
        pub va: u64,
        pub rkey: u32,
        pub dma_len: u32,
        pub swap_add: u64,
        pub compare: u64,
        pub orig: u64,
        pub syndrome: u8,
        pub msn: u32,
        pub imm: u32,
        pub payload: Vec<u8>,
        /// The sending QP (not on the wire).
        pub src_qp: u32,
    }

    impl Record {
        /// A random record of `opcode` with `payload_len` bytes (0 if the opcode carries
        /// none); fields the opcode does not send are random too (they must not show).
        pub fn random(rng: &mut Rng, opcode: Opcode, payload_len: usize) -> Record {
            let len = if opcode.has_payload() { payload_len } else { 0 };
            Record {
                dst_mac: rng.bytes(6).try_into().expect("6"),
                src_mac: rng.bytes(6).try_into().expect("6"),
                src_ip: rng.bytes(4).try_into().expect("4"),
                dst_ip: rng.bytes(4).try_into().expect("4"),
                udp_sport: rng.next_u64() as u16,
                opcode,
                se: rng.percent(50),
                ack_req: rng.percent(50),
                dest_qp: rng.below(1 << 24) as u32,
                psn: rng.below(1 << 24) as u32,
                va: rng.next_u64(),
                rkey: rng.next_u64() as u32,
                dma_len: rng.next_u64() as u32,
                swap_add: rng.next_u64(),
                compare: rng.next_u64(),
                orig: rng.next_u64(),
                syndrome: rng.byte(),
                msn: rng.below(1 << 24) as u32,
                imm: rng.next_u64() as u32,
                payload: rng.bytes(len),
                src_qp: rng.below(1 << 24) as u32,
            }
        }

        /// The frame the model sends for this record.
        pub fn frame(&self) -> Vec<u8> {
            let op = self.opcode;
            let repr = RoceRepr {
                eth: EthernetRepr {
                    src_addr: EthernetAddress(self.src_mac),
                    dst_addr: EthernetAddress(self.dst_mac),
                    ethertype: EtherType::Ipv4,
                },
                ip: Ipv4Repr {
                    src_addr: Ipv4Address(self.src_ip),
                    dst_addr: Ipv4Address(self.dst_ip),
                    protocol: IpProtocol::Udp,
                    dscp: 0,
                    ecn: 0,
                    ident: 0,
                    dont_frag: true,
                    // As model::packet::build sends them, not this block's constants.
                    ttl: 64,
                },
                udp_src_port: self.udp_sport,
                bth: BthRepr {
                    opcode: op,
                    solicited: self.se,
                    migreq: false,
                    pkey: 0xFFFF,
                    fecn: false,
                    becn: false,
                    dest_qp: self.dest_qp,
                    ack_req: self.ack_req,
                    psn: Psn::from(self.psn),
                },
                ext: ExtHeaders {
                    reth: op.has_reth().then_some(RethRepr {
                        va: self.va,
                        rkey: self.rkey,
                        dma_len: self.dma_len,
                    }),
                    aeth: op.has_aeth().then(|| AethRepr {
                        syndrome: Syndrome::from(self.syndrome),
                        msn: self.msn,
                    }),
                    atomic_eth: op.has_atomic_eth().then_some(AtomicEthRepr {
                        va: self.va,
                        rkey: self.rkey,
                        swap_add: self.swap_add,
                        compare: self.compare,
                    }),
                    atomic_ack_eth: op.has_atomic_ack_eth().then_some(AtomicAckEthRepr {
                        orig_remote_data: self.orig,
                    }),
                    immdt: op.has_immdt().then_some(self.imm),
                    ieth: op.has_ieth().then_some(self.imm),
                    deth: None,
                },
            };
            let mut frame = vec![];
            repr.emit(&self.payload, &mut frame).expect("emit");
            frame
        }

        /// The field values in the order of `tx_arbiter::RECORD_FIELDS` (wire order big
        /// endian, as the `s_pkt_*` ports take them).
        pub fn fields(&self) -> [u64; 21] {
            let be = |b: &[u8]| b.iter().fold(0u64, |a, &x| (a << 8) | u64::from(x));
            [
                be(&self.dst_mac),
                be(&self.src_mac),
                be(&self.src_ip),
                be(&self.dst_ip),
                u64::from(self.udp_sport),
                u64::from(u8::from(self.opcode)),
                u64::from(self.se),
                u64::from(self.ack_req),
                u64::from(self.dest_qp),
                u64::from(self.psn),
                self.va,
                u64::from(self.rkey),
                u64::from(self.dma_len),
                self.swap_add,
                self.compare,
                self.orig,
                u64::from(self.syndrome),
                u64::from(self.msn),
                u64::from(self.imm),
                self.payload.len() as u64,
                u64::from(self.src_qp),
            ]
        }

        /// Puts the record on the block's `s_pkt_*` inputs (not `valid`).
        pub fn drive(&self, u: &mut HdrBuild) {
            let be = |b: &[u8]| b.iter().fold(0u64, |a, &x| (a << 8) | u64::from(x));
            u.s_pkt_dst_mac.next = be(&self.dst_mac).into();
            u.s_pkt_src_mac.next = be(&self.src_mac).into();
            u.s_pkt_src_ip.next = be(&self.src_ip).into();
            u.s_pkt_dst_ip.next = be(&self.dst_ip).into();
            u.s_pkt_udp_sport.next = u64::from(self.udp_sport).into();
            u.s_pkt_opcode.next = u64::from(u8::from(self.opcode)).into();
            u.s_pkt_se.next = self.se;
            u.s_pkt_ack_req.next = self.ack_req;
            u.s_pkt_dest_qp.next = u64::from(self.dest_qp).into();
            u.s_pkt_psn.next = u64::from(self.psn).into();
            u.s_pkt_va.next = self.va.into();
            u.s_pkt_rkey.next = u64::from(self.rkey).into();
            u.s_pkt_dma_len.next = u64::from(self.dma_len).into();
            u.s_pkt_swap_add.next = self.swap_add.into();
            u.s_pkt_compare.next = self.compare.into();
            u.s_pkt_orig.next = self.orig.into();
            u.s_pkt_syndrome.next = u64::from(self.syndrome).into();
            u.s_pkt_msn.next = u64::from(self.msn).into();
            u.s_pkt_imm.next = u64::from(self.imm).into();
            u.s_pkt_payload_len.next = (self.payload.len() as u64).into();
            u.s_pkt_src_qp.next = u64::from(self.src_qp).into();
        }
    }

    /// A record read back from the packed bus, with its payload.
    pub fn unpack_record(x: &Bits<RECORD_BITS>, payload: Vec<u8>) -> Record {
        let mut v = [0u64; 21];
        let mut at = 0;
        for (slot, &(_, w)) in v.iter_mut().zip(RECORD_FIELDS) {
            *slot = (0..w).fold(0, |a, i| a | (u64::from(x.get_bit(at + i)) << i));
            at += w;
        }
        assert_eq!(
            v[19],
            payload.len() as u64,
            "payload_len against the payload"
        );
        let b = |x: u64, n: usize| x.to_be_bytes()[8 - n..].to_vec();
        Record {
            dst_mac: b(v[0], 6).try_into().expect("6"),
            src_mac: b(v[1], 6).try_into().expect("6"),
            src_ip: b(v[2], 4).try_into().expect("4"),
            dst_ip: b(v[3], 4).try_into().expect("4"),
            udp_sport: v[4] as u16,
            opcode: Opcode::from(v[5] as u8),
            se: v[6] == 1,
            ack_req: v[7] == 1,
            dest_qp: v[8] as u32,
            psn: v[9] as u32,
            va: v[10],
            rkey: v[11] as u32,
            dma_len: v[12] as u32,
            swap_add: v[13],
            compare: v[14],
            orig: v[15],
            syndrome: v[16] as u8,
            msn: v[17] as u32,
            imm: v[18] as u32,
            payload,
            src_qp: v[20] as u32,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use rocenic_proto::wire::Opcode;

    use super::model::Record;
    use super::*;
    use crate::bench::{frame_beats, random_payload_len, Beat, Bench, Pattern, Rng};
    use crate::tx::tx_leaves::bytes_from_bits;

    /// What came out of the MAC TX port.
    #[derive(Default)]
    struct Out {
        frames: Vec<Vec<u8>>,
        /// Cycle of every beat transfer.
        beat_at: Vec<u64>,
        /// `tx_cnt.bytes` and `tx_cnt.qpn` at each `tx_cnt.frame` pulse.
        counted: Vec<(u64, u64)>,
    }

    fn new_bench() -> Bench<HdrBuild> {
        let mut bench = Bench::new(HdrBuild::new(), |u| &mut u.clock);
        bench.uut.reset.next = true;
        bench.tick();
        bench.tick();
        bench.uut.reset.next = false;
        bench
    }

    /// Sends `records` (and their payloads) under `pattern`; returns what came out once
    /// every frame did (and 20 quiet cycles showed nothing more).
    fn run(bench: &mut Bench<HdrBuild>, records: &[Record], pattern: Pattern, seed: u64) -> Out {
        let mut rng = Rng::new(seed);
        let mut recs: VecDeque<&Record> = records.iter().collect();
        let mut beats: VecDeque<Beat> = records
            .iter()
            .filter(|r| !r.payload.is_empty())
            .flat_map(|r| frame_beats(&r.payload, || rng.byte()))
            .collect();
        let mut rec_on: Option<&Record> = None;
        let mut beat_on: Option<Beat> = None;
        let mut out = Out::default();
        let mut partial: Vec<u8> = vec![];
        let total_beats: u64 = records
            .iter()
            .map(|r| r.frame().len().div_ceil(64) as u64)
            .sum();
        let limit = bench.cycle() + 200 + 150 * total_beats;
        let mut quiet = 0;
        while out.frames.len() < records.len() || quiet < 20 {
            assert!(
                bench.cycle() < limit,
                "no progress by cycle {limit} (seed {seed})"
            );
            if rec_on.is_none() && !recs.is_empty() && rng.percent(pattern.valid_pct) {
                rec_on = recs.pop_front();
                rec_on.expect("record").drive(&mut bench.uut);
            }
            bench.uut.s_pkt_valid.next = rec_on.is_some();
            if beat_on.is_none() && !beats.is_empty() && rng.percent(pattern.valid_pct) {
                beat_on = beats.pop_front();
                let b = beat_on.as_ref().expect("beat");
                bench.uut.pay.tdata.next = b.tdata();
                bench.uut.pay.tlast.next = b.last;
            }
            bench.uut.pay.tvalid.next = beat_on.is_some();
            bench.uut.m_axis_tready.next = rng.percent(pattern.ready_pct);
            bench.settle();
            let u = &bench.uut;
            assert!(!u.m_err_payload.val(), "payload error (seed {seed})");
            assert!(!u.m_err_icrc.val(), "ICRC length error (seed {seed})");
            if u.s_pkt_valid.val() && u.s_pkt_ready.val() {
                rec_on = None;
            }
            if u.pay.tvalid.val() && u.pay.tready.val() {
                beat_on = None;
            }
            quiet += 1;
            if u.m_axis_tvalid.val() && u.m_axis_tready.val() {
                quiet = 0;
                let data = bytes_from_bits(u.m_axis_tdata.val());
                let keep = u.m_axis_tkeep.val().to_u64();
                let last = u.m_axis_tlast.val();
                let n = keep.trailing_ones() as usize;
                assert!(
                    keep == u64::MAX || (last && keep == (1u64 << n) - 1 && n > 0),
                    "tkeep {keep:#x} (last {last}) at cycle {} (seed {seed})",
                    bench.cycle()
                );
                partial.extend_from_slice(&data[..n]);
                out.beat_at.push(bench.cycle());
                if last {
                    out.frames.push(std::mem::take(&mut partial));
                }
                if u.tx_cnt.frame.val() {
                    out.counted
                        .push((u.tx_cnt.bytes.val().to_u64(), u.tx_cnt.qpn.val().to_u64()));
                }
                assert_eq!(u.tx_cnt.frame.val(), last, "tx_cnt.frame with tlast");
            } else {
                assert!(!u.tx_cnt.frame.val(), "tx_cnt.frame without a transfer");
            }
            bench.tick();
        }
        out
    }

    fn check(records: &[Record], out: &Out, what: &str) {
        assert_eq!(out.frames.len(), records.len(), "{what}: frame count");
        for (i, (r, got)) in records.iter().zip(&out.frames).enumerate() {
            let want = r.frame();
            if *got != want {
                let at = got.iter().zip(&want).position(|(a, b)| a != b);
                panic!(
                    "{what}: frame {i} ({:?}, payload {}): {} bytes, want {}; first difference \
                     at byte {at:?}\n got {:02x?}\nwant {:02x?}",
                    r.opcode,
                    r.payload.len(),
                    got.len(),
                    want.len(),
                    &got[..got.len().min(100)],
                    &want[..want.len().min(100)]
                );
            }
            assert_eq!(
                out.counted[i],
                (want.len() as u64, u64::from(r.src_qp)),
                "{what}: tx_cnt.bytes and tx_cnt.qpn of frame {i}"
            );
        }
    }

    fn check_run(records: &[Record], pattern: Pattern, seed: u64, what: &str) -> Out {
        let mut bench = new_bench();
        let out = run(&mut bench, records, pattern, seed);
        check(records, &out, what);
        out
    }

    #[test]
    fn every_opcode_matches_the_model() {
        let mut rng = Rng::new(11);
        let records: Vec<Record> = Opcode::all()
            .flat_map(|op| [op, op])
            .map(|op| {
                let len = random_payload_len(&mut rng) % 700;
                Record::random(&mut rng, op, len)
            })
            .collect();
        check_run(&records, Pattern::SWEEP[0], 11, "every opcode");
    }

    /// Random records of every opcode, payloads 0 to past 4096 (pad included), under every
    /// valid/ready pattern of the payload source, the record source and the MAC.
    #[test]
    fn random_frames_under_every_pattern() {
        let ops: Vec<Opcode> = Opcode::all().collect();
        for (k, pattern) in Pattern::SWEEP.into_iter().enumerate() {
            let seed = 200 + k as u64;
            let mut rng = Rng::new(seed);
            let records: Vec<Record> = (0..14)
                .map(|i| {
                    let op = ops[rng.below(ops.len() as u64) as usize];
                    // One PMTU-sized (or larger) payload per pattern, the rest smaller.
                    let len = if i == 0 {
                        4096 + rng.below(8) as usize
                    } else {
                        random_payload_len(&mut rng) % 900
                    };
                    Record::random(&mut rng, op, len)
                })
                .collect();
            check_run(&records, pattern, seed, &format!("{pattern:?}"));
        }
    }

    /// ACKs (one beat each) back to back, then multi-beat frames with payload at full
    /// rate: one beat leaves every cycle from the first to the last.
    #[test]
    fn back_to_back_frames_leave_without_bubbles() {
        let mut rng = Rng::new(12);
        let mut records: Vec<Record> = (0..24)
            .map(|_| Record::random(&mut rng, Opcode::Acknowledge, 0))
            .collect();
        records.extend((0..6).map(|_| Record::random(&mut rng, Opcode::AtomicAcknowledge, 0)));
        records.extend((0..8).map(|i| {
            let op = [Opcode::SendOnly, Opcode::RdmaWriteOnlyWithImmediate][i % 2];
            Record::random(&mut rng, op, 61 + 37 * i)
        }));
        records.extend((0..6).map(|_| Record::random(&mut rng, Opcode::CompareSwap, 0)));
        let out = check_run(&records, Pattern::SWEEP[0], 12, "back to back");
        let beats: Vec<u64> = out.beat_at.clone();
        let want: u64 = records
            .iter()
            .map(|r| r.frame().len().div_ceil(64) as u64)
            .sum();
        assert_eq!(beats.len() as u64, want);
        assert_eq!(
            beats.last().expect("beats") - beats[0] + 1,
            want,
            "a beat every cycle"
        );
        // Pipeline latency: record taken in cycle 2 (after reset), first beat out 10 later.
        assert_eq!(beats[0], 2 + 10, "first beat");
    }

    /// Frames ending in every lane a RoCE frame can end in (2 mod 4), for each of the four
    /// payload shifts and every pad count: the ICRC lands in every lane pair, straddling
    /// two beats when the frame ends in lane 1.
    #[test]
    fn frames_end_in_every_lane() {
        let mut rng = Rng::new(13);
        let mut records = vec![];
        for op in [
            Opcode::SendOnly,                   // 54-byte header
            Opcode::RdmaReadResponseOnly,       // 58
            Opcode::RdmaWriteOnly,              // 70
            Opcode::RdmaWriteOnlyWithImmediate, // 74
        ] {
            for len in 0..68 {
                records.push(Record::random(&mut rng, op, len + 64 * (len % 3)));
            }
        }
        let ends: std::collections::BTreeSet<usize> =
            records.iter().map(|r| r.frame().len() % 64).collect();
        assert_eq!(ends.len(), 16, "every end lane: {ends:?}");
        check_run(&records, Pattern::SWEEP[0], 13, "end lanes");
        check_run(&records[..120], Pattern::SWEEP[3], 14, "end lanes, stalls");
    }

    /// Reset with frames in every stage (records queued, a long frame half sent, beats in
    /// the delay line): nothing of them comes out after it, and the next frames are right.
    #[test]
    fn reset_mid_frame() {
        let mut rng = Rng::new(15);
        let mut bench = new_bench();
        let long = Record::random(&mut rng, Opcode::RdmaWriteOnly, 1500);
        bench.uut.m_axis_tready.next = true;
        long.drive(&mut bench.uut);
        bench.uut.s_pkt_valid.next = true;
        let beats = frame_beats(&long.payload, || 0);
        for beat in &beats[..12] {
            bench.uut.pay.tdata.next = beat.tdata();
            bench.uut.pay.tlast.next = beat.last;
            bench.uut.pay.tvalid.next = true;
            bench.tick();
        }
        bench.uut.s_pkt_valid.next = false;
        bench.uut.pay.tvalid.next = false;
        bench.uut.reset.next = true;
        bench.tick();
        bench.uut.reset.next = false;
        bench.settle();
        assert!(!bench.uut.m_axis_tvalid.val(), "nothing left after reset");
        let records: Vec<Record> = (0..6)
            .map(|i| Record::random(&mut rng, Opcode::SendOnly, 100 * i + 3))
            .collect();
        let out = run(&mut bench, &records, Pattern::SWEEP[3], 15);
        check(&records, &out, "after reset");
    }

    /// A payload whose `tlast` comes a beat early is reported.
    #[test]
    fn a_wrong_payload_tlast_is_reported() {
        let mut rng = Rng::new(16);
        let mut bench = new_bench();
        let r = Record::random(&mut rng, Opcode::SendOnly, 200);
        bench.uut.m_axis_tready.next = true;
        r.drive(&mut bench.uut);
        bench.uut.s_pkt_valid.next = true;
        let mut beats = frame_beats(&r.payload, || 0);
        beats[1].last = true;
        let mut seen = 0;
        let mut queue: VecDeque<Beat> = beats.into();
        for _ in 0..30 {
            if let Some(b) = queue.front() {
                bench.uut.pay.tdata.next = b.tdata();
                bench.uut.pay.tlast.next = b.last;
            }
            bench.uut.pay.tvalid.next = !queue.is_empty();
            bench.settle();
            if bench.uut.pay.tvalid.val() && bench.uut.pay.tready.val() {
                queue.pop_front();
            }
            seen += u32::from(bench.uut.m_err_payload.val());
            let taken = bench.uut.s_pkt_ready.val();
            bench.tick();
            if taken {
                bench.uut.s_pkt_valid.next = false;
            }
        }
        assert_eq!(seen, 1, "one pulse, for the early tlast");
        assert!(queue.is_empty(), "the payload was taken by its length");
    }
}
