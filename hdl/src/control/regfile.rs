//! `RegFile`: the BAR0 register file of the engine — decode of the 32-bit register port,
//! identification and capability registers, MAC/IPv4/CONTROL, the cycle counter, the
//! command mailbox registers, the global counters and the doorbell decode.
//!
//! ```text
//!  bar (BAR0)   --> decode --+--> ID/caps (constants)          bar.rdata (1 cycle later)
//!                            +--> MAC/IP/CONTROL regs --> port (mac_*, ipv4, port_enable)
//!                            +--> CYCLE_LO/HI (LO read latches HI)
//!                            +--> CMD_ARG[16] --> cmd_args ----> cmd engine (cmd.rs)
//!                            |    CMD_OPCODE --> cmd_start/opcode   cmd_done/status/outs
//!                            +--> counters[16] x 64 (LO read latches HI) <-- cnt.inc pulses
//!                            +--> SQ/RQ doorbells --> FIFO (16) --> db (kind, index, value)
//!                            +--> CQ doorbells --> FIFO (16) --> cq_db (cqn, ci)
//! ```
//!
//! Every offset comes from `rocenic_proto::abi::regs`; the constructor derives the decode
//! constants (region tags and index bit fields) from them and asserts the layout it
//! assumes (region sizes and alignment), so a change in proto either flows through or
//! refuses to elaborate.
//!
//! # Interface
//!
//! - Register port (engine top contract): one access per `bar.valid && bar.ready` cycle;
//!   a read's data comes on `bar.rdata` with `bar.rdata_valid` exactly one cycle after it
//!   is accepted. `bar.ready` is high except for a doorbell write while the doorbell FIFO
//!   (of its kind) is full. Offsets not in the map read 0 and ignore writes; so do misaligned ones.
//! - Behaviour matches the model's `Nic::read_reg/write_reg`: reading `CYCLE_LO` or a
//!   counter's LO word latches the HI half (one latch for all counters, as in the model);
//!   writing `CMD_OPCODE` while a command runs is ignored; `CMD_STATUS` reads
//!   `CMD_STATUS_BUSY` while a command runs (and while the command engine clears the
//!   tables after reset), else the last command's status.
//! - Doorbells: a write to an SQ/RQ doorbell of a QP below the QP count becomes one entry
//!   {kind (0 SQ, 1 RQ), index, value} of the QP doorbell FIFO (`db`), in write order;
//!   a write to a CQ doorbell below the CQ count one entry {cqn, ci} of the CQ doorbell
//!   FIFO (`cq_db`). Two FIFOs because a consumer of QP doorbells may wait for the
//!   host to consume completions (the requester stalls on a full CQ): a CQ doorbell queued
//!   behind its SQ doorbell would then never arrive. Unlike the model, the register file does not know which QPs
//!   and CQs exist: the consumer (requester/responder/completion engine) drops doorbells of
//!   objects that do not exist, which has the model's effect (CREATE clears the indices).
//! - Counters: `cnt.inc` bit `c` adds to counter `c` (`regs::Counter` numbering) in that
//!   cycle: `cnt.tx_bytes` for `TxBytes`, `cnt.rx_bytes` for `RxBytes`, 1 for the others.

use crate::bus::reg::{
    CntIncServer, CqDbClient, DbClient, PortCfgClient, RegServer, REG_ADDR_BITS,
};
use crate::control::leaves::{CounterBank, CqIndex16, QpIndex16, WordBank, WordMux};
use crate::prelude::*;
use rocenic_proto::abi::regs::{self, Counter};
use rocenic_proto::abi::wqe;

/// Doorbell kinds on `db.kind`.
pub const DB_SQ: u64 = 0;
pub const DB_RQ: u64 = 1;
pub const DB_CQ: u64 = 2;

/// Build-time parameters the identification registers report (`model::NicConfig`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CtrlParams {
    pub max_qp: u32,
    pub max_cq: u32,
    pub max_mr: u32,
    pub max_pd: u32,
    pub max_log_ring: u32,
    pub max_rd_atomic: u32,
    pub clock_mhz: u32,
}

