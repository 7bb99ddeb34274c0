"""The drop-in package: what mcu.compile writes beside the generated C so that the folder builds on its own.

- mcu_runtime/: copies of exactly the runtime the model needs: the kernel sources the manifest names,
  the runtime core, and every header those and the generated files include, followed transitively
  (a quoted include resolves next to the including file first, then in runtime_c/include).
- mcu_model.mk (make variables MCU_MODEL_*), CMakeLists.txt (the static library target mcu_model)
  and README.md, rendered from templates/dropin/ with lists computed here.
"""
from __future__ import annotations

import re
from pathlib import Path

import jinja2

from mcu.boards import Board
from mcu.errors import McuError
from mcu.build.fit import Footprint
from mcu.paths import package_root

RUNTIME_DIR = "mcu_runtime"
TEMPLATED = ("mcu_model.mk", "CMakeLists.txt", "README.md")
FILES = (RUNTIME_DIR, *TEMPLATED)  # top-level names in the output folder
CFLAGS = ("-std=c99", "-O2", "-ffunction-sections", "-fdata-sections")
LDFLAGS = ("-Wl,--gc-sections",)
_LIBS = {"math.h": "m"}  # system header -> the library a static link then needs

_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"]+)[>"]', re.MULTILINE)


def dropin_files(texts: dict[str, str], manifest: dict, board: Board, footprint: Footprint) -> dict[str, bytes]:
    """{path relative to the output folder: bytes} of the runtime copies, the build files and the README."""
    runtime = package_root("mcu.runtime_c").resolve()
    sources = sorted((runtime / "core").glob("*.c")) + [runtime / "kernels" / f"{k}.c" for k in manifest["kernels"]]
    missing = [str(p) for p in sources if not p.is_file()]
    if missing:
        raise McuError(f"the manifest names kernels that are not in {runtime / 'kernels'}: {', '.join(missing)}")
    headers, system = _headers(texts, sources, runtime)
    files = {f"{RUNTIME_DIR}/{p.relative_to(runtime).as_posix()}": p.read_bytes() for p in sources + headers}

    generated_c = sorted(n for n in texts if n.endswith(".c"))
    macro = manifest["name"].upper()
    tensors = manifest["inputs"] + manifest["outputs"]
    ctx = {
        "name": manifest["name"], "macro": macro, "board": board, "runtime_dir": RUNTIME_DIR,
        "sources": generated_c + [f"{RUNTIME_DIR}/{p.relative_to(runtime).as_posix()}" for p in sources],
        "kernels": [k.split("/")[-1] for k in manifest["kernels"]],
        "cflags": list(CFLAGS), "cflags_no_std": [f for f in CFLAGS if not f.startswith("-std=")],
        "target_flags": board.target_flags(), "ldflags": list(LDFLAGS),
        "libs": sorted({_LIBS[h] for h in system if h in _LIBS}),
        "arena_bytes": manifest["arena_bytes"],
        "call": f"{manifest['name']}_run({', '.join([t['name'] for t in tensors] + ['arena'])})",
        "tensors": tensors,
        "io_note": (f"Tensors are quantized: real = (q - ZERO_POINT) * SCALE with the `{macro}_INPUTn_*` / "
                    f"`{macro}_OUTPUTn_*` macros of `model.h`." if any(t["scale"] is not None for t in tensors) else
                    'Tensors are float32, as the float model takes them (compiled with quantize="none").'),
        "flash": f"{footprint.flash:,} B of {board.flash_size:,} ({footprint.flash_parts()})",
        "ram": f"{footprint.ram:,} B of {board.ram_size:,} ({footprint.ram_parts()})",
    }
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(package_root("mcu.templates") / "dropin")),
                             keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    for name in TEMPLATED:
        files[name] = env.get_template(f"{name}.j2").render(ctx).encode()
    return files


def _headers(texts: dict[str, str], sources: list[Path], runtime: Path) -> tuple[list[Path], set[str]]:
    """Runtime headers reachable from the generated files and the sources, and the system headers seen."""
    include_dir = runtime / "include"
    found: set[Path] = set()
    system: set[str] = set()
    todo: list[tuple[str, str, Path | None]] = [(name, text, None) for name, text in texts.items()]
    todo += [(str(p), p.read_text(), p.parent) for p in sources]
    while todo:
        where, text, folder = todo.pop()
        for kind, name in _INCLUDE.findall(text):
            if kind == "<":
                system.add(name)
                continue
            if folder is None and name in texts:
                continue  # a generated file includes another generated file
            candidates = ([folder / name] if folder is not None else []) + [include_dir / name]
            path = next((c.resolve() for c in candidates if c.is_file()), None)
            if path is None:
                raise McuError(f'{where} includes "{name}", which is neither generated nor in {include_dir}; '
                               f"the drop-in package would not build")
            if path not in found:
                found.add(path)
                todo.append((str(path), path.read_text(), path.parent))
    return sorted(found), system
