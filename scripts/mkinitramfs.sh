#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Pack the test VM's initramfs: static busybox, perf, the KVM selftests,
# the workbench's guest programs and the in-VM scenario scripts, with the
# shared libraries they need.
# usage: mkinitramfs.sh <output.cpio.gz>
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=$1
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT

mkdir -p "$root"/{bin,sbin,dev,proc,sys,tmp,out,tests,wb,selftests,lib,lib64,usr/lib,etc}
cp /bin/busybox "$root/bin/busybox"
cp "$top/tests/vm/init" "$root/init"
cp "$top"/tests/vm/*.sh "$top/tests/selftests.list" "$root/tests/"
cp "$top/build/perf/perf" "$root/bin/perf"
find "$top/build/selftests/wb" -type f -perm -u+x -exec cp {} "$root/wb/" \;
(cd "$top/build/selftests" && grep -v '^#' "$top/tests/selftests.list" | sed '/^$/d' |
	while read -r t _; do mkdir -p "$root/selftests/$(dirname "$t")"; cp "$t" "$root/selftests/$t"; done)
# Shared libraries of every dynamic binary, at their own paths.
find "$root" -type f -perm -u+x -exec sh -c 'file -b "$1" | grep -q "dynamically linked"' _ {} \; -print |
	xargs -r ldd 2>/dev/null | grep -o '/[^ ]*\.so[^ ]*' | sort -u |
	while read -r lib; do mkdir -p "$root$(dirname "$lib")"; cp -L "$lib" "$root$lib"; done
chmod +x "$root/init" "$root"/tests/*.sh
(cd "$root" && find . | sort | cpio -o -H newc --quiet --reproducible | gzip -1) > "$out"
echo "initramfs: $out ($(du -h "$out" | cut -f1))"
