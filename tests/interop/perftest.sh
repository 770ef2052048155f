#!/usr/bin/env bash
# One interop run of a perftest bandwidth tool (ib_write_bw, ib_read_bw, ib_send_bw,
# ib_atomic_bw on Linux soft-RoCE, rdma_rxe, in a QEMU guest) against `rocenic perftest`
# (the model NIC on the host, or the Verilated RTL engine with --backend rtl), cabled by a UDP wire on 127.0.0.1.
#
#   tests/interop/perftest.sh VERB [--rxe-server | --rxe-client] [-s SIZE] [-n ITERS] [-m MTU]
#                             [-A FETCH_AND_ADD|CMP_AND_SWAP] [--violate rkey|bounds]
#                             [--advertise-bad rkey|bounds]
#                             [--loss P] [--dup P] [--reorder P] [--seed N]
#                             [--backend model|rtl] [--rocenic PATH] [--timeout S] [--keep]
#                             [--shared-guest DIR]
#
# VERB: write, read, send or atomic (the guest runs ib_VERB_bw).
# --rxe-server (default): the guest runs `ib_VERB_bw -d rxe0 -x 1 -F ...` as the server,
#   rocenic is the client (connects through --hostfwd HP:18515, retrying while the guest boots).
# --rxe-client: rocenic is the server (started first, on 127.0.0.1:HP), the guest connects to
#   10.0.2.100:18515, forwarded to HP by --guestfwd.
# --violate (with --rxe-server; write/read): rocenic's one operation uses a wrong rkey or an
#   address past rxe's buffer and must complete REM_ACCESS_ERR; both sides still exit 0.
# --advertise-bad (with --rxe-client; write/read): rocenic shows rxe a wrong rkey or an
#   address past its buffer; rocenic must NAK and exit 0, rxe's tool must fail with a
#   completion error of status 10, IBV_WC_REM_ACCESS_ERR (the run passes only then).
# --loss/--dup/--reorder/--seed: seeded faults on OUR side of the wire, both directions
#   (rocenic perftest's options of the same names).
# --backend model|rtl: our device (default model). The RTL engine has no requester yet, so
#   `rocenic perftest --backend rtl` runs only as the server (with --rxe-client).
# --rocenic PATH: the rocenic binary (default: $ROCENIC, else target/release/rocenic).
# --keep: keep the artifacts directory after a success too.
# --shared-guest DIR: run the guest's side in the running guest of `shared-guest.sh start
#   DIR` (through its agent, guest_exec.py) instead of booting a guest for this run; its
#   ports are the guest's (DIR/env), and guest-console.log holds the part of the shared
#   console written during this run and the agent's transcript of the run.
#
# Ports are chosen free per run (UDP wire both ends, the TCP handshake port), so runs may go
# in parallel (not with --shared-guest: one run at a time per shared guest). Both sides must
# exit 0. The pcap of our wire (both directions), the guest's console log and both sides'
# output go to target/interop-artifacts/<run>/, kept (and printed) on failure. Exit status:
# 0 when both sides succeeded, else 1 (2: bad usage).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

mode=rxe-server size=65536 iters=20 mtu=1024 atomic=FETCH_AND_ADD verb=
negative=() expect_guest_fail=0
loss=0 dup=0 reorder=0 seed=1 keep=0 timeout=150 backend=model shared=
rocenic=${ROCENIC:-$root/target/release/rocenic}

