//! [`AtomicUnit`] against the model's `atomic_result` and replay cache: random atomics,
//! duplicates and DMA faults on several QPs, under backpressure.

use std::collections::VecDeque;

use rocenic_hdl::bench::{Bench, Pattern, Rng};
use rocenic_hdl::common::icrc::{beat_from_bytes, BEAT_BYTES};
use rocenic_hdl::responder::atomic_unit::*;
use rocenic_hdl::tx::hdr_build::model::unpack_record;
use rocenic_hdl::tx::hdr_build::model::Record;
use rocenic_hdl::tx::tx_leaves::bytes_from_bits;
use rocenic_model::{atomic_result, NO_CREDIT};
use rocenic_proto::wire::{Opcode, Syndrome};

const Q: usize = 3;
const QS: usize = Q + 4;
/// Host memory: `WORDS` u64 words from IOVA `BASE`.
const BASE: u64 = 0x0000_1000_2000_0000;
const WORDS: usize = 48;

#[test]
fn the_depth_is_the_models() {
    assert_eq!(REPLAY_DEPTH, rocenic_model::REPLAY_DEPTH);
}

/// The header of an ACK.
#[derive(Clone, Debug)]
struct Hdr {
    dst_mac: [u8; 6],
    src_mac: [u8; 6],
    src_ip: [u8; 4],
    dst_ip: [u8; 4],
    udp_sport: u16,
    dest_qp: u32,
    qpn: u32,
    psn: u32,
    msn: u32,
}

fn be(b: &[u8]) -> u64 {
    b.iter().fold(0u64, |a, &x| (a << 8) | u64::from(x))
}

impl Hdr {
    fn random(rng: &mut Rng, qpn: u32, psn: u32) -> Hdr {
        Hdr {
            dst_mac: rng.bytes(6).try_into().expect("6"),
            src_mac: rng.bytes(6).try_into().expect("6"),
            src_ip: rng.bytes(4).try_into().expect("4"),
            dst_ip: rng.bytes(4).try_into().expect("4"),
            udp_sport: rng.next_u64() as u16,
            dest_qp: rng.below(1 << 24) as u32,
            qpn,
            psn,
            msn: rng.below(1 << 24) as u32,
        }
    }

    /// The model's `atomic_reply` for this header.
    fn ack(&self, orig: u64) -> Record {
        Record {
            dst_mac: self.dst_mac,
            src_mac: self.src_mac,
            src_ip: self.src_ip,
            dst_ip: self.dst_ip,
            udp_sport: self.udp_sport,
            opcode: Opcode::AtomicAcknowledge,
            se: false,
            ack_req: false,
            dest_qp: self.dest_qp,
            psn: self.psn,
            va: 0,
            rkey: 0,
            dma_len: 0,
            swap_add: 0,
            compare: 0,
            orig,
            syndrome: u8::from(Syndrome::Ack { credits: NO_CREDIT }),
            msn: self.msn,
            imm: 0,
            payload: vec![],
            src_qp: self.qpn,
        }
    }
}

#[derive(Clone, Debug)]
enum Op {
    Atomic {
        h: Hdr,
        word: usize,
        compare_swap: bool,
        swap_add: u64,
        compare: u64,
    },
    Replay(Hdr),
}

#[derive(Debug, PartialEq)]
enum Outcome {
    Ack(Record),
    Err(u32, u32),
    Miss,
}

macro_rules! drive_hdr {
    ($u:expr, $h:expr, $p:ident) => {
        paste_hdr!($u, $h, $p)
    };
}

macro_rules! paste_hdr {
    ($u:expr, $h:expr, job) => {{
        $u.job_hdr.dst_mac.next = be(&$h.dst_mac).into();
        $u.job_hdr.src_mac.next = be(&$h.src_mac).into();
        $u.job_hdr.src_ip.next = be(&$h.src_ip).into();
        $u.job_hdr.dst_ip.next = be(&$h.dst_ip).into();
        $u.job_hdr.udp_sport.next = u64::from($h.udp_sport).into();
        $u.job_hdr.dest_qp.next = u64::from($h.dest_qp).into();
        $u.job_hdr.qpn.next = u64::from($h.qpn).into();
        $u.job_hdr.psn.next = u64::from($h.psn).into();
        $u.job_hdr.msn.next = u64::from($h.msn).into();
    }};
    ($u:expr, $h:expr, replay) => {{
        $u.replay_hdr.dst_mac.next = be(&$h.dst_mac).into();
        $u.replay_hdr.src_mac.next = be(&$h.src_mac).into();
        $u.replay_hdr.src_ip.next = be(&$h.src_ip).into();
        $u.replay_hdr.dst_ip.next = be(&$h.dst_ip).into();
        $u.replay_hdr.udp_sport.next = u64::from($h.udp_sport).into();
        $u.replay_hdr.dest_qp.next = u64::from($h.dest_qp).into();
        $u.replay_hdr.qpn.next = u64::from($h.qpn).into();
        $u.replay_hdr.psn.next = u64::from($h.psn).into();
        $u.replay_hdr.msn.next = u64::from($h.msn).into();
    }};
}

