#!/usr/bin/env bash
# The main job: two simulated rocenic NICs run every RDMA operation against each other,
# every completion and byte is checked, and the wire capture is judged by scapy and tshark.
# Extra arguments go to `rocenic demo` (e.g. --seed 7 --loss 0.02).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh oracles
mkdir -p out
cargo run --release -q -p rocenic-driver --bin rocenic -- demo --pcap out/demo.pcap "$@"
/usr/bin/python3 tests/oracles/check_pcap.py out/demo.pcap \
    --require-opcodes 0x04,0x06,0x0a,0x0c,0x10,0x11,0x12,0x13,0x14
