#!/usr/bin/env bash
# The whole rocenic test suite: style gates, unit and property tests, external oracles.
# Installs the system packages it needs (scripts/install-deps.sh) or says what to install.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== system packages"
bash scripts/install-deps.sh oracles rtl qemu

echo "== oracle self-test (scapy layers and the checker against known-good and known-bad frames)"
/usr/bin/python3 tests/oracles/check_pcap.py --self-test

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy -D warnings"
cargo clippy --workspace --all-targets --release -- -D warnings

echo "== cargo test (release: the property tests run thousands of simulated workloads)"
cargo test --workspace --release