/// The bench's DMA port over `WORDS` words; reads of `rd_fault`, writes of `wr_fault`
/// refused. Every request is logged.
struct Dma {
    mem: Vec<u64>,
    rd_fault: Vec<usize>,
    wr_fault: Vec<usize>,
    rd_pending: Option<(u64, u64)>,
    rd_on: Option<(u64, bool)>,
    wr_addr: Option<u64>,
    wr_status: Option<(u64, bool)>,
    reads: Vec<u64>,
    writes: Vec<(u64, u64)>,
}

impl Dma {
    fn word(addr: u64) -> usize {
        assert_eq!(addr % 8, 0, "an atomic is aligned");
        let w = ((addr - BASE) / 8) as usize;
        assert!(w < WORDS, "address {addr:#x} outside the bench's memory");
        w
    }

    fn drive(&mut self, u: &mut AtomicUnit<Q, QS>, rng: &mut Rng, p: Pattern, now: u64) {
        if let Some((at, addr)) = self.rd_pending {
            if at <= now && rng.percent(p.valid_pct) {
                self.rd_pending = None;
                let w = Self::word(addr);
                self.rd_on = Some(if self.rd_fault.contains(&w) {
                    (0, true)
                } else {
                    (self.mem[w], false)
                });
            }
        }
        let (v, err) = self.rd_on.unwrap_or_default();
        let mut lanes = [0u8; BEAT_BYTES];
        lanes[..8].copy_from_slice(&v.to_le_bytes());
        u.dma_rd.resp_valid.next = self.rd_on.is_some();
        u.dma_rd.resp_data.next = beat_from_bytes(&lanes);
        u.dma_rd.resp_err.next = err;
        u.dma_rd.resp_last.next = true;
        u.dma_rd.resp_tag.next = 0u64.into();
        u.dma_rd.req_ready.next = self.rd_pending.is_none() && rng.percent(p.ready_pct);
        u.dma_wr.req_ready.next = self.wr_addr.is_none() && rng.percent(p.ready_pct);
        u.dma_wr.data_ready.next = self.wr_addr.is_some() && rng.percent(p.ready_pct);
        let status = matches!(self.wr_status, Some((at, _)) if at <= now);
        u.dma_wr.status_valid.next = status;
        u.dma_wr.status_err.next = self.wr_status.is_some_and(|(_, e)| e);
        if status {
            self.wr_status = None;
        }
    }

    fn observe(&mut self, u: &AtomicUnit<Q, QS>, rng: &mut Rng, now: u64) {
        if u.dma_rd.req_valid.val() && u.dma_rd.req_ready.val() {
            let addr = u.dma_rd.req_addr.val().to_u64();
            assert_eq!(u.dma_rd.req_len.val().to_u64(), 8, "read length");
            self.reads.push(addr);
            self.rd_pending = Some((now + 1 + rng.below(12), addr));
        }
        if u.dma_rd.resp_valid.val() && u.dma_rd.resp_ready.val() {
            self.rd_on = None;
        }
        if u.dma_wr.req_valid.val() && u.dma_wr.req_ready.val() {
            assert_eq!(u.dma_wr.req_len.val().to_u64(), 8, "write length");
            self.wr_addr = Some(u.dma_wr.req_addr.val().to_u64());
        }
        if u.dma_wr.data_valid.val() && u.dma_wr.data_ready.val() {
            let addr = self.wr_addr.take().expect("data after its request");
            assert_eq!(u.dma_wr.data_keep.val().to_u64(), 0xff, "write keep");
            assert!(u.dma_wr.data_last.val(), "one beat");
            let lanes = bytes_from_bits(u.dma_wr.data.val());
            let v = u64::from_le_bytes(lanes[..8].try_into().expect("8"));
            self.writes.push((addr, v));
            let w = Self::word(addr);
            let err = self.wr_fault.contains(&w);
            if !err {
                self.mem[w] = v;
            }
            self.wr_status = Some((now + 1 + rng.below(12), err));
        }
    }
}

/// The model: memory and each QP's replay cache (`qp.resp.replay`).
struct Model {
    mem: Vec<u64>,
    replay: Vec<VecDeque<(u32, u64)>>,
}

