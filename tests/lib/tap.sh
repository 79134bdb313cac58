# SPDX-License-Identifier: GPL-2.0
# The workbench's one result format: TAP (https://testanything.org), one
# line per check, unnumbered ('ok - what', 'not ok - what',
# 'ok - what # SKIP why'); scripts/test.sh numbers and counts them.
# Sourced by the shell checkers and the gate.
tap_failed=0
tap_ok() { echo "ok - $*"; }
tap_not_ok() { echo "not ok - $*"; tap_failed=$((tap_failed + 1)); }
tap_skip() { local why=$1; shift; echo "ok - $* # SKIP $why"; }
# tap_check <what> <command...>: ok if the command succeeds.
tap_check() {
	local what=$1
	shift
	if "$@"; then tap_ok "$what"; else tap_not_ok "$what"; fi
}
# tap_count <file...>: "<passed> <failed> <skipped>" of the TAP lines in them.
tap_count() {
	awk '/^not ok/ { f++; next } /^ok .*# SKIP/ { s++; next } /^ok/ { p++ }
	     END { print p + 0, f + 0, s + 0 }' "$@"
}
# tap_document <file>: the lines as one numbered TAP document.
tap_document() {
	awk 'BEGIN { print "TAP version 13" }
	     /^(not )?ok/ { n++; sub(/^ok( [0-9]+)?( -)?/, "ok " n " -"); sub(/^not ok( [0-9]+)?( -)?/, "not ok " n " -"); print; next }
	     /^#/ { print }
	     END { print "1.." n + 0 }' "$1"
}
