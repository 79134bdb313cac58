#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Boot the test VM (the L1 KVM host) under QEMU TCG and run scenarios in it.
# usage: run-vm.sh <bzImage> <initramfs> <outdir> <timeout-seconds> <scenario,...>
# The console goes to <outdir>/console.log; results land in <outdir> over 9p.
set -euo pipefail
kernel=$1 initrd=$2 out=$3 limit=$4 run=$5
mkdir -p "$out"
rm -rf "${out:?}"/*
# Without a TSC frequency every KVM selftest aborts on KVM_GET_TSC_KHZ.
khz=$(awk -F: '/^cpu MHz/ { printf "%d", $2 * 1000; exit }' /proc/cpuinfo)
rc=0
timeout --foreground "$limit" qemu-system-x86_64 -accel tcg -cpu max -smp 2 -m 4G \
	-display none -monitor none -serial file:"$out/console.log" -no-reboot \
	-kernel "$kernel" -initrd "$initrd" \
	-virtfs local,path="$out",mount_tag=wbout,security_model=none,id=wbout \
	-append "console=ttyS0 panic=-1 nokaslr tsc_early_khz=$khz tsc=reliable wb.run=$run" \
	</dev/null || rc=$?
if [ $rc = 124 ]; then
	echo "vm: HUNG: no clean exit within $limit s; console tail:" >&2
	tail -30 "$out/console.log" >&2
	exit 1
fi
if [ $rc != 0 ] || grep -q 'Kernel panic' "$out/console.log"; then
	echo "vm: QEMU exited with $rc or the kernel panicked; console tail:" >&2
	tail -30 "$out/console.log" >&2
	exit 1
fi
if ! grep -q '^WB: all scenarios done' "$out/console.log"; then
	echo "vm: the VM stopped before its scenarios finished; console tail:" >&2
	tail -30 "$out/console.log" >&2
	exit 1
fi
echo "vm: ran $run"
