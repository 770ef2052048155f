//! [`ReadResp`] against the model's `read_response_packets`: the READ responses of random
//! jobs, records and payload in order, under DMA latency, faults and backpressure.

use std::collections::VecDeque;

use rocenic_hdl::bench::{Bench, Pattern, Rng};
use rocenic_hdl::common::icrc::DATA_BITS;
use rocenic_hdl::common::icrc::{beat_from_bytes, BEAT_BYTES};
use rocenic_hdl::prelude::*;
use rocenic_hdl::responder::read_resp::*;
use rocenic_hdl::tx::hdr_build::model::unpack_record;
use rocenic_hdl::tx::hdr_build::model::Record;
use rocenic_hdl::tx::tx_arbiter::RECORD_BITS;
use rocenic_hdl::tx::tx_leaves::bytes_from_bits;
use rocenic_model::read_response_packets;

const Q: usize = 4;
/// Host memory seen by the bench's DMA port: `MEM` bytes from IOVA `BASE`.
const BASE: u64 = 0x0000_7f3a_ffff_8000;
const MEM: usize = 1 << 16;

/// A READ job as the responder hands it over.
#[derive(Clone, Debug)]
struct Job {
    dst_mac: [u8; 6],
    src_mac: [u8; 6],
    src_ip: [u8; 4],
    dst_ip: [u8; 4],
    udp_sport: u16,
    dest_qp: u32,
    qpn: u32,
    psn: u32,
    msn: u32,
    iova: u64,
    len: u32,
    /// IB MTU code 1..=5.
    pmtu: u32,
}

fn be(b: &[u8]) -> u64 {
    b.iter().fold(0u64, |a, &x| (a << 8) | u64::from(x))
}

impl Job {
    fn random(rng: &mut Rng, max_len: u32) -> Job {
        let pmtu = 1 + rng.below(5) as u32;
        let bytes = 128u32 << pmtu;
        let len = match rng.below(6) {
            0 => 0,
            1 => rng.below(65) as u32,
            2 => bytes * (1 + rng.below(4) as u32),
            3 => (bytes * (1 + rng.below(4) as u32) + 1).saturating_sub(rng.below(3) as u32),
            _ => rng.below(u64::from(max_len) + 1) as u32,
        }
        .min(max_len);
        let psn = if rng.percent(30) {
            0xff_ffff - rng.below(4) as u32
        } else {
            rng.below(1 << 24) as u32
        };
        Job {
            dst_mac: rng.bytes(6).try_into().expect("6"),
            src_mac: rng.bytes(6).try_into().expect("6"),
            src_ip: rng.bytes(4).try_into().expect("4"),
            dst_ip: rng.bytes(4).try_into().expect("4"),
            udp_sport: rng.next_u64() as u16,
            dest_qp: rng.below(1 << 24) as u32,
            qpn: rng.below(1 << Q) as u32,
            psn,
            msn: rng.below(1 << 24) as u32,
            iova: BASE + rng.below((MEM - len as usize) as u64 + 1),
            len,
            pmtu,
        }
    }

    /// The packets the model sends (`exec_read`) with their payloads from `mem`, and
    /// the DMA read of each packet that has a payload.
    fn expected(&self, mem: &[u8]) -> Vec<(Record, Option<(u64, usize)>)> {
        read_response_packets(self.psn, self.len, 128 << self.pmtu, self.msn)
            .into_iter()
            .map(|p| {
                let at = (self.iova - BASE) as usize + p.offset as usize;
                // MIDDLE sends no AETH: the record's (unsent) AETH fields are the job's.
                let (syndrome, msn) = p.aeth.unwrap_or((SYNDROME_ACK as u8, self.msn));
                let rec = Record {
                    dst_mac: self.dst_mac,
                    src_mac: self.src_mac,
                    src_ip: self.src_ip,
                    dst_ip: self.dst_ip,
                    udp_sport: self.udp_sport,
                    opcode: p.opcode,
                    se: false,
                    ack_req: false,
                    dest_qp: self.dest_qp,
                    psn: p.psn,
                    va: 0,
                    rkey: 0,
                    dma_len: 0,
                    swap_add: 0,
                    compare: 0,
                    orig: 0,
                    syndrome,
                    msn,
                    imm: 0,
                    payload: mem[at..at + p.len as usize].to_vec(),
                    src_qp: self.qpn,
                };
                let dma = (p.len > 0).then_some((self.iova + u64::from(p.offset), p.len as usize));
                (rec, dma)
            })
            .collect()
    }

