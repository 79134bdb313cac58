#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Judge the demo's recording of a real Linux guest from its raw dump.

usage: check_demo.py <raw dump (perf_dump)> <guest System.map> <guest vmlinux, or Image>
                     <perf top output>
                     <raw dump of the guest's own recording> [i386|arm64 [tag]]

Resolves every guest-kernel frame with the guest kernel's symbols, prints the
hottest guest call stacks (callers last), and checks that most guest-kernel
samples carry at least three guest frames that resolve to guest kernel
functions, and that the read and write syscall paths appear with their
callers in order: vfs_read/vfs_write, then do_syscall_64, then the syscall
entry; for a 32-bit guest kernel (i386), do_fast_syscall_32 or
do_int80_syscall_32 and their entries, and every guest-kernel address is a
32-bit one; for an arm64 guest kernel, do_el0_svc, el0_svc and
el0t_64_sync, and no guest-kernel address carries pointer authentication
bits (the unwinder strips them).  Then judges the live profile of the same guest in 'perf kvm
--guest top -g --stdio': its last profile shows guest user ([u]) entries
(64-bit guest), guest kernel ([g]) entries that resolve to the guest's
symbols, in whose callchains every guest kernel address resolves, and a
guest kernel entry whose callchain holds the syscall path in caller order.
Last, the fidelity of the recording:
the host's profile of the guest against the guest's own (fidelity.py).
Prints TAP lines.
"""
import collections
import itertools
import os
import re
import subprocess
import sys

from fidelity import (ARCHES, fidelity, held_cap, same_interval, vdso_landing_points,
                      whole_windows)
from perfdump import (CONTEXTS, MISC_GUEST_KERNEL, MISC_GUEST_USER, MISC_KERNEL, MISC_USER, Checks,
                      SystemMap, sample_freq, sample_times, samples, script_chains,
                      with_script_chains)

GUEST_KERNEL = next(k for k, v in CONTEXTS.items() if v == "GUEST_KERNEL")

# The syscall paths, leaf first: each step is a tuple of accepted prefixes.
SYSCALL = {
    "x86_64": (("do_syscall_64",), ("entry_SYSCALL_64",)),
    "i386": (("do_fast_syscall_32", "do_int80_syscall_32"),
             ("entry_SYSENTER_32", "entry_INT80_32")),
    "arm64": (("do_el0_svc",), ("el0_svc",), ("el0t_64_sync",)),
}
# The names of the entries of interrupts and exceptions taken in kernel
# mode, which a chain crosses into the context they interrupted.
ENTRY = {"x86_64": ("asm_",), "i386": ("asm_",), "arm64": ("el1h_64_",)}


# An entry of perf top's stdio profile (-s dso,sym): "  8.81%  [unknown]  [u] 0x4a5f39".
TOP_ENTRY = re.compile(r"^\s+[\d.]+%\s+(\S+)\s+\[([.kgu])\]\s+(\S+)")


def in_order(names, path):
    """True if names hold one name of each step of path, in path's order."""
    i = 0
    for n in names:
        if n and n.startswith(path[i]):
            i += 1
            if i == len(path):
                return True
    return False


# A branch of perf's callchain graph: "---name" (the first) or "--0.19%--name".
BRANCH = re.compile(r"(---|--[\d.]+%--)(\S+)")


def chain_paths(lines):
    """The paths of the callchain graph printed under one perf top entry, each
    as the names from the graph's root down to one of its nodes.  Names of
    one unbranched run stand in one column; a branch starts a deeper one."""
    stack, paths = [], []
    for line in lines:
        m = BRANCH.search(line)
        if m:
            # Keyed on the column of its "--": where its name starts
            # depends on how many digits its percentage has.
            col, name = m.start(1), m.group(2)
            while stack and stack[-1][0] >= col:
                stack.pop()
        else:
            m = re.search(r"[^\s|]\S*", line)
            if not m:
                continue
            col, name = m.start(), m.group()
            while stack and stack[-1][0] > col:
                stack.pop()
        stack.append((col, name))
        paths.append([n for _, n in stack])
    return paths


