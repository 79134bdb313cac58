// SPDX-License-Identifier: GPL-2.0
/*
 * legacy.c: case 2 of guest_hostile, continued: guest code in compat mode,
 * with paging off, with 32-bit paging and with PAE paging (reserved bits
 * in PDPTEs), as a table of cases, each with the function that sets it up.
 */
#include <string.h>

#include "kvm_util.h"
#include "processor.h"
#include "../hostile.h"

/* ---------------------------------------------------------------------- */
/* Case 2, continued: 32-bit code, paging off, 32-bit paging, PAE         */
/* ---------------------------------------------------------------------- */

/*
 * The guest spins in "jmp ." at L_CODE_GVA (or at the code page's GPA with
 * paging off) and is kicked out with a signal.  Frame records are 32-bit,
 * {u32 next, u32 ret}, EBP-based; a record must lie below 4 GiB.
 */
#define L_CODE_GVA		0x30000000u
#define L_FRAME_GVA		0x30200000u
#define L_4M_GVA		0x30400000u
#define L_4M_GPA		0x00800000ull
#define L_4M_SLOT		13
#define L_TOP_GPA		0xfffff000ull
#define L_TOP_SLOT		14
#define L_4G_GPA		0x100000000ull
#define L_4G_SLOT		15
#define PDPTE_RSVD1		BIT_ULL(1)
#define PDPTE_RSVD7		BIT_ULL(7)

/* Offsets of 8 frames in a 4M page: two straddle a 4K boundary. */
static const uint32_t huge32_off[8] = {
	0x10, 0x40ffc, 0x81000, 0xc1230, 0x100ffc, 0x140000, 0x180800, 0x27fff0,
};

/* Records {A + 0x100, R1}, {A + 0x200, R2}, {0, R3} at A = @a, GPA @gpa. */
static void three_frames32(struct kvm_vm *vm, vm_paddr_t gpa, uint32_t a)
{
	wb_put_rec32(vm, gpa, a + 0x100, R1);
	wb_put_rec32(vm, gpa + 0x100, a + 0x200, R2);
	wb_put_rec32(vm, gpa + 0x200, 0, R3);
}

/*
 * Map @gva to @gpa with a 4K page in the PAE or 32-bit tables at @root;
 * @user (0 or PTE_USER_MASK) goes into the PTE and the PDE.
 */
static void map32(struct kvm_vm *vm, vm_paddr_t root, bool pae, uint32_t gva, vm_paddr_t gpa,
		  uint64_t user)
{
	uint64_t *pdpt, *pd, *pt, *e;
	uint32_t *pd32, *pt32, *e32;

	if (pae) {
		pdpt = addr_gpa2hva(vm, root);
		e = &pdpt[gva >> 30];
		if (!(*e & PTE_PRESENT_MASK))
			*e = wb_new_page(vm) | PTE_PRESENT_MASK;
		pd = addr_gpa2hva(vm, *e & PHYSICAL_PAGE_MASK);
		e = &pd[(gva >> 21) & 511];
		if (!(*e & PTE_PRESENT_MASK))
			*e = wb_new_page(vm) | PTE_PRESENT_MASK | PTE_WRITABLE_MASK;
		pt = addr_gpa2hva(vm, *e & PHYSICAL_PAGE_MASK);
		*e |= user;
		pt[(gva >> 12) & 511] = gpa | PTE_PRESENT_MASK | PTE_WRITABLE_MASK | user;
		return;
	}
	pd32 = addr_gpa2hva(vm, root);
	e32 = &pd32[gva >> 22];
	if (!(*e32 & PTE_PRESENT_MASK))
		*e32 = wb_new_page(vm) | PTE_PRESENT_MASK | PTE_WRITABLE_MASK;
	*e32 |= user;
	pt32 = addr_gpa2hva(vm, *e32 & 0xfffff000u);
	pt32[(gva >> 12) & 1023] = gpa | PTE_PRESENT_MASK | PTE_WRITABLE_MASK | user;
}

struct legacy {
	struct hcase *c;
	uint64_t cr0, cr3, cr4, efer;
	bool compat, user;
	uint64_t rip;
};