usage() { sed -n '2,38p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2; }
while [ $# -gt 0 ]; do
    case $1 in
        --rxe-server) mode=rxe-server ;;
        --rxe-client) mode=rxe-client ;;
        -s|--size) size=$2; shift ;;
        -n|--iters) iters=$2; shift ;;
        -m|--mtu) mtu=$2; shift ;;
        -A|--atomic_type) atomic=$2; shift ;;
        --violate) negative=(--violate "$2"); shift ;;
        --advertise-bad) negative=(--advertise-bad "$2"); expect_guest_fail=1; shift ;;
        write|read|send|atomic) verb=$1 ;;
        --loss) loss=$2; shift ;;
        --dup) dup=$2; shift ;;
        --reorder) reorder=$2; shift ;;
        --seed) seed=$2; shift ;;
        --backend) backend=$2; shift ;;
        --rocenic) rocenic=$2; shift ;;
        --timeout) timeout=$2; shift ;;
        --shared-guest) shared=$2; shift ;;
        --keep) keep=1 ;;
        -h|--help) usage ;;
        *) echo "perftest.sh: unknown option $1" >&2; usage ;;
    esac
    shift
done

[ -n "$verb" ] || { echo "perftest.sh: which test? write, read, send or atomic" >&2; usage; }
if [ ! -x "$rocenic" ]; then
    echo "perftest.sh: no rocenic binary at $rocenic" \
         "(cargo build --release -p rocenic-cli --bin rocenic, or --rocenic PATH)" >&2
    exit 1
fi

if [ "$verb" = atomic ]; then
    name="perftest-$verb-$atomic-$mode-m$mtu-n$iters"
else
    name="perftest-$verb-$mode-s$size-m$mtu-n$iters"
fi
[ ${#negative[@]} -gt 0 ] && name+="${negative[0]#-}-${negative[1]}"
[ "$loss$dup$reorder" != 000 ] && name+="-loss$loss-dup$dup-reorder$reorder-seed$seed"
[ "$backend" != model ] && name+="-$backend"
art="$root/target/interop-artifacts/$name-$(date +%Y%m%d-%H%M%S)-$$"
mkdir -p "$art"

# rxe's active_mtu is the netdev MTU minus 80 (see tests/interop/README.md).
guest_mtu=1500
[ "$mtu" -gt 1024 ] && guest_mtu=4200
# Both programs take the same options; atomics are 8 bytes and take no -s.
tool_opts="-n $iters -m $mtu"
if [ "$verb" = atomic ]; then tool_opts+=" -A $atomic"; else tool_opts+=" -s $size"; fi
tool="ib_${verb}_bw -d rxe0 -x 1 -F $tool_opts"

me=perftest.sh
# shellcheck source=tests/interop/lib.sh
source "$here/lib.sh"

start=$(date +%s.%N)
for attempt in 1 2 3; do
guest_side
ours=("$rocenic" perftest "$verb" $tool_opts
      --wire "udp:$uport:$qport" --ip 10.0.0.1 --mac 02:00:00:00:00:01
      --backend "$backend" --pcap "$art/wire.pcap" --loss "$loss" --dup "$dup" --reorder "$reorder" --seed "$seed"
      "${negative[@]:+${negative[@]}}")

echo "perftest.sh: $name (wire guest $qport <-> rocenic $uport, handshake port $hport)"
if [ "$mode" = rxe-server ]; then
    guest+=(--cmd "$tool")
    ours+=(127.0.0.1 -p "$hport" --timeout "$timeout")
else
    guest+=(--cmd "$tool 10.0.2.100")
    ours+=(-p "$hport" --timeout "$timeout")
fi
run_pair "$mode"
port_taken $attempt && continue
break
done
secs=$(echo "$start $(date +%s.%N)" | awk '{printf "%.1f", $2 - $1}')

show_outputs
pass=0
if [ $expect_guest_fail = 1 ]; then
    # The negative test: rxe's tool must fail on a completion error, ours must not; the
    # error must be IBV_WC_REM_ACCESS_ERR (status 10), what our NAK asks for.
    if [ $ours_rc = 0 ] && [ $guest_rc != 0 ] && [ $guest_rc != 124 ] \
        && grep -qiE "completion with error" "$art/guest.out" \
        && grep -qE "Failed status 10:" "$art/guest.out"; then
        pass=1
    fi
elif [ $ours_rc = 0 ] && [ $guest_rc = 0 ]; then
    pass=1
fi
finish $pass
