#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The demo, inside the L1 host: boot a real Linux guest (L2) with QEMU/KVM,
# record it from the host with 'perf kvm --guest record -g' while its
# workload runs, and save the recording ($1.data); then profile it live
# with 'perf kvm --guest top -g' ($1.top), and on x86 record its
# registers and stack copies ($1.stack.data; for a guest without frame
# pointers, with every sample of $1.data instead).  Meanwhile the guest
# records itself with its own perf and writes that recording to its virtio
# disk; saved as $1.self.data.  The host (outside the VM) dumps and judges them.
# $2: the directory of the guest's bzImage and initramfs (default /demo).
. /tests/l2.sh
out=$1
guest=${2:-/demo}
# The sampling event: cpu-clock, or the one the command line's wb.event
# names (the arm64 VMs' cycles, the PMU's overflow interrupt).
event=$(sed -n 's/.*wb\.event=\([^ ]*\).*/\1/p' /proc/cmdline)
[ -n "$event" ] || event=cpu-clock
# The host's sampling rate: perf's default, or the one the command line's
# wb.freq names, pinned.  The arm64 VMs' PMU interrupt, emulated, takes
# 0.1-0.4 ms, so the kernel lowers perf_event_max_sample_rate in each
# scenario that samples (to 250-500 Hz by the end of hostile), and the
# host's rate depended on what ran before (README, "The arm64 host's
# sampling rate pinned").  Rate first: it cannot be written with the
# throttling off.
freq=$(sed -n 's/.*wb\.freq=\([0-9]*\).*/\1/p' /proc/cmdline)
if [ -n "$freq" ]; then
	echo "$freq" > /proc/sys/kernel/perf_event_max_sample_rate &&
		echo 0 > /proc/sys/kernel/perf_cpu_time_max_percent || exit 1
	echo "demo: the host samples at $freq Hz, the kernel's throttling off"
fi
echo Y > /sys/module/kvm/parameters/guest_callchains || exit 1
start=$(date +%s)
# L2 runs on the VM's CPU 0 and is recorded there: 'perf kvm record -a'
# would also record the idle CPU 1.
# The guest's disk: its own recording from sector 0 and, from a guest that
# hands its symbols over (wb.kallsyms on its command line,
# tests/demo/l2-init), those from 48 MiB on (sparse).  The guest's second
# console: the host's word that ends its recording's window (a second
# serial port, or on arm64, with one only, a virtio console).
rm -f /tmp/l2-disk.img /tmp/l2-ctl.in /tmp/l2-ctl.out
truncate -s 64M /tmp/l2-disk.img
if [ "$(uname -m)" = aarch64 ]; then
	disk="-drive file=/tmp/l2-disk.img,format=raw,if=none,id=disk -device virtio-blk-device,drive=disk"
	ctl="-device virtio-serial-device -chardev pipe,id=ctl,path=/tmp/l2-ctl -device virtconsole,chardev=ctl"
else
	disk="-drive file=/tmp/l2-disk.img,format=raw,if=virtio"
	ctl="-serial pipe:/tmp/l2-ctl"
fi
mkfifo /tmp/l2-ctl.in /tmp/l2-ctl.out
# shellcheck disable=SC2086
l2_boot "$guest" /tmp/l2.log "start its workload" 120 $disk $ctl
qemu=$l2_pid
echo "demo: L2 booted and started its workload in $(( $(date +%s) - start )) s"
[ -r "$guest/version" ] && echo "demo: the guest's kernel: Debian's $(cat "$guest/version")"
# The guest's memory in L1: in transparent huge pages, each stage-2 fault
# of its first touch maps 2 MiB (README, "Fidelity").
echo "demo: L1's anonymous memory in huge pages: $(sed -n 's/^AnonHugePages: *//p' /proc/meminfo)"
# The guest's symbols: its System.map, or, from a guest that hands them
# over (wb.kallsyms), its kallsyms as it runs, for perf kvm top here and
# the host's checks ($out.kallsyms).
syms=$guest/System.map
if grep -qs 'wb\.kallsyms' "$guest/cmdline"; then
	size=$(tr -d '\r' < /tmp/l2.log | sed -n 's/^L2: kallsyms saved (\([0-9]*\) bytes)$/\1/p')
	[ -n "$size" ] && tail -c +$((48 << 20 | 1)) /tmp/l2-disk.img | head -c "$size" |
		gunzip > "$out.kallsyms" || {
		echo "demo: the guest did not hand over its kallsyms"
		cat /tmp/l2.log
		rm -f "$out.kallsyms"
		kill $qemu
		exit 1
	}
	syms=$out.kallsyms
	echo "demo: the guest's kallsyms, from its disk: $(wc -l < "$syms") symbols," \
		"_stext at $(sed -n 's/ [tT] _stext$//p' "$syms")"
