//! The driver's one error enum: a variant per failure, each with its cause.

use rocenic_proto::abi::cmd::{CmdOpcode, CmdStatus};
use rocenic_proto::abi::verbs::QpState;

use crate::verbs::Wc;

/// Everything the driver can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The ID register does not hold `regs::DEVICE_ID`: not a rocenic device, or BAR0 is not
    /// mapped where the backend thinks it is.
    #[error("not a rocenic device: ID register reads {found:#010x}, expected {expected:#010x} (\"RoCE\")")]
    NotRocenic {
        /// What the ID register holds.
        found: u32,
        /// `regs::DEVICE_ID`.
        expected: u32,
    },

    /// The device speaks an ABI major version this driver does not.
    #[error(
        "device ABI {major}.{minor} is not supported: this driver speaks ABI {driver_major}.x"
    )]
    AbiMismatch {
        /// The device's ABI major version.
        major: u16,
        /// The device's ABI minor version.
        minor: u16,
        /// The ABI major version this driver speaks.
        driver_major: u16,
    },

    /// A capability register holds a value the driver cannot work with.
    #[error("device capability {register} = {value:#x} is unusable: {why}")]
    BadCapability {
        /// The register's name.
        register: &'static str,
        /// What it holds.
        value: u32,
        /// Why that value is unusable.
        why: &'static str,
    },

    /// The backend could not allocate or map DMA memory.
    #[error("DMA allocation of {len} bytes failed: {reason}")]
    DmaAlloc {
        /// Bytes asked for.
        len: usize,
        /// The backend's reason.
        reason: String,
    },

    /// The backend could not unmap or free a DMA region.
    #[error("freeing DMA region {id} failed: {reason}")]
    DmaFree {
        /// The region's id.
        id: u64,
        /// The backend's reason.
        reason: String,
    },

    /// A host CPU access to DMA memory failed (outside any live region).
    #[error("host {} of {len} bytes at VA {va:#x} failed: {reason}", if *.write { "write" } else { "read" })]
    MemAccess {
        /// Virtual address of the first byte.
        va: u64,
        /// Bytes accessed.
        len: usize,
        /// A write (else a read).
        write: bool,
        /// The backend's reason.
        reason: String,
    },

    /// The command mailbox was still busy with an earlier command.
    #[error("command mailbox still busy after {cycles} cycles, cannot start {op}")]
    CmdBusy {
        /// The command that could not start.
        op: CmdOpcode,
        /// How long the driver waited.
        cycles: u64,
    },

    /// The device did not finish a command in time.
    #[error("command {op} on {object} timed out: CMD_STATUS still busy after {cycles} cycles")]
    CmdTimeout {
        /// The command.
        op: CmdOpcode,
        /// The object it named.
        object: String,
        /// How long the driver waited.
        cycles: u64,
    },

    /// The device finished a command with an error status.
    #[error("command {op} on {object} failed with {status}: {}", cmd_status_meaning(*.status))]
    Cmd {
        /// The command.
        op: CmdOpcode,
        /// The object it named.
        object: String,
        /// The status the device returned.
        status: CmdStatus,
    },

    /// Every object number of a kind is taken.
    #[error("out of {what}: all {max} are in use")]
    Exhausted {
        /// The kind of object.
        what: &'static str,
        /// How many the device has.
        max: u32,
    },

    /// A handle names no live object (never created, or already destroyed).
    #[error("unknown {what} {id} (never created or already destroyed)")]
    UnknownHandle {
        /// The kind of object.
        what: &'static str,
        /// The number the handle holds.
        id: u64,
    },

    /// An object cannot be destroyed while others still use it.
    #[error("{what} {id} is still in use by {users}")]
    InUse {
        /// The kind of object.
        what: &'static str,
        /// Its number.
        id: u64,
        /// The objects still using it.
        users: String,
    },

    /// An argument is out of range or inconsistent.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// A host access to a [`crate::Buffer`] falls outside it.
    #[error("{len} bytes at offset {offset} fall outside buffer {id} of {buf_len} bytes")]
    OutOfBounds {
        /// The buffer's id.
        id: u64,
        /// Offset of the access.
        offset: usize,
        /// Length of the access.
        len: usize,
        /// The buffer's length.
        buf_len: usize,
    },

    /// The send queue has no free slot: poll completions (signal some WRs) first.
    #[error("send queue of QP {qpn} is full: {depth} WRs outstanding")]
    SqFull {
        /// The QP.
        qpn: u32,
        /// Work requests outstanding.
        depth: u32,
    },

    /// The receive queue has no free slot.
    #[error("receive queue of QP {qpn} is full: {depth} WRs outstanding")]
    RqFull {
        /// The QP.
        qpn: u32,
        /// Work requests outstanding.
        depth: u32,
    },

    /// A work request has more scatter/gather entries than the QP was created with.
    #[error("work request has {n} SGEs but QP {qpn} allows {max}")]
    TooManySge {
        /// The QP.
        qpn: u32,
        /// SGEs in the request.
        n: usize,
        /// SGEs the QP allows.
        max: u32,
    },

    /// An inline work request carries more bytes than the QP was created with.
    #[error("inline data of {len} bytes exceeds QP {qpn}'s max_inline_data of {max}")]
    InlineTooLong {
        /// The QP.
        qpn: u32,
        /// Bytes of inline data in the request.
        len: u64,
        /// The QP's `max_inline_data`.
        max: u32,
    },

    /// The QP's state does not allow posting to this queue.
    #[error("cannot post to the {queue} of QP {qpn} in state {state}")]
    BadQpState {
        /// The QP.
        qpn: u32,
        /// Its state.
        state: QpState,
        /// "send queue" or "receive queue".
        queue: &'static str,
    },

    /// The work request's opcode or flags are not valid for it.
    #[error("work request invalid: {0}")]
    BadWr(String),

    /// Completions did not arrive in time.
    #[error("CQ {cqn}: timed out after {cycles} cycles waiting for {wanted} completions, got {}", .got.len())]
    CqTimeout {
        /// The CQ.
        cqn: u32,
        /// Completions waited for.
        wanted: usize,
        /// How long the driver waited.
        cycles: u64,
        /// The completions that did arrive (already consumed from the CQ).
        got: Vec<Wc>,
    },

    /// The backend named on the command line does not exist.
    #[error("unknown backend {name:?}; available backends: {available}")]
    UnknownBackend {
        /// The name given.
        name: String,
        /// The backends this build has.
        available: String,
    },

    /// The backend exists in the design but not in this build yet.
    #[error("backend {name:?} is not available yet: {why}")]
    BackendUnavailable {
        /// The name given.
        name: String,
        /// Why it is not available.
        why: String,
    },

    /// The Verilated RTL could not be built or instantiated (the message names the
    /// install command when `verilator` or `g++` is missing).
    #[error("RTL simulation: {0}")]
    Rtl(String),

    /// The simulation world refused something (building it, a capture file).
    #[error("simulation: {0}")]
    Sim(String),

    /// The VFIO backend could not open or set up the device.
    #[error(transparent)]
    Vfio(#[from] crate::backend::vfio::VfioError),

    /// The backend cannot do what was asked (the message says why).
    #[error("{what} is not supported by this backend: {why}")]
    Unsupported {
        /// The operation asked for.
        what: &'static str,
        /// Why the backend cannot do it.
        why: String,
    },

    /// Completions did not arrive within a wall-clock time (`Context::wait_cq_for`).
    #[error("CQ {cqn}: timed out after {waited:?} waiting for {wanted} completions, got {}", .got.len())]
    CqWaitTimeout {
        /// The CQ waited on.
        cqn: u32,
        /// How many completions were asked for.
        wanted: usize,
        /// How long the wait took.
        waited: std::time::Duration,
        /// The completions that did arrive (already consumed from the CQ).
        got: Vec<Wc>,
    },
}

