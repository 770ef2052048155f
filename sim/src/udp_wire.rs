//! A real wire: one node's Ethernet port carried over a UDP socket on loopback, one
//! Ethernet frame per datagram, so a simulated NIC can be cabled to a real peer such as a
//! QEMU guest (`-netdev socket,udp=127.0.0.1:P1,localaddr=127.0.0.1:P2`) or to another
//! process running a simulated NIC.
//!
//! A [`UdpWire`] is bound to `127.0.0.1:LOCAL` and sends every frame the node's device
//! sends to `127.0.0.1:PEER` (the peer's `localaddr` is our `PEER`, its `udp=` is our
//! `LOCAL`). It is attached to a node with [`World::attach_udp`](crate::World::attach_udp)
//! in place of a simulated cable ([`Link`](crate::Link)).
//!
//! # Receiving
//!
//! A small thread blocks on the socket and queues each datagram (bounded queue; a full
//! queue drops and counts). The world side never blocks: [`UdpWire::receive`] takes what
//! has arrived. Each datagram is judged as a frame:
//!
//! - shorter than an Ethernet header: dropped, counted in [`UdpWireStats::rx_runt`];
//! - longer than [`UdpWireConfig::max_frame_len`]: dropped, counted in
//!   [`UdpWireStats::rx_oversized`] (the thread drops these before queueing them);
//! - with a host address configured ([`UdpWireConfig::host`]): ARP is handled here (see
//!   below) and only IPv4 frames addressed to our MAC reach the device, as a MAC's
//!   address filter would pass them; the rest count in [`UdpWireStats::rx_not_for_us`].
//!   Without a host address every well-sized frame reaches the device.
//!
//! Nothing a peer sends can make the wire panic.
//!
//! # Socket buffer
//!
//! Between the peer's send and the thread's read, datagrams wait in the kernel's receive
//! buffer of our socket, and when it is full the kernel drops them (counted per socket in
//! [`UdpWireStats::rx_socket_drops`] on Linux, and in `/proc/net/snmp`'s `Udp:
//! RcvbufErrors`). With the default buffer (Linux: `net.core.rmem_default`, 212 992 bytes
//! reported) that holds about 25 frames of 4154 bytes (each costs ~8.5 KiB of buffer with
//! its kernel bookkeeping), and a peer such as rxe sends a whole window of 4 KiB frames
//! in a few milliseconds: when the host's cores are busy (a Verilated engine and a QEMU
//! guest on 2 cores) the thread is not scheduled in time and the rest of the burst is
//! lost, again at every go-back-N resend. So the wire asks for
//! [`DEFAULT_SOCKET_RECV_BUFFER`] (4 MiB, [`UdpWireConfig::socket_recv_buffer`]): a
//! window of 256 frames of 4 KiB (a 1 MiB message at PMTU 4096) then fits. The kernel
//! caps the request at `net.core.rmem_max` (Linux doubles the granted size for its
//! bookkeeping and reports the doubled figure); a smaller grant is not an error, the
//! size obtained is reported in [`UdpWireStats::rx_socket_buffer`] (and in the `wire:`
//! line of `rocenic`'s output). Where `rmem_max` is low (many distributions keep 212 992)
//! raise it (`sysctl -w net.core.rmem_max=4194304`) for runs with large bursts.
//! `std`'s `UdpSocket` has no setter for `SO_RCVBUF`: the `socket2` crate sets it.
//!
//! # ARP
//!
//! The behavioural NIC, like the RTL, knows only RoCE frames: its QPs carry the peer's MAC
//! in their address vector. ARP is a host-side matter, so it lives here, on the frames
//! crossing the wire (`docs/design.md` says why). With [`UdpWireConfig::host`] set, the
//! wire
//!
//! - answers every ARP request for our IPv4 address with a reply from our MAC;
//! - learns `IPv4 -> MAC` from every well-formed ARP request or reply whose sender has a
//!   unicast MAC and a non-zero IPv4 address (a point-to-point wire has one neighbour, so
//!   there is no table to protect); entries added with [`UdpWire::add_neighbor`] are
//!   static and never overwritten;
//! - resolves on demand: [`UdpWire::resolve`] answers from the table or broadcasts an ARP
//!   request, at most one per [`ARP_RETRY_CYCLES`] per address.
//!
//! ARP frames are padded to the 60-byte Ethernet minimum, as a MAC would pad them.
//!
//! # Capture
//!
//! [`UdpWire::set_pcap`] records every frame sent (the device's and ARP) and every
//! datagram received that has a valid frame size, both directions in one pcap stream, at
//! the world cycle they crossed the wire (the `pcap` module's timestamp rule).
//!
//! # Faults
//!
//! [`UdpWire::set_faults`] makes our side of the wire lossy, with the seeded
//! [`FaultInjector`] of simulated links: every frame the device sends and every frame that
//! would reach the device (IPv4 to our MAC; ARP is never faulted) is judged by one injector
//! per direction (the receive direction's stream is seeded by `seed ^` [`RX_SEED_SALT`]),
//! in order: lost with probability `loss`, one bit flipped with probability `corrupt`,
//! delivered twice with probability `duplicate`, and held back with probability `reorder`
//! by `extra_delay` cycles *of wall-clock time* (4 ns each), so that frames sent or
//! received meanwhile overtake it. For one seed and one sequence of frames the verdicts
//! are always the same (the timing of a real peer is not). The capture shows the device's
//! view: frames as the device sent them (before the faults) and frames as it received them
//! (after the faults, duplicates twice, held-back ones when released).
//!
//! # Time: pacing the clock against a real peer
//!
//! A real peer lives in wall-clock time. A world that skips idle cycles would otherwise
//! race ahead of it: asked to wait for an ACK, it would jump straight to the ACK timer and
//! retransmit before the peer could possibly have answered. A world with a UDP wire
//! therefore follows the **pacing rule** (implemented by [`World`](crate::World) with a
//! [`WallClock`]):
//!
//! 1. When the first UDP wire is attached, cycle `c0` is anchored to the wall-clock instant
//!    `t0`; cycle `c` "happens" at `t0 + (c - c0) x 4 ns`.
//! 2. Datagrams that have arrived are handed to the device in the next executed cycle,
//!    before any idle skip: a world never skips while input waits.
//! 3. An idle skip towards the next event at cycle `w` may only reach the cycle of the
//!    current wall-clock time. While `w` lies in the future, the world waits on the socket
//!    until `w`'s instant: if a datagram arrives first, the clock stops at the arrival's
//!    cycle and the datagram is delivered there; otherwise the clock reaches `w`.
//! 4. Busy stretches (cycles that must be executed one by one) run as fast as the host CPU
//!    allows, which for the model is far below 250 MHz: simulated time then lags wall time
//!    and the next idle skip catches up. Simulated time is never ahead of wall time by more
//!    than the cycles executed since the last skip.
//!
//! So device timers (ACK timeout, RNR wait) never fire earlier in wall time than they would
//! on hardware, and every cycle timeout a driver uses becomes a wall-clock bound. Worlds
//! without a UDP wire are unaffected and stay fully deterministic.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;
use std::io::{self, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rocenic_proto::device::Frame;
use rocenic_proto::wire::{
    ArpOperation, ArpPacket, ArpRepr, EtherType, EthernetAddress, EthernetFrame, EthernetRepr,
    Ipv4Address, ARP_PACKET_LEN, ETHERNET_HEADER_LEN,
};

use crate::link::{FaultConfig, FaultInjector};
use crate::pcap::PcapTap;
use crate::{SimError, NS_PER_CYCLE};

/// Largest frame accepted by default: 9216 bytes, the usual jumbo-frame limit of switches
/// (PMTU 4096 needs frames of 4158 bytes; a 9000-byte IP MTU needs 9014).
pub const DEFAULT_MAX_FRAME_LEN: usize = 9216;

/// Largest payload of a UDP datagram over IPv4; longer frames cannot be sent.
pub const MAX_DATAGRAM_LEN: usize = 65507;

/// Datagrams queued between the socket thread and the world by default.
pub const DEFAULT_RX_QUEUE_LIMIT: usize = 4096;

/// Receive buffer asked of the kernel for the wire's socket by default: 4 MiB (see the
/// module documentation, "Socket buffer").
pub const DEFAULT_SOCKET_RECV_BUFFER: usize = 4 << 20;

/// Minimum Ethernet frame length without FCS; ARP frames are padded to it.
pub const MIN_FRAME_LEN: usize = 60;

/// Cycles between two ARP requests for the same address: 250 ms at 250 MHz.
pub const ARP_RETRY_CYCLES: u64 = 62_500_000;

/// XORed into the fault seed for the receive direction's stream.
pub const RX_SEED_SALT: u64 = 0x005e_ed0f_4ece_17e5;

/// How long the socket thread blocks before it looks at its stop flag again.
const THREAD_POLL: Duration = Duration::from_millis(200);

/// Our port's addresses, which turn on the ARP responder/resolver and the MAC filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HostAddr {
    /// Our MAC: ARP replies come from it, and IPv4 frames must be addressed to it.
    pub mac: [u8; 6],
    /// Our IPv4 address: ARP requests for it are answered.
    pub ip: [u8; 4],
}

