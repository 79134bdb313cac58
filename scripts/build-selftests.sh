#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build the KVM selftests this workbench runs, plus its own guest programs
# (tests/guest/*.c and tests/guest/*/, see tests/guest/selftests.mk), from
# build/linux with the selftests library.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
out=$top/build/selftests
hdr=$top/build/headers
# Stock tests known to pass under nested TCG (see ../shared/background.md),
# plus every test the series adds (listed in tests/selftests.list).
mapfile -t tests < <(grep -v '^#' "$top/tests/selftests.list" | awk 'NF { print $1 }')
make -s -C "$tree" O="$top/build/obj-headers" headers_install INSTALL_HDR_PATH="$hdr" >/dev/null
targets=()
for t in "${tests[@]}"; do targets+=("$out/$t"); done
make -s -C "$tree/tools/testing/selftests/kvm" -f Makefile -f "$top/tests/guest/selftests.mk" \
	CC="$host_cc" OUTPUT="$out" KHDR_INCLUDES="-isystem $hdr/include" \
	${EXTRA_CFLAGS:+EXTRA_CFLAGS="$EXTRA_CFLAGS"} \
	-j"$(nproc)" "${targets[@]}" wb-progs
echo "selftests: ${#tests[@]} KVM selftests and $(find "$out/wb" -type f -perm -u+x | wc -l) guest program(s) in $out"
