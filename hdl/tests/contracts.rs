//! The host ABI's codes come from `rocenic_proto`, never retyped in the RTL: a constant
//! named for a WR or WC opcode, a WC status, a QP state or a path MTU is set from proto's
//! enums, not from a bare number (the WQE and CQE offsets are held by compile-time
//! assertions in `wqe_fetch.rs` and taken from `proto::abi::cqe::field` in `cqe_beat.rs`).

use std::path::Path;

/// Names of `Constant` fields that carry an ABI code.
const ABI_NAMES: [&str; 7] = [
    "k_op_", "k_wc_", "k_st_", "k_mtu", "k_rts", "k_sqd", "k_qps_",
];

fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn abi_codes_come_from_proto() {
    let mut files = Vec::new();
    sources(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    assert!(files.len() > 10, "hdl/src not found");
    let mut bad = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for (i, line) in text.lines().enumerate() {
            let t = line.trim_start();
            let Some((name, value)) = t.split_once(": k(") else {
                continue;
            };
            if ABI_NAMES.iter().any(|n| name.starts_with(n))
                && value.starts_with(|c: char| c.is_ascii_digit())
            {
                bad.push(format!("{}:{}: {t}", f.display(), i + 1));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "ABI codes retyped as literals (take them from rocenic_proto):\n{}",
        bad.join("\n")
    );
}
