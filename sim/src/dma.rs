//! The DMA timing model: how long a device's reads and writes of host memory take.
//!
//! The port has two independent channels, read and write (PCIe is full duplex). Each moves
//! [`DmaConfig::bytes_per_cycle`] bytes per cycle and serves requests in issue order; a
//! request occupies its channel only while its bytes move, so latency overlaps with later
//! requests (many reads outstanding, as a PCIe DMA engine keeps them).
//!
//! For a request of `len` bytes issued at cycle `now` on a channel that is busy until
//! cycle `busy` (the first cycle it is free):
//!
//! ```text
//! beats = ceil(len / bytes_per_cycle)          (0 for len == 0)
//! start = max(now, busy)
//! busy  = start + beats                          (the channel's new busy-until)
//! done  = start + beats + latency                (returned to the device)
//! ```
//!
//! `latency` is [`DmaConfig::read_latency_cycles`] for reads (the PCIe round trip: the last
//! byte of the completion has arrived at `done`) and [`DmaConfig::write_latency_cycles`]
//! for writes (posted: by default 0, `done` is when the last byte has left the device).
//! Data moves at once (the model is behavioural); `done` only tells the device when it may
//! use it. A request the IOMMU refuses returns its fault at once and costs no channel time.

use core::fmt;

use rocenic_proto::device::{DmaFault, DmaPort};

use crate::host::Host;
use crate::SimError;

/// Parameters of the DMA timing model (see the module documentation for the formula).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DmaConfig {
    /// Cycles from the end of a read's transfer slot to its last completion byte; the
    /// default 250 is 1 us at 250 MHz, a typical PCIe read round trip.
    pub read_latency_cycles: u64,
    /// Cycles added to a write after its bytes have left; 0 (default) for posted writes.
    pub write_latency_cycles: u64,
    /// Bytes each channel moves per cycle; default 64 (512 bits at 250 MHz = 128 Gb/s,
    /// about PCIe Gen4 x16 or Gen5 x8). Must be at least 1.
    pub bytes_per_cycle: u64,
}

impl Default for DmaConfig {
    fn default() -> Self {
        DmaConfig {
            read_latency_cycles: 250,
            write_latency_cycles: 0,
            bytes_per_cycle: 64,
        }
    }
}

impl DmaConfig {
    /// An ideal port: no latency, one cycle per 64 KiB (for device unit tests).
    pub fn ideal() -> Self {
        DmaConfig {
            read_latency_cycles: 0,
            write_latency_cycles: 0,
            bytes_per_cycle: 1 << 16,
        }
    }

    /// Refuses values the model cannot work with.
    pub fn validate(&self) -> Result<(), SimError> {
        if self.bytes_per_cycle == 0 {
            return Err(SimError::InvalidConfig(
                "DmaConfig::bytes_per_cycle must be at least 1".into(),
            ));
        }
        Ok(())
    }
}

/// Counters of one DMA port.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DmaStats {
    /// Reads the IOMMU allowed.
    pub reads: u64,
    /// Writes the IOMMU allowed.
    pub writes: u64,
    /// Bytes read by allowed reads.
    pub bytes_read: u64,
    /// Bytes written by allowed writes.
    pub bytes_written: u64,
    /// Accesses the IOMMU refused.
    pub faults: u64,
}

/// The timing state of one device's DMA port: a read and a write channel.
#[derive(Debug, Clone)]
pub struct DmaChannels {
    cfg: DmaConfig,
    read_busy_until: u64,
    write_busy_until: u64,
    stats: DmaStats,
}

