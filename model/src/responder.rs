//! The responder: PSN checking, request execution into registered memory, READ
//! responses, atomics with a replay cache, and ACK/NAK generation.
//!
//! ACK rule (shared with the RTL): an in-sequence SEND or WRITE packet is acknowledged
//! when it carries AckReq; others are covered by a later ACK (coalescing). A duplicate
//! SEND/WRITE packet with AckReq is answered with an ACK of the last PSN received. READ
//! responses and atomic ACKs acknowledge their requests. The first out-of-sequence packet
//! after an in-sequence one gets one PSN-sequence-error NAK; later ones are dropped
//! silently until the expected PSN arrives.

use crate::nic::{Nic, TxFrame};
use crate::packet::{self, psn_add, psn_diff, Hdr, Parsed};
use crate::qp::{InProgress, ReplayEntry};
use crate::requester::packets;
use crate::tables::ProtError;
use rocenic_proto::abi::regs::Counter;
use rocenic_proto::abi::verbs::{access, wc_flags, QpState, WcOpcode, WcStatus};
use rocenic_proto::abi::wqe::RecvWqe;
use rocenic_proto::abi::DESC_SIZE;
use rocenic_proto::device::DmaPort;
use rocenic_proto::wire::{NakCode, Opcode, Syndrome, CREDITS_INVALID};

/// Credit field of our ACKs: "invalid credit" (we do not use end-to-end flow control).
pub const NO_CREDIT: u8 = CREDITS_INVALID;
/// Atomics remembered per QP for duplicate detection (the oldest is forgotten first).
pub const REPLAY_DEPTH: usize = 16;

/// One READ response packet as the responder sends it: packet `k` of a READ of `len`
/// bytes carries bytes `offset..offset + len` of the requested range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadRespPacket {
    pub opcode: Opcode,
    pub psn: u32,
    /// (syndrome byte, MSN): on all but MIDDLE.
    pub aeth: Option<(u8, u32)>,
    pub offset: u32,
    pub len: u32,
}

/// The response packets of a READ request at `psn` for `len` bytes at a PMTU of `pmtu`
/// bytes, acknowledged with `msn`: ONLY, or FIRST, MIDDLE..., LAST, PSNs `psn + k`
/// (24-bit wrap), `min(pmtu, rest)` bytes each; a zero-length READ is one empty ONLY.
/// `exec_read` sends exactly these; the RTL's `ReadResp` bench holds it to them.
pub fn read_response_packets(psn: u32, len: u32, pmtu: u32, msn: u32) -> Vec<ReadRespPacket> {
    let n = packets(len, pmtu);
    (0..n)
        .map(|k| {
            let offset = k * pmtu;
            let opcode = match (k == 0, k + 1 == n) {
                (true, true) => Opcode::RdmaReadResponseOnly,
                (true, false) => Opcode::RdmaReadResponseFirst,
                (false, false) => Opcode::RdmaReadResponseMiddle,
                (false, true) => Opcode::RdmaReadResponseLast,
            };
            let aeth = (opcode != Opcode::RdmaReadResponseMiddle)
                .then_some((u8::from(Syndrome::Ack { credits: NO_CREDIT }), msn));
            ReadRespPacket {
                opcode,
                psn: psn_add(psn, k),
                aeth,
                offset,
                len: pmtu.min(len - offset),
            }
        })
        .collect()
}

/// The value an atomic leaves in memory: CMP_AND_SWP (`compare_swap`) writes `swap_add`
/// when `orig == compare` (else `orig` again), FETCH_ADD writes `orig + swap_add`
/// (wrapping). The requester gets `orig` back either way.
pub fn atomic_result(compare_swap: bool, orig: u64, swap_add: u64, compare: u64) -> u64 {
    if compare_swap {
        if orig == compare {
            swap_add
        } else {
            orig
        }
    } else {
        orig.wrapping_add(swap_add)
    }
}

