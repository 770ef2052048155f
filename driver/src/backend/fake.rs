//! A fake device for unit tests: the mailbox and the rings in plain memory, with no wire.
//!
//! Commands complete `cmd_latency` cycles after the opcode write (not while `hang`).
//! Every send WQE announced by a doorbell is "executed" at once: it completes successfully
//! (a CQE on the send CQ when SIGNALED) and is recorded in `executed`. CQEs obey the phase
//! rule and are held while the CQ is full (by the consumer index last rung), as the ABI
//! requires. Every BAR write is logged, so tests can count doorbells.

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;

use rocenic_proto::abi::cmd::{
    mr_key, CmdOpcode, CmdStatus, CqArgs, CreateQpArgs, ModifyQpArgs, MrArgs, QpCountersArgs,
};
use rocenic_proto::abi::cqe::{phase_of, Cqe};
use rocenic_proto::abi::verbs::{send_flags, QpState, WcStatus};
use rocenic_proto::abi::wqe::SendWqe;
use rocenic_proto::abi::{regs, DESC_SIZE};

use super::{Backend, DmaRegion};
use crate::{Error, Result};

const IOVA_OFFSET: u64 = 0x1000_0000_0000;

pub(crate) struct FakeCq {
    va: u64,
    log: u32,
    written: u32,
    ci: u32,
}

pub(crate) struct FakeQp {
    send_cqn: u32,
    sq_va: u64,
    sq_log: u32,
    sq_done: u32,
    sq_db: u32,
    pub state: QpState,
}

pub(crate) struct FakeState {
    pub id: u32,
    pub abi: u32,
    pub now: u64,
    pub cmd_latency: u64,
    pub hang: bool,
    /// Fail the next command with this status.
    pub fail_next: Option<CmdStatus>,
    pub bar_writes: Vec<(u32, u32)>,
    pub executed: Vec<SendWqe>,
    pub mrs: BTreeMap<u32, MrArgs>,
    pub qps: BTreeMap<u32, FakeQp>,
    cqs: BTreeMap<u32, FakeCq>,
    held: VecDeque<(u32, Cqe)>,
    mem: BTreeMap<u64, Vec<u8>>,
    next_va: u64,
    args: [u32; 16],
    outs: [u32; 8],
    status: u32,
    cmd_done_at: Option<(CmdOpcode, u64)>,
}

impl FakeState {
    pub fn new() -> Self {
        FakeState {
            id: regs::DEVICE_ID,
            abi: (regs::ABI_MAJOR as u32) << 16 | regs::ABI_MINOR as u32,
            now: 0,
            cmd_latency: 3,
            hang: false,
            fail_next: None,
            bar_writes: Vec::new(),
            executed: Vec::new(),
            mrs: BTreeMap::new(),
            qps: BTreeMap::new(),
            cqs: BTreeMap::new(),
            held: VecDeque::new(),
            mem: BTreeMap::new(),
            next_va: 0x7f00_0000_0000,
            args: [0; 16],
            outs: [0; 8],
            status: 0,
            cmd_done_at: None,
        }
    }

    /// Writes of `value`s to register `off`.
    pub fn writes_to(&self, off: u32) -> Vec<u32> {
        self.bar_writes
            .iter()
            .filter(|(o, _)| *o == off)
            .map(|(_, v)| *v)
            .collect()
    }

    fn locate(&self, va: u64, len: usize) -> Option<(u64, usize)> {
        let (&base, m) = self.mem.range(..=va).next_back()?;
        let off = (va - base) as usize;
        (off + len <= m.len()).then_some((base, off))
    }

    fn read(&self, va: u64, buf: &mut [u8]) -> bool {
        match self.locate(va, buf.len()) {
            Some((base, off)) => {
                buf.copy_from_slice(&self.mem[&base][off..off + buf.len()]);
                true
            }
            None => false,
        }
    }

    fn write(&mut self, va: u64, data: &[u8]) -> bool {
        match self.locate(va, data.len()) {
            Some((base, off)) => {
                self.mem.get_mut(&base).unwrap()[off..off + data.len()].copy_from_slice(data);
                true
            }
            None => false,
        }
    }

