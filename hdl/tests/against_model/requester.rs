//! The differential bench of the transmit half: random send WQEs posted on two QPs of the
//! RustHDL simulation of [`Requester`] and of the behavioural model (`rocenic_model::Nic`,
//! set up through its command mailbox and doorbells as a driver would), no response fed to
//! either, compared after each round.
//!
//! The RTL's surroundings are simulated from the model's own rules: the context tables
//! (answers one cycle after the request; `qpr` writes land in them; a connection leaves
//! them as the command engine's MODIFY_QP does), the lkey check (the model's
//! `Tables::translate` over the same MRs), DMA over the same host memory (two mapped
//! regions, anything else faults), random valid/ready on every port.
//!
//! Compared per round and QP: every request frame byte for byte and in order (the RTL's
//! records built into frames by `HdrBuild`'s reference, `hdr_build::model::Record`), the
//! send CQEs (the model's CQ rings, WR_FLUSH_ERR ones too: the flush of the rest of the SQ
//! when the QP enters the error state), the
//! QP-error event against the model's QP state, `next_psn` against QUERY_QP's `sq_psn`,
//! and the op ring: one op per fetched WQE with its `wr_id`, PSNs back to back from the
//! connection's first PSN, every frame the model sent inside its op's PSN range.
//!
//! Without a peer every stream stays within the 1024-PSN window (messages of at most a few
//! packets), so the model and the RTL agree without ACKs; the window rule is exercised by
//! [`long_message_matches_the_model`] (a message longer than the window, with a peer).

use crate::responder::diff::{
    cq_ring, key_of, set, u48, val, Host, Model, BUF_BASE, CQ_LOG, LOCAL_IP, LOCAL_MAC, MRS,
    OTHER_PDN, PDN,
};
use rocenic_hdl::bench::{Bench, Rng};
use rocenic_hdl::common::icrc::beat_from_bytes;
use rocenic_hdl::control::ctx_tables::{
    qpa_layout, qpc_layout, qpr_layout, QpaEntry, QpcEntry, QprEntry,
};
use rocenic_hdl::prelude::*;
use rocenic_hdl::requester::*;
use rocenic_hdl::tx::hdr_build::model::unpack_record;
use rocenic_hdl::tx::tx_arbiter::RECORD_BITS;
use rocenic_hdl::tx::tx_leaves::bytes_from_bits;
use rocenic_hdl::QP_LOG;
use rocenic_model::{Mr, Nic, NicConfig, Tables};
use rocenic_proto::abi::cmd::{
    qp_attr, CmdOpcode, CqArgs, CreateQpArgs, ModifyQpArgs, MrArgs, PdArgs,
};
use rocenic_proto::abi::cqe::Cqe;
use rocenic_proto::abi::regs::{self, Counter};
use rocenic_proto::abi::verbs::{send_flags, QpState, WcOpcode, WcStatus, WrOpcode};
use rocenic_proto::abi::wqe::{RecvWqe, SendWqe, Sge};
use rocenic_proto::device::{Device, Frame};
use rocenic_proto::wire::RoceRepr;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// Our two QPs, each with its own send CQ.
const QPS: [u32; 2] = [5, 9];
/// SQ entries (32): room for more WQEs than the op ring's 16, so that with responses the
/// ring limit is reached.
const SQ_LOG: u32 = 5;

/// The SQ ring of QP `i` (in the mapped buffer, clear of every MR).
fn sq_ring(i: usize) -> u64 {
    BUF_BASE + 0x3_0000 + 0x800 * i as u64
}

/// The peer NIC's IPv4 address.
const PEER_IP: [u8; 4] = [10, 0, 2, 1];

/// The connection both sides are given (RTR then RTS).
#[derive(Clone, Copy, Debug)]
struct Conn {
    pmtu_code: u8,
    sq_psn: u32,
    dest_qpn: u32,
    dest_mac: [u8; 6],
    dest_ip: [u8; 4],
    udp_sport: u16,
    max_rd: u8,
    /// The local ACK timeout (31 unless the timing is slow: [`TIMEOUT_LOSS`]).
    timeout: u8,
    /// `retry_cnt` and `rnr_retry` (7 unless a bench of retry exhaustion lowers them).
    retry_cnt: u8,
    rnr_retry: u8,
}

/// The ACK timeout with losses: 4.096 us * 2^3, 8192 cycles.
const TIMEOUT_LOSS: u8 = 3;
/// Quiet cycles that end a run with losses: past two ACK timeouts.
const QUIET_LOSS: u32 = 3000 + 2 * (1024 << TIMEOUT_LOSS);

impl Conn {
    fn random(rng: &mut Rng, qpn: u32) -> Conn {
        let sq_psn = if rng.percent(30) {
            0xff_ffe0 + rng.below(32) as u32
        } else {
            rng.below(1 << 24) as u32
        };
        Conn {
            pmtu_code: 1 + rng.below(5) as u8,
            sq_psn,
            dest_qpn: PEER_QP_BASE + qpn,
            dest_mac: [0x02, 0, 0, 0, 0x20, qpn as u8],
            dest_ip: PEER_IP,
            udp_sport: 0xc000 | rng.below(0x4000) as u16,
            max_rd: [0, 1, 2, 4, 16][rng.below(5) as usize],
            timeout: 31,
            retry_cnt: 7,
            rnr_retry: 7,
        }
    }
    fn pmtu(&self) -> u32 {
        128 << self.pmtu_code
    }
}

/// A long message's buffers on both sides: MR 6 (every right) over a third mapped region,
/// room for 1280 packets of 256 bytes (longer than the 1024-PSN window).
const BIG_BASE: u64 = 0x100_0000;
const BIG_LEN: usize = 0x5_0000;
const BIG_MR: (u32, u32, u64, u64, u64, u32) = (
    6,
    rocenic_proto::abi::verbs::access::ALL,
    0xC000_0000,
    BIG_BASE,
    BIG_LEN as u64,
    PDN,
);

/// The bench's MRs: the responder bench's and [`BIG_MR`].
fn all_mrs() -> Vec<(u32, u32, u64, u64, u64, u32)> {
    MRS.iter().copied().chain([BIG_MR]).collect()
}

/// A WRITE of 1100 to 1199 packets at PMTU 256 from our MR 6 to the peer's.
fn long_write(rng: &mut Rng, wr_id: u64) -> SendWqe {
    let len = 1100 * 256 + rng.below(99 * 256) as u32;
    let room = BIG_LEN as u64 - u64::from(len);
    SendWqe {
        wr_id,
        opcode: WrOpcode::RdmaWrite,
        flags: send_flags::SIGNALED,
        remote_addr: BIG_MR.2 + rng.below(room),
        rkey: key_of(BIG_MR.0),
        num_sge: 1,
        sge: Sge {
            addr: BIG_MR.2 + rng.below(room),
            length: len,
            lkey: key_of(BIG_MR.0),
        },
        ..SendWqe::default()
    }
}

/// The QP a request frame is for (its BTH's destination QP).
fn frame_dest(f: &[u8]) -> u32 {
    u32::from_be_bytes([0, f[47], f[48], f[49]])
}

/// The PSN of a request frame.
fn frame_psn(f: &[u8]) -> u32 {
    u32::from_be_bytes([0, f[51], f[52], f[53]])
}

/// The peer's QPs: its QP `PEER_QP_BASE + qpn` answers our QP `qpn`.
const PEER_QP_BASE: u32 = 0x40;
/// The peer's receive buffer of the QP of index `i` (its MR 1) and RQ ring.
fn peer_rq_ring(i: usize) -> u64 {
    BUF_BASE + 0x3_2000 + 0x1000 * i as u64
}
const PEER_RQ_LOG: u32 = 6;

/// A response as the RTL's receive port takes it: the record's fields and the payload.
#[derive(Clone, Debug)]
struct Rsp {
    qpn: u32,
    opcode: u8,
    psn: u32,
    syndrome: Option<u8>,
    orig: Option<u64>,
    payload: Vec<u8>,
    src_ip: [u8; 4],
}

impl Rsp {
    fn parse(f: &[u8]) -> Rsp {
        let (r, payload) = RoceRepr::parse(f).expect("the peer's frame parses");
        Rsp {
            qpn: r.bth.dest_qp,
            opcode: u8::from(r.bth.opcode),
            psn: u32::from(r.bth.psn),
            syndrome: r.ext.aeth.map(|a| u8::from(a.syndrome)),
            orig: r.ext.atomic_ack_eth.map(|a| a.orig_remote_data),
            payload: payload.to_vec(),
            src_ip: r.ip.src_addr.0,
        }
    }
}

/// The fault rule of `faults_match_the_model`, applied alike on the model's and on the
/// RTL's link to its peer: the first time a frame of a (direction, QP, PSN) passes, a hash
/// of the seed and that key decides whether it is held back for a while (so later frames
/// overtake it: the peer sees a PSN gap and NAKs a sequence error; a READ response arrives
/// out of order) or passes twice (a duplicate); every later frame of the same key passes
/// as it is, so retransmissions get through. Nothing is lost (the ACK timer is not
/// exercised): every held frame is released.
#[derive(Default)]
struct Shim {
    on: bool,
    seed: u64,
    seen: BTreeSet<(bool, u32, u32)>,
    /// Held frames: (cycles left, a request, the frame).
    held: Vec<(u32, bool, Frame)>,
    /// Frames held back and frames duplicated.
    delayed: usize,
    duplicated: usize,
    /// Losses on (a frame's first pass dropped now and then), and the frames dropped.
    loss: bool,
    lost: usize,
    /// The peer goes silent: requests to peer QP `k` from PSN `v` on are dropped, every
    /// pass (retransmissions too), so only the ACK timer and its retries end them.
    cut: BTreeMap<u32, u32>,
    /// The peer's receives for our QP of index 1 are posted this many cycles into the run
    /// (RNR NAKs until then; `u32::MAX`: never); the cycles of the run so far.
    late_post: Option<u32>,
    cycles: u32,
    /// Slow timing (ACK timeout [`TIMEOUT_LOSS`], [`QUIET_LOSS`] quiet cycles): losses,
    /// a silent peer, RNR waits.
    slow: bool,
}

impl Shim {
    fn new(on: bool, seed: u64) -> Shim {
        Shim {
            on,
            seed,
            ..Shim::default()
        }
    }

    /// Passes frame `f` (a request when `req`) on to `out`: now, later, or twice.
    fn pass(&mut self, req: bool, f: Frame, out: &mut VecDeque<Frame>) {
        let key = (req, frame_dest(&f), frame_psn(&f));
        if let Some(&from) = self.cut.get(&key.1).filter(|_| req) {
            if key.2.wrapping_sub(from) & 0xff_ffff < 0x80_0000 {
                self.lost += 1;
                return;
            }
        }
        if !self.on || !self.seen.insert(key) {
            out.push_back(f);
            return;
        }
        let mut x = self.seed ^ (u64::from(req) << 60 | u64::from(key.1) << 24 | u64::from(key.2));
        // splitmix64
        x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        x ^= x >> 31;
        if self.loss && (x >> 40) % 100 < 6 {
            self.lost += 1;
            return;
        }
        match x % 100 {
            0..=5 => {
                self.delayed += 1;
                self.held.push((40 + (x >> 8) as u32 % 400, req, f));
            }
            6..=8 => {
                self.duplicated += 1;
                out.push_back(f.clone());
                out.push_back(f);
            }
            _ => out.push_back(f),
        }
    }

