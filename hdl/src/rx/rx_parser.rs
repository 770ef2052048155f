//! `RxParser`: the verdict on every received frame, at line rate: the header checks of
//! `rocenic_proto::wire::RoceRepr::parse`, the ICRC (an [`Icrc`] in Check mode on the same
//! stream), the MAC's error flag and the destination IPv4 address, plus what the buffer
//! behind it needs to know about the frame (payload length, header layout, frame length).
//!
//! ```text
//!  MAC RX --+--> first beat: Ethernet/IPv4/UDP/BTH checks, checksum sum, lengths --+
//!  (no      |    every beat: byte count                                           |
//!  ready)   |    tlast: frame long enough? checksum folded --> 5 stages ----------+--> m_v_*
//!           +--> Icrc (Check) -------------------------------------------------------^
//! ```
//!
//! # Interface
//!
//! - `s_axis_*`: the MAC RX stream, 64 bytes per beat, byte 0 of the frame in `tdata[7:0]`,
//!   no FCS, **no backpressure**: a beat is taken in every cycle where `tvalid` is high.
//!   `tkeep` is contiguous from lane 0 and non-zero, read on the `tlast` beat; `tuser` on the
//!   `tlast` beat marks a frame the MAC saw damaged.
//! - `local_ip`: this port's IPv4 address as a number (`a.b.c.d` is `0xaabbccdd`); 0 accepts
//!   any destination, as the model does before an address is configured.
//! - `m_v_*`: one verdict per frame, valid for the one cycle `m_v_valid`, exactly 6 cycles
//!   after the cycle in which the frame's `tlast` beat arrived (the [`Icrc`]'s latency, which
//!   the header checks are delayed to match). Verdicts come in frame order, back-to-back
//!   single-beat frames included.
//!   - `malformed`: a check of `RoceRepr::parse` other than the ICRC failed (model:
//!     `Counter::MalformedDrops`).
//!   - `icrc_bad`: the ICRC is wrong (meaningful when not `malformed`; `Counter::IcrcDrops`).
//!   - `mac_err`: `tuser` was set on the last beat.
//!   - `ip_bad`: `local_ip` is set and the destination address differs (the model counts
//!     this as `Counter::UnknownQpDrops`, after the parse succeeded).
//!   - `payload_len`: payload bytes without pad (valid when not `malformed`).
//!   - `layout`: the header layout of the opcode ([`Layout`]), which fixes where the
//!     extension headers and the payload are.
//!   - `frame_len`: bytes in the frame as received (Ethernet padding included, saturating at
//!     2^17 - 1), what `Counter::RxBytes` counts.
//!
//! # The checks (what `RoceRepr::parse` refuses, all of it)
//!
//! Ethertype 0x0800; IPv4 version 4 with IHL 5 (no options); total length at least 44 plus
//! the opcode's extension headers; IPv4 header checksum (ones-complement sum of the ten
//! words is 0xFFFF); no more-fragments flag and fragment offset 0; protocol UDP; UDP
//! destination port 4791; UDP length = total length - 20; BTH transport version 0; a known
//! RC opcode (0x00-0x14, 0x16, 0x17); no payload bytes for opcodes without payload; the pad
//! count consistent with the payload (payload + pad a whole number of 4-byte words, pad not
//! larger than what follows the headers); the frame holds the whole IPv4 packet. The reserved
//! IPv4 flag bit, TOS, TTL, identification, the UDP checksum, P_Key and the BTH reserved bits
//! are not checked, as in `parse`. Every header byte a check reads lies within the IPv4
//! total length, so for a frame shorter than its headers the length check fails whatever
//! the unkept lanes hold.
//!
//! All header checks read the first beat (the headers up to the BTH end at byte 54); the
//! extension headers only matter through their length, fixed by the opcode.

use rocenic_proto::wire::{ExtHeader, Opcode, ROCE_HEADERS_LEN, ROCE_V2_PORT};

use crate::common::byte_swap::ByteSwap;
use crate::common::icrc::{Icrc, IcrcMode, BEAT_BYTES, DATA_BITS};
use crate::prelude::*;

/// Where the extension headers end and the payload starts: the opcode fixes it. The RTL
/// carries the layout as a 3-bit code (the enum's value).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// BTH only: 54 bytes of headers.
    Bare = 0,
    /// One 4-byte header (ImmDt, IETH or AETH): 58 bytes.
    Four = 1,
    /// AETH + AtomicAckETH: 66 bytes.
    AtomicAck = 2,
    /// RETH: 70 bytes.
    Reth = 3,
    /// RETH + ImmDt: 74 bytes.
    RethImm = 4,
    /// AtomicETH: 82 bytes.
    Atomic = 5,
}

impl Layout {
    pub const ALL: [Layout; 6] = [
        Layout::Bare,
        Layout::Four,
        Layout::AtomicAck,
        Layout::Reth,
        Layout::RethImm,
        Layout::Atomic,
    ];

    /// The layout of a known opcode.
    pub fn of(opcode: Opcode) -> Layout {
        use ExtHeader::*;
        match opcode.ext_headers() {
            [] => Layout::Bare,
            [ImmDt] | [Ieth] | [Aeth] => Layout::Four,
            [Aeth, AtomicAckEth] => Layout::AtomicAck,
            [Reth] => Layout::Reth,
            [Reth, ImmDt] => Layout::RethImm,
            [AtomicEth] => Layout::Atomic,
            other => panic!("no layout for the headers {other:?} of {opcode:?}"),
        }
    }

