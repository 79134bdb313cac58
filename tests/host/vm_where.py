#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Where are the CPUs of a hung test VM?  Asks QEMU's monitor for the
registers of every vCPU a few times, one second apart, and prints each
vCPU's RIP and CPL with the kernel symbol it falls in.

usage: vm_where.py <monitor socket> <System.map>
"""
import bisect
import re
import socket
import sys
import time


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
    sock, smap = sys.argv[1:3]
    syms = []
    try:
        with open(smap) as f:
            for line in f:
                a, t, n = line.split()[:3]
                if t in "tTwW":
                    syms.append((int(a, 16), n))
    except OSError:
        pass
    syms.sort()
    addrs = [a for a, _ in syms]

    def sym(a):
        i = bisect.bisect_right(addrs, a) - 1
        return f"{syms[i][1]}+{a - syms[i][0]:#x}" if i >= 0 and a - syms[i][0] < 0x100000 else "?"

    for _ in range(3):
        regs = monitor(sock, "info registers -a")
        for cpu, rip, cpl, hlt in re.findall(r"CPU#(\d+).*?[ER]IP=([0-9a-f]+).*?CPL=(\d).*?HLT=(\d)",
                                             regs, re.S):
            where = sym(int(rip, 16)) if cpl == "0" else "user"
            print(f"vm: CPU#{cpu} IP={rip} CPL={cpl}{' halted' if hlt == '1' else ''} {where}")
        time.sleep(1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
