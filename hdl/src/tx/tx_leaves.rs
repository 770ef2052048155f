//! The combinational leaves of the TX path ([`hdr_build`](crate::tx::hdr_build)), written as
//! hand-made Verilog because `#[hdl_gen]` has no concatenation or byte placement:
//!
//! - [`OpDecode`]: opcode to header layout (which extension headers, header length, payload
//!   shift), from the opcode table of `rocenic_proto`.
//! - [`HdrBytes`]: the header bytes of a frame from the packet record (a fixed byte
//!   placement per layout).
//! - [`BeatMerge`]: one output beat: header lanes, then payload shifted behind the header
//!   (one of a few fixed shifts per lane), then zero (pad and ICRC placeholder).
//! - [`CrcInsert`]: the ICRC bytes written into their lanes of a beat.
//!
//! Each leaf's simulation (`update`) and its Verilog (`hdl`) are generated from the same
//! tables (`Layout`, [`header_source`], [`SHIFTS`]), so they cannot disagree on a
//! placement; `tests` here also evaluate the Verilog with yosys against `update`.

use crate::prelude::*;

use rocenic_proto::wire::{
    ExtHeader, Opcode, DEFAULT_PKEY, ETHERNET_HEADER_LEN, ROCE_HEADERS_LEN, ROCE_V2_PORT,
};

/// Bytes per beat.
pub const LANES: usize = 64;

/// IPv4 fields the model always sends (`model::packet::build`): TOS (DSCP 0, ECN 0), flags
/// with DF and fragment offset 0, TTL 64, ident 0.
pub const IP_TOS: u8 = 0;
pub const IP_FLAGS_DF: u16 = 0x4000;
pub const IP_TTL: u8 = 64;
/// BTH P_Key the model sends.
pub const PKEY: u16 = DEFAULT_PKEY;

/// Which extension headers follow the BTH: every RC opcode has one of these.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// No extension header (SEND, WRITE middle/last, READ response middle): 54 bytes.
    Plain = 0,
    /// ImmDt or IETH, both four bytes taken from the record's `imm`: 58 bytes.
    Imm = 1,
    /// RETH: 70 bytes.
    Reth = 2,
    /// RETH then ImmDt: 74 bytes.
    RethImm = 3,
    /// AETH: 58 bytes.
    Aeth = 4,
    /// AETH then AtomicAckETH: 66 bytes.
    AethAtomicAck = 5,
    /// AtomicETH: 82 bytes.
    AtomicEth = 6,
}

impl Layout {
    pub const ALL: [Layout; 7] = [
        Layout::Plain,
        Layout::Imm,
        Layout::Reth,
        Layout::RethImm,
        Layout::Aeth,
        Layout::AethAtomicAck,
        Layout::AtomicEth,
    ];

    /// The layout of a known RC opcode; unknown opcodes get `Plain` (the caller's bug).
    pub fn of(op: Opcode) -> Layout {
        use ExtHeader::*;
        match op.ext_headers() {
            [] => Layout::Plain,
            [ImmDt] | [Ieth] => Layout::Imm,
            [Reth] => Layout::Reth,
            [Reth, ImmDt] => Layout::RethImm,
            [Aeth] => Layout::Aeth,
            [Aeth, AtomicAckEth] => Layout::AethAtomicAck,
            [AtomicEth] => Layout::AtomicEth,
            other => panic!("no TX layout for {op:?} ({other:?})"),
        }
    }

    /// Header bytes, Ethernet to the last extension header.
    pub fn hdr_len(self) -> usize {
        let ext: &[ExtHeader] = match self {
            Layout::Plain => &[],
            Layout::Imm => &[ExtHeader::ImmDt],
            Layout::Reth => &[ExtHeader::Reth],
            Layout::RethImm => &[ExtHeader::Reth, ExtHeader::ImmDt],
            Layout::Aeth => &[ExtHeader::Aeth],
            Layout::AethAtomicAck => &[ExtHeader::Aeth, ExtHeader::AtomicAckEth],
            Layout::AtomicEth => &[ExtHeader::AtomicEth],
        };
        ROCE_HEADERS_LEN + ext.iter().map(|h| h.wire_len()).sum::<usize>()
    }

    /// Index into [`SHIFTS`] of the lane where the payload starts (layouts without payload:
    /// 0, unused).
    pub fn shift_index(self) -> usize {
        SHIFTS
            .iter()
            .position(|&s| s == self.hdr_len() % LANES)
            .unwrap_or(0)
    }
}

