//! The verbs library as an application outside the workspace links it:
//!
//! - `cargo tree -p rocenic-driver -e normal` (its default features) holds no simulator,
//!   RTL, CLI or serialization crate;
//! - `tests/fixtures/outside-app`, a crate of its own workspace that depends on the library
//!   by path and asks for a newer patch release of thiserror than the workspace's
//!   `Cargo.lock` has, resolves, builds and runs (opening a board that is not there gives
//!   the clear VFIO error).
//!
//! Both run the `cargo` that runs this test; the fixture builds into its own target
//! directory (`target/outside-app`), so it never waits on the workspace's build lock.

use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is inside the workspace")
        .to_path_buf()
}

fn cargo() -> Command {
    Command::new(env!("CARGO"))
}

fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// The version of `name` in a `Cargo.lock`, the only one of that major release there.
fn locked_version(lock: &Path, name: &str, major: &str) -> (u64, u64, u64) {
    let text = std::fs::read_to_string(lock).unwrap_or_else(|e| panic!("{lock:?}: {e}"));
    let lines: Vec<&str> = text.lines().collect();
    let versions: Vec<(u64, u64, u64)> = lines
        .windows(2)
        .filter(|w| w[0] == format!("name = \"{name}\""))
        .filter_map(|w| w[1].strip_prefix("version = \"")?.strip_suffix('"'))
        .filter(|v| v.split('.').next() == Some(major))
        .map(|v| {
            let n: Vec<u64> = v.split('.').map(|p| p.parse().expect("a number")).collect();
            (n[0], n[1], n[2])
        })
        .collect();
    assert_eq!(
        versions.len(),
        1,
        "{name} {major}.x in {lock:?}: {versions:?}"
    );
    versions[0]
}

#[test]
fn the_verbs_library_has_no_simulator_or_cli_dependencies() {
    let tree = run(cargo().current_dir(workspace_root()).args([
        "tree",
        "-p",
        "rocenic-driver",
        "-e",
        "normal",
        "--prefix",
        "none",
        "--format",
        "{p}",
    ]));
    let crates: Vec<&str> = tree
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(crates.contains(&"rocenic-driver") && crates.contains(&"rocenic-proto"));
    for banned in [
        "rust-hdl",
        "rust-hdl-core",
        "rocenic-hdl",
        "rocenic-sim",
        "rocenic-model",
        "clap",
        "serde",
        "anyhow",
    ] {
        assert!(
            !crates.contains(&banned),
            "rocenic-driver's default build depends on {banned}:\n{tree}"
        );
    }
}

#[test]
fn an_application_outside_the_workspace_builds_with_a_newer_patch_release() {
    let root = workspace_root();
    let fixture = root.join("tests/fixtures/outside-app");
    let ours = locked_version(&root.join("Cargo.lock"), "thiserror", "2");
    let theirs = locked_version(&fixture.join("Cargo.lock"), "thiserror", "2");
    assert!(
        theirs.0 == ours.0 && theirs.1 == ours.1 && theirs.2 > ours.2,
        "the fixture must ask for a newer patch release of thiserror than the workspace's \
         {ours:?}: it has {theirs:?}"
    );
    // A relative CARGO_TARGET_DIR is relative to the workspace root, as cargo takes it.
    let target = root
        .join(std::env::var_os("CARGO_TARGET_DIR").unwrap_or_else(|| "target".into()))
        .join("outside-app");
    run(cargo()
        .current_dir(&fixture)
        .args(["build", "--locked", "--target-dir"])
        .arg(&target));
    let out = run(&mut Command::new(target.join("debug/outside-app")));
    assert!(
        out.contains("send_flags::SIGNALED = ") && out.contains("no PCI device 0000:ff:1f.7"),
        "the application's output:\n{out}"
    );
}
