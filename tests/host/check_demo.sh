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
perf_dump "$res/$name.data" "$res/$name.D" || tap_not_ok "$name: no raw dump of its recording"
# The i386 guest does not record itself (tests/vm/demo-i386.sh).
self=-
if [ "${4:-}" != i386 ]; then
	self=$res/$name.self.D
	perf_dump "$res/$name.self.data" "$self" ||
		tap_not_ok "$name: no raw dump of the guest's own recording"
fi
exec "$(dirname "$0")/check_demo.py" "$res/$name.D" "$top/build/obj-$guest/System.map" \
	"$top/build/obj-$guest/vmlinux" "$res/$name.top" "$self" ${4:+"$4"}
