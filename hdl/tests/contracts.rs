//! The host ABI's and the wire's codes come from `rocenic_proto`, never retyped in the RTL:
//! a constant named for a WR or WC opcode, a WC status, a QP state, a path MTU, a BTH
//! opcode, an AETH syndrome kind or a NAK code is set from proto's enums, not from a bare
//! number (the WQE and CQE offsets are held by compile-time
//! assertions in `wqe_fetch.rs` and taken from `proto::abi::cqe::field` in `cqe_beat.rs`);
//! and no file under `hdl/src` names the behavioural model.

use std::path::Path;

/// Names of `Constant` fields that carry an ABI or wire code: WR/WC opcodes, WC statuses,
/// path MTUs, QP states, BTH opcodes, AETH syndrome kinds and NAK codes.
const ABI_NAMES: [&str; 11] = [
    "k_op_", "k_wc_", "k_st_", "k_mtu", "k_rts", "k_sqd", "k_qps_", "op_", "syn_", "nak_", "mtu_",
];

/// The ways a `Constant` is built from a value in `hdl/src`.
const CONSTRUCTORS: [&str; 3] = ["k(", "c8(", "Constant::new("];

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

/// Every `.rs` file under `hdl/src`.
fn hdl_sources() -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    sources(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    assert!(files.len() > 10, "hdl/src not found");
    files
}

#[test]
fn abi_codes_come_from_proto() {
    let files = hdl_sources();
    let mut bad = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for (i, line) in text.lines().enumerate() {
            let t = line.trim_start();
            let Some((name, value)) = t.split_once(": ") else {
                continue;
            };
            let literal = CONSTRUCTORS.iter().any(|c| {
                value
                    .strip_prefix(c)
                    .is_some_and(|v| v.starts_with(|c: char| c.is_ascii_digit()))
            });
            if ABI_NAMES.iter().any(|n| name.starts_with(n)) && literal {
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

/// The RTL is never built from the model, test code included: the benches that hold a
/// block to `rocenic_model` live in `hdl/tests/against_model` (shared/ARCHITECTURE.md).
#[test]
fn hdl_src_never_names_the_model() {
    let files = hdl_sources();
    let named: Vec<String> = files
        .iter()
        .filter(|f| {
            std::fs::read_to_string(f)
                .unwrap()
                .contains("rocenic_model")
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        named.is_empty(),
        "files under hdl/src that name the model (move their benches to \
         hdl/tests/against_model):\n{}",
        named.join("\n")
    );
}

/// A BTH or WR opcode behind a local constant name (`const OP_FIRST: u64 = ...`, or any
/// constant of a module named `op` or `wr`) is set from proto's `Opcode::code` or
/// `WrOpcode::code`, not from a number: the literal check above sees only the
/// `k(OP_FIRST)` that uses it.
#[test]
fn opcode_constants_come_from_proto() {
    let mut bad = Vec::new();
    for f in hdl_sources() {
        let text = std::fs::read_to_string(&f).unwrap();
        let mut in_op_mod = false;
        for (i, line) in text.lines().enumerate() {
            let t = line.trim_start();
            if t.ends_with("mod op {") || t.ends_with("mod wr {") {
                in_op_mod = true;
            } else if in_op_mod && line == "}" {
                in_op_mod = false;
            }
            let Some(decl) = t.strip_prefix("pub ").unwrap_or(t).strip_prefix("const ") else {
                continue;
            };
            let Some((name, value)) = decl.split_once(" = ") else {
                continue;
            };
            let opcode = in_op_mod || name.starts_with("OP_");
            if opcode && value.starts_with(|c: char| c.is_ascii_digit()) {
                bad.push(format!("{}:{}: {t}", f.display(), i + 1));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "opcodes retyped as numbers (use rocenic_proto's Opcode::code or WrOpcode::code):\n{}",
        bad.join("\n")
    );
}
