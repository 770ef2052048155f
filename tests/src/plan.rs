//! From a [`Case`] to concrete work: every op placed in a zone of a side's buffer, with its
//! keys, its SQ position, whether it is signaled, the receive it consumes, and the fate the
//! ABI requires for it (success, a given error, or flushed).
//!
//! # Memory layout
//!
//! Each side has one buffer, registered whole with every access right (the *main* MR), cut
//! into zones separated by 64-byte gaps (the gaps hold pattern bytes too, so a stray write
//! anywhere shows up in the memory comparison):
//!
//! ```text
//! Src            message sources and READ sources; never written during a run
//! W(q)           written by the peer's stream on QP q: WRITE targets and receive buffers
//! R(q)           READ results of this side's stream on QP q
//! Atom(q)        the private atomic words the peer's stream on QP q targets
//! Ares(q)        one 8-byte result slot per atomic of this side's stream on QP q
//! Shared         a counter word targeted by fetch-adds of the peer's streams on every QP
//! Guard          a small MR (bounds faults), surrounded by wide gaps
//! NoAcc          an MR lacking one REMOTE_* flag
//! RoLocal        an MR with REMOTE_READ only (no LOCAL_WRITE)
//! OtherPd        an MR in a second PD
//! Inv(k)         an MR for the k-th SEND_WITH_INV aimed at this side
//! ```
//!
//! A zone is written by one stream only (the ops one side issues on one QP, which the
//! responder executes in order), so the expected final memory is well defined. A READ of
//! the write zone (`after_write`) is kept only if no later op of its stream writes the bytes
//! it reads (a duplicate READ is re-executed and could see them); otherwise it reads `Src`.

use std::collections::BTreeMap;
use std::fmt;

use rocenic_proto::abi::verbs::{access, WcOpcode, WcStatus, WrOpcode};
use rocenic_proto::wire::{NakCode, Syndrome};

use crate::case::{
    BadOp, Case, Inject, Len, LocalFault, Op, RemoteFault, SendExtra, Side, Word, ATOM_WORDS,
    MAX_INLINE, MAX_QPS,
};

/// Gap between zones, bytes.
const GAP: usize = 64;
/// Size of the small MRs (Guard, NoAcc, RoLocal, OtherPd).
const SMALL_MR: usize = 256;
/// Size of an invalidation target MR.
const INV_MR: usize = 64;

/// A named part of a side's buffer.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Zone {
    Src,
    W(u8),
    R(u8),
    Atom(u8),
    Ares(u8),
    Shared,
    Guard,
    NoAcc,
    RoLocal,
    OtherPd,
    Inv(u16),
}

impl fmt::Debug for Zone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Zone::Src => f.write_str("Src"),
            Zone::W(q) => write!(f, "W(qp{q})"),
            Zone::R(q) => write!(f, "R(qp{q})"),
            Zone::Atom(q) => write!(f, "Atom(qp{q})"),
            Zone::Ares(q) => write!(f, "Ares(qp{q})"),
            Zone::Shared => f.write_str("Shared"),
            Zone::Guard => f.write_str("Guard"),
            Zone::NoAcc => f.write_str("NoAcc"),
            Zone::RoLocal => f.write_str("RoLocal"),
            Zone::OtherPd => f.write_str("OtherPd"),
            Zone::Inv(k) => write!(f, "Inv{k}"),
        }
    }
}

/// Where the zones of one side's buffer lie.
#[derive(Clone, Debug, Default)]
pub struct Layout {
    /// (zone, start, length), in address order.
    pub zones: Vec<(Zone, usize, usize)>,
    /// Total buffer length.
    pub len: usize,
}

impl Layout {
    fn build(sizes: &BTreeMap<Zone, usize>, guard_gap: usize) -> Layout {
        let mut at = GAP;
        let mut zones = Vec::new();
        for (&z, &len) in sizes {
            let gap = if z == Zone::Guard { guard_gap } else { GAP };
            if z == Zone::Guard {
                at += guard_gap - GAP;
            }
            let len = len.max(8).next_multiple_of(64);
            zones.push((z, at, len));
            at += len + gap;
        }
        Layout {
            zones,
            len: at.next_multiple_of(4096),
        }
    }

    /// Start of a zone.
    ///
    /// # Panics
    /// If the layout has no such zone (a bug of the planner).
    pub fn start(&self, z: Zone) -> usize {
        self.get(z)
            .unwrap_or_else(|| panic!("zone {z:?} not in layout"))
            .0
    }

    pub fn get(&self, z: Zone) -> Option<(usize, usize)> {
        self.zones
            .iter()
            .find(|(zz, _, _)| *zz == z)
            .map(|&(_, s, l)| (s, l))
    }

