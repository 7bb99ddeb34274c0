"""Runs a firmware image under qemu-system-arm: input.bin in, output.bin and the MCU_DONE line out, faults decoded.

 - run_firmware: one inference. run_firmware_batch (firmware built with -DMCU_BATCH): N records in
   batch.bin, N outputs back from batch_out.bin, in one QEMU launch; the console is read as it
   comes so its MCU_PROGRESS lines drive a progress callback.

 - QEMU runs in a fresh temporary directory holding input.bin; the firmware opens input.bin and
   writes output.bin there through semihosting, and prints its result lines on the semihosting
   console (QEMU's stderr, merged into stdout here).
 - `-icount shift=0` makes one guest instruction one nanosecond of virtual time, so
   instructions = (ticks - overhead) * 1e9 / systick_hz, to within one SysTick tick.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from elftools.elf.elffile import ELFFile

from mcu.boards import Board, load_board
from mcu.errors import (
    FirmwareError,
    HardFaultError,
    NotEmulatedError,
    QemuNotFoundError,
    QemuTimeoutError,
    StackOverflowError,
)

QEMU = "qemu-system-arm"
ICOUNT_SHIFT = 0  # 2**shift ns of virtual time per instruction
INSTRUCTIONS_PER_SECOND = 10**9 >> ICOUNT_SHIFT

_PROGRESS = re.compile(r"^MCU_PROGRESS (\d+)\s*$")
_BATCH = re.compile(r"^MCU_BATCH n=(\d+)\s*$", re.MULTILINE)
_DONE = re.compile(r"^MCU_DONE status=(-?\d+) ticks=(\d+) overhead=(\d+) stack=(\d+)\s*$", re.MULTILINE)
_ERROR = re.compile(r"^MCU_ERROR (.*)$", re.MULTILINE)
_OVERFLOW = re.compile(r"^MCU_STACK_OVERFLOW (.*)$", re.MULTILINE)
_FAULT = re.compile(r"^MCU_HARDFAULT pc=(0x[0-9a-f]{8}) lr=(0x[0-9a-f]{8}) cfsr=(0x[0-9a-f]{8}|none)", re.MULTILINE)

# Configurable Fault Status Register bits (ARMv7-M / ARMv8-M mainline), for the error message.
_CFSR_BITS = {
    0: "IACCVIOL (instruction fetch from a no-execute/MPU-protected address)",
    1: "DACCVIOL (data access violation)",
    3: "MUNSTKERR",
    4: "MSTKERR (stack overflow?)",
    5: "MLSPERR",
    8: "IBUSERR (instruction fetch bus error: jump to a bad address?)",
    9: "PRECISERR (data read/write of an unmapped address)",
    10: "IMPRECISERR (imprecise data bus error)",
    11: "UNSTKERR",
    12: "STKERR (stack overflow: the stack ran off the bottom of RAM?)",
    13: "LSPERR",
    16: "UNDEFINSTR (undefined instruction: built for the wrong core?)",
    17: "INVSTATE (executed with the Thumb bit clear)",
    18: "INVPC (bad exception return)",
    19: "NOCP (FPU/MVE instruction with the coprocessor disabled)",
    20: "STKOF (stack limit overflow)",
    24: "UNALIGNED (unaligned access)",
    25: "DIVBYZERO",
}


@dataclass(frozen=True)
class RunResult:
    """What one firmware run produced."""

    output_bytes: bytes  # output.bin: all model outputs concatenated
    status: int  # model_run_v's mcu_status_t (0 = MCU_OK)
    ticks: int  # SysTick ticks around the model_run_v call
    instructions: int  # (ticks - overhead_ticks) converted to instructions
    stdout: str  # QEMU's console output (semihosting)
    overhead_ticks: int = 0  # ticks of an empty measurement
    stack_bytes: int = 0  # peak stack use during the run, harness included
    files: dict = field(default_factory=dict)  # the `collect`ed files the firmware wrote, by name


def run_firmware(elf: str | Path, board: str | Board, input_bytes: bytes, *, timeout: float = 60,
                 collect: tuple[str, ...] = ()) -> RunResult:
    """Run elf once on board's QEMU machine with input_bytes as input.bin; raise an McuError on any failure.
    `collect` names further files the firmware writes (e.g. debug.bin); they come back in RunResult.files."""
    board = load_board(board) if isinstance(board, str) else board
    elf, cmd = _command(elf, board)
    with tempfile.TemporaryDirectory(prefix="mcu-qemu-") as tmp:
        (Path(tmp) / "input.bin").write_bytes(input_bytes)
        try:
            proc = subprocess.run(
                cmd, cwd=tmp, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired as e:  # subprocess.run has killed QEMU
            raise _timeout(elf, board, timeout, _text(e.stdout)) from None
        stdout = _text(proc.stdout)
        output_path = Path(tmp) / "output.bin"
        output = output_path.read_bytes() if output_path.is_file() else None
        files = {name: (Path(tmp) / name).read_bytes() for name in collect if (Path(tmp) / name).is_file()}
    return _result(elf, board, proc.returncode, stdout, output, files)


def run_firmware_batch(elf: str | Path, board: str | Board, records: bytes, count: int, *, timeout: float = 600,
                       progress=None) -> RunResult:
    """Run a -DMCU_BATCH firmware once over `count` input records (concatenated in `records`); the outputs of
    all records come back concatenated in RunResult.output_bytes, ticks summed over the records.
    progress(done, count) is called as the firmware reports records done."""
    board = load_board(board) if isinstance(board, str) else board
    elf, cmd = _command(elf, board)
    lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="mcu-qemu-") as tmp:
        (Path(tmp) / "batch.bin").write_bytes(records)
        proc = subprocess.Popen(cmd, cwd=tmp, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)
        killer = threading.Timer(timeout, proc.kill)
        killer.start()
        try:
            for raw in proc.stdout:
                line = _text(raw)
                lines.append(line)
                match = _PROGRESS.match(line)
                if match and progress is not None:
                    progress(int(match.group(1)), count)
            returncode = proc.wait()
        finally:
            timed_out = not killer.is_alive()
            killer.cancel()
            proc.stdout.close()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        stdout = "".join(lines)
        if timed_out and _DONE.search(stdout) is None:
            raise _timeout(elf, board, timeout, stdout)
        output_path = Path(tmp) / "batch_out.bin"
        output = output_path.read_bytes() if output_path.is_file() else None
    res = _result(elf, board, returncode, stdout, output, {})
    batch = _BATCH.search(stdout)
    done = int(batch.group(1)) if batch else None
    if done != count:
        raise FirmwareError(f"{elf} ran {done} of {count} inputs (is it built with MCU_BATCH?); console output:\n"
                            f"{_tail(stdout)}")
    return res


def _command(elf: str | Path, board: Board) -> tuple[Path, list[str]]:
    if not board.emulated:
        raise NotEmulatedError(
            f"board {board.name} has no [qemu] section in its board.toml: its firmware can be built "
            "(mcu.build.firmware.build_firmware) but not run; pick an emulated board (mcu boards)"
        )
    qemu = shutil.which(QEMU)
    if qemu is None:
        raise QemuNotFoundError(
            f"{QEMU} is not installed; install it with `apt-get install qemu-system-arm` or run ./dev setup"
        )
    elf = Path(elf).resolve()
    if not elf.is_file():
        raise FirmwareError(f"no firmware at {elf}; build it first (mcu.build.firmware.build_firmware)")
    cmd = [
        qemu, "-M", board.qemu_machine, "-nographic",
        "-semihosting-config", "enable=on,target=native",
        "-icount", f"shift={ICOUNT_SHIFT}",
        "-kernel", str(elf),
    ]
    return elf, cmd


def _timeout(elf: Path, board: Board, timeout: float, stdout: str) -> QemuTimeoutError:
    return QemuTimeoutError(
        f"{elf} did not finish on {board.qemu_machine} within {timeout} s (QEMU killed): the firmware "
        f"hangs or the model is slower than that; pass a larger timeout=\n{_tail(stdout)}"
    )


def _result(elf: Path, board: Board, returncode: int, stdout: str, output: bytes | None, files: dict) -> RunResult:
    overflow = _OVERFLOW.search(stdout)
    if overflow or "Lockup" in stdout:
        detail = overflow.group(1) if overflow else "the core locked up (a fault while entering the fault handler)"
        raise StackOverflowError(
            f"{elf.name} overflowed its stack on {board.name}: {detail}; the stack is {board.stack_bytes} "
            f"bytes (stack_bytes in {board.directory / 'board.toml'}): raise it or use less stack"
            f"\n{_tail(stdout, 5)}"
        )
    fault = _FAULT.search(stdout)
    if fault:
        raise _hard_fault(elf, board, fault, stdout)
    done, error = _DONE.search(stdout), _ERROR.search(stdout)
    if returncode != 0 or done is None or output is None:
        why = (
            error.group(1).strip() if error
            else f"QEMU exited with status {returncode}" if returncode != 0
            else "no MCU_DONE line" if done is None
            else "no output.bin"
        )
        raise FirmwareError(f"{elf} failed on {board.qemu_machine} ({why}); console output:\n{_tail(stdout)}")
    status, ticks, overhead, stack = (int(g) for g in done.groups())
    net = max(ticks - overhead, 0)
    instructions = (net * INSTRUCTIONS_PER_SECOND + board.systick_hz // 2) // board.systick_hz
    return RunResult(output, status, ticks, instructions, stdout, overhead, stack, files)


def function_at(elf: str | Path, address: int) -> str | None:
    """Name of the function in elf's symbol table whose range holds address (Thumb bit ignored), else None."""
    address &= ~1
    with open(elf, "rb") as f:
        symtab = ELFFile(f).get_section_by_name(".symtab")
        if symtab is None:
            return None
        for sym in symtab.iter_symbols():
            if sym["st_info"]["type"] != "STT_FUNC" or sym["st_size"] == 0:
                continue
            start = sym["st_value"] & ~1
            if start <= address < start + sym["st_size"]:
                return sym.name
    return None


