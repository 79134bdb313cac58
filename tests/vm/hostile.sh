#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Hostile-guest scenario: /wb/guest_hostile (tests/guest/hostile/*.c)
# samples guests whose frame chains and page tables are crafted to break the
# guest callchain unwinder, with racing vCPUs, memslot updates, knob toggles
# and VM teardown, and checks every guest callchain against the unwinder's
# rules.  Its TAP output goes to this scenario's log and to $1.tap; each TAP
# result line is also logged to the kernel log, to place any splat.
out=$1
knob=/sys/module/kvm/parameters/guest_callchains
if [ ! -e $knob ]; then
	echo "hostile: this kernel has no $knob"
	exit 4
fi
# The event the command line's wb.event names (the arm64 VMs' cycles).
event=$(sed -n 's/.*wb\.event=\([a-z-]*\).*/\1/p' /proc/cmdline)
[ "$event" = cycles ] || event=
( timeout 840 /wb/guest_hostile $event; echo $? > /tmp/hostile.rc ) 2>&1 |
while IFS= read -r line; do
	echo "$line"
	echo "$line" >> "$out.tap"
	case $line in
	ok*|"not ok"*|Bail*|*watchdog*) echo "hostile: $line" > /dev/kmsg ;;
	esac
done
rc=$(cat /tmp/hostile.rc 2>/dev/null || echo 255)
echo "hostile: guest_hostile exited with $rc (knob now $(cat $knob))"
exit "$rc"
