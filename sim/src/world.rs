//! The simulation world: nodes (a device with its host) joined by cables, stepped in cycles.
//!
//! # One cycle
//!
//! [`World::step`] executes cycle `now` and then advances `now` by one:
//!
//! 1. every link hands over the frames due at or before `now`; they are appended to the
//!    receiving node's rx queue (and recorded by [`TapPoint::Delivered`] taps);
//! 2. every device is ticked once, in node order, with a [`DeviceIo`] holding its host's
//!    memory through the IOMMU ([`SimDma`]), its rx queue and an empty tx list;
//! 3. the frames each device put in tx are recorded by [`TapPoint::Sent`] taps (what was
//!    sent, before any fault) and sent into the node's outgoing link at cycle `now`.
//!
//! A frame sent in cycle `t` reaches the peer's rx queue no earlier than `t + 1` (the
//! link's serialisation always takes at least one cycle), so the order in which nodes are
//! ticked never matters.
//!
//! # Skipping idle time
//!
//! [`World::run_until`] and [`World::advance`] do not execute cycles in which nothing can
//! happen. After executing cycle `c` they ask for the earliest *wake* cycle:
//!
//! - `c + 1` if any rx queue is not empty (a device that has not taken its frames is busy);
//! - else the minimum of every device's [`Device::next_event`]`(c)` and every link's next
//!   delivery cycle;
//!
//! and jump to it (never past their limit, never backwards). So the contract for a device:
//! **`next_event(c)`, called after `tick(c)`, returns the next cycle at which the device
//! must be ticked without new input (a timer, a DMA completion, work still queued);
//! `Some(t)` with `t <= c + 1` means "busy: tick me next cycle"; `None` means "idle until a
//! frame arrives or a register is written"**. Devices must therefore use the `now` passed
//! to [`Device::tick`] for time, never count ticks. A register write from outside (between
//! calls) is always followed by a tick: every run starts by executing a cycle.
//!
//! # Two threads
//!
//! A frame sent in cycle `t` cannot reach the other node before `t + 1 + latency` (the
//! serialisation takes a cycle at least, then the cable's latency), so within any span of
//! `latency + 1` cycles the two nodes of a cable do not see each other: each may run
//! that far on a thread of its own before they meet again (conservative lookahead, as
//! parallel discrete-event simulators do). [`World::advance`] does so when the world is
//! two nodes joined by one simulated cable (no UDP wire), and both devices offer
//! themselves through [`Device::parallel`] (the Verilated engine does: its tick is
//! costly; the behavioural model does not: a thread costs more than its tick). A span:
//!
//! 1. each link lends its frames in flight to the receiving node's thread, and each node
//!    holds back what it sends (the frames are sent into its link after the span, at the
//!    cycles they were sent, in order: what a link does to a frame depends only on the
//!    sequence of its sends);
//! 2. each thread executes its node's cycles one after another, as [`World::step`] does
//!    for all nodes, for as long as its node is busy (the idle-skipping rule below), to
//!    the end of the span at most;
//! 3. a node that stopped early (idle) is then stepped alone up to the other one's cycle
//!    (the busy node kept the world executing those cycles), tap records are merged into
//!    the order one thread writes them, and idle time is skipped as usual.
//!
//! Frames, completions, memory, statistics and cycle counts are therefore those of one
//! thread, bit for bit. [`World::run_until`] always runs on one thread (its condition is
//! looked at after every cycle). Two threads are off unless `ROCENIC_SIM_THREADS=2` is in
//! the environment or [`World::set_parallel`]`(true)` is called: a thread per span does
//! not yet pay on a two-core machine, where the driver's 16-cycle polls end the spans
//! early (docs/performance.md, "Simulation speed").
//!
//! # Real wires
//!
//! [`World::attach_udp`] gives a node a [`UdpWire`] instead of a simulated cable: its
//! frames leave as UDP datagrams to a real peer and the peer's frames arrive at the start
//! of the next executed cycle (step 1 above takes them from the wire too). From then on the
//! world's clock is paced against wall-clock time (the rule is in the [`crate::udp_wire`]
//! documentation): idle skips never run ahead of the real peer, and a skip that would is
//! spent waiting on the socket instead.
//!
//! # Nodes and addresses
//!
//! Each node's host gets its own VA range: node `i` starts at
//! `cfg.node.host.va_base + i * cfg.va_stride`, so a device that confuses a local address
//! with its peer's faults instead of silently working. IOVA ranges are alike on all nodes.

use core::fmt;
use std::any::Any;
use std::collections::VecDeque;
use std::io::Write;

use rocenic_proto::device::{Device, DeviceIo, Frame};

use crate::dma::{DmaChannels, DmaConfig, DmaStats, SimDma};
use crate::host::{Host, HostConfig, DEFAULT_VA_SIZE, PAGE_SIZE};
use crate::link::{DeliveryQueue, Link, LinkConfig, LinkStats};
use crate::pcap::PcapTap;
use crate::udp_wire::{UdpWire, WallClock};
use crate::SimError;
use std::time::Duration;

/// Names a node of one [`World`]. Methods taking a `NodeId` of another world (or a made-up
/// one) panic, as slice indexing does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(usize);

impl NodeId {
    /// The node's position in the world (0 for the first node added).
    pub fn index(self) -> usize {
        self.0
    }
}

/// Configuration of one node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeConfig {
    /// The host's address spaces and fault record.
    pub host: HostConfig,
    /// The DMA timing of the device.
    pub dma: DmaConfig,
    /// Frames the rx queue holds before arriving frames are dropped (as a full MAC FIFO
    /// drops them; counted in [`NodeStats::rx_overflow`]); `None` for no limit (default).
    pub rx_queue_limit: Option<usize>,
}

/// Configuration of a [`World`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorldConfig {
    /// Configuration of nodes added with [`World::add_node`] (VA base shifted per node).
    pub node: NodeConfig,
    /// Distance between the VA bases of consecutive nodes; page aligned. Default 64 GiB,
    /// the default VA size, so the nodes' VA ranges do not overlap.
    pub va_stride: u64,
}

impl Default for WorldConfig {
    fn default() -> Self {
        WorldConfig {
            node: NodeConfig::default(),
            va_stride: DEFAULT_VA_SIZE,
        }
    }
}

/// Where a tap records frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TapPoint {
    /// Frames as a node sent them, before the link's faults, at the cycle they were sent.
    Sent,
    /// Frames as the link delivered them to a node, at the cycle they arrived.
    Delivered,
}

/// Counters of one node's Ethernet port.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeStats {
    /// Frames the device sent.
    pub frames_sent: u64,
    /// Bytes of the frames the device sent.
    pub bytes_sent: u64,
    /// Frames put into the rx queue.
    pub frames_received: u64,
    /// Bytes of the frames put into the rx queue.
    pub bytes_received: u64,
    /// Frames dropped because the rx queue was full.
    pub rx_overflow: u64,
}

