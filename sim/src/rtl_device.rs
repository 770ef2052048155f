//! [`RtlDevice`]: a Verilated engine as a [`Device`], so the RTL sits in a [`crate::World`]
//! exactly where the behavioural model sits: same host memory and IOMMU (through the
//! [`DmaPort`] of each [`DeviceIo`]), same links, faults and pcap taps.
//!
//! The Verilog must have the engine's top ports as fixed in `docs/rtl-architecture.md`
//! ("The engine's top-level ports"): [`TOP_PORTS`] ([`crate::top_ports`]) is that list,
//! checked when the device is made, and the adapter's port handles are made from it. The
//! adapter plays the host side of every port:
//!
//! - **BAR0 register port.** [`Device::bar_write`] queues a posted write; queued accesses
//!   are presented one at a time in later cycles and leave the queue when `reg_ready` is
//!   high. [`Device::bar_read`] first clocks until every queued write has been accepted,
//!   then issues the read and clocks until `reg_rdata_valid`. Both waits are bounded by
//!   [`RtlDeviceConfig::bar_read_timeout_cycles`]: a read that never answers returns
//!   `0xFFFF_FFFF`, as a dead PCIe function does, and is recorded as an error
//!   ([`RtlDevice::errors`]) and counted as lost: the port has no tags, so an answer
//!   that comes after the timeout would be taken for the next read's (a known limit; with
//!   the 50 us default such an answer breaks the contract anyway).
//!   An offset at or past [`BAR0_SIZE`] (128 KiB) never reaches the engine
//!   ([`RtlDeviceError::BadOffset`]; a read returns `0xFFFF_FFFF`).
//! - **Cycles inside `bar_read` are not world time.** The [`Device`] trait reads registers
//!   between two world cycles, so the clock cycles run inside `bar_read` happen "between"
//!   world cycles (an MMIO read on a real host is a stall of the CPU, not of the NIC). They
//!   are counted separately ([`RtlDeviceStats::bar_read_cycles`]). During them every port
//!   is serviced by the same rules as in `tick`, with the schedule clock frozen at the last
//!   world cycle: DMA responses already due may be delivered, writes are paced against
//!   the frozen clock (so no extra bandwidth appears), a received frame already started
//!   is finished (the MAC has no backpressure) but no new one is started, and transmitted
//!   frames are handed to the world at the next `tick`. Because `bar_read` has no
//!   [`DeviceIo`], DMA requests accepted in those cycles touch host memory at the start of
//!   the next `tick` and are timed from that tick.
//! - **DMA reads** are served at once through the [`DmaPort`] (the data is read when the
//!   request is accepted) and timed by the device's own [`DmaChannels`] with
//!   [`RtlDeviceConfig::dma`] (see [`crate::dma`] for the formula): beat `i` of a response
//!   is due at `start + latency + ceil(min(64 (i + 1), len) / bytes_per_cycle)`, so the first
//!   beat comes at least `latency + 1` cycles after the request and beats flow at the
//!   configured bandwidth. Responses are delivered in request order, never interleaved,
//!   and hold still while `dma_rd_resp_ready` is low. An IOMMU fault becomes one beat with
//!   `err` and `last` set and zero data, due `latency + 1` cycles after the request.
//!   At most [`RtlDeviceConfig::max_outstanding_reads`] reads are outstanding (accepted,
//!   last beat not yet delivered); `dma_rd_req_ready` is low at the limit.
//! - **DMA writes**: data beats are accepted at the configured bandwidth (a byte-credit
//!   rule, so any `bytes_per_cycle` is exact in the long run), paired with their request in
//!   order, and performed through [`DmaPort::dma_write`] when the last beat is in, writing
//!   only the bytes whose `keep` bit is set. `dma_wr_status_valid` pulses once per request,
//!   in order, `write_latency_cycles + 1` cycles after its last beat at the earliest, with
//!   `err` when the IOMMU refused it (nothing is written then).
//! - **MAC RX**: frames are taken from `io.rx` and driven one beat per cycle, back to back
//!   with no idle cycle when several are queued, `tuser` low. While `mac_rx_pause` is high
//!   no new frame starts (the link partner obeys PFC at frame boundaries): the frames wait
//!   in `io.rx`, counted in [`RtlDeviceStats::rx_pause_cycles`]. **MAC TX**: beats are
//!   collected (by `tkeep`) into frames and pushed to `io.tx` in the cycle their last beat
//!   is taken; `mac_tx_tready` follows [`RtlDeviceConfig::tx_ready`] (always high by
//!   default).
//! - **`next_event`** is always `now + 1`: the engine has timers (ACK timeout, RNR delay)
//!   whose state the contract does not expose, so no cycle can be skipped soundly without
//!   an "idle" output from the engine. A device in a world is therefore ticked every cycle.
//!
//! Departures from the contract by the engine (a read length of 0 or above 8192, holes in
//! `keep`, a `last` on the wrong beat) are recorded as [`RtlDeviceError::Protocol`] and
//! handled as documented on each; a Verilator fatal error stops the device (later reads
//! return `0xFFFF_FFFF`).

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use rocenic_proto::device::{Device, DeviceIo, DmaPort, Frame};

use crate::dma::{DmaChannels, DmaConfig};
use crate::rtl::{
    ModelBuilder, Port, PortDir, PortInfo, RtlError, TraceFormat, VerilatedLib, VerilatedModel,
};
use crate::top_ports::TopHandles;
pub use crate::top_ports::{TopPort, TOP_PORTS};

/// Bytes per beat of the 512-bit streams.
pub const BEAT_BYTES: usize = 64;
const BEAT_WORDS: usize = BEAT_BYTES / 4;
/// Largest DMA request length the contract allows.
pub const MAX_DMA_LEN: usize = 8192;
/// What a BAR read returns when the device does not answer (as a dead PCIe function).
pub const DEAD_READ: u32 = 0xFFFF_FFFF;
/// Where the port contract is written down.
pub const CONTRACT: &str =
    "the engine top port contract (docs/rtl-architecture.md, \"The engine's top-level ports\")";