    /// The late receives are still to be posted in this run.
    fn post_due(&self) -> bool {
        self.late_post
            .is_some_and(|t| t != u32::MAX && self.cycles < t)
    }

    /// One cycle: the held frames due now, (a request, frame).
    fn tick(&mut self) -> Vec<(bool, Frame)> {
        let mut due = Vec::new();
        self.held.retain_mut(|h| {
            h.0 = h.0.saturating_sub(1);
            if h.0 == 0 {
                due.push((h.1, std::mem::take(&mut h.2)));
            }
            h.0 > 0
        });
        due
    }
}

/// A random send WQE: every opcode (and unknown ones), inline, zero to a few packets at
/// `pmtu`, and now and then an invalid one (bad lkey, foreign PD, out of range, READ into
/// an MR without LOCAL_WRITE, too long inline, inline READ, two SGEs, short atomic).
fn random_wqe(rng: &mut Rng, pmtu: u32, wr_id: u64, stats: &mut Stats) -> SendWqe {
    let ops = [
        WrOpcode::RdmaWrite,
        WrOpcode::RdmaWriteWithImm,
        WrOpcode::Send,
        WrOpcode::SendWithImm,
        WrOpcode::RdmaRead,
        WrOpcode::AtomicCmpAndSwp,
        WrOpcode::AtomicFetchAndAdd,
        WrOpcode::SendWithInv,
    ];
    let opcode = if rng.percent(4) {
        WrOpcode::from([7u8, 8, 10, 0x80, 0xff][rng.below(5) as usize])
    } else {
        ops[rng.below(ops.len() as u64) as usize]
    };
    let mut flags = 0;
    if rng.percent(50) {
        flags |= send_flags::SIGNALED;
    }
    if rng.percent(30) {
        flags |= send_flags::SOLICITED;
    }
    if rng.percent(8) {
        flags |= send_flags::FENCE;
    }
    let mut w = SendWqe {
        wr_id,
        opcode,
        flags,
        imm_or_inv: rng.next_u64() as u32,
        remote_addr: rng.next_u64(),
        rkey: rng.next_u64() as u32,
        compare_add: rng.next_u64(),
        swap: rng.next_u64(),
        ..SendWqe::default()
    };
    let sendlike = !matches!(
        opcode,
        WrOpcode::RdmaRead | WrOpcode::AtomicCmpAndSwp | WrOpcode::AtomicFetchAndAdd
    );
    if (sendlike && rng.percent(25)) || rng.percent(2) {
        w.flags |= send_flags::INLINE;
        w.inline_len = if rng.percent(6) {
            33 + rng.below(30) as u8
        } else {
            rng.below(33) as u8
        };
        let b = rng.bytes(32);
        w.inline.copy_from_slice(&b);
        stats.inline += 1;
        return w;
    }
    w.num_sge = match rng.below(100) {
        0..=3 => 0,
        4..=6 => 2,
        _ => 1,
    };
    let atomic = opcode.is_atomic();
    let len = if atomic {
        if rng.percent(7) {
            4
        } else {
            8
        }
    } else {
        match rng.below(5) {
            0 => rng.below(64) as u32,
            1 => pmtu - 1 + rng.below(3) as u32,
            2 => 2 * pmtu + rng.below(pmtu as u64) as u32,
            _ => rng.below(3 * u64::from(pmtu) + 2) as u32,
        }
    };
    // MR 2 (every right) mostly; MR 1 (LOCAL_WRITE); MR 3 (REMOTE_READ only); MR 5
    // (another PD); a key that names nothing; a range past the MR's end.
    let (mr, bad_key, past) = match rng.below(100) {
        0..=69 => (2, false, false),
        70..=83 => (1, false, false),
        84..=88 => (3, false, false),
        89..=92 => (5, false, false),
        93..=96 => (2, true, false),
        _ => (2, false, true),
    };
    let &(index, _, va, _, length, _) = MRS.iter().find(|m| m.0 == mr).expect("an MR");
    let room = length - u64::from(len);
    let mut off = rng.below(room + 1);
    if atomic {
        off &= !7;
    }
    if past {
        off = length - u64::from(len) / 2 + 1;
    }
    w.sge = Sge {
        addr: va + off,
        length: len,
        lkey: if bad_key {
            rng.next_u64() as u32 | 0x8000_0000
        } else {
            key_of(index)
        },
    };
    w
}

/// Whether `[addr, addr + len)` lies in the MR of `index`.
fn inside_mr(index: u32, addr: u64, len: u32) -> bool {
    let &(_, _, va, _, length, _) = MRS.iter().find(|m| m.0 == index).expect("an MR");
    addr >= va && addr + u64::from(len) <= va + length
}

/// A send WQE for the bench with a peer: [`random_wqe`] aimed at the peer's MR 2 (WRITE,
/// READ, atomic), in a half of its own per QP (the two QPs interleave differently on the
/// two sides: their targets must not overlap), now and then with an rkey that names
/// nothing or past the MR's end (the peer NAKs). A valid READ/atomic lands in a quarter of
/// MR 1 of its own, which no WQE reads a payload from (the sides read payloads at
/// different times); a SEND/WRITE from MR 1 reads MR 2 instead. A SEND with invalidate
/// (of a key the peer does not have) mostly becomes a SEND. Errors are rarer than in
/// [`random_wqe`] (95% of the WQEs are made valid), so that most rounds run to the end.
fn random_wqe_rx(rng: &mut Rng, pmtu: u32, wr_id: u64, i: usize, stats: &mut Stats) -> SendWqe {
    let mut w = random_wqe(rng, pmtu, wr_id, stats);
    if w.opcode == WrOpcode::SendWithInv && rng.percent(80) {
        w.opcode = WrOpcode::Send;
    }
    if rng.percent(95) {
        // valid: a known opcode, short inline SEND/WRITE only, one SGE inside MR 2
        if let WrOpcode::Unknown(_) = w.opcode {
            w.opcode = WrOpcode::RdmaWrite;
        }
        let read_like = w.opcode == WrOpcode::RdmaRead || w.opcode.is_atomic();
        if w.is_inline() && !read_like {
            w.inline_len = w.inline_len.min(32);
        } else {
            w.flags &= !send_flags::INLINE;
            let len = if w.opcode.is_atomic() {
                8
            } else if w.num_sge == 1 {
                w.sge.length
            } else {
                rng.below(2 * u64::from(pmtu)) as u32
            };
            w.num_sge = 1;
            w.sge = Sge {
                addr: 0x8000_0000 + (rng.below(0x8000) & !7),
                length: len,
                lkey: key_of(2),
            };
        }
    }
    let read_like = w.opcode == WrOpcode::RdmaRead || w.opcode.is_atomic();
    let len = w.length();
    let half = 0x8000u64;
    let mut off = rng.below(half.saturating_sub(u64::from(len)) + 1);
    if w.opcode.is_atomic() {
        off &= !7;
    }
    w.remote_addr = 0x8000_0000 + half * i as u64 + off;
    w.rkey = key_of(2);
    match rng.below(100) {
        0 => w.rkey = rng.next_u64() as u32 | 0x8000_0000,
        1 => w.remote_addr = 0x8000_0000 + 0x1_0000 + 8 * rng.below(4),
        _ => {}
    }
    if w.is_inline() || w.num_sge != 1 {
        return w;
    }
    let sge = w.sge;
    let valid = (sge.lkey == key_of(1) && inside_mr(1, sge.addr, sge.length))
        || (sge.lkey == key_of(2) && inside_mr(2, sge.addr, sge.length));
    if read_like && valid && sge.length <= 0x4000 {
        let mut off = rng.below(0x4000 - u64::from(sge.length) + 1);
        if w.opcode.is_atomic() {
            off &= !7;
        }
        w.sge.addr = 0x7000_0000 + 0x4000 * i as u64 + off;
        w.sge.lkey = key_of(1);
    } else if !read_like && sge.lkey == key_of(1) && valid {
        w.sge.addr = 0x8000_0000 + (sge.addr - 0x7000_0000);
        w.sge.lkey = key_of(2);
    }
    w
}

/// What the streams exercised (asserted at the end so the bench cannot go blind).
#[derive(Default, Debug)]
struct Stats {
    frames: usize,
    opcodes: BTreeMap<u8, usize>,
    cqes: BTreeMap<u8, usize>,
    inline: usize,
    multi: usize,
    wrapped: usize,
    qp_errs: usize,
    /// Rounds that ended with a QP's fetch held back by max_rd_atomic / by FENCE.
    blocked_rd: usize,
    blocked_fence: usize,
    flushed: usize,
    /// With a peer: responses fed to the RTL, DMA writes it made (READ/atomic results),
    /// rounds whose op ring held 16 ops, QPs that ended a round healthy and empty.
    responses: usize,
    dma_writes: usize,
    ring_full: usize,
    drained: usize,
    /// Completions by WC opcode (successes only).
    ok_by_op: BTreeMap<u8, usize>,
    /// The RTL's receive counter pulses by code.
    rx_cnts: BTreeMap<u8, usize>,
    /// With faults: frames held back and duplicated (both sides), request frames the RTL
    /// sent again (a PSN it had sent before on the QP).
    delayed: usize,
    duplicated: usize,
    retransmits: usize,
    /// With losses: frames lost (both sides), the RTL's AckTimeouts and Retransmits pulses.
    lost: usize,
    timeouts: usize,
    rtx_pulses: usize,
    /// Long messages (past the window) whose first 1024 packets, and no more, left
    /// before any response came.
    long_msgs: usize,
    /// RNR NAKs the model received (the RTL's are held near them).
    rnr_naks: usize,
}

impl Stats {
    /// Adds another run's figures.
    fn add(&mut self, o: Stats) {
        self.frames += o.frames;
        self.inline += o.inline;
        self.multi += o.multi;
        self.wrapped += o.wrapped;
        self.qp_errs += o.qp_errs;
        self.blocked_rd += o.blocked_rd;
        self.blocked_fence += o.blocked_fence;
        self.flushed += o.flushed;
        self.responses += o.responses;
        self.dma_writes += o.dma_writes;
        self.ring_full += o.ring_full;
        self.drained += o.drained;
        self.delayed += o.delayed;
        self.duplicated += o.duplicated;
        self.retransmits += o.retransmits;
        self.lost += o.lost;
        self.timeouts += o.timeouts;
        self.rtx_pulses += o.rtx_pulses;
        self.long_msgs += o.long_msgs;
        self.rnr_naks += o.rnr_naks;
        for (m, from) in [
            (&mut self.opcodes, o.opcodes),
            (&mut self.cqes, o.cqes),
            (&mut self.ok_by_op, o.ok_by_op),
            (&mut self.rx_cnts, o.rx_cnts),
        ] {
            for (k, v) in from {
                *m.entry(k).or_default() += v;
            }
        }
    }
}

/// The RTL and its simulated surroundings.
/// Payload reads in flight: (cycles to wait, tag, beats or a fault).
type SegReads = VecDeque<(u32, u64, Option<Vec<[u8; 64]>>)>;

struct Rtl {
    b: Bench<Requester<QP_LOG, { QP_LOG + 4 }>>,
    qpc: Vec<QpcEntry>,
    qpa: Vec<QpaEntry>,
    qpr: Vec<QprEntry>,
    tables: Tables,
    host: Host,
    rng: Rng,
    /// Percent of cycles a source is valid / a sink ready.
    pat: u32,
    /// Everything in flight between the block and its surroundings. It persists across
    /// rounds and read-backs: the block never stops (its scan keeps reading the tables,
    /// fetching held-back WQEs and checking their lkeys), so every cycle it is clocked,
    /// between rounds too, must answer its requests as the real tables and DMA would.
    io: Io,
    /// The responder model that answers the block's requests (the bench with a peer).
    peer: Option<Model>,
    /// The faults on the link to the peer.
    shim: Shim,
    /// Cycles to hold the responses back at the start of the next run (0: as usual).
    hold_next: u32,
}