    /// Frame bytes up to the end of the extension headers: where the payload starts.
    pub fn header_len(self) -> usize {
        ROCE_HEADERS_LEN
            + match self {
                Layout::Bare => 0,
                Layout::Four => 4,
                Layout::AtomicAck => 12,
                Layout::Reth => 16,
                Layout::RethImm => 20,
                Layout::Atomic => 28,
            }
    }

    pub fn from_code(code: u32) -> Option<Layout> {
        Layout::ALL.get(code as usize).copied()
    }
}

/// Bit `op` set for each opcode in 0..32 that `pick` selects (every RC opcode is below 32).
fn opcode_mask(pick: impl Fn(Opcode) -> bool) -> Bits<32> {
    let mut m = 0u64;
    for op in Opcode::all() {
        let v = u8::from(op);
        assert!(v < 32, "RC opcodes are below 32");
        if pick(op) {
            m |= 1 << v;
        }
    }
    m.into()
}

/// Frame bytes of the Ethernet header, then IPv4 offsets of the fields the checks read.
const ETH_LEN: usize = 14;
const IP_HEADER_LEN: u64 = 20;
/// The IPv4 total length counts IPv4, UDP, BTH and ICRC at least.
const MIN_TOTAL_LEN: usize = 20 + 8 + 12 + 4;

/// The verdict engine; see the [module docs](self).
#[derive(LogicBlock)]
pub struct RxParser {
    pub clock: Signal<In, Clock>,
    /// Synchronous reset, active high: forgets the frame in flight and pending verdicts.
    pub reset: Signal<In, Bit>,
    pub s_axis_tdata: Signal<In, Bits<DATA_BITS>>,
    pub s_axis_tkeep: Signal<In, Bits<BEAT_BYTES>>,
    pub s_axis_tlast: Signal<In, Bit>,
    pub s_axis_tvalid: Signal<In, Bit>,
    /// On the `tlast` beat: the MAC saw a bad FCS or another error.
    pub s_axis_tuser: Signal<In, Bit>,
    /// This port's IPv4 address (`a.b.c.d` = `0xaabbccdd`); 0 accepts any.
    pub local_ip: Signal<In, Bits<32>>,
    pub m_v_valid: Signal<Out, Bit>,
    pub m_v_malformed: Signal<Out, Bit>,
    pub m_v_icrc_bad: Signal<Out, Bit>,
    pub m_v_mac_err: Signal<Out, Bit>,
    pub m_v_ip_bad: Signal<Out, Bit>,
    pub m_v_payload_len: Signal<Out, Bits<16>>,
    pub m_v_layout: Signal<Out, Bits<3>>,
    pub m_v_frame_len: Signal<Out, Bits<17>>,

    // --- constants (exact widths for the Verilog) ---
    ethertype_raw: Constant<Bits<16>>,
    ver_ihl: Constant<Bits<8>>,
    frag_mask: Constant<Bits<8>>,
    zero8: Constant<Bits<8>>,
    proto_udp: Constant<Bits<8>>,
    dport_raw: Constant<Bits<16>>,
    zero4: Constant<Bits<4>>,
    zero3: Constant<Bits<3>>,
    zero32: Constant<Bits<32>>,
    byte16: Constant<Bits<16>>,
    byte17: Constant<Bits<17>>,
    three16: Constant<Bits<16>>,
    zero16: Constant<Bits<16>>,
    ip_hdr_len: Constant<Bits<16>>,
    eth_len17: Constant<Bits<17>>,
    eight: Constant<Bits<5>>,
    sixteen: Constant<Bits<5>>,
    word20: Constant<Bits<20>>,
    ones16: Constant<Bits<16>>,
    lanes64: Constant<Bits<17>>,
    sat17: Constant<Bits<17>>,
    zero17: Constant<Bits<17>>,
    one17: Constant<Bits<17>>,
    zero6: Constant<Bits<6>>,
    s6_32: Constant<Bits<6>>,
    s6_16: Constant<Bits<6>>,
    s6_8: Constant<Bits<6>>,
    s6_4: Constant<Bits<6>>,
    s6_2: Constant<Bits<6>>,
    s6_1: Constant<Bits<6>>,
    s17_32: Constant<Bits<17>>,
    s17_16: Constant<Bits<17>>,
    s17_8: Constant<Bits<17>>,
    s17_4: Constant<Bits<17>>,
    s17_2: Constant<Bits<17>>,
    s17_1: Constant<Bits<17>>,
    known: Constant<Bits<32>>,
    has_payload: Constant<Bits<32>>,
    /// Opcodes of each layout but `Bare`, and each layout's code and smallest total length.
    ops_four: Constant<Bits<32>>,
    ops_atomic_ack: Constant<Bits<32>>,
    ops_reth: Constant<Bits<32>>,
    ops_reth_imm: Constant<Bits<32>>,
    ops_atomic: Constant<Bits<32>>,
    code_bare: Constant<Bits<3>>,
    code_four: Constant<Bits<3>>,
    code_atomic_ack: Constant<Bits<3>>,
    code_reth: Constant<Bits<3>>,
    code_reth_imm: Constant<Bits<3>>,
    code_atomic: Constant<Bits<3>>,
    min_bare: Constant<Bits<16>>,
    min_four: Constant<Bits<16>>,
    min_atomic_ack: Constant<Bits<16>>,
    min_reth: Constant<Bits<16>>,
    min_reth_imm: Constant<Bits<16>>,
    min_atomic: Constant<Bits<16>>,
    one: Constant<Bit>,

    icrc: Icrc,
    local_swap: ByteSwap<4, 32>,

