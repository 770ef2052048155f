//! What one property-test case is: plain, `Debug`-readable data that proptest generates and
//! shrinks. Nothing here knows about devices; [`crate::plan`] turns a [`Case`] into concrete
//! work requests.
//!
//! A case is a list of [`Op`]s between two nodes A and B joined by `nqp` RC connections
//! (QP `q` of A is connected to QP `q` of B). Each op names its QP and the side that issues
//! it; the QP count is one more than the largest QP index used. Offsets are relative to the
//! zone the op touches (see [`crate::plan::Zone`]), so any value is valid.

use std::fmt;

/// The largest message the properties use (256 KiB).
pub const MAX_MSG: u32 = 256 * 1024;
/// The most QPs a case connects.
pub const MAX_QPS: usize = 3;
/// Private atomic words per QP and side.
pub const ATOM_WORDS: u8 = 4;
/// Largest inline payload (the device's MAX_INLINE).
pub const MAX_INLINE: u32 = 32;

/// One of the two nodes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Side {
    A,
    B,
}

impl Side {
    pub const BOTH: [Side; 2] = [Side::A, Side::B];

    pub fn peer(self) -> Side {
        match self {
            Side::A => Side::B,
            Side::B => Side::A,
        }
    }

    pub fn idx(self) -> usize {
        self as usize
    }
}

impl fmt::Debug for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Side::A => "A",
            Side::B => "B",
        })
    }
}

/// A message length: absolute, or relative to the path MTU (`k * pmtu + d`), so that the
/// interesting boundaries survive shrinking and a change of PMTU.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Len {
    Bytes(u32),
    Mtu { k: u8, d: i16 },
}

impl Len {
    /// The length in bytes at path MTU `pmtu`, clamped to `0..=MAX_MSG`.
    pub fn resolve(self, pmtu: u32) -> u32 {
        match self {
            Len::Bytes(n) => n.min(MAX_MSG),
            Len::Mtu { k, d } => {
                let v = k as i64 * pmtu as i64 + d as i64;
                v.clamp(0, MAX_MSG as i64) as u32
            }
        }
    }
}

impl fmt::Debug for Len {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Len::Bytes(n) => write!(f, "{n}"),
            Len::Mtu { k, d } => {
                match k {
                    0 => {}
                    1 => f.write_str("mtu")?,
                    k => write!(f, "{k}*mtu")?,
                }
                match (k, d) {
                    (0, d) => write!(f, "{d}"),
                    (_, 0) => Ok(()),
                    (_, d) if d > 0 => write!(f, "+{d}"),
                    (_, d) => write!(f, "{d}"),
                }
            }
        }
    }
}

/// The word a fetch-and-add targets: one of the QP's private words on the responder, or the
/// responder's shared counter (targeted from every QP; proves "exactly once" by prefix sums).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Word {
    Private(u8),
    Shared,
}

impl fmt::Debug for Word {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Word::Private(w) => write!(f, "word{w}"),
            Word::Shared => f.write_str("shared"),
        }
    }
}

/// What a SEND carries besides its payload.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SendExtra {
    None,
    Imm(u32),
    /// SEND_WITH_INV: invalidates an MR of the receiver registered for this purpose.
    Inv,
}

/// One work request of a case.
///
/// Offsets are relative to zones: a WRITE copies `len` bytes from the issuer's source zone
/// at `local_off` into the receiver's write zone of this QP at `remote_off`; a SEND lands in
/// a receive buffer the receiver posts at `remote_off` of that zone (`len + slack` bytes); a
/// READ copies from the receiver's source zone (or, with `after_write`, from the write zone
/// this QP's earlier ops filled) into the issuer's read zone; atomics target the receiver's
/// words and put the original value into a result slot of the issuer.
#[derive(Clone, PartialEq, Eq)]
pub enum Op {
    Write {
        qp: u8,
        from: Side,
        len: Len,
        local_off: u32,
        remote_off: u32,
        imm: Option<u32>,
        inline: bool,
        signaled: bool,
    },
    Send {
        qp: u8,
        from: Side,
        len: Len,
        local_off: u32,
        remote_off: u32,
        slack: u32,
        extra: SendExtra,
        inline: bool,
        signaled: bool,
    },
    Read {
        qp: u8,
        from: Side,
        len: Len,
        local_off: u32,
        remote_off: u32,
        after_write: bool,
        signaled: bool,
    },
    CmpSwap {
        qp: u8,
        from: Side,
        word: u8,
        /// Whether the compare value equals the word's current value.
        hit: bool,
        swap: u64,
        signaled: bool,
    },
    FetchAdd {
        qp: u8,
        from: Side,
        word: Word,
        add: u64,
        signaled: bool,
    },
}

impl Op {
    pub fn qp(&self) -> u8 {
        match *self {
            Op::Write { qp, .. }
            | Op::Send { qp, .. }
            | Op::Read { qp, .. }
            | Op::CmpSwap { qp, .. }
            | Op::FetchAdd { qp, .. } => qp,
        }
    }

