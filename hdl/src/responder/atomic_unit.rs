//! `AtomicUnit`: the responder's atomics (CMP_AND_SWP, FETCH_ADD) and their replay cache.
//! A checked, translated atomic goes in; a DMA read, the operation, a DMA write and its
//! status later, the ATOMIC ACKNOWLEDGE record comes out and the original value is
//! remembered for duplicates, as the model's `exec_atomic`, `atomic_reply` and
//! `duplicate` do (the model's `atomic_result` and `REPLAY_DEPTH`).
//!
//! ```text
//!  s_job ----> RD_REQ -> RD_DATA -> WR_REQ -> WR_DATA -> WR_STATUS -> META_RD -> META_WR -> ACK --> pkt
//!  s_replay -> R_META -> R_META2 -> (R_READ -> R_CMP) x count --------------------------> ACK
//!                                                                          \-> MISS (m_replay_miss)
//!  DMA error (read or write) -> ERR (m_err), no ACK, nothing remembered
//! ```
//!
//! # Interface
//!
//! - `s_job_valid`/`s_job_ready`, `job_hdr` (a `JobHdrServer`): the header of the ACK (`dst_mac`, `src_mac`, `src_ip`,
//!   `dst_ip`, `udp_sport`, `dest_qp` (remote QPN), `qpn` (ours, `Q` bits), `psn`, `msn`,
//!   as in `ReadResp`); `job_args` (an `AtomicArgsServer`): `iova` (64, translated; `va % 8` checked by the responder),
//!   `compare_swap` (1 = CMP_AND_SWP, 0 = FETCH_ADD), `swap_add`, `compare` (64).
//! - `s_replay_valid`/`s_replay_ready`, `replay_hdr`: a duplicate atomic, the same header: the QP's cache is
//!   searched for `psn` (oldest entry first, as the model's `iter().find`); a hit sends the
//!   ATOMIC ACKNOWLEDGE with the cached original value, a miss sends nothing and pulses
//!   `m_replay_miss`.
//! - `clear`: forget a QP's entries (QP created or reset); one write, always taken
//!   (`ready` is high). A clear must not name a QP with an atomic or a
//!   replay in this unit (the responder clears QPs only when they have none in flight).
//! - `dma_rd`: one 8-byte read (tag 0), the little-endian u64 in lanes 0-7.
//!   `dma_wr`: one 8-byte write (keep 0xff, last), then its status.
//! - `pkt` (a `RecordClient`): the ATOMIC ACKNOWLEDGE record (packed as `tx_arbiter::RECORD_FIELDS`):
//!   opcode 0x12, AETH ACK with credit 0x1f and `msn`, `orig`, `src_qp` the job's `qpn`,
//!   no payload (so this block has no payload stream). Unused fields 0.
//! - `m_err_valid` (pulse), `m_err_qpn`, `m_err_psn`: the read or write was refused: no
//!   ACK, nothing cached, memory as the IOMMU left it; the responder NAKs Remote
//!   Operational Error and errors the QP (the model's `exec_atomic` error path).
//! - `m_busy`: an atomic or replay is in the unit. The responder takes no request while
//!   it is high, so an atomic's write-back lands before any later request of any QP
//!   writes or reads host memory (the model executes each request at once, in order).
//!
//! # The cache
//!
//! `REPLAY_DEPTH` = 16 entries per QP: PSN (24) and original value (64) in two RAMs
//! addressed `{qpn, slot}`, and per QP a `head` (next slot written, 4 bits) and a `count`
//! (0..=16) in two small RAMs addressed by QPN. An atomic writes its entry at `head`, then
//! `head + 1` and `min(count + 1, 16)`: the oldest entry goes when the 17th comes, as the
//! model's `VecDeque`. The valid entries are the `count` slots before `head`, so a clear is
//! one write of `count = 0`.
//!
//! # Timing
//!
//! One operation at a time (atomics are ordered per QP and rare). An atomic takes about
//! 9 cycles plus the DMA read and write latencies when nothing stalls; a replay takes 4
//! cycles plus 2 per entry searched (at most 36).

use crate::bus::ctl::QpClrServer;
use crate::bus::dma_rd::DmaRdClient;
use crate::bus::dma_wr::DmaWrClient;
use crate::bus::job::{AtomicArgsServer, JobHdrServer};
use crate::bus::record::{RecordClient, RecordPack};
use crate::common::cat::Cat;
use crate::common::icrc::DATA_BITS;
use crate::common::zext::ZeroExt;
use crate::prelude::*;
use crate::responder::read_resp::SYNDROME_ACK;
use rocenic_proto::wire::Opcode;

