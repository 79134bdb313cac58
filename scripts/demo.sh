#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The README's demo command: build the patched KVM host (L1) and a Linux
# guest kernel (L2), boot L1 under QEMU, run L2 in it with QEMU/KVM and a
# workload, record L2 from L1 with 'perf kvm --guest record -g', and show
# where the guest spends its time, call stacks included.
# Output in out/: perf.data.guest, the guest's System.map, the report.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
step() {
	local name=$1 s=$(date +%s)
	shift
	echo "== demo: $name"
	"$@"
	echo "== demo: $name: $(( $(date +%s) - s )) s"
}
step "installing packages" scripts/deps.sh chromium nodejs
step "kernel tree with the series" scripts/tree.sh --if-needed
step "building the KVM host kernel (L1)" scripts/build-kernel.sh host configs/host.config
step "building the guest kernel (L2)" scripts/build-kernel.sh guest configs/guest.config
step "building perf" scripts/build-perf.sh
step "building the selftests" scripts/build-selftests.sh
step "packing the guest's initramfs" scripts/mkinitramfs.sh build/l2.cpio.gz --guest
step "packing the host's initramfs, with QEMU and the guest" scripts/mkinitramfs.sh \
	build/initramfs-demo.cpio.gz --l2 build/obj-guest/arch/x86/boot/bzImage build/l2.cpio.gz
step "booting the host, running the guest and recording it" scripts/run-vm.sh \
	build/obj-host/arch/x86/boot/bzImage build/initramfs-demo.cpio.gz build/demo 900 demo
sed 's/^/    /' build/demo/demo.log
mkdir -p out
cp build/demo/demo.data out/perf.data.guest
cp build/obj-guest/System.map out/guest-System.map
cp build/obj-guest/vmlinux out/guest-vmlinux
step "resolving the guest's call stacks" tests/host/check_demo.py build/demo/demo.D out/guest-System.map
echo "== demo: perf kvm --guest --guestvmlinux=out/guest-vmlinux report -g (top of it)"
build/perf/perf kvm --guest --guestvmlinux=out/guest-vmlinux -i out/perf.data.guest \
	report -g caller,0.5,callee --stdio --percent-limit 3 2>/dev/null | grep -v '^$' | sed -n 1,60p
step "drawing the flame graph" scripts/flamegraph.sh out/perf.data.guest out/guest-vmlinux out
echo "== demo: done: out/flamegraph.html, out/flamegraph.png, out/stacks.folded, out/perf.data.guest"
