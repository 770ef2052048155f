//! The device: BAR0 registers, the per-cycle schedule, and the Ethernet port.
//!
//! Each tick, in this order: a pending command completes; the RX port takes one frame
//! (it is busy for the frame's beats on a 64-byte bus); expired timers fire; the
//! requester builds packets into the TX pipeline; the TX port sends one frame (responses
//! and ACKs first, then requests); held completions are written to CQs with room.

use crate::config::NicConfig;
use crate::counters::Counters;
use crate::packet::{self, PacketError};
use crate::qp::Qp;
use crate::tables::Tables;
use rocenic_proto::abi::regs::{self, Counter};
use rocenic_proto::abi::{cmd::CmdOpcode, wqe};
use rocenic_proto::device::{Device, DeviceIo, DmaPort, Frame};
use std::collections::{BTreeSet, VecDeque};

/// Bytes per beat on the MAC and DMA buses.
pub const BEAT: u64 = 64;

/// Beats a frame occupies on the 64-byte bus.
pub fn beats(len: usize) -> u64 {
    (len as u64).div_ceil(BEAT).max(1)
}

/// A frame ready (at `ready_at`) to leave the TX port.
#[derive(Debug, Clone)]
pub struct TxFrame {
    pub ready_at: u64,
    pub qpn: u32,
    /// The request PSN, for counting retransmissions (None for responses).
    pub psn: Option<u32>,
    pub frame: Frame,
}

/// The behavioural NIC.
pub struct Nic {
    pub(crate) cfg: NicConfig,
    pub(crate) mac: [u8; 6],
    pub(crate) ip: [u8; 4],
    pub(crate) enabled: bool,
    pub(crate) tables: Tables,
    pub(crate) qps: Vec<Option<Qp>>,
    pub(crate) counters: Counters,
    pub(crate) cmd_args: [u32; 16],
    pub(crate) cmd_out: [u32; 8],
    pub(crate) cmd_status: u32,
    pub(crate) cmd_pending: Option<(CmdOpcode, u64)>,
    pub(crate) now: u64,
    cycle_hi_latch: u32,
    counter_hi_latch: u32,
    rx_free_at: u64,
    rx_backlog: bool,
    tx_free_at: u64,
    /// Responses and ACKs, in the order generated.
    pub(crate) responses: VecDeque<TxFrame>,
    /// Request packets built ahead of the TX port.
    pub(crate) pipeline: VecDeque<TxFrame>,
    /// QPs with requester work (doorbell rung, ops outstanding or to flush).
    pub(crate) active: BTreeSet<u32>,
    /// QPs with a running ACK or RNR timer.
    pub(crate) timed: BTreeSet<u32>,
    /// CQs holding completions.
    pub(crate) cq_dirty: BTreeSet<u32>,
    rr_next: u32,
    requester_blocked: bool,
}

impl Nic {
    pub fn new(cfg: NicConfig) -> Nic {
        assert!(
            cfg.max_qp <= regs::DOORBELL_QPS && cfg.max_qp > 2,
            "max_qp must be in 3..={}",
            regs::DOORBELL_QPS
        );
        assert!(cfg.max_cq <= regs::DOORBELL_CQS, "max_cq too large");
        assert!(cfg.max_mr < 1 << 24, "MR index must fit a key's 24 bits");
        Nic {
            tables: Tables::new(cfg.max_pd, cfg.max_mr, cfg.max_cq),
            qps: vec![None; cfg.max_qp as usize],
            cfg,
            mac: [0; 6],
            ip: [0; 4],
            enabled: false,
            counters: Counters::default(),
            cmd_args: [0; 16],
            cmd_out: [0; 8],
            cmd_status: 0,
            cmd_pending: None,
            now: 0,
            cycle_hi_latch: 0,
            counter_hi_latch: 0,
            rx_free_at: 0,
            rx_backlog: false,
            tx_free_at: 0,
            responses: VecDeque::new(),
            pipeline: VecDeque::new(),
            active: BTreeSet::new(),
            timed: BTreeSet::new(),
            cq_dirty: BTreeSet::new(),
            rr_next: 0,
            requester_blocked: false,
        }
    }

    /// The global counters (also readable through BAR0).
    pub fn counter(&self, c: Counter) -> u64 {
        self.counters.get(c)
    }

    pub(crate) fn qp_mut(&mut self, qpn: u32) -> Option<&mut Qp> {
        self.qps.get_mut(qpn as usize).and_then(|q| q.as_mut())
    }

    /// Counts an event globally and on the QP.
    pub(crate) fn count(&mut self, qpn: Option<u32>, c: Counter, n: u64) {
        self.counters.add(c, n);
        if let Some(qp) = qpn.and_then(|q| self.qp_mut(q)) {
            qp.counters.add(c, n);
        }
    }