    pub fn from(&self) -> Side {
        match *self {
            Op::Write { from, .. }
            | Op::Send { from, .. }
            | Op::Read { from, .. }
            | Op::CmpSwap { from, .. }
            | Op::FetchAdd { from, .. } => from,
        }
    }

    /// Its QP, writable.
    pub fn qp_mut(&mut self) -> &mut u8 {
        match self {
            Op::Write { qp, .. }
            | Op::Send { qp, .. }
            | Op::Read { qp, .. }
            | Op::CmpSwap { qp, .. }
            | Op::FetchAdd { qp, .. } => qp,
        }
    }

    /// The side that issues it, writable (a differential test that needs one side to be
    /// the requester moves every op there).
    pub fn from_mut(&mut self) -> &mut Side {
        match self {
            Op::Write { from, .. }
            | Op::Send { from, .. }
            | Op::Read { from, .. }
            | Op::CmpSwap { from, .. }
            | Op::FetchAdd { from, .. } => from,
        }
    }
}

fn sig(signaled: bool) -> &'static str {
    if signaled {
        ""
    } else {
        " unsignaled"
    }
}

impl fmt::Debug for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let head = |f: &mut fmt::Formatter<'_>, from: Side, qp: u8| {
            write!(f, "{from:?}->{:?} qp{qp} ", from.peer())
        };
        match *self {
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
                head(f, from, qp)?;
                f.write_str(if imm.is_some() { "WRITE_IMM" } else { "WRITE" })?;
                write!(f, " len={len:?} local+{local_off} remote+{remote_off}")?;
                if let Some(i) = imm {
                    write!(f, " imm={i:#x}")?;
                }
                if inline {
                    f.write_str(" inline")?;
                }
                f.write_str(sig(signaled))
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
                head(f, from, qp)?;
                f.write_str(match extra {
                    SendExtra::None => "SEND",
                    SendExtra::Imm(_) => "SEND_IMM",
                    SendExtra::Inv => "SEND_INV",
                })?;
                write!(
                    f,
                    " len={len:?} local+{local_off} recv_buf+{remote_off} slack={slack}"
                )?;
                if let SendExtra::Imm(i) = extra {
                    write!(f, " imm={i:#x}")?;
                }
                if inline {
                    f.write_str(" inline")?;
                }
                f.write_str(sig(signaled))
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
                head(f, from, qp)?;
                write!(f, "READ len={len:?} local+{local_off} remote+{remote_off}")?;
                if after_write {
                    f.write_str(" (of written zone)")?;
                }
                f.write_str(sig(signaled))
            }
            Op::CmpSwap {
                qp,
                from,
                word,
                hit,
                swap,
                signaled,
            } => {
                head(f, from, qp)?;
                write!(
                    f,
                    "CMP_SWAP word{word} {} swap={swap:#x}",
                    if hit { "hit" } else { "miss" }
                )?;
                f.write_str(sig(signaled))
            }
            Op::FetchAdd {
                qp,
                from,
                word,
                add,
                signaled,
            } => {
                head(f, from, qp)?;
                write!(f, "FETCH_ADD {word:?} add={add:#x}")?;
                f.write_str(sig(signaled))
            }
        }
    }
}

/// Faults of one direction of the cable, in tenths of a percent.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct LinkFaults {
    pub loss: u16,
    pub dup: u16,
    pub reorder: u16,
    pub corrupt: u16,
    /// Fraction of ACK frames (BTH opcode 0x11) a drop filter removes.
    pub ack_drop: u16,
}

impl LinkFaults {
    pub fn is_none(&self) -> bool {
        *self == LinkFaults::default()
    }
}

impl fmt::Debug for LinkFaults {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_none() {
            return f.write_str("none");
        }
        let mut first = true;
        for (name, v) in [
            ("loss", self.loss),
            ("dup", self.dup),
            ("reorder", self.reorder),
            ("corrupt", self.corrupt),
            ("ack_drop", self.ack_drop),
        ] {
            if v != 0 {
                if !first {
                    f.write_str(" ")?;
                }
                first = false;
                write!(f, "{name} {}.{}%", v / 10, v % 10)?;
            }
        }
        Ok(())
    }
}

/// Connection parameters of every QP.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Conn {
    /// ACK timeout: 1024 << timeout cycles.
    pub timeout: u8,
    pub retry_cnt: u8,
    pub rnr_retry: u8,
    pub min_rnr_timer: u8,
    pub max_rd_atomic: u8,
}

impl Default for Conn {
    fn default() -> Self {
        Conn {
            timeout: 8,
            retry_cnt: 7,
            rnr_retry: 7,
            min_rnr_timer: 1,
            max_rd_atomic: 16,
        }
    }
}

impl fmt::Debug for Conn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "timeout={} retry_cnt={} rnr_retry={} min_rnr_timer={} max_rd_atomic={}",
            self.timeout, self.retry_cnt, self.rnr_retry, self.min_rnr_timer, self.max_rd_atomic
        )
    }
}

/// The operation an injected bad request performs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum BadOp {
    Write,
    WriteImm,
    Send,
    Read,
    CmpSwap,
    FetchAdd,
}

