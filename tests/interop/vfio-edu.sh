#!/usr/bin/env bash
# The driver's VFIO layer against the real Linux VFIO: boots the interop guest (run-guest.sh)
# on a q35 machine with an emulated Intel IOMMU (interrupt remapping on, intel_iommu=on in
# the guest) and QEMU's edu device, and runs rocenic-vfio-edu in it.
#
# usage: tests/interop/vfio-edu.sh [--bin PATH] [--guest DIR] [--timeout SECONDS] [--log FILE]
#
#   --bin PATH      the rocenic-vfio-edu binary (default target/release/rocenic-vfio-edu,
#                   built with cargo when missing). It runs on the guest's Debian 12 libc,
#                   so it must need no newer glibc than the guest has (checked here).
#   --guest DIR     the built guest (run-guest.sh's default otherwise)
#   --timeout S     limit for the whole guest run (default 240)
#   --log FILE      keep the guest console log there
#
# In the guest, as root unless said otherwise, each step checks the program's exit status
# and message:
#   1. edu not bound to any driver            -> "bound to no driver" + the bind commands
#   2. bound to vfio-pci; as an unprivileged user without access to /dev/vfio/<group>
#                                             -> "permission denied" + what to do
#   3. the same user owning the group, memlock limit 64 KiB -> "ulimit -l"
#   4. another process holds the group open   -> "is busy"
#   5. the full check (BAR0, ID and liveness registers, DMA both ways below the 28-bit mask,
#      a 4 MiB buffer on hugepages, DMA to/from unmapped IOVAs blocked) -> "PASS"
#   6. the guest kernel's DMAR driver logged a write fault and a read fault at the IOVAs
#      the program reported as unmapped (the IOMMU, not chance, stopped them).
# Prints the guest's output, then 'vfio-edu: PASS (6 steps)' or 'vfio-edu: FAIL (...)'.
# Exit status 0 iff every step passed; run-guest.sh's status (124 timeout, 125 boot/QEMU
# failure) when the guest did not get that far.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
BIN=
GUEST_ARGS=()
TIMEOUT=240
LOG_ARGS=()
while [[ $# -gt 0 ]]; do
    case $1 in
        --bin) BIN=$2; shift 2 ;;
        --guest) GUEST_ARGS=(--guest "$2"); shift 2 ;;
        --timeout) TIMEOUT=$2; shift 2 ;;
        --log) LOG_ARGS=(--log "$2"); shift 2 ;;
        -h|--help) awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "$0"; exit 0 ;;
        *) echo "vfio-edu: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
die() { echo "vfio-edu: FAIL: $*" >&2; exit 1; }

if [[ -z $BIN ]]; then
    BIN=$REPO/target/release/rocenic-vfio-edu
    if [[ ! -x $BIN ]]; then
        (cd "$REPO" && cargo build --release -q -p rocenic-cli --bin rocenic-vfio-edu) \
            || die "cannot build rocenic-vfio-edu"
    fi
fi
[[ -x $BIN ]] || die "no such program: $BIN"
command -v readelf >/dev/null 2>&1 || die "readelf not found: run 'bash scripts/install-deps.sh qemu'"

# --- will the host-built program run on the guest's libc? ---------------------------------
# The guest ships Debian 12's libc6 and ld.so; libgcc_s (Rust's unwinder) comes from the
# host, which must then be Debian 12 too (its libgcc-s1 is the same package).
ADD=(--add "$BIN:/usr/bin/rocenic-vfio-edu")
for lib in $(readelf -dW "$BIN" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    case $lib in
        libc.so.6|ld-linux-x86-64.so.2|libm.so.6) ;;   # in the guest
        libgcc_s.so.1)
            path=$(ldconfig -p 2>/dev/null | awk '$1 == "libgcc_s.so.1" && /x86-64/ && p == "" {p = $NF} END {print p}')
            [[ -n $path && -f $path ]] || die "libgcc_s.so.1 not found on the host"
            ADD+=(--add "$path:/lib/x86_64-linux-gnu/libgcc_s.so.1") ;;
        *) die "$BIN needs $lib, which the guest does not have" ;;
    esac
