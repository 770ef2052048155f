#!/usr/bin/python3
"""Check a pcap of RoCE v2 frames against two external oracles: scapy (ICRC,
structure, decode) and tshark's InfiniBand dissector (decode, malformed /
expert info). Optionally check tshark's decode against an expectation file.

usage:
  /usr/bin/python3 check_pcap.py FILE.pcap [--expect FILE.jsonl]
                                 [--require-opcodes 0x06,0x0c,...] [--json]
  /usr/bin/python3 check_pcap.py --self-test [--keep DIR]

Per frame (scapy side):
  * Ethernet (802.1Q/802.1ad tags allowed) / IPv4 / UDP dport 4791 / BTH;
    ARP frames are counted and skipped; anything else is a problem.
  * IPv4: version 4, valid header checksum, protocol UDP, not fragmented,
    total length consistent with the frame (only Ethernet padding of frames
    shorter than 60 bytes may follow the IP packet).
  * UDP: length consistent; checksum 0 or valid.
  * BTH: known opcode, header version 0, long enough for its extension headers.
  * ICRC: scapy's BTH.compute_icrc over the frame (Ethernet padding stripped)
    equals the 4 ICRC bytes on the wire, byte for byte.
  * Pad count: payload+pad is a multiple of 4, PadCnt <= its length, pad bytes
    are zero, PadCnt is 0 for MIDDLE packets, and opcodes that carry no
    payload (READ REQUEST, ACK, ATOMIC ACK, atomics) carry none.
Whole file (tshark side, one run, --disable-protocol rpcordma/smb_direct/iser):
  * no malformed frame, no expert info of Warning or Error severity;
  * every field tshark decodes (BTH opcode/psn/destqp/a/padcnt, RETH, AETH,
    AtomicETH, AtomicAckETH, ImmDt, IETH, DETH, ICRC, data payload) equals
    scapy's decode of the same frame.
--expect FILE.jsonl: one JSON object per RoCE frame in pcap order (ARP frames
  skipped and consume no line; blank lines and lines starting with '#'
  ignored). Keys (all ints unless noted):
    opcode, psn, dest_qp, ack_req (bool), pad          -- required
    reth: {va, rkey, len}      aeth: {syndrome, msn}
    atomic_eth: {va, rkey, swap_add, compare}   atomic_ack: {orig}
    immdt, ieth                deth: {qkey, src_qp}    -- exactly when present
    payload_len                -- optional: payload bytes excluding pad
  tshark's decode must equal it.
--require-opcodes: comma list (0x06 or 6); each must appear at least once.

Exit 0 if no problem, 1 if any (each printed with its frame number), 2 on
usage/tool errors. Last line: "N frames checked, M opcodes, P problems".

Needs Debian's python3-scapy and tshark: scripts/install-deps.sh oracles.
"""

import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
INSTALL_HINT = "install with scripts/install-deps.sh oracles"
ROCE_PORT = 4791
TSHARK_TIMEOUT = 120
MIN_FRAME = 60  # minimum Ethernet frame without FCS

ETH_IPV4, ETH_ARP, ETH_IPV6 = 0x0800, 0x0806, 0x86DD
VLAN_TPIDS = (0x8100, 0x88A8)

# Expert severities as tshark 4.0 prints _ws.expert.severity (numeric).
PI_WARN = 0x00600000
SEVERITY_NAMES = {"comment": 0x00100000, "chat": 0x00200000, "note": 0x00400000,
                  "warning": 0x00600000, "warn": 0x00600000, "error": 0x00800000}

