//! The requester: SQ fetch, segmentation at the PMTU, and the reliability rules —
//! ACK/NAK handling, the local ACK timer, RNR waits and go-back-N retransmission, which
//! re-reads payload from host memory (nothing is buffered for retransmission).
//!
//! AckReq rule (shared with the RTL): the requester asks for an ACK on the last packet of
//! every message, on every READ and atomic request, and on every packet whose PSN has its
//! low four bits all ones — so a long message is acknowledged at least every 16 packets.

use crate::nic::{Nic, TxFrame};
use crate::packet::{self, psn_add, psn_diff, Hdr, Parsed};
use crate::qp::{OpKind, Qp, SendOp};
use rocenic_proto::abi::cqe::Cqe;
use rocenic_proto::abi::regs::Counter;
use rocenic_proto::abi::verbs::{
    access, ack_timeout_cycles, send_flags, QpState, WcOpcode, WcStatus, WrOpcode,
};
use rocenic_proto::abi::wqe::{RecvWqe, SendWqe, MAX_INLINE};
use rocenic_proto::abi::DESC_SIZE;
use rocenic_proto::device::DmaPort;
use rocenic_proto::wire::{rnr_timer_ns, NakCode, Opcode, Syndrome};

/// Largest message (IB allows 2^31 bytes).
const MAX_MSG: u32 = 1 << 31;
/// Nanoseconds per core-clock cycle at 250 MHz.
const NS_PER_CYCLE: u64 = 4;

/// The wire opcode of packet `pkt` of `npkt` of a SEND or WRITE.
fn segment_opcode(op: WrOpcode, pkt: u32, npkt: u32) -> Opcode {
    let first = pkt == 0;
    let last = pkt + 1 == npkt;
    use Opcode::*;
    match (op, first, last) {
        (WrOpcode::Send, true, true) => SendOnly,
        (WrOpcode::SendWithImm, true, true) => SendOnlyWithImmediate,
        (WrOpcode::SendWithInv, true, true) => SendOnlyWithInvalidate,
        (WrOpcode::Send | WrOpcode::SendWithImm | WrOpcode::SendWithInv, true, false) => SendFirst,
        (WrOpcode::Send | WrOpcode::SendWithImm | WrOpcode::SendWithInv, false, false) => {
            SendMiddle
        }
        (WrOpcode::Send, false, true) => SendLast,
        (WrOpcode::SendWithImm, false, true) => SendLastWithImmediate,
        (WrOpcode::SendWithInv, false, true) => SendLastWithInvalidate,
        (WrOpcode::RdmaWrite, true, true) => RdmaWriteOnly,
        (WrOpcode::RdmaWriteWithImm, true, true) => RdmaWriteOnlyWithImmediate,
        (WrOpcode::RdmaWriteWithImm, false, true) => RdmaWriteLastWithImmediate,
        (_, true, false) => RdmaWriteFirst,
        (_, false, false) => RdmaWriteMiddle,
        (_, false, true) => RdmaWriteLast,
        // Only SEND and WRITE opcodes are segmented.
        (_, true, true) => RdmaWriteOnly,
    }
}

/// Packets a message of `len` bytes takes at `pmtu` (a zero-length message takes one).
pub fn packets(len: u32, pmtu: u32) -> u32 {
    len.div_ceil(pmtu).max(1)
}

/// One request packet of a send WQE: its transport headers and the part of the message it
/// carries. What [`request_packet`] decides is all of the requester's segmentation rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestPacket {
    pub hdr: Hdr,
    /// Payload: byte offset into the message and length (0 for READ and atomic requests).
    pub payload_off: u32,
    pub payload_len: u32,
    /// The last packet of the message (a READ or atomic request is one packet).
    pub last_of_message: bool,
}

/// Packet `pkt` of the request a validated send WQE (known opcode) of `len` bytes sends at
/// `pmtu`, its first PSN `first_psn`, to QP `dest_qp`: SEND/WRITE segments (RETH on a
/// WRITE's first packet, ImmDt/IETH and SE on the last), a READ request for the responses
/// from packet `pkt` on (go-back-N reissues a READ from its first missing response), an
/// atomic request; AckReq on the last packet of a message and on every PSN whose low four
/// bits are all ones. The model's requester builds every packet with it; the RTL's
/// `Segmenter` is held to it.
pub fn request_packet(
    w: &SendWqe,
    len: u32,
    first_psn: u32,
    pmtu: u32,
    pkt: u32,
    dest_qp: u32,
) -> RequestPacket {
    let psn = psn_add(first_psn, pkt);
    let mut hdr = Hdr::new(Opcode::SendOnly, dest_qp, psn);
    let (mut payload_off, mut payload_len) = (0, 0);
    let last_of_message;
    match w.opcode {
        WrOpcode::Send
        | WrOpcode::SendWithImm
        | WrOpcode::SendWithInv
        | WrOpcode::RdmaWrite
        | WrOpcode::RdmaWriteWithImm => {
            let npkt = packets(len, pmtu);
            let off = pkt * pmtu;
            payload_off = off;
            payload_len = pmtu.min(len - off);
            hdr.opcode = segment_opcode(w.opcode, pkt, npkt);
            last_of_message = pkt + 1 == npkt;
            let write = matches!(w.opcode, WrOpcode::RdmaWrite | WrOpcode::RdmaWriteWithImm);
            if pkt == 0 && write {
                hdr.reth = Some((w.remote_addr, w.rkey, len));
            }
            if last_of_message {
                match w.opcode {
                    WrOpcode::SendWithImm | WrOpcode::RdmaWriteWithImm => {
                        hdr.imm = Some(w.imm_or_inv)
                    }
                    WrOpcode::SendWithInv => hdr.ieth = Some(w.imm_or_inv),
                    _ => {}
                }
                hdr.solicited = w.flags & send_flags::SOLICITED != 0
                    && matches!(
                        w.opcode,
                        WrOpcode::Send
                            | WrOpcode::SendWithImm
                            | WrOpcode::SendWithInv
                            | WrOpcode::RdmaWriteWithImm
                    );
            }
        }
        WrOpcode::RdmaRead => {
            let off = pkt * pmtu;
            hdr.opcode = Opcode::RdmaReadRequest;
            hdr.reth = Some((w.remote_addr + off as u64, w.rkey, len - off));
            last_of_message = true;
        }
        WrOpcode::AtomicCmpAndSwp | WrOpcode::AtomicFetchAndAdd => {
            hdr.opcode = if w.opcode == WrOpcode::AtomicCmpAndSwp {
                Opcode::CompareSwap
            } else {
                Opcode::FetchAdd
            };
            // AtomicETH carries (swap or add, compare); the WQE keeps compare/add and swap.
            hdr.atomic = Some(if w.opcode == WrOpcode::AtomicCmpAndSwp {
                (w.remote_addr, w.rkey, w.swap, w.compare_add)
            } else {
                (w.remote_addr, w.rkey, w.compare_add, 0)
            });
            last_of_message = true;
        }
        WrOpcode::Unknown(op) => panic!("request_packet: WQE opcode {op} was not validated"),
    }
    hdr.ack_req = last_of_message || psn & 0xf == 0xf;
    RequestPacket {
        hdr,
        payload_off,
        payload_len,
        last_of_message,
    }
}

