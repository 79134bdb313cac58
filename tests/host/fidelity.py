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
cannot land where the guest runs with interrupts off, and one held off
lands where the guest turns them on again; the host's samples land
anywhere the guest runs.  So, in both profiles alike:
  irq-off     samples where the guest's own code says its interrupts are
              off (IrqModel: the entry code, hard interrupt handlers,
              cli ... sti, or on arm64 'msr daifset' ... 'msr daifclr', in
              a function or in the functions it calls) are left out,
              except
  irq-return  samples in a hard interrupt's handler whose interrupted
              context had interrupts on: a guest interrupt held off there
              lands where the handler returns to, so they count there (the
              chain past the interrupt entry, or "[user]"), if the next
              sample kept shows the guest in that mode (user or kernel);
              if not, the handler went on elsewhere (to schedule(), through
              an sti, say) and they are left out; a held-off interrupt
              lands once, however long it was held, so one run of them
              counts there at most as many times as the host samples in
              one of the guest's sampling periods (held_cap: the
              host's sampling frequency over the guest's, as the two
              recordings' attributes give them), the rest left out as
              irq-capped;
  irq-enable  samples at the points where a held-off interrupt lands
              (after an sti and its shadow, after a popf, after the
              arm64 instructions that unmask interrupts, and for the i386
              kernel the vDSO's landing pad, where a SYSENTER syscall
              returns to user mode) are left out;
  idle        samples in the guest's idle loop (do_idle) are left out: the
              host sees a halted vCPU as not running;
  entry       kernel samples at a function's first instruction are left out
              of the overlap (not of reach): there the frame-pointer chain
              skips the function's caller, in both profiles, and with it
              the code that tells whether interrupts were off (the context
              switch's callees showed as called by schedule(), interrupts
              on).  The overlap with them is printed too.
