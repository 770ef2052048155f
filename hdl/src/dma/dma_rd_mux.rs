//! `DmaReadMux`: two DMA read clients share one DMA read port.
//!
//! ```text
//!   s0.req (tag 7 bits) --\                          /-- s0.resp (tag 7 bits)
//!                          >-- m.req (tag 8 bits)   <
//!   s1.req (tag 7 bits) --/    m.resp (tag 8 bits)  \-- s1.resp (tag 7 bits)
//! ```
//!
//! Requests: round robin between the two clients, one request per transfer; the winner's
//! request goes out with its client number in tag bit 7 and its own tag in bits 6:0. A
//! request offered on `m.req` stays offered (same client, same fields) until the port
//! takes it, as the handshake rule asks, even if the other client has priority meanwhile.
//! Responses: routed by tag bit 7, combinationally (no register, no bubble); the port
//! returns responses in request order (the engine contract), so each client sees its own
//! responses in its own request order. Cascade muxes for more clients: each level takes
//! one more tag bit (`DmaReadMux<CT, T>`: clients' tags of `CT` bits, the port's of
//! `T = CT + 1`; the engine's port is [`DmaReadMux<7, 8>`](DmaReadMux), a second level
//! `DmaReadMux<6, 7>` under one of its clients, and so on).
//!
//! Latency: none (combinational both ways). Throughput: a request per cycle, a response
//! beat per cycle. The clients are [`DmaRdServerT<CT>`] groups, the port a
//! [`DmaRdClientT<T>`].

use crate::bus::dma_rd::{DmaRdClientT, DmaRdServerT};
use crate::common::cat::Cat;
use crate::prelude::*;

/// Bytes of a DMA read (contract: 1..=8192) fit 16 bits.
pub const LEN_BITS: usize = 16;
/// An IOVA.
pub const ADDR_BITS: usize = 64;
/// Tag width on the DMA port (contract).
pub const TAG_BITS: usize = 8;
/// Tag width a client of the top-level mux uses: the mux takes the top bit.
pub const CLIENT_TAG_BITS: usize = TAG_BITS - 1;
/// Response beat width.
pub const DATA_BITS: usize = 512;

/// Two clients with `CT`-bit tags on a port with `T = CT + 1`-bit tags.
#[derive(LogicBlock)]
pub struct DmaReadMux<const CT: usize, const T: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,

    // --- client 0 requests ---
    pub s0: DmaRdServerT<CT>,
    // --- client 1 requests ---
    pub s1: DmaRdServerT<CT>,
    // --- to the DMA port ---
    pub m: DmaRdClientT<T>,

    // --- responses from the DMA port ---
    // --- to client 0 ---
    // --- to client 1 ---
    /// Client 1 wins a tie next.
    prio1: DFF<Bit>,
    /// A request is offered and not yet taken: keep offering the same client's.
    held: DFF<Bit>,
    held_sel: DFF<Bit>,
    /// The port's tag: `{client, client tag}`.
    tag0: Cat<1, CT, T>,
    tag1: Cat<1, CT, T>,
    /// The port tag's top bit (bit `CT`): the client a response goes to.
    client_bit: Constant<Bits<T>>,
    zero: Constant<Bits<1>>,
    one: Constant<Bits<1>>,
    /// The client offered this cycle.
    sel: Signal<Local, Bit>,
    go: Signal<Local, Bit>,
    to1: Signal<Local, Bit>,
}

impl<const CT: usize, const T: usize> Default for DmaReadMux<CT, T> {
    fn default() -> Self {
        assert!(
            T == CT + 1 && (1..=8).contains(&T),
            "DmaReadMux<{CT}, {T}>: the port tag is the client tag plus one bit, at most 8"
        );
        DmaReadMux {
            clock: Default::default(),
            reset: Default::default(),
            s0: Default::default(),
            s1: Default::default(),
            m: Default::default(),
            prio1: Default::default(),
            held: Default::default(),
            held_sel: Default::default(),
            tag0: Default::default(),
            tag1: Default::default(),
            client_bit: Constant::new(bits::<T>(1 << CT)),
            zero: Constant::new(bits::<1>(0)),
            one: Constant::new(bits::<1>(1)),
            sel: Default::default(),
            go: Default::default(),
            to1: Default::default(),
        }
    }
}

