//! Building blocks every stage uses: register slices, wiring leaves, the CRC machinery.

pub mod byte_swap;
pub mod cat;
pub mod crc32;
pub mod event_sum;
pub mod gf2;
pub mod gf2_step;
pub mod icrc;
pub mod job_slice;
pub mod masked_load;
pub mod mtu_shift;
pub mod skid;
pub mod zext;
