//! Ethernet II header: destination and source MAC, ethertype. No VLAN tags yet.

use core::fmt;

use super::{get_array, get_be, put_be, Field, WireError};

/// A 48-bit Ethernet MAC address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Address(pub [u8; 6]);

impl Address {
    pub const BROADCAST: Address = Address([0xFF; 6]);

    /// The group bit (least significant bit of the first octet).
    pub const fn is_multicast(&self) -> bool {
        self.0[0] & 0x01 != 0
    }

    pub const fn is_unicast(&self) -> bool {
        !self.is_multicast()
    }
}

impl From<[u8; 6]> for Address {
    fn from(bytes: [u8; 6]) -> Self {
        Address(bytes)
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            b[0], b[1], b[2], b[3], b[4], b[5]
        )
    }
}

/// The ethertype field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EtherType {
    Ipv4,
    Arp,
    Unknown(u16),
}

impl From<u16> for EtherType {
    fn from(value: u16) -> Self {
        match value {
            0x0800 => EtherType::Ipv4,
            0x0806 => EtherType::Arp,
            other => EtherType::Unknown(other),
        }
    }
}

impl From<EtherType> for u16 {
    fn from(value: EtherType) -> Self {
        match value {
            EtherType::Ipv4 => 0x0800,
            EtherType::Arp => 0x0806,
            EtherType::Unknown(other) => other,
        }
    }
}

impl fmt::Display for EtherType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EtherType::Ipv4 => write!(f, "IPv4"),
            EtherType::Arp => write!(f, "ARP"),
            EtherType::Unknown(other) => write!(f, "{other:#06x}"),
        }
    }
}

mod field {
    use super::Field;

    pub const DESTINATION: Field = 0..6;
    pub const SOURCE: Field = 6..12;
    pub const ETHERTYPE: Field = 12..14;
    pub const PAYLOAD: usize = ETHERTYPE.end;
}

/// Length of the Ethernet II header (no VLAN tag).
pub const HEADER_LEN: usize = field::PAYLOAD;

/// A read/write view of an Ethernet II frame (without FCS).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Frame<T> {
    /// Wraps a buffer without checking its length; accessors may panic.
    pub const fn new_unchecked(buffer: T) -> Frame<T> {
        Frame { buffer }
    }

    /// Wraps a buffer after [`check_len`](Self::check_len).
    pub fn new_checked(buffer: T) -> Result<Frame<T>, WireError> {
        let frame = Self::new_unchecked(buffer);
        frame.check_len()?;
        Ok(frame)
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

    /// The buffer length a frame with `payload_len` bytes of payload needs.
    pub const fn buffer_len(payload_len: usize) -> usize {
        HEADER_LEN + payload_len
    }

    pub fn dst_addr(&self) -> Address {
        Address(get_array(&self.buffer.as_ref()[field::DESTINATION]))
    }

    pub fn src_addr(&self) -> Address {
        Address(get_array(&self.buffer.as_ref()[field::SOURCE]))
    }

    pub fn ethertype(&self) -> EtherType {
        EtherType::from(get_be(&self.buffer.as_ref()[field::ETHERTYPE]) as u16)
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Frame<&'a T> {
    /// Everything after the header, including any trailing Ethernet padding.
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[field::PAYLOAD..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Frame<T> {
    pub fn set_dst_addr(&mut self, value: Address) {
        self.buffer.as_mut()[field::DESTINATION].copy_from_slice(&value.0);
    }

    pub fn set_src_addr(&mut self, value: Address) {
        self.buffer.as_mut()[field::SOURCE].copy_from_slice(&value.0);
    }

    pub fn set_ethertype(&mut self, value: EtherType) {
        put_be(
            &mut self.buffer.as_mut()[field::ETHERTYPE],
            u16::from(value).into(),
        );
    }

    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD..]
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Frame<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "EthernetII src={} dst={} type={}",
            self.src_addr(),
            self.dst_addr(),
            self.ethertype()
        )
    }
}

/// The values of an Ethernet II header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    pub src_addr: Address,
    pub dst_addr: Address,
    pub ethertype: EtherType,
}

