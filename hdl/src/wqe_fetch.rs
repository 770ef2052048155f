//! `WqeFetch`: reads one send WQE from a QP's SQ ring by DMA and decodes it.
//!
//! ```text
//!  s_req {qpn, sq_ring, sq_log, index} --> DMA read of the 64-byte slot --> decode --> m_wqe
//!                                                         (err) --> m_err pulse
//! ```
//!
//! The slot is `index mod 2^sq_log` of the ring at IOVA `sq_ring << 6` (the `qpc` table's
//! `sq_ring` and `sq_log` fields, as the model's `fetch_wqe` reads `sq_iova + 64 * slot`).
//! The decode is the ABI's `SendWqe::from_bytes` (`proto/src/abi/wqe.rs`), which the bench
//! holds it to: little-endian fields at their offsets; with `flags & INLINE` the 32 bytes at
//! 0x20 are the inline payload and `compare_add`, `swap` and the SGE read as zero, without it
//! the inline bytes read as zero. No validation here (the requester validates, as the
//! model's `validate_wqe`).
//!
//! One fetch at a time: take a request, issue the read (64 bytes, tag 0), take its one
//! response beat, offer the WQE until taken. A response with `err` (the host unmapped its
//! own SQ) pulses `m_err_*` instead: the model then counts a DMA fault and moves the QP to
//! the error state. Latency: request taken -> DMA request 1 cycle; response -> WQE offered
//! 1 cycle.

use crate::cat::Cat;
use crate::icrc::DATA_BITS;
use crate::prelude::*;

const IDLE: u64 = 0;
const REQ: u64 = 1;
const WAIT: u64 = 2;
const OUT: u64 = 3;

fn k<const N: usize>(v: u64) -> Constant<Bits<N>> {
    Constant::new(v.into())
}

/// The fetcher; see the [module docs](self).
#[derive(LogicBlock)]
pub struct WqeFetch<const QA: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,

    /// A WQE to fetch: the QP, its SQ ring (IOVA >> 6) and size (log2 entries), the
    /// free-running SQ index.
    pub s_req_valid: Signal<In, Bit>,
    pub s_req_ready: Signal<Out, Bit>,
    pub s_req_qpn: Signal<In, Bits<QA>>,
    pub s_req_sq_ring: Signal<In, Bits<58>>,
    pub s_req_sq_log: Signal<In, Bits<4>>,
    pub s_req_index: Signal<In, Bits<32>>,

    // --- DMA read client ---
    pub m_dma_rd_req_valid: Signal<Out, Bit>,
    pub m_dma_rd_req_ready: Signal<In, Bit>,
    pub m_dma_rd_req_addr: Signal<Out, Bits<64>>,
    pub m_dma_rd_req_len: Signal<Out, Bits<16>>,
    pub m_dma_rd_req_tag: Signal<Out, Bits<8>>,
    pub s_dma_rd_resp_valid: Signal<In, Bit>,
    pub s_dma_rd_resp_ready: Signal<Out, Bit>,
    pub s_dma_rd_resp_data: Signal<In, Bits<DATA_BITS>>,
    pub s_dma_rd_resp_tag: Signal<In, Bits<8>>,
    pub s_dma_rd_resp_last: Signal<In, Bit>,
    pub s_dma_rd_resp_err: Signal<In, Bit>,

    /// The decoded WQE (`SendWqe`'s fields), with the request's QP and index.
    pub m_wqe_valid: Signal<Out, Bit>,
    pub m_wqe_ready: Signal<In, Bit>,
    pub m_wqe_qpn: Signal<Out, Bits<QA>>,
    pub m_wqe_index: Signal<Out, Bits<32>>,
    pub m_wqe_wr_id: Signal<Out, Bits<64>>,
    pub m_wqe_opcode: Signal<Out, Bits<8>>,
    pub m_wqe_flags: Signal<Out, Bits<8>>,
    pub m_wqe_inline_len: Signal<Out, Bits<8>>,
    pub m_wqe_num_sge: Signal<Out, Bits<8>>,
    pub m_wqe_imm: Signal<Out, Bits<32>>,
    pub m_wqe_remote_addr: Signal<Out, Bits<64>>,
    pub m_wqe_rkey: Signal<Out, Bits<32>>,
    pub m_wqe_compare_add: Signal<Out, Bits<64>>,
    pub m_wqe_swap: Signal<Out, Bits<64>>,
    pub m_wqe_inline: Signal<Out, Bits<256>>,
    pub m_wqe_sge_addr: Signal<Out, Bits<64>>,
    pub m_wqe_sge_length: Signal<Out, Bits<32>>,
    pub m_wqe_sge_lkey: Signal<Out, Bits<32>>,

    /// Pulse: the read of the WQE failed.
    pub m_err_valid: Signal<Out, Bit>,
    pub m_err_qpn: Signal<Out, Bits<QA>>,
    pub m_err_index: Signal<Out, Bits<32>>,

    state: DFF<Bits<2>>,
    qpn: DFF<Bits<QA>>,
    index: DFF<Bits<32>>,
    addr: DFF<Bits<64>>,
    beat: DFF<Bits<DATA_BITS>>,
    slot58: Cat<26, 32, 58>,
    addr64: Cat<58, 6, 64>,
    slot: Signal<Local, Bits<32>>,
    is_inline: Signal<Local, Bit>,
    unused_tag: Signal<Local, Bits<8>>,
    unused_last: Signal<Local, Bit>,
    unused_rsvd: Signal<Local, Bits<32>>,

    st_idle: Constant<Bits<2>>,
    st_req: Constant<Bits<2>>,
    st_wait: Constant<Bits<2>>,
    st_out: Constant<Bits<2>>,
    ones32: Constant<Bits<32>>,
    zero6: Constant<Bits<6>>,
    zero26: Constant<Bits<26>>,
    zero32: Constant<Bits<32>>,
    zero64: Constant<Bits<64>>,
    zero256: Constant<Bits<256>>,
    len64: Constant<Bits<16>>,
    tag: Constant<Bits<8>>,
    inline_flag: Constant<Bits<8>>,
    zero8: Constant<Bits<8>>,
}