/// A WQE read in flight: latency left, tag, its beats (None: refused).
type WqeRead = (u32, u64, Option<Vec<[u8; 64]>>);

/// See [`Rtl::io`].
#[derive(Default)]
struct Io {
    /// QPs to clear, doorbells to ring, in order.
    clr: VecDeque<u32>,
    dbs: VecDeque<(u32, u32)>,
    /// Table reads taken last cycle (qpc, qpa, qpr), answered this cycle.
    rd: [Option<usize>; 3],
    /// MR check: (cycles to wait, result).
    mr: Option<(u32, Option<u64>)>,
    /// WQE read: (cycles to wait, tag, beats or fault).
    wqe_rd: Option<WqeRead>,
    /// Payload reads in order.
    seg_rd: SegReads,
    /// Records waiting for their payload: (record, payload bytes, payload so far).
    recs: VecDeque<(Bits<RECORD_BITS>, usize, Vec<u8>)>,
    /// Responses for the block (the peer's frames), and the payloads of those it took.
    rsp: VecDeque<Rsp>,
    pay: VecDeque<Vec<u8>>,
    /// The DMA write in progress: (address, length, bytes so far); statuses due (cycles
    /// to wait, ok).
    wr: Option<(u64, usize, Vec<u8>)>,
    wst: VecDeque<(u32, bool)>,
    /// Request frames on their way to the peer.
    to_peer: VecDeque<Frame>,
    /// Cycles before responses are offered (held back in some rounds, so that the op
    /// ring fills up).
    hold: u32,
    out: RtlOut,
}

/// What the RTL did in one round.
#[derive(Default)]
struct RtlOut {
    frames: Vec<Frame>,
    cqes: Vec<(u32, Cqe)>,
    qp_errs: Vec<u32>,
    /// Receive counter pulses: (code, per QP, QPN).
    rx_cnts: Vec<(u8, bool, u32)>,
    responses: usize,
    dma_writes: usize,
    /// The most ops a `qpr` write-back left in a QP's ring.
    max_ring: u64,
    /// Frames sent when the responses held back at the start were let go.
    at_release: Option<usize>,
    /// AckTimeouts and Retransmits pulses.
    timeouts: usize,
    rtx_pulses: usize,
}

impl Rtl {
    fn maybe(&mut self) -> bool {
        self.rng.percent(self.pat)
    }

    /// Runs until the block has been quiet for a while; `dbs` are rung in order, `clr`
    /// QPs cleared first.
    fn run(&mut self, clr: &[u32], dbs: &[(u32, u32)]) -> RtlOut {
        self.io.clr.extend(clr.iter().copied());
        self.io.dbs.extend(dbs.iter().copied());
        if self.hold_next > 0 {
            self.io.hold = std::mem::take(&mut self.hold_next);
        } else if self.peer.is_some() && self.rng.percent(50) {
            self.io.hold = 3000;
        }
        let mut quiet = 0;
        self.shim.cycles = 0;
        let (quiet_max, steps) = if self.shim.slow {
            (QUIET_LOSS, 3_000_000)
        } else {
            (3000, 200_000)
        };
        for _ in 0..steps {
            self.shim.cycles += 1;
            if self.shim.late_post == Some(self.shim.cycles) {
                post_peer_recvs(self.peer.as_mut().expect("a peer"), 1);
            }
            let busy = self.step((0, 0));
            // (A WQE held back by max_rd_atomic or FENCE is read again at each scan visit:
            // WQE reads and MR checks do not count as activity.)
            let io = &self.io;
            let idle = io.clr.is_empty()
                && io.dbs.is_empty()
                && io.seg_rd.is_empty()
                && io.recs.is_empty()
                && io.rsp.is_empty()
                && io.pay.is_empty()
                && io.wr.is_none()
                && io.wst.is_empty()
                && io.to_peer.is_empty()
                && io.hold == 0
                && self.shim.held.is_empty()
                && !self.shim.post_due();
            quiet = if busy || !idle { 0 } else { quiet + 1 };
            // A full scan of the 256 QPs is about 2000 cycles.
            if quiet > quiet_max {
                return std::mem::take(&mut self.io.out);
            }
        }
        panic!(
            "the Requester did not go quiet: {} clears, {} doorbells, {} segment reads, {} records waiting; state {} serr_pend {} db_ready {} clr_ready {}",
            self.io.clr.len(),
            self.io.dbs.len(),
            self.io.seg_rd.len(),
            self.io.recs.len(),
            self.b.uut.state.q.val().to_u64(),
            self.b.uut.serr_pend.q.val(),
            self.b.uut.sq_db.ready.val(),
            self.b.uut.qp_clr.ready.val(),
        );
    }

