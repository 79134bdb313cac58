#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Draw a guest recording as perf's own flame graph (perf_flamegraph in
# lib.sh: out/flamegraph.html and out/stacks.folded) and a PNG screenshot of
# it taken with headless Chromium (skipped when chromium is not installed).
# usage: flamegraph.sh <perf.data.guest> <guest vmlinux> <outdir>
set -euo pipefail
. "$(dirname "$0")/lib.sh"
perf_flamegraph "$1" "$2" "$3"
out=$(realpath -m "$3")
command -v chromium >/dev/null || { echo "flamegraph: no chromium, no screenshot"; exit 0; }
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
	--disable-background-networking --disable-component-update --disable-sync \
	--user-data-dir="$(mktemp -d)" --hide-scrollbars --window-size=1600,1000 \
	--virtual-time-budget=5000 --screenshot="$out/flamegraph.png" \
	"file://$out/flamegraph.html" > /dev/null 2>&1
echo "flamegraph: $out/flamegraph.png"
