//! Immediate Data extended header, 4 bytes.
//!
//! The value is the four wire bytes read big-endian. Verbs' `imm_data` is the same bytes in
//! network order, so `imm_data == u32::to_be(value)` on the host.

use core::fmt;

use super::{get_be, put_be, Field, WireError};

mod field {
    use super::Field;

    pub const IMM_DATA: Field = 0..4;
}

/// Length of the ImmDt header.
pub const HEADER_LEN: usize = field::IMM_DATA.end;

/// A read/write view of an ImmDt header.
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

    pub fn imm_data(&self) -> u32 {
        get_be(&self.buffer.as_ref()[field::IMM_DATA]) as u32
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    pub fn set_imm_data(&mut self, value: u32) {
        put_be(&mut self.buffer.as_mut()[field::IMM_DATA], value.into());
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Packet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ImmDt {:#010x}", self.imm_data())
    }
}

/// The value of an ImmDt header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    pub imm_data: u32,
}

impl Repr {
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Repr, WireError> {
        packet.check_len()?;
        Ok(Repr {
            imm_data: packet.imm_data(),
        })
    }

    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// # Panics
    /// If the buffer is shorter than [`HEADER_LEN`].
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
        packet.set_imm_data(self.imm_data);
    }
}

impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ImmDt {:#010x}", self.imm_data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static BYTES: [u8; 4] = [0xca, 0xfe, 0xba, 0xbe];
    const REPR: Repr = Repr {
        imm_data: 0xcafe_babe,
    };

    #[test]
    fn parse_and_emit_are_byte_exact() {
        let packet = Packet::new_checked(&BYTES[..]).unwrap();
        assert_eq!(Repr::parse(&packet).unwrap(), REPR);
        let mut out = [0u8; 4];
        REPR.emit(&mut Packet::new_unchecked(&mut out[..]));
        assert_eq!(out, BYTES);
        assert_eq!(REPR.buffer_len(), 4);
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
        assert_eq!(REPR.to_string(), "ImmDt 0xcafebabe");
        assert_eq!(
            Packet::new_checked(&BYTES[..]).unwrap().to_string(),
            REPR.to_string()
        );
    }
}
