//! `rocenic-vfio-edu`: checks the driver's VFIO layer against QEMU's `edu` device.
//!
//! Run it as root in a Linux guest started with an emulated IOMMU and the edu device
//! (`qemu-system-x86_64 -M q35 -device intel-iommu -device edu ...`, `intel_iommu=on` on the
//! guest's command line) after binding edu to vfio-pci; `tests/interop/vfio-edu.sh` does all
//! of that. It maps BAR0, checks the ID and liveness registers, moves data through the edu
//! DMA engine both ways at IOVAs below its 28-bit DMA mask, and checks that DMA to and from
//! an unmapped IOVA does not reach memory. It prints one line per check and a last line
//! `rocenic-vfio-edu: PASS (...)` or `rocenic-vfio-edu: FAIL (...)`.
//!
//! Exit status: 0 when every check passed, 1 when one failed, 2 when the device could not
//! be opened or the VFIO layer failed (the message says what to do).

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use rocenic_driver::backend::vfio::edu::{self, EduOptions};
use rocenic_driver::backend::vfio::{find_by_id, Device, Host};

/// Check the VFIO layer against QEMU's edu device (PCI 1234:11e8).
#[derive(Debug, Parser)]
#[command(name = "rocenic-vfio-edu", version)]
struct Args {
    /// PCI address of the edu device (default: the only 1234:11e8 device in sysfs).
    bdf: Option<String>,
    /// The device's DMA mask width in bits (QEMU's default for edu is 28).
    #[arg(long, default_value_t = edu::EDU_DMA_BITS)]
    dma_bits: u32,
    /// How long one DMA transfer may take, in milliseconds.
    #[arg(long, default_value_t = 10_000)]
    timeout_ms: u64,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let bdf = match args.bdf {
        Some(b) => b,
        None => match find_by_id(&Host, edu::EDU_VENDOR, edu::EDU_DEVICE).as_slice() {
            [one] => one.to_string(),
            found => {
                eprintln!(
                    "rocenic-vfio-edu: FAIL: expected one edu device (1234:11e8) in sysfs, found \
                     {}; name it on the command line",
                    found.len()
                );
                return ExitCode::from(2);
            }
        },
    };
    let opts = EduOptions {
        dma_bits: args.dma_bits,
        timeout: Duration::from_millis(args.timeout_ms),
    };
    let result = Device::open_host(&bdf).and_then(|dev| {
        let mut out = std::io::stdout().lock();
        edu::run(&dev, &opts, &mut out)
    });
    match result {
        Ok(outcome) => {
            println!("rocenic-vfio-edu: {}", outcome.verdict());
            if outcome.ok() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            println!("rocenic-vfio-edu: FAIL: {e}");
            ExitCode::from(2)
        }
    }
}
