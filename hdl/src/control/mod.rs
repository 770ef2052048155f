//! `Control`: the control plane of the engine as one block — the BAR0 register file
//! ([`RegFile`]) and the command engine with its context tables ([`CmdEngine`]), with the
//! engine top contract's register port. What the rest of the engine gets from it: the
//! port configuration (`port`), doorbells (SQ on `sq_db`, RQ on `rq_db`, both through a
//! [`DbSplit`]; CQ on `cq_db`), QP events (`qpev`), CQ events (`cqev`), the context
//! tables' datapath ports (`ctx`, a `CtxServers`; see `ctx_tables`) and QUERY_QP_COUNTERS's
//! DMA write (`dma_wr`); what it takes: counter increments (`cnt`) and the per-QP counter
//! pulses (`qc_resp`, `qc_req`, `qc_rx`, `qc_tx`) for its [`QpCounters`], which the
//! command engine clears (CREATE_QP) and reads.
//!
//! Its bench is differential (`hdl/tests/against_model/control.rs`): random command
//! sequences and register accesses go to this block (RustHDL simulation) and to the
//! behavioural model's `Nic`, and every value read back must be equal (QUERY_QP_COUNTERS's
//! bytes too).

pub mod cmd;
pub mod counter_events;
pub mod ctx_tables;
pub mod db_split;
pub mod driver;
pub mod leaves;
pub mod mr_check;
pub mod qp_counters;
pub mod qpev_split;
pub mod regfile;

use crate::bus::cnt::{ReqCntServer, RespCntServer, RxCntServer, TxCntServer};
use crate::bus::ctl::{CqEvClient, InvServer, QpErrServer, QpEvClient};
use crate::bus::ctx::CtxServers;
use crate::bus::dma_wr::DmaWrClient;
use crate::bus::reg::{CntIncServer, CqDbClient, DbClient, PortCfgClient, QDbClient, RegServer};
use crate::control::cmd::CmdEngine;
use crate::control::db_split::DbSplit;
use crate::control::qp_counters::QpCounters;
use crate::control::regfile::{CtrlParams, RegFile};
use crate::prelude::*;

/// The control plane over `2^QA` QPs and `2^MA` MRs.
#[derive(LogicBlock)]
pub struct Control<const QA: usize, const MA: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// The BAR0 register port, the port configuration, the counter increments and the
    /// doorbells (`RegFile`'s, passed out).
    pub bar: RegServer,
    pub port: PortCfgClient,
    pub cnt: CntIncServer,
    /// SQ and RQ doorbells, split by kind (`DbSplit`) from the register file's one FIFO.
    pub sq_db: QDbClient<QA>,
    pub rq_db: QDbClient<QA>,
    pub cq_db: CqDbClient,
    pub qpev: QpEvClient<QA>,
    /// CQ events (CREATE_CQ) for the completion engine (`CmdEngine::cqev`).
    pub cqev: CqEvClient,
    /// The tables' datapath ports (`CmdEngine::ctx`).
    pub ctx: CtxServers<QA, MA>,
    /// The QP errors of the responder and the requester (`CmdEngine::qperr`): the QP
    /// to ERR.
    pub qperr: QpErrServer<QA>,
    /// The responder's SEND with invalidate (`CmdEngine::inv`).
    pub inv: InvServer,
    /// Per-QP counter events (`QpCounters::resp`, `req`, `rx`, `tx`).
    pub qc_resp: RespCntServer<QA>,
    pub qc_req: ReqCntServer<QA>,
    pub qc_rx: RxCntServer<QA>,
    pub qc_tx: TxCntServer,
    /// QUERY_QP_COUNTERS's DMA write (`CmdEngine::dma_wr`, passed out).
    pub dma_wr: DmaWrClient,
    /// The command engine's `start` and `done` pulses and `busy` (clearing the tables),
    /// for the responder, which keeps nothing it read while a command may write a table.
    pub m_cmd_start: Signal<Out, Bit>,
    pub m_cmd_done: Signal<Out, Bit>,
    pub m_cmd_busy: Signal<Out, Bit>,
    regs: RegFile,
    cmd: CmdEngine<QA, MA>,
    qc: QpCounters<QA>,
    db_split: DbSplit<QA>,
}

