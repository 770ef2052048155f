//! Atomic ACK Extended Transport Header, 8 bytes: the value the target held before the
//! atomic operation.

use core::fmt;

use super::{get_be, put_be, Field, WireError};

mod field {
    use super::Field;

    pub const ORIG_REMOTE_DATA: Field = 0..8;
}

/// Length of the AtomicAckETH.
pub const HEADER_LEN: usize = field::ORIG_REMOTE_DATA.end;

/// A read/write view of an AtomicAckETH.
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

    pub fn orig_remote_data(&self) -> u64 {
        get_be(&self.buffer.as_ref()[field::ORIG_REMOTE_DATA])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    pub fn set_orig_remote_data(&mut self, value: u64) {
        put_be(&mut self.buffer.as_mut()[field::ORIG_REMOTE_DATA], value);
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Packet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AtomicAckETH orig={:#x}", self.orig_remote_data())
    }
}

/// The values of an AtomicAckETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    pub orig_remote_data: u64,
}

impl Repr {
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Repr, WireError> {
        packet.check_len()?;
        Ok(Repr {
            orig_remote_data: packet.orig_remote_data(),
        })
    }

    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// # Panics
    /// If the buffer is shorter than [`HEADER_LEN`].
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
        packet.set_orig_remote_data(self.orig_remote_data);
    }
}

impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AtomicAckETH orig={:#x}", self.orig_remote_data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static BYTES: [u8; 8] = [0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2a];
    const REPR: Repr = Repr {
        orig_remote_data: 0x8000_0000_0000_002a,
    };

    #[test]
    fn parse_and_emit_are_byte_exact() {
        let packet = Packet::new_checked(&BYTES[..]).unwrap();
        assert_eq!(Repr::parse(&packet).unwrap(), REPR);
        let mut out = [0u8; 8];
        REPR.emit(&mut Packet::new_unchecked(&mut out[..]));
        assert_eq!(out, BYTES);
        assert_eq!(REPR.buffer_len(), 8);
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
        assert_eq!(REPR.to_string(), "AtomicAckETH orig=0x800000000000002a");
        assert_eq!(
            Packet::new_checked(&BYTES[..]).unwrap().to_string(),
            REPR.to_string()
        );
    }
}
