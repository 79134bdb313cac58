/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hostile.h: what the files of guest_hostile share: the parameters of a
 * run, the case descriptor (struct hcase) and its bookkeeping, the harness
 * that runs and reports a case (check.c, run.c), and the suites of cases
 * (frames.c, paging.c, legacy.c, races.c) that main.c runs in order.
 */
#ifndef HOSTILE_H
#define HOSTILE_H

#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdint.h>

#include <linux/perf_event.h>
#include <linux/sizes.h>

#include "kvm_util.h"
#include "processor.h"
#include "wb.h"

#define MAX_STACK_PATH		"/proc/sys/kernel/perf_event_max_stack"

/* cpu-clock period: 20 us, i.e. 50 kHz (for cycles: SAMPLE_PERIOD_CYCLES). */
#define SAMPLE_PERIOD_NS	20000
/* With 'guest_hostile cycles': one sample per 10^5 cycles of the PMU. */
#define SAMPLE_PERIOD_CYCLES	100000
#define RING_DATA_PAGES		256
#define DRAIN_INTERVAL_US	1000

/* Each case runs RUN_MS, longer (up to RUN_MAX_MS) until MIN_IN_SPIN. */
#define RUN_MS			1200
#define RUN_MAX_MS		4000
#define MIN_IN_SPIN		20
/*
 * The host reads the guest's loop counter every PROGRESS_POLL_MS of every
 * case; in the racing cases the guest may go at most PROGRESS_MAX_GAP_MS
 * without counting (see check_progress()).
 */
#define PROGRESS_POLL_MS	10
#define PROGRESS_MAX_GAP_MS	1000

/* A vCPU thread must be back from KVM_RUN within this after being told. */
#define JOIN_TIMEOUT_S		20
/* A whole case must be done within this, else the process bails out. */
#define CASE_WATCHDOG_S		150

#define LAT_SLEEP_NS		1000000
#define LAT_MAX			16384

#define MAX_EXP			512
#define HIST_MAX		8
#define FRAME_MAX_GAP		WB_FRAME_MAX_GAP

/* Guest memory beyond the library's needs, in 4K pages (slot 0). */
#define EXTRA_PAGES		(512 * 512)

/* Return addresses of crafted frames; R9 is a decoy that must never show. */
#define R1			0x1111000ull
#define R2			0x2222000ull
#define R3			0x3333000ull
#define R9			0x9999000ull
#define RC(k)			(0x40000000ull + (uint64_t)(k) * 0x10)

/* A GPA outside every memslot. */
#define MMIO_GPA		0xc0000000ull

#ifdef __x86_64__
/* The local APIC's page: outside every memslot too. */
#define LAPIC_GPA		0xfee00000ull

/* Addresses around the canonical boundaries. */
#define LOW_TOP_PAGE		0x00007ffffffff000ull
#define NONCANONICAL		0x0000800000000000ull
#define HIGH_BASE_PAGE		0xffff800000000000ull
#define TOP_PAGE		0xfffffffffffff000ull

#define RSVD_BIT		BIT_ULL(51)
#else
/* Stage 1 descriptors: valid; table (page at level 3); AP[1], EL0's. */
#define DESC_VALID		BIT_ULL(0)
#define DESC_TABLE		BIT_ULL(1)
#define DESC_EL0		BIT_ULL(6)

/* Where the spin loop's code ends (aarch64/arch.c): a copy runs MMU off. */
extern const char hostile_spin_end[];

/*
 * The granule of the default VM mode, which every case but some of
 * aarch64/paging.c's runs in.
 */
#define PAGE_SIZE		SZ_4K
#endif

/* Where the cases' frames live (memslot 0 unless said otherwise). */
#define C1_BASE			0x10000000000ull

/* Case 3: the slots of the frame page that vCPU 1 rewrites. */
#define RW_SLOTS		4
#define RW_OFF			0x800
#define RW_STRIDE		0x40

/* ---------------------------------------------------------------------- */
/* Guest side (main.c)                                                    */
/* ---------------------------------------------------------------------- */

/*
 * Written by the host before each run: the frame pointer (RBP, x29) the
 * guest spins with.
 */
