#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Generate a kernel .config for an architecture (scripts/arch/<arch>.sh):
# tinyconfig + fragments via the kernel's own merge_config.sh, then check
# that every requested symbol survived.  Records the architecture in
# <objdir>/wb-arch (image_of, arch_of in scripts/lib.sh).
# usage: config.sh <arch> <objdir> <fragment>... [-- extra make args]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
arch_load "$1"
obj=$(realpath -m "$2"); shift 2
frags=()
abs() { case "$1" in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
while [ $# -gt 0 ] && [ "$1" != "--" ]; do frags+=("$(abs "$1")"); shift; done
[ "${1:-}" = "--" ] && shift
# Extra arguments (LLVM=1 CC=...) come last and win.
margs=("${arch_kmake[@]}" "$@")
mkdir -p "$obj"
echo "$arch" > "$obj/wb-arch"
make -s -C "$tree" O="$obj" "${margs[@]}" tinyconfig >/dev/null
(cd "$tree" && KCONFIG_CONFIG="$obj/.config" scripts/kconfig/merge_config.sh -m -O "$obj" "$obj/.config" "${frags[@]}" >/dev/null)
make -s -C "$tree" O="$obj" "${margs[@]}" olddefconfig >/dev/null
# What the fragments ask for, the last fragment winning, as merge_config.sh does.
missing=0
declare -A want from
for f in "${frags[@]}"; do
	while IFS= read -r line; do
		sym=$(echo "$line" | grep -oE '^(# )?CONFIG_[A-Za-z0-9_]+( is not set|=.*)$' | grep -oE 'CONFIG_[A-Za-z0-9_]+' | head -1 || true)
		[ -n "$sym" ] || continue
		want[$sym]=$line
		from[$sym]=$(basename "$f")
	done < "$f"
done
for sym in "${!want[@]}"; do
	line=${want[$sym]}
	case "$line" in
	"# "*) grep -q "^$sym=" "$obj/.config" || continue ;;
	*) grep -qxF "$line" "$obj/.config" && continue ;;
	esac
	echo "config: requested '$line' (${from[$sym]}) but .config has: $(grep -E "^(# )?$sym[= ]" "$obj/.config" || echo 'nothing')" >&2
	missing=1
done
[ $missing = 0 ] || { echo "config: FAILED: symbols were dropped by olddefconfig (missing dependencies?)" >&2; exit 1; }
echo "config: $obj/.config ($arch) has every symbol of: ${frags[*]##*/}"