    fn read_reg(&mut self, off: u32) -> u32 {
        match off {
            regs::ID => regs::DEVICE_ID,
            regs::ABI_VERSION => (regs::ABI_MAJOR as u32) << 16 | regs::ABI_MINOR as u32,
            regs::MAX_QP => self.cfg.max_qp,
            regs::MAX_CQ => self.cfg.max_cq,
            regs::MAX_MR => self.cfg.max_mr,
            regs::MAX_PD => self.cfg.max_pd,
            regs::MAX_LOG_RING => self.cfg.max_log_ring,
            regs::MAX_SGE => wqe::MAX_SEND_SGE as u32 | (wqe::MAX_RECV_SGE as u32) << 8,
            regs::MAX_INLINE => wqe::MAX_INLINE as u32,
            regs::MAX_RD_ATOMIC => self.cfg.max_rd_atomic as u32 * 0x101,
            regs::CLOCK_MHZ => 250,
            regs::MAC_HI => regs::mac_to_regs(self.mac).0,
            regs::MAC_LO => regs::mac_to_regs(self.mac).1,
            regs::IPV4_ADDR => u32::from_be_bytes(self.ip),
            regs::CONTROL => self.enabled as u32,
            regs::CYCLE_LO => {
                self.cycle_hi_latch = (self.now >> 32) as u32;
                self.now as u32
            }
            regs::CYCLE_HI => self.cycle_hi_latch,
            regs::CMD_STATUS => self.cmd_status,
            o if (regs::cmd_arg(0)..regs::cmd_arg(regs::CMD_ARG_WORDS)).contains(&o) => {
                self.cmd_args[((o - regs::cmd_arg(0)) / 4) as usize]
            }
            o if (regs::cmd_out(0)..regs::cmd_out(regs::CMD_OUT_WORDS)).contains(&o) => {
                self.cmd_out[((o - regs::cmd_out(0)) / 4) as usize]
            }
            o if (regs::counter_lo(Counter::TxFrames)
                ..regs::counter_lo(Counter::TxFrames) + 8 * Counter::COUNT as u32)
                .contains(&o) =>
            {
                let i = ((o - regs::counter_lo(Counter::TxFrames)) / 8) as usize;
                let v = self.counters.get(Counter::ALL[i]);
                if o % 8 == 0 {
                    self.counter_hi_latch = (v >> 32) as u32;
                    v as u32
                } else {
                    self.counter_hi_latch
                }
            }
            _ => 0,
        }
    }

    fn write_reg(&mut self, off: u32, v: u32) {
        self.requester_blocked = false;
        match off {
            regs::MAC_HI => self.mac = regs::mac_from_regs(v, regs::mac_to_regs(self.mac).1),
            regs::MAC_LO => self.mac = regs::mac_from_regs(regs::mac_to_regs(self.mac).0, v),
            regs::IPV4_ADDR => self.ip = v.to_be_bytes(),
            regs::CONTROL => self.enabled = v & regs::CONTROL_ENABLE != 0,
            // A command written while one runs is refused rather than queued.
            regs::CMD_OPCODE if self.cmd_pending.is_none() => {
                self.cmd_status = regs::CMD_STATUS_BUSY;
                self.cmd_pending = Some((CmdOpcode::from(v), self.now + self.cfg.cmd_latency));
            }
            o if (regs::cmd_arg(0)..regs::cmd_arg(regs::CMD_ARG_WORDS)).contains(&o) => {
                self.cmd_args[((o - regs::cmd_arg(0)) / 4) as usize] = v;
            }
            o if (regs::sq_doorbell(0)..regs::sq_doorbell(self.cfg.max_qp)).contains(&o) => {
                let qpn = (o - regs::sq_doorbell(0)) / 8;
                let sq = o % 8 == 0;
                if let Some(qp) = self.qp_mut(qpn) {
                    if sq {
                        qp.req.sq_pi = v;
                    } else {
                        qp.resp.rq_pi = v;
                    }
                    self.active.insert(qpn);
                }
            }
            o if (regs::cq_doorbell(0)..regs::cq_doorbell(self.cfg.max_cq)).contains(&o) => {
                let cqn = (o - regs::cq_doorbell(0)) / 4;
                if let Some(cq) = self.tables.cqs[cqn as usize].as_mut() {
                    cq.ci = v;
                    self.cq_dirty.insert(cqn);
                }
            }
            _ => {}
        }
    }

    fn receive(&mut self, frame: Frame, dma: &mut dyn DmaPort) {
        if !self.enabled {
            return;
        }
        match packet::parse(&frame) {
            Ok(pkt) => {
                if self.ip != [0; 4] && pkt.dst_ip != self.ip {
                    self.count(None, Counter::UnknownQpDrops, 1);
                    return;
                }
                self.count(None, Counter::RxFrames, 1);
                self.count(None, Counter::RxBytes, frame.len() as u64);
                if pkt.hdr.opcode.is_request() {
                    self.responder_rx(&pkt, dma);
                } else {
                    self.requester_rx(&pkt, dma);
                }
            }
            Err(PacketError::Icrc) => self.count(None, Counter::IcrcDrops, 1),
            Err(PacketError::Malformed) => self.count(None, Counter::MalformedDrops, 1),
        }
    }

