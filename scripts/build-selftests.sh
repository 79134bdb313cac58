#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build the KVM selftests this workbench runs, plus its own guest programs
# (tests/guest/*.c and tests/guest/*/, see tests/guest/selftests.mk), from
# build/linux with the selftests library.
# usage: build-selftests.sh [arm64]
# With arm64: the aarch64/ tests of the list and the guest programs that
# are not x86's only (guest_spin, guest_hostile, guest_bench), cross-built
# and static
# (the arm64 VMs have no shared libraries), in build/selftests-arm64.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
# Stock tests known to pass under nested TCG (see ../shared/background.md),
# plus every test the series adds (listed in tests/selftests.list).
if [ "${1:-}" = arm64 ]; then
	arch_load arm64
	out=$top/build/selftests-arm64 hdr=$top/build/headers-arm64 hobj=$top/build/obj-headers-arm64
	hmk=("${arch_make[@]}")
	mk=("${arch_make[@]}" CC="ccache $arch_user_cc" EXTRA_CFLAGS="-static ${EXTRA_CFLAGS:-}")
	extra=(-f "$top/tests/guest/selftests.mk")
	wb=("$out/wb/guest_spin" "$out/wb/guest_hostile" "$out/wb/guest_bench")
	mapfile -t tests < <(selftests_of arm64)
else
	out=$top/build/selftests hdr=$top/build/headers hobj=$top/build/obj-headers
	hmk=()
	mk=(CC="$host_cc" ${EXTRA_CFLAGS:+EXTRA_CFLAGS="$EXTRA_CFLAGS"})
	extra=(-f "$top/tests/guest/selftests.mk")
	wb=(wb-progs)
	mapfile -t tests < <(selftests_of x86)
fi
make -s -C "$tree" O="$hobj" "${hmk[@]}" headers_install INSTALL_HDR_PATH="$hdr" >/dev/null
# A listed test whose source is not in the tree is an error, except in the
# gate's bisect (WB_SERIES_PREFIX=1), where a prefix of the series builds
# the tests it has so far.
targets=()
for t in "${tests[@]}"; do
	if [ ! -f "$tree/tools/testing/selftests/kvm/$t.c" ]; then
		if [ "${WB_SERIES_PREFIX:-}" != 1 ]; then
			echo "selftests: $t is listed in tests/selftests.list but not in $tree" >&2
			exit 1
		fi
		echo "selftests: $t: not in this prefix of the series, not built"
		continue
	fi
	targets+=("$out/$t")
done
targets+=("${wb[@]}")
make -s -C "$tree/tools/testing/selftests/kvm" -f Makefile "${extra[@]}" \
	"${mk[@]}" OUTPUT="$out" KHDR_INCLUDES="-isystem $hdr/include" \
	-j"$(nproc)" "${targets[@]}"
echo "selftests: ${#tests[@]} KVM selftests and $(find "$out/wb" -type f -perm -u+x | wc -l) guest program(s) in $out"
