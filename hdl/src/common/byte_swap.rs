//! `ByteSwap`: `y` is `x` with its bytes in reverse order, for turning header fields taken
//! from byte lanes (wire byte 0 in bits 7:0) into numbers (wire byte 0 most significant,
//! as the wire is big-endian) and back.
//!
//! Hand-written Verilog (one concatenation of byte part-selects): RustHDL's `#[hdl_gen]` has
//! no concatenation, and the shift-and-mask equivalent is longer and harder to read. Wiring
//! only; no logic.

use crate::prelude::*;

/// `y = x` with bytes reversed. `BYTES` bytes; `BITS` must be `8 * BYTES` (stable Rust cannot
/// compute it in the type).
#[derive(LogicBlock)]
pub struct ByteSwap<const BYTES: usize, const BITS: usize> {
    pub x: Signal<In, Bits<BITS>>,
    pub y: Signal<Out, Bits<BITS>>,
}

impl<const BYTES: usize, const BITS: usize> Default for ByteSwap<BYTES, BITS> {
    fn default() -> Self {
        assert_eq!(
            BITS,
            8 * BYTES,
            "ByteSwap<{BYTES}, {BITS}>: BITS must be 8 * BYTES"
        );
        assert!(BYTES >= 2, "ByteSwap of one byte is a wire");
        ByteSwap {
            x: Default::default(),
            y: Default::default(),
        }
    }
}

/// Reverses the bytes of the low `bytes` bytes of a value (simulation side).
pub fn swap_bytes<const BITS: usize>(x: Bits<BITS>, bytes: usize) -> Bits<BITS> {
    let mut y = Bits::<BITS>::default();
    for i in 0..bytes {
        for b in 0..8 {
            y = y.replace_bit(8 * (bytes - 1 - i) + b, x.get_bit(8 * i + b));
        }
    }
    y
}

impl<const BYTES: usize, const BITS: usize> Logic for ByteSwap<BYTES, BITS> {
    fn update(&mut self) {
        self.y.next = swap_bytes(self.x.val(), BYTES);
    }

    fn connect(&mut self) {
        self.y.connect();
    }

    fn hdl(&self) -> Verilog {
        // Wire byte order in, most significant first out: x's byte 0 ends up in y's top byte.
        let parts: Vec<String> = (0..BYTES)
            .map(|i| format!("x[{}:{}]", 8 * i + 7, 8 * i))
            .collect();
        Verilog::Custom(format!(
            "// y = x with its bytes reversed.\nalways @(*) begin\n    y = {{{}}};\nend\n",
            parts.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reverses_bytes() {
        let mut m = ByteSwap::<3, 24>::default();
        m.connect_all();
        m.x.next = bits::<24>(0x11_2233);
        assert!(simulate(&mut m, 10));
        assert_eq!(m.y.val(), bits::<24>(0x33_2211));
        assert_eq!(
            swap_bytes(bits::<64>(0x0102_0304_0506_0708), 8),
            bits::<64>(0x0807_0605_0403_0201)
        );
    }
}