/// The message a QP's responder is in the middle of, as far as [`classify`] needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// No message in progress.
    Idle,
    /// A multi-packet SEND between its FIRST and LAST packets.
    Send,
    /// A multi-packet WRITE: its DMA length and the bytes written so far
    /// (`offset <= total` always holds: the packets that would pass it are refused).
    Write { total: u32, offset: u32 },
}

/// What the responder knows of a QP when a request arrives: everything [`classify`] reads
/// (the RTL keeps it in the `qpa` and `qps` contexts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RespCtx {
    /// The QP is in RTR, RTS or SQD.
    pub can_receive: bool,
    /// Expected PSN.
    pub epsn: u32,
    /// A PSN-sequence-error NAK was sent and no in-order packet arrived since.
    pub nak_sent: bool,
    /// No receive is posted (`rq_ci == rq_pi`).
    pub rq_empty: bool,
    /// Path MTU in bytes.
    pub pmtu: u32,
    /// The QP's remote access flags (`verbs::access`).
    pub access: u32,
    pub progress: Progress,
}

/// The fields of a request packet [`classify`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReqFields {
    pub opcode: Opcode,
    pub psn: u32,
    pub ack_req: bool,
    /// A RETH is present, with this DMA length.
    pub has_reth: bool,
    pub reth_len: u32,
    /// An AtomicETH is present, with this virtual address.
    pub has_atomic: bool,
    pub atomic_va: u64,
    /// An immediate is present.
    pub has_imm: bool,
    /// Payload bytes (without pad and ICRC).
    pub payload_len: u32,
}

impl ReqFields {
    fn of(hdr: &Hdr, payload_len: usize) -> ReqFields {
        ReqFields {
            opcode: hdr.opcode,
            psn: hdr.psn,
            ack_req: hdr.ack_req,
            has_reth: hdr.reth.is_some(),
            reth_len: hdr.reth.map_or(0, |r| r.2),
            has_atomic: hdr.atomic.is_some(),
            atomic_va: hdr.atomic.map_or(0, |a| a.0),
            has_imm: hdr.imm.is_some(),
            payload_len: payload_len as u32,
        }
    }
}

/// What a duplicate request (PSN before the expected one) gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dup {
    /// An ACK of the last PSN received (`psn` = ePSN - 1): a SEND/WRITE packet with AckReq.
    Ack { psn: u32 },
    /// A READ, executed again from its own PSN, VA and length (a failing MR check or DMA
    /// on the way is not reported: the original was fine).
    Read,
    /// An atomic: its answer replayed from the replay cache if the PSN is still there.
    Atomic,
    /// Nothing (no AckReq; a READ the QP's access flags refuse).
    Ignore,
}

/// The kind of an in-sequence request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecKind {
    Send,
    Write,
    Read,
    Atomic,
}

/// An in-sequence request that passed the checks the header and context allow; what
/// remains is done by the execution (MR check, RQ WQE fetch, DMA).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exec {
    pub kind: ExecKind,
    /// The packet starts a message: a SEND takes an RQ WQE, a WRITE checks its RETH's
    /// rkey and range once for the whole message.
    pub first: bool,
    /// The packet ends the message (LAST/ONLY, READ, atomic): MSN advances.
    pub last: bool,
    /// WRITE: the packet overruns the DMA length, or a LAST/ONLY ends short of it. Checked
    /// after the MR check of a first packet: NAK Invalid Request.
    pub len_err: bool,
    /// The packet needs a receive (SEND starting a message, WRITE with immediate) and none
    /// is posted: RNR NAK (for a WRITE after its MR and length checks).
    pub rnr: bool,
}

/// The decision on a request packet for one of our QPs, from its header and the QP's
/// responder context alone (pure; the model's `responder_rx` and the RTL's `RespCheck`
/// both follow it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// The QP does not receive (not in RTR/RTS/SQD): dropped, counted as UnknownQpDrops.
    Drop,
    /// PSN before the expected one: counted as a duplicate, answered as said.
    Duplicate(Dup),
    /// PSN after the expected one: counted as PsnSeqDrops and dropped; `nak`: the first
    /// since an in-order packet, answered with a PSN-sequence-error NAK of the expected
    /// PSN (and `nak_sent` set).
    Ahead { nak: bool },
    /// In sequence but malformed here (opcode sequence, access flags, payload length,
    /// missing RETH/AtomicETH, misaligned atomic): NAK Invalid Request, QP to error.
    Invalid,
    /// In sequence and valid so far.
    Execute(Exec),
}

