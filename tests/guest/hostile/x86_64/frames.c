// SPDX-License-Identifier: GPL-2.0
/*
 * frames.c: case 1 of guest_hostile on x86: crafted frame chains in guest
 * kernel and guest user mode, as tables of the pages and records each case
 * writes.
 */
#include <stdio.h>
#include <string.h>

#include "kvm_util.h"
#include "processor.h"
#include "../hostile.h"

/* ---------------------------------------------------------------------- */
/* Case 1: crafted frame chains                                           */
/* ---------------------------------------------------------------------- */

#define REGION(k)		(C1_BASE + (uint64_t)(k) * SZ_4M)
/* The last 4K page of REGION(k)'s first 2M, and the 2M after it (no PDE). */
#define TAIL_PAGE(k)		(REGION(k) + SZ_2M - PAGE_SIZE)
#define NEXT_2M(k)		(REGION(k) + SZ_2M)
/* The first frame of most cases: in the middle of TAIL_PAGE(k). */
#define A(k)			(TAIL_PAGE(k) + 0x800)
/* The page holding @gva. */
#define PAGE_OF(gva)		((gva) & ~(uint64_t)(PAGE_SIZE - 1))

/* A store into guest memory: a frame record, or its first word only. */
struct store {
	uint64_t gva;
	uint64_t next;
	uint64_t ret;
	bool only_next;
};

#define REC(gva, next, ret)	{ (gva), (next), (ret), false }
#define U64(gva, val)		{ (gva), (val), 0, true }

struct frame_case {
	const char *name;
	/* GVAs backed by fresh pages of memslot 0, before the stores */
	uint64_t map[2];
	/* a GVA backed by a GPA of no memslot, if alias_gva */
	uint64_t alias_gva, alias_gpa;
	/* a mapped GVA whose page belongs to the other mode, if other_mode */
	uint64_t other_mode;
	/* in order, up to the first all-zero one */
	struct store st[4];
	uint64_t rbp;
	/* the chain after the IP: the non-zero return addresses */
	uint64_t rets[3];
};

/* Guest kernel mode; all run in one VM with these pages mapped first. */
static const uint64_t kernel_pages[] = { LOW_TOP_PAGE, HIGH_BASE_PAGE, TOP_PAGE, 0 };

