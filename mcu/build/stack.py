"""Worst-case stack depth of a built firmware: gcc's per-function frames (-fstack-usage) over the ELF's call graph.

- Frames: the .su files gcc writes beside every object of the build (mcu/build/firmware.scons passes -fstack-usage).
  Functions without one (newlib, libgcc) get the frame their prologue sets up (push, stmdb, vpush, sub sp),
  read from the disassembly; they are listed as estimated. A name defined in several files takes its largest frame.
- Calls: every `bl` / `blx <symbol>` and every branch to another function's first instruction (a tail call) in
  `arm-none-eabi-objdump -d` of fw.elf. An indirect call (`blx rN`) or a dynamic frame makes the result a lower bound
  (`bounded` is False); recursion is an error.
- depth(f) = frame(f) + max depth(callee). `model` is the deepest of model_run and model_run_v, what a caller of the
  model needs on top of its own frame; `firmware` is the depth from Reset_Handler plus the deepest interrupt that
  can land on top of it (the exception frame the core pushes, 8 words or 26 with the FPU's extended frame, 4 bytes
  of alignment, and the handler's own depth). The harness's measured peak (MCU_DONE stack=) never exceeds it.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from mcu.errors import McuError

OBJDUMP = "arm-none-eabi-objdump"
ENTRIES = ("_run", "_run_v")  # after the model's name: model_run, model_run_v
RESET = "Reset_Handler"
FAULT = "HardFault_Handler"  # switches to its own stack and never returns: not counted
EXCEPTION_FRAME = {False: 8 * 4 + 4, True: 26 * 4 + 4}  # basic / FP extended frame, + alignment padding

_FUNC = re.compile(r"^([0-9a-f]+) <([^>]+)>:$")
_INSN = re.compile(r"^\s*([0-9a-f]+):\s+(\S+)\s*(.*)$")
_TARGET = re.compile(r"^([0-9a-f]+) <([^>+]+)>$")
_REGS = re.compile(r"\{([^}]*)\}")


class StackError(McuError):
    """The stack depth cannot be computed (missing tool or .su files, recursion)."""


@dataclass(frozen=True)
class StackReport:
    """Worst-case stack bytes of a firmware image."""
    model: int                    # deepest <name>_run / <name>_run_v chain: their frames + kernels + helpers
    firmware: int                 # from Reset_Handler (harness included) + the deepest interrupt on top
    path: tuple[str, ...]         # the deepest model chain, outermost first
    frames: dict[str, int] = field(repr=False)
    estimated: tuple[str, ...] = ()  # functions whose frame was read from their prologue
    bounded: bool = True          # False: a dynamic frame or an indirect call; the numbers are lower bounds
    reserved: int | None = None   # the board's stack (board.toml stack_bytes)
    entry: str = "model_run"      # the model's run function (<name>_run)

    def format(self) -> str:
        chain = " -> ".join(f"{f} {self.frames.get(f, 0)}" for f in self.path)
        lines = [f"{'stack':<22}{'bytes':>10}",
                 f"  {self.entry + ' (worst)':<20}{self.model:>10,}   {chain}",
                 f"  {'firmware (worst)':<20}{self.firmware:>10,}"
                 + (f"   of {self.reserved:,} reserved" if self.reserved else "")]
        if not self.bounded:
            lines.append("  (lower bounds: a dynamic stack frame or an indirect call)")
        return "\n".join(lines)


def stack_depth(pkg) -> StackReport:
    """The stack report of pkg's firmware (built if needed)."""
    from mcu.boards import load_board
    board = load_board(pkg.board)
    return analyze(pkg.build(), pkg.build_dir, fpu=bool(board.fpu), reserved=board.stack_bytes, name=pkg.name)


def analyze(elf: str | Path, build_dir: str | Path, *, fpu: bool, reserved: int | None = None,
            name: str = "model") -> StackReport:
    """Stack depths of elf, with the frames from the .su files under build_dir."""
    frames, dynamic = read_su(build_dir)
    if not frames:
        raise StackError(f"no .su files under {build_dir}: build the firmware with -fstack-usage "
                         f"(mcu/build/firmware.scons does; rebuild with pkg.build())")
    graph, prologue, indirect, starts = call_graph(elf)
    estimated = set()

    def frame(f: str) -> int:
        if f in frames:
            return frames[f]
        estimated.add(f)
        return prologue.get(f, 0)

    memo: dict[str, tuple[int, tuple[str, ...]]] = {}
    active: list[str] = []

    def depth(f: str) -> tuple[int, tuple[str, ...]]:
        """(deepest bytes from f's entry, the chain that reaches it)."""
        if f in memo:
            return memo[f]
        if f in active:
            raise StackError(f"recursion through {' -> '.join(active[active.index(f):] + [f])}: "
                             f"the stack depth is unbounded")
        active.append(f)
        best, path = 0, ()
        for callee in sorted(graph.get(f, ())):
            d, p = depth(callee)
            if d > best:
                best, path = d, p
        active.pop()
        memo[f] = (frame(f) + best, (f,) + path)
        return memo[f]

    entries = [name + e for e in ENTRIES if name + e in graph]
    if not entries:
        raise StackError(f"{elf} has neither {' nor '.join(name + e for e in ENTRIES)}")
    model, path = max((depth(f) for f in entries), key=lambda t: t[0])
    handlers = _interrupt_handlers(elf, starts)
    isr = max((depth(h)[0] for h in handlers), default=0) + EXCEPTION_FRAME[fpu]
    firmware = (depth(RESET)[0] if RESET in graph else model) + isr
    used = {f for f in memo}
    bounded = not (used & (dynamic | indirect))
    return StackReport(model, firmware, path, {f: frame(f) for f in sorted(used)},
                       tuple(sorted(estimated & used)), bounded, reserved, f"{name}_run")


