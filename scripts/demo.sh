#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The README's demo command: build the patched KVM host, boot it under QEMU,
# run a guest spinning in a known call chain, record it from the host with
# 'perf kvm --guest record -g', and print the guest call stacks it recorded.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
step() {
	local name=$1 s=$(date +%s)
	shift
	echo "== demo: $name"
	"$@"
	echo "== demo: $name took $(( $(date +%s) - s )) s"
}
step "installing packages" scripts/deps.sh
step "kernel tree with the series" scripts/tree.sh --if-needed
step "building the KVM host kernel" scripts/build-kernel.sh host configs/host.config
step "building perf" scripts/build-perf.sh
step "building the guest program" scripts/build-selftests.sh
step "packing the initramfs" scripts/mkinitramfs.sh build/initramfs.cpio.gz
step "booting the host and recording the guest" scripts/run-vm.sh \
	build/obj-host/arch/x86/boot/bzImage build/initramfs.cpio.gz build/demo 600 baseline
mkdir -p out
cp build/demo/baseline.data out/perf.data.guest
echo "== demo: the guest's call stacks, as recorded by the host (out/perf.data.guest)"
tests/host/check_baseline.py build/demo/baseline.D build/selftests/wb/guest_spin frames | grep -v '^PASS'
