// SPDX-License-Identifier: GPL-2.0
/*
 * paging.c: cases 1 and 2 of guest_hostile on arm64: frame chains through
 * crafted stage 1 translation tables of the EL1&0 regime, with each
 * granule (4K, 16K, 64K) and level count (3, 4), blocks at every level,
 * invalid and reserved descriptors, a table loop, tables and pages outside
 * every memslot, tagged frame pointers with and without TBI, and the MMU
 * off.  A table of cases, each one VM.
 *
 * Each case spins with x29 = A, in an ordinary page: A = {B, R1}; B (a
 * stack switch away, in the crafted region) = {B + 0x100, R2}, and
 * B + 0x100 = {0, R3}.  A walk that can read B records [R1, R2, R3]; one
 * that cannot stops after R1.  Where a walk that broke a rule would read
 * something else, the case puts R9 there.
 */
#include <string.h>

#include "kvm_util.h"
#include "processor.h"
#include "../hostile.h"

#define TCR_TBI0		BIT_ULL(37)
#define SCTLR_M			BIT_ULL(0)

/*
 * The first record's page, and the crafted region, at 64 TiB: aligned to
 * every block, and no descriptor of its walk maps the code or the first
 * record, not even 64K's level 1 entries of 4 TiB each.
 */
#define NORMAL_GVA		C1_BASE
#define SPECIAL_GVA		0x400000000000ull
#define A_GVA			(NORMAL_GVA + 0x800)
#define B_GVA			(SPECIAL_GVA + 0x800)

/*
 * What a block descriptor maps: a memslot at 4 GiB, aligned to every block
 * size a 40-bit IPA allows (2M, 32M, 512M, 1G); and one at 512 GiB for the
 * blocks that no descriptor may hold at that level, where a walk that took
 * them would find R9.
 */
#define BLOCK_GPA		0x100000000ull
#define BLOCK_SLOT		12
#define DECOY_GPA		0x8000000000ull
#define DECOY_SLOT		13

/* A tag in the top byte of an address; bit 55 stays as it is. */
#define TAG(t)			((uint64_t)(t) << 56)

enum pt_op {
	OP_NONE,
	OP_INVALID,	/* clear the valid bit of the descriptor at the level */
	OP_RESERVED,	/* level 3: type 0b01, reserved */
	OP_BLOCK,	/* a block descriptor at the level */
	OP_LOOP,	/* a table descriptor pointing at its own table */
	OP_TABLE_HOLE,	/* a table descriptor to a GPA in no memslot */
	OP_PAGE_HOLE,	/* a page descriptor to a GPA in no memslot */
	OP_TBI,		/* tagged frame pointers, TCR_EL1.TBI0 set */
	OP_NO_TBI,	/* a tagged x29, TCR_EL1.TBI0 clear */
	OP_NO_TBI_NEXT,	/* a tagged saved frame pointer, TBI0 clear */
	OP_MMU_OFF,	/* SCTLR_EL1.M clear: frames at IPAs */
};

struct pt_case {
	const char *name;
	enum vm_guest_mode mode;
	enum pt_op op;
	int level;
	/* the return addresses expected: the first nr of R1, R2, R3 */
	int nr;
};

/* The default mode: 4K, 48-bit VA, 4 levels (not a constant). */
#define P4K			NUM_VM_MODES
#define P16K			VM_MODE_P40V48_16K
#define P64K			VM_MODE_P40V48_64K
#define P16K_47			VM_MODE_P36V47_16K

