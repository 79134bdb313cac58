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
# no5lvl: with 5-level paging, 6.12's KASAN reports a false
# wild-memory-access for an interrupt taken while identify_cpu() has
# cleared the boot CPU's capabilities: before alternatives are patched,
# pgtable_l5_enabled() then reads LA57 as off, and KASAN takes the direct
# map (0xff11...) for an address without shadow.  Seen once at boot in a
# cold 'make fresh'.  The nested guests still get LA57: KVM advertises it
# from the CPU, not from the host's paging mode (arch/x86/kvm/cpuid.c).
arch_append() {
	echo "nokaslr no5lvl tsc_early_khz=$(awk -F: '/^cpu MHz/ { printf "%d", $2 * 1000; exit }' /proc/cpuinfo) tsc=reliable"
}
arch_user_cc=gcc
arch_gate_dirs="arch/x86/events/ arch/x86/kvm/ kernel/events/ kernel/bpf/"
# The Bochs VM (vmx): Bochs 2.7's Skylake-X, an Intel CPU with VMX, EPT and
# unrestricted guests, so that kvm_intel runs the VMX path QEMU's TCG cannot.
# Bochs counts time in instructions (clock: sync=none) and its TSC ticks once
# per instruction, while Linux would believe the model's CPUID (1.5 GHz):
# tsc_early_khz makes the kernel's second the emulator's, arch_bochs_ips
# instructions.  clearcpuid: features the model lists but Bochs does not
# emulate as Linux expects: the APERF/MPERF MSRs (Bochs logs every read);
# HT, whose CPUID leaf 1 and 4 counts disagree (WARNING in parse_legacy());
# XSAVEC and XSAVES, whose compacted size in CPUID 0xd.1 is the standard
# one (WARNING "XSAVE consistency problem" in fpu__init_system_xstate()).
arch_bochs_cpu=corei7_skylake_x
arch_bochs_ips=100000000
# At 10^8 instructions a second, with a sample costing tens of thousands,
# perf's default 4000 Hz cpu-clock once kept the VM from making progress.
arch_bochs_freq=1000
arch_bochs_append() {
	echo "nokaslr no5lvl tsc_early_khz=$((arch_bochs_ips / 1000)) tsc=reliable clearcpuid=aperfmperf,ht,xsaves,xsavec"
}
