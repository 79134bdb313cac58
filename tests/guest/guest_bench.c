// SPDX-License-Identifier: GPL-2.0
/*
 * guest_bench: the cost of guest callchains (kvm.guest_callchains=Y),
 * measured side by side in one run.  Under QEMU TCG absolute times mean
 * nothing, so everything reported is a ratio, with its median and min-max
 * over the repetitions; the raw figures are printed for reference only.
 *
 * The guest (CPL0 or EL1, 4-level paging) and a native host thread run the
 * same C chain of D frames,
 *
 *	start stub -> bench_main -> rec()... -> leaf
 *
 * where the start stub clears the frame pointer (RBP, x29) and calls
 * bench_main, as _start does in the x86-64 and AArch64 ABIs, so the
 * outermost frame record is {0, return into the stub}: every record read
 * yields one return address, D in all.  The leaf
 * spins in an asm loop that counts iterations in memory until told to
 * stop; its counter is read live by the host (through the guest mapping
 * for the guest).  With layout "spread", every rec() frame holds a 1 KiB
 * array, so that the chain spans about D/4 stack pages.
 *
 * 1. loads: guest memory loads per unwound frame, from the vCPU stats
 *    guest_callchain_loads / guest_callchain_frames (deterministic), and
 *    the same figure for the 2023 v2 design (two kvm_read_guest_virt() per
 *    frame, each a full page walk plus one data load).
 * 2. cost: the unwind's own cost per sample, i.e. the throughput lost per
 *    sample with PERF_SAMPLE_CALLCHAIN minus without, for the guest chain
 *    (BENCH_EVENT on the vCPU thread) and for the native chain (the same
 *    event on the native thread, exclude_kernel=1, user FP walk); reported
 *    as guest-unwind-cost / host-unwind-cost per D.  BENCH_EVENT is
 *    cpu-clock on x86 (QEMU's TCG and Bochs have no sampling PMU) and the
 *    PMU's cycles on arm64, whose overflow interrupt QEMU's PMUv3 raises.
 * 3. sampler: the kernel's guest callchains against a sampler in the VMM
 *    (timerfd thread -> SIGUSR1 -> KVM_RUN returns -EINTR -> KVM_GET_REGS,
 *    KVM_GET_SREGS, page walk and frame walk through the VMM's mapping of
 *    guest memory), at equal rates: loss per sample, highest rate with at
 *    most 10 % throughput loss, and identical chains.  x86 only: the
 *    sampler's page walk reads x86 page tables.
 * 4. maxrate: kernel.perf_event_max_sample_rate before and after a run at
 *    sample_freq=100000, with and without guest callchains.
 * 5. copy: a copy of the guest's registers and stack with each sample
 *    (PERF_SAMPLE_REGS_GUEST and PERF_SAMPLE_STACK_GUEST, kvm.guest_stack_copy=Y,
 *    what 'perf record --guest-stack' asks for, for guests without frame
 *    pointers) against the frame-pointer walk (PERF_SAMPLE_CALLCHAIN): the
 *    cost of each per sample, over a sample with neither, and the bytes
 *    each sample takes in the ring buffer, at D=16 with the chain on one
 *    stack page and spread over several.  x86 only: arm64 KVM provides no
 *    stack copies.
 *
 * In sections 2 and 3 the variants of one repetition (no sampling, perf
 * without and with callchains, the VMM sampler) take turns in short slices
 * while the worker spins (A B C A B C ...), so that the emulator's changes
 * of speed hit them alike; every ratio is reported as the median and the
 * min-max over the repetitions.  Lines "BENCH key=value ..." are for
 * tests/host/bench_report.py.
 *
 * usage: guest_bench [-r reps] [-w slice_ms] [-n slices] [-s sections] [-v]
 *	sections: any of "12345" (default all)
 */
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/timerfd.h>
#include <sys/utsname.h>

#include <linux/perf_event.h>
#include <linux/sizes.h>

/*
 * Stack copies (section 5): x86 KVM provides them, with the series' patch
 * that adds them to perf, which also defines PERF_ATTR_SIZE_VER9.
 */
#if defined(__x86_64__) && defined(PERF_ATTR_SIZE_VER9)
#define HAVE_STACK_COPY
#include <asm/perf_regs.h>
#endif

#include "test_util.h"
#include "kvm_util.h"
#include "processor.h"
#include "wb.h"

#define MAX_RATE_PATH		"/proc/sys/kernel/perf_event_max_sample_rate"
#define STACK_KNOB_PATH		"/sys/module/kvm/parameters/guest_stack_copy"
#define CPU_TIME_PATH		"/proc/sys/kernel/perf_cpu_time_max_percent"

#define STACK_PAGES		40	/* of 4 KiB; D=64 spread needs about 17 */
#define STACK_GVA		0x40000000ul
#define RING_DATA_PAGES		1024	/* 4 MiB: a whole window, never drained during it */
#define RING_COPY_DATA_PAGES	16384	/* 64 MiB, the same with stack copies */
#define PERIOD_NS		100000	/* 10 kHz for sections 1 and 2 */

#ifdef __aarch64__
/* QEMU's PMUv3 counts one cycle per nanosecond of its virtual clock. */
#define BENCH_EVENT_TYPE	PERF_TYPE_HARDWARE
#define BENCH_EVENT_CONFIG	PERF_COUNT_HW_CPU_CYCLES
#define BENCH_EVENT		"cycles"
#define BENCH_PERIOD_UNIT	"cycles"
#define BENCH_SECTIONS		"124"
/*
 * Each PMU interrupt costs tens of microseconds of TCG time, the unwind a
 * few: more slices than on x86 for the same spread.
 */
#define BENCH_SLICES		40
#else
#define BENCH_EVENT_TYPE	PERF_TYPE_SOFTWARE
#define BENCH_EVENT_CONFIG	PERF_COUNT_SW_CPU_CLOCK
#define BENCH_EVENT		"cpu-clock"
#define BENCH_PERIOD_UNIT	"ns"
#define BENCH_SECTIONS		"12345"
#define BENCH_SLICES		10
#endif
#define WARMUP_US		20000
#define LOADS_WINDOW_US		300000

enum { LAYOUT_ONEPAGE, LAYOUT_SPREAD, LAYOUT_NOFRAME };

/*
 * Shared by the guest and the native thread: each has its own copy (the
 * guest's lives in guest memory at the same address and is reached by the
 * host through addr_gva2hva()).
 */
static uint64_t iters;
static uint32_t stop_flag;
static int depth;		/* frames between the start stub and the leaf loop */
static int layout;
static int in_guest;
static uint64_t leaf_fp, outer_fp;

extern char leaf_loop_start[], leaf_loop_end[], noframe_loop_start[], noframe_loop_end[];
extern char guest_start[], guest_start_ret[], native_start_ret[];
void bench_main(void);
void run_on_stack(void (*fn)(void), void *stack_top, uint64_t rbp);

/*
 * guest_start: the vCPU's entry point, the _start of the ABI.
 * run_on_stack: the same for the native thread, on a stack of its own and
 * with a chosen initial frame pointer; returns when bench_main() does.
 */
#ifdef __x86_64__
asm(".pushsection .text\n"
    ".globl guest_start\n"
    ".type guest_start, @function\n"
    "guest_start:\n"
    "	xor %ebp, %ebp\n"
    "	call bench_main\n"
    ".globl guest_start_ret\n"
    "guest_start_ret:\n"
    "	hlt\n"
    "	jmp guest_start_ret\n"
    ".size guest_start, .-guest_start\n"
    ".globl run_on_stack\n"
    ".type run_on_stack, @function\n"
    "run_on_stack:\n"
    "	push %rbp\n"
    "	push %rbx\n"
    "	mov %rsp, %rbx\n"
    "	mov %rsi, %rsp\n"
    "	mov %rdx, %rbp\n"
    "	call *%rdi\n"
    ".globl native_start_ret\n"
    "native_start_ret:\n"
    "	mov %rbx, %rsp\n"
    "	pop %rbx\n"
    "	pop %rbp\n"
    "	ret\n"
    ".size run_on_stack, .-run_on_stack\n"
    ".popsection\n");

/*
 * The spin loop of leaf() and spin_noframe(), between the labels
 * <name>_loop_start and <name>_loop_end: count iterations in memory
 * (operand 0) until stop_flag (operand 1).
 */
#define SPIN_LOOP(name)				\
	".globl " name "_loop_start\n"		\
	name "_loop_start:\n\t"			\
	"incq %0\n\t"				\
	"cmpl $0, %1\n\t"			\
	"je " name "_loop_start\n"		\
	".globl " name "_loop_end\n"		\
	name "_loop_end:\n\t"

/* The leaf: spin until stop_flag, counting iterations in memory. */
static noinline __attribute__((noclone)) void leaf(void)
{
	/* Also forces a frame in this leaf function (GCC 12). */
	WRITE_ONCE(leaf_fp, (uint64_t)__builtin_frame_address(0));
	asm volatile(SPIN_LOOP("leaf")
		     : "+m" (iters) : "m" (stop_flag) : "cc", "memory");
}

