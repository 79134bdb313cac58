#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The two-guests scenario: one recording of two guests with different
# kernels.  Each guest's samples are resolved by perf with that guest's
# own symbols: a --guestmount directory holds, per guest QEMU PID, the
# guest's System.map as its proc/kallsyms (check_guests2.py judges).
# usage: check_guests2.sh <results dir> <checkout>
res=$1 top=$2
. "$top/scripts/lib.sh"
. "$top/tests/lib/tap.sh"
sed 's/^/# /' "$res/guests2.log"
grep -q '^L2 boot retried' "$res/guests2.log" &&
	echo "# FLAKE: guests2: an L2 boot hung before its first console line and was retried (README, \"The test VM\")"
gm=$res/guests2.guestmount
rm -rf "$gm"
maps=()
while read -r pid build; do
	mkdir -p "$gm/$pid/proc"
	cp "$(sysmap_of "$build")" "$gm/$pid/proc/kallsyms"
	: > "$gm/$pid/proc/modules"
	maps+=("$pid=$(sysmap_of "$build")")
done < "$res/guests2.pids" || { tap_not_ok "guests2: no guest PIDs"; exit 1; }
perf_dump "$res/guests2.data" "$res/guests2.D" || tap_not_ok "guests2: no raw dump of its recording"
"$top/build/perf/perf" kvm --guest --guestmount="$gm" -i "$res/guests2.data" \
	script -G -F pid,ip,sym > "$res/guests2.script" 2> "$res/guests2.script.err" ||
	{ tap_not_ok "guests2: perf kvm --guestmount script failed"; sed 's/^/# /' "$res/guests2.script.err"; }
exec "$(dirname "$0")/check_guests2.py" "$res/guests2.D" "$res/guests2.script" "${maps[@]}"