def _interrupt_handlers(elf: str | Path, starts: dict[int, str]) -> list[str]:
    """The *_Handler functions an interrupt can run on top of the main stack: not Reset_Handler and not whatever
    shares HardFault_Handler's address (the fault handler and its weak aliases; it never returns)."""
    from elftools.elf.elffile import ELFFile

    with open(elf, "rb") as f:
        symtab = ELFFile(f).get_section_by_name(".symtab")
        syms = {s.name: s["st_value"] & ~1 for s in (symtab.iter_symbols() if symtab else ())
                if s["st_info"]["type"] == "STT_FUNC" and s.name.endswith("_Handler")}
    skip = {syms.get(RESET), syms.get(FAULT)}
    return sorted({starts[a] for a in syms.values() if a not in skip and a in starts})


def read_su(build_dir: str | Path) -> tuple[dict[str, int], set[str]]:
    """function -> frame bytes (largest over files) and the functions with unbounded dynamic frames."""
    frames, dynamic = {}, set()
    for su in sorted(Path(build_dir).rglob("*.su")):
        for line in su.read_text().splitlines():
            parts = line.rsplit("\t", 2)
            if len(parts) != 3:
                continue
            name, size, kind = parts[0].rsplit(":", 1)[-1], int(parts[1]), parts[2]
            frames[name] = max(frames.get(name, 0), size)
            if kind.startswith("dynamic") and "bounded" not in kind:
                dynamic.add(name)
    return frames, dynamic


def call_graph(elf: str | Path) -> tuple[dict[str, set[str]], dict[str, int], set[str], dict[int, str]]:
    """(function -> callees, function -> frame its prologue sets up, functions with indirect calls,
    address -> function) of elf."""
    tool = shutil.which(OBJDUMP)
    if tool is None:
        raise StackError(f"{OBJDUMP} is not installed; install it with `apt-get install binutils-arm-none-eabi` "
                         f"(part of gcc-arm-none-eabi) or run ./dev setup")
    proc = subprocess.run([tool, "-d", "--no-show-raw-insn", str(elf)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise StackError(f"{OBJDUMP} -d {elf} failed: {proc.stderr.strip()}")
    starts: dict[int, str] = {}
    body: dict[str, list[tuple[str, str]]] = {}
    current = None
    for line in proc.stdout.splitlines():
        m = _FUNC.match(line)
        if m:
            current = m.group(2)
            starts[int(m.group(1), 16)] = current
            body.setdefault(current, [])
            continue
        m = _INSN.match(line)
        if m and current is not None:
            body[current].append((m.group(2), re.split(r"[;@]", m.group(3))[0].strip()))
    graph: dict[str, set[str]] = {}
    prologue, indirect = {}, set()
    for name, insns in body.items():
        callees = graph.setdefault(name, set())
        for op, args in insns:
            base = op.split(".")[0]
            if base in ("bl", "blx") and re.fullmatch(r"r\d+|lr|ip", args):
                indirect.add(name)
                continue
            if not (base in ("b", "bl", "blx") or re.fullmatch(r"b(eq|ne|cs|cc|hs|lo|mi|pl|vs|vc|hi|ls|ge|lt|gt|le)",
                                                                base)):
                continue
            t = _TARGET.match(args)
            if t is None:
                continue
            target = starts.get(int(t.group(1), 16))
            if target is not None and target != name:  # a call, or a tail call to another function's start
                callees.add(target)
        prologue[name] = _prologue_bytes(insns)
    return graph, prologue, indirect, starts


def _prologue_bytes(insns: list[tuple[str, str]]) -> int:
    """Stack a function reserves: its pushes (4 bytes per core register, 8 per d register) and sub sp, summed."""
    total = 0
    for op, args in insns:  # every push and sub sp, whichever branch: an upper bound
        base = op.split(".")[0]
        regs = _REGS.search(args)
        if base == "push" or (base == "stmdb" and args.startswith("sp!")):
            total += 4 * _count_regs(regs.group(1)) if regs else 0
        elif base == "vpush" and regs:
            total += 8 * _count_regs(regs.group(1))
        elif base in ("sub", "subw") and re.match(r"sp,\s*(sp,\s*)?#", args):
            total += int(args.rsplit("#", 1)[1], 0)
    return total


def _count_regs(text: str) -> int:
    n = 0
    for part in text.split(","):
        part = part.strip()
        if "-" in part:
            lo, hi = (int(re.sub(r"\D", "", p)) for p in part.split("-"))
            n += hi - lo + 1
        elif part:
            n += 1
    return n