TSHARK_FIELDS = [
    "frame.number", "frame.protocols",
    "infiniband.bth.opcode", "infiniband.bth.psn", "infiniband.bth.destqp",
    "infiniband.bth.a", "infiniband.bth.padcnt",
    # tshark 4.0 has no atomiceth.va / atomiceth.r_key: the AtomicETH's VA and
    # R_Key are shown with the RETH fields below.
    "infiniband.reth.va", "infiniband.reth.r_key", "infiniband.reth.dmalen",
    "infiniband.aeth.syndrome", "infiniband.aeth.msn",
    "infiniband.atomiceth.swapdt", "infiniband.atomiceth.cmpdt",
    "infiniband.atomicacketh.origremdt",
    "infiniband.immdt", "infiniband.ieth",   # FT_BYTES, hex
    "infiniband.deth.q_key", "infiniband.deth.srcqp",
    "infiniband.invariant.crc",               # wire ICRC bytes read big-endian
    "data.data",                               # payload incl. pad bytes
    "_ws.malformed", "_ws.expert.severity", "_ws.expert.message",
]
TSHARK_DISABLE = ["rpcordma", "smb_direct", "iser"]

EXPECT_BASE = ("opcode", "psn", "dest_qp", "ack_req", "pad")
EXPECT_HEADERS = {
    "reth": ("va", "rkey", "len"),
    "aeth": ("syndrome", "msn"),
    "atomic_eth": ("va", "rkey", "swap_add", "compare"),
    "atomic_ack": ("orig",),
    "immdt": None,
    "ieth": None,
    "deth": ("qkey", "src_qp"),
}
EXPECT_OPTIONAL = ("payload_len",)


class ToolError(Exception):
    """A missing or failing tool: exit 2 with this message."""


def import_scapy():
    try:
        import scapy  # noqa: F401
        import scapy.contrib.roce  # noqa: F401
    except ImportError as e:
        raise ToolError(
            "scapy with scapy.contrib.roce is not importable by %s (%s): %s, and run "
            "this script with /usr/bin/python3 (Debian's python3-scapy)"
            % (sys.executable, e, INSTALL_HINT))
    sys.path.insert(0, HERE)
    import roce_layers  # noqa: F401
    return roce_layers


def find_tshark():
    path = shutil.which("tshark")
    if not path:
        raise ToolError("tshark not found on PATH: " + INSTALL_HINT)
    return path


# --------------------------------------------------------------------------
# Reading the capture

def read_frames(path):
    """[(bytes, wirelen, linktype)] for every record of a pcap or pcapng."""
    from scapy.utils import RawPcapReader
    frames = []
    try:
        reader = RawPcapReader(path)
    except Exception as e:  # scapy raises Scapy_Exception on a bad magic
        raise ToolError("cannot read %s as pcap/pcapng: %s" % (path, e))
    try:
        file_linktype = getattr(reader, "linktype", None)
        for data, meta in reader:
            linktype = getattr(meta, "linktype", file_linktype)
            wirelen = getattr(meta, "wirelen", None)
            frames.append((bytes(data), wirelen if wirelen is not None else len(data), linktype))
    finally:
        reader.close()
    return frames


# --------------------------------------------------------------------------
# scapy side

def ones_sum_ok(data):
    from scapy.utils import checksum
    return checksum(data) == 0


