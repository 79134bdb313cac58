#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn the BENCH lines of guest_bench (tests/vm/bench.sh) into Markdown.

usage: bench_report.py <bench.log or bench.txt> [...]

Prints the README's tables: loads per frame against the 2023 v2 design, the
guest/host unwind cost ratio per depth, the kernel against a sampler in the
VMM, the sample rate perf settles at, and stack copies against the
frame-pointer walk.  Only ratios are meaningful under QEMU TCG; every ratio
is the median [min-max] over the repetitions.
"""
import math
import sys


def parse(paths):
    recs = []
    for path in paths:
        with open(path, errors="replace") as f:
            for line in f:
                i = line.find("BENCH ")
                if i < 0:
                    continue
                words = line[i:].split()
                if len(words) < 2:
                    continue
                kv = {}
                for w in words[2:]:
                    k, sep, v = w.partition("=")
                    if sep:
                        kv[k] = v
                recs.append((words[1], kv))
    return recs


def num(v, default=None):
    """A float, or default if absent, malformed or NaN (no valid repetition)."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return default
    return default if math.isnan(f) else f


def spread(kv, key, fmt="{:.2f}", scale=1.0):
    med, lo, hi = (num(kv.get(f"{key}_{s}")) for s in ("med", "min", "max"))
    if med is None:
        return "n/a"
    if lo is None or hi is None:
        return fmt.format(med * scale)
    return f"{fmt.format(med * scale)} [{fmt.format(lo * scale)}–{fmt.format(hi * scale)}]"


def verdict(ok):
    if ok is None:
        return "n/a"
    return "met" if ok else "**not met**"


def meta(recs):
    """The run's meta line; before arm64, runs had no arch or event (x86, cpu-clock)."""
    kv = next((kv for t, kv in recs if t == "meta"), {})
    return {"arch": kv.get("arch", "x86_64"), "event": kv.get("event", "cpu-clock"), **kv}


def table_loads(recs, out):
    loads = {(kv.get("layout"), kv.get("depth")): kv for t, kv in recs if t == "loads"}
    if not loads:
        return
    out.append("### Guest memory loads per unwound frame\n")
    out.append("From the vCPU stats: Δguest_callchain_loads / Δguest_callchain_frames "
               "(PTE loads + frame-record loads per return address recorded; exact, not timed). "
               "The 2023 v2 design read the saved FP and the return address with one "
               "`kvm_read_guest_virt()` each, i.e. a full 4-level walk plus one data load "
               "each: 2 × (4 + 1) = 10 loads per frame.\n")
    out.append("| D | one stack page | several pages (1 KiB frames) | v2 design |")
    out.append("|---|---|---|---|")
    for d in ("4", "16", "64"):
        cells = []
        v2 = None
        for lay in ("onepage", "spread"):
            kv = loads.get((lay, d))
            if not kv or kv.get("missing"):
                cells.append("stat missing")
                continue
            lpf = num(kv.get("loads_per_frame"), 0)
            cells.append(f"{lpf:.3f} ({kv.get('pages')} page{'s' if kv.get('pages') != '1' else ''})")
            v2 = num(kv.get("v2_loads_per_frame"), v2)
        out.append(f"| {d} | {cells[0]} | {cells[1]} | {v2:.1f} |" if v2 is not None
                   else f"| {d} | {cells[0]} | {cells[1]} | 10.0 |")
    kv = loads.get(("onepage", "16"))
    if kv and not kv.get("missing"):
        lpf = num(kv.get("loads_per_frame"), 99)
        out.append(f"\nTarget ≤ 1.3 loads per frame for D = 16 on one page: {lpf:.3f}, {verdict(lpf <= 1.3)}.")
    bare = loads.get(("bare", "16"))
    if bare and not bare.get("missing"):
        out.append(f"A chain that ends on a {{0, 0}} record (the selftests' entry, no caller) "
                   f"costs one more load per sample without a frame: "
                   f"{num(bare.get('loads_per_frame'), 0):.3f} loads per frame for D = 16.")
    out.append("")