    /// One clock cycle of the block and its surroundings, the walk port addressed at
    /// `op` (QPN, slot); whether anything the bench counts as activity happened.
    fn step(&mut self, op: (u32, u64)) -> bool {
        let Io {
            mut clr,
            mut dbs,
            mut rd,
            mut mr,
            mut wqe_rd,
            mut seg_rd,
            mut recs,
            mut rsp,
            mut pay,
            mut wr,
            mut wst,
            mut to_peer,
            mut hold,
            mut out,
        } = std::mem::take(&mut self.io);
        let mut busy = false;
        let rdy: Vec<bool> = (0..16).map(|_| self.maybe()).collect();
        let lat = 2 + self.rng.below(30) as u32;
        let u = &mut self.b.uut;
        u.local_mac.next = u48(LOCAL_MAC).into();
        u.local_ip.next = u64::from(u32::from_be_bytes(LOCAL_IP)).into();
        u.qp_clr.valid.next = !clr.is_empty();
        u.qp_clr.qpn.next = u64::from(clr.front().copied().unwrap_or(0)).into();
        let db = dbs.front().copied().filter(|_| clr.is_empty() && rdy[11]);
        u.sq_db.valid.next = db.is_some();
        u.sq_db.qpn.next = u64::from(db.map_or(0, |d| d.0)).into();
        u.sq_db.pi.next = u64::from(db.map_or(0, |d| d.1)).into();
        u.qpc_rd.req_ready.next = rdy[0];
        u.qpa_rd.req_ready.next = rdy[1];
        u.qpr_rd.req_ready.next = rdy[2];
        u.qpc_rd.resp_valid.next = rd[0].is_some();
        u.qpc_rd.resp_data.next = self.qpc[rd[0].unwrap_or(0)];
        u.qpa_rd.resp_valid.next = rd[1].is_some();
        u.qpa_rd.resp_data.next = self.qpa[rd[1].unwrap_or(0)];
        u.qpr_rd.resp_valid.next = rd[2].is_some();
        u.qpr_rd.resp_data.next = self.qpr[rd[2].unwrap_or(0)];
        u.qpr_wr.ready.next = rdy[3];
        u.mr.req_ready.next = mr.is_none() && rdy[4];
        let mr_res = mr.filter(|m| m.0 == 0);
        u.mr.res_valid.next = mr_res.is_some();
        u.mr.res_ok.next = mr_res.is_some_and(|r| r.1.is_some());
        u.mr.res_iova.next = mr_res.and_then(|r| r.1).unwrap_or(0).into();
        u.wqe_rd.req_ready.next = wqe_rd.is_none() && rdy[5];
        let wresp = wqe_rd.as_ref().filter(|r| r.0 == 0);
        u.wqe_rd.resp_valid.next = wresp.is_some();
        u.wqe_rd.resp_err.next = wresp.is_some_and(|r| r.2.is_none());
        u.wqe_rd.resp_last.next = wresp
            .and_then(|r| r.2.as_ref())
            .is_none_or(|beats| beats.len() == 1);
        u.wqe_rd.resp_tag.next = wresp.map_or(0, |r| r.1).into();
        u.wqe_rd.resp_data.next = beat_from_bytes(
            &wresp
                .and_then(|r| r.2.as_ref())
                .map_or([0; 64], |beats| beats[0]),
        );
        u.seg_rd.req_ready.next = seg_rd.len() < 24 && rdy[6];
        let sresp = seg_rd.front().filter(|r| r.0 == 0 && rdy[7]);
        u.seg_rd.resp_valid.next = sresp.is_some();
        u.seg_rd.resp_tag.next = sresp.map_or(0, |r| r.1).into();
        u.seg_rd.resp_err.next = sresp.is_some_and(|r| r.2.is_none());
        let (sdata, slast) = match sresp.map(|r| &r.2) {
            Some(Some(beats)) => (beats[0], beats.len() == 1),
            _ => ([0; 64], true),
        };
        u.seg_rd.resp_data.next = beat_from_bytes(&sdata);
        u.seg_rd.resp_last.next = slast;
        u.pkt.ready.next = rdy[8];
        u.pay.tready.next = rdy[9];
        u.cqe.ready.next = rdy[10];
        u.s_op_rd_qpn.next = u64::from(op.0).into();
        u.s_op_rd_slot.next = op.1.into();
        // responses, their payloads, the DMA writes of the results
        if hold == 1 {
            out.at_release = Some(out.frames.len());
        }
        hold = hold.saturating_sub(1);
        let cur = rsp.front().filter(|_| rdy[12] && hold == 0);
        u.rsp.valid.next = cur.is_some();
        u.rsp.qpn.next = u64::from(cur.map_or(0, |r| r.qpn)).into();
        u.rsp.opcode.next = u64::from(cur.map_or(0, |r| r.opcode)).into();
        u.rsp.psn.next = u64::from(cur.map_or(0, |r| r.psn)).into();
        u.rsp.has_aeth.next = cur.is_some_and(|r| r.syndrome.is_some());
        u.rsp.syndrome.next = u64::from(cur.and_then(|r| r.syndrome).unwrap_or(0)).into();
        u.rsp.has_atomic_ack.next = cur.is_some_and(|r| r.orig.is_some());
        u.rsp.orig.next = cur.and_then(|r| r.orig).unwrap_or(0).into();
        u.rsp.payload_len.next = (cur.map_or(0, |r| r.payload.len()) as u64).into();
        u.rsp.src_ip.next = u64::from(cur.map_or(0, |r| u32::from_be_bytes(r.src_ip))).into();
        let beat = pay.front().filter(|_| rdy[13]);
        u.rsp_pay.tvalid.next = beat.is_some();
        let mut bytes = [0u8; 64];
        let n = beat.map_or(0, |p| p.len().min(64));
        if let Some(p) = beat {
            bytes[..n].copy_from_slice(&p[..n]);
        }
        u.rsp_pay.tdata.next = beat_from_bytes(&bytes);
        u.rsp_pay.tkeep.next = (if n == 64 { u64::MAX } else { (1u64 << n) - 1 }).into();
        u.rsp_pay.tlast.next = beat.is_some_and(|p| p.len() <= 64);
        u.dma_wr.req_ready.next = wr.is_none() && rdy[14];
        u.dma_wr.data_ready.next = rdy[15];
        let st = wst.front().filter(|w| w.0 == 0);
        u.dma_wr.status_valid.next = st.is_some();
        u.dma_wr.status_err.next = st.is_some_and(|w| !w.1);
        self.b.settle();

        let u = &mut self.b.uut;
        if u.qp_clr.valid.val() && u.qp_clr.ready.val() {
            clr.pop_front();
            busy = true;
        }
        if u.sq_db.valid.val() && u.sq_db.ready.val() {
            dbs.pop_front();
            busy = true;
        }
        // context tables: the answer one cycle after the request
        let mut next_rd = [None; 3];
        if u.qpc_rd.req_valid.val() && u.qpc_rd.req_ready.val() {
            next_rd[0] = Some(u.qpc_rd.req_addr.val().to_u64() as usize);
        }
        if u.qpa_rd.req_valid.val() && u.qpa_rd.req_ready.val() {
            next_rd[1] = Some(u.qpa_rd.req_addr.val().to_u64() as usize);
        }
        if u.qpr_rd.req_valid.val() && u.qpr_rd.req_ready.val() {
            next_rd[2] = Some(u.qpr_rd.req_addr.val().to_u64() as usize);
        }
        if u.qpr_wr.valid.val() && u.qpr_wr.ready.val() {
            let e = u.qpr_wr.data.val();
            self.qpr[u.qpr_wr.addr.val().to_u64() as usize] = e;
            let f = qpr_layout::FIELDS;
            let held = val(&e, f, "sq_fetch").wrapping_sub(val(&e, f, "sq_ci")) & 0xffff_ffff;
            out.max_ring = out.max_ring.max(held);
            busy = true;
        }
        if u.mr.req_valid.val() && u.mr.req_ready.val() {
            let res = self
                .tables
                .translate(
                    u.mr.req_key.val().to_u32(),
                    u.mr.req_pdn.val().to_u32(),
                    u.mr.req_va.val().to_u64(),
                    u.mr.req_len.val().to_u64(),
                    u.mr.req_need.val().to_u32(),
                )
                .ok();
            mr = Some((2, res));
        } else if let Some(m) = mr.as_mut() {
            m.0 = m.0.saturating_sub(1);
        }
        if u.mr.res_valid.val() && u.mr.res_ready.val() {
            mr = None;
        }
        if u.wqe_rd.resp_valid.val() && u.wqe_rd.resp_ready.val() {
            match wqe_rd.as_mut().and_then(|r| r.2.as_mut()) {
                Some(beats) if beats.len() > 1 => {
                    beats.remove(0);
                }
                _ => {
                    wqe_rd = None;
                }
            }
        } else if let Some(r) = wqe_rd.as_mut() {
            r.0 = r.0.saturating_sub(1);
        }
        if u.wqe_rd.req_valid.val() && u.wqe_rd.req_ready.val() {
            let addr = u.wqe_rd.req_addr.val().to_u64();
            let len = u.wqe_rd.req_len.val().to_u64() as usize;
            assert!(
                len.is_multiple_of(64)
                    && (64..=64 * rocenic_hdl::requester::wqe_fetch::BUF as usize).contains(&len),
                "WQE reads are 1 to BUF slots"
            );
            let mut raw = vec![0u8; len];
            let ok = self.host.read(addr, &mut raw);
            wqe_rd = Some((
                lat,
                u.wqe_rd.req_tag.val().to_u64(),
                ok.then(|| raw.chunks(64).map(|c| c.try_into().expect("64")).collect()),
            ));
        }
        if u.seg_rd.resp_valid.val() && u.seg_rd.resp_ready.val() {
            let f = seg_rd.front_mut().expect("a response");
            match &mut f.2 {
                Some(beats) if beats.len() > 1 => {
                    beats.remove(0);
                }
                _ => {
                    seg_rd.pop_front();
                }
            }
        }
        for r in seg_rd.iter_mut() {
            r.0 = r.0.saturating_sub(1);
        }
        if u.seg_rd.req_valid.val() && u.seg_rd.req_ready.val() {
            let addr = u.seg_rd.req_addr.val().to_u64();
            let len = u.seg_rd.req_len.val().to_u64() as usize;
            let mut buf = vec![0u8; len];
            let ok = self.host.read(addr, &mut buf);
            let beats = ok.then(|| {
                buf.chunks(64)
                    .map(|c| {
                        let mut b = [0u8; 64];
                        b[..c.len()].copy_from_slice(c);
                        b
                    })
                    .collect::<Vec<_>>()
            });
            seg_rd.push_back((lat, u.seg_rd.req_tag.val().to_u64(), beats));
            busy = true;
        }
        if u.pkt.valid.val() && u.pkt.ready.val() {
            let rec = u.pkt.data.val();
            let plen = crate::responder::diff::get(
                &rec,
                rocenic_hdl::tx::tx_arbiter::field_offset("payload_len"),
                16,
            ) as usize;
            recs.push_back((rec, plen, Vec::new()));
            busy = true;
        }
        if u.pay.tvalid.val() && u.pay.tready.val() {
            let r = recs
                .iter_mut()
                .find(|r| r.2.len() < r.1)
                .expect("a payload beat for a record with payload");
            let bytes = bytes_from_bits(u.pay.tdata.val());
            let take = (r.1 - r.2.len()).min(64);
            r.2.extend_from_slice(&bytes[..take]);
            assert_eq!(
                u.pay.tlast.val(),
                r.2.len() == r.1,
                "tlast on the payload's last beat"
            );
            busy = true;
        }
        while recs.front().is_some_and(|r| r.2.len() == r.1) {
            let (rec, _, pay) = recs.pop_front().expect("checked");
            let frame = unpack_record(&rec, pay).frame();
            if self.peer.is_some() {
                self.shim.pass(true, frame.clone(), &mut to_peer);
            }
            out.frames.push(frame);
        }
        if u.rsp.valid.val() && u.rsp.ready.val() {
            let r = rsp.pop_front().expect("offered");
            if !r.payload.is_empty() {
                pay.push_back(r.payload);
            }
            out.responses += 1;
            busy = true;
        }
        if u.rsp_pay.tvalid.val() && u.rsp_pay.tready.val() {
            let p = pay.front_mut().expect("offered");
            if p.len() <= 64 {
                pay.pop_front();
            } else {
                p.drain(..64);
            }
            busy = true;
        }
        if u.dma_wr.status_valid.val() {
            wst.pop_front();
        }
        for w in wst.iter_mut() {
            w.0 = w.0.saturating_sub(1);
        }
        if u.dma_wr.data_valid.val() && u.dma_wr.data_ready.val() {
            let (addr, len, data) = wr.as_mut().expect("a DMA write's data after its request");
            let keep = u.dma_wr.data_keep.val().to_u64();
            let n = keep.count_ones() as usize;
            assert_eq!(
                keep,
                if n == 64 { u64::MAX } else { (1 << n) - 1 },
                "tkeep from lane 0"
            );
            data.extend_from_slice(&bytes_from_bits(u.dma_wr.data.val())[..n]);
            let last = u.dma_wr.data_last.val();
            assert_eq!(last, data.len() >= *len, "last on the write's last beat");
            if last {
                assert_eq!(data.len(), *len, "the write's length");
                let ok = self.host.write(*addr, data);
                wst.push_back((lat, ok));
                wr = None;
                out.dma_writes += 1;
            }
            busy = true;
        }
        if u.dma_wr.req_valid.val() && u.dma_wr.req_ready.val() {
            assert!(wr.is_none());
            wr = Some((
                u.dma_wr.req_addr.val().to_u64(),
                u.dma_wr.req_len.val().to_u64() as usize,
                Vec::new(),
            ));
            busy = true;
        }
        if u.cnt.ack_timeouts.val() {
            out.timeouts += 1;
        }
        if u.cnt.retransmits.val() {
            out.rtx_pulses += 1;
        }
        if u.rx_cnt.valid.val() {
            out.rx_cnts.push((
                u.rx_cnt.code.val().to_u64() as u8,
                u.rx_cnt.per_qp.val(),
                u.rx_cnt.qpn.val().to_u32(),
            ));
        }
        if u.cqe.valid.val() && u.cqe.ready.val() {
            out.cqes.push((
                u.cqe.cqn.val().to_u32(),
                Cqe {
                    wr_id: u.cqe.wr_id.val().to_u64(),
                    byte_len: u.cqe.byte_len.val().to_u32(),
                    imm_or_inv: u.cqe.imm.val().to_u32(),
                    qp_num: u.cqe.qp_num.val().to_u32(),
                    src_qp: u.cqe.src_qp.val().to_u32(),
                    wqe_index: u.cqe.wqe_index.val().to_u32(),
                    opcode: (u.cqe.opcode.val().to_u64() as u8).into(),
                    status: (u.cqe.status.val().to_u64() as u8).into(),
                    wc_flags: u.cqe.wc_flags.val().to_u64() as u8,
                    vendor_err: u.cqe.vendor_err.val().to_u64() as u8,
                    phase: 0,
                },
            ));
            busy = true;
        }
        if u.m_qp_err_valid.val() {
            // (the command engine moves the QP to ERR)
            let q = u.m_qp_err_qpn.val().to_u32();
            out.qp_errs.push(q);
            let err = u64::from(u8::from(QpState::Err));
            set(&mut self.qpa[q as usize], qpa_layout::FIELDS, "state", err);
        }
        rd = next_rd;
        self.b.tick();
        if let Some(p) = self.peer.as_mut() {
            let mut tx = Vec::new();
            p.tick(&mut to_peer, &mut tx);
            busy |= !tx.is_empty();
            let mut back = VecDeque::new();
            for f in tx {
                self.shim.pass(false, f, &mut back);
            }
            for (req, f) in self.shim.tick() {
                if req {
                    to_peer.push_back(f);
                } else {
                    back.push_back(f);
                }
            }
            rsp.extend(back.iter().map(|f| Rsp::parse(f)));
        }
        self.io = Io {
            clr,
            dbs,
            rd,
            mr,
            wqe_rd,
            seg_rd,
            recs,
            rsp,
            pay,
            wr,
            wst,
            to_peer,
            hold,
            out,
        };
        busy
    }

    /// The ops in QP `qpn`'s ring from `sq_ci` to `sq_fetch`, through the walk port.
    fn ring(&mut self, qpn: u32) -> Vec<(u64, u64, u64, u64, u64)> {
        let e = self.qpr[qpn as usize];
        let f = qpr_layout::FIELDS;
        let (ci, fetch) = (val(&e, f, "sq_ci"), val(&e, f, "sq_fetch"));
        let mut ops = Vec::new();
        for i in ci..fetch {
            // the address in before the edge, the entry out after it
            self.step((qpn, i & 15));
            let u = &self.b.uut;
            ops.push((
                u.m_op_wr_id.val().to_u64(),
                u.m_op_first_psn.val().to_u64(),
                u.m_op_npsn.val().to_u64(),
                u.m_op_done.val().to_u64(),
                u.m_op_status.val().to_u64(),
            ));
        }
        ops
    }
}

/// Both sides and the streams.
struct World {
    model: Model,
    /// The model's peer (the RTL's is `rtl.peer`), with a peer: both made alike.
    mpeer: Option<Model>,
    rtl: Rtl,
    rng: Rng,
    seed: u64,
    round: usize,
    stats: Stats,
    /// The model's receive counters at the end of the last round.
    counts: [u64; 4],
    /// The faults on the model's link to its peer (`rtl.shim` on the RTL's).
    shim: Shim,
    faults: bool,
    /// Each round, QP 5 (PMTU 256) starts with a [`long_write`].
    long: bool,
    /// Each round, every QP gets three batches of 13 WQEs, READs and atomics become WRITEs (a
    /// READ past max_rd_atomic would stop the fetch) and the responses are held back for
    /// 40 000 cycles: the requester fetches until the op ring is full.
    fill: bool,
    /// Each round, the peer goes silent for QP 9 (see [`Shim::cut`]), which has 0 to 2
    /// retries.
    silent: bool,
    /// Each round, the peer of QP 9 posts its receives this many cycles late (`u32::MAX`:
    /// never, QP 9 then has 0 to 2 RNR retries).
    rnr: Option<u32>,
}

