#!/usr/bin/env bash
# The main job: two simulated rocenic NICs run every RDMA operation against each other,
# every completion and byte is checked, and the wire capture is judged by scapy and tshark.
#
# By default both NICs are the Verilated RTL engine (--backend rtl): every operation kind
# from 0 B to 1 MiB at every PMTU, about 2.5 million simulated cycles (minutes: the RTL
# simulates tens of thousands of cycles a second). If Verilator cannot be installed, the
# behavioural model runs instead, and this script says so. Extra arguments go to
# `rocenic demo` (e.g. --backend model --loss 0.02, --seed 7, --max-size 65536).
set -euo pipefail
cd "$(dirname "$0")/.."
# The capture is judged by scapy and tshark whatever the backend; Verilator and g++ are
# needed only by the RTL engine. Packages already present need no root.
bash scripts/install-deps.sh oracles

# The value of --backend among the arguments ("" when not given).
backend_of() {
    while [[ $# -gt 0 ]]; do
        case "$1" in
            --backend=*) echo "${1#--backend=}"; return ;;
            --backend) echo "${2:-}"; return ;;
        esac
        shift
    done
}

defaults=()
backend=$(backend_of "$@")
case "$backend" in
    "")
        if bash scripts/install-deps.sh rtl; then
            defaults+=(--backend rtl)
        else
            echo "demo: Verilator could not be installed (see above), so the behavioural model" \
                "runs instead of the RTL engine (--backend model)." >&2
            defaults+=(--backend model)
        fi ;;
    rtl) bash scripts/install-deps.sh rtl ;;
esac

mkdir -p out
cargo run --release -q -p rocenic-cli --bin rocenic -- demo --pcap out/demo.pcap \
    "${defaults[@]}" "$@"
/usr/bin/python3 tests/oracles/check_pcap.py out/demo.pcap \
    --require-opcodes 0x04,0x06,0x0a,0x0c,0x10,0x11,0x12,0x13,0x14
