//! The per-process state behind the exported functions: one [`Device`] per open context,
//! holding the driver's [`Context`], its simulated world and the C objects handed out
//! (keyed by their address). No `unsafe` here: `ffi` turns C pointers into keys and back.
#![deny(unsafe_code)]

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;
use std::time::Instant;

use rocenic_driver::backend::model::ModelBackend;
use rocenic_driver::verbs::{Buffer, Context, Cq, Mr, Pd, Qp, Wc};
use rocenic_driver::Error;
use rocenic_model::{Nic, NicConfig};
use rocenic_sim::{NodeId, UdpWire, UdpWireConfig, World, WorldConfig, NS_PER_CYCLE};

use crate::config::{BackendKind, Config, Wire};

/// The errno rdma-core's providers give for a driver error; with `ROCENIC_DEBUG` set
/// the error is also printed on standard error.
pub(crate) fn errno_of(e: &Error) -> i32 {
    if std::env::var_os("ROCENIC_DEBUG").is_some() {
        eprintln!("rocenic: {e}");
    }
    match e {
        Error::InvalidArgument(_)
        | Error::UnknownHandle { .. }
        | Error::OutOfBounds { .. }
        | Error::TooManySge { .. }
        | Error::InlineTooLong { .. }
        | Error::BadQpState { .. }
        | Error::BadWr(_)
        | Error::Cmd { .. } => libc::EINVAL,
        Error::SqFull { .. }
        | Error::RqFull { .. }
        | Error::DmaAlloc { .. }
        | Error::Exhausted { .. } => libc::ENOMEM,
        Error::InUse { .. } => libc::EBUSY,
        Error::CmdTimeout { .. } | Error::CqTimeout { .. } | Error::CqWaitTimeout { .. } => {
            libc::ETIMEDOUT
        }
        Error::Unsupported { .. } => libc::EOPNOTSUPP,
        _ => libc::EIO,
    }
}

/// A memory region over application memory (see `ffi::reg_mr`).
pub(crate) struct MrRec {
    pub mr: Mr,
    pub buf: Buffer,
}

/// A CQ: completions taken from the device but not yet polled by the application wait
/// in `pending` (so `ibv_get_cq_event` can look without consuming).
pub(crate) struct CqRec {
    pub cq: Cq,
    pub pending: VecDeque<Wc>,
    /// `ibv_req_notify_cq` was called since the last event.
    pub armed: bool,
    /// The completion channel (its address), 0 for none.
    pub channel: usize,
}

/// A QP and the objects it was created over.
pub(crate) struct QpRec {
    pub qp: Qp,
    pub send_cq: usize,
    pub recv_cq: usize,
    /// Where inline payloads are staged for the driver to copy into the WQE.
    pub staging: Option<Buffer>,
    /// `sq_sig_all`: every send request is signaled.
    pub sig_all: bool,
}

/// One open context of `rocenic0`.
pub(crate) struct Device {
    pub cfg: Config,
    pub world: Rc<RefCell<World>>,
    pub node: NodeId,
    pub ctx: Context,
    pub pds: HashMap<usize, Pd>,
    pub mrs: HashMap<usize, MrRec>,
    pub cqs: HashMap<usize, CqRec>,
    pub qps: HashMap<usize, QpRec>,
    pub channels: HashMap<usize, ()>,
}

impl Device {
    /// Builds the world (one NIC, on the configured wire) and opens the driver on it.
    pub fn open(cfg: Config) -> Result<Device, (i32, String)> {
        let BackendKind::Model = cfg.backend;
        let mut world =
            World::new(WorldConfig::default()).map_err(|e| (libc::EIO, format!("world: {e}")))?;
        let node = world.add_node(Nic::new(NicConfig::default()));
        if let Wire::Udp { local, peer } = cfg.wire {
            let wcfg = UdpWireConfig::loopback(local, peer).with_host(cfg.mac, cfg.ip);
            let wire = UdpWire::bind(wcfg).map_err(|e| {
                (
                    libc::EADDRINUSE,
                    format!("ROCENIC_WIRE=udp:{local}:{peer}: {e}"),
                )
            })?;
            world
                .attach_udp(node, wire)
                .map_err(|e| (libc::EIO, format!("attaching the wire: {e}")))?;
        }
        let world = Rc::new(RefCell::new(world));
        let backend = ModelBackend::new(world.clone(), node);
        let mut ctx = Context::open(Box::new(backend))
            .map_err(|e| (errno_of(&e), format!("opening the NIC: {e}")))?;
        ctx.set_port(cfg.mac, cfg.ip);
        Ok(Device {
            cfg,
            world,
            node,
            ctx,
            pds: HashMap::new(),
            mrs: HashMap::new(),
            cqs: HashMap::new(),
            qps: HashMap::new(),
            channels: HashMap::new(),
        })
    }

