#!/usr/bin/env bash
# Boot the interop guest (build-guest.sh) under QEMU (TCG), run one shell script in it, and
# exit with that script's status.
#
# usage: tests/interop/run-guest.sh [OPTIONS] [-- EXTRA_QEMU_ARGS...]
#
# What to run (one of):
#   --script FILE          shell script (busybox sh) to run in the guest
#   --cmd 'STRING'         the same, given inline
#   --interactive          a shell on the serial console in this terminal instead (QEMU in
#                          the foreground, Ctrl-A X quits; 'exit' in the shell powers off)
# The wire NIC (guest eth0, virtio-net; its wire is a UDP socket on loopback carrying one
# Ethernet frame per datagram, without FCS):
#   --wire LOCAL:PEER      QEMU binds 127.0.0.1:LOCAL and sends frames to 127.0.0.1:PEER
#                          (default 14791:14792); the peer (e.g. our simulated NIC) binds
#                          PEER and sends its frames to LOCAL. '--wire auto' picks two free
#                          ports (for runs with no peer; parallel runs must not share ports)
#   --ip A.B.C.D/N         guest address on eth0 (default 10.0.0.2/24; exists only on the
#                          emulated link). GID index 1 of rxe0 is ::ffff:A.B.C.D
#   --mac MAC              guest MAC on eth0 (default 52:54:00:00:00:02)
#   --mtu N                eth0 MTU (default 1500; >= 4176 for an rxe active_mtu of 4096)
#   --arp IP@MAC           static ARP entry in the guest (repeatable)
#   --no-rxe               do not create rxe0
# The control NIC (guest eth1 = 10.0.2.15, QEMU user networking with restrict=on: the guest
# reaches nothing but the forwards below):
#   --hostfwd HP:GP        host 127.0.0.1:HP -> guest port GP (repeatable; TCP)
#   --guestfwd GP:HP       guest 10.0.2.100:GP -> host 127.0.0.1:HP (repeatable; TCP, socat)
# Guest and run:
#   --guest DIR            the built guest (default $ROCENIC_GUEST_DIR, else
#                          <repo>/target/interop-guest; built first if missing)
#   --add SRC[:DST]        put a host file into the guest (default DST /rocenic/files/NAME),
#                          through an initramfs appended to the guest's (repeatable)
#   --append 'ARGS'        more kernel command line (e.g. 'intel_iommu=on rocenic.debug=1')
#   --timeout SECONDS      hard limit for the whole run, boot included (default 300)
#   --log FILE             console log (default: a new file under ${TMPDIR:-/tmp}, removed
#                          when the command succeeds)
#   --mem MB, --smp N      guest memory (default 1024) and CPUs (default 1)
#   --vmlinuz              boot the compressed bzImage instead of the PVH vmlinux
#   -q, --quiet            do not copy the guest command's output to stdout
#   -v, --verbose          stream the whole console to stderr while it runs
#   -- ARGS...             passed to qemu-system-x86_64 as they are
#
# Output: the guest command's console output goes to stdout when the run ends (unless -q).
# Exit status: the guest command's status; 124 on timeout; 125 when the guest did not boot,
# its setup failed, or QEMU failed (a line starting 'run-guest:' on stderr says which and
# where the console log is).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)

GUEST=${ROCENIC_GUEST_DIR:-$REPO/target/interop-guest}
SCRIPT_FILE=
SCRIPT_TEXT=
have_script=0
WIRE=14791:14792
IP=10.0.0.2/24
MAC=52:54:00:00:00:02
CTL_MAC=52:54:00:00:01:02
MTU=
ARPS=()
RXE=1
HOSTFWDS=()
GUESTFWDS=()
ADDS=()
APPEND=
TIMEOUT=300
LOG=
MEM=1024
SMP=1
USE_VMLINUZ=0
QUIET=0
VERBOSE=0
QEMU_EXTRA=()
INTERACTIVE=0

die() { echo "run-guest: $*" >&2; exit 2; }
usage() { awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "$0"; }

