#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Run the KVM selftests listed in /tests/selftests.list; one result line each:
#   ok <test> | not ok <test> (rc N) | skip <test> (reason)
# Exit codes follow kselftest: 0 pass, 4 skip, anything else fails.
# Under Bochs (wb.machine=bochs) only the tests marked bochs; on arm64 the
# aarch64/ ones, which run nowhere else.
cd /selftests || exit 1
machine=$(sed -n 's/.*wb\.machine=\([^ ]*\).*/\1/p' /proc/cmdline)
arch=$(uname -m)
grep -v '^#' /tests/selftests.list | sed '/^$/d' | while read -r t flags; do
	case $t in aarch64/*) [ "$arch" = aarch64 ] ;; *) [ "$arch" = x86_64 ] ;; esac || continue
	[ "$machine" != bochs ] || case " $flags " in *" bochs "*) ;; *) continue ;; esac
	timeout 300 ./$t > /tmp/st.log 2>&1
	rc=$?
	sed "s|^|  $t: |" /tmp/st.log
	case $rc in
	0) echo "ok $t" ;;
	4) echo "skip $t ($(grep -m1 -i 'skip\|requirement' /tmp/st.log))" ;;
	*) echo "not ok $t (rc $rc)" ;;
	esac
done
