// SPDX-License-Identifier: GPL-2.0
/*
 * guest_hostile: hostile guests against the KVM guest callchain unwinder,
 * on x86 (SVM and VMX) and on arm64.
 *
 * With kvm.guest_callchains=Y, a perf sample taken while a vCPU runs guest
 * code carries [PERF_CONTEXT_GUEST_{KERNEL,USER}, guest RIP, ret, ret, ...],
 * found by walking the guest's RBP frame records {next fp, return address}
 * through a read-only walk of the guest page tables.  The rules of the
 * unwinder (arch/x86/kvm/guest_callchain.c), for 64-bit guest code:
 *
 *  - the record at fp is read only if fp is 8-byte aligned, the whole record
 *    [fp, fp + 15] is canonical and lies in the canonical half of the first
 *    fp (RBP) for guest kernel mode, in the lower half for guest user mode;
 *  - it is read in one access through a guest page-table walk (present bits,
 *    reserved bits of the guest's paging mode, 2M/1G pages) and the VMM's
 *    mapping of a memslot; if that fails, the walk stops;
 *  - a zero return address stops the walk and is not recorded;
 *  - otherwise the return address is recorded, and the walk goes on to next
 *    only if next > fp and next - fp <= 1 MiB, or, in guest kernel mode, if
 *    next is a stack switch: not in that range, neither 0 nor fp, at most
 *    four per chain; and, after a switch, only if next lies outside the
 *    parts of stacks walked already (each from its first frame to its last);
 *  - at most sample_max_stack entries follow the marker, the IP included.
 *
 * Every case below builds a frame chain whose callchain those rules fully
 * determine, spins in an asm loop with RBP pointing at it, samples the vCPU
 * thread with cpu-clock at 50 kHz (exclude_host=1; with the argument
 * 'cycles', the PMU's cycles, an arm64 host's pseudo-NMI if it uses them)
 * and checks every sample:
 * those whose IP is in the spin loop must carry exactly the derived chain
 * (or, for the racing cases, one of the chains the rules allow).  A host
 * thread measures its clock_nanosleep(1 ms) oversleep meanwhile.
 *
 *  1. crafted frame chains (cycles, misaligned, non-canonical, unmapped,
 *     MMIO, lower to upper half, wrap-around, zero return address, gaps),
 *     in guest kernel and guest user mode;
 *  2. crafted guest page tables (recursive PML4, huge PML4E, reserved bits,
 *     2M and 1G pages, not-present entries, GPA outside every memslot,
 *     records straddling two pages);
 *  3. a second vCPU rewriting the sampled vCPU's frames and stack PTE;
 *  4. a host thread adding, moving and deleting the memslot a chain runs in;
 *  5. the knob toggled while sampling; a VM freed under an enabled event,
 *     both after and before the vCPU thread left KVM_RUN;
 *  6. valid chains of 8 and 512 frames, with the default sample_max_stack
 *     and with 16.
 *
 * On arm64 (arch/arm64/kvm/guest_callchain.c) the frame records are
 * AArch64's {x29, x30}, walked by the same rules in the half of the
 * address space of the first x29 (cases 1 and 2 in aarch64/paging.c):
 *
 *  2. crafted stage 1 translation tables: the 4K, 16K and 64K granules with
 *     3 and 4 levels, blocks at every level that may or may not hold one,
 *     invalid and reserved descriptors, a table loop, tables and pages
 *     outside every memslot, tagged frame pointers with and without TBI,
 *     and the MMU off;
 *
 * and cases 3 to 6 as on x86, the descriptor of the stack page rewritten
 * instead of its PTE.
 *
 * The program's files: main.c (this: the guest code, the watchdog, the
 * reference figures and the TAP plan from the suites' tables), check.c
 * (cases, their checks and reports), run.c (running a case: perf sampling,
 * vCPU threads, latency), and the suites of cases: long.c (6), races.c (3,
 * 4 and 5), and per architecture, in <arch>/: arch.c (the guest's spin
 * loop, the suites in order, the stack page's leaf entry), and on x86
 * frames.c (1), paging.c (2: page tables), legacy.c (2: 32-bit code and
 * paging modes), on arm64 paging.c (1 and 2).
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kvm_util.h"
#include "processor.h"
#include "ucall_common.h"
#include "hostile.h"

/* ---------------------------------------------------------------------- */
/* Guest side                                                             */
/* ---------------------------------------------------------------------- */

