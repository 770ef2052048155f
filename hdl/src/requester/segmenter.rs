//! `Segmenter`: the requester's segmentation engine. One validated send WQE (a job) goes
//! in; its request packets come out as TX records (`TxPath`'s `req_pkt`) with their
//! payloads (`req_pay`), read from host memory by DMA with several packets in flight.
//!
//! ```text
//!  s_job --> job registers --> packet k: header fields --+--> slot RAM (16 records) --+--> pkt
//!            (off, rest, psn)  DMA read of its payload --+--> dma_rd.req              |
//!                                                                                    |
//!  dma_rd.resp (in order) ------------- record of the head slot once its data starts -+--> pay
//! ```
//!
//! The rule is the model's `request_packet` (`model/src/requester.rs`), which the model's
//! own `build_packet` uses for every packet it sends, and the bench holds every record and
//! payload to it: SEND/WRITE cut at the PMTU (FIRST/MIDDLE/LAST/ONLY, the IMM and INV
//! variants), RETH on a WRITE's first packet, ImmDt or IETH and SE (SOLICITED) on the last,
//! a READ request with RETH `(va + off, rkey, len - off)` for the responses from packet
//! `start_pkt` on, an atomic request with AtomicETH (CompareSwap: swap, compare; FetchAdd:
//! add, 0); PSN `first_psn + k`; AckReq on the last packet of a message and on every PSN
//! whose low four bits are all ones. Fields the opcode does not send are zero in the record.
//!
//! # Jobs
//!
//! A job is taken (`s_job_valid && s_job_ready`) when the previous one has made all its
//! packets (one cycle after its last packet entered the slot RAM). `start_pkt` is the
//! packet to start from (go-back-N resumes a message at a PSN, the model's `rewind`; a READ
//! restarts at its first missing response): it must be below the message's packet count
//! (0 for atomics and inline WQEs). `stop_psn` is the window's edge: the job ends after
//! the packet of PSN `stop_psn - 1` even if the message goes on (no `m_done` then); the
//! requester starts another job from `start_pkt` there once the window has moved. `pmtu`
//! is the IB code 1..=5 (256..4096 bytes); other codes are not defined. `iova` is the payload's IOVA (MrCheck's answer for the SGE);
//! an inline WQE (`inline`, at most 32 bytes, so one packet) brings its bytes on
//! `inline_data` (byte 0 in bits 7:0) instead.
//!
//! # Packets
//!
//! One packet a cycle enters a 64-slot RAM (record, inline bytes, QPN, PSN, flags); a
//! packet with a payload from memory issues its DMA read (`iova + off`, `min(pmtu, rest)`
//! bytes, tag = slot) in the same cycle, through a one-entry request register. So up to 64
//! packets are in flight, which hides a 250-cycle DMA latency at line rate at every PMTU
//! (measured by the bench, `latency_and_throughput_with_a_250_cycle_dma`). The slot count
//! is what bounds a small PMTU: a slot is held from the packet's read to its last payload
//! beat, one DMA round trip (~260 cycles) at least, so `SLOTS` packets go out per round
//! trip. With 16 slots, PMTU 256 ran at 16 x 256 B per ~266 cycles, 15.4 bytes a cycle
//! (~16.6 cycles a packet), the engine's whole send rate at that PMTU (`rocenic perf write
//! -s 65536 --mtu 256`: wire efficiency 0.30); 64 slots carry 64 x 256 B per round trip,
//! more than the output's one packet per `1 + beats` cycles. Responses come back in
//! request order, one per payload packet. The head slot's record is offered on `pkt` once the first beat of its
//! response is there (a record never waits in the frame builder for its data, which would
//! block responses), or at once for a packet without payload or with inline bytes; after
//! the record is taken, the payload beats pass through (`tlast` = the response's `last`),
//! or the inline bytes as one beat.
//!
//! Per record taken: `m_sent_*` (PSN, QPN, last of the message) for the requester's window
//! and ACK timer (the model's `note_request_sent`), and `m_done_*` with the last packet of
//! a job.
//!
//! # DMA errors
//!
//! A response with `err` (a single beat, the contract's IOMMU refusal) at the head: the
//! packet is not sent, `m_err_*` pulses its QPN and PSN, every packet of that QP still in
//! the slots is dropped (their reads are drained), and the job being segmented is
//! abandoned if it is that QP's (no `m_done`). This is the model's `local_dma_failure`:
//! the op fails with LOC_PROT_ERR once earlier ops are done, the QP stops fetching
//! (`stopped`), its unsent frames are purged, and the requester retires the op into the
//! error state. The requester must do the same on the pulse: complete the WQE of that PSN
//! with LOC_PROT_ERR when it reaches the head of its SQ, count a DMA fault, give the block
//! no more jobs for the QP. No job is taken in the cycle of a pulse, so every job of the
//! QP taken before the requester saw it is covered.

use crate::bus::dma_rd::DmaRdClient;
use crate::bus::record::{PayloadClient, RecordClient, RecordPack};
use crate::common::cat::Cat;
use crate::common::icrc::DATA_BITS;
use crate::common::zext::ZeroExt;
use crate::prelude::*;
use crate::tx::tx_arbiter::RECORD_BITS;

crate::packed_layout!(
    /// A slot: the record and what the output side needs to send it.
    slot_layout, SlotPack; rec: 658, inline_data: 256, dma: 1, inl: 1, last: 1, qpn: 16,
    psn: 24
);
crate::unpack_fields!(
    /// The head slot's fields.
    SlotUnpack, slot_layout; rec: 658, inline_data: 256, dma: 1, inl: 1, last: 1, qpn: 16,
    psn: 24
);

const _: () = assert!(slot_layout::FIELDS[0].1 == RECORD_BITS);

