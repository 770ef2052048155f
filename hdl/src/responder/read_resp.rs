//! `ReadResp`: the READ responder's data path. A READ job (a request already checked and
//! translated) goes in; one DMA read per response packet goes out, and the response
//! records with their payload streams follow on the responder's TX source, in order, as
//! the model's `exec_read` sends them (its `read_response_packets`).
//!
//! ```text
//!  s_job --> issue (one packet a cycle) --+--> dma_rd.req (tag = request count)
//!                                         +--> descriptor FIFO (64 packets, RAM)
//!                                                   |
//!  dma_rd.resp (in request order) --------> head: record on pkt once its data starts,
//!                                                 beats passed through on pay
//! ```
//!
//! # Interface
//!
//! - `s_job_valid`/`s_job_ready` with `job_hdr` (a `JobHdrServer`) and `job_args` (a
//!   `ReadArgsServer`): the TX addressing of the responses (`dst_mac`, `src_mac`, `src_ip`,
//!   `dst_ip`, `udp_sport`, as in [`RECORD_FIELDS`](crate::tx::tx_arbiter::RECORD_FIELDS)),
//!   `dest_qp` (the remote QPN), `qpn` (our QP, `Q` bits: the records' `src_qp`, and reported on
//!   errors), `psn` (the request's PSN), `msn` (the MSN for the AETHs), `iova`
//!   (64, translated and checked by `MrCheck`), `len` (32, `0..=2^31`), `pmtu` (3, the IB
//!   MTU code 1..=5 = 256..4096 bytes).
//! - `dma_rd` ([`DmaRdClient`]): a DMA read client (docs/rtl-architecture.md:
//!   responses in request order, packed from lane 0, an IOMMU refusal is one beat with
//!   `err` and `last`). One read of `min(pmtu, rest)` bytes per packet with payload. The
//!   tag is a running request count (not needed: responses come in order).
//! - `pkt` (a `RecordClient`, [`RECORD_BITS`](crate::bus::record::RECORD_BITS)): one packed
//!   record per response packet, the fields of [`record_layout`](crate::bus::record::record_layout):
//!   RDMA READ RESPONSE ONLY / FIRST / MIDDLE / LAST, PSN `psn + k` (24-bit wrap), AETH
//!   (syndrome ACK with credit 0x1f, `msn`; sent on all but MIDDLE), `payload_len`
//!   `min(pmtu, rest)`, `src_qp` the job's `qpn`; a zero-length READ is one ONLY without
//!   payload. Unused fields 0.
//! - `pay` (a `PayloadClient`: `tdata`, `tlast`, valid/ready): the payload of each record with
//!   `payload_len > 0`: the DMA response's beats passed through (`tlast` = the response's
//!   `last`), as `TxPath`'s `rsp_pay` takes them.
//! - `m_err_valid` (one-cycle pulse), `m_err_qpn`, `m_err_psn`: a DMA read of this job
//!   failed; `m_err_psn` is the job's (the READ request's) PSN, which the responder NAKs
//!   as the model does. The failed packet's record is not sent, nor any
//!   later packet of the job (their reads still in flight are drained, the issue of the
//!   rest stops); the next jobs go on. The responder then NAKs (Remote Operational Error)
//!   and errors the QP. Divergence from the model, on IOMMU faults only: the model sees
//!   the refusal when it issues the reads and queues the NAK behind the responses of the
//!   packets before the failed one; here those packets' records may already have left
//!   before the error is known (the same packets; the timing differs).
//!
//! # Timing
//!
//! - Jobs in order; a job is taken in the cycle its previous job issues its last packet,
//!   so the next job's reads start while the previous job's data is still in flight.
//! - Issue: one packet per cycle (when the DMA port takes it); 64 packets between issue
//!   and the end of their payload (the FIFO), so 64 x PMTU bytes of reads in flight:
//!   16 KiB at PMTU 256, enough to hide a 250-cycle DMA latency at 64 bytes per cycle.
//! - A record leaves with the first beat of its data (zero-length: 3 cycles after the job
//!   is taken); payload beats pass through without a register, and the next packet's
//!   record and beats follow the last beat of the previous one without a bubble.

