//! Cabling one simulated NIC to a real wire: the `--wire`, `--mac`, `--ip` and
//! `--peer-mac` values, RoCE v2 GIDs of IPv4 addresses, and [`WiredNic`], a one-node world
//! whose port is a [`UdpWire`] (one Ethernet frame per UDP datagram on loopback).
//!
//! The NIC answers ARP for `--ip` and learns or resolves its peer's MAC through the wire's
//! host-side ARP helper (see `rocenic_sim::udp_wire` and `docs/design.md`); the world's
//! clock is paced against wall-clock time, so its timers keep real time with the peer.
//!
//! The device is the behavioural model (`--backend model`) or the Verilated RTL engine
//! (`--backend rtl`). The engine is ticked every cycle (it never reports idle time, see
//! `rocenic_sim::rtl_device`), far below 250 MHz, so its simulated clock lags wall-clock
//! time: every wait of a [`WiredNic`] on an RTL device is bounded by wall-clock time as
//! well as by cycles, and bandwidth is reported in simulated time (cycles at 250 MHz).

use std::cell::RefCell;
use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr, UdpSocket};
use std::path::Path;
use std::rc::Rc;
use std::str::FromStr;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use rocenic_model::{Nic, NicConfig};
use rocenic_proto::device::Device;
use rocenic_sim::{
    FaultConfig, NodeId, UdpWire, UdpWireConfig, UdpWireStats, World, WorldConfig, NS_PER_CYCLE,
};

use rocenic_driver::backend::model::ModelBackend;
use rocenic_driver::verbs::Context;

/// A `--wire` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireSpec {
    /// `udp:LOCAL_PORT:PEER_PORT`: bind `127.0.0.1:LOCAL_PORT`, send to
    /// `127.0.0.1:PEER_PORT`, one Ethernet frame per datagram.
    Udp { local: u16, peer: u16 },
}

impl FromStr for WireSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let usage = "expected udp:LOCAL_PORT:PEER_PORT (e.g. udp:9000:9001)";
        let mut parts = s.split(':');
        let (Some(kind), Some(local), Some(peer), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(format!("{s:?}: {usage}"));
        };
        if kind != "udp" {
            return Err(format!("{s:?}: unknown wire kind {kind:?}; {usage}"));
        }
        let port = |p: &str, what: &str| -> Result<u16, String> {
            match p.parse::<u16>() {
                Ok(0) | Err(_) => Err(format!("{s:?}: {what} {p:?} is not a port in 1..=65535")),
                Ok(n) => Ok(n),
            }
        };
        let (local, peer) = (port(local, "LOCAL_PORT")?, port(peer, "PEER_PORT")?);
        if local == peer {
            return Err(format!("{s:?}: LOCAL_PORT and PEER_PORT must differ"));
        }
        Ok(WireSpec::Udp { local, peer })
    }
}

impl fmt::Display for WireSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireSpec::Udp { local, peer } => write!(f, "udp:{local}:{peer}"),
        }
    }
}

/// Parses a MAC address `aa:bb:cc:dd:ee:ff` (or with `-`); refuses multicast addresses,
/// which no port can own.
pub fn parse_mac(s: &str) -> Result<[u8; 6], String> {
    let parts: Vec<&str> = s.split([':', '-']).collect();
    let mut mac = [0u8; 6];
    let ok = parts.len() == 6
        && parts
            .iter()
            .zip(mac.iter_mut())
            .all(|(p, b)| p.len() == 2 && u8::from_str_radix(p, 16).map(|v| *b = v).is_ok());
    if !ok {
        return Err(format!("{s:?} is not a MAC address like 02:00:00:00:00:01"));
    }
    if mac[0] & 1 != 0 {
        return Err(format!("{s:?} is a multicast MAC address"));
    }
    Ok(mac)
}

/// Parses a dotted IPv4 address; refuses the unspecified, broadcast and multicast ones.
pub fn parse_ipv4(s: &str) -> Result<[u8; 4], String> {
    let ip: Ipv4Addr = s
        .parse()
        .map_err(|_| format!("{s:?} is not an IPv4 address like 10.0.0.1"))?;
    if ip.is_unspecified() || ip.is_broadcast() || ip.is_multicast() {
        return Err(format!("{s:?} cannot be a port's address"));
    }
    Ok(ip.octets())
}

