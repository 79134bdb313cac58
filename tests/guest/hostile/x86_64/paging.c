// SPDX-License-Identifier: GPL-2.0
/*
 * paging.c: case 2 of guest_hostile, crafted guest page tables (reserved
 * bits, not-present entries, a GPA in no memslot, records straddling two
 * pages, 2M and 1G pages, a huge PML4E, a recursive PML4), as a table of
 * cases, each with the function that sets it up.
 */
#include <string.h>

#include "kvm_util.h"
#include "processor.h"
#include "../hostile.h"

/* ---------------------------------------------------------------------- */
/* Case 2: crafted guest page tables                                      */
/* ---------------------------------------------------------------------- */

#define C2_BASE			0x20000000000ull
#define REGION2(k)		(C2_BASE + (uint64_t)(k) * SZ_4M)
#define C2_1G_GVA		0x30000000000ull
#define C2_1G_GPA		0x40000000ull
#define C2_1G_OFF		0x2a400000ull
#define C2_1G_SLOT		12
#define C2_2M_GPA		0x80000000ull
#define C2_2M_SLOT		11
/* PML4 slots for the recursive entry and the huge PML4E. */
#define PML4_RECURSIVE		510
#define PML4_HUGE		509

/* Offsets of 8 frames in a 2M page: two straddle a 4K boundary. */
static const uint64_t huge_off[8] = {
	0x10, 0x40ff8, 0x81000, 0xc1230, 0x100ff8, 0x140000, 0x180800, 0x1fffe0,
};

/* Records {S + 0x900, R1}, {0, R2} at S + 0x800 in a fresh page at @s. */
static void two_frames(struct kvm_vm *vm, uint64_t s)
{
	wb_map_page(vm, s);
	wb_put_rec(vm, s + 0x800, s + 0x900, R1);
	wb_put_rec(vm, s + 0x900, 0, R2);
}

/* The 8-frame chain of huge_off[] at @gva, backed at @gpa. */
static struct hcase *huge_chain(struct kvm_vm *vm, const char *name, uint64_t gva,
				vm_paddr_t gpa)
{
	struct hcase *c;
	int i;

	for (i = 0; i < 8; i++)
		wb_put_rec_gpa(vm, gpa + huge_off[i], i < 7 ? gva + huge_off[i + 1] : 0, RC(i));
	c = new_exact(name, gva + huge_off[0], 0);
	for (i = 0; i < 8; i++)
		c->rets[i] = RC(i);
	c->nr_exp = 9;
	return c;
}

/* What pt_stack_entry() does to an entry above the stack page. */
enum pt_op {
	PT_RSVD,		/* set reserved bit 51, if there is one */
	PT_NOT_PRESENT,		/* clear the present bit */
	PT_MMIO,		/* point it at a GPA in no memslot */
};

struct pt_case {
	const char *name;
	/* writes the case's tables and frames into @vm, returns the case */
	struct hcase *(*setup)(struct kvm_vm *vm, const struct pt_case *pc);
	/* the case's region, REGION2(region) */
	int region;
	/* pt_stack_entry(): the entry, by level, and what is done to it */
	int level;
	enum pt_op op;
	/* pt_straddle(): the page the record straddles into is not present */
	bool not_present;
};

/* Two frames in a fresh page, the entry at @pc->level above it spoilt: nothing read. */
static struct hcase *pt_stack_entry(struct kvm_vm *vm, const struct pt_case *pc)
{
	uint64_t s = REGION2(pc->region), v;
	bool rsvd_ok = vm->pa_bits < 52;
	struct hcase *c;

	two_frames(vm, s);
	switch (pc->op) {
	case PT_RSVD:
		/* Bit 51 is reserved if MAXPHYADDR < 52. */
		if (rsvd_ok)
			*wb_pte_of(vm, s, pc->level) |= RSVD_BIT;
		break;
	case PT_NOT_PRESENT:
		*wb_pte_of(vm, s, pc->level) &= ~PTE_PRESENT_MASK;
		break;
	case PT_MMIO:
		v = *wb_pte_of(vm, s, pc->level);
		*wb_pte_of(vm, s, pc->level) = (v & ~PHYSICAL_PAGE_MASK) | MMIO_GPA;
		break;
	}
	c = new_exact(pc->name, s + 0x800, 0);
	if (pc->op == PT_RSVD && !rsvd_ok)
		c->skip = "guest MAXPHYADDR is 52: no reserved address bit";
	return c;
}

