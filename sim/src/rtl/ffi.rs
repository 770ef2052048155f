//! The only `unsafe` code of the RTL harness: loading a model library with `libloading` and
//! calling its C shim (see [`super::shim`] for the C side and its guarantees).
//!
//! Everything here is wrapped in safe functions whose arguments cannot cause undefined
//! behaviour: the shim bounds-checks port indices and copies at most the number of words
//! the Rust slice holds, and the Rust side guarantees the handle is live (it is owned by
//! [`RawModel`] and deleted exactly once, in `Drop`).
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr::NonNull;
use std::sync::Arc;

use super::shim::SHIM_VERSION;
use super::RtlError;

type FnU32 = unsafe extern "C" fn() -> u32;
type FnNew = unsafe extern "C" fn(*mut *mut c_char) -> *mut c_void;
type FnFreeString = unsafe extern "C" fn(*mut c_char);
type FnHandle = unsafe extern "C" fn(*mut c_void);
type FnHandleInt = unsafe extern "C" fn(*mut c_void) -> c_int;
type FnHandleU64 = unsafe extern "C" fn(*mut c_void) -> u64;
type FnHandleSetU64 = unsafe extern "C" fn(*mut c_void, u64);
type FnLastError = unsafe extern "C" fn(*mut c_void) -> *const c_char;
type FnTick = unsafe extern "C" fn(*mut c_void, u32, u64, u64) -> c_int;
type FnSet64 = unsafe extern "C" fn(*mut c_void, u32, u64);
type FnGet64 = unsafe extern "C" fn(*mut c_void, u32) -> u64;
type FnSetWords = unsafe extern "C" fn(*mut c_void, u32, *const u32, usize);
type FnGetWords = unsafe extern "C" fn(*mut c_void, u32, *mut u32, usize);
type FnTraceOpen = unsafe extern "C" fn(*mut c_void, *const c_char) -> c_int;
type FnOutputLen = unsafe extern "C" fn(*mut c_void) -> usize;
type FnOutputTake = unsafe extern "C" fn(*mut c_void, *mut c_char, usize) -> usize;
type FnSetEcho = unsafe extern "C" fn(*mut c_void, c_int);

/// The entry points of one loaded model library.
struct Fns {
    port_count: FnU32,
    new: FnNew,
    free_string: FnFreeString,
    delete: FnHandle,
    last_error: FnLastError,
    eval: FnHandleInt,
    tick: FnTick,
    set64: FnSet64,
    get64: FnGet64,
    set_words: FnSetWords,
    get_words: FnGetWords,
    time: FnHandleU64,
    set_time: FnHandleSetU64,
    got_finish: FnHandleInt,
    trace_open: FnTraceOpen,
    trace_dump: FnHandle,
    trace_flush: FnHandle,
    trace_close: FnHandle,
    output_len: FnOutputLen,
    output_take: FnOutputTake,
    set_echo: FnSetEcho,
}

/// A loaded model library. The function pointers in `fns` point into `_lib`, which lives
/// exactly as long as this struct (and every [`RawModel`] holds an `Arc` of it).
pub(crate) struct ShimLib {
    fns: Fns,
    // Declared after `fns`, so it is dropped (dlclose) after the pointers are gone.
    _lib: libloading::Library,
}

impl std::fmt::Debug for ShimLib {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ShimLib")
    }
}

fn load_err(path: &Path, e: impl std::fmt::Display) -> RtlError {
    RtlError::Load {
        path: path.to_path_buf(),
        detail: e.to_string(),
    }
}