/*
 * The same loop with RBP = 1, which no unwinder reads: a guest sample then
 * costs the callback, the context and the IP, and no guest memory load.
 */
static noinline __attribute__((noclone)) void spin_noframe(void)
{
	asm volatile("push %%rbp\n\t"
		     "mov $1, %%ebp\n"
		     SPIN_LOOP("noframe")
		     "pop %%rbp\n"
		     : "+m" (iters) : "m" (stop_flag) : "cc", "memory");
}

#else
asm(".pushsection .text\n"
    ".globl guest_start\n"
    ".type guest_start, %function\n"
    "guest_start:\n"
    "	mov x29, xzr\n"
    "	bl bench_main\n"
    ".globl guest_start_ret\n"
    "guest_start_ret:\n"
    "	wfi\n"
    "	b guest_start_ret\n"
    ".size guest_start, .-guest_start\n"
    ".globl run_on_stack\n"
    ".type run_on_stack, %function\n"
    "run_on_stack:\n"
    "	stp x29, x30, [sp, #-32]!\n"
    "	str x19, [sp, #16]\n"
    "	mov x19, sp\n"
    "	mov sp, x1\n"
    "	mov x29, x2\n"
    "	blr x0\n"
    ".globl native_start_ret\n"
    "native_start_ret:\n"
    "	mov sp, x19\n"
    "	ldr x19, [sp, #16]\n"
    "	ldp x29, x30, [sp], #32\n"
    "	ret\n"
    ".size run_on_stack, .-run_on_stack\n"
    ".popsection\n");

/*
 * The spin loop of leaf() and spin_noframe(), between the labels
 * <name>_loop_start and <name>_loop_end: count iterations in memory
 * ([it], through [n]) until stop_flag ([st], through [s]).
 */
#define SPIN_LOOP(name)				\
	".globl " name "_loop_start\n"		\
	name "_loop_start:\n\t"			\
	"ldr %[n], %[it]\n\t"			\
	"add %[n], %[n], #1\n\t"		\
	"str %[n], %[it]\n\t"			\
	"ldr %w[s], %[st]\n\t"			\
	"cbz %w[s], " name "_loop_start\n"	\
	".globl " name "_loop_end\n"		\
	name "_loop_end:\n\t"

/* The leaf: spin until stop_flag, counting iterations in memory. */
static noinline __attribute__((noclone)) void leaf(void)
{
	uint64_t n;
	uint32_t stop;

	WRITE_ONCE(leaf_fp, (uint64_t)__builtin_frame_address(0));
	asm volatile(SPIN_LOOP("leaf")
		     : [it] "+Q" (iters), [n] "=&r" (n), [s] "=&r" (stop)
		     : [st] "Q" (stop_flag) : "memory");
}

/*
 * The same loop with x29 = 1, which no unwinder reads: a guest sample then
 * costs the callback, the context and the IP, and no guest memory load.
 */
static noinline __attribute__((noclone)) void spin_noframe(void)
{
	uint64_t n;
	uint32_t stop;

	asm volatile("stp x29, x30, [sp, #-16]!\n\t"
		     "mov x29, #1\n"
		     SPIN_LOOP("noframe")
		     "ldp x29, x30, [sp], #16\n"
		     : [it] "+Q" (iters), [n] "=&r" (n), [s] "=&r" (stop)
		     : [st] "Q" (stop_flag) : "memory");
}

/*
 * A return address as perf records it: the host strips the pointer
 * authentication code from a native thread's signed return addresses (the
 * guest runs with pointer authentication off: nothing to strip).
 */
static uint64_t strip_pac(uint64_t lr)
{
	register uint64_t x30 asm("x30") = lr;

	asm volatile("hint #7" : "+r" (x30));	/* XPACLRI */
	return x30;
}
#endif

static noinline __attribute__((noclone)) void rec(int n)
{
	if (n > 0)
		rec(n - 1);
	else
		leaf();
	asm volatile("" ::: "memory");	/* no tail call */
}

/* A frame of about 1 KiB: four of them fill a page. */
static noinline __attribute__((noclone)) void rec_big(int n)
{
	volatile char pad[1024];

	pad[0] = n;
	pad[sizeof(pad) - 1] = n;
	if (n > 0)
		rec_big(n - 1);
	else
		leaf();
	asm volatile("" :: "r" (pad) : "memory");
}

/* depth >= 3: bench_main, depth - 2 rec frames, leaf. */
noinline void bench_main(void)
{
	WRITE_ONCE(outer_fp, (uint64_t)__builtin_frame_address(0));
	for (;;) {
		if (layout == LAYOUT_NOFRAME)
			spin_noframe();
		else if (layout == LAYOUT_SPREAD)
			rec_big(depth - 3);
		else
			rec(depth - 3);
		if (!in_guest)
			return;
		GUEST_SYNC(0);
	}
}

static bool ip_in_loop(uint64_t ip)
{
	return (ip >= (uint64_t)leaf_loop_start && ip < (uint64_t)leaf_loop_end) ||
	       (ip >= (uint64_t)noframe_loop_start && ip < (uint64_t)noframe_loop_end);
}

/* Chains: the return addresses after the IP, compared with a reference. */
static void chain_check(struct wb_chainchk *c, uint64_t ip, const uint64_t *rets, int n)
{
	wb_chain_check(c, ip_in_loop(ip), rets, n);
}

/*
 * The workers: a vCPU thread running the guest, or a native thread running
 * the same chain.  The controller starts one with 'go', lets it spin for a
 * window, then sets the stop flag and waits for 'parked'.
 */
struct target {
	const char *name;
	bool guest;
	pthread_t th;
	pid_t tid;
	sem_t go, parked;
	volatile bool quit;
	volatile uint64_t *iters;
	volatile uint32_t *stop;
	volatile uint64_t *leaf_fp, *outer_fp;
	int depth, layout;
	/* guest */
	struct kvm_vm *vm;
	struct kvm_vcpu *vcpu;
	struct wb_vstats vstats;
	/* native */
	void *stack_top;
	uint64_t rbp_init;
	/* the VMM's own sampler (guest only) */
	volatile int usampler;
	volatile uint64_t usamples;
	struct wb_chainchk uchk;
	uint64_t ubuf[WB_MAX_CHAIN];
};

static struct kvm_run *volatile sig_run;

static void sigusr1_handler(int sig)
{
	struct kvm_run *run = sig_run;

	if (run)
		run->immediate_exit = 1;
}

#ifdef __x86_64__
/* One sample of the VMM sampler, in the vCPU thread after KVM_RUN -> EINTR. */
static void user_sample(struct target *t)
{
	struct kvm_regs regs;
	struct kvm_sregs sregs;
	struct wb_uwalk w = { .vm = t->vm, .page_gva = 1 };
	int n;

	TEST_ASSERT(!ioctl(t->vcpu->fd, KVM_GET_REGS, &regs), "KVM_GET_REGS");
	TEST_ASSERT(!ioctl(t->vcpu->fd, KVM_GET_SREGS, &sregs), "KVM_GET_SREGS");
	t->usamples++;
	if (!(sregs.cr0 & X86_CR0_PG) || !(sregs.efer & EFER_LMA))
		return;		/* only long mode, as this guest runs */
	w.cr3 = sregs.cr3;
	w.levels = sregs.cr4 & X86_CR4_LA57 ? 5 : 4;
	t->ubuf[0] = regs.rip;
	n = wb_uwalk_chain(&w, regs.rbp, &t->ubuf[1], WB_MAX_CHAIN - 2);
	chain_check(&t->uchk, regs.rip, &t->ubuf[1], n);
}
#else
static void user_sample(struct target *t)
{
	TEST_FAIL("the VMM sampler reads x86 page tables: no VMM sampler on arm64");
}
#endif

static void vcpu_run_to_sync(struct target *t)
{
	struct kvm_run *run = t->vcpu->run;
	struct ucall uc;
	int rc;

	for (;;) {
		rc = __vcpu_run(t->vcpu);
		if (rc < 0) {
			TEST_ASSERT(errno == EINTR, "KVM_RUN failed, errno %d", errno);
			run->immediate_exit = 0;
			if (t->usampler)
				user_sample(t);
			continue;
		}
#ifdef __x86_64__
		TEST_ASSERT_KVM_EXIT_REASON(t->vcpu, KVM_EXIT_IO);
#else
		TEST_ASSERT_KVM_EXIT_REASON(t->vcpu, KVM_EXIT_MMIO);
#endif
		switch (get_ucall(t->vcpu, &uc)) {
		case UCALL_SYNC:
			return;
		case UCALL_ABORT:
			REPORT_GUEST_ASSERT(uc);
			break;
		default:
			TEST_FAIL("Unexpected ucall %lu", uc.cmd);
		}
	}
}

