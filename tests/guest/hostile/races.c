// SPDX-License-Identifier: GPL-2.0
/*
 * races.c: the racing cases of guest_hostile.  Case 3, a second vCPU
 * rewriting the sampled vCPU's frames and stack PTE; case 4, a host thread
 * adding, moving and deleting the memslot a chain runs in; case 5, the
 * knob toggled while sampling, and a VM freed under an enabled event.  A
 * table of the cases, each with the function that runs and reports it.
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kvm_util.h"
#include "processor.h"
#include "ucall_common.h"
#include "hostile.h"

/*
 * Case 3: vCPU 1 rewrites the frame records vCPU 0 spins on, and the PTE
 * that maps them, through aliases of its own.  Each slot i of the frame page
 * only ever holds values from next[i][] and ret[i][]; the PTE only values
 * from pte[].
 */

struct rw_args {
	uint64_t fa;			/* GVA of vCPU 1's alias of the frame page */
	uint64_t pte;			/* GVA of vCPU 1's alias of its PTE */
	uint64_t next[RW_SLOTS][8];
	uint64_t ret[RW_SLOTS][4];
	uint64_t pte_val[8];
	uint64_t iterations;
};

static struct rw_args rw;

static void rewriter_code(void)
{
	uint64_t x = 0x2545f4914f6cdd1dull, n = 0;
	volatile uint64_t *rec;
	unsigned int i;

	for (;;) {
		while (!guest_stop) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			i = x & (RW_SLOTS - 1);
			if (((x >> 8) & 7) == 7) {
				*(volatile uint64_t *)rw.pte = rw.pte_val[(x >> 12) & 7];
			} else {
				rec = (volatile uint64_t *)(rw.fa + RW_OFF + i * RW_STRIDE);
				rec[0] = rw.next[i][(x >> 16) & 7];
				rec[1] = rw.ret[i][(x >> 20) & 3];
			}
			n++;
		}
		WRITE_ONCE(rw.iterations, n);
		GUEST_SYNC(n);
	}
}

/* The values each slot's return address ever has: see chain_ok(). */
uint64_t rw_vals[RW_SLOTS][3];

/* ---------------------------------------------------------------------- */
/* Case 3: a second vCPU rewrites the sampled vCPU's frames and stack PTE */
/* ---------------------------------------------------------------------- */

#define C3_BASE			C1_BASE
#define RW_RET(i)		(0x5100000ull + (uint64_t)(i) * 0x10000)
#define RW_ALT(i)		(0x6100000ull + (uint64_t)(i) * 0x10000)

static void test_rewriter(const char *name)
{
	uint64_t s = C3_BASE, fa = C3_BASE + SZ_4M, pta = C3_BASE + SZ_8M;
	uint64_t *pte, v, f[RW_SLOTS + 1];
	struct kvm_vcpu *vcpus[2];
	vm_paddr_t gs, gs2, pt;
	struct kvm_vm *vm;
	struct hcase *c;
	const char *err;
	int i;

	vm = __vm_create_with_vcpus(VM_SHAPE_DEFAULT, 2, EXTRA_PAGES, guest_code, vcpus);
	vcpu_arch_set_entry_point(vcpus[1], rewriter_code);

	/*
	 * The frame page S: slots f(0..3) hold {f(i + 1), RW_RET(i)}, f(4)
	 * holds {0, 0}.  Its twin S2, which vCPU 1 also points S's PTE at,
	 * holds {f(i + 1), RW_ALT(i)}.  S + 4K is not mapped.
	 */
	gs = wb_map_page(vm, s);
	gs2 = vm_phy_page_alloc(vm, KVM_GUEST_PAGE_TABLE_MIN_PADDR, 0);
	memset(addr_gpa2hva(vm, gs2), 0, PAGE_SIZE);
	for (i = 0; i <= RW_SLOTS; i++)
		f[i] = s + RW_OFF + i * RW_STRIDE;
	for (i = 0; i < RW_SLOTS; i++) {
		uint64_t next[8] = {
			f[i + 1], f[i + 1], f[i], f[i] - RW_STRIDE, f[i] + 4,
			BIT_ULL(63), s + PAGE_SIZE + 0x800, 0,
		};
		uint64_t ret[4] = { RW_RET(i), RW_RET(i), RW_RET(i) ^ 0x8000, 0 };

		wb_put_rec_gpa(vm, gs + RW_OFF + i * RW_STRIDE, f[i + 1], RW_RET(i));
		wb_put_rec_gpa(vm, gs2 + RW_OFF + i * RW_STRIDE, f[i + 1], RW_ALT(i));
		memcpy(rw.next[i], next, sizeof(next));
		memcpy(rw.ret[i], ret, sizeof(ret));
		rw_vals[i][0] = RW_RET(i);
		rw_vals[i][1] = RW_RET(i) ^ 0x8000;
		rw_vals[i][2] = RW_ALT(i);
	}

	/* vCPU 1's aliases: of S, and of the page table holding S's PTE. */
	wb_map_gpa(vm, fa, gs);
	pte = leaf_entry(vm, s);
	v = *pte;
	pt = addr_hva2gpa(vm, (void *)((uintptr_t)pte & ~(uintptr_t)(PAGE_SIZE - 1)));
	wb_map_gpa(vm, pta, pt);
	rw.fa = fa;
	rw.pte = pta + ((uintptr_t)pte & (PAGE_SIZE - 1));
	leaf_variants(vm, v, gs2, rw.pte_val);
	rw.iterations = 0;
	sync_global_to_guest(vm, rw);

	c = new_case(name, f[0], EXP_REWRITE);
	err = run_case(c, vm, vcpus, 2, NULL);
	sync_global_from_guest(vm, rw);
	snprintf(c->note, sizeof(c->note),
		 "vCPU 1 did %lu rewrites (frames and PTE: %s)", rw.iterations,
		 leaf_variants_what);
	if (!err)
		err = check_progress(c);
	if (!err && !rw.iterations)
		err = "vCPU 1 did not run";
	report(c, err);
	kvm_vm_free(vm);
}

