//! Runs `tests/c/rc_test.c`, a C program built with gcc against Debian's verbs.h and
//! linked with `-libverbs`, on this library (first on `LD_LIBRARY_PATH`): two processes,
//! each with its own `rocenic0` (a model NIC), cabled by the UDP wire, doing RDMA WRITE,
//! SEND with immediate, inline SEND and RDMA READ, with every completion and byte
//! checked, and verbs the library does not serve checked for rdma-core's errno.

use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// `libibverbs.so` as cargo built it for this test. The library is also an rlib, so cargo
/// builds it (both crate types in one rustc run, with this test's features) before this
/// test, every time; the shared library lands beside the test binary in `deps/`.
fn lib_path() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let lib = exe.parent().unwrap().join("libibverbs.so");
    assert!(
        lib.exists(),
        "{} is not built: run this test through `cargo test`",
        lib.display()
    );
    lib
}

/// A directory holding `libibverbs.so.1`, our library under its soname.
fn soname_dir() -> PathBuf {
    let lib = lib_path();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ibverbs-lib");
    std::fs::create_dir_all(&dir).unwrap();
    let link = dir.join("libibverbs.so.1");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&lib, &link).unwrap();
    dir
}

fn compile(name: &str) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/c/{name}.c"));
    let exe = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let out = Command::new("gcc")
        .args(["-O1", "-Wall", "-Werror", "-o"])
        .arg(&exe)
        .arg(&src)
        .arg("-libverbs")
        .output()
        .expect("gcc is needed (apt-get install gcc)");
    assert!(
        out.status.success(),
        "gcc {} failed (libibverbs-dev installed?):\n{}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// Two free UDP ports on loopback.
fn two_ports() -> (u16, u16) {
    let a = UdpSocket::bind("127.0.0.1:0").unwrap();
    let b = UdpSocket::bind("127.0.0.1:0").unwrap();
    (
        a.local_addr().unwrap().port(),
        b.local_addr().unwrap().port(),
    )
}

#[test]
fn c_program_does_rc_write_send_read_on_rocenic0() {
    let exe = compile("rc_test");
    let dir = soname_dir();
    // The program resolves libibverbs.so.1 to ours, not the system's.
    let ldd = Command::new("ldd")
        .arg(&exe)
        .env("LD_LIBRARY_PATH", &dir)
        .output()
        .unwrap();
    let ldd = String::from_utf8_lossy(&ldd.stdout).to_string();
    let line = ldd
        .lines()
        .find(|l| l.contains("libibverbs.so.1"))
        .unwrap_or_default();
    assert!(line.contains(dir.to_str().unwrap()), "ldd: {ldd}");
    let (a, b) = two_ports();
    let start = Instant::now();
    let out = Command::new(&exe)
        .args([a.to_string(), b.to_string()])
        .env("LD_LIBRARY_PATH", &dir)
        .env("LD_BIND_NOW", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "rc_test failed:\n{stdout}\n{stderr}");
    assert_eq!(stdout, "device rocenic0\nOK\n", "stderr: {stderr}");
    eprintln!("rc_test: {:.2?}", start.elapsed());
}

/// The `(version, symbol)` pairs an ELF file exports (`objdump -T`, defined symbols) or
/// imports from libibverbs (undefined ones).
fn dynamic_symbols(file: &Path, undefined: bool) -> Vec<(String, String)> {
    let out = Command::new("objdump")
        .arg("-T")
        .arg(file)
        .output()
        .expect("objdump is needed (apt-get install binutils)");
    assert!(out.status.success(), "objdump -T {}", file.display());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains("*UND*") == undefined && l.contains("ibv"))
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (ver, sym) = (f.get(f.len().wrapping_sub(2))?, f.last()?);
            Some((ver.trim_matches(['(', ')']).to_string(), sym.to_string()))
        })
        .collect()
}

/// Debian's `ibv_rc_pingpong` (ibverbs-utils), unmodified.
fn rc_pingpong() -> PathBuf {
    let p = PathBuf::from("/usr/bin/ibv_rc_pingpong");
    assert!(
        p.exists(),
        "ibv_rc_pingpong is needed: apt-get install ibverbs-utils (scripts/install-deps.sh verbs)"
    );
    p
}

#[test]
fn every_verb_ibv_rc_pingpong_imports_is_exported_with_its_version() {
    let ours = dynamic_symbols(&lib_path(), false);
    let imports = dynamic_symbols(&rc_pingpong(), true);
    assert!(imports.len() > 20, "objdump found only {imports:?}");
    let missing: Vec<_> = imports.into_iter().filter(|s| !ours.contains(s)).collect();
    assert!(missing.is_empty(), "not exported: {missing:?}");
}

#[test]
fn debian_ibv_rc_pingpong_runs_on_rocenic0_as_server_and_client() {
    let exe = rc_pingpong();
    let dir = soname_dir();
    let (a, b) = two_ports();
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = tcp.local_addr().unwrap().port().to_string();
    drop(tcp);
    let side = |local: u16, peer: u16, n: u8| {
        let mut c = Command::new(&exe);
        c.args(["-d", "rocenic0", "-g", "1", "-n", "50", "-e", "-p", &port])
            .env("LD_LIBRARY_PATH", &dir)
            .env("LD_BIND_NOW", "1")
            .env("ROCENIC_WIRE", format!("udp:{local}:{peer}"))
            .env("ROCENIC_MAC", format!("02:00:00:00:00:0{n}"))
            .env("ROCENIC_PEER_MAC", format!("02:00:00:00:00:0{}", 3 - n))
            .env("ROCENIC_IP", format!("10.0.0.{n}"))
            .env("ROCENIC_EVENT_TIMEOUT_MS", "20000");
        c
    };
    let start = Instant::now();
    let server = side(a, b, 1).output_in_background();
    // The client retries until the server listens (ibv_rc_pingpong connects once).
    let mut client = None;
    for _ in 0..50 {
        let out = side(b, a, 2).arg("127.0.0.1").output().unwrap();
        let text = String::from_utf8_lossy(&out.stderr).to_string();
        if out.status.success() || !text.contains("Couldn't connect") {
            client = Some(out);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let client = client.expect("the server never listened");
    let server = server.join().unwrap();
    for (who, out) in [("client", &client), ("server", &server)] {
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("50 iters in"),
            "{who} failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    eprintln!("ibv_rc_pingpong pair: {:.2?}", start.elapsed());
}

/// Runs a command on a thread, for a server beside its client.
trait Background {
    fn output_in_background(self) -> std::thread::JoinHandle<std::process::Output>;
}

impl Background for Command {
    fn output_in_background(mut self) -> std::thread::JoinHandle<std::process::Output> {
        std::thread::spawn(move || self.output().unwrap())
    }
}