/// A device behind a uniform face, so the world can hand it out by concrete type too.
trait Hosted {
    fn device(&self) -> &dyn Device;
    fn device_mut(&mut self) -> &mut dyn Device;
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

struct Owned<D>(D);

impl<D: Device + 'static> Hosted for Owned<D> {
    fn device(&self) -> &dyn Device {
        &self.0
    }
    fn device_mut(&mut self) -> &mut dyn Device {
        &mut self.0
    }
    fn as_any(&self) -> &dyn Any {
        &self.0
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        &mut self.0
    }
}

struct Boxed(Box<dyn Device>);

impl Hosted for Boxed {
    fn device(&self) -> &dyn Device {
        &*self.0
    }
    fn device_mut(&mut self) -> &mut dyn Device {
        &mut *self.0
    }
    fn as_any(&self) -> &dyn Any {
        &self.0
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        &mut self.0
    }
}

struct Node {
    device: Box<dyn Hosted>,
    host: Host,
    dma: DmaChannels,
    rx: VecDeque<Frame>,
    tx: Vec<Frame>,
    rx_limit: Option<usize>,
    /// Index in `World::links` of the link this node sends into.
    link_out: Option<usize>,
    /// Index in `World::udp` of the node's UDP wire.
    udp: Option<usize>,
    /// Frames sent while the node had no cable.
    outbox: Vec<(u64, Frame)>,
    stats: NodeStats,
}

struct Wire {
    to: NodeId,
    link: Link,
}

struct UdpPort {
    node: NodeId,
    wire: UdpWire,
}

struct Tap {
    point: TapPoint,
    node: Option<NodeId>,
    /// `None` once the tap failed (the error is in `World::tap_error`).
    tap: Option<PcapTap<Box<dyn Write>>>,
}

/// N nodes, the cables between them, and the clock. See the module documentation for the
/// cycle and idle-skipping rules.
pub struct World {
    cfg: WorldConfig,
    now: u64,
    steps: u64,
    nodes: Vec<Node>,
    wires: Vec<Wire>,
    udp: Vec<UdpPort>,
    /// Set when the first UDP wire is attached: the clock is paced from then on.
    clock: Option<WallClock>,
    taps: Vec<Tap>,
    tap_error: Option<SimError>,
    /// Whether [`World::advance`] may step the two nodes on two threads.
    parallel: bool,
    /// Cycles executed on two threads.
    parallel_cycles: u64,
}

/// The environment variable that lets worlds step two nodes on two threads when set to `2`
/// (`1` or unset: one thread).
pub const THREADS_ENV: &str = "ROCENIC_SIM_THREADS";

/// Whether [`THREADS_ENV`] allows two threads: `2` does, unset or `1` does not; anything
/// else is refused.
fn parallel_from_env() -> Result<bool, SimError> {
    match std::env::var(THREADS_ENV) {
        Err(std::env::VarError::NotPresent) => Ok(false),
        Ok(v) if v.trim() == "1" => Ok(false),
        Ok(v) if v.trim() == "2" => Ok(true),
        Ok(v) => Err(SimError::InvalidConfig(format!(
            "{THREADS_ENV}={v:?}: 1 (one thread) or 2 (two nodes on two threads) expected"
        ))),
        Err(e) => Err(SimError::InvalidConfig(format!("{THREADS_ENV}: {e}"))),
    }
}

impl World {
    /// An empty world at cycle 0; refuses a bad configuration.
    pub fn new(cfg: WorldConfig) -> Result<Self, SimError> {
        cfg.node.dma.validate()?;
        Host::new(&cfg.node.host)?;
        if !cfg.va_stride.is_multiple_of(PAGE_SIZE) {
            return Err(SimError::InvalidConfig(
                "WorldConfig::va_stride must be page aligned".into(),
            ));
        }
        Ok(World {
            cfg,
            now: 0,
            steps: 0,
            nodes: Vec::new(),
            wires: Vec::new(),
            udp: Vec::new(),
            clock: None,
            taps: Vec::new(),
            tap_error: None,
            parallel: parallel_from_env()?,
            parallel_cycles: 0,
        })
    }

    /// Allows (`true`; the default when [`THREADS_ENV`] is `2`) or forbids (the default)
    /// stepping the two nodes on two threads (see the module documentation, "Two threads"). The results
    /// are the same either way; only the wall-clock time differs.
    pub fn set_parallel(&mut self, parallel: bool) {
        self.parallel = parallel;
    }

    /// Whether two threads are allowed ([`World::set_parallel`]).
    pub fn is_parallel(&self) -> bool {
        self.parallel
    }

    /// How many of the executed cycles ([`World::steps`]) ran on two threads.
    pub fn parallel_cycles(&self) -> u64 {
        self.parallel_cycles
    }