done
need=$(readelf -VW "$BIN" | grep -o 'GLIBC_2\.[0-9]*' | sort -t. -k2 -n | tail -n1)
if [[ -n $need && ${need#GLIBC_2.} -gt 36 ]]; then
    die "$BIN needs $need but the guest has Debian 12's glibc 2.36: build it on Debian 12"
fi

# --- the guest's script ------------------------------------------------------------------
TMP=$(mktemp -d "${TMPDIR:-/tmp}/rocenic-vfio-edu.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
cat > "$TMP/guest.sh" <<'GUEST'
P=/usr/bin/rocenic-vfio-edu
pass=0
fail=0
step() {  # step NAME EXPECTED_STATUS STATUS TEXT_EXPECTED OUTPUT_FILE
    if [ "$3" = "$2" ] && grep -q -- "$4" "$5"; then
        echo "vfio-edu: ok   $1"
        pass=$((pass + 1))
    else
        echo "vfio-edu: FAIL $1: status $3 (expected $2), output:"
        sed 's/^/    /' "$5"
        fail=$((fail + 1))
    fi
}
modprobe vfio_pci && modprobe vfio_iommu_type1 || { echo "vfio-edu: FAIL modprobe vfio"; exit 1; }
bdf=
for d in /sys/bus/pci/devices/*; do
    if [ "$(cat $d/vendor)" = 0x1234 ] && [ "$(cat $d/device)" = 0x11e8 ]; then bdf=${d##*/}; fi
done
[ -n "$bdf" ] || { echo "vfio-edu: FAIL no edu device (1234:11e8) in the guest"; exit 1; }
group=$(basename "$(readlink /sys/bus/pci/devices/$bdf/iommu_group)")
echo "vfio-edu: edu at $bdf, IOMMU group $group; $(dmesg | grep -m1 'DMAR: IOMMU enabled' | cut -d']' -f2)"
echo 4 > /proc/sys/vm/nr_hugepages
echo 'nobody:x:65534:65534:nobody:/tmp:/bin/sh' >> /etc/passwd
echo 'nogroup:x:65534:' >> /etc/group

$P "$bdf" > /tmp/1 2>&1
step "not bound: says how to bind" 2 $? "is bound to no driver; bind it to vfio-pci" /tmp/1

echo vfio-pci > /sys/bus/pci/devices/$bdf/driver_override
echo "$bdf" > /sys/bus/pci/drivers_probe
[ -e /dev/vfio/$group ] || { echo "vfio-edu: FAIL binding to vfio-pci made no /dev/vfio/$group"; exit 1; }

su -s /bin/sh nobody -c "$P $bdf" > /tmp/2 2>&1
step "unprivileged: permission denied, says what to do" 2 $? "permission denied opening /dev/vfio/$group" /tmp/2

chown 65534 /dev/vfio/$group
su -s /bin/sh nobody -c "ulimit -l 64; $P $bdf" > /tmp/3 2>&1
step "memlock limit of 64 KiB: says ulimit -l" 2 $? "ulimit -l unlimited" /tmp/3
chown 0 /dev/vfio/$group

exec 3<> /dev/vfio/$group
$P "$bdf" > /tmp/4 2>&1
step "group held by another process: busy" 2 $? "is busy" /tmp/4
exec 3>&-

$P "$bdf" > /tmp/5 2>&1
st=$?
cat /tmp/5
step "the edu check" 0 $st "rocenic-vfio-edu: PASS" /tmp/5

w=$(sed -n 's/.*DMA write to an unmapped IOVA is blocked: IOVA \(0x[0-9a-f]*\),.*/\1/p' /tmp/5)
r=$(sed -n 's/.*DMA read from an unmapped IOVA is blocked: IOVA \(0x[0-9a-f]*\),.*/\1/p' /tmp/5)
dmesg | grep 'DMAR: \[DMA' > /tmp/6
cat /tmp/6
if [ -n "$w" ] && [ -n "$r" ] && grep -q "DMA Write.*fault addr $w " /tmp/6 \
    && grep -q "DMA Read.*fault addr $r " /tmp/6; then
    echo "vfio-edu: ok   the IOMMU reported the blocked write ($w) and read ($r)"
    pass=$((pass + 1))
else
    echo "vfio-edu: FAIL no DMAR write fault at '$w' and read fault at '$r' in dmesg"
    fail=$((fail + 1))
fi
echo "vfio-edu: guest steps: $pass ok, $fail failed"
[ $fail -eq 0 ]
GUEST

T0=$SECONDS
set +e
bash "$HERE/run-guest.sh" "${GUEST_ARGS[@]:+${GUEST_ARGS[@]}}" "${LOG_ARGS[@]:+${LOG_ARGS[@]}}" \
    --script "$TMP/guest.sh" --no-rxe "${ADD[@]}" --mem 512 --timeout "$TIMEOUT" \
    --append "intel_iommu=on rocenic.modules=virtio_pci,virtio_net" \
    -- -machine q35,kernel-irqchip=split -device intel-iommu,intremap=on -device edu \
    > "$TMP/out" 2> "$TMP/err"
rc=$?
set -e
cat "$TMP/out"
cat "$TMP/err" >&2
ok=$(grep -c '^vfio-edu: ok ' "$TMP/out" || true)
bad=$(grep -c '^vfio-edu: FAIL' "$TMP/out" || true)
if [[ $rc -eq 0 && $ok -eq 6 && $bad -eq 0 ]]; then
    echo "vfio-edu: PASS (6 steps, $((SECONDS - T0)) s)"
    exit 0
fi
echo "vfio-edu: FAIL ($ok of 6 steps passed, guest run status $rc, $((SECONDS - T0)) s)"
[[ $rc -ne 0 ]] && exit "$rc"
exit 1
