//! Progress bars and spinners on stderr, and the log output that shares stderr with them.
//!
//! Progress is off until the `rocenic` binary calls [`enable`], so the commands run as a
//! library (the tests, the workspace tests) draw nothing. Once enabled, bars draw through
//! indicatif's stderr target, which hides itself when stderr is not a terminal: pipes,
//! redirected output and `--json` stay clean. Log lines ([`LogWriter`]) suspend the bars
//! while they are written, so the two never interleave on one line.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Turns progress drawing on for this process (stderr, only when it is a terminal).
pub fn enable() {
    ENABLED.store(true, Ordering::Relaxed);
}

fn multi() -> &'static MultiProgress {
    static MULTI: OnceLock<MultiProgress> = OnceLock::new();
    MULTI.get_or_init(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr()))
}

/// A bar of `len` steps, drawn as `[elapsed] ====>---- done/len message`.
pub fn bar(len: u64, prefix: &str) -> ProgressBar {
    if !ENABLED.load(Ordering::Relaxed) {
        return ProgressBar::hidden();
    }
    let style = ProgressStyle::with_template(
        "{prefix} [{elapsed_precise}] {wide_bar:.cyan/blue} {pos}/{len} {msg}",
    )
    .expect("a valid template")
    .progress_chars("=> ");
    let pb = multi().add(ProgressBar::new(len));
    pb.set_style(style);
    pb.set_prefix(prefix.to_string());
    pb
}

/// A spinner showing `msg` and the time since it started, ticking by itself.
pub fn spinner(msg: &str) -> ProgressBar {
    if !ENABLED.load(Ordering::Relaxed) {
        return ProgressBar::hidden();
    }
    let pb = multi().add(ProgressBar::new_spinner());
    pb.set_style(
        ProgressStyle::with_template("{spinner} {msg} [{elapsed}]").expect("a valid template"),
    );
    pb.set_message(msg.to_string());
    pb.enable_steady_tick(Duration::from_millis(120));
    pb
}

/// Runs `f` (the Verilated engine's first use: generating its Verilog, and on a cold cache
/// verilating and compiling it) under a spinner that names the build stage.
pub fn rtl_build<T>(f: impl FnOnce() -> T) -> T {
    use rocenic_sim::rtl::{set_build_observer, BuildStage};
    let sp = spinner("preparing the RTL engine (generating its Verilog)");
    let hook = sp.clone();
    set_build_observer(Some(Arc::new(move |model: &str, stage: BuildStage| {
        let what = match stage {
            BuildStage::Verilating => "verilating",
            BuildStage::Compiling => "compiling the C++ with g++",
            BuildStage::Built => "loading",
        };
        tracing::info!(model, ?stage, "Verilator build");
        hook.set_message(format!(
            "building the RTL engine (first run only, minutes): {what}"
        ));
    })));
    let r = f();
    set_build_observer(None);
    tracing::debug!(seconds = sp.elapsed().as_secs_f64(), "RTL engine ready");
    sp.finish_and_clear();
    r
}

/// A `tracing_subscriber` writer to stderr that hides the progress bars while a line is
/// written.
#[derive(Debug, Clone, Copy, Default)]
pub struct LogWriter;

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        multi().suspend(|| std::io::stderr().write_all(buf))?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogWriter {
    type Writer = LogWriter;
    fn make_writer(&'a self) -> LogWriter {
        LogWriter
    }
}

/// Installs the log subscriber: `RUST_LOG` (an `EnvFilter`) if set, else `warn` raised to
/// `info` by one `-v` and to `debug` by two or more (for rocenic's crates; others stay at
/// `warn`). Logs go to stderr.
pub fn init_logging(verbose: u8) {
    use tracing_subscriber::EnvFilter;
    let default = match verbose {
        0 => "warn",
        1 => "warn,rocenic_cli=info,rocenic_driver=info,rocenic_sim=info",
        _ => "warn,rocenic_cli=debug,rocenic_driver=debug,rocenic_sim=debug",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(LogWriter)
        .with_target(false)
        .try_init();
}
