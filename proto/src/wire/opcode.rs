//! BTH opcodes of the Reliable Connected transport, and which headers each one carries.
//!
//! The top three bits of an opcode name the transport (000 RC, 001 UC, 010 RD, 011 UD,
//! 100 CNP, 101 XRC); only RC is known here and the others decode as `Unknown`.

use core::fmt;

use super::{aeth, atomic_ack_eth, atomic_eth, deth, ieth, immdt, reth};

/// An RC opcode (IBTA Vol. 1, table "OpCode field").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Opcode {
    SendFirst,
    SendMiddle,
    SendLast,
    SendLastWithImmediate,
    SendOnly,
    SendOnlyWithImmediate,
    RdmaWriteFirst,
    RdmaWriteMiddle,
    RdmaWriteLast,
    RdmaWriteLastWithImmediate,
    RdmaWriteOnly,
    RdmaWriteOnlyWithImmediate,
    RdmaReadRequest,
    RdmaReadResponseFirst,
    RdmaReadResponseMiddle,
    RdmaReadResponseLast,
    RdmaReadResponseOnly,
    Acknowledge,
    AtomicAcknowledge,
    CompareSwap,
    FetchAdd,
    SendLastWithInvalidate,
    SendOnlyWithInvalidate,
    /// Any other value: other transports, CNP, RESYNC (0x15), reserved codes.
    Unknown(u8),
}

/// An extension header that may follow the BTH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExtHeader {
    Reth,
    AtomicEth,
    ImmDt,
    Ieth,
    Aeth,
    AtomicAckEth,
    Deth,
}

impl ExtHeader {
    /// Its length on the wire.
    pub const fn wire_len(self) -> usize {
        match self {
            ExtHeader::Reth => reth::HEADER_LEN,
            ExtHeader::AtomicEth => atomic_eth::HEADER_LEN,
            ExtHeader::ImmDt => immdt::HEADER_LEN,
            ExtHeader::Ieth => ieth::HEADER_LEN,
            ExtHeader::Aeth => aeth::HEADER_LEN,
            ExtHeader::AtomicAckEth => atomic_ack_eth::HEADER_LEN,
            ExtHeader::Deth => deth::HEADER_LEN,
        }
    }
}

impl fmt::Display for ExtHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ExtHeader::Reth => "RETH",
            ExtHeader::AtomicEth => "AtomicETH",
            ExtHeader::ImmDt => "ImmDt",
            ExtHeader::Ieth => "IETH",
            ExtHeader::Aeth => "AETH",
            ExtHeader::AtomicAckEth => "AtomicAckETH",
            ExtHeader::Deth => "DETH",
        })
    }
}

/// Every known opcode, in numeric order (their values are in [`Opcode::code`]).
const ALL: [Opcode; 23] = [
    Opcode::SendFirst,
    Opcode::SendMiddle,
    Opcode::SendLast,
    Opcode::SendLastWithImmediate,
    Opcode::SendOnly,
    Opcode::SendOnlyWithImmediate,
    Opcode::RdmaWriteFirst,
    Opcode::RdmaWriteMiddle,
    Opcode::RdmaWriteLast,
    Opcode::RdmaWriteLastWithImmediate,
    Opcode::RdmaWriteOnly,
    Opcode::RdmaWriteOnlyWithImmediate,
    Opcode::RdmaReadRequest,
    Opcode::RdmaReadResponseFirst,
    Opcode::RdmaReadResponseMiddle,
    Opcode::RdmaReadResponseLast,
    Opcode::RdmaReadResponseOnly,
    Opcode::Acknowledge,
    Opcode::AtomicAcknowledge,
    Opcode::CompareSwap,
    Opcode::FetchAdd,
    Opcode::SendLastWithInvalidate,
    Opcode::SendOnlyWithInvalidate,
];

impl From<u8> for Opcode {
    fn from(value: u8) -> Self {
        ALL.into_iter()
            .find(|op| op.code() == value)
            .unwrap_or(Opcode::Unknown(value))
    }
}

