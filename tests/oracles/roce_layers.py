"""Scapy layers for the RoCE v2 extended transport headers that
scapy.contrib.roce lacks, bound to scapy's BTH by opcode.

scapy.contrib.roce (scapy 2.5, Debian's python3-scapy) provides BTH, AETH,
GRH and CNP and computes the ICRC. Its BTH keeps the ICRC as a *trailer*
field (`icrc`, an FCSField read big-endian from the last 4 bytes of the UDP
payload): while dissecting, BTH strips those 4 bytes before handing the rest
to its payload, so the layers here see exactly "extension headers + payload +
pad", and `p[BTH].compute_icrc(None)` keeps working on frames built or
dissected with them.

Layers added: RETH (16 B), AtomicETH (28 B), AtomicAckETH (8 B), ImmDt (4 B),
IETH (4 B), DETH (8 B). The header sequence that follows BTH is a function of
the opcode (EXT_HEADERS below); each extension layer (and scapy's AETH, whose
guess_payload_class is extended here) looks up the BTH opcode to decide what
comes next, so e.g. RDMA WRITE ONLY WITH IMMEDIATE dissects as
BTH / RETH / ImmDt / Raw and ATOMIC ACKNOWLEDGE as BTH / AETH / AtomicAckETH.

Bindings are bottom-up only (dissection), so `BTH(opcode=...) / RETH()`
never silently rewrites an opcode you set.

Run under /usr/bin/python3 (Debian's scapy); see scripts/install-deps.sh.
"""

from scapy.config import conf
from scapy.fields import BitField, ByteField, IntField, XIntField, XLongField, XBitField
from scapy.packet import Packet, bind_bottom_up
from scapy.contrib.roce import BTH, AETH, CNP_OPCODE  # noqa: F401 (re-exported)

__all__ = [
    "BTH", "AETH", "RETH", "AtomicETH", "AtomicAckETH", "ImmDt", "IETH", "DETH",
    "EXT_HEADERS", "OPCODE_NAMES", "ext_headers", "opcode_name", "CNP_OPCODE",
]


class RETH(Packet):
    """RDMA Extended Transport Header (16 B)."""
    name = "RETH"
    fields_desc = [
        XLongField("va", 0),
        XIntField("rkey", 0),
        IntField("dmalen", 0),
    ]


class AtomicETH(Packet):
    """Atomic Extended Transport Header (28 B)."""
    name = "AtomicETH"
    fields_desc = [
        XLongField("va", 0),
        XIntField("rkey", 0),
        XLongField("swap_add", 0),
        XLongField("compare", 0),
    ]


class AtomicAckETH(Packet):
    """Atomic Acknowledge Extended Transport Header (8 B)."""
    name = "AtomicAckETH"
    fields_desc = [
        XLongField("orig", 0),
    ]


class ImmDt(Packet):
    """Immediate Data Extended Transport Header (4 B)."""
    name = "ImmDt"
    fields_desc = [
        XIntField("imm", 0),
    ]


class IETH(Packet):
    """Invalidate Extended Transport Header (4 B): the R_Key to invalidate."""
    name = "IETH"
    fields_desc = [
        XIntField("rkey", 0),
    ]


class DETH(Packet):
    """Datagram Extended Transport Header (8 B)."""
    name = "DETH"
    fields_desc = [
        XIntField("qkey", 0),
        ByteField("reserved", 0),
        XBitField("srcqp", 0, 24),
    ]


