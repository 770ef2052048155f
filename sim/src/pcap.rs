//! Frame captures in the classic pcap format, readable by Wireshark, tshark and scapy.
//!
//! Encoding uses the `pcap-file` crate: the format is simple, but that crate is small,
//! maintained, reads what it writes and what other tools write (both byte orders, both
//! timestamp resolutions), which a hand-written reader for tests would not.
//!
//! Files are written little-endian with nanosecond timestamps and LINKTYPE_ETHERNET
//! (frames from the destination MAC up, no FCS). A frame recorded at cycle `c` gets the
//! timestamp `c x 4 ns` after the epoch, so cycles survive a round trip exactly and the same
//! simulation gives byte-identical files on every machine.

use std::cell::RefCell;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;
use std::rc::Rc;
use std::time::Duration;

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapReader, PcapWriter};
use pcap_file::{DataLink, Endianness, TsResolution};

use crate::{SimError, NS_PER_CYCLE};

/// Largest frame a capture holds (the classic 65535; jumbo frames fit).
pub const SNAPLEN: u32 = 65535;

/// The capture timestamp of cycle `cycle`.
pub fn cycle_to_timestamp(cycle: u64) -> Duration {
    Duration::from_nanos(cycle.saturating_mul(NS_PER_CYCLE))
}

/// The cycle of a capture timestamp (rounded down to a whole cycle).
pub fn timestamp_to_cycle(ts: Duration) -> u64 {
    u64::try_from(ts.as_nanos() / u128::from(NS_PER_CYCLE)).unwrap_or(u64::MAX)
}

/// Writes frames with their cycle into a pcap stream.
#[derive(Debug)]
pub struct PcapTap<W: Write> {
    writer: PcapWriter<W>,
    frames: u64,
}

impl<W: Write> PcapTap<W> {
    /// Starts a capture on `writer` (writes the file header).
    pub fn new(writer: W) -> Result<Self, SimError> {
        let header = PcapHeader {
            snaplen: SNAPLEN,
            datalink: DataLink::ETHERNET,
            ts_resolution: TsResolution::NanoSecond,
            endianness: Endianness::Little,
            ..PcapHeader::default()
        };
        Ok(PcapTap {
            writer: PcapWriter::with_header(writer, header)?,
            frames: 0,
        })
    }

    /// Records `frame` as seen at cycle `cycle`.
    pub fn record(&mut self, cycle: u64, frame: &[u8]) -> Result<(), SimError> {
        let len = u32::try_from(frame.len())
            .map_err(|_| pcap_file::PcapError::InvalidField("frame longer than 4 GiB"))?;
        let packet = PcapPacket::new(cycle_to_timestamp(cycle), len, frame);
        self.writer.write_packet(&packet)?;
        self.frames += 1;
        Ok(())
    }

    /// Frames recorded so far.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Ends the capture: flushes and returns the writer.
    pub fn finish(self) -> Result<W, SimError> {
        let mut w = self.writer.into_writer();
        w.flush()?;
        Ok(w)
    }
}

impl PcapTap<BufWriter<File>> {
    /// Starts a capture into a new file at `path` (truncating an existing one).
    pub fn create(path: impl AsRef<Path>) -> Result<Self, SimError> {
        PcapTap::new(BufWriter::new(File::create(path)?))
    }
}

/// Reads a whole pcap stream: `(cycle, frame)` in file order.
pub fn read_pcap<R: Read>(reader: R) -> Result<Vec<(u64, Vec<u8>)>, SimError> {
    let mut r = PcapReader::new(reader)?;
    let mut out = Vec::new();
    while let Some(packet) = r.next_packet() {
        let p = packet?;
        out.push((timestamp_to_cycle(p.timestamp), p.data.into_owned()));
    }
    Ok(out)
}

/// Reads a whole pcap file: `(cycle, frame)` in file order.
pub fn read_pcap_file(path: impl AsRef<Path>) -> Result<Vec<(u64, Vec<u8>)>, SimError> {
    read_pcap(BufReader::new(File::open(path)?))
}

/// An in-memory byte sink that stays readable after being handed to a tap: clones share
/// one buffer. For tests that capture without touching the file system.
#[derive(Debug, Clone, Default)]
pub struct SharedBuffer(Rc<RefCell<Vec<u8>>>);

impl SharedBuffer {
    /// An empty buffer.
    pub fn new() -> Self {
        Self::default()
    }

    /// A copy of the bytes written so far.
    pub fn contents(&self) -> Vec<u8> {
        self.0.borrow().clone()
    }

    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.0.borrow().len()
    }

    /// Nothing written yet.
    pub fn is_empty(&self) -> bool {
        self.0.borrow().is_empty()
    }
}

impl Write for SharedBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames() -> Vec<(u64, Vec<u8>)> {
        vec![
            (0, vec![0xff; 60]),
            (1, (0..=255).collect()),
            (250_000_001, vec![1, 2, 3]),
            (u64::from(u32::MAX) * 2, vec![0x42; 9000]),
        ]
    }

    #[test]
    fn round_trip_in_memory() {
        let buf = SharedBuffer::new();
        let mut tap = PcapTap::new(buf.clone()).unwrap();
        for (c, f) in frames() {
            tap.record(c, &f).unwrap();
        }
        assert_eq!(tap.frames(), 4);
        tap.finish().unwrap();
        let bytes = buf.contents();
        // Little-endian nanosecond magic, version 2.4, LINKTYPE_ETHERNET.
        assert_eq!(&bytes[..4], &[0x4d, 0x3c, 0xb2, 0xa1]);
        assert_eq!(&bytes[4..8], &[2, 0, 4, 0]);
        assert_eq!(&bytes[20..24], &[1, 0, 0, 0]);
        // Second 1 + 4 ns for cycle 250_000_001 (1.000000004 s).
        assert_eq!(read_pcap(&bytes[..]).unwrap(), frames());
    }

    #[test]
    fn round_trip_through_a_file() {
        let path = std::env::temp_dir().join(format!("rocenic-sim-{}.pcap", std::process::id()));
        let mut tap = PcapTap::create(&path).unwrap();
        for (c, f) in frames() {
            tap.record(c, &f).unwrap();
        }
        tap.finish().unwrap();
        let got = read_pcap_file(&path);
        std::fs::remove_file(&path).unwrap();
        assert_eq!(got.unwrap(), frames());
    }

    #[test]
    fn timestamps() {
        assert_eq!(cycle_to_timestamp(250_000_000), Duration::from_secs(1));
        assert_eq!(timestamp_to_cycle(Duration::from_nanos(7)), 1);
        assert_eq!(timestamp_to_cycle(cycle_to_timestamp(12345)), 12345);
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(read_pcap(&b"not a pcap file at all, no"[..]).is_err());
        assert!(read_pcap(&b""[..]).is_err());
    }
}
