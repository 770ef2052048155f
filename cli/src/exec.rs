//! `rocenic exec [--backend model] [--wire udp:LOCAL:PEER] [--mac M] [--ip A]
//! [--peer-mac M] -- PROGRAM ARGS...`: runs an unmodified verbs program with its verbs
//! served by a rocenic NIC (device `rocenic0`), through the libibverbs-compatible library
//! of the `rocenic-ibverbs` crate (`docs/ibverbs.md`).
//!
//! The command puts a directory holding `libibverbs.so.1` (a link to the library, by
//! default the `libibverbs.so` beside the `rocenic` binary, which is where cargo builds
//! it: `cargo build --release -p rocenic-ibverbs`) first on `LD_LIBRARY_PATH`, sets the
//! library's `ROCENIC_*` variables from its options, runs the program and returns its
//! exit status.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context as _};

use crate::wire::WireSpec;

/// The options of `rocenic exec`.
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct ExecArgs {
    /// The NIC: `model` (the behavioural model; the only one the library serves).
    #[arg(long, default_value = "model")]
    pub backend: String,
    /// The wire: `udp:LOCAL_PORT:PEER_PORT` on 127.0.0.1. Without it the port is down.
    #[arg(long)]
    pub wire: Option<WireSpec>,
    /// Our port's MAC.
    #[arg(long, default_value = "02:00:00:00:00:01")]
    pub mac: String,
    /// Our port's IPv4 address (GID index 1 is ::ffff:IP).
    #[arg(long, default_value = "10.0.0.1")]
    pub ip: std::net::Ipv4Addr,
    /// The peer's MAC, used instead of ARP (needed by ibv_rc_pingpong's server).
    #[arg(long)]
    pub peer_mac: Option<String>,
    /// The library to serve the verbs (default: libibverbs.so beside this binary).
    #[arg(long)]
    pub lib: Option<PathBuf>,
    /// The program and its arguments.
    #[arg(last = true, required = true, num_args = 1..)]
    pub program: Vec<OsString>,
}

impl ExecArgs {
    /// The `ROCENIC_*` variables the library reads.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        let mut v = vec![
            ("ROCENIC_BACKEND", self.backend.clone()),
            ("ROCENIC_MAC", self.mac.clone()),
            ("ROCENIC_IP", self.ip.to_string()),
        ];
        if let Some(w) = self.wire {
            v.push(("ROCENIC_WIRE", w.to_string()));
        }
        if let Some(m) = &self.peer_mac {
            v.push(("ROCENIC_PEER_MAC", m.clone()));
        }
        v
    }

    fn library(&self) -> anyhow::Result<PathBuf> {
        let lib = match &self.lib {
            Some(l) => l.clone(),
            None => std::env::current_exe()
                .context("locating the rocenic binary")?
                .with_file_name("libibverbs.so"),
        };
        if !lib.is_file() {
            bail!(
                "{} not found: build it with `cargo build --release -p rocenic-ibverbs` or pass --lib",
                lib.display()
            );
        }
        Ok(lib)
    }
}

/// A fresh directory holding `libibverbs.so.1` -> `lib`.
fn soname_dir(lib: &Path) -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("rocenic-exec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let link = dir.join("libibverbs.so.1");
    let _ = std::fs::remove_file(&link);
    let target = lib.canonicalize().context("resolving the library's path")?;
    std::os::unix::fs::symlink(&target, &link)
        .with_context(|| format!("linking {}", link.display()))?;
    Ok(dir)
}

/// Runs the program; fails when it cannot start or exits unsuccessfully.
pub fn run(a: &ExecArgs, _out: &mut dyn std::io::Write) -> anyhow::Result<()> {
    if a.backend != "model" {
        bail!(
            "--backend {}: the verbs library serves only --backend model",
            a.backend
        );
    }
    let dir = soname_dir(&a.library()?)?;
    let mut path = OsString::from(&dir);
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH") {
        path.push(":");
        path.push(old);
    }
    let (prog, args) = a.program.split_first().expect("clap requires a program");
    let status = Command::new(prog)
        .args(args)
        .env("LD_LIBRARY_PATH", path)
        .envs(a.env())
        .status()
        .with_context(|| format!("cannot run {}", prog.to_string_lossy()));
    let _ = std::fs::remove_dir_all(&dir);
    let status = status?;
    if !status.success() {
        bail!("{} exited with {status}", prog.to_string_lossy());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Cli, Command as Cmd};
    use clap::Parser;

    fn parse(args: &[&str]) -> Result<ExecArgs, clap::Error> {
        let cli = Cli::try_parse_from(["rocenic", "exec"].iter().chain(args))?;
        match cli.command {
            Cmd::Exec(a) => Ok(a),
            other => panic!("parsed {other:?}"),
        }
    }

    #[test]
    fn options_become_the_library_environment() {
        let a = parse(&[
            "--wire",
            "udp:9000:9001",
            "--ip",
            "10.0.0.2",
            "--peer-mac",
            "02:00:00:00:00:01",
            "--",
            "ibv_rc_pingpong",
            "-g",
            "1",
        ])
        .unwrap();
        assert_eq!(a.program, ["ibv_rc_pingpong", "-g", "1"]);
        let env = a.env();
        assert!(env.contains(&("ROCENIC_WIRE", "udp:9000:9001".into())));
        assert!(env.contains(&("ROCENIC_IP", "10.0.0.2".into())));
        assert!(env.contains(&("ROCENIC_PEER_MAC", "02:00:00:00:00:01".into())));
        assert!(env.contains(&("ROCENIC_BACKEND", "model".into())));
    }

    #[test]
    fn a_program_is_required_and_bad_values_are_refused() {
        assert!(parse(&[]).is_err());
        assert!(parse(&["--wire", "udp:1", "--", "true"]).is_err());
        assert!(parse(&["--ip", "10.0.0", "--", "true"]).is_err());
        let a = parse(&["--backend", "rtl", "--", "true"]).unwrap();
        let e = run(&a, &mut Vec::new()).unwrap_err().to_string();
        assert!(e.contains("only --backend model"), "{e}");
        let a = parse(&["--lib", "/nonexistent/libibverbs.so", "--", "true"]).unwrap();
        let e = run(&a, &mut Vec::new()).unwrap_err().to_string();
        assert!(e.contains("not found"), "{e}");
    }
}
