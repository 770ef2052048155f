//! The verbs API's numbers against rdma-core's own header: a small C program compiled
//! against `/usr/include/infiniband/verbs.h` prints every constant the driver claims, and
//! each must equal the driver's value. (A printer needs only `cc`; bindgen would need
//! libclang. See docs/design.md.)
//!
//! Needs libibverbs-dev and a C compiler: `bash scripts/install-deps.sh verbs`.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use rocenic_driver::verbs::wc_flags;
use rocenic_driver::{access, qp_attr, send_flags, Mtu, QpState, WcOpcode, WcStatus, WrOpcode};

const HEADER: &str = "/usr/include/infiniband/verbs.h";
const INSTALL: &str = "bash scripts/install-deps.sh verbs";

/// Every verbs.h name the driver numbers, with the driver's value.
fn driver_table() -> Vec<(String, i64)> {
    let mut t: Vec<(String, i64)> = Vec::new();
    let mut add = |name: &str, v: i64| t.push((name.to_string(), v));
    for (n, v) in [
        ("IBV_SEND_FENCE", send_flags::FENCE),
        ("IBV_SEND_SIGNALED", send_flags::SIGNALED),
        ("IBV_SEND_SOLICITED", send_flags::SOLICITED),
        ("IBV_SEND_INLINE", send_flags::INLINE),
        ("IBV_ACCESS_LOCAL_WRITE", access::LOCAL_WRITE),
        ("IBV_ACCESS_REMOTE_WRITE", access::REMOTE_WRITE),
        ("IBV_ACCESS_REMOTE_READ", access::REMOTE_READ),
        ("IBV_ACCESS_REMOTE_ATOMIC", access::REMOTE_ATOMIC),
        ("IBV_QP_STATE", qp_attr::STATE),
        ("IBV_QP_ACCESS_FLAGS", qp_attr::ACCESS_FLAGS),
        ("IBV_QP_AV", qp_attr::AV),
        ("IBV_QP_PATH_MTU", qp_attr::PATH_MTU),
        ("IBV_QP_TIMEOUT", qp_attr::TIMEOUT),
        ("IBV_QP_RETRY_CNT", qp_attr::RETRY_CNT),
        ("IBV_QP_RNR_RETRY", qp_attr::RNR_RETRY),
        ("IBV_QP_RQ_PSN", qp_attr::RQ_PSN),
        ("IBV_QP_MAX_QP_RD_ATOMIC", qp_attr::MAX_QP_RD_ATOMIC),
        ("IBV_QP_MIN_RNR_TIMER", qp_attr::MIN_RNR_TIMER),
        ("IBV_QP_SQ_PSN", qp_attr::SQ_PSN),
        ("IBV_QP_MAX_DEST_RD_ATOMIC", qp_attr::MAX_DEST_RD_ATOMIC),
        ("IBV_QP_DEST_QPN", qp_attr::DEST_QPN),
    ] {
        add(n, v.into());
    }
    for (n, v) in [
        ("IBV_WC_WITH_IMM", wc_flags::WITH_IMM),
        ("IBV_WC_WITH_INV", wc_flags::WITH_INV),
    ] {
        add(n, v.into());
    }
    // The enums: every variant (each number that decodes to one), named `IBV_<prefix>` +
    // the variant's own name, so the names are checked too.
    for v in 0..=u8::MAX {
        if !matches!(QpState::from(v), QpState::Unknown(_)) {
            add(&format!("IBV_QPS_{}", QpState::from(v).name()), v.into());
        }
        if !matches!(WcStatus::from(v), WcStatus::Unknown(_)) {
            add(&format!("IBV_WC_{}", WcStatus::from(v).name()), v.into());
        }
        if !matches!(WcOpcode::from(v), WcOpcode::Unknown(_)) {
            add(&format!("IBV_WC_{}", WcOpcode::from(v).name()), v.into());
        }
        if !matches!(WrOpcode::from(v), WrOpcode::Unknown(_)) {
            add(&format!("IBV_WR_{}", WrOpcode::from(v).name()), v.into());
        }
    }
    for m in Mtu::ALL {
        add(&format!("IBV_MTU_{}", m.bytes()), m as i64);
    }
    t
}

/// Compiles and runs a printer of `names` against verbs.h; returns name -> value.
fn header_values(names: &[&str]) -> BTreeMap<String, i64> {
    assert!(
        Path::new(HEADER).is_file(),
        "{HEADER} is missing: install libibverbs-dev with `{INSTALL}`"
    );
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("verbs_h");
    std::fs::create_dir_all(&dir).expect("create the printer's directory");
    let mut src =
        String::from("#include <stdio.h>\n#include <infiniband/verbs.h>\nint main(void) {\n");
    for n in names {
        src += &format!("    printf(\"%s %lld\\n\", \"{n}\", (long long)({n}));\n");
    }
    src += "    return 0;\n}\n";
    let c = dir.join("print.c");
    let exe = dir.join("print");
    std::fs::write(&c, src).expect("write the printer");
    let out = Command::new("cc")
        .arg("-o")
        .arg(&exe)
        .arg(&c)
        .output()
        .unwrap_or_else(|e| panic!("cannot run cc ({e}): install a C compiler with `{INSTALL}`"));
    assert!(
        out.status.success(),
        "cc failed on {} (a name the driver claims may be missing from verbs.h):\n{}",
        c.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(&exe).output().expect("run the printer");
    assert!(run.status.success(), "the printer failed: {:?}", run.status);
    String::from_utf8(run.stdout)
        .expect("ASCII output")
        .lines()
        .map(|l| {
            let (n, v) = l.split_once(' ').expect("`NAME VALUE` lines");
            (n.to_string(), v.parse().expect("a number"))
        })
        .collect()
}

#[test]
fn every_verbs_number_equals_verbs_h() {
    let table = driver_table();
    // 4 send flags, 4 access flags, 13 QP attribute bits, 2 WC flags, 7 QP states,
    // 14 WC statuses, 7 WC opcodes, 8 WR opcodes, 5 MTUs.
    assert_eq!(table.len(), 64, "{table:?}");
    let names: Vec<&str> = table.iter().map(|(n, _)| n.as_str()).collect();
    let header = header_values(&names);
    let wrong: Vec<String> = table
        .iter()
        .filter(|(n, v)| header.get(n) != Some(v))
        .map(|(n, v)| format!("{n}: driver {v:#x}, verbs.h {:?}", header.get(n)))
        .collect();
    assert!(
        wrong.is_empty(),
        "numbers differ from verbs.h:\n{}",
        wrong.join("\n")
    );
}
