//! External oracles: the frames of a model run and of an RTL run, judged by tools we did
//! not write.
//!
//! `rocenic demo --pcap F` runs every operation kind; then `tests/oracles/check_pcap.py`
//! checks every frame with scapy (IPv4 checksum, ICRC via `BTH.compute_icrc`) and tshark
//! (no malformed frame, no expert warning, every field equal to scapy's decode), and
//! compares tshark's decode with the expectation we write from our own parse of the same
//! frames. These tests need tshark and Debian's python3-scapy (`scripts/install-deps.sh
//! oracles`); without them they fail, never skip.

use clap::Parser;
use rocenic_proto::wire::{Opcode, RoceRepr};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn scratch(name: &str) -> PathBuf {
    let dir = repo_root().join("target").join("oracle-tests");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// One JSON object per frame, as `check_pcap.py --expect` wants it, from our own decode.
fn expectation(frames: &[(u64, Vec<u8>)]) -> String {
    let mut out = String::new();
    for (_, f) in frames {
        let (r, payload) = RoceRepr::parse(f).expect("every captured frame parses");
        let pad = (4 - payload.len() % 4) % 4;
        let mut o = json!({
            "opcode": u8::from(r.bth.opcode),
            "psn": u32::from(r.bth.psn),
            "dest_qp": r.bth.dest_qp,
            "ack_req": r.bth.ack_req,
            "pad": pad,
            "payload_len": payload.len(),
        });
        let m = o.as_object_mut().unwrap();
        let e = &r.ext;
        if let Some(x) = e.reth {
            m.insert(
                "reth".into(),
                json!({"va": x.va, "rkey": x.rkey, "len": x.dma_len}),
            );
        }
        if let Some(x) = e.aeth {
            m.insert(
                "aeth".into(),
                json!({"syndrome": u8::from(x.syndrome), "msn": x.msn}),
            );
        }
        if let Some(x) = e.atomic_eth {
            m.insert(
                "atomic_eth".into(),
                json!({"va": x.va, "rkey": x.rkey, "swap_add": x.swap_add, "compare": x.compare}),
            );
        }
        if let Some(x) = e.atomic_ack_eth {
            m.insert("atomic_ack".into(), json!({"orig": x.orig_remote_data}));
        }
        if let Some(x) = e.immdt {
            m.insert("immdt".into(), Value::from(x));
        }
        if let Some(x) = e.ieth {
            m.insert("ieth".into(), Value::from(x));
        }
        out.push_str(&o.to_string());
        out.push('\n');
    }
    out
}

fn check_pcap(pcap: &Path, extra: &[&str]) -> std::process::Output {
    Command::new("/usr/bin/python3")
        .arg(repo_root().join("tests/oracles/check_pcap.py"))
        .arg(pcap)
        .args(extra)
        .output()
        .expect("/usr/bin/python3 must exist: run scripts/install-deps.sh oracles")
}

/// Every opcode the demo must put on the wire.
const REQUIRED: &str = "0x00,0x01,0x02,0x03,0x04,0x05,0x06,0x07,0x08,0x09,0x0a,0x0b,0x0c,\
0x0d,0x0e,0x0f,0x10,0x11,0x12,0x13,0x14,0x16,0x17";

#[test]
fn demo_capture_passes_scapy_and_tshark() {
    demo_passes_the_oracles("demo.pcap", &[]);
}

/// The demo on two Verilated engines: every operation kind at every PMTU, up to 8 KiB
/// (the RTL simulates thousands of cycles a second, not millions), with the same oracles.
/// Needs Verilator (`scripts/install-deps.sh rtl`); fails without it.
#[test]
fn rtl_demo_capture_passes_scapy_and_tshark() {
    demo_passes_the_oracles("rtl-demo.pcap", &["--backend", "rtl", "--max-size", "8192"]);
}

/// Runs `rocenic demo --pcap F ARGS` (it checks every completion and byte itself) and
/// holds its capture to the oracles: every opcode the demo must send, scapy's and
/// tshark's checks, and tshark's decode equal to ours.
fn demo_passes_the_oracles(name: &str, args: &[&str]) {
    let pcap = scratch(name);
    let mut argv = vec!["rocenic", "demo", "--pcap", pcap.to_str().unwrap()];
    argv.extend_from_slice(args);
    let cli = rocenic_cli::Cli::parse_from(argv);
    let mut out = Vec::new();
    rocenic_cli::run(cli, &mut out).expect("the demo passes");
    println!("{}", String::from_utf8_lossy(&out));
    let frames = rocenic_sim::read_pcap_file(&pcap).unwrap();
    assert!(
        frames.len() > 500,
        "the demo captured {} frames",
        frames.len()
    );
    let opcodes: std::collections::BTreeSet<u8> = frames
        .iter()
        .map(|(_, f)| u8::from(RoceRepr::parse(f).unwrap().0.bth.opcode))
        .collect();
    assert!(opcodes.contains(&u8::from(Opcode::Acknowledge)));
    let expect = scratch(&format!("{name}.expect.jsonl"));
    std::fs::write(&expect, expectation(&frames)).unwrap();
    let res = check_pcap(
        &pcap,
        &[
            "--expect",
            expect.to_str().unwrap(),
            "--require-opcodes",
            REQUIRED,
        ],
    );
    let stdout = String::from_utf8_lossy(&res.stdout);
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert!(
        res.status.success(),
        "the oracles rejected {}:\n{stdout}\n{stderr}",
        pcap.display()
    );
    assert!(
        stdout.contains(&format!("{} frames checked", frames.len())),
        "{stdout}"
    );
    assert!(stdout.contains(" 0 problems"), "{stdout}");
}

#[test]
fn oracles_catch_a_corrupted_frame() {
    // The same path must fail when one payload bit of one frame flips: the oracle can fail.
    let pcap = scratch("corrupt.pcap");
    let mut frames = {
        let src = scratch("small.pcap");
        let cli =
            rocenic_cli::Cli::parse_from(["rocenic", "demo", "--pcap", src.to_str().unwrap()]);
        rocenic_cli::run(cli, &mut Vec::new()).expect("the demo passes");
        rocenic_sim::read_pcap_file(&src).unwrap()
    };
    frames.truncate(200);
    let victim = frames
        .iter()
        .position(|(_, f)| f.len() > 100)
        .expect("a frame with payload");
    frames[victim].1[80] ^= 0x10;
    let mut tap = rocenic_sim::PcapTap::create(&pcap).unwrap();
    for (cycle, f) in &frames {
        tap.record(*cycle, f).unwrap();
    }
    tap.finish().unwrap();
    let res = check_pcap(&pcap, &[]);
    let stdout = String::from_utf8_lossy(&res.stdout);
    assert_eq!(res.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(&format!("frame {}:", victim + 1)) && stdout.contains("ICRC"),
        "{stdout}"
    );
}