/// Checks the payload length of a SEND/WRITE packet against the PMTU: FIRST and MIDDLE
/// carry exactly one PMTU, LAST 1..=PMTU, ONLY 0..=PMTU.
fn payload_ok(op: Opcode, len: u32, pmtu: u32) -> bool {
    if op.is_first() || op.is_middle() {
        len == pmtu
    } else if op.is_last() {
        (1..=pmtu).contains(&len)
    } else {
        len <= pmtu
    }
}

/// The responder's decision on a request (see [`Decision`]). In-sequence checks, all
/// answered with NAK Invalid Request: a message in progress continues with MIDDLE/LAST of
/// its kind and MIDDLE/LAST never start one; the QP allows the remote access; SEND/WRITE
/// payloads fit the PMTU rule; a new WRITE and a READ carry a RETH, an atomic an
/// AtomicETH with an 8-byte aligned VA.
pub fn classify(ctx: &RespCtx, req: &ReqFields) -> Decision {
    if !ctx.can_receive {
        return Decision::Drop;
    }
    let op = req.opcode;
    let d = psn_diff(req.psn, ctx.epsn);
    if d < 0 {
        let dup = if op == Opcode::RdmaReadRequest {
            if ctx.access & access::REMOTE_READ != 0 && req.has_reth {
                Dup::Read
            } else {
                Dup::Ignore
            }
        } else if op.is_atomic() {
            Dup::Atomic
        } else if req.ack_req {
            Dup::Ack {
                psn: psn_add(ctx.epsn, 0xff_ffff),
            }
        } else {
            Dup::Ignore
        };
        return Decision::Duplicate(dup);
    }
    if d > 0 {
        return Decision::Ahead { nak: !ctx.nak_sent };
    }
    let continues = matches!(
        op,
        Opcode::SendMiddle
            | Opcode::SendLast
            | Opcode::SendLastWithImmediate
            | Opcode::SendLastWithInvalidate
            | Opcode::RdmaWriteMiddle
            | Opcode::RdmaWriteLast
            | Opcode::RdmaWriteLastWithImmediate
    );
    let seq_ok = match (ctx.progress, continues) {
        (Progress::Idle, false) => true,
        (Progress::Send, true) => op.is_send(),
        (Progress::Write { .. }, true) => op.is_write(),
        _ => false,
    };
    if !seq_ok {
        return Decision::Invalid;
    }
    let last = op.is_last() || op.is_only();
    let exec = if op.is_send() {
        if !payload_ok(op, req.payload_len, ctx.pmtu) {
            return Decision::Invalid;
        }
        let first = ctx.progress == Progress::Idle;
        Exec {
            kind: ExecKind::Send,
            first,
            last,
            len_err: false,
            rnr: first && ctx.rq_empty,
        }
    } else if op.is_write() {
        if ctx.access & access::REMOTE_WRITE == 0 || !payload_ok(op, req.payload_len, ctx.pmtu) {
            return Decision::Invalid;
        }
        let (first, total, offset) = match ctx.progress {
            Progress::Write { total, offset } => (false, total, offset),
            _ if req.has_reth => (true, req.reth_len, 0),
            _ => return Decision::Invalid,
        };
        let end = u64::from(offset) + u64::from(req.payload_len);
        Exec {
            kind: ExecKind::Write,
            first,
            last,
            len_err: end > u64::from(total) || (last && end != u64::from(total)),
            rnr: req.has_imm && ctx.rq_empty,
        }
    } else if op == Opcode::RdmaReadRequest {
        if ctx.access & access::REMOTE_READ == 0 || !req.has_reth {
            return Decision::Invalid;
        }
        Exec {
            kind: ExecKind::Read,
            first: true,
            last: true,
            len_err: false,
            rnr: false,
        }
    } else if op.is_atomic() {
        if ctx.access & access::REMOTE_ATOMIC == 0
            || !req.has_atomic
            || !req.atomic_va.is_multiple_of(8)
        {
            return Decision::Invalid;
        }
        Exec {
            kind: ExecKind::Atomic,
            first: true,
            last: true,
            len_err: false,
            rnr: false,
        }
    } else {
        return Decision::Invalid;
    };
    Decision::Execute(exec)
}

