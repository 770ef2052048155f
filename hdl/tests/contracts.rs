//! The host ABI's and the wire's codes come from `rocenic_proto`, never retyped in the RTL:
//! a constant named for a WR or WC opcode, a WC status or flag, an access flag, a QP state,
//! a path MTU, a BTH opcode, an AETH syndrome or a NAK code is set from proto's enums, not
//! from a bare number; a bit offset into a WQE or the command arguments is either taken
//! from proto or held by a compile-time assertion against proto in its file (the CQE's are
//! taken from `proto::abi::cqe::field` in `cqe_beat.rs`); and no file under `hdl/src` names
//! the behavioural model.

use std::path::Path;

/// Names of `Constant` fields that carry an ABI or wire code: WR/WC opcodes, WC statuses
/// and flags, access flags, path MTUs, QP states, BTH opcodes, AETH syndromes and NAK codes.
const ABI_NAMES: [&str; 16] = [
    "k_op_", "k_wc_", "k_st_", "k_mtu", "k_rts", "k_sqd", "k_qps_", "k_syn_", "k_flag_", "k_need_",
    "op_", "syn_", "nak_", "mtu_", "st_", "s8_",
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

/// Every `.rs` file under `hdl/src`, with its text.
fn hdl_sources() -> Vec<(std::path::PathBuf, String)> {
    let mut files = Vec::new();
    sources(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    assert!(files.len() > 10, "hdl/src not found");
    files
        .into_iter()
        .map(|f| {
            let text = std::fs::read_to_string(&f).unwrap();
            (f, text)
        })
        .collect()
}

#[test]
fn abi_codes_come_from_proto() {
    let mut bad = Vec::new();
    for (f, text) in hdl_sources() {
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
    let named: Vec<String> = hdl_sources()
        .into_iter()
        .filter(|(_, text)| text.contains("rocenic_model"))
        .map(|(f, _)| f.display().to_string())
        .collect();
    assert!(
        named.is_empty(),
        "files under hdl/src that name the model (move their benches to \
         hdl/tests/against_model):\n{}",
        named.join("\n")
    );
}

/// A BTH or WR opcode or an AETH syndrome behind a local constant name (`const OP_FIRST:
/// u64 = ...`, `SYNDROME_ACK`, or any constant of a module named `op` or `wr`) is set from
/// proto's `Opcode::code`, `WrOpcode::code` or `Syndrome::code`, not from a number: the
/// literal check above sees only the `k(OP_FIRST)` that uses it.
#[test]
fn opcode_constants_come_from_proto() {
    let mut bad = Vec::new();
    for (f, text) in hdl_sources() {
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
            let opcode = in_op_mod || name.starts_with("OP_") || name.starts_with("SYNDROME");
            if opcode && value.starts_with(|c: char| c.is_ascii_digit()) {
                bad.push(format!("{}:{}: {t}", f.display(), i + 1));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "codes retyped as numbers (use rocenic_proto's Opcode, WrOpcode or Syndrome::code):\n{}",
        bad.join("\n")
    );
}

/// The text of a file's compile-time assertion blocks (`const _: () = { ... };`).
fn assertion_blocks(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("const _: () = {") {
        let block = &rest[at..];
        let end = block
            .find("\n};")
            .expect("an assertion block ends with `};`");
        out.push_str(&block[..end]);
        rest = &block[end..];
    }
    out
}

/// `N` of every `<receiver>N)` on a line (the receiver ends in `get_bits::<W>(` written up
/// to its `<`), when `N` is numbers and `*` only (evaluated); an offset written with a name
/// (a proto constant) is not returned.
fn literal_offsets(line: &str, receiver: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for (at, _) in line.match_indices(receiver) {
        let call = &line[at + receiver.len()..];
        let Some((_, args)) = call.split_once(">(") else {
            continue;
        };
        let expr = &args[..args.find(')').unwrap_or(args.len())];
        if expr
            .chars()
            .all(|c| c.is_ascii_digit() || c == '*' || c == ' ')
        {
            out.push(
                expr.split('*')
                    .map(|n| n.trim().parse::<usize>().unwrap())
                    .product(),
            );
        }
    }
    out
}

/// The receive and send WQE decoders slice a WQE beat (`m_ent_beat`) at literal bit offsets
/// (as `#[hdl_gen]` wants them): each such offset is named in an assertion against
/// `proto::abi::wqe::field` in the same file (`... * 8 == N`). The command-argument words
/// (`CmdArgs`) are sliced at `32 * k`: word `k` is named in an assertion that places
/// proto's `cmd::*_arg` fields in it (`at(field, k, width)`); its narrower fields take their
/// offsets from proto.
#[test]
fn wqe_and_command_offsets_are_tied_to_proto() {
    let mut bad = Vec::new();
    let mut checked = 0;
    for (f, text) in hdl_sources() {
        let asserted = assertion_blocks(&text);
        let cmd_args = f.ends_with("control/cmd.rs");
        for (i, line) in text.lines().enumerate() {
            let mut missing = Vec::new();
            for n in literal_offsets(line, "m_ent_beat.val().get_bits::<") {
                checked += 1;
                let named = [format!("== {n})"), format!("== {n} "), format!("== {n};")];
                if !named.iter().any(|s| asserted.contains(s.as_str())) {
                    missing.push(n);
                }
            }
            if cmd_args && line.trim_start().starts_with("self.") {
                for n in literal_offsets(line, " a.get_bits::<") {
                    checked += 1;
                    if n % 32 != 0 || !asserted.contains(&format!(", {}, ", n / 32)) {
                        missing.push(n);
                    }
                }
            }
            if !missing.is_empty() {
                bad.push(format!(
                    "{}:{}: {missing:?}: {}",
                    f.display(),
                    i + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(
        checked > 30,
        "only {checked} WQE and argument offsets found: has the code moved?"
    );
    assert!(
        bad.is_empty(),
        "offsets not tied to rocenic_proto by an assertion in their file:\n{}",
        bad.join("\n")
    );
}