/// Lane where the payload starts in its first beat, for every layout that can carry one
/// (54, 58, 70 and 74 byte headers). A merge lane picks one of these four shifts.
pub const SHIFTS: [usize; 4] = [54, 58, 6, 10];
/// Lanes of the current payload beat a merge can use: `0..CUR_LANES` (64 - smallest shift).
pub const CUR_LANES: usize = 58;
/// Lanes of the previous payload beat a merge can use: `PREV_FROM..64` (64 - largest shift).
pub const PREV_FROM: usize = 6;
/// The ICRC starts `ICRC_PHASE` lanes past a multiple of four: every header length is 2 mod 4
/// and payload plus pad is whole words, so ICRC byte `b` can only land in lanes
/// `4i + (ICRC_PHASE + b) % 4` and each lane has one ICRC byte to choose.
pub const ICRC_PHASE: usize = 2;

/// A frame's bytes as [`Bits`] (lane `i` in bits `8i+7:8i`), fast for long vectors.
pub fn bits_from_bytes<const N: usize>(bytes: &[u8]) -> Bits<N> {
    let bit = |i: usize| bytes.get(i / 8).is_some_and(|b| (b >> (i % 8)) & 1 == 1);
    if N <= 32 {
        let v: u64 = (0..N).filter(|&i| bit(i)).map(|i| 1u64 << i).sum();
        v.into()
    } else {
        let mut a = [false; N];
        for (i, b) in a.iter_mut().enumerate() {
            *b = bit(i);
        }
        Bits::Long(a.into())
    }
}

/// The bytes of a [`Bits`] (`N` a multiple of 8), lane 0 first.
pub fn bytes_from_bits<const N: usize>(x: Bits<N>) -> Vec<u8> {
    (0..N / 8)
        .map(|lane| (0..8).fold(0u8, |acc, i| acc | (u8::from(x.get_bit(8 * lane + i)) << i)))
        .collect()
}

// ------------------------------------------------------------------------------------------
// OpDecode

/// `opcode -> layout` and what the frame pipeline needs from it: the header length, its
/// lanes in beats 0 and 1, the payload shift, whether the header fills beat 0.
#[derive(LogicBlock, Default)]
pub struct OpDecode {
    pub opcode: Signal<In, Bits<8>>,
    /// [`Layout`] as a number.
    pub layout: Signal<Out, Bits<3>>,
    /// Header bytes (54..82).
    pub hdr_len: Signal<Out, Bits<16>>,
    /// Header lanes in beat 0 and in beat 1.
    pub hdr_lanes0: Signal<Out, Bits<7>>,
    pub hdr_lanes1: Signal<Out, Bits<7>>,
    /// Index into [`SHIFTS`].
    pub shift: Signal<Out, Bits<2>>,
    /// The header fills beat 0: the payload starts in beat 1.
    pub hdr_big: Signal<Out, Bit>,
}

/// What [`OpDecode`] reports for an opcode byte.
pub fn decode(opcode: u8) -> Layout {
    Opcode::all()
        .find(|&op| u8::from(op) == opcode)
        .map(Layout::of)
        .unwrap_or(Layout::Plain)
}

impl Logic for OpDecode {
    fn update(&mut self) {
        let l = decode(self.opcode.val().to_u8());
        let h = l.hdr_len();
        self.layout.next = (l as u64).into();
        self.hdr_len.next = (h as u64).into();
        self.hdr_lanes0.next = (h.min(LANES) as u64).into();
        self.hdr_lanes1.next = (h.saturating_sub(LANES) as u64).into();
        self.shift.next = (l.shift_index() as u64).into();
        self.hdr_big.next = h >= LANES;
    }

    fn connect(&mut self) {
        self.layout.connect();
        self.hdr_len.connect();
        self.hdr_lanes0.connect();
        self.hdr_lanes1.connect();
        self.shift.connect();
        self.hdr_big.connect();
    }

    fn hdl(&self) -> Verilog {
        let assign = |l: Layout| {
            let h = l.hdr_len();
            format!(
                "begin layout = 3'd{}; hdr_len = 16'd{h}; hdr_lanes0 = 7'd{}; hdr_lanes1 = 7'd{}; \
                 shift = 2'd{}; hdr_big = 1'b{}; end",
                l as u8,
                h.min(LANES),
                h.saturating_sub(LANES),
                l.shift_index(),
                u8::from(h >= LANES)
            )
        };
        let mut v =
            String::from("// The header layout of each RC opcode (rocenic_proto's table).\n");
        v.push_str("always @(*) begin\n    case (opcode)\n");
        for op in Opcode::all() {
            v.push_str(&format!(
                "        8'd{}: {} // {op:?}\n",
                u8::from(op),
                assign(Layout::of(op))
            ));
        }
        v.push_str(&format!("        default: {}\n", assign(Layout::Plain)));
        v.push_str("    endcase\nend\n");
        Verilog::Custom(v)
    }
}

// ------------------------------------------------------------------------------------------
// HdrBytes

