#!/usr/bin/env bash
# Install the system packages rocenic's tools need, on Debian 12.
#
# usage: scripts/install-deps.sh [--check] [--list] [GROUP...]
#
#   GROUP     one or more of the groups below; default: every known group.
#   --check   only report what is missing (exit 1 if anything is), install nothing.
#   --list    print the known groups and their packages, then exit.
#
# Idempotent: each package has a probe; only packages whose probe fails are
# installed, and `apt-get update` runs only when something must be installed.
# If installation is impossible (no apt-get, not root and no sudo, no network)
# it prints the exact packages to install and exits non-zero.
#
# Adding a group: add its name to KNOWN_GROUPS and a `group_<name>` function that
# calls `need PACKAGE 'probe command'` once per package.
set -euo pipefail

KNOWN_GROUPS=(oracles qemu rtl verbs plot)

# --- groups -----------------------------------------------------------------
# Each `need` line: Debian package, then a shell command that succeeds iff the
# package's functionality is usable as the project uses it.

group_plot() {
    # `rocenic perf -a --plot`: plotters draws text with ab_glyph from this TrueType
    # file (no fontconfig/freetype); cli/src/plot.rs looks for it here.
    need fonts-dejavu-core 'test -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf'
}

group_oracles() {
    # External wire oracles (tests/oracles/): tshark's RoCE dissector and
    # scapy's RoCE layers + ICRC. The oracle scripts run under /usr/bin/python3
    # because `python3` on PATH may be a pyenv build without Debian's scapy.
    need tshark 'command -v tshark >/dev/null 2>&1 && tshark --version >/dev/null 2>&1'
    need python3-scapy '/usr/bin/python3 -c "import scapy.contrib.roce" >/dev/null 2>&1'
}

group_qemu() {
    # The QEMU guest of the interop tests (tests/interop/): qemu-system-x86 boots Debian's
    # kernel under TCG; build-guest.sh downloads the guest's packages with apt-get and packs
    # them with dpkg-deb, kmod (depmod/modprobe -d), cpio, gzip and readelf; run-guest.sh's
    # --guestfwd relays connections with socat. busybox-static is the guest's shell (the
    # builder takes its .deb; the host copy is there for inspecting a built initramfs).
    # Note: Debian 12's qemu-system-x86 (7.2) cannot be installed beside a backported
    # qemu-utils (10.x): apt removes that qemu-utils (qemu-img), which rocenic does not use.
    need qemu-system-x86 'command -v qemu-system-x86_64 >/dev/null 2>&1 && qemu-system-x86_64 --version >/dev/null 2>&1'
    need busybox-static 'test -x /bin/busybox && [ "$(/bin/busybox --list 2>/dev/null | grep -x cpio)" = cpio ]'
    need cpio 'command -v cpio >/dev/null 2>&1'
    need kmod 'command -v depmod >/dev/null 2>&1 && command -v modprobe >/dev/null 2>&1'
    need socat 'command -v socat >/dev/null 2>&1'
    need binutils 'command -v readelf >/dev/null 2>&1'
    need xz-utils 'command -v xz >/dev/null 2>&1'
}

group_rtl() {
    # The RTL quality gates and simulation (hdl/, sim/): Verilator lints the generated
    # Verilog and turns it into C++ that g++ compiles at run time (sim::rtl; make for
    # `verilator --build` in hdl's tests; zlib for FST waveforms); yosys checks it for latches and undriven signals and synthesises it
    # (synth_xilinx) for the LUT/FF/BRAM figures.
    need verilator 'command -v verilator >/dev/null 2>&1 && verilator --version >/dev/null 2>&1'
    need g++ 'command -v g++ >/dev/null 2>&1 && g++ --version >/dev/null 2>&1'
    need make 'command -v make >/dev/null 2>&1'
    need zlib1g-dev 'test -f /usr/include/zlib.h'
    need yosys 'command -v yosys >/dev/null 2>&1 && yosys -V >/dev/null 2>&1'
}