    fn send_one(&mut self, io: &mut DeviceIo<'_>) {
        let now = self.now;
        let from_responses = self.responses.front().is_some_and(|f| f.ready_at <= now);
        let f = if from_responses {
            self.responses.pop_front()
        } else if self.pipeline.front().is_some_and(|f| f.ready_at <= now) {
            self.pipeline.pop_front()
        } else {
            None
        };
        let Some(f) = f else { return };
        self.tx_free_at = now + beats(f.frame.len());
        self.count(Some(f.qpn), Counter::TxFrames, 1);
        self.count(Some(f.qpn), Counter::TxBytes, f.frame.len() as u64);
        if let Some(psn) = f.psn {
            self.note_request_sent(f.qpn, psn);
        }
        io.tx.push(f.frame);
    }

    fn fill_pipeline(&mut self, dma: &mut dyn DmaPort) {
        self.requester_blocked = false;
        while self.pipeline.len() < self.cfg.tx_pipeline_depth {
            // Round-robin over active QPs, starting after the last one served.
            let order: Vec<u32> = self
                .active
                .range(self.rr_next..)
                .chain(self.active.range(..self.rr_next))
                .copied()
                .collect();
            let mut progressed = false;
            for qpn in order {
                if self.requester_step(qpn, dma) {
                    self.rr_next = qpn + 1;
                    progressed = true;
                    break;
                }
            }
            if !progressed {
                self.requester_blocked = true;
                break;
            }
        }
    }

    fn flush_cqs(&mut self, dma: &mut dyn DmaPort) {
        let dirty: Vec<u32> = self.cq_dirty.iter().copied().collect();
        for cqn in dirty {
            let now = self.now;
            let mut faults = 0;
            let mut empty = true;
            if let Some(cq) = self.tables.cqs[cqn as usize].as_mut() {
                faults = cq.flush(now, dma);
                empty = cq.held.is_empty();
            }
            if faults > 0 {
                self.count(None, Counter::DmaFaults, faults);
            }
            if empty {
                self.cq_dirty.remove(&cqn);
            }
        }
    }
}

impl Device for Nic {
    fn bar_read(&mut self, offset: u32) -> u32 {
        self.read_reg(offset)
    }

    fn bar_write(&mut self, offset: u32, value: u32) {
        self.write_reg(offset, value)
    }

    fn tick(&mut self, now: u64, io: &mut DeviceIo<'_>) {
        self.now = now;
        if let Some((op, at)) = self.cmd_pending {
            if at <= now {
                self.cmd_pending = None;
                let status = self.execute(op, io.dma);
                self.cmd_status = u32::from(status);
            }
        }
        if self.rx_free_at <= now {
            if let Some(frame) = io.rx.pop_front() {
                self.rx_free_at = now + beats(frame.len());
                self.receive(frame, io.dma);
            }
        }
        self.rx_backlog = !io.rx.is_empty();
        self.fire_timers(io.dma);
        self.fill_pipeline(io.dma);
        if self.tx_free_at <= now {
            self.send_one(io);
        }
        self.flush_cqs(io.dma);
    }

    fn next_event(&self, now: u64) -> Option<u64> {
        let soon = now + 1;
        let mut ev: Option<u64> = None;
        let mut at = |t: u64| ev = Some(ev.map_or(t, |e: u64| e.min(t)));
        if let Some((_, t)) = self.cmd_pending {
            at(t.max(soon));
        }
        if self.rx_backlog {
            at(self.rx_free_at.max(soon));
        }
        for q in [&self.responses, &self.pipeline] {
            if let Some(f) = q.front() {
                at(f.ready_at.max(self.tx_free_at).max(soon));
            }
        }
        if !self.requester_blocked && !self.active.is_empty() {
            at(soon);
        }
        if !self.cq_dirty.is_empty() {
            // Held completions wait for a CQ doorbell, which is a register write.
            let room = self.cq_dirty.iter().any(|&c| {
                self.tables.cqs[c as usize]
                    .as_ref()
                    .is_some_and(|cq| cq.pi.wrapping_sub(cq.ci) < (1u32 << cq.log_size))
            });
            if room {
                at(soon);
            }
        }
        for &qpn in &self.timed {
            if let Some(qp) = self.qps[qpn as usize].as_ref() {
                for t in [qp.req.ack_deadline, qp.req.rnr_until]
                    .into_iter()
                    .flatten()
                {
                    at(t.max(soon));
                }
            }
        }
        ev
    }
}
