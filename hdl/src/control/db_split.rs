//! `DbSplit`: the register file's SQ/RQ doorbells ([`DbServer`], one FIFO in write order)
//! to the requester (`sq`) and the responder (`rq`), each a [`QDbClient`].
//!
//! The head doorbell goes to the sequencer its kind names and leaves when that one takes
//! it (so a doorbell waits behind an earlier one of the other kind, as the host wrote
//! them); a doorbell of any other kind is taken and dropped. The QP is the low `QA` bits
//! of the doorbell's index. Combinational.

use crate::bus::reg::{DbServer, QDbClient};
use crate::control::regfile::{DB_RQ, DB_SQ};
use crate::prelude::*;

/// The split; see the [module docs](self).
#[derive(LogicBlock)]
pub struct DbSplit<const QA: usize> {
    pub s: DbServer,
    /// To the requester.
    pub sq: QDbClient<QA>,
    /// To the responder.
    pub rq: QDbClient<QA>,
    k_sq: Constant<Bits<2>>,
    k_rq: Constant<Bits<2>>,
    /// Above the `QA` bits of a QP number.
    unused_index: Signal<Local, Bits<16>>,
}

impl<const QA: usize> Default for DbSplit<QA> {
    fn default() -> Self {
        DbSplit {
            s: Default::default(),
            sq: Default::default(),
            rq: Default::default(),
            k_sq: Constant::new(DB_SQ.to_bits()),
            k_rq: Constant::new(DB_RQ.to_bits()),
            unused_index: Default::default(),
        }
    }
}

impl<const QA: usize> Logic for DbSplit<QA> {
    #[hdl_gen]
    fn update(&mut self) {
        self.sq.valid.next = self.s.valid.val() & (self.s.kind.val() == self.k_sq.val());
        self.sq.qpn.next = self.s.index.val().get_bits::<QA>(0);
        self.sq.pi.next = self.s.value.val();
        self.rq.valid.next = self.s.valid.val() & (self.s.kind.val() == self.k_rq.val());
        self.rq.qpn.next = self.s.index.val().get_bits::<QA>(0);
        self.rq.pi.next = self.s.value.val();
        self.s.ready.next = ((self.s.kind.val() == self.k_rq.val()) & self.rq.ready.val())
            | ((self.s.kind.val() == self.k_sq.val()) & self.sq.ready.val())
            | ((self.s.kind.val() != self.k_rq.val()) & (self.s.kind.val() != self.k_sq.val()));
        self.unused_index.next = self.s.index.val();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::regfile::DB_CQ;

    /// Each kind reaches its sequencer and waits for its ready; another kind is dropped.
    #[test]
    fn each_doorbell_goes_to_its_sequencer() {
        let mut d = DbSplit::<8>::default();
        d.connect_all();
        for (kind, sq_ready, rq_ready) in [
            (DB_SQ, true, false),
            (DB_SQ, false, true),
            (DB_RQ, false, true),
            (DB_RQ, true, false),
            (DB_CQ, false, false),
        ] {
            d.s.valid.next = true;
            d.s.kind.next = kind.to_bits();
            d.s.index.next = bits::<16>(0x1234);
            d.s.value.next = bits::<32>(0xDEAD_BEEF);
            d.sq.ready.next = sq_ready;
            d.rq.ready.next = rq_ready;
            assert!(simulate(&mut d, 10));
            assert_eq!(d.sq.valid.val(), kind == DB_SQ);
            assert_eq!(d.rq.valid.val(), kind == DB_RQ);
            let taken = match kind {
                DB_SQ => sq_ready,
                DB_RQ => rq_ready,
                _ => true,
            };
            assert_eq!(d.s.ready.val(), taken, "kind {kind}");
            assert_eq!(d.sq.qpn.val().to_u64(), 0x34);
            assert_eq!(d.rq.pi.val().to_u64(), 0xDEAD_BEEF);
        }
    }
}