def scapy_check_frame(raw, prob):
    """Check one frame with scapy. Returns ("arp", None), ("bad", None) or
    ("roce", decode_dict). `prob(msg)` records a problem for this frame."""
    from scapy.layers.l2 import Ether
    from scapy.layers.inet import IP, UDP, in4_chksum
    from scapy.packet import Raw, Padding

    if len(raw) < 14:
        prob("frame of %d bytes is shorter than an Ethernet header" % len(raw))
        return "bad", None
    off = 12
    etype = struct.unpack_from("!H", raw, off)[0]
    while etype in VLAN_TPIDS and len(raw) >= off + 8:
        off += 4
        etype = struct.unpack_from("!H", raw, off)[0]
    l2 = off + 2
    if etype == ETH_ARP:
        return "arp", None
    if etype != ETH_IPV4:
        what = {ETH_IPV6: "IPv6 (not supported by this checker yet)"}.get(etype, "ethertype 0x%04x" % etype)
        prob("not IPv4: %s" % what)
        return "bad", None

    ip = raw[l2:]
    if len(ip) < 20:
        prob("truncated IPv4 header")
        return "bad", None
    ver, ihl = ip[0] >> 4, (ip[0] & 0x0F) * 4
    if ver != 4 or ihl < 20 or len(ip) < ihl:
        prob("bad IPv4 version/IHL (version %d, header %d bytes)" % (ver, ihl))
        return "bad", None
    ok = True
    if not ones_sum_ok(ip[:ihl]):
        prob("IPv4 header checksum 0x%04x is wrong" % struct.unpack_from("!H", ip, 10)[0])
        ok = False
    tot_len = struct.unpack_from("!H", ip, 2)[0]
    flags_frag = struct.unpack_from("!H", ip, 6)[0]
    if flags_frag & 0x3FFF:
        prob("IPv4 fragment (MF set or fragment offset non-zero)")
        ok = False
    if ip[9] != 17:
        prob("IPv4 protocol %d is not UDP" % ip[9])
        return "bad", None
    if tot_len > len(ip):
        prob("IPv4 total length %d exceeds the %d bytes captured after the L2 header"
             % (tot_len, len(ip)))
        return "bad", None
    if tot_len < len(ip):
        if len(raw) > MIN_FRAME:
            prob("%d bytes follow the IPv4 packet in a %d-byte frame (only padding of "
                 "short frames to %d bytes is allowed; FCS included?)"
                 % (len(ip) - tot_len, len(raw), MIN_FRAME))
            ok = False
    frame = raw[:l2 + tot_len]  # Ethernet padding stripped (scapy's ICRC would include it)
    udp = frame[l2 + ihl:]
    if len(udp) < 8:
        prob("truncated UDP header")
        return "bad", None
    sport, dport, ulen, ucsum = struct.unpack_from("!HHHH", udp, 0)
    if dport != ROCE_PORT:
        prob("UDP destination port %d is not %d (RoCE v2)" % (dport, ROCE_PORT))
        return "bad", None
    if ulen != len(udp):
        prob("UDP length %d != %d (IPv4 total length - IHL)" % (ulen, len(udp)))
        return "bad", None

    p = Ether(frame)
    if ucsum != 0:
        if in4_chksum(17, p[IP], udp) != 0:
            prob("UDP checksum 0x%04x is wrong (RoCE v2 senders should send 0)" % ucsum)
            ok = False

    from roce_layers import BTH, EXT_HEADERS, CNP_OPCODE, NO_PAYLOAD_OPCODES, MIDDLE_OPCODES
    from roce_layers import RETH, AETH, AtomicETH, AtomicAckETH, ImmDt, IETH, DETH
    from scapy.contrib.roce import CNPPadding
    bth_len = len(udp) - 8
    if bth_len < 12 + 4:
        prob("UDP payload of %d bytes is too short for BTH + ICRC" % bth_len)
        return "bad", None
    if BTH not in p:
        prob("scapy did not decode a BTH")
        return "bad", None
    bth = p[BTH]
    op = bth.opcode
    hdrs = EXT_HEADERS.get(op)
    if hdrs is None and op != CNP_OPCODE:
        prob("unknown BTH opcode 0x%02x" % op)
        ok = False
    if bth.version != 0:
        prob("BTH header version %d (must be 0)" % bth.version)
        ok = False
    ext_len = sum(len(h()) for h in (hdrs or ()))
    if op == CNP_OPCODE:
        ext_len = 16
    body = bth_len - 12 - 4  # extension headers + payload + pad
    if body < ext_len:
        prob("opcode 0x%02x needs %d bytes of extension headers, frame has %d"
             % (op, ext_len, body))
        return "bad", None

    # ICRC: scapy computes the 4 wire bytes (CRC LSB first). Its `icrc` field
    # is those same wire bytes read big-endian; compare bytes to bytes.
    wire_icrc = frame[-4:]
    calc_icrc = bytes(bth.compute_icrc(None))
    if calc_icrc != wire_icrc:
        prob("ICRC mismatch: wire bytes %s, scapy computes %s"
             % (wire_icrc.hex(" "), calc_icrc.hex(" ")))
        ok = False
    if bth.icrc != int.from_bytes(wire_icrc, "big"):
        prob("internal: scapy's icrc field 0x%08x does not read the wire bytes %s big-endian"
             % (bth.icrc, wire_icrc.hex(" ")))
        ok = False

    # Pad count.
    payload = frame[l2 + ihl + 8 + 12 + ext_len:-4]  # payload + pad
    pad = bth.padcount
    if op == CNP_OPCODE:
        if pad:
            prob("CNP with PadCnt %d" % pad)
            ok = False
    elif op in NO_PAYLOAD_OPCODES:
        if payload or pad:
            prob("opcode 0x%02x carries no payload but has %d payload bytes, PadCnt %d"
                 % (op, len(payload), pad))
            ok = False
    else:
        if len(payload) % 4:
            prob("payload+pad length %d is not a multiple of 4 (PadCnt %d)" % (len(payload), pad))
            ok = False
        if pad > len(payload):
            prob("PadCnt %d exceeds the %d payload bytes" % (pad, len(payload)))
            ok = False
        elif pad and any(payload[len(payload) - pad:]):
            prob("pad bytes are not zero: %s" % payload[len(payload) - pad:].hex(" "))
            ok = False
        if pad and op in MIDDLE_OPCODES:
            prob("MIDDLE packet (opcode 0x%02x) with PadCnt %d" % (op, pad))
            ok = False

    d = {
        "opcode": op, "psn": bth.psn, "dest_qp": bth.dqpn,
        "ack_req": bool(bth.ackreq), "pad": pad,
        "icrc": bth.icrc, "payload": payload.hex(),
        "payload_len": max(len(payload) - pad, 0),
    }
    if RETH in p:
        r = p[RETH]
        d["reth"] = {"va": r.va, "rkey": r.rkey, "len": r.dmalen}
    if AETH in p:
        a = p[AETH]
        d["aeth"] = {"syndrome": a.syndrome, "msn": a.msn}
    if AtomicETH in p:
        a = p[AtomicETH]
        d["atomic_eth"] = {"va": a.va, "rkey": a.rkey, "swap_add": a.swap_add,
                           "compare": a.compare}
    if AtomicAckETH in p:
        d["atomic_ack"] = {"orig": p[AtomicAckETH].orig}
    if ImmDt in p:
        d["immdt"] = p[ImmDt].imm
    if IETH in p:
        d["ieth"] = p[IETH].rkey
    if DETH in p:
        d["deth"] = {"qkey": p[DETH].qkey, "src_qp": p[DETH].srcqp}
    if CNPPadding in p:
        d["payload"] = ""
        d["payload_len"] = 0
    # The layers found must be exactly those the opcode calls for.
    got = [type(l) for l in p[BTH].iterpayloads()][1:]
    got = [c for c in got if c not in (Raw, Padding, CNPPadding)]
    if hdrs is not None and tuple(got) != tuple(hdrs):
        prob("internal: scapy decoded %s after BTH, opcode 0x%02x calls for %s"
             % ([c.__name__ for c in got], op, [c.__name__ for c in hdrs]))
        ok = False
    return ("roce" if ok else "roce-bad"), d


