//! Register slices and tag adapters between DMA groups, each declared once and tied in
//! with one `join`:
//!
//! - [`DmaRdSlice`]: a [`DmaRdServerT`] in, a [`DmaRdClientT`] out; the request (`{tag,
//!   len, addr}`) and the response beats (`{tag, data}` with `last`, `err`) each through
//!   a [`Skid`], or straight through where the slice is made without it.
//! - [`DmaWrSlice`]: a [`DmaWrServer`] in, a [`DmaWrClient`] out; the request (`{len,
//!   addr}`) and the data beats (`{keep, data}` with `last`) each through a [`Skid`], the
//!   status straight back or a cycle late.
//! - [`DmaRdNarrow`]: a client with `W`-bit tags on a mux input with `N < W`: the request
//!   tag's low `N` bits go on; responses come back in request order, so the client gets
//!   tag 0 on each.
//!
//! A channel's choice is a constant of the instance (as the register type of Corundum's
//! `axis_register`), so the Verilog keeps only the chosen path. A registered channel adds
//! a cycle of latency and keeps a beat a cycle (see [`Skid`]); it breaks the
//! combinational path between the two sides, which is why the fabric puts one wherever two
//! blocks' handshakes would close a loop (UNOPTFLAT, `hdl/tests/gates.rs`).

use crate::bus::dma_rd::{DmaRdClientT, DmaRdServerT};
use crate::bus::dma_wr::{DmaWrClient, DmaWrServer};
use crate::common::cat::Cat;
use crate::common::icrc::DATA_BITS;
use crate::common::skid::Skid;
use crate::dma::dma_rd_mux::{ADDR_BITS, LEN_BITS};
use crate::prelude::*;

/// Bits of a write request in its slice: `{len, addr}`.
pub const WR_REQ_BITS: usize = LEN_BITS + ADDR_BITS;
/// Bits of a data beat's byte enables.
const KEEP_BITS: usize = DATA_BITS / 8;
/// Bits of a data beat in its slice: `{keep, data}`.
pub const WR_DATA_BITS: usize = KEEP_BITS + DATA_BITS;
/// Bits of a read request in its slice, but for the tag: `{len, addr}`.
const RD_REQ_BASE: usize = LEN_BITS + ADDR_BITS;

// The field offsets in the `update`s below (literals, as `#[hdl_gen]` wants them).
const _: () = assert!(ADDR_BITS == 64 && LEN_BITS == 16 && DATA_BITS == 512);

/// The read slice with `T`-bit tags; `RQ = T + 80` and `RS = T + 512` are its two
/// channels' widths (stable Rust cannot compute them in the type).
#[derive(LogicBlock)]
pub struct DmaRdSlice<const T: usize, const RQ: usize, const RS: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// The client's side.
    pub s: DmaRdServerT<T>,
    /// The port's side.
    pub m: DmaRdClientT<T>,
    req: Skid<RQ>,
    resp: Skid<RS>,
    req_la: Cat<LEN_BITS, ADDR_BITS, RD_REQ_BASE>,
    req_cat: Cat<T, RD_REQ_BASE, RQ>,
    resp_cat: Cat<T, DATA_BITS, RS>,
    /// Whether the request (`req_reg`) and the response (`resp_reg`) go through their
    /// `Skid`s.
    req_reg: Constant<Bit>,
    resp_reg: Constant<Bit>,
    unused_req_last: Signal<Local, Bit>,
    unused_req_err: Signal<Local, Bit>,
}

impl<const T: usize, const RQ: usize, const RS: usize> DmaRdSlice<T, RQ, RS> {
    /// A slice that registers the request (`req`) and the response (`resp`) or lets each
    /// straight through.
    pub fn new(req: bool, resp: bool) -> Self {
        assert!(
            RQ == T + RD_REQ_BASE && RS == T + DATA_BITS,
            "DmaRdSlice<{T}, {RQ}, {RS}>: the widths are T + {RD_REQ_BASE} and T + {DATA_BITS}"
        );
        DmaRdSlice {
            clock: Default::default(),
            reset: Default::default(),
            s: Default::default(),
            m: Default::default(),
            req: Default::default(),
            resp: Default::default(),
            req_la: Default::default(),
            req_cat: Default::default(),
            resp_cat: Default::default(),
            req_reg: Constant::new(req),
            resp_reg: Constant::new(resp),
            unused_req_last: Default::default(),
            unused_req_err: Default::default(),
        }
    }
}

