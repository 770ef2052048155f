//! The generated Verilog, not just the RustHDL model, against the reference: every design is
//! built with Verilator and a small C++ bench, streamed random frames under idle and
//! backpressure, and its results checked with `rocenic_hdl::icrc::model`. This is what
//! catches a difference between a block's Rust simulation and its Verilog (the GF(2)
//! leaves are hand-written Verilog; RustHDL translates the rest). Missing tools fail the
//! test with the install command.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use rocenic_hdl::bench::{frame_beats, random_payload_len, random_roce_frame, Rng};
use rocenic_hdl::gates::{write_top, INSTALL_HINT};
use rocenic_hdl::icrc::model::{self, Outcome, IP_AT};
use rocenic_hdl::icrc::IcrcMode;
use rocenic_hdl::Design;
use rocenic_proto::wire::{compute_icrc, Opcode};

/// Drives `top` (an `Icrc`) from stdin: the beats, then per cycle whether the source offers
/// its next beat and whether the sink is ready; prints `crc ok len_err cycle` per result.
/// The source holds a beat until it transfers, as AXI-Stream requires.
const BENCH_CPP: &str = r#"
#include <cstdint>
#include <cstdio>
#include <memory>
#include <vector>
#include "Vtop.h"
#include "verilated.h"

struct Beat { uint32_t w[16]; unsigned long long keep; int last; };

int main(int argc, char** argv) {
    auto ctx = std::make_unique<VerilatedContext>();
    ctx->commandArgs(argc, argv);
    auto top = std::make_unique<Vtop>(ctx.get());
    size_t nbeats = 0, ncycles = 0, frames = 0;
    if (scanf("%zu", &nbeats) != 1) return 2;
    std::vector<Beat> beats(nbeats);
    for (auto& b : beats) {
        for (auto& w : b.w) if (scanf("%x", &w) != 1) return 2;
        if (scanf("%llx %d", &b.keep, &b.last) != 2) return 2;
        frames += b.last;
    }
    if (scanf("%zu", &ncycles) != 1) return 2;
    std::vector<int> offer(ncycles), ready(ncycles);
    for (size_t c = 0; c < ncycles; c++)
        if (scanf("%d %d", &offer[c], &ready[c]) != 2) return 2;

    auto tick = [&]() { top->clock = 1; top->eval(); top->clock = 0; top->eval(); };
    top->clock = 0; top->reset = 1; top->s_axis_tvalid = 0; top->m_icrc_ready = 0;
    top->eval();
    tick(); tick();
    top->reset = 0;
    size_t next = 0, results = 0;
    bool have = false;
    for (size_t c = 0; c < ncycles && results < frames; c++) {
        if (!have && next < nbeats && offer[c]) {
            const Beat& b = beats[next++];
            for (int i = 0; i < 16; i++) top->s_axis_tdata[i] = b.w[i];
            top->s_axis_tkeep = b.keep;
            top->s_axis_tlast = b.last;
            have = true;
        }
        top->s_axis_tvalid = have;
        top->m_icrc_ready = ready[c];
        top->eval();
        if (top->s_axis_tvalid && top->s_axis_tready) have = false;
        if (top->m_icrc_valid && top->m_icrc_ready) {
            printf("%08x %d %d %zu\n", (unsigned)top->m_icrc_crc, (int)top->m_icrc_ok,
                   (int)top->m_icrc_len_err, c);
            results++;
        }
        tick();
    }
    top->final();
    printf("done %zu of %zu\n", results, frames);
    return results == frames ? 0 : 1;
}
"#;

fn tool_error(tool: &str, e: std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => format!("{tool} not found: {INSTALL_HINT}"),
        _ => format!("running {tool}: {e}"),
    }
}

/// Builds `verilog` with Verilator and the bench into `dir`; returns the executable.
fn build(verilog: &str, dir: &Path) -> PathBuf {
    let _ = std::fs::remove_dir_all(dir);
    write_top(verilog, dir).expect("write top.v");
    std::fs::write(dir.join("bench.cpp"), BENCH_CPP).expect("write bench.cpp");
    let out = Command::new("verilator")
        .args([
            "--cc",
            "--exe",
            "--build",
            "-j",
            "2",
            "--top-module",
            "top",
            "-Mdir",
            "obj",
            "-o",
            "bench",
            "-CFLAGS",
            "-O1",
            "top.v",
            "bench.cpp",
        ])
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("{}", tool_error("verilator", e)));
    assert!(
        out.status.success(),
        "verilator build failed ({INSTALL_HINT} if g++ or make is missing):\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    dir.join("obj").join("bench")
}