    /// A readable name for a buffer offset: `W(qp0)+17`, or `gap after Src+3`.
    pub fn describe(&self, off: usize) -> String {
        let mut prev: Option<(Zone, usize, usize)> = None;
        for &(z, s, l) in &self.zones {
            if off < s {
                return match prev {
                    Some((pz, ps, pl)) => format!("gap after {pz:?}+{}", off - (ps + pl)),
                    None => format!("leading gap+{off}"),
                };
            }
            if off < s + l {
                return format!("{z:?}+{}", off - s);
            }
            prev = Some((z, s, l));
        }
        match prev {
            Some((pz, ps, pl)) => format!("tail after {pz:?}+{}", off - (ps + pl)),
            None => format!("+{off}"),
        }
    }
}

/// Which key a request uses; resolved against the MRs the pair registered.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum KeyRef {
    Main,
    Guard,
    NoAcc,
    RoLocal,
    OtherPd,
    Inv(usize),
    /// The key of an MR registered and then deregistered.
    Stale,
    /// The main key with another tag.
    WrongTag,
    /// A key whose MR index was never registered.
    Unknown,
}

/// An address: an offset into the side's buffer, or one outside every mapping.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Addr {
    Buf(i64),
    Unmapped,
}

/// The verbs opcode of a planned request.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Write,
    WriteImm,
    Send,
    SendImm,
    SendInv,
    Read,
    CmpSwap,
    FetchAdd,
}

impl Kind {
    pub fn wr_opcode(self) -> WrOpcode {
        match self {
            Kind::Write => WrOpcode::RdmaWrite,
            Kind::WriteImm => WrOpcode::RdmaWriteWithImm,
            Kind::Send => WrOpcode::Send,
            Kind::SendImm => WrOpcode::SendWithImm,
            Kind::SendInv => WrOpcode::SendWithInv,
            Kind::Read => WrOpcode::RdmaRead,
            Kind::CmpSwap => WrOpcode::AtomicCmpAndSwp,
            Kind::FetchAdd => WrOpcode::AtomicFetchAndAdd,
        }
    }

    pub fn wc_opcode(self) -> WcOpcode {
        self.wr_opcode().wc_opcode()
    }

    pub fn consumes_recv(self) -> bool {
        matches!(
            self,
            Kind::WriteImm | Kind::Send | Kind::SendImm | Kind::SendInv
        )
    }

    pub fn is_send(self) -> bool {
        matches!(self, Kind::Send | Kind::SendImm | Kind::SendInv)
    }

    pub fn is_atomic(self) -> bool {
        matches!(self, Kind::CmpSwap | Kind::FetchAdd)
    }

    /// The QP/MR flag the responder needs.
    pub fn remote_access(self) -> u32 {
        match self {
            Kind::Write | Kind::WriteImm => access::REMOTE_WRITE,
            Kind::Read => access::REMOTE_READ,
            Kind::CmpSwap | Kind::FetchAdd => access::REMOTE_ATOMIC,
            _ => 0,
        }
    }
}

/// What must happen to a send work request.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Fate {
    Ok,
    /// Completes with this status (and, for NAKed requests, this vendor_err).
    Fail {
        status: WcStatus,
        vendor_err: Option<u32>,
    },
    Flush,
}

/// What must happen to a receive work request.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RecvFate {
    Ok,
    /// Completes with an error; the buffer's contents are undefined.
    Fail(WcStatus),
    Flush,
    /// Posted and never consumed: no completion.
    Pending,
}

/// A local scatter/gather entry.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Sgl {
    pub addr: Addr,
    pub len: u32,
    pub key: KeyRef,
}

/// A remote target.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Remote {
    pub addr: Addr,
    pub key: KeyRef,
}

/// One send work request, fully resolved.
#[derive(Clone, Debug)]
pub struct POp {
    pub idx: usize,
    pub side: Side,
    pub qp: usize,
    /// Position in its (side, qp) send queue.
    pub sq_index: usize,
    pub kind: Kind,
    pub len: u32,
    pub inline: bool,
    pub signaled: bool,
    /// The local SGE (none for a zero-length message).
    pub local: Option<Sgl>,
    pub remote: Option<Remote>,
    pub imm: Option<u32>,
    /// SEND_WITH_INV: the index of the peer's Inv MR.
    pub inv: Option<usize>,
    /// CMP_SWAP: compare equals the current value (the compare itself is set by the
    /// reference, which knows the word's value at that point).
    pub hit: bool,
    pub compare_add: u64,
    pub swap: u64,
    /// FETCH_ADD on the peer's shared counter.
    pub shared: bool,
    /// Index into `Plan::recvs` of the receive this request consumes.
    pub recv: Option<usize>,
    pub fate: Fate,
    pub injected: bool,
    /// FENCE: waits for earlier READs and atomics.
    pub fence: bool,
}

impl POp {
    pub fn wr_id(&self) -> u64 {
        SEND_WR_ID | self.idx as u64
    }
}

