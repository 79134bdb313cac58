#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The demo scenario: a real Linux guest's recording and live profile
# (check_demo.py), its registers and stack copies on x86
# (check_stack_copy.py), and its user program's call stacks by name
# (check_guest_user.py).
# usage: check_demo.sh <results dir> <checkout> [<guest build> <arch> [<name>]]
# The guest's symbols: its build's System.map, or the kallsyms the guest
# handed over (<name>.kallsyms, tests/vm/demo.sh), for a guest kernel not
# built here; its code: its build's vmlinux, or for such a kernel, its
# Image (build/<guest build>/Image, scripts/mkinitramfs.sh).
res=$1 top=$2 name=demo guest=${3:-guest}
[ -n "${4:-}" ] && name=demo-$4
[ -n "${5:-}" ] && name=$5
map=$top/build/obj-$guest/System.map
[ -s "$res/$name.kallsyms" ] && map=$res/$name.kallsyms
vmlinux=$top/build/obj-$guest/vmlinux
[ -e "$top/build/$guest/Image" ] && vmlinux=$top/build/$guest/Image
. "$top/scripts/lib.sh"
. "$top/tests/lib/tap.sh"
sed 's/^/# /' "$res/$name.log"
grep -q '^L2 boot retried' "$res/$name.log" &&
	echo "# FLAKE: $name: an L2 boot hung before its first console line and was retried (README, \"The test VM\")"
perf_dump "$res/$name.data" "$res/$name.D" || tap_not_ok "$name: no raw dump of its recording"
# The guest's own recording (tests/vm/demo.sh).
self=$res/$name.self.D
perf_dump "$res/$name.self.data" "$self" ||
	tap_not_ok "$name: no raw dump of the guest's own recording"
"$(dirname "$0")/check_demo.py" "$res/$name.D" "$map" \
	"$vmlinux" "$res/$name.top" "$self" ${4:+"$4"} ${5:+"${5//-/ }"} ||
	tap_failed=1
# The guest's registers and stack copies, recorded on x86 hosts.
if [ "${4:-}" != arm64 ]; then
	if perf_dump "$res/$name.stack.data" "$res/$name.stack.D"; then
		"$(dirname "$0")/check_stack_copy.py" "$res/$name.stack.D" 32768 "$name" ${4:+"$4"} ||
			tap_failed=1
	else
		tap_not_ok "$name: no raw dump of its recording with stack copies"
	fi
fi
# Guest user code by name: the guest's recording of itself merged into
# the host's (guest_inject), and its program's call stacks judged.
if [ "${4:-}" = arm64 ]; then
	echo "# $name: guest user code by name: not judged on arm64: 'perf inject --guest-data'" \
		"needs the guest's clock on the host's, and KVM does not show the vCPU's counter offset"
else
	prog=$top/build/l2-work${4:+-$4}
	if guest_inject "$res" "$name" "$guest" "$prog"; then
		"${gi_perf[@]}" script --guestmount "$gi_mount" -i "$res/$name.inj.data" -F comm,tid,ip,sym,symoff,dso \
			> "$res/$name.inj.txt" 2> "$res/$name.inj.err" ||
			tap_not_ok "$name: perf script of the injected recording: $(tail -1 "$res/$name.inj.err")"
		"$(dirname "$0")/check_guest_user.py" "$res/$name.inj.txt" "$prog" "$name" ||
			tap_failed=1
	else
		tap_not_ok "$name: the guest's own recording merged into the host's (perf inject --guest-data)"
	fi
fi
exit $((tap_failed > 0))
