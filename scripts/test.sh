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

echo "== engine synthesis: build its test, start it in the background"
# The engine's full yosys synth_xilinx takes about 6 CPU-minutes on one thread. It starts
# first and runs at the lowest CPU priority beside clippy, the build and the suite, on the
# time they leave a core idle (linking, single-crate compiles, tests waiting on QEMU or
# Python); it is waited for at the end. The test binary is built as part of the workspace
# (same features, nothing built twice) and run directly, so that it holds no cargo lock.
synth_log="${CARGO_TARGET_DIR:-target}/engine-synthesis.log"
gates_bin=$(cargo test --workspace --release --test gates --no-run --message-format=json |
    /usr/bin/python3 -c 'import json, sys
print(next(m["executable"] for m in map(json.loads, sys.stdin)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "gates"
    and m.get("executable")))')
# cargo runs an integration test from its package's directory; so does this.
(cd hdl && exec setsid nice -n 19 "$gates_bin" \
    --ignored --exact engine_synthesis_is_within_its_record --nocapture) >"$synth_log" 2>&1 &
synth_pid=$!
trap 'kill -- -"$synth_pid" 2>/dev/null || true' EXIT # a failing suite stops yosys too

echo "== cargo clippy -D warnings"
cargo clippy --workspace --all-targets --release -- -D warnings

echo "== cargo test (release: the property tests run thousands of simulated workloads)"
cargo test --workspace --release

echo "== engine synthesis (yosys synth_xilinx, default size, against its record)"
if ! wait "$synth_pid" || ! grep -q "test result: ok. 1 passed" "$synth_log"; then
    cat "$synth_log"
    echo "the engine's synthesis check failed; its log: $synth_log" >&2
    exit 1
fi
grep -E "yosys synth_xilinx|test result" "$synth_log"
