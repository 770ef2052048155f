//! A verbs-like API over the rocenic host ABI, with rdma-core's names.
//!
//! A [`Context`] owns one device (through a [`Backend`]) and every piece of host-side state:
//! object tables, ring positions, the MR key generations. The user holds small `Copy`
//! handles ([`Pd`], [`Cq`], [`Qp`], [`Mr`], [`Buffer`]) that are just numbers, so the API
//! has no lifetimes; a handle whose object is gone yields [`Error::UnknownHandle`].
//!
//! ```text
//! Context::open(backend)          ibv_open_device + ibv_query_device
//! ctx.set_port(mac, ipv4)         (the port's address; GID = ::ffff:ipv4)
//! ctx.alloc_pd()                  ibv_alloc_pd
//! ctx.alloc_buf(len)              DMA-able memory (what the app would malloc + pin)
//! ctx.reg_mr(pd, &buf, access)    ibv_reg_mr
//! ctx.create_cq(n)                ibv_create_cq
//! ctx.create_qp(pd, &init)        ibv_create_qp (RC)
//! ctx.modify_qp(qp, &attr, mask)  ibv_modify_qp: RESET -> INIT -> RTR -> RTS
//! ctx.post_send / post_recv       ibv_post_send / ibv_post_recv
//! ctx.poll_cq(cq, &mut wcs)       ibv_poll_cq
//! ```
//!
//! Rings: the SQ and RQ of a QP and every CQ are rings of 64-byte descriptors in DMA memory
//! (`rocenic_proto::abi::{wqe, cqe}`). `post_send` writes one WQE per work request and then
//! writes the SQ doorbell once for the batch. `poll_cq` consumes CQEs by the phase rule,
//! writes the CQ doorbell once per call that consumed something, and retires SQ/RQ slots up
//! to each completion's `wqe_index` (RC completes in order, so an unsignaled send WQE is
//! done when a later signaled one completes). An application that posts only unsignaled
//! sends fills the SQ, as with ibverbs.

mod cmd;
mod owned;
mod ring;

use std::collections::{BTreeMap, VecDeque};
use std::fmt;

use rocenic_proto::abi::cmd::{
    CmdOpcode, CqArgs, CreateQpArgs, ModifyQpArgs, MrArgs, PdArgs, QpCountersArgs, QueryQpOut,
};
use rocenic_proto::abi::cqe::Cqe;
use rocenic_proto::abi::wqe::{RecvWqe, SendWqe, MAX_INLINE};
use rocenic_proto::abi::{cmd as abi_cmd, regs, DESC_SIZE};

pub use rocenic_proto::abi::cmd::qp_attr;
pub use rocenic_proto::abi::regs::Counter;
// The device ABI numbers these as verbs.h does, so the driver hands them on unchanged
// (tests/verbs_h.rs checks every value against the header); `send_flags` differs and is
// the driver's own, below.
pub use rocenic_proto::abi::verbs::{access, wc_flags, Mtu, QpState, WcOpcode, WcStatus, WrOpcode};
pub use rocenic_proto::abi::wqe::Sge;

use crate::backend::{Backend, DmaRegion};
use crate::{Error, PostError, Result};
pub use owned::OwnedMr;
use ring::{CqRing, WorkQueue};

/// Default bound on one mailbox command, in cycles (4 ms at 250 MHz).
pub const DEFAULT_CMD_TIMEOUT: u64 = 1_000_000;
/// Default pause between two polls in [`Context::wait_cq`], in cycles.
pub const DEFAULT_POLL_QUANTUM: u64 = 16;

/// What the device can do (`struct ibv_device_attr`, the part rocenic has), read from the
/// capability registers by [`Context::open`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceAttr {
    /// ABI version the device speaks.
    pub abi_major: u16,
    /// ABI minor version the device speaks.
    pub abi_minor: u16,
    /// QPNs run from 2 to `max_qp - 1`.
    pub max_qp: u32,
    /// CQNs run from 0 to `max_cq - 1`.
    pub max_cq: u32,
    /// MR indices run from 0 to `max_mr - 1`.
    pub max_mr: u32,
    /// PDNs run from 0 to `max_pd - 1`.
    pub max_pd: u32,
    /// Largest SQ/RQ/CQ ring, as log2 of its entries.
    pub max_log_ring: u32,
    /// Largest SQ or RQ (`1 << max_log_ring`).
    pub max_qp_wr: u32,
    /// Largest CQ (`1 << max_log_ring`).
    pub max_cqe: u32,
    /// SGEs per send WQE.
    pub max_send_sge: u32,
    /// SGEs per receive WQE.
    pub max_recv_sge: u32,
    /// Largest inline payload of a send WQE.
    pub max_inline_data: u32,
    /// Outstanding RDMA READ/atomic requests per QP as initiator.
    pub max_qp_init_rd_atom: u32,
    /// Outstanding RDMA READ/atomic requests per QP as target.
    pub max_qp_rd_atom: u32,
    /// Core clock in MHz.
    pub clock_mhz: u32,
}

/// A protection domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Pd {
    /// PD number.
    pub pdn: u32,
}

/// A completion queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cq {
    /// CQ number.
    pub cqn: u32,
    /// Entries in the ring (a power of two, at least what was asked for).
    pub cqe: u32,
}

/// A queue pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Qp {
    /// QP number.
    pub qp_num: u32,
    /// The capacities it was created with (`max_send_wr`/`max_recv_wr` are the ring sizes).
    pub cap: QpCap,
}

/// A registered memory region.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Mr {
    /// Virtual address of the first byte.
    pub addr: u64,
    /// Length in bytes.
    pub length: u64,
    /// Local key (for SGEs).
    pub lkey: u32,
    /// Remote key (for the peer's RDMA and atomics).
    pub rkey: u32,
}

impl Mr {
    /// An SGE of `length` bytes at `offset` into the region.
    pub fn sge(&self, offset: u64, length: u32) -> Sge {
        Sge {
            addr: self.addr + offset,
            length,
            lkey: self.lkey,
        }
    }
}

/// Host memory the device can reach by DMA (what an application would allocate and pin).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Buffer {
    /// The backend's region id.
    pub id: u64,
    /// Virtual address of the first byte.
    pub addr: u64,
    /// Length in bytes.
    pub len: usize,
}

/// QP capacities (`struct ibv_qp_cap`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct QpCap {
    /// Send queue entries.
    pub max_send_wr: u32,
    /// Receive queue entries.
    pub max_recv_wr: u32,
    /// SGEs per send WR.
    pub max_send_sge: u32,
    /// SGEs per receive WR.
    pub max_recv_sge: u32,
    /// Largest inline payload of a send WR.
    pub max_inline_data: u32,
}

/// QP creation attributes (`struct ibv_qp_init_attr`, RC only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QpInitAttr {
    /// The CQ of send completions.
    pub send_cq: Cq,
    /// The CQ of receive completions.
    pub recv_cq: Cq,
    /// Capacities asked for.
    pub cap: QpCap,
}

/// The address vector of a RoCE v2 connection (`ibv_ah_attr` reduced to what IPv4 needs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct AhAttr {
    /// Destination MAC (the next hop; the peer on a direct cable).
    pub dmac: [u8; 6],
    /// Destination IPv4 address.
    pub dip: [u8; 4],
    /// UDP source port (flow entropy); 0 lets the device choose.
    pub udp_sport: u16,
}

