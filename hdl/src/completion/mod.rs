//! `Completion`: the completion engine. Owns the CQ table and writes CQEs into the host's
//! CQ rings by DMA with the ABI's phase rule (`rocenic_proto::abi::cqe`).
//!
//! ```text
//!  s_cfg (CREATE_CQ) --+                       +--> dma_wr.req / dma_wr.data (one 64-B write)
//!  s_db (CQ doorbell) -+--> CQ table (BRAM) ---+
//!  cqe   (completion) -+    cfg | pi | ci      +<-- dma_wr.status (a refused write: m_dma_fault)
//! ```
//!
//! Matches the model's `Cq` (`model/src/tables.rs`): the `k`-th CQE of a CQ of `2^log`
//! entries goes to slot `k mod 2^log` at `ring + 64·slot` with phase `((k >> log) & 1) ^ 1`,
//! and is written only while `k - ci < 2^log` (`ci` from the CQ doorbell); otherwise the
//! engine waits for the host to consume (the model holds such CQEs in a queue instead and
//! goes on; the RTL holds its input, so its producers stall: only timing differs). A write
//! the IOMMU refuses is counted (`m_dma_fault`) and the CQE is gone, as in the model.
//!
//! State: three simple dual-port RAMs of [`CQS`] entries, one per writer so no port is
//! shared: `cfg` {ring IOVA >> 6, log} written by CREATE_CQ, `pi` written by this engine
//! (and zeroed by CREATE_CQ), `ci` written by the doorbell (and zeroed by CREATE_CQ).
//! CREATE_CQ has priority over doorbells and is taken only between CQEs.
//!
//! Throughput: one CQE every 4 cycles (look up, check space, request, data) when the port
//! keeps up — 62.5 M CQEs/s at 250 MHz, above the message rate of 100 GbE for messages
//! of 256 B and more; smaller messages are usually posted unsignaled.
//! Latency: `cqe` transfer to `dma_wr.req_valid`: 2 cycles.

pub mod cqe_beat;

use crate::bus::cqe::CqeServer;
use crate::bus::ctl::CqEvServer;
use crate::bus::dma_wr::DmaWrClient;
use crate::bus::reg::CqDbServer;
use crate::common::cat::Cat;
use crate::completion::cqe_beat::{CqeBeat, CQE_BITS, CQE_BYTES};
use crate::prelude::*;

// A CQE is one DMA write beat.
const _: () = assert!(CQE_BITS == crate::common::icrc::DATA_BITS);

/// CQ numbers are 0..CQS (`MAX_CQ`; the model's default).
pub const CQS: usize = 256;
pub const CQN_BITS: usize = 8;
/// Largest ring as log2 of its entries (`MAX_LOG_RING`; the model's default).
pub const MAX_LOG_RING: usize = 15;
/// Width of a ring's log2 size.
pub const LOG_BITS: usize = 4;
/// A 64-byte-aligned IOVA without its six zero bits.
pub const IOVA64_BITS: usize = 58;
const CFG_BITS: usize = IOVA64_BITS + LOG_BITS;

const _: () = assert!(CQS == 1 << CQN_BITS);
const _: () = assert!(MAX_LOG_RING < 1 << LOG_BITS);
// `update` slices the cfg word at the literal offset 4.
const _: () = assert!(LOG_BITS == 4);

/// FSM states.
const IDLE: u64 = 0;
const LOOK: u64 = 1;
const REQ: u64 = 2;
const DATA: u64 = 3;

#[derive(LogicBlock)]
pub struct Completion {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,

    /// CREATE_CQ: ring IOVA (64-byte aligned, without its low six bits) and log2 entries
    /// (the command FSM has checked both). Zeroes the CQ's producer and consumer index.
    pub cfg: CqEvServer,

    /// CQ doorbell: the host's new consumer index (the CQ is the low `CQN_BITS` of
    /// `cqn`).
    pub db: CqDbServer,

    /// A completion to write (the CQE fields of `rocenic_proto::abi::cqe::Cqe`).
    pub cqe: CqeServer,

    /// DMA write port (through the write mux).
    pub dma_wr: DmaWrClient,
    /// One pulse per CQE write the IOMMU refused (`Counter::DmaFaults`).
    pub m_dma_fault: Signal<Out, Bit>,