/// Configuration of a [`UdpWire`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UdpWireConfig {
    /// Where to bind (ignored by [`UdpWire::from_socket`]). Default `127.0.0.1:0`.
    pub local: SocketAddr,
    /// Where every frame is sent.
    pub peer: SocketAddr,
    /// Our MAC and IPv4 address: ARP is answered and resolved and only IPv4 frames to our
    /// MAC reach the device. `None`: every well-sized frame reaches the device.
    pub host: Option<HostAddr>,
    /// Longer datagrams are dropped ([`UdpWireStats::rx_oversized`]).
    pub max_frame_len: usize,
    /// Datagrams waiting for the world; more are dropped ([`UdpWireStats::rx_queue_overflow`]).
    pub rx_queue_limit: usize,
    /// Bytes of socket receive buffer (`SO_RCVBUF`) to ask the kernel for; 0 keeps the
    /// system's default. The kernel may grant less (Linux caps the request at
    /// `net.core.rmem_max`) or report more (Linux doubles it for its bookkeeping); what it
    /// granted is in [`UdpWireStats::rx_socket_buffer`].
    pub socket_recv_buffer: usize,
}

impl UdpWireConfig {
    /// Loopback: bind `127.0.0.1:local_port`, send to `127.0.0.1:peer_port`.
    pub fn loopback(local_port: u16, peer_port: u16) -> Self {
        UdpWireConfig {
            local: SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, local_port)),
            peer: SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, peer_port)),
            host: None,
            max_frame_len: DEFAULT_MAX_FRAME_LEN,
            rx_queue_limit: DEFAULT_RX_QUEUE_LIMIT,
            socket_recv_buffer: DEFAULT_SOCKET_RECV_BUFFER,
        }
    }

    /// The same, with our addresses (ARP and the MAC filter on).
    pub fn with_host(mut self, mac: [u8; 6], ip: [u8; 4]) -> Self {
        self.host = Some(HostAddr { mac, ip });
        self
    }

    /// Refuses limits that cannot work.
    pub fn validate(&self) -> Result<(), SimError> {
        if !(ETHERNET_HEADER_LEN..=MAX_DATAGRAM_LEN).contains(&self.max_frame_len) {
            return Err(SimError::InvalidConfig(format!(
                "UdpWireConfig::max_frame_len = {} is outside {ETHERNET_HEADER_LEN}..={MAX_DATAGRAM_LEN}",
                self.max_frame_len
            )));
        }
        if self.rx_queue_limit == 0 {
            return Err(SimError::InvalidConfig(
                "UdpWireConfig::rx_queue_limit must be at least 1".into(),
            ));
        }
        Ok(())
    }
}

/// Counters of a [`UdpWire`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UdpWireStats {
    /// Frames the device sent (ARP not included).
    pub tx_frames: u64,
    /// Bytes of those frames.
    pub tx_bytes: u64,
    /// Frames that could not be sent (socket error, or longer than a datagram can be).
    pub tx_errors: u64,
    /// Datagrams read from the socket, whatever they held.
    pub rx_datagrams: u64,
    /// Frames handed to the device.
    pub rx_frames: u64,
    /// Bytes of those frames.
    pub rx_bytes: u64,
    /// Datagrams shorter than an Ethernet header.
    pub rx_runt: u64,
    /// Datagrams longer than the configured maximum frame.
    pub rx_oversized: u64,
    /// Frames not for the device: another destination MAC, broadcast or multicast (other
    /// than ARP), or another ethertype than IPv4 and ARP.
    pub rx_not_for_us: u64,
    /// Datagrams dropped because the queue towards the world was full.
    pub rx_queue_overflow: u64,
    /// The socket's receive buffer in bytes, as the kernel reports it (`SO_RCVBUF`).
    pub rx_socket_buffer: u64,
    /// Datagrams the kernel dropped because the socket's receive buffer was full, before
    /// the wire could read them (Linux: the `drops` column of `/proc/net/udp`, for the
    /// socket's inode); `None` where the system does not say.
    pub rx_socket_drops: Option<u64>,
    /// ARP requests for our address received (each is answered).
    pub arp_requests_received: u64,
    /// ARP replies received.
    pub arp_replies_received: u64,
    /// ARP requests we broadcast to resolve an address.
    pub arp_requests_sent: u64,
    /// ARP replies we sent.
    pub arp_replies_sent: u64,
    /// ARP frames that were not Ethernet/IPv4 ARP or were truncated.
    pub arp_malformed: u64,
    /// Table entries added or changed by what we heard.
    pub arp_learned: u64,
    /// Device frames the injected faults dropped on the way out.
    pub fault_tx_dropped: u64,
    /// Received frames the injected faults dropped before the device.
    pub fault_rx_dropped: u64,
    /// Frames (either direction) the injected faults duplicated.
    pub fault_duplicated: u64,
    /// Frames (either direction) the injected faults held back.
    pub fault_reordered: u64,
    /// Frames (either direction) the injected faults corrupted.
    pub fault_corrupted: u64,
}

impl UdpWireStats {
    /// Datagrams dropped as garbage: runts and oversized ones.
    pub fn garbage(&self) -> u64 {
        self.rx_runt + self.rx_oversized
    }
}

impl fmt::Display for UdpWireStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "sent {} frames ({} B, {} errors); received {} datagrams: {} frames ({} B) to the device, \
             dropped {} runt, {} oversized, {} not for us, {} queue overflow; \
             socket receive buffer {} B, {} dropped in it; ARP: {} requests answered, {} requests sent, {} replies received, {} learned, {} malformed",
            self.tx_frames,
            self.tx_bytes,
            self.tx_errors,
            self.rx_datagrams,
            self.rx_frames,
            self.rx_bytes,
            self.rx_runt,
            self.rx_oversized,
            self.rx_not_for_us,
            self.rx_queue_overflow,
            self.rx_socket_buffer,
            self.rx_socket_drops
                .map_or_else(|| "unknown".to_string(), |n| n.to_string()),
            self.arp_replies_sent,
            self.arp_requests_sent,
            self.arp_replies_received,
            self.arp_learned,
            self.arp_malformed
        )?;
        let faults = [
            self.fault_tx_dropped,
            self.fault_rx_dropped,
            self.fault_duplicated,
            self.fault_reordered,
            self.fault_corrupted,
        ];
        if faults.iter().any(|&n| n != 0) {
            write!(
                f,
                "; injected faults: {} dropped out, {} dropped in, {} duplicated, {} held back, {} corrupted",
                faults[0], faults[1], faults[2], faults[3], faults[4]
            )?;
        }
        Ok(())
    }
}

