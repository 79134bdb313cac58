# SPDX-License-Identifier: GPL-2.0
"""Samples from the raw dump of a recording ('perf report -D', lib.sh's
perf_dump), and kernel symbols from a System.map, for the host-side
checks."""
import bisect
import os
import re
import subprocess

# The context markers of include/uapi/linux/perf_event.h, as u64.
CONTEXTS = {
    0xffffffffffffff80: "KERNEL", 0xfffffffffffffe00: "USER",
    0xfffffffffffff800: "GUEST", 0xfffffffffffff780: "GUEST_KERNEL",
    0xfffffffffffff600: "GUEST_USER",
}
MISC_KERNEL, MISC_USER, MISC_GUEST_KERNEL, MISC_GUEST_USER = 1, 2, 4, 5

_HEAD = re.compile(r"PERF_RECORD_SAMPLE\(IP, (0x[0-9a-f]+)\): (-?\d+)/\S+: (0x[0-9a-f]+)")
_TIME = re.compile(r"^\d+ (\d+) 0x[0-9a-f]+ \[0x[0-9a-f]+\]: PERF_RECORD_SAMPLE\(")
_CONV = re.compile(r"^\.\.\. Time (Shift|Muliplier|Zero)\s+(\d+)$")
_ENTRY = re.compile(r"\.\.\.\.\.\s+\d+: ([0-9a-f]+)$")
_FREQ = re.compile(r"\{ sample_period, sample_freq \}: (\d+),.* freq: 1,")
# This checkout's perf, which made the dumps (lib.sh's perf_dump).
PERF = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../build/perf/perf")


def samples(dump, pid=False):
    """Yield (cpumode, ip, [callchain]) for each PERF_RECORD_SAMPLE; with
    pid, (cpumode, pid, ip, [callchain])."""
    cur = None
    with open(dump, errors="replace") as f:
        for line in f:
            m = _HEAD.search(line)
            if m:
                if cur:
                    yield cur
                cur = (int(m.group(1), 16) & 7,) + ((int(m.group(2)),) if pid else ()) + \
                    (int(m.group(3), 16), [])
                continue
            m = _ENTRY.match(line.strip())
            if cur and m:
                cur[-1].append(int(m.group(1), 16))
    if cur:
        yield cur


def script_chains(path):
    """From 'perf script -F time,ip --ns' output, each sample's callchain
    as perf resolved it (with --guest-orc, unwound from the guest's stack
    copies), keyed by its time in ns, the time the raw dump gives."""
    chains, cur = {}, None
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("\t"):
                if cur is not None:
                    chains[cur].append(int(line.split()[0], 16))
            elif line.strip().endswith(":"):
                secs, ns = line.strip()[:-1].split(".")
                cur = int(secs) * 10**9 + int(ns)
                chains[cur] = []
    return chains


def with_script_chains(all_s, times, chains):
    """The samples of samples(dump) (with times from sample_times(dump)),
    each guest-kernel one with the guest kernel part of the callchain of
    script_chains() at its time instead of the recorded one (perf goes on
    with the guest user instruction where the unwind reached the guest's
    user registers: left out, as the recorded chains have no guest user
    part); and how many were replaced."""
    gk = next(k for k, v in CONTEXTS.items() if v == "GUEST_KERNEL")
    out, n = [], 0
    for s, t in zip(all_s, times):
        c = chains.get(t)
        if s[0] != MISC_GUEST_KERNEL or not c:
            out.append(s)
            continue
        out.append(s[:-1] + ([gk] + [a for a in c if a >> 63],))
        n += 1
    return out, n


def sample_times(dump):
    """The timestamps of the samples that samples(dump) yields, in order."""
    with open(dump, errors="replace") as f:
        return [int(m.group(1)) for m in map(_TIME.match, f) if m]


def sample_freq(data):
    """The sampling frequency (Hz) of a recording's first event sampled by
    frequency, from its attributes ('perf evlist -v'), or None."""
    try:
        out = subprocess.run([PERF, "evlist", "-v", "-i", data], capture_output=True,
                             text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return next((int(m.group(1)) for m in map(_FREQ.search, out.splitlines()) if m), None)


def tsc_of(dump):
    """From the dump's PERF_RECORD_TIME_CONV, the functions that turn its
    perf clock into TSC cycles and back, or None without one."""
    conv = {}
    with open(dump, errors="replace") as f:
        for line in f:
            m = _CONV.match(line.strip())
            if m:
                conv[m.group(1)] = int(m.group(2))
            if len(conv) == 3:
                break
    if len(conv) < 3:
        return None
    shift, mult, zero = conv["Shift"], conv["Muliplier"], conv["Zero"]
    return (lambda t: (((t - zero) % (1 << 64)) << shift) // mult,
            lambda c: (zero + ((c * mult) >> shift)) % (1 << 64))


class SystemMap:
    """Text symbols of a System.map: name(addr) is the function holding addr."""

    def __init__(self, path):
        syms = []
        with open(path) as f:
            for line in f:
                # A kallsyms' module symbols ("... [module]"): perf
                # knows no guest modules, and they lie far from the
                # kernel's text.
                fields = line.split()
                if len(fields) != 3:
                    continue
                a, t, n = fields
                if t in "tTwW":
                    syms.append((int(a, 16), n))
        syms.sort()
        self.addrs = [a for a, _ in syms]
        self.names = [n for _, n in syms]

    def lookup(self, addr):
        """(name, offset) of the symbol at or below addr, or None."""
        i = bisect.bisect_right(self.addrs, addr) - 1
        return (self.names[i], addr - self.addrs[i]) if i >= 0 else None


class Checks:
    """TAP lines for the workbench's results (tests/lib/tap.sh); ok is False
    after any failure."""

    def __init__(self):
        self.ok = True

    def __call__(self, cond, what):
        print(("ok - " if cond else "not ok - ") + what)
        self.ok &= bool(cond)
