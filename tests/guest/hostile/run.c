// SPDX-License-Identifier: GPL-2.0
/*
 * run.c: running a case of guest_hostile.  perf sampling of the vCPU
 * thread (its ring drained by a thread into the case's checks), the host
 * latency probe, vCPU threads and their stopping, the VMs the cases start
 * from, and run_case(), which samples one case.
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "kvm_util.h"
#include "processor.h"
#include "ucall_common.h"
#include "hostile.h"

pthread_mutex_t sample_lock = PTHREAD_MUTEX_INITIALIZER;
struct hcase *cur_case;

/* ---------------------------------------------------------------------- */
/* perf sampling of one thread                                            */
/* ---------------------------------------------------------------------- */

static void sample_record(void *arg, const struct perf_event_header *hdr,
			  const uint64_t *body)
{
	switch (hdr->type) {
	case PERF_RECORD_SAMPLE:
		/* ip, pid/tid, nr, ips[nr] */
		TEST_ASSERT(hdr->size >= sizeof(*hdr) + 3 * sizeof(uint64_t) &&
			    hdr->size >= sizeof(*hdr) + (3 + body[2]) * sizeof(uint64_t),
			    "Truncated sample record, size %u", hdr->size);
		if (cur_case)
			check_sample(cur_case, hdr->misc & PERF_RECORD_MISC_CPUMODE_MASK,
				     body[0], (uint32_t)body[1], body[1] >> 32,
				     &body[3], body[2]);
		break;
	case PERF_RECORD_LOST:
		if (cur_case)
			cur_case->st.lost += body[1];
		break;
	case PERF_RECORD_THROTTLE:
		if (cur_case)
			cur_case->st.throttled++;
		break;
	}
}

void sampler_drain(struct sampler *s)
{
	pthread_mutex_lock(&sample_lock);
	wb_ring_drain(&s->ring, sample_record, NULL);
	pthread_mutex_unlock(&sample_lock);
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
void sampler_open(struct sampler *s, struct hcase *c)
{
	bool cycles = sample_cycles && !c->cpu_clock;
	struct perf_event_attr attr = {
		.type = cycles ? PERF_TYPE_HARDWARE : PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = cycles ? PERF_COUNT_HW_CPU_CYCLES : PERF_COUNT_SW_CPU_CLOCK,
		.sample_period = cycles ? SAMPLE_PERIOD_CYCLES : SAMPLE_PERIOD_NS,
		.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_CALLCHAIN,
		.disabled = 1,
		.exclude_host = 1,
		.sample_max_stack = c->max_stack,
	};

	memset(s, 0, sizeof(*s));
	wb_ring_open(&s->ring, &attr, c->tid, RING_DATA_PAGES);

	if (!c->ip_end) {
		c->ip_start = (uint64_t)spin_start;
		c->ip_end = (uint64_t)spin_end;
	}

	pthread_mutex_lock(&sample_lock);
	cur_case = c;
	c->start_ms = wb_now_ms();
	pthread_mutex_unlock(&sample_lock);

	TEST_ASSERT(!pthread_create(&s->drainer, NULL, drainer_fn, s),
		    "Failed to create the drainer thread");
	TEST_ASSERT(!ioctl(s->ring.fd, PERF_EVENT_IOC_ENABLE, 0), "PERF_EVENT_IOC_ENABLE failed");
}

void sampler_close(struct sampler *s)
{
	/* The sampled thread may be gone: the event is then in EXIT state. */
	ioctl(s->ring.fd, PERF_EVENT_IOC_DISABLE, 0);
	s->stop = true;
	pthread_join(s->drainer, NULL);
	sampler_drain(s);

	pthread_mutex_lock(&sample_lock);
	if (!cur_case->run_ms)
		cur_case->run_ms = wb_now_ms() - cur_case->start_ms;
	cur_case = NULL;
	pthread_mutex_unlock(&sample_lock);

	wb_ring_close(&s->ring);
}

/* ---------------------------------------------------------------------- */
/* Host responsiveness: clock_nanosleep(1 ms) oversleep                   */
/* ---------------------------------------------------------------------- */

static void *lat_fn(void *arg)
{
	const struct timespec req = { .tv_nsec = LAT_SLEEP_NS };
	struct lat *l = arg;
	int64_t over;
	uint64_t t0;

	while (!l->stop) {
		t0 = wb_now_ns();
		clock_nanosleep(CLOCK_MONOTONIC, 0, &req, NULL);
		over = (int64_t)(wb_now_ns() - t0) - LAT_SLEEP_NS;
		if (l->n < LAT_MAX)
			l->us[l->n++] = over > 0 ? over / 1000 : 0;
	}
	return NULL;
}

void lat_start(struct lat *l)
{
	memset(l, 0, sizeof(*l));
	TEST_ASSERT(!pthread_create(&l->thread, NULL, lat_fn, l),
		    "Failed to create the latency thread");
}

void lat_stop(struct lat *l, struct hcase *c)
{
	l->stop = true;
	pthread_join(l->thread, NULL);
	c->lat_n = l->n;
	if (!l->n)
		return;
	qsort(l->us, l->n, sizeof(l->us[0]), wb_cmp_int);
	c->lat_max_us = l->us[l->n - 1];
	c->lat_p99_us = l->us[min(l->n - 1, (l->n * 99) / 100)];
}

/* ---------------------------------------------------------------------- */
/* vCPU threads                                                           */
/* ---------------------------------------------------------------------- */

/* The calling thread's CPU time, in ms. */
static uint64_t thread_cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000ull + ts.tv_nsec / 1000000;
}