/// QP attributes (`struct ibv_qp_attr`, the RC subset). [`Context::modify_qp`] applies the
/// fields named by its mask (`qp_attr` bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QpAttr {
    /// `IBV_QP_STATE`: the state to move to.
    pub qp_state: QpState,
    /// `IBV_QP_PATH_MTU`.
    pub path_mtu: Mtu,
    /// `IBV_QP_DEST_QPN`: the peer QP.
    pub dest_qp_num: u32,
    /// `IBV_QP_RQ_PSN`: the first PSN expected.
    pub rq_psn: u32,
    /// `IBV_QP_SQ_PSN`: the first PSN sent.
    pub sq_psn: u32,
    /// `IBV_QP_ACCESS_FLAGS`: remote operations allowed ([`access`] bits).
    pub qp_access_flags: u32,
    /// `IBV_QP_AV`: the peer's address.
    pub ah_attr: AhAttr,
    /// ACK timeout: 4.096 us * 2^timeout (1..=31).
    pub timeout: u8,
    /// Transport retries (0..=7).
    pub retry_cnt: u8,
    /// RNR retries (0..=7; 7 = retry forever).
    pub rnr_retry: u8,
    /// RNR NAK timer code we advertise (0..=31).
    pub min_rnr_timer: u8,
    /// Outstanding READ/atomic requests as initiator.
    pub max_rd_atomic: u8,
    /// Outstanding READ/atomic requests as target.
    pub max_dest_rd_atomic: u8,
}

impl Default for QpAttr {
    fn default() -> Self {
        QpAttr {
            qp_state: QpState::Reset,
            path_mtu: Mtu::Mtu1024,
            dest_qp_num: 0,
            rq_psn: 0,
            sq_psn: 0,
            qp_access_flags: 0,
            ah_attr: AhAttr::default(),
            timeout: 0,
            retry_cnt: 0,
            rnr_retry: 0,
            min_rnr_timer: 0,
            max_rd_atomic: 0,
            max_dest_rd_atomic: 0,
        }
    }
}

/// The remote side of an RDMA READ/WRITE (`wr.rdma`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RdmaWr {
    /// Remote virtual address.
    pub remote_addr: u64,
    /// Remote key.
    pub rkey: u32,
}

/// The operands of an atomic (`wr.atomic`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AtomicWr {
    /// Remote virtual address (8-byte aligned).
    pub remote_addr: u64,
    /// CMP_AND_SWP: the compare value; FETCH_AND_ADD: the addend.
    pub compare_add: u64,
    /// CMP_AND_SWP: the swap value.
    pub swap: u64,
    /// Remote key.
    pub rkey: u32,
}

/// A send work request (`struct ibv_send_wr`).
///
/// With [`send_flags::INLINE`] the driver reads the bytes the SGEs describe (through the
/// backend, lkeys unchecked, as ibverbs does) and copies them into the WQE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendWr {
    /// Returned untouched in the completion.
    pub wr_id: u64,
    /// What to do.
    pub opcode: WrOpcode,
    /// [`send_flags`] bits (verbs.h numbering).
    pub send_flags: u32,
    /// Local memory: the payload, or where READ/atomic results land.
    pub sg_list: Vec<Sge>,
    /// For `*_WITH_IMM`.
    pub imm_data: u32,
    /// For `SEND_WITH_INV`: the responder's rkey to invalidate.
    pub invalidate_rkey: u32,
    /// For RDMA READ/WRITE.
    pub rdma: RdmaWr,
    /// For atomics.
    pub atomic: AtomicWr,
}

impl Default for SendWr {
    fn default() -> Self {
        SendWr {
            wr_id: 0,
            opcode: WrOpcode::Send,
            send_flags: 0,
            sg_list: Vec::new(),
            imm_data: 0,
            invalidate_rkey: 0,
            rdma: RdmaWr::default(),
            atomic: AtomicWr::default(),
        }
    }
}

/// A receive work request (`struct ibv_recv_wr`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RecvWr {
    /// Returned untouched in the completion.
    pub wr_id: u64,
    /// Where the received payload lands.
    pub sg_list: Vec<Sge>,
}

/// A work completion (`struct ibv_wc`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wc {
    /// The `wr_id` of the work request.
    pub wr_id: u64,
    /// How it ended.
    pub status: WcStatus,
    /// What completed.
    pub opcode: WcOpcode,
    /// Bytes received (receive completions) or the message length (requester).
    pub byte_len: u32,
    /// Immediate data, when the message carried one.
    pub imm_data: Option<u32>,
    /// The rkey a SEND_WITH_INV invalidated.
    pub invalidated_rkey: Option<u32>,
    /// The local QP.
    pub qp_num: u32,
    /// The remote QPN of the connection.
    pub src_qp: u32,
    /// The AETH syndrome of the NAK behind an error, else 0.
    pub vendor_err: u32,
}

impl Default for Wc {
    fn default() -> Self {
        Wc {
            wr_id: 0,
            status: WcStatus::Success,
            opcode: WcOpcode::Send,
            byte_len: 0,
            imm_data: None,
            invalidated_rkey: None,
            qp_num: 0,
            src_qp: 0,
            vendor_err: 0,
        }
    }
}

impl Wc {
    fn from_cqe(c: &Cqe) -> Wc {
        Wc {
            wr_id: c.wr_id,
            status: c.status,
            opcode: c.opcode,
            byte_len: c.byte_len,
            imm_data: (c.wc_flags & wc_flags::WITH_IMM != 0).then_some(c.imm_or_inv),
            invalidated_rkey: (c.wc_flags & wc_flags::WITH_INV != 0).then_some(c.imm_or_inv),
            qp_num: c.qp_num,
            src_qp: c.src_qp,
            vendor_err: c.vendor_err as u32,
        }
    }
}