/// One receive work request.
#[derive(Clone, Debug)]
pub struct PRecv {
    pub idx: usize,
    /// The receiving side.
    pub side: Side,
    pub qp: usize,
    pub rq_index: usize,
    /// Buffer offset and length of the receive buffer.
    pub off: usize,
    pub len: u32,
    /// The op that consumes it.
    pub op: usize,
    pub fate: RecvFate,
    /// Whether the host posts it at all.
    pub posted: bool,
}

impl PRecv {
    pub fn wr_id(&self) -> u64 {
        RECV_WR_ID | self.idx as u64
    }
}

/// wr_id tags: the low bits are the index in the plan.
pub const SEND_WR_ID: u64 = 0x5e00_0000_0000_0000;
pub const RECV_WR_ID: u64 = 0x7e00_0000_0000_0000;

/// Everything the executor and the reference need.
#[derive(Clone)]
pub struct Plan {
    pub nqp: usize,
    pub pmtu: u32,
    pub ops: Vec<POp>,
    pub recvs: Vec<PRecv>,
    pub layout: [Layout; 2],
    /// QP access flags per side and QP (what the peer may do through it).
    pub qp_access: [[u32; MAX_QPS]; 2],
    /// Access flags of each side's NoAcc MR.
    pub noacc_access: [u32; 2],
    /// Number of Inv MRs per side.
    pub n_inv: [usize; 2],
    /// QPs that must end in ERR.
    pub err_qps: Vec<(Side, usize)>,
    /// Whether every receive is posted before any send.
    pub recvs_first: bool,
}

impl fmt::Debug for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "Plan: {} QP(s), pmtu {}", self.nqp, self.pmtu)?;
        for op in &self.ops {
            let lay = &self.layout[op.side.idx()];
            let peer = &self.layout[op.side.peer().idx()];
            write!(
                f,
                "  op#{:<2} {:?}->{:?} qp{} sq[{}] {:?} len={}",
                op.idx,
                op.side,
                op.side.peer(),
                op.qp,
                op.sq_index,
                op.kind,
                op.len
            )?;
            if let Some(l) = op.local {
                write!(f, " local={}", describe_addr(lay, l.addr))?;
                if l.key != KeyRef::Main {
                    write!(f, " lkey={:?}", l.key)?;
                }
            }
            if let Some(r) = op.remote {
                write!(
                    f,
                    " remote={} rkey={:?}",
                    describe_addr(peer, r.addr),
                    r.key
                )?;
            }
            if let Some(i) = op.imm {
                write!(f, " imm={i:#x}")?;
            }
            if let Some(k) = op.inv {
                write!(f, " inv=Inv{k}")?;
            }
            if op.kind == Kind::CmpSwap {
                write!(
                    f,
                    " {} compare={:#x} swap={:#x}",
                    if op.hit { "hit" } else { "miss" },
                    op.compare_add,
                    op.swap
                )?;
            }
            if op.kind == Kind::FetchAdd {
                write!(f, " add={:#x}", op.compare_add)?;
            }
            if let Some(r) = op.recv {
                write!(f, " recv#{r}")?;
            }
            if op.inline {
                f.write_str(" inline")?;
            }
            if !op.signaled {
                f.write_str(" unsignaled")?;
            }
            if op.fence {
                f.write_str(" fence")?;
            }
            if op.injected {
                f.write_str(" INJECTED")?;
            }
            writeln!(f, " => {:?}", op.fate)?;
        }
        for r in &self.recvs {
            writeln!(
                f,
                "  recv#{:<2} on {:?} qp{} rq[{}] buf={} len={} for op#{} {}=> {:?}",
                r.idx,
                r.side,
                r.qp,
                r.rq_index,
                self.layout[r.side.idx()].describe(r.off),
                r.len,
                r.op,
                if r.posted { "" } else { "(not posted) " },
                r.fate
            )?;
        }
        Ok(())
    }
}

fn describe_addr(l: &Layout, a: Addr) -> String {
    match a {
        Addr::Buf(o) if o >= 0 => l.describe(o as usize),
        Addr::Buf(o) => format!("buffer{o}"),
        Addr::Unmapped => "unmapped".into(),
    }
}

/// A zone-relative place, before the layout is known.
#[derive(Clone, Copy, Debug)]
struct ZAddr {
    zone: Zone,
    off: i64,
}

#[derive(Clone, Debug)]
struct Pre {
    side: Side,
    qp: usize,
    kind: Kind,
    len: u32,
    inline: bool,
    signaled: bool,
    local: Option<(Option<ZAddr>, KeyRef)>,
    remote: Option<(ZAddr, KeyRef)>,
    recv: Option<(ZAddr, u32)>,
    imm: Option<u32>,
    inv: bool,
    hit: bool,
    add_or_swap: u64,
    shared: bool,
    inject: Option<Inject>,
    /// For `after_write` READs: the source is the peer's write zone.
    read_written: bool,
    /// The remote fault an injected request really has.
    applied_remote: Option<RemoteFault>,
    /// Targets the MR the SEND_WITH_INV right before it invalidated.
    after_inv: bool,
}

