//! The model backend: a node of a simulated [`World`] whose device is the behavioural
//! [`Nic`] (or any other [`Device`]: the RTL backend uses it unchanged for nodes whose
//! device is the Verilated engine, see [`crate::backend::rtl`]).
//!
//! Several backends share one world (`Rc<RefCell<World>>`), one per node. Waiting on any
//! of them advances the whole world, so every device keeps running while a driver polls;
//! this is how two contexts talk to each other in one thread.
//!
//! DMA memory is the node's simulated host memory; [`Backend::alloc_dma`] maps it
//! read+write in the node's IOMMU (the IOVA the sim chooses), so the device can reach only
//! what the driver allocated. [`Backend::adopt_dma`] moves the application's vector into
//! the node's host memory as it is (the simulated DMA then reads and writes that vector's
//! bytes) and [`Backend::release_dma`] moves it back out.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::rc::Rc;

use rocenic_model::{Nic, NicConfig};
use rocenic_sim::{AllocId, Device, LinkConfig, NodeId, TapPoint, World, WorldConfig};

use crate::backend::{Backend, DmaRegion};
use crate::{Error, Rejected, Result};

/// One node of a shared simulated world, seen as a [`Backend`].
pub struct ModelBackend {
    world: Rc<RefCell<World>>,
    node: NodeId,
    /// Our region ids -> the host's allocation ids.
    regions: BTreeMap<u64, AllocId>,
    /// The regions made by `adopt_dma` (application memory).
    adopted: BTreeSet<u64>,
    next_id: u64,
}

impl ModelBackend {
    /// The backend of node `node` of `world`.
    pub fn new(world: Rc<RefCell<World>>, node: NodeId) -> Self {
        ModelBackend {
            world,
            node,
            regions: BTreeMap::new(),
            adopted: BTreeSet::new(),
            next_id: 1,
        }
    }

    /// The world this backend lives in.
    pub fn world(&self) -> &Rc<RefCell<World>> {
        &self.world
    }

    /// The node this backend drives.
    pub fn node(&self) -> NodeId {
        self.node
    }
}

pub(crate) fn sim_err(e: rocenic_sim::SimError) -> Error {
    Error::Sim(e.to_string())
}

impl Backend for ModelBackend {
    fn bar_read(&mut self, off: u32) -> u32 {
        self.world.borrow_mut().bar_read(self.node, off)
    }

    fn bar_write(&mut self, off: u32, v: u32) {
        self.world.borrow_mut().bar_write(self.node, off, v)
    }

    fn alloc_dma(&mut self, len: usize) -> Result<DmaRegion> {
        let r = self
            .world
            .borrow_mut()
            .host_mut(self.node)
            .alloc_dma(len)
            .map_err(|e| Error::DmaAlloc {
                len,
                reason: e.to_string(),
            })?;
        let id = self.next_id;
        self.next_id += 1;
        self.regions.insert(id, r.id);
        Ok(DmaRegion {
            id,
            va: r.va,
            iova: r.iova,
            len: r.len,
        })
    }

    fn adopt_dma(&mut self, mem: Vec<u8>) -> Result<DmaRegion, Rejected<Vec<u8>>> {
        let len = mem.len();
        let r = self
            .world
            .borrow_mut()
            .host_mut(self.node)
            .adopt_dma(mem)
            .map_err(|(e, value)| Rejected {
                error: Error::DmaAlloc {
                    len,
                    reason: e.to_string(),
                },
                value,
            })?;
        let id = self.next_id;
        self.next_id += 1;
        self.regions.insert(id, r.id);
        self.adopted.insert(id);
        Ok(DmaRegion {
            id,
            va: r.va,
            iova: r.iova,
            len: r.len,
        })
    }

    fn release_dma(&mut self, id: u64) -> Result<Vec<u8>> {
        let free_err = |reason: &str| Error::DmaFree {
            id,
            reason: reason.into(),
        };
        let &alloc = self
            .regions
            .get(&id)
            .ok_or_else(|| free_err("no live region has this id"))?;
        if !self.adopted.contains(&id) {
            return Err(free_err(
                "the driver allocated this region: free it, there is no application memory to give back",
            ));
        }
        let mem = self
            .world
            .borrow_mut()
            .host_mut(self.node)
            .take_dma(alloc)
            .map_err(|e| free_err(&e.to_string()))?;
        self.regions.remove(&id);
        self.adopted.remove(&id);
        Ok(mem)
    }

