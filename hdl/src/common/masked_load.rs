//! `MaskedLoad`: the next value of a beat register that either holds or loads a beat with
//! some byte lanes zeroed: `y = hold ? q : (x with the lanes whose keep bit is clear zeroed)`.
//!
//! Hand-written Verilog, one multiplexer with a zero input per lane, so that yosys sees a
//! clock enable (`hold`) and a synchronous reset per lane: on Xilinx the masking then costs
//! no LUT per bit (FDRE `CE` and `R` pins, one LUT per lane for the reset condition). The
//! same logic as `x & mask` under an `if` in `#[hdl_gen]` code costs a LUT per bit, and a
//! mask computed in the parent and read back in the parent's `if` makes Verilator report a
//! loop through the parent (UNOPTFLAT): the parent assigns `register.d = y` on its own.

use crate::prelude::*;

/// `y = hold ? q : x & lanes(keep)`. `LANES` lanes of 8 bits; `BITS` must be `8 * LANES`
/// (stable Rust cannot compute it in the type).
#[derive(LogicBlock)]
pub struct MaskedLoad<const LANES: usize, const BITS: usize> {
    /// The beat to load.
    pub x: Signal<In, Bits<BITS>>,
    /// Bit `i` keeps lane `i` (bits `8i+7:8i`) of `x`; other lanes load as zero.
    pub keep: Signal<In, Bits<LANES>>,
    /// Keep the register's value instead.
    pub hold: Signal<In, Bit>,
    /// The register's current value.
    pub q: Signal<In, Bits<BITS>>,
    /// The register's next value.
    pub y: Signal<Out, Bits<BITS>>,
}

impl<const LANES: usize, const BITS: usize> Default for MaskedLoad<LANES, BITS> {
    fn default() -> Self {
        assert_eq!(
            BITS,
            8 * LANES,
            "MaskedLoad<{LANES}, {BITS}>: BITS must be 8 * LANES"
        );
        MaskedLoad {
            x: Default::default(),
            keep: Default::default(),
            hold: Default::default(),
            q: Default::default(),
            y: Default::default(),
        }
    }
}

impl<const LANES: usize, const BITS: usize> Logic for MaskedLoad<LANES, BITS> {
    fn update(&mut self) {
        if self.hold.val() {
            self.y.next = self.q.val();
            return;
        }
        let keep = self.keep.val();
        let mut y = self.x.val();
        for lane in (0..LANES).filter(|&lane| !keep.get_bit(lane)) {
            for bit in 8 * lane..8 * lane + 8 {
                y = y.replace_bit(bit, false);
            }
        }
        self.y.next = y;
    }

    fn connect(&mut self) {
        self.y.connect();
    }

    fn hdl(&self) -> Verilog {
        let mut v = String::from(
            "// y = hold ? q : x with the byte lanes whose keep bit is clear zeroed.\n",
        );
        v.push_str("always @(*) begin\n");
        for lane in 0..LANES {
            let (hi, lo) = (8 * lane + 7, 8 * lane);
            let keep = if LANES == 1 {
                "keep".to_string()
            } else {
                format!("keep[{lane}]")
            };
            v.push_str(&format!(
                "    y[{hi}:{lo}] = hold ? q[{hi}:{lo}] : ({keep} ? x[{hi}:{lo}] : 8'h00);\n"
            ));
        }
        v.push_str("end\n");
        Verilog::Custom(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_with_lanes_zeroed_or_holds() {
        let mut m = MaskedLoad::<4, 32>::default();
        m.connect_all();
        m.x.next = bits::<32>(0xAABB_CCDD);
        m.q.next = bits::<32>(0x1122_3344);
        m.keep.next = bits::<4>(0b1010);
        m.hold.next = false;
        assert!(simulate(&mut m, 10));
        assert_eq!(m.y.val(), bits::<32>(0xAA00_CC00));
        m.hold.next = true;
        assert!(simulate(&mut m, 10));
        assert_eq!(m.y.val(), bits::<32>(0x1122_3344));
    }
}
