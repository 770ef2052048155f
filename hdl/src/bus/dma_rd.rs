//! The DMA read client: a request (address, length in bytes, tag) and the response beats
//! (data, tag, last, err), each with a valid/ready handshake. The port the engine's DMA
//! reads share is this group seen from the other side ([`DmaRdServer`]).

use crate::common::icrc::DATA_BITS;
use crate::prelude::*;

port_group! {
    /// A block that reads host memory. A response beat carries the request's tag; `err` on
    /// a beat ends the read (the IOMMU refused it).
    client DmaRdClient = "DmaRdClient";
    /// The side that serves [`DmaRdClient`]s.
    server DmaRdServer = "DmaRdServer";
    out {
        req_valid: Bit,
        req_addr: Bits<64>,
        req_len: Bits<16>,
        req_tag: Bits<8>,
        resp_ready: Bit,
    }
    in {
        req_ready: Bit,
        resp_valid: Bit,
        resp_data: Bits<DATA_BITS>,
        resp_tag: Bits<8>,
        resp_last: Bit,
        resp_err: Bit,
    }
}
