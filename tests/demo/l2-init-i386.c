// SPDX-License-Identifier: GPL-2.0
/*
 * /init of the demo's 32-bit (i386) L2 guest.  A 32-bit kernel cannot run
 * the host's 64-bit busybox, so the workload of l2-init is one static i386
 * program: tmpfs file writes and reads, a pipe between two processes and a
 * checksum pass over the data, until the L1 host stops the guest.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define FILE_SIZE	(1 << 20)

static char buf[4096];

static unsigned int checksum(const char *p, size_t n, unsigned int sum)
{
	while (n--)
		sum = (sum << 5) + sum + (unsigned char)*p++;
	return sum;
}

static void file_round(void)
{
	int fd = open("/tmp/file", O_CREAT | O_TRUNC | O_RDWR, 0600);
	unsigned int sum = 0;
	ssize_t n;
	int i;

	if (fd < 0)
		return;
	for (i = 0; i < FILE_SIZE / (int)sizeof(buf); i++) {
		memset(buf, i, sizeof(buf));
		if (write(fd, buf, sizeof(buf)) != sizeof(buf))
			break;
	}
	lseek(fd, 0, SEEK_SET);
	while ((n = read(fd, buf, 512)) > 0)
		sum = checksum(buf, n, sum);
	close(fd);
	unlink("/tmp/file");
	buf[0] = sum;
}

static void pipe_round(void)
{
	int p[2], i;
	pid_t pid;

	if (pipe(p))
		return;
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		for (i = 0; i < FILE_SIZE / (int)sizeof(buf); i++)
			if (write(p[1], buf, sizeof(buf)) != sizeof(buf))
				break;
		_exit(0);
	}
	close(p[1]);
	while (read(p[0], buf, 1024) > 0)
		;
	close(p[0]);
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

int main(void)
{
	mount("proc", "/proc", "proc", 0, NULL);
	mount("tmpfs", "/tmp", "tmpfs", 0, NULL);
	printf("L2: workload start\n");
	fflush(stdout);
	for (;;) {
		file_round();
		pipe_round();
	}
}