/// Atomics remembered per QP (the model's `REPLAY_DEPTH`; the bench checks they agree).
/// The cache's slot and count widths are written for 16.
pub const REPLAY_DEPTH: usize = 16;

/// ATOMIC ACKNOWLEDGE (`rocenic_proto::wire::Opcode::AtomicAcknowledge`).
const OP_ATOMIC_ACK: u64 = Opcode::AtomicAcknowledge.code() as u64;

/// FSM states.
const IDLE: u64 = 0;
const RD_REQ: u64 = 1;
const RD_DATA: u64 = 2;
const WR_REQ: u64 = 3;
const WR_DATA: u64 = 4;
const WR_STATUS: u64 = 5;
const META_RD: u64 = 6;
const META_WR: u64 = 7;
const ACK: u64 = 8;
const ERR: u64 = 9;
const R_META: u64 = 10;
const R_META2: u64 = 11;
const R_READ: u64 = 12;
const R_CMP: u64 = 13;
const MISS: u64 = 14;

/// The atomic unit; see the [module docs](self). `Q`: bits of a QPN; `QS` must be `Q + 4`
/// (the cache's address, `{qpn, slot}`; stable Rust cannot compute it in the type).
#[derive(LogicBlock)]
pub struct AtomicUnit<const Q: usize, const QS: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,

    // --- an atomic to execute ---
    pub s_job_valid: Signal<In, Bit>,
    pub s_job_ready: Signal<Out, Bit>,
    pub job_hdr: JobHdrServer<Q>,
    pub job_args: AtomicArgsServer,

    // --- a duplicate atomic to answer from the cache ---
    pub s_replay_valid: Signal<In, Bit>,
    pub s_replay_ready: Signal<Out, Bit>,
    pub replay_hdr: JobHdrServer<Q>,
    pub m_replay_miss: Signal<Out, Bit>,

    // --- forget a QP's entries ---
    pub clear: QpClrServer<Q>,

    // --- DMA read client ---
    pub dma_rd: DmaRdClient,

    // --- DMA write client ---
    pub dma_wr: DmaWrClient,

    // --- the ATOMIC ACKNOWLEDGE record ---
    pub pkt: RecordClient,

    // --- DMA failure ---
    pub m_err_valid: Signal<Out, Bit>,
    pub m_err_qpn: Signal<Out, Bits<Q>>,
    pub m_err_psn: Signal<Out, Bits<24>>,
    /// An atomic or a replay is in this unit (from the cycle after its job was taken until
    /// its ACK or error has gone): from a register, no path from the inputs.
    pub m_busy: Signal<Out, Bit>,

    state: DFF<Bits<4>>,
    h_dst_mac: DFF<Bits<48>>,
    h_src_mac: DFF<Bits<48>>,
    h_src_ip: DFF<Bits<32>>,
    h_dst_ip: DFF<Bits<32>>,
    h_udp_sport: DFF<Bits<16>>,
    h_dest_qp: DFF<Bits<24>>,
    qpn: DFF<Bits<Q>>,
    psn: DFF<Bits<24>>,
    msn: DFF<Bits<24>>,
    iova: DFF<Bits<64>>,
    compare_swap: DFF<Bit>,
    swap_add: DFF<Bits<64>>,
    compare: DFF<Bits<64>>,
    orig: DFF<Bits<64>>,
    new_value: DFF<Bits<64>>,
    head: DFF<Bits<4>>,
    count: DFF<Bits<5>>,
    /// Replay: the entry being searched (0 = the oldest).
    index: DFF<Bits<5>>,

    /// Per QP: next slot to write, entries held.
    head_ram: RAM<Bits<4>, Q>,
    count_ram: RAM<Bits<5>, Q>,
    /// Per `{qpn, slot}`: PSN and original value.
    psn_ram: RAM<Bits<24>, QS>,
    orig_ram: RAM<Bits<64>, QS>,
    cache_wr_addr: Cat<Q, 4, QS>,
    cache_rd_addr: Cat<Q, 4, QS>,
    wr_beat: Cat<448, 64, DATA_BITS>,
    rec: RecordPack,
    /// The QP as the record's `src_qp`.
    src_qp: ZeroExt<Q, 24>,

    st_idle: Constant<Bits<4>>,
    st_rd_req: Constant<Bits<4>>,
    st_rd_data: Constant<Bits<4>>,
    st_wr_req: Constant<Bits<4>>,
    st_wr_data: Constant<Bits<4>>,
    st_wr_status: Constant<Bits<4>>,
    st_meta_rd: Constant<Bits<4>>,
    st_meta_wr: Constant<Bits<4>>,
    st_ack: Constant<Bits<4>>,
    st_err: Constant<Bits<4>>,
    st_r_meta: Constant<Bits<4>>,
    st_r_meta2: Constant<Bits<4>>,
    st_r_read: Constant<Bits<4>>,
    st_r_cmp: Constant<Bits<4>>,
    st_miss: Constant<Bits<4>>,
    zero1: Constant<Bits<1>>,
    zero4: Constant<Bits<4>>,
    zero5: Constant<Bits<5>>,
    zero8: Constant<Bits<8>>,
    zero16: Constant<Bits<16>>,
    zero32: Constant<Bits<32>>,
    zero64: Constant<Bits<64>>,
    zero448: Constant<Bits<448>>,
    one4: Constant<Bits<4>>,
    one5: Constant<Bits<5>>,
    full5: Constant<Bits<5>>,
    len8: Constant<Bits<16>>,
    keep8: Constant<Bits<64>>,
    syn_ack: Constant<Bits<8>>,
    op_ack: Constant<Bits<8>>,

    rd_orig: Signal<Local, Bits<64>>,
    unused_rd: Signal<Local, Bits<448>>,
    unused_rd_tag: Signal<Local, Bits<8>>,
    unused_rd_last: Signal<Local, Bit>,
    /// Replay: the slot of entry `index`, `head - count + index` (mod 16).
    slot: Signal<Local, Bits<4>>,
    count4: Signal<Local, Bits<4>>,
    index4: Signal<Local, Bits<4>>,
    unused_index_hi: Signal<Local, Bit>,
    in_idle: Signal<Local, Bit>,
}

