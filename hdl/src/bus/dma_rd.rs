//! The DMA read client: a request (address, length in bytes, tag) and the response beats
//! (data, tag, last, err), each with a valid/ready handshake. The port the engine's DMA
//! reads share is this group seen from the other side ([`DmaRdServer`]).

use crate::common::icrc::DATA_BITS;
use crate::dma::dma_rd_mux::TAG_BITS;
use crate::prelude::*;

port_group! {
    /// A block that reads host memory, with `T`-bit tags. A response beat carries the
    /// request's tag; `err` on a beat ends the read (the IOMMU refused it).
    client DmaRdClientT = "DmaRdClientT";
    /// The side that serves [`DmaRdClientT`]s.
    server DmaRdServerT = "DmaRdServerT";
    generics <const T: usize>;
    out {
        req_valid: Bit,
        req_addr: Bits<64>,
        req_len: Bits<16>,
        req_tag: Bits<T>,
        resp_ready: Bit,
    }
    in {
        req_ready: Bit,
        resp_valid: Bit,
        resp_data: Bits<DATA_BITS>,
        resp_tag: Bits<T>,
        resp_last: Bit,
        resp_err: Bit,
    }
}

/// A DMA read client with the port's tag width (what a block that reads host memory
/// holds).
pub type DmaRdClient = DmaRdClientT<TAG_BITS>;
/// The serving side of a [`DmaRdClient`].
pub type DmaRdServer = DmaRdServerT<TAG_BITS>;
