#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The hostile scenario: guest_hostile's own TAP, one result per case.
# usage: check_hostile.sh <results dir> <checkout>
res=$1
grep -E '^# .*(pass|FAIL|skip)$|^# (reference|Totals)' "$res/hostile.log"
if [ ! -s "$res/hostile.tap" ]; then
	echo "not ok - hostile: no TAP output (rc $(cat "$res/hostile.rc" 2>/dev/null))"
	exit 1
fi
grep -E '^(ok|not ok) ' "$res/hostile.tap" |
	sed -E 's/^ok [0-9]+ # SKIP /ok - hostile # SKIP /; s/^ok [0-9]+ /ok - hostile: /; s/^not ok [0-9]+ /not ok - hostile: /'
# Every planned case reported (a crash or a stopped VM leaves fewer), and
# a non-zero exit explained by a failing case.
if skip=$(grep -m1 '^1\.\.0 # SKIP' "$res/hostile.tap"); then
	# The hostile cases are the path that matters: skipping them fails.
	echo "not ok - hostile: the whole run skipped (${skip#1..0 # SKIP })"
	exit 1
fi
plan=$(sed -n 's/^1\.\.\([0-9]*\)$/\1/p' "$res/hostile.tap" | head -1)
ran=$(grep -cE '^(ok|not ok) ' "$res/hostile.tap")
rc=$(cat "$res/hostile.rc" 2>/dev/null || echo none)
if [ "${plan:-0}" = 0 ] || [ "$ran" != "$plan" ]; then
	echo "not ok - hostile: $ran of ${plan:-no} planned cases reported, guest_hostile exited with $rc"
	exit 1
fi
if grep -q '^not ok' "$res/hostile.tap"; then
	exit 1
fi
if [ "$rc" != 0 ]; then
	echo "not ok - hostile: every case passed, but guest_hostile exited with $rc"
	exit 1
fi
