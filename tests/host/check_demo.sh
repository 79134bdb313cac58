#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The demo scenario: a real Linux guest's recording and live profile
# (check_demo.py), its registers and stack copies on x86
# (check_stack_copy.py), and its user program's call stacks by name
# (check_guest_user.py).
# usage: check_demo.sh <results dir> <checkout> [<guest build> [<arch> [<name>]]]
# The guest's symbols: its build's System.map, or the kallsyms the guest
# handed over (<name>.kallsyms, tests/vm/demo.sh), for a guest kernel not
# built here or one that runs with KASLR; its code: its build's vmlinux,
# or for a kernel not built here, build/<guest build>/Image (arm64) or
# build/<guest build>/vmlinux (x86-64, the ELF in its vmlinuz;
# scripts/mkinitramfs.sh).  A guest kernel with ORC tables (orc_of in
# lib.sh) is judged on the call stacks perf unwinds with them from the
# stack copies of its recording (perf kvm --guest-orc).
res=$1 top=$2 name=demo guest=${3:-guest} arch=${4:-}
[ -n "$arch" ] && name=demo-$arch
[ -n "${5:-}" ] && name=$5
map=$top/build/obj-$guest/System.map
[ -s "$res/$name.kallsyms" ] && map=$res/$name.kallsyms
vmlinux=$top/build/obj-$guest/vmlinux
[ -e "$top/build/$guest/Image" ] && vmlinux=$top/build/$guest/Image
[ -e "$top/build/$guest/vmlinux" ] && vmlinux=$top/build/$guest/vmlinux
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
# The guest's registers and stack copies, recorded on x86 hosts: for a
# guest kernel with ORC tables, with every sample, up to 16 KiB
# (tests/vm/demo.sh); for the others in a recording of their own, up to
# 32 KiB.
stack=$res/$name.stack.D limit=32768 orc=()
if orc_of "$vmlinux"; then
	stack=$res/$name.D limit=16384
	t0=$(date +%s%N)
	"$top/build/perf/perf" kvm --guest --guestkallsyms="$map" --guest-orc="$vmlinux" \
		-i "$res/$name.data" script -F time,ip --ns > "$res/$name.orc" 2> "$res/$name.orc.err" ||
		tap_not_ok "$name: perf kvm --guest-orc script: $(tail -1 "$res/$name.orc.err")"
	orc=(--orc-chains="$res/$name.orc")
	# What the copies cost offline, against the recorded chains of the
	# same recording, side by side: perf script's time, and the bytes
	# recorded per sample.
	t1=$(date +%s%N)
	"$top/build/perf/perf" kvm --guest --guestkallsyms="$map" \
		-i "$res/$name.data" script -F time,ip --ns > /dev/null 2>&1
	t2=$(date +%s%N)
	n=$(grep -c PERF_RECORD_SAMPLE "$res/$name.D")
	awk -v n="$n" -v a=$((t1 - t0)) -v b=$((t2 - t1)) -v size="$(stat -c %s "$res/$name.data")" \
		-v name="$name" 'BEGIN { printf "# %s: offline: perf script with --guest-orc %.1f s, " \
		"with the recorded chains %.1f s (%.2f times), %.0f samples/s; %.0f bytes per " \
		"sample (%d samples)\n", name, a / 1e9, b / 1e9, a / b, n / (a / 1e9), size / n, n }'

fi
# check_demo.py's optional arguments: the architecture, and the tag.
opt=(${arch:+"$arch"})
[ -n "${5:-}" ] && opt=("${arch:-x86_64}" "${5//-/ }")
"$(dirname "$0")/check_demo.py" "${orc[@]}" "$res/$name.D" "$map" \
	"$vmlinux" "$res/$name.top" "$self" "${opt[@]}" || tap_failed=1
if [ "$arch" != arm64 ]; then
	if [ "$stack" = "$res/$name.D" ] || perf_dump "$res/$name.stack.data" "$stack"; then
		"$(dirname "$0")/check_stack_copy.py" "$stack" "$limit" "$name" ${arch:+"$arch"} ||
			tap_failed=1
	else
		tap_not_ok "$name: no raw dump of its recording with stack copies"
	fi
fi
# Guest user code by name: the guest's recording of itself merged into
# the host's (guest_inject), and its program's call stacks judged.
if [ "$arch" = arm64 ]; then
	echo "# $name: guest user code by name: not judged on arm64: 'perf inject --guest-data'" \
		"needs the guest's clock on the host's, and KVM does not show the vCPU's counter offset"
else
	prog=$top/build/l2-work${arch:+-$arch}
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
