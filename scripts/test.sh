#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The README's test command: install, build the tree with the series, the
# kernel, perf and the KVM selftests, boot the test VMs (the QEMU ones side
# by side, then the Bochs one), run KUnit (at boot), the selftests and the
# scenarios in them, judge the results on the host.
# With --judge, only judges the results of the last run again.
# Every check is a TAP line (tests/lib/tap.sh); ends with
# 'N passed, N failed[, N skipped]' and exits non-zero on any failure.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
cd "$top"
res=$top/build/results
mkdir -p "$top/build"
: > "$top/build/results.txt"
. "$top/tests/lib/tap.sh"
t0=$(date +%s)
results=$top/build/results.txt
# stage [--judge-anyway] <name> <command...>: run, time, stop on failure.
# With --judge-anyway a failure is recorded and the run goes on to judge
# what the stage left (the VM's console and partial results say why it
# failed better than its exit code).
stage() {
	local go_on= name s=$(date +%s) rc=0
	[ "$1" = --judge-anyway ] && { go_on=1; shift; }
	name=$1
	shift
	echo "== $name"
	"$@" || rc=$?
	echo "== $name: $(( $(date +%s) - s )) s$([ $rc = 0 ] || echo ", FAILED (rc $rc)")"
	if [ $rc != 0 ]; then
		echo "not ok - stage $name (rc $rc)" >> "$results"
		[ -n "$go_on" ] && return
		summary
		exit 1
	fi
}
# The results are TAP lines (tests/lib/tap.sh); build/results.tap is them
# as one numbered document.
summary() {
	local n
	tap_document "$results" > "$top/build/results.tap"
	grep -E '^not ok|# SKIP' "$results" | sed 's/^/  /'
	[ -n "${cc0:-}" ] && ccache_since $cc0
	echo "total time: $(( $(date +%s) - t0 )) s"
	read -r -a n <<< "$(tap_count "$results")"
	echo "${n[0]} passed, ${n[1]} failed$([ "${n[2]}" = 0 ] || echo ", ${n[2]} skipped")"
}
record() { tee -a "$results"; }
failures() { grep -c '^not ok' "$results"; }
# check <name> <command...>: a checker's TAP lines go to the results; a
# checker that exits non-zero without a failing line is a failure.
check() {
	local name=$1 rc n
	shift
	n=$(failures)
	"$@" | record
	rc=${PIPESTATUS[0]}
	[ "$rc" = 0 ] || [ "$(failures)" -gt "$n" ] ||
		tap_not_ok "$name: exited with $rc and reported no failure" | record
}

# The test VMs: "vm<N> <scenario,...>" lines, "vmx <scenario,...>" and
# "arm64[-nmi] <scenario,...>" (tests/scenarios.list).
vms=$(vms_of test)
if [ "${1:-}" = --judge ]; then
	# Judge the results of the last run again (after editing a checker).
	:
else
stage deps scripts/deps.sh
cc0=$(ccache_counts)
stage tree scripts/tree.sh --if-needed
stage gate check gate scripts/gate.sh
stage kernel scripts/build-kernel.sh x86_64 test configs/host.config configs/kasan.config configs/trace.config
stage guest-kernel scripts/build-kernel.sh x86_64 guest configs/guest.config
stage guest-kernel-i386 scripts/build-kernel.sh i386 guest-i386 configs/guest.config configs/guest-i386.config
stage guest-kernel-orc scripts/build-kernel.sh x86_64 guest-orc configs/guest.config configs/guest-orc.config
stage kernel-arm64 scripts/build-kernel.sh arm64 host-arm64 configs/host-arm64.config
stage guest-kernel-arm64 scripts/build-kernel.sh arm64 guest-arm64 configs/guest-arm64.config
stage perf scripts/build-perf.sh
stage guest-perf scripts/build-perf.sh --guest x86_64
stage guest-perf-i386 scripts/build-perf.sh --guest i386
stage perf-arm64 scripts/build-perf.sh --guest arm64
stage selftests scripts/build-selftests.sh
stage selftests-arm64 scripts/build-selftests.sh arm64
stage initramfs scripts/mkinitramfs.sh build/l2.cpio.gz --guest
stage initramfs scripts/mkinitramfs.sh build/l2-i386.cpio.gz --guest-i386
stage initramfs scripts/mkinitramfs.sh build/initramfs.cpio.gz
stage initramfs scripts/mkinitramfs.sh build/l2-arm64.cpio.gz --guest-arm64
stage initramfs scripts/mkinitramfs.sh build/initramfs-arm64.cpio.gz --arm64 \
	--l2 guest-arm64 build/l2-arm64.cpio.gz
stage initramfs scripts/mkinitramfs.sh build/initramfs-demo.cpio.gz \
	--l2 guest build/l2.cpio.gz guest-i386 build/l2-i386.cpio.gz guest-orc
rm -rf "$res"
# The x86 QEMU VMs side by side (one core each), then the Bochs VM alone,
# then the two arm64 VMs side by side.
stage --judge-anyway vm run_vms test 2400 "$res" "$(grep -E '^vm[0-9]+ ' <<< "$vms")"
stage --judge-anyway vmx run_vms test 1200 "$res" "$(grep '^vmx ' <<< "$vms")"
stage --judge-anyway vm-arm64 run_vms test 900 "$res" "$(grep '^arm64' <<< "$vms")"
fi

# Judge on the host, VM by VM: the VM itself, then each scenario with its
# checker (tests/host/check_<name>.sh), then the splat gate, last: it
# covers everything that ran in that VM.
s=$(date +%s)
echo "== results (base: linux-source-6.12 $(cat build/linux-source.version))"
# The interrupts-off model that the fidelity checks use, on its own.
check "fidelity model" tests/host/test_fidelity.py
# (The list comes on fd 3: checkers may read their standard input.)
while read -r vm list <&3; do
	echo "== results: $vm"
	check "$vm" tests/host/check_vm.sh "$res/$vm" "$top" "$list"
	for sc in ${list//,/ }; do
		echo "== results: $sc"
		if [ ! -x "tests/host/check_$sc.sh" ]; then
			echo "# $sc: no tests/host/check_$sc.sh; judged by its exit code alone"
			continue
		fi
		check "$sc" "tests/host/check_$sc.sh" "$res/$vm" "$top"
	done
	check "$vm splats" tests/host/check_splats.sh "$res/$vm/console.log"
done 3<<< "$vms"
echo "== results: $(( $(date +%s) - s )) s"
summary
[ "$(failures)" = 0 ]