    fn drive(&self, u: &mut ReadResp<Q>) {
        u.job_hdr.dst_mac.next = be(&self.dst_mac).into();
        u.job_hdr.src_mac.next = be(&self.src_mac).into();
        u.job_hdr.src_ip.next = be(&self.src_ip).into();
        u.job_hdr.dst_ip.next = be(&self.dst_ip).into();
        u.job_hdr.udp_sport.next = u64::from(self.udp_sport).into();
        u.job_hdr.dest_qp.next = u64::from(self.dest_qp).into();
        u.job_hdr.qpn.next = u64::from(self.qpn).into();
        u.job_hdr.psn.next = u64::from(self.psn).into();
        u.job_hdr.msn.next = u64::from(self.msn).into();
        u.job_args.iova.next = self.iova.into();
        u.job_args.len.next = u64::from(self.len).into();
        u.job_args.pmtu.next = u64::from(self.pmtu).into();
    }
}

/// The bench's DMA read port over a host memory array: requests taken as `ready_pct`
/// allows, each answered `latency` cycles later, beats offered as `valid_pct` allows;
/// a read touching `fault` is refused (one `err` beat).
struct Dma {
    mem: Vec<u8>,
    latency: u64,
    fault: Option<(u64, u64)>,
    pending: VecDeque<(u64, u64, usize, u64)>,
    beats: VecDeque<(Bits<DATA_BITS>, bool, bool, u64)>,
    on: Option<(Bits<DATA_BITS>, bool, bool, u64)>,
    log: Vec<(u64, usize)>,
}

impl Dma {
    fn new(rng: &mut Rng, latency: u64) -> Dma {
        Dma {
            mem: rng.bytes(MEM),
            latency,
            fault: None,
            pending: VecDeque::new(),
            beats: VecDeque::new(),
            on: None,
            log: vec![],
        }
    }

    fn refused(&self, addr: u64, len: usize) -> bool {
        self.fault
            .is_some_and(|(a, n)| addr < a + n && a < addr + len as u64)
    }

    fn drive(&mut self, u: &mut ReadResp<Q>, rng: &mut Rng, p: Pattern, now: u64) {
        if self.beats.is_empty() {
            if let Some(&(at, addr, len, tag)) = self.pending.front() {
                if at <= now {
                    self.pending.pop_front();
                    if self.refused(addr, len) {
                        self.beats.push_back((Bits::default(), true, true, tag));
                    } else {
                        let off = (addr - BASE) as usize;
                        let n = len.div_ceil(BEAT_BYTES);
                        for i in 0..n {
                            let mut lanes = [0u8; BEAT_BYTES];
                            let from = off + i * BEAT_BYTES;
                            let to = (from + BEAT_BYTES).min(off + len);
                            lanes[..to - from].copy_from_slice(&self.mem[from..to]);
                            self.beats
                                .push_back((beat_from_bytes(&lanes), i + 1 == n, false, tag));
                        }
                    }
                }
            }
        }
        if self.on.is_none() && !self.beats.is_empty() && rng.percent(p.valid_pct) {
            self.on = self.beats.pop_front();
        }
        let (data, last, err, tag) = self.on.unwrap_or_default();
        u.dma_rd.resp_valid.next = self.on.is_some();
        u.dma_rd.resp_data.next = data;
        u.dma_rd.resp_last.next = last;
        u.dma_rd.resp_err.next = err;
        u.dma_rd.resp_tag.next = tag.into();
        u.dma_rd.req_ready.next = rng.percent(p.ready_pct);
    }

    /// After settling: the handshakes of this cycle.
    fn observe(&mut self, u: &ReadResp<Q>, now: u64) {
        if u.dma_rd.req_valid.val() && u.dma_rd.req_ready.val() {
            let addr = u.dma_rd.req_addr.val().to_u64();
            let len = u.dma_rd.req_len.val().to_u64() as usize;
            assert!((1..=4096).contains(&len), "DMA read of {len} bytes");
            self.log.push((addr, len));
            let tag = u.dma_rd.req_tag.val().to_u64();
            self.pending.push_back((now + self.latency, addr, len, tag));
        }
        if u.dma_rd.resp_valid.val() && u.dma_rd.resp_ready.val() {
            self.on = None;
        }
    }

    fn idle(&self) -> bool {
        self.pending.is_empty() && self.beats.is_empty() && self.on.is_none()
    }
}

/// What came out.
#[derive(Default)]
struct Out {
    records: Vec<Record>,
    errors: Vec<(u32, u32)>,
    /// Cycle each job was taken, each record was taken, each payload beat was taken.
    job_at: Vec<u64>,
    rec_at: Vec<u64>,
    beat_at: Vec<u64>,
}

