//! Global and per-QP counters, indexed by the ABI's `Counter`.

use rocenic_proto::abi::regs::Counter;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters([u64; Counter::COUNT]);

impl Counters {
    pub fn add(&mut self, c: Counter, n: u64) {
        self.0[c as usize] = self.0[c as usize].wrapping_add(n);
    }
    pub fn get(&self, c: Counter) -> u64 {
        self.0[c as usize]
    }
    pub fn as_array(&self) -> &[u64; Counter::COUNT] {
        &self.0
    }
}