/// The requester's receive counters the model keeps, in `ReqRxCheck`'s `CNT_*` order (1..).
const RX_COUNTERS: [Counter; 4] = [
    Counter::NaksReceived,
    Counter::RnrNaksReceived,
    Counter::Duplicates,
    Counter::MalformedDrops,
];

/// A responder model for our two QPs (its QP `PEER_QP_BASE + qpn` each, the MRs of the
/// bench, receive buffers in MR 1), on host memory `host`.
fn new_peer(host: Host) -> Model {
    let mut p = Model {
        nic: Nic::new(NicConfig::default()),
        host,
        now: 0,
        cq_seen: BTreeMap::new(),
    };
    // (its address: the source of every response, which the requester checks)
    p.nic
        .bar_write(regs::IPV4_ADDR, u32::from_be_bytes(PEER_IP));
    p.nic.bar_write(regs::CONTROL, regs::CONTROL_ENABLE);
    for pdn in [PDN, OTHER_PDN] {
        p.ok(CmdOpcode::CreatePd, PdArgs { pdn }.to_args());
    }
    for (index, acc, va, iova, length, pdn) in all_mrs() {
        let key = key_of(index);
        let args = MrArgs {
            index,
            key,
            pdn,
            access: acc,
            va,
            iova,
            length,
        };
        p.ok(CmdOpcode::RegMr, args.to_args());
    }
    for (i, &qpn) in QPS.iter().enumerate() {
        let cqn = 1 + i as u32;
        let cq = CqArgs {
            cqn,
            log_size: CQ_LOG,
            ring_iova: cq_ring(cqn),
        };
        p.ok(CmdOpcode::CreateCq, cq.to_args());
        let qp = CreateQpArgs {
            qpn: PEER_QP_BASE + qpn,
            pdn: PDN,
            send_cqn: cqn,
            recv_cqn: cqn,
            sq_iova: BUF_BASE,
            sq_log_size: 4,
            rq_iova: peer_rq_ring(i),
            rq_log_size: PEER_RQ_LOG,
        };
        p.ok(CmdOpcode::CreateQp, qp.to_args());
    }
    p
}

/// Connects the peer's QP for our QP `i` (RESET -> INIT -> RTR -> RTS, every remote right,
/// its first expected PSN ours) and posts 32 receives when `post` (else
/// [`post_peer_recvs`] does it later).
fn connect_peer(p: &mut Model, i: usize, c: Conn, post: bool) {
    let qpn = PEER_QP_BASE + QPS[i];
    let m = |mask: u32, state: QpState| ModifyQpArgs {
        qpn,
        mask,
        state: u8::from(state),
        path_mtu: c.pmtu_code,
        dest_qpn: QPS[i],
        rq_psn: c.sq_psn,
        sq_psn: 0,
        dest_mac: LOCAL_MAC,
        dest_ip: LOCAL_IP,
        udp_sport: 0xc000,
        access: rocenic_proto::abi::verbs::access::ALL,
        timeout: 31,
        retry_cnt: 7,
        rnr_retry: 7,
        min_rnr_timer: 1,
        max_rd_atomic: 16,
        max_dest_rd_atomic: 16,
    };
    for (mask, state) in [
        (qp_attr::STATE, QpState::Reset),
        (qp_attr::REQ_INIT | qp_attr::ACCESS_FLAGS, QpState::Init),
        (qp_attr::REQ_RTR | qp_attr::ACCESS_FLAGS, QpState::Rtr),
        (qp_attr::REQ_RTS, QpState::Rts),
    ] {
        p.ok(CmdOpcode::ModifyQp, m(mask, state).to_args());
    }
    if post {
        post_peer_recvs(p, i);
    }
}

/// Posts 32 receives on the peer's QP for our QP `i` (its RQ starting empty).
fn post_peer_recvs(p: &mut Model, i: usize) {
    let qpn = PEER_QP_BASE + QPS[i];
    for k in 0..32u64 {
        let r = RecvWqe {
            wr_id: k,
            num_sge: 1,
            sge: Sge {
                addr: 0x7000_0000 + 0x4000 * i as u64,
                length: 0x4000,
                lkey: key_of(1),
            },
        };
        assert!(p.host.write(peer_rq_ring(i) + 64 * k, &r.to_bytes()));
    }
    p.nic.bar_write(regs::rq_doorbell(qpn), 32);
}

impl World {
    /// `faults`: the links to the peers go through a [`Shim`] (with a peer only).
    fn new(seed: u64, with_peer: bool, faults: bool) -> World {
        let mut rng = Rng::new(seed);
        let mut host = Host::new(&mut rng);
        host.regions
            .push((BIG_BASE, Rng::new(seed ^ 0xb16).bytes(BIG_LEN)));
        let mut peer_host = Host::new(&mut Rng::new(seed ^ 0xbeef));
        peer_host
            .regions
            .push((BIG_BASE, Rng::new(seed ^ 0xb17).bytes(BIG_LEN)));
        let mpeer = with_peer.then(|| new_peer(peer_host.clone()));
        let peer = with_peer.then(|| new_peer(peer_host));
        let mut model = Model {
            nic: Nic::new(NicConfig::default()),
            host: host.clone(),
            now: 0,
            cq_seen: BTreeMap::new(),
        };
        let (hi, lo) = regs::mac_to_regs(LOCAL_MAC);
        model.nic.bar_write(regs::MAC_HI, hi);
        model.nic.bar_write(regs::MAC_LO, lo);
        model
            .nic
            .bar_write(regs::IPV4_ADDR, u32::from_be_bytes(LOCAL_IP));
        model.nic.bar_write(regs::CONTROL, regs::CONTROL_ENABLE);
        for pdn in [PDN, OTHER_PDN] {
            model.ok(CmdOpcode::CreatePd, PdArgs { pdn }.to_args());
        }
        let mut tables = Tables::new(256, 1024, 256);
        for (index, acc, va, iova, length, pdn) in all_mrs() {
            let key = key_of(index);
            model.ok(
                CmdOpcode::RegMr,
                MrArgs {
                    index,
                    key,
                    pdn,
                    access: acc,
                    va,
                    iova,
                    length,
                }
                .to_args(),
            );
            tables.mrs[index as usize] = Some(Mr {
                key,
                pdn,
                access: acc,
                va,
                iova,
                length,
                valid: true,
            });
        }
        let mut b = Bench::new(Requester::<QP_LOG, { QP_LOG + 4 }>::default(), |u| {
            &mut u.clock
        });
        b.uut.reset.next = true;
        b.tick();
        b.uut.reset.next = false;
        let n = 1 << QP_LOG;
        let pat = [100, 85, 60][rng.below(3) as usize];
        let mut w = World {
            model,
            rtl: Rtl {
                b,
                qpc: vec![QpcEntry::default(); n],
                qpa: vec![QpaEntry::default(); n],
                qpr: vec![QprEntry::default(); n],
                tables,
                host,
                rng: Rng::new(seed ^ 0x5a5a),
                pat,
                io: Io::default(),
                peer,
                shim: Shim::new(faults, seed ^ 0xfa17),
                hold_next: 0,
            },
            mpeer,
            rng,
            seed,
            round: 0,
            stats: Stats::default(),
            counts: [0; 4],
            shim: Shim::new(faults, seed ^ 0xfa17),
            faults,
            long: false,
            fill: false,
            silent: false,
            rnr: None,
        };
        for (i, &qpn) in QPS.iter().enumerate() {
            let cqn = 1 + i as u32;
            w.model.ok(
                CmdOpcode::CreateCq,
                CqArgs {
                    cqn,
                    log_size: CQ_LOG,
                    ring_iova: cq_ring(cqn),
                }
                .to_args(),
            );
            w.model.ok(
                CmdOpcode::CreateQp,
                CreateQpArgs {
                    qpn,
                    pdn: PDN,
                    send_cqn: cqn,
                    recv_cqn: cqn,
                    sq_iova: sq_ring(i),
                    sq_log_size: SQ_LOG,
                    rq_iova: BUF_BASE,
                    rq_log_size: 4,
                }
                .to_args(),
            );
            let c = &mut w.rtl.qpc[qpn as usize];
            let f = qpc_layout::FIELDS;
            set(c, f, "present", 1);
            set(c, f, "pdn", u64::from(PDN));
            set(c, f, "send_cqn", u64::from(cqn));
            set(c, f, "recv_cqn", u64::from(cqn));
            set(c, f, "sq_log", u64::from(SQ_LOG));
            set(c, f, "sq_ring", sq_ring(i) >> 6);
            set(c, f, "rq_log", 4);
            set(c, f, "rq_ring", BUF_BASE >> 6);
        }
        w
    }

    fn fail(&self, what: &str) -> ! {
        panic!(
            "Requester vs model, seed {:#x}, round {}: {what}",
            self.seed, self.round
        );
    }

    /// RESET -> INIT -> RTR -> RTS on both sides (the RTL's contexts as the command engine
    /// leaves them: `qpa` with the attributes, `qpr` with the PSNs and retry counts).
    fn connect(&mut self, i: usize, c: Conn) {
        let qpn = QPS[i];
        let m = |mask: u32, state: QpState| ModifyQpArgs {
            qpn,
            mask,
            state: u8::from(state),
            path_mtu: c.pmtu_code,
            dest_qpn: c.dest_qpn,
            rq_psn: 0,
            sq_psn: c.sq_psn,
            dest_mac: c.dest_mac,
            dest_ip: c.dest_ip,
            udp_sport: c.udp_sport,
            timeout: c.timeout,
            retry_cnt: c.retry_cnt,
            rnr_retry: c.rnr_retry,
            max_rd_atomic: c.max_rd,
            ..ModifyQpArgs::default()
        };
        for (mask, state) in [
            (qp_attr::STATE, QpState::Reset),
            (qp_attr::REQ_INIT, QpState::Init),
            (qp_attr::REQ_RTR, QpState::Rtr),
            (qp_attr::REQ_RTS, QpState::Rts),
        ] {
            self.model.ok(CmdOpcode::ModifyQp, m(mask, state).to_args());
        }
        let a = &mut self.rtl.qpa[qpn as usize];
        *a = QpaEntry::default();
        let f = qpa_layout::FIELDS;
        set(a, f, "state", u64::from(u8::from(QpState::Rts)));
        set(a, f, "pmtu", u64::from(c.pmtu_code));
        set(a, f, "dest_qpn", u64::from(c.dest_qpn));
        set(a, f, "dest_mac", u48(c.dest_mac));
        set(a, f, "dest_ip", u64::from(u32::from_be_bytes(c.dest_ip)));
        set(a, f, "udp_sport", u64::from(c.udp_sport));
        set(a, f, "timeout", u64::from(c.timeout));
        set(a, f, "retry_cnt", u64::from(c.retry_cnt));
        set(a, f, "rnr_retry", u64::from(c.rnr_retry));
        set(a, f, "max_rd_atomic", u64::from(c.max_rd));
        let r = &mut self.rtl.qpr[qpn as usize];
        *r = QprEntry::default();
        let f = qpr_layout::FIELDS;
        for name in ["next_psn", "una_psn", "sent_end"] {
            set(r, f, name, u64::from(c.sq_psn));
        }
        set(r, f, "retry_left", u64::from(c.retry_cnt));
        set(r, f, "rnr_left", u64::from(c.rnr_retry));
        let post = !(i == 1 && self.rnr.is_some());
        if let Some(p) = self.mpeer.as_mut() {
            connect_peer(p, i, c, post);
        }
        if let Some(p) = self.rtl.peer.as_mut() {
            connect_peer(p, i, c, post);
        }
    }

