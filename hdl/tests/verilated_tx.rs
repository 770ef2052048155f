//! The TX frame builder's generated Verilog, not just its RustHDL simulation, against the
//! reference: `hdr-build` built with Verilator and a small C++ bench, fed random records of
//! every opcode and their payloads under idle and backpressure, and every frame compared
//! byte for byte with `RoceRepr::emit` (`hdr_build::model::Record::frame`). Missing tools
//! fail the test with the install command.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use rocenic_hdl::bench::{frame_beats, random_payload_len, Rng};
use rocenic_hdl::gates::{write_top, INSTALL_HINT};
use rocenic_hdl::tx::hdr_build::model::Record;
use rocenic_hdl::tx::tx_arbiter::RECORD_FIELDS;
use rocenic_hdl::Design;
use rocenic_proto::wire::Opcode;

/// The C++ bench: reads the records (21 hex fields each), the payload beats and per cycle
/// (offer record, offer payload beat, MAC ready); holds what it offers until it transfers;
/// prints every MAC beat as 16 hex words, keep, last, and `tx_cnt`'s `frame bytes qpn`.
fn bench_cpp() -> String {
    let mut set = String::new();
    for (i, (name, _)) in RECORD_FIELDS.iter().enumerate() {
        let _ = writeln!(set, "            top->s_pkt_{name} = r.f[{i}];");
    }
    format!(
        r#"
#include <cstdint>
#include <cstdio>
#include <memory>
#include <vector>
#include "Vtop.h"
#include "verilated.h"

struct Rec {{ unsigned long long f[{n}]; }};
struct Beat {{ uint32_t w[16]; int last; }};

int main(int argc, char** argv) {{
    auto ctx = std::make_unique<VerilatedContext>();
    ctx->commandArgs(argc, argv);
    auto top = std::make_unique<Vtop>(ctx.get());
    size_t nrec = 0, nbeats = 0, ncycles = 0;
    if (scanf("%zu", &nrec) != 1) return 2;
    std::vector<Rec> recs(nrec);
    for (auto& r : recs)
        for (auto& f : r.f) if (scanf("%llx", &f) != 1) return 2;
    if (scanf("%zu", &nbeats) != 1) return 2;
    std::vector<Beat> beats(nbeats);
    for (auto& b : beats) {{
        for (auto& w : b.w) if (scanf("%x", &w) != 1) return 2;
        if (scanf("%d", &b.last) != 1) return 2;
    }}
    if (scanf("%zu", &ncycles) != 1) return 2;
    auto tick = [&]() {{ top->clock = 1; top->eval(); top->clock = 0; top->eval(); }};
    top->clock = 0; top->reset = 1; top->s_pkt_valid = 0; top->pay__024tvalid = 0;
    top->m_axis_tready = 0;
    top->eval();
    tick(); tick();
    top->reset = 0;
    size_t next_rec = 0, next_beat = 0, frames = 0;
    bool have_rec = false, have_beat = false;
    for (size_t c = 0; c < ncycles && frames < nrec; c++) {{
        int offer_rec, offer_pay, ready;
        if (scanf("%d %d %d", &offer_rec, &offer_pay, &ready) != 3) return 2;
        if (!have_rec && next_rec < nrec && offer_rec) {{
            const Rec& r = recs[next_rec++];
{set}            have_rec = true;
        }}
        if (!have_beat && next_beat < nbeats && offer_pay) {{
            const Beat& b = beats[next_beat++];
            for (int i = 0; i < 16; i++) top->pay__024tdata[i] = b.w[i];
            top->pay__024tlast = b.last;
            have_beat = true;
        }}
        top->s_pkt_valid = have_rec;
        top->pay__024tvalid = have_beat;
        top->m_axis_tready = ready;
        top->eval();
        if (top->m_err_payload || top->m_err_icrc) {{ printf("error pin at %zu\n", c); return 3; }}
        if (top->s_pkt_valid && top->s_pkt_ready) have_rec = false;
        if (top->pay__024tvalid && top->pay__024tready) have_beat = false;
        if (top->m_axis_tvalid && top->m_axis_tready) {{
            for (int i = 0; i < 16; i++) printf("%x ", (unsigned)top->m_axis_tdata[i]);
            printf("%llx %d %d %u %u\n", (unsigned long long)top->m_axis_tkeep,
                   (int)top->m_axis_tlast, (int)top->tx_cnt__024frame, (unsigned)top->tx_cnt__024bytes,
                   (unsigned)top->tx_cnt__024qpn);
            frames += top->m_axis_tlast;
        }}
        tick();
    }}
    top->final();
    printf("done %zu of %zu\n", frames, nrec);
    return frames == nrec ? 0 : 1;
}}
"#,
        n = RECORD_FIELDS.len()
    )
}