/* ---------------------------------------------------------------------- */
/* Case 4: memslot add/move/delete under the chain                        */
/* ---------------------------------------------------------------------- */

#define C4_BASE			C1_BASE
#define C4_SLOT			10
#define C4_GPA			0x80000000ull
#define C4_GPA_MOVED		0x90000000ull
#define C4_PAGES		16

static uint64_t c4_b, c4_c;

/*
 * The pause after each memslot ioctl, in which the guest runs on the state
 * the ioctl left.  Under TCG a round's four ioctls take about 60 ms, and the
 * vCPU thread spends them in the host: with pauses of 1-2 ms the guest got
 * 47 of 1752 samples in one run and a whole 250 ms without one.
 */
#define MEMSLOT_PAUSE_US	10000

static void op_time(struct stress *st, uint64_t t0)
{
	uint64_t us = (wb_now_ns() - t0) / 1000;

	if (us > st->max_op_us)
		st->max_op_us = us;
}

static void *memslot_fn(void *arg)
{
	struct stress *st = arg;
	struct kvm_vm *vm = st->vm;
	volatile uint64_t *p;
	uint64_t t0;

	while (!st->stop) {
		t0 = wb_now_ns();
		vm_userspace_mem_region_add(vm, VM_MEM_SRC_ANONYMOUS, C4_GPA, C4_SLOT, C4_PAGES, 0);
		op_time(st, t0);
		/* C first, then B: a readable B never leads to an unwritten C. */
		p = addr_gpa2hva(vm, C4_GPA);
		p[(c4_c & (PAGE_SIZE - 1)) / 8] = 0;
		p[(c4_c & (PAGE_SIZE - 1)) / 8 + 1] = R3;
		asm volatile("" ::: "memory");
		p[(c4_b & (PAGE_SIZE - 1)) / 8] = c4_c;
		p[(c4_b & (PAGE_SIZE - 1)) / 8 + 1] = R2;
		usleep(MEMSLOT_PAUSE_US);

		t0 = wb_now_ns();
		vm_mem_region_move(vm, C4_SLOT, C4_GPA_MOVED);
		op_time(st, t0);
		usleep(MEMSLOT_PAUSE_US);

		t0 = wb_now_ns();
		vm_mem_region_move(vm, C4_SLOT, C4_GPA);
		op_time(st, t0);
		usleep(MEMSLOT_PAUSE_US);

		t0 = wb_now_ns();
		vm_mem_region_delete(vm, C4_SLOT);
		op_time(st, t0);
		usleep(MEMSLOT_PAUSE_US);
		st->iterations++;
	}
	return NULL;
}

