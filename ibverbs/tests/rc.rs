//! Runs `tests/c/rc_test.c`, a C program built with gcc against Debian's verbs.h and
//! linked with `-libverbs`, on this library (first on `LD_LIBRARY_PATH`): two processes,
//! each with its own `rocenic0` (a model NIC), cabled by the UDP wire, doing RDMA WRITE,
//! SEND with immediate, inline SEND and RDMA READ, with every completion and byte
//! checked, and verbs the library does not serve checked for rdma-core's errno.

use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// `target/release` (or `debug`): where cargo put `libibverbs.so`.
fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().and_then(Path::parent).unwrap().to_path_buf()
}

/// A directory holding `libibverbs.so.1`, our library under its soname.
fn soname_dir() -> PathBuf {
    let lib = lib_dir().join("libibverbs.so");
    assert!(lib.exists(), "{} is not built", lib.display());
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