impl Nic {
    /// Queues a completion on `cqn`; it is written when the CQ has room.
    pub(crate) fn complete(&mut self, cqn: u32, cqe: Cqe) {
        if let Some(cq) = self
            .tables
            .cqs
            .get_mut(cqn as usize)
            .and_then(|c| c.as_mut())
        {
            cq.held.push_back(cqe);
            self.cq_dirty.insert(cqn);
        }
    }

    fn send_cqe(qp: &Qp, op: &SendOp, status: WcStatus, vendor_err: u8) -> Cqe {
        Cqe {
            wr_id: op.wqe.wr_id,
            byte_len: op.len,
            imm_or_inv: 0,
            qp_num: qp.qpn,
            src_qp: qp.attrs.dest_qpn,
            wqe_index: op.index,
            opcode: op.wqe.opcode.wc_opcode(),
            status,
            wc_flags: 0,
            vendor_err,
            phase: 0,
        }
    }

    /// Removes the QP's frames that have not left the TX port (they will be rebuilt).
    pub(crate) fn purge_qp_frames(&mut self, qpn: u32) {
        self.pipeline.retain(|f| f.qpn != qpn);
    }

    /// Called when a request packet leaves the TX port.
    pub(crate) fn note_request_sent(&mut self, qpn: u32, psn: u32) {
        let now = self.now;
        let Some(qp) = self.qp_mut(qpn) else { return };
        let retransmit = psn_diff(psn, qp.req.sent_end) < 0;
        if !retransmit {
            qp.req.sent_end = psn_add(psn, 1);
        }
        if qp.req.ack_deadline.is_none() && qp.req.rnr_until.is_none() {
            qp.req.ack_deadline = Some(now + ack_timeout_cycles(qp.attrs.timeout));
        }
        self.timed.insert(qpn);
        if retransmit {
            self.count(Some(qpn), Counter::Retransmits, 1);
        }
    }

    /// One step of the QP's requester: retire, build one packet, or fetch one WQE.
    /// Returns whether anything happened.
    pub(crate) fn requester_step(&mut self, qpn: u32, dma: &mut dyn DmaPort) -> bool {
        let Some(qp) = self.qp_mut(qpn) else {
            self.active.remove(&qpn);
            return false;
        };
        if qp.state == QpState::Err {
            let flushed = self.flush_posted(qpn, dma);
            if !flushed {
                self.active.remove(&qpn);
            }
            return flushed;
        }
        if !qp.can_send() {
            self.active.remove(&qpn);
            return false;
        }
        if self.retire(qpn, dma) {
            return true;
        }
        let Some(qp) = self.qp_mut(qpn) else {
            return false;
        };
        if qp.req.rnr_until.is_some() {
            return false;
        }
        if qp.req.cur_op < qp.req.ops.len() {
            return self.build_packet(qpn, dma);
        }
        self.fetch_wqe(qpn, dma)
    }

    /// Completes finished operations at the head of the SQ, in order.
    fn retire(&mut self, qpn: u32, dma: &mut dyn DmaPort) -> bool {
        let mut any = false;
        loop {
            let Some(qp) = self.qp_mut(qpn) else {
                return any;
            };
            if !qp.req.ops.front().is_some_and(|o| o.done) {
                return any;
            }
            let op = qp.req.ops.pop_front().expect("checked");
            // If the transmit cursor was inside the retired op (a rewind into a message
            // that an ACK then covered), it moves to the start of the next one.
            if qp.req.cur_op == 0 {
                qp.req.cur_pkt = 0;
            }
            qp.req.cur_op = qp.req.cur_op.saturating_sub(1);
            any = true;
            let cqn = qp.send_cqn;
            if let Some((status, vendor)) = op.error {
                let cqe = Self::send_cqe(qp, &op, status, vendor);
                self.complete(cqn, cqe);
                if let Some(qp) = self.qp_mut(qpn) {
                    qp.state = QpState::Err;
                }
                self.enter_error(qpn, dma);
                return true;
            }
            if op.wqe.flags & send_flags::SIGNALED != 0 {
                let cqe = Self::send_cqe(qp, &op, WcStatus::Success, 0);
                self.complete(cqn, cqe);
            }
            let qp = self.qp_mut(qpn).expect("exists");
            if qp.req.ops.is_empty() {
                qp.req.ack_deadline = None;
            }
        }
    }

    /// Reads the next WQE and turns it into an operation (or an error to complete).
    fn fetch_wqe(&mut self, qpn: u32, dma: &mut dyn DmaPort) -> bool {
        let now = self.now;
        let max_rd = self.cfg.max_rd_atomic;
        let Some(qp) = self.qp_mut(qpn) else {
            return false;
        };
        if qp.state == QpState::Sqd || qp.req.stopped || qp.req.sq_fetch == qp.req.sq_pi {
            if qp.req.ops.is_empty() {
                self.active.remove(&qpn);
            }
            return false;
        }
        let index = qp.req.sq_fetch;
        let slot = (index & ((1 << qp.sq_log) - 1)) as u64;
        let mut raw = [0u8; DESC_SIZE];
        if dma
            .dma_read(now, qp.sq_iova + slot * DESC_SIZE as u64, &mut raw)
            .is_err()
        {
            // The host unmapped its own SQ: nothing can be trusted; fail the QP.
            self.count(Some(qpn), Counter::DmaFaults, 1);
            let qp = self.qp_mut(qpn).expect("exists");
            qp.state = QpState::Err;
            self.enter_error(qpn, dma);
            return true;
        }
        let wqe = SendWqe::from_bytes(&raw);
        let qp = self.qp_mut(qpn).expect("exists");
        let read_like_outstanding = qp.req.ops.iter().filter(|o| o.is_read_like()).count();
        let limit = qp.attrs.max_rd_atomic.min(max_rd).max(1) as usize;
        if (wqe.opcode == WrOpcode::RdmaRead || wqe.opcode.is_atomic())
            && read_like_outstanding >= limit
        {
            return false;
        }
        if wqe.flags & send_flags::FENCE != 0 && read_like_outstanding > 0 {
            return false;
        }
        qp.req.sq_fetch = index.wrapping_add(1);
        let pmtu = qp.attrs.pmtu;
        let mut op = SendOp {
            index,
            wqe,
            kind: OpKind::Send,
            len: wqe.length(),
            local_iova: 0,
            first_psn: qp.req.next_psn,
            npsn: 0,
            pmtu,
            done: false,
            resp_pkts: 0,
            error: None,
        };
        let pdn = qp.pdn;
        match self.validate_wqe(&mut op, pdn) {
            Ok(()) => {
                let qp = self.qp_mut(qpn).expect("exists");
                op.npsn = match op.kind {
                    OpKind::Atomic => 1,
                    _ => packets(op.len, pmtu),
                };
                qp.req.next_psn = psn_add(qp.req.next_psn, op.npsn);
                qp.req.ops.push_back(op);
            }
            Err(status) => {
                let qp = self.qp_mut(qpn).expect("exists");
                op.error = Some((status, 0));
                op.done = true;
                qp.req.stopped = true;
                qp.req.ops.push_back(op);
            }
        }
        true
    }

