#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Judge the baseline scenario from the raw dump of its recording (perf_dump).

usage: check_baseline.py <dump> <guest ELF> <expect: stock|frames>

Every guest sample must be a guest-kernel sample (the guest runs at CPL0).
Guest samples must exist with the IP in spin_leaf.  With 'frames' (the
series is applied and its knob was on) the guest samples whose IP is in
spin_leaf must carry exactly

    PERF_CONTEXT_GUEST_KERNEL, ip in spin_leaf, return into spin_mid,
    return into spin_top, return into guest_code

and nothing else (no host frame, no bogus trailing entry).  With 'stock'
no guest sample may carry a guest frame.  Prints TAP lines.
"""
import bisect
import collections
import os
import subprocess
import sys

from perfdump import CONTEXTS, MISC_GUEST_KERNEL, MISC_GUEST_USER, Checks, samples

CHAIN = ["spin_leaf", "spin_mid", "spin_top", "guest_code"]


def symbols(elf):
    out = subprocess.run(["nm", "-n", elf], check=True, capture_output=True, text=True).stdout
    syms = []
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in "tTwW":
            syms.append((int(f[0], 16), f[2]))
    return [a for a, _ in syms], [n for _, n in syms]


def main():
    dump, elf, expect = sys.argv[1:4]
    for path, what in ((dump, "recording dump"), (elf, "guest program")):
        if not os.path.isfile(path):
            print(f"not ok - baseline: no {what}: {path} is missing")
            return 1
    addrs, names = symbols(elf)

    def sym(a):
        if a in CONTEXTS:
            return CONTEXTS[a]
        i = bisect.bisect_right(addrs, a) - 1
        return names[i] if i >= 0 else hex(a)

    all_samples = list(samples(dump))
    guest = [s for s in all_samples if s[0] in (MISC_GUEST_KERNEL, MISC_GUEST_USER)]
    in_leaf = [s for s in guest if sym(s[1]) == "spin_leaf"]
    chains = collections.Counter(
        " ".join(sym(a) + ("(ip)" if i == 1 and a not in CONTEXTS else "") for i, a in enumerate(c))
        for _, _, c in in_leaf)
    print(f"baseline: {len(all_samples)} samples, {len(guest)} guest, "
          f"{len(in_leaf)} with the IP in spin_leaf")
    for chain, n in chains.most_common(5):
        print(f"baseline:   {n:6d} x [{chain}]")

    check = Checks()

    check(guest and all(s[0] == MISC_GUEST_KERNEL for s in guest),
          "baseline: guest samples exist and all are guest-kernel (CPL0) samples")
    check(len(in_leaf) > len(guest) / 2,
          "baseline: most guest samples have their IP in spin_leaf")
    guest_frames = [s for s in guest if any(a not in CONTEXTS for a in s[2])]
    if expect == "stock":
        check(not guest_frames, "baseline: stock kernel records no guest frame")
    else:
        want = ["GUEST_KERNEL", "spin_leaf(ip)", "spin_mid", "spin_top", "guest_code"]
        exact = [s for s in in_leaf
                 if [sym(a) if i != 1 else sym(a) + "(ip)" for i, a in enumerate(s[2])] == want
                 and s[2][1] == s[1]]
        check(len(exact) >= 0.9 * len(in_leaf),
              f"baseline: {len(exact)}/{len(in_leaf)} spin_leaf samples carry exactly "
              f"[{' '.join(want)}]")
        host = [s for s in guest if any(CONTEXTS.get(a) in ("KERNEL", "USER") for a in s[2])]
        check(not host, "baseline: no guest sample carries a host context or host frame")
    return 0 if check.ok else 1


if __name__ == "__main__":
    sys.exit(main())