The guest's own perf is in both profiles, as any other guest task.  The
guest's irq-off count says how often the model of its code is wrong: it
cannot take a sample where its interrupts are off.
"""
import bisect
import collections
import re
import subprocess

from perfdump import CONTEXTS, MISC_GUEST_KERNEL, MISC_GUEST_USER, sample_times, tsc_of

DEPTH = 8
MARKER = {v: k for k, v in CONTEXTS.items()}
# The lowest context marker (PERF_CONTEXT_MAX is -4095).
CONTEXT_MIN = (1 << 64) - 4095


def prefixes(*names):
    """A match function for names that start with one of names."""
    return re.compile("|".join(map(re.escape, names))).match


def x86_kind(op, args, before):
    """What an x86 instruction does to the interrupt state or the flow
    (see Arch)."""
    exact = {"cli": "off", "sti": "on", "ud2": "stop"}
    if op in exact:
        return exact[op]
    for kind, ops in (("save", "pushf"), ("restore", "popf"), ("call", "call"), ("ret", "ret"),
                      ("jmp", "jmp"), ("jcc", "j")):
        if op.startswith(ops):
            return kind
    return ""


A64_MOV = re.compile(r"mov [xw](\d+), #(0x[0-9a-f]+|\d+)\b")


def arm64_kind(op, args, before):
    """What an arm64 instruction does to the interrupt state (PSTATE.I,
    bit 1 of daifset's and daifclr's immediate, bit 7 of DAIF) or the flow
    (see Arch).  'msr daif, xN' sets the state xN holds: a constant that
    one of the two instructions before moved there (local_daif_restore()),
    or one saved before (local_irq_restore())."""
    if op == "msr":
        reg, _, val = args.partition(", ")
        if reg in ("daifset", "daifclr"):
            return ("off" if reg == "daifset" else "on") if int(val[1:], 0) & 2 else ""
        if reg == "daif":
            if val == "xzr":
                return "on"
            for m in map(A64_MOV.match, reversed(before)):
                if m and m[1] == val[1:]:
                    return "off" if int(m[2], 0) & 0x80 else "on"
            return "restore"
        return ""
    if op == "mrs" and args.endswith(", daif"):
        return "save"
    for kind, ops in (("call", ("bl", "blr")), ("ret", ("ret", "retaa", "retab", "eret")),
                      ("jmp", ("b", "br")), ("jcc", ("cbz", "cbnz", "tbz", "tbnz")),
                      ("stop", ("brk", "udf"))):
        if op in ops:
            return kind
    return "jcc" if op.startswith("b.") else ""


class Arch:
    """How the model reads one architecture's guest kernel: its objdump; its
    instructions, as kind(op, operands, the two instructions before, as
    "op operands") says: "off" and "on" (interrupts), "save" and
    "restore" (the interrupt state, to and from a register or the stack),
    "call", "ret", "jmp", "jcc" (a conditional jump), "stop" (a trap that
    does not return), "" (none of these); shadow: how many instructions
    after an "on" an interrupt waits; and its entry code, by names (match
    functions):
      entered_off     frames entered with interrupts off: the entry code
                      (the CPU turns them off for a syscall, an interrupt or
                      an exception) and what it runs before a frame exists;
      interrupt       hard interrupt entries: their handlers run with
                      interrupts off, and return to the context they
                      interrupted;
      exception       the entries of exceptions taken in kernel mode;
      return_to_user  the syscall entries, which return to user mode with
                      interrupts off until the return itself;
      entry_c         the C functions the entry code calls with interrupts
                      off;
      bottom          the true bottoms of a kernel stack: the syscall entries,
                      ret_from_fork, and the interrupt and exception entries
                      (a chain ends at one only where the interrupted context
                      was user mode: it goes on past the others)."""

    def __init__(self, objdump, kind, shadow, **names):
        self.objdump, self.kind, self.shadow = objdump, kind, shadow
        for key, match in names.items():
            setattr(self, key, match)
        self.entry = lambda n: bool(self.interrupt(n) or self.exception(n))


# On i386 two of the bottoms show under labels of their own:
# restore_all_switch_stack is in entry_INT80_32, at .Lsyscall_32_done, the
# return address that ret_from_fork_asm pushes below its frame for
# unwinders (a new task's chain ends in the syscall entry it will return
# through); handle_exception_return is in handle_exception, the exception
# entry's common part, after its call of the handler.  The i386 kernel's
# SYSENTER syscall returns with 'sti; sysexit' (its vDSO's landing pad,
# vdso_landing_points()), its device interrupts switch stacks in
# __handle_irq, and its exceptions share handle_exception.
X86 = Arch(
    "objdump", x86_kind, 1,
    entered_off=prefixes("asm_", "entry_SYSCALL_64", "entry_SYSENTER_32", "entry_INT80_32",
                         "handle_exception", "common_interrupt_return",
                         "restore_all_switch_stack", "native_irq_return_iret", "sync_regs",
                         "error_entry", "irq_entries_start", "spurious_entries_start",
                         "__handle_irq"),
    interrupt=prefixes("asm_common_interrupt", "asm_sysvec_", "asm_spurious_interrupt"),
    exception=prefixes("asm_exc_", "handle_exception"),
    return_to_user=prefixes("entry_SYSCALL_64", "entry_INT80_32", "restore_all_switch_stack"),
    entry_c=prefixes("exc_", "common_interrupt", "sysvec_", "spurious_interrupt",
                     "do_syscall_64", "do_int80_syscall_32", "do_fast_syscall_32",
                     "do_SYSENTER_32"),
    bottom=prefixes("entry_SYSCALL_64", "entry_SYSENTER_32", "entry_INT80_32", "ret_from_fork",
                    "restore_all_switch_stack", "asm_", "handle_exception"))
# arm64: the vectors' entries, el<EL><t|h>_64_<type> (el0t from user mode,
# el1h from the kernel), each calling its C handler, <entry>_handler; a
# syscall and a user-mode exception both come in through el0t_64_sync.
# The CPU masks DAIF on every exception; an interrupt is taken at the
# instruction after the one that unmasks it (no shadow).
ARM64 = Arch(
    "aarch64-linux-gnu-objdump", arm64_kind, 0,
    entered_off=re.compile(r"(el[01][th]_(64|32)_(sync|irq|fiq|error)|ret_to_(kernel|user)"
                           r"|call_on_irq_stack|vectors)$").match,
    interrupt=re.compile(r"el[01][th]_64_(irq|fiq)$").match,
    exception=re.compile(r"el1h_64_(sync|error)$").match,
    return_to_user=re.compile(r"el0t_64_(sync|error)$").match,
    entry_c=re.compile(r"el[01][th]_64_(sync|irq|fiq|error)_handler$").match,
    bottom=prefixes("el0t_64_", "ret_from_fork"))
ARCHES = {"x86_64": X86, "i386": X86, "arm64": ARM64}
VDSO_MMAP = re.compile(r"PERF_RECORD_MMAP2? .*\[(0x[0-9a-f]+)\(0x[0-9a-f]+\) @ .*\]: \S+ \[vdso\]")
INSN = re.compile(r"^\s*([0-9a-f]+):\s+(\S+)\s*(.*?)\s*$")
TARGET = re.compile(r"(?:0x)?([0-9a-f]{8,})(?:\s+<[^>]*>)?$")
FUNC = re.compile(r"^([0-9a-f]+) <([^>]+)>:$")


class IrqModel:
    """The guest kernel's code, read from its vmlinux, as to where it runs
    with interrupts off: each function's instructions along its paths,
    the instructions that turn interrupts off and on, and calls to
    functions that leave them off or on (spin_lock_irq(),
    spin_unlock_irqrestore(), ...).  Approximate (no path conditions, two
    levels of callees), and applied to both profiles alike.

    vmlinux: an ELF image, or an arm64 kernel's Image as booted (a raw
    binary: Debian's package has no vmlinux), read with symbols, the
    running kernel's kallsyms: its functions are the text symbols, and the
    address it runs at is primary_entry's, less the offset of the branch
    to it in the Image's header (the second instruction).  symbols (a
    System.map or kallsyms) also bound the entry code (__entry_text_start
    to __entry_text_end: .entry.text is no output section of its own), and
    where their _text is not where a vmlinux links it, say how far KASLR
    moved the code."""

    def __init__(self, vmlinux, arch=X86, symbols=None):
        self.arch = arch
        with open(vmlinux, "rb") as f:
            head = f.read(8)
        cmd = [arch.objdump, "-d", "--no-show-raw-insn", vmlinux]
        bounds = None
        table = kallsyms(symbols)
        syms = {}
        for a, _, n in table:
            syms.setdefault(n, a)
        entry = (syms["__entry_text_start"], syms["__entry_text_end"])
        if head[:4] == b"\x7fELF" and "_text" in syms:
            # A kernel that KASLR moved runs its vmlinux's code elsewhere:
            # at the kallsyms' _text, not at .text's address, where _text
            # is linked.
            sections = subprocess.run(["readelf", "-SW", vmlinux], capture_output=True,
                                      text=True, check=True).stdout
            m = re.search(r"\] \.text\s+PROGBITS\s+([0-9a-f]+)", sections)
            slide = syms["_text"] - int(m[1], 16) if m else 0
            if slide:
                # objdump moves the code, not its symbols: the functions
                # are the kallsyms' text symbols, as for an Image.
                cmd[-1:-1] = [f"--adjust-vma={slide:#x}"]
                bounds = sorted((a, n) for a, t, n in table
                                if t in "tTwW" and syms["_stext"] <= a < syms["_etext"])
        if head[:4] != b"\x7fELF":
            branch = int.from_bytes(head[4:8], "little")
            if branch >> 26 != 0b000101 or "primary_entry" not in syms:
                raise ValueError(f"{vmlinux}: neither ELF nor an arm64 Image whose header "
                                 f"branches to primary_entry in {symbols}")
            base = syms["primary_entry"] - 4 - ((branch & 0x3ffffff ^ 1 << 25) - (1 << 25)) * 4
            cmd = [arch.objdump, "-D", "-b", "binary", "-m", "aarch64", "--no-show-raw-insn",
                   f"--adjust-vma={base:#x}", f"--start-address={syms['_stext']:#x}",
                   f"--stop-address={syms['_etext']:#x}", vmlinux]
            bounds = sorted((a, n) for a, t, n in table
                            if t in "tTwW" and syms["_stext"] <= a < syms["_etext"])
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        self.funcs = {}         # key: [(address, kind, callee's key, target)]
        # The entry code: all of it runs with interrupts off.
        self.entry_text = set()
        # Functions of the same name (static ones, and on arm64 the
        # irqflags helpers a compiler did not inline, over a hundred
        # arch_local_irq_save() in Debian's kernel) each get a key of their
        # own: the name for the first, <name>@<address> for the others.
        self.copies = collections.defaultdict(list)    # name: [(start, key)]
        cur, before, nxt = None, ("", ""), 0

        def function(name, start):
            key = name if name not in self.copies else f"{name}@{start:x}"
            self.copies[name].append((start, key))
            return self.funcs.setdefault(key, [])

        for line in out.splitlines():
            m = FUNC.match(line)
            if m and bounds is None:
                cur = function(m[2], int(m[1], 16))
                continue
            m = INSN.match(line)
            if not m:
                continue
            addr, op, args = int(m[1], 16), m[2], m[3]
            if bounds is not None:
                while nxt < len(bounds) and bounds[nxt][0] <= addr:
                    cur = function(bounds[nxt][1], bounds[nxt][0])
                    nxt += 1
            if cur is None:
                continue
            t = TARGET.search(args)
            insn = (addr, arch.kind(op, args, before), None, int(t[1], 16) if t else None)
            before = (before[1], f"{op} {args}")
            cur.append(insn)
            if entry[0] <= addr < entry[1]:
                self.entry_text.add(addr)
        self._index()

    @classmethod
    def from_functions(cls, funcs, arch=X86):
        """A model of code written out as functions ({name: [(address,
        kind, callee, target)]}), one copy of each, no entry code, without
        objdump (tests/host/test_fidelity.py).  A call's callee is found by
        its target, as in code read from a vmlinux."""
        m = cls.__new__(cls)
        m.arch = arch
        m.funcs = {name: list(insns) for name, insns in funcs.items()}
        m.entry_text = set()
        m.copies = collections.defaultdict(list)
        for name, insns in m.funcs.items():
            m.copies[name].append((insns[0][0], name))
        m._index()
        return m

    def _index(self):
        """What the model looks up, from funcs and copies: the first
        instruction of each function, a direct call's callee by its target,
        all instructions in address order; and its memos, empty."""
        for copies in self.copies.values():
            copies.sort()
        first = {insns[0][0]: key for key, insns in self.funcs.items() if insns}
        self.starts = set(first)
        for insns in self.funcs.values():
            insns[:] = [(a, k, first.get(t) if k == "call" else None, t) for a, k, _, t in insns]
        self.code = sorted(i for insns in self.funcs.values() for i in insns)
        self.effect = {}
        self.roles = {}
        self.memo = {}
        self.addrs = {}         # name: its instructions' addresses
        self.flows = {}

    def key(self, name, address):
        """The key of function name that holds address (see copies)."""
        copies = self.copies.get(name)
        if not copies or len(copies) == 1:
            return name
        i = bisect.bisect_right(copies, (address, "\uffff"))
        return copies[max(i - 1, 0)][1]

    def enable_points(self):
        """Where an interrupt held off by the guest lands: after an
        instruction that turns interrupts on and its shadow (x86's sti: the
        instruction after it), at the shadow's target if it is a direct
        jump, and, if it is a ret, at the return address of each direct
        call of the function (local_irq_enable() as a function of its own,
        'sti; ret', as in the i386 kernel's
        syscall_enter_from_user_mode_prepare()); after a restore of the
        interrupt state (popf, 'msr daif, xN')."""
        points = set()
        code, shadow = self.code, self.arch.shadow
        on_ret = {name for name, insns in self.funcs.items()
                  if shadow and any(a[1] == "on" and b[1] == "ret"
                                    for a, b in zip(insns, insns[1:]))}
        for i, (_, kind, callee, _) in enumerate(code[:-2]):
            if kind == "on":
                _, nkind, _, target = code[i + shadow]
                points.add(code[i + 1 + shadow][0])
                if shadow and nkind in ("jmp", "jcc") and target is not None:
                    points.add(target)
            elif kind == "restore":
                points.add(code[i + 1][0])
            elif kind == "call" and callee in on_ret:
                points.add(code[i + 1][0])
        return points

    def run(self, name, state, until=None, depth=0, restore=None):
        """The interrupt state ("on", "off") where function name reaches
        address until (before that instruction runs; without until, where
        it returns), from state (None: unknown, for how the function leaves
        it), following its jumps (flow()).  Where its paths disagree, "on"
        at until (the guest could have sampled there), None (as it found
        it) where it returns, but for local_irq_save() as a function of its
        own (role() "save"), off on some paths and as found on the others
        (it turns interrupts off only where they are on): "off"; an
        address no path reaches: in an out-of-line block, see detour();
        else (an indirect jump's target) read in a straight line, in
        address order (straight())."""
        states, exits = self.flow(name, state, depth, restore)
        if until is None:
            if len(exits) == 1:
                return next(iter(exits))
            return "off" if exits == {None, "off"} and self.role(name) == "save" else None
        found = states.get(bisect.bisect_left(self.addresses(name), until))
        if not found:
            found = self.detour(name, state, until, depth, restore, states)
        if not found:
            return self.straight(name, state, until, depth, restore)
        if "on" in found:
            return "on"
        return "off" if "off" in found else None

    def flow(self, name, state, depth, restore):
        """Function name's instructions followed from its entry, from
        state, through fall-throughs and direct jumps: the states each
        instruction can run in ({index: {state}}), and those it can return
        in.  A save (pushf, 'mrs xN, daif') saves the state; a restore
        (popf, 'msr daif, xN') and x86's local_irq_restore() (an sti that a
        conditional jump skips) restore it, or, if this function
        did not save it, restore the state the function was entered in (or
        restore: an exception handler turns interrupts on again only if the
        context it interrupted had them on).  A call changes the state as
        its callee leaves it (leaves()), at depth 0 and 1 (two levels of
        callees)."""
        key = (name, state, depth, restore)
        if key in self.flows:
            return self.flows[key]
        insns = self.funcs.get(name, ())
        addrs = self.addresses(name)
        entry = restore or state
        seen = collections.defaultdict(set)
        states = collections.defaultdict(set)
        exits = set()
        work = [(0, state, ())] if insns else []
        while work:
            i, cur, saved = work.pop()
            if (cur, saved) in seen[i]:
                continue
            seen[i].add((cur, saved))
            states[i].add(cur)
            _, kind, _, t = insns[i]
            cur, saved = self.step(insns, i, cur, saved, entry, depth)
            nexts = []
            if kind in ("jmp", "jcc"):
                j = bisect.bisect_left(addrs, t) if t is not None else len(addrs)
                if j == i + 2 and kind == "jcc" and self.skipped(insns, i + 1):
                    # local_irq_restore(): the jump over its sti
                    # restores the state too, as the sti does.
                    nexts.append((j,) + ((saved[-1], saved[:-1]) if saved else (entry, saved)))
                elif j < len(addrs) and addrs[j] == t:
                    nexts.append((j, cur, saved))
                elif kind == "jmp":
                    exits.add(cur)      # a tail call, or an indirect jump
                if kind == "jcc":
                    nexts.append((i + 1, cur, saved))
            elif kind == "ret":
                exits.add(cur)
            elif kind != "stop":
                nexts.append((i + 1, cur, saved))
            work.extend(n for n in nexts if n[0] < len(insns))
        self.flows[key] = (states, exits)
        return self.flows[key]

    def addresses(self, name):
        """The addresses of function name's instructions, in order."""
        if name not in self.addrs:
            self.addrs[name] = [a[0] for a in self.funcs.get(name, ())]
        return self.addrs[name]

    def detour(self, name, state, until, depth, restore, states):
        """The states in which function name reaches address until in a
        block that no path reaches and that ends with a jump back into
        reached code: a static branch's (a jump label's) out-of-line code,
        whose site is a nop until the kernel patches it into a jump there
        (__perf_event_task_sched_out() in __schedule()).  The block begins
        after the jump or return before it; it is entered in the states of
        the instruction before the one it jumps back to: the site, where
        the block returns to the instruction after it.  An empty set where
        that does not fit."""
        insns, addrs = self.funcs.get(name, ()), self.addresses(name)
        u = bisect.bisect_left(addrs, until)
        start, end = u, u
        while start > 0 and insns[start - 1][1] not in ("jmp", "ret", "stop"):
            start -= 1
        while end < len(insns) and insns[end][1] not in ("jmp", "ret", "stop"):
            end += 1
        if end == len(insns) or insns[end][1] != "jmp" or insns[end][3] is None:
            return set()
        j = bisect.bisect_left(addrs, insns[end][3])
        if not 0 < j < len(addrs) or addrs[j] != insns[end][3] or not states.get(j - 1):
            return set()
        entry, found = restore or state, set()
        for cur in states[j - 1]:
            saved = ()
            for i in range(start, u):
                cur, saved = self.step(insns, i, cur, saved, entry, depth)
            found.add(cur)
        return found

    def straight(self, name, state, until, depth, restore):
        """run(), reading the instructions below until in address order."""
        entry, saved = restore or state, ()
        insns = self.funcs.get(name, ())
        for i, insn in enumerate(insns):
            if insn[0] >= until:
                break
            state, saved = self.step(insns, i, state, saved, entry, depth)
        return state

    def step(self, insns, i, cur, saved, entry, depth):
        """The state (cur) and the saved states (a tuple) after insns[i],
        for flow() and straight(): see flow()."""
        _, kind, callee, _ = insns[i]
        if kind == "off":
            return "off", saved
        if kind == "save":
            return cur, (saved + (cur,))[-4:]
        if kind == "restore" or self.skipped(insns, i):
            return (saved[-1], saved[:-1]) if saved else (entry, saved)
        if kind == "on":
            return "on", saved
        if callee and depth < 2:
            role = self.role(callee)
            if role == "restore":
                return (saved[-1], saved[:-1]) if saved else (entry, saved)
            if role == "save":
                saved = (saved + (cur,))[-4:]
            return self.leaves(callee, depth + 1) or cur, saved
        return cur, saved

    def role(self, name):
        """"save" for a function whose own instructions save the interrupt
        state and do not restore it, and that turns interrupts off on a
        path (local_irq_save() as a function of its own, as Debian's arm64
        kernels build arch_local_irq_save(); not one that only reads the
        state); "restore" for one that restores it and does not save it
        (arch_local_irq_restore(), x86's spin_unlock_irqrestore()); None
        for others."""
        if name not in self.roles:
            self.roles[name] = None     # a recursive call: none
            insns = self.funcs.get(name, ())
            kinds = {k for _, k, _, _ in insns}
            kinds |= {"restore" for i in range(len(insns)) if self.skipped(insns, i)}
            # A save helper's save counts as the function's own: in
            # Debian's arm64 kernel, check_and_switch_context() saves with
            # an out-of-line arch_local_irq_save() and restores itself.
            # (Not a restore helper's: its save may be a level deeper.)
            kinds |= {"save" for _, k, c, _ in insns if k == "call" and c and self.role(c) == "save"}
            role = None
            if "save" in kinds and "restore" not in kinds:
                role = "save" if "off" in self.flow(name, None, 1, None)[1] else None
            elif "restore" in kinds and "save" not in kinds:
                role = "restore"
            self.roles[name] = role
        return self.roles[name]

    def skipped(self, insns, i):
        """Whether insns[i] is x86's local_irq_restore(): an sti that
        follows a conditional jump (that skips it)."""
        return (self.arch.shadow and insns[i][1] == "on" and i > 0
                and insns[i - 1][1] == "jcc")

    def leaves(self, name, depth=1):
        """How function name leaves the interrupt state: "on", "off" or
        None (as it found it, or as its paths disagree), from its own
        instructions and, at depth 1, its callees' own: one level of
        callees is a guess already, but it takes one to read a helper that
        calls a helper (Debian's arm64 arch_local_irq_save() calls its
        arch_local_irq_disable())."""
        if (name, depth) not in self.effect:
            self.effect[name, depth] = None     # a recursive call: as found
            self.effect[name, depth] = self.run(name, None, depth=depth)
        return self.effect[name, depth]

    def call_before(self, name, ret):
        """The address of the instruction of function name that ends at
        ret, a return address: its call (ret itself if name has none
        below ret)."""
        addrs = self.addresses(name)
        i = bisect.bisect_left(addrs, ret)
        return addrs[i - 1] if i else ret

    def state(self, frames, names):
        """The guest's interrupt state where a chain (addresses and names,
        leaf first) was sampled: from its outermost frame in, each frame's
        function run up to its call of the next (the leaf: up to the
        sampled address).  A sample in the entry code is off,
        whatever its chain says: the CPU entered it with interrupts off
        (a syscall, or an interrupt gate), and it returns to the
        interrupted context with them still off (error_return,
        restore_regs_and_return_to_kernel, ...)."""
        if frames[0] in self.entry_text:
            return "off"
        state, restore = "on", None
        for i in range(len(frames) - 1, -1, -1):
            if self.arch.entered_off(names[i]):
                # An exception keeps what it interrupted, for its handler:
                # that turns interrupts on only if they were on there.
                restore = state if self.arch.exception(names[i]) else None
                state = "off"
                continue
            if restore == "off":
                continue
            if self.arch.entry_c(names[i]):
                state = "off"
                if i == len(frames) - 1:
                    # A chain that ends here shows no entry frame: the
                    # entry came from user mode, where interrupts are on.
                    restore = "on"
            # A return address follows its call: stop before that call,
            # whose callee has not returned (nor left interrupts as it
            # leaves them) yet.
            # (A return address, past its call: the call may be the last
            # instruction of its function.)
            func = self.key(names[i], frames[i] if i == 0 else frames[i] - 1)
            until = frames[i] if i == 0 else self.call_before(func, frames[i])
            key = (func, state, until, restore)
            if key not in self.memo:
                self.memo[key] = self.run(func, state, until, restore=restore) or state
            state, restore = self.memo[key], None
        return state


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


