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
! grep -q '^not ok' "$res/hostile.tap"
