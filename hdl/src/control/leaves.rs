//! Small hand-written leaves of the control plane, each a few lines of Verilog with its
//! Rust simulation beside it (as [`crate::common::masked_load::MaskedLoad`]): what RustHDL's
//! `#[hdl_gen]` cannot say without width-mismatched casts or loops it refuses — a word
//! selected by a run-time index out of a flat vector, a bank of words written by index,
//! and a bank of 64-bit counters incremented in parallel.

use crate::prelude::*;

/// `y = x[32*sel +: 32]`: word `sel` of a flat vector of `WORDS` 32-bit words (`FLAT` =
/// `32 * WORDS`, `AW` = bits of `sel`; a `sel` past the last word reads 0).
#[derive(LogicBlock)]
pub struct WordMux<const WORDS: usize, const AW: usize, const FLAT: usize> {
    pub x: Signal<In, Bits<FLAT>>,
    pub sel: Signal<In, Bits<AW>>,
    pub y: Signal<Out, Bits<32>>,
}

impl<const WORDS: usize, const AW: usize, const FLAT: usize> Default for WordMux<WORDS, AW, FLAT> {
    fn default() -> Self {
        assert_eq!(FLAT, 32 * WORDS, "WordMux: FLAT must be 32 * WORDS");
        assert!(
            WORDS <= 1 << AW && WORDS > 1 << (AW - 1),
            "WordMux: AW = clog2(WORDS)"
        );
        WordMux {
            x: Default::default(),
            sel: Default::default(),
            y: Default::default(),
        }
    }
}

impl<const WORDS: usize, const AW: usize, const FLAT: usize> Logic for WordMux<WORDS, AW, FLAT> {
    fn update(&mut self) {
        let i = self.sel.val().index();
        self.y.next = if i < WORDS {
            self.x.val().get_bits::<32>(32 * i)
        } else {
            0.into()
        };
    }

    fn connect(&mut self) {
        self.y.connect();
    }

    fn hdl(&self) -> Verilog {
        let mut v = String::from("always @(*) begin\n    case (sel)\n");
        for i in 0..WORDS {
            v.push_str(&format!(
                "        {AW}'d{i}: y = x[{}:{}];\n",
                32 * i + 31,
                32 * i
            ));
        }
        if WORDS < 1 << AW {
            v.push_str("        default: y = 32'h0;\n");
        }
        v.push_str("    endcase\nend\n");
        Verilog::Custom(v)
    }
}

/// `WORDS` 32-bit registers: written one at a time by index, all visible on `all` (word `i`
/// in bits `32i+31:32i`), one read by index. Synchronous reset to zero.
#[derive(LogicBlock)]
pub struct WordBank<const WORDS: usize, const AW: usize, const FLAT: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub we: Signal<In, Bit>,
    pub waddr: Signal<In, Bits<AW>>,
    pub wdata: Signal<In, Bits<32>>,
    pub raddr: Signal<In, Bits<AW>>,
    pub rdata: Signal<Out, Bits<32>>,
    pub all: Signal<Out, Bits<FLAT>>,
    _words: Vec<u32>,
    /// `_words` as the flat vector (kept up to date on writes: the simulator calls
    /// `update` many times a cycle).
    _all: Box<Bits<FLAT>>,
}

impl<const WORDS: usize, const AW: usize, const FLAT: usize> Default for WordBank<WORDS, AW, FLAT> {
    fn default() -> Self {
        assert_eq!(FLAT, 32 * WORDS, "WordBank: FLAT must be 32 * WORDS");
        assert_eq!(WORDS, 1 << AW, "WordBank: WORDS must be 2^AW");
        WordBank {
            clock: Default::default(),
            reset: Default::default(),
            we: Default::default(),
            waddr: Default::default(),
            wdata: Default::default(),
            raddr: Default::default(),
            rdata: Default::default(),
            all: Default::default(),
            _words: vec![0; WORDS],
            _all: Box::default(),
        }
    }
}

impl<const WORDS: usize, const AW: usize, const FLAT: usize> Logic for WordBank<WORDS, AW, FLAT> {
    fn update(&mut self) {
        if self.clock.pos_edge() {
            if self.reset.val() {
                self._words.iter_mut().for_each(|w| *w = 0);
                *self._all = Bits::default();
            } else if self.we.val() {
                let i = self.waddr.val().index();
                self._words[i] = self.wdata.val().to_u32();
                self._all.set_bits::<32>(32 * i, self.wdata.val());
            }
        }
        self.rdata.next = u64::from(self._words[self.raddr.val().index()]).into();
        self.all.next = *self._all;
    }

    fn connect(&mut self) {
        self.rdata.connect();
        self.all.connect();
    }

    fn hdl(&self) -> Verilog {
        let mut v = format!("reg [31:0] mem [0:{}];\n", WORDS - 1);
        v.push_str("integer i;\nalways @(posedge clock) begin\n");
        v.push_str(&format!(
            "    if (reset) begin\n        for (i = 0; i < {WORDS}; i = i + 1) mem[i] <= 32'h0;\n"
        ));
        v.push_str("    end else if (we) begin\n        mem[waddr] <= wdata;\n    end\nend\n");
        v.push_str("always @(*) begin\n    rdata = mem[raddr];\n");
        for i in 0..WORDS {
            v.push_str(&format!(
                "    all[{}:{}] = mem[{i}];\n",
                32 * i + 31,
                32 * i
            ));
        }
        v.push_str("end\n");
        Verilog::Custom(v)
    }
}

