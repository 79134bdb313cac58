# SPDX-License-Identifier: GPL-2.0
# x86_64: the test VM (the L1 KVM host) and the 64-bit guest.  One record
# per architecture, read by arch_load (scripts/lib.sh), which documents
# each field.
arch_make=()
arch_cc=gcc
arch_image=arch/x86/boot/bzImage
arch_qemu=qemu-system-x86_64
# TCG's AMD CPU with SVM and NPT (kvm_amd loads with nested paging).
# thread=single: QEMU 7.2 runs all vCPUs in one thread (round robin).  With
# its default, one thread per vCPU, the VM lost interrupts and corrupted
# memory while nested guests ran (README: "The test VM").
arch_machine=(-accel tcg,thread=single -cpu max -m 4G)
# One core per socket: without ACPI, Linux finds CPUs in SeaBIOS's MP
# table, which lists only the first logical CPU of each package.
arch_smp() { echo "-smp $1,sockets=$1,cores=1,threads=1"; }
arch_console=ttyS0
# Without a TSC frequency every KVM selftest aborts on KVM_GET_TSC_KHZ.
arch_append() {
	echo "nokaslr tsc_early_khz=$(awk -F: '/^cpu MHz/ { printf "%d", $2 * 1000; exit }' /proc/cpuinfo) tsc=reliable"
}
arch_user_cc=gcc
arch_gate_dirs="arch/x86/events/ arch/x86/kvm/ kernel/events/ kernel/bpf/"
