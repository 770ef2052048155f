"""Self-test of check_pcap.py (run: /usr/bin/python3 check_pcap.py --self-test).

1. The ConnectX-4 Lx CNP captured in scapy's own test suite (wire ICRC bytes
   82 fd 00 2a): scapy's ICRC and the byte-order convention check_pcap relies
   on, plus an independent ICRC written from the ICRC definition in
   the architecture brief ("The wire").
2. A known-good capture with every RC opcode (plus UC, UD, CNP, VLAN, ARP, a
   zero-length SEND padded to 60 bytes, a non-zero UDP checksum) and its
   expectation file: the checker must pass it.
3. Known-bad captures, one defect each: the checker must fail each with the
   expected message on the expected frame.
Prints one line per case and "N passed, M failed".
"""

import json
import os
import struct
import sys
import tempfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import check_pcap  # noqa: E402

# The ConnectX-4 Lx CNP from scapy's test/contrib/roce.uts (a real hardware
# capture). Its last 4 bytes are the ICRC as sent: 82 fd 00 2a.
CX4_CNP = bytes.fromhex(
    "e41d2dab2bc27cfe90643b32080045c2"
    "003c718c400040119161 0a0011010a00"
    "1201000012b700280000 8100ffff4000"
    "01180000000000000000000000000000"
    "000000000000 82fd002a".replace(" ", ""))
CX4_CNP_ICRC = bytes([0x82, 0xFD, 0x00, 0x2A])

MAC_A, MAC_B = "02:00:00:00:00:0a", "02:00:00:00:00:0b"
IP_A, IP_B = "10.0.0.10", "10.0.0.11"


def spec_icrc(frame, l2=14):
    """Independent ICRC (IPv4) from the spec text: CRC-32 (zlib) over 8 bytes
    of 0xFF, IPv4 header with TOS/TTL/checksum set to ones, UDP header with
    checksum set to ones, BTH with byte 4 set to 0xFF, rest up to the ICRC.
    zlib.crc32 already inverts the result; it is sent LSB first."""
    ip = bytearray(frame[l2:])
    ihl = (ip[0] & 0x0F) * 4
    ip[1] = 0xFF
    ip[8] = 0xFF
    ip[10:12] = b"\xff\xff"
    ip[ihl + 6:ihl + 8] = b"\xff\xff"
    ip[ihl + 8 + 4] = 0xFF
    crc = zlib.crc32(b"\xff" * 8 + bytes(ip[:-4])) & 0xFFFFFFFF
    return struct.pack("<I", crc)


