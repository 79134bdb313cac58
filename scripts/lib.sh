# SPDX-License-Identifier: GPL-2.0
# Sourced by every workbench script: where things are, and the build
# environment shared by every compiler run.
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tree=$top/build/linux
# ccache: the cache lives outside the checkout (CI's clone and a fresh root
# reach the same one), and paths under the checkout are hashed relative to
# it, so a clone in another folder hits the entries a developer's made.
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/perf-kvm-ccache}
export CCACHE_BASEDIR=$top CCACHE_NOHASHDIR=1
export KBUILD_BUILD_TIMESTAMP="2000-01-01" KBUILD_BUILD_USER=workbench KBUILD_BUILD_HOST=workbench
# Large enough for every kernel the workbench builds (the default 5 GB is not).
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-25G}

# ccache_counts: "<hits> <misses>" of the cache until now.
ccache_counts() {
	ccache --print-stats 2>/dev/null | awk -F'\t' '
		$1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" { h += $2 }
		$1 == "cache_miss" { m = $2 }
		END { print h + 0, m + 0 }'
}
# ccache_since <hits> <misses>: the hits and misses since ccache_counts said so.
ccache_since() {
	local now
	read -r -a now <<< "$(ccache_counts)"
	awk -v h=$(( now[0] - $1 )) -v m=$(( now[1] - $2 )) 'BEGIN {
		printf "ccache: %d hits, %d misses", h, m
		if (h + m) printf " (%.1f %% hits)", 100 * h / (h + m)
		printf "\n" }'
}

# series_format_patch <dir>: base..HEAD of build/linux as patch files in
# <dir>, byte-identical for unchanged commits: export.sh writes patches/
# with it, tree.sh compares the tree with patches/ through it.
series_format_patch() {
	git -C "$tree" -c core.abbrev=12 -c diff.noprefix=false -c format.signature= \
		format-patch --quiet --numbered --zero-commit --no-signature --no-renames \
		-o "$1" base..HEAD
}

# The compiler of the programs built for the machine itself (perf, the KVM
# selftests).
host_cc="ccache gcc"

# arch_load <arch>: read the architecture's record, scripts/arch/<arch>.sh,
# one small file per architecture.  Its fields:
#   arch_make       make arguments that select it (ARCH=, CROSS_COMPILE=)
#   arch_cc         its kernel's C compiler (run through ccache)
#   arch_image      the boot image, relative to a kernel's object directory
#   arch_user_cc    the compiler of static programs for its guests
#   arch_user_cross the prefix of its binutils (ld, ar, strip) for them, if
#                   the host's do not build them
#   arch_gate_dirs  the directories the gate builds for it
# and, for an architecture the test VM runs on: arch_qemu, arch_machine
# (QEMU's machine options), arch_smp <cpus>, arch_console, arch_append (its
# kernel command line); for one Bochs runs (the Bochs VM, vmx): arch_bochs_cpu
# (its CPU model), arch_bochs_ips (its instructions per emulated second),
# arch_bochs_append (its kernel command line), arch_bochs_freq (the sample
# rate of its recordings, for the scenarios that choose one).  Sets arch (the name) and
# arch_kmake, the make arguments of a kernel build for it.
arch_load() {
	local f=$top/scripts/arch/$1.sh
	if [ ! -f "$f" ]; then
		echo "arch: no record $f; there are: $(cd "$top/scripts/arch" && ls | sed 's/\.sh$//' | tr '\n' ' ')" >&2
		return 1
	fi
	unset -f arch_smp arch_append arch_bochs_append
	arch_make=() arch_machine=()
	arch_cc='' arch_image='' arch_user_cc='' arch_user_cross='' arch_gate_dirs='' arch_qemu=''
	arch_console=''
	arch_bochs_cpu='' arch_bochs_ips='' arch_bochs_freq=''
	# shellcheck source=scripts/arch/x86_64.sh
	. "$f"
	arch=$1
	arch_kmake=("${arch_make[@]}" CC="ccache $arch_cc")
}

# A kernel build <name> lives in build/obj-<name>; config.sh records its
# architecture there.
# obj_of <name>, arch_of <name>, image_of <name>, sysmap_of <name>
obj_of() { echo "$top/build/obj-$1"; }
arch_of() {
	cat "$top/build/obj-$1/wb-arch" 2>/dev/null ||
		{ echo "arch: build/obj-$1 has no wb-arch: not configured by scripts/config.sh" >&2; return 1; }
}
image_of() { local a; a=$(arch_of "$1") && (arch_load "$a" && echo "$top/build/obj-$1/$arch_image"); }
sysmap_of() { echo "$top/build/obj-$1/System.map"; }
# selftests_of <arm64|x86>: the paths of tests/selftests.list's tests that
# run on that architecture's KVM hosts: the aarch64/ ones on arm64, the
# others on x86 (tests/vm/selftests.sh and tests/host/check_selftests.sh
# apply the same rule to the list as the VM has it).
selftests_of() {
	grep -v '^#' "$top/tests/selftests.list" |
		awk -v arm64="$([ "$1" = arm64 ] && echo 1 || echo 0)" 'NF && ($1 ~ /^aarch64\//) == arm64 { print $1 }'
}