/// How a request failed at the responder (IB's class B/C/D errors).
enum Fail {
    /// NAK Invalid Request (unsupported or malformed request, bad opcode sequence).
    InvalidRequest,
    /// NAK Remote Access Error (rkey, PD, access or bounds).
    RemoteAccess,
    /// NAK Remote Operational Error (local failure at the responder).
    RemoteOperational,
}

impl Nic {
    fn addr_of(&self, qpn: u32) -> packet::Addr {
        let qp = self.qps[qpn as usize].as_ref().expect("exists");
        packet::Addr {
            src_mac: self.mac,
            dst_mac: qp.attrs.dest_mac,
            src_ip: self.ip,
            dst_ip: qp.attrs.dest_ip,
            udp_sport: qp.attrs.udp_sport,
        }
    }

    fn respond(&mut self, qpn: u32, hdr: &Hdr, payload: &[u8], ready_at: u64) {
        let frame = packet::build(&self.addr_of(qpn), hdr, payload);
        self.responses.push_back(TxFrame {
            ready_at,
            qpn,
            psn: None,
            frame,
        });
    }

    fn send_aeth(&mut self, qpn: u32, psn: u32, syndrome: Syndrome) {
        let qp = self.qps[qpn as usize].as_ref().expect("exists");
        let mut hdr = Hdr::new(Opcode::Acknowledge, qp.attrs.dest_qpn, psn);
        hdr.aeth = Some((u8::from(syndrome), qp.resp.msn));
        let at = self.now + 1;
        self.respond(qpn, &hdr, &[], at);
    }

    fn ack(&mut self, qpn: u32, psn: u32) {
        self.send_aeth(qpn, psn, Syndrome::Ack { credits: NO_CREDIT });
    }

    /// NAKs the request at `psn` and moves the QP to the error state.
    fn fail(&mut self, qpn: u32, psn: u32, why: Fail, dma: &mut dyn DmaPort) {
        let code = match why {
            Fail::InvalidRequest => NakCode::InvalidRequest,
            Fail::RemoteAccess => NakCode::RemoteAccessError,
            Fail::RemoteOperational => NakCode::RemoteOperationalError,
        };
        self.count(Some(qpn), Counter::NaksSent, 1);
        self.send_aeth(qpn, psn, Syndrome::Nak(code));
        let qp = self.qp_mut(qpn).expect("exists");
        qp.state = QpState::Err;
        self.enter_error(qpn, dma);
    }

    /// The responder context of an existing QP, as [`classify`] reads it.
    fn resp_ctx(&self, qpn: u32) -> RespCtx {
        let qp = self.qps[qpn as usize].as_ref().expect("exists");
        RespCtx {
            can_receive: qp.can_receive(),
            epsn: qp.resp.epsn,
            nak_sent: qp.resp.nak_sent,
            rq_empty: qp.resp.rq_ci == qp.resp.rq_pi,
            pmtu: qp.attrs.pmtu,
            access: qp.attrs.access,
            progress: match qp.resp.in_progress {
                None => Progress::Idle,
                Some(InProgress::Send { .. }) => Progress::Send,
                Some(InProgress::Write { total, offset, .. }) => Progress::Write { total, offset },
            },
        }
    }

