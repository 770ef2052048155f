#!/usr/bin/env bash
# Self-test of the wire oracles (tests/oracles/check_pcap.py + roce_layers.py).
#
# usage: tests/oracles/selftest.sh [--keep DIR]
#
# 1. check_pcap.py --self-test: the ConnectX-4 Lx CNP vector, a known-good
#    capture of every RC opcode with its expectation file, known-bad captures.
# 2. The command line on the captures it wrote: exit codes 0 / 1 / 2, --json,
#    --expect, --require-opcodes, and the error when scapy or tshark is missing.
# Needs tshark and Debian's python3-scapy: scripts/install-deps.sh oracles.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
CHECK="$HERE/check_pcap.py"
HINT="install with scripts/install-deps.sh oracles"

if [[ ${1:-} == --keep ]]; then
    DIR=${2:?--keep needs a directory}
    mkdir -p "$DIR"
else
    DIR=$(mktemp -d -t rocenic-oracles.XXXXXX)
    trap 'rm -rf "$DIR"' EXIT
fi

if [[ ! -x $PY ]] || ! $PY -c 'import scapy.contrib.roce' 2>/dev/null; then
    echo "selftest: $PY cannot import scapy.contrib.roce: $HINT" >&2
    exit 2
fi
if ! command -v tshark >/dev/null 2>&1; then
    echo "selftest: tshark not found: $HINT" >&2
    exit 2
fi

passed=0
failed=0
ok()   { echo "ok    $1"; passed=$((passed + 1)); }
fail() { echo "FAIL  $1"; failed=$((failed + 1)); }

# expect_rc NAME RC [GREP-PATTERN] -- command...
expect_rc() {
    local name=$1 want=$2 pat=$3
    shift 4
    local out rc
    out=$("$@" 2>&1)
    rc=$?
    if [[ $rc -ne $want ]]; then
        fail "$name (exit $rc, want $want)"
        printf '%s\n' "$out" | sed 's/^/      /'
    elif [[ -n $pat ]] && ! grep -qE -- "$pat" <<<"$out"; then
        fail "$name (output lacks /$pat/)"
        printf '%s\n' "$out" | sed 's/^/      /'
    else
        ok "$name"
    fi
}

# 1. The Python self-test (its own per-case lines and totals).
echo "== check_pcap.py --self-test"
$PY "$CHECK" --self-test --keep "$DIR"
rc=$?
if [[ $rc -eq 0 ]]; then ok "check_pcap.py --self-test"; else fail "check_pcap.py --self-test (exit $rc)"; fi

# 2. The command line.
echo "== command line"
ALL_RC=0x00,0x01,0x02,0x03,0x04,0x05,0x06,0x07,0x08,0x09,0x0a,0x0b,0x0c,0x0d,0x0e,0x0f,0x10,0x11,0x12,0x13,0x14,0x16,0x17
expect_rc "good capture: exit 0 and summary line" 0 \
    '^30 frames checked, 26 opcodes, 0 problems$' -- \
    $PY "$CHECK" "$DIR/good.pcap" --expect "$DIR/good.jsonl" --require-opcodes "$ALL_RC"
expect_rc "good capture: --json report" 0 '"ok": true' -- \
    $PY "$CHECK" "$DIR/good.pcap" --json
if $PY "$CHECK" "$DIR/good.pcap" --json | $PY -c 'import json,sys; r=json.load(sys.stdin); sys.exit(0 if r["ok"] and r["frames"]==30 and r["arp_skipped"]==2 else 1)'; then
    ok "good capture: --json parses, 30 frames, 2 ARP"
else
    fail "good capture: --json parses, 30 frames, 2 ARP"
fi
expect_rc "--require-opcodes: missing opcode fails" 1 'required opcode 0x15 never appears' -- \
    $PY "$CHECK" "$DIR/good.pcap" --require-opcodes 0x06,0x15
sed '3s/"psn": 102/"psn": 103/' "$DIR/good.jsonl" >"$DIR/wrong.jsonl"
expect_rc "--expect: wrong PSN fails with frame number" 1 '^frame 4: psn: tshark says 0x66' -- \
    $PY "$CHECK" "$DIR/good.pcap" --expect "$DIR/wrong.jsonl"
for f in "$DIR"/bad*.pcap; do
    expect_rc "bad capture $(basename "$f"): exit 1, problem on frame 2" 1 '^frame 2: ' -- \
        $PY "$CHECK" "$f"
done
expect_rc "missing file: exit 2" 2 'no such file' -- $PY "$CHECK" "$DIR/nope.pcap"
expect_rc "not a pcap: exit 2" 2 'cannot read' -- $PY "$CHECK" "$DIR/good.jsonl"
expect_rc "scapy not importable (python -S): exit 2 with hint" 2 "$HINT" -- \
    $PY -S "$CHECK" "$DIR/good.pcap"
mkdir -p "$DIR/emptybin"
expect_rc "tshark not on PATH: exit 2 with hint" 2 "tshark not found.*$HINT" -- \
    env PATH="$DIR/emptybin" $PY "$CHECK" "$DIR/good.pcap"

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