fi
# What 'perf inject --guest-data' needs to put the guest's own events on
# the host's timeline: QEMU's PID and how the vCPU's TSC derives from the
# host's (guest = host * ratio + offset, from KVM's debugfs).
vcpu=$(echo /sys/kernel/debug/kvm/$qemu-*/vcpu0)
if [ -r "$vcpu/tsc-offset" ]; then
	scale=1
	[ -r "$vcpu/tsc-scaling-ratio" ] &&
		scale=$(awk -v r="$(cat "$vcpu/tsc-scaling-ratio")" \
			-v b="$(cat "$vcpu/tsc-scaling-ratio-frac-bits")" 'BEGIN { printf "%.12g", r / 2 ^ b }')
	echo "$qemu $(cat "$vcpu/tsc-offset") $scale" > "$out.guest"
	echo "demo: QEMU PID, the vCPU's TSC offset and scale: $(cat "$out.guest")"
else
	# arm64: the guest's counter is the host's less an offset KVM keeps
	# to itself (no debugfs file), so the two recordings share no clock.
	echo "demo: no $vcpu/tsc-offset: the guest's events cannot be injected"
fi
# The guest records itself, the host the same interval: from the
# guest's line that opens it, 40 s of the host's time, or the seconds
# in $guest/window (scripts/mkinitramfs.sh: 80 for the i386 guest, whose
# own profile is the noisier); then the host tells the guest to close
# it.  perf takes seconds to start here, so the host's recording starts
# before, with its events off (-D -1), and
# its control FIFO turns them on and off; perf acks each command on
# the other FIFO, the first (ping) once it has started.  Only then
# does the guest start its perf ('go'): a guest that opened its window
# while the host's perf was still starting recorded 7.5 s more than
# the host's 40 s (Debian's arm64 guest, booted in 26 s).  The shell
# holds all three FIFOs open read-write (fds 3, 4, 5), so no write
# here blocks on a perf or a QEMU that has died; a missing ack is
# waited for 30 s, the first 60 s.
window=40
[ -r "$guest/window" ] && window=$(cat "$guest/window")
echo "demo: the window: $window s"
rm -f /tmp/perf-ctl /tmp/perf-ack
mkfifo /tmp/perf-ctl /tmp/perf-ack
exec 3<>/tmp/perf-ctl 4<>/tmp/perf-ack 5<>/tmp/l2-ctl.in
# A guest kernel built without frame pointers (ORC) has its registers and
# a copy of its stack taken with every sample of the whole window, up to
# the bytes in $guest/stack (scripts/mkinitramfs.sh), for perf to unwind
# with the guest's ORC tables (tests/host/check_demo.sh).
stack=
if [ -r "$guest/stack" ]; then
	stack=--guest-stack=$(cat "$guest/stack")
	echo Y > /sys/module/kvm/parameters/guest_stack_copy || exit 1
	echo "demo: with the guest's registers and stack copies ($stack)"
fi
# shellcheck disable=SC2086
perf kvm --guest record -D -1 --control fifo:/tmp/perf-ctl,/tmp/perf-ack \
	-C 0 -g $stack -e "$event" ${freq:+-F $freq} -o /tmp/demo.data &
