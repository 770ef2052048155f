//! Verilated RTL from Rust: build a Verilog design with Verilator 5 at run time, load it, and
//! drive it cycle by cycle through a safe [`VerilatedModel`].
//!
//! ```no_run
//! use rocenic_sim::rtl::{ModelBuilder, TraceFormat};
//!
//! # fn main() -> Result<(), rocenic_sim::rtl::RtlError> {
//! let lib = ModelBuilder::from_file("out/rocenic_top.v", "top")
//!     .trace(TraceFormat::Vcd) // only if waveforms may be wanted: tracing costs speed
//!     .build()?;                // cached: a second build of the same inputs takes ms
//! let mut m = lib.instantiate()?;
//! m.trace_to("wave.vcd")?;
//! m.set("rst", 1)?;
//! m.tick("clk")?;
//! m.set("rst", 0)?;
//! m.set_wide("rx_tdata", &[0xdead_beef; 16])?; // 512 bits: word 0 = bits 31:0
//! let clk = m.port("clk")?;                   // a handle skips the name lookup
//! m.ticks(clk, 100)?;
//! let count = m.get("count")?;
//! # let _ = count; Ok(()) }
//! ```
//!
//! # How a model is built
//!
//! [`ModelBuilder::build`] needs `verilator` (5.x) and `g++` on the `PATH` at run time only;
//! building the workspace never needs them. It
//!
//! 1. hashes the inputs — the Verilog text, top module, model name, Verilator and C++ flags,
//!    tracing, `verilator --version`, `VERILATOR_ROOT`, `g++ --version` and the shim version —
//!    and looks for `<cache>/models/<name>-<hash>/`; if it exists, it is loaded at once;
//! 2. otherwise, under a lock file (so parallel tests and processes build each model once),
//!    in a temporary directory: runs `verilator --cc -O3 --x-assign fast --x-initial fast
//!    --top-module <top> --prefix V<name> [--trace|--trace-fst] -Wno-fatal`, reads the ports
//!    from the generated `V<name>.h`, generates a C++ shim (`rtl/shim.rs`), compiles the
//!    generated C++ and the shim with `g++ -O2 -fPIC` (in parallel), links them with the
//!    Verilator runtime objects into a shared library, and renames the directory into place
//!    (atomic: a reader never sees a half-built model);
//! 3. loads the library with `libloading` (`rtl/ffi.rs`, the only module with `unsafe`).
//!
//! The Verilator runtime (`verilated.cpp`, `verilated_threads.cpp`, and the VCD/FST writers
//! when tracing is asked for) is compiled once per Verilator/g++ version into
//! `<cache>/runtime-<hash>/` and linked into every model, so an RTL change only recompiles
//! the model's own C++. A precompiled header of `verilated.h` is built there too: parsing
//! it is most of the cost of a small generated file (about 1.5 s of CPU per file without,
//! 0.2 s with).
//!
//! The cache directory is `$ROCENIC_VERILATOR_CACHE` if set, else
//! `$CARGO_TARGET_DIR/rocenic-verilator`, else `<workspace>/target/rocenic-verilator`
//! ([`default_cache_dir`]); `cargo clean` empties it. Files pulled in with `` `include ``
//! are not part of the key: pass every file as a source instead.
//!
//! # Models and threads
//!
//! Every [`VerilatedModel`] owns its own `VerilatedContext`, so models run in parallel on
//! different threads; a model is `Send` (it may move between threads) but not `Sync`.
//! A Verilog `$fatal` (or `$stop`, or a Verilator runtime error) surfaces as
//! [`RtlError::Fatal`] from [`VerilatedModel::eval`]/[`tick`](VerilatedModel::tick)
//! instead of aborting the process, its message ending with the design's last printed
//! line (an assertion's text); `$finish` sets [`VerilatedModel::finished`] and never exits.
//! What the design prints (`$display`) is echoed to stdout and kept per model
//! ([`VerilatedModel::take_output`], [`VerilatedModel::set_echo`]).

mod build;
mod ffi;
mod model;
mod ports;
mod shim;

use std::path::PathBuf;

pub use build::{
    default_cache_dir, set_build_observer, BuildObserver, BuildReport, BuildStage, ModelBuilder,
    VerilatedLib,
};
pub use model::{VerilatedModel, DEFAULT_HALF_PERIOD};
pub use ports::{AsPort, Port, PortDir, PortInfo, PortTable};

/// How to install the tools the RTL simulation needs.
pub const INSTALL_HINT: &str =
    "install with `scripts/install-deps.sh rtl` (or `apt-get install verilator g++`)";

