//! Base Transport Header, 12 bytes.
//!
//! ```text
//! byte 0      opcode
//! byte 1      SE(7) M(6) PadCnt(5:4) TVer(3:0)
//! bytes 2-3   P_Key
//! byte 4      FECN(7) BECN(6) reserved(5:0)   <- masked from the ICRC
//! bytes 5-7   DestQP
//! byte 8      AckReq(7) reserved(6:0)
//! bytes 9-11  PSN
//! ```

use core::fmt;

use super::{get_be, put_be, Field, Opcode, Psn, WireError};

/// The only transport header version.
pub const TRANSPORT_VERSION: u8 = 0;
/// The default partition key (full membership of the default partition).
pub const DEFAULT_PKEY: u16 = 0xFFFF;

// Visible to the ICRC, which masks the FECN/BECN byte.
pub(super) mod field {
    use super::Field;

    pub const OPCODE: usize = 0;
    pub const FLAGS: usize = 1;
    pub const PKEY: Field = 2..4;
    pub const FECN_BECN: usize = 4;
    pub const DEST_QP: Field = 5..8;
    pub const ACK_REQ: usize = 8;
    pub const PSN: Field = 9..12;
}

/// Length of the BTH.
pub const HEADER_LEN: usize = field::PSN.end;

const SOLICITED: u8 = 0x80;
const MIGREQ: u8 = 0x40;
const PAD_SHIFT: u32 = 4;
const PAD_MASK: u8 = 0x30;
const TVER_MASK: u8 = 0x0F;
const FECN: u8 = 0x80;
const BECN: u8 = 0x40;
const ACK_REQ: u8 = 0x80;
const QP_MASK: u32 = 0x00FF_FFFF;

/// A read/write view of a BTH and what follows it.
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

    fn byte(&self, at: usize) -> u8 {
        self.buffer.as_ref()[at]
    }

    pub fn opcode(&self) -> Opcode {
        Opcode::from(self.byte(field::OPCODE))
    }

    pub fn solicited(&self) -> bool {
        self.byte(field::FLAGS) & SOLICITED != 0
    }

    pub fn migreq(&self) -> bool {
        self.byte(field::FLAGS) & MIGREQ != 0
    }

    /// Bytes of pad (0..=3) between the payload and the ICRC.
    pub fn pad_count(&self) -> u8 {
        (self.byte(field::FLAGS) & PAD_MASK) >> PAD_SHIFT
    }

    pub fn transport_version(&self) -> u8 {
        self.byte(field::FLAGS) & TVER_MASK
    }

    pub fn pkey(&self) -> u16 {
        get_be(&self.buffer.as_ref()[field::PKEY]) as u16
    }

    pub fn fecn(&self) -> bool {
        self.byte(field::FECN_BECN) & FECN != 0
    }

    pub fn becn(&self) -> bool {
        self.byte(field::FECN_BECN) & BECN != 0
    }

    /// Destination queue pair number, 24 bits.
    pub fn dest_qp(&self) -> u32 {
        get_be(&self.buffer.as_ref()[field::DEST_QP]) as u32
    }

    pub fn ack_req(&self) -> bool {
        self.byte(field::ACK_REQ) & ACK_REQ != 0
    }

    pub fn psn(&self) -> Psn {
        Psn::new(get_be(&self.buffer.as_ref()[field::PSN]) as u32)
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Packet<&'a T> {
    /// Everything after the BTH: extension headers, payload, pad and ICRC.
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[HEADER_LEN..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn set_bits(&mut self, at: usize, mask: u8, value: u8) {
        let b = &mut self.buffer.as_mut()[at];
        *b = (*b & !mask) | (value & mask);
    }

    fn set_flag(&mut self, at: usize, mask: u8, on: bool) {
        self.set_bits(at, mask, if on { mask } else { 0 });
    }

    pub fn set_opcode(&mut self, value: Opcode) {
        self.buffer.as_mut()[field::OPCODE] = value.into();
    }

    pub fn set_solicited(&mut self, value: bool) {
        self.set_flag(field::FLAGS, SOLICITED, value);
    }

    pub fn set_migreq(&mut self, value: bool) {
        self.set_flag(field::FLAGS, MIGREQ, value);
    }

    pub fn set_pad_count(&mut self, value: u8) {
        self.set_bits(field::FLAGS, PAD_MASK, value << PAD_SHIFT);
    }

    pub fn set_transport_version(&mut self, value: u8) {
        self.set_bits(field::FLAGS, TVER_MASK, value);
    }

    pub fn set_pkey(&mut self, value: u16) {
        put_be(&mut self.buffer.as_mut()[field::PKEY], value.into());
    }

    pub fn set_fecn(&mut self, value: bool) {
        self.set_flag(field::FECN_BECN, FECN, value);
    }

    pub fn set_becn(&mut self, value: bool) {
        self.set_flag(field::FECN_BECN, BECN, value);
    }

    /// Sets the destination QP; bits above 24 are dropped.
    pub fn set_dest_qp(&mut self, value: u32) {
        put_be(
            &mut self.buffer.as_mut()[field::DEST_QP],
            (value & QP_MASK).into(),
        );
    }

    pub fn set_ack_req(&mut self, value: bool) {
        self.set_flag(field::ACK_REQ, ACK_REQ, value);
    }

    pub fn set_psn(&mut self, value: Psn) {
        put_be(&mut self.buffer.as_mut()[field::PSN], value.value().into());
    }

    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[HEADER_LEN..]
    }
}