    /// Whether the port is cabled.
    pub fn wired(&self) -> bool {
        self.cfg.wire != Wire::None
    }

    /// Lets the NIC run for one poll quantum (`ROCENIC_POLL_US` of simulated time; on a
    /// wire the world is paced, so about as much wall-clock time).
    pub fn step(&mut self) {
        let cycles = (self.cfg.poll.as_nanos() as u64 / NS_PER_CYCLE).max(1);
        self.ctx.wait(cycles);
    }

    /// Moves the device's completions of CQ `key` into its pending queue.
    pub fn fill(&mut self, key: usize) -> Result<(), Error> {
        let Some(rec) = self.cqs.get_mut(&key) else {
            return Ok(());
        };
        let mut buf = [Wc::default(); 32];
        loop {
            let n = self.ctx.poll_cq(rec.cq, &mut buf)?;
            rec.pending.extend(&buf[..n]);
            if n < buf.len() {
                return Ok(());
            }
        }
    }

    /// Up to `max` completions of CQ `key`: those pending, then the device's; when there
    /// are none the NIC runs one quantum and the CQ is polled again.
    pub fn poll(&mut self, key: usize, max: usize) -> Result<Vec<Wc>, Error> {
        let take = |d: &mut Device| -> Result<Vec<Wc>, Error> {
            if d.cqs[&key].pending.len() < max {
                d.fill(key)?;
            }
            let rec = d.cqs.get_mut(&key).expect("caller checked the CQ");
            let n = rec.pending.len().min(max);
            Ok(rec.pending.drain(..n).collect())
        };
        let got = take(self)?;
        if !got.is_empty() || max == 0 {
            return Ok(got);
        }
        self.step();
        take(self)
    }

    /// Waits for an armed CQ of channel `chan` to hold a completion, for at most
    /// `ROCENIC_EVENT_TIMEOUT_MS`; disarms it and returns its key.
    pub fn wait_event(&mut self, chan: usize) -> Result<usize, i32> {
        let deadline = Instant::now() + self.cfg.event_timeout;
        loop {
            let armed: Vec<usize> = self
                .cqs
                .iter()
                .filter(|(_, c)| c.channel == chan && c.armed)
                .map(|(&k, _)| k)
                .collect();
            for k in armed {
                self.fill(k).map_err(|e| errno_of(&e))?;
                let rec = self.cqs.get_mut(&k).expect("listed above");
                if !rec.pending.is_empty() {
                    rec.armed = false;
                    return Ok(k);
                }
            }
            if Instant::now() >= deadline {
                return Err(libc::ETIMEDOUT);
            }
            self.step();
        }
    }

    /// The MAC of the peer at `ip`: `ROCENIC_PEER_MAC`, else from the wire's ARP table
    /// or by ARP while the NIC runs, for at most `ROCENIC_EVENT_TIMEOUT_MS`.
    pub fn resolve(&mut self, ip: [u8; 4]) -> Result<[u8; 6], i32> {
        if let Some(mac) = self.cfg.peer_mac {
            return Ok(mac);
        }
        let deadline = Instant::now() + self.cfg.event_timeout;
        loop {
            {
                let mut w = self.world.borrow_mut();
                let now = w.now();
                let Some(wire) = w.udp_wire_mut(self.node) else {
                    return Err(libc::ENETUNREACH);
                };
                match wire.resolve(now, ip) {
                    Ok(Some(mac)) => return Ok(mac),
                    Ok(None) => {}
                    Err(_) => return Err(libc::EINVAL),
                }
            }
            if Instant::now() >= deadline {
                return Err(libc::ETIMEDOUT);
            }
            self.step();
        }
    }
}