use crate::bus::dma_rd::DmaRdClient;
use crate::bus::job::{JobHdrServer, ReadArgsServer};
use crate::bus::record::{PayloadClient, RecordClient, RecordPack};
use crate::common::cat::Cat;
use crate::common::zext::ZeroExt;
use crate::prelude::*;
use rocenic_proto::wire::{Opcode, Syndrome};

crate::packed_layout!(
    /// One issued response packet waiting for its data (a FIFO entry).
    desc_layout, DescPack; dst_mac: 48, src_mac: 48, src_ip: 32, dst_ip: 32,
    udp_sport: 16, dest_qp: 24, msn: 24, opcode: 8, psn: 24, plen: 16, job: 7, last: 1
);

crate::unpack_fields!(
    /// Every field of a FIFO entry.
    DescFields, desc_layout; dst_mac: 48, src_mac: 48, src_ip: 32, dst_ip: 32,
    udp_sport: 16, dest_qp: 24, msn: 24, opcode: 8, psn: 24, plen: 16, job: 7, last: 1
);

const _: () = assert!(
    (1usize << FIFO_LOG) < (1 << 7),
    "job numbers (7 bits) must outnumber the FIFO's entries"
);

/// log2 of the packets between issue and the end of their payload.
pub const FIFO_LOG: usize = 6;
/// AETH syndrome of an ACK with "invalid credit" (the model's `NO_CREDIT`).
pub const SYNDROME_ACK: u64 = Syndrome::ACK.code() as u64;

/// Opcodes (`rocenic_proto::wire::Opcode`).
const OP_FIRST: u64 = Opcode::RdmaReadResponseFirst.code() as u64;
const OP_MIDDLE: u64 = Opcode::RdmaReadResponseMiddle.code() as u64;
const OP_LAST: u64 = Opcode::RdmaReadResponseLast.code() as u64;
const OP_ONLY: u64 = Opcode::RdmaReadResponseOnly.code() as u64;

