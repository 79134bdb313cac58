#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Splat gate: fail on any kernel warning, bug, lockdep or RCU report in the
# VM's kernel log, and print each report.
# usage: check_splats.sh <console.log>
log=$1
vm=$(basename "$(dirname "$(realpath "$log")")")
pattern='BUG:|WARNING:|sleeping function called from invalid context|suspicious RCU usage|possible recursive locking|possible circular locking|inconsistent lock state|Invalid wait context|Call Trace|KASAN|UBSAN|general protection fault|Oops'
# The console log is the complete kernel log (dmesg may have wrapped).
hits=$(grep -cE "$pattern" "$log")
if [ "$hits" != 0 ]; then
	echo "not ok - splats: $hits line(s) in the kernel log of $vm match the splat patterns:"
	grep -nE -A25 "$pattern" "$log" | head -120 | sed 's/^/    /'
	exit 1
fi
echo "ok - splats: no BUG, WARNING, lockdep, RCU or sleep-in-atomic report in the kernel log of $vm"