# --------------------------------------------------------------------------
# tshark side

def run_tshark(path, timeout=TSHARK_TIMEOUT, extra_disable=()):
    """Run tshark once over the file; {frame_number: {field: [values]}}."""
    tshark = find_tshark()
    cmd = [tshark, "-r", path, "-n", "-T", "json"]
    for proto in list(TSHARK_DISABLE) + list(extra_disable):
        cmd += ["--disable-protocol", proto]   # repeated: a comma list is ignored
    for f in TSHARK_FIELDS:
        cmd += ["-e", f]
    if shutil.which("timeout"):
        cmd = ["timeout", "--kill-after=10", str(timeout)] + cmd
    env = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="rocenic-tshark-") as confdir:
        env["WIRESHARK_CONFIG_DIR"] = confdir  # default preferences, no user profile
        try:
            res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 env=env, timeout=timeout + 20)
        except subprocess.TimeoutExpired:
            raise ToolError("tshark timed out after %d s on %s" % (timeout, path))
    if res.returncode == 124 or res.returncode == 137:
        raise ToolError("tshark timed out after %d s on %s" % (timeout, path))
    if res.returncode != 0:
        err = res.stderr.decode(errors="replace").strip()
        raise ToolError("tshark failed (exit %d) on %s: %s" % (res.returncode, path, err))
    try:
        out = json.loads(res.stdout.decode(errors="replace") or "[]")
    except ValueError as e:
        raise ToolError("cannot parse tshark's JSON output: %s" % e)
    frames = {}
    for pkt in out:
        layers = pkt.get("_source", {}).get("layers", {})
        num = int(layers.get("frame.number", ["0"])[0])
        frames[num] = layers
    return frames


