//! The RTL backend: nodes of a simulated [`World`] whose device is the Verilated engine top
//! (`rocenic_hdl::Design::Engine`) behind [`RtlDevice`], driven by the same
//! [`ModelBackend`] as the behavioural model: the driver cannot tell them apart except by
//! what works.
//!
//! The engine has the control plane (register file, command engine, context tables), the
//! RX front end, the responder and the requester with their fault paths (go-back-N, the
//! ACK timer, RNR waits, the send queue's flush): `tests/tests/differential.rs` holds it,
//! through this driver, to the model with and without faults, as responder, requester and
//! at both ends. On a real wire (`rocenic pingpong/perftest --backend rtl`, see
//! `crate::cli::wire`) it meets Linux soft-RoCE (`docs/interop.md`).

use std::path::{Path, PathBuf};

use rocenic_sim::rtl::TraceFormat;
use rocenic_sim::rtl_device::{engine_lib, RtlDevice, RtlDeviceConfig};
use rocenic_sim::{NodeId, World, WorldConfig};

use crate::backend::model::{pair_world, ModelBackend, ModelPair, PairConfig};
use crate::{Error, Result};

fn rtl_err(e: impl std::fmt::Display) -> Error {
    Error::Rtl(e.to_string())
}

/// The waveform format a trace file asks for by its extension (`.vcd` or `.fst`).
pub fn trace_format(trace: &Path) -> Result<TraceFormat> {
    TraceFormat::from_path(trace).ok_or_else(|| {
        Error::InvalidArgument(format!(
            "--trace {}: the waveform format is chosen by the extension, .vcd or .fst",
            trace.display()
        ))
    })
}

/// One engine as a device, its DMA timing taken from the world's node configuration (so
/// the world's statistics book what the device times), writing a waveform of every cycle
/// to `trace` if given. `format` is the tracing compiled into the model: it must be
/// `trace`'s format when `trace` is given, and may be set without a trace (the nodes of
/// one world then share one build). The first call in a process builds (or loads from
/// the cache) the Verilated engine.
pub fn engine_device(
    world: &WorldConfig,
    format: Option<TraceFormat>,
    trace: Option<&Path>,
) -> Result<RtlDevice> {
    let lib = engine_lib(format).map_err(rtl_err)?;
    let cfg = RtlDeviceConfig {
        dma: world.node.dma,
        trace: trace.map(PathBuf::from),
        ..RtlDeviceConfig::default()
    };
    RtlDevice::new(&lib, cfg).map_err(rtl_err)
}

/// A world with one engine node, and its backend (for tests of the control path).
pub fn single_node(world: &WorldConfig, trace: Option<&Path>) -> Result<ModelBackend> {
    let format = trace.map(trace_format).transpose()?;
    let dev = engine_device(world, format, trace)?;
    let mut w = World::new(world.clone()).map_err(crate::backend::model::sim_err)?;
    let n = w.add_node(dev);
    Ok(ModelBackend::new(std::rc::Rc::new(w.into()), n))
}

/// Two engines joined by a cable (as [`crate::backend::model::two_node_world`] builds two
/// model NICs), with a waveform of node A in `trace_a` if given.
pub fn two_node_rtl_world(
    cfg: &PairConfig,
    pcap: Option<&Path>,
    trace_a: Option<&Path>,
) -> Result<ModelPair> {
    let format = trace_a.map(trace_format).transpose()?;
    let a = engine_device(&cfg.world, format, trace_a)?;
    let b = engine_device(&cfg.world, format, None)?;
    pair_world(cfg, pcap, a, b)
}

/// The [`RtlDevice`] of node `node` (its statistics and recorded errors), if it is one.
pub fn rtl_device(world: &World, node: NodeId) -> Option<&RtlDevice> {
    world.device_as::<RtlDevice>(node)
}
