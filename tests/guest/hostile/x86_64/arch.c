// SPDX-License-Identifier: GPL-2.0
/*
 * arch.c: guest_hostile on x86: the guest's spin loop, the suites in the
 * order they run, and the stack page's PTE that the rewriting vCPU of case 3
 * changes.
 */
#include "kvm_util.h"
#include "processor.h"
#include "../hostile.h"

/*
 * Spin with RBP = @rbp until *@stop, counting up *@loops.  Every sample
 * whose guest IP is in [spin_start, spin_end) sees exactly that RBP.
 */
asm(".pushsection .text\n"
	".global hostile_spin\n"
	".type hostile_spin, @function\n"
	"hostile_spin:\n"
	"	push %rbp\n"
	"	mov %rdi, %rbp\n"
	".global spin_start\n"
	"spin_start:\n"
	"	incq (%rdx)\n"
	"	cmpq $0, (%rsi)\n"
	"	je spin_start\n"
	".global spin_end\n"
	"spin_end:\n"
	"	pop %rbp\n"
	"	ret\n"
	".size hostile_spin, . - hostile_spin\n"
	".popsection\n");

const struct suite *const suites[] = {
	&frame_suite,
	&page_table_suite,
	&legacy_suite,
	&max_stack_suite,
	&race_suite,
};
const int nr_suites = ARRAY_SIZE(suites);

uint64_t *leaf_entry(struct kvm_vm *vm, uint64_t gva)
{
	return wb_pte_of(vm, gva, PG_LEVEL_4K);
}

const char leaf_variants_what[] = "valid, S2, MMIO, not present, reserved bit";

void leaf_variants(struct kvm_vm *vm, uint64_t v, vm_paddr_t alt, uint64_t vals[8])
{
	vals[0] = v;
	vals[1] = v;
	vals[2] = v;
	vals[3] = (v & ~PHYSICAL_PAGE_MASK) | alt;
	vals[4] = (v & ~PHYSICAL_PAGE_MASK) | alt;
	vals[5] = (v & ~PHYSICAL_PAGE_MASK) | MMIO_GPA;
	vals[6] = v & ~PTE_PRESENT_MASK;
	vals[7] = vm->pa_bits < 52 ? v | RSVD_BIT : v & ~PTE_PRESENT_MASK;
}
