#!/usr/bin/env bash
# Build (and cache) the QEMU guest of the interop tests: Debian 12's kernel package plus an
# initramfs holding busybox, the soft-RoCE (rdma_rxe) stack, rdma-core's tools, perftest and
# the shared libraries they need, all taken from Debian's apt packages (no root-fs image).
#
# usage: tests/interop/build-guest.sh [OPTIONS] [OUTDIR]
#
#   OUTDIR            where vmlinuz, initrd.gz and stamp go
#                     (default: $ROCENIC_GUEST_DIR, else <repo>/target/interop-guest)
#   --pkg NAME        one more Debian package to download and unpack into the staging root
#                     (repeatable; its files reach the guest only through --include)
#   --module NAME     one more kernel module to ship, with its dependencies (repeatable)
#   --boot-module NAME  like --module, and /init also loads it at boot (repeatable)
#   --include PATH    a path or glob inside the staging root to put into the guest, with the
#                     shared libraries its ELF files need (repeatable)
#   --file SRC:DST    a host file to put into the guest at DST (repeatable)
#   --force           rebuild even when the stamp matches
#   --print-stamp     print the stamp this build would have, then exit
#
# Output: OUTDIR/vmlinuz, OUTDIR/initrd.gz (cpio newc, gzip), OUTDIR/stamp, OUTDIR/vmlinux
# (the same kernel uncompressed, which QEMU boots ~9 s faster via PVH) and OUTDIR/build-args
# (this build's options, which run-guest.sh reuses when it rebuilds). The stamp lists the
# exact package versions, modules, includes and a hash of this script and guest-init.sh; when
# OUTDIR/stamp already equals it the build is skipped. Downloaded .debs are kept in
# OUTDIR/debs. Needs: apt-get, dpkg-deb, depmod/modprobe (kmod), cpio, gzip, readelf
# (`scripts/install-deps.sh qemu`). Run as root or as a user apt-get download works for.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)

# --- what goes into the guest (the general lists; extend with the options above) ---------
# Debian packages unpacked into the staging root. The kernel package is added by name
# (found through linux-image-amd64).
PKGS=(
    busybox-static
    libc6 libgcc-s1
    rdma-core ibverbs-providers ibverbs-utils perftest iproute2
    libibverbs1 librdmacm1 libnl-3-200 libnl-route-3-200
    libibumad3 libpci3 libudev1 zlib1g
    libmnl0 libbsd0 libmd0 libcap2
)
# Kernel modules shipped (with dependencies); BOOT_MODULES are loaded by /init at boot
# (the kernel command line `rocenic.modules=a,b` overrides that list).
BOOT_MODULES=(virtio_pci virtio_net crc32_generic ib_core ib_uverbs rdma_ucm rdma_rxe)
MODULES=(vfio vfio_pci vfio_iommu_type1)
# Paths (globs) in the staging root copied into the guest; ELF files bring their libraries.
INCLUDES=(
    '/usr/bin/ibv_*'
    '/usr/bin/ib_*_bw' '/usr/bin/ib_*_lat'
    /usr/bin/rdma
    /etc/libibverbs.d/rxe.driver
    /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so
)
FILES=()

OUTDIR=
force=0
print_stamp=0
ARGS=("$@")   # kept in OUTDIR/build-args so run-guest.sh can rebuild the same guest
while [[ $# -gt 0 ]]; do
    case $1 in
        -h|--help) awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "$0"; exit 0 ;;
        --pkg) PKGS+=("$2"); shift 2 ;;
        --module) MODULES+=("$2"); shift 2 ;;
        --boot-module) BOOT_MODULES+=("$2"); shift 2 ;;
        --include) INCLUDES+=("$2"); shift 2 ;;
        --file)
            [[ $2 == *:* ]] || { echo "build-guest: --file wants SRC:DST" >&2; exit 2; }
            FILES+=("$2"); shift 2 ;;
        --force) force=1; shift ;;
        --print-stamp) print_stamp=1; shift ;;
        -*) echo "build-guest: unknown option $1" >&2; exit 2 ;;
        *) [[ -z $OUTDIR ]] || { echo "build-guest: one OUTDIR only" >&2; exit 2; }
           OUTDIR=$1; shift ;;
    esac
done
OUTDIR=${OUTDIR:-${ROCENIC_GUEST_DIR:-$REPO/target/interop-guest}}

log() { echo "build-guest: $*" >&2; }
die() { echo "build-guest: error: $*" >&2; exit 1; }