/// Waveform file format, chosen when the model is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TraceFormat {
    /// Value Change Dump (`--trace`): plain text, every viewer reads it.
    Vcd,
    /// GTKWave's Fast Signal Trace (`--trace-fst`): compressed, needs zlib (`zlib1g-dev`).
    Fst,
}

impl TraceFormat {
    /// The conventional file extension (`"vcd"` or `"fst"`).
    pub fn extension(self) -> &'static str {
        match self {
            TraceFormat::Vcd => "vcd",
            TraceFormat::Fst => "fst",
        }
    }

    /// The format a file name asks for by its extension (`.vcd` / `.fst`), if any.
    pub fn from_path(path: &std::path::Path) -> Option<TraceFormat> {
        match path.extension()?.to_str()? {
            "vcd" => Some(TraceFormat::Vcd),
            "fst" => Some(TraceFormat::Fst),
            _ => None,
        }
    }
}

/// Everything that can go wrong building or driving a Verilated model.
#[derive(Debug, thiserror::Error)]
pub enum RtlError {
    /// `verilator` or `g++` cannot be run.
    #[error("`{tool}` is needed to simulate the RTL but cannot be run ({detail}); {INSTALL_HINT}")]
    ToolMissing {
        /// The program that was looked for.
        tool: String,
        /// Why it could not be run.
        detail: String,
    },
    /// A tool ran but its answer was unusable (e.g. an unsupported Verilator version).
    #[error("`{tool}`: {detail}")]
    ToolFailed {
        /// The program.
        tool: String,
        /// What went wrong.
        detail: String,
    },
    /// Verilator rejected the design.
    #[error("verilator failed on top module `{top}`:\n{stderr}")]
    Verilate {
        /// The top module asked for.
        top: String,
        /// Verilator's diagnostics.
        stderr: String,
    },
    /// g++ failed to compile or link.
    #[error("g++ failed on {what}:\n{stderr}")]
    Compile {
        /// The file or step that failed.
        what: String,
        /// The compiler's diagnostics.
        stderr: String,
    },
    /// The model has no port of this name.
    #[error("model `{model}` has no port `{port}` (ports: {known})")]
    UnknownPort {
        /// The name asked for.
        port: String,
        /// The model.
        model: String,
        /// Its ports, comma-separated.
        known: String,
    },
    /// A [`Port`] handle of another library was used.
    #[error("port handle belongs to another model library")]
    ForeignPort,
    /// A write to an output port.
    #[error("port `{0}` is an output; only inputs and inouts can be set")]
    NotWritable(String),
    /// A `u64` read of a port wider than 64 bits.
    #[error("port `{port}` is {width} bits wide; read it with get_wide")]
    TooWide {
        /// The port.
        port: String,
        /// Its width.
        width: u32,
    },
    /// A value with bits set above the port's width.
    #[error("value does not fit the {width}-bit port `{port}`")]
    ValueTooWide {
        /// The port.
        port: String,
        /// Its width.
        width: u32,
    },
    /// A Verilator header line that looks like a port but could not be understood.
    #[error("cannot read port declaration `{line}`: {detail}")]
    PortParse {
        /// The header line.
        line: String,
        /// Why.
        detail: String,
    },
    /// The model or top-module name is not a plain identifier.
    #[error(
        "invalid {what} name `{name}`: use letters, digits and `_`, not starting with a digit"
    )]
    InvalidName {
        /// "model" or "top module".
        what: &'static str,
        /// The name.
        name: String,
    },
    /// Waveforms were asked for but the model was built without tracing.
    #[error("model `{0}` was built without tracing: use ModelBuilder::trace(TraceFormat::Vcd)")]
    TraceNotEnabled(String),
    /// `trace_to` while a trace is open.
    #[error("a trace is already open on this model")]
    TraceAlreadyOpen,
    /// The trace file could not be opened, or has the wrong extension for the built format.
    #[error("trace: {0}")]
    Trace(String),
    /// The simulation hit a fatal error (`$fatal`, `$stop`, a Verilator runtime error).
    /// The model's state is undefined afterwards: drop it.
    #[error("RTL fatal error: {0}")]
    Fatal(String),
    /// The built library could not be loaded.
    #[error("cannot load model library {path}: {detail}")]
    Load {
        /// The shared library.
        path: PathBuf,
        /// Why.
        detail: String,
    },
    /// A file-system operation failed.
    #[error("{what} {path}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// On which path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}