/// Streams `frames` through the built bench and returns each frame's result.
fn stream(bench: &Path, frames: &[Vec<u8>], rng: &mut Rng) -> Vec<Outcome> {
    let beats: Vec<_> = frames
        .iter()
        .flat_map(|f| frame_beats(f, || 0x5A))
        .collect();
    let mut input = format!("{}\n", beats.len());
    for b in &beats {
        for w in b.data.chunks(4) {
            let _ = write!(input, "{:x} ", u32::from_le_bytes(w.try_into().expect("4")));
        }
        let _ = writeln!(input, "{:x} {}", b.keep, u8::from(b.last));
    }
    let cycles = 100 + 4 * beats.len() + 20 * frames.len();
    let _ = writeln!(input, "{cycles}");
    for _ in 0..cycles {
        let _ = writeln!(
            input,
            "{} {}",
            u8::from(rng.percent(80)),
            u8::from(rng.percent(60))
        );
    }
    let mut child = Command::new(bench)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run the bench");
    std::io::Write::write_all(child.stdin.as_mut().expect("stdin"), input.as_bytes())
        .expect("feed the bench");
    let out = child.wait_with_output().expect("bench output");
    let text = String::from_utf8(out.stdout).expect("utf-8");
    assert!(out.status.success(), "bench failed:\n{text}");
    text.lines()
        .filter(|l| !l.starts_with("done"))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Outcome {
                crc: u32::from_str_radix(f[0], 16).expect("crc"),
                ok: f[1] == "1",
                len_err: f[2] == "1",
            }
        })
        .collect()
}

/// Frames of every kind the RustHDL benches use: RoCE frames of every opcode (received
/// as a MAC hands them over in Check mode), any total length, truncated frames.
fn frames(mode: IcrcMode, rng: &mut Rng) -> Vec<Vec<u8>> {
    let ops: Vec<Opcode> = Opcode::all().collect();
    let mut frames = vec![];
    for i in 0..120 {
        let len = random_payload_len(rng);
        let f = random_roce_frame(rng, ops[i % ops.len()], len);
        frames.push(match mode {
            IcrcMode::Generate => f,
            IcrcMode::Check => model::received(rng, f),
        });
    }
    for i in 0..64 {
        let tl = 44 + i;
        let mut f = rng.bytes(IP_AT + tl);
        f[IP_AT + 2..IP_AT + 4].copy_from_slice(&(tl as u16).to_be_bytes());
        if rng.percent(50) {
            let icrc = compute_icrc(&f[IP_AT..IP_AT + tl - 4]);
            f[IP_AT + tl - 4..].copy_from_slice(&icrc.to_le_bytes());
        }
        frames.push(f);
    }
    for _ in 0..8 {
        let mut f = random_roce_frame(rng, Opcode::SendOnly, 300);
        let keep = 1 + rng.below(f.len() as u64 - 1) as usize;
        f.truncate(keep);
        frames.push(f);
    }
    frames
}

fn verilated_matches_reference(design: Design, mode: IcrcMode) {
    // One directory per process: concurrent test runs in one target directory must not
    // build over each other. Removed when the test passes.
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("verilated")
        .join(format!("{}-{}", design.name(), std::process::id()));
    let bench = build(&design.verilog(), &dir);
    let mut rng = Rng::new(0xC0FFEE);
    let frames = frames(mode, &mut rng);
    let got = stream(&bench, &frames, &mut rng);
    assert_eq!(got.len(), frames.len(), "one result per frame");
    for (i, (frame, outcome)) in frames.iter().zip(got).enumerate() {
        if let Err(e) = model::check(mode, frame, outcome) {
            panic!("{}: frame {i}: {e}", design.name());
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn verilated_icrc_check_matches_the_reference() {
    verilated_matches_reference(Design::IcrcCheck, IcrcMode::Check);
}

#[test]
fn verilated_icrc_generate_matches_the_reference() {
    verilated_matches_reference(Design::IcrcGenerate, IcrcMode::Generate);
}
