//! `Icrc`: the RoCE v2 invariant CRC over a 512-bit frame stream, one beat per cycle.
//!
//! One engine serves both directions, chosen at construction by [`IcrcMode`]:
//! - [`IcrcMode::Generate`] (TX): the frame arrives with its 4-byte ICRC field present (any
//!   value; the IPv4 total length counts it), and the engine reports the ICRC to put there.
//! - [`IcrcMode::Check`] (RX): the engine runs the CRC over the ICRC field too and reports
//!   whether the register ends at the CRC-32 check residue, i.e. whether the ICRC is right.
//!
//! What is covered is `rocenic_proto::wire::compute_icrc`: 8 bytes of 0xFF, then the IPv4
//! header (no options) with TOS, TTL and checksum set to ones, the UDP header with its
//! checksum set to ones, the BTH with byte 4 set to ones, then everything up to the ICRC. The
//! end comes from the IPv4 total length, not from `tlast`, so Ethernet padding after a short
//! frame (a 58-byte SEND ONLY is padded to 60 by the MAC) and garbage in unkept lanes of the
//! last beat are ignored; a frame that ends before its total length says is reported.
//!
//! # Interface
//!
//! ```text
//!            +-----------------------------------------------------+
//!  s_axis -->| S0 accept+mask | S1 M | S2 CRC | U1 U2 U3 | result |--> m_icrc {crc, ok,
//!  (frames)  +-----------------------------------------------------+     len_err}, one per frame
//! ```
//!
//! - `s_axis_*`: the frame from the destination MAC address, 64 bytes per beat, byte 0 in
//!   `tdata[7:0]`; `tkeep` is contiguous from lane 0 and only matters on the `tlast` beat.
//! - `m_icrc_*`: one result per input frame, in order. `crc` is the ICRC (the value
//!   `compute_icrc` returns; its wire bytes are `crc[7:0]` first, so it drops into lanes as
//!   is). `len_err`: the IPv4 total length is below 44 (IPv4 + UDP + BTH + ICRC) or the frame
//!   ends before it. `ok`: Generate: `!len_err`; Check: `!len_err` and the ICRC is right
//!   (`crc` then reads the constant `0x2144DF1C`, the residue).
//! - Throughput: one beat per cycle while `m_icrc_ready` is high; back-to-back frames, single
//!   beat frames included, without bubbles. Latency: the result is valid 6 cycles after the
//!   cycle in which the frame's `tlast` beat transfers (no stall). When a result waits for
//!   `m_icrc_ready`, the whole pipeline holds and `s_axis_tready` is low
//!   (`s_axis_tready = !m_icrc_valid || m_icrc_ready`). A consumer that always takes results
//!   (`m_icrc_ready` = 1) can tap a stream: the engine then always accepts.
//!
//! # How it stays small
//!
//! A direct 512-bit ICRC needs a different CRC matrix for each number of valid bytes in the
//! last beat, 64 of them; with the masking, that is where a naive design's 11-15k LUT go.
//! Here every beat, partial or not, goes through one 512-bit matrix, and the partial beat is
//! corrected afterwards on the 32-bit CRC value:
//! 1. S0: lanes outside the covered bytes are zeroed (a byte mask decoded from one shift
//!    amount; it lands on the data registers' synchronous reset pins), the masked header
//!    bytes forced to 0xFF, and the CRC register's state before the IPv4 header (after the
//!    initial value and 8 bytes of 0xFF, a constant) is XORed into the first four IPv4
//!    bytes, so every frame starts from a zero register and the leading Ethernet bytes,
//!    being zero, do not count.
//! 2. S1: `p = M·data` (32 parities of the 512 data bits, `M` the CRC of a 64-byte block,
//!    built as one network of shared XORs). S2: `r = A·r ^ p` (`A` advances the register over 64 bytes), `r = p` on a
//!    frame's first beat. Only S2 is a feedback loop, and it is two LUT levels deep.
//! 3. The last covered beat had `k` zeroed lanes at its end (`k` = 0..63), so `r` is the CRC
//!    of the frame followed by `k` zero bytes. U1-U3 undo them: `r = Z^-k r` as six
//!    conditional 32x32 steps (`Z^-1`, `Z^-2`, ... `Z^-32`), two per stage.
//!
//! The cost is one 512-bit mask, one 512x32 parity matrix, eight 32x32 matrices and the
//! pipeline registers; see `docs/hdl.md` for the synthesised figures.
//!
//! [`model`] is the block's software reference (what it must report for a frame, from
//! `rocenic_proto`), shared by the benches here and the Verilator test in `tests/`.

use crate::prelude::*;

use crate::common::crc32;
use crate::common::gf2::{bits_from_words, Gf2Map, Gf2Matrix};
use crate::common::gf2_step::Gf2Step;
use crate::common::masked_load::MaskedLoad;

/// Bytes per beat of the frame stream.
pub const BEAT_BYTES: usize = 64;
/// Data bits per beat.
pub const DATA_BITS: usize = 8 * BEAT_BYTES;
/// IPv4 (no options) + UDP + BTH: the headers with masked fields, all in the first beat.
const MASKED_HEADERS_LEN: usize = 20 + 8 + 12;
/// The smallest IPv4 total length of a RoCE v2 packet: IPv4 + UDP + BTH + ICRC.
pub const MIN_IP_TOTAL_LEN: u64 = (MASKED_HEADERS_LEN + 4) as u64;
/// Offsets within the IPv4 packet of the bytes the ICRC treats as all ones: TOS, TTL, the
/// IPv4 checksum, the UDP checksum, BTH byte 4.
pub const MASKED_IP_BYTES: [usize; 7] = [1, 8, 10, 11, 20 + 6, 20 + 7, 20 + 8 + 4];
/// Offset of the IPv4 total length (big endian) within the IPv4 header.
pub const TOTAL_LEN_AT: usize = 2;