fn syndrome(code: NakCode) -> u32 {
    u8::from(Syndrome::Nak(code)) as u32
}

/// Turns a case into a plan; see the module documentation.
pub fn plan(case: &Case) -> Plan {
    let pmtu = case.pmtu;
    let nqp = case
        .ops
        .iter()
        .map(|o| o.qp() as usize % MAX_QPS + 1)
        .max()
        .unwrap_or(1);
    let mut ops: Vec<Op> = case.ops.clone();
    let mut qp_access = [[access::ALL; MAX_QPS]; 2];
    let mut noacc_access = [access::LOCAL_WRITE | access::REMOTE_READ; 2];

    // Error cases: B issues nothing on QP 0 (its QP may enter ERR at a time the reference
    // cannot know), and the injected request goes after `at` of A's QP-0 ops.
    let mut inject_pos: Option<(usize, Inject)> = None;
    if let Some((at, inj)) = case.inject {
        ops.retain(|o| !(o.from() == Side::B && qp_of(o) == 0));
        let mut seen = 0;
        let mut pos = ops.len();
        for (i, o) in ops.iter().enumerate() {
            if o.from() == Side::A && qp_of(o) == 0 {
                if seen == at as usize {
                    pos = i;
                    break;
                }
                seen += 1;
            }
        }
        inject_pos = Some((pos, inj));
    }

    // Resolve ops into Pre, inserting the injected one.
    let mut pres: Vec<Pre> = Vec::new();
    let mut inject_applied: Option<Inject> = None;
    for i in 0..=ops.len() {
        if let Some((pos, inj)) = inject_pos {
            if pos == i {
                let (p, acc, noacc) = pre_inject(inj, pmtu);
                inject_applied = p.inject;
                if p.after_inv {
                    // The SEND_WITH_INV that invalidates the MR the request then uses.
                    pres.push(pre_op(
                        &Op::Send {
                            qp: 0,
                            from: Side::A,
                            len: Len::Bytes(0),
                            local_off: 0,
                            remote_off: 0,
                            slack: 0,
                            extra: SendExtra::Inv,
                            inline: false,
                            signaled: true,
                        },
                        pmtu,
                    ));
                }
                if let Some(a) = acc {
                    qp_access[Side::B.idx()][0] = a;
                }
                if let Some(a) = noacc {
                    noacc_access[Side::B.idx()] = a;
                }
                pres.push(p);
            }
        }
        if let Some(op) = ops.get(i) {
            pres.push(pre_op(op, pmtu));
        }
    }

    // A responder QP without a flag refuses every request needing it: before the injected
    // request, such ops of A on QP 0 become SENDs of the same length.
    let b0 = qp_access[Side::B.idx()][0];
    if b0 != access::ALL {
        for p in pres.iter_mut() {
            if p.inject.is_none()
                && p.side == Side::A
                && p.qp == 0
                && p.kind.remote_access() & !b0 != 0
            {
                let len = if p.kind.is_atomic() { 8 } else { p.len };
                *p = pre_op(
                    &Op::Send {
                        qp: 0,
                        from: Side::A,
                        len: Len::Bytes(len),
                        local_off: 0,
                        remote_off: 0,
                        slack: 0,
                        extra: SendExtra::None,
                        inline: false,
                        signaled: p.signaled,
                    },
                    pmtu,
                );
            }
        }
    }

    // READs of the written zone: only if no later op of the stream writes those bytes.
    for i in 0..pres.len() {
        if !pres[i].read_written {
            continue;
        }
        let (src, _) = pres[i].remote.expect("read has a remote");
        let (lo, hi) = (src.off, src.off + pres[i].len as i64);
        let clobbered = pres[i + 1..].iter().any(|p| {
            if p.side != pres[i].side || p.qp != pres[i].qp {
                return false;
            }
            let w = match (p.kind, p.remote, p.recv) {
                (Kind::Write | Kind::WriteImm, Some((z, _)), _) => Some((z, p.len)),
                (_, _, Some((z, _))) => Some((z, p.len)),
                _ => None,
            };
            w.is_some_and(|(z, len)| z.zone == src.zone && z.off < hi && lo < z.off + len as i64)
        });
        if clobbered {
            let p = &mut pres[i];
            p.read_written = false;
            if let Some((z, _)) = p.remote.as_mut() {
                z.zone = Zone::Src;
            }
        }
    }

    // Zone sizes.
    let mut sizes: [BTreeMap<Zone, usize>; 2] = Default::default();
    let mut need = |side: Side, z: ZAddr, len: u32| {
        let e = sizes[side.idx()].entry(z.zone).or_insert(0);
        let end = (z.off.max(0) as usize) + len as usize;
        *e = (*e).max(end);
    };
    let mut ares_count = [[0usize; MAX_QPS]; 2];
    let mut inv_count = [0usize; 2];
    let mut guard_gap = GAP;
    for p in pres.iter_mut() {
        let peer = p.side.peer();
        if let Some((Some(z), _)) = p.local {
            if z.zone == Zone::Ares(0) {
                // Placeholder: a result slot of this stream.
                let k = &mut ares_count[p.side.idx()][p.qp];
                let slot = ZAddr {
                    zone: Zone::Ares(p.qp as u8),
                    off: 8 * *k as i64,
                };
                *k += 1;
                p.local = Some((Some(slot), p.local.unwrap().1));
                need(p.side, slot, 8);
            } else if z.zone != Zone::Guard {
                need(p.side, z, p.len);
            }
        }
        if let Some((z, _)) = p.remote {
            if z.zone != Zone::Guard {
                need(peer, z, if p.kind.is_atomic() { 8 } else { p.len });
            }
        }
        if let Some((z, len)) = p.recv {
            need(peer, z, len);
        }
        if p.inv {
            inv_count[peer.idx()] += 1;
        }
        if p.inject.is_some() {
            guard_gap = guard_gap.max(p.len as usize + 2 * GAP);
        }
    }
    for side in Side::BOTH {
        let s = &mut sizes[side.idx()];
        s.entry(Zone::Src).or_insert(64);
        for q in 0..nqp {
            s.insert(Zone::Atom(q as u8), 8 * ATOM_WORDS as usize);
        }
        s.insert(Zone::Shared, 8);
        for z in [Zone::Guard, Zone::NoAcc, Zone::RoLocal, Zone::OtherPd] {
            s.insert(z, SMALL_MR);
        }
        for k in 0..inv_count[side.idx()] {
            s.insert(Zone::Inv(k as u16), INV_MR);
        }
    }
    let layout = [
        Layout::build(&sizes[0], guard_gap),
        Layout::build(&sizes[1], guard_gap),
    ];
    let resolve = |side: Side, z: ZAddr| -> Addr {
        Addr::Buf(layout[side.idx()].start(z.zone) as i64 + z.off)
    };

    // Concrete ops, SQ positions, receives.
    let mut out: Vec<POp> = Vec::new();
    let mut recvs: Vec<PRecv> = Vec::new();
    let mut sq_pos = [[0usize; MAX_QPS]; 2];
    let mut rq_pos = [[0usize; MAX_QPS]; 2];
    let mut inv_next = [0usize; 2];
    for (idx, p) in pres.iter().enumerate() {
        let peer = p.side.peer();
        let sq_index = sq_pos[p.side.idx()][p.qp];
        sq_pos[p.side.idx()][p.qp] += 1;
        let local = p.local.map(|(z, key)| Sgl {
            addr: z.map_or(Addr::Unmapped, |z| resolve(p.side, z)),
            len: if p.kind.is_atomic() { 8 } else { p.len },
            key,
        });
        let remote = if p.after_inv {
            let k = inv_next[peer.idx()] - 1;
            Some(Remote {
                addr: resolve(
                    peer,
                    ZAddr {
                        zone: Zone::Inv(k as u16),
                        off: 0,
                    },
                ),
                key: KeyRef::Inv(k),
            })
        } else {
            p.remote.map(|(z, key)| Remote {
                addr: resolve(peer, z),
                key,
            })
        };
        let recv = p.recv.map(|(z, len)| {
            let r = recvs.len();
            let rq_index = rq_pos[peer.idx()][p.qp];
            rq_pos[peer.idx()][p.qp] += 1;
            let Addr::Buf(off) = resolve(peer, z) else {
                unreachable!()
            };
            recvs.push(PRecv {
                idx: r,
                side: peer,
                qp: p.qp,
                rq_index,
                off: off as usize,
                len,
                op: idx,
                fate: RecvFate::Ok,
                posted: true,
            });
            r
        });
        let inv = p.inv.then(|| {
            let k = inv_next[peer.idx()];
            inv_next[peer.idx()] += 1;
            k
        });
        out.push(POp {
            idx,
            side: p.side,
            qp: p.qp,
            sq_index,
            kind: p.kind,
            len: p.len,
            inline: p.inline,
            signaled: p.signaled,
            local,
            remote,
            imm: p.imm,
            inv,
            hit: p.hit,
            compare_add: if p.kind == Kind::FetchAdd {
                p.add_or_swap
            } else {
                0
            },
            swap: if p.kind == Kind::CmpSwap {
                p.add_or_swap
            } else {
                0
            },
            shared: p.shared,
            recv,
            fate: Fate::Ok,
            injected: p.inject.is_some(),
            fence: case.fence != 0 && idx % case.fence as usize == case.fence as usize - 1,
        });
    }

    // Forced signaling: the last op of each stream, and one in every half SQ, so that
    // unsignaled ops always retire and the SQ never fills with them.
    let half = (case.sq_depth.max(2) / 2) as usize;
    for op in out.iter_mut() {
        let n = sq_pos[op.side.idx()][op.qp];
        if op.sq_index + 1 == n || (op.sq_index + 1) % half == 0 {
            op.signaled = true;
        }
    }

    // Fates of the error cases.
    let mut err_qps = Vec::new();
    if let Some(inj_idx) = out.iter().position(|o| o.injected) {
        let inj = inject_applied.expect("injected");
        let (fate, responder_err, recv_fate) = match inj {
            Inject::Remote { fault, .. } => {
                let (status, code) = match fault {
                    RemoteFault::QpLacksAccess | RemoteFault::Misaligned { .. } => {
                        (WcStatus::RemInvReqErr, NakCode::InvalidRequest)
                    }
                    _ => (WcStatus::RemAccessErr, NakCode::RemoteAccessError),
                };
                (
                    Fate::Fail {
                        status,
                        vendor_err: Some(syndrome(code)),
                    },
                    true,
                    RecvFate::Flush,
                )
            }
            Inject::RecvTooSmall { .. } => (
                Fate::Fail {
                    status: WcStatus::RemInvReqErr,
                    vendor_err: Some(syndrome(NakCode::InvalidRequest)),
                },
                true,
                RecvFate::Fail(WcStatus::LocLenErr),
            ),
            Inject::Local { .. } => (
                Fate::Fail {
                    status: WcStatus::LocProtErr,
                    vendor_err: None,
                },
                false,
                RecvFate::Pending,
            ),
            Inject::NoRecv { .. } => (
                Fate::Fail {
                    status: WcStatus::RnrRetryExcErr,
                    vendor_err: None,
                },
                false,
                RecvFate::Pending,
            ),
        };
        out[inj_idx].fate = fate;
        for op in out.iter_mut().skip(inj_idx + 1) {
            if op.side == Side::A && op.qp == 0 {
                op.fate = Fate::Flush;
            }
        }
        err_qps.push((Side::A, 0));
        if responder_err {
            err_qps.push((Side::B, 0));
        }
        for r in recvs.iter_mut() {
            if r.side != Side::B || r.qp != 0 || r.op < inj_idx {
                continue;
            }
            if r.op == inj_idx {
                r.fate = recv_fate;
            } else {
                r.fate = if responder_err {
                    RecvFate::Flush
                } else {
                    RecvFate::Pending
                };
            }
            if r.fate == RecvFate::Pending {
                // Never consumed: not posted at all (keeps the RQ empty for RNR cases).
                r.posted = false;
            }
        }
    }

    let n_inv = inv_count;
    Plan {
        nqp,
        pmtu,
        ops: out,
        recvs,
        layout,
        qp_access,
        noacc_access,
        n_inv,
        err_qps,
        recvs_first: case.recv_delay == 0,
    }
}