impl From<Opcode> for u8 {
    fn from(op: Opcode) -> Self {
        op.code()
    }
}

impl Opcode {
    /// Its value on the wire: the one place the codes are written. A `const fn`, so that
    /// constants elsewhere (the RTL's) are set from it; `u8::from` gives the same.
    pub const fn code(self) -> u8 {
        match self {
            Opcode::SendFirst => 0x00,
            Opcode::SendMiddle => 0x01,
            Opcode::SendLast => 0x02,
            Opcode::SendLastWithImmediate => 0x03,
            Opcode::SendOnly => 0x04,
            Opcode::SendOnlyWithImmediate => 0x05,
            Opcode::RdmaWriteFirst => 0x06,
            Opcode::RdmaWriteMiddle => 0x07,
            Opcode::RdmaWriteLast => 0x08,
            Opcode::RdmaWriteLastWithImmediate => 0x09,
            Opcode::RdmaWriteOnly => 0x0A,
            Opcode::RdmaWriteOnlyWithImmediate => 0x0B,
            Opcode::RdmaReadRequest => 0x0C,
            Opcode::RdmaReadResponseFirst => 0x0D,
            Opcode::RdmaReadResponseMiddle => 0x0E,
            Opcode::RdmaReadResponseLast => 0x0F,
            Opcode::RdmaReadResponseOnly => 0x10,
            Opcode::Acknowledge => 0x11,
            Opcode::AtomicAcknowledge => 0x12,
            Opcode::CompareSwap => 0x13,
            Opcode::FetchAdd => 0x14,
            Opcode::SendLastWithInvalidate => 0x16,
            Opcode::SendOnlyWithInvalidate => 0x17,
            Opcode::Unknown(v) => v,
        }
    }

    /// Every known opcode, in numeric order.
    pub fn all() -> impl Iterator<Item = Opcode> {
        ALL.into_iter()
    }

    pub const fn is_known(self) -> bool {
        !matches!(self, Opcode::Unknown(_))
    }

