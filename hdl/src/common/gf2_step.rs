//! `Gf2Step`: a square GF(2) map that can be bypassed, `y = en ? M·x : x`.
//!
//! The conditional steps of a log-depth "advance by a variable count" (a CRC register moved
//! by `k` bytes as `M^(k0) · M^(2·k1) · M^(4·k2)...`) chain these blocks output to input.
//! Keeping the bypass multiplexer inside the leaf matters: with the multiplexer in the
//! parent's `#[hdl_gen]` code, the parent's single `always` block both drives a map's input
//! and reads its output, which Verilator reports as circular logic (UNOPTFLAT).
//! Like [`Gf2Map`](crate::common::gf2::Gf2Map), the simulation and the Verilog come from the same
//! [`Gf2Matrix`].

use crate::prelude::*;

use crate::common::gf2::{bits_from_words, bits_to_words, row_parities, Gf2Matrix};

/// `y = en ? M·x : x` over GF(2), combinationally, for an `N x N` matrix `M`.
#[derive(LogicBlock)]
pub struct Gf2Step<const N: usize> {
    /// The input vector.
    pub x: Signal<In, Bits<N>>,
    /// Apply the matrix (else pass `x` through).
    pub en: Signal<In, Bit>,
    /// `M·x` or `x`.
    pub y: Signal<Out, Bits<N>>,
    _matrix: Gf2Matrix,
}

impl<const N: usize> Gf2Step<N> {
    /// A step of the given `N x N` matrix.
    pub fn new(matrix: Gf2Matrix) -> Self {
        assert_eq!(
            (matrix.rows(), matrix.cols()),
            (N, N),
            "Gf2Step<{N}> needs an {N}x{N} matrix"
        );
        Gf2Step {
            x: Default::default(),
            en: Default::default(),
            y: Default::default(),
            _matrix: matrix,
        }
    }
}

impl<const N: usize> Logic for Gf2Step<N> {
    fn update(&mut self) {
        self.y.next = if self.en.val() {
            let x = bits_to_words(self.x.val());
            bits_from_words(&self._matrix.apply(&x))
        } else {
            self.x.val()
        };
    }

    fn connect(&mut self) {
        self.y.connect();
    }

    fn hdl(&self) -> Verilog {
        let (decls, parities) = row_parities(&self._matrix, "x");
        let mut v = String::from(
            "// y = en ? M x : x over GF(2): bit i of M x is the parity of the inputs row i\n\
             // selects, through shared XOR nodes n<k> (Paar's greedy factorisation).\n",
        );
        v.push_str(&decls);
        v.push_str("always @(*) begin\n");
        for (i, parity) in parities.into_iter().enumerate() {
            let (target, source) = if N == 1 {
                ("y".to_string(), "x".to_string())
            } else {
                (format!("y[{i}]"), format!("x[{i}]"))
            };
            let value = parity.unwrap_or_else(|| "1'b0".into());
            v.push_str(&format!("    {target} = en ? ({value}) : {source};\n"));
        }
        v.push_str("end\n");
        Verilog::Custom(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::crc32::zero_advance;

    #[test]
    fn applies_or_bypasses() {
        let m = zero_advance(3);
        let mut step = Gf2Step::<32>::new(m.clone());
        step.connect_all();
        step.x.next = bits::<32>(0x1234_5678);
        step.en.next = false;
        assert!(simulate(&mut step, 10));
        assert_eq!(step.y.val(), bits::<32>(0x1234_5678));
        step.en.next = true;
        assert!(simulate(&mut step, 10));
        assert_eq!(
            bits_to_words(step.y.val()),
            m.apply(&bits_to_words(bits::<32>(0x1234_5678)))
        );
    }
}