/// Address bits of the slot RAM.
pub const SLOT_AW: usize = 6;
/// Slots (packets in flight between the generator and the TX output).
pub const SLOTS: usize = 1 << SLOT_AW;
/// Bits of the slot pointers (one more than the address: full and empty differ).
const PTR_BITS: usize = SLOT_AW + 1;
/// Bits of a slot in the slot RAM.
pub const SLOT_BITS: usize = slot_layout::BITS;

/// Wire opcodes, from `rocenic_proto::wire::Opcode`.
pub mod op {
    use rocenic_proto::wire::Opcode;

    pub const SEND_FIRST: u64 = Opcode::SendFirst.code() as u64;
    pub const SEND_MIDDLE: u64 = Opcode::SendMiddle.code() as u64;
    pub const SEND_LAST: u64 = Opcode::SendLast.code() as u64;
    pub const SEND_LAST_IMM: u64 = Opcode::SendLastWithImmediate.code() as u64;
    pub const SEND_ONLY: u64 = Opcode::SendOnly.code() as u64;
    pub const SEND_ONLY_IMM: u64 = Opcode::SendOnlyWithImmediate.code() as u64;
    pub const WRITE_FIRST: u64 = Opcode::RdmaWriteFirst.code() as u64;
    pub const WRITE_MIDDLE: u64 = Opcode::RdmaWriteMiddle.code() as u64;
    pub const WRITE_LAST: u64 = Opcode::RdmaWriteLast.code() as u64;
    pub const WRITE_LAST_IMM: u64 = Opcode::RdmaWriteLastWithImmediate.code() as u64;
    pub const WRITE_ONLY: u64 = Opcode::RdmaWriteOnly.code() as u64;
    pub const WRITE_ONLY_IMM: u64 = Opcode::RdmaWriteOnlyWithImmediate.code() as u64;
    pub const READ_REQUEST: u64 = Opcode::RdmaReadRequest.code() as u64;
    pub const COMPARE_SWAP: u64 = Opcode::CompareSwap.code() as u64;
    pub const FETCH_ADD: u64 = Opcode::FetchAdd.code() as u64;
    pub const SEND_LAST_INV: u64 = Opcode::SendLastWithInvalidate.code() as u64;
    pub const SEND_ONLY_INV: u64 = Opcode::SendOnlyWithInvalidate.code() as u64;
}

/// `verbs::WrOpcode` codes.
pub mod wr {
    use rocenic_proto::abi::verbs::WrOpcode;

    pub const RDMA_WRITE: u64 = WrOpcode::RdmaWrite.code() as u64;
    pub const RDMA_WRITE_WITH_IMM: u64 = WrOpcode::RdmaWriteWithImm.code() as u64;
    pub const SEND: u64 = WrOpcode::Send.code() as u64;
    pub const SEND_WITH_IMM: u64 = WrOpcode::SendWithImm.code() as u64;
    pub const RDMA_READ: u64 = WrOpcode::RdmaRead.code() as u64;
    pub const ATOMIC_CMP_AND_SWP: u64 = WrOpcode::AtomicCmpAndSwp.code() as u64;
    pub const ATOMIC_FETCH_AND_ADD: u64 = WrOpcode::AtomicFetchAndAdd.code() as u64;
    pub const SEND_WITH_INV: u64 = WrOpcode::SendWithInv.code() as u64;
}

fn k<const N: usize>(v: u64) -> Constant<Bits<N>> {
    Constant::new(v.into())
}

