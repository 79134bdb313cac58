#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The demo, inside the L1 host: boot a real Linux guest (L2) with QEMU/KVM,
# record it from the host with 'perf kvm --guest record -g' while its
# workload runs, and save the recording ($1.data); then profile it live
# with 'perf kvm --guest top -g' ($1.top).  The host (outside the VM)
# dumps and judges them.
# $2: the directory of the guest's bzImage and initramfs (default /demo).
out=$1
guest=${2:-/demo}
khz=$(sed -n 's/.*tsc_early_khz=\([0-9]*\).*/\1/p' /proc/cmdline)
echo Y > /sys/module/kvm/parameters/guest_callchains || exit 1
start=$(date +%s)
rm -f /tmp/l2.log	# a previous guest's console would say it started
# L2 runs on the VM's CPU 0 and is recorded there: 'perf kvm record -a'
# would also record the idle CPU 1.  io_delay=none: when L2 drives the PIT
# as its clock event device, the port 0x80 write after each PIT access
# (an exit to L1 each) took a quarter of its kernel samples.
taskset -c 0 qemu-system-x86_64 -enable-kvm -cpu qemu64 -m 256M -smp 1 -nodefaults \
	-no-user-config -display none -monitor none -serial file:/tmp/l2.log \
	-no-reboot -kernel "$guest/bzImage" -initrd "$guest/initramfs.cpio.gz" \
	-append "console=ttyS0 panic=-1 nokaslr tsc_early_khz=$khz tsc=reliable no_timer_check io_delay=none quiet" &
qemu=$!
n=0
until grep -q 'L2: workload start' /tmp/l2.log 2>/dev/null; do
	n=$((n + 1))
	if [ $n -gt 120 ] || ! kill -0 $qemu 2>/dev/null; then
		echo "demo: L2 did not start its workload within 120 s; its console:"
		cat /tmp/l2.log
		kill $qemu 2>/dev/null	# not left running into the next scenario
		exit 1
	fi
	sleep 1
done
echo "demo: L2 booted and started its workload in $(( $(date +%s) - start )) s"
perf kvm --guest record -C 0 -g -e cpu-clock -o /tmp/demo.data -- sleep 8 || exit 1
# The same guest in 'perf kvm top', live, with the guest's System.map as
# its kallsyms: the stdio profile every 5 s, for 20 s, stopped by SIGINT,
# callchains (-g) shown down to 0.05 %
# (stdin: a pipe that stays open, no key is read).
sleep 22 | timeout -s INT 20 perf kvm --guest --guestkallsyms="$guest/System.map" \
	top -C 0 -e cpu-clock --call-graph fp,graph,0.05,callee --stdio --no-children \
	-s dso,sym -d 5 -E 100 > "$out.top" 2>&1
echo "demo: perf kvm top exited with $?"
kill $qemu
wait $qemu
echo "demo: L2 console:"
cat /tmp/l2.log
cp /tmp/demo.data "$out.data"
