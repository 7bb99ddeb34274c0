"""Several models, one runtime: `mcu bundle` merges packages into one drop-in folder for one firmware.

- The packages are opened with mcu.load (so checked) and must be compiled for one board by one mcu, under distinct
  names (their prefixes keep their symbols apart); anything else is one McuError naming both packages.
- OUT/<name>/: each model's generated files, emitted again from its checked IR, with its manifest and IR: a package
  of its own, which `mcu run` and `mcu size` build and run alone. On a board with a large region (DDR), models
  whose weights together overflow the flash have the largest weights placed there (mcu/build/fit.py), as a model
  too big alone has; README.md says which.
- OUT/mcu_runtime/: one copy of the runtime core and of each kernel the models call (the union) and the headers
  they include. OUT/mcu_bundle.h includes every model's header and defines MCU_BUNDLE_ARENA_BYTES, the largest
  arena: models that run in turn share one arena. mcu_bundle.mk (MCU_BUNDLE_*) and CMakeLists.txt (the target
  mcu_bundle) build them all; bundle.json names the board, the writer and the models.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from mcu.boards import LARGE_WEIGHTS_SECTION, load_board
from mcu.build.dropin import RUNTIME_DIR, build_flags, render, runtime_files
from mcu.build.fit import bundle_large_weights
from mcu.codegen.emit import ARENA_GUARD_BYTES, emit
from mcu.codegen.memory import ARENA_ALIGN
from mcu.codegen.names import is_valid_name, make_prefix, model_files
from mcu.errors import McuError, PackageError
from mcu.package import IR_FILE, Package, load
from mcu.writer import write_package

BUNDLE_NAME = "bundle"  # the Make prefix MCU_BUNDLE, the CMake target mcu_bundle
BUNDLE_FILE = "bundle.json"
HEADER = "mcu_bundle.h"
FORMAT = 1


@dataclass(frozen=True)
class Bundle:
    """A bundle folder: its board and its models, each a Package in OUT/<name>/."""
    out_dir: Path
    board: str
    packages: tuple[Package, ...]

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.packages]

    @property
    def arena_bytes(self) -> int:
        """MCU_BUNDLE_ARENA_BYTES: the largest arena of the models."""
        return max(p.arena_bytes for p in self.packages)

    def package(self, name: str) -> Package:
        for p in self.packages:
            if p.name == name:
                return p
        raise McuError(f"{self.out_dir} holds no model named {name!r}; it holds {', '.join(self.names)}")


def is_bundle(path: str | os.PathLike) -> bool:
    """Does path hold a bundle (its bundle.json) rather than one package?"""
    return (Path(path) / BUNDLE_FILE).is_file()


def bundle(packages, *, out_dir: str | os.PathLike = "mcu_bundle", force: bool = False) -> Bundle:
    """Merge packages (folders or Packages) compiled for one board by one mcu, under distinct names, into out_dir:
    one runtime with one copy of each kernel, each model's files, one CMake target and one Make fragment."""
    pkgs = [p if isinstance(p, Package) else load(p) for p in packages]
    check_compatible(pkgs)
    out_dir = Path(out_dir)
    files = bundle_files(pkgs)
    ours = {BUNDLE_FILE, HEADER, RUNTIME_DIR, "mcu_bundle.mk", "CMakeLists.txt", "README.md", *(p.name for p in pkgs)}
    if is_bundle(out_dir):  # bundled again: the models it held before are ours too
        ours |= {m for m in _read_index(out_dir).get("models", []) if is_valid_name(m)}
    write_package(out_dir, files, force, ours)
    return load_bundle(out_dir)