/// The bank of 16 global 64-bit counters (`regs::Counter` order). Each cycle counter `i`
/// adds `inc[i] ? amount(i) : 0`, where the amount is `tx_bytes` for `TxBytes`, `rx_bytes`
/// for `RxBytes` and 1 for the others; `value` is counter `idx`. Synchronous reset to zero.
#[derive(LogicBlock)]
pub struct CounterBank {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub inc: Signal<In, Bits<16>>,
    pub tx_bytes: Signal<In, Bits<16>>,
    pub rx_bytes: Signal<In, Bits<16>>,
    pub idx: Signal<In, Bits<4>>,
    pub value: Signal<Out, Bits<64>>,
    _cnt: Box<[u64; 16]>,
}

/// Counter numbers whose increment is a byte count.
const TX_BYTES: usize = rocenic_proto::abi::regs::Counter::TxBytes as usize;
const RX_BYTES: usize = rocenic_proto::abi::regs::Counter::RxBytes as usize;

impl Default for CounterBank {
    fn default() -> Self {
        assert_eq!(rocenic_proto::abi::regs::Counter::COUNT, 16);
        CounterBank {
            clock: Default::default(),
            reset: Default::default(),
            inc: Default::default(),
            tx_bytes: Default::default(),
            rx_bytes: Default::default(),
            idx: Default::default(),
            value: Default::default(),
            _cnt: Box::new([0; 16]),
        }
    }
}

impl Logic for CounterBank {
    fn update(&mut self) {
        if self.clock.pos_edge() {
            if self.reset.val() {
                *self._cnt = [0; 16];
            } else {
                let inc = self.inc.val().to_u32();
                for (i, c) in self._cnt.iter_mut().enumerate() {
                    if inc >> i & 1 != 0 {
                        let amount = match i {
                            TX_BYTES => u64::from(self.tx_bytes.val().to_u32()),
                            RX_BYTES => u64::from(self.rx_bytes.val().to_u32()),
                            _ => 1,
                        };
                        *c = c.wrapping_add(amount);
                    }
                }
            }
        }
        self.value.next = self._cnt[self.idx.val().index()].into();
    }

    fn connect(&mut self) {
        self.value.connect();
    }

    fn hdl(&self) -> Verilog {
        let mut v = String::from("reg [63:0] cnt [0:15];\ninteger i;\n");
        v.push_str("always @(posedge clock) begin\n    if (reset) begin\n");
        v.push_str("        for (i = 0; i < 16; i = i + 1) cnt[i] <= 64'h0;\n    end else begin\n");
        for i in 0..16 {
            let amount = match i {
                TX_BYTES => "{48'h0, tx_bytes}".to_string(),
                RX_BYTES => "{48'h0, rx_bytes}".to_string(),
                _ => "64'h1".to_string(),
            };
            v.push_str(&format!(
                "        if (inc[{i}]) cnt[{i}] <= cnt[{i}] + {amount};\n"
            ));
        }
        v.push_str("    end\nend\nalways @(*) value = cnt[idx];\n");
        Verilog::Custom(v)
    }
}