/// Counters the socket thread updates.
#[derive(Debug, Default)]
struct Shared {
    stop: AtomicBool,
    oversized: AtomicU64,
    overflow: AtomicU64,
    datagrams: AtomicU64,
}

/// One node's port on a UDP socket. See the module documentation.
pub struct UdpWire {
    cfg: UdpWireConfig,
    socket: UdpSocket,
    local: SocketAddr,
    rx: Receiver<Vec<u8>>,
    /// Datagrams taken from the queue by [`UdpWire::has_input`] or a wait, not yet judged.
    lookahead: VecDeque<Vec<u8>>,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    neighbors: BTreeMap<[u8; 4], [u8; 6]>,
    static_neighbors: BTreeSet<[u8; 4]>,
    /// Cycle of the last ARP request sent per address.
    arp_asked: BTreeMap<[u8; 4], u64>,
    pcap: Option<PcapTap<Box<dyn Write>>>,
    pcap_error: Option<SimError>,
    stats: UdpWireStats,
    /// The socket's inode (Linux), to find its drop count in `/proc/net/udp`.
    socket_inode: Option<u64>,
    faults: Option<Box<WireFaults>>,
}

/// The injected faults of both directions and the frames they hold back.
struct WireFaults {
    tx: FaultInjector,
    rx: FaultInjector,
    /// Outgoing frames held back: when to send, the frame, how many copies.
    held_tx: Vec<(Instant, Frame, usize)>,
    /// Incoming frames held back: when to deliver, the frame, how many copies.
    held_rx: Vec<(Instant, Frame, usize)>,
}

impl WireFaults {
    fn next_release(&self) -> Option<Instant> {
        self.held_tx.iter().chain(&self.held_rx).map(|h| h.0).min()
    }
}

/// Takes the held frames due at `now` out of `held`, in the order they were held.
fn take_due(held: &mut Vec<(Instant, Frame, usize)>, now: Instant) -> Vec<(Frame, usize)> {
    let mut due = Vec::new();
    held.retain_mut(|(at, f, n)| {
        if *at <= now {
            due.push((std::mem::take(f), *n));
            false
        } else {
            true
        }
    });
    due
}

/// Applies a verdict's corruption; the number of copies to deliver (0: dropped).
fn apply(v: &crate::link::Verdict, frame: &mut [u8], stats: &mut UdpWireStats) -> usize {
    if let Some(bit) = v.corrupt_bit {
        frame[bit / 8] ^= 1 << (bit % 8);
        stats.fault_corrupted += 1;
    }
    if v.duplicate {
        stats.fault_duplicated += 1;
        2
    } else {
        1
    }
}

impl UdpWire {
    /// Binds `cfg.local` and starts receiving.
    pub fn bind(cfg: UdpWireConfig) -> Result<Self, SimError> {
        cfg.validate()?;
        let socket = UdpSocket::bind(cfg.local).map_err(|e| {
            SimError::Io(io::Error::new(
                e.kind(),
                format!("cannot bind UDP {}: {e}", cfg.local),
            ))
        })?;
        Self::from_socket(socket, cfg)
    }

    /// Uses an already bound socket (tests bind port 0 first to learn both ports).
    pub fn from_socket(socket: UdpSocket, cfg: UdpWireConfig) -> Result<Self, SimError> {
        cfg.validate()?;
        let local = socket.local_addr()?;
        let rx_socket_buffer = set_recv_buffer(&socket, cfg.socket_recv_buffer)?;
        let socket_inode = socket_inode(&socket);
        socket.set_nonblocking(false)?;
        let reader = socket.try_clone()?;
        reader.set_read_timeout(Some(THREAD_POLL))?;
        let shared = Arc::new(Shared::default());
        let (tx, rx) = mpsc::sync_channel(cfg.rx_queue_limit);
        let thread = {
            let shared = shared.clone();
            let max = cfg.max_frame_len;
            std::thread::Builder::new()
                .name(format!("udp-wire-{}", local.port()))
                .spawn(move || receive_loop(&reader, &tx, &shared, max))?
        };
        Ok(UdpWire {
            cfg,
            socket,
            local,
            rx,
            lookahead: VecDeque::new(),
            shared,
            thread: Some(thread),
            neighbors: BTreeMap::new(),
            static_neighbors: BTreeSet::new(),
            arp_asked: BTreeMap::new(),
            pcap: None,
            pcap_error: None,
            stats: UdpWireStats {
                rx_socket_buffer: rx_socket_buffer as u64,
                ..UdpWireStats::default()
            },
            socket_inode,
            faults: None,
        })
    }

    /// Injects seeded faults into both directions of our side of the wire (see the module
    /// documentation), replacing earlier ones; frames held back by earlier faults are
    /// released at once. `cfg.reorder_delay_cycles` is a wall-clock delay here (4 ns a
    /// cycle).
    pub fn set_faults(&mut self, cfg: FaultConfig) -> Result<(), SimError> {
        cfg.validate()?;
        self.flush_held(true);
        let rx_cfg = FaultConfig {
            seed: cfg.seed ^ RX_SEED_SALT,
            ..cfg.clone()
        };
        self.faults = Some(Box::new(WireFaults {
            tx: FaultInjector::new(cfg),
            rx: FaultInjector::new(rx_cfg),
            held_tx: Vec::new(),
            held_rx: Vec::new(),
        }));
        Ok(())
    }

    /// The injected faults' configuration (of the send direction), if any.
    pub fn faults(&self) -> Option<&FaultConfig> {
        self.faults.as_ref().map(|f| f.tx.config())
    }

    /// Sends the held-back outgoing frames that are due; with `all`, sends every held
    /// outgoing frame and forgets the held incoming ones (faults being replaced).
    fn flush_held(&mut self, all: bool) {
        let Some(f) = &mut self.faults else {
            return;
        };
        let now = if all {
            Instant::now() + Duration::from_secs(1 << 20)
        } else {
            Instant::now()
        };
        for (frame, copies) in take_due(&mut f.held_tx, now) {
            for _ in 0..copies {
                if !self.put(&frame) {
                    self.stats.tx_errors += 1;
                }
            }
        }
        if all {
            if let Some(f) = &mut self.faults {
                f.held_rx.clear();
            }
        }
    }

    /// `true` when a held-back incoming frame is due.
    fn held_rx_due(&self) -> bool {
        let now = Instant::now();
        self.faults
            .as_ref()
            .is_some_and(|f| f.held_rx.iter().any(|h| h.0 <= now))
    }

    /// The address the socket is bound to.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Where frames are sent.
    pub fn peer_addr(&self) -> SocketAddr {
        self.cfg.peer
    }

    /// Our addresses, if configured.
    pub fn host(&self) -> Option<HostAddr> {
        self.cfg.host
    }

    /// The configuration.
    pub fn config(&self) -> &UdpWireConfig {
        &self.cfg
    }

    /// The counters.
    pub fn stats(&self) -> UdpWireStats {
        let mut s = self.stats;
        s.rx_oversized += self.shared.oversized.load(Ordering::Relaxed);
        s.rx_queue_overflow = self.shared.overflow.load(Ordering::Relaxed);
        s.rx_datagrams = self.shared.datagrams.load(Ordering::Relaxed);
        s.rx_socket_drops = self.socket_inode.and_then(|inode| {
            let table = std::fs::read_to_string("/proc/net/udp").ok()?;
            udp_socket_drops(&table, inode)
        });
        s
    }

