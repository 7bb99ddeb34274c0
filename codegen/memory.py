"""Where every tensor of a lowered graph lives: in flash (constants), in the caller's input/output
buffers, or at an offset of the one arena chosen by mcu.memory_planner.

- `alias` nodes (reshapes) share their input's storage: tensors joined by aliases form one group.
- A group holding a graph input or output is the caller's buffer; every other group is an arena
  buffer living from its first producer's step to its last reader's step.
"""
from __future__ import annotations

from dataclasses import dataclass

from mcu.codegen.ir import Graph
from mcu.errors import McuError
from mcu.memory_planner import Buffer, Plan, lower_bound, plan

ARENA_ALIGN = 16


@dataclass(frozen=True)
class Location:
    kind: str  # "arena", "input", "output", "const"
    index: int  # arena offset, or input/output position


@dataclass(frozen=True)
class MemoryPlan:
    locations: dict[str, Location]
    buffers: tuple[Buffer, ...]
    plan: Plan
    lower_bound: int

    @property
    def arena_bytes(self) -> int:
        return self.plan.arena_bytes


def _groups(graph: Graph) -> dict[str, str]:
    """tensor -> representative of its alias group."""
    root = {}

    def find(t):
        while root.get(t, t) != t:
            t = root[t]
        return t

    for n in graph.nodes:
        if n.op == "alias":
            root[find(n.outputs[0])] = find(n.inputs[0])
    return {t: find(t) for t in graph.tensors}


def plan_graph(graph: Graph) -> MemoryPlan:
    group = _groups(graph)
    external: dict[str, Location] = {}
    for i, t in enumerate(graph.inputs):
        external[group[t]] = Location("input", i)
    for i, t in enumerate(graph.outputs):
        g = group[t]
        if g in external:
            raise McuError(f"model output {i} is model input {external[g].index} (or a reshape of it); "
                           f"the model must compute something")
        external[g] = Location("output", i)
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for step, n in enumerate(graph.nodes):
        for t in n.outputs:
            first.setdefault(group[t], step)
            last[group[t]] = max(last.get(group[t], step), step)
        for t in n.inputs:
            if t is not None and not graph.tensors[t].is_const:
                last[group[t]] = max(last.get(group[t], step), step)
    buffers = tuple(Buffer(g, graph.tensors[g].nbytes, first[g], last[g], ARENA_ALIGN)
                    for g in sorted(first, key=lambda g: (first[g], g)) if g not in external)
    result = plan(buffers)
    locations = {}
    for t, tensor in graph.tensors.items():
        if tensor.is_const:
            locations[t] = Location("const", 0)
        elif group[t] in external:
            locations[t] = external[group[t]]
        elif group[t] in result.offsets:
            locations[t] = Location("arena", result.offsets[group[t]])
    return MemoryPlan(locations, buffers, result, lower_bound(buffers))
