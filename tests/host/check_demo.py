#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Judge the demo's recording of a real Linux guest from its raw dump.

usage: check_demo.py <perf script -D dump> <guest System.map> [i386]

Resolves every guest-kernel frame with the guest kernel's symbols, prints the
hottest guest call stacks (callers last), and checks that most guest-kernel
samples carry at least three guest frames that resolve to guest kernel
functions, and that the read and write syscall paths appear with their
callers in order: vfs_read/vfs_write, then do_syscall_64, then the syscall
entry; for a 32-bit guest kernel (i386), do_fast_syscall_32 or
do_int80_syscall_32 and their entries, and every guest-kernel address is a
32-bit one.  Prints TAP lines.
"""
import collections
import sys

from perfdump import CONTEXTS, MISC_GUEST_KERNEL, MISC_GUEST_USER, Checks, SystemMap, samples

GUEST_KERNEL = next(k for k, v in CONTEXTS.items() if v == "GUEST_KERNEL")

# The syscall paths, leaf first: each step is a tuple of accepted prefixes.
SYSCALL = {
    "x86_64": (("do_syscall_64",), ("entry_SYSCALL_64",)),
    "i386": (("do_fast_syscall_32", "do_int80_syscall_32"),
             ("entry_SYSENTER_32", "entry_INT80_32")),
}


def main():
    dump, smap = sys.argv[1:3]
    arch = sys.argv[3] if len(sys.argv) > 3 else "x86_64"
    tag = "demo" if arch == "x86_64" else f"demo {arch}"
    try:
        smap = SystemMap(smap)
    except OSError as e:
        print(f"not ok - {tag}: no guest System.map: {e}")
        return 1
    lo, hi = smap.addrs[0], smap.addrs[-1]

    def sym(a):
        return smap.lookup(a)[0] if lo <= a <= hi else None

    try:
        all_s = list(samples(dump))
    except OSError as e:
        print(f"not ok - {tag}: no recording: {e}")
        return 1
    gk = [s for s in all_s if s[0] == MISC_GUEST_KERNEL]
    gu = [s for s in all_s if s[0] == MISC_GUEST_USER]
    chains = []
    for _, ip, c in gk:
        if c[:1] != [GUEST_KERNEL]:
            chains.append(None)
            continue
        chains.append([sym(a) for a in c[1:]])
    deep = [c for c in chains if c and len(c) >= 3 and all(c[:3])]
    print(f"{tag}: {len(all_s)} samples: {len(gk)} guest kernel, {len(gu)} guest user, "
          f"{len(all_s) - len(gk) - len(gu)} host")
    hot = collections.Counter(" <- ".join(n or "?" for n in c) for c in chains if c)
    print(f"{tag}: hottest guest kernel call stacks (leaf first, callers after):")
    for stack, n in hot.most_common(12):
        print(f"  {n:6d}  {stack}")

    check = Checks()

    check(gk and len(deep) > len(gk) / 2,
          f"{tag}: {len(deep)}/{len(gk)} guest-kernel samples carry >= 3 resolved guest frames")
    if arch == "i386":
        wide = sum(1 for _, ip, c in gk if ip >> 32 or any(a >> 32 for a in c[1:]))
        check(gk and not wide,
              f"{tag}: 32-bit guest: {len(gk) - wide}/{len(gk)} guest-kernel samples hold only "
              f"32-bit addresses")
    for vfs in ("vfs_read", "vfs_write"):
        path = ((vfs,),) + SYSCALL[arch]

        def in_order(c):
            i = 0
            for n in c:
                if n and n.startswith(path[i]):
                    i += 1
                    if i == len(path):
                        return True
            return False
        n = sum(1 for c in chains if c and in_order(c))
        check(n > 0, f"{tag}: {n} samples show {' <- '.join('|'.join(p) for p in path)} "
                     f"in caller order")
    return 0 if check.ok else 1


if __name__ == "__main__":
    sys.exit(main())