rec=$!
# Not left running into the next scenario if this one fails.
trap 'kill -INT $rec 2>/dev/null; wait $rec' EXIT
echo ping >&3
read -t 60 -r _ <&4 || { echo "demo: perf kvm record did not start"; exit 1; }
l2_wait $qemu /tmp/l2.log "get ready to record itself" 60 'L2: self-record ready' 0.1
echo go >&5
l2_wait $qemu /tmp/l2.log "start recording itself" 60 'L2: self-record window open' 0.1
# The guest's exits to L1 in the window (KVM's statistics).
exits=$(echo /sys/kernel/debug/kvm/$qemu-*/exits)
for cmd in enable disable; do
	echo $cmd >&3
	read -t 30 -r _ <&4 || { echo "demo: perf kvm record did not ack '$cmd'"; exit 1; }
	[ $cmd = disable ] || { exits0=$(cat "$exits"); sleep "$window"; }
done
echo "demo: the guest's exits to L1 in the window: $(( $(cat "$exits") - exits0 ))"
echo close >&5
l2_wait $qemu /tmp/l2.log "end its recording" 60 'L2: self-record window closed' 0.1
kill -INT $rec
wait $rec
rc=$?	# perf record ends by raising the SIGINT it caught: 130
trap - EXIT
[ $rc = 0 ] || [ $rc = 130 ] || { echo "demo: perf kvm record failed ($rc)"; exit 1; }
[ -z "$stack" ] || echo N > /sys/module/kvm/parameters/guest_stack_copy
l2_wait $qemu /tmp/l2.log "save its own recording" 60 'L2: self-record saved'
size=$(tr -d '\r' < /tmp/l2.log |
	sed -n 's/^L2: self-record saved (\([0-9]*\) bytes)/\1/p')
head -c "$size" /tmp/l2-disk.img > "$out.self.data"
echo "demo: the guest's own recording: $size bytes"
# The guest's registers and copies of its stack with each sample ('perf
# record --guest-stack', for guests built without frame pointers), on x86
# hosts, whose KVM provides them: 4 s (the i386 guest's copies run to the
# limit, 32 KiB a sample: 10 s of them, 231 MB, took the VM 4 minutes to
# write once, past the scenario's limit), with a limit above the two 16 KiB
# stacks (an IRQ stack and the one it interrupted) a Linux guest's copy can
# span, so that each copy ends where the guest's stacks do
# (tests/host/check_stack_copy.py).  Not for a guest whose main recording
# has them ($guest/stack).
if [ "$(uname -m)" = x86_64 ] && [ -z "$stack" ]; then
	echo Y > /sys/module/kvm/parameters/guest_stack_copy || exit 1
	perf kvm --guest record -C 0 -g --guest-stack=32768 -e "$event" -o /tmp/stack.data \
		-- sleep 4 > /tmp/stack.log 2>&1 ||
		{ echo "demo: perf kvm record --guest-stack failed:"; cat /tmp/stack.log; }
	echo N > /sys/module/kvm/parameters/guest_stack_copy
	cp /tmp/stack.data "$out.stack.data"
fi
# The same guest in 'perf kvm top', live, with the guest's System.map (or
# kallsyms) as its kallsyms: the stdio profile every 5 s, for 20 s (30 s on
# arm64, where it once printed only 2 profiles in 20 s, with Debian's
# guest in make test), stopped by SIGINT, callchains (-g) shown down to
# 0.05 % (stdin: a pipe that stays open, no key is read).
# If it crashes, its core goes to $out.core, for gdb on the host
# (check_demo.py); the backtrace its signal handler prints to its
# buffered stdout is lost.
# (The arm64 host kernel has no core dumps.)
[ -w /proc/sys/kernel/core_pattern ] && echo "$out.core" > /proc/sys/kernel/core_pattern
top_secs=20
[ "$(uname -m)" = aarch64 ] && top_secs=30
# One thread synthesizes the existing tasks (--num-thread-synthesize=1):
# with two, perf top once crashed in qsort_r() under dsos__find(), called
# from one synthesizing thread while another created a thread (README).
sleep $((top_secs + 2)) | (ulimit -c unlimited && exec timeout -s INT $top_secs perf kvm --guest \
	--guestkallsyms="$syms" top -C 0 -e "$event" --num-thread-synthesize=1 \
	--call-graph fp,graph,0.05,callee --stdio --no-children -s dso,sym -d 5 -E 100 \
	> "$out.top" 2>&1)
echo "demo: perf kvm top exited with $?"
kill $qemu
wait $qemu
echo "demo: L2 console:"
cat /tmp/l2.log
cp /tmp/demo.data "$out.data"