    /// Checks a WQE as the hardware does at fetch and fills in its kind and local IOVA.
    fn validate_wqe(&self, op: &mut SendOp, pdn: u32) -> Result<(), WcStatus> {
        let w = op.wqe;
        op.kind = match w.opcode {
            WrOpcode::Send | WrOpcode::SendWithImm | WrOpcode::SendWithInv => OpKind::Send,
            WrOpcode::RdmaWrite | WrOpcode::RdmaWriteWithImm => OpKind::Write,
            WrOpcode::RdmaRead => OpKind::Read,
            WrOpcode::AtomicCmpAndSwp | WrOpcode::AtomicFetchAndAdd => OpKind::Atomic,
            WrOpcode::Unknown(_) => return Err(WcStatus::LocQpOpErr),
        };
        if w.is_inline() {
            if !matches!(op.kind, OpKind::Send | OpKind::Write)
                || w.inline_len as usize > MAX_INLINE
            {
                return Err(WcStatus::LocQpOpErr);
            }
            return Ok(());
        }
        if w.num_sge > 1 {
            return Err(WcStatus::LocQpOpErr);
        }
        if op.kind == OpKind::Atomic && (w.num_sge != 1 || w.sge.length != 8) {
            return Err(WcStatus::LocLenErr);
        }
        if op.len > MAX_MSG {
            return Err(WcStatus::LocLenErr);
        }
        if w.num_sge == 1 {
            // Results of READs and atomics are written locally: they need LOCAL_WRITE.
            let need = if matches!(op.kind, OpKind::Read | OpKind::Atomic) {
                access::LOCAL_WRITE
            } else {
                0
            };
            op.local_iova = self
                .tables
                .translate(w.sge.lkey, pdn, w.sge.addr, w.sge.length as u64, need)
                .map_err(|_| WcStatus::LocProtErr)?;
        }
        Ok(())
    }

    /// Builds the packet at the QP's transmit cursor into the TX pipeline.
    fn build_packet(&mut self, qpn: u32, dma: &mut dyn DmaPort) -> bool {
        let now = self.now;
        let window = self.cfg.max_outstanding_psns as i32;
        let (src_mac, src_ip) = (self.mac, self.ip);
        let qp = self.qp_mut(qpn).expect("caller checked");
        let i = qp.req.cur_op;
        let op = qp.req.ops[i].clone();
        if op.done && op.error.is_some() {
            // A locally failed WQE sends nothing; it completes when it reaches the head.
            qp.req.cur_op += 1;
            return true;
        }
        // A READ restarts at the first response not yet received.
        let pkt = match op.kind {
            OpKind::Read => op.resp_pkts,
            _ => qp.req.cur_pkt,
        };
        let psn = psn_add(op.first_psn, pkt);
        if psn_diff(psn, qp.req.una_psn) >= window {
            return false;
        }
        let addr = packet::Addr {
            src_mac,
            dst_mac: qp.attrs.dest_mac,
            src_ip,
            dst_ip: qp.attrs.dest_ip,
            udp_sport: qp.attrs.udp_sport,
        };
        let rp = request_packet(
            &op.wqe,
            op.len,
            op.first_psn,
            op.pmtu,
            pkt,
            qp.attrs.dest_qpn,
        );
        let hdr = rp.hdr;
        let last_of_message = rp.last_of_message;
        let mut payload = Vec::new();
        let mut ready_at = now + 1;
        let w = op.wqe;
        if matches!(op.kind, OpKind::Send | OpKind::Write) {
            let (off, len) = (rp.payload_off, rp.payload_len);
            if w.is_inline() {
                payload.extend_from_slice(&w.inline[off as usize..(off + len) as usize]);
            } else if len > 0 {
                payload.resize(len as usize, 0);
                match dma.dma_read(now, op.local_iova + off as u64, &mut payload) {
                    Ok(t) => ready_at = t.max(ready_at),
                    Err(_) => return self.local_dma_failure(qpn, i),
                }
            }
        }
        let frame = packet::build(&addr, &hdr, &payload);
        let qp = self.qp_mut(qpn).expect("exists");
        if last_of_message || matches!(op.kind, OpKind::Read | OpKind::Atomic) {
            qp.req.cur_op += 1;
            qp.req.cur_pkt = 0;
        } else {
            qp.req.cur_pkt += 1;
        }
        self.pipeline.push_back(TxFrame {
            ready_at,
            qpn,
            psn: Some(psn),
            frame,
        });
        true
    }

    /// The payload of op `i` could not be read: the host broke its own mapping. The op
    /// fails with a local protection error once earlier ops are done.
    fn local_dma_failure(&mut self, qpn: u32, i: usize) -> bool {
        self.count(Some(qpn), Counter::DmaFaults, 1);
        let qp = self.qp_mut(qpn).expect("exists");
        let op = &mut qp.req.ops[i];
        op.error = Some((WcStatus::LocProtErr, 0));
        op.done = true;
        qp.req.stopped = true;
        qp.req.cur_op = qp.req.ops.len();
        self.purge_qp_frames(qpn);
        true
    }