static void *runner_fn(void *arg)
{
	struct runner *r = arg;
	struct ucall uc;
	uint64_t t0, cpu0;
	int ret;

	r->tid = wb_gettid();
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
		if (r->vcpu->run->exit_reason != UCALL_EXIT_REASON) {
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
		/*
		 * Host work, still sampled, after the VM is gone: 50 ms of the
		 * thread's own CPU time, not of the clock's, which a loaded
		 * emulator may spend mostly on other threads (once no sample at
		 * all, arm64-nmi in make test); at most 10 s of the clock.
		 */
		t0 = wb_now_ms();
		cpu0 = thread_cpu_ms();
		while (thread_cpu_ms() - cpu0 < 50 && wb_now_ms() - t0 < 10000)
			;
	}
out:
	r->done = true;
	return NULL;
}

void runner_start(struct runner *r, struct kvm_vcpu *vcpu, enum run_mode mode)
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

void deadline_in(struct timespec *ts, int seconds)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += seconds;
}

/*
 * Wait for the vCPU thread.  If it is not back from KVM_RUN within @seconds,
 * kick it with a signal: that is a hang.  Returns false on a hang.
 */
bool runner_join_t(struct runner *r, int seconds)
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
	wb_knob_restore();
	_exit(KSFT_FAIL);
}

bool runner_join(struct runner *r)
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
/* VMs                                                                    */
/* ---------------------------------------------------------------------- */

struct kvm_vm *create_vm(struct kvm_vcpu **vcpu)
{
	struct kvm_vm *vm = __vm_create_with_one_vcpu(vcpu, EXTRA_PAGES, guest_code);

	spin_rbp = 0;
	sync_global_to_guest(vm, spin_rbp);
	return vm;
}

volatile uint64_t *stop_flag(struct kvm_vm *vm)
{
	return addr_gva2hva(vm, (vm_vaddr_t)&guest_stop);
}

/* A VM whose vCPU spins on the valid chain {R1, R2, R3}; returns its RBP. */
struct kvm_vm *chain_vm(struct kvm_vcpu **vcpu, uint64_t *rbp)
{
	struct kvm_vm *vm = create_vm(vcpu);
	uint64_t a = C1_BASE + 0x800;

	wb_map_page(vm, C1_BASE);
	wb_put_rec(vm, a, a + 0x100, R1);
	wb_put_rec(vm, a + 0x100, a + 0x200, R2);
	wb_put_rec(vm, a + 0x200, 0, R3);
	*rbp = a;
	return vm;
}

/* ---------------------------------------------------------------------- */
/* Running a case                                                         */
/* ---------------------------------------------------------------------- */

bool run_goal(struct hcase *c, uint64_t elapsed)
{
	bool done;

	pthread_mutex_lock(&sample_lock);
	done = elapsed >= RUN_MAX_MS ||
	       (elapsed >= RUN_MS && c->st.in_spin >= MIN_IN_SPIN);
	pthread_mutex_unlock(&sample_lock);
	return done;
}

/* The host reads the guest's loop counter, @n, now: see check_progress(). */
static void watch_progress(struct hcase *c, uint64_t n)
{
	uint64_t now = wb_now_ms() - c->start_ms;

	if (n != c->loops) {
		if (!c->loops)
			c->loops_first_ms = now;
		c->loops = n;
		c->loops_last_ms = now;
	}
	if (c->loops && now - c->loops_last_ms > c->loops_gap_ms) {
		c->loops_gap_ms = now - c->loops_last_ms;
		c->loops_gap_end_ms = now;
	}
}

/*
 * Run @nr vCPUs of @vm (vcpus[0] is sampled) with RBP = c->rbp, for RUN_MS
 * or until the goal is met, with the optional stressor, then stop the guest
 * and check that everything comes back.
 */
const char *run_case(struct hcase *c, struct kvm_vm *vm, struct kvm_vcpu **vcpus,
		     int nr, struct stress *stress)
{
	static char err[512];
	volatile uint64_t *stop = stop_flag(vm);
	volatile uint64_t *loops = addr_gva2hva(vm, (vm_vaddr_t)&guest_loops);
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
	*loops = 0;

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

	t0 = wb_now_ms();
	while (!run_goal(c, wb_now_ms() - t0) && !r[0].done) {
		usleep(PROGRESS_POLL_MS * 1000);
		watch_progress(c, *loops);
	}
	/* What follows is the stop: progress is judged up to here. */
	c->run_ms = wb_now_ms() - c->start_ms;

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