    fn run_command(&mut self, op: CmdOpcode) -> CmdStatus {
        if let Some(s) = self.fail_next.take() {
            return s;
        }
        let a = self.args;
        match op {
            CmdOpcode::CreatePd | CmdOpcode::DestroyPd => CmdStatus::Ok,
            CmdOpcode::CreateCq => {
                let c = CqArgs::from_args(&a);
                self.cqs.insert(
                    c.cqn,
                    FakeCq {
                        va: c.ring_iova - IOVA_OFFSET,
                        log: c.log_size,
                        written: 0,
                        ci: 0,
                    },
                );
                CmdStatus::Ok
            }
            CmdOpcode::DestroyCq => {
                self.cqs.remove(&a[0]);
                CmdStatus::Ok
            }
            CmdOpcode::RegMr => {
                let m = MrArgs::from_args(&a);
                if m.key >> 8 != m.index || mr_key(m.index, m.key as u8) != m.key {
                    return CmdStatus::BadParam;
                }
                self.mrs.insert(m.index, m);
                CmdStatus::Ok
            }
            CmdOpcode::DeregMr => match self.mrs.remove(&a[0]) {
                Some(_) => CmdStatus::Ok,
                None => CmdStatus::NotFound,
            },
            CmdOpcode::CreateQp => {
                let q = CreateQpArgs::from_args(&a);
                self.qps.insert(
                    q.qpn,
                    FakeQp {
                        send_cqn: q.send_cqn,
                        sq_va: q.sq_iova - IOVA_OFFSET,
                        sq_log: q.sq_log_size,
                        sq_done: 0,
                        sq_db: 0,
                        state: QpState::Reset,
                    },
                );
                CmdStatus::Ok
            }
            CmdOpcode::ModifyQp => {
                let m = ModifyQpArgs::from_args(&a);
                match self.qps.get_mut(&m.qpn) {
                    Some(q) => {
                        q.state = QpState::from(m.state);
                        CmdStatus::Ok
                    }
                    None => CmdStatus::NotFound,
                }
            }
            CmdOpcode::QueryQp => match self.qps.get(&a[0]) {
                Some(q) => {
                    self.outs = [u8::from(q.state) as u32, 1, 2, 3, q.sq_done, 0, 3, 0];
                    CmdStatus::Ok
                }
                None => CmdStatus::NotFound,
            },
            CmdOpcode::QueryQpCounters => {
                let c = QpCountersArgs::from_args(&a);
                let bytes: Vec<u8> = (0..16u64).flat_map(|i| (i * 10).to_le_bytes()).collect();
                if self.write(c.iova - IOVA_OFFSET, &bytes) {
                    CmdStatus::Ok
                } else {
                    CmdStatus::DmaFault
                }
            }
            CmdOpcode::DestroyQp => {
                self.qps.remove(&a[0]);
                CmdStatus::Ok
            }
            _ => CmdStatus::BadOpcode,
        }
    }

    /// Executes announced WQEs and writes held CQEs where there is room.
    fn process(&mut self) {
        let qpns: Vec<u32> = self.qps.keys().copied().collect();
        for qpn in qpns {
            loop {
                let q = &self.qps[&qpn];
                if q.sq_done == q.sq_db {
                    break;
                }
                let slot = q.sq_done & ((1 << q.sq_log) - 1);
                let va = q.sq_va + slot as u64 * DESC_SIZE as u64;
                let mut raw = [0u8; DESC_SIZE];
                assert!(self.read(va, &mut raw), "SQ slot unreadable");
                let w = SendWqe::from_bytes(&raw);
                let (index, cqn) = (q.sq_done, q.send_cqn);
                self.qps.get_mut(&qpn).unwrap().sq_done += 1;
                if w.flags & send_flags::SIGNALED != 0 {
                    self.held.push_back((
                        cqn,
                        Cqe {
                            wr_id: w.wr_id,
                            byte_len: w.length(),
                            imm_or_inv: 0,
                            qp_num: qpn,
                            src_qp: 99,
                            wqe_index: index,
                            opcode: w.opcode.wc_opcode(),
                            status: WcStatus::Success,
                            wc_flags: 0,
                            vendor_err: 0,
                            phase: 0,
                        },
                    ));
                }
                self.executed.push(w);
            }
        }
        while let Some(&(cqn, mut c)) = self.held.front() {
            let Some(cq) = self.cqs.get(&cqn) else {
                self.held.pop_front();
                continue;
            };
            if cq.written.wrapping_sub(cq.ci) >= 1 << cq.log {
                break;
            }
            let slot = cq.written & ((1 << cq.log) - 1);
            let va = cq.va + slot as u64 * DESC_SIZE as u64;
            c.phase = phase_of(cq.written, cq.log);
            assert!(self.write(va, &c.to_bytes()), "CQ slot unwritable");
            self.cqs.get_mut(&cqn).unwrap().written += 1;
            self.held.pop_front();
        }
    }
}

