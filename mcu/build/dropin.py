"""The drop-in package: what mcu.compile writes beside the generated C so that the folder builds on its own.

- mcu_runtime/: copies of exactly the runtime the model needs: the kernel sources the manifest names,
  the runtime core, and every header those and the generated files include, followed transitively
  (a quoted include resolves next to the including file first, then in runtime_c/include).
- mcu_<name>.mk (make variables MCU_<NAME>_*), CMakeLists.txt (the static library target mcu_<name>)
  and README.md, rendered from templates/dropin/ with lists computed here (mcu_model.mk, MCU_MODEL_* and mcu_model
  for the default name `model`).
"""
from __future__ import annotations

import re
from pathlib import Path

import jinja2

from mcu.boards import LARGE_WEIGHTS_SECTION, Board
from mcu.codegen.names import make_prefix, model_files
from mcu.errors import McuError
from mcu.build.fit import Footprint
from mcu.paths import package_root

RUNTIME_DIR = "mcu_runtime"
CFLAGS = ("-std=c99", "-O2", "-ffunction-sections", "-fdata-sections")
LDFLAGS = ("-Wl,--gc-sections",)
_LIBS = {"math.h": "m"}  # system header -> the library a static link then needs

_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"]+)[>"]', re.MULTILINE)


def dropin_names(name: str) -> tuple[str, ...]:
    """The top-level names the drop-in files of model `name` take in its folder."""
    return (RUNTIME_DIR, f"{make_prefix(name).lower()}.mk", "CMakeLists.txt", "README.md")


def runtime_files(texts: dict[str, str], kernels: list[str]) -> tuple[dict[str, bytes], list[str], list[str]]:
    """The runtime copies for generated `texts` calling `kernels` (manifest names, family/name): {path: bytes},
    the C sources among them (paths relative to the output folder) and the system libraries a static link needs."""
    runtime = package_root("mcu.runtime_c").resolve()
    sources = sorted((runtime / "core").glob("*.c")) + [runtime / "kernels" / f"{k}.c" for k in kernels]
    missing = [str(p) for p in sources if not p.is_file()]
    if missing:
        raise McuError(f"the manifest names kernels that are not in {runtime / 'kernels'}: {', '.join(missing)}")
    headers, system = _headers(texts, sources, runtime)
    files = {f"{RUNTIME_DIR}/{p.relative_to(runtime).as_posix()}": p.read_bytes() for p in sources + headers}
    return (files, [f"{RUNTIME_DIR}/{p.relative_to(runtime).as_posix()}" for p in sources],
            sorted({_LIBS[h] for h in system if h in _LIBS}))


def build_flags(board: Board) -> dict:
    """The compile and link flags the drop-in build files name."""
    return {"cflags": list(CFLAGS), "cflags_no_std": [f for f in CFLAGS if not f.startswith("-std=")],
            "target_flags": board.target_flags(), "ldflags": list(LDFLAGS)}


def render(template: str, ctx: dict) -> bytes:
    """templates/dropin/<template>.j2 rendered with ctx."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(package_root("mcu.templates") / "dropin")),
                             keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    return env.get_template(f"{template}.j2").render(ctx).encode()


def dropin_files(texts: dict[str, str], manifest: dict, board: Board, footprint: Footprint) -> dict[str, bytes]:
    """{path relative to the output folder: bytes} of the runtime copies, the build files and the README."""
    files, runtime_sources, libs = runtime_files(texts, manifest["kernels"])
    name = manifest["name"]
    macro = name.upper()
    header, source, weights_file = model_files(name)
    tensors = manifest["inputs"] + manifest["outputs"]
    ctx = {
        "name": name, "what": f"the generated model `{name}`", "include_dirs": ["", f"/{RUNTIME_DIR}/include"],
        "macro": macro, "header": header, "source": source, "weights_file": weights_file, "prefix": make_prefix(name),
        "target": make_prefix(name).lower(), "board": board, "runtime_dir": RUNTIME_DIR,
        "sources": sorted(n for n in texts if n.endswith(".c")) + runtime_sources,
        "kernels": [k.split("/")[-1] for k in manifest["kernels"]], **build_flags(board), "libs": libs,
        "arena_bytes": manifest["arena_bytes"],
        "call": f"{manifest['name']}_run({', '.join([t['name'] for t in tensors] + ['arena'])})",
        "tensors": tensors,
        "io_note": (f"Tensors are quantized: real = (q - ZERO_POINT) * SCALE with the `{macro}_INPUTn_*` / "
                    f"`{macro}_OUTPUTn_*` macros of `{header}`." if any(t["scale"] is not None for t in tensors) else
                    'Tensors are float32, as the float model takes them (compiled with quantize="none").'),
        "flash": f"{footprint.flash_main:,} B of {board.flash_size:,} ({footprint.flash_parts()})",
        **placement_notes(footprint, manifest["weights_bytes"]),
        "ram": f"{footprint.ram:,} B of {board.ram_size:,} ({footprint.ram_parts()})",
    }
    mk, cmake, readme = dropin_names(name)[1:]
    files.update({mk: render("mcu_model.mk", ctx), cmake: render("CMakeLists.txt", ctx),
                  readme: render("README.md", ctx)})
    return files


def placement_notes(footprint: Footprint, weights_bytes: int) -> dict:
    """What the README says of where the weights go by default."""
    if footprint.weights_region:
        where = (f"the compiler put them in `{LARGE_WEIGHTS_SECTION}`, which the board's linker script places in "
                 f"{footprint.weights_region} (they do not fit the flash); a macro overrides it")
    else:
        where = "without a macro they go where the compiler puts constants (.rodata, in flash)"
    return {"weights_bytes": weights_bytes, "weights_where": where}


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