    /// Handles a request packet addressed to one of our QPs.
    pub(crate) fn responder_rx(&mut self, pkt: &Parsed<'_>, dma: &mut dyn DmaPort) {
        let qpn = pkt.hdr.dest_qp;
        let Some(qp) = self.qp_mut(qpn) else {
            self.count(None, Counter::UnknownQpDrops, 1);
            return;
        };
        // Only the QP's peer speaks on a connection (as rxe's check_addr has it): a
        // request from any other address is not for this QP.
        if pkt.src_ip != qp.attrs.dest_ip {
            self.count(Some(qpn), Counter::UnknownQpDrops, 1);
            return;
        }
        let psn = pkt.hdr.psn;
        let decision = classify(
            &self.resp_ctx(qpn),
            &ReqFields::of(&pkt.hdr, pkt.payload.len()),
        );
        let exec = match decision {
            Decision::Drop => {
                self.count(Some(qpn), Counter::UnknownQpDrops, 1);
                return;
            }
            Decision::Duplicate(dup) => {
                self.count(Some(qpn), Counter::Duplicates, 1);
                self.duplicate(qpn, pkt, dup, dma);
                return;
            }
            Decision::Ahead { nak } => {
                self.count(Some(qpn), Counter::PsnSeqDrops, 1);
                if nak {
                    let qp = self.qp_mut(qpn).expect("exists");
                    qp.resp.nak_sent = true;
                    let epsn = qp.resp.epsn;
                    self.count(Some(qpn), Counter::NaksSent, 1);
                    self.send_aeth(qpn, epsn, Syndrome::Nak(NakCode::PsnSequenceError));
                }
                return;
            }
            Decision::Invalid => None,
            Decision::Execute(e) => Some(e),
        };
        self.qp_mut(qpn).expect("exists").resp.nak_sent = false;
        let result = match exec {
            None => Err(Fail::InvalidRequest),
            Some(e) => match e.kind {
                ExecKind::Send => self.exec_send(qpn, pkt, &e, dma),
                ExecKind::Write => self.exec_write(qpn, pkt, &e, dma),
                ExecKind::Read => self.exec_read(qpn, pkt, dma, false),
                ExecKind::Atomic => self.exec_atomic(qpn, pkt, dma),
            },
        };
        if let Err(why) = result {
            self.fail(qpn, psn, why, dma);
        }
    }

    /// Answers `psn` with an RNR NAK carrying the QP's minimum RNR timer.
    fn send_rnr_nak(&mut self, qpn: u32, psn: u32) {
        let timer = self.qps[qpn as usize]
            .as_ref()
            .expect("exists")
            .attrs
            .min_rnr_timer;
        self.count(Some(qpn), Counter::RnrNaksSent, 1);
        self.send_aeth(qpn, psn, Syndrome::RnrNak { timer });
    }

    /// Takes the next RQ entry, or sends an RNR NAK and returns None.
    fn take_rqe(&mut self, qpn: u32, psn: u32, dma: &mut dyn DmaPort) -> Option<(RecvWqe, u32)> {
        let now = self.now;
        let qp = self.qp_mut(qpn).expect("exists");
        if qp.resp.rq_ci == qp.resp.rq_pi {
            self.send_rnr_nak(qpn, psn);
            return None;
        }
        let index = qp.resp.rq_ci;
        let slot = (index & ((1 << qp.rq_log) - 1)) as u64;
        let mut raw = [0u8; DESC_SIZE];
        let iova = qp.rq_iova + slot * DESC_SIZE as u64;
        if dma.dma_read(now, iova, &mut raw).is_err() {
            self.count(Some(qpn), Counter::DmaFaults, 1);
            // Treated as an empty RQ; the host broke its own ring.
            self.send_aeth(qpn, psn, Syndrome::RnrNak { timer: 0 });
            return None;
        }
        let qp = self.qp_mut(qpn).expect("exists");
        qp.resp.rq_ci = index.wrapping_add(1);
        Some((RecvWqe::from_bytes(&raw), index))
    }

