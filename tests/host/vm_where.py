#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Where are the CPUs of a hung test VM?  Asks QEMU's monitor for the
registers of every vCPU a few times, one second apart, and prints each
vCPU's RIP and CPL with the kernel symbol it falls in.

usage: vm_where.py <monitor socket> <System.map>
"""
import os
import re
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from perfdump import SystemMap  # noqa: E402


def monitor(path, cmd):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(2)
    s.connect(path)
    out = b""

    def drain():
        nonlocal out
        try:
            while True:
                d = s.recv(65536)
                if not d:
                    return
                out += d
        except socket.timeout:
            return
    drain()
    out = b""
    s.sendall(cmd.encode() + b"\n")
    time.sleep(0.5)
    drain()
    s.close()
    return out.decode(errors="replace")


def main():
    sock, path = sys.argv[1:3]
    try:
        smap = SystemMap(path)
    except OSError:
        smap = None

    def sym(a):
        hit = smap.lookup(a) if smap else None
        return f"{hit[0]}+{hit[1]:#x}" if hit and hit[1] < 0x100000 else "?"

    for _ in range(3):
        regs = monitor(sock, "info registers -a")
        for cpu, rip, efl, cpl, hlt in re.findall(
                r"CPU#(\d+).*?[ER]IP=([0-9a-f]+).*?[ER]FL=([0-9a-f]+).*?CPL=(\d).*?HLT=(\d)", regs, re.S):
            where = sym(int(rip, 16)) if cpl == "0" else "user"
            print(f"vm: CPU#{cpu} IP={rip} CPL={cpl} IF={int(efl, 16) >> 9 & 1}"
                  f"{' halted' if hlt == '1' else ''} {where}")
        time.sleep(1)
    # Interrupts the local APICs hold: an interrupt requested (IRR) that
    # never becomes in service (ISR) while the CPU runs is a lost wakeup.
    for cpu in sorted({c for c, *_ in re.findall(r"CPU#(\d+)", regs)}, key=int):
        apic = monitor(sock, f"info lapic {cpu}")
        for line in apic.splitlines():
            if re.match(r"\s*(ISR|IRR|LVT0|LVTT|Timer|PPR)", line):
                print(f"vm: CPU#{cpu} lapic: {line.strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
