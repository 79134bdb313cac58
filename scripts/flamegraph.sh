#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Draw a guest recording as perf's own flame graph (perf_flamegraph in
# lib.sh: out/flamegraph.html and out/stacks.folded) and a PNG screenshot of
# it taken with headless Chromium (skipped when chromium is not installed).
# usage: flamegraph.sh <perf.data> <outdir> <perf arguments...>, the
# arguments as perf_flamegraph takes them, e.g. 'kvm --guest
# --guestvmlinux=<vmlinux>'.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
perf_flamegraph "$@"
out=$(realpath -m "$2")
command -v chromium >/dev/null || { echo "flamegraph: no chromium, no screenshot"; exit 0; }
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
	--disable-background-networking --disable-component-update --disable-sync \
	--user-data-dir="$(mktemp -d)" --hide-scrollbars --window-size=1600,1000 \
	--virtual-time-budget=5000 --screenshot="$out/flamegraph.png" \
	"file://$out/flamegraph.html" > /dev/null 2>&1
echo "flamegraph: $out/flamegraph.png"