while [[ $# -gt 0 ]]; do
    case $1 in
        -h|--help) usage; exit 0 ;;
        --script) SCRIPT_FILE=$2; have_script=1; shift 2 ;;
        --cmd) SCRIPT_TEXT=$2; have_script=1; shift 2 ;;
        --interactive) INTERACTIVE=1; shift ;;
        --wire) WIRE=$2; shift 2 ;;
        --ip) IP=$2; shift 2 ;;
        --mac) MAC=$2; shift 2 ;;
        --mtu) MTU=$2; shift 2 ;;
        --arp) ARPS+=("$2"); shift 2 ;;
        --no-rxe) RXE=0; shift ;;
        --hostfwd) HOSTFWDS+=("$2"); shift 2 ;;
        --guestfwd) GUESTFWDS+=("$2"); shift 2 ;;
        --guest) GUEST=$2; shift 2 ;;
        --add) ADDS+=("$2"); shift 2 ;;
        --append) APPEND="$APPEND $2"; shift 2 ;;
        --timeout) TIMEOUT=$2; shift 2 ;;
        --log) LOG=$2; shift 2 ;;
        --mem) MEM=$2; shift 2 ;;
        --smp) SMP=$2; shift 2 ;;
        --vmlinuz) USE_VMLINUZ=1; shift ;;
        -q|--quiet) QUIET=1; shift ;;
        -v|--verbose) VERBOSE=1; shift ;;
        --) shift; QEMU_EXTRA=("$@"); break ;;
        *) die "unknown argument '$1' (see --help)" ;;
    esac
done

