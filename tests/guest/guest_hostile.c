// SPDX-License-Identifier: GPL-2.0
/*
 * guest_hostile: hostile guests against the KVM guest callchain unwinder.
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
 *    only if next > fp and next - fp <= 1 MiB;
 *  - at most sample_max_stack entries follow the marker, the IP included.
 *
 * Every case below builds a frame chain whose callchain those rules fully
 * determine, spins in an asm loop with RBP pointing at it, samples the vCPU
 * thread with cpu-clock at 50 kHz (exclude_host=1) and checks every sample:
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
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include <linux/perf_event.h>
#include <linux/ring_buffer.h>
#include <linux/sizes.h>

#include "kvm_util.h"
#include "processor.h"
#include "sparsebit.h"
#include "ucall_common.h"

#define KNOB_PATH		"/sys/module/kvm/parameters/guest_callchains"
#define MAX_STACK_PATH		"/proc/sys/kernel/perf_event_max_stack"

/* cpu-clock period: 20 us, i.e. 50 kHz. */
#define SAMPLE_PERIOD_NS	20000
#define RING_DATA_PAGES		256
#define DRAIN_INTERVAL_US	1000

/* Each case runs RUN_MS, longer (up to RUN_MAX_MS) until MIN_IN_SPIN. */
#define RUN_MS			1200
#define RUN_MAX_MS		4000
#define MIN_IN_SPIN		20
/* Sample progress is tracked in bins of BIN_MS. */
#define BIN_MS			250
#define NR_BINS			(RUN_MAX_MS / BIN_MS + 4)

/* A vCPU thread must be back from KVM_RUN within this after being told. */
#define JOIN_TIMEOUT_S		20
/* A whole case must be done within this, else the process bails out. */
#define CASE_WATCHDOG_S		150

#define LAT_SLEEP_NS		1000000
#define LAT_MAX			16384

#define MAX_EXP			512
#define HIST_MAX		8
#define FRAME_MAX_GAP		SZ_1M

/* Guest memory beyond the library's needs, in 4K pages (slot 0). */
#define EXTRA_PAGES		(512 * 512)

/* Return addresses of crafted frames; R9 is a decoy that must never show. */
#define R1			0x1111000ull
#define R2			0x2222000ull
#define R3			0x3333000ull
#define R9			0x9999000ull
#define RC(k)			(0x40000000ull + (uint64_t)(k) * 0x10)

/* GPAs outside every memslot: a hole, and the local APIC's page. */
#define MMIO_GPA		0xc0000000ull
#define LAPIC_GPA		0xfee00000ull

/* Addresses around the canonical boundaries. */
#define LOW_TOP_PAGE		0x00007ffffffff000ull
#define NONCANONICAL		0x0000800000000000ull
#define HIGH_BASE_PAGE		0xffff800000000000ull
#define TOP_PAGE		0xfffffffffffff000ull

/* User segments, placed after the TSS (0x18-0x27) of the selftests' GDT. */
#define USER_DS			(0x28 | 3)
#define USER_CS			(0x30 | 3)
#define USER_DS_DESC		0x00cff3000000ffffull
#define USER_CS_DESC		0x00affb000000ffffull
#define X86_EFLAGS_IOPL3	(3u << 12)
/* The selftests' ucall port (lib/x86_64/ucall.c). */
#define UCALL_PORT		0x1000

#define RSVD_BIT		BIT_ULL(51)

/* ---------------------------------------------------------------------- */
/* Guest side                                                             */
/* ---------------------------------------------------------------------- */

/* Written by the host before each run: the RBP the guest spins with. */
static uint64_t spin_rbp;
/* Written by the host through its mapping of guest memory: end the run. */
static volatile uint64_t guest_stop;

void hostile_spin(uint64_t rbp, volatile uint64_t *stop);
extern const char spin_start[], spin_end[];

/*
 * Spin with RBP = @rbp until *@stop.  Every sample whose guest IP is in
 * [spin_start, spin_end) sees exactly that RBP.
 */
asm(".pushsection .text\n"
	".global hostile_spin\n"
	".type hostile_spin, @function\n"
	"hostile_spin:\n"
	"	push %rbp\n"
	"	mov %rdi, %rbp\n"
	".global spin_start\n"
	"spin_start:\n"
	"	cmpq $0, (%rsi)\n"
	"	je spin_start\n"
	".global spin_end\n"
	"spin_end:\n"
	"	pop %rbp\n"
	"	ret\n"
	".size hostile_spin, . - hostile_spin\n"
	".popsection\n");

static void guest_code(void)
{
	for (;;) {
		hostile_spin(READ_ONCE(spin_rbp), &guest_stop);
		GUEST_SYNC(0);
	}
}

/*
 * Case 3: vCPU 1 rewrites the frame records vCPU 0 spins on, and the PTE
 * that maps them, through aliases of its own.  Each slot i of the frame page
 * only ever holds values from next[i][] and ret[i][]; the PTE only values
 * from pte[].
 */
#define RW_SLOTS		4
#define RW_OFF			0x800
#define RW_STRIDE		0x40

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

/* ---------------------------------------------------------------------- */
/* Host side: bookkeeping                                                 */
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
	uint64_t bins[NR_BINS];
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
	/* the IPs where RBP is known: the spin loop unless set */
	uint64_t ip_start;
	uint64_t ip_end;
	/* the guest cannot be told to stop: kick it out with a signal */
	bool kick;
	/* results */
	struct stats st;
	int lat_max_us;
	int lat_p99_us;
	int lat_n;
	const char *skip;
	bool pass;
	char note[1536];
};

#define MAX_CASES		64
static struct hcase *cases[MAX_CASES];
static int nr_cases;

static int knob_orig = -1;
static pid_t main_pid;
static int sysctl_max_stack;
static uint64_t rw_vals[RW_SLOTS][3];

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct hcase *cur;

static volatile uint64_t watchdog_deadline_ms;
static const char *volatile watchdog_name;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static uint64_t now_ms(void)
{
	return now_ns() / 1000000;
}

static pid_t gettid_(void)
{
	return syscall(SYS_gettid);
}

/* Knob handling: the original value is restored at exit. */
static int knob_read(void)
{
	char c = 0;
	int fd;

	fd = open(KNOB_PATH, O_RDONLY);
	TEST_ASSERT(fd >= 0, "Failed to open %s", KNOB_PATH);
	TEST_ASSERT(read(fd, &c, 1) == 1, "Failed to read %s", KNOB_PATH);
	close(fd);

	return c == 'Y' || c == 'y' || c == '1';
}

static int __knob_write(int on)
{
	int fd, r;

	fd = open(KNOB_PATH, O_WRONLY);
	if (fd < 0)
		return -1;
	r = write(fd, on ? "Y" : "N", 1);
	close(fd);

	return r == 1 ? 0 : -1;
}

static void knob_write(bool on)
{
	TEST_ASSERT(!__knob_write(on), "Failed to write '%c' to %s",
		    on ? 'Y' : 'N', KNOB_PATH);
	TEST_ASSERT_EQ(knob_read(), on);
}

static void knob_restore(void)
{
	if (knob_orig >= 0)
		__knob_write(knob_orig);
}