    /// Adds a node with the world's node configuration (its VA base shifted by the node's
    /// index times `va_stride`).
    ///
    /// # Panics
    /// If the shifted VA range does not fit in 64 bits.
    pub fn add_node<D: Device + 'static>(&mut self, device: D) -> NodeId {
        self.add_hosted(Box::new(Owned(device)))
    }

    /// [`World::add_node`] for a device that is already boxed; [`World::device_as`] then
    /// finds it as `Box<dyn Device>`.
    pub fn add_boxed_node(&mut self, device: Box<dyn Device>) -> NodeId {
        self.add_hosted(Box::new(Boxed(device)))
    }

    fn add_hosted(&mut self, device: Box<dyn Hosted>) -> NodeId {
        let mut cfg = self.cfg.node.clone();
        cfg.host.va_base = (self.nodes.len() as u64)
            .checked_mul(self.cfg.va_stride)
            .and_then(|shift| cfg.host.va_base.checked_add(shift))
            .expect("node VA base overflows");
        self.push_node(device, &cfg)
            .expect("node configuration was validated by World::new")
    }

    /// Adds a node with its own configuration, used as given (no VA shift).
    pub fn add_node_with<D: Device + 'static>(
        &mut self,
        device: D,
        cfg: &NodeConfig,
    ) -> Result<NodeId, SimError> {
        self.push_node(Box::new(Owned(device)), cfg)
    }

    fn push_node(&mut self, device: Box<dyn Hosted>, cfg: &NodeConfig) -> Result<NodeId, SimError> {
        let node = Node {
            device,
            host: Host::new(&cfg.host)?,
            dma: DmaChannels::new(cfg.dma)?,
            rx: VecDeque::new(),
            tx: Vec::new(),
            rx_limit: cfg.rx_queue_limit,
            link_out: None,
            udp: None,
            outbox: Vec::new(),
            stats: NodeStats::default(),
        };
        self.nodes.push(node);
        Ok(NodeId(self.nodes.len() - 1))
    }

    /// Joins the ports of `a` and `b` with a full-duplex cable: `ab` carries frames from
    /// `a` to `b`, `ba` the other way. Give the two directions different seeds unless
    /// correlated faults are wanted. Each node has one port.
    pub fn connect(
        &mut self,
        a: NodeId,
        b: NodeId,
        ab: LinkConfig,
        ba: LinkConfig,
    ) -> Result<(), SimError> {
        self.check(a);
        self.check(b);
        if a == b {
            return Err(SimError::SelfConnection(a));
        }
        for n in [a, b] {
            if self.is_cabled(n) {
                return Err(SimError::AlreadyConnected(n));
            }
        }
        let (link_ab, link_ba) = (Link::new(ab)?, Link::new(ba)?);
        self.nodes[a.0].link_out = Some(self.wires.len());
        self.wires.push(Wire {
            to: b,
            link: link_ab,
        });
        self.nodes[b.0].link_out = Some(self.wires.len());
        self.wires.push(Wire {
            to: a,
            link: link_ba,
        });
        Ok(())
    }

    /// Cables `node`'s port to a real wire: its frames leave through `wire` and what the
    /// peer sends arrives through it (see the module documentation, "Real wires"). From
    /// now on the clock is paced against wall-clock time.
    pub fn attach_udp(&mut self, node: NodeId, wire: UdpWire) -> Result<(), SimError> {
        self.check(node);
        if self.is_cabled(node) {
            return Err(SimError::AlreadyConnected(node));
        }
        self.nodes[node.0].udp = Some(self.udp.len());
        self.udp.push(UdpPort { node, wire });
        self.clock.get_or_insert_with(|| WallClock::start(self.now));
        Ok(())
    }

    /// The UDP wire of a node, if it has one.
    pub fn udp_wire(&self, node: NodeId) -> Option<&UdpWire> {
        self.nodes[node.0].udp.map(|u| &self.udp[u].wire)
    }

    /// The UDP wire of a node, writable (ARP resolution, captures).
    pub fn udp_wire_mut(&mut self, node: NodeId) -> Option<&mut UdpWire> {
        self.nodes[node.0].udp.map(|u| &mut self.udp[u].wire)
    }

    /// Whether the clock is paced against wall-clock time (a UDP wire is attached).
    pub fn is_paced(&self) -> bool {
        self.clock.is_some()
    }

    fn is_cabled(&self, id: NodeId) -> bool {
        let n = &self.nodes[id.0];
        n.link_out.is_some() || n.udp.is_some()
    }

    fn check(&self, id: NodeId) {
        assert!(id.0 < self.nodes.len(), "{id} is not a node of this world");
    }

    /// The next cycle to execute (cycles `0..now` have been simulated).
    pub fn now(&self) -> u64 {
        self.now
    }

    /// How many cycles were actually executed (the rest were skipped as idle).
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// The nodes, in the order they were added.
    pub fn nodes(&self) -> impl Iterator<Item = NodeId> {
        (0..self.nodes.len()).map(NodeId)
    }

    /// Executes one cycle (see the module documentation), without skipping.
    pub fn step(&mut self) {
        let now = self.now;
        let World {
            nodes,
            wires,
            udp,
            taps,
            tap_error,
            ..
        } = self;

        for port in udp.iter_mut() {
            let node = &mut nodes[port.node.0];
            for frame in port.wire.receive(now) {
                record(taps, tap_error, TapPoint::Delivered, port.node, now, &frame);
                if node.rx_limit.is_some_and(|limit| node.rx.len() >= limit) {
                    node.stats.rx_overflow += 1;
                    continue;
                }
                node.stats.frames_received += 1;
                node.stats.bytes_received += frame.len() as u64;
                node.rx.push_back(frame);
            }
        }

        for wire in wires.iter_mut() {
            let node = &mut nodes[wire.to.0];
            while let Some((_, frame)) = wire.link.receive(now) {
                record(taps, tap_error, TapPoint::Delivered, wire.to, now, &frame);
                if node.rx_limit.is_some_and(|limit| node.rx.len() >= limit) {
                    node.stats.rx_overflow += 1;
                    continue;
                }
                node.stats.frames_received += 1;
                node.stats.bytes_received += frame.len() as u64;
                node.rx.push_back(frame);
            }
        }

        for node in nodes.iter_mut() {
            let Node {
                device,
                host,
                dma,
                rx,
                tx,
                ..
            } = node;
            let mut port = SimDma::new(host, dma);
            let mut io = DeviceIo {
                dma: &mut port,
                rx,
                tx,
            };
            device.device_mut().tick(now, &mut io);
        }

        for (i, node) in nodes.iter_mut().enumerate() {
            for frame in node.tx.drain(..) {
                record(taps, tap_error, TapPoint::Sent, NodeId(i), now, &frame);
                node.stats.frames_sent += 1;
                node.stats.bytes_sent += frame.len() as u64;
                match (node.link_out, node.udp) {
                    (Some(w), _) => {
                        wires[w].link.send(now, frame);
                    }
                    (None, Some(u)) => udp[u].wire.send(now, &frame),
                    (None, None) => node.outbox.push((now, frame)),
                }
            }
        }

        self.now += 1;
        self.steps += 1;
    }

    /// The earliest cycle, after the cycle just executed, at which anything can happen
    /// (see the module documentation); `u64::MAX` when everything is idle. Only meaningful
    /// right after [`World::step`].
    fn next_wake(&self) -> u64 {
        let last = self.now.saturating_sub(1);
        let mut wake = u64::MAX;
        for node in &self.nodes {
            if !node.rx.is_empty() {
                return self.now;
            }
            if let Some(t) = node.device.device().next_event(last) {
                wake = wake.min(t);
            }
        }
        for wire in &self.wires {
            if let Some(t) = wire.link.next_delivery() {
                wake = wake.min(t);
            }
        }
        wake.max(self.now)
    }

    /// Jumps over idle cycles, no further than `limit` (and, with a UDP wire, no further
    /// than wall-clock time allows).
    fn skip_idle(&mut self, limit: u64) {
        let wake = self.next_wake().min(limit);
        match self.clock {
            None => self.now = self.now.max(wake),
            Some(clock) => self.paced_skip(clock, wake),
        }
    }

    /// The pacing rule (see `udp_wire`): move towards `wake` no faster than wall-clock
    /// time, waiting on the wires meanwhile; stop early, at the current wall-clock cycle,
    /// when a datagram is waiting.
    fn paced_skip(&mut self, clock: WallClock, wake: u64) {
        /// Longest single wait, so that a world with several wires still polls them all.
        const SLICE: Duration = Duration::from_millis(100);
        loop {
            self.now = self.now.max(clock.cycle_now().min(wake));
            if self.now >= wake || self.udp.iter_mut().any(|p| p.wire.has_input()) {
                return;
            }
            let left = clock.until(wake);
            match self.udp.as_mut_slice() {
                [one] => {
                    one.wire.wait_input(left.min(SLICE));
                }
                // Several wires: poll them in short sleeps.
                _ => std::thread::sleep(left.min(Duration::from_micros(200))),
            }
        }
    }

    /// Simulates cycles `now..now + cycles`, skipping idle ones; afterwards `now()` has
    /// grown by exactly `cycles`.
    pub fn advance(&mut self, cycles: u64) {
        let limit = self.now.saturating_add(cycles);
        while self.now < limit {
            if !self.step_parallel(limit) {
                self.step();
            }
            self.skip_idle(limit);
        }
    }

    /// The span a two-thread step may cover from `now`, if the world allows one: the
    /// incoming wire of each node, and the first cycle after the span.
    fn parallel_span(&mut self, limit: u64) -> Option<([usize; 2], u64)> {
        if !self.parallel || self.clock.is_some() || !self.udp.is_empty() {
            return None;
        }
        let [a, b] = self.nodes.as_mut_slice() else {
            return None;
        };
        let (Some(wa), Some(wb)) = (a.link_out, b.link_out) else {
            return None;
        };
        if a.device.device_mut().parallel().is_none() || b.device.device_mut().parallel().is_none()
        {
            return None;
        }
        // A frame sent in cycle t arrives at t + 1 + latency at the earliest.
        let lookahead = self
            .wires
            .iter()
            .map(|w| w.link.config().latency_cycles)
            .min()?
            .saturating_add(1);
        let end = self.now.saturating_add(lookahead).min(limit);
        // One cycle is cheaper on one thread.
        (end - self.now >= 2).then_some(([wb, wa], end))
    }

    /// Executes cycles from `now` on two threads (see the module documentation, "Two
    /// threads") and returns `true`, or returns `false` if the world does not allow it.
    fn step_parallel(&mut self, limit: u64) -> bool {
        let Some((incoming, end)) = self.parallel_span(limit) else {
            return false;
        };
        let start = self.now;
        let World {
            nodes,
            wires,
            taps,
            tap_error,
            ..
        } = self;
        let wants = |point: TapPoint, id: usize| {
            taps.iter()
                .any(|t| t.tap.is_some() && t.point == point && t.node.is_none_or(|n| n.0 == id))
        };
        let tap_rx = [wants(TapPoint::Delivered, 0), wants(TapPoint::Delivered, 1)];
        let queues = incoming.map(|w| wires[w].link.take_queue());
        let [qa, qb] = queues;
        let [na, nb] = nodes.as_mut_slice() else {
            unreachable!("parallel_span checked two nodes")
        };
        let (Some(la), Some(lb)) = (Lane::new(na, qa, tap_rx[0]), Lane::new(nb, qb, tap_rx[1]))
        else {
            unreachable!("parallel_span checked both devices")
        };
        let (mut la, mut lb) = std::thread::scope(|s| {
            let other = s.spawn(move || {
                let mut lb = lb;
                lb.run(start, end, true);
                lb
            });
            let mut la = la;
            la.run(start, end, true);
            match other.join() {
                Ok(lb) => (la, lb),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        });
        // The busy node kept the world executing: the other one catches up.
        let next = la.next.max(lb.next);
        la.run(la.next, next, false);
        lb.run(lb.next, next, false);

        let lanes = [la.finish(), lb.finish()];
        // Tap records in one thread's order: each cycle's deliveries in wire order, then
        // its sends in node order.
        let mut rx_at = [0usize; 2];
        let mut tx_at = [0usize; 2];
        for cycle in start..next {
            for w in wires.iter() {
                let (i, lane) = (w.to.0, &lanes[w.to.0]);
                while let Some((c, f)) = lane.delivered.get(rx_at[i]).filter(|(c, _)| *c == cycle) {
                    record(taps, tap_error, TapPoint::Delivered, w.to, *c, f);
                    rx_at[i] += 1;
                }
            }
            for (i, lane) in lanes.iter().enumerate() {
                while let Some((c, f)) = lane.sent.get(tx_at[i]).filter(|(c, _)| *c == cycle) {
                    record(taps, tap_error, TapPoint::Sent, NodeId(i), *c, f);
                    tx_at[i] += 1;
                }
            }
        }
        // Every queue back in its link before any held-back frame is sent into one.
        let sent = lanes.map(|lane| (lane.queue, lane.received, lane.sent));
        let mut outgoing = Vec::with_capacity(2);
        for (i, (queue, received, frames)) in sent.into_iter().enumerate() {
            wires[incoming[i]].link.restore_queue(queue, received);
            outgoing.push((nodes[i].link_out, frames));
        }
        for (out, frames) in outgoing {
            let out = out.expect("parallel_span checked the cables");
            for (c, f) in frames {
                wires[out].link.send(c, f);
            }
        }
        self.steps += next - start;
        self.parallel_cycles += next - start;
        self.now = next;
        true
    }

    /// Runs until `cond` holds, for at most `max_cycles` cycles, skipping idle ones, and
    /// returns the cycle `now()` at which it held. `cond` is checked first, then after each
    /// executed cycle and after each jump over idle cycles (in which nothing changes but
    /// the clock). So when an executed cycle `c` makes `cond` true, the answer is `c + 1`.
    pub fn run_until(
        &mut self,
        mut cond: impl FnMut(&World) -> bool,
        max_cycles: u64,
    ) -> Result<u64, SimError> {
        let limit = self.now.saturating_add(max_cycles);
        if cond(self) {
            return Ok(self.now);
        }
        loop {
            if self.now >= limit {
                return Err(SimError::Timeout {
                    now: self.now,
                    max_cycles,
                });
            }
            self.step();
            // Checked before skipping, so the answer is the cycle right after the one that
            // made `cond` true; and after skipping, for conditions on the clock.
            if cond(self) {
                return Ok(self.now);
            }
            let before = self.now;
            self.skip_idle(limit);
            if self.now != before && cond(self) {
                return Ok(self.now);
            }
        }
    }

    /// The host of a node.
    pub fn host(&self, id: NodeId) -> &Host {
        &self.nodes[id.0].host
    }

    /// The host of a node, for CPU access and (un)mapping.
    pub fn host_mut(&mut self, id: NodeId) -> &mut Host {
        &mut self.nodes[id.0].host
    }

    /// A 32-bit read of the node's BAR0.
    pub fn bar_read(&mut self, id: NodeId, offset: u32) -> u32 {
        self.nodes[id.0].device.device_mut().bar_read(offset)
    }

    /// A 32-bit write of the node's BAR0.
    pub fn bar_write(&mut self, id: NodeId, offset: u32, value: u32) {
        self.nodes[id.0]
            .device
            .device_mut()
            .bar_write(offset, value);
    }

    /// The device of a node.
    pub fn device(&self, id: NodeId) -> &dyn Device {
        self.nodes[id.0].device.device()
    }

    /// The device of a node, writable.
    pub fn device_mut(&mut self, id: NodeId) -> &mut dyn Device {
        self.nodes[id.0].device.device_mut()
    }

    /// The device of a node as its concrete type, if it is a `D`.
    pub fn device_as<D: 'static>(&self, id: NodeId) -> Option<&D> {
        self.nodes[id.0].device.as_any().downcast_ref()
    }

    /// The device of a node as its concrete type, writable, if it is a `D`.
    pub fn device_as_mut<D: 'static>(&mut self, id: NodeId) -> Option<&mut D> {
        self.nodes[id.0].device.as_any_mut().downcast_mut()
    }

    /// The DMA counters of a node.
    pub fn dma_stats(&self, id: NodeId) -> DmaStats {
        self.nodes[id.0].dma.stats()
    }

    /// The DMA channel state of a node.
    pub fn dma_channels(&self, id: NodeId) -> &DmaChannels {
        &self.nodes[id.0].dma
    }

    /// The port counters of a node.
    pub fn node_stats(&self, id: NodeId) -> NodeStats {
        self.nodes[id.0].stats
    }

    /// The frames waiting in a node's rx queue.
    pub fn rx_queue(&self, id: NodeId) -> &VecDeque<Frame> {
        &self.nodes[id.0].rx
    }

    /// Puts a frame straight into a node's rx queue, as if it had just arrived (for
    /// driving a lone device with crafted frames). Not recorded by taps.
    pub fn inject_rx(&mut self, id: NodeId, frame: Frame) {
        let node = &mut self.nodes[id.0];
        node.stats.frames_received += 1;
        node.stats.bytes_received += frame.len() as u64;
        node.rx.push_back(frame);
    }

    /// Takes the frames a node sent while it had no cable, with their send cycle.
    pub fn take_outbox(&mut self, id: NodeId) -> Vec<(u64, Frame)> {
        std::mem::take(&mut self.nodes[id.0].outbox)
    }

    /// The link a node sends into, if it is connected.
    pub fn link(&self, from: NodeId) -> Option<&Link> {
        self.nodes[from.0].link_out.map(|w| &self.wires[w].link)
    }

    /// The link a node sends into, writable (to set a drop filter).
    pub fn link_mut(&mut self, from: NodeId) -> Option<&mut Link> {
        self.nodes[from.0].link_out.map(|w| &mut self.wires[w].link)
    }

    /// The counters of the link a node sends into, if it is connected.
    pub fn link_stats(&self, from: NodeId) -> Option<LinkStats> {
        self.link(from).map(Link::stats)
    }

    /// Records every frame at `point` of node `node` (or of every node, for `None`) into a
    /// pcap stream on `writer`, from now on (the encoder writes in small pieces: wrap a
    /// file in a `BufWriter`). A tap that fails to write stops recording; the
    /// first such error is kept ([`World::tap_error`]) and returned by [`World::close_taps`].
    pub fn add_tap(
        &mut self,
        point: TapPoint,
        node: Option<NodeId>,
        writer: impl Write + 'static,
    ) -> Result<(), SimError> {
        if let Some(n) = node {
            self.check(n);
        }
        let tap = PcapTap::new(Box::new(writer) as Box<dyn Write>)?;
        self.taps.push(Tap {
            point,
            node,
            tap: Some(tap),
        });
        Ok(())
    }

    /// The first error a tap met, if any.
    pub fn tap_error(&self) -> Option<&SimError> {
        self.tap_error.as_ref()
    }

    /// Flushes and removes every tap, and ends the captures of the UDP wires; returns the
    /// first error any of them met.
    pub fn close_taps(&mut self) -> Result<(), SimError> {
        let mut first = self.tap_error.take();
        for tap in self.taps.drain(..).filter_map(|t| t.tap) {
            if let Err(e) = tap.finish() {
                first.get_or_insert(e);
            }
        }
        for port in &mut self.udp {
            if let Err(e) = port.wire.close_pcap() {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }
}

/// One node stepped on its own during a two-thread span (see the module documentation).
struct Lane<'a> {
    device: &'a mut (dyn Device + Send),
    host: &'a mut Host,
    dma: &'a mut DmaChannels,
    rx: &'a mut VecDeque<Frame>,
    tx: &'a mut Vec<Frame>,
    rx_limit: Option<usize>,
    stats: &'a mut NodeStats,
    /// The frames in flight towards this node, lent by its incoming link.
    queue: DeliveryQueue,
    /// Frames taken from `queue`.
    received: u64,
    /// Keep a copy of each delivered frame for the taps.
    tap_rx: bool,
    delivered: Vec<(u64, Frame)>,
    /// Frames sent, with their cycle, held back until the span ends.
    sent: Vec<(u64, Frame)>,
    /// The next cycle to execute.
    next: u64,
}

