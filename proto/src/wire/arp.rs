//! ARP (RFC 826) for Ethernet and IPv4, 28 bytes: what a host needs to find the MAC of an
//! IPv4 neighbour and to answer for its own address.
//!
//! The NIC itself never sees ARP: it sends RoCE frames to the MAC its QP's address vector
//! holds. ARP is answered and resolved on the host side of the port (see `docs/design.md`),
//! with these views.

use core::fmt;

use super::ethernet::Address as EthernetAddress;
use super::ipv4::Address as Ipv4Address;
use super::{get_array, get_be, put_be, Field};

/// Hardware type of Ethernet.
pub const HTYPE_ETHERNET: u16 = 1;
/// Protocol type of IPv4 (its ethertype).
pub const PTYPE_IPV4: u16 = 0x0800;

mod field {
    use super::Field;

    pub const HTYPE: Field = 0..2;
    pub const PTYPE: Field = 2..4;
    pub const HLEN: usize = 4;
    pub const PLEN: usize = 5;
    pub const OPER: Field = 6..8;
    pub const SHA: Field = 8..14;
    pub const SPA: Field = 14..18;
    pub const THA: Field = 18..24;
    pub const TPA: Field = 24..28;
}

/// Length of an ARP packet for Ethernet and IPv4 (what follows the Ethernet header; a
/// frame carrying it is usually padded to the 60-byte Ethernet minimum).
pub const PACKET_LEN: usize = field::TPA.end;

/// Why an ARP packet was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ArpError {
    /// Fewer than [`PACKET_LEN`] bytes.
    #[error("ARP packet truncated")]
    Truncated,
    /// Not Ethernet hardware addresses and IPv4 protocol addresses.
    #[error(
        "ARP for hardware type {htype} / protocol {ptype:#06x} ({hlen}/{plen}-byte addresses) is not Ethernet/IPv4"
    )]
    Unsupported {
        htype: u16,
        ptype: u16,
        hlen: u8,
        plen: u8,
    },
}

/// The ARP operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    Request,
    Reply,
    Unknown(u16),
}

impl From<u16> for Operation {
    fn from(value: u16) -> Self {
        match value {
            1 => Operation::Request,
            2 => Operation::Reply,
            other => Operation::Unknown(other),
        }
    }
}

impl From<Operation> for u16 {
    fn from(value: Operation) -> Self {
        match value {
            Operation::Request => 1,
            Operation::Reply => 2,
            Operation::Unknown(other) => other,
        }
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Operation::Request => write!(f, "request"),
            Operation::Reply => write!(f, "reply"),
            Operation::Unknown(other) => write!(f, "operation {other}"),
        }
    }
}

/// A read/write view of an ARP packet (Ethernet/IPv4 layout).
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
    pub fn new_checked(buffer: T) -> Result<Packet<T>, ArpError> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Ensures no accessor can panic: the buffer holds all 28 bytes. Trailing bytes
    /// (Ethernet padding) are allowed.
    pub fn check_len(&self) -> Result<(), ArpError> {
        if self.buffer.as_ref().len() < PACKET_LEN {
            return Err(ArpError::Truncated);
        }
        Ok(())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn hardware_type(&self) -> u16 {
        get_be(&self.buffer.as_ref()[field::HTYPE]) as u16
    }

    pub fn protocol_type(&self) -> u16 {
        get_be(&self.buffer.as_ref()[field::PTYPE]) as u16
    }

    pub fn hardware_len(&self) -> u8 {
        self.buffer.as_ref()[field::HLEN]
    }

    pub fn protocol_len(&self) -> u8 {
        self.buffer.as_ref()[field::PLEN]
    }

    pub fn operation(&self) -> Operation {
        Operation::from(get_be(&self.buffer.as_ref()[field::OPER]) as u16)
    }

    pub fn source_hardware_addr(&self) -> EthernetAddress {
        EthernetAddress(get_array(&self.buffer.as_ref()[field::SHA]))
    }

    pub fn source_protocol_addr(&self) -> Ipv4Address {
        Ipv4Address(get_array(&self.buffer.as_ref()[field::SPA]))
    }

    pub fn target_hardware_addr(&self) -> EthernetAddress {
        EthernetAddress(get_array(&self.buffer.as_ref()[field::THA]))
    }

    pub fn target_protocol_addr(&self) -> Ipv4Address {
        Ipv4Address(get_array(&self.buffer.as_ref()[field::TPA]))
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    pub fn set_hardware_type(&mut self, value: u16) {
        put_be(&mut self.buffer.as_mut()[field::HTYPE], value.into());
    }

    pub fn set_protocol_type(&mut self, value: u16) {
        put_be(&mut self.buffer.as_mut()[field::PTYPE], value.into());
    }

    pub fn set_hardware_len(&mut self, value: u8) {
        self.buffer.as_mut()[field::HLEN] = value;
    }

    pub fn set_protocol_len(&mut self, value: u8) {
        self.buffer.as_mut()[field::PLEN] = value;
    }

    pub fn set_operation(&mut self, value: Operation) {
        put_be(
            &mut self.buffer.as_mut()[field::OPER],
            u16::from(value).into(),
        );
    }

    pub fn set_source_hardware_addr(&mut self, value: EthernetAddress) {
        self.buffer.as_mut()[field::SHA].copy_from_slice(&value.0);
    }

    pub fn set_source_protocol_addr(&mut self, value: Ipv4Address) {
        self.buffer.as_mut()[field::SPA].copy_from_slice(&value.0);
    }

    pub fn set_target_hardware_addr(&mut self, value: EthernetAddress) {
        self.buffer.as_mut()[field::THA].copy_from_slice(&value.0);
    }

    pub fn set_target_protocol_addr(&mut self, value: Ipv4Address) {
        self.buffer.as_mut()[field::TPA].copy_from_slice(&value.0);
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Packet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ARP htype={} ptype={:#06x} hlen={} plen={} {} sha={} spa={} tha={} tpa={}",
            self.hardware_type(),
            self.protocol_type(),
            self.hardware_len(),
            self.protocol_len(),
            self.operation(),
            self.source_hardware_addr(),
            self.source_protocol_addr(),
            self.target_hardware_addr(),
            self.target_protocol_addr()
        )
    }
}

/// The values of an Ethernet/IPv4 ARP packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    pub operation: Operation,
    pub source_hardware_addr: EthernetAddress,
    pub source_protocol_addr: Ipv4Address,
    pub target_hardware_addr: EthernetAddress,
    pub target_protocol_addr: Ipv4Address,
}

