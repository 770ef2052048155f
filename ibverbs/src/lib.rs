//! `libibverbs.so.1` over the rocenic userspace driver: unmodified RDMA programs, built
//! against Debian's `infiniband/verbs.h`, run on a rocenic NIC with no kernel module.
//!
//! The library lists one device, `rocenic0`, a simulated NIC (the behavioural model) in a
//! world of its own, cabled to the outside by the UDP wire that `rocenic pingpong` uses
//! (one Ethernet frame per datagram on loopback), so two programs on our library, or one
//! and a QEMU guest running rxe, talk RoCE v2. The NIC runs only while the program is
//! inside a verbs call that waits for it (`ibv_poll_cq`, `ibv_get_cq_event`,
//! `ibv_modify_qp` resolving the peer's MAC), always for a bounded time.
//!
//! - [`abi`]: the C structures, laid out as verbs.h has them (checked by
//!   `tests/layout.rs`).
//! - [`config`]: the environment variables that configure the device.
//! - `ffi`: the exported `ibv_*` functions, with rdma-core's symbol versions.
//! - `state`: the per-process state behind them (devices, contexts and their objects).
//!
//! `docs/ibverbs.md` says what is served, how application memory reaches the simulated
//! NIC, and what is not served.

pub mod abi;
pub mod config;
mod ffi;
mod state;

pub use ffi::DEVICE_NAME;

#[cfg(test)]
mod testutil {
    use std::process::Command;

    /// Compiles the C program `src` with gcc against the installed verbs.h (no library:
    /// it may only use the header) and returns what it prints. Fails loudly when gcc or
    /// the header is missing, naming the packages.
    pub fn compile_and_run_c(name: &str, src: &str) -> String {
        let dir = std::env::temp_dir().join(format!("rocenic-ibverbs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let c = dir.join(format!("{name}.c"));
        let exe = dir.join(name);
        std::fs::write(&c, src).unwrap();
        let out = Command::new("gcc")
            .arg("-o")
            .arg(&exe)
            .arg(&c)
            .output()
            .expect("gcc is needed (apt-get install gcc libibverbs-dev)");
        assert!(
            out.status.success(),
            "gcc failed (is libibverbs-dev installed?):\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let run = Command::new(&exe).output().unwrap();
        assert!(run.status.success());
        String::from_utf8(run.stdout).unwrap()
    }
}
