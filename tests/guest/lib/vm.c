// SPDX-License-Identifier: GPL-2.0
/*
 * vm.c: guest memory and vCPUs.  GPA lookups that may fail, page and
 * frame-record builders, page-table entries, CPL3 vCPU setup, and vCPU
 * binary stats.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sparsebit.h"
#include "wb.h"

/* Guest physical to host virtual, NULL outside the memslots. */
void *wb_gpa2hva_safe(struct kvm_vm *vm, uint64_t gpa)
{
	struct rb_node *node = vm->regions.gpa_tree.rb_node;

	while (node) {
		struct userspace_mem_region *r =
			container_of(node, struct userspace_mem_region, gpa_node);
		uint64_t start = r->region.guest_phys_addr;
		uint64_t end = start + r->region.memory_size;

		if (gpa >= start && gpa < end)
			return (uint8_t *)r->host_mem + (gpa - start);
		node = gpa < start ? node->rb_left : node->rb_right;
	}
	return NULL;
}

/* A fresh zeroed page of memslot 0. */
vm_paddr_t wb_new_page(struct kvm_vm *vm)
{
	vm_paddr_t gpa = vm_phy_page_alloc(vm, KVM_GUEST_PAGE_TABLE_MIN_PADDR, 0);

	memset(addr_gpa2hva(vm, gpa), 0, vm->page_size);
	return gpa;
}

/* Back @gva with the page at @gpa. */
void wb_map_gpa(struct kvm_vm *vm, uint64_t gva, vm_paddr_t gpa)
{
	virt_pg_map(vm, gva, gpa);
	sparsebit_set(vm->vpages_mapped, gva >> vm->page_shift);
}

/* Back @gva with a fresh zeroed page of memslot 0; return its GPA. */
vm_paddr_t wb_map_page(struct kvm_vm *vm, uint64_t gva)
{
	vm_paddr_t gpa = wb_new_page(vm);

	wb_map_gpa(vm, gva, gpa);
	return gpa;
}

#ifdef __x86_64__
/* The page-table entry that maps @gva at @level, which must exist. */
uint64_t *wb_pte_of(struct kvm_vm *vm, uint64_t gva, int level)
{
	int l = level;
	uint64_t *pte = __vm_get_page_table_entry(vm, gva, &l);

	TEST_ASSERT(l == level, "gva 0x%lx: entry at level %d, not %d", gva, l, level);
	return pte;
}

/*
 * Store @val at @gva (any alignment within a 4K page) through the page
 * tables.  Not addr_gva2hva(): its offset mask keeps bits 63:52 of upper
 * half addresses.
 */
void wb_put_u64(struct kvm_vm *vm, uint64_t gva, uint64_t val)
{
	uint64_t pte = *wb_pte_of(vm, gva, PG_LEVEL_4K);

	TEST_ASSERT(pte & PTE_PRESENT_MASK, "gva 0x%lx not mapped", gva);
	memcpy((uint8_t *)addr_gpa2hva(vm, PTE_GET_PA(pte)) + (gva & (PAGE_SIZE - 1)),
	       &val, sizeof(val));
}

#else
/* Store @val at @gva through the page tables. */
void wb_put_u64(struct kvm_vm *vm, uint64_t gva, uint64_t val)
{
	memcpy(addr_gpa2hva(vm, addr_gva2gpa(vm, gva)), &val, sizeof(val));
}
#endif

/* The frame record {@next, @ret} at @gva. */
void wb_put_rec(struct kvm_vm *vm, uint64_t gva, uint64_t next, uint64_t ret)
{
	wb_put_u64(vm, gva, next);
	wb_put_u64(vm, gva + 8, ret);
}

/* The same at @gpa. */
void wb_put_rec_gpa(struct kvm_vm *vm, vm_paddr_t gpa, uint64_t next, uint64_t ret)
{
	uint64_t *p = addr_gpa2hva(vm, gpa);

	p[0] = next;
	p[1] = ret;
}

/* The 32-bit frame record {@next, @ret} at @gpa. */
void wb_put_rec32(struct kvm_vm *vm, vm_paddr_t gpa, uint32_t next, uint32_t ret)
{
	uint32_t *p = addr_gpa2hva(vm, gpa);

	p[0] = next;
	p[1] = ret;
}

