// SPDX-License-Identifier: GPL-2.0
/*
 * guest_spin: a KVM guest that spins in a known frame-pointer call chain,
 *
 *	guest_code -> spin_top -> spin_mid -> spin_leaf
 *
 * for the given number of seconds, so that the host can sample it with
 * 'perf kvm --guest record -g' and check the guest frames it records.
 * The guest runs at CPL0 (guest kernel mode; EL1 on arm64).  The guest code
 * lives in this ELF at the same virtual addresses as in the guest, so the
 * binary itself serves as the guest's symbol table
 * (--guestvmlinux=guest_spin).
 *
 * On arm64 it is built with -mbranch-protection=pac-ret+leaf and its guest
 * runs with pointer authentication on, so the return addresses in its frame
 * records are signed, as in a distribution kernel; it prints one of them,
 * as saved and as XPACLRI strips it.
 */
#include <stdlib.h>
#include <time.h>

#include "test_util.h"
#include "kvm_util.h"
#include "processor.h"

#define SPIN_ITERATIONS	2000000UL
#define X86_EFLAGS_IF	(1u << 9)

static volatile uint64_t spin_count;

#ifdef __aarch64__
/* spin_leaf()'s saved return address, as stored and stripped by XPACLRI. */
static uint64_t leaf_ret[2];

static inline uint64_t xpaclri(uint64_t lr)
{
	register uint64_t x30 asm("x30") = lr;

	asm volatile("hint #7" : "+r" (x30));	/* XPACLRI */
	return x30;
}
#endif

static noinline void spin_leaf(void)
{
	unsigned long i;

	/*
	 * GCC 12 sets up no frame in a leaf function that needs no stack,
	 * even with -mno-omit-leaf-frame-pointer; asking for the frame
	 * address forces one, as a real leaf with locals would have.
	 */
	asm volatile("" :: "r"(__builtin_frame_address(0)));
#ifdef __aarch64__
	{
		uint64_t *fp = __builtin_frame_address(0);

		WRITE_ONCE(leaf_ret[0], fp[1]);
		WRITE_ONCE(leaf_ret[1], xpaclri(fp[1]));
	}
#endif
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

#ifdef __aarch64__
/*
 * The vCPU with pointer authentication (its features, the IA key,
 * SCTLR_EL1.EnIA), starting at guest_code() with x29 = x30 = 0, the
 * outermost frame record.
 */
static struct kvm_vm *create_vm(struct kvm_vcpu **vcpu)
{
	struct kvm_vcpu_init init = { .target = -1 };
	struct kvm_vm *vm;
	uint64_t sctlr;

	TEST_REQUIRE(kvm_has_cap(KVM_CAP_ARM_PTRAUTH_ADDRESS) &&
		     kvm_has_cap(KVM_CAP_ARM_PTRAUTH_GENERIC));
	init.features[0] |= BIT(KVM_ARM_VCPU_PTRAUTH_ADDRESS) |
			    BIT(KVM_ARM_VCPU_PTRAUTH_GENERIC);
	vm = vm_create(1);
	*vcpu = aarch64_vcpu_add(vm, 0, &init, guest_code);
	vcpu_set_reg(*vcpu, ARM64_CORE_REG(regs.regs[29]), 0);
	vcpu_set_reg(*vcpu, ARM64_CORE_REG(regs.regs[30]), 0);
	vcpu_set_reg(*vcpu, KVM_ARM64_SYS_REG(SYS_APIAKEYLO_EL1), 0x0123456789abcdefull);
	vcpu_set_reg(*vcpu, KVM_ARM64_SYS_REG(SYS_APIAKEYHI_EL1), 0xfedcba9876543210ull);
	vcpu_get_reg(*vcpu, KVM_ARM64_SYS_REG(SYS_SCTLR_EL1), &sctlr);
	vcpu_set_reg(*vcpu, KVM_ARM64_SYS_REG(SYS_SCTLR_EL1), sctlr | SCTLR_ELx_ENIA);
	return vm;
}
#else
static struct kvm_vm *create_vm(struct kvm_vcpu **vcpu)
{
	struct kvm_vm *vm = vm_create_with_one_vcpu(vcpu, guest_code);
	struct kvm_regs regs;

	/*
	 * Interrupts on, as a guest kernel mostly runs: KVM injects none here,
	 * and an emulated VMX (Bochs 2.7) holds the host's interrupts while the
	 * guest has IF clear, so that the spin would get no samples there.
	 */
	vcpu_regs_get(*vcpu, &regs);
	regs.rflags |= X86_EFLAGS_IF;
	vcpu_regs_set(*vcpu, &regs);
	return vm;
}
#endif

int main(int argc, char *argv[])
{
	struct kvm_vcpu *vcpu;
	struct kvm_vm *vm;
	struct timespec start, now;
	unsigned long rounds = 0;
	int seconds = argc > 1 ? atoi(argv[1]) : 3;
	struct ucall uc;

	vm = create_vm(&vcpu);
	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		vcpu_run(vcpu);
		switch (get_ucall(vcpu, &uc)) {
		case UCALL_SYNC:
			rounds++;
			break;
		case UCALL_ABORT:
			REPORT_GUEST_ASSERT(uc);
		default:
			TEST_FAIL("Unexpected exit %s, ucall %lu",
				  exit_reason_str(vcpu->run->exit_reason), uc.cmd);
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec - start.tv_sec < seconds);
	printf("guest_spin: %lu rounds of guest_code -> spin_top -> spin_mid -> spin_leaf in %d s\n",
	       rounds, seconds);
#ifdef __aarch64__
	sync_global_from_guest(vm, leaf_ret);
	printf("guest_spin: spin_leaf's saved return address 0x%lx, stripped 0x%lx\n",
	       leaf_ret[0], leaf_ret[1]);
	TEST_ASSERT(leaf_ret[0] != leaf_ret[1],
		    "spin_leaf's return address is not signed: 0x%lx", leaf_ret[0]);
#endif
	kvm_vm_free(vm);
	return 0;
}