# perf_flamegraph <perf.data> <outdir> <perf arguments...>: perf's own
# flame graph script (with the d3-flame-graph template from npm) and its
# stackcollapse script on a guest recording: <outdir>/flamegraph.html and
# <outdir>/stacks.folded; their messages in <outdir>/flamegraph.err.  The
# arguments say how perf reads it, up to '-i <perf.data> script', e.g.
# 'kvm --guest --guestvmlinux=<vmlinux>'.
perf_flamegraph() (
	set -euo pipefail
	local data out perf=$top/build/perf/perf work
	local scripts=$top/build/linux/tools/perf/scripts/python
	local template=$top/node_modules/d3-flame-graph/dist/templates/d3-flamegraph-base.html
	data=$(realpath "$1") out=$(realpath -m "$2")
	shift 2
	mkdir -p "$out"
	[ -f "$template" ] || (cd "$top" && npm install --no-audit --no-fund --silent) ||
		{ echo "flamegraph: npm install of package.json (d3-flame-graph) FAILED" >&2; exit 1; }
	export PERF_EXEC_PATH=$top/build/linux/tools/perf
	# flamegraph.py puts 'perf report --header-only' in the page, run from
	# the current directory on the default file name: give it this perf as
	# 'perf' and the recording as ./perf.data.
	export PATH=$top/build/perf:$PATH
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
	ln -s "$data" "$work/perf.data"
	cd "$work"
	"$perf" "$@" -i "$data" script -s "$scripts/flamegraph.py" \
		-- --template "$template" -o "$out/flamegraph.html" 2> "$out/flamegraph.err" ||
		{ cat "$out/flamegraph.err"; exit 1; }
	"$perf" "$@" -i "$data" script -s "$scripts/stackcollapse.py" \
		> "$out/stacks.folded" 2>> "$out/flamegraph.err"
	echo "flamegraph: $out/flamegraph.html ($(du -h "$out/flamegraph.html" | cut -f1)), $out/stacks.folded ($(wc -l < "$out/stacks.folded") stacks)"
)

# run_vms <kernel> <limit> <results dir> <vms>: boot the VMs all at once
# (each QEMU is one thread, so one core each), one per line of <vms>,
# "<name> <scenario,...>", each with its kernel and initramfs (vm_boot);
# each runs its scenarios within <limit> seconds, leaves its results in
# <results dir>/<name> and prefixes its output with its name.  Fails if
# any of them failed.
run_vms() {
	local vm list boot pids=() p rc=0
	while read -r vm list; do
		[ -n "$vm" ] || continue
		read -r -a boot <<< "$(vm_boot "$vm" "$1")"
		( WB_MACHINE=$(machine_of "$vm") WB_APPEND="${boot[*]:2}" \
			"$top/scripts/run-vm.sh" "${boot[0]}" "${boot[1]}" "$3/$vm" "$2" "$list" 2>&1 |
			sed -u "s/^/$vm: /" ) &
		pids+=($!)
	done <<< "$4"
	for p in "${pids[@]}"; do wait "$p" || rc=1; done
	return $rc
}

# perf_dump <perf.data> <dump>: the raw records of a recording made in a
# VM, dumped here by 'perf report -D' (it prints the records and no
# symbols, which this machine would get wrong), for tests/host/perfdump.py;
# without the hex dump of each record, which nothing reads and which, with
# guest stack copies in every sample, runs to gigabytes.
perf_dump() {
	# Its messages apart (<dump>.err): in the dump, they broke lines
	# ("No kallsyms or vmlinux with build-id ..." in a sample's line).
	local st
	"$top/build/perf/perf" report -D -i "$1" 2> "$2.err" |
		grep -v '^\.  [0-9a-f]\{4\}:  ' > "$2" && st=("${PIPESTATUS[@]}") || st=("${PIPESTATUS[@]}")
	[ "${st[0]}" = 0 ] ||
		{ echo "perf_dump: perf report -D -i $1 failed:" >&2; tail -5 "$2.err" >&2; return 1; }
}

