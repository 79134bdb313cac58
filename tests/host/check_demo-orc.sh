#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The demo with the guest kernel without frame pointers (ORC, KASLR),
# judged on the call stacks perf unwinds from its stack copies with its ORC
# tables, with the kallsyms it handed over.
exec "$(dirname "$0")/check_demo.sh" "$1" "$2" guest-orc "" demo-orc