for tool in apt-get apt-cache dpkg-deb depmod modprobe cpio gzip readelf sha256sum; do
    command -v "$tool" >/dev/null 2>&1 \
        || die "'$tool' not found: run 'bash scripts/install-deps.sh qemu'"
done

# --- resolve exact versions (this is what the cache stamp is made of) --------------------
kernel_pkg() {
    apt-cache depends linux-image-amd64 2>/dev/null \
        | awk '/Depends: linux-image-[0-9]/ && p == "" {p = $2} END {if (p != "") print p}'
}

KPKG=$(kernel_pkg || true)
if [[ -z $KPKG ]]; then
    log "apt lists look empty; running apt-get update"
    apt-get update -qq || die "apt-get update failed (no network?)"
    KPKG=$(kernel_pkg || true)
fi
[[ -n $KPKG ]] || die "cannot find the kernel package behind linux-image-amd64"

declare -A VER=()
# one apt-cache call for all (each call costs over a second)
while read -r p v; do VER[$p]=$v; done < <(
    apt-cache policy "$KPKG" "${PKGS[@]}" 2>/dev/null \
        | awk '/^[^ ].*:$/ {p = substr($0, 1, length($0) - 1); sub(/:amd64$/, "", p)}
               /^  Candidate:/ {print p, $2}')
for p in "$KPKG" "${PKGS[@]}"; do
    v=${VER[$p]:-}
    [[ -n $v && $v != "(none)" ]] || die "package '$p' has no installable version"
done
KVER=${KPKG#linux-image-}   # e.g. 6.1.0-57-amd64 (the modules directory name)

stamp_text() {
    echo "rocenic-interop-guest 1"
    echo "builder $(cat "$HERE/build-guest.sh" "$HERE/guest-init.sh" | sha256sum | cut -d' ' -f1)"
    echo "kernel $KPKG=${VER[$KPKG]}"
    local p m i f
    for p in "${PKGS[@]}"; do echo "pkg $p=${VER[$p]}"; done
    for m in "${BOOT_MODULES[@]}"; do echo "boot-module $m"; done
    for m in "${MODULES[@]}"; do echo "module $m"; done
    for i in "${INCLUDES[@]}"; do echo "include $i"; done
    for f in "${FILES[@]:+${FILES[@]}}"; do
        [[ -f ${f%%:*} ]] || die "--file: no such file ${f%%:*}"
        echo "file ${f#*:} $(sha256sum < "${f%%:*}" | cut -d' ' -f1)"
    done
}
STAMP=$(stamp_text)
if [[ $print_stamp -eq 1 ]]; then echo "$STAMP"; exit 0; fi

# one build at a time per OUTDIR (parallel test threads may all ask for the guest)
mkdir -p "$OUTDIR"
exec 9> "$OUTDIR/.lock"
if command -v flock >/dev/null 2>&1; then flock 9; fi

if [[ $force -eq 0 && -f $OUTDIR/stamp && -f $OUTDIR/vmlinuz && -f $OUTDIR/initrd.gz ]] \
    && [[ "$(cat "$OUTDIR/stamp")" == "$STAMP" ]]; then
    log "up to date: $OUTDIR (kernel $KVER)"
    exit 0
fi

T0=$SECONDS
mkdir -p "$OUTDIR/debs"
rm -f "$OUTDIR/stamp"

# --- download ---------------------------------------------------------------------------
deb_file() {  # the .deb apt-get download writes for package $1 at version $2
    local v=${2//:/%3a}
    ls "$OUTDIR/debs/$1_${v}_"*.deb 2>/dev/null | sed -n 1p
}
want=()
for p in "$KPKG" "${PKGS[@]}"; do
    [[ -n $(deb_file "$p" "${VER[$p]}") ]] || want+=("$p=${VER[$p]}")
done
if [[ ${#want[@]} -gt 0 ]]; then
    log "downloading ${#want[@]} packages"
    (cd "$OUTDIR/debs" && apt-get download -qq "${want[@]}" 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2) \
        || true
    for p in "$KPKG" "${PKGS[@]}"; do
        [[ -n $(deb_file "$p" "${VER[$p]}") ]] || die "download of $p=${VER[$p]} failed"
    done
fi

# --- unpack into a staging root -----------------------------------------------------------
WORK=$(mktemp -d "${TMPDIR:-/tmp}/rocenic-guest.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
STAGE=$WORK/stage      # every package unpacked (kernel included)
ROOT=$WORK/initramfs   # what the guest gets
mkdir -p "$STAGE" "$ROOT"
for p in "$KPKG" "${PKGS[@]}"; do
    dpkg-deb -x "$(deb_file "$p" "${VER[$p]}")" "$STAGE"
done
log "unpacked $((${#PKGS[@]} + 1)) packages ($((SECONDS - T0)) s)"

# Resolve a path inside the staging root, following symlinks (absolute ones included)
# relative to that root. Prints the root-relative path of the final file.
resolve() {
    local p=$1 n=0 t
    while [[ -L $STAGE$p ]]; do
        t=$(readlink "$STAGE$p")
        if [[ $t == /* ]]; then p=$t; else p=$(dirname "$p")/$t; fi
        p=$(realpath -m -s "$p")   # normalise . and .. without touching the host fs
        n=$((n + 1)); [[ $n -lt 40 ]] || die "symlink loop at $1"
    done
    [[ -e $STAGE$p ]] || return 1
    echo "$p"
}

# Put staged path $1 into the guest at the same path (as a regular file, links followed).
declare -A COPIED=()
put() {
    local dst=$1 src
    [[ -z ${COPIED[$dst]:-} ]] || return 0
    src=$(resolve "$dst") || die "not in the staged packages: $dst"
    mkdir -p "$ROOT$(dirname "$dst")"
    rm -f "$ROOT$dst"   # never write through a symlink (it would point into the host)
    cp -L "$STAGE$src" "$ROOT$dst"
    COPIED[$dst]=1
    if [[ -f $ROOT$dst ]] && [[ $(head -c4 "$ROOT$dst" | od -An -c | tr -d ' ') == 177ELF ]]; then
        elf_deps "$dst"
    fi
}

LIBDIRS=(/lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu /lib64 /usr/lib64 /lib /usr/lib)
elf_deps() {
    local f=$1 interp so d found
    interp=$(readelf -lW "$ROOT$f" 2>/dev/null | sed -n 's/.*Requesting program interpreter: \(.*\)\]/\1/p')
    [[ -z $interp ]] || put "$interp"
    for so in $(readelf -dW "$ROOT$f" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
        found=
        for d in "${LIBDIRS[@]}"; do
            if resolve "$d/$so" >/dev/null; then found=$d/$so; break; fi
        done
        [[ -n $found ]] || die "$so (needed by $f) is in none of the staged packages: add the package that ships it with --pkg"
        put "$found"
    done
}

# the selected tools, plugins and configuration
shopt -s nullglob
for pat in "${INCLUDES[@]}"; do
    matches=("$STAGE"$pat)
    [[ ${#matches[@]} -gt 0 ]] || die "--include '$pat' matches nothing in the staged packages"
    for m in "${matches[@]}"; do
        if [[ -d $m && ! -L $m ]]; then
            while IFS= read -r -d '' f; do put "${f#"$STAGE"}"; done \
                < <(find "$m" \( -type f -o -type l \) -print0)
        else
            put "${m#"$STAGE"}"
        fi
    done
done
shopt -u nullglob
for f in "${FILES[@]:+${FILES[@]}}"; do
    mkdir -p "$ROOT$(dirname "${f#*:}")"
    rm -f "$ROOT${f#*:}"
    cp -L "${f%%:*}" "$ROOT${f#*:}"
    if [[ $(head -c4 "$ROOT${f#*:}" | od -An -c | tr -d ' ') == 177ELF ]]; then
        elf_deps "${f#*:}"
    fi
done
# busybox and its applets (symlinks, never over a tool put there above)
put /bin/busybox
while read -r applet; do
    [[ -e $ROOT/$applet || -L $ROOT/$applet ]] && continue
    mkdir -p "$ROOT/$(dirname "$applet")"
    ln -s /bin/busybox "$ROOT/$applet"
done < <("$STAGE/bin/busybox" --list-full)

# --- kernel and modules ------------------------------------------------------------------
cp "$STAGE/boot/vmlinuz-$KVER" "$OUTDIR/vmlinuz.new"
# The uncompressed ELF kernel too: QEMU boots it through its PVH entry point, which skips
# the in-guest decompression of the bzImage (about 9 s of the boot under TCG).
extract_vmlinux() {
    local img=$1 out=$2 magic tool off
    for magic in 'xz:\xfd7zXZ\x00' 'zstd:\x28\xb5\x2f\xfd' 'gzip:\x1f\x8b\x08'; do
        tool=${magic%%:*}
        command -v "$tool" >/dev/null 2>&1 || continue
        for off in $(LC_ALL=C grep -aobUP "${magic#*:}" "$img" | cut -d: -f1 | sed -n 1,3p); do
            tail -c +$((off + 1)) "$img" | "$tool" -dc 2>/dev/null > "$out" || true
            if [[ $(head -c4 "$out" | od -An -c | tr -d ' ') == 177ELF ]] \
                && [[ $(readelf -nW "$out" 2>/dev/null) == *Xen* ]]; then
                return 0
            fi
        done
    done
    rm -f "$out"
    return 1
}
if extract_vmlinux "$OUTDIR/vmlinuz.new" "$WORK/vmlinux"; then
    mv "$WORK/vmlinux" "$OUTDIR/vmlinux.new"
else
    log "note: no PVH-bootable vmlinux could be extracted; run-guest will boot vmlinuz (slower)"
    rm -f "$OUTDIR/vmlinux"
fi
MODDIR=/lib/modules/$KVER
depmod -b "$STAGE" "$KVER"
declare -A KO=()
ko_order=()
for m in "${BOOT_MODULES[@]}" "${MODULES[@]}"; do
    deps=$(modprobe -d "$STAGE" -S "$KVER" --show-depends "$m" 2>&1) \
        || die "module $m: $deps"
    while read -r kind path _; do
        [[ $kind == insmod ]] || continue   # 'builtin X' lines need nothing
        rel=${path#"$STAGE"}
        [[ -n ${KO[$rel]:-} ]] && continue
        KO[$rel]=1; ko_order+=("$rel")
    done <<< "$deps"
done
for rel in "${ko_order[@]}"; do
    mkdir -p "$ROOT$(dirname "$rel")"
    cp "$STAGE$rel" "$ROOT$rel"
done
cp "$STAGE$MODDIR"/modules.order "$STAGE$MODDIR"/modules.builtin \
   "$STAGE$MODDIR"/modules.builtin.modinfo "$ROOT$MODDIR/"
depmod -b "$ROOT" "$KVER"
log "kernel $KVER, ${#ko_order[@]} modules"

# --- /init and its configuration ---------------------------------------------------------
install -m 0755 "$HERE/guest-init.sh" "$ROOT/init"
mkdir -p "$ROOT/etc/rocenic" "$ROOT/proc" "$ROOT/sys" "$ROOT/dev" "$ROOT/tmp" "$ROOT/run" \
         "$ROOT/root" "$ROOT/var/run"
printf '%s\n' "${BOOT_MODULES[@]}" > "$ROOT/etc/rocenic/boot-modules"
echo "$STAMP" > "$ROOT/etc/rocenic/stamp"
printf '/lib/x86_64-linux-gnu\n/usr/lib/x86_64-linux-gnu\n' > "$ROOT/etc/ld.so.conf"
echo 'root:x:0:0:root:/root:/bin/sh' > "$ROOT/etc/passwd"
echo 'root:x:0:' > "$ROOT/etc/group"
printf '127.0.0.1 localhost\n' > "$ROOT/etc/hosts"
if command -v ldconfig >/dev/null 2>&1; then ldconfig -r "$ROOT" 2>/dev/null || true; fi

# --- pack --------------------------------------------------------------------------------
(cd "$ROOT" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) \
    | gzip -6 > "$OUTDIR/initrd.gz.new"
mv "$OUTDIR/vmlinuz.new" "$OUTDIR/vmlinuz"
if [[ -f $OUTDIR/vmlinux.new ]]; then mv "$OUTDIR/vmlinux.new" "$OUTDIR/vmlinux"; fi
mv "$OUTDIR/initrd.gz.new" "$OUTDIR/initrd.gz"
# the options of this build, without OUTDIR and the one-shot flags
: > "$OUTDIR/build-args"
skip_next=0
for a in "${ARGS[@]:+${ARGS[@]}}"; do
    case $a in
        --force|--print-stamp) continue ;;
        --pkg|--module|--boot-module|--include|--file) printf '%s\n' "$a" >> "$OUTDIR/build-args"; skip_next=1; continue ;;
    esac
    if [[ $skip_next -eq 1 ]]; then printf '%s\n' "$a" >> "$OUTDIR/build-args"; skip_next=0; fi
done
echo "$STAMP" > "$OUTDIR/stamp"
log "built $OUTDIR: vmlinuz $(du -h "$OUTDIR/vmlinuz" | cut -f1), initrd.gz $(du -h "$OUTDIR/initrd.gz" | cut -f1), $(find "$ROOT" -type f | wc -l) files, $((SECONDS - T0)) s"