# Opcode -> the extension headers that follow BTH, in wire order.
# RC = 0x00 + op, UC = 0x20 + op (sends and writes only), UD = 0x60 + op.
_RC_UC_COMMON = {
    0x00: ("SEND_FIRST", ()),
    0x01: ("SEND_MIDDLE", ()),
    0x02: ("SEND_LAST", ()),
    0x03: ("SEND_LAST_WITH_IMMEDIATE", (ImmDt,)),
    0x04: ("SEND_ONLY", ()),
    0x05: ("SEND_ONLY_WITH_IMMEDIATE", (ImmDt,)),
    0x06: ("RDMA_WRITE_FIRST", (RETH,)),
    0x07: ("RDMA_WRITE_MIDDLE", ()),
    0x08: ("RDMA_WRITE_LAST", ()),
    0x09: ("RDMA_WRITE_LAST_WITH_IMMEDIATE", (ImmDt,)),
    0x0A: ("RDMA_WRITE_ONLY", (RETH,)),
    0x0B: ("RDMA_WRITE_ONLY_WITH_IMMEDIATE", (RETH, ImmDt)),
}
_RC_ONLY = {
    0x0C: ("RDMA_READ_REQUEST", (RETH,)),
    0x0D: ("RDMA_READ_RESPONSE_FIRST", (AETH,)),
    0x0E: ("RDMA_READ_RESPONSE_MIDDLE", ()),
    0x0F: ("RDMA_READ_RESPONSE_LAST", (AETH,)),
    0x10: ("RDMA_READ_RESPONSE_ONLY", (AETH,)),
    0x11: ("ACKNOWLEDGE", (AETH,)),
    0x12: ("ATOMIC_ACKNOWLEDGE", (AETH, AtomicAckETH)),
    0x13: ("COMPARE_SWAP", (AtomicETH,)),
    0x14: ("FETCH_ADD", (AtomicETH,)),
    0x16: ("SEND_LAST_WITH_INVALIDATE", (IETH,)),
    0x17: ("SEND_ONLY_WITH_INVALIDATE", (IETH,)),
}
_UD = {
    0x64: ("UD_SEND_ONLY", (DETH,)),
    0x65: ("UD_SEND_ONLY_WITH_IMMEDIATE", (DETH, ImmDt)),
}

EXT_HEADERS = {}
OPCODE_NAMES = {}
for _op, (_name, _hdrs) in {**_RC_UC_COMMON, **_RC_ONLY}.items():
    EXT_HEADERS[_op] = _hdrs
    OPCODE_NAMES[_op] = "RC_" + _name
for _op, (_name, _hdrs) in _RC_UC_COMMON.items():
    EXT_HEADERS[0x20 + _op] = _hdrs
    OPCODE_NAMES[0x20 + _op] = "UC_" + _name
for _op, (_name, _hdrs) in _UD.items():
    EXT_HEADERS[_op] = _hdrs
    OPCODE_NAMES[_op] = _name
OPCODE_NAMES[CNP_OPCODE] = "CNP"

# Opcodes that carry no payload (so PadCnt must be 0 and nothing may follow
# the extension headers).
NO_PAYLOAD_OPCODES = frozenset({0x0C, 0x11, 0x12, 0x13, 0x14})
# Opcodes whose payload is exactly one PMTU (so PadCnt must be 0).
MIDDLE_OPCODES = frozenset({0x01, 0x07, 0x0E, 0x21, 0x27})


def ext_headers(opcode):
    """Extension header classes following BTH for `opcode` (None if unknown)."""
    return EXT_HEADERS.get(opcode)


def opcode_name(opcode):
    return OPCODE_NAMES.get(opcode, "0x%02x" % opcode)


# Teach scapy's BTH opcode enum the names it lacks (0x16, 0x17, UD). The field
# keeps its own copies of the mapping, so update those.
_opfield = BTH.fields_desc[0]
for _op, _name in OPCODE_NAMES.items():
    if _op not in _opfield.i2s:
        _opfield.i2s[_op] = _name
        _opfield.s2i[_name] = _op


def _bth_of(pkt):
    u = pkt.underlayer
    while u is not None and not isinstance(u, BTH):
        u = u.underlayer
    return u


def _next_ext(self, payload):
    """guess_payload_class for extension headers: next header by BTH opcode."""
    bth = _bth_of(self)
    if bth is not None:
        hdrs = EXT_HEADERS.get(bth.opcode)
        if hdrs is not None and type(self) in hdrs:
            i = hdrs.index(type(self))
            if i + 1 < len(hdrs):
                return hdrs[i + 1]
            return conf.raw_layer
    return Packet.guess_payload_class(self, payload)


for _cls in (RETH, AtomicETH, AtomicAckETH, ImmDt, IETH, DETH, AETH):
    _cls.guess_payload_class = _next_ext

# BTH -> first extension header, by opcode (dissection only).
for _op, _hdrs in EXT_HEADERS.items():
    if _hdrs:
        bind_bottom_up(BTH, _hdrs[0], opcode=_op)
