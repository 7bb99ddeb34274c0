"""Arena planners behind one signature, a verifier, the liveness lower bound and an ASCII dump.

- A buffer lives from step `first` to step `last` inclusive (steps are op indices of the schedule).
- Two buffers conflict when their lifetimes intersect; conflicting buffers must not share bytes.
- naive: every buffer gets its own bytes, in order (the upper bound, and the fallback).
- greedy_by_size (TFLM's GreedyMemoryPlanner): place buffers largest first, each at the lowest
  aligned offset where it fits between the already-placed buffers it conflicts with.
- `plan` runs every planner, verifies each result and keeps the smallest arena.
- lower_bound: the largest sum of live bytes at any step; no plan of this schedule can beat it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence


@dataclass(frozen=True)
class Buffer:
    name: str
    size: int
    first: int
    last: int
    align: int = 16

    def conflicts(self, other: "Buffer") -> bool:
        return self.first <= other.last and other.first <= self.last


@dataclass(frozen=True)
class Plan:
    offsets: dict[str, int]
    arena_bytes: int
    algorithm: str


class PlanError(AssertionError):
    """A plan breaks an invariant: a planner bug."""


def _align_up(x: int, a: int) -> int:
    return (x + a - 1) // a * a


def plan_naive(buffers: Sequence[Buffer]) -> Plan:
    offsets, top = {}, 0
    for b in buffers:
        offsets[b.name] = _align_up(top, b.align)
        top = offsets[b.name] + b.size
    return Plan(offsets, top, "naive")


def plan_greedy_by_size(buffers: Sequence[Buffer]) -> Plan:
    order = sorted(buffers, key=lambda b: (-b.size, b.first, b.name))
    placed: list[tuple[Buffer, int]] = []
    offsets = {}
    for b in order:
        busy = sorted((off, off + p.size) for p, off in placed if p.conflicts(b) and p.size > 0)
        candidate = 0
        for start, end in busy:
            candidate = _align_up(candidate, b.align)
            if candidate + b.size <= start:
                break
            candidate = max(candidate, end)
        offset = _align_up(candidate, b.align)
        offsets[b.name] = offset
        placed.append((b, offset))
    top = max((offsets[b.name] + b.size for b in buffers), default=0)
    return Plan(offsets, top, "greedy_by_size")


PLANNERS: dict[str, Callable[[Sequence[Buffer]], Plan]] = {
    "greedy_by_size": plan_greedy_by_size,
    "naive": plan_naive,
}


def verify_plan(buffers: Sequence[Buffer], plan_: Plan) -> Plan:
    """Raise PlanError unless every buffer is placed, aligned, inside the arena, and no two live
    buffers share a byte. Returns the plan."""
    for b in buffers:
        if b.name not in plan_.offsets:
            raise PlanError(f"{b.name} has no offset")
        off = plan_.offsets[b.name]
        if off < 0 or off % b.align or off + b.size > plan_.arena_bytes:
            raise PlanError(f"{b.name} at {off} (+{b.size}, align {b.align}) is outside the "
                            f"{plan_.arena_bytes}-byte arena or misaligned")
    for i, a in enumerate(buffers):
        for b in buffers[i + 1:]:
            if a.size and b.size and a.conflicts(b):
                oa, ob = plan_.offsets[a.name], plan_.offsets[b.name]
                if oa < ob + b.size and ob < oa + a.size:
                    raise PlanError(f"{a.name} [{oa}, {oa + a.size}) and {b.name} [{ob}, {ob + b.size}) "
                                    f"overlap while both live (steps {max(a.first, b.first)}.."
                                    f"{min(a.last, b.last)})")
    return plan_


def lower_bound(buffers: Sequence[Buffer]) -> int:
    if not buffers:
        return 0
    steps = range(min(b.first for b in buffers), max(b.last for b in buffers) + 1)
    return max(sum(b.size for b in buffers if b.first <= s <= b.last) for s in steps)


def plan(buffers: Sequence[Buffer], planners: dict[str, Callable] | None = None) -> Plan:
    """Run every planner, verify each plan, keep the smallest arena (ties: the first planner)."""
    results = [verify_plan(buffers, p(buffers)) for p in (planners or PLANNERS).values()]
    return min(results, key=lambda p: p.arena_bytes)


def dump(buffers: Sequence[Buffer], plan_: Plan, width: int = 64) -> str:
    """ASCII picture: one row per step, arena offset across; letters mark live buffers."""
    if not buffers or plan_.arena_bytes == 0:
        return "(empty arena)"
    scale = plan_.arena_bytes / width
    marks = {b.name: chr(ord("A") + i % 26) for i, b in enumerate(buffers)}
    rows = []
    for step in range(min(b.first for b in buffers), max(b.last for b in buffers) + 1):
        row = ["."] * width
        for b in buffers:
            if b.first <= step <= b.last and b.size:
                lo = int(plan_.offsets[b.name] / scale)
                hi = max(lo + 1, int((plan_.offsets[b.name] + b.size) / scale))
                for x in range(lo, min(hi, width)):
                    row[x] = marks[b.name]
        rows.append(f"{step:4d} |{''.join(row)}|")
    legend = "  ".join(f"{marks[b.name]}={b.name}({b.size}B@{plan_.offsets[b.name]})" for b in buffers)
    return "\n".join(rows + [legend])