impl Repr {
    pub fn parse<T: AsRef<[u8]> + ?Sized>(frame: &Frame<&T>) -> Result<Repr, WireError> {
        frame.check_len()?;
        Ok(Repr {
            src_addr: frame.src_addr(),
            dst_addr: frame.dst_addr(),
            ethertype: frame.ethertype(),
        })
    }

    /// The header length; the payload is not included.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header.
    ///
    /// # Panics
    /// If the buffer is shorter than [`HEADER_LEN`].
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, frame: &mut Frame<&mut T>) {
        frame.set_dst_addr(self.dst_addr);
        frame.set_src_addr(self.src_addr);
        frame.set_ethertype(self.ethertype);
    }
}

impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "EthernetII src={} dst={} type={}",
            self.src_addr, self.dst_addr, self.ethertype
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Ethernet header of the ConnectX-4 Lx CNP capture in scapy's test/contrib/roce.uts.
    static FRAME_BYTES: [u8; 16] = [
        0xe4, 0x1d, 0x2d, 0xab, 0x2b, 0xc2, 0x7c, 0xfe, 0x90, 0x64, 0x3b, 0x32, 0x08, 0x00, 0x45,
        0xc2,
    ];

    fn repr() -> Repr {
        Repr {
            dst_addr: Address([0xe4, 0x1d, 0x2d, 0xab, 0x2b, 0xc2]),
            src_addr: Address([0x7c, 0xfe, 0x90, 0x64, 0x3b, 0x32]),
            ethertype: EtherType::Ipv4,
        }
    }

    #[test]
    fn deconstruct() {
        let frame = Frame::new_checked(&FRAME_BYTES[..]).unwrap();
        assert_eq!(
            frame.dst_addr(),
            Address([0xe4, 0x1d, 0x2d, 0xab, 0x2b, 0xc2])
        );
        assert_eq!(
            frame.src_addr(),
            Address([0x7c, 0xfe, 0x90, 0x64, 0x3b, 0x32])
        );
        assert_eq!(frame.ethertype(), EtherType::Ipv4);
        assert_eq!(frame.payload(), &[0x45, 0xc2]);
        assert_eq!(Repr::parse(&frame).unwrap(), repr());
    }

    #[test]
    fn emit_is_byte_exact() {
        let mut bytes = [0u8; 16];
        bytes[14..].copy_from_slice(&[0x45, 0xc2]);
        let mut frame = Frame::new_unchecked(&mut bytes[..]);
        repr().emit(&mut frame);
        assert_eq!(bytes, FRAME_BYTES);
        assert_eq!(repr().buffer_len(), 14);
        assert_eq!(Frame::<&[u8]>::buffer_len(2), 16);
    }

    #[test]
    fn round_trip_and_truncation() {
        let mut bytes = [0u8; HEADER_LEN];
        let r = Repr {
            ethertype: EtherType::Unknown(0x86dd),
            ..repr()
        };
        r.emit(&mut Frame::new_unchecked(&mut bytes[..]));
        assert_eq!(
            Repr::parse(&Frame::new_checked(&bytes[..]).unwrap()).unwrap(),
            r
        );
        for len in 0..HEADER_LEN {
            assert_eq!(Frame::new_checked(&bytes[..len]), Err(WireError::Truncated));
            assert_eq!(
                Repr::parse(&Frame::new_unchecked(&bytes[..len])),
                Err(WireError::Truncated)
            );
        }
    }

    #[test]
    fn ethertype_and_address_conversions() {
        for v in [0x0800u16, 0x0806, 0x86dd, 0] {
            assert_eq!(u16::from(EtherType::from(v)), v);
        }
        assert_eq!(EtherType::from(0x0806), EtherType::Arp);
        assert!(Address::BROADCAST.is_multicast());
        assert!(repr().src_addr.is_unicast());
    }

    #[test]
    fn display() {
        assert_eq!(
            repr().to_string(),
            "EthernetII src=7c:fe:90:64:3b:32 dst=e4:1d:2d:ab:2b:c2 type=IPv4"
        );
        let frame = Frame::new_checked(&FRAME_BYTES[..]).unwrap();
        assert_eq!(frame.to_string(), repr().to_string());
        assert_eq!(EtherType::Unknown(0x86dd).to_string(), "0x86dd");
    }
}