/// The READ responder data path; see the [module docs](self). `Q`: bits of a QPN.
#[derive(LogicBlock)]
pub struct ReadResp<const Q: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,

    // --- the job ---
    pub s_job_valid: Signal<In, Bit>,
    pub s_job_ready: Signal<Out, Bit>,
    pub job_hdr: JobHdrServer<Q>,
    pub job_args: ReadArgsServer,

    // --- DMA read client ---
    pub dma_rd: DmaRdClient,

    // --- response records and payload ---
    pub pkt: RecordClient,
    pub pay: PayloadClient,

    // --- DMA failure ---
    pub m_err_valid: Signal<Out, Bit>,
    pub m_err_qpn: Signal<Out, Bits<Q>>,
    pub m_err_psn: Signal<Out, Bits<24>>,

    // ---- issue: the job being cut into packets ----
    active: DFF<Bit>,
    j_dst_mac: DFF<Bits<48>>,
    j_src_mac: DFF<Bits<48>>,
    j_src_ip: DFF<Bits<32>>,
    j_dst_ip: DFF<Bits<32>>,
    j_udp_sport: DFF<Bits<16>>,
    j_dest_qp: DFF<Bits<24>>,
    j_qpn: DFF<Bits<Q>>,
    j_msn: DFF<Bits<24>>,
    /// PSN, address and bytes left of the next packet.
    j_psn: DFF<Bits<24>>,
    /// The request's PSN (what an error report names).
    j_req_psn: DFF<Bits<24>>,
    j_iova: DFF<Bits<64>>,
    j_rest: DFF<Bits<64>>,
    /// The PMTU in bytes.
    j_pmtu: DFF<Bits<64>>,
    j_first: DFF<Bit>,
    /// The job's number (7 bits: more than the jobs the FIFO can hold).
    j_id: DFF<Bits<7>>,
    /// The DMA request was offered and not taken: keep offering it (AXI).
    offering: DFF<Bit>,
    tag: DFF<Bits<8>>,
    len64: Cat<32, 32, 64>,

    // ---- FIFO of issued packets ----
    desc_ram: RAM<Bits<{ desc_layout::BITS }>, FIFO_LOG>,
    qpn_ram: RAM<Bits<Q>, FIFO_LOG>,
    rpsn_ram: RAM<Bits<24>, FIFO_LOG>,
    pk: DescPack,
    d: DescFields,
    wr_ptr: DFF<Bits<FIFO_LOG>>,
    rd_ptr: DFF<Bits<FIFO_LOG>>,
    count: DFF<Bits<7>>,
    /// The RAM's read port shows the head entry.
    head_ok: DFF<Bit>,

    // ---- the head packet ----
    rec_sent: DFF<Bit>,
    pay_done: DFF<Bit>,
    data_seen: DFF<Bit>,
    /// Packets of job `kill_job` are dropped (a read of it failed).
    kill_valid: DFF<Bit>,
    kill_job: DFF<Bits<7>>,
    err_valid: DFF<Bit>,
    err_qpn: DFF<Bits<Q>>,
    err_psn: DFF<Bits<24>>,
    rec: RecordPack,
    /// The head's QP as the record's `src_qp`.
    src_qp: ZeroExt<Q, 24>,

    zero1: Constant<Bits<1>>,
    one1: Constant<Bits<1>>,
    zero16: Constant<Bits<16>>,
    zero32: Constant<Bits<32>>,
    zero64: Constant<Bits<64>>,
    zero6: Constant<Bits<FIFO_LOG>>,
    zero7: Constant<Bits<7>>,
    zero8: Constant<Bits<8>>,
    one6: Constant<Bits<FIFO_LOG>>,
    one7: Constant<Bits<7>>,
    one8: Constant<Bits<8>>,
    one24: Constant<Bits<24>>,
    depth: Constant<Bits<7>>,
    pmtu_unit: Constant<Bits<64>>,
    syn_ack: Constant<Bits<8>>,
    op_first: Constant<Bits<8>>,
    op_middle: Constant<Bits<8>>,
    op_last: Constant<Bits<8>>,
    op_only: Constant<Bits<8>>,

    plen: Signal<Local, Bits<64>>,
    plen16: Signal<Local, Bits<16>>,
    unused_plen_hi: Signal<Local, Bits<48>>,
    is_last: Signal<Local, Bit>,
    full: Signal<Local, Bit>,
    kill_me: Signal<Local, Bit>,
    req_valid: Signal<Local, Bit>,
    req_take: Signal<Local, Bit>,
    push: Signal<Local, Bit>,
    job_ready: Signal<Local, Bit>,
    opcode: Signal<Local, Bits<8>>,
    has_pay: Signal<Local, Bit>,
    dropping: Signal<Local, Bit>,
    data_ok: Signal<Local, Bit>,
    pkt_valid: Signal<Local, Bit>,
    resp_ready: Signal<Local, Bit>,
    beat_take: Signal<Local, Bit>,
    pay_end: Signal<Local, Bit>,
    rec_take: Signal<Local, Bit>,
    err_now: Signal<Local, Bit>,
    pop: Signal<Local, Bit>,
    unused_resp_tag: Signal<Local, Bits<8>>,
}

fn k<const N: usize>(v: u64) -> Constant<Bits<N>> {
    Constant::new(v.to_bits())
}