static void *worker(void *arg)
{
	struct target *t = arg;
	sigset_t set;

	t->tid = wb_gettid();
	wb_pin_to_cpu(0);
	if (t->guest) {
		sig_run = t->vcpu->run;
		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	}
	sem_post(&t->parked);
	for (;;) {
		sem_wait(&t->go);
		if (t->quit)
			break;
		if (t->guest)
			vcpu_run_to_sync(t);
		else
			run_on_stack(bench_main, t->stack_top, t->rbp_init);
		sem_post(&t->parked);
	}
	if (t->guest)
		sig_run = NULL;
	return NULL;
}

static void target_start(struct target *t)
{
	uint64_t c0 = *t->iters;

	*t->stop = 0;
	sem_post(&t->go);
	while (*t->iters == c0)
		wb_sleep_us(1000);
}

static void target_stop(struct target *t)
{
	*t->stop = 1;
	sem_wait(&t->parked);
}

static void target_spawn(struct target *t)
{
	sem_init(&t->go, 0, 0);
	sem_init(&t->parked, 0, 0);
	TEST_ASSERT(!pthread_create(&t->th, NULL, worker, t), "pthread_create");
	sem_wait(&t->parked);
}

static void target_join(struct target *t)
{
	t->quit = true;
	sem_post(&t->go);
	pthread_join(t->th, NULL);
}

/* Run once, spin for a moment (warms up TCG and the MMUs), and take the reference chain. */
static void target_prime(struct target *t, struct wb_chainchk *ref)
{
	target_start(t);
	wb_sleep_us(50000);
	/* The chain of the spinning worker, from its stack at leaf_fp. */
	ref->nref = wb_walk_frames(t->guest ? t->vm : NULL, *t->leaf_fp, ref->ref, WB_MAX_CHAIN);
#ifdef __aarch64__
	for (int i = 0; i < ref->nref; i++)
		ref->ref[i] = strip_pac(ref->ref[i]);
#endif
	target_stop(t);
}

static struct target *guest_create(int d, int lay, bool bare)
{
	struct target *t = calloc(1, sizeof(*t));
	vm_vaddr_t stack, top;

	t->name = "guest";
	t->guest = true;
	t->depth = d;
	t->layout = lay;
	t->vm = __vm_create_with_one_vcpu(&t->vcpu, STACK_PAGES + 64, guest_start);
	stack = vm_vaddr_alloc(t->vm, STACK_PAGES * SZ_4K, STACK_GVA);
	top = stack + STACK_PAGES * SZ_4K;

	/*
	 * bare: the selftests' entry, straight into bench_main with a zero
	 * return address, so its record {0, 0} ends the walk after one more
	 * load but without a frame.
	 */
#ifdef __x86_64__
	{
		struct kvm_regs regs;

		vcpu_regs_get(t->vcpu, &regs);
		regs.rbp = 0;
		if (bare) {
			regs.rip = (uint64_t)bench_main;
			regs.rsp = top - 8;
			*(uint64_t *)addr_gva2hva(t->vm, top - 8) = 0;
		} else {
			regs.rsp = top;
		}
		vcpu_regs_set(t->vcpu, &regs);
	}
#else
	vcpu_set_reg(t->vcpu, ARM64_CORE_REG(sp_el1), top);
	vcpu_set_reg(t->vcpu, ARM64_CORE_REG(regs.regs[29]), 0);
	vcpu_set_reg(t->vcpu, ARM64_CORE_REG(regs.regs[30]), 0);
	if (bare)
		vcpu_set_reg(t->vcpu, ARM64_CORE_REG(regs.pc), (uint64_t)bench_main);
#endif

	*(int *)addr_gva2hva(t->vm, (vm_vaddr_t)&depth) = d;
	*(int *)addr_gva2hva(t->vm, (vm_vaddr_t)&layout) = lay;
	*(int *)addr_gva2hva(t->vm, (vm_vaddr_t)&in_guest) = 1;
	t->iters = addr_gva2hva(t->vm, (vm_vaddr_t)&iters);
	t->stop = addr_gva2hva(t->vm, (vm_vaddr_t)&stop_flag);
	t->leaf_fp = addr_gva2hva(t->vm, (vm_vaddr_t)&leaf_fp);
	t->outer_fp = addr_gva2hva(t->vm, (vm_vaddr_t)&outer_fp);
	t->vstats.fd = -1;
	target_spawn(t);
	return t;
}

static void guest_destroy(struct target *t)
{
	target_join(t);
	wb_vstats_close(&t->vstats);
	kvm_vm_free(t->vm);
	free(t);
}

/* A frame pointer outside user space: the native walk stops there without a fault. */
#define NATIVE_RBP_NOFAULT	0xffff800000000000ull

