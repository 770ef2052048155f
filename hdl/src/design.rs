//! The build-time sizes of the engine ([`EngineConfig`]) and the catalogue of designs the
//! generator writes as the Verilog top ([`Design`]).

use crate::common::icrc::{Icrc, IcrcMode};
use crate::control::{mr_check, regfile};
use crate::dma::{dma_rd_mux, dma_wr_mux};
use crate::prelude::Block;
use crate::requester::{qp_timers, req_rx_check, segmenter, wqe_fetch};
use crate::responder::{atomic_unit, read_resp, resp_check, rsp_order};
use crate::rx::{rx_fifo::RxFifo, rx_parser::RxParser};
use crate::tx::{hdr_build::HdrBuild, tx_path::TxPath};
use crate::{completion, control, engine, requester, responder};

/// log2 of the QP contexts of the generated designs (`--qps`, 256).
pub const QP_LOG: usize = 8;
/// log2 of the MR entries of the generated designs (`--mrs`, 1024).
pub const MR_LOG: usize = 10;

/// log2 of the QP contexts of the large engine configuration (1024).
pub const LARGE_QP_LOG: usize = 10;
/// log2 of the MR entries of the large engine configuration (16384).
pub const LARGE_MR_LOG: usize = 14;

/// A build-time size of the engine top. Every benched design is generated at the default
/// size; the large one exists so that the utilization of a bigger build is measured too
/// (`rocenic-hdl --config large --synth`, docs/hdl.md "Utilization by configuration").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineConfig {
    /// 256 QPs, 1024 MRs ([`QP_LOG`], [`MR_LOG`]): what the model's `NicConfig::default`
    /// and the driver's tests assume.
    Default,
    /// 1024 QPs, 16384 MRs ([`LARGE_QP_LOG`], [`LARGE_MR_LOG`]).
    Large,
}

impl EngineConfig {
    /// Every configuration, the default first.
    pub const ALL: [EngineConfig; 2] = [EngineConfig::Default, EngineConfig::Large];

    /// The name the generator's `--config` option takes.
    pub fn name(self) -> &'static str {
        match self {
            EngineConfig::Default => "default",
            EngineConfig::Large => "large",
        }
    }

    /// The configuration of that name.
    pub fn from_name(name: &str) -> Option<EngineConfig> {
        EngineConfig::ALL.into_iter().find(|c| c.name() == name)
    }

    /// log2 of its QP contexts.
    pub fn qp_log(self) -> usize {
        match self {
            EngineConfig::Default => QP_LOG,
            EngineConfig::Large => LARGE_QP_LOG,
        }
    }

    /// log2 of its MR entries.
    pub fn mr_log(self) -> usize {
        match self {
            EngineConfig::Default => MR_LOG,
            EngineConfig::Large => LARGE_MR_LOG,
        }
    }

    /// The engine top's Verilog at this size (module `top`).
    pub fn engine_verilog(self) -> String {
        match self {
            EngineConfig::Default => Design::Engine.verilog(),
            EngineConfig::Large => with_big_stack(|| {
                generate_verilog(&mut engine::Engine::<
                    LARGE_QP_LOG,
                    LARGE_MR_LOG,
                    { LARGE_QP_LOG + 4 },
                >::new())
            }),
        }
    }
}