static const struct frame_case kernel_frames[] = {
	{
		/* A control: a valid chain in the lower half. */
		.name = "1 frames: valid 3-frame chain (control)",
		.map = { TAIL_PAGE(0) },
		.st = { REC(A(0), A(0) + 0x100, R1), REC(A(0) + 0x100, A(0) + 0x200, R2),
			REC(A(0) + 0x200, 0, R3) },
		.rbp = A(0), .rets = { R1, R2, R3 },
	}, {
		/* A = {B, R1}, B = {A, R2}: R2 recorded, then A, walked already, stops. */
		.name = "1 frames: cycle A->B->A",
		.map = { TAIL_PAGE(1) },
		.st = { REC(A(1), A(1) + 0x100, R1), REC(A(1) + 0x100, A(1), R2) },
		.rbp = A(1), .rets = { R1, R2 },
	}, {
		/* A = {A, R1}: next == fp stops after R1. */
		.name = "1 frames: self-referencing frame",
		.map = { TAIL_PAGE(2) },
		.st = { REC(A(2), A(2), R1) },
		.rbp = A(2), .rets = { R1 },
	}, {
		/*
		 * A = {A - 0x100, R1}, A - 0x100 = {A + 0x200, R2}: descending is
		 * a stack switch; A + 0x200 lies above A, the walked part, and
		 * holds {0, R3}.
		 */
		.name = "1 frames: descending next (a stack switch)",
		.map = { TAIL_PAGE(3) },
		.st = { REC(A(3), A(3) - 0x100, R1), REC(A(3) - 0x100, A(3) + 0x200, R2),
			REC(A(3) + 0x200, 0, R3) },
		.rbp = A(3), .rets = { R1, R2, R3 },
	}, {
		/*
		 * A = {A - 0x100, R1}, A - 0x100 = {A, R2}: a switch, then back up
		 * into A, walked already: R2 is the last.
		 */
		.name = "1 frames: switch below, back into the walked stack",
		.map = { TAIL_PAGE(17) },
		.st = { REC(A(17), A(17) - 0x100, R1), REC(A(17) - 0x100, A(17), R2) },
		.rbp = A(17), .rets = { R1, R2 },
	}, {
		/* A = {B + 4, R1}: misaligned next stops after R1. */
		.name = "1 frames: misaligned next",
		.map = { TAIL_PAGE(4) },
		.st = { REC(A(4), A(4) + 0x100 + 4, R1), REC(A(4) + 0x100 + 4, 0, R9) },
		.rbp = A(4), .rets = { R1 },
	}, {
		/* RBP = A + 4: nothing is read. */
		.name = "1 frames: misaligned RBP",
		.map = { TAIL_PAGE(5) },
		.st = { REC(A(5) + 4, A(5) + 0x100, R9), REC(A(5) + 0x100, 0, R9) },
		.rbp = A(5) + 4,
	}, {
		/*
		 * RBP = 0x800000000800, non-canonical.  The walker indexes the
		 * PML4 with bits 47:39, so it would reach HIGH_BASE_PAGE's decoy.
		 */
		.name = "1 frames: non-canonical RBP",
		.st = { REC(HIGH_BASE_PAGE + 0x800, 0, R9) },
		.rbp = NONCANONICAL + 0x800,
	}, {
		/* 0x7ffffffff800 = {0x800000000800, R1}: non-canonical next, 4 KiB above. */
		.name = "1 frames: non-canonical next 4 KiB above",
		.st = { REC(LOW_TOP_PAGE + 0x800, NONCANONICAL + 0x800, R1) },
		.rbp = LOW_TOP_PAGE + 0x800, .rets = { R1 },
	}, {
		/*
		 * 0x7fffffffffe8 = {0x7ffffffffff8, R1}: the next record starts
		 * canonical but ends at 0x800000000007.  Read anyway, its second
		 * half would come from HIGH_BASE_PAGE + 0, the decoy R9.
		 */
		.name = "1 frames: record straddling the canonical hole",
		.st = { REC(LOW_TOP_PAGE + 0xfe8, LOW_TOP_PAGE + 0xff8, R1),
			U64(LOW_TOP_PAGE + 0xff8, LOW_TOP_PAGE + 0xff8 + 0x100),
			REC(HIGH_BASE_PAGE, R9, R9) },
		.rbp = LOW_TOP_PAGE + 0xfe8, .rets = { R1 },
	}, {
		/* A = {unmapped page, PT present, R1}. */
		.name = "1 frames: next in an unmapped page (PTE)",
		.map = { REGION(6) },
		.st = { REC(REGION(6) + 0x800, REGION(6) + PAGE_SIZE + 0x800, R1) },
		.rbp = REGION(6) + 0x800, .rets = { R1 },
	}, {
		/* A = {unmapped 2M region, no PDE, R1}. */
		.name = "1 frames: next in an unmapped 2M region (PDE)",
		.map = { TAIL_PAGE(7) },
		.st = { REC(A(7), NEXT_2M(7) + 0x800, R1) },
		.rbp = A(7), .rets = { R1 },
	}, {
		/* A = {GVA mapped to a GPA in no memslot, R1}. */
		.name = "1 frames: next in MMIO (GPA 0xc0000000, no memslot)",
		.map = { TAIL_PAGE(8) },
		.alias_gva = NEXT_2M(8), .alias_gpa = MMIO_GPA,
		.st = { REC(A(8), NEXT_2M(8) + 0x800, R1) },
		.rbp = A(8), .rets = { R1 },
	}, {
		/* A = {GVA mapped to the local APIC's GPA, R1}. */
		.name = "1 frames: next in the LAPIC page (GPA 0xfee00000)",
		.map = { TAIL_PAGE(9) },
		.alias_gva = NEXT_2M(9), .alias_gpa = LAPIC_GPA,
		.st = { REC(A(9), NEXT_2M(9) + 0x800, R1) },
		.rbp = A(9), .rets = { R1 },
	}, {
		/* Lower half to upper half: a switch, which the half stops after R1. */
		.name = "1 frames: lower half -> upper half",
		.map = { TAIL_PAGE(10) },
		.st = { REC(A(10), HIGH_BASE_PAGE + 0x900, R1), REC(HIGH_BASE_PAGE + 0x900, 0, R9) },
		.rbp = A(10), .rets = { R1 },
	}, {
		/*
		 * RBP = 0xffffffffffffffe8 = {0xfffffffffffffff8, R1}: the next
		 * record wraps around to GVA 0, i.e. to the lower half; read
		 * anyway, its return address would be GVA 0's decoy R9.
		 */
		.name = "1 frames: record wrapping around the top to GVA 0",
		.st = { REC(TOP_PAGE + 0xfe8, TOP_PAGE + 0xff8, R1), U64(TOP_PAGE + 0xff8, 0),
			REC(0, R9, R9) },
		.rbp = TOP_PAGE + 0xfe8, .rets = { R1 },
	}, {
		/* A valid chain in the upper half (kernel mode: same half as RBP). */
		.name = "1 frames: valid chain in the upper half",
		.st = { REC(TOP_PAGE + 0x800, TOP_PAGE + 0x900, R1),
			REC(TOP_PAGE + 0x900, TOP_PAGE + 0xa00, R2), REC(TOP_PAGE + 0xa00, 0, R3) },
		.rbp = TOP_PAGE + 0x800, .rets = { R1, R2, R3 },
	}, {
		/* A = {B, 0}: nothing after the IP. */
		.name = "1 frames: zero return address in the first frame",
		.map = { TAIL_PAGE(11) },
		.st = { REC(A(11), A(11) + 0x100, 0), REC(A(11) + 0x100, 0, R9) },
		.rbp = A(11),
	}, {
		/* A = {B, R1}, B = {C, 0}: R1 only. */
		.name = "1 frames: zero return address in the second frame",
		.map = { TAIL_PAGE(12) },
		.st = { REC(A(12), A(12) + 0x100, R1), REC(A(12) + 0x100, A(12) + 0x200, 0),
			REC(A(12) + 0x200, 0, R9) },
		.rbp = A(12), .rets = { R1 },
	}, {
		/* A = {A + 1 MiB, R1}, A + 1 MiB = {0, R2}: the limit is inclusive. */
		.name = "1 frames: next exactly 1 MiB above",
		.map = { TAIL_PAGE(13), PAGE_OF(A(13) + FRAME_MAX_GAP) },
		.st = { REC(A(13), A(13) + FRAME_MAX_GAP, R1), REC(A(13) + FRAME_MAX_GAP, 0, R2) },
		.rbp = A(13), .rets = { R1, R2 },
	}, {
		/* A = {A + 1 MiB + 8, R1}: too far for one stack, a switch. */
		.name = "1 frames: next 1 MiB + 8 above (a stack switch)",
		.map = { TAIL_PAGE(14), PAGE_OF(A(14) + FRAME_MAX_GAP + 8) },
		.st = { REC(A(14), A(14) + FRAME_MAX_GAP + 8, R1),
			REC(A(14) + FRAME_MAX_GAP + 8, 0, R2) },
		.rbp = A(14), .rets = { R1, R2 },
	}, {
		/* A = {U, R1}, U in a user page: R1 only, the user record is not read. */
		.name = "1 frames: kernel mode, next in a user page",
		.map = { TAIL_PAGE(15), NEXT_2M(15) }, .other_mode = NEXT_2M(15),
		.st = { REC(A(15), NEXT_2M(15) + 0x100, R1), REC(NEXT_2M(15) + 0x100, 0, R9) },
		.rbp = A(15), .rets = { R1 },
	}, {
		/* RBP still the user's, as at a system call entry: the IP only. */
		.name = "1 frames: kernel mode, RBP in a user page",
		.map = { TAIL_PAGE(16) }, .other_mode = TAIL_PAGE(16),
		.st = { REC(A(16), A(16) + 0x100, R9), REC(A(16) + 0x100, 0, R9) },
		.rbp = A(16),
	},
};

