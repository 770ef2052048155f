//! Linear algebra over GF(2): the matrices behind CRC hardware, and the one block that turns a
//! matrix into logic.
//!
//! A CRC register update is linear over GF(2) in the register and in the data, so every
//! "advance the CRC by this many bytes" is a fixed matrix. [`Gf2Matrix`] builds and combines
//! such matrices at elaboration time (in Rust, when the block is constructed); [`Gf2Map`] is
//! the leaf block that evaluates `y = M·x` in hardware, one parity tree per output bit.
//!
//! `Gf2Map` (and its bypassable sibling `Gf2Step`) are the only blocks in this crate with
//! hand-written Verilog: `#[hdl_gen]` cannot express "output bit `i` is the parity of the
//! input bits selected by row `i`" without a loop that accumulates into a signal, which its
//! simulator and its Verilog would evaluate differently. Simulation (`update`) and Verilog
//! (`hdl`) both come from the same [`Gf2Matrix`]: the simulation multiplies by the matrix,
//! the Verilog is an [`XorNetwork`] factored from it (shared XOR nodes, then one XOR per
//! output), and `tests/verilated_rx.rs` / `tests/verilated_tx.rs` check the Verilog end to end
//! (the ICRC checker inside the RX front end, the generator inside the frame builder).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use crate::prelude::*;

/// Words of 64 bits needed to hold `bits` bits.
const fn words(bits: usize) -> usize {
    bits.div_ceil(64)
}

/// A dense `rows x cols` matrix over GF(2). Row `i` is stored as little-endian 64-bit words:
/// bit `j` of the row is `(row[j / 64] >> (j % 64)) & 1`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Gf2Matrix {
    rows: usize,
    cols: usize,
    data: Vec<Vec<u64>>,
}

impl Gf2Matrix {
    /// The all-zero matrix.
    pub fn zero(rows: usize, cols: usize) -> Gf2Matrix {
        Gf2Matrix {
            rows,
            cols,
            data: vec![vec![0; words(cols)]; rows],
        }
    }

    /// The `n x n` identity.
    pub fn identity(n: usize) -> Gf2Matrix {
        let mut m = Gf2Matrix::zero(n, n);
        for i in 0..n {
            m.set(i, i, true);
        }
        m
    }