/// The QP an op names, folded into the QPs a case may use.
fn qp_of(o: &Op) -> usize {
    o.qp() as usize % MAX_QPS
}

fn pre_op(op: &Op, pmtu: u32) -> Pre {
    let base = |qp: u8, from: Side, kind: Kind, len: u32, signaled: bool| Pre {
        side: from,
        qp: qp as usize % MAX_QPS,
        kind,
        len,
        inline: false,
        signaled,
        local: None,
        remote: None,
        recv: None,
        imm: None,
        inv: false,
        hit: false,
        add_or_swap: 0,
        shared: false,
        inject: None,
        read_written: false,
        applied_remote: None,
        after_inv: false,
    };
    // A zero-length message has no SGE, or (odd offset) one SGE of length 0.
    let src = |off: u32, len: u32| {
        (len > 0 || off % 2 == 1).then_some((Some(z(Zone::Src, off)), KeyRef::Main))
    };
    match *op {
        Op::Write {
            qp,
            from,
            len,
            local_off,
            remote_off,
            imm,
            inline,
            signaled,
        } => {
            let len = len.resolve(pmtu);
            let kind = if imm.is_some() {
                Kind::WriteImm
            } else {
                Kind::Write
            };
            let mut p = base(qp, from, kind, len, signaled);
            p.inline = inline && len > 0 && len <= MAX_INLINE;
            p.local = src(local_off, len);
            p.remote = Some((z(Zone::W(p.qp as u8), remote_off), KeyRef::Main));
            p.imm = imm;
            if imm.is_some() {
                // The receive consumed by WRITE_WITH_IMM: a 0-byte buffer in the W zone.
                p.recv = Some((z(Zone::W(p.qp as u8), remote_off), 0));
            }
            p
        }
        Op::Send {
            qp,
            from,
            len,
            local_off,
            remote_off,
            slack,
            extra,
            inline,
            signaled,
        } => {
            let len = len.resolve(pmtu);
            let kind = match extra {
                SendExtra::None => Kind::Send,
                SendExtra::Imm(_) => Kind::SendImm,
                SendExtra::Inv => Kind::SendInv,
            };
            let mut p = base(qp, from, kind, len, signaled);
            p.inline = inline && len > 0 && len <= MAX_INLINE;
            p.local = src(local_off, len);
            p.recv = Some((z(Zone::W(p.qp as u8), remote_off), len + slack % 4096));
            if let SendExtra::Imm(i) = extra {
                p.imm = Some(i);
            }
            p.inv = extra == SendExtra::Inv;
            p
        }
        Op::Read {
            qp,
            from,
            len,
            local_off,
            remote_off,
            after_write,
            signaled,
        } => {
            let len = len.resolve(pmtu);
            let mut p = base(qp, from, Kind::Read, len, signaled);
            if len > 0 || local_off % 2 == 1 {
                p.local = Some((Some(z(Zone::R(p.qp as u8), local_off)), KeyRef::Main));
            }
            let zone = if after_write {
                Zone::W(p.qp as u8)
            } else {
                Zone::Src
            };
            p.remote = Some((z(zone, remote_off), KeyRef::Main));
            p.read_written = after_write;
            p
        }
        Op::CmpSwap {
            qp,
            from,
            word,
            hit,
            swap,
            signaled,
        } => {
            let mut p = base(qp, from, Kind::CmpSwap, 8, signaled);
            p.local = Some((Some(z(Zone::Ares(0), 0)), KeyRef::Main));
            p.remote = Some((
                ZAddr {
                    zone: Zone::Atom(p.qp as u8),
                    off: 8 * (word % ATOM_WORDS) as i64,
                },
                KeyRef::Main,
            ));
            p.hit = hit;
            p.add_or_swap = swap;
            p
        }
        Op::FetchAdd {
            qp,
            from,
            word,
            add,
            signaled,
        } => {
            let mut p = base(qp, from, Kind::FetchAdd, 8, signaled);
            p.local = Some((Some(z(Zone::Ares(0), 0)), KeyRef::Main));
            let target = match word {
                Word::Private(w) => ZAddr {
                    zone: Zone::Atom(p.qp as u8),
                    off: 8 * (w % ATOM_WORDS) as i64,
                },
                Word::Shared => {
                    p.shared = true;
                    z(Zone::Shared, 0)
                }
            };
            p.remote = Some((target, KeyRef::Main));
            // Shared-counter adds stay small and non-zero so the prefix sums are distinct.
            p.add_or_swap = if p.shared { add % (1 << 32) + 1 } else { add };
            p
        }
    }
}

