//! `ZeroExt`: `y = x` zero-extended from `I` to `O` bits, the widening `#[hdl_gen]` lacks
//! (`bit_cast` writes a width-mismatched mask). A wiring leaf in custom Verilog, as
//! [`Cat`](crate::common::cat::Cat).

use crate::prelude::*;

/// `y = {0, x}`; `I <= O <= 64`.
#[derive(LogicBlock)]
pub struct ZeroExt<const I: usize, const O: usize> {
    pub x: Signal<In, Bits<I>>,
    pub y: Signal<Out, Bits<O>>,
}

impl<const I: usize, const O: usize> Default for ZeroExt<I, O> {
    fn default() -> Self {
        assert!(
            (1..=O).contains(&I) && O <= 64,
            "ZeroExt<{I}, {O}>: needs 1 <= I <= O <= 64"
        );
        ZeroExt {
            x: Default::default(),
            y: Default::default(),
        }
    }
}

impl<const I: usize, const O: usize> Logic for ZeroExt<I, O> {
    fn update(&mut self) {
        self.y.next = self.x.val().to_u64().to_bits();
    }

    fn connect(&mut self) {
        self.y.connect();
    }

    fn hdl(&self) -> Verilog {
        if I == O {
            Verilog::Custom("always @(*) y = x;\n".to_string())
        } else {
            Verilog::Custom(format!("always @(*) y = {{{}'d0, x}};\n", O - I))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widens_with_zeros() {
        let mut z = ZeroExt::<4, 24>::default();
        z.connect_all();
        z.x.next = bits::<4>(0xB);
        assert!(simulate(&mut z, 10));
        assert_eq!(z.y.val(), bits::<24>(0xB));
        let mut same = ZeroExt::<8, 8>::default();
        same.connect_all();
        same.x.next = bits::<8>(0xA5);
        assert!(simulate(&mut same, 10));
        assert_eq!(same.y.val(), bits::<8>(0xA5));
    }
}