def _int(s):
    s = s.strip()
    if s in ("True", "true"):
        return 1
    if s in ("False", "false"):
        return 0
    return int(s, 0)


def _bytes_int(s):
    return int(s.replace(":", "").replace(" ", ""), 16)


def tshark_decode(layers, prob):
    """tshark's decode of one frame, in the same shape as scapy_check_frame's."""
    def one(field, conv=_int):
        vals = layers.get(field)
        if not vals:
            return None
        conv_vals = []
        for v in vals:
            try:
                conv_vals.append(conv(v))
            except ValueError:
                prob("tshark: cannot parse %s value %r" % (field, v))
                return None
        if len(set(conv_vals)) > 1:
            prob("tshark: several different values for %s: %s" % (field, vals))
        return conv_vals[0]

    d = {}
    for key, field in (("opcode", "infiniband.bth.opcode"), ("psn", "infiniband.bth.psn"),
                       ("dest_qp", "infiniband.bth.destqp"), ("ack_req", "infiniband.bth.a"),
                       ("pad", "infiniband.bth.padcnt"), ("icrc", "infiniband.invariant.crc")):
        v = one(field)
        if v is not None:
            d[key] = bool(v) if key == "ack_req" else v
    va, rkey = one("infiniband.reth.va"), one("infiniband.reth.r_key")
    swap, cmp_ = one("infiniband.atomiceth.swapdt"), one("infiniband.atomiceth.cmpdt")
    if swap is not None or cmp_ is not None:
        # tshark 4.0 shows the AtomicETH's VA and R_Key as infiniband.reth.*
        d["atomic_eth"] = {"va": va, "rkey": rkey, "swap_add": swap, "compare": cmp_}
        if one("infiniband.reth.dmalen") is not None:
            prob("tshark decoded a RETH DMA length in an atomic request")
    elif va is not None or rkey is not None or "infiniband.reth.dmalen" in layers:
        d["reth"] = {"va": va, "rkey": rkey, "len": one("infiniband.reth.dmalen")}
    if "infiniband.aeth.syndrome" in layers or "infiniband.aeth.msn" in layers:
        d["aeth"] = {"syndrome": one("infiniband.aeth.syndrome"),
                     "msn": one("infiniband.aeth.msn")}
    if "infiniband.atomicacketh.origremdt" in layers:
        d["atomic_ack"] = {"orig": one("infiniband.atomicacketh.origremdt")}
    if "infiniband.immdt" in layers:
        d["immdt"] = one("infiniband.immdt", _bytes_int)
    if "infiniband.ieth" in layers:
        d["ieth"] = one("infiniband.ieth", _bytes_int)
    if "infiniband.deth.q_key" in layers or "infiniband.deth.srcqp" in layers:
        d["deth"] = {"qkey": one("infiniband.deth.q_key"),
                     "src_qp": one("infiniband.deth.srcqp")}
    data = layers.get("data.data")
    if data:
        d["payload"] = "".join(x.replace(":", "") for x in data).lower()
    return d