/// An input of [`HdrBytes`]: a record field, wire order big endian.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    DstMac,
    SrcMac,
    SrcIp,
    DstIp,
    UdpSport,
    TotalLen,
    IpCsum,
    UdpLen,
    Opcode,
    BthFlags,
    DestQp,
    AckByte,
    Psn,
    Va,
    Rkey,
    DmaLen,
    SwapAdd,
    Compare,
    Orig,
    Syndrome,
    Msn,
    Imm,
}

impl Field {
    /// Its port name on [`HdrBytes`] and its width in bytes.
    pub fn port(self) -> (&'static str, usize) {
        match self {
            Field::DstMac => ("dst_mac", 6),
            Field::SrcMac => ("src_mac", 6),
            Field::SrcIp => ("src_ip", 4),
            Field::DstIp => ("dst_ip", 4),
            Field::UdpSport => ("udp_sport", 2),
            Field::TotalLen => ("total_len", 2),
            Field::IpCsum => ("ip_csum", 2),
            Field::UdpLen => ("udp_len", 2),
            Field::Opcode => ("opcode", 1),
            Field::BthFlags => ("bth_flags", 1),
            Field::DestQp => ("dest_qp", 3),
            Field::AckByte => ("ack_byte", 1),
            Field::Psn => ("psn", 3),
            Field::Va => ("va", 8),
            Field::Rkey => ("rkey", 4),
            Field::DmaLen => ("dma_len", 4),
            Field::SwapAdd => ("swap_add", 8),
            Field::Compare => ("compare", 8),
            Field::Orig => ("orig", 8),
            Field::Syndrome => ("syndrome", 1),
            Field::Msn => ("msn", 3),
            Field::Imm => ("imm", 4),
        }
    }
}

/// Where a header byte comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Src {
    /// A constant.
    K(u8),
    /// Byte `i` of a field, 0 the most significant (first on the wire).
    F(Field, usize),
}

/// Bytes of header the leaf writes: two beats (the largest header is 82 bytes).
pub const HDR_BYTES: usize = 2 * LANES;

fn put(v: &mut Vec<Src>, f: Field) {
    let (_, n) = f.port();
    v.extend((0..n).map(|i| Src::F(f, i)));
}

fn put_k(v: &mut Vec<Src>, bytes: &[u8]) {
    v.extend(bytes.iter().map(|&b| Src::K(b)));
}

/// The source of every header byte of a layout, Ethernet to the last extension header
/// (`Layout::hdr_len` entries), as `RoceRepr::emit` writes them for the model's frames.
pub fn header_source(l: Layout) -> Vec<Src> {
    use Field::*;
    let mut v = vec![];
    // Ethernet.
    put(&mut v, DstMac);
    put(&mut v, SrcMac);
    put_k(&mut v, &0x0800u16.to_be_bytes());
    // IPv4: version 4, IHL 5, TOS, total length, ident 0, flags, TTL, UDP, checksum, addrs.
    put_k(&mut v, &[0x45, IP_TOS]);
    put(&mut v, TotalLen);
    put_k(&mut v, &[0, 0]);
    put_k(&mut v, &IP_FLAGS_DF.to_be_bytes());
    put_k(&mut v, &[IP_TTL, 17]);
    put(&mut v, IpCsum);
    put(&mut v, SrcIp);
    put(&mut v, DstIp);
    // UDP: checksum 0.
    put(&mut v, UdpSport);
    put_k(&mut v, &ROCE_V2_PORT.to_be_bytes());
    put(&mut v, UdpLen);
    put_k(&mut v, &[0, 0]);
    // BTH: opcode, SE|M|pad|TVer, P_Key, FECN/BECN 0, dest QP, AckReq, PSN.
    put(&mut v, Opcode);
    put(&mut v, BthFlags);
    put_k(&mut v, &PKEY.to_be_bytes());
    put_k(&mut v, &[0]);
    put(&mut v, DestQp);
    put(&mut v, AckByte);
    put(&mut v, Psn);
    assert_eq!(v.len(), ROCE_HEADERS_LEN);
    match l {
        Layout::Plain => {}
        Layout::Imm => put(&mut v, Imm),
        Layout::Reth | Layout::RethImm => {
            put(&mut v, Va);
            put(&mut v, Rkey);
            put(&mut v, DmaLen);
            if l == Layout::RethImm {
                put(&mut v, Imm);
            }
        }
        Layout::Aeth | Layout::AethAtomicAck => {
            put(&mut v, Syndrome);
            put(&mut v, Msn);
            if l == Layout::AethAtomicAck {
                put(&mut v, Orig);
            }
        }
        Layout::AtomicEth => {
            put(&mut v, Va);
            put(&mut v, Rkey);
            put(&mut v, SwapAdd);
            put(&mut v, Compare);
        }
    }
    assert_eq!(v.len(), l.hdr_len(), "{l:?}");
    v
}