impl<const QA: usize, const MA: usize> Control<QA, MA> {
    pub fn new() -> Self {
        Control {
            clock: Default::default(),
            reset: Default::default(),
            bar: Default::default(),
            port: Default::default(),
            cnt: Default::default(),
            sq_db: Default::default(),
            rq_db: Default::default(),
            cq_db: Default::default(),
            qpev: Default::default(),
            cqev: Default::default(),
            ctx: Default::default(),
            qperr: Default::default(),
            inv: Default::default(),
            qc_resp: Default::default(),
            qc_req: Default::default(),
            qc_rx: Default::default(),
            qc_tx: Default::default(),
            dma_wr: Default::default(),
            qc: Default::default(),
            db_split: Default::default(),
            m_cmd_start: Default::default(),
            m_cmd_done: Default::default(),
            m_cmd_busy: Default::default(),
            regs: RegFile::new(CtrlParams::new(QA, MA)),
            cmd: CmdEngine::new(),
        }
    }
}

impl<const QA: usize, const MA: usize> Default for Control<QA, MA> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const QA: usize, const MA: usize> Logic for Control<QA, MA> {
    #[hdl_gen]
    fn update(&mut self) {
        clock!(self, clock, regs, cmd, qc);
        self.regs.reset.next = self.reset.val();
        self.cmd.reset.next = self.reset.val();
        RegServer::link(&mut self.bar, &mut self.regs.bar);
        PortCfgClient::link(&mut self.port, &mut self.regs.port);
        CntIncServer::link(&mut self.cnt, &mut self.regs.cnt);
        DbClient::join(&mut self.regs.db, &mut self.db_split.s);
        QDbClient::<QA>::link(&mut self.sq_db, &mut self.db_split.sq);
        QDbClient::<QA>::link(&mut self.rq_db, &mut self.db_split.rq);
        CqDbClient::link(&mut self.cq_db, &mut self.regs.cq_db);
        // Register file <-> command engine.
        self.cmd.start.next = self.regs.cmd_start.val();
        self.cmd.opcode.next = self.regs.cmd_opcode.val();
        self.cmd.args.next = self.regs.cmd_args.val();
        self.regs.cmd_busy.next = self.cmd.busy.val();
        self.regs.cmd_done.next = self.cmd.done.val();
        self.m_cmd_start.next = self.regs.cmd_start.val();
        self.m_cmd_done.next = self.cmd.done.val();
        self.m_cmd_busy.next = self.cmd.busy.val();
        self.regs.cmd_status.next = self.cmd.status.val();
        self.regs.cmd_outs.next = self.cmd.outs.val();
        QpEvClient::<QA>::link(&mut self.qpev, &mut self.cmd.qpev);
        CqEvClient::link(&mut self.cqev, &mut self.cmd.cqev);
        CtxServers::<QA, MA>::link(&mut self.ctx, &mut self.cmd.ctx);
        QpErrServer::<QA>::link(&mut self.qperr, &mut self.cmd.qperr);
        InvServer::link(&mut self.inv, &mut self.cmd.inv);
        RespCntServer::<QA>::link(&mut self.qc_resp, &mut self.qc.resp);
        ReqCntServer::<QA>::link(&mut self.qc_req, &mut self.qc.req);
        RxCntServer::<QA>::link(&mut self.qc_rx, &mut self.qc.rx);
        TxCntServer::link(&mut self.qc_tx, &mut self.qc.tx);
        self.qc.reset.next = self.reset.val();
        self.qc.s_op_valid.next = self.cmd.m_qc_valid.val();
        self.qc.s_op_clear.next = self.cmd.m_qc_clear.val();
        self.qc.s_op_qpn.next = self.cmd.m_qc_qpn.val();
        self.cmd.m_qc_ready.next = self.qc.s_op_ready.val();
        self.cmd.s_qc_done.next = self.qc.m_done.val();
        self.cmd.s_qc_cnt.next = self.qc.m_cnt.val();
        DmaWrClient::link(&mut self.dma_wr, &mut self.cmd.dma_wr);
    }
}

/// Directed tests of the register file and the engine through the register port.
#[cfg(test)]
mod directed {
    use crate::bench::Rng;
    use crate::control::driver::Rtl;
    use crate::control::regfile::{DB_CQ, DB_RQ, DB_SQ};
    use rocenic_proto::abi::cmd::{CmdOpcode, CmdStatus, CqArgs, CreateQpArgs, PdArgs};
    use rocenic_proto::abi::regs::{self, Counter};

