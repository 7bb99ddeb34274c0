"""Firmware build: runs mcu/build/firmware.scons (SCons + arm-none-eabi-gcc) for one board and one generated model."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from mcu.boards import Board, load_board
from mcu.codegen.names import DEFAULT_NAME, model_files
from mcu.errors import BuildError
from mcu.paths import package_root

COMPILER = "arm-none-eabi-gcc"


def missing_compiler() -> str | None:
    """Why no firmware can be built here (the cross compiler is not installed, and how to install it), or None."""
    if shutil.which(COMPILER) is not None:
        return None
    return (f"{COMPILER} is not installed; install it with `apt-get install gcc-arm-none-eabi "
            "libnewlib-arm-none-eabi` or run ./dev setup")


def harness_defines(name: str, stateful: bool = False) -> list[tuple[str, str]]:
    """The preprocessor macros (name, value) that point the harness (boards/common/harness_model.h) at model `name`'s
    header and names (none for the default name, whose model.h the harness includes as it is), and MCU_MODEL_STATE
    for a model that keeps state between calls."""
    state = [("MCU_MODEL_STATE", "1")] if stateful else []
    if name == DEFAULT_NAME:
        return state
    return [("MCU_MODEL_HEADER", f'"{model_files(name)[0]}"'), ("MCU_MODEL_NAME", name),
            ("MCU_MODEL_MACRO", name.upper())] + state


def firmware_script() -> Path:
    """The SCons script that builds a firmware image (shipped inside the mcu package)."""
    return package_root("mcu.build") / "firmware.scons"


def build_firmware(board: str | Board, model_dir: str | os.PathLike, build_dir: str | os.PathLike,
                   defines: tuple[str, ...] = ()) -> Path:
    """Compile and link model_dir's model with the test harness for board into build_dir; returns build_dir/fw.elf.

    defines are extra preprocessor macros for every file (e.g. ("MCU_PROFILE",)); use a separate
    build_dir per set of defines.

    Incremental: SCons rebuilds only what changed (its database is build_dir/.sconsign.dblite).
    """
    name = board.name if isinstance(board, Board) else board
    load_board(name)  # unknown boards fail here, with suggestions, not inside SCons
    missing = missing_compiler()
    if missing:
        raise BuildError(missing)
    model_dir = Path(model_dir).resolve()
    build_dir = Path(build_dir).resolve()
    build_dir.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable, "-m", "SCons", "-Q", f"-j{os.cpu_count() or 1}",
        "-f", str(firmware_script()),
        f"board={name}", f"model={model_dir}", f"build={build_dir}", f"defines={','.join(defines)}",
    ]
    proc = subprocess.run(cmd, cwd=build_dir, capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError(
            f"firmware build for {name} from {model_dir} failed (exit {proc.returncode}):\n"
            f"{_compiler_output(proc.stdout, proc.stderr)}"
        )
    return build_dir / "fw.elf"


def _compiler_output(stdout: str, stderr: str, keep: int = 60) -> str:
    """stderr (the diagnostics) in full-ish, plus the last commands SCons ran, for context."""
    commands = stdout.strip().splitlines()[-3:]
    errors = stderr.strip().splitlines()
    if len(errors) > keep:
        errors = [f"... ({len(errors) - keep} earlier lines cut)"] + errors[-keep:]
    return "\n".join(["$ " + c for c in commands] + errors)