extern uint64_t spin_rbp;
/* Written by the host through its mapping of guest memory: end the run. */
extern volatile uint64_t guest_stop;
/* Counted up by the spin loop, read by the host: the guest runs. */
extern volatile uint64_t guest_loops;
extern const char spin_start[], spin_end[];

void hostile_spin(uint64_t rbp, volatile uint64_t *stop, volatile uint64_t *loops);
void guest_code(void);

/* ---------------------------------------------------------------------- */
/* Cases (check.c)                                                        */
/* ---------------------------------------------------------------------- */

enum exp_kind {
	EXP_EXACT,	/* exactly [marker, ip, rets[0 .. nr_exp - 2]] */
	EXP_PREFIX,	/* a prefix of that, at least min_exp entries long */
	EXP_REWRITE,	/* case 3: ret k one of the values slot k ever holds */
	EXP_TOGGLE,	/* case 5: EXP_EXACT, or no callchain at all */
};

struct stats {
	uint64_t samples;
	uint64_t host;
	uint64_t guest;
	uint64_t chained;
	uint64_t nochain;
	uint64_t in_spin;
	uint64_t good;
	uint64_t lost;
	uint64_t throttled;
	uint64_t hist[HIST_MAX + 2];
	int longest;
	uint64_t violations;
	char why[1024];
	/* the first in-spin chains: length, and ms into the run */
	int seq_n;
	uint8_t seq_e[48];
	uint16_t seq_ms[48];
};

struct hcase {
	const char *name;
	uint64_t rbp;
	/* PERF_CONTEXT_GUEST_KERNEL or PERF_CONTEXT_GUEST_USER */
	uint64_t marker;
	/* attr.sample_max_stack, 0 for the default */
	uint16_t max_stack;
	/* entries allowed after the marker, the IP included */
	int limit;
	enum exp_kind kind;
	/* entries expected after the marker, the IP included */
	int nr_exp;
	int min_exp;
	uint64_t rets[MAX_EXP];
	/* the guest thread's tid, and when sampling started */
	pid_t tid;
	uint64_t start_ms;
	uint64_t run_ms;
	/*
	 * The guest's loop counter as the host last read it, when it last
	 * changed and first changed, and the longest time it stood still
	 * (ms since start_ms)
	 */
	uint64_t loops;
	uint64_t loops_first_ms;
	uint64_t loops_last_ms;
	uint64_t loops_gap_ms;
	uint64_t loops_gap_end_ms;
	/* the IPs where RBP is known: the spin loop unless set */
	uint64_t ip_start;
	uint64_t ip_end;
	/* the guest cannot be told to stop: kick it out with a signal */
	bool kick;
	/*
	 * sampled with cpu-clock even with 'cycles': the case needs samples
	 * of the vCPU thread in the host, which cycles with exclude_host=1
	 * does not count
	 */
	bool cpu_clock;
	/* results */
	struct stats st;
	int lat_max_us;
	int lat_p99_us;
	int lat_n;
	const char *skip;
	bool pass;
	char note[1536];
};

#define MAX_CASES		96
extern struct hcase *cases[MAX_CASES];
extern int nr_cases;

extern pid_t main_pid;
extern int sysctl_max_stack;
/* Sample the PMU's cycles, not cpu-clock ('guest_hostile cycles'). */
extern bool sample_cycles;
/* Case 3: the values slot k of the rewritten frame page ever returns. */
extern uint64_t rw_vals[RW_SLOTS][3];

/* Serializes the drainer thread's sample checks and the main thread. */
extern pthread_mutex_t sample_lock;
/* The case being sampled, under sample_lock. */
extern struct hcase *cur_case;

struct hcase *new_case(const char *name, uint64_t rbp, enum exp_kind kind);
struct hcase *new_exact(const char *name, uint64_t rbp, int nr, ...);
struct hcase *new_exact_a(const char *name, uint64_t rbp, int nr, const uint64_t *rets);
void check_sample(struct hcase *c, uint16_t cpumode, uint64_t ip,
		  uint32_t pid, uint32_t tid, const uint64_t *chain, uint64_t nr);
