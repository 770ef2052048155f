//! The generated Verilog of the RX front end (`rx-fifo`, its ICRC checker included) against
//! the reference: built with Verilator and a small C++ bench, streamed
//! good, damaged and MAC-flagged frames back to back with a consumer that stalls, and its
//! records, payloads and counter pulses checked with `rocenic_hdl::rx::rx_fifo::model`. This is
//! what catches a difference between RustHDL's simulation and the Verilog (the byte-swap
//! leaves and the RAM template are hand-written Verilog).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use rocenic_hdl::bench::{frame_beats, random_roce_frame, Rng};
use rocenic_hdl::gates::{write_top, INSTALL_HINT};
use rocenic_hdl::rx::rx_fifo::model::{fate, Fate, Reason, Record};
use rocenic_hdl::Design;
use rocenic_proto::wire::Opcode;

/// Drives `top` (an `RxFifo`) from stdin: the beats (with `tuser`), then per cycle whether
/// the MAC offers its next beat and whether the record and payload consumers are ready.
/// Prints `H <fields>` per record, `P <keep> <last> <16 words>` per payload beat, `R <bytes>`
/// per accepted frame and `D <reason>` per drop.
const BENCH_CPP: &str = r#"
#include <cstdint>
#include <cstdio>
#include <memory>
#include <vector>
#include "Vtop.h"
#include "verilated.h"

struct Beat { uint32_t w[16]; unsigned long long keep; int last; int user; };

