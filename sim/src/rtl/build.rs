//! Building (or finding in the cache) a Verilated model library.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::ffi::ShimLib;
use super::ports::{parse_header, Port, PortInfo, PortTable};
use super::{shim, AsPort, RtlError, TraceFormat, VerilatedModel};

/// Verilator flags every model is built with (before tracing and user flags).
const VERILATOR_FLAGS: &[&str] = &["--cc", "-O3", "--x-assign", "fast", "--x-initial", "fast"];

/// g++ flags for every object (runtime and model).
const CXX_FLAGS: &[&str] = &[
    "-O2",
    "-fPIC",
    "-std=gnu++17",
    // Only the shim's `rv_*` API is exported: each model library keeps its own copy of the
    // Verilator runtime to itself, so several models load side by side.
    "-fvisibility=hidden",
    "-faligned-new",
    "-pthread",
    "-DVM_COVERAGE=0",
    "-DVM_SC=0",
    // The shim defines vl_fatal / vl_finish (see shim.rs).
    "-DVL_USER_FATAL",
    "-DVL_USER_FINISH",
    // The shim defines the printing hook (declared in shim::HOOKS_HEADER).
    "-DVL_PRINTF=rv_vl_printf",
    // Generated code trips many harmless warnings; errors still show.
    "-w",
];

/// The optimisation level of a model's C++ file, after [`CXX_FLAGS`] (the last `-O` wins).
/// Verilator puts the code that runs once (construction, initial settling: `*__Slow.cpp`)
/// and the tracing code (`*__Trace*.cpp`, run only while a trace file is open) apart from
/// the per-cycle evaluation; those are more than half of the engine's C++ and g++ compiles
/// them 8x faster at `-O0` (measured on the engine's largest `__Slow` file, g++ 12: 83 s at
/// `-O2`, 24 s at `-O1`, 10 s at `-O0`). The per-cycle code keeps `-O2` (see
/// docs/verilator.md).
fn model_opt_level(file_name: &str) -> &'static str {
    if file_name.contains("__Slow") || file_name.contains("__Trace") {
        "-O0"
    } else {
        "-O2"
    }
}

/// Where built models and the runtime objects are cached by default:
/// `$ROCENIC_VERILATOR_CACHE`, else `$CARGO_TARGET_DIR/rocenic-verilator`, else
/// `<workspace>/target/rocenic-verilator`.
pub fn default_cache_dir() -> PathBuf {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or(Path::new(env!("CARGO_MANIFEST_DIR")))
        .to_path_buf();
    if let Some(d) = std::env::var_os("ROCENIC_VERILATOR_CACHE").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    if let Some(t) = std::env::var_os("CARGO_TARGET_DIR").filter(|d| !d.is_empty()) {
        let t = PathBuf::from(t);
        let t = if t.is_relative() {
            workspace.join(t)
        } else {
            t
        };
        return t.join("rocenic-verilator");
    }
    workspace.join("target").join("rocenic-verilator")
}

/// A step of a model build that was not found in the cache, as told to the
/// [`set_build_observer`] hook (a cached library reports nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuildStage {
    /// `verilator` is translating the Verilog to C++.
    Verilating,
    /// g++ is compiling the model's C++ (and the Verilator runtime, if not cached).
    Compiling,
    /// The library is built and in the cache.
    Built,
}

/// The hook [`set_build_observer`] installs: the model's name and the stage reached.
pub type BuildObserver = Arc<dyn Fn(&str, BuildStage) + Send + Sync>;

static OBSERVER: Mutex<Option<BuildObserver>> = Mutex::new(None);

/// Installs (or with `None` removes) a process-wide hook told when a model build that was
/// not cached starts each stage, so a program can show progress during a build of
/// minutes; the library itself prints nothing. The hook runs on the building thread.
pub fn set_build_observer(observer: Option<BuildObserver>) {
    *OBSERVER.lock().unwrap_or_else(|e| e.into_inner()) = observer;
}

fn observe(name: &str, stage: BuildStage) {
    let hook = OBSERVER.lock().unwrap_or_else(|e| e.into_inner()).clone();
    if let Some(hook) = hook {
        hook(name, stage);
    }
}

// ---------------------------------------------------------------------------------------
// Small helpers: hashing, names, file-system errors.

/// FNV-1a, 128 bits: a stable, dependency-free content hash for cache keys (not
/// adversarial input, so a non-cryptographic hash is enough).
struct KeyHasher(u128);

impl KeyHasher {
    const OFFSET: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    const PRIME: u128 = 0x0000_0000_0100_0000_0000_0000_0000_013B;

