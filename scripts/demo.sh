#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The README's demo command: build the patched KVM host (L1) and a Linux
# guest kernel (L2), boot L1 under QEMU, run L2 in it with QEMU/KVM and a
# workload, record L2 from L1 with 'perf kvm --guest record -g', and show
# where the guest spends its time, call stacks included, recorded and live
# ('perf kvm --guest top -g').  Then the same with
# a 32-bit (i386) build of the guest kernel: 32-bit paging and frames, and
# on an arm64 KVM host (L1, under QEMU's TCG) with an arm64 guest kernel
# (L2) under Debian's QEMU for arm64, recorded with the PMU's cycles.
# Output in out/: perf.data.guest, the guest's System.map and vmlinux, the
# flame graph, perf top's output, perf.data.guest-injected, the host's
# recording with the guest's own merged into it, and what perf needs to
# name guest code in it (guest-buildid/, guestmount/); the same for the
# 32-bit guest in out/i386/, for the guest kernel built without frame
# pointers (ORC), unwound by perf from stack copies, in out/orc/, for the
# arm64 guests in
# out/arm64/ and out/arm64-debian/ (Debian 12's own arm64 cloud kernel).
# usage: demo.sh [arm64]: with arm64 ('make demo-arm64'), the arm64 part
# alone.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$top"
step() {
	local name=$1 s=$(date +%s)
	shift
	echo "== demo: $name"
	"$@"
	echo "== demo: $name: $(( $(date +%s) - s )) s"
}
step "installing packages" scripts/deps.sh chromium
cc0=$(ccache_counts)
step "kernel tree with the series" scripts/tree.sh --if-needed
only=${1:-}	# arm64: the arm64 part alone
step "building perf" scripts/build-perf.sh
if [ "$only" != arm64 ]; then
step "building the KVM host kernel (L1)" scripts/build-kernel.sh x86_64 host configs/host.config
step "building the guest kernel (L2)" scripts/build-kernel.sh x86_64 guest configs/guest.config
step "building the 32-bit guest kernel (L2, i386)" \
	scripts/build-kernel.sh i386 guest-i386 configs/guest.config configs/guest-i386.config
step "building the guest kernel without frame pointers (L2, ORC)" \
	scripts/build-kernel.sh x86_64 guest-orc configs/guest.config configs/guest-orc.config
step "building the guests' own perf" scripts/build-perf.sh --guest x86_64
step "building the 32-bit guest's own perf" scripts/build-perf.sh --guest i386
step "building the selftests" scripts/build-selftests.sh
step "packing the guests' initramfs" scripts/mkinitramfs.sh build/l2.cpio.gz --guest
step "packing the 32-bit guest's initramfs" scripts/mkinitramfs.sh build/l2-i386.cpio.gz --guest-i386
step "packing the host's initramfs, with QEMU and the guests" scripts/mkinitramfs.sh \
	build/initramfs-demo.cpio.gz --l2 guest build/l2.cpio.gz guest-i386 build/l2-i386.cpio.gz guest-orc
fi
step "building the arm64 KVM host kernel (L1, arm64)" \
	scripts/build-kernel.sh arm64 host-arm64 configs/host-arm64.config
step "building the arm64 guest kernel (L2, arm64)" \
	scripts/build-kernel.sh arm64 guest-arm64 configs/guest-arm64.config
step "building perf for arm64" scripts/build-perf.sh --guest arm64
step "building the arm64 selftests" scripts/build-selftests.sh arm64
step "packing the arm64 guest's initramfs" scripts/mkinitramfs.sh build/l2-arm64.cpio.gz --guest-arm64
step "packing the arm64 host's initramfs, with Debian's QEMU for arm64 and the guest" \
	scripts/mkinitramfs.sh build/initramfs-arm64.cpio.gz --arm64 --l2 guest-arm64 build/l2-arm64.cpio.gz