impl ShimLib {
    /// Loads the model library at `path` (built by [`super::build`] with the shim of this
    /// crate's [`SHIM_VERSION`]) and checks that it has `nports` ports.
    pub(crate) fn load(path: &Path, nports: usize) -> Result<Arc<ShimLib>, RtlError> {
        // SAFETY: loading a library runs its initialisers. Our model libraries are built by
        // this module from Verilator's output, its runtime and our shim; their static
        // initialisers only set up Verilator's globals inside the library (all symbols but
        // the `rv_*` API have hidden visibility, so nothing interposes on the process).
        let lib = unsafe { libloading::Library::new(path) }.map_err(|e| load_err(path, e))?;
        macro_rules! sym {
            ($name:literal, $ty:ty) => {{
                // SAFETY: the symbol is defined by our generated shim with exactly this C
                // signature (see shim.rs); the copied function pointer is only used while
                // `lib` is alive, because both are stored together in `ShimLib`.
                let s: libloading::Symbol<'_, $ty> =
                    unsafe { lib.get(concat!($name, "\0").as_bytes()) }
                        .map_err(|e| load_err(path, e))?;
                *s
            }};
        }
        let version: FnU32 = sym!("rv_shim_version", FnU32);
        // SAFETY: `rv_shim_version` takes no arguments and only returns a constant.
        let got = unsafe { version() };
        if got != SHIM_VERSION {
            return Err(load_err(
                path,
                format!("shim version {got}, expected {SHIM_VERSION}"),
            ));
        }
        let fns = Fns {
            port_count: sym!("rv_port_count", FnU32),
            new: sym!("rv_new", FnNew),
            free_string: sym!("rv_free_string", FnFreeString),
            delete: sym!("rv_delete", FnHandle),
            last_error: sym!("rv_last_error", FnLastError),
            eval: sym!("rv_eval", FnHandleInt),
            tick: sym!("rv_tick", FnTick),
            set64: sym!("rv_set64", FnSet64),
            get64: sym!("rv_get64", FnGet64),
            set_words: sym!("rv_set_words", FnSetWords),
            get_words: sym!("rv_get_words", FnGetWords),
            time: sym!("rv_time", FnHandleU64),
            set_time: sym!("rv_set_time", FnHandleSetU64),
            got_finish: sym!("rv_got_finish", FnHandleInt),
            trace_open: sym!("rv_trace_open", FnTraceOpen),
            trace_dump: sym!("rv_trace_dump", FnHandle),
            trace_flush: sym!("rv_trace_flush", FnHandle),
            trace_close: sym!("rv_trace_close", FnHandle),
            output_len: sym!("rv_output_len", FnOutputLen),
            output_take: sym!("rv_output_take", FnOutputTake),
            set_echo: sym!("rv_set_echo", FnSetEcho),
        };
        // SAFETY: no arguments; returns a constant of the generated shim.
        let count = unsafe { (fns.port_count)() } as usize;
        if count != nports {
            return Err(load_err(
                path,
                format!("library has {count} ports, its manifest {nports}"),
            ));
        }
        Ok(Arc::new(ShimLib { fns, _lib: lib }))
    }
}

/// Outcome of a trace-open request.
pub(crate) enum TraceOpen {
    Opened,
    NotCompiledIn,
    AlreadyOpen,
    Failed(String),
}

/// One live model instance: its own `VerilatedContext` + `V<name>` (+ trace) in C++.
pub(crate) struct RawModel {
    handle: NonNull<c_void>,
    lib: Arc<ShimLib>,
}

// SAFETY: the C++ handle owns everything it uses (its own VerilatedContext, model and
// tracer; the model is built without --threads, so no worker threads hold on to it), and
// every entry point re-points Verilator's thread-local "current context" at the handle's
// context, so calls may come from any thread, one at a time. `RawModel` is not `Sync`
// (all calls that mutate take `&mut self`; reads take `&self` but `!Sync` forbids
// concurrent ones).
unsafe impl Send for RawModel {}

impl RawModel {
    /// Creates a model instance.
    pub(crate) fn new(lib: &Arc<ShimLib>) -> Result<RawModel, RtlError> {
        let mut err: *mut c_char = std::ptr::null_mut();
        // SAFETY: `rv_new` takes a valid pointer to a `char*` out-parameter; it returns a
        // new handle or null (then `err` is null or a malloc'ed string we free below).
        let h = unsafe { (lib.fns.new)(&mut err) };
        match NonNull::new(h) {
            Some(handle) => Ok(RawModel {
                handle,
                lib: lib.clone(),
            }),
            None => {
                let msg = if err.is_null() {
                    "model construction failed".to_string()
                } else {
                    // SAFETY: `err` is a NUL-terminated string from strdup in the shim; we
                    // copy it and then free it with the shim's matching `free`.
                    unsafe {
                        let m = CStr::from_ptr(err).to_string_lossy().into_owned();
                        (lib.fns.free_string)(err);
                        m
                    }
                };
                Err(RtlError::Fatal(msg))
            }
        }
    }

    fn last_error(&self) -> String {
        // SAFETY: live handle; the shim returns a pointer to the handle's own NUL-terminated
        // std::string, valid until the next call on the handle; we copy it at once.
        unsafe {
            CStr::from_ptr((self.lib.fns.last_error)(self.handle.as_ptr()))
                .to_string_lossy()
                .into_owned()
        }
    }

    /// `eval()`; `Err(message)` if the model hit a fatal error (`$fatal`, `$stop`, ...).
    pub(crate) fn eval(&mut self) -> Result<(), String> {
        // SAFETY: live handle, exclusively borrowed.
        let rc = unsafe { (self.lib.fns.eval)(self.handle.as_ptr()) };
        if rc == 0 {
            Ok(())
        } else {
            Err(self.last_error())
        }
    }