    // --- first beat ---
    first: Signal<Local, Bit>,
    take: Signal<Local, Bit>,
    local_raw: Signal<Local, Bits<32>>,
    total_len: Signal<Local, Bits<16>>,
    total_len17: Signal<Local, Bits<17>>,
    udp_len: Signal<Local, Bits<16>>,
    op5: Signal<Local, Bits<5>>,
    pad16: Signal<Local, Bits<16>>,
    layout: Signal<Local, Bits<3>>,
    min_len: Signal<Local, Bits<16>>,
    padded: Signal<Local, Bits<16>>,
    fields_ok: Signal<Local, Bit>,
    len_ok: Signal<Local, Bit>,
    sum: Signal<Local, Bits<20>>,
    /// Bits read along with the 16-bit fields that the checks do not need.
    unused_raw: Signal<Local, Bits<2>>,
    h_ok: DFF<Bit>,
    h_total17: DFF<Bits<17>>,
    h_payload_len: DFF<Bits<16>>,
    h_layout: DFF<Bits<3>>,
    h_ip_bad: DFF<Bit>,
    h_sum: DFF<Bits<20>>,

    // --- every beat: bytes so far ---
    in_frame: DFF<Bit>,
    bytes_before: DFF<Bits<17>>,
    base: Signal<Local, Bits<17>>,
    p5: Signal<Local, Bits<6>>,
    p4: Signal<Local, Bits<6>>,
    p3: Signal<Local, Bits<6>>,
    p2: Signal<Local, Bits<6>>,
    p1: Signal<Local, Bits<6>>,
    n5: Signal<Local, Bits<17>>,
    n4: Signal<Local, Bits<17>>,
    n3: Signal<Local, Bits<17>>,
    n2: Signal<Local, Bits<17>>,
    n1: Signal<Local, Bits<17>>,
    n0: Signal<Local, Bits<17>>,
    have: Signal<Local, Bits<17>>,
    e_valid: DFF<Bit>,
    e_have: DFF<Bits<17>>,
    e_mac: DFF<Bit>,

    // --- the cycle after tlast: fold the checksum, compare the lengths ---
    fold1: Signal<Local, Bits<20>>,
    fold2: Signal<Local, Bits<20>>,
    unused_fold: Signal<Local, Bits<4>>,
    malformed: Signal<Local, Bit>,

    // --- delay to the ICRC's latency: stages 2 to 6 after tlast ---
    v: [DFF<Bit>; 5],
    mal: [DFF<Bit>; 5],
    mac: [DFF<Bit>; 5],
    ipb: [DFF<Bit>; 5],
    plen: [DFF<Bits<16>>; 5],
    lay: [DFF<Bits<3>>; 5],
    flen: [DFF<Bits<17>>; 5],

    unused_icrc_ready: Signal<Local, Bit>,
    unused_icrc_valid: Signal<Local, Bit>,
    unused_icrc_crc: Signal<Local, Bits<32>>,
    unused_icrc_len_err: Signal<Local, Bit>,
}

impl Default for RxParser {
    fn default() -> Self {
        RxParser::new()
    }
}

