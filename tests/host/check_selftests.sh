#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The selftests scenario: one result per test of tests/selftests.list; a
# skip of a test marked 'required', or of one of its sub-cases, is a failure.
# In the results of a VM under Bochs (its machine file), only the tests
# marked bochs; of an arm64 VM (its arch file), only the aarch64/ ones.
# usage: check_selftests.sh <results dir> <checkout>
res=$1 top=$2
. "$top/tests/lib/tap.sh"
grep -v '^  ' "$res/selftests.log" | sed 's/^/# /'
machine=$(cat "$res/machine" 2>/dev/null)
arch=$(cat "$res/arch" 2>/dev/null)
while read -r t req flags; do
	[ -z "$t" ] || [ "${t#\#}" != "$t" ] && continue
	case $t in aarch64/*) [ "$arch" = aarch64 ] ;; *) [ "$arch" = x86_64 ] ;; esac || continue
	[ "$machine" != bochs ] || case " $req $flags " in *" bochs "*) ;; *) continue ;; esac
	line=$(grep -E "^(ok|not ok|skip) $t( |$)" "$res/selftests.log")
	# A required test's own sub-case skips count too (kselftest exits 0 on them).
	subskip=$(grep -E "^  $t: ok [0-9]+ .*# SKIP" "$res/selftests.log" | sed "s|^  $t: ||")
	[ "$req" = required ] && [ -n "$subskip" ] && [ "${line%% *}" = ok ] &&
		line="not ok $t (a required test skipped sub-cases: $(echo "$subskip" | tr '\n' ';'))"
	case "$line" in
	"ok "*) tap_ok "selftest $t" ;;
	"skip "*) if [ "$req" = required ]; then tap_not_ok "selftest $t skipped on the path that matters: ${line#skip $t}"
		  else tap_skip "${line#skip $t }" "selftest $t"; fi ;;
	"not ok "*) tap_not_ok "selftest $t: ${line#not ok $t}"; grep "^  $t:" "$res/selftests.log" | tail -15 ;;
	*) tap_not_ok "selftest $t: no result" ;;
	esac
done < "$top/tests/selftests.list"
[ $tap_failed = 0 ]
