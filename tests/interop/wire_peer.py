#!/usr/bin/env python3
"""A minimal host on the other end of the guest's socket NIC, for the harness self-test.

It binds 127.0.0.1:PEER (the port QEMU sends the guest's frames to) and sends its own frames
to 127.0.0.1:LOCAL (the port QEMU's socket netdev binds), one Ethernet frame per UDP
datagram. It answers ARP requests and ICMP echo requests for its IPv4 address, records every
frame in both directions to a pcap file, and checks the framing of what it receives: each
datagram must be exactly one Ethernet frame without FCS, i.e. for IPv4 its length is
14 + the IP total length, and for ARP 14 + 28 (no padding, no trailing CRC).

    wire_peer.py --listen PEER --send LOCAL --ip 10.0.0.1 --mac 02:00:00:00:00:01 \
                 --pcap wire.pcap --summary summary.json [--seconds 120]

It stops on SIGTERM/SIGINT or after --seconds and writes the summary (JSON): frame counts
per direction and type, the largest frame each way, ICMP echo sizes answered, and framing
errors. Only 127.0.0.1 is ever used. Standard library only.
"""
import argparse
import json
import signal
import socket
import struct
import sys
import time

ETH_ARP = 0x0806
ETH_IP4 = 0x0800
ETH_IP6 = 0x86DD


def mac_bytes(s):
    b = bytes(int(x, 16) for x in s.split(":"))
    if len(b) != 6:
        raise ValueError(f"bad MAC {s}")
    return b


def mac_str(b):
    return ":".join(f"{x:02x}" for x in b)


def ip_checksum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


