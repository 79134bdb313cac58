#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The arm64 demo with Debian 12's own arm64 cloud kernel, unmodified, as the
# guest (L2): KASLR on and its return addresses signed, as it ships.  Its
# package has no System.map: the guest hands its kallsyms over on its virtio
# disk (wb.kallsyms in /demo/debian/cmdline), which the scenario keeps; it
# records itself for the fidelity figures.
exec sh /tests/demo.sh "$1" /demo/debian