#ifdef __x86_64__
/* Set the U/S bit in every present entry of the guest page tables. */
void wb_pgtable_make_user(struct kvm_vm *vm, vm_paddr_t table, int level)
{
	uint64_t *pte = addr_gpa2hva(vm, table);
	int i;

	for (i = 0; i < PAGE_SIZE / sizeof(*pte); i++) {
		if (!(pte[i] & PTE_PRESENT_MASK))
			continue;
		pte[i] |= PTE_USER_MASK;
		if (level > PG_LEVEL_4K && !(pte[i] & PTE_LARGE_MASK))
			wb_pgtable_make_user(vm, PTE_GET_PA(pte[i]), level - 1);
	}
}

/*
 * Make the page at @gva a user page (U/S set at every level, as the CPU
 * requires), or a supervisor page (U/S clear in its 4K PTE).
 */
void wb_page_set_user(struct kvm_vm *vm, uint64_t gva, bool user)
{
	int level;

	if (!user) {
		*wb_pte_of(vm, gva, PG_LEVEL_4K) &= ~PTE_USER_MASK;
		return;
	}
	for (level = PG_LEVEL_512G; level >= PG_LEVEL_4K; level--)
		*wb_pte_of(vm, gva, level) |= PTE_USER_MASK;
}

/*
 * Start the vCPU at CPL3: user segments, user-accessible page tables, and
 * IOPL=3 so that the guest can do ucalls (port I/O) without leaving CPL3.
 */
void wb_vcpu_set_user_mode(struct kvm_vm *vm, struct kvm_vcpu *vcpu)
{
	uint64_t *gdt = addr_gva2hva(vm, vm->arch.gdt);
	uint8_t *tss = addr_gva2hva(vm, vm->arch.tss);
	uint64_t rsp0 = vm_vaddr_alloc_page(vm) + PAGE_SIZE;
	uint16_t iomap = 0x68;
	struct kvm_segment data = {
		.limit = 0xffffffff,
		.selector = USER_DS,
		.type = 0x3,
		.present = 1,
		.dpl = 3,
		.db = 1,
		.s = 1,
		.g = 1,
	};
	struct kvm_segment code = {
		.limit = 0xffffffff,
		.selector = USER_CS,
		.type = 0xb,
		.present = 1,
		.dpl = 3,
		.s = 1,
		.l = 1,
		.g = 1,
	};
	struct kvm_sregs sregs;
	struct kvm_regs regs;

	gdt[USER_DS >> 3] = USER_DS_DESC;
	gdt[USER_CS >> 3] = USER_CS_DESC;
	/* TSS.RSP0, so that an exception is reported rather than fatal. */
	memcpy(tss + 4, &rsp0, sizeof(rsp0));
	/*
	 * And an I/O permission bitmap that allows every port up to the ucall
	 * port, in case IOPL is not honoured.
	 */
	memcpy(tss + 0x66, &iomap, sizeof(iomap));
	memset(tss + iomap, 0, UCALL_PORT / 8 + 2);
	tss[iomap + UCALL_PORT / 8 + 2] = 0xff;

	wb_pgtable_make_user(vm, vm->pgd, PG_LEVEL_512G);

	vcpu_sregs_get(vcpu, &sregs);
	sregs.cs = code;
	sregs.ss = data;
	sregs.ds = data;
	sregs.es = data;
	sregs.tr.limit = iomap + UCALL_PORT / 8 + 2;
	vcpu_sregs_set(vcpu, &sregs);

	vcpu_regs_get(vcpu, &regs);
	regs.rflags |= X86_EFLAGS_IOPL3;
	vcpu_regs_set(vcpu, &regs);
}
#endif

bool wb_vstat(struct wb_vstats *s, struct kvm_vcpu *vcpu, const char *name, uint64_t *val)
{
	size_t size;
	int i;

	if (s->fd < 0) {
		s->fd = vcpu_get_stats_fd(vcpu);
		read_stats_header(s->fd, &s->header);
		s->desc = read_stats_descriptors(s->fd, &s->header);
	}
	size = get_stats_descriptor_size(&s->header);
	for (i = 0; i < s->header.num_desc; i++) {
		struct kvm_stats_desc *d = (void *)s->desc + i * size;

		if (!strcmp(d->name, name)) {
			read_stat_data(s->fd, &s->header, d, val, 1);
			return true;
		}
	}
	return false;
}

void wb_vstats_close(struct wb_vstats *s)
{
	if (s->fd >= 0) {
		free(s->desc);
		close(s->fd);
	}
}
