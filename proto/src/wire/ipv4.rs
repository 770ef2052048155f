//! IPv4 header, 20 bytes. Options and fragments are refused: RoCE v2 senders use neither.

use core::fmt;

use super::{get_array, get_be, put_be, Field, WireError};

/// A 32-bit IPv4 address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Address(pub [u8; 4]);

impl From<[u8; 4]> for Address {
    fn from(bytes: [u8; 4]) -> Self {
        Address(bytes)
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        write!(f, "{}.{}.{}.{}", b[0], b[1], b[2], b[3])
    }
}

/// The IPv4 protocol field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IpProtocol {
    Udp,
    Unknown(u8),
}

impl From<u8> for IpProtocol {
    fn from(value: u8) -> Self {
        match value {
            17 => IpProtocol::Udp,
            other => IpProtocol::Unknown(other),
        }
    }
}

impl From<IpProtocol> for u8 {
    fn from(value: IpProtocol) -> Self {
        match value {
            IpProtocol::Udp => 17,
            IpProtocol::Unknown(other) => other,
        }
    }
}

impl fmt::Display for IpProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IpProtocol::Udp => write!(f, "UDP"),
            IpProtocol::Unknown(other) => write!(f, "{other}"),
        }
    }
}

// Visible to the ICRC, which masks some of these bytes.
pub(super) mod field {
    use super::Field;

    pub const VER_IHL: usize = 0;
    /// DSCP (bits 7..2) and ECN (bits 1..0): the former TOS byte.
    pub const DSCP_ECN: usize = 1;
    pub const LENGTH: Field = 2..4;
    pub const IDENT: Field = 4..6;
    /// Flags (bits 15..13: reserved, DF, MF) and fragment offset (bits 12..0).
    pub const FLG_OFF: Field = 6..8;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: Field = 10..12;
    pub const SRC_ADDR: Field = 12..16;
    pub const DST_ADDR: Field = 16..20;
}

/// Length of an IPv4 header without options, the only form accepted here.
pub const HEADER_LEN: usize = field::DST_ADDR.end;

const FLAG_DF: u16 = 0x4000;
const FLAG_MF: u16 = 0x2000;
const FRAG_OFFSET_MASK: u16 = 0x1FFF;

/// The Internet checksum's one's-complement sum of big-endian 16-bit words.
fn ones_complement_sum(data: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for pair in data.chunks(2) {
        let word = u16::from_be_bytes([pair[0], *pair.get(1).unwrap_or(&0)]);
        sum += u32::from(word);
    }
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    sum as u16
}