/// BAR0 size: the register port's 17-bit byte address.
pub const BAR0_SIZE: u32 = 1 << 17;
/// Errors kept by [`RtlDevice::errors`]; later ones are only counted.
pub const MAX_KEPT_ERRORS: usize = 1024;

/// When the adapter holds `mac_tx_tready` high.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TxReady {
    /// Every cycle (a MAC that never stalls; the default).
    #[default]
    Always,
    /// In the first `on` cycles of every `period` (counted in device clock cycles), for
    /// tests of the engine's TX stall handling. Needs `1 <= on <= period`.
    Duty {
        /// Ready cycles per period.
        on: u32,
        /// Period length in cycles.
        period: u32,
    },
}

/// Configuration of an [`RtlDevice`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RtlDeviceConfig {
    /// DMA timing of the port (read latency, write latency, bytes per cycle); default
    /// [`DmaConfig::default`]: 250 cycles (1 us) read latency, posted writes, 64 B/cycle.
    /// The world's `NodeConfig::dma` books the same accesses for its statistics; give both
    /// the same values (the cycle the world's [`DmaPort`] returns is not used: this one
    /// times the beats).
    pub dma: DmaConfig,
    /// Reads outstanding at most (request accepted, last beat not yet delivered). Default
    /// 256: the whole 8-bit tag space, as a PCIe endpoint with 8-bit extended tags allows,
    /// so the adapter is never what limits the engine unless a test asks for it.
    pub max_outstanding_reads: usize,
    /// Write requests accepted whose status has not been given yet, at most (and data
    /// messages received ahead of their request). Default 64.
    pub max_outstanding_writes: usize,
    /// Bound on the cycles one `bar_read` may clock (draining writes plus waiting for the
    /// answer). Default 12 500 (50 us, the shortest PCIe completion timeout).
    pub bar_read_timeout_cycles: u64,
    /// Cycles of `reset` high when the device is made (default 8).
    pub reset_cycles: u64,
    /// `mac_tx_tready` pattern (default always high).
    pub tx_ready: TxReady,
    /// Write waveforms of every cycle to this file (`.vcd` or `.fst`, the format the model
    /// was built with: build it with `ModelBuilder::trace`). Default none.
    pub trace: Option<PathBuf>,
}

impl Default for RtlDeviceConfig {
    fn default() -> Self {
        RtlDeviceConfig {
            dma: DmaConfig::default(),
            max_outstanding_reads: 256,
            max_outstanding_writes: 64,
            bar_read_timeout_cycles: 12_500,
            reset_cycles: 8,
            tx_ready: TxReady::Always,
            trace: None,
        }
    }
}

impl RtlDeviceConfig {
    /// The trace format [`trace`](Self::trace) asks for by its extension, to pass to
    /// `ModelBuilder::trace_opt` so the model is built with the matching tracing (a
    /// `--trace FILE` flag needs nothing more). `None` without a trace or for another
    /// extension (then [`RtlDevice::new`] reports the mismatch).
    pub fn trace_format(&self) -> Option<crate::rtl::TraceFormat> {
        self.trace
            .as_deref()
            .and_then(crate::rtl::TraceFormat::from_path)
    }

    /// Refuses values the adapter cannot work with.
    pub fn validate(&self) -> Result<(), RtlDeviceError> {
        let bad = |m: &str| Err(RtlDeviceError::InvalidConfig(m.to_string()));
        if self.dma.bytes_per_cycle == 0 {
            return bad("dma.bytes_per_cycle must be at least 1");
        }
        if self.max_outstanding_reads == 0 || self.max_outstanding_writes == 0 {
            return bad("max_outstanding_reads and max_outstanding_writes must be at least 1");
        }
        if self.bar_read_timeout_cycles == 0 {
            return bad("bar_read_timeout_cycles must be at least 1");
        }
        if let TxReady::Duty { on, period } = self.tx_ready {
            if on == 0 || on > period {
                return bad("tx_ready Duty needs 1 <= on <= period");
            }
        }
        Ok(())
    }
}

/// What can go wrong making or running an [`RtlDevice`]. The first group is returned by
/// the constructors; the second is recorded while running ([`RtlDevice::errors`]).
#[derive(Debug, thiserror::Error)]
pub enum RtlDeviceError {
    /// A port of the contract is missing in the Verilog.
    #[error("the Verilog top has no port `{port}` ({dir}, {width} bits), required by {CONTRACT}")]
    MissingPort {
        /// The port's name.
        port: &'static str,
        /// Its direction in the contract.
        dir: PortDir,
        /// Its width in the contract.
        width: u32,
    },
    /// A port exists with another direction or width than the contract's.
    #[error(
        "port `{port}` is {found_dir}, {found_width} bits, but {CONTRACT} says {dir}, {width} bits"
    )]
    PortMismatch {
        /// The port's name.
        port: &'static str,
        /// Direction in the contract.
        dir: PortDir,
        /// Width in the contract.
        width: u32,
        /// Direction in the Verilog.
        found_dir: PortDir,
        /// Width in the Verilog.
        found_width: u32,
    },
    /// An input that is not in the contract: nothing would drive it.
    #[error(
        "the Verilog top has an input `{0}` that is not in {CONTRACT}; nothing would drive it"
    )]
    ExtraInput(String),
    /// A configuration value is out of range.
    #[error("invalid RtlDevice configuration: {0}")]
    InvalidConfig(String),
    /// Building, instantiating, tracing or clocking the model failed.
    #[error(transparent)]
    Rtl(#[from] RtlError),
    /// A BAR read got no answer in time; `bar_read` returned `0xFFFF_FFFF`.
    #[error("BAR0 read at {offset:#x} got no answer within {cycles} cycles; returned 0xFFFF_FFFF")]
    ReadTimeout {
        /// The register offset.
        offset: u32,
        /// The cycles waited.
        cycles: u64,
    },
    /// Queued BAR writes were not accepted in time before a read; the read returned
    /// `0xFFFF_FFFF` without being issued and the writes stay queued.
    #[error("BAR0 read at {offset:#x}: {pending} queued writes not accepted within {cycles} cycles; returned 0xFFFF_FFFF")]
    WriteDrainTimeout {
        /// The register offset of the read.
        offset: u32,
        /// Writes still queued.
        pending: usize,
        /// The cycles waited.
        cycles: u64,
    },
    /// The engine broke the port contract.
    #[error("the engine broke {CONTRACT} at cycle {cycle}: {what}")]
    Protocol {
        /// Device clock cycle (all cycles clocked so far).
        cycle: u64,
        /// What happened and how the adapter handled it.
        what: String,
    },
    /// A BAR access at or past [`BAR0_SIZE`]: it never reaches the engine (on PCIe it
    /// would not hit the BAR); a read returns `0xFFFF_FFFF`, a write is dropped.
    #[error("BAR0 {} at {offset:#x} is outside the {BAR0_SIZE}-byte BAR; not issued", if *.write { "write" } else { "read" })]
    BadOffset {
        /// The offset.
        offset: u32,
        /// Whether it was a write.
        write: bool,
    },
    /// A BAR read of a device stopped by an earlier fatal error.
    #[error("BAR0 read at {offset:#x} of a device stopped by an RTL error; returned 0xFFFF_FFFF")]
    Dead {
        /// The register offset.
        offset: u32,
    },
}