    fn run(rtl: &mut Rtl, op: CmdOpcode, args: [u32; 16]) -> u32 {
        for (w, v) in args.iter().enumerate() {
            rtl.write(regs::cmd_arg(w as u32), *v);
        }
        rtl.command(u32::from(op), false).0
    }

    #[test]
    fn counters_add_their_increments_and_lo_latches_hi() {
        let mut rtl = Rtl::new(7, 100);
        let mut rng = Rng::new(7);
        let mut want = [0u64; Counter::COUNT];
        // Random increments, byte counts near the 16-bit top so the sums cross 2^32.
        for _ in 0..3000 {
            rtl.inc = rng.next_u64() as u16;
            rtl.tx_bytes = 0xff00 | rng.byte() as u16;
            rtl.rx_bytes = rng.next_u64() as u16;
            for (c, w) in want.iter_mut().enumerate() {
                if rtl.inc >> c & 1 != 0 {
                    *w += match c {
                        1 => u64::from(rtl.tx_bytes),
                        3 => u64::from(rtl.rx_bytes),
                        _ => 1,
                    };
                }
            }
            rtl.step();
        }
        // Crossing 2^32 takes 66k cycles here (see the CounterBank leaf test for that);
        // this run checks the sums, carries through the low word and the latch.
        assert!(want[Counter::TxBytes as usize] > 1 << 24);
        for c in Counter::ALL {
            let lo = rtl.read(regs::counter_lo(c));
            // Increments go on between the two reads: HI must be the latched half.
            rtl.inc = 0xffff;
            rtl.tx_bytes = 0xffff;
            rtl.step();
            let hi = rtl.read(regs::counter_hi(c));
            assert_eq!(
                u64::from(hi) << 32 | u64::from(lo),
                want[c as usize],
                "{}",
                c.name()
            );
            for (k, w) in want.iter_mut().enumerate() {
                *w += match k {
                    1 => 0xffff,
                    3 => 0, // rx_bytes was 0 in that cycle
                    _ => 1,
                };
            }
        }
        // One latch for all counters, as in the model: HI of another counter reads it too.
        let lo = rtl.read(regs::counter_lo(Counter::TxBytes));
        let _ = lo;
        let latched = rtl.read(regs::counter_hi(Counter::RxFrames));
        assert_eq!(latched, rtl.read(regs::counter_hi(Counter::TxBytes)));
    }

    #[test]
    fn cycle_counter_runs_and_lo_latches_hi() {
        let mut rtl = Rtl::new(8, 100);
        let a = rtl.read(regs::CYCLE_LO);
        for _ in 0..50 {
            rtl.step();
        }
        let b = rtl.read(regs::CYCLE_LO);
        // 50 idle cycles and the cycle of the first read's transfer.
        assert_eq!(b - a, 51, "one count per cycle");
        assert_eq!(rtl.read(regs::CYCLE_HI), 0, "HI as latched by the LO read");
        let cycles = rtl.bench.cycle();
        assert!(u64::from(b) < cycles, "counts from reset");
    }

    /// Offers a write to `off` for one cycle without a consumer and says whether the
    /// register port would take it.
    fn write_is_taken(rtl: &mut Rtl, off: u32) -> bool {
        let u = &mut rtl.bench.uut;
        u.bar.valid.next = true;
        u.bar.write.next = true;
        u.bar.addr.next = u64::from(off).into();
        u.bar.wdata.next = 7u64.into();
        rtl.bench.settle();
        let taken = rtl.bench.uut.bar.ready.val();
        rtl.bench.uut.bar.valid.next = false;
        taken
    }