/// Runs `f` on a thread with a 512 MiB stack and returns its result. RustHDL keeps every
/// block by value and elaborates recursively, so the engine top (the large size above all)
/// overflows a test thread's 2 MiB stack and can overflow the main thread's 8 MiB.
fn with_big_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .stack_size(512 << 20)
            .spawn_scoped(scope, f)
            .expect("spawning the elaboration thread")
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// A design that can be written as the Verilog top (module `top`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Design {
    /// The engine top: the device ([`engine::Engine`]; control plane and RX front end so
    /// far). The default top.
    Engine,
    /// The RX ICRC checker ([`Icrc`] in [`IcrcMode::Check`]).
    IcrcCheck,
    /// The TX ICRC generator ([`Icrc`] in [`IcrcMode::Generate`]).
    IcrcGenerate,
    /// Two DMA read clients on one port ([`dma_rd_mux::DmaReadMux`]).
    DmaReadMux,
    /// Two DMA write clients on one port ([`dma_wr_mux::DmaWriteMux`]).
    DmaWriteMux,
    /// The completion engine ([`completion::Completion`]).
    Completion,
    /// Per-QP ACK/RNR timers for 256 QPs ([`qp_timers::QpTimers`]).
    QpTimers,
    /// The memory protection check over 1024 MRs ([`mr_check::MrCheck`]).
    MrCheck,
    /// The TX frame builder ([`HdrBuild`]: header build, payload merge, ICRC insertion).
    HdrBuild,
    /// The TX back end ([`TxPath`]: [`TxArbiter`](crate::tx::tx_arbiter::TxArbiter) feeding
    /// [`HdrBuild`]).
    TxPath,
    /// The RX verdict engine ([`RxParser`]): header checks and ICRC per frame.
    RxParser,
    /// The RX front end ([`RxFifo`]): verdicts, store and forward, header records and
    /// realigned payload.
    RxFifo,
    /// The control plane: register file, command engine, context tables
    /// ([`control::Control`], 256 QPs, 1024 MRs).
    Control,
    /// The BAR0 register file alone ([`regfile::RegFile`], 256 QPs, 1024 MRs).
    RegFile,
    /// The responder's per-packet decision ([`resp_check::RespCheck`]), combinational.
    RespCheck,
    /// The requester's decision on a response ([`req_rx_check::ReqRxCheck`]), a walk over
    /// the QP's outstanding ops.
    ReqRxCheck,
    /// The responder's sequencer ([`responder::Responder`], 256 QPs).
    Responder,
    /// The requester's segmentation engine ([`segmenter::Segmenter`]): send WQEs to request
    /// records and DMA-read payloads.
    Segmenter,
    /// The requester's sequencer, transmit half, with its per-QP op ring
    /// ([`requester::Requester`], 256 QPs).
    Requester,
    /// Send WQE fetch by DMA and decode ([`wqe_fetch::WqeFetch`]).
    WqeFetch,
    /// The READ responder's data path ([`read_resp::ReadResp`], 256 QPs).
    ReadResp,
    /// The responder's atomics and replay cache ([`atomic_unit::AtomicUnit`], 256 QPs).
    AtomicUnit,
    /// The responder's responses in decision order ([`rsp_order::RspOrder`]).
    RspOrder,
}

impl Design {
    /// Every design, the default first.
    pub const ALL: [Design; 23] = [
        Design::Engine,
        Design::IcrcCheck,
        Design::IcrcGenerate,
        Design::DmaReadMux,
        Design::DmaWriteMux,
        Design::Completion,
        Design::QpTimers,
        Design::MrCheck,
        Design::HdrBuild,
        Design::TxPath,
        Design::RxParser,
        Design::RxFifo,
        Design::Control,
        Design::RegFile,
        Design::RespCheck,
        Design::ReqRxCheck,
        Design::Responder,
        Design::Segmenter,
        Design::Requester,
        Design::WqeFetch,
        Design::ReadResp,
        Design::AtomicUnit,
        Design::RspOrder,
    ];