/// Declares a packed record layout: a module of `(offset, width)` constants (first field at
/// bit 0) with `BITS`, and a `Pack` leaf that concatenates its field inputs into `y`
/// (`y = {..., f1, f0}` in Verilog). Fields are `Bits<W>`; widths are written once here.
#[macro_export]
macro_rules! packed_layout {
    ($(#[$m:meta])* $layout:ident, $pack:ident; $($f:ident : $fw:literal),+ $(,)?) => {
        $(#[$m])*
        #[allow(non_upper_case_globals, dead_code)]
        pub mod $layout {
            /// Total width in bits.
            pub const BITS: usize = 0 $(+ $fw)+;
            /// `(offset, width)` of each field.
            pub const FIELDS: &[(&str, usize)] = &[$((stringify!($f), $fw)),+];
            /// The offset of field `name`.
            pub const fn offset(name: &str) -> usize {
                let mut at = 0;
                let mut i = 0;
                while i < FIELDS.len() {
                    if $crate::control::leaves::str_eq(FIELDS[i].0, name) {
                        return at;
                    }
                    at += FIELDS[i].1;
                    i += 1;
                }
                panic!("no such field");
            }
        }

        /// Packs the fields of the layout of the same name into one vector.
        #[derive(LogicBlock, Default)]
        pub struct $pack {
            $(pub $f: Signal<In, Bits<$fw>>,)+
            pub y: Signal<Out, Bits<{ $layout::BITS }>>,
        }

        impl Logic for $pack {
            fn update(&mut self) {
                let mut y = Bits::<{ $layout::BITS }>::default();
                let mut at = 0usize;
                $(
                    y.set_bits::<$fw>(at, self.$f.val());
                    at += $fw;
                )+
                let _ = at;
                self.y.next = y;
            }
            fn connect(&mut self) {
                self.y.connect();
            }
            fn hdl(&self) -> Verilog {
                let names: Vec<&str> = vec![$(stringify!($f)),+];
                let rev: Vec<&str> = names.into_iter().rev().collect();
                Verilog::Custom(format!("always @(*) y = {{{}}};\n", rev.join(", ")))
            }
        }
    };
}

/// Declares an `Unpack` leaf reading some fields of a [`packed_layout!`] layout out of `x`.
/// Only the fields named are outputs, so the parent uses every one (Verilator's UNUSED).
#[macro_export]
macro_rules! unpack_fields {
    ($(#[$m:meta])* $unpack:ident, $layout:ident; $($f:ident : $fw:literal),+ $(,)?) => {
        $(#[$m])*
        #[derive(LogicBlock, Default)]
        pub struct $unpack {
            pub x: Signal<In, Bits<{ $layout::BITS }>>,
            $(pub $f: Signal<Out, Bits<$fw>>,)+
        }

        impl Logic for $unpack {
            fn update(&mut self) {
                let x = self.x.val();
                $(
                    self.$f.next = x.get_bits::<$fw>($layout::offset(stringify!($f)));
                )+
            }
            fn connect(&mut self) {
                $(self.$f.connect();)+
            }
            fn hdl(&self) -> Verilog {
                // An unpacker picks some fields: the others are unused on purpose.
                let mut v = format!(
                    "// verilator lint_off UNUSEDSIGNAL\nwire [{}:0] unused_ok = x;\n\
                     // verilator lint_on UNUSEDSIGNAL\nalways @(*) begin\n",
                    $layout::BITS - 1
                );
                $(
                    let at = $layout::offset(stringify!($f));
                    assert!(
                        $layout::FIELDS.iter().any(|&(n, w)| n == stringify!($f) && w == $fw),
                        "field {} is not {} bits wide", stringify!($f), $fw
                    );
                    v.push_str(&format!("    {} = x[{}:{}];\n", stringify!($f), at + $fw - 1, at));
                )+
                v.push_str("end\n");
                Verilog::Custom(v)
            }
        }
    };
}

/// `a == b` for `&str` in a const context.
pub const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

packed_layout!(
    /// A 16-bit value zero-extended to 32 bits.
    half_word, HalfWord; lo: 16, hi: 16
);
packed_layout!(
    /// A QP number (12 bits) or a CQ number (13 bits) as a 16-bit doorbell index.
    qp_index16, QpIndex16; lo: 12, hi: 4
);
packed_layout!(cq_index16, CqIndex16; lo: 13, hi: 3);

#[cfg(test)]
mod tests {
    use super::*;

    fn cycle<T: Block>(b: &mut T, clock: fn(&mut T) -> &mut Signal<In, Clock>) {
        for level in [true, false] {
            clock(b).next = Clock { clk: level };
            assert!(simulate(b, 10));
        }
    }

    #[test]
    fn counter_bank_counts_past_32_bits() {
        let mut c = CounterBank::default();
        c.connect_all();
        let mut want = [0u64; 16];
        for i in 0..70_000u64 {
            let inc = (i * 0x9E37) as u16 | 0b1010; // the byte counters every cycle
            c.inc.next = u64::from(inc).into();
            c.tx_bytes.next = 0xffffu64.into();
            c.rx_bytes.next = (0xff00 | (i & 0xff)).into();
            for (k, w) in want.iter_mut().enumerate() {
                if inc >> k & 1 != 0 {
                    *w += match k {
                        TX_BYTES => 0xffff,
                        RX_BYTES => 0xff00 | (i & 0xff),
                        _ => 1,
                    };
                }
            }
            cycle(&mut c, |c| &mut c.clock);
        }
        assert!(want[TX_BYTES] > 1 << 32 && want[RX_BYTES] > 1 << 32);
        for (k, w) in want.iter().enumerate() {
            c.idx.next = (k as u64).into();
            assert!(simulate(&mut c, 10));
            assert_eq!(c.value.val().to_u64(), *w, "counter {k}");
        }
        c.reset.next = true;
        cycle(&mut c, |c| &mut c.clock);
        assert_eq!(c.value.val().to_u64(), 0);
    }

    #[test]
    fn word_bank_and_mux_pick_words() {
        let mut b = WordBank::<16, 4, 512>::default();
        b.connect_all();
        for i in 0..16u64 {
            b.we.next = true;
            b.waddr.next = i.into();
            b.wdata.next = (0x1000 + i).into();
            cycle(&mut b, |b| &mut b.clock);
        }
        let all = b.all.val();
        let mut m = WordMux::<16, 4, 512>::default();
        m.connect_all();
        m.x.next = all;
        for i in 0..16u64 {
            b.raddr.next = i.into();
            m.sel.next = i.into();
            assert!(simulate(&mut b, 10) && simulate(&mut m, 10));
            assert_eq!(b.rdata.val().to_u64(), 0x1000 + i);
            assert_eq!(m.y.val().to_u64(), 0x1000 + i);
        }
    }
}
