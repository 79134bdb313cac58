#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The demo in the arm64 KVM host: an arm64 Linux guest (L2) under Debian's
# QEMU for arm64, recorded with the PMU's cycles (wb.event), and recording
# itself for the fidelity figures.
exec sh /tests/demo.sh "$1" /demo
