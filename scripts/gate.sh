#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The series gate, as the kernel's build robot would run it: the series
# applies to a pristine base, checkpatch --strict is clean, every prefix of
# the series builds the x86 host config (and those ending in a commit that
# touches arch/arm64/, the arm64 one), no new W=1 or sparse warning in the
# files it touches, and each build-only config builds with and without it
# with no new warning.  Prints TAP lines and a table; exits 1 if any check
# failed.
# Needs build/linux with the series committed (base..HEAD).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
log=$top/build/gate
mkdir -p "$log"
tip=$(git -C "$tree" rev-parse HEAD)
branch=$(git -C "$tree" symbolic-ref -q --short HEAD || echo "$tip")
trap 'git -C "$tree" -c advice.detachedHead=false checkout -q "$branch"' EXIT
pdir=${PATCHES:-$top/patches}
mapfile -t patches < <(ls "$pdir"/[0-9][0-9][0-9][0-9]-*.patch | grep -v '/0000-')

# A run whose inputs are all those of the last passing run proves nothing
# new: that run's results are printed again, and said to be (WB_GATE=1
# runs the gate anyway).  The inputs: the tree of base and of every commit
# of the series, the patch files, the gate's scripts, configurations and
# architecture records, the workbench's guest programs (built with the
# selftests in the bisect), and every installed package's version (the
# compilers, binutils, sparse, perf's libraries).
key=$({
	git -C "$tree" rev-parse 'base^{tree}'
	git -C "$tree" log --format=%T base.."$tip"
	cat "${patches[@]}" "$top"/configs/* "$top"/scripts/*.sh "$top"/scripts/arch/*.sh \
		"$top/tests/lib/tap.sh" "$top/tests/selftests.list"
	find "$top/tests/guest" -type f | LC_ALL=C sort | xargs cat
	dpkg-query -W -f '${Package} ${Version}\n'
} | sha256sum | cut -d' ' -f1)
if [ "${WB_GATE:-}" != 1 ] && [ -s "$log/run.out" ] && [ "$(cat "$log/pass.key" 2>/dev/null)" = "$key" ]; then
	echo "gate: inputs unchanged since the passing run of $(date -r "$log/pass.key" '+%F %T'); its results (WB_GATE=1 runs the gate again):"
	cat "$log/run.out"
	exit 0
fi
rm -f "$log/pass.key"
exec > >(tee "$log/run.out")
rows=()
row() { rows+=("$(printf '%-22s %-6s %-10s %s' "$1" "$2" "$3" "$4")"); }
. "$top/tests/lib/tap.sh"
pass() { tap_ok "gate: $*"; }
fail() { tap_not_ok "gate: $*"; }

# Warnings of a build log, without line and column numbers.
warnings() {
	grep -E '^[^ ]+:[0-9]+(:[0-9]+)?: (warning|error):' "$1" |
		sed -E 's/^([^ :]+):[0-9]+(:[0-9]+)?:/\1:/' | sed "s|$tree/||" | sort -u
}

# kmake <obj> <make args...>: build in build/linux, output to <obj>/gate.log.
kmake() {
	local obj=$1
	shift
	make -C "$tree" O="$obj" -j"$(nproc)" "$@" > "$obj/gate.log" 2>&1
}

checkout() { git -C "$tree" -c advice.detachedHead=false checkout -q "$1"; }

echo "gate: base is Debian linux-source-6.12 $(cat "$top/build/linux-source.version")," \
	"series of ${#patches[@]} patch(es)"

# 1. The series applies with git am to a pristine base.
wt=$(mktemp -d)
rmdir "$wt"
git -C "$tree" worktree add -q --detach "$wt" base
failed=
for p in "${patches[@]}"; do
	git -C "$wt" am -q "$p" >/dev/null 2>&1 || { failed=$(basename "$p"); break; }
done
git -C "$wt" am --abort >/dev/null 2>&1
git -C "$tree" worktree remove --force "$wt"
if [ -z "$failed" ]; then pass "the series applies to pristine base with git am"
else fail "$failed does not apply to pristine base"; fi

# 2. checkpatch --strict: no error, no warning; a CHECK is listed.  The one
# warning allowed is MAINTAINERS for new files an existing entry covers.
for p in "${patches[@]}"; do
	name=$(basename "$p")
	out=$(cd "$tree" && scripts/checkpatch.pl --strict --showfile --terse "$p" 2>/dev/null | grep -E ': (ERROR|WARNING|CHECK):')
	bad=$(echo "$out" | grep -E ': (ERROR|WARNING):' | grep -v 'does MAINTAINERS need updating')
	if echo "$out" | grep -q 'does MAINTAINERS need updating'; then
		for f in $(sed -n 's|^+++ b/||p' "$p"); do
			grep -q "^new file mode" <(sed -n "\|^diff --git a/$f |,/^+++/p" "$p") || continue
			entry=$(cd "$tree" && scripts/get_maintainer.pl --no-email --no-l --no-git --no-git-fallback \
				--no-rolestats --subsystem -f "$f" 2>/dev/null | grep -v "THE REST" | head -1)
			if [ -n "$entry" ]; then echo "gate: $name: new file $f is covered by MAINTAINERS entry '$entry'"
			else bad+=$'\n'"$f: new file not covered by any MAINTAINERS entry"; fi
		done
	fi
	echo "$out" | grep ': CHECK:' | sed "s/^/gate: $name: unfixed /"
	if [ -z "$(echo "$bad" | sed '/^$/d')" ]; then pass "checkpatch --strict $name"
	else fail "checkpatch --strict $name:"; echo "$bad" | sed '/^$/d; s/^/    /'; fi
done

# 3. Every prefix of the series on the host config, then the build-only
# configs with the series, each compared with base where it warns.
# The configurations are configs/gate.list, one line each, configured at
# base.
mapfile -t configs < <(grep -v '^#' "$top/configs/gate.list" | awk 'NF == 4 || NF == 5')
# gate_config <line>: name, obj and the make arguments (margs) of a gate
# configuration, its architecture loaded.
gate_config() {
	local compiler
	read -r name garch frag compiler gflags <<< "$1"
	arch_load "$garch" || return 1
	obj=$top/build/obj-gate-$name
	case $compiler in
	clang) margs=("${arch_make[@]}" LLVM=1 CC="ccache clang") ;;
	gcc) margs=("${arch_kmake[@]}") ;;
	*) echo "gate: $name: compiler '$compiler' is neither gcc nor clang" >&2; return 1 ;;
	esac
}

declare -A unusable	# configurations that could not be set up at base
checkout base
for c in "${configs[@]}"; do
	gate_config "$c" || { fail "${c%%[[:space:]]*}: configs/gate.list"; unusable[${c%%[[:space:]]*}]=1; continue; }
	"$top/scripts/config.sh" "$garch" "$obj" "$top/configs/gate-base.config" "$top/configs/$frag.config" \
		-- "${margs[@]}" > /dev/null || { fail "$name: config"; unusable[$name]=1; continue; }
done

# base_warnings: the warnings of base in the files where the series' build
# of the configuration warns (warnings.tip), into warnings.base.  Only there
# can a warning be new, so base is built only for those files: nothing if
# the series builds without a warning, the objects of the warned .c files,
# or the whole of arch_gate_dirs if a warning is in a header (any file
# including it may be the one).  With an empty ccache, building base in
# full for every configuration cost 654-705 s.  Leaves base checked out.
base_warnings() {
	local f targets=()
	: > "$obj/warnings.base"
	[ -s "$obj/warnings.tip" ] || return 0
	while read -r f; do
		case $f in
		*.c) [ -f "$tree/$f" ] && targets+=("${f%.c}.o") ;;
		*) targets=("$arch_gate_dirs") && break ;;
		esac
	done < <(cut -d: -f1 "$obj/warnings.tip" | sort -u)
	[ ${#targets[@]} != 0 ] || return 0
	checkout base
	# shellcheck disable=SC2068
	kmake "$obj" "${margs[@]}" ${targets[@]} || echo "gate: $name does not build at base"
	warnings "$obj/gate.log" > "$obj/warnings.base"
	echo "gate: $name: base built for the warned files: ${targets[*]}"
}

# Every prefix builds the host config; W=1 and sparse on the touched files.
# Every prefix whose last commit touches arch/arm64/ also builds the arm64
# VMs' host config, where make test's kernel-arm64 stage then finds the
# tip built.  Not the prefixes of generic commits: each is a tree state
# that ccache has nowhere else, and a generic header (perf_event.h,
# kvm_host.h) costs most of a full arm64 build, about 16 min with an empty
# cache; the arm64 build-only configurations build the generic changes at
# the tip.
host=$top/build/obj-host
host_arm64=$(obj_of host-arm64)
arch_load arm64
akmake=("${arch_kmake[@]}")
"$top/scripts/config.sh" arm64 "$host_arm64" "$top/configs/host-arm64.config" > /dev/null
arch_load x86_64
hkmake=("${arch_kmake[@]}")
"$top/scripts/config.sh" x86_64 "$host" "$top/configs/host.config" > /dev/null
mapfile -t cfiles < <(git -C "$tree" diff --name-only base.."$tip" -- '*.c' | grep -v '^tools/')
# The touched objects of an architecture: its arch/ directory's and the
# generic ones (arch_objs <srcarch>), or only its arch/ directory's
# (arch_objs <srcarch> --own).
arch_objs() {
	local f
	for f in "${cfiles[@]}"; do
		case $f in
		arch/"$1"/*) echo "${f%.c}.o" ;;
		arch/*) ;;
		*) [ "${2:-}" = --own ] || echo "${f%.c}.o" ;;
		esac
	done
}
mapfile -t objs < <(arch_objs x86)
# extra_warnings <obj> <make args...> -- <objects...>: W=1 + sparse on the
# objects that exist at this commit; their warnings.
extra_warnings() {
	local obj=$1 o present=() args=()
	shift
	while [ "$1" != -- ]; do args+=("$1"); shift; done
	shift
	for o in "$@"; do [ -f "$tree/${o%.o}.c" ] && present+=("$o") && rm -f "$obj/$o"; done
	: > "$obj/extra.log"
	[ ${#present[@]} = 0 ] ||
		make -C "$tree" O="$obj" "${args[@]}" W=1 C=2 -j"$(nproc)" "${present[@]}" > "$obj/extra.log" 2>&1
	warnings "$obj/extra.log"
}
extra() { extra_warnings "$host" "${hkmake[@]}" -- "${objs[@]}"; }
s=$(date +%s)
# Base itself is not built in full (with an empty ccache that is one more
# full build): the first prefix builds all of the config that differs, and
# a base that does not build fails there.  The reference for the warnings
# is base's build of the touched files, here.
extra > "$host/warnings.base"
bisect_ok=1
builds=0
for c in $(git -C "$tree" rev-list --reverse base.."$tip"); do
	checkout "$c"
	subj=$(git -C "$tree" log -1 --format=%s "$c")
	files=$(git -C "$tree" diff-tree --no-commit-id --name-only -r "$c")
	# Each commit builds what it touches: the kernel, perf, the KVM selftests.
	if echo "$files" | grep -qv '^tools/'; then
		builds=$((builds + 1))
		if ! kmake "$host" "${hkmake[@]}" vmlinux; then
			fail "bisect: the host config does not build with the series up to '$subj'"
			grep -E 'error' "$host/gate.log" | head -5 | sed 's/^/    /'
			bisect_ok=0
		fi
	fi
	if echo "$files" | grep -q '^arch/arm64/'; then
		builds=$((builds + 1))
		if ! kmake "$host_arm64" "${akmake[@]}" vmlinux; then
			fail "bisect: the arm64 host config does not build with the series up to '$subj'"
			grep -E 'error' "$host_arm64/gate.log" | head -5 | sed 's/^/    /'
			bisect_ok=0
		fi
	fi
	if echo "$files" | grep -q '^tools/perf/'; then
		builds=$((builds + 1))
		if ! "$top/scripts/build-perf.sh" > "$log/perf.log" 2>&1; then
			fail "bisect: perf (-Werror) does not build with the series up to '$subj'"
			tail -5 "$log/perf.log" | sed 's/^/    /'
			bisect_ok=0
		fi
	fi
	if echo "$files" | grep -q '^tools/testing/selftests/kvm/'; then
		builds=$((builds + 1))
		if ! WB_SERIES_PREFIX=1 EXTRA_CFLAGS=-Werror "$top/scripts/build-selftests.sh" > "$log/selftests.log" 2>&1; then
			fail "bisect: the KVM selftests (-Werror) do not build with the series up to '$subj'"
			tail -5 "$log/selftests.log" | sed 's/^/    /'
			bisect_ok=0
		fi
	fi
done
[ $bisect_ok = 1 ] && pass "bisect: every prefix of the series builds what it touches ($builds builds: x86 and arm64 host kernels, perf, selftests)"
extra > "$host/warnings.tip"
new=$(comm -13 "$host/warnings.base" "$host/warnings.tip")
if [ -z "$new" ]; then pass "host config: no new W=1 or sparse warning in ${#objs[@]} touched files"
else fail "host config: new W=1/sparse warnings:"; echo "$new" | sed 's/^/    /'; fi
row "x86_64 host (gcc)" "$([ $bisect_ok = 1 ] && [ -z "$new" ] && echo ok || echo FAIL)" \
	"$(echo "$new" | sed '/^$/d' | wc -l)" "$(( $(date +%s) - s )) s, ${#patches[@]} prefixes, W=1 C=2"

for c in "${configs[@]}"; do
	if [ -n "${unusable[${c%%[[:space:]]*}]:-}" ]; then
		row "${c%%[[:space:]]*}" FAIL - "not configured (see above)"
		continue
	fi
	gate_config "$c" || continue
	s=$(date +%s)
	# shellcheck disable=SC2086
	if kmake "$obj" "${margs[@]}" $arch_gate_dirs; then ok=ok; else ok=FAIL; fi
	warnings "$obj/gate.log" > "$obj/warnings.tip"
	t=$(( $(date +%s) - s ))
	s=$(date +%s)
	# W=1 and sparse on the touched files of its own arch/ directory.
	if [ "${gflags:-}" = extra ]; then
		case $garch in x86_64|i386) srcarch=x86 ;; *) srcarch=$garch ;; esac
		mapfile -t aobjs < <(arch_objs "$srcarch" --own)
		extra_warnings "$obj" "${margs[@]}" -- "${aobjs[@]}" >> "$obj/warnings.tip"
	fi
	base_warnings
	if [ "${gflags:-}" = extra ]; then
		checkout base
		extra_warnings "$obj" "${margs[@]}" -- "${aobjs[@]}" >> "$obj/warnings.base"
		sort -u -o "$obj/warnings.base" "$obj/warnings.base"
	fi
	checkout "$tip"
	sort -u -o "$obj/warnings.tip" "$obj/warnings.tip"
	new=$(comm -13 "$obj/warnings.base" "$obj/warnings.tip")
	[ -n "$new" ] && ok=FAIL
	if [ $ok = ok ]; then pass "$name builds with the series, no new warning"
	else
		fail "$name with the series:"
		{ echo "$new"; grep -E 'error' "$obj/gate.log" | head -5; } | sed '/^$/d; s/^/    /'
	fi
	row "$name" "$ok" "$(echo "$new" | sed '/^$/d' | wc -l)" \
		"$t s series + $(( $(date +%s) - s )) s base ($(wc -l < "$obj/warnings.tip") warning(s) to compare)"
done

echo "gate: config                 result new-warn   time"
printf 'gate: %s\n' "${rows[@]}"
[ $tap_failed = 0 ] || { echo "gate: $tap_failed check(s) FAILED" >&2; exit 1; }
echo "$key" > "$log/pass.key"
