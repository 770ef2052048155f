#!/usr/bin/env python3
"""Runs one shell command in a shared interop guest (shared-guest.sh) through its agent
(agent.sh), the counterpart of `run-guest.sh --cmd` for a guest that is already up.

usage: guest_exec.py --port AGENT_PORT --mtu N --timeout S [--console FILE --log OUT]
                     [-q] --cmd 'STRING'
       guest_exec.py --port AGENT_PORT --ping | --kill

--port      the host end of the agent's hostfwd (shared-guest.sh's env: aport)
--mtu       eth0's MTU for this run (rxe0's active_mtu follows it)
--timeout   the command's time limit; the agent kills it then (status 124), and this
            client gives up 20 s later (kills it through the agent, status 124)
--console   the shared guest's console log: the part of it written during this run goes
--log       to OUT, followed by the agent's transcript of the run (the command's output
            and the kernel messages logged while it ran)
-q          do not copy the command's output to stdout
--ping      exit 0 when the agent answers (within 5 s), else 125
--kill      kill the command the agent is running, if any

Output: the command's output (between the READY and KLOG markers) on stdout when the run
ends. Exit status: the command's; 124 on timeout; 125 when the agent could not be reached,
the run's setup failed or the agent stopped without an end marker (a line starting
'guest_exec:' on stderr says which). SIGTERM kills the command in the guest, writes --log
and exits 143.
"""

import argparse
import base64
import os
import re
import signal
import socket
import sys
import time


def request(port, line, timeout):
    """One request line; returns the whole answer (until the agent closes)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.settimeout(timeout)
        s.sendall(line.encode() + b"\n")
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return data.decode(errors="replace")
            data += chunk


def console_size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def main():
    ap = argparse.ArgumentParser(add_help=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--mtu", type=int, default=1500)
    ap.add_argument("--timeout", type=int, default=150)
    ap.add_argument("--console")
    ap.add_argument("--log")
    ap.add_argument("-q", "--quiet", action="store_true")
    ap.add_argument("--cmd")
    ap.add_argument("--ping", action="store_true")
    ap.add_argument("--kill", action="store_true")
    a = ap.parse_args()

    if a.ping or a.kill:
        try:
            answer = request(a.port, "ping" if a.ping else "kill", 5)
        except OSError as e:
            print(f"guest_exec: the agent on port {a.port} does not answer: {e}", file=sys.stderr)
            return 125
        return 0 if "ROCENIC-AGENT-" in answer else 125
    if a.cmd is None:
        ap.error("give --cmd, --ping or --kill")

    start_size = console_size(a.console) if a.console else 0
    t0 = time.monotonic()
    transcript = []
    why = []

    def write_log():
        if not a.log:
            return
        with open(a.log, "w", errors="replace") as out:
            if a.console:
                end = console_size(a.console)
                out.write(f"=== the shared guest's console ({a.console}), bytes {start_size}..{end}, "
                          "written during this run ===\n")
                try:
                    with open(a.console, "rb") as f:
                        f.seek(start_size)
                        out.write(f.read(end - start_size).decode(errors="replace").replace("\r", ""))
                except OSError as e:
                    out.write(f"(cannot read it: {e})\n")
            out.write("\n=== the agent's transcript of this run ===\n")
            out.write("".join(transcript))
            for w in why:
                out.write(f"\n{w}\n")

    def on_term(signum, frame):
        try:
            request(a.port, "kill", 5)
        except OSError:
            pass
        why.append("guest_exec: terminated (SIGTERM); the command was killed in the guest")
        write_log()
        os._exit(143)

    signal.signal(signal.SIGTERM, on_term)

    b64 = base64.b64encode(a.cmd.encode()).decode()
    deadline = t0 + a.timeout + 20
    status = None
    try:
        s = socket.create_connection(("127.0.0.1", a.port), timeout=10)
    except OSError as e:
        why.append(f"guest_exec: the agent on port {a.port} does not answer: {e}")
        print(why[-1], file=sys.stderr)
        write_log()
        return 125
    try:
        s.sendall(f"run {a.mtu} {a.timeout} {b64}\n".encode())
        buf = b""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            s.settimeout(min(left, 5))
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                continue
            if not chunk:
                break
            buf += chunk
            transcript[:] = [buf.decode(errors="replace")]
    except TimeoutError:
        s.close()
        try:
            request(a.port, "kill", 5)
        except OSError:
            pass
        why.append(f"guest_exec: timeout after {a.timeout} s: the guest command did not finish; "
                   "killed it")
        print(why[-1], file=sys.stderr)
        write_log()
        return 124
    except OSError as e:
        why.append(f"guest_exec: the connection to the agent failed: {e}")
    s.close()

    text = "".join(transcript).replace("\r", "")
    m = re.findall(r"^ROCENIC-GUEST-EXIT status=(\d+)", text, re.M)
    if m:
        status = int(m[-1])
    elapsed = time.monotonic() - t0
    if not a.quiet:
        on = False
        held = None
        for line in text.split("\n"):
            if line.startswith("ROCENIC-GUEST-READY"):
                on = True
                continue
            if re.match(r"^ROCENIC-GUEST-(KLOG|EXIT)", line):
                # the empty line the agent prints before its marker is not output
                if on and held:
                    print(held)
                on = False
                held = None
                continue
            if on:
                if held is not None:
                    print(held)
                held = line
        sys.stdout.flush()
    setup = re.findall(r"^ROCENIC-GUEST-SETUP-FAILED (.*)$", text, re.M)
    if status is None:
        if setup:
            why.append(f"guest_exec: setup failed in the guest: {setup[0]}")
        else:
            why.append("guest_exec: the agent stopped without an end marker "
                       "(the guest died or the agent was killed)")
        print(why[-1], file=sys.stderr)
        write_log()
        return 125
    if status != 0:
        print(f"guest_exec: the guest command failed with status {status}", file=sys.stderr)
    print(f"guest_exec: done in {elapsed:.2f} s, status {status}", file=sys.stderr)
    write_log()
    return status


if __name__ == "__main__":
    sys.exit(main())
