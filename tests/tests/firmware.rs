//! The board flow's checks that run without Vivado or a board (firmware/u55c):
//!
//! - `make -C firmware/u55c lint`: Verilator `-Wall` over the U55C wrapper, the shared RTL
//!   (async FIFO, reset synchroniser, BAR0 AXI-Lite bridge, XDMA and CMAC adapters), the
//!   vendor-IP lint stubs and the generated engine (generated in-process and given to make,
//!   which checks it has the contract's ports);
//! - `make -C firmware/u55c test`: Verilator benches of the async FIFO (random clock ratios,
//!   random valid/ready, scoreboard of every beat, the board's 250/322 MHz ratios), of the
//!   XDMA adapter against a model of XDMA's bypass and stream channels, of the BAR0
//!   AXI4-Lite bridge against a random AXI4-Lite master and a register-port model, and of
//!   the CMAC bridge with the board's two clocks and a link going down and up;
//! - the contract reader (`firmware/common/scripts/contract_stub.py`) itself: it accepts a
//!   stub it generated and refuses a `top` with a port missing or of the wrong width.
//!
//! They need make, verilator, g++ and python3 (`scripts/install-deps.sh rtl`); without them
//! they fail with that hint, never skip.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Build directory for one test, per process so concurrent runs do not share files.
fn build_dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("firmware")
        .join(format!("{name}-{}", std::process::id()))
}

fn need(tool: &str, probe: &[&str]) {
    let ok = Command::new(tool)
        .args(probe)
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    assert!(
        ok,
        "{tool} is missing (or `{tool} {}` fails): install it with scripts/install-deps.sh rtl",
        probe.join(" ")
    );
}

fn python() -> &'static str {
    if Path::new("/usr/bin/python3").exists() {
        "/usr/bin/python3"
    } else {
        "python3"
    }
}

fn show(out: &Output) -> String {
    format!(
        "--- stdout\n{}\n--- stderr\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn make(target: &str, build: &Path, vars: &[String]) -> Output {
    need("make", &["--version"]);
    need("verilator", &["--version"]);
    need("g++", &["--version"]);
    need(python(), &["--version"]);
    Command::new("make")
        .arg("-C")
        .arg(repo_root().join("firmware/u55c"))
        .arg(target)
        .arg(format!("BUILD={}", build.display()))
        .args(vars)
        .output()
        .expect("run make")
}

#[test]
fn u55c_wrapper_lints_clean_against_the_engine_contract() {
    let build = build_dir("lint");
    // The engine is generated here, in-process, and handed to make as `ENGINE_V` (make then
    // checks it against the contract as it would the generator's output): the Makefile's own
    // `cargo run -p rocenic-hdl` would rebuild the hdl crate under `-p`'s feature set, minutes
    // of a cold CI run for the same Verilog.
    let engine = build.join("engine-src/top.v");
    std::fs::create_dir_all(engine.parent().unwrap()).unwrap();
    std::fs::write(&engine, rocenic_sim::rtl_device::engine_verilog()).unwrap();
    let out = make("lint", &build, &[format!("ENGINE_V={}", engine.display())]);
    let log = show(&out);
    assert!(out.status.success(), "make lint failed\n{log}");
    let kind = std::fs::read_to_string(build.join("engine/KIND")).unwrap();
    assert_eq!(kind.trim(), "given", "{log}");
    println!("firmware lint: clean, engine = the generated engine");
    assert!(log.contains("lint: clean"), "{log}");
    let _ = std::fs::remove_dir_all(build);
}

#[test]
fn async_fifo_and_adapter_benches_pass() {
    // A fixed directory, kept: make rebuilds the Verilated models only when the RTL, a bench
    // or a Makefile changed (compiling them is most of this test's time).
    let build = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("firmware/tb-cache");
    let out = make("test", &build, &[]);
    let log = show(&out);
    assert!(out.status.success(), "make test failed\n{log}");
    assert!(log.contains("async FIFO: all passed"), "{log}");
    assert!(
        log.contains("xdma adapter: ") && log.contains(", 0 failures"),
        "{log}"
    );
    assert!(log.contains("axil regport: "), "{log}");
    assert!(log.contains("all whole and in order"), "{log}");
    assert!(!log.contains("FAIL"), "{log}");
    for line in log.lines().filter(|l| {
        l.starts_with("random runs")
            || l.contains("MHz")
            || l.starts_with("xdma adapter")
            || l.starts_with("axil regport")
            || l.starts_with("cmac bridge")
    }) {
        println!("{line}");
    }
}

#[test]
fn contract_reader_accepts_its_stub_and_refuses_a_wrong_top() {
    need(python(), &["--version"]);
    let root = repo_root();
    let script = root.join("firmware/common/scripts/contract_stub.py");
    let doc = root.join("docs/rtl-architecture.md");
    let dir = build_dir("contract");
    std::fs::create_dir_all(&dir).unwrap();
    let run = |args: &[&std::ffi::OsStr]| {
        Command::new(python())
            .arg(&script)
            .arg(&doc)
            .args(args)
            .output()
            .expect("run contract_stub.py")
    };
    let stub = run(&["--stub".as_ref()]);
    assert!(stub.status.success(), "{}", show(&stub));
    let text = String::from_utf8(stub.stdout).unwrap();
    // Spot checks against the table: widths and directions as the contract states them.
    for decl in [
        "input  wire [16:0] reg_addr",
        "output wire [7:0] dma_rd_req_tag",
        "input  wire [511:0] dma_rd_resp_data",
        "output wire [63:0] dma_wr_data_keep",
        "input  wire mac_tx_tready",
        "input  wire mac_rx_tuser",
    ] {
        assert!(text.contains(decl), "stub lacks {decl:?}:\n{text}");
    }
    let good = dir.join("top.v");
    std::fs::write(&good, &text).unwrap();
    let ok = run(&["--check".as_ref(), good.as_os_str()]);
    assert!(ok.status.success(), "{}", show(&ok));

    // A top missing one port, and one with a port of the wrong width, are refused.
    let missing = dir.join("missing.v");
    std::fs::write(
        &missing,
        text.replace("input  wire mac_rx_tuser", "input  wire unrelated"),
    )
    .unwrap();
    let bad = run(&["--check".as_ref(), missing.as_os_str()]);
    assert!(!bad.status.success(), "a top without mac_rx_tuser passed");
    let narrow = dir.join("narrow.v");
    std::fs::write(&narrow, text.replace("[16:0] reg_addr", "[15:0] reg_addr")).unwrap();
    let bad = run(&["--check".as_ref(), narrow.as_os_str()]);
    assert!(!bad.status.success(), "a 16-bit reg_addr passed");
    let _ = std::fs::remove_dir_all(dir);
}
