#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Unit tests of the interrupts-off model of fidelity.py (IrqModel), on
functions written out as the model reads them: (address, kind, callee,
jump target), kind one of Arch's ("off", "on", "save", "restore", "call",
"ret", "jmp", "jcc", "stop") or None.  Each case is a table row: the
functions, the frames of a chain (addresses and names, leaf first) and the
state the model must give there.  Unnumbered TAP lines, as
tests/lib/tap.sh writes them."""

import sys

from fidelity import ARM64, MARKER, X86, IrqModel, Profile, held_cap


# An out-of-line arch_local_irq_save(), as Debian's arm64 kernel builds it.
SAVE_HELPER = [(0x10, "save", None, None), (0x14, "off", None, None),
               (0x18, "ret", None, None)]
# arch_local_irq_restore() out of line.
RESTORE_HELPER = [(0x20, "restore", None, None), (0x24, "ret", None, None)]

CASES = [
    # check_and_switch_context(): saves through the helper, restores
    # itself, so it leaves the state as it found it, off in its caller.
    ("a function that saves with a helper and restores itself leaves the state as found",
     {"save_helper": SAVE_HELPER,
      "switch_ctx": [(0x100, "call", "save_helper", 0x10), (0x104, None, None, None),
                     (0x108, "restore", None, None), (0x10c, "ret", None, None)],
      "sched": [(0x200, "off", None, None), (0x204, "call", "switch_ctx", 0x100),
                (0x208, None, None, None), (0x20c, "call", "leaf", 0x300),
                (0x210, "on", None, None), (0x214, "ret", None, None)],
      "leaf": [(0x300, None, None, None), (0x304, "ret", None, None)]},
     [0x300, 0x210], ["leaf", "sched"], "off"),
    # mod_timer() calls a restore helper whose save is a level deeper: not
    # a restore of its caller's state.
    ("a call of a restore helper does not make its caller a restore",
     {"restore_helper": RESTORE_HELPER,
      "timer": [(0x100, "call", "restore_helper", 0x20), (0x104, "ret", None, None)],
      "sched": [(0x200, "off", None, None), (0x204, "call", "timer", 0x100),
                (0x208, "call", "leaf", 0x300), (0x20c, "on", None, None),
                (0x210, "ret", None, None)],
      "leaf": [(0x300, None, None, None), (0x304, "ret", None, None)]},
     [0x300, 0x20c], ["leaf", "sched"], "off"),
    # A static branch's out-of-line block (__perf_event_task_sched_out()
    # in __schedule()): no path reaches it, it jumps back after its site
    # (the nop at 0x204), and runs as interrupts are there: off.
    ("a static branch's out-of-line block runs in the state at its site",
     {"sched": [(0x200, "off", None, None), (0x204, None, None, None),
                (0x208, None, None, None), (0x20c, "on", None, None),
                (0x210, "ret", None, None), (0x214, "call", "leaf", 0x300),
                (0x218, "jmp", None, 0x208)],
      "leaf": [(0x300, None, None, None), (0x304, "ret", None, None)]},
     [0x300, 0x218], ["leaf", "sched"], "off"),
    # The same block, its site where interrupts are on.
    ("a static branch's out-of-line block at a site with interrupts on",
     {"sched": [(0x200, None, None, None), (0x204, None, None, None),
                (0x208, "off", None, None), (0x20c, "on", None, None),
                (0x210, "ret", None, None), (0x214, "call", "leaf", 0x300),
                (0x218, "jmp", None, 0x204)],
      "leaf": [(0x300, None, None, None), (0x304, "ret", None, None)]},
     [0x300, 0x218], ["leaf", "sched"], "on"),
]


def held_once():
    """Six samples in the guest's interrupt handler, which interrupted
    user mode, then one in user mode: with the host at 4000 Hz and the guest
    at 1000 Hz (held_cap 4), four of the six count in user mode, two are
    left out as irq-capped."""
    funcs = {"asm_common_interrupt": [(0x100, "call", "handler", 0x200),
                                      (0x104, "ret", None, None)],
             "handler": [(0x200, None, None, None), (0x204, "ret", None, None)]}
    model = IrqModel.from_functions(funcs, X86)
    names = {0x104: "asm_common_interrupt", 0x200: "handler"}
    kernel = (4, 0x200, [MARKER["GUEST_KERNEL"], 0x200, 0x104])
    p = Profile([kernel] * 6 + [(5, 0x1000, [])], 4, 5, MARKER["GUEST_KERNEL"],
                names.get, model, set(), frozenset(), held_cap(4000, 1000))
    got = (p.stacks["[user]"], p.dropped["irq-return"], p.dropped["irq-capped"])
    return got == (5, 4, 2), f"got {got}, want (5, 4, 2)"


def main():
    failed = 0
    ok, why = held_once()
    failed += not ok
    print(f"{'ok' if ok else 'not ok'} - fidelity model: a held-off interrupt lands once: "
          f"at most held_cap held samples count where it lands" + ("" if ok else f" ({why})"))
    for name, funcs, frames, names, want in CASES:
        got = IrqModel.from_functions(funcs, ARM64).state(frames, names)
        ok = got == want
        failed += not ok
        print(f"{'ok' if ok else 'not ok'} - fidelity model: {name}"
              + ("" if ok else f" (got {got}, want {want})"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