static const struct pt_case pt_cases[] = {
	{ "2 stage 1: 4K granule, 4 levels (control)",		P4K, OP_NONE, 0, 3 },
	{ "2 stage 1: 16K granule, 4 levels (control)",		P16K, OP_NONE, 0, 3 },
	{ "2 stage 1: 16K granule, 47-bit VA, 3 levels",	P16K_47, OP_NONE, 0, 3 },
	{ "2 stage 1: 64K granule, 3 levels",			P64K, OP_NONE, 0, 3 },
	{ "2 stage 1: 4K, 1G block at level 1",			P4K, OP_BLOCK, 1, 3 },
	{ "2 stage 1: 4K, 2M block at level 2",			P4K, OP_BLOCK, 2, 3 },
	{ "2 stage 1: 16K, 32M block at level 2",		P16K, OP_BLOCK, 2, 3 },
	{ "2 stage 1: 64K, 512M block at level 2",		P64K, OP_BLOCK, 2, 3 },
	{ "2 stage 1: 4K, block at level 0 (reserved)",		P4K, OP_BLOCK, 0, 1 },
	{ "2 stage 1: 16K, block at level 1 (52-bit only)",	P16K, OP_BLOCK, 1, 1 },
	{ "2 stage 1: 64K, block at level 1 (52-bit only)",	P64K, OP_BLOCK, 1, 1 },
	{ "2 stage 1: 4K, invalid descriptor at level 0",	P4K, OP_INVALID, 0, 1 },
	{ "2 stage 1: 4K, invalid descriptor at level 1",	P4K, OP_INVALID, 1, 1 },
	{ "2 stage 1: 4K, invalid descriptor at level 2",	P4K, OP_INVALID, 2, 1 },
	{ "2 stage 1: 4K, invalid descriptor at level 3",	P4K, OP_INVALID, 3, 1 },
	{ "2 stage 1: 64K, invalid descriptor at level 3",	P64K, OP_INVALID, 3, 1 },
	{ "2 stage 1: 4K, level 3 descriptor of type 0b01",	P4K, OP_RESERVED, 3, 1 },
	{ "2 stage 1: 16K, level 3 descriptor of type 0b01",	P16K, OP_RESERVED, 3, 1 },
	{ "2 stage 1: 4K, table loop at level 1",		P4K, OP_LOOP, 1, 2 },
	{ "2 stage 1: 4K, level 2 table outside every memslot",	P4K, OP_TABLE_HOLE, 1, 1 },
	{ "2 stage 1: 4K, page outside every memslot",		P4K, OP_PAGE_HOLE, 3, 1 },
	{ "2 stage 1: TBI0 set, tagged frame pointers",		P4K, OP_TBI, 0, 3 },
	{ "2 stage 1: TBI0 clear, tagged x29",			P4K, OP_NO_TBI, 0, 0 },
	{ "2 stage 1: TBI0 clear, tagged saved frame pointer",	P4K, OP_NO_TBI_NEXT, 0, 1 },
	{ "1 frames: MMU off, frames at IPAs",			P4K, OP_MMU_OFF, 0, 3 },
};

static int start_level(struct kvm_vm *vm)
{
	return 4 - vm->pgtable_levels;
}

/* The shift of what a descriptor at @level maps (a block or a page). */
static unsigned int level_shift(struct kvm_vm *vm, int level)
{
	return vm->page_shift + (3 - level) * (vm->page_shift - 3);
}

/* May a descriptor at @level be a block, with 48-bit output addresses? */
static bool block_ok(struct kvm_vm *vm, int level)
{
	return level == 2 || (level == 1 && vm->page_shift == 12);
}

/* The descriptor at @level of the walk of @gva, whose tables must exist. */
static uint64_t *desc_at(struct kvm_vm *vm, uint64_t gva, int level)
{
	uint64_t table = vm->pgd, *p = NULL;
	int l;

	for (l = start_level(vm); l <= level; l++) {
		uint64_t idx = (gva >> level_shift(vm, l)) & GENMASK_ULL(vm->page_shift - 4, 0);

		p = addr_gpa2hva(vm, table + idx * 8);
		if (l == level)
			break;
		TEST_ASSERT((*p & (DESC_VALID | DESC_TABLE)) == (DESC_VALID | DESC_TABLE),
			    "gva 0x%lx: no table descriptor at level %d", gva, l);
		table = *p & GENMASK_ULL(47, vm->page_shift);
	}
	return p;
}

/* A memslot of one page at @gpa, zeroed. */
static void add_slot(struct kvm_vm *vm, uint64_t gpa, int slot)
{
	vm_userspace_mem_region_add(vm, VM_MEM_SRC_ANONYMOUS, gpa, slot, 1, 0);
	memset(addr_gpa2hva(vm, gpa), 0, vm->page_size);
}