    /// Runs the model until it has sent nothing for a while; returns its frames.
    fn run_model(&mut self) -> Vec<Frame> {
        let mut rx = VecDeque::new();
        let mut tx = Vec::new();
        let mut quiet = 0;
        while quiet < 3000 {
            let before = tx.len();
            self.model.tick(&mut rx, &mut tx);
            quiet = if tx.len() == before { quiet + 1 } else { 0 };
        }
        tx
    }

    /// Runs the model and its peer until neither has sent anything for a while; returns
    /// the model's frames.
    fn run_model_with_peer(&mut self) -> Vec<Frame> {
        let (mut rx, mut tx) = (VecDeque::new(), Vec::new());
        let (mut prx, mut ptx) = (VecDeque::new(), Vec::new());
        let mut quiet = 0;
        let quiet_max = if self.shim.slow { QUIET_LOSS } else { 3000 };
        self.shim.cycles = 0;
        while quiet < quiet_max {
            self.shim.cycles += 1;
            if self.shim.late_post == Some(self.shim.cycles) {
                post_peer_recvs(self.mpeer.as_mut().expect("a peer"), 1);
            }
            let (a, b) = (tx.len(), ptx.len());
            self.model.tick(&mut rx, &mut tx);
            for f in &tx[a..] {
                self.shim.pass(true, f.clone(), &mut prx);
            }
            let p = self.mpeer.as_mut().expect("a peer");
            p.tick(&mut prx, &mut ptx);
            for f in &ptx[b..] {
                self.shim.pass(false, f.clone(), &mut rx);
            }
            for (req, f) in self.shim.tick() {
                if req {
                    prx.push_back(f);
                } else {
                    rx.push_back(f);
                }
            }
            let idle = tx.len() == a
                && ptx.len() == b
                && rx.is_empty()
                && prx.is_empty()
                && self.shim.held.is_empty()
                && !self.shim.post_due();
            quiet = if idle { quiet + 1 } else { 0 };
        }
        tx
    }

    /// One round: both QPs reconnected, random WQEs posted in a few batches, each batch's
    /// doorbell rung on both sides, then everything compared.
    fn round(&mut self) {
        let rx = self.mpeer.is_some();
        let mut conns: Vec<Conn> = QPS
            .iter()
            .map(|&q| Conn::random(&mut self.rng, q))
            .collect();
        if self.long {
            conns[0].pmtu_code = 1;
        }
        if self.shim.slow {
            for c in conns.iter_mut() {
                c.timeout = TIMEOUT_LOSS;
            }
        }
        // A silent peer for QP 9 from a PSN near its first on, with few retries.
        self.shim.cut.clear();
        self.rtl.shim.cut.clear();
        if self.silent {
            conns[1].retry_cnt = self.rng.below(3) as u8;
            let from = (conns[1].sq_psn + self.rng.below(12) as u32) & 0xff_ffff;
            self.shim.cut.insert(conns[1].dest_qpn, from);
            self.rtl.shim.cut.insert(conns[1].dest_qpn, from);
        }
        // The peer of QP 9 posts its receives late (or never, with few RNR retries).
        if let Some(late) = self.rnr {
            if late == u32::MAX {
                conns[1].rnr_retry = self.rng.below(3) as u8;
            }
            self.shim.late_post = Some(late);
            self.rtl.shim.late_post = Some(late);
        }
        for (i, &c) in conns.iter().enumerate() {
            self.connect(i, c);
        }
        let mut dbs = Vec::new();
        let mut posted: Vec<Vec<SendWqe>> = vec![Vec::new(); QPS.len()];
        // (without responses at most 16 WQEs: the op ring's size)
        let (most, per_batch) = if rx { (1 << SQ_LOG, 13) } else { (16, 7) };
        let batches = match self.fill {
            true => 3,
            false => 1 + self.rng.below(3),
        };
        for _batch in 0..batches {
            for (i, &qpn) in QPS.iter().enumerate() {
                let k = match self.fill {
                    true => per_batch,
                    false => self.rng.below(per_batch),
                };
                let long = self.long && i == 0 && posted[i].is_empty();
                for n in 0..k + u64::from(long) {
                    if posted[i].len() == most {
                        break;
                    }
                    let idx = posted[i].len() as u64;
                    let wr_id = (self.round as u64) << 32 | u64::from(qpn) << 16 | idx;
                    let pmtu = conns[i].pmtu();
                    let w = if long && n == 0 {
                        long_write(&mut self.rng, wr_id)
                    } else if rx {
                        let mut w = random_wqe_rx(&mut self.rng, pmtu, wr_id, i, &mut self.stats);
                        if self.fill && (w.opcode == WrOpcode::RdmaRead || w.opcode.is_atomic()) {
                            w.opcode = WrOpcode::RdmaWrite;
                        }
                        w
                    } else {
                        random_wqe(&mut self.rng, pmtu, wr_id, &mut self.stats)
                    };
                    let at = sq_ring(i) + 64 * (idx & ((1 << SQ_LOG) - 1));
                    assert!(self.model.host.write(at, &w.to_bytes()));
                    assert!(self.rtl.host.write(at, &w.to_bytes()));
                    posted[i].push(w);
                }
                let pi = posted[i].len() as u32;
                self.model.nic.bar_write(regs::sq_doorbell(qpn), pi);
                dbs.push((qpn, pi));
            }
        }
        let model_frames = if rx {
            self.run_model_with_peer()
        } else {
            self.run_model()
        };
        if self.long || self.fill {
            // every response held back until the window (or the op ring) has long been full
            self.rtl.hold_next = 40_000;
        }
        let out = self.rtl.run(&QPS, &dbs);
        let mut any_err = false;
        if self.long {
            let dest = conns[0].dest_qpn;
            let Some(at) = out.at_release else {
                self.fail("the responses were never held back")
            };
            let before = out.frames[..at]
                .iter()
                .filter(|f| frame_dest(f) == dest)
                .count();
            if before != WINDOW as usize {
                self.fail(&format!(
                    "QP {}: {before} frames sent before any response, want the window ({WINDOW})",
                    QPS[0]
                ));
            }
            self.stats.long_msgs += 1;
        }

        for (i, &qpn) in QPS.iter().enumerate() {
            let c = conns[i];
            let mine = |f: &Frame| frame_dest(f) == c.dest_qpn;
            let m: Vec<&Frame> = model_frames.iter().filter(|f| mine(f)).collect();
            let r: Vec<&Frame> = out.frames.iter().filter(|f| mine(f)).collect();
            let q = self.model.query(qpn);
            // (once a QP failed on a response, how many of its later requests had left
            // when the failure came is a matter of timing on each side: the frames up to
            // the shorter list's end must agree)
            let failed = q.state == QpState::Err;
            any_err |= failed;
            // (a silent peer's or an RNR-waiting QP's retransmissions follow the timers,
            // each side's own: its frames are not compared, as with faults)
            let loose = self.faults
                || self.shim.cut.contains_key(&c.dest_qpn)
                || (self.rnr.is_some() && i == 1);
            // (with faults the frames are each side's own: retransmissions follow the
            // timing of the faults; count the RTL's)
            let mut sent = BTreeSet::new();
            for f in &r {
                if !sent.insert(frame_psn(f)) {
                    self.stats.retransmits += 1;
                }
            }
            for (k, (a, b)) in m.iter().zip(&r).enumerate().filter(|_| !loose) {
                if a != b {
                    self.fail(&format!(
                        "QP {qpn}: frame {k} differs (PSN model {:#x}, RTL {:#x}; opcode {:#x} / {:#x})\nmodel {a:02x?}\nRTL   {b:02x?}",
                        frame_psn(a),
                        frame_psn(b),
                        a[42],
                        b[42]
                    ));
                }
            }
            if m.len() != r.len() && !(rx && failed) && !loose {
                self.fail(&format!(
                    "QP {qpn}: the model sent {} frames, the RTL {}",
                    m.len(),
                    r.len()
                ));
            }
            for f in &m {
                *self.stats.opcodes.entry(f[42]).or_default() += 1;
                if frame_psn(f) < c.sq_psn {
                    self.stats.wrapped += 1;
                }
            }
            self.stats.frames += m.len();
            // completions
            let cqn = 1 + i as u32;
            // (the flush of the QP's other WQEs when it enters the error state, WR_FLUSH_ERR,
            // included, in SQ order after the error's CQE; its byte_len is the op's length
            // for a WQE fetched before the error and 0 for one only posted, and how far
            // each side had fetched then is a matter of timing: left out)
            let flush_len = |mut x: Cqe| {
                if x.status == WcStatus::WrFlushErr {
                    x.byte_len = 0;
                }
                x
            };
            let mc: Vec<Cqe> = self
                .model
                .new_cqes(cqn)
                .into_iter()
                .map(flush_len)
                .collect();
            self.stats.flushed += mc
                .iter()
                .filter(|x| x.status == WcStatus::WrFlushErr)
                .count();
            let rc: Vec<Cqe> = out
                .cqes
                .iter()
                .filter(|x| x.0 == cqn)
                .map(|x| flush_len(x.1))
                .collect();
            if mc != rc {
                self.fail(&format!("QP {qpn}: CQEs\nmodel {mc:?}\nRTL   {rc:?}"));
            }
            for x in &mc {
                *self.stats.cqes.entry(u8::from(x.status)).or_default() += 1;
                if x.status == WcStatus::Success {
                    *self.stats.ok_by_op.entry(u8::from(x.opcode)).or_default() += 1;
                }
            }
            // QP error event, next PSN
            let errs = out.qp_errs.iter().filter(|&&x| x == qpn).count();
            if (q.state == QpState::Err) != (errs == 1) || errs > 1 {
                self.fail(&format!(
                    "QP {qpn}: model state {:?}, RTL QP-error pulses {errs}",
                    q.state
                ));
            }
            self.stats.qp_errs += errs;
            let e = self.rtl.qpr[qpn as usize];
            let f = qpr_layout::FIELDS;
            if q.state != QpState::Err && val(&e, f, "next_psn") as u32 != q.sq_psn {
                self.fail(&format!(
                    "QP {qpn}: next_psn {:#x}, model sq_psn {:#x}",
                    val(&e, f, "next_psn"),
                    q.sq_psn
                ));
            }
            // the op ring: one op per fetched WQE, PSNs back to back, frames inside
            let ops = self.rtl.ring(qpn);
            let ci = val(&e, f, "sq_ci") as usize;
            if rx {
                // every request answered: a healthy QP has fetched, sent and retired its
                // whole SQ, and everything it sent is acknowledged. Unless the peer's QP
                // entered the error state (it NAKed an invalid request, so it answers
                // nothing more) while an earlier READ still waited for a response: then
                // only the ACK timer could end it, and with the faults' timeout (31, hours)
                // the model is left just as stuck (its QP not in error, the same CQEs and
                // next PSN, compared above).
                let peer_err = self
                    .mpeer
                    .as_mut()
                    .is_some_and(|p| p.query(PEER_QP_BASE + qpn).state == QpState::Err);
                if !failed && !peer_err {
                    let (fetch, una) = (val(&e, f, "sq_fetch"), val(&e, f, "una_psn"));
                    if !ops.is_empty()
                        || fetch != posted[i].len() as u64
                        || una != u64::from(q.sq_psn)
                    {
                        // (REQ_DEBUG=1: the ring and both sides' frames, PSN/opcode)
                        if std::env::var("REQ_DEBUG").is_ok() {
                            let fr = |v: &[&Frame]| {
                                v.iter()
                                    .map(|f| format!("{:x}/{:x}", frame_psn(f), f[42]))
                                    .collect::<Vec<_>>()
                                    .join(" ")
                            };
                            eprintln!("ops {ops:x?}");
                            eprintln!(
                                "posted {:?}",
                                posted[i]
                                    .iter()
                                    .map(|w| (w.opcode, w.sge.length, w.flags))
                                    .collect::<Vec<_>>()
                            );
                            eprintln!("model frames {}", fr(&m));
                            eprintln!("RTL frames   {}", fr(&r));
                            eprintln!("sent_end {:x}", val(&e, f, "sent_end"));
                        }
                        self.fail(&format!(
                            "QP {qpn}: {} ops left in the ring (sq_ci {ci}, sq_fetch {fetch} of {} posted), una {una:#x}, model sq_psn {:#x}",
                            ops.len(),
                            posted[i].len(),
                            q.sq_psn
                        ));
                    }
                    self.stats.drained += 1;
                }
                continue;
            }
            let mut psn = if ci == 0 { c.sq_psn } else { q.sq_psn };
            for (k, &(wr_id, first, npsn, done, status)) in ops.iter().enumerate() {
                let w = &posted[i][ci + k];
                if wr_id != w.wr_id || first as u32 != psn {
                    self.fail(&format!(
                        "QP {qpn}: ring op {k}: wr_id {wr_id:#x} first PSN {first:#x}, want {:#x} {psn:#x}",
                        w.wr_id
                    ));
                }
                if (done == 1) != (status != 0) {
                    self.fail(&format!(
                        "QP {qpn}: ring op {k}: done {done} status {status}"
                    ));
                }
                let inside = m
                    .iter()
                    .filter(|f| (frame_psn(f).wrapping_sub(psn) & 0xff_ffff) < npsn as u32)
                    .count();
                let is_read = w.opcode == WrOpcode::RdmaRead;
                let want = if done == 1 {
                    0
                } else if is_read {
                    1
                } else {
                    npsn as usize
                };
                if inside != want {
                    self.fail(&format!(
                        "QP {qpn}: ring op {k} ({:?}, {npsn} PSNs): {inside} model frames in its range",
                        w.opcode
                    ));
                }
                if npsn > 1 && !is_read {
                    self.stats.multi += 1;
                }
                psn = (psn + npsn as u32) & 0xff_ffff;
            }
            // Fetch stopped short of the SQ's end with the QP healthy and the ring not full:
            // it must be held back by one of the model's fetch rules (both sides agreed on
            // the frames above); count which.
            let stopped_fetch = (ci + ops.len()) < posted[i].len();
            if stopped_fetch
                && q.state != QpState::Err
                && !ops.iter().any(|o| o.3 == 1)
                && ops.len() < 16
            {
                let read_like =
                    |w: &SendWqe| w.opcode == WrOpcode::RdmaRead || w.opcode.is_atomic();
                let outstanding = posted[i][ci..ci + ops.len()]
                    .iter()
                    .filter(|w| read_like(w))
                    .count();
                let limit = usize::from(c.max_rd).clamp(1, 16);
                let next = &posted[i][ci + ops.len()];
                if read_like(next) && outstanding >= limit {
                    self.stats.blocked_rd += 1;
                } else if next.flags & send_flags::FENCE != 0 && outstanding > 0 {
                    self.stats.blocked_fence += 1;
                } else {
                    self.fail(&format!(
                        "QP {qpn}: fetch stopped at WQE {} ({:?}, flags {:#x}) with {outstanding} READ/atomic ops outstanding (limit {limit}) and no rule holding it",
                        ci + ops.len(),
                        next.opcode,
                        next.flags
                    ));
                }
            }
        }
        if rx {
            self.compare_rx(&out, any_err);
        }
        self.round += 1;
    }

