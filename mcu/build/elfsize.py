"""Flash and RAM use of a built firmware, split into weights / generated code / kernels / runtime / the rest.

 - Flash used = the file-backed bytes of the ELF's PT_LOAD segments (code, read-only data, the load
   image of .data), i.e. exactly what gets programmed.
 - Each category is the set of symbols defined in its object files under the build dir
   (model/weights.o, or model/<name>_weights.o; other model/*.o; kernels/**; runtime/**), looked up by name in the final ELF
   (local symbols by source file and name) and summed. What no category claims (startup, harness,
   libc, libgcc, literal pools, padding) is "startup/libc", so the split sums to the total.
 - The same attribution by object file gives SizeReport.kernels: the flash of each kernel source.
 - RAM = the arena (symbol mcu_arena in the harness) + other .data/.bss + the reserved stack.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile

from mcu.boards import Board
from mcu.build.fit import format_size
from mcu.codegen.names import DEFAULT_NAME, model_files
from mcu.errors import McuError

ARENA_SYMBOL = "mcu_arena"
STACK_SECTION = ".stack"


@dataclass(frozen=True)
class SizeReport:
    """Bytes per category; the flash_* fields sum to flash_total, the ram_* fields to ram_total."""

    flash_weights: int
    flash_generated: int
    flash_kernels: int
    flash_runtime: int
    flash_other: int  # startup, test harness, libc/libgcc, literal pools, padding
    ram_arena: int
    ram_static: int  # .data + .bss other than the arena
    ram_stack: int  # reserved (board.toml stack_bytes)
    flash_capacity: int | None = None  # the board's, when known
    ram_capacity: int | None = None
    kernels: dict[str, int] = field(default_factory=dict)  # flash_kernels per source, e.g. {"conv/mcu_conv2d_s8": 1200}
    large_region: str = ""  # the board's large region (e.g. DDR) when the image puts bytes there
    large_bytes: int = 0  # the image's bytes in it (weights too big for the flash), counted in flash_total too
    large_capacity: int | None = None
    weights_budget: int | None = None  # the flash budget the weights were widened within (the manifest's)
    widened: tuple[int, int, int] = (0, 0, 0)  # layers storing widened weights, their extra bytes, instructions saved

    @property
    def flash_total(self) -> int:
        return (self.flash_weights + self.flash_generated + self.flash_kernels + self.flash_runtime
                + self.flash_other)

    @property
    def ram_total(self) -> int:
        return self.ram_arena + self.ram_static + self.ram_stack

    def as_dict(self) -> dict[str, int | None]:
        return {**asdict(self), "flash_total": self.flash_total, "ram_total": self.ram_total}

    def format(self) -> str:
        flash = [
            ("weights", self.flash_weights),
            ("generated code", self.flash_generated),
            ("kernels", self.flash_kernels),
            ("runtime core", self.flash_runtime),
            ("startup/libc", self.flash_other),
        ]
        ram = [
            ("arena", self.ram_arena),
            ("other static data", self.ram_static),
            ("stack (reserved)", self.ram_stack),
        ]
        names = {k: k.split("/")[-1] for k in self.kernels}
        width = max([20, *(len(n) + 2 for n in names.values())])
        lines = []
        for title, rows, total, capacity in (
            ("flash", flash, self.flash_total, self.flash_capacity),
            ("ram", ram, self.ram_total, self.ram_capacity),
        ):
            lines.append(f"{title:<{width + 2}}{'bytes':>10}")
            for label, value in rows:
                lines.append(f"  {label:<{width}}{value:>10,}")
                if label == "weights" and self.weights_budget is not None:
                    layers, extra, saved = self.widened
                    lines.append(f"    {'budget':<{width - 2}}{self.weights_budget:>10,}   " + (
                        f"{extra:,} B of it widen {layers} layers: ~{saved:,} instructions saved" if layers
                        else "no layer's weights widened"))
                if label == "kernels":  # each source, largest first
                    lines += [f"    {names[k]:<{width - 2}}{n:>10,}"
                              for k, n in sorted(self.kernels.items(), key=lambda kv: (-kv[1], kv[0]))]
            if title == "flash" and self.large_bytes:  # the flash's share without what lies in the large region
                lines.append(f"  {'in ' + self.large_region:<{width}}{self.large_bytes:>10,}   of "
                             f"{format_size(self.large_capacity or 0)}")
                lines.append(f"  {'total':<{width}}{total:>10,}   of which {total - self.large_bytes:,} in flash"
                             + _share(total - self.large_bytes, capacity))
                continue
            lines.append(f"  {'total':<{width}}{total:>10,}{_share(total, capacity)}")
        return "\n".join(lines)


def _share(n: int, capacity: int | None) -> str:
    return f"   {100 * n / capacity:.1f}% of {capacity // 1024:,} KB" if capacity else ""


def _large_bytes(image: ELFFile, board: Board | None) -> int:
    """The image's bytes loaded into the board's large region (mcu/build/fit.py places weights there)."""
    if board is None or not board.large_size:
        return 0
    end = board.large_origin + board.large_size
    return sum(seg["p_filesz"] for seg in image.iter_segments()
               if seg["p_type"] == "PT_LOAD" and board.large_origin <= seg["p_paddr"] < end)


def size_report(elf: str | Path, build_dir: str | Path, board: Board | None = None, *,
                name: str = DEFAULT_NAME) -> SizeReport:
    """The size report of elf, attributing symbols through the object files in build_dir (fw.elf's build) of
    model `name` (its weights file: codegen/names.py)."""
    elf, build_dir = Path(elf), Path(build_dir)
    weights = "model/" + model_files(name)[2].removesuffix(".c")
    flash = dict.fromkeys(("weights", "generated", "kernels", "runtime"), 0)
    with open(elf, "rb") as f:
        image = ELFFile(f)
        flash_total = sum(seg["p_filesz"] for seg in image.iter_segments() if seg["p_type"] == "PT_LOAD")
        large = _large_bytes(image, board)
        by_object, arena = _flash_by_object(image, build_dir)
        for obj, size in by_object.items():
            flash[_category(obj, weights)] += size
        ram_sections = [
            s for s in image.iter_sections()
            if s["sh_flags"] & SH_FLAGS.SHF_ALLOC and s["sh_flags"] & SH_FLAGS.SHF_WRITE
        ]
        stack = sum(s["sh_size"] for s in ram_sections if s.name == STACK_SECTION)
        static = sum(s["sh_size"] for s in ram_sections if s.name != STACK_SECTION)

    other = flash_total - sum(flash.values())
    if other < 0:
        raise McuError(f"size report of {elf}: the categories add up to more than the flash image; "
                       f"is {build_dir} the build dir it came from?")
    return SizeReport(
        flash_weights=flash["weights"],
        flash_generated=flash["generated"],
        flash_kernels=flash["kernels"],
        flash_runtime=flash["runtime"],
        flash_other=other,
        ram_arena=arena,
        ram_static=static - arena,
        ram_stack=stack,
        flash_capacity=board.flash_size if board else None,
        ram_capacity=board.ram_size if board else None,
        kernels={obj.removeprefix("kernels/"): n for obj, n in by_object.items() if _category(obj, weights) == "kernels"},
        large_region=board.large_name if large else "", large_bytes=large,
        large_capacity=board.large_size if large else None,
    )


def _category(obj: str, weights: str) -> str:
    if obj == weights:
        return "weights"
    return {"model": "generated", "kernels": "kernels", "runtime": "runtime"}[obj.split("/")[0]]


def _flash_by_object(image: ELFFile, build_dir: Path) -> tuple[dict[str, int], int]:
    """({object: flash bytes of the symbols it defines}, the arena's size), symbols looked up by name in image."""
    owner: dict[tuple[str | None, str], str] = {}
    for folder in ("model", "kernels", "runtime"):
        root = build_dir / folder
        for obj in sorted(root.glob("**/*.o")) if root.is_dir() else ():
            name = obj.relative_to(build_dir).with_suffix("").as_posix()
            for key in _defined_symbols(obj):
                owner.setdefault(key, name)
    flash = dict.fromkeys(sorted(set(owner.values())), 0)
    arena = 0
    seen: set[int] = set()
    for key, sym, section in _sized_symbols(image):
        if sym.name == ARENA_SYMBOL and key[0] is None:
            arena = sym["st_size"]
        obj = owner.get(key)
        if obj is None or section["sh_type"] == "SHT_NOBITS" or sym["st_value"] in seen:
            continue
        seen.add(sym["st_value"])
        flash[obj] += sym["st_size"]
    return flash, arena


def _symbol_key(sym, current_file: str | None) -> tuple[str | None, str]:
    """Globals are unique by name; locals (statics) by (source file, name)."""
    return (current_file if sym["st_info"]["bind"] == "STB_LOCAL" else None, sym.name)


def _defined_symbols(obj: Path) -> set[tuple[str | None, str]]:
    keys = set()
    with open(obj, "rb") as f:
        symtab = ELFFile(f).get_section_by_name(".symtab")
        current_file = None
        for sym in symtab.iter_symbols() if symtab else ():
            kind = sym["st_info"]["type"]
            if kind == "STT_FILE":
                current_file = sym.name
            elif kind in ("STT_FUNC", "STT_OBJECT") and sym["st_shndx"] != "SHN_UNDEF":
                keys.add(_symbol_key(sym, current_file))
    return keys


def _sized_symbols(image: ELFFile):
    """(key, symbol, section) for every function/object symbol of the linked image that occupies memory."""
    symtab = image.get_section_by_name(".symtab")
    if symtab is None:
        raise McuError("the firmware ELF has no symbol table (was it stripped?); the size report needs it")
    current_file = None
    for sym in symtab.iter_symbols():
        kind = sym["st_info"]["type"]
        if kind == "STT_FILE":
            current_file = sym.name
            continue
        if kind not in ("STT_FUNC", "STT_OBJECT") or sym["st_size"] == 0 or not isinstance(sym["st_shndx"], int):
            continue
        section = image.get_section(sym["st_shndx"])
        if section["sh_flags"] & SH_FLAGS.SHF_ALLOC:
            yield _symbol_key(sym, current_file), sym, section