    /// The matrix of a linear map given by its action on each unit vector: `column(j)` is
    /// the image of input bit `j`, as little-endian words of `rows` bits.
    pub fn from_columns(
        rows: usize,
        cols: usize,
        mut column: impl FnMut(usize) -> Vec<u64>,
    ) -> Self {
        let mut m = Gf2Matrix::zero(rows, cols);
        for j in 0..cols {
            let image = column(j);
            for i in 0..rows {
                if get_bit(&image, i) {
                    m.set(i, j, true);
                }
            }
        }
        m
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn cols(&self) -> usize {
        self.cols
    }

    pub fn get(&self, row: usize, col: usize) -> bool {
        get_bit(&self.data[row], col)
    }

    pub fn set(&mut self, row: usize, col: usize, value: bool) {
        let word = &mut self.data[row][col / 64];
        let mask = 1u64 << (col % 64);
        if value {
            *word |= mask;
        } else {
            *word &= !mask;
        }
    }

    /// Row `i` as little-endian words.
    pub fn row(&self, i: usize) -> &[u64] {
        &self.data[i]
    }

    /// Number of ones in the matrix: the XOR inputs its hardware form sums.
    pub fn weight(&self) -> usize {
        self.data
            .iter()
            .flatten()
            .map(|w| w.count_ones() as usize)
            .sum()
    }

    /// `M·x`, with `x` and the result as little-endian words.
    pub fn apply(&self, x: &[u64]) -> Vec<u64> {
        assert_eq!(x.len(), words(self.cols), "input width");
        let mut y = vec![0u64; words(self.rows)];
        for (i, row) in self.data.iter().enumerate() {
            let parity = row
                .iter()
                .zip(x)
                .fold(0u32, |acc, (r, v)| acc ^ (r & v).count_ones())
                & 1;
            if parity != 0 {
                y[i / 64] |= 1 << (i % 64);
            }
        }
        y
    }

    /// The product `self · other` (apply `other` first).
    pub fn mul(&self, other: &Gf2Matrix) -> Gf2Matrix {
        assert_eq!(self.cols, other.rows, "inner dimensions");
        Gf2Matrix::from_columns(self.rows, other.cols, |j| {
            let column: Vec<u64> = (0..words(other.rows))
                .map(|w| {
                    (0..64)
                        .filter(|b| w * 64 + b < other.rows && other.get(w * 64 + b, j))
                        .fold(0u64, |acc, b| acc | 1 << b)
                })
                .collect();
            self.apply(&column)
        })
    }

    /// `self^n` of a square matrix, by repeated squaring.
    pub fn pow(&self, mut n: u64) -> Gf2Matrix {
        assert_eq!(self.rows, self.cols, "square matrix");
        let mut result = Gf2Matrix::identity(self.rows);
        let mut base = self.clone();
        while n > 0 {
            if n & 1 == 1 {
                result = result.mul(&base);
            }
            base = base.mul(&base);
            n >>= 1;
        }
        result
    }

    /// The inverse of a square matrix, or `None` if it is singular (Gauss-Jordan).
    pub fn inverse(&self) -> Option<Gf2Matrix> {
        assert_eq!(self.rows, self.cols, "square matrix");
        let n = self.rows;
        let mut a = self.clone();
        let mut inv = Gf2Matrix::identity(n);
        for col in 0..n {
            let pivot = (col..n).find(|&r| a.get(r, col))?;
            a.data.swap(col, pivot);
            inv.data.swap(col, pivot);
            for r in 0..n {
                if r != col && a.get(r, col) {
                    for w in 0..words(n) {
                        let (ar, ai) = (a.data[col][w], inv.data[col][w]);
                        a.data[r][w] ^= ar;
                        inv.data[r][w] ^= ai;
                    }
                }
            }
        }
        Some(inv)
    }
}

/// Bit `i` of little-endian words.
pub fn get_bit(words: &[u64], i: usize) -> bool {
    (words[i / 64] >> (i % 64)) & 1 == 1
}

/// A [`Bits`] value as little-endian 64-bit words (bit `i` of the value is bit `i % 64` of
/// word `i / 64`).
pub fn bits_to_words<const N: usize>(value: Bits<N>) -> Vec<u64> {
    let mut out = vec![0u64; words(N)];
    for i in 0..N {
        if value.get_bit(i) {
            out[i / 64] |= 1 << (i % 64);
        }
    }
    out
}

/// The inverse of [`bits_to_words`]. Bits of `words` at or above `N` must be zero.
pub fn bits_from_words<const N: usize>(words: &[u64]) -> Bits<N> {
    let mut value = Bits::<N>::default();
    for i in (0..N).filter(|&i| get_bit(words, i)) {
        value = value.replace_bit(i, true);
    }
    value
}

/// Evaluates `y = M·x` over GF(2), combinationally: output bit `i` is the parity (XOR) of
/// the input bits that row `i` of the matrix selects.
///
/// Parameters: `I` input bits, `O` output bits, and the `O x I` matrix given to [`new`].
/// Hardware: the matrix's [`XorNetwork`] (XOR nodes shared between outputs, then one XOR
/// per output bit), purely combinational; the 512x32 CRC block matrix maps to about 1.4k
/// LUT. No registers.
///
/// [`new`]: Gf2Map::new
#[derive(LogicBlock)]
pub struct Gf2Map<const I: usize, const O: usize> {
    /// The input vector.
    pub x: Signal<In, Bits<I>>,
    /// `M·x`.
    pub y: Signal<Out, Bits<O>>,
    _matrix: Gf2Matrix,
}

impl<const I: usize, const O: usize> Gf2Map<I, O> {
    /// A map of the given `O x I` matrix. Every input bit must reach some output (a zero
    /// column would be an unused input port, which the lint gate rejects).
    pub fn new(matrix: Gf2Matrix) -> Self {
        assert_eq!(
            (matrix.rows(), matrix.cols()),
            (O, I),
            "Gf2Map<{I}, {O}> needs an {O}x{I} matrix"
        );
        for j in 0..I {
            assert!(
                (0..O).any(|i| matrix.get(i, j)),
                "Gf2Map: input bit {j} reaches no output"
            );
        }
        Gf2Map {
            x: Default::default(),
            y: Default::default(),
            _matrix: matrix,
        }
    }

    /// The matrix this block evaluates.
    pub fn matrix(&self) -> &Gf2Matrix {
        &self._matrix
    }
}

/// `width'h...` for the low `width` bits of little-endian words.
pub(crate) fn verilog_hex(words: &[u64], width: usize) -> String {
    let digits = width.div_ceil(4);
    let mut hex = String::with_capacity(digits);
    for d in (0..digits).rev() {
        let nibble = (0..4)
            .filter(|b| d * 4 + b < width && get_bit(words, d * 4 + b))
            .fold(0u32, |acc, b| acc | 1 << b);
        hex.push(char::from_digit(nibble, 16).expect("nibble"));
    }
    format!("{width}'h{hex}")
}

/// A matrix as a network of shared two-input XORs: `nodes[k] = a ^ b` over earlier signals
/// (inputs `0..cols`, then nodes), and each output the XOR of the signals in its row.
///
/// Built by Paar's greedy algorithm (1997): repeatedly XOR the pair of signals that the
/// most outputs have in common. CRC matrices share a lot: the ICRC's 512x32 block matrix
/// drops from 7957 XORs (one tree per row) to 2844, and yosys maps it to about a third
/// fewer LUTs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XorNetwork {
    inputs: usize,
    nodes: Vec<(usize, usize)>,
    rows: Vec<Vec<usize>>,
}

