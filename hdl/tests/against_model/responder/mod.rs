//! The responder's sequencer ([`Responder`]) against the model: directed cases here, random
//! streams in [`diff`].

pub(crate) mod diff;

use diff::{cnt_pulses, field, get, put};
use rocenic_hdl::bench::Bench;
use rocenic_hdl::common::icrc::beat_from_bytes;
use rocenic_hdl::control::ctx_tables::*;
use rocenic_hdl::responder::resp_check::{PROG_IDLE, PROG_SEND, PROG_WRITE};
use rocenic_hdl::responder::*;
use rocenic_hdl::tx::tx_arbiter::RECORD_FIELDS;
use rocenic_model::{Mr, Tables};
use rocenic_proto::abi::cmd::mr_key;
use std::collections::{BTreeMap, VecDeque};

const QA: usize = 4;
const QPN: u32 = 3;
const PDN: u32 = 1;
const RQ_RING: u64 = 0x40_0000;
const DEST_QPN: u32 = 0x55;

/// The header of one request.
#[derive(Clone, Copy, Default)]
struct Req {
    opcode: u8,
    psn: u32,
    ack_req: bool,
    reth: Option<(u64, u32, u32)>,
    imm: Option<u32>,
    len: usize,
}

/// What the block did with one packet.
#[derive(Default, Debug)]
struct Out {
    /// (syndrome, psn, msn)
    acks: Vec<(u64, u64, u64)>,
    /// (status, opcode, byte_len, wr_id, wqe_index, imm, flags)
    cqes: Vec<(u64, u64, u64, u64, u64, u64, u64)>,
    qp_err: usize,
    counters: [usize; 6],
    dma_writes: Vec<(u64, usize)>,
    /// (address, length) of each DMA read (RQ WQEs).
    dma_reads: Vec<(u64, u64)>,
    /// The FSM state in each cycle from the one that takes the request or doorbell
    /// to the one that is idle again.
    states: Vec<u64>,
}

struct Env {
    b: Bench<Responder<QA>>,
    qpc: QpcEntry,
    qpa: QpaEntry,
    qps: QpsEntry,
    tables: Tables,
    mem: BTreeMap<u64, u8>,
    /// The contexts and MRs as the last run left them: a change the test makes
    /// between runs is signalled on `s_tbl_wr` (the command engine's part).
    seen: Option<(QpcEntry, QpaEntry, QpsEntry, String)>,
}

impl Env {
    fn new() -> Env {
        let mut b = Bench::new(Responder::<QA>::default(), |u| &mut u.clock);
        b.uut.reset.next = true;
        b.tick();
        b.uut.reset.next = false;
        let mut qpc = QpcEntry::default();
        let f = qpc_layout::FIELDS;
        for (n, v) in [
            ("present", 1),
            ("pdn", u64::from(PDN)),
            ("recv_cqn", 7),
            ("rq_log", 2),
            ("rq_ring", RQ_RING >> 6),
        ] {
            let (at, w) = field(f, n);
            put(&mut qpc, at, w, v);
        }
        let mut qpa = QpaEntry::default();
        let f = qpa_layout::FIELDS;
        for (n, v) in [
            ("state", 3),
            ("pmtu", 1),
            ("dest_qpn", u64::from(DEST_QPN)),
            ("dest_mac", 0x0200_0000_0002),
            ("dest_ip", 0x0a00_0002),
            ("udp_sport", 0xc000),
            ("access", 0xf),
            ("min_rnr_timer", 12),
        ] {
            let (at, w) = field(f, n);
            put(&mut qpa, at, w, v);
        }
        let mut qps = QpsEntry::default();
        let (at, w) = field(qps_layout::FIELDS, "epsn");
        put(&mut qps, at, w, 100);
        let mut tables = Tables::new(4, 16, 4);
        tables.mrs[1] = Some(Mr {
            key: mr_key(1, 0x11),
            pdn: PDN,
            access: 1,
            va: 0x7000_0000,
            iova: 0x10_0000,
            length: 0x1000,
            valid: true,
        });
        tables.mrs[2] = Some(Mr {
            key: mr_key(2, 0x22),
            pdn: PDN,
            access: 2,
            va: 0x8000_0000,
            iova: 0x20_0000,
            length: 0x1000,
            valid: true,
        });
        Env {
            b,
            qpc,
            qpa,
            qps,
            tables,
            mem: BTreeMap::new(),
            seen: None,
        }
    }