    /// Restarts transmission at `psn` (go-back-N). Frames not yet sent are dropped and
    /// rebuilt; the payload is read again from host memory.
    fn rewind(&mut self, qpn: u32, psn: u32) {
        let now = self.now;
        self.purge_qp_frames(qpn);
        let Some(qp) = self.qp_mut(qpn) else { return };
        Self::rewind_cursor(qp, psn);
        qp.req.rewound_to = Some(psn);
        qp.req.ack_deadline = Some(now + ack_timeout_cycles(qp.attrs.timeout));
        self.timed.insert(qpn);
        self.active.insert(qpn);
    }

    /// Moves the transmit cursor to `psn`: into the unfinished op holding it, else to the
    /// start of the first unfinished op.
    fn rewind_cursor(qp: &mut Qp, psn: u32) {
        let pos = qp.req.ops.iter().position(|o| {
            !o.done && psn_diff(psn, o.first_psn) >= 0 && psn_diff(psn, o.last_psn()) <= 0
        });
        match pos {
            Some(i) => {
                qp.req.cur_op = i;
                qp.req.cur_pkt = psn_diff(psn, qp.req.ops[i].first_psn) as u32;
            }
            None => {
                qp.req.cur_op = qp
                    .req
                    .ops
                    .iter()
                    .position(|o| !o.done)
                    .unwrap_or(qp.req.ops.len());
                qp.req.cur_pkt = 0;
            }
        }
    }

    /// Uses one transport retry; when none is left the oldest unfinished op fails with
    /// RETRY_EXC_ERR. Returns whether a retry was available.
    fn use_retry(&mut self, qpn: u32, status: WcStatus) -> bool {
        let qp = self.qp_mut(qpn).expect("exists");
        let left = if status == WcStatus::RnrRetryExcErr {
            &mut qp.req.rnr_left
        } else {
            &mut qp.req.retry_left
        };
        // rnr_retry 7 means "retry forever" in IB.
        if status == WcStatus::RnrRetryExcErr && qp.attrs.rnr_retry == 7 {
            return true;
        }
        if *left == 0 {
            if let Some(op) = qp.req.ops.iter_mut().find(|o| !o.done) {
                op.error = Some((status, 0));
                op.done = true;
            }
            qp.req.stopped = true;
            qp.req.cur_op = qp.req.ops.len();
            qp.req.ack_deadline = None;
            self.purge_qp_frames(qpn);
            self.active.insert(qpn);
            return false;
        }
        *left -= 1;
        true
    }

    /// Fires expired ACK and RNR timers.
    pub(crate) fn fire_timers(&mut self, dma: &mut dyn DmaPort) {
        let now = self.now;
        let timed: Vec<u32> = self.timed.iter().copied().collect();
        for qpn in timed {
            let Some(qp) = self.qp_mut(qpn) else {
                self.timed.remove(&qpn);
                continue;
            };
            if qp.req.rnr_until.is_some_and(|t| t <= now) {
                qp.req.rnr_until = None;
                qp.req.ack_deadline = Some(now + ack_timeout_cycles(qp.attrs.timeout));
                self.active.insert(qpn);
            }
            let qp = self.qp_mut(qpn).expect("exists");
            if qp.req.ack_deadline.is_some_and(|t| t <= now) {
                qp.req.ack_deadline = None;
                let outstanding = qp.req.ops.iter().any(|o| !o.done);
                if outstanding && qp.can_send() {
                    let una = qp.req.una_psn;
                    self.count(Some(qpn), Counter::AckTimeouts, 1);
                    if self.use_retry(qpn, WcStatus::RetryExcErr) {
                        self.rewind(qpn, una);
                    }
                    self.retire(qpn, dma);
                }
            }
            let qp = self.qp_mut(qpn).expect("exists");
            if qp.req.ack_deadline.is_none() && qp.req.rnr_until.is_none() {
                self.timed.remove(&qpn);
            }
        }
    }

    /// Handles a response (ACK, NAK, READ response, atomic ACK) for one of our requests:
    /// the decision is [`on_response`]'s, from the QP's requester state and outstanding
    /// operations; what is done here is applying it (and the DMA of a READ response's
    /// payload or an atomic's original value).
    pub(crate) fn requester_rx(&mut self, pkt: &Parsed<'_>, dma: &mut dyn DmaPort) {
        let qpn = pkt.hdr.dest_qp;
        let Some(qp) = self.qp_mut(qpn) else {
            self.count(None, Counter::UnknownQpDrops, 1);
            return;
        };
        // A response from an address other than the QP's peer is not for this QP: a
        // stranger's ACK must not complete work the peer never received.
        if !qp.can_send() || pkt.src_ip != qp.attrs.dest_ip {
            self.count(Some(qpn), Counter::UnknownQpDrops, 1);
            return;
        }
        let state = ReqState::of(qp);
        let ops: Vec<OpSummary> = qp.req.ops.iter().map(OpSummary::of).collect();
        let fields = RespFields {
            opcode: pkt.hdr.opcode,
            psn: pkt.hdr.psn,
            syndrome: pkt.hdr.aeth.map(|(s, _)| s),
            has_atomic_ack: pkt.hdr.atomic_ack.is_some(),
            payload_len: pkt.payload.len() as u32,
        };
        let d = on_response(&state, &ops, &fields);
        self.apply_response(qpn, &d, pkt, dma);
        self.retire(qpn, dma);
    }

