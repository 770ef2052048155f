//! RDMA Extended Transport Header, 16 bytes: the remote buffer of a WRITE or READ.

use core::fmt;

use super::{get_be, put_be, Field, WireError};

mod field {
    use super::Field;

    pub const VA: Field = 0..8;
    pub const RKEY: Field = 8..12;
    pub const DMA_LEN: Field = 12..16;
}

/// Length of the RETH.
pub const HEADER_LEN: usize = field::DMA_LEN.end;

/// A read/write view of a RETH.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking its length; accessors may panic.
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps a buffer after [`check_len`](Self::check_len).
    pub fn new_checked(buffer: T) -> Result<Packet<T>, WireError> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Ensures no accessor can panic: the buffer holds the whole header.
    pub fn check_len(&self) -> Result<(), WireError> {
        if self.buffer.as_ref().len() < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        Ok(())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Remote virtual address.
    pub fn va(&self) -> u64 {
        get_be(&self.buffer.as_ref()[field::VA])
    }

    pub fn rkey(&self) -> u32 {
        get_be(&self.buffer.as_ref()[field::RKEY]) as u32
    }

    /// Length of the whole message in bytes (not of this packet).
    pub fn dma_len(&self) -> u32 {
        get_be(&self.buffer.as_ref()[field::DMA_LEN]) as u32
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    pub fn set_va(&mut self, value: u64) {
        put_be(&mut self.buffer.as_mut()[field::VA], value);
    }

    pub fn set_rkey(&mut self, value: u32) {
        put_be(&mut self.buffer.as_mut()[field::RKEY], value.into());
    }

    pub fn set_dma_len(&mut self, value: u32) {
        put_be(&mut self.buffer.as_mut()[field::DMA_LEN], value.into());
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Packet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "RETH va={:#x} rkey={:#010x} len={}",
            self.va(),
            self.rkey(),
            self.dma_len()
        )
    }
}

/// The values of a RETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    pub va: u64,
    pub rkey: u32,
    pub dma_len: u32,
}

impl Repr {
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Repr, WireError> {
        packet.check_len()?;
        Ok(Repr {
            va: packet.va(),
            rkey: packet.rkey(),
            dma_len: packet.dma_len(),
        })
    }

    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// # Panics
    /// If the buffer is shorter than [`HEADER_LEN`].
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
        packet.set_va(self.va);
        packet.set_rkey(self.rkey);
        packet.set_dma_len(self.dma_len);
    }
}

impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "RETH va={:#x} rkey={:#010x} len={}",
            self.va, self.rkey, self.dma_len
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static BYTES: [u8; 16] = [
        0x00, 0x00, 0x7f, 0x00, 0x12, 0x34, 0x56, 0x78, 0xde, 0xad, 0xbe, 0xef, 0x00, 0x01, 0x00,
        0x05,
    ];

    const REPR: Repr = Repr {
        va: 0x7f00_1234_5678,
        rkey: 0xdead_beef,
        dma_len: 0x1_0005,
    };

    #[test]
    fn parse_and_emit_are_byte_exact() {
        let packet = Packet::new_checked(&BYTES[..]).unwrap();
        assert_eq!(packet.va(), 0x7f00_1234_5678);
        assert_eq!(packet.rkey(), 0xdead_beef);
        assert_eq!(packet.dma_len(), 0x1_0005);
        assert_eq!(Repr::parse(&packet).unwrap(), REPR);
        let mut out = [0u8; 16];
        REPR.emit(&mut Packet::new_unchecked(&mut out[..]));
        assert_eq!(out, BYTES);
        assert_eq!(REPR.buffer_len(), 16);
    }

    #[test]
    fn round_trip_extremes() {
        for r in [
            Repr {
                va: u64::MAX,
                rkey: u32::MAX,
                dma_len: u32::MAX,
            },
            Repr {
                va: 0,
                rkey: 0,
                dma_len: 0,
            },
        ] {
            let mut out = [0x55u8; 16];
            r.emit(&mut Packet::new_unchecked(&mut out[..]));
            assert_eq!(
                Repr::parse(&Packet::new_checked(&out[..]).unwrap()).unwrap(),
                r
            );
        }
    }

    #[test]
    fn truncated() {
        for len in 0..HEADER_LEN {
            assert_eq!(
                Packet::new_checked(&BYTES[..len]),
                Err(WireError::Truncated)
            );
            assert_eq!(
                Repr::parse(&Packet::new_unchecked(&BYTES[..len])),
                Err(WireError::Truncated)
            );
        }
    }

    #[test]
    fn display() {
        assert_eq!(
            REPR.to_string(),
            "RETH va=0x7f0012345678 rkey=0xdeadbeef len=65541"
        );
        assert_eq!(
            Packet::new_checked(&BYTES[..]).unwrap().to_string(),
            REPR.to_string()
        );
    }
}
