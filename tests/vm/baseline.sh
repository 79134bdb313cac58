#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Baseline scenario: a nested guest spinning in
#   guest_code -> spin_top -> spin_mid -> spin_leaf
# sampled from this (L1) host with 'perf kvm --guest record -e cpu-clock -g'.
# Writes $1.data (perf.data.guest); tests/host/check_baseline.sh dumps and
# judges it on the host.
out=$1
[ -w /sys/module/kvm/parameters/guest_callchains ] && echo Y > /sys/module/kvm/parameters/guest_callchains
# perf mmaps its input, which the 9p share does not support: work in /tmp.
# The Bochs VM (wb.vm=vmx) runs about 10^8 instructions a second, and a
# sample costs it tens of thousands: at perf's default 4000 Hz its
# cpu-clock hrtimer once kept it from making progress.  1000 Hz there.
freq=
grep -q 'wb\.vm=vmx' /proc/cmdline && freq="-F 1000"
# shellcheck disable=SC2086
perf kvm --guest record -o /tmp/baseline.data -e cpu-clock $freq -g -- /wb/guest_spin 3 || exit 1
cp /tmp/baseline.data "$out.data"