/// Counters of an [`RtlDevice`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RtlDeviceStats {
    /// Cycles clocked by `tick` (world cycles).
    pub world_cycles: u64,
    /// Cycles clocked inside `bar_read` (not world time).
    pub bar_read_cycles: u64,
    /// Cycles of reset when the device was made.
    pub reset_cycles: u64,
    /// World cycles skipped between two ticks (0 in a world: `next_event` never allows it).
    pub skipped_cycles: u64,
    /// Cycles a received frame waited because the engine asked for a pause
    /// (`mac_rx_pause`): how long the link partner was held off.
    pub rx_pause_cycles: u64,
    /// BAR writes accepted by the engine.
    pub bar_writes: u64,
    /// BAR reads answered.
    pub bar_reads: u64,
    /// DMA read requests accepted.
    pub dma_reads: u64,
    /// Bytes of read requests the IOMMU allowed.
    pub dma_read_bytes: u64,
    /// Read requests answered with an error beat.
    pub dma_read_errors: u64,
    /// Response beats delivered.
    pub dma_read_beats: u64,
    /// Most reads outstanding at once.
    pub max_reads_outstanding: u64,
    /// Fewest cycles from a read request to its first beat (`u64::MAX` before any).
    pub min_read_latency: u64,
    /// Write requests performed (status given or pending).
    pub dma_writes: u64,
    /// Bytes written.
    pub dma_write_bytes: u64,
    /// Write statuses given with `err`.
    pub dma_write_errors: u64,
    /// Write statuses given.
    pub dma_write_statuses: u64,
    /// Frames driven on MAC RX.
    pub rx_frames: u64,
    /// Beats driven on MAC RX.
    pub rx_beats: u64,
    /// Frames collected from MAC TX.
    pub tx_frames: u64,
    /// Beats taken from MAC TX.
    pub tx_beats: u64,
    /// DMA reads and writes accepted inside `bar_read`, served at the next `tick`.
    pub dma_deferred: u64,
    /// Errors recorded (including those past [`MAX_KEPT_ERRORS`]).
    pub errors: u64,
}

/// Checks a port list against [`TOP_PORTS`].
pub fn check_ports(ports: &[PortInfo]) -> Result<(), RtlDeviceError> {
    for &TopPort {
        name, dir, width, ..
    } in TOP_PORTS
    {
        let Some(p) = ports.iter().find(|p| p.name == name) else {
            return Err(RtlDeviceError::MissingPort {
                port: name,
                dir,
                width,
            });
        };
        if p.dir != dir || p.width != width {
            return Err(RtlDeviceError::PortMismatch {
                port: name,
                dir,
                width,
                found_dir: p.dir,
                found_width: p.width,
            });
        }
    }
    // Extra outputs (debug probes) are harmless; an extra input would float.
    if let Some(p) = ports
        .iter()
        .find(|p| p.dir.is_writable() && !TOP_PORTS.iter().any(|t| t.name == p.name))
    {
        return Err(RtlDeviceError::ExtraInput(p.name.clone()));
    }
    Ok(())
}

/// One BAR access waiting for the register port.
#[derive(Debug, Clone, Copy)]
struct RegReq {
    write: bool,
    offset: u32,
    value: u32,
}

/// A read request in the response queue.
#[derive(Debug)]
enum ReadState {
    /// Accepted inside `bar_read` (no [`DmaPort`]): served at the next `tick`.
    Deferred { addr: u64 },
    /// Served: the data (`None` for an error beat) and the cycle beat 0's transfer began
    /// to arrive (`start + latency`).
    Ready { data: Option<Vec<u8>>, base: u64 },
}

#[derive(Debug)]
struct ReadEntry {
    tag: u8,
    len: usize,
    req_cycle: u64,
    state: ReadState,
    next_beat: usize,
}

impl ReadEntry {
    fn beats(&self) -> usize {
        match &self.state {
            ReadState::Ready { data: None, .. } => 1,
            _ => self.len.div_ceil(BEAT_BYTES).max(1),
        }
    }
}

/// A write whose data is complete, waiting to be performed (if deferred) and for its
/// status pulse.
#[derive(Debug)]
struct WriteEntry {
    /// `Some` until performed: request address and length, data, byte enables.
    job: Option<WriteJob>,
    /// Status due at this cycle (set when performed).
    due: u64,
    err: bool,
}

#[derive(Debug)]
struct WriteJob {
    addr: u64,
    data: Vec<u8>,
    keep: Vec<bool>,
}

/// Data beats of one write, collected until `last`.
#[derive(Debug, Default)]
struct Chunk {
    data: Vec<u8>,
    keep: Vec<bool>,
    last_cycle: u64,
}

