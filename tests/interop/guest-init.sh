#!/bin/sh
# /init of the rocenic interop guest (busybox sh), installed by build-guest.sh.
#
# Kernel command line parameters (all optional):
#   rocenic.ip=A.B.C.D/N      IPv4 address of the wire NIC eth0        (default 10.0.0.2/24)
#   rocenic.mtu=N             MTU of eth0                               (default: kernel's, 1500)
#   rocenic.mac=MAC           MAC of the wire NIC: the NIC with it becomes eth0
#                             (default: the first virtio NIC is the wire)
#   rocenic.arp=IP@MAC[,...]  static ARP entries on eth0
#   rocenic.ctl=A.B.C.D/N     address of the control NIC eth1, the QEMU user-net one
#                             (default 10.0.2.15/24, the address QEMU's hostfwd targets)
#   rocenic.rxe=0|1           create rxe0 on eth0                       (default 1)
#   rocenic.ipv6=0|1          IPv6 on eth0 (default 0: a quiet wire; rxe GIDs unchanged)
#   rocenic.modules=a,b,...   modules to load at boot (default: /etc/rocenic/boot-modules)
#   rocenic.cmd=BASE64        the shell script to run; /rocenic/cmd.sh (e.g. from an appended
#                             initramfs) wins over it. With neither, an interactive shell.
#   rocenic.klog=1            kernel messages go to the console while the command runs
#                             (default: held back, then printed after the KLOG marker)
#   rocenic.debug=1           trace this script (set -x)
#
# Console protocol (serial, ttyS0):
#   ROCENIC-GUEST-READY uptime=<s>       setup done, the command starts
#   ROCENIC-GUEST-KLOG ...               the command ended; kernel messages logged since READY
#   ROCENIC-GUEST-EXIT status=<n>        the command finished with status n
#   ROCENIC-GUEST-SETUP-FAILED <why>     setup failed; the command did not run
# then the guest powers off (QEMU exits with -no-reboot).
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
HOME=/root
export PATH HOME

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run

off() {
    sync
    poweroff -f
    echo o > /proc/sysrq-trigger
    sleep 30
}
fail() {
    echo
    echo "ROCENIC-GUEST-SETUP-FAILED $*"
    off
}
say() { echo "rocenic-guest: $*"; }

IP=10.0.0.2/24
MTU=
MAC=
ARP=
CTL=10.0.2.15/24
RXE=1
IPV6=0
MODS=
CMD=
KLOG=0
for w in $(cat /proc/cmdline); do
    case $w in
        rocenic.ip=*) IP=${w#*=} ;;
        rocenic.mtu=*) MTU=${w#*=} ;;
        rocenic.mac=*) MAC=${w#*=} ;;
        rocenic.arp=*) ARP=${w#*=} ;;
        rocenic.ctl=*) CTL=${w#*=} ;;
        rocenic.rxe=*) RXE=${w#*=} ;;
        rocenic.ipv6=*) IPV6=${w#*=} ;;
        rocenic.modules=*) MODS=${w#*=} ;;
        rocenic.cmd=*) CMD=${w#*=} ;;
        rocenic.klog=*) KLOG=${w#*=} ;;
        rocenic.debug=1) set -x ;;
    esac
done
hostname rocenic-guest
ulimit -l unlimited 2>/dev/null

# --- modules --------------------------------------------------------------------------
if [ -n "$MODS" ]; then
    MODS=$(echo "$MODS" | tr ',' ' ')
else
    MODS=$(cat /etc/rocenic/boot-modules)
fi
for m in $MODS; do
    modprobe "$m" || fail "modprobe $m"
done

