// SPDX-License-Identifier: GPL-2.0
/*
 * guest_spin: a KVM guest that spins in a known frame-pointer call chain,
 *
 *	guest_code -> spin_top -> spin_mid -> spin_leaf
 *
 * for the given number of seconds, so that the host can sample it with
 * 'perf kvm --guest record -g' and check the guest frames it records.
 * The guest runs at CPL0 (guest kernel mode).  The guest code lives in this
 * ELF at the same virtual addresses as in the guest, so the binary itself
 * serves as the guest's symbol table (--guestvmlinux=guest_spin).
 */
#include <stdlib.h>
#include <time.h>

#include "test_util.h"
#include "kvm_util.h"
#include "processor.h"

#define SPIN_ITERATIONS	2000000UL
#define X86_EFLAGS_IF	(1u << 9)

static volatile uint64_t spin_count;

static noinline void spin_leaf(void)
{
	unsigned long i;

	/*
	 * GCC 12 sets up no frame in a leaf function that needs no stack,
	 * even with -mno-omit-leaf-frame-pointer; asking for the frame
	 * address forces one, as a real leaf with locals would have.
	 */
	asm volatile("" :: "r"(__builtin_frame_address(0)));
	for (i = 0; i < SPIN_ITERATIONS; i++)
		spin_count++;
}

static noinline void spin_mid(void)
{
	spin_leaf();
	asm volatile("" ::: "memory");	/* keep the call from becoming a tail call */
}

static noinline void spin_top(void)
{
	spin_mid();
	asm volatile("" ::: "memory");
}

static void guest_code(void)
{
	for (;;) {
		spin_top();
		GUEST_SYNC(spin_count);
	}
}

int main(int argc, char *argv[])
{
	struct kvm_vcpu *vcpu;
	struct kvm_vm *vm;
	struct timespec start, now;
	unsigned long rounds = 0;
	int seconds = argc > 1 ? atoi(argv[1]) : 3;
	struct kvm_regs regs;
	struct ucall uc;

	vm = vm_create_with_one_vcpu(&vcpu, guest_code);
	/*
	 * Interrupts on, as a guest kernel mostly runs: KVM injects none here,
	 * and an emulated VMX (Bochs 2.7) holds the host's interrupts while the
	 * guest has IF clear, so that the spin would get no samples there.
	 */
	vcpu_regs_get(vcpu, &regs);
	regs.rflags |= X86_EFLAGS_IF;
	vcpu_regs_set(vcpu, &regs);
	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		vcpu_run(vcpu);
		TEST_ASSERT_KVM_EXIT_REASON(vcpu, KVM_EXIT_IO);
		switch (get_ucall(vcpu, &uc)) {
		case UCALL_SYNC:
			rounds++;
			break;
		case UCALL_ABORT:
			REPORT_GUEST_ASSERT(uc);
		default:
			TEST_FAIL("Unexpected ucall %lu", uc.cmd);
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec - start.tv_sec < seconds);
	printf("guest_spin: %lu rounds of guest_code -> spin_top -> spin_mid -> spin_leaf in %d s\n",
	       rounds, seconds);
	kvm_vm_free(vm);
	return 0;
}