def table_cost(recs, out):
    cost = {kv.get("depth"): kv for t, kv in recs if t == "cost"}
    if not cost:
        return
    reps = next(iter(cost.values())).get("reps", "?")
    out.append("### Unwind cost per sample: guest (KVM) / host (user FP walk)\n")
    m = meta(recs)
    out.append(f"Throughput lost per {m['event']} sample with `PERF_SAMPLE_CALLCHAIN` minus without, "
               "for the guest chain (vCPU thread, `exclude_host=1`) and for the same C chain in a "
               "native host thread (`exclude_kernel=1`), same D, one stack page, "
               f"variants interleaved; median [min–max] over {reps} repetitions. "
               "The fourth column weighs each unwind against the cost of a sample without "
               "callchain on the same side (for the guest, that includes the VM exit). "
               "The fifth column is the guest callback when it reads no guest memory "
               "(the guest spins with its frame pointer = 1: context and IP only), as a share of the "
               "guest unwind.\n")
    # arm64's user walker stops at a zero frame pointer without a load;
    # x86's reads at 0 and faults.
    rbp0 = ("host chain ending at frame pointer 0, without a load" if m["arch"] == "aarch64"
            else "host chain ending in a fault, frame pointer 0")
    out.append(f"| D | guest / host | guest / host ({rbp0}) | "
               "unwind / sample without chain: guest, host | "
               "guest callback without a guest load / guest unwind | target ≤ 1.5 |")
    out.append("|---|---|---|---|---|---|")
    for d in ("4", "16", "64"):
        kv = cost.get(d)
        if not kv:
            continue
        med = num(kv.get("ratio_med"))
        valid = f" ({kv['valid']}/{kv['reps']} reps)" if kv.get("valid") not in (None, kv.get("reps")) else ""
        out.append(f"| {d} | {spread(kv, 'ratio')}{valid} | {spread(kv, 'ratio_rbp0')} | "
                   f"{num(kv.get('guest_unwind_over_guest_sample_med'), 0):.2f}, "
                   f"{num(kv.get('host_unwind_over_host_sample_med'), 0):.2f} | "
                   f"{spread(kv, 'noframe_share')} | "
                   f"{verdict(None if med is None or med <= 0 else med <= 1.5)} |")
    for t, kv in recs:
        if t == "cost_slope":
            out.append(f"\nPer extra frame (the D = 4 → 64 slope, without what does not depend on D): "
                       f"guest / host {spread(kv, 'ratio')}, ratio of the medians "
                       f"{num(kv.get('ratio_of_medians'), float('nan')):.2f}.")
        if t == "cost_fixed":
            out.append(f"What does not depend on D in the guest unwind, once the callback "
                       f"itself is taken out (fifth column): the page walk of the stack page, "
                       f"which costs as much as {spread(kv, 'walk_in_frames', '{:.1f}')} frame "
                       f"reads, {num(kv.get('share_d4'), 0):.0%} of the guest unwind at D = 4 "
                       f"and {num(kv.get('share_d64'), 0):.0%} at D = 64. A host unwind has no "
                       f"such walk: the CPU translates the host's own stack.")
    out.append("")


def table_sampler(recs, out):
    rows = [kv for t, kv in recs if t == "sampler"]
    if not rows:
        return
    reps = rows[0].get("reps", "?")
    out.append("### Kernel guest callchains vs a sampler in the VMM\n")
    out.append("The VMM sampler: a timerfd thread signals the vCPU thread, which leaves `KVM_RUN` "
               "with `-EINTR`, reads `KVM_GET_REGS`/`KVM_GET_SREGS`, walks the guest page tables "
               "and the frame chain through its own mapping of guest memory and re-enters. "
               f"D = 16, one page; guest throughput loss, median [min–max] over {reps} repetitions.\n")
    out.append("| requested rate | kernel: loss | VMM: loss | delivered samples/s kernel / VMM | VMM / kernel loss per sample |")
    out.append("|---|---|---|---|---|")
    for kv in sorted(rows, key=lambda kv: num(kv.get("rate"), 0)):
        out.append(f"| {int(num(kv.get('rate'), 0))} /s | {spread(kv, 'kern_loss', '{:.1f}', 100)} % | "
                   f"{spread(kv, 'user_loss', '{:.1f}', 100)} % | "
                   f"{int(num(kv.get('kern_rate_med'), 0))} / {int(num(kv.get('user_rate_med'), 0))} | "
                   f"{spread(kv, 'user_over_kern')} |")
    for t, kv in recs:
        if t == "sampler_max":
            top = kv.get("ladder_max")

            def best(v):
                if v == "0":
                    return "none of the ladder"
                return f"≥ {v} /s (the top of the ladder)" if v == top else f"{v} /s"
            out.append(f"\nHighest rate of the ladder with ≤ 10 % guest throughput loss (median) and ≥ 90 % "
                       f"of the requested rate delivered: kernel {best(kv.get('kern_max_rate'))}, "
                       f"VMM sampler {best(kv.get('user_max_rate'))}.")
        if t == "sampler_chains":
            same = kv.get("same") == "1"
            out.append(f"Chains of the samples whose IP is in the leaf loop, against a reference walk of "
                       f"the guest stack: kernel {kv.get('kern_exact')}/{kv.get('kern_inloop')}, VMM "
                       f"{kv.get('user_exact')}/{kv.get('user_inloop')} ({kv.get('depth')} return addresses): "
                       f"{'the same chains' if same else '**different chains**'}.")
    out.append("")