/// Which way an [`Icrc`] engine works.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IcrcMode {
    /// TX: report the ICRC for the frame's (placeholder) ICRC field.
    Generate,
    /// RX: report whether the frame's ICRC field is right.
    Check,
}

/// The ICRC engine; see the [module docs](self) for the interface and timing.
#[derive(LogicBlock)]
pub struct Icrc {
    /// The core clock.
    pub clock: Signal<In, Clock>,
    /// Synchronous reset, active high: drops any frame in flight and any pending result.
    pub reset: Signal<In, Bit>,
    /// Frame bytes, byte 0 of the beat in bits 7:0.
    pub s_axis_tdata: Signal<In, Bits<DATA_BITS>>,
    /// Valid lanes; contiguous from lane 0; read on the `tlast` beat only.
    pub s_axis_tkeep: Signal<In, Bits<BEAT_BYTES>>,
    /// Last beat of a frame.
    pub s_axis_tlast: Signal<In, Bit>,
    pub s_axis_tvalid: Signal<In, Bit>,
    pub s_axis_tready: Signal<Out, Bit>,
    /// A frame's result is on `m_icrc_crc`, `m_icrc_ok`, `m_icrc_len_err`.
    pub m_icrc_valid: Signal<Out, Bit>,
    pub m_icrc_ready: Signal<In, Bit>,
    /// Generate: the ICRC (as `compute_icrc` returns it). Check: the final CRC over the
    /// frame including its ICRC field, `0x2144DF1C` when the field is right.
    pub m_icrc_crc: Signal<Out, Bits<32>>,
    /// The frame may be used: Generate: `!len_err`; Check: `!len_err` and the ICRC is right.
    pub m_icrc_ok: Signal<Out, Bit>,
    /// The IPv4 total length is below 44, or the frame is shorter than it says.
    pub m_icrc_len_err: Signal<Out, Bit>,

    // --- parameters, as constants so the Verilog has exact widths ---
    /// Bit offset of the IPv4 total length in the first beat.
    total_len_at: Constant<Bits<9>>,
    eight: Constant<Bits<4>>,
    zero16: Constant<Bits<16>>,
    zero7: Constant<Bits<7>>,
    zero6: Constant<Bits<6>>,
    one6: Constant<Bits<6>>,
    /// ICRC bytes that the CRC does not cover: 4 (Generate) or 0 (Check).
    trailer: Constant<Bits<16>>,
    /// IPv4 packet bytes the first beat can hold, and a later beat.
    room_first: Constant<Bits<16>>,
    room_rest: Constant<Bits<16>>,
    /// Lane of the IPv4 header in the first beat, as a 10-bit and a 6-bit number.
    base_first7: Constant<Bits<7>>,
    base_first6: Constant<Bits<6>>,
    /// Lanes in a beat, as a lane count.
    all_lanes: Constant<Bits<7>>,
    min_len: Constant<Bits<16>>,
    ones64: Constant<Bits<BEAT_BYTES>>,
    /// First beat: lanes from the IPv4 header on.
    head_keep: Constant<Bits<BEAT_BYTES>>,
    /// First beat: the masked header bytes.
    masked_ones: Constant<Bits<DATA_BITS>>,
    /// First beat: the register before the IPv4 header, in its first four lanes.
    fold: Constant<Bits<DATA_BITS>>,
    residue: Constant<Bits<32>>,
    check: Constant<Bit>,

    // --- S0: accept a beat, work out what it covers ---
    advance: Signal<Local, Bit>,
    take: Signal<Local, Bit>,
    first: Signal<Local, Bit>,
    total_len_raw: Signal<Local, Bits<16>>,
    total_len: Signal<Local, Bits<16>>,
    rem_now: Signal<Local, Bits<16>>,
    room: Signal<Local, Bits<16>>,
    base7: Signal<Local, Bits<7>>,
    base6: Signal<Local, Bits<6>>,
    cov: Signal<Local, Bits<16>>,
    cov_end7: Signal<Local, Bits<7>>,
    cov_end6: Signal<Local, Bits<6>>,
    lanes_kept: Signal<Local, Bits<7>>,
    last_cov: Signal<Local, Bit>,
    u_beat: Signal<Local, Bits<6>>,
    keep_idx: Signal<Local, Bits<6>>,
    trunc: Signal<Local, Bit>,
    bad_len: Signal<Local, Bit>,
    frame_err: Signal<Local, Bit>,
    lane_keep: Signal<Local, Bits<BEAT_BYTES>>,
    headers_masked: Signal<Local, Bits<DATA_BITS>>,
    d1_next: MaskedLoad<BEAT_BYTES, DATA_BITS>,
    /// Inside a frame (a beat without `tlast` was taken).
    in_frame: DFF<Bit>,
    /// IPv4 packet bytes (ICRC included) not yet seen, at the start of the next beat.
    rem: DFF<Bits<16>>,
    /// The frame's total length is too small.
    len_err: DFF<Bit>,
    /// Zero lanes after the covered bytes in their last beat, kept until `tlast`.
    u_hold: DFF<Bits<6>>,

