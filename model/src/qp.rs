//! The QP context: attributes, the state machine, and the requester's and responder's
//! per-QP state.

use crate::counters::Counters;
use rocenic_proto::abi::cmd::{qp_attr, CreateQpArgs, ModifyQpArgs};
use rocenic_proto::abi::verbs::{access, QpState, WcStatus};
use rocenic_proto::abi::wqe::{RecvWqe, SendWqe};
use std::collections::VecDeque;

/// Connection attributes set by MODIFY_QP.
#[derive(Debug, Clone, Copy, Default)]
pub struct QpAttrs {
    pub pmtu: u32,
    pub dest_qpn: u32,
    pub dest_mac: [u8; 6],
    pub dest_ip: [u8; 4],
    pub udp_sport: u16,
    pub access: u32,
    pub timeout: u8,
    pub retry_cnt: u8,
    pub rnr_retry: u8,
    pub min_rnr_timer: u8,
    pub max_rd_atomic: u8,
    pub max_dest_rd_atomic: u8,
}

/// What a send WQE turned into on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    Send,
    Write,
    Read,
    Atomic,
}

/// A send WQE the requester has fetched and not yet retired.
#[derive(Debug, Clone)]
pub struct SendOp {
    /// Free-running SQ index.
    pub index: u32,
    pub wqe: SendWqe,
    pub kind: OpKind,
    /// Message length in bytes.
    pub len: u32,
    /// IOVA of the local buffer (payload source, or READ/atomic result destination).
    pub local_iova: u64,
    pub first_psn: u32,
    /// PSNs the operation uses (request packets, or response packets for a READ).
    pub npsn: u32,
    pub pmtu: u32,
    /// Every packet acknowledged / every response received.
    pub done: bool,
    /// READ: response packets received; atomics: 1 once answered.
    pub resp_pkts: u32,
    /// An error found locally or reported by the responder; completes the op with it.
    pub error: Option<(WcStatus, u8)>,
}

impl SendOp {
    pub fn last_psn(&self) -> u32 {
        self.first_psn.wrapping_add(self.npsn.max(1) - 1) & 0xff_ffff
    }
    pub fn is_read_like(&self) -> bool {
        matches!(self.kind, OpKind::Read | OpKind::Atomic)
    }
}

/// Requester state of one QP.
#[derive(Debug, Clone, Default)]
pub struct Requester {
    /// Producer index the host last wrote to the SQ doorbell.
    pub sq_pi: u32,
    /// Next SQ index to fetch.
    pub sq_fetch: u32,
    /// Next PSN for a new operation.
    pub next_psn: u32,
    /// Fetched, not yet retired operations in SQ order.
    pub ops: VecDeque<SendOp>,
    /// Transmit cursor: position in `ops` and the packet (PSN offset) within it.
    pub cur_op: usize,
    pub cur_pkt: u32,
    /// Oldest PSN not yet acknowledged.
    pub una_psn: u32,
    /// One past the highest PSN that has left the TX port (below it is a retransmission).
    pub sent_end: u32,
    /// Local ACK timer deadline, armed while packets are unacknowledged.
    pub ack_deadline: Option<u64>,
    /// Transmission paused until this cycle after an RNR NAK.
    pub rnr_until: Option<u64>,
    pub retry_left: u8,
    pub rnr_left: u8,
    /// PSN we last rewound to without progress since (avoid rewinding twice for one loss).
    pub rewound_to: Option<u32>,
    /// A local error stopped fetching; flush once it retires.
    pub stopped: bool,
}

/// A remembered READ or atomic request, for duplicates.
#[derive(Debug, Clone, Copy)]
pub struct ReplayEntry {
    pub psn: u32,
    /// Atomic: the original value returned. READ entries are re-executed, not cached.
    pub atomic_orig: u64,
}

/// Responder state of one QP.
#[derive(Debug, Clone, Default)]
pub struct Responder {
    /// Producer index the host last wrote to the RQ doorbell.
    pub rq_pi: u32,
    /// Next RQ index to consume.
    pub rq_ci: u32,
    /// Expected PSN.
    pub epsn: u32,
    /// Message sequence number (count of completed request messages, 24 bits).
    pub msn: u32,
    /// A sequence-error NAK was sent and no in-order packet arrived since.
    pub nak_sent: bool,
    /// The message in progress, between a FIRST and its LAST packet.
    pub in_progress: Option<InProgress>,
    /// Atomics answered recently (by PSN), so a duplicate is never executed twice.
    pub replay: VecDeque<ReplayEntry>,
}

/// A multi-packet SEND or WRITE between its FIRST and LAST packets.
#[derive(Debug, Clone, Copy)]
pub enum InProgress {
    Send {
        rqe: RecvWqe,
        rq_index: u32,
        offset: u32,
    },
    Write {
        va: u64,
        rkey: u32,
        total: u32,
        offset: u32,
    },
}

/// One QP context.
#[derive(Debug, Clone)]
pub struct Qp {
    pub qpn: u32,
    pub pdn: u32,
    pub send_cqn: u32,
    pub recv_cqn: u32,
    pub sq_iova: u64,
    pub sq_log: u32,
    pub rq_iova: u64,
    pub rq_log: u32,
    pub state: QpState,
    pub attrs: QpAttrs,
    pub req: Requester,
    pub resp: Responder,
    pub counters: Counters,
}