/// The header bytes of a frame: `y` holds [`HDR_BYTES`] lanes, the header from lane 0 and
/// zero after it (lanes past 82, and all extension lanes for layout 7).
#[derive(LogicBlock, Default)]
pub struct HdrBytes {
    pub layout: Signal<In, Bits<3>>,
    pub dst_mac: Signal<In, Bits<48>>,
    pub src_mac: Signal<In, Bits<48>>,
    pub src_ip: Signal<In, Bits<32>>,
    pub dst_ip: Signal<In, Bits<32>>,
    pub udp_sport: Signal<In, Bits<16>>,
    pub total_len: Signal<In, Bits<16>>,
    pub ip_csum: Signal<In, Bits<16>>,
    pub udp_len: Signal<In, Bits<16>>,
    pub opcode: Signal<In, Bits<8>>,
    pub bth_flags: Signal<In, Bits<8>>,
    pub dest_qp: Signal<In, Bits<24>>,
    pub ack_byte: Signal<In, Bits<8>>,
    pub psn: Signal<In, Bits<24>>,
    pub va: Signal<In, Bits<64>>,
    pub rkey: Signal<In, Bits<32>>,
    pub dma_len: Signal<In, Bits<32>>,
    pub swap_add: Signal<In, Bits<64>>,
    pub compare: Signal<In, Bits<64>>,
    pub orig: Signal<In, Bits<64>>,
    pub syndrome: Signal<In, Bits<8>>,
    pub msn: Signal<In, Bits<24>>,
    pub imm: Signal<In, Bits<32>>,
    pub y: Signal<Out, Bits<{ 8 * HDR_BYTES }>>,
}

impl HdrBytes {
    fn field(&self, f: Field) -> u64 {
        match f {
            Field::DstMac => self.dst_mac.val().to_u64(),
            Field::SrcMac => self.src_mac.val().to_u64(),
            Field::SrcIp => self.src_ip.val().to_u64(),
            Field::DstIp => self.dst_ip.val().to_u64(),
            Field::UdpSport => self.udp_sport.val().to_u64(),
            Field::TotalLen => self.total_len.val().to_u64(),
            Field::IpCsum => self.ip_csum.val().to_u64(),
            Field::UdpLen => self.udp_len.val().to_u64(),
            Field::Opcode => self.opcode.val().to_u64(),
            Field::BthFlags => self.bth_flags.val().to_u64(),
            Field::DestQp => self.dest_qp.val().to_u64(),
            Field::AckByte => self.ack_byte.val().to_u64(),
            Field::Psn => self.psn.val().to_u64(),
            Field::Va => self.va.val().to_u64(),
            Field::Rkey => self.rkey.val().to_u64(),
            Field::DmaLen => self.dma_len.val().to_u64(),
            Field::SwapAdd => self.swap_add.val().to_u64(),
            Field::Compare => self.compare.val().to_u64(),
            Field::Orig => self.orig.val().to_u64(),
            Field::Syndrome => self.syndrome.val().to_u64(),
            Field::Msn => self.msn.val().to_u64(),
            Field::Imm => self.imm.val().to_u64(),
        }
    }
}

/// The layout a 3-bit layout number selects (7: none, only the common header).
fn layout_of_number(n: u64) -> Option<Layout> {
    Layout::ALL.into_iter().find(|&l| l as u64 == n)
}

/// Common header bytes: the same in every layout.
fn common_source() -> Vec<Src> {
    header_source(Layout::Plain)
}

impl Logic for HdrBytes {
    fn update(&mut self) {
        let src = match layout_of_number(self.layout.val().to_u64()) {
            Some(l) => header_source(l),
            None => common_source(),
        };
        let mut bytes = [0u8; HDR_BYTES];
        for (b, s) in bytes.iter_mut().zip(src) {
            *b = match s {
                Src::K(k) => k,
                Src::F(f, i) => {
                    let (_, n) = f.port();
                    (self.field(f) >> (8 * (n - 1 - i))) as u8
                }
            };
        }
        self.y.next = bits_from_bytes(&bytes);
    }

    fn connect(&mut self) {
        self.y.connect();
    }