def landing(frames, names, model, points):
    """Where the guest's interrupt, held off at an irq-off sample, lands
    if the guest runs on with interrupts off until it returns to the
    context that its innermost entry interrupted: the names of that
    context's frames (the chain past the entry), "[user]" for user mode,
    or None where it lands elsewhere, at a point both profiles leave out:
    a context with interrupts off, or one at an enable point or a
    function's first instruction, or the i386 SYSENTER syscall's return
    to user mode (its vDSO's landing pad).  A chain with no entry frame
    outside its bottom: a cli region in a syscall, or its return."""
    i = next((i for i, n in enumerate(names) if model.arch.entry(n)), None)
    if i is None:
        return "[user]" if model.arch.return_to_user(names[-1]) else None
    if i + 1 == len(frames):
        return "[user]"
    rest = frames[i + 1:]
    if rest[0] in points or rest[0] in model.starts or \
            model.state(rest, names[i + 1:]) == "off":
        return None
    return names[i + 1:]


def returned(where, stack, names, arch):
    """Whether a sample kept (stack, and names if a kernel one) shows the
    guest back in the context where (landing()): user mode for "[user]";
    for a kernel context, a chain with no interrupt or exception entry
    (the handler returned) that ends where where ends (the same syscall
    or task)."""
    if where == "[user]" or names is None:
        return where == stack
    return where[-1] == names[-1] and not any(map(arch.entry, names))


