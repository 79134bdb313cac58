#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# 'make bench': the cost of guest callchains, measured inside the VM on a
# kernel without debug options (tests/guest/guest_bench.c), as ratios taken
# side by side in one run.  Prints the README's table.
# usage: bench.sh [arm64]
# With arm64 ('make bench-arm64'): in the arm64 VM, an arm64 KVM host under
# QEMU's TCG, where the samples are the PMU's cycles and their overflow
# interrupts really fire.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$top"
scripts/deps.sh
scripts/tree.sh --if-needed
scripts/build-perf.sh
if [ "${1:-}" = arm64 ]; then
	scripts/build-kernel.sh arm64 bench-arm64 configs/host-arm64.config configs/bench.config
	scripts/build-perf.sh --guest arm64
	scripts/build-selftests.sh arm64
	scripts/mkinitramfs.sh build/initramfs-bench-arm64.cpio.gz --arm64
	kernel=bench-arm64 initrd=build/initramfs-bench-arm64.cpio.gz out=build/bench-arm64
else
	scripts/build-kernel.sh x86_64 bench configs/host.config configs/bench.config
	scripts/build-selftests.sh
	scripts/mkinitramfs.sh build/initramfs.cpio.gz
	kernel=bench initrd=build/initramfs.cpio.gz out=build/bench
fi
scripts/run-vm.sh "$kernel" "$initrd" "$out" 1500 "$(scenarios_of bench)"
cat "$out/bench.log"
tests/host/bench_report.py "$out/bench.log"