/* Flat 32-bit segments and the paging mode of @l, or compat mode. */
static void set_mode(struct kvm_vcpu *vcpu, const struct kvm_sregs *lm, const struct legacy *l)
{
	struct kvm_segment code = {
		.limit = 0xffffffff, .selector = 0x8, .type = 0xb, .present = 1,
		.db = 1, .s = 1, .g = 1,
	};
	struct kvm_segment data = {
		.limit = 0xffffffff, .selector = 0x10, .type = 0x3, .present = 1,
		.db = 1, .s = 1, .g = 1,
	};
	struct kvm_sregs sregs = *lm;
	struct kvm_regs regs;

	if (!l->compat) {
		sregs.cr0 = l->cr0;
		sregs.cr3 = l->cr3;
		sregs.cr4 = l->cr4;
		sregs.efer = l->efer;
		sregs.ds = data;
		sregs.es = data;
		sregs.fs = data;
		sregs.gs = data;
		sregs.ss = data;
	}
	if (l->user) {	/* CPL3: CS.RPL and SS.DPL */
		code.selector |= 3;
		code.dpl = 3;
		sregs.ss.selector |= 3;
		sregs.ss.dpl = 3;
	}
	sregs.cs = code;
	vcpu_sregs_set(vcpu, &sregs);

	vcpu_regs_get(vcpu, &regs);
	regs.rip = l->rip;
	regs.rbp = l->c->rbp;
	regs.rflags = 2;
	vcpu_regs_set(vcpu, &regs);
}

/* @c, run from @rip, where the guest spins until kicked out. */
static struct hcase *legacy_case(struct legacy *l, struct hcase *c, uint64_t rip)
{
	c->kick = true;
	c->ip_start = rip;
	c->ip_end = rip + 2;
	l->c = c;
	l->rip = rip;
	return c;
}

#define LEG_CR0			(X86_CR0_PE | X86_CR0_NE)

/* What the cases share: the long-mode registers, the code, some tables. */
struct leg_ctx {
	struct kvm_sregs lm;
	vm_paddr_t code;
	/* the 32-bit PD of the 4M page, and the PDPT of reserved PDPTEs */
	vm_paddr_t pd32, pdpt;
	/* the valid PAE case: its PDPT, and the PDPTEs before the run */
	struct hcase *pae_valid;
	uint64_t *pdpt_c_p;
	uint64_t pdpte_before[2];
};

struct leg_case {
	const char *name;
	/* writes the case's tables and frames, sets up @l */
	void (*setup)(struct kvm_vm *vm, struct leg_ctx *x, struct legacy *l,
		      const struct leg_case *lc);
	/* leg_pae_rsvd(): the PDPTE, 1..3 */
	int pdpte;
};

/* Compat mode (CS.L=0 in long mode), RBP's upper half is garbage. */
static void leg_compat(struct kvm_vm *vm, struct leg_ctx *x, struct legacy *l,
		       const struct leg_case *lc)
{
	vm_paddr_t fr;
	uint32_t a;

	virt_pg_map(vm, L_CODE_GVA, x->code);
	fr = wb_new_page(vm);
	virt_pg_map(vm, L_FRAME_GVA, fr);
	a = L_FRAME_GVA + 0x800;
	three_frames32(vm, fr + 0x800, a);
	legacy_case(l, new_exact(lc->name, 0xdeadbeef00000000ull | a, 3, R1, R2, R3), L_CODE_GVA);
	l->compat = true;
}

/* Paging off: GVA = GPA. */
static void leg_paging_off(struct kvm_vm *vm, struct leg_ctx *x, struct legacy *l,
			   const struct leg_case *lc)
{
	vm_paddr_t fr = wb_new_page(vm);

	three_frames32(vm, fr + 0x800, fr + 0x800);
	legacy_case(l, new_exact(lc->name, fr + 0x800, 3, R1, R2, R3), x->code);
	l->cr0 = LEG_CR0;
}