    fn new(domain: &str) -> Self {
        let mut h = KeyHasher(Self::OFFSET);
        h.field(domain.as_bytes());
        h
    }

    fn bytes(&mut self, b: &[u8]) {
        for &x in b {
            self.0 ^= u128::from(x);
            self.0 = self.0.wrapping_mul(Self::PRIME);
        }
    }

    /// A length-prefixed field, so ("ab","c") and ("a","bc") differ.
    fn field(&mut self, b: &[u8]) {
        self.bytes(&(b.len() as u64).to_le_bytes());
        self.bytes(b);
    }

    fn hex(&self) -> String {
        format!("{:032x}", self.0)
    }
}

fn is_identifier(s: &str) -> bool {
    let mut b = s.bytes();
    matches!(b.next(), Some(c) if c.is_ascii_alphabetic() || c == b'_')
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

fn io_err<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> RtlError + 'a {
    move |source| RtlError::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}

fn create_dir_all(path: &Path) -> Result<(), RtlError> {
    fs::create_dir_all(path).map_err(io_err("creating directory", path))
}

/// A unique suffix for temporary names (process id + counter).
fn unique_suffix() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// An exclusive lock on `<dir>/locks/<name>.lock`, held until dropped (flock through std's
/// `File::lock`: released by the OS even if the process dies).
struct LockGuard(fs::File);