/* A = P1 + 0xff0 = {P2 + 0x10, R1}, P2 not present: R1 only. */
static struct hcase *pt_next_not_present(struct kvm_vm *vm, const struct pt_case *pc)
{
	uint64_t s = REGION2(pc->region), a;

	wb_map_page(vm, s);
	wb_map_page(vm, s + PAGE_SIZE);
	a = s + 0xff0;
	wb_put_rec(vm, a, s + PAGE_SIZE + 0x10, R1);
	wb_put_rec(vm, s + PAGE_SIZE + 0x10, 0, R9);
	*wb_pte_of(vm, s + PAGE_SIZE, PG_LEVEL_4K) &= ~PTE_PRESENT_MASK;
	return new_exact(pc->name, a, 1, R1);
}

/*
 * A = P1 + 0xff8: its next fp is in P1, its return address in P2, which
 * is mapped two GPA pages further; the page in between holds the decoy
 * that a contiguous read would pick up.  With P2 not present, the record
 * cannot be read.
 */
static struct hcase *pt_straddle(struct kvm_vm *vm, const struct pt_case *pc)
{
	uint64_t s = REGION2(pc->region), a;
	vm_paddr_t g;

	g = vm_phy_pages_alloc(vm, 3, KVM_GUEST_PAGE_TABLE_MIN_PADDR, 0);
	memset(addr_gpa2hva(vm, g), 0, 3 * PAGE_SIZE);
	wb_map_gpa(vm, s, g);
	wb_map_gpa(vm, s + PAGE_SIZE, g + 2 * PAGE_SIZE);
	a = s + 0xff8;
	wb_put_rec(vm, a, s + PAGE_SIZE + 0x100, R1);
	wb_put_rec(vm, s + PAGE_SIZE + 0x100, 0, R2);
	wb_put_rec_gpa(vm, g + PAGE_SIZE, R9, R9);
	if (!pc->not_present)
		return new_exact(pc->name, a, 2, R1, R2);
	*wb_pte_of(vm, s + PAGE_SIZE, PG_LEVEL_4K) &= ~PTE_PRESENT_MASK;
	return new_exact(pc->name, a, 0);
}

/* The stack in a 2M page: the whole 8-frame chain. */
static struct hcase *pt_2m(struct kvm_vm *vm, const struct pt_case *pc)
{
	vm_userspace_mem_region_add(vm, VM_MEM_SRC_ANONYMOUS, C2_2M_GPA, C2_2M_SLOT,
				    SZ_2M / PAGE_SIZE, 0);
	memset(addr_gpa2hva(vm, C2_2M_GPA), 0, SZ_2M);
	__virt_pg_map(vm, REGION2(pc->region), C2_2M_GPA, PG_LEVEL_2M);
	return huge_chain(vm, pc->name, REGION2(pc->region), C2_2M_GPA);
}

/* The same 2M page (of pt_2m()) with reserved bit 13 set in its PDE. */
static struct hcase *pt_2m_rsvd(struct kvm_vm *vm, const struct pt_case *pc)
{
	__virt_pg_map(vm, REGION2(pc->region), C2_2M_GPA, PG_LEVEL_2M);
	*wb_pte_of(vm, REGION2(pc->region), PG_LEVEL_2M) |= BIT_ULL(13);
	return new_exact(pc->name, REGION2(pc->region) + huge_off[0], 0);
}

/* The stack in a 1G page, the chain 0x2a400000 into it. */
static struct hcase *pt_1g(struct kvm_vm *vm, const struct pt_case *pc)
{
	struct hcase *c;

	if (kvm_cpu_has(X86_FEATURE_GBPAGES)) {
		vm_userspace_mem_region_add(vm, VM_MEM_SRC_ANONYMOUS, C2_1G_GPA + C2_1G_OFF,
					    C2_1G_SLOT, SZ_2M / PAGE_SIZE, 0);
		memset(addr_gpa2hva(vm, C2_1G_GPA + C2_1G_OFF), 0, SZ_2M);
		__virt_pg_map(vm, C2_1G_GVA, C2_1G_GPA, PG_LEVEL_1G);
		return huge_chain(vm, pc->name, C2_1G_GVA + C2_1G_OFF, C2_1G_GPA + C2_1G_OFF);
	}
	c = new_exact(pc->name, 0, 0);
	c->skip = "no GBPAGES in KVM's supported CPUID";
	return c;
}

/*
 * A PML4 entry whose PS bit is set (reserved at that level), mapping 512G
 * at GPA 0: read anyway, RBP's record would be GPA 0x800's decoy.
 */
