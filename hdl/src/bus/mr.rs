//! The MR check port: a request (key, PD, virtual address, length, the access it needs) and
//! its result (allowed, and the IOVA), each with a valid/ready handshake, one result per
//! request in order. [`MrCheck`](crate::control::mr_check::MrCheck) answers it.

use crate::prelude::*;

port_group! {
    /// A block that has memory accesses checked. `need` is a set of `verbs::access` bits.
    client MrClient = "MrClient";
    /// The side that answers [`MrClient`]s.
    server MrServer = "MrServer";
    out {
        req_valid: Bit,
        req_key: Bits<32>,
        req_pdn: Bits<8>,
        req_va: Bits<64>,
        req_len: Bits<32>,
        req_need: Bits<4>,
        res_ready: Bit,
    }
    in {
        req_ready: Bit,
        res_valid: Bit,
        res_ok: Bit,
        res_iova: Bits<64>,
    }
}