    fn qps_field(&self, name: &str) -> u64 {
        let (at, w) = field(qps_layout::FIELDS, name);
        get(&self.qps, at, w)
    }

    /// Posts a receive in ring slot `slot`: wr_id, one SGE.
    fn post(&mut self, slot: u64, wr_id: u64, addr: u64, length: u32, lkey: u32) {
        let mut raw = [0u8; 64];
        raw[0..8].copy_from_slice(&wr_id.to_le_bytes());
        raw[8] = 1;
        raw[16..24].copy_from_slice(&addr.to_le_bytes());
        raw[24..28].copy_from_slice(&length.to_le_bytes());
        raw[28..32].copy_from_slice(&lkey.to_le_bytes());
        for (i, &x) in raw.iter().enumerate() {
            self.mem.insert(RQ_RING + 64 * slot + i as u64, x);
        }
    }

    /// Runs the block until it is idle again; the environment answers every port.
    fn run(&mut self, req: Option<(Req, Vec<u8>)>, doorbell: Option<u32>) -> Out {
        let mut out = Out::default();
        let mut hdr = req.as_ref().map(|r| r.0);
        let mut beats: VecDeque<(Vec<u8>, bool)> = VecDeque::new();
        if let Some((_, p)) = &req {
            let n = p.len().div_ceil(64);
            for i in 0..n {
                let end = ((i + 1) * 64).min(p.len());
                beats.push_back((p[i * 64..end].to_vec(), i + 1 == n));
            }
        }
        let mut db = doorbell;
        let (mut rc, mut ra, mut rs) = (false, false, false);
        let mut mr_pending: Option<(u32, u64, u32, u32, u32)> = None;
        let mut mr_res: Option<(bool, u64)> = None;
        // The beat offered (None = the read refused) and the read's later beats.
        let mut rd_resp: Option<Option<[u8; 64]>> = None;
        let mut rd_more: VecDeque<[u8; 64]> = VecDeque::new();
        let mut wr: Option<(u64, usize, usize)> = None;
        let mut status_due = false;
        let mut started = false;
        let snap = |e: &Env| (e.qpc, e.qpa, e.qps, format!("{:?}", e.tables.mrs));
        if self.seen != Some(snap(self)) {
            // the test changed a table: one cycle of `s_tbl_wr` first
            let u = &mut self.b.uut;
            u.hdr.valid.next = false;
            u.rq_db.valid.next = false;
            u.pay.tvalid.next = false;
            u.s_tbl_wr.next = true;
            self.b.tick();
        }
        for _ in 0..400 {
            let u = &mut self.b.uut;
            u.s_cmd_start.next = false;
            u.s_cmd_done.next = false;
            u.s_tbl_wr.next = false;
            u.local_mac.next = 0x0200_0000_0001u64.into();
            u.local_ip.next = 0x0a00_0001u64.into();
            u.hdr.valid.next = hdr.is_some();
            if let Some(h) = hdr {
                u.hdr.opcode.next = u64::from(h.opcode).into();
                u.hdr.src_ip.next = 0x0a00_0002u64.into();
                u.hdr.dest_qp.next = u64::from(QPN).into();
                u.hdr.ack_req.next = h.ack_req;
                u.hdr.psn.next = u64::from(h.psn).into();
                let (va, rkey, len) = h.reth.unwrap_or_default();
                u.hdr.reth_va.next = va.into();
                u.hdr.reth_rkey.next = u64::from(rkey).into();
                u.hdr.reth_dma_len.next = u64::from(len).into();
                u.hdr.has_reth.next = h.reth.is_some();
                u.hdr.immdt.next = u64::from(h.imm.unwrap_or(0)).into();
                u.hdr.has_immdt.next = h.imm.is_some();
                u.hdr.payload_len.next = (h.len as u64).into();
            }
            u.rq_db.valid.next = db.is_some();
            u.rq_db.qpn.next = u64::from(QPN).into();
            u.rq_db.pi.next = u64::from(db.unwrap_or(0)).into();
            let beat = beats.front().cloned();
            u.pay.tvalid.next = beat.is_some();
            if let Some((bytes, last)) = &beat {
                let mut full = [0u8; 64];
                full[..bytes.len()].copy_from_slice(bytes);
                u.pay.tdata.next = beat_from_bytes(&full);
                let keep = if bytes.len() == 64 {
                    u64::MAX
                } else {
                    (1u64 << bytes.len()) - 1
                };
                u.pay.tkeep.next = keep.into();
                u.pay.tlast.next = *last;
            }
            u.qpc_rd.req_ready.next = true;
            u.qpa_rd.req_ready.next = true;
            u.qps_rd.req_ready.next = true;
            u.qpc_rd.resp_valid.next = rc;
            u.qpc_rd.resp_data.next = self.qpc;
            u.qpa_rd.resp_valid.next = ra;
            u.qpa_rd.resp_data.next = self.qpa;
            u.qps_rd.resp_valid.next = rs;
            u.qps_rd.resp_data.next = self.qps;
            u.qps_wr.ready.next = true;
            u.mr.req_ready.next = mr_pending.is_none() && mr_res.is_none();
            u.mr.res_valid.next = mr_res.is_some();
            u.mr.res_ok.next = mr_res.is_some_and(|r| r.0);
            u.mr.res_iova.next = mr_res.map_or(0, |r| r.1).into();
            u.dma_rd.req_ready.next = rd_resp.is_none();
            u.dma_rd.resp_valid.next = rd_resp.is_some();
            u.dma_rd.resp_err.next = rd_resp.is_some_and(|r| r.is_none());
            u.dma_rd.resp_last.next = rd_more.is_empty();
            u.dma_rd.resp_data.next = beat_from_bytes(&rd_resp.flatten().unwrap_or([0; 64]));
            u.dma_wr.req_ready.next = wr.is_none();
            u.dma_wr.data_ready.next = true;
            u.dma_wr.status_valid.next = status_due;
            u.dma_wr.status_err.next = false;
            u.ack_pkt.ready.next = true;
            u.m_read_job_ready.next = true;
            u.m_atomic_job_ready.next = true;
            u.m_replay_ready.next = true;
            u.cqe.ready.next = true;
            u.s_read_err_valid.next = false;
            u.s_atomic_err_valid.next = false;
            u.qp_err.ready.next = true;
            u.flush.valid.next = false;
            u.inv.ready.next = true;
            u.inv.ok.next = true;
            self.b.settle();
            let u = &self.b.uut;
            let was_started = started;
            if started || (hdr.is_some() && u.hdr.ready.val()) || db.is_some() {
                out.states.push(u.state.q.val().to_u64());
            }
            // ---- sample the handshakes ----
            if u.hdr.valid.val() && u.hdr.ready.val() {
                hdr = None;
                started = true;
            }
            if u.rq_db.valid.val() && u.rq_db.ready.val() {
                db = None;
                started = true;
            }
            rc = u.qpc_rd.req_valid.val();
            ra = u.qpa_rd.req_valid.val();
            rs = u.qps_rd.req_valid.val();
            if u.qps_wr.valid.val() {
                self.qps = u.qps_wr.data.val();
            }
            if mr_res.is_some() && u.mr.res_ready.val() {
                mr_res = None;
            }
            if let Some((key, va, len, need, _)) = mr_pending.take() {
                let r = self.tables.translate(key, PDN, va, u64::from(len), need);
                mr_res = Some((r.is_ok(), r.unwrap_or(0)));
            }
            if u.mr.req_valid.val() && u.mr.req_ready.val() {
                mr_pending = Some((
                    u.mr.req_key.val().to_u64() as u32,
                    u.mr.req_va.val().to_u64(),
                    u.mr.req_len.val().to_u64() as u32,
                    u.mr.req_need.val().to_u64() as u32,
                    u.mr.req_pdn.val().to_u64() as u32,
                ));
            }
            if rd_resp.is_some() && u.dma_rd.resp_ready.val() {
                rd_resp = rd_more.pop_front().map(Some);
            } else if u.dma_rd.req_valid.val() && u.dma_rd.req_ready.val() {
                let a = u.dma_rd.req_addr.val().to_u64();
                let n = u.dma_rd.req_len.val().to_u64();
                out.dma_reads.push((a, n));
                let raw: Option<Vec<u8>> =
                    (0..n).map(|i| self.mem.get(&(a + i)).copied()).collect();
                match raw {
                    Some(raw) => {
                        let mut beats = raw.chunks(64).map(|c| c.try_into().expect("64"));
                        rd_resp = beats.next().map(Some);
                        rd_more.extend(beats);
                    }
                    None => rd_resp = Some(None),
                }
            }
            status_due = false;
            if u.dma_wr.req_valid.val() && u.dma_wr.req_ready.val() {
                let a = u.dma_wr.req_addr.val().to_u64();
                let n = u.dma_wr.req_len.val().to_u64() as usize;
                wr = Some((a, n, 0));
                out.dma_writes.push((a, n));
            }
            if u.dma_wr.data_valid.val() && u.dma_wr.data_ready.val() {
                let (a, n, done) = wr.expect("data after its request");
                let d = u.dma_wr.data.val();
                let take = (n - done).min(64);
                for j in 0..take {
                    self.mem
                        .insert(a + (done + j) as u64, get(&d, 8 * j, 8) as u8);
                }
                assert_eq!(u.dma_wr.data_last.val(), done + take == n);
                if done + take == n {
                    wr = None;
                    status_due = true;
                } else {
                    wr = Some((a, n, done + take));
                }
            }
            if u.pay.tvalid.val() && u.pay.tready.val() {
                beats.pop_front();
            }
            if u.ack_pkt.valid.val() && u.ack_pkt.ready.val() {
                let r = u.ack_pkt.data.val();
                let (sa, sw) = field(RECORD_FIELDS, "syndrome");
                let (pa, pw) = field(RECORD_FIELDS, "psn");
                let (ma, mw) = field(RECORD_FIELDS, "msn");
                let (qa, qw) = field(RECORD_FIELDS, "dest_qp");
                let (oa, ow) = field(RECORD_FIELDS, "opcode");
                let (la, lw) = field(RECORD_FIELDS, "src_qp");
                assert_eq!(get(&r, qa, qw), u64::from(DEST_QPN));
                assert_eq!(get(&r, la, lw), u64::from(QPN), "the sending QP");
                assert_eq!(get(&r, oa, ow), 0x11);
                out.acks
                    .push((get(&r, sa, sw), get(&r, pa, pw), get(&r, ma, mw)));
            }
            if u.cqe.valid.val() && u.cqe.ready.val() {
                assert_eq!(u.cqe.cqn.val().to_u64(), 7);
                assert_eq!(u.cqe.qp_num.val().to_u64(), u64::from(QPN));
                assert_eq!(u.cqe.src_qp.val().to_u64(), u64::from(DEST_QPN));
                out.cqes.push((
                    u.cqe.status.val().to_u64(),
                    u.cqe.opcode.val().to_u64(),
                    u.cqe.byte_len.val().to_u64(),
                    u.cqe.wr_id.val().to_u64(),
                    u.cqe.wqe_index.val().to_u64(),
                    u.cqe.imm.val().to_u64(),
                    u.cqe.wc_flags.val().to_u64(),
                ));
            }
            if u.qp_err.valid.val() {
                out.qp_err += 1;
            }
            for (i, c) in cnt_pulses(&u.cnt).into_iter().enumerate() {
                out.counters[i] += usize::from(c);
            }
            let idle = u.hdr.ready.val() || u.rq_db.ready.val();
            self.b.tick();
            if was_started && idle && hdr.is_none() && db.is_none() {
                assert!(beats.is_empty(), "payload consumed");
                self.seen = Some(snap(self));
                return out;
            }
        }
        panic!("the responder did not return to idle");
    }
}