static void test_memslots(const char *name)
{
	struct stress st = { .fn = memslot_fn };
	struct kvm_vcpu *vcpu;
	struct kvm_vm *vm;
	struct hcase *c;
	const char *err;
	uint64_t a;

	/* A in memslot 0 = {B, R1}; B = {C, R2} and C = {0, R3} in slot 10. */
	vm = create_vm(&vcpu);
	wb_map_page(vm, C4_BASE);
	wb_map_gpa(vm, C4_BASE + PAGE_SIZE, C4_GPA);
	a = C4_BASE + 0x800;
	c4_b = C4_BASE + PAGE_SIZE + 0x100;
	c4_c = C4_BASE + PAGE_SIZE + 0x200;
	wb_put_rec(vm, a, c4_b, R1);

	c = new_case(name, a, EXP_PREFIX);
	c->rets[0] = R1;
	c->rets[1] = R2;
	c->rets[2] = R3;
	c->nr_exp = 4;
	c->min_exp = 2;
	err = run_case(c, vm, &vcpu, 1, &st);
	snprintf(c->note, sizeof(c->note),
		 "%lu add/move/move/delete rounds, slowest memslot ioctl %lu us",
		 st.iterations, st.max_op_us);
	if (!err)
		err = check_progress(c);
	if (!err && (!c->st.hist[4] || !(c->st.hist[2] + c->st.hist[3])))
		err = "the race was not exercised: need both full and cut chains";
	report(c, err);
	kvm_vm_free(vm);
}

/* ---------------------------------------------------------------------- */
/* Case 5: knob toggling, and VM teardown under an enabled event          */
/* ---------------------------------------------------------------------- */

static void *toggle_fn(void *arg)
{
	struct stress *st = arg;

	while (!st->stop) {
		__wb_knob_write(0);
		usleep(500);
		__wb_knob_write(1);
		usleep(500);
		st->iterations++;
	}
	return NULL;
}

static void test_knob_toggle(const char *name)
{
	struct stress st = { .fn = toggle_fn };
	struct kvm_vcpu *vcpu;
	struct kvm_vm *vm;
	struct hcase *c;
	const char *err;
	uint64_t a;

	vm = chain_vm(&vcpu, &a);
	c = new_exact(name, a, 3, R1, R2, R3);
	c->kind = EXP_TOGGLE;
	err = run_case(c, vm, &vcpu, 1, &st);
	wb_knob_write(true);
	snprintf(c->note, sizeof(c->note), "%lu Y/N toggle rounds", st.iterations);
	if (!err)
		err = check_progress(c);
	if (!err && (!c->st.nochain || !c->st.hist[4]))
		err = "the toggling was not exercised: need samples with and without a chain";
	report(c, err);
	kvm_vm_free(vm);
}

/*
 * kvm_vm_free() while the event is enabled on the vCPU thread, which has
 * left KVM_RUN but is alive; the thread then does host work and exits.
 */
static void test_free_after_exit(const char *name)
{
	static char errbuf[320];
	const char *err = NULL;
	struct kvm_vcpu *vcpu;
	struct runner r;
	struct sampler s;
	struct timespec ts;
	struct kvm_vm *vm;
	struct hcase *c;
	struct lat *l = malloc(sizeof(*l));
	uint64_t a, host_before, t0;

	vm = chain_vm(&vcpu, &a);
	c = new_exact(name, a, 3, R1, R2, R3);
	c->cpu_clock = true;
	watchdog_arm(c->name);
	c->limit = sysctl_max_stack;
	spin_rbp = a;
	sync_global_to_guest(vm, spin_rbp);
	*stop_flag(vm) = 0;

	runner_start(&r, vcpu, RUN_HOLD);
	c->tid = r.tid;
	lat_start(l);
	sampler_open(&s, c);
	sem_post(&r.go);
	t0 = wb_now_ms();
	while (!run_goal(c, wb_now_ms() - t0) && !r.done)
		usleep(20000);

	*stop_flag(vm) = 1;
	deadline_in(&ts, JOIN_TIMEOUT_S);
	if (sem_timedwait(&r.left, &ts)) {
		err = "HANG: vCPU not back from KVM_RUN after the stop";
		runner_join(&r);
	} else {
		/* Let the thread block on 'release': it is then not sampled. */
		usleep(10000);
		sampler_drain(&s);
		host_before = c->st.host;

		kvm_vm_free(vm);
		sem_post(&r.release);
		if (!runner_join(&r))
			err = "HANG: vCPU thread did not exit";
	}
	vm = NULL;

	sampler_close(&s);
	lat_stop(l, c);
	free(l);
	watchdog_disarm();
	if (!err && !r.ok) {
		snprintf(errbuf, sizeof(errbuf), "vCPU: %s", r.err);
		err = errbuf;
	}
	if (!err) {
		snprintf(c->note, sizeof(c->note),
			 "%lu host samples of the vCPU thread after kvm_vm_free()",
			 c->st.host - host_before);
		if (c->st.host == host_before)
			err = "no sample after kvm_vm_free(): the event stopped sampling";
	}
	report(c, err);
}