/* Written by the host before each run: the RBP the guest spins with. */
uint64_t spin_rbp;
/* Written by the host through its mapping of guest memory: end the run. */
volatile uint64_t guest_stop;
/* Counted up by the spin loop, read by the host: the guest runs. */
volatile uint64_t guest_loops;

void guest_code(void)
{
	for (;;) {
		hostile_spin(READ_ONCE(spin_rbp), &guest_stop, &guest_loops);
		GUEST_SYNC(0);
	}
}

/* ---------------------------------------------------------------------- */
/* Host side: bookkeeping                                                 */
/* ---------------------------------------------------------------------- */

pid_t main_pid;
int sysctl_max_stack;
bool sample_cycles;

static volatile uint64_t watchdog_deadline_ms;
static const char *volatile watchdog_name;

static void kick_handler(int sig)
{
}

/* Bail out if a case hangs: the rest of the run cannot be trusted. */
static void *watchdog_fn(void *arg)
{
	for (;;) {
		uint64_t deadline = watchdog_deadline_ms;

		if (deadline && wb_now_ms() > deadline) {
			printf("# watchdog: case '%s' still running after %d s: HANG\n",
			       watchdog_name, CASE_WATCHDOG_S);
			printf("Bail out! hang in '%s'\n", watchdog_name);
			fflush(stdout);
			wb_knob_restore();
			_exit(KSFT_FAIL);
		}
		sleep(1);
	}
	return NULL;
}

void watchdog_arm(const char *name)
{
	watchdog_name = name;
	watchdog_deadline_ms = wb_now_ms() + CASE_WATCHDOG_S * 1000ull;
}

void watchdog_disarm(void)
{
	watchdog_deadline_ms = 0;
}

/* ---------------------------------------------------------------------- */
/* Reference figures for host responsiveness (not test cases)             */
/* ---------------------------------------------------------------------- */

enum ref_mode {
	REF_IDLE,		/* no guest at all */
	REF_GUEST,		/* a guest spinning, not sampled */
	REF_SAMPLED_OFF,	/* a guest spinning, sampled, knob N */
};

struct ref {
	const char *name;
	uint64_t samples;
	int lat_max_us;
	int lat_p99_us;
};

static const struct {
	const char *name;
	enum ref_mode mode;
} ref_runs[] = {
	{ "reference: idle host, no guest", REF_IDLE },
	{ "reference: guest spinning, not sampled", REF_GUEST },
	{ "reference: guest spinning, sampled, knob N", REF_SAMPLED_OFF },
};

static struct ref refs[ARRAY_SIZE(ref_runs)];
static int nr_refs;

static void reference(const char *name, enum ref_mode mode)
{
	struct hcase tmp = { .name = name, .kind = EXP_TOGGLE,
			     .marker = PERF_CONTEXT_GUEST_KERNEL };
	struct lat *l = malloc(sizeof(*l));
	struct kvm_vcpu *vcpu;
	struct kvm_vm *vm = NULL;
	struct runner r;
	struct sampler s;
	uint64_t a;

	watchdog_arm(name);
	if (mode != REF_IDLE) {
		vm = chain_vm(&vcpu, &a);
		spin_rbp = a;
		sync_global_to_guest(vm, spin_rbp);
		*stop_flag(vm) = 0;
		runner_start(&r, vcpu, RUN_SYNC);
		if (mode == REF_SAMPLED_OFF) {
			wb_knob_write(false);
			tmp.tid = r.tid;
			tmp.limit = sysctl_max_stack;
			sampler_open(&s, &tmp);
		}
		sem_post(&r.go);
	}
	lat_start(l);
	usleep(RUN_MS * 1000);
	lat_stop(l, &tmp);
	if (vm) {
		*stop_flag(vm) = 1;
		TEST_ASSERT(runner_join(&r) && r.ok, "Reference vCPU failed: %s", r.err);
		if (mode == REF_SAMPLED_OFF) {
			sampler_close(&s);
			wb_knob_write(true);
		}
		kvm_vm_free(vm);
	}
	free(l);
	watchdog_disarm();

	refs[nr_refs].name = name;
	refs[nr_refs].samples = tmp.st.samples;
	refs[nr_refs].lat_max_us = tmp.lat_max_us;
	refs[nr_refs].lat_p99_us = tmp.lat_p99_us;
	ksft_print_msg("%s: %lu samples, host clock_nanosleep(1 ms) oversleep max %d us, p99 %d us (%d sleeps)\n",
		       name, tmp.st.samples, tmp.lat_max_us, tmp.lat_p99_us, tmp.lat_n);
	nr_refs++;
}

