#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Judge the demo's recording of a real Linux guest from its raw dump.

usage: check_demo.py <perf script -D dump> <guest System.map>

Resolves every guest-kernel frame with the guest kernel's symbols, prints the
hottest guest call stacks (callers last), and checks that most guest-kernel
samples carry at least three guest frames that resolve to guest kernel
functions, and that the read and write syscall paths appear with their
callers in order: vfs_read/vfs_write, then do_syscall_64, then the syscall
entry.  Prints PASS/FAIL lines.
"""
import bisect
import collections
import sys

from perfdump import Checks, samples

GUEST_KERNEL = 0xfffffffffffff780


def load_map(path):
    syms = []
    with open(path) as f:
        for line in f:
            a, t, n = line.split()[:3]
            if t in "tTwW":
                syms.append((int(a, 16), n))
    syms.sort()
    return [a for a, _ in syms], [n for _, n in syms]


def main():
    dump, smap = sys.argv[1:3]
    addrs, names = load_map(smap)
    lo, hi = addrs[0], addrs[-1]

    def sym(a):
        if not lo <= a <= hi:
            return None
        return names[bisect.bisect_right(addrs, a) - 1]

    all_s = list(samples(dump))
    gk = [s for s in all_s if s[0] == 4]
    gu = [s for s in all_s if s[0] == 5]
    chains = []
    for _, ip, c in gk:
        if c[:1] != [GUEST_KERNEL]:
            chains.append(None)
            continue
        chains.append([sym(a) for a in c[1:]])
    deep = [c for c in chains if c and len(c) >= 3 and all(c[:3])]
    print(f"demo: {len(all_s)} samples: {len(gk)} guest kernel, {len(gu)} guest user, "
          f"{len(all_s) - len(gk) - len(gu)} host")
    hot = collections.Counter(" <- ".join(n or "?" for n in c) for c in chains if c)
    print("demo: hottest guest kernel call stacks (leaf first, callers after):")
    for stack, n in hot.most_common(12):
        print(f"  {n:6d}  {stack}")

    check = Checks()

    check(gk and len(deep) > len(gk) / 2,
          f"demo: {len(deep)}/{len(gk)} guest-kernel samples carry >= 3 resolved guest frames")
    for path in (["vfs_read", "do_syscall_64", "entry_SYSCALL_64"],
                 ["vfs_write", "do_syscall_64", "entry_SYSCALL_64"]):
        def in_order(c):
            i = 0
            for n in c:
                if n and n.startswith(path[i]):
                    i += 1
                    if i == len(path):
                        return True
            return False
        n = sum(1 for c in chains if c and in_order(c))
        check(n > 0, f"demo: {n} samples show {' <- '.join(path)} in caller order")
    return 0 if check.ok else 1


if __name__ == "__main__":
    sys.exit(main())