    // --- S1: mask the beat and multiply by M ---
    v1: DFF<Bit>,
    d1: DFF<Bits<DATA_BITS>>,
    first1: DFF<Bit>,
    act1: DFF<Bit>,
    eof1: DFF<Bit>,
    u1: DFF<Bits<6>>,
    err1: DFF<Bit>,
    beat_matrix: Gf2Map<DATA_BITS, 32>,

    // --- S2: the CRC register ---
    v2: DFF<Bit>,
    p2: DFF<Bits<32>>,
    first2: DFF<Bit>,
    act2: DFF<Bit>,
    eof2: DFF<Bit>,
    u2: DFF<Bits<6>>,
    err2: DFF<Bit>,
    crc_reg: DFF<Bits<32>>,
    reg_next: Signal<Local, Bits<32>>,
    advance_64: Gf2Map<32, 32>,

    // --- U1..U3: undo the zero lanes of the last beat, two steps per stage ---
    v3: DFF<Bit>,
    x3: DFF<Bits<32>>,
    u3: DFF<Bits<6>>,
    err3: DFF<Bit>,
    back_1: Gf2Step<32>,
    back_2: Gf2Step<32>,
    v4: DFF<Bit>,
    x4: DFF<Bits<32>>,
    u4: DFF<Bits<4>>,
    err4: DFF<Bit>,
    back_4: Gf2Step<32>,
    back_8: Gf2Step<32>,
    v5: DFF<Bit>,
    x5: DFF<Bits<32>>,
    u5: DFF<Bits<2>>,
    err5: DFF<Bit>,
    back_16: Gf2Step<32>,
    back_32: Gf2Step<32>,

    // --- result ---
    v6: DFF<Bit>,
    crc6: DFF<Bits<32>>,
    ok6: DFF<Bit>,
    len_err6: DFF<Bit>,
}

/// Little-endian bytes of a 512-bit beat as [`Bits`].
pub fn beat_from_bytes(bytes: &[u8; BEAT_BYTES]) -> Bits<DATA_BITS> {
    let words: Vec<u64> = bytes
        .chunks(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect();
    bits_from_words(&words)
}

/// The bytes of a beat, lane 0 first (the inverse of [`beat_from_bytes`]).
pub fn bytes_from_beat(beat: &Bits<DATA_BITS>) -> [u8; BEAT_BYTES] {
    let mut out = [0u8; BEAT_BYTES];
    for (i, chunk) in out.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(&beat.get_bits::<64>(64 * i).to_u64().to_le_bytes());
    }
    out
}

impl Icrc {
    /// An engine for frames whose IPv4 header starts at byte 14 (Ethernet, no VLAN tag).
    pub fn new(mode: IcrcMode) -> Icrc {
        Icrc::with_ip_offset(mode, 14)
    }

    /// An engine for frames whose IPv4 header starts at byte `ip_offset` of the frame (14
    /// plus 4 per VLAN tag). The masked header bytes must fall in the first beat.
    pub fn with_ip_offset(mode: IcrcMode, ip_offset: usize) -> Icrc {
        assert!(
            ip_offset + MASKED_HEADERS_LEN <= BEAT_BYTES,
            "Icrc: IPv4 at byte {ip_offset} puts masked header bytes past the first beat"
        );
        let lanes = |pick: &dyn Fn(usize) -> Option<u8>| -> Bits<DATA_BITS> {
            let mut beat = [0u8; BEAT_BYTES];
            for (lane, byte) in beat.iter_mut().enumerate() {
                *byte = pick(lane).unwrap_or(0);
            }
            beat_from_bytes(&beat)
        };
        // The register after the initial value and the 8 bytes of 0xFF.
        let before_ip = crc32::update(!0, &[0xFF; 8]).to_le_bytes();
        let head_keep = (u64::MAX << ip_offset).into();
        let masked_ones = lanes(&|lane| {
            (lane >= ip_offset && MASKED_IP_BYTES.contains(&(lane - ip_offset))).then_some(0xFF)
        });
        let fold = lanes(&|lane| {
            (ip_offset..ip_offset + 4)
                .contains(&lane)
                .then(|| before_ip[lane - ip_offset])
        });
        let back = |k: usize| -> Gf2Step<32> {
            Gf2Step::new(crc32::zero_advance(k).inverse().expect("invertible"))
        };
        let trailer = match mode {
            IcrcMode::Generate => 4,
            IcrcMode::Check => 0,
        };
        let beat_matrix: Gf2Matrix = crc32::block_matrix(BEAT_BYTES);
        Icrc {
            clock: Default::default(),
            reset: Default::default(),
            s_axis_tdata: Default::default(),
            s_axis_tkeep: Default::default(),
            s_axis_tlast: Default::default(),
            s_axis_tvalid: Default::default(),
            s_axis_tready: Default::default(),
            m_icrc_valid: Default::default(),
            m_icrc_ready: Default::default(),
            m_icrc_crc: Default::default(),
            m_icrc_ok: Default::default(),
            m_icrc_len_err: Default::default(),
            total_len_at: Constant::new((8 * (ip_offset + TOTAL_LEN_AT) as u64).into()),
            eight: Constant::new(8.into()),
            zero16: Constant::new(0.into()),
            zero7: Constant::new(0.into()),
            zero6: Constant::new(0.into()),
            one6: Constant::new(1.into()),
            trailer: Constant::new(trailer.into()),
            room_first: Constant::new(((BEAT_BYTES - ip_offset) as u64).into()),
            room_rest: Constant::new((BEAT_BYTES as u64).into()),
            base_first7: Constant::new((ip_offset as u64).into()),
            base_first6: Constant::new((ip_offset as u64).into()),
            all_lanes: Constant::new((BEAT_BYTES as u64).into()),
            min_len: Constant::new(MIN_IP_TOTAL_LEN.into()),
            ones64: Constant::new(Bits::<BEAT_BYTES>::mask()),
            head_keep: Constant::new(head_keep),
            masked_ones: Constant::new(masked_ones),
            fold: Constant::new(fold),
            residue: Constant::new(u64::from(crc32::RESIDUE).into()),
            check: Constant::new(mode == IcrcMode::Check),
            advance: Default::default(),
            take: Default::default(),
            first: Default::default(),
            total_len_raw: Default::default(),
            total_len: Default::default(),
            rem_now: Default::default(),
            room: Default::default(),
            base7: Default::default(),
            base6: Default::default(),
            cov: Default::default(),
            cov_end7: Default::default(),
            cov_end6: Default::default(),
            lanes_kept: Default::default(),
            last_cov: Default::default(),
            u_beat: Default::default(),
            keep_idx: Default::default(),
            trunc: Default::default(),
            bad_len: Default::default(),
            frame_err: Default::default(),
            headers_masked: Default::default(),
            in_frame: Default::default(),
            rem: Default::default(),
            len_err: Default::default(),
            u_hold: Default::default(),
            v1: Default::default(),
            d1: Default::default(),
            first1: Default::default(),
            act1: Default::default(),
            eof1: Default::default(),
            u1: Default::default(),
            err1: Default::default(),
            lane_keep: Default::default(),
            d1_next: Default::default(),
            beat_matrix: Gf2Map::new(beat_matrix),
            v2: Default::default(),
            p2: Default::default(),
            first2: Default::default(),
            act2: Default::default(),
            eof2: Default::default(),
            u2: Default::default(),
            err2: Default::default(),
            crc_reg: Default::default(),
            reg_next: Default::default(),
            advance_64: Gf2Map::new(crc32::zero_advance(BEAT_BYTES)),
            v3: Default::default(),
            x3: Default::default(),
            u3: Default::default(),
            err3: Default::default(),
            back_1: back(1),
            back_2: back(2),
            v4: Default::default(),
            x4: Default::default(),
            u4: Default::default(),
            err4: Default::default(),
            back_4: back(4),
            back_8: back(8),
            v5: Default::default(),
            x5: Default::default(),
            u5: Default::default(),
            err5: Default::default(),
            back_16: back(16),
            back_32: back(32),
            v6: Default::default(),
            crc6: Default::default(),
            ok6: Default::default(),
            len_err6: Default::default(),
        }
    }
}