/// A Verilated engine behind the [`Device`] trait (see the module documentation).
pub struct RtlDevice {
    model: VerilatedModel,
    p: TopHandles,
    cfg: RtlDeviceConfig,
    chan: DmaChannels,
    /// All cycles clocked (reset, world, bar_read): the trace time base and TX pattern.
    cycles: u64,
    /// The last world cycle ticked: the frozen schedule clock of `bar_read`.
    last_now: u64,
    ticked: bool,
    dead: bool,

    reg_q: VecDeque<RegReq>,
    /// Reads accepted by the engine whose answer has not been taken.
    reads_in_flight: u32,
    read_answers: VecDeque<u32>,

    rd_q: VecDeque<ReadEntry>,
    /// The response beat currently driven (entry index 0, beat), to skip redundant sets.
    rd_driven: Option<(u64, usize)>,
    rd_head_serial: u64,

    wr_reqs: VecDeque<(u64, usize)>,
    wr_chunks: VecDeque<Chunk>,
    wr_cur: Chunk,
    wr_done: VecDeque<WriteEntry>,
    /// Byte-time (cycles x bytes_per_cycle) at which the write channel is free.
    wr_free: u64,
    last_status_due: u64,

    rx_cur: Option<Frame>,
    rx_off: usize,
    tx_cur: Vec<u8>,
    tx_frames: Vec<Frame>,

    stats: RtlDeviceStats,
    errors: Vec<RtlDeviceError>,
    words: [u32; BEAT_WORDS],
    /// Last value written to each narrow input (by port index), so unchanged inputs cost
    /// no call into the model; `None` = not written yet.
    shadow: Vec<Option<u64>>,
}

impl std::fmt::Debug for RtlDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RtlDevice")
            .field("model", &self.model)
            .field("cycles", &self.cycles)
            .field("dead", &self.dead)
            .field("stats", &self.stats)
            .finish()
    }
}

impl RtlDevice {
    /// Instantiates `lib` (checked against [`TOP_PORTS`]), opens the trace if asked for,
    /// and holds reset for `cfg.reset_cycles`.
    pub fn new(lib: &VerilatedLib, cfg: RtlDeviceConfig) -> Result<Self, RtlDeviceError> {
        cfg.validate()?;
        check_ports(lib.ports())?;
        Self::from_model(lib.instantiate()?, cfg)
    }

    /// As [`new`](Self::new), from a model already instantiated (and not yet clocked).
    pub fn from_model(
        mut model: VerilatedModel,
        cfg: RtlDeviceConfig,
    ) -> Result<Self, RtlDeviceError> {
        cfg.validate()?;
        check_ports(model.ports())?;
        let p = TopHandles::lookup(&model)?;
        if let Some(path) = &cfg.trace {
            model.trace_to(path)?;
        }
        let mut dev = RtlDevice {
            model,
            p,
            chan: DmaChannels::new(cfg.dma)
                .map_err(|e| RtlDeviceError::InvalidConfig(e.to_string()))?,
            cfg,
            cycles: 0,
            last_now: 0,
            ticked: false,
            dead: false,
            reg_q: VecDeque::new(),
            reads_in_flight: 0,
            read_answers: VecDeque::new(),
            rd_q: VecDeque::new(),
            rd_driven: None,
            rd_head_serial: 0,
            wr_reqs: VecDeque::new(),
            wr_chunks: VecDeque::new(),
            wr_cur: Chunk::default(),
            wr_done: VecDeque::new(),
            wr_free: 0,
            last_status_due: 0,
            rx_cur: None,
            rx_off: 0,
            tx_cur: Vec::new(),
            tx_frames: Vec::new(),
            stats: RtlDeviceStats {
                min_read_latency: u64::MAX,
                ..RtlDeviceStats::default()
            },
            errors: Vec::new(),
            words: [0; BEAT_WORDS],
            shadow: Vec::new(),
        };
        dev.shadow = vec![None; dev.model.ports().len()];
        dev.reset()?;
        Ok(dev)
    }

    fn reset(&mut self) -> Result<(), RtlError> {
        // Every input starts at zero; only reset is high.
        for t in TOP_PORTS {
            if t.dir == PortDir::Input {
                let port = self.model.port(t.name)?;
                if self.model.port_info(port)?.width > 64 {
                    self.model.set_wide(port, &[0; BEAT_WORDS])?;
                } else {
                    self.model.set(port, 0)?;
                }
            }
        }
        self.model.set(self.p.reset, 1)?;
        for _ in 0..self.cfg.reset_cycles {
            self.clock_low()?;
            self.clock_high()?;
        }
        self.model.set(self.p.reset, 0)?;
        self.stats.reset_cycles = self.cfg.reset_cycles;
        Ok(())
    }

    /// The configuration.
    pub fn config(&self) -> &RtlDeviceConfig {
        &self.cfg
    }

    /// The counters.
    pub fn stats(&self) -> RtlDeviceStats {
        self.stats
    }

    /// Errors recorded while running (timeouts, contract breaches, a fatal RTL error), oldest
    /// first; at most [`MAX_KEPT_ERRORS`] are kept ([`RtlDeviceStats::errors`] counts all).
    pub fn errors(&self) -> &[RtlDeviceError] {
        &self.errors
    }

    /// Takes the recorded errors.
    pub fn take_errors(&mut self) -> Vec<RtlDeviceError> {
        std::mem::take(&mut self.errors)
    }

    /// Whether a fatal RTL error stopped the device.
    pub fn is_dead(&self) -> bool {
        self.dead
    }

    /// All clock cycles run so far (reset + world + `bar_read`).
    pub fn cycles(&self) -> u64 {
        self.cycles
    }

    /// The Verilated model (to peek at extra outputs).
    pub fn model(&self) -> &VerilatedModel {
        &self.model
    }

    /// Flushes the trace file, if one is open.
    pub fn flush_trace(&mut self) {
        self.model.flush_trace();
    }

