#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Generate a kernel .config: tinyconfig + fragments via the kernel's own
# merge_config.sh, then check that every requested symbol survived.
# usage: config.sh <objdir> <fragment>... [-- make args]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
tree=$top/build/linux
obj=$(realpath -m "$1"); shift
frags=()
abs() { case "$1" in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
while [ $# -gt 0 ] && [ "$1" != "--" ]; do frags+=("$(abs "$1")"); shift; done
[ "${1:-}" = "--" ] && shift
mkdir -p "$obj"
make -s -C "$tree" O="$obj" "$@" tinyconfig >/dev/null
(cd "$tree" && KCONFIG_CONFIG="$obj/.config" scripts/kconfig/merge_config.sh -m -O "$obj" "$obj/.config" "${frags[@]}" >/dev/null)
make -s -C "$tree" O="$obj" "$@" olddefconfig >/dev/null
missing=0
for f in "${frags[@]}"; do
	while IFS= read -r line; do
		case "$line" in
		CONFIG_*=*) want=$line ;;
		"# CONFIG_"*" is not set") want=$line ;;
		*) continue ;;
		esac
		if ! grep -qxF "$want" "$obj/.config"; then
			case "$want" in
			"# "*) sym=${want#\# }; sym=${sym%% *}
			       grep -q "^$sym=" "$obj/.config" || continue ;;
			esac
			sym=$(echo "$want" | grep -o 'CONFIG_[A-Za-z0-9_]*')
			echo "config: requested '$want' ($(basename "$f")) but .config has: $(grep -E "^(# )?$sym[= ]" "$obj/.config" || echo 'nothing')" >&2
			missing=1
		fi
	done < "$f"
done
[ $missing = 0 ] || { echo "config: FAILED: symbols were dropped by olddefconfig (missing dependencies?)" >&2; exit 1; }
echo "config: $obj/.config has every symbol of: ${frags[*]##*/}"