    #[test]
    fn doorbells_leave_in_order_and_backpressure_when_full() {
        // Consumers that are never ready: 16 SQ/RQ doorbells fill their FIFO and the 17th
        // write waits, but CQ doorbells still go in (their own FIFO), until 16 of them fill
        // it too.
        let mut rtl = Rtl::new(9, 0);
        let (mut want, mut want_cq) = (vec![], vec![]);
        for i in 0..16u32 {
            let (off, kind, idx) = match i % 2 {
                0 => (regs::sq_doorbell(i), DB_SQ, i),
                _ => (regs::rq_doorbell(255 - i), DB_RQ, 255 - i),
            };
            rtl.write(off, 1000 + i);
            want.push((kind, u64::from(idx), 1000 + i));
        }
        assert!(
            !write_is_taken(&mut rtl, regs::sq_doorbell(3)),
            "an SQ doorbell write waits while the QP doorbell FIFO is full"
        );
        for i in 0..16u32 {
            assert!(
                write_is_taken(&mut rtl, regs::cq_doorbell(i * 7)),
                "CQ doorbell {i} is not held up by the full QP doorbell FIFO"
            );
            rtl.write(regs::cq_doorbell(i * 7), 2000 + i);
            want_cq.push((DB_CQ, u64::from(i * 7), 2000 + i));
        }
        assert!(
            !write_is_taken(&mut rtl, regs::cq_doorbell(1)),
            "a CQ doorbell write waits while the CQ doorbell FIFO is full"
        );
        rtl.bench.uut.bar.addr.next = u64::from(regs::CMD_STATUS).into();
        rtl.bench.uut.bar.write.next = false;
        rtl.bench.uut.bar.valid.next = true;
        rtl.bench.settle();
        assert!(rtl.bench.uut.bar.ready.val(), "other accesses go on");
        rtl.bench.uut.bar.valid.next = false;
        rtl.ready_pct = 100;
        // Out of range (QP 256, CQ 256): no doorbell.
        rtl.write(regs::sq_doorbell(256), 1);
        rtl.write(regs::cq_doorbell(256), 1);
        rtl.write(regs::rq_doorbell(5), 77);
        want.push((DB_RQ, 5, 77));
        for _ in 0..40 {
            rtl.step();
        }
        assert_eq!(rtl.doorbells, want);
        assert_eq!(rtl.cq_doorbells, want_cq);
    }

    #[test]
    fn reset_clears_tables_registers_and_a_running_command() {
        let mut rtl = Rtl::new(10, 100);
        rtl.write(regs::MAC_LO, 0x1234_5678);
        rtl.write(regs::CONTROL, 0xffff_ffff);
        assert_eq!(rtl.read(regs::CONTROL), regs::CONTROL_ENABLE);
        assert!(rtl.bench.uut.port.port_enable.val());
        assert_eq!(
            run(&mut rtl, CmdOpcode::CreatePd, PdArgs { pdn: 3 }.to_args()),
            0
        );
        assert_eq!(
            run(&mut rtl, CmdOpcode::CreatePd, PdArgs { pdn: 3 }.to_args()),
            u32::from(CmdStatus::InUse)
        );
        // Start a command and reset in the middle of it.
        rtl.write(regs::CMD_OPCODE, u32::from(CmdOpcode::DestroyPd));
        rtl.step();
        rtl.reset();
        assert_eq!(rtl.read(regs::CMD_STATUS), 0);
        assert_eq!(rtl.read(regs::MAC_LO), 0);
        assert_eq!(rtl.read(regs::CONTROL), 0);
        assert_eq!(rtl.read(regs::cmd_arg(0)), 0);
        // The PD is gone: creating it again works.
        assert_eq!(
            run(&mut rtl, CmdOpcode::CreatePd, PdArgs { pdn: 3 }.to_args()),
            0
        );
    }

    #[test]
    fn a_command_written_while_one_runs_is_ignored() {
        let mut rtl = Rtl::new(11, 100);
        for (w, v) in (PdArgs { pdn: 1 }).to_args().iter().enumerate() {
            rtl.write(regs::cmd_arg(w as u32), *v);
        }
        rtl.write(regs::CMD_OPCODE, u32::from(CmdOpcode::CreatePd));
        assert_eq!(rtl.read(regs::CMD_STATUS), regs::CMD_STATUS_BUSY);
        rtl.write(regs::CMD_OPCODE, 200); // would be BAD_OPCODE
        let (status, _) = rtl.command(u32::from(CmdOpcode::Nop), false);
        assert_eq!(status, 0);
        // The PD exists: the first command ran, the second was dropped.
        assert_eq!(
            run(&mut rtl, CmdOpcode::CreatePd, PdArgs { pdn: 1 }.to_args()),
            u32::from(CmdStatus::InUse)
        );
    }