int main(int argc, char** argv) {
    auto ctx = std::make_unique<VerilatedContext>();
    ctx->commandArgs(argc, argv);
    auto top = std::make_unique<Vtop>(ctx.get());
    size_t nbeats = 0, ncycles = 0;
    if (scanf("%zu", &nbeats) != 1) return 2;
    std::vector<Beat> beats(nbeats);
    for (auto& b : beats) {
        for (auto& w : b.w) if (scanf("%x", &w) != 1) return 2;
        if (scanf("%llx %d %d", &b.keep, &b.last, &b.user) != 3) return 2;
    }
    if (scanf("%zu", &ncycles) != 1) return 2;
    std::vector<int> offer(ncycles), hready(ncycles), pready(ncycles);
    for (size_t c = 0; c < ncycles; c++)
        if (scanf("%d %d %d", &offer[c], &hready[c], &pready[c]) != 3) return 2;

    auto tick = [&]() { top->clock = 1; top->eval(); top->clock = 0; top->eval(); };
    top->clock = 0; top->reset = 1; top->enable = 1; top->local_ip = 0;
    top->s_axis_tvalid = 0; top->hdr__024ready = 0; top->pay__024tready = 0;
    top->eval();
    tick(); tick();
    top->reset = 0;
    size_t next = 0;
    for (size_t c = 0; c < ncycles; c++) {
        bool send = next < nbeats && offer[c];
        if (send) {
            const Beat& b = beats[next++];
            for (int i = 0; i < 16; i++) top->s_axis_tdata[i] = b.w[i];
            top->s_axis_tkeep = b.keep;
            top->s_axis_tlast = b.last;
            top->s_axis_tuser = b.user && b.last;
        }
        top->s_axis_tvalid = send;
        top->hdr__024ready = hready[c];
        top->pay__024tready = pready[c];
        top->eval();
        if (top->hdr__024valid && top->hdr__024ready) {
            printf("H %x %d %d %d %d %d %x %x %d %x %llx %x %x %x %llx %x %x %x %x "
                   "%llx %x %llx %llx %llx %x %x %x %d %d %d %d %d %d %d\n",
                   top->hdr__024opcode, top->hdr__024solicited, top->hdr__024migreq,
                   top->hdr__024fecn, top->hdr__024becn, top->hdr__024pad, top->hdr__024pkey,
                   top->hdr__024dest_qp, top->hdr__024ack_req, top->hdr__024psn,
                   (unsigned long long)top->hdr__024src_mac, top->hdr__024src_ip,
                   top->hdr__024dst_ip, top->hdr__024udp_sport,
                   (unsigned long long)top->hdr__024reth_va, top->hdr__024reth_rkey,
                   top->hdr__024reth_dma_len, top->hdr__024aeth_syndrome, top->hdr__024aeth_msn,
                   (unsigned long long)top->hdr__024atomic_va, top->hdr__024atomic_rkey,
                   (unsigned long long)top->hdr__024atomic_swap,
                   (unsigned long long)top->hdr__024atomic_compare,
                   (unsigned long long)top->hdr__024atomic_ack_orig, top->hdr__024immdt,
                   top->hdr__024ieth, top->hdr__024payload_len, top->hdr__024has_reth,
                   top->hdr__024has_aeth, top->hdr__024has_atomic_eth,
                   top->hdr__024has_atomic_ack_eth, top->hdr__024has_immdt,
                   top->hdr__024has_ieth, top->hdr__024has_payload);
        }
        if (top->pay__024tvalid && top->pay__024tready) {
            printf("P %llx %d", (unsigned long long)top->pay__024tkeep,
                   (int)top->pay__024tlast);
            for (int i = 0; i < 16; i++) printf(" %x", top->pay__024tdata[i]);
            printf("\n");
        }
        if (top->m_rx_frame) printf("R %u\n", (unsigned)top->m_rx_bytes);
        if (top->m_drop_mac) printf("D mac\n");
        if (top->m_drop_malformed) printf("D malformed\n");
        if (top->m_drop_icrc) printf("D icrc\n");
        if (top->m_drop_ip) printf("D ip\n");
        if (top->m_drop_overflow) printf("D overflow\n");
        tick();
    }
    top->final();
    return 0;
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

fn hex(s: &str) -> u64 {
    u64::from_str_radix(s, 16).expect("hex")
}

fn record(f: &[&str]) -> Record {
    let flag = |i: usize| f[i] == "1";
    let mac = hex(f[10]).to_be_bytes();
    Record {
        opcode: hex(f[0]) as u8,
        solicited: flag(1),
        migreq: flag(2),
        fecn: flag(3),
        becn: flag(4),
        pad: f[5].parse().expect("pad"),
        pkey: hex(f[6]) as u16,
        dest_qp: hex(f[7]) as u32,
        ack_req: flag(8),
        psn: hex(f[9]) as u32,
        src_mac: mac[2..].try_into().expect("6"),
        src_ip: (hex(f[11]) as u32).to_be_bytes(),
        dst_ip: (hex(f[12]) as u32).to_be_bytes(),
        udp_sport: hex(f[13]) as u16,
        reth: flag(27).then(|| (hex(f[14]), hex(f[15]) as u32, hex(f[16]) as u32)),
        aeth: flag(28).then(|| (hex(f[17]) as u8, hex(f[18]) as u32)),
        atomic: flag(29).then(|| (hex(f[19]), hex(f[20]) as u32, hex(f[21]), hex(f[22]))),
        atomic_ack: flag(30).then(|| hex(f[23])),
        immdt: flag(31).then(|| hex(f[24]) as u32),
        ieth: flag(32).then(|| hex(f[25]) as u32),
        payload_len: hex(f[26]) as usize,
        has_payload: flag(33),
    }
}

#[test]
fn verilated_rx_front_end_matches_the_reference() {
    let mut rng = Rng::new(0x5EED);
    let ops: Vec<Opcode> = Opcode::all().collect();
    // (frame, tuser): every opcode twice, some payloads past a beat, a fifth damaged.
    let mut frames: Vec<(Vec<u8>, bool)> = vec![];
    for i in 0..2 * ops.len() {
        let len = match i % 3 {
            0 => rng.below(8) as usize,
            1 => rng.below(200) as usize,
            _ => 1000 + rng.below(200) as usize,
        };
        let mut f = random_roce_frame(&mut rng, ops[i % ops.len()], len);
        if f.len() < 60 {
            f.resize(60, 0);
        }
        let tuser = rng.percent(5);
        if rng.percent(20) {
            let at = rng.below(f.len() as u64) as usize;
            f[at] ^= 1 << rng.below(8);
        }
        frames.push((f, tuser));
    }
    let beats: Vec<_> = frames
        .iter()
        .flat_map(|(f, u)| frame_beats(f, || 0x5A).into_iter().map(move |b| (b, *u)))
        .collect();
    let mut input = format!("{}\n", beats.len());
    for (b, u) in &beats {
        for w in b.data.chunks(4) {
            let _ = write!(input, "{:x} ", u32::from_le_bytes(w.try_into().expect("4")));
        }
        let _ = writeln!(input, "{:x} {} {}", b.keep, u8::from(b.last), u8::from(*u));
    }
    let cycles = 200 + 4 * beats.len();
    let _ = writeln!(input, "{cycles}");
    for _ in 0..cycles {
        let _ = writeln!(
            input,
            "{} {} {}",
            u8::from(rng.percent(90)),
            u8::from(rng.percent(60)),
            u8::from(rng.percent(60))
        );
    }

    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("verilated")
        .join(format!("rx-fifo-{}", std::process::id()));
    let bench = build(&Design::RxFifo.verilog(), &dir);
    let mut child = Command::new(&bench)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run the bench");
    std::io::Write::write_all(child.stdin.as_mut().expect("stdin"), input.as_bytes())
        .expect("feed the bench");
    let out = child.wait_with_output().expect("bench output");
    let text = String::from_utf8(out.stdout).expect("utf-8");
    assert!(out.status.success(), "bench failed:\n{text}");

    let mut records = vec![];
    let mut payloads: Vec<Vec<u8>> = vec![];
    let mut payload = vec![];
    let mut counts: HashMap<&str, usize> = HashMap::new();
    let mut rx_bytes = 0u64;
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f[0] {
            "H" => records.push(record(&f[1..])),
            "P" => {
                let keep = hex(f[1]);
                for (i, w) in f[3..19].iter().enumerate() {
                    for (j, byte) in (hex(w) as u32).to_le_bytes().into_iter().enumerate() {
                        if keep >> (4 * i + j) & 1 == 1 {
                            payload.push(byte);
                        }
                    }
                }
                if f[2] == "1" {
                    payloads.push(std::mem::take(&mut payload));
                }
            }
            "R" => {
                *counts.entry("rx").or_default() += 1;
                rx_bytes += f[1].parse::<u64>().expect("bytes");
            }
            "D" => *counts.entry(f[1]).or_default() += 1,
            other => panic!("bench line {other}"),
        }
    }

    let mut want_records = vec![];
    let mut want_payloads = vec![];
    let mut want_counts: HashMap<&str, usize> = HashMap::new();
    let mut want_bytes = 0u64;
    for (f, u) in &frames {
        match fate(f, *u, 0, true) {
            Fate::Accept(r, p) => {
                want_records.push(r);
                if !p.is_empty() {
                    want_payloads.push(p);
                }
                *want_counts.entry("rx").or_default() += 1;
                want_bytes += f.len() as u64;
            }
            Fate::Drop(reason) => {
                let name = match reason {
                    Reason::Mac => "mac",
                    Reason::Malformed => "malformed",
                    Reason::Icrc => "icrc",
                    Reason::Ip => "ip",
                    Reason::Overflow => "overflow",
                };
                *want_counts.entry(name).or_default() += 1;
            }
            Fate::Ignored => {}
        }
    }
    assert!(want_counts.len() >= 3, "a mix of fates: {want_counts:?}");
    assert!(
        want_payloads.len() >= 20,
        "enough delivered frames to compare"
    );
    assert_eq!(records.len(), want_records.len(), "records");
    for (k, (g, w)) in records.iter().zip(&want_records).enumerate() {
        assert_eq!(g, w, "record {k}");
    }
    assert_eq!(payloads.len(), want_payloads.len(), "payloads");
    for (k, (g, w)) in payloads.iter().zip(&want_payloads).enumerate() {
        assert!(g == w, "payload {k}: {} bytes, want {}", g.len(), w.len());
    }
    assert_eq!(counts, want_counts, "counter pulses");
    assert_eq!(rx_bytes, want_bytes, "rx bytes");
    let _ = std::fs::remove_dir_all(&dir);
}