/// A [`Backend`] over a shared [`FakeState`].
pub(crate) struct FakeBackend(pub Rc<RefCell<FakeState>>);

impl FakeBackend {
    pub fn new() -> (Self, Rc<RefCell<FakeState>>) {
        let st = Rc::new(RefCell::new(FakeState::new()));
        (FakeBackend(st.clone()), st)
    }
}

impl Backend for FakeBackend {
    fn bar_read(&mut self, off: u32) -> u32 {
        let s = self.0.borrow();
        match off {
            regs::ID => s.id,
            regs::ABI_VERSION => s.abi,
            regs::MAX_QP => 16,
            regs::MAX_CQ => 8,
            regs::MAX_MR => 16,
            regs::MAX_PD => 4,
            regs::MAX_LOG_RING => 10,
            regs::MAX_SGE => 0x0101,
            regs::MAX_INLINE => 32,
            regs::MAX_RD_ATOMIC => 0x1010,
            regs::CLOCK_MHZ => 250,
            regs::CMD_STATUS => {
                if s.cmd_done_at.is_some() {
                    regs::CMD_STATUS_BUSY
                } else {
                    s.status
                }
            }
            o if (regs::cmd_out(0)..regs::cmd_out(8)).contains(&o) => {
                s.outs[((o - regs::cmd_out(0)) / 4) as usize]
            }
            _ => 0,
        }
    }

    fn bar_write(&mut self, off: u32, v: u32) {
        let mut s = self.0.borrow_mut();
        s.bar_writes.push((off, v));
        if (regs::cmd_arg(0)..regs::cmd_arg(16)).contains(&off) {
            s.args[((off - regs::cmd_arg(0)) / 4) as usize] = v;
        } else if off == regs::CMD_OPCODE {
            let at = s.now + s.cmd_latency;
            s.cmd_done_at = Some((CmdOpcode::from(v), at));
        } else if (regs::sq_doorbell(0)..regs::cq_doorbell(0)).contains(&off) {
            let qpn = (off - regs::sq_doorbell(0)) / 8;
            if off & 7 == 0 {
                if let Some(q) = s.qps.get_mut(&qpn) {
                    q.sq_db = v;
                }
            }
        } else if off >= regs::cq_doorbell(0) {
            let cqn = (off - regs::cq_doorbell(0)) / 4;
            if let Some(c) = s.cqs.get_mut(&cqn) {
                c.ci = v;
            }
        }
    }

    fn alloc_dma(&mut self, len: usize) -> Result<DmaRegion> {
        let mut s = self.0.borrow_mut();
        let va = s.next_va;
        let rounded = len.div_ceil(4096) * 4096;
        s.next_va += rounded as u64 + 4096;
        s.mem.insert(va, vec![0; rounded]);
        Ok(DmaRegion {
            id: va,
            va,
            iova: va + IOVA_OFFSET,
            len: rounded,
        })
    }

    fn free_dma(&mut self, id: u64) -> Result<()> {
        match self.0.borrow_mut().mem.remove(&id) {
            Some(_) => Ok(()),
            None => Err(Error::DmaFree {
                id,
                reason: "unknown".into(),
            }),
        }
    }

    fn mem_write(&mut self, va: u64, data: &[u8]) -> Result<()> {
        if self.0.borrow_mut().write(va, data) {
            Ok(())
        } else {
            Err(Error::MemAccess {
                va,
                len: data.len(),
                write: true,
                reason: "outside fake memory".into(),
            })
        }
    }

    fn mem_read(&mut self, va: u64, buf: &mut [u8]) -> Result<()> {
        if self.0.borrow().read(va, buf) {
            Ok(())
        } else {
            Err(Error::MemAccess {
                va,
                len: buf.len(),
                write: false,
                reason: "outside fake memory".into(),
            })
        }
    }

    fn wait(&mut self, cycles: u64) {
        let mut s = self.0.borrow_mut();
        s.now += cycles;
        if let Some((op, at)) = s.cmd_done_at {
            if s.now >= at && !s.hang {
                s.cmd_done_at = None;
                let st = s.run_command(op);
                s.status = u32::from(st) & 0xff;
            }
        }
        s.process();
    }

    fn now(&self) -> u64 {
        self.0.borrow().now
    }
}
