#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Boot the test VM (the L1 KVM host) under QEMU TCG and run scenarios in it.
# usage: run-vm.sh <bzImage> <initramfs> <outdir> <timeout-seconds> <scenario,...>
# The console goes to <outdir>/console.log; results land in <outdir> over 9p.
# The VM is stopped, and reported with where its vCPUs are (QEMU's monitor
# and the kernel's System.map), when it makes no progress for $WB_STALL
# seconds (default 120: neither its console nor its heartbeat moved), when a
# scenario runs past its limit in tests/scenarios.list, or when it is still
# running after <timeout-seconds>.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
kernel=$1 initrd=$2 out=$3 limit=$4 run=$5
stall=${WB_STALL:-120}
# The VM's CPUs.  One by default: in the one run with two, the hostile
# scenario's second guest user-mode case hung the VM (vCPU 0 stayed in the
# nested guest's CPL3 spin loop and L1 never got it back; see the README).
cpus=${WB_CPUS:-1}
mkdir -p "$out"
rm -rf "${out:?}"/*
mon=$(mktemp -d)
trap 'kill $qemu 2>/dev/null || true; rm -rf "$mon"' EXIT
qemu=
declare -A limit_of
while read -r name secs _; do limit_of[$name]=$secs; done < <(grep -v '^#' "$top/tests/scenarios.list")
for s in ${run//,/ }; do
	[ -n "${limit_of[$s]:-}" ] || { echo "vm: scenario '$s' is not in tests/scenarios.list" >&2; exit 1; }
done
# Without a TSC frequency every KVM selftest aborts on KVM_GET_TSC_KHZ.
khz=$(awk -F: '/^cpu MHz/ { printf "%d", $2 * 1000; exit }' /proc/cpuinfo)
rc=0
# One core per socket: without ACPI, Linux finds CPUs in SeaBIOS's MP
# table, which lists only the first logical CPU of each package.
echo "$cpus" > "$out/cpus.wanted"
qemu-system-x86_64 -accel tcg -cpu max -smp "$cpus,sockets=$cpus,cores=1,threads=1" -m 4G \
	-display none -monitor unix:"$mon/monitor",server,nowait -nic none \
	-serial file:"$out/console.log" -no-reboot \
	-kernel "$kernel" -initrd "$initrd" \
	-virtfs local,path="$out",mount_tag=wbout,security_model=none,id=wbout \
	-append "console=ttyS0 panic=-1 nokaslr tsc_early_khz=$khz tsc=reliable wb.run=$run" \
	</dev/null &
qemu=$!
start=$(date +%s)
progress() {	# the newest mtime of the console and the VM's heartbeat
	{ stat -c %Y "$out/console.log" "$out/heartbeat" 2>/dev/null || true; } | sort -n | tail -1
}
hung=
while kill -0 $qemu 2>/dev/null; do
	sleep 1
	now=$(date +%s)
	last=$(progress)
	if [ $(( now - ${last:-$start} )) -gt "$stall" ]; then
		hung="no progress for $stall s (console and heartbeat still)"
	elif [ $(( now - start )) -gt "$limit" ]; then
		hung="no clean exit within $limit s"
	else
		cur=$(sed -n 's/^WB: scenario \([^ ]*\) start at \([0-9]*\)$/\1 \2/p' "$out/console.log" 2>/dev/null | tail -1)
		if [ -n "$cur" ] && ! grep -q "^WB: scenario ${cur% *} done" "$out/console.log"; then
			up=$(cut -d' ' -f1 "$out/heartbeat" 2>/dev/null || echo 0)
			[ $(( ${up%.*} - ${cur#* } )) -gt "${limit_of[${cur% *}]}" ] &&
				hung="scenario ${cur% *} still running after its limit of ${limit_of[${cur% *}]} s"
		fi
	fi
	[ -z "$hung" ] || break
done
if [ -n "$hung" ]; then
	echo "vm: HUNG: $hung, $(( $(date +%s) - start )) s after boot; vCPUs:" >&2
	"$top/tests/host/vm_where.py" "$mon/monitor" "$(sysmap_of "$kernel")" >&2 || true
	kill $qemu
	wait $qemu || true
	echo "vm: console tail:" >&2
	tail -30 "$out/console.log" >&2
	exit 1
fi
wait $qemu || rc=$?
if [ $rc != 0 ] || grep -q 'Kernel panic' "$out/console.log"; then
	echo "vm: QEMU exited with $rc or the kernel panicked; console tail:" >&2
	tail -30 "$out/console.log" >&2
	exit 1
fi
if ! grep -q '^WB: all scenarios done' "$out/console.log"; then
	echo "vm: the VM stopped before its scenarios finished; console tail:" >&2
	tail -30 "$out/console.log" >&2
	exit 1
fi
echo "vm: ran $run in $(( $(date +%s) - start )) s on $(cat "$out/cpus" 2>/dev/null || echo '?') CPU(s)"