    /// The extension headers that follow the BTH, in wire order: RETH, then AtomicETH, then
    /// ImmDt or IETH for requests; AETH, then AtomicAckETH for responses.
    pub const fn ext_headers(self) -> &'static [ExtHeader] {
        use ExtHeader::*;
        use Opcode::*;
        match self {
            SendFirst | SendMiddle | SendLast | SendOnly => &[],
            SendLastWithImmediate | SendOnlyWithImmediate => &[ImmDt],
            SendLastWithInvalidate | SendOnlyWithInvalidate => &[Ieth],
            RdmaWriteFirst | RdmaWriteOnly => &[Reth],
            RdmaWriteMiddle | RdmaWriteLast => &[],
            RdmaWriteLastWithImmediate => &[ImmDt],
            RdmaWriteOnlyWithImmediate => &[Reth, ImmDt],
            RdmaReadRequest => &[Reth],
            RdmaReadResponseFirst | RdmaReadResponseLast | RdmaReadResponseOnly => &[Aeth],
            RdmaReadResponseMiddle => &[],
            Acknowledge => &[Aeth],
            AtomicAcknowledge => &[Aeth, AtomicAckEth],
            CompareSwap | FetchAdd => &[AtomicEth],
            Unknown(_) => &[],
        }
    }

    /// Total length of [`ext_headers`](Self::ext_headers).
    pub const fn ext_headers_len(self) -> usize {
        let headers = self.ext_headers();
        let mut len = 0;
        let mut i = 0;
        while i < headers.len() {
            len += headers[i].wire_len();
            i += 1;
        }
        len
    }

    const fn carries(self, header: ExtHeader) -> bool {
        let headers = self.ext_headers();
        let mut i = 0;
        while i < headers.len() {
            if headers[i] as u8 == header as u8 {
                return true;
            }
            i += 1;
        }
        false
    }

    pub const fn has_reth(self) -> bool {
        self.carries(ExtHeader::Reth)
    }

    pub const fn has_atomic_eth(self) -> bool {
        self.carries(ExtHeader::AtomicEth)
    }

    pub const fn has_immdt(self) -> bool {
        self.carries(ExtHeader::ImmDt)
    }

    pub const fn has_ieth(self) -> bool {
        self.carries(ExtHeader::Ieth)
    }

    pub const fn has_aeth(self) -> bool {
        self.carries(ExtHeader::Aeth)
    }

    pub const fn has_atomic_ack_eth(self) -> bool {
        self.carries(ExtHeader::AtomicAckEth)
    }

    /// SEND packets of any kind.
    pub const fn is_send(self) -> bool {
        use Opcode::*;
        matches!(
            self,
            SendFirst
                | SendMiddle
                | SendLast
                | SendLastWithImmediate
                | SendOnly
                | SendOnlyWithImmediate
                | SendLastWithInvalidate
                | SendOnlyWithInvalidate
        )
    }

    /// RDMA WRITE packets of any kind.
    pub const fn is_write(self) -> bool {
        use Opcode::*;
        matches!(
            self,
            RdmaWriteFirst
                | RdmaWriteMiddle
                | RdmaWriteLast
                | RdmaWriteLastWithImmediate
                | RdmaWriteOnly
                | RdmaWriteOnlyWithImmediate
        )
    }

    pub const fn is_read_request(self) -> bool {
        matches!(self, Opcode::RdmaReadRequest)
    }

    pub const fn is_read_response(self) -> bool {
        use Opcode::*;
        matches!(
            self,
            RdmaReadResponseFirst
                | RdmaReadResponseMiddle
                | RdmaReadResponseLast
                | RdmaReadResponseOnly
        )
    }

    /// COMPARE_SWAP and FETCH_ADD.
    pub const fn is_atomic(self) -> bool {
        matches!(self, Opcode::CompareSwap | Opcode::FetchAdd)
    }

    /// Sent by a requester: SEND, WRITE, READ request, atomics.
    pub const fn is_request(self) -> bool {
        self.is_send() || self.is_write() || self.is_read_request() || self.is_atomic()
    }

    /// Sent by a responder: READ responses, ACK/NAK, atomic ACK.
    pub const fn is_response(self) -> bool {
        self.is_read_response() || matches!(self, Opcode::Acknowledge | Opcode::AtomicAcknowledge)
    }

    /// Whether the packet may carry payload (possibly zero bytes of it).
    pub const fn has_payload(self) -> bool {
        self.is_send() || self.is_write() || self.is_read_response()
    }

    /// The first packet of a multi-packet SEND, WRITE or READ response.
    pub const fn is_first(self) -> bool {
        use Opcode::*;
        matches!(self, SendFirst | RdmaWriteFirst | RdmaReadResponseFirst)
    }

    pub const fn is_middle(self) -> bool {
        use Opcode::*;
        matches!(self, SendMiddle | RdmaWriteMiddle | RdmaReadResponseMiddle)
    }

    /// The last packet of a multi-packet SEND, WRITE or READ response.
    pub const fn is_last(self) -> bool {
        use Opcode::*;
        matches!(
            self,
            SendLast
                | SendLastWithImmediate
                | SendLastWithInvalidate
                | RdmaWriteLast
                | RdmaWriteLastWithImmediate
                | RdmaReadResponseLast
        )
    }

    /// A one-packet SEND, WRITE or READ response (the `_ONLY` opcodes). READ requests,
    /// atomics and ACKs are single packets too but are none of first/middle/last/only.
    pub const fn is_only(self) -> bool {
        use Opcode::*;
        matches!(
            self,
            SendOnly
                | SendOnlyWithImmediate
                | SendOnlyWithInvalidate
                | RdmaWriteOnly
                | RdmaWriteOnlyWithImmediate
                | RdmaReadResponseOnly
        )
    }

    /// The IBTA name, e.g. `RDMA_WRITE_ONLY_WITH_IMMEDIATE`.
    pub const fn name(self) -> &'static str {
        use Opcode::*;
        match self {
            SendFirst => "SEND_FIRST",
            SendMiddle => "SEND_MIDDLE",
            SendLast => "SEND_LAST",
            SendLastWithImmediate => "SEND_LAST_WITH_IMMEDIATE",
            SendOnly => "SEND_ONLY",
            SendOnlyWithImmediate => "SEND_ONLY_WITH_IMMEDIATE",
            RdmaWriteFirst => "RDMA_WRITE_FIRST",
            RdmaWriteMiddle => "RDMA_WRITE_MIDDLE",
            RdmaWriteLast => "RDMA_WRITE_LAST",
            RdmaWriteLastWithImmediate => "RDMA_WRITE_LAST_WITH_IMMEDIATE",
            RdmaWriteOnly => "RDMA_WRITE_ONLY",
            RdmaWriteOnlyWithImmediate => "RDMA_WRITE_ONLY_WITH_IMMEDIATE",
            RdmaReadRequest => "RDMA_READ_REQUEST",
            RdmaReadResponseFirst => "RDMA_READ_RESPONSE_FIRST",
            RdmaReadResponseMiddle => "RDMA_READ_RESPONSE_MIDDLE",
            RdmaReadResponseLast => "RDMA_READ_RESPONSE_LAST",
            RdmaReadResponseOnly => "RDMA_READ_RESPONSE_ONLY",
            Acknowledge => "ACKNOWLEDGE",
            AtomicAcknowledge => "ATOMIC_ACKNOWLEDGE",
            CompareSwap => "COMPARE_SWAP",
            FetchAdd => "FETCH_ADD",
            SendLastWithInvalidate => "SEND_LAST_WITH_INVALIDATE",
            SendOnlyWithInvalidate => "SEND_ONLY_WITH_INVALIDATE",
            Unknown(_) => "UNKNOWN",
        }
    }
}

