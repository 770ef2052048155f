//! The interface between a device (behavioural model or Verilated RTL) and the world that
//! hosts it: BAR0 register access, DMA into host memory, and Ethernet frames on one port.
//!
//! Time is counted in core-clock cycles (250 MHz design clock). A device is advanced one
//! cycle at a time by [`Device::tick`]; a world may skip idle cycles up to
//! [`Device::next_event`], which keeps long timers (ACK timeout, RNR delay) cheap to simulate.

use core::fmt;

/// An Ethernet frame from the destination MAC up, without the FCS (as a 100G MAC hands it over).
pub type Frame = Vec<u8>;

/// A DMA access that the IOMMU refused: the IOVA range is not (entirely) mapped, or the
/// mapping does not allow the access. Nothing was read or written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DmaFault {
    pub iova: u64,
    pub len: usize,
    pub write: bool,
}

impl fmt::Display for DmaFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "IOMMU fault: {} of {} bytes at IOVA {:#x}",
            if self.write { "write" } else { "read" },
            self.len,
            self.iova
        )
    }
}

impl std::error::Error for DmaFault {}

/// Host memory as the device sees it: IOVA-addressed, through an IOMMU.
///
/// The data moves at once (the model is behavioural); the returned cycle says when the
/// access is complete under the port's latency/bandwidth model, so a device can account
/// for it in its own timing.
pub trait DmaPort {
    /// Reads `buf.len()` bytes at `iova`, issued at cycle `now`. Returns the cycle at which
    /// the last byte of the completion arrives.
    fn dma_read(&mut self, now: u64, iova: u64, buf: &mut [u8]) -> Result<u64, DmaFault>;
    /// Writes `data` at `iova`, issued at cycle `now`. Returns the cycle at which the write
    /// has left the device (posted writes: no completion is waited for).
    fn dma_write(&mut self, now: u64, iova: u64, data: &[u8]) -> Result<u64, DmaFault>;
}

/// What a device can touch during one cycle.
pub struct DeviceIo<'a> {
    /// Host memory through the IOMMU.
    pub dma: &'a mut dyn DmaPort,
    /// Frames that arrived from the wire and wait for the device; it takes them from the
    /// front when it can accept them.
    pub rx: &'a mut std::collections::VecDeque<Frame>,
    /// Frames the device sends; the world moves them onto the link.
    pub tx: &'a mut Vec<Frame>,
}

/// A rocenic device: one BAR0, one DMA port, one Ethernet port.
pub trait Device {
    /// A 32-bit read of BAR0 at byte `offset` (4-byte aligned).
    fn bar_read(&mut self, offset: u32) -> u32;
    /// A 32-bit write of BAR0 at byte `offset` (4-byte aligned).
    fn bar_write(&mut self, offset: u32, value: u32);
    /// Advances the device by one clock cycle; `now` is the cycle being executed.
    fn tick(&mut self, now: u64, io: &mut DeviceIo<'_>);
    /// The earliest cycle after `now` at which the device has something to do without new
    /// input (a timer expiring, a DMA completing, a frame to send), or `None` when it is idle
    /// until a register write or a frame arrives.
    ///
    /// Calling rule: the world calls it right after `tick(now)`. A result `<= now + 1`
    /// (including one in the past) means "busy: tick me next cycle"; a later one lets the
    /// world skip the cycles in between. A device therefore reads time only from the `now`
    /// it is given, never by counting ticks.
    fn next_event(&self, now: u64) -> Option<u64>;

    /// The device as a `Send` object when a world may tick it on a thread of its own, in
    /// parallel with the other nodes (the results stay those of one thread; see the sim
    /// crate's world documentation, "Two threads"). Worth it only when a tick is costly,
    /// as a Verilated model's is, so the default is `None`: ticked on the caller's thread.
    fn parallel(&mut self) -> Option<&mut (dyn Device + Send)> {
        None
    }
}