impl<const Q: usize> Default for ReadResp<Q> {
    fn default() -> Self {
        assert!(
            (1..=24).contains(&Q),
            "ReadResp<{Q}>: a QPN has 1..=24 bits"
        );
        ReadResp {
            clock: Default::default(),
            reset: Default::default(),
            s_job_valid: Default::default(),
            s_job_ready: Default::default(),
            job_hdr: Default::default(),
            job_args: Default::default(),
            dma_rd: Default::default(),
            pkt: Default::default(),
            pay: Default::default(),
            m_err_valid: Default::default(),
            m_err_qpn: Default::default(),
            m_err_psn: Default::default(),
            active: Default::default(),
            j_dst_mac: Default::default(),
            j_src_mac: Default::default(),
            j_src_ip: Default::default(),
            j_dst_ip: Default::default(),
            j_udp_sport: Default::default(),
            j_dest_qp: Default::default(),
            j_qpn: Default::default(),
            j_msn: Default::default(),
            j_psn: Default::default(),
            j_req_psn: Default::default(),
            j_iova: Default::default(),
            j_rest: Default::default(),
            j_pmtu: Default::default(),
            j_first: Default::default(),
            j_id: Default::default(),
            offering: Default::default(),
            tag: Default::default(),
            len64: Default::default(),
            desc_ram: Default::default(),
            qpn_ram: Default::default(),
            rpsn_ram: Default::default(),
            pk: Default::default(),
            d: Default::default(),
            wr_ptr: Default::default(),
            rd_ptr: Default::default(),
            count: Default::default(),
            head_ok: Default::default(),
            rec_sent: Default::default(),
            pay_done: Default::default(),
            data_seen: Default::default(),
            kill_valid: Default::default(),
            kill_job: Default::default(),
            err_valid: Default::default(),
            err_qpn: Default::default(),
            err_psn: Default::default(),
            rec: Default::default(),
            src_qp: Default::default(),
            zero1: k(0),
            one1: k(1),
            zero16: k(0),
            zero32: k(0),
            zero64: k(0),
            zero6: k(0),
            zero7: k(0),
            zero8: k(0),
            one6: k(1),
            one7: k(1),
            one8: k(1),
            one24: k(1),
            depth: k(1 << FIFO_LOG),
            // IB MTU code c is 128 << c bytes (1 = 256 ... 5 = 4096).
            pmtu_unit: k(128),
            syn_ack: k(SYNDROME_ACK),
            op_first: k(OP_FIRST),
            op_middle: k(OP_MIDDLE),
            op_last: k(OP_LAST),
            op_only: k(OP_ONLY),
            plen: Default::default(),
            plen16: Default::default(),
            unused_plen_hi: Default::default(),
            is_last: Default::default(),
            full: Default::default(),
            kill_me: Default::default(),
            req_valid: Default::default(),
            req_take: Default::default(),
            push: Default::default(),
            job_ready: Default::default(),
            opcode: Default::default(),
            has_pay: Default::default(),
            dropping: Default::default(),
            data_ok: Default::default(),
            pkt_valid: Default::default(),
            resp_ready: Default::default(),
            beat_take: Default::default(),
            pay_end: Default::default(),
            rec_take: Default::default(),
            err_now: Default::default(),
            pop: Default::default(),
            unused_resp_tag: Default::default(),
        }
    }
}