    /// Applies a response decision to the QP.
    fn apply_response(
        &mut self,
        qpn: u32,
        d: &ReqDecision,
        pkt: &Parsed<'_>,
        dma: &mut dyn DmaPort,
    ) {
        let now = self.now;
        if let Some(c) = d.count {
            self.count(Some(qpn), c, 1);
        }
        let qp = self.qp_mut(qpn).expect("exists");
        for op in qp.req.ops.iter_mut().take(d.ack_upto) {
            op.done = true;
        }
        qp.req.una_psn = d.una_psn;
        qp.req.retry_left = d.retry_left;
        qp.req.rnr_left = d.rnr_left;
        qp.req.rewound_to = d.rewound_to;
        for f in d.fails.iter().flatten() {
            let op = &mut qp.req.ops[f.op];
            op.error = Some((f.status, f.syndrome));
            op.done = true;
            qp.req.stopped = true;
        }
        let timeout = ack_timeout_cycles(qp.attrs.timeout);
        match d.timer {
            AckTimer::Keep => {}
            AckTimer::Arm => qp.req.ack_deadline = Some(now + timeout),
            AckTimer::Clear => qp.req.ack_deadline = None,
        }
        if let Some(t) = d.rnr_wait {
            qp.req.rnr_until = Some(now + (rnr_timer_ns(t) / NS_PER_CYCLE).max(1));
        }
        match d.cursor {
            Cursor::Keep => {}
            Cursor::Rewind(psn) => {
                Self::rewind_cursor(qp, psn);
                self.purge_qp_frames(qpn);
            }
            Cursor::Stop => {
                qp.req.cur_op = qp.req.ops.len();
                self.purge_qp_frames(qpn);
            }
        }
        if d.timer == AckTimer::Arm || d.rnr_wait.is_some() {
            self.timed.insert(qpn);
        }
        if d.activate {
            self.active.insert(qpn);
        }
        let Some(dl) = d.deliver else { return };
        let qp = self.qp_mut(qpn).expect("exists");
        let iova = qp.req.ops[dl.op].local_iova + u64::from(dl.offset);
        if dl.atomic {
            let orig = pkt.hdr.atomic_ack.expect("decided on its presence");
            let ok = dma.dma_write(now, iova, &orig.to_le_bytes()).is_ok();
            let qp = self.qp_mut(qpn).expect("exists");
            let op = &mut qp.req.ops[dl.op];
            op.resp_pkts = 1;
            op.done = true;
            if !ok {
                op.error = Some((WcStatus::LocAccessErr, 0));
                qp.req.stopped = true;
                self.count(Some(qpn), Counter::DmaFaults, 1);
            }
        } else {
            if dl.len > 0 && dma.dma_write(now, iova, pkt.payload).is_err() {
                self.count(Some(qpn), Counter::DmaFaults, 1);
                let qp = self.qp_mut(qpn).expect("exists");
                let op = &mut qp.req.ops[dl.op];
                op.error = Some((WcStatus::LocAccessErr, 0));
                op.done = true;
                qp.req.stopped = true;
                return;
            }
            let qp = self.qp_mut(qpn).expect("exists");
            let op = &mut qp.req.ops[dl.op];
            op.resp_pkts += 1;
            op.done = op.resp_pkts == op.npsn;
        }
        self.progress(qpn, dl.una);
    }

    /// A response arrived in order and was delivered: the window moves to `una` and
    /// retries reset.
    fn progress(&mut self, qpn: u32, una: u32) {
        let now = self.now;
        let qp = self.qp_mut(qpn).expect("exists");
        qp.req.una_psn = una;
        qp.req.retry_left = qp.attrs.retry_cnt;
        qp.req.rnr_left = qp.attrs.rnr_retry;
        qp.req.rewound_to = None;
        qp.req.ack_deadline = Some(now + ack_timeout_cycles(qp.attrs.timeout));
        self.timed.insert(qpn);
        self.active.insert(qpn);
    }

    /// Moves the QP's outstanding and posted work to the CQs with WR_FLUSH_ERR, as ibverbs
    /// does when a QP enters the error state.
    pub(crate) fn enter_error(&mut self, qpn: u32, dma: &mut dyn DmaPort) {
        self.purge_qp_frames(qpn);
        self.timed.remove(&qpn);
        let Some(qp) = self.qp_mut(qpn) else { return };
        qp.req.ack_deadline = None;
        qp.req.rnr_until = None;
        let ops: Vec<SendOp> = qp.req.ops.drain(..).collect();
        qp.req.cur_op = 0;
        qp.req.cur_pkt = 0;
        let in_progress_recv = match qp.resp.in_progress.take() {
            Some(crate::qp::InProgress::Send { rqe, rq_index, .. }) => Some((rqe, rq_index)),
            _ => None,
        };
        let qp = self.qps[qpn as usize].as_ref().expect("exists");
        let cqes: Vec<Cqe> = ops
            .iter()
            .map(|op| Self::send_cqe(qp, op, WcStatus::WrFlushErr, 0))
            .collect();
        let (scq, rcq) = (qp.send_cqn, qp.recv_cqn);
        for c in cqes {
            self.complete(scq, c);
        }
        if let Some((rqe, idx)) = in_progress_recv {
            let c = self.recv_cqe(qpn, &rqe, idx, WcStatus::WrFlushErr);
            self.complete(rcq, c);
        }
        self.flush_posted(qpn, dma);
        self.active.insert(qpn);
    }

    /// In the error state, completes every posted and not yet consumed WQE with
    /// WR_FLUSH_ERR. Returns whether anything was flushed.
    pub(crate) fn flush_posted(&mut self, qpn: u32, dma: &mut dyn DmaPort) -> bool {
        let now = self.now;
        let qp = self.qps[qpn as usize].as_mut().expect("exists");
        let mut send = Vec::new();
        while qp.req.sq_fetch != qp.req.sq_pi {
            let index = qp.req.sq_fetch;
            qp.req.sq_fetch = index.wrapping_add(1);
            let slot = (index & ((1 << qp.sq_log) - 1)) as u64;
            let mut raw = [0u8; DESC_SIZE];
            // A WQE that cannot be read still completes, with wr_id 0.
            let _ = dma.dma_read(now, qp.sq_iova + slot * DESC_SIZE as u64, &mut raw);
            send.push((index, SendWqe::from_bytes(&raw)));
        }
        let mut recv = Vec::new();
        while qp.resp.rq_ci != qp.resp.rq_pi {
            let index = qp.resp.rq_ci;
            qp.resp.rq_ci = index.wrapping_add(1);
            let slot = (index & ((1 << qp.rq_log) - 1)) as u64;
            let mut raw = [0u8; DESC_SIZE];
            let _ = dma.dma_read(now, qp.rq_iova + slot * DESC_SIZE as u64, &mut raw);
            recv.push((index, RecvWqe::from_bytes(&raw)));
        }
        let (scq, rcq, dest) = (qp.send_cqn, qp.recv_cqn, qp.attrs.dest_qpn);
        let flushed = !send.is_empty() || !recv.is_empty();
        for (index, wqe) in send {
            let cqe = Cqe {
                wr_id: wqe.wr_id,
                byte_len: 0,
                imm_or_inv: 0,
                qp_num: qpn,
                src_qp: dest,
                wqe_index: index,
                opcode: wqe.opcode.wc_opcode(),
                status: WcStatus::WrFlushErr,
                wc_flags: 0,
                vendor_err: 0,
                phase: 0,
            };
            self.complete(scq, cqe);
        }
        for (index, rqe) in recv {
            let c = self.recv_cqe(qpn, &rqe, index, WcStatus::WrFlushErr);
            self.complete(rcq, c);
        }
        flushed
    }