    fn free_dma(&mut self, id: u64) -> Result<()> {
        self.adopted.remove(&id);
        let alloc = self.regions.remove(&id).ok_or(Error::DmaFree {
            id,
            reason: "no live region has this id".into(),
        })?;
        self.world
            .borrow_mut()
            .host_mut(self.node)
            .free_dma(alloc)
            .map_err(|e| Error::DmaFree {
                id,
                reason: e.to_string(),
            })
    }

    fn mem_write(&mut self, va: u64, data: &[u8]) -> Result<()> {
        self.world
            .borrow_mut()
            .host_mut(self.node)
            .write(va, data)
            .map_err(|e| Error::MemAccess {
                va,
                len: data.len(),
                write: true,
                reason: e.to_string(),
            })
    }

    fn mem_read(&mut self, va: u64, buf: &mut [u8]) -> Result<()> {
        let len = buf.len();
        self.world
            .borrow()
            .host(self.node)
            .read(va, buf)
            .map_err(|e| Error::MemAccess {
                va,
                len,
                write: false,
                reason: e.to_string(),
            })
    }

    fn wait(&mut self, cycles: u64) {
        self.world.borrow_mut().advance(cycles)
    }

    fn now(&self) -> u64 {
        self.world.borrow().now()
    }
}

/// Two model NICs joined by a cable: the world and a backend for each end.
pub struct ModelPair {
    /// The shared world.
    pub world: Rc<RefCell<World>>,
    /// Node A.
    pub a: ModelBackend,
    /// Node B.
    pub b: ModelBackend,
}

/// Options of [`two_node_world`].
#[derive(Debug, Clone, Default)]
pub struct PairConfig {
    /// The device configuration of both NICs.
    pub nic: NicConfig,
    /// The world (host memory, DMA timing).
    pub world: WorldConfig,
    /// The link from node A to node B.
    pub a_to_b: LinkConfig,
    /// The link from node B to node A.
    pub b_to_a: LinkConfig,
}

/// Builds a world of two [`Nic`]s (nodes A and B) joined by a cable, optionally capturing
/// every frame either node sends into a pcap file, and returns a backend for each node.
pub fn two_node_world(cfg: &PairConfig, pcap: Option<&Path>) -> Result<ModelPair> {
    pair_world(
        cfg,
        pcap,
        Nic::new(cfg.nic.clone()),
        Nic::new(cfg.nic.clone()),
    )
}

/// [`two_node_world`] with any two devices as nodes A and B (`cfg.nic` is not used): the
/// RTL backend's testbed, or a model NIC cabled to an RTL engine. [`World::device_as`]
/// finds them by their own type.
pub fn pair_world<A: Device + 'static, B: Device + 'static>(
    cfg: &PairConfig,
    pcap: Option<&Path>,
    dev_a: A,
    dev_b: B,
) -> Result<ModelPair> {
    let mut world = World::new(cfg.world.clone()).map_err(sim_err)?;
    let a = world.add_node(dev_a);
    let b = world.add_node(dev_b);
    world
        .connect(a, b, cfg.a_to_b.clone(), cfg.b_to_a.clone())
        .map_err(sim_err)?;
    if let Some(path) = pcap {
        let file = File::create(path)
            .map_err(|e| Error::Sim(format!("cannot create {}: {e}", path.display())))?;
        world
            .add_tap(TapPoint::Sent, None, BufWriter::new(file))
            .map_err(sim_err)?;
    }
    let world = Rc::new(RefCell::new(world));
    Ok(ModelPair {
        a: ModelBackend::new(world.clone(), a),
        b: ModelBackend::new(world.clone(), b),
        world,
    })
}

/// Flushes and closes the world's captures (call before reading a pcap file).
pub fn close_captures(world: &Rc<RefCell<World>>) -> Result<()> {
    world.borrow_mut().close_taps().map_err(sim_err)
}
