#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build tools/perf from build/linux: a lean binary (libelf, libdw,
# libtraceevent, and libpython for perf's flamegraph script on the host),
# used both inside the VM and on the host for report/script.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
out=$top/build/perf
mkdir -p "$out"
make -s -C "$top/build/linux/tools/perf" O="$out" CC="$host_cc" -j"$(nproc)" \
	PYTHON=/usr/bin/python3 PYTHON_CONFIG=/usr/bin/python3-config NO_LIBPERL=1 NO_LIBLLVM=1 NO_CAPSTONE=1 NO_LIBPFM4=1 NO_SLANG=1 \
	NO_LIBBPF=1 NO_LIBNUMA=1 NO_JVMTI=1 NO_LIBCRYPTO=1 NO_LIBBABELTRACE=1 \
	NO_LIBUNWIND=1 NO_LIBAUDIT=1 NO_GTK2=1 NO_SDT=1 NO_LIBCAP=1 NO_LZMA=1 NO_ZSTD=1 \
	NO_BPF_SKEL=1 NO_SHELLCHECK=1 perf > "$out/build.log" 2>&1 \
	|| { tail -30 "$out/build.log"; echo "perf: build FAILED" >&2; exit 1; }
echo "perf: $out/perf ($("$out/perf" version))"
