#!/bin/sh
# The command agent of a shared interop guest (busybox sh, in the guest): lets one booted
# guest run many interop runs, one after another. Started by shared-guest.sh as the guest's
# command (run-guest.sh --add agent.sh:/rocenic/files/agent.sh --cmd 'exec sh
# /rocenic/files/agent.sh serve PORT IDLE'); the host side is guest_exec.py.
#
#   agent.sh serve PORT IDLE   listen on TCP PORT (reached through QEMU's hostfwd) and
#                              handle each connection with `agent.sh handle`; exit (so the
#                              guest powers off) after IDLE seconds without a request
#   agent.sh handle            one request, on stdin/stdout (the connection):
#     ping                     answers ROCENIC-AGENT-PONG
#     kill                     kills the running command, if any (its process group)
#     run MTU TIMEOUT B64      kills what a previous run left running, sets eth0's MTU to
#                              MTU (rxe0 follows it), waits for rxe0's port to be ACTIVE,
#                              then runs the shell script B64 (base64) with the console
#                              protocol of guest-init.sh on the connection:
#                              ROCENIC-GUEST-READY, the script's output (stdout and stderr),
#                              ROCENIC-GUEST-KLOG and the kernel messages logged meanwhile,
#                              ROCENIC-GUEST-EXIT status=N (or ROCENIC-GUEST-SETUP-FAILED).
#                              The script is killed (status 124) after TIMEOUT seconds.
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH
ST=/tmp/rocenic-agent
mkdir -p $ST

# Kills the handler of the running (or leftover) command, the command's process group and
# its watchdog's.
kill_running() {
    if [ -f $ST/handler ] && [ "$(cat $ST/handler)" != $$ ]; then
        kill -KILL "$(cat $ST/handler)" 2>/dev/null
    fi
    rm -f $ST/handler
    for f in $ST/pgid $ST/wd; do
        if [ -f $f ]; then
            kill -KILL -"$(cat $f)" 2>/dev/null
            rm -f $f
        fi
    done
}

case $1 in
serve)
    port=$2 idle=$3
    touch $ST/last
    echo "rocenic-agent: listening on port $port, idle timeout $idle s"
    nc -ll -p "$port" -e sh "$0" handle &
    ncpid=$!
    while kill -0 $ncpid 2>/dev/null; do
        sleep 5
        # the time of the last request is the mtime of $ST/last (touch never leaves the
        # file empty for a reader, as `date > file` would: an empty operand in $((...))
        # would end this shell, and so the guest)
        last=$(stat -c %Y $ST/last 2>/dev/null)
        case $last in ''|*[!0-9]*) continue ;; esac
        if [ $(($(date +%s) - last)) -gt "$idle" ] && [ ! -f $ST/pgid ]; then
            echo "rocenic-agent: no request for $idle s; powering off"
            kill $ncpid
            break
        fi
    done
    wait $ncpid
    kill_running
    exit 0
    ;;
handle) ;;
*) echo "usage: agent.sh serve PORT IDLE | handle" >&2; exit 2 ;;
esac

read -r verb mtu tmo b64
touch $ST/last
case $verb in
ping) echo ROCENIC-AGENT-PONG; exit 0 ;;
kill) kill_running; echo ROCENIC-AGENT-KILLED; exit 0 ;;
run) ;;
*) echo "ROCENIC-GUEST-SETUP-FAILED unknown request '$verb'"; exit 0 ;;
esac
kill_running
echo $$ > $ST/handler

setup_failed() { echo; echo "ROCENIC-GUEST-SETUP-FAILED $*"; exit 0; }
P=/sys/class/infiniband/rxe0/ports/1
if [ "$(cat /sys/class/net/eth0/mtu)" != "$mtu" ]; then
    ip link set dev eth0 mtu "$mtu" || setup_failed "MTU $mtu on eth0"
fi
n=0
until grep -q ACTIVE $P/state 2>/dev/null; do
    n=$((n + 1))
    [ $n -lt 100 ] || setup_failed "rxe0 port not active after the MTU change"
    sleep 0.1
done
echo "$b64" | base64 -d > $ST/cmd.sh || setup_failed "the command is not base64"
echo "rocenic-agent: eth0 mtu $(cat /sys/class/net/eth0/mtu), rxe0 $(cat $P/state)"

cd /root 2>/dev/null || cd /
t_ready=$(cut -d' ' -f1 /proc/uptime)
echo
echo "ROCENIC-GUEST-READY uptime=$t_ready"
# Its own session and process group, so that kill_running reaches everything it started.
rm -f $ST/timedout
setsid sh $ST/cmd.sh < /dev/null 2>&1 &
pid=$!
echo $pid > $ST/pgid
setsid sh -c "sleep $tmo; echo timeout > $ST/timedout; kill -KILL -$pid" < /dev/null > /dev/null 2>&1 &
echo $! > $ST/wd
wait $pid
status=$?
kill -KILL -"$(cat $ST/wd)" 2>/dev/null
rm -f $ST/wd
# whatever the script left running in its group goes too
kill -KILL -$pid 2>/dev/null
rm -f $ST/pgid $ST/handler
if [ -f $ST/timedout ]; then
    echo "rocenic-agent: the command did not finish in $tmo s; killed"
    status=124
fi
t_end=$(cut -d' ' -f1 /proc/uptime)
echo
echo "ROCENIC-GUEST-KLOG kernel messages while the command ran:"
dmesg | awk -v t="$t_ready" '{ s = $0; sub(/^\[ */, "", s); if (s + 0 >= t + 0) print }'
echo "ROCENIC-GUEST-EXIT status=$status uptime=$t_end"
touch $ST/last