    /// QUERY_QP_COUNTERS writes the QP's counters (events from every source, others'
    /// QPs left out) by DMA; a refused write answers DMA_FAULT; CREATE_QP starts from 0.
    #[test]
    fn cmd_query_qp_counters_writes_the_qps_counters_by_dma() {
        use rocenic_proto::abi::cmd::QpCountersArgs;
        let mut rtl = Rtl::new(13, 60);
        assert_eq!(
            run(&mut rtl, CmdOpcode::CreatePd, PdArgs { pdn: 1 }.to_args()),
            0
        );
        let cq = CqArgs {
            cqn: 3,
            log_size: 6,
            ring_iova: 0x1000,
        };
        assert_eq!(run(&mut rtl, CmdOpcode::CreateCq, cq.to_args()), 0);
        let create = |qpn| CreateQpArgs {
            qpn,
            pdn: 1,
            send_cqn: 3,
            recv_cqn: 3,
            sq_iova: 0x4000,
            sq_log_size: 4,
            rq_iova: 0x8000,
            rq_log_size: 4,
        };
        for q in [5, 6] {
            assert_eq!(run(&mut rtl, CmdOpcode::CreateQp, create(q).to_args()), 0);
        }
        // Events: per QP 5 from every source, some on QP 6, some not counted per QP.
        let pulse = |rtl: &mut Rtl, f: &dyn Fn(&mut super::driver::Ctl)| {
            f(&mut rtl.bench.uut);
            rtl.step();
            let u = &mut rtl.bench.uut;
            u.qc_resp.qp_valid.next = false;
            u.qc_resp.duplicates.next = false;
            u.qc_resp.naks_sent.next = false;
            u.qc_resp.dma_faults.next = false;
            u.qc_req.dma_faults.next = false;
            u.qc_req.ack_timeouts.next = false;
            u.qc_req.retransmits.next = false;
            u.qc_rx.valid.next = false;
            u.qc_tx.frame.next = false;
        };
        for i in 0..10u64 {
            pulse(&mut rtl, &|u| {
                u.qc_resp.qp_valid.next = true;
                u.qc_resp.qpn.next = (5 + i % 2).into();
                u.qc_resp.duplicates.next = true;
                u.qc_resp.naks_sent.next = i % 5 == 0;
                u.qc_resp.dma_faults.next = i % 5 == 0;
                u.qc_req.qpn.next = 5u64.into();
                u.qc_req.ack_timeouts.next = true;
                u.qc_req.retransmits.next = true;
                u.qc_req.rtx_qpn.next = 5u64.into();
                u.qc_rx.valid.next = i < 3;
                u.qc_rx.per_qp.next = true;
                u.qc_rx.qpn.next = 5u64.into();
                u.qc_rx.code.next = crate::requester::req_rx_check::CNT_DUP.into();
                u.qc_tx.frame.next = i != 4;
                u.qc_tx.qpn.next = (6 - i % 2).into();
                u.qc_tx.bytes.next = (62 + 100 * i).into();
            });
        }
        // Not per QP: the responder's pulse without its QP valid.
        pulse(&mut rtl, &|u| {
            u.qc_resp.qpn.next = 5u64.into();
            u.qc_resp.duplicates.next = true;
        });
        // Not per QP: the requester's receive pulse without `per_qp`.
        pulse(&mut rtl, &|u| {
            u.qc_rx.valid.next = true;
            u.qc_rx.per_qp.next = false;
            u.qc_rx.qpn.next = 5u64.into();
            u.qc_rx.code.next = crate::requester::req_rx_check::CNT_DUP.into();
        });
        let query = |rtl: &mut Rtl, qpn: u32, iova: u64| {
            let st = run(
                rtl,
                CmdOpcode::QueryQpCounters,
                QpCountersArgs { qpn, iova }.to_args(),
            );
            let w = rtl.dma_writes.last().expect("a DMA write").clone();
            assert_eq!(w.0, iova);
            let c: Vec<u64> =
                w.1.chunks(8)
                    .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
                    .collect();
            (st, c)
        };
        let (st, c) = query(&mut rtl, 5, 0x9000);
        assert_eq!(st, u32::from(CmdStatus::Ok));
        let mut want = [0u64; Counter::COUNT];
        want[Counter::Duplicates as usize] = 5 + 3;
        want[Counter::NaksSent as usize] = 1;
        want[Counter::DmaFaults as usize] = 1;
        want[Counter::AckTimeouts as usize] = 10;
        want[Counter::Retransmits as usize] = 10;
        // TX frames in the odd cycles: 162 + 362 + ... + 962.
        want[Counter::TxFrames as usize] = 5;
        want[Counter::TxBytes as usize] = 5 * 62 + 100 * (1 + 3 + 5 + 7 + 9);
        assert_eq!(c, want, "QP 5");
        let (st, c) = query(&mut rtl, 6, 0xa000);
        assert_eq!(st, u32::from(CmdStatus::Ok));
        let mut want6 = [0u64; Counter::COUNT];
        want6[Counter::Duplicates as usize] = 5;
        want6[Counter::NaksSent as usize] = 1;
        want6[Counter::DmaFaults as usize] = 1;
        // TX frames in the even cycles but 4: 62 + 262 + 662 + 862.
        want6[Counter::TxFrames as usize] = 4;
        want6[Counter::TxBytes as usize] = 4 * 62 + 100 * (2 + 6 + 8);
        assert_eq!(c, want6, "QP 6");
        // A refused write.
        let (st, _) = query(&mut rtl, 5, super::driver::FAULT_IOVA + 0x40);
        assert_eq!(st, u32::from(CmdStatus::DmaFault));
        // Destroyed and created again: zero.
        let mut qpn5 = [0u32; 16];
        qpn5[0] = 5;
        assert_eq!(run(&mut rtl, CmdOpcode::DestroyQp, qpn5), 0);
        assert_eq!(run(&mut rtl, CmdOpcode::CreateQp, create(5).to_args()), 0);
        let (st, c) = query(&mut rtl, 5, 0xb000);
        assert_eq!(st, u32::from(CmdStatus::Ok));
        assert_eq!(c, [0u64; Counter::COUNT], "QP 5 created again");
    }