    /// `cycles` clock cycles on port index `clk` (checked by the shim).
    pub(crate) fn tick(&mut self, clk: u32, cycles: u64, half_period: u64) -> Result<(), String> {
        // SAFETY: live handle, exclusively borrowed; the shim checks `clk`.
        let rc = unsafe { (self.lib.fns.tick)(self.handle.as_ptr(), clk, cycles, half_period) };
        if rc == 0 {
            Ok(())
        } else {
            Err(self.last_error())
        }
    }

    pub(crate) fn set64(&mut self, port: u32, value: u64) {
        // SAFETY: live handle; the shim ignores out-of-range ports and masks the value.
        unsafe { (self.lib.fns.set64)(self.handle.as_ptr(), port, value) }
    }

    pub(crate) fn get64(&self, port: u32) -> u64 {
        // SAFETY: live handle; read-only; out-of-range ports read as 0.
        unsafe { (self.lib.fns.get64)(self.handle.as_ptr(), port) }
    }

    pub(crate) fn set_words(&mut self, port: u32, words: &[u32]) {
        // SAFETY: live handle; the pointer/length pair comes from a valid slice, and the
        // shim reads at most `words.len()` elements.
        unsafe { (self.lib.fns.set_words)(self.handle.as_ptr(), port, words.as_ptr(), words.len()) }
    }

    pub(crate) fn get_words(&self, port: u32, out: &mut [u32]) {
        // SAFETY: live handle; the pointer/length pair comes from a valid mutable slice, and
        // the shim writes at most `out.len()` elements.
        unsafe { (self.lib.fns.get_words)(self.handle.as_ptr(), port, out.as_mut_ptr(), out.len()) }
    }

    pub(crate) fn time(&self) -> u64 {
        // SAFETY: live handle; read-only.
        unsafe { (self.lib.fns.time)(self.handle.as_ptr()) }
    }

    pub(crate) fn set_time(&mut self, t: u64) {
        // SAFETY: live handle, exclusively borrowed.
        unsafe { (self.lib.fns.set_time)(self.handle.as_ptr(), t) }
    }

    pub(crate) fn got_finish(&self) -> bool {
        // SAFETY: live handle; read-only.
        unsafe { (self.lib.fns.got_finish)(self.handle.as_ptr()) != 0 }
    }

    pub(crate) fn trace_open(&mut self, path: &Path) -> TraceOpen {
        let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
            return TraceOpen::Failed(format!("path {} contains a NUL byte", path.display()));
        };
        // SAFETY: live handle, exclusively borrowed; `c` is a NUL-terminated string that
        // outlives the call (the tracer copies the file name).
        let rc = unsafe { (self.lib.fns.trace_open)(self.handle.as_ptr(), c.as_ptr()) };
        match rc {
            0 => TraceOpen::Opened,
            2 => TraceOpen::NotCompiledIn,
            3 => TraceOpen::AlreadyOpen,
            _ => TraceOpen::Failed(self.last_error()),
        }
    }

    pub(crate) fn trace_dump(&mut self) {
        // SAFETY: live handle, exclusively borrowed; a no-op without an open trace.
        unsafe { (self.lib.fns.trace_dump)(self.handle.as_ptr()) }
    }

    pub(crate) fn trace_flush(&mut self) {
        // SAFETY: live handle, exclusively borrowed; a no-op without an open trace.
        unsafe { (self.lib.fns.trace_flush)(self.handle.as_ptr()) }
    }

    pub(crate) fn trace_close(&mut self) {
        // SAFETY: live handle, exclusively borrowed; a no-op without an open trace.
        unsafe { (self.lib.fns.trace_close)(self.handle.as_ptr()) }
    }
}

impl RawModel {
    /// Takes what the design printed since the last call.
    pub(crate) fn take_output(&mut self) -> String {
        // SAFETY: live handle, exclusively borrowed; read-only query.
        let len = unsafe { (self.lib.fns.output_len)(self.handle.as_ptr()) };
        let mut buf = vec![0u8; len];
        // SAFETY: `buf` is valid for `len` bytes and the shim copies at most `len` bytes.
        let n = unsafe {
            (self.lib.fns.output_take)(self.handle.as_ptr(), buf.as_mut_ptr().cast(), buf.len())
        };
        buf.truncate(n);
        String::from_utf8_lossy(&buf).into_owned()
    }

    pub(crate) fn set_echo(&mut self, on: bool) {
        // SAFETY: live handle, exclusively borrowed.
        unsafe { (self.lib.fns.set_echo)(self.handle.as_ptr(), c_int::from(on)) }
    }
}

impl Drop for RawModel {
    fn drop(&mut self) {
        // SAFETY: the handle came from `rv_new` and is deleted exactly once, here; the
        // library stays loaded until `self.lib` is dropped after this.
        unsafe { (self.lib.fns.delete)(self.handle.as_ptr()) }
    }
}