/* The same at CPL3, in a VM of their own: user frames must stay in the lower half. */
static const uint64_t user_pages[] = { HIGH_BASE_PAGE };

static const struct frame_case user_frames[] = {
	{
		.name = "1 frames: user mode, valid chain (control)",
		.map = { TAIL_PAGE(0) },
		.st = { REC(A(0), A(0) + 0x100, R1), REC(A(0) + 0x100, 0, R2) },
		.rbp = A(0), .rets = { R1, R2 },
	}, {
		.name = "1 frames: user mode, lower half -> upper half",
		.map = { TAIL_PAGE(1) },
		.st = { REC(A(1), HIGH_BASE_PAGE + 0x900, R1), REC(HIGH_BASE_PAGE + 0x900, 0, R9) },
		.rbp = A(1), .rets = { R1 },
	}, {
		.name = "1 frames: user mode, RBP in the upper half",
		.st = { REC(HIGH_BASE_PAGE + 0x800, HIGH_BASE_PAGE + 0x900, R9) },
		.rbp = HIGH_BASE_PAGE + 0x800,
	}, {
		/* A = {S, R1}, S in a supervisor page: R1 only, S is not read. */
		.name = "1 frames: user mode, next in a supervisor page",
		.map = { TAIL_PAGE(2), NEXT_2M(2) }, .other_mode = NEXT_2M(2),
		.st = { REC(A(2), NEXT_2M(2) + 0x100, R1), REC(NEXT_2M(2) + 0x100, 0, R9) },
		.rbp = A(2), .rets = { R1 },
	}, {
		/* User chains do not switch stacks: R1 only. */
		.name = "1 frames: user mode, descending next",
		.map = { TAIL_PAGE(4) },
		.st = { REC(A(4), A(4) - 0x100, R1), REC(A(4) - 0x100, 0, R9) },
		.rbp = A(4), .rets = { R1 },
	}, {
		/* ... nor take a frame too far above for a switch: R1 only. */
		.name = "1 frames: user mode, next 1 MiB + 8 above",
		.map = { TAIL_PAGE(5), PAGE_OF(A(5) + FRAME_MAX_GAP + 8) },
		.st = { REC(A(5), A(5) + FRAME_MAX_GAP + 8, R1),
			REC(A(5) + FRAME_MAX_GAP + 8, 0, R9) },
		.rbp = A(5), .rets = { R1 },
	}, {
		.name = "1 frames: user mode, RBP in a supervisor page",
		.map = { TAIL_PAGE(3) }, .other_mode = TAIL_PAGE(3),
		.st = { REC(A(3), A(3) + 0x100, R9), REC(A(3) + 0x100, 0, R9) },
		.rbp = A(3),
	},
};