/* A block descriptor at @level of B's walk, mapping @out (aligned). */
static void make_block(struct kvm_vm *vm, const struct pt_case *pc)
{
	uint64_t size = BIT_ULL(level_shift(vm, pc->level));
	uint64_t *d = desc_at(vm, SPECIAL_GVA, pc->level);
	uint64_t leaf = *virt_get_pte_hva(vm, SPECIAL_GVA);
	uint64_t attrs = leaf & (GENMASK_ULL(11, 2) | GENMASK_ULL(63, 50));
	uint64_t out = 0;

	if (block_ok(vm, pc->level)) {
		TEST_ASSERT(!(SPECIAL_GVA & (size - 1)), "B's region is not aligned to the block");
		out = BLOCK_GPA;
		add_slot(vm, out, BLOCK_SLOT);
		wb_put_rec_gpa(vm, out + 0x800, B_GVA + 0x100, R2);
		wb_put_rec_gpa(vm, out + 0x900, 0, R3);
	} else if (!(DECOY_GPA & (size - 1)) && DECOY_GPA < BIT_ULL(vm->pa_bits)) {
		/* Taken for a block, it would map B to R9's records. */
		out = DECOY_GPA;
		add_slot(vm, out, DECOY_SLOT);
		wb_put_rec_gpa(vm, out + 0x800, B_GVA + 0x100, R9);
		wb_put_rec_gpa(vm, out + 0x900, 0, R9);
	}
	*d = out | attrs | DESC_VALID;
}

static struct hcase *pt_setup(struct kvm_vm *vm, struct kvm_vcpu *vcpu, const struct pt_case *pc)
{
	static const uint64_t rets[] = { R1, R2, R3 };
	uint64_t fp = A_GVA, *d, v;

	wb_map_page(vm, NORMAL_GVA);
	wb_map_page(vm, SPECIAL_GVA);
	wb_put_rec(vm, A_GVA, B_GVA, R1);
	wb_put_rec(vm, B_GVA, B_GVA + 0x100, R2);
	wb_put_rec(vm, B_GVA + 0x100, 0, R3);

	switch (pc->op) {
	case OP_NONE:
		break;
	case OP_INVALID:
		*desc_at(vm, SPECIAL_GVA, pc->level) &= ~DESC_VALID;
		break;
	case OP_RESERVED:
		*desc_at(vm, SPECIAL_GVA, pc->level) &= ~DESC_TABLE;
		break;
	case OP_BLOCK:
		make_block(vm, pc);
		break;
	case OP_LOOP:
		/*
		 * B's level 1 entry (index 0) points at its own table T1, so
		 * the walk reads T1[0] again at levels 2 and 3, and there takes
		 * it for a page descriptor mapping T1: B reads T1's words 256
		 * and 257, the record {0, R2}.  The walk is bounded by the
		 * levels, as the architecture's.
		 */
		d = desc_at(vm, SPECIAL_GVA, pc->level);
		TEST_ASSERT(!((SPECIAL_GVA >> 12) & GENMASK_ULL(26, 0)),
			    "B's indexes at levels 1 to 3 must be 0");
		v = addr_hva2gpa(vm, (void *)((uintptr_t)d & ~(uintptr_t)(vm->page_size - 1)));
		*d = v | DESC_VALID | DESC_TABLE;
		wb_put_rec_gpa(vm, v + (B_GVA & 0xfff), 0, R2);
		break;
	case OP_TABLE_HOLE:
		d = desc_at(vm, SPECIAL_GVA, pc->level);
		*d = (*d & ~GENMASK_ULL(47, vm->page_shift)) | MMIO_GPA;
		break;
	case OP_PAGE_HOLE:
		d = virt_get_pte_hva(vm, SPECIAL_GVA);
		*d = (*d & ~GENMASK_ULL(47, vm->page_shift)) | MMIO_GPA;
		break;
	case OP_TBI:
		vcpu_get_reg(vcpu, KVM_ARM64_SYS_REG(SYS_TCR_EL1), &v);
		vcpu_set_reg(vcpu, KVM_ARM64_SYS_REG(SYS_TCR_EL1), v | TCR_TBI0);
		fp = A_GVA | TAG(0x5a);
		wb_put_rec(vm, A_GVA, B_GVA | TAG(0x33), R1);
		wb_put_rec(vm, B_GVA, (B_GVA + 0x100) | TAG(0x77), R2);
		break;
	case OP_NO_TBI:
		fp = A_GVA | TAG(0x5a);
		break;
	case OP_NO_TBI_NEXT:
		wb_put_rec(vm, A_GVA, B_GVA | TAG(0x33), R1);
		break;
	case OP_MMU_OFF:
		break;
	}
	return new_exact_a(pc->name, fp, pc->nr, rets);
}

