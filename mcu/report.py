"""`mcu report DIR`: one self-contained report.html (inline SVG, no external assets) with the flash
breakdown, the arena timeline, the per-op instruction profile, and the board's limits beside the
model's needs."""
from __future__ import annotations

from html import escape
from pathlib import Path

from mcu.codegen.memory import picture

COLORS = {"weights": "#4e79a7", "generated code": "#f28e2b", "kernels": "#59a14f", "runtime core": "#e15759",
          "startup/libc": "#9c755f", "arena": "#76b7b2", "other static data": "#edc948", "stack (reserved)": "#b07aa1"}


def bar(parts: list[tuple[str, int]], capacity: int | None, title: str, width: int = 720) -> str:
    """A horizontal stacked bar of `parts` (bytes), against the capacity when given."""
    total = sum(v for _, v in parts)
    scale_to = max(total, 1)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{70 + 16 * len(parts)}" '
           f'font-family="sans-serif" font-size="11">',
           f'<text x="0" y="14" font-size="13">{escape(title)}: {total:,} B'
           + (f" of {capacity:,} B ({100 * total / capacity:.1f}%)" if capacity else "") + "</text>"]
    x = 0.0
    for name, v in parts:
        w = (width - 2) * v / scale_to
        out.append(f'<rect x="{x:.1f}" y="22" width="{max(w, 0):.1f}" height="22" fill="{COLORS.get(name, "#999")}">'
                   f'<title>{escape(name)}: {v:,} B</title></rect>')
        x += w
    for i, (name, v) in enumerate(parts):
        y = 60 + 16 * i
        out.append(f'<rect x="0" y="{y - 9}" width="10" height="10" fill="{COLORS.get(name, "#999")}" />'
                   f'<text x="16" y="{y}">{escape(name)}: {v:,} B ({100 * v / scale_to:.1f}%)</text>')
    out.append("</svg>")
    return "\n".join(out)


def render(pkg, size, profile_rows: list[dict] | None, total_instructions: int | None, board) -> str:
    m = pkg.manifest
    flash = [("weights", size.flash_weights), ("generated code", size.flash_generated),
             ("kernels", size.flash_kernels), ("runtime core", size.flash_runtime), ("startup/libc", size.flash_other)]
    ram = [("arena", size.ram_arena), ("other static data", size.ram_static), ("stack (reserved)", size.ram_stack)]
    limits = [("flash", size.flash_total, board.flash_size), ("RAM", size.ram_total, board.ram_size)]
    rows = "".join(f"<tr><td>{n}</td><td>{need:,}</td><td>{cap:,}</td><td>{100 * need / cap:.1f}%</td>"
                   f"<td>{'fits' if need <= cap else 'DOES NOT FIT'}</td></tr>" for n, need, cap in limits)
    prof = ""
    if profile_rows:
        body = "".join(
            f"<tr><td>{r['index']}</td><td>{escape(r['op'])}</td><td>{escape(r['kernel'])}</td>"
            f"<td>{'x'.join(map(str, r['shape']))}</td><td>{r['macs']:,}</td><td>{r['instructions']:,}</td>"
            f"<td>{'-' if not r['macs_per_instruction'] else format(r['macs_per_instruction'], '.3f')}</td></tr>"
            for r in profile_rows)
        prof = (f"<h2>Per-op instruction profile</h2><p>{total_instructions:,} instructions for one inference "
                f"(QEMU -icount, SysTick).</p><table><tr><th>#</th><th>op</th><th>kernel</th><th>shape</th>"
                f"<th>MACs</th><th>instructions</th><th>MACs/instr</th></tr>{body}</table>")
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>mcu report: {escape(str(pkg.out_dir.name))}</title>
<style>body{{font-family:sans-serif;max-width:960px;margin:2em auto}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:2px 8px;text-align:right}}td:nth-child(2),td:nth-child(3){{text-align:left}}</style>
</head><body>
<h1>{escape(str(pkg.out_dir.name))} on {escape(board.name)} ({escape(board.cpu)})</h1>
<p>{len(m['ops'])} ops; kernels: {escape(', '.join(k.split('/')[-1] for k in m['kernels']))}.</p>
<h2>Board limits vs the model's needs</h2>
<table><tr><th></th><th>needs (B)</th><th>board has (B)</th><th>use</th><th></th></tr>{rows}</table>
<h2>Flash</h2>{bar(flash, board.flash_size, "flash")}
<h2>RAM</h2>{bar(ram, board.ram_size, "RAM")}
<h2>Arena timeline</h2>
<p>Arena {m['arena_bytes']:,} B; liveness lower bound {m['arena_lower_bound']:,} B; planner {escape(m['planner'])}.</p>
{picture(pkg.graph, pkg.memory, title=board.name)}
{prof}
</body></html>
"""


def report(pkg, *, with_profile: bool = True) -> Path:
    """Write pkg.out_dir/report.html; returns its path."""
    import mcu
    from mcu.boards import load_board

    board = load_board(pkg.board)
    size = mcu.size(pkg)
    rows, total = None, None
    if with_profile and board.emulated:
        from mcu.profile import profile_run
        rows, total = profile_run(pkg)
    path = pkg.out_dir / "report.html"
    path.write_text(render(pkg, size, rows, total, board))
    return path
