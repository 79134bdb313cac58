#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The test VM itself: the CPUs it was given (scripts/run-vm.sh), /dev/kvm, every scenario exited 0, KUnit at
# boot (the boot log's KTAP, parsed by the kernel's own kunit.py).
# usage: check_vm.sh <results dir> <checkout> <scenario,...>
res=$(realpath "$1") top=$2 scenarios=$3
. "$top/tests/lib/tap.sh"
vm=$(basename "$res")
cpus=$(cat "$res/cpus" 2>/dev/null || echo '?') wanted=$(cat "$res/cpus.wanted" 2>/dev/null || echo '?')
tap_check "$vm: the VM (L1 host) runs on the $wanted CPU(s) its emulator gives it (it has $cpus)" test "$cpus" = "$wanted"
tap_check "$vm: /dev/kvm present in the VM (KVM initialized)" grep -qx yes "$res/kvm"
echo "# $vm: $(tr '\n' ' ' < "$res/kvm.params" 2>/dev/null)"
# Bochs is there for the VMX path with EPT: kvm_intel must have both.
. "$top/scripts/lib.sh"
machine=$(cat "$res/machine" 2>/dev/null || echo '?')
tap_check "$vm: the VM ran under the emulator run_vms chose for it ($(machine_of "$vm"); it says $machine)" \
	test "$machine" = "$(machine_of "$vm")"
[ "$machine" != bochs ] || tap_check "$vm: kvm_intel runs guests with EPT and unrestricted guests" \
	test "$(grep -cx -e ept=Y -e unrestricted_guest=Y "$res/kvm.params" 2>/dev/null)" = 2
# The arm64 VMs: KVM at EL2 with VHE (what -cpu max and virtualization=on
# give), and the PMU interrupt as the VM's name says: a pseudo-NMI in
# arm64-nmi, an IRQ in arm64.
case $vm in
arm64*)
	tap_check "$vm: KVM runs in VHE mode" grep -q 'kvm \[1\]: VHE mode initialized successfully' "$res/console.log"
	want=0
	[ "$vm" = arm64-nmi ] && want=1
	nmi=$(grep -c 'GICv3: Pseudo-NMIs enabled' "$res/console.log")
	pmu=$(grep -c 'hw perfevents: enabled with armv8_pmuv3 PMU driver.*using NMIs' "$res/console.log")
	tap_check "$vm: pseudo-NMIs $([ $want = 1 ] && echo enabled || echo disabled), the PMU interrupt $([ $want = 1 ] && echo "an NMI" || echo "an IRQ")" \
		test "$nmi$pmu" = "$want$want"
	grep -h 'GICv3: Pseudo-NMIs\|hw perfevents' "$res/console.log" | sed "s/^/# $vm: /"
	;;
esac
for sc in ${scenarios//,/ }; do
	rc=$(cat "$res/$sc.rc" 2>/dev/null || echo none)
	[ "$rc" = 0 ] || tap_not_ok "$vm: scenario $sc exited with $rc"
done
kunit=$(python3 "$top/build/linux/tools/testing/kunit/kunit.py" parse "$res/console.log" 2>&1); krc=$?
echo "$kunit" | grep -E '\[(PASSED|FAILED|SKIPPED|CRASHED)\]' | sed 's/\x1b\[[0-9;]*m//g' | tail -40
kp=$(echo "$kunit" | sed -n 's/.*passed: \([0-9]*\).*/\1/p' | tail -1)
if [ $krc = 0 ] && [ "${kp:-0}" -gt 0 ]; then tap_ok "$vm: kunit: ${kp} test cases passed at boot"
else tap_not_ok "$vm: kunit: parser exit $krc; $(echo "$kunit" | tail -3 | tr '\n' ' ')"; fi
[ $tap_failed = 0 ]
