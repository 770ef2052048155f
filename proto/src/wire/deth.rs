//! Datagram Extended Transport Header, 8 bytes: Q_Key and source QP. Used by UD, which is not
//! supported yet; no RC opcode carries it.

use core::fmt;

use super::{get_be, put_be, Field, WireError};

mod field {
    use super::Field;

    pub const QKEY: Field = 0..4;
    pub const RESERVED: usize = 4;
    pub const SRC_QP: Field = 5..8;
}

/// Length of the DETH.
pub const HEADER_LEN: usize = field::SRC_QP.end;

const QP_MASK: u32 = 0x00FF_FFFF;

/// A read/write view of a DETH.
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

    pub fn qkey(&self) -> u32 {
        get_be(&self.buffer.as_ref()[field::QKEY]) as u32
    }

    /// Source queue pair number, 24 bits.
    pub fn src_qp(&self) -> u32 {
        get_be(&self.buffer.as_ref()[field::SRC_QP]) as u32
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    pub fn set_qkey(&mut self, value: u32) {
        put_be(&mut self.buffer.as_mut()[field::QKEY], value.into());
    }

    /// Sets the source QP (bits above 24 are dropped) and clears the reserved byte.
    pub fn set_src_qp(&mut self, value: u32) {
        self.buffer.as_mut()[field::RESERVED] = 0;
        put_be(
            &mut self.buffer.as_mut()[field::SRC_QP],
            (value & QP_MASK).into(),
        );
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Packet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "DETH qkey={:#010x} src_qp={:#08x}",
            self.qkey(),
            self.src_qp()
        )
    }
}

/// The values of a DETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    pub qkey: u32,
    /// 24 bits.
    pub src_qp: u32,
}

impl Repr {
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Repr, WireError> {
        packet.check_len()?;
        Ok(Repr {
            qkey: packet.qkey(),
            src_qp: packet.src_qp(),
        })
    }

    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// # Panics
    /// If the buffer is shorter than [`HEADER_LEN`].
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
        packet.set_qkey(self.qkey);
        packet.set_src_qp(self.src_qp);
    }
}

impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "DETH qkey={:#010x} src_qp={:#08x}",
            self.qkey, self.src_qp
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static BYTES: [u8; 8] = [0x80, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01];
    const REPR: Repr = Repr {
        qkey: 0x8001_0000,
        src_qp: 1,
    };

    #[test]
    fn parse_and_emit_are_byte_exact() {
        let packet = Packet::new_checked(&BYTES[..]).unwrap();
        assert_eq!(Repr::parse(&packet).unwrap(), REPR);
        let mut out = [0xFFu8; 8]; // the reserved byte must come out zero
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
        assert_eq!(REPR.to_string(), "DETH qkey=0x80010000 src_qp=0x000001");
        assert_eq!(
            Packet::new_checked(&BYTES[..]).unwrap().to_string(),
            REPR.to_string()
        );
    }
}
