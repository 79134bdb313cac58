#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Boot the test VM (the L1 KVM host) and run scenarios in it, under QEMU TCG
# (an AMD CPU with SVM), or with WB_MACHINE=bochs under Bochs (an Intel CPU
# with VMX).
# usage: run-vm.sh <kernel> <initramfs> <outdir> <timeout-seconds> <scenario,...>
# <outdir>'s name is the VM's (tests/scenarios.list); $WB_APPEND is added to
# its kernel command line.
# <kernel> is the name of a kernel build (build/obj-<kernel>); the emulator's
# options come from that build's architecture record (scripts/arch/).
# The console goes to <outdir>/console.log; results land in <outdir>: over
# 9p from QEMU; from Bochs, which has neither 9p nor a -kernel loader (it
# boots a GRUB CD image), as a tar on its second serial port, unpacked here.
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
machine=${WB_MACHINE:-qemu}
kernel=$(image_of "$kname")
arch_load "$(arch_of "$kname")"
case $machine in
qemu) [ -n "$arch_qemu" ] || { echo "vm: scripts/arch/$arch.sh says no QEMU: the test VM does not run on $arch" >&2; exit 1; } ;;
bochs) [ -n "$arch_bochs_cpu" ] || { echo "vm: scripts/arch/$arch.sh says no Bochs CPU: no Bochs VM on $arch" >&2; exit 1; } ;;
*) echo "vm: unknown WB_MACHINE=$machine (qemu or bochs)" >&2; exit 1 ;;
esac
stall=${WB_STALL:-100}
# The VM's CPUs: two under QEMU, so that the hostile scenario's racing
# vCPUs really run in parallel (check_vm.sh asserts that L1 brought both
# up); one under Bochs, which runs its CPUs in one thread.
cpus=${WB_CPUS:-2}
[ "$machine" = bochs ] && cpus=1
mkdir -p "$out"
rm -rf "${out:?}"/*
mon=$(mktemp -d)
trap 'kill $vm 2>/dev/null || true; rm -rf "$mon"' EXIT
vm=
declare -A limit_of own
# A scenario's limit in this VM's row (tests/scenarios.list), or, for a VM
# the list does not name (make bench's), in a row of its emulator.
vmname=$(basename "$out")
while read -r name secs _ which _; do
	case $which in [0-9]*) which=vm$which ;; esac
	if [ "$which" = "$vmname" ]; then
		limit_of[$name]=$secs own[$name]=1
	elif [ -z "${own[$name]:-}" ] && [ "$(machine_of "${which:--}")" = "$machine" ]; then
		limit_of[$name]=$secs
	fi
done < <(grep -v '^#' "$top/tests/scenarios.list")
for s in ${run//,/ }; do
	[ -n "${limit_of[$s]:-}" ] || { echo "vm: scenario '$s' has no $machine row in tests/scenarios.list" >&2; exit 1; }
done
rc=0
echo "$cpus" > "$out/cpus.wanted"
if [ "$machine" = qemu ]; then
	# shellcheck disable=SC2046
	"$arch_qemu" "${arch_machine[@]}" $(arch_smp "$cpus") \
		-display none -monitor unix:"$mon/monitor",server,nowait -nic none \
		-serial file:"$out/console.log" -no-reboot \
		-kernel "$kernel" -initrd "$initrd" \
		-virtfs local,path="$out",mount_tag=wbout,security_model=none,id=wbout \
		-append "console=$arch_console panic=-1 $(arch_append) ${WB_APPEND:+$WB_APPEND }wb.machine=qemu wb.vm=$(basename "$out") wb.run=$run" \
		</dev/null &
else
	mkdir -p "$mon/iso/boot/grub"
	cp "$kernel" "$mon/iso/boot/kernel"
	cp "$initrd" "$mon/iso/boot/initrd"
	cat > "$mon/iso/boot/grub/grub.cfg" <<-EOF
	set timeout=0
	serial --unit=0 --speed=115200
	terminal_output serial
	menuentry wb {
		linux /boot/kernel console=ttyS0,115200 panic=-1 $(arch_bochs_append) wb.out=ttyS1 wb.beat=ttyS2 wb.machine=bochs wb.freq=$arch_bochs_freq wb.vm=$(basename "$out") wb.run=$run
		initrd /boot/initrd
	}
	EOF
	grub-mkrescue -o "$mon/boot.iso" "$mon/iso" > "$mon/grub-mkrescue.log" 2>&1 ||
		{ cat "$mon/grub-mkrescue.log" >&2; echo "vm: grub-mkrescue failed" >&2; exit 1; }
	# Headless: Debian's Bochs has no 'nogui' display; its VNC server
	# (rfb) with timeout=0 does not wait for a viewer.  Sound goes to
	# Bochs's dummy drivers: with ALSA's (the default, even with no sound
	# card), Bochs aborted at start, "*** buffer overflow detected ***" in
	# its sound mixer thread, in every run under 'make test' (and CI).
	# Its build starts in the debugger, which the command file continues.
	cat > "$mon/bochsrc" <<-EOF
	megs: 2048
	cpu: model=$arch_bochs_cpu, count=1, ips=$arch_bochs_ips, ignore_bad_msrs=1
	clock: sync=none, time0=local
	romimage: file=/usr/share/bochs/BIOS-bochs-latest
	vgaromimage: file=/usr/share/vgabios/vgabios.bin
	ata0-master: type=cdrom, path=$mon/boot.iso, status=inserted
	boot: cdrom
	com1: enabled=1, mode=file, dev=$out/console.log
	com2: enabled=1, mode=file, dev=$out/serial2
	com3: enabled=1, mode=file, dev=$out/serial3
	display_library: rfb, options="timeout=0"
	sound: waveoutdrv=dummy, waveindrv=dummy, midioutdrv=dummy
	log: $out/bochs.log
	panic: action=fatal
	EOF
	echo c > "$mon/debugger"
	bochs -q -f "$mon/bochsrc" -rc "$mon/debugger" > "$out/bochs.out" 2>&1 </dev/null &
fi
vm=$!
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
	[ "$machine" = qemu ] || bochs_results
	cur=$(running)
	echo "vm: $1; ${cur:+scenario ${cur% *} was running (since ${cur#* } s after boot); }console tail:" >&2
	tail -30 "$out/console.log" >&2
	"$top/tests/host/check_splats.sh" "$out/console.log" >&2 || true
	exit 1
}
progress() {	# the newest mtime of the console, the VM's heartbeat and (Bochs) its results port
	{ stat -c %Y "$out/console.log" "$out/heartbeat" "$out/serial2" 2>/dev/null || true; } | sort -n | tail -1
}
# Bochs: the heartbeat comes on the third serial port, and the machine
# does not stop at the reboot that ends /init (it boots again): it is done
# when the console says so, after the results went out.
bochs_heartbeat() {
	local hb
	hb=$({ tr -d '\r' 2>/dev/null < "$out/serial3" || true; } | tail -1)
	[ -z "$hb" ] || [ "$hb" = "$(cat "$out/heartbeat" 2>/dev/null)" ] || echo "$hb" > "$out/heartbeat"
}
# Done, or panicked (once the panic's report is complete).  Done is the
# console's last line and every results block complete on the second port,
# one per scenario and the VM's own: /init's write of the last block
# returns before the emulated UART has sent it, so the console can say
# done while it is still on its way (seen once: vmx lost its cpus, kvm and
# machine files).
bochs_done() {
	grep -q 'end Kernel panic' "$out/console.log" 2>/dev/null && return 0
	grep -q '^WB: all scenarios done' "$out/console.log" 2>/dev/null || return 1
	[ "$({ tr -d '\r' < "$out/serial2" || true; } 2>/dev/null | grep -c '^WB-RESULTS-END$')" -ge \
	  "$(( $(echo "${run//,/ }" | wc -w) + 1 ))" ]
}
# The results so far: each scenario's files, and at the end the VM's, each
# a gzipped tar in base64 between two marker lines (tests/vm/init).
bochs_results() {
	local n=0 block
	block=$(mktemp)
	while :; do
		n=$((n + 1))
		[ -f "$out/serial2" ] || break
		awk -v n=$n '{ sub(/\r$/, "") }
			/^WB-RESULTS-BEGIN$/ { i++; if (i == n) { on = 1; next } }
			/^WB-RESULTS-END$/ { if (on) { ok = 1; on = 0 } }
			on { print }
			END { exit !ok }' "$out/serial2" > "$block" || break
		base64 -d < "$block" | tar -xz -C "$out" ||
			echo "vm: results block $n on the second serial port does not unpack" >&2
	done
	rm -f "$block"
}
hung=
bail_at= bail_run=
while kill -0 $vm 2>/dev/null; do
	sleep 1
	if [ "$machine" = bochs ]; then
		bochs_heartbeat
		if bochs_done; then
			kill $vm 2>/dev/null || true
			wait $vm || true
			break
		fi
	fi
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
	echo "vm: HUNG: $hung, $(( $(date +%s) - start )) s after boot" >&2
	if [ "$machine" = qemu ]; then
		"$top/tests/host/vm_where.py" "$mon/monitor" "$(sysmap_of "$kname")" >&2 || true
	else
		echo "(Bochs has no monitor to ask where its CPU is; its log: $out/bochs.log)" >&2
	fi
	kill $vm 2>/dev/null || true
	wait $vm || true
	fail "stopped the VM"
fi
if [ "$machine" = qemu ] || ! bochs_done; then
	wait $vm || rc=$?
fi
[ "$machine" = qemu ] || bochs_done || tail -5 "$out/bochs.out" >&2
if [ $rc != 0 ] || grep -q 'Kernel panic' "$out/console.log"; then
	fail "$machine exited with $rc or the kernel panicked"
fi
if ! grep -q '^WB: all scenarios done' "$out/console.log"; then
	fail "the VM stopped before its scenarios finished"
fi
[ "$machine" = qemu ] || bochs_results
echo "vm: ran $run in $(( $(date +%s) - start )) s on $(cat "$out/cpus" 2>/dev/null || echo '?') CPU(s)"
