//! ACK Extended Transport Header, 4 bytes: syndrome and MSN. Also the syndrome encoding and
//! the RNR NAK timer table.
//!
//! Syndrome bits 6..5 give the kind (bit 7 is reserved, 0): `00` ACK, `01` RNR NAK,
//! `11` NAK, `10` reserved; bits 4..0 are the credit count, the RNR timer code or the NAK
//! code.

use core::fmt;

use super::{get_be, put_be, Field, WireError};

mod field {
    use super::Field;

    pub const SYNDROME: usize = 0;
    pub const MSN: Field = 1..4;
}

/// Length of the AETH.
pub const HEADER_LEN: usize = field::MSN.end;

/// The ACK credit count that means "no end-to-end flow control credits are advertised".
pub const CREDITS_INVALID: u8 = 0x1F;

const KIND_MASK: u8 = 0xE0;
const VALUE_MASK: u8 = 0x1F;
const KIND_ACK: u8 = 0x00;
const KIND_RNR_NAK: u8 = 0x20;
const KIND_NAK: u8 = 0x60;
const MSN_MASK: u32 = 0x00FF_FFFF;

/// The NAK codes (syndrome `011xxxxx`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NakCode {
    PsnSequenceError,
    InvalidRequest,
    RemoteAccessError,
    RemoteOperationalError,
    /// Invalid RD request (Reliable Datagram only).
    InvalidRdRequest,
    Unknown(u8),
}

impl From<u8> for NakCode {
    /// Decodes the low 5 bits.
    fn from(value: u8) -> Self {
        match value & VALUE_MASK {
            0 => NakCode::PsnSequenceError,
            1 => NakCode::InvalidRequest,
            2 => NakCode::RemoteAccessError,
            3 => NakCode::RemoteOperationalError,
            4 => NakCode::InvalidRdRequest,
            other => NakCode::Unknown(other),
        }
    }
}

impl NakCode {
    /// The 5-bit code (the syndrome's low bits); the one place the values are written.
    pub const fn code(self) -> u8 {
        match self {
            NakCode::PsnSequenceError => 0,
            NakCode::InvalidRequest => 1,
            NakCode::RemoteAccessError => 2,
            NakCode::RemoteOperationalError => 3,
            NakCode::InvalidRdRequest => 4,
            NakCode::Unknown(other) => other & VALUE_MASK,
        }
    }
}

impl From<NakCode> for u8 {
    fn from(value: NakCode) -> Self {
        value.code()
    }
}

impl fmt::Display for NakCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NakCode::PsnSequenceError => write!(f, "PSN sequence error"),
            NakCode::InvalidRequest => write!(f, "invalid request"),
            NakCode::RemoteAccessError => write!(f, "remote access error"),
            NakCode::RemoteOperationalError => write!(f, "remote operational error"),
            NakCode::InvalidRdRequest => write!(f, "invalid RD request"),
            NakCode::Unknown(code) => write!(f, "reserved NAK code {code}"),
        }
    }
}

/// A decoded AETH syndrome. Every byte decodes and encodes back to itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Syndrome {
    /// Positive acknowledgement with an end-to-end credit count (5 bits);
    /// [`CREDITS_INVALID`] when not advertised.
    Ack {
        credits: u8,
    },
    /// Receiver not ready: retry after the encoded delay (5 bits, see [`rnr_timer_ns`]).
    RnrNak {
        timer: u8,
    },
    Nak(NakCode),
    /// A reserved kind (`010xxxxx`) or bit 7 set: the whole byte.
    Reserved(u8),
}

impl From<u8> for Syndrome {
    fn from(value: u8) -> Self {
        let low = value & VALUE_MASK;
        match value & KIND_MASK {
            KIND_ACK => Syndrome::Ack { credits: low },
            KIND_RNR_NAK => Syndrome::RnrNak { timer: low },
            KIND_NAK => Syndrome::Nak(NakCode::from(low)),
            _ => Syndrome::Reserved(value),
        }
    }
}

impl From<Syndrome> for u8 {
    /// Encodes; values wider than 5 bits are truncated to 5.
    fn from(value: Syndrome) -> Self {
        value.code()
    }
}

impl Syndrome {
    /// The ACK the device sends: no credit count advertised.
    pub const ACK: Syndrome = Syndrome::Ack {
        credits: CREDITS_INVALID,
    };