def table_maxrate(recs, out):
    rows = {kv.get("callchain"): kv for t, kv in recs if t == "maxrate"}
    if not rows:
        return
    reps = next(iter(rows.values())).get("reps", "?")
    out.append("### The sample rate perf settles at\n")
    m = meta(recs)
    out.append("`kernel.perf_event_max_sample_rate` reset to 100000 before each run, then a run at "
               f"`sample_freq=100000` ({m['event']}) on the vCPU thread; median [min–max] over {reps} runs.\n")
    out.append("| | max_sample_rate before | after | samples/s delivered | guest throughput loss |")
    out.append("|---|---|---|---|---|")
    for cc, name in (("0", "without callchains"), ("1", "with guest callchains")):
        kv = rows.get(cc)
        if not kv:
            continue
        out.append(f"| {name} | {kv.get('before')} | {spread(kv, 'after', '{:.0f}')} | "
                   f"{spread(kv, 'achieved', '{:.0f}')} | {num(kv.get('loss_med'), 0) * 100:.0f} % |")
    if m["event"] == "cpu-clock":
        out.append("\nThe kernel lowers the rate only from the PMU interrupt handlers "
                   "(`perf_sample_event_took()`); cpu-clock samples, the only ones under x86 TCG, never do.")
    else:
        out.append(f"\nThe kernel lowers the rate from the PMU interrupt handler "
                   f"(`perf_sample_event_took()` in `armpmu_dispatch_irq()`), here for {m['event']}.")
    out.append("")


def table_copy(recs, out):
    rows = [kv for t, kv in recs if t == "copy" and kv.get("missing") != "1"]
    if any(t == "copy" and kv.get("missing") == "1" for t, kv in recs):
        out.append("### Stack copies against the frame-pointer walk\n")
        out.append("Not measured: no stack copies in this kernel, or in this build of the bench.\n")
    if not rows:
        return
    kv0 = rows[0]
    out.append("### Stack copies against the frame-pointer walk\n")
    out.append("A guest sample with the guest's registers and a copy of its stack "
               "(`PERF_SAMPLE_REGS_GUEST` and `PERF_SAMPLE_STACK_GUEST`, as `perf record "
               f"--guest-stack={kv0.get('limit')}` asks, for guests without frame pointers) "
               "against one with the frame-pointer walk (`PERF_SAMPLE_CALLCHAIN`): the cost "
               "per sample of each over a sample with neither, and the bytes a sample takes "
               f"in the ring buffer; D = {kv0.get('depth')}, the stack copied from the guest's "
               "stack pointer up to the unmapped page above the stack or the limit; median "
               f"[min–max] over {kv0.get('reps')} repetitions.\n")
    out.append("| chain | copy / walk cost per sample | bytes per sample: no chain, walk, copy |")
    out.append("|---|---|---|")
    names = {"onepage": "on one stack page", "spread": "spread over several (1 KiB frames)"}
    for kv in rows:
        out.append(f"| {names.get(kv.get('layout'), kv.get('layout'))} | {spread(kv, 'ratio')} | "
                   f"{num(kv.get('none_bytes_med'), 0):.0f}, {num(kv.get('fp_bytes_med'), 0):.0f}, "
                   f"{num(kv.get('copy_bytes_med'), 0):.0f} |")
    out.append("")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    recs = parse(sys.argv[1:])
    if not recs:
        sys.exit("bench_report: no BENCH lines in " + " ".join(sys.argv[1:]))
    out = []
    for t, kv in recs:
        if t == "meta":
            m = meta(recs)
            period = (f"{kv['period']} ns" if m["event"] == "cpu-clock" and "period" in kv
                      else f"{kv.get('period')} cycles" if "period" in kv
                      else f"{kv.get('period_us')} us")
            out.append(f"Measured with guest_bench on {kv.get('kernel')} ({m['arch']}, {kv.get('cpus')} CPU, "
                       f"guest_callchains={kv.get('knob')}), {kv.get('reps')} repetitions, each variant "
                       f"measured in {kv.get('slices')} slices of {kv.get('slice_ms')} ms taking turns "
                       f"with the others, {m['event']} period {period} unless stated; "
                       "under QEMU TCG only ratios mean anything.\n")
    table_loads(recs, out)
    table_cost(recs, out)
    table_sampler(recs, out)
    table_maxrate(recs, out)
    table_copy(recs, out)
    print("\n".join(out).rstrip())


if __name__ == "__main__":
    main()
