#!/usr/bin/env bash
# Self-test of the interop guest harness, before any rocenic NIC is in the picture.
#
# usage: tests/interop/selftest.sh [--guest DIR] [--out DIR]
#
#   1. builds the guest (cached: build-guest.sh),
#   2. boots it with a trivial command and checks the exit status comes back (boot time),
#   3. soft-RoCE against itself inside the guest: ibv_devices lists rxe0, ibv_rc_pingpong
#      and ib_write_bw (server in the background, client to the guest's own IP, GID index 1)
#      complete,
#   4. the wire: a host process (wire_peer.py) on the other end of the guest's socket NIC
#      answers ARP and ping, records both directions to a pcap and checks that each UDP
#      datagram is exactly one Ethernet frame without FCS, with frames up to 9014 bytes both
#      ways; a static ARP entry is honoured; the control NIC's hostfwd and guestfwd carry
#      TCP both ways,
#   5. two guests cabled through the host (wire_tap.py): ibv_rc_pingpong and ib_write_bw
#      between two rxe stacks across the recorded UDP wire, the handshake through hostfwd
#      and guestfwd as in an interop run; the pcap passes tests/oracles/check_pcap.py,
#   6. a run that outlives --timeout ends with status 124.
# Console logs, the pcap and the summaries stay in --out (default target/interop-selftest).
# Ends with the line 'N passed, N failed'; exit status 0 iff all passed.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
GUEST=${ROCENIC_GUEST_DIR:-$REPO/target/interop-guest}
OUT=$REPO/target/interop-selftest
while [[ $# -gt 0 ]]; do
    case $1 in
        --guest) GUEST=$2; shift 2 ;;
        --out) OUT=$2; shift 2 ;;
        -h|--help) awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "$0"; exit 0 ;;
        *) echo "selftest: unknown argument $1" >&2; exit 2 ;;
    esac
done
PY=/usr/bin/python3
RUN=(bash "$HERE/run-guest.sh" --guest "$GUEST")
# parts 2, 3 and 6 have no peer on the wire: free ports, so parallel runs do not collide
NOPEER=(--wire auto)
rm -rf "$OUT"
mkdir -p "$OUT"