/// Both channels registered.
impl<const T: usize, const RQ: usize, const RS: usize> Default for DmaRdSlice<T, RQ, RS> {
    fn default() -> Self {
        Self::new(true, true)
    }
}

impl<const T: usize, const RQ: usize, const RS: usize> Logic for DmaRdSlice<T, RQ, RS> {
    #[hdl_gen]
    fn update(&mut self) {
        clock!(self, clock, req, resp);
        self.req.reset.next = self.reset.val();
        self.resp.reset.next = self.reset.val();

        self.req_la.hi.next = self.s.req_len.val();
        self.req_la.lo.next = self.s.req_addr.val();
        self.req_cat.hi.next = self.s.req_tag.val();
        self.req_cat.lo.next = self.req_la.y.val();
        self.req.s_valid.next = self.s.req_valid.val() & self.req_reg.val();
        self.req.s_data.next = self.req_cat.y.val();
        self.req.s_last.next = false;
        self.req.s_err.next = false;
        self.unused_req_last.next = self.req.m_last.val();
        self.unused_req_err.next = self.req.m_err.val();
        if self.req_reg.val() {
            self.m.req_valid.next = self.req.m_valid.val();
            self.m.req_addr.next = self.req.m_data.val().get_bits::<ADDR_BITS>(0);
            self.m.req_len.next = self.req.m_data.val().get_bits::<LEN_BITS>(64);
            self.m.req_tag.next = self.req.m_data.val().get_bits::<T>(80);
            self.s.req_ready.next = self.req.s_ready.val();
            self.req.m_ready.next = self.m.req_ready.val();
        } else {
            self.m.req_valid.next = self.s.req_valid.val();
            self.m.req_addr.next = self.s.req_addr.val();
            self.m.req_len.next = self.s.req_len.val();
            self.m.req_tag.next = self.s.req_tag.val();
            self.s.req_ready.next = self.m.req_ready.val();
            self.req.m_ready.next = false;
        }

        self.resp_cat.hi.next = self.m.resp_tag.val();
        self.resp_cat.lo.next = self.m.resp_data.val();
        self.resp.s_valid.next = self.m.resp_valid.val() & self.resp_reg.val();
        self.resp.s_data.next = self.resp_cat.y.val();
        self.resp.s_last.next = self.m.resp_last.val();
        self.resp.s_err.next = self.m.resp_err.val();
        if self.resp_reg.val() {
            self.s.resp_valid.next = self.resp.m_valid.val();
            self.s.resp_data.next = self.resp.m_data.val().get_bits::<DATA_BITS>(0);
            self.s.resp_tag.next = self.resp.m_data.val().get_bits::<T>(512);
            self.s.resp_last.next = self.resp.m_last.val();
            self.s.resp_err.next = self.resp.m_err.val();
            self.m.resp_ready.next = self.resp.s_ready.val();
            self.resp.m_ready.next = self.s.resp_ready.val();
        } else {
            self.s.resp_valid.next = self.m.resp_valid.val();
            self.s.resp_data.next = self.m.resp_data.val();
            self.s.resp_tag.next = self.m.resp_tag.val();
            self.s.resp_last.next = self.m.resp_last.val();
            self.s.resp_err.next = self.m.resp_err.val();
            self.m.resp_ready.next = self.s.resp_ready.val();
            self.resp.m_ready.next = false;
        }
    }
}

/// The write slice; see the [module docs](self).
#[derive(LogicBlock)]
pub struct DmaWrSlice {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// The client's side.
    pub s: DmaWrServer,
    /// The port's side.
    pub m: DmaWrClient,
    req: Skid<WR_REQ_BITS>,
    data: Skid<WR_DATA_BITS>,
    req_cat: Cat<LEN_BITS, ADDR_BITS, WR_REQ_BITS>,
    data_cat: Cat<KEEP_BITS, DATA_BITS, WR_DATA_BITS>,
    /// The status a cycle late.
    st_valid: DFF<Bit>,
    st_err: DFF<Bit>,
    /// The status goes back through `st_*` (a cycle late) rather than straight.
    late: Constant<Bit>,
    unused_req_last: Signal<Local, Bit>,
    unused_req_err: Signal<Local, Bit>,
    unused_data_err: Signal<Local, Bit>,
}

impl DmaWrSlice {
    /// A slice whose status comes back a cycle late (`late`) or straight.
    pub fn new(late: bool) -> Self {
        DmaWrSlice {
            clock: Default::default(),
            reset: Default::default(),
            s: Default::default(),
            m: Default::default(),
            req: Default::default(),
            data: Default::default(),
            req_cat: Default::default(),
            data_cat: Default::default(),
            st_valid: Default::default(),
            st_err: Default::default(),
            late: Constant::new(late),
            unused_req_last: Default::default(),
            unused_req_err: Default::default(),
            unused_data_err: Default::default(),
        }
    }
}

