"""Arena planners behind one signature, a verifier, the liveness lower bound and an ASCII dump.

- A buffer lives from step `first` to step `last` inclusive (steps are op indices of the schedule).
- Two buffers conflict when their lifetimes intersect; conflicting buffers must not share bytes.
- naive: every buffer gets its own bytes, in order (the upper bound, and the fallback).
- greedy_by_size (TFLM's GreedyMemoryPlanner): place buffers largest first, each at the lowest
  aligned offset where it fits between the already-placed buffers it conflicts with.
- greedy_by_breadth: the same first-fit placement, in the order of the most crowded step first
  (the buffers live at the peak step, largest first, then the next most crowded step, ...).
- overlap_chains: first fit in several orders, keeping room below each buffer for the gaps its
  overlapping outputs need (one link, or its whole chain), so raster outputs can slide under inputs.
- top_down: birth order, each buffer at the highest offset where it fits under a ceiling, the smallest
  ceiling that works (bisection): chains of in-place and overlapping outputs float at the top, sliding
  down only by their gaps, while scratch and short-lived buffers take the bottom.
- exact: depth-first branch and bound over placement orders, each buffer at the lowest fitting
  offset; stops as soon as a plan reaches the lower bound (then it is optimal) or after a budget
  of placements (then it returns its best plan, never worse than greedy).
- `plan` runs every planner, verifies each result and keeps the smallest arena.
- lower_bound: the largest sum of live bytes at any step (an overlapping pair counted as its union,
  max(size(out), gap + size(in))), and the largest chain bound; no plan of this schedule can beat it.
- chain bound: for links a -> b (gap g1) and b -> c (gap g2), with a live at b's first step s and c at its
  last step t, Y = the other buffers live at both s and t (no overlap rule with a, b, c): the arena holds
  a u b u c and Y disjointly (each of Y meets each of a, b, c), so it is at least |a u b u c| + sum(Y), and
      |a u b u c| >= min(|b| + max(0, g1 + |a| - |b|) + min(g2, |c|), |a| + |b|, |b| + |c|).
  Proof: a and b are disjoint (then |a u b| = |a| + |b|) or off(a) >= off(b) + g1; likewise b and c are
  disjoint or off(c) <= off(b) - g2. In the last case for both, a covers at least g1 + |a| - |b| bytes above
  b's end and c at least min(g2, |c|) bytes below b's start: two sets disjoint from each other and from b.
  One link alone gives the pair term at one step; the chain couples the two offsets (VWW: a 1x1 conv
  sliding its output 18,440 B under its input, then a stride-2 depthwise 16 B under that output).
- overlaps {(out, in): gap}: `out` may share bytes with `in` (which dies when `out` is born) if it
  starts at least `gap` bytes below it: offset(in) - offset(out) >= gap. Kernels that write their
  output in the order they read their input (raster order) allow this; the gap is how far the writes
  may run ahead of the reads. A gap of 0 is an in-place kernel: `out` may take `in`'s very offset.
  At such a step the pair costs max(size(out), gap + size(in)), not the sum.
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


def plan_naive(buffers: Sequence[Buffer], overlaps: Overlaps = {}) -> Plan:
    offsets, top = {}, 0
    for b in buffers:
        offsets[b.name] = _align_up(top, b.align)
        top = offsets[b.name] + b.size
    return Plan(offsets, top, "naive")


Overlaps = dict[tuple[str, str], int]


def _forbidden(b: Buffer, p: Buffer, off: int, overlaps: Overlaps) -> tuple[int, int]:
    """Open interval of offsets b may not take, given p placed at off."""
    if (b.name, p.name) in overlaps:      # b is the output: may start `gap` or more below p
        return off - overlaps[b.name, p.name], off + p.size
    if (p.name, b.name) in overlaps:      # b is the input: may start `gap` or more above p
        return off - b.size, off + overlaps[p.name, b.name]
    return off - b.size, off + p.size


def _first_fit(b: Buffer, placed: Sequence[tuple[Buffer, int]], overlaps: Overlaps = {}) -> int:
    """Lowest aligned offset where b fits beside the placed buffers whose lifetimes it meets."""
    if not b.size:
        return 0
    bad = sorted(_forbidden(b, p, off, overlaps) for p, off in placed if p.size and p.conflicts(b))
    candidate = 0
    for lo, hi in bad:  # by lo: once an interval starts at or above the candidate, so do the rest
        if lo >= candidate:
            break
        if candidate < hi:
            candidate = _align_up(hi, b.align)
    return candidate


def _fits(b: Buffer, off: int, placed: Sequence[tuple[Buffer, int]], overlaps: Overlaps) -> bool:
    return all(not (lo < off < hi) for lo, hi in
               (_forbidden(b, p, o, overlaps) for p, o in placed if p.conflicts(b) and p.size and b.size))


def _place_in_order(order: Sequence[Buffer], algorithm: str, overlaps: Overlaps = {},
                    depth: int | None = 0, mode: str = "near") -> Plan:
    """First-fit in `order`. With depth > 0 (None: unbounded), keep room right below each buffer for
    the not-yet-placed outputs that will slide under it (the gaps of up to `depth` links of its
    overlap chain, until the last of them dies): where that moves the buffer by no more than the
    room ("near"), or only where it does not grow the arena ("free")."""
    down = {i: (o, gap) for (o, i), gap in overlaps.items()}
    by_name = {b.name: b for b in order}
    placed: list[tuple[Buffer, int]] = []
    done: set[str] = set()
    top = 0
    for b in order:
        off = _first_fit(b, placed, overlaps)
        pad, until, cur, k = 0, b.last, b.name, 0
        while cur in down and down[cur][0] not in done and (depth is None or k < depth):
            cur, gap = down[cur]
            pad, until, k = pad + gap, max(until, by_name[cur].last), k + 1
        if pad:
            pad = _align_up(pad, b.align)
            block = Buffer(b.name, b.size + pad, b.first, until, b.align)
            high = _first_fit(block, placed, overlaps) + pad
            ok = high - off <= pad if mode == "near" else high + b.size <= max(top, off + b.size)
            if ok and _fits(b, high, placed, overlaps):
                off = high
        placed.append((b, off))
        done.add(b.name)
        top = max(top, off + b.size)
    return Plan({b.name: off for b, off in placed}, max((off + b.size for b, off in placed), default=0), algorithm)


def plan_overlap_chains(buffers: Sequence[Buffer], overlaps: Overlaps = {}) -> Plan:
    """First fit keeping room below each buffer for the outputs that may overlap it (one link of room
    or the whole chain's, near its first fit or where it is free), in size order, birth order or
    reverse birth order; the best of the twelve."""
    orders = [sorted(buffers, key=lambda b: (-b.size, b.first, b.name)),
              sorted(buffers, key=lambda b: (b.first, -b.size, b.name)),
              sorted(buffers, key=lambda b: (-b.first, -b.size, b.name))]
    plans = [_place_in_order(order, "overlap_chains", overlaps, d, mode)
             for order in orders for d in (1, None) for mode in ("near", "free")]
    return min(plans, key=lambda p: p.arena_bytes)


def _place_top_down(buffers: Sequence[Buffer], overlaps: Overlaps, arena: int) -> dict[str, int] | None:
    """Birth order, each buffer at the highest aligned offset below `arena` where it fits; None if one does not."""
    placed: list[tuple[Buffer, int]] = []
    for b in sorted(buffers, key=lambda b: (b.first, -b.size, b.name)):
        bad = [_forbidden(b, p, off, overlaps) for p, off in placed if p.conflicts(b) and p.size and b.size]
        candidate = (arena - b.size) // b.align * b.align
        moved = True
        while moved and candidate >= 0:  # an open interval holding the candidate pushes it down to its low end
            moved = False
            for lo, hi in bad:
                if lo < candidate < hi:
                    candidate = lo // b.align * b.align
                    moved = True
        if candidate < 0:
            return None
        placed.append((b, candidate))
    return {b.name: off for b, off in placed}


def plan_top_down(buffers: Sequence[Buffer], overlaps: Overlaps = {}) -> Plan:
    """Buffers in birth order, each as high as it fits under a ceiling: a chain of overlapping outputs then
    slides down from the top only as far as its gaps force it, and jumps back up, clear of its input, once
    that input sits low; scratch and short-lived buffers fill the bottom. The smallest ceiling that works,
    by bisection between the lower bound and greedy by size's arena."""
    fallback = plan_greedy_by_size(buffers, overlaps)
    lo, hi = lower_bound(buffers, overlaps), fallback.arena_bytes
    best = _place_top_down(buffers, overlaps, hi)
    if best is None:
        return Plan(fallback.offsets, fallback.arena_bytes, "top_down")
    while lo < hi:
        mid = (lo + hi) // 2
        offsets = _place_top_down(buffers, overlaps, mid)
        if offsets is None:
            lo = mid + 1
        else:
            best, hi = offsets, mid
    return Plan(best, max((best[b.name] + b.size for b in buffers), default=0), "top_down")


def plan_greedy_by_size(buffers: Sequence[Buffer], overlaps: Overlaps = {}) -> Plan:
    return _place_in_order(sorted(buffers, key=lambda b: (-b.size, b.first, b.name)), "greedy_by_size", overlaps)


def plan_greedy_by_breadth(buffers: Sequence[Buffer], overlaps: Overlaps = {}) -> Plan:
    if not buffers:
        return Plan({}, 0, "greedy_by_breadth")
    steps = range(min(b.first for b in buffers), max(b.last for b in buffers) + 1)
    load = {s: sum(b.size for b in buffers if b.first <= s <= b.last) for s in steps}
    order, seen = [], set()
    for s in sorted(steps, key=lambda s: (-load[s], s)):
        for b in sorted((b for b in buffers if b.first <= s <= b.last and b.name not in seen),
                        key=lambda b: (-b.size, b.name)):
            order.append(b)
            seen.add(b.name)
    return _place_in_order(order, "greedy_by_breadth", overlaps)


def plan_exact(buffers: Sequence[Buffer], overlaps: Overlaps = {}, budget: int = 20000) -> Plan:
    """Branch and bound over placement orders (see the module docstring)."""
    best = min((plan_greedy_by_size(buffers, overlaps), plan_greedy_by_breadth(buffers, overlaps),
                plan_overlap_chains(buffers, overlaps), plan_top_down(buffers, overlaps)),
               key=lambda p: p.arena_bytes)
    bound = lower_bound(buffers, overlaps)
    if best.arena_bytes <= bound or not buffers:
        return Plan(best.offsets, best.arena_bytes, "exact")
    best_top, best_offsets = best.arena_bytes, best.offsets
    todo = sorted(buffers, key=lambda b: (-b.size, b.first, b.name))
    work = 0

    def search(placed: list[tuple[Buffer, int]], rest: list[Buffer], top: int) -> bool:
        nonlocal best_top, best_offsets, work
        if not rest:
            if top < best_top:
                best_top, best_offsets = top, {b.name: off for b, off in placed}
            return best_top <= bound
        tried = set()
        for i, b in enumerate(rest):
            work += 1
            if work > budget:
                return True
            off = _first_fit(b, placed, overlaps)
            key = (off, b.size, b.first, b.last, b.name if overlaps else "")
            new_top = max(top, off + b.size)
            if key in tried or new_top >= best_top:
                continue
            tried.add(key)
            if search(placed + [(b, off)], rest[:i] + rest[i + 1:], new_top):
                return True
        return False

    search([], todo, 0)
    return Plan(best_offsets, best_top, "exact")


PLANNERS: dict[str, Callable[[Sequence[Buffer]], Plan]] = {
    "greedy_by_size": plan_greedy_by_size,
    "greedy_by_breadth": plan_greedy_by_breadth,
    "overlap_chains": plan_overlap_chains,
    "top_down": plan_top_down,
    "exact": plan_exact,
    "naive": plan_naive,
}


def verify_plan(buffers: Sequence[Buffer], plan_: Plan, overlaps: Overlaps = {}) -> Plan:
    """Raise PlanError unless every buffer is placed, aligned, inside the arena, and no two live
    buffers share a byte except as `overlaps` allows. Returns the plan."""
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
                if (a.name, b.name) in overlaps and ob - oa >= overlaps[a.name, b.name]:
                    continue
                if (b.name, a.name) in overlaps and oa - ob >= overlaps[b.name, a.name]:
                    continue
                if oa < ob + b.size and ob < oa + a.size:
                    raise PlanError(f"{a.name} [{oa}, {oa + a.size}) and {b.name} [{ob}, {ob + b.size}) "
                                    f"overlap while both live (steps {max(a.first, b.first)}.."
                                    f"{min(a.last, b.last)})")
    return plan_


def lower_bound(buffers: Sequence[Buffer], overlaps: Overlaps = {}) -> int:
    if not buffers:
        return 0
    by_name = {b.name: b for b in buffers}
    steps = range(min(b.first for b in buffers), max(b.last for b in buffers) + 1)

    def footprint(s: int) -> int:
        total = sum(b.size for b in buffers if b.first <= s <= b.last)
        for (o, i), gap in overlaps.items():  # the pair meets at the output's first step
            if by_name[o].first == s and by_name[i].last == s:
                total -= by_name[o].size + by_name[i].size - max(by_name[o].size, gap + by_name[i].size)
        return total
    return max([footprint(s) for s in steps] + _chain_bounds(buffers, overlaps))
    # sizes, not aligned sizes: alignment padding is a cost of the plan, not of the schedule


def _chain_bounds(buffers: Sequence[Buffer], overlaps: Overlaps) -> list[int]:
    """The chain bound of every two linked overlaps a -> b -> c (module docstring)."""
    by_name = {b.name: b for b in buffers}
    related: dict[str, set[str]] = {}
    for o, i in overlaps:
        related.setdefault(o, set()).add(i)
        related.setdefault(i, set()).add(o)
    outputs_of: dict[str, list[tuple[str, int]]] = {}
    for (o, i), gap in overlaps.items():
        outputs_of.setdefault(i, []).append((o, gap))
    bounds = []
    for (bn, an), g1 in overlaps.items():
        for cn, g2 in outputs_of.get(bn, []):
            if cn == an or not {an, bn, cn} <= by_name.keys():
                continue
            a, b, c = by_name[an], by_name[bn], by_name[cn]
            s, t = b.first, b.last
            if not (a.first <= s <= a.last and c.first <= t <= c.last):
                continue
            union = min(b.size + max(0, g1 + a.size - b.size) + min(g2, c.size), a.size + b.size, b.size + c.size)
            others = sum(y.size for y in buffers if y.first <= s and y.last >= t and y.name not in (an, bn, cn)
                         and not related.get(y.name, set()) & {an, bn, cn}
                         and not (related.get(y.name, set()) and any(
                             z.first <= s and z.last >= t for z in buffers if z.name in related[y.name])))
            bounds.append(union + others)
    return bounds


def compact(buffers: Sequence[Buffer], plan_: Plan, overlaps: Overlaps = {}) -> Plan:
    """The plan with every buffer moved down to the lowest offset where it fits beside all the others, the
    highest-ending first, until none moves: a buffer a planner left high (say a tiny late one above a big
    early one) comes down, so the arena never grows and often shrinks to the bound."""
    offsets = dict(plan_.offsets)
    moved = True
    while moved:
        moved = False
        for b in sorted(buffers, key=lambda b: (-(offsets[b.name] + b.size), b.name)):
            others = [(p, offsets[p.name]) for p in buffers if p.name != b.name]
            off = _first_fit(b, others, overlaps)
            if off < offsets[b.name]:
                offsets[b.name] = off
                moved = True
    return Plan(offsets, max((offsets[b.name] + b.size for b in buffers), default=0), plan_.algorithm)


def plan(buffers: Sequence[Buffer], planners: dict[str, Callable] | None = None, overlaps: Overlaps = {}) -> Plan:
    """Run every planner, compact and verify each plan, keep the smallest arena (ties: the first planner)."""
    results = [verify_plan(buffers, compact(buffers, p(buffers, overlaps), overlaps), overlaps)
               for p in (planners or PLANNERS).values()]
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