const DUP: usize = 0;
const SEQ: usize = 1;
const NAK: usize = 2;
const RNR: usize = 3;

fn bytes(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(7).wrapping_add(seed))
        .collect()
}

fn read_mem(env: &Env, at: u64, n: usize) -> Vec<u8> {
    (0..n)
        .map(|i| env.mem.get(&(at + i as u64)).copied().unwrap_or(0))
        .collect()
}

/// The cost of one packet of a long WRITE (256-byte PMTU, the neighbours always ready,
/// contexts answered one cycle after the request, the MR check two, the write status
/// one after the last beat): the cycles from taking the header to the first one that
/// can take the next (both counted), state by state (printed with --nocapture), held
/// to a bound.
#[test]
fn a_middle_write_packet_takes_few_cycles() {
    let mut env = Env::new();
    let rkey = mr_key(2, 0x22);
    let first = Req {
        opcode: 0x06,
        psn: 100,
        reth: Some((0x8000_0000, rkey, 768)),
        len: 256,
        ..Req::default()
    };
    let o = env.run(Some((first, bytes(256, 1))), None);
    assert!(o.acks.is_empty());
    let middle = Req {
        opcode: 0x07,
        psn: 101,
        len: 256,
        ..Req::default()
    };
    let o = env.run(Some((middle, bytes(256, 2))), None);
    assert!(o.acks.is_empty() && o.cqes.is_empty());
    assert_eq!(o.dma_writes, vec![(0x20_0100, 256)]);
    assert_eq!(read_mem(&env, 0x20_0100, 256), bytes(256, 2));
    assert_eq!(env.qps_field("epsn"), 102);
    assert_eq!(env.qps_field("msg_off"), 512);
    let mut hist: BTreeMap<u64, usize> = BTreeMap::new();
    for s in &o.states {
        *hist.entry(*s).or_default() += 1;
    }
    println!(
        "middle WRITE packet, 256 bytes: {} cycles; (state, cycles): {hist:?}",
        o.states.len()
    );
    assert!(
        o.states.len() <= MIDDLE_WRITE_CYCLES,
        "{} cycles",
        o.states.len()
    );
}

