#!/usr/bin/env bash
# A shared interop guest: one booted guest (run-guest.sh) that runs many interop runs one
# after another through its command agent (agent.sh; guest_exec.py is the host side), so
# that a suite boots once instead of once per run. pingpong.sh and perftest.sh use it with
# `--shared-guest DIR`; tests/tests/interop.rs starts one per test binary.
#
#   tests/interop/shared-guest.sh start DIR [--owner PID] [--idle S] [--timeout S] [--boot-timeout S]
#   tests/interop/shared-guest.sh check DIR
#   tests/interop/shared-guest.sh stop DIR [--keep]
#
# start: picks free ports, boots the guest in the background (its own process group) and
#   returns once its agent answers (exit 0), or fails (exit 1, the guest stopped, DIR kept).
#   DIR/env then holds the ports, for `source` (qport: QEMU's wire end, uport: ours;
#   hport_in: host port forwarded to the guest's 18515, for --rxe-server runs; hport_out:
#   the host port the guest's 10.0.2.100:18515 reaches, for --rxe-client runs; aport: the
#   agent's; console: the console log; pgid: the guest's process group).
#   --owner PID: stop the guest (and remove DIR unless DIR/keep exists) as soon as PID is
#   gone (the test binary); a guest that ends by itself keeps DIR. --idle S (default 300): the agent powers the guest off after S
#   seconds without a request. --timeout S (default 3600): hard limit of the guest's life.
#   --boot-timeout S (default 180): how long to wait for the agent.
# check: exit 0 when the guest's agent answers, else 1.
# stop: ends the guest (its process group) and removes DIR, or keeps it with --keep.
#
# The guest boots with eth0 at MTU 1500; each run sets the MTU it needs (rxe0 follows it).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

usage() { sed -n '2,26p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2; }
[ $# -ge 2 ] || usage
action=$1 dir=$2
shift 2
owner= idle=300 hard=3600 boot=180 keep=0
while [ $# -gt 0 ]; do
    case $1 in
        --owner) owner=$2; shift ;;
        --idle) idle=$2; shift ;;
        --timeout) hard=$2; shift ;;
        --boot-timeout) boot=$2; shift ;;
        --keep) keep=1 ;;
        *) echo "shared-guest.sh: unknown option $1" >&2; usage ;;
    esac
    shift
done

stop() {
    local pgid
    if [ -f "$dir/env" ]; then
        pgid=$(sed -n 's/^pgid=//p' "$dir/env")
        [ -n "$pgid" ] && kill -TERM -- "-$pgid" 2>/dev/null || true
    fi
    if [ "$1" = 1 ]; then touch "$dir/keep"; else rm -rf "$dir"; fi
}

case $action in
check)
    [ -f "$dir/env" ] || exit 1
    # shellcheck disable=SC1091
    source "$dir/env"
    kill -0 "$pgid" 2>/dev/null || exit 1
    python3 "$here/guest_exec.py" --port "$aport" --ping 2>/dev/null
    exit $?
    ;;
stop)
    stop "$keep"
    exit 0
    ;;
start) ;;
*) usage ;;
esac

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
read -r qport uport hport_in hport_out aport < <(python3 - <<'PY'
import socket
socks = []
for kind in (socket.SOCK_DGRAM, socket.SOCK_DGRAM, socket.SOCK_STREAM, socket.SOCK_STREAM,
             socket.SOCK_STREAM):
    s = socket.socket(socket.AF_INET, kind)
    s.bind(("127.0.0.1", 0))
    socks.append(s)
ports = [s.getsockname()[1] for s in socks]
for s in socks:
    s.close()
print(*ports, flush=True)
PY
)
console=$dir/console.log
t0=$(date +%s.%N)
# setsid: the guest gets its own process group (pgid = its pid), which stop ends as a whole.
setsid "$here/run-guest.sh" --wire "$qport:$uport" --mtu 1500 --log "$console" --timeout "$hard" \
    --hostfwd "$aport:7777" --hostfwd "$hport_in:18515" --guestfwd "18515:$hport_out" \
    --add "$here/agent.sh:/rocenic/files/agent.sh" \
    --cmd "exec sh /rocenic/files/agent.sh serve 7777 $idle" \
    < /dev/null > "$dir/run-guest.out" 2>&1 &
pgid=$!
cat > "$dir/env" <<EOF
qport=$qport
uport=$uport
hport_in=$hport_in
hport_out=$hport_out
aport=$aport
console=$console
pgid=$pgid
EOF
if [ -n "$owner" ]; then
    # the watchdog: its own session, so that stopping the guest does not end it first
    setsid bash -c '
        while kill -0 "$1" 2>/dev/null && kill -0 "$2" 2>/dev/null; do sleep 0.5; done
        # a guest that ended by itself keeps DIR (its console log says why)
        kill -0 "$1" 2>/dev/null && exit 0
        kill -TERM -- "-$2" 2>/dev/null
        # DIR may hold a newer guest by now (stop, then start again)
        if grep -qx "pgid=$2" "$3/env" 2>/dev/null && [ ! -f "$3/keep" ]; then rm -rf "$3"; fi
        ' watchdog "$owner" "$pgid" "$dir" \
        < /dev/null > /dev/null 2>&1 &
fi
while ! python3 "$here/guest_exec.py" --port "$aport" --ping 2>/dev/null; do
    if ! kill -0 "$pgid" 2>/dev/null; then
        echo "shared-guest.sh: the guest stopped while booting (console log: $console):" >&2
        cat "$dir/run-guest.out" >&2
        stop 1
        exit 1
    fi
    if [ "$(echo "$t0 $(date +%s.%N) $boot" | awk '{print ($2 - $1 > $3)}')" = 1 ]; then
        echo "shared-guest.sh: the agent did not answer within $boot s (console log: $console)" >&2
        stop 1
        exit 1
    fi
    sleep 0.5
done
secs=$(echo "$t0 $(date +%s.%N)" | awk '{printf "%.1f", $2 - $1}')
echo "shared-guest.sh: guest up in $secs s in $dir (wire guest $qport <-> rocenic $uport," \
     "hostfwd $hport_in -> 18515, guestfwd 18515 -> $hport_out, agent $aport)"
