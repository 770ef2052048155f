//! DMA port sharing: several read or write clients on one port.

pub mod dma_rd_mux;
pub mod dma_wr_mux;
pub mod fabric;
pub mod slice;