def check_compatible(pkgs: list[Package]) -> None:
    """One board, one mcu, distinct names; else one McuError naming both packages."""
    if len(pkgs) < 1:
        raise McuError("a bundle needs at least one package folder (two or more to share a runtime)")
    seen: dict[str, Package] = {}
    first = pkgs[0]
    for p in pkgs:
        if p.board != first.board:
            raise McuError(f"{first.out_dir} ({first.name}) is compiled for {first.board} and {p.out_dir} "
                           f"({p.name}) for {p.board}; a bundle holds models for one board: compile both with "
                           f"the same --board")
        if _writer(p) != _writer(first):
            raise McuError(f"{first.out_dir} ({first.name}) was written by {_writer(first)} and {p.out_dir} "
                           f"({p.name}) by {_writer(p)}; a bundle shares one runtime, so compile both with the "
                           f"same mcu")
        if p.name in seen:
            raise McuError(f"{seen[p.name].out_dir} and {p.out_dir} are both named {p.name!r}; their symbols would "
                           f"collide in one firmware: compile one again with another --name")
        seen[p.name] = p


def _writer(p: Package) -> str:
    return str(p.manifest["package"]["written_by"])


def bundle_files(pkgs: list[Package]) -> dict[str, bytes]:
    """Every file of the bundle folder by path."""
    files: dict[str, bytes] = {}
    texts: dict[str, str] = {}
    board = load_board(pkgs[0].board)
    large = bundle_large_weights([(p.graph, p.manifest) for p in pkgs], board)
    for p, moved in zip(pkgs, large):
        emitted, _ = emit(p.graph, p.memory, name=p.name, board=p.board,
                          weights_section=LARGE_WEIGHTS_SECTION if moved else "")
        texts.update(emitted)
        files.update({f"{p.name}/{n}": t.encode() for n, t in emitted.items()})
        kept = ["manifest.json", IR_FILE, *p.manifest["package"]["sha256"]]
        files.update({f"{p.name}/{n}": (p.out_dir / n).read_bytes() for n in dict.fromkeys(kept)})
    kernels = sorted({k for p in pkgs for k in p.manifest["kernels"]})
    runtime, sources, libs = runtime_files(texts, kernels)
    files.update(runtime)
    ctx = _context(pkgs, board, kernels, sources, libs, large)
    files.update({HEADER: render("mcu_bundle.h", ctx), "mcu_bundle.mk": render("mcu_model.mk", ctx),
                  "CMakeLists.txt": render("CMakeLists.txt", ctx), "README.md": render("bundle_README.md", ctx)})
    files[BUNDLE_FILE] = (json.dumps({"format": FORMAT, "board": board.name, "written_by": _writer(pkgs[0]),
                                      "models": [p.name for p in pkgs], "kernels": kernels,
                                      "arena_bytes": ctx["arena_bytes"]}, indent=2) + "\n").encode()
    return files


def _context(pkgs: list[Package], board, kernels: list[str], runtime_sources: list[str], libs: list[str],
             large: list[bool]) -> dict:
    """What the bundle's templates print."""
    prefix = make_prefix(BUNDLE_NAME)
    arena = max(p.arena_bytes for p in pkgs)
    models = [{"name": p.name, "arena_bytes": p.arena_bytes, "weights_bytes": p.manifest["weights_bytes"],
               "kernels": len(p.manifest["kernels"]), "weights_in": board.large_name if moved else "flash",
               "call": f"{p.name}_run({', '.join([t['name'] for t in p.manifest['inputs'] + p.manifest['outputs']] + ['arena'])})"}
              for p, moved in zip(pkgs, large)]
    return {"what": f"the bundled models {', '.join(f'`{p.name}`' for p in pkgs)}", "board": board,
            "prefix": prefix, "target": prefix.lower(), "header": HEADER, "runtime_dir": RUNTIME_DIR,
            "names": [p.name for p in pkgs], "headers": [model_files(p.name)[0] for p in pkgs], "models": models,
            "sources": [f"{p.name}/{c}" for p in pkgs for c in model_files(p.name)[1:]] + runtime_sources,
            "include_dirs": ["", *(f"/{p.name}" for p in pkgs), f"/{RUNTIME_DIR}/include"],
            "kernels": [k.split("/")[-1] for k in kernels], **build_flags(board), "libs": libs,
            "arena_bytes": arena, "arena_align": ARENA_ALIGN, "guard_bytes": ARENA_GUARD_BYTES,
            "bundle_file": BUNDLE_FILE}