    /// Records every frame crossing the wire, both directions, into a pcap stream on
    /// `writer` (wrap files in a `BufWriter`), replacing any earlier capture.
    pub fn set_pcap(&mut self, writer: impl Write + 'static) -> Result<(), SimError> {
        self.close_pcap()?;
        self.pcap = Some(PcapTap::new(Box::new(writer) as Box<dyn Write>)?);
        Ok(())
    }

    /// [`UdpWire::set_pcap`] into a new file.
    pub fn create_pcap(&mut self, path: impl AsRef<Path>) -> Result<(), SimError> {
        let path = path.as_ref();
        let file = std::fs::File::create(path).map_err(|e| {
            SimError::Io(io::Error::new(
                e.kind(),
                format!("cannot create {}: {e}", path.display()),
            ))
        })?;
        self.set_pcap(io::BufWriter::new(file))
    }

    /// Ends the capture (flushes it); returns the first error the capture met.
    pub fn close_pcap(&mut self) -> Result<(), SimError> {
        let mut first = self.pcap_error.take();
        if let Some(tap) = self.pcap.take() {
            if let Err(e) = tap.finish() {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }

    fn record(&mut self, now: u64, frame: &[u8]) {
        if let Some(tap) = &mut self.pcap {
            if let Err(e) = tap.record(now, frame) {
                self.pcap = None;
                self.pcap_error.get_or_insert(e);
            }
        }
    }

    /// Puts one datagram on the socket, unrecorded.
    fn put(&mut self, frame: &[u8]) -> bool {
        frame.len() <= MAX_DATAGRAM_LEN && self.socket.send_to(frame, self.cfg.peer).is_ok()
    }

    fn transmit(&mut self, now: u64, frame: &[u8]) -> bool {
        if frame.len() > MAX_DATAGRAM_LEN {
            return false;
        }
        self.record(now, frame);
        self.put(frame)
    }

    /// Sends a frame the device sent, as one datagram, at cycle `now` (through the
    /// injected faults, if any).
    pub fn send(&mut self, now: u64, frame: &[u8]) {
        let Some(f) = &mut self.faults else {
            if self.transmit(now, frame) {
                self.stats.tx_frames += 1;
                self.stats.tx_bytes += frame.len() as u64;
            } else {
                self.stats.tx_errors += 1;
            }
            return;
        };
        let v = f.tx.judge(frame);
        if frame.len() > MAX_DATAGRAM_LEN {
            self.stats.tx_errors += 1;
            return;
        }
        self.stats.tx_frames += 1;
        self.stats.tx_bytes += frame.len() as u64;
        self.record(now, frame);
        if v.drop.is_some() {
            self.stats.fault_tx_dropped += 1;
            return;
        }
        let mut frame = frame.to_vec();
        let copies = apply(&v, &mut frame, &mut self.stats);
        if v.extra_delay > 0 {
            self.stats.fault_reordered += 1;
            let at = Instant::now() + wall_of_cycles(v.extra_delay);
            if let Some(f) = &mut self.faults {
                f.held_tx.push((at, frame, copies));
            }
            return;
        }
        for _ in 0..copies {
            if !self.put(&frame) {
                self.stats.tx_errors += 1;
            }
        }
    }

    /// Moves every queued datagram into the lookahead (and sends held-back frames that are
    /// due); `true` if any datagram or due held-back frame is waiting.
    pub fn has_input(&mut self) -> bool {
        self.flush_held(false);
        while let Ok(d) = self.rx.try_recv() {
            self.lookahead.push_back(d);
        }
        !self.lookahead.is_empty() || self.held_rx_due()
    }

    /// Blocks until a datagram is waiting or `timeout` has passed; `true` if one is. With
    /// faults, the wait also ends when a held-back frame is due.
    pub fn wait_input(&mut self, timeout: Duration) -> bool {
        if self.has_input() {
            return true;
        }
        let timeout = match self.faults.as_ref().and_then(|f| f.next_release()) {
            Some(at) => timeout.min(at.saturating_duration_since(Instant::now())),
            None => timeout,
        };
        match self.rx.recv_timeout(timeout) {
            Ok(d) => {
                self.lookahead.push_back(d);
                true
            }
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => self.has_input(),
        }
    }

    /// Takes every datagram that has arrived (never blocks), answers and learns ARP, and
    /// returns the frames for the device, in arrival order. `now` is the cycle they are
    /// delivered in (for the capture and ARP replies).
    pub fn receive(&mut self, now: u64) -> Vec<Frame> {
        self.has_input();
        let mut out = Vec::new();
        while let Some(d) = self.lookahead.pop_front() {
            let Some(mut frame) = self.judge(now, d) else {
                continue;
            };
            let Some(f) = &mut self.faults else {
                out.push(frame);
                continue;
            };
            let v = f.rx.judge(&frame);
            if v.drop.is_some() {
                self.stats.fault_rx_dropped += 1;
                continue;
            }
            let copies = apply(&v, &mut frame, &mut self.stats);
            if v.extra_delay > 0 {
                self.stats.fault_reordered += 1;
                let at = Instant::now() + wall_of_cycles(v.extra_delay);
                if let Some(f) = &mut self.faults {
                    f.held_rx.push((at, frame, copies));
                }
                continue;
            }
            for _ in 1..copies {
                out.push(frame.clone());
            }
            out.push(frame);
        }
        if let Some(f) = &mut self.faults {
            for (frame, copies) in take_due(&mut f.held_rx, Instant::now()) {
                for _ in 0..copies {
                    out.push(frame.clone());
                }
            }
        }
        for frame in &out {
            self.record(now, frame);
            self.stats.rx_frames += 1;
            self.stats.rx_bytes += frame.len() as u64;
        }
        out
    }

    /// Decides what one datagram is; `Some` when it goes to the device.
    fn judge(&mut self, now: u64, d: Vec<u8>) -> Option<Frame> {
        if d.len() < ETHERNET_HEADER_LEN {
            self.stats.rx_runt += 1;
            return None;
        }
        if d.len() > self.cfg.max_frame_len {
            self.stats.rx_oversized += 1;
            return None;
        }
        // Frames for the device are recorded when they are delivered (after any faults).
        let Some(host) = self.cfg.host else {
            return Some(d);
        };
        let eth = EthernetFrame::new_unchecked(&d[..]);
        match eth.ethertype() {
            EtherType::Arp => {
                self.record(now, &d);
                let eth = EthernetFrame::new_unchecked(&d[..]);
                self.handle_arp(now, host, eth.payload());
                None
            }
            EtherType::Ipv4 if eth.dst_addr().0 == host.mac => Some(d),
            _ => {
                self.record(now, &d);
                self.stats.rx_not_for_us += 1;
                None
            }
        }
    }

    fn handle_arp(&mut self, now: u64, host: HostAddr, payload: &[u8]) {
        let Ok(arp) = ArpPacket::new_checked(payload).and_then(|p| ArpRepr::parse(&p)) else {
            self.stats.arp_malformed += 1;
            return;
        };
        let (sha, spa) = (arp.source_hardware_addr, arp.source_protocol_addr);
        if spa.0 != [0; 4] && spa.0 != host.ip && sha.is_unicast() && sha.0 != [0; 6] {
            self.learn(spa.0, sha.0);
        }
        match arp.operation {
            ArpOperation::Request if arp.target_protocol_addr.0 == host.ip => {
                self.stats.arp_requests_received += 1;
                let reply = ArpRepr {
                    operation: ArpOperation::Reply,
                    source_hardware_addr: EthernetAddress(host.mac),
                    source_protocol_addr: Ipv4Address(host.ip),
                    target_hardware_addr: sha,
                    target_protocol_addr: spa,
                };
                let frame = arp_frame(host.mac, sha.0, &reply);
                if self.transmit(now, &frame) {
                    self.stats.arp_replies_sent += 1;
                } else {
                    self.stats.tx_errors += 1;
                }
            }
            ArpOperation::Reply => self.stats.arp_replies_received += 1,
            _ => {}
        }
    }

    fn learn(&mut self, ip: [u8; 4], mac: [u8; 6]) {
        if self.static_neighbors.contains(&ip) {
            return;
        }
        if self.neighbors.insert(ip, mac) != Some(mac) {
            self.stats.arp_learned += 1;
        }
    }

    /// Adds a static neighbour (as `arp -s`): never replaced by what is heard.
    pub fn add_neighbor(&mut self, ip: [u8; 4], mac: [u8; 6]) {
        self.neighbors.insert(ip, mac);
        self.static_neighbors.insert(ip);
    }

    /// The MAC known for `ip`, if any.
    pub fn lookup(&self, ip: [u8; 4]) -> Option<[u8; 6]> {
        self.neighbors.get(&ip).copied()
    }

    /// The MAC of `ip` if known; otherwise broadcasts an ARP request (unless one for `ip`
    /// went out less than [`ARP_RETRY_CYCLES`] ago) and returns `None`: call again after
    /// letting the world run. Needs a host address.
    pub fn resolve(&mut self, now: u64, ip: [u8; 4]) -> Result<Option<[u8; 6]>, SimError> {
        if let Some(mac) = self.lookup(ip) {
            return Ok(Some(mac));
        }
        let host = self.cfg.host.ok_or_else(|| {
            SimError::InvalidConfig("ARP resolution needs the wire's host address".into())
        })?;
        let due = self
            .arp_asked
            .get(&ip)
            .is_none_or(|&t| now >= t.saturating_add(ARP_RETRY_CYCLES));
        if due {
            self.arp_asked.insert(ip, now);
            let request = ArpRepr {
                operation: ArpOperation::Request,
                source_hardware_addr: EthernetAddress(host.mac),
                source_protocol_addr: Ipv4Address(host.ip),
                target_hardware_addr: EthernetAddress([0; 6]),
                target_protocol_addr: Ipv4Address(ip),
            };
            let frame = arp_frame(host.mac, EthernetAddress::BROADCAST.0, &request);
            if self.transmit(now, &frame) {
                self.stats.arp_requests_sent += 1;
            } else {
                self.stats.tx_errors += 1;
            }
        }
        Ok(None)
    }

    /// Sends raw bytes to the peer as one datagram, outside the device (for tests and
    /// tools); recorded by the capture. Errors are returned, not counted.
    pub fn send_raw(&mut self, now: u64, bytes: &[u8]) -> io::Result<()> {
        if bytes.len() > MAX_DATAGRAM_LEN {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "longer than a UDP datagram",
            ));
        }
        self.record(now, bytes);
        self.socket.send_to(bytes, self.cfg.peer).map(|_| ())
    }
}

