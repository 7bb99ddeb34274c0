"""`mcu report DIR`: one self-contained report.html (inline SVG, no external assets) with the flash
breakdown, the arena timeline, the per-op instruction profile, the board's limits beside the model's
needs, and, after `mcu eval`, the accuracy table, per-class accuracy and the device's confusion matrix.

The page is templates/report.html.j2; this module computes every number and coordinate it shows."""
from __future__ import annotations

from importlib import resources
from pathlib import Path

import jinja2

from mcu.codegen.memory import picture

COLORS = {"weights": "#4e79a7", "generated code": "#f28e2b", "kernels": "#59a14f", "runtime core": "#e15759",
          "startup/libc": "#9c755f", "arena": "#76b7b2", "other static data": "#edc948", "stack (reserved)": "#b07aa1"}
TEMPLATE = "report.html.j2"
CELL, MARGIN = 28, 34  # confusion picture: cell side and label margin, px


def bar(parts: list[tuple[str, int]], capacity: int | None, title: str, width: int = 720) -> dict:
    """A horizontal stacked bar of `parts` (bytes), against the capacity when given: caption and segments."""
    total = sum(v for _, v in parts)
    scale_to = max(total, 1)
    caption = f"{title}: {total:,} B" + (f" of {capacity:,} B ({100 * total / capacity:.1f}%)" if capacity else "")
    segments, x = [], 0.0
    for i, (name, v) in enumerate(parts):
        w = (width - 2) * v / scale_to
        segments.append({"name": name, "bytes": f"{v:,}", "x": f"{x:.1f}", "w": f"{max(w, 0):.1f}",
                         "color": COLORS.get(name, "#999"), "y": 60 + 16 * i, "pct": f"{100 * v / scale_to:.1f}"})
        x += w
    return {"width": width, "height": 70 + 16 * len(parts), "caption": caption, "segments": segments}


def _pct(v) -> str:
    return "-" if v is None else f"{100 * v:.2f}%"


def eval_view(result) -> dict | None:
    """The accuracy section of the page from an mcu.tools.eval_result.EvalResult (None: no evaluation yet)."""
    if result is None:
        return None
    paths = ("float", "reference", "device")
    rows = []
    if any(v is not None for v in result.accuracy.values()):
        rows.append({"name": "top-1 accuracy", "cells": [_pct(result.accuracy[p]) for p in paths]})
    rows.append({"name": "top-1 agreement", "cells": [_pct(result.agreement[p]) for p in paths]})
    rows.append({"name": "SQNR", "cells": ["-" if result.sqnr_db[p] is None else f"{result.sqnr_db[p]:.1f} dB"
                                            for p in paths]})
    summary = (f"{result.count:,} inputs on {result.board}, one QEMU run ({result.seconds:.1f} s, "
               f"{result.instructions:,} instructions per inference); device equals the integer reference bit for "
               f"bit: {'yes' if result.device_equals_reference else 'NO'}")
    if result.device_float_differ is not None:
        summary += f"; the device and the float model classify {result.device_float_differ:,} inputs differently"
    per_class, confusion = [], None
    if result.confusion:
        counts = [sum(row) for row in result.confusion]
        per_class = [{"label": c, "count": counts[c],
                      "cells": [_pct(result.per_class[p][c]) if p in result.per_class else "-" for p in paths]}
                     for c in range(len(counts))]
        cells = []
        for r, row in enumerate(result.confusion):
            for c, n in enumerate(row):
                share = n / counts[r] if counts[r] else 0.0
                x, y = MARGIN + CELL * c, MARGIN + CELL * r
                tone = int(255 - 200 * share)
                cells.append({"label": r, "predicted": c, "count": n, "x": x, "y": y,
                              "tx": x + CELL // 2, "ty": y + CELL // 2 + 4,
                              "color": f"rgb({tone},{tone},255)" if r == c else f"rgb(255,{tone},{tone})",
                              "ink": "#fff" if share > 0.6 else "#000"})
        heads = [{"label": i, "x": MARGIN + CELL * i + CELL // 2, "y": MARGIN + CELL * i + CELL // 2 + 4}
                 for i in range(len(counts))]
        confusion = {"cells": cells, "heads": heads, "cell": CELL, "margin": MARGIN,
                     "size": MARGIN + CELL * len(counts) + 2}
    return {"summary": summary, "rows": rows, "per_class": per_class, "confusion": confusion}


def render(pkg, size, profile_rows: list[dict] | None, total_instructions: int | None, board,
           evaluation=None) -> str:
    m = pkg.manifest
    flash = [("weights", size.flash_weights - size.large_bytes), ("generated code", size.flash_generated),
             ("kernels", size.flash_kernels), ("runtime core", size.flash_runtime), ("startup/libc", size.flash_other)]
    ram = [("arena", size.ram_arena), ("other static data", size.ram_static), ("stack (reserved)", size.ram_stack)]
    memories = [("flash", size.flash_total - size.large_bytes, board.flash_size), ("RAM", size.ram_total, board.ram_size)]
    if size.large_bytes:  # weights in the board's large region (mcu/build/fit.py)
        memories.insert(1, (f"{size.large_region} (weights)", size.large_bytes, size.large_capacity))
    limits = [{"name": n, "need": f"{need:,}", "capacity": f"{cap:,}", "use": f"{100 * need / cap:.1f}",
               "verdict": "fits" if need <= cap else "DOES NOT FIT"} for n, need, cap in memories]
    profile = None
    if profile_rows:
        profile = {"total": f"{total_instructions:,}", "rows": [
            {"index": r["index"], "op": r["op"], "kernel": r["kernel"], "shape": "x".join(map(str, r["shape"])),
             "macs": f"{r['macs']:,}", "instructions": f"{r['instructions']:,}",
             "per_instruction": "-" if not r["macs_per_instruction"] else format(r["macs_per_instruction"], ".3f")}
            for r in profile_rows]}
    return _template().render(
        name=str(pkg.out_dir.name), board=board.name, cpu=board.cpu, ops=len(m["ops"]),
        kernels=", ".join(k.split("/")[-1] for k in m["kernels"]), limits=limits,
        flash=bar(flash, board.flash_size, "flash"), ram=bar(ram, board.ram_size, "RAM"),
        arena_bytes=f"{m['arena_bytes']:,}", arena_lower_bound=f"{m['arena_lower_bound']:,}", planner=m["planner"],
        arena_svg=picture(pkg.graph, pkg.memory, title=board.name), profile=profile, eval=eval_view(evaluation),
    )


def _template() -> jinja2.Template:
    loader = jinja2.FileSystemLoader(str(resources.files("mcu.templates")))
    env = jinja2.Environment(loader=loader, autoescape=True, undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=True)
    return env.get_template(TEMPLATE)


def report(pkg, *, with_profile: bool = True) -> Path:
    """Write pkg.out_dir/report.html (with the last `mcu eval` result, when there is one); returns its path."""
    import mcu
    from mcu.boards import load_board
    from mcu.tools.eval_result import load_result

    board = load_board(pkg.board)
    size = mcu.size(pkg)
    rows, total = None, None
    if with_profile and board.emulated:
        from mcu.tools.profile import profile_run
        rows, total = profile_run(pkg)
    path = pkg.out_dir / "report.html"
    path.write_text(render(pkg, size, rows, total, board, load_result(pkg)))
    return path