/*
 * Paging off, 0xfffffff0 = {0xfffffffc, R1}: the next record would end
 * above 4 GiB; read anyway, its return address would be the decoy at GPA
 * 4 GiB.
 */
static void leg_cross_4g(struct kvm_vm *vm, struct leg_ctx *x, struct legacy *l,
			 const struct leg_case *lc)
{
	vm_userspace_mem_region_add(vm, VM_MEM_SRC_ANONYMOUS, L_TOP_GPA, L_TOP_SLOT, 1, 0);
	vm_userspace_mem_region_add(vm, VM_MEM_SRC_ANONYMOUS, L_4G_GPA, L_4G_SLOT, 1, 0);
	memset(addr_gpa2hva(vm, L_TOP_GPA), 0, PAGE_SIZE);
	memset(addr_gpa2hva(vm, L_4G_GPA), 0, PAGE_SIZE);
	wb_put_rec32(vm, 0xfffffff0ull, 0xfffffffc, R1);
	*(uint32_t *)addr_gpa2hva(vm, 0xfffffffcull) = 0;
	*(uint32_t *)addr_gpa2hva(vm, L_4G_GPA) = R9;
	legacy_case(l, new_exact(lc->name, 0xfffffff0, 1, R1), x->code);
	l->cr0 = LEG_CR0;
}

/* 32-bit paging: the 8-frame chain in a 4M page (CR4.PSE=1). */
static void leg_pse(struct kvm_vm *vm, struct leg_ctx *x, struct legacy *l,
		    const struct leg_case *lc)
{
	uint32_t *pd32_p;
	int k;

	x->pd32 = wb_new_page(vm);
	map32(vm, x->pd32, false, L_CODE_GVA, x->code, 0);
	vm_userspace_mem_region_add(vm, VM_MEM_SRC_ANONYMOUS, L_4M_GPA, L_4M_SLOT,
				    SZ_4M / PAGE_SIZE, 0);
	memset(addr_gpa2hva(vm, L_4M_GPA), 0, SZ_4M);
	pd32_p = addr_gpa2hva(vm, x->pd32);
	pd32_p[L_4M_GVA >> 22] = L_4M_GPA | PTE_PRESENT_MASK | PTE_WRITABLE_MASK | PTE_LARGE_MASK;
	for (k = 0; k < 8; k++)
		wb_put_rec32(vm, L_4M_GPA + huge32_off[k], k < 7 ? L_4M_GVA + huge32_off[k + 1] : 0,
			     RC(k));
	legacy_case(l, new_exact(lc->name, L_4M_GVA + huge32_off[0], 8, RC(0), RC(1), RC(2),
				 RC(3), RC(4), RC(5), RC(6), RC(7)), L_CODE_GVA);
	l->cr0 = LEG_CR0 | X86_CR0_PG;
	l->cr3 = x->pd32;
	l->cr4 = X86_CR4_PSE;
}

/*
 * The same (leg_pse()'s tables) with CR4.PSE=0: PDE.PS is ignored, the PDE
 * points at a page table, i.e. at the first 4K of the 4M region, whose
 * entry 0 is zero: not present.
 */
static void leg_no_pse(struct kvm_vm *vm, struct leg_ctx *x, struct legacy *l,
		       const struct leg_case *lc)
{
	legacy_case(l, new_exact(lc->name, L_4M_GVA + huge32_off[0], 0), L_CODE_GVA);
	l->cr0 = LEG_CR0 | X86_CR0_PG;
	l->cr3 = x->pd32;
}

/*
 * PAE: a valid chain under PDPTE 1, the code under PDPTE 0.  The chain is
 * kept away from the PDPTE that the guest's own fetches walk: a PAE PDPTE
 * has no accessed bit, bit 5 is reserved, and an emulated CPU that sets it
 * anyway would make that PDPTE invalid.
 */