impl RxParser {
    pub fn new() -> RxParser {
        let ops = |l: Layout| Constant::new(opcode_mask(|op| Layout::of(op) == l));
        let code = |l: Layout| Constant::new((l as u64).into());
        // The smallest IPv4 total length with the layout's headers.
        let min = |l: Layout| {
            Constant::new(((MIN_TOTAL_LEN + l.header_len() - ROCE_HEADERS_LEN) as u64).into())
        };
        RxParser {
            clock: Default::default(),
            reset: Default::default(),
            s_axis_tdata: Default::default(),
            s_axis_tkeep: Default::default(),
            s_axis_tlast: Default::default(),
            s_axis_tvalid: Default::default(),
            s_axis_tuser: Default::default(),
            local_ip: Default::default(),
            m_v_valid: Default::default(),
            m_v_malformed: Default::default(),
            m_v_icrc_bad: Default::default(),
            m_v_mac_err: Default::default(),
            m_v_ip_bad: Default::default(),
            m_v_payload_len: Default::default(),
            m_v_layout: Default::default(),
            m_v_frame_len: Default::default(),
            // Lane order: wire byte 12 (0x08) in the low bits.
            ethertype_raw: Constant::new(0x0008.into()),
            ver_ihl: Constant::new(0x45.into()),
            // More-fragments and the fragment offset's top bits; the reserved bit and DF
            // are not checked.
            frag_mask: Constant::new(0x3F.into()),
            zero8: Constant::new(0.into()),
            proto_udp: Constant::new(17.into()),
            dport_raw: Constant::new(u64::from(ROCE_V2_PORT.swap_bytes()).into()),
            zero4: Constant::new(0.into()),
            zero3: Constant::new(0.into()),
            zero32: Constant::new(0.into()),
            byte16: Constant::new(0xFF.into()),
            byte17: Constant::new(0xFF.into()),
            three16: Constant::new(3.into()),
            zero16: Constant::new(0.into()),
            ip_hdr_len: Constant::new(IP_HEADER_LEN.into()),
            eth_len17: Constant::new((ETH_LEN as u64).into()),
            eight: Constant::new(8.into()),
            sixteen: Constant::new(16.into()),
            word20: Constant::new(0xFFFF.into()),
            ones16: Constant::new(0xFFFF.into()),
            lanes64: Constant::new((BEAT_BYTES as u64).into()),
            sat17: Constant::new(((1u64 << 17) - 1 - BEAT_BYTES as u64).into()),
            zero17: Constant::new(0.into()),
            one17: Constant::new(1.into()),
            zero6: Constant::new(0.into()),
            s6_32: Constant::new(32.into()),
            s6_16: Constant::new(16.into()),
            s6_8: Constant::new(8.into()),
            s6_4: Constant::new(4.into()),
            s6_2: Constant::new(2.into()),
            s6_1: Constant::new(1.into()),
            s17_32: Constant::new(32.into()),
            s17_16: Constant::new(16.into()),
            s17_8: Constant::new(8.into()),
            s17_4: Constant::new(4.into()),
            s17_2: Constant::new(2.into()),
            s17_1: Constant::new(1.into()),
            known: Constant::new(opcode_mask(|_| true)),
            has_payload: Constant::new(opcode_mask(Opcode::has_payload)),
            ops_four: ops(Layout::Four),
            ops_atomic_ack: ops(Layout::AtomicAck),
            ops_reth: ops(Layout::Reth),
            ops_reth_imm: ops(Layout::RethImm),
            ops_atomic: ops(Layout::Atomic),
            code_bare: code(Layout::Bare),
            code_four: code(Layout::Four),
            code_atomic_ack: code(Layout::AtomicAck),
            code_reth: code(Layout::Reth),
            code_reth_imm: code(Layout::RethImm),
            code_atomic: code(Layout::Atomic),
            min_bare: min(Layout::Bare),
            min_four: min(Layout::Four),
            min_atomic_ack: min(Layout::AtomicAck),
            min_reth: min(Layout::Reth),
            min_reth_imm: min(Layout::RethImm),
            min_atomic: min(Layout::Atomic),
            one: Constant::new(true),
            icrc: Icrc::new(IcrcMode::Check),
            local_swap: Default::default(),
            first: Default::default(),
            take: Default::default(),
            local_raw: Default::default(),
            total_len: Default::default(),
            total_len17: Default::default(),
            udp_len: Default::default(),
            op5: Default::default(),
            pad16: Default::default(),
            layout: Default::default(),
            min_len: Default::default(),
            padded: Default::default(),
            fields_ok: Default::default(),
            len_ok: Default::default(),
            sum: Default::default(),
            unused_raw: Default::default(),
            h_ok: Default::default(),
            h_total17: Default::default(),
            h_payload_len: Default::default(),
            h_layout: Default::default(),
            h_ip_bad: Default::default(),
            h_sum: Default::default(),
            in_frame: Default::default(),
            bytes_before: Default::default(),
            base: Default::default(),
            p5: Default::default(),
            p4: Default::default(),
            p3: Default::default(),
            p2: Default::default(),
            p1: Default::default(),
            n5: Default::default(),
            n4: Default::default(),
            n3: Default::default(),
            n2: Default::default(),
            n1: Default::default(),
            n0: Default::default(),
            have: Default::default(),
            e_valid: Default::default(),
            e_have: Default::default(),
            e_mac: Default::default(),
            fold1: Default::default(),
            fold2: Default::default(),
            unused_fold: Default::default(),
            malformed: Default::default(),
            v: Default::default(),
            mal: Default::default(),
            mac: Default::default(),
            ipb: Default::default(),
            plen: Default::default(),
            lay: Default::default(),
            flen: Default::default(),
            unused_icrc_ready: Default::default(),
            unused_icrc_valid: Default::default(),
            unused_icrc_crc: Default::default(),
            unused_icrc_len_err: Default::default(),
        }
    }
}