def tshark_frame_problems(layers, prob):
    protos = (layers.get("frame.protocols") or [""])[0]
    if "infiniband" not in protos.split(":"):
        prob("tshark did not dissect InfiniBand (protocols: %s)" % protos)
        return False
    if layers.get("_ws.malformed"):
        prob("tshark: malformed packet (%s)" % "; ".join(layers.get("_ws.expert.message", [])))
    sevs = layers.get("_ws.expert.severity", [])
    msgs = layers.get("_ws.expert.message", [])
    for i, s in enumerate(sevs):
        try:
            sev = int(s, 0)
        except ValueError:
            sev = SEVERITY_NAMES.get(s.strip().lower(), PI_WARN)
        if sev >= PI_WARN:
            level = "error" if sev >= 0x00800000 else "warning"
            msg = msgs[i] if i < len(msgs) else "?"
            if "Malformed" in msg and layers.get("_ws.malformed"):
                continue  # already reported
            prob("tshark expert %s: %s" % (level, msg))
    after = protos.split(":")
    after = after[after.index("infiniband") + 1:]
    return after


def compare(a, b, a_name, b_name, prob, keys=None):
    """Compare two decode dicts (values or one-level sub-dicts)."""
    keys = keys if keys is not None else sorted(set(a) | set(b))
    for k in keys:
        if k not in a and k not in b:
            continue
        if k not in a:
            prob("%s has %s=%s, %s has no %s" % (b_name, k, _fmt(b[k]), a_name, k))
        elif k not in b:
            prob("%s has %s=%s, %s has no %s" % (a_name, k, _fmt(a[k]), b_name, k))
        elif a[k] != b[k]:
            prob("%s: %s says %s, %s says %s" % (k, a_name, _fmt(a[k]), b_name, _fmt(b[k])))


def _fmt(v):
    if isinstance(v, dict):
        return "{" + ", ".join("%s: %s" % (k, _fmt(x)) for k, x in v.items()) + "}"
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, int) and v > 9:
        return "0x%x" % v
    return str(v)


# --------------------------------------------------------------------------
# Expectations

def load_expect(path):
    out = []
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            s = line.strip()
            if not s or s.startswith("#"):
                continue
            try:
                obj = json.loads(s)
            except ValueError as e:
                raise ToolError("%s:%d: not JSON: %s" % (path, lineno, e))
            if not isinstance(obj, dict):
                raise ToolError("%s:%d: not a JSON object" % (path, lineno))
            out.append((lineno, obj))
    return out


def check_expect(exp, lineno, tsd, prob):
    where = "expect line %d" % lineno
    for k in exp:
        if k not in EXPECT_BASE and k not in EXPECT_HEADERS and k not in EXPECT_OPTIONAL:
            prob("%s: unknown key %r" % (where, k))
    for k in EXPECT_BASE:
        if k not in exp:
            prob("%s: missing required key %r" % (where, k))
    norm = {}
    for k, v in exp.items():
        if k == "ack_req":
            norm[k] = bool(v)
        elif k in EXPECT_HEADERS and EXPECT_HEADERS[k] is not None:
            if not isinstance(v, dict):
                prob("%s: %s must be an object" % (where, k))
                continue
            for sub in v:
                if sub not in EXPECT_HEADERS[k]:
                    prob("%s: unknown key %s.%s" % (where, k, sub))
            norm[k] = {s: v.get(s) for s in EXPECT_HEADERS[k]}
        else:
            norm[k] = v
    keys = [k for k in list(EXPECT_BASE) + list(EXPECT_HEADERS) if k in norm or k in tsd]
    if "payload_len" in norm:
        # tshark shows payload+pad as data.data; derive the payload length from it.
        tl = len(tsd.get("payload", "")) // 2 - tsd.get("pad", 0)
        tsd = dict(tsd, payload_len=max(tl, 0))
        keys.append("payload_len")
    compare(tsd, norm, "tshark", where, prob, keys)


# --------------------------------------------------------------------------
# The whole check