    fn hdl(&self) -> Verilog {
        let expr = |s: Src| match s {
            Src::K(k) => format!("8'h{k:02x}"),
            Src::F(f, i) => {
                let (name, n) = f.port();
                let hi = 8 * (n - i) - 1;
                format!("{name}[{hi}:{}]", hi - 7)
            }
        };
        let lane = |i: usize| format!("y[{}:{}]", 8 * i + 7, 8 * i);
        let mut v = String::from(
            "// Header bytes from the record: the common headers, then the extension headers\n\
             // of the layout; zero elsewhere.\n",
        );
        v.push_str("always @(*) begin\n");
        v.push_str(&format!("    y = {}'h0;\n", 8 * HDR_BYTES));
        let common = common_source();
        for (i, s) in common.iter().enumerate() {
            v.push_str(&format!("    {} = {};\n", lane(i), expr(*s)));
        }
        v.push_str("    case (layout)\n");
        for l in Layout::ALL {
            v.push_str(&format!("        3'd{}: begin // {l:?}\n", l as u8));
            for (i, s) in header_source(l).into_iter().enumerate().skip(common.len()) {
                v.push_str(&format!("            {} = {};\n", lane(i), expr(s)));
            }
            v.push_str("        end\n");
        }
        v.push_str("        default: begin end\n    endcase\nend\n");
        Verilog::Custom(v)
    }
}

// ------------------------------------------------------------------------------------------
// BeatMerge

/// One frame beat: lane `j` is `hdr[j]` if `hdr_keep[j]`, else the payload shifted by
/// `SHIFTS[shift]` lanes (`j < s`: lane `j + 64 - s` of the previous payload beat, else lane
/// `j - s` of the current one) if `data_keep[j]`, else zero; or `q` when `hold` (the leaf is
/// the next value of the register it feeds, so the parent reads `y` in a statement of its
/// own; see the crate docs on UNOPTFLAT). Only the payload lanes some shift can use are
/// ports (`cur` lanes `0..CUR_LANES`, `prev` lanes `PREV_FROM..64`).
#[derive(LogicBlock, Default)]
pub struct BeatMerge {
    pub hdr: Signal<In, Bits<{ 8 * LANES }>>,
    pub cur: Signal<In, Bits<{ 8 * CUR_LANES }>>,
    pub prev: Signal<In, Bits<{ 8 * (LANES - PREV_FROM) }>>,
    pub shift: Signal<In, Bits<2>>,
    pub hdr_keep: Signal<In, Bits<LANES>>,
    pub data_keep: Signal<In, Bits<LANES>>,
    pub hold: Signal<In, Bit>,
    pub q: Signal<In, Bits<{ 8 * LANES }>>,
    pub y: Signal<Out, Bits<{ 8 * LANES }>>,
}

/// Which payload byte lane `j` takes under shift `s`: (from the previous beat?, port lane).
fn merge_source(j: usize, s: usize) -> (bool, usize) {
    if j < s {
        (true, j + LANES - s - PREV_FROM)
    } else {
        (false, j - s)
    }
}

impl Logic for BeatMerge {
    fn update(&mut self) {
        if self.hold.val() {
            self.y.next = self.q.val();
            return;
        }
        let hdr = bytes_from_bits(self.hdr.val());
        let cur = bytes_from_bits(self.cur.val());
        let prev = bytes_from_bits(self.prev.val());
        let s = SHIFTS[self.shift.val().index()];
        let (hk, dk) = (self.hdr_keep.val().to_u64(), self.data_keep.val().to_u64());
        let y: Vec<u8> = (0..LANES)
            .map(|j| {
                if hk >> j & 1 == 1 {
                    hdr[j]
                } else if dk >> j & 1 == 1 {
                    match merge_source(j, s) {
                        (true, i) => prev[i],
                        (false, i) => cur[i],
                    }
                } else {
                    0
                }
            })
            .collect();
        self.y.next = bits_from_bytes(&y);
    }

    fn connect(&mut self) {
        self.y.connect();
    }

    fn hdl(&self) -> Verilog {
        let slice = |name: &str, i: usize| format!("{name}[{}:{}]", 8 * i + 7, 8 * i);
        let mut v = String::from(
            "// Header lanes, then the payload shifted behind the header, then zero.\n",
        );
        v.push_str("always @(*) begin\n");
        for j in 0..LANES {
            let pick = |k: usize| {
                let (from_prev, i) = merge_source(j, SHIFTS[k]);
                slice(if from_prev { "prev" } else { "cur" }, i)
            };
            v.push_str(&format!(
                "    {} = hold ? {} : hdr_keep[{j}] ? {} : !data_keep[{j}] ? 8'h00 : \
                 shift == 2'd0 ? {} : shift == 2'd1 ? {} : shift == 2'd2 ? {} : {};\n",
                slice("y", j),
                slice("q", j),
                slice("hdr", j),
                pick(0),
                pick(1),
                pick(2),
                pick(3)
            ));
        }
        v.push_str("end\n");
        Verilog::Custom(v)
    }
}

// ------------------------------------------------------------------------------------------
// CrcInsert