/// The segmenter; see the [module docs](self).
#[derive(LogicBlock)]
pub struct Segmenter<const QA: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,

    // --- the job: one validated send WQE ---
    pub s_job_valid: Signal<In, Bit>,
    pub s_job_ready: Signal<Out, Bit>,
    /// Addressing, as the record's fields (wire order, first byte in the top bits).
    pub s_job_dst_mac: Signal<In, Bits<48>>,
    pub s_job_src_mac: Signal<In, Bits<48>>,
    pub s_job_src_ip: Signal<In, Bits<32>>,
    pub s_job_dst_ip: Signal<In, Bits<32>>,
    pub s_job_udp_sport: Signal<In, Bits<16>>,
    pub s_job_dest_qp: Signal<In, Bits<24>>,
    /// The local QP (returned on the pulses).
    pub s_job_qpn: Signal<In, Bits<QA>>,
    /// `verbs::WrOpcode` code.
    pub s_job_opcode: Signal<In, Bits<8>>,
    /// `send_flags::SOLICITED`.
    pub s_job_solicited: Signal<In, Bit>,
    /// `send_flags::INLINE`: the payload is `inline_data`, not in memory.
    pub s_job_inline: Signal<In, Bit>,
    pub s_job_inline_data: Signal<In, Bits<256>>,
    /// Message length (inline length; 8 for atomics).
    pub s_job_len: Signal<In, Bits<32>>,
    /// IOVA of the local payload.
    pub s_job_iova: Signal<In, Bits<64>>,
    pub s_job_remote_va: Signal<In, Bits<64>>,
    pub s_job_rkey: Signal<In, Bits<32>>,
    /// Immediate data, or the rkey to invalidate (SEND_WITH_INV).
    pub s_job_imm: Signal<In, Bits<32>>,
    /// The WQE's atomic operands (`compare_add`, `swap`).
    pub s_job_compare_add: Signal<In, Bits<64>>,
    pub s_job_swap: Signal<In, Bits<64>>,
    pub s_job_first_psn: Signal<In, Bits<24>>,
    /// IB MTU code 1..=5.
    pub s_job_pmtu: Signal<In, Bits<3>>,
    /// Packet to start from (go-back-N).
    pub s_job_start_pkt: Signal<In, Bits<24>>,
    /// The window's edge: the job ends before the packet of this PSN (the requester's
    /// `una + WINDOW`); far away (e.g. `first_psn + 2^23`) for a whole message.
    pub s_job_stop_psn: Signal<In, Bits<24>>,

    // --- DMA read client ---
    pub dma_rd: DmaRdClient,

    // --- to TxPath's request source ---
    pub pkt: RecordClient,
    pub pay: PayloadClient,

    // --- pulses ---
    /// A record was taken: its PSN, QP, and whether it is the message's last packet.
    pub m_sent_valid: Signal<Out, Bit>,
    pub m_sent_psn: Signal<Out, Bits<24>>,
    pub m_sent_qpn: Signal<Out, Bits<QA>>,
    pub m_sent_last: Signal<Out, Bit>,
    /// A payload read failed: the packet's QP and PSN.
    pub m_err_valid: Signal<Out, Bit>,
    pub m_err_qpn: Signal<Out, Bits<QA>>,
    pub m_err_psn: Signal<Out, Bits<24>>,
    /// The last record of a job was taken.
    pub m_done_valid: Signal<Out, Bit>,
    pub m_done_qpn: Signal<Out, Bits<QA>>,

    // --- the job being segmented ---
    active: DFF<Bit>,
    j_dst_mac: DFF<Bits<48>>,
    j_src_mac: DFF<Bits<48>>,
    j_src_ip: DFF<Bits<32>>,
    j_dst_ip: DFF<Bits<32>>,
    j_udp_sport: DFF<Bits<16>>,
    j_dest_qp: DFF<Bits<24>>,
    j_qpn: DFF<Bits<QA>>,
    j_send: DFF<Bit>,
    j_write: DFF<Bit>,
    j_read: DFF<Bit>,
    j_atomic: DFF<Bit>,
    j_cas: DFF<Bit>,
    j_imm_op: DFF<Bit>,
    j_inv_op: DFF<Bit>,
    j_se_op: DFF<Bit>,
    j_inline: DFF<Bit>,
    j_inline_data: DFF<Bits<256>>,
    j_len: DFF<Bits<32>>,
    j_iova: DFF<Bits<64>>,
    j_remote_va: DFF<Bits<64>>,
    j_rkey: DFF<Bits<32>>,
    j_imm: DFF<Bits<32>>,
    j_swap_add: DFF<Bits<64>>,
    j_compare: DFF<Bits<64>>,
    j_pmtu: DFF<Bits<32>>,
    /// Byte offset of the next packet, bytes left from it, its PSN.
    j_off: DFF<Bits<32>>,
    j_rest: DFF<Bits<32>>,
    j_psn: DFF<Bits<24>>,
    j_stop: DFF<Bits<24>>,

    // --- job intake ---
    sp32: Cat<8, 24, 32>,
    sp_w: Signal<Local, Bits<32>>,
    in_pmtu: Signal<Local, Bits<32>>,
    in_shift: Signal<Local, Bits<4>>,
    in_off: Signal<Local, Bits<32>>,
    take_job: Signal<Local, Bit>,

    // --- packet generation ---
    off64: Cat<32, 32, 64>,
    off_w: Signal<Local, Bits<64>>,
    g_first: Signal<Local, Bit>,
    g_last: Signal<Local, Bit>,
    /// The job's last packet: the message's, or the one before the window's edge.
    g_end: Signal<Local, Bit>,
    g_pay: Signal<Local, Bits<16>>,
    g_opcode: Signal<Local, Bits<8>>,
    g_va: Signal<Local, Bits<64>>,
    g_rkey: Signal<Local, Bits<32>>,
    g_dma_len: Signal<Local, Bits<32>>,
    g_imm: Signal<Local, Bits<32>>,
    g_se: Signal<Local, Bit>,
    g_ack: Signal<Local, Bit>,
    g_dma: Signal<Local, Bit>,
    g_inl: Signal<Local, Bit>,
    full: Signal<Local, Bit>,
    req_free: Signal<Local, Bit>,
    push: Signal<Local, Bit>,
    kill_job: Signal<Local, Bit>,
    rec: RecordPack,
    slot_in: SlotPack,
    tag8: Cat<2, SLOT_AW, 8>,

    // --- DMA request register ---
    req_v: DFF<Bit>,
    req_addr: DFF<Bits<64>>,
    req_len: DFF<Bits<16>>,
    req_tag: DFF<Bits<8>>,

    // --- slots ---
    ram: RAM<Bits<SLOT_BITS>, SLOT_AW>,
    wr_ptr: DFF<Bits<PTR_BITS>>,
    /// `wr_ptr` a cycle later: a slot is read from the RAM the cycle after it is written.
    wr_vis: DFF<Bits<PTR_BITS>>,
    rd_ptr: DFF<Bits<PTR_BITS>>,
    used: [DFF<Bit>; SLOTS],
    dead: [DFF<Bit>; SLOTS],
    sqpn: [DFF<Bits<QA>>; SLOTS],
    slot_idx: [Constant<Bits<SLOT_AW>>; SLOTS],

    // --- output side ---
    /// The head's record was taken; its payload is passing.
    phase: DFF<Bit>,
    head: SlotUnpack,
    inl512: Cat<256, 256, 512>,
    inl_w: Signal<Local, Bits<DATA_BITS>>,
    h_valid: Signal<Local, Bit>,
    h_dead: Signal<Local, Bit>,
    h_dma: Signal<Local, Bit>,
    h_inl: Signal<Local, Bit>,
    h_last: Signal<Local, Bit>,
    h_qpn: Signal<Local, Bits<QA>>,
    /// The slot's qpn field is 16 bits wide (any `QA`); only `QA` of them are read.
    unused_slot_qpn: Signal<Local, Bits<16>>,
    slot_qpn: ZeroExt<QA, 16>,
    /// The record's `src_qp` (the job's QP, for the per-QP TX counters).
    rec_src_qp: ZeroExt<QA, 24>,
    h_psn: Signal<Local, Bits<24>>,
    pkt_v: Signal<Local, Bit>,
    pay_v: Signal<Local, Bit>,
    pay_last: Signal<Local, Bit>,
    rec_take: Signal<Local, Bit>,
    pay_take: Signal<Local, Bit>,
    err_now: Signal<Local, Bit>,
    pop: Signal<Local, Bit>,
    rd_next: Signal<Local, Bits<PTR_BITS>>,
    unused_tag: Signal<Local, Bits<8>>,

    // --- constants ---
    zero1: Constant<Bits<1>>,
    one1: Constant<Bits<1>>,
    zero2: Constant<Bits<2>>,
    ptr0: Constant<Bits<PTR_BITS>>,
    zero8: Constant<Bits<8>>,
    zero24: Constant<Bits<24>>,
    zero32: Constant<Bits<32>>,
    zero64: Constant<Bits<64>>,
    zero256: Constant<Bits<256>>,
    zero16: Constant<Bits<16>>,
    ptr1: Constant<Bits<PTR_BITS>>,
    one24: Constant<Bits<24>>,
    ptr_slots: Constant<Bits<PTR_BITS>>,
    low4_ones: Constant<Bits<4>>,
    pm_code: [Constant<Bits<3>>; 4],
    pm_bytes: [Constant<Bits<32>>; 5],
    pm_shift: [Constant<Bits<4>>; 5],
    wr_write: Constant<Bits<8>>,
    wr_write_imm: Constant<Bits<8>>,
    wr_send: Constant<Bits<8>>,
    wr_send_imm: Constant<Bits<8>>,
    wr_read: Constant<Bits<8>>,
    wr_cas: Constant<Bits<8>>,
    wr_faa: Constant<Bits<8>>,
    wr_send_inv: Constant<Bits<8>>,
    o_send_first: Constant<Bits<8>>,
    o_send_middle: Constant<Bits<8>>,
    o_send_last: Constant<Bits<8>>,
    o_send_last_imm: Constant<Bits<8>>,
    o_send_last_inv: Constant<Bits<8>>,
    o_send_only: Constant<Bits<8>>,
    o_send_only_imm: Constant<Bits<8>>,
    o_send_only_inv: Constant<Bits<8>>,
    o_write_first: Constant<Bits<8>>,
    o_write_middle: Constant<Bits<8>>,
    o_write_last: Constant<Bits<8>>,
    o_write_last_imm: Constant<Bits<8>>,
    o_write_only: Constant<Bits<8>>,
    o_write_only_imm: Constant<Bits<8>>,
    o_read: Constant<Bits<8>>,
    o_cas: Constant<Bits<8>>,
    o_faa: Constant<Bits<8>>,
}

