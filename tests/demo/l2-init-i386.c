// SPDX-License-Identifier: GPL-2.0
/*
 * /init of the demo's 32-bit (i386) L2 guest.  A 32-bit kernel cannot run
 * the host's 64-bit busybox, so the workload of l2-init is one static i386
 * program: tmpfs file writes and reads, a pipe between two processes and a
 * checksum pass over the data, and /bin/l2-work, the 64-bit guest's program
 * with known call stacks built for i386, until the L1 host stops the guest.
 * While it
 * runs, the guest records itself with its own perf (a static i386 build,
 * /bin/perf), as l2-init does: the window opens with a line on the console
 * and closes when the host writes a line to the second serial port; the
 * recording goes to the virtio disk (raw, from sector 0), its size to the
 * console.  perf starts on the host's word on that port; "/init window" is
 * the program it records around.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
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

/*
 * The second serial port, raw, on fd 3: the host's words.  Held open from
 * before the host may write: an 8250 drops what came while it was closed.
 */
static int open_ctl(void)
{
	int fd = open("/dev/ttyS1", O_RDONLY | O_NOCTTY);
	struct termios t;

	if (fd < 0 || tcgetattr(fd, &t)) {
		perror("L2: /dev/ttyS1");
		return -1;
	}
	cfmakeraw(&t);
	t.c_cflag |= CLOCAL | CREAD;
	if (tcsetattr(fd, TCSANOW, &t) || dup2(fd, 3) != 3) {
		perror("L2: /dev/ttyS1");
		return -1;
	}
	if (fd != 3)
		close(fd);
	return 3;
}

/* Wait for a line from the host on fd 3 (open_ctl()). */
static void read_line(void)
{
	char c;

	while (read(3, &c, 1) == 1 && c != '\n')
		;
}

/*
 * The recorded window, in perf's child: from its line on the console to
 * the host's line on fd 3, inherited from self_record().
 */
static int window(void)
{
	printf("L2: self-record window open\n");
	fflush(stdout);
	read_line();
	return 0;
}

/* Copy @from to the start of the block device @to; its size, or -1. */
static long save(const char *from, const char *to)
{
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY);
	long size = 0;
	ssize_t n;

	if (in < 0 || out < 0)
		return -1;
	while ((n = read(in, buf, sizeof(buf))) > 0) {
		if (write(out, buf, n) != n)
			return -1;
		size += n;
	}
	if (n < 0 || fsync(out) || close(out))
		return -1;
	close(in);
	return size;
}

static void self_record(void)
{
	/*
	 * For 'perf inject --guest-data' on the host: context switches, sample
	 * IDs on every event, and the build IDs of all mapped files (-N: not
	 * cached).
	 */
	char *argv[] = { "perf", "record", "-a", "-g", "-e", "cpu-clock", "-F", "1000",
			 "--switch-events", "--sample-identifier", "--buildid-all", "-N",
			 "-o", "/tmp/self.data", "--", "/init", "window", NULL };
	int status = -1;
	long size = -1;
	pid_t pid;

	printf("L2: self-record start\n");
	fflush(stdout);
	if (open_ctl() < 0)
		return;
	/*
	 * The host's perf takes seconds to start, and must be recording when
	 * the window opens: this perf starts on the host's word.
	 */
	printf("L2: self-record ready\n");
	fflush(stdout);
	read_line();
	pid = fork();
	if (pid == 0) {
		execv("/bin/perf", argv);
		perror("L2: /bin/perf");
		_exit(127);
	}
	/*
	 * The line that closes the window is written once perf is done: a
	 * console line takes a second or two under nested emulation, which
	 * the recording would hold after the host's window.
	 */
	if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	    !WEXITSTATUS(status)) {
		printf("L2: self-record window closed\n");
		fflush(stdout);
		size = save("/tmp/self.data", "/dev/vda");
	}
	if (size < 0)
		printf("L2: self-record FAILED (perf status 0x%x)\n", status);
	else
		printf("L2: self-record saved (%ld bytes)\n", size);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	struct stat st;
	pid_t pid;

	if (argc > 1 && !strcmp(argv[1], "window"))
		return window();
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
	pid = fork();
	if (pid == 0) {
		execl("/bin/l2-work", "l2-work", (char *)NULL);
		perror("L2: /bin/l2-work");
		_exit(127);
	}
	if (!stat("/dev/vda", &st) && S_ISBLK(st.st_mode))
		self_record();
	for (;;)
		pause();
}
