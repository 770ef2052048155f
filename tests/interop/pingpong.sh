#!/usr/bin/env bash
# One interop run of ibv_rc_pingpong (Linux soft-RoCE, rdma_rxe, in a QEMU guest) against
# `rocenic pingpong` (the model NIC on the host, or the RTL engine with --backend rtl), cabled by a UDP wire on 127.0.0.1.
#
#   tests/interop/pingpong.sh [--rxe-server | --rxe-client] [-s SIZE] [-n ITERS] [-m MTU] [-c]
#                             [--loss P] [--dup P] [--reorder P] [--seed N]
#                             [--backend model|rtl] [--rocenic PATH] [--timeout S] [--keep]
#                             [--shared-guest DIR]
#
# --rxe-server (default): the guest runs `ibv_rc_pingpong -d rxe0 -g 1 ...` as the server,
#   rocenic is the client (connects through --hostfwd HP:18515, retrying while the guest boots).
# --rxe-client: rocenic is the server (started first, on 127.0.0.1:HP), the guest connects to
#   10.0.2.100:18515, forwarded to HP by --guestfwd.
# --loss/--dup/--reorder/--seed: seeded faults on OUR side of the wire, both directions
#   (rocenic pingpong's options of the same names).
# --backend model|rtl: our device (default model). The RTL engine has no requester yet and
#   both roles of a ping-pong send: `rocenic pingpong --backend rtl` refuses at once.
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

mode=rxe-server size=4096 iters=20 mtu=1024 chk=0
loss=0 dup=0 reorder=0 seed=1 keep=0 timeout=150 backend=model shared=
rocenic=${ROCENIC:-$root/target/release/rocenic}

usage() { sed -n '2,29p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2; }
while [ $# -gt 0 ]; do
    case $1 in
        --rxe-server) mode=rxe-server ;;
        --rxe-client) mode=rxe-client ;;
        -s|--size) size=$2; shift ;;
        -n|--iters) iters=$2; shift ;;
        -m|--mtu) mtu=$2; shift ;;
        -c|--chk) chk=1 ;;
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
        *) echo "pingpong.sh: unknown option $1" >&2; usage ;;
    esac
    shift
done

if [ ! -x "$rocenic" ]; then
    echo "pingpong.sh: no rocenic binary at $rocenic" \
         "(cargo build --release -p rocenic-cli --bin rocenic, or --rocenic PATH)" >&2
    exit 1
fi

name="pingpong-$mode-s$size-m$mtu-n$iters"
[ "$chk" = 1 ] && name+="-c"
[ "$loss$dup$reorder" != 000 ] && name+="-loss$loss-dup$dup-reorder$reorder-seed$seed"
[ "$backend" != model ] && name+="-$backend"
art="$root/target/interop-artifacts/$name-$(date +%Y%m%d-%H%M%S)-$$"
mkdir -p "$art"

# rxe's active_mtu is the netdev MTU minus 80 (see tests/interop/README.md).
guest_mtu=1500
[ "$mtu" -gt 1024 ] && guest_mtu=4200
tool_opts="-s $size -n $iters -m $mtu"
[ "$chk" = 1 ] && tool_opts+=" -c"

me=pingpong.sh
# shellcheck source=tests/interop/lib.sh
source "$here/lib.sh"

start=$(date +%s.%N)
for attempt in 1 2 3; do
guest_side
ours=("$rocenic" pingpong $tool_opts
      --wire "udp:$uport:$qport" --ip 10.0.0.1 --mac 02:00:00:00:00:01
      --backend "$backend" --pcap "$art/wire.pcap" --loss "$loss" --dup "$dup" --reorder "$reorder" --seed "$seed")

echo "pingpong.sh: $name (wire guest $qport <-> rocenic $uport, handshake port $hport)"
if [ "$mode" = rxe-server ]; then
    guest+=(--cmd "ibv_rc_pingpong -d rxe0 -g 1 $tool_opts")
    ours+=(127.0.0.1 -p "$hport" --timeout "$timeout")
else
    guest+=(--cmd "ibv_rc_pingpong -d rxe0 -g 1 $tool_opts 10.0.2.100")
    ours+=(-p "$hport" --timeout "$timeout")
fi
run_pair "$mode"
port_taken $attempt && continue
break
done
secs=$(echo "$start $(date +%s.%N)" | awk '{printf "%.1f", $2 - $1}')

show_outputs
pass=0
[ $ours_rc = 0 ] && [ $guest_rc = 0 ] && pass=1
finish $pass
