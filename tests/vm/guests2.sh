#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Two guests at once: the 64-bit (/demo) and the 32-bit (/demo/i386) demo
# guests run side by side, both on CPU 0, and one system-wide
# 'perf kvm --guest record -a -g' records them both ($1.data).  $1.pids
# names each guest's QEMU process ("<pid> guest" and "<pid> guest-i386"):
# the recording holds each guest kernel's map (perf kvm --guestmount) and
# the host resolves each guest's samples with that guest's symbols and
# checks that every sample went to the right guest.
. /tests/l2.sh
out=$1
echo Y > /sys/module/kvm/parameters/guest_callchains || exit 1
l2_boot /demo /tmp/l2-a.log "start its workload (64-bit guest)" 120
a=$l2_pid
trap 'kill $a 2>/dev/null' EXIT	# not left running if the second fails
l2_boot /demo/i386 /tmp/l2-b.log "start its workload (32-bit guest)" 120
b=$l2_pid
printf '%s guest\n%s guest-i386\n' $a $b > "$out.pids"
# perf kvm's guest directory: <QEMU pid>/proc/kallsyms per guest (its
# System.map), from which perf kvm record writes each guest kernel's map
# into the recording, for perf to resolve that guest's samples with.
rm -rf /tmp/gm
for g in "$a /demo" "$b /demo/i386"; do
	set -- $g
	mkdir -p /tmp/gm/$1/proc
	cp "$2/System.map" /tmp/gm/$1/proc/kallsyms
	: > /tmp/gm/$1/proc/modules
done
perf kvm --guest --guestmount=/tmp/gm record -a -g -e cpu-clock -o /tmp/guests2.data -- sleep 8 ||
	exit 1
kill $a $b
wait $a $b
cp /tmp/guests2.data "$out.data"