    /// The name the generator's `--top` option takes.
    pub fn name(self) -> &'static str {
        match self {
            Design::Engine => "engine",
            Design::IcrcCheck => "icrc-check",
            Design::IcrcGenerate => "icrc-generate",
            Design::DmaReadMux => "dma-rd-mux",
            Design::DmaWriteMux => "dma-wr-mux",
            Design::Completion => "completion",
            Design::QpTimers => "qp-timers",
            Design::MrCheck => "mr-check",
            Design::HdrBuild => "hdr-build",
            Design::TxPath => "tx-path",
            Design::RxParser => "rx-parser",
            Design::RxFifo => "rx-fifo",
            Design::Control => "control",
            Design::RegFile => "regfile",
            Design::RespCheck => "resp-check",
            Design::ReqRxCheck => "req-rx-check",
            Design::Responder => "responder",
            Design::Segmenter => "segmenter",
            Design::Requester => "requester",
            Design::WqeFetch => "wqe-fetch",
            Design::ReadResp => "read-resp",
            Design::AtomicUnit => "atomic-unit",
            Design::RspOrder => "rsp-order",
        }
    }

    /// The design this one is instantiated in, if any: the yosys structural check of
    /// that design covers this one (the check flattens), so the gates run it once there.
    pub fn part_of(self) -> Option<Design> {
        match self {
            Design::IcrcCheck | Design::RxParser => Some(Design::RxFifo),
            Design::IcrcGenerate => Some(Design::HdrBuild),
            Design::HdrBuild => Some(Design::TxPath),
            Design::RxFifo | Design::Control => Some(Design::Engine),
            Design::RegFile => Some(Design::Control),
            Design::RespCheck => Some(Design::Responder),
            Design::Segmenter | Design::WqeFetch | Design::ReqRxCheck => Some(Design::Requester),
            _ => None,
        }
    }

    /// The design of that name.
    pub fn from_name(name: &str) -> Option<Design> {
        Design::ALL.into_iter().find(|d| d.name() == name)
    }

    /// Its Verilog, with `top` as the top module.
    pub fn verilog(self) -> String {
        match self {
            Design::Engine => with_big_stack(|| {
                generate_verilog(&mut engine::Engine::<QP_LOG, MR_LOG, { QP_LOG + 4 }>::new())
            }),
            Design::IcrcCheck => generate_verilog(&mut Icrc::new(IcrcMode::Check)),
            Design::IcrcGenerate => generate_verilog(&mut Icrc::new(IcrcMode::Generate)),
            Design::DmaReadMux => generate_verilog(&mut dma_rd_mux::DmaReadMux::<7, 8>::default()),
            Design::DmaWriteMux => generate_verilog(&mut dma_wr_mux::DmaWriteMux::default()),
            Design::Completion => generate_verilog(&mut completion::Completion::default()),
            Design::QpTimers => generate_verilog(&mut qp_timers::QpTimers::<QP_LOG>::default()),
            Design::MrCheck => generate_verilog(&mut mr_check::MrCheck::<MR_LOG>::default()),
            Design::HdrBuild => generate_verilog(&mut HdrBuild::new()),
            Design::TxPath => generate_verilog(&mut TxPath::new()),
            Design::RxParser => generate_verilog(&mut RxParser::new()),
            Design::RxFifo => generate_verilog(&mut RxFifo::new()),
            Design::Control => generate_verilog(&mut control::Control::<QP_LOG, MR_LOG>::new()),
            Design::RegFile => generate_verilog(&mut regfile::RegFile::new(
                regfile::CtrlParams::new(QP_LOG, MR_LOG),
            )),
            Design::RespCheck => generate_verilog(&mut resp_check::RespCheck::default()),
            Design::ReqRxCheck => generate_verilog(&mut req_rx_check::ReqRxCheck::default()),
            Design::Responder => generate_verilog(&mut responder::Responder::<QP_LOG>::default()),
            Design::Segmenter => generate_verilog(&mut segmenter::Segmenter::<QP_LOG>::new()),
            Design::Requester => {
                generate_verilog(&mut requester::Requester::<QP_LOG, { QP_LOG + 4 }>::default())
            }
            Design::WqeFetch => generate_verilog(&mut wqe_fetch::WqeFetch::<QP_LOG>::default()),
            Design::ReadResp => generate_verilog(&mut read_resp::ReadResp::<QP_LOG>::default()),
            Design::AtomicUnit => {
                generate_verilog(&mut atomic_unit::AtomicUnit::<QP_LOG, { QP_LOG + 4 }>::default())
            }
            Design::RspOrder => generate_verilog(&mut rsp_order::RspOrder::new()),
        }
    }
}

/// The Verilog of a block, its module named `top` and each sub-block a module named after
/// its path (`top$rem` ...), all in one text. Panics if the block is not fully connected
/// (RustHDL's own checks: an undriven input, a logic loop, a written input).
pub fn generate_verilog<B: Block>(top: &mut B) -> String {
    top.connect_all();
    let body = crate::prelude::generate_verilog(top);
    format!(
        "// Generated by rocenic-hdl {} (RustHDL). Do not edit: change hdl/src and regenerate.\n{}",
        env!("CARGO_PKG_VERSION"),
        body
    )
}