static void leg_pae(struct kvm_vm *vm, struct leg_ctx *x, struct legacy *l,
		    const struct leg_case *lc)
{
	vm_paddr_t pdpt_c, fr;
	uint32_t a;

	pdpt_c = wb_new_page(vm);
	x->pdpt_c_p = addr_gpa2hva(vm, pdpt_c);
	map32(vm, pdpt_c, true, L_CODE_GVA, x->code, 0);
	a = 1u << 30 | L_FRAME_GVA;
	fr = wb_new_page(vm);
	map32(vm, pdpt_c, true, a, fr, 0);
	three_frames32(vm, fr + 0x800, a + 0x800);
	x->pae_valid = legacy_case(l, new_exact(lc->name, a + 0x800, 3, R1, R2, R3), L_CODE_GVA);
	x->pdpte_before[0] = x->pdpt_c_p[0];
	x->pdpte_before[1] = x->pdpt_c_p[1];
	l->cr0 = LEG_CR0 | X86_CR0_PG;
	l->cr3 = pdpt_c;
	l->cr4 = X86_CR4_PAE;
}

/*
 * A PDPT whose PDPTEs 1..3 have reserved bits, each over the same valid
 * chain: bit 1; bit 7 (PD at GPA 0x1000); bits 1 and 7 (PD at GPA 0).  The
 * PDs' addresses have bits 29:13 clear, so that a check against the
 * 4-level 1G-page mask would not catch them.  The first case builds it.
 */
static void leg_pae_rsvd(struct kvm_vm *vm, struct leg_ctx *x, struct legacy *l,
			 const struct leg_case *lc)
{
	uint64_t *pdpt_p;
	vm_paddr_t fr;
	uint32_t a;

	if (!x->pdpt) {
		x->pdpt = wb_new_page(vm);
		pdpt_p = addr_gpa2hva(vm, x->pdpt);
		map32(vm, x->pdpt, true, L_CODE_GVA, x->code, 0);
		TEST_ASSERT_EQ(vm_phy_page_alloc(vm, 0, 0), 0);
		TEST_ASSERT_EQ(vm_phy_page_alloc(vm, 0x1000, 0), 0x1000);
		memset(addr_gpa2hva(vm, 0), 0, 2 * PAGE_SIZE);
		pdpt_p[1] = wb_new_page(vm) | PTE_PRESENT_MASK | PDPTE_RSVD1;
		pdpt_p[2] = 0x1000 | PTE_PRESENT_MASK | PDPTE_RSVD7;
		pdpt_p[3] = 0x0 | PTE_PRESENT_MASK | PDPTE_RSVD1 | PDPTE_RSVD7;
	}
	a = (uint32_t)lc->pdpte << 30 | L_FRAME_GVA;
	fr = wb_new_page(vm);
	map32(vm, x->pdpt, true, a, fr, 0);
	three_frames32(vm, fr + 0x800, a + 0x800);
	legacy_case(l, new_exact(lc->name, a + 0x800, 0), L_CODE_GVA);
	l->cr0 = LEG_CR0 | X86_CR0_PG;
	l->cr3 = x->pdpt;
	l->cr4 = X86_CR4_PAE;
}

/*
 * PDPTE bit 7 again, now with bit 13 set in the PD's address, in a second
 * PDPT: a check against the 4-level 1G-page mask catches that.
 */
static void leg_pae_rsvd_bit13(struct kvm_vm *vm, struct leg_ctx *x, struct legacy *l,
			       const struct leg_case *lc)
{
	vm_paddr_t pdpt2, pd, fr;
	uint32_t a;

	pdpt2 = wb_new_page(vm);
	map32(vm, pdpt2, true, L_CODE_GVA, x->code, 0);
	do {
		pd = wb_new_page(vm);
	} while (!(pd & BIT_ULL(13)));
	((uint64_t *)addr_gpa2hva(vm, pdpt2))[1] = pd | PTE_PRESENT_MASK | PDPTE_RSVD7;
	a = 1u << 30 | L_FRAME_GVA;
	fr = wb_new_page(vm);
	map32(vm, pdpt2, true, a, fr, 0);
	three_frames32(vm, fr + 0x800, a + 0x800);
	legacy_case(l, new_exact(lc->name, a + 0x800, 0), L_CODE_GVA);
	l->cr0 = LEG_CR0 | X86_CR0_PG;
	l->cr3 = pdpt2;
	l->cr4 = X86_CR4_PAE;
}

