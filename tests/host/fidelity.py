# SPDX-License-Identifier: GPL-2.0
"""Fidelity: the host's profile of a guest ('perf kvm --guest record -g')
against the guest's own profile of the same interval ('perf record -a -g'
inside the guest), both resolved with the guest kernel's System.map.

Each profile is a distribution of folded stacks: a kernel-mode sample's
guest kernel frames, leaf first, at most DEPTH of them; a user-mode sample
counts as one stack, "[user]".  Two figures:
  reach    the share of kernel-mode samples whose chain ends at a true
           bottom of a kernel stack: a syscall entry, ret_from_fork, or an
           interrupt or exception entry that the unwinder did not cross;
           host and guest side by side;
  overlap  the weight the two distributions share,
           sum over stacks of min(p_host, p_guest).

Like is compared with like.  The guest's cpu-clock is an interrupt: it
cannot land where the guest runs with interrupts disabled, while the
host's samples land anywhere the guest runs.  So the host's samples in the
guest's hard interrupt handlers (a chain that crosses an interrupt entry
before any softirq frame) are left out: the guest's own profile has none.
Samples in the guest's idle loop (do_idle) are left out of both: the host
sees a halted vCPU as not running.  The guest's own perf is in both
profiles, as any other guest task.
"""
import collections
import re
import subprocess

from perfdump import CONTEXTS

DEPTH = 8
MARKER = {v: k for k, v in CONTEXTS.items()}
# The lowest context marker (PERF_CONTEXT_MAX is -4095).
CONTEXT_MIN = (1 << 64) - 4095
HARDIRQ = ("asm_sysvec_", "asm_common_interrupt", "asm_spurious_interrupt")
# Frames of an interrupt's exit path that run with interrupts enabled:
# softirqs, and rescheduling on the way out of the interrupt.
IRQ_ON = ("handle_softirqs", "__do_softirq", "irqentry_exit_to_user_mode",
          "exit_to_user_mode_loop", "preempt_schedule_irq")
# Leaves in entry code, which runs with interrupts disabled: before the
# entry code has switched stacks and built a frame, and on its way back.
ENTRY = ("sync_regs", "error_entry", "asm_", "entry_SYSCALL_64", "entry_SYSENTER_32",
         "entry_INT80_32", "handle_exception", "common_interrupt_return",
         "restore_all_switch_stack", "native_irq_return_iret")
BOTTOM = ("entry_SYSCALL_64", "entry_SYSENTER_32", "entry_INT80_32", "ret_from_fork",
          "asm_")


def enable_points(vmlinux):
    """The addresses where an interrupt held off by the guest kernel lands:
    after the instruction that follows an sti (its one-instruction shadow),
    or at that instruction's target if it is a direct jump; after a popf."""
    insn = re.compile(r"^\s*([0-9a-f]+):\s+(\S+)\s*([0-9a-f]*)")
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", vmlinux],
                         capture_output=True, text=True, check=True).stdout
    code = [(int(m[1], 16), m[2], m[3]) for m in map(insn.match, out.splitlines()) if m]
    points = set()
    for i, (_, op, _) in enumerate(code[:-2]):
        if op == "sti":
            _, nop, target = code[i + 1]
            points.add(code[i + 2][0])
            if nop.startswith("j") and target:
                points.add(int(target, 16))
        elif op.startswith("popf"):
            points.add(code[i + 1][0])
    return points


def kernel_frames(chain, marker):
    """The addresses of chain's context <marker>, or None without it."""
    if chain[:1] != [marker]:
        return None
    out = []
    for a in chain[1:]:
        if a >= CONTEXT_MIN:
            break
        out.append(a)
    return out


def irqs_off(names):
    """Where the guest runs with interrupts disabled, as far as the chain
    shows it: in entry code, or in a hard interrupt handler (the chain
    crosses an interrupt entry before any frame that enables interrupts)."""
    if names[0].startswith(ENTRY):
        return "entry"
    for n in names:
        if n.startswith(IRQ_ON):
            return None
        if n.startswith(HARDIRQ):
            return "hardirq"
    return None


