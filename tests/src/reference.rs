//! The reference executor: what both hosts' memory and every completion queue must hold
//! after a plan has run, computed without any device, from the ABI's rules alone.
//!
//! RC executes one QP's requests in order at the responder, and every zone is written by
//! one stream only (see [`crate::plan`]), so applying the successful ops in plan order gives
//! the final memory exactly. Fetch-adds on a shared counter are the exception: their order
//! across QPs is free, so their result slots are left out of the memory comparison and
//! checked by [`SharedUse`] prefix sums instead.

use std::collections::BTreeMap;
use std::ops::Range;

use rocenic_proto::abi::verbs::{WcOpcode, WcStatus};

use crate::case::Side;
use crate::plan::{Addr, Fate, KeyRef, Kind, Plan, RecvFate, Zone};

/// SplitMix64: reproducible bytes for the memory patterns.
#[derive(Debug, Clone)]
pub struct SplitMix(pub u64);

impl SplitMix {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut x = self.0;
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        x ^ (x >> 31)
    }

    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let v = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
}

/// A stateless mix of two words (for per-frame decisions of a drop filter).
pub fn mix(a: u64, b: u64) -> u64 {
    SplitMix(a ^ b.rotate_left(32) ^ 0x5851_f42d_4c95_7f2d).next_u64()
}

/// The memory both hosts start with: a seeded pattern over every byte, with the shared
/// counters small enough that sums of adds never wrap.
pub fn initial_images(plan: &Plan, seed: u64) -> [Vec<u8>; 2] {
    Side::BOTH.map(|side| {
        let lay = &plan.layout[side.idx()];
        let mut img = vec![0u8; lay.len];
        SplitMix(seed ^ (0xa5a5_0000 + side.idx() as u64)).fill(&mut img);
        let at = lay.start(Zone::Shared);
        let v = u64::from_le_bytes(img[at..at + 8].try_into().expect("8")) >> 4;
        img[at..at + 8].copy_from_slice(&v.to_le_bytes());
        img
    })
}

/// A completion the ABI requires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExpWc {
    pub wr_id: u64,
    pub status: WcStatus,
    pub opcode: WcOpcode,
    pub byte_len: u32,
    pub imm: Option<u32>,
    /// SEND_WITH_INV: the invalidated key.
    pub inv: Option<KeyRef>,
    /// For NAKed requests, the AETH syndrome.
    pub vendor_err: Option<u32>,
}

/// A fetch-add on a shared counter, checked by prefix sums.
#[derive(Clone, Copy, Debug)]
pub struct SharedUse {
    pub op: usize,
    /// The issuing side and QP.
    pub side: Side,
    pub qp: usize,
    /// Buffer offset of the result slot on the issuing side.
    pub result_off: usize,
    pub add: u64,
}

/// Everything a run must end with.
#[derive(Clone, Debug)]
pub struct Expected {
    pub mem: [Vec<u8>; 2],
    /// Byte ranges whose final contents the ABI leaves open.
    pub dont_care: [Vec<Range<usize>>; 2],
    /// Send-queue completions per (issuing side, QP), in order.
    pub send: BTreeMap<(Side, usize), Vec<ExpWc>>,
    /// Receive-queue completions per (receiving side, QP), in order.
    pub recv: BTreeMap<(Side, usize), Vec<ExpWc>>,
    /// Fetch-adds on each side's shared counter, and the counter's initial value.
    pub shared: [(u64, Vec<SharedUse>); 2],
    /// The byte ranges of each side's buffer the device may touch by DMA: what the work
    /// requests name (local SGEs, remote targets, receive buffers), sorted and merged. A
    /// request that must fail its protection check names nothing on the side it fails.
    pub dma_ok: [Vec<Range<usize>>; 2],
}

fn rd64(m: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(m[at..at + 8].try_into().expect("8 bytes"))
}