passed=0
failed=0
skipped=0
ok() { echo "PASS  $*"; passed=$((passed + 1)); }
bad() { echo "FAIL  $*"; failed=$((failed + 1)); }
check() {  # check NAME COMMAND...
    local name=$1; shift
    if "$@"; then ok "$name"; else bad "$name"; fi
}
now() { date +%s%N; }
secs() { local ms=$(( ($(now) - $1) / 1000000 )); printf '%d.%02d' $((ms / 1000)) $((ms % 1000 / 10)); }
free_port() {
    "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
free_udp_port() {
    "$PY" -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

T_ALL=$(now)
echo "== 1. build the guest (cached)"
t=$(now)
if bash "$HERE/build-guest.sh" "$GUEST"; then ok "build-guest ($(secs "$t") s)"; else
    bad "build-guest"; echo "0 passed, 1 failed"; exit 1; fi

echo "== 2. boot, run 'exit 7', power off"
t=$(now)
"${RUN[@]}" "${NOPEER[@]}" --timeout 120 --log "$OUT/boot.log" --cmd 'echo hello from the guest; exit 7' \
    > "$OUT/boot.out" 2> "$OUT/boot.err"
rc=$?
T_BOOT=$(secs "$t")
READY=$(tr -d '\r' < "$OUT/boot.log" | sed -n 's/^ROCENIC-GUEST-READY uptime=//p')
check "exit status of the guest command comes back (got $rc)" test "$rc" -eq 7
check "command output on stdout" grep -qx 'hello from the guest' "$OUT/boot.out"
echo "      boot + command + power-off: $T_BOOT s wall; guest ready at ${READY:-?} s of guest uptime"

echo "== 3. soft-RoCE against itself in the guest (rxe0 on eth0, MTU 4200)"
cat > "$OUT/rxe-loopback.sh" <<'EOF'
IP=10.0.0.2
up() { cut -d' ' -f1 /proc/uptime; }
echo "== ibv_devices"; ibv_devices
echo "== ibv_devinfo"; ibv_devinfo -d rxe0 | grep -E 'state|active_mtu|link_layer'
echo "== gids"; cat /sys/class/infiniband/rxe0/ports/1/gids/0 /sys/class/infiniband/rxe0/ports/1/gids/1
echo "== ibv_rc_pingpong"
t0=$(up)
ibv_rc_pingpong -d rxe0 -g 1 -n 100 > /tmp/pp-server.log 2>&1 &
srv=$!
sleep 0.5
ibv_rc_pingpong -d rxe0 -g 1 -n 100 "$IP" > /tmp/pp-client.log 2>&1
c=$?
wait $srv
s=$?
sed 's/^/client: /' /tmp/pp-client.log; sed 's/^/server: /' /tmp/pp-server.log
echo "pingpong client=$c server=$s seconds=$t0..$(up)"
echo "== ib_write_bw"
t0=$(up)
ib_write_bw -d rxe0 -x 1 -n 200 > /tmp/bw-server.log 2>&1 &
srv=$!
sleep 0.5
ib_write_bw -d rxe0 -x 1 -n 200 "$IP" > /tmp/bw-client.log 2>&1
c=$?
wait $srv
s=$?
sed 's/^/client: /' /tmp/bw-client.log; sed 's/^/server: /' /tmp/bw-server.log
echo "write_bw client=$c server=$s seconds=$t0..$(up)"
[ $c = 0 ] && [ $s = 0 ]
EOF
t=$(now)
"${RUN[@]}" "${NOPEER[@]}" --timeout 300 --mtu 4200 --log "$OUT/rxe-loopback.log" --script "$OUT/rxe-loopback.sh" \
    > "$OUT/rxe-loopback.out" 2> "$OUT/rxe-loopback.err"
rc=$?
T_RXE=$(secs "$t")
o=$OUT/rxe-loopback.out
check "rxe loopback run exits 0 (got $rc)" test "$rc" -eq 0
check "ibv_devices lists rxe0" grep -qE '^ +rxe0 ' "$o"
check "rxe0 port ACTIVE, active_mtu 4096 at MTU 4200" \
    sh -c "grep -q 'PORT_ACTIVE' '$o' && grep -q 'active_mtu:.*4096' '$o'"
check "GID index 1 is ::ffff:10.0.0.2" grep -qx '0000:0000:0000:0000:0000:ffff:0a00:0002' "$o"
check "ibv_rc_pingpong client and server complete" \
    sh -c "grep -q 'pingpong client=0 server=0' '$o' && [ \$(grep -c '100 iters in' '$o') -eq 2 ]"
check "ib_write_bw client and server complete" \
    sh -c "grep -q 'write_bw client=0 server=0' '$o' && grep -qE '^client: +65536 +200 ' '$o'"
echo "      rxe loopback run: $T_RXE s wall ($(grep -E '^(pingpong|write_bw) ' "$o" | tr '\n' ';'))"

echo "== 4. the wire: frames on the socket NIC, both ways; TCP through the control NIC"
WL=$(free_udp_port); WP=$(free_udp_port)
while [[ $WP == "$WL" ]]; do WP=$(free_udp_port); done
HP_IN=$(free_port); HP_OUT=$(free_port)
"$PY" "$HERE/wire_peer.py" --listen "$WP" --send "$WL" --ip 10.0.0.1 --mac 02:00:00:00:00:01 \
    --pcap "$OUT/wire.pcap" --summary "$OUT/wire.json" --seconds 280 &
PEER_PID=$!
# host side of the control-NIC check: a listener for the guest's connection (guestfwd) and
# a client that retries until the guest's listener answers (hostfwd)
"$PY" - "$HP_OUT" "$HP_IN" "$OUT/tcp.json" <<'EOF' &
import json, socket, sys, time
listen_port, fwd_port, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
res = {"from_guest": None, "guest_answer": None, "attempts": 0}
ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", listen_port)); ls.listen(1); ls.settimeout(0.2)
deadline = time.time() + 240
while time.time() < deadline and (res["from_guest"] is None or res["guest_answer"] is None):
    if res["from_guest"] is None:
        try:
            c, _ = ls.accept(); c.settimeout(10)
            res["from_guest"] = c.recv(100).decode().strip(); c.close()
        except OSError:
            pass
    if res["guest_answer"] is None:
        res["attempts"] += 1
        try:
            c = socket.create_connection(("127.0.0.1", fwd_port), timeout=5)
            c.sendall(b"host-to-guest\n"); c.shutdown(socket.SHUT_WR)
            data = c.recv(100); c.close()
            if data:
                res["guest_answer"] = data.decode().strip()
        except OSError:
            pass
        time.sleep(0.3)
json.dump(res, open(out, "w"))
EOF
TCP_PID=$!
cat > "$OUT/wire.sh" <<'EOF'
echo guest-ack | nc -l -p 18515 > /tmp/from-host.txt &
for s in 56 1472 4000 4148 8972; do
    ping -c 2 -W 5 -s $s 10.0.0.1 > /tmp/ping.txt 2>&1
    echo "ping -s $s: $(grep transmitted /tmp/ping.txt)"
done
ping -c 1 -W 1 10.0.0.3 > /dev/null 2>&1   # static ARP entry: no ARP request expected
echo guest-to-host | nc 10.0.2.100 18516; echo "nc to host: $?"
n=0; while [ ! -s /tmp/from-host.txt ] && [ $n -lt 300 ]; do sleep 0.2; n=$((n + 1)); done
echo "from host: $(cat /tmp/from-host.txt)"
arp -an
EOF
t=$(now)
"${RUN[@]}" --timeout 240 --mtu 9000 --wire "$WL:$WP" --arp 10.0.0.3@02:00:00:00:00:03 \
    --hostfwd "$HP_IN:18515" --guestfwd "18516:$HP_OUT" \
    --log "$OUT/wire.log" --script "$OUT/wire.sh" > "$OUT/wire.out" 2> "$OUT/wire.err"
rc=$?
T_WIRE=$(secs "$t")
kill -TERM "$PEER_PID" 2>/dev/null; wait "$PEER_PID"
wait "$TCP_PID"
check "wire run exits 0 (got $rc)" test "$rc" -eq 0
check "ping answered by the host peer at 56, 1472, 4000, 4148, 8972 bytes" \
    sh -c "[ \$(grep -c '2 packets transmitted, 2 packets received' '$OUT/wire.out') -eq 5 ]"
j() { "$PY" -c "import json, sys; d = json.load(open('$OUT/wire.json')); sys.exit(0 if ($1) else 1)"; }
check "every datagram is one Ethernet frame without FCS (no framing errors)" \
    j 'd["rx_frames"] > 0 and not d["framing_errors"]'
check "frames of 9014 bytes both ways" j 'd["rx_max_frame"] == 9014 and d["tx_max_frame"] == 9014'
check "frames come from the guest's --wire LOCAL port" j "d['rx_sources'] == ['127.0.0.1:$WL']"
check "ARP learned by request/reply; static entry used without ARP" \
    j 'd["arp_answered"] >= 1 and "10.0.0.3" not in d["arp_requests_for"] and d["rx_dst_macs"].get("02:00:00:00:00:03", 0) >= 1'
check "no IPv6 chatter on the wire (rocenic.ipv6=0)" j '"ipv6" not in d["rx_by_type"]'
check "TCP host->guest through --hostfwd, guest->host through --guestfwd" \
    "$PY" -c "import json, sys; d = json.load(open('$OUT/tcp.json')); sys.exit(0 if d['from_guest'] == 'guest-to-host' and d['guest_answer'] == 'guest-ack' else 1)"
check "guest received the host's message" grep -q 'from host: host-to-guest' "$OUT/wire.out"
echo "      wire run: $T_WIRE s wall; pcap $OUT/wire.pcap"

echo "== 5. two guests cabled through the host (wire_tap.py): rxe <-> rxe over the socket wire"
# The shape of an interop run with a guest on each side: the server's TCP handshake port is
# reached through hostfwd (guest A) and guestfwd (guest B connects to 10.0.2.100), the RDMA
# traffic crosses the recorded UDP wire.
PA=$(free_udp_port); PB=$(free_udp_port); LA=$(free_udp_port); LB=$(free_udp_port); HS=$(free_port)
"$PY" "$HERE/wire_tap.py" --a "$PA:$LA" --b "$PB:$LB" --pcap "$OUT/pair.pcap" --seconds 280 \
    > "$OUT/pair-tap.json" &
TAP_PID=$!
cat > "$OUT/pair-a.sh" <<'EOF'
ibv_rc_pingpong -d rxe0 -g 1 -m 4096 -s 8192 -n 50; echo "A: pingpong rc=$?"
ib_write_bw -d rxe0 -x 1 -n 100 -s 65536; echo "A: write_bw rc=$?"
EOF
cat > "$OUT/pair-b.sh" <<'EOF'
# the server in guest A may not listen yet: retry (a refused handshake fails fast)
retry() { n=0; until "$@"; do n=$((n + 1)); [ $n -ge 60 ] && return 1; sleep 1; done; }
retry ibv_rc_pingpong -d rxe0 -g 1 -m 4096 -s 8192 -n 50 10.0.2.100; echo "B: pingpong rc=$?"
sleep 1
retry ib_write_bw -d rxe0 -x 1 -n 100 -s 65536 10.0.2.100; echo "B: write_bw rc=$?"
EOF
udp_rcvbuf_errors() { awk '/^Udp:/ {n++} /^Udp:/ && n == 2 {print $6}' /proc/net/snmp; }
DROPS0=$(udp_rcvbuf_errors)
t=$(now)
"${RUN[@]}" --timeout 240 --mtu 4200 --ip 10.0.0.2/24 --mac 52:54:00:00:00:02 \
    --arp 10.0.0.3@52:54:00:00:00:03 --wire "$LA:$PA" --hostfwd "$HS:18515" \
    --log "$OUT/pair-a.log" --script "$OUT/pair-a.sh" > "$OUT/pair-a.out" 2> "$OUT/pair-a.err" &
A_PID=$!
"${RUN[@]}" --timeout 240 --mtu 4200 --ip 10.0.0.3/24 --mac 52:54:00:00:00:03 \
    --arp 10.0.0.2@52:54:00:00:00:02 --wire "$LB:$PB" --guestfwd "18515:$HS" \
    --log "$OUT/pair-b.log" --script "$OUT/pair-b.sh" > "$OUT/pair-b.out" 2> "$OUT/pair-b.err"
rcb=$?
wait "$A_PID"
rca=$?
T_PAIR=$(secs "$t")
kill -TERM "$TAP_PID" 2>/dev/null; wait "$TAP_PID"
check "both guests exit 0 (A $rca, B $rcb)" test "$rca" -eq 0 -a "$rcb" -eq 0
check "ibv_rc_pingpong across the wire, PMTU 4096, 8 KiB messages" \
    sh -c "grep -q 'A: pingpong rc=0' '$OUT/pair-a.out' && grep -q 'B: pingpong rc=0' '$OUT/pair-b.out' && grep -q '50 iters in' '$OUT/pair-b.out'"
check "ib_write_bw across the wire" \
    sh -c "grep -q 'A: write_bw rc=0' '$OUT/pair-a.out' && grep -qE '^ +65536 +100 ' '$OUT/pair-b.out'"
check "largest frame 4170 bytes (RDMA WRITE FIRST: 14+20+8+12+16+4096+4)" \
    grep -q '"max_frame": 4170' "$OUT/pair-tap.json"
if /usr/bin/python3 -c 'import scapy.contrib.roce' 2>/dev/null && command -v tshark >/dev/null 2>&1; then
    check "rxe's frames pass tests/oracles/check_pcap.py (ICRC, structure, tshark decode)" \
        sh -c "/usr/bin/python3 '$REPO/tests/oracles/check_pcap.py' '$OUT/pair.pcap' > '$OUT/pair-check.txt' 2>&1"
else
    echo "SKIP  check_pcap.py on rxe's frames (no scapy/tshark: scripts/install-deps.sh oracles)"
    skipped=$((skipped + 1))
fi
echo "      two-guest run: $T_PAIR s wall; $(cat "$OUT/pair-tap.json"); pcap $OUT/pair.pcap"
echo "      host UDP receive-buffer drops during the run (RcvbufErrors): $(( $(udp_rcvbuf_errors) - DROPS0 ))"
echo "      rxe NAKs (PSN sequence error) on the wire: $(if command -v tshark >/dev/null 2>&1; then tshark -r "$OUT/pair.pcap" -Y 'infiniband.aeth.syndrome == 0x60' 2>/dev/null | wc -l; else echo 'n/a (no tshark)'; fi)"

echo "== 6. timeout"
t=$(now)
"${RUN[@]}" "${NOPEER[@]}" --timeout 8 --log "$OUT/timeout.log" --cmd 'sleep 600' > /dev/null 2> "$OUT/timeout.err"
rc=$?
check "a run past --timeout ends with 124 and says so (got $rc in $(secs "$t") s)" \
    sh -c "[ $rc -eq 124 ] && grep -q 'timeout after 8 s' '$OUT/timeout.err'"

echo "== timings: boot run $T_BOOT s, rxe loopback run $T_RXE s, wire run $T_WIRE s, two-guest run $T_PAIR s, whole self-test $(secs "$T_ALL") s"
if [[ $skipped -gt 0 ]]; then echo "$passed passed, $failed failed, $skipped skipped"
else echo "$passed passed, $failed failed"; fi
[[ $failed -eq 0 ]]
