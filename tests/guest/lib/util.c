// SPDX-License-Identifier: GPL-2.0
/*
 * util.c: time, sysfs and procfs files, the kvm.guest_callchains knob and
 * its restoring at exit, and the statistics of repeated measurements.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "wb.h"

uint64_t wb_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

uint64_t wb_now_ms(void)
{
	return wb_now_ns() / 1000000;
}

double wb_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void wb_sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

pid_t wb_gettid(void)
{
	return syscall(SYS_gettid);
}

void wb_pin_to_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

bool wb_write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY);
	bool ok;

	if (fd < 0)
		return false;
	ok = write(fd, val, strlen(val)) == (ssize_t)strlen(val);
	close(fd);
	return ok;
}

long wb_read_long(const char *path)
{
	char buf[64] = "";
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	if (buf[0] == 'Y' || buf[0] == 'N')
		return buf[0] == 'Y';
	return strtol(buf, NULL, 10);
}

/* The knob's value before wb_knob_save(), -1 if not saved. */
int wb_knob_orig = -1;

int wb_knob_read(void)
{
	char c = 0;
	int fd;

	fd = open(WB_KNOB_PATH, O_RDONLY);
	TEST_ASSERT(fd >= 0, "Failed to open %s", WB_KNOB_PATH);
	TEST_ASSERT(read(fd, &c, 1) == 1, "Failed to read %s", WB_KNOB_PATH);
	close(fd);

	return c == 'Y' || c == 'y' || c == '1';
}

int __wb_knob_write(int on)
{
	return wb_write_file(WB_KNOB_PATH, on ? "Y" : "N") ? 0 : -1;
}

void wb_knob_write(bool on)
{
	TEST_ASSERT(!__wb_knob_write(on), "Failed to write '%c' to %s",
		    on ? 'Y' : 'N', WB_KNOB_PATH);
	TEST_ASSERT_EQ(wb_knob_read(), on);
}

void wb_knob_restore(void)
{
	if (wb_knob_orig >= 0)
		__wb_knob_write(wb_knob_orig);
}

static void knob_restore_signal(int sig)
{
	wb_knob_restore();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Remember the knob's value, to be restored at exit and on SIGINT/SIGTERM. */
void wb_knob_save(void)
{
	wb_knob_orig = wb_knob_read();
	atexit(wb_knob_restore);
	signal(SIGINT, knob_restore_signal);
	signal(SIGTERM, knob_restore_signal);
}

int wb_cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Median, min and max of the @n values at @v (at most 64), NaNs left out. */
struct wb_spread wb_spread_of(const double *v, int n)
{
	double s[64];
	struct wb_spread r = { 0, 0, 0, n };
	int i;

	/* NaN marks a repetition without a valid figure (e.g. a cost <= 0). */
	for (i = 0, n = 0; i < r.n; i++)
		if (!isnan(v[i]))
			s[n++] = v[i];
	r.n = n;
	if (!n) {
		r.med = r.min = r.max = NAN;
		return r;
	}
	qsort(s, n, sizeof(*s), cmp_double);
	r.min = s[0];
	r.max = s[n - 1];
	r.med = n & 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	return r;
}