    /// A receive completion for RQ entry `index`.
    pub(crate) fn recv_cqe(&self, qpn: u32, rqe: &RecvWqe, index: u32, status: WcStatus) -> Cqe {
        let qp = self.qps[qpn as usize].as_ref().expect("exists");
        Cqe {
            wr_id: rqe.wr_id,
            byte_len: 0,
            imm_or_inv: 0,
            qp_num: qpn,
            src_qp: qp.attrs.dest_qpn,
            wqe_index: index,
            opcode: WcOpcode::Recv,
            status,
            wc_flags: 0,
            vendor_err: 0,
            phase: 0,
        }
    }
}

// ---- The requester's decision on a response ----

/// An outstanding operation as [`on_response`] sees it (the RTL keeps these fields in its
/// per-QP op ring).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpSummary {
    pub kind: OpKind,
    pub first_psn: u32,
    /// PSNs the op uses (request packets; a READ's response packets).
    pub npsn: u32,
    /// READ: response packets received; atomic: 1 once answered.
    pub resp_pkts: u32,
    /// Message length and the PMTU it was segmented at (a READ's response lengths).
    pub len: u32,
    pub pmtu: u32,
    /// Acknowledged, answered or failed (waiting to retire in SQ order).
    pub done: bool,
}

impl OpSummary {
    /// The fields of a model operation.
    pub fn of(op: &SendOp) -> OpSummary {
        OpSummary {
            kind: op.kind,
            first_psn: op.first_psn,
            npsn: op.npsn,
            resp_pkts: op.resp_pkts,
            len: op.len,
            pmtu: op.pmtu,
            done: op.done,
        }
    }
    pub fn last_psn(&self) -> u32 {
        psn_add(self.first_psn, self.npsn.max(1) - 1)
    }
    pub fn is_read_like(&self) -> bool {
        matches!(self.kind, OpKind::Read | OpKind::Atomic)
    }
    /// The PSN a READ/atomic expects its next response at.
    pub fn waiting_psn(&self) -> u32 {
        psn_add(self.first_psn, self.resp_pkts)
    }
    fn holds(&self, psn: u32) -> bool {
        psn_diff(psn, self.first_psn) >= 0 && psn_diff(psn, self.last_psn()) <= 0
    }
}

/// The requester state of a QP [`on_response`] reads (the RTL's `qpr` context).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReqState {
    /// Oldest PSN not yet acknowledged; one past the highest PSN sent.
    pub una_psn: u32,
    pub sent_end: u32,
    /// Transport and RNR retries left.
    pub retry_left: u8,
    pub rnr_left: u8,
    /// The QP's `retry_cnt` and `rnr_retry` attributes: what progress reloads (`rnr_retry`
    /// 7 retries RNR NAKs forever).
    pub retry_cnt: u8,
    pub rnr_retry: u8,
    /// Rewound to this PSN without progress since (a second loss report of the same PSN
    /// does not rewind again).
    pub rewound_to: Option<u32>,
    /// An RNR wait is running.
    pub rnr_waiting: bool,
}

impl ReqState {
    fn of(qp: &Qp) -> ReqState {
        ReqState {
            una_psn: qp.req.una_psn,
            sent_end: qp.req.sent_end,
            retry_left: qp.req.retry_left,
            rnr_left: qp.req.rnr_left,
            retry_cnt: qp.attrs.retry_cnt,
            rnr_retry: qp.attrs.rnr_retry,
            rewound_to: qp.req.rewound_to,
            rnr_waiting: qp.req.rnr_until.is_some(),
        }
    }
}

/// The fields of a response packet [`on_response`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RespFields {
    pub opcode: Opcode,
    pub psn: u32,
    /// The AETH's syndrome byte, when the packet has an AETH.
    pub syndrome: Option<u8>,
    /// The packet has an AtomicAckETH.
    pub has_atomic_ack: bool,
    /// Payload bytes (without pad and ICRC).
    pub payload_len: u32,
}

/// Where the transmit cursor goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cursor {
    Keep,
    /// Go-back-N: restart at this PSN (into the unfinished op holding it, else at the
    /// first unfinished op); frames not yet sent are dropped.
    Rewind(u32),
    /// Stop sending (an op failed): past the last op; frames not yet sent are dropped.
    Stop,
}

/// What happens to the local ACK timer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckTimer {
    Keep,
    /// Re-armed to a full timeout from now.
    Arm,
    Clear,
}

/// An op that completes with an error (it becomes done; fetching stops).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpFail {
    /// Index into the op list.
    pub op: usize,
    pub status: WcStatus,
    /// The NAK's syndrome byte (the CQE's vendor_err), 0 otherwise.
    pub syndrome: u8,
}

/// An in-order READ response or atomic ACK: its data goes to the op's local buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deliver {
    /// Index into the op list.
    pub op: usize,
    /// Byte offset in the op's local buffer and length (the payload; 8 for an atomic's
    /// original value).
    pub offset: u32,
    pub len: u32,
    pub atomic: bool,
    /// Once written (always for an atomic, on a DMA success for a READ): the op counts the
    /// response (`resp_pkts` + 1, done at `npsn`; an atomic is done), the window moves to
    /// `una`, retries reload, `rewound_to` clears and the ACK timer re-arms. A failed
    /// write fails the op with LOC_ACCESS_ERR.
    pub una: u32,
}

/// The requester's decision on a response (see [`on_response`]). Fields are applied in
/// this order: counter, acknowledgements, window state, failures, timer, RNR wait,
/// cursor, then the delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReqDecision {
    /// The counter this response bumps (NaksReceived, RnrNaksReceived, Duplicates,
    /// MalformedDrops).
    pub count: Option<Counter>,
    /// The unfinished ops before this index are acknowledged (done, success): the
    /// position where the acknowledgement walk stopped (0 when there was none).
    pub ack_upto: usize,
    /// The window state after the response (before a delivery).
    pub una_psn: u32,
    pub retry_left: u8,
    pub rnr_left: u8,
    pub rewound_to: Option<u32>,
    /// Ops that fail, in order: a READ/atomic whose response an ACK showed lost when no
    /// retry is left (or the first unfinished op), then the op an error NAK names, the
    /// first unfinished op when RNR retries run out, or a READ with a malformed response.
    pub fails: [Option<OpFail>; 2],
    pub cursor: Cursor,
    pub timer: AckTimer,
    /// An RNR wait starts with this timer code.
    pub rnr_wait: Option<u8>,
    pub deliver: Option<Deliver>,
    /// The QP has requester work to look at.
    pub activate: bool,
}

/// The decision in the making: the op list's done flags and the state as the model's
/// steps change them.
struct RespWalk<'a> {
    ops: &'a [OpSummary],
    done: Vec<bool>,
    s: ReqState,
    d: ReqDecision,
}