class Report:
    def __init__(self):
        self.problems = []   # (frame number or None, message)
        self.frames = 0      # frames checked (all but ARP)
        self.arp = 0
        self.opcodes = {}    # opcode -> count
        self.payload_guesses = 0  # frames re-dissected without a guessed payload protocol

    def add(self, frame, msg):
        self.problems.append((frame, msg))

    def prob_for(self, frame):
        return lambda msg: self.add(frame, msg)

    def summary(self):
        return "%d frames checked, %d opcodes, %d problems" % (
            self.frames, len(self.opcodes), len(self.problems))

    def as_json(self):
        return {
            "ok": not self.problems, "frames": self.frames, "arp_skipped": self.arp,
            "opcodes": {"0x%02x" % k: v for k, v in sorted(self.opcodes.items())},
            "problems": [{"frame": f, "message": m} for f, m in self.problems],
            "summary": self.summary(),
        }

    def print_text(self, out=sys.stdout):
        for f, m in self.problems:
            print("frame %s: %s" % (f, m) if f is not None else m, file=out)
        if self.arp:
            print("%d ARP frames skipped" % self.arp, file=out)
        if self.payload_guesses:
            print("%d frames re-dissected without tshark's guessed payload protocol"
                  % self.payload_guesses, file=out)
        print(self.summary(), file=out)