impl<const QA: usize> Default for Segmenter<QA> {
    fn default() -> Self {
        Segmenter::new()
    }
}

impl<const QA: usize> Segmenter<QA> {
    pub fn new() -> Segmenter<QA> {
        assert!(QA <= 16, "Segmenter: the slot's qpn field is 16 bits");
        Segmenter {
            clock: Default::default(),
            reset: Default::default(),
            s_job_valid: Default::default(),
            s_job_ready: Default::default(),
            s_job_dst_mac: Default::default(),
            s_job_src_mac: Default::default(),
            s_job_src_ip: Default::default(),
            s_job_dst_ip: Default::default(),
            s_job_udp_sport: Default::default(),
            s_job_dest_qp: Default::default(),
            s_job_qpn: Default::default(),
            s_job_opcode: Default::default(),
            s_job_solicited: Default::default(),
            s_job_inline: Default::default(),
            s_job_inline_data: Default::default(),
            s_job_len: Default::default(),
            s_job_iova: Default::default(),
            s_job_remote_va: Default::default(),
            s_job_rkey: Default::default(),
            s_job_imm: Default::default(),
            s_job_compare_add: Default::default(),
            s_job_swap: Default::default(),
            s_job_first_psn: Default::default(),
            s_job_pmtu: Default::default(),
            s_job_start_pkt: Default::default(),
            s_job_stop_psn: Default::default(),
            dma_rd: Default::default(),
            pkt: Default::default(),
            pay: Default::default(),
            m_sent_valid: Default::default(),
            m_sent_psn: Default::default(),
            m_sent_qpn: Default::default(),
            m_sent_last: Default::default(),
            m_err_valid: Default::default(),
            m_err_qpn: Default::default(),
            m_err_psn: Default::default(),
            m_done_valid: Default::default(),
            m_done_qpn: Default::default(),
            active: Default::default(),
            j_dst_mac: Default::default(),
            j_src_mac: Default::default(),
            j_src_ip: Default::default(),
            j_dst_ip: Default::default(),
            j_udp_sport: Default::default(),
            j_dest_qp: Default::default(),
            j_qpn: Default::default(),
            j_send: Default::default(),
            j_write: Default::default(),
            j_read: Default::default(),
            j_atomic: Default::default(),
            j_cas: Default::default(),
            j_imm_op: Default::default(),
            j_inv_op: Default::default(),
            j_se_op: Default::default(),
            j_inline: Default::default(),
            j_inline_data: Default::default(),
            j_len: Default::default(),
            j_iova: Default::default(),
            j_remote_va: Default::default(),
            j_rkey: Default::default(),
            j_imm: Default::default(),
            j_swap_add: Default::default(),
            j_compare: Default::default(),
            j_pmtu: Default::default(),
            j_off: Default::default(),
            j_rest: Default::default(),
            j_psn: Default::default(),
            j_stop: Default::default(),
            sp32: Default::default(),
            sp_w: Default::default(),
            in_pmtu: Default::default(),
            in_shift: Default::default(),
            in_off: Default::default(),
            take_job: Default::default(),
            off64: Default::default(),
            off_w: Default::default(),
            g_first: Default::default(),
            g_last: Default::default(),
            g_end: Default::default(),
            g_pay: Default::default(),
            g_opcode: Default::default(),
            g_va: Default::default(),
            g_rkey: Default::default(),
            g_dma_len: Default::default(),
            g_imm: Default::default(),
            g_se: Default::default(),
            g_ack: Default::default(),
            g_dma: Default::default(),
            g_inl: Default::default(),
            full: Default::default(),
            req_free: Default::default(),
            push: Default::default(),
            kill_job: Default::default(),
            rec: Default::default(),
            slot_in: Default::default(),
            tag8: Default::default(),
            req_v: Default::default(),
            req_addr: Default::default(),
            req_len: Default::default(),
            req_tag: Default::default(),
            ram: Default::default(),
            wr_ptr: Default::default(),
            wr_vis: Default::default(),
            rd_ptr: Default::default(),
            used: std::array::from_fn(|_| Default::default()),
            dead: std::array::from_fn(|_| Default::default()),
            sqpn: std::array::from_fn(|_| Default::default()),
            slot_idx: std::array::from_fn(|i| k(i as u64)),
            phase: Default::default(),
            head: Default::default(),
            inl512: Default::default(),
            inl_w: Default::default(),
            h_valid: Default::default(),
            h_dead: Default::default(),
            h_dma: Default::default(),
            h_inl: Default::default(),
            h_last: Default::default(),
            h_qpn: Default::default(),
            unused_slot_qpn: Default::default(),
            slot_qpn: Default::default(),
            rec_src_qp: Default::default(),
            h_psn: Default::default(),
            pkt_v: Default::default(),
            pay_v: Default::default(),
            pay_last: Default::default(),
            rec_take: Default::default(),
            pay_take: Default::default(),
            err_now: Default::default(),
            pop: Default::default(),
            rd_next: Default::default(),
            unused_tag: Default::default(),
            zero1: k(0),
            one1: k(1),
            zero2: k(0),
            ptr0: k(0),
            zero8: k(0),
            zero24: k(0),
            zero32: k(0),
            zero64: k(0),
            zero256: k(0),
            zero16: k(0),
            ptr1: k(1),
            one24: k(1),
            ptr_slots: k(SLOTS as u64),
            low4_ones: k(0xF),
            pm_code: std::array::from_fn(|i| k(i as u64 + 1)),
            pm_bytes: std::array::from_fn(|i| k(256 << i)),
            pm_shift: std::array::from_fn(|i| k(8 + i as u64)),
            wr_write: k(wr::RDMA_WRITE),
            wr_write_imm: k(wr::RDMA_WRITE_WITH_IMM),
            wr_send: k(wr::SEND),
            wr_send_imm: k(wr::SEND_WITH_IMM),
            wr_read: k(wr::RDMA_READ),
            wr_cas: k(wr::ATOMIC_CMP_AND_SWP),
            wr_faa: k(wr::ATOMIC_FETCH_AND_ADD),
            wr_send_inv: k(wr::SEND_WITH_INV),
            o_send_first: k(op::SEND_FIRST),
            o_send_middle: k(op::SEND_MIDDLE),
            o_send_last: k(op::SEND_LAST),
            o_send_last_imm: k(op::SEND_LAST_IMM),
            o_send_last_inv: k(op::SEND_LAST_INV),
            o_send_only: k(op::SEND_ONLY),
            o_send_only_imm: k(op::SEND_ONLY_IMM),
            o_send_only_inv: k(op::SEND_ONLY_INV),
            o_write_first: k(op::WRITE_FIRST),
            o_write_middle: k(op::WRITE_MIDDLE),
            o_write_last: k(op::WRITE_LAST),
            o_write_last_imm: k(op::WRITE_LAST_IMM),
            o_write_only: k(op::WRITE_ONLY),
            o_write_only_imm: k(op::WRITE_ONLY_IMM),
            o_read: k(op::READ_REQUEST),
            o_cas: k(op::COMPARE_SWAP),
            o_faa: k(op::FETCH_ADD),
        }
    }
}