impl<const QA: usize> Default for WqeFetch<QA> {
    fn default() -> Self {
        WqeFetch {
            clock: Default::default(),
            reset: Default::default(),
            s_req_valid: Default::default(),
            s_req_ready: Default::default(),
            s_req_qpn: Default::default(),
            s_req_sq_ring: Default::default(),
            s_req_sq_log: Default::default(),
            s_req_index: Default::default(),
            m_dma_rd_req_valid: Default::default(),
            m_dma_rd_req_ready: Default::default(),
            m_dma_rd_req_addr: Default::default(),
            m_dma_rd_req_len: Default::default(),
            m_dma_rd_req_tag: Default::default(),
            s_dma_rd_resp_valid: Default::default(),
            s_dma_rd_resp_ready: Default::default(),
            s_dma_rd_resp_data: Default::default(),
            s_dma_rd_resp_tag: Default::default(),
            s_dma_rd_resp_last: Default::default(),
            s_dma_rd_resp_err: Default::default(),
            m_wqe_valid: Default::default(),
            m_wqe_ready: Default::default(),
            m_wqe_qpn: Default::default(),
            m_wqe_index: Default::default(),
            m_wqe_wr_id: Default::default(),
            m_wqe_opcode: Default::default(),
            m_wqe_flags: Default::default(),
            m_wqe_inline_len: Default::default(),
            m_wqe_num_sge: Default::default(),
            m_wqe_imm: Default::default(),
            m_wqe_remote_addr: Default::default(),
            m_wqe_rkey: Default::default(),
            m_wqe_compare_add: Default::default(),
            m_wqe_swap: Default::default(),
            m_wqe_inline: Default::default(),
            m_wqe_sge_addr: Default::default(),
            m_wqe_sge_length: Default::default(),
            m_wqe_sge_lkey: Default::default(),
            m_err_valid: Default::default(),
            m_err_qpn: Default::default(),
            m_err_index: Default::default(),
            state: Default::default(),
            qpn: Default::default(),
            index: Default::default(),
            addr: Default::default(),
            beat: Default::default(),
            slot58: Default::default(),
            addr64: Default::default(),
            slot: Default::default(),
            is_inline: Default::default(),
            unused_tag: Default::default(),
            unused_last: Default::default(),
            unused_rsvd: Default::default(),
            st_idle: k(IDLE),
            st_req: k(REQ),
            st_wait: k(WAIT),
            st_out: k(OUT),
            ones32: k(0xFFFF_FFFF),
            zero6: k(0),
            zero26: k(0),
            zero32: k(0),
            zero64: k(0),
            zero256: k(0),
            len64: k(64),
            tag: k(0),
            inline_flag: k(u64::from(rocenic_proto::abi::verbs::send_flags::INLINE)),
            zero8: k(0),
        }
    }
}