/// What is wrong with the remote side of an injected request (answered by a NAK).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RemoteFault {
    /// The rkey of the responder's MR with another 8-bit tag.
    WrongTag,
    /// An rkey whose MR index was never registered.
    UnknownIndex,
    /// The rkey of an MR that was deregistered.
    Deregistered,
    /// The rkey of an MR that a SEND_WITH_INV on this QP invalidated just before.
    Invalidated,
    /// The target ends `over` bytes past the end of a small MR.
    PastEnd { over: u32 },
    /// The target starts `under` bytes before a small MR.
    BeforeStart { under: u32 },
    /// The target MR lacks the needed REMOTE_* flag.
    MrLacksAccess,
    /// The target MR belongs to another PD.
    OtherPd,
    /// The responder QP lacks the needed REMOTE_* flag (NAK Invalid Request).
    QpLacksAccess,
    /// An atomic at an address that is not 8-byte aligned (NAK Invalid Request).
    Misaligned { by: u8 },
}

/// What is wrong with the local SGE of an injected request (found at WQE fetch).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum LocalFault {
    /// The lkey of the main MR with another tag.
    WrongTag,
    /// The SGE ends `over` bytes past the end of a small MR.
    PastEnd { over: u32 },
    /// The SGE points at an address no MR and no IOMMU mapping covers.
    Unmapped,
    /// READ/atomic result buffer in an MR without LOCAL_WRITE.
    NoLocalWrite,
    /// The lkey of an MR in another PD.
    OtherPd,
}

/// A request injected into A's stream on QP 0 that must fail, with the status the ABI
/// requires; later requests on that QP are flushed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Inject {
    Remote {
        op: BadOp,
        fault: RemoteFault,
        len: Len,
    },
    Local {
        op: BadOp,
        fault: LocalFault,
        len: Len,
    },
    /// A SEND longer than the receive buffer by `short` bytes.
    RecvTooSmall { len: Len, short: u32 },
    /// A SEND (or WRITE_WITH_IMM) with no receive ever posted.
    NoRecv { imm_write: bool, len: Len },
}

/// One property-test case.
#[derive(Clone, PartialEq, Eq)]
pub struct Case {
    /// Seed of the memory patterns and the link fault streams.
    pub seed: u64,
    /// Path MTU in bytes (256..4096).
    pub pmtu: u32,
    /// First PSN of QP 0 of A (others are derived); values near 2^24 test the wrap.
    pub psn_base: u32,
    pub sq_depth: u32,
    pub rq_depth: u32,
    pub cq_depth: u32,
    /// WRs per `post_send` call (batching several WQEs under one doorbell).
    pub batch: u8,
    /// Every `fence`-th op carries the FENCE flag (0: none).
    pub fence: u8,
    pub conn: Conn,
    /// Faults of the links A->B and B->A.
    pub faults: [LinkFaults; 2],
    /// Receives are posted this many cycles after the sends (0: before them).
    pub recv_delay: u32,
    /// A failing request inserted into A's QP 0 stream after that many of its ops.
    pub inject: Option<(u8, Inject)>,
    pub ops: Vec<Op>,
}

impl Default for Case {
    fn default() -> Self {
        Case {
            seed: 0,
            pmtu: 1024,
            psn_base: 0,
            sq_depth: 64,
            rq_depth: 64,
            cq_depth: 64,
            batch: 1,
            fence: 0,
            conn: Conn::default(),
            faults: [LinkFaults::default(); 2],
            recv_delay: 0,
            inject: None,
            ops: Vec::new(),
        }
    }
}

impl Case {
    /// Whether either link of the case loses, duplicates, reorders or corrupts frames.
    pub fn is_faulted(&self) -> bool {
        !self.faults.iter().all(LinkFaults::is_none)
    }
}

impl fmt::Debug for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "Case {{")?;
        writeln!(
            f,
            "  seed: {}, pmtu: {}, psn_base: {:#x}, sq_depth: {}, rq_depth: {}, cq_depth: {}, batch: {}",
            self.seed,
            self.pmtu,
            self.psn_base,
            self.sq_depth,
            self.rq_depth,
            self.cq_depth,
            self.batch
        )?;
        writeln!(f, "  conn: {:?}", self.conn)?;
        if self.fence != 0 {
            writeln!(f, "  fence: every {} op(s)", self.fence)?;
        }
        writeln!(
            f,
            "  faults: A->B {:?}; B->A {:?}",
            self.faults[0], self.faults[1]
        )?;
        if self.recv_delay != 0 {
            writeln!(f, "  recv_delay: {} cycles", self.recv_delay)?;
        }
        if let Some((at, inj)) = &self.inject {
            writeln!(f, "  inject after {at} ops of A qp0: {inj:?}")?;
        }
        writeln!(f, "  ops: [")?;
        for (i, op) in self.ops.iter().enumerate() {
            writeln!(f, "    #{i} {op:?}")?;
        }
        writeln!(f, "  ]")?;
        write!(f, "}}")
    }
}