impl fmt::Display for Wc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "wr_id={:#x} {} {} byte_len={} qp={} src_qp={}",
            self.wr_id, self.status, self.opcode, self.byte_len, self.qp_num, self.src_qp
        )?;
        if let Some(imm) = self.imm_data {
            write!(f, " imm={imm:#010x}")?;
        }
        if let Some(rkey) = self.invalidated_rkey {
            write!(f, " inv_rkey={rkey:#x}")?;
        }
        if self.vendor_err != 0 {
            write!(f, " vendor_err={:#x}", self.vendor_err)?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// Host-side object tables.

/// Object numbers of one kind: never-used numbers first (ascending), then freed ones in the
/// order they were freed, so a stale number is reused as late as possible.
struct Table<T> {
    what: &'static str,
    entries: BTreeMap<u32, T>,
    next_fresh: u32,
    end: u32,
    freed: VecDeque<u32>,
}

impl<T> Table<T> {
    fn new(what: &'static str, first: u32, end: u32) -> Self {
        Table {
            what,
            entries: BTreeMap::new(),
            next_fresh: first,
            end,
            freed: VecDeque::new(),
        }
    }

    /// Takes a free number; give it back with `release` if creation fails.
    fn reserve(&mut self) -> Result<u32> {
        if self.next_fresh < self.end {
            self.next_fresh += 1;
            Ok(self.next_fresh - 1)
        } else {
            self.freed.pop_front().ok_or(Error::Exhausted {
                what: self.what,
                max: self.end,
            })
        }
    }

    fn release(&mut self, n: u32) {
        self.freed.push_back(n);
    }

    fn insert(&mut self, n: u32, v: T) {
        self.entries.insert(n, v);
    }

    fn unknown(&self, n: u32) -> Error {
        Error::UnknownHandle {
            what: self.what,
            id: n as u64,
        }
    }

    fn get(&self, n: u32) -> Result<&T> {
        self.entries.get(&n).ok_or_else(|| self.unknown(n))
    }

    fn get_mut(&mut self, n: u32) -> Result<&mut T> {
        let e = self.unknown(n);
        self.entries.get_mut(&n).ok_or(e)
    }

    fn remove(&mut self, n: u32) -> Result<T> {
        let v = self.entries.remove(&n).ok_or_else(|| self.unknown(n))?;
        self.release(n);
        Ok(v)
    }
}

struct CqEntry {
    ring: CqRing,
}

struct QpEntry {
    pdn: u32,
    send_cqn: u32,
    recv_cqn: u32,
    sq: WorkQueue,
    rq: WorkQueue,
    cap: QpCap,
    /// The attributes last applied, with the state as last known (modify, query, or an
    /// error completion moving it to ERR).
    attr: QpAttr,
}

struct MrEntry {
    pdn: u32,
    key: u32,
    buf_id: u64,
}

struct BufEntry {
    region: DmaRegion,
    len: usize,
}

/// A rocenic device opened for use; owns all host-side state of the objects it creates.
///
/// On the behavioural model (cargo feature `model`): open node A of a two-node world, then
/// create a PD, a CQ, a QP and a registered buffer, and move the QP to INIT.
///
/// ```
/// # #[cfg(feature = "model")] {
/// use rocenic_driver::backend::model::{two_node_world, PairConfig};
/// use rocenic_driver::{access, qp_attr, Context, QpAttr, QpCap, QpInitAttr, QpState};
///
/// let pair = two_node_world(&PairConfig::default(), None)?;
/// let mut ctx = Context::open(Box::new(pair.a))?;
/// let pd = ctx.alloc_pd()?;
/// let cq = ctx.create_cq(16)?;
/// let cap = QpCap { max_send_wr: 8, max_recv_wr: 8, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
/// let qp = ctx.create_qp(pd, &QpInitAttr { send_cq: cq, recv_cq: cq, cap })?;
/// assert_eq!(qp.cap.max_send_wr, 8);
/// let buf = ctx.alloc_buf(4096)?;
/// let mr = ctx.reg_mr(pd, &buf, access::LOCAL_WRITE | access::REMOTE_WRITE)?;
/// assert_eq!(mr.length, 4096);
/// let init = QpAttr { qp_state: QpState::Init, ..QpAttr::default() };
/// ctx.modify_qp(qp, &init, qp_attr::STATE)?;
/// assert_eq!(ctx.query_qp(qp)?.qp_state, QpState::Init);
/// ctx.close()?;
/// # }
/// # Ok::<(), rocenic_driver::Error>(())
/// ```
pub struct Context {
    be: Box<dyn Backend>,
    attr: DeviceAttr,
    cmd_timeout: u64,
    poll_quantum: u64,
    pds: Table<()>,
    cqs: Table<CqEntry>,
    qps: Table<QpEntry>,
    mrs: Table<MrEntry>,
    /// Generation tag of each MR index's last registration.
    mr_tags: BTreeMap<u32, u8>,
    bufs: BTreeMap<u64, BufEntry>,
    /// 128 bytes of DMA memory for QUERY_QP_COUNTERS, allocated on first use.
    scratch: Option<DmaRegion>,
    /// Set when a command timed out during `close`: the device is not answering.
    wedged: bool,
}

/// The arguments of a command that names one object in word 0 (DEREG_MR, QUERY_QP,
/// DESTROY_QP).
fn word0(n: u32) -> abi_cmd::Args {
    let mut a = [0; 16];
    a[0] = n;
    a
}

fn log2_ring(entries: u32, max_log: u32, what: &str) -> Result<u32> {
    let n = entries.max(1).checked_next_power_of_two().ok_or_else(|| {
        Error::InvalidArgument(format!("{what} of {entries} entries is too large"))
    })?;
    let log = n.trailing_zeros();
    if log > max_log {
        return Err(Error::InvalidArgument(format!(
            "{what} of {entries} entries exceeds the device's largest ring of {} entries",
            1u64 << max_log
        )));
    }
    Ok(log)
}

impl Context {
    /// Opens the device behind `backend`: checks the ID register and the ABI major version
    /// and reads the capabilities.
    pub fn open(mut backend: Box<dyn Backend>) -> Result<Context> {
        let id = backend.bar_read(regs::ID);
        if id != regs::DEVICE_ID {
            return Err(Error::NotRocenic {
                found: id,
                expected: regs::DEVICE_ID,
            });
        }
        let abi = backend.bar_read(regs::ABI_VERSION);
        let (major, minor) = ((abi >> 16) as u16, abi as u16);
        if major != regs::ABI_MAJOR {
            return Err(Error::AbiMismatch {
                major,
                minor,
                driver_major: regs::ABI_MAJOR,
            });
        }
        let mut cap = |register: &'static str, off: u32, min: u32, max: u32, why| {
            let value = backend.bar_read(off);
            if value < min || value > max {
                Err(Error::BadCapability {
                    register,
                    value,
                    why,
                })
            } else {
                Ok(value)
            }
        };
        let max_qp = cap(
            "MAX_QP",
            regs::MAX_QP,
            3,
            regs::DOORBELL_QPS,
            "needs room for QPN 2 and at most the doorbell area's QPs",
        )?;
        let max_cq = cap(
            "MAX_CQ",
            regs::MAX_CQ,
            1,
            regs::DOORBELL_CQS,
            "needs 1 .. the doorbell area's CQs",
        )?;
        let max_mr = cap(
            "MAX_MR",
            regs::MAX_MR,
            1,
            1 << 24,
            "MR indices must fit the 24 index bits of a key",
        )?;
        let max_pd = cap("MAX_PD", regs::MAX_PD, 1, u32::MAX, "needs at least one PD")?;
        let max_log_ring = cap(
            "MAX_LOG_RING",
            regs::MAX_LOG_RING,
            1,
            24,
            "rings of 2 .. 2^24 entries are supported",
        )?;
        let sge = cap("MAX_SGE", regs::MAX_SGE, 0, 0xffff, "bits 31:16 must be 0")?;
        let max_inline = cap(
            "MAX_INLINE",
            regs::MAX_INLINE,
            0,
            MAX_INLINE as u32,
            "exceeds the inline area of a WQE",
        )?;
        let rd = cap(
            "MAX_RD_ATOMIC",
            regs::MAX_RD_ATOMIC,
            0,
            0xffff,
            "bits 31:16 must be 0",
        )?;
        let clock_mhz = cap("CLOCK_MHZ", regs::CLOCK_MHZ, 1, 100_000, "not a clock")?;
        let attr = DeviceAttr {
            abi_major: major,
            abi_minor: minor,
            max_qp,
            max_cq,
            max_mr,
            max_pd,
            max_log_ring,
            max_qp_wr: 1 << max_log_ring,
            max_cqe: 1 << max_log_ring,
            max_send_sge: sge & 0xff,
            max_recv_sge: (sge >> 8) & 0xff,
            max_inline_data: max_inline,
            max_qp_init_rd_atom: rd & 0xff,
            max_qp_rd_atom: (rd >> 8) & 0xff,
            clock_mhz,
        };
        Ok(Context {
            be: backend,
            attr,
            cmd_timeout: DEFAULT_CMD_TIMEOUT,
            poll_quantum: DEFAULT_POLL_QUANTUM,
            pds: Table::new("PD", 0, max_pd),
            cqs: Table::new("CQ", 0, max_cq),
            qps: Table::new("QP", 2, max_qp),
            mrs: Table::new("MR", 0, max_mr),
            mr_tags: BTreeMap::new(),
            bufs: BTreeMap::new(),
            scratch: None,
            wedged: false,
        })
    }

    /// What the device can do.
    pub fn device_attr(&self) -> DeviceAttr {
        self.attr
    }

    /// Sets how long one mailbox command may take, in cycles.
    pub fn set_cmd_timeout(&mut self, cycles: u64) {
        self.cmd_timeout = cycles;
    }

    /// Sets the pause between two polls of [`Context::wait_cq`], in cycles (at least 1).
    pub fn set_poll_quantum(&mut self, cycles: u64) {
        self.poll_quantum = cycles.max(1);
    }

    /// The current core-clock cycle.
    pub fn now(&self) -> u64 {
        self.be.now()
    }

    /// Lets `cycles` cycles pass (the device keeps working).
    pub fn wait(&mut self, cycles: u64) {
        self.be.wait(cycles)
    }

    fn exec(
        &mut self,
        op: CmdOpcode,
        args: &abi_cmd::Args,
        object: &dyn Fn() -> String,
        n_outs: u32,
    ) -> Result<abi_cmd::Outs> {
        cmd::execute(&mut *self.be, self.cmd_timeout, op, args, object, n_outs)
    }

    // -----------------------------------------------------------------------------------
    // Port and counters.

    /// Sets the port's MAC and IPv4 address and enables it.
    pub fn set_port(&mut self, mac: [u8; 6], ipv4: [u8; 4]) {
        let (hi, lo) = regs::mac_to_regs(mac);
        self.be.bar_write(regs::MAC_LO, lo);
        self.be.bar_write(regs::MAC_HI, hi);
        self.be.bar_write(regs::IPV4_ADDR, u32::from_be_bytes(ipv4));
        self.be.bar_write(regs::CONTROL, regs::CONTROL_ENABLE);
    }

    /// The global counters, indexed by [`Counter`] (`c as usize`).
    pub fn counters(&mut self) -> [u64; Counter::COUNT] {
        let mut out = [0; Counter::COUNT];
        for c in Counter::ALL {
            let lo = self.be.bar_read(regs::counter_lo(c));
            let hi = self.be.bar_read(regs::counter_hi(c));
            out[c as usize] = (hi as u64) << 32 | lo as u64;
        }
        out
    }

    // -----------------------------------------------------------------------------------
    // Buffers.

    /// Allocates `len` bytes of zeroed DMA memory.
    pub fn alloc_buf(&mut self, len: usize) -> Result<Buffer> {
        if len == 0 {
            return Err(Error::InvalidArgument("buffer of 0 bytes".into()));
        }
        let region = self.be.alloc_dma(len)?;
        self.bufs.insert(region.id, BufEntry { region, len });
        Ok(Buffer {
            id: region.id,
            addr: region.va,
            len,
        })
    }

    /// Frees a buffer; refused while an MR covers it.
    pub fn free_buf(&mut self, buf: &Buffer) -> Result<()> {
        self.buf_entry(buf)?;
        let users: Vec<String> = self
            .mrs
            .entries
            .values()
            .filter(|m| m.buf_id == buf.id)
            .map(|m| format!("MR lkey {:#x}", m.key))
            .collect();
        if !users.is_empty() {
            return Err(Error::InUse {
                what: "buffer",
                id: buf.id,
                users: users.join(", "),
            });
        }
        self.bufs.remove(&buf.id);
        self.be.free_dma(buf.id)
    }

    fn buf_entry(&self, buf: &Buffer) -> Result<&BufEntry> {
        self.bufs.get(&buf.id).ok_or(Error::UnknownHandle {
            what: "buffer",
            id: buf.id,
        })
    }

    fn buf_va(&self, buf: &Buffer, offset: usize, len: usize) -> Result<u64> {
        let e = self.buf_entry(buf)?;
        if !matches!(offset.checked_add(len), Some(end) if end <= e.len) {
            return Err(Error::OutOfBounds {
                id: buf.id,
                offset,
                len,
                buf_len: e.len,
            });
        }
        Ok(e.region.va + offset as u64)
    }

    /// Copies `data` into the buffer at `offset`.
    pub fn write(&mut self, buf: &Buffer, offset: usize, data: &[u8]) -> Result<()> {
        let va = self.buf_va(buf, offset, data.len())?;
        self.be.mem_write(va, data)
    }

    /// Copies bytes at `offset` of the buffer into `out`.
    pub fn read(&mut self, buf: &Buffer, offset: usize, out: &mut [u8]) -> Result<()> {
        let va = self.buf_va(buf, offset, out.len())?;
        self.be.mem_read(va, out)
    }

    // -----------------------------------------------------------------------------------
    // Protection domains.

    /// Allocates a protection domain (`ibv_alloc_pd`).
    pub fn alloc_pd(&mut self) -> Result<Pd> {
        let pdn = self.pds.reserve()?;
        let args = PdArgs { pdn }.to_args();
        if let Err(e) = self.exec(CmdOpcode::CreatePd, &args, &|| format!("PD {pdn}"), 0) {
            self.pds.release(pdn);
            return Err(e);
        }
        self.pds.insert(pdn, ());
        Ok(Pd { pdn })
    }

    /// Frees a protection domain; refused while MRs or QPs use it.
    pub fn dealloc_pd(&mut self, pd: Pd) -> Result<()> {
        self.pds.get(pd.pdn)?;
        let mut users: Vec<String> = self
            .qps
            .entries
            .iter()
            .filter(|(_, q)| q.pdn == pd.pdn)
            .map(|(n, _)| format!("QP {n}"))
            .collect();
        users.extend(
            self.mrs
                .entries
                .values()
                .filter(|m| m.pdn == pd.pdn)
                .map(|m| format!("MR lkey {:#x}", m.key)),
        );
        if !users.is_empty() {
            return Err(Error::InUse {
                what: "PD",
                id: pd.pdn as u64,
                users: users.join(", "),
            });
        }
        let pdn = pd.pdn;
        let args = PdArgs { pdn }.to_args();
        self.exec(CmdOpcode::DestroyPd, &args, &|| format!("PD {pdn}"), 0)?;
        self.pds.remove(pdn)?;
        Ok(())
    }

    // -----------------------------------------------------------------------------------
    // Memory regions.

    /// Registers a whole buffer (`ibv_reg_mr`). `access` is a set of `access` flags; as in
    /// ibverbs, REMOTE_WRITE and REMOTE_ATOMIC need LOCAL_WRITE.
    pub fn reg_mr(&mut self, pd: Pd, buf: &Buffer, access: u32) -> Result<Mr> {
        self.reg_mr_range(pd, buf, 0, buf.len, access)
    }

    /// Registers `length` bytes at `offset` of a buffer.
    pub fn reg_mr_range(
        &mut self,
        pd: Pd,
        buf: &Buffer,
        offset: usize,
        length: usize,
        access: u32,
    ) -> Result<Mr> {
        self.reg_mr_range_at(pd, buf, offset, length, access, None)
    }

    /// [`Context::reg_mr_range`] under a virtual address of the caller's choosing
    /// (`ibv_reg_mr_iova`): with `Some(addr)` work requests and the peer name the region's
    /// first byte `addr` (the [`Mr::addr`] returned), wherever the buffer is; `None` is the
    /// buffer's own address. A region whose end would pass `u64::MAX` is refused.
    pub fn reg_mr_range_at(
        &mut self,
        pd: Pd,
        buf: &Buffer,
        offset: usize,
        length: usize,
        access: u32,
        addr: Option<u64>,
    ) -> Result<Mr> {
        self.pds.get(pd.pdn)?;
        let buf_va = self.buf_va(buf, offset, length)?;
        let iova = self.buf_entry(buf)?.region.iova_of(buf_va);
        let va = addr.unwrap_or(buf_va);
        if va.checked_add(length as u64).is_none() {
            return Err(Error::InvalidArgument(format!(
                "memory region of {length} bytes at {va:#x} runs past the address space"
            )));
        }
        if access & !access::ALL != 0 {
            return Err(Error::InvalidArgument(format!(
                "unknown access flags {:#x}",
                access & !access::ALL
            )));
        }
        if access & (access::REMOTE_WRITE | access::REMOTE_ATOMIC) != 0
            && access & access::LOCAL_WRITE == 0
        {
            return Err(Error::InvalidArgument(
                "REMOTE_WRITE and REMOTE_ATOMIC need LOCAL_WRITE".into(),
            ));
        }
        let index = self.mrs.reserve()?;
        let tag = self.mr_tags.entry(index).or_insert(0);
        *tag = tag.wrapping_add(1);
        let key = abi_cmd::mr_key(index, *tag);
        let args = MrArgs {
            index,
            key,
            pdn: pd.pdn,
            access,
            va,
            iova,
            length: length as u64,
        }
        .to_args();
        if let Err(e) = self.exec(
            CmdOpcode::RegMr,
            &args,
            &|| format!("MR {index} (key {key:#x})"),
            0,
        ) {
            self.mrs.release(index);
            return Err(e);
        }
        self.mrs.insert(
            index,
            MrEntry {
                pdn: pd.pdn,
                key,
                buf_id: buf.id,
            },
        );
        Ok(Mr {
            addr: va,
            length: length as u64,
            lkey: key,
            rkey: key,
        })
    }

    /// Deregisters a memory region (`ibv_dereg_mr`). Its keys stop working; a later
    /// registration of the same index gets a new tag.
    pub fn dereg_mr(&mut self, mr: &Mr) -> Result<()> {
        let index = abi_cmd::mr_index(mr.lkey);
        let stale = Error::UnknownHandle {
            what: "MR",
            id: mr.lkey as u64,
        };
        match self.mrs.get(index) {
            Ok(e) if e.key == mr.lkey => {}
            _ => return Err(stale),
        }
        let args = word0(index);
        let key = mr.lkey;
        self.exec(
            CmdOpcode::DeregMr,
            &args,
            &|| format!("MR {index} (key {key:#x})"),
            0,
        )?;
        self.mrs.remove(index)?;
        Ok(())
    }

    // -----------------------------------------------------------------------------------
    // Completion queues.

    /// Creates a CQ of at least `cqe` entries (`ibv_create_cq`); the ring is a power of two.
    pub fn create_cq(&mut self, cqe: u32) -> Result<Cq> {
        let log_size = log2_ring(cqe, self.attr.max_log_ring, "CQ")?;
        let bytes = DESC_SIZE << log_size;
        let region = self.be.alloc_dma(bytes)?;
        // The phase rule needs a zeroed ring; do not rely on the allocator alone.
        if let Err(e) = self.be.mem_write(region.va, &vec![0; bytes]) {
            let _ = self.be.free_dma(region.id);
            return Err(e);
        }
        let cqn = match self.cqs.reserve() {
            Ok(n) => n,
            Err(e) => {
                let _ = self.be.free_dma(region.id);
                return Err(e);
            }
        };
        let args = CqArgs {
            cqn,
            log_size,
            ring_iova: region.iova,
        }
        .to_args();
        if let Err(e) = self.exec(CmdOpcode::CreateCq, &args, &|| format!("CQ {cqn}"), 0) {
            self.cqs.release(cqn);
            let _ = self.be.free_dma(region.id);
            return Err(e);
        }
        self.cqs.insert(
            cqn,
            CqEntry {
                ring: CqRing::new(region, log_size),
            },
        );
        Ok(Cq {
            cqn,
            cqe: 1 << log_size,
        })
    }

    /// Destroys a CQ; refused while a QP uses it.
    pub fn destroy_cq(&mut self, cq: Cq) -> Result<()> {
        self.cqs.get(cq.cqn)?;
        let users: Vec<String> = self
            .qps
            .entries
            .iter()
            .filter(|(_, q)| q.send_cqn == cq.cqn || q.recv_cqn == cq.cqn)
            .map(|(n, _)| format!("QP {n}"))
            .collect();
        if !users.is_empty() {
            return Err(Error::InUse {
                what: "CQ",
                id: cq.cqn as u64,
                users: users.join(", "),
            });
        }
        let cqn = cq.cqn;
        let args = CqArgs {
            cqn,
            log_size: 0,
            ring_iova: 0,
        }
        .to_args();
        self.exec(CmdOpcode::DestroyCq, &args, &|| format!("CQ {cqn}"), 0)?;
        let e = self.cqs.remove(cqn)?;
        self.be.free_dma(e.ring.region.id)
    }

    // -----------------------------------------------------------------------------------
    // Queue pairs.

    /// Creates an RC QP in RESET (`ibv_create_qp`). The capacities are checked against the
    /// device; the returned [`Qp::cap`] holds the ring sizes actually allocated.
    pub fn create_qp(&mut self, pd: Pd, init: &QpInitAttr) -> Result<Qp> {
        self.pds.get(pd.pdn)?;
        self.cqs.get(init.send_cq.cqn)?;
        self.cqs.get(init.recv_cq.cqn)?;
        let a = self.attr;
        let c = init.cap;
        let check = |what: &str, v: u32, max: u32| {
            if v > max {
                Err(Error::InvalidArgument(format!(
                    "{what} = {v} exceeds the device's {max}"
                )))
            } else {
                Ok(())
            }
        };
        check("max_send_wr", c.max_send_wr, a.max_qp_wr)?;
        check("max_recv_wr", c.max_recv_wr, a.max_qp_wr)?;
        check("max_send_sge", c.max_send_sge, a.max_send_sge)?;
        check("max_recv_sge", c.max_recv_sge, a.max_recv_sge)?;
        check("max_inline_data", c.max_inline_data, a.max_inline_data)?;
        let sq_log = log2_ring(c.max_send_wr, a.max_log_ring, "SQ")?;
        let rq_log = log2_ring(c.max_recv_wr, a.max_log_ring, "RQ")?;
        let sq_region = self.be.alloc_dma(DESC_SIZE << sq_log)?;
        let rq_region = match self.be.alloc_dma(DESC_SIZE << rq_log) {
            Ok(r) => r,
            Err(e) => {
                let _ = self.be.free_dma(sq_region.id);
                return Err(e);
            }
        };
        let free_rings = |be: &mut Box<dyn Backend>| {
            let _ = be.free_dma(sq_region.id);
            let _ = be.free_dma(rq_region.id);
        };
        let qpn = match self.qps.reserve() {
            Ok(n) => n,
            Err(e) => {
                free_rings(&mut self.be);
                return Err(e);
            }
        };
        let args = CreateQpArgs {
            qpn,
            pdn: pd.pdn,
            send_cqn: init.send_cq.cqn,
            recv_cqn: init.recv_cq.cqn,
            sq_iova: sq_region.iova,
            sq_log_size: sq_log,
            rq_iova: rq_region.iova,
            rq_log_size: rq_log,
        }
        .to_args();
        if let Err(e) = self.exec(CmdOpcode::CreateQp, &args, &|| format!("QP {qpn}"), 0) {
            self.qps.release(qpn);
            free_rings(&mut self.be);
            return Err(e);
        }
        let cap = QpCap {
            max_send_wr: 1 << sq_log,
            max_recv_wr: 1 << rq_log,
            ..c
        };
        self.qps.insert(
            qpn,
            QpEntry {
                pdn: pd.pdn,
                send_cqn: init.send_cq.cqn,
                recv_cqn: init.recv_cq.cqn,
                sq: WorkQueue::new(sq_region, sq_log),
                rq: WorkQueue::new(rq_region, rq_log),
                cap,
                attr: QpAttr::default(),
            },
        );
        Ok(Qp { qp_num: qpn, cap })
    }

    /// Modifies a QP (`ibv_modify_qp`): applies the attributes named by `mask` (`qp_attr`
    /// bits). Moving to RESET empties the QP's rings on both sides.
    pub fn modify_qp(&mut self, qp: Qp, attr: &QpAttr, mask: u32) -> Result<()> {
        let qpn = qp.qp_num;
        self.qps.get(qpn)?;
        if mask & !qp_attr::ALL != 0 {
            return Err(Error::InvalidArgument(format!(
                "unknown qp_attr mask bits {:#x}",
                mask & !qp_attr::ALL
            )));
        }
        let args = ModifyQpArgs {
            qpn,
            mask,
            state: attr.qp_state.into(),
            path_mtu: attr.path_mtu as u8,
            dest_qpn: attr.dest_qp_num,
            rq_psn: attr.rq_psn,
            sq_psn: attr.sq_psn,
            dest_mac: attr.ah_attr.dmac,
            dest_ip: attr.ah_attr.dip,
            access: attr.qp_access_flags,
            timeout: attr.timeout,
            retry_cnt: attr.retry_cnt,
            rnr_retry: attr.rnr_retry,
            min_rnr_timer: attr.min_rnr_timer,
            max_rd_atomic: attr.max_rd_atomic,
            max_dest_rd_atomic: attr.max_dest_rd_atomic,
            udp_sport: attr.ah_attr.udp_sport,
        };
        let from = self.qps.get(qpn)?.attr.qp_state;
        self.exec(
            CmdOpcode::ModifyQp,
            &args.to_args(),
            &|| format!("QP {qpn} ({from} -> {}, mask {mask:#x})", attr.qp_state),
            0,
        )?;
        let e = self.qps.get_mut(qpn)?;
        let a = &mut e.attr;
        let has = |bit| mask & bit != 0;
        if has(qp_attr::STATE) {
            a.qp_state = attr.qp_state;
            if attr.qp_state == QpState::Reset {
                e.sq.pi = 0;
                e.sq.retired = 0;
                e.rq.pi = 0;
                e.rq.retired = 0;
            }
        }
        if has(qp_attr::PATH_MTU) {
            a.path_mtu = attr.path_mtu;
        }
        if has(qp_attr::DEST_QPN) {
            a.dest_qp_num = attr.dest_qp_num;
        }
        if has(qp_attr::RQ_PSN) {
            a.rq_psn = attr.rq_psn;
        }
        if has(qp_attr::SQ_PSN) {
            a.sq_psn = attr.sq_psn;
        }
        if has(qp_attr::ACCESS_FLAGS) {
            a.qp_access_flags = attr.qp_access_flags;
        }
        if has(qp_attr::AV) {
            a.ah_attr = attr.ah_attr;
        }
        if has(qp_attr::TIMEOUT) {
            a.timeout = attr.timeout;
        }
        if has(qp_attr::RETRY_CNT) {
            a.retry_cnt = attr.retry_cnt;
        }
        if has(qp_attr::RNR_RETRY) {
            a.rnr_retry = attr.rnr_retry;
        }
        if has(qp_attr::MIN_RNR_TIMER) {
            a.min_rnr_timer = attr.min_rnr_timer;
        }
        if has(qp_attr::MAX_QP_RD_ATOMIC) {
            a.max_rd_atomic = attr.max_rd_atomic;
        }
        if has(qp_attr::MAX_DEST_RD_ATOMIC) {
            a.max_dest_rd_atomic = attr.max_dest_rd_atomic;
        }
        Ok(())
    }

    /// Queries a QP (`ibv_query_qp`): state, PSNs, destination QPN, path MTU and access
    /// come from the device; the other attributes are those last applied.
    pub fn query_qp(&mut self, qp: Qp) -> Result<QpAttr> {
        let qpn = qp.qp_num;
        self.qps.get(qpn)?;
        let args = word0(qpn);
        let outs = self.exec(CmdOpcode::QueryQp, &args, &|| format!("QP {qpn}"), 8)?;
        let q = QueryQpOut::from_outs(&outs);
        let e = self.qps.get_mut(qpn)?;
        e.attr.qp_state = q.state;
        let mut attr = e.attr;
        attr.sq_psn = q.sq_psn;
        attr.rq_psn = q.rq_psn;
        attr.dest_qp_num = q.dest_qpn;
        if let Some(m) = Mtu::from_code(q.path_mtu as u32) {
            attr.path_mtu = m;
        }
        attr.qp_access_flags = q.access;
        Ok(attr)
    }

    /// The QP's counters, indexed by [`Counter`] (`c as usize`).
    pub fn query_qp_counters(&mut self, qp: Qp) -> Result<[u64; Counter::COUNT]> {
        let qpn = qp.qp_num;
        self.qps.get(qpn)?;
        let scratch = match self.scratch {
            Some(r) => r,
            None => {
                let r = self.be.alloc_dma(8 * Counter::COUNT)?;
                self.scratch = Some(r);
                r
            }
        };
        let args = QpCountersArgs {
            qpn,
            iova: scratch.iova,
        }
        .to_args();
        self.exec(
            CmdOpcode::QueryQpCounters,
            &args,
            &|| format!("QP {qpn}"),
            0,
        )?;
        let mut raw = [0u8; 8 * Counter::COUNT];
        self.be.mem_read(scratch.va, &mut raw)?;
        let mut out = [0u64; Counter::COUNT];
        for (i, w) in raw.chunks_exact(8).enumerate() {
            out[i] = u64::from_le_bytes(w.try_into().expect("8-byte chunk"));
        }
        Ok(out)
    }

    /// Destroys a QP (`ibv_destroy_qp`) and frees its rings.
    pub fn destroy_qp(&mut self, qp: Qp) -> Result<()> {
        let qpn = qp.qp_num;
        self.qps.get(qpn)?;
        let args = word0(qpn);
        self.exec(CmdOpcode::DestroyQp, &args, &|| format!("QP {qpn}"), 0)?;
        let e = self.qps.remove(qpn)?;
        self.be.free_dma(e.sq.region.id)?;
        self.be.free_dma(e.rq.region.id)
    }

    // -----------------------------------------------------------------------------------
    // Posting.

    /// Posts send work requests (`ibv_post_send`): writes one WQE each into the SQ, then
    /// rings the SQ doorbell once. On a refused request, the ones before it are posted
    /// (and rung) and the error names its index.
    pub fn post_send(&mut self, qp: Qp, wrs: &[SendWr]) -> Result<(), PostError> {
        let qpn = qp.qp_num;
        let at0 = |error| PostError {
            index_of_first_bad_wr: 0,
            error,
        };
        let Context { be, qps, .. } = self;
        let e = qps.get_mut(qpn).map_err(at0)?;
        let state = e.attr.qp_state;
        if matches!(state, QpState::Reset | QpState::Init | QpState::Rtr) {
            return Err(at0(Error::BadQpState {
                qpn,
                state,
                queue: "send queue",
            }));
        }
        let start = e.sq.pi;
        let failure = first_failure(wrs, |wr| {
            let wqe = build_send_wqe(&mut **be, qpn, &e.cap, wr)?;
            if e.sq.free() == 0 {
                return Err(Error::SqFull {
                    qpn,
                    depth: e.sq.outstanding(),
                });
            }
            be.mem_write(e.sq.slot_va(e.sq.pi), &wqe.to_bytes())?;
            e.sq.pi = e.sq.pi.wrapping_add(1);
            Ok(())
        });
        if e.sq.pi != start {
            be.bar_write(regs::sq_doorbell(qpn), e.sq.pi);
        }
        failure.map_or(Ok(()), Err)
    }

    /// Posts receive work requests (`ibv_post_recv`): one WQE each, then one RQ doorbell.
    pub fn post_recv(&mut self, qp: Qp, wrs: &[RecvWr]) -> Result<(), PostError> {
        let qpn = qp.qp_num;
        let at0 = |error| PostError {
            index_of_first_bad_wr: 0,
            error,
        };
        let Context { be, qps, .. } = self;
        let e = qps.get_mut(qpn).map_err(at0)?;
        let state = e.attr.qp_state;
        if state == QpState::Reset {
            return Err(at0(Error::BadQpState {
                qpn,
                state,
                queue: "receive queue",
            }));
        }
        let start = e.rq.pi;
        let failure = first_failure(wrs, |wr| {
            if wr.sg_list.len() > e.cap.max_recv_sge as usize {
                return Err(Error::TooManySge {
                    qpn,
                    n: wr.sg_list.len(),
                    max: e.cap.max_recv_sge,
                });
            }
            if e.rq.free() == 0 {
                return Err(Error::RqFull {
                    qpn,
                    depth: e.rq.outstanding(),
                });
            }
            let wqe = RecvWqe {
                wr_id: wr.wr_id,
                num_sge: wr.sg_list.len() as u8,
                sge: wr.sg_list.first().copied().unwrap_or_default(),
            };
            be.mem_write(e.rq.slot_va(e.rq.pi), &wqe.to_bytes())?;
            e.rq.pi = e.rq.pi.wrapping_add(1);
            Ok(())
        });
        if e.rq.pi != start {
            be.bar_write(regs::rq_doorbell(qpn), e.rq.pi);
        }
        failure.map_or(Ok(()), Err)
    }

    // -----------------------------------------------------------------------------------
    // Completions.

    /// Polls up to `wcs.len()` completions (`ibv_poll_cq`); returns how many it wrote.
    pub fn poll_cq(&mut self, cq: Cq, wcs: &mut [Wc]) -> Result<usize> {
        let cqn = cq.cqn;
        let Context { be, cqs, qps, .. } = self;
        let ring = &mut cqs.get_mut(cqn)?.ring;
        let mut n = 0;
        while n < wcs.len() {
            let va = ring.next_va();
            let mut owner = [0u8];
            be.mem_read(va + Cqe::OWNER_OFFSET as u64, &mut owner)?;
            if owner[0] & 1 != ring.expected_phase() {
                break;
            }
            let mut raw = [0u8; DESC_SIZE];
            be.mem_read(va, &mut raw)?;
            let c = Cqe::from_bytes(&raw);
            if let Ok(q) = qps.get_mut(c.qp_num) {
                // Which queue the completion retires: the CQ says when the QP's two CQs
                // differ; on a shared CQ, receive completions have bit 7 of the opcode
                // set (IBV_WC_RECV = 1 << 7).
                let is_recv = if q.send_cqn != q.recv_cqn {
                    q.recv_cqn == cqn
                } else {
                    u8::from(c.opcode) & 0x80 != 0
                };
                if is_recv {
                    q.rq.retire_through(c.wqe_index);
                } else {
                    q.sq.retire_through(c.wqe_index);
                }
                if c.status != WcStatus::Success {
                    q.attr.qp_state = QpState::Err;
                }
            }
            wcs[n] = Wc::from_cqe(&c);
            ring.ci = ring.ci.wrapping_add(1);
            n += 1;
        }
        if n > 0 {
            be.bar_write(regs::cq_doorbell(cqn), ring.ci);
        }
        Ok(n)
    }

    /// Polls until `n` completions have arrived, letting time pass between polls; fails
    /// with [`Error::CqTimeout`] (holding what did arrive) after `timeout_cycles`.
    pub fn wait_cq(&mut self, cq: Cq, n: usize, timeout_cycles: u64) -> Result<Vec<Wc>> {
        let start = self.be.now();
        let quantum = self.poll_quantum;
        self.wait_cq_with(cq, n, |now, got| {
            let waited = now.saturating_sub(start);
            if waited >= timeout_cycles {
                return Err(Error::CqTimeout {
                    cqn: cq.cqn,
                    wanted: n,
                    cycles: waited,
                    got: std::mem::take(got),
                });
            }
            Ok(quantum.min(timeout_cycles - waited))
        })
    }

    /// The loop of the CQ waits: polls until `n` completions have arrived; after a poll that
    /// found none, `idle(now, got)` gives the cycles to let the device run before the next
    /// poll, or the wait's timeout error (taking what did arrive from `got`).
    fn wait_cq_with(
        &mut self,
        cq: Cq,
        n: usize,
        mut idle: impl FnMut(u64, &mut Vec<Wc>) -> Result<u64>,
    ) -> Result<Vec<Wc>> {
        let mut out = Vec::with_capacity(n);
        let mut buf = [Wc::default(); 32];
        while out.len() < n {
            let want = (n - out.len()).min(buf.len());
            let k = self.poll_cq(cq, &mut buf[..want])?;
            out.extend_from_slice(&buf[..k]);
            if k == 0 {
                let cycles = idle(self.be.now(), &mut out)?;
                self.be.wait(cycles);
            }
        }
        Ok(out)
    }

    // -----------------------------------------------------------------------------------
    // Teardown.

    /// Destroys every object (QPs, MRs, CQs, PDs) and frees all DMA memory. Reports the
    /// first failure but goes on releasing the rest; after a command timeout it only
    /// frees memory (the device is not answering).
    pub fn close(mut self) -> Result<()> {
        self.teardown()
    }

    fn teardown(&mut self) -> Result<()> {
        let mut first: Option<Error> = None;
        let mut note = |r: Result<()>, wedged: &mut bool| {
            if let Err(e) = r {
                if matches!(e, Error::CmdTimeout { .. } | Error::CmdBusy { .. }) {
                    *wedged = true;
                }
                first.get_or_insert(e);
            }
        };
        let qpns: Vec<u32> = self.qps.entries.keys().copied().collect();
        for qpn in qpns {
            if !self.wedged {
                let args = word0(qpn);
                let r = self.exec(CmdOpcode::DestroyQp, &args, &|| format!("QP {qpn}"), 0);
                note(r.map(drop), &mut self.wedged);
            }
            if let Some(e) = self.qps.entries.remove(&qpn) {
                note(self.be.free_dma(e.sq.region.id), &mut self.wedged);
                note(self.be.free_dma(e.rq.region.id), &mut self.wedged);
            }
        }
        let mrs: Vec<u32> = self.mrs.entries.keys().copied().collect();
        for index in mrs {
            if !self.wedged {
                let args = word0(index);
                let r = self.exec(CmdOpcode::DeregMr, &args, &|| format!("MR {index}"), 0);
                note(r.map(drop), &mut self.wedged);
            }
            self.mrs.entries.remove(&index);
        }
        let cqns: Vec<u32> = self.cqs.entries.keys().copied().collect();
        for cqn in cqns {
            if !self.wedged {
                let args = CqArgs {
                    cqn,
                    log_size: 0,
                    ring_iova: 0,
                }
                .to_args();
                let r = self.exec(CmdOpcode::DestroyCq, &args, &|| format!("CQ {cqn}"), 0);
                note(r.map(drop), &mut self.wedged);
            }
            if let Some(e) = self.cqs.entries.remove(&cqn) {
                note(self.be.free_dma(e.ring.region.id), &mut self.wedged);
            }
        }
        let pdns: Vec<u32> = self.pds.entries.keys().copied().collect();
        for pdn in pdns {
            if !self.wedged {
                let args = PdArgs { pdn }.to_args();
                let r = self.exec(CmdOpcode::DestroyPd, &args, &|| format!("PD {pdn}"), 0);
                note(r.map(drop), &mut self.wedged);
            }
            self.pds.entries.remove(&pdn);
        }
        let bufs: Vec<u64> = self.bufs.keys().copied().collect();
        for id in bufs {
            self.bufs.remove(&id);
            note(self.be.free_dma(id), &mut self.wedged);
        }
        if let Some(r) = self.scratch.take() {
            note(self.be.free_dma(r.id), &mut self.wedged);
        }
        first.map_or(Ok(()), Err)
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        let _ = self.teardown();
    }
}