impl<const QA: usize> Logic for WqeFetch<QA> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, state, qpn, index, addr, beat);

        // ---- IDLE: take a request; the slot's address ----
        self.slot.next = self.s_req_index.val() & !(self.ones32.val() << self.s_req_sq_log.val());
        self.slot58.lo.next = self.slot.val();
        self.slot58.hi.next = self.zero26.val();
        self.addr64.hi.next = self.s_req_sq_ring.val() + self.slot58.y.val();
        self.addr64.lo.next = self.zero6.val();
        self.s_req_ready.next = self.state.q.val() == self.st_idle.val();
        if self.s_req_valid.val() & (self.state.q.val() == self.st_idle.val()) {
            self.qpn.d.next = self.s_req_qpn.val();
            self.index.d.next = self.s_req_index.val();
            self.addr.d.next = self.addr64.y.val();
            self.state.d.next = self.st_req.val();
        }

        // ---- REQ: the read ----
        self.m_dma_rd_req_valid.next = self.state.q.val() == self.st_req.val();
        self.m_dma_rd_req_addr.next = self.addr.q.val();
        self.m_dma_rd_req_len.next = self.len64.val();
        self.m_dma_rd_req_tag.next = self.tag.val();
        if (self.state.q.val() == self.st_req.val()) & self.m_dma_rd_req_ready.val() {
            self.state.d.next = self.st_wait.val();
        }

        // ---- WAIT: its one beat (or the refusal) ----
        self.s_dma_rd_resp_ready.next = self.state.q.val() == self.st_wait.val();
        // One beat answers a 64-byte read: its tag and `last` say nothing new.
        self.unused_tag.next = self.s_dma_rd_resp_tag.val();
        self.unused_last.next = self.s_dma_rd_resp_last.val();
        self.m_err_valid.next = false;
        self.m_err_qpn.next = self.qpn.q.val();
        self.m_err_index.next = self.index.q.val();
        if (self.state.q.val() == self.st_wait.val()) & self.s_dma_rd_resp_valid.val() {
            if self.s_dma_rd_resp_err.val() {
                self.m_err_valid.next = true;
                self.state.d.next = self.st_idle.val();
            } else {
                self.beat.d.next = self.s_dma_rd_resp_data.val();
                self.state.d.next = self.st_out.val();
            }
        }

        // ---- OUT: the decoded WQE, held until taken ----
        self.m_wqe_valid.next = self.state.q.val() == self.st_out.val();
        self.m_wqe_qpn.next = self.qpn.q.val();
        self.m_wqe_index.next = self.index.q.val();
        self.m_wqe_wr_id.next = self.beat.q.val().get_bits::<64>(0);
        self.m_wqe_opcode.next = self.beat.q.val().get_bits::<8>(64);
        self.m_wqe_flags.next = self.beat.q.val().get_bits::<8>(72);
        self.m_wqe_inline_len.next = self.beat.q.val().get_bits::<8>(80);
        self.m_wqe_num_sge.next = self.beat.q.val().get_bits::<8>(88);
        self.m_wqe_imm.next = self.beat.q.val().get_bits::<32>(96);
        self.m_wqe_remote_addr.next = self.beat.q.val().get_bits::<64>(128);
        self.m_wqe_rkey.next = self.beat.q.val().get_bits::<32>(192);
        self.unused_rsvd.next = self.beat.q.val().get_bits::<32>(224);
        self.is_inline.next =
            (self.beat.q.val().get_bits::<8>(72) & self.inline_flag.val()) != self.zero8.val();
        if self.is_inline.val() {
            self.m_wqe_compare_add.next = self.zero64.val();
            self.m_wqe_swap.next = self.zero64.val();
            self.m_wqe_sge_addr.next = self.zero64.val();
            self.m_wqe_sge_length.next = self.zero32.val();
            self.m_wqe_sge_lkey.next = self.zero32.val();
            self.m_wqe_inline.next = self.beat.q.val().get_bits::<256>(256);
        } else {
            self.m_wqe_compare_add.next = self.beat.q.val().get_bits::<64>(256);
            self.m_wqe_swap.next = self.beat.q.val().get_bits::<64>(320);
            self.m_wqe_sge_addr.next = self.beat.q.val().get_bits::<64>(384);
            self.m_wqe_sge_length.next = self.beat.q.val().get_bits::<32>(448);
            self.m_wqe_sge_lkey.next = self.beat.q.val().get_bits::<32>(480);
            self.m_wqe_inline.next = self.zero256.val();
        }
        if (self.state.q.val() == self.st_out.val()) & self.m_wqe_ready.val() {
            self.state.d.next = self.st_idle.val();
        }

        if self.reset.val() {
            self.state.d.next = self.st_idle.val();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use rocenic_proto::abi::verbs::{send_flags, WrOpcode};
    use rocenic_proto::abi::wqe::SendWqe;
    use rocenic_proto::abi::DESC_SIZE;

    use super::*;
    use crate::bench::{Bench, Pattern, Rng};
    use crate::tx_leaves::bytes_from_bits;
    use crate::QP_LOG;

    /// Rings whose IOVA is at or above this fail to read.
    const BAD_RING: u64 = 0xF000_0000_0000_0000;

    /// A random WQE image: mostly a real WQE (`to_bytes`), sometimes raw random bytes
    /// (`from_bytes` never fails, and neither does the block).
    fn random_raw(rng: &mut Rng) -> [u8; DESC_SIZE] {
        if rng.percent(30) {
            let mut raw: [u8; DESC_SIZE] = rng.bytes(DESC_SIZE).try_into().expect("64");
            if rng.percent(50) {
                raw[9] |= send_flags::INLINE;
            }
            return raw;
        }
        let inline = rng.percent(30);
        let w = SendWqe {
            wr_id: rng.next_u64(),
            opcode: WrOpcode::from(rng.below(11) as u8),
            flags: rng.byte() & 0xB | if inline { send_flags::INLINE } else { 0 },
            inline_len: rng.below(33) as u8,
            num_sge: rng.below(3) as u8,
            imm_or_inv: rng.next_u64() as u32,
            remote_addr: rng.next_u64(),
            rkey: rng.next_u64() as u32,
            compare_add: rng.next_u64(),
            swap: rng.next_u64(),
            sge: rocenic_proto::abi::wqe::Sge {
                addr: rng.next_u64(),
                length: rng.next_u64() as u32,
                lkey: rng.next_u64() as u32,
            },
            inline: rng.bytes(32).try_into().expect("32"),
        };
        w.to_bytes()
    }

    /// The block's outputs as a `SendWqe`.
    fn wqe_out(u: &WqeFetch<QP_LOG>) -> SendWqe {
        SendWqe {
            wr_id: u.m_wqe_wr_id.val().to_u64(),
            opcode: WrOpcode::from(u.m_wqe_opcode.val().to_u64() as u8),
            flags: u.m_wqe_flags.val().to_u64() as u8,
            inline_len: u.m_wqe_inline_len.val().to_u64() as u8,
            num_sge: u.m_wqe_num_sge.val().to_u64() as u8,
            imm_or_inv: u.m_wqe_imm.val().to_u64() as u32,
            remote_addr: u.m_wqe_remote_addr.val().to_u64(),
            rkey: u.m_wqe_rkey.val().to_u64() as u32,
            compare_add: u.m_wqe_compare_add.val().to_u64(),
            swap: u.m_wqe_swap.val().to_u64(),
            sge: rocenic_proto::abi::wqe::Sge {
                addr: u.m_wqe_sge_addr.val().to_u64(),
                length: u.m_wqe_sge_length.val().to_u64() as u32,
                lkey: u.m_wqe_sge_lkey.val().to_u64() as u32,
            },
            inline: bytes_from_bits(u.m_wqe_inline.val())
                .try_into()
                .expect("32"),
        }
    }

    /// Fetches `count` random WQEs from random rings; returns (fetched, refused).
    fn run(pattern: Pattern, seed: u64, count: usize) -> (usize, usize) {
        let mut rng = Rng::new(seed);
        let mut b = Bench::new(WqeFetch::<QP_LOG>::default(), |u| &mut u.clock);
        b.uut.reset.next = true;
        b.tick();
        b.uut.reset.next = false;
        let (mut fetched, mut refused) = (0, 0);
        // (due cycle, address) of the read in flight.
        let mut pending: VecDeque<(u64, u64)> = VecDeque::new();
        let mut offered = false;
        for _ in 0..count {
            let qpn = rng.below(1 << QP_LOG);
            let ring = if rng.percent(10) {
                BAD_RING >> 6
            } else {
                rng.next_u64() >> 8
            };
            let sq_log = rng.below(16);
            let index = rng.next_u64() as u32;
            let raw = random_raw(&mut rng);
            let want_addr = (ring << 6) + 64 * (u64::from(index) & ((1 << sq_log) - 1));
            let u = &mut b.uut;
            u.s_req_valid.next = true;
            u.s_req_qpn.next = qpn.into();
            u.s_req_sq_ring.next = ring.into();
            u.s_req_sq_log.next = sq_log.into();
            u.s_req_index.next = u64::from(index).into();
            let mut cycles = 0;
            loop {
                cycles += 1;
                assert!(cycles < 200, "stuck");
                let now = b.cycle();
                let due = pending.front().is_some_and(|&(t, _)| t <= now);
                if due && !offered && rng.percent(pattern.valid_pct) {
                    offered = true;
                }
                let u = &mut b.uut;
                u.s_dma_rd_resp_valid.next = offered;
                if let Some(&(_, addr)) = pending.front() {
                    let bad = addr >= BAD_RING;
                    u.s_dma_rd_resp_err.next = bad;
                    u.s_dma_rd_resp_last.next = true;
                    u.s_dma_rd_resp_data.next = if bad {
                        Bits::default()
                    } else {
                        crate::icrc::beat_from_bytes(&raw)
                    };
                }
                u.m_dma_rd_req_ready.next = rng.percent(pattern.ready_pct);
                u.m_wqe_ready.next = rng.percent(pattern.ready_pct);
                b.settle();
                let u = &b.uut;
                let taken = u.s_req_valid.val() && u.s_req_ready.val();
                if u.m_dma_rd_req_valid.val() && u.m_dma_rd_req_ready.val() {
                    assert_eq!(u.m_dma_rd_req_addr.val().to_u64(), want_addr);
                    assert_eq!(u.m_dma_rd_req_len.val().to_u64(), 64);
                    pending.push_back((now + 1 + rng.below(20), want_addr));
                }
                if u.s_dma_rd_resp_valid.val() && u.s_dma_rd_resp_ready.val() {
                    pending.pop_front();
                    offered = false;
                }
                let mut finished = false;
                if u.m_err_valid.val() {
                    assert!(want_addr >= BAD_RING, "error for a good read");
                    assert_eq!(u.m_err_qpn.val().to_u64(), qpn);
                    assert_eq!(u.m_err_index.val().to_u64(), u64::from(index));
                    refused += 1;
                    finished = true;
                }
                if u.m_wqe_valid.val() && u.m_wqe_ready.val() {
                    assert!(want_addr < BAD_RING, "a WQE from a refused read");
                    assert_eq!(wqe_out(u), SendWqe::from_bytes(&raw), "raw {raw:02x?}");
                    assert_eq!(u.m_wqe_qpn.val().to_u64(), qpn);
                    assert_eq!(u.m_wqe_index.val().to_u64(), u64::from(index));
                    fetched += 1;
                    finished = true;
                }
                b.tick();
                if taken {
                    b.uut.s_req_valid.next = false;
                }
                if finished {
                    break;
                }
            }
        }
        (fetched, refused)
    }

    #[test]
    fn every_fetch_decodes_as_send_wqe_from_bytes() {
        let (mut fetched, mut refused) = (0, 0);
        for (i, p) in Pattern::SWEEP.into_iter().enumerate() {
            let (f, r) = run(p, 0xF37 + i as u64, 120);
            fetched += f;
            refused += r;
        }
        assert!(
            fetched > 400 && refused > 20,
            "{fetched} fetched, {refused} refused"
        );
    }
}