/// The wall-clock time of `cycles` core-clock cycles.
fn wall_of_cycles(cycles: u64) -> Duration {
    Duration::from_nanos(cycles.saturating_mul(NS_PER_CYCLE))
}

/// An Ethernet frame carrying `arp`, padded to [`MIN_FRAME_LEN`].
pub fn arp_frame(src: [u8; 6], dst: [u8; 6], arp: &ArpRepr) -> Frame {
    let mut frame = vec![0u8; MIN_FRAME_LEN.max(ETHERNET_HEADER_LEN + ARP_PACKET_LEN)];
    let eth = EthernetRepr {
        src_addr: EthernetAddress(src),
        dst_addr: EthernetAddress(dst),
        ethertype: EtherType::Arp,
    };
    let mut view = EthernetFrame::new_unchecked(&mut frame[..]);
    eth.emit(&mut view);
    arp.emit(&mut ArpPacket::new_unchecked(view.payload_mut()));
    frame
}

/// Asks for `want` bytes of receive buffer (0: keeps the default) and returns what the
/// kernel then reports. A refused request is not an error: the wire works with whatever
/// buffer it has, and the size obtained is reported.
fn set_recv_buffer(socket: &UdpSocket, want: usize) -> io::Result<usize> {
    let s = socket2::SockRef::from(socket);
    if want > 0 {
        // Linux caps the request at net.core.rmem_max without failing; other systems may
        // refuse a size they cannot give, which leaves the default in place.
        let _ = s.set_recv_buffer_size(want);
    }
    s.recv_buffer_size()
}

/// The socket's inode number on Linux (its `/proc/self/fd` link reads `socket:[N]`).
fn socket_inode(socket: &UdpSocket) -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let link = std::fs::read_link(format!("/proc/self/fd/{}", socket.as_raw_fd())).ok()?;
        let link = link.to_str()?;
        link.strip_prefix("socket:[")?
            .strip_suffix(']')?
            .parse()
            .ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = socket;
        None
    }
}

/// The `drops` count of the socket with inode `inode` in a `/proc/net/udp` table (header
/// line, then one line per socket: `sl local rem st tx:rx tr tm retrnsmt uid timeout
/// inode ref pointer drops`).
pub fn udp_socket_drops(table: &str, inode: u64) -> Option<u64> {
    table.lines().skip(1).find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 13 || f.get(9)?.parse::<u64>().ok()? != inode {
            return None;
        }
        f.last()?.parse().ok()
    })
}