    cfg_ram: RAM<Bits<CFG_BITS>, CQN_BITS>,
    /// The producer index, kept as wide as an IOVA so that its slot offset needs no
    /// widening (only its low 32 bits count, as the ABI's free-running u32).
    pi_ram: RAM<Bits<IOVA64_BITS>, CQN_BITS>,
    ci_ram: RAM<Bits<32>, CQN_BITS>,
    cfg_word: Cat<IOVA64_BITS, LOG_BITS, CFG_BITS>,
    addr_cat: Cat<IOVA64_BITS, 6, 64>,
    beat: CqeBeat,

    state: DFF<Bits<2>>,
    cqn: DFF<Bits<CQN_BITS>>,
    wr_id: DFF<Bits<64>>,
    byte_len: DFF<Bits<32>>,
    imm: DFF<Bits<32>>,
    qp_num: DFF<Bits<24>>,
    src_qp: DFF<Bits<24>>,
    wqe_index: DFF<Bits<32>>,
    opcode: DFF<Bits<8>>,
    status: DFF<Bits<8>>,
    wc_flags: DFF<Bits<8>>,
    vendor_err: DFF<Bits<8>>,
    phase: DFF<Bit>,
    addr64: DFF<Bits<IOVA64_BITS>>,

    st_idle: Constant<Bits<2>>,
    st_look: Constant<Bits<2>>,
    st_req: Constant<Bits<2>>,
    st_data: Constant<Bits<2>>,
    zero32: Constant<Bits<32>>,
    /// A doorbell's CQ number above `CQN_BITS`.
    unused_db_cqn: Signal<Local, Bits<16>>,
    one32: Constant<Bits<32>>,
    zero58: Constant<Bits<IOVA64_BITS>>,
    one58: Constant<Bits<IOVA64_BITS>>,
    zero6: Constant<Bits<6>>,
    cqe_len: Constant<Bits<16>>,
    all_keep: Constant<Bits<CQE_BYTES>>,

    take_cfg: Signal<Local, Bit>,
    take_cqe: Signal<Local, Bit>,
    ring_log: Signal<Local, Bits<LOG_BITS>>,
    ring_iova64: Signal<Local, Bits<IOVA64_BITS>>,
    pi: Signal<Local, Bits<IOVA64_BITS>>,
    pi32: Signal<Local, Bits<32>>,
    entries: Signal<Local, Bits<32>>,
    room: Signal<Local, Bit>,
    slot: Signal<Local, Bits<IOVA64_BITS>>,
    slot_addr: Signal<Local, Bits<IOVA64_BITS>>,
}

impl Default for Completion {
    fn default() -> Self {
        Completion {
            clock: Default::default(),
            reset: Default::default(),
            cfg: Default::default(),
            db: Default::default(),
            cqe: Default::default(),
            dma_wr: Default::default(),
            m_dma_fault: Default::default(),
            cfg_ram: Default::default(),
            pi_ram: Default::default(),
            ci_ram: Default::default(),
            cfg_word: Default::default(),
            addr_cat: Default::default(),
            beat: Default::default(),
            state: Default::default(),
            cqn: Default::default(),
            wr_id: Default::default(),
            byte_len: Default::default(),
            imm: Default::default(),
            qp_num: Default::default(),
            src_qp: Default::default(),
            wqe_index: Default::default(),
            opcode: Default::default(),
            status: Default::default(),
            wc_flags: Default::default(),
            vendor_err: Default::default(),
            phase: Default::default(),
            addr64: Default::default(),
            st_idle: Constant::new(IDLE.to_bits()),
            st_look: Constant::new(LOOK.to_bits()),
            st_req: Constant::new(REQ.to_bits()),
            st_data: Constant::new(DATA.to_bits()),
            zero32: Constant::new(0u64.to_bits()),
            unused_db_cqn: Default::default(),
            one32: Constant::new(1u64.to_bits()),
            zero58: Constant::new(0u64.to_bits()),
            one58: Constant::new(1u64.to_bits()),
            zero6: Constant::new(0u64.to_bits()),
            cqe_len: Constant::new((CQE_BYTES as u64).to_bits()),
            all_keep: Constant::new(u64::MAX.to_bits()),
            take_cfg: Default::default(),
            take_cqe: Default::default(),
            ring_log: Default::default(),
            ring_iova64: Default::default(),
            pi: Default::default(),
            pi32: Default::default(),
            entries: Default::default(),
            room: Default::default(),
            slot: Default::default(),
            slot_addr: Default::default(),
        }
    }
}