impl DmaChannels {
    /// Idle channels; refuses a bad configuration.
    pub fn new(cfg: DmaConfig) -> Result<Self, SimError> {
        cfg.validate()?;
        Ok(DmaChannels {
            cfg,
            read_busy_until: 0,
            write_busy_until: 0,
            stats: DmaStats::default(),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &DmaConfig {
        &self.cfg
    }

    /// Books a read of `len` bytes issued at `now`; returns the cycle its last byte arrives.
    pub fn read(&mut self, now: u64, len: usize) -> u64 {
        self.stats.reads += 1;
        self.stats.bytes_read += len as u64;
        Self::book(
            &mut self.read_busy_until,
            now,
            len,
            self.cfg.bytes_per_cycle,
            self.cfg.read_latency_cycles,
        )
    }

    /// Books a write of `len` bytes issued at `now`; returns the cycle it is done.
    pub fn write(&mut self, now: u64, len: usize) -> u64 {
        self.stats.writes += 1;
        self.stats.bytes_written += len as u64;
        Self::book(
            &mut self.write_busy_until,
            now,
            len,
            self.cfg.bytes_per_cycle,
            self.cfg.write_latency_cycles,
        )
    }

    fn book(busy: &mut u64, now: u64, len: usize, bytes_per_cycle: u64, latency: u64) -> u64 {
        let beats = (len as u64).div_ceil(bytes_per_cycle);
        let start = now.max(*busy);
        *busy = start.saturating_add(beats);
        busy.saturating_add(latency)
    }

    /// The first cycle at which the read channel is free.
    pub fn read_busy_until(&self) -> u64 {
        self.read_busy_until
    }

    /// The first cycle at which the write channel is free.
    pub fn write_busy_until(&self) -> u64 {
        self.write_busy_until
    }

    /// The counters.
    pub fn stats(&self) -> DmaStats {
        self.stats
    }

    fn note_fault(&mut self) {
        self.stats.faults += 1;
    }
}

/// A device's DMA port for one cycle: the host's memory through its IOMMU, timed by the
/// node's [`DmaChannels`].
pub struct SimDma<'a> {
    host: &'a mut Host,
    channels: &'a mut DmaChannels,
}

impl<'a> SimDma<'a> {
    /// Joins a host and the channel state of its device.
    pub fn new(host: &'a mut Host, channels: &'a mut DmaChannels) -> Self {
        SimDma { host, channels }
    }
}

impl DmaPort for SimDma<'_> {
    fn dma_read(&mut self, now: u64, iova: u64, buf: &mut [u8]) -> Result<u64, DmaFault> {
        if let Err(f) = self.host.dma_read(now, iova, buf) {
            self.channels.note_fault();
            return Err(f);
        }
        Ok(self.channels.read(now, buf.len()))
    }

    fn dma_write(&mut self, now: u64, iova: u64, data: &[u8]) -> Result<u64, DmaFault> {
        if let Err(f) = self.host.dma_write(now, iova, data) {
            self.channels.note_fault();
            return Err(f);
        }
        Ok(self.channels.write(now, data.len()))
    }
}

impl fmt::Display for DmaStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} reads ({} B), {} writes ({} B), {} faults",
            self.reads, self.bytes_read, self.writes, self.bytes_written, self.faults
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::HostConfig;

    #[test]
    fn default_read_is_latency_plus_transfer() {
        let mut c = DmaChannels::new(DmaConfig::default()).unwrap();
        // 64 B: 1 beat + 250.
        assert_eq!(c.read(1000, 64), 1000 + 1 + 250);
        assert_eq!(c.read_busy_until(), 1001);
        // 65 B issued while the channel is busy until 1001: starts at 1001, 2 beats.
        assert_eq!(c.read(1000, 65), 1001 + 2 + 250);
        assert_eq!(c.read_busy_until(), 1003);
        // Issued later than busy: starts at once.
        assert_eq!(c.read(2000, 4096), 2000 + 64 + 250);
        // The write channel is independent and posted.
        assert_eq!(c.write(2000, 4096), 2000 + 64);
        assert_eq!(c.write(2000, 1), 2064 + 1);
        assert_eq!(c.write_busy_until(), 2065);
    }

    #[test]
    fn zero_length_costs_only_latency() {
        let mut c = DmaChannels::new(DmaConfig::default()).unwrap();
        assert_eq!(c.read(5, 0), 255);
        assert_eq!(c.read_busy_until(), 5);
    }

    #[test]
    fn outstanding_reads_pipeline() {
        // Eight 4 KiB reads issued back to back finish one transfer apart, not one round
        // trip apart.
        let mut c = DmaChannels::new(DmaConfig::default()).unwrap();
        let done: Vec<u64> = (0..8).map(|_| c.read(0, 4096)).collect();
        let expect: Vec<u64> = (1..=8).map(|i| i * 64 + 250).collect();
        assert_eq!(done, expect);
    }

    #[test]
    fn custom_config_and_validation() {
        let cfg = DmaConfig {
            read_latency_cycles: 10,
            write_latency_cycles: 3,
            bytes_per_cycle: 10,
        };
        let mut c = DmaChannels::new(cfg).unwrap();
        assert_eq!(c.read(0, 25), 3 + 10);
        assert_eq!(c.write(0, 25), 3 + 3);
        assert!(DmaChannels::new(DmaConfig {
            bytes_per_cycle: 0,
            ..cfg
        })
        .is_err());
    }

    #[test]
    fn sim_dma_moves_data_times_it_and_counts_faults() {
        let mut host = Host::new(&HostConfig::default()).unwrap();
        let r = host.alloc_dma(256).unwrap();
        let mut ch = DmaChannels::new(DmaConfig::default()).unwrap();
        {
            let mut port = SimDma::new(&mut host, &mut ch);
            assert_eq!(port.dma_write(10, r.iova, &[3; 128]), Ok(12));
            let mut buf = [0; 128];
            assert_eq!(port.dma_read(10, r.iova, &mut buf), Ok(10 + 2 + 250));
            assert_eq!(buf, [3; 128]);
            // Faults: no channel time, counted in both places.
            assert!(port.dma_read(20, r.iova + 200, &mut buf).is_err());
            assert!(port.dma_write(20, r.va, &[0; 4]).is_err());
        }
        assert_eq!(ch.read_busy_until(), 12);
        assert_eq!(
            ch.stats(),
            DmaStats {
                reads: 1,
                writes: 1,
                bytes_read: 128,
                bytes_written: 128,
                faults: 2
            }
        );
        assert_eq!(host.fault_count(), 2);
    }
}
