//! The safe model type.

use std::path::Path;
use std::sync::Arc;

use super::build::LibInner;
use super::ffi::{RawModel, TraceOpen};
use super::ports::{Port, PortInfo};
use super::{AsPort, RtlError, TraceFormat};

/// Default time advance per half clock period, in Verilator time units (picoseconds unless
/// the design sets a `timescale`): 2000 ps, so a tick is 4 ns, the 250 MHz core clock.
pub const DEFAULT_HALF_PERIOD: u64 = 2000;

/// One instance of a Verilated design (see the [module docs](super)).
///
/// Port values are right-aligned: bit 0 of a value is the port's LSB. Ports wider than 64
/// bits are arrays of `u32` words, word 0 = bits 31:0. Inputs keep their value until set
/// again; outputs reflect the last [`eval`](Self::eval) / [`tick`](Self::tick).
///
/// Dropping the model closes its trace (flushing the file) and deletes the C++ model.
pub struct VerilatedModel {
    raw: RawModel,
    lib: Arc<LibInner>,
    cycles: u64,
    half_period: u64,
    trace_open: bool,
    failed: Option<String>,
}

impl std::fmt::Debug for VerilatedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerilatedModel")
            .field("name", &self.lib.name)
            .field("cycles", &self.cycles)
            .field("time", &self.raw.time())
            .field("trace_open", &self.trace_open)
            .finish()
    }
}

impl VerilatedModel {
    pub(crate) fn new(lib: Arc<LibInner>) -> Result<Self, RtlError> {
        Ok(VerilatedModel {
            raw: RawModel::new(&lib.shim)?,
            lib,
            cycles: 0,
            half_period: DEFAULT_HALF_PERIOD,
            trace_open: false,
            failed: None,
        })
    }

    fn info(&self, index: usize) -> &PortInfo {
        &self.lib.ports.ports[index]
    }

    fn resolve(&self, port: &(impl AsPort + ?Sized)) -> Result<usize, RtlError> {
        port.resolve(self.lib.id, &self.lib.ports)
    }

    fn writable(&self, port: &(impl AsPort + ?Sized)) -> Result<usize, RtlError> {
        let i = self.resolve(port)?;
        let p = self.info(i);
        if !p.dir.is_writable() {
            return Err(RtlError::NotWritable(p.name.clone()));
        }
        Ok(i)
    }

    fn check_failed(&self) -> Result<(), RtlError> {
        match &self.failed {
            Some(m) => Err(RtlError::Fatal(format!("(earlier) {m}"))),
            None => Ok(()),
        }
    }

    /// The model's name.
    pub fn name(&self) -> &str {
        &self.lib.name
    }

    /// The top-level ports.
    pub fn ports(&self) -> &[PortInfo] {
        &self.lib.ports.ports
    }

    /// A port handle by name (skips the name lookup in hot loops).
    pub fn port(&self, name: &str) -> Result<Port, RtlError> {
        let index = self.resolve(name)?;
        Ok(Port {
            lib_id: self.lib.id,
            index: index as u32,
        })
    }

    /// The description of a port.
    pub fn port_info(&self, port: impl AsPort) -> Result<&PortInfo, RtlError> {
        let i = self.resolve(&port)?;
        Ok(self.info(i))
    }

    /// Sets an input (or inout) to `value` (zero-extended for ports wider than 64 bits).
    /// Takes effect at the next [`eval`](Self::eval) / [`tick`](Self::tick).
    pub fn set(&mut self, port: impl AsPort, value: u64) -> Result<(), RtlError> {
        let i = self.writable(&port)?;
        let p = self.info(i);
        if p.width < 64 && value >> p.width != 0 {
            return Err(RtlError::ValueTooWide {
                port: p.name.clone(),
                width: p.width,
            });
        }
        self.raw.set64(i as u32, value);
        Ok(())
    }

    /// Reads a port of at most 64 bits (inputs read back their last value).
    pub fn get(&self, port: impl AsPort) -> Result<u64, RtlError> {
        let i = self.resolve(&port)?;
        let p = self.info(i);
        if p.width > 64 {
            return Err(RtlError::TooWide {
                port: p.name.clone(),
                width: p.width,
            });
        }
        Ok(self.raw.get64(i as u32))
    }

    /// Sets an input of any width from `u32` words, word 0 = bits 31:0. Fewer words than the
    /// port has are zero-extended; more words, or bits set above the width, are an error.
    pub fn set_wide(&mut self, port: impl AsPort, words: &[u32]) -> Result<(), RtlError> {
        let i = self.writable(&port)?;
        let p = self.info(i);
        let n = p.words();
        let fits = words.iter().enumerate().all(|(k, &w)| {
            if k >= n {
                w == 0
            } else if k == n - 1 && !p.width.is_multiple_of(32) {
                w >> (p.width % 32) == 0
            } else {
                true
            }
        });
        if !fits {
            return Err(RtlError::ValueTooWide {
                port: p.name.clone(),
                width: p.width,
            });
        }
        self.raw.set_words(i as u32, &words[..words.len().min(n)]);
        Ok(())
    }

