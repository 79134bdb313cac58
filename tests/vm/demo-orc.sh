#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The demo with the guest kernel built as most distributions build theirs
# (configs/guest-orc.config): ORC, no frame pointers, KASLR on.  The host
# records the guest's registers and stack copies with every sample
# (/demo/orc/stack), which perf unwinds with the kernel's ORC tables; the
# guest hands its kallsyms over (wb.kallsyms in /demo/orc/cmdline), where
# KASLR put it.
exec sh /tests/demo.sh "$1" /demo/orc