impl Logic for DmaWrSlice {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, st_valid, st_err);
        clock!(self, clock, req, data);
        self.req.reset.next = self.reset.val();
        self.data.reset.next = self.reset.val();

        self.req_cat.hi.next = self.s.req_len.val();
        self.req_cat.lo.next = self.s.req_addr.val();
        self.req.s_valid.next = self.s.req_valid.val();
        self.req.s_data.next = self.req_cat.y.val();
        self.req.s_last.next = false;
        self.req.s_err.next = false;
        self.s.req_ready.next = self.req.s_ready.val();
        self.m.req_valid.next = self.req.m_valid.val();
        self.m.req_addr.next = self.req.m_data.val().get_bits::<ADDR_BITS>(0);
        self.m.req_len.next = self.req.m_data.val().get_bits::<LEN_BITS>(64);
        self.req.m_ready.next = self.m.req_ready.val();
        self.unused_req_last.next = self.req.m_last.val();
        self.unused_req_err.next = self.req.m_err.val();

        self.data_cat.hi.next = self.s.data_keep.val();
        self.data_cat.lo.next = self.s.data.val();
        self.data.s_valid.next = self.s.data_valid.val();
        self.data.s_data.next = self.data_cat.y.val();
        self.data.s_last.next = self.s.data_last.val();
        self.data.s_err.next = false;
        self.s.data_ready.next = self.data.s_ready.val();
        self.m.data_valid.next = self.data.m_valid.val();
        self.m.data.next = self.data.m_data.val().get_bits::<DATA_BITS>(0);
        self.m.data_keep.next = self.data.m_data.val().get_bits::<KEEP_BITS>(512);
        self.m.data_last.next = self.data.m_last.val();
        self.data.m_ready.next = self.m.data_ready.val();
        self.unused_data_err.next = self.data.m_err.val();

        self.st_valid.d.next = self.m.status_valid.val() & !self.reset.val();
        self.st_err.d.next = self.m.status_err.val();
        if self.late.val() {
            self.s.status_valid.next = self.st_valid.q.val();
            self.s.status_err.next = self.st_err.q.val();
        } else {
            self.s.status_valid.next = self.m.status_valid.val();
            self.s.status_err.next = self.m.status_err.val();
        }
    }
}

/// A client with `W`-bit tags on a mux input with `N`; see the [module docs](self).
#[derive(LogicBlock)]
pub struct DmaRdNarrow<const W: usize, const N: usize> {
    /// The client's side.
    pub s: DmaRdServerT<W>,
    /// The mux input's side.
    pub m: DmaRdClientT<N>,
    zero: Constant<Bits<W>>,
    unused_req_tag: Signal<Local, Bits<W>>,
    unused_resp_tag: Signal<Local, Bits<N>>,
}

impl<const W: usize, const N: usize> Default for DmaRdNarrow<W, N> {
    fn default() -> Self {
        assert!(
            N <= W,
            "DmaRdNarrow<{W}, {N}>: the mux input's tag is the narrower"
        );
        DmaRdNarrow {
            s: Default::default(),
            m: Default::default(),
            zero: Constant::new(0u64.to_bits()),
            unused_req_tag: Default::default(),
            unused_resp_tag: Default::default(),
        }
    }
}

