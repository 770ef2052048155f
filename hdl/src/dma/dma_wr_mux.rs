//! `DmaWriteMux`: two DMA write clients share one DMA write port.
//!
//! ```text
//!   s0.req + s0.data --\                          /-- s0.status
//!                       >-- m.req + m.data  ...  <
//!   s1.req + s1.data --/        m.status         \-- s1.status
//! ```
//!
//! A write is a request (`addr`, `len`) followed by its data beats (the engine contract).
//! The mux grants one client's request (round robin; an offered request stays offered until
//! taken), then passes that client's data beats until the `last` one, and only then grants
//! again, so the port sees each write's data right after its request and never two writes'
//! beats interleaved. Data is passed from the cycle after the grant: a write of `n` beats
//! takes `n + 1` cycles of the port (65/64 for a 4 KiB payload write), which keeps every
//! `valid` independent of every `ready` (no combinational path from one channel's ready
//! to another's valid).
//!
//! Statuses come back from the port one per write, in write order; a FIFO of the clients
//! of the writes in flight ([`IDS`] deep) routes each to its client. While it is full no
//! write is granted.

use crate::bus::dma_wr::{DmaWrClient, DmaWrServer};
use crate::dma::dma_rd_mux::DATA_BITS;
use crate::prelude::*;

/// Writes in flight (granted, status not yet back) the mux can route statuses for.
pub const IDS: usize = 16;
/// Width of the in-flight count (0..=IDS).
const COUNT_BITS: usize = 5;
const _: () = assert!(IDS < 1 << COUNT_BITS);
/// Byte enables per beat.
pub const KEEP_BITS: usize = DATA_BITS / 8;

#[derive(LogicBlock)]
pub struct DmaWriteMux {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,

    // --- client 0 ---
    pub s0: DmaWrServer,
    // --- client 1 ---
    pub s1: DmaWrServer,
    // --- the DMA write port ---
    pub m: DmaWrClient,

    /// A granted write's data is passing; `cur` is its client.
    busy: DFF<Bit>,
    cur: DFF<Bit>,
    prio1: DFF<Bit>,
    held: DFF<Bit>,
    held_sel: DFF<Bit>,
    /// Clients of the writes in flight, oldest in bit 0; `count` of them.
    ids: DFF<Bits<IDS>>,
    count: DFF<Bits<COUNT_BITS>>,
    full_count: Constant<Bits<COUNT_BITS>>,
    one_count: Constant<Bits<COUNT_BITS>>,
    one_ids: Constant<Bits<IDS>>,
    zero_ids: Constant<Bits<IDS>>,
    zero_count: Constant<Bits<COUNT_BITS>>,
    sel: Signal<Local, Bit>,
    can_grant: Signal<Local, Bit>,
    grant: Signal<Local, Bit>,
    beat: Signal<Local, Bit>,
    pop: Signal<Local, Bit>,
    ids_popped: Signal<Local, Bits<IDS>>,
    count_popped: Signal<Local, Bits<COUNT_BITS>>,
    push_mask: Signal<Local, Bits<IDS>>,
}

impl Default for DmaWriteMux {
    fn default() -> Self {
        DmaWriteMux {
            clock: Default::default(),
            reset: Default::default(),
            s0: Default::default(),
            s1: Default::default(),
            m: Default::default(),
            busy: Default::default(),
            cur: Default::default(),
            prio1: Default::default(),
            held: Default::default(),
            held_sel: Default::default(),
            ids: Default::default(),
            count: Default::default(),
            full_count: Constant::new((IDS as u64).to_bits()),
            one_count: Constant::new(1u64.to_bits()),
            one_ids: Constant::new(1u64.to_bits()),
            zero_ids: Constant::new(0u64.to_bits()),
            zero_count: Constant::new(0u64.to_bits()),
            sel: Default::default(),
            can_grant: Default::default(),
            grant: Default::default(),
            beat: Default::default(),
            pop: Default::default(),
            ids_popped: Default::default(),
            count_popped: Default::default(),
            push_mask: Default::default(),
        }
    }
}