static void knob_restore_signal(int sig)
{
	knob_restore();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void kick_handler(int sig)
{
}

/* Bail out if a case hangs: the rest of the run cannot be trusted. */
static void *watchdog_fn(void *arg)
{
	for (;;) {
		uint64_t deadline = watchdog_deadline_ms;

		if (deadline && now_ms() > deadline) {
			printf("# watchdog: case '%s' still running after %d s: HANG\n",
			       watchdog_name, CASE_WATCHDOG_S);
			printf("Bail out! hang in '%s'\n", watchdog_name);
			fflush(stdout);
			knob_restore();
			_exit(KSFT_FAIL);
		}
		sleep(1);
	}
	return NULL;
}

static void watchdog_arm(const char *name)
{
	watchdog_name = name;
	watchdog_deadline_ms = now_ms() + CASE_WATCHDOG_S * 1000ull;
}

static void watchdog_disarm(void)
{
	watchdog_deadline_ms = 0;
}

/* ---------------------------------------------------------------------- */
/* Cases and their expectations                                           */
/* ---------------------------------------------------------------------- */

static struct hcase *new_case(const char *name, uint64_t rbp, enum exp_kind kind)
{
	struct hcase *c = calloc(1, sizeof(*c));

	TEST_ASSERT(c, "Out of memory");
	TEST_ASSERT(nr_cases < MAX_CASES, "Too many cases");
	c->name = name;
	c->rbp = rbp;
	c->kind = kind;
	c->marker = PERF_CONTEXT_GUEST_KERNEL;
	cases[nr_cases++] = c;
	return c;
}

/* A case whose chain is [marker, ip, the @nr return addresses that follow]. */
static struct hcase *new_exact(const char *name, uint64_t rbp, int nr, ...)
{
	struct hcase *c = new_case(name, rbp, EXP_EXACT);
	va_list ap;
	int i;

	va_start(ap, nr);
	for (i = 0; i < nr; i++)
		c->rets[i] = va_arg(ap, uint64_t);
	va_end(ap);
	c->nr_exp = 1 + nr;
	return c;
}

static bool is_guest_marker(uint64_t e)
{
	return e == PERF_CONTEXT_GUEST || e == PERF_CONTEXT_GUEST_KERNEL ||
	       e == PERF_CONTEXT_GUEST_USER;
}

static bool is_marker(uint64_t e)
{
	return e >= (uint64_t)PERF_CONTEXT_MAX;
}

static int format_chain(char *buf, size_t size, const uint64_t *chain, uint64_t nr)
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

static void violation(struct hcase *c, const char *what, uint64_t ip,
		      const uint64_t *chain, uint64_t nr)
{
	struct stats *st = &c->st;
	int len;

	if (!st->violations++) {
		len = snprintf(st->why, sizeof(st->why), "%s: ip=0x%lx ", what, ip);
		format_chain(st->why + len, sizeof(st->why) - len, chain, nr);
	}
}

static bool in_spin(struct hcase *c, uint64_t ip)
{
	return ip >= c->ip_start && ip < c->ip_end;
}

/* The chain of a sample in the spin loop, @e entries after the marker. */
static bool chain_ok(struct hcase *c, const uint64_t *rets, int e)
{
	int k, j;

	switch (c->kind) {
	case EXP_EXACT:
	case EXP_TOGGLE:
		return e == c->nr_exp && !memcmp(rets, c->rets, (e - 1) * sizeof(*rets));
	case EXP_PREFIX:
		return e >= c->min_exp && e <= c->nr_exp &&
		       !memcmp(rets, c->rets, (e - 1) * sizeof(*rets));
	case EXP_REWRITE:
		/* Only next[i] = f(i + 1) goes on, so ret k is from slot k. */
		if (e > 1 + RW_SLOTS)
			return false;
		for (k = 0; k < e - 1; k++) {
			for (j = 0; j < 3; j++) {
				if (rets[k] == rw_vals[k][j])
					break;
			}
			if (j == 3)
				return false;
		}
		return true;
	}
	return false;
}

static void check_sample(struct hcase *c, uint16_t cpumode, uint64_t ip,
			 uint32_t pid, uint32_t tid, const uint64_t *chain, uint64_t nr)
{
	struct stats *st = &c->st;
	uint16_t want_mode = c->marker == PERF_CONTEXT_GUEST_USER ?
			     PERF_RECORD_MISC_GUEST_USER : PERF_RECORD_MISC_GUEST_KERNEL;
	bool has_guest_marker = false, spin;
	uint64_t bin, i;
	int e;

	st->samples++;
	if (pid != main_pid || tid != c->tid)
		violation(c, "sample of another thread", ip, chain, nr);

	for (i = 0; i < nr; i++)
		has_guest_marker |= is_guest_marker(chain[i]);

	if (cpumode != PERF_RECORD_MISC_GUEST_KERNEL &&
	    cpumode != PERF_RECORD_MISC_GUEST_USER) {
		st->host++;
		if (has_guest_marker)
			violation(c, "host sample with a guest marker", ip, chain, nr);
		return;
	}

	st->guest++;
	bin = (now_ms() - c->start_ms) / BIN_MS;
	st->bins[min_t(uint64_t, bin, NR_BINS - 1)]++;
	spin = in_spin(c, ip);
	st->in_spin += spin;

	if (cpumode != want_mode) {
		violation(c, "unexpected guest cpumode", ip, chain, nr);
		return;
	}

	if (!nr) {
		/* With the knob off, a guest sample carries no context at all. */
		st->nochain++;
		if (c->kind != EXP_TOGGLE)
			violation(c, "guest sample without a guest chain, knob on", ip,
				  chain, nr);
		else if (spin)
			st->good++;
		return;
	}
	if (chain[0] != c->marker) {
		violation(c, "guest sample without the guest marker first", ip, chain, nr);
		return;
	}
	for (i = 1; i < nr; i++) {
		if (is_marker(chain[i])) {
			violation(c, "second context marker", ip, chain, nr);
			return;
		}
	}
	e = nr - 1;
	st->chained++;
	st->longest = max(st->longest, e);
	if (e < 1 || chain[1] != ip) {
		violation(c, "guest marker not followed by the sample IP", ip, chain, nr);
		return;
	}
	if (e > c->limit) {
		violation(c, "more entries than sample_max_stack", ip, chain, nr);
		return;
	}
	if (!spin)
		return;

	st->hist[min(e, HIST_MAX + 1)]++;
	if (st->seq_n < ARRAY_SIZE(st->seq_e)) {
		st->seq_e[st->seq_n] = min(e, 255);
		st->seq_ms[st->seq_n++] = min_t(uint64_t, now_ms() - c->start_ms, 65535);
	}
	if (!chain_ok(c, &chain[2], e)) {
		violation(c, "chain breaks the unwinder's rules", ip, chain, nr);
		return;
	}
	st->good++;
}

/* ---------------------------------------------------------------------- */
/* perf sampling of one thread                                            */
/* ---------------------------------------------------------------------- */

struct sampler {
	int fd;
	void *base;
	size_t len;
	struct perf_event_mmap_page *meta;
	uint8_t *data;
	uint64_t size;
	pthread_t drainer;
	volatile bool stop;
};

static void ring_copy(struct sampler *s, uint64_t pos, void *dst, size_t len)
{
	uint64_t off = pos & (s->size - 1);
	size_t first = min_t(uint64_t, len, s->size - off);

	memcpy(dst, s->data + off, first);
	memcpy((uint8_t *)dst + first, s->data, len - first);
}

static void sampler_drain(struct sampler *s)
{
	static uint64_t buf[65536 / sizeof(uint64_t)];
	struct perf_event_header *hdr = (void *)buf;
	const uint64_t *body = (const uint64_t *)(hdr + 1);
	uint64_t head, tail;

	pthread_mutex_lock(&lock);

	/* Pairs with the kernel's smp_wmb() before it updates data_head. */
	head = ring_buffer_read_head(s->meta);
	tail = READ_ONCE(s->meta->data_tail);

	while (head - tail >= sizeof(*hdr)) {
		ring_copy(s, tail, hdr, sizeof(*hdr));
		TEST_ASSERT(hdr->size >= sizeof(*hdr) && hdr->size <= head - tail,
			    "Bad perf record size %u at 0x%lx (head 0x%lx)",
			    hdr->size, tail, head);
		ring_copy(s, tail, buf, hdr->size);

		switch (hdr->type) {
		case PERF_RECORD_SAMPLE:
			/* ip, pid/tid, nr, ips[nr] */
			TEST_ASSERT(hdr->size >= sizeof(*hdr) + 3 * sizeof(uint64_t) &&
				    hdr->size >= sizeof(*hdr) + (3 + body[2]) * sizeof(uint64_t),
				    "Truncated sample record, size %u", hdr->size);
			if (cur)
				check_sample(cur, hdr->misc & PERF_RECORD_MISC_CPUMODE_MASK,
					     body[0], (uint32_t)body[1], body[1] >> 32,
					     &body[3], body[2]);
			break;
		case PERF_RECORD_LOST:
			if (cur)
				cur->st.lost += body[1];
			break;
		case PERF_RECORD_THROTTLE:
			if (cur)
				cur->st.throttled++;
			break;
		}
		tail += hdr->size;
	}

	/* Pairs with the kernel's check of data_tail before writing. */
	ring_buffer_write_tail(s->meta, tail);

	pthread_mutex_unlock(&lock);
}

static void *drainer_fn(void *arg)
{
	struct sampler *s = arg;

	while (!s->stop) {
		sampler_drain(s);
		usleep(DRAIN_INTERVAL_US);
	}
	return NULL;
}

/* Sample thread @tid into @c, from now on. */
static void sampler_open(struct sampler *s, struct hcase *c)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_period = SAMPLE_PERIOD_NS,
		.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_CALLCHAIN,
		.disabled = 1,
		.exclude_host = 1,
		.sample_max_stack = c->max_stack,
	};
	long page_size = getpagesize();

	memset(s, 0, sizeof(*s));
	s->fd = syscall(__NR_perf_event_open, &attr, c->tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	TEST_ASSERT(s->fd >= 0, "perf_event_open() on tid %d failed", c->tid);

	s->len = (1 + RING_DATA_PAGES) * page_size;
	s->base = mmap(NULL, s->len, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
	TEST_ASSERT(s->base != MAP_FAILED, "mmap() of the perf ring failed");
	s->meta = s->base;
	if (s->meta->data_size) {
		s->data = (uint8_t *)s->base + s->meta->data_offset;
		s->size = s->meta->data_size;
	} else {
		s->data = (uint8_t *)s->base + page_size;
		s->size = RING_DATA_PAGES * page_size;
	}

	if (!c->ip_end) {
		c->ip_start = (uint64_t)spin_start;
		c->ip_end = (uint64_t)spin_end;
	}

	pthread_mutex_lock(&lock);
	cur = c;
	c->start_ms = now_ms();
	pthread_mutex_unlock(&lock);

	TEST_ASSERT(!pthread_create(&s->drainer, NULL, drainer_fn, s),
		    "Failed to create the drainer thread");
	TEST_ASSERT(!ioctl(s->fd, PERF_EVENT_IOC_ENABLE, 0), "PERF_EVENT_IOC_ENABLE failed");
}

static void sampler_close(struct sampler *s)
{
	/* The sampled thread may be gone: the event is then in EXIT state. */
	ioctl(s->fd, PERF_EVENT_IOC_DISABLE, 0);
	s->stop = true;
	pthread_join(s->drainer, NULL);
	sampler_drain(s);

	pthread_mutex_lock(&lock);
	if (!cur->run_ms)
		cur->run_ms = now_ms() - cur->start_ms;
	cur = NULL;
	pthread_mutex_unlock(&lock);

	munmap(s->base, s->len);
	close(s->fd);
}

/* ---------------------------------------------------------------------- */
/* Host responsiveness: clock_nanosleep(1 ms) oversleep                   */
/* ---------------------------------------------------------------------- */

struct lat {
	pthread_t thread;
	volatile bool stop;
	int n;
	int us[LAT_MAX];
};

static void *lat_fn(void *arg)
{
	const struct timespec req = { .tv_nsec = LAT_SLEEP_NS };
	struct lat *l = arg;
	int64_t over;
	uint64_t t0;

	while (!l->stop) {
		t0 = now_ns();
		clock_nanosleep(CLOCK_MONOTONIC, 0, &req, NULL);
		over = (int64_t)(now_ns() - t0) - LAT_SLEEP_NS;
		if (l->n < LAT_MAX)
			l->us[l->n++] = over > 0 ? over / 1000 : 0;
	}
	return NULL;
}

static void lat_start(struct lat *l)
{
	memset(l, 0, sizeof(*l));
	TEST_ASSERT(!pthread_create(&l->thread, NULL, lat_fn, l),
		    "Failed to create the latency thread");
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

static void lat_stop(struct lat *l, struct hcase *c)
{
	l->stop = true;
	pthread_join(l->thread, NULL);
	c->lat_n = l->n;
	if (!l->n)
		return;
	qsort(l->us, l->n, sizeof(l->us[0]), cmp_int);
	c->lat_max_us = l->us[l->n - 1];
	c->lat_p99_us = l->us[min(l->n - 1, (l->n * 99) / 100)];
}

/* ---------------------------------------------------------------------- */
/* vCPU threads                                                           */
/* ---------------------------------------------------------------------- */

enum run_mode {
	RUN_SYNC,	/* run until the guest's GUEST_SYNC, then exit */
	RUN_HOLD,	/* same, then wait for 'release', spin 50 ms, exit */
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

static void *runner_fn(void *arg)
{
	struct runner *r = arg;
	struct ucall uc;
	uint64_t t0;
	int ret;

	r->tid = gettid_();
	sem_post(&r->ready);
	sem_wait(&r->go);

	if (r->mode == RUN_RAW) {
		/*
		 * The library's vCPU (fd, kvm_run mapping) may be freed while we
		 * are in KVM_RUN: only use our own fd and mapping.  Closing the
		 * fd drops the last reference to the vCPU, and the VM.
		 */
		do {
			ret = ioctl(r->fd, KVM_RUN, NULL);
		} while (ret == -1 && errno == EINTR && !r->kicked);
		snprintf(r->err, sizeof(r->err), "KVM_RUN returned %d (%s), exit reason %s",
			 ret, ret ? strerror(errno) : "ok", exit_reason_str(r->run->exit_reason));
		r->ok = !r->kicked;
		munmap(r->run, getpagesize());
		close(r->fd);
		goto out;
	}

	if (r->mode == RUN_KICK) {
		while (!r->kicked) {
			ret = __vcpu_run(r->vcpu);
			if (ret == -1 && errno == EINTR)
				continue;
			snprintf(r->err, sizeof(r->err), "KVM_RUN: %s, exit reason %s",
				 ret ? strerror(errno) : "ok",
				 exit_reason_str(r->vcpu->run->exit_reason));
			goto out;
		}
		r->ok = true;
		goto out;
	}

	for (;;) {
		ret = __vcpu_run(r->vcpu);
		if (ret == -1 && errno == EINTR && !r->kicked)
			continue;
		if (ret) {
			snprintf(r->err, sizeof(r->err), "KVM_RUN failed: %s", strerror(errno));
			break;
		}
		if (r->vcpu->run->exit_reason != KVM_EXIT_IO) {
			snprintf(r->err, sizeof(r->err), "unexpected exit reason %s",
				 exit_reason_str(r->vcpu->run->exit_reason));
			break;
		}
		switch (get_ucall(r->vcpu, &uc)) {
		case UCALL_SYNC:
			r->ok = true;
			break;
		case UCALL_ABORT:
			snprintf(r->err, sizeof(r->err), "guest assertion: %.200s", uc.buffer);
			break;
		default:
			snprintf(r->err, sizeof(r->err), "unexpected ucall %lu", uc.cmd);
		}
		break;
	}

	if (r->mode == RUN_HOLD) {
		sem_post(&r->left);
		sem_wait(&r->release);
		/* Host work, still sampled, after the VM is gone. */
		t0 = now_ms();
		while (now_ms() - t0 < 50)
			;
	}
out:
	r->done = true;
	return NULL;
}

static void runner_start(struct runner *r, struct kvm_vcpu *vcpu, enum run_mode mode)
{
	memset(r, 0, sizeof(*r));
	r->vcpu = vcpu;
	r->mode = mode;
	if (mode == RUN_RAW) {
		r->fd = dup(vcpu->fd);
		TEST_ASSERT(r->fd >= 0, "dup() of the vCPU fd failed");
		r->run = mmap(NULL, getpagesize(), PROT_READ, MAP_SHARED, r->fd, 0);
		TEST_ASSERT(r->run != MAP_FAILED, "mmap() of kvm_run failed");
	}
	sem_init(&r->ready, 0, 0);
	sem_init(&r->go, 0, 0);
	sem_init(&r->left, 0, 0);
	sem_init(&r->release, 0, 0);
	TEST_ASSERT(!pthread_create(&r->thread, NULL, runner_fn, r),
		    "Failed to create a vCPU thread");
	sem_wait(&r->ready);
}

static void deadline_in(struct timespec *ts, int seconds)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += seconds;
}

/*
 * Wait for the vCPU thread.  If it is not back from KVM_RUN within @seconds,
 * kick it with a signal: that is a hang.  Returns false on a hang.
 */
static bool runner_join_t(struct runner *r, int seconds)
{
	struct timespec ts;
	int i;

	deadline_in(&ts, seconds);
	if (!pthread_timedjoin_np(r->thread, NULL, &ts))
		return true;

	r->kicked = true;
	for (i = 0; i < 50; i++) {
		pthread_kill(r->thread, SIGUSR1);
		deadline_in(&ts, 1);
		if (!pthread_timedjoin_np(r->thread, NULL, &ts))
			return false;
	}
	printf("Bail out! vCPU thread %d stuck in KVM_RUN even after signals\n", r->tid);
	fflush(stdout);
	knob_restore();
	_exit(KSFT_FAIL);
}

static bool runner_join(struct runner *r)
{
	return runner_join_t(r, JOIN_TIMEOUT_S);
}

/* Stop a RUN_KICK vCPU thread: signal it until it is out of KVM_RUN. */
static bool runner_kick(struct runner *r)
{
	struct timespec ts;
	int i;

	r->kicked = true;
	for (i = 0; i < JOIN_TIMEOUT_S * 10; i++) {
		pthread_kill(r->thread, SIGUSR1);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		if (!pthread_timedjoin_np(r->thread, NULL, &ts))
			return true;
	}
	return runner_join_t(r, 1);
}

/* ---------------------------------------------------------------------- */
/* Guest memory helpers                                                   */
/* ---------------------------------------------------------------------- */

static struct kvm_vm *create_vm(struct kvm_vcpu **vcpu)
{
	struct kvm_vm *vm = __vm_create_with_one_vcpu(vcpu, EXTRA_PAGES, guest_code);

	spin_rbp = 0;
	sync_global_to_guest(vm, spin_rbp);
	return vm;
}

static volatile uint64_t *stop_flag(struct kvm_vm *vm)
{
	return addr_gva2hva(vm, (vm_vaddr_t)&guest_stop);
}

/* Back @gva with the zeroed page at @gpa. */
static void map_gpa(struct kvm_vm *vm, uint64_t gva, vm_paddr_t gpa)
{
	virt_pg_map(vm, gva, gpa);
	sparsebit_set(vm->vpages_mapped, gva >> vm->page_shift);
}

/* Back @gva with a fresh zeroed page of memslot 0; return its GPA. */
static vm_paddr_t map_page(struct kvm_vm *vm, uint64_t gva)
{
	vm_paddr_t gpa = vm_phy_page_alloc(vm, KVM_GUEST_PAGE_TABLE_MIN_PADDR, 0);

	memset(addr_gpa2hva(vm, gpa), 0, PAGE_SIZE);
	map_gpa(vm, gva, gpa);
	return gpa;
}

static uint64_t *pte_of(struct kvm_vm *vm, uint64_t gva, int level)
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
static void put_u64(struct kvm_vm *vm, uint64_t gva, uint64_t val)
{
	uint64_t pte = *pte_of(vm, gva, PG_LEVEL_4K);

	TEST_ASSERT(pte & PTE_PRESENT_MASK, "gva 0x%lx not mapped", gva);
	memcpy((uint8_t *)addr_gpa2hva(vm, PTE_GET_PA(pte)) + (gva & (PAGE_SIZE - 1)),
	       &val, sizeof(val));
}

/* The frame record {@next, @ret} at @gva. */
static void put_rec(struct kvm_vm *vm, uint64_t gva, uint64_t next, uint64_t ret)
{
	put_u64(vm, gva, next);
	put_u64(vm, gva + 8, ret);
}

static void put_rec_gpa(struct kvm_vm *vm, vm_paddr_t gpa, uint64_t next, uint64_t ret)
{
	uint64_t *p = addr_gpa2hva(vm, gpa);

	p[0] = next;
	p[1] = ret;
}

/* Set the U/S bit in every present entry of the guest page tables. */
static void pgtable_make_user(struct kvm_vm *vm, vm_paddr_t table, int level)
{
	uint64_t *pte = addr_gpa2hva(vm, table);
	int i;

	for (i = 0; i < PAGE_SIZE / sizeof(*pte); i++) {
		if (!(pte[i] & PTE_PRESENT_MASK))
			continue;
		pte[i] |= PTE_USER_MASK;
		if (level > PG_LEVEL_4K && !(pte[i] & PTE_LARGE_MASK))
			pgtable_make_user(vm, PTE_GET_PA(pte[i]), level - 1);
	}
}

/*
 * Start the vCPU at CPL3: user segments, user-accessible page tables, and
 * IOPL=3 so that the guest can do ucalls (port I/O) without leaving CPL3.
 */
static void vcpu_set_user_mode(struct kvm_vm *vm, struct kvm_vcpu *vcpu)
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

	pgtable_make_user(vm, vm->pgd, PG_LEVEL_512G);

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

/* ---------------------------------------------------------------------- */
/* Running a case                                                         */
/* ---------------------------------------------------------------------- */

/* A host thread that stresses something while the case runs. */
struct stress {
	void *(*fn)(void *arg);
	pthread_t thread;
	volatile bool stop;
	struct kvm_vm *vm;
	uint64_t iterations;
	uint64_t max_op_us;
};

static void print_expected(struct hcase *c)
{
	uint64_t chain[2 + MAX_EXP];
	char buf[512];

	if (c->kind == EXP_REWRITE) {
		ksft_print_msg("  expected: at most %d entries, ret k one of slot k's values\n",
			       1 + RW_SLOTS);
		return;
	}
	chain[0] = c->marker;
	chain[1] = c->ip_start;
	memcpy(&chain[2], c->rets, (c->nr_exp - 1) * sizeof(uint64_t));
	format_chain(buf, sizeof(buf), chain, 1 + c->nr_exp);
	ksft_print_msg("  expected: %s%s (ip in [0x%lx, 0x%lx))%s\n",
		       c->kind == EXP_PREFIX ? "a prefix of " : "", buf,
		       c->ip_start, c->ip_end,
		       c->kind == EXP_TOGGLE ? ", or nr=0 with the knob off" : "");
}

/* Print the case's figures and its TAP line. */
static void report(struct hcase *c, const char *err)
{
	struct stats *st = &c->st;
	char hist[512];
	int i, len = 0;

	if (c->skip) {
		ksft_print_msg("%s: skipped: %s\n", c->name, c->skip);
		ksft_test_result_skip("%s\n", c->name);
		return;
	}

	for (i = 1; i <= HIST_MAX + 1; i++) {
		if (st->hist[i])
			len += snprintf(hist + len, sizeof(hist) - len, " %s%d:%lu",
					i > HIST_MAX ? ">" : "", min(i, HIST_MAX), st->hist[i]);
	}
	if (!len)
		snprintf(hist, sizeof(hist), " none");

	ksft_print_msg("%s:\n", c->name);
	ksft_print_msg("  samples %lu (guest %lu, host %lu), with guest chain %lu, without %lu, in spin loop %lu (by the rules %lu), longest %d\n",
		       st->samples, st->guest, st->host, st->chained, st->nochain,
		       st->in_spin, st->good, st->longest);
	ksft_print_msg("  %lu ms sampled before the stop, %lu lost, %lu throttled; chain lengths in the spin loop:%s\n",
		       c->run_ms, st->lost, st->throttled, hist);
	ksft_print_msg("  host clock_nanosleep(1 ms) oversleep: max %d us, p99 %d us (%d sleeps)\n",
		       c->lat_max_us, c->lat_p99_us, c->lat_n);
	if (c->note[0])
		ksft_print_msg("  %s\n", c->note);
	print_expected(c);

	c->pass = true;
	if (err) {
		ksft_print_msg("  FAIL: %s\n", err);
		c->pass = false;
	}
	if (st->violations) {
		ksft_print_msg("  FAIL: %lu bad sample(s), first: %s\n", st->violations, st->why);
		c->pass = false;
		len = 0;
		for (i = 0; i < st->seq_n && len < sizeof(hist); i++)
			len += snprintf(hist + len, sizeof(hist) - len, " %u:%u",
					st->seq_ms[i], st->seq_e[i]);
		ksft_print_msg("  first chains in the spin loop (ms:length):%s\n", hist);
	}
	if (!st->in_spin) {
		ksft_print_msg("  FAIL: no sample in the spin loop\n");
		c->pass = false;
	}
	ksft_test_result(c->pass, "%s\n", c->name);
}

/*
 * From the first guest sample on (a VM's first entries can take long), every
 * full bin of the run must have guest samples.
 */
static const char *check_progress(struct hcase *c)
{
	static char buf[128];
	uint64_t i, first, full = c->run_ms / BIN_MS;

	for (first = 0; first < NR_BINS && !c->st.bins[first]; first++)
		;
	for (i = first + 1; i < full && i < NR_BINS; i++) {
		if (!c->st.bins[i]) {
			snprintf(buf, sizeof(buf), "no guest sample in %lu-%lu ms",
				 i * BIN_MS, (i + 1) * BIN_MS);
			return buf;
		}
	}
	return NULL;
}

static bool run_goal(struct hcase *c, uint64_t elapsed)
{
	bool done;

	pthread_mutex_lock(&lock);
	done = elapsed >= RUN_MAX_MS ||
	       (elapsed >= RUN_MS && c->st.in_spin >= MIN_IN_SPIN);
	pthread_mutex_unlock(&lock);
	return done;
}

/*
 * Run @nr vCPUs of @vm (vcpus[0] is sampled) with RBP = c->rbp, for RUN_MS
 * or until the goal is met, with the optional stressor, then stop the guest
 * and check that everything comes back.
 */
static const char *run_case(struct hcase *c, struct kvm_vm *vm, struct kvm_vcpu **vcpus,
			    int nr, struct stress *stress)
{
	static char err[512];
	volatile uint64_t *stop = stop_flag(vm);
	struct runner r[2];
	struct sampler s;
	struct lat *l = malloc(sizeof(*l));
	bool hung[2] = {};
	uint64_t t0;
	int i;

	TEST_ASSERT(l && nr <= 2, "At most 2 vCPUs per case");
	err[0] = 0;
	watchdog_arm(c->name);
	c->limit = c->max_stack ? c->max_stack : sysctl_max_stack;

	spin_rbp = c->rbp;
	sync_global_to_guest(vm, spin_rbp);
	*stop = 0;

	for (i = 0; i < nr; i++)
		runner_start(&r[i], vcpus[i], c->kick ? RUN_KICK : RUN_SYNC);
	c->tid = r[0].tid;

	lat_start(l);
	sampler_open(&s, c);
	if (stress) {
		stress->stop = false;
		stress->vm = vm;
		TEST_ASSERT(!pthread_create(&stress->thread, NULL, stress->fn, stress),
			    "Failed to create the stress thread");
	}
	for (i = 0; i < nr; i++)
		sem_post(&r[i].go);

	t0 = now_ms();
	while (!run_goal(c, now_ms() - t0) && !r[0].done)
		usleep(20000);
	/* What follows is the stop: progress is judged up to here. */
	c->run_ms = now_ms() - c->start_ms;

	if (stress) {
		stress->stop = true;
		pthread_join(stress->thread, NULL);
	}
	*stop = 1;
	for (i = 0; i < nr; i++)
		hung[i] = c->kick ? !runner_kick(&r[i]) : !runner_join(&r[i]);

	sampler_close(&s);
	lat_stop(l, c);
	free(l);
	watchdog_disarm();

	for (i = 0; i < nr; i++) {
		if (hung[i])
			snprintf(err, sizeof(err),
				 "HANG: vCPU %d not back from KVM_RUN %d s after the stop",
				 i, JOIN_TIMEOUT_S);
		else if (!r[i].ok)
			snprintf(err, sizeof(err), "vCPU %d: %s", i, r[i].err);
	}
	return err[0] ? err : NULL;
}

/* ---------------------------------------------------------------------- */
/* Case 1: crafted frame chains                                           */
/* ---------------------------------------------------------------------- */

#define C1_BASE			0x10000000000ull
#define REGION(k)		(C1_BASE + (uint64_t)(k) * SZ_4M)
/* The last 4K page of REGION(k)'s first 2M, and the 2M after it (no PDE). */
#define TAIL_PAGE(k)		(REGION(k) + SZ_2M - PAGE_SIZE)
#define NEXT_2M(k)		(REGION(k) + SZ_2M)

static void test_frame_chains(void)
{
	struct kvm_vcpu *vcpu;
	struct kvm_vm *vm;
	struct hcase *list[32];
	uint64_t a, b, p;
	int n = 0, i;

	vm = create_vm(&vcpu);

	/* Pages around the canonical boundaries, shared by several cases. */
	map_page(vm, LOW_TOP_PAGE);
	map_page(vm, HIGH_BASE_PAGE);
	map_page(vm, TOP_PAGE);
	map_page(vm, 0);

	/* A control: a valid chain in the lower half. */
	map_page(vm, TAIL_PAGE(0));
	a = TAIL_PAGE(0) + 0x800;
	put_rec(vm, a, a + 0x100, R1);
	put_rec(vm, a + 0x100, a + 0x200, R2);
	put_rec(vm, a + 0x200, 0, R3);
	list[n++] = new_exact("1 frames: valid 3-frame chain (control)", a, 3, R1, R2, R3);

	/* A = {B, R1}, B = {A, R2}: R2 recorded, then A <= B stops. */
	map_page(vm, TAIL_PAGE(1));
	a = TAIL_PAGE(1) + 0x800;
	b = a + 0x100;
	put_rec(vm, a, b, R1);
	put_rec(vm, b, a, R2);
	list[n++] = new_exact("1 frames: cycle A->B->A", a, 2, R1, R2);

	/* A = {A, R1}: next == fp stops after R1. */
	map_page(vm, TAIL_PAGE(2));
	a = TAIL_PAGE(2) + 0x800;
	put_rec(vm, a, a, R1);
	list[n++] = new_exact("1 frames: self-referencing frame", a, 1, R1);

	/* A = {A - 0x100, R1}: descending stops after R1, the decoy is not read. */
	map_page(vm, TAIL_PAGE(3));
	a = TAIL_PAGE(3) + 0x800;
	put_rec(vm, a, a - 0x100, R1);
	put_rec(vm, a - 0x100, a + 0x200, R9);
	list[n++] = new_exact("1 frames: descending next", a, 1, R1);

	/* A = {B + 4, R1}: misaligned next stops after R1. */
	map_page(vm, TAIL_PAGE(4));
	a = TAIL_PAGE(4) + 0x800;
	b = a + 0x100;
	put_rec(vm, a, b + 4, R1);
	put_rec(vm, b + 4, 0, R9);
	list[n++] = new_exact("1 frames: misaligned next", a, 1, R1);

	/* RBP = A + 4: nothing is read. */
	map_page(vm, TAIL_PAGE(5));
	a = TAIL_PAGE(5) + 0x800;
	put_rec(vm, a + 4, a + 0x100, R9);
	put_rec(vm, a + 0x100, 0, R9);
	list[n++] = new_exact("1 frames: misaligned RBP", a + 4, 0);

	/*
	 * RBP = 0x800000000800, non-canonical.  The walker indexes the PML4
	 * with bits 47:39, so it would reach HIGH_BASE_PAGE's decoy.
	 */
	put_rec(vm, HIGH_BASE_PAGE + 0x800, 0, R9);
	list[n++] = new_exact("1 frames: non-canonical RBP", NONCANONICAL + 0x800, 0);

	/* 0x7ffffffff800 = {0x800000000800, R1}: non-canonical next, 2 KiB above. */
	a = LOW_TOP_PAGE + 0x800;
	put_rec(vm, a, NONCANONICAL + 0x800, R1);
	list[n++] = new_exact("1 frames: non-canonical next 2 KiB above", a, 1, R1);

	/*
	 * 0x7fffffffffe8 = {0x7ffffffffff8, R1}: the next record starts
	 * canonical but ends at 0x800000000007.  Read anyway, its second half
	 * would come from HIGH_BASE_PAGE + 0, the decoy R9.
	 */
	a = LOW_TOP_PAGE + 0xfe8;
	put_rec(vm, a, LOW_TOP_PAGE + 0xff8, R1);
	put_u64(vm, LOW_TOP_PAGE + 0xff8, LOW_TOP_PAGE + 0xff8 + 0x100);
	put_rec(vm, HIGH_BASE_PAGE, R9, R9);
	list[n++] = new_exact("1 frames: record straddling the canonical hole", a, 1, R1);

	/* A = {unmapped page, PT present, R1}. */
	p = REGION(6);
	map_page(vm, p);
	a = p + 0x800;
	put_rec(vm, a, p + PAGE_SIZE + 0x800, R1);
	list[n++] = new_exact("1 frames: next in an unmapped page (PTE)", a, 1, R1);

	/* A = {unmapped 2M region, no PDE, R1}. */
	map_page(vm, TAIL_PAGE(7));
	a = TAIL_PAGE(7) + 0x800;
	put_rec(vm, a, NEXT_2M(7) + 0x800, R1);
	list[n++] = new_exact("1 frames: next in an unmapped 2M region (PDE)", a, 1, R1);

	/* A = {GVA mapped to a GPA in no memslot, R1}. */
	map_page(vm, TAIL_PAGE(8));
	map_gpa(vm, NEXT_2M(8), MMIO_GPA);
	a = TAIL_PAGE(8) + 0x800;
	put_rec(vm, a, NEXT_2M(8) + 0x800, R1);
	list[n++] = new_exact("1 frames: next in MMIO (GPA 0xc0000000, no memslot)", a, 1, R1);

	/* A = {GVA mapped to the local APIC's GPA, R1}. */
	map_page(vm, TAIL_PAGE(9));
	map_gpa(vm, NEXT_2M(9), LAPIC_GPA);
	a = TAIL_PAGE(9) + 0x800;
	put_rec(vm, a, NEXT_2M(9) + 0x800, R1);
	list[n++] = new_exact("1 frames: next in the LAPIC page (GPA 0xfee00000)", a, 1, R1);

	/* Lower half to upper half: gap and half both stop it after R1. */
	map_page(vm, TAIL_PAGE(10));
	a = TAIL_PAGE(10) + 0x800;
	put_rec(vm, a, HIGH_BASE_PAGE + 0x900, R1);
	put_rec(vm, HIGH_BASE_PAGE + 0x900, 0, R9);
	list[n++] = new_exact("1 frames: lower half -> upper half", a, 1, R1);

	/*
	 * RBP = 0xffffffffffffffe8 = {0xfffffffffffffff8, R1}: the next record
	 * wraps around to GVA 0, i.e. to the lower half; read anyway, its
	 * return address would be GVA 0's decoy R9.
	 */
	a = TOP_PAGE + 0xfe8;
	put_rec(vm, a, TOP_PAGE + 0xff8, R1);
	put_u64(vm, TOP_PAGE + 0xff8, 0);
	put_rec(vm, 0, R9, R9);
	list[n++] = new_exact("1 frames: record wrapping around the top to GVA 0", a, 1, R1);

	/* A valid chain in the upper half (kernel mode: same half as RBP). */
	a = TOP_PAGE + 0x800;
	put_rec(vm, a, a + 0x100, R1);
	put_rec(vm, a + 0x100, a + 0x200, R2);
	put_rec(vm, a + 0x200, 0, R3);
	list[n++] = new_exact("1 frames: valid chain in the upper half", a, 3, R1, R2, R3);

	/* A = {B, 0}: nothing after the IP. */
	map_page(vm, TAIL_PAGE(11));
	a = TAIL_PAGE(11) + 0x800;
	put_rec(vm, a, a + 0x100, 0);
	put_rec(vm, a + 0x100, 0, R9);
	list[n++] = new_exact("1 frames: zero return address in the first frame", a, 0);

	/* A = {B, R1}, B = {C, 0}: R1 only. */
	map_page(vm, TAIL_PAGE(12));
	a = TAIL_PAGE(12) + 0x800;
	put_rec(vm, a, a + 0x100, R1);
	put_rec(vm, a + 0x100, a + 0x200, 0);
	put_rec(vm, a + 0x200, 0, R9);
	list[n++] = new_exact("1 frames: zero return address in the second frame", a, 1, R1);

	/* A = {A + 1 MiB, R1}, A + 1 MiB = {0, R2}: the limit is inclusive. */
	map_page(vm, TAIL_PAGE(13));
	a = TAIL_PAGE(13) + 0x800;
	map_page(vm, (a + FRAME_MAX_GAP) & ~(uint64_t)(PAGE_SIZE - 1));
	put_rec(vm, a, a + FRAME_MAX_GAP, R1);
	put_rec(vm, a + FRAME_MAX_GAP, 0, R2);
	list[n++] = new_exact("1 frames: next exactly 1 MiB above", a, 2, R1, R2);

	/* A = {A + 1 MiB + 8, R1}: too far, R1 only. */
	map_page(vm, TAIL_PAGE(14));
	a = TAIL_PAGE(14) + 0x800;
	map_page(vm, (a + FRAME_MAX_GAP + 8) & ~(uint64_t)(PAGE_SIZE - 1));
	put_rec(vm, a, a + FRAME_MAX_GAP + 8, R1);
	put_rec(vm, a + FRAME_MAX_GAP + 8, 0, R9);
	list[n++] = new_exact("1 frames: next 1 MiB + 8 above", a, 1, R1);

	for (i = 0; i < n; i++)
		report(list[i], run_case(list[i], vm, &vcpu, 1, NULL));
	kvm_vm_free(vm);

	/* The same at CPL3: user frames must stay in the lower half. */
	vm = create_vm(&vcpu);
	n = 0;
	map_page(vm, HIGH_BASE_PAGE);

	map_page(vm, TAIL_PAGE(0));
	a = TAIL_PAGE(0) + 0x800;
	put_rec(vm, a, a + 0x100, R1);
	put_rec(vm, a + 0x100, 0, R2);
	list[n] = new_exact("1 frames: user mode, valid chain (control)", a, 2, R1, R2);
	list[n++]->marker = PERF_CONTEXT_GUEST_USER;

	map_page(vm, TAIL_PAGE(1));
	a = TAIL_PAGE(1) + 0x800;
	put_rec(vm, a, HIGH_BASE_PAGE + 0x900, R1);
	put_rec(vm, HIGH_BASE_PAGE + 0x900, 0, R9);
	list[n] = new_exact("1 frames: user mode, lower half -> upper half", a, 1, R1);
	list[n++]->marker = PERF_CONTEXT_GUEST_USER;

	put_rec(vm, HIGH_BASE_PAGE + 0x800, HIGH_BASE_PAGE + 0x900, R9);
	list[n] = new_exact("1 frames: user mode, RBP in the upper half",
			    HIGH_BASE_PAGE + 0x800, 0);
	list[n++]->marker = PERF_CONTEXT_GUEST_USER;

	vcpu_set_user_mode(vm, vcpu);
	for (i = 0; i < n; i++)
		report(list[i], run_case(list[i], vm, &vcpu, 1, NULL));
	kvm_vm_free(vm);
}

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

static uint64_t sign_extend48(uint64_t va)
{
	return (uint64_t)((int64_t)(va << 16) >> 16);
}

/* Records {S + 0x900, R1}, {0, R2} at S + 0x800 in a fresh page at @s. */
static void two_frames(struct kvm_vm *vm, uint64_t s)
{
	map_page(vm, s);
	put_rec(vm, s + 0x800, s + 0x900, R1);
	put_rec(vm, s + 0x900, 0, R2);
}

/* The 8-frame chain of huge_off[] at @gva, backed at @gpa. */
static struct hcase *huge_chain(struct kvm_vm *vm, const char *name, uint64_t gva,
				vm_paddr_t gpa)
{
	struct hcase *c;
	int i;

	for (i = 0; i < 8; i++)
		put_rec_gpa(vm, gpa + huge_off[i], i < 7 ? gva + huge_off[i + 1] : 0, RC(i));
	c = new_exact(name, gva + huge_off[0], 0);
	for (i = 0; i < 8; i++)
		c->rets[i] = RC(i);
	c->nr_exp = 9;
	return c;
}

static void test_page_tables(void)
{
	bool rsvd_ok, gbpages = kvm_cpu_has(X86_FEATURE_GBPAGES);
	uint64_t *pml4, s, a, rec, v;
	struct kvm_vcpu *vcpu;
	struct hcase *list[32];
	vm_paddr_t g;
	struct kvm_vm *vm;
	int n = 0, i;

	vm = create_vm(&vcpu);
	rsvd_ok = vm->pa_bits < 52;

	/* Bit 51 of a 4K PTE is reserved if MAXPHYADDR < 52. */
	s = REGION2(0);
	two_frames(vm, s);
	if (rsvd_ok)
		*pte_of(vm, s, PG_LEVEL_4K) |= RSVD_BIT;
	list[n] = new_exact("2 page tables: reserved bit 51 in the stack's PTE", s + 0x800, 0);
	if (!rsvd_ok)
		list[n]->skip = "guest MAXPHYADDR is 52: no reserved address bit";
	n++;

	/* The same in the PDE above it (non-leaf). */
	s = REGION2(1);
	two_frames(vm, s);
	if (rsvd_ok)
		*pte_of(vm, s, PG_LEVEL_2M) |= RSVD_BIT;
	list[n] = new_exact("2 page tables: reserved bit 51 in the stack's PDE", s + 0x800, 0);
	if (!rsvd_ok)
		list[n]->skip = "guest MAXPHYADDR is 52: no reserved address bit";
	n++;

	s = REGION2(2);
	two_frames(vm, s);
	*pte_of(vm, s, PG_LEVEL_4K) &= ~PTE_PRESENT_MASK;
	list[n++] = new_exact("2 page tables: stack PTE not present", s + 0x800, 0);

	s = REGION2(3);
	two_frames(vm, s);
	*pte_of(vm, s, PG_LEVEL_2M) &= ~PTE_PRESENT_MASK;
	list[n++] = new_exact("2 page tables: stack PDE not present", s + 0x800, 0);

	s = REGION2(4);
	two_frames(vm, s);
	v = *pte_of(vm, s, PG_LEVEL_4K);
	*pte_of(vm, s, PG_LEVEL_4K) = (v & ~PHYSICAL_PAGE_MASK) | MMIO_GPA;
	list[n++] = new_exact("2 page tables: stack PTE -> GPA in no memslot", s + 0x800, 0);

	/* A = P1 + 0xff0 = {P2 + 0x10, R1}, P2 not present: R1 only. */
	s = REGION2(5);
	map_page(vm, s);
	map_page(vm, s + PAGE_SIZE);
	a = s + 0xff0;
	put_rec(vm, a, s + PAGE_SIZE + 0x10, R1);
	put_rec(vm, s + PAGE_SIZE + 0x10, 0, R9);
	*pte_of(vm, s + PAGE_SIZE, PG_LEVEL_4K) &= ~PTE_PRESENT_MASK;
	list[n++] = new_exact("2 page tables: next frame in a not-present page", a, 1, R1);

	/*
	 * A = P1 + 0xff8: its next fp is in P1, its return address in P2,
	 * which is mapped two GPA pages further; the page in between holds
	 * the decoy that a contiguous read would pick up.
	 */
	s = REGION2(6);
	g = vm_phy_pages_alloc(vm, 3, KVM_GUEST_PAGE_TABLE_MIN_PADDR, 0);
	memset(addr_gpa2hva(vm, g), 0, 3 * PAGE_SIZE);
	map_gpa(vm, s, g);
	map_gpa(vm, s + PAGE_SIZE, g + 2 * PAGE_SIZE);
	a = s + 0xff8;
	put_rec(vm, a, s + PAGE_SIZE + 0x100, R1);
	put_rec(vm, s + PAGE_SIZE + 0x100, 0, R2);
	put_rec_gpa(vm, g + PAGE_SIZE, R9, R9);
	list[n++] = new_exact("2 page tables: record straddling two pages", a, 2, R1, R2);

	/* The same with P2 not present: the record cannot be read. */
	s = REGION2(7);
	g = vm_phy_pages_alloc(vm, 3, KVM_GUEST_PAGE_TABLE_MIN_PADDR, 0);
	memset(addr_gpa2hva(vm, g), 0, 3 * PAGE_SIZE);
	map_gpa(vm, s, g);
	map_gpa(vm, s + PAGE_SIZE, g + 2 * PAGE_SIZE);
	a = s + 0xff8;
	put_rec(vm, a, s + PAGE_SIZE + 0x100, R1);
	put_rec(vm, s + PAGE_SIZE + 0x100, 0, R2);
	put_rec_gpa(vm, g + PAGE_SIZE, R9, R9);
	*pte_of(vm, s + PAGE_SIZE, PG_LEVEL_4K) &= ~PTE_PRESENT_MASK;
	list[n++] = new_exact("2 page tables: record straddling into a not-present page", a, 0);

	/* The stack in a 2M page: the whole 8-frame chain. */
	vm_userspace_mem_region_add(vm, VM_MEM_SRC_ANONYMOUS, C2_2M_GPA, C2_2M_SLOT,
				    SZ_2M / PAGE_SIZE, 0);
	memset(addr_gpa2hva(vm, C2_2M_GPA), 0, SZ_2M);
	__virt_pg_map(vm, REGION2(8), C2_2M_GPA, PG_LEVEL_2M);
	list[n++] = huge_chain(vm, "2 page tables: stack in a 2M page", REGION2(8), C2_2M_GPA);

	/* The same 2M page with reserved bit 13 set in its PDE. */
	__virt_pg_map(vm, REGION2(10), C2_2M_GPA, PG_LEVEL_2M);
	*pte_of(vm, REGION2(10), PG_LEVEL_2M) |= BIT_ULL(13);
	list[n++] = new_exact("2 page tables: 2M page with reserved PDE bit 13",
			      REGION2(10) + huge_off[0], 0);

	/* The stack in a 1G page, the chain 0x2a400000 into it. */
	if (gbpages) {
		vm_userspace_mem_region_add(vm, VM_MEM_SRC_ANONYMOUS, C2_1G_GPA + C2_1G_OFF,
					    C2_1G_SLOT, SZ_2M / PAGE_SIZE, 0);
		memset(addr_gpa2hva(vm, C2_1G_GPA + C2_1G_OFF), 0, SZ_2M);
		__virt_pg_map(vm, C2_1G_GVA, C2_1G_GPA, PG_LEVEL_1G);
		list[n++] = huge_chain(vm, "2 page tables: stack in a 1G page",
				       C2_1G_GVA + C2_1G_OFF, C2_1G_GPA + C2_1G_OFF);
	} else {
		list[n] = new_exact("2 page tables: stack in a 1G page", 0, 0);
		list[n++]->skip = "no GBPAGES in KVM's supported CPUID";
	}

	/*
	 * A PML4 entry whose PS bit is set (reserved at that level), mapping
	 * 512G at GPA 0: read anyway, RBP's record would be GPA 0x800's decoy.
	 */
	pml4 = addr_gpa2hva(vm, vm->pgd);
	TEST_ASSERT(!pml4[PML4_HUGE] && !pml4[PML4_RECURSIVE], "PML4 slots in use");
	pml4[PML4_HUGE] = PTE_PRESENT_MASK | PTE_WRITABLE_MASK | PTE_LARGE_MASK;
	/* GPA 0 is below what the library allocates from: claim it. */
	TEST_ASSERT_EQ(vm_phy_page_alloc(vm, 0, 0), 0);
	put_rec_gpa(vm, 0x800, 0, R9);
	list[n++] = new_exact("2 page tables: huge PML4E (PS set)",
			      sign_extend48((uint64_t)PML4_HUGE << 39) + 0x800, 0);

	/*
	 * A recursive PML4: PML4[510] points at the PML4 itself, so a walk of
	 * 510/510/510/510 loops through it at every level and lands on the
	 * PML4 page as data.  Its free slots 100..103 hold the frame records
	 * {next, R1}, {0, R2}: even values, so not-present PML4 entries.
	 */
	pml4[PML4_RECURSIVE] = vm->pgd | PTE_PRESENT_MASK | PTE_WRITABLE_MASK;
	rec = sign_extend48((uint64_t)PML4_RECURSIVE << 39 | (uint64_t)PML4_RECURSIVE << 30 |
			    (uint64_t)PML4_RECURSIVE << 21 | (uint64_t)PML4_RECURSIVE << 12);
	TEST_ASSERT(!pml4[100] && !pml4[101] && !pml4[102] && !pml4[103], "PML4 slots in use");
	pml4[100] = rec + 102 * 8;
	pml4[101] = R1;
	pml4[102] = 0;
	pml4[103] = R2;
	list[n++] = new_exact("2 page tables: recursive PML4 entry (walk loops to the PML4)",
			      rec + 100 * 8, 2, R1, R2);

	for (i = 0; i < n; i++) {
		if (list[i]->skip)
			report(list[i], NULL);
		else
			report(list[i], run_case(list[i], vm, &vcpu, 1, NULL));
	}
	kvm_vm_free(vm);
}

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

static vm_paddr_t new_page(struct kvm_vm *vm)
{
	vm_paddr_t gpa = vm_phy_page_alloc(vm, KVM_GUEST_PAGE_TABLE_MIN_PADDR, 0);

	memset(addr_gpa2hva(vm, gpa), 0, PAGE_SIZE);
	return gpa;
}

/* The 32-bit frame record {@next, @ret} at @gpa. */
static void put_rec32(struct kvm_vm *vm, vm_paddr_t gpa, uint32_t next, uint32_t ret)
{
	uint32_t *p = addr_gpa2hva(vm, gpa);

	p[0] = next;
	p[1] = ret;
}

/* Records {A + 0x100, R1}, {A + 0x200, R2}, {0, R3} at A = @a, GPA @gpa. */
static void three_frames32(struct kvm_vm *vm, vm_paddr_t gpa, uint32_t a)
{
	put_rec32(vm, gpa, a + 0x100, R1);
	put_rec32(vm, gpa + 0x100, a + 0x200, R2);
	put_rec32(vm, gpa + 0x200, 0, R3);
}

/* Map @gva to @gpa with a 4K page in the PAE or 32-bit tables at @root. */
static void map32(struct kvm_vm *vm, vm_paddr_t root, bool pae, uint32_t gva, vm_paddr_t gpa)
{
	uint64_t *pdpt, *pd, *pt, *e;
	uint32_t *pd32, *pt32, *e32;

	if (pae) {
		pdpt = addr_gpa2hva(vm, root);
		e = &pdpt[gva >> 30];
		if (!(*e & PTE_PRESENT_MASK))
			*e = new_page(vm) | PTE_PRESENT_MASK;
		pd = addr_gpa2hva(vm, *e & PHYSICAL_PAGE_MASK);
		e = &pd[(gva >> 21) & 511];
		if (!(*e & PTE_PRESENT_MASK))
			*e = new_page(vm) | PTE_PRESENT_MASK | PTE_WRITABLE_MASK;
		pt = addr_gpa2hva(vm, *e & PHYSICAL_PAGE_MASK);
		pt[(gva >> 12) & 511] = gpa | PTE_PRESENT_MASK | PTE_WRITABLE_MASK;
		return;
	}
	pd32 = addr_gpa2hva(vm, root);
	e32 = &pd32[gva >> 22];
	if (!(*e32 & PTE_PRESENT_MASK))
		*e32 = new_page(vm) | PTE_PRESENT_MASK | PTE_WRITABLE_MASK;
	pt32 = addr_gpa2hva(vm, *e32 & 0xfffff000u);
	pt32[(gva >> 12) & 1023] = gpa | PTE_PRESENT_MASK | PTE_WRITABLE_MASK;
}

struct legacy {
	struct hcase *c;
	uint64_t cr0, cr3, cr4, efer;
	bool compat;
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
	sregs.cs = code;
	vcpu_sregs_set(vcpu, &sregs);

	vcpu_regs_get(vcpu, &regs);
	regs.rip = l->rip;
	regs.rbp = l->c->rbp;
	regs.rflags = 2;
	vcpu_regs_set(vcpu, &regs);
}

static struct hcase *legacy_case(struct legacy *l, const char *name, uint64_t rbp,
				 uint64_t rip, int nr, ...)
{
	struct hcase *c = new_case(name, rbp, EXP_EXACT);
	va_list ap;
	int i;

	va_start(ap, nr);
	for (i = 0; i < nr; i++)
		c->rets[i] = va_arg(ap, uint64_t);
	va_end(ap);
	c->nr_exp = 1 + nr;
	c->kick = true;
	c->ip_start = rip;
	c->ip_end = rip + 2;
	l->c = c;
	l->rip = rip;
	return c;
}

static void test_legacy_modes(void)
{
	const uint64_t cr0 = X86_CR0_PE | X86_CR0_NE, pg = X86_CR0_PG;
	vm_paddr_t code, fr, pd32, pdpt, pdpt_c, pdpt2, pd;
	struct legacy l[16] = {};
	struct kvm_vcpu *vcpu;
	struct kvm_sregs lm;
	struct kvm_vm *vm;
	uint64_t *pdpt_p, *pdpt_c_p, pdpte_before[2];
	struct hcase *pae_valid;
	uint32_t *pd32_p, a;
	int n = 0, i, k;

	vm = create_vm(&vcpu);
	vcpu_sregs_get(vcpu, &lm);
	code = new_page(vm);
	*(uint16_t *)addr_gpa2hva(vm, code) = 0xfeeb;	/* jmp . */

	/* Compat mode (CS.L=0 in long mode), RBP's upper half is garbage. */
	virt_pg_map(vm, L_CODE_GVA, code);
	fr = new_page(vm);
	virt_pg_map(vm, L_FRAME_GVA, fr);
	a = L_FRAME_GVA + 0x800;
	three_frames32(vm, fr + 0x800, a);
	legacy_case(&l[n], "2 modes: compat mode, EBP chain, RBP bits 63:32 garbage",
		    0xdeadbeef00000000ull | a, L_CODE_GVA, 3, R1, R2, R3);
	l[n++].compat = true;

	/* Paging off: GVA = GPA. */
	fr = new_page(vm);
	three_frames32(vm, fr + 0x800, fr + 0x800);
	legacy_case(&l[n], "2 modes: paging off, EBP chain", fr + 0x800, code, 3, R1, R2, R3);
	l[n++].cr0 = cr0;

	/*
	 * Paging off, 0xfffffff0 = {0xfffffffc, R1}: the next record would
	 * end above 4 GiB; read anyway, its return address would be the
	 * decoy at GPA 4 GiB.
	 */
	vm_userspace_mem_region_add(vm, VM_MEM_SRC_ANONYMOUS, L_TOP_GPA, L_TOP_SLOT, 1, 0);
	vm_userspace_mem_region_add(vm, VM_MEM_SRC_ANONYMOUS, L_4G_GPA, L_4G_SLOT, 1, 0);
	memset(addr_gpa2hva(vm, L_TOP_GPA), 0, PAGE_SIZE);
	memset(addr_gpa2hva(vm, L_4G_GPA), 0, PAGE_SIZE);
	put_rec32(vm, 0xfffffff0ull, 0xfffffffc, R1);
	*(uint32_t *)addr_gpa2hva(vm, 0xfffffffcull) = 0;
	*(uint32_t *)addr_gpa2hva(vm, L_4G_GPA) = R9;
	legacy_case(&l[n], "2 modes: paging off, record crossing 4 GiB", 0xfffffff0, code, 1, R1);
	l[n++].cr0 = cr0;

	/* 32-bit paging: the 8-frame chain in a 4M page (CR4.PSE=1). */
	pd32 = new_page(vm);
	map32(vm, pd32, false, L_CODE_GVA, code);
	vm_userspace_mem_region_add(vm, VM_MEM_SRC_ANONYMOUS, L_4M_GPA, L_4M_SLOT,
				    SZ_4M / PAGE_SIZE, 0);
	memset(addr_gpa2hva(vm, L_4M_GPA), 0, SZ_4M);
	pd32_p = addr_gpa2hva(vm, pd32);
	pd32_p[L_4M_GVA >> 22] = L_4M_GPA | PTE_PRESENT_MASK | PTE_WRITABLE_MASK | PTE_LARGE_MASK;
	for (k = 0; k < 8; k++)
		put_rec32(vm, L_4M_GPA + huge32_off[k], k < 7 ? L_4M_GVA + huge32_off[k + 1] : 0,
			  RC(k));
	legacy_case(&l[n], "2 modes: 32-bit paging, stack in a 4M page", L_4M_GVA + huge32_off[0],
		    L_CODE_GVA, 8, RC(0), RC(1), RC(2), RC(3), RC(4), RC(5), RC(6), RC(7));
	l[n].cr0 = cr0 | pg;
	l[n].cr3 = pd32;
	l[n++].cr4 = X86_CR4_PSE;

	/*
	 * The same with CR4.PSE=0: PDE.PS is ignored, the PDE points at a
	 * page table, i.e. at the first 4K of the 4M region, whose entry 0
	 * is zero: not present.
	 */
	legacy_case(&l[n], "2 modes: 32-bit paging, CR4.PSE=0 ignores PDE.PS",
		    L_4M_GVA + huge32_off[0], L_CODE_GVA, 0);
	l[n].cr0 = cr0 | pg;
	l[n++].cr3 = pd32;

	/*
	 * PAE: a valid chain under PDPTE 1, the code under PDPTE 0.  The
	 * chain is kept away from the PDPTE that the guest's own fetches
	 * walk: a PAE PDPTE has no accessed bit, bit 5 is reserved, and an
	 * emulated CPU that sets it anyway would make that PDPTE invalid.
	 */
	pdpt_c = new_page(vm);
	pdpt_c_p = addr_gpa2hva(vm, pdpt_c);
	map32(vm, pdpt_c, true, L_CODE_GVA, code);
	a = 1u << 30 | L_FRAME_GVA;
	fr = new_page(vm);
	map32(vm, pdpt_c, true, a, fr);
	three_frames32(vm, fr + 0x800, a + 0x800);
	pae_valid = legacy_case(&l[n], "2 modes: PAE, EBP chain", a + 0x800, L_CODE_GVA,
				3, R1, R2, R3);
	pdpte_before[0] = pdpt_c_p[0];
	pdpte_before[1] = pdpt_c_p[1];
	l[n].cr0 = cr0 | pg;
	l[n].cr3 = pdpt_c;
	l[n++].cr4 = X86_CR4_PAE;

	/* A PDPT whose PDPTEs 1..3 get reserved bits. */
	pdpt = new_page(vm);
	pdpt_p = addr_gpa2hva(vm, pdpt);
	map32(vm, pdpt, true, L_CODE_GVA, code);

	/*
	 * PAE PDPTEs 1..3 with reserved bits, each over the same valid chain:
	 * bit 1; bit 7 (PD at GPA 0x1000); bits 1 and 7 (PD at GPA 0).  The
	 * PDs' addresses have bits 29:13 clear, so that a check against the
	 * 4-level 1G-page mask would not catch them.
	 */
	TEST_ASSERT_EQ(vm_phy_page_alloc(vm, 0, 0), 0);
	TEST_ASSERT_EQ(vm_phy_page_alloc(vm, 0x1000, 0), 0x1000);
	memset(addr_gpa2hva(vm, 0), 0, 2 * PAGE_SIZE);
	pdpt_p[1] = new_page(vm) | PTE_PRESENT_MASK | PDPTE_RSVD1;
	pdpt_p[2] = 0x1000 | PTE_PRESENT_MASK | PDPTE_RSVD7;
	pdpt_p[3] = 0x0 | PTE_PRESENT_MASK | PDPTE_RSVD1 | PDPTE_RSVD7;
	for (i = 1; i <= 3; i++) {
		static const char * const names[] = {
			"2 modes: PAE, PDPTE with reserved bit 1",
			"2 modes: PAE, PDPTE with reserved bit 7",
			"2 modes: PAE, PDPTE with reserved bits 1 and 7",
		};

		a = (uint32_t)i << 30 | L_FRAME_GVA;
		fr = new_page(vm);
		map32(vm, pdpt, true, a, fr);
		three_frames32(vm, fr + 0x800, a + 0x800);
		legacy_case(&l[n], names[i - 1], a + 0x800, L_CODE_GVA, 0);
		l[n].cr0 = cr0 | pg;
		l[n].cr3 = pdpt;
		l[n++].cr4 = X86_CR4_PAE;
	}

	/*
	 * PDPTE bit 7 again, now with bit 13 set in the PD's address, in a
	 * second PDPT: a check against the 4-level 1G-page mask catches that.
	 */
	pdpt2 = new_page(vm);
	map32(vm, pdpt2, true, L_CODE_GVA, code);
	do {
		pd = new_page(vm);
	} while (!(pd & BIT_ULL(13)));
	((uint64_t *)addr_gpa2hva(vm, pdpt2))[1] = pd | PTE_PRESENT_MASK | PDPTE_RSVD7;
	a = 1u << 30 | L_FRAME_GVA;
	fr = new_page(vm);
	map32(vm, pdpt2, true, a, fr);
	three_frames32(vm, fr + 0x800, a + 0x800);
	legacy_case(&l[n], "2 modes: PAE, PDPTE with reserved bit 7, PD address bit 13 set",
		    a + 0x800, L_CODE_GVA, 0);
	l[n].cr0 = cr0 | pg;
	l[n].cr3 = pdpt2;
	l[n++].cr4 = X86_CR4_PAE;

	for (i = 0; i < n; i++) {
		const char *err;

		set_mode(vcpu, &lm, &l[i]);
		err = run_case(l[i].c, vm, &vcpu, 1, NULL);
		if (l[i].c == pae_valid)
			snprintf(pae_valid->note, sizeof(pae_valid->note),
				 "PDPTE 0 (the code's) 0x%lx before the run, 0x%lx after; PDPTE 1 (the chain's) 0x%lx, 0x%lx",
				 pdpte_before[0], pdpt_c_p[0], pdpte_before[1], pdpt_c_p[1]);
		report(l[i].c, err);
	}
	kvm_vm_free(vm);
}

/* ---------------------------------------------------------------------- */
/* Case 3: a second vCPU rewrites the sampled vCPU's frames and stack PTE */
/* ---------------------------------------------------------------------- */

#define C3_BASE			0x10000000000ull
#define RW_RET(i)		(0x5100000ull + (uint64_t)(i) * 0x10000)
#define RW_ALT(i)		(0x6100000ull + (uint64_t)(i) * 0x10000)

static void test_rewriter(void)
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
	gs = map_page(vm, s);
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

		put_rec_gpa(vm, gs + RW_OFF + i * RW_STRIDE, f[i + 1], RW_RET(i));
		put_rec_gpa(vm, gs2 + RW_OFF + i * RW_STRIDE, f[i + 1], RW_ALT(i));
		memcpy(rw.next[i], next, sizeof(next));
		memcpy(rw.ret[i], ret, sizeof(ret));
		rw_vals[i][0] = RW_RET(i);
		rw_vals[i][1] = RW_RET(i) ^ 0x8000;
		rw_vals[i][2] = RW_ALT(i);
	}

	/* vCPU 1's aliases: of S, and of the page table holding S's PTE. */
	map_gpa(vm, fa, gs);
	pte = pte_of(vm, s, PG_LEVEL_4K);
	v = *pte;
	pt = addr_hva2gpa(vm, (void *)((uintptr_t)pte & ~(uintptr_t)(PAGE_SIZE - 1)));
	map_gpa(vm, pta, pt);
	rw.fa = fa;
	rw.pte = pta + ((uintptr_t)pte & (PAGE_SIZE - 1));
	rw.pte_val[0] = v;
	rw.pte_val[1] = v;
	rw.pte_val[2] = v;
	rw.pte_val[3] = (v & ~PHYSICAL_PAGE_MASK) | gs2;
	rw.pte_val[4] = (v & ~PHYSICAL_PAGE_MASK) | gs2;
	rw.pte_val[5] = (v & ~PHYSICAL_PAGE_MASK) | MMIO_GPA;
	rw.pte_val[6] = v & ~PTE_PRESENT_MASK;
	rw.pte_val[7] = vm->pa_bits < 52 ? v | RSVD_BIT : v & ~PTE_PRESENT_MASK;
	rw.iterations = 0;
	sync_global_to_guest(vm, rw);

	c = new_case("3 race: vCPU 1 rewrites vCPU 0's frames and stack PTE", f[0], EXP_REWRITE);
	err = run_case(c, vm, vcpus, 2, NULL);
	sync_global_from_guest(vm, rw);
	snprintf(c->note, sizeof(c->note),
		 "vCPU 1 did %lu rewrites (frames and PTE: valid, S2, MMIO, not present, reserved bit)",
		 rw.iterations);
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

#define C4_BASE			0x10000000000ull
#define C4_SLOT			10
#define C4_GPA			0x80000000ull
#define C4_GPA_MOVED		0x90000000ull
#define C4_PAGES		16

static uint64_t c4_b, c4_c;

static void op_time(struct stress *st, uint64_t t0)
{
	uint64_t us = (now_ns() - t0) / 1000;

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
		t0 = now_ns();
		vm_userspace_mem_region_add(vm, VM_MEM_SRC_ANONYMOUS, C4_GPA, C4_SLOT, C4_PAGES, 0);
		op_time(st, t0);
		/* C first, then B: a readable B never leads to an unwritten C. */
		p = addr_gpa2hva(vm, C4_GPA);
		p[(c4_c & (PAGE_SIZE - 1)) / 8] = 0;
		p[(c4_c & (PAGE_SIZE - 1)) / 8 + 1] = R3;
		asm volatile("" ::: "memory");
		p[(c4_b & (PAGE_SIZE - 1)) / 8] = c4_c;
		p[(c4_b & (PAGE_SIZE - 1)) / 8 + 1] = R2;
		usleep(2000);

		t0 = now_ns();
		vm_mem_region_move(vm, C4_SLOT, C4_GPA_MOVED);
		op_time(st, t0);
		usleep(1000);

		t0 = now_ns();
		vm_mem_region_move(vm, C4_SLOT, C4_GPA);
		op_time(st, t0);
		usleep(2000);

		t0 = now_ns();
		vm_mem_region_delete(vm, C4_SLOT);
		op_time(st, t0);
		usleep(1000);
		st->iterations++;
	}
	return NULL;
}