port_ok() { [[ $1 =~ ^[0-9]+$ ]] && (( $1 > 0 && $1 < 65536 )); }
if [[ $WIRE == auto ]]; then
    WIRE=$(/usr/bin/python3 -c '
import socket
a = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); a.bind(("127.0.0.1", 0))
b = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); b.bind(("127.0.0.1", 0))
print("%d:%d" % (a.getsockname()[1], b.getsockname()[1]))') || die "--wire auto: no python3"
fi
WIRE_LOCAL=${WIRE%%:*}
WIRE_PEER=${WIRE#*:}
[[ $WIRE == *:* ]] && port_ok "$WIRE_LOCAL" && port_ok "$WIRE_PEER" \
    || die "--wire wants LOCAL:PEER ports, got '$WIRE'"
[[ $IP =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+/[0-9]+$ ]] || die "--ip wants A.B.C.D/N, got '$IP'"
mac_re='^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}$'
[[ $MAC =~ $mac_re ]] || die "--mac: bad MAC '$MAC'"
[[ -z $MTU || $MTU =~ ^[0-9]+$ ]] || die "--mtu wants a number"
for a in "${ARPS[@]:+${ARPS[@]}}"; do
    [[ ${a%@*} =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$ && ${a#*@} =~ $mac_re ]] \
        || die "--arp wants IP@MAC, got '$a'"
done
for f in "${HOSTFWDS[@]:+${HOSTFWDS[@]}}" "${GUESTFWDS[@]:+${GUESTFWDS[@]}}"; do
    [[ $f == *:* ]] && port_ok "${f%%:*}" && port_ok "${f#*:}" \
        || die "forward wants PORT:PORT, got '$f'"
done
[[ $TIMEOUT =~ ^[0-9]+$ ]] || die "--timeout wants seconds"
if [[ -n $SCRIPT_FILE && ! -f $SCRIPT_FILE ]]; then die "--script: no such file $SCRIPT_FILE"; fi
if [[ $have_script -eq 0 && $INTERACTIVE -eq 0 ]]; then die "give --script FILE, --cmd STRING or --interactive"; fi
if [[ $have_script -eq 1 && $INTERACTIVE -eq 1 ]]; then die "--interactive takes no --script/--cmd"; fi
if [[ ${#GUESTFWDS[@]} -gt 0 ]] && ! command -v socat >/dev/null 2>&1; then
    die "--guestfwd needs socat: run 'bash scripts/install-deps.sh qemu'"
fi
command -v qemu-system-x86_64 >/dev/null 2>&1 \
    || die "qemu-system-x86_64 not found: run 'bash scripts/install-deps.sh qemu'"

# --- the guest ----------------------------------------------------------------------------
# Built when missing or built by another version of the builder/init (a cheap check; a
# package update is picked up by running build-guest.sh itself, as the test suite does).
builder=$(cat "$HERE/build-guest.sh" "$HERE/guest-init.sh" | sha256sum | cut -d' ' -f1)
if [[ ! -f $GUEST/initrd.gz || ! -f $GUEST/vmlinuz ]] \
    || ! grep -qx "builder $builder" "$GUEST/stamp" 2>/dev/null; then
    echo "run-guest: guest in $GUEST missing or stale; building it" >&2
    build_args=()
    if [[ -f $GUEST/build-args ]]; then mapfile -t build_args < "$GUEST/build-args"; fi
    bash "$HERE/build-guest.sh" "${build_args[@]:+${build_args[@]}}" "$GUEST" >&2 \
        || { echo "run-guest: guest build failed" >&2; exit 125; }
fi
KERNEL=$GUEST/vmlinux
if [[ $USE_VMLINUZ -eq 1 || ! -f $KERNEL ]]; then KERNEL=$GUEST/vmlinuz; fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/rocenic-run.XXXXXX")
QPID=
TAILPID=
cleanup() {
    if [[ -n $QPID ]]; then kill "$QPID" 2>/dev/null || true; fi
    if [[ -n $TAILPID ]]; then kill "$TAILPID" 2>/dev/null || true; fi
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

LOG_IS_TEMP=0
if [[ -z $LOG ]]; then
    LOG=$(mktemp "${TMPDIR:-/tmp}/rocenic-guest-console.XXXXXX.log")
    LOG_IS_TEMP=1   # removed after a run whose command succeeded
else
    mkdir -p "$(dirname "$LOG")"
fi
: > "$LOG"

# The script and the added files go into a small initramfs appended to the guest's: the
# kernel unpacks concatenated archives in order, so nothing is rebuilt per run.
EXTRA=$TMP/extra
mkdir -p "$EXTRA/rocenic/files"
if [[ $have_script -eq 1 ]]; then
    if [[ -n $SCRIPT_FILE ]]; then cp "$SCRIPT_FILE" "$EXTRA/rocenic/cmd.sh"
    else printf '%s\n' "$SCRIPT_TEXT" > "$EXTRA/rocenic/cmd.sh"; fi
fi
for a in "${ADDS[@]:+${ADDS[@]}}"; do
    src=${a%%:*}
    if [[ $a == *:* ]]; then dst=${a#*:}; else dst=/rocenic/files/$(basename "$src"); fi
    [[ -f $src ]] || die "--add: no such file $src"
    [[ $dst == /* ]] || die "--add: guest path must be absolute: $dst"
    mkdir -p "$EXTRA$(dirname "$dst")"
    cp -L "$src" "$EXTRA$dst"
done
INITRD=$TMP/initrd.gz
cp "$GUEST/initrd.gz" "$INITRD"
(cd "$EXTRA" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) \
    | gzip -1 >> "$INITRD"

# --- the command line ---------------------------------------------------------------------
CMDLINE="console=ttyS0 panic=-1 rocenic.ip=$IP rocenic.mac=$MAC rocenic.rxe=$RXE"
[[ -z $MTU ]] || CMDLINE+=" rocenic.mtu=$MTU"
if [[ ${#ARPS[@]} -gt 0 ]]; then CMDLINE+=" rocenic.arp=$(IFS=,; echo "${ARPS[*]}")"; fi
CMDLINE+="$APPEND"

USERNET="user,id=n1,restrict=on"
for f in "${HOSTFWDS[@]:+${HOSTFWDS[@]}}"; do
    USERNET+=",hostfwd=tcp:127.0.0.1:${f%%:*}-:${f#*:}"
done
for f in "${GUESTFWDS[@]:+${GUESTFWDS[@]}}"; do
    USERNET+=",guestfwd=tcp:10.0.2.100:${f%%:*}-cmd:socat - TCP:127.0.0.1:${f#*:}"
done

QEMU=(qemu-system-x86_64 -accel tcg -cpu max -m "$MEM" -smp "$SMP"
      -nodefaults -display none -monitor none -no-reboot
      -serial "file:$LOG"
      -kernel "$KERNEL" -initrd "$INITRD" -append "$CMDLINE"
      -netdev "socket,id=n0,udp=127.0.0.1:$WIRE_PEER,localaddr=127.0.0.1:$WIRE_LOCAL"
      -device "virtio-net-pci,netdev=n0,mac=$MAC,romfile="
      -netdev "$USERNET"
      -device "virtio-net-pci,netdev=n1,mac=$CTL_MAC,romfile="
      "${QEMU_EXTRA[@]:+${QEMU_EXTRA[@]}}")

# --- run ----------------------------------------------------------------------------------
if [[ $INTERACTIVE -eq 1 ]]; then
    for i in "${!QEMU[@]}"; do [[ ${QEMU[$i]} == "file:$LOG" ]] && QEMU[i]=mon:stdio; done
    if [[ $LOG_IS_TEMP -eq 1 ]]; then rm -f "$LOG"; fi
    echo "run-guest: interactive; Ctrl-A X quits QEMU, 'exit' in the guest shell powers off" >&2
    set +e
    "${QEMU[@]}"
    exit $?
fi
T0=$(date +%s%N)
timeout -k 5 "$TIMEOUT" "${QEMU[@]}" < /dev/null > "$TMP/qemu.out" 2>&1 &
QPID=$!
if [[ $VERBOSE -eq 1 ]]; then
    echo "run-guest: ${QEMU[*]}" >&2
    # tail ends by itself when QEMU (its timeout wrapper) does
    tail -n +1 -F --pid="$QPID" "$LOG" 2>/dev/null | sed -u 's/\r$//' >&2 &
    TAILPID=$!
fi
set +e
wait "$QPID"
rc=$?
set -e
QPID=
if [[ -n $TAILPID ]]; then wait "$TAILPID" 2>/dev/null || true; TAILPID=; fi
ms=$(( ($(date +%s%N) - T0) / 1000000 ))
ELAPSED=$(printf '%d.%02d' $((ms / 1000)) $((ms % 1000 / 10)))

console() { tr -d '\r' < "$LOG"; }
status=$(console | sed -n 's/^ROCENIC-GUEST-EXIT status=\([0-9][0-9]*\).*/\1/p' | tail -n1)
ready=$(console | sed -n 's/^ROCENIC-GUEST-READY uptime=\([0-9.]*\).*/\1/p' | sed -n 1p)

if [[ $QUIET -eq 0 && -n $ready ]]; then
    # the section between the markers, less the empty line /init prints before its marker
    console | awk '/^ROCENIC-GUEST-READY/ {on = 1; next}
                   /^ROCENIC-GUEST-(KLOG|EXIT)/ {if (on && held != "") print held; on = 0; held = ""; next}
                   on {if (has) print held; held = $0; has = 1}'
fi
if [[ -n $status ]]; then
    if [[ $status -ne 0 ]]; then
        echo "run-guest: the guest command failed with status $status (console log: $LOG)" >&2
    fi
    echo "run-guest: done in $ELAPSED s (guest ready at ${ready:-?} s of guest uptime), status $status" >&2
    if [[ $status -eq 0 && $LOG_IS_TEMP -eq 1 ]]; then rm -f "$LOG"; fi
    exit "$status"
fi
if [[ $rc -eq 124 || $rc -eq 137 ]]; then
    if [[ -n $ready ]]; then
        echo "run-guest: timeout after $TIMEOUT s: the guest command did not finish (console log: $LOG)" >&2
    else
        echo "run-guest: timeout after $TIMEOUT s: the guest did not finish booting (console log: $LOG)" >&2
    fi
    exit 124
fi
why=$(console | sed -n 's/^ROCENIC-GUEST-SETUP-FAILED //p' | sed -n 1p)
if [[ -n $why ]]; then
    echo "run-guest: guest setup failed: $why (console log: $LOG)" >&2
elif [[ $rc -ne 0 ]]; then
    echo "run-guest: QEMU failed (status $rc): $(tr '\n' ' ' < "$TMP/qemu.out") (console log: $LOG)" >&2
else
    echo "run-guest: the guest stopped without an end marker (boot failure or crash; console log: $LOG)" >&2
fi
exit 125