fn z(zone: Zone, off: u32) -> ZAddr {
    ZAddr {
        zone,
        off: off as i64,
    }
}

/// The injected request: its Pre, and the access flags it needs B's QP 0 / NoAcc MR to have.
fn pre_inject(inj: Inject, pmtu: u32) -> (Pre, Option<u32>, Option<u32>) {
    let (mut p, acc, noacc) = pre_inject_raw(inj, pmtu);
    // Record the fault as applied (invalid combinations were mapped to valid ones).
    if let (Some(Inject::Remote { op, len, .. }), Some(f)) = (p.inject, p.applied_remote) {
        p.inject = Some(Inject::Remote { op, fault: f, len });
    }
    (p, acc, noacc)
}

fn pre_inject_raw(inj: Inject, pmtu: u32) -> (Pre, Option<u32>, Option<u32>) {
    let mk = |op: BadOp, len: u32| -> Pre {
        let len = if matches!(op, BadOp::CmpSwap | BadOp::FetchAdd) {
            8
        } else {
            len.max(1)
        };
        let op = match op {
            BadOp::Write => Op::Write {
                qp: 0,
                from: Side::A,
                len: Len::Bytes(len),
                local_off: 0,
                remote_off: 0,
                imm: None,
                inline: false,
                signaled: true,
            },
            BadOp::WriteImm => Op::Write {
                qp: 0,
                from: Side::A,
                len: Len::Bytes(len),
                local_off: 0,
                remote_off: 0,
                imm: Some(0xbad0_0001),
                inline: false,
                signaled: true,
            },
            BadOp::Send => Op::Send {
                qp: 0,
                from: Side::A,
                len: Len::Bytes(len),
                local_off: 0,
                remote_off: 0,
                slack: 0,
                extra: SendExtra::None,
                inline: false,
                signaled: true,
            },
            BadOp::Read => Op::Read {
                qp: 0,
                from: Side::A,
                len: Len::Bytes(len),
                local_off: 0,
                remote_off: 0,
                after_write: false,
                signaled: true,
            },
            BadOp::CmpSwap => Op::CmpSwap {
                qp: 0,
                from: Side::A,
                word: 0,
                hit: true,
                swap: 0xbad0_bad0,
                signaled: true,
            },
            BadOp::FetchAdd => Op::FetchAdd {
                qp: 0,
                from: Side::A,
                word: Word::Private(0),
                add: 0xbad,
                signaled: true,
            },
        };
        let mut p = pre_op(&op, pmtu);
        p.inject = None;
        p
    };
    match inj {
        Inject::Remote { op, fault, len } => {
            // A request with a remote target: SEND has none, it becomes a WRITE.
            let op = if op == BadOp::Send { BadOp::Write } else { op };
            let mut p = mk(op, len.resolve(pmtu));
            let atomic = p.kind.is_atomic();
            let fault = match fault {
                RemoteFault::Misaligned { .. } if !atomic => RemoteFault::WrongTag,
                f => f,
            };
            let tlen = if atomic { 8 } else { p.len } as i64;
            let need = p.kind.remote_access();
            let (zone_addr, key) = p.remote.expect("remote op");
            let guard = |off: i64| ZAddr {
                zone: Zone::Guard,
                off,
            };
            let (target, key, qp_acc, noacc) = match fault {
                RemoteFault::WrongTag => (zone_addr, KeyRef::WrongTag, None, None),
                RemoteFault::UnknownIndex => (zone_addr, KeyRef::Unknown, None, None),
                RemoteFault::Deregistered => (guard(0), KeyRef::Stale, None, None),
                RemoteFault::Invalidated => {
                    p.after_inv = true;
                    p.len = p.len.min(INV_MR as u32);
                    (guard(0), KeyRef::Main, None, None)
                }
                RemoteFault::PastEnd { over } => {
                    let over = if atomic { 8 } else { (over as i64 % tlen) + 1 };
                    (
                        guard(SMALL_MR as i64 - tlen + over),
                        KeyRef::Guard,
                        None,
                        None,
                    )
                }
                RemoteFault::BeforeStart { under } => {
                    let under = if atomic { 8 } else { (under as i64 % tlen) + 1 };
                    (guard(-under), KeyRef::Guard, None, None)
                }
                RemoteFault::MrLacksAccess => (
                    z(Zone::NoAcc, 0),
                    KeyRef::NoAcc,
                    None,
                    Some(access::ALL & !need),
                ),
                RemoteFault::OtherPd => (z(Zone::OtherPd, 0), KeyRef::OtherPd, None, None),
                RemoteFault::QpLacksAccess => (zone_addr, key, Some(access::ALL & !need), None),
                RemoteFault::Misaligned { by } => {
                    let mut t = zone_addr;
                    t.off += (by % 7 + 1) as i64;
                    (t, key, None, None)
                }
            };
            p.remote = Some((target, key));
            p.inject = Some(inj);
            p.applied_remote = Some(fault);
            (p, qp_acc, noacc)
        }
        Inject::Local { op, fault, len } => {
            let mut p = mk(op, len.resolve(pmtu));
            let writes_local = matches!(p.kind, Kind::Read) || p.kind.is_atomic();
            let fault = match fault {
                LocalFault::NoLocalWrite if !writes_local => LocalFault::WrongTag,
                f => f,
            };
            let llen = if p.kind.is_atomic() { 8 } else { p.len } as i64;
            let (zone_addr, _) = p.local.expect("len >= 1");
            let local = match fault {
                LocalFault::WrongTag => (zone_addr, KeyRef::WrongTag),
                LocalFault::PastEnd { over } => {
                    let over = (over as i64 % llen) + 1;
                    (
                        Some(ZAddr {
                            zone: Zone::Guard,
                            off: SMALL_MR as i64 - llen + over,
                        }),
                        KeyRef::Guard,
                    )
                }
                LocalFault::Unmapped => (None, KeyRef::Main),
                LocalFault::NoLocalWrite => (Some(z(Zone::RoLocal, 0)), KeyRef::RoLocal),
                LocalFault::OtherPd => (Some(z(Zone::OtherPd, 0)), KeyRef::OtherPd),
            };
            p.local = Some(local);
            if p.kind.consumes_recv() {
                // Never reaches the wire: the receive is planned but not posted.
                p.recv = p.recv.map(|(zz, _)| (zz, p.len));
            }
            p.inject = Some(inj);
            (p, None, None)
        }
        Inject::RecvTooSmall { len, short } => {
            let mut p = mk(BadOp::Send, len.resolve(pmtu));
            let short = short % p.len + 1;
            if let Some((zz, _)) = p.recv {
                p.recv = Some((zz, p.len - short));
            }
            p.inject = Some(inj);
            (p, None, None)
        }
        Inject::NoRecv { imm_write, len } => {
            let op = if imm_write {
                BadOp::WriteImm
            } else {
                BadOp::Send
            };
            let mut p = mk(op, len.resolve(pmtu));
            p.inject = Some(inj);
            (p, None, None)
        }
    }
}