/// Formats a MAC as `aa:bb:cc:dd:ee:ff`.
pub fn fmt_mac(mac: [u8; 6]) -> String {
    rocenic_proto::wire::EthernetAddress(mac).to_string()
}

/// The RoCE v2 GID of an IPv4 address: `::ffff:a.b.c.d`.
pub fn gid_of_ipv4(ip: [u8; 4]) -> [u8; 16] {
    Ipv4Addr::from(ip).to_ipv6_mapped().octets()
}

/// The IPv4 address of an IPv4-mapped GID (`::ffff:a.b.c.d`).
pub fn ipv4_of_gid(gid: [u8; 16]) -> Option<[u8; 4]> {
    Ipv6Addr::from(gid).to_ipv4_mapped().map(|ip| ip.octets())
}

/// Checks a GID index given with `flag` (`-g`, `-x`) against the table a Linux RoCE
/// port shows: index 0 the IPv6 link-local GID (fe80::EUI-64 of the MAC), index 1
/// the IPv4-mapped RoCE v2 GID. rocenic serves index 1 only (it has no IPv6 path).
pub fn check_gid_index(flag: &str, idx: Option<i32>, ip: [u8; 4]) -> anyhow::Result<()> {
    match idx {
        None | Some(1) => Ok(()),
        Some(0) => bail!(
            "{flag} 0: GID index 0 is the IPv6 link-local GID, which rocenic cannot serve \
             (IPv6 is not supported); use {flag} 1 = {} (RoCE v2 over IPv4)",
            fmt_gid(gid_of_ipv4(ip))
        ),
        Some(g) => bail!(
            "{flag} {g}: GID index {g} is out of range; this port has GIDs 0 (IPv6 \
             link-local, not supported) and 1 = {} (RoCE v2 over IPv4)",
            fmt_gid(gid_of_ipv4(ip))
        ),
    }
}

/// A GID as `inet_ntop` prints it (`::ffff:10.0.0.1`, `fe80::1`, `::`).
pub fn fmt_gid(gid: [u8; 16]) -> String {
    Ipv6Addr::from(gid).to_string()
}

/// Cycles of the 250 MHz core clock in `d`.
pub fn cycles_of(d: Duration) -> u64 {
    u64::try_from(d.as_nanos() / u128::from(NS_PER_CYCLE)).unwrap_or(u64::MAX)
}

/// Default longest hold of a frame `--reorder` holds back, microseconds of wall-clock time.
pub const DEFAULT_REORDER_DELAY_US: u64 = 2000;

/// The options that put our NIC on a real wire, shared by `pingpong` and `perftest`:
/// `--backend`, `--wire`, `--mac`, `--ip`, `--peer-mac`, `--pcap` and the faults.
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct WireLinkArgs {
    /// Device backend: "model", or "rtl" (the Verilated engine; needs verilator and g++).
    #[arg(long, default_value = "model")]
    pub backend: String,
    /// The wire: udp:LOCAL_PORT:PEER_PORT (one Ethernet frame per datagram on 127.0.0.1).
    #[arg(long)]
    pub wire: WireSpec,
    /// Our port's MAC address.
    #[arg(long, value_parser = parse_mac)]
    pub mac: [u8; 6],
    /// Our port's IPv4 address (our GID is ::ffff:IP).
    #[arg(long, value_parser = parse_ipv4)]
    pub ip: [u8; 4],
    /// The peer's MAC address; without it, it is resolved by ARP.
    #[arg(long, value_parser = parse_mac)]
    pub peer_mac: Option<[u8; 6]>,
    /// Write every frame on the wire (both directions) to this pcap file.
    #[arg(long)]
    pub pcap: Option<std::path::PathBuf>,
    /// Seeded faults on our side of the wire, both directions.
    #[command(flatten)]
    pub faults: WireFaultArgs,
}

impl WireLinkArgs {
    /// The defaults (model backend, peer MAC by ARP, no pcap, no faults).
    pub fn new(wire: WireSpec, mac: [u8; 6], ip: [u8; 4]) -> Self {
        WireLinkArgs {
            backend: "model".into(),
            wire,
            mac,
            ip,
            peer_mac: None,
            pcap: None,
            faults: WireFaultArgs::default(),
        }
    }

    /// Refuses a backend the wired tools cannot run on (`tool` names the command).
    pub fn check_backend(&self, tool: &str) -> anyhow::Result<()> {
        match crate::setup::parse_backend(&self.backend)? {
            crate::setup::BackendKind::Model | crate::setup::BackendKind::Rtl => Ok(()),
            crate::setup::BackendKind::Vfio(_) => bail!(
                "--backend {}: {tool} runs on the model and rtl backends only",
                self.backend
            ),
        }
    }