impl RespWalk<'_> {
    fn fail(&mut self, op: usize, status: WcStatus, syndrome: u8) {
        self.done[op] = true;
        let f = Some(OpFail {
            op,
            status,
            syndrome,
        });
        if self.d.fails[0].is_none() {
            self.d.fails[0] = f;
        } else {
            self.d.fails[1] = f;
        }
    }

    fn first_unfinished(&self, read_like: bool) -> Option<usize> {
        (0..self.ops.len()).find(|&i| !self.done[i] && (!read_like || self.ops[i].is_read_like()))
    }

    /// Marks SEND/WRITE ops up to and including `psn` acknowledged; a READ/atomic the ACK
    /// passes lost its response: go back to it. The window moves to `psn + 1`, but never
    /// past a READ/atomic still waiting for its response.
    fn acknowledge(&mut self, psn: u32) {
        if psn_diff(psn, self.s.sent_end) >= 0 || psn_diff(psn, self.s.una_psn) < 0 {
            return;
        }
        let mut lost_response = None;
        let mut upto = self.ops.len();
        for (i, op) in self.ops.iter().enumerate() {
            if self.done[i] {
                continue;
            }
            if psn_diff(op.first_psn, psn) > 0 {
                upto = i;
                break;
            }
            let covered = psn_diff(op.last_psn(), psn) <= 0;
            if op.is_read_like() {
                if covered {
                    lost_response = Some(op.waiting_psn());
                }
                upto = i;
                break;
            }
            if !covered {
                upto = i;
                break;
            }
            self.done[i] = true;
        }
        self.d.ack_upto = upto;
        let mut new_una = psn_add(psn, 1);
        if let Some(i) = self.first_unfinished(true) {
            let waiting = self.ops[i].waiting_psn();
            if psn_diff(waiting, new_una) < 0 {
                new_una = waiting;
            }
        }
        if psn_diff(new_una, self.s.una_psn) > 0 {
            self.s.una_psn = new_una;
            self.s.retry_left = self.s.retry_cnt;
            self.s.rnr_left = self.s.rnr_retry;
            self.s.rewound_to = None;
            self.d.timer = AckTimer::Arm;
        }
        if let Some(p) = lost_response {
            self.go_back(p);
        }
        self.d.activate = true;
    }

    /// Go-back-N to `psn` unless already rewound there without progress since.
    fn go_back(&mut self, psn: u32) {
        if self.s.rewound_to == Some(psn) {
            return;
        }
        if self.use_retry(false) {
            self.rewind(psn);
        }
    }

    fn rewind(&mut self, psn: u32) {
        self.d.cursor = Cursor::Rewind(psn);
        self.s.rewound_to = Some(psn);
        self.d.timer = AckTimer::Arm;
        self.d.activate = true;
    }

    /// Uses one transport (or RNR) retry; when none is left the first unfinished op fails
    /// and sending stops. Returns whether a retry was available.
    fn use_retry(&mut self, rnr: bool) -> bool {
        if rnr && self.s.rnr_retry == 7 {
            return true;
        }
        let left = if rnr {
            &mut self.s.rnr_left
        } else {
            &mut self.s.retry_left
        };
        if *left == 0 {
            if let Some(i) = self.first_unfinished(false) {
                let status = if rnr {
                    WcStatus::RnrRetryExcErr
                } else {
                    WcStatus::RetryExcErr
                };
                self.fail(i, status, 0);
            }
            self.d.cursor = Cursor::Stop;
            self.d.timer = AckTimer::Clear;
            self.d.activate = true;
            return false;
        }
        *left -= 1;
        true
    }

    /// Whether a NAK's PSN is in the window (`una..sent_end`); it acknowledges what
    /// precedes it.
    fn nak_in_window(&mut self, psn: u32) -> bool {
        if psn_diff(psn, self.s.una_psn) < 0 || psn_diff(psn, self.s.sent_end) >= 0 {
            return false;
        }
        if psn_diff(psn, self.s.una_psn) > 0 {
            self.acknowledge(psn_add(psn, 0xff_ffff));
        }
        true
    }

    fn rnr_nak(&mut self, psn: u32, timer: u8) {
        self.d.count = Some(Counter::RnrNaksReceived);
        if !self.nak_in_window(psn) {
            return;
        }
        if self.use_retry(true) {
            // Restart at the NAKed PSN, or earlier at a READ/atomic whose response the
            // acknowledgement above showed to be lost.
            self.rewind(self.s.una_psn);
            self.d.rnr_wait = Some(timer);
            self.d.timer = AckTimer::Clear;
            self.s.rewound_to = None;
        }
    }

    fn nak(&mut self, psn: u32, code: NakCode, syndrome: u8) {
        self.d.count = Some(Counter::NaksReceived);
        if !self.nak_in_window(psn) {
            return;
        }
        let status = match code {
            NakCode::PsnSequenceError => {
                // While an RNR wait runs, the packets after the RNR-NAKed one are out of
                // sequence at the responder; its NAK says nothing new, and the RNR rewind
                // already covers it. It must not spend a transport retry. Otherwise go
                // back to the NAKed PSN, or earlier to a READ/atomic whose response the
                // acknowledgement above showed to be lost (the window stops there), using
                // one retry for both.
                if !self.s.rnr_waiting {
                    self.go_back(self.s.una_psn);
                }
                return;
            }
            NakCode::InvalidRequest | NakCode::InvalidRdRequest => WcStatus::RemInvReqErr,
            NakCode::RemoteAccessError => WcStatus::RemAccessErr,
            NakCode::RemoteOperationalError | NakCode::Unknown(_) => WcStatus::RemOpErr,
        };
        // A READ/atomic before the NAKed PSN still waits for its response: the responder
        // got past it, so the response was lost. Going back to it (the acknowledgement
        // above) comes first, as rxe's completer retries before it looks at the NAK; the
        // NAKed request is sent again behind it, and NAKed again. Failing the NAKed op
        // here, with the sending stopped and the timer cleared, would leave the READ or
        // atomic before it waiting forever, and the failure behind it never retired.
        // (When the go-back found no retry left, the READ/atomic failed and the NAK's op
        // fails too.)
        if self.d.fails[0].is_none()
            && self
                .first_unfinished(true)
                .is_some_and(|i| psn_diff(self.ops[i].waiting_psn(), psn) < 0)
        {
            return;
        }
        if let Some(i) = (0..self.ops.len()).find(|&i| !self.done[i] && self.ops[i].holds(psn)) {
            self.fail(i, status, syndrome);
            self.d.cursor = Cursor::Stop;
            self.d.timer = AckTimer::Clear;
        }
    }

    /// Checks a response's PSN against the one the oldest waiting READ/atomic expects:
    /// out of order (or of the wrong kind) goes back to it, a duplicate is dropped.
    /// Returns that op when the PSN is the expected one; everything before the op is then
    /// acknowledged.
    fn expect_response(&mut self, psn: u32, kind: OpKind) -> Option<usize> {
        let Some(i) = self.first_unfinished(true) else {
            self.d.count = Some(Counter::Duplicates);
            return None;
        };
        let expected = self.ops[i].waiting_psn();
        let d = psn_diff(psn, expected);
        if d < 0 {
            self.d.count = Some(Counter::Duplicates);
            return None;
        }
        if d > 0 || self.ops[i].kind != kind {
            if psn_diff(psn, self.s.sent_end) < 0 {
                self.go_back(expected);
            }
            return None;
        }
        let first = self.ops[i].first_psn;
        if psn_diff(psn, self.s.una_psn) > 0 && psn_diff(first, self.s.una_psn) > 0 {
            self.acknowledge(psn_add(first, 0xff_ffff));
        }
        Some(i)
    }

    /// The window after an in-order response at `psn`.
    fn progressed_una(&self, psn: u32) -> u32 {
        let next = psn_add(psn, 1);
        if psn_diff(next, self.s.una_psn) > 0 {
            next
        } else {
            self.s.una_psn
        }
    }

    fn read_response(&mut self, r: &RespFields) {
        let Some(i) = self.expect_response(r.psn, OpKind::Read) else {
            return;
        };
        let op = self.ops[i];
        let (n, k) = (op.npsn, op.resp_pkts);
        // A READ reissued from response k is a new request whose responses start with
        // FIRST/ONLY, while delayed responses of the original request still say
        // MIDDLE/LAST for the same PSN and bytes. Both are right: the PSN places the data,
        // so only the end of the message and the length are checked.
        let last = k + 1 == n;
        let shape_ok = match r.opcode {
            Opcode::RdmaReadResponseFirst | Opcode::RdmaReadResponseMiddle => !last,
            Opcode::RdmaReadResponseLast => last && k > 0,
            Opcode::RdmaReadResponseOnly => last,
            _ => false,
        };
        let offset = k * op.pmtu;
        let len = op.pmtu.min(op.len - offset);
        if !shape_ok || r.payload_len != len {
            self.fail(i, WcStatus::BadRespErr, 0);
            self.d.cursor = Cursor::Stop;
            return;
        }
        self.d.deliver = Some(Deliver {
            op: i,
            offset,
            len,
            atomic: false,
            una: self.progressed_una(r.psn),
        });
    }

    fn atomic_ack(&mut self, r: &RespFields) {
        if !r.has_atomic_ack {
            self.d.count = Some(Counter::MalformedDrops);
            return;
        }
        let Some(i) = self.expect_response(r.psn, OpKind::Atomic) else {
            return;
        };
        self.d.deliver = Some(Deliver {
            op: i,
            offset: 0,
            len: 8,
            atomic: true,
            una: self.progressed_una(r.psn),
        });
    }
}

