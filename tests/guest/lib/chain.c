// SPDX-License-Identifier: GPL-2.0
/*
 * chain.c: callchains.  Context markers, formatting for the logs, checking
 * chains against a reference walk, and the unwinder's frame rules, also as
 * a walk of guest frames through the VMM's mapping of guest memory.
 */
#include <stdio.h>
#include <string.h>

#include "wb.h"

bool wb_is_guest_marker(uint64_t e)
{
	return e == PERF_CONTEXT_GUEST || e == PERF_CONTEXT_GUEST_KERNEL ||
	       e == PERF_CONTEXT_GUEST_USER;
}

bool wb_is_marker(uint64_t e)
{
	return e >= (uint64_t)PERF_CONTEXT_MAX;
}

int wb_format_chain(char *buf, size_t size, const uint64_t *chain, uint64_t nr)
{
	uint64_t i, shown = min_t(uint64_t, nr, 12);
	int len;

	len = snprintf(buf, size, "nr=%lu [", nr);
	for (i = 0; i < shown && len < size; i++) {
		const char *sep = i ? " " : "";

		if (chain[i] == PERF_CONTEXT_GUEST_KERNEL)
			len += snprintf(buf + len, size - len, "%sGUEST_KERNEL", sep);
		else if (chain[i] == PERF_CONTEXT_GUEST_USER)
			len += snprintf(buf + len, size - len, "%sGUEST_USER", sep);
		else if (chain[i] == PERF_CONTEXT_KERNEL)
			len += snprintf(buf + len, size - len, "%sKERNEL", sep);
		else if (chain[i] == PERF_CONTEXT_USER)
			len += snprintf(buf + len, size - len, "%sUSER", sep);
		else
			len += snprintf(buf + len, size - len, "%s0x%lx", sep, chain[i]);
	}
	if (len < size)
		len += snprintf(buf + len, size - len, "%s]", nr > shown ? " ..." : "");
	return len;
}

void wb_print_rets(const char *what, const uint64_t *v, int n)
{
	int i;

	printf("  %s (%d):", what, n);
	for (i = 0; i < n && i < 8; i++)
		printf(" 0x%lx", v[i]);
	printf("%s\n", n > 8 ? " ..." : "");
}

/* Count a chain of a sample whose IP is @in_loop; keep the first mismatch. */
void wb_chain_check(struct wb_chainchk *c, bool in_loop, const uint64_t *rets, int n)
{
	if (!in_loop)
		return;
	c->inloop++;
	if (n == c->nref && !memcmp(rets, c->ref, n * sizeof(*rets))) {
		c->exact++;
		return;
	}
	if (!c->nbad && n > 0) {
		c->nbad = min(n, WB_MAX_CHAIN);
		memcpy(c->bad, rets, c->nbad * sizeof(*rets));
	}
}

uint64_t wb_sign_extend(uint64_t va, int va_bits)
{
	return (uint64_t)((int64_t)(va << (64 - va_bits)) >> (64 - va_bits));
}

bool wb_canonical(uint64_t a, int va_bits)
{
	return wb_sign_extend(a, va_bits) == a;
}

bool wb_next_ok(uint64_t fp, uint64_t next)
{
	return next > fp && next - fp <= WB_FRAME_MAX_GAP;
}

/*
 * The return addresses of the frame records from @fp on, read in @vm's
 * memory by GVA (in the host's own memory if @vm is NULL): the reference
 * chain of a known good stack.
 */
int wb_walk_frames(struct kvm_vm *vm, uint64_t fp, uint64_t *rets, int max)
{
	uint64_t *rec;
	int n = 0;

	while (n < max && fp && !(fp & 7)) {
		rec = vm ? addr_gva2hva(vm, fp) : (uint64_t *)fp;
		if (!rec[1])
			break;
		rets[n++] = rec[1];
		if (!wb_next_ok(fp, rec[0]))
			break;
		fp = rec[0];
	}
	return n;
}

#ifdef __x86_64__
static uint8_t *uwalk_page(struct wb_uwalk *w, uint64_t gva)
{
	uint64_t table = w->cr3 & GENMASK_ULL(51, 12), pte, *p;
	int level;

	if ((gva & ~0xfffull) == w->page_gva)
		return w->page_hva;
	for (level = w->levels; level >= 1; level--) {
		int shift = 12 + 9 * (level - 1);

		p = wb_gpa2hva_safe(w->vm, table + ((gva >> shift) & 511) * 8);
		if (!p)
			return NULL;
		pte = READ_ONCE(*p);
		if (!(pte & PTE_PRESENT_MASK))
			return NULL;
		if (level == 1 || (level <= 3 && (pte & PTE_LARGE_MASK))) {
			uint64_t mask = (1ull << shift) - 1;
			uint64_t gpa = (pte & GENMASK_ULL(51, 12) & ~mask) | (gva & mask & ~0xfffull);
			uint8_t *hva = wb_gpa2hva_safe(w->vm, gpa);

			if (!hva)
				return NULL;
			w->page_gva = gva & ~0xfffull;
			w->page_hva = hva;
			return hva;
		}
		table = pte & GENMASK_ULL(51, 12);
	}
	return NULL;
}

/*
 * The frame rules of KVM's unwinder (aligned, canonical, in the half of the
 * first frame, strictly above the previous one by at most 1 MiB, non-zero
 * return address) applied from @fp: the return addresses into @rets.
 */
int wb_uwalk_chain(struct wb_uwalk *w, uint64_t fp, uint64_t *rets, int max)
{
	int va_bits = w->levels == 5 ? 57 : 48, n = 0;
	uint64_t first = fp, rec[2];
	uint8_t *page;

	while (n < max) {
		if ((fp & 7) || !wb_canonical(fp, va_bits) || !wb_canonical(fp + 15, va_bits) ||
		    (fp >> 63) != (first >> 63) || ((fp + 15) >> 63) != (first >> 63))
			break;
		if ((fp & 0xfff) > 0xff0)
			break;		/* records straddling pages: not in this guest */
		page = uwalk_page(w, fp);
		if (!page)
			break;
		memcpy(rec, page + (fp & 0xfff), sizeof(rec));
		if (!rec[1])
			break;
		rets[n++] = rec[1];
		if (!wb_next_ok(fp, rec[0]))
			break;
		fp = rec[0];
	}
	return n;
}
#endif
