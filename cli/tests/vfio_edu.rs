//! The VFIO layer against the real Linux VFIO, in a QEMU guest with an emulated IOMMU and
//! QEMU's edu device: runs `tests/interop/vfio-edu.sh` with the `rocenic-vfio-edu` program
//! cargo built for this test (see that script for the steps). Needs QEMU and the guest's
//! build tools (`bash scripts/install-deps.sh qemu`); takes about 30 s under TCG once the
//! guest is built (its first build takes a minute or two and is cached in target/).

use std::path::Path;
use std::process::Command;

#[test]
fn vfio_layer_against_the_kernel_in_a_qemu_guest() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/interop/vfio-edu.sh");
    let out = Command::new("bash")
        .arg(&script)
        .arg("--bin")
        .arg(env!("CARGO_BIN_EXE_rocenic-vfio-edu"))
        .output()
        .expect("bash runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    eprintln!("{stderr}");
    assert!(
        out.status.success() && stdout.contains("vfio-edu: PASS (6 steps"),
        "{} failed ({}); if QEMU or the guest tools are missing, run \
         `bash scripts/install-deps.sh qemu`",
        script.display(),
        out.status
    );
}