group_verbs() {
    # The driver's numbering test (driver/tests/verbs_h.rs) compiles a small C program
    # against rdma-core's infiniband/verbs.h with cc and compares every constant it prints
    # with the driver's. The libibverbs-compatible library (ibverbs/) checks its C
    # structures against the same header and runs a C verbs program and Debian's own
    # ibv_rc_pingpong (ibverbs-utils) on itself.
    need libibverbs-dev 'test -f /usr/include/infiniband/verbs.h'
    need ibverbs-utils 'command -v ibv_rc_pingpong >/dev/null 2>&1'
    need gcc 'command -v cc >/dev/null 2>&1 && cc --version >/dev/null 2>&1'
}

# --- machinery --------------------------------------------------------------
MISSING=()

need() {
    local pkg=$1 probe=$2
    if bash -c "$probe"; then
        printf '  ok       %s\n' "$pkg"
    else
        printf '  missing  %s\n' "$pkg"
        local p
        for p in "${MISSING[@]:-}"; do [[ $p == "$pkg" ]] && return 0; done
        MISSING+=("$pkg")
    fi
}

usage() { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; }

is_group() {
    local g
    for g in "${KNOWN_GROUPS[@]}"; do [[ $g == "$1" ]] && return 0; done
    return 1
}

check_only=0
selected=()
for arg in "$@"; do
    case $arg in
        -h|--help) usage; exit 0 ;;
        --check) check_only=1 ;;
        --list)
            for g in "${KNOWN_GROUPS[@]}"; do
                MISSING=()
                printf '%s:' "$g"
                # list packages without probing
                need() { printf ' %s' "$1"; }
                "group_$g"
                echo
            done
            exit 0 ;;
        -*) echo "install-deps: unknown option $arg" >&2; usage >&2; exit 2 ;;
        *)
            if ! is_group "$arg"; then
                echo "install-deps: unknown group '$arg' (known: ${KNOWN_GROUPS[*]})" >&2
                exit 2
            fi
            selected+=("$arg") ;;
    esac
done
[[ ${#selected[@]} -gt 0 ]] || selected=("${KNOWN_GROUPS[@]}")

for g in "${selected[@]}"; do
    echo "[$g]"
    "group_$g"
done

if [[ ${#MISSING[@]} -eq 0 ]]; then
    echo "install-deps: all present (${selected[*]})"
    exit 0
fi

manual() {
    echo "install-deps: $1" >&2
    echo "install-deps: please install these Debian packages:" >&2
    echo "    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y ${MISSING[*]}" >&2
    for p in "${MISSING[@]}"; do
        if [[ $p == tshark ]]; then
            echo "  (preseed first: echo 'wireshark-common wireshark-common/install-setuid boolean false' | debconf-set-selections)" >&2
        fi
    done
    exit 1
}

if [[ $check_only -eq 1 ]]; then
    manual "missing: ${MISSING[*]}"
fi

command -v apt-get >/dev/null 2>&1 || manual "apt-get not found (not a Debian system?)"

SUDO=()
if [[ $(id -u) -ne 0 ]]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        SUDO=(sudo -n)
    else
        manual "not root and no passwordless sudo"
    fi
fi

export DEBIAN_FRONTEND=noninteractive

for p in "${MISSING[@]}"; do
    if [[ $p == tshark ]]; then
        # Avoid the interactive "should non-superusers capture?" question.
        echo 'wireshark-common wireshark-common/install-setuid boolean false' \
            | "${SUDO[@]}" debconf-set-selections \
            || manual "debconf-set-selections failed"
    fi
done

echo "install-deps: installing ${MISSING[*]}"
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update \
    || manual "apt-get update failed (no network?)"
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${MISSING[@]}" \
    || manual "apt-get install failed"

# Verify: every probe must pass now.
MISSING=()
for g in "${selected[@]}"; do
    echo "[$g] (after install)"
    "group_$g"
done
if [[ ${#MISSING[@]} -gt 0 ]]; then
    manual "installed, but still not usable: ${MISSING[*]}"
fi
echo "install-deps: all present (${selected[*]})"
