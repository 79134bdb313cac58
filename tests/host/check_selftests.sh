#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The selftests scenario: one result per test of tests/selftests.list; a
# skip of a test marked 'required' is a failure.
# usage: check_selftests.sh <results dir> <checkout>
res=$1 top=$2
. "$top/tests/lib/tap.sh"
grep -v '^  ' "$res/selftests.log" | sed 's/^/# /'
while read -r t req; do
	[ -z "$t" ] || [ "${t#\#}" != "$t" ] && continue
	line=$(grep -E "^(ok|not ok|skip) $t( |$)" "$res/selftests.log")
	case "$line" in
	"ok "*) tap_ok "selftest $t" ;;
	"skip "*) if [ "$req" = required ]; then tap_not_ok "selftest $t skipped on the path that matters: ${line#skip $t}"
		  else tap_skip "${line#skip $t }" "selftest $t"; fi ;;
	"not ok "*) tap_not_ok "selftest $t: ${line#not ok $t}"; grep "^  $t:" "$res/selftests.log" | tail -15 ;;
	*) tap_not_ok "selftest $t: no result" ;;
	esac
done < "$top/tests/selftests.list"
[ $tap_failed = 0 ]
