/* SPDX-License-Identifier: GPL-2.0 */
/*
 * wb.h: the workbench's library for its guest programs (guest_hostile,
 * guest_bench), built on the KVM selftests library:
 *
 *  - util.c:  time, CPU affinity, sysfs files, the kvm.guest_callchains
 *             knob, statistics;
 *  - ring.c:  a perf event and its mmap()ed ring: open, drain, close;
 *  - chain.c: callchain markers, formatting, checking against a reference,
 *             and the unwinder's frame rules applied through the VMM's
 *             mapping of guest memory;
 *  - vm.c:    guest memory: page and frame-record builders, page-table
 *             entries, user-mode (CPL3) vCPU setup, vCPU binary stats.
 *
 * Page tables, the VMM's walk of them and user mode are x86's only; the
 * rest also builds for arm64 (guest_hostile).
 *
 * The kernel series' own selftest,
 * tools/testing/selftests/kvm/x86_64/guest_callchain_test.c, stays
 * self-contained and carries its own copies of some of these helpers:
 * wb_knob_read(), __wb_knob_write(), wb_knob_write(), wb_knob_restore() and
 * the signal handler of wb_knob_save() (its knob_*()), wb_is_guest_marker()
 * and wb_is_marker() (is_guest_marker(), is_marker()), wb_format_chain()
 * (format_chain(), which there shows every entry and names
 * PERF_CONTEXT_GUEST), wb_ring_open(), wb_ring_copy(), wb_ring_drain()
 * (perf_open(), ring_copy(), perf_drain()), wb_now_ms() (now_ms()),
 * wb_pgtable_make_user() and wb_vcpu_set_user_mode() (pgtable_make_user(),
 * vcpu_set_user_mode(), there without the TSS I/O permission bitmap).
 * A fix to one of them likely applies to the other.
 */
#ifndef WB_H
#define WB_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <linux/perf_event.h>
#include <linux/sizes.h>

#include "kvm_util.h"
#include "processor.h"

#define WB_KNOB_PATH		"/sys/module/kvm/parameters/guest_callchains"

/* The unwinder goes on to next only if next > fp and next - fp <= this. */
#define WB_FRAME_MAX_GAP	SZ_1M

#ifdef __x86_64__
/* User segments, placed after the TSS (0x18-0x27) of the selftests' GDT. */
#define USER_DS			(0x28 | 3)
#define USER_CS			(0x30 | 3)
#define USER_DS_DESC		0x00cff3000000ffffull
#define USER_CS_DESC		0x00affb000000ffffull
#define X86_EFLAGS_IOPL3	(3u << 12)
/* The selftests' ucall port (lib/x86_64/ucall.c). */
#define UCALL_PORT		0x1000
#endif

/* util.c: time */
uint64_t wb_now_ns(void);
uint64_t wb_now_ms(void);
double wb_now_s(void);
void wb_sleep_us(long us);
pid_t wb_gettid(void);
void wb_pin_to_cpu(int cpu);

/* util.c: sysfs and procfs files */
bool wb_write_file(const char *path, const char *val);
/* A number, or 1/0 for Y/N; -1 if the file cannot be read. */
long wb_read_long(const char *path);

/* util.c: the knob; wb_knob_save() restores its value at exit. */
extern int wb_knob_orig;
int wb_knob_read(void);
int __wb_knob_write(int on);
void wb_knob_write(bool on);
void wb_knob_restore(void);
void wb_knob_save(void);

/* util.c: statistics */
struct wb_spread {
	double med, min, max;
	int n;
};

int wb_cmp_int(const void *a, const void *b);
struct wb_spread wb_spread_of(const double *v, int n);

/* ring.c: a perf event with its ring */
struct wb_ring {
	int fd;
	void *base;
	size_t len;
	struct perf_event_mmap_page *meta;
	uint8_t *data;
	uint64_t size;
};

/* One record: its header, and the @hdr->size - sizeof(*hdr) bytes after. */
typedef void (*wb_record_fn)(void *arg, const struct perf_event_header *hdr,
			     const uint64_t *body);