/// `y = d` with the ICRC written into the lanes `ins` selects: lane `j` takes ICRC byte
/// `(j + 4 - ICRC_PHASE) % 4` (byte 0 is `crc[7:0]`, first on the wire).
#[derive(LogicBlock, Default)]
pub struct CrcInsert {
    pub d: Signal<In, Bits<{ 8 * LANES }>>,
    pub crc: Signal<In, Bits<32>>,
    pub ins: Signal<In, Bits<LANES>>,
    pub y: Signal<Out, Bits<{ 8 * LANES }>>,
}

/// The ICRC byte lane `j` can hold.
pub fn crc_byte_of_lane(j: usize) -> usize {
    (j + 4 - ICRC_PHASE) % 4
}

impl Logic for CrcInsert {
    fn update(&mut self) {
        let mut d = bytes_from_bits(self.d.val());
        let crc = self.crc.val().to_u32().to_le_bytes();
        let ins = self.ins.val().to_u64();
        for (j, b) in d.iter_mut().enumerate() {
            if ins >> j & 1 == 1 {
                *b = crc[crc_byte_of_lane(j)];
            }
        }
        self.y.next = bits_from_bytes(&d);
    }

    fn connect(&mut self) {
        self.y.connect();
    }

    fn hdl(&self) -> Verilog {
        let mut v = String::from("// The ICRC into its lanes.\nalways @(*) begin\n");
        for j in 0..LANES {
            let b = crc_byte_of_lane(j);
            v.push_str(&format!(
                "    y[{hi}:{lo}] = ins[{j}] ? crc[{ch}:{cl}] : d[{hi}:{lo}];\n",
                hi = 8 * j + 7,
                lo = 8 * j,
                ch = 8 * b + 7,
                cl = 8 * b
            ));
        }
        v.push_str("end\n");
        Verilog::Custom(v)
    }
}

/// Frame layout facts the leaves rely on, checked against `rocenic_proto` at construction of
/// the TX path: the header lengths give exactly [`SHIFTS`] for payload-carrying opcodes, and
/// every header is 2 mod 4 bytes long ([`ICRC_PHASE`]).
pub fn check_layout_facts() {
    for op in Opcode::all() {
        let l = Layout::of(op);
        let h = l.hdr_len();
        assert_eq!(
            h % 4,
            ICRC_PHASE,
            "{op:?}: header of {h} bytes breaks the ICRC lane rule"
        );
        assert!(h <= HDR_BYTES, "{op:?}: header longer than two beats");
        if op.has_payload() {
            assert!(
                SHIFTS.contains(&(h % LANES)),
                "{op:?}: payload shift {} not in SHIFTS",
                h % LANES
            );
        }
    }
    let (lo, hi) = (
        *SHIFTS.iter().min().expect("shifts"),
        *SHIFTS.iter().max().expect("shifts"),
    );
    assert_eq!(CUR_LANES, LANES - lo);
    assert_eq!(PREV_FROM, LANES - hi);
    assert_eq!(ETHERNET_HEADER_LEN, 14);
}

