# Shared by pingpong.sh and perftest.sh (sourced, not run): free ports, running our tool
# and the guest's side by side, the retry on a taken port, and the report of both outputs.
# The caller sets `me` (its name for messages), `art` (the artifacts directory), `mode`,
# `guest_mtu`, `timeout`, `shared` (--shared-guest DIR or empty) and the arrays `ours` (our
# tool's command line) and `guest` (see guest_side; started with setsid).

# Free ports: the guest's wire end, ours, and the TCP handshake port on the host (sets
# qport, uport, hport). Another process may take one before we bind it: such a run is
# retried with new ports (port_taken).
pick_ports() {
    read -r qport uport hport < <(python3 - <<'PY'
import socket
socks = []
for kind in (socket.SOCK_DGRAM, socket.SOCK_DGRAM, socket.SOCK_STREAM):
    s = socket.socket(socket.AF_INET, kind)
    s.bind(("127.0.0.1", 0))
    socks.append(s)
ports = [s.getsockname()[1] for s in socks]
for s in socks:
    s.close()  # before printing: the caller binds them as soon as it reads the line
print(*ports, flush=True)
PY
)
}

# Sets the ports (qport, uport, hport) and starts the array `guest`, the command of the
# guest's side less its --cmd (with the forward of a guest of its own): run-guest.sh booting
# a guest for this run, or with --shared-guest DIR guest_exec.py running it in that guest
# (whose ports are fixed at its boot: hport is the one forwarded for this run's mode).
guest_side() {
    if [ -z "$shared" ]; then
        pick_ports
        guest=(setsid "$here/run-guest.sh" --wire "$qport:$uport" --mtu "$guest_mtu"
               --log "$art/guest-console.log" --timeout "$timeout")
        # The handshake port: rxe serves on the guest's 18515, or ours on hport.
        if [ "$mode" = rxe-server ]; then
            guest+=(--hostfwd "$hport:18515")
        else
            guest+=(--guestfwd "18515:$hport")
        fi
        return
    fi
    [ -f "$shared/env" ] || { echo "$me: no shared guest in $shared (no $shared/env)" >&2; exit 1; }
    local hport_in hport_out aport console pgid
    # shellcheck disable=SC1091
    source "$shared/env"    # qport, uport and the locals
    if [ "$mode" = rxe-server ]; then hport=$hport_in; else hport=$hport_out; fi
    guest=(setsid python3 "$here/guest_exec.py" --port "$aport" --mtu "$guest_mtu"
           --console "$console" --log "$art/guest-console.log" --timeout "$timeout")
}

# Ends the guest run started with setsid (its whole process group: run-guest, timeout, QEMU).
stop_guest() { kill -TERM -- "-$1" 2>/dev/null || true; }

# Runs both sides and sets ours_rc and guest_rc. `run_pair rxe-server`: the guest's tool
# serves and ours connects (retrying while the guest boots); `run_pair rxe-client`: ours
# serves, started first, and the guest connects. Whichever side ends first with a failure
# ends the other (a failing guest tool would otherwise leave our client retrying until its
# timeout, a failing server leave the guest waiting); after a success the other side gets
# time for its closing steps.
run_pair() {
    set +e
    if [ "$1" = rxe-server ]; then
        "${guest[@]}" >"$art/guest.out" 2>&1 &
        gpid=$!
        "${ours[@]}" >"$art/rocenic.out" 2>&1 &
        opid=$!
    else
        "${ours[@]}" >"$art/rocenic.out" 2>&1 &
        opid=$!
        sleep 0.5
        if ! kill -0 $opid 2>/dev/null; then
            wait $opid
            ours_rc=$?
            guest_rc=-1
            : >"$art/guest.out"
            set -e
            return
        fi
        "${guest[@]}" >"$art/guest.out" 2>&1 &
        gpid=$!
    fi
    while kill -0 $opid 2>/dev/null && kill -0 $gpid 2>/dev/null; do sleep 0.2; done
    if ! kill -0 $opid 2>/dev/null; then
        wait $opid
        ours_rc=$?
        # let a failing guest tool print its reason, then end the guest
        [ $ours_rc != 0 ] && { sleep 2; stop_guest $gpid; }
        wait $gpid
        guest_rc=$?
    else
        wait $gpid
        guest_rc=$?
        if [ $guest_rc != 0 ]; then
            sleep 2
            kill $opid 2>/dev/null
        else
            # the guest is done; ours may still have its closing steps
            for _ in $(seq 1 50); do kill -0 $opid 2>/dev/null || break; sleep 0.2; done
            kill $opid 2>/dev/null
        fi
        wait $opid
        ours_rc=$?
    fi
    set -e
}

# Exit status 0 when the run failed because a port was taken meanwhile and attempt $1 of
# 3 may be retried with new ports (never with a shared guest, whose ports are fixed).
port_taken() {
    [ -z "$shared" ] || return 1
    if [ $ours_rc != 0 ] || [ $guest_rc != 0 ]; then
        if grep -qiE "address already in use|could not set up host forwarding|Failed to bind" \
                "$art/rocenic.out" "$art/guest.out" 2>/dev/null && [ "$1" -lt 3 ]; then
            echo "$me: a port was taken by another process; again with new ports"
            return 0
        fi
    fi
    return 1
}

# Prints both sides' output, indented.
show_outputs() {
    sed 's/^/  rxe:     /' "$art/guest.out"
    sed 's/^/  rocenic: /' "$art/rocenic.out"
}

# Ends the run: PASS (artifacts removed unless --keep) when $1 is 1, else FAIL with where
# the artifacts are. Needs name, secs, keep.
finish() {
    if [ "$1" = 1 ]; then
        echo "$me: PASS $name in $secs s"
        if [ $keep = 0 ]; then rm -rf "$art"; else echo "$me: artifacts in $art"; fi
        exit 0
    fi
    echo "$me: FAIL $name in $secs s: rocenic exit $ours_rc, guest exit $guest_rc" >&2
    echo "$me: artifacts (wire.pcap, guest-console.log, rocenic.out, guest.out) in $art" >&2
    exit 1
}
