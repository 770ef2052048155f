//! The register-port driver of a [`Control`] under RustHDL simulation, shared by the
//! control plane's benches (its directed bench here, its bench against the model in
//! `hdl/tests/against_model/control.rs`): register reads and writes as the host does them,
//! with the doorbells and QP events the block hands out collected on the way.

use super::*;
use crate::bench::{Bench, Rng};
use crate::control::regfile::{DB_CQ, DB_RQ, DB_SQ};
use rocenic_proto::abi::regs;

pub type Ctl = Control<{ crate::QP_LOG }, { crate::MR_LOG }>;

/// A doorbell as it left the FIFO: (kind, index, value).
pub type Db = (u64, u64, u32);

pub struct Rtl {
    pub bench: Bench<Ctl>,
    rng: Rng,
    /// Percent of cycles the doorbell and event consumers are ready.
    pub ready_pct: u32,
    /// SQ/RQ doorbells, in the order they left.
    pub doorbells: Vec<Db>,
    /// CQ doorbells (kind `DB_CQ`), in the order they left.
    pub cq_doorbells: Vec<Db>,
    pub events: Vec<(u64, u64)>,
    /// Counter increments to apply in the next cycle, then cleared.
    pub inc: u16,
    pub tx_bytes: u16,
    pub rx_bytes: u16,
    /// DMA writes (QUERY_QP_COUNTERS) as they completed: (IOVA, bytes, refused).
    pub dma_writes: Vec<(u64, Vec<u8>, bool)>,
    /// The write whose beats are arriving; statuses due: (cycle, refused).
    wr_cur: Option<(u64, Vec<u8>)>,
    wr_status: std::collections::VecDeque<(u64, bool)>,
    cycle: u64,
}

/// IOVAs from here up are refused by the benches' host memory (RTL and model).
pub const FAULT_IOVA: u64 = 1 << 63;

impl Rtl {
    /// A block after reset, its tables cleared (CMD_STATUS no longer busy).
    pub fn new(seed: u64, ready_pct: u32) -> Rtl {
        let mut rtl = Rtl {
            bench: Bench::new(Ctl::new(), |u| &mut u.clock),
            rng: Rng::new(seed),
            ready_pct,
            doorbells: vec![],
            cq_doorbells: vec![],
            events: vec![],
            inc: 0,
            tx_bytes: 0,
            rx_bytes: 0,
            dma_writes: vec![],
            wr_cur: None,
            wr_status: Default::default(),
            cycle: 0,
        };
        rtl.reset();
        rtl
    }

    /// Reset for one cycle, then wait for the table clear to finish.
    pub fn reset(&mut self) {
        self.bench.uut.reset.next = true;
        self.step();
        self.bench.uut.reset.next = false;
        let mut n = 0;
        while self.read(regs::CMD_STATUS) & regs::CMD_STATUS_BUSY != 0 {
            n += 1;
            assert!(n < 3000, "table clear never ended");
        }
    }

