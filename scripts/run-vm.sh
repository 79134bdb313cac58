#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Boot the test VM (the L1 KVM host) under QEMU TCG and run scenarios in it.
# usage: run-vm.sh <kernel> <initramfs> <outdir> <timeout-seconds> <scenario,...>
# <kernel> is the name of a kernel build (build/obj-<kernel>); QEMU and its
# options come from that build's architecture record (scripts/arch/).
# The console goes to <outdir>/console.log; results land in <outdir> over 9p.
# The VM is stopped, and reported with where its vCPUs are (QEMU's monitor
# and the kernel's System.map), when it makes no progress for $WB_STALL
# seconds (default 100: neither its console nor its heartbeat, written
# every 5 s, moved), when a scenario runs past its limit in
# tests/scenarios.list, when a scenario has not ended 30 s after it bailed
# out (a TAP "Bail out!" on the console: its own watchdog found a hang, and
# the hung process may never exit), or when it is still running after
# <timeout-seconds>.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
kname=$1 initrd=$2 out=$3 limit=$4 run=$5
kernel=$(image_of "$kname")
arch_load "$(arch_of "$kname")"
[ -n "$arch_qemu" ] || { echo "vm: scripts/arch/$arch.sh says no QEMU: the test VM does not run on $arch" >&2; exit 1; }
stall=${WB_STALL:-100}
# The VM's CPUs: two, so that the hostile scenario's racing vCPUs really
# run in parallel (check_vm.sh asserts that L1 brought both up).
cpus=${WB_CPUS:-2}
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
rc=0
echo "$cpus" > "$out/cpus.wanted"
# shellcheck disable=SC2046
"$arch_qemu" "${arch_machine[@]}" $(arch_smp "$cpus") \
	-display none -monitor unix:"$mon/monitor",server,nowait -nic none \
	-serial file:"$out/console.log" -no-reboot \
	-kernel "$kernel" -initrd "$initrd" \
	-virtfs local,path="$out",mount_tag=wbout,security_model=none,id=wbout \
	-append "console=$arch_console panic=-1 $(arch_append) wb.run=$run" \
	</dev/null &
qemu=$!
start=$(date +%s)
running() {	# "<scenario> <start>" of the scenario that started last and is not done
	# The serial console ends its lines with CR LF.  A scenario may run
	# more than once: only a "done" after its last start counts.
	{ { tr -d '\r' < "$out/console.log"; } 2>/dev/null || true; } | awk '
		/^WB: scenario [^ ]+ start at [0-9]+$/ { name = $3; at = $6 }
		/^WB: scenario [^ ]+ done/ { if ($3 == name) name = "" }
		END { if (name != "") print name, at }'
}
# fail <why>: say why, which scenario was running, the console's first
# kernel report and its tail, and stop.
fail() {
	local cur
	cur=$(running)
	echo "vm: $1; ${cur:+scenario ${cur% *} was running (since ${cur#* } s after boot); }console tail:" >&2
	tail -30 "$out/console.log" >&2
	"$top/tests/host/check_splats.sh" "$out/console.log" >&2 || true
	exit 1
}
progress() {	# the newest mtime of the console and the VM's heartbeat
	{ stat -c %Y "$out/console.log" "$out/heartbeat" 2>/dev/null || true; } | sort -n | tail -1
}
hung=
bail_at= bail_run=
while kill -0 $qemu 2>/dev/null; do
	sleep 1
	now=$(date +%s)
	last=$(progress)
	if [ $(( now - ${last:-$start} )) -gt "$stall" ]; then
		hung="no progress for $stall s (console and heartbeat still)"
	elif [ $(( now - start )) -gt "$limit" ]; then
		hung="no clean exit within $limit s"
	elif [ -n "$bail_run" ] && [ $(( now - bail_at )) -gt 30 ] && [ "$(running)" = "$bail_run" ]; then
		hung="scenario ${bail_run% *} bailed out 30 s ago and has not ended: $bail"
	else
		# The TAP bail-out of a scenario's own watchdog: give the scenario
		# 30 s to end by itself (its hung process may never exit).
		if [ -z "$bail_at" ] && bail=$(grep -m1 -F 'Bail out!' "$out/console.log" 2>/dev/null | tr -d '\r'); then
			bail_at=$now
			bail_run=$(running)
		fi
		cur=$(running)
		if [ -n "$cur" ]; then
			up=$(cut -d' ' -f1 "$out/heartbeat" 2>/dev/null || echo 0)
			[ $(( ${up%.*} - ${cur#* } )) -gt "${limit_of[${cur% *}]}" ] &&
				hung="scenario ${cur% *} still running after its limit of ${limit_of[${cur% *}]} s"
		fi
	fi
	[ -z "$hung" ] || break
done
if [ -n "$hung" ]; then
	echo "vm: HUNG: $hung, $(( $(date +%s) - start )) s after boot; vCPUs:" >&2
	"$top/tests/host/vm_where.py" "$mon/monitor" "$(sysmap_of "$kname")" >&2 || true
	kill $qemu
	wait $qemu || true
	fail "stopped the VM"
fi
wait $qemu || rc=$?
if [ $rc != 0 ] || grep -q 'Kernel panic' "$out/console.log"; then
	fail "QEMU exited with $rc or the kernel panicked"
fi
if ! grep -q '^WB: all scenarios done' "$out/console.log"; then
	fail "the VM stopped before its scenarios finished"
fi
echo "vm: ran $run in $(( $(date +%s) - start )) s on $(cat "$out/cpus" 2>/dev/null || echo '?') CPU(s)"