class Profile:
    """One side's folded stacks, and its kernel chains (names, leaf first)."""

    def __init__(self, samples, kmode, umode, marker, sym, model, points, user_points,
                 held_cap=None):
        self.arch = model.arch
        self.held_cap = held_cap
        self.stacks = collections.Counter()
        # The same with the samples at a function's first instruction.
        self.with_entry = collections.Counter()
        self.chains = []
        self.dropped = collections.Counter()
        self.order = []
        # Samples in a hard interrupt's handler, interrupts off: where
        # the guest's interrupt held off there lands, if the handler
        # returns straight to the context it interrupted.
        self.held = []
        for mode, ip, chain in samples:
            if mode == umode:
                if ip in user_points:
                    self.drop("irq-enable")
                    continue
                self.add("[user]")
                continue
            if mode != kmode:
                continue
            frames = kernel_frames(chain, marker) or [ip]
            names = [sym(a) or f"{a:#x}" for a in frames]
            if "do_idle" in names:
                self.drop("idle")
                continue
            if ip in points:
                self.drop("irq-enable")
                continue
            if model.state(frames, names) == "off":
                self.hold(frames, names, model, points)
                continue
            self.chains.append(names)
            stack = ";".join(names[:DEPTH])
            if ip in model.starts:
                self.with_entry[stack] += 1
                self.drop("entry")
                continue
            self.add(stack, names)
        self.drop()
        self.total = sum(self.stacks.values())

    def hold(self, frames, names, model, points):
        """An irq-off sample: held for the next sample kept (add()) with
        where the guest's interrupt held off there lands, if it lands in
        the context its innermost entry interrupted (landing()); else left
        out."""
        where = landing(frames, names, model, points)
        if where is None:
            self.drop("irq-off")
            return
        self.held.append(where)

    def add(self, stack, names=None):
        """A sample the guest could take, at stack (a kernel one's names,
        leaf first).  The held samples before it go where they land if
        this one is in that context (see returned()): the guest got there
        with interrupts off all along; if not, it went through an sti
        (schedule() on the way to user mode, an exception's handler):
        left out."""
        back = [h for h in self.held if returned(h, stack, names, self.arch)]
        self.dropped["irq-off"] += len(self.held) - len(back)
        self.held = []
        # The guest's interrupt, held off all along, lands there once.
        cap = self.held_cap
        if cap is not None and len(back) > cap:
            self.dropped["irq-capped"] += len(back) - cap
            back = back[:cap]
        self.dropped["irq-return"] += len(back)
        for s in [";".join(h[:DEPTH]) if h != "[user]" else h for h in back] + [stack]:
            self.stacks[s] += 1
            self.with_entry[s] += 1
            self.order.append(s)

    def drop(self, why=None):
        """A sample left out (why): the held samples before it too, as
        irq-off (the guest's interrupt did not land where they wait)."""
        if why:
            self.dropped[why] += 1
        self.dropped["irq-off"] += len(self.held)
        self.held = []

    def reach(self):
        return (sum(1 for c in self.chains if self.arch.bottom(c[-1])) / len(self.chains)
                if self.chains else 0.0)

    def share(self, stack):
        return self.stacks[stack] / self.total if self.total else 0.0


