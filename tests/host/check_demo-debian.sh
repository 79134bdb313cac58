#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The demo with Debian 12's own x86-64 cloud kernel (ORC, no frame pointers,
# KASLR), judged on the call stacks perf unwinds from its stack copies with
# the ORC tables of the ELF in its vmlinuz (build/debian-amd64/vmlinux), with
# the kallsyms it handed over.
exec "$(dirname "$0")/check_demo.sh" "$1" "$2" debian-amd64 "" demo-debian