/// The requester's decision on a response for one of its QPs (in RTS/SQD), from the
/// QP's requester state and its outstanding ops alone (pure; the model's `requester_rx`
/// applies it, the RTL's `ReqRxCheck` is held to it):
///
/// - ACK of PSN p in the window (`una..sent_end`): SEND/WRITE ops ending at or before p
///   are done; a READ/atomic it passes lost its response (go back to it, one retry); the
///   window moves to p + 1 but not past a READ/atomic still waiting; progress reloads
///   the retries and re-arms the ACK timer.
/// - NAK (PSN in the window): acknowledges what precedes it; PSN-sequence error goes
///   back to the window's start (not during an RNR wait); the error codes fail the op
///   holding the PSN (REM_INV_REQ / REM_ACCESS / REM_OP) and stop sending, unless a
///   READ/atomic before that PSN still waits for its response (the go-back to it is all
///   the NAK does).
/// - RNR NAK (PSN in the window): acknowledges what precedes it, uses an RNR retry,
///   rewinds to the window's start and waits; out of RNR retries, the oldest op fails.
/// - READ response / atomic ACK: at the PSN the oldest waiting READ/atomic expects,
///   delivered (a READ checks the opcode against its position and the length against the
///   PMTU, else BAD_RESP); earlier PSNs are duplicates; later ones (or the wrong kind) go
///   back to the expected PSN.
/// - Anything else: MalformedDrops.
///
/// Retries exhausted fail the oldest unfinished op (RETRY_EXC / RNR_RETRY_EXC), a rewind
/// to the PSN already rewound to without progress since is not repeated.
pub fn on_response(st: &ReqState, ops: &[OpSummary], r: &RespFields) -> ReqDecision {
    let mut w = RespWalk {
        ops,
        done: ops.iter().map(|o| o.done).collect(),
        s: *st,
        d: ReqDecision {
            count: None,
            ack_upto: 0,
            una_psn: st.una_psn,
            retry_left: st.retry_left,
            rnr_left: st.rnr_left,
            rewound_to: st.rewound_to,
            fails: [None; 2],
            cursor: Cursor::Keep,
            timer: AckTimer::Keep,
            rnr_wait: None,
            deliver: None,
            activate: false,
        },
    };
    let psn = r.psn;
    match r.opcode {
        Opcode::Acknowledge => match r.syndrome.map(Syndrome::from) {
            Some(Syndrome::Ack { .. }) => w.acknowledge(psn),
            Some(Syndrome::RnrNak { timer }) => w.rnr_nak(psn, timer),
            Some(Syndrome::Nak(code)) => w.nak(psn, code, r.syndrome.unwrap_or(0)),
            _ => w.d.count = Some(Counter::MalformedDrops),
        },
        Opcode::RdmaReadResponseFirst
        | Opcode::RdmaReadResponseMiddle
        | Opcode::RdmaReadResponseLast
        | Opcode::RdmaReadResponseOnly => w.read_response(r),
        Opcode::AtomicAcknowledge => w.atomic_ack(r),
        _ => w.d.count = Some(Counter::MalformedDrops),
    }
    w.d.una_psn = w.s.una_psn;
    w.d.retry_left = w.s.retry_left;
    w.d.rnr_left = w.s.rnr_left;
    w.d.rewound_to = w.s.rewound_to;
    w.d
}
