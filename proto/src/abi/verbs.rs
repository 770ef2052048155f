//! The verbs enumerations, numbered as in rdma-core's `infiniband/verbs.h` so that users and
//! tools read them without a translation table.

use core::fmt;

/// Defines a `u8`/`u32`-backed enum with an `Unknown` case, so that decoding a number never
/// fails (the caller decides what an unknown value means).
macro_rules! numbered_enum {
    ($(#[$m:meta])* $name:ident : $ty:ty { $($(#[$vm:meta])* $var:ident = $val:expr => $text:expr),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name { $($(#[$vm])* $var,)+ Unknown($ty) }
        impl From<$ty> for $name {
            fn from(v: $ty) -> Self { match v { $($val => $name::$var,)+ other => $name::Unknown(other) } }
        }
        impl From<$name> for $ty {
            fn from(v: $name) -> $ty { match v { $($name::$var => $val,)+ $name::Unknown(other) => other } }
        }
        impl $name {
            /// The number (`From` in a `const` context, for the RTL's constants).
            pub const fn code(self) -> $ty { match self { $($name::$var => $val,)+ $name::Unknown(other) => other } }
            /// The name ibverbs uses for this value.
            pub fn name(&self) -> &'static str { match self { $($name::$var => $text,)+ $name::Unknown(_) => "UNKNOWN" } }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self { $name::Unknown(v) => write!(f, "UNKNOWN({v})"), _ => f.write_str(self.name()) }
            }
        }
    };
}
pub(crate) use numbered_enum;

numbered_enum! {
    /// QP state (`enum ibv_qp_state`).
    QpState: u8 {
        Reset = 0 => "RESET", Init = 1 => "INIT", Rtr = 2 => "RTR", Rts = 3 => "RTS",
        Sqd = 4 => "SQD", Sqe = 5 => "SQE", Err = 6 => "ERR",
    }
}

numbered_enum! {
    /// Send work-request opcode (`enum ibv_wr_opcode`), the `opcode` byte of a send WQE.
    WrOpcode: u8 {
        RdmaWrite = 0 => "RDMA_WRITE",
        RdmaWriteWithImm = 1 => "RDMA_WRITE_WITH_IMM",
        Send = 2 => "SEND",
        SendWithImm = 3 => "SEND_WITH_IMM",
        RdmaRead = 4 => "RDMA_READ",
        AtomicCmpAndSwp = 5 => "ATOMIC_CMP_AND_SWP",
        AtomicFetchAndAdd = 6 => "ATOMIC_FETCH_AND_ADD",
        SendWithInv = 9 => "SEND_WITH_INV",
    }
}

impl WrOpcode {
    /// Whether the request is an atomic (8-byte, 8-byte aligned operand).
    pub fn is_atomic(&self) -> bool {
        matches!(
            self,
            WrOpcode::AtomicCmpAndSwp | WrOpcode::AtomicFetchAndAdd
        )
    }
    /// Whether the request names remote memory (RETH or AtomicETH on the wire).
    pub fn has_remote(&self) -> bool {
        matches!(
            self,
            WrOpcode::RdmaWrite | WrOpcode::RdmaWriteWithImm | WrOpcode::RdmaRead
        ) || self.is_atomic()
    }
    /// The completion opcode reported for this request.
    pub fn wc_opcode(&self) -> WcOpcode {
        match self {
            WrOpcode::RdmaWrite | WrOpcode::RdmaWriteWithImm => WcOpcode::RdmaWrite,
            WrOpcode::RdmaRead => WcOpcode::RdmaRead,
            WrOpcode::AtomicCmpAndSwp => WcOpcode::CompSwap,
            WrOpcode::AtomicFetchAndAdd => WcOpcode::FetchAdd,
            _ => WcOpcode::Send,
        }
    }
}

numbered_enum! {
    /// Completion opcode (`enum ibv_wc_opcode`).
    WcOpcode: u8 {
        Send = 0 => "SEND",
        RdmaWrite = 1 => "RDMA_WRITE",
        RdmaRead = 2 => "RDMA_READ",
        CompSwap = 3 => "COMP_SWAP",
        FetchAdd = 4 => "FETCH_ADD",
        Recv = 128 => "RECV",
        RecvRdmaWithImm = 129 => "RECV_RDMA_WITH_IMM",
    }
}