impl Logic for RxParser {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            h_ok,
            h_total17,
            h_payload_len,
            h_layout,
            h_ip_bad,
            h_sum,
            in_frame,
            bytes_before,
            e_valid,
            e_have,
            e_mac
        );
        for i in 0..5 {
            self.v[i].clock.next = self.clock.val();
            self.v[i].d.next = self.v[i].q.val();
            self.mal[i].clock.next = self.clock.val();
            self.mal[i].d.next = self.mal[i].q.val();
            self.mac[i].clock.next = self.clock.val();
            self.mac[i].d.next = self.mac[i].q.val();
            self.ipb[i].clock.next = self.clock.val();
            self.ipb[i].d.next = self.ipb[i].q.val();
            self.plen[i].clock.next = self.clock.val();
            self.plen[i].d.next = self.plen[i].q.val();
            self.lay[i].clock.next = self.clock.val();
            self.lay[i].d.next = self.lay[i].q.val();
            self.flen[i].clock.next = self.clock.val();
            self.flen[i].d.next = self.flen[i].q.val();
        }

        // The ICRC on the same stream; it never stalls with its result always taken.
        self.icrc.clock.next = self.clock.val();
        self.icrc.reset.next = self.reset.val();
        self.icrc.s_axis_tdata.next = self.s_axis_tdata.val();
        self.icrc.s_axis_tkeep.next = self.s_axis_tkeep.val();
        self.icrc.s_axis_tlast.next = self.s_axis_tlast.val();
        self.icrc.s_axis_tvalid.next = self.s_axis_tvalid.val();
        self.icrc.m_icrc_ready.next = self.one.val();
        self.unused_icrc_ready.next = self.icrc.s_axis_tready.val();
        self.unused_icrc_valid.next = self.icrc.m_icrc_valid.val();
        self.unused_icrc_crc.next = self.icrc.m_icrc_crc.val();
        self.unused_icrc_len_err.next = self.icrc.m_icrc_len_err.val();

        self.local_swap.x.next = self.local_ip.val();
        self.local_raw.next = self.local_swap.y.val();

        self.take.next = self.s_axis_tvalid.val();
        self.first.next = !self.in_frame.q.val();

        // ---- header checks on the first beat (lane order: wire byte 0 in the low bits) ----
        self.total_len.next = ((self.s_axis_tdata.val().get_bits::<16>(128) & self.byte16.val())
            << self.eight.val())
            | (self.s_axis_tdata.val().get_bits::<16>(128) >> self.eight.val());
        self.total_len17.next = ((self.s_axis_tdata.val().get_bits::<17>(128) & self.byte17.val())
            << self.eight.val())
            | ((self.s_axis_tdata.val().get_bits::<17>(128) >> self.eight.val())
                & self.byte17.val());
        self.udp_len.next = ((self.s_axis_tdata.val().get_bits::<16>(304) & self.byte16.val())
            << self.eight.val())
            | (self.s_axis_tdata.val().get_bits::<16>(304) >> self.eight.val());
        self.unused_raw.next = self.s_axis_tdata.val().get_bits::<2>(350);
        self.op5.next = self.s_axis_tdata.val().get_bits::<5>(336);
        // PadCnt is bits 5:4 of byte 43.
        self.pad16.next = (self.s_axis_tdata.val().get_bits::<16>(348)) & self.three16.val();

        if self.ops_four.val().get_bit(self.op5.val().index()) {
            self.layout.next = self.code_four.val();
            self.min_len.next = self.min_four.val();
        } else if self.ops_atomic_ack.val().get_bit(self.op5.val().index()) {
            self.layout.next = self.code_atomic_ack.val();
            self.min_len.next = self.min_atomic_ack.val();
        } else if self.ops_reth.val().get_bit(self.op5.val().index()) {
            self.layout.next = self.code_reth.val();
            self.min_len.next = self.min_reth.val();
        } else if self.ops_reth_imm.val().get_bit(self.op5.val().index()) {
            self.layout.next = self.code_reth_imm.val();
            self.min_len.next = self.min_reth_imm.val();
        } else if self.ops_atomic.val().get_bit(self.op5.val().index()) {
            self.layout.next = self.code_atomic.val();
            self.min_len.next = self.min_atomic.val();
        } else {
            self.layout.next = self.code_bare.val();
            self.min_len.next = self.min_bare.val();
        }
        self.padded.next = self.total_len.val() - self.min_len.val();

        self.fields_ok.next = (self.s_axis_tdata.val().get_bits::<16>(96)
            == self.ethertype_raw.val())
            & (self.s_axis_tdata.val().get_bits::<8>(112) == self.ver_ihl.val())
            & ((self.s_axis_tdata.val().get_bits::<8>(160) & self.frag_mask.val())
                == self.zero8.val())
            & (self.s_axis_tdata.val().get_bits::<8>(168) == self.zero8.val())
            & (self.s_axis_tdata.val().get_bits::<8>(184) == self.proto_udp.val())
            & (self.s_axis_tdata.val().get_bits::<16>(288) == self.dport_raw.val())
            & (self.udp_len.val() == self.total_len.val() - self.ip_hdr_len.val())
            & (self.s_axis_tdata.val().get_bits::<4>(344) == self.zero4.val())
            & (self.s_axis_tdata.val().get_bits::<3>(341) == self.zero3.val())
            & self.known.val().get_bit(self.op5.val().index());
        // Payload and pad fill whole words (the headers do), the pad is not more than what
        // follows the headers, and opcodes without payload have nothing there.
        self.len_ok.next = (self.total_len.val() >= self.min_len.val())
            & ((self.total_len.val() & self.three16.val()) == self.zero16.val())
            & ((self.padded.val() != self.zero16.val()) | (self.pad16.val() == self.zero16.val()))
            & (self.has_payload.val().get_bit(self.op5.val().index())
                | (self.padded.val() == self.zero16.val()));
        // The IPv4 header's ten words, summed wide; folded in the cycle after `tlast`. The
        // sum is byte-order independent, so lane order needs no swap.
        self.sum.next = (self.s_axis_tdata.val().get_bits::<20>(112) & self.word20.val())
            + (self.s_axis_tdata.val().get_bits::<20>(128) & self.word20.val())
            + (self.s_axis_tdata.val().get_bits::<20>(144) & self.word20.val())
            + (self.s_axis_tdata.val().get_bits::<20>(160) & self.word20.val())
            + (self.s_axis_tdata.val().get_bits::<20>(176) & self.word20.val())
            + (self.s_axis_tdata.val().get_bits::<20>(192) & self.word20.val())
            + (self.s_axis_tdata.val().get_bits::<20>(208) & self.word20.val())
            + (self.s_axis_tdata.val().get_bits::<20>(224) & self.word20.val())
            + (self.s_axis_tdata.val().get_bits::<20>(240) & self.word20.val())
            + (self.s_axis_tdata.val().get_bits::<20>(256) & self.word20.val());

        if self.take.val() & self.first.val() {
            self.h_ok.d.next = self.fields_ok.val() & self.len_ok.val();
            self.h_total17.d.next = self.total_len17.val();
            self.h_payload_len.d.next = self.padded.val() - self.pad16.val();
            self.h_layout.d.next = self.layout.val();
            self.h_ip_bad.d.next = (self.local_ip.val() != self.zero32.val())
                & (self.s_axis_tdata.val().get_bits::<32>(240) != self.local_raw.val());
            self.h_sum.d.next = self.sum.val();
        }

        // ---- bytes in the frame: 64 per beat, then the lanes of the last one ----
        if self.first.val() {
            self.base.next = self.zero17.val();
        } else {
            self.base.next = self.bytes_before.q.val();
        }
        // `tkeep` is contiguous from lane 0: find its last set lane by halving.
        if self.s_axis_tkeep.val().get_bit(self.s6_32.val().index()) {
            self.p5.next = self.s6_32.val();
            self.n5.next = self.s17_32.val();
        } else {
            self.p5.next = self.zero6.val();
            self.n5.next = self.zero17.val();
        }
        if self
            .s_axis_tkeep
            .val()
            .get_bit((self.p5.val() | self.s6_16.val()).index())
        {
            self.p4.next = self.p5.val() | self.s6_16.val();
            self.n4.next = self.n5.val() | self.s17_16.val();
        } else {
            self.p4.next = self.p5.val();
            self.n4.next = self.n5.val();
        }
        if self
            .s_axis_tkeep
            .val()
            .get_bit((self.p4.val() | self.s6_8.val()).index())
        {
            self.p3.next = self.p4.val() | self.s6_8.val();
            self.n3.next = self.n4.val() | self.s17_8.val();
        } else {
            self.p3.next = self.p4.val();
            self.n3.next = self.n4.val();
        }
        if self
            .s_axis_tkeep
            .val()
            .get_bit((self.p3.val() | self.s6_4.val()).index())
        {
            self.p2.next = self.p3.val() | self.s6_4.val();
            self.n2.next = self.n3.val() | self.s17_4.val();
        } else {
            self.p2.next = self.p3.val();
            self.n2.next = self.n3.val();
        }
        if self
            .s_axis_tkeep
            .val()
            .get_bit((self.p2.val() | self.s6_2.val()).index())
        {
            self.p1.next = self.p2.val() | self.s6_2.val();
            self.n1.next = self.n2.val() | self.s17_2.val();
        } else {
            self.p1.next = self.p2.val();
            self.n1.next = self.n2.val();
        }
        if self
            .s_axis_tkeep
            .val()
            .get_bit((self.p1.val() | self.s6_1.val()).index())
        {
            self.n0.next = self.n1.val() | self.s17_1.val();
        } else {
            self.n0.next = self.n1.val();
        }
        self.have.next = self.base.val() + self.n0.val() + self.one17.val();

        if self.take.val() {
            self.in_frame.d.next = !self.s_axis_tlast.val();
            if self.base.val() > self.sat17.val() {
                self.bytes_before.d.next = self.base.val();
            } else {
                self.bytes_before.d.next = self.base.val() + self.lanes64.val();
            }
        }
        self.e_valid.d.next = self.take.val() & self.s_axis_tlast.val();
        if self.take.val() & self.s_axis_tlast.val() {
            self.e_have.d.next = self.have.val();
            self.e_mac.d.next = self.s_axis_tuser.val();
        }

        // ---- the cycle after tlast ----
        self.fold1.next =
            (self.h_sum.q.val() & self.word20.val()) + (self.h_sum.q.val() >> self.sixteen.val());
        self.fold2.next =
            (self.fold1.val() & self.word20.val()) + (self.fold1.val() >> self.sixteen.val());
        self.unused_fold.next = self.fold2.val().get_bits::<4>(16);
        self.malformed.next = !self.h_ok.q.val()
            | (self.fold2.val().get_bits::<16>(0) != self.ones16.val())
            | (self.e_have.q.val() < self.h_total17.q.val() + self.eth_len17.val());

        self.v[0].d.next = self.e_valid.q.val();
        if self.e_valid.q.val() {
            self.mal[0].d.next = self.malformed.val();
            self.mac[0].d.next = self.e_mac.q.val();
            self.ipb[0].d.next = self.h_ip_bad.q.val();
            self.plen[0].d.next = self.h_payload_len.q.val();
            self.lay[0].d.next = self.h_layout.q.val();
            self.flen[0].d.next = self.e_have.q.val();
        }
        for i in 1..5 {
            self.v[i].d.next = self.v[i - 1].q.val();
            self.mal[i].d.next = self.mal[i - 1].q.val();
            self.mac[i].d.next = self.mac[i - 1].q.val();
            self.ipb[i].d.next = self.ipb[i - 1].q.val();
            self.plen[i].d.next = self.plen[i - 1].q.val();
            self.lay[i].d.next = self.lay[i - 1].q.val();
            self.flen[i].d.next = self.flen[i - 1].q.val();
        }

        self.m_v_valid.next = self.v[4].q.val();
        self.m_v_malformed.next = self.mal[4].q.val();
        self.m_v_icrc_bad.next = !self.icrc.m_icrc_ok.val();
        self.m_v_mac_err.next = self.mac[4].q.val();
        self.m_v_ip_bad.next = self.ipb[4].q.val();
        self.m_v_payload_len.next = self.plen[4].q.val();
        self.m_v_layout.next = self.lay[4].q.val();
        self.m_v_frame_len.next = self.flen[4].q.val();

        if self.reset.val() {
            self.in_frame.d.next = false;
            self.e_valid.d.next = false;
            for i in 0..5 {
                self.v[i].d.next = false;
            }
        }
    }
}