fn k<const N: usize>(v: u64) -> Constant<Bits<N>> {
    Constant::new(v.to_bits())
}

impl<const Q: usize, const QS: usize> Default for AtomicUnit<Q, QS> {
    fn default() -> Self {
        assert!(
            (1..=20).contains(&Q),
            "AtomicUnit<{Q}, _>: a QPN has 1..=20 bits"
        );
        assert_eq!(QS, Q + 4, "AtomicUnit<{Q}, {QS}>: QS must be Q + 4");
        AtomicUnit {
            clock: Default::default(),
            reset: Default::default(),
            s_job_valid: Default::default(),
            s_job_ready: Default::default(),
            job_hdr: Default::default(),
            job_args: Default::default(),
            s_replay_valid: Default::default(),
            s_replay_ready: Default::default(),
            replay_hdr: Default::default(),
            m_replay_miss: Default::default(),
            clear: Default::default(),
            dma_rd: Default::default(),
            dma_wr: Default::default(),
            pkt: Default::default(),
            m_err_valid: Default::default(),
            m_err_qpn: Default::default(),
            m_err_psn: Default::default(),
            m_busy: Default::default(),
            state: Default::default(),
            h_dst_mac: Default::default(),
            h_src_mac: Default::default(),
            h_src_ip: Default::default(),
            h_dst_ip: Default::default(),
            h_udp_sport: Default::default(),
            h_dest_qp: Default::default(),
            qpn: Default::default(),
            psn: Default::default(),
            msn: Default::default(),
            iova: Default::default(),
            compare_swap: Default::default(),
            swap_add: Default::default(),
            compare: Default::default(),
            orig: Default::default(),
            new_value: Default::default(),
            head: Default::default(),
            count: Default::default(),
            index: Default::default(),
            head_ram: Default::default(),
            count_ram: Default::default(),
            psn_ram: Default::default(),
            orig_ram: Default::default(),
            cache_wr_addr: Default::default(),
            cache_rd_addr: Default::default(),
            wr_beat: Default::default(),
            rec: Default::default(),
            src_qp: Default::default(),
            st_idle: k(IDLE),
            st_rd_req: k(RD_REQ),
            st_rd_data: k(RD_DATA),
            st_wr_req: k(WR_REQ),
            st_wr_data: k(WR_DATA),
            st_wr_status: k(WR_STATUS),
            st_meta_rd: k(META_RD),
            st_meta_wr: k(META_WR),
            st_ack: k(ACK),
            st_err: k(ERR),
            st_r_meta: k(R_META),
            st_r_meta2: k(R_META2),
            st_r_read: k(R_READ),
            st_r_cmp: k(R_CMP),
            st_miss: k(MISS),
            zero1: k(0),
            zero4: k(0),
            zero5: k(0),
            zero8: k(0),
            zero16: k(0),
            zero32: k(0),
            zero64: k(0),
            zero448: k(0),
            one4: k(1),
            one5: k(1),
            full5: k(16),
            len8: k(8),
            keep8: k(0xff),
            syn_ack: k(SYNDROME_ACK),
            op_ack: k(OP_ATOMIC_ACK),
            rd_orig: Default::default(),
            unused_rd: Default::default(),
            unused_rd_tag: Default::default(),
            unused_rd_last: Default::default(),
            slot: Default::default(),
            count4: Default::default(),
            index4: Default::default(),
            unused_index_hi: Default::default(),
            in_idle: Default::default(),
        }
    }
}