impl XorNetwork {
    /// Paar's greedy factorisation of `matrix` (at most 64 rows).
    pub fn paar(matrix: &Gf2Matrix) -> XorNetwork {
        let (rows, cols) = (matrix.rows(), matrix.cols());
        assert!(rows <= 64, "XorNetwork: at most 64 outputs");
        // For each signal, the outputs whose XOR still takes it directly.
        let mut users: Vec<u64> = (0..cols)
            .map(|j| {
                (0..rows)
                    .filter(|&i| matrix.get(i, j))
                    .fold(0u64, |acc, i| acc | 1 << i)
            })
            .collect();
        let mut nodes = vec![];
        loop {
            let shared: Vec<usize> = (0..users.len())
                .filter(|&s| users[s].count_ones() >= 2)
                .collect();
            let mut best = (1u32, 0, 0);
            for (k, &a) in shared.iter().enumerate() {
                for &b in &shared[k + 1..] {
                    let common = (users[a] & users[b]).count_ones();
                    if common > best.0 {
                        best = (common, a, b);
                    }
                }
            }
            if best.0 < 2 {
                break;
            }
            let (_, a, b) = best;
            let common = users[a] & users[b];
            users[a] &= !common;
            users[b] &= !common;
            users.push(common);
            nodes.push((a, b));
        }
        let rows = (0..rows)
            .map(|i| {
                (0..users.len())
                    .filter(|&s| users[s] >> i & 1 == 1)
                    .collect()
            })
            .collect();
        XorNetwork {
            inputs: cols,
            nodes,
            rows,
        }
    }

    /// [`paar`](Self::paar), computed once per matrix per process (it takes about two
    /// seconds on the 512x32 block matrix).
    pub fn cached(matrix: &Gf2Matrix) -> Arc<XorNetwork> {
        static CACHE: OnceLock<Mutex<HashMap<Gf2Matrix, Arc<XorNetwork>>>> = OnceLock::new();
        let cache = CACHE.get_or_init(Default::default);
        if let Some(net) = cache.lock().expect("cache").get(matrix) {
            return net.clone();
        }
        let net = Arc::new(XorNetwork::paar(matrix));
        cache
            .lock()
            .expect("cache")
            .insert(matrix.clone(), net.clone());
        net
    }

    /// Two-input XORs in the network.
    pub fn xor_count(&self) -> usize {
        self.nodes.len()
            + self
                .rows
                .iter()
                .map(|r| r.len().saturating_sub(1))
                .sum::<usize>()
    }

    /// Evaluates the network (for tests: it must equal the matrix).
    pub fn eval(&self, x: &[u64]) -> Vec<u64> {
        let mut signals: Vec<bool> = (0..self.inputs).map(|j| get_bit(x, j)).collect();
        for &(a, b) in &self.nodes {
            signals.push(signals[a] ^ signals[b]);
        }
        let mut y = vec![0u64; words(self.rows.len())];
        for (i, row) in self.rows.iter().enumerate() {
            if row.iter().fold(false, |acc, &s| acc ^ signals[s]) {
                y[i / 64] |= 1 << (i % 64);
            }
        }
        y
    }

    /// Verilog: one `wire` per node, and per output the XOR of its row (`None` for an
    /// all-zero row). `input` names the input vector.
    fn verilog(&self, input: &str) -> (String, Vec<Option<String>>) {
        let name = |s: usize| {
            if s < self.inputs {
                format!("{input}[{s}]")
            } else {
                format!("n{}", s - self.inputs)
            }
        };
        let mut decls = String::new();
        for (k, &(a, b)) in self.nodes.iter().enumerate() {
            decls.push_str(&format!("wire n{k} = {} ^ {};\n", name(a), name(b)));
        }
        let rows = self
            .rows
            .iter()
            .map(|row| {
                (!row.is_empty())
                    .then(|| row.iter().map(|&s| name(s)).collect::<Vec<_>>().join(" ^ "))
            })
            .collect();
        (decls, rows)
    }
}