impl Logic for DmaWriteMux {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, busy, cur, prio1, held, held_sel, ids, count);

        // ---- requests: round robin, an offer held until taken ----
        self.can_grant.next = !self.busy.q.val() & (self.count.q.val() != self.full_count.val());
        if self.held.q.val() {
            self.sel.next = self.held_sel.q.val();
        } else if self.s0.req_valid.val() & self.s1.req_valid.val() {
            self.sel.next = self.prio1.q.val();
        } else {
            self.sel.next = self.s1.req_valid.val();
        }
        self.s0.req_ready.next = false;
        self.s1.req_ready.next = false;
        if self.sel.val() {
            self.m.req_valid.next = self.can_grant.val() & self.s1.req_valid.val();
            self.m.req_addr.next = self.s1.req_addr.val();
            self.m.req_len.next = self.s1.req_len.val();
            self.s1.req_ready.next = self.can_grant.val() & self.m.req_ready.val();
        } else {
            self.m.req_valid.next = self.can_grant.val() & self.s0.req_valid.val();
            self.m.req_addr.next = self.s0.req_addr.val();
            self.m.req_len.next = self.s0.req_len.val();
            self.s0.req_ready.next = self.can_grant.val() & self.m.req_ready.val();
        }
        self.grant.next = self.m.req_valid.val() & self.m.req_ready.val();
        self.held.d.next = self.m.req_valid.val() & !self.m.req_ready.val();
        self.held_sel.d.next = self.sel.val();
        if self.grant.val() {
            self.prio1.d.next = !self.sel.val();
            self.busy.d.next = true;
            self.cur.d.next = self.sel.val();
        }

        // ---- data of the granted write ----
        self.s0.data_ready.next = false;
        self.s1.data_ready.next = false;
        if self.cur.q.val() {
            self.m.data_valid.next = self.busy.q.val() & self.s1.data_valid.val();
            self.m.data.next = self.s1.data.val();
            self.m.data_keep.next = self.s1.data_keep.val();
            self.m.data_last.next = self.s1.data_last.val();
            self.s1.data_ready.next = self.busy.q.val() & self.m.data_ready.val();
        } else {
            self.m.data_valid.next = self.busy.q.val() & self.s0.data_valid.val();
            self.m.data.next = self.s0.data.val();
            self.m.data_keep.next = self.s0.data_keep.val();
            self.m.data_last.next = self.s0.data_last.val();
            self.s0.data_ready.next = self.busy.q.val() & self.m.data_ready.val();
        }
        self.beat.next = self.m.data_valid.val() & self.m.data_ready.val();
        if self.beat.val() & self.m.data_last.val() {
            self.busy.d.next = false;
        }

        // ---- statuses, routed by the oldest id ----
        self.pop.next = self.m.status_valid.val();
        self.s0.status_valid.next = self.pop.val() & !self.ids.q.val().get_bit(0);
        self.s1.status_valid.next = self.pop.val() & self.ids.q.val().get_bit(0);
        self.s0.status_err.next = self.m.status_err.val();
        self.s1.status_err.next = self.m.status_err.val();
        if self.pop.val() {
            self.ids_popped.next = self.ids.q.val() >> self.one_ids.val();
            self.count_popped.next = self.count.q.val() - self.one_count.val();
        } else {
            self.ids_popped.next = self.ids.q.val();
            self.count_popped.next = self.count.q.val();
        }
        self.push_mask.next = self.one_ids.val() << self.count_popped.val();
        if self.grant.val() {
            self.count.d.next = self.count_popped.val() + self.one_count.val();
            if self.sel.val() {
                self.ids.d.next = self.ids_popped.val() | self.push_mask.val();
            } else {
                self.ids.d.next = self.ids_popped.val();
            }
        } else {
            self.count.d.next = self.count_popped.val();
            self.ids.d.next = self.ids_popped.val();
        }

        if self.reset.val() {
            self.busy.d.next = false;
            self.cur.d.next = false;
            self.prio1.d.next = false;
            self.held.d.next = false;
            self.held_sel.d.next = false;
            self.ids.d.next = self.zero_ids.val();
            self.count.d.next = self.zero_count.val();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{Bench, Pattern, Rng};
    use crate::common::icrc::beat_from_bytes;
    use std::collections::VecDeque;

    #[derive(Clone, Debug, PartialEq, Eq)]
    struct Write {
        addr: u64,
        len: u16,
        /// Word 0 of each beat (enough to tell beats apart), and the last beat's keep.
        words: Vec<u64>,
        keep: u64,
    }

    fn random_write(rng: &mut Rng, client: u64) -> Write {
        let len = 1 + rng.below(300) as u16;
        let n = usize::from(len).div_ceil(64);
        let rem = usize::from(len) % 64;
        Write {
            // An IOVA ending in 0xF is refused by the port below.
            addr: (rng.next_u64() & !0xF) | (client << 40) | (u64::from(rng.percent(10)) * 0xF),
            len,
            words: (0..n).map(|_| rng.next_u64()).collect(),
            keep: if rem == 0 { u64::MAX } else { (1 << rem) - 1 },
        }
    }

    /// A client: its writes, the request it offers, the beat it is at.
    #[derive(Default)]
    struct Client {
        todo: VecDeque<Write>,
        /// Request offered (not yet taken).
        req: Option<Write>,
        /// Data still to send, of writes already granted, in grant order.
        data: VecDeque<(Write, usize)>,
        data_offered: bool,
        /// Statuses expected (err flags) and received.
        want_status: VecDeque<bool>,
    }

    fn run(pattern: Pattern, seed: u64, per_client: usize) {
        let mut rng = Rng::new(seed);
        let mut b = Bench::new(DmaWriteMux::default(), |u| &mut u.clock);
        b.uut.reset.next = true;
        b.tick();
        b.uut.reset.next = false;
        let mut clients: [Client; 2] = Default::default();
        for (c, cl) in clients.iter_mut().enumerate() {
            for _ in 0..per_client {
                let w = random_write(&mut rng, c as u64);
                cl.want_status.push_back(w.addr & 0xF == 0xF);
                cl.todo.push_back(w);
            }
        }
        // The port: the write whose data it is receiving, and statuses to give back later.
        let mut port_cur: Option<(usize, Write, usize)> = None;
        let mut port_status: VecDeque<(u64, bool)> = VecDeque::new();
        let mut writes_seen = 0;
        let mut cycle = 0u64;
        while clients.iter().any(|c| !c.want_status.is_empty()) {
            cycle += 1;
            assert!(cycle < 40_000, "stuck");
            for cl in clients.iter_mut() {
                if cl.req.is_none() && rng.percent(pattern.valid_pct) {
                    cl.req = cl.todo.pop_front();
                }
                cl.data_offered = !cl.data.is_empty() && rng.percent(pattern.valid_pct);
            }
            let u = &mut b.uut;
            macro_rules! drive {
                ($cl:expr, $g:ident) => {{
                    let cl = &$cl;
                    u.$g.req_valid.next = cl.req.is_some();
                    u.$g.req_addr.next = cl.req.as_ref().map_or(0xBAD, |w| w.addr).into();
                    u.$g.req_len.next = u64::from(cl.req.as_ref().map_or(0, |w| w.len)).into();
                    u.$g.data_valid.next = cl.data_offered;
                    let (word, keep, last) = match cl.data.front() {
                        Some((w, i)) => {
                            let last = *i + 1 == w.words.len();
                            (w.words[*i], if last { w.keep } else { u64::MAX }, last)
                        }
                        None => (0xDEAD, 0, false),
                    };
                    let mut bytes = [0u8; 64];
                    bytes[..8].copy_from_slice(&word.to_le_bytes());
                    u.$g.data.next = beat_from_bytes(&bytes);
                    u.$g.data_keep.next = keep.into();
                    u.$g.data_last.next = last;
                }};
            }
            drive!(clients[0], s0);
            drive!(clients[1], s1);
            u.m.req_ready.next = rng.percent(pattern.ready_pct);
            u.m.data_ready.next = rng.percent(pattern.ready_pct);
            // The port answers a finished write some time later, in order.
            let status = port_status
                .front()
                .copied()
                .filter(|&(due, _)| due <= cycle);
            u.m.status_valid.next = status.is_some();
            u.m.status_err.next = status.is_some_and(|(_, e)| e);
            b.settle();
            let u = &b.uut;
            // Request granted?
            if u.m.req_valid.val() && u.m.req_ready.val() {
                assert!(
                    port_cur.is_none(),
                    "a request before the previous write's data ended"
                );
                let c = usize::from(u.s1.req_ready.val());
                assert!(if c == 0 {
                    u.s0.req_ready.val()
                } else {
                    !u.s0.req_ready.val()
                });
                let w = clients[c].req.take().expect("granted client offered");
                assert_eq!(u.m.req_addr.val().to_u64(), w.addr);
                assert_eq!(u.m.req_len.val().index() as u16, w.len);
                clients[c].data.push_back((w.clone(), 0));
                port_cur = Some((c, w, 0));
                writes_seen += 1;
            } else {
                assert!(!u.s0.req_ready.val() || clients[0].req.is_none());
                assert!(!u.s1.req_ready.val() || clients[1].req.is_none());
            }
            // Data beat?
            if u.m.data_valid.val() && u.m.data_ready.val() {
                let (c, w, i) = port_cur.as_mut().expect("data only for a granted write");
                let c = *c;
                let (cw, ci) = clients[c].data.front_mut().expect("client had data");
                assert_eq!(cw.addr, w.addr);
                assert_eq!(*ci, *i);
                let last = *i + 1 == w.words.len();
                assert_eq!(u.m.data.val().get_bits::<64>(0).to_u64(), w.words[*i]);
                assert_eq!(u.m.data_last.val(), last);
                assert_eq!(
                    u.m.data_keep.val().to_u64(),
                    if last { w.keep } else { u64::MAX }
                );
                assert!(if c == 0 {
                    u.s0.data_ready.val()
                } else {
                    u.s1.data_ready.val()
                });
                *i += 1;
                *ci += 1;
                if last {
                    clients[c].data.pop_front();
                    let err = w.addr & 0xF == 0xF;
                    let due = cycle + rng.below(30);
                    let due = port_status.back().map_or(due, |&(d, _)| due.max(d));
                    port_status.push_back((due, err));
                    port_cur = None;
                }
            } else {
                assert!(
                    !(u.s0.data_ready.val()
                        && clients[0].data_offered
                        && port_cur.as_ref().is_some_and(|p| p.0 == 0)
                        && u.m.data_valid.val())
                );
            }
            // Status routed to the right client.
            if status.is_some() {
                port_status.pop_front();
                let to = [u.s0.status_valid.val(), u.s1.status_valid.val()];
                assert!(to[0] ^ to[1], "one status to exactly one client");
                let c = usize::from(to[1]);
                let err = if c == 0 {
                    u.s0.status_err.val()
                } else {
                    u.s1.status_err.val()
                };
                assert_eq!(Some(err), clients[c].want_status.pop_front(), "client {c}");
            } else {
                assert!(!u.s0.status_valid.val() && !u.s1.status_valid.val());
            }
            b.tick();
        }
        assert_eq!(writes_seen, 2 * per_client);
    }

    #[test]
    fn writes_arrive_whole_and_statuses_return_to_their_writers() {
        for (i, p) in Pattern::SWEEP.into_iter().enumerate() {
            run(p, 0xA17E + i as u64, 30);
        }
    }

    #[test]
    fn a_full_status_fifo_stops_grants() {
        let mut b = Bench::new(DmaWriteMux::default(), |u| &mut u.clock);
        b.uut.reset.next = true;
        b.tick();
        b.uut.reset.next = false;
        b.uut.m.req_ready.next = true;
        b.uut.m.data_ready.next = true;
        b.uut.s0.req_valid.next = true;
        b.uut.s0.data_valid.next = true;
        b.uut.s0.data_last.next = true;
        let mut grants = 0;
        for _ in 0..4 * IDS {
            b.settle();
            if b.uut.m.req_valid.val() && b.uut.m.req_ready.val() {
                grants += 1;
            }
            b.tick();
        }
        assert_eq!(grants, IDS, "no grant past {IDS} writes without status");
        // One status frees one slot.
        b.uut.m.status_valid.next = true;
        b.settle();
        assert!(b.uut.s0.status_valid.val() && !b.uut.s1.status_valid.val());
        b.tick();
        b.uut.m.status_valid.next = false;
        b.settle();
        assert!(b.uut.m.req_valid.val());
    }
}