/// The leaves' Verilog against their simulation: yosys evaluates each generated module on
/// random inputs (`eval`), and the outputs must be the ones `update` computes. (The blocks'
/// benches run the simulation only, so this is what ties them to the Verilog.)
#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;
    use crate::bench::Rng;

    /// An input value for yosys: `W'h...`.
    fn hex(bytes: &[u8], width: usize) -> String {
        let digits: String = bytes.iter().rev().map(|b| format!("{b:02x}")).collect();
        format!("{width}'h{digits}")
    }

    fn random_bytes(rng: &mut Rng, bits: usize) -> Vec<u8> {
        let mut b = rng.bytes(bits.div_ceil(8));
        if !bits.is_multiple_of(8) {
            *b.last_mut().expect("byte") &= (1u8 << (bits % 8)) - 1;
        }
        b
    }

    /// Runs `eval` once per vector (inputs as `(port, value)`), showing `outputs`; returns
    /// each result as a bit string, most significant bit first.
    fn yosys_eval(
        verilog: &str,
        name: &str,
        vectors: &[Vec<(&str, String)>],
        outputs: &[&str],
    ) -> Vec<Vec<String>> {
        let dir =
            std::env::temp_dir().join(format!("rocenic-leaf-eval-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        std::fs::write(dir.join("top.v"), verilog).expect("write");
        // `-norom`: a case table turned into a ROM cell is something `eval` cannot evaluate.
        let mut script =
            String::from("read_verilog top.v; hierarchy -top top; proc -norom; flatten;");
        for v in vectors {
            script.push_str(" eval");
            for (port, value) in v {
                script.push_str(&format!(" -set {port} {value}"));
            }
            for o in outputs {
                script.push_str(&format!(" -show {o}"));
            }
            script.push(';');
        }
        std::fs::write(dir.join("eval.ys"), &script).expect("script");
        let out = Command::new("yosys")
            .args(["-q", "-s", "eval.ys", "-l", "eval.log"])
            .current_dir(&dir)
            .output()
            .expect("yosys (scripts/install-deps.sh rtl)");
        assert!(out.status.success(), "{out:?}");
        let log = std::fs::read_to_string(dir.join("eval.log")).expect("log");
        let results: Vec<String> = log
            .lines()
            .filter_map(|l| l.trim().strip_prefix("Eval result: \\"))
            .map(|l| {
                let v = l.split('\'').nth(1).expect("value").trim();
                v.trim_end_matches('.').to_string()
            })
            .collect();
        assert_eq!(results.len(), vectors.len() * outputs.len(), "{log}");
        let _ = std::fs::remove_dir_all(dir);
        results
            .chunks(outputs.len())
            .map(<[String]>::to_vec)
            .collect()
    }

    /// A [`Bits`] value as yosys prints it.
    fn bin<const N: usize>(x: Bits<N>) -> String {
        (0..N)
            .rev()
            .map(|i| if x.get_bit(i) { '1' } else { '0' })
            .collect()
    }

    #[test]
    fn op_decode_verilog_matches() {
        let mut leaf = OpDecode::default();
        let v = crate::generate_verilog(&mut leaf);
        let ops: Vec<u8> = (0..=255).collect();
        let vectors: Vec<_> = ops
            .iter()
            .map(|&op| vec![("opcode", format!("8'd{op}"))])
            .collect();
        let outs = [
            "layout",
            "hdr_len",
            "hdr_lanes0",
            "hdr_lanes1",
            "shift",
            "hdr_big",
        ];
        let got = yosys_eval(&v, "opdecode", &vectors, &outs);
        for (&op, g) in ops.iter().zip(got) {
            leaf.opcode.next = u64::from(op).into();
            assert!(simulate(&mut leaf, 10));
            let want = [
                bin(leaf.layout.val()),
                bin(leaf.hdr_len.val()),
                bin(leaf.hdr_lanes0.val()),
                bin(leaf.hdr_lanes1.val()),
                bin(leaf.shift.val()),
                bin(Bits::<1>::from(leaf.hdr_big.val())),
            ];
            assert_eq!(g, want, "opcode {op}");
        }
    }

    #[test]
    fn hdr_bytes_verilog_matches() {
        let mut rng = Rng::new(21);
        let mut leaf = HdrBytes::default();
        let v = crate::generate_verilog(&mut leaf);
        let fields = [
            Field::DstMac,
            Field::SrcMac,
            Field::SrcIp,
            Field::DstIp,
            Field::UdpSport,
            Field::TotalLen,
            Field::IpCsum,
            Field::UdpLen,
            Field::Opcode,
            Field::BthFlags,
            Field::DestQp,
            Field::AckByte,
            Field::Psn,
            Field::Va,
            Field::Rkey,
            Field::DmaLen,
            Field::SwapAdd,
            Field::Compare,
            Field::Orig,
            Field::Syndrome,
            Field::Msn,
            Field::Imm,
        ];
        let mut vectors = vec![];
        let mut values = vec![];
        for layout in 0..8u64 {
            let vals: Vec<u64> = fields
                .iter()
                .map(|f| {
                    let n = f.port().1;
                    rng.next_u64() & (u64::MAX >> (64 - 8 * n))
                })
                .collect();
            let mut vec = vec![("layout", format!("3'd{layout}"))];
            for (f, x) in fields.iter().zip(&vals) {
                let (name, n) = f.port();
                vec.push((name, format!("{}'h{x:x}", 8 * n)));
            }
            vectors.push(vec);
            values.push((layout, vals));
        }
        let got = yosys_eval(&v, "hdrbytes", &vectors, &["y"]);
        for ((layout, vals), g) in values.into_iter().zip(got) {
            leaf.layout.next = layout.into();
            for (f, x) in fields.iter().zip(vals) {
                let x: u64 = x;
                match f {
                    Field::DstMac => leaf.dst_mac.next = x.into(),
                    Field::SrcMac => leaf.src_mac.next = x.into(),
                    Field::SrcIp => leaf.src_ip.next = x.into(),
                    Field::DstIp => leaf.dst_ip.next = x.into(),
                    Field::UdpSport => leaf.udp_sport.next = x.into(),
                    Field::TotalLen => leaf.total_len.next = x.into(),
                    Field::IpCsum => leaf.ip_csum.next = x.into(),
                    Field::UdpLen => leaf.udp_len.next = x.into(),
                    Field::Opcode => leaf.opcode.next = x.into(),
                    Field::BthFlags => leaf.bth_flags.next = x.into(),
                    Field::DestQp => leaf.dest_qp.next = x.into(),
                    Field::AckByte => leaf.ack_byte.next = x.into(),
                    Field::Psn => leaf.psn.next = x.into(),
                    Field::Va => leaf.va.next = x.into(),
                    Field::Rkey => leaf.rkey.next = x.into(),
                    Field::DmaLen => leaf.dma_len.next = x.into(),
                    Field::SwapAdd => leaf.swap_add.next = x.into(),
                    Field::Compare => leaf.compare.next = x.into(),
                    Field::Orig => leaf.orig.next = x.into(),
                    Field::Syndrome => leaf.syndrome.next = x.into(),
                    Field::Msn => leaf.msn.next = x.into(),
                    Field::Imm => leaf.imm.next = x.into(),
                }
            }
            assert!(simulate(&mut leaf, 10));
            assert_eq!(g[0], bin(leaf.y.val()), "layout {layout}");
        }
    }

    #[test]
    fn beat_merge_verilog_matches() {
        let mut rng = Rng::new(22);
        let mut leaf = BeatMerge::default();
        let v = crate::generate_verilog(&mut leaf);
        let mut vectors = vec![];
        let mut values = vec![];
        for i in 0..16u64 {
            let hdr = random_bytes(&mut rng, 512);
            let cur = random_bytes(&mut rng, 8 * CUR_LANES);
            let prev = random_bytes(&mut rng, 8 * (LANES - PREV_FROM));
            let q = random_bytes(&mut rng, 512);
            let shift = i % 4;
            let (nh, nd) = (rng.below(65), rng.below(65));
            let mask = |n: u64| if n == 64 { u64::MAX } else { (1u64 << n) - 1 };
            let (hk, dk) = (mask(nh.min(nd)), mask(nd));
            let hold = i == 15;
            vectors.push(vec![
                ("hdr", hex(&hdr, 512)),
                ("cur", hex(&cur, 8 * CUR_LANES)),
                ("prev", hex(&prev, 8 * (LANES - PREV_FROM))),
                ("q", hex(&q, 512)),
                ("shift", format!("2'd{shift}")),
                ("hdr_keep", format!("64'h{hk:x}")),
                ("data_keep", format!("64'h{dk:x}")),
                ("hold", format!("1'b{}", u8::from(hold))),
            ]);
            values.push((hdr, cur, prev, q, shift, hk, dk, hold));
        }
        let got = yosys_eval(&v, "beatmerge", &vectors, &["y"]);
        for ((hdr, cur, prev, q, shift, hk, dk, hold), g) in values.into_iter().zip(got) {
            leaf.hdr.next = bits_from_bytes(&hdr);
            leaf.cur.next = bits_from_bytes(&cur);
            leaf.prev.next = bits_from_bytes(&prev);
            leaf.q.next = bits_from_bytes(&q);
            leaf.shift.next = shift.into();
            leaf.hdr_keep.next = hk.into();
            leaf.data_keep.next = dk.into();
            leaf.hold.next = hold;
            assert!(simulate(&mut leaf, 10));
            assert_eq!(g[0], bin(leaf.y.val()), "shift {shift}, hold {hold}");
        }
    }

    #[test]
    fn crc_insert_verilog_matches() {
        let mut rng = Rng::new(23);
        let mut leaf = CrcInsert::default();
        let v = crate::generate_verilog(&mut leaf);
        let mut vectors = vec![];
        let mut values = vec![];
        for _ in 0..8 {
            let d = random_bytes(&mut rng, 512);
            let crc = rng.next_u64() as u32;
            let ins = rng.next_u64();
            vectors.push(vec![
                ("d", hex(&d, 512)),
                ("crc", format!("32'h{crc:x}")),
                ("ins", format!("64'h{ins:x}")),
            ]);
            values.push((d, crc, ins));
        }
        let got = yosys_eval(&v, "crcinsert", &vectors, &["y"]);
        for ((d, crc, ins), g) in values.into_iter().zip(got) {
            leaf.d.next = bits_from_bytes(&d);
            leaf.crc.next = u64::from(crc).into();
            leaf.ins.next = ins.into();
            assert!(simulate(&mut leaf, 10));
            assert_eq!(g[0], bin(leaf.y.val()));
        }
    }

    #[test]
    fn layout_facts_hold() {
        check_layout_facts();
        assert_eq!(Layout::of(Opcode::CompareSwap).hdr_len(), 82);
        assert_eq!(Layout::of(Opcode::Acknowledge).hdr_len(), 58);
        assert_eq!(Layout::of(Opcode::RdmaWriteOnlyWithImmediate).hdr_len(), 74);
    }
}
