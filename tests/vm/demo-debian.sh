#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The demo with Debian 12's own x86-64 cloud kernel, unmodified, as the guest
# (L2): KASLR on, as it ships, and built with ORC, without frame pointers,
# so the host's frame-pointer walk of its stack finds little; the whole
# recording carries the guest's registers and stack copies
# (/demo/debian/stack), for the host to unwind with the kernel's ORC
# tables.  Its package has no System.map: the guest hands its kallsyms over
# on its virtio disk (wb.kallsyms in /demo/debian/cmdline), which the
# scenario keeps; it records itself with Debian's perf.
exec sh /tests/demo.sh "$1" /demo/debian
