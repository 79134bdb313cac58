#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Does a fix's test fail without the fix?  Builds the test kernel (same
# fragments as 'make kernel') from the series with the commits whose
# subject matches each <pattern> reverted, boots it with the test VM's
# initramfs and runs <scenario> (default: selftests).  The VM's results
# land in build/unfixed; the tree is back on its branch afterwards.
# Needs a 'make test' first (the initramfs and the selftests it holds).
# usage: unfixed.sh <subject pattern>... [-- <scenario,...>]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
pats=() scenario=selftests
while [ $# -gt 0 ]; do
	[ "$1" = -- ] && { scenario=${2:?scenario}; break; }
	pats+=("$1"); shift
done
[ ${#pats[@]} -gt 0 ] || { echo "usage: unfixed.sh <subject pattern>... [-- <scenario,...>]" >&2; exit 2; }
initrd=$top/build/initramfs-demo.cpio.gz
[ -f "$initrd" ] || { echo "unfixed: $initrd missing: run 'make test' first" >&2; exit 1; }
[ -z "$(git -C "$tree" status --porcelain)" ] || { echo "unfixed: build/linux has uncommitted changes" >&2; exit 1; }
branch=$(git -C "$tree" symbolic-ref --short HEAD)
# A revert that conflicts stops the run; the tree goes back to its branch.
trap 'git -C "$tree" revert --abort 2>/dev/null; git -C "$tree" checkout -q "$branch"' EXIT
git -C "$tree" checkout -q -B unfixed "$branch"
for p in "${pats[@]}"; do
	c=$(git -C "$tree" log --format=%h --grep="$p" base.."$branch")
	[ "$(echo "$c" | wc -w)" = 1 ] || { echo "unfixed: '$p' matches $(echo "$c" | wc -w) commits, not one" >&2; exit 1; }
	echo "unfixed: reverting $(git -C "$tree" log -1 --format='%h %s' "$c")"
	git -C "$tree" revert --no-edit "$c" > /dev/null
done
# Start from the test kernel's objects: only what the reverts touch is
# rebuilt (kbuild's commands hold no path of the object directory).
[ -d "$(obj_of unfixed)" ] || [ ! -d "$(obj_of test)" ] || cp -a "$(obj_of test)" "$(obj_of unfixed)"
"$top/scripts/build-kernel.sh" x86_64 unfixed configs/host.config configs/kasan.config configs/trace.config
"$top/scripts/run-vm.sh" unfixed "$initrd" "$top/build/unfixed" 1500 "$scenario"
echo "unfixed: results in build/unfixed (console.log, $scenario.log)"
