# SPDX-License-Identifier: GPL-2.0
# arm64: the arm64 test VM (an arm64 KVM host, L1, under QEMU's TCG) and the
# gate's cross builds.  Fields: see arch_load in scripts/lib.sh.
arch_make=(ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-)
arch_cc=aarch64-linux-gnu-gcc
arch_image=arch/arm64/boot/Image
arch_user_cc=aarch64-linux-gnu-gcc
arch_user_cross=aarch64-linux-gnu-
arch_gate_dirs="arch/arm64/kvm/ arch/arm64/kernel/ kernel/events/ kernel/bpf/"
arch_qemu=qemu-system-aarch64
# EL2 (virtualization=on) for KVM, with VHE; a GICv3, for pseudo-NMIs; a
# PMUv3 (-cpu max) whose overflow interrupts fire; pointer authentication
# with QEMU's IMPDEF algorithm, which TCG computes much faster than QARMA5
# (the PACs differ, which nothing here depends on).
arch_machine=(-M virt,virtualization=on,gic-version=3 -cpu max,pauth-impdef=on -accel tcg,thread=single -m 2G)
arch_smp() { echo "-smp $1"; }
arch_console=ttyAMA0
# The scenarios sample the PMU's cycles (wb.event), whose overflow
# interrupt is what these VMs show that x86 under TCG cannot; the demos at
# a pinned 1000 Hz (wb.freq, tests/vm/demo.sh).
arch_append() { echo "nokaslr wb.event=cycles wb.freq=1000"; }