/// The bound `a_middle_write_packet_takes_few_cycles` holds.
const MIDDLE_WRITE_CYCLES: usize = 9;

/// A scripted conversation; each answer is what the model's `responder_rx` gives for the
/// same packet and context (the rules in `model/src/responder.rs`).
/// Posted receives are read together (up to `BUF`, to the ring's wrap) and served from
/// the block's buffer; a table write (here a reconnection's) forgets them.
#[test]
fn receives_are_read_ahead() {
    let mut env = Env::new();
    let lkey = mr_key(1, 0x11);
    for slot in 0..4 {
        env.post(slot, 0x50 + slot, 0x7000_0100 + 0x100 * slot, 0x100, lkey);
    }
    env.run(None, Some(3));
    let send = |psn: u32| Req {
        opcode: 0x04,
        psn,
        ack_req: true,
        len: 64,
        ..Req::default()
    };
    let o = env.run(Some((send(100), bytes(64, 1))), None);
    assert_eq!(
        o.dma_reads,
        vec![(RQ_RING, 3 * 64)],
        "the 3 posted, at once"
    );
    let o = env.run(Some((send(101), bytes(64, 2))), None);
    assert!(o.dma_reads.is_empty(), "the 2nd receive from the buffer");
    assert_eq!(o.cqes.len(), 1);
    assert_eq!(o.cqes[0].3, 0x51, "its wr_id");
    // the 4th posted: the 3rd still held, the 4th read alone
    env.run(None, Some(4));
    let o = env.run(Some((send(102), bytes(64, 3))), None);
    assert!(o.dma_reads.is_empty());
    assert_eq!(o.cqes[0].3, 0x52);
    let o = env.run(Some((send(103), bytes(64, 4))), None);
    assert_eq!(o.dma_reads, vec![(RQ_RING + 3 * 64, 64)]);
    assert_eq!(o.cqes[0].3, 0x53);
    // posted again around the ring (slots 0, 1); the contexts rewritten (as a
    // command would): what was read ahead is forgotten
    env.post(0, 0x60, 0x7000_0100, 0x100, lkey);
    env.post(1, 0x61, 0x7000_0200, 0x100, lkey);
    env.run(None, Some(6));
    let o = env.run(Some((send(104), bytes(64, 5))), None);
    assert_eq!(o.dma_reads, vec![(RQ_RING, 2 * 64)]);
    assert_eq!(o.cqes[0].3, 0x60);
    env.post(1, 0x71, 0x7000_0200, 0x100, lkey);
    let (at, w) = field(qpa_layout::FIELDS, "min_rnr_timer");
    put(&mut env.qpa, at, w, 13); // a table write (s_tbl_wr): the buffer is forgotten
    let o = env.run(Some((send(105), bytes(64, 6))), None);
    assert_eq!(o.dma_reads, vec![(RQ_RING + 64, 64)]);
    assert_eq!(o.cqes[0].3, 0x71, "slot 1 read again");
}