static struct target *native_create(int d, int lay)
{
	struct target *t = calloc(1, sizeof(*t));
	size_t size = STACK_PAGES * SZ_4K;
	uint8_t *stack = mmap(NULL, size, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	TEST_ASSERT(stack != MAP_FAILED, "mmap of the native stack");
	t->name = "native";
	t->depth = d;
	t->layout = lay;
	t->stack_top = stack + size;
	t->rbp_init = NATIVE_RBP_NOFAULT;
	depth = d;
	layout = lay;
	in_guest = 0;
	t->iters = &iters;
	t->stop = &stop_flag;
	t->leaf_fp = &leaf_fp;
	t->outer_fp = &outer_fp;
	target_spawn(t);
	return t;
}

static void native_destroy(struct target *t)
{
	target_join(t);
	munmap((uint8_t *)t->stack_top - STACK_PAGES * SZ_4K, STACK_PAGES * SZ_4K);
	free(t);
}

/* vCPU binary stats. */
static bool vstat(struct target *t, const char *name, uint64_t *val)
{
	return wb_vstat(&t->vstats, t->vcpu, name, val);
}

/* perf events and their rings. */
struct pcfg {
	bool guest;		/* target is a vCPU thread */
	bool callchain;
	uint32_t stack;		/* bytes of guest stack copied with the guest's registers, or 0 */
	uint64_t period_ns;	/* or */
	uint64_t freq;
};

struct wres {
	double secs;
	double rate;		/* iterations per second */
	double srate;		/* samples per second */
	uint64_t samples, guest, lost, throttled;
	uint64_t bytes;		/* of the samples in the ring, headers included */
};

static void ring_open(struct wb_ring *r, pid_t tid, const struct pcfg *c)
{
	struct perf_event_attr attr = {
		.type = BENCH_EVENT_TYPE,
		.size = sizeof(attr),
		.config = BENCH_EVENT_CONFIG,
		.sample_type = PERF_SAMPLE_IP | (c->callchain ? PERF_SAMPLE_CALLCHAIN : 0),
		.disabled = 1,
		/* Guest samples come from host kernel regs: keep exclude_kernel=0. */
		.exclude_kernel = !c->guest,
		.exclude_hv = 1,
		.exclude_host = c->guest,
		/* Host samples of the vCPU thread: no walk of the VMM's user stack. */
		.exclude_callchain_user = c->guest,
	};
	if (c->freq) {
		attr.freq = 1;
		attr.sample_freq = c->freq;
	} else {
		attr.sample_period = c->period_ns;
	}
#ifdef HAVE_STACK_COPY
	if (c->stack) {
		attr.sample_type |= PERF_SAMPLE_REGS_GUEST | PERF_SAMPLE_STACK_GUEST;
		/* What perf record --guest-stack asks for: its x86-64 PERF_REGS_MASK. */
		attr.sample_regs_guest = ((1ull << PERF_REG_X86_64_MAX) - 1) &
					 ~(BIT_ULL(PERF_REG_X86_DS) | BIT_ULL(PERF_REG_X86_ES) |
					   BIT_ULL(PERF_REG_X86_FS) | BIT_ULL(PERF_REG_X86_GS));
		attr.sample_stack_guest = c->stack;
	}
#endif
	/* A whole window of stack copies: 3000 samples of up to 16 KiB. */
	wb_ring_open(r, &attr, tid, c->stack ? RING_COPY_DATA_PAGES : RING_DATA_PAGES);
}

struct drain {
	struct wres *w;
	struct wb_chainchk *chk;
};

static void bench_record(void *arg, const struct perf_event_header *hdr, const uint64_t *body)
{
	struct drain *d = arg;
	struct wres *w = d->w;
	struct wb_chainchk *chk = d->chk;
	uint16_t mode;

	switch (hdr->type) {
	case PERF_RECORD_SAMPLE:
		w->samples++;
		w->bytes += hdr->size;
		mode = hdr->misc & PERF_RECORD_MISC_CPUMODE_MASK;
		if (mode == PERF_RECORD_MISC_GUEST_KERNEL || mode == PERF_RECORD_MISC_GUEST_USER)
			w->guest++;
		/* body: ip, nr, ips[nr]: [context, ip, rets...] */
		if (chk && hdr->size >= sizeof(*hdr) + 2 * 8 && body[1] >= 2 &&
		    hdr->size >= sizeof(*hdr) + (2 + body[1]) * 8 &&
		    body[2] >= (uint64_t)PERF_CONTEXT_MAX && body[3] == body[0])
			chain_check(chk, body[0], &body[4], body[1] - 2);
		else if (chk)
			chain_check(chk, body[0], NULL, 0);	/* no guest chain */
		break;
	case PERF_RECORD_LOST:
		w->lost += body[1];
		break;
	case PERF_RECORD_THROTTLE:
		w->throttled++;
		break;
	}
}

/* The VMM sampler's timer thread. */
static int timer_fd = -1;
static pthread_t timer_th, timer_target;
static volatile bool timer_armed, timer_quit;

static void *timer_thread(void *arg)
{
	uint64_t exp;

	for (;;) {
		if (read(timer_fd, &exp, sizeof(exp)) != sizeof(exp))
			continue;
		if (timer_quit)
			break;
		if (timer_armed)
			pthread_kill(timer_target, SIGUSR1);
	}
	return NULL;
}

static void timer_arm(uint64_t ns)
{
	struct itimerspec its = {
		.it_interval = { ns / 1000000000, ns % 1000000000 },
		.it_value = { ns / 1000000000, ns % 1000000000 },
	};

	timer_armed = ns != 0;
	TEST_ASSERT(!timerfd_settime(timer_fd, 0, &its, NULL), "timerfd_settime");
}

static bool timer_fifo;

static void timer_init(void)
{
	struct sched_param prio = { .sched_priority = 1 };
	struct sigaction sa = { .sa_handler = sigusr1_handler };	/* no SA_RESTART */
	sigset_t set;

	sigemptyset(&sa.sa_mask);
	TEST_ASSERT(!sigaction(SIGUSR1, &sa, NULL), "sigaction");
	/* Only the vCPU threads take SIGUSR1. */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	TEST_ASSERT(timer_fd >= 0, "timerfd_create");
	TEST_ASSERT(!pthread_create(&timer_th, NULL, timer_thread, NULL), "timer thread");
	/*
	 * A real-time sampler thread, so that its wakeup preempts the vCPU
	 * thread on a shared CPU instead of waiting for the next tick.
	 */
	timer_fifo = !pthread_setschedparam(timer_th, SCHED_FIFO, &prio);
}

static void timer_exit(void)
{
	timer_quit = true;
	timer_arm(1000000);
	pthread_join(timer_th, NULL);
	close(timer_fd);
}

/*
 * Measurement: variants (no sampling, perf with or without callchains, the
 * VMM sampler) take turns in short slices, A B C A B C ..., while the worker
 * spins, so that drifts of the emulator's speed hit all of them alike.
 */
enum smode { S_NONE, S_PERF, S_USER };

struct wcfg {
	enum smode mode;
	struct pcfg p;
	uint64_t user_rate;
	bool rbp_zero;		/* native only: outermost saved frame pointer 0, the walk ends in a fault */
	struct wb_chainchk *chk;
};

#define MAX_VARIANTS	8
static int slice_us = 30000;
static int slices = BENCH_SLICES;

static void run_cycle(struct target *t, const struct wcfg *cfg, int nv, int nslices,
		      int us, struct wres *res)
{
	struct wb_ring r[MAX_VARIANTS];
	uint64_t iters_acc[MAX_VARIANTS] = {}, us_acc[MAX_VARIANTS] = {};
	double secs_acc[MAX_VARIANTS] = {};
	int v, sl, user = -1;

	TEST_ASSERT(nv <= MAX_VARIANTS, "too many variants");
	for (v = 0; v < nv; v++) {
		memset(&res[v], 0, sizeof(res[v]));
		if (cfg[v].mode == S_PERF)
			ring_open(&r[v], t->tid, &cfg[v].p);
		if (cfg[v].mode == S_USER) {
			TEST_ASSERT(user < 0 && t->guest, "one VMM sampler variant, for a guest");
			user = v;
			t->uchk = *cfg[v].chk;
			t->uchk.inloop = t->uchk.exact = 0;
			t->uchk.nbad = 0;
			timer_target = t->th;
		}
	}

	target_start(t);
	wb_sleep_us(WARMUP_US);
	for (sl = 0; sl < nslices; sl++) {
		for (v = 0; v < nv; v++) {
			const struct wcfg *c = &cfg[v];
			uint64_t c0, c1, u0 = 0, u1 = 0;
			double t0, t1;

			if (!t->guest)	/* the outermost record's saved frame pointer */
				*(volatile uint64_t *)*t->outer_fp =
					c->rbp_zero ? 0 : NATIVE_RBP_NOFAULT;
			if (c->mode == S_PERF)
				TEST_ASSERT(!ioctl(r[v].fd, PERF_EVENT_IOC_ENABLE, 0),
					    "PERF_EVENT_IOC_ENABLE");
			if (c->mode == S_USER) {
				u0 = t->usamples;
				t->usampler = 1;
				timer_arm(1000000000ull / c->user_rate);
			}
			t0 = wb_now_s();
			c0 = *t->iters;
			wb_sleep_us(us);
			c1 = *t->iters;
			t1 = wb_now_s();
			if (c->mode == S_PERF)
				TEST_ASSERT(!ioctl(r[v].fd, PERF_EVENT_IOC_DISABLE, 0),
					    "PERF_EVENT_IOC_DISABLE");
			if (c->mode == S_USER) {
				timer_arm(0);
				u1 = t->usamples;
				t->usampler = 0;
			}
			iters_acc[v] += c1 - c0;
			secs_acc[v] += t1 - t0;
			us_acc[v] += u1 - u0;
		}
	}
	target_stop(t);

	for (v = 0; v < nv; v++) {
		struct wres *w = &res[v];

		w->secs = secs_acc[v];
		w->rate = iters_acc[v] / w->secs;
		if (cfg[v].mode == S_PERF) {
			struct drain d = { .w = w, .chk = cfg[v].chk };

			wb_ring_drain(&r[v], bench_record, &d);
			wb_ring_close(&r[v]);
			w->samples += w->lost;
		} else if (cfg[v].mode == S_USER) {
			struct wb_chainchk *chk = cfg[v].chk;

			w->samples = w->guest = us_acc[v];
			chk->inloop += t->uchk.inloop;
			chk->exact += t->uchk.exact;
			if (t->uchk.nbad && !chk->nbad) {
				chk->nbad = t->uchk.nbad;
				memcpy(chk->bad, t->uchk.bad, sizeof(chk->bad));
			}
		}
		w->srate = w->samples / w->secs;
	}
}

/* One variant, one window. */
static void run_window(struct target *t, const struct wcfg *c, int us, struct wres *w)
{
	run_cycle(t, c, 1, 1, us, w);
}

static int reps = 7;
static bool verbose;
static bool have_knob;

/* Section 1: loads per frame. */
static void section_loads(void)
{
	static const struct {
		const char *name;
		int layout, depth;
		bool bare;
	} cfgs[] = {
		{ "onepage", LAYOUT_ONEPAGE, 4 },
		{ "onepage", LAYOUT_ONEPAGE, 16 },
		{ "onepage", LAYOUT_ONEPAGE, 64 },
		{ "spread", LAYOUT_SPREAD, 4 },
		{ "spread", LAYOUT_SPREAD, 16 },
		{ "spread", LAYOUT_SPREAD, 64 },
		/* The selftests' entry: the walk ends on a {0, 0} record. */
		{ "bare", LAYOUT_ONEPAGE, 16, true },
	};
	uint64_t a0, a1, f0, f1, l0, l1;
	int ci;

	printf("\n== 1. Guest memory loads per unwound frame (vCPU stats, %s period %d %s, %d ms) ==\n",
	       BENCH_EVENT, PERIOD_NS, BENCH_PERIOD_UNIT, LOADS_WINDOW_US / 1000);
	printf("%-8s %3s %7s %8s %6s %8s %8s %9s %10s %8s\n", "layout", "D", "samples",
	       "fr/smpl", "pages", "ld/smpl", "expect", "ld/frame", "v2 ld/fr", "chains");
	for (ci = 0; ci < ARRAY_SIZE(cfgs); ci++) {
		int d = cfgs[ci].depth, lay = cfgs[ci].layout;
		bool bare = cfgs[ci].bare;
		const char *name = cfgs[ci].name;
		struct wcfg c = { .mode = S_PERF,
				  .p = { .guest = true, .callchain = true, .period_ns = PERIOD_NS } };
		struct wb_chainchk chk = {};
		struct target *t;
		struct wres w;
		uint64_t pages, cb, fb, lb;
		double lpf, v2;

		/* bare: one more function, whose record has no return address. */
		t = guest_create(bare ? d + 1 : d, lay, bare);
		target_prime(t, &chk);
		c.chk = &chk;
		if (!vstat(t, "guest_callchains", &a0) ||
		    !vstat(t, "guest_callchain_frames", &f0) ||
		    !vstat(t, "guest_callchain_loads", &l0)) {
			printf("%-8s %3d   stats guest_callchain{s,_frames,_loads} missing in this kernel\n",
			       name, d);
			printf("BENCH loads layout=%s depth=%d missing=1\n", name, d);
			guest_destroy(t);
			continue;
		}
		run_window(t, &c, LOADS_WINDOW_US, &w);
		vstat(t, "guest_callchains", &a1);
		vstat(t, "guest_callchain_frames", &f1);
		vstat(t, "guest_callchain_loads", &l1);
		cb = a1 - a0;
		fb = f1 - f0;
		lb = l1 - l0;
		/* Stack pages holding the records read, from the guest's fps. */
		pages = (*t->outer_fp >> 12) - (*t->leaf_fp >> 12) + 1;
		lpf = fb ? (double)lb / fb : 0;
		/* v2: per record, two full walks (4 PTE loads + 1 data load each). */
		v2 = fb ? 2.0 * (4 + 1) * (double)(bare ? d + 1 : d) * cb / fb : 0;
		printf("%-8s %3d %7lu %8.2f %6lu %8.2f %8lu %9.4f %10.2f %4lu/%lu\n",
		       name, d, cb, cb ? (double)fb / cb : 0, pages,
		       cb ? (double)lb / cb : 0, (bare ? d + 1 : d) + 4 * pages, lpf, v2,
		       chk.exact, chk.inloop);
		printf("BENCH loads layout=%s depth=%d samples=%lu callchains=%lu frames=%lu loads=%lu pages=%lu frames_per_sample=%.3f loads_per_sample=%.3f loads_per_frame=%.4f v2_loads_per_frame=%.2f exact=%lu inloop=%lu\n",
		       name, d, w.samples, cb, fb, lb, pages, cb ? (double)fb / cb : 0,
		       cb ? (double)lb / cb : 0, lpf, v2, chk.exact, chk.inloop);
		if (chk.nbad && verbose) {
			wb_print_rets("expected", chk.ref, chk.nref);
			wb_print_rets("got", chk.bad, chk.nbad);
		}
		guest_destroy(t);
	}
}

/* Loss of throughput per sample, in seconds of the worker's time. */
static double cost_per_sample(const struct wres *base, const struct wres *w)
{
	if (!w->srate || !base->rate)
		return 0;
	return (base->rate - w->rate) / base->rate / w->srate;
}

/* Section 2 at one depth: the targets, their chain checks, the figures per rep. */
struct cost_run {
	int d;
	struct target *g, *n, *g0;
	struct wb_chainchk gchk, nchk, n0chk, *g0chk;
	double ratio[64], ratio0[64], gus[64], nus[64], n0us[64], gfrac[64];
	double gbase[64], nbase[64], g0us[64], share0[64], over0[64];
};

/* Section 2, repetition @i at one depth. */
static void cost_rep(struct cost_run *cr, int i)
{
	struct target *g = cr->g, *n = cr->n, *g0 = cr->g0;
	int d = cr->d;
	struct wcfg gN = { .mode = S_NONE };
	struct wcfg gS = { .mode = S_PERF, .p = { .guest = true, .period_ns = PERIOD_NS } };
	struct wcfg gC = gS;
	struct wcfg nN = { .mode = S_NONE };
	struct wcfg nS = { .mode = S_PERF, .p = { .period_ns = PERIOD_NS } };
	struct wcfg nC = nS, nC0;
	struct wcfg g0C = gC;
	struct wres wgN, wgS, wgC, wnN, wnS, wnC, wnC0, w0N, w0S, w0C;

	gC.p.callchain = true;
	gC.chk = &cr->gchk;
	nC.p.callchain = true;
	nC.chk = &cr->nchk;
	nC0 = nC;
	nC0.rbp_zero = true;
	nC0.chk = &cr->n0chk;
	g0C.chk = cr->g0chk;
	{
		struct wcfg gv[] = { gN, gS, gC }, nv[] = { nN, nS, nC, nC0 };
		struct wcfg g0v[] = { gN, gS, g0C };
		struct wres gr[3], nr[4], g0r[3];

		run_cycle(g, gv, 3, slices, slice_us, gr);
		run_cycle(n, nv, 4, slices, slice_us, nr);
		run_cycle(g0, g0v, 3, slices, slice_us, g0r);
		wgN = gr[0], wgS = gr[1], wgC = gr[2];
		wnN = nr[0], wnS = nr[1], wnC = nr[2], wnC0 = nr[3];
		w0N = g0r[0], w0S = g0r[1], w0C = g0r[2];
	}
	cr->gus[i] = (cost_per_sample(&wgN, &wgC) - cost_per_sample(&wgN, &wgS)) * 1e6;
	cr->nus[i] = (cost_per_sample(&wnN, &wnC) - cost_per_sample(&wnN, &wnS)) * 1e6;
	cr->n0us[i] = (cost_per_sample(&wnN, &wnC0) - cost_per_sample(&wnN, &wnS)) * 1e6;
	cr->g0us[i] = (cost_per_sample(&w0N, &w0C) - cost_per_sample(&w0N, &w0S)) * 1e6;
	cr->ratio[i] = cr->nus[i] > 0 ? cr->gus[i] / cr->nus[i] : NAN;
	cr->share0[i] = cr->gus[i] > 0 ? cr->g0us[i] / cr->gus[i] : NAN;
	cr->over0[i] = cr->nus[i] > 0 ? cr->g0us[i] / cr->nus[i] : NAN;
	cr->ratio0[i] = cr->n0us[i] > 0 ? cr->gus[i] / cr->n0us[i] : NAN;
	cr->gfrac[i] = wgC.samples ? (double)wgC.guest / wgC.samples : 0;
	cr->gbase[i] = cost_per_sample(&wgN, &wgS) * 1e6;
	cr->nbase[i] = cost_per_sample(&wnN, &wnS) * 1e6;
	if (verbose)
		printf("  D=%d rep %d: guest it/s N %.0f S %.0f C %.0f smp/s S %.0f C %.0f | native it/s N %.0f S %.0f C %.0f C0 %.0f smp/s S %.0f C %.0f C0 %.0f\n",
		       d, i, wgN.rate, wgS.rate, wgC.rate, wgS.srate, wgC.srate,
		       wnN.rate, wnS.rate, wnC.rate, wnC0.rate, wnS.srate, wnC.srate, wnC0.srate);
	printf("BENCH cost_rep depth=%d rep=%d guest_unwind_us=%.3f host_unwind_us=%.3f host_rbp0_unwind_us=%.3f guest_noframe_us=%.3f ratio=%.3f ratio_rbp0=%.3f guest_sample_us=%.3f host_sample_us=%.3f guest_frac=%.3f lost=%lu throttled=%lu g_it=%.0f,%.0f,%.0f g_smp=%.0f,%.0f n_it=%.0f,%.0f,%.0f,%.0f n_smp=%.0f,%.0f,%.0f\n",
	       d, i, cr->gus[i], cr->nus[i], cr->n0us[i], cr->g0us[i], cr->ratio[i], cr->ratio0[i],
	       cr->gbase[i], cr->nbase[i],
	       cr->gfrac[i], wgC.lost + wnC.lost + wnC0.lost,
	       wgC.throttled + wnC.throttled + wnC0.throttled,
	       wgN.rate, wgS.rate, wgC.rate, wgS.srate, wgC.srate,
	       wnN.rate, wnS.rate, wnC.rate, wnC0.rate, wnS.srate, wnC.srate, wnC0.srate);
}

/* Section 2 at one depth: the reps' figures, and the print-out of their spreads. */
static void cost_summary(struct cost_run *cr)
{
	struct wb_spread s, s0, sg, sn, sn0, sgf, sgb, snb, sg0, ssh0, sov0;
	int d = cr->d;

	s = wb_spread_of(cr->ratio, reps);
	s0 = wb_spread_of(cr->ratio0, reps);
	sg = wb_spread_of(cr->gus, reps);
	sn = wb_spread_of(cr->nus, reps);
	sn0 = wb_spread_of(cr->n0us, reps);
	sgf = wb_spread_of(cr->gfrac, reps);
	sgb = wb_spread_of(cr->gbase, reps);
	snb = wb_spread_of(cr->nbase, reps);
	sg0 = wb_spread_of(cr->g0us, reps);
	ssh0 = wb_spread_of(cr->share0, reps);
	sov0 = wb_spread_of(cr->over0, reps);
	printf("D=%-3d guest/host unwind cost %.2f [%.2f-%.2f] (%d/%d reps valid)  (vs host chain ending at frame pointer 0: %.2f [%.2f-%.2f])\n",
	       d, s.med, s.min, s.max, s.n, reps, s0.med, s0.min, s0.max);
	printf("      raw TCG us: guest unwind %.2f [%.2f-%.2f], host unwind %.2f [%.2f-%.2f], host+fault %.2f; sample w/o chain: guest %.2f host %.2f\n",
	       sg.med, sg.min, sg.max, sn.med, sn.min, sn.max, sn0.med, sgb.med, snb.med);
	printf("      guest samples %.1f %%; chains exact: guest %lu/%lu, host %lu/%lu, host rbp0 %lu/%lu\n",
	       sgf.med * 100, cr->gchk.exact, cr->gchk.inloop, cr->nchk.exact, cr->nchk.inloop,
	       cr->n0chk.exact, cr->n0chk.inloop);
	printf("      guest callback without any guest load (frame pointer 1, %.2f us): %.2f [%.2f-%.2f] of the guest unwind, %.2f [%.2f-%.2f] x the host unwind; chains exact %lu/%lu\n",
	       sg0.med, ssh0.med, ssh0.min, ssh0.max, sov0.med, sov0.min, sov0.max,
	       cr->g0chk->exact, cr->g0chk->inloop);
	printf("BENCH cost depth=%d reps=%d valid=%d ratio_med=%.3f ratio_min=%.3f ratio_max=%.3f ratio_rbp0_med=%.3f ratio_rbp0_min=%.3f ratio_rbp0_max=%.3f noframe_share_med=%.3f noframe_share_min=%.3f noframe_share_max=%.3f noframe_over_host_med=%.3f noframe_over_host_min=%.3f noframe_over_host_max=%.3f noframe_exact=%lu noframe_inloop=%lu guest_unwind_over_guest_sample_med=%.3f host_unwind_over_host_sample_med=%.3f guest_frac=%.3f guest_exact=%lu guest_inloop=%lu host_exact=%lu host_inloop=%lu\n",
	       d, reps, s.n, s.med, s.min, s.max, s0.med, s0.min, s0.max,
	       ssh0.med, ssh0.min, ssh0.max, sov0.med, sov0.min, sov0.max,
	       cr->g0chk->exact, cr->g0chk->inloop,
	       sgb.med > 0 ? sg.med / sgb.med : 0, snb.med > 0 ? sn.med / snb.med : 0,
	       sgf.med, cr->gchk.exact, cr->gchk.inloop, cr->nchk.exact, cr->nchk.inloop);
	if (verbose && cr->gchk.nbad) {
		wb_print_rets("guest expected", cr->gchk.ref, cr->gchk.nref);
		wb_print_rets("guest got", cr->gchk.bad, cr->gchk.nbad);
	}
	if (verbose && cr->nchk.nbad) {
		wb_print_rets("host expected", cr->nchk.ref, cr->nchk.nref);
		wb_print_rets("host got", cr->nchk.bad, cr->nchk.nbad);
	}
}

/* Section 2: unwind cost, guest vs native. */
static void section_cost(void)
{
	static const int depths[] = { 4, 16, 64 };
	static double all_g[3][64], all_n[3][64];
	static struct cost_run cr;
	double slope[64];
	struct wb_spread ss, sg4, sg64, sn4, sn64;
	struct target *g0 = guest_create(3, LAYOUT_NOFRAME, false);
	struct wb_chainchk g0chk = {};
	int di, i;

	/* The part of a guest unwind that reads no guest memory (frame pointer 1). */
	target_prime(g0, &g0chk);

	printf("\n== 2. Unwind cost per sample: guest (KVM) vs host (user FP walk), %s period %d %s, %d reps of %d x %d ms slices per variant ==\n",
	       BENCH_EVENT, PERIOD_NS, BENCH_PERIOD_UNIT, reps, slices, slice_us / 1000);
	printf("   cost = (loss/sample with PERF_SAMPLE_CALLCHAIN) - (loss/sample without); raw us are TCG time\n");
	for (di = 0; di < 3; di++) {
		memset(&cr, 0, sizeof(cr));
		cr.d = depths[di];
		cr.g = guest_create(cr.d, LAYOUT_ONEPAGE, false);
		cr.n = native_create(cr.d, LAYOUT_ONEPAGE);
		cr.g0 = g0;
		cr.g0chk = &g0chk;

		target_prime(cr.g, &cr.gchk);
		target_prime(cr.n, &cr.nchk);
		cr.n0chk = cr.nchk;
		g0chk.exact = g0chk.inloop = 0;
		for (i = 0; i < reps; i++)
			cost_rep(&cr, i);
		cost_summary(&cr);
		memcpy(all_g[di], cr.gus, sizeof(all_g[di]));
		memcpy(all_n[di], cr.nus, sizeof(all_n[di]));
		native_destroy(cr.n);
		guest_destroy(cr.g);
	}
	/*
	 * The marginal cost of one more frame, from D=4 to D=64: it leaves out
	 * what does not depend on D (the context, the IP, the record header).
	 */
	for (i = 0; i < reps; i++) {
		double dn = all_n[2][i] - all_n[0][i];

		slope[i] = dn > 0 ? (all_g[2][i] - all_g[0][i]) / dn : NAN;
	}
	ss = wb_spread_of(slope, reps);
	sg4 = wb_spread_of(all_g[0], reps);
	sg64 = wb_spread_of(all_g[2], reps);
	sn4 = wb_spread_of(all_n[0], reps);
	sn64 = wb_spread_of(all_n[2], reps);
	printf("per extra frame (D=4 -> 64): guest/host %.2f [%.2f-%.2f] (%d/%d reps valid); ratio of medians %.2f\n",
	       ss.med, ss.min, ss.max, ss.n, reps,
	       (sg64.med - sg4.med) / (sn64.med - sn4.med));
	printf("BENCH cost_slope reps=%d valid=%d ratio_med=%.3f ratio_min=%.3f ratio_max=%.3f ratio_of_medians=%.3f\n",
	       reps, ss.n, ss.med, ss.min, ss.max, (sg64.med - sg4.med) / (sn64.med - sn4.med));
	/*
	 * What does not depend on D, for the guest: with the callback itself
	 * measured above (frame pointer 1), it is the page walk of the stack page.
	 * Expressed in frame reads, a figure that does not depend on speed.
	 */
	for (i = 0; i < reps; i++) {
		double per_frame = (all_g[2][i] - all_g[0][i]) / 60;

		slope[i] = per_frame > 0 ? (all_g[0][i] - 4 * per_frame) / per_frame : NAN;
	}
	ss = wb_spread_of(slope, reps);
	printf("guest cost that does not depend on D (the page walk): %.1f [%.1f-%.1f] frame reads; share of the guest unwind: D=4 %.2f, D=64 %.2f\n",
	       ss.med, ss.min, ss.max,
	       (sg4.med - 4 * (sg64.med - sg4.med) / 60) / sg4.med,
	       (sg4.med - 4 * (sg64.med - sg4.med) / 60) / sg64.med);
	printf("BENCH cost_fixed reps=%d valid=%d walk_in_frames_med=%.3f walk_in_frames_min=%.3f walk_in_frames_max=%.3f share_d4=%.3f share_d64=%.3f\n",
	       reps, ss.n, ss.med, ss.min, ss.max,
	       (sg4.med - 4 * (sg64.med - sg4.med) / 60) / sg4.med,
	       (sg4.med - 4 * (sg64.med - sg4.med) / 60) / sg64.med);
	guest_destroy(g0);
}

/* Section 3: the kernel's guest callchains vs a sampler in the VMM. */
#define SAMPLER_DEPTH	16
#ifdef __x86_64__
#define SAMPLER_SLICES	6
static const uint64_t sampler_rates[] = { 250, 500, 1000, 2000, 5000, 10000 };
#define NR_SRATES	ARRAY_SIZE(sampler_rates)

static void section_sampler(void)
{
	static double kloss[NR_SRATES][64], uloss[NR_SRATES][64], ratio[NR_SRATES][64];
	static double kach[NR_SRATES][64], uach[NR_SRATES][64];
	struct target *g = guest_create(SAMPLER_DEPTH, LAYOUT_ONEPAGE, false);
	struct wb_chainchk kchk = {}, uchk;
	int kmax = 0, umax = 0, i, ri;
	bool same;

	printf("\n== 3. Kernel guest callchains vs a sampler in the VMM (D=%d, one page, %d reps of %d x %d ms slices per variant) ==\n",
	       SAMPLER_DEPTH, reps, SAMPLER_SLICES, slice_us / 1000);
	printf("   VMM sampler: timerfd thread (%s) -> pthread_kill(SIGUSR1) -> KVM_RUN -EINTR -> KVM_GET_REGS, KVM_GET_SREGS, walk\n",
	       timer_fifo ? "SCHED_FIFO" : "SCHED_OTHER: could not get SCHED_FIFO");
	target_prime(g, &kchk);
	uchk = kchk;
	for (i = 0; i < reps; i++) {
		for (ri = 0; ri < NR_SRATES; ri++) {
			uint64_t rate = sampler_rates[ri];
			struct wcfg n = { .mode = S_NONE };
			struct wcfg k = { .mode = S_PERF, .chk = &kchk,
					  .p = { .guest = true, .callchain = true,
						 .period_ns = 1000000000ull / rate } };
			struct wcfg u = { .mode = S_USER, .user_rate = rate, .chk = &uchk };
			struct wres wn, wk, wu;
			double kc, uc;

			struct wcfg v3[] = { n, k, u };
			struct wres r3[3];

			run_cycle(g, v3, 3, SAMPLER_SLICES, slice_us, r3);
			wn = r3[0], wk = r3[1], wu = r3[2];
			kloss[ri][i] = (wn.rate - wk.rate) / wn.rate;
			uloss[ri][i] = (wn.rate - wu.rate) / wn.rate;
			kach[ri][i] = wk.srate;
			uach[ri][i] = wu.srate;
			kc = cost_per_sample(&wn, &wk);
			uc = cost_per_sample(&wn, &wu);
			ratio[ri][i] = kc > 0 ? uc / kc : NAN;
			if (verbose)
				printf("  rep %d rate %lu: it/s N %.0f K %.0f U %.0f, smp/s K %.0f U %.0f, loss/sample us K %.2f U %.2f\n",
				       i, rate, wn.rate, wk.rate, wu.rate, wk.srate, wu.srate,
				       kc * 1e6, uc * 1e6);
			printf("BENCH sampler_rep rate=%lu rep=%d kern_loss=%.4f user_loss=%.4f kern_rate=%.0f user_rate=%.0f user_over_kern=%.3f kern_throttled=%lu kern_lost=%lu it_n=%.0f it_k=%.0f it_u=%.0f\n",
			       rate, i, kloss[ri][i], uloss[ri][i], wk.srate, wu.srate,
			       ratio[ri][i], wk.throttled, wk.lost, wn.rate, wk.rate, wu.rate);
		}
	}
	printf("%8s | %-22s %-22s | %-10s %-10s | %s\n", "rate/s", "kernel loss %", "VMM loss %",
	       "kern smp/s", "VMM smp/s", "VMM/kernel loss per sample");
	for (ri = 0; ri < NR_SRATES; ri++) {
		struct wb_spread k = wb_spread_of(kloss[ri], reps), u = wb_spread_of(uloss[ri], reps);
		struct wb_spread r = wb_spread_of(ratio[ri], reps);
		struct wb_spread ka = wb_spread_of(kach[ri], reps), ua = wb_spread_of(uach[ri], reps);

		printf("%8lu | %5.1f [%5.1f-%5.1f]    %5.1f [%5.1f-%5.1f]    | %10.0f %10.0f | %.2f [%.2f-%.2f]\n",
		       sampler_rates[ri], k.med * 100, k.min * 100, k.max * 100,
		       u.med * 100, u.min * 100, u.max * 100, ka.med, ua.med, r.med, r.min, r.max);
		printf("BENCH sampler rate=%lu reps=%d kern_loss_med=%.4f kern_loss_min=%.4f kern_loss_max=%.4f user_loss_med=%.4f user_loss_min=%.4f user_loss_max=%.4f kern_rate_med=%.0f user_rate_med=%.0f user_over_kern_med=%.3f user_over_kern_min=%.3f user_over_kern_max=%.3f\n",
		       sampler_rates[ri], reps, k.med, k.min, k.max, u.med, u.min, u.max,
		       ka.med, ua.med, r.med, r.min, r.max);
		/* Sustained: at most 10 % loss, and the rate actually delivered. */
		if (k.med <= 0.10 && ka.med >= 0.9 * sampler_rates[ri])
			kmax = sampler_rates[ri];
		if (u.med <= 0.10 && ua.med >= 0.9 * sampler_rates[ri])
			umax = sampler_rates[ri];
	}
	same = kchk.inloop && uchk.inloop && kchk.exact == kchk.inloop && uchk.exact == uchk.inloop;
	printf("highest ladder rate with <= 10 %% guest throughput loss (median) and >= 90 %% of the rate delivered: kernel %d/s, VMM sampler %d/s\n",
	       kmax, umax);
	printf("chains (IP in the leaf loop) equal to the reference walk: kernel %lu/%lu, VMM %lu/%lu -> %s\n",
	       kchk.exact, kchk.inloop, uchk.exact, uchk.inloop, same ? "same chains" : "DIFFERENT");
	wb_print_rets("reference", kchk.ref, kchk.nref);
	if (kchk.nbad)
		wb_print_rets("kernel mismatch", kchk.bad, kchk.nbad);
	if (uchk.nbad)
		wb_print_rets("VMM mismatch", uchk.bad, uchk.nbad);
	printf("BENCH sampler_max kern_max_rate=%d user_max_rate=%d ladder_max=%lu timer_fifo=%d\n", kmax, umax,
	       sampler_rates[NR_SRATES - 1], timer_fifo);
	printf("BENCH sampler_chains kern_exact=%lu kern_inloop=%lu user_exact=%lu user_inloop=%lu depth=%d same=%d\n",
	       kchk.exact, kchk.inloop, uchk.exact, uchk.inloop, kchk.nref, same);
	guest_destroy(g);
}
#else
static void section_sampler(void)
{
	printf("\n== 3. Kernel guest callchains vs a sampler in the VMM: not on arm64 (its page walk reads x86 page tables) ==\n");
}
#endif

/* Section 4: perf_event_max_sample_rate at a requested 100 kHz. */
#define MAXRATE_REPS		5
#define MAXRATE_WINDOW_US	500000
static void section_maxrate(void)
{
	static double after[2][64], ach[2][64], loss[2][64];
	struct target *g = guest_create(SAMPLER_DEPTH, LAYOUT_ONEPAGE, false);
	struct wb_chainchk chk = {};
	long before0 = wb_read_long(MAX_RATE_PATH);
	int i, cc;

	printf("\n== 4. kernel.perf_event_max_sample_rate after runs at sample_freq=100000 (D=%d, %d x %d ms) ==\n",
	       SAMPLER_DEPTH, MAXRATE_REPS, MAXRATE_WINDOW_US / 1000);
	target_prime(g, &chk);
	for (i = 0; i < MAXRATE_REPS; i++) {
		for (cc = 0; cc < 2; cc++) {
			struct wcfg n = { .mode = S_NONE };
			struct wcfg f = { .mode = S_PERF,
					  .p = { .guest = true, .callchain = cc, .freq = 100000 } };
			struct wres wn, wf;
			long before, aft;

			run_window(g, &n, MAXRATE_WINDOW_US / 2, &wn);
			TEST_ASSERT(wb_write_file(MAX_RATE_PATH, "100000"), "cannot write %s", MAX_RATE_PATH);
			before = wb_read_long(MAX_RATE_PATH);
			run_window(g, &f, MAXRATE_WINDOW_US, &wf);
			aft = wb_read_long(MAX_RATE_PATH);
			after[cc][i] = aft;
			ach[cc][i] = wf.srate;
			loss[cc][i] = (wn.rate - wf.rate) / wn.rate;
			printf("BENCH maxrate_rep callchain=%d rep=%d before=%ld after=%ld achieved=%.0f loss=%.4f throttled=%lu lost=%lu\n",
			       cc, i, before, aft, wf.srate, loss[cc][i], wf.throttled, wf.lost);
		}
	}
	for (cc = 0; cc < 2; cc++) {
		struct wb_spread a = wb_spread_of(after[cc], MAXRATE_REPS), s = wb_spread_of(ach[cc], MAXRATE_REPS);
		struct wb_spread l = wb_spread_of(loss[cc], MAXRATE_REPS);

		printf("%-22s max_sample_rate after: %.0f [%.0f-%.0f]; samples/s delivered %.0f [%.0f-%.0f]; guest loss %.1f %%\n",
		       cc ? "with guest callchains" : "without callchains", a.med, a.min, a.max,
		       s.med, s.min, s.max, l.med * 100);
		printf("BENCH maxrate callchain=%d reps=%d before=100000 after_med=%.0f after_min=%.0f after_max=%.0f achieved_med=%.0f achieved_min=%.0f achieved_max=%.0f loss_med=%.4f\n",
		       cc, MAXRATE_REPS, a.med, a.min, a.max, s.med, s.min, s.max, l.med);
	}
	if (before0 > 0) {
		char buf[32];

		snprintf(buf, sizeof(buf), "%ld", before0);
		wb_write_file(MAX_RATE_PATH, buf);
	}
	guest_destroy(g);
}

/* Section 5: stack copies against the frame-pointer walk. */
#ifdef HAVE_STACK_COPY
#define COPY_DEPTH		16
#define COPY_BYTES		16384	/* the demo's ORC guest's limit, a task stack's size */

static void section_copy(void)
{
	static const struct {
		const char *name;
		int layout;
	} cfgs[] = {
		{ "onepage", LAYOUT_ONEPAGE },
		{ "spread", LAYOUT_SPREAD },
	};
	static double fp_us[64], copy_us[64], ratio[64], fp_b[64], copy_b[64], none_b[64];
	long knob0;
	int ci, i;

	printf("\n== 5. Stack copies against the frame-pointer walk: guest, D=%d, %s period %d %s, limit %d bytes, %d reps of %d x %d ms slices per variant ==\n",
	       COPY_DEPTH, BENCH_EVENT, PERIOD_NS, BENCH_PERIOD_UNIT, COPY_BYTES, reps, slices,
	       slice_us / 1000);
	if (access(STACK_KNOB_PATH, F_OK)) {
		printf("not measured: no %s: this kernel has no guest stack copies\n",
		       STACK_KNOB_PATH);
		printf("BENCH copy missing=1\n");
		return;
	}
	knob0 = wb_read_long(STACK_KNOB_PATH);
	TEST_ASSERT(wb_write_file(STACK_KNOB_PATH, "Y"), "cannot write Y to %s", STACK_KNOB_PATH);
	printf("%-8s | %-24s %-24s %-22s | %s\n", "layout", "FP walk us/sample (TCG)",
	       "copy us/sample (TCG)", "copy / FP walk cost", "bytes/sample: none, FP, copy");
	for (ci = 0; ci < ARRAY_SIZE(cfgs); ci++) {
		struct wcfg n = { .mode = S_NONE };
		struct wcfg p = { .mode = S_PERF, .p = { .guest = true, .period_ns = PERIOD_NS } };
		struct wcfg fp = p, copy = p;
		struct wb_chainchk chk = {};
		struct wb_spread sf, sc, sr, sbn, sbf, sbc;
		struct target *t = guest_create(COPY_DEPTH, cfgs[ci].layout, false);

		target_prime(t, &chk);
		fp.p.callchain = true;
		fp.chk = &chk;
		copy.p.stack = COPY_BYTES;
		for (i = 0; i < reps; i++) {
			struct wcfg v[] = { n, p, fp, copy };
			struct wres r[4];

			run_cycle(t, v, 4, slices, slice_us, r);
			fp_us[i] = (cost_per_sample(&r[0], &r[2]) - cost_per_sample(&r[0], &r[1])) * 1e6;
			copy_us[i] = (cost_per_sample(&r[0], &r[3]) - cost_per_sample(&r[0], &r[1])) * 1e6;
			ratio[i] = fp_us[i] > 0 ? copy_us[i] / fp_us[i] : NAN;
			/* Per sample in the ring: samples less the lost ones. */
			none_b[i] = r[1].samples > r[1].lost ?
				    (double)r[1].bytes / (r[1].samples - r[1].lost) : 0;
			fp_b[i] = r[2].samples > r[2].lost ?
				  (double)r[2].bytes / (r[2].samples - r[2].lost) : 0;
			copy_b[i] = r[3].samples > r[3].lost ?
				    (double)r[3].bytes / (r[3].samples - r[3].lost) : 0;
			printf("BENCH copy_rep layout=%s depth=%d rep=%d fp_us=%.3f copy_us=%.3f ratio=%.3f none_bytes=%.1f fp_bytes=%.1f copy_bytes=%.1f lost=%lu,%lu,%lu throttled=%lu,%lu,%lu it=%.0f,%.0f,%.0f,%.0f smp=%.0f,%.0f,%.0f\n",
			       cfgs[ci].name, COPY_DEPTH, i, fp_us[i], copy_us[i], ratio[i],
			       none_b[i], fp_b[i], copy_b[i], r[1].lost, r[2].lost, r[3].lost,
			       r[1].throttled, r[2].throttled, r[3].throttled,
			       r[0].rate, r[1].rate, r[2].rate, r[3].rate,
			       r[1].srate, r[2].srate, r[3].srate);
		}
		sf = wb_spread_of(fp_us, reps);
		sc = wb_spread_of(copy_us, reps);
		sr = wb_spread_of(ratio, reps);
		sbn = wb_spread_of(none_b, reps);
		sbf = wb_spread_of(fp_b, reps);
		sbc = wb_spread_of(copy_b, reps);
		printf("%-8s | %6.2f [%6.2f-%6.2f]     %6.2f [%6.2f-%6.2f]     %5.2f [%5.2f-%5.2f]    | %.0f, %.0f, %.0f\n",
		       cfgs[ci].name, sf.med, sf.min, sf.max, sc.med, sc.min, sc.max,
		       sr.med, sr.min, sr.max, sbn.med, sbf.med, sbc.med);
		printf("BENCH copy layout=%s depth=%d limit=%d reps=%d valid=%d ratio_med=%.3f ratio_min=%.3f ratio_max=%.3f fp_us_med=%.3f copy_us_med=%.3f none_bytes_med=%.1f fp_bytes_med=%.1f copy_bytes_med=%.1f fp_exact=%lu fp_inloop=%lu\n",
		       cfgs[ci].name, COPY_DEPTH, COPY_BYTES, reps, sr.n, sr.med, sr.min, sr.max,
		       sf.med, sc.med, sbn.med, sbf.med, sbc.med, chk.exact, chk.inloop);
		guest_destroy(t);
	}
	wb_write_file(STACK_KNOB_PATH, knob0 ? "Y" : "N");
}
#else
static void section_copy(void)
{
#ifdef __x86_64__
	const char *why = "built without PERF_SAMPLE_STACK_GUEST";
#else
	const char *why = "arm64 KVM provides no stack copies";
#endif

	printf("\n== 5. Stack copies against the frame-pointer walk: not measured: %s ==\n", why);
	printf("BENCH copy missing=1\n");
}
#endif

/*
 * perf_cpu_time_max_percent as it was, restored at exit too (a failed
 * assertion exits): while it is 0, the kernel refuses writes to
 * perf_event_max_sample_rate.
 */
static long cpu_time0 = -1;

static void cpu_time_restore(void)
{
	char buf[32];

	if (cpu_time0 < 0)
		return;
	snprintf(buf, sizeof(buf), "%ld", cpu_time0);
	wb_write_file(CPU_TIME_PATH, buf);
	cpu_time0 = -1;
}

int main(int argc, char *argv[])
{
	const char *sections = BENCH_SECTIONS;
	struct utsname uts;
	double start = wb_now_s();
	int opt;

	while ((opt = getopt(argc, argv, "r:w:n:s:v")) != -1) {
		switch (opt) {
		case 'r':
			reps = atoi(optarg);
			break;
		case 'w':
			slice_us = atoi(optarg) * 1000;
			break;
		case 'n':
			slices = atoi(optarg);
			break;
		case 's':
			sections = optarg;
			break;
		case 'v':
			verbose = true;
			break;
		default:
			fprintf(stderr, "usage: %s [-r reps] [-w slice_ms] [-n slices] [-s 12345] [-v]\n",
				argv[0]);
			return 2;
		}
	}
	TEST_ASSERT(reps >= 1 && reps <= 64, "reps must be 1..64");
	TEST_ASSERT(slices >= 1 && slice_us >= 1000, "bad slices");

	close(open_kvm_dev_path_or_exit());
	have_knob = !access(WB_KNOB_PATH, F_OK);
	if (have_knob && !wb_write_file(WB_KNOB_PATH, "Y"))
		printf("cannot write Y to %s\n", WB_KNOB_PATH);
	if (!have_knob)
		printf("no %s: this kernel has no guest callchains; guest chains will be empty\n",
		       WB_KNOB_PATH);
	wb_write_file(MAX_RATE_PATH, "100000");
	uname(&uts);
	printf("guest_bench: kernel %s, %ld CPU(s), guest_callchains=%s, max_sample_rate %ld, %d reps of %d x %d ms slices\n",
	       uts.release, sysconf(_SC_NPROCESSORS_ONLN), have_knob ? (wb_read_long(WB_KNOB_PATH) ? "Y" : "N") : "absent",
	       wb_read_long(MAX_RATE_PATH), reps, slices, slice_us / 1000);
	printf("BENCH meta kernel=%s arch=%s event=%s cpus=%ld knob=%s reps=%d slices=%d slice_ms=%d period=%d\n",
	       uts.release, uts.machine, BENCH_EVENT, sysconf(_SC_NPROCESSORS_ONLN),
	       have_knob ? (wb_read_long(WB_KNOB_PATH) ? "Y" : "N") : "absent", reps, slices, slice_us / 1000,
	       PERIOD_NS);

	timer_init();
	/*
	 * Sections 1-3 and 5 sample at fixed rates: keep the kernel from
	 * lowering perf_event_max_sample_rate under them, and from throttling
	 * their events, as it does for PMU interrupts that take long (arm64
	 * under TCG: tens of microseconds each).  Section 4 measures exactly
	 * that, with the limit as it was.
	 */
	cpu_time0 = wb_read_long(CPU_TIME_PATH);
	atexit(cpu_time_restore);
	if (!wb_write_file(CPU_TIME_PATH, "0"))
		printf("cannot write 0 to %s\n", CPU_TIME_PATH);
	if (strchr(sections, '1'))
		section_loads();
	if (strchr(sections, '2'))
		section_cost();
	if (strchr(sections, '3'))
		section_sampler();
	if (strchr(sections, '5'))
		section_copy();
	cpu_time_restore();
	if (strchr(sections, '4'))
		section_maxrate();
	timer_exit();
	printf("\nguest_bench: done in %.0f s\n", wb_now_s() - start);
	printf("BENCH done secs=%.0f\n", wb_now_s() - start);
	return 0;
}