impl<const W: usize, const N: usize> Logic for DmaRdNarrow<W, N> {
    #[hdl_gen]
    fn update(&mut self) {
        self.m.req_valid.next = self.s.req_valid.val();
        self.m.req_addr.next = self.s.req_addr.val();
        self.m.req_len.next = self.s.req_len.val();
        self.m.req_tag.next = self.s.req_tag.val().get_bits::<N>(0);
        self.unused_req_tag.next = self.s.req_tag.val();
        self.s.req_ready.next = self.m.req_ready.val();
        self.s.resp_valid.next = self.m.resp_valid.val();
        self.s.resp_data.next = self.m.resp_data.val();
        self.s.resp_tag.next = self.zero.val();
        self.s.resp_last.next = self.m.resp_last.val();
        self.s.resp_err.next = self.m.resp_err.val();
        self.unused_resp_tag.next = self.m.resp_tag.val();
        self.m.resp_ready.next = self.s.resp_ready.val();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{Bench, Rng};

    /// A 512-bit beat with `w` in its lowest and its highest 64 bits (both ends carried).
    fn wide(w: u64) -> Bits<DATA_BITS> {
        let mut b = Bits::<DATA_BITS>::default();
        b.set_bits(0, bits::<64>(w));
        b.set_bits(448, bits::<64>(!w));
        b
    }

    fn narrow(b: Bits<DATA_BITS>) -> u64 {
        let (lo, hi) = (b.get_bits::<64>(0).to_u64(), b.get_bits::<64>(448).to_u64());
        assert_eq!(hi, !lo, "the beat's top bits were not carried");
        lo
    }

    /// Random requests and response beats through a read slice under random valid and
    /// ready: every one comes out once, in order, unchanged; an unregistered channel is
    /// straight wires, a registered one never shows a beat in the cycle it is offered.
    fn rd_slice_case(req_reg: bool, resp_reg: bool, seed: u64) {
        let mut b = Bench::new(DmaRdSlice::<6, 86, 518>::new(req_reg, resp_reg), |u| {
            &mut u.clock
        });
        b.uut.reset.next = true;
        b.tick();
        b.uut.reset.next = false;
        let mut rng = Rng::new(seed);
        let reqs: Vec<(u64, u64, u64)> = (0..300)
            .map(|_| (rng.next_u64(), rng.below(1 << 16), rng.below(64)))
            .collect();
        let resps: Vec<(u64, u64, bool, bool)> = (0..300)
            .map(|_| {
                (
                    rng.next_u64(),
                    rng.below(64),
                    rng.percent(30),
                    rng.percent(10),
                )
            })
            .collect();
        let (mut req_in, mut req_out, mut resp_in, mut resp_out) = (0, 0, 0, 0);
        let (mut req_offer, mut resp_offer) = (false, false);
        for cycle in 0..4000 {
            req_offer |= req_in < reqs.len() && rng.percent(60);
            resp_offer |= resp_in < resps.len() && rng.percent(60);
            let (addr, len, tag) = reqs[req_in.min(reqs.len() - 1)];
            b.uut.s.req_valid.next = req_offer;
            b.uut.s.req_addr.next = addr.into();
            b.uut.s.req_len.next = len.into();
            b.uut.s.req_tag.next = tag.into();
            b.uut.m.req_ready.next = rng.percent(60);
            let (data, rtag, last, err) = resps[resp_in.min(resps.len() - 1)];
            b.uut.m.resp_valid.next = resp_offer;
            b.uut.m.resp_data.next = wide(data);
            b.uut.m.resp_tag.next = rtag.into();
            b.uut.m.resp_last.next = last;
            b.uut.m.resp_err.next = err;
            b.uut.s.resp_ready.next = rng.percent(60);
            b.settle();
            let u = &b.uut;
            if !req_reg {
                assert_eq!(u.m.req_valid.val(), u.s.req_valid.val());
                assert_eq!(u.s.req_ready.val(), u.m.req_ready.val());
            } else if cycle == 0 {
                assert!(!u.m.req_valid.val(), "a registered request showed at once");
            }
            if !resp_reg {
                assert_eq!(u.s.resp_valid.val(), u.m.resp_valid.val());
                assert_eq!(u.m.resp_ready.val(), u.s.resp_ready.val());
            } else if cycle == 0 {
                assert!(
                    !u.s.resp_valid.val(),
                    "a registered response showed at once"
                );
            }
            if u.m.req_valid.val() && u.m.req_ready.val() {
                let got = (
                    u.m.req_addr.val().to_u64(),
                    u.m.req_len.val().to_u64(),
                    u.m.req_tag.val().to_u64(),
                );
                assert_eq!(got, reqs[req_out], "request {req_out}");
                req_out += 1;
            }
            if u.s.resp_valid.val() && u.s.resp_ready.val() {
                let got = (
                    narrow(u.s.resp_data.val()),
                    u.s.resp_tag.val().to_u64(),
                    u.s.resp_last.val(),
                    u.s.resp_err.val(),
                );
                assert_eq!(got, resps[resp_out], "response beat {resp_out}");
                resp_out += 1;
            }
            if req_offer && u.s.req_ready.val() {
                req_in += 1;
                req_offer = false;
            }
            if resp_offer && u.m.resp_ready.val() {
                resp_in += 1;
                resp_offer = false;
            }
            b.tick();
        }
        assert_eq!((req_out, resp_out), (reqs.len(), resps.len()));
    }

    #[test]
    fn a_read_slice_passes_every_request_and_beat_in_order() {
        rd_slice_case(true, true, 0xD5A1);
        rd_slice_case(false, true, 0xD5A2);
        rd_slice_case(true, false, 0xD5A3);
    }

    /// Random requests and data beats through a write slice; random status pulses from the
    /// port come back to the client in the same cycle, or exactly one later.
    fn wr_slice_case(late: bool, seed: u64) {
        let mut b = Bench::new(DmaWrSlice::new(late), |u| &mut u.clock);
        b.uut.reset.next = true;
        b.tick();
        b.uut.reset.next = false;
        let mut rng = Rng::new(seed);
        let reqs: Vec<(u64, u64)> = (0..300)
            .map(|_| (rng.next_u64(), rng.below(1 << 16)))
            .collect();
        let beats: Vec<(u64, u64, bool)> = (0..300)
            .map(|_| (rng.next_u64(), rng.next_u64(), rng.percent(30)))
            .collect();
        let (mut req_in, mut req_out, mut beat_in, mut beat_out) = (0, 0, 0, 0);
        let (mut req_offer, mut beat_offer) = (false, false);
        let mut sent: Option<bool> = None;
        let mut statuses = 0;
        for _ in 0..4000 {
            req_offer |= req_in < reqs.len() && rng.percent(60);
            beat_offer |= beat_in < beats.len() && rng.percent(60);
            let (addr, len) = reqs[req_in.min(reqs.len() - 1)];
            b.uut.s.req_valid.next = req_offer;
            b.uut.s.req_addr.next = addr.into();
            b.uut.s.req_len.next = len.into();
            b.uut.m.req_ready.next = rng.percent(60);
            let (data, keep, last) = beats[beat_in.min(beats.len() - 1)];
            b.uut.s.data_valid.next = beat_offer;
            b.uut.s.data.next = wide(data);
            b.uut.s.data_keep.next = keep.into();
            b.uut.s.data_last.next = last;
            b.uut.m.data_ready.next = rng.percent(60);
            let status = rng.percent(20).then(|| rng.percent(50));
            b.uut.m.status_valid.next = status.is_some();
            b.uut.m.status_err.next = status.unwrap_or(false);
            b.settle();
            let u = &b.uut;
            let expect = if late { sent } else { status };
            assert_eq!(u.s.status_valid.val(), expect.is_some());
            if let Some(err) = expect {
                assert_eq!(u.s.status_err.val(), err);
                statuses += 1;
            }
            sent = status;
            if u.m.req_valid.val() && u.m.req_ready.val() {
                let got = (u.m.req_addr.val().to_u64(), u.m.req_len.val().to_u64());
                assert_eq!(got, reqs[req_out], "request {req_out}");
                req_out += 1;
            }
            if u.m.data_valid.val() && u.m.data_ready.val() {
                let got = (
                    narrow(u.m.data.val()),
                    u.m.data_keep.val().to_u64(),
                    u.m.data_last.val(),
                );
                assert_eq!(got, beats[beat_out], "data beat {beat_out}");
                beat_out += 1;
            }
            if req_offer && u.s.req_ready.val() {
                req_in += 1;
                req_offer = false;
            }
            if beat_offer && u.s.data_ready.val() {
                beat_in += 1;
                beat_offer = false;
            }
            b.tick();
        }
        assert_eq!((req_out, beat_out), (reqs.len(), beats.len()));
        assert!(statuses > 500, "too few statuses seen: {statuses}");
    }

    #[test]
    fn a_write_slice_passes_requests_and_data_and_returns_each_status() {
        wr_slice_case(true, 0xD5B1);
        wr_slice_case(false, 0xD5B2);
    }

    /// The client's tag is cut to the mux input's; responses reach it with tag 0.
    #[test]
    fn a_narrowed_client_gets_tag_zero() {
        let mut n = DmaRdNarrow::<8, 5>::default();
        n.connect_all();
        n.s.req_valid.next = true;
        n.s.req_tag.next = bits::<8>(0xEB);
        n.m.req_ready.next = true;
        n.m.resp_valid.next = true;
        n.m.resp_tag.next = bits::<5>(0x1F);
        n.m.resp_data.next = wide(7);
        assert!(simulate(&mut n, 10));
        assert_eq!(n.m.req_tag.val().to_u64(), 0x0B);
        assert!(n.m.req_valid.val() && n.s.req_ready.val());
        assert_eq!(n.s.resp_tag.val().to_u64(), 0);
        assert_eq!(narrow(n.s.resp_data.val()), 7);
    }
}
