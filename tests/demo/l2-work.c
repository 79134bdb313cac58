// SPDX-License-Identifier: GPL-2.0
/*
 * The demo L2 guests' user workload, /bin/l2-work: a program whose
 * call stacks are known, so that the host's profile of it can be checked
 * frame by frame.  Built static (x86_64 and i386), with frame pointers,
 * not stripped: the host resolves its frames through the build ID that the guest's own
 * recording holds (see tests/host/check_guest_user.py).
 *
 * Each round writes a file on tmpfs and reads it back, hashing it:
 *
 *   main -> wl_round -> wl_fill                 (user loop, then write())
 *                    -> wl_checksum -> wl_hash  (read(), then the hash loop)
 *                                       -> wl_mix
 *
 * wl_hash is where the time goes in user mode.  The functions are noinline
 * and each has one caller, so a sample in wl_hash, past its prologue and
 * before its epilogue, has exactly wl_hash <- wl_checksum <- wl_round <-
 * main.
 */
#include <fcntl.h>
#include <stddef.h>
#include <unistd.h>

#define FILE_SIZE	(1 << 20)
#define CHUNK		(64 << 10)
#define HASH_PASSES	8

static unsigned char buf[CHUNK];
volatile unsigned int wl_sink;

/* A leaf: GCC gives it no frame (it uses no stack), so it is rarely hit. */
__attribute__((noinline)) unsigned int wl_mix(unsigned int h)
{
	h ^= h >> 15;
	h *= 0x2c1b3c6dU;
	return h ^ (h >> 12);
}

/* Not a leaf (it calls wl_mix), so it has a frame of its own. */
__attribute__((noinline)) unsigned int wl_hash(const unsigned char *p, size_t n,
					       unsigned int h)
{
	int pass;
	size_t i;

	for (pass = 0; pass < HASH_PASSES; pass++) {
		for (i = 0; i < n; i++)
			h = (h ^ p[i]) * 16777619u;
		h = wl_mix(h);
	}
	return h;
}

__attribute__((noinline)) unsigned int wl_checksum(int fd)
{
	unsigned int h = 2166136261u;
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0)
		h = wl_hash(buf, n, h);
	return h;
}

__attribute__((noinline)) int wl_fill(int fd, unsigned int seed)
{
	size_t i;
	int k;

	for (k = 0; k < FILE_SIZE / CHUNK; k++) {
		for (i = 0; i < sizeof(buf); i++)
			buf[i] = (unsigned char)(seed + i * 31 + k);
		if (write(fd, buf, sizeof(buf)) != sizeof(buf))
			return -1;
	}
	return 0;
}

__attribute__((noinline)) void wl_round(unsigned int seed)
{
	int fd = open("/tmp/l2-work", O_CREAT | O_TRUNC | O_RDWR, 0600);

	if (fd < 0)
		return;
	if (!wl_fill(fd, seed) && lseek(fd, 0, SEEK_SET) == 0)
		wl_sink = wl_checksum(fd);
	close(fd);
	unlink("/tmp/l2-work");
}

int main(void)
{
	unsigned int seed;

	for (seed = 0;; seed++)
		wl_round(seed);
}