impl<const QA: usize> Logic for Segmenter<QA> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            active,
            j_dst_mac,
            j_src_mac,
            j_src_ip,
            j_dst_ip,
            j_udp_sport,
            j_dest_qp,
            j_qpn,
            j_send,
            j_write,
            j_read,
            j_atomic,
            j_cas,
            j_imm_op,
            j_inv_op,
            j_se_op,
            j_inline,
            j_inline_data,
            j_len,
            j_iova,
            j_remote_va,
            j_rkey,
            j_imm,
            j_swap_add,
            j_compare,
            j_pmtu,
            j_off,
            j_rest,
            j_psn,
            j_stop,
            req_v,
            req_addr,
            req_len,
            req_tag,
            wr_ptr,
            wr_vis,
            rd_ptr,
            phase
        );
        for i in 0..SLOTS {
            self.used[i].clock.next = self.clock.val();
            self.dead[i].clock.next = self.clock.val();
            self.sqpn[i].clock.next = self.clock.val();
            self.used[i].d.next = self.used[i].q.val();
            self.dead[i].d.next = self.dead[i].q.val();
            self.sqpn[i].d.next = self.sqpn[i].q.val();
        }
        self.ram.read_clock.next = self.clock.val();
        self.ram.write_clock.next = self.clock.val();

        // ================= output side: the head slot =================
        self.head.x.next = self.ram.read_data.val();
        self.h_dma.next = self.head.dma.val() == self.one1.val();
        self.h_inl.next = self.head.inl.val() == self.one1.val();
        self.h_last.next = self.head.last.val() == self.one1.val();
        self.h_qpn.next = self.head.qpn.val().get_bits::<QA>(0);
        self.unused_slot_qpn.next = self.head.qpn.val();
        self.h_psn.next = self.head.psn.val();
        self.inl512.lo.next = self.head.inline_data.val();
        self.inl512.hi.next = self.zero256.val();
        self.inl_w.next = self.inl512.y.val();
        self.pkt.data.next = self.head.rec.val();
        self.unused_tag.next = self.dma_rd.resp_tag.val();

        self.h_valid.next = self.wr_vis.q.val() != self.rd_ptr.q.val();
        self.h_dead.next = false;
        for i in 0..SLOTS {
            if self.rd_ptr.q.val().get_bits::<SLOT_AW>(0) == self.slot_idx[i].val() {
                self.h_dead.next = self.dead[i].q.val();
            }
        }

        self.pkt_v.next = false;
        self.pay_v.next = false;
        self.pay_last.next = self.dma_rd.resp_last.val();
        self.pay.tdata.next = self.dma_rd.resp_data.val();
        self.dma_rd.resp_ready.next = false;
        self.err_now.next = false;
        self.pop.next = false;
        if self.h_valid.val() & !self.phase.q.val() {
            if self.h_dead.val() {
                // A dropped packet: drain its response, if any.
                if self.h_dma.val() {
                    self.dma_rd.resp_ready.next = true;
                    self.pop.next = self.dma_rd.resp_valid.val() & self.dma_rd.resp_last.val();
                } else {
                    self.pop.next = true;
                }
            } else if self.h_dma.val() {
                if self.dma_rd.resp_valid.val() & self.dma_rd.resp_err.val() {
                    self.dma_rd.resp_ready.next = true;
                    self.err_now.next = true;
                    self.pop.next = true;
                } else {
                    self.pkt_v.next = self.dma_rd.resp_valid.val();
                }
            } else {
                self.pkt_v.next = true;
            }
        }
        if self.h_valid.val() & self.phase.q.val() {
            if self.h_inl.val() {
                self.pay_v.next = true;
                self.pay_last.next = true;
                self.pay.tdata.next = self.inl_w.val();
            } else {
                self.pay_v.next = self.dma_rd.resp_valid.val();
                self.dma_rd.resp_ready.next = self.pay.tready.val();
            }
        }
        self.pkt.valid.next = self.pkt_v.val();
        self.pay.tvalid.next = self.pay_v.val();
        self.pay.tlast.next = self.pay_last.val();
        self.rec_take.next = self.pkt_v.val() & self.pkt.ready.val();
        self.pay_take.next = self.pay_v.val() & self.pay.tready.val();
        if self.rec_take.val() {
            if self.h_dma.val() | self.h_inl.val() {
                self.phase.d.next = true;
            } else {
                self.pop.next = true;
            }
        }
        if self.pay_take.val() & self.pay_last.val() {
            self.pop.next = true;
            self.phase.d.next = false;
        }

        self.m_sent_valid.next = self.rec_take.val();
        self.m_sent_psn.next = self.h_psn.val();
        self.m_sent_qpn.next = self.h_qpn.val();
        self.m_sent_last.next = self.h_last.val();
        self.m_done_valid.next = self.rec_take.val() & self.h_last.val();
        self.m_done_qpn.next = self.h_qpn.val();
        self.m_err_valid.next = self.err_now.val();
        self.m_err_qpn.next = self.h_qpn.val();
        self.m_err_psn.next = self.h_psn.val();

        // A failed read: every packet of that QP still in the slots is dropped.
        for i in 0..SLOTS {
            if self.err_now.val()
                & self.used[i].q.val()
                & (self.sqpn[i].q.val() == self.h_qpn.val())
            {
                self.dead[i].d.next = true;
            }
        }

        self.rd_next.next = self.rd_ptr.q.val();
        if self.pop.val() {
            self.rd_next.next = self.rd_ptr.q.val() + self.ptr1.val();
            for i in 0..SLOTS {
                if self.rd_ptr.q.val().get_bits::<SLOT_AW>(0) == self.slot_idx[i].val() {
                    self.used[i].d.next = false;
                    self.dead[i].d.next = false;
                }
            }
        }
        self.rd_ptr.d.next = self.rd_next.val();
        self.ram.read_address.next = self.rd_next.val().get_bits::<SLOT_AW>(0);
        self.wr_vis.d.next = self.wr_ptr.q.val();

        // ================= job intake =================
        self.s_job_ready.next = !self.active.q.val() & !self.err_now.val();
        self.take_job.next = self.s_job_valid.val() & !self.active.q.val() & !self.err_now.val();
        self.sp32.lo.next = self.s_job_start_pkt.val();
        self.sp32.hi.next = self.zero8.val();
        self.sp_w.next = self.sp32.y.val();
        // Unknown codes are not defined; they take the 4096-byte branch.
        self.in_pmtu.next = self.pm_bytes[4].val();
        self.in_shift.next = self.pm_shift[4].val();
        for i in 0..4 {
            if self.s_job_pmtu.val() == self.pm_code[i].val() {
                self.in_pmtu.next = self.pm_bytes[i].val();
                self.in_shift.next = self.pm_shift[i].val();
            }
        }
        self.in_off.next = self.sp_w.val() << self.in_shift.val();
        if self.take_job.val() {
            self.active.d.next = true;
            self.j_dst_mac.d.next = self.s_job_dst_mac.val();
            self.j_src_mac.d.next = self.s_job_src_mac.val();
            self.j_src_ip.d.next = self.s_job_src_ip.val();
            self.j_dst_ip.d.next = self.s_job_dst_ip.val();
            self.j_udp_sport.d.next = self.s_job_udp_sport.val();
            self.j_dest_qp.d.next = self.s_job_dest_qp.val();
            self.j_qpn.d.next = self.s_job_qpn.val();
            self.j_send.d.next = (self.s_job_opcode.val() == self.wr_send.val())
                | (self.s_job_opcode.val() == self.wr_send_imm.val())
                | (self.s_job_opcode.val() == self.wr_send_inv.val());
            self.j_write.d.next = (self.s_job_opcode.val() == self.wr_write.val())
                | (self.s_job_opcode.val() == self.wr_write_imm.val());
            self.j_read.d.next = self.s_job_opcode.val() == self.wr_read.val();
            self.j_atomic.d.next = (self.s_job_opcode.val() == self.wr_cas.val())
                | (self.s_job_opcode.val() == self.wr_faa.val());
            self.j_cas.d.next = self.s_job_opcode.val() == self.wr_cas.val();
            self.j_imm_op.d.next = (self.s_job_opcode.val() == self.wr_send_imm.val())
                | (self.s_job_opcode.val() == self.wr_write_imm.val());
            self.j_inv_op.d.next = self.s_job_opcode.val() == self.wr_send_inv.val();
            // SE goes on the last packet of a SEND (any) or a WRITE_WITH_IMM.
            self.j_se_op.d.next = self.s_job_solicited.val()
                & ((self.s_job_opcode.val() == self.wr_send.val())
                    | (self.s_job_opcode.val() == self.wr_send_imm.val())
                    | (self.s_job_opcode.val() == self.wr_send_inv.val())
                    | (self.s_job_opcode.val() == self.wr_write_imm.val()));
            self.j_inline.d.next = self.s_job_inline.val();
            self.j_inline_data.d.next = self.s_job_inline_data.val();
            self.j_len.d.next = self.s_job_len.val();
            self.j_iova.d.next = self.s_job_iova.val();
            self.j_remote_va.d.next = self.s_job_remote_va.val();
            self.j_rkey.d.next = self.s_job_rkey.val();
            self.j_imm.d.next = self.s_job_imm.val();
            // AtomicETH: CompareSwap (swap, compare); FetchAdd (add, 0).
            if self.s_job_opcode.val() == self.wr_cas.val() {
                self.j_swap_add.d.next = self.s_job_swap.val();
                self.j_compare.d.next = self.s_job_compare_add.val();
            } else if self.s_job_opcode.val() == self.wr_faa.val() {
                self.j_swap_add.d.next = self.s_job_compare_add.val();
                self.j_compare.d.next = self.zero64.val();
            } else {
                self.j_swap_add.d.next = self.zero64.val();
                self.j_compare.d.next = self.zero64.val();
            }
            self.j_pmtu.d.next = self.in_pmtu.val();
            self.j_off.d.next = self.in_off.val();
            self.j_rest.d.next = self.s_job_len.val() - self.in_off.val();
            self.j_psn.d.next = self.s_job_first_psn.val() + self.s_job_start_pkt.val();
            self.j_stop.d.next = self.s_job_stop_psn.val();
        }

        // ================= packet generation =================
        self.off64.lo.next = self.j_off.q.val();
        self.off64.hi.next = self.zero32.val();
        self.off_w.next = self.off64.y.val();
        self.g_first.next = self.j_off.q.val() == self.zero32.val();
        self.g_last.next = !(self.j_send.q.val() | self.j_write.q.val())
            | (self.j_rest.q.val() <= self.j_pmtu.q.val());
        self.g_end.next =
            self.g_last.val() | ((self.j_psn.q.val() + self.one24.val()) == self.j_stop.q.val());
        self.g_pay.next = self.zero16.val();
        if self.j_send.q.val() | self.j_write.q.val() {
            if self.j_rest.q.val() <= self.j_pmtu.q.val() {
                self.g_pay.next = self.j_rest.q.val().get_bits::<16>(0);
            } else {
                self.g_pay.next = self.j_pmtu.q.val().get_bits::<16>(0);
            }
        }
        self.g_dma.next = !self.j_inline.q.val() & (self.g_pay.val() != self.zero16.val());
        self.g_inl.next = self.j_inline.q.val() & (self.g_pay.val() != self.zero16.val());

        self.g_opcode.next = self.zero8.val();
        if self.j_send.q.val() {
            if self.g_first.val() & self.g_last.val() {
                if self.j_imm_op.q.val() {
                    self.g_opcode.next = self.o_send_only_imm.val();
                } else if self.j_inv_op.q.val() {
                    self.g_opcode.next = self.o_send_only_inv.val();
                } else {
                    self.g_opcode.next = self.o_send_only.val();
                }
            } else if self.g_first.val() {
                self.g_opcode.next = self.o_send_first.val();
            } else if !self.g_last.val() {
                self.g_opcode.next = self.o_send_middle.val();
            } else if self.j_imm_op.q.val() {
                self.g_opcode.next = self.o_send_last_imm.val();
            } else if self.j_inv_op.q.val() {
                self.g_opcode.next = self.o_send_last_inv.val();
            } else {
                self.g_opcode.next = self.o_send_last.val();
            }
        }
        if self.j_write.q.val() {
            if self.g_first.val() & self.g_last.val() {
                if self.j_imm_op.q.val() {
                    self.g_opcode.next = self.o_write_only_imm.val();
                } else {
                    self.g_opcode.next = self.o_write_only.val();
                }
            } else if self.g_first.val() {
                self.g_opcode.next = self.o_write_first.val();
            } else if !self.g_last.val() {
                self.g_opcode.next = self.o_write_middle.val();
            } else if self.j_imm_op.q.val() {
                self.g_opcode.next = self.o_write_last_imm.val();
            } else {
                self.g_opcode.next = self.o_write_last.val();
            }
        }
        if self.j_read.q.val() {
            self.g_opcode.next = self.o_read.val();
        }
        if self.j_atomic.q.val() {
            if self.j_cas.q.val() {
                self.g_opcode.next = self.o_cas.val();
            } else {
                self.g_opcode.next = self.o_faa.val();
            }
        }

        // RETH on a WRITE's first packet and on a READ request; AtomicETH's va and rkey.
        self.g_va.next = self.zero64.val();
        self.g_rkey.next = self.zero32.val();
        self.g_dma_len.next = self.zero32.val();
        if (self.j_write.q.val() & self.g_first.val()) | self.j_atomic.q.val() {
            self.g_va.next = self.j_remote_va.q.val();
            self.g_rkey.next = self.j_rkey.q.val();
        }
        if self.j_write.q.val() & self.g_first.val() {
            self.g_dma_len.next = self.j_len.q.val();
        }
        if self.j_read.q.val() {
            self.g_va.next = self.j_remote_va.q.val() + self.off_w.val();
            self.g_rkey.next = self.j_rkey.q.val();
            self.g_dma_len.next = self.j_rest.q.val();
        }
        self.g_imm.next = self.zero32.val();
        if self.g_last.val() & (self.j_imm_op.q.val() | self.j_inv_op.q.val()) {
            self.g_imm.next = self.j_imm.q.val();
        }
        self.g_se.next = self.g_last.val() & self.j_se_op.q.val();
        self.g_ack.next =
            self.g_last.val() | (self.j_psn.q.val().get_bits::<4>(0) == self.low4_ones.val());

        // ---- push the packet into a slot (and its read into the request register) ----
        self.full.next = (self.wr_ptr.q.val() - self.rd_ptr.q.val()) == self.ptr_slots.val();
        self.req_free.next = !self.req_v.q.val() | self.dma_rd.req_ready.val();
        self.kill_job.next = self.err_now.val() & (self.j_qpn.q.val() == self.h_qpn.val());
        self.push.next = self.active.q.val()
            & !self.kill_job.val()
            & !self.full.val()
            & (!self.g_dma.val() | self.req_free.val());

        self.rec.dst_mac.next = self.j_dst_mac.q.val();
        self.rec.src_mac.next = self.j_src_mac.q.val();
        self.rec.src_ip.next = self.j_src_ip.q.val();
        self.rec.dst_ip.next = self.j_dst_ip.q.val();
        self.rec.udp_sport.next = self.j_udp_sport.q.val();
        self.rec.opcode.next = self.g_opcode.val();
        self.rec.se.next = self.zero1.val();
        if self.g_se.val() {
            self.rec.se.next = self.one1.val();
        }
        self.rec.ack_req.next = self.zero1.val();
        if self.g_ack.val() {
            self.rec.ack_req.next = self.one1.val();
        }
        self.rec.dest_qp.next = self.j_dest_qp.q.val();
        self.rec.psn.next = self.j_psn.q.val();
        self.rec.va.next = self.g_va.val();
        self.rec.rkey.next = self.g_rkey.val();
        self.rec.dma_len.next = self.g_dma_len.val();
        self.rec.swap_add.next = self.j_swap_add.q.val();
        self.rec.compare.next = self.j_compare.q.val();
        self.rec.orig.next = self.zero64.val();
        self.rec.syndrome.next = self.zero8.val();
        self.rec.msn.next = self.zero24.val();
        self.rec.imm.next = self.g_imm.val();
        self.rec.payload_len.next = self.g_pay.val();
        self.rec_src_qp.x.next = self.j_qpn.q.val();
        self.rec.src_qp.next = self.rec_src_qp.y.val();
        self.slot_in.rec.next = self.rec.y.val();
        self.slot_in.inline_data.next = self.j_inline_data.q.val();
        self.slot_in.dma.next = self.zero1.val();
        if self.g_dma.val() {
            self.slot_in.dma.next = self.one1.val();
        }
        self.slot_in.inl.next = self.zero1.val();
        if self.g_inl.val() {
            self.slot_in.inl.next = self.one1.val();
        }
        self.slot_in.last.next = self.zero1.val();
        if self.g_last.val() {
            self.slot_in.last.next = self.one1.val();
        }
        self.slot_qpn.x.next = self.j_qpn.q.val();
        self.slot_in.qpn.next = self.slot_qpn.y.val();
        self.slot_in.psn.next = self.j_psn.q.val();
        self.ram.write_data.next = self.slot_in.y.val();
        self.ram.write_address.next = self.wr_ptr.q.val().get_bits::<SLOT_AW>(0);
        self.ram.write_enable.next = self.push.val();

        self.tag8.lo.next = self.wr_ptr.q.val().get_bits::<SLOT_AW>(0);
        self.tag8.hi.next = self.zero2.val();
        if self.req_v.q.val() & self.dma_rd.req_ready.val() {
            self.req_v.d.next = false;
        }
        if self.push.val() {
            self.wr_ptr.d.next = self.wr_ptr.q.val() + self.ptr1.val();
            for i in 0..SLOTS {
                if self.wr_ptr.q.val().get_bits::<SLOT_AW>(0) == self.slot_idx[i].val() {
                    self.used[i].d.next = true;
                    self.dead[i].d.next = false;
                    self.sqpn[i].d.next = self.j_qpn.q.val();
                }
            }
            if self.g_dma.val() {
                self.req_v.d.next = true;
                self.req_addr.d.next = self.j_iova.q.val() + self.off_w.val();
                self.req_len.d.next = self.g_pay.val();
                self.req_tag.d.next = self.tag8.y.val();
            }
            if self.g_end.val() {
                self.active.d.next = false;
            } else {
                self.j_off.d.next = self.j_off.q.val() + self.j_pmtu.q.val();
                self.j_rest.d.next = self.j_rest.q.val() - self.j_pmtu.q.val();
                self.j_psn.d.next = self.j_psn.q.val() + self.one24.val();
            }
        }
        if self.kill_job.val() {
            self.active.d.next = false;
        }
        self.dma_rd.req_valid.next = self.req_v.q.val();
        self.dma_rd.req_addr.next = self.req_addr.q.val();
        self.dma_rd.req_len.next = self.req_len.q.val();
        self.dma_rd.req_tag.next = self.req_tag.q.val();

        if self.reset.val() {
            self.active.d.next = false;
            self.req_v.d.next = false;
            self.wr_ptr.d.next = self.ptr0.val();
            self.wr_vis.d.next = self.ptr0.val();
            self.rd_ptr.d.next = self.ptr0.val();
            self.phase.d.next = false;
            for i in 0..SLOTS {
                self.used[i].d.next = false;
                self.dead[i].d.next = false;
            }
        }
    }
}
