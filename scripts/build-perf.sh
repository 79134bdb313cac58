#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build tools/perf from build/linux.
#   build-perf.sh: build/perf/perf, a lean binary (libelf, libdw,
#	libtraceevent, and libpython for perf's flamegraph script on the
#	host), used both inside the VM and on the host for report/script;
#   build-perf.sh --guest <arch>: build/perf-<arch>/perf, a static binary
#	with no libraries for a demo guest (L2) of <arch> to record itself
#	(perf record, perf report -D), and for the arm64 VMs (L1) to record
#	their guests; the host reads its recordings.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
no=(NO_LIBPERL=1 NO_LIBLLVM=1 NO_CAPSTONE=1 NO_LIBPFM4=1 NO_SLANG=1
	NO_LIBBPF=1 NO_LIBNUMA=1 NO_JVMTI=1 NO_LIBCRYPTO=1 NO_LIBBABELTRACE=1
	NO_LIBUNWIND=1 NO_LIBAUDIT=1 NO_GTK2=1 NO_SDT=1 NO_LIBCAP=1 NO_LZMA=1 NO_ZSTD=1
	NO_BPF_SKEL=1 NO_SHELLCHECK=1)
if [ "${1:-}" = --guest ]; then
	arch_load "$2"
	out=$top/build/perf-$arch
	cc=$arch_user_cc
	args=("${arch_make[@]}" "${no[@]}" NO_LIBELF=1 NO_LIBTRACEEVENT=1 NO_LIBPYTHON=1
		NO_ZLIB=1 NO_LIBDEBUGINFOD=1 NO_DEMANGLE=1 LDFLAGS=-static)
	# perf links its objects with ld -r: the architecture's own ld.
	[ -z "$arch_user_cross" ] || args+=(CROSS_COMPILE="$arch_user_cross")
else
	out=$top/build/perf
	cc=gcc
	args=(PYTHON=/usr/bin/python3 PYTHON_CONFIG=/usr/bin/python3-config "${no[@]}")
fi
# perf's incremental build misses some changes of the headers in tools/include
# (one to perf_event.h's struct perf_event_attr left a perf that crashed in
# its first evsel function): build afresh when they changed (ccache keeps it
# short).
hdrs=$(git -C "$tree" rev-parse HEAD:tools/include)
[ "$(cat "$out/.wb-headers" 2>/dev/null)" = "$hdrs" ] || rm -rf "$out"
mkdir -p "$out"
echo "$hdrs" > "$out/.wb-headers"
make -s -C "$top/build/linux/tools/perf" O="$out" CC="ccache $cc" -j"$(nproc)" \
	"${args[@]}" perf > "$out/build.log" 2>&1 \
	|| { tail -30 "$out/build.log"; echo "perf: build FAILED ($out/build.log)" >&2; exit 1; }
echo "perf: $out/perf ($(file -b "$out/perf" | cut -d, -f1-2))"