impl<const Q: usize, const QS: usize> Logic for AtomicUnit<Q, QS> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            state,
            h_dst_mac,
            h_src_mac,
            h_src_ip,
            h_dst_ip,
            h_udp_sport,
            h_dest_qp,
            qpn,
            psn,
            msn,
            iova,
            compare_swap,
            swap_add,
            compare,
            orig,
            new_value,
            head,
            count,
            index
        );
        self.head_ram.read_clock.next = self.clock.val();
        self.head_ram.write_clock.next = self.clock.val();
        self.count_ram.read_clock.next = self.clock.val();
        self.count_ram.write_clock.next = self.clock.val();
        self.psn_ram.read_clock.next = self.clock.val();
        self.psn_ram.write_clock.next = self.clock.val();
        self.orig_ram.read_clock.next = self.clock.val();
        self.orig_ram.write_clock.next = self.clock.val();

        // ---- IDLE: a replay first, else an atomic ----
        self.in_idle.next = self.state.q.val() == self.st_idle.val();
        self.s_replay_ready.next = self.in_idle.val();
        self.s_job_ready.next = self.in_idle.val() & !self.s_replay_valid.val();
        if self.in_idle.val() & self.s_replay_valid.val() {
            self.h_dst_mac.d.next = self.replay_hdr.dst_mac.val();
            self.h_src_mac.d.next = self.replay_hdr.src_mac.val();
            self.h_src_ip.d.next = self.replay_hdr.src_ip.val();
            self.h_dst_ip.d.next = self.replay_hdr.dst_ip.val();
            self.h_udp_sport.d.next = self.replay_hdr.udp_sport.val();
            self.h_dest_qp.d.next = self.replay_hdr.dest_qp.val();
            self.qpn.d.next = self.replay_hdr.qpn.val();
            self.psn.d.next = self.replay_hdr.psn.val();
            self.msn.d.next = self.replay_hdr.msn.val();
            self.state.d.next = self.st_r_meta.val();
        } else if self.in_idle.val() & self.s_job_valid.val() {
            self.h_dst_mac.d.next = self.job_hdr.dst_mac.val();
            self.h_src_mac.d.next = self.job_hdr.src_mac.val();
            self.h_src_ip.d.next = self.job_hdr.src_ip.val();
            self.h_dst_ip.d.next = self.job_hdr.dst_ip.val();
            self.h_udp_sport.d.next = self.job_hdr.udp_sport.val();
            self.h_dest_qp.d.next = self.job_hdr.dest_qp.val();
            self.qpn.d.next = self.job_hdr.qpn.val();
            self.psn.d.next = self.job_hdr.psn.val();
            self.msn.d.next = self.job_hdr.msn.val();
            self.iova.d.next = self.job_args.iova.val();
            self.compare_swap.d.next = self.job_args.compare_swap.val();
            self.swap_add.d.next = self.job_args.swap_add.val();
            self.compare.d.next = self.job_args.compare.val();
            self.state.d.next = self.st_rd_req.val();
        }

        // ---- the read of the original value ----
        self.dma_rd.req_valid.next = self.state.q.val() == self.st_rd_req.val();
        self.dma_rd.req_addr.next = self.iova.q.val();
        self.dma_rd.req_len.next = self.len8.val();
        self.dma_rd.req_tag.next = self.zero8.val();
        if (self.state.q.val() == self.st_rd_req.val()) & self.dma_rd.req_ready.val() {
            self.state.d.next = self.st_rd_data.val();
        }
        self.dma_rd.resp_ready.next = self.state.q.val() == self.st_rd_data.val();
        self.rd_orig.next = self.dma_rd.resp_data.val().get_bits::<64>(0);
        self.unused_rd.next = self.dma_rd.resp_data.val().get_bits::<448>(64);
        self.unused_rd_tag.next = self.dma_rd.resp_tag.val();
        self.unused_rd_last.next = self.dma_rd.resp_last.val();
        if (self.state.q.val() == self.st_rd_data.val()) & self.dma_rd.resp_valid.val() {
            // One beat (8 bytes; an error is one beat too).
            self.orig.d.next = self.rd_orig.val();
            if self.compare_swap.q.val() {
                if self.rd_orig.val() == self.compare.q.val() {
                    self.new_value.d.next = self.swap_add.q.val();
                } else {
                    self.new_value.d.next = self.rd_orig.val();
                }
            } else {
                self.new_value.d.next = self.rd_orig.val() + self.swap_add.q.val();
            }
            if self.dma_rd.resp_err.val() {
                self.state.d.next = self.st_err.val();
            } else {
                self.state.d.next = self.st_wr_req.val();
            }
        }

        // ---- the write of the new value, and its status ----
        self.dma_wr.req_valid.next = self.state.q.val() == self.st_wr_req.val();
        self.dma_wr.req_addr.next = self.iova.q.val();
        self.dma_wr.req_len.next = self.len8.val();
        if (self.state.q.val() == self.st_wr_req.val()) & self.dma_wr.req_ready.val() {
            self.state.d.next = self.st_wr_data.val();
        }
        self.wr_beat.hi.next = self.zero448.val();
        self.wr_beat.lo.next = self.new_value.q.val();
        self.dma_wr.data.next = self.wr_beat.y.val();
        self.dma_wr.data_valid.next = self.state.q.val() == self.st_wr_data.val();
        self.dma_wr.data_keep.next = self.keep8.val();
        self.dma_wr.data_last.next = true;
        if (self.state.q.val() == self.st_wr_data.val()) & self.dma_wr.data_ready.val() {
            self.state.d.next = self.st_wr_status.val();
        }
        if (self.state.q.val() == self.st_wr_status.val()) & self.dma_wr.status_valid.val() {
            if self.dma_wr.status_err.val() {
                self.state.d.next = self.st_err.val();
            } else {
                self.state.d.next = self.st_meta_rd.val();
            }
        }

        // ---- the per-QP head and count (read port: always the QP in hand) ----
        self.head_ram.read_address.next = self.qpn.q.val();
        self.count_ram.read_address.next = self.qpn.q.val();
        // A clear takes the write port; a read in the same cycle would see the old entry,
        // so META_RD and META_WR wait it out and read again.
        self.head_ram.write_enable.next = false;
        self.count_ram.write_enable.next = false;
        self.head_ram.write_address.next = self.qpn.q.val();
        self.count_ram.write_address.next = self.qpn.q.val();
        self.head_ram.write_data.next = self.head_ram.read_data.val() + self.one4.val();
        self.count_ram.write_data.next = self.count_ram.read_data.val() + self.one5.val();
        if self.count_ram.read_data.val() == self.full5.val() {
            self.count_ram.write_data.next = self.full5.val();
        }
        self.cache_wr_addr.hi.next = self.qpn.q.val();
        self.cache_wr_addr.lo.next = self.head_ram.read_data.val();
        self.psn_ram.write_address.next = self.cache_wr_addr.y.val();
        self.orig_ram.write_address.next = self.cache_wr_addr.y.val();
        self.psn_ram.write_data.next = self.psn.q.val();
        self.orig_ram.write_data.next = self.orig.q.val();
        self.psn_ram.write_enable.next = false;
        self.orig_ram.write_enable.next = false;
        if (self.state.q.val() == self.st_meta_rd.val()) & !self.clear.valid.val() {
            self.state.d.next = self.st_meta_wr.val();
        }
        if self.state.q.val() == self.st_meta_wr.val() {
            if self.clear.valid.val() {
                self.state.d.next = self.st_meta_rd.val();
            } else {
                self.head_ram.write_enable.next = true;
                self.count_ram.write_enable.next = true;
                self.psn_ram.write_enable.next = true;
                self.orig_ram.write_enable.next = true;
                self.state.d.next = self.st_ack.val();
            }
        }
        self.clear.ready.next = true;
        if self.clear.valid.val() {
            self.head_ram.write_enable.next = true;
            self.count_ram.write_enable.next = true;
            self.head_ram.write_address.next = self.clear.qpn.val();
            self.count_ram.write_address.next = self.clear.qpn.val();
            self.head_ram.write_data.next = self.zero4.val();
            self.count_ram.write_data.next = self.zero5.val();
        }

        // ---- replay: search the QP's entries, oldest first ----
        if self.state.q.val() == self.st_r_meta.val() {
            self.state.d.next = self.st_r_meta2.val();
        }
        if self.state.q.val() == self.st_r_meta2.val() {
            self.head.d.next = self.head_ram.read_data.val();
            self.count.d.next = self.count_ram.read_data.val();
            self.index.d.next = self.zero5.val();
            if self.count_ram.read_data.val() == self.zero5.val() {
                self.state.d.next = self.st_miss.val();
            } else {
                self.state.d.next = self.st_r_read.val();
            }
        }
        self.count4.next = self.count.q.val().get_bits::<4>(0);
        self.index4.next = self.index.q.val().get_bits::<4>(0);
        self.unused_index_hi.next = self.index.q.val().get_bit(4);
        self.slot.next = self.head.q.val() - self.count4.val() + self.index4.val();
        self.cache_rd_addr.hi.next = self.qpn.q.val();
        self.cache_rd_addr.lo.next = self.slot.val();
        self.psn_ram.read_address.next = self.cache_rd_addr.y.val();
        self.orig_ram.read_address.next = self.cache_rd_addr.y.val();
        if self.state.q.val() == self.st_r_read.val() {
            self.state.d.next = self.st_r_cmp.val();
        }
        if self.state.q.val() == self.st_r_cmp.val() {
            self.orig.d.next = self.orig_ram.read_data.val();
            if self.psn_ram.read_data.val() == self.psn.q.val() {
                self.state.d.next = self.st_ack.val();
            } else if self.index.q.val() + self.one5.val() == self.count.q.val() {
                self.state.d.next = self.st_miss.val();
            } else {
                self.index.d.next = self.index.q.val() + self.one5.val();
                self.state.d.next = self.st_r_read.val();
            }
        }
        self.m_replay_miss.next = self.state.q.val() == self.st_miss.val();
        if self.state.q.val() == self.st_miss.val() {
            self.state.d.next = self.st_idle.val();
        }

        // ---- the ATOMIC ACKNOWLEDGE ----
        self.pkt.valid.next = self.state.q.val() == self.st_ack.val();
        if (self.state.q.val() == self.st_ack.val()) & self.pkt.ready.val() {
            self.state.d.next = self.st_idle.val();
        }
        self.rec.dst_mac.next = self.h_dst_mac.q.val();
        self.rec.src_mac.next = self.h_src_mac.q.val();
        self.rec.src_ip.next = self.h_src_ip.q.val();
        self.rec.dst_ip.next = self.h_dst_ip.q.val();
        self.rec.udp_sport.next = self.h_udp_sport.q.val();
        self.rec.opcode.next = self.op_ack.val();
        self.rec.se.next = self.zero1.val();
        self.rec.ack_req.next = self.zero1.val();
        self.rec.dest_qp.next = self.h_dest_qp.q.val();
        self.rec.psn.next = self.psn.q.val();
        self.rec.va.next = self.zero64.val();
        self.rec.rkey.next = self.zero32.val();
        self.rec.dma_len.next = self.zero32.val();
        self.rec.swap_add.next = self.zero64.val();
        self.rec.compare.next = self.zero64.val();
        self.rec.orig.next = self.orig.q.val();
        self.rec.syndrome.next = self.syn_ack.val();
        self.rec.msn.next = self.msn.q.val();
        self.rec.imm.next = self.zero32.val();
        self.rec.payload_len.next = self.zero16.val();
        self.src_qp.x.next = self.qpn.q.val();
        self.rec.src_qp.next = self.src_qp.y.val();
        self.pkt.data.next = self.rec.y.val();

        // ---- a refused read or write ----
        self.m_err_valid.next = self.state.q.val() == self.st_err.val();
        self.m_busy.next = self.state.q.val() != self.st_idle.val();
        self.m_err_qpn.next = self.qpn.q.val();
        self.m_err_psn.next = self.psn.q.val();
        if self.state.q.val() == self.st_err.val() {
            self.state.d.next = self.st_idle.val();
        }

        if self.reset.val() {
            self.state.d.next = self.st_idle.val();
        }
    }
}