impl LockGuard {
    fn acquire(cache: &Path, name: &str) -> Result<LockGuard, RtlError> {
        let dir = cache.join("locks");
        create_dir_all(&dir)?;
        let path = dir.join(format!("{name}.lock"));
        let f = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(io_err("opening lock file", &path))?;
        f.lock().map_err(io_err("locking", &path))?;
        Ok(LockGuard(f))
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

// ---------------------------------------------------------------------------------------
// Tools.

/// What we know about the installed verilator and g++ (queried once per process).
#[derive(Debug)]
struct Tools {
    verilator: OsString,
    cxx: OsString,
    verilator_version: String,
    verilator_root: PathBuf,
    cxx_version: String,
}

fn run_tool(tool: &OsString, args: &[&str]) -> Result<String, RtlError> {
    let name = tool.to_string_lossy().into_owned();
    let out = Command::new(tool)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| RtlError::ToolMissing {
            tool: name.clone(),
            detail: e.to_string(),
        })?;
    if !out.status.success() {
        return Err(RtlError::ToolFailed {
            tool: name,
            detail: format!(
                "`{}` failed ({}): {}",
                args.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn tools(verilator: &OsString, cxx: &OsString) -> Result<Arc<Tools>, RtlError> {
    type ToolCache = Mutex<HashMap<(OsString, OsString), Arc<Tools>>>;
    static CACHE: OnceLock<ToolCache> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let key = (verilator.clone(), cxx.clone());
    if let Some(t) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(t.clone());
    }
    let verilator_version = run_tool(verilator, &["--version"])?;
    // "Verilator 5.006 2023-01-22 rev (Debian 5.006-3)"
    let major = verilator_version
        .strip_prefix("Verilator ")
        .and_then(|v| v.split('.').next())
        .and_then(|m| m.parse::<u32>().ok());
    if major != Some(5) {
        return Err(RtlError::ToolFailed {
            tool: verilator.to_string_lossy().into_owned(),
            detail: format!(
                "Verilator 5.x is required, found `{verilator_version}`; {}",
                super::INSTALL_HINT
            ),
        });
    }
    let verilator_root = PathBuf::from(run_tool(verilator, &["--getenv", "VERILATOR_ROOT"])?);
    if !verilator_root
        .join("include")
        .join("verilated.cpp")
        .is_file()
    {
        return Err(RtlError::ToolFailed {
            tool: verilator.to_string_lossy().into_owned(),
            detail: format!(
                "VERILATOR_ROOT {} has no include/verilated.cpp",
                verilator_root.display()
            ),
        });
    }
    let cxx_version = run_tool(cxx, &["--version"])?
        .lines()
        .next()
        .unwrap_or_default()
        .to_string();
    let t = Arc::new(Tools {
        verilator: verilator.clone(),
        cxx: cxx.clone(),
        verilator_version,
        verilator_root,
        cxx_version,
    });
    cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, t.clone());
    Ok(t)
}

impl Tools {
    fn include_flags(&self) -> [String; 2] {
        let inc = self.verilator_root.join("include");
        [
            format!("-I{}", inc.display()),
            format!("-I{}", inc.join("vltstd").display()),
        ]
    }

    fn cxx_compile(&self, src: &Path, obj: &Path, extra_includes: &[&Path]) -> Command {
        let mut c = Command::new(&self.cxx);
        c.args(CXX_FLAGS).args(self.include_flags());
        for i in extra_includes {
            c.arg(format!("-I{}", i.display()));
        }
        c.arg("-c").arg(src).arg("-o").arg(obj).stdin(Stdio::null());
        c
    }
}

/// One compile or link job: a description (for errors), the command, and the file that
/// receives its stderr.
type Job = (String, Command, PathBuf);

/// Runs jobs, at most `available_parallelism` at once; each job's stderr goes to its own
/// log file (no pipe can fill up and block). Returns each job's outcome, in order.
fn run_jobs_all(jobs: Vec<Job>) -> Vec<Result<(), RtlError>> {
    let max = std::thread::available_parallelism().map_or(2, |n| n.get());
    let wait = |what: String, mut child: Child, log: &Path| -> Result<(), RtlError> {
        match child.wait() {
            Ok(s) if s.success() => Ok(()),
            Ok(s) => Err(RtlError::Compile {
                what,
                stderr: format!(
                    "({s})\n{}",
                    fs::read_to_string(log).unwrap_or_else(|e| format!("(no log: {e})"))
                ),
            }),
            Err(e) => Err(RtlError::Compile {
                what,
                stderr: e.to_string(),
            }),
        }
    };
    let mut results: Vec<Option<Result<(), RtlError>>> = jobs.iter().map(|_| None).collect();
    let mut running: std::collections::VecDeque<(usize, String, Child, PathBuf)> =
        Default::default();
    for (i, (what, mut cmd, log)) in jobs.into_iter().enumerate() {
        if running.len() >= max {
            if let Some((j, w, child, l)) = running.pop_front() {
                results[j] = Some(wait(w, child, &l));
            }
        }
        let log_file = match fs::File::create(&log) {
            Ok(f) => f,
            Err(e) => {
                results[i] = Some(Err(io_err("creating log", &log)(e)));
                continue;
            }
        };
        cmd.stdout(Stdio::null()).stderr(log_file);
        match cmd.spawn() {
            Ok(child) => running.push_back((i, what, child, log)),
            Err(e) => {
                results[i] = Some(Err(RtlError::ToolMissing {
                    tool: cmd.get_program().to_string_lossy().into_owned(),
                    detail: e.to_string(),
                }));
            }
        }
    }
    for (j, w, child, l) in running {
        results[j] = Some(wait(w, child, &l));
    }
    results.into_iter().map(|r| r.unwrap_or(Ok(()))).collect()
}

/// Runs jobs as [`run_jobs_all`]; fails with the first failure.
fn run_jobs(jobs: Vec<Job>) -> Result<(), RtlError> {
    run_jobs_all(jobs).into_iter().collect()
}

// ---------------------------------------------------------------------------------------
// The Verilator runtime objects and the precompiled header.

/// Which runtime sources a model needs.
fn runtime_sources(trace: Option<TraceFormat>) -> Vec<&'static str> {
    let mut v = vec!["verilated", "verilated_threads"];
    match trace {
        Some(TraceFormat::Vcd) => v.push("verilated_vcd_c"),
        Some(TraceFormat::Fst) => v.push("verilated_fst_c"),
        None => {}
    }
    v
}

/// The header precompiled once per runtime: parsing `verilated.h` is most of the cost of
/// compiling a small generated C++ file (1.5 s of CPU without, 0.2 s with the PCH).
/// It starts with the hooks header, so force-including it declares the hooks too.
const PCH_HEADER: &str = "// rocenic-sim: precompiled with the Verilator runtime.\n\
                          #include \"rv_hooks.h\"\n\
                          #include \"verilated.h\"\n#include \"verilated_vcd_c.h\"\n";

/// The cached runtime a model links against.
struct Runtime {
    /// Object files to link.
    objs: Vec<PathBuf>,
    /// The header every model file must `-include` first; GCC uses the precompiled
    /// `rv_pch.h.gch` beside it when it exists and matches the flags.
    pch: PathBuf,
    /// Whether this call compiled anything.
    built: bool,
}

/// Compiles (once per tool versions and flags) the runtime objects `trace` needs and the
/// precompiled header, into `<cache>/runtime-<hash>/`.
fn runtime_objects(
    tools: &Tools,
    cache: &Path,
    trace: Option<TraceFormat>,
) -> Result<Runtime, RtlError> {
    let mut h = KeyHasher::new("rocenic-verilator-runtime");
    h.field(&shim::SHIM_VERSION.to_le_bytes());
    h.field(tools.verilator_version.as_bytes());
    h.field(tools.verilator_root.as_os_str().as_encoded_bytes());
    h.field(tools.cxx_version.as_bytes());
    for f in CXX_FLAGS {
        h.field(f.as_bytes());
    }
    h.field(PCH_HEADER.as_bytes());
    h.field(shim::HOOKS_HEADER.as_bytes());
    let key = h.hex();
    let dir = cache.join(format!("runtime-{}", &key[..20]));
    let objs: Vec<PathBuf> = runtime_sources(trace)
        .iter()
        .map(|s| dir.join(format!("{s}.o")))
        .collect();
    let hooks_h = dir.join("rv_hooks.h");
    let pch_h = dir.join("rv_pch.h");
    let pch_gch = dir.join("rv_pch.h.gch");
    // A failed PCH build leaves this marker: don't retry it for every model.
    let pch_failed = dir.join("rv_pch.failed");
    let pch_done = |built| Runtime {
        objs: objs.clone(),
        pch: pch_h.clone(),
        built,
    };
    let pch_settled = pch_gch.is_file() || pch_failed.is_file();
    if pch_settled && pch_h.is_file() && objs.iter().all(|o| o.is_file()) {
        return Ok(pch_done(false));
    }
    let _lock = LockGuard::acquire(cache, &format!("runtime-{}", &key[..20]))?;
    create_dir_all(&dir)?;
    for (path, text) in [(&hooks_h, shim::HOOKS_HEADER), (&pch_h, PCH_HEADER)] {
        if fs::read_to_string(path).ok().as_deref() != Some(text) {
            let tmp = dir.join(format!("header.tmp-{}", unique_suffix()));
            fs::write(&tmp, text).map_err(io_err("writing", &tmp))?;
            fs::rename(&tmp, path).map_err(io_err("renaming", &tmp))?;
        }
    }
    let include = tools.verilator_root.join("include");
    let mut jobs = Vec::new();
    let mut renames = Vec::new();
    for (src, obj) in runtime_sources(trace).iter().zip(&objs) {
        if obj.is_file() {
            continue; // built by someone else while we waited for the lock
        }
        let tmp = dir.join(format!("{src}.o.tmp-{}", unique_suffix()));
        let log = dir.join(format!("{src}.log"));
        let mut cmd = tools.cxx_compile(&include.join(format!("{src}.cpp")), &tmp, &[]);
        cmd.arg("-include").arg(&hooks_h);
        jobs.push((format!("Verilator runtime {src}.cpp"), cmd, log));
        renames.push((tmp, obj.clone()));
    }
    let mut pch_tmp = None;
    if !pch_gch.is_file() && !pch_failed.is_file() {
        let tmp = dir.join(format!("rv_pch.h.gch.tmp-{}", unique_suffix()));
        let mut cmd = Command::new(&tools.cxx);
        cmd.args(CXX_FLAGS)
            .args(tools.include_flags())
            .args(["-x", "c++-header"])
            .arg(&pch_h)
            .arg("-o")
            .arg(&tmp)
            .stdin(Stdio::null());
        jobs.push(("precompiled header".into(), cmd, dir.join("rv_pch.log")));
        pch_tmp = Some(tmp);
    }
    let built = !jobs.is_empty();
    let mut results = run_jobs_all(jobs);
    if let Some(tmp) = pch_tmp {
        // The PCH is an optimisation: without it, the header is read as text.
        match results.pop() {
            Some(Ok(())) => fs::rename(&tmp, &pch_gch).map_err(io_err("renaming", &tmp))?,
            _ => {
                let _ = fs::remove_file(&tmp);
                let _ = fs::write(&pch_failed, "");
            }
        }
    }
    let mut first_err = None;
    for ((tmp, obj), r) in renames.into_iter().zip(results) {
        match r {
            Ok(()) if first_err.is_none() => {
                fs::rename(&tmp, &obj).map_err(io_err("renaming", &tmp))?;
            }
            Ok(()) => {
                let _ = fs::remove_file(&tmp);
            }
            Err(e) => {
                let _ = fs::remove_file(&tmp);
                first_err.get_or_insert(e);
            }
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(pch_done(built)),
    }
}

// ---------------------------------------------------------------------------------------
// The builder.

/// A source as hashed: its label (file name), text, and the file it came from.
struct SourceText {
    label: String,
    text: String,
    path: Option<PathBuf>,
}

#[derive(Debug, Clone)]
enum Source {
    File(PathBuf),
    Text { label: String, text: String },
}

/// How a model library was obtained, with timings (for reports and tests).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildReport {
    /// The library was found in the cache (nothing was verilated or compiled).
    pub cached: bool,
    /// The Verilator runtime objects were compiled by this build.
    pub runtime_built: bool,
    /// Time spent in `verilator` (zero when cached).
    pub verilate: Duration,
    /// Time spent compiling and linking C++, runtime included (zero when cached).
    pub compile: Duration,
    /// Wall time of the whole `build()` call, loading included.
    pub total: Duration,
}

/// Builds a Verilated model library from Verilog (see the [module docs](super) for the
/// steps and the cache).
#[derive(Debug, Clone)]
pub struct ModelBuilder {
    sources: Vec<Source>,
    top: String,
    name: Option<String>,
    trace: Option<TraceFormat>,
    verilator_args: Vec<String>,
    cxx_args: Vec<String>,
    warnings_fatal: bool,
    cache_dir: Option<PathBuf>,
    verilator: OsString,
    cxx: OsString,
}

impl ModelBuilder {
    fn new(top: &str, source: Source) -> Self {
        ModelBuilder {
            sources: vec![source],
            top: top.to_string(),
            name: None,
            trace: None,
            verilator_args: Vec::new(),
            cxx_args: Vec::new(),
            warnings_fatal: false,
            cache_dir: None,
            verilator: "verilator".into(),
            cxx: "g++".into(),
        }
    }

    /// A design in a Verilog file, with top module `top`.
    pub fn from_file(path: impl Into<PathBuf>, top: &str) -> Self {
        Self::new(top, Source::File(path.into()))
    }

    /// A design given as Verilog text, with top module `top`.
    pub fn from_string(verilog: impl Into<String>, top: &str) -> Self {
        Self::new(
            top,
            Source::Text {
                label: format!("{top}.v"),
                text: verilog.into(),
            },
        )
    }

    /// Adds another Verilog file to the design.
    pub fn add_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.sources.push(Source::File(path.into()));
        self
    }

    /// Adds more Verilog text to the design.
    pub fn add_string(mut self, verilog: impl Into<String>) -> Self {
        let label = format!("{}_{}.v", self.top, self.sources.len());
        self.sources.push(Source::Text {
            label,
            text: verilog.into(),
        });
        self
    }

    /// The model's name: the C++ class is `V<name>` (default: the top module's name).
    pub fn name(mut self, name: &str) -> Self {
        self.name = Some(name.to_string());
        self
    }

    /// Compiles waveform support in (`--trace` / `--trace-fst`). Without it,
    /// [`VerilatedModel::trace_to`] fails; with it, the model runs somewhat slower even
    /// when no trace is open.
    pub fn trace(mut self, format: TraceFormat) -> Self {
        self.trace = Some(format);
        self
    }

    /// Like [`trace`](Self::trace), but optional.
    pub fn trace_opt(mut self, format: Option<TraceFormat>) -> Self {
        self.trace = format;
        self
    }

    /// An extra Verilator argument (e.g. `-Wno-WIDTH`, `-DFOO=1`, `-Iinclude/dir`).
    pub fn verilator_arg(mut self, arg: impl Into<String>) -> Self {
        self.verilator_args.push(arg.into());
        self
    }

    /// An extra g++ argument for the model's C++ (e.g. `-O3`, `-march=native`).
    pub fn cxx_arg(mut self, arg: impl Into<String>) -> Self {
        self.cxx_args.push(arg.into());
        self
    }

    /// Make Verilator warnings fatal (default: they are kept in
    /// [`VerilatedLib::warnings`] and the build goes on; lint with `verilator --lint-only
    /// -Wall` separately).
    pub fn warnings_fatal(mut self, fatal: bool) -> Self {
        self.warnings_fatal = fatal;
        self
    }

    /// The cache directory (default: [`default_cache_dir`]).
    pub fn cache_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cache_dir = Some(dir.into());
        self
    }

    /// The `verilator` program to run (default: `verilator` on the `PATH`).
    pub fn verilator(mut self, program: impl Into<OsString>) -> Self {
        self.verilator = program.into();
        self
    }

    /// The C++ compiler (default: `g++` on the `PATH`).
    pub fn cxx(mut self, program: impl Into<OsString>) -> Self {
        self.cxx = program.into();
        self
    }

    fn model_name(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.top)
    }

