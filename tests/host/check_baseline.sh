#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The baseline scenario: its guest callchains in the raw dump (perf_dump)
# (check_baseline.py: exact frames, exact markers), then perf tools on the
# recording: 'perf kvm script' and 'perf kvm report -g' resolve the guest
# frames with the guest binary's symbols and print them in the right order,
# and perf's flame graph script draws them.  Also runs perf's own guest
# callchain test.
# usage: check_baseline.sh <results dir> <checkout>
res=$1 top=$2
. "$top/scripts/lib.sh"
. "$top/tests/lib/tap.sh"
perf=$top/build/perf/perf data=$res/baseline.data elf=$top/build/selftests/wb/guest_spin
# An arm64 VM's (its arch file) guest program is the arm64 build.
[ "$(cat "$res/arch" 2>/dev/null)" = aarch64 ] && elf=$top/build/selftests-arm64/wb/guest_spin
check() { local what=$1; shift; tap_check "perf tools: $what" "$@"; }
sed 's/^/# /' "$res/baseline.log"
# Stock 6.12 (no series in patches/) must record no guest frame at all.
expect=stock
ls "$top"/patches/0*.patch >/dev/null 2>&1 && expect=frames
perf_dump "$data" "$res/baseline.D" || tap_not_ok "baseline: no raw dump of its recording"
"$(dirname "$0")/check_baseline.py" "$res/baseline.D" "$elf" "$expect" || tap_failed=$((tap_failed + 1))
for suite in 'Guest callchains' "Guest samples on the guest's current task"; do
	ptest=$("$perf" test "$suite" 2>&1)
	echo "$ptest" | sed 's/^/    /'
	check "perf test '$suite'" grep -q ": Ok$" <<< "$ptest"
done

script=$("$perf" kvm --guest --guestvmlinux="$elf" -i "$data" script 2>/dev/null)
# Callee order: each spin_leaf sample is followed by its callers.
chains=$(awk 'NF == 0 { if (c) print c; c = "" } NF >= 2 && $1 ~ /^[0-9a-f]+$/ { sub(/\+0x[0-9a-f]+$/, "", $2); c = c " " $2 } END { if (c) print c }' <<< "$script")
echo "$chains" | sort | uniq -c | sort -rn | head -5 | sed 's/^/    /'
n=$(grep -c '^ spin_leaf spin_mid spin_top guest_code$' <<< "$chains")
total=$(grep -c '^ spin_leaf' <<< "$chains")
echo "    perf kvm script: $n of $total spin_leaf samples show spin_leaf spin_mid spin_top guest_code"
check "perf kvm script resolves the guest chain spin_leaf <- spin_mid <- spin_top <- guest_code" \
	test "$n" -gt 0 -a "$n" -ge $((total * 9 / 10))

report=$("$perf" kvm --guest --guestvmlinux="$elf" -i "$data" report -g caller --stdio 2>/dev/null)
grep -A6 'spin_leaf$' <<< "$report" | head -8 | sed 's/^/    /'
check "perf kvm report -g shows guest_code -> spin_top -> spin_mid -> spin_leaf in caller order" \
	python3 -c '
import re, sys
lines = [x for x in (re.sub(r"[-|\s]+", " ", re.sub(r"\d+\.\d+%", "", l)).strip() for l in sys.stdin) if x]
want = ["guest_code", "spin_top", "spin_mid", "spin_leaf"]
sys.exit(0 if any(lines[i:i + 4] == want for i in range(len(lines))) else 1)' <<< "$report"

# perf's flamegraph script, on the guest recording, with the npm template.
rm -rf "$res/flamegraph"
perf_flamegraph "$data" "$res/flamegraph" kvm --guest --guestvmlinux="$elf" | sed 's/^/# /'
html=$res/flamegraph/flamegraph.html
check "the flame graph of the guest recording holds guest_code, spin_top, spin_mid, spin_leaf" \
	python3 -c '
import json, re, sys
html = open(sys.argv[1]).read()
names = set(re.findall(r"\"n\": ?\"([^\"]+)\"", html)) | set(re.findall(r"\"name\": ?\"([^\"]+)\"", html))
sys.exit(0 if {"guest_code", "spin_top", "spin_mid", "spin_leaf"} <= names else 1)' "$html"
[ $tap_failed = 0 ]
