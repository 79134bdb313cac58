// SPDX-License-Identifier: GPL-2.0
/*
 * check.c: the cases of guest_hostile and their expectations, the check of
 * every sample against the unwinder's rules, and each case's report and
 * TAP line.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvm_util.h"
#include "processor.h"
#include "hostile.h"

struct hcase *cases[MAX_CASES];
int nr_cases;

/* ---------------------------------------------------------------------- */
/* Cases and their expectations                                           */
/* ---------------------------------------------------------------------- */

struct hcase *new_case(const char *name, uint64_t rbp, enum exp_kind kind)
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
struct hcase *new_exact(const char *name, uint64_t rbp, int nr, ...)
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

/* The same with the @nr return addresses at @rets. */
struct hcase *new_exact_a(const char *name, uint64_t rbp, int nr, const uint64_t *rets)
{
	struct hcase *c = new_case(name, rbp, EXP_EXACT);

	memcpy(c->rets, rets, nr * sizeof(*rets));
	c->nr_exp = 1 + nr;
	return c;
}

static void violation(struct hcase *c, const char *what, uint64_t ip,
		      const uint64_t *chain, uint64_t nr)
{
	struct stats *st = &c->st;
	int len;

	if (!st->violations++) {
		len = snprintf(st->why, sizeof(st->why), "%s: ip=0x%lx ", what, ip);
		wb_format_chain(st->why + len, sizeof(st->why) - len, chain, nr);
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
		/*
		 * Only next[i] = f(i + 1) leads to a return address: f(i) -
		 * RW_STRIDE is a switch to slot i - 1, walked already, or for
		 * slot 0 to zeros below the slots; the others stop the walk.
		 * So ret k is from slot k.
		 */
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

void check_sample(struct hcase *c, uint16_t cpumode, uint64_t ip,
		  uint32_t pid, uint32_t tid, const uint64_t *chain, uint64_t nr)
{
	struct stats *st = &c->st;
	uint16_t want_mode = c->marker == PERF_CONTEXT_GUEST_USER ?
			     PERF_RECORD_MISC_GUEST_USER : PERF_RECORD_MISC_GUEST_KERNEL;
	bool has_guest_marker = false, spin;
	uint64_t i;
	int e;

	st->samples++;
	if (pid != main_pid || tid != c->tid)
		violation(c, "sample of another thread", ip, chain, nr);

	for (i = 0; i < nr; i++)
		has_guest_marker |= wb_is_guest_marker(chain[i]);

	if (cpumode != PERF_RECORD_MISC_GUEST_KERNEL &&
	    cpumode != PERF_RECORD_MISC_GUEST_USER) {
		st->host++;
		if (has_guest_marker)
			violation(c, "host sample with a guest marker", ip, chain, nr);
		return;
	}

	st->guest++;
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
		if (wb_is_marker(chain[i])) {
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
		st->seq_ms[st->seq_n++] = min_t(uint64_t, wb_now_ms() - c->start_ms, 65535);
	}
	if (!chain_ok(c, &chain[2], e)) {
		violation(c, "chain breaks the unwinder's rules", ip, chain, nr);
		return;
	}
	st->good++;
}

/* ---------------------------------------------------------------------- */
/* Reporting a case                                                       */
/* ---------------------------------------------------------------------- */

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
	wb_format_chain(buf, sizeof(buf), chain, 1 + c->nr_exp);
	ksft_print_msg("  expected: %s%s (ip in [0x%lx, 0x%lx))%s\n",
		       c->kind == EXP_PREFIX ? "a prefix of " : "", buf,
		       c->ip_start, c->ip_end,
		       c->kind == EXP_TOGGLE ? ", or nr=0 with the knob off" : "");
}

/* Print the case's figures and its TAP line. */
void report(struct hcase *c, const char *err)
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
	if (c->loops)
		ksft_print_msg("  progress: the guest's loop counted %lu, from %lu ms on; longest still %lu ms, until %lu ms (limit %d ms)\n",
			       c->loops, c->loops_first_ms, c->loops_gap_ms,
			       c->loops_gap_end_ms, PROGRESS_MAX_GAP_MS);
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

void tap_plan(unsigned int nr)
{
	ksft_set_plan(nr);
}

void tap_finish(void)
{
	ksft_finished();
}

/*
 * The guest keeps running under a race: from the first time the host saw
 * the guest's spin loop count (a VM's first entries can take long) to the
 * stop, the count never stood still for more than PROGRESS_MAX_GAP_MS.
 * The guest reports this itself, so it holds whatever the sampler saw:
 * cpu-clock samples the vCPU thread only while it is on a CPU, and L1 is
 * an emulated VM that stops whenever its host does not run QEMU.  Such
 * stalls were measured at up to 500 ms; a guest kept out by the race for
 * most of the run, or for good (which the stop then reports as a HANG),
 * fails.
 */
const char *check_progress(struct hcase *c)
{
	static char buf[160];

	if (!c->loops)
		return "the guest's spin loop never counted";
	if (c->loops_gap_ms > PROGRESS_MAX_GAP_MS) {
		snprintf(buf, sizeof(buf),
			 "the guest's spin loop stood still for %lu ms, until %lu ms into the run",
			 c->loops_gap_ms, c->loops_gap_end_ms);
		return buf;
	}
	return NULL;
}