    /// The full Verilator argument list except `-Mdir` and the source files.
    fn verilator_argv(&self) -> Vec<String> {
        let mut a: Vec<String> = VERILATOR_FLAGS.iter().map(|s| s.to_string()).collect();
        a.extend([
            "--top-module".to_string(),
            self.top.clone(),
            "--prefix".to_string(),
            format!("V{}", self.model_name()),
        ]);
        match self.trace {
            Some(TraceFormat::Vcd) => a.push("--trace".into()),
            Some(TraceFormat::Fst) => a.push("--trace-fst".into()),
            None => {}
        }
        if !self.warnings_fatal {
            a.push("-Wno-fatal".into());
        }
        a.extend(self.verilator_args.iter().cloned());
        a
    }

    /// Builds the model library, or loads it from the cache.
    pub fn build(&self) -> Result<VerilatedLib, RtlError> {
        let start = Instant::now();
        let name = self.model_name().to_string();
        if !is_identifier(&name) {
            return Err(RtlError::InvalidName {
                what: "model",
                name,
            });
        }
        if !is_identifier(&self.top) {
            return Err(RtlError::InvalidName {
                what: "top module",
                name: self.top.clone(),
            });
        }
        let tools = tools(&self.verilator, &self.cxx)?;
        let cache = self.cache_dir.clone().unwrap_or_else(default_cache_dir);

        // Read every source now: the key hashes contents, not paths or times.
        let mut texts = Vec::new();
        for s in &self.sources {
            match s {
                Source::File(p) => {
                    let text = fs::read_to_string(p).map_err(io_err("reading", p))?;
                    let label = p
                        .file_name()
                        .map(|f| f.to_string_lossy().into_owned())
                        .unwrap_or_else(|| "source.v".into());
                    texts.push(SourceText {
                        label,
                        text,
                        path: Some(p.clone()),
                    });
                }
                Source::Text { label, text } => texts.push(SourceText {
                    label: label.clone(),
                    text: text.clone(),
                    path: None,
                }),
            }
        }
        let argv = self.verilator_argv();
        let mut h = KeyHasher::new("rocenic-verilator-model");
        h.field(&shim::SHIM_VERSION.to_le_bytes());
        h.field(shim::fingerprint(self.trace).as_bytes());
        h.field(tools.verilator_version.as_bytes());
        h.field(tools.verilator_root.as_os_str().as_encoded_bytes());
        h.field(tools.cxx_version.as_bytes());
        for f in CXX_FLAGS
            .iter()
            .copied()
            .chain(self.cxx_args.iter().map(String::as_str))
        {
            h.field(f.as_bytes());
        }
        // The per-file optimisation rule (bump when `model_opt_level` changes).
        h.field(b"model-opt: slow/trace -O0, eval -O2");
        for a in &argv {
            h.field(a.as_bytes());
        }
        h.field(&(texts.len() as u64).to_le_bytes());
        for t in &texts {
            h.field(t.label.as_bytes());
            h.field(t.text.as_bytes());
        }
        let key = h.hex();
        let models = cache.join("models");
        let final_dir = models.join(format!("{name}-{}", &key[..24]));
        let lib_path = final_dir.join(format!("libV{name}.so"));

        let mut report = BuildReport {
            cached: true,
            runtime_built: false,
            verilate: Duration::ZERO,
            compile: Duration::ZERO,
            total: Duration::ZERO,
        };
        if !lib_path.is_file() {
            let _lock = LockGuard::acquire(&cache, &format!("model-{name}-{}", &key[..24]))?;
            if !lib_path.is_file() {
                report.cached = false;
                self.build_into(
                    &tools,
                    &cache,
                    &name,
                    &argv,
                    &texts,
                    &final_dir,
                    &mut report,
                )?;
                observe(&name, BuildStage::Built);
            }
        }

        let header = final_dir.join("obj").join(format!("V{name}.h"));
        let header_text = fs::read_to_string(&header).map_err(io_err("reading", &header))?;
        let ports = parse_header(&header_text)?;
        let warnings = fs::read_to_string(final_dir.join("verilator.log")).unwrap_or_default();
        let shim = ShimLib::load(&lib_path, ports.len())?;
        static LIB_IDS: AtomicU64 = AtomicU64::new(1);
        report.total = start.elapsed();
        Ok(VerilatedLib {
            inner: Arc::new(LibInner {
                id: LIB_IDS.fetch_add(1, Ordering::Relaxed),
                name: name.clone(),
                trace: self.trace,
                ports: PortTable::new(name, ports),
                shim,
                dir: final_dir,
                warnings,
                report,
            }),
        })
    }

