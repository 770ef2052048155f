#!/usr/bin/env bash
# The whole rocenic test suite: style gates, unit and property tests, external oracles.
# Installs the system packages it needs (scripts/install-deps.sh) or says what to install.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== system packages"
bash scripts/install-deps.sh oracles rtl qemu verbs plot

echo "== oracle self-test (scapy layers and the checker against known-good and known-bad frames)"
/usr/bin/python3 tests/oracles/check_pcap.py --self-test

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== build the suite (release: the property tests run thousands of simulated workloads)"
# One build of every test binary, with all cores; it also yields the gates test's path.
# (Diagnostics go to stderr as usual; stdin is read to its end so cargo never meets a
# closed pipe.)
gates_bin=$(cargo test --workspace --release --no-run --message-format=json-render-diagnostics |
    /usr/bin/python3 -c 'import json, sys
msgs = [json.loads(line) for line in sys.stdin]
print(next(m["executable"] for m in msgs
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "gates"
    and m.get("executable")))')

echo "== engine synthesis: start it in the background"
# The engine's full yosys synth_xilinx takes about 6 CPU-minutes on one thread. It runs at
# the lowest CPU priority beside clippy and the suite, on the time they leave a core idle
# (single-crate checks, tests waiting on QEMU or Python, a test binary's last test), and is
# waited for at the end. It starts after the build: started before, beside a build split in
# two (its test first), the build took 12.5 minutes against 8.5 for one build. It is run
# directly, not through cargo, so that it holds no cargo lock.
synth_log="${CARGO_TARGET_DIR:-target}/engine-synthesis.log"
# cargo runs an integration test from its package's directory; so does this.
(cd hdl && exec setsid nice -n 19 "$gates_bin" \
    --ignored --exact engine_synthesis_is_within_its_record --nocapture) >"$synth_log" 2>&1 &
synth_pid=$!
trap 'kill -- -"$synth_pid" 2>/dev/null || true' EXIT # a failing suite stops yosys too

echo "== cargo clippy -D warnings"
cargo clippy --workspace --all-targets --release -- -D warnings

echo "== cargo test"
cargo test --workspace --release

echo "== engine synthesis (yosys synth_xilinx, default size, against its record)"
if ! wait "$synth_pid" || ! grep -q "test result: ok. 1 passed" "$synth_log"; then
    cat "$synth_log"
    echo "the engine's synthesis check failed; its log: $synth_log" >&2
    exit 1
fi
grep -E "yosys synth_xilinx|test result" "$synth_log"