fn wr64(m: &mut [u8], at: usize, v: u64) {
    m[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

fn buf(a: Addr) -> usize {
    match a {
        Addr::Buf(o) if o >= 0 => o as usize,
        other => panic!("a successful op uses an unusable address {other:?}"),
    }
}

/// Computes the expected results, and fills in the compare values of CMP_SWAPs (which
/// depend on the word's value at that point of the stream).
pub fn expect(plan: &mut Plan, images: &[Vec<u8>; 2]) -> Expected {
    let mut mem = images.clone();
    let mut dont_care: [Vec<Range<usize>>; 2] = Default::default();
    let mut send: BTreeMap<(Side, usize), Vec<ExpWc>> = BTreeMap::new();
    let mut recv: BTreeMap<(Side, usize), Vec<ExpWc>> = BTreeMap::new();
    let mut shared: [(u64, Vec<SharedUse>); 2] = Side::BOTH.map(|s| {
        let at = plan.layout[s.idx()].start(Zone::Shared);
        (rd64(&images[s.idx()], at), Vec::new())
    });

    for i in 0..plan.ops.len() {
        let op = plan.ops[i].clone();
        let (me, peer) = (op.side.idx(), op.side.peer().idx());
        if op.kind == Kind::CmpSwap {
            // The compare value: the word's current value for a hit, a different one else.
            let at = op.remote.and_then(|r| match r.addr {
                Addr::Buf(o) if o >= 0 && (o as usize) + 8 <= mem[peer].len() => Some(o as usize),
                _ => None,
            });
            let cur = at.map_or(0, |a| rd64(&mem[peer], a));
            plan.ops[i].compare_add = if op.hit {
                cur
            } else {
                cur ^ 0x5555_5555_5555_5555
            };
        }
        let op = plan.ops[i].clone();
        if op.fate == Fate::Ok {
            match op.kind {
                Kind::Write | Kind::WriteImm => {
                    if op.len > 0 {
                        let l = buf(op.local.expect("sge").addr);
                        let r = buf(op.remote.expect("remote").addr);
                        let data = mem[me][l..l + op.len as usize].to_vec();
                        mem[peer][r..r + op.len as usize].copy_from_slice(&data);
                    }
                }
                Kind::Send | Kind::SendImm | Kind::SendInv => {
                    if op.len > 0 {
                        let l = buf(op.local.expect("sge").addr);
                        let r = plan.recvs[op.recv.expect("recv")].off;
                        let data = mem[me][l..l + op.len as usize].to_vec();
                        mem[peer][r..r + op.len as usize].copy_from_slice(&data);
                    }
                }
                Kind::Read => {
                    if op.len > 0 {
                        let l = buf(op.local.expect("sge").addr);
                        let r = buf(op.remote.expect("remote").addr);
                        let data = mem[peer][r..r + op.len as usize].to_vec();
                        mem[me][l..l + op.len as usize].copy_from_slice(&data);
                    }
                }
                Kind::CmpSwap => {
                    let l = buf(op.local.expect("sge").addr);
                    let r = buf(op.remote.expect("remote").addr);
                    let orig = rd64(&mem[peer], r);
                    if orig == op.compare_add {
                        wr64(&mut mem[peer], r, op.swap);
                    }
                    wr64(&mut mem[me], l, orig);
                }
                Kind::FetchAdd => {
                    let l = buf(op.local.expect("sge").addr);
                    let r = buf(op.remote.expect("remote").addr);
                    let orig = rd64(&mem[peer], r);
                    wr64(&mut mem[peer], r, orig.wrapping_add(op.compare_add));
                    if op.shared {
                        dont_care[me].push(l..l + 8);
                        shared[peer].1.push(SharedUse {
                            op: op.idx,
                            side: op.side,
                            qp: op.qp,
                            result_off: l,
                            add: op.compare_add,
                        });
                    } else {
                        wr64(&mut mem[me], l, orig);
                    }
                }
            }
        }
        if let Fate::Fail {
            status: WcStatus::RnrRetryExcErr,
            ..
        } = op.fate
        {
            // The responder looks for a receive only at the last packet of a WRITE with
            // immediate (only that opcode says "with immediate"), so the earlier packets'
            // data is placed; after the error it is undefined, as in IB.
            if op.kind == Kind::WriteImm && op.len > plan.pmtu {
                if let Some(Addr::Buf(r)) = op.remote.map(|r| r.addr) {
                    dont_care[peer].push(r as usize..r as usize + op.len as usize);
                }
            }
        }
        let wc = match op.fate {
            Fate::Ok if !op.signaled => None,
            Fate::Ok => Some(ExpWc {
                wr_id: op.wr_id(),
                status: WcStatus::Success,
                opcode: op.kind.wc_opcode(),
                byte_len: op.len,
                imm: None,
                inv: None,
                vendor_err: None,
            }),
            Fate::Fail { status, vendor_err } => Some(ExpWc {
                wr_id: op.wr_id(),
                status,
                opcode: op.kind.wc_opcode(),
                byte_len: 0,
                imm: None,
                inv: None,
                vendor_err,
            }),
            Fate::Flush => Some(ExpWc {
                wr_id: op.wr_id(),
                status: WcStatus::WrFlushErr,
                opcode: op.kind.wc_opcode(),
                byte_len: 0,
                imm: None,
                inv: None,
                vendor_err: None,
            }),
        };
        if let Some(wc) = wc {
            send.entry((op.side, op.qp)).or_default().push(wc);
        }
    }

    // Receives complete in RQ order, which is the order of the consuming ops.
    let mut recvs = plan.recvs.clone();
    recvs.sort_by_key(|r| (r.side, r.qp, r.rq_index));
    for r in &recvs {
        let op = &plan.ops[r.op];
        let wc = match r.fate {
            RecvFate::Pending => continue,
            RecvFate::Ok => {
                let (opcode, byte_len) = if op.kind == Kind::WriteImm {
                    (WcOpcode::RecvRdmaWithImm, op.len)
                } else {
                    (WcOpcode::Recv, op.len)
                };
                ExpWc {
                    wr_id: r.wr_id(),
                    status: WcStatus::Success,
                    opcode,
                    byte_len,
                    imm: op.imm,
                    inv: op.inv.map(KeyRef::Inv),
                    vendor_err: None,
                }
            }
            RecvFate::Fail(status) => {
                dont_care[r.side.idx()].push(r.off..r.off + r.len as usize);
                ExpWc {
                    wr_id: r.wr_id(),
                    status,
                    opcode: WcOpcode::Recv,
                    byte_len: 0,
                    imm: None,
                    inv: None,
                    vendor_err: None,
                }
            }
            RecvFate::Flush => ExpWc {
                wr_id: r.wr_id(),
                status: WcStatus::WrFlushErr,
                opcode: WcOpcode::Recv,
                byte_len: 0,
                imm: None,
                inv: None,
                vendor_err: None,
            },
        };
        recv.entry((r.side, r.qp)).or_default().push(wc);
    }

    Expected {
        mem,
        dont_care,
        send,
        recv,
        shared,
        dma_ok: dma_ranges(plan),
    }
}

/// See [`Expected::dma_ok`].
fn dma_ranges(plan: &Plan) -> [Vec<Range<usize>>; 2] {
    let mut r: [Vec<Range<usize>>; 2] = Default::default();
    let mut add = |side: Side, a: Addr, len: u32| {
        if let Addr::Buf(o) = a {
            if o >= 0 && len > 0 {
                r[side.idx()].push(o as usize..o as usize + len as usize);
            }
        }
    };
    for op in &plan.ops {
        let inj = op.injected;
        let local_bad = inj
            && op.fate
                == Fate::Fail {
                    status: WcStatus::LocProtErr,
                    vendor_err: None,
                };
        let rnr = matches!(
            op.fate,
            Fate::Fail {
                status: WcStatus::RnrRetryExcErr,
                ..
            }
        );
        if let Some(l) = op.local {
            if !local_bad {
                add(op.side, l.addr, l.len);
            }
        }
        if let Some(t) = op.remote {
            // A failing request's target is refused before any byte moves; an RNR-failed
            // WRITE_WITH_IMM placed its first packets.
            if !inj || rnr {
                let len = if op.kind.is_atomic() { 8 } else { op.len };
                add(op.side.peer(), t.addr, len);
            }
        }
        if let Some(k) = op.recv {
            let rv = &plan.recvs[k];
            add(rv.side, Addr::Buf(rv.off as i64), rv.len);
        }
    }
    for v in r.iter_mut() {
        v.sort_by_key(|x| x.start);
        let mut merged: Vec<Range<usize>> = Vec::new();
        for x in v.drain(..) {
            match merged.last_mut() {
                Some(m) if x.start <= m.end => m.end = m.end.max(x.end),
                _ => merged.push(x),
            }
        }
        *v = merged;
    }
    r
}