/// What a lane hands back when the span ends.
struct LaneOut {
    queue: DeliveryQueue,
    received: u64,
    delivered: Vec<(u64, Frame)>,
    sent: Vec<(u64, Frame)>,
}

impl<'a> Lane<'a> {
    /// The lane of `node`, or `None` if its device does not run on a thread of its own.
    fn new(node: &'a mut Node, queue: DeliveryQueue, tap_rx: bool) -> Option<Lane<'a>> {
        let Node {
            device,
            host,
            dma,
            rx,
            tx,
            rx_limit,
            stats,
            ..
        } = node;
        Some(Lane {
            device: device.device_mut().parallel()?,
            host,
            dma,
            rx,
            tx,
            rx_limit: *rx_limit,
            stats,
            queue,
            received: 0,
            tap_rx,
            delivered: Vec::new(),
            sent: Vec::new(),
            next: 0,
        })
    }

    /// Executes cycles `from..to` of this node, as [`World::step`] does; with
    /// `stop_when_idle`, stops after the first cycle that leaves the node idle (nothing in
    /// rx, no delivery and no device event due in the next cycle).
    fn run(&mut self, from: u64, to: u64, stop_when_idle: bool) {
        self.next = from;
        while self.next < to {
            let now = self.next;
            while let Some((_, frame)) = self.queue.pop_due(now) {
                self.received += 1;
                if self.tap_rx {
                    self.delivered.push((now, frame.clone()));
                }
                if self.rx_limit.is_some_and(|limit| self.rx.len() >= limit) {
                    self.stats.rx_overflow += 1;
                    continue;
                }
                self.stats.frames_received += 1;
                self.stats.bytes_received += frame.len() as u64;
                self.rx.push_back(frame);
            }
            let mut port = SimDma::new(self.host, self.dma);
            let mut io = DeviceIo {
                dma: &mut port,
                rx: self.rx,
                tx: self.tx,
            };
            self.device.tick(now, &mut io);
            for frame in self.tx.drain(..) {
                self.stats.frames_sent += 1;
                self.stats.bytes_sent += frame.len() as u64;
                self.sent.push((now, frame));
            }
            self.next = now + 1;
            let busy = !self.rx.is_empty()
                || self.device.next_event(now).is_some_and(|t| t <= now + 1)
                || self.queue.next_due().is_some_and(|t| t <= now + 1);
            if stop_when_idle && !busy {
                return;
            }
        }
    }

    fn finish(self) -> LaneOut {
        LaneOut {
            queue: self.queue,
            received: self.received,
            delivered: self.delivered,
            sent: self.sent,
        }
    }
}

/// Offers one frame to every matching tap.
fn record(
    taps: &mut [Tap],
    tap_error: &mut Option<SimError>,
    point: TapPoint,
    node: NodeId,
    cycle: u64,
    frame: &[u8],
) {
    for t in taps
        .iter_mut()
        .filter(|t| t.point == point && t.node.is_none_or(|n| n == node))
    {
        if let Some(tap) = &mut t.tap {
            if let Err(e) = tap.record(cycle, frame) {
                t.tap = None;
                tap_error.get_or_insert(e);
            }
        }
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "node{}", self.0)
    }
}