static void test_memslots(void)
{
	struct stress st = { .fn = memslot_fn };
	struct kvm_vcpu *vcpu;
	struct kvm_vm *vm;
	struct hcase *c;
	const char *err;
	uint64_t a;

	/* A in memslot 0 = {B, R1}; B = {C, R2} and C = {0, R3} in slot 10. */
	vm = create_vm(&vcpu);
	map_page(vm, C4_BASE);
	map_gpa(vm, C4_BASE + PAGE_SIZE, C4_GPA);
	a = C4_BASE + 0x800;
	c4_b = C4_BASE + PAGE_SIZE + 0x100;
	c4_c = C4_BASE + PAGE_SIZE + 0x200;
	put_rec(vm, a, c4_b, R1);

	c = new_case("4 race: memslot under the chain added, moved, deleted", a, EXP_PREFIX);
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
		__knob_write(0);
		usleep(500);
		__knob_write(1);
		usleep(500);
		st->iterations++;
	}
	return NULL;
}

/* A VM whose vCPU spins on the valid chain {R1, R2, R3}; returns its RBP. */
static struct kvm_vm *chain_vm(struct kvm_vcpu **vcpu, uint64_t *rbp)
{
	struct kvm_vm *vm = create_vm(vcpu);
	uint64_t a = C1_BASE + 0x800;