impl Logic for Completion {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, state, cqn, wr_id, byte_len, imm, qp_num, src_qp, wqe_index, opcode,
            status, wc_flags, vendor_err, phase, addr64
        );
        self.cfg_ram.read_clock.next = self.clock.val();
        self.cfg_ram.write_clock.next = self.clock.val();
        self.pi_ram.read_clock.next = self.clock.val();
        self.pi_ram.write_clock.next = self.clock.val();
        self.ci_ram.read_clock.next = self.clock.val();
        self.ci_ram.write_clock.next = self.clock.val();

        // The looked-up CQ (valid in LOOK): the ring's log, base, pi and ci are out of the RAMs; room for one more?
        self.ring_log.next = self.cfg_ram.read_data.val().get_bits::<LOG_BITS>(0);
        // Offset 4 = LOG_BITS (a literal: RustHDL writes a const name into the Verilog).
        self.ring_iova64.next = self.cfg_ram.read_data.val().get_bits::<IOVA64_BITS>(4);
        self.pi.next = self.pi_ram.read_data.val();
        self.pi32.next = self.pi.val().get_bits::<32>(0);
        self.entries.next = self.one32.val() << self.ring_log.val();
        self.room.next = (self.pi32.val() - self.ci_ram.read_data.val()) < self.entries.val();
        self.slot.next =
            self.pi.val() & ((self.one58.val() << self.ring_log.val()) - self.one58.val());
        // In units of 64 bytes, as the ring base.
        self.slot_addr.next = self.ring_iova64.val() + self.slot.val();

        // ---- CREATE_CQ (only between CQEs) and doorbells ----
        self.take_cfg.next = self.cfg.valid.val() & (self.state.q.val() == self.st_idle.val());
        self.cfg.ready.next = self.state.q.val() == self.st_idle.val();
        self.db.ready.next = !self.take_cfg.val();
        self.unused_db_cqn.next = self.db.cqn.val();
        self.cfg_word.hi.next = self.cfg.iova64.val();
        self.cfg_word.lo.next = self.cfg.log.val();
        self.cfg_ram.write_address.next = self.cfg.cqn.val();
        self.cfg_ram.write_data.next = self.cfg_word.y.val();
        self.cfg_ram.write_enable.next = self.take_cfg.val();
        if self.take_cfg.val() {
            self.ci_ram.write_address.next = self.cfg.cqn.val();
            self.ci_ram.write_data.next = self.zero32.val();
            self.ci_ram.write_enable.next = true;
        } else {
            self.ci_ram.write_address.next = self.db.cqn.val().get_bits::<CQN_BITS>(0);
            self.ci_ram.write_data.next = self.db.ci.val();
            self.ci_ram.write_enable.next = self.db.valid.val();
        }

        // ---- CQEs ----
        self.take_cqe.next = self.cqe.valid.val()
            & !self.cfg.valid.val()
            & (self.state.q.val() == self.st_idle.val());
        self.cqe.ready.next = !self.cfg.valid.val() & (self.state.q.val() == self.st_idle.val());
        // The RAMs read at the CQE's CQN while idle, at the latched one after.
        if self.state.q.val() == self.st_idle.val() {
            self.cfg_ram.read_address.next = self.cqe.cqn.val();
            self.pi_ram.read_address.next = self.cqe.cqn.val();
            self.ci_ram.read_address.next = self.cqe.cqn.val();
        } else {
            self.cfg_ram.read_address.next = self.cqn.q.val();
            self.pi_ram.read_address.next = self.cqn.q.val();
            self.ci_ram.read_address.next = self.cqn.q.val();
        }
        if self.take_cqe.val() {
            self.cqn.d.next = self.cqe.cqn.val();
            self.wr_id.d.next = self.cqe.wr_id.val();
            self.byte_len.d.next = self.cqe.byte_len.val();
            self.imm.d.next = self.cqe.imm.val();
            self.qp_num.d.next = self.cqe.qp_num.val();
            self.src_qp.d.next = self.cqe.src_qp.val();
            self.wqe_index.d.next = self.cqe.wqe_index.val();
            self.opcode.d.next = self.cqe.opcode.val();
            self.status.d.next = self.cqe.status.val();
            self.wc_flags.d.next = self.cqe.wc_flags.val();
            self.vendor_err.d.next = self.cqe.vendor_err.val();
            self.state.d.next = self.st_look.val();
        }

        self.pi_ram.write_address.next = self.cqn.q.val();
        self.pi_ram.write_enable.next = false;
        if self.take_cfg.val() {
            self.pi_ram.write_address.next = self.cfg.cqn.val();
            self.pi_ram.write_data.next = self.zero58.val();
            self.pi_ram.write_enable.next = true;
        } else {
            self.pi_ram.write_data.next = self.pi.val() + self.one58.val();
        }
        if (self.state.q.val() == self.st_look.val()) & self.room.val() {
            self.addr64.d.next = self.slot_addr.val();
            // Phase: bit `log` of the producer index, inverted.
            self.phase.d.next = (self.pi32.val() & self.entries.val()) == self.zero32.val();
            self.pi_ram.write_enable.next = true;
            self.state.d.next = self.st_req.val();
        }

        // REQ, DATA: one 64-byte write.
        self.addr_cat.hi.next = self.addr64.q.val();
        self.addr_cat.lo.next = self.zero6.val();
        self.dma_wr.req_addr.next = self.addr_cat.y.val();
        self.dma_wr.req_len.next = self.cqe_len.val();
        self.dma_wr.req_valid.next = self.state.q.val() == self.st_req.val();
        if (self.state.q.val() == self.st_req.val()) & self.dma_wr.req_ready.val() {
            self.state.d.next = self.st_data.val();
        }
        self.beat.wr_id.next = self.wr_id.q.val();
        self.beat.byte_len.next = self.byte_len.q.val();
        self.beat.imm.next = self.imm.q.val();
        self.beat.qp_num.next = self.qp_num.q.val();
        self.beat.src_qp.next = self.src_qp.q.val();
        self.beat.wqe_index.next = self.wqe_index.q.val();
        self.beat.opcode.next = self.opcode.q.val();
        self.beat.status.next = self.status.q.val();
        self.beat.wc_flags.next = self.wc_flags.q.val();
        self.beat.vendor_err.next = self.vendor_err.q.val();
        self.beat.phase.next = self.phase.q.val();
        self.dma_wr.data.next = self.beat.y.val();
        self.dma_wr.data_keep.next = self.all_keep.val();
        self.dma_wr.data_last.next = true;
        self.dma_wr.data_valid.next = self.state.q.val() == self.st_data.val();
        if (self.state.q.val() == self.st_data.val()) & self.dma_wr.data_ready.val() {
            self.state.d.next = self.st_idle.val();
        }

        self.m_dma_fault.next = self.dma_wr.status_valid.val() & self.dma_wr.status_err.val();

        if self.reset.val() {
            self.state.d.next = self.st_idle.val();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{Bench, Pattern, Rng};
    use crate::common::icrc::bytes_from_beat;
    use rocenic_proto::abi::cqe::{phase_of, Cqe};
    use rocenic_proto::abi::verbs::{WcOpcode, WcStatus};
    use std::collections::VecDeque;

    /// The host's view of one CQ.
    #[derive(Clone, Debug)]
    struct HostCq {
        cqn: u8,
        log: u32,
        iova: u64,
        /// CQEs written so far (k of the next), and consumed (the doorbell value).
        written: u32,
        ci: u32,
        /// CQEs sent to the engine for this CQ, in order, not yet seen written.
        pending: VecDeque<Cqe>,
    }

    fn random_cqe(rng: &mut Rng) -> Cqe {
        Cqe {
            wr_id: rng.next_u64(),
            byte_len: rng.next_u64() as u32,
            imm_or_inv: rng.next_u64() as u32,
            qp_num: rng.below(1 << 24) as u32,
            src_qp: rng.below(1 << 24) as u32,
            wqe_index: rng.next_u64() as u32,
            opcode: WcOpcode::from(rng.byte()),
            status: WcStatus::from(rng.byte()),
            wc_flags: rng.byte(),
            vendor_err: rng.byte(),
            phase: 0,
        }
    }

    fn drive_cqe(u: &mut Completion, cqn: u8, c: &Cqe) {
        u.cqe.cqn.next = u64::from(cqn).into();
        u.cqe.wr_id.next = c.wr_id.into();
        u.cqe.byte_len.next = u64::from(c.byte_len).into();
        u.cqe.imm.next = u64::from(c.imm_or_inv).into();
        u.cqe.qp_num.next = u64::from(c.qp_num).into();
        u.cqe.src_qp.next = u64::from(c.src_qp).into();
        u.cqe.wqe_index.next = u64::from(c.wqe_index).into();
        u.cqe.opcode.next = u64::from(u8::from(c.opcode)).into();
        u.cqe.status.next = u64::from(u8::from(c.status)).into();
        u.cqe.wc_flags.next = u64::from(c.wc_flags).into();
        u.cqe.vendor_err.next = u64::from(c.vendor_err).into();
    }

    fn reset(b: &mut Bench<Completion>) {
        b.uut.reset.next = true;
        b.tick();
        b.uut.reset.next = false;
    }

    /// Creates `cq` through the cfg port (waiting for ready).
    fn create(b: &mut Bench<Completion>, cq: &HostCq) {
        b.uut.cfg.valid.next = true;
        b.uut.cfg.cqn.next = u64::from(cq.cqn).into();
        b.uut.cfg.iova64.next = (cq.iova >> 6).into();
        b.uut.cfg.log.next = u64::from(cq.log).into();
        for _ in 0..20 {
            b.settle();
            let done = b.uut.cfg.ready.val();
            b.tick();
            if done {
                b.uut.cfg.valid.next = false;
                return;
            }
        }
        panic!("CREATE_CQ not taken");
    }

    /// Random CQEs into a few small CQs, a host that consumes at random times, a DMA port
    /// with random ready and delayed statuses; the CQ at `fault_cqn` has an unmapped ring.
    fn run(pattern: Pattern, seed: u64, count: usize) {
        let mut rng = Rng::new(seed);
        let mut b = Bench::new(Completion::default(), |u| &mut u.clock);
        reset(&mut b);
        let fault_cqn = 7u8;
        let mut cqs: Vec<HostCq> = [0u8, 3, fault_cqn, 255]
            .into_iter()
            .map(|cqn| HostCq {
                cqn,
                log: rng.below(4) as u32,
                iova: (rng.next_u64() & 0x0000_FFFF_FFFF_FFC0) | 0x40,
                written: 0,
                ci: 0,
                pending: VecDeque::new(),
            })
            .collect();
        for cq in &cqs {
            create(&mut b, cq);
        }
        let mut todo: VecDeque<(usize, Cqe)> = (0..count)
            .map(|_| (rng.below(cqs.len() as u64) as usize, random_cqe(&mut rng)))
            .collect();
        let mut offered: Option<(usize, Cqe)> = None;
        let mut port_req: Option<u64> = None;
        let mut statuses: VecDeque<(u64, bool)> = VecDeque::new();
        let (mut faults_seen, mut faults_want) = (0, 0);
        let mut done = 0;
        let mut cycle = 0u64;
        while done < count || !statuses.is_empty() {
            cycle += 1;
            assert!(cycle < 100_000, "stuck after {done} of {count} CQEs");
            if offered.is_none() && rng.percent(pattern.valid_pct) {
                offered = todo.pop_front();
                if let Some((i, c)) = &offered {
                    cqs[*i].pending.push_back(*c);
                }
            }
            // The host consumes some CQEs of one CQ now and then (a doorbell).
            let db = if rng.percent(20) {
                let i = rng.below(cqs.len() as u64) as usize;
                let cq = &mut cqs[i];
                let avail = cq.written - cq.ci;
                (avail > 0).then(|| {
                    cq.ci += 1 + rng.below(u64::from(avail)) as u32;
                    (cq.cqn, cq.ci)
                })
            } else {
                None
            };
            let u = &mut b.uut;
            u.cqe.valid.next = offered.is_some();
            if let Some((i, c)) = &offered {
                drive_cqe(u, cqs[*i].cqn, c);
            }
            u.db.valid.next = db.is_some();
            if let Some((cqn, ci)) = db {
                u.db.cqn.next = u64::from(cqn).into();
                u.db.ci.next = u64::from(ci).into();
            }
            u.dma_wr.req_ready.next = rng.percent(pattern.ready_pct);
            u.dma_wr.data_ready.next = rng.percent(pattern.ready_pct);
            let status = statuses.front().copied().filter(|&(due, _)| due <= cycle);
            u.dma_wr.status_valid.next = status.is_some();
            u.dma_wr.status_err.next = status.is_some_and(|(_, e)| e);
            b.settle();
            let u = &b.uut;
            assert!(
                db.is_none() || u.db.ready.val(),
                "doorbells are taken at once"
            );
            if u.cqe.valid.val() && u.cqe.ready.val() {
                offered = None;
            }
            if u.dma_wr.req_valid.val() && u.dma_wr.req_ready.val() {
                assert!(port_req.is_none());
                assert_eq!(u.dma_wr.req_len.val().index(), 64);
                port_req = Some(u.dma_wr.req_addr.val().to_u64());
            }
            if u.dma_wr.data_valid.val() && u.dma_wr.data_ready.val() {
                let addr = port_req.take().expect("data after its request");
                assert!(u.dma_wr.data_last.val());
                assert_eq!(u.dma_wr.data_keep.val().to_u64(), u64::MAX);
                let bytes = bytes_from_beat(&u.dma_wr.data.val());
                let got = Cqe::from_bytes(&bytes);
                let cq = cqs
                    .iter_mut()
                    .find(|cq| cq.pending.front().is_some_and(|c| c.wr_id == got.wr_id))
                    .expect("a CQE that was sent, in its CQ's order");
                let k = cq.written;
                assert!(k - cq.ci < 1 << cq.log, "CQE {k} over an unconsumed slot");
                let slot = u64::from(k & ((1 << cq.log) - 1));
                assert_eq!(addr, cq.iova + 64 * slot, "CQ {} CQE {k}", cq.cqn);
                let mut want = cq.pending.pop_front().expect("pending");
                want.phase = phase_of(k, cq.log);
                assert_eq!(bytes, want.to_bytes());
                cq.written += 1;
                done += 1;
                let fault = cq.cqn == fault_cqn;
                faults_want += usize::from(fault);
                statuses.push_back((cycle + rng.below(20), fault));
            }
            if status.is_some() {
                statuses.pop_front();
            }
            faults_seen += usize::from(u.m_dma_fault.val());
            b.tick();
        }
        assert_eq!(faults_seen, faults_want);
        assert!(
            faults_want > 0 && cqs.iter().any(|cq| cq.written > 2 << cq.log),
            "wrapped"
        );
    }

    #[test]
    fn cqes_follow_the_phase_rule_and_never_overrun_the_host() {
        for (i, p) in Pattern::SWEEP.into_iter().enumerate() {
            run(p, 0xC0E0 + i as u64, 120);
        }
    }

    /// Offers one CQE to CQ 9 and runs `cycles` cycles, recording request addresses and
    /// the phase of every CQE written.
    fn post(b: &mut Bench<Completion>, rng: &mut Rng, cycles: usize, seen: &mut Vec<(u64, u8)>) {
        let c = random_cqe(rng);
        drive_cqe(&mut b.uut, 9, &c);
        b.uut.cqe.valid.next = true;
        run_cycles(b, cycles, seen);
    }

    fn run_cycles(b: &mut Bench<Completion>, cycles: usize, seen: &mut Vec<(u64, u8)>) {
        let mut addr = 0;
        for _ in 0..cycles {
            b.settle();
            let taken = b.uut.cqe.valid.val() && b.uut.cqe.ready.val();
            if b.uut.dma_wr.req_valid.val() {
                addr = b.uut.dma_wr.req_addr.val().to_u64();
            }
            if b.uut.dma_wr.data_valid.val() {
                seen.push((addr, bytes_from_beat(&b.uut.dma_wr.data.val())[63]));
            }
            b.tick();
            if taken {
                b.uut.cqe.valid.next = false;
            }
        }
    }

    #[test]
    fn a_full_cq_waits_for_its_doorbell_and_create_resets_indices() {
        let mut b = Bench::new(Completion::default(), |u| &mut u.clock);
        reset(&mut b);
        let cq = HostCq {
            cqn: 9,
            log: 1,
            iova: 0x10_0000,
            written: 0,
            ci: 0,
            pending: VecDeque::new(),
        };
        create(&mut b, &cq);
        b.uut.dma_wr.req_ready.next = true;
        b.uut.dma_wr.data_ready.next = true;
        let mut rng = Rng::new(1);
        let mut seen = Vec::new();
        post(&mut b, &mut rng, 8, &mut seen);
        post(&mut b, &mut rng, 8, &mut seen);
        post(&mut b, &mut rng, 40, &mut seen); // third CQE: the 2-entry ring is full
        assert_eq!(
            seen,
            vec![(0x10_0000, 1), (0x10_0040, 1)],
            "held while full"
        );
        // The host consumes one: the held CQE goes to slot 0, second lap, phase 0.
        b.uut.db.valid.next = true;
        b.uut.db.cqn.next = 9u64.into();
        b.uut.db.ci.next = 1u64.into();
        b.tick();
        b.uut.db.valid.next = false;
        run_cycles(&mut b, 8, &mut seen);
        assert_eq!(seen[2..], [(0x10_0000, 0)]);
        // Re-creating the CQ starts over at slot 0, phase 1.
        let again = HostCq {
            iova: 0x20_0000,
            ..cq
        };
        create(&mut b, &again);
        post(&mut b, &mut rng, 8, &mut seen);
        assert_eq!(seen[3..], [(0x20_0000, 1)]);
    }
}
