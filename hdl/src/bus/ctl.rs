//! The control plane's requests and events between the command engine and the datapath:
//! QP events (a QP to ERR, RESET or destroyed) to the sequencers, CQ events (a CQ
//! created) to `Completion`, and the responder's requests to the command engine (a QP to
//! ERR; a SEND with invalidate's MR), each with a valid/ready handshake.

use crate::completion::{CQN_BITS, IOVA64_BITS, LOG_BITS};
use crate::prelude::*;

port_group! {
    /// A QP whose state a datapath block forgets (a QP event, as `QpEvSplit` hands it out
    /// by kind): the responder's flush of a QP moved to ERR, the requester's op-ring clear
    /// and the replay cache's of a QP reset or destroyed.
    client QpClrClient = "QpClrClient";
    /// The datapath block's side of [`QpClrClient`].
    server QpClrServer = "QpClrServer";
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

/// The QP errors of two sources into the command engine's [`QpErrServer`]: `first` (the
/// responder's, a handshake) and a pulse (`pulse_valid`, `pulse_qpn`: the requester's,
/// one cycle, no ready), held until taken. The port stays with one source until it is
/// taken (the command engine reads the QP number over three cycles), `first` chosen
/// otherwise. A second pulse before the first is taken replaces it: the requester pulses
/// at most once per WQE it fetches (each needs a DMA read and tens of cycles), and the
/// command engine takes one in three cycles between commands.
#[derive(LogicBlock, Default)]
pub struct QpErrShare<const QA: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// The client served first (the responder's QP errors).
    pub first: QpErrServer<QA>,
    /// The requester's QP-error pulse.
    pub pulse_valid: Signal<In, Bit>,
    pub pulse_qpn: Signal<In, Bits<QA>>,
    pub out: QpErrClient<QA>,
    /// A pulse not yet taken.
    pend: DFF<Bit>,
    pend_qpn: DFF<Bits<QA>>,
    /// The port is held by one source until taken (`sel`: 1 = the pulse).
    busy: DFF<Bit>,
    sel: DFF<Bit>,
    /// The source the port serves this cycle (1 = the pulse).
    now: Signal<Local, Bit>,
}

impl<const QA: usize> Logic for QpErrShare<QA> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, pend, pend_qpn, busy, sel);
        self.now.next =
            (self.busy.q.val() & self.sel.q.val()) | (!self.busy.q.val() & !self.first.valid.val());
        self.out.valid.next = self.first.valid.val();
        self.out.qpn.next = self.first.qpn.val();
        if self.now.val() {
            self.out.valid.next = self.pend.q.val();
            self.out.qpn.next = self.pend_qpn.q.val();
        }
        self.first.ready.next = self.out.ready.val() & !self.now.val();
        self.sel.d.next = self.now.val();
        self.busy.d.next = !self.reset.val()
            & ((self.first.valid.val() & !self.now.val()) | (self.pend.q.val() & self.now.val()))
            & !self.out.ready.val();
        self.pend.d.next = !self.reset.val()
            & (self.pulse_valid.val()
                | (self.pend.q.val() & !(self.out.ready.val() & self.now.val())));
        if self.pulse_valid.val() {
            self.pend_qpn.d.next = self.pulse_qpn.val();
        }
    }
}
