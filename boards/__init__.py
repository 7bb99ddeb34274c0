"""Boards as data: boards/<name>/board.toml (+ linker.ld) loaded as a frozen Board, the one source of compiler flags.

This package is both the board data (boards/<name>/, boards/common/) and its loader: a module
mcu/boards.py would be shadowed by this package of the same name, so the loader lives here.
"""
from __future__ import annotations

import difflib
import tomllib
from dataclasses import dataclass
from pathlib import Path

from mcu.errors import BoardConfigError, UnknownBoardError
from mcu.paths import package_root

# Applied to everything the firmware compiles (board, runtime, kernels, generated model). Arm gcc treats every core
# as strict-alignment, so -Wcast-align flags any cast that raises a pointer's alignment there.
WARNING_CFLAGS = ("-std=c99", "-Wall", "-Wextra", "-Wshadow", "-Wdouble-promotion", "-Wcast-align", "-Werror")
_FLOAT_ABIS = ("soft", "softfp", "hard")
LARGE_WEIGHTS_SECTION = ".mcu_weights_large"  # weights placed in a board's [memory.large] region
_KINDS = {str: "a string", int: "an integer", bool: "true or false", dict: "a table"}  # for board.toml errors


@dataclass(frozen=True)
class Board:
    """A target board: CPU features, memory map, SysTick clock and (optionally) its QEMU machine."""

    name: str
    description: str
    cpu: str  # the -mcpu value
    fpu: str  # the -mfpu value; "" for no FPU, "auto" to take it from -mcpu
    float_abi: str  # "soft", "softfp" or "hard"
    dsp: bool  # has the DSP (SIMD32) extension: __ARM_FEATURE_DSP
    mve: bool  # has Helium: __ARM_FEATURE_MVE
    systick_hz: int  # SysTick clock (CLKSOURCE = processor clock), in Hz
    flash_origin: int  # the code/read-only memory the image is loaded into (vector table at its start)
    flash_size: int
    ram_origin: int  # the data memory: stack, .data, .bss
    ram_size: int
    stack_bytes: int
    qemu_machine: str | None  # None: build-only board
    directory: Path
    # A larger, slower region for weights that do not fit the flash ([memory.large]; size 0: none), and the
    # linker section (LARGE_WEIGHTS_SECTION) the board's linker script places there.
    large_name: str = ""
    large_origin: int = 0
    large_size: int = 0

    @property
    def emulated(self) -> bool:
        return self.qemu_machine is not None

    @property
    def linker_script(self) -> Path:
        return self.directory / "linker.ld"

    def target_flags(self) -> list[str]:
        """Flags that select the CPU and float ABI; the compiler and the linker (multilib) both need them."""
        flags = [f"-mcpu={self.cpu}", "-mthumb", f"-mfloat-abi={self.float_abi}"]
        if self.fpu:
            flags.append(f"-mfpu={self.fpu}")
        return flags

    def cflags(self) -> list[str]:
        """Everything to compile one C file for this board."""
        return [
            *self.target_flags(),
            "-O2",
            "-g",
            "-ffunction-sections",
            "-fdata-sections",
            *WARNING_CFLAGS,
        ]

    def ldflags(self, map_file: str | Path | None = None) -> list[str]:
        """Everything to link: target flags, newlib-nano without startup files, gc-sections, the board's script."""
        flags = [
            *self.target_flags(),
            "-nostartfiles",
            "--specs=nano.specs",
            "-Wl,--gc-sections",
            f"-Wl,--defsym=__stack_size={self.stack_bytes}",
            f"-L{self.directory.parent / 'common'}",  # where linker.ld finds `INCLUDE sections.ld`
            f"-T{self.linker_script}",
        ]
        if map_file is not None:
            flags.append(f"-Wl,-Map={map_file}")
        return flags


def _boards_dir() -> Path:
    return package_root("mcu.boards")


def board_names() -> list[str]:
    """Names of all boards (folders holding a board.toml), sorted."""
    return sorted(p.parent.name for p in _boards_dir().glob("*/board.toml"))


def load_board(name: str) -> Board:
    """The board boards/<name>/board.toml; UnknownBoardError (with close names) if there is none."""
    path = _boards_dir() / name / "board.toml"
    if not path.is_file():
        names = board_names()
        close = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
        hint = f"did you mean {', '.join(close)}? " if close else ""
        raise UnknownBoardError(f"unknown board {name!r}; {hint}known boards: {', '.join(names)}")
    return _parse(path)


def load_board_file(path: str | Path) -> Board:
    """The board described by the board.toml at path (its folder must carry the board's name); BoardConfigError
    names the file and the field when it is malformed."""
    path = Path(path)
    if not path.is_file():
        raise BoardConfigError(f"{path}: no such board file; a board is a folder <name>/ holding board.toml")
    return _parse(path)


def list_boards() -> list[Board]:
    """Every board, sorted by name."""
    return [load_board(n) for n in board_names()]


def _parse(path: Path) -> Board:
    try:
        with path.open("rb") as f:
            data = tomllib.load(f)
    except tomllib.TOMLDecodeError as exc:
        raise BoardConfigError(f"{path}: not valid TOML ({exc}); fix the syntax") from None

    def get(table: dict, key: str, kind: type, where: str = ""):
        what = _KINDS[kind]
        if key not in table:
            raise BoardConfigError(f"{path}: missing key {where}{key} ({what}); add it")
        value = table[key]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise BoardConfigError(f"{path}: {where}{key} must be {what}, got {value!r}")
        return value

    def memory(region: str, key: str) -> int:
        return get(get(get(data, "memory", dict), region, dict, "memory."), key, int, f"memory.{region}.")

    board = Board(
        name=get(data, "name", str),
        description=get(data, "description", str),
        cpu=get(data, "cpu", str),
        fpu=get(data, "fpu", str),
        float_abi=get(data, "float_abi", str),
        dsp=get(data, "dsp", bool),
        mve=get(data, "mve", bool),
        systick_hz=get(data, "systick_hz", int),
        flash_origin=memory("flash", "origin"),
        flash_size=memory("flash", "size"),
        ram_origin=memory("ram", "origin"),
        ram_size=memory("ram", "size"),
        stack_bytes=get(data, "stack_bytes", int),
        qemu_machine=get(get(data, "qemu", dict), "machine", str, "qemu.") if "qemu" in data else None,
        directory=path.parent,
        **_large_region(data, get),
    )
    if board.name != path.parent.name:
        raise BoardConfigError(f"{path}: name = {board.name!r} but the folder is {path.parent.name!r}")
    if board.float_abi not in _FLOAT_ABIS:
        raise BoardConfigError(f"{path}: float_abi must be one of {_FLOAT_ABIS}, got {board.float_abi!r}")
    if not board.fpu and board.float_abi != "soft":
        raise BoardConfigError(f"{path}: float_abi = {board.float_abi!r} needs an fpu (fpu = \"\" means none)")
    return board


def _large_region(data: dict, get) -> dict:
    """The optional [memory.large] table: name, origin and size of the region for weights too big for the flash."""
    table = data.get("memory", {}).get("large")
    if table is None:
        return {}
    where = "memory.large."
    return {"large_name": get(table, "name", str, where), "large_origin": get(table, "origin", int, where),
            "large_size": get(table, "size", int, where)}