    /// Verilates and compiles into a temporary directory, then renames it to `final_dir`.
    #[allow(clippy::too_many_arguments)]
    fn build_into(
        &self,
        tools: &Tools,
        cache: &Path,
        name: &str,
        argv: &[String],
        texts: &[SourceText],
        final_dir: &Path,
        report: &mut BuildReport,
    ) -> Result<(), RtlError> {
        let tmp_root = cache.join("tmp");
        let tmp = tmp_root.join(format!(
            "{}.{}",
            final_dir
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default(),
            unique_suffix()
        ));
        create_dir_all(&tmp)?;
        let res = self.build_in_tmp(tools, cache, name, argv, texts, &tmp, report);
        if let Err(e) = res {
            let _ = fs::remove_dir_all(&tmp);
            return Err(e);
        }
        if let Some(parent) = final_dir.parent() {
            create_dir_all(parent)?;
        }
        match fs::rename(&tmp, final_dir) {
            Ok(()) => Ok(()),
            // Someone without our lock (another cache user) won the race: theirs is as good.
            Err(_) if final_dir.join(format!("libV{name}.so")).is_file() => {
                let _ = fs::remove_dir_all(&tmp);
                Ok(())
            }
            Err(e) => Err(io_err("renaming", &tmp)(e)),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn build_in_tmp(
        &self,
        tools: &Tools,
        cache: &Path,
        name: &str,
        argv: &[String],
        texts: &[SourceText],
        tmp: &Path,
        report: &mut BuildReport,
    ) -> Result<(), RtlError> {
        // 1. Sources (as they were hashed) and Verilator.
        let src_dir = tmp.join("src");
        let obj_dir = tmp.join("obj");
        create_dir_all(&src_dir)?;
        let mut files = Vec::new();
        for (i, t) in texts.iter().enumerate() {
            match &t.path {
                // Files are passed as given, so diagnostics name them and relative `-I`
                // arguments work as the caller meant; their text is checked again below.
                Some(p) => files.push(p.clone()),
                // Text is written out, with a `line directive so diagnostics name its label.
                None => {
                    let p = src_dir.join(format!("{i}_{}", t.label));
                    let text = format!("`line 1 \"{}\" 0\n{}", t.label, t.text);
                    fs::write(&p, text).map_err(io_err("writing", &p))?;
                    files.push(p);
                }
            }
        }
        observe(name, BuildStage::Verilating);
        let t0 = Instant::now();
        let out = Command::new(&tools.verilator)
            .args(argv)
            .arg("-Mdir")
            .arg(&obj_dir)
            .args(&files)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| RtlError::ToolMissing {
                tool: tools.verilator.to_string_lossy().into_owned(),
                detail: e.to_string(),
            })?;
        report.verilate = t0.elapsed();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        if !out.status.success() {
            return Err(RtlError::Verilate {
                top: self.top.clone(),
                stderr,
            });
        }
        for t in texts {
            if let Some(p) = &t.path {
                if fs::read_to_string(p).ok().as_deref() != Some(t.text.as_str()) {
                    return Err(RtlError::Io {
                        what: "source changed while it was being built (build again)",
                        path: p.clone(),
                        source: std::io::Error::other("modified during the build"),
                    });
                }
            }
        }
        let log = tmp.join("verilator.log");
        fs::write(&log, &stderr).map_err(io_err("writing", &log))?;

        // 2. Ports and shim.
        let header = obj_dir.join(format!("V{name}.h"));
        let header_text = fs::read_to_string(&header).map_err(io_err("reading", &header))?;
        let ports = parse_header(&header_text)?;
        let shim_src = tmp.join("rv_shim.cpp");
        let shim_text = shim::generate(name, &ports, self.trace);
        fs::write(&shim_src, shim_text).map_err(io_err("writing", &shim_src))?;

        // 3. Runtime objects (cached) and the model's C++, in parallel jobs.
        observe(name, BuildStage::Compiling);
        let t1 = Instant::now();
        let runtime = runtime_objects(tools, cache, self.trace)?;
        report.runtime_built = runtime.built;
        let build_dir = tmp.join("build");
        create_dir_all(&build_dir)?;
        let mut cpps: Vec<PathBuf> = fs::read_dir(&obj_dir)
            .map_err(io_err("listing", &obj_dir))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "cpp"))
            .collect();
        cpps.sort();
        // Largest files first: they bound the wall time of the parallel compile.
        cpps.sort_by_key(|p| std::cmp::Reverse(fs::metadata(p).map_or(0, |m| m.len())));
        cpps.push(shim_src);
        let mut jobs = Vec::new();
        let mut objs = Vec::new();
        for cpp in &cpps {
            let stem = cpp.file_stem().unwrap_or_default().to_string_lossy();
            let obj = build_dir.join(format!("{stem}.o"));
            let mut cmd = tools.cxx_compile(cpp, &obj, &[&obj_dir]);
            // GCC uses `rv_pch.h.gch` when it matches the flags, else reads the header.
            cmd.arg("-include").arg(&runtime.pch);
            cmd.arg(model_opt_level(&stem));
            cmd.args(&self.cxx_args);
            jobs.push((
                cpp.file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned(),
                cmd,
                build_dir.join(format!("{stem}.log")),
            ));
            objs.push(obj);
        }
        run_jobs(jobs)?;