fn receive_loop(socket: &UdpSocket, tx: &SyncSender<Vec<u8>>, shared: &Shared, max: usize) {
    // One byte more than a datagram can hold, so nothing is ever silently truncated.
    let mut buf = vec![0u8; MAX_DATAGRAM_LEN + 1];
    loop {
        if shared.stop.load(Ordering::Acquire) {
            return;
        }
        match socket.recv_from(&mut buf) {
            Ok((n, _)) => {
                if shared.stop.load(Ordering::Acquire) {
                    return;
                }
                shared.datagrams.fetch_add(1, Ordering::Relaxed);
                if n > max {
                    shared.oversized.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                match tx.try_send(buf[..n].to_vec()) {
                    Ok(()) => {}
                    Err(TrySendError::Full(_)) => {
                        shared.overflow.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(TrySendError::Disconnected(_)) => return,
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) => {}
            // ICMP errors reported on some platforms (connection refused by a peer that is
            // not up yet) and anything transient: keep listening, without spinning.
            Err(_) => std::thread::sleep(Duration::from_millis(1)),
        }
    }
}

impl Drop for UdpWire {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        // Wake the thread out of its blocking read with an empty datagram to ourselves.
        let mut me = self.local;
        if me.ip().is_unspecified() {
            me.set_ip(Ipv4Addr::LOCALHOST.into());
        }
        let _ = self.socket.send_to(&[], me);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = self.close_pcap();
    }
}

impl fmt::Debug for UdpWire {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UdpWire")
            .field("local", &self.local)
            .field("peer", &self.cfg.peer)
            .field("host", &self.cfg.host)
            .field("neighbors", &self.neighbors.len())
            .field("capturing", &self.pcap.is_some())
            .field("stats", &self.stats())
            .finish()
    }
}

/// The anchor between simulated cycles and wall-clock time (pacing rule 1).
#[derive(Debug, Clone, Copy)]
pub struct WallClock {
    start: Instant,
    cycle0: u64,
}

impl WallClock {
    /// Cycle `cycle0` happens now.
    pub fn start(cycle0: u64) -> Self {
        WallClock {
            start: Instant::now(),
            cycle0,
        }
    }

    /// The cycle of the current wall-clock time.
    pub fn cycle_now(&self) -> u64 {
        let ns = self.start.elapsed().as_nanos() / u128::from(NS_PER_CYCLE);
        self.cycle0
            .saturating_add(u64::try_from(ns).unwrap_or(u64::MAX))
    }

    /// Wall-clock time left until `cycle` happens (zero if it has).
    pub fn until(&self, cycle: u64) -> Duration {
        let due_ns = u128::from(cycle.saturating_sub(self.cycle0)) * u128::from(NS_PER_CYCLE);
        let elapsed = self.start.elapsed().as_nanos();
        let left = due_ns.saturating_sub(elapsed);
        Duration::from_nanos(u64::try_from(left).unwrap_or(u64::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pcap::{read_pcap, SharedBuffer};

    const A_MAC: [u8; 6] = [2, 0, 0, 0, 0, 0xa];
    const B_MAC: [u8; 6] = [2, 0, 0, 0, 0, 0xb];
    const A_IP: [u8; 4] = [10, 0, 0, 10];
    const B_IP: [u8; 4] = [10, 0, 0, 11];

    /// Two wires cabled to each other on ephemeral loopback ports.
    pub(crate) fn pair(a_host: Option<HostAddr>, b_host: Option<HostAddr>) -> (UdpWire, UdpWire) {
        let sa = UdpSocket::bind("127.0.0.1:0").unwrap();
        let sb = UdpSocket::bind("127.0.0.1:0").unwrap();
        let (pa, pb) = (
            sa.local_addr().unwrap().port(),
            sb.local_addr().unwrap().port(),
        );
        let mut ca = UdpWireConfig::loopback(pa, pb);
        ca.host = a_host;
        let mut cb = UdpWireConfig::loopback(pb, pa);
        cb.host = b_host;
        (
            UdpWire::from_socket(sa, ca).unwrap(),
            UdpWire::from_socket(sb, cb).unwrap(),
        )
    }

    fn host(mac: [u8; 6], ip: [u8; 4]) -> Option<HostAddr> {
        Some(HostAddr { mac, ip })
    }

    /// Receives until `n` frames arrived or 5 s passed.
    fn receive_n(w: &mut UdpWire, n: usize) -> Vec<Frame> {
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut got = Vec::new();
        while got.len() < n && Instant::now() < deadline {
            w.wait_input(Duration::from_millis(50));
            got.extend(w.receive(0));
        }
        got
    }

    /// Lets `w` process input until `cond` holds or 5 s passed.
    fn pump_until(w: &mut UdpWire, mut cond: impl FnMut(&UdpWire) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while !cond(w) && Instant::now() < deadline {
            w.wait_input(Duration::from_millis(50));
            w.receive(0);
        }
        assert!(cond(w), "condition not met: {:?}", w.stats());
    }

    fn ipv4_frame(dst: [u8; 6], src: [u8; 6], len: usize) -> Frame {
        let mut f = vec![0x5a; len];
        f[..6].copy_from_slice(&dst);
        f[6..12].copy_from_slice(&src);
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f
    }

    #[test]
    fn frames_cross_as_datagrams_both_ways() {
        let (mut a, mut b) = pair(None, None);
        let frames: Vec<Frame> = (0..5).map(|i| vec![i as u8; 60 + 1000 * i]).collect();
        for f in &frames {
            a.send(0, f);
        }
        assert_eq!(receive_n(&mut b, 5), frames);
        b.send(0, &frames[4]);
        assert_eq!(receive_n(&mut a, 1), vec![frames[4].clone()]);
        assert_eq!(a.stats().tx_frames, 5);
        assert_eq!(b.stats().rx_frames, 5);
        assert_eq!(
            b.stats().rx_bytes,
            frames.iter().map(|f| f.len() as u64).sum::<u64>()
        );
        assert_eq!(a.peer_addr(), b.local_addr());
    }

    #[test]
    fn garbage_is_counted_and_dropped_never_delivered() {
        let (mut a, mut b) = pair(None, host(B_MAC, B_IP));
        a.send_raw(0, &[]).unwrap();
        a.send_raw(0, b"abc").unwrap();
        a.send_raw(0, &vec![0xff; DEFAULT_MAX_FRAME_LEN + 1])
            .unwrap();
        a.send_raw(0, &vec![0xee; MAX_DATAGRAM_LEN]).unwrap();
        // Well-sized but not for us: another MAC, IPv6, a broadcast IPv4 frame.
        a.send_raw(0, &ipv4_frame([2, 9, 9, 9, 9, 9], A_MAC, 100))
            .unwrap();
        let mut v6 = ipv4_frame(B_MAC, A_MAC, 100);
        v6[12..14].copy_from_slice(&[0x86, 0xdd]);
        a.send_raw(0, &v6).unwrap();
        a.send_raw(0, &ipv4_frame([0xff; 6], A_MAC, 100)).unwrap();
        // A truncated ARP frame and one for another protocol.
        let mut arp = ipv4_frame([0xff; 6], A_MAC, 20);
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        a.send_raw(0, &arp).unwrap();
        // Then a good one, which must still arrive.
        let good = ipv4_frame(B_MAC, A_MAC, 300);
        a.send(0, &good);
        assert_eq!(receive_n(&mut b, 1), vec![good]);
        pump_until(&mut b, |b| b.stats().rx_datagrams == 9);
        let s = b.stats();
        assert_eq!((s.rx_runt, s.rx_oversized), (2, 2), "{s}");
        assert_eq!(s.garbage(), 4);
        assert_eq!(s.rx_not_for_us, 3, "{s}");
        assert_eq!(s.arp_malformed, 1, "{s}");
        assert_eq!(s.rx_frames, 1);
    }

    #[test]
    fn arp_requests_are_answered_and_both_sides_learn() {
        let (mut a, mut b) = pair(host(A_MAC, A_IP), host(B_MAC, B_IP));
        assert_eq!(a.resolve(0, B_IP).unwrap(), None);
        // The request is not repeated before the retry interval.
        assert_eq!(a.resolve(1, B_IP).unwrap(), None);
        assert_eq!(a.stats().arp_requests_sent, 1);
        // b answers and learns a's address from the request.
        pump_until(&mut b, |b| b.stats().arp_replies_sent == 1);
        assert_eq!(b.lookup(A_IP), Some(A_MAC));
        pump_until(&mut a, |a| a.lookup(B_IP).is_some());
        assert_eq!(a.resolve(2, B_IP).unwrap(), Some(B_MAC));
        let (sa, sb) = (a.stats(), b.stats());
        assert_eq!(
            (sa.arp_replies_received, sa.arp_learned, sb.arp_learned),
            (1, 1, 1)
        );
        assert_eq!(sb.arp_requests_received, 1);
        // A retry goes out after the interval.
        a.resolve(ARP_RETRY_CYCLES + 1, [10, 0, 0, 99]).unwrap();
        a.resolve(ARP_RETRY_CYCLES + 2, [10, 0, 0, 99]).unwrap();
        a.resolve(2 * ARP_RETRY_CYCLES + 1, [10, 0, 0, 99]).unwrap();
        assert_eq!(a.stats().arp_requests_sent, 3);
    }

    #[test]
    fn static_neighbors_are_not_overwritten_and_resolve_needs_a_host() {
        let (mut a, mut b) = pair(host(A_MAC, A_IP), None);
        a.add_neighbor(B_IP, [2, 1, 1, 1, 1, 1]);
        // b (no host) sends a reply claiming B_IP is at B_MAC.
        let reply = ArpRepr {
            operation: ArpOperation::Reply,
            source_hardware_addr: EthernetAddress(B_MAC),
            source_protocol_addr: Ipv4Address(B_IP),
            target_hardware_addr: EthernetAddress(A_MAC),
            target_protocol_addr: Ipv4Address(A_IP),
        };
        b.send(0, &arp_frame(B_MAC, A_MAC, &reply));
        pump_until(&mut a, |a| a.stats().arp_replies_received == 1);
        assert_eq!(a.lookup(B_IP), Some([2, 1, 1, 1, 1, 1]));
        assert!(b.resolve(0, A_IP).is_err());
    }

    #[test]
    fn arp_frames_are_padded_and_parse_back() {
        let req = ArpRepr {
            operation: ArpOperation::Request,
            source_hardware_addr: EthernetAddress(A_MAC),
            source_protocol_addr: Ipv4Address(A_IP),
            target_hardware_addr: EthernetAddress([0; 6]),
            target_protocol_addr: Ipv4Address(B_IP),
        };
        let f = arp_frame(A_MAC, [0xff; 6], &req);
        assert_eq!(f.len(), MIN_FRAME_LEN);
        let eth = EthernetFrame::new_checked(&f[..]).unwrap();
        assert_eq!(eth.ethertype(), EtherType::Arp);
        let p = ArpPacket::new_checked(eth.payload()).unwrap();
        assert_eq!(ArpRepr::parse(&p).unwrap(), req);
    }

    #[test]
    fn capture_holds_both_directions() {
        let (mut a, mut b) = pair(host(A_MAC, A_IP), host(B_MAC, B_IP));
        let cap = SharedBuffer::new();
        b.set_pcap(cap.clone()).unwrap();
        a.send(0, &ipv4_frame(B_MAC, A_MAC, 80));
        assert_eq!(receive_n(&mut b, 1).len(), 1);
        b.send(7, &ipv4_frame(A_MAC, B_MAC, 90));
        b.close_pcap().unwrap();
        let got = read_pcap(&cap.contents()[..]).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].1, ipv4_frame(B_MAC, A_MAC, 80));
        assert_eq!(got[1], (7, ipv4_frame(A_MAC, B_MAC, 90)));
    }

    /// Sends `n` frames numbered 0.. from `a` (in chunks, waiting for each to arrive so no
    /// socket buffer overflows) and returns the numbers `b` received, in order.
    fn numbered_through(a: &mut UdpWire, b: &mut UdpWire, n: u32) -> Vec<u32> {
        let mut got = Vec::new();
        for chunk in (0..n).collect::<Vec<_>>().chunks(50) {
            for &i in chunk {
                let mut f = ipv4_frame(B_MAC, A_MAC, 64);
                f[14..18].copy_from_slice(&i.to_be_bytes());
                a.send(0, &f);
            }
            let s = a.stats();
            let expect = (s.tx_frames - s.fault_tx_dropped) as usize;
            let deadline = Instant::now() + Duration::from_secs(5);
            while b.stats().rx_datagrams < expect as u64 && Instant::now() < deadline {
                a.has_input(); // sends held-back frames that are due
                b.wait_input(Duration::from_millis(20));
                got.extend(b.receive(0));
            }
        }
        // Held-back frames: wait for their release.
        let deadline = Instant::now() + Duration::from_millis(200);
        while Instant::now() < deadline {
            a.has_input();
            b.wait_input(Duration::from_millis(10));
            got.extend(b.receive(0));
        }
        assert_eq!(b.stats().rx_queue_overflow, 0);
        got.iter()
            .map(|f| u32::from_be_bytes(f[14..18].try_into().unwrap()))
            .collect()
    }

    #[test]
    fn injected_loss_drops_about_that_fraction_the_same_way_for_a_seed() {
        let loss = |seed: u64, tx: bool| {
            let (mut a, mut b) = pair(host(A_MAC, A_IP), host(B_MAC, B_IP));
            let cfg = FaultConfig {
                loss: 0.1,
                seed,
                ..FaultConfig::default()
            };
            if tx {
                a.set_faults(cfg).unwrap();
            } else {
                b.set_faults(cfg).unwrap();
            }
            let got = numbered_through(&mut a, &mut b, 2000);
            let (sa, sb) = (a.stats(), b.stats());
            let dropped = if tx {
                sa.fault_tx_dropped
            } else {
                sb.fault_rx_dropped
            };
            assert_eq!(got.len() as u64, 2000 - dropped, "{sa} / {sb}");
            // 10 % of 2000 = 200, standard deviation 13.4: 4.5 sigma either way.
            assert!((140..=260).contains(&dropped), "dropped {dropped}");
            assert!(got.windows(2).all(|w| w[0] < w[1]), "in order, no copies");
            got
        };
        for tx in [true, false] {
            let first = loss(42, tx);
            assert_eq!(loss(42, tx), first, "same seed, same losses");
            assert_ne!(loss(43, tx), first, "another seed, other losses");
        }
    }

    #[test]
    fn injected_duplicates_and_reordering_deliver_every_frame() {
        let (mut a, mut b) = pair(host(A_MAC, A_IP), host(B_MAC, B_IP));
        let cfg = FaultConfig {
            duplicate: 0.05,
            reorder: 0.05,
            reorder_delay_cycles: 250_000, // 1 ms
            seed: 9,
            ..FaultConfig::default()
        };
        a.set_faults(cfg.clone()).unwrap();
        b.set_faults(cfg).unwrap();
        let got = numbered_through(&mut a, &mut b, 1000);
        let (sa, sb) = (a.stats(), b.stats());
        let dups = (sa.fault_duplicated + sb.fault_duplicated) as usize;
        assert_eq!(got.len(), 1000 + dups, "{sa} / {sb}");
        let mut sorted = got.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted, (0..1000).collect::<Vec<_>>());
        assert!(
            sa.fault_reordered > 20 && sb.fault_reordered > 20,
            "{sa} / {sb}"
        );
        assert!(dups > 40);
        assert!(got.windows(2).any(|w| w[0] > w[1]), "some frames overtaken");
        assert!(FaultConfig {
            loss: 2.0,
            ..FaultConfig::default()
        }
        .validate()
        .and_then(|()| a.set_faults(FaultConfig::default()))
        .is_err());
    }

    #[test]
    fn bad_configuration_is_refused() {
        let mut c = UdpWireConfig::loopback(0, 9);
        c.max_frame_len = 10;
        assert!(UdpWire::bind(c).is_err());
        let mut c = UdpWireConfig::loopback(0, 9);
        c.rx_queue_limit = 0;
        assert!(UdpWire::bind(c).is_err());
        // A port already taken.
        let taken = UdpSocket::bind("127.0.0.1:0").unwrap();
        let port = taken.local_addr().unwrap().port();
        let e = UdpWire::bind(UdpWireConfig::loopback(port, 9)).unwrap_err();
        assert!(e.to_string().contains("cannot bind UDP"), "{e}");
    }

    /// The socket's receive buffer: what the kernel granted is reported, a request larger
    /// than the default gets at least the default, and 0 keeps the default.
    #[test]
    fn socket_receive_buffer_is_asked_for_and_reported() {
        let plain = UdpSocket::bind("127.0.0.1:0").unwrap();
        let default = socket2::SockRef::from(&plain).recv_buffer_size().unwrap() as u64;
        assert!(default > 0);

        let mut c = UdpWireConfig::loopback(0, 9);
        c.socket_recv_buffer = 0;
        let kept = UdpWire::bind(c).unwrap();
        assert_eq!(kept.stats().rx_socket_buffer, default);

        let asked = UdpWire::bind(UdpWireConfig::loopback(0, 9)).unwrap();
        let got = asked.stats().rx_socket_buffer;
        assert!(got >= default, "{got} < default {default}");
        // What the kernel reports for the socket itself, not what was asked.
        let reported = socket2::SockRef::from(&asked.socket)
            .recv_buffer_size()
            .unwrap() as u64;
        assert_eq!(got, reported);
        #[cfg(target_os = "linux")]
        {
            // Linux grants min(asked, net.core.rmem_max), doubled for its bookkeeping.
            if let Ok(max) = std::fs::read_to_string("/proc/sys/net/core/rmem_max") {
                let max: u64 = max.trim().parse().unwrap();
                let want = (DEFAULT_SOCKET_RECV_BUFFER as u64).min(max);
                assert!(
                    got >= want.max(default),
                    "{got} < min(asked, rmem_max) {want}"
                );
            }
        }
        assert!(asked
            .stats()
            .to_string()
            .contains(&format!("socket receive buffer {got} B")));
    }

    /// The socket buffer's drops are read from the kernel's table for our socket's inode;
    /// on Linux a fresh wire has a known count of 0.
    #[test]
    fn socket_drops_are_read_for_our_socket() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops\n\
             \x20 10: 0100007F:A1B2 0100007F:A1B3 01 00000000:00000000 00:00000000 00000000  1000        0 4242 2 0000000000000000 17\n\
             \x20 11: 0100007F:A1B4 00000000:0000 07 00000000:00000000 00:00000000 00000000  1000        0 4343 2 0000000000000000 0\n";
        assert_eq!(udp_socket_drops(table, 4242), Some(17));
        assert_eq!(udp_socket_drops(table, 4343), Some(0));
        assert_eq!(udp_socket_drops(table, 99), None);
        assert_eq!(udp_socket_drops("header only\n", 4242), None);
        let w = UdpWire::bind(UdpWireConfig::loopback(0, 9)).unwrap();
        if cfg!(target_os = "linux") && Path::new("/proc/net/udp").exists() {
            assert_eq!(w.stats().rx_socket_drops, Some(0));
            // A socket nobody reads, with the smallest buffer: the kernel drops what does
            // not fit, and the count read for its inode says so.
            let sink = UdpSocket::bind("127.0.0.1:0").unwrap();
            socket2::SockRef::from(&sink)
                .set_recv_buffer_size(1)
                .unwrap();
            let src = UdpSocket::bind("127.0.0.1:0").unwrap();
            for _ in 0..64 {
                src.send_to(&[0u8; 1000], sink.local_addr().unwrap())
                    .unwrap();
            }
            let inode = socket_inode(&sink).unwrap();
            let table = std::fs::read_to_string("/proc/net/udp").unwrap();
            let drops = udp_socket_drops(&table, inode).unwrap();
            assert!((1..64).contains(&drops), "{drops} drops of 64");
        }
    }

    /// Echoes every frame; fires a timer at a set cycle.
    #[derive(Default)]
    struct Echo {
        timer: Option<u64>,
        fired_at: Option<u64>,
        received: Vec<(u64, Frame)>,
    }

    impl crate::Device for Echo {
        fn bar_read(&mut self, _: u32) -> u32 {
            0
        }
        fn bar_write(&mut self, _: u32, _: u32) {}
        fn tick(&mut self, now: u64, io: &mut crate::DeviceIo<'_>) {
            while let Some(f) = io.rx.pop_front() {
                io.tx.push(f.clone());
                self.received.push((now, f));
            }
            if self.timer.is_some_and(|t| t <= now) {
                self.timer = None;
                self.fired_at = Some(now);
            }
        }
        fn next_event(&self, _: u64) -> Option<u64> {
            self.timer
        }
    }

    fn echo(w: &crate::World, n: crate::NodeId) -> &Echo {
        w.device_as::<Echo>(n).unwrap()
    }

    /// A world with one echo node on a UDP wire, and the raw socket at the other end.
    fn world_with_peer(timer: Option<u64>) -> (crate::World, crate::NodeId, UdpSocket) {
        let mine = UdpSocket::bind("127.0.0.1:0").unwrap();
        let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
        let cfg = UdpWireConfig::loopback(
            mine.local_addr().unwrap().port(),
            peer.local_addr().unwrap().port(),
        );
        let mut w = crate::World::new(crate::WorldConfig::default()).unwrap();
        let n = w.add_node(Echo {
            timer,
            ..Echo::default()
        });
        assert!(!w.is_paced());
        w.attach_udp(n, UdpWire::from_socket(mine, cfg).unwrap())
            .unwrap();
        assert!(w.is_paced());
        (w, n, peer)
    }

    #[test]
    fn a_paced_world_does_not_run_ahead_of_wall_clock() {
        // A timer 20 ms ahead: an unpaced world would reach it in a few executed cycles
        // and no time; a paced one waits 20 ms of wall time for it.
        let t = 5_000_000;
        let (mut w, n, _peer) = world_with_peer(Some(t));
        let start = Instant::now();
        let at = w
            .run_until(|w| echo(w, n).fired_at.is_some(), 10 * t)
            .unwrap();
        let took = start.elapsed();
        assert_eq!(echo(&w, n).fired_at, Some(t));
        assert_eq!(at, t + 1);
        assert!(took >= Duration::from_millis(19), "took {took:?}");
        assert!(took < Duration::from_secs(30), "took {took:?}");
        assert!(w.steps() < 100, "executed {} cycles", w.steps());
        // advance() is paced too: after 2.5 M more cycles (10 ms) the world is still not
        // ahead of the wall clock. (A world that lags, on a loaded machine, catches up at
        // once, so only the total since the start is a sound bound.)
        w.advance(2_500_000);
        assert!(
            start.elapsed() >= Duration::from_millis(29),
            "took {:?}",
            start.elapsed()
        );
    }

    #[test]
    fn a_datagram_ends_a_paced_wait_early_and_is_echoed() {
        let (mut w, n, peer) = world_with_peer(None);
        let to = w.udp_wire(n).unwrap().local_addr();
        let sender = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            peer.send_to(&ipv4_frame(A_MAC, B_MAC, 64), to).unwrap();
            peer.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut buf = [0u8; 2048];
            let (len, _) = peer.recv_from(&mut buf).unwrap();
            buf[..len].to_vec()
        });
        let start = Instant::now();
        // Up to 4 s of simulated time: the frame must end the wait long before.
        let at = w
            .run_until(|w| !echo(w, n).received.is_empty(), 1_000_000_000)
            .unwrap();
        let took = start.elapsed();
        assert!(took >= Duration::from_millis(25), "took {took:?}");
        assert!(took < Duration::from_secs(2), "took {took:?}");
        // Delivered at the cycle of its arrival: about 30 ms = 7.5 M cycles.
        assert!((7_000_000..500_000_000).contains(&at), "at cycle {at}");
        assert_eq!(sender.join().unwrap(), ipv4_frame(A_MAC, B_MAC, 64));
        let s = w.udp_wire(n).unwrap().stats();
        assert_eq!((s.rx_frames, s.tx_frames), (1, 1));
        assert_eq!(w.node_stats(n).frames_received, 1);
    }

    #[test]
    fn a_node_has_one_port() {
        let (mut w, n, _peer) = world_with_peer(None);
        let other = w.add_node(Echo::default());
        let (x, _y) = pair(None, None);
        assert!(matches!(
            w.attach_udp(n, x),
            Err(SimError::AlreadyConnected(m)) if m == n
        ));
        assert!(matches!(
            w.connect(
                n,
                other,
                crate::LinkConfig::default(),
                crate::LinkConfig::default()
            ),
            Err(SimError::AlreadyConnected(_))
        ));
        assert!(w.udp_wire(other).is_none());
        assert!(w.udp_wire_mut(n).is_some());
    }

    #[test]
    fn wall_clock_maps_cycles_to_time() {
        let c = WallClock::start(1000);
        assert!(c.cycle_now() >= 1000);
        assert_eq!(c.until(0), Duration::ZERO);
        let left = c.until(1000 + 250_000_000);
        assert!(left <= Duration::from_secs(1) && left > Duration::from_millis(900));
        std::thread::sleep(Duration::from_millis(2));
        assert!(c.cycle_now() >= 1000 + 500_000);
    }
}