def check_file(path, expect=None, require_opcodes=None, timeout=TSHARK_TIMEOUT):
    """Check a capture. `expect`: list of (lineno, dict) or None."""
    import_scapy()
    find_tshark()
    rep = Report()
    frames = read_frames(path)
    decodes = {}  # frame number -> scapy decode
    flagged = set()  # decodable frames scapy already found problems in
    roce_order = []
    for i, (raw, wirelen, linktype) in enumerate(frames, 1):
        prob = rep.prob_for(i)
        if linktype not in (None, 1):
            prob("link type %s is not Ethernet (1)" % linktype)
            continue
        if wirelen > len(raw):
            prob("truncated by the capture: %d of %d bytes saved" % (len(raw), wirelen))
            continue
        kind, d = scapy_check_frame(raw, prob)
        if kind == "arp":
            rep.arp += 1
            continue
        if kind == "bad":
            roce_order.append(i)
            continue
        if kind == "roce-bad":
            flagged.add(i)
        rep.opcodes[d["opcode"]] = rep.opcodes.get(d["opcode"], 0) + 1
        decodes[i] = d
        roce_order.append(i)
    rep.frames = len(frames) - rep.arp
    if not frames:
        rep.add(None, "%s: capture holds no frames" % path)
    elif not roce_order:
        rep.add(None, "%s: capture holds no RoCE frames" % path)

    ts = run_tshark(path, timeout) if roce_order else {}
    # tshark's InfiniBand dissector guesses a payload whose first four bytes look like
    # "ethertype + 0x0000" to be IPoIB-style encapsulated (e.g. a 1-byte payload 0x81 plus
    # three zero pad bytes becomes a VLAN tag) and then reports the guessed protocol as
    # malformed. That is a judgement of the payload, not of the RoCE headers: disable the
    # guessed payload protocols and dissect those frames again, which must then be clean.
    guessed = set()
    for i in roce_order:
        layers = ts.get(i) or {}
        protos = (layers.get("frame.protocols") or [""])[0].split(":")
        if layers.get("_ws.malformed") and "infiniband" in protos:
            guessed |= set(protos[protos.index("infiniband") + 1:]) - {"data"}
    if guessed:
        redo = run_tshark(path, timeout, sorted(guessed))
        for i in roce_order:
            if (ts.get(i) or {}).get("_ws.malformed") and i in redo:
                ts[i] = redo[i]
                rep.payload_guesses += 1
    for idx, i in enumerate(roce_order):
        prob = rep.prob_for(i)
        layers = ts.get(i)
        if layers is None:
            prob("tshark did not report this frame")
            continue
        after = tshark_frame_problems(layers, prob)
        if after is False:
            continue
        tsd = tshark_decode(layers, prob)
        sd = decodes.get(i)
        if sd is not None:
            sd = dict(sd)
            sd.pop("payload_len")
            if i in flagged:
                # Already broken per scapy: tshark typically stops early on such a
                # frame (no ICRC / payload shown); compare what both decoded.
                sd = {k: v for k, v in sd.items() if k in tsd}
            if "payload" not in tsd:
                if sd.get("payload"):
                    prob("tshark shows no payload data for the %d payload+pad bytes "
                         "(protocols after infiniband: %s)"
                         % (len(sd["payload"]) // 2, ":".join(after) or "none"))
                sd.pop("payload", None)
            if "icrc" not in tsd and sd.get("opcode") == 0x81:
                sd.pop("icrc")   # tshark 4.0 shows CNPs as vendor data, no ICRC
            compare(tsd, sd, "tshark", "scapy", prob)
        if expect is not None:
            if idx < len(expect):
                lineno, exp = expect[idx]
                check_expect(exp, lineno, tsd, prob)
    if expect is not None and len(expect) != len(roce_order):
        rep.add(None, "expectation has %d frames, capture has %d RoCE frames"
                % (len(expect), len(roce_order)))
    for op in require_opcodes or ():
        if op not in rep.opcodes:
            rep.add(None, "required opcode 0x%02x never appears" % op)
    rep.problems.sort(key=lambda fm: (fm[0] is None, fm[0] or 0))
    return rep


def parse_opcodes(s):
    out = []
    for tok in s.split(","):
        tok = tok.strip()
        if tok:
            try:
                out.append(int(tok, 0))
            except ValueError:
                raise ToolError("--require-opcodes: %r is not a number" % tok)
    return out


def reexec_under_system_python():
    """`python3` on PATH may be a pyenv build without Debian's scapy: rerun
    this script under /usr/bin/python3 if that one has it."""
    try:
        import scapy.contrib.roce  # noqa: F401
        return
    except ImportError:
        pass
    sys_py = "/usr/bin/python3"
    if (os.environ.get("ROCENIC_ORACLE_REEXEC") or not os.path.exists(sys_py)
            or os.path.realpath(sys.executable) == os.path.realpath(sys_py)):
        return
    os.environ["ROCENIC_ORACLE_REEXEC"] = "1"
    os.execv(sys_py, [sys_py, os.path.abspath(__file__)] + sys.argv[1:])


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Check RoCE v2 frames in a pcap with scapy and tshark.",
        epilog="Run under /usr/bin/python3. " + INSTALL_HINT + ".")
    ap.add_argument("pcap", nargs="?", help="capture to check (pcap or pcapng, Ethernet)")
    ap.add_argument("--expect", metavar="FILE.jsonl",
                    help="expected decode, one JSON object per RoCE frame")
    ap.add_argument("--require-opcodes", metavar="LIST", default="",
                    help="comma list of opcodes that must appear (0x06,0x0c or 6,12)")
    ap.add_argument("--json", action="store_true", help="print a JSON report on stdout")
    ap.add_argument("--timeout", type=int, default=TSHARK_TIMEOUT,
                    help="tshark timeout in seconds (default %(default)s)")
    ap.add_argument("--self-test", action="store_true",
                    help="check the checker: known-good and known-bad captures, the "
                         "ConnectX-4 Lx CNP vector")
    ap.add_argument("--keep", metavar="DIR",
                    help="with --self-test: write the test captures into DIR")
    args = ap.parse_args(argv)
    if args.timeout < 1:
        ap.error("--timeout must be at least 1 second")
    try:
        if args.self_test:
            import oracle_selftest
            return oracle_selftest.run_self_test(args.keep)
        if not args.pcap:
            ap.error("a pcap file is required (or --self-test)")
        if not os.path.exists(args.pcap):
            raise ToolError("no such file: %s" % args.pcap)
        expect = load_expect(args.expect) if args.expect else None
        rep = check_file(args.pcap, expect, parse_opcodes(args.require_opcodes), args.timeout)
    except ToolError as e:
        print("check_pcap: error: %s" % e, file=sys.stderr)
        return 2
    if args.json:
        json.dump(rep.as_json(), sys.stdout, indent=1)
        print()
    else:
        rep.print_text()
    return 0 if not rep.problems else 1


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    reexec_under_system_python()
    sys.exit(main())