fn build(verilog: &str, dir: &Path) -> PathBuf {
    let _ = std::fs::remove_dir_all(dir);
    write_top(verilog, dir).expect("write top.v");
    std::fs::write(dir.join("bench.cpp"), bench_cpp()).expect("write bench.cpp");
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
        .unwrap_or_else(|e| match e.kind() {
            std::io::ErrorKind::NotFound => panic!("verilator not found: {INSTALL_HINT}"),
            _ => panic!("running verilator: {e}"),
        });
    assert!(
        out.status.success(),
        "verilator build failed ({INSTALL_HINT} if g++ or make is missing):\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    dir.join("obj").join("bench")
}

#[test]
fn verilated_hdr_build_matches_the_model() {
    let mut rng = Rng::new(0x7E57);
    let ops: Vec<Opcode> = Opcode::all().collect();
    let records: Vec<Record> = (0..150)
        .map(|i| {
            let len = if i % 25 == 0 {
                4096
            } else {
                random_payload_len(&mut rng) % 1200
            };
            Record::random(&mut rng, ops[i % ops.len()], len)
        })
        .collect();
    let mut input = format!("{}\n", records.len());
    for r in &records {
        for f in r.fields() {
            let _ = write!(input, "{f:x} ");
        }
        input.push('\n');
    }
    let beats: Vec<_> = records
        .iter()
        .filter(|r| !r.payload.is_empty())
        .flat_map(|r| frame_beats(&r.payload, || 0xA5))
        .collect();
    let _ = writeln!(input, "{}", beats.len());
    for b in &beats {
        for w in b.data.chunks(4) {
            let _ = write!(input, "{:x} ", u32::from_le_bytes(w.try_into().expect("4")));
        }
        let _ = writeln!(input, "{}", u8::from(b.last));
    }
    let cycles = 1000 + 4 * beats.len() + 40 * records.len();
    let _ = writeln!(input, "{cycles}");
    for c in 0..cycles {
        // Full rate for the first stretch, then idle source and backpressure.
        let (v, r) = if c < 300 { (100, 100) } else { (75, 70) };
        let _ = writeln!(
            input,
            "{} {} {}",
            u8::from(rng.percent(v)),
            u8::from(rng.percent(v)),
            u8::from(rng.percent(r))
        );
    }

    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("verilated")
        .join(format!("hdr-build-{}", std::process::id()));
    let bench = build(&Design::HdrBuild.verilog(), &dir);
    let mut child = Command::new(&bench)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run the bench");
    std::io::Write::write_all(child.stdin.as_mut().expect("stdin"), input.as_bytes())
        .expect("feed the bench");
    let out = child.wait_with_output().expect("bench output");
    let text = String::from_utf8(out.stdout).expect("utf-8");
    assert!(
        out.status.success(),
        "bench failed:\n{}",
        &text[text.len().saturating_sub(2000)..]
    );

    let mut frames: Vec<(Vec<u8>, u64, u32)> = vec![];
    let mut partial = vec![];
    for line in text.lines().filter(|l| !l.starts_with("done")) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let mut bytes = vec![];
        for w in &f[..16] {
            bytes.extend(u32::from_str_radix(w, 16).expect("word").to_le_bytes());
        }
        let keep = u64::from_str_radix(f[16], 16).expect("keep");
        let n = keep.trailing_ones() as usize;
        partial.extend_from_slice(&bytes[..n]);
        if f[17] == "1" {
            assert_eq!(f[18], "1", "tx_cnt.frame with tlast");
            frames.push((
                std::mem::take(&mut partial),
                f[19].parse().expect("bytes"),
                f[20].parse().expect("qpn"),
            ));
        }
    }
    assert_eq!(frames.len(), records.len());
    for (i, (r, (got, counted, qpn))) in records.iter().zip(&frames).enumerate() {
        let want = r.frame();
        assert!(
            *got == want,
            "frame {i} ({:?}, payload {}): first difference at {:?}",
            r.opcode,
            r.payload.len(),
            got.iter().zip(&want).position(|(a, b)| a != b)
        );
        assert_eq!(*counted, want.len() as u64, "tx_cnt.bytes of frame {i}");
        assert_eq!(*qpn, r.src_qp, "tx_cnt.qpn of frame {i}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
