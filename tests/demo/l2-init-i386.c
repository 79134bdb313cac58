// SPDX-License-Identifier: GPL-2.0
/*
 * /init of the demo's 32-bit (i386) L2 guest.  A 32-bit kernel cannot run
 * the host's 64-bit busybox, so the workload of l2-init is one static i386
 * program: tmpfs file writes and reads, a pipe between two processes and a
 * checksum pass over the data, until the L1 host stops the guest.  As
 * l2-init does, it records itself with its own perf (a static i386 build)
 * while the host records it, and hands the recording to the host on its
 * virtio disk.
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

/* The guest's own recording, as l2-init makes it; 0 if it was saved. */
static int self_record(void)
{
	char *argv[] = { "/bin/perf", "record", "-q", "-a", "-g", "-e", "cpu-clock",
			 "-F", "1000", "-B", "-N", "-o", "/tmp/self.data", "--",
			 "/init", "window", NULL };
	static char data[1 << 16];
	int status, in, out;
	long total = 0;
	ssize_t n;
	pid_t pid;

	printf("L2: self-record start\n");
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		execv(argv[0], argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		return 1;
	in = open("/tmp/self.data", O_RDONLY);
	out = open("/dev/vda", O_WRONLY);
	if (in < 0 || out < 0)
		return 1;
	while ((n = read(in, data, sizeof(data))) > 0) {
		if (write(out, data, n) != n)
			return 1;
		total += n;
	}
	if (n < 0 || fsync(out))
		return 1;
	printf("L2: self-record saved (%ld bytes)\n", total);
	fflush(stdout);
	return 0;
}

int main(int argc, char *argv[])
{
	pid_t pid;

	/*
	 * perf's workload: the interval it records, its ends on the console
	 * for the host to record the same interval.
	 */
	if (argc > 1 && !strcmp(argv[1], "window")) {
		printf("L2: self-record window open\n");
		fflush(stdout);
		sleep(12);
		printf("L2: self-record window closed\n");
		fflush(stdout);
		return 0;
	}
	mount("proc", "/proc", "proc", 0, NULL);
	mount("sysfs", "/sys", "sysfs", 0, NULL);
	mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
	mount("tmpfs", "/tmp", "tmpfs", 0, NULL);
	printf("L2: workload start\n");
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		for (;;) {
			file_round();
			pipe_round();
		}
	}
	if (!access("/dev/vda", W_OK) && self_record()) {
		printf("L2: self-record FAILED\n");
		fflush(stdout);
	}
	for (;;)
		pause();
}