/*
 * With SCTLR_EL1.M clear the vCPU runs a copy of hostile_spin() at an IPA,
 * on a stack at an IPA, with the stop flag and loop counter at theirs; its
 * frames are at IPAs.  It cannot return from there: it is kicked out.
 */
static struct hcase *mmu_off_setup(struct kvm_vm *vm, struct kvm_vcpu *vcpu,
				   const struct pt_case *pc)
{
	static const uint64_t rets[] = { R1, R2, R3 };
	uint64_t len = hostile_spin_end - (const char *)hostile_spin;
	vm_paddr_t code = wb_new_page(vm), fr = wb_new_page(vm);
	struct hcase *c;
	uint64_t v;

	memcpy(addr_gpa2hva(vm, code), (const void *)hostile_spin, len);
	wb_put_rec_gpa(vm, fr + 0x800, fr + 0x900, R1);
	wb_put_rec_gpa(vm, fr + 0x900, fr + 0xa00, R2);
	wb_put_rec_gpa(vm, fr + 0xa00, 0, R3);

	vcpu_set_reg(vcpu, ARM64_CORE_REG(regs.pc), code);
	vcpu_set_reg(vcpu, ARM64_CORE_REG(regs.regs[0]), fr + 0x800);
	vcpu_set_reg(vcpu, ARM64_CORE_REG(regs.regs[1]),
		     addr_gva2gpa(vm, (vm_vaddr_t)&guest_stop));
	vcpu_set_reg(vcpu, ARM64_CORE_REG(regs.regs[2]),
		     addr_gva2gpa(vm, (vm_vaddr_t)&guest_loops));
	vcpu_set_reg(vcpu, ARM64_CORE_REG(sp_el1), code + vm->page_size);
	vcpu_get_reg(vcpu, KVM_ARM64_SYS_REG(SYS_SCTLR_EL1), &v);
	vcpu_set_reg(vcpu, KVM_ARM64_SYS_REG(SYS_SCTLR_EL1), v & ~SCTLR_M);

	c = new_exact_a(pc->name, fr + 0x800, pc->nr, rets);
	c->kick = true;
	c->ip_start = code + (spin_start - (const char *)hostile_spin);
	c->ip_end = code + (spin_end - (const char *)hostile_spin);
	return c;
}

/* Can this host run a guest with @mode's granule and IPA size? */
static const char *mode_missing(enum vm_guest_mode mode)
{
	uint32_t ipa = kvm_check_cap(KVM_CAP_ARM_VM_IPA_SIZE), ipa4k, ipa16k, ipa64k, need;

	aarch64_get_supported_page_sizes(ipa, &ipa4k, &ipa16k, &ipa64k);
	need = vm_guest_mode_params[mode].pa_bits;
	switch (vm_guest_mode_params[mode].page_size) {
	case SZ_4K:
		return ipa4k >= need ? NULL : "no 4K granule with this IPA size";
	case SZ_16K:
		return ipa16k >= need ? NULL : "no 16K granule with this IPA size";
	default:
		return ipa64k >= need ? NULL : "no 64K granule with this IPA size";
	}
}

static void test_page_tables(void)
{
	const struct pt_case *pc;
	enum vm_guest_mode mode;
	struct kvm_vcpu *vcpu;
	struct kvm_vm *vm;
	struct hcase *c;
	const char *why;

	for (pc = pt_cases; pc < pt_cases + ARRAY_SIZE(pt_cases); pc++) {
		mode = pc->mode == P4K ? VM_MODE_DEFAULT : pc->mode;
		why = mode_missing(mode);
		if (why) {
			c = new_case(pc->name, 0, EXP_EXACT);
			c->skip = why;
			report(c, NULL);
			continue;
		}
		vm = __vm_create_shape_with_one_vcpu(VM_SHAPE(mode), &vcpu,
						     EXTRA_PAGES * SZ_4K / vm_guest_mode_params[mode].page_size,
						     guest_code);
		spin_rbp = 0;
		sync_global_to_guest(vm, spin_rbp);
		c = pc->op == OP_MMU_OFF ? mmu_off_setup(vm, vcpu, pc) : pt_setup(vm, vcpu, pc);
		report(c, run_case(c, vm, &vcpu, 1, NULL));
		kvm_vm_free(vm);
	}
}

const struct suite page_table_suite = {
	.run = test_page_tables,
	.nr_cases = ARRAY_SIZE(pt_cases),
};