    /// With a peer: local memory (READ and atomic results), the peers' memory, the receive
    /// counters, and what the round exercised.
    fn compare_rx(&mut self, out: &RtlOut, any_err: bool) {
        let (m, r) = (&self.model.host.regions[0].1, &self.rtl.host.regions[0].1);
        if let Some(k) = (0..m.len()).find(|&k| m[k] != r[k]) {
            self.fail(&format!(
                "host memory differs at {:#x}: model {:02x?}, RTL {:02x?}",
                BUF_BASE + k as u64,
                &m[k..(k + 16).min(m.len())],
                &r[k..(k + 16).min(r.len())]
            ));
        }
        let mp = &self.mpeer.as_ref().expect("a peer").host.regions[0].1;
        let rp = &self.rtl.peer.as_ref().expect("a peer").host.regions[0].1;
        if !any_err {
            if let Some(k) = (0..mp.len()).find(|&k| mp[k] != rp[k]) {
                self.fail(&format!(
                    "the peers' memory differs at {:#x}",
                    BUF_BASE + k as u64
                ));
            }
            let mp = &self.mpeer.as_ref().expect("a peer").host.regions[2].1;
            let rp = &self.rtl.peer.as_ref().expect("a peer").host.regions[2].1;
            if let Some(k) = (0..mp.len()).find(|&k| mp[k] != rp[k]) {
                self.fail(&format!(
                    "the peers' memory differs at {:#x}",
                    BIG_BASE + k as u64
                ));
            }
        }
        let now: Vec<u64> = RX_COUNTERS
            .iter()
            .map(|&c| u64::from(self.model.nic.bar_read(regs::counter_lo(c))))
            .collect();
        for (k, &c) in RX_COUNTERS.iter().enumerate() {
            let code = k as u8 + 1;
            let rtl = out.rx_cnts.iter().filter(|x| x.0 == code).count() as u64;
            // (with faults how many duplicates and NAKs come is a matter of timing; with
            // RNR waits too, within bounds: the RTL waits as the model does, so it takes
            // about as many RNR NAKs)
            let model = now[k] - self.counts[k];
            if self.rnr.is_some() && c == Counter::RnrNaksReceived {
                if rtl > 2 * model + 2 {
                    self.fail(&format!(
                        "{c:?}: model {model} this round, RTL {rtl}: the RTL does not wait"
                    ));
                }
                self.stats.rnr_naks += model as usize;
            } else if !any_err && !self.faults && self.rnr.is_none() && model != rtl {
                self.fail(&format!("{c:?}: model {model} this round, RTL {rtl}"));
            }
            self.counts[k] = now[k];
        }
        for x in &out.rx_cnts {
            *self.stats.rx_cnts.entry(x.0).or_default() += 1;
        }
        self.stats.responses += out.responses;
        self.stats.dma_writes += out.dma_writes;
        self.stats.delayed = self.shim.delayed + self.rtl.shim.delayed;
        self.stats.duplicated = self.shim.duplicated + self.rtl.shim.duplicated;
        self.stats.lost = self.shim.lost + self.rtl.shim.lost;
        self.stats.timeouts += out.timeouts;
        self.stats.rtx_pulses += out.rtx_pulses;
        if out.max_ring == 16 {
            self.stats.ring_full += 1;
        }
    }
}

/// One run of the bench: `seeds` seeds from `base` of `rounds` rounds each (`{env}_SEEDS`,
/// `{env}_ROUNDS` change them; `{env}_SEED=hex` replays one seed), with a peer when
/// `peer`, faults on the links when `faults`, a [`long_write`] on QP 5 each round when
/// `long`, frames lost on the links when `loss` (with `faults`), and `setup` applied to
/// each seed's world first.
struct SeedRun<'a> {
    env: &'a str,
    base: u64,
    seeds: u64,
    rounds: usize,
    peer: bool,
    faults: bool,
    long: bool,
    loss: bool,
    setup: &'a dyn Fn(&mut World),
}

impl<'a> SeedRun<'a> {
    /// No peer, no faults, no long message, no loss, no setup.
    fn new(env: &'a str, base: u64, seeds: u64, rounds: usize) -> Self {
        SeedRun {
            env,
            base,
            seeds,
            rounds,
            peer: false,
            faults: false,
            long: false,
            loss: false,
            setup: &|_| {},
        }
    }

    /// With a responder model as each side's peer.
    fn peer(self) -> Self {
        SeedRun { peer: true, ..self }
    }

    /// Runs the seeds; returns their figures summed.
    fn run(&self) -> Stats {
        let SeedRun {
            env,
            base,
            seeds,
            rounds,
            peer,
            faults,
            long,
            loss,
            setup,
        } = *self;
        let var = |k: &str| std::env::var(format!("{env}_{k}")).ok();
        let seeds: u64 = var("SEEDS").and_then(|s| s.parse().ok()).unwrap_or(seeds);
        let rounds: usize = var("ROUNDS").and_then(|s| s.parse().ok()).unwrap_or(rounds);
        let list: Vec<u64> = match var("SEED") {
            Some(x) => {
                vec![u64::from_str_radix(x.trim_start_matches("0x"), 16).expect("a hex seed")]
            }
            None => (0..seeds).map(|s| base + s).collect(),
        };
        let mut total = Stats::default();
        for seed in list {
            let mut w = World::new(seed, peer, faults);
            w.long = long;
            w.shim.loss = loss;
            w.rtl.shim.loss = loss;
            setup(&mut w);
            let slow = loss || w.silent || w.rnr.is_some();
            w.shim.slow = slow;
            w.rtl.shim.slow = slow;
            for _ in 0..rounds {
                w.round();
            }
            total.add(w.stats);
        }
        total
    }
}

/// Random send WQEs on two QPs (every WR opcode and unknown ones, inline, zero to a few
/// packets at every PMTU, first PSNs near the 24-bit wrap, max_rd_atomic limits, FENCE,
/// invalid WQEs of every kind), no responses: frames, CQEs, QP errors, PSNs and the op
/// ring against the model.
///
/// Four seeds of three rounds by default (about 30 s in release on a quiet 2-core
/// machine); `REQ_DIFF_SEEDS`, `REQ_DIFF_ROUNDS` widen it, `REQ_DIFF_SEED=hex` replays one.
#[test]
fn random_wqes_match_the_model() {
    let total = SeedRun::new("REQ_DIFF", 0x5eed_0000, 4, 3).run();
    eprintln!("requester diff: {total:?}");
    assert!(total.frames > 40, "{total:?}");
    assert!(
        total.multi > 2 && total.inline > 2 && total.qp_errs > 0,
        "{total:?}"
    );
    for status in [WcStatus::LocQpOpErr, WcStatus::LocProtErr] {
        assert!(
            total.cqes.contains_key(&u8::from(status)),
            "no {status:?} CQE: {total:?}"
        );
    }
    assert!(
        total.blocked_rd > 0,
        "no fetch held back by max_rd_atomic: {total:?}"
    );
    assert!(
        total.blocked_fence > 0,
        "no fetch held back by FENCE: {total:?}"
    );
}