static struct hcase *pt_huge_pml4e(struct kvm_vm *vm, const struct pt_case *pc)
{
	uint64_t *pml4 = addr_gpa2hva(vm, vm->pgd);

	TEST_ASSERT(!pml4[PML4_HUGE] && !pml4[PML4_RECURSIVE], "PML4 slots in use");
	pml4[PML4_HUGE] = PTE_PRESENT_MASK | PTE_WRITABLE_MASK | PTE_LARGE_MASK;
	/* GPA 0 is below what the library allocates from: claim it. */
	TEST_ASSERT_EQ(vm_phy_page_alloc(vm, 0, 0), 0);
	wb_put_rec_gpa(vm, 0x800, 0, R9);
	return new_exact(pc->name, wb_sign_extend((uint64_t)PML4_HUGE << 39, 48) + 0x800, 0);
}

/*
 * A recursive PML4: PML4[510] points at the PML4 itself, so a walk of
 * 510/510/510/510 loops through it at every level and lands on the PML4
 * page as data.  Its free slots 100..103 hold the frame records
 * {next, R1}, {0, R2}: even values, so not-present PML4 entries.
 */
static struct hcase *pt_recursive(struct kvm_vm *vm, const struct pt_case *pc)
{
	uint64_t *pml4 = addr_gpa2hva(vm, vm->pgd), rec;

	pml4[PML4_RECURSIVE] = vm->pgd | PTE_PRESENT_MASK | PTE_WRITABLE_MASK;
	rec = wb_sign_extend((uint64_t)PML4_RECURSIVE << 39 | (uint64_t)PML4_RECURSIVE << 30 |
			     (uint64_t)PML4_RECURSIVE << 21 | (uint64_t)PML4_RECURSIVE << 12, 48);
	TEST_ASSERT(!pml4[100] && !pml4[101] && !pml4[102] && !pml4[103], "PML4 slots in use");
	pml4[100] = rec + 102 * 8;
	pml4[101] = R1;
	pml4[102] = 0;
	pml4[103] = R2;
	return new_exact(pc->name, rec + 100 * 8, 2, R1, R2);
}

static const struct pt_case pt_cases[] = {
	{ "2 page tables: reserved bit 51 in the stack's PTE", pt_stack_entry, 0,
	  PG_LEVEL_4K, PT_RSVD },
	/* The same in the PDE above it (non-leaf). */
	{ "2 page tables: reserved bit 51 in the stack's PDE", pt_stack_entry, 1,
	  PG_LEVEL_2M, PT_RSVD },
	{ "2 page tables: stack PTE not present", pt_stack_entry, 2,
	  PG_LEVEL_4K, PT_NOT_PRESENT },
	{ "2 page tables: stack PDE not present", pt_stack_entry, 3,
	  PG_LEVEL_2M, PT_NOT_PRESENT },
	{ "2 page tables: stack PTE -> GPA in no memslot", pt_stack_entry, 4,
	  PG_LEVEL_4K, PT_MMIO },
	{ "2 page tables: next frame in a not-present page", pt_next_not_present, 5 },
	{ "2 page tables: record straddling two pages", pt_straddle, 6 },
	{ "2 page tables: record straddling into a not-present page", pt_straddle, 7,
	  .not_present = true },
	{ "2 page tables: stack in a 2M page", pt_2m, 8 },
	{ "2 page tables: 2M page with reserved PDE bit 13", pt_2m_rsvd, 10 },
	{ "2 page tables: stack in a 1G page", pt_1g },
	{ "2 page tables: huge PML4E (PS set)", pt_huge_pml4e },
	{ "2 page tables: recursive PML4 entry (walk loops to the PML4)", pt_recursive },
};

static void test_page_tables(void)
{
	struct hcase *list[ARRAY_SIZE(pt_cases)];
	struct kvm_vcpu *vcpu;
	struct kvm_vm *vm;
	int i;

	vm = create_vm(&vcpu);
	for (i = 0; i < ARRAY_SIZE(pt_cases); i++)
		list[i] = pt_cases[i].setup(vm, &pt_cases[i]);

	for (i = 0; i < ARRAY_SIZE(list); i++) {
		if (list[i]->skip)
			report(list[i], NULL);
		else
			report(list[i], run_case(list[i], vm, &vcpu, 1, NULL));
	}
	kvm_vm_free(vm);
}

const struct suite page_table_suite = {
	.run = test_page_tables,
	.nr_cases = ARRAY_SIZE(pt_cases),
};