impl CtrlParams {
    /// The parameters of a control plane with `1 << qp_log` QPs and `1 << mr_log` MRs; CQs
    /// and PDs are 256 each, as in the model's default configuration.
    pub fn new(qp_log: usize, mr_log: usize) -> CtrlParams {
        CtrlParams {
            max_qp: 1 << qp_log,
            max_cq: 256,
            max_mr: 1 << mr_log,
            max_pd: 256,
            max_log_ring: 15,
            max_rd_atomic: 16,
            clock_mhz: 250,
        }
    }
}

crate::packed_layout!(
    /// One doorbell in the FIFO: which ring (`DB_SQ`/`DB_RQ`/`DB_CQ`), whose, the index.
    doorbell, DoorbellPack; kind: 2, index: 16, value: 32
);
crate::unpack_fields!(DoorbellUnpack, doorbell; kind: 2, index: 16, value: 32);

/// A doorbell FIFO entry.
type Doorbell = Bits<{ doorbell::BITS }>;

/// Doorbell FIFO depth (log2).
const DB_LOG: usize = 4;

/// A first-word-fall-through FIFO of doorbells in distributed RAM: `valid` while not
/// empty, the head on `data`, popped by `ready`.
#[derive(LogicBlock)]
pub struct DoorbellFifo {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub push: Signal<In, Bit>,
    pub push_data: Signal<In, Doorbell>,
    pub full: Signal<Out, Bit>,
    pub valid: Signal<Out, Bit>,
    pub ready: Signal<In, Bit>,
    pub data: Signal<Out, Doorbell>,
    ram: RAM<Doorbell, DB_LOG>,
    wptr: DFF<Bits<5>>,
    rptr: DFF<Bits<5>>,
    bypass: DFF<Bit>,
    bypass_data: DFF<Doorbell>,
    one: Constant<Bits<5>>,
    half: Constant<Bits<5>>,
    zero: Constant<Bits<5>>,
    pop: Signal<Local, Bit>,
    take: Signal<Local, Bit>,
    rnext: Signal<Local, Bits<5>>,
}

impl Default for DoorbellFifo {
    fn default() -> Self {
        Self::new()
    }
}

impl DoorbellFifo {
    pub fn new() -> DoorbellFifo {
        DoorbellFifo {
            clock: Default::default(),
            reset: Default::default(),
            push: Default::default(),
            push_data: Default::default(),
            full: Default::default(),
            valid: Default::default(),
            ready: Default::default(),
            data: Default::default(),
            ram: Default::default(),
            wptr: Default::default(),
            rptr: Default::default(),
            bypass: Default::default(),
            bypass_data: Default::default(),
            one: Constant::new(1.into()),
            half: Constant::new((1u64 << DB_LOG).into()),
            zero: Constant::new(0.into()),
            pop: Default::default(),
            take: Default::default(),
            rnext: Default::default(),
        }
    }
}

impl Logic for DoorbellFifo {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, wptr, rptr, bypass, bypass_data);
        self.ram.read_clock.next = self.clock.val();
        self.ram.write_clock.next = self.clock.val();
        self.full.next = (self.wptr.q.val() ^ self.rptr.q.val()) == self.half.val();
        self.valid.next = self.wptr.q.val() != self.rptr.q.val();
        self.pop.next = self.ready.val() & (self.wptr.q.val() != self.rptr.q.val());
        self.take.next =
            self.push.val() & ((self.wptr.q.val() ^ self.rptr.q.val()) != self.half.val());
        self.rnext.next = self.rptr.q.val();
        if self.pop.val() {
            self.rnext.next = self.rptr.q.val() + self.one.val();
        }
        self.rptr.d.next = self.rnext.val();
        // The RAM reads before it writes: an entry written at the address being read
        // comes from the bypass register.
        self.ram.read_address.next = self.rnext.val().get_bits::<DB_LOG>(0);
        self.ram.write_address.next = self.wptr.q.val().get_bits::<DB_LOG>(0);
        self.ram.write_data.next = self.push_data.val();
        self.ram.write_enable.next = self.take.val();
        if self.take.val() {
            self.wptr.d.next = self.wptr.q.val() + self.one.val();
        }
        self.bypass.d.next = self.take.val()
            & (self.wptr.q.val().get_bits::<DB_LOG>(0) == self.rnext.val().get_bits::<DB_LOG>(0));
        self.bypass_data.d.next = self.push_data.val();
        self.data.next = self.ram.read_data.val();
        if self.bypass.q.val() {
            self.data.next = self.bypass_data.q.val();
        }
        if self.reset.val() {
            self.wptr.d.next = self.zero.val();
            self.rptr.d.next = self.zero.val();
            self.bypass.d.next = false;
        }
    }
}

