//! `QpEvSplit`: the command engine's QP events ([`QpEvServer`]) to the datapath blocks
//! that forget a QP's state, each a [`QpClrClient`].
//!
//! - `QPEV_ERROR` (the host moved the QP to ERR): the responder's flush (`flush`).
//! - `QPEV_RESET`, `QPEV_DESTROYED`: the requester's op-ring clear (`clear`) and the
//!   replay cache's (`replay`, in the atomic unit), both in the cycle both are ready.
//! - Any other kind is taken at once.
//!
//! Combinational.

use crate::bus::ctl::{QpClrClient, QpEvServer};
use crate::control::cmd::{QPEV_DESTROYED, QPEV_ERROR, QPEV_RESET};
use crate::prelude::*;

/// The split; see the [module docs](self).
#[derive(LogicBlock)]
pub struct QpEvSplit<const QA: usize> {
    pub s: QpEvServer<QA>,
    /// To the responder.
    pub flush: QpClrClient<QA>,
    /// To the requester.
    pub clear: QpClrClient<QA>,
    /// To the atomic unit's replay cache.
    pub replay: QpClrClient<QA>,
    k_error: Constant<Bits<2>>,
    k_reset: Constant<Bits<2>>,
    k_destroyed: Constant<Bits<2>>,
    /// The event is a RESET or DESTROYED.
    gone: Signal<Local, Bit>,
}

impl<const QA: usize> Default for QpEvSplit<QA> {
    fn default() -> Self {
        QpEvSplit {
            s: Default::default(),
            flush: Default::default(),
            clear: Default::default(),
            replay: Default::default(),
            k_error: Constant::new(QPEV_ERROR.to_bits()),
            k_reset: Constant::new(QPEV_RESET.to_bits()),
            k_destroyed: Constant::new(QPEV_DESTROYED.to_bits()),
            gone: Default::default(),
        }
    }
}

impl<const QA: usize> Logic for QpEvSplit<QA> {
    #[hdl_gen]
    fn update(&mut self) {
        self.gone.next = (self.s.kind.val() == self.k_reset.val())
            | (self.s.kind.val() == self.k_destroyed.val());
        self.flush.valid.next = self.s.valid.val() & (self.s.kind.val() == self.k_error.val());
        self.flush.qpn.next = self.s.qpn.val();
        self.clear.valid.next = self.s.valid.val() & self.gone.val() & self.replay.ready.val();
        self.clear.qpn.next = self.s.qpn.val();
        self.replay.valid.next = self.s.valid.val() & self.gone.val() & self.clear.ready.val();
        self.replay.qpn.next = self.s.qpn.val();
        self.s.ready.next = ((self.s.kind.val() == self.k_error.val()) & self.flush.ready.val())
            | (self.gone.val() & self.clear.ready.val() & self.replay.ready.val())
            | (!self.gone.val() & (self.s.kind.val() != self.k_error.val()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::cmd::QPEV_ACTIVE;

    /// Each kind reaches the blocks it names and is taken when they are ready.
    #[test]
    fn each_event_goes_to_its_blocks() {
        let mut q = QpEvSplit::<8>::default();
        q.connect_all();
        for kind in [QPEV_ERROR, QPEV_RESET, QPEV_DESTROYED, QPEV_ACTIVE] {
            for ready in 0..8u32 {
                let (f, c, r) = (ready & 1 != 0, ready & 2 != 0, ready & 4 != 0);
                q.s.valid.next = true;
                q.s.kind.next = kind.to_bits();
                q.s.qpn.next = bits::<8>(0x5A);
                q.flush.ready.next = f;
                q.clear.ready.next = c;
                q.replay.ready.next = r;
                assert!(simulate(&mut q, 10));
                let gone = kind == QPEV_RESET || kind == QPEV_DESTROYED;
                let what = format!("kind {kind} ready {ready:03b}");
                assert_eq!(q.flush.valid.val(), kind == QPEV_ERROR, "{what}");
                assert_eq!(q.clear.valid.val(), gone && r, "{what}");
                assert_eq!(q.replay.valid.val(), gone && c, "{what}");
                let taken = match kind {
                    QPEV_ERROR => f,
                    _ if gone => c && r,
                    _ => true,
                };
                assert_eq!(q.s.ready.val(), taken, "{what}");
                assert_eq!(q.clear.qpn.val().to_u64(), 0x5A);
            }
        }
    }
}
