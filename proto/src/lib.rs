//! The contracts every rocenic component shares: the RoCE v2 wire formats (`wire`),
//! the host ABI (`abi`: BAR0 register map, descriptor layouts, status codes) and the
//! device-side interface a simulated device is driven through (`device`).
#![forbid(unsafe_code)]

pub mod abi;
pub mod device;
pub mod wire;
