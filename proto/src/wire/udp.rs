//! UDP header, 8 bytes. RoCE v2 over IPv4 sends the checksum as 0 (the ICRC protects the
//! packet), so emit writes 0 and parse does not verify it.

use core::fmt;

use super::{get_be, put_be, Field, WireError};

/// The IANA-assigned UDP destination port of RoCE v2.
pub const ROCE_V2_PORT: u16 = 4791;

// Visible to the ICRC, which masks the checksum.
pub(super) mod field {
    use super::Field;

    pub const SRC_PORT: Field = 0..2;
    pub const DST_PORT: Field = 2..4;
    pub const LENGTH: Field = 4..6;
    pub const CHECKSUM: Field = 6..8;
}

/// Length of the UDP header.
pub const HEADER_LEN: usize = field::CHECKSUM.end;

/// A read/write view of a UDP datagram.
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

    /// Ensures no accessor can panic: the buffer holds the header, the length field is at
    /// least 8, and the buffer holds that many bytes.
    pub fn check_len(&self) -> Result<(), WireError> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        let field_len = usize::from(self.len());
        if field_len < HEADER_LEN {
            return Err(WireError::BadUdpLength);
        }
        if len < field_len {
            return Err(WireError::Truncated);
        }
        Ok(())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn src_port(&self) -> u16 {
        get_be(&self.buffer.as_ref()[field::SRC_PORT]) as u16
    }

    pub fn dst_port(&self) -> u16 {
        get_be(&self.buffer.as_ref()[field::DST_PORT]) as u16
    }

    /// Header plus payload, in bytes.
    // The name of the field; an `is_empty` would make no sense for it.
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> u16 {
        get_be(&self.buffer.as_ref()[field::LENGTH]) as u16
    }

    pub fn checksum(&self) -> u16 {
        get_be(&self.buffer.as_ref()[field::CHECKSUM]) as u16
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Packet<&'a T> {
    /// The payload as the length field announces it.
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[HEADER_LEN..usize::from(self.len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    pub fn set_src_port(&mut self, value: u16) {
        put_be(&mut self.buffer.as_mut()[field::SRC_PORT], value.into());
    }

    pub fn set_dst_port(&mut self, value: u16) {
        put_be(&mut self.buffer.as_mut()[field::DST_PORT], value.into());
    }

    pub fn set_len(&mut self, value: u16) {
        put_be(&mut self.buffer.as_mut()[field::LENGTH], value.into());
    }

    pub fn set_checksum(&mut self, value: u16) {
        put_be(&mut self.buffer.as_mut()[field::CHECKSUM], value.into());
    }

    /// The payload as the length field announces it.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = usize::from(self.len());
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Packet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "UDP src={} dst={} len={} csum={:#06x}",
            self.src_port(),
            self.dst_port(),
            self.len(),
            self.checksum()
        )
    }
}

/// The values of a UDP header that a sender chooses. The length is derived by
/// [`Repr::emit`]; the checksum is always sent as 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    pub src_port: u16,
    pub dst_port: u16,
}

impl Repr {
    /// Checks the lengths ([`Packet::check_len`]); any port and checksum are accepted.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Repr, WireError> {
        packet.check_len()?;
        Ok(Repr {
            src_port: packet.src_port(),
            dst_port: packet.dst_port(),
        })
    }

    /// The header length; the payload is not included.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header for a payload of `payload_len` bytes, with checksum 0. The caller
    /// keeps `payload_len` at most 65535 - 8.
    ///
    /// # Panics
    /// If the buffer is shorter than [`HEADER_LEN`].
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(
        &self,
        packet: &mut Packet<&mut T>,
        payload_len: usize,
    ) {
        packet.set_src_port(self.src_port);
        packet.set_dst_port(self.dst_port);
        packet.set_len((HEADER_LEN + payload_len) as u16);
        packet.set_checksum(0);
    }
}

impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "UDP src={} dst={}", self.src_port, self.dst_port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // UDP header of the ConnectX-4 Lx CNP in scapy's test/contrib/roce.uts (source port 0,
    // length 40, checksum 0), followed by 32 bytes of payload.
    static HEADER_BYTES: [u8; 8] = [0x00, 0x00, 0x12, 0xb7, 0x00, 0x28, 0x00, 0x00];

    fn datagram() -> Vec<u8> {
        let mut bytes = HEADER_BYTES.to_vec();
        bytes.extend((0..32).map(|i| i as u8));
        bytes
    }

    #[test]
    fn deconstruct() {
        let bytes = datagram();
        let packet = Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(packet.src_port(), 0);
        assert_eq!(packet.dst_port(), ROCE_V2_PORT);
        assert_eq!(packet.len(), 40);
        assert_eq!(packet.checksum(), 0);
        assert_eq!(packet.payload(), &bytes[8..]);
        assert_eq!(
            Repr::parse(&packet).unwrap(),
            Repr {
                src_port: 0,
                dst_port: 4791
            }
        );
    }

    #[test]
    fn emit_is_byte_exact() {
        let mut bytes = [0xFFu8; 8];
        Repr {
            src_port: 0,
            dst_port: ROCE_V2_PORT,
        }
        .emit(&mut Packet::new_unchecked(&mut bytes[..]), 32);
        assert_eq!(bytes, HEADER_BYTES);
    }

    #[test]
    fn round_trip() {
        let r = Repr {
            src_port: 0xC000,
            dst_port: 0x1234,
        };
        let mut bytes = [0u8; 11];
        r.emit(&mut Packet::new_unchecked(&mut bytes[..]), 3);
        let packet = Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(Repr::parse(&packet).unwrap(), r);
        assert_eq!(packet.payload().len(), 3);
        assert_eq!(r.buffer_len(), 8);
    }

    #[test]
    fn refusals() {
        let bytes = datagram();
        assert_eq!(Packet::new_checked(&bytes[..7]), Err(WireError::Truncated));
        assert_eq!(Packet::new_checked(&bytes[..39]), Err(WireError::Truncated));
        let mut short = bytes.clone();
        Packet::new_unchecked(&mut short[..]).set_len(7);
        assert_eq!(
            Packet::new_checked(&short[..]),
            Err(WireError::BadUdpLength)
        );
        assert_eq!(
            Repr::parse(&Packet::new_unchecked(&short[..])),
            Err(WireError::BadUdpLength)
        );
    }

    #[test]
    fn display() {
        let bytes = datagram();
        let packet = Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(packet.to_string(), "UDP src=0 dst=4791 len=40 csum=0x0000");
        assert_eq!(
            Repr::parse(&packet).unwrap().to_string(),
            "UDP src=0 dst=4791"
        );
    }
}
