"""Operator ordering that minimizes peak memory.

A schedule is a topological order of ops; each tensor lives from the step of its producer to the
step of its last reader (graph inputs/outputs and constants have size 0 here: they live elsewhere).
peak(order) = the largest sum of live bytes over the steps.
- exact: memoized search over the sets of ops already run (the order ideals of the DAG), the best
  peak of the remaining ops given what is live. Exact whenever the number of ideals stays under
  `max_states` (chains with residual branches have few).
- heuristic, beyond that (or past MAX_EXACT_OPS ops): run the ready op that adds the fewest net live bytes
  (ties: original order).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence


@dataclass(frozen=True)
class Op:
    name: str
    reads: tuple[str, ...]
    writes: tuple[str, ...]


class _Graph:
    def __init__(self, ops: Sequence[Op], sizes: dict[str, int], deps: Sequence[frozenset[int]] | None = None):
        self.ops = list(ops)
        self.sizes = sizes
        self.producer = {t: i for i, op in enumerate(self.ops) for t in op.writes}
        self.readers: dict[str, set[int]] = {}
        for i, op in enumerate(self.ops):
            for t in op.reads:
                self.readers.setdefault(t, set()).add(i)
        self.deps = list(deps) if deps is not None else [
            frozenset(self.producer[t] for t in op.reads if t in self.producer and self.producer[t] != i)
            for i, op in enumerate(self.ops)]

    def live_after(self, done: frozenset[int]) -> set[str]:
        """Tensors produced by `done` ops that an op outside `done` still reads."""
        return {t for i in done for t in self.ops[i].writes
                if self.sizes.get(t, 0) and not self.readers.get(t, done) <= done}

    def step_bytes(self, done: frozenset[int], i: int, live: set[str] | None = None) -> int:
        """Bytes live while op i runs after `done`: what is live (live_after(done), when the caller has it), plus
        what i writes."""
        live = self.live_after(done) if live is None else live
        return sum(self.sizes[t] for t in live) + sum(self.sizes.get(t, 0) for t in set(self.ops[i].writes) - live)

    def ready(self, done: frozenset[int]) -> list[int]:
        return [i for i in range(len(self.ops)) if i not in done and self.deps[i] <= done]


def peak(ops: Sequence[Op], sizes: dict[str, int], order: Sequence[int] | None = None) -> int:
    g = _Graph(ops, sizes, deps=[frozenset()] * len(ops))
    done: frozenset[int] = frozenset()
    worst = 0
    for i in order if order is not None else range(len(ops)):
        worst = max(worst, g.step_bytes(done, i))
        done = done | {i}
    return worst


MAX_EXACT_OPS = 300  # the exact search recurses once per op: longer graphs (an unrolled GRU) go greedy


def best_order(ops: Sequence[Op], sizes: dict[str, int], max_states: int = 20000,
               deps: Sequence[frozenset[int]] | None = None) -> list[int]:
    """A topological order of `ops` (indices) with the smallest peak; the given order on ties.
    deps[i] are the ops that must run before op i (default: the producers of what it reads)."""
    g = _Graph(ops, sizes, deps)
    n = len(ops)
    states = 0

    class TooBig(Exception):
        pass

    @lru_cache(maxsize=None)
    def solve(done: frozenset[int]) -> tuple[int, tuple[int, ...]]:
        nonlocal states
        states += 1
        if states > max_states:
            raise TooBig
        if len(done) == n:
            return 0, ()
        best, live = None, g.live_after(done)
        for i in g.ready(done):
            here = g.step_bytes(done, i, live)
            rest, order = solve(done | {i})
            cand = (max(here, rest), (i,) + order)
            if best is None or cand[0] < best[0]:
                best = cand
        return best

    if n > MAX_EXACT_OPS:
        return _greedy(g)
    try:
        return list(solve(frozenset())[1])
    except TooBig:
        return _greedy(g)


def _greedy(g: _Graph) -> list[int]:
    done: frozenset[int] = frozenset()
    order = []
    while len(order) < len(g.ops):
        before = sum(g.sizes[t] for t in g.live_after(done))
        i = min(g.ready(done), key=lambda i: (sum(g.sizes[t] for t in g.live_after(done | {i})) - before, i))
        order.append(i)
        done = done | {i}
    return order
