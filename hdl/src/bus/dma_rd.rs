//! The DMA read client: a request (address, length in bytes, tag) and the response beats
//! (data, tag, last, err), each with a valid/ready handshake. The port the engine's DMA
//! reads share is this group seen from the other side ([`DmaRdServer`]).

use crate::common::icrc::DATA_BITS;
use crate::prelude::*;

/// A block that reads host memory. A response beat carries the request's tag; `err` on a
/// beat ends the read (the IOMMU refused it).
#[derive(LogicInterface, Default)]
#[join = "DmaRdServer"]
pub struct DmaRdClient {
    pub req_valid: Signal<Out, Bit>,
    pub req_ready: Signal<In, Bit>,
    pub req_addr: Signal<Out, Bits<64>>,
    pub req_len: Signal<Out, Bits<16>>,
    pub req_tag: Signal<Out, Bits<8>>,
    pub resp_valid: Signal<In, Bit>,
    pub resp_ready: Signal<Out, Bit>,
    pub resp_data: Signal<In, Bits<DATA_BITS>>,
    pub resp_tag: Signal<In, Bits<8>>,
    pub resp_last: Signal<In, Bit>,
    pub resp_err: Signal<In, Bit>,
}

/// The side that serves [`DmaRdClient`]s: the same signals, the other way.
#[derive(LogicInterface, Default)]
#[join = "DmaRdClient"]
pub struct DmaRdServer {
    pub req_valid: Signal<In, Bit>,
    pub req_ready: Signal<Out, Bit>,
    pub req_addr: Signal<In, Bits<64>>,
    pub req_len: Signal<In, Bits<16>>,
    pub req_tag: Signal<In, Bits<8>>,
    pub resp_valid: Signal<Out, Bit>,
    pub resp_ready: Signal<In, Bit>,
    pub resp_data: Signal<Out, Bits<DATA_BITS>>,
    pub resp_tag: Signal<Out, Bits<8>>,
    pub resp_last: Signal<Out, Bit>,
    pub resp_err: Signal<Out, Bit>,
}