def backtrace(core):
    """Print the backtraces of a core that the VM's perf left (tests/vm/demo.sh),
    read by gdb with this checkout's perf, the VM's /bin/perf."""
    perf = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../build/perf/perf")
    if not os.path.exists(core):
        print(f"# no core at {core}")
        return
    try:
        out = subprocess.run(["gdb", "-batch", "-nx", "-ex", "thread apply all bt", perf, core],
                             capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as e:
        print(f"# gdb on {core}: {e}")
        return
    print(f"# gdb {perf} {core}:")
    print("\n".join("#   " + line for line in (out.stdout + out.stderr).splitlines()
                     if line.startswith(("#", "Thread", "Program", "Core"))))


def check_top(check, path, smap, arch, tag, orc=False):
    """The last profile 'perf kvm --guest top' printed, judged; orc: the
    guest kernel has no frame pointers (its callchains are not judged)."""
    try:
        with open(path, errors="replace") as f:
            text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", f.read())
    except OSError as e:
        check(False, f"{tag}: perf kvm top: no output: {e}")
        return
    # perf top's signal handler prints the signal, and a backtrace that
    # its buffered stdout loses, to its output; the VM keeps its core.
    crash = re.search(r"^\s*perf: (?:Segmentation fault|Floating point exception).*$",
                      text, re.M)
    core = os.path.splitext(path)[0] + ".core"
    check(not crash and not os.path.exists(core), f"{tag}: perf kvm top ran without crashing")
    if crash or os.path.exists(core):
        print(f"# {tag}: perf kvm top: {crash.group(0).strip() if crash else 'a core'}")
        backtrace(core)
    profiles = text.split("PerfTop:")[1:]
    check(len(profiles) >= 2, f"{tag}: perf kvm top printed {len(profiles)} profiles (at least 2)")
    if not profiles:
        print("\n".join("# " + line for line in text.splitlines()[-20:]))
        return
    lines = profiles[-1].splitlines()
    print(f"{tag}: perf kvm top, its last profile (head):")
    print("\n".join("#   " + line for line in lines[:24]))
    lo, hi = smap.addrs[0], smap.addrs[-1]
    blocks = []     # (level, symbol, [lines of its callchain graph], entry line's length)
    for line in lines:
        if line.startswith("Mapped keys:"):     # the help after the last profile
            break
        m = TOP_ENTRY.match(line)
        if m:
            blocks.append((m.group(2), m.group(3), [], len(line.rstrip())))
        elif blocks:
            blocks[-1][2].append(line)
    names = set(smap.names)
    gu = [b for b in blocks if b[0] == "u"]
    gk = [b for b in blocks if b[0] == "g"]
    # perf top --stdio without a terminal assumes 80 columns and cuts the
    # entry lines there: an entry's symbol is its graph's root, which is
    # not cut, or, for an entry below the graph's threshold, a name of which
    # a cut line (one as long as the longest) shows the start.
    width = max((b[3] for b in blocks), default=0)
    gk = [(b[0], next(iter(chain_paths(b[2])), [b[1]])[0], b[2], b[3]) for b in gk]

    def guest_symbol(b):
        return b[1] in names or (b[3] == width and any(n.startswith(b[1]) for n in names))
    known = [b for b in gk if guest_symbol(b)]
    # The 64-bit guests' workload (busybox: gzip, md5sum) runs in user
    # space; the 32-bit guest's /init hardly leaves its syscalls.
    if arch in ("x86_64", "arm64"):
        check(gu, f"{tag}: perf kvm top shows {len(gu)} guest user ([u]) entries")
    else:
        print(f"# {tag}: perf kvm top shows {len(gu)} guest user ([u]) entries (not checked: "
              f"its guest spends too little time in user space; the 64-bit demos check them)")
    # Nearly all: an IP outside the guest's text shows as an address.
    check(gk and len(known) >= 0.95 * len(gk),
          f"{tag}: perf kvm top shows {len(known)}/{len(gk)} guest kernel ([g]) entries "
          f"that are guest kernel symbols (at least 95 %)"
          + "".join(f"; not: {b[1]}" for b in gk if not guest_symbol(b)))
    raw = [(b[1], a) for b in gk for line in b[2]
           for a in (int(x, 16) for x in re.findall(r"\b0x([0-9a-f]+)", line)) if lo <= a <= hi]
    check(not raw, f"{tag}: perf kvm top: the callchains of the guest kernel entries hold "
                   f"{len(raw)} unresolved guest kernel addresses"
                   + (f" (first under {raw[0][0]}: {raw[0][1]:#x})" if raw else ""))
    path = SYSCALL[arch]
    n = sum(1 for b in gk if any(in_order(p, path) for p in chain_paths(b[2])))
    if orc:
        print(f"# {tag}: perf kvm top shows {n} guest kernel entries with a callchain that holds "
              f"{' <- '.join('|'.join(p) for p in path)} in caller order (not checked: perf "
              f"top records no stack copies and has no --guest-orc, so its callchains of a "
              f"guest kernel without frame pointers are the host's frame-pointer walk)")
        return
    check(n, f"{tag}: perf kvm top shows {n} guest kernel entries with a callchain that holds "
             f"{' <- '.join('|'.join(p) for p in path)} in caller order")


def main():
    # --orc-chains=<perf script -F time,ip --ns>: the guest kernel's
    # callchains as perf unwound them from the guest's stack copies with its
    # ORC tables (a guest kernel without frame pointers), instead of the
    # recorded ones.
    orc = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--orc-chains=")), None)
    sys.argv = [a for a in sys.argv if not a.startswith("--orc-chains=")]
    dump, smap, vmlinux, top, self_dump = sys.argv[1:6]
    arch = sys.argv[6] if len(sys.argv) > 6 else "x86_64"
    tag = "demo" if arch == "x86_64" else f"demo {arch}"
    if len(sys.argv) > 7:
        tag = sys.argv[7]
    smap_path = smap
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
    if orc:
        try:
            all_s, n = with_script_chains(all_s, sample_times(dump), script_chains(orc))
        except OSError as e:
            print(f"not ok - {tag}: no callchains unwound with ORC: {e}")
            return 1
        print(f"{tag}: {n} guest-kernel samples with their callchains unwound with ORC ({orc})")
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

    # Where the chains end, and how many go on past an interrupt or
    # exception entry into the context it interrupted (the unwinder follows
    # the guest's pt_regs frames).
    ends = collections.Counter(c[-1] or "?" for c in chains if c)
    print(f"{tag}: where the guest kernel chains end: " +
          ", ".join(f"{name} {n}" for name, n in ends.most_common(6)))
    entry = ENTRY[arch]
    crossed = [c for c in chains if c and any(n and n.startswith(entry) for n in c[:-1])]
    print(f"{tag}: {len(crossed)}/{len(gk)} guest-kernel chains go on past an interrupt "
          f"or exception entry" + (f", e.g. {' <- '.join(n or '?' for n in crossed[0])}"
                                   if crossed else ""))
    # Where a chain goes on past an entry, the next address is the
    # interrupted IP: kernel code, so a guest kernel symbol.
    lost = [c for c in crossed if any(n and n.startswith(entry) and c[i + 1] is None
                                      for i, n in enumerate(c[:-1]))]

    check = Checks()
    # How many samples land in kernel code that an interrupt or exception
    # interrupted depends on the workload (25-33 % of the kernel samples
    # when the 64-bit guest's workload was busybox in a loop, 2.6 % now
    # that its own program spends three quarters of the time in user
    # mode; 42-52 % for the i386 guest).  A chain that stopped at every
    # entry would show none, so ask for at least 10, every one of them
    # going on into a guest kernel symbol; whether the chains tell the
    # truth is the fidelity check's job (fidelity.py, below).
    check(len(crossed) >= 10 and not lost,
          f"{tag}: {len(crossed)}/{len(gk)} guest-kernel chains go on past an interrupt or "
          f"exception entry (at least 10), {len(crossed) - len(lost)} of them into a guest "
          f"kernel symbol (all)")

    # Unwound with ORC, nine in ten (issue "Frameless guests").
    need = 0.9 if orc else 0.5
    check(gk and len(deep) > len(gk) * need,
          f"{tag}: {len(deep)}/{len(gk)} guest-kernel samples carry >= 3 resolved guest frames "
          f"(more than {need:.0%})")
    if arch == "i386":
        wide = sum(1 for _, ip, c in gk if ip >> 32 or any(a >> 32 for a in c[1:]))
        check(gk and not wide,
              f"{tag}: 32-bit guest: {len(gk) - wide}/{len(gk)} guest-kernel samples hold only "
              f"32-bit addresses")
    if arch == "arm64":
        # The guest kernel signs its return addresses; in the kernel's
        # (TTBR1) half of a 48-bit address space, bits 63-48 are all ones.
        # Up to the next context marker: a chain may go on into guest
        # user frames behind PERF_CONTEXT_GUEST_USER.
        def kernel_part(c):
            return itertools.takewhile(lambda a: a not in CONTEXTS, c[1:])
        signed = [a for _, ip, c in gk for a in kernel_part(c) if a >> 48 != 0xffff]
        # That proves the stripping only if the guest signs them: its
        # /init prints its CPU's features (tests/demo/l2-init).
        try:
            with open(os.path.splitext(dump)[0] + ".log", errors="replace") as f:
                feats = next((line.split(":", 2)[2].split() for line in f
                              if line.startswith("L2: CPU features:")), [])
        except OSError:
            feats = []
        check("paca" in feats, f"{tag}: the guest's CPU has pointer authentication of "
                               f"addresses (paca in its features: {' '.join(feats) or 'none'})")
        check(gk and not signed,
              f"{tag}: {len(gk)} guest-kernel samples hold no address with pointer "
              f"authentication bits" + (f" (first: {signed[0]:#x})" if signed else ""))
    for vfs in ("vfs_read", "vfs_write"):
        path = ((vfs,),) + SYSCALL[arch]
        n = sum(1 for c in chains if c and in_order(c, path))
        check(n > 0, f"{tag}: {n} samples show {' <- '.join('|'.join(p) for p in path)} "
                     f"in caller order")
    check_top(check, top, smap, arch, tag, bool(orc))
    try:
        own = list(samples(self_dump))
    except OSError as e:
        check(False, f"{tag}: fidelity: no recording of the guest's own: {e}")
    else:
        # The i386 kernel returns from SYSENTER through its vDSO, which its
        # build keeps as arch/x86/entry/vdso/vdso32.so.dbg.
        landing = (vdso_landing_points(self_dump, os.path.join(
            os.path.dirname(vmlinux), "arch/x86/entry/vdso/vdso32.so.dbg"))
            if arch == "i386" else frozenset())
        if arch == "i386":
            print(f"# {tag}: fidelity: the vDSO's SYSENTER landing pad in the guest: "
                  + ", ".join(f"{a:#x}" for a in sorted(landing)))
        # Both over the interval both recorded (tests/vm/demo.sh, $name.guest:
        # QEMU's PID, the vCPU's TSC offset and scale); on arm64, whose
        # vCPU counter offset the host cannot read, both whole.
        if arch == "arm64":
            both = whole_windows((dump, all_s), (self_dump, own))
            if not both:
                check(False, f"{tag}: fidelity: both recordings have timed samples")
                return 1
            host_s, own, span, extra = both
            print(f"# {tag}: fidelity: both recordings whole, not on one clock: the host's "
                  f"{span:.1f} s within the guest's, {extra:.1f} s longer")
            # The guest's window opens before the host's and closes after
            # it, each by how long the console lines take to go through
            # nested emulation: 2-3 s in all on x86, where both are on one
            # clock.  Up to a tenth more of the guest's profile than of the
            # host's may then come from outside the host's window.
            check(0 <= extra <= span / 10,
                  f"{tag}: fidelity: the guest's recording is at most a tenth longer than the "
                  f"host's ({extra:.1f} s longer than {span:.1f} s)")
        else:
            try:
                with open(os.path.splitext(dump)[0] + ".guest") as f:
                    vcpu_tsc = [float(x) for x in f.read().split()[1:3]]
                both = same_interval((dump, all_s), (self_dump, own), vcpu_tsc)
            except (OSError, ValueError) as e:
                both = None
                print(f"# {tag}: fidelity: no TSC offset and scale of the vCPU: {e}")
            if not both:
                check(False, f"{tag}: fidelity: the two recordings on one clock (their "
                             f"PERF_RECORD_TIME_CONV, the vCPU's TSC offset and scale)")
                return 1
            host_s, own, span, extra = both
            print(f"# {tag}: fidelity: over the {span:.1f} s both recorded (the guest's "
                  f"recording is {extra:.1f} s longer)")
        # The recordings' own sampling frequencies (tests/vm/demo.sh,
        # tests/demo/l2-init*) bound how many host samples count where a
        # held-off guest interrupt lands.
        freqs = [sample_freq(os.path.splitext(d)[0] + ".data") for d in (dump, self_dump)]
        cap = held_cap(*freqs)
        check(cap is not None, f"{tag}: fidelity: both recordings sampled by frequency "
                               f"(perf evlist -v: host {freqs[0]}, guest {freqs[1]} Hz)")
        print(f"# {tag}: fidelity: sampling at {freqs[0]} Hz (host) and {freqs[1]} Hz "
              f"(guest): at most {cap} held samples count where one lands")
        fidelity(check, tag, host_s, own, sym,
                 (MISC_GUEST_KERNEL, MISC_GUEST_USER, MISC_KERNEL, MISC_USER),
                 vmlinux, landing, ARCHES[arch], smap_path, cap)
    return 0 if check.ok else 1


if __name__ == "__main__":
    sys.exit(main())