def _read_index(out_dir: Path) -> dict:
    """bundle.json, checked enough that its names reach nothing but out_dir's own folders."""
    path = out_dir / BUNDLE_FILE
    try:
        index = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise PackageError(f"{path} is not valid JSON ({str(exc)[:80]}); bundle the packages again") from None
    models = index.get("models") if isinstance(index, dict) else None
    if not isinstance(models, list) or not models or not all(is_valid_name(m) for m in models) \
            or index.get("format") != FORMAT or len(set(models)) != len(models):
        raise PackageError(f"{path} is not a bundle index this mcu writes; bundle the packages again with "
                           f"`mcu bundle`")
    return index


def load_bundle(out_dir: str | os.PathLike) -> Bundle:
    """Open a bundle folder: its index, then each model's package (mcu.load's checks), all for one board."""
    out_dir = Path(out_dir)
    index = _read_index(out_dir)
    pkgs = tuple(load(out_dir / m) for m in index["models"])
    for m, p in zip(index["models"], pkgs):
        if p.name != m or p.board != index.get("board"):
            raise PackageError(f"{out_dir / m} holds {p.name!r} for {p.board}, not what {out_dir / BUNDLE_FILE} "
                               f"says; bundle the packages again")
    return Bundle(out_dir, pkgs[0].board, pkgs)


@dataclass(frozen=True)
class BundleSize:
    """Flash of each model's own firmware split into its own part (weights, generated code) and the parts a bundle
    shares (kernels, one copy each; runtime core and startup/libc, the largest), and the bundle's total."""
    board: str
    models: dict[str, dict[str, int]]  # name -> weights, generated, kernels, alone (its firmware's flash)
    kernels: dict[str, int]            # the union, one copy each
    rest: int                          # runtime core + startup/libc: the largest of the models'
    arena_bytes: int

    @property
    def shared(self) -> int:
        return sum(self.kernels.values()) + self.rest

    @property
    def total(self) -> int:
        """The bundle's flash: each model's own part once, the shared part once."""
        return sum(m["weights"] + m["generated"] for m in self.models.values()) + self.shared

    @property
    def alone(self) -> int:
        return sum(m["alone"] for m in self.models.values())

    def format(self) -> str:
        w = max(12, *(len(n) + 2 for n in self.models))
        lines = [f"flash on {self.board}, bytes".ljust(w + 2) + f"{'weights':>10}{'generated':>11}{'kernels':>10}"
                 f"{'alone':>10}"]
        for n, m in self.models.items():
            lines.append(f"  {n:<{w}}{m['weights']:>10,}{m['generated']:>11,}{m['kernels']:>10,}{m['alone']:>10,}")
        lines += [f"  {'shared: ' + str(len(self.kernels)) + ' kernels, one copy each':<{w + 31}}"
                  f"{sum(self.kernels.values()):>10,}",
                  f"  {'shared: runtime core, startup/libc':<{w + 31}}{self.rest:>10,}",
                  f"bundle {self.total:,} B; the models alone {self.alone:,} B; saved {self.alone - self.total:,} B",
                  f"arena: MCU_BUNDLE_ARENA_BYTES {self.arena_bytes:,} B (the largest: "
                  + ", ".join(f"{p} {a:,}" for p, a in self.model_arenas) + ")"]
        return "\n".join(lines)

    @property
    def model_arenas(self) -> list[tuple[str, int]]:
        return [(n, m["arena"]) for n, m in self.models.items()]


def bundle_size(b: Bundle) -> BundleSize:
    """The bundle's flash from each model's own firmware (built if needed): mcu.size of each, kernels counted once."""
    import mcu

    models, kernels, rest = {}, {}, 0
    for p in b.packages:
        r = mcu.size(p)
        models[p.name] = {"weights": r.flash_weights, "generated": r.flash_generated, "kernels": r.flash_kernels,
                          "alone": r.flash_total, "arena": p.arena_bytes}
        kernels.update(r.kernels)
        rest = max(rest, r.flash_runtime + r.flash_other)
    return BundleSize(b.board, models, dict(sorted(kernels.items())), rest, b.arena_bytes)