    /// The syndrome byte; values wider than 5 bits are truncated to 5.
    pub const fn code(self) -> u8 {
        match self {
            Syndrome::Ack { credits } => KIND_ACK | (credits & VALUE_MASK),
            Syndrome::RnrNak { timer } => KIND_RNR_NAK | (timer & VALUE_MASK),
            Syndrome::Nak(code) => KIND_NAK | code.code(),
            Syndrome::Reserved(raw) => raw,
        }
    }

    /// The kind, the syndrome's top three bits (`000` ACK, `001` RNR NAK, `011` NAK).
    pub const fn kind(self) -> u8 {
        self.code() >> 5
    }

    pub const fn is_ack(self) -> bool {
        matches!(self, Syndrome::Ack { .. })
    }

    /// RNR NAK or NAK.
    pub const fn is_nak(self) -> bool {
        matches!(self, Syndrome::RnrNak { .. } | Syndrome::Nak(_))
    }
}

impl fmt::Display for Syndrome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Syndrome::Ack {
                credits: CREDITS_INVALID,
            } => write!(f, "ACK credits=invalid"),
            Syndrome::Ack { credits } => write!(f, "ACK credits={credits}"),
            Syndrome::RnrNak { timer } => {
                write!(
                    f,
                    "RNR NAK timer={timer} ({} us)",
                    rnr_timer_ns(timer) / 1000
                )
            }
            Syndrome::Nak(code) => write!(f, "NAK {code}"),
            Syndrome::Reserved(raw) => write!(f, "reserved syndrome {raw:#04x}"),
        }
    }
}

/// The minimum RNR NAK delay for a 5-bit timer code, in nanoseconds (IBTA Vol. 1, table
/// "Encoding for RNR NAK Timer Field"; matches Linux's `enum ib_rnr_timeout`). Code 0 is the
/// longest delay, 655.36 ms. Bits above the low 5 are ignored.
pub const fn rnr_timer_ns(code: u8) -> u64 {
    // In units of 10 us (0.01 ms).
    const TABLE: [u32; 32] = [
        65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024,
        1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152,
    ];
    TABLE[(code & VALUE_MASK) as usize] as u64 * 10_000
}

/// A read/write view of an AETH.
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

    /// The raw syndrome byte; [`Syndrome::from`] decodes it.
    pub fn syndrome(&self) -> u8 {
        self.buffer.as_ref()[field::SYNDROME]
    }

    /// Message sequence number, 24 bits.
    pub fn msn(&self) -> u32 {
        get_be(&self.buffer.as_ref()[field::MSN]) as u32
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    pub fn set_syndrome(&mut self, value: u8) {
        self.buffer.as_mut()[field::SYNDROME] = value;
    }

    /// Sets the MSN; bits above 24 are dropped.
    pub fn set_msn(&mut self, value: u32) {
        put_be(
            &mut self.buffer.as_mut()[field::MSN],
            (value & MSN_MASK).into(),
        );
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Packet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "AETH {} msn={}",
            Syndrome::from(self.syndrome()),
            self.msn()
        )
    }
}

/// The values of an AETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    pub syndrome: Syndrome,
    /// 24 bits.
    pub msn: u32,
}

impl Repr {
    /// Any syndrome is accepted, reserved ones included; what to do with it is policy.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Repr, WireError> {
        packet.check_len()?;
        Ok(Repr {
            syndrome: Syndrome::from(packet.syndrome()),
            msn: packet.msn(),
        })
    }

    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// # Panics
    /// If the buffer is shorter than [`HEADER_LEN`].
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
        packet.set_syndrome(self.syndrome.into());
        packet.set_msn(self.msn);
    }
}

impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AETH {} msn={}", self.syndrome, self.msn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syndrome_encoding() {
        assert_eq!(
            Syndrome::from(0x1F),
            Syndrome::Ack {
                credits: CREDITS_INVALID
            }
        );
        assert_eq!(Syndrome::from(0x00), Syndrome::Ack { credits: 0 });
        assert_eq!(Syndrome::from(0x2E), Syndrome::RnrNak { timer: 14 });
        assert_eq!(
            Syndrome::from(0x60),
            Syndrome::Nak(NakCode::PsnSequenceError)
        );
        assert_eq!(Syndrome::from(0x61), Syndrome::Nak(NakCode::InvalidRequest));
        assert_eq!(
            Syndrome::from(0x62),
            Syndrome::Nak(NakCode::RemoteAccessError)
        );
        assert_eq!(
            Syndrome::from(0x63),
            Syndrome::Nak(NakCode::RemoteOperationalError)
        );
        assert_eq!(
            Syndrome::from(0x64),
            Syndrome::Nak(NakCode::InvalidRdRequest)
        );
        assert_eq!(Syndrome::from(0x65), Syndrome::Nak(NakCode::Unknown(5)));
        assert_eq!(Syndrome::from(0x40), Syndrome::Reserved(0x40));
        assert_eq!(Syndrome::from(0x80), Syndrome::Reserved(0x80));
        assert_eq!(u8::from(Syndrome::Ack { credits: 0xFF }), 0x1F);
        assert_eq!(u8::from(Syndrome::Nak(NakCode::RemoteAccessError)), 0x62);
        assert!(Syndrome::from(0x20).is_nak() && !Syndrome::from(0x20).is_ack());
        assert!(Syndrome::from(0x1F).is_ack());
        assert!(!Syndrome::from(0x40).is_nak());
    }

    #[test]
    fn every_syndrome_byte_round_trips() {
        for v in 0..=255u8 {
            assert_eq!(u8::from(Syndrome::from(v)), v, "{v:#x}");
        }
    }

    #[test]
    fn rnr_timer_table() {
        // IBTA Vol. 1 RNR NAK timer encoding, in milliseconds x 100.
        let expected_centi_ms = [
            65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768,
            1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152,
        ];
        for (code, centi_ms) in expected_centi_ms.iter().enumerate() {
            assert_eq!(rnr_timer_ns(code as u8), centi_ms * 10_000, "code {code}");
        }
        assert_eq!(rnr_timer_ns(0), 655_360_000);
        assert_eq!(rnr_timer_ns(1), 10_000);
        assert_eq!(rnr_timer_ns(31), 491_520_000);
        assert_eq!(rnr_timer_ns(0x20 | 1), rnr_timer_ns(1));
        // Beyond code 0, the delay grows with the code.
        for code in 2..32u8 {
            assert!(rnr_timer_ns(code) > rnr_timer_ns(code - 1));
        }
    }

    static ACK_BYTES: [u8; 4] = [0x1f, 0x12, 0x34, 0x56];
    static NAK_BYTES: [u8; 4] = [0x62, 0x00, 0x00, 0x07];

    #[test]
    fn parse_and_emit_are_byte_exact() {
        for (bytes, repr) in [
            (
                ACK_BYTES,
                Repr {
                    syndrome: Syndrome::Ack {
                        credits: CREDITS_INVALID,
                    },
                    msn: 0x12_3456,
                },
            ),
            (
                NAK_BYTES,
                Repr {
                    syndrome: Syndrome::Nak(NakCode::RemoteAccessError),
                    msn: 7,
                },
            ),
        ] {
            let packet = Packet::new_checked(&bytes[..]).unwrap();
            assert_eq!(Repr::parse(&packet).unwrap(), repr);
            let mut out = [0u8; 4];
            repr.emit(&mut Packet::new_unchecked(&mut out[..]));
            assert_eq!(out, bytes);
        }
        let mut out = [0u8; 4];
        let mut packet = Packet::new_unchecked(&mut out[..]);
        packet.set_msn(0xFF00_0001);
        assert_eq!(packet.msn(), 1);
    }

    #[test]
    fn truncated() {
        for len in 0..HEADER_LEN {
            assert_eq!(
                Packet::new_checked(&ACK_BYTES[..len]),
                Err(WireError::Truncated)
            );
            assert_eq!(
                Repr::parse(&Packet::new_unchecked(&ACK_BYTES[..len])),
                Err(WireError::Truncated)
            );
        }
    }

    #[test]
    fn display() {
        let ack = Packet::new_checked(&ACK_BYTES[..]).unwrap();
        assert_eq!(ack.to_string(), "AETH ACK credits=invalid msn=1193046");
        let nak = Repr::parse(&Packet::new_checked(&NAK_BYTES[..]).unwrap()).unwrap();
        assert_eq!(nak.to_string(), "AETH NAK remote access error msn=7");
        assert_eq!(
            Syndrome::from(0x2E).to_string(),
            "RNR NAK timer=14 (1280 us)"
        );
        assert_eq!(Syndrome::from(0x03).to_string(), "ACK credits=3");
        assert_eq!(Syndrome::from(0x40).to_string(), "reserved syndrome 0x40");
    }
}