class Profile:
    """One side's folded stacks, and its kernel chains (names, leaf first)."""

    def __init__(self, samples, kmode, umode, marker, sym, host, points):
        self.stacks = collections.Counter()
        self.chains = []
        self.dropped = collections.Counter()
        self.order = []
        for mode, ip, chain in samples:
            if mode == umode:
                self.stacks["[user]"] += 1
                self.order.append("[user]")
                continue
            if mode != kmode:
                continue
            frames = kernel_frames(chain, marker) or [ip]
            names = [sym(a) or f"{a:#x}" for a in frames]
            if "do_idle" in names:
                self.dropped["idle"] += 1
                continue
            if ip in points:
                self.dropped["irq-enable"] += 1
                continue
            off = irqs_off(names)
            if off:
                self.dropped[off] += 1
                if host:
                    continue
            self.chains.append(names)
            self.stacks[";".join(names[:DEPTH])] += 1
            self.order.append(";".join(names[:DEPTH]))
        self.total = sum(self.stacks.values())

    def reach(self):
        return (sum(1 for c in self.chains if c[-1].startswith(BOTTOM)) / len(self.chains)
                if self.chains else 0.0)

    def share(self, stack):
        return self.stacks[stack] / self.total if self.total else 0.0


def overlap(a, b):
    """sum over stacks of min(p_a, p_b), for two Counters of stacks."""
    na, nb = sum(a.values()), sum(b.values())
    if not na or not nb:
        return 0.0
    return sum(min(a[s] / na, b[s] / nb) for s in a.keys() | b.keys())


def fidelity(check, tag, host_samples, guest_samples, sym, mode_misc, vmlinux):
    """Print and check the fidelity line of one guest.  mode_misc: the
    cpumodes (MISC_*) of the host's guest-kernel and guest-user samples and
    of the guest's own kernel and user samples."""
    hk, hu, gk, gu = mode_misc
    points = enable_points(vmlinux)
    host = Profile(host_samples, hk, hu, MARKER["GUEST_KERNEL"], sym, True, points)
    guest = Profile(guest_samples, gk, gu, MARKER["KERNEL"], sym, False, points)
    both = overlap(host.stacks, guest.stacks)
    # What sampling noise alone costs: the guest's profile against itself,
    # its odd samples against its even ones.
    halves = overlap(collections.Counter(guest.order[0::2]), collections.Counter(guest.order[1::2]))
    rh, rg = host.reach(), guest.reach()
    print(f"fidelity: {tag}: reach host {rh:.2f} guest {rg:.2f}; overlap {both:.2f} "
          f"({host.total} host, {guest.total} guest samples)")
    print(f"# {tag}: the guest's profile against itself (odd against even samples): "
          f"overlap {halves:.2f}")
    print(f"# {tag}: left out: host {dict(host.dropped)}, guest {dict(guest.dropped)} "
          f"(the guest's are kept, and should be none)")
    for name, p in (("host", host), ("guest", guest)):
        ends = collections.Counter(c[-1] for c in p.chains)
        print(f"# {tag}: {name}: kernel chains end at " + ", ".join(
            f"{n} {c / len(p.chains):.3f}" for n, c in ends.most_common(6)))
    diff = sorted(host.stacks.keys() | guest.stacks.keys(),
                  key=lambda s: -abs(host.share(s) - guest.share(s)))
    print(f"# {tag}: the stacks the two profiles weigh most differently (host, guest):")
    for s in diff[:8]:
        print(f"#   {host.share(s):.3f} {guest.share(s):.3f}  {s.replace(';', ' <- ')}")
    check(host.chains and guest.chains and rh >= 0.95 * rg,
          f"{tag}: fidelity: host reach {rh:.2f} is at least 0.95 of the guest's {rg:.2f}")
    check(both >= 0.85, f"{tag}: fidelity: overlap {both:.2f} of the host's and the "
                           f"guest's profiles (at least 0.85)")
