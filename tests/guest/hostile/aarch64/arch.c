// SPDX-License-Identifier: GPL-2.0
/*
 * arch.c: guest_hostile on arm64: the guest's spin loop, the suites in the
 * order they run, and the stack page's level 3 descriptor that the
 * rewriting vCPU of case 3 changes.
 */
#include "kvm_util.h"
#include "processor.h"
#include "../hostile.h"

/*
 * Spin with x29 = @fp until *@stop, counting up *@loops.  Every sample
 * whose guest PC is in [spin_start, spin_end) sees exactly that x29.  The
 * code is position independent: aarch64/paging.c also runs a copy of it
 * with the MMU off.
 */
asm(".pushsection .text\n"
	".global hostile_spin\n"
	".type hostile_spin, %function\n"
	"hostile_spin:\n"
	"	stp x29, x30, [sp, #-16]!\n"
	"	mov x29, x0\n"
	".global spin_start\n"
	"spin_start:\n"
	"	ldr x3, [x2]\n"
	"	add x3, x3, #1\n"
	"	str x3, [x2]\n"
	"	ldr x3, [x1]\n"
	"	cbz x3, spin_start\n"
	".global spin_end\n"
	"spin_end:\n"
	"	ldp x29, x30, [sp], #16\n"
	"	ret\n"
	".global hostile_spin_end\n"
	"hostile_spin_end:\n"
	".size hostile_spin, . - hostile_spin\n"
	".popsection\n");

const struct suite *const suites[] = {
	&page_table_suite,
	&max_stack_suite,
	&race_suite,
};
const int nr_suites = ARRAY_SIZE(suites);

uint64_t *leaf_entry(struct kvm_vm *vm, uint64_t gva)
{
	return virt_get_pte_hva(vm, gva);
}

const char leaf_variants_what[] = "valid, S2, outside every memslot, invalid, reserved type";

void leaf_variants(struct kvm_vm *vm, uint64_t v, vm_paddr_t alt, uint64_t vals[8])
{
	uint64_t oa = GENMASK_ULL(47, vm->page_shift);

	vals[0] = v;
	vals[1] = v;
	vals[2] = v;
	vals[3] = (v & ~oa) | alt;
	vals[4] = (v & ~oa) | alt;
	vals[5] = (v & ~oa) | MMIO_GPA;
	vals[6] = v & ~DESC_VALID;
	/* A level 3 descriptor of type 0b01: reserved, invalid. */
	vals[7] = v & ~DESC_TABLE;
}
