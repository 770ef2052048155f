//! The DMA write client: a request (address, length in bytes), the data beats (data,
//! keep, last) and a status per request (err: the IOMMU refused it), the request and the
//! data each with a valid/ready handshake; the status is a one-cycle pulse, one per
//! request, in request order. The port the engine's DMA writes share is this group seen
//! from the other side ([`DmaWrServer`]).

use crate::common::icrc::DATA_BITS;
use crate::prelude::*;

port_group! {
    /// A block that writes host memory. Data lanes are packed from lane 0; `keep` marks
    /// the bytes written on the last beat.
    client DmaWrClient = "DmaWrClient";
    /// The side that serves [`DmaWrClient`]s.
    server DmaWrServer = "DmaWrServer";
    out {
        req_valid: Bit,
        req_addr: Bits<64>,
        req_len: Bits<16>,
        data_valid: Bit,
        data: Bits<DATA_BITS>,
        data_keep: Bits<{ DATA_BITS / 8 }>,
        data_last: Bit,
    }
    in {
        req_ready: Bit,
        data_ready: Bit,
        status_valid: Bit,
        status_err: Bit,
    }
}
