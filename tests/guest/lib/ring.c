// SPDX-License-Identifier: GPL-2.0
/*
 * ring.c: a perf event on one thread and its mmap()ed ring buffer: open,
 * drain (every record to a callback), close.
 */
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include <linux/ring_buffer.h>

#include "wb.h"

/* Open @attr on thread @tid, with a ring of @data_pages pages. */
void wb_ring_open(struct wb_ring *r, struct perf_event_attr *attr, pid_t tid,
		  int data_pages)
{
	long page_size = getpagesize();

	r->fd = syscall(__NR_perf_event_open, attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	TEST_ASSERT(r->fd >= 0, "perf_event_open() on tid %d failed", tid);

	r->len = (1 + data_pages) * page_size;
	r->base = mmap(NULL, r->len, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
	TEST_ASSERT(r->base != MAP_FAILED, "mmap() of the perf ring failed");
	r->meta = r->base;
	if (r->meta->data_size) {
		r->data = (uint8_t *)r->base + r->meta->data_offset;
		r->size = r->meta->data_size;
	} else {
		r->data = (uint8_t *)r->base + page_size;
		r->size = data_pages * page_size;
	}
}

void wb_ring_copy(struct wb_ring *r, uint64_t pos, void *dst, size_t len)
{
	uint64_t off = pos & (r->size - 1);
	size_t first = min_t(uint64_t, len, r->size - off);

	memcpy(dst, r->data + off, first);
	memcpy((uint8_t *)dst + first, r->data, len - first);
}

/*
 * Hand every record in the ring to @fn, and free its space.  Not reentrant
 * (one static record buffer): callers serialize their drains.
 */
void wb_ring_drain(struct wb_ring *r, wb_record_fn fn, void *arg)
{
	static uint64_t buf[65536 / sizeof(uint64_t)];
	struct perf_event_header *hdr = (void *)buf;
	const uint64_t *body = (const uint64_t *)(hdr + 1);
	uint64_t head, tail;

	/* Pairs with the kernel's smp_wmb() before it updates data_head. */
	head = ring_buffer_read_head(r->meta);
	tail = READ_ONCE(r->meta->data_tail);

	while (head - tail >= sizeof(*hdr)) {
		wb_ring_copy(r, tail, hdr, sizeof(*hdr));
		TEST_ASSERT(hdr->size >= sizeof(*hdr) && hdr->size <= head - tail,
			    "Bad perf record size %u at 0x%lx (head 0x%lx)",
			    hdr->size, tail, head);
		wb_ring_copy(r, tail, buf, hdr->size);
		fn(arg, hdr, body);
		tail += hdr->size;
	}

	/* Pairs with the kernel's check of data_tail before writing. */
	ring_buffer_write_tail(r->meta, tail);
}

void wb_ring_close(struct wb_ring *r)
{
	munmap(r->base, r->len);
	close(r->fd);
}
