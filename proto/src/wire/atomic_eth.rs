//! Atomic Extended Transport Header, 28 bytes: the target and operands of COMPARE_SWAP and
//! FETCH_ADD.

use core::fmt;

use super::{get_be, put_be, Field, WireError};

mod field {
    use super::Field;

    pub const VA: Field = 0..8;
    pub const RKEY: Field = 8..12;
    /// The swap value of COMPARE_SWAP, the addend of FETCH_ADD.
    pub const SWAP_ADD: Field = 12..20;
    /// The compare value of COMPARE_SWAP; unused by FETCH_ADD.
    pub const COMPARE: Field = 20..28;
}

/// Length of the AtomicETH.
pub const HEADER_LEN: usize = field::COMPARE.end;

/// A read/write view of an AtomicETH.
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

    /// Remote virtual address of the 8-byte target.
    pub fn va(&self) -> u64 {
        get_be(&self.buffer.as_ref()[field::VA])
    }

    pub fn rkey(&self) -> u32 {
        get_be(&self.buffer.as_ref()[field::RKEY]) as u32
    }

    pub fn swap_add(&self) -> u64 {
        get_be(&self.buffer.as_ref()[field::SWAP_ADD])
    }

    pub fn compare(&self) -> u64 {
        get_be(&self.buffer.as_ref()[field::COMPARE])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    pub fn set_va(&mut self, value: u64) {
        put_be(&mut self.buffer.as_mut()[field::VA], value);
    }

    pub fn set_rkey(&mut self, value: u32) {
        put_be(&mut self.buffer.as_mut()[field::RKEY], value.into());
    }

    pub fn set_swap_add(&mut self, value: u64) {
        put_be(&mut self.buffer.as_mut()[field::SWAP_ADD], value);
    }

    pub fn set_compare(&mut self, value: u64) {
        put_be(&mut self.buffer.as_mut()[field::COMPARE], value);
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Packet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "AtomicETH va={:#x} rkey={:#010x} swap_add={:#x} compare={:#x}",
            self.va(),
            self.rkey(),
            self.swap_add(),
            self.compare()
        )
    }
}

/// The values of an AtomicETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    pub va: u64,
    pub rkey: u32,
    pub swap_add: u64,
    pub compare: u64,
}

impl Repr {
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Repr, WireError> {
        packet.check_len()?;
        Ok(Repr {
            va: packet.va(),
            rkey: packet.rkey(),
            swap_add: packet.swap_add(),
            compare: packet.compare(),
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
        packet.set_swap_add(self.swap_add);
        packet.set_compare(self.compare);
    }
}

impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "AtomicETH va={:#x} rkey={:#010x} swap_add={:#x} compare={:#x}",
            self.va, self.rkey, self.swap_add, self.compare
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static BYTES: [u8; 28] = [
        0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x10, 0x08, // VA
        0x00, 0x00, 0x42, 0x42, // R_Key
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, // Swap (Add) Data
        0xf0, 0xe0, 0xd0, 0xc0, 0xb0, 0xa0, 0x90, 0x80, // Compare Data
    ];

    const REPR: Repr = Repr {
        va: 0x1_0000_1008,
        rkey: 0x4242,
        swap_add: 0x0102_0304_0506_0708,
        compare: 0xf0e0_d0c0_b0a0_9080,
    };

    #[test]
    fn parse_and_emit_are_byte_exact() {
        let packet = Packet::new_checked(&BYTES[..]).unwrap();
        assert_eq!(packet.va(), REPR.va);
        assert_eq!(packet.rkey(), REPR.rkey);
        assert_eq!(packet.swap_add(), REPR.swap_add);
        assert_eq!(packet.compare(), REPR.compare);
        assert_eq!(Repr::parse(&packet).unwrap(), REPR);
        let mut out = [0u8; 28];
        REPR.emit(&mut Packet::new_unchecked(&mut out[..]));
        assert_eq!(out, BYTES);
        assert_eq!(REPR.buffer_len(), 28);
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
            "AtomicETH va=0x100001008 rkey=0x00004242 swap_add=0x102030405060708 \
             compare=0xf0e0d0c0b0a09080"
        );
        assert_eq!(
            Packet::new_checked(&BYTES[..]).unwrap().to_string(),
            REPR.to_string()
        );
    }
}
