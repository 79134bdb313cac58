// SPDX-License-Identifier: GPL-2.0
/*
 * long.c: case 6 of guest_hostile, on every architecture: long valid
 * chains with the default sample_max_stack and with 16.
 */
#include <stdio.h>

#include "kvm_util.h"
#include "processor.h"
#include "hostile.h"

/* ---------------------------------------------------------------------- */
/* Case 6: long valid chains and sample_max_stack                         */
/* ---------------------------------------------------------------------- */

#define CHAIN_STRIDE		0x20

static void build_chain(struct kvm_vm *vm, uint64_t base, int frames)
{
	uint64_t fp;
	int k;

	for (k = 0; k < frames; k++) {
		fp = base + 0x10 + k * CHAIN_STRIDE;
		wb_put_rec(vm, fp, k < frames - 1 ? fp + CHAIN_STRIDE : 0, RC(k));
	}
}

/*
 * sample_max_stack counts the entries after the marker, the IP included:
 * the chain is cut after max_stack - 1 return addresses.
 */
static struct hcase *chain_case(const char *name, uint64_t base, int frames,
				uint16_t max_stack)
{
	struct hcase *c = new_case(name, base + 0x10, EXP_EXACT);
	int k, limit = max_stack ? max_stack : sysctl_max_stack;

	c->max_stack = max_stack;
	c->nr_exp = min(1 + frames, limit);
	for (k = 0; k < c->nr_exp - 1; k++)
		c->rets[k] = RC(k);
	return c;
}

static const struct {
	const char *name;
	int frames;
	uint16_t max_stack;
} max_stack_cases[] = {
	{ "6 max_stack: 8 frames, default sample_max_stack", 8, 0 },
	{ "6 max_stack: 512 frames, default sample_max_stack", 512, 0 },
	{ "6 max_stack: 8 frames, sample_max_stack=16", 8, 16 },
	{ "6 max_stack: 512 frames, sample_max_stack=16", 512, 16 },
};

static void test_max_stack(void)
{
	struct hcase *list[ARRAY_SIZE(max_stack_cases)];
	struct kvm_vcpu *vcpu;
	uint64_t b8, b512;
	struct kvm_vm *vm;
	int i;

	vm = create_vm(&vcpu);
	b8 = vm_vaddr_alloc(vm, 5 * PAGE_SIZE, KVM_UTIL_MIN_VADDR);
	b512 = vm_vaddr_alloc(vm, 5 * PAGE_SIZE, KVM_UTIL_MIN_VADDR);
	build_chain(vm, b8, 8);
	build_chain(vm, b512, 512);

	for (i = 0; i < ARRAY_SIZE(list); i++)
		list[i] = chain_case(max_stack_cases[i].name,
				     max_stack_cases[i].frames == 8 ? b8 : b512,
				     max_stack_cases[i].frames, max_stack_cases[i].max_stack);
	for (i = 0; i < ARRAY_SIZE(list); i++)
		report(list[i], run_case(list[i], vm, &vcpu, 1, NULL));
	kvm_vm_free(vm);
}

const struct suite max_stack_suite = {
	.run = test_max_stack,
	.nr_cases = ARRAY_SIZE(max_stack_cases),
};