# --- NICs -----------------------------------------------------------------------------
ip link set lo up
n=0
while [ ! -e /sys/class/net/eth0 ] && [ $n -lt 50 ]; do sleep 0.1; n=$((n + 1)); done
if [ -n "$MAC" ]; then
    MAC=$(echo "$MAC" | tr 'A-F' 'a-f')
    wire=
    for d in /sys/class/net/eth*; do
        [ "$(cat "$d/address")" = "$MAC" ] && wire=${d##*/}
    done
    [ -n "$wire" ] || fail "no NIC has MAC $MAC"
    if [ "$wire" != eth0 ]; then
        ip link set dev eth0 name ethtmp && ip link set dev "$wire" name eth0 \
            && ip link set dev ethtmp name "$wire" || fail "renaming $wire to eth0"
    fi
fi
[ -e /sys/class/net/eth0 ] || fail "no eth0 (is the virtio NIC there?)"

if [ "$IPV6" != 1 ] && [ -e /proc/sys/net/ipv6/conf/eth0/disable_ipv6 ]; then
    echo 1 > /proc/sys/net/ipv6/conf/eth0/disable_ipv6
fi
if [ -n "$MTU" ]; then ip link set dev eth0 mtu "$MTU" || fail "MTU $MTU on eth0"; fi
ip addr add "$IP" dev eth0 || fail "address $IP on eth0"
ip link set dev eth0 up || fail "eth0 up"
for e in $(echo "$ARP" | tr ',' ' '); do
    arp -i eth0 -s "${e%@*}" "${e#*@}" || fail "arp entry $e"
done
if [ -e /sys/class/net/eth1 ]; then
    if [ -e /proc/sys/net/ipv6/conf/eth1/disable_ipv6 ]; then
        echo 1 > /proc/sys/net/ipv6/conf/eth1/disable_ipv6
    fi
    ip addr add "$CTL" dev eth1 && ip link set dev eth1 up || fail "control NIC eth1"
fi

# --- soft-RoCE --------------------------------------------------------------------------
if [ "$RXE" = 1 ]; then
    rdma link add rxe0 type rxe netdev eth0 || fail "rdma link add rxe0"
    P=/sys/class/infiniband/rxe0/ports/1
    n=0
    until grep -q ACTIVE $P/state 2>/dev/null \
        && [ "$(cat $P/gids/1 2>/dev/null)" != 0000:0000:0000:0000:0000:0000:0000:0000 ] \
        && [ -n "$(cat $P/gids/1 2>/dev/null)" ]; do
        n=$((n + 1))
        [ $n -lt 100 ] || fail "rxe0 port not active or GID 1 empty"
        sleep 0.1
    done
    say "rxe0 on eth0: $(cat $P/state), active_mtu $(cat $P/active_mtu 2>/dev/null)," \
        "gid0 $(cat $P/gids/0), gid1 $(cat $P/gids/1)"
fi
say "eth0 $(cat /sys/class/net/eth0/address) $IP mtu $(cat /sys/class/net/eth0/mtu)"

# --- the command ------------------------------------------------------------------------
mkdir -p /root
cd /root
if [ -f /rocenic/cmd.sh ]; then
    script=/rocenic/cmd.sh
elif [ -n "$CMD" ]; then
    echo "$CMD" | base64 -d > /tmp/cmd.sh || fail "rocenic.cmd is not base64"
    script=/tmp/cmd.sh
else
    script=
fi
# Kernel messages would interleave with the command's output on the console: keep them
# off the console while it runs (unless rocenic.klog=1) and print them after it.
[ "$KLOG" = 1 ] || dmesg -n 1
t_ready=$(cut -d' ' -f1 /proc/uptime)
echo
echo "ROCENIC-GUEST-READY uptime=$t_ready"
if [ -n "$script" ]; then
    sh "$script" < /dev/null
    status=$?
else
    say "no rocenic.cmd: interactive shell; 'exit' powers off"
    setsid cttyhack sh
    status=$?
fi
t_end=$(cut -d' ' -f1 /proc/uptime)
echo
if [ "$KLOG" != 1 ]; then
    echo "ROCENIC-GUEST-KLOG kernel messages while the command ran:"
    dmesg | awk -v t="$t_ready" '{ s = $0; sub(/^\[ */, "", s); if (s + 0 >= t + 0) print }'
fi
echo "ROCENIC-GUEST-EXIT status=$status uptime=$t_end"
off
