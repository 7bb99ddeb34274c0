"""SVG picture of a plan: one box per buffer, step (time) across, arena offset up; the peak marked."""
from __future__ import annotations

from html import escape
from typing import Sequence

from mcu.memory_planner.planner import Buffer, Plan

PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f"]


def svg(buffers: Sequence[Buffer], plan: Plan, *, title: str = "", labels: dict[str, str] | None = None,
        lower_bound: int | None = None, width: int = 720, height: int = 360) -> str:
    labels = labels or {}
    steps = max((b.last for b in buffers), default=0) + 1
    top = max(plan.arena_bytes, 1)
    left, right, upper, lower = 70, 20, 40, 40
    w, h = width - left - right, height - upper - lower

    def x(step: float) -> float:
        return left + w * step / steps

    def y(offset: float) -> float:
        return upper + h - h * offset / top

    live = [sum(b.size for b in buffers if b.first <= s <= b.last) for s in range(steps)]
    peak_step = max(range(steps), key=lambda s: live[s]) if buffers else 0
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="11">',
           f'<text x="{left}" y="18" font-size="13">{escape(title)} arena {plan.arena_bytes:,} B'
           + (f", lower bound {lower_bound:,} B" if lower_bound is not None else "")
           + f" ({escape(plan.algorithm)})</text>",
           f'<rect x="{x(peak_step):.1f}" y="{upper}" width="{w / steps:.1f}" height="{h}" fill="#fdd" />',
           f'<text x="{x(peak_step) + 2:.1f}" y="{upper - 4}" fill="#c00">peak {live[peak_step]:,} B</text>']
    for i, b in enumerate(sorted(buffers, key=lambda b: (b.first, b.name))):
        off = plan.offsets[b.name]
        bx, by = x(b.first), y(off + b.size)
        bw, bh = x(b.last + 1) - bx, max(y(off) - by, 1.0)
        name = labels.get(b.name, b.name)
        out.append(f'<rect x="{bx:.1f}" y="{by:.1f}" width="{bw:.1f}" height="{bh:.1f}" '
                   f'fill="{PALETTE[i % len(PALETTE)]}" fill-opacity="0.75" stroke="#333" stroke-width="0.5">'
                   f'<title>{escape(name)}: {b.size:,} B at {off:,}, steps {b.first}-{b.last}</title></rect>')
        if bh > 12 and bw > 40:
            out.append(f'<text x="{bx + 3:.1f}" y="{by + 11:.1f}">{escape(name)}</text>')
    out += [f'<line x1="{left}" y1="{y(top):.1f}" x2="{left + w}" y2="{y(top):.1f}" stroke="#c00" '
            f'stroke-dasharray="4 3" />',
            f'<line x1="{left}" y1="{upper + h}" x2="{left + w}" y2="{upper + h}" stroke="#333" />',
            f'<line x1="{left}" y1="{upper}" x2="{left}" y2="{upper + h}" stroke="#333" />',
            f'<text x="{left - 4}" y="{y(top) + 4:.1f}" text-anchor="end">{top:,}</text>',
            f'<text x="{left - 4}" y="{upper + h + 4}" text-anchor="end">0</text>',
            f'<text x="{left + w / 2:.0f}" y="{height - 10}" text-anchor="middle">op (schedule step)</text>',
            f'<text x="14" y="{upper + h / 2:.0f}" transform="rotate(-90 14 {upper + h / 2:.0f})" '
            f'text-anchor="middle">arena offset (bytes)</text>', "</svg>"]
    return "\n".join(out) + "\n"
