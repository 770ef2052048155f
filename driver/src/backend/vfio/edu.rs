//! A check of the generic VFIO layer against QEMU's `edu` educational PCI device
//! (`-device edu`, PCI 1234:11e8; QEMU's docs/specs/edu.rst), as run by the
//! `rocenic-vfio-edu` program inside a QEMU guest with an emulated IOMMU.
//!
//! It maps BAR0, checks the identification and liveness registers, moves data through the
//! edu DMA engine both ways between its 4 KiB internal buffer and DMA buffers mapped below
//! its 28-bit DMA mask (one of them made of hugepages when the system has some), and checks
//! that DMA to and from an IOVA that is no longer mapped does not reach memory.

use std::io::Write;
use std::time::{Duration, Instant};

use super::device::{Device, Region};
use super::dma::{DmaBuffer, DmaOptions};
use super::error::Result;
use super::iova::ranges_text;
use super::sys::Sys;

/// edu's PCI vendor and device IDs.
pub const EDU_VENDOR: u16 = 0x1234;
/// edu's PCI device ID.
pub const EDU_DEVICE: u16 = 0x11e8;
/// edu's default DMA mask width.
pub const EDU_DMA_BITS: u32 = 28;
/// The identification register's value: magic 0xed, version 1.0 (every QEMU to date,
/// 7.2 included).
pub const EDU_ID: u32 = 0x0100_00ed;
/// Where edu's internal DMA buffer sits in its DMA address space, and its size.
pub const EDU_BUFFER: u64 = 0x40000;
/// The size of edu's DMA buffer.
pub const EDU_BUFFER_LEN: usize = 4096;
/// Bytes moved by each transfer. QEMU 7.2's edu refuses a transfer that reaches the last
/// byte of its buffer, and refuses it by stopping the whole VM (`hw_error`): an off-by-one
/// fixed in later versions. Half the buffer stays clear of it.
pub const EDU_XFER: usize = EDU_BUFFER_LEN / 2;

/// Register offsets in BAR0.
pub mod reg {
    /// Identification (`EDU_ID`).
    pub const ID: u64 = 0x00;
    /// Liveness check: reads back the bitwise inverse of what was written.
    pub const LIVENESS: u64 = 0x04;
    /// DMA source address.
    pub const DMA_SRC: u64 = 0x80;
    /// DMA destination address.
    pub const DMA_DST: u64 = 0x88;
    /// DMA transfer length in bytes.
    pub const DMA_COUNT: u64 = 0x90;
    /// DMA command: start, direction, interrupt.
    pub const DMA_CMD: u64 = 0x98;
    /// The smallest BAR0 that holds them.
    pub const BAR_MIN: u64 = 0xa0;
}
const CMD_START: u32 = 1;
const CMD_TO_RAM: u32 = 2;

/// Options of [`run`].
#[derive(Debug, Clone, Copy)]
pub struct EduOptions {
    /// The device's DMA mask width (edu: 28 unless QEMU was given `dma_mask=`).
    pub dma_bits: u32,
    /// How long one DMA may take (edu completes one after 100 ms of guest time).
    pub timeout: Duration,
}

impl Default for EduOptions {
    fn default() -> Self {
        EduOptions {
            dma_bits: EDU_DMA_BITS,
            timeout: Duration::from_secs(10),
        }
    }
}

/// What [`run`] found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct EduOutcome {
    /// Names of the checks that passed.
    pub passed: Vec<String>,
    /// Names and details of the checks that failed.
    pub failed: Vec<String>,
}

impl EduOutcome {
    /// Whether every check passed.
    pub fn ok(&self) -> bool {
        self.failed.is_empty() && !self.passed.is_empty()
    }

    /// The one-line verdict.
    pub fn verdict(&self) -> String {
        let n = self.passed.len() + self.failed.len();
        if self.ok() {
            format!("PASS ({n} checks)")
        } else {
            format!(
                "FAIL ({} of {n} checks failed: {})",
                self.failed.len(),
                self.failed.join("; ")
            )
        }
    }
}

