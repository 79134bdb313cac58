# SPDX-License-Identifier: GPL-2.0
# arm64: so far the gate's cross builds only.  Fields: see arch_load in
# scripts/lib.sh.
arch_make=(ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-)
arch_cc=aarch64-linux-gnu-gcc
arch_image=arch/arm64/boot/Image
arch_user_cc=aarch64-linux-gnu-gcc
arch_gate_dirs="arch/arm64/kvm/ arch/arm64/kernel/ kernel/events/ kernel/bpf/"