/// Send flags (`enum ibv_send_flags`), numbered as in verbs.h: the `send_flags` bits of a
/// [`SendWr`].
///
/// The flags byte of a send WQE holds the same flags at the device's own bit positions
/// (`rocenic_proto::abi::verbs::send_flags`: SIGNALED 1, SOLICITED 2, INLINE 4, FENCE 8,
/// fixed by the host ABI). [`to_wqe`](send_flags::to_wqe) and
/// [`from_wqe`](send_flags::from_wqe) are the only places that translate.
///
/// ```
/// use rocenic_driver::send_flags;
///
/// let flags = send_flags::SIGNALED | send_flags::INLINE;
/// assert_eq!(flags, 2 | 8); // IBV_SEND_SIGNALED | IBV_SEND_INLINE
/// let wqe = send_flags::to_wqe(flags).unwrap();
/// assert_eq!(wqe, 1 | 4); // the device's SIGNALED | INLINE
/// assert_eq!(send_flags::from_wqe(wqe), Some(flags));
/// assert_eq!(send_flags::to_wqe(16), None); // IBV_SEND_IP_CSUM: not supported
/// ```
pub mod send_flags {
    use rocenic_proto::abi::verbs::send_flags as wqe;

    /// `IBV_SEND_FENCE`: wait until every earlier RDMA READ and atomic has completed.
    pub const FENCE: u32 = 1;
    /// `IBV_SEND_SIGNALED`: write a completion on success (errors always complete).
    pub const SIGNALED: u32 = 2;
    /// `IBV_SEND_SOLICITED`: set the solicited-event bit in the last packet.
    pub const SOLICITED: u32 = 4;
    /// `IBV_SEND_INLINE`: the driver copies the payload into the WQE.
    pub const INLINE: u32 = 8;
    /// Every flag rocenic supports; others are refused.
    pub const ALL: u32 = FENCE | SIGNALED | SOLICITED | INLINE;