def _hard_fault(elf: Path, board: Board, match: re.Match, stdout: str) -> HardFaultError:
    pc, lr = int(match.group(1), 16), int(match.group(2), 16)
    cfsr = None if match.group(3) == "none" else int(match.group(3), 16)
    function = function_at(elf, pc)
    caller = function_at(elf, lr)
    causes = [text for bit, text in _CFSR_BITS.items() if cfsr is not None and cfsr >> bit & 1]
    message = (
        f"{elf.name} hit a HardFault on {board.name} at pc=0x{pc:08x} in {function or '?'} "
        f"(lr=0x{lr:08x} in {caller or '?'})"
    )
    if cfsr is not None:
        message += f", cfsr=0x{cfsr:08x}" + (f": {'; '.join(causes)}" if causes else "")
    message += f"\nfind the line with: arm-none-eabi-addr2line -f -e {elf} 0x{pc:08x}\n{_tail(stdout, 5)}"
    return HardFaultError(message, pc=pc, lr=lr, cfsr=cfsr, function=function)


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    return data if isinstance(data, str) else data.decode("utf-8", "replace")


def _tail(text: str, lines: int = 20) -> str:
    kept = text.rstrip().splitlines()[-lines:]
    return "\n".join("  | " + line for line in kept) if kept else "  | (no output)"