class Builder:
    """Builds frames with scapy (ICRC computed by scapy) and their expectation."""

    def __init__(self):
        from scapy.all import Ether, IP, UDP, Raw, Dot1Q
        import roce_layers as rl
        self.Ether, self.IP, self.UDP, self.Raw, self.Dot1Q = Ether, IP, UDP, Raw, Dot1Q
        self.rl = rl
        self.frames = []   # raw bytes
        self.expect = []   # dicts (None for ARP)

    def roce(self, op, psn, qp, ack=False, pad=0, payload=b"", reth=None, aeth=None,
             atomic=None, atomic_ack=None, imm=None, ieth=None, deth=None, vlan=None,
             udp_chksum=0, ip_kw=None, pad_to_60=False, post=None):
        rl = self.rl
        eth = self.Ether(src=MAC_A, dst=MAC_B)
        l3 = self.IP(src=IP_A, dst=IP_B, flags="DF", ttl=64, tos=0x02, **(ip_kw or {}))
        pkt = (eth / self.Dot1Q(vlan=vlan) if vlan is not None else eth) / l3 / \
            self.UDP(sport=0xC000 | (qp & 0x3FFF), dport=4791, chksum=udp_chksum) / \
            rl.BTH(opcode=op, psn=psn, dqpn=qp, ackreq=int(ack), padcount=pad)
        exp = {"opcode": op, "psn": psn, "dest_qp": qp, "ack_req": ack, "pad": pad}
        # extension headers in the order the opcode calls for
        for h in rl.EXT_HEADERS[op]:
            if h is rl.RETH:
                pkt = pkt / rl.RETH(va=reth[0], rkey=reth[1], dmalen=reth[2])
                exp["reth"] = {"va": reth[0], "rkey": reth[1], "len": reth[2]}
            elif h is rl.AETH:
                pkt = pkt / rl.AETH(syndrome=aeth[0], msn=aeth[1])
                exp["aeth"] = {"syndrome": aeth[0], "msn": aeth[1]}
            elif h is rl.AtomicETH:
                pkt = pkt / rl.AtomicETH(va=atomic[0], rkey=atomic[1], swap_add=atomic[2],
                                         compare=atomic[3])
                exp["atomic_eth"] = dict(zip(("va", "rkey", "swap_add", "compare"), atomic))
            elif h is rl.AtomicAckETH:
                pkt = pkt / rl.AtomicAckETH(orig=atomic_ack)
                exp["atomic_ack"] = {"orig": atomic_ack}
            elif h is rl.ImmDt:
                pkt = pkt / rl.ImmDt(imm=imm)
                exp["immdt"] = imm
            elif h is rl.IETH:
                pkt = pkt / rl.IETH(rkey=ieth)
                exp["ieth"] = ieth
            elif h is rl.DETH:
                pkt = pkt / rl.DETH(qkey=deth[0], srcqp=deth[1])
                exp["deth"] = {"qkey": deth[0], "src_qp": deth[1]}
        data = payload + b"\0" * pad
        if data:
            pkt = pkt / self.Raw(data)
            exp["payload_len"] = len(payload)
        raw = bytes(pkt)  # scapy fills lengths, IP checksum and the ICRC
        if pad_to_60 and len(raw) < 60:
            raw += b"\0" * (60 - len(raw))
        if post:
            raw = post(raw)
        return self.add(raw, exp)

    def add(self, raw, exp):
        self.frames.append(bytes(raw))
        self.expect.append(exp)
        return len(self.frames)  # frame number

    def arp(self):
        from scapy.all import ARP
        raw = bytes(self.Ether(src=MAC_A, dst="ff:ff:ff:ff:ff:ff") /
                    ARP(op=1, hwsrc=MAC_A, psrc=IP_A, pdst=IP_B))
        return self.add(raw, None)

    def write(self, pcap, jsonl=None):
        from scapy.utils import RawPcapWriter
        w = RawPcapWriter(pcap, linktype=1, sync=True)
        for f in self.frames:
            w.write(f)
        w.close()
        if jsonl:
            with open(jsonl, "w") as f:
                for e in self.expect:
                    if e is not None:
                        f.write(json.dumps(e) + "\n")


def pay(n, seed=1):
    return bytes((seed * 7 + i * 13) & 0xFF for i in range(n))


def good_frames(b):
    """Every RC opcode and then some. Returns the list of opcodes used."""
    b.arp()
    va, rk = 0x00007F12_3456_7000, 0x1234ABCD
    b.roce(0x00, 100, 0x11, payload=pay(256))                                  # SEND_FIRST
    b.roce(0x01, 101, 0x11, payload=pay(256, 2))                               # SEND_MIDDLE
    b.roce(0x02, 102, 0x11, ack=True, pad=3, payload=pay(13, 3))               # SEND_LAST
    b.roce(0x03, 103, 0x11, ack=True, pad=1, payload=pay(7, 4), imm=0xCAFEF00D)
    b.roce(0x04, 104, 0x11, ack=True, payload=b"", pad_to_60=True)             # 0-byte SEND, padded
    b.roce(0x05, 105, 0x11, ack=True, pad=2, payload=pay(2), imm=0x00000001)
    b.roce(0x06, 200, 0x22, payload=pay(256, 5), reth=(va, rk, 600))           # WRITE_FIRST
    b.roce(0x07, 201, 0x22, payload=pay(256, 6))                               # WRITE_MIDDLE
    b.roce(0x08, 202, 0x22, ack=True, payload=pay(88, 7))                      # WRITE_LAST
    b.roce(0x09, 203, 0x22, ack=True, pad=3, payload=pay(1), imm=0xFFFFFFFF)
    b.roce(0x0A, 204, 0x22, ack=True, payload=pay(64, 8), reth=(va + 64, rk, 64))
    b.roce(0x0B, 205, 0x22, ack=True, payload=pay(8), reth=(va, rk, 8), imm=0x0BADBEEF)
    b.roce(0x0C, 0xFFFFFF, 0xABCDEF, ack=True, reth=(0xFFFFFFFFFFFFFFF0, 0xFFFFFFFF, 1 << 31))
    b.roce(0x0D, 0xFFFFFF, 0x33, payload=pay(256, 9), aeth=(0x1F, 7))          # READ_RESP_FIRST
    b.roce(0x0E, 0x000000, 0x33, payload=pay(256, 10))                         # READ_RESP_MIDDLE
    b.roce(0x0F, 0x000001, 0x33, pad=2, payload=pay(30), aeth=(0x1F, 8))       # READ_RESP_LAST
    b.roce(0x10, 0x000002, 0x33, payload=pay(4), aeth=(0x00, 0xFFFFFF))        # READ_RESP_ONLY
    b.roce(0x11, 300, 0x44, aeth=(0x1F, 0x123456))                             # ACK
    b.roce(0x11, 301, 0x44, aeth=(0x60, 9))                                    # NAK PSN seq err
    b.roce(0x11, 302, 0x44, aeth=(0x2E, 10))                                   # RNR NAK
    b.roce(0x12, 303, 0x44, aeth=(0x1F, 11), atomic_ack=0xFEDCBA9876543210)
    b.roce(0x13, 400, 0x55, ack=True, atomic=(va, rk, 0x1111111111111111, 0x2222222222222222))
    b.roce(0x14, 401, 0x55, ack=True, atomic=(va + 8, rk, 0xFFFFFFFFFFFFFFFF, 0))
    b.roce(0x16, 500, 0x66, ack=True, pad=1, payload=pay(11), ieth=0x00C0FFEE)
    b.roce(0x17, 501, 0x66, ack=True, payload=pay(16), ieth=0xDEAD0001)
    # beyond RC
    b.roce(0x04, 502, 0x66, ack=True, payload=pay(32), vlan=100)               # 802.1Q tagged
    b.roce(0x04, 503, 0x66, ack=True, payload=pay(8), udp_chksum=None)         # UDP csum set
    b.roce(0x24, 600, 0x77, payload=pay(12))                                   # UC SEND_ONLY
    b.roce(0x64, 700, 0x88, payload=pay(20), deth=(0x11111111, 0x000099))      # UD SEND_ONLY
    b.add(CX4_CNP, {"opcode": 0x81, "psn": 0, "dest_qp": 0x118, "ack_req": False, "pad": 0})
    b.arp()
    return sorted({e["opcode"] for e in b.expect if e})