struct Checker<'a> {
    out: &'a mut dyn Write,
    outcome: EduOutcome,
}

impl Checker<'_> {
    fn check(&mut self, name: &str, ok: bool, detail: String) {
        let _ = writeln!(
            self.out,
            "rocenic-vfio-edu: {} {name}: {detail}",
            if ok { "ok  " } else { "FAIL" }
        );
        if ok {
            self.outcome.passed.push(name.to_string());
        } else {
            self.outcome.failed.push(format!("{name}: {detail}"));
        }
    }

    fn note(&mut self, text: String) {
        let _ = writeln!(self.out, "rocenic-vfio-edu: {text}");
    }
}

/// Runs one DMA transfer of `count` bytes and waits for it; false on a timeout.
fn dma<S: Sys>(
    bar: &Region<S>,
    src: u64,
    dst: u64,
    count: u64,
    to_ram: bool,
    timeout: Duration,
) -> Result<bool> {
    bar.write64(reg::DMA_SRC, src)?;
    bar.write64(reg::DMA_DST, dst)?;
    bar.write64(reg::DMA_COUNT, count)?;
    bar.write32(
        reg::DMA_CMD,
        CMD_START | if to_ram { CMD_TO_RAM } else { 0 },
    )?;
    let start = Instant::now();
    loop {
        if bar.read32(reg::DMA_CMD)? & CMD_START == 0 {
            return Ok(true);
        }
        if start.elapsed() > timeout {
            return Ok(false);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn pattern(seed: u8) -> Vec<u8> {
    (0..EDU_XFER)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 8) as u8)
        .collect()
}

fn contents<S: Sys>(b: &DmaBuffer<S>, off: usize) -> Result<Vec<u8>> {
    let mut v = vec![0u8; EDU_XFER];
    b.read(off, &mut v)?;
    Ok(v)
}

fn head(v: &[u8]) -> String {
    v.iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs every check on the edu device `dev`, writing one line per check to `out`.
/// An error is a failure of the VFIO layer itself (mapping, allocation); a device that
/// misbehaves shows up as failed checks in the outcome.
pub fn run<S: Sys>(dev: &Device<S>, opts: &EduOptions, out: &mut dyn Write) -> Result<EduOutcome> {
    let mut c = Checker {
        out,
        outcome: EduOutcome::default(),
    };
    let pci = dev.pci();
    c.note(format!(
        "device {} ({:04x}:{:04x}), IOMMU group {}, usable IOVA ranges {}",
        pci.address,
        pci.vendor,
        pci.device,
        dev.group().number(),
        ranges_text(&dev.container().iova_ranges())
    ));
    if dev.can_reset() {
        dev.reset()?;
        c.note("function reset".into());
    } else {
        c.note("the device has no function reset (edu has no FLR): not reset".into());
    }
    dev.enable_bus_master()?;
    let bar = dev.map_bar(0, reg::BAR_MIN)?;
    c.note(format!("BAR0 mapped, {:#x} bytes", bar.len()));

    let id = bar.read32(reg::ID)?;
    c.check(
        "identification register",
        id == EDU_ID,
        format!("{id:#010x} (expected {EDU_ID:#010x})"),
    );
    let mut live = true;
    let mut seen = Vec::new();
    for v in [0x1234_5678u32, 0, 0xffff_ffff, 0xa5a5_0f0f] {
        bar.write32(reg::LIVENESS, v)?;
        let r = bar.read32(reg::LIVENESS)?;
        live &= r == !v;
        seen.push(format!("{v:#x}->{r:#x}"));
    }
    c.check(
        "liveness register (reads back inverted)",
        live,
        seen.join(" "),
    );

    let small = DmaOptions {
        hugepages: false,
        ..DmaOptions::with_mask_bits(opts.dma_bits)
    };
    let mask = small.mask;
    let t = opts.timeout;

    // RAM -> edu -> RAM through two mapped buffers.
    let a = dev.alloc_dma(EDU_BUFFER_LEN, &small)?;
    let b = dev.alloc_dma(EDU_BUFFER_LEN, &small)?;
    c.check(
        "DMA buffers below the DMA mask",
        a.iova() + a.len() as u64 - 1 <= mask && b.iova() + b.len() as u64 - 1 <= mask,
        format!(
            "VA {:#x} -> IOVA {:#x}, VA {:#x} -> IOVA {:#x}, mask {mask:#x}",
            a.va(),
            a.iova(),
            b.va(),
            b.iova()
        ),
    );
    let p = pattern(7);
    a.write(0, &p)?;
    let to_dev = dma(&bar, a.iova(), EDU_BUFFER, EDU_XFER as u64, false, t)?;
    let to_ram = dma(&bar, EDU_BUFFER, b.iova(), EDU_XFER as u64, true, t)?;
    let got = contents(&b, 0)?;
    c.check(
        "DMA RAM -> edu -> RAM",
        to_dev && to_ram && got == p,
        format!(
            "completed {to_dev}/{to_ram}, {} of {EDU_XFER} bytes came back",
            got.iter().zip(&p).filter(|(x, y)| x == y).count()
        ),
    );

    // Into the middle of a large buffer (hugepages where the system has them).
    let big_opts = DmaOptions {
        hugepages: true,
        ..small
    };
    let big = dev.alloc_dma(4 << 20, &big_opts)?;
    let off = (3 << 20) + 0x800;
    let done = dma(
        &bar,
        EDU_BUFFER,
        big.iova() + off as u64,
        EDU_XFER as u64,
        true,
        t,
    )?;
    let got = contents(&big, off)?;
    let before = contents(&big, off - EDU_XFER)?;
    c.check(
        "DMA edu -> RAM inside a 4 MiB buffer",
        done && got == p && before.iter().all(|&x| x == 0),
        format!(
            "{} pages, IOVA {:#x}, offset {off:#x}, completed {done}",
            if big.is_huge() { "2 MiB" } else { "small" },
            big.iova()
        ),
    );
    drop(big);

    // A write to an IOVA that is no longer mapped must not reach the memory behind it.
    let mut gone = dev.alloc_dma(EDU_BUFFER_LEN, &small)?;
    gone.write(0, &[0x5a; EDU_XFER])?;
    let iova = gone.iova();
    gone.unmap()?;
    let done = dma(&bar, EDU_BUFFER, iova, EDU_XFER as u64, true, t)?;
    let after = contents(&gone, 0)?;
    c.check(
        "DMA write to an unmapped IOVA is blocked",
        done && after.iter().all(|&x| x == 0x5a),
        format!(
            "IOVA {iova:#x}, completed {done}, memory now starts {}",
            head(&after)
        ),
    );

    // A read from an IOVA that is no longer mapped must not fetch the memory behind it.
    let mut gone = dev.alloc_dma(EDU_BUFFER_LEN, &small)?;
    let q = pattern(0x3c);
    gone.write(0, &q)?;
    let iova = gone.iova();
    gone.unmap()?;
    let read = dma(&bar, iova, EDU_BUFFER, EDU_XFER as u64, false, t)?;
    b.write(0, &[0x11; EDU_XFER])?;
    let back = dma(&bar, EDU_BUFFER, b.iova(), EDU_XFER as u64, true, t)?;
    let seen = contents(&b, 0)?;
    c.check(
        "DMA read from an unmapped IOVA is blocked",
        read && back && seen != q && seen != [0x11; EDU_XFER],
        format!(
            "IOVA {iova:#x}, completed {read}/{back}, edu's buffer now starts {} (the \
             memory starts {})",
            head(&seen),
            head(&q)
        ),
    );
    drop((a, b, gone));
    Ok(c.outcome)
}
