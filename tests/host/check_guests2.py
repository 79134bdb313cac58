#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Judge one recording of two guests with different kernels.

usage: check_guests2.py <raw dump (perf_dump)> <perf kvm script -G -F pid,ip,sym>
                        <QEMU pid>=<System.map> <QEMU pid>=<System.map>

Each guest-kernel sample belongs to the guest whose QEMU process it was
taken in.  Checks, for each guest: it has guest-kernel samples with
callchains; every address of those samples (IP and callchain) lies in that
guest kernel's text (the two kernels' texts do not overlap: one is 64-bit,
one 32-bit); and 'perf kvm --guestmount script' names each sample's IP with
the symbol that guest's System.map gives it, the other guest's never.
Prints TAP lines.
"""
import re
import sys

from perfdump import CONTEXTS, MISC_GUEST_KERNEL, Checks, SystemMap, samples

GUEST_KERNEL = next(k for k, v in CONTEXTS.items() if v == "GUEST_KERNEL")
SCRIPT = re.compile(r"^\s*(\d+)\s+([0-9a-f]+)\s+(\S+)")


def main():
    dump, script = sys.argv[1:3]
    guests = {}
    for arg in sys.argv[3:]:
        pid, path = arg.split("=", 1)
        guests[int(pid)] = (path, SystemMap(path))
    check = Checks()
    per = {pid: [] for pid in guests}
    other = 0
    for mode, pid, ip, chain in samples(dump, pid=True):
        if mode != MISC_GUEST_KERNEL:
            continue
        if pid in per:
            per[pid].append((ip, chain))
        else:
            other += 1
    check(not other, f"guests2: {other} guest-kernel samples of a process that is neither guest's")
    for pid, (path, smap) in guests.items():
        lo, hi = smap.addrs[0], smap.addrs[-1]
        s = per[pid]
        tag = f"guests2: the guest of {path.split('/')[-2]} (QEMU pid {pid})"
        deep = [c for _, c in s if c[:1] == [GUEST_KERNEL] and len(c) >= 4]
        check(len(deep) >= 100, f"{tag}: {len(s)} guest-kernel samples, {len(deep)} with at "
                                f"least three guest frames (at least 100)")
        wrong = [a for ip, c in s for a in [ip] + c[1:] if not lo <= a <= hi]
        check(s and not wrong, f"{tag}: {len(wrong)} addresses of its samples outside its "
                               f"kernel's text {lo:#x}-{hi:#x}"
                               + (f" (first {wrong[0]:#x})" if wrong else ""))
    named, misnamed = {pid: 0 for pid in guests}, []
    with open(script, errors="replace") as f:
        for line in f:
            m = SCRIPT.match(line)
            if not m or int(m.group(1)) not in guests:
                continue
            pid, ip, name = int(m.group(1)), int(m.group(2), 16), m.group(3)
            smap = guests[pid][1]
            if not smap.addrs[0] <= ip <= smap.addrs[-1]:
                continue        # a guest user sample
            want = smap.lookup(ip)[0]
            if name.split("+")[0] == want:
                named[pid] += 1
            else:
                misnamed.append((pid, ip, name, want))
    for pid, (path, _) in guests.items():
        check(named[pid] >= len(per[pid]) and named[pid],
              f"guests2: perf kvm --guestmount script names {named[pid]} of the "
              f"{len(per[pid])} guest-kernel samples of QEMU pid {pid} with {path}'s symbols")
    check(not misnamed, f"guests2: perf kvm --guestmount script misnames {len(misnamed)} "
                        f"guest-kernel samples" + "".join(
                            f"; pid {p} {ip:#x}: {n}, not {w}" for p, ip, n, w in misnamed[:3]))
    return 0 if check.ok else 1


if __name__ == "__main__":
    sys.exit(main())
