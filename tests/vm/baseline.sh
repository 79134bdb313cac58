#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Baseline scenario: a nested guest spinning in
#   guest_code -> spin_top -> spin_mid -> spin_leaf
# sampled from this (L1) host with 'perf kvm --guest record -e cpu-clock -g'
# (or the event the command line's wb.event names: the arm64 VMs' cycles).
# Writes $1.data (perf.data.guest); tests/host/check_baseline.sh dumps and
# judges it on the host.
out=$1
[ -w /sys/module/kvm/parameters/guest_callchains ] && echo Y > /sys/module/kvm/parameters/guest_callchains
# perf mmaps its input, which the 9p share does not support: work in /tmp.
# wb.freq: the machine's sample rate where perf's default is too much for
# it (scripts/arch/*.sh, arch_bochs_freq).
freq=$(sed -n 's/.*wb\.freq=\([0-9]*\).*/\1/p' /proc/cmdline)
event=$(sed -n 's/.*wb\.event=\([a-z-]*\).*/\1/p' /proc/cmdline)
perf kvm --guest record -o /tmp/baseline.data -e "${event:-cpu-clock}" ${freq:+-F $freq} -g -- /wb/guest_spin 3 || exit 1
cp /tmp/baseline.data "$out.data"