def overlap(a, b):
    """sum over stacks of min(p_a, p_b), for two Counters of stacks."""
    na, nb = sum(a.values()), sum(b.values())
    if not na or not nb:
        return 0.0
    return sum(min(a[s] / na, b[s] / nb) for s in a.keys() | b.keys())


def same_interval(host, guest, vcpu_tsc):
    """The samples of both recordings that lie in the interval both cover.
    host and guest: (raw dump, its samples); vcpu_tsc: the vCPU's TSC
    offset and scale (guest TSC = host TSC * scale + offset).  The guest's
    timestamps go to the host's clock through the TSC, with each
    recording's PERF_RECORD_TIME_CONV.  Returns both lists, and how long
    the interval is and how much longer the guest's recording is, in s;
    None if a recording has no TIME_CONV or no samples."""
    (hdump, hs), (gdump, gs) = host, guest
    hconv, gconv = tsc_of(hdump), tsc_of(gdump)
    offset, scale = vcpu_tsc
    ht = sample_times(hdump)
    gt = [hconv[1](round((gconv[0](t) - offset) / scale)) for t in sample_times(gdump)] \
        if hconv and gconv else []
    # The host's timestamps of the guest's samples, not of its own.
    hg = [t for t, s in zip(ht, hs) if s[0] in (MISC_GUEST_KERNEL, MISC_GUEST_USER)]
    if not hg or not gt or len(ht) != len(hs) or len(gt) != len(gs):
        return None
    lo, hi = max(hg[0], gt[0]), min(hg[-1], gt[-1])
    return ([s for t, s in zip(ht, hs) if lo <= t <= hi],
            [s for t, s in zip(gt, gs) if lo <= t <= hi],
            (hi - lo) / 1e9, (gt[-1] - gt[0] - hi + lo) / 1e9)