/*
 * kvm_vm_free() while the vCPU thread is still in KVM_RUN, spinning on the
 * chain: the memslots go away under the running guest, the library's vCPU
 * fd is closed, and the vCPU thread drops the last reference to the VM when
 * it leaves KVM_RUN.  With @c, the thread is sampled into @c (knob @knob);
 * without, it is not sampled at all.  Returns whether KVM_RUN returned by
 * itself within FREE_EXIT_S; if not, the thread is kicked with a signal.
 */
#define FREE_EXIT_S		10

static bool free_in_kvm_run(struct hcase *c, bool knob, char *what, size_t size)
{
	struct kvm_vcpu *vcpu;
	struct runner r;
	struct sampler s;
	struct kvm_vm *vm;
	struct lat *l = malloc(sizeof(*l));
	uint64_t a, t0, free_ms;
	bool exited;

	vm = chain_vm(&vcpu, &a);
	spin_rbp = a;
	sync_global_to_guest(vm, spin_rbp);
	*stop_flag(vm) = 0;
	wb_knob_write(knob);

	runner_start(&r, vcpu, RUN_RAW);
	if (c) {
		c->tid = r.tid;
		c->limit = sysctl_max_stack;
		lat_start(l);
		sampler_open(&s, c);
	}
	sem_post(&r.go);
	t0 = wb_now_ms();
	if (c) {
		while (!run_goal(c, wb_now_ms() - t0) && !r.done)
			usleep(20000);
	} else {
		usleep(RUN_MS * 1000);
	}

	t0 = wb_now_ms();
	kvm_vm_free(vm);
	free_ms = wb_now_ms() - t0;
	exited = runner_join_t(&r, FREE_EXIT_S);

	if (c) {
		sampler_close(&s);
		lat_stop(l, c);
	}
	free(l);
	wb_knob_write(true);
	snprintf(what, size, "kvm_vm_free() took %lu ms, then KVM_RUN %s: %s", free_ms,
		 exited ? "returned by itself" : "had to be interrupted by a signal", r.err);
	return exited;
}

static void test_free_in_kvm_run(const char *name)
{
	struct hcase *c, scratch = {};
	char what[400], ctl1[400], ctl2[400];
	const char *err = NULL;
	bool exited, exited1, exited2;

	c = new_case(name, 0, EXP_PREFIX);
	c->rets[0] = R1;
	c->rets[1] = R2;
	c->rets[2] = R3;
	c->nr_exp = 4;
	c->min_exp = 1;
	watchdog_arm(c->name);
	exited = free_in_kvm_run(c, true, what, sizeof(what));
	if (exited) {
		snprintf(c->note, sizeof(c->note), "%s", what);
		watchdog_disarm();
		report(c, NULL);
		return;
	}

	/*
	 * The vCPU did not come out by itself.  Whether that is the feature's
	 * doing is told by the same teardown with the knob off (sampled), and
	 * without any perf event on the thread.
	 */
	scratch.name = "control";
	scratch.kind = EXP_TOGGLE;
	scratch.marker = PERF_CONTEXT_GUEST_KERNEL;
	exited1 = free_in_kvm_run(&scratch, false, ctl1, sizeof(ctl1));
	exited2 = free_in_kvm_run(NULL, true, ctl2, sizeof(ctl2));
	watchdog_disarm();
	snprintf(c->note, sizeof(c->note),
		 "%s\n#   control, knob N, sampled: %s\n#   control, not sampled: %s",
		 what, ctl1, ctl2);
	/* The feature's doing only if both controls came out by themselves. */
	if (exited1 && exited2)
		err = "the vCPU stays in KVM_RUN after kvm_vm_free() only when sampled, knob on";
	report(c, err);
}

static const struct {
	const char *name;
	void (*run)(const char *name);
} race_cases[] = {
	{ "3 race: vCPU 1 rewrites vCPU 0's frames and stack PTE", test_rewriter },
	{ "4 race: memslot under the chain added, moved, deleted", test_memslots },
	{ "5 knob toggled Y/N every 0.5 ms while sampling", test_knob_toggle },
	{ "5 teardown: kvm_vm_free() with the event on, vCPU thread alive, then exits",
	  test_free_after_exit },
	{ "5 teardown: kvm_vm_free() while the sampled vCPU is in KVM_RUN",
	  test_free_in_kvm_run },
};

static void test_races(void)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(race_cases); i++)
		race_cases[i].run(race_cases[i].name);
}

const struct suite race_suite = {
	.run = test_races,
	.nr_cases = ARRAY_SIZE(race_cases),
};