void wb_ring_open(struct wb_ring *r, struct perf_event_attr *attr, pid_t tid,
		  int data_pages);
void wb_ring_copy(struct wb_ring *r, uint64_t pos, void *dst, size_t len);
void wb_ring_drain(struct wb_ring *r, wb_record_fn fn, void *arg);
void wb_ring_close(struct wb_ring *r);

/* chain.c: markers and formatting */
bool wb_is_guest_marker(uint64_t e);
bool wb_is_marker(uint64_t e);
/* "nr=N [GUEST_KERNEL 0x... ...]", the first 12 entries. */
int wb_format_chain(char *buf, size_t size, const uint64_t *chain, uint64_t nr);
/* "  what (n): 0x... ..." on stdout, the first 8 entries. */
void wb_print_rets(const char *what, const uint64_t *v, int n);

/* chain.c: chains (return addresses after the IP) against a reference */
#define WB_MAX_CHAIN		128

struct wb_chainchk {
	uint64_t ref[WB_MAX_CHAIN];
	int nref;
	uint64_t inloop, exact;
	uint64_t bad[WB_MAX_CHAIN];
	int nbad;			/* first mismatching chain, for the log */
};

void wb_chain_check(struct wb_chainchk *c, bool in_loop, const uint64_t *rets, int n);

/* chain.c: the frame rules */
uint64_t wb_sign_extend(uint64_t va, int va_bits);
bool wb_canonical(uint64_t a, int va_bits);
/* Whether the walk goes on from the record at @fp to the one at @next. */
bool wb_next_ok(uint64_t fp, uint64_t next);
int wb_walk_frames(struct kvm_vm *vm, uint64_t fp, uint64_t *rets, int max);

#ifdef __x86_64__
/*
 * The unwinder's walk done by the VMM: 4- or 5-level paging through the
 * VMM's mapping, the last page's translation reused.
 */
struct wb_uwalk {
	struct kvm_vm *vm;
	uint64_t cr3;
	int levels;
	uint64_t page_gva;
	uint8_t *page_hva;
};

int wb_uwalk_chain(struct wb_uwalk *w, uint64_t fp, uint64_t *rets, int max);
#endif

/* vm.c: guest memory */
void *wb_gpa2hva_safe(struct kvm_vm *vm, uint64_t gpa);
vm_paddr_t wb_new_page(struct kvm_vm *vm);
void wb_map_gpa(struct kvm_vm *vm, uint64_t gva, vm_paddr_t gpa);
vm_paddr_t wb_map_page(struct kvm_vm *vm, uint64_t gva);
#ifdef __x86_64__
uint64_t *wb_pte_of(struct kvm_vm *vm, uint64_t gva, int level);
#endif
void wb_put_u64(struct kvm_vm *vm, uint64_t gva, uint64_t val);
void wb_put_rec(struct kvm_vm *vm, uint64_t gva, uint64_t next, uint64_t ret);
void wb_put_rec_gpa(struct kvm_vm *vm, vm_paddr_t gpa, uint64_t next, uint64_t ret);
void wb_put_rec32(struct kvm_vm *vm, vm_paddr_t gpa, uint32_t next, uint32_t ret);

#ifdef __x86_64__
/* vm.c: vCPUs */
void wb_pgtable_make_user(struct kvm_vm *vm, vm_paddr_t table, int level);
void wb_page_set_user(struct kvm_vm *vm, uint64_t gva, bool user);
void wb_vcpu_set_user_mode(struct kvm_vm *vm, struct kvm_vcpu *vcpu);
#endif

struct wb_vstats {
	int fd;
	struct kvm_stats_header header;
	struct kvm_stats_desc *desc;
};

/* A vCPU binary stat by name; @s->fd must start at -1. */
bool wb_vstat(struct wb_vstats *s, struct kvm_vcpu *vcpu, const char *name, uint64_t *val);
void wb_vstats_close(struct wb_vstats *s);

#endif /* WB_H */