/// Frames for the RX benches (here and in `rx_fifo`): good ones as a MAC passes them on,
/// and one damaged variant per check of `RoceRepr::parse`.
#[cfg(test)]
pub(crate) mod frames {
    use rocenic_proto::wire::{compute_icrc, Ipv4Packet, Opcode, UdpPacket};

    use crate::bench::{random_roce_frame, Rng};

    pub const IP_AT: usize = 14;

    /// A frame as the MAC hands it over, with its error flag.
    #[derive(Clone, Debug)]
    pub struct Input {
        pub frame: Vec<u8>,
        pub tuser: bool,
    }

    /// A frame as a MAC passes it on: padded to 60 bytes, sometimes with trailing bytes.
    pub fn on_the_wire(rng: &mut Rng, mut f: Vec<u8>) -> Vec<u8> {
        if f.len() < 60 {
            f.resize(60, 0);
        }
        if rng.percent(15) {
            let extra = rng.below(70) as usize;
            f.extend(rng.bytes(extra));
        }
        f
    }

    pub fn good(rng: &mut Rng, op: Opcode, len: usize) -> Input {
        let f = random_roce_frame(rng, op, len);
        Input {
            frame: on_the_wire(rng, f),
            tuser: false,
        }
    }

    /// Applies `edit`, then makes the IPv4 checksum and the ICRC right again, so that only
    /// the edited check can fail.
    pub fn edited(frame: &[u8], edit: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
        let mut f = frame.to_vec();
        edit(&mut f);
        if f.len() >= IP_AT + 20 {
            Ipv4Packet::new_unchecked(&mut f[IP_AT..]).fill_checksum();
            let tl = usize::from(u16::from_be_bytes([f[IP_AT + 2], f[IP_AT + 3]]));
            let end = (IP_AT + tl).min(f.len());
            if end >= IP_AT + 24 {
                let icrc = compute_icrc(&f[IP_AT..end - 4]);
                f[end - 4..end].copy_from_slice(&icrc.to_le_bytes());
            }
        }
        f
    }

