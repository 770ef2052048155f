//! [`Segmenter`] against the model's `request_packet`: every request record and payload
//! of random send WQEs, under DMA latency, faults and backpressure.

use std::collections::VecDeque;

use rocenic_model::{build_frame, packets, request_packet, Addr};
use rocenic_proto::abi::verbs::{send_flags, WrOpcode};
use rocenic_proto::abi::wqe::{SendWqe, Sge, MAX_INLINE};
use rocenic_proto::wire::Opcode;

use rocenic_hdl::bench::{Bench, Pattern, Rng};
use rocenic_hdl::common::icrc::BEAT_BYTES;
use rocenic_hdl::common::icrc::DATA_BITS;
use rocenic_hdl::prelude::*;
use rocenic_hdl::requester::segmenter::*;
use rocenic_hdl::tx::hdr_build::model::Record;
use rocenic_hdl::tx::tx_arbiter::RECORD_BITS;
use rocenic_hdl::tx::tx_arbiter::{pack, RECORD_FIELDS};
use rocenic_hdl::tx::tx_leaves::bytes_from_bits;
use rocenic_hdl::QP_LOG;

/// Host memory: a fixed pseudo-random byte at every address.
fn mem(addr: u64) -> u8 {
    (addr.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8
}

/// Reads touching this page fail (the IOMMU refuses them).
const BAD_PAGE: u64 = 0x7000_0000;

fn hits_bad_page(addr: u64, len: u64) -> bool {
    addr < BAD_PAGE + 4096 && addr + len > BAD_PAGE
}

/// One job: a validated WQE and what the requester adds to it.
#[derive(Clone, Debug)]
struct Job {
    addr: Addr,
    dest_qp: u32,
    qpn: u32,
    wqe: SendWqe,
    iova: u64,
    first_psn: u32,
    pmtu_code: u32,
    start_pkt: u32,
    /// Offered only after an error pulse (as a requester gives a failed QP new work).
    after_error: bool,
}

impl Job {
    fn len(&self) -> u32 {
        self.wqe.length()
    }
    fn pmtu(&self) -> u32 {
        128 << self.pmtu_code
    }
    fn segmented(&self) -> bool {
        matches!(
            self.wqe.opcode,
            WrOpcode::Send
                | WrOpcode::SendWithImm
                | WrOpcode::SendWithInv
                | WrOpcode::RdmaWrite
                | WrOpcode::RdmaWriteWithImm
        )
    }

    /// The packets the model sends for this job, from `start_pkt` on.
    fn packets(&self, id: usize) -> Vec<Expected> {
        let last = if self.segmented() {
            packets(self.len(), self.pmtu())
        } else {
            self.start_pkt + 1
        };
        (self.start_pkt..last)
            .map(|k| {
                let rp = request_packet(
                    &self.wqe,
                    self.len(),
                    self.first_psn,
                    self.pmtu(),
                    k,
                    self.dest_qp,
                );
                let h = rp.hdr;
                let (off, len) = (rp.payload_off, rp.payload_len);
                let dma = self.segmented() && !self.wqe.is_inline() && len > 0;
                let payload: Vec<u8> = if !self.segmented() {
                    vec![]
                } else if self.wqe.is_inline() {
                    self.wqe.inline[off as usize..(off + len) as usize].to_vec()
                } else {
                    (0..len as u64)
                        .map(|i| mem(self.iova + off as u64 + i))
                        .collect()
                };
                let (va, rkey, dma_len) = match (h.reth, h.atomic) {
                    (Some(r), _) => r,
                    (None, Some((va, rkey, _, _))) => (va, rkey, 0),
                    _ => (0, 0, 0),
                };
                let (swap_add, compare) = h.atomic.map_or((0, 0), |a| (a.2, a.3));
                let record = Record {
                    dst_mac: self.addr.dst_mac,
                    src_mac: self.addr.src_mac,
                    src_ip: self.addr.src_ip,
                    dst_ip: self.addr.dst_ip,
                    udp_sport: self.addr.udp_sport,
                    opcode: h.opcode,
                    se: h.solicited,
                    ack_req: h.ack_req,
                    dest_qp: h.dest_qp,
                    psn: h.psn,
                    va,
                    rkey,
                    dma_len,
                    swap_add,
                    compare,
                    orig: 0,
                    syndrome: 0,
                    msn: 0,
                    imm: h.imm.or(h.ieth).unwrap_or(0),
                    payload,
                    src_qp: self.qpn,
                };
                // The record, built by the frame builder's reference, is the model's frame.
                assert_eq!(
                    record.frame(),
                    build_frame(&self.addr, &h, &record.payload),
                    "record of {h:?}"
                );
                Expected {
                    job: id,
                    qpn: self.qpn,
                    psn: h.psn,
                    last: rp.last_of_message,
                    fails: dma && hits_bad_page(self.iova + off as u64, u64::from(len)),
                    record,
                }
            })
            .collect()
    }

    fn drive(&self, u: &mut Segmenter<QP_LOG>) {
        let be = |b: &[u8]| b.iter().fold(0u64, |a, &x| (a << 8) | u64::from(x));
        u.s_job_dst_mac.next = be(&self.addr.dst_mac).into();
        u.s_job_src_mac.next = be(&self.addr.src_mac).into();
        u.s_job_src_ip.next = be(&self.addr.src_ip).into();
        u.s_job_dst_ip.next = be(&self.addr.dst_ip).into();
        u.s_job_udp_sport.next = u64::from(self.addr.udp_sport).into();
        u.s_job_dest_qp.next = u64::from(self.dest_qp).into();
        u.s_job_qpn.next = u64::from(self.qpn).into();
        u.s_job_opcode.next = u64::from(u8::from(self.wqe.opcode)).into();
        u.s_job_solicited.next = self.wqe.flags & send_flags::SOLICITED != 0;
        u.s_job_inline.next = self.wqe.is_inline();
        let mut inl = Bits::<256>::default();
        for (i, b) in self.wqe.inline.iter().enumerate() {
            inl.set_bits::<8>(8 * i, u64::from(*b).into());
        }
        u.s_job_inline_data.next = inl;
        u.s_job_len.next = u64::from(self.len()).into();
        u.s_job_iova.next = self.iova.into();
        u.s_job_remote_va.next = self.wqe.remote_addr.into();
        u.s_job_rkey.next = u64::from(self.wqe.rkey).into();
        u.s_job_imm.next = u64::from(self.wqe.imm_or_inv).into();
        u.s_job_compare_add.next = self.wqe.compare_add.into();
        u.s_job_swap.next = self.wqe.swap.into();
        u.s_job_first_psn.next = u64::from(self.first_psn).into();
        u.s_job_pmtu.next = u64::from(self.pmtu_code).into();
        u.s_job_start_pkt.next = u64::from(self.start_pkt).into();
        u.s_job_stop_psn.next = u64::from((self.first_psn + (1 << 23)) & 0xff_ffff).into();
    }
}

#[derive(Clone, Debug)]
struct Expected {
    job: usize,
    qpn: u32,
    psn: u32,
    last: bool,
    fails: bool,
    record: Record,
}

const ALL_OPS: [WrOpcode; 8] = [
    WrOpcode::RdmaWrite,
    WrOpcode::RdmaWriteWithImm,
    WrOpcode::Send,
    WrOpcode::SendWithImm,
    WrOpcode::RdmaRead,
    WrOpcode::AtomicCmpAndSwp,
    WrOpcode::AtomicFetchAndAdd,
    WrOpcode::SendWithInv,
];

fn random_job(rng: &mut Rng, opcode: WrOpcode, max_len: u64) -> Job {
    let mut wqe = SendWqe {
        wr_id: rng.next_u64(),
        opcode,
        flags: if rng.percent(50) {
            send_flags::SOLICITED
        } else {
            0
        } | send_flags::SIGNALED,
        num_sge: 1,
        imm_or_inv: rng.next_u64() as u32,
        remote_addr: rng.next_u64() >> 1,
        rkey: rng.next_u64() as u32,
        compare_add: rng.next_u64(),
        swap: rng.next_u64(),
        ..SendWqe::default()
    };
    let len = match rng.below(4) {
        0 => rng.below(65),
        1 => rng.below(600),
        _ => rng.below(max_len + 1),
    } as u32;
    wqe.sge = Sge {
        addr: rng.next_u64(),
        length: if opcode.is_atomic() { 8 } else { len },
        lkey: rng.next_u64() as u32,
    };
    let segmented = !matches!(opcode, WrOpcode::RdmaRead) && !opcode.is_atomic();
    if segmented && rng.percent(20) {
        wqe.flags |= send_flags::INLINE;
        wqe.inline_len = rng.below(MAX_INLINE as u64 + 1) as u8;
        wqe.inline = rng.bytes(MAX_INLINE).try_into().expect("32");
    }
    let pmtu_code = 1 + rng.below(5) as u32;
    let n = packets(wqe.length(), 128 << pmtu_code);
    let start_pkt = if opcode.is_atomic() || wqe.is_inline() || rng.percent(70) {
        0
    } else {
        rng.below(u64::from(n)) as u32
    };
    let first_psn = if rng.percent(25) {
        0xFF_FFFF - rng.below(6) as u32
    } else {
        rng.below(1 << 24) as u32
    };
    Job {
        addr: Addr {
            src_mac: rng.bytes(6).try_into().expect("6"),
            dst_mac: rng.bytes(6).try_into().expect("6"),
            src_ip: rng.bytes(4).try_into().expect("4"),
            dst_ip: rng.bytes(4).try_into().expect("4"),
            udp_sport: rng.next_u64() as u16,
        },
        dest_qp: rng.below(1 << 24) as u32,
        qpn: rng.below(4) as u32,
        wqe,
        // Away from the bad page (and from wrapping at the top of the address space).
        iova: 0x1_0000_0000 + (rng.next_u64() >> 24),
        first_psn,
        pmtu_code,
        start_pkt,
        after_error: false,
    }
}

/// The DMA read port: requests accepted under a pattern, each answered `latency` cycles
/// later, in order, beats offered under the pattern.
struct Dma {
    latency: u64,
    pending: VecDeque<(u64, u64, u16, u8)>,
    beats: VecDeque<(Bits<DATA_BITS>, bool, bool, u8)>,
    offered: bool,
    requests: usize,
}

impl Dma {
    fn new(latency: u64) -> Dma {
        Dma {
            latency,
            pending: VecDeque::new(),
            beats: VecDeque::new(),
            offered: false,
            requests: 0,
        }
    }

    /// Moves due requests into beats.
    fn advance(&mut self, now: u64) {
        while self.beats.is_empty() {
            let Some(&(due, addr, len, tag)) = self.pending.front() else {
                return;
            };
            if due > now {
                return;
            }
            self.pending.pop_front();
            if hits_bad_page(addr, u64::from(len)) {
                self.beats.push_back((Bits::default(), true, true, tag));
                continue;
            }
            let n = usize::from(len).div_ceil(BEAT_BYTES);
            for b in 0..n {
                let mut data = [0u8; BEAT_BYTES];
                for (lane, byte) in data.iter_mut().enumerate() {
                    let at = (b * BEAT_BYTES + lane) as u64;
                    if at < u64::from(len) {
                        *byte = mem(addr + at);
                    }
                }
                self.beats.push_back((
                    rocenic_hdl::common::icrc::beat_from_bytes(&data),
                    b + 1 == n,
                    false,
                    tag,
                ));
            }
        }
    }
}

/// What a run saw.
#[derive(Default, Debug)]
struct Seen {
    packets: usize,
    payload_bytes: usize,
    errors: usize,
    done: usize,
    /// Cycle of each job's acceptance and of its first record.
    accepted_at: Vec<u64>,
    first_record_at: Vec<Option<u64>>,
    /// Cycles of the first and last payload beats.
    first_beat: Option<u64>,
    last_beat: Option<u64>,
    opcodes: Vec<u8>,
}

fn record_fields(bits: &Bits<RECORD_BITS>) -> Vec<u64> {
    let mut at = 0;
    RECORD_FIELDS
        .iter()
        .map(|&(_, w)| {
            let v = (0..w).fold(0u64, |a, i| a | (u64::from(bits.get_bit(at + i)) << i));
            at += w;
            v
        })
        .collect()
}

/// Runs `jobs` through the block. `pattern` drives the job source and the DMA
/// responses (valid) and the record, payload and DMA request sinks (ready).
fn run(jobs: &[Job], pattern: Pattern, latency: u64, seed: u64) -> Seen {
    let mut rng = Rng::new(seed);
    let mut b = Bench::new(Segmenter::<QP_LOG>::new(), |u| &mut u.clock);
    b.uut.reset.next = true;
    b.tick();
    b.uut.reset.next = false;
    let mut dma = Dma::new(latency);
    let mut expected: VecDeque<Expected> = VecDeque::new();
    let mut pay_expected: VecDeque<Vec<u8>> = VecDeque::new();
    let mut pay_got: Vec<u8> = Vec::new();
    let mut next_job = 0;
    let mut job_on = false;
    let mut seen = Seen {
        first_record_at: vec![None; jobs.len()],
        accepted_at: vec![0; jobs.len()],
        ..Seen::default()
    };
    let mut idle = 0;
    loop {
        let now = b.cycle();
        if next_job < jobs.len()
            && !job_on
            && (!jobs[next_job].after_error || seen.errors > 0)
            && rng.percent(pattern.valid_pct)
        {
            job_on = true;
            jobs[next_job].drive(&mut b.uut);
        }
        b.uut.s_job_valid.next = job_on;
        dma.advance(now);
        if !dma.offered && !dma.beats.is_empty() && rng.percent(pattern.valid_pct) {
            dma.offered = true;
        }
        let u = &mut b.uut;
        u.dma_rd.resp_valid.next = dma.offered;
        if let Some(&(data, last, err, tag)) = dma.beats.front() {
            u.dma_rd.resp_data.next = data;
            u.dma_rd.resp_last.next = last;
            u.dma_rd.resp_err.next = err;
            u.dma_rd.resp_tag.next = u64::from(tag).into();
        }
        u.dma_rd.req_ready.next = rng.percent(pattern.ready_pct);
        u.pkt.ready.next = rng.percent(pattern.ready_pct);
        u.pay.tready.next = rng.percent(pattern.ready_pct);
        b.settle();
        let u = &b.uut;
        let mut busy = false;
        if u.s_job_valid.val() && u.s_job_ready.val() {
            let mut pk = jobs[next_job].packets(next_job);
            seen.accepted_at[next_job] = now;
            expected.extend(pk.drain(..));
            next_job += 1;
            job_on = false;
            busy = true;
        }
        if u.dma_rd.req_valid.val() && u.dma_rd.req_ready.val() {
            let (addr, len, tag) = (
                u.dma_rd.req_addr.val().to_u64(),
                u.dma_rd.req_len.val().to_u64() as u16,
                u.dma_rd.req_tag.val().to_u64() as u8,
            );
            assert!((1..=4096).contains(&len), "read length {len}");
            dma.pending.push_back((now + dma.latency, addr, len, tag));
            dma.requests += 1;
            busy = true;
        }
        if u.dma_rd.resp_valid.val() && u.dma_rd.resp_ready.val() {
            dma.beats.pop_front();
            dma.offered = false;
            busy = true;
        }
        assert_eq!(
            u.m_sent_valid.val(),
            u.pkt.valid.val() && u.pkt.ready.val(),
            "m_sent pulses with each record taken"
        );
        if u.pkt.valid.val() && u.pkt.ready.val() {
            let want = expected.pop_front().expect("a record nobody expected");
            assert!(
                !want.fails,
                "the packet of a failed read was sent: {want:?}"
            );
            let got = u.pkt.data.val();
            assert_eq!(
                record_fields(&got),
                record_fields(&pack(&want.record.fields())),
                "record of job {} psn {:#x} ({:?})",
                want.job,
                want.psn,
                want.record.opcode
            );
            assert_eq!(got, pack(&want.record.fields()));
            assert_eq!(u.m_sent_psn.val().to_u64(), u64::from(want.psn));
            assert_eq!(u.m_sent_qpn.val().to_u64(), u64::from(want.qpn));
            assert_eq!(u.m_sent_last.val(), want.last);
            assert_eq!(u.m_done_valid.val(), want.last);
            if want.last {
                assert_eq!(u.m_done_qpn.val().to_u64(), u64::from(want.qpn));
                seen.done += 1;
            }
            if !want.record.payload.is_empty() {
                pay_expected.push_back(want.record.payload.clone());
            }
            seen.first_record_at[want.job].get_or_insert(now);
            seen.opcodes.push(u8::from(want.record.opcode));
            seen.packets += 1;
            busy = true;
        } else {
            assert!(!u.m_done_valid.val(), "m_done without a record");
        }
        if u.pay.tvalid.val() && u.pay.tready.val() {
            let want = pay_expected
                .front()
                .expect("a payload beat before its record");
            let bytes = bytes_from_bits(u.pay.tdata.val());
            let at = pay_got.len();
            let n = (want.len() - at).min(BEAT_BYTES);
            pay_got.extend_from_slice(&bytes[..n]);
            assert_eq!(
                u.pay.tlast.val(),
                pay_got.len() == want.len(),
                "tlast on the payload's last beat"
            );
            if u.pay.tlast.val() {
                assert_eq!(&pay_got, want, "payload bytes");
                seen.payload_bytes += pay_got.len();
                pay_got.clear();
                pay_expected.pop_front();
            }
            seen.first_beat.get_or_insert(now);
            seen.last_beat = Some(now);
            busy = true;
        }
        if u.m_err_valid.val() {
            let want = expected.pop_front().expect("an error nobody expected");
            assert!(want.fails, "error pulse for a good read: {want:?}");
            assert_eq!(u.m_err_qpn.val().to_u64(), u64::from(want.qpn));
            assert_eq!(u.m_err_psn.val().to_u64(), u64::from(want.psn));
            assert!(!u.s_job_ready.val(), "no job taken with an error pulse");
            // The model purges the QP's frames: nothing more of it is sent.
            expected.retain(|e| e.qpn != want.qpn);
            seen.errors += 1;
            busy = true;
        }
        b.tick();
        idle = if busy { 0 } else { idle + 1 };
        let drained = next_job == jobs.len()
            && expected.is_empty()
            && pay_expected.is_empty()
            && dma.pending.is_empty()
            && dma.beats.is_empty();
        if drained {
            break;
        }
        assert!(
            idle < 400 + dma.latency,
            "stuck at cycle {now}: {} expected, job {next_job}",
            expected.len()
        );
    }
    // Nothing more comes out.
    for _ in 0..5 {
        b.settle();
        assert!(!b.uut.pkt.valid.val() && !b.uut.pay.tvalid.val());
        assert!(!b.uut.dma_rd.req_valid.val());
        b.tick();
    }
    seen
}

#[test]
fn the_wire_opcodes_are_protos() {
    for (v, o) in [
        (op::SEND_FIRST, Opcode::SendFirst),
        (op::SEND_MIDDLE, Opcode::SendMiddle),
        (op::SEND_LAST, Opcode::SendLast),
        (op::SEND_LAST_IMM, Opcode::SendLastWithImmediate),
        (op::SEND_ONLY, Opcode::SendOnly),
        (op::SEND_ONLY_IMM, Opcode::SendOnlyWithImmediate),
        (op::WRITE_FIRST, Opcode::RdmaWriteFirst),
        (op::WRITE_MIDDLE, Opcode::RdmaWriteMiddle),
        (op::WRITE_LAST, Opcode::RdmaWriteLast),
        (op::WRITE_LAST_IMM, Opcode::RdmaWriteLastWithImmediate),
        (op::WRITE_ONLY, Opcode::RdmaWriteOnly),
        (op::WRITE_ONLY_IMM, Opcode::RdmaWriteOnlyWithImmediate),
        (op::READ_REQUEST, Opcode::RdmaReadRequest),
        (op::COMPARE_SWAP, Opcode::CompareSwap),
        (op::FETCH_ADD, Opcode::FetchAdd),
        (op::SEND_LAST_INV, Opcode::SendLastWithInvalidate),
        (op::SEND_ONLY_INV, Opcode::SendOnlyWithInvalidate),
    ] {
        assert_eq!(v, u64::from(u8::from(o)), "{o:?}");
    }
    for (v, o) in [
        (wr::RDMA_WRITE, WrOpcode::RdmaWrite),
        (wr::RDMA_WRITE_WITH_IMM, WrOpcode::RdmaWriteWithImm),
        (wr::SEND, WrOpcode::Send),
        (wr::SEND_WITH_IMM, WrOpcode::SendWithImm),
        (wr::RDMA_READ, WrOpcode::RdmaRead),
        (wr::ATOMIC_CMP_AND_SWP, WrOpcode::AtomicCmpAndSwp),
        (wr::ATOMIC_FETCH_AND_ADD, WrOpcode::AtomicFetchAndAdd),
        (wr::SEND_WITH_INV, WrOpcode::SendWithInv),
    ] {
        assert_eq!(v, u64::from(u8::from(o)), "{o:?}");
    }
}

/// `count` random jobs cycling through every opcode.
fn random_jobs(rng: &mut Rng, count: usize, max_len: u64) -> Vec<Job> {
    (0..count)
        .map(|i| random_job(rng, ALL_OPS[i % ALL_OPS.len()], max_len))
        .collect()
}

#[test]
fn every_opcode_under_every_pattern() {
    let mut opcodes = std::collections::BTreeSet::new();
    let (mut wraps, mut resumed, mut inline, mut empty) = (0, 0, 0, 0);
    for (i, p) in Pattern::SWEEP.into_iter().enumerate() {
        let mut rng = Rng::new(0x5E6 + i as u64);
        let count = if p.ready_pct < 20 { 12 } else { 32 };
        let jobs = random_jobs(&mut rng, count, 3 * 4096 + 1);
        for j in &jobs {
            let n = j.packets(0).len() as u32;
            wraps += usize::from(j.first_psn + j.start_pkt + n > 1 << 24);
            resumed += usize::from(j.start_pkt > 0);
            inline += usize::from(j.wqe.is_inline());
            empty += usize::from(j.len() == 0);
        }
        let seen = run(&jobs, p, 3 + rng.below(30), 0x100 + i as u64);
        assert_eq!(seen.done, jobs.len());
        opcodes.extend(seen.opcodes);
    }
    assert_eq!(opcodes.len(), 17, "every request opcode sent: {opcodes:x?}");
    assert!(
        wraps > 3 && resumed > 3 && inline > 3 && empty > 0,
        "wraps {wraps}, resumed {resumed}, inline {inline}, empty {empty}"
    );
}

/// A message of `len` bytes with one opcode at one PMTU.
fn message(rng: &mut Rng, opcode: WrOpcode, len: u32, pmtu_code: u32) -> Job {
    let mut j = random_job(rng, opcode, 0);
    j.wqe.flags &= !send_flags::INLINE;
    j.wqe.sge.length = len;
    j.pmtu_code = pmtu_code;
    j.start_pkt = 0;
    j
}

#[test]
fn lengths_at_every_pmtu_boundary() {
    let mut rng = Rng::new(0xB0B);
    let mut jobs = Vec::new();
    for code in 1..=5u32 {
        let pmtu = 128 << code;
        for len in [0, 1, 63, 64, 65, pmtu - 1, pmtu, pmtu + 1, 2 * pmtu + 7] {
            let op = [WrOpcode::Send, WrOpcode::RdmaWriteWithImm][jobs.len() % 2];
            jobs.push(message(&mut rng, op, len, code));
        }
    }
    let seen = run(&jobs, Pattern::SWEEP[3], 9, 0xB0B);
    assert_eq!(seen.done, jobs.len());
}

#[test]
fn a_failed_read_stops_its_qp_only() {
    for (i, p) in [Pattern::SWEEP[0], Pattern::SWEEP[3]]
        .into_iter()
        .enumerate()
    {
        let mut rng = Rng::new(0xE11 + i as u64);
        let mut jobs = Vec::new();
        // QP 1: a WRITE whose third packet reads the bad page, then a SEND queued
        // behind it; QP 2's messages around them must all go out.
        let mut w = message(&mut rng, WrOpcode::RdmaWrite, 5 * 1024 + 9, 3);
        w.qpn = 1;
        w.iova = BAD_PAGE - 2 * 1024 - 5;
        let mut s = message(&mut rng, WrOpcode::Send, 3000, 3);
        s.qpn = 1;
        for q in [2, 2] {
            let mut o = message(&mut rng, WrOpcode::Send, 2500, 3);
            o.qpn = q;
            jobs.push(o);
        }
        jobs.insert(1, w);
        jobs.insert(2, s);
        let mut later = message(&mut rng, WrOpcode::RdmaWrite, 700, 1);
        later.qpn = 2;
        jobs.push(later);
        let seen = run(&jobs, p, 40, 0xE11 + i as u64);
        assert_eq!(seen.errors, 1, "one error pulse");
        // The WRITE's first two packets went, then nothing more of QP 1.
        assert_eq!(seen.done, jobs.len() - 2);
        assert!(seen.first_record_at[1].is_some());
        assert!(seen.first_record_at[2].is_none());
    }
    // After the pulse, the requester may give the QP new jobs: they are sent.
    let mut rng = Rng::new(0xE13);
    let mut bad = message(&mut rng, WrOpcode::Send, 300, 1);
    bad.qpn = 3;
    bad.iova = BAD_PAGE + 100;
    let mut next = message(&mut rng, WrOpcode::Send, 300, 1);
    next.qpn = 3;
    next.after_error = true;
    let seen = run(&[bad, next], Pattern::SWEEP[0], 20, 0xE13);
    assert_eq!((seen.errors, seen.done), (1, 1));
}

#[test]
fn latency_and_throughput_with_a_250_cycle_dma() {
    let mut rng = Rng::new(0x7A7);
    // Latency: a READ request (no payload) and a 64-byte SEND, one at a time.
    let read = message(&mut rng, WrOpcode::RdmaRead, 4096, 5);
    let seen = run(&[read], Pattern::SWEEP[0], 250, 1);
    let read_latency = seen.first_record_at[0].unwrap() - seen.accepted_at[0];
    let send = message(&mut rng, WrOpcode::Send, 64, 5);
    let seen = run(&[send], Pattern::SWEEP[0], 250, 2);
    let send_latency = seen.first_record_at[0].unwrap() - seen.accepted_at[0];
    println!("job accepted -> first record: READ {read_latency} cycles, SEND {send_latency} cycles (DMA latency 250)");
    assert!(read_latency <= 3, "READ {read_latency}");
    assert!(send_latency <= 250 + 5, "SEND {send_latency}");
    // Throughput: long WRITEs at full rate, payload bytes per cycle from the first
    // payload beat to the last. The floors hold the 64 slots: at PMTU 256 and 512 the
    // slots in flight bound the rate (16 slots gave 19.3 and 40.7 bytes/cycle there);
    // with 64 the output's record cycle per packet does (5 and 9 cycles a packet).
    for (code, len, floor) in [
        (5u32, 64 * 1024u32, 63.0),
        (3, 32 * 1024, 58.0),
        (2, 16 * 1024, 54.0),
        (1, 16 * 1024, 48.0),
    ] {
        let w = message(&mut rng, WrOpcode::RdmaWrite, len, code);
        let seen = run(&[w], Pattern::SWEEP[0], 250, 3);
        let cycles = seen.last_beat.unwrap() - seen.first_beat.unwrap() + 1;
        let rate = f64::from(len) / cycles as f64;
        println!(
            "PMTU {}: {len} bytes in {cycles} cycles from the first payload beat: {rate:.1} bytes/cycle",
            128 << code
        );
        assert!(rate >= floor, "PMTU {}: {rate:.1} bytes/cycle", 128 << code);
    }
}
