#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Judge guest user frames named on the host, after 'perf inject --guest-data'.

usage: check_guest_user.py <perf script output> <l2-work binary> <tag>
       (the binary built for the guest: build/l2-work or build/l2-work-i386)

The input is 'perf script -F comm,tid,ip,sym,symoff,dso' of the host's
recording of the demo guest, into which the guest's own recording was
injected (tests/host/check_demo.sh).  The guest runs /bin/l2-work
(tests/demo/l2-work.c), whose call stacks are known.  Checks that the host's
samples of the guest are given to the guest's l2-work task (by its name, from
the injected context switches: perf patch "give host samples of a guest to
the guest's current task"), that its user frames resolve to the program's
functions (its symbol table: a frame in it named [unknown] fails), and that
every sample in wl_hash has exactly the chain the code
has: wl_hash <- wl_checksum <- wl_round <- main, or, where the sample's IP is
in wl_hash's prologue or epilogue (RBP still or again the caller's frame),
wl_hash <- wl_round <- main.  The prologue and epilogue are read from the
binary.  Prints TAP lines.
"""
import collections
import re
import subprocess
import sys

from perfdump import Checks

FULL = ["wl_hash", "wl_checksum", "wl_round", "main"]
SHORT = ["wl_hash", "wl_round", "main"]
FRAME = re.compile(r"^\s+([0-9a-f]+) (\S+?)(?:\+0x([0-9a-f]+))? \((.*)\)$")


def frame_range(binary, func):
    """[first, last] offsets in func at which the frame pointer is func's own
    frame: from the instruction after 'mov %rsp,%rbp' up to and including
    'pop %rbp' (%esp and %ebp for i386)."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", binary],
                         capture_output=True, text=True, check=True).stdout
    body = out.split(f"<{func}>:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    insns = [(int(a, 16), i.strip()) for a, i in (line.split(":", 1) for line in body)]
    base = insns[0][0]
    set_at = next(k for k, (_, i) in enumerate(insns) if re.match(r"mov\s+%[re]sp,%[re]bp$", i))
    pop = next(a for a, i in insns if re.match(r"pop\s+%[re]bp$", i))
    return insns[set_at + 1][0] - base, pop - base


def functions(binary):
    """The names of the program's functions (static: its libc's too)."""
    out = subprocess.run(["nm", binary], capture_output=True, text=True, check=True).stdout
    return {f[2] for f in (line.split() for line in out.splitlines())
            if len(f) == 3 and f[1] in "TtWwi"}


def parse(path):
    """The samples of perf script's output: (comm, tid, [(sym, off, dso)])."""
    out, cur = [], None
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                cur = None
                continue
            m = FRAME.match(line)
            if m and cur is not None:
                cur[2].append((m.group(2), int(m.group(3) or "0", 16), m.group(4)))
            elif not line[0].isspace():
                f2 = line.split()
                cur = (" ".join(f2[:-1]), f2[-1], [])
                out.append(cur)
    return out


def main():
    script, binary, tag = sys.argv[1:4]
    check = Checks()
    first, pop = frame_range(binary, "wl_hash")
    allowed = functions(binary)
    samples = parse(script)
    comms = collections.Counter(s[0] for s in samples)
    work = [s for s in samples if s[0] == "l2-work"]
    print(f"# {tag}: guest user names: {len(samples)} samples after inject; "
          f"by task: " + ", ".join(f"{c} {n}" for c, n in comms.most_common(8)))
    check(len(work) >= 100, f"{tag}: {len(work)} samples given to the guest's l2-work task "
                            f"(at least 100)")
    user = [s for s in work if s[2] and s[2][0][2].endswith("/l2-work")]
    # A sample given to the wrong task resolves its user IP in that task's
    # maps: l2-work's IPs under another task, or another program's under it.
    elsewhere = [s for s in samples if s[0] != "l2-work" and s[2] and
                 s[2][0][2].endswith("/l2-work")]
    foreign = [s for s in work if s[2] and not s[2][0][2].endswith("/l2-work") and
               not s[2][0][2].startswith("[")]
    check(not elsewhere and not foreign,
          f"{tag}: user samples of /bin/l2-work given to another task: {len(elsewhere)}, "
          f"user samples of task l2-work in another file: {len(foreign)} (none of either)"
          + (f"; first: {(elsewhere + foreign)[0][0]} {(elsewhere + foreign)[0][2][0]}"
             if elsewhere or foreign else ""))
    unnamed = [s for s in user for f in s[2] if f[2].endswith("/l2-work") and f[0] not in allowed]
    hot = collections.Counter(" <- ".join(f[0] for f in s[2][:5]) for s in user)
    print(f"# {tag}: l2-work's user call stacks (leaf first):")
    for stack, n in hot.most_common(8):
        print(f"#   {n:6d}  {stack}")
    check(user and not unnamed,
          f"{tag}: {len(user)} samples in l2-work's own code, every frame in it one of its "
          f"functions" + (f"; not: {unnamed[0][2][:6]}" if unnamed else ""))
    bad, full, short = [], 0, 0
    for s in user:
        if s[2][0][0] != "wl_hash":
            continue
        names = [f[0] for f in s[2]]
        if first <= s[2][0][1] <= pop:
            ok = names[:4] == FULL
            full += ok
        else:
            ok = names[:3] == SHORT
            short += ok
        if not ok:
            bad.append(s)
    check(full >= 50 and not bad,
          f"{tag}: {full + short + len(bad)} samples in wl_hash: {full} with exactly "
          f"{' <- '.join(FULL)} (at least 50), {short} in its prologue or epilogue with "
          f"{' <- '.join(SHORT)}, {len(bad)} otherwise"
          + (f"; first: {' <- '.join(f'{f[0]}+{f[1]:#x}' for f in bad[0][2][:6])}"
             if bad else ""))
    return 0 if check.ok else 1


if __name__ == "__main__":
    sys.exit(main())
