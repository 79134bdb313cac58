#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Bench scenario: the cost of guest callchains, measured side by side in
# one run (/wb/guest_bench: loads per frame, guest vs host unwind cost, the
# kernel vs a sampler in the VMM, the settled perf sample rate).  Meant for
# a kernel without debug options (build/obj-bench).  Writes $1.txt; the
# BENCH lines become the README's table with tests/host/bench_report.py.
out=$1
shift
knob=/sys/module/kvm/parameters/guest_callchains
rate=/proc/sys/kernel/perf_event_max_sample_rate
if [ -w $knob ]; then
	echo Y > $knob
else
	echo "bench: no $knob: this kernel has no guest callchains"
fi
echo 100000 > $rate
echo "bench: guest_callchains=$(cat $knob 2>/dev/null || echo absent)" \
	"perf_event_max_sample_rate=$(cat $rate)" \
	"perf_cpu_time_max_percent=$(cat /proc/sys/kernel/perf_cpu_time_max_percent)" \
	"perf_event_max_stack=$(cat /proc/sys/kernel/perf_event_max_stack)"
/wb/guest_bench "$@" > /tmp/bench.txt 2>&1
rc=$?
cp /tmp/bench.txt "$out.txt"
cat /tmp/bench.txt
# The kernel lowers the sample rate only from PMU NMI handlers; say if it did.
dmesg | grep 'perf: interrupt took too long' | sed 's/^/bench: dmesg: /'
echo "bench: perf_event_max_sample_rate at the end: $(cat $rate)"
echo "bench: guest_bench rc=$rc"
exit $rc