    fn set_lengths(f: &mut [u8], ip_len: u16) {
        Ipv4Packet::new_unchecked(&mut f[IP_AT..]).set_total_len(ip_len);
        UdpPacket::new_unchecked(&mut f[IP_AT + 20..]).set_len(ip_len - 20);
    }

    fn total_len(f: &[u8]) -> u16 {
        u16::from_be_bytes([f[IP_AT + 2], f[IP_AT + 3]])
    }

    /// One damaged variant of a good frame per check of `RoceRepr::parse`, and the MAC's
    /// error flag.
    pub fn damaged(rng: &mut Rng) -> Vec<Input> {
        let send = random_roce_frame(rng, Opcode::SendOnly, 37);
        let write = random_roce_frame(rng, Opcode::RdmaWriteFirst, 100);
        let ack = random_roce_frame(rng, Opcode::Acknowledge, 0);
        let cas = random_roce_frame(rng, Opcode::CompareSwap, 0);
        let bth = IP_AT + 28;
        let mut frames: Vec<Vec<u8>> = vec![
            edited(&send, |f| f[12] = 0x86),
            edited(&send, |f| f[IP_AT] = 0x65),
            edited(&send, |f| f[IP_AT] = 0x44),
            edited(&send, |f| f[IP_AT] = 0x46),
            // Total length past the frame's end.
            edited(&send, |f| {
                let tl = total_len(f);
                set_lengths(f, tl + 4)
            }),
            // Total length below the IPv4 header.
            edited(&send, |f| f[IP_AT + 3] = 19),
            {
                let mut f = send.clone();
                f[IP_AT + 8] ^= 0x10; // TTL with the checksum left stale
                f
            },
            edited(&send, |f| f[IP_AT + 6] |= 0x20),
            edited(&send, |f| f[IP_AT + 7] = 1),
            edited(&send, |f| f[IP_AT + 9] = 6),
            edited(&send, |f| f[IP_AT + 23] = 0xb6),
            edited(&send, |f| f[IP_AT + 25] ^= 4),
            edited(&send, |f| f[bth + 1] |= 0x01),
            edited(&send, |f| f[bth] = 0x15),
            edited(&send, |f| f[bth] = 0x18),
            edited(&send, |f| f[bth] = 0x64),
            edited(&send, |f| f[bth] = 0x81),
            // An ACK carrying payload.
            edited(&send, |f| f[bth] = 0x11),
            // A COMPARE_SWAP needs 28 bytes after the BTH.
            edited(&ack, |f| f[bth] = 0x13),
            edited(&write, |f| f[bth] = 0x12),
            // Pad count not matching the payload; pad on an ACK.
            edited(&send, |f| f[bth + 1] ^= 0x10),
            edited(&ack, |f| f[bth + 1] |= 0x20),
            // One payload byte fewer: not whole words.
            edited(&send, |f| {
                let tl = total_len(f);
                set_lengths(f, tl - 1);
                f.remove(IP_AT + usize::from(tl) - 5);
            }),
            // Cut short; very short; only the Ethernet header.
            send[..send.len() - 9].to_vec(),
            send[..30].to_vec(),
            send[..14].to_vec(),
            // Bad ICRC: a payload bit, an ICRC bit, a header bit it covers.
            {
                let mut f = send.clone();
                f[70] ^= 1;
                f
            },
            {
                let mut f = cas.clone();
                let n = f.len();
                f[n - 1] ^= 0x80;
                f
            },
            {
                let mut f = write.clone();
                f[bth + 7] ^= 2; // DestQP, covered by the ICRC only
                f
            },
        ];
        // A frame with a masked byte changed is still good (FECN set by a switch).
        frames.push(edited(&write, |_| {}));
        frames.push({
            let mut f = write.clone();
            f[bth + 4] |= 0x80;
            f
        });
        let mut inputs: Vec<Input> = frames
            .into_iter()
            .map(|f| Input {
                frame: on_the_wire(rng, f),
                tuser: false,
            })
            .collect();
        inputs.push(Input {
            frame: send.clone(),
            tuser: true,
        });
        inputs
    }
}

#[cfg(test)]
mod tests {
    use rocenic_proto::wire::{Opcode, RoceRepr, WireError};

    use super::frames::{damaged, good, Input, IP_AT};
    use super::*;
    use crate::bench::{frame_beats, random_payload_len, Bench, Rng};

    /// A verdict, with what only matters for a parsed frame as `None` otherwise.
    #[derive(Clone, Debug, PartialEq, Eq)]
    struct Verdict {
        malformed: bool,
        icrc_bad: Option<bool>,
        ip_bad: Option<bool>,
        payload_len: Option<usize>,
        layout: Option<Layout>,
        mac_err: bool,
        frame_len: usize,
    }