    /// Reads a port of any width as `u32` words (`ceil(width / 32)` of them).
    pub fn get_wide(&self, port: impl AsPort) -> Result<Vec<u32>, RtlError> {
        let i = self.resolve(&port)?;
        let mut out = vec![0u32; self.info(i).words()];
        self.raw.get_words(i as u32, &mut out);
        Ok(out)
    }

    /// Reads a port of any width into `out` without allocating; words beyond the port's
    /// width are set to 0, words beyond `out` are not read.
    pub fn get_wide_into(&self, port: impl AsPort, out: &mut [u32]) -> Result<(), RtlError> {
        let i = self.resolve(&port)?;
        self.raw.get_words(i as u32, out);
        Ok(())
    }

    /// Evaluates the model (settles logic after input changes; does not advance time).
    pub fn eval(&mut self) -> Result<(), RtlError> {
        self.check_failed()?;
        self.raw.eval().map_err(|m| {
            self.failed = Some(m.clone());
            RtlError::Fatal(m)
        })
    }

    /// One clock cycle on `clk`: clock low, eval, trace sample, clock high, eval, trace
    /// sample, each half period advancing time by [`half_period`](Self::set_half_period).
    /// Set inputs before calling; outputs afterwards show the state after the rising edge.
    pub fn tick(&mut self, clk: impl AsPort) -> Result<(), RtlError> {
        self.ticks(clk, 1)
    }

    /// `cycles` clock cycles as by [`tick`](Self::tick), in one call into C++.
    pub fn ticks(&mut self, clk: impl AsPort, cycles: u64) -> Result<(), RtlError> {
        self.check_failed()?;
        let i = self.writable(&clk)?;
        let r = self.raw.tick(i as u32, cycles, self.half_period);
        match r {
            Ok(()) => {
                self.cycles += cycles;
                Ok(())
            }
            Err(m) => {
                self.failed = Some(m.clone());
                Err(RtlError::Fatal(m))
            }
        }
    }

    /// Clock cycles run by [`tick`](Self::tick)/[`ticks`](Self::ticks) so far.
    pub fn cycles(&self) -> u64 {
        self.cycles
    }

    /// Simulation time (Verilator time units; advanced by `tick` and
    /// [`set_time`](Self::set_time)).
    pub fn time(&self) -> u64 {
        self.raw.time()
    }

    /// Sets the simulation time (for hand-written clocking with [`eval`](Self::eval) and
    /// [`dump_trace`](Self::dump_trace)).
    pub fn set_time(&mut self, t: u64) {
        self.raw.set_time(t);
    }

    /// Time advance per half clock period used by `tick` (default [`DEFAULT_HALF_PERIOD`]).
    pub fn set_half_period(&mut self, units: u64) {
        self.half_period = units.max(1);
    }

    /// Takes what the design printed (`$display`, `$write`, assertion messages) since the
    /// last call; the buffer keeps at most the last 1 MiB.
    pub fn take_output(&mut self) -> String {
        self.raw.take_output()
    }

    /// Whether the design's printing also goes to stdout (default: yes, as in any
    /// Verilator simulation). It is kept for [`take_output`](Self::take_output) either way.
    pub fn set_echo(&mut self, on: bool) {
        self.raw.set_echo(on);
    }

    /// Whether the design executed `$finish`.
    pub fn finished(&self) -> bool {
        self.raw.got_finish()
    }

    /// Starts writing waveforms to `path`, in the format the model was built with
    /// ([`ModelBuilder::trace`](super::ModelBuilder::trace)); a `.vcd`/`.fst` extension that
    /// disagrees with it is an error. `tick` samples at both clock edges; after a manual
    /// [`eval`](Self::eval), call [`dump_trace`](Self::dump_trace).
    pub fn trace_to(&mut self, path: impl AsRef<Path>) -> Result<(), RtlError> {
        let path = path.as_ref();
        let Some(format) = self.lib.trace else {
            return Err(RtlError::TraceNotEnabled(self.lib.name.clone()));
        };
        if let Some(asked) = TraceFormat::from_path(path) {
            if asked != format {
                return Err(RtlError::Trace(format!(
                    "{} asks for {asked:?} but model `{}` was built with {format:?} tracing",
                    path.display(),
                    self.lib.name
                )));
            }
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| RtlError::Io {
                what: "creating directory",
                path: dir.to_path_buf(),
                source,
            })?;
        }
        match self.raw.trace_open(path) {
            TraceOpen::Opened => {
                self.trace_open = true;
                Ok(())
            }
            TraceOpen::NotCompiledIn => Err(RtlError::TraceNotEnabled(self.lib.name.clone())),
            TraceOpen::AlreadyOpen => Err(RtlError::TraceAlreadyOpen),
            TraceOpen::Failed(m) => Err(RtlError::Trace(m)),
        }
    }

    /// Whether a trace file is open.
    pub fn is_tracing(&self) -> bool {
        self.trace_open
    }

    /// Writes one trace sample at the current time (no-op without an open trace).
    pub fn dump_trace(&mut self) {
        self.raw.trace_dump();
    }

    /// Flushes the trace file (no-op without an open trace).
    pub fn flush_trace(&mut self) {
        self.raw.trace_flush();
    }

    /// Closes the trace file (also done on drop); a new one may be opened afterwards.
    pub fn close_trace(&mut self) {
        self.raw.trace_close();
        self.trace_open = false;
    }
}