    /// Writes payload at `va` through `key` (LOCAL_WRITE for receive buffers,
    /// REMOTE_WRITE for RDMA targets).
    fn write_user(
        &mut self,
        qpn: u32,
        key: u32,
        va: u64,
        data: &[u8],
        need: u32,
        dma: &mut dyn DmaPort,
    ) -> Result<(), Option<ProtError>> {
        if data.is_empty() {
            return Ok(());
        }
        let pdn = self.qps[qpn as usize].as_ref().expect("exists").pdn;
        let iova = self
            .tables
            .translate(key, pdn, va, data.len() as u64, need)
            .map_err(Some)?;
        dma.dma_write(self.now, iova, data).map_err(|_| {
            self.count(Some(qpn), Counter::DmaFaults, 1);
            None
        })?;
        Ok(())
    }

    fn end_message(&mut self, qpn: u32) {
        let qp = self.qp_mut(qpn).expect("exists");
        qp.resp.msn = (qp.resp.msn + 1) & 0xff_ffff;
        qp.resp.in_progress = None;
    }

    fn exec_send(
        &mut self,
        qpn: u32,
        pkt: &Parsed<'_>,
        e: &Exec,
        dma: &mut dyn DmaPort,
    ) -> Result<(), Fail> {
        let psn = pkt.hdr.psn;
        if e.rnr {
            self.send_rnr_nak(qpn, psn);
            return Ok(());
        }
        // The receive in progress is taken out of the context here: on an error below it
        // completes with that error, and must not complete again as flushed.
        let qp = self.qp_mut(qpn).expect("exists");
        let (rqe, rq_index, offset) = match qp.resp.in_progress.take() {
            Some(InProgress::Send {
                rqe,
                rq_index,
                offset,
            }) => (rqe, rq_index, offset),
            _ => match self.take_rqe(qpn, psn, dma) {
                Some((rqe, idx)) => (rqe, idx, 0),
                None => return Ok(()),
            },
        };
        let rcq = self.qps[qpn as usize].as_ref().expect("exists").recv_cqn;
        let end = offset as u64 + pkt.payload.len() as u64;
        if end > rqe.length() as u64 {
            let c = self.recv_cqe(qpn, &rqe, rq_index, WcStatus::LocLenErr);
            self.complete(rcq, c);
            return Err(Fail::InvalidRequest);
        }
        let va = rqe.sge.addr + offset as u64;
        if self
            .write_user(qpn, rqe.sge.lkey, va, pkt.payload, access::LOCAL_WRITE, dma)
            .is_err()
        {
            let c = self.recv_cqe(qpn, &rqe, rq_index, WcStatus::LocProtErr);
            self.complete(rcq, c);
            return Err(Fail::RemoteOperational);
        }
        let qp = self.qp_mut(qpn).expect("exists");
        qp.resp.epsn = psn_add(psn, 1);
        if !e.last {
            qp.resp.in_progress = Some(InProgress::Send {
                rqe,
                rq_index,
                offset: end as u32,
            });
        } else {
            let pdn = qp.pdn;
            let mut cqe = self.recv_cqe(qpn, &rqe, rq_index, WcStatus::Success);
            cqe.byte_len = end as u32;
            if let Some(imm) = pkt.hdr.imm {
                cqe.imm_or_inv = imm;
                cqe.wc_flags = wc_flags::WITH_IMM;
            }
            if let Some(rkey) = pkt.hdr.ieth {
                if !self.tables.invalidate(rkey, pdn) {
                    cqe.status = WcStatus::LocProtErr;
                    self.complete(rcq, cqe);
                    return Err(Fail::InvalidRequest);
                }
                cqe.imm_or_inv = rkey;
                cqe.wc_flags = wc_flags::WITH_INV;
            }
            self.complete(rcq, cqe);
            self.end_message(qpn);
        }
        if pkt.hdr.ack_req {
            self.ack(qpn, psn);
        }
        Ok(())
    }