fn new_bench() -> Bench<ReadResp<Q>> {
    let mut b = Bench::new(ReadResp::<Q>::default(), |u| &mut u.clock);
    b.uut.reset.next = true;
    b.tick();
    b.tick();
    b.uut.reset.next = false;
    b
}

/// Runs `jobs` through the block under `p` (sources `valid_pct`, sinks `ready_pct`).
fn run(jobs: &[Job], dma: &mut Dma, p: Pattern, seed: u64) -> Out {
    let mut rng = Rng::new(seed);
    let mut b = new_bench();
    let mut queue: VecDeque<&Job> = jobs.iter().collect();
    let mut job_on: Option<&Job> = None;
    let mut rec_wait: VecDeque<Bits<RECORD_BITS>> = VecDeque::new();
    let mut pays: VecDeque<Vec<u8>> = VecDeque::new();
    let mut beats: Vec<u8> = vec![];
    let mut raw: Vec<Bits<RECORD_BITS>> = vec![];
    let mut out = Out::default();
    let mut quiet = 0;
    let limit =
        b.cycle() + 5000 + 200 * jobs.iter().map(|j| u64::from(j.len) / 64 + 4).sum::<u64>();
    while !queue.is_empty() || job_on.is_some() || !dma.idle() || quiet < 40 {
        assert!(b.cycle() < limit, "no progress (seed {seed})");
        let now = b.cycle();
        if job_on.is_none() && !queue.is_empty() && rng.percent(p.valid_pct) {
            job_on = queue.pop_front();
            job_on.expect("job").drive(&mut b.uut);
        }
        b.uut.s_job_valid.next = job_on.is_some();
        dma.drive(&mut b.uut, &mut rng, p, now);
        b.uut.pkt.ready.next = rng.percent(p.ready_pct);
        b.uut.pay.tready.next = rng.percent(p.ready_pct);
        b.settle();
        let u = &b.uut;
        dma.observe(u, now);
        quiet += 1;
        if u.s_job_valid.val() && u.s_job_ready.val() {
            job_on = None;
            out.job_at.push(now);
        }
        if u.pkt.valid.val() && u.pkt.ready.val() {
            quiet = 0;
            raw.push(u.pkt.data.val());
            out.rec_at.push(now);
        }
        if u.pay.tvalid.val() && u.pay.tready.val() {
            quiet = 0;
            beats.extend(bytes_from_bits(u.pay.tdata.val()));
            out.beat_at.push(now);
            if u.pay.tlast.val() {
                pays.push_back(std::mem::take(&mut beats));
            }
        }
        if u.m_err_valid.val() {
            out.errors.push((
                u.m_err_qpn.val().to_u64() as u32,
                u.m_err_psn.val().to_u64() as u32,
            ));
        }
        b.tick();
    }
    assert!(beats.is_empty(), "a payload without tlast (seed {seed})");
    rec_wait.extend(raw);
    for r in rec_wait {
        let len = (0..16).fold(0usize, |a, i| {
            a | (usize::from(
                r.get_bit(rocenic_hdl::tx::tx_arbiter::field_offset("payload_len") + i),
            ) << i)
        });
        let payload = if len == 0 {
            vec![]
        } else {
            let mut p = pays.pop_front().expect("a payload stream per record");
            assert_eq!(
                p.len(),
                len.div_ceil(BEAT_BYTES) * BEAT_BYTES,
                "beats of a payload"
            );
            p.truncate(len);
            p
        };
        out.records.push(unpack_record(&r, payload));
    }
    assert!(
        pays.is_empty(),
        "payload streams without records (seed {seed})"
    );
    out
}

/// Checks `out` against the model: every job's packets (up to a refused read, then
/// the error), byte-identical frames, and the DMA reads covering exactly the bytes.
fn check(jobs: &[Job], dma: &Dma, out: &Out, what: &str) {
    let mut recs = out.records.iter();
    let mut errs = out.errors.iter();
    let mut reads = dma.log.iter().peekable();
    for (j, job) in jobs.iter().enumerate() {
        let want = job.expected(&dma.mem);
        let failed = want
            .iter()
            .position(|(_, d)| d.is_some_and(|(a, n)| dma.refused(a, n)));
        let sent = failed.unwrap_or(want.len());
        for (i, (w, _)) in want[..sent].iter().enumerate() {
            let got = recs
                .next()
                .unwrap_or_else(|| panic!("{what}: job {j} packet {i} missing"));
            assert_eq!(got, w, "{what}: job {j} ({job:?}) packet {i}");
            assert_eq!(got.frame(), w.frame(), "{what}: job {j} packet {i} frame");
        }
        if failed.is_some() {
            assert_eq!(
                errs.next(),
                Some(&(job.qpn, job.psn)),
                "{what}: job {j} error report"
            );
        }
        // Reads: every packet's with a payload; after a refusal, a prefix through it.
        let mut n = 0;
        for (_, d) in &want {
            let Some(d) = d else { continue };
            if failed.is_some() && reads.peek() != Some(&d) {
                break;
            }
            assert_eq!(reads.next(), Some(d), "{what}: job {j} DMA read {n}");
            n += 1;
        }
        if let Some(f) = failed {
            let need = want[..=f].iter().filter(|(_, d)| d.is_some()).count();
            assert!(n >= need, "{what}: job {j} read through the refused packet");
        }
    }
    assert_eq!(recs.next(), None, "{what}: extra records");
    assert_eq!(errs.next(), None, "{what}: extra error reports");
    assert_eq!(reads.next(), None, "{what}: extra DMA reads");
}

