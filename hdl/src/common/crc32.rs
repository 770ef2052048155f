//! The reflected CRC-32 (the Ethernet/zlib polynomial) as linear maps, for building CRC
//! hardware. Not a block: the matrices here are computed when a block is constructed.
//!
//! The register update `r' = (r >> 8) ^ T[(r ^ byte) & 0xFF]` is linear over GF(2) in `r`
//! and in the data. Two facts the hardware relies on:
//! - a register value `r` in front of data from a zero register is the same as a zero
//!   register with `r` XORed into the first four data bytes (little-endian), when at least
//!   four bytes follow; and zero bytes in front of data leave a zero register at zero;
//! - advancing by `n` zero bytes is an invertible matrix, so "the CRC of these bytes
//!   followed by `k` zero bytes" can be turned back into "the CRC of these bytes".

use crate::common::gf2::Gf2Matrix;

/// The reflected CRC-32 polynomial (IEEE 802.3, zlib).
pub const POLY: u32 = 0xEDB8_8320;

/// The register value after any data followed by its own CRC-32 (`to_le_bytes` of the
/// final, inverted value): the check residue. The final inverted CRC is then `0x2144DF1C`.
pub const RESIDUE: u32 = 0xDEBB_20E3;

/// Shifts one byte into the register (no initial value, no final XOR).
pub const fn update_byte(reg: u32, byte: u8) -> u32 {
    let mut r = reg ^ byte as u32;
    let mut i = 0;
    while i < 8 {
        r = if r & 1 != 0 { (r >> 1) ^ POLY } else { r >> 1 };
        i += 1;
    }
    r
}

/// Shifts bytes into the register (no initial value, no final XOR).
pub fn update(reg: u32, bytes: &[u8]) -> u32 {
    bytes.iter().fold(reg, |r, &b| update_byte(r, b))
}

/// The 32x32 matrix that advances the register over `n` zero bytes.
pub fn zero_advance(n: usize) -> Gf2Matrix {
    let zeros = vec![0u8; n];
    Gf2Matrix::from_columns(32, 32, |j| vec![u64::from(update(1 << j, &zeros))])
}

/// The 32 x 8n matrix of an `n`-byte block from a zero register: input bit `8k + b` is bit
/// `b` of byte `k` (byte 0 first on the wire, in bits 7:0, as on the 512-bit bus).
pub fn block_matrix(n: usize) -> Gf2Matrix {
    Gf2Matrix::from_columns(32, 8 * n, |j| {
        let mut block = vec![0u8; n];
        block[j / 8] = 1 << (j % 8);
        vec![u64::from(update(0, &block))]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes_to_words(bytes: &[u8]) -> Vec<u64> {
        bytes
            .chunks(8)
            .map(|c| {
                let mut w = [0u8; 8];
                w[..c.len()].copy_from_slice(c);
                u64::from_le_bytes(w)
            })
            .collect()
    }

    #[test]
    fn matches_crc32fast() {
        let data = b"123456789";
        assert_eq!(!update(!0, data), 0xCBF4_3926);
    }

    #[test]
    fn residue_of_data_followed_by_its_crc() {
        for len in 0..40usize {
            let data: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
            let crc = !update(!0, &data);
            let reg = update(update(!0, &data), &crc.to_le_bytes());
            assert_eq!(reg, RESIDUE, "len {len}");
            assert_eq!(!reg, 0x2144_DF1C);
        }
    }

    #[test]
    fn block_matrix_is_the_crc_of_a_block() {
        let block: Vec<u8> = (0..64).map(|i: u8| i.wrapping_mul(97) ^ 0x5A).collect();
        let m = block_matrix(64);
        assert_eq!(
            m.apply(&bytes_to_words(&block)),
            vec![u64::from(update(0, &block))]
        );
    }

    #[test]
    fn register_folds_into_the_first_four_bytes() {
        let data: Vec<u8> = (0..10).map(|i: u8| i.wrapping_mul(29) ^ 0xC3).collect();
        let reg = 0x1234_5678u32;
        let mut folded = data.clone();
        for (b, r) in folded.iter_mut().zip(reg.to_le_bytes()) {
            *b ^= r;
        }
        assert_eq!(update(reg, &data), update(0, &folded));
    }

    #[test]
    fn zero_advance_is_invertible_and_undoes_padding() {
        let data = b"rocenic";
        let reg = update(!0, data);
        for k in [1usize, 2, 5, 17, 63] {
            let padded = update(reg, &vec![0; k]);
            let back = zero_advance(k)
                .inverse()
                .expect("invertible")
                .apply(&[u64::from(padded)]);
            assert_eq!(back, vec![u64::from(reg)]);
        }
    }
}
