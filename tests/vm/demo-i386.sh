#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The demo with the 32-bit (i386) guest kernel: 32-bit paging and frames,
# and the i386 kernel's switches to its interrupt and softirq stacks.  The
# guest records itself with its own perf (tests/demo/l2-init-i386.c), as the
# 64-bit one does, for the fidelity figures.
exec sh /tests/demo.sh "$1" /demo/i386
