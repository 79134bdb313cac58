#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Configure and build a kernel from build/linux with ccache.
# usage: build-kernel.sh <name> <fragment>...   -> build/obj-<name>/arch/x86/boot/bzImage
set -euo pipefail
. "$(dirname "$0")/lib.sh"
name=$1; shift
obj=$top/build/obj-$name
frags=()
for f in "$@"; do frags+=("$top/$f"); done
"$top/scripts/config.sh" "$obj" "${frags[@]}" -- CC="ccache gcc"
if ! make -s -C "$top/build/linux" O="$obj" CC="ccache gcc" -j"$(nproc)" bzImage > "$obj/build.log" 2>&1; then
	grep -E 'error|Error' "$obj/build.log" | head -20 >&2
	echo "kernel: build of $name FAILED (see $obj/build.log)" >&2
	exit 1
fi
grep -E 'warning:' "$obj/build.log" | head -20 || true
echo "kernel: $obj/arch/x86/boot/bzImage"