    fn record(&mut self, e: RtlDeviceError) {
        self.stats.errors += 1;
        if self.errors.len() < MAX_KEPT_ERRORS {
            self.errors.push(e);
        }
    }

    fn protocol(&mut self, what: String) {
        let cycle = self.cycles;
        self.record(RtlDeviceError::Protocol { cycle, what });
    }

    fn fail(&mut self, e: RtlError) {
        self.dead = true;
        self.record(RtlDeviceError::Rtl(e));
    }

    /// Sets a narrow input unless it already holds `v`.
    fn put(&mut self, port: Port, v: u64) -> Result<(), RtlError> {
        let slot = &mut self.shadow[port.index as usize];
        if *slot != Some(v) {
            *slot = Some(v);
            self.model.set(port, v)?;
        }
        Ok(())
    }

    fn half(&self) -> u64 {
        crate::rtl::DEFAULT_HALF_PERIOD
    }

    fn clock_low(&mut self) -> Result<(), RtlError> {
        self.model
            .set_time(self.cycles * 2 * self.half() + self.half());
        self.model.set(self.p.clock, 0)?;
        self.model.eval()?;
        if self.model.is_tracing() {
            self.model.dump_trace();
        }
        Ok(())
    }

    fn clock_high(&mut self) -> Result<(), RtlError> {
        self.model.set_time((self.cycles + 1) * 2 * self.half());
        self.model.set(self.p.clock, 1)?;
        self.model.eval()?;
        if self.model.is_tracing() {
            self.model.dump_trace();
        }
        self.cycles += 1;
        Ok(())
    }

    /// `mac_rx_pause` as the last clock edge left it (a read error counts as no pause: the
    /// failure is recorded by the next cycle's port access).
    fn pause_requested(&self) -> bool {
        self.model.get(self.p.mac_rx_pause).is_ok_and(|v| v == 1)
    }

    fn tx_ready_now(&self) -> bool {
        match self.cfg.tx_ready {
            TxReady::Always => true,
            TxReady::Duty { on, period } => self.cycles % u64::from(period) < u64::from(on),
        }
    }

    /// Serves a read through the port: reads the data at once, books the channel.
    fn serve_read(&mut self, now: u64, addr: u64, len: usize, dma: &mut dyn DmaPort) -> ReadState {
        let lat = self.cfg.dma.read_latency_cycles;
        if len == 0 || len > MAX_DMA_LEN {
            return ReadState::Ready {
                data: None,
                base: now + lat,
            };
        }
        let mut buf = vec![0u8; len];
        match dma.dma_read(now, addr, &mut buf) {
            Ok(_) => {
                self.stats.dma_read_bytes += len as u64;
                let done = self.chan.read(now, len);
                let xfer = (len as u64).div_ceil(self.cfg.dma.bytes_per_cycle);
                ReadState::Ready {
                    data: Some(buf),
                    base: done - xfer,
                }
            }
            // A refused read costs no channel time, as in `crate::dma`.
            Err(_) => ReadState::Ready {
                data: None,
                base: now + lat,
            },
        }
    }

    /// The cycle beat `i` of a served read is due.
    fn beat_due(&self, e: &ReadEntry, i: usize) -> Option<u64> {
        match &e.state {
            ReadState::Deferred { .. } => None,
            ReadState::Ready { data: None, base } => Some(base + 1),
            ReadState::Ready { base, .. } => {
                let upto = ((i + 1) * BEAT_BYTES).min(e.len) as u64;
                Some(base + upto.div_ceil(self.cfg.dma.bytes_per_cycle))
            }
        }
    }

    /// Performs a write whose data is complete; returns whether the IOMMU refused it.
    fn perform_write(&mut self, job: &WriteJob, last_beat: u64, dma: &mut dyn DmaPort) -> bool {
        let mut err = false;
        let mut i = 0;
        // Each run of enabled bytes is one access; the contract's single run is the rule.
        while i < job.data.len() && !err {
            if !job.keep[i] {
                i += 1;
                continue;
            }
            let start = i;
            while i < job.data.len() && job.keep[i] {
                i += 1;
            }
            match dma.dma_write(last_beat, job.addr + start as u64, &job.data[start..i]) {
                Ok(_) => self.stats.dma_write_bytes += (i - start) as u64,
                Err(_) => err = true,
            }
        }
        err
    }

    /// Status due cycle for a write whose last beat was taken at `last_beat`.
    fn status_due(&mut self, last_beat: u64) -> u64 {
        let due = (last_beat + 1 + self.cfg.dma.write_latency_cycles).max(self.last_status_due + 1);
        self.last_status_due = due;
        due
    }

    /// Serves DMA accepted inside `bar_read` (no port then), in order.
    fn serve_deferred(&mut self, now: u64, dma: &mut dyn DmaPort) {
        for k in 0..self.rd_q.len() {
            if let ReadState::Deferred { addr } = self.rd_q[k].state {
                let len = self.rd_q[k].len;
                let st = self.serve_read(now, addr, len, dma);
                if matches!(st, ReadState::Ready { data: None, .. }) {
                    self.stats.dma_read_errors += 1;
                }
                self.rd_q[k].state = st;
            }
        }
        for k in 0..self.wr_done.len() {
            if let Some(job) = self.wr_done[k].job.take() {
                let err = self.perform_write(&job, now, dma);
                let due = self.status_due(now);
                let e = &mut self.wr_done[k];
                e.err |= err;
                e.due = due;
            }
        }
    }

