#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Judge a recording of a real Linux guest with its registers and stack
copies ('perf kvm --guest record --guest-stack=<limit>', tests/vm/demo.sh),
from its raw dump, and measure how many bytes of stack its samples need.

usage: check_stack_copy.py <raw dump (perf_dump)> <limit> <name> [i386]

Every guest sample must carry the guest's registers with the ABI of its
kernel (64-bit, or 32-bit for i386) and one or two stack parts, whose first
starts at the sampled stack pointer rounded down to 8 bytes, every part
copied whole, all within the limit.  Two kinds of guest-kernel samples
carry no part: those of a 64-bit kernel at its syscall entry, before it
leaves the user stack (a kernel-mode copy never reads user pages), and
those with an empty stack whose top is a page boundary with a guard page
above (an i386 kernel at sysenter: its entry stack in the cpu_entry_area
lies below guard_doublefault_stack), their stack pointer page-aligned.  A guest-kernel sample of a 64-bit
kernel may have a second part, from the stack pointer its IRQ stack saved:
an address in the kernel half, outside the first part; the 64-bit kernel's
interrupt handlers must give some.  Guest-user samples and 32-bit kernels
have one part.  Prints what the guest-kernel samples copied: the share with
two parts and the bytes of stack in use (the copy of a limit above a Linux
guest's two 16 KiB stacks ends where the stacks do, at the guard page of a
virtually mapped stack; an i386 kernel has none, and its copies run to the
limit).  Prints TAP lines.
"""
import re
import sys

from perfdump import MISC_GUEST_KERNEL, MISC_GUEST_USER, Checks

_HEAD = re.compile(r"PERF_RECORD_SAMPLE\(IP, (0x[0-9a-f]+)\):")
_ABI = re.compile(r"^\.\.\. guest regs: mask 0x[0-9a-f]+ ABI (\S+)$")
_REG = re.compile(r"^\.\.\.\. (\w+)\s+0x([0-9a-f]+)$")
_PARTS = re.compile(r"^\.\.\. guest stack: (\d+) parts$")
_PART = re.compile(r"^\.\.\.\. part (\d+): addr 0x([0-9a-f]+), size (\d+), copied (\d+)$")
# The fewest guest-kernel samples to judge, and the least share of them
# with two parts from a 64-bit kernel (the demo's guest takes about a
# fifth of its samples in interrupt handlers, most on its IRQ stack).
MIN_SAMPLES = 200
MIN_TWO_PARTS = 0.02


def guest_samples(dump):
    """Yield (cpumode, abi, sp, nr, [(addr, size, copied)]) for each guest
    sample of the dump."""
    cur = None
    in_regs = False
    with open(dump, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            m = _HEAD.search(line)
            if m:
                if cur and cur["mode"] in (MISC_GUEST_KERNEL, MISC_GUEST_USER):
                    yield cur["mode"], cur["abi"], cur["sp"], cur["nr"], cur["parts"]
                cur = {"mode": int(m.group(1), 16) & 7, "abi": None, "sp": None,
                       "nr": None, "parts": []}
                in_regs = False
                continue
            if not cur:
                continue
            m = _ABI.match(line)
            if m:
                cur["abi"], in_regs = m.group(1), True
                continue
            m = _REG.match(line)
            if in_regs and m and m.group(1).lower() == "sp":
                cur["sp"] = int(m.group(2), 16)
                continue
            m = _PARTS.match(line)
            if m:
                cur["nr"], in_regs = int(m.group(1)), False
                continue
            m = _PART.match(line)
            if m:
                cur["parts"].append((int(m.group(2), 16), int(m.group(3)), int(m.group(4))))
    if cur and cur["mode"] in (MISC_GUEST_KERNEL, MISC_GUEST_USER):
        yield cur["mode"], cur["abi"], cur["sp"], cur["nr"], cur["parts"]


def percentile(values, p):
    return sorted(values)[min(len(values) - 1, len(values) * p // 100)]


def main():
    dump, limit, name = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    arch = sys.argv[4] if len(sys.argv) > 4 else "x86_64"
    abi = "32-bit" if arch == "i386" else "64-bit"
    chk = Checks()
    kernel, user, bad, two, kernel_bytes = 0, 0, [], 0, []
    at_entry, empty = 0, []
    for mode, sabi, sp, nr, parts in guest_samples(dump):
        kernel += mode == MISC_GUEST_KERNEL
        user += mode == MISC_GUEST_USER
        why = None
        if sabi != abi or sp is None:
            why = f"registers ABI {sabi}, SP {sp}"
        elif nr == 0 and mode == MISC_GUEST_KERNEL and abi == "64-bit" and not sp >> 63:
            at_entry += 1
            continue
        elif nr == 0 and mode == MISC_GUEST_KERNEL and sp % 4096 == 0:
            empty.append(sp)
            continue
        elif nr is None or nr != len(parts) or not 1 <= nr <= 2:
            why = f"{nr} stack parts ({len(parts)} printed)"
        elif parts[0][0] != sp & ~7:
            why = f"first part at {parts[0][0]:#x}, SP {sp:#x}"
        elif any(size != copied for _, size, copied in parts):
            why = f"parts not copied whole: {parts}"
        elif sum(size for _, size, _ in parts) > limit:
            why = f"parts of {sum(size for _, size, _ in parts)} bytes, limit {limit}"
        elif nr == 2 and (mode != MISC_GUEST_KERNEL or abi != "64-bit"):
            why = "two parts outside a 64-bit kernel"
        elif nr == 2 and (not parts[1][0] >> 63 or
                          parts[0][0] <= parts[1][0] < parts[0][0] + parts[0][1]):
            why = f"second part at {parts[1][0]:#x}, first {parts[0][0]:#x}+{parts[0][1]}"
        if why:
            bad.append(why)
        if mode == MISC_GUEST_KERNEL and not why:
            two += nr == 2
            kernel_bytes.append(sum(size for _, size, _ in parts))
    print(f"# {name}: {kernel} guest-kernel and {user} guest-user samples with registers and"
          f" stack (limit {limit} bytes)")
    for why in bad[:5]:
        print(f"#   wrong: {why}")
    print(f"# {name}: no stack part: {at_entry} guest-kernel samples on a user stack (syscall"
          f" entry), {len(empty)} with an empty stack below a guard page, SP"
          f" {sorted(set(hex(sp) for sp in empty))}")
    chk(kernel >= MIN_SAMPLES,
              f"{name}: at least {MIN_SAMPLES} guest-kernel samples with registers and stack"
              f" ({kernel})")
    chk(not bad, f"{name}: every guest sample carries the guest's registers ({abi}) and its"
              f" stack from SP, copied whole, within the limit ({len(bad)} wrong)")
    if kernel_bytes:
        share = two / len(kernel_bytes)
        what = ("bytes of stack in use" if abi == "64-bit" else
                "bytes copied (no guard page above an i386 kernel's stacks)")
        print(f"# {name}: guest-kernel samples: {share:.1%} with two parts (IRQ stack and the"
              f" stack it interrupted); {what}: median"
              f" {percentile(kernel_bytes, 50)}, 90th percentile {percentile(kernel_bytes, 90)},"
              f" 99th {percentile(kernel_bytes, 99)}, most {max(kernel_bytes)}")
        if abi == "64-bit":
            chk(share >= MIN_TWO_PARTS,
                      f"{name}: at least {MIN_TWO_PARTS:.0%} of the guest-kernel samples copy the"
                      f" IRQ stack and the stack it interrupted ({share:.1%})")
    return 0 if chk.ok else 1


if __name__ == "__main__":
    sys.exit(main())