RC_OPCODES = [0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0C,
              0x0D, 0x0E, 0x0F, 0x10, 0x11, 0x12, 0x13, 0x14, 0x16, 0x17]


def _flip_last(raw):
    return raw[:-1] + bytes([raw[-1] ^ 0x01])


def _flip_payload(raw):
    i = len(raw) - 10
    return raw[:i] + bytes([raw[i] ^ 0x80]) + raw[i + 1:]


def _icrc_big_endian(raw):
    # The classic mistake: CRC value sent most-significant byte first.
    return raw[:-4] + raw[-4:][::-1]


def _truncate_reth(raw):
    # keep 8 of RETH's 16 bytes (Eth 14 + IP 20 + UDP 8 + BTH 12 = 54), then fix
    # lengths, IP checksum and ICRC so only the structure is wrong
    return _refix(raw[:54 + 8] + b"\0" * 4)


def _udp_to_53(raw):
    return raw[:36] + struct.pack("!H", 53) + raw[38:]


def _append_fcs(raw):
    return raw + struct.pack("<I", zlib.crc32(raw) & 0xFFFFFFFF)


def bad_cases():
    """(name, builder function -> (bad frame number), expected message substring,
    extra check_file kwargs)."""
    va, rk = 0x1000, 0x42
    cases = []

    def case(name, expect_msg, build, frame_expected=True, **kw):
        cases.append((name, expect_msg, build, frame_expected, kw))

    case("corrupted ICRC", "ICRC mismatch",
         lambda b: b.roce(0x0A, 1, 5, payload=pay(16), reth=(va, rk, 16), post=_flip_last))
    case("ICRC sent most-significant byte first", "ICRC mismatch",
         lambda b: b.roce(0x04, 1, 5, payload=pay(16), post=_icrc_big_endian))
    case("payload bit flipped", "ICRC mismatch",
         lambda b: b.roce(0x04, 1, 5, payload=pay(64), post=_flip_payload))
    case("bad IPv4 header checksum", "IPv4 header checksum",
         lambda b: b.roce(0x11, 1, 5, aeth=(0x1F, 1), ip_kw={"chksum": 0xBEEF}))
    case("bad UDP checksum", "UDP checksum",
         lambda b: b.roce(0x11, 1, 5, aeth=(0x1F, 1), udp_chksum=0x1234))
    case("pad bytes not zero", "pad bytes are not zero",
         lambda b: b.roce(0x04, 1, 5, pad=2, payload=pay(2),
                          post=lambda r: _resign(r[:-6] + b"\x01\x02" + r[-4:])))
    case("pad count > actual padding (misaligned)", "not a multiple of 4",
         lambda b: b.roce(0x04, 1, 5, payload=pay(5)))
    case("PadCnt on a MIDDLE packet", "MIDDLE packet",
         lambda b: b.roce(0x07, 1, 5, pad=1, payload=pay(255)))
    case("payload on an ACK", "carries no payload",
         lambda b: b.roce(0x11, 1, 5, aeth=(0x1F, 1), payload=pay(4)))
    case("unknown opcode 0x15", "unknown BTH opcode",
         lambda b: b.roce(0x04, 1, 5, payload=pay(4),
                          post=lambda r: _resign(r[:42] + b"\x15" + r[43:])))
    case("RETH truncated (tshark: malformed)", "needs 16 bytes of extension headers",
         lambda b: b.roce(0x0A, 1, 5, payload=b"", reth=(va, rk, 0), post=_truncate_reth))
    case("RETH truncated: tshark flags it too", "tshark: malformed",
         lambda b: b.roce(0x0A, 1, 5, payload=b"", reth=(va, rk, 0), post=_truncate_reth))
    case("UDP port 53", "UDP destination port 53",
         lambda b: b.roce(0x04, 1, 5, payload=pay(4), post=_udp_to_53))
    case("IPv6 frame", "not IPv4",
         lambda b: b.add(bytes.fromhex("02000000000b02000000000a86dd") + bytes(60), None))
    case("Ethernet FCS left on the frame", "follow the IPv4 packet",
         lambda b: b.roce(0x04, 1, 5, payload=pay(32), post=_append_fcs))
    return cases