impl Logic for Icrc {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, in_frame, rem, len_err, u_hold, v1, d1, first1, act1, eof1, u1, err1, v2,
            p2, first2, act2, eof2, u2, err2, crc_reg, v3, x3, u3, err3, v4, x4, u4, err4, v5, x5,
            u5, err5, v6, crc6, ok6, len_err6
        );

        // The whole pipeline moves unless a result waits for the consumer.
        self.advance.next = !self.v6.q.val() | self.m_icrc_ready.val();
        self.s_axis_tready.next = self.advance.val();
        self.take.next = self.s_axis_tvalid.val() & self.advance.val();

        // ---- S0: what does this beat cover? All counts are IPv4 packet bytes. ----
        self.first.next = !self.in_frame.q.val();
        self.total_len_raw.next = self
            .s_axis_tdata
            .val()
            .get_bits::<16>(self.total_len_at.val().index());
        // Big endian on the wire: the first byte (bits 7:0 of the raw value) is the high one.
        self.total_len.next = (self.total_len_raw.val() << self.eight.val())
            | (self.total_len_raw.val() >> self.eight.val());
        if self.first.val() {
            self.rem_now.next = self.total_len.val();
            self.room.next = self.room_first.val();
            self.base7.next = self.base_first7.val();
            self.base6.next = self.base_first6.val();
        } else {
            self.rem_now.next = self.rem.q.val();
            self.room.next = self.room_rest.val();
            self.base7.next = self.zero7.val();
            self.base6.next = self.zero6.val();
        }
        // Covered bytes from this beat's first IPv4 lane on.
        if self.rem_now.val() > self.trailer.val() {
            self.cov.next = self.rem_now.val() - self.trailer.val();
        } else {
            self.cov.next = self.zero16.val();
        }
        // Lane after the last covered byte when the covered bytes end in this beat.
        self.cov_end7.next = self.cov.val().get_bits::<7>(0) + self.base7.val();
        self.cov_end6.next = self.cov.val().get_bits::<6>(0) + self.base6.val();
        if self.cov.val() >= self.room.val() {
            self.lanes_kept.next = self.all_lanes.val();
        } else {
            self.lanes_kept.next = self.cov_end7.val();
        }
        self.last_cov.next =
            (self.cov.val() != self.zero16.val()) & (self.cov.val() <= self.room.val());
        self.u_beat.next = self.zero6.val() - self.cov_end6.val();
        // The frame must hold the whole IPv4 packet: check the lane of its last byte.
        self.keep_idx.next =
            self.rem_now.val().get_bits::<6>(0) + self.base6.val() - self.one6.val();
        self.trunc.next = (self.rem_now.val() > self.room.val())
            | ((self.rem_now.val() != self.zero16.val())
                & !self.s_axis_tkeep.val().get_bit(self.keep_idx.val().index()));
        self.bad_len.next = self.total_len.val() < self.min_len.val();
        if self.first.val() {
            self.frame_err.next = self.bad_len.val();
        } else {
            self.frame_err.next = self.len_err.q.val();
        }

        // Zero the lanes outside the covered bytes; on the first beat, also the Ethernet
        // header, force the masked header bytes to ones and fold in the register's start.
        // `MaskedLoad` makes the zeroing the registers' synchronous reset and `advance` their
        // clock enable.
        if self.first.val() {
            self.lane_keep.next =
                !(self.ones64.val() << self.lanes_kept.val()) & self.head_keep.val();
            self.headers_masked.next =
                (self.s_axis_tdata.val() | self.masked_ones.val()) ^ self.fold.val();
        } else {
            self.lane_keep.next = !(self.ones64.val() << self.lanes_kept.val());
            self.headers_masked.next = self.s_axis_tdata.val();
        }
        self.d1_next.x.next = self.headers_masked.val();
        self.d1_next.keep.next = self.lane_keep.val();
        self.d1_next.hold.next = !self.advance.val();
        self.d1_next.q.next = self.d1.q.val();
        self.d1.d.next = self.d1_next.y.val();

        if self.take.val() {
            self.in_frame.d.next = !self.s_axis_tlast.val();
            if self.rem_now.val() > self.room.val() {
                self.rem.d.next = self.rem_now.val() - self.room.val();
            } else {
                self.rem.d.next = self.zero16.val();
            }
            self.len_err.d.next = self.frame_err.val();
            if self.last_cov.val() {
                self.u_hold.d.next = self.u_beat.val();
            }
        }
        if self.advance.val() {
            self.v1.d.next = self.take.val();
            self.first1.d.next = self.first.val();
            self.act1.d.next = self.cov.val() != self.zero16.val();
            self.eof1.d.next = self.s_axis_tlast.val();
            if self.last_cov.val() {
                self.u1.d.next = self.u_beat.val();
            } else {
                self.u1.d.next = self.u_hold.q.val();
            }
            self.err1.d.next = self.frame_err.val() | (self.s_axis_tlast.val() & self.trunc.val());
        }

        // ---- S1: multiply by M. ----
        self.beat_matrix.x.next = self.d1.q.val();
        if self.advance.val() {
            self.v2.d.next = self.v1.q.val();
            self.p2.d.next = self.beat_matrix.y.val();
            self.first2.d.next = self.first1.q.val();
            self.act2.d.next = self.act1.q.val();
            self.eof2.d.next = self.eof1.q.val();
            self.u2.d.next = self.u1.q.val();
            self.err2.d.next = self.err1.q.val();
        }

        // ---- S2: the CRC register; a frame starts from zero. ----
        self.advance_64.x.next = self.crc_reg.q.val();
        if self.first2.q.val() {
            self.reg_next.next = self.p2.q.val();
        } else if self.act2.q.val() {
            self.reg_next.next = self.advance_64.y.val() ^ self.p2.q.val();
        } else {
            self.reg_next.next = self.crc_reg.q.val();
        }
        if self.advance.val() {
            if self.v2.q.val() {
                self.crc_reg.d.next = self.reg_next.val();
            }
            self.v3.d.next = self.v2.q.val() & self.eof2.q.val();
            self.x3.d.next = self.reg_next.val();
            self.u3.d.next = self.u2.q.val();
            self.err3.d.next = self.err2.q.val();
        }

        // ---- U1: undo 1 and 2 zero bytes ----
        self.back_1.x.next = self.x3.q.val();
        self.back_1.en.next = self.u3.q.val().get_bit(0);
        self.back_2.x.next = self.back_1.y.val();
        self.back_2.en.next = self.u3.q.val().get_bit(1);
        if self.advance.val() {
            self.v4.d.next = self.v3.q.val();
            self.x4.d.next = self.back_2.y.val();
            self.u4.d.next = self.u3.q.val().get_bits::<4>(2);
            self.err4.d.next = self.err3.q.val();
        }

        // ---- U2: undo 4 and 8 ----
        self.back_4.x.next = self.x4.q.val();
        self.back_4.en.next = self.u4.q.val().get_bit(0);
        self.back_8.x.next = self.back_4.y.val();
        self.back_8.en.next = self.u4.q.val().get_bit(1);
        if self.advance.val() {
            self.v5.d.next = self.v4.q.val();
            self.x5.d.next = self.back_8.y.val();
            self.u5.d.next = self.u4.q.val().get_bits::<2>(2);
            self.err5.d.next = self.err4.q.val();
        }

        // ---- U3: undo 16 and 32, then the result register ----
        self.back_16.x.next = self.x5.q.val();
        self.back_16.en.next = self.u5.q.val().get_bit(0);
        self.back_32.x.next = self.back_16.y.val();
        self.back_32.en.next = self.u5.q.val().get_bit(1);
        if self.advance.val() {
            self.v6.d.next = self.v5.q.val();
            self.crc6.d.next = !self.back_32.y.val();
            self.ok6.d.next = !self.err5.q.val()
                & (!self.check.val() | (self.back_32.y.val() == self.residue.val()));
            self.len_err6.d.next = self.err5.q.val();
        }
        self.m_icrc_valid.next = self.v6.q.val();
        self.m_icrc_crc.next = self.crc6.q.val();
        self.m_icrc_ok.next = self.ok6.q.val();
        self.m_icrc_len_err.next = self.len_err6.q.val();

        // ---- synchronous reset: no frame in flight, no result pending ----
        if self.reset.val() {
            self.in_frame.d.next = false;
            self.v1.d.next = false;
            self.v2.d.next = false;
            self.v3.d.next = false;
            self.v4.d.next = false;
            self.v5.d.next = false;
            self.v6.d.next = false;
        }
    }
}