/// The register file; see the [module docs](self).
#[derive(LogicBlock)]
pub struct RegFile {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// The BAR0 register port.
    pub bar: RegServer,
    /// The port configuration (`MAC_LO`/`MAC_HI`, `IPV4`, `CONTROL_ENABLE`).
    pub port: PortCfgClient,
    /// The counter increments.
    pub cnt: CntIncServer,
    /// SQ/RQ doorbells.
    pub db: DbClient,
    /// CQ doorbells.
    pub cq_db: CqDbClient,
    // --- command engine ---
    /// One-cycle pulse: run `cmd_opcode` with `cmd_args`.
    pub cmd_start: Signal<Out, Bit>,
    pub cmd_opcode: Signal<Out, Bits<32>>,
    pub cmd_args: Signal<Out, Bits<512>>,
    /// The engine is busy on its own (clearing the tables after reset).
    pub cmd_busy: Signal<In, Bit>,
    /// One-cycle pulse: the command finished with `cmd_status` and `cmd_outs`.
    pub cmd_done: Signal<In, Bit>,
    pub cmd_status: Signal<In, Bits<32>>,
    pub cmd_outs: Signal<In, Bits<256>>,

    // --- state ---
    args: WordBank<16, 4, 512>,
    outs_mux: WordMux<8, 3, 256>,
    counters: CounterBank,
    db_fifo: DoorbellFifo,
    cq_db_fifo: DoorbellFifo,
    mac_lo_r: DFF<Bits<32>>,
    /// Stored as the register reads (bits 31:16 always zero).
    mac_hi_r: DFF<Bits<32>>,
    ipv4_r: DFF<Bits<32>>,
    /// Stored as the register reads (only `CONTROL_ENABLE`).
    enable_r: DFF<Bits<32>>,
    cycle: DFF<Bits<64>>,
    cycle_hi_latch: DFF<Bits<32>>,
    counter_hi_latch: DFF<Bits<32>>,
    rdata: DFF<Bits<32>>,
    rvalid: DFF<Bit>,
    start: DFF<Bit>,
    opcode: DFF<Bits<32>>,
    pending: DFF<Bit>,
    status: DFF<Bits<32>>,

