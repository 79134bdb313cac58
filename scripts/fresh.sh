#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# 'make fresh' and CI: the README's two commands, 'make test' and then
# 'make demo', on a fresh Debian 12 machine.  Makes a minimal Debian 12 root
# (mmdebstrap, variant minbase, plus 'make' to start), clones the checkout's
# HEAD into it and runs both commands there, so every package they need must
# come from scripts/deps.sh.  From this machine it carries in only caches:
# the ccache directory and apt's downloaded .deb files.
# Ends with the test command's 'N passed, N failed' line; exits non-zero if
# either command failed.
# usage: fresh.sh [command]: with a command (e.g. 'make demo'), only that
# one runs in the root.
# Environment: FRESH_ROOT (default /var/tmp/perf-kvm-fresh, rebuilt at each
# run), APT_CACHE (default /var/cache/perf-kvm-apt), CCACHE_DIR.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
root=${FRESH_ROOT:-/var/tmp/perf-kvm-fresh}
apt_cache=${APT_CACHE:-/var/cache/perf-kvm-apt}
mirror=http://deb.debian.org
src=/src/perf-kvm	# the clone, inside the root: not the checkout's path
t0=$(date +%s)
took() { echo "fresh: $1: $(( $(date +%s) - $2 )) s"; }

[ "$(id -u)" = 0 ] || { echo "fresh: must run as root (mmdebstrap, chroot, mounts)" >&2; exit 1; }
command -v mmdebstrap >/dev/null || {
	echo "fresh: installing mmdebstrap on this machine"
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap >/dev/null
}
[ -z "$(git -C "$top" status --porcelain)" ] ||
	echo "fresh: WARNING: uncommitted changes are not tested: the root gets a clone of HEAD" >&2

mounts() { findmnt -rn -o TARGET | grep "^$root/" | sort -r || true; }
unmount() { local m; for m in $(mounts); do umount -l "$m"; done; }
unmount
trap unmount EXIT
[ -z "$(mounts)" ] || { echo "fresh: cannot unmount what is mounted in $root" >&2; exit 1; }
rm -rf --one-file-system "$root"
mkdir -p "$apt_cache" "$CCACHE_DIR" "$top/build"

# 1. The root: minbase and make; apt's .deb files come from (and go back
# to) the cache.
s=$(date +%s)
mmdebstrap --quiet --variant=minbase --include=make \
	--skip=download/empty --skip=essential/unlink \
	--setup-hook='mkdir -p "$1/var/cache/apt/archives"' \
	--setup-hook="mount --bind $apt_cache \"\$1/var/cache/apt/archives\"" \
	--customize-hook='umount "$1/var/cache/apt/archives"' \
	bookworm "$root" \
	"deb $mirror/debian bookworm main" \
	"deb $mirror/debian bookworm-updates main" \
	"deb $mirror/debian-security bookworm-security main"
# This machine's network: its resolver, and the local CAs its TLS proxy
# needs (ca-certificates, from deps.sh, adds them to the root's store).
cp /etc/resolv.conf "$root/etc/resolv.conf"
cp -r /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/" 2>/dev/null || true
git clone -q "$top" "$root$src"
took "making the Debian 12 root ($(du -sh "$root" | cut -f1), HEAD $(git -C "$top" rev-parse --short HEAD))" "$s"

# 2. What a machine has: /proc, /sys, /dev, /dev/shm (Chromium), a tmpfs
# /tmp; and the caches.
mount -t proc proc "$root/proc"
mount -t sysfs sysfs "$root/sys"
mount --rbind /dev "$root/dev"
mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm"
mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
mount --bind "$apt_cache" "$root/var/cache/apt/archives"
mkdir -p "$root/root/.cache/perf-kvm-ccache"
mount --bind "$CCACHE_DIR" "$root/root/.cache/perf-kvm-ccache"

in_root() { chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
	PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	/bin/bash -c "cd $src && $1"; }
echo "fresh: ccache at $CCACHE_DIR: $(du -sh "$CCACHE_DIR" | cut -f1)"

# 3. The README's commands (each prints its own ccache hit rate).
if [ $# -gt 0 ]; then
	s=$(date +%s)
	rc=0
	in_root "$*" 2>&1 | tee "$top/build/fresh-cmd.log" || rc=$?
	took "$* (rc $rc)" "$s"
	grep -ho 'ccache: [0-9]* hits.*' "$top/build/fresh-cmd.log" | sed 's/^/fresh: /' || true
	took "total" "$t0"
	exit $rc
fi
s=$(date +%s)
rc_test=0
in_root 'make test' 2>&1 | tee "$top/build/fresh-test.log" || rc_test=$?
took "make test (rc $rc_test)" "$s"
s=$(date +%s)
rc_demo=0
in_root 'make demo' 2>&1 | tee "$top/build/fresh-demo.log" || rc_demo=$?
took "make demo (rc $rc_demo)" "$s"
[ -s "$root$src/out/flamegraph.err" ] && { echo "fresh: out/flamegraph.err is not empty:"; cat "$root$src/out/flamegraph.err"; rc_demo=1; }
rm -rf "$top/build/fresh-out" && cp -r "$root$src/out" "$top/build/fresh-out" 2>/dev/null || true

grep -ho 'ccache: [0-9]* hits.*' "$top/build/fresh-test.log" "$top/build/fresh-demo.log" | sed 's/^/fresh: /' || true
took "total" "$t0"
echo "fresh: make test $([ $rc_test = 0 ] && echo passed || echo FAILED), make demo $([ $rc_demo = 0 ] && echo passed || echo FAILED)"
# What failed, last, where a CI log's tail shows it: the test command's
# failed checks and guest_hostile's reasons for a failed case.
grep -E '^  not ok|^#   FAIL' "$top/build/fresh-test.log" | sed 's/^ */fresh: /' || true
grep -E '^[0-9]+ passed, [0-9]+ failed' "$top/build/fresh-test.log" | tail -1 || echo "0 passed, 1 failed (make test printed no summary)"
[ $rc_test = 0 ] && [ $rc_demo = 0 ]