/* ---------------------------------------------------------------------- */

static void summary(void)
{
	struct hcase *c;
	int i;

	ksft_print_msg("\n");
	ksft_print_msg("Summary (longest: entries after the guest marker, IP included; latency: 1 ms clock_nanosleep oversleep)\n");
	ksft_print_msg("%-78s %7s %7s %7s %7s %8s %8s %s\n", "case", "samples", "guest",
		       "chained", "longest", "lat max", "lat p99", "result");
	for (i = 0; i < nr_cases; i++) {
		c = cases[i];
		if (c->skip) {
			ksft_print_msg("%-78s %7s %7s %7s %7s %8s %8s %s\n", c->name, "-", "-",
				       "-", "-", "-", "-", "skip");
			continue;
		}
		ksft_print_msg("%-78s %7lu %7lu %7lu %7d %6d us %6d us %s\n", c->name,
			       c->st.samples, c->st.guest, c->st.chained, c->st.longest,
			       c->lat_max_us, c->lat_p99_us, c->pass ? "pass" : "FAIL");
	}
	for (i = 0; i < nr_refs; i++)
		ksft_print_msg("%-78s %7lu %7s %7s %7s %6d us %6d us %s\n", refs[i].name,
			       refs[i].samples, "-", "-", "-", refs[i].lat_max_us,
			       refs[i].lat_p99_us, "(reference)");
}

int main(int argc, char *argv[])
{
	struct sigaction sa = { .sa_handler = kick_handler };
	pthread_t wd;
	int i, plan = 0;
	long max_stack;

	setvbuf(stdout, NULL, _IOLBF, 0);
	main_pid = getpid();
	TEST_ASSERT(argc == 1 || (argc == 2 && !strcmp(argv[1], "cycles")),
		    "usage: %s [cycles]", argv[0]);
	sample_cycles = argc == 2;

	/* Skips if /dev/kvm is missing. */
	close(open_kvm_dev_path_or_exit());
	__TEST_REQUIRE(!access(WB_KNOB_PATH, F_OK),
		       "KVM does not support guest callchains (no %s)", WB_KNOB_PATH);

	max_stack = wb_read_long(MAX_STACK_PATH);
	TEST_ASSERT(max_stack >= 0, "Failed to read %s", MAX_STACK_PATH);
	sysctl_max_stack = max_stack;
	TEST_ASSERT(sysctl_max_stack > 16 && sysctl_max_stack < MAX_EXP,
		    "perf_event_max_stack = %d not in (16, %d)", sysctl_max_stack, MAX_EXP);

	wb_knob_save();
	/* Kicks vCPU threads out of KVM_RUN: no SA_RESTART. */
	sigaction(SIGUSR1, &sa, NULL);
	TEST_ASSERT(!pthread_create(&wd, NULL, watchdog_fn, NULL), "watchdog thread");
	wb_knob_write(true);

	ksft_print_header();
	for (i = 0; i < nr_suites; i++)
		plan += suites[i]->nr_cases;
	tap_plan(plan);
	ksft_print_msg("%s every %d %s on the vCPU thread, exclude_host=1; perf_event_max_stack %d; %ld CPUs; spin loop [0x%lx, 0x%lx)\n",
		       sample_cycles ? "cycles" : "cpu-clock",
		       sample_cycles ? SAMPLE_PERIOD_CYCLES : SAMPLE_PERIOD_NS,
		       sample_cycles ? "cycles" : "ns", sysctl_max_stack,
		       sysconf(_SC_NPROCESSORS_ONLN), (uint64_t)spin_start, (uint64_t)spin_end);

	for (i = 0; i < ARRAY_SIZE(ref_runs); i++)
		reference(ref_runs[i].name, ref_runs[i].mode);

	for (i = 0; i < nr_suites; i++)
		suites[i]->run();

	TEST_ASSERT_EQ(nr_cases, plan);
	summary();
	tap_finish();
}
