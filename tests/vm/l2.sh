# SPDX-License-Identifier: GPL-2.0
# Sourced by the scenarios that run Linux guests (L2) in the L1 host.
#
# l2_start <guest dir> <console log> [QEMU options...]: boot the guest in
# <guest dir> (bzImage or, on arm64, Image; if there is one, its command
# line in cmdline, which on x86 the timing options below follow;
# initramfs.cpio.gz) with QEMU/KVM on the VM's CPU 0, in the background,
# its console in <console log>; its QEMU's PID in $l2_pid.
# io_delay=none: when L2 drives the PIT as its clock event device, the port
# 0x80 write after each PIT access (an exit to L1 each) took a quarter of
# its kernel samples.
l2_start() {
	l2_dir=$1 l2_log=$2
	shift 2
	rm -f "$l2_log"	# a previous guest's console would say it started
	case $(uname -m) in
	aarch64)
		l2_append="console=ttyAMA0 panic=-1 nokaslr quiet"
		[ -r "$l2_dir/cmdline" ] && l2_append=$(cat "$l2_dir/cmdline")
		taskset -c 0 qemu-system-aarch64 -name l2,debug-threads=on \
			-enable-kvm -cpu host -M virt,gic-version=3 -m 256M -smp 1 -nodefaults \
			-no-user-config -display none -monitor none -serial "file:$l2_log" \
			-no-reboot -kernel "$l2_dir/Image" -initrd "$l2_dir/initramfs.cpio.gz" "$@" \
			-append "$l2_append" &
		;;
	*)
		l2_append="console=ttyS0 panic=-1 nokaslr"
		[ -r "$l2_dir/cmdline" ] && l2_append=$(cat "$l2_dir/cmdline")
		taskset -c 0 qemu-system-x86_64 -name l2,debug-threads=on \
			-enable-kvm -cpu qemu64 -m 256M -smp 1 -nodefaults \
			-no-user-config -display none -monitor none -serial "file:$l2_log" \
			-no-reboot -kernel "$l2_dir/bzImage" -initrd "$l2_dir/initramfs.cpio.gz" "$@" \
			-append "$l2_append tsc_early_khz=$(sed -n 's/.*tsc_early_khz=\([0-9]*\).*/\1/p' /proc/cmdline) tsc=reliable no_timer_check io_delay=none quiet" &
		;;
	esac
	l2_pid=$!
}

# l2_poll <QEMU PID> <console log> <seconds> <console line> [<interval>]:
# wait for the guest to print the line, looking every <interval> seconds
# (default 1); fails if it does not within <seconds> (of wall time) or its
# QEMU ends.
l2_poll() {
	end=$(($(date +%s) + $3))
	until grep -q "$4" "$2" 2>/dev/null; do
		[ "$(date +%s)" -lt $end ] && kill -0 "$1" 2>/dev/null || return 1
		sleep "${5:-1}"
	done
}

# l2_stuck <QEMU PID> <console log> <what> <seconds>: say that the guest
# did not <what> within <seconds>, with its console and where it is: its
# exits to KVM over 2 s (kvm:kvm_exit, by reason and guest RIP) and its
# QEMU threads' states; then stop it.
l2_stuck() {
	echo "L2 did not $3 within $4 s; its console ($2):"
	cat "$2"
	if kill -0 "$1" 2>/dev/null; then
		echo "L2's QEMU threads (state, kernel function, name):"
		for t in /proc/$1/task/*; do
			echo "  $(sed -n 's/^State:[[:space:]]*//p' $t/status)" \
				"$(cat $t/wchan 2>/dev/null) $(cat $t/comm)"
		done
		echo "L2's exits over 2 s (count, reason, guest RIP):"
		perf record -q -e kvm:kvm_exit -p "$1" -o /tmp/l2-stuck.data -- sleep 2 2>&1
		perf script -i /tmp/l2-stuck.data -F trace 2>&1 |
			sed -n 's/.*reason \(.*\) rip \(0x[0-9a-f]*\).*/\1 \2/p' |
			sort | uniq -c | sort -rn | head -8
	fi
	kill "$1" 2>/dev/null	# not left running into the next scenario
}

# l2_wait <QEMU PID> <console log> <what> <seconds> <console line>
# [<interval>]: wait for the guest to print the line (l2_poll); if it does
# not, l2_stuck and exit 1.  The fidelity check starts and stops the
# host's recording on the guest's lines, looking every 0.1 s.
l2_wait() {
	l2_poll "$1" "$2" "$4" "$5" "$6" && return
	l2_stuck "$1" "$2" "$3" "$4"
	exit 1
}

# l2_boot <guest dir> <console log> <what> <seconds> [QEMU options...]:
# l2_start, and wait for the guest's workload to start.  A guest whose QEMU
# still runs after <seconds> without a single console line is stopped,
# said (l2_stuck, and "L2 boot retried", which the host's checks flag as
# a FLAKE) and started again, once: under nested TCG 2 of 30 L2 boots
# hung that way (README, "The test VM").  A guest that printed something,
# or whose QEMU ended, is not retried.
l2_boot() {
	l2_dir=$1 l2_log=$2 l2_what=$3 l2_secs=$4
	shift 4
	for l2_try in 1 2; do
		l2_start "$l2_dir" "$l2_log" "$@"
		l2_poll $l2_pid "$l2_log" "$l2_secs" 'L2: workload start' && return
		l2_hung=no
		kill -0 $l2_pid 2>/dev/null && [ ! -s "$l2_log" ] && l2_hung=yes
		l2_stuck $l2_pid "$l2_log" "$l2_what" "$l2_secs"
		wait $l2_pid
		echo "L2's QEMU exited with $?"
		if [ $l2_try = 2 ] || [ $l2_hung = no ]; then
			exit 1
		fi
		echo "L2 boot retried: the first boot printed nothing within $l2_secs s"
	done
}