/// A read/write view of an IPv4 packet.
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

    /// Ensures no accessor can panic: the buffer holds the fixed header, the header length
    /// is at least 20 and at most the total length, and the buffer holds the total length.
    /// A longer buffer is fine (Ethernet pads short frames).
    pub fn check_len(&self) -> Result<(), WireError> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        let header_len = self.header_len();
        let total_len = usize::from(self.total_len());
        if header_len < HEADER_LEN || total_len < header_len {
            return Err(WireError::BadIpLength);
        }
        if len < total_len {
            return Err(WireError::Truncated);
        }
        Ok(())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_IHL] >> 4
    }

    /// The header length in bytes (IHL x 4).
    pub fn header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[field::VER_IHL] & 0x0F) * 4
    }

    pub fn dscp(&self) -> u8 {
        self.buffer.as_ref()[field::DSCP_ECN] >> 2
    }

    pub fn ecn(&self) -> u8 {
        self.buffer.as_ref()[field::DSCP_ECN] & 0x03
    }

    /// Header plus payload, in bytes.
    pub fn total_len(&self) -> u16 {
        get_be(&self.buffer.as_ref()[field::LENGTH]) as u16
    }

    pub fn ident(&self) -> u16 {
        get_be(&self.buffer.as_ref()[field::IDENT]) as u16
    }

    fn flags_and_offset(&self) -> u16 {
        get_be(&self.buffer.as_ref()[field::FLG_OFF]) as u16
    }

    pub fn dont_frag(&self) -> bool {
        self.flags_and_offset() & FLAG_DF != 0
    }

    pub fn more_frags(&self) -> bool {
        self.flags_and_offset() & FLAG_MF != 0
    }

    /// The fragment offset in units of 8 bytes.
    pub fn frag_offset(&self) -> u16 {
        self.flags_and_offset() & FRAG_OFFSET_MASK
    }

    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[field::TTL]
    }

    pub fn protocol(&self) -> IpProtocol {
        IpProtocol::from(self.buffer.as_ref()[field::PROTOCOL])
    }

    pub fn checksum(&self) -> u16 {
        get_be(&self.buffer.as_ref()[field::CHECKSUM]) as u16
    }

    pub fn src_addr(&self) -> Address {
        Address(get_array(&self.buffer.as_ref()[field::SRC_ADDR]))
    }

    pub fn dst_addr(&self) -> Address {
        Address(get_array(&self.buffer.as_ref()[field::DST_ADDR]))
    }

    /// Whether the header checksum is right: the header, checksum included, sums to 0xFFFF.
    pub fn verify_checksum(&self) -> bool {
        let header = &self.buffer.as_ref()[..self.header_len()];
        ones_complement_sum(header) == 0xFFFF
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Packet<&'a T> {
    /// The payload as the total length announces it; trailing Ethernet padding is excluded.
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[self.header_len()..usize::from(self.total_len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    pub fn set_version(&mut self, value: u8) {
        let b = &mut self.buffer.as_mut()[field::VER_IHL];
        *b = (*b & 0x0F) | (value << 4);
    }

    /// Sets the header length in bytes (a multiple of 4, at most 60).
    pub fn set_header_len(&mut self, value: usize) {
        let b = &mut self.buffer.as_mut()[field::VER_IHL];
        *b = (*b & 0xF0) | ((value / 4) as u8 & 0x0F);
    }

    pub fn set_dscp(&mut self, value: u8) {
        let b = &mut self.buffer.as_mut()[field::DSCP_ECN];
        *b = (*b & 0x03) | (value << 2);
    }

    pub fn set_ecn(&mut self, value: u8) {
        let b = &mut self.buffer.as_mut()[field::DSCP_ECN];
        *b = (*b & 0xFC) | (value & 0x03);
    }

    pub fn set_total_len(&mut self, value: u16) {
        put_be(&mut self.buffer.as_mut()[field::LENGTH], value.into());
    }

    pub fn set_ident(&mut self, value: u16) {
        put_be(&mut self.buffer.as_mut()[field::IDENT], value.into());
    }

    fn set_flags_and_offset(&mut self, value: u16) {
        put_be(&mut self.buffer.as_mut()[field::FLG_OFF], value.into());
    }

    pub fn set_dont_frag(&mut self, value: bool) {
        let raw = self.flags_and_offset() & !FLAG_DF;
        self.set_flags_and_offset(raw | if value { FLAG_DF } else { 0 });
    }

    pub fn set_more_frags(&mut self, value: bool) {
        let raw = self.flags_and_offset() & !FLAG_MF;
        self.set_flags_and_offset(raw | if value { FLAG_MF } else { 0 });
    }

    pub fn set_frag_offset(&mut self, value: u16) {
        let raw = self.flags_and_offset() & !FRAG_OFFSET_MASK;
        self.set_flags_and_offset(raw | (value & FRAG_OFFSET_MASK));
    }

    pub fn set_ttl(&mut self, value: u8) {
        self.buffer.as_mut()[field::TTL] = value;
    }

    pub fn set_protocol(&mut self, value: IpProtocol) {
        self.buffer.as_mut()[field::PROTOCOL] = value.into();
    }

    pub fn set_checksum(&mut self, value: u16) {
        put_be(&mut self.buffer.as_mut()[field::CHECKSUM], value.into());
    }

    pub fn set_src_addr(&mut self, value: Address) {
        self.buffer.as_mut()[field::SRC_ADDR].copy_from_slice(&value.0);
    }

    pub fn set_dst_addr(&mut self, value: Address) {
        self.buffer.as_mut()[field::DST_ADDR].copy_from_slice(&value.0);
    }

    /// Computes the header checksum over `header_len()` bytes and writes it.
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let header_len = self.header_len();
        let sum = ones_complement_sum(&self.buffer.as_ref()[..header_len]);
        self.set_checksum(!sum);
    }

    /// The payload as the total length announces it.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let range = self.header_len()..usize::from(self.total_len());
        &mut self.buffer.as_mut()[range]
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Packet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "IPv{} src={} dst={} proto={} len={} ihl={} ttl={} dscp={} ecn={} id={:#06x}{}{} frag={} csum={:#06x}",
            self.version(),
            self.src_addr(),
            self.dst_addr(),
            self.protocol(),
            self.total_len(),
            self.header_len() / 4,
            self.ttl(),
            self.dscp(),
            self.ecn(),
            self.ident(),
            if self.dont_frag() { " DF" } else { "" },
            if self.more_frags() { " MF" } else { "" },
            self.frag_offset(),
            self.checksum()
        )
    }
}