/// The software reference of [`Icrc`], for benches here and in other crates: what the engine
/// must report for a frame, and frames as a MAC hands them over.
pub mod model {
    use rocenic_proto::wire::{compute_icrc, verify_icrc};

    use super::{IcrcMode, MASKED_IP_BYTES, MIN_IP_TOTAL_LEN, TOTAL_LEN_AT};
    use crate::bench::Rng;

    /// IPv4 offset of the frames the model describes (Ethernet without VLAN tag).
    pub const IP_AT: usize = 14;

    /// The final CRC over bytes followed by their own CRC-32.
    pub const CHECK_RESIDUE: u32 = 0x2144_DF1C;

    /// What an [`Icrc`](super::Icrc) reports for one frame.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Outcome {
        pub crc: u32,
        pub ok: bool,
        pub len_err: bool,
    }

    /// The IPv4 total length field of a frame, if the frame holds it.
    pub fn total_len(frame: &[u8]) -> Option<usize> {
        let at = IP_AT + TOTAL_LEN_AT;
        frame
            .get(at..at + 2)
            .map(|b| usize::from(u16::from_be_bytes([b[0], b[1]])))
    }

    /// What the engine must report for `frame`, from `rocenic_proto`'s ICRC. `crc` is
    /// unspecified (0 here) on a length error, and in Check mode it is [`CHECK_RESIDUE`]
    /// exactly when `ok`.
    pub fn expected(mode: IcrcMode, frame: &[u8]) -> Outcome {
        let len_err = match total_len(frame) {
            Some(t) => t < MIN_IP_TOTAL_LEN as usize || frame.len() < IP_AT + t,
            None => true,
        };
        if len_err {
            return Outcome {
                crc: 0,
                ok: false,
                len_err: true,
            };
        }
        let ip = &frame[IP_AT..IP_AT + total_len(frame).expect("checked")];
        match mode {
            IcrcMode::Generate => Outcome {
                crc: compute_icrc(&ip[..ip.len() - 4]),
                ok: true,
                len_err: false,
            },
            IcrcMode::Check => Outcome {
                crc: CHECK_RESIDUE,
                ok: verify_icrc(ip).is_ok(),
                len_err: false,
            },
        }
    }

    /// Checks an engine's report for `frame` against [`expected`]; the error says what
    /// differs.
    pub fn check(mode: IcrcMode, frame: &[u8], got: Outcome) -> Result<(), String> {
        let want = expected(mode, frame);
        let differs = || {
            Err(format!(
                "{mode:?}, frame of {} bytes, total_len {:?}: got {got:08x?}, want {want:08x?}",
                frame.len(),
                total_len(frame)
            ))
        };
        if (got.ok, got.len_err) != (want.ok, want.len_err) {
            return differs();
        }
        let crc_right = match (mode, want.len_err) {
            (_, true) => true,
            (IcrcMode::Generate, false) => got.crc == want.crc,
            (IcrcMode::Check, false) => (got.crc == CHECK_RESIDUE) == want.ok,
        };
        if !crc_right {
            return differs();
        }
        Ok(())
    }

    /// A received frame as a MAC may hand it over: padded to 60 bytes, sometimes with
    /// trailing bytes, and damaged in one of several ways (or not at all).
    pub fn received(rng: &mut Rng, mut f: Vec<u8>) -> Vec<u8> {
        let ip_end = f.len();
        if f.len() < 60 {
            f.resize(60, 0);
        }
        if rng.percent(20) {
            let extra = rng.below(70) as usize;
            f.extend(rng.bytes(extra));
        }
        match rng.below(6) {
            // Intact.
            0 | 1 => {}
            // A random bit of the IPv4 packet (masked header bytes included).
            2 => {
                let at = IP_AT + rng.below((ip_end - IP_AT) as u64) as usize;
                f[at] ^= 1 << rng.below(8);
            }
            // A masked header byte only: TOS, TTL, checksums, BTH byte 4.
            3 => {
                let at = IP_AT + MASKED_IP_BYTES[rng.below(7) as usize];
                f[at] ^= 0xFF;
            }
            // The ICRC itself.
            4 => f[ip_end - 1 - rng.below(4) as usize] ^= 0x80,
            // The Ethernet header: not covered.
            _ => {
                let at = rng.below(IP_AT as u64) as usize;
                f[at] ^= 0x40;
            }
        }
        f
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use rocenic_proto::wire::{compute_icrc, Opcode};

    use super::model::{check, received, Outcome, IP_AT};
    use super::*;
    use crate::bench::{
        frame_beats, random_payload_len as payload_len, random_roce_frame as roce_frame, Beat,
        Bench, Pattern, Rng,
    };

    struct Run {
        outcomes: Vec<Outcome>,
        /// Cycle of each frame's `tlast` transfer and of its result transfer.
        last_at: Vec<u64>,
        result_at: Vec<u64>,
    }

    /// Streams `frames` through an engine under `pattern`; returns each frame's result.
    fn run(mode: IcrcMode, frames: &[Vec<u8>], pattern: Pattern, seed: u64) -> Run {
        let mut rng = Rng::new(seed);
        let mut bench = Bench::new(Icrc::new(mode), |u| &mut u.clock);
        bench.uut.reset.next = true;
        bench.tick();
        bench.tick();
        bench.uut.reset.next = false;
        let mut beats: VecDeque<Beat> = frames
            .iter()
            .flat_map(|f| frame_beats(f, || rng.byte()))
            .collect();
        let mut current: Option<Beat> = None;
        let mut out = Run {
            outcomes: vec![],
            last_at: vec![],
            result_at: vec![],
        };
        let limit = 100 + 200 * (beats.len() as u64 + 8 * frames.len() as u64);
        while out.outcomes.len() < frames.len() {
            assert!(
                bench.cycle() < limit,
                "no progress by cycle {limit} (seed {seed})"
            );
            if current.is_none() && !beats.is_empty() && rng.percent(pattern.valid_pct) {
                current = beats.pop_front();
                let beat = current.as_ref().expect("beat");
                bench.uut.s_axis_tdata.next = beat.tdata();
                bench.uut.s_axis_tkeep.next = beat.tkeep();
                bench.uut.s_axis_tlast.next = beat.last;
            }
            bench.uut.s_axis_tvalid.next = current.is_some();
            bench.uut.m_icrc_ready.next = rng.percent(pattern.ready_pct);
            bench.settle();
            let u = &bench.uut;
            // A transfer consumes the beat; a frame's last transfer is timed.
            if u.s_axis_tvalid.val()
                && u.s_axis_tready.val()
                && current.take().expect("valid beat").last
            {
                out.last_at.push(bench.cycle());
            }
            if u.m_icrc_valid.val() && u.m_icrc_ready.val() {
                out.outcomes.push(Outcome {
                    crc: u.m_icrc_crc.val().to_u32(),
                    ok: u.m_icrc_ok.val(),
                    len_err: u.m_icrc_len_err.val(),
                });
                out.result_at.push(bench.cycle());
            }
            bench.tick();
        }
        out
    }

    fn check_run(mode: IcrcMode, frames: &[Vec<u8>], pattern: Pattern, seed: u64) -> Run {
        let r = run(mode, frames, pattern, seed);
        for (i, (frame, got)) in frames.iter().zip(&r.outcomes).enumerate() {
            if let Err(e) = check(mode, frame, *got) {
                panic!("frame {i} of seed {seed}, {pattern:?}: {e}");
            }
        }
        r
    }

    #[test]
    fn generates_the_reference_icrc_for_every_opcode() {
        let mut rng = Rng::new(1);
        let frames: Vec<Vec<u8>> = Opcode::all()
            .map(|op| {
                let len = payload_len(&mut rng);
                let mut f = roce_frame(&mut rng, op, len);
                // The ICRC field is a placeholder on TX: its value must not matter.
                let n = f.len();
                f[n - 4..].copy_from_slice(&rng.bytes(4));
                f
            })
            .collect();
        check_run(IcrcMode::Generate, &frames, Pattern::SWEEP[0], 1);
    }

    #[test]
    fn full_rate_has_no_bubbles_and_fixed_latency() {
        let mut rng = Rng::new(2);
        // ACK-sized single-beat frames back to back, then multi-beat ones.
        let mut frames: Vec<Vec<u8>> = (0..6)
            .map(|_| roce_frame(&mut rng, Opcode::Acknowledge, 0))
            .collect();
        frames.extend((0..4).map(|i| roce_frame(&mut rng, Opcode::SendOnly, 100 * i + 7)));
        let beats: u64 = frames.iter().map(|f| f.len().div_ceil(64) as u64).sum();
        let r = check_run(IcrcMode::Generate, &frames, Pattern::SWEEP[0], 2);
        // The stream went through at one beat per cycle: the last tlast came `beats` cycles
        // after reset (2 cycles).
        assert_eq!(*r.last_at.last().expect("frames"), 2 + beats - 1);
        for (l, res) in r.last_at.iter().zip(&r.result_at) {
            assert_eq!(res - l, 6, "latency from tlast transfer to result");
        }
    }

    #[test]
    fn check_mode_accepts_good_and_rejects_corrupted_frames() {
        let mut rng = Rng::new(3);
        let ops: Vec<Opcode> = Opcode::all().collect();
        let frames: Vec<Vec<u8>> = (0..60)
            .map(|i| {
                let len = payload_len(&mut rng);
                let f = roce_frame(&mut rng, ops[i % ops.len()], len);
                received(&mut rng, f)
            })
            .collect();
        let r = check_run(IcrcMode::Check, &frames, Pattern::SWEEP[3], 3);
        let good = r.outcomes.iter().filter(|o| o.ok).count();
        assert!(
            good > 20 && good < 55,
            "a mix of good and bad frames: {good}"
        );
    }

    /// Many random frames, every opcode, payloads up to past 4096, under every pattern, in
    /// both modes: the broad sweep against the reference.
    #[test]
    fn random_frames_under_every_pattern() {
        let ops: Vec<Opcode> = Opcode::all().collect();
        for (k, pattern) in Pattern::SWEEP.into_iter().enumerate() {
            for mode in [IcrcMode::Generate, IcrcMode::Check] {
                let seed = 1000 + 10 * k as u64 + (mode == IcrcMode::Check) as u64;
                let mut rng = Rng::new(seed);
                let frames: Vec<Vec<u8>> = (0..40)
                    .map(|_| {
                        let op = ops[rng.below(ops.len() as u64) as usize];
                        let len = payload_len(&mut rng);
                        let f = roce_frame(&mut rng, op, len);
                        match mode {
                            IcrcMode::Generate => f,
                            IcrcMode::Check => received(&mut rng, f),
                        }
                    })
                    .collect();
                check_run(mode, &frames, pattern, seed);
            }
        }
    }

    #[test]
    fn any_length_and_any_tail_in_both_modes() {
        // Not RoCE-aligned: random bytes with 64 consecutive total lengths (each plus 0-3
        // beats), so the covered bytes end in every lane of the last beat and every
        // un-advance count is used.
        let mut rng = Rng::new(4);
        for mode in [IcrcMode::Generate, IcrcMode::Check] {
            let frames: Vec<Vec<u8>> = (0..64)
                .map(|i| {
                    let tl = 44 + i + 64 * rng.below(4) as usize;
                    let extra = rng.below(3) as usize;
                    let mut f = rng.bytes(IP_AT + tl + extra);
                    f[IP_AT + 2..IP_AT + 4].copy_from_slice(&(tl as u16).to_be_bytes());
                    if mode == IcrcMode::Check && rng.percent(50) {
                        let icrc = compute_icrc(&f[IP_AT..IP_AT + tl - 4]);
                        f[IP_AT + tl - 4..IP_AT + tl].copy_from_slice(&icrc.to_le_bytes());
                    }
                    f
                })
                .collect();
            check_run(mode, &frames, Pattern::SWEEP[0], 4);
        }
    }

    #[test]
    fn length_errors_are_reported() {
        let mut rng = Rng::new(5);
        let mut frames = vec![];
        for i in 0..24 {
            let len = payload_len(&mut rng) % 500;
            let mut f = roce_frame(&mut rng, Opcode::RdmaWriteOnly, len);
            match i % 4 {
                // Cut short, anywhere (even inside the Ethernet header).
                0 | 1 => {
                    let keep = 1 + rng.below(f.len() as u64 - 1) as usize;
                    f.truncate(keep);
                }
                // Total length below the headers.
                2 => f[IP_AT + 2..IP_AT + 4].copy_from_slice(&(rng.below(44) as u16).to_be_bytes()),
                // Total length past the frame.
                _ => {
                    let tl = (f.len() - IP_AT + 1 + rng.below(200) as usize) as u16;
                    f[IP_AT + 2..IP_AT + 4].copy_from_slice(&tl.to_be_bytes());
                }
            }
            frames.push(f);
        }
        for mode in [IcrcMode::Generate, IcrcMode::Check] {
            let r = check_run(mode, &frames, Pattern::SWEEP[1], 5);
            assert!(r.outcomes.iter().all(|o| o.len_err && !o.ok));
        }
    }

    #[test]
    fn idle_and_backpressure_sweep() {
        for (k, pattern) in Pattern::SWEEP.into_iter().enumerate() {
            let seed = 100 + k as u64;
            let mut rng = Rng::new(seed);
            let ops: Vec<Opcode> = Opcode::all().collect();
            let frames: Vec<Vec<u8>> = (0..12)
                .map(|_| {
                    let op = ops[rng.below(ops.len() as u64) as usize];
                    let len = rng.below(400) as usize;
                    roce_frame(&mut rng, op, len)
                })
                .collect();
            for mode in [IcrcMode::Generate, IcrcMode::Check] {
                check_run(mode, &frames, pattern, seed);
            }
        }
    }

    #[test]
    fn reset_drops_a_frame_in_flight() {
        let mut rng = Rng::new(6);
        let frame = roce_frame(&mut rng, Opcode::SendOnly, 500);
        let mut bench = Bench::new(Icrc::new(IcrcMode::Generate), |u| &mut u.clock);
        bench.uut.m_icrc_ready.next = true;
        let beats = frame_beats(&frame, || 0);
        // Half a frame, then reset.
        for beat in &beats[..4] {
            bench.uut.s_axis_tdata.next = beat.tdata();
            bench.uut.s_axis_tkeep.next = beat.tkeep();
            bench.uut.s_axis_tlast.next = beat.last;
            bench.uut.s_axis_tvalid.next = true;
            bench.tick();
        }
        bench.uut.s_axis_tvalid.next = false;
        bench.uut.reset.next = true;
        bench.tick();
        bench.uut.reset.next = false;
        bench.settle();
        let mut results = vec![];
        let mut queue: VecDeque<Beat> = beats.into_iter().collect();
        while results.is_empty() {
            assert!(bench.cycle() < 200, "no result");
            if let Some(beat) = queue.front() {
                bench.uut.s_axis_tdata.next = beat.tdata();
                bench.uut.s_axis_tkeep.next = beat.tkeep();
                bench.uut.s_axis_tlast.next = beat.last;
            }
            bench.uut.s_axis_tvalid.next = !queue.is_empty();
            bench.settle();
            if bench.uut.s_axis_tvalid.val() && bench.uut.s_axis_tready.val() {
                queue.pop_front();
            }
            if bench.uut.m_icrc_valid.val() {
                results.push(bench.uut.m_icrc_crc.val().to_u32());
            }
            bench.tick();
        }
        assert_eq!(results, vec![compute_icrc(&frame[IP_AT..frame.len() - 4])]);
    }

    #[test]
    fn refuses_an_ip_offset_past_the_first_beat() {
        assert!(std::panic::catch_unwind(|| Icrc::with_ip_offset(IcrcMode::Check, 30)).is_err());
        let _ = Icrc::with_ip_offset(IcrcMode::Check, 22); // two VLAN tags
    }
}
