#!/usr/bin/env python3
"""Cable two socket-NIC endpoints together through the host and record the wire.

    wire_tap.py --a LISTEN_A:SEND_A --b LISTEN_B:SEND_B --pcap wire.pcap [--seconds N]

Frames arriving on 127.0.0.1:LISTEN_A (sent by endpoint A) go to 127.0.0.1:SEND_B (where
endpoint B's socket netdev is bound) and frames arriving on LISTEN_B go to SEND_A; every
frame is written to the pcap in arrival order. With two guests this puts two rxe stacks on
one recorded wire (the harness self-test); with a guest and a rocenic NIC it is a passive
tap. Stops on SIGTERM/SIGINT or after --seconds and prints the frame counts as JSON.
Only 127.0.0.1 is used. Standard library only.
"""
import argparse
import json
import select
import signal
import socket
import struct
import sys
import time


def ports(s):
    a, b = s.split(":")
    return int(a), int(b)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--a", type=ports, required=True, metavar="LISTEN_A:SEND_A")
    ap.add_argument("--b", type=ports, required=True, metavar="LISTEN_B:SEND_B")
    ap.add_argument("--pcap", required=True)
    ap.add_argument("--seconds", type=float, default=600.0)
    a = ap.parse_args()

    socks = {}
    for name, (listen, _send) in (("a", a.a), ("b", a.b)):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        s.bind(("127.0.0.1", listen))
        socks[name] = s
    # a frame from A leaves through B's socket towards B, and the other way round
    route = {"a": (socks["b"], ("127.0.0.1", a.b[1])), "b": (socks["a"], ("127.0.0.1", a.a[1]))}
    pcap = open(a.pcap, "wb")
    pcap.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
    counts = {"a_to_b": 0, "b_to_a": 0, "max_frame": 0}
    stop = {"now": False}

    def on_signal(*_):
        stop["now"] = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    deadline = time.time() + a.seconds
    by_fd = {s.fileno(): n for n, s in socks.items()}
    while not stop["now"] and time.time() < deadline:
        try:
            ready, _, _ = select.select(list(socks.values()), [], [], 0.5)
        except InterruptedError:
            continue
        for s in ready:
            frame, _src = s.recvfrom(70000)
            name = by_fd[s.fileno()]
            out, dest = route[name]
            out.sendto(frame, dest)
            t = time.time()
            pcap.write(struct.pack("<IIII", int(t), int((t - int(t)) * 1e6), len(frame), len(frame)))
            pcap.write(frame)
            counts["a_to_b" if name == "a" else "b_to_a"] += 1
            counts["max_frame"] = max(counts["max_frame"], len(frame))
    pcap.close()
    print(json.dumps(counts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
