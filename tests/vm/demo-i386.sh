#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The demo with the 32-bit (i386) guest kernel: 32-bit paging and frames.
# The guest does not record itself (no disk; its kernel has no PCI and no
# virtio, tests/demo/l2-init-i386.c no perf): the series does not yet follow
# the i386 kernel's switches to its interrupt and softirq stacks, so the
# host's chains stop there (fidelity, measured once: host reach 0.59, the
# guest's 0.98), and the guest's own 1000 Hz perf keeps this guest, whose
# clock is the PIT, in its timer interrupt for most of the host's samples
# (README, "Fidelity").
exec sh /tests/demo.sh "$1" /demo/i386 no-self