impl<const Q: usize> Logic for ReadResp<Q> {
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
            j_msn,
            j_psn,
            j_req_psn,
            j_iova,
            j_rest,
            j_pmtu,
            j_first,
            j_id,
            offering,
            tag,
            wr_ptr,
            rd_ptr,
            count,
            head_ok,
            rec_sent,
            pay_done,
            data_seen,
            kill_valid,
            kill_job,
            err_valid,
            err_qpn,
            err_psn
        );
        self.desc_ram.read_clock.next = self.clock.val();
        self.desc_ram.write_clock.next = self.clock.val();
        self.qpn_ram.read_clock.next = self.clock.val();
        self.qpn_ram.write_clock.next = self.clock.val();
        self.rpsn_ram.read_clock.next = self.clock.val();
        self.rpsn_ram.write_clock.next = self.clock.val();
        self.unused_resp_tag.next = self.dma_rd.resp_tag.val();

        // ---- issue: the next packet of the job ----
        self.plen.next = self.j_pmtu.q.val();
        if self.j_rest.q.val() < self.j_pmtu.q.val() {
            self.plen.next = self.j_rest.q.val();
        }
        self.plen16.next = self.plen.val().get_bits::<16>(0);
        self.unused_plen_hi.next = self.plen.val().get_bits::<48>(16);
        self.is_last.next = self.j_rest.q.val() <= self.j_pmtu.q.val();
        self.full.next = self.count.q.val() == self.depth.val();
        self.kill_me.next = self.kill_valid.q.val() & (self.kill_job.q.val() == self.j_id.q.val());
        self.req_valid.next = self.active.q.val()
            & !self.full.val()
            & (self.plen.val() != self.zero64.val())
            & (!self.kill_me.val() | self.offering.q.val());
        self.dma_rd.req_valid.next = self.req_valid.val();
        self.dma_rd.req_addr.next = self.j_iova.q.val();
        self.dma_rd.req_len.next = self.plen16.val();
        self.dma_rd.req_tag.next = self.tag.q.val();
        self.req_take.next = self.req_valid.val() & self.dma_rd.req_ready.val();
        self.offering.d.next = self.req_valid.val() & !self.dma_rd.req_ready.val();
        self.push.next = self.req_take.val()
            | (self.active.q.val()
                & !self.full.val()
                & !self.kill_me.val()
                & (self.plen.val() == self.zero64.val()));
        self.opcode.next = self.op_middle.val();
        if self.j_first.q.val() & self.is_last.val() {
            self.opcode.next = self.op_only.val();
        } else if self.j_first.q.val() {
            self.opcode.next = self.op_first.val();
        } else if self.is_last.val() {
            self.opcode.next = self.op_last.val();
        }

        self.pk.dst_mac.next = self.j_dst_mac.q.val();
        self.pk.src_mac.next = self.j_src_mac.q.val();
        self.pk.src_ip.next = self.j_src_ip.q.val();
        self.pk.dst_ip.next = self.j_dst_ip.q.val();
        self.pk.udp_sport.next = self.j_udp_sport.q.val();
        self.pk.dest_qp.next = self.j_dest_qp.q.val();
        self.pk.msn.next = self.j_msn.q.val();
        self.pk.opcode.next = self.opcode.val();
        self.pk.psn.next = self.j_psn.q.val();
        self.pk.plen.next = self.plen16.val();
        self.pk.job.next = self.j_id.q.val();
        self.pk.last.next = self.zero1.val();
        if self.is_last.val() {
            self.pk.last.next = self.one1.val();
        }
        self.desc_ram.write_enable.next = self.push.val();
        self.desc_ram.write_address.next = self.wr_ptr.q.val();
        self.desc_ram.write_data.next = self.pk.y.val();
        self.qpn_ram.write_enable.next = self.push.val();
        self.qpn_ram.write_address.next = self.wr_ptr.q.val();
        self.qpn_ram.write_data.next = self.j_qpn.q.val();
        self.rpsn_ram.write_enable.next = self.push.val();
        self.rpsn_ram.write_address.next = self.wr_ptr.q.val();
        self.rpsn_ram.write_data.next = self.j_req_psn.q.val();

        if self.req_take.val() {
            self.tag.d.next = self.tag.q.val() + self.one8.val();
        }
        if self.push.val() {
            self.wr_ptr.d.next = self.wr_ptr.q.val() + self.one6.val();
            self.j_iova.d.next = self.j_iova.q.val() + self.plen.val();
            self.j_rest.d.next = self.j_rest.q.val() - self.plen.val();
            self.j_psn.d.next = self.j_psn.q.val() + self.one24.val();
            self.j_first.d.next = false;
            if self.is_last.val() {
                self.active.d.next = false;
            }
        }
        // A failed read of this job: issue no more of it (once an offered read is taken).
        if self.active.q.val() & self.kill_me.val() & !self.offering.q.val() {
            self.active.d.next = false;
        }

        // ---- take the next job as the last packet of this one goes ----
        self.job_ready.next = !self.active.q.val() | (self.push.val() & self.is_last.val());
        self.s_job_ready.next = self.job_ready.val();
        self.len64.hi.next = self.zero32.val();
        self.len64.lo.next = self.job_args.len.val();
        if self.s_job_valid.val() & self.job_ready.val() {
            self.active.d.next = true;
            self.j_first.d.next = true;
            self.j_id.d.next = self.j_id.q.val() + self.one7.val();
            self.j_dst_mac.d.next = self.job_hdr.dst_mac.val();
            self.j_src_mac.d.next = self.job_hdr.src_mac.val();
            self.j_src_ip.d.next = self.job_hdr.src_ip.val();
            self.j_dst_ip.d.next = self.job_hdr.dst_ip.val();
            self.j_udp_sport.d.next = self.job_hdr.udp_sport.val();
            self.j_dest_qp.d.next = self.job_hdr.dest_qp.val();
            self.j_qpn.d.next = self.job_hdr.qpn.val();
            self.j_msn.d.next = self.job_hdr.msn.val();
            self.j_psn.d.next = self.job_hdr.psn.val();
            self.j_req_psn.d.next = self.job_hdr.psn.val();
            self.j_iova.d.next = self.job_args.iova.val();
            self.j_rest.d.next = self.len64.y.val();
            self.j_pmtu.d.next = self.pmtu_unit.val() << self.job_args.pmtu.val();
        }

        // ---- the head packet: record with its first beat, then the beats ----
        self.d.x.next = self.desc_ram.read_data.val();
        self.has_pay.next = self.d.plen.val() != self.zero16.val();
        self.dropping.next = self.kill_valid.q.val() & (self.d.job.val() == self.kill_job.q.val());
        self.data_ok.next = self.dma_rd.resp_valid.val() & !self.dma_rd.resp_err.val();
        self.pkt_valid.next = self.head_ok.q.val()
            & !self.dropping.val()
            & !self.rec_sent.q.val()
            & (!self.has_pay.val() | self.data_seen.q.val() | self.data_ok.val());
        self.pkt.valid.next = self.pkt_valid.val();
        self.pay.tvalid.next = self.head_ok.q.val()
            & !self.dropping.val()
            & self.has_pay.val()
            & !self.pay_done.q.val()
            & self.data_ok.val();
        self.pay.tdata.next = self.dma_rd.resp_data.val();
        self.pay.tlast.next = self.dma_rd.resp_last.val();
        // A dropped packet's beats and an error beat are taken here, never passed on.
        self.resp_ready.next = self.head_ok.q.val()
            & self.has_pay.val()
            & !self.pay_done.q.val()
            & (self.dropping.val() | self.dma_rd.resp_err.val() | self.pay.tready.val());
        self.dma_rd.resp_ready.next = self.resp_ready.val();
        self.beat_take.next = self.dma_rd.resp_valid.val() & self.resp_ready.val();
        self.pay_end.next = self.beat_take.val() & self.dma_rd.resp_last.val();
        self.rec_take.next = self.pkt_valid.val() & self.pkt.ready.val();
        self.err_now.next =
            self.beat_take.val() & self.dma_rd.resp_err.val() & !self.dropping.val();
        self.pop.next = self.head_ok.q.val()
            & ((self.dropping.val() & (!self.has_pay.val() | self.pay_end.val()))
                | self.err_now.val()
                | (!self.dropping.val()
                    & (self.rec_sent.q.val() | self.rec_take.val())
                    & (!self.has_pay.val() | self.pay_done.q.val() | self.pay_end.val())));

        if self.pop.val() {
            self.rec_sent.d.next = false;
            self.pay_done.d.next = false;
            self.data_seen.d.next = false;
            self.rd_ptr.d.next = self.rd_ptr.q.val() + self.one6.val();
        } else {
            if self.rec_take.val() {
                self.rec_sent.d.next = true;
            }
            if self.pay_end.val() {
                self.pay_done.d.next = true;
            }
            if self.beat_take.val() {
                self.data_seen.d.next = true;
            }
        }
        if self.push.val() & !self.pop.val() {
            self.count.d.next = self.count.q.val() + self.one7.val();
        }
        if self.pop.val() & !self.push.val() {
            self.count.d.next = self.count.q.val() - self.one7.val();
        }
        // The RAM reads the entry that is the head next cycle (written before this one).
        self.desc_ram.read_address.next = self.rd_ptr.q.val();
        self.qpn_ram.read_address.next = self.rd_ptr.q.val();
        self.rpsn_ram.read_address.next = self.rd_ptr.q.val();
        self.head_ok.d.next = self.count.q.val() != self.zero7.val();
        if self.pop.val() {
            self.desc_ram.read_address.next = self.rd_ptr.q.val() + self.one6.val();
            self.qpn_ram.read_address.next = self.rd_ptr.q.val() + self.one6.val();
            self.rpsn_ram.read_address.next = self.rd_ptr.q.val() + self.one6.val();
            self.head_ok.d.next = self.count.q.val() > self.one7.val();
        }

        // ---- errors: report, then drop the rest of that job ----
        self.err_valid.d.next = false;
        if self.head_ok.q.val() & self.kill_valid.q.val() & !self.dropping.val() {
            self.kill_valid.d.next = false;
        }
        if self.pop.val() & self.dropping.val() & (self.d.last.val() == self.one1.val()) {
            self.kill_valid.d.next = false;
        }
        if self.err_now.val() {
            self.kill_valid.d.next = true;
            self.kill_job.d.next = self.d.job.val();
            self.err_valid.d.next = true;
            self.err_qpn.d.next = self.qpn_ram.read_data.val();
            self.err_psn.d.next = self.rpsn_ram.read_data.val();
        }
        self.m_err_valid.next = self.err_valid.q.val();
        self.m_err_qpn.next = self.err_qpn.q.val();
        self.m_err_psn.next = self.err_psn.q.val();

        // ---- the record ----
        self.rec.dst_mac.next = self.d.dst_mac.val();
        self.rec.src_mac.next = self.d.src_mac.val();
        self.rec.src_ip.next = self.d.src_ip.val();
        self.rec.dst_ip.next = self.d.dst_ip.val();
        self.rec.udp_sport.next = self.d.udp_sport.val();
        self.rec.opcode.next = self.d.opcode.val();
        self.rec.se.next = self.zero1.val();
        self.rec.ack_req.next = self.zero1.val();
        self.rec.dest_qp.next = self.d.dest_qp.val();
        self.rec.psn.next = self.d.psn.val();
        self.rec.va.next = self.zero64.val();
        self.rec.rkey.next = self.zero32.val();
        self.rec.dma_len.next = self.zero32.val();
        self.rec.swap_add.next = self.zero64.val();
        self.rec.compare.next = self.zero64.val();
        self.rec.orig.next = self.zero64.val();
        self.rec.syndrome.next = self.syn_ack.val();
        self.rec.msn.next = self.d.msn.val();
        self.rec.imm.next = self.zero32.val();
        self.rec.payload_len.next = self.d.plen.val();
        self.src_qp.x.next = self.qpn_ram.read_data.val();
        self.rec.src_qp.next = self.src_qp.y.val();
        self.pkt.data.next = self.rec.y.val();

        if self.reset.val() {
            self.active.d.next = false;
            self.offering.d.next = false;
            self.tag.d.next = self.zero8.val();
            self.wr_ptr.d.next = self.zero6.val();
            self.rd_ptr.d.next = self.zero6.val();
            self.count.d.next = self.zero7.val();
            self.head_ok.d.next = false;
            self.rec_sent.d.next = false;
            self.pay_done.d.next = false;
            self.data_seen.d.next = false;
            self.kill_valid.d.next = false;
            self.err_valid.d.next = false;
        }
    }
}
