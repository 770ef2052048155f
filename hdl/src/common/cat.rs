//! `Cat`: `y = {hi, lo}`, the concatenation of two vectors.
//!
//! RustHDL's `#[hdl_gen]` has no widening concatenation (`bit_cast` writes a width-mismatched
//! mask, which `verilator -Wall` flags), so a field built from narrower parts goes through
//! this hand-written leaf. Consume `y` in a statement of its own (conventions in `lib.rs`).

use crate::prelude::*;

/// `y = {hi, lo}`: `hi` in the top `H` bits, `lo` in the low `L`. `N` must be `H + L`
/// (stable Rust cannot compute it in the type).
#[derive(LogicBlock)]
pub struct Cat<const H: usize, const L: usize, const N: usize> {
    pub hi: Signal<In, Bits<H>>,
    pub lo: Signal<In, Bits<L>>,
    pub y: Signal<Out, Bits<N>>,
}

impl<const H: usize, const L: usize, const N: usize> Default for Cat<H, L, N> {
    fn default() -> Self {
        assert_eq!(N, H + L, "Cat<{H}, {L}, {N}>: N must be H + L");
        Cat {
            hi: Default::default(),
            lo: Default::default(),
            y: Default::default(),
        }
    }
}

impl<const H: usize, const L: usize, const N: usize> Logic for Cat<H, L, N> {
    fn update(&mut self) {
        let mut y = Bits::<N>::default();
        y.set_bits(0, self.lo.val());
        y.set_bits(L, self.hi.val());
        self.y.next = y;
    }

    fn connect(&mut self) {
        self.y.connect();
    }

    fn hdl(&self) -> Verilog {
        Verilog::Custom("always @(*) y = {hi, lo};\n".to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn puts_hi_above_lo() {
        let mut c = Cat::<1, 7, 8>::default();
        c.connect_all();
        c.hi.next = true.into();
        c.lo.next = bits::<7>(0x15);
        assert!(simulate(&mut c, 10));
        assert_eq!(c.y.val(), bits::<8>(0x95));
        let mut w = Cat::<64, 64, 128>::default();
        w.connect_all();
        w.hi.next = bits::<64>(0x0123_4567_89AB_CDEF);
        w.lo.next = bits::<64>(0xFEDC_BA98_7654_3210);
        assert!(simulate(&mut w, 10));
        assert_eq!(
            w.y.val().get_bits::<64>(64),
            bits::<64>(0x0123_4567_89AB_CDEF)
        );
        assert_eq!(
            w.y.val().get_bits::<64>(0),
            bits::<64>(0xFEDC_BA98_7654_3210)
        );
    }
}