    /// One cycle: settle, collect what the consumers took, tick.
    pub fn step(&mut self) {
        let ready = self.rng.percent(self.ready_pct);
        let u = &mut self.bench.uut;
        u.sq_db.ready.next = ready;
        u.rq_db.ready.next = ready;
        u.cq_db.ready.next = ready;
        u.qpev.ready.next = ready;
        u.cqev.ready.next = ready;
        u.cnt.inc.next = u64::from(self.inc).into();
        u.cnt.tx_bytes.next = u64::from(self.tx_bytes).into();
        u.cnt.rx_bytes.next = u64::from(self.rx_bytes).into();
        let wr_ready = self.rng.percent(self.ready_pct.max(20));
        u.dma_wr.req_ready.next = wr_ready && self.wr_cur.is_none();
        u.dma_wr.data_ready.next = wr_ready;
        let st = self
            .wr_status
            .front()
            .filter(|s| s.0 <= self.cycle)
            .copied();
        u.dma_wr.status_valid.next = st.is_some();
        u.dma_wr.status_err.next = st.is_some_and(|s| s.1);
        if st.is_some() {
            self.wr_status.pop_front();
        }
        self.bench.settle();
        let u = &self.bench.uut;
        for (kind, db) in [(DB_SQ, &u.sq_db), (DB_RQ, &u.rq_db)] {
            if db.valid.val() && db.ready.val() {
                self.doorbells
                    .push((kind, db.qpn.val().to_u64(), db.pi.val().to_u32()));
            }
        }
        if u.cq_db.valid.val() && u.cq_db.ready.val() {
            self.cq_doorbells
                .push((DB_CQ, u.cq_db.cqn.val().to_u64(), u.cq_db.ci.val().to_u32()));
        }
        if u.qpev.valid.val() && u.qpev.ready.val() {
            self.events
                .push((u.qpev.kind.val().to_u64(), u.qpev.qpn.val().to_u64()));
        }
        if u.dma_wr.req_valid.val() && u.dma_wr.req_ready.val() {
            assert_eq!(
                u.dma_wr.req_len.val().to_u64(),
                128,
                "QUERY_QP_COUNTERS length"
            );
            self.wr_cur = Some((u.dma_wr.req_addr.val().to_u64(), vec![]));
        }
        if u.dma_wr.data_valid.val() && u.dma_wr.data_ready.val() {
            let (addr, mut bytes) = self.wr_cur.take().expect("data after a request");
            assert_eq!(u.dma_wr.data_keep.val().to_u64(), u64::MAX, "whole beats");
            bytes.extend(crate::common::icrc::bytes_from_beat(&u.dma_wr.data.val()));
            if u.dma_wr.data_last.val() {
                let refused = addr >= FAULT_IOVA;
                self.dma_writes.push((addr, bytes, refused));
                self.wr_status.push_back((self.cycle + 3, refused));
            } else {
                self.wr_cur = Some((addr, bytes));
            }
        }
        self.bench.tick();
        self.cycle += 1;
        self.inc = 0;
        self.tx_bytes = 0;
        self.rx_bytes = 0;
    }

    /// Offers one access until it is taken; returns the read data for a read.
    fn access(&mut self, write: bool, off: u32, v: u32) -> Option<u32> {
        let u = &mut self.bench.uut;
        u.bar.valid.next = true;
        u.bar.write.next = write;
        u.bar.addr.next = u64::from(off).into();
        u.bar.wdata.next = u64::from(v).into();
        let mut n = 0;
        loop {
            self.bench.settle();
            let taken = self.bench.uut.bar.ready.val();
            self.step();
            if taken {
                break;
            }
            n += 1;
            assert!(n < 1000, "register access at {off:#x} never taken");
        }
        self.bench.uut.bar.valid.next = false;
        if write {
            return None;
        }
        // The answer comes exactly one cycle after the read is taken.
        self.bench.settle();
        assert!(
            self.bench.uut.bar.rdata_valid.val(),
            "no read data one cycle after the read of {off:#x}"
        );
        Some(self.bench.uut.bar.rdata.val().to_u32())
    }

    pub fn write(&mut self, off: u32, v: u32) {
        self.access(true, off, v);
    }

    pub fn read(&mut self, off: u32) -> u32 {
        self.access(false, off, 0).expect("read data")
    }

    /// Runs a command (arguments already written); returns its status and result words
    /// (all of them, or only word `opcode % 8`, the others left 0).
    pub fn command(&mut self, opcode: u32, all_outs: bool) -> (u32, [u32; 8]) {
        self.write(regs::CMD_OPCODE, opcode);
        let mut n = 0;
        let status = loop {
            let s = self.read(regs::CMD_STATUS);
            if s & regs::CMD_STATUS_BUSY == 0 {
                break s;
            }
            n += 1;
            assert!(n < 200, "command {opcode} never finished");
        };
        let mut outs = [0; 8];
        for (i, o) in outs.iter_mut().enumerate() {
            if all_outs || i == (opcode as usize) % 8 {
                *o = self.read(regs::cmd_out(i as u32));
            }
        }
        (status, outs)
    }
}
