# SPDX-License-Identifier: GPL-2.0
# Sourced by every workbench script: where things are, and the build
# environment shared by every compiler run.
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tree=$top/build/linux
# ccache: the cache lives outside the checkout (CI's clone and a fresh root
# reach the same one), and paths under the checkout are hashed relative to
# it, so a clone in another folder hits the entries a developer's made.
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/perf-kvm-ccache}
export CCACHE_BASEDIR=$top CCACHE_NOHASHDIR=1
export KBUILD_BUILD_TIMESTAMP="2000-01-01" KBUILD_BUILD_USER=workbench KBUILD_BUILD_HOST=workbench
# Large enough for every kernel the workbench builds (the default 5 GB is not).
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-25G}

# ccache_counts: "<hits> <misses>" of the cache until now.
ccache_counts() {
	ccache --print-stats 2>/dev/null | awk -F'\t' '
		$1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" { h += $2 }
		$1 == "cache_miss" { m = $2 }
		END { print h + 0, m + 0 }'
}
# ccache_since <hits> <misses>: the hits and misses since ccache_counts said so.
ccache_since() {
	local now
	read -r -a now <<< "$(ccache_counts)"
	awk -v h=$(( now[0] - $1 )) -v m=$(( now[1] - $2 )) 'BEGIN {
		printf "ccache: %d hits, %d misses", h, m
		if (h + m) printf " (%.1f %% hits)", 100 * h / (h + m)
		printf "\n" }'
}

# sysmap_of <bzImage>: the System.map of the kernel build it came from.
sysmap_of() { echo "${1%/arch/*/boot/*}/System.map"; }