        // 4. Link.
        let so = tmp.join(format!("libV{name}.so"));
        let mut link = Command::new(&tools.cxx);
        link.arg("-shared")
            .args(["-fPIC", "-pthread", "-Wl,-z,defs"])
            .arg("-o")
            .arg(&so)
            .args(&objs)
            .args(&runtime.objs)
            .arg("-latomic");
        if self.trace == Some(TraceFormat::Fst) {
            link.arg("-lz");
        }
        let link_log = build_dir.join("link.log");
        run_jobs(vec![("linking".to_string(), link, link_log)])?;
        report.compile = t1.elapsed();
        // Objects are not needed any more (the runtime's are cached separately).
        let _ = fs::remove_dir_all(&build_dir);
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// The built library.

#[derive(Debug)]
pub(crate) struct LibInner {
    pub(crate) id: u64,
    pub(crate) name: String,
    pub(crate) trace: Option<TraceFormat>,
    pub(crate) ports: PortTable,
    pub(crate) shim: Arc<ShimLib>,
    dir: PathBuf,
    warnings: String,
    report: BuildReport,
}

/// A built and loaded model library: instantiate any number of [`VerilatedModel`]s from it.
/// Cheap to clone; the library stays loaded while a clone or a model is alive.
#[derive(Debug, Clone)]
pub struct VerilatedLib {
    pub(crate) inner: Arc<LibInner>,
}

impl VerilatedLib {
    /// A new model instance (its own `VerilatedContext`), in Verilator's initial state:
    /// inputs zero, `initial` blocks not yet run (they run on the first `eval`).
    pub fn instantiate(&self) -> Result<VerilatedModel, RtlError> {
        VerilatedModel::new(self.inner.clone())
    }