#[test]
fn responses_match_the_model_under_every_pattern() {
    for (i, p) in Pattern::SWEEP.into_iter().enumerate() {
        let seed = 0x5EAD + i as u64;
        let mut rng = Rng::new(seed);
        let max_len = if p.ready_pct < 20 { 2048 } else { 16384 };
        let jobs: Vec<Job> = (0..14).map(|_| Job::random(&mut rng, max_len)).collect();
        let latency = rng.below(30);
        let mut dma = Dma::new(&mut rng, latency);
        let out = run(&jobs, &mut dma, p, seed);
        check(&jobs, &dma, &out, &format!("pattern {p:?}"));
    }
}

#[test]
fn a_refused_read_stops_its_job_and_is_reported() {
    let mut reported = 0;
    for (i, p) in [Pattern::SWEEP[0], Pattern::SWEEP[3], Pattern::SWEEP[2]]
        .into_iter()
        .enumerate()
    {
        let seed = 0xE44 + i as u64;
        let mut rng = Rng::new(seed);
        let jobs: Vec<Job> = (0..10).map(|_| Job::random(&mut rng, 12288)).collect();
        let mut dma = Dma::new(&mut rng, 20);
        // A refused range inside the longest job, past its first packet sometimes.
        let j = (0..jobs.len()).max_by_key(|&j| jobs[j].len).expect("jobs");
        let at = jobs[j].iova + rng.below(u64::from(jobs[j].len));
        dma.fault = Some((at, 1 + rng.below(64)));
        let out = run(&jobs, &mut dma, p, seed);
        check(&jobs, &dma, &out, &format!("refused read, pattern {p:?}"));
        reported += out.errors.len();
    }
    assert!(reported >= 3, "every run reports its refused read");
}

#[test]
fn line_rate_with_a_250_cycle_dma_latency() {
    let full = Pattern {
        valid_pct: 100,
        ready_pct: 100,
    };
    let mut rng = Rng::new(0x250);
    // Zero-length READs: the record 3 cycles after the job.
    let mut jobs: Vec<Job> = (0..4).map(|_| Job::random(&mut rng, 0)).collect();
    let mut dma = Dma::new(&mut rng, 250);
    let out = run(&jobs, &mut dma, full, 1);
    check(&jobs, &dma, &out, "zero-length");
    assert_eq!(out.rec_at[0] - out.job_at[0], 3, "zero-length READ latency");
    assert_eq!(
        out.rec_at[3] - out.rec_at[0],
        3,
        "a zero-length READ per cycle"
    );
    for (pmtu, min_rate) in [(1, 60.0), (5, 62.0)] {
        for j in &mut jobs {
            *j = Job::random(&mut rng, 16384);
            j.len = 16384;
            j.iova = BASE + rng.below((MEM - 16384) as u64);
            j.pmtu = pmtu;
        }
        dma = Dma::new(&mut rng, 250);
        let out = run(&jobs, &mut dma, full, 2);
        check(&jobs, &dma, &out, &format!("pmtu {pmtu}"));
        let first = out.rec_at[0] - out.job_at[0];
        let beats = out.beat_at.len() as f64;
        let span = (out.beat_at[out.beat_at.len() - 1] - out.beat_at[0] + 1) as f64;
        let rate = 64.0 * beats / span;
        println!(
            "PMTU {}: first record {first} cycles after the job; {rate:.1} payload bytes/cycle",
            128 << pmtu
        );
        assert_eq!(first, 251, "the record with the first beat");
        assert!(
            rate >= min_rate,
            "sustained rate {rate:.1} at PMTU {}",
            128 << pmtu
        );
    }
}