impl fmt::Display for NodeStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "sent {} ({} B), received {} ({} B), rx overflow {}",
            self.frames_sent,
            self.bytes_sent,
            self.frames_received,
            self.bytes_received,
            self.rx_overflow
        )
    }
}

impl fmt::Debug for World {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("World")
            .field("now", &self.now)
            .field("steps", &self.steps)
            .field("nodes", &self.nodes.len())
            .field("links", &self.wires.len())
            .field("udp_wires", &self.udp.len())
            .field("taps", &self.taps.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::FaultConfig;
    use crate::pcap::{read_pcap, SharedBuffer};
    use rocenic_proto::device::DmaPort;

    /// Register map of [`TestDevice`].
    mod reg {
        pub const TX_IOVA_LO: u32 = 0x00;
        pub const TX_IOVA_HI: u32 = 0x04;
        pub const TX_LEN: u32 = 0x08;
        /// Write: read TX_LEN bytes at TX_IOVA by DMA and send them once they arrive.
        pub const TX_DOORBELL: u32 = 0x0c;
        pub const RX_IOVA_LO: u32 = 0x10;
        /// Write (after LO): received frames are DMA-written to RX_IOVA.
        pub const RX_IOVA_HI: u32 = 0x14;
        /// Write 1: send every received frame back.
        pub const ECHO: u32 = 0x18;
        pub const TIMER_LO: u32 = 0x1c;
        /// Write (after LO): arm a timer that fires at cycle TIMER.
        pub const TIMER_HI: u32 = 0x20;
        /// Write 1: report "busy" every cycle (as the Verilated engine does).
        pub const BUSY: u32 = 0x24;
        /// Read: frames received.
        pub const RX_COUNT: u32 = 0x40;
        /// Read: register writes so far.
        pub const WRITES: u32 = 0x44;
    }

    /// A tiny device exercising every part of the contract: BAR registers, a DMA read with
    /// its completion time, DMA writes, rx/tx and a timer.
    #[derive(Default)]
    struct TestDevice {
        regs: [u32; 16],
        bar_writes: u32,
        echo: bool,
        busy: bool,
        rx_iova: Option<u64>,
        doorbell: bool,
        /// A frame read by DMA, sent at the cycle its read completes.
        pending_tx: Option<(u64, Frame)>,
        timer: Option<u64>,
        fired_at: Option<u64>,
        received: Vec<(u64, Frame)>,
        sent: Vec<(u64, usize)>,
        faults: u32,
        ticks: u64,
    }

    impl TestDevice {
        fn reg64(&self, lo: u32) -> u64 {
            let i = (lo / 4) as usize;
            u64::from(self.regs[i]) | (u64::from(self.regs[i + 1]) << 32)
        }
    }

    impl Device for TestDevice {
        fn bar_read(&mut self, offset: u32) -> u32 {
            match offset {
                reg::RX_COUNT => self.received.len() as u32,
                reg::WRITES => self.bar_writes,
                o => self.regs.get((o / 4) as usize).copied().unwrap_or(0),
            }
        }

        fn bar_write(&mut self, offset: u32, value: u32) {
            self.bar_writes += 1;
            if let Some(r) = self.regs.get_mut((offset / 4) as usize) {
                *r = value;
            }
            match offset {
                reg::TX_DOORBELL => self.doorbell = true,
                reg::RX_IOVA_HI => self.rx_iova = Some(self.reg64(reg::RX_IOVA_LO)),
                reg::ECHO => self.echo = value != 0,
                reg::BUSY => self.busy = value != 0,
                reg::TIMER_HI => self.timer = Some(self.reg64(reg::TIMER_LO)),
                _ => {}
            }
        }

        fn tick(&mut self, now: u64, io: &mut DeviceIo<'_>) {
            self.ticks += 1;
            if std::mem::take(&mut self.doorbell) {
                let mut frame = vec![0; self.regs[(reg::TX_LEN / 4) as usize] as usize];
                match io
                    .dma
                    .dma_read(now, self.reg64(reg::TX_IOVA_LO), &mut frame)
                {
                    Ok(done) => self.pending_tx = Some((done, frame)),
                    Err(_) => self.faults += 1,
                }
            }
            if self
                .pending_tx
                .as_ref()
                .is_some_and(|(done, _)| *done <= now)
            {
                let (_, frame) = self.pending_tx.take().unwrap();
                self.sent.push((now, frame.len()));
                io.tx.push(frame);
            }
            while let Some(frame) = io.rx.pop_front() {
                if let Some(iova) = self.rx_iova {
                    if io.dma.dma_write(now, iova, &frame).is_err() {
                        self.faults += 1;
                    }
                }
                if self.echo {
                    io.tx.push(frame.clone());
                }
                self.received.push((now, frame));
            }
            if self.timer.is_some_and(|t| t <= now) {
                self.timer = None;
                self.fired_at = Some(now);
            }
        }

        fn next_event(&self, now: u64) -> Option<u64> {
            let doorbell = (self.doorbell || self.busy).then_some(now + 1);
            let tx = self.pending_tx.as_ref().map(|(done, _)| *done);
            [doorbell, tx, self.timer].into_iter().flatten().min()
        }

        /// Always: so every two-node test here also runs the two-thread path.
        fn parallel(&mut self) -> Option<&mut (dyn Device + Send)> {
            Some(self)
        }
    }

    fn two_nodes(ab: LinkConfig, ba: LinkConfig) -> (World, NodeId, NodeId) {
        let mut w = World::new(WorldConfig::default()).unwrap();
        let a = w.add_node(TestDevice::default());
        let b = w.add_node(TestDevice::default());
        w.connect(a, b, ab, ba).unwrap();
        (w, a, b)
    }

    fn dev(w: &World, id: NodeId) -> &TestDevice {
        w.device_as::<TestDevice>(id).unwrap()
    }

    /// Makes node `n` send `frame` through its DMA doorbell.
    fn send(w: &mut World, n: NodeId, frame: &[u8]) {
        let r = w.host_mut(n).alloc_dma(frame.len()).unwrap();
        w.host_mut(n).write(r.va, frame).unwrap();
        w.bar_write(n, reg::TX_IOVA_LO, r.iova as u32);
        w.bar_write(n, reg::TX_IOVA_HI, (r.iova >> 32) as u32);
        w.bar_write(n, reg::TX_LEN, frame.len() as u32);
        w.bar_write(n, reg::TX_DOORBELL, 1);
    }

    #[test]
    fn frame_crosses_the_cable_with_dma_and_link_latency_and_echoes_back() {
        let (mut w, a, b) = two_nodes(LinkConfig::default(), LinkConfig::default());
        w.bar_write(b, reg::ECHO, 1);
        let frame: Vec<u8> = (0..200u32).map(|i| i as u8).collect();
        w.advance(1000);
        send(&mut w, a, &frame);
        assert_eq!(w.bar_read(a, reg::WRITES), 4);

        let t = w
            .run_until(|w| dev(w, a).received.len() == 1, 100_000)
            .unwrap();
        // Doorbell seen at 1000; 200 B DMA read: 4 beats + 250 -> sent at 1254.
        // On the wire: (8 + 200 + 4) * 8 = 1696 bits = 4.24 cycles -> 5, + 100 latency.
        let sent = 1000 + 4 + 250;
        let at_b = sent + 5 + 100;
        let at_a = at_b + 5 + 100;
        assert_eq!(dev(&w, a).sent, vec![(sent, 200)]);
        assert_eq!(dev(&w, b).received, vec![(at_b, frame.clone())]);
        assert_eq!(dev(&w, a).received, vec![(at_a, frame)]);
        assert_eq!(t, at_a + 1);
        assert_eq!(w.bar_read(a, reg::WRITES), 4);
        assert_eq!(w.bar_read(b, reg::RX_COUNT), 1);
        // Idle cycles were skipped: the doorbell, the DMA completion, two deliveries, plus
        // the cycles before the first send.
        assert!(w.steps() < 20, "executed {} cycles", w.steps());

        let s = w.link_stats(a).unwrap();
        assert_eq!((s.sent, s.delivered), (1, 1));
        assert_eq!(w.node_stats(b).frames_sent, 1);
        assert_eq!(w.dma_stats(a).reads, 1);
        assert_eq!(w.host(a).fault_count() + w.host(b).fault_count(), 0);
    }

    #[test]
    fn received_frames_land_in_host_memory() {
        let (mut w, a, b) = two_nodes(LinkConfig::default(), LinkConfig::default());
        let rx = w.host_mut(b).alloc_dma(64).unwrap();
        w.bar_write(b, reg::RX_IOVA_LO, rx.iova as u32);
        w.bar_write(b, reg::RX_IOVA_HI, (rx.iova >> 32) as u32);
        send(&mut w, a, &[0x5a; 64]);
        w.run_until(
            |w| w.host(b).read_vec(rx.va, 64).unwrap() == [0x5a; 64],
            10_000,
        )
        .unwrap();
        assert_eq!(w.dma_stats(b).writes, 1);
        // Node addresses differ, so a VA from one host is not valid on the other.
        assert_ne!(w.host(a).memory().va_of(rx.id), Some(rx.va));
    }

    #[test]
    fn dma_outside_registered_memory_faults_and_is_recorded() {
        let (mut w, a, _) = two_nodes(LinkConfig::default(), LinkConfig::default());
        let r = w.host_mut(a).alloc_dma(64).unwrap();
        // The driver bug: a VA given where an IOVA is due.
        w.bar_write(a, reg::TX_IOVA_LO, r.va as u32);
        w.bar_write(a, reg::TX_IOVA_HI, (r.va >> 32) as u32);
        w.bar_write(a, reg::TX_LEN, 64);
        w.bar_write(a, reg::TX_DOORBELL, 1);
        w.advance(10);
        assert_eq!(dev(&w, a).faults, 1);
        assert_eq!(w.host(a).fault_count(), 1);
        assert_eq!(w.host(a).faults()[0].fault.iova, r.va);
        assert_eq!(w.dma_stats(a).faults, 1);
    }

    #[test]
    fn run_until_skips_to_a_far_timer() {
        let mut w = World::new(WorldConfig::default()).unwrap();
        let n = w.add_node(TestDevice::default());
        let far = 1_000_000_000u64;
        w.bar_write(n, reg::TIMER_LO, far as u32);
        w.bar_write(n, reg::TIMER_HI, (far >> 32) as u32);
        let t = w
            .run_until(|w| dev(w, n).fired_at.is_some(), 2 * far)
            .unwrap();
        assert_eq!(dev(&w, n).fired_at, Some(far));
        assert_eq!(t, far + 1);
        assert!(w.steps() <= 3, "executed {} cycles", w.steps());
        assert_eq!(dev(&w, n).ticks, w.steps());
    }

    #[test]
    fn run_until_times_out_at_the_limit_and_advance_is_exact() {
        let mut w = World::new(WorldConfig::default()).unwrap();
        let n = w.add_node(TestDevice::default());
        w.bar_write(n, reg::TIMER_LO, 500);
        w.bar_write(n, reg::TIMER_HI, 0);
        match w.run_until(|w| dev(w, n).fired_at.is_some(), 100) {
            Err(SimError::Timeout {
                now: 100,
                max_cycles: 100,
            }) => {}
            other => panic!("{other:?}"),
        }
        assert!(dev(&w, n).fired_at.is_none());
        w.advance(1000);
        assert_eq!(w.now(), 1100);
        assert_eq!(dev(&w, n).fired_at, Some(500));
        // Already true: returns at once without stepping.
        let steps = w.steps();
        assert_eq!(w.run_until(|_| true, 0).unwrap(), 1100);
        assert_eq!(w.steps(), steps);
    }

    #[test]
    fn taps_record_sent_frames_before_faults_and_delivered_frames_after() {
        let drop_all = LinkConfig::with_faults(FaultConfig {
            loss: 1.0,
            ..FaultConfig::default()
        });
        let (mut w, a, b) = two_nodes(LinkConfig::default(), drop_all);
        w.bar_write(b, reg::ECHO, 1);
        let sent = SharedBuffer::new();
        let delivered = SharedBuffer::new();
        let sent_by_b = SharedBuffer::new();
        w.add_tap(TapPoint::Sent, None, sent.clone()).unwrap();
        w.add_tap(TapPoint::Delivered, None, delivered.clone())
            .unwrap();
        w.add_tap(TapPoint::Sent, Some(b), sent_by_b.clone())
            .unwrap();
        send(&mut w, a, &[1; 100]);
        w.advance(2000);
        w.close_taps().unwrap();

        let sent = read_pcap(&sent.contents()[..]).unwrap();
        let delivered = read_pcap(&delivered.contents()[..]).unwrap();
        let by_b = read_pcap(&sent_by_b.contents()[..]).unwrap();
        // a sends at 252 (2 beats + 250, doorbell at 0); b receives at 251 + 3 + 100 and
        // echoes at once; the echo is lost on the way back.
        assert_eq!(
            sent,
            vec![(252, vec![1; 100]), (252 + 3 + 100, vec![1; 100])]
        );
        assert_eq!(delivered, vec![(355, vec![1; 100])]);
        assert_eq!(by_b, vec![(355, vec![1; 100])]);
        assert!(dev(&w, a).received.is_empty());
        assert_eq!(w.link_stats(b).unwrap().lost, 1);
    }

    #[test]
    fn drop_filter_through_the_world() {
        let (mut w, a, b) = two_nodes(LinkConfig::default(), LinkConfig::default());
        w.link_mut(a).unwrap().set_drop_filter(|_, i| i == 1);
        for i in 0..3u8 {
            send(&mut w, a, &[i; 64]);
            w.advance(1000);
        }
        let got: Vec<u8> = dev(&w, b).received.iter().map(|(_, f)| f[0]).collect();
        assert_eq!(got, vec![0, 2]);
        assert_eq!(w.link_stats(a).unwrap().filtered, 1);
    }

    #[test]
    fn lone_node_frames_go_to_the_outbox_and_injected_frames_arrive() {
        let mut w = World::new(WorldConfig::default()).unwrap();
        let n = w.add_boxed_node(Box::new(TestDevice::default()));
        assert!(w.device_as::<TestDevice>(n).is_none());
        assert!(w.device_as::<Box<dyn Device>>(n).is_some());
        w.bar_write(n, reg::ECHO, 1);
        w.inject_rx(n, vec![9; 70]);
        assert_eq!(w.rx_queue(n).len(), 1);
        w.advance(5);
        assert_eq!(w.take_outbox(n), vec![(0, vec![9; 70])]);
        assert!(w.link(n).is_none());
    }

    #[test]
    fn connect_checks_ports() {
        let mut w = World::new(WorldConfig::default()).unwrap();
        let a = w.add_node(TestDevice::default());
        let b = w.add_node(TestDevice::default());
        let c = w.add_node(TestDevice::default());
        assert!(matches!(
            w.connect(a, a, LinkConfig::default(), LinkConfig::default()),
            Err(SimError::SelfConnection(_))
        ));
        w.connect(a, b, LinkConfig::default(), LinkConfig::default())
            .unwrap();
        assert!(matches!(
            w.connect(c, b, LinkConfig::default(), LinkConfig::default()),
            Err(SimError::AlreadyConnected(n)) if n == b
        ));
        assert_eq!(w.nodes().count(), 3);
        // VA ranges per node.
        let va: Vec<u64> = w
            .nodes()
            .collect::<Vec<_>>()
            .into_iter()
            .map(|n| w.host_mut(n).alloc(1).unwrap())
            .collect();
        assert_eq!(
            va,
            vec![0x7f00_0000_0000, 0x7f10_0000_0000, 0x7f20_0000_0000]
        );
    }

    #[test]
    fn rx_queue_limit_drops_and_counts() {
        let cfg = WorldConfig {
            node: NodeConfig {
                rx_queue_limit: Some(0),
                ..NodeConfig::default()
            },
            ..WorldConfig::default()
        };
        let mut w = World::new(cfg).unwrap();
        let a = w.add_node(TestDevice::default());
        let b = w.add_node(TestDevice::default());
        w.connect(a, b, LinkConfig::default(), LinkConfig::default())
            .unwrap();
        send(&mut w, a, &[0; 64]);
        w.advance(1000);
        assert_eq!(w.node_stats(b).rx_overflow, 1);
        assert!(dev(&w, b).received.is_empty());
    }

    #[test]
    fn same_seeds_same_world() {
        let faults = |seed| {
            LinkConfig::with_faults(FaultConfig {
                loss: 0.2,
                reorder: 0.2,
                duplicate: 0.1,
                corrupt: 0.1,
                seed,
                ..FaultConfig::default()
            })
        };
        let run = || {
            let (mut w, a, b) = two_nodes(faults(1), faults(2));
            w.bar_write(b, reg::ECHO, 1);
            for i in 0..50u8 {
                send(&mut w, a, &[i; 80]);
                w.advance(37);
            }
            w.advance(10_000);
            (
                dev(&w, a).received.clone(),
                w.link_stats(a),
                w.link_stats(b),
            )
        };
        assert_eq!(run(), run());
    }

    /// A lossy, reordering, duplicating echo workload with taps at both points and a
    /// small rx queue, run with one thread and with two: everything must match.
    #[test]
    fn two_threads_give_the_one_thread_world() {
        let faults = |seed| {
            LinkConfig::with_faults(FaultConfig {
                loss: 0.1,
                reorder: 0.2,
                duplicate: 0.3,
                corrupt: 0.05,
                seed,
                ..FaultConfig::default()
            })
        };
        let run = |parallel: bool, busy: u32| {
            let cfg = WorldConfig {
                node: NodeConfig {
                    rx_queue_limit: Some(1),
                    ..NodeConfig::default()
                },
                ..WorldConfig::default()
            };
            let mut w = World::new(cfg).unwrap();
            w.set_parallel(parallel);
            let a = w.add_node(TestDevice::default());
            let b = w.add_node(TestDevice::default());
            w.connect(a, b, faults(7), faults(8)).unwrap();
            w.bar_write(b, reg::ECHO, 1);
            w.bar_write(a, reg::ECHO, 1);
            w.bar_write(b, reg::BUSY, busy);
            let sent = SharedBuffer::new();
            let delivered = SharedBuffer::new();
            w.add_tap(TapPoint::Sent, None, sent.clone()).unwrap();
            w.add_tap(TapPoint::Delivered, Some(a), delivered.clone())
                .unwrap();
            for i in 0..60u8 {
                send(&mut w, a, &[i; 90]);
                send(&mut w, b, &[i ^ 0xff; 70]);
                // Short and long advances: spans end at the limit and at the lookahead.
                w.advance(if i % 3 == 0 { 5 } else { 397 });
            }
            w.advance(20_000);
            w.close_taps().unwrap();
            let p = w.parallel_cycles();
            let out = (
                dev(&w, a).received.clone(),
                dev(&w, b).received.clone(),
                dev(&w, a).sent.clone(),
                dev(&w, b).ticks,
                [w.link_stats(a), w.link_stats(b)],
                [w.node_stats(a), w.node_stats(b)],
                (w.now(), w.steps()),
                sent.contents(),
                delivered.contents(),
            );
            (out, p)
        };
        // Both nodes idle between frames (spans stop early), and one always busy (the
        // idle one is stepped alone up to the busy one).
        for (busy, min_parallel) in [(0, 50), (1, 20_000)] {
            let (one, p1) = run(false, busy);
            let (two, p2) = run(true, busy);
            assert_eq!(p1, 0);
            assert!(p2 >= min_parallel, "only {p2} cycles ran on two threads");
            let lost = one.4[0].unwrap().lost + one.4[1].unwrap().lost;
            let overflow = one.5[0].rx_overflow + one.5[1].rx_overflow;
            assert!(
                lost > 0 && overflow > 0,
                "lost {lost}, overflow {overflow}: {:?} {:?}",
                one.4,
                one.5
            );
            assert_eq!(one, two);
        }
    }

    #[test]
    fn bad_world_config_is_refused() {
        let cfg = WorldConfig {
            va_stride: 100,
            ..WorldConfig::default()
        };
        assert!(World::new(cfg).is_err());
        let mut cfg = WorldConfig::default();
        cfg.node.dma.bytes_per_cycle = 0;
        assert!(World::new(cfg).is_err());
        let mut cfg = WorldConfig::default();
        cfg.node.host.va_base = 3;
        assert!(World::new(cfg).is_err());
    }

    #[test]
    fn a_failing_tap_is_reported() {
        /// Takes the 24-byte file header, then fails.
        struct Broken(usize);
        impl Write for Broken {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                if self.0 + buf.len() > 24 {
                    return Err(std::io::Error::other("disk full"));
                }
                self.0 += buf.len();
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut w = World::new(WorldConfig::default()).unwrap();
        let n = w.add_node(TestDevice::default());
        w.add_tap(TapPoint::Sent, None, Broken(0)).unwrap();
        w.bar_write(n, reg::ECHO, 1);
        w.inject_rx(n, vec![1; 60]);
        w.advance(3);
        assert!(w.tap_error().is_some());
        assert!(w.close_taps().is_err());
        assert!(w.close_taps().is_ok());
    }

    #[test]
    fn the_dma_port_reports_completion_times() {
        // The world's port is SimDma: a read's completion includes the configured latency.
        let mut host = Host::new(&HostConfig::default()).unwrap();
        let r = host.alloc_dma(64).unwrap();
        let mut ch = DmaChannels::new(DmaConfig::default()).unwrap();
        let mut port = SimDma::new(&mut host, &mut ch);
        assert_eq!(port.dma_read(7, r.iova, &mut [0; 64]), Ok(7 + 1 + 250));
    }
}