impl Qp {
    pub fn new(a: &CreateQpArgs) -> Qp {
        Qp {
            qpn: a.qpn,
            pdn: a.pdn,
            send_cqn: a.send_cqn,
            recv_cqn: a.recv_cqn,
            sq_iova: a.sq_iova,
            sq_log: a.sq_log_size,
            rq_iova: a.rq_iova,
            rq_log: a.rq_log_size,
            state: QpState::Reset,
            attrs: QpAttrs::default(),
            req: Requester::default(),
            resp: Responder::default(),
            counters: Counters::default(),
        }
    }

    /// Whether the responder accepts requests.
    pub fn can_receive(&self) -> bool {
        matches!(self.state, QpState::Rtr | QpState::Rts | QpState::Sqd)
    }

    /// Whether the requester sends and accepts responses.
    pub fn can_send(&self) -> bool {
        matches!(self.state, QpState::Rts | QpState::Sqd)
    }
}

/// Why a MODIFY_QP was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModifyError {
    BadState,
    BadParam,
}

/// Validates a MODIFY_QP against the QP's current state and returns the new state.
/// Transitions as ibverbs allows for RC: RESET->INIT->RTR->RTS<->SQD, INIT->INIT,
/// RTS->RTS, any->RESET, any->ERR; each with its required attributes.
pub fn check_modify(cur: QpState, m: &ModifyQpArgs) -> Result<QpState, ModifyError> {
    if m.mask & !qp_attr::ALL != 0 {
        return Err(ModifyError::BadParam);
    }
    let new = if m.mask & qp_attr::STATE != 0 {
        QpState::from(m.state)
    } else {
        cur
    };
    let required = match (cur, new) {
        (_, QpState::Reset) | (_, QpState::Err) => 0,
        (QpState::Reset, QpState::Init) => qp_attr::REQ_INIT,
        (QpState::Init, QpState::Init) => 0,
        (QpState::Init, QpState::Rtr) => qp_attr::REQ_RTR,
        (QpState::Rtr, QpState::Rts) => qp_attr::REQ_RTS,
        (QpState::Rts, QpState::Rts) | (QpState::Rts, QpState::Sqd) => 0,
        (QpState::Sqd, QpState::Rts) | (QpState::Sqd, QpState::Sqd) => 0,
        _ => return Err(ModifyError::BadState),
    };
    if m.mask & required != required {
        return Err(ModifyError::BadParam);
    }
    if m.mask & qp_attr::PATH_MTU != 0 && m.mtu().is_none() {
        return Err(ModifyError::BadParam);
    }
    if m.mask & qp_attr::ACCESS_FLAGS != 0 && m.access & !access::ALL != 0 {
        return Err(ModifyError::BadParam);
    }
    // A zero timeout means "never time out" in IB; refused so that no QP can wedge.
    if m.mask & qp_attr::TIMEOUT != 0 && m.timeout == 0 {
        return Err(ModifyError::BadParam);
    }
    if m.mask & qp_attr::DEST_QPN != 0 && m.dest_qpn > 0xff_ffff {
        return Err(ModifyError::BadParam);
    }
    Ok(new)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(mask: u32, state: QpState) -> ModifyQpArgs {
        ModifyQpArgs {
            mask,
            state: state.into(),
            path_mtu: 3,
            timeout: 10,
            ..ModifyQpArgs::default()
        }
    }

    #[test]
    fn transitions() {
        use QpState::{Init, Reset, Rtr, Rts, Sqd};
        let error = QpState::Err;
        assert_eq!(check_modify(Reset, &m(qp_attr::STATE, Init)), Ok(Init));
        assert_eq!(
            check_modify(Reset, &m(qp_attr::STATE, Rts)),
            Err(ModifyError::BadState)
        );
        assert_eq!(
            check_modify(Init, &m(qp_attr::STATE, Rtr)),
            Err(ModifyError::BadParam)
        );
        assert_eq!(check_modify(Init, &m(qp_attr::REQ_RTR, Rtr)), Ok(Rtr));
        assert_eq!(check_modify(Rtr, &m(qp_attr::REQ_RTS, Rts)), Ok(Rts));
        assert_eq!(check_modify(Rts, &m(qp_attr::STATE, Sqd)), Ok(Sqd));
        assert_eq!(check_modify(Sqd, &m(qp_attr::STATE, Rts)), Ok(Rts));
        assert_eq!(check_modify(Rts, &m(qp_attr::STATE, error)), Ok(error));
        assert_eq!(check_modify(error, &m(qp_attr::STATE, Reset)), Ok(Reset));
        assert_eq!(
            check_modify(error, &m(qp_attr::STATE, Rts)),
            Err(ModifyError::BadState)
        );
        let mut z = m(qp_attr::REQ_RTS, Rts);
        z.timeout = 0;
        assert_eq!(check_modify(Rtr, &z), Err(ModifyError::BadParam));
        assert_eq!(
            check_modify(Rts, &m(1 << 30, Rts)),
            Err(ModifyError::BadParam)
        );
    }
}