# guest_inject <results dir> <scenario> <guest build> <guest program>:
# merge the guest's own recording (<scenario>.self.data) into the host's
# (<scenario>.data) with 'perf inject --guest-data', as <scenario>.inj.data,
# so that perf gives the host's samples of the guest to the guest's tasks;
# <scenario>.guest (tests/vm/demo.sh) holds QEMU's PID and the vCPU's TSC
# offset and scale.  What perf needs to name the guest's code, as a user
# would provide it: the guest program in a build-ID cache, and the guest's
# kallsyms (its System.map) under a guest mount, <dir>/<QEMU PID>/proc/.
# Sets gi_perf, perf with that build-ID cache, and gi_mount, the guest
# mount for its --guestmount.
guest_inject() {
	local res name=$2 pid off scale
	# perf's --buildid-dir must be absolute: with a relative one, the
	# build-ID cache stayed empty.
	res=$(realpath "$1")
	read -r pid off scale < "$res/$name.guest" ||
		{ echo "guest_inject: no $res/$name.guest" >&2; return 1; }
	rm -rf "$res/$name.buildid" "$res/$name.guestmount"
	mkdir -p "$res/$name.guestmount/$pid/proc"
	# A guest kernel with KASLR on is not where its System.map says: the
	# kallsyms it handed over (tests/vm/demo.sh) say where it is.
	if [ -s "$res/$name.kallsyms" ]; then
		cp "$res/$name.kallsyms" "$res/$name.guestmount/$pid/proc/kallsyms"
	else
		cp "$(sysmap_of "$3")" "$res/$name.guestmount/$pid/proc/kallsyms"
	fi
	: > "$res/$name.guestmount/$pid/proc/modules"
	gi_perf=("$top/build/perf/perf" --buildid-dir "$res/$name.buildid")
	"${gi_perf[@]}" buildid-cache -a "$4" &&
		"${gi_perf[@]}" inject -i "$res/$name.data" -o "$res/$name.inj.data" \
			--guest-data="$res/$name.self.data,$pid,$off,$scale" ||
		{ echo "guest_inject: perf inject --guest-data failed" >&2; return 1; }
	gi_mount=$res/$name.guestmount
}

# orc_of <vmlinux>: true if the guest kernel <vmlinux> has ORC unwind tables
# (built with CONFIG_UNWINDER_ORC, without frame pointers): its call stacks
# are unwound by perf from the stack copies recorded with its samples
# (perf kvm --guest-orc), not walked by the host.
orc_of() {
	readelf -SW "$1" 2>/dev/null | grep -q ' \.orc_unwind '
}

# scenarios_of <command>: the scenarios of tests/scenarios.list that this
# command (test, demo, bench) runs, comma-separated.
scenarios_of() {
	awk -v c="$1" '!/^#/ && NF >= 3 && ("," $3 ",") ~ ("," c ",") { printf "%s%s", n++ ? "," : "", $1 }
		END { print "" }' "$top/tests/scenarios.list"
}
# vms_of <command>: the same scenarios grouped by the test VM that runs
# them (the list's vm column), one line per VM: "vm<N> <scenario,...>",
# "vmx <scenario,...>" for the Bochs VM, "arm64..." for the arm64 ones.
vms_of() {
	awk -v c="$1" '!/^#/ && NF >= 4 && ("," $3 ",") ~ ("," c ",") {
			vm = $4 ~ /^[0-9]+$/ ? "vm" $4 : $4
			if (!(vm in list)) order[n++] = vm
			list[vm] = list[vm] (list[vm] == "" ? "" : ",") $1 }
		END { for (i = 0; i < n; i++) print order[i], list[order[i]] }' "$top/tests/scenarios.list"
}
# machine_of <vm>: the emulator of a test VM: bochs for vmx (an Intel CPU
# with VMX), qemu for the others (TCG's AMD CPU with SVM, or for arm64...
# its arm64 CPU with EL2 and PMUv3).
machine_of() {
	case $1 in
	vmx) echo bochs ;;
	*) echo qemu ;;
	esac
}
# vm_boot <vm> <kernel>: the kernel build, initramfs and extra kernel
# command line of a test VM, as "<kernel> <initramfs> [<option>...]":
# <kernel> for the x86 VMs, with the demo's guests except under Bochs (it
# does not run them); the arm64 host kernel and its initramfs for the arm64
# VMs (its QEMU and arm64 guests for the demo), arm64-nmi, and make demo's
# demo-arm64 as make test's arm64-nmi, with pseudo-NMIs for the PMU
# interrupt (make demo's demo-arm64-debian has it an IRQ, as make test's
# arm64 VM, which runs that scenario).
vm_boot() {
	case $1 in
	vmx) echo "$2 $top/build/initramfs.cpio.gz" ;;
	arm64) echo "host-arm64 $top/build/initramfs-arm64.cpio.gz" ;;
	arm64-nmi) echo "host-arm64 $top/build/initramfs-arm64.cpio.gz irqchip.gicv3_pseudo_nmi=1" ;;
	demo-arm64) echo "host-arm64 $top/build/initramfs-arm64.cpio.gz irqchip.gicv3_pseudo_nmi=1" ;;
	demo-arm64-debian) echo "host-arm64 $top/build/initramfs-arm64.cpio.gz" ;;
	*) echo "$2 $top/build/initramfs-demo.cpio.gz" ;;
	esac
}
