#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Draw a guest recording as perf's own flame graph (scripts/python/flamegraph.py
# with the d3-flame-graph template from npm), write the folded stacks
# (stackcollapse.py) and a PNG screenshot taken with headless Chromium.
# usage: flamegraph.sh <perf.data.guest> <guest vmlinux> <outdir>
# (The screenshot is skipped when chromium is not installed.)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
data=$(realpath "$1") vmlinux=$(realpath "$2") out=$(realpath -m "$3")
perf=$top/build/perf/perf
scripts=$top/build/linux/tools/perf/scripts/python
template=$top/node_modules/d3-flame-graph/dist/templates/d3-flamegraph-base.html
mkdir -p "$out"
[ -f "$template" ] || (cd "$top" && npm install --no-audit --no-fund --silent) ||
	{ echo "flamegraph: npm install of package.json (d3-flame-graph) FAILED" >&2; exit 1; }
export PERF_EXEC_PATH=$top/build/linux/tools/perf
# flamegraph.py puts 'perf report --header-only' in the page, run from the
# current directory on the default file name: give it this perf as 'perf'
# and the recording as ./perf.data.
export PATH=$top/build/perf:$PATH
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ln -s "$data" "$work/perf.data"
cd "$work"
"$perf" kvm --guest --guestvmlinux="$vmlinux" -i "$data" script -s "$scripts/flamegraph.py" \
	-- --template "$template" -o "$out/flamegraph.html" 2> "$out/flamegraph.err" ||
	{ cat "$out/flamegraph.err"; exit 1; }
"$perf" kvm --guest --guestvmlinux="$vmlinux" -i "$data" script -s "$scripts/stackcollapse.py" \
	> "$out/stacks.folded" 2>> "$out/flamegraph.err"
echo "flamegraph: $out/flamegraph.html ($(du -h "$out/flamegraph.html" | cut -f1)), $out/stacks.folded ($(wc -l < "$out/stacks.folded") stacks)"
command -v chromium >/dev/null || { echo "flamegraph: no chromium, no screenshot"; exit 0; }
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
	--disable-background-networking --disable-component-update --disable-sync \
	--user-data-dir="$(mktemp -d)" --hide-scrollbars --window-size=1600,1000 \
	--virtual-time-budget=5000 --screenshot="$out/flamegraph.png" \
	"file://$out/flamegraph.html" > /dev/null 2>&1
echo "flamegraph: $out/flamegraph.png"