impl Model {
    fn exec(&mut self, op: &Op, dma: &Dma) -> Outcome {
        match op {
            Op::Atomic {
                h,
                word,
                compare_swap,
                swap_add,
                compare,
            } => {
                if dma.rd_fault.contains(word) {
                    return Outcome::Err(h.qpn, h.psn);
                }
                let orig = self.mem[*word];
                let new = atomic_result(*compare_swap, orig, *swap_add, *compare);
                if dma.wr_fault.contains(word) {
                    return Outcome::Err(h.qpn, h.psn);
                }
                self.mem[*word] = new;
                let r = &mut self.replay[h.qpn as usize];
                if r.len() == rocenic_model::REPLAY_DEPTH {
                    r.pop_front();
                }
                r.push_back((h.psn, orig));
                Outcome::Ack(h.ack(orig))
            }
            Op::Replay(h) => match self.replay[h.qpn as usize].iter().find(|e| e.0 == h.psn) {
                Some(&(_, orig)) => Outcome::Ack(h.ack(orig)),
                None => Outcome::Miss,
            },
        }
    }
}

/// `count` random operations: atomics on a few QPs (more than 16 on some), replays of
/// remembered, forgotten and never-seen PSNs, clears of other QPs meanwhile.
fn run(p: Pattern, seed: u64, count: usize, faults: bool) -> [usize; 5] {
    let mut rng = Rng::new(seed);
    let mut b = Bench::new(AtomicUnit::<Q, QS>::default(), |u| &mut u.clock);
    b.uut.reset.next = true;
    b.tick();
    b.uut.reset.next = false;
    let mem: Vec<u64> = (0..WORDS).map(|_| rng.next_u64()).collect();
    let pick = |rng: &mut Rng| rng.below(WORDS as u64) as usize;
    let mut dma = Dma {
        mem: mem.clone(),
        rd_fault: if faults {
            vec![pick(&mut rng), pick(&mut rng)]
        } else {
            vec![]
        },
        wr_fault: if faults {
            vec![pick(&mut rng), pick(&mut rng)]
        } else {
            vec![]
        },
        rd_pending: None,
        rd_on: None,
        wr_addr: None,
        wr_status: None,
        reads: vec![],
        writes: vec![],
    };
    let mut model = Model {
        mem,
        replay: vec![VecDeque::new(); 1 << Q],
    };
    let mut next_psn: Vec<u32> = (0..1 << Q).map(|_| rng.below(1 << 24) as u32).collect();
    let mut done: Vec<Vec<u32>> = vec![vec![]; 1 << Q];
    // [acks of atomics, errors, replay hits, replay misses, clears]
    let mut seen = [0usize; 5];
    for n in 0..count {
        // Two busy QPs get most of the traffic, so their caches wrap.
        let qpn = if rng.percent(70) {
            rng.below(2)
        } else {
            rng.below(1 << Q)
        } as u32;
        let q = qpn as usize;
        let op = if rng.percent(35) && !done[q].is_empty() || rng.percent(5) {
            let psn = match rng.below(10) {
                0..=5 if !done[q].is_empty() => {
                    // Recent ones hit, older ones were evicted.
                    let back = rng.below(done[q].len().min(24) as u64) as usize;
                    done[q][done[q].len() - 1 - back]
                }
                _ => rng.below(1 << 24) as u32,
            };
            Op::Replay(Hdr::random(&mut rng, qpn, psn))
        } else {
            let psn = next_psn[q];
            next_psn[q] = (psn + 1 + rng.below(3) as u32) & 0xff_ffff;
            done[q].push(psn);
            Op::Atomic {
                h: Hdr::random(&mut rng, qpn, psn),
                word: pick(&mut rng),
                compare_swap: rng.percent(50),
                swap_add: rng.next_u64(),
                compare: if rng.percent(50) {
                    0 // replaced by the word's value below, so the swap happens
                } else {
                    rng.next_u64()
                },
            }
        };
        let op = match op {
            Op::Atomic {
                h,
                word,
                compare_swap,
                swap_add,
                compare: 0,
            } => Op::Atomic {
                compare: model.mem[word],
                h,
                word,
                compare_swap,
                swap_add,
            },
            op => op,
        };
        // Sometimes a clear of another QP while this one runs (a new QP there).
        let clear = rng.percent(15).then(|| {
            (
                (qpn + 1 + rng.below((1 << Q) - 1) as u32) % (1 << Q),
                rng.below(14),
            )
        });
        if let Some((c, _)) = clear {
            model.replay[c as usize].clear();
            seen[4] += 1;
        }
        let want = model.exec(&op, &dma);
        let (reads, writes) = (dma.reads.len(), dma.writes.len());

        let start = b.cycle();
        let mut taken = false;
        let mut got = None;
        let mut offer = false;
        loop {
            let now = b.cycle();
            assert!(now - start < 400, "op {n} stuck (seed {seed}): {op:?}");
            let u = &mut b.uut;
            offer |= !taken && rng.percent(p.valid_pct);
            u.s_job_valid.next = false;
            u.s_replay_valid.next = false;
            match &op {
                Op::Atomic {
                    h,
                    word,
                    compare_swap,
                    swap_add,
                    compare,
                } => {
                    drive_hdr!(u, h, job);
                    u.job_args.iova.next = (BASE + 8 * *word as u64).into();
                    u.job_args.compare_swap.next = *compare_swap;
                    u.job_args.swap_add.next = (*swap_add).into();
                    u.job_args.compare.next = (*compare).into();
                    u.s_job_valid.next = offer && !taken;
                }
                Op::Replay(h) => {
                    drive_hdr!(u, h, replay);
                    u.s_replay_valid.next = offer && !taken;
                }
            }
            let clearing = clear.is_some_and(|(_, at)| now - start == at);
            u.clear.valid.next = clearing;
            u.clear.qpn.next = u64::from(clear.map_or(0, |c| c.0)).into();
            dma.drive(u, &mut rng, p, now);
            u.pkt.ready.next = rng.percent(p.ready_pct);
            b.settle();
            let u = &b.uut;
            if (u.s_job_valid.val() && u.s_job_ready.val())
                || (u.s_replay_valid.val() && u.s_replay_ready.val())
            {
                taken = true;
            }
            dma.observe(u, &mut rng, now);
            let mut outcome = None;
            if u.pkt.valid.val() && u.pkt.ready.val() {
                outcome = Some(Outcome::Ack(unpack_record(&u.pkt.data.val(), vec![])));
            }
            if u.m_err_valid.val() {
                assert!(outcome.is_none());
                outcome = Some(Outcome::Err(
                    u.m_err_qpn.val().to_u64() as u32,
                    u.m_err_psn.val().to_u64() as u32,
                ));
            }
            if u.m_replay_miss.val() {
                assert!(outcome.is_none());
                outcome = Some(Outcome::Miss);
            }
            if outcome.is_some() {
                assert!(got.is_none(), "op {n}: a second outcome (seed {seed})");
                got = outcome;
            }
            b.tick();
            let clear_done = clear.is_none_or(|(_, at)| b.cycle() - start > at);
            if got.is_some() && clear_done {
                break;
            }
        }
        let got = got.expect("outcome");
        assert_eq!(got, want, "op {n} (seed {seed}): {op:?}");
        if let Outcome::Ack(r) = &got {
            assert_eq!(
                r.frame(),
                match &want {
                    Outcome::Ack(w) => w.frame(),
                    _ => unreachable!(),
                }
            );
        }
        // DMA: an atomic reads its word once, and writes it once unless the read failed.
        match &op {
            Op::Atomic { word, .. } => {
                let addr = BASE + 8 * *word as u64;
                assert_eq!(&dma.reads[reads..], &[addr], "op {n}: the read");
                let wrote = &dma.writes[writes..];
                if dma.rd_fault.contains(word) {
                    assert!(wrote.is_empty(), "op {n}: no write after a failed read");
                } else {
                    assert_eq!(wrote.len(), 1, "op {n}: the write");
                    assert_eq!(wrote[0].0, addr);
                }
            }
            Op::Replay(_) => {
                assert_eq!((dma.reads.len(), dma.writes.len()), (reads, writes));
            }
        }
        assert_eq!(dma.mem, model.mem, "op {n}: memory");
        seen[match (&op, &got) {
            (Op::Atomic { .. }, Outcome::Ack(_)) => 0,
            (_, Outcome::Err(..)) => 1,
            (Op::Replay(_), Outcome::Ack(_)) => 2,
            _ => 3,
        }] += 1;
    }
    seen
}

#[test]
fn atomics_and_replays_match_the_model() {
    let mut seen = [0usize; 5];
    for (i, p) in Pattern::SWEEP.into_iter().enumerate() {
        let s = run(p, 0xA70 + i as u64, 120, i % 2 == 1);
        for (a, b) in seen.iter_mut().zip(s) {
            *a += b;
        }
    }
    println!("atomic ACKs, errors, replay hits, replay misses, clears: {seen:?}");
    assert!(
        seen.iter().all(|&n| n >= 10),
        "every outcome reached: {seen:?}"
    );
}