#[test]
fn sends_writes_duplicates_gaps_and_errors_as_the_model() {
    let mut env = Env::new();
    let lkey = mr_key(1, 0x11);
    let rkey = mr_key(2, 0x22);
    // SEND ONLY with no receive posted: RNR NAK with the QP's timer, nothing changes.
    let send_only = Req {
        opcode: 0x04,
        psn: 100,
        ack_req: true,
        len: 100,
        ..Req::default()
    };
    let o = env.run(Some((send_only, bytes(100, 1))), None);
    assert_eq!(o.acks, vec![(0x20 | 12, 100, 0)]);
    assert_eq!(o.counters[RNR], 1);
    assert!(o.dma_writes.is_empty());
    assert_eq!(env.qps_field("epsn"), 100);

    // Two receives posted, a doorbell.
    env.post(0, 0xAA, 0x7000_0100, 1000, lkey);
    env.post(1, 0xBB, 0x7000_0800, 64, lkey);
    env.run(None, Some(2));
    assert_eq!(env.qps_field("rq_pi"), 2);

    // SEND FIRST (one PMTU, 256) then SEND LAST (50 bytes) with AckReq.
    let p1 = bytes(256, 3);
    let o = env.run(
        Some((
            Req {
                opcode: 0x00,
                psn: 100,
                len: 256,
                ..Req::default()
            },
            p1.clone(),
        )),
        None,
    );
    assert!(o.acks.is_empty() && o.cqes.is_empty());
    assert_eq!(o.dma_writes, vec![(0x10_0100, 256)]);
    assert_eq!(env.qps_field("epsn"), 101);
    assert_eq!(env.qps_field("prog"), PROG_SEND);
    assert_eq!(env.qps_field("rq_ci"), 1);
    let p2 = bytes(50, 9);
    let o = env.run(
        Some((
            Req {
                opcode: 0x02,
                psn: 101,
                ack_req: true,
                len: 50,
                ..Req::default()
            },
            p2.clone(),
        )),
        None,
    );
    assert_eq!(o.dma_writes, vec![(0x10_0200, 50)]);
    assert_eq!(o.cqes, vec![(0, 128, 306, 0xAA, 0, 0, 0)]);
    assert_eq!(o.acks, vec![(0x1f, 101, 1)]);
    assert_eq!(read_mem(&env, 0x10_0100, 256), p1);
    assert_eq!(read_mem(&env, 0x10_0200, 50), p2);
    assert_eq!(env.qps_field("prog"), PROG_IDLE);
    assert_eq!(env.qps_field("msn"), 1);

    // A duplicate with AckReq: ACK of ePSN - 1, payload dropped.
    let o = env.run(
        Some((
            Req {
                psn: 99,
                ..send_only
            },
            bytes(100, 1),
        )),
        None,
    );
    assert_eq!(o.acks, vec![(0x1f, 101, 1)]);
    assert_eq!(o.counters[DUP], 1);
    assert!(o.dma_writes.is_empty());

    // A gap: one PSN-sequence NAK of the ePSN, then silence.
    let write_only = Req {
        opcode: 0x0A,
        psn: 105,
        ack_req: true,
        reth: Some((0x8000_0000, rkey, 10)),
        len: 10,
        ..Req::default()
    };
    let o = env.run(Some((write_only, bytes(10, 4))), None);
    assert_eq!(o.acks, vec![(0x60, 102, 1)]);
    assert_eq!((o.counters[SEQ], o.counters[NAK]), (1, 1));
    let o = env.run(
        Some((
            Req {
                psn: 106,
                ..write_only
            },
            bytes(10, 4),
        )),
        None,
    );
    assert!(o.acks.is_empty());
    assert_eq!((o.counters[SEQ], o.counters[NAK]), (1, 0));
    assert_eq!(env.qps_field("nak_sent"), 1);

    // WRITE FIRST (256 of 300 bytes), then WRITE LAST WITH IMMEDIATE (44 bytes):
    // the receive in slot 1 completes as RECV_RDMA_WITH_IMM of 300 bytes.
    let w1 = bytes(256, 5);
    let o = env.run(
        Some((
            Req {
                opcode: 0x06,
                psn: 102,
                reth: Some((0x8000_0010, rkey, 300)),
                len: 256,
                ..Req::default()
            },
            w1.clone(),
        )),
        None,
    );
    assert!(o.acks.is_empty());
    assert_eq!(o.dma_writes, vec![(0x20_0010, 256)]);
    assert_eq!(env.qps_field("nak_sent"), 0);
    assert_eq!(env.qps_field("prog"), PROG_WRITE);
    let w2 = bytes(44, 6);
    let o = env.run(
        Some((
            Req {
                opcode: 0x09,
                psn: 103,
                ack_req: true,
                imm: Some(0xdead_beef),
                len: 44,
                ..Req::default()
            },
            w2.clone(),
        )),
        None,
    );
    assert_eq!(o.dma_writes, vec![(0x20_0110, 44)]);
    assert_eq!(o.cqes, vec![(0, 129, 300, 0xBB, 1, 0xdead_beef, 2)]);
    assert_eq!(o.acks, vec![(0x1f, 103, 2)]);
    assert_eq!(read_mem(&env, 0x20_0010, 256), w1);
    assert_eq!(read_mem(&env, 0x20_0110, 44), w2);
    assert_eq!(env.qps_field("epsn"), 104);
    assert_eq!(env.qps_field("rq_ci"), 2);

    // A WRITE whose rkey does not name the MR: NAK Remote Access Error, QP error.
    let o = env.run(
        Some((
            Req {
                psn: 104,
                reth: Some((0x8000_0000, rkey ^ 1, 10)),
                ..write_only
            },
            bytes(10, 4),
        )),
        None,
    );
    assert_eq!(o.acks, vec![(0x62, 104, 2)]);
    assert_eq!((o.qp_err, o.counters[NAK]), (1, 1));
    assert!(o.dma_writes.is_empty());
    assert_eq!(env.qps_field("epsn"), 104);
}