impl Repr {
    /// Checks the length and that the packet is Ethernet/IPv4 ARP (any operation).
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Repr, ArpError> {
        packet.check_len()?;
        let (htype, ptype) = (packet.hardware_type(), packet.protocol_type());
        let (hlen, plen) = (packet.hardware_len(), packet.protocol_len());
        if htype != HTYPE_ETHERNET || ptype != PTYPE_IPV4 || hlen != 6 || plen != 4 {
            return Err(ArpError::Unsupported {
                htype,
                ptype,
                hlen,
                plen,
            });
        }
        Ok(Repr {
            operation: packet.operation(),
            source_hardware_addr: packet.source_hardware_addr(),
            source_protocol_addr: packet.source_protocol_addr(),
            target_hardware_addr: packet.target_hardware_addr(),
            target_protocol_addr: packet.target_protocol_addr(),
        })
    }

    /// The packet length ([`PACKET_LEN`]).
    pub const fn buffer_len(&self) -> usize {
        PACKET_LEN
    }

    /// Writes the packet.
    ///
    /// # Panics
    /// If the buffer is shorter than [`PACKET_LEN`].
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
        packet.set_hardware_type(HTYPE_ETHERNET);
        packet.set_protocol_type(PTYPE_IPV4);
        packet.set_hardware_len(6);
        packet.set_protocol_len(4);
        packet.set_operation(self.operation);
        packet.set_source_hardware_addr(self.source_hardware_addr);
        packet.set_source_protocol_addr(self.source_protocol_addr);
        packet.set_target_hardware_addr(self.target_hardware_addr);
        packet.set_target_protocol_addr(self.target_protocol_addr);
    }
}

impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.operation {
            Operation::Request => write!(
                f,
                "ARP who-has {} tell {} ({})",
                self.target_protocol_addr, self.source_protocol_addr, self.source_hardware_addr
            ),
            Operation::Reply => write!(
                f,
                "ARP {} is-at {} (to {} at {})",
                self.source_protocol_addr,
                self.source_hardware_addr,
                self.target_protocol_addr,
                self.target_hardware_addr
            ),
            op => write!(
                f,
                "ARP {op} sha={} spa={} tha={} tpa={}",
                self.source_hardware_addr,
                self.source_protocol_addr,
                self.target_hardware_addr,
                self.target_protocol_addr
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // "Who has 10.0.2.2? Tell 10.0.2.15" from 52:54:00:12:34:56, the ARP part of the frame
    // scapy 2.5 builds for
    // Ether()/ARP(op=1, hwsrc="52:54:00:12:34:56", psrc="10.0.2.15", pdst="10.0.2.2").
    static REQUEST_BYTES: [u8; 28] = [
        0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01, 0x52, 0x54, 0x00, 0x12, 0x34, 0x56, 0x0a,
        0x00, 0x02, 0x0f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x00, 0x02, 0x02,
    ];

    fn request() -> Repr {
        Repr {
            operation: Operation::Request,
            source_hardware_addr: EthernetAddress([0x52, 0x54, 0x00, 0x12, 0x34, 0x56]),
            source_protocol_addr: Ipv4Address([10, 0, 2, 15]),
            target_hardware_addr: EthernetAddress([0; 6]),
            target_protocol_addr: Ipv4Address([10, 0, 2, 2]),
        }
    }

    #[test]
    fn deconstruct() {
        let p = Packet::new_checked(&REQUEST_BYTES[..]).unwrap();
        assert_eq!(p.hardware_type(), 1);
        assert_eq!(p.protocol_type(), 0x0800);
        assert_eq!((p.hardware_len(), p.protocol_len()), (6, 4));
        assert_eq!(p.operation(), Operation::Request);
        assert_eq!(p.target_protocol_addr(), Ipv4Address([10, 0, 2, 2]));
        assert_eq!(Repr::parse(&p).unwrap(), request());
    }

    #[test]
    fn emit_is_byte_exact() {
        let mut bytes = [0xAAu8; PACKET_LEN];
        request().emit(&mut Packet::new_unchecked(&mut bytes[..]));
        assert_eq!(bytes, REQUEST_BYTES);
        assert_eq!(request().buffer_len(), 28);
    }

    #[test]
    fn reply_round_trip_matches_scapy() {
        // scapy: ARP(op=2, hwsrc="02:00:00:00:00:01", psrc="10.0.2.2",
        //            hwdst="52:54:00:12:34:56", pdst="10.0.2.15")
        let expected = [
            0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01,
            0x0a, 0x00, 0x02, 0x02, 0x52, 0x54, 0x00, 0x12, 0x34, 0x56, 0x0a, 0x00, 0x02, 0x0f,
        ];
        let reply = Repr {
            operation: Operation::Reply,
            source_hardware_addr: EthernetAddress([2, 0, 0, 0, 0, 1]),
            source_protocol_addr: Ipv4Address([10, 0, 2, 2]),
            target_hardware_addr: request().source_hardware_addr,
            target_protocol_addr: request().source_protocol_addr,
        };
        let mut bytes = [0u8; PACKET_LEN];
        reply.emit(&mut Packet::new_unchecked(&mut bytes[..]));
        assert_eq!(bytes, expected);
        // Ethernet padding after the packet is ignored.
        let mut padded = bytes.to_vec();
        padded.extend_from_slice(&[0; 18]);
        assert_eq!(
            Repr::parse(&Packet::new_checked(&padded[..]).unwrap()).unwrap(),
            reply
        );
    }

    #[test]
    fn truncation_and_unsupported_layouts_are_refused() {
        for len in 0..PACKET_LEN {
            assert_eq!(
                Packet::new_checked(&REQUEST_BYTES[..len]),
                Err(ArpError::Truncated)
            );
            assert_eq!(
                Repr::parse(&Packet::new_unchecked(&REQUEST_BYTES[..len])),
                Err(ArpError::Truncated)
            );
        }
        for (at, value) in [(1, 6u8), (2, 0x86), (4, 8), (5, 16)] {
            let mut bad = REQUEST_BYTES;
            bad[at] = value;
            let e = Repr::parse(&Packet::new_unchecked(&bad[..])).unwrap_err();
            assert!(matches!(e, ArpError::Unsupported { .. }), "{e}");
        }
        let mut bad = REQUEST_BYTES;
        bad[2] = 0x86;
        bad[3] = 0xdd;
        assert_eq!(
            Repr::parse(&Packet::new_unchecked(&bad[..]))
                .unwrap_err()
                .to_string(),
            "ARP for hardware type 1 / protocol 0x86dd (6/4-byte addresses) is not Ethernet/IPv4"
        );
    }

    #[test]
    fn operations_and_display() {
        for v in [1u16, 2, 3, 0xffff] {
            assert_eq!(u16::from(Operation::from(v)), v);
        }
        assert_eq!(
            request().to_string(),
            "ARP who-has 10.0.2.2 tell 10.0.2.15 (52:54:00:12:34:56)"
        );
        let p = Packet::new_checked(&REQUEST_BYTES[..]).unwrap();
        assert!(p
            .to_string()
            .starts_with("ARP htype=1 ptype=0x0800 hlen=6 plen=4 request"));
        let mut unknown = request();
        unknown.operation = Operation::Unknown(3);
        assert!(unknown.to_string().starts_with("ARP operation 3 "));
    }
}