    /// Opens the wire (on `udp` when the caller bound the socket), its faults and pcap,
    /// and a NIC of the `--backend` on it (the RTL engine is built, or loaded from the
    /// Verilator cache, on first use).
    pub fn open_nic(&self, udp: Option<UdpSocket>) -> anyhow::Result<(WiredNic, Context)> {
        let kind = crate::setup::parse_backend(&self.backend)?;
        let mut wire = open_wire(self.wire, self.mac, self.ip, udp, self.pcap.as_deref())?;
        self.faults.apply(&mut wire)?;
        match kind {
            crate::setup::BackendKind::Rtl => {
                let dev = rocenic_driver::backend::rtl::engine_device(
                    &WorldConfig::default(),
                    None,
                    None,
                )
                .context("building the RTL engine")?;
                WiredNic::open_device(dev, true, wire)
            }
            crate::setup::BackendKind::Model => WiredNic::open(NicConfig::default(), wire),
            crate::setup::BackendKind::Vfio(_) => {
                bail!("--backend {}: no wire for a VFIO device", self.backend)
            }
        }
    }
}

/// Ends a wired session: closes the device and the capture, and returns the session's
/// result (its error first, then the device's, then the capture's) with the wire's
/// statistics.
pub fn close_session<R>(
    nic: &WiredNic,
    ctx: Context,
    result: anyhow::Result<R>,
) -> anyhow::Result<(R, UdpWireStats)> {
    let closed = ctx.close().context("closing the device");
    let captured = nic.close_capture();
    let r = result?;
    closed?;
    captured?;
    Ok((r, nic.stats()))
}

