#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# 'make bench': the cost of guest callchains, measured inside the VM on a
# kernel without debug options (tests/guest/guest_bench.c), as ratios taken
# side by side in one run.  Prints the README's table.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$top"
scripts/deps.sh
scripts/tree.sh --if-needed
scripts/build-kernel.sh x86_64 bench configs/host.config configs/bench.config
scripts/build-perf.sh
scripts/build-selftests.sh
scripts/mkinitramfs.sh build/initramfs.cpio.gz
scripts/run-vm.sh bench build/initramfs.cpio.gz build/bench 1500 "$(scenarios_of bench)"
cat build/bench/bench.log
tests/host/bench_report.py build/bench/bench.log