/// The values of an IPv4 header that a sender chooses. The total length and the checksum
/// are derived by [`Repr::emit`] and checked by [`Repr::parse`] / [`Packet::check_len`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    pub src_addr: Address,
    pub dst_addr: Address,
    pub protocol: IpProtocol,
    /// Differentiated services code point, 6 bits.
    pub dscp: u8,
    /// Explicit congestion notification, 2 bits.
    pub ecn: u8,
    pub ident: u16,
    pub dont_frag: bool,
    pub ttl: u8,
}

impl Repr {
    /// Checks in order: version 4, the lengths ([`Packet::check_len`]), no options, the
    /// header checksum, no fragmentation. The protocol is not checked.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Repr, WireError> {
        // Version first, so that garbage reports as a wrong version rather than a wrong IHL.
        let Some(&ver_ihl) = packet.buffer.as_ref().first() else {
            return Err(WireError::Truncated);
        };
        if ver_ihl >> 4 != 4 {
            return Err(WireError::BadIpVersion(ver_ihl >> 4));
        }
        packet.check_len()?;
        if packet.header_len() != HEADER_LEN {
            return Err(WireError::IpOptionsUnsupported(packet.header_len()));
        }
        if !packet.verify_checksum() {
            return Err(WireError::BadIpChecksum);
        }
        if packet.more_frags() || packet.frag_offset() != 0 {
            return Err(WireError::IpFragmented);
        }
        Ok(Repr {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            protocol: packet.protocol(),
            dscp: packet.dscp(),
            ecn: packet.ecn(),
            ident: packet.ident(),
            dont_frag: packet.dont_frag(),
            ttl: packet.ttl(),
        })
    }

    /// The header length; the payload is not included.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header for a payload of `payload_len` bytes, checksum included. The caller
    /// keeps `payload_len` at most 65535 - 20 (the total length field is 16 bits).
    ///
    /// # Panics
    /// If the buffer is shorter than [`HEADER_LEN`].
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(
        &self,
        packet: &mut Packet<&mut T>,
        payload_len: usize,
    ) {
        packet.set_version(4);
        packet.set_header_len(HEADER_LEN);
        packet.set_dscp(self.dscp);
        packet.set_ecn(self.ecn);
        packet.set_total_len((HEADER_LEN + payload_len) as u16);
        packet.set_ident(self.ident);
        packet.set_flags_and_offset(if self.dont_frag { FLAG_DF } else { 0 });
        packet.set_ttl(self.ttl);
        packet.set_protocol(self.protocol);
        packet.set_src_addr(self.src_addr);
        packet.set_dst_addr(self.dst_addr);
        packet.fill_checksum();
    }
}

impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "IPv4 src={} dst={} proto={} ttl={} dscp={} ecn={} id={:#06x}{}",
            self.src_addr,
            self.dst_addr,
            self.protocol,
            self.ttl,
            self.dscp,
            self.ecn,
            self.ident,
            if self.dont_frag { " DF" } else { "" }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // IPv4 header of the ConnectX-4 Lx CNP in scapy's test/contrib/roce.uts, then its first
    // payload bytes (UDP header) and 40 bytes of payload in all (total length 60).
    static PACKET_BYTES: [u8; 20] = [
        0x45, 0xc2, 0x00, 0x3c, 0x71, 0x8c, 0x40, 0x00, 0x40, 0x11, 0x91, 0x61, 0x0a, 0x00, 0x11,
        0x01, 0x0a, 0x00, 0x12, 0x01,
    ];

    fn packet_with_payload() -> Vec<u8> {
        let mut bytes = PACKET_BYTES.to_vec();
        bytes.extend((0..40).map(|i| i as u8));
        bytes
    }

    fn repr() -> Repr {
        Repr {
            src_addr: Address([10, 0, 17, 1]),
            dst_addr: Address([10, 0, 18, 1]),
            protocol: IpProtocol::Udp,
            dscp: 0x30,
            ecn: 2,
            ident: 0x718c,
            dont_frag: true,
            ttl: 64,
        }
    }

    #[test]
    fn deconstruct() {
        let bytes = packet_with_payload();
        let packet = Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(packet.version(), 4);
        assert_eq!(packet.header_len(), 20);
        assert_eq!(packet.dscp(), 0x30);
        assert_eq!(packet.ecn(), 2);
        assert_eq!(packet.total_len(), 60);
        assert_eq!(packet.ident(), 0x718c);
        assert!(packet.dont_frag());
        assert!(!packet.more_frags());
        assert_eq!(packet.frag_offset(), 0);
        assert_eq!(packet.ttl(), 64);
        assert_eq!(packet.protocol(), IpProtocol::Udp);
        assert_eq!(packet.checksum(), 0x9161);
        assert!(packet.verify_checksum());
        assert_eq!(packet.payload(), &bytes[20..]);
        assert_eq!(Repr::parse(&packet).unwrap(), repr());
    }

    #[test]
    fn emit_is_byte_exact() {
        let mut bytes = [0xAAu8; 60];
        repr().emit(&mut Packet::new_unchecked(&mut bytes[..]), 40);
        assert_eq!(&bytes[..20], &PACKET_BYTES);
    }

    #[test]
    fn fill_checksum_matches_an_independent_sum() {
        // Header from scapy's RoCE UC example (checksum 0xb4d5 per roce.uts).
        let mut bytes = [
            0x45, 0x01, 0x00, 0x40, 0x04, 0x78, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 192, 168, 0, 7,
            192, 168, 0, 7,
        ];
        let mut packet = Packet::new_unchecked(&mut bytes[..]);
        assert!(!packet.verify_checksum());
        packet.fill_checksum();
        assert_eq!(packet.checksum(), 0xb4d5);
        assert!(packet.verify_checksum());
    }

    #[test]
    fn round_trip() {
        let r = Repr {
            protocol: IpProtocol::Unknown(6),
            dont_frag: false,
            dscp: 0x3F,
            ecn: 3,
            ttl: 1,
            ..repr()
        };
        let mut bytes = [0u8; 25];
        r.emit(&mut Packet::new_unchecked(&mut bytes[..]), 5);
        let packet = Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(Repr::parse(&packet).unwrap(), r);
        assert_eq!(packet.payload().len(), 5);
        assert_eq!(r.buffer_len(), HEADER_LEN);
    }

    #[test]
    fn trailing_padding_is_not_payload() {
        let mut bytes = packet_with_payload();
        bytes.extend([0u8; 6]);
        let packet = Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(packet.payload().len(), 40);
    }

    #[test]
    fn refusals() {
        let good = packet_with_payload();
        let parse = |bytes: &[u8]| Repr::parse(&Packet::new_unchecked(bytes));
        let with = |f: &dyn Fn(&mut Packet<&mut [u8]>)| {
            let mut bytes = good.clone();
            f(&mut Packet::new_unchecked(&mut bytes[..]));
            bytes
        };
        assert_eq!(parse(&[]), Err(WireError::Truncated));
        assert_eq!(parse(&good[..19]), Err(WireError::Truncated));
        assert_eq!(parse(&good[..59]), Err(WireError::Truncated));
        assert_eq!(Packet::new_checked(&good[..59]), Err(WireError::Truncated));
        assert_eq!(
            parse(&with(&|p| p.set_version(6))),
            Err(WireError::BadIpVersion(6))
        );
        assert_eq!(
            parse(&with(&|p| p.set_header_len(16))),
            Err(WireError::BadIpLength)
        );
        assert_eq!(
            parse(&with(&|p| p.set_total_len(19))),
            Err(WireError::BadIpLength)
        );
        let options = with(&|p| {
            p.set_header_len(24);
            p.fill_checksum();
        });
        assert_eq!(parse(&options), Err(WireError::IpOptionsUnsupported(24)));
        assert_eq!(
            parse(&with(&|p| p.set_ttl(63))),
            Err(WireError::BadIpChecksum)
        );
        let fragment = with(&|p| {
            p.set_more_frags(true);
            p.fill_checksum();
        });
        assert_eq!(parse(&fragment), Err(WireError::IpFragmented));
        let offset = with(&|p| {
            p.set_frag_offset(3);
            p.fill_checksum();
        });
        assert_eq!(parse(&offset), Err(WireError::IpFragmented));
        assert_eq!(Packet::new_unchecked(&offset[..]).frag_offset(), 3);
        assert!(Packet::new_unchecked(&offset[..]).dont_frag());
    }

    #[test]
    fn protocol_conversions() {
        for v in 0..=255u8 {
            assert_eq!(u8::from(IpProtocol::from(v)), v);
        }
        assert_eq!(IpProtocol::from(17), IpProtocol::Udp);
    }

    #[test]
    fn display() {
        assert_eq!(
            repr().to_string(),
            "IPv4 src=10.0.17.1 dst=10.0.18.1 proto=UDP ttl=64 dscp=48 ecn=2 id=0x718c DF"
        );
        let bytes = packet_with_payload();
        assert_eq!(
            Packet::new_checked(&bytes[..]).unwrap().to_string(),
            "IPv4 src=10.0.17.1 dst=10.0.18.1 proto=UDP len=60 ihl=5 ttl=64 dscp=48 ecn=2 \
             id=0x718c DF frag=0 csum=0x9161"
        );
    }
}
