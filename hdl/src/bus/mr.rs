//! The MR check port: a request (key, PD, virtual address, length, the access it needs) and
//! its result (allowed, and the IOVA), each with a valid/ready handshake, one result per
//! request in order. [`MrCheck`](crate::control::mr_check::MrCheck) answers it.

use crate::prelude::*;

/// A block that has memory accesses checked. `need` is a set of `verbs::access` bits.
#[derive(LogicInterface, Default)]
#[join = "MrServer"]
pub struct MrClient {
    pub req_valid: Signal<Out, Bit>,
    pub req_ready: Signal<In, Bit>,
    pub req_key: Signal<Out, Bits<32>>,
    pub req_pdn: Signal<Out, Bits<8>>,
    pub req_va: Signal<Out, Bits<64>>,
    pub req_len: Signal<Out, Bits<32>>,
    pub req_need: Signal<Out, Bits<4>>,
    pub res_valid: Signal<In, Bit>,
    pub res_ready: Signal<Out, Bit>,
    pub res_ok: Signal<In, Bit>,
    pub res_iova: Signal<In, Bits<64>>,
}

/// The side that answers [`MrClient`]s: the same signals, the other way.
#[derive(LogicInterface, Default)]
#[join = "MrClient"]
pub struct MrServer {
    pub req_valid: Signal<In, Bit>,
    pub req_ready: Signal<Out, Bit>,
    pub req_key: Signal<In, Bits<32>>,
    pub req_pdn: Signal<In, Bits<8>>,
    pub req_va: Signal<In, Bits<64>>,
    pub req_len: Signal<In, Bits<32>>,
    pub req_need: Signal<In, Bits<4>>,
    pub res_valid: Signal<Out, Bit>,
    pub res_ready: Signal<In, Bit>,
    pub res_ok: Signal<Out, Bit>,
    pub res_iova: Signal<Out, Bits<64>>,
}