    // --- constants: offsets from proto, values from the parameters ---
    a_id: Constant<Bits<REG_ADDR_BITS>>,
    a_abi: Constant<Bits<REG_ADDR_BITS>>,
    a_max_qp: Constant<Bits<REG_ADDR_BITS>>,
    a_max_cq: Constant<Bits<REG_ADDR_BITS>>,
    a_max_mr: Constant<Bits<REG_ADDR_BITS>>,
    a_max_pd: Constant<Bits<REG_ADDR_BITS>>,
    a_max_log_ring: Constant<Bits<REG_ADDR_BITS>>,
    a_max_sge: Constant<Bits<REG_ADDR_BITS>>,
    a_max_inline: Constant<Bits<REG_ADDR_BITS>>,
    a_max_rd_atomic: Constant<Bits<REG_ADDR_BITS>>,
    a_clock_mhz: Constant<Bits<REG_ADDR_BITS>>,
    a_mac_lo: Constant<Bits<REG_ADDR_BITS>>,
    a_mac_hi: Constant<Bits<REG_ADDR_BITS>>,
    a_ipv4: Constant<Bits<REG_ADDR_BITS>>,
    a_control: Constant<Bits<REG_ADDR_BITS>>,
    a_cycle_lo: Constant<Bits<REG_ADDR_BITS>>,
    a_cycle_hi: Constant<Bits<REG_ADDR_BITS>>,
    a_cmd_opcode: Constant<Bits<REG_ADDR_BITS>>,
    a_cmd_status: Constant<Bits<REG_ADDR_BITS>>,
    /// Region tags: the address bits above a region's index field.
    t_args: Constant<Bits<11>>,
    t_outs: Constant<Bits<12>>,
    t_counters: Constant<Bits<10>>,
    t_qp_db: Constant<Bits<2>>,
    t_cq_db: Constant<Bits<2>>,
    /// Highest QP and CQ numbers with a doorbell.
    last_qp: Constant<Bits<12>>,
    last_cq: Constant<Bits<13>>,
    v_id: Constant<Bits<32>>,
    v_abi: Constant<Bits<32>>,
    v_max_qp: Constant<Bits<32>>,
    v_max_cq: Constant<Bits<32>>,
    v_max_mr: Constant<Bits<32>>,
    v_max_pd: Constant<Bits<32>>,
    v_max_log_ring: Constant<Bits<32>>,
    v_max_sge: Constant<Bits<32>>,
    v_max_inline: Constant<Bits<32>>,
    v_max_rd_atomic: Constant<Bits<32>>,
    v_clock_mhz: Constant<Bits<32>>,
    v_busy: Constant<Bits<32>>,
    zero2: Constant<Bits<2>>,
    zero3: Constant<Bits<3>>,
    zero4: Constant<Bits<4>>,
    zero32: Constant<Bits<32>>,
    one64: Constant<Bits<64>>,
    zero64: Constant<Bits<64>>,
    k_sq: Constant<Bits<2>>,
    k_rq: Constant<Bits<2>>,
    k_cq: Constant<Bits<2>>,

    // --- decode ---
    aligned: Signal<Local, Bit>,
    rd: Signal<Local, Bit>,
    wr: Signal<Local, Bit>,
    in_args: Signal<Local, Bit>,
    in_outs: Signal<Local, Bit>,
    in_counters: Signal<Local, Bit>,
    is_qp_db: Signal<Local, Bit>,
    is_cq_db: Signal<Local, Bit>,
    /// A doorbell write that waits: its FIFO is full.
    db_wait: Signal<Local, Bit>,
    db_pack: DoorbellPack,
    db_unpack: DoorbellUnpack,
    cq_db_unpack: DoorbellUnpack,
    /// Always `DB_CQ` in the CQ FIFO.
    unused_cq_db_kind: Signal<Local, Bits<2>>,
    qpn16: QpIndex16,
    cqn16: CqIndex16,
    m_mac_hi: Constant<Bits<32>>,
    m_control: Constant<Bits<32>>,
    read_value: Signal<Local, Bits<32>>,
}