class Pcap:
    def __init__(self, path):
        self.f = open(path, "wb")
        # magic, v2.4, tz, sigfigs, snaplen, linktype 1 (Ethernet)
        self.f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))

    def write(self, frame):
        t = time.time()
        sec = int(t)
        self.f.write(struct.pack("<IIII", sec, int((t - sec) * 1e6), len(frame), len(frame)))
        self.f.write(frame)
        self.f.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--listen", type=int, required=True, help="UDP port QEMU sends to (PEER)")
    ap.add_argument("--send", type=int, required=True, help="UDP port QEMU binds (LOCAL)")
    ap.add_argument("--ip", default="10.0.0.1")
    ap.add_argument("--mac", default="02:00:00:00:00:01")
    ap.add_argument("--pcap", required=True)
    ap.add_argument("--summary", required=True)
    ap.add_argument("--seconds", type=float, default=300.0)
    a = ap.parse_args()

    my_mac = mac_bytes(a.mac)
    my_ip = socket.inet_aton(a.ip)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    sock.bind(("127.0.0.1", a.listen))
    sock.settimeout(0.5)
    dest = ("127.0.0.1", a.send)
    pcap = Pcap(a.pcap)

    stats = {
        "rx_frames": 0, "tx_frames": 0, "rx_by_type": {}, "tx_by_type": {},
        "rx_max_frame": 0, "tx_max_frame": 0, "rx_sources": [],
        "echo_sizes_answered": [], "arp_answered": 0, "framing_errors": [],
        "rx_dst_macs": {}, "arp_requests_for": [],
    }
    stop = {"now": False}

    def on_signal(*_):
        stop["now"] = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    def kind(frame):
        et = struct.unpack("!H", frame[12:14])[0]
        if et == ETH_ARP:
            return "arp"
        if et == ETH_IP4 and len(frame) >= 34:
            proto = frame[23]
            if proto == 17 and len(frame) >= 38 and struct.unpack("!H", frame[36:38])[0] == 4791:
                return "roce_v2"
            return {1: "icmp", 6: "tcp", 17: "udp"}.get(proto, f"ipv4_proto_{proto}")
        if et == ETH_IP6:
            return "ipv6"
        return f"ethertype_{et:04x}"

    def send(frame):
        sock.sendto(frame, dest)
        pcap.write(frame)
        k = kind(frame)
        stats["tx_frames"] += 1
        stats["tx_by_type"][k] = stats["tx_by_type"].get(k, 0) + 1
        stats["tx_max_frame"] = max(stats["tx_max_frame"], len(frame))

    def framing_error(msg):
        if len(stats["framing_errors"]) < 20:
            stats["framing_errors"].append(msg)

    deadline = time.time() + a.seconds
    while not stop["now"] and time.time() < deadline:
        try:
            frame, src = sock.recvfrom(70000)
        except socket.timeout:
            continue
        except InterruptedError:
            continue
        pcap.write(frame)
        stats["rx_frames"] += 1
        if f"{src[0]}:{src[1]}" not in stats["rx_sources"]:
            stats["rx_sources"].append(f"{src[0]}:{src[1]}")
        stats["rx_max_frame"] = max(stats["rx_max_frame"], len(frame))
        if len(frame) < 14:
            framing_error(f"runt datagram of {len(frame)} bytes")
            continue
        k = kind(frame)
        stats["rx_by_type"][k] = stats["rx_by_type"].get(k, 0) + 1
        dst, et = frame[0:6], struct.unpack("!H", frame[12:14])[0]
        stats["rx_dst_macs"][mac_str(dst)] = stats["rx_dst_macs"].get(mac_str(dst), 0) + 1
        if et == ETH_IP4:
            total = struct.unpack("!H", frame[16:18])[0]
            if len(frame) != 14 + total:
                framing_error(f"IPv4 frame of {len(frame)} bytes holds an IP packet of {total}")
        elif et == ETH_ARP:
            if len(frame) != 42:
                framing_error(f"ARP frame of {len(frame)} bytes (expected 42: no padding, no FCS)")
        elif et == ETH_IP6 and len(frame) >= 54:
            plen = struct.unpack("!H", frame[18:20])[0]
            if len(frame) != 54 + plen:
                framing_error(f"IPv6 frame of {len(frame)} bytes holds a payload of {plen}")

        if et == ETH_ARP and len(frame) >= 42:
            op = struct.unpack("!H", frame[20:22])[0]
            sha, spa, tpa = frame[22:28], frame[28:32], frame[38:42]
            if op == 1 and socket.inet_ntoa(tpa) not in stats["arp_requests_for"]:
                stats["arp_requests_for"].append(socket.inet_ntoa(tpa))
            if op == 1 and tpa == my_ip:
                reply = (frame[6:12] + my_mac + struct.pack("!H", ETH_ARP)
                         + struct.pack("!HHBBH", 1, ETH_IP4, 6, 4, 2)
                         + my_mac + my_ip + sha + spa)
                send(reply)
                stats["arp_answered"] += 1
        elif (et == ETH_IP4 and dst == my_mac and frame[23] == 1
              and struct.unpack("!H", frame[20:22])[0] & 0x3FFF == 0):  # ICMP, not a fragment
            ihl = (frame[14] & 0x0F) * 4
            ip = frame[14:14 + struct.unpack("!H", frame[16:18])[0]]
            if ip[16:20] != my_ip:
                continue
            icmp = ip[ihl:]
            if icmp[0] != 8:  # echo request only
                continue
            rep_icmp = b"\x00\x00\x00\x00" + icmp[4:]
            rep_icmp = rep_icmp[:2] + struct.pack("!H", ip_checksum(rep_icmp)) + rep_icmp[4:]
            hdr = bytearray(ip[:ihl])
            hdr[8] = 64                       # TTL
            hdr[12:16], hdr[16:20] = ip[16:20], ip[12:16]
            hdr[10:12] = b"\0\0"
            hdr[10:12] = struct.pack("!H", ip_checksum(bytes(hdr)))
            send(frame[6:12] + my_mac + struct.pack("!H", ETH_IP4) + bytes(hdr) + rep_icmp)
            stats["echo_sizes_answered"].append(len(icmp) - 8)

    with open(a.summary, "w") as f:
        json.dump(stats, f, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