rm -rf build/demo
# show <scenario> <guest build> <outdir> [<arch> [<tag>]]: resolve, report,
# draw.  A guest kernel not built here (Debian's, build/<guest build>/Image)
# comes with the kallsyms it handed over (<scenario>.kallsyms,
# tests/vm/demo.sh), as tests/host/check_demo.sh has it.
show() {
	local r=build/demo/$1
	sed 's/^/    /' "$r/$1.log"
	mkdir -p "$3"
	# perf's paths absolute: flamegraph.sh runs it in a directory of its own.
	local o map=$3/guest-System.map syms
	o=$(realpath "$3")
	cp "$r/$1.data" "$3/perf.data.guest"
	if [ -s "$r/$1.kallsyms" ]; then
		map=$3/guest-kallsyms
		cp "$r/$1.kallsyms" "$map"
		syms=(--guestkallsyms="$o/guest-kallsyms")
	else
		cp "$(sysmap_of "$2")" "$map"
		cp "$(obj_of "$2")/vmlinux" "$3/guest-vmlinux"
		syms=(--guestvmlinux="$o/guest-vmlinux")
	fi
	perf_dump "$r/$1.data" "$r/$1.D"
	# The guest's own recording (tests/vm/demo.sh).
	local self=$r/$1.self.D
	perf_dump "$r/$1.self.data" "$self"
	cp "$r/$1.self.data" "$3/perf.data.guest-own"
	# The vmlinux in its build: check_demo.py finds the i386 vDSO beside it;
	# for Debian's kernels, its Image or the ELF in its vmlinuz
	# (scripts/mkinitramfs.sh).
	local code orc=() orcs=()
	code=$(obj_of "$2")/vmlinux
	[ -e "build/$2/Image" ] && code=build/$2/Image
	[ -e "build/$2/vmlinux" ] && code=build/$2/vmlinux
	# A guest kernel without frame pointers: perf unwinds its call stacks
	# from the stack copies of every sample with its ORC tables
	# (tests/host/check_demo.sh).
	if orc_of "$code"; then
		cp "$code" "$3/guest-vmlinux"
		orcs=(--guest-orc="$o/guest-vmlinux")
		syms+=("${orcs[@]}")
		build/perf/perf kvm --guest "${syms[@]}" -i "$r/$1.data" script -F time,ip --ns \
			> "$r/$1.orc" 2> "$r/$1.orc.err"
		orc=(--orc-chains="$r/$1.orc")
	fi
	# check_demo.py's optional arguments: the architecture, and the tag.
	local opt=(${4:+"$4"})
	[ -n "${5:-}" ] && opt=("${4:-x86_64}" "$5")
	step "resolving the guest's call stacks ($1)" \
		tests/host/check_demo.py "${orc[@]}" "$r/$1.D" "$map" "$code" \
		"$r/$1.top" "$self" "${opt[@]}"
	cp "$r/$1.top" "$3/perf-kvm-top.txt"
	# How perf reads the guest recording: with the guest kernel's vmlinux;
	# where the guest recorded itself, the host's recording with the
	# guest's own merged into it, which names the guest's tasks and user
	# code (guest_inject in lib.sh; judged by check_guest_user.py).
	local data=$3/perf.data.guest args=(kvm --guest "${syms[@]}")
	local prog=build/l2-work${4:+-$4}
	if [ "${4:-}" = arm64 ]; then
		echo "== demo: the guest's own recording is not merged into the host's on arm64:" \
			"'perf inject --guest-data' needs the guest's clock on the host's, and KVM" \
			"does not show the vCPU's counter offset"
	else
		step "merging the guest's own recording into the host's ($1)" \
			guest_inject "$r" "$1" "$2" "$prog"
		rm -rf "$3/guest-buildid" "$3/guestmount"
		cp -r "$r/$1.buildid" "$3/guest-buildid"
		cp -r "$gi_mount" "$3/guestmount"
		cp "$r/$1.inj.data" "$3/perf.data.guest-injected"
		data=$3/perf.data.guest-injected
		args=(--buildid-dir "$o/guest-buildid" kvm --guest --guestmount="$o/guestmount" "${orcs[@]}")
		build/perf/perf "${args[@]}" -i "$data" script -F comm,tid,ip,sym,symoff,dso \
			> "$r/$1.inj.txt" 2>/dev/null
		step "naming the guest's user code ($1)" \
			tests/host/check_guest_user.py "$r/$1.inj.txt" "$prog" "$1"
		# Its registers and stack copies, for guests without frame
		# pointers (README, "Guests without frame pointers").
		# A guest kernel without frame pointers has them with every
		# sample, up to 16 KiB (tests/vm/demo.sh).
		if [ ${#orc[@]} = 0 ]; then
			perf_dump "$r/$1.stack.data" "$r/$1.stack.D"
			cp "$r/$1.stack.data" "$3/perf.data.guest-stack"
			step "the guest's registers and stack copies ($1)" \
				tests/host/check_stack_copy.py "$r/$1.stack.D" 32768 "$1" ${4:+"$4"}
		else
			step "the guest's registers and stack copies ($1)" \
				tests/host/check_stack_copy.py "$r/$1.D" 16384 "$1"
		fi
	fi
	echo "== demo: perf ${args[*]} -i $data report -g (top of it)"
	build/perf/perf "${args[@]}" -i "$data" \
		report -g caller,0.5,callee --stdio --percent-limit 3 2>/dev/null |
		grep -v '^$' | sed -n 1,60p
	step "drawing the flame graph ($1)" scripts/flamegraph.sh "$data" "$3" "${args[@]}"
}
# One host VM per guest, each with its results in build/demo/<scenario>/:
# the x86 ones side by side (one QEMU thread, so one core, each), shown,
# then the arm64 one.
vms=$(scenarios_of demo | tr , '\n' | sed 's/.*/& &/')
if [ "$only" != arm64 ]; then
	step "booting the host, running each guest and recording it (a host VM per guest)" \
		run_vms host 900 build/demo "$(grep -v arm64 <<< "$vms")"
	show demo guest out
	show demo-i386 guest-i386 out/i386 i386
	show demo-orc guest-orc out/orc "" "demo orc"
fi
step "booting the arm64 hosts, running their guests and recording them (a host VM per guest)" \
	run_vms host-arm64 900 build/demo "$(grep arm64 <<< "$vms")"
show demo-arm64 guest-arm64 out/arm64 arm64
show demo-arm64-debian debian-arm64 out/arm64-debian arm64 "demo arm64 debian"
echo "== demo: $(ccache_since $cc0)"
[ "$only" = arm64 ] || {
	echo "== demo: done: out/flamegraph.html, out/flamegraph.png, out/stacks.folded, out/perf.data.guest"
	echo "== demo: the 32-bit guest: out/i386/flamegraph.html, out/i386/flamegraph.png"
	echo "== demo: the guest kernel without frame pointers (ORC): out/orc/flamegraph.html, out/orc/flamegraph.png"
}
echo "== demo: the arm64 guest: out/arm64/flamegraph.html, out/arm64/flamegraph.png"
echo "== demo: Debian's arm64 kernel: out/arm64-debian/flamegraph.html, out/arm64-debian/flamegraph.png"