impl RegFile {
    pub fn new(p: CtrlParams) -> RegFile {
        // The decode below assumes this layout of the ABI's regions; refuse anything else.
        assert!(
            regs::cmd_arg(0).is_multiple_of(64) && regs::CMD_ARG_WORDS == 16,
            "CMD_ARG: 16 words, 64-byte aligned"
        );
        assert!(
            regs::cmd_out(0).is_multiple_of(32) && regs::CMD_OUT_WORDS == 8,
            "CMD_OUT: 8 words, 32-byte aligned"
        );
        let cnt0 = regs::counter_lo(Counter::TxFrames);
        assert!(
            cnt0.is_multiple_of(128) && Counter::COUNT == 16,
            "counters: 16 LO/HI pairs, 128-byte aligned"
        );
        assert!(
            regs::sq_doorbell(0).is_multiple_of(0x8000)
                && regs::rq_doorbell(0) == regs::sq_doorbell(0) + 4
                && regs::sq_doorbell(1) == regs::sq_doorbell(0) + 8
                && regs::DOORBELL_QPS * 8 == 0x8000,
            "QP doorbells: 8 bytes per QP, a 32 KiB region"
        );
        assert!(
            regs::cq_doorbell(0).is_multiple_of(0x8000)
                && regs::cq_doorbell(1) == regs::cq_doorbell(0) + 4
                && regs::DOORBELL_CQS * 4 == 0x8000
                && regs::BAR0_SIZE == 0x2_0000,
            "CQ doorbells: 4 bytes per CQ, a 32 KiB region at the end of a 128 KiB BAR0"
        );
        assert!(
            p.max_qp > 2 && p.max_qp <= regs::DOORBELL_QPS,
            "QP count 3..=4096"
        );
        assert!(p.max_cq >= 1 && p.max_cq <= regs::DOORBELL_CQS, "CQ count");
        assert_eq!(regs::CONTROL_ENABLE, 1, "CONTROL_ENABLE is bit 0");
        let a = |off: u32| Constant::new(u64::from(off).into());
        let v = |x: u32| Constant::new(u64::from(x).into());
        RegFile {
            clock: Default::default(),
            reset: Default::default(),
            bar: Default::default(),
            port: Default::default(),
            cnt: Default::default(),
            db: Default::default(),
            cq_db: Default::default(),
            cmd_start: Default::default(),
            cmd_opcode: Default::default(),
            cmd_args: Default::default(),
            cmd_busy: Default::default(),
            cmd_done: Default::default(),
            cmd_status: Default::default(),
            cmd_outs: Default::default(),
            args: Default::default(),
            outs_mux: Default::default(),
            counters: Default::default(),
            db_fifo: DoorbellFifo::new(),
            cq_db_fifo: DoorbellFifo::new(),
            mac_lo_r: Default::default(),
            mac_hi_r: Default::default(),
            ipv4_r: Default::default(),
            enable_r: Default::default(),
            cycle: Default::default(),
            cycle_hi_latch: Default::default(),
            counter_hi_latch: Default::default(),
            rdata: Default::default(),
            rvalid: Default::default(),
            start: Default::default(),
            opcode: Default::default(),
            pending: Default::default(),
            status: Default::default(),
            a_id: a(regs::ID),
            a_abi: a(regs::ABI_VERSION),
            a_max_qp: a(regs::MAX_QP),
            a_max_cq: a(regs::MAX_CQ),
            a_max_mr: a(regs::MAX_MR),
            a_max_pd: a(regs::MAX_PD),
            a_max_log_ring: a(regs::MAX_LOG_RING),
            a_max_sge: a(regs::MAX_SGE),
            a_max_inline: a(regs::MAX_INLINE),
            a_max_rd_atomic: a(regs::MAX_RD_ATOMIC),
            a_clock_mhz: a(regs::CLOCK_MHZ),
            a_mac_lo: a(regs::MAC_LO),
            a_mac_hi: a(regs::MAC_HI),
            a_ipv4: a(regs::IPV4_ADDR),
            a_control: a(regs::CONTROL),
            a_cycle_lo: a(regs::CYCLE_LO),
            a_cycle_hi: a(regs::CYCLE_HI),
            a_cmd_opcode: a(regs::CMD_OPCODE),
            a_cmd_status: a(regs::CMD_STATUS),
            t_args: Constant::new(u64::from(regs::cmd_arg(0) >> 6).into()),
            t_outs: Constant::new(u64::from(regs::cmd_out(0) >> 5).into()),
            t_counters: Constant::new(u64::from(cnt0 >> 7).into()),
            t_qp_db: Constant::new(u64::from(regs::sq_doorbell(0) >> 15).into()),
            t_cq_db: Constant::new(u64::from(regs::cq_doorbell(0) >> 15).into()),
            last_qp: Constant::new(u64::from(p.max_qp - 1).into()),
            last_cq: Constant::new(u64::from(p.max_cq - 1).into()),
            v_id: v(regs::DEVICE_ID),
            v_abi: v(u32::from(regs::ABI_MAJOR) << 16 | u32::from(regs::ABI_MINOR)),
            v_max_qp: v(p.max_qp),
            v_max_cq: v(p.max_cq),
            v_max_mr: v(p.max_mr),
            v_max_pd: v(p.max_pd),
            v_max_log_ring: v(p.max_log_ring),
            v_max_sge: v(wqe::MAX_SEND_SGE as u32 | (wqe::MAX_RECV_SGE as u32) << 8),
            v_max_inline: v(wqe::MAX_INLINE as u32),
            v_max_rd_atomic: v(p.max_rd_atomic * 0x101),
            v_clock_mhz: v(p.clock_mhz),
            v_busy: v(regs::CMD_STATUS_BUSY),
            zero2: Constant::new(0.into()),
            zero3: Constant::new(0.into()),
            zero4: Constant::new(0.into()),
            zero32: Constant::new(0.into()),
            one64: Constant::new(1.into()),
            zero64: Constant::new(0.into()),
            k_sq: Constant::new(DB_SQ.into()),
            k_rq: Constant::new(DB_RQ.into()),
            k_cq: Constant::new(DB_CQ.into()),
            aligned: Default::default(),
            rd: Default::default(),
            wr: Default::default(),
            in_args: Default::default(),
            in_outs: Default::default(),
            in_counters: Default::default(),
            is_qp_db: Default::default(),
            is_cq_db: Default::default(),
            db_wait: Default::default(),
            db_pack: Default::default(),
            db_unpack: Default::default(),
            cq_db_unpack: Default::default(),
            unused_cq_db_kind: Default::default(),
            qpn16: Default::default(),
            cqn16: Default::default(),
            m_mac_hi: v(0xffff),
            m_control: v(regs::CONTROL_ENABLE),
            read_value: Default::default(),
        }
    }
}

