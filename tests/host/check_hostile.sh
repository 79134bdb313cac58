#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The hostile scenario: guest_hostile's own TAP, one result per case, and
# the kernel's kunit.py parse on it for what a result line cannot show:
# planned cases that never reported (a crash or a stopped VM), or a skip of
# the whole run (the hostile cases are the path that matters: that fails).
# guest_hostile's exit code is judged by check_vm.sh.
# usage: check_hostile.sh <results dir> <checkout>
res=$(realpath "$1") top=$2
. "$top/tests/lib/tap.sh"
grep -E '^# .*(pass|FAIL|skip)$|^# (reference|Totals)|^#   FAIL' "$res/hostile.log"
if [ ! -s "$res/hostile.tap" ]; then
	tap_not_ok "hostile: no TAP output (rc $(cat "$res/hostile.rc" 2>/dev/null))"
	exit 1
fi
grep -E '^(ok|not ok) ' "$res/hostile.tap" |
	sed -E 's/^ok [0-9]+ # SKIP /ok - hostile # SKIP /; s/^ok [0-9]+ /ok - hostile: /; s/^not ok [0-9]+ /not ok - hostile: /'
sum=$(python3 "$top/build/linux/tools/testing/kunit/kunit.py" parse "$res/hostile.tap" 2>&1 |
	sed 's/\x1b\[[0-9;]*m//g' | sed -n 's/.*Testing complete\. //p' | tail -1)
case $sum in
"Ran "*" tests: passed: "[0-9]*)
	# Only "passed: N" with nothing after it is a complete, clean run.
	if ! echo "$sum" | grep -qE '^Ran ([0-9]+) tests: passed: \1$'; then
		echo "$sum" | grep -qE 'crashed|errors|skipped' &&
			tap_not_ok "hostile: kunit.py parse: $sum"
	fi ;;
*)	tap_not_ok "hostile: kunit.py parse gave no summary: ${sum:-nothing}" ;;
esac
! grep -q '^not ok' "$res/hostile.tap" && [ "$tap_failed" = 0 ]
