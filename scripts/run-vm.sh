#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Boot the test VM (the L1 KVM host) under QEMU TCG and run scenarios in it.
# usage: run-vm.sh <bzImage> <initramfs> <outdir> <timeout-seconds> <scenario,...>
# The console goes to <outdir>/console.log; results land in <outdir> over 9p.
# A VM still running after <timeout-seconds> is reported with where its
# vCPUs are (QEMU's monitor and the kernel's System.map), then killed.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
kernel=$1 initrd=$2 out=$3 limit=$4 run=$5
mkdir -p "$out"
rm -rf "${out:?}"/*
mon=$(mktemp -d)
trap 'rm -rf "$mon"' EXIT
# Without a TSC frequency every KVM selftest aborts on KVM_GET_TSC_KHZ.
khz=$(awk -F: '/^cpu MHz/ { printf "%d", $2 * 1000; exit }' /proc/cpuinfo)
rc=0
qemu-system-x86_64 -accel tcg -cpu max -smp 2 -m 4G \
	-display none -monitor unix:"$mon/monitor",server,nowait \
	-serial file:"$out/console.log" -no-reboot \
	-kernel "$kernel" -initrd "$initrd" \
	-virtfs local,path="$out",mount_tag=wbout,security_model=none,id=wbout \
	-append "console=ttyS0 panic=-1 nokaslr tsc_early_khz=$khz tsc=reliable wb.run=$run" \
	</dev/null &
qemu=$!
end=$(( $(date +%s) + limit ))
while kill -0 $qemu 2>/dev/null && [ "$(date +%s)" -lt $end ]; do sleep 1; done
if kill -0 $qemu 2>/dev/null; then
	echo "vm: HUNG: no clean exit within $limit s; vCPUs:" >&2
	"$top/tests/host/vm_where.py" "$mon/monitor" "$(dirname "$kernel")/../../../System.map" >&2 || true
	kill $qemu
	wait $qemu || true
	echo "vm: console tail:" >&2
	tail -30 "$out/console.log" >&2
	exit 1
fi
wait $qemu || rc=$?
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