impl Logic for RegFile {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            mac_lo_r,
            mac_hi_r,
            ipv4_r,
            enable_r,
            cycle,
            cycle_hi_latch,
            counter_hi_latch,
            rdata,
            rvalid,
            start,
            opcode,
            pending,
            status
        );
        clock!(self, clock, args, counters, db_fifo, cq_db_fifo);
        self.args.reset.next = self.reset.val();
        self.counters.reset.next = self.reset.val();
        self.db_fifo.reset.next = self.reset.val();
        self.cq_db_fifo.reset.next = self.reset.val();

        // ---- decode ----
        self.aligned.next = self.bar.addr.val().get_bits::<2>(0) == self.zero2.val();
        self.in_args.next =
            self.aligned.val() & (self.bar.addr.val().get_bits::<11>(6) == self.t_args.val());
        self.in_outs.next =
            self.aligned.val() & (self.bar.addr.val().get_bits::<12>(5) == self.t_outs.val());
        self.in_counters.next =
            self.aligned.val() & (self.bar.addr.val().get_bits::<10>(7) == self.t_counters.val());
        self.is_qp_db.next = self.aligned.val()
            & (self.bar.addr.val().get_bits::<2>(15) == self.t_qp_db.val())
            & (self.bar.addr.val().get_bits::<12>(3) <= self.last_qp.val());
        self.is_cq_db.next = self.aligned.val()
            & (self.bar.addr.val().get_bits::<2>(15) == self.t_cq_db.val())
            & (self.bar.addr.val().get_bits::<13>(2) <= self.last_cq.val());
        // A doorbell write waits while its FIFO is full.
        self.db_wait.next = self.bar.write.val()
            & ((self.is_qp_db.val() & self.db_fifo.full.val())
                | (self.is_cq_db.val() & self.cq_db_fifo.full.val()));
        self.bar.ready.next = !self.db_wait.val();
        self.rd.next = self.bar.valid.val() & !self.bar.write.val();
        self.wr.next = self.bar.valid.val() & self.bar.write.val() & !self.db_wait.val();

        // ---- sub-block inputs ----
        self.args.we.next = self.wr.val() & self.in_args.val();
        self.args.waddr.next = self.bar.addr.val().get_bits::<4>(2);
        self.args.wdata.next = self.bar.wdata.val();
        self.args.raddr.next = self.bar.addr.val().get_bits::<4>(2);
        self.outs_mux.x.next = self.cmd_outs.val();
        self.outs_mux.sel.next = self.bar.addr.val().get_bits::<3>(2);
        self.counters.inc.next = self.cnt.inc.val();
        self.counters.tx_bytes.next = self.cnt.tx_bytes.val();
        self.counters.rx_bytes.next = self.cnt.rx_bytes.val();
        self.counters.idx.next = self.bar.addr.val().get_bits::<4>(3);

        // ---- doorbells ----
        self.qpn16.lo.next = self.bar.addr.val().get_bits::<12>(3);
        self.qpn16.hi.next = self.zero4.val();
        self.cqn16.lo.next = self.bar.addr.val().get_bits::<13>(2);
        self.cqn16.hi.next = self.zero3.val();
        self.db_pack.value.next = self.bar.wdata.val();
        self.db_pack.kind.next = self.k_cq.val();
        self.db_pack.index.next = self.cqn16.y.val();
        if self.is_qp_db.val() {
            self.db_pack.index.next = self.qpn16.y.val();
            self.db_pack.kind.next = self.k_sq.val();
            if self.bar.addr.val().get_bit(2) {
                self.db_pack.kind.next = self.k_rq.val();
            }
        }
        self.db_fifo.push.next = self.wr.val() & self.is_qp_db.val();
        self.db_fifo.push_data.next = self.db_pack.y.val();
        self.db_fifo.ready.next = self.db.ready.val();
        self.db_unpack.x.next = self.db_fifo.data.val();
        self.db.valid.next = self.db_fifo.valid.val();
        self.db.kind.next = self.db_unpack.kind.val();
        self.db.index.next = self.db_unpack.index.val();
        self.db.value.next = self.db_unpack.value.val();
        self.cq_db_fifo.push.next = self.wr.val() & self.is_cq_db.val();
        self.cq_db_fifo.push_data.next = self.db_pack.y.val();
        self.cq_db_fifo.ready.next = self.cq_db.ready.val();
        self.cq_db_unpack.x.next = self.cq_db_fifo.data.val();
        self.cq_db.valid.next = self.cq_db_fifo.valid.val();
        self.cq_db.cqn.next = self.cq_db_unpack.index.val();
        self.cq_db.ci.next = self.cq_db_unpack.value.val();
        self.unused_cq_db_kind.next = self.cq_db_unpack.kind.val();

        // ---- reads: the value at the address, registered ----
        self.read_value.next = self.zero32.val();
        if self.bar.addr.val() == self.a_id.val() {
            self.read_value.next = self.v_id.val();
        }
        if self.bar.addr.val() == self.a_abi.val() {
            self.read_value.next = self.v_abi.val();
        }
        if self.bar.addr.val() == self.a_max_qp.val() {
            self.read_value.next = self.v_max_qp.val();
        }
        if self.bar.addr.val() == self.a_max_cq.val() {
            self.read_value.next = self.v_max_cq.val();
        }
        if self.bar.addr.val() == self.a_max_mr.val() {
            self.read_value.next = self.v_max_mr.val();
        }
        if self.bar.addr.val() == self.a_max_pd.val() {
            self.read_value.next = self.v_max_pd.val();
        }
        if self.bar.addr.val() == self.a_max_log_ring.val() {
            self.read_value.next = self.v_max_log_ring.val();
        }
        if self.bar.addr.val() == self.a_max_sge.val() {
            self.read_value.next = self.v_max_sge.val();
        }
        if self.bar.addr.val() == self.a_max_inline.val() {
            self.read_value.next = self.v_max_inline.val();
        }
        if self.bar.addr.val() == self.a_max_rd_atomic.val() {
            self.read_value.next = self.v_max_rd_atomic.val();
        }
        if self.bar.addr.val() == self.a_clock_mhz.val() {
            self.read_value.next = self.v_clock_mhz.val();
        }
        if self.bar.addr.val() == self.a_mac_lo.val() {
            self.read_value.next = self.mac_lo_r.q.val();
        }
        if self.bar.addr.val() == self.a_mac_hi.val() {
            self.read_value.next = self.mac_hi_r.q.val();
        }
        if self.bar.addr.val() == self.a_ipv4.val() {
            self.read_value.next = self.ipv4_r.q.val();
        }
        if self.bar.addr.val() == self.a_control.val() {
            self.read_value.next = self.enable_r.q.val();
        }
        if self.bar.addr.val() == self.a_cycle_lo.val() {
            self.read_value.next = self.cycle.q.val().get_bits::<32>(0);
        }
        if self.bar.addr.val() == self.a_cycle_hi.val() {
            self.read_value.next = self.cycle_hi_latch.q.val();
        }
        if self.bar.addr.val() == self.a_cmd_status.val() {
            self.read_value.next = self.status.q.val();
            if self.pending.q.val() | self.cmd_busy.val() {
                self.read_value.next = self.v_busy.val();
            }
        }
        if self.in_args.val() {
            self.read_value.next = self.args.rdata.val();
        }
        if self.in_outs.val() {
            self.read_value.next = self.outs_mux.y.val();
        }
        if self.in_counters.val() {
            self.read_value.next = self.counter_hi_latch.q.val();
            if !self.bar.addr.val().get_bit(2) {
                self.read_value.next = self.counters.value.val().get_bits::<32>(0);
            }
        }
        self.rvalid.d.next = self.rd.val();
        if self.rd.val() {
            self.rdata.d.next = self.read_value.val();
        }
        self.bar.rdata_valid.next = self.rvalid.q.val();
        self.bar.rdata.next = self.rdata.q.val();

        // ---- read side effects: the LO reads latch their HI half ----
        if self.rd.val() & (self.bar.addr.val() == self.a_cycle_lo.val()) {
            self.cycle_hi_latch.d.next = self.cycle.q.val().get_bits::<32>(32);
        }
        if self.rd.val() & self.in_counters.val() & !self.bar.addr.val().get_bit(2) {
            self.counter_hi_latch.d.next = self.counters.value.val().get_bits::<32>(32);
        }

        // ---- writes ----
        if self.wr.val() & (self.bar.addr.val() == self.a_mac_lo.val()) {
            self.mac_lo_r.d.next = self.bar.wdata.val();
        }
        if self.wr.val() & (self.bar.addr.val() == self.a_mac_hi.val()) {
            self.mac_hi_r.d.next = self.bar.wdata.val() & self.m_mac_hi.val();
        }
        if self.wr.val() & (self.bar.addr.val() == self.a_ipv4.val()) {
            self.ipv4_r.d.next = self.bar.wdata.val();
        }
        if self.wr.val() & (self.bar.addr.val() == self.a_control.val()) {
            self.enable_r.d.next = self.bar.wdata.val() & self.m_control.val();
        }
        self.port.mac_lo.next = self.mac_lo_r.q.val();
        self.port.mac_hi.next = self.mac_hi_r.q.val().get_bits::<16>(0);
        self.port.ipv4.next = self.ipv4_r.q.val();
        self.port.port_enable.next = self.enable_r.q.val().get_bit(0);

        // ---- the command mailbox: a command written while one runs is ignored ----
        self.start.d.next = false;
        if self.wr.val()
            & (self.bar.addr.val() == self.a_cmd_opcode.val())
            & !self.pending.q.val()
            & !self.cmd_busy.val()
        {
            self.start.d.next = true;
            self.opcode.d.next = self.bar.wdata.val();
            self.pending.d.next = true;
        }
        if self.cmd_done.val() {
            self.pending.d.next = false;
            self.status.d.next = self.cmd_status.val();
        }
        self.cmd_start.next = self.start.q.val();
        self.cmd_opcode.next = self.opcode.q.val();
        self.cmd_args.next = self.args.all.val();

        self.cycle.d.next = self.cycle.q.val() + self.one64.val();

        if self.reset.val() {
            self.mac_lo_r.d.next = self.zero32.val();
            self.mac_hi_r.d.next = self.zero32.val();
            self.ipv4_r.d.next = self.zero32.val();
            self.enable_r.d.next = self.zero32.val();
            self.cycle.d.next = self.zero64.val();
            self.cycle_hi_latch.d.next = self.zero32.val();
            self.counter_hi_latch.d.next = self.zero32.val();
            self.rvalid.d.next = false;
            self.start.d.next = false;
            self.pending.d.next = false;
            self.status.d.next = self.zero32.val();
        }
    }
}