/// Writes ` name` when the flag is set.
fn flag(f: &mut fmt::Formatter<'_>, on: bool, name: &str) -> fmt::Result {
    if on {
        write!(f, " {name}")
    } else {
        Ok(())
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Packet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "BTH {} qp={:#08x} psn={} pkey={:#06x} pad={} tver={}",
            self.opcode(),
            self.dest_qp(),
            self.psn(),
            self.pkey(),
            self.pad_count(),
            self.transport_version()
        )?;
        flag(f, self.solicited(), "SE")?;
        flag(f, self.migreq(), "M")?;
        flag(f, self.fecn(), "FECN")?;
        flag(f, self.becn(), "BECN")?;
        flag(f, self.ack_req(), "A")
    }
}

/// The values of a BTH that a sender chooses. The pad count is derived from the payload
/// length at emit; the transport version is always 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    pub opcode: Opcode,
    pub solicited: bool,
    pub migreq: bool,
    pub pkey: u16,
    pub fecn: bool,
    pub becn: bool,
    /// 24 bits.
    pub dest_qp: u32,
    pub ack_req: bool,
    pub psn: Psn,
}

impl Repr {
    /// Checks the length and the transport version. Any opcode is accepted (as
    /// `Opcode::Unknown` if need be); reserved bits are ignored.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Repr, WireError> {
        packet.check_len()?;
        if packet.transport_version() != TRANSPORT_VERSION {
            return Err(WireError::BadTransportVersion(packet.transport_version()));
        }
        Ok(Repr {
            opcode: packet.opcode(),
            solicited: packet.solicited(),
            migreq: packet.migreq(),
            pkey: packet.pkey(),
            fecn: packet.fecn(),
            becn: packet.becn(),
            dest_qp: packet.dest_qp(),
            ack_req: packet.ack_req(),
            psn: packet.psn(),
        })
    }

    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the whole header, reserved bits zero, with `pad_count` (0..=3) bytes of pad.
    ///
    /// # Panics
    /// If the buffer is shorter than [`HEADER_LEN`].
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(
        &self,
        packet: &mut Packet<&mut T>,
        pad_count: u8,
    ) {
        // Whole bytes first, so that reserved bits end up zero.
        let bytes = packet.buffer.as_mut();
        bytes[field::FLAGS] = 0;
        bytes[field::FECN_BECN] = 0;
        bytes[field::ACK_REQ] = 0;
        packet.set_opcode(self.opcode);
        packet.set_solicited(self.solicited);
        packet.set_migreq(self.migreq);
        packet.set_pad_count(pad_count);
        packet.set_transport_version(TRANSPORT_VERSION);
        packet.set_pkey(self.pkey);
        packet.set_fecn(self.fecn);
        packet.set_becn(self.becn);
        packet.set_dest_qp(self.dest_qp);
        packet.set_ack_req(self.ack_req);
        packet.set_psn(self.psn);
    }
}

impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "BTH {} qp={:#08x} psn={} pkey={:#06x}",
            self.opcode, self.dest_qp, self.psn, self.pkey
        )?;
        flag(f, self.solicited, "SE")?;
        flag(f, self.migreq, "M")?;
        flag(f, self.fecn, "FECN")?;
        flag(f, self.becn, "BECN")?;
        flag(f, self.ack_req, "A")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // BTH of the ConnectX-4 Lx CNP in scapy's test/contrib/roce.uts: opcode 0x81 (CNP),
    // P_Key 0xffff, BECN, dest QP 0x000118, PSN 0.
    static CNP_BTH: [u8; 12] = [
        0x81, 0x00, 0xff, 0xff, 0x40, 0x00, 0x01, 0x18, 0x00, 0x00, 0x00, 0x00,
    ];

    // BTH of scapy's UC example in roce.uts: UC_SEND_ONLY (0x24), MigReq, pad 2, dest QP 211,
    // PSN 13571856.
    static UC_BTH: [u8; 12] = [
        0x24, 0x60, 0xff, 0xff, 0x00, 0x00, 0x00, 0xd3, 0x00, 0xcf, 0x17, 0x10,
    ];

    // An RC RDMA WRITE ONLY WITH IMMEDIATE: SE, pad 3, P_Key 0x8001, FECN, QP 0x123456,
    // AckReq, PSN 0xffffff.
    static RC_BTH: [u8; 12] = [
        0x0b, 0xb0, 0x80, 0x01, 0x80, 0x12, 0x34, 0x56, 0x80, 0xff, 0xff, 0xff,
    ];

    fn rc_repr() -> Repr {
        Repr {
            opcode: Opcode::RdmaWriteOnlyWithImmediate,
            solicited: true,
            migreq: false,
            pkey: 0x8001,
            fecn: true,
            becn: false,
            dest_qp: 0x12_3456,
            ack_req: true,
            psn: Psn::new(0xFF_FFFF),
        }
    }

    #[test]
    fn deconstruct_hardware_cnp() {
        let packet = Packet::new_checked(&CNP_BTH[..]).unwrap();
        assert_eq!(packet.opcode(), Opcode::Unknown(0x81));
        assert!(!packet.solicited() && !packet.migreq() && !packet.ack_req());
        assert_eq!(packet.pad_count(), 0);
        assert_eq!(packet.transport_version(), 0);
        assert_eq!(packet.pkey(), DEFAULT_PKEY);
        assert!(!packet.fecn());
        assert!(packet.becn());
        assert_eq!(packet.dest_qp(), 0x118);
        assert_eq!(packet.psn(), Psn::new(0));
    }

    #[test]
    fn deconstruct_uc_example() {
        let packet = Packet::new_checked(&UC_BTH[..]).unwrap();
        assert_eq!(packet.opcode(), Opcode::Unknown(0x24));
        assert!(packet.migreq() && !packet.solicited());
        assert_eq!(packet.pad_count(), 2);
        assert_eq!(packet.dest_qp(), 211);
        assert_eq!(packet.psn(), Psn::new(13_571_856));
    }

    #[test]
    fn emit_is_byte_exact() {
        let mut bytes = [0xFFu8; 12]; // reserved bits must come out zero
        rc_repr().emit(&mut Packet::new_unchecked(&mut bytes[..]), 3);
        assert_eq!(bytes, RC_BTH);
        let packet = Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(packet.pad_count(), 3);
        assert_eq!(Repr::parse(&packet).unwrap(), rc_repr());
    }

    #[test]
    fn setters_touch_only_their_bits() {
        let mut bytes = RC_BTH;
        let mut packet = Packet::new_unchecked(&mut bytes[..]);
        packet.set_pad_count(1);
        packet.set_becn(true);
        packet.set_dest_qp(0xFF00_0001);
        packet.set_psn(Psn::new(2));
        packet.set_solicited(false);
        assert_eq!(
            bytes,
            [0x0b, 0x10, 0x80, 0x01, 0xc0, 0x00, 0x00, 0x01, 0x80, 0, 0, 2]
        );
    }

    #[test]
    fn refusals() {
        for len in 0..HEADER_LEN {
            assert_eq!(
                Packet::new_checked(&RC_BTH[..len]),
                Err(WireError::Truncated)
            );
        }
        let mut bytes = RC_BTH;
        Packet::new_unchecked(&mut bytes[..]).set_transport_version(1);
        assert_eq!(
            Repr::parse(&Packet::new_unchecked(&bytes[..])),
            Err(WireError::BadTransportVersion(1))
        );
    }

    #[test]
    fn display() {
        assert_eq!(
            rc_repr().to_string(),
            "BTH RDMA_WRITE_ONLY_WITH_IMMEDIATE qp=0x123456 psn=16777215 pkey=0x8001 SE FECN A"
        );
        assert_eq!(
            Packet::new_checked(&CNP_BTH[..]).unwrap().to_string(),
            "BTH UNKNOWN(0x81) qp=0x000118 psn=0 pkey=0xffff pad=0 tver=0 BECN"
        );
    }
}