    /// The model's name (the C++ class is `V<name>`).
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The top-level ports, as Verilator declared them.
    pub fn ports(&self) -> &[PortInfo] {
        &self.inner.ports.ports
    }

    /// A port handle by name, usable on every model of this library.
    pub fn port(&self, name: &str) -> Result<Port, RtlError> {
        let index = name.resolve(self.inner.id, &self.inner.ports)?;
        Ok(Port {
            lib_id: self.inner.id,
            index: index as u32,
        })
    }

    /// The waveform format compiled in, if any.
    pub fn trace_format(&self) -> Option<TraceFormat> {
        self.inner.trace
    }

    /// Verilator's warnings (empty when it had none).
    pub fn warnings(&self) -> &str {
        &self.inner.warnings
    }

    /// The cache directory of this model (generated C++ in `obj/`, sources in `src/`).
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// How this library was obtained.
    pub fn report(&self) -> &BuildReport {
        &self.inner.report
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_hasher_separates_fields() {
        let mut a = KeyHasher::new("d");
        a.field(b"ab");
        a.field(b"c");
        let mut b = KeyHasher::new("d");
        b.field(b"a");
        b.field(b"bc");
        assert_ne!(a.hex(), b.hex());
        let mut c = KeyHasher::new("d");
        c.field(b"ab");
        c.field(b"c");
        assert_eq!(a.hex(), c.hex());
    }

    #[test]
    fn identifiers() {
        assert!(is_identifier("top_1"));
        assert!(is_identifier("_x"));
        assert!(!is_identifier("1x"));
        assert!(!is_identifier("a-b"));
        assert!(!is_identifier(""));
    }

    #[test]
    fn argv_has_the_required_flags() {
        let b = ModelBuilder::from_string("module t; endmodule", "t")
            .name("n")
            .trace(TraceFormat::Fst);
        let a = b.verilator_argv().join(" ");
        assert!(a.starts_with("--cc -O3 --x-assign fast --x-initial fast"));
        assert!(a.contains("--top-module t --prefix Vn --trace-fst -Wno-fatal"));
    }
}
