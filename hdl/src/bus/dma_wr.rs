//! The DMA write client: a request (address, length in bytes), the data beats (data,
//! keep, last) and a status per request (err: the IOMMU refused it), the request and the
//! data each with a valid/ready handshake; the status is a one-cycle pulse, one per
//! request, in request order. The port the engine's DMA writes share is this group seen
//! from the other side ([`DmaWrServer`]).

use crate::common::icrc::DATA_BITS;
use crate::prelude::*;

/// A block that writes host memory. Data lanes are packed from lane 0; `keep` marks the
/// bytes written on the last beat.
#[derive(LogicInterface, Default)]
#[join = "DmaWrServer"]
pub struct DmaWrClient {
    pub req_valid: Signal<Out, Bit>,
    pub req_ready: Signal<In, Bit>,
    pub req_addr: Signal<Out, Bits<64>>,
    pub req_len: Signal<Out, Bits<16>>,
    pub data_valid: Signal<Out, Bit>,
    pub data_ready: Signal<In, Bit>,
    pub data: Signal<Out, Bits<DATA_BITS>>,
    pub data_keep: Signal<Out, Bits<{ DATA_BITS / 8 }>>,
    pub data_last: Signal<Out, Bit>,
    pub status_valid: Signal<In, Bit>,
    pub status_err: Signal<In, Bit>,
}

/// The side that serves [`DmaWrClient`]s: the same signals, the other way.
#[derive(LogicInterface, Default)]
#[join = "DmaWrClient"]
pub struct DmaWrServer {
    pub req_valid: Signal<In, Bit>,
    pub req_ready: Signal<Out, Bit>,
    pub req_addr: Signal<In, Bits<64>>,
    pub req_len: Signal<In, Bits<16>>,
    pub data_valid: Signal<In, Bit>,
    pub data_ready: Signal<Out, Bit>,
    pub data: Signal<In, Bits<DATA_BITS>>,
    pub data_keep: Signal<In, Bits<{ DATA_BITS / 8 }>>,
    pub data_last: Signal<In, Bit>,
    pub status_valid: Signal<Out, Bit>,
    pub status_err: Signal<Out, Bit>,
}
