"""Where mcu's package data lives on disk (boards, runtime C sources, the SCons script)."""
from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from mcu.codegen.errors import McuError  # the base of every mcu error (mcu.errors re-exports it)


def package_root(name: str) -> Path:
    """Directory of the (possibly mapped) package `name`, e.g. "mcu.boards" -> <repo>/boards."""
    root = Path(str(files(name)))
    if not root.is_dir():
        raise McuError(
            f"package {name} is not a directory on disk ({root}); the C build needs real files, "
            "so install mcu unzipped (pip install -e . or a normal wheel install)"
        )
    return root


# mcu's own builds in a package folder (SCons firmware, host builds), clear of a user's `cmake -B build` there.
BUILD_DIR = ".mcu-build"