/// Seeded faults on our side of a UDP wire, both directions (see
/// `rocenic_sim::udp_wire`'s "Faults"): `--loss`, `--dup`, `--reorder`, `--seed`.
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct WireFaultArgs {
    /// Probability that a frame (each direction, ARP excepted) is lost on our side.
    #[arg(long, default_value_t = 0.0)]
    pub loss: f64,
    /// Probability that a frame is delivered twice.
    #[arg(long, default_value_t = 0.0)]
    pub dup: f64,
    /// Probability that a frame is held back (by up to --reorder-delay-us) so that later
    /// frames overtake it.
    #[arg(long, default_value_t = 0.0)]
    pub reorder: f64,
    /// Longest hold of a reordered frame, microseconds of wall-clock time.
    #[arg(long, default_value_t = DEFAULT_REORDER_DELAY_US)]
    pub reorder_delay_us: u64,
    /// Seed of the faults' random streams.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

impl Default for WireFaultArgs {
    fn default() -> Self {
        WireFaultArgs {
            loss: 0.0,
            dup: 0.0,
            reorder: 0.0,
            reorder_delay_us: DEFAULT_REORDER_DELAY_US,
            seed: 1,
        }
    }
}

impl WireFaultArgs {
    /// The fault configuration, `None` when no fault is asked for.
    pub fn config(&self) -> anyhow::Result<Option<FaultConfig>> {
        if self.loss == 0.0 && self.dup == 0.0 && self.reorder == 0.0 {
            return Ok(None);
        }
        let cfg = FaultConfig {
            loss: self.loss,
            duplicate: self.dup,
            reorder: self.reorder,
            corrupt: 0.0,
            reorder_delay_cycles: cycles_of(Duration::from_micros(self.reorder_delay_us)),
            seed: self.seed,
        };
        cfg.validate()
            .map_err(|e| anyhow::anyhow!("--loss/--dup/--reorder/--reorder-delay-us: {e}"))?;
        Ok(Some(cfg))
    }

    /// Injects the faults, if any, into `wire`.
    pub fn apply(&self, wire: &mut UdpWire) -> anyhow::Result<()> {
        if let Some(cfg) = self.config()? {
            wire.set_faults(cfg)
                .map_err(|e| anyhow::anyhow!("injecting faults: {e}"))?;
        }
        Ok(())
    }
}

/// Builds the UDP wire a `--wire` value names, with our addresses; `socket`, when given,
/// is used instead of binding `LOCAL_PORT` (tests bind port 0 first to learn it).
pub fn open_wire(
    spec: WireSpec,
    mac: [u8; 6],
    ip: [u8; 4],
    socket: Option<UdpSocket>,
    pcap: Option<&Path>,
) -> anyhow::Result<UdpWire> {
    let WireSpec::Udp { local, peer } = spec;
    let cfg = UdpWireConfig::loopback(local, peer).with_host(mac, ip);
    let mut wire = match socket {
        Some(s) => UdpWire::from_socket(s, cfg),
        None => UdpWire::bind(cfg),
    }
    .with_context(|| format!("cannot open --wire {spec}"))?;
    if let Some(path) = pcap {
        wire.create_pcap(path)
            .with_context(|| format!("cannot start the capture {}", path.display()))?;
    }
    Ok(wire)
}

/// Frames a slow device's receive queue holds (the world drops and counts the rest, as a
/// full MAC FIFO would): the RTL engine, simulated far below 250 MHz, takes a 4 KiB frame
/// in tens of milliseconds of wall-clock time, while a real peer resends its whole window
/// every time its ACK timer runs out; an unbounded queue would fill with those stale
/// copies and the engine would never reach the frames it needs.
pub const SLOW_RX_QUEUE_LIMIT: usize = 8;

/// One NIC (the model, or the RTL engine) in a world of its own, its port on a
/// [`UdpWire`].
pub struct WiredNic {
    world: Rc<RefCell<World>>,
    node: NodeId,
    /// The device is ticked every cycle far below 250 MHz (the RTL engine): its clock
    /// lags wall-clock time, so every wait is also bounded by wall-clock time.
    slow: bool,
}

impl WiredNic {
    /// Builds the world, attaches `wire` (which must carry our addresses), opens a model
    /// NIC and sets its port's MAC and IPv4 address.
    pub fn open(nic: NicConfig, wire: UdpWire) -> anyhow::Result<(WiredNic, Context)> {
        WiredNic::open_device(Nic::new(nic), false, wire)
    }

    /// [`WiredNic::open`] with any device; `slow` when it cannot keep up with wall-clock
    /// time (it is ticked every cycle, as the RTL engine is): waits are then bounded by
    /// wall-clock time too.
    pub fn open_device<D: Device + 'static>(
        dev: D,
        slow: bool,
        wire: UdpWire,
    ) -> anyhow::Result<(WiredNic, Context)> {
        let Some(host) = wire.host() else {
            bail!("the wire has no host address: give the NIC a MAC and an IPv4 address");
        };
        let mut cfg = WorldConfig::default();
        if slow {
            // A slow device's receive FIFO, as a MAC's: a frame arriving when it is full is
            // dropped, so a peer's resent bursts do not queue up stale copies ahead of the
            // frames the device needs next (see SLOW_RX_QUEUE_LIMIT).
            cfg.node.rx_queue_limit = Some(SLOW_RX_QUEUE_LIMIT);
        }
        let mut world = World::new(cfg).map_err(|e| anyhow::anyhow!("world: {e}"))?;
        let node = world.add_node(dev);
        world
            .attach_udp(node, wire)
            .map_err(|e| anyhow::anyhow!("attaching the wire: {e}"))?;
        let world = Rc::new(RefCell::new(world));
        let mut ctx = Context::open(Box::new(ModelBackend::new(world.clone(), node)))
            .context("opening the NIC")?;
        ctx.set_port(host.mac, host.ip);
        Ok((WiredNic { world, node, slow }, ctx))
    }

    /// Whether the device's clock lags wall-clock time (the RTL engine).
    pub fn is_slow(&self) -> bool {
        self.slow
    }

    /// The QP timeout to connect with (the ACK timeout is 4.096 us * 2^N): 14 as
    /// `ibv_rc_pingpong` and perftest (67 ms); on a slow device 6 (262 us, 65 536 cycles
    /// at 250 MHz), since 67 ms there are 16.8 M simulated cycles, minutes of wall-clock
    /// time before a lost tail is resent, while a real peer answers within a few hundred
    /// simulated cycles.
    pub fn qp_timeout(&self) -> u8 {
        match self.slow {
            false => 14,
            true => 6,
        }
    }

    /// Runs the world until `cond` holds, for at most `max` of simulated time and, on a
    /// slow device, at most `max` of wall-clock time.
    fn run_bounded(&self, mut cond: impl FnMut(&World) -> bool, max: Duration) {
        let cycles = cycles_of(max).max(1);
        let mut w = self.world.borrow_mut();
        if self.slow {
            let deadline = Instant::now() + max;
            let _ = w.run_until(|w| cond(w) || Instant::now() >= deadline, cycles);
        } else {
            let _ = w.run_until(cond, cycles);
        }
    }

    /// The world (shared with the context's backend).
    pub fn world(&self) -> &Rc<RefCell<World>> {
        &self.world
    }

    /// The NIC's node.
    pub fn node(&self) -> NodeId {
        self.node
    }

    /// Our MAC and IPv4 address.
    pub fn host(&self) -> ([u8; 6], [u8; 4]) {
        let w = self.world.borrow();
        let h = w
            .udp_wire(self.node)
            .and_then(UdpWire::host)
            .expect("WiredNic::open checked the host address");
        (h.mac, h.ip)
    }

    /// Frames dropped because the device's receive queue was full (a slow device's
    /// [`SLOW_RX_QUEUE_LIMIT`]; always 0 for the model, whose queue is unbounded).
    pub fn rx_overflow(&self) -> u64 {
        self.world.borrow().node_stats(self.node).rx_overflow
    }

    /// The wire's counters.
    pub fn stats(&self) -> UdpWireStats {
        self.world
            .borrow()
            .udp_wire(self.node)
            .map(UdpWire::stats)
            .unwrap_or_default()
    }

    /// Lets the world run for about `d` of wall-clock time (the clock is paced), so the
    /// NIC keeps answering ARP and the peer's frames while the host waits on something
    /// else.
    /// On a slow device, the run ends after `d` of wall-clock time, fewer cycles.
    pub fn run_for(&self, d: Duration) {
        if self.slow {
            self.run_bounded(|_| false, d);
        } else {
            self.world.borrow_mut().advance(cycles_of(d).max(1));
        }
    }

    /// Lets the world run until the NIC writes host memory (a CQE, received data) or
    /// about `max` of wall-clock time has passed: how a host waits for a completion
    /// without spinning (the paced world sleeps on the socket while the NIC is idle).
    pub fn wait_for_dma_write(&self, max: Duration) {
        let node = self.node;
        let seen = |w: &World| {
            let s = w.dma_stats(node);
            s.writes + s.faults
        };
        let before = seen(&self.world.borrow());
        self.run_bounded(|w| seen(w) != before, max);
    }

    /// The MAC of `ip`: from the wire's ARP table, or by ARP requests (one per 250 ms)
    /// while the world runs, for at most `timeout`.
    pub fn resolve(&self, ip: [u8; 4], timeout: Duration) -> anyhow::Result<[u8; 6]> {
        let deadline = Instant::now() + timeout;
        let node = self.node;
        loop {
            let mut w = self.world.borrow_mut();
            let now = w.now();
            let wire = w.udp_wire_mut(node).expect("the node has a UDP wire");
            if let Some(mac) = wire
                .resolve(now, ip)
                .map_err(|e| anyhow::anyhow!("ARP: {e}"))?
            {
                return Ok(mac);
            }
            if Instant::now() >= deadline {
                bail!(
                    "no ARP reply for {} within {:.1} s ({} requests sent): is the peer's \
                     interface up with that address? Give --peer-mac to skip ARP",
                    Ipv4Addr::from(ip),
                    timeout.as_secs_f64(),
                    wire.stats().arp_requests_sent
                );
            }
            // Up to 10 ms, returning as soon as the answer is in.
            drop(w);
            self.run_bounded(
                |w| w.udp_wire(node).and_then(|u| u.lookup(ip)).is_some(),
                Duration::from_millis(10),
            );
        }
    }

    /// Stops injecting faults (both directions) and returns whether any were on. Frames
    /// held back for reordering are released (outgoing) or forgotten (incoming), as
    /// `UdpWire::set_faults` does; the fault counters keep their values.
    pub fn stop_faults(&self) -> anyhow::Result<bool> {
        let mut w = self.world.borrow_mut();
        let wire = w.udp_wire_mut(self.node).expect("the node has a UDP wire");
        let Some(old) = wire.faults().cloned() else {
            return Ok(false);
        };
        let off = FaultConfig {
            loss: 0.0,
            duplicate: 0.0,
            reorder: 0.0,
            corrupt: 0.0,
            ..old
        };
        wire.set_faults(off)
            .map_err(|e| anyhow::anyhow!("stopping the faults: {e}"))?;
        Ok(true)
    }

    /// Ends the wire's capture (flushes the pcap file).
    pub fn close_capture(&self) -> anyhow::Result<()> {
        self.world
            .borrow_mut()
            .close_taps()
            .map_err(|e| anyhow::anyhow!("closing the capture: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_specs() {
        assert_eq!(
            "udp:9000:9001".parse::<WireSpec>(),
            Ok(WireSpec::Udp {
                local: 9000,
                peer: 9001
            })
        );
        assert_eq!(WireSpec::Udp { local: 1, peer: 2 }.to_string(), "udp:1:2");
        for bad in [
            "udp:9000",
            "tcp:1:2",
            "udp:0:5",
            "udp:5:70000",
            "udp:x:1",
            "udp:7:7",
            "udp:1:2:3",
            "",
        ] {
            assert!(bad.parse::<WireSpec>().is_err(), "{bad}");
        }
        let e = "sim:1:2".parse::<WireSpec>().unwrap_err();
        assert!(e.contains("unknown wire kind \"sim\""), "{e}");
    }

    #[test]
    fn macs_and_ips() {
        assert_eq!(parse_mac("02:00:0a:0B:00:01"), Ok([2, 0, 10, 11, 0, 1]));
        assert_eq!(
            parse_mac("52-54-00-12-34-56"),
            Ok([0x52, 0x54, 0, 0x12, 0x34, 0x56])
        );
        for bad in [
            "02:00:00:00:00",
            "02:00:00:00:00:001",
            "zz:00:00:00:00:00",
            "",
        ] {
            assert!(parse_mac(bad).is_err(), "{bad}");
        }
        assert!(parse_mac("01:00:5e:00:00:01")
            .unwrap_err()
            .contains("multicast"));
        assert_eq!(fmt_mac([2, 0, 0, 0, 0, 0xab]), "02:00:00:00:00:ab");
        assert_eq!(parse_ipv4("10.0.2.15"), Ok([10, 0, 2, 15]));
        for bad in ["10.0.2", "0.0.0.0", "255.255.255.255", "224.0.0.1", "::1"] {
            assert!(parse_ipv4(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn fault_options() {
        assert_eq!(WireFaultArgs::default().config().unwrap(), None);
        let f = WireFaultArgs {
            loss: 0.03,
            dup: 0.02,
            reorder: 0.02,
            seed: 5,
            ..WireFaultArgs::default()
        };
        let cfg = f.config().unwrap().unwrap();
        assert_eq!((cfg.loss, cfg.duplicate, cfg.reorder), (0.03, 0.02, 0.02));
        assert_eq!((cfg.seed, cfg.reorder_delay_cycles), (5, 500_000));
        let bad = WireFaultArgs {
            loss: 1.5,
            ..WireFaultArgs::default()
        };
        assert!(bad.config().is_err());
        let zero_delay = WireFaultArgs {
            reorder: 0.1,
            reorder_delay_us: 0,
            ..WireFaultArgs::default()
        };
        assert!(zero_delay.config().is_err());
    }

    #[test]
    fn the_wired_tools_run_on_the_model_and_the_rtl_only() {
        let mut args = WireLinkArgs::new(
            WireSpec::Udp { local: 1, peer: 2 },
            [2, 0, 0, 0, 0, 1],
            [10, 0, 0, 1],
        );
        args.check_backend("perftest").unwrap();
        args.backend = "rtl".into();
        args.check_backend("pingpong").unwrap();
        args.backend = "vfio:0000:03:00.0".into();
        let e = args.check_backend("perftest").unwrap_err().to_string();
        assert!(e.contains("model and rtl backends only"), "{e}");
    }

    #[test]
    fn gids() {
        let gid = gid_of_ipv4([10, 0, 0, 1]);
        assert_eq!(gid, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1]);
        assert_eq!(fmt_gid(gid), "::ffff:10.0.0.1");
        assert_eq!(ipv4_of_gid(gid), Some([10, 0, 0, 1]));
        assert_eq!(ipv4_of_gid([0; 16]), None);
        let mut link_local = [0u8; 16];
        link_local[..2].copy_from_slice(&[0xfe, 0x80]);
        link_local[15] = 1;
        assert_eq!(ipv4_of_gid(link_local), None);
        assert_eq!(fmt_gid(link_local), "fe80::1");
        assert_eq!(fmt_gid([0; 16]), "::");
        assert_eq!(cycles_of(Duration::from_micros(1)), 250);
    }
}
