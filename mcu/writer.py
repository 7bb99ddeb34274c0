"""Writing a package folder all or nothing, never replacing or deleting a file of the user's."""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from mcu.errors import McuError
from mcu.paths import BUILD_DIR

# Names mcu writes that a user's own folder may hold too: they count as mcu's only in a folder holding mcu's manifest.
GENERIC_FILES = {"README.md", "CMakeLists.txt"}


def _is_package(out_dir: Path) -> bool:
    """Does out_dir hold a manifest.json written by mcu (a previous compile)?"""
    try:
        manifest = json.loads((out_dir / "manifest.json").read_text())
    except (OSError, ValueError):
        return False
    return isinstance(manifest, dict) and {"kernels", "arena_bytes"} <= manifest.keys()


def _keep(path: Path, copy: Path) -> None:
    """A second name for path's current content (a hard link; a copy where links are not supported)."""
    try:
        os.link(path, copy, follow_symlinks=False)
    except OSError:
        shutil.copy2(path, copy, follow_symlinks=False)


def write_package(out_dir: Path, files: dict[str, bytes], force: bool, ours: set[str]) -> None:
    """Write files into out_dir, all or nothing.

    - A folder holding entries mcu did not write is refused unless force; force writes beside them but never
      replaces one. Entries count as mcu's by name (OUR_FILES); README.md, CMakeLists.txt and build/ only in a
      folder that holds mcu's manifest.json.
    - Everything is written to a temporary folder beside out_dir first; then each top-level entry is swapped in
      (files by rename over the old one, so a file is always whole; folders whole). The old entries are kept
      aside until the end: any failure, an interrupt included, puts them back, so the previous output stays.
    - Only mcu's own firmware builds (.mcu-build/<board> folders holding SCons' database) are deleted, as stale.
    """
    out_dir = Path(out_dir)
    names = sorted({n.split("/")[0] for n in files})  # a name with "/" lands in a folder (mcu_runtime/...)
    if out_dir.exists():
        if not out_dir.is_dir():
            raise McuError(f"{out_dir} exists and is not a folder; choose another output path")
        ours = ours if _is_package(out_dir) else ours - GENERIC_FILES
        foreign = sorted(p.name for p in out_dir.iterdir() if p.name not in ours)
        if foreign and not force:
            raise McuError(f"{out_dir} holds files mcu did not write ({', '.join(foreign[:5])}); choose an "
                           f"empty or new folder, or pass --force (force=True) to write beside them")
        clash = [n for n in foreign if n in names]
        if clash:
            raise McuError(f"{out_dir} holds {', '.join(clash)}, which mcu did not write and would replace; "
                           f"--force writes beside other files but never replaces them: move them or choose "
                           f"another folder")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    old = tmp / ".old"
    swapped: list[str] = []
    try:
        for name, data in files.items():
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp / name).write_bytes(data)
        out_dir.mkdir(exist_ok=True)
        old.mkdir()
        try:
            for name in names:
                target = out_dir / name
                if target.is_dir() and not target.is_symlink():
                    os.replace(target, old / name)  # a folder is swapped whole: the old one aside
                elif target.exists() or target.is_symlink():
                    _keep(target, old / name)  # the rename below replaces the file atomically
                swapped.append(name)
                os.replace(tmp / name, target)
        except BaseException:
            for name in reversed(swapped):  # put the previous output back
                target = out_dir / name
                if (old / name).exists() or (old / name).is_symlink():
                    if target.is_dir() and not target.is_symlink():
                        shutil.rmtree(target)
                    os.replace(old / name, target)
                elif target.is_dir() and not target.is_symlink():
                    shutil.rmtree(target)
                elif target.exists() or target.is_symlink():
                    target.unlink()
            raise
        build = out_dir / BUILD_DIR
        if build.is_dir() and not build.is_symlink():
            for stale in build.iterdir():
                if stale.is_dir() and not stale.is_symlink() and (stale / ".sconsign.dblite").is_file():
                    shutil.rmtree(stale)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