/* Write the pages and records of @fc into @vm; the case expecting its chain. */
static struct hcase *frame_setup(struct kvm_vm *vm, const struct frame_case *fc)
{
	const struct store *s;
	int i, nr;

	for (i = 0; i < ARRAY_SIZE(fc->map) && fc->map[i]; i++)
		wb_map_page(vm, fc->map[i]);
	if (fc->alias_gva)
		wb_map_gpa(vm, fc->alias_gva, fc->alias_gpa);
	for (s = fc->st; s < fc->st + ARRAY_SIZE(fc->st) && (s->gva || s->next || s->ret); s++) {
		if (s->only_next)
			wb_put_u64(vm, s->gva, s->next);
		else
			wb_put_rec(vm, s->gva, s->next, s->ret);
	}
	for (nr = 0; nr < ARRAY_SIZE(fc->rets) && fc->rets[nr]; nr++)
		;
	return new_exact_a(fc->name, fc->rbp, nr, fc->rets);
}

/* One VM with the @nr_pages @pages mapped, then every case of @tbl; run them. */
static void run_frames(const struct frame_case *tbl, int nr, const uint64_t *pages,
		       int nr_pages, bool user)
{
	struct hcase *list[ARRAY_SIZE(kernel_frames)];
	struct kvm_vcpu *vcpu;
	struct kvm_vm *vm;
	int i;

	TEST_ASSERT(nr <= ARRAY_SIZE(list), "Too many frame cases");
	vm = create_vm(&vcpu);
	for (i = 0; i < nr_pages; i++)
		wb_map_page(vm, pages[i]);
	for (i = 0; i < nr; i++) {
		list[i] = frame_setup(vm, &tbl[i]);
		if (user)
			list[i]->marker = PERF_CONTEXT_GUEST_USER;
	}
	if (user)
		wb_vcpu_set_user_mode(vm, vcpu);
	/* After wb_vcpu_set_user_mode(), which makes every page a user page. */
	for (i = 0; i < nr; i++)
		if (tbl[i].other_mode)
			wb_page_set_user(vm, tbl[i].other_mode, !user);
	for (i = 0; i < nr; i++)
		report(list[i], run_case(list[i], vm, &vcpu, 1, NULL));
	kvm_vm_free(vm);
}

static void test_frame_chains(void)
{
	run_frames(kernel_frames, ARRAY_SIZE(kernel_frames), kernel_pages,
		   ARRAY_SIZE(kernel_pages), false);
	run_frames(user_frames, ARRAY_SIZE(user_frames), user_pages,
		   ARRAY_SIZE(user_pages), true);
}

const struct suite frame_suite = {
	.run = test_frame_chains,
	.nr_cases = ARRAY_SIZE(kernel_frames) + ARRAY_SIZE(user_frames),
};