    /// verbs.h flag and device bit, each pair once.
    const PAIRS: [(u32, u8); 4] = [
        (FENCE, wqe::FENCE),
        (SIGNALED, wqe::SIGNALED),
        (SOLICITED, wqe::SOLICITED),
        (INLINE, wqe::INLINE),
    ];

    /// The WQE flags byte for verbs.h `flags`; `None` if `flags` has a bit outside [`ALL`].
    pub fn to_wqe(flags: u32) -> Option<u8> {
        (flags & !ALL == 0).then(|| {
            PAIRS
                .iter()
                .filter(|(verbs, _)| flags & verbs != 0)
                .fold(0, |acc, (_, device)| acc | device)
        })
    }

    /// The verbs.h flags of a WQE flags byte; `None` if it has a bit the device does not
    /// define.
    pub fn from_wqe(bits: u8) -> Option<u32> {
        let known = PAIRS.iter().fold(0, |acc, (_, device)| acc | device);
        (bits & !known == 0).then(|| {
            PAIRS
                .iter()
                .filter(|(_, device)| bits & device != 0)
                .fold(0, |acc, (verbs, _)| acc | verbs)
        })
    }
}

/// Validates one send work request against the QP and turns it into a WQE.
fn build_send_wqe(be: &mut dyn Backend, qpn: u32, cap: &QpCap, wr: &SendWr) -> Result<SendWqe> {
    let op = wr.opcode;
    if let WrOpcode::Unknown(v) = op {
        return Err(Error::BadWr(format!("unknown opcode {v}")));
    }
    let Some(flags) = send_flags::to_wqe(wr.send_flags) else {
        return Err(Error::BadWr(format!(
            "unknown send_flags {:#x}",
            wr.send_flags & !send_flags::ALL
        )));
    };
    if wr.sg_list.len() > cap.max_send_sge as usize {
        return Err(Error::TooManySge {
            qpn,
            n: wr.sg_list.len(),
            max: cap.max_send_sge,
        });
    }
    let mut wqe = SendWqe {
        wr_id: wr.wr_id,
        opcode: op,
        flags,
        ..SendWqe::default()
    };
    match op {
        WrOpcode::SendWithImm | WrOpcode::RdmaWriteWithImm => wqe.imm_or_inv = wr.imm_data,
        WrOpcode::SendWithInv => wqe.imm_or_inv = wr.invalidate_rkey,
        _ => {}
    }
    if op.is_atomic() {
        let ok = matches!(wr.sg_list.as_slice(), [s] if s.length == 8);
        if !ok {
            return Err(Error::BadWr(format!(
                "{op} needs exactly one SGE of 8 bytes for the original value"
            )));
        }
        wqe.remote_addr = wr.atomic.remote_addr;
        wqe.rkey = wr.atomic.rkey;
        wqe.compare_add = wr.atomic.compare_add;
        wqe.swap = wr.atomic.swap;
    } else if op.has_remote() {
        wqe.remote_addr = wr.rdma.remote_addr;
        wqe.rkey = wr.rdma.rkey;
    }
    if wr.send_flags & send_flags::INLINE != 0 {
        if matches!(op, WrOpcode::RdmaRead) || op.is_atomic() {
            return Err(Error::BadWr(format!("{op} cannot be INLINE")));
        }
        let total: u64 = wr.sg_list.iter().map(|s| s.length as u64).sum();
        if total > cap.max_inline_data as u64 {
            return Err(Error::InlineTooLong {
                qpn,
                len: total,
                max: cap.max_inline_data,
            });
        }
        let mut at = 0;
        for s in &wr.sg_list {
            let n = s.length as usize;
            be.mem_read(s.addr, &mut wqe.inline[at..at + n])?;
            at += n;
        }
        wqe.inline_len = at as u8;
    } else {
        wqe.num_sge = wr.sg_list.len() as u8;
        if let Some(s) = wr.sg_list.first() {
            wqe.sge = *s;
        }
    }
    Ok(wqe)
}

#[cfg(test)]
mod tests;

/// Posts work requests in order with `post` until one fails, and returns that failure
/// with its index (ibverbs' `bad_wr`); the requests before it stay posted.
fn first_failure<W>(wrs: &[W], mut post: impl FnMut(&W) -> Result<()>) -> Option<PostError> {
    wrs.iter().enumerate().find_map(|(i, wr)| {
        post(wr).err().map(|error| PostError {
            index_of_first_bad_wr: i,
            error,
        })
    })
}