    fn exec_write(
        &mut self,
        qpn: u32,
        pkt: &Parsed<'_>,
        e: &Exec,
        dma: &mut dyn DmaPort,
    ) -> Result<(), Fail> {
        let psn = pkt.hdr.psn;
        let qp = self.qps[qpn as usize].as_ref().expect("exists");
        let pdn = qp.pdn;
        let (va, rkey, total, offset) = match qp.resp.in_progress {
            Some(InProgress::Write {
                va,
                rkey,
                total,
                offset,
            }) => (va, rkey, total, offset),
            _ => {
                let (va, rkey, total) = pkt.hdr.reth.ok_or(Fail::InvalidRequest)?;
                // The whole target is checked once, at the first packet.
                self.tables
                    .translate(rkey, pdn, va, total as u64, access::REMOTE_WRITE)
                    .map_err(|_| Fail::RemoteAccess)?;
                (va, rkey, total, 0)
            }
        };
        let end = offset as u64 + pkt.payload.len() as u64;
        let last = e.last;
        if e.len_err {
            return Err(Fail::InvalidRequest);
        }
        // The immediate consumes a receive: with none posted, RNR NAK before touching
        // memory. The receive is taken only once the data is written, so a failed write
        // leaves it posted (it is then flushed, completing exactly once).
        if e.rnr {
            self.send_rnr_nak(qpn, psn);
            return Ok(());
        }
        match self.write_user(
            qpn,
            rkey,
            va + offset as u64,
            pkt.payload,
            access::REMOTE_WRITE,
            dma,
        ) {
            Ok(()) => {}
            Err(Some(_)) => return Err(Fail::RemoteAccess),
            Err(None) => return Err(Fail::RemoteOperational),
        }
        let rqe = if pkt.hdr.imm.is_some() {
            match self.take_rqe(qpn, psn, dma) {
                Some(r) => Some(r),
                None => return Ok(()),
            }
        } else {
            None
        };
        let qp = self.qp_mut(qpn).expect("exists");
        qp.resp.epsn = psn_add(psn, 1);
        qp.resp.in_progress = Some(InProgress::Write {
            va,
            rkey,
            total,
            offset: end as u32,
        });
        if last {
            let rcq = qp.recv_cqn;
            if let (Some((rqe, idx)), Some(imm)) = (rqe, pkt.hdr.imm) {
                let mut cqe = self.recv_cqe(qpn, &rqe, idx, WcStatus::Success);
                cqe.opcode = WcOpcode::RecvRdmaWithImm;
                cqe.byte_len = total;
                cqe.imm_or_inv = imm;
                cqe.wc_flags = wc_flags::WITH_IMM;
                self.complete(rcq, cqe);
            }
            self.end_message(qpn);
        }
        if pkt.hdr.ack_req {
            self.ack(qpn, psn);
        }
        Ok(())
    }

    /// Executes a READ request (also a duplicate one: READs have no side effects, so a
    /// duplicate is simply executed again from its own PSN, VA and length).
    fn exec_read(
        &mut self,
        qpn: u32,
        pkt: &Parsed<'_>,
        dma: &mut dyn DmaPort,
        duplicate: bool,
    ) -> Result<(), Fail> {
        let now = self.now;
        let psn = pkt.hdr.psn;
        // Access flags and RETH were checked by `classify` (also for a duplicate).
        let qp = self.qps[qpn as usize].as_ref().expect("exists");
        let (va, rkey, len) = pkt.hdr.reth.ok_or(Fail::InvalidRequest)?;
        let (pmtu, pdn, dest) = (qp.attrs.pmtu, qp.pdn, qp.attrs.dest_qpn);
        let iova = self
            .tables
            .translate(rkey, pdn, va, len as u64, access::REMOTE_READ)
            .map_err(|_| Fail::RemoteAccess)?;
        if !duplicate {
            let n = packets(len, pmtu);
            let qp = self.qp_mut(qpn).expect("exists");
            qp.resp.epsn = psn_add(psn, n);
            self.end_message(qpn);
        }
        let msn = self.qps[qpn as usize].as_ref().expect("exists").resp.msn;
        let mut ready = now + 1;
        for p in read_response_packets(psn, len, pmtu, msn) {
            let mut payload = vec![0u8; p.len as usize];
            if p.len > 0 {
                // All reads are issued at once; the DMA port pipelines them.
                match dma.dma_read(now, iova + u64::from(p.offset), &mut payload) {
                    Ok(t) => ready = t.max(ready),
                    Err(_) => {
                        self.count(Some(qpn), Counter::DmaFaults, 1);
                        return Err(Fail::RemoteOperational);
                    }
                }
            }
            let mut hdr = Hdr::new(p.opcode, dest, p.psn);
            hdr.aeth = p.aeth;
            self.respond(qpn, &hdr, &payload, ready);
        }
        Ok(())
    }