/// The Verilog of `y = M·x`: declarations, and per output bit its expression (`None` for a
/// zero row). Matrices of up to 64 rows go through a shared [`XorNetwork`]; taller ones
/// are written one parity per row, `^(x & ROW_i)`.
pub(crate) fn row_parities(matrix: &Gf2Matrix, input: &str) -> (String, Vec<Option<String>>) {
    if matrix.rows() <= 64 {
        return XorNetwork::cached(matrix).verilog(input);
    }
    let mut decls = String::new();
    let parities = (0..matrix.rows())
        .map(|i| {
            let row = matrix.row(i);
            if row.iter().all(|&w| w == 0) {
                return None;
            }
            decls.push_str(&format!(
                "localparam [{}:0] ROW_{i} = {};\n",
                matrix.cols() - 1,
                verilog_hex(row, matrix.cols())
            ));
            Some(format!("^({input} & ROW_{i})"))
        })
        .collect();
    (decls, parities)
}

impl<const I: usize, const O: usize> Logic for Gf2Map<I, O> {
    fn update(&mut self) {
        let x = bits_to_words(self.x.val());
        self.y.next = bits_from_words(&self._matrix.apply(&x));
    }

    fn connect(&mut self) {
        self.y.connect();
    }

    fn hdl(&self) -> Verilog {
        let (decls, parities) = row_parities(&self._matrix, "x");
        let mut v = String::from(
            "// y = M x over GF(2): output bit i is the parity of the inputs row i selects,\n\
             // through shared XOR nodes n<k> (Paar's greedy factorisation).\n",
        );
        v.push_str(&decls);
        v.push_str("always @(*) begin\n");
        for (i, parity) in parities.into_iter().enumerate() {
            let target = if O == 1 {
                "y".to_string()
            } else {
                format!("y[{i}]")
            };
            let value = parity.unwrap_or_else(|| "1'b0".into());
            v.push_str(&format!("    {target} = {value};\n"));
        }
        v.push_str("end\n");
        Verilog::Custom(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn random_matrix(rows: usize, cols: usize, seed: u64) -> Gf2Matrix {
        let mut state = seed;
        Gf2Matrix::from_columns(rows, cols, |_| {
            (0..words(rows))
                .map(|w| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    let bits = (rows - w * 64).min(64);
                    if bits == 64 {
                        state
                    } else {
                        state & ((1 << bits) - 1)
                    }
                })
                .collect()
        })
    }

    #[test]
    fn inverse_times_matrix_is_identity() {
        for seed in 1..20 {
            let m = random_matrix(32, 32, seed);
            if let Some(inv) = m.inverse() {
                assert_eq!(m.mul(&inv), Gf2Matrix::identity(32));
                assert_eq!(inv.mul(&m), Gf2Matrix::identity(32));
            }
        }
    }

    #[test]
    fn pow_agrees_with_repeated_products() {
        let m = random_matrix(32, 32, 7);
        let mut p = Gf2Matrix::identity(32);
        for n in 0..10 {
            assert_eq!(m.pow(n), p);
            p = p.mul(&m);
        }
    }

    #[test]
    fn words_round_trip_through_bits() {
        let w = vec![0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210];
        let b: Bits<128> = bits_from_words(&w);
        assert_eq!(bits_to_words(b), w);
        let b: Bits<20> = bits_from_words(&[0xabcde]);
        assert_eq!(b, bits::<20>(0xabcde));
    }

    #[test]
    fn map_simulates_its_matrix() {
        let m = random_matrix(32, 96, 3);
        let mut map = Gf2Map::<96, 32>::new(m.clone());
        map.connect_all();
        let x = vec![0xdead_beef_0bad_f00d, 0x1234_5678];
        map.x.next = bits_from_words(&x);
        assert!(simulate(&mut map, 10));
        assert_eq!(bits_to_words(map.y.val()), m.apply(&x));
    }

    #[test]
    fn xor_network_equals_its_matrix() {
        for m in [
            random_matrix(32, 96, 5),
            crate::common::crc32::zero_advance(64),
            crate::common::crc32::block_matrix(16),
        ] {
            let net = XorNetwork::paar(&m);
            assert!(net.xor_count() <= m.weight() - m.rows());
            let mut state = 0x1234_5678_9abc_def0u64;
            for _ in 0..50 {
                let x: Vec<u64> = (0..words(m.cols()))
                    .map(|w| {
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        let bits = (m.cols() - w * 64).min(64);
                        if bits == 64 {
                            state
                        } else {
                            state & ((1 << bits) - 1)
                        }
                    })
                    .collect();
                assert_eq!(net.eval(&x), m.apply(&x));
            }
        }
    }

    #[test]
    fn verilog_hex_is_exact_width() {
        assert_eq!(verilog_hex(&[0x1f], 5), "5'h1f");
        assert_eq!(verilog_hex(&[0xabc], 12), "12'habc");
        assert_eq!(verilog_hex(&[u64::MAX, 1], 65), "65'h1ffffffffffffffff");
    }
}