void report(struct hcase *c, const char *err);
/*
 * kselftest.h keeps its plan and counters in static variables, a copy per
 * file: the plan, the results and the exit code all go through check.c.
 */
void tap_plan(unsigned int nr);
void tap_finish(void);
const char *check_progress(struct hcase *c);

/* ---------------------------------------------------------------------- */
/* Running a case (run.c)                                                 */
/* ---------------------------------------------------------------------- */

/* perf sampling of one thread into cur_case, drained by a thread */
struct sampler {
	struct wb_ring ring;
	pthread_t drainer;
	volatile bool stop;
};

void sampler_open(struct sampler *s, struct hcase *c);
void sampler_drain(struct sampler *s);
void sampler_close(struct sampler *s);

/* Host responsiveness: clock_nanosleep(1 ms) oversleep */
struct lat {
	pthread_t thread;
	volatile bool stop;
	int n;
	int us[LAT_MAX];
};

void lat_start(struct lat *l);
void lat_stop(struct lat *l, struct hcase *c);

/* vCPU threads */
enum run_mode {
	RUN_SYNC,	/* run until the guest's GUEST_SYNC, then exit */
	RUN_HOLD,	/* same, then wait for 'release', spin 50 ms of CPU, exit */
	RUN_RAW,	/* one raw KVM_RUN on a dup of the vCPU fd */
	RUN_KICK,	/* KVM_RUN until kicked out by a signal */
};

struct runner {
	struct kvm_vcpu *vcpu;
	enum run_mode mode;
	int fd;
	struct kvm_run *run;
	pthread_t thread;
	pid_t tid;
	sem_t ready, go, left, release;
	volatile bool done;
	volatile bool kicked;
	bool ok;
	char err[256];
};

void runner_start(struct runner *r, struct kvm_vcpu *vcpu, enum run_mode mode);
void deadline_in(struct timespec *ts, int seconds);
bool runner_join_t(struct runner *r, int seconds);
bool runner_join(struct runner *r);

/* A host thread that stresses something while the case runs. */
struct stress {
	void *(*fn)(void *arg);
	pthread_t thread;
	volatile bool stop;
	struct kvm_vm *vm;
	uint64_t iterations;
	uint64_t max_op_us;
};

void watchdog_arm(const char *name);
void watchdog_disarm(void);

struct kvm_vm *create_vm(struct kvm_vcpu **vcpu);
volatile uint64_t *stop_flag(struct kvm_vm *vm);
struct kvm_vm *chain_vm(struct kvm_vcpu **vcpu, uint64_t *rbp);
bool run_goal(struct hcase *c, uint64_t elapsed);
const char *run_case(struct hcase *c, struct kvm_vm *vm, struct kvm_vcpu **vcpus,
		     int nr, struct stress *stress);

/* ---------------------------------------------------------------------- */
/* Suites of cases, in the order main.c runs them                         */
/* ---------------------------------------------------------------------- */

struct suite {
	void (*run)(void);
	/* the TAP results it reports, from the sizes of its tables */
	int nr_cases;
};

extern const struct suite frame_suite;		/* x86_64/frames.c */
extern const struct suite page_table_suite;	/* <arch>/paging.c */
extern const struct suite legacy_suite;		/* x86_64/legacy.c */
extern const struct suite max_stack_suite;	/* long.c */
extern const struct suite race_suite;		/* races.c */

/* <arch>/arch.c: the suites in the order main.c runs them */
extern const struct suite *const suites[];
extern const int nr_suites;

/*
 * <arch>/arch.c: the leaf entry (x86 PTE, arm64 level 3 descriptor) that
 * maps @gva, and the 8 values case 3's rewriting vCPU writes there, from
 * its value @v and another page @alt: @v and @alt three times and twice,
 * and values that must stop the walk, named by leaf_variants_what.
 */
uint64_t *leaf_entry(struct kvm_vm *vm, uint64_t gva);
void leaf_variants(struct kvm_vm *vm, uint64_t v, vm_paddr_t alt, uint64_t vals[8]);
extern const char leaf_variants_what[];

#endif /* HOSTILE_H */
