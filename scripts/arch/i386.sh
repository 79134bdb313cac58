# SPDX-License-Identifier: GPL-2.0
# i386: the 32-bit guest (run by the x86_64 test VM), and the gate's 32-bit
# builds.  Fields: see arch_load in scripts/lib.sh.
arch_make=(ARCH=i386)
arch_cc=gcc
arch_image=arch/x86/boot/bzImage
arch_user_cc=i686-linux-gnu-gcc
arch_user_cross=i686-linux-gnu-
arch_gate_dirs="arch/x86/events/ arch/x86/kvm/ kernel/events/ kernel/bpf/"
