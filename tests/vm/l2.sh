# SPDX-License-Identifier: GPL-2.0
# Sourced by the scenarios that run Linux guests (L2) in the L1 host.
#
# l2_start <guest dir> <console log> [QEMU options...]: boot the guest in
# <guest dir> (bzImage, initramfs.cpio.gz) with QEMU/KVM on the VM's CPU
# 0, in the background, its console in <console log>; its QEMU's PID in
# $l2_pid.  io_delay=none: when L2 drives the PIT as its clock event
# device, the port 0x80 write after each PIT access (an exit to L1 each)
# took a quarter of its kernel samples.
l2_start() {
	l2_dir=$1 l2_log=$2
	shift 2
	rm -f "$l2_log"	# a previous guest's console would say it started
	taskset -c 0 qemu-system-x86_64 -enable-kvm -cpu qemu64 -m 256M -smp 1 -nodefaults \
		-no-user-config -display none -monitor none -serial "file:$l2_log" \
		-no-reboot -kernel "$l2_dir/bzImage" -initrd "$l2_dir/initramfs.cpio.gz" "$@" \
		-append "console=ttyS0 panic=-1 nokaslr tsc_early_khz=$(sed -n 's/.*tsc_early_khz=\([0-9]*\).*/\1/p' /proc/cmdline) tsc=reliable no_timer_check io_delay=none quiet" &
	l2_pid=$!
}

# l2_wait <QEMU PID> <console log> <what> <seconds> <console line>
# [<interval>]: wait for the guest to print the line, looking every
# <interval> seconds (default 1); if it does not within <seconds> (of wall
# time), or its QEMU ends, say so with its console, stop it and exit 1.
# The fidelity check starts and stops the host's recording on the guest's
# lines, looking every 0.1 s; a boot is looked for every second, as before.
l2_wait() {
	end=$(($(date +%s) + $4))
	until grep -q "$5" "$2" 2>/dev/null; do
		if [ "$(date +%s)" -ge $end ] || ! kill -0 "$1" 2>/dev/null; then
			echo "L2 did not $3 within $4 s; its console ($2):"
			cat "$2"
			kill "$1" 2>/dev/null	# not left running into the next scenario
			exit 1
		fi
		sleep "${6:-1}"
	done
}