/*
 * 32-bit paging at CPL3: A = {S, R1} in a user page, S in a supervisor
 * page of the same page table.  A 32-bit user chain may point anywhere
 * below 4 GiB, guest kernel memory included: R1 only, S is not read.
 */
static void leg_user(struct kvm_vm *vm, struct leg_ctx *x, struct legacy *l,
		     const struct leg_case *lc)
{
	vm_paddr_t pd = wb_new_page(vm), fr = wb_new_page(vm), kfr = wb_new_page(vm);
	uint32_t a = L_FRAME_GVA + 0x800, sup = L_FRAME_GVA + PAGE_SIZE + 0x100;

	map32(vm, pd, false, L_CODE_GVA, x->code, PTE_USER_MASK);
	map32(vm, pd, false, L_FRAME_GVA, fr, PTE_USER_MASK);
	map32(vm, pd, false, L_FRAME_GVA + PAGE_SIZE, kfr, 0);
	wb_put_rec32(vm, fr + 0x800, sup, R1);
	wb_put_rec32(vm, kfr + 0x100, 0, R9);
	legacy_case(l, new_exact(lc->name, a, 1, R1), L_CODE_GVA)->marker = PERF_CONTEXT_GUEST_USER;
	l->user = true;
	l->cr0 = LEG_CR0 | X86_CR0_PG;
	l->cr3 = pd;
}

static const struct leg_case leg_cases[] = {
	{ "2 modes: compat mode, EBP chain, RBP bits 63:32 garbage", leg_compat },
	{ "2 modes: paging off, EBP chain", leg_paging_off },
	{ "2 modes: paging off, record crossing 4 GiB", leg_cross_4g },
	{ "2 modes: 32-bit paging, stack in a 4M page", leg_pse },
	{ "2 modes: 32-bit paging, CR4.PSE=0 ignores PDE.PS", leg_no_pse },
	{ "2 modes: 32-bit paging, CPL3, next in a supervisor page", leg_user },
	{ "2 modes: PAE, EBP chain", leg_pae },
	{ "2 modes: PAE, PDPTE with reserved bit 1", leg_pae_rsvd, 1 },
	{ "2 modes: PAE, PDPTE with reserved bit 7", leg_pae_rsvd, 2 },
	{ "2 modes: PAE, PDPTE with reserved bits 1 and 7", leg_pae_rsvd, 3 },
	{ "2 modes: PAE, PDPTE with reserved bit 7, PD address bit 13 set",
	  leg_pae_rsvd_bit13 },
};

static void test_legacy_modes(void)
{
	struct legacy l[ARRAY_SIZE(leg_cases)] = {};
	struct leg_ctx x = {};
	struct kvm_vcpu *vcpu;
	struct kvm_vm *vm;
	const char *err;
	int i;

	vm = create_vm(&vcpu);
	vcpu_sregs_get(vcpu, &x.lm);
	x.code = wb_new_page(vm);
	*(uint16_t *)addr_gpa2hva(vm, x.code) = 0xfeeb;	/* jmp . */
	for (i = 0; i < ARRAY_SIZE(leg_cases); i++)
		leg_cases[i].setup(vm, &x, &l[i], &leg_cases[i]);

	for (i = 0; i < ARRAY_SIZE(leg_cases); i++) {
		set_mode(vcpu, &x.lm, &l[i]);
		err = run_case(l[i].c, vm, &vcpu, 1, NULL);
		if (l[i].c == x.pae_valid)
			snprintf(x.pae_valid->note, sizeof(x.pae_valid->note),
				 "PDPTE 0 (the code's) 0x%lx before the run, 0x%lx after; PDPTE 1 (the chain's) 0x%lx, 0x%lx",
				 x.pdpte_before[0], x.pdpt_c_p[0], x.pdpte_before[1],
				 x.pdpt_c_p[1]);
		report(l[i].c, err);
	}
	kvm_vm_free(vm);
}

const struct suite legacy_suite = {
	.run = test_legacy_modes,
	.nr_cases = ARRAY_SIZE(leg_cases),
};