def whole_windows(host, guest):
    """Both recordings whole, for a guest whose clock the host cannot
    convert (arm64: the guest's counter is the host's less an offset that
    KVM does not show): the host's window lies inside the guest's
    (tests/vm/demo.sh), both bounded by the same console lines.  Returns
    both lists, how long the host's window is (from its first guest
    sample to its last) and how much longer the guest's is, in s; None if
    a recording has no samples."""
    (hdump, hs), (gdump, gs) = host, guest
    ht, gt = sample_times(hdump), sample_times(gdump)
    hg = [t for t, s in zip(ht, hs) if s[0] in (MISC_GUEST_KERNEL, MISC_GUEST_USER)]
    if not hg or not gt or len(ht) != len(hs) or len(gt) != len(gs):
        return None
    return hs, gs, (hg[-1] - hg[0]) / 1e9, (gt[-1] - gt[0] - hg[-1] + hg[0]) / 1e9


def kallsyms(path):
    """[(address, type, name)] of a kallsyms file's (or a System.map's)
    symbols of the kernel proper (not its modules')."""
    with open(path, errors="replace") as f:
        return [(int(f[0], 16), f[1], f[2]) for f in map(str.split, f) if len(f) == 3]


def vdso_landing_points(dump, vdso):
    """The user addresses where the i386 kernel returns from a SYSENTER
    syscall, interrupts on again: its vDSO's int80_landing_pad (the symbol's
    offset in vdso, the vDSO's debug image) in each vDSO mapping that the
    raw dump's PERF_RECORD_MMAP2 records show."""
    out = subprocess.run(["nm", vdso], capture_output=True, text=True, check=True).stdout
    pad = next(int(f[0], 16) for f in (line.split() for line in out.splitlines())
               if f[-1] == "int80_landing_pad")
    bases = set()
    with open(dump, errors="replace") as f:
        for line in f:
            m = VDSO_MMAP.search(line)
            if m:
                bases.add(int(m.group(1), 16))
    return {b + pad for b in bases}