    #[test]
    fn datapath_reads_a_created_qp_context() {
        let mut rtl = Rtl::new(12, 100);
        assert_eq!(
            run(&mut rtl, CmdOpcode::CreatePd, PdArgs { pdn: 2 }.to_args()),
            0
        );
        let cq = CqArgs {
            cqn: 9,
            log_size: 6,
            ring_iova: 0xabc_0000_1040,
        };
        assert_eq!(run(&mut rtl, CmdOpcode::CreateCq, cq.to_args()), 0);
        let qp = CreateQpArgs {
            qpn: 77,
            pdn: 2,
            send_cqn: 9,
            recv_cqn: 9,
            sq_iova: 0x1_0000_0040,
            sq_log_size: 5,
            rq_iova: 0x2_0000_0080,
            rq_log_size: 7,
        };
        assert_eq!(run(&mut rtl, CmdOpcode::CreateQp, qp.to_args()), 0);
        // Read QP 77's create-time context and CQ 9 on the datapath ports.
        let u = &mut rtl.bench.uut;
        u.ctx.qpc_rd.req_valid.next = true;
        u.ctx.qpc_rd.req_addr.next = 77u64.into();
        u.ctx.cq_rd.req_valid.next = true;
        u.ctx.cq_rd.req_addr.next = 9u64.into();
        rtl.bench.settle();
        assert!(
            rtl.bench.uut.ctx.qpc_rd.req_ready.val(),
            "the engine is idle"
        );
        rtl.step();
        rtl.bench.uut.ctx.qpc_rd.req_valid.next = false;
        rtl.bench.uut.ctx.cq_rd.req_valid.next = false;
        rtl.bench.settle();
        let u = &rtl.bench.uut;
        assert!(u.ctx.qpc_rd.resp_valid.val() && u.ctx.cq_rd.resp_valid.val());
        let e = u.ctx.qpc_rd.resp_data.val();
        use crate::control::ctx_tables::{cq_layout, qpc_layout};
        let f = |name: &str, w: usize| {
            let at = qpc_layout::offset(name);
            (0..w).fold(0u64, |acc, b| acc | (u64::from(e.get_bit(at + b)) << b))
        };
        assert_eq!(f("present", 1), 1);
        assert_eq!(f("pdn", 8), 2);
        assert_eq!(f("send_cqn", 8), 9);
        assert_eq!(f("recv_cqn", 8), 9);
        assert_eq!(f("sq_log", 4), 5);
        assert_eq!(f("sq_ring", 58), 0x1_0000_0040 >> 6);
        assert_eq!(f("rq_log", 4), 7);
        assert_eq!(f("rq_ring", 58), 0x2_0000_0080 >> 6);
        let c = u.ctx.cq_rd.resp_data.val();
        let g = |name: &str, w: usize| {
            let at = cq_layout::offset(name);
            (0..w).fold(0u64, |acc, b| acc | (u64::from(c.get_bit(at + b)) << b))
        };
        assert_eq!(g("refs", 10), 2, "the QP uses CQ 9 for both queues");
        assert_eq!(g("log_size", 4), 6);
        assert_eq!(g("ring", 58), 0xabc_0000_1040 >> 6);
    }
}
