//! The control plane's requests and events between the command engine and the datapath:
//! QP events (a QP to ERR, RESET or destroyed) to the sequencers, CQ events (a CQ
//! created) to `Completion`, and the responder's requests to the command engine (a QP to
//! ERR; a SEND with invalidate's MR), each with a valid/ready handshake.

use crate::completion::{CQN_BITS, IOVA64_BITS, LOG_BITS};
use crate::prelude::*;

port_group! {
    /// A QP event of the command engine (`kind`: `cmd::QPEV_*`), for the datapath.
    client QpEvClient = "QpEvClient";
    /// The datapath's side of [`QpEvClient`].
    server QpEvServer = "QpEvServer";
    generics <const QA: usize>;
    out {
        valid: Bit,
        kind: Bits<2>,
        qpn: Bits<QA>,
    }
    in {
        ready: Bit,
    }
}

port_group! {
    /// A CQ event of the command engine (one per successful CREATE_CQ): the CQ, its ring
    /// IOVA without the six zero bits, its log2 entries.
    client CqEvClient = "CqEvClient";
    /// The side that sets up CQs (`Completion`).
    server CqEvServer = "CqEvServer";
    out {
        valid: Bit,
        cqn: Bits<CQN_BITS>,
        iova64: Bits<IOVA64_BITS>,
        log: Bits<LOG_BITS>,
    }
    in {
        ready: Bit,
    }
}

port_group! {
    /// A QP to move to ERR (the responder's QP errors).
    client QpErrClient = "QpErrClient";
    /// The command engine's side of [`QpErrClient`] (ready once `qpa` is written).
    server QpErrServer = "QpErrServer";
    generics <const QA: usize>;
    out {
        valid: Bit,
        qpn: Bits<QA>,
    }
    in {
        ready: Bit,
    }
}

port_group! {
    /// A SEND with invalidate: the MR named by `key` is invalidated if it exists, is valid,
    /// carries the key's tag and is in PD `pdn` (the model's `Tables::invalidate`); `ok`,
    /// with `ready`, says whether it was.
    client InvClient = "InvClient";
    /// The command engine's side of [`InvClient`].
    server InvServer = "InvServer";
    out {
        valid: Bit,
        key: Bits<32>,
        pdn: Bits<8>,
    }
    in {
        ready: Bit,
        ok: Bit,
    }
}
