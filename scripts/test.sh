#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The README's test command: install, build the tree with the series, the
# kernel, perf and the KVM selftests, boot the VM, run KUnit (at boot), the
# selftests and the scenarios in it, judge the results on the host.
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
stage() {	# stage <name> <command...>: run, time, stop on failure
	local name=$1 s=$(date +%s) rc=0
	shift
	echo "== $name"
	"$@" || rc=$?
	echo "== $name: $(( $(date +%s) - s )) s$([ $rc = 0 ] || echo ", FAILED (rc $rc)")"
	if [ $rc != 0 ]; then
		echo "not ok - stage $name (rc $rc)" >> "$results"
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

stage deps scripts/deps.sh
cc0=$(ccache_counts)
stage tree scripts/tree.sh --if-needed
stage gate check gate scripts/gate.sh
stage kernel scripts/build-kernel.sh test configs/host.config configs/kasan.config
stage guest-kernel scripts/build-kernel.sh guest configs/guest.config
stage guest-kernel-i386 env ARCH=i386 \
	scripts/build-kernel.sh guest-i386 configs/guest.config configs/guest-i386.config
stage perf scripts/build-perf.sh
stage selftests scripts/build-selftests.sh
stage initramfs scripts/mkinitramfs.sh build/l2.cpio.gz --guest
stage initramfs scripts/mkinitramfs.sh build/l2-i386.cpio.gz --guest-i386
stage initramfs scripts/mkinitramfs.sh build/initramfs-demo.cpio.gz \
	--l2 build/obj-guest/arch/x86/boot/bzImage build/l2.cpio.gz \
	build/obj-guest-i386/arch/x86/boot/bzImage build/l2-i386.cpio.gz
scenarios=selftests,baseline,demo,demo-i386,hostile
stage vm scripts/run-vm.sh build/obj-test/arch/x86/boot/bzImage build/initramfs-demo.cpio.gz \
	"$res" 2400 "$scenarios"

s=$(date +%s)
echo "== results (base: linux-source-6.12 $(cat build/linux-source.version))"
# A scenario that exits non-zero fails even if its checker found nothing.
for sc in ${scenarios//,/ }; do
	rc=$(cat "$res/$sc.rc" 2>/dev/null || echo none)
	[ "$rc" = 0 ] || tap_not_ok "scenario $sc exited with $rc" | record
done
if [ "$(cat "$res/cpus" 2>/dev/null)" = 2 ]; then tap_ok "the VM (L1 host) runs on 2 CPUs"
else tap_not_ok "the VM (L1 host) runs on $(cat "$res/cpus" 2>/dev/null || echo '?') CPU(s), not 2"; fi | record
if grep -qx yes "$res/kvm"; then tap_ok "/dev/kvm present in the VM (kvm_amd loaded)"
else tap_not_ok "/dev/kvm missing in the VM: kvm_amd did not load"; fi | record
# KUnit: the boot log's TAP, parsed by the kernel's own parser.
kunit=$(python3 build/linux/tools/testing/kunit/kunit.py parse "$res/console.log" 2>&1); krc=$?
echo "$kunit" | grep -E '\[(PASSED|FAILED|SKIPPED|CRASHED)\]' | sed 's/\x1b\[[0-9;]*m//g' | tail -40
kp=$(echo "$kunit" | sed -n 's/.*passed: \([0-9]*\).*/\1/p' | tail -1)
if [ $krc = 0 ] && [ "${kp:-0}" -gt 0 ]; then tap_ok "kunit: ${kp} test cases passed at boot"
else tap_not_ok "kunit: parser exit $krc; $(echo "$kunit" | tail -3 | tr '\n' ' ')"; fi | record
# KVM selftests.
grep -v '^  ' "$res/selftests.log" || true
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
done < tests/selftests.list | record
# Baseline scenario.
cat "$res/baseline.log"
expect=stock
ls patches/0*.patch >/dev/null 2>&1 && expect=frames
check baseline tests/host/check_baseline.py "$res/baseline.D" build/selftests/wb/guest_spin "$expect"
# perf tools: decoding, guest symbols, perf kvm script/report, perf test.
rm -rf build/results-flamegraph
scripts/flamegraph.sh "$res/baseline.data" build/selftests/wb/guest_spin build/results-flamegraph | sed 's/^/    /'
check "perf tools" tests/host/check_perf_kvm.sh build/perf/perf "$res/baseline.data" \
	build/selftests/wb/guest_spin build/results-flamegraph/flamegraph.html
# Demo, short version: a real Linux guest recorded from the host.
sed 's/^/    /' "$res/demo.log"
check demo tests/host/check_demo.py "$res/demo.D" build/obj-guest/System.map
# The same with the 32-bit guest kernel: 32-bit paging and frames.
sed 's/^/    /' "$res/demo-i386.log"
check demo-i386 tests/host/check_demo.py "$res/demo-i386.D" build/obj-guest-i386/System.map i386
# Hostile guests: every case of guest_hostile is one result.
grep -E '^# .*(pass|FAIL|skip)$|^# (reference|Totals)' "$res/hostile.log" | sed 's/^/    /'
grep -E '^(ok|not ok) ' "$res/hostile.tap" |
	sed -E 's/^ok [0-9]+ # SKIP /ok - hostile # SKIP /; s/^ok [0-9]+ /ok - hostile: /; s/^not ok [0-9]+ /not ok - hostile: /' | record
[ -s "$res/hostile.tap" ] || tap_not_ok "hostile: no TAP output (rc $(cat "$res/hostile.rc"))" | record
# Splat gate, last: it covers everything that ran.
check splats tests/host/check_splats.sh "$res/console.log"
echo "== results: $(( $(date +%s) - s )) s"
summary
[ "$(failures)" = 0 ]