/// What a command status means, for error messages.
pub fn cmd_status_meaning(s: CmdStatus) -> &'static str {
    match s {
        CmdStatus::Ok => "success",
        CmdStatus::BadOpcode => "the device does not know the command",
        CmdStatus::BadIndex => "an object number is outside the device's table",
        CmdStatus::InUse => "the object already exists or is still referenced",
        CmdStatus::NotFound => "the object does not exist",
        CmdStatus::BadParam => "an argument is out of range or a required attribute is missing",
        CmdStatus::BadState => "the QP state transition is not allowed",
        CmdStatus::DmaFault => "a DMA access of the command faulted",
        CmdStatus::Unknown(_) => "unknown status code",
    }
}

/// The result type of the driver.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// `post_send`/`post_recv` failure: the work requests before `index_of_first_bad_wr` were
/// posted (and announced with a doorbell); that one and the ones after it were not.
#[derive(Debug, thiserror::Error)]
#[error("work request {index_of_first_bad_wr} not posted: {error}")]
pub struct PostError {
    /// Index in the slice passed to `post_send`/`post_recv` of the first request not posted.
    pub index_of_first_bad_wr: usize,
    /// Why it was refused.
    #[source]
    pub error: Error,
}

/// A call that failed and gives back what it was handed: the application's memory (from
/// `Context::reg_mr_owned`, `Context::adopt_buf`) or the registration it was asked to end
/// (from `Context::dereg_mr_owned`), so nothing the application owns is lost on an error.
pub struct Rejected<T> {
    /// Why the call failed.
    pub error: Error,
    /// What the caller handed over, unchanged.
    pub value: T,
}

impl<T> Rejected<T> {
    /// The error, dropping what was given back.
    pub fn into_error(self) -> Error {
        self.error
    }
}

impl<T> std::fmt::Debug for Rejected<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rejected")
            .field("error", &self.error)
            .field("value", &std::any::type_name::<T>())
            .finish()
    }
}

impl<T> std::fmt::Display for Rejected<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

impl<T> std::error::Error for Rejected<T> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

impl<T> From<Rejected<T>> for Error {
    fn from(r: Rejected<T>) -> Error {
        r.error
    }
}