    /// Pairs complete data chunks with their requests and performs them (or defers them).
    fn pair_writes(&mut self, mut dma: Option<&mut (dyn DmaPort + '_)>) {
        while !self.wr_reqs.is_empty() && !self.wr_chunks.is_empty() {
            let (addr, len) = self.wr_reqs.pop_front().unwrap();
            let chunk = self.wr_chunks.pop_front().unwrap();
            self.stats.dma_writes += 1;
            let beats = chunk.data.len() / BEAT_BYTES;
            let mut job = WriteJob {
                addr,
                data: chunk.data,
                keep: chunk.keep,
            };
            let contract_keep = (0..job.keep.len()).all(|j| job.keep[j] == (j < len));
            if len == 0 || len > MAX_DMA_LEN {
                self.protocol(format!(
                    "DMA write of {len} bytes at {addr:#x} (1..=8192 allowed): nothing written, err status"
                ));
                job.keep.iter_mut().for_each(|k| *k = false);
            } else if beats != len.div_ceil(BEAT_BYTES) || !contract_keep {
                self.protocol(format!(
                    "DMA write of {len} bytes at {addr:#x} came with {beats} beats (want {}) \
                     or keep not covering exactly its bytes: wrote the bytes whose keep bit is set",
                    len.div_ceil(BEAT_BYTES)
                ));
            }
            let bad_len = len == 0 || len > MAX_DMA_LEN;
            let entry = match dma.as_deref_mut() {
                Some(d) => {
                    let err = bad_len || self.perform_write(&job, chunk.last_cycle, d);
                    WriteEntry {
                        job: None,
                        due: self.status_due(chunk.last_cycle),
                        err,
                    }
                }
                None => {
                    self.stats.dma_deferred += 1;
                    WriteEntry {
                        err: bad_len,
                        job: Some(job),
                        due: 0,
                    }
                }
            };
            self.wr_done.push_back(entry);
        }
    }

    /// One clock cycle with every port serviced; `now` is the schedule clock (the world
    /// cycle, or the frozen one inside `bar_read`); `dma` is `None` inside `bar_read`.
    fn cycle(
        &mut self,
        now: u64,
        mut dma: Option<&mut (dyn DmaPort + '_)>,
    ) -> Result<(), RtlError> {
        let p = self.p;

        // ---- inputs, from the adapter's state only ----
        match self.reg_q.front() {
            Some(r) => {
                let r = *r;
                self.put(p.reg_valid, 1)?;
                self.put(p.reg_write, u64::from(r.write))?;
                // A 32-bit access: the low two offset bits select nothing.
                self.put(p.reg_addr, u64::from(r.offset & (BAR0_SIZE - 4)))?;
                self.put(p.reg_wdata, u64::from(r.value))?;
            }
            None => self.put(p.reg_valid, 0)?,
        }

        let mut resp_valid = false;
        if let Some(e) = self.rd_q.front() {
            let i = e.next_beat;
            if self.beat_due(e, i).is_some_and(|t| t <= now) {
                resp_valid = true;
                if self.rd_driven != Some((self.rd_head_serial, i)) {
                    let (last, err) = match &e.state {
                        ReadState::Ready { data: Some(d), .. } => {
                            let lo = i * BEAT_BYTES;
                            let hi = (lo + BEAT_BYTES).min(d.len());
                            pack(&d[lo..hi], &mut self.words);
                            (i + 1 == e.beats(), false)
                        }
                        _ => {
                            self.words = [0; BEAT_WORDS];
                            (true, true)
                        }
                    };
                    let tag = e.tag;
                    self.model.set_wide(p.dma_rd_resp_data, &self.words)?;
                    self.put(p.dma_rd_resp_tag, u64::from(tag))?;
                    self.put(p.dma_rd_resp_last, u64::from(last))?;
                    self.put(p.dma_rd_resp_err, u64::from(err))?;
                    self.rd_driven = Some((self.rd_head_serial, i));
                }
            }
        }
        self.put(p.dma_rd_resp_valid, u64::from(resp_valid))?;

        let status = self
            .wr_done
            .front()
            .filter(|w| w.job.is_none() && w.due <= now)
            .map(|w| w.err);
        self.put(p.dma_wr_status_valid, u64::from(status.is_some()))?;
        self.put(p.dma_wr_status_err, u64::from(status == Some(true)))?;

        let outstanding = self.rd_q.len();
        self.put(
            p.dma_rd_req_ready,
            u64::from(outstanding < self.cfg.max_outstanding_reads),
        )?;
        let writes_open = self.wr_reqs.len() + self.wr_done.len();
        self.put(
            p.dma_wr_req_ready,
            u64::from(writes_open < self.cfg.max_outstanding_writes),
        )?;
        let bpc = self.cfg.dma.bytes_per_cycle;
        // Byte-credit pacing: a beat may start while the channel frees up during `now`.
        let data_ready = self.wr_free < (now + 1) * bpc
            && self.wr_chunks.len() < self.cfg.max_outstanding_writes;
        self.put(p.dma_wr_data_ready, u64::from(data_ready))?;
        let tx_ready = self.tx_ready_now();
        self.put(p.mac_tx_tready, u64::from(tx_ready))?;

        let mut rx_last = false;
        match &self.rx_cur {
            Some(f) => {
                let lo = self.rx_off;
                let hi = (lo + BEAT_BYTES).min(f.len());
                pack(&f[lo..hi], &mut self.words);
                rx_last = hi == f.len();
                let n = hi - lo;
                let keep = if n == BEAT_BYTES {
                    u64::MAX
                } else {
                    (1u64 << n) - 1
                };
                self.model.set_wide(p.mac_rx_tdata, &self.words)?;
                self.put(p.mac_rx_tkeep, keep)?;
                self.put(p.mac_rx_tlast, u64::from(rx_last))?;
                self.put(p.mac_rx_tuser, 0)?;
                self.put(p.mac_rx_tvalid, 1)?;
            }
            None => self.put(p.mac_rx_tvalid, 0)?,
        }

        // ---- settle and sample the cycle's handshakes ----
        self.clock_low()?;

        if self.reg_q.front().is_some() && self.model.get(p.reg_ready)? == 1 {
            let r = self.reg_q.pop_front().unwrap();
            if r.write {
                self.stats.bar_writes += 1;
            } else {
                self.reads_in_flight += 1;
            }
        }
        if self.model.get(p.reg_rdata_valid)? == 1 {
            let v = self.model.get(p.reg_rdata)? as u32;
            if self.reads_in_flight == 0 {
                self.protocol("reg_rdata_valid without an outstanding read: ignored".into());
            } else {
                self.reads_in_flight -= 1;
                self.read_answers.push_back(v);
            }
        }

        if outstanding < self.cfg.max_outstanding_reads && self.model.get(p.dma_rd_req_valid)? == 1
        {
            let addr = self.model.get(p.dma_rd_req_addr)?;
            let len = self.model.get(p.dma_rd_req_len)? as usize;
            let tag = self.model.get(p.dma_rd_req_tag)? as u8;
            self.stats.dma_reads += 1;
            if len == 0 || len > MAX_DMA_LEN {
                self.protocol(format!(
                    "DMA read of {len} bytes at {addr:#x} (1..=8192 allowed): answered with an error beat"
                ));
            }
            let state = match dma.as_deref_mut() {
                Some(d) => {
                    let st = self.serve_read(now, addr, len, d);
                    if matches!(st, ReadState::Ready { data: None, .. }) {
                        self.stats.dma_read_errors += 1;
                    }
                    st
                }
                None => {
                    self.stats.dma_deferred += 1;
                    ReadState::Deferred { addr }
                }
            };
            self.rd_q.push_back(ReadEntry {
                tag,
                len,
                req_cycle: now,
                state,
                next_beat: 0,
            });
            self.stats.max_reads_outstanding =
                self.stats.max_reads_outstanding.max(self.rd_q.len() as u64);
        }

        if resp_valid && self.model.get(p.dma_rd_resp_ready)? == 1 {
            self.stats.dma_read_beats += 1;
            let e = self.rd_q.front_mut().unwrap();
            if e.next_beat == 0 {
                let lat = now.saturating_sub(e.req_cycle);
                self.stats.min_read_latency = self.stats.min_read_latency.min(lat);
            }
            e.next_beat += 1;
            if e.next_beat == e.beats() {
                self.rd_q.pop_front();
                self.rd_head_serial += 1;
            }
        }

        if writes_open < self.cfg.max_outstanding_writes && self.model.get(p.dma_wr_req_valid)? == 1
        {
            let addr = self.model.get(p.dma_wr_req_addr)?;
            let len = self.model.get(p.dma_wr_req_len)? as usize;
            self.wr_reqs.push_back((addr, len));
        }
        if data_ready && self.model.get(p.dma_wr_data_valid)? == 1 {
            self.model.get_wide_into(p.dma_wr_data, &mut self.words)?;
            let keep = self.model.get(p.dma_wr_data_keep)?;
            let last = self.model.get(p.dma_wr_data_last)? == 1;
            let bytes = unpack(&self.words);
            self.wr_cur.data.extend_from_slice(&bytes);
            self.wr_cur
                .keep
                .extend((0..BEAT_BYTES).map(|j| keep >> j & 1 == 1));
            self.wr_free = self.wr_free.max(now * bpc) + BEAT_BYTES as u64;
            if last {
                let mut chunk = std::mem::take(&mut self.wr_cur);
                chunk.last_cycle = now;
                self.wr_chunks.push_back(chunk);
            }
        }
        self.pair_writes(dma);

        if let Some(err) = status {
            self.wr_done.pop_front();
            self.stats.dma_write_statuses += 1;
            if err {
                self.stats.dma_write_errors += 1;
            }
        }

        if tx_ready && self.model.get(p.mac_tx_tvalid)? == 1 {
            self.model.get_wide_into(p.mac_tx_tdata, &mut self.words)?;
            let keep = self.model.get(p.mac_tx_tkeep)?;
            let last = self.model.get(p.mac_tx_tlast)? == 1;
            self.stats.tx_beats += 1;
            let n = keep.trailing_ones() as usize;
            let contiguous = keep == if n == 64 { u64::MAX } else { (1u64 << n) - 1 };
            if !contiguous || (!last && n != BEAT_BYTES) || keep == 0 {
                self.protocol(format!(
                    "MAC TX beat with tkeep {keep:#018x} (last {last}): took the bytes whose keep bit is set"
                ));
            }
            let bytes = unpack(&self.words);
            if contiguous {
                self.tx_cur.extend_from_slice(&bytes[..n]);
            } else {
                self.tx_cur.extend(
                    (0..BEAT_BYTES)
                        .filter(|&j| keep >> j & 1 == 1)
                        .map(|j| bytes[j]),
                );
            }
            if last {
                self.tx_frames.push(std::mem::take(&mut self.tx_cur));
                self.stats.tx_frames += 1;
            }
        }

        if self.rx_cur.is_some() {
            self.stats.rx_beats += 1;
            self.rx_off += BEAT_BYTES;
            if rx_last {
                self.rx_cur = None;
                self.rx_off = 0;
                self.stats.rx_frames += 1;
            }
        }

        self.clock_high()
    }

    /// `bar_read` of a live device: drain the posted writes, then read, both bounded.
    fn read_reg(&mut self, offset: u32) -> Result<u32, RtlError> {
        let mut used = 0u64;
        let r = self.read_reg_counted(offset, &mut used);
        self.stats.bar_read_cycles += used;
        r
    }

    fn read_reg_counted(&mut self, offset: u32, used: &mut u64) -> Result<u32, RtlError> {
        let frozen = self.last_now;
        let budget = self.cfg.bar_read_timeout_cycles;
        // A read never passes the writes posted before it.
        while !self.reg_q.is_empty() {
            if *used >= budget {
                let pending = self.reg_q.len();
                self.record(RtlDeviceError::WriteDrainTimeout {
                    offset,
                    pending,
                    cycles: *used,
                });
                return Ok(DEAD_READ);
            }
            self.cycle(frozen, None)?;
            *used += 1;
        }
        self.reg_q.push_back(RegReq {
            write: false,
            offset,
            value: 0,
        });
        loop {
            if let Some(v) = self.read_answers.pop_front() {
                self.stats.bar_reads += 1;
                return Ok(v);
            }
            if *used >= budget {
                // Still queued: withdraw it. Accepted: count it as lost. The register port
                // has no tags, so an answer later than the timeout cannot be told from the
                // next read's; after 50 us it is a breach of the contract anyway. If one
                // comes while no read is outstanding it is recorded as such.
                if self.reg_q.pop_back().is_none() {
                    self.reads_in_flight = self.reads_in_flight.saturating_sub(1);
                }
                self.record(RtlDeviceError::ReadTimeout {
                    offset,
                    cycles: *used,
                });
                return Ok(DEAD_READ);
            }
            self.cycle(frozen, None)?;
            *used += 1;
        }
    }
}

impl Device for RtlDevice {
    fn bar_read(&mut self, offset: u32) -> u32 {
        if self.dead {
            self.record(RtlDeviceError::Dead { offset });
            return DEAD_READ;
        }
        if offset >= BAR0_SIZE {
            self.record(RtlDeviceError::BadOffset {
                offset,
                write: false,
            });
            return DEAD_READ;
        }
        match self.read_reg(offset) {
            Ok(v) => v,
            Err(e) => {
                self.fail(e);
                DEAD_READ
            }
        }
    }

    fn bar_write(&mut self, offset: u32, value: u32) {
        if offset >= BAR0_SIZE {
            self.record(RtlDeviceError::BadOffset {
                offset,
                write: true,
            });
        } else if !self.dead {
            self.reg_q.push_back(RegReq {
                write: true,
                offset,
                value,
            });
        }
    }

    fn tick(&mut self, now: u64, io: &mut DeviceIo<'_>) {
        if self.dead {
            return;
        }
        if self.ticked && now > self.last_now + 1 {
            self.stats.skipped_cycles += now - self.last_now - 1;
        }
        self.ticked = true;
        self.last_now = now;
        self.serve_deferred(now, &mut *io.dma);
        // The engine's pause request holds the next frame in the link (PFC: the partner
        // stops at a frame boundary); a frame already started goes on.
        let paused = self.rx_cur.is_none() && !io.rx.is_empty() && self.pause_requested();
        if paused {
            self.stats.rx_pause_cycles += 1;
        }
        if self.rx_cur.is_none() && !paused {
            // An empty frame has no beat to drive: it is dropped.
            while let Some(f) = io.rx.pop_front() {
                if !f.is_empty() {
                    self.rx_cur = Some(f);
                    self.rx_off = 0;
                    break;
                }
            }
        }
        if let Err(e) = self.cycle(now, Some(&mut *io.dma)) {
            self.fail(e);
        }
        self.stats.world_cycles += 1;
        io.tx.append(&mut self.tx_frames);
    }

    /// Always the next cycle while the device runs (see the module documentation: the
    /// engine's timers are not visible on its ports); `None` once it is dead.
    fn next_event(&self, now: u64) -> Option<u64> {
        (!self.dead).then_some(now + 1)
    }

    /// A Verilated cycle costs tens of microseconds: worth a thread of its own.
    fn parallel(&mut self) -> Option<&mut (dyn Device + Send)> {
        Some(self)
    }
}

/// A device moves between threads with its world (a driver backend may run it on its own).
const _: () = {
    const fn send<T: Send>() {}
    send::<RtlDevice>();
};

/// Packs up to 64 bytes into 16 little-endian words (byte 0 in bits 7:0), zero-filled.
fn pack(bytes: &[u8], words: &mut [u32; BEAT_WORDS]) {
    let mut lanes = [0u8; BEAT_BYTES];
    lanes[..bytes.len()].copy_from_slice(bytes);
    for (w, c) in words.iter_mut().zip(lanes.chunks_exact(4)) {
        *w = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
    }
}

/// The 64 bytes of a beat.
fn unpack(words: &[u32; BEAT_WORDS]) -> [u8; BEAT_BYTES] {
    let mut out = [0u8; BEAT_BYTES];
    for (c, w) in out.chunks_exact_mut(4).zip(words) {
        c.copy_from_slice(&w.to_le_bytes());
    }
    out
}

/// The model name the engine is built under (`V<name>` in the cache directory).
pub const ENGINE_MODEL: &str = "engine";

/// The engine's Verilog (`rocenic_hdl::Design::Engine`), generated once per process:
/// generating it takes seconds, and every [`engine_lib`] call needs it to key the cache.
pub fn engine_verilog() -> &'static str {
    static VERILOG: OnceLock<String> = OnceLock::new();
    VERILOG.get_or_init(|| rocenic_hdl::Design::Engine.verilog())
}

/// The engine top (`rocenic_hdl::Design::Engine`, module `top`) as a Verilated library
/// that can write a `trace` in that format. Without a format it is built with VCD tracing
/// compiled in all the same: a model writes a trace only once one is opened, so the demo,
/// the tests and `--trace FILE.vcd` share one build (an engine build is the slowest step
/// of a cold run); only FST needs a build of its own. The per-cycle cost of the idle,
/// compiled-in trace code has not been measured.
/// The build is cached by content under the Verilator cache directory
/// ([`crate::rtl::default_cache_dir`]), and the loaded library is kept per process and
/// trace format, so later calls cost nothing. Fails with [`RtlError::ToolMissing`] (which
/// names the install command) without `verilator`/`g++`.
pub fn engine_lib(trace: Option<TraceFormat>) -> Result<VerilatedLib, RtlError> {
    static LIBS: Mutex<Vec<(TraceFormat, VerilatedLib)>> = Mutex::new(Vec::new());
    let format = trace.unwrap_or(TraceFormat::Vcd);
    // Held across the build: a second thread asking for the same library waits for it
    // instead of building it again (ModelBuilder's lock would serialise it anyway).
    let mut libs = LIBS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, lib)) = libs.iter().find(|(t, _)| *t == format) {
        return Ok(lib.clone());
    }
    let lib = ModelBuilder::from_string(engine_verilog(), "top")
        .name(ENGINE_MODEL)
        .trace(format)
        .build()?;
    libs.push((format, lib.clone()));
    Ok(lib)
}
