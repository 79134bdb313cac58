#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Configure and build a kernel from build/linux with ccache, for an
# architecture (scripts/arch/<arch>.sh).
# usage: build-kernel.sh <arch> <name> <fragment>...   -> image_of <name>
set -euo pipefail
. "$(dirname "$0")/lib.sh"
arch_load "$1"
name=$2; shift 2
obj=$(obj_of "$name")
frags=()
for f in "$@"; do frags+=("$top/$f"); done
"$top/scripts/config.sh" "$arch" "$obj" "${frags[@]}"
if ! make -s -C "$tree" O="$obj" "${arch_kmake[@]}" -j"$(nproc)" "$(basename "$arch_image")" > "$obj/build.log" 2>&1; then
	grep -E 'error|Error' "$obj/build.log" | head -20 >&2
	echo "kernel: build of $name FAILED (see $obj/build.log)" >&2
	exit 1
fi
grep -E 'warning:' "$obj/build.log" | head -20 || true
echo "kernel: $(image_of "$name")"