impl fmt::Display for Opcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Opcode::Unknown(v) => write!(f, "UNKNOWN({v:#04x})"),
            known => f.write_str(known.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ExtHeader::*;
    use Opcode::*;

    #[test]
    fn values_are_the_ibta_ones() {
        let expected = [
            (SendFirst, 0x00),
            (SendLastWithImmediate, 0x03),
            (SendOnlyWithImmediate, 0x05),
            (RdmaWriteFirst, 0x06),
            (RdmaWriteOnly, 0x0A),
            (RdmaWriteOnlyWithImmediate, 0x0B),
            (RdmaReadRequest, 0x0C),
            (RdmaReadResponseFirst, 0x0D),
            (RdmaReadResponseOnly, 0x10),
            (Acknowledge, 0x11),
            (AtomicAcknowledge, 0x12),
            (CompareSwap, 0x13),
            (FetchAdd, 0x14),
            (SendLastWithInvalidate, 0x16),
            (SendOnlyWithInvalidate, 0x17),
        ];
        for (op, v) in expected {
            assert_eq!(u8::from(op), v, "{op}");
            assert_eq!(Opcode::from(v), op);
        }
        assert_eq!(Opcode::all().count(), 23);
    }

    #[test]
    fn every_value_round_trips() {
        for v in 0..=255u8 {
            let op = Opcode::from(v);
            assert_eq!(u8::from(op), v);
            assert_eq!(op.is_known(), v <= 0x17 && v != 0x15, "{v:#x}");
        }
        assert_eq!(Opcode::from(0x15), Unknown(0x15)); // RESYNC (RD/XRC only)
        assert_eq!(Opcode::from(0x81), Unknown(0x81)); // CNP
        assert_eq!(Opcode::from(0x24), Unknown(0x24)); // UC SEND_ONLY
    }

    #[test]
    fn extension_headers_in_wire_order() {
        assert_eq!(SendOnly.ext_headers(), &[]);
        assert_eq!(SendMiddle.ext_headers(), &[]);
        assert_eq!(SendOnlyWithImmediate.ext_headers(), &[ImmDt]);
        assert_eq!(SendLastWithInvalidate.ext_headers(), &[Ieth]);
        assert_eq!(RdmaWriteFirst.ext_headers(), &[Reth]);
        assert_eq!(RdmaWriteMiddle.ext_headers(), &[]);
        assert_eq!(RdmaWriteLastWithImmediate.ext_headers(), &[ImmDt]);
        assert_eq!(RdmaWriteOnlyWithImmediate.ext_headers(), &[Reth, ImmDt]);
        assert_eq!(RdmaReadRequest.ext_headers(), &[Reth]);
        assert_eq!(RdmaReadResponseFirst.ext_headers(), &[Aeth]);
        assert_eq!(RdmaReadResponseMiddle.ext_headers(), &[]);
        assert_eq!(RdmaReadResponseOnly.ext_headers(), &[Aeth]);
        assert_eq!(Acknowledge.ext_headers(), &[Aeth]);
        assert_eq!(AtomicAcknowledge.ext_headers(), &[Aeth, AtomicAckEth]);
        assert_eq!(CompareSwap.ext_headers(), &[AtomicEth]);
        assert_eq!(FetchAdd.ext_headers(), &[AtomicEth]);
        assert_eq!(Unknown(0x81).ext_headers(), &[]);

        assert_eq!(RdmaWriteOnlyWithImmediate.ext_headers_len(), 20);
        assert_eq!(AtomicAcknowledge.ext_headers_len(), 12);
        assert_eq!(CompareSwap.ext_headers_len(), 28);
        assert_eq!(Deth.wire_len(), 8);
    }

    #[test]
    fn predicates_agree_with_the_header_lists() {
        for op in Opcode::all() {
            let h = op.ext_headers();
            assert_eq!(op.has_reth(), h.contains(&Reth), "{op}");
            assert_eq!(op.has_atomic_eth(), h.contains(&AtomicEth), "{op}");
            assert_eq!(op.has_immdt(), h.contains(&ImmDt), "{op}");
            assert_eq!(op.has_ieth(), h.contains(&Ieth), "{op}");
            assert_eq!(op.has_aeth(), h.contains(&Aeth), "{op}");
            assert_eq!(op.has_atomic_ack_eth(), h.contains(&AtomicAckEth), "{op}");
            // Exactly one of request and response.
            assert_ne!(op.is_request(), op.is_response(), "{op}");
            // At most one packet position.
            let positions = [op.is_first(), op.is_middle(), op.is_last(), op.is_only()];
            assert!(positions.iter().filter(|&&p| p).count() <= 1, "{op}");
            // Packets with positions are exactly those that carry payload.
            assert_eq!(positions.contains(&true), op.has_payload(), "{op}");
            // Names follow the enum.
            let name = op.name();
            assert_eq!(op.is_first(), name.ends_with("_FIRST"), "{op}");
            assert_eq!(op.is_middle(), name.ends_with("_MIDDLE"), "{op}");
            assert_eq!(op.is_last(), name.contains("_LAST"), "{op}");
            assert_eq!(op.is_only(), name.contains("_ONLY"), "{op}");
            assert_eq!(op.has_immdt(), name.contains("WITH_IMMEDIATE"), "{op}");
            assert_eq!(op.has_ieth(), name.contains("WITH_INVALIDATE"), "{op}");
            assert_eq!(op.is_send(), name.starts_with("SEND"), "{op}");
            assert_eq!(op.is_write(), name.starts_with("RDMA_WRITE"), "{op}");
            assert_eq!(
                op.is_read_response(),
                name.starts_with("RDMA_READ_RESPONSE"),
                "{op}"
            );
        }
        assert!(!Unknown(0x81).is_request() && !Unknown(0x81).is_response());
        assert!(!Unknown(0x81).has_payload());
    }

    #[test]
    fn display() {
        assert_eq!(
            RdmaWriteOnlyWithImmediate.to_string(),
            "RDMA_WRITE_ONLY_WITH_IMMEDIATE"
        );
        assert_eq!(Unknown(0x81).to_string(), "UNKNOWN(0x81)");
        assert_eq!(AtomicAckEth.to_string(), "AtomicAckETH");
    }
}