def _resign(raw):
    """Recompute the ICRC of an IPv4 RoCE frame (no VLAN) after editing it."""
    return raw[:-4] + spec_icrc(raw)


def _refix(raw):
    """Fix IPv4/UDP lengths, the IPv4 checksum and the ICRC (no VLAN, IHL 5)."""
    from scapy.utils import checksum
    r = bytearray(raw)
    r[16:18] = struct.pack("!H", len(r) - 14)
    r[38:40] = struct.pack("!H", len(r) - 34)
    r[24:26] = b"\0\0"
    r[24:26] = struct.pack("!H", checksum(bytes(r[14:34])))
    return _resign(bytes(r))


def run_self_test(keep=None):
    try:
        check_pcap.import_scapy()
        check_pcap.find_tshark()
    except check_pcap.ToolError as e:
        print("check_pcap: error: %s" % e, file=sys.stderr)
        return 2
    tmp = None
    if keep:
        os.makedirs(keep, exist_ok=True)
        d = keep
    else:
        tmp = tempfile.TemporaryDirectory(prefix="rocenic-oracle-selftest-")
        d = tmp.name
    results = []

    def result(name, ok, detail=""):
        results.append(ok)
        print("%s  %s%s" % ("ok  " if ok else "FAIL", name,
                             (": " + detail) if detail and not ok else ""))

    # 1. The hardware vector and the byte order.
    from scapy.all import Ether
    from roce_layers import BTH
    p = Ether(CX4_CNP)
    wire = CX4_CNP[-4:]
    calc = bytes(p[BTH].compute_icrc(None))
    result("CX4 CNP: wire ICRC bytes are 82 fd 00 2a", wire == CX4_CNP_ICRC, wire.hex(" "))
    result("CX4 CNP: scapy compute_icrc returns the wire bytes", calc == wire, calc.hex(" "))
    result("CX4 CNP: scapy's icrc field = wire bytes read big-endian (0x82fd002a)",
           p[BTH].icrc == 0x82FD002A, hex(p[BTH].icrc))
    crc_value = struct.unpack("<I", wire)[0]
    result("CX4 CNP: the CRC-32 value is 0x2a00fd82, sent LSB first",
           crc_value == 0x2A00FD82 and spec_icrc(CX4_CNP) == wire, hex(crc_value))
    pth = os.path.join(d, "cx4_cnp.pcap")
    b = Builder()
    b.add(CX4_CNP, None)
    b.write(pth)
    rep = check_pcap.check_file(pth)
    result("CX4 CNP capture passes check_pcap", not rep.problems,
           "; ".join(m for _, m in rep.problems))
    # scapy's compute_icrc counts Ethernet padding as payload: the checker must strip it
    b = Builder()
    n = b.roce(0x04, 1, 2, payload=b"", pad_to_60=True)
    raw = b.frames[n - 1]
    naive = bytes(Ether(raw)[BTH].compute_icrc(None))
    result("zero-length SEND padded to 60 B: scapy alone gets the ICRC wrong "
           "(padding must be stripped first)", naive != raw[54:58] and len(raw) == 60)

    # 2. Known-good capture.
    b = Builder()
    ops = good_frames(b)
    good_pcap, good_jsonl = os.path.join(d, "good.pcap"), os.path.join(d, "good.jsonl")
    b.write(good_pcap, good_jsonl)
    crc_ok = all(spec_icrc(f, 18 if f[12:14] == b"\x81\x00" else 14) == f[-4:]
                 for f, e in zip(b.frames, b.expect) if e and len(f) > 60)
    result("independent ICRC agrees with scapy on every good frame", crc_ok)
    missing = [o for o in RC_OPCODES if o not in ops]
    result("good capture holds every RC opcode", not missing, str(missing))
    req = ",".join("0x%02x" % o for o in RC_OPCODES)
    rep = check_pcap.check_file(good_pcap, check_pcap.load_expect(good_jsonl),
                                check_pcap.parse_opcodes(req))
    result("good capture passes with --expect and --require-opcodes (%s)" % rep.summary(),
           not rep.problems, "; ".join("frame %s: %s" % fm for fm in rep.problems))
    result("ARP frames counted and skipped", rep.arp == 2, str(rep.arp))

    # Expectation-side failures on the good capture.
    exp = check_pcap.load_expect(good_jsonl)
    wrong = [(ln, dict(e)) for ln, e in exp]
    wrong[5][1]["psn"] += 1
    wrong[12][1]["reth"] = dict(wrong[12][1]["reth"], rkey=0x1)
    rep = check_pcap.check_file(good_pcap, wrong)
    msgs = [m for _, m in rep.problems]
    result("--expect: wrong psn and wrong RETH rkey are both reported",
           len(rep.problems) == 2 and any("psn" in m for m in msgs)
           and any("reth" in m for m in msgs), "; ".join(msgs))
    rep = check_pcap.check_file(good_pcap, exp[:-1])
    result("--expect: frame count mismatch is reported",
           any("expectation has" in m for _, m in rep.problems))
    rep = check_pcap.check_file(good_pcap, None, [0x15])
    result("--require-opcodes: a missing opcode is reported",
           [m for _, m in rep.problems] == ["required opcode 0x15 never appears"],
           "; ".join(m for _, m in rep.problems))

    # tshark-side failures, injected into tshark's (otherwise clean) output.
    real_run = check_pcap.run_tshark

    def injected(edit):
        def run(path, timeout=check_pcap.TSHARK_TIMEOUT):
            frames = real_run(path, timeout)
            edit(frames)
            return frames
        return run

    def set_field(num, field, values):
        def edit(frames):
            frames[num][field] = values
        return edit

    # good.pcap frame 14 is the READ REQUEST (frame 1 is ARP)
    tshark_cases = [
        ("tshark/scapy disagreement on the PSN is reported", "psn: tshark says 0x123",
         set_field(14, "infiniband.bth.psn", ["291"])),
        ("tshark/scapy disagreement on the RETH is reported", "reth: tshark says",
         set_field(14, "infiniband.reth.dmalen", ["7"])),
        ("tshark expert warning is reported", "tshark expert warning: something odd",
         lambda fr: fr[14].update({"_ws.expert.severity": ["6291456"],
                                   "_ws.expert.message": ["something odd"]})),
        ("tshark expert note is not a problem", None,
         lambda fr: fr[14].update({"_ws.expert.severity": ["4194304"],
                                   "_ws.expert.message": ["just a note"]})),
    ]
    for name, msg, edit in tshark_cases:
        check_pcap.run_tshark = injected(edit)
        try:
            rep = check_pcap.check_file(good_pcap)
        finally:
            check_pcap.run_tshark = real_run
        if msg is None:
            ok = not rep.problems
        else:
            ok = len(rep.problems) == 1 and rep.problems[0][0] == 14 and msg in rep.problems[0][1]
        result(name, ok, "; ".join("frame %s: %s" % fm for fm in rep.problems))

    # 3. Known-bad captures: a good frame, the bad one, a good frame.
    for i, (name, msg, build, _, kw) in enumerate(bad_cases()):
        b = Builder()
        b.roce(0x11, 7, 9, aeth=(0x1F, 3))
        bad = build(b)
        b.roce(0x11, 8, 9, aeth=(0x1F, 4))
        pth = os.path.join(d, "bad%02d.pcap" % i)
        b.write(pth)
        rep = check_pcap.check_file(pth)
        hit = [f for f, m in rep.problems if msg in m]
        others = sorted({f for f, _ in rep.problems} - {bad})
        result("bad: %s -> frame %d '%s'" % (name, bad, msg),
               bool(hit) and all(f == bad for f in hit) and not others,
               "; ".join("frame %s: %s" % fm for fm in rep.problems))

    if tmp:
        tmp.cleanup()
    passed = sum(results)
    failed = len(results) - passed
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1