    fn expected(i: &Input, local_ip: u32) -> Verdict {
        let base = Verdict {
            malformed: true,
            icrc_bad: None,
            ip_bad: None,
            payload_len: None,
            layout: None,
            mac_err: i.tuser,
            frame_len: i.frame.len(),
        };
        match RoceRepr::parse(&i.frame) {
            Err(WireError::BadIcrc { .. }) => Verdict {
                malformed: false,
                icrc_bad: Some(true),
                ..base
            },
            Err(_) => base,
            Ok((repr, payload)) => Verdict {
                malformed: false,
                icrc_bad: Some(false),
                ip_bad: Some(local_ip != 0 && u32::from_be_bytes(repr.ip.dst_addr.0) != local_ip),
                payload_len: Some(payload.len()),
                layout: Some(Layout::of(repr.bth.opcode)),
                ..base
            },
        }
    }

    /// Streams `inputs` with gaps per `valid_pct`; returns each verdict, normalised as
    /// [`expected`] would see it, and checks it came 6 cycles after the frame's last beat.
    fn run(inputs: &[Input], valid_pct: u32, seed: u64, local_ip: u32) -> Vec<Verdict> {
        let mut rng = Rng::new(seed);
        let mut bench = Bench::new(RxParser::new(), |u| &mut u.clock);
        bench.uut.local_ip.next = u64::from(local_ip).into();
        bench.uut.reset.next = true;
        bench.tick();
        bench.uut.reset.next = false;
        let mut beats = inputs.iter().flat_map(|i| {
            let tuser = i.tuser;
            frame_beats(&i.frame, || 0x5A)
                .into_iter()
                .map(move |b| (b, tuser))
        });
        let mut pending = beats.next();
        let mut last_at = vec![];
        let mut out = vec![];
        while out.len() < inputs.len() {
            assert!(bench.cycle() < 100_000, "no verdicts (seed {seed})");
            let send = pending.is_some() && rng.percent(valid_pct);
            let now = bench.cycle();
            let u = &mut bench.uut;
            if send {
                let (beat, tuser) = pending.take().expect("beat");
                u.s_axis_tdata.next = beat.tdata();
                u.s_axis_tkeep.next = beat.tkeep();
                u.s_axis_tlast.next = beat.last;
                u.s_axis_tuser.next = tuser;
                if beat.last {
                    last_at.push(now);
                }
                pending = beats.next();
            }
            u.s_axis_tvalid.next = send;
            bench.settle();
            let u = &bench.uut;
            if u.m_v_valid.val() {
                let k = out.len();
                assert_eq!(bench.cycle(), last_at[k] + 6, "verdict {k} latency");
                let malformed = u.m_v_malformed.val();
                let parsed = !malformed && !u.m_v_icrc_bad.val();
                out.push(Verdict {
                    malformed,
                    icrc_bad: (!malformed).then(|| u.m_v_icrc_bad.val()),
                    ip_bad: parsed.then(|| u.m_v_ip_bad.val()),
                    payload_len: parsed.then(|| u.m_v_payload_len.val().to_u64() as usize),
                    layout: parsed
                        .then(|| Layout::from_code(u.m_v_layout.val().to_u32()).expect("code")),
                    mac_err: u.m_v_mac_err.val(),
                    frame_len: u.m_v_frame_len.val().to_u64() as usize,
                });
            }
            bench.tick();
        }
        out
    }

    fn check(inputs: &[Input], valid_pct: u32, seed: u64, local_ip: u32) {
        let got = run(inputs, valid_pct, seed, local_ip);
        for (k, (i, g)) in inputs.iter().zip(&got).enumerate() {
            assert_eq!(
                *g,
                expected(i, local_ip),
                "frame {k} (seed {seed}): {:02x?}",
                &i.frame[..i.frame.len().min(60)]
            );
        }
    }

    #[test]
    fn every_check_of_the_reference_back_to_back_and_with_gaps() {
        let mut rng = Rng::new(21);
        let mut inputs = damaged(&mut rng);
        let ops: Vec<Opcode> = Opcode::all().collect();
        for op in &ops {
            let len = random_payload_len(&mut rng) % 300;
            inputs.push(good(&mut rng, *op, len));
        }
        // Every distinct source pattern (the MAC cannot be stalled, so only gaps vary).
        for (k, valid_pct) in [100, 70, 40].into_iter().enumerate() {
            check(&inputs, valid_pct, 21 + k as u64, 0);
        }
    }

    #[test]
    fn destination_address_and_tuser() {
        let mut rng = Rng::new(22);
        let mut inputs: Vec<Input> = (0..8)
            .map(|i| good(&mut rng, Opcode::SendOnly, 3 * i))
            .collect();
        inputs[2].tuser = true;
        inputs[5].tuser = true;
        let mine = u32::from_be_bytes(
            inputs[4].frame[IP_AT + 16..IP_AT + 20]
                .try_into()
                .expect("4"),
        );
        check(&inputs, 100, 22, mine);
        check(&inputs, 100, 23, 0);
    }

    #[test]
    fn layouts_follow_the_opcode_headers() {
        for op in Opcode::all() {
            let l = Layout::of(op);
            assert_eq!(l.header_len(), 54 + op.ext_headers_len(), "{op:?}");
            if op.has_payload() {
                assert!(matches!(
                    l,
                    Layout::Bare | Layout::Four | Layout::Reth | Layout::RethImm
                ));
            }
        }
    }
}