	map_page(vm, C1_BASE);
	put_rec(vm, a, a + 0x100, R1);
	put_rec(vm, a + 0x100, a + 0x200, R2);
	put_rec(vm, a + 0x200, 0, R3);
	*rbp = a;
	return vm;
}

static void test_knob_toggle(void)
{
	struct stress st = { .fn = toggle_fn };
	struct kvm_vcpu *vcpu;
	struct kvm_vm *vm;
	struct hcase *c;
	const char *err;
	uint64_t a;

	vm = chain_vm(&vcpu, &a);
	c = new_exact("5 knob toggled Y/N every 0.5 ms while sampling", a, 3, R1, R2, R3);
	c->kind = EXP_TOGGLE;
	err = run_case(c, vm, &vcpu, 1, &st);
	knob_write(true);
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
static void test_free_after_exit(void)
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
	c = new_exact("5 teardown: kvm_vm_free() with the event on, vCPU thread alive, then exits",
		      a, 3, R1, R2, R3);
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
	t0 = now_ms();
	while (!run_goal(c, now_ms() - t0) && !r.done)
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
	knob_write(knob);

	runner_start(&r, vcpu, RUN_RAW);
	if (c) {
		c->tid = r.tid;
		c->limit = sysctl_max_stack;
		lat_start(l);
		sampler_open(&s, c);
	}
	sem_post(&r.go);
	t0 = now_ms();
	if (c) {
		while (!run_goal(c, now_ms() - t0) && !r.done)
			usleep(20000);
	} else {
		usleep(RUN_MS * 1000);
	}

	t0 = now_ms();
	kvm_vm_free(vm);
	free_ms = now_ms() - t0;
	exited = runner_join_t(&r, FREE_EXIT_S);

	if (c) {
		sampler_close(&s);
		lat_stop(l, c);
	}
	free(l);
	knob_write(true);
	snprintf(what, size, "kvm_vm_free() took %lu ms, then KVM_RUN %s: %s", free_ms,
		 exited ? "returned by itself" : "had to be interrupted by a signal", r.err);
	return exited;
}