    fn exec_atomic(
        &mut self,
        qpn: u32,
        pkt: &Parsed<'_>,
        dma: &mut dyn DmaPort,
    ) -> Result<(), Fail> {
        let now = self.now;
        let psn = pkt.hdr.psn;
        // Access flags, AtomicETH and alignment were checked by `classify`.
        let qp = self.qps[qpn as usize].as_ref().expect("exists");
        let (va, rkey, swap_add, compare) = pkt.hdr.atomic.ok_or(Fail::InvalidRequest)?;
        let pdn = qp.pdn;
        let iova = self
            .tables
            .translate(rkey, pdn, va, 8, access::REMOTE_ATOMIC)
            .map_err(|_| Fail::RemoteAccess)?;
        // Atomic operands are host-order (little-endian) u64 in memory.
        let mut old = [0u8; 8];
        let t = dma.dma_read(now, iova, &mut old).map_err(|_| {
            self.count(Some(qpn), Counter::DmaFaults, 1);
            Fail::RemoteOperational
        })?;
        let orig = u64::from_le_bytes(old);
        let new = atomic_result(
            pkt.hdr.opcode == Opcode::CompareSwap,
            orig,
            swap_add,
            compare,
        );
        dma.dma_write(t, iova, &new.to_le_bytes()).map_err(|_| {
            self.count(Some(qpn), Counter::DmaFaults, 1);
            Fail::RemoteOperational
        })?;
        let qp = self.qp_mut(qpn).expect("exists");
        qp.resp.epsn = psn_add(psn, 1);
        if qp.resp.replay.len() == REPLAY_DEPTH {
            qp.resp.replay.pop_front();
        }
        qp.resp.replay.push_back(ReplayEntry {
            psn,
            atomic_orig: orig,
        });
        self.end_message(qpn);
        self.atomic_reply(qpn, psn, orig, t);
        Ok(())
    }

    fn atomic_reply(&mut self, qpn: u32, psn: u32, orig: u64, ready: u64) {
        let qp = self.qps[qpn as usize].as_ref().expect("exists");
        let mut hdr = Hdr::new(Opcode::AtomicAcknowledge, qp.attrs.dest_qpn, psn);
        hdr.aeth = Some((u8::from(Syndrome::Ack { credits: NO_CREDIT }), qp.resp.msn));
        hdr.atomic_ack = Some(orig);
        self.respond(qpn, &hdr, &[], ready.max(self.now + 1));
    }

    /// A request with a PSN before the expected one.
    fn duplicate(&mut self, qpn: u32, pkt: &Parsed<'_>, dup: Dup, dma: &mut dyn DmaPort) {
        let psn = pkt.hdr.psn;
        match dup {
            Dup::Read => {
                // Errors on a duplicate READ are not reported again: the original was fine.
                let _ = self.exec_read(qpn, pkt, dma, true);
            }
            Dup::Atomic => {
                let qp = self.qps[qpn as usize].as_ref().expect("exists");
                if let Some(e) = qp.resp.replay.iter().find(|e| e.psn == psn).copied() {
                    self.atomic_reply(qpn, psn, e.atomic_orig, self.now + 1);
                }
            }
            Dup::Ack { psn: last } => self.ack(qpn, last),
            Dup::Ignore => {}
        }
    }
}