impl<const CT: usize, const T: usize> Logic for DmaReadMux<CT, T> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, prio1, held, held_sel);

        // ---- requests ----
        self.tag0.hi.next = self.zero.val();
        self.tag0.lo.next = self.s0.req_tag.val();
        self.tag1.hi.next = self.one.val();
        self.tag1.lo.next = self.s1.req_tag.val();
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
            self.m.req_valid.next = self.s1.req_valid.val();
            self.m.req_addr.next = self.s1.req_addr.val();
            self.m.req_len.next = self.s1.req_len.val();
            self.m.req_tag.next = self.tag1.y.val();
            self.s1.req_ready.next = self.m.req_ready.val();
        } else {
            self.m.req_valid.next = self.s0.req_valid.val();
            self.m.req_addr.next = self.s0.req_addr.val();
            self.m.req_len.next = self.s0.req_len.val();
            self.m.req_tag.next = self.tag0.y.val();
            self.s0.req_ready.next = self.m.req_ready.val();
        }
        self.go.next = self.m.req_valid.val() & self.m.req_ready.val();
        self.held.d.next = self.m.req_valid.val() & !self.m.req_ready.val();
        self.held_sel.d.next = self.sel.val();
        if self.go.val() {
            // The loser of this round wins the next tie.
            self.prio1.d.next = !self.sel.val();
        }

        // ---- responses, routed by the tag's top bit ----
        // A mask, not `get_bit(CT)`: RustHDL would write the name `CT` into the Verilog.
        self.to1.next = (self.m.resp_tag.val() & self.client_bit.val()).any();
        self.s0.resp_data.next = self.m.resp_data.val();
        self.s1.resp_data.next = self.m.resp_data.val();
        self.s0.resp_tag.next = self.m.resp_tag.val().get_bits::<CT>(0);
        self.s1.resp_tag.next = self.m.resp_tag.val().get_bits::<CT>(0);
        self.s0.resp_last.next = self.m.resp_last.val();
        self.s1.resp_last.next = self.m.resp_last.val();
        self.s0.resp_err.next = self.m.resp_err.val();
        self.s1.resp_err.next = self.m.resp_err.val();
        self.s0.resp_valid.next = self.m.resp_valid.val() & !self.to1.val();
        self.s1.resp_valid.next = self.m.resp_valid.val() & self.to1.val();
        if self.to1.val() {
            self.m.resp_ready.next = self.s1.resp_ready.val();
        } else {
            self.m.resp_ready.next = self.s0.resp_ready.val();
        }

        if self.reset.val() {
            self.prio1.d.next = false;
            self.held.d.next = false;
            self.held_sel.d.next = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{Bench, Pattern, Rng};
    use std::collections::VecDeque;

    #[derive(Clone, Debug, PartialEq, Eq)]
    struct Req {
        addr: u64,
        len: u16,
        tag: u8,
    }

    /// One response beat as a client sees it.
    #[derive(Clone, Debug, PartialEq, Eq)]
    struct RespBeat {
        tag: u8,
        word0: u64,
        last: bool,
        err: bool,
    }

    fn beats_of(len: u16) -> usize {
        usize::from(len).div_ceil(64).max(1)
    }

    /// The response beats a request should produce (the DMA side below makes them).
    fn expected_beats(r: &Req) -> Vec<RespBeat> {
        let err = r.addr & 0xF == 0xF;
        if err {
            return vec![RespBeat {
                tag: r.tag,
                word0: 0,
                last: true,
                err: true,
            }];
        }
        let n = beats_of(r.len);
        (0..n)
            .map(|i| RespBeat {
                tag: r.tag,
                word0: r.addr.wrapping_add(64 * i as u64),
                last: i + 1 == n,
                err: false,
            })
            .collect()
    }

    fn run(pattern: Pattern, seed: u64, per_client: usize) {
        let mut rng = Rng::new(seed);
        let mut b = Bench::new(DmaReadMux::<7, 8>::default(), |u| &mut u.clock);
        b.uut.reset.next = true;
        b.tick();
        b.uut.reset.next = false;

        // What each client will ask for; an IOVA ending in 0xF faults (one err beat).
        let mut todo: [VecDeque<Req>; 2] = Default::default();
        for (c, q) in todo.iter_mut().enumerate() {
            for i in 0..per_client {
                q.push_back(Req {
                    addr: (rng.next_u64() & !0xF)
                        | ((c as u64) << 40)
                        | (u64::from(rng.percent(10)) * 0xF),
                    len: 1 + rng.below(300) as u16,
                    tag: (i % 128) as u8,
                });
            }
        }
        let mut want: [VecDeque<RespBeat>; 2] = Default::default();
        for c in 0..2 {
            for r in &todo[c] {
                want[c].extend(expected_beats(r));
            }
        }
        let mut offered: [Option<Req>; 2] = [None, None];
        // The DMA port: requests in order, then their beats in order.
        let mut port: VecDeque<(u8, RespBeat)> = VecDeque::new();
        let mut grants = Vec::new();
        let mut cycles = 0;
        while want.iter().any(|w| !w.is_empty()) {
            cycles += 1;
            assert!(cycles < 20_000, "stuck: {want:?}");
            // Clients offer requests (holding an offer until it is taken).
            for c in 0..2 {
                if offered[c].is_none() && rng.percent(pattern.valid_pct) {
                    offered[c] = todo[c].pop_front();
                }
            }
            let u = &mut b.uut;
            let set = |valid: &mut Signal<In, Bit>,
                       addr: &mut Signal<In, Bits<64>>,
                       len: &mut Signal<In, Bits<16>>,
                       tag: &mut Signal<In, Bits<7>>,
                       r: &Option<Req>| {
                valid.next = r.is_some();
                let r = r.clone().unwrap_or(Req {
                    addr: 0xBAD,
                    len: 0,
                    tag: 0x55,
                });
                addr.next = r.addr.into();
                len.next = u64::from(r.len).into();
                tag.next = u64::from(r.tag).into();
            };
            set(
                &mut u.s0.req_valid,
                &mut u.s0.req_addr,
                &mut u.s0.req_len,
                &mut u.s0.req_tag,
                &offered[0],
            );
            set(
                &mut u.s1.req_valid,
                &mut u.s1.req_addr,
                &mut u.s1.req_len,
                &mut u.s1.req_tag,
                &offered[1],
            );
            u.m.req_ready.next = rng.percent(pattern.ready_pct);
            // The port offers its next beat with some probability.
            let offer = rng.percent(pattern.valid_pct);
            let front = port.front().cloned().filter(|_| offer);
            u.m.resp_valid.next = front.is_some();
            let (ptag, beat) = front.clone().unwrap_or((
                0,
                RespBeat {
                    tag: 0,
                    word0: 0,
                    last: false,
                    err: false,
                },
            ));
            let mut data = [0u8; 64];
            data[..8].copy_from_slice(&beat.word0.to_le_bytes());
            u.m.resp_data.next = crate::common::icrc::beat_from_bytes(&data);
            u.m.resp_tag.next = u64::from(ptag).into();
            u.m.resp_last.next = beat.last;
            u.m.resp_err.next = beat.err;
            u.s0.resp_ready.next = rng.percent(pattern.ready_pct);
            u.s1.resp_ready.next = rng.percent(pattern.ready_pct);
            b.settle();
            let u = &b.uut;
            // Request side.
            let was_offered = [offered[0].is_some(), offered[1].is_some()];
            if u.m.req_valid.val() && u.m.req_ready.val() {
                let tag = u.m.req_tag.val().index() as u8;
                let c = usize::from(tag >> 7);
                let r = offered[c].take().expect("granted a client that offered");
                assert_eq!(u.m.req_addr.val().to_u64(), r.addr);
                assert_eq!(u.m.req_len.val().index() as u16, r.len);
                assert_eq!(tag & 0x7F, r.tag);
                assert!(if c == 0 {
                    u.s0.req_ready.val()
                } else {
                    u.s1.req_ready.val()
                });
                grants.push(c);
                for beat in expected_beats(&r) {
                    port.push_back((tag, beat));
                }
            }
            // A client's offer is taken exactly when the port takes it (offers taken above).
            let readies = [u.s0.req_ready.val(), u.s1.req_ready.val()];
            for (c, ready) in readies.into_iter().enumerate() {
                if ready && was_offered[c] {
                    assert!(u.m.req_valid.val() && u.m.req_ready.val() && offered[c].is_none());
                }
            }
            // Response side.
            let outs = [
                (
                    u.s0.resp_valid.val(),
                    u.s0.resp_ready.val(),
                    u.s0.resp_tag.val(),
                    u.s0.resp_last.val(),
                    u.s0.resp_err.val(),
                    u.s0.resp_data.val(),
                ),
                (
                    u.s1.resp_valid.val(),
                    u.s1.resp_ready.val(),
                    u.s1.resp_tag.val(),
                    u.s1.resp_last.val(),
                    u.s1.resp_err.val(),
                    u.s1.resp_data.val(),
                ),
            ];
            let mut moved = false;
            for (c, (valid, ready, tag, last, err, data)) in outs.into_iter().enumerate() {
                if let Some((ptag, _)) = &front {
                    assert_eq!(valid, usize::from(ptag >> 7) == c, "routing by tag bit 7");
                } else {
                    assert!(!valid);
                }
                if valid && ready {
                    let got = RespBeat {
                        tag: tag.index() as u8,
                        word0: data.get_bits::<64>(0).to_u64(),
                        last,
                        err,
                    };
                    assert_eq!(Some(got), want[c].pop_front(), "client {c}");
                    moved = true;
                }
            }
            assert_eq!(moved, u.m.resp_valid.val() && u.m.resp_ready.val());
            if moved {
                port.pop_front();
            }
            b.tick();
        }
        assert!(todo.iter().all(|q| q.is_empty()));
        assert_eq!(grants.len(), 2 * per_client);
        // Round robin: at full rate with both clients busy, grants alternate.
        if pattern.valid_pct == 100 && pattern.ready_pct == 100 {
            let alternations = grants.windows(2).filter(|w| w[0] != w[1]).count();
            assert!(alternations * 10 >= grants.len() * 9, "grants {grants:?}");
        }
    }

    #[test]
    fn every_response_reaches_its_client_in_order() {
        for (i, p) in Pattern::SWEEP.into_iter().enumerate() {
            run(p, 0xD0A0 + i as u64, 40);
        }
    }

    /// A second-level mux (6-bit client tags on a 7-bit port): its own top bit (6) in the
    /// request tag and in the routing of responses.
    #[test]
    fn a_second_level_mux_takes_the_next_tag_bit() {
        let mut b = Bench::new(DmaReadMux::<6, 7>::default(), |u| &mut u.clock);
        b.uut.reset.next = true;
        b.tick();
        b.uut.reset.next = false;
        b.uut.s1.req_valid.next = true;
        b.uut.s1.req_tag.next = 0x2Au64.into();
        b.uut.m.req_ready.next = true;
        b.settle();
        assert!(b.uut.s1.req_ready.val());
        assert_eq!(b.uut.m.req_tag.val().index(), 0x40 | 0x2A);
        b.uut.s1.req_valid.next = false;
        b.tick();
        for (tag, to1) in [
            (0x40u64 | 0x15, true),
            (0x15, false),
            (0x7F, true),
            (0x3F, false),
        ] {
            b.uut.m.resp_valid.next = true;
            b.uut.m.resp_tag.next = tag.into();
            b.uut.s0.resp_ready.next = !to1;
            b.uut.s1.resp_ready.next = to1;
            b.settle();
            assert_eq!(b.uut.s1.resp_valid.val(), to1, "tag {tag:#x}");
            assert_eq!(b.uut.s0.resp_valid.val(), !to1, "tag {tag:#x}");
            assert!(b.uut.m.resp_ready.val(), "tag {tag:#x}");
            let got = if to1 {
                b.uut.s1.resp_tag.val()
            } else {
                b.uut.s0.resp_tag.val()
            };
            assert_eq!(got.index() as u64, tag & 0x3F);
            b.tick();
        }
    }

    #[test]
    #[should_panic(expected = "client tag plus one bit")]
    fn a_mux_whose_tags_do_not_differ_by_one_bit_is_refused() {
        let _ = DmaReadMux::<6, 8>::default();
    }

    #[test]
    fn a_stalled_offer_is_not_replaced() {
        // Client 0 offers alone while the port stalls; client 1 arrives with priority: the
        // offer on m_req must stay client 0's until taken.
        let mut b = Bench::new(DmaReadMux::<7, 8>::default(), |u| &mut u.clock);
        b.uut.reset.next = true;
        b.tick();
        b.uut.reset.next = false;
        // One grant to client 0 so that client 1 has priority.
        b.uut.s0.req_valid.next = true;
        b.uut.s0.req_addr.next = 0x1000u64.into();
        b.uut.m.req_ready.next = true;
        b.settle();
        assert!(b.uut.s0.req_ready.val());
        b.tick();
        // Now client 0 again, alone, and the port stalls.
        b.uut.m.req_ready.next = false;
        b.uut.s0.req_addr.next = 0x2000u64.into();
        b.settle();
        assert_eq!(b.uut.m.req_addr.val().to_u64(), 0x2000);
        b.tick();
        b.uut.s1.req_valid.next = true;
        b.uut.s1.req_addr.next = 0x3000u64.into();
        b.settle();
        assert_eq!(b.uut.m.req_addr.val().to_u64(), 0x2000, "offer held");
        assert_eq!(b.uut.m.req_tag.val().index() >> 7, 0);
        b.uut.m.req_ready.next = true;
        b.settle();
        assert!(b.uut.s0.req_ready.val() && !b.uut.s1.req_ready.val());
        b.tick();
        b.settle();
        assert_eq!(b.uut.m.req_addr.val().to_u64(), 0x3000);
        assert!(b.uut.s1.req_ready.val());
    }
}