numbered_enum! {
    /// Work-completion status (`enum ibv_wc_status`); the meanings are ibverbs'.
    WcStatus: u8 {
        /// The operation completed successfully.
        Success = 0 => "SUCCESS",
        /// A message was larger than the receive buffer, or a local length was invalid.
        LocLenErr = 1 => "LOC_LEN_ERR",
        /// The work request was invalid for the QP (bad opcode, too many SGEs, inline too long).
        LocQpOpErr = 2 => "LOC_QP_OP_ERR",
        /// A local SGE's lkey, PD, access or bounds were invalid.
        LocProtErr = 4 => "LOC_PROT_ERR",
        /// The work request was flushed because the QP entered the error state.
        WrFlushErr = 5 => "WR_FLUSH_ERR",
        /// A response did not match the request it answered.
        BadRespErr = 7 => "BAD_RESP_ERR",
        /// A local protection error was found while writing a response into local memory.
        LocAccessErr = 8 => "LOC_ACCESS_ERR",
        /// The responder found the request invalid (NAK Invalid Request).
        RemInvReqErr = 9 => "REM_INV_REQ_ERR",
        /// The responder refused access: rkey, PD, access flags or bounds (NAK Remote Access Error).
        RemAccessErr = 10 => "REM_ACCESS_ERR",
        /// The responder could not complete the operation (NAK Remote Operational Error).
        RemOpErr = 11 => "REM_OP_ERR",
        /// The transport retry counter was exceeded (no ACK, or repeated sequence-error NAKs).
        RetryExcErr = 12 => "RETRY_EXC_ERR",
        /// The RNR retry counter was exceeded (the responder had no receive posted).
        RnrRetryExcErr = 13 => "RNR_RETRY_EXC_ERR",
        /// The device failed.
        FatalErr = 19 => "FATAL_ERR",
        /// A general error with no better code.
        GeneralErr = 21 => "GENERAL_ERR",
    }
}

/// Memory-region and QP access flags (`enum ibv_access_flags`), a bit set.
pub mod access {
    pub const LOCAL_WRITE: u32 = 1;
    pub const REMOTE_WRITE: u32 = 2;
    pub const REMOTE_READ: u32 = 4;
    pub const REMOTE_ATOMIC: u32 = 8;
    /// Every flag the device knows; others are refused.
    pub const ALL: u32 = LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ | REMOTE_ATOMIC;
}

/// Send flags (`enum ibv_send_flags`, the device's own bit positions): the `flags` byte of a
/// send WQE.
pub mod send_flags {
    /// Write a completion when the request completes successfully (errors always complete).
    pub const SIGNALED: u8 = 1;
    /// Set the solicited-event bit in the last packet.
    pub const SOLICITED: u8 = 2;
    /// The payload is inside the WQE (`inline_len` bytes at the inline area), not in an SGE.
    pub const INLINE: u8 = 4;
    /// Wait until every earlier RDMA READ and atomic has completed before starting.
    pub const FENCE: u8 = 8;
}

/// Completion flags (`enum ibv_wc_flags`).
pub mod wc_flags {
    pub const WITH_IMM: u8 = 2;
    pub const WITH_INV: u8 = 8;
}

/// Path MTU (`enum ibv_mtu`): 1 = 256 ... 5 = 4096.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mtu {
    Mtu256 = 1,
    Mtu512 = 2,
    Mtu1024 = 3,
    Mtu2048 = 4,
    Mtu4096 = 5,
}

impl Mtu {
    pub const ALL: [Mtu; 5] = [
        Mtu::Mtu256,
        Mtu::Mtu512,
        Mtu::Mtu1024,
        Mtu::Mtu2048,
        Mtu::Mtu4096,
    ];
    /// The payload bytes one packet carries.
    pub fn bytes(self) -> u32 {
        128 << (self as u32)
    }
    /// Decodes the ibverbs value; `None` for anything but 1..=5.
    pub fn from_code(code: u32) -> Option<Mtu> {
        Mtu::ALL.get((code as usize).wrapping_sub(1)).copied()
    }
    /// The Mtu whose payload is exactly `bytes`.
    pub fn from_bytes(bytes: u32) -> Option<Mtu> {
        Mtu::ALL.into_iter().find(|m| m.bytes() == bytes)
    }
}

impl fmt::Display for Mtu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.bytes())
    }
}

/// The ACK timeout of a QP attribute `timeout` (5 bits): 4.096 us * 2^timeout, which is
/// 1024 << timeout cycles of the 250 MHz core clock. 0 means "wait forever" in IB; the
/// device refuses 0 so that no QP can wedge.
pub fn ack_timeout_cycles(timeout: u8) -> u64 {
    1024u64 << timeout.min(31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbering_matches_ibverbs() {
        assert_eq!(u8::from(WcStatus::RetryExcErr), 12);
        assert_eq!(u8::from(WcStatus::RemAccessErr), 10);
        assert_eq!(WcStatus::from(13), WcStatus::RnrRetryExcErr);
        assert_eq!(WcStatus::from(200), WcStatus::Unknown(200));
        assert_eq!(u8::from(WrOpcode::SendWithInv), 9);
        assert_eq!(u8::from(WcOpcode::RecvRdmaWithImm), 129);
        assert_eq!(QpState::from(6), QpState::Err);
        assert_eq!(WcStatus::WrFlushErr.to_string(), "WR_FLUSH_ERR");
    }

    #[test]
    fn mtu_codes() {
        assert_eq!(Mtu::from_code(1).unwrap().bytes(), 256);
        assert_eq!(Mtu::from_code(5).unwrap().bytes(), 4096);
        assert_eq!(Mtu::from_code(0), None);
        assert_eq!(Mtu::from_code(6), None);
        assert_eq!(Mtu::from_bytes(1024), Some(Mtu::Mtu1024));
    }

    #[test]
    fn timeout_scale() {
        // 4.096 us at 250 MHz is 1024 cycles.
        assert_eq!(ack_timeout_cycles(0), 1024);
        assert_eq!(ack_timeout_cycles(14), 1024 << 14);
    }
}
