#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The demo scenario: a real Linux guest's recording and live profile
# (check_demo.py).
# usage: check_demo.sh <results dir> <checkout> [<guest build> <arch>]
res=$1 top=$2 name=demo guest=${3:-guest}
[ -n "${4:-}" ] && name=demo-$4
. "$top/scripts/lib.sh"
. "$top/tests/lib/tap.sh"
sed 's/^/# /' "$res/$name.log"
grep -q '^L2 boot retried' "$res/$name.log" &&
	echo "# FLAKE: $name: an L2 boot hung before its first console line and was retried (README, \"The test VM\")"
perf_dump "$res/$name.data" "$res/$name.D" || tap_not_ok "$name: no raw dump of its recording"
# Whether the guest recorded itself is what the scenario asked for
# (tests/vm/demo.sh, $name.mode): then its recording must be there.
self=-
case $(cat "$res/$name.mode" 2>/dev/null) in
self)	self=$res/$name.self.D
	perf_dump "$res/$name.self.data" "$self" ||
		tap_not_ok "$name: no raw dump of the guest's own recording" ;;
no-self) echo "# $name: the scenario ran without the guest's own recording (no-self): no fidelity figures" ;;
*)	tap_not_ok "$name: the scenario did not say whether the guest records itself ($name.mode)" ;;
esac
exec "$(dirname "$0")/check_demo.py" "$res/$name.D" "$top/build/obj-$guest/System.map" \
	"$top/build/obj-$guest/vmlinux" "$res/$name.top" "$self" ${4:+"$4"}
