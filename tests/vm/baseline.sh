#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Baseline scenario: a nested guest spinning in
#   guest_code -> spin_top -> spin_mid -> spin_leaf
# sampled from this (L1) host with 'perf kvm --guest record -e cpu-clock -g'.
# Writes $1.data (perf.data.guest) and $1.D (raw 'perf script -D' dump);
# tests/host/check-baseline.sh judges them on the host.
out=$1
[ -w /sys/module/kvm/parameters/guest_callchains ] && echo Y > /sys/module/kvm/parameters/guest_callchains
# perf mmaps its input, which the 9p share does not support: work in /tmp.
perf kvm --guest record -o /tmp/baseline.data -e cpu-clock -g -- /wb/guest_spin 3 || exit 1
perf script -i /tmp/baseline.data -D > "$out.D" 2>&1
cp /tmp/baseline.data "$out.data"
echo "baseline: $(grep -c 'PERF_RECORD_SAMPLE' "$out.D") samples recorded"
