//! The rocenic simulation world: the hosts, DMA, wires and captures around a device.
//!
//! A device (the behavioural model, or the Verilated RTL engine of [`rtl_device`]) implements
//! [`rocenic_proto::device::Device`]; this crate supplies everything it touches:
//!
//! - [`host`]: a simulated host process, with its memory addressed by virtual address (VA)
//!   and an [`iommu`] through which the device reaches that memory by IOVA. Every DMA the
//!   IOMMU refuses is recorded, so tests can assert "no DMA outside registered memory".
//! - [`dma`]: the latency/bandwidth model of the DMA port (PCIe read round trip, posted writes).
//! - [`link`]: a unidirectional Ethernet link with serialisation delay, propagation latency
//!   and seeded faults (loss, duplication, reordering, corruption, a drop filter).
//! - [`pcap`]: pcap capture of frames with their cycle, and a reader for tests.
//! - [`world`]: [`World`], N nodes (device + host + DMA channels + rx/tx queues) joined by
//!   full-duplex cables of two links, stepped cycle by cycle, skipping idle stretches.
//!
//! Time is counted in cycles of the 250 MHz core clock ([`NS_PER_CYCLE`] = 4 ns). Everything
//! is deterministic: the same devices, configuration and seeds give the same cycles, memory
//! and frames on every machine.
//!
//! - [`rtl`]: Verilated RTL: builds Verilog with Verilator at run time (cached) and drives
//!   it through a safe [`rtl::VerilatedModel`]. A Verilated RTL device plugs into [`World`]
//!   as any other [`Device`]: [`rtl_device::RtlDevice`] adapts a Verilated engine with the
//!   top port contract (register port, DMA streams with the timing of [`dma`], MAC), whose
//!   ports are listed once in [`top_ports`].
//!
//! `unsafe` is denied everywhere except `rtl::ffi`, the FFI to the Verilated libraries.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod dma;
pub mod host;
pub mod iommu;
pub mod link;
pub mod pcap;
pub mod rtl;
pub mod rtl_device;
pub mod top_ports;
pub mod udp_wire;
pub mod world;

pub use dma::{DmaChannels, DmaConfig, DmaStats, SimDma};
pub use host::{
    AllocId, DmaFaultRecord, DmaLogEntry, DmaRegion, Host, HostConfig, HostMemory, PAGE_SIZE,
};
pub use iommu::{Iommu, Mapping, Perm};
pub use link::{DropFilter, FaultConfig, Link, LinkConfig, LinkStats};
pub use pcap::{read_pcap, read_pcap_file, PcapTap, SharedBuffer};
pub use rocenic_proto::device::{Device, DeviceIo, DmaFault, DmaPort, Frame};
pub use udp_wire::{HostAddr, UdpWire, UdpWireConfig, UdpWireStats, WallClock};
pub use world::{NodeConfig, NodeId, NodeStats, TapPoint, World, WorldConfig, THREADS_ENV};

/// Nanoseconds per core-clock cycle (250 MHz).
pub const NS_PER_CYCLE: u64 = 4;

/// Everything that can go wrong in the simulation world.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// An allocation or mapping of zero bytes was requested.
    #[error("zero-length {what} requested")]
    ZeroLength {
        /// What was being created ("allocation", "mapping").
        what: &'static str,
    },
    /// The VA or IOVA range of the host has no room left for the request.
    #[error("{space} space exhausted: cannot fit {len} bytes")]
    OutOfAddressSpace {
        /// "VA" or "IOVA".
        space: &'static str,
        /// Requested length in bytes.
        len: usize,
    },
    /// A host CPU access (by VA) or a mapping request does not lie inside one allocation.
    #[error("{len} bytes at VA {va:#x} are not inside one host allocation")]
    BadVa {
        /// First byte of the access.
        va: u64,
        /// Length of the access.
        len: usize,
    },
    /// No allocation starts at this VA (free of an address that was not allocated).
    #[error("no host allocation starts at VA {va:#x}")]
    NotAllocated {
        /// The VA passed to `free`.
        va: u64,
    },
    /// The allocation id is unknown (never allocated, or already freed).
    #[error("unknown or freed allocation {0}")]
    UnknownAllocation(AllocId),
    /// No IOMMU mapping starts at this IOVA.
    #[error("no IOMMU mapping starts at IOVA {iova:#x}")]
    NotMapped {
        /// The IOVA passed to `unmap`.
        iova: u64,
    },
    /// A DMA the IOMMU refused, surfaced through a host-side helper.
    #[error(transparent)]
    Dma(#[from] DmaFault),
    /// A configuration value is out of range.
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),
    /// `connect` was asked to join a node to itself.
    #[error("cannot connect node {0} to itself")]
    SelfConnection(world::NodeId),
    /// The node's single Ethernet port is already cabled.
    #[error("node {0} is already connected")]
    AlreadyConnected(world::NodeId),
    /// `run_until` reached its cycle limit before the condition held.
    #[error("condition not met after {max_cycles} cycles (stopped at cycle {now})")]
    Timeout {
        /// The world's cycle when it gave up.
        now: u64,
        /// The limit that was given.
        max_cycles: u64,
    },
    /// Reading or writing a pcap stream failed.
    #[error("pcap: {0}")]
    Pcap(#[from] pcap_file::PcapError),
    /// An I/O error outside the pcap encoder (opening or flushing a capture file).
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
}