def held_cap(host_freq, guest_freq):
    """How many host samples one guest sampling period holds: the two
    recordings' sampling frequencies (Hz, sample_freq()) divided, at least
    1; None (no cap) if either is unknown.  On x86 the host records at
    perf's default 4000 Hz, the guest itself at 1000 Hz
    (tests/demo/l2-init*): 4.  Measured on four i386 recordings (README,
    "The i386 guest's window doubled"): the host moved 2.03 held samples
    per guest sample to kernel contexts, 0.90 to user mode, because the
    guest's own sampling interrupt runs longer when it interrupted its
    kernel; capped at 4, the i386 overlap went from 0.855-0.887 to
    0.876-0.916, the 64-bit one from 0.92 to 0.93."""
    if not host_freq or not guest_freq:
        return None
    return max(1, host_freq // guest_freq)


def fidelity(check, tag, host_samples, guest_samples, sym, mode_misc, vmlinux,
             user_points=frozenset(), arch=X86, symbols=None, cap=None):
    """Print and check the fidelity line of one guest.  mode_misc: the
    cpumodes (MISC_*) of the host's guest-kernel and guest-user samples and
    of the guest's own kernel and user samples; user_points: the guest user
    addresses where a held-off interrupt lands (vdso_landing_points());
    arch, vmlinux and symbols: see IrqModel; cap: see held_cap()."""
    hk, hu, gk, gu = mode_misc
    model = IrqModel(vmlinux, arch, symbols)
    points = model.enable_points()
    host = Profile(host_samples, hk, hu, MARKER["GUEST_KERNEL"], sym, model, points,
                   user_points, cap)
    guest = Profile(guest_samples, gk, gu, MARKER["KERNEL"], sym, model, points,
                    user_points, cap)
    both = overlap(host.stacks, guest.stacks)
    # What sampling noise alone costs: the guest's profile against itself,
    # its odd samples against its even ones.
    halves = overlap(collections.Counter(guest.order[0::2]), collections.Counter(guest.order[1::2]))
    # The same in alternate blocks of 20 samples: the guest's samples come
    # in runs (its sampling interrupt outlasts its period here, so the next
    # one lands where the last returned), which alternate samples hide.
    blocks = [collections.Counter(s for i, s in enumerate(guest.order) if i // 20 % 2 == b)
              for b in (0, 1)]
    rh, rg = host.reach(), guest.reach()
    print(f"fidelity: {tag}: reach host {rh:.2f} guest {rg:.2f}; overlap {both:.2f} "
          f"({host.total} host, {guest.total} guest samples)")
    print(f"# {tag}: with the samples at a function's first instruction: overlap "
          f"{overlap(host.with_entry, guest.with_entry):.2f}")
    print(f"# {tag}: the guest's profile against itself (odd against even samples): "
          f"overlap {halves:.2f}; in alternate blocks of 20 samples: {overlap(*blocks):.2f}")
    # The guest cannot sample where its interrupts are off: what it has
    # there is where the model of its code is wrong.
    print(f"# {tag}: left out: host {dict(host.dropped)}, guest {dict(guest.dropped)}")
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
    check(both >= 0.85, f"{tag}: fidelity: overlap {both:.2f} of the host's and the guest's "
          f"profiles is at least 0.85 (the guest against itself: {halves:.2f})")