/// With a peer: the requests of both sides answered by a responder model each (ACKs, READ
/// responses, atomic ACKs, error NAKs for a wrong rkey or a range past the MR), the
/// responses fed back (the RTL through its receive port); frames, every send CQE (successes
/// too, in order), QP errors, the emptied ring and the window (`una` = `next_psn`), host
/// memory (READ and atomic results), the peers' memory and the receive counters compared.
/// Up to 32 WQEs a round, so the RTL's 16-op ring may fill (`responses_fill_the_op_ring`,
/// ignored: with the WQE prefetch these seeds no longer fill it).
///
/// Three seeds of three rounds by default; `REQ_RX_SEEDS`, `REQ_RX_ROUNDS` widen it,
/// `REQ_RX_SEED=hex` replays one.
#[test]
fn responses_match_the_model() {
    let total = SeedRun::new("REQ_RX", 0x7e5e_0000, 3, 3).peer().run();
    eprintln!("requester diff with responses: {total:?}");
    assert!(total.responses > 50 && total.drained > 0, "{total:?}");
    assert_eq!(
        total.retransmits, 0,
        "retransmissions without faults: {total:?}"
    );
    for op in [
        WcOpcode::RdmaRead,
        WcOpcode::CompSwap,
        WcOpcode::FetchAdd,
        WcOpcode::RdmaWrite,
        WcOpcode::Send,
    ] {
        assert!(
            total.ok_by_op.contains_key(&u8::from(op)),
            "no successful {op:?}: {total:?}"
        );
    }
    assert!(
        total.cqes.contains_key(&u8::from(WcStatus::RemAccessErr)),
        "no REM_ACCESS_ERR CQE: {total:?}"
    );
}

/// With a peer that holds its responses back (40 000 cycles) and WQEs that keep the fetch
/// going (three batches of 13 on each QP; READs and atomics made WRITEs, since one past
/// max_rd_atomic stops the fetch): the 16-op ring fills and the fetch waits for it, compared
/// as in [`responses_match_the_model`]. The random seeds there no longer fill it since the
/// WQE prefetch (a fetch stopped by max_rd_atomic, or a QP failed, first: at most 12 ops
/// seen), so this bench does it on purpose. One seed of one round; `REQ_FULL_SEEDS`,
/// `REQ_FULL_ROUNDS` widen it.
#[test]
fn responses_fill_the_op_ring() {
    let total = SeedRun {
        setup: &|w| w.fill = true,
        ..SeedRun::new("REQ_FULL", 0x7e5e_0000, 1, 1).peer()
    }
    .run();
    assert!(
        total.ring_full > 0,
        "the op ring never held 16 ops: {total:?}"
    );
}

/// With a peer and faults on both sides' links ([`Shim`]: requests and responses held back
/// so later ones overtake them, or duplicated): the peer NAKs PSN-sequence errors, READ
/// responses come out of order, duplicates arrive, and the requester goes back N (the
/// model's `rewind` / `rewound_to`: the ring's unfinished ops from the rewind PSN sent
/// again through Segmenter jobs with `start_pkt`, payloads read again). Compared: every
/// send CQE in order (status, opcode, wr_id, byte_len, ...), QP errors, the emptied ring
/// and the window, host memory and the peers' memory; not the frames nor the receive
/// counters (their timing is each side's own on faults). Requires retransmissions by the
/// RTL and NAKs received, so that it cannot pass without reaching go-back-N.
///
/// Two seeds of three rounds by default (from 0xfa170001; seed 0xfa170000 is
/// [`fault_seed_0xfa170000_matches_the_model`]); `REQ_FAULT_SEEDS`,
/// `REQ_FAULT_ROUNDS` widen it, `REQ_FAULT_SEED=hex` replays one.
#[test]
fn faults_match_the_model() {
    let total = SeedRun {
        faults: true,
        ..SeedRun::new("REQ_FAULT", 0xfa17_0001, 2, 3).peer()
    }
    .run();
    eprintln!("requester diff with faults: {total:?}");
    assert!(total.responses > 50 && total.drained > 0, "{total:?}");
    assert!(
        total.delayed > 0 && total.duplicated > 0,
        "no fault applied: {total:?}"
    );
    assert!(total.retransmits > 0, "no retransmission: {total:?}");
    assert!(
        total
            .rx_cnts
            .contains_key(&(rocenic_hdl::requester::req_rx_check::CNT_NAK as u8)),
        "no NAK received: {total:?}"
    );
}

/// Seed 0xfa170000, once a known failure: in round 0 QP 9's peer NAKs a SEND with
/// invalidate as an invalid request (its QP enters the error state and answers nothing
/// more) while a READ before it had a response held back and was asked for again: the
/// READ never completes, on the RTL as in the model (4 ops left, una 0xfffffe; the model's
/// QP not in error, the same CQEs and next PSN), which only the ACK timer would end. The
/// bench demanded the ring drained there; it no longer does when the peer's QP is in error.
#[test]
fn fault_seed_0xfa170000_matches_the_model() {
    let total = SeedRun {
        faults: true,
        ..SeedRun::new("REQ_FAULT_KNOWN", 0xfa17_0000, 1, 1).peer()
    }
    .run();
    assert!(total.responses > 0, "{total:?}");
}

/// With a peer: each round QP 5 (PMTU 256) starts with a WRITE of 1100 to 1199 packets,
/// longer than the 1024-PSN window, and the responses are held back at first: exactly the
/// window's 1024 packets of it leave before any response, the rest as ACKs move the window
/// (the Segmenter job cut at the window's edge, the cursor held and resumed). Frames byte
/// for byte, CQEs, the drained ring and window, memory (the peer's copy of the message)
/// compared as in [`responses_match_the_model`].
///
/// One seed of one round by default (each round simulates a long message; the engine
/// differential runs many more); `REQ_LONG_SEEDS`, `REQ_LONG_ROUNDS` widen it,
/// `REQ_LONG_SEED=hex` replays one.
#[test]
fn long_message_matches_the_model() {
    let total = SeedRun {
        long: true,
        ..SeedRun::new("REQ_LONG", 0x1047_0000, 1, 1).peer()
    }
    .run();
    eprintln!("requester diff with long messages: {total:?}");
    assert!(total.long_msgs > 0 && total.drained > 0, "{total:?}");
    assert!(
        total.ok_by_op.contains_key(&u8::from(WcOpcode::RdmaWrite)),
        "{total:?}"
    );
}

/// With a peer, faults as in [`faults_match_the_model`] and losses: the first pass of a
/// frame (request or response, 6%) is dropped now and then, so that only the ACK timer
/// (`QpTimers`, armed at each job and on progress, 8192 cycles here) recovers some of them:
/// a retry and go-back-N from `una`. CQEs, QP errors, the drained ring and window, memory
/// compared as with faults; requires losses, AckTimeouts pulses and retransmissions, and
/// the Retransmits pulses must count the frames the bench saw sent again.
///
/// One seed of three rounds by default, from 0x1055_0001 (0x1055_0000 meets no ACK
/// timeout; the engine differential's faulted cases lose frames too); `REQ_LOSS_SEEDS`,
/// `REQ_LOSS_ROUNDS` widen it, `REQ_LOSS_SEED=hex` replays one.
#[test]
fn losses_match_the_model() {
    let total = SeedRun {
        faults: true,
        loss: true,
        ..SeedRun::new("REQ_LOSS", 0x1055_0001, 1, 3).peer()
    }
    .run();
    eprintln!("requester diff with losses: {total:?}");
    assert!(total.responses > 50 && total.drained > 0, "{total:?}");
    assert!(total.lost > 0, "no frame lost: {total:?}");
    assert!(total.timeouts > 0, "no ACK timeout: {total:?}");
    assert!(total.retransmits > 0, "no retransmission: {total:?}");
    assert_eq!(
        total.rtx_pulses, total.retransmits,
        "Retransmits pulses vs frames sent again: {total:?}"
    );
}

/// With a peer that goes silent for QP 9 (every request from a PSN near its first one on
/// is dropped, retransmissions too; [`Shim::cut`]) and 0 to 2 retries: the ACK timer runs
/// out of retries, the oldest unfinished op completes RETRY_EXC_ERR and the QP enters the
/// error state, as in the model (`fire_timers` / `use_retry`); CQEs (the flush's left
/// out), QP errors, memory compared; QP 5 runs on undisturbed (frames byte for byte,
/// drained). Requires RETRY_EXC_ERR CQEs and ACK timeouts.
///
/// One seed of two rounds by default (it simulates long ACK timeouts: about a minute of
/// the suite); `REQ_SILENT_SEEDS`, `REQ_SILENT_ROUNDS` widen it, `REQ_SILENT_SEED=hex`
/// replays one.
#[test]
fn retry_exhaustion_matches_the_model() {
    let total = SeedRun {
        setup: &|w| w.silent = true,
        ..SeedRun::new("REQ_SILENT", 0x5173_0000, 1, 2).peer()
    }
    .run();
    eprintln!("requester diff with a silent peer: {total:?}");
    assert!(total.lost > 0 && total.timeouts > 0, "{total:?}");
    assert!(
        total.cqes.contains_key(&u8::from(WcStatus::RetryExcErr)),
        "no RETRY_EXC_ERR CQE: {total:?}"
    );
    assert!(total.qp_errs > 0 && total.drained > 0, "{total:?}");
    assert!(total.flushed > 0, "nothing flushed: {total:?}");
}

/// With a peer whose QP for our QP 9 posts its receives 15 000 cycles late (RNR NAKs for
/// its SENDs until then, timer code 1: 10 us), QP 9 with infinite RNR retries
/// (`rnr_retry` 7): the RTL waits as the model does (`QpTimers` kind RNR, the cursor held
/// at `una` until the timer fires, then go-back-N from it), so it takes about as many RNR
/// NAKs as the model (at most twice as many, plus two); once the receives are there both
/// recover: CQEs, the drained ring and window, memory compared (frames of QP 9 not: their
/// timing follows the timers).
///
/// Two seeds of two rounds by default; `REQ_RNR_SEEDS`, `REQ_RNR_ROUNDS` widen it,
/// `REQ_RNR_SEED=hex` replays one.
#[test]
fn rnr_waits_match_the_model() {
    let total = SeedRun {
        setup: &|w| w.rnr = Some(15_000),
        ..SeedRun::new("REQ_RNR", 0x4e40_0000, 2, 2).peer()
    }
    .run();
    eprintln!("requester diff with RNR waits: {total:?}");
    assert!(total.rnr_naks > 0, "no RNR NAK: {total:?}");
    assert!(total.drained > 0, "{total:?}");
    assert!(
        total.ok_by_op.contains_key(&u8::from(WcOpcode::Send)),
        "{total:?}"
    );
}

/// With a peer whose QP for our QP 9 never posts a receive and 0 to 2 RNR retries: the
/// RNR NAKs use them up and the oldest op completes RNR_RETRY_EXC_ERR, the QP in error,
/// as in the model; CQEs, QP errors, memory compared.
///
/// One seed of two rounds by default (it simulates every RNR wait of every retry: over a
/// minute of the suite); `REQ_RNRX_SEEDS`, `REQ_RNRX_ROUNDS` widen it, `REQ_RNRX_SEED=hex`
/// replays one.
#[test]
fn rnr_exhaustion_matches_the_model() {
    let total = SeedRun {
        setup: &|w| w.rnr = Some(u32::MAX),
        ..SeedRun::new("REQ_RNRX", 0x4e45_0000, 1, 2).peer()
    }
    .run();
    eprintln!("requester diff with no receives: {total:?}");
    assert!(
        total.cqes.contains_key(&u8::from(WcStatus::RnrRetryExcErr)),
        "no RNR_RETRY_EXC_ERR CQE: {total:?}"
    );
    assert!(total.qp_errs > 0, "{total:?}");
}