static void test_free_in_kvm_run(void)
{
	struct hcase *c, scratch = {};
	char what[400], ctl1[400], ctl2[400];
	const char *err = NULL;
	bool exited, exited1, exited2;

	c = new_case("5 teardown: kvm_vm_free() while the sampled vCPU is in KVM_RUN", 0,
		     EXP_PREFIX);
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
	if (exited1 || exited2)
		err = "the vCPU stays in KVM_RUN after kvm_vm_free() only when sampled, knob on";
	report(c, err);
}

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
		put_rec(vm, fp, k < frames - 1 ? fp + CHAIN_STRIDE : 0, RC(k));
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

static void test_max_stack(void)
{
	struct kvm_vcpu *vcpu;
	struct hcase *list[4];
	uint64_t b8, b512;
	struct kvm_vm *vm;
	int i;

	vm = create_vm(&vcpu);
	b8 = vm_vaddr_alloc(vm, 5 * PAGE_SIZE, KVM_UTIL_MIN_VADDR);
	b512 = vm_vaddr_alloc(vm, 5 * PAGE_SIZE, KVM_UTIL_MIN_VADDR);
	build_chain(vm, b8, 8);
	build_chain(vm, b512, 512);

	list[0] = chain_case("6 max_stack: 8 frames, default sample_max_stack", b8, 8, 0);
	list[1] = chain_case("6 max_stack: 512 frames, default sample_max_stack", b512, 512, 0);
	list[2] = chain_case("6 max_stack: 8 frames, sample_max_stack=16", b8, 8, 16);
	list[3] = chain_case("6 max_stack: 512 frames, sample_max_stack=16", b512, 512, 16);
	for (i = 0; i < 4; i++)
		report(list[i], run_case(list[i], vm, &vcpu, 1, NULL));
	kvm_vm_free(vm);
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

static struct ref refs[3];
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
			knob_write(false);
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
			knob_write(true);
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

#define NR_TESTS		55

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

static int read_int(const char *path)
{
	char buf[32] = {};
	int fd, r;

	fd = open(path, O_RDONLY);
	TEST_ASSERT(fd >= 0, "Failed to open %s", path);
	r = read(fd, buf, sizeof(buf) - 1);
	TEST_ASSERT(r > 0, "Failed to read %s", path);
	close(fd);
	return atoi(buf);
}

int main(void)
{
	struct sigaction sa = { .sa_handler = kick_handler };
	pthread_t wd;

	setvbuf(stdout, NULL, _IOLBF, 0);
	main_pid = getpid();

	/* Skips if /dev/kvm is missing. */
	close(open_kvm_dev_path_or_exit());
	__TEST_REQUIRE(!access(KNOB_PATH, F_OK),
		       "KVM does not support guest callchains (no %s)", KNOB_PATH);

	sysctl_max_stack = read_int(MAX_STACK_PATH);
	TEST_ASSERT(sysctl_max_stack > 16 && sysctl_max_stack < MAX_EXP,
		    "perf_event_max_stack = %d not in (16, %d)", sysctl_max_stack, MAX_EXP);

	knob_orig = knob_read();
	atexit(knob_restore);
	signal(SIGINT, knob_restore_signal);
	signal(SIGTERM, knob_restore_signal);
	/* Kicks vCPU threads out of KVM_RUN: no SA_RESTART. */
	sigaction(SIGUSR1, &sa, NULL);
	TEST_ASSERT(!pthread_create(&wd, NULL, watchdog_fn, NULL), "watchdog thread");
	knob_write(true);

	ksft_print_header();
	ksft_set_plan(NR_TESTS);
	ksft_print_msg("cpu-clock every %d ns on the vCPU thread, exclude_host=1; perf_event_max_stack %d; %ld CPUs; spin loop [0x%lx, 0x%lx)\n",
		       SAMPLE_PERIOD_NS, sysctl_max_stack, sysconf(_SC_NPROCESSORS_ONLN),
		       (uint64_t)spin_start, (uint64_t)spin_end);

	reference("reference: idle host, no guest", REF_IDLE);
	reference("reference: guest spinning, not sampled", REF_GUEST);
	reference("reference: guest spinning, sampled at 50 kHz, knob N", REF_SAMPLED_OFF);

	test_frame_chains();
	test_page_tables();
	test_legacy_modes();
	test_max_stack();
	test_rewriter();
	test_memslots();
	test_knob_toggle();
	test_free_after_exit();
	test_free_in_kvm_run();

	TEST_ASSERT_EQ(nr_cases, NR_TESTS);
	summary();
	ksft_finished();
}
